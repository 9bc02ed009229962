/* SPDX-License-Identifier: Apache-2.0 */
/*
 * diagnose.c - the Job-level diagnostics (see diagnose.h): the framework's own
 * (spec.plugins, tasks), then each plugin's `diagnose` of the effective set in
 * registry order. A plugin's argument parse errors arrive the way its hooks
 * report them, as "<name> plugin: ..." warnings in its context (D4), and
 * become PluginArgumentInvalid here, so no plugin repeats that.
 *
 * Threads: no state; callable from any thread on a caller-owned struct diagnostics.
 */
#include "plugins/diagnose.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/jsonobj.h"
#include "base/sanitize.h"
#include "k8s/names.h"
#include "plugins/job.h"
#include "plugins/plugin.h"
#include "plugins/warnings.h"

static const char *const reason_names[] = {
    [DIAGNOSE_PLUGIN_ARGUMENT_INVALID] = "PluginArgumentInvalid",
    [DIAGNOSE_PLUGIN_UNKNOWN] = "PluginUnknown",
    [DIAGNOSE_TASK_DUPLICATE] = "TaskDuplicate",
    [DIAGNOSE_TASK_NOT_FOUND] = "TaskNotFound",
    [DIAGNOSE_CONTAINER_NOT_FOUND] = "ContainerNotFound",
    [DIAGNOSE_NAME_INVALID] = "NameInvalid",
    [DIAGNOSE_VALUE_TOO_LARGE] = "ValueTooLarge",
    [DIAGNOSE_VALUE_NEAR_LIMIT] = "ValueNearLimit",
    [DIAGNOSE_RANK_NOT_UNIQUE] = "RankNotUnique",
    [DIAGNOSE_USER_VALUE_REPLACED] = "UserValueReplaced",
    [DIAGNOSE_CONFLICT] = "Conflict",
};

void diagnose_init(struct diagnostics *d)
{
    d->n = 0;
    d->dropped = 0;
}

static void add(struct diagnostics *d, const char *key, enum diagnose_reason reason, bool fatal,
                const char *plugin, const char *fmt, va_list ap)
    __attribute__((format(printf, 6, 0)));

static void add(struct diagnostics *d, const char *key, enum diagnose_reason reason, bool fatal,
                const char *plugin, const char *fmt, va_list ap)
{
    char buf[DIAGNOSE_MSG_MAX];
    size_t off = 0;

    if (plugin != NULL) {
        int n = snprintf(buf, sizeof(buf), "%s plugin: ", plugin);

        off = n > 0 && (size_t)n < sizeof(buf) ? (size_t)n : 0;
    }
    vsnprintf(buf + off, sizeof(buf) - off, fmt, ap);
    /* Built from the user's names and cut to fit: it must stay valid UTF-8 for JSON, and
     * one printable line, as every warning (warnings_add): the Job webhook answers with
     * these as they are (diagnose_messages), and Events and render print them. */
    wh_utf8_sanitize(buf);
    sanitize_controls(buf);
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->items[i].message, buf) == 0)
            return;
    if (d->n == DIAGNOSE_MAX) {
        d->dropped++;
        return;
    }
    d->items[d->n].reason = reason;
    d->items[d->n].fatal = fatal;
    snprintf(d->items[d->n].plugin, sizeof(d->items[d->n].plugin), "%s",
             plugin != NULL ? plugin : "");
    memcpy(d->items[d->n].message, buf, sizeof(buf));
    snprintf(d->items[d->n].key, sizeof(d->items[d->n].key), "%s", key != NULL ? key : "");
    d->n++;
}

void diagnose_add(struct diagnostics *d, enum diagnose_reason reason, bool fatal,
                  const char *plugin, const char *fmt, ...)
{
    va_list ap;

    if (d == NULL)
        return;
    va_start(ap, fmt);
    add(d, NULL, reason, fatal, plugin, fmt, ap);
    va_end(ap);
}

