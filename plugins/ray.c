/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ray.c - the `ray` plugin, pod side (docs/plugins.md §4.7, §8 #1, #27, D4, D5, D7).
 *
 * Without a task named --head every pod of the Job is denied (docs/plugins.md §3.8). In a
 * head pod, the container named --headContainer gets the ports gcs, dashboard
 * and client-server (each only when its number is free) and its `command`
 * replaced by `ray start --head ...`; in a worker pod, the container named
 * --workerContainer gets `ray start --block --address=<head-0 domain>:<port>`.
 * `args`, other containers and init containers are never touched. Setting an
 * identical command is a no-op (D5); replacing the container's own command, and
 * args that sh -c then ignores, each give a warning naming them (D5, D16).
 *
 * Flag names are camelCase; --clientServerPort is accepted as an alias of
 * --clientPort (D4), since the public guide documents that name.
 *
 * Job hooks (docs/plugins.md §4.7, §5.2, D9-D12): the ClusterIP Service J-head-svc
 * (selector job-name, job-namespace, task-spec = --head; ports gcs, dashboard,
 * client-server with named target ports). add and update create it when absent
 * (update thus re-creates it after a deletion, D10), never update it; delete
 * removes it when it is ours (D12).
 *
 * Threads: no state; arguments are parsed per call (plugins/plugin.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonobj.h"
#include "base/sanitize.h"
#include "plugins/args.h"
#include "plugins/diagnose.h"
#include "plugins/job.h"
#include "plugins/objects.h"
#include "plugins/plugin.h"
#include "plugins/podedit.h"
#include "plugins/podutil.h"

#define RAY_HEAD_CMD_FMT                                                                           \
    "ray start --head --block --dashboard-host=0.0.0.0 --port=%lld --dashboard-port=%lld "         \
    "--ray-client-server-port=%lld"
#define RAY_WORKER_CMD_FMT "ray start --block --address=%s:%lld"

struct ray_args {
    const char *head;             /* head task name */
    const char *head_container;   /* container edited in head pods */
    const char *worker;           /* worker task name */
    const char *worker_container; /* container edited in worker pods */
    int64_t port;                 /* GCS port */
    int64_t dashboard_port;
    int64_t client_port; /* Ray client server port */
};

/* Defaults, then the Job's arguments (plugin_args: a parse error is one warning, D4). */
static void ray_args_parse(const struct plugin_ctx *c, struct ray_args *a)
{
    const struct args_def defs[] = {
        {"head", ARGS_STRING, &a->head},
        {"headContainer", ARGS_STRING, &a->head_container},
        {"worker", ARGS_STRING, &a->worker},
        {"workerContainer", ARGS_STRING, &a->worker_container},
        {"port", ARGS_INT, &a->port},
        {"dashboardPort", ARGS_INT, &a->dashboard_port},
        {"clientPort", ARGS_INT, &a->client_port},
        {"clientServerPort", ARGS_INT, &a->client_port}, /* D4 alias */
    };

    a->head = "head";
    a->head_container = "head";
    a->worker = "worker";
    a->worker_container = "worker";
    a->port = 6379;
    a->dashboard_port = 8265;
    a->client_port = 10001;
    plugin_args(c, defs, sizeof(defs) / sizeof(defs[0]));
}

/* docs/plugins.md §3.4 rule 10: containerPort is the flag value narrowed to 32 bits. */
static int ray_add_port(const struct plugin_ctx *c, struct pod_edits *pod, struct pe_ref ctr,
                        const char *name, int64_t port)
{
    json_t *p = podutil_object("name", json_string(name), "containerPort",
                               json_integer((json_int_t)(int32_t)port));

    return pod_edits_add_port(pod, ctr, p, "ray", c->warnings);
}

/* A command or args list for a warning: compact JSON, cut to PODUTIL_SHOWN_MAX bytes. */
static const char *ray_shown(char *buf, size_t len, const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

    sanitize_copy(buf, len, text != NULL ? text : "?", PODUTIL_SHOWN_MAX,
                  SANITIZE_CONTROLS | SANITIZE_ELLIPSIS);
    free(text);
    return buf;
}

/*
 * Replace ctr.command with ["sh", "-c", line] unless it is already exactly that.
 * The container's own command, and args that sh -c then ignores (they become $0,
 * $1, ...), are told in c->warnings (D5, D16).
 */
static int ray_set_command(const struct plugin_ctx *c, struct pod_edits *pod, struct pe_ref ctr,
                           const char *ctr_name, const char *line)
{
    json_t *old = pod_edits_container_member(pod, ctr, "command");
    json_t *args = pod_edits_container_member(pod, ctr, "args");
    json_t *command = json_pack("[s, s, s]", "sh", "-c", line);
    char name[PODUTIL_SHOWN_MAX + 8];
    char was[PODUTIL_SHOWN_MAX + 8];
    char now[PODUTIL_SHOWN_MAX + 8];
    int rc = pod_edits_set_container(pod, ctr, "command", json_incref(command));

    if (rc == PODUTIL_UPSERT_REPLACED || rc == PODUTIL_UPSERT_ADDED)
        podutil_shown(name, sizeof(name), ctr_name);
    if (rc == PODUTIL_UPSERT_REPLACED)
        warnings_add(c->warnings,
                     "%s plugin: container %s command %s replaced by %s: run your program in "
                     "another container",
                     c->name, name, ray_shown(was, sizeof(was), old),
                     ray_shown(now, sizeof(now), command));
    if ((rc == PODUTIL_UPSERT_REPLACED || rc == PODUTIL_UPSERT_ADDED) && json_is_array(args)
        && json_array_size(args) > 0)
        warnings_add(c->warnings,
                     "%s plugin: container %s args %s are ignored by the new command (sh -c "
                     "\"ray start ...\"): drop them from the pod template",
                     c->name, name, ray_shown(was, sizeof(was), args));
    json_decref(command);
    json_decref(args);
    json_decref(old);
    return rc;
}

static int ray_edit_head(const struct plugin_ctx *c, struct pod_edits *pod, struct pe_ref ctr,
                         const char *ctr_name, const struct ray_args *a)
{
    char line[256];
    int rc;

    rc = ray_add_port(c, pod, ctr, "gcs", a->port);
    if (rc >= 0)
        rc = ray_add_port(c, pod, ctr, "dashboard", a->dashboard_port);
    if (rc >= 0)
        rc = ray_add_port(c, pod, ctr, "client-server", a->client_port);
    if (rc < 0)
        return rc;
    snprintf(line, sizeof(line), RAY_HEAD_CMD_FMT, (long long)a->port, (long long)a->dashboard_port,
             (long long)a->client_port);
    return ray_set_command(c, pod, ctr, ctr_name, line);
}

static int ray_edit_worker(const struct plugin_ctx *c, struct pod_edits *pod, struct pe_ref ctr,
                           const char *ctr_name, const struct ray_args *a, const char *head_addr)
{
    int n = snprintf(NULL, 0, RAY_WORKER_CMD_FMT, head_addr, (long long)a->port);
    char *line;
    int rc;

    if (n < 0)
        return WH_ENOMEM;
    line = malloc((size_t)n + 1);
    if (line == NULL)
        return WH_ENOMEM;
    snprintf(line, (size_t)n + 1, RAY_WORKER_CMD_FMT, head_addr, (long long)a->port);
    rc = ray_set_command(c, pod, ctr, ctr_name, line);
    free(line);
    return rc;
}

static int ray_on_pod_create(const struct plugin_ctx *c, struct pod_edits *pod,
                             struct wh_error *err)
{
    struct ray_args a;
    const char *task = c->pod != NULL ? c->pod->task : "default";
    const json_t *head;
    char *head_addr = NULL;
    int rc = 0;

    ray_args_parse(c, &a);
    head = job_find_task(c->job, a.head);
    if (head == NULL)
        return wh_error_set(err, WH_EINVAL, "job %s doesn't have head task %s", job_name(c->job),
                            a.head);
    head_addr = job_task_domain(c->job, head, 0);
    if (head_addr == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");

    /* Both checks per container, as Volcano does (head == worker task is possible). */
    for (size_t i = 0; i < pod_edits_count(pod, PV_CONTAINERS); i++) {
        struct pe_ref ctr = {PV_CONTAINERS, i};
        char *name = pod_edits_container_name(pod, ctr);

        if (name == NULL) {
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
            goto out;
        }
        if (strcmp(task, a.head) == 0 && strcmp(name, a.head_container) == 0)
            rc = ray_edit_head(c, pod, ctr, name, &a);
        if (rc >= 0 && strcmp(task, a.worker) == 0 && strcmp(name, a.worker_container) == 0)
            rc = ray_edit_worker(c, pod, ctr, name, &a, head_addr);
        if (rc < 0) {
            rc = wh_error_set(err, rc, "cannot edit spec.containers[%zu] (%s): %s", i, name,
                              rc == WH_ENOMEM ? "out of memory" : "malformed container");
            free(name);
            goto out;
        }
        free(name);
    }
    rc = 0;
out:
    free(head_addr);
    return rc;
}

/* ---- job hooks (reconcile side) ---- */

/* The head Service of docs/plugins.md §4.7 (ports narrowed to 32 bits as in the pod: §3.4). */
static json_t *ray_head_service(const json_t *job, const char *name, const struct ray_args *a)
{
    json_t *spec = json_pack(
        "{s:{s:s, s:s, s:s}, s:[{s:s, s:I, s:s, s:s}, {s:s, s:I, s:s, s:s}, {s:s, s:I, s:s, s:s}]}",
        "selector", "volcano.sh/job-name", job_name(job), "volcano.sh/job-namespace",
        job_namespace(job), "volcano.sh/task-spec", a->head, "ports", "name", "gcs", "port",
        (json_int_t)(int32_t)a->port, "targetPort", "gcs", "protocol", "TCP", "name", "dashboard",
        "port", (json_int_t)(int32_t)a->dashboard_port, "targetPort", "dashboard", "protocol",
        "TCP", "name", "client-server", "port", (json_int_t)(int32_t)a->client_port, "targetPort",
        "client-server", "protocol", "TCP");

    return objects_for_job_with(&objects_kind_service, job, name, "spec", spec);
}

/* OnJobAdd and OnJobUpdate: the head Service exists (created if absent, D10). */
static int ray_job_sync(const struct plugin_ctx *c, struct wh_error *err)
{
    struct ray_args a;
    struct objects_owner_ctx o;
    char *name;
    json_t *svc = NULL;
    int rc;

    ray_args_parse(c, &a);
    rc = objects_owner_init(&o, c, err);
    if (rc < 0)
        return rc;
    name = objects_name(c->job, "-head-svc");
    if (name != NULL)
        svc = ray_head_service(c->job, name, &a);
    if (svc == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
    } else {
        const struct objects_ensure_spec s = {
            .kind = &objects_kind_service, .name = name, .desired = svc}; /* never updated */

        rc = objects_ensure(&o, &s, NULL, err);
        if (rc > 0)
            rc = 0; /* foreign (D12): left alone, the pods still get their mutation */
    }
    json_decref(svc);
    free(name);
    return rc;
}

/* OnJobDelete: our head Service (404 = done). */
static int ray_job_delete(const struct plugin_ctx *c, struct wh_error *err)
{
    struct objects_owner_ctx o;
    char *name;
    int rc;

    rc = objects_owner_init(&o, c, err);
    if (rc < 0)
        return rc;
    name = objects_name(c->job, "-head-svc");
    if (name == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    rc = objects_delete(&o, &objects_kind_service, name, err);
    free(name);
    return rc > 0 ? 0 : rc;
}

/* ---- Job-level diagnostics (plugins/diagnose.h) ---- */

/* "a, b" of the container names of a template (for a message), cut to fit. */
static void ray_container_names(const json_t *task, char *buf, size_t len)
{
    size_t off = 0;
    size_t i;
    const json_t *ctr;

    buf[0] = '\0';
    json_array_each(diagnose_task_containers(task, "containers"), i, ctr) {
        int n =
            snprintf(buf + off, len - off, "%s%s", off > 0 ? ", " : "", podutil_str(ctr, "name"));

        if (n < 0 || (size_t)n >= len - off)
            break;
        off += (size_t)n;
    }
}

/* The container a role edits (docs/plugins.md §4.7 step 2): there, what it loses, its ports. */
static void ray_diagnose_container(const json_t *task, size_t k, const char *role, const char *flag,
                                   const char *container, const struct ray_args *a,
                                   struct diagnostics *out)
{
    static const char *const port_names[] = {"gcs", "dashboard", "client-server"};
    static const char *const port_flags[] = {"port", "dashboardPort", "clientPort"};
    const int64_t ports[] = {a->port, a->dashboard_port, a->client_port};
    const json_t *found = NULL;
    char names[160];
    size_t i;
    const json_t *ctr;

    json_array_each(diagnose_task_containers(task, "containers"), i, ctr)
        if (found == NULL && strcmp(podutil_str(ctr, "name"), container) == 0)
            found = ctr;
    if (found == NULL) {
        ray_container_names(task, names, sizeof(names));
        diagnose_add(out, DIAGNOSE_CONTAINER_NOT_FOUND, false, "ray",
                     "task %s has no container named \"%s\" (%s), so none gets \"ray "
                     "start\"%s: rename one, or pass %s=NAME in spec.plugins.ray (containers: "
                     "%s)",
                     job_task_name(task), container, flag,
                     strcmp(role, "head") == 0 ? " or the ports gcs, dashboard, client-server" : "",
                     flag, names[0] != '\0' ? names : "none");
        return;
    }
    if (json_member(found, "command") != NULL || json_member(found, "args") != NULL)
        diagnose_add(out, DIAGNOSE_USER_VALUE_REPLACED, false, "ray",
                     "container \"%s\" of task %s has its own command or args, and the plugin "
                     "replaces the command with \"sh -c 'ray start ...'\" (sh then ignores the "
                     "args): drop them from spec.tasks[%zu].template",
                     container, job_task_name(task), k);
    if (strcmp(role, "head") != 0)
        return;
    /* A number declared under another name: the port is not added, and J-head-svc
     * targets it by name (D16). */
    json_array_each(json_member(found, "ports"), i, ctr) {
        json_int_t number = json_integer_value(json_member(ctr, "containerPort"));

        for (size_t p = 0; p < 3; p++) {
            if (number != (json_int_t)(int32_t)ports[p]
                || strcmp(podutil_str(ctr, "name"), port_names[p]) == 0)
                continue;
            diagnose_add(out, DIAGNOSE_CONFLICT, false, "ray",
                         "container \"%s\" of task %s declares port %lld as \"%s\", so the plugin "
                         "does not add \"%s\" and the Service's port %s has no endpoints: name "
                         "the port \"%s\" in spec.tasks[%zu].template",
                         container, job_task_name(task), (long long)number,
                         podutil_str(ctr, "name"), port_names[p], port_names[p], port_names[p], k);
        }
    }
    /* The name under another number: the port is not added either (port names are unique
     * per container), and J-head-svc's port of that name forwards where ray does not
     * listen. Keyed as the chain's own warning of it (podutil_add_port), so a head pod
     * that gets that one does not get this too (webhook/mutate.c). */
    json_array_each(json_member(found, "ports"), i, ctr) {
        json_int_t number = json_integer_value(json_member(ctr, "containerPort"));
        char key[DIAGNOSE_KEY_MAX];

        for (size_t p = 0; p < 3; p++) {
            if (strcmp(podutil_str(ctr, "name"), port_names[p]) != 0
                || number == (json_int_t)(int32_t)ports[p])
                continue;
            podutil_port_key(key, sizeof(key), "ray", container, port_names[p]);
            diagnose_add_keyed(
                out, key, DIAGNOSE_CONFLICT, false, "ray",
                "port name %s already used by port %lld in container %s, port %lld not "
                "added; the head Service sends %s to %lld, where ray does not listen: "
                "make it %lld in spec.tasks[%zu].template or pass --%s=%lld",
                port_names[p], (long long)number, container, (long long)(int32_t)ports[p],
                port_names[p], (long long)number, (long long)(int32_t)ports[p], k, port_flags[p],
                (long long)number);
        }
    }
}

static int ray_diagnose(const struct plugin_ctx *c, struct diagnostics *out)
{
    struct ray_args a;
    const json_t *head;
    const json_t *worker;
    size_t k;
    const json_t *task;

    ray_args_parse(c, &a);
    head = job_find_task(c->job, a.head);
    worker = job_find_task(c->job, a.worker);
    if (head == NULL)
        diagnose_add(out, DIAGNOSE_TASK_NOT_FOUND, true, "ray",
                     "no task named \"%s\" (--head), so every pod of the job is denied: name the "
                     "head task with --head in spec.plugins.ray, or rename the task",
                     a.head);
    if (worker == NULL)
        diagnose_add(out, DIAGNOSE_TASK_NOT_FOUND, false, "ray",
                     "no task named \"%s\" (--worker), so no pod joins the head with \"ray start "
                     "--address\": name the worker task with --worker in spec.plugins.ray, or "
                     "rename the task",
                     a.worker);
    diagnose_port_arg(out, "ray", "port", (long long)a.port, true);
    diagnose_port_arg(out, "ray", "dashboardPort", (long long)a.dashboard_port, true);
    diagnose_port_arg(out, "ray", "clientPort", (long long)a.client_port, true);
    json_array_each(job_tasks(c->job), k, task) {
        /* The first task of each name is the one the plugin uses (docs/plugins.md §3.6). */
        if (task == head)
            ray_diagnose_container(task, k, "head", "--headContainer", a.head_container, &a, out);
        if (task == worker)
            ray_diagnose_container(task, k, "worker", "--workerContainer", a.worker_container, &a,
                                   out);
    }
    return 0;
}

const struct plugin plugin_ray = {
    .name = "ray",
    .on_pod_create = ray_on_pod_create,
    .on_job_add = ray_job_sync,
    .on_job_update = ray_job_sync, /* re-creates the Service when it went missing */
    .on_job_delete = ray_job_delete,
    .diagnose = ray_diagnose,
};
