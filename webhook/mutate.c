/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutate.c - one admission decision (docs/decisions.md): which pods are served (D8),
 * which Job owns the pod (D6), the error policy (D7), the plugin chain in its
 * fixed order (D1, D2) run as upserts until it adds no container (D5, D13), recorded
 * over the pod's view (plugins/podedit.h), the check that the result is a pod the
 * API server accepts (D15, k8s/podcheck.h), and the RFC 6902 patch of the edits.
 *
 * Threads: called concurrently from MHD workers and from `render`. Everything
 * here is request-owned; the Job is only read; the plugin table is immutable.
 */
#include "webhook/mutate.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonobj.h"
#include "base/jsonw.h"
#include "base/log.h"
#include "base/patch.h"
#include "k8s/names.h"
#include "k8s/podcheck.h"
#include "plugins/diagnose.h"
#include "plugins/job.h"
#include "plugins/plugin.h"
#include "plugins/podedit.h"

#define JOB_API_VERSION  "batch.volcano.sh/v1alpha1"
#define TASK_SPEC_KEY    "volcano.sh/task-spec"
#define TASK_INDEX_KEY   "volcano.sh/task-index"
#define CHAIN_PASSES_MAX 4 /* D13: one pass per generation of added containers */

void mutate_result_init(struct mutate_result *r)
{
    memset(r, 0, sizeof(*r));
    warnings_init(&r->warnings);
}

void mutate_result_dispose(struct mutate_result *r)
{
    json_decref(r->patch);
    r->patch = NULL;
    r->patch_ops = 0;
    json_decref(r->pod);
    r->pod = NULL;
}

