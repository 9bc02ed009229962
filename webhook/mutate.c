/*
 * mutate.c - one admission decision (docs/decisions.md): which pods are served (D8),
 * which Job owns the pod (D6), the error policy (D7), the plugin chain in its
 * fixed order (D1, D2) run as upserts until it adds no container (D5, D13), and
 * the RFC 6902 diff of the result.
 *
 * Threads: called concurrently from MHD workers and from `render`. Everything
 * here is request-owned; the Job is only read; the plugin table is immutable.
 */
#include "webhook/mutate.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/patch.h"
#include "plugins/plugin.h"

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
}

static const char *str_or_empty(const char *s)
{
    return s != NULL ? s : "";
}

int mutate_pod_owner(const json_t *pod, const char **name_out, const char **uid_out)
{
    const json_t *refs = json_object_get(json_object_get(pod, "metadata"), "ownerReferences");
    size_t i;
    const json_t *ref;

    json_array_foreach(refs, i, ref) {
        const char *api = json_string_value(json_object_get(ref, "apiVersion"));
        const char *kind = json_string_value(json_object_get(ref, "kind"));
        const char *name = json_string_value(json_object_get(ref, "name"));

        if (!json_is_true(json_object_get(ref, "controller")) || api == NULL || kind == NULL
            || name == NULL || name[0] == '\0')
            continue;
        if (strcmp(api, JOB_API_VERSION) != 0 || strcmp(kind, "Job") != 0)
            continue;
        *name_out = name;
        *uid_out = str_or_empty(json_string_value(json_object_get(ref, "uid")));
        return 0;
    }
    return WH_DECLINED;
}

/* RFC 1123 subdomain as Kubernetes validates object names: [a-z0-9]([-a-z0-9.]*[a-z0-9])?, <= 253. */
static bool dns_subdomain(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

        if (!alnum && ((c != '-' && c != '.') || i == 0 || i == n - 1))
            return false;
    }
    return true;
}

