/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpi.c - the `mpi` plugin, pod side (docs/plugins.md §4.6, D4, D5).
 *
 * Pods of the master task (--master, default "master") get the literal env
 * MPI_HOST = the worker task's host list joined with "," (docs/plugins.md §3.6: one entry
 * when the worker template sets a hostname, "" for 0 replicas); a master pod
 * of a Job without the worker task is left entirely alone. Every pod gets the
 * port {"name": "mpijob-port", "containerPort": --port} in every init
 * container, then every container, unless that container already declares the
 * number (any name); a port name taken by another number is not added and
 * podutil warns (D5). Per container: port first, then MPI_HOST, as Volcano.
 *
 * Threads: no state; arguments are parsed per call (plugins/plugin.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonobj.h"
#include "plugins/args.h"
#include "plugins/diagnose.h"
#include "plugins/job.h"
#include "plugins/plugin.h"
#include "plugins/podedit.h"
#include "plugins/podutil.h"

#define MPI_PORT_NAME "mpijob-port"

struct mpi_args {
    const char *master; /* master task name */
    const char *worker; /* worker task name */
    int64_t port;       /* declared container port */
};

/* Defaults, then the Job's arguments (plugin_args: a parse error is one warning, D4). */
static void mpi_args_parse(const struct plugin_ctx *c, struct mpi_args *a)
{
    const struct args_def defs[] = {
        {"master", ARGS_STRING, &a->master},
        {"worker", ARGS_STRING, &a->worker},
        {"port", ARGS_INT, &a->port},
    };

    a->master = "master";
    a->worker = "worker";
    a->port = 22;
    plugin_args(c, defs, sizeof(defs) / sizeof(defs[0]));
}

/* Port, then MPI_HOST when mpi_host != NULL (a JSON string shared by every container),
 * on each container of list. */
static int mpi_edit_list(const struct plugin_ctx *c, struct pod_edits *pod,
                         enum pv_container_list list, int32_t port, json_t *mpi_host,
                         struct wh_error *err)
{
    const char *list_name = podview_list_names[list];
    int rc;

    for (size_t i = 0; i < pod_edits_count(pod, list); i++) {
        struct pe_ref ctr = {list, i};

        rc = pod_edits_add_port(pod, ctr,
                                podutil_object("name", json_string(MPI_PORT_NAME), "containerPort",
                                               json_integer((json_int_t)(int)port)),
                                "mpi", c->warnings);
        if (rc < 0)
            return wh_error_set(err, rc, "cannot add port %d to spec.%s[%zu]: %s", (int)port,
                                list_name, i,
                                rc == WH_ENOMEM ? "out of memory" : "malformed container");
        if (mpi_host == NULL)
            continue;
        rc = pod_edits_upsert_env(pod, ctr, podutil_env_shared("MPI_HOST", mpi_host), c->name,
                                  c->warnings);
        if (rc < 0)
            return wh_error_set(err, rc, "cannot set env MPI_HOST in spec.%s[%zu]: %s", list_name,
                                i, rc == WH_ENOMEM ? "out of memory" : "malformed container");
    }
    return 0;
}

static int mpi_on_pod_create(const struct plugin_ctx *c, struct pod_edits *pod,
                             struct wh_error *err)
{
    struct mpi_args a;
    const char *task = c->pod != NULL && c->pod->task != NULL ? c->pod->task : "default";
    char *mpi_host = NULL;
    json_t *host_value = NULL;
    /* docs/plugins.md §3.4 rule 10: narrowed to 32 bits without checks (two's complement wrap). */
    int32_t port;
    int rc;

    mpi_args_parse(c, &a);
    port = (int32_t)(uint32_t)(uint64_t)a.port;
    if (strcmp(task, a.master) == 0) {
        const json_t *worker = job_find_task(c->job, a.worker);

        if (worker == NULL)
            return 0; /* docs/plugins.md §4.6: a master without workers gets nothing at all */
        rc = job_task_hosts(&mpi_host, c->job, worker, ",", NULL);
        if (rc == WH_ETOOBIG)
            return wh_error_set(err, rc, "MPI_HOST of task %s would exceed %u bytes", a.worker,
                                JOB_HOSTS_MAX_BYTES);
        if (rc < 0)
            return wh_error_set(err, rc, "out of memory");
    }
    if (mpi_host != NULL) {
        host_value = json_string(mpi_host);
        free(mpi_host);
        if (host_value == NULL)
            return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    rc = mpi_edit_list(c, pod, PV_INIT_CONTAINERS, port, host_value, err);
    if (rc == 0)
        rc = mpi_edit_list(c, pod, PV_CONTAINERS, port, host_value, err);
    json_decref(host_value);
    return rc;
}

/* Job level (plugins/diagnose.h): missing tasks, MPI_HOST's size, the port. */
static int mpi_diagnose(const struct plugin_ctx *c, struct diagnostics *out)
{
    struct mpi_args a;
    const json_t *master;
    const json_t *worker;
    size_t k;
    const json_t *task;

    mpi_args_parse(c, &a);
    master = job_find_task(c->job, a.master);
    worker = job_find_task(c->job, a.worker);
    if (master == NULL)
        diagnose_add(out, DIAGNOSE_TASK_NOT_FOUND, false, "mpi",
                     "no task named \"%s\" (--master), so no pod gets MPI_HOST: name the launcher "
                     "task with --master in spec.plugins.mpi, or rename the task",
                     a.master);
    if (worker == NULL)
        diagnose_add(out, DIAGNOSE_TASK_NOT_FOUND, false, "mpi",
                     "no task named \"%s\" (--worker), so the master pods get neither MPI_HOST nor "
                     "the port %s: name the worker task with --worker in spec.plugins.mpi, or "
                     "rename the task",
                     a.worker, MPI_PORT_NAME);
    diagnose_port_arg(out, "mpi", "port", (long long)a.port, true);
    if (master != NULL && worker != NULL) {
        unsigned long long env =
            strlen("MPI_HOST=") + diagnose_hosts_bytes(c->job, worker, true, 0, NULL) + 1;

        if (env > DIAGNOSE_ENV_MAX)
            diagnose_add(out, DIAGNOSE_VALUE_TOO_LARGE, true, "mpi",
                         "MPI_HOST would be %llu bytes, more than the 131072 (128 KiB) one "
                         "environment string can hold (the kernel's MAX_ARG_STRLEN), so the master "
                         "cannot start: run fewer %s replicas and read /etc/volcano/%s.host",
                         env, a.worker, a.worker);
        json_array_each(job_tasks(c->job), k, task) {
            if (strcmp(job_task_name(task), a.master) != 0)
                continue;
            diagnose_env_replaced(out, "mpi", task, k, "containers", "MPI_HOST");
            diagnose_env_replaced(out, "mpi", task, k, "initContainers", "MPI_HOST");
        }
    }
    return 0;
}

const struct plugin plugin_mpi = {
    .name = "mpi",
    .on_pod_create = mpi_on_pod_create,
    /* No Kubernetes objects (docs/plugins.md §5.2) and no Job writes (D9): no job hooks. */
    .on_job_add = NULL,
    .on_job_update = NULL,
    .on_job_delete = NULL,
    .diagnose = mpi_diagnose,
};