void diagnose_add_keyed(struct diagnostics *d, const char *key, enum diagnose_reason reason,
                        bool fatal, const char *plugin, const char *fmt, ...)
{
    va_list ap;

    if (d == NULL)
        return;
    va_start(ap, fmt);
    add(d, key, reason, fatal, plugin, fmt, ap);
    va_end(ap);
}

const char *diagnose_reason_name(enum diagnose_reason reason)
{
    if ((size_t)reason >= sizeof(reason_names) / sizeof(reason_names[0])
        || reason_names[reason] == NULL)
        return "Unknown";
    return reason_names[reason];
}

size_t diagnose_fatal_count(const struct diagnostics *d)
{
    size_t n = 0;

    for (size_t i = 0; i < d->n; i++)
        n += d->items[i].fatal ? 1 : 0;
    return n;
}

/* Bytes of the first max code points of s (valid UTF-8); *chars_out: how many there are. */
static size_t utf8_prefix(const char *s, size_t max, size_t *chars_out)
{
    size_t chars = 0;
    size_t i = 0;

    for (; s[i] != '\0'; i++) {
        if (((unsigned char)s[i] & 0xC0) == 0x80)
            continue; /* a continuation byte: part of the code point before */
        if (chars == max)
            break;
        chars++;
    }
    *chars_out = chars;
    return i;
}

/* Room kept for the last "N more diagnostics not shown" line. */
#define MORE_LINE_CHARS 48

json_t *diagnose_messages(const struct diagnostics *d, bool fatal_only)
{
    json_t *arr = json_array();
    size_t total = 0;
    size_t hidden = d->dropped;
    bool full = false;

    if (arr == NULL)
        return NULL;
    for (size_t i = 0; i < d->n; i++) {
        const char *m = d->items[i].message;
        size_t chars;
        size_t bytes;

        if (fatal_only && !d->items[i].fatal)
            continue;
        bytes = utf8_prefix(m, DIAGNOSE_WARNING_CHARS, &chars);
        full = full || total + chars > DIAGNOSE_WARNINGS_CHARS - MORE_LINE_CHARS;
        if (full) {
            hidden++; /* past what kube-apiserver passes on: counted, in order */
            continue;
        }
        total += chars;
        if (json_array_append_new(arr, json_stringn(m, bytes)) < 0)
            goto fail;
    }
    if (hidden > 0
        && json_array_append_new(arr, json_sprintf("%zu more diagnostics not shown", hidden)) < 0)
        goto fail;
    return arr;
fail:
    json_decref(arr);
    return NULL;
}

/*
 * The block of diagnose_pack: the dropped count (8 bytes, host order: the block
 * never leaves the process), then per entry the reason and fatal bytes, the
 * plugin, the message and the key, each NUL-terminated.
 */
int diagnose_pack(const struct diagnostics *d, char **buf_out, size_t *len_out)
{
    uint64_t dropped = d->dropped;
    size_t len = sizeof(dropped);
    char *buf;
    char *p;

    *buf_out = NULL;
    *len_out = 0;
    if (d->n == 0 && d->dropped == 0)
        return 0;
    for (size_t i = 0; i < d->n; i++)
        len += 2 + strlen(d->items[i].plugin) + 1 + strlen(d->items[i].message) + 1
            + strlen(d->items[i].key) + 1;
    buf = malloc(len);
    if (buf == NULL)
        return WH_ENOMEM;
    memcpy(buf, &dropped, sizeof(dropped));
    p = buf + sizeof(dropped);
    for (size_t i = 0; i < d->n; i++) {
        size_t pl = strlen(d->items[i].plugin) + 1;
        size_t ml = strlen(d->items[i].message) + 1;
        size_t kl = strlen(d->items[i].key) + 1;

        *p++ = (char)d->items[i].reason;
        *p++ = d->items[i].fatal ? 1 : 0;
        memcpy(p, d->items[i].plugin, pl);
        p += pl;
        memcpy(p, d->items[i].message, ml);
        p += ml;
        memcpy(p, d->items[i].key, kl);
        p += kl;
    }
    *buf_out = buf;
    *len_out = len;
    return 0;
}

