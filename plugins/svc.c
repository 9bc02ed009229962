/* SPDX-License-Identifier: Apache-2.0 */
/*
 * svc.c - the `svc` plugin, pod side (docs/plugins.md §4.2, D4, D5, D14), and the
 * ConfigMap data builder shared with the reconcile side (plugins/svc.h).
 *
 * OnPodCreate, in the order of docs/plugins.md §4.2:
 *   1. spec.hostname = pod name when empty. A generateName-only pod has no
 *      name yet: hostname is left unset and a warning says so (D14).
 *   2. spec.subdomain = J when empty (a template value is kept).
 *   3. unless --inject-hosts-env=false: env references VC_UP(T)_HOSTS then
 *      VC_UP(T)_NUM for every task in array order, to ConfigMap J-svc, in every
 *      container, then every init container.
 *   4. volume J-svc (ConfigMap J-svc); 5. mount at /etc/volcano in every
 *      container, then every init container.
 * Every edit is an upsert (D5): a user's env value replaced gives a warning; a
 * user's volume named J-svc or mount at /etc/volcano denies the pod (conflict).
 *
 * Job hooks (docs/plugins.md §4.2, §5.2, D9-D12), through plugins/objects.h:
 *   add, update  ConfigMap J-svc (data = svc_configmap_data, replaced when it
 *                differs), headless Service J and, unless
 *                --disable-network-policy, NetworkPolicy J: each created when
 *                absent (so a resync re-creates what someone deleted, D10); the
 *                Service and NetworkPolicy are never updated. The first API
 *                error ends the hook (it is retried); a foreign object (D12) is
 *                left alone and the hook goes on.
 *   delete       ConfigMap, Service, then NetworkPolicy unless disabled, only
 *                ours (D12), 404 = done. Every delete is tried; the first error
 *                is returned, so one failure does not strand the others.
 *
 * Threads: no state; arguments are parsed per call (plugins/plugin.h).
 */
#include "plugins/svc.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonobj.h"
#include "k8s/names.h"
#include "plugins/args.h"
#include "plugins/diagnose.h"
#include "plugins/job.h"
#include "plugins/objects.h"
#include "plugins/plugin.h"
#include "plugins/podedit.h"
#include "plugins/podutil.h"

#define SVC_MOUNT_PATH "/etc/volcano"

struct svc_args {
    bool publish_not_ready; /* publish-not-ready-addresses (reconcile side only) */
    bool disable_netpol;    /* disable-network-policy (reconcile side only) */
    bool inject_hosts_env;  /* inject-hosts-env, default true */
};

/* Defaults, then the Job's arguments (plugin_args: a parse error is one warning, D4). */
static void svc_args_parse(const struct plugin_ctx *c, struct svc_args *a)
{
    const struct args_def defs[] = {
        {"publish-not-ready-addresses", ARGS_BOOL, &a->publish_not_ready},
        {"disable-network-policy", ARGS_BOOL, &a->disable_netpol},
        {"inject-hosts-env", ARGS_BOOL, &a->inject_hosts_env},
    };

    a->publish_not_ready = false;
    a->disable_netpol = false;
    a->inject_hosts_env = true;
    plugin_args(c, defs, sizeof(defs) / sizeof(defs[0]));
}

/* @return malloc'd a + b + c, NULL on ENOMEM. */
static char *str_concat3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a);
    size_t lb = strlen(b);
    size_t lc = strlen(c);
    char *out = malloc(la + lb + lc + 1);

    if (out == NULL)
        return NULL;
    memcpy(out, a, la);
    memcpy(out + la, b, lb);
    memcpy(out + la + lb, c, lc + 1);
    return out;
}

/* @return malloc'd UP(T) or US(T) of the task name (never cut), NULL on ENOMEM. */
static char *task_key(const char *task_name, bool upper)
{
    size_t len = strlen(task_name) + 1;
    char *out = malloc(len);

    if (out == NULL)
        return NULL;
    if (upper)
        job_name_upper(out, len, task_name);
    else
        job_name_underscore(out, len, task_name);
    return out;
}

