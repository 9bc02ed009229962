/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tensorflow.c - the `tensorflow` plugin, pod side (docs/plugins.md §4.5, §8 #11-13, D4, D5).
 *
 * Adds env TF_CONFIG to every container (not init containers) of every pod of a
 * distributed Job: a compact JSON document
 *   {"cluster":{"ps":[..],"worker":[..],"chief":[..],"evaluator":[..]},
 *    "task":{"type":"<type>","index":<n>}}
 * byte for byte what Volcano's Go json.Marshal writes (fixed key order, empty
 * roles omitted, Go's HTML-safe string escaping). No container port is opened.
 * A Job of exactly one task with exactly one replica is "standalone": no change.
 * The env entry is an upsert (D5), so a second run changes nothing.
 * Not in Volcano: a TF_CONFIG over 3 MiB (kube-apiserver's body limit) is an
 * error instead of an unbounded allocation (TF_CONFIG_MAX).
 *
 * Threads: no state; arguments are parsed per call (plugins/plugin.h).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonobj.h"
#include "base/jsonw.h"
#include "plugins/args.h"
#include "plugins/diagnose.h"
#include "plugins/job.h"
#include "plugins/plugin.h"
#include "plugins/podedit.h"
#include "plugins/podutil.h"

#define TF_ROLES 4

/* Cluster keys in Volcano's struct order (the order they are serialised in). */
static const char *const tf_role_names[TF_ROLES] = {"ps", "worker", "chief", "evaluator"};

struct tf_args {
    const char *role[TF_ROLES]; /* task names of ps, worker, chief, evaluator */
    int64_t port;               /* written into every host entry */
};

/* Defaults, then the Job's arguments (plugin_args: a parse error is one warning, D4). */
static void tf_args_parse(const struct plugin_ctx *c, struct tf_args *a)
{
    const struct args_def defs[] = {
        {"ps", ARGS_STRING, &a->role[0]},    {"worker", ARGS_STRING, &a->role[1]},
        {"chief", ARGS_STRING, &a->role[2]}, {"evaluator", ARGS_STRING, &a->role[3]},
        {"port", ARGS_INT, &a->port},
    };

    for (size_t k = 0; k < TF_ROLES; k++)
        a->role[k] = tf_role_names[k];
    a->port = 2222;
    plugin_args(c, defs, sizeof(defs) / sizeof(defs[0]));
}

/* docs/plugins.md §4.5 step 1: exactly one task, and it has exactly one replica. */
static bool tf_standalone(const json_t *job)
{
    const json_t *tasks = job_tasks(job);

    return json_array_size(tasks) == 1 && job_task_replicas(json_array_get(tasks, 0)) == 1;
}

/* docs/plugins.md §4.5 step 3: chief, worker, ps, evaluator in that order, else the task key. */
static const char *tf_task_type(const struct tf_args *a, const char *task)
{
    static const size_t order[TF_ROLES] = {2, 1, 0, 3};

    for (size_t k = 0; k < TF_ROLES; k++)
        if (strcmp(task, a->role[order[k]]) == 0)
            return tf_role_names[order[k]];
    return task;
}

/*
 * kube-apiserver refuses request bodies over 3 MiB, so a pod with a larger
 * TF_CONFIG can never be stored. Stopping there keeps a huge replicas count
 * (int32 allows 2^31-1) from exhausting the webhook's memory.
 */
#define TF_CONFIG_MAX (3 * 1024 * 1024)

/*
 * "domain:port" for replicas 0..replicas-1, no early stop on a template hostname.
 * *used counts the bytes of every entry so far (across tasks).
 * @param[out] out  new reference: the list
 * @return 0, WH_ENOMEM, or WH_ETOOBIG past TF_CONFIG_MAX.
 */
static int tf_task_hosts(json_t **out, const json_t *job, const json_t *task, int64_t port,
                         size_t *used)
{
    int64_t replicas = job_task_replicas(task);
    json_t *hosts = json_array();
    struct buf entry; /* "host.domain:port", written anew per replica */
    int rc = 0;

    *out = NULL;
    if (hosts == NULL)
        return WH_ENOMEM;
    buf_init(&entry, BUF_NO_MAX);
    for (int64_t i = 0; i < replicas; i++) {
        buf_reset(&entry);
        if (job_task_domain_append(&entry, job, task, i) < 0 || buf_append(&entry, ":", 1) < 0
            || buf_append_decimal(&entry, (long long)port) < 0
            || json_array_append_new(hosts, json_stringn(buf_cstr(&entry), entry.len)) < 0) {
            rc = WH_ENOMEM;
            break;
        }
        *used += entry.len + 3; /* quotes and comma */
        if (*used > TF_CONFIG_MAX) {
            rc = WH_ETOOBIG;
            break;
        }
    }
    buf_dispose(&entry);
    if (rc < 0) {
        json_decref(hosts);
        return rc;
    }
    *out = hosts;
    return 0;
}

/*
 * docs/plugins.md §4.5 step 4: each task's list is assigned to the first role whose name
 * matches (a later task of the same role replaces an earlier one, as in Volcano);
 * roles with no entries are omitted.
 * @param[out] out  new reference: the cluster object
 * @return 0, WH_ENOMEM, or WH_ETOOBIG (see TF_CONFIG_MAX).
 */
static int tf_cluster(json_t **out, const json_t *job, const struct tf_args *a)
{
    json_t *lists[TF_ROLES] = {NULL, NULL, NULL, NULL};
    json_t *cluster = NULL;
    size_t used = 0;
    size_t i;
    const json_t *task;
    int rc = 0;

    json_array_each(job_tasks(job), i, task) {
        const char *name = job_task_name(task);

        for (size_t k = 0; k < TF_ROLES; k++) {
            if (strcmp(name, a->role[k]) != 0)
                continue;
            json_decref(lists[k]);
            rc = tf_task_hosts(&lists[k], job, task, a->port, &used);
            if (rc < 0)
                goto out;
            break;
        }
    }
    rc = WH_ENOMEM;
    cluster = json_object();
    if (cluster == NULL)
        goto out;
    for (size_t k = 0; k < TF_ROLES; k++) {
        if (json_array_size(lists[k]) > 0
            && json_object_set(cluster, tf_role_names[k], lists[k]) < 0)
            goto out;
    }
    *out = cluster;
    cluster = NULL; /* now owned by the caller */
    rc = 0;
out:
    json_decref(cluster);
    for (size_t k = 0; k < TF_ROLES; k++)
        json_decref(lists[k]);
    return rc;
}

/*
 * jansson and Go's encoding/json differ in string escaping: Go also escapes
 * < > & and U+2028/U+2029 (HTML-safe output) and writes \u00xx in lower-case
 * hex. These bytes only occur inside strings in the dump, so rewriting the
 * text is safe. @return malloc'd string, NULL on ENOMEM.
 */
static char *tf_go_escape(const char *in)
{
    size_t len = strlen(in);
    char *out = malloc(len * 6 + 1); /* worst case: every byte becomes \u00xx */
    size_t o = 0;

    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)in[i];

        if (ch == '\\' && in[i + 1] != '\0') {
            /* An escape: copy it; jansson writes \u%04X, Go lower-case hex. */
            bool hex = in[i + 1] == 'u';

            out[o++] = in[i++];
            out[o++] = in[i];
            for (int d = 0; hex && d < 4 && in[i + 1] != '\0'; d++)
                out[o++] = (char)tolower((unsigned char)in[++i]);
        } else if (ch == '<' || ch == '>' || ch == '&') {
            o += (size_t)snprintf(out + o, 7, "\\u%04x", ch);
        } else if (ch == 0xE2 && (unsigned char)in[i + 1] == 0x80
                   && ((unsigned char)in[i + 2] == 0xA8 || (unsigned char)in[i + 2] == 0xA9)) {
            /* U+2028 / U+2029, line and paragraph separators. */
            o += (size_t)snprintf(out + o, 7, "\\u%s",
                                  (unsigned char)in[i + 2] == 0xA8 ? "2028" : "2029");
            i += 2;
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o] = '\0';
    return out;
}

/* The longest head of TF_CONFIG kept in the slot (some hundred hosts): a slot is bounded
 * by its Job's text (controller/cache.c MEMO_SLOTS), and this head grows with the
 * replicas, not the text (a 200-byte Job of 120,000 workers: ~3 MB per thread). A longer
 * one is made per pod. */
#define TF_KEPT_MAX (4 * 1024)

/*
 * The Job's part of TF_CONFIG (docs/plugins.md §4.5 step 5): the text up to its task,
 * {"cluster":{...}, escaped as Go escapes it (tf_go_escape), kept as [that text] once
 * per thread and Job version where the source keeps it (plugin_memo_get) and it is at
 * most TF_KEPT_MAX bytes; no text of it is kept beside it: no op value is the head alone.
 * @param[out] out  new reference
 * @return 0, WH_ENOMEM, or WH_ETOOBIG (see TF_CONFIG_MAX; then nothing is kept).
 */
static int tf_cluster_part(const struct plugin_ctx *c, const struct tf_args *a, json_t **out)
{
    json_t *cluster = NULL;
    struct buf text;
    char *escaped;
    int rc;

    *out = plugin_memo_get(c);
    if (*out != NULL)
        return 0;
    rc = tf_cluster(&cluster, c->job, a);
    if (rc < 0)
        return rc;
    /* json_dumps(JSON_COMPACT)'s bytes (base/jsonw.h), at a tenth of its instructions */
    buf_init(&text, BUF_NO_MAX);
    (void)jsonw_lit(&text, "{\"cluster\":");
    (void)jsonw_value(&text, cluster);
    json_decref(cluster);
    escaped = text.rc == 0 ? tf_go_escape(buf_cstr(&text)) : NULL;
    buf_dispose(&text);
    *out = escaped != NULL ? json_pack("[s]", escaped) : NULL;
    if (*out != NULL && strlen(escaped) <= TF_KEPT_MAX)
        *out = plugin_memo_keep_parts(c, *out);
    free(escaped);
    return *out != NULL ? 0 : WH_ENOMEM;
}

/*
 * TF_CONFIG text (docs/plugins.md §4.5 step 5): the Job's part, then
 * ,"task":{"type":T,"index":I}} (the order json_pack kept: cluster, task{type, index}),
 * escaped as the part was (escapes are within strings: the two join as one text would).
 * @param[out] out  malloc'd string
 * @return 0, WH_ENOMEM, or WH_ETOOBIG (see TF_CONFIG_MAX).
 */
static int tf_config(char **out, const struct plugin_ctx *c, const struct tf_args *a,
                     const char *type, int64_t index)
{
    json_t *part = NULL;
    struct buf text;
    char *task;
    int rc;

    *out = NULL;
    rc = tf_cluster_part(c, a, &part);
    if (rc < 0)
        return rc;
    buf_init(&text, BUF_NO_MAX);
    (void)jsonw_lit(&text, ",\"task\":{\"type\":");
    (void)jsonw_cstring(&text, type);
    (void)jsonw_lit(&text, ",\"index\":");
    if (buf_append_decimal(&text, (long long)index) == 0)
        (void)jsonw_lit(&text, "}}"); /* a failure stays in text.rc (base/buf.h) */
    task = text.rc == 0 ? tf_go_escape(buf_cstr(&text)) : NULL;
    buf_dispose(&text);
    if (task != NULL) {
        const char *head = json_string_value(json_array_get(part, 0));
        size_t hn = strlen(head);
        size_t tn = strlen(task);

        *out = malloc(hn + tn + 1);
        if (*out != NULL) {
            memcpy(*out, head, hn);
            memcpy(*out + hn, task, tn + 1);
        }
    }
    free(task);
    json_decref(part);
    return *out != NULL ? 0 : WH_ENOMEM;
}

static int tf_on_pod_create(const struct plugin_ctx *c, struct pod_edits *pod, struct wh_error *err)
{
    struct tf_args a;
    const char *task = c->pod != NULL ? c->pod->task : "default";
    const char *index_str = c->pod != NULL ? c->pod->index : "";
    const char *pod_name = c->pod != NULL ? c->pod->name : "";
    int64_t index;
    char *config = NULL;
    json_t *value = NULL;
    int rc = 0;

    tf_args_parse(c, &a);
    if (tf_standalone(c->job))
        return 0;
    if (job_parse_index(index_str, &index) < 0)
        return wh_error_set(err, WH_EINVAL, "pod index \"%s\" of pod %s is not a number", index_str,
                            pod_name[0] != '\0' ? pod_name : "(generateName)");
    rc = tf_config(&config, c, &a, tf_task_type(&a, task), index);
    if (rc == WH_ETOOBIG)
        return wh_error_set(err, rc, "TF_CONFIG would exceed %d bytes", TF_CONFIG_MAX);
    if (rc < 0)
        return wh_error_set(err, rc, "out of memory");
    value = json_string(config); /* one copy shared by every container */
    if (value == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < pod_edits_count(pod, PV_CONTAINERS); i++) {
        rc = pod_edits_upsert_env(pod, (struct pe_ref){PV_CONTAINERS, i},
                                  podutil_env_shared("TF_CONFIG", value), c->name, c->warnings);
        if (rc < 0) {
            rc = wh_error_set(err, rc, "cannot add env TF_CONFIG to spec.containers[%zu]: %s", i,
                              rc == WH_ENOMEM ? "out of memory" : "malformed container");
            goto out;
        }
    }
    rc = 0;
out:
    json_decref(value);
    free(config);
    return rc;
}

/*
 * Bytes of the largest TF_CONFIG of the Job's pods (tf_config's text), computed
 * without building it: {"cluster":{<roles>},"task":{"type":"<type>","index":<i>}}.
 * Names are DNS-1123 labels, so nothing is escaped.
 */
static unsigned long long tf_config_bytes(const json_t *job, const struct tf_args *a)
{
    const json_t *lists[TF_ROLES] = {NULL, NULL, NULL, NULL};
    size_t extra = diagnose_digits((long long)a->port) + 3; /* quotes and ':' */
    unsigned long long cluster = 0;
    unsigned long long task_max = 0;
    size_t roles = 0;
    size_t i;
    const json_t *task;

    /* As tf_cluster: a task goes to the first role of its name; a later one replaces. */
    json_array_each(job_tasks(job), i, task) {
        for (size_t k = 0; k < TF_ROLES; k++) {
            if (strcmp(job_task_name(task), a->role[k]) == 0) {
                lists[k] = task;
                break;
            }
        }
        if (job_task_replicas(task) > 0) {
            unsigned long long t = strlen(tf_task_type(a, job_task_name(task)))
                + diagnose_digits((long long)job_task_replicas(task) - 1);

            task_max = t > task_max ? t : task_max;
        }
    }
    for (size_t k = 0; k < TF_ROLES; k++) {
        unsigned long long n = 0;
        unsigned long long list;

        if (lists[k] == NULL)
            continue;
        list = diagnose_hosts_bytes(job, lists[k], false, extra, &n);
        if (n == 0)
            continue;
        cluster += strlen(tf_role_names[k]) + 4 + list + 1; /* "role":[ ... ] */
        roles++;
    }
    if (roles > 1)
        cluster += roles - 1;
    return 12 + cluster + 18 + 10 + 2 + task_max;
}

/* Job level (plugins/diagnose.h): role tasks named but missing, TF_CONFIG's size. */
static int tf_diagnose(const struct plugin_ctx *c, struct diagnostics *out)
{
    static const char *const flags[TF_ROLES] = {"--ps", "--worker", "--chief", "--evaluator"};
    struct tf_args a;
    unsigned long long env;
    size_t k;
    const json_t *task;

    tf_args_parse(c, &a);
    if (tf_standalone(c->job))
        return 0;
    /* Optional roles: only a name the Job gave (not the default pointer) must exist. */
    for (size_t r = 0; r < TF_ROLES; r++)
        if (a.role[r] != tf_role_names[r] && job_find_task(c->job, a.role[r]) == NULL)
            diagnose_add(out, DIAGNOSE_TASK_NOT_FOUND, false, "tensorflow",
                         "no task named \"%s\" (%s), so TF_CONFIG has no %s: name the task with "
                         "%s in spec.plugins.tensorflow, or rename the task",
                         a.role[r], flags[r], tf_role_names[r], flags[r]);
    env = strlen("TF_CONFIG=") + tf_config_bytes(c->job, &a) + 1;
    if (env > DIAGNOSE_ENV_MAX)
        diagnose_add(out, DIAGNOSE_VALUE_TOO_LARGE, true, "tensorflow",
                     "TF_CONFIG would be %llu bytes, more than the 131072 (128 KiB) one "
                     "environment string can hold (the kernel's MAX_ARG_STRLEN: \"argument list "
                     "too long\"), so no container can start: run fewer replicas "
                     "(spec.tasks[].replicas)",
                     env);
    else if (env * 100 >= (unsigned long long)DIAGNOSE_ENV_MAX * DIAGNOSE_NEAR_PERCENT)
        diagnose_add(out, DIAGNOSE_VALUE_NEAR_LIMIT, false, "tensorflow",
                     "TF_CONFIG is %llu bytes, %llu%% of the 131072 (128 KiB) one environment "
                     "string can hold: with more replicas no container can start",
                     env, env * 100 / DIAGNOSE_ENV_MAX);
    json_array_each(job_tasks(c->job), k, task)
        diagnose_env_replaced(out, "tensorflow", task, k, "containers", "TF_CONFIG");
    return 0;
}

const struct plugin plugin_tensorflow = {
    .name = "tensorflow",
    .on_pod_create = tf_on_pod_create,
    /* No Kubernetes objects (docs/plugins.md §5.2) and no Job writes (D9): no job hooks. */
    .on_job_add = NULL,
    .on_job_update = NULL,
    .on_job_delete = NULL,
    .diagnose = tf_diagnose,
};