void diagnose_unpack(const char *buf, size_t len, struct diagnostics *out)
{
    uint64_t dropped;
    const char *p;
    const char *end;

    diagnose_init(out);
    if (buf == NULL || len < sizeof(dropped))
        return;
    end = buf + len;
    memcpy(&dropped, buf, sizeof(dropped));
    out->dropped = (size_t)dropped;
    for (p = buf + sizeof(dropped); end - p > 2 && out->n < DIAGNOSE_MAX;) {
        struct diagnostic *e = &out->items[out->n];
        const char *plugin = p + 2;
        const char *pend = memchr(plugin, '\0', (size_t)(end - plugin));
        const char *msg = pend != NULL ? pend + 1 : NULL;
        const char *mend = msg != NULL ? memchr(msg, '\0', (size_t)(end - msg)) : NULL;
        const char *key = mend != NULL ? mend + 1 : NULL;
        const char *kend = key != NULL ? memchr(key, '\0', (size_t)(end - key)) : NULL;

        if (kend == NULL)
            return; /* cut short: the entries before are whole */
        e->reason = (enum diagnose_reason)(unsigned char)p[0];
        e->fatal = p[1] != 0;
        snprintf(e->plugin, sizeof(e->plugin), "%s", plugin);
        snprintf(e->message, sizeof(e->message), "%s", msg);
        snprintf(e->key, sizeof(e->key), "%s", key);
        out->n++;
        p = kend + 1;
    }
}

const json_t *diagnose_task_containers(const json_t *task, const char *list)
{
    const json_t *l = json_member(json_member(json_member(task, "template"), "spec"), list);

    return json_is_array(l) ? l : NULL;
}

size_t diagnose_digits(long long v)
{
    int n = snprintf(NULL, 0, "%lld", v);

    return n > 0 ? (size_t)n : 1;
}

bool diagnose_plugin_enabled(const json_t *job, const char *name)
{
    bool enabled[16];
    const json_t *args[16];

    plugin_effective_set(job, enabled, args, NULL);
    for (size_t k = 0; k < plugin_registry_len && k < sizeof(enabled) / sizeof(enabled[0]); k++)
        if (strcmp(plugin_registry[k]->name, name) == 0)
            return enabled[k];
    return false;
}

/* Sum of the decimal lengths of 0 .. n-1, in O(digits of n). */
static unsigned long long digits_below(unsigned long long n)
{
    unsigned long long sum = 0;
    unsigned long long lo = 0;
    unsigned long long hi = 10;

    for (unsigned long long d = 1; lo < n; d++, lo = hi, hi *= 10)
        sum += d * ((n < hi ? n : hi) - lo);
    return sum;
}

unsigned long long diagnose_hosts_bytes(const json_t *job, const json_t *task,
                                        bool one_per_hostname, size_t extra,
                                        unsigned long long *count)
{
    long long replicas = (long long)job_task_replicas(task);
    const char *hostname = job_task_hostname(task);
    const char *subdomain = job_task_subdomain(task);
    size_t domain = strlen(subdomain[0] != '\0' ? subdomain : job_name(job));
    unsigned long long n = replicas > 0 ? (unsigned long long)replicas : 0;
    unsigned long long bytes;

    if (hostname[0] != '\0' && one_per_hostname && n > 1)
        n = 1;
    if (hostname[0] != '\0')
        bytes = n * (strlen(hostname) + 1 + domain + extra);
    else
        bytes = n * (strlen(job_name(job)) + strlen(job_task_name(task)) + 3 + domain + extra)
            + digits_below(n);
    if (count != NULL)
        *count = n;
    return n > 0 ? bytes + n - 1 : 0; /* separators */
}