/* data[key_a + key_b + key_c] = value. @return 0 or WH_ENOMEM. */
static int data_set(json_t *data, const char *a, const char *b, const char *c, const char *value)
{
    char *key = str_concat3(a, b, c);
    int rc = WH_ENOMEM;

    if (key != NULL && json_object_set_new(data, key, json_string(value)) == 0)
        rc = 0;
    free(key);
    return rc;
}

/* Add the three keys of one task to data (docs/plugins.md §4.2).
 * @return 0, WH_ENOMEM, or WH_ETOOBIG (job_task_hosts: a host list over its cap). */
static int svc_data_add_task(json_t *data, const json_t *job, const json_t *task)
{
    char *up = task_key(job_task_name(task), true);
    char *us = task_key(job_task_name(task), false);
    char *lines = NULL;
    char *csv = NULL;
    char num[24];
    int64_t count = 0;
    int rc = WH_ENOMEM;

    if (up == NULL || us == NULL)
        goto out;
    rc = job_task_hosts(&lines, job, task, "\n", &count);
    if (rc == 0)
        rc = job_task_hosts(&csv, job, task, ",", NULL);
    if (rc < 0)
        goto out;
    snprintf(num, sizeof(num), "%lld", (long long)count);
    rc = data_set(data, us, ".host", "", lines);
    if (rc < 0)
        goto out;
    rc = data_set(data, "VC_", up, "_HOSTS", csv);
    if (rc < 0)
        goto out;
    rc = data_set(data, "VC_", up, "_NUM", num);
out:
    free(up);
    free(us);
    free(lines);
    free(csv);
    return rc;
}

int svc_configmap_data(const json_t *job, json_t **out)
{
    json_t *data = json_object();
    const json_t *task;
    size_t k;
    int rc;

    *out = NULL;
    if (data == NULL)
        return WH_ENOMEM;
    json_array_each(job_tasks(job), k, task) {
        rc = svc_data_add_task(data, job, task);
        if (rc < 0) {
            json_decref(data);
            return rc;
        }
    }
    *out = data;
    return 0;
}

/*
 * The env references of step 3: [VC_UP(T)_HOSTS, VC_UP(T)_NUM] for every task
 * in array order, each a configMapKeyRef into cm. @return new array, NULL on ENOMEM.
 */
static json_t *svc_env_refs(const json_t *job, const char *cm)
{
    json_t *list = json_array();
    const json_t *task;
    size_t k;

    if (list == NULL)
        return NULL;
    json_array_each(job_tasks(job), k, task) {
        static const char *const suffixes[] = {"_HOSTS", "_NUM"};
        char *up = task_key(job_task_name(task), true);

        if (up == NULL)
            goto nomem;
        for (size_t s = 0; s < 2; s++) {
            char *name = str_concat3("VC_", up, suffixes[s]);

            if (name == NULL
                || json_array_append_new(list, podutil_env_configmap(name, cm, name)) < 0) {
                free(name);
                free(up);
                goto nomem;
            }
            free(name);
        }
        free(up);
    }
    return list;
nomem:
    json_decref(list);
    return NULL;
}

static const char *fail_reason(int rc)
{
    return rc == WH_ENOMEM ? "out of memory" : "malformed container";
}

/* Step 3 for one container list. */
static int svc_env_list(const struct plugin_ctx *c, struct pod_edits *pod,
                        enum pv_container_list list, const json_t *env, struct wh_error *err)
{
    const char *list_name = podview_list_names[list];