static void deny(struct mutate_result *out, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void deny(struct mutate_result *out, int code, const char *fmt, ...)
{
    va_list ap;

    out->allowed = false;
    out->status_code = code;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
    wh_utf8_sanitize(out->message);
    json_decref(out->patch);
    out->patch = NULL;
    out->patch_ops = 0;
}

static const char *str_or_empty(const char *s)
{
    return s != NULL ? s : "";
}

int mutate_pod_owner(const json_t *pod, const char **name_out, const char **uid_out)
{
    const json_t *refs = json_member(json_member(pod, "metadata"), "ownerReferences");
    size_t i;
    const json_t *ref;

    json_array_foreach(refs, i, ref) {
        enum { API, KIND, NAME, CONTROLLER, UID };
        static const char *const keys[] = {"apiVersion", "kind", "name", "controller", "uid"};
        const json_t *m[5];
        const char *api;
        const char *kind;
        const char *name;

        json_members(ref, keys, 5, m);
        api = json_string_value(m[API]);
        kind = json_string_value(m[KIND]);
        name = json_string_value(m[NAME]);
        if (!json_is_true(m[CONTROLLER]) || api == NULL || kind == NULL || name == NULL
            || name[0] == '\0')
            continue;
        if (strcmp(api, JOB_API_VERSION) != 0 || strcmp(kind, "Job") != 0)
            continue;
        *name_out = name;
        *uid_out = str_or_empty(json_string_value(m[UID]));
        return 0;
    }
    return WH_DECLINED;
}

static const char *meta_str(const json_t *pod, const char *map, const char *key)
{
    const json_t *m = json_member(json_member(pod, "metadata"), map);

    return str_or_empty(json_string_value(json_member(m, key)));
}

/* docs/plugins.md §2.1 / D6: last '-' piece of the name when it has >= 3 pieces, else "". */
static const char *index_from_name(const char *name)
{
    const char *first = strchr(name, '-');
    const char *last = strrchr(name, '-');

    if (first == NULL || first == last)
        return "";
    return last + 1;
}

static void pod_info_init(struct plugin_pod_info *info, const json_t *pod, const char *ns)
{
    const char *name =
        str_or_empty(json_string_value(json_member(json_member(pod, "metadata"), "name")));
    const char *task = meta_str(pod, "annotations", TASK_SPEC_KEY);

    info->name = name;
    info->ns = ns;
    info->task = task[0] != '\0' ? task : "default";
    if (name[0] != '\0') {
        info->index = index_from_name(name);
    } else {
        /* D6: generateName pods have no name yet; use the controller's label, then annotation. */
        info->index = meta_str(pod, "labels", TASK_INDEX_KEY);
        if (info->index[0] == '\0')
            info->index = meta_str(pod, "annotations", TASK_INDEX_KEY);
    }
}

static size_t container_count(const struct pod_edits *pod)
{
    return pod_edits_count(pod, PV_CONTAINERS) + pod_edits_count(pod, PV_INIT_CONTAINERS);
}

/* What the chain, the plugins and D15 read in a pod (mutate.h). */
static const struct jsonr_keep read_container[] = {
    {"name", NULL},    {"env", NULL},  {"volumeMounts", NULL}, {"ports", NULL},
    {"command", NULL}, {"args", NULL}, {NULL, NULL},
};
/* A label or an annotation is read only here (pod_info_init) and by hcclrank; a pod
 * carries a dozen of Volcano's own and its users', none of them read. */
static const struct jsonr_keep read_labels[] = {{TASK_INDEX_KEY, NULL}, {NULL, NULL}};
static const struct jsonr_keep read_annotations[] = {
    {TASK_SPEC_KEY, NULL},
    {TASK_INDEX_KEY, NULL},
    {PLUGIN_HCCL_RANK_KEY, NULL},
    {NULL, NULL},
};
static const struct jsonr_keep read_metadata[] = {
    {"name", NULL},
    {"generateName", NULL},
    {"namespace", NULL},
    {"labels", read_labels},
    {"annotations", read_annotations},
    {"ownerReferences", NULL},
    {NULL, NULL},
};
/* A volume's name; its source whole when a plugin's kind (podutil_upsert_volume
 * compares the Secret or ConfigMap it names), else only its kind, for the message. */
static const struct jsonr_keep read_volume[] = {
    {"name", NULL},
    {"secret", NULL},
    {"configMap", NULL},
    {NULL, JSONR_KEEP_NAMES},
};
static const struct jsonr_keep read_spec[] = {
    {"hostname", NULL},
    {"subdomain", NULL},
    {"volumes", read_volume},
    {"containers", read_container},
    {"initContainers", read_container},
    {"ephemeralContainers", read_container},
    {NULL, NULL},
};
const struct jsonr_keep mutate_pod_read[] = {
    {"metadata", read_metadata},
    {"spec", read_spec},
    {NULL, NULL},
};
const struct jsonr_keep mutate_pod_meta_read[] = {
    {"metadata", read_metadata},
    {NULL, NULL},
};

/* The effective set and arguments of one Job, for every chain run (D1). */
struct chain {
    const json_t *job;
    bool enabled[16];
    const json_t *args[16];
    json_t **memo[16];         /* the source's job_memo slot per plugin, or NULL */
    struct jsonw_texts *texts; /* the slots' part texts, for the patch writer; or NULL */
    const struct plugin_pod_info *info;
};

/*
 * Called after each hook that succeeded, with the pod as it now is; returning
 * true stops the chain there. For D15's attribution replay (d15_culprit).
 */
typedef bool (*chain_stop_fn)(const struct pod_edits *pod, void *ud);

/*
 * Run the plugin chain on pod (the edits recorded over the pod's view, plugins/podedit.h):
 * registry order (D2), each hook sees the edits of the ones before, passes repeated
 * while one adds a container (D13).
 * @param[out] last  the plugin that failed, or after which stop returned true
 * @return 0 when the chain ran to its end, 1 when stop stopped it, < 0 with err
 *         filled when a hook failed (D7), its message prefixed "<plugin> plugin: "
 *         (plugin_error_name: the one place the admission path names the plugin).
 */
static int chain_run(const struct chain *ch, struct pod_edits *pod, struct warnings *w,
                     const struct plugin **last, chain_stop_fn stop, void *ud, struct wh_error *err)
{
    for (int pass = 0; pass < CHAIN_PASSES_MAX; pass++) {
        size_t before = container_count(pod);

        for (size_t k = 0; k < plugin_registry_len; k++) {
            const struct plugin *p = plugin_registry[k];
            struct plugin_ctx ctx = {
                .name = p->name,
                .job = ch->job,
                .args = ch->args[k],
                .pod = ch->info,
                .warnings = w,
                .kc = NULL,
                .job_memo = ch->memo[k],
                .texts = ch->texts,
            };
            int rc;

            if (!ch->enabled[k] || p->on_pod_create == NULL)
                continue;
            *last = p;
            wh_error_clear(err);
            rc = p->on_pod_create(&ctx, pod, err);
            if (rc < 0)
                return plugin_error_name(err, p->name, rc); /* the one place it is named */
            if (stop != NULL && stop(pod, ud))
                return 1;
        }
        /* D13: a container added by a plugin must get every plugin's additions. */
        if (container_count(pod) == before)
            break;
    }
    return 0;
}

/* ---- D15: no pod the API server will refuse ---- */

/* Whether the edited pod has violation ud (its tree made: only on a denial's replay). */
static bool has_violation(const struct pod_edits *pod, void *ud)
{
    json_t *after = pod_edits_pod(pod);
    bool has = after != NULL && podcheck_has(after, ud);

    json_decref(after);
    return has;
}

/*
 * The plugin whose edit brought violation v: the chain run again on fresh edits of
 * view, stopped after the first hook whose result has it. Only on a denial, so the
 * common path pays one check. @return NULL when none (ENOMEM).
 */
static const struct plugin *d15_culprit(const struct chain *ch, const struct pod_view *view,
                                        const struct podcheck_violation *v)
{
    struct warnings scratch; /* the real run already gave its warnings */
    const struct plugin *last = NULL;
    struct wh_error err;
    struct pod_edits fresh;
    int rc;

    if (pod_edits_init(&fresh, view) < 0)
        return NULL;
    warnings_init(&scratch);
    rc = chain_run(ch, &fresh, &scratch, &last, has_violation, (void *)v, &err);
    pod_edits_dispose(&fresh);
    return rc == 1 ? last : NULL;
}

/* Where a container is, for a message: "container \"c\"" or "init container \"w\"". */
static const char *list_noun(const char *list)
{
    if (strcmp(list, "initContainers") == 0)
        return "init container";
    if (strcmp(list, "ephemeralContainers") == 0)
        return "ephemeral container";
    return "container";
}

/* "shorten the job name to at most N characters" when name is J + a suffix that fits. */
static void shorten_hint(char *buf, size_t len, const char *name, const char *job,
                         const char *otherwise)
{
    size_t jl = strlen(job);
    size_t rest = strlen(name) - jl;

    if (strncmp(name, job, jl) == 0 && jl > 0 && strchr(job, '.') != NULL)
        snprintf(buf, len, "rename the job");
    else if (strncmp(name, job, jl) == 0 && jl > 0 && rest < 63)
        snprintf(buf, len, "shorten the job name to at most %zu characters", 63 - rest);
    else
        snprintf(buf, len, "%s", otherwise);
}

/*
 * The denial message for v (D15): the plugin, the value, and the Job field to
 * change. The hostname and subdomain are svc's (docs/plugins.md §4.2 steps 1-2): the pod's
 * name J-T-i and the Job's name, unless the template set them.
 */
static void d15_message(char *buf, size_t len, const char *plugin,
                        const struct podcheck_violation *v, const struct chain *ch)
{
    const char *J = job_name(ch->job);
    const char *T = ch->info->task;
    char hint[160];
    char other[160];

    switch (v->kind) {
    case PODCHECK_SUBDOMAIN:
        if (strcmp(v->value, J) == 0)
            snprintf(buf, len,
                     "%s plugin: job name \"%s\" cannot be a pod subdomain (%s): rename the job",
                     plugin, v->value, v->why);
        else
            snprintf(buf, len,
                     "%s plugin: pod subdomain \"%s\" cannot be a subdomain (%s): change "
                     "template.spec.subdomain of task %s",
                     plugin, v->value, v->why, T);
        return;
    case PODCHECK_HOSTNAME:
        shorten_hint(hint, sizeof(hint), v->value, J, "shorten the task name");
        if (strcmp(v->value, ch->info->name) == 0)
            snprintf(buf, len,
                     "%s plugin: pod hostname \"%s\" (the pod's name) cannot be a hostname (%s): "
                     "%s",
                     plugin, v->value, v->why, hint);
        else
            snprintf(buf, len,
                     "%s plugin: pod hostname \"%s\" cannot be a hostname (%s): change "
                     "template.spec.hostname of task %s",
                     plugin, v->value, v->why, T);
        return;
    case PODCHECK_VOLUME_NAME:
        snprintf(other, sizeof(other), "rename the volume in the template of task %s", T);
        shorten_hint(hint, sizeof(hint), v->value, J, other);
        snprintf(buf, len, "%s plugin: volume name \"%s\" cannot be a volume name (%s): %s", plugin,
                 v->value, v->why, hint);
        return;
    case PODCHECK_VOLUME_DUPLICATE:
        snprintf(buf, len,
                 "%s plugin: the pod would have two volumes named \"%s\", which the API server "
                 "refuses: rename the volume in the template of task %s",
                 plugin, v->value, T);
        return;
    case PODCHECK_CONTAINER_DUPLICATE:
        snprintf(buf, len,
                 "%s plugin: the pod would have a %s and an %s both named \"%s\", which the API "
                 "server refuses: rename the %s in the template of task %s",
                 plugin, list_noun(v->other_list), list_noun(v->list), v->value,
                 list_noun(v->other_list), T);
        return;
    case PODCHECK_MOUNT_DUPLICATE:
        snprintf(buf, len,
                 "%s plugin: %s \"%s\" would mount two volumes at %s, which the API server "
                 "refuses: mount the template's volume elsewhere in task %s",
                 plugin, list_noun(v->list), v->container, v->value, T);
        return;
    case PODCHECK_PORT_NAME:
        snprintf(buf, len,
                 "%s plugin: %s \"%s\" would have a port named \"%s\", which cannot be a port "
                 "name (%s): rename the port in the template of task %s",
                 plugin, list_noun(v->list), v->container, v->value, v->why, T);
        return;
    case PODCHECK_PORT_DUPLICATE:
        snprintf(buf, len,
                 "%s plugin: %s \"%s\" would have two ports named \"%s\", which the API server "
                 "refuses: rename the port in the template of task %s",
                 plugin, list_noun(v->list), v->container, v->value, T);
        return;
    case PODCHECK_PORT_NUMBER:
        snprintf(buf, len,
                 "%s plugin: %s \"%s\" would get container port %lld, outside 1-65535: fix the "
                 "port in spec.plugins.%s",
                 plugin, list_noun(v->list), v->container, v->number, plugin);
        return;
    case PODCHECK_ENV_NAME:
        snprintf(buf, len,
                 "%s plugin: env var name \"%s\" in %s \"%s\" is not valid (%s): rename the task "
                 "it is made from",
                 plugin, v->value, list_noun(v->list), v->container, v->why);
        return;
    case PODCHECK_ENV_TOO_LARGE:
        snprintf(buf, len,
                 "%s plugin: env %s of %s \"%s\" would be %lld bytes, more than the 131072 (128 "
                 "KiB) one environment string can hold (the kernel's MAX_ARG_STRLEN), so the "
                 "container cannot start: run fewer replicas (spec.tasks[].replicas)",
                 plugin, v->value, list_noun(v->list), v->container, v->number);
        return;
    }
    snprintf(buf, len, "%s plugin: the pod would not be valid", plugin);
}

/*
 * D15 after the chain: the first violation of the edited pod that the pod did not
 * have already, told with the plugin that made it. @return true when the pod is
 * denied (out filled, code 400).
 */
static bool d15_deny(const struct chain *ch, const struct pod_edits *pod, struct mutate_result *out)
{
    struct podcheck_violation v = {0};
    const struct plugin *p;
    char msg[sizeof(out->message)];
    char qp[LOG_QUOTE_SIZE(128)]; /* the pod's name, quoted */
    int rc = pod_edits_first_new_violation(pod, &v);

    if (rc == 0)
        return false;
    if (rc < 0) {
        /* no pod passes D15 unchecked: the webhook's failure, 500 */
        deny(out, 500, "out of memory checking the pod");
        return true;
    }
    p = d15_culprit(ch, pod->view, &v);
    d15_message(msg, sizeof(msg), p != NULL ? p->name : "a", &v, ch);
    LOG_INFO("admission pod=%s job=%s outcome=invalid-pod plugin=%s",
             log_quote(qp, sizeof(qp), ch->info->name), job_name(ch->job),
             p != NULL ? p->name : "unknown");
    deny(out, 400, "%s", msg);
    return true;
}

/* mutate_pod_with_job; with text != NULL the patch is written there (mutate_review_text);
 * src (may be NULL): the Job's source, for the plugins' job_memo slots; given (may be
 * NULL: made here from pod): pod's view. */
static void pod_with_job(const json_t *job, const json_t *pod, const struct pod_view *given,
                         const char *ns, const struct jobsource *src, struct buf *text,
                         struct mutate_result *out)
{
    struct chain ch = {.job = job};
    struct jsonw_texts texts;
    struct plugin_pod_info info;
    const struct plugin *p = NULL;
    struct pod_view own_view;
    const struct pod_view *view = given;
    struct pod_edits edits;
    struct buf own;
    struct wh_error err;
    int rc;

    out->allowed = true;
    if (given != NULL ? given->spec.kind != JSONR_OBJECT
                      : !json_is_object(json_member(pod, "spec"))) {
        deny(out, 400, "pod has no spec");
        return;
    }
    if (given == NULL) {
        if (podview_from_json(&own_view, pod) < 0) {
            podview_dispose(&own_view);
            deny(out, 500, "out of memory");
            return;
        }
        view = &own_view;
    }
    if (pod_edits_init(&edits, view) < 0) {
        if (given == NULL)
            podview_dispose(&own_view);
        deny(out, 500, "out of memory");
        return;
    }
    pod_info_init(&info, pod, ns);
    ch.info = &info;
    jsonw_texts_init(&texts);
    if (text != NULL)
        ch.texts = &texts; /* only the text writer reads them */
    plugin_effective_set(job, ch.enabled, ch.args, &out->warnings);
    /* enabled[] has 16 entries, out->enabled 32 bits */
    for (size_t k = 0; k < plugin_registry_len && k < sizeof(ch.enabled) / sizeof(ch.enabled[0]);
         k++) {
        if (!ch.enabled[k])
            continue;
        out->enabled |= 1u << k;
        if (src != NULL && src->job_memo != NULL)
            ch.memo[k] = src->job_memo(src->userdata, job, k);
    }

    rc = chain_run(&ch, &edits, &out->warnings, &p, NULL, NULL, &err);
    if (rc < 0) {
        /* D7: a plugin error denies the pod with 400; running out of memory is the
         * webhook's failure, 500. err names the plugin (chain_run). */
        deny(out, rc == WH_ENOMEM ? 500 : 400, "%s", err.msg);
        goto done;
    }
    if (d15_deny(&ch, &edits, out))
        goto done;
    if (text != NULL) {
        /* WH_ETOOBIG stays in text->rc: the cap is the caller's, and so is the answer. */
        rc = pod_edits_write(&edits, &texts, text, &out->patch_ops);
        if (rc < 0 && rc != WH_ETOOBIG)
            deny(out, 500, "out of memory");
        goto done;
    }
    /* the ops as a tree, and the pod they make (render, the tests) */
    buf_init(&own, BUF_NO_MAX);
    rc = pod_edits_write(&edits, NULL, &own, &out->patch_ops);
    out->patch = rc == 0 ? json_loadb(own.data, own.len, JSON_ALLOW_NUL, NULL) : NULL;
    buf_dispose(&own);
    out->pod = out->patch != NULL ? pod_edits_pod(&edits) : NULL;
    if (out->patch == NULL || out->pod == NULL) {
        deny(out, 500, "out of memory");
        json_decref(out->pod);
        out->pod = NULL;
        goto done;
    }
    if (out->patch_ops == 0) {
        json_decref(out->patch);
        out->patch = NULL;
    }
done:
    pod_edits_dispose(&edits);
    if (given == NULL)
        podview_dispose(&own_view);
}

void mutate_pod_with_job(const json_t *job, const json_t *pod, const char *ns,
                         struct mutate_result *out)
{
    pod_with_job(job, pod, NULL, ns, NULL, NULL, out);
}

/* ---- D16: the Job's diagnostics, told on each of its pods ---- */

/*
 * Whether diagnostic e is for the pod's warnings: not when the chain tells it in its
 * own words on every pod (unknown plugin names: plugin_effective_set), or better,
 * for this pod's own containers (a user's env value replaced: the upserts, D5), nor
 * when one of the chain's warnings of this pod has e's key (the same finding: a
 * plugin's argument error, plugin_args; ray's port name taken by another number,
 * podutil_add_port in head pods).
 */
static bool for_pod(const struct diagnostic *e, const struct warnings *w, size_t chain_n)
{
    if (e->reason == DIAGNOSE_PLUGIN_UNKNOWN || e->reason == DIAGNOSE_USER_VALUE_REPLACED)
        return false;
    return !warnings_has_key(w, chain_n, e->key);
}

/*
 * D16 in pod admission: the Job-level diagnostics of job (plugins/diagnose.h), fatal
 * ones too (this pod is allowed, so they are advice here), appended to out's warnings
 * after the chain's. From src's store when it keeps them per Job version (the Jobs
 * cache: no diagnose_job per pod), else computed. A version the store knows to have
 * none (most Jobs) costs one question and no allocation. Bounded as struct warnings
 * is (each under 256 characters, all under 4096: what kube-apiserver passes on): when
 * they do not all fit, the last one says how many more the Job's Events hold.
 */
static void job_warnings(const struct jobsource *src, const json_t *job, struct mutate_result *out)
{
    struct diagnostics *d;
    size_t chain_n = out->warnings.n;
    size_t todo = 0;
    size_t room = WARNINGS_MAX - chain_n;
    int rc = WH_ENOTFOUND;

    if (src != NULL && src->diagnose != NULL) {
        rc = src->diagnose(src->userdata, job, NULL); /* any at all? nothing unpacked */
        if (rc == WH_DECLINED)
            return;
    }
    d = malloc(sizeof(*d)); /* 17 KiB: not on an MHD worker's stack */
    if (d == NULL) {
        LOG_WARN("admission job=%s outcome=diagnostics-skipped rc=\"out of memory\"",
                 job_name(job));
        return; /* advice only: the pod's answer stands */
    }
    /* rc != 0: no store, or not this version; a second answer != 0: replaced meanwhile. */
    if (rc != 0 || src->diagnose(src->userdata, job, d) != 0)
        (void)diagnose_job(job, d); /* out of memory: what was found */
    for (size_t i = 0; i < d->n; i++)
        todo += for_pod(&d->items[i], &out->warnings, chain_n) ? 1 : 0;
    todo += d->dropped;
    for (size_t i = 0; i < d->n && room > 0; i++) {
        if (!for_pod(&d->items[i], &out->warnings, chain_n))
            continue;
        if (todo > room && room == 1)
            break; /* the last place says how many are left */
        warnings_add(&out->warnings, "%s", d->items[i].message);
        todo--;
        room--;
    }
    if (todo > 0 && room > 0)
        warnings_add(&out->warnings,
                     "%zu more diagnostics of volcano job %s not shown: kubectl describe vcjob "
                     "-n %s %s lists them",
                     todo, job_name(job), job_namespace(job), job_name(job));
    free(d);
}

/* mutate_review; with text != NULL the patch is written there (mutate_review_text). */
static void review(const struct mutate_request *req, const struct jobsource *src,
                   const struct mutate_options *opt, struct buf *text, struct mutate_result *out)
{
    const char *job_name_ref = NULL;
    const char *owner_uid = NULL;
    const char *ns;
    const char *uid;
    json_t *job = NULL;
    struct wh_error err;
    char key[512];
    char qa[LOG_QUOTE_SIZE(128)], qb[LOG_QUOTE_SIZE(256)]; /* request values, quoted */
    int rc;

    mutate_result_init(out);
    out->allowed = true;
    /* D8: only CREATE of core pods (not their subresources) is served. */
    if (strcmp(str_or_empty(req->operation), "CREATE") != 0
        || strcmp(str_or_empty(req->resource), "pods") != 0 || str_or_empty(req->group)[0] != '\0'
        || str_or_empty(req->sub_resource)[0] != '\0')
        return;
    if (!json_is_object(req->pod)) {
        deny(out, 400, "request.object is not a pod");
        return;
    }
    if (mutate_pod_owner(req->pod, &job_name_ref, &owner_uid) != 0)
        return;

    /* D6: the pod object may lack its namespace; the request always has it. */
    ns = str_or_empty(req->ns);
    if (ns[0] == '\0')
        ns = str_or_empty(
            json_string_value(json_member(json_member(req->pod, "metadata"), "namespace")));
    if (ns[0] == '\0') {
        deny(out, 400, "pod of job %s has no namespace and request.namespace is empty",
             job_name_ref);
        return;
    }
    /* No Job can have such a name ("." or ".." would even name another URL path), and a
     * namespace is a DNS-1123 label: nothing to look up. */
    if (!k8s_name_is_subdomain(job_name_ref) || !k8s_name_is_label(ns)) {
        warnings_add(&out->warnings, "ownerReference names no valid volcano job, pod not mutated");
        return;
    }
    snprintf(key, sizeof(key), "%s/%s", ns, job_name_ref);
    /* D6: the uid is what ties a pod to a Job; the API requires it in every
     * ownerReference, so only a forged review lacks it: no lookup, no patch. */
    if (owner_uid[0] == '\0') {
        warnings_add(&out->warnings,
                     "the pod's ownerReference to volcano job %s has no uid, pod not mutated", key);
        LOG_INFO("admission uid=%s job=%s outcome=no-owner-uid",
                 log_quote(qa, sizeof(qa), req->uid), key);
        return;
    }

    wh_error_clear(&err);
    rc = src->get(src->userdata, ns, job_name_ref, owner_uid, &job, &err);
    if (rc == WH_EWOULDBLOCK) {
        /* Not cached: the caller asks again where a GET may wait (server_defer.c); what
         * out holds so far is dropped with it. */
        out->deferred = true;
        return;
    }
    if (rc == WH_DECLINED) {
        /* serve --namespaces, a namespace not served: not this webhook's pod (another
         * instance may serve it), so no warning; the source counted and logged it. */
        LOG_DEBUG("admission uid=%s job=%s outcome=namespace-not-served",
                  log_quote(qa, sizeof(qa), req->uid), key);
        return;
    }
    if (rc == WH_ENOTFOUND) {
        warnings_add(&out->warnings, "volcano job %s not found, pod not mutated", key);
        LOG_INFO("admission uid=%s job=%s outcome=job-not-found",
                 log_quote(qa, sizeof(qa), req->uid), key);
        return;
    }
    if (rc == WH_ENOMEM) {
        deny(out, 500, "out of memory looking up job %s", key);
        return;
    }
    if (rc < 0) {
        const char *why = err.msg[0] != '\0' ? err.msg : wh_error_str(rc);

        LOG_WARN("admission uid=%s job=%s outcome=lookup-failed err=%s",
                 log_quote(qa, sizeof(qa), req->uid), key, log_quote(qb, sizeof(qb), why));
        if (opt != NULL && opt->lookup_failure == LOOKUP_FAILURE_ALLOW) {
            warnings_add(&out->warnings, "volcano job %s could not be read (%s), pod not mutated",
                         key, why);
            return;
        }
        deny(out, 500, "cannot read volcano job %s: %s", key, why);
        return;
    }
    /* D6: same name, another incarnation of the Job: the pod's Job is not found. The
     * answer says just that, as for a missing Job: it must not tell a forger the uid
     * of the Job, nor that one of that name exists. The log, read by operators only,
     * says which. */
    uid = json_string_value(json_member(json_member(job, "metadata"), "uid"));
    if (uid != NULL && uid[0] != '\0' && strcmp(uid, owner_uid) != 0) {
        warnings_add(&out->warnings, "volcano job %s not found, pod not mutated", key);
        LOG_INFO("admission uid=%s job=%s outcome=uid-mismatch job_uid=%s owner_uid=%s",
                 log_quote(qa, sizeof(qa), req->uid), key, uid,
                 log_quote(qb, sizeof(qb), owner_uid));
    } else {
        pod_with_job(job, req->pod, req->view, ns, src, text, out);
        if (out->allowed)
            job_warnings(src, job, out);
    }
    json_decref(job);
}

void mutate_review(const struct mutate_request *req, const struct jobsource *src,
                   const struct mutate_options *opt, struct mutate_result *out)
{
    review(req, src, opt, NULL, out);
}

void mutate_review_text(const struct mutate_request *req, const struct jobsource *src,
                        const struct mutate_options *opt, struct buf *patch_text,
                        struct mutate_result *out)
{
    review(req, src, opt, patch_text, out);
}