void diagnose_port_arg(struct diagnostics *out, const char *plugin, const char *flag,
                       long long value, bool declared)
{
    int32_t port = (int32_t)(uint32_t)(unsigned long long)value;

    if (port >= 1 && port <= 65535)
        return;
    if (declared)
        diagnose_add(out, DIAGNOSE_PLUGIN_ARGUMENT_INVALID, true, plugin,
                     "--%s=%lld is not a port (1-65535), and the API server refuses a container "
                     "port %d: fix spec.plugins.%s",
                     flag, value, (int)port, plugin);
    else
        diagnose_add(out, DIAGNOSE_PLUGIN_ARGUMENT_INVALID, false, plugin,
                     "--%s=%lld is not a port (1-65535): fix spec.plugins.%s", flag, value, plugin);
}

/* @return the env entry of name in container ctr, or NULL. */
static const json_t *env_of(const json_t *ctr, const char *name)
{
    size_t i;
    const json_t *e;

    json_array_each(json_member(ctr, "env"), i, e) {
        const char *n = json_string_value(json_member(e, "name"));

        if (n != NULL && strcmp(n, name) == 0)
            return e;
    }
    return NULL;
}

static const char *ctr_name(const json_t *ctr)
{
    const char *n = json_string_value(json_member(ctr, "name"));

    return n != NULL ? n : "";
}

void diagnose_env_replaced(struct diagnostics *out, const char *plugin, const json_t *task,
                           size_t k, const char *list, const char *env_name)
{
    size_t i;
    const json_t *ctr;

    json_array_each(diagnose_task_containers(task, list), i, ctr) {
        if (env_of(ctr, env_name) == NULL)
            continue;
        diagnose_add(out, DIAGNOSE_USER_VALUE_REPLACED, false, plugin,
                     "%s \"%s\" of task %s sets %s, which the plugin replaces: drop it from "
                     "spec.tasks[%zu].template",
                     strcmp(list, "initContainers") == 0 ? "init container" : "container",
                     ctr_name(ctr), job_task_name(task), env_name, k);
    }
}

void diagnose_template_conflicts(struct diagnostics *out, const char *plugin, const json_t *task,
                                 size_t k, const char *volume, const char *source_key,
                                 const char *source_name_key, const char *mount_path,
                                 const char *what)
{
    static const char *const lists[] = {"containers", "initContainers"};
    size_t i;
    const json_t *v;

    json_array_each(diagnose_task_containers(task, "volumes"), i, v) {
        const json_t *src = json_member(v, source_key);
        const char *src_name = json_string_value(json_member(src, source_name_key));
        const char *vname = json_string_value(json_member(v, "name"));

        if (vname == NULL || strcmp(vname, volume) != 0)
            continue;
        if (src_name != NULL && strcmp(src_name, volume) == 0)
            continue; /* the plugin's own volume, written into the template */
        diagnose_add(out, DIAGNOSE_CONFLICT, true, plugin,
                     "task %s has a volume \"%s\" of its own, and the plugin needs that name for "
                     "%s: rename the volume in spec.tasks[%zu].template.spec.volumes",
                     job_task_name(task), volume, what, k);
    }
    for (size_t l = 0; l < 2; l++) {
        const json_t *ctr;

        json_array_each(diagnose_task_containers(task, lists[l]), i, ctr) {
            size_t m;
            const json_t *mnt;

            json_array_each(json_member(ctr, "volumeMounts"), m, mnt) {
                const char *path = json_string_value(json_member(mnt, "mountPath"));
                const char *name = json_string_value(json_member(mnt, "name"));

                if (path == NULL || strcmp(path, mount_path) != 0
                    || (name != NULL && strcmp(name, volume) == 0))
                    continue;
                diagnose_add(out, DIAGNOSE_CONFLICT, true, plugin,
                             "%s \"%s\" of task %s mounts volume \"%s\" at %s, where the plugin "
                             "mounts %s: mount it elsewhere (spec.tasks[%zu].template)",
                             l == 1 ? "init container" : "container", ctr_name(ctr),
                             job_task_name(task), name != NULL ? name : "", mount_path, what, k);
            }
        }
    }
}