    if (json_array_size(env) == 0)
        return 0; /* inject-hosts-env=false: a malformed container is the mount's to name */
    for (size_t i = 0; i < pod_edits_count(pod, list); i++) {
        size_t k = 0;
        /* The entries are shared by every container (the upserts place them by
         * reference): no code may edit one in place, only replace it whole. */
        int rc =
            pod_edits_upsert_envs(pod, (struct pe_ref){list, i}, env, &k, c->name, c->warnings);

        if (rc < 0)
            return wh_error_set(err, rc, "cannot set env %s in spec.%s[%zu]: %s",
                                podutil_str(json_array_get(env, k), "name"), list_name, i,
                                fail_reason(rc));
    }
    return 0;
}

/* Step 5 for one container list. */
static int svc_mount_list(struct pod_edits *pod, enum pv_container_list list, const json_t *mount,
                          struct wh_error *err)
{
    const char *list_name = podview_list_names[list];

    for (size_t i = 0; i < pod_edits_count(pod, list); i++) {
        /* shared, as the env entries: a mount is replaced whole, never edited */
        int rc = pod_edits_upsert_mount(pod, (struct pe_ref){list, i}, json_incref((json_t *)mount),
                                        err);

        if (rc == WH_ECONFLICT)
            return rc; /* D5: the user's mount, err says whose */
        if (rc < 0)
            return wh_error_set(err, rc, "cannot mount %s in spec.%s[%zu]: %s", SVC_MOUNT_PATH,
                                list_name, i, fail_reason(rc));
    }
    return 0;
}

/* Steps 1 and 2: hostname and subdomain, each only when empty (docs/plugins.md §4.2, D14). */
static int svc_set_names(const struct plugin_ctx *c, struct pod_edits *pod, const char *job,
                         struct wh_error *err)
{
    const char *pod_name = c->pod != NULL && c->pod->name != NULL ? c->pod->name : "";
    char now[2];
    int rc;

    if (pod_edits_spec_string(pod, "hostname", now, sizeof(now))[0] == '\0') {
        if (pod_name[0] == '\0') {
            warnings_add(c->warnings,
                         "svc plugin: pod has no name (generateName), spec.hostname left unset");
        } else {
            rc = pod_edits_set_spec(pod, "hostname", pod_name);
            if (rc < 0)
                return wh_error_set(err, rc, "cannot set spec.hostname: %s", wh_error_str(rc));
        }
    }
    if (pod_edits_spec_string(pod, "subdomain", now, sizeof(now))[0] == '\0') {
        rc = pod_edits_set_spec(pod, "subdomain", job);
        if (rc < 0)
            return wh_error_set(err, rc, "cannot set spec.subdomain: %s", wh_error_str(rc));
    }
    return 0;
}

/* What svc_parts holds, by place. */
enum { SVC_ENV, SVC_VOLUME, SVC_MOUNT };

/*
 * [the env references of step 3 ([] without inject-hosts-env), the ConfigMap's volume
 * (step 4), its mount (step 5)] of the Job's pods (docs/plugins.md §4.2; the Job's
 * alone: its name, tasks and arguments), made once per thread and Job version where the
 * source keeps them (plugin_memo_get), shared by every pod as by every container (never
 * edited in place). @return new reference, NULL on ENOMEM.
 */
static json_t *svc_parts(const struct plugin_ctx *c, const struct svc_args *a)
{
    json_t *parts = plugin_memo_get(c);
    char *cm;

    if (parts != NULL)
        return parts;
    cm = objects_name(c->job, "-svc");
    parts = cm != NULL ? json_array() : NULL;
    if (parts == NULL
        || json_array_append_new(parts,
                                 a->inject_hosts_env ? svc_env_refs(c->job, cm) : json_array())
            < 0
        || json_array_append_new(
               parts,
               podutil_object("name", json_string(cm), "configMap",
                              podutil_object("name", json_string(cm), NULL, NULL)))
            < 0
        || json_array_append_new(
               parts,
               podutil_object("name", json_string(cm), "mountPath", json_string(SVC_MOUNT_PATH)))
            < 0) {
        json_decref(parts);
        free(cm);
        return NULL;
    }
    free(cm);
    return plugin_memo_keep(c, parts);
}

