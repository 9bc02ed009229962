/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hcclrank.c - the `hcclrank` plugin, pod side (docs/plugins.md §4.8, §8 #26, D4, D5, D7).
 *
 * Writes the pod annotation `hccl/rankIndex` unless it is already non-empty:
 * the literal value of the first env entry named RANK in the containers (not
 * init containers) when that is non-empty (registry order runs pytorch first,
 * D2, so its RANK is seen); else, for master/worker pods only, the task
 * index from the label volcano.sh/task-index (master: index; worker: master
 * replicas + index). A missing or non-numeric label is an error (docs/plugins.md §3.8).
 * The JSON-Patch path escaping of the key is the patch builder's job.
 *
 * Threads: no state; arguments are parsed per call (plugins/plugin.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/jsonobj.h"
#include "plugins/args.h"
#include "plugins/diagnose.h"
#include "plugins/job.h"
#include "plugins/plugin.h"
#include "plugins/podedit.h"
#include "plugins/podutil.h"

#define HCCL_KEY       PLUGIN_HCCL_RANK_KEY
#define HCCL_INDEX_KEY "volcano.sh/task-index"

struct hccl_args {
    const char *master; /* master task name */
    const char *worker; /* worker task name */
};

/* Defaults, then the Job's arguments (plugin_args: a parse error is one warning, D4). */
static void hccl_args_parse(const struct plugin_ctx *c, struct hccl_args *a)
{
    const struct args_def defs[] = {
        {"master", ARGS_STRING, &a->master},
        {"worker", ARGS_STRING, &a->worker},
    };

    a->master = "master";
    a->worker = "worker";
    plugin_args(c, defs, sizeof(defs) / sizeof(defs[0]));
}

/*
 * Literal value of the first env entry named RANK over all containers, in order, into
 * *rank (malloc'd); "" when there is none or it has no literal value (valueFrom).
 * @return 0, or WH_ENOMEM.
 */
static int hccl_env_rank(const struct pod_edits *pod, char **rank)
{
    for (size_t i = 0; i < pod_edits_count(pod, PV_CONTAINERS); i++) {
        int rc = pod_edits_env_value(pod, (struct pe_ref){PV_CONTAINERS, i}, "RANK", rank);

        if (rc < 0 || *rank != NULL)
            return rc;
    }
    *rank = strdup("");
    return *rank != NULL ? 0 : WH_ENOMEM;
}

/* Set metadata.annotations[hccl/rankIndex], creating metadata/annotations when absent. */
static int hccl_set_annotation(struct pod_edits *pod, const char *value, struct wh_error *err)
{
    int rc = pod_edits_set_hccl_rank(pod, value);

    if (rc < 0)
        return wh_error_set(err, rc, "cannot set annotation %s: %s", HCCL_KEY,
                            rc == WH_ENOMEM ? "out of memory" : "malformed pod metadata");
    return 0;
}

static int hccl_on_pod_create(const struct plugin_ctx *c, struct pod_edits *pod,
                              struct wh_error *err)
{
    struct hccl_args a;
    const char *task = c->pod != NULL ? c->pod->task : "default";
    const char *pod_name = c->pod != NULL ? c->pod->name : "";
    const struct pv_value *label = &pod->view->label_task_index;
    char have[2];
    char *label_text;
    char *rank;
    int rc;
    int64_t index;
    int64_t value;
    char buf[24];

    hccl_args_parse(c, &a);
    /* docs/plugins.md §4.8 step 1: an existing non-empty annotation wins; no Job, no change. */
    if (pod_edits_hccl_rank(pod, have, sizeof(have))[0] != '\0' || c->job == NULL)
        return 0;
    /* Step 2: a literal RANK (pytorch's, or the user's) is copied as is. */
    if (hccl_env_rank(pod, &rank) < 0)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    if (rank[0] != '\0') {
        rc = hccl_set_annotation(pod, rank, err);
        free(rank);
        return rc;
    }
    free(rank);
    /* Step 3: only master and worker pods get a computed rank. */
    if (strcmp(task, a.master) != 0 && strcmp(task, a.worker) != 0)
        return 0;
    /* Step 4: the index comes from the label, not the pod name. */
    if (label->kind != JSONR_STRING)
        return wh_error_set(err, WH_EINVAL, "pod %s has no %s label", pod_name, HCCL_INDEX_KEY);
    /* json_string_value's text: up to a NUL */
    label_text = strndup(label->s, label->n);
    if (label_text == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    if (job_parse_index(label_text, &index) < 0) {
        rc = wh_error_set(err, WH_EINVAL, "%s label \"%s\" of pod %s is not a number",
                          HCCL_INDEX_KEY, label_text, pod_name);
        free(label_text);
        return rc;
    }
    free(label_text);
    /* Step 5; Go's int arithmetic wraps, so does this, without undefined behaviour. */
    if (strcmp(task, a.master) == 0)
        value = index;
    else
        value = (int64_t)((uint64_t)job_replicas_of(c->job, a.master) + (uint64_t)index);
    snprintf(buf, sizeof(buf), "%lld", (long long)value);
    return hccl_set_annotation(pod, buf, err);
}

/*
 * Job level (plugins/diagnose.h). The plugin's own ranks are unique (masters by
 * index, workers after them), but it copies pytorch's RANK first (docs/plugins.md §4.8 step
 * 2), and pytorch gives every master replica 0.
 */
static int hccl_diagnose(const struct plugin_ctx *c, struct diagnostics *out)
{
    struct hccl_args a;
    const json_t *master;

    hccl_args_parse(c, &a);
    master = job_find_task(c->job, a.master);
    if (master == NULL && job_find_task(c->job, a.worker) == NULL)
        diagnose_add(out, DIAGNOSE_TASK_NOT_FOUND, false, "hcclrank",
                     "no task named \"%s\" (--master) or \"%s\" (--worker), so no pod gets "
                     "hccl/rankIndex unless it has a RANK: name the tasks with --master and "
                     "--worker in spec.plugins.hcclrank",
                     a.master, a.worker);
    if (master != NULL && job_task_replicas(master) > 1
        && diagnose_plugin_enabled(c->job, "pytorch"))
        diagnose_add(out, DIAGNOSE_RANK_NOT_UNIQUE, false, "hcclrank",
                     "task %s has %lld replicas, and the plugin copies pytorch's RANK, which is 0 "
                     "on every master replica, so their hccl/rankIndex collide: give the master "
                     "task 1 replica",
                     a.master, (long long)job_task_replicas(master));
    return 0;
}

const struct plugin plugin_hcclrank = {
    .name = "hcclrank",
    .on_pod_create = hccl_on_pod_create,
    /* No Kubernetes objects (docs/plugins.md §5.2) and no Job writes (D9): no job hooks. */
    .on_job_add = NULL,
    .on_job_update = NULL,
    .on_job_delete = NULL,
    .diagnose = hccl_diagnose,
};