/* "a list", "a string", ...: what the user wrote instead of what was wanted. */
static const char *json_kind(const json_t *v)
{
    if (v == NULL)
        return "null";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "a map";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/*
 * Append "name": args (args as compact JSON, [] when not a list) to the example
 * map's text at *off. @return false when it does not fit (example cut back to *off).
 */
static bool example_entry(char *example, size_t len, size_t *off, const char *name,
                          const json_t *args)
{
    char *text = json_is_array(args) ? json_dumps(args, JSON_COMPACT) : NULL;
    int n = snprintf(example + *off, len - *off, "%s\"%s\": %s", *off > 0 ? ", " : "", name,
                     text != NULL ? text : "[]");

    free(text);
    if (n < 0 || (size_t)n >= len - *off) {
        example[*off] = '\0';
        return false;
    }
    *off += (size_t)n;
    return true;
}

/*
 * spec.plugins that is not a map: nothing runs (plugin_effective_set sees no names).
 * The message shows the map meant: the names of a list (`[ssh, svc]`), the members of
 * a list of one-entry maps (`[{ssh: []}, {mpi: [--port=22]}]`), or a lone name.
 */
static void plugins_not_a_map(const json_t *plugins, struct diagnostics *out)
{
    char example[160] = "";
    size_t off = 0;
    size_t i;
    const json_t *v;
    bool fits = true;

    if (json_is_string(plugins))
        fits = example_entry(example, sizeof(example), &off, json_string_value(plugins), NULL);
    json_array_foreach(plugins, i, v) {
        const char *name;
        const json_t *args;

        if (!fits)
            break;
        if (json_is_string(v)) {
            fits = example_entry(example, sizeof(example), &off, json_string_value(v), NULL);
            continue;
        }
        json_object_foreach((json_t *)v, name, args) {
            fits = fits && example_entry(example, sizeof(example), &off, name, args);
        }
    }
    if (off == 0)
        snprintf(example, sizeof(example), "\"svc\": []");
    diagnose_add(out, DIAGNOSE_PLUGIN_ARGUMENT_INVALID, false, NULL,
                 "spec.plugins is %s, not a map of plugin name to arguments, so no plugin runs: "
                 "write it as {%s}",
                 json_kind(plugins), example);
}

/* Unknown names, and values that are not lists of strings (docs/plugins.md §1.3, §3.1, D3). */
static void plugins_entries(const json_t *plugins, struct diagnostics *out)
{
    const char *name;
    const json_t *value;

    json_object_foreach((json_t *)plugins, name, value) {
        size_t i;
        const json_t *arg;

        if (plugin_find(name) == NULL) {
            diagnose_add(out, DIAGNOSE_PLUGIN_UNKNOWN, false, NULL,
                         "spec.plugins has an unknown plugin \"%s\", which is ignored: the plugins "
                         "are ssh, env, svc, tensorflow, mpi, pytorch, hcclrank and ray",
                         name);
            continue;
        }
        if (value == NULL || json_is_null(value))
            continue;
        if (!json_is_array(value)) {
            diagnose_add(out, DIAGNOSE_PLUGIN_ARGUMENT_INVALID, false, name,
                         "spec.plugins.%s is %s, not a list of arguments, so the plugin runs with "
                         "its defaults: write it as a list of strings",
                         name, json_kind(value));
            continue;
        }
        json_array_foreach(value, i, arg) {
            if (json_is_string(arg))
                continue;
            diagnose_add(out, DIAGNOSE_PLUGIN_ARGUMENT_INVALID, false, name,
                         "spec.plugins.%s[%zu] is %s, not a string, so it and the arguments after "
                         "it are ignored: quote it",
                         name, i, json_kind(arg));
            break;
        }
    }
}

/*
 * Two tasks of one name: plugins find only the first (docs/plugins.md §3.6); pod names
 * collide. By sorting (k8s/names.h): a Job body can hold 100,000 tasks.
 * @return 0 or WH_ENOMEM.
 */
static int tasks_duplicate(const json_t *job, struct diagnostics *out)
{
    const json_t *tasks = job_tasks(job);
    size_t n = json_array_size(tasks);
    const char **names = n > 0 ? malloc(n * sizeof(*names)) : NULL;
    size_t *first;

    if (n == 0)
        return 0;
    if (names == NULL)
        return WH_ENOMEM;
    for (size_t i = 0; i < n; i++)
        names[i] = job_task_name(json_array_get(tasks, i));
    first = k8s_name_first_positions(names, n);
    free(names);
    if (first == NULL)
        return WH_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (first[i] == i)
            continue;
        diagnose_add(out, DIAGNOSE_TASK_DUPLICATE, false, NULL,
                     "spec.tasks[%zu] has the name \"%s\" of spec.tasks[%zu]: the plugins see "
                     "only the first and the pods of both get the same names; rename one",
                     i, job_task_name(json_array_get(tasks, i)), first[i]);
    }
    free(first);
    return 0;
}