static int svc_on_pod_create(const struct plugin_ctx *c, struct pod_edits *pod,
                             struct wh_error *err)
{
    struct svc_args a;
    const char *job = job_name(c->job);
    json_t *parts = NULL;
    json_t *env;
    json_t *volume;
    int rc;

    svc_args_parse(c, &a);
    if (!pod_edits_has_spec(pod))
        return wh_error_set(err, WH_EINVAL, "pod has no spec object");
    rc = svc_set_names(c, pod, job, err);
    if (rc < 0)
        return rc;
    parts = svc_parts(c, &a);
    if (parts == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    env = json_array_get(parts, SVC_ENV);
    volume = json_array_get(parts, SVC_VOLUME);
    rc = svc_env_list(c, pod, PV_CONTAINERS, env, err);
    if (rc < 0)
        goto out;
    rc = svc_env_list(c, pod, PV_INIT_CONTAINERS, env, err);
    if (rc < 0)
        goto out;
    rc = pod_edits_upsert_volume(pod, json_incref(volume), err);
    if (rc == WH_ECONFLICT)
        goto out; /* D5: the user's volume, err says whose */
    if (rc < 0) {
        rc = wh_error_set(err, rc, "cannot add volume %s: %s", podutil_str(volume, "name"),
                          rc == WH_ENOMEM ? "out of memory" : "malformed pod spec");
        goto out;
    }
    rc = svc_mount_list(pod, PV_CONTAINERS, json_array_get(parts, SVC_MOUNT), err);
    if (rc < 0)
        goto out;
    rc = svc_mount_list(pod, PV_INIT_CONTAINERS, json_array_get(parts, SVC_MOUNT), err);
out:
    json_decref(parts);
    return rc < 0 ? rc : 0;
}

/* ---- job hooks (reconcile side) ---- */

/* {"volcano.sh/job-name": J, "volcano.sh/job-namespace": NS}: new reference. */
static json_t *svc_job_labels(const json_t *job)
{
    return json_pack("{s:s, s:s}", "volcano.sh/job-name", job_name(job), "volcano.sh/job-namespace",
                     job_namespace(job));
}

/* ConfigMap J-svc (docs/plugins.md §4.2 OnJobAdd step 1) into *out.
 * @return 0, WH_ENOMEM or WH_ETOOBIG (svc_configmap_data). */
static int svc_configmap(const json_t *job, const char *cm, json_t **out)
{
    json_t *data = NULL;
    int rc = svc_configmap_data(job, &data);

    if (rc < 0)
        return rc;
    *out = objects_for_job_with(&objects_kind_configmap, job, cm, "data", data);
    return *out != NULL ? 0 : WH_ENOMEM;
}

/* The headless Service J (docs/plugins.md §4.2 step 2): no ports, no type. */
static json_t *svc_service(const json_t *job, bool publish_not_ready)
{
    return objects_for_job_with(&objects_kind_service, job, job_name(job), "spec",
                                json_pack("{s:s, s:o, s:b}", "clusterIP", "None", "selector",
                                          svc_job_labels(job), "publishNotReadyAddresses",
                                          publish_not_ready));
}

/* NetworkPolicy J (docs/plugins.md §4.2 step 3): ingress only from pods of the same Job. */
static json_t *svc_network_policy(const json_t *job)
{
    return objects_for_job_with(&objects_kind_networkpolicy, job, job_name(job), "spec",
                                json_pack("{s:{s:o}, s:[{s:[{s:{s:o}}]}], s:[s]}", "podSelector",
                                          "matchLabels", svc_job_labels(job), "ingress", "from",
                                          "podSelector", "matchLabels", svc_job_labels(job),
                                          "policyTypes", "Ingress"));
}

/* Update function of the ConfigMap: replace data only when it differs. */
static int svc_configmap_update(json_t *obj, void *ud, struct wh_error *err)
{
    const json_t *want = ud;
    const json_t *have = json_member(obj, "data");

    /* the API server drops an empty data map: absent equals {} */
    if (json_equal(have, want) || (have == NULL && json_object_size(want) == 0))
        return 0;
    if (json_object_set_new(obj, "data", json_deep_copy(want)) < 0)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    return 1;
}

/* OnJobAdd and OnJobUpdate (D10: both recompute and repair). */
static int svc_job_sync(const struct plugin_ctx *c, struct wh_error *err)
{
    struct svc_args a;
    struct objects_owner_ctx o;
    char *cm_name = NULL;
    json_t *cm = NULL;
    json_t *svc = NULL;
    json_t *np = NULL;
    int rc;

    svc_args_parse(c, &a);
    rc = objects_owner_init(&o, c, err);
    if (rc < 0)
        return rc;
    cm_name = objects_name(c->job, "-svc");
    if (cm_name == NULL)
        goto nomem;
    rc = svc_configmap(c->job, cm_name, &cm);
    if (rc == WH_ETOOBIG) {
        /* A ConfigMap holds at most 1 MiB: retried, in case the Job is scaled down. */
        rc = wh_error_set(err, WH_ETOOBIG,
                          "a task's host list is over %u bytes, "
                          "too large for ConfigMap %s",
                          JOB_HOSTS_MAX_BYTES, cm_name);
        goto out;
    }
    svc = svc_service(c->job, a.publish_not_ready);
    np = a.disable_netpol ? NULL : svc_network_policy(c->job);
    if (cm == NULL || svc == NULL || (np == NULL && !a.disable_netpol))
        goto nomem;
    {
        const struct objects_ensure_spec s = {.kind = &objects_kind_configmap,
                                              .name = cm_name,
                                              .desired = cm,
                                              .update = svc_configmap_update,
                                              .ud = json_member(cm, "data")};

        rc = objects_ensure(&o, &s, NULL, err);
        if (rc < 0)
            goto out;
    }
    {
        const struct objects_ensure_spec s = {.kind = &objects_kind_service,
                                              .name = job_name(c->job),
                                              .desired = svc}; /* never updated */

        rc = objects_ensure(&o, &s, NULL, err);
        if (rc < 0)
            goto out;
    }
    if (np != NULL) { /* unless --disable-network-policy */
        const struct objects_ensure_spec s = {
            .kind = &objects_kind_networkpolicy, .name = job_name(c->job), .desired = np};

        rc = objects_ensure(&o, &s, NULL, err);
        if (rc < 0)
            goto out;
    }
    rc = 0; /* a foreign object (WH_DECLINED) is no failure of the hook (D12) */
    goto out;
nomem:
    rc = wh_error_set(err, WH_ENOMEM, "out of memory");
out:
    json_decref(cm);
    json_decref(svc);
    json_decref(np);
    free(cm_name);
    return rc;
}

/* OnJobDelete: our ConfigMap, Service and (unless disabled) NetworkPolicy. */
static int svc_job_delete(const struct plugin_ctx *c, struct wh_error *err)
{
    struct svc_args a;
    struct objects_owner_ctx o;
    struct wh_error e = {0};
    char *cm_name;
    int first = 0;
    int rc;

    svc_args_parse(c, &a);
    rc = objects_owner_init(&o, c, err);
    if (rc < 0)
        return rc;
    cm_name = objects_name(c->job, "-svc");
    if (cm_name == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    rc = objects_delete(&o, &objects_kind_configmap, cm_name, &e);
    if (rc < 0 && first == 0)
        first = wh_error_set(err, rc, "%s", e.msg);
    rc = objects_delete(&o, &objects_kind_service, job_name(c->job), &e);
    if (rc < 0 && first == 0)
        first = wh_error_set(err, rc, "%s", e.msg);
    if (!a.disable_netpol) {
        rc = objects_delete(&o, &objects_kind_networkpolicy, job_name(c->job), &e);
        if (rc < 0 && first == 0)
            first = wh_error_set(err, rc, "%s", e.msg);
    }
    free(cm_name);
    if (first == 0)
        wh_error_clear(err);
    return first;
}

/* ---- Job-level diagnostics (plugins/diagnose.h) ---- */

/*
 * The names svc writes into pods (docs/plugins.md §4.2 steps 1, 2, 4) as the API server
 * validates them (D15): subdomain J unless the template sets one, hostname
 * J-T-i for the largest i unless the template sets one, volume J-svc.
 */
static void svc_diagnose_names(const json_t *job, struct diagnostics *out)
{
    const char *J = job_name(job);
    const char *why_job = k8s_name_label_error(J);
    bool job_reported = false;
    size_t k;
    const json_t *task;

    json_array_each(job_tasks(job), k, task) {
        const char *T = job_task_name(task);
        const char *hostname = job_task_hostname(task);
        const char *subdomain = job_task_subdomain(task);
        long long last = (long long)job_task_replicas(task) - 1;
        const char *why;

        if (subdomain[0] != '\0') {
            why = k8s_name_label_error(subdomain);
            if (why != NULL)
                diagnose_add(out, DIAGNOSE_NAME_INVALID, true, "svc",
                             "spec.tasks[%zu].template.spec.subdomain \"%s\" cannot be a pod "
                             "subdomain (%s): change it",
                             k, subdomain, why);
        } else if (why_job != NULL && !job_reported) {
            diagnose_add(out, DIAGNOSE_NAME_INVALID, true, "svc",
                         "job name \"%s\" cannot be a pod subdomain (%s): rename the job", J,
                         why_job);
            job_reported = true;
        }
        if (hostname[0] != '\0') {
            why = k8s_name_label_error(hostname);
            if (why != NULL)
                diagnose_add(out, DIAGNOSE_NAME_INVALID, true, "svc",
                             "spec.tasks[%zu].template.spec.hostname \"%s\" cannot be a pod "
                             "hostname (%s): change it",
                             k, hostname, why);
        } else if (last >= 0 && strchr(J, '.') == NULL) {
            /* The pod name J-T-i of the last replica: the longest of the task. */
            size_t len = strlen(J) + strlen(T) + 2 + diagnose_digits(last);
            size_t fixed = strlen(T) + 2 + diagnose_digits(last);

            if (len > K8S_LABEL_MAX && fixed < K8S_LABEL_MAX)
                diagnose_add(out, DIAGNOSE_NAME_INVALID, true, "svc",
                             "pod hostname \"%s-%s-%lld\" has %zu characters, more than the 63 of "
                             "a DNS-1123 label: shorten the job name to at most %zu characters, "
                             "or the name of task %s",
                             J, T, last, len, K8S_LABEL_MAX - fixed, T);
            else if (len > K8S_LABEL_MAX)
                diagnose_add(out, DIAGNOSE_NAME_INVALID, true, "svc",
                             "pod hostname \"%s-%s-%lld\" has %zu characters, more than the 63 of "
                             "a DNS-1123 label: shorten the name of task %s and the job name",
                             J, T, last, len, T);
        }
    }
    /* Volume J-svc: a label, so the Job name has at most 59 characters. */
    if (why_job == NULL && strlen(J) + 4 > K8S_LABEL_MAX && json_array_size(job_tasks(job)) > 0)
        diagnose_add(out, DIAGNOSE_NAME_INVALID, true, "svc",
                     "volume name \"%s-svc\" has %zu characters, more than the 63 of a DNS-1123 "
                     "label: shorten the job name to at most 59 characters",
                     J, strlen(J) + 4);
}

/*
 * ConfigMap J-svc (its data at most 1 MiB, keys included) and, with
 * --inject-hosts-env, each VC_UP(T)_HOSTS value (one environment string of at
 * most 128 KiB once the kubelet resolves it), computed without building them.
 * @return 0 or WH_ENOMEM.
 */
static int svc_diagnose_sizes(const json_t *job, const struct svc_args *a, struct diagnostics *out)
{
    const char *J = job_name(job);
    unsigned long long total = 0;
    size_t k;
    const json_t *task;

    json_array_each(job_tasks(job), k, task) {
        const char *T = job_task_name(task);
        unsigned long long count = 0;
        unsigned long long list = diagnose_hosts_bytes(job, task, true, 0, &count);
        /* "T.host", "VC_T_HOSTS", "VC_T_NUM" and their values (docs/plugins.md §4.2). */
        unsigned long long env = strlen("VC__HOSTS=") + strlen(T) + list + 1;
        char *up = task_key(T, true);

        total += strlen(T) + 5 + list + strlen(T) + 9 + list + strlen(T) + 7
            + diagnose_digits((long long)count);
        if (up == NULL)
            return WH_ENOMEM;
        if (a->inject_hosts_env && env > DIAGNOSE_ENV_MAX)
            diagnose_add(out, DIAGNOSE_VALUE_TOO_LARGE, true, "svc",
                         "env VC_%s_HOSTS would be %llu bytes, more than the 131072 (128 KiB) one "
                         "environment string can hold (the kernel's MAX_ARG_STRLEN), so no "
                         "container starts: pass --inject-hosts-env=false in spec.plugins.svc and "
                         "read the host files in /etc/volcano, or run fewer %s replicas",
                         up, env, T);
        else if (a->inject_hosts_env
                 && env * 100 >= (unsigned long long)DIAGNOSE_ENV_MAX * DIAGNOSE_NEAR_PERCENT)
            diagnose_add(out, DIAGNOSE_VALUE_NEAR_LIMIT, false, "svc",
                         "env VC_%s_HOSTS is %llu bytes, %llu%% of the 131072 (128 KiB) one "
                         "environment string can hold: with more %s replicas no container starts; "
                         "consider --inject-hosts-env=false in spec.plugins.svc",
                         up, env, env * 100 / DIAGNOSE_ENV_MAX, T);
        free(up);
    }
    if (total > DIAGNOSE_OBJECT_MAX)
        diagnose_add(out, DIAGNOSE_VALUE_TOO_LARGE, true, "svc",
                     "ConfigMap %s-svc would hold %llu bytes of host lists, more than the 1048576 "
                     "(1 MiB) a ConfigMap can hold, so it cannot be created and no pod starts: run "
                     "fewer replicas (spec.tasks[].replicas)",
                     J, total);
    else if (total * 100 >= (unsigned long long)DIAGNOSE_OBJECT_MAX * DIAGNOSE_NEAR_PERCENT)
        diagnose_add(out, DIAGNOSE_VALUE_NEAR_LIMIT, false, "svc",
                     "ConfigMap %s-svc holds %llu bytes of host lists, %llu%% of the 1048576 "
                     "(1 MiB) a ConfigMap can hold: with more replicas it cannot be updated",
                     J, total, total * 100 / DIAGNOSE_OBJECT_MAX);
    return 0;
}

static int svc_diagnose(const struct plugin_ctx *c, struct diagnostics *out)
{
    struct svc_args a;
    char cm[320];
    size_t k;
    const json_t *task;

    svc_args_parse(c, &a);
    svc_diagnose_names(c->job, out);
    if (svc_diagnose_sizes(c->job, &a, out) < 0)
        return WH_ENOMEM;
    snprintf(cm, sizeof(cm), "%s-svc", job_name(c->job));
    json_array_each(job_tasks(c->job), k, task)
        diagnose_template_conflicts(out, "svc", task, k, cm, "configMap", "name", SVC_MOUNT_PATH,
                                    "its host files");
    return 0;
}

const struct plugin plugin_svc = {
    .name = "svc",
    .on_pod_create = svc_on_pod_create,
    .on_job_add = svc_job_sync,
    .on_job_update = svc_job_sync, /* recompute the ConfigMap, re-create what is missing */
    .on_job_delete = svc_job_delete,
    .diagnose = svc_diagnose,
};
