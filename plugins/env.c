/* SPDX-License-Identifier: Apache-2.0 */
/*
 * env.c - the `env` plugin, pod side (docs/plugins.md §4.1, D5).
 *
 * Gives every container, then every init container, the literal env entries
 * VK_TASK_INDEX and VC_TASK_INDEX (in that order) holding the pod's index
 * string, which the framework computed (docs/plugins.md §2.1, D6). The plugin defines no
 * flags and, as in Volcano, never parses its argument array: arguments are
 * ignored without a warning. Both entries are upserts (D5): the same value is a
 * no-op, another value is replaced in place with a warning naming it.
 *
 * Threads: no state; the hook is reentrant (plugins/plugin.h).
 */
#include <stddef.h>

#include "base/jsonobj.h"
#include "plugins/diagnose.h"
#include "plugins/job.h"
#include "plugins/plugin.h"
#include "plugins/podedit.h"
#include "plugins/podutil.h"

static const char *const env_names[] = {"VK_TASK_INDEX", "VC_TASK_INDEX"};

/* Upsert both index variables (envs) into each container of list. */
static int env_upsert_list(const struct plugin_ctx *c, struct pod_edits *pod,
                           enum pv_container_list list, const json_t *envs, struct wh_error *err)
{
    const char *list_name = podview_list_names[list];

    for (size_t i = 0; i < pod_edits_count(pod, list); i++) {
        size_t k = 0;
        int rc =
            pod_edits_upsert_envs(pod, (struct pe_ref){list, i}, envs, &k, c->name, c->warnings);

        if (rc < 0)
            return wh_error_set(err, rc, "cannot set env %s in spec.%s[%zu]: %s", env_names[k],
                                list_name, i,
                                rc == WH_ENOMEM ? "out of memory" : "malformed container");
    }
    return 0;
}

static int env_on_pod_create(const struct plugin_ctx *c, struct pod_edits *pod,
                             struct wh_error *err)
{
    const char *index = c->pod != NULL && c->pod->index != NULL ? c->pod->index : "";
    /* made once per pod, placed in every container by reference (podutil_upsert_envs) */
    json_t *envs = json_array();
    int rc;

    for (size_t k = 0; envs != NULL && k < sizeof(env_names) / sizeof(env_names[0]); k++) {
        if (json_array_append_new(envs, podutil_env_value(env_names[k], index)) < 0) {
            json_decref(envs);
            envs = NULL;
        }
    }
    if (envs == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    rc = env_upsert_list(c, pod, PV_CONTAINERS, envs, err);
    if (rc >= 0)
        rc = env_upsert_list(c, pod, PV_INIT_CONTAINERS, envs, err);
    json_decref(envs);
    return rc;
}

/* Job level (plugins/diagnose.h): a template's own index variables are replaced (D5). */
static int env_diagnose(const struct plugin_ctx *c, struct diagnostics *out)
{
    size_t k;
    const json_t *task;

    json_array_each(job_tasks(c->job), k, task) {
        for (size_t n = 0; n < sizeof(env_names) / sizeof(env_names[0]); n++) {
            diagnose_env_replaced(out, "env", task, k, "containers", env_names[n]);
            diagnose_env_replaced(out, "env", task, k, "initContainers", env_names[n]);
        }
    }
    return 0;
}

const struct plugin plugin_env = {
    .name = "env",
    .on_pod_create = env_on_pod_create,
    /* No Kubernetes objects (docs/plugins.md §5.2) and no Job writes (D9): no job hooks. */
    .on_job_add = NULL,
    .on_job_update = NULL,
    .on_job_delete = NULL,
    .diagnose = env_diagnose,
};
