/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pytorch.c - the `pytorch` plugin, pod side (docs/plugins.md §4.4, §8 #5, #21, #22, D4, D5, D13).
 *
 * When the Job has a master task, every container (not init containers) of every
 * pod gets the port `pytorchjob-port` (unless a port already has that number)
 * and env MASTER_ADDR, MASTER_PORT, WORLD_SIZE and, for master/worker pods, RANK
 * (master replicas 0, worker index+1). With --wait-master-enabled a worker pod
 * also gets the `wait-for-master` init container. Every edit is an upsert (D5):
 * a user's RANK is replaced in place with a warning, an existing init container
 * of that name is left alone. The framework runs the chain again for the added
 * init container (D13), so the other plugins' additions reach it too.
 *
 * Threads: no state; arguments are parsed per call (plugins/plugin.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonobj.h"
#include "plugins/args.h"
#include "plugins/diagnose.h"
#include "plugins/job.h"
#include "plugins/plugin.h"
#include "plugins/podedit.h"
#include "plugins/podutil.h"

#define PT_PORT_NAME "pytorchjob-port"
#define PT_WAIT_NAME "wait-for-master"

/*
 * The wait container's script (docs/plugins.md §4.4 step 6), LF-separated, no trailing
 * newline. Arguments: addr, port, timeout, addr, port, addr, port.
 */
#define PT_WAIT_SCRIPT_FMT                                                                         \
    "echo \"Waiting for master node %s:%lld to be ready...\"\n"                                    \
    "TIMEOUT=%lld\n"                                                                               \
    "ELAPSED=0\n"                                                                                  \
    "until { nc -z %s %lld || echo > /dev/tcp/%s/%lld; } 2>/dev/null; do\n"                        \
    "  if [ $ELAPSED -ge $TIMEOUT ]; then\n"                                                       \
    "    echo \"Timeout waiting for master after ${TIMEOUT} seconds\"\n"                           \
    "    exit 1\n"                                                                                 \
    "  fi\n"                                                                                       \
    "  echo \"Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)\"\n"           \
    "  sleep 2\n"                                                                                  \
    "  ELAPSED=$((ELAPSED + 2))\n"                                                                 \
    "done\n"                                                                                       \
    "echo \"Master node is ready!\""

struct pt_args {
    const char *master;     /* master task name */
    const char *worker;     /* worker task name */
    int64_t port;           /* MASTER_PORT; containerPort narrowed to 32 bits */
    bool wait_enabled;      /* wait-master-enabled */
    int64_t wait_timeout;   /* wait-master-timeout, seconds */
    const char *wait_image; /* wait-master-image */
};

/* Defaults, then the Job's arguments (plugin_args: a parse error is one warning, D4). */
static void pt_args_parse(const struct plugin_ctx *c, struct pt_args *a)
{
    const struct args_def defs[] = {
        {"master", ARGS_STRING, &a->master},
        {"worker", ARGS_STRING, &a->worker},
        {"port", ARGS_INT, &a->port},
        {"wait-master-enabled", ARGS_BOOL, &a->wait_enabled},
        {"wait-master-timeout", ARGS_INT, &a->wait_timeout},
        {"wait-master-image", ARGS_STRING, &a->wait_image},
    };

    a->master = "master";
    a->worker = "worker";
    a->port = 23456;
    a->wait_enabled = false;
    a->wait_timeout = 300;
    a->wait_image = "busybox:1.36.1";
    plugin_args(c, defs, sizeof(defs) / sizeof(defs[0]));
}

/* docs/plugins.md §4.4 step 3: replicas of every task named master or worker, in array order. */
static int64_t pt_world_size(const json_t *job, const struct pt_args *a)
{
    int64_t total = 0;
    size_t i;
    const json_t *task;

    json_array_each(job_tasks(job), i, task) {
        const char *name = job_task_name(task);

        if (strcmp(name, a->master) == 0 || strcmp(name, a->worker) == 0)
            total = (int64_t)((uint64_t)total + (uint64_t)job_task_replicas(task));
    }
    return total;
}

/* @return new reference: the wait-for-master init container, NULL on ENOMEM. */
static json_t *pt_wait_container(const struct pt_args *a, const char *addr)
{
    long long port = (long long)a->port;
    long long timeout = (long long)a->wait_timeout;
    int n = snprintf(NULL, 0, PT_WAIT_SCRIPT_FMT, addr, port, timeout, addr, port, addr, port);
    char *script;
    json_t *ctr;

    if (n < 0)
        return NULL;
    script = malloc((size_t)n + 1);
    if (script == NULL)
        return NULL;
    snprintf(script, (size_t)n + 1, PT_WAIT_SCRIPT_FMT, addr, port, timeout, addr, port, addr,
             port);
    ctr = json_pack("{s:s, s:s, s:[s, s, s]}", "name", PT_WAIT_NAME, "image", a->wait_image,
                    "command", "sh", "-c", script);
    free(script);
    return ctr;
}

/* What pt_parts holds, by place. */
enum { PT_ADDR, PT_PORT, PT_ENV_ADDR, PT_ENV_PORT, PT_ENV_SIZE };

/*
 * [MASTER_ADDR's value, the port, env MASTER_ADDR, MASTER_PORT, WORLD_SIZE] of the Job's
 * pods (docs/plugins.md §4.4 steps 2-5; the Job's alone: its tasks and arguments), made
 * once per thread and Job version where the source keeps them (plugin_memo_get), shared by
 * every pod and container (never edited in place). @return new reference, NULL on ENOMEM.
 */
static json_t *pt_parts(const struct plugin_ctx *c, const struct pt_args *a, const json_t *master)
{
    char *addr;
    char port[24];
    char size[24];
    json_t *parts;

    parts = plugin_memo_get(c);
    if (parts != NULL)
        return parts;
    addr = job_task_domain(c->job, master, 0);
    parts = addr != NULL ? json_array() : NULL;
    snprintf(port, sizeof(port), "%lld", (long long)a->port);
    snprintf(size, sizeof(size), "%lld", (long long)pt_world_size(c->job, a));
    /* docs/plugins.md §3.4 rule 10: the port is narrowed to 32 bits without checks. */
    if (parts == NULL || json_array_append_new(parts, json_string(addr)) < 0
        || json_array_append_new(parts,
                                 podutil_object("name", json_string(PT_PORT_NAME), "containerPort",
                                                json_integer((json_int_t)(int32_t)a->port)))
            < 0
        || json_array_append_new(parts, podutil_env_value("MASTER_ADDR", addr)) < 0
        || json_array_append_new(parts, podutil_env_value("MASTER_PORT", port)) < 0
        || json_array_append_new(parts, podutil_env_value("WORLD_SIZE", size)) < 0) {
        json_decref(parts);
        free(addr);
        return NULL;
    }
    free(addr);
    return plugin_memo_keep(c, parts);
}

/*
 * The env entries MASTER_ADDR, MASTER_PORT, WORLD_SIZE[, RANK] (docs/plugins.md §4.4
 * step 5) of one pod: pt_parts' and the pod's rank, placed in every container by
 * reference (podutil_upsert_envs). @return new array, NULL on ENOMEM.
 */
static json_t *pt_envs(const json_t *parts, const char *rank)
{
    json_t *envs = json_array();

    if (envs == NULL || json_array_append(envs, json_array_get(parts, PT_ENV_ADDR)) < 0
        || json_array_append(envs, json_array_get(parts, PT_ENV_PORT)) < 0
        || json_array_append(envs, json_array_get(parts, PT_ENV_SIZE)) < 0
        || (rank != NULL && json_array_append_new(envs, podutil_env_value("RANK", rank)) < 0)) {
        json_decref(envs);
        return NULL;
    }
    return envs;
}

/* Port, then the env entries of pt_envs (docs/plugins.md §4.4 step 5). */
static int pt_edit_container(const struct plugin_ctx *c, struct pod_edits *pod, struct pe_ref ctr,
                             const json_t *parts, const json_t *envs)
{
    int rc = pod_edits_add_port(pod, ctr, json_incref(json_array_get(parts, PT_PORT)), "pytorch",
                                c->warnings);

    if (rc >= 0)
        rc = pod_edits_upsert_envs(pod, ctr, envs, NULL, c->name, c->warnings);
    return rc;
}

static int pt_on_pod_create(const struct plugin_ctx *c, struct pod_edits *pod, struct wh_error *err)
{
    struct pt_args a;
    const char *task = c->pod != NULL ? c->pod->task : "default";
    const char *index_str = c->pod != NULL ? c->pod->index : "";
    const char *pod_name = c->pod != NULL ? c->pod->name : "";
    const json_t *master;
    const char *addr;
    json_t *parts;
    json_t *envs = NULL;
    char rank_buf[24];
    const char *rank = NULL;
    int rc = 0;

    pt_args_parse(c, &a);
    master = job_find_task(c->job, a.master);
    if (master == NULL)
        return 0; /* docs/plugins.md §4.4 step 1: no master task, no change, no error */
    parts = pt_parts(c, &a, master);
    if (parts == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    addr = json_string_value(json_array_get(parts, PT_ADDR));

    if (strcmp(task, a.worker) == 0) {
        int64_t index;

        if (job_parse_index(index_str, &index) < 0) {
            rc = wh_error_set(err, WH_EINVAL, "pod index \"%s\" of pod %s is not a number",
                              index_str, pod_name[0] != '\0' ? pod_name : "(generateName)");
            goto out;
        }
        /* Go's int arithmetic wraps; so does this, without undefined behaviour. */
        snprintf(rank_buf, sizeof(rank_buf), "%lld", (long long)(int64_t)((uint64_t)index + 1));
        rank = rank_buf;
        if (a.wait_enabled) {
            rc = pod_edits_add_init_container(pod, pt_wait_container(&a, addr));
            if (rc < 0) {
                rc = wh_error_set(err, rc, "cannot add init container %s: %s", PT_WAIT_NAME,
                                  rc == WH_ENOMEM ? "out of memory" : "malformed pod spec");
                goto out;
            }
        }
    } else if (strcmp(task, a.master) == 0) {
        rank = "0"; /* every master replica, whatever its index */
    }

    envs = pt_envs(parts, rank);
    if (envs == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < pod_edits_count(pod, PV_CONTAINERS); i++) {
        rc = pt_edit_container(c, pod, (struct pe_ref){PV_CONTAINERS, i}, parts, envs);
        if (rc < 0) {
            rc = wh_error_set(err, rc, "cannot edit spec.containers[%zu]: %s", i,
                              rc == WH_ENOMEM ? "out of memory" : "malformed container");
            goto out;
        }
    }
    rc = 0;
out:
    json_decref(envs);
    json_decref(parts);
    return rc;
}

/* Job level (plugins/diagnose.h): missing tasks, ranks that collide, the port, names. */
static int pt_diagnose(const struct plugin_ctx *c, struct diagnostics *out)
{
    static const char *const env_names[] = {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"};
    struct pt_args a;
    const json_t *master;
    const json_t *worker;
    size_t k;
    const json_t *task;

    pt_args_parse(c, &a);
    master = job_find_task(c->job, a.master);
    worker = job_find_task(c->job, a.worker);
    if (master == NULL)
        diagnose_add(out, DIAGNOSE_TASK_NOT_FOUND, false, "pytorch",
                     "no task named \"%s\" (--master), so no pod gets MASTER_ADDR, MASTER_PORT, "
                     "WORLD_SIZE or RANK: name the master task with --master in "
                     "spec.plugins.pytorch, or rename the task",
                     a.master);
    if (worker == NULL)
        diagnose_add(out, DIAGNOSE_TASK_NOT_FOUND, false, "pytorch",
                     "no task named \"%s\" (--worker), so WORLD_SIZE counts only the master "
                     "replicas and no pod gets a RANK above 0: name the worker task with --worker "
                     "in spec.plugins.pytorch, or rename the task",
                     a.worker);
    if (master == NULL)
        return 0; /* docs/plugins.md §4.4 step 1: the plugin does nothing else */
    if (job_task_replicas(master) > 1)
        diagnose_add(out, DIAGNOSE_RANK_NOT_UNIQUE, false, "pytorch",
                     "task %s has %lld replicas and every master replica gets RANK 0, so the ranks "
                     "collide and the training waits forever: give the master task 1 replica and "
                     "put the others in the worker task",
                     a.master, (long long)job_task_replicas(master));
    diagnose_port_arg(out, "pytorch", "port", (long long)a.port, true);
    json_array_each(job_tasks(c->job), k, task) {
        const json_t *ctr;
        size_t i;

        for (size_t n = 0; n < sizeof(env_names) / sizeof(env_names[0]); n++)
            diagnose_env_replaced(out, "pytorch", task, k, "containers", env_names[n]);
        if (!a.wait_enabled || strcmp(job_task_name(task), a.worker) != 0)
            continue;
        /* The added init container would share its name with a container (D5, D15). */
        json_array_each(diagnose_task_containers(task, "containers"), i, ctr) {
            if (strcmp(podutil_str(ctr, "name"), PT_WAIT_NAME) == 0)
                diagnose_add(out, DIAGNOSE_CONFLICT, true, "pytorch",
                             "container \"%s\" of task %s has the name of the init container "
                             "--wait-master-enabled adds, and the API server refuses two "
                             "containers of one name: rename the container in "
                             "spec.tasks[%zu].template",
                             PT_WAIT_NAME, job_task_name(task), k);
        }
    }
    return 0;
}

const struct plugin plugin_pytorch = {
    .name = "pytorch",
    .on_pod_create = pt_on_pod_create,
    /* No Kubernetes objects (docs/plugins.md §5.2) and no Job writes (D9): no job hooks. */
    .on_job_add = NULL,
    .on_job_update = NULL,
    .on_job_delete = NULL,
    .diagnose = pt_diagnose,
};