/* A plugin's argument parse warnings (D4) as PluginArgumentInvalid. */
static void argument_errors(const struct plugin *p, const struct warnings *w,
                            struct diagnostics *out)
{
    char prefix[32];
    size_t plen;

    snprintf(prefix, sizeof(prefix), "%s plugin: ", p->name);
    plen = strlen(prefix);
    for (size_t i = 0; i < w->n; i++) {
        const char *text = w->items[i];

        if (strncmp(text, prefix, plen) == 0)
            text += plen;
        /* Keyed as plugin_args keyed the warning: the pod chain tells it in those words. */
        diagnose_add_keyed(out, w->keys[i], DIAGNOSE_PLUGIN_ARGUMENT_INVALID, false, p->name,
                           "%s; fix spec.plugins.%s", text, p->name);
    }
}

/* Move items[mid..n) in front of items[from..mid), keeping each group's order. */
static void rotate(struct diagnostics *d, size_t from, size_t mid)
{
    struct diagnostic tmp;

    for (size_t moved = mid; moved < d->n; moved++, from++) {
        tmp = d->items[moved];
        memmove(&d->items[from + 1], &d->items[from], (moved - from) * sizeof(d->items[0]));
        d->items[from] = tmp;
    }
}

int diagnose_job(const json_t *job, struct diagnostics *out)
{
    const json_t *plugins = json_member(json_member(job, "spec"), "plugins");
    bool enabled[16];
    const json_t *args[16];

    diagnose_init(out);
    if (plugins != NULL && !json_is_null(plugins) && !json_is_object(plugins))
        plugins_not_a_map(plugins, out);
    else if (plugins != NULL)
        plugins_entries(plugins, out);
    if (tasks_duplicate(job, out) < 0)
        return WH_ENOMEM;

    plugin_effective_set(job, enabled, args, NULL);
    for (size_t k = 0; k < plugin_registry_len && k < sizeof(enabled) / sizeof(enabled[0]); k++) {
        const struct plugin *p = plugin_registry[k];
        struct warnings w;
        struct plugin_ctx ctx = {
            .name = p->name,
            .job = job,
            .args = args[k],
            .pod = NULL,
            .warnings = &w,
            .kc = NULL,
        };
        size_t before;
        size_t first_own;
        int rc;

        if (!enabled[k] || p->diagnose == NULL)
            continue;
        warnings_init(&w);
        before = out->n;
        rc = p->diagnose(&ctx, out);
        first_own = out->n;
        argument_errors(p, &w, out);
        /* The argument errors first: they may explain the plugin's other findings. */
        rotate(out, before, first_own);
        if (rc < 0)
            return rc;
    }
    return 0;
}