static const char *meta_str(const json_t *pod, const char *map, const char *key)
{
    const json_t *m = json_object_get(json_object_get(pod, "metadata"), map);

    return str_or_empty(json_string_value(json_object_get(m, key)));
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
        str_or_empty(json_string_value(json_object_get(json_object_get(pod, "metadata"), "name")));
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

static size_t container_count(json_t *pod)
{
    const json_t *spec = json_object_get(pod, "spec");

    return json_array_size(json_object_get(spec, "containers"))
        + json_array_size(json_object_get(spec, "initContainers"));
}

/*
 * A copy of v with new objects and arrays all the way down, but the scalar leaves
 * (strings, numbers) shared by reference. The plugins change a pod's lists and
 * objects (set, insert, remove), never a scalar in place (no json_string_set and
 * the like anywhere in plugins/), so a shared leaf stays equal on both sides and
 * patch_diff skips it by pointer. Key order is kept (jansson iterates in
 * insertion order), as json_deep_copy does. @return new reference, NULL on ENOMEM.
 */
static json_t *copy_tree(const json_t *v)
{
    json_t *c;

    if (json_is_object(v)) {
        const char *key;
        size_t klen;
        json_t *m;

        c = json_object();
        if (c == NULL)
            return NULL;
        /* json_object_keylen_foreach wants a non-const object; it only reads it here. */
        json_object_keylen_foreach((json_t *)v, key, klen, m) {
            if (json_object_setn_new_nocheck(c, key, klen, copy_tree(m)) < 0) {
                json_decref(c);
                return NULL;
            }
        }
        return c;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *m;

        c = json_array();
        if (c == NULL)
            return NULL;
        json_array_foreach(v, i, m) {
            if (json_array_append_new(c, copy_tree(m)) < 0) {
                json_decref(c);
                return NULL;
            }
        }
        return c;
    }
    return json_incref((json_t *)v);
}

/*
 * Where the plugins edit a pod (the plugins in plugins/): metadata.annotations
 * (hcclrank); spec.hostname and spec.subdomain (svc); spec.volumes (ssh, svc);
 * in spec.containers[] and spec.initContainers[], each container's env, volumeMounts
 * and ports lists (env, svc, ssh, mpi, pytorch, tensorflow, ray), members set on the
 * container (ray's command), and whole new init containers (pytorch). A member
 * listed with sub == NULL is copied by copy_tree; with sub, an object becomes a new
 * object whose members are shared by reference except those sub lists, and an
 * array a new array of such objects. So the copy is new only on the way to what
 * plugins edit, and patch_diff skips the rest (labels, ownerReferences, affinity,
 * resources, probes, ...) by pointer. check_mutate's
 * chain_leaves_the_admitted_pod_as_it_was fails when a plugin edits anything else.
 */
struct edited {
    const char *key;
    const struct edited *sub;
};

static const struct edited edited_metadata[] = {{"annotations", NULL}, {NULL, NULL}};
static const struct edited edited_container[] = {
    {"env", NULL},
    {"volumeMounts", NULL},
    {"ports", NULL},
    {NULL, NULL},
};
static const struct edited edited_spec[] = {
    {"containers", edited_container},
    {"initContainers", edited_container},
    {"volumes", NULL},
    {NULL, NULL},
};
static const struct edited edited_pod[] = {
    {"metadata", edited_metadata},
    {"spec", edited_spec},
    {NULL, NULL},
};

/* The copy the plugins edit (see struct edited). @return new reference, NULL on ENOMEM. */
static json_t *copy_edited(const json_t *v, const struct edited *sub)
{
    const char *key;
    size_t klen;
    json_t *m;
    json_t *c;

    if (sub != NULL && json_is_array(v)) {
        size_t i;

        c = json_array();
        if (c == NULL)
            return NULL;
        json_array_foreach(v, i, m) {
            if (json_array_append_new(c, copy_edited(m, sub)) < 0) {
                json_decref(c);
                return NULL;
            }
        }
        return c;
    }
    if (sub == NULL || !json_is_object(v))
        return copy_tree(v);
    c = json_object();
    if (c == NULL)
        return NULL;
    json_object_keylen_foreach((json_t *)v, key, klen, m) {
        const struct edited *e = sub;
        json_t *mc;

        while (e->key != NULL && (strlen(e->key) != klen || memcmp(e->key, key, klen) != 0))
            e++;
        mc = e->key != NULL ? copy_edited(m, e->sub) : json_incref(m);
        if (json_object_setn_new_nocheck(c, key, klen, mc) < 0) {
            json_decref(c);
            return NULL;
        }
    }
    return c;
}

void mutate_pod_with_job(const json_t *job, const json_t *pod, const char *ns,
                         struct mutate_result *out)
{
    bool enabled[16];
    const json_t *args[16];
    struct plugin_pod_info info;
    json_t *copy = NULL;
    json_t *patch = NULL;
    struct wh_error err;

    out->allowed = true;
    if (!json_is_object(json_object_get(pod, "spec"))) {
        deny(out, 400, "pod has no spec");
        return;
    }
    copy = copy_edited(pod, edited_pod);
    if (copy == NULL)
        goto nomem;
    pod_info_init(&info, copy, ns);
    plugin_effective_set(job, enabled, args, &out->warnings);
    /* enabled[] has 16 entries, out->enabled 32 bits */
    for (size_t k = 0; k < plugin_registry_len && k < sizeof(enabled) / sizeof(enabled[0]); k++)
        if (enabled[k])
            out->enabled |= 1u << k;

    for (int pass = 0; pass < CHAIN_PASSES_MAX; pass++) {
        size_t before = container_count(copy);

        for (size_t k = 0; k < plugin_registry_len; k++) {
            const struct plugin *p = plugin_registry[k];
            struct plugin_ctx ctx = {
                .name = p->name,
                .job = job,
                .args = args[k],
                .pod = &info,
                .warnings = &out->warnings,
                .kc = NULL,
            };
            int rc;

            if (!enabled[k] || p->on_pod_create == NULL)
                continue;
            wh_error_clear(&err);
            rc = p->on_pod_create(&ctx, copy, &err);
            if (rc == WH_ENOMEM)
                goto nomem;
            if (rc < 0) {
                /* D7: a plugin error denies the pod with 400. */
                deny(out, 400, "%s plugin: %s", p->name,
                     err.msg[0] != '\0' ? err.msg : wh_error_str(rc));
                json_decref(copy);
                return;
            }
        }
        /* D13: a container added by a plugin must get every plugin's additions. */
        if (container_count(copy) == before)
            break;
    }

    patch = patch_diff(pod, copy);
    if (patch == NULL)
        goto nomem;
    if (json_array_size(patch) == 0) {
        json_decref(patch);
        patch = NULL;
    }
    out->patch = patch;
    out->pod = copy;
    return;
nomem:
    json_decref(copy);
    deny(out, 500, "out of memory");
}

void mutate_review(const struct mutate_request *req, const struct job_source *src,
                   const struct mutate_options *opt, struct mutate_result *out)
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
            json_string_value(json_object_get(json_object_get(req->pod, "metadata"), "namespace")));
    if (ns[0] == '\0') {
        deny(out, 400, "pod of job %s has no namespace and request.namespace is empty",
             job_name_ref);
        return;
    }
    /* No Job can have such a name ("." or ".." would even name another URL path). */
    if (!dns_subdomain(job_name_ref) || !dns_subdomain(ns)) {
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
    uid = json_string_value(json_object_get(json_object_get(job, "metadata"), "uid"));
    if (uid != NULL && uid[0] != '\0' && strcmp(uid, owner_uid) != 0) {
        warnings_add(&out->warnings, "volcano job %s not found, pod not mutated", key);
        LOG_INFO("admission uid=%s job=%s outcome=uid-mismatch job_uid=%s owner_uid=%s",
                 log_quote(qa, sizeof(qa), req->uid), key, uid,
                 log_quote(qb, sizeof(qb), owner_uid));
    } else {
        mutate_pod_with_job(job, req->pod, ns, out);
    }
    json_decref(job);
}
