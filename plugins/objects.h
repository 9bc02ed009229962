/* SPDX-License-Identifier: Apache-2.0 */
/*
 * objects.h - the auxiliary objects a Volcano Job owns (docs/plugins.md §5.2): their
 * owner reference, and "ensure" / "delete" over the REST client with the rules
 * of decisions D9-D12.
 *
 *   ensure  GET → absent: POST the desired object (409 AlreadyExists: GET again
 *           and go on with what is there) → owned by a previous incarnation of
 *           the Job (an ownerReference to a batch.volcano.sh/v1alpha1 Job of the
 *           same name and another uid): WH_ECONFLICT, to be retried once garbage
 *           collection has removed it → present but not owned by the Job's uid
 *           otherwise: leave it, log one line, count it, WH_DECLINED (D12) →
 *           owned: let an update function edit a copy; when it reports a change,
 *           PUT with the stored resourceVersion (409 Conflict: GET again and
 *           retry, at most OBJECTS_CONFLICT_RETRIES times).
 *   delete  GET → absent: done → a previous incarnation's: done (garbage
 *           collection's) → not owned: leave it (D12), WH_DECLINED → owned:
 *           DELETE with preconditions.uid = the uid read (404: done; 409
 *           Conflict: replaced meanwhile, not ours, done).
 * The Job itself is never written (D9).
 *
 * Threads: no state of its own; every call may run on any thread (the client
 * is shared, see k8s/client.h). The foreign counter is bumped atomically.
 */
#ifndef WH_OBJECTS_H
#define WH_OBJECTS_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"
#include "base/metric.h"
#include "k8s/client.h"

#define OBJECTS_CONFLICT_RETRIES   3      /* PUTs after a 409 Conflict, beyond the first */
#define OBJECTS_DEFAULT_TIMEOUT_MS 10000L /* request limit of a job hook given no env */

struct plugin_ctx;

/* A namespaced kind the reconcile side writes (docs/plugins.md §5.2). */
struct objects_kind {
    const char *group;    /* API group, "" for core */
    const char *version;  /* "v1" */
    const char *resource; /* plural, for the REST path */
    const char *kind;     /* "ConfigMap", for bodies and log lines */
};

extern const struct objects_kind objects_kind_configmap; /* v1 ConfigMap */
extern const struct objects_kind objects_kind_secret;    /* v1 Secret */
extern const struct objects_kind objects_kind_service;   /* v1 Service */
extern const struct objects_kind
    objects_kind_networkpolicy; /* networking.k8s.io/v1 NetworkPolicy */

/* Who writes, for whom: every member borrowed for the duration of one call. */
struct objects_owner_ctx {
    struct k8s_client *kc;  /* the API client */
    long timeout_ms;        /* limit of each request */
    unsigned long *foreign; /* D12 counter, incremented atomically; may be NULL */
    const json_t *job;      /* the owning Volcano Job (metadata.name/namespace/uid) */
};

/**
 * The controller owner reference of docs/plugins.md §2.2 for job:
 * {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": J,
 *  "uid": UID, "controller": true, "blockOwnerDeletion": true}.
 * @param job borrowed Job; metadata.name / metadata.uid read ("" when absent)
 * @return new reference, NULL on ENOMEM.
 */
json_t *objects_owner_ref(const json_t *job);

/**
 * The skeleton of an object owned by job (docs/plugins.md §5.2: namespace = the Job's, no
 * labels, no annotations):
 * {"apiVersion": ..., "kind": ..., "metadata": {"name": name, "namespace": NS,
 *  "ownerReferences": [objects_owner_ref(job)]}}; the caller adds spec/data.
 * @return new reference, NULL on ENOMEM.
 */
json_t *objects_for_job(const struct objects_kind *kind, const json_t *job, const char *name);

/**
 * objects_for_job(kind, job, name) with obj[key] = value_new: the whole object
 * to create, its "spec" or "data" included.
 * @param value_new  stolen, also on failure (as json_object_set_new); NULL fails
 * @return new reference, NULL on ENOMEM.
 */
json_t *objects_for_job_with(const struct objects_kind *kind, const json_t *job, const char *name,
                             const char *key, json_t *value_new);

/**
 * The name of an object of job: metadata.name followed by suffix ("J-ssh",
 * "J-svc", "J-head-svc"; docs/plugins.md §5.2).
 * @return malloc'd string for the caller to free, NULL on ENOMEM.
 */
char *objects_name(const json_t *job, const char *suffix);

/** @return true when obj.metadata.ownerReferences has an entry whose uid equals uid (D12). */
bool objects_owned_by(const json_t *obj, const char *uid);

/**
 * The owner context of one job hook call (plugins/plugin.h): c's API client and
 * Job, and c->env's request limit and D12 counter (OBJECTS_DEFAULT_TIMEOUT_MS and
 * no counter when c->env is NULL). Every member of *out is borrowed from c.
 * @return 0; WH_EINVAL with err "job hook called without an API client" when
 *         c->kc is NULL (the admission path has none).
 */
int objects_owner_init(struct objects_owner_ctx *out, const struct plugin_ctx *c,
                       struct wh_error *err) WH_WARN_UNUSED;

/**
 * Update function for objects_ensure: edit obj (a writable deep copy of the
 * stored object, resourceVersion included) to the wanted state.
 * @return 1 when obj was changed and must be PUT, 0 to leave the stored object
 *         as is, < 0 with err filled to fail the ensure.
 */
typedef int (*objects_update_fn)(json_t *obj, void *ud, struct wh_error *err);

/**
 * Builder for objects_ensure: make the object to create. Called only when
 * the object is absent (so costly content, e.g. an ssh key, is made only then).
 * @param[out] out new reference to the full object (apiVersion/kind/metadata/...)
 * @return 0, or < 0 with err filled.
 */
typedef int (*objects_build_fn)(void *ud, json_t **out, struct wh_error *err);

/* What to ensure. */
struct objects_ensure_spec {
    const struct objects_kind *kind;
    const char *name;         /* object name; the namespace is the Job's */
    const json_t *desired;    /* object to create when absent (borrowed), or NULL → build */
    objects_build_fn build;   /* used when desired is NULL */
    objects_update_fn update; /* NULL: never updated (create if absent only) */
    void *ud;                 /* passed to build and update */
};

/**
 * Ensure one object of the Job (see the file comment; docs/plugins.md §5.2, D9, D12).
 * A foreign object is logged as
 * `reconcile: <Kind> NS/name exists and is not owned by job NS/J (uid UID), left alone`.
 * @param[out] out  new reference to the object as stored when it is ours
 *                  (after any create/update); NULL allowed; left NULL otherwise
 * @return 0 (exists, created or updated, ours); WH_DECLINED (foreign, left
 *         alone, counted); < 0 with err = "<verb> <Kind> NS/name: <cause>"
 *         (WH_ECONFLICT after the retries, or with cause "owned by a previous
 *         incarnation of job NS/J (uid OLD), waiting for its garbage collection";
 *         or the client's code).
 */
int objects_ensure(const struct objects_owner_ctx *o, const struct objects_ensure_spec *s,
                   json_t **out, struct wh_error *err) WH_WARN_UNUSED;

/**
 * Delete one object of the Job, only when it is ours (D12); 404 anywhere = done.
 * The DELETE body is {"kind":"DeleteOptions","apiVersion":"v1","preconditions":
 * {"uid": <uid of the object read>},"propagationPolicy":"Background"}; its 409
 * Conflict (the object was replaced since the GET) counts as done.
 * @return 0 (deleted, absent, replaced meanwhile, or a previous incarnation's
 *         left to garbage collection); WH_DECLINED (foreign, left alone, logged
 *         and counted as in objects_ensure); < 0 with err filled.
 */
int objects_delete(const struct objects_owner_ctx *o, const struct objects_kind *kind,
                   const char *name, struct wh_error *err) WH_WARN_UNUSED;

/* Ensure and delete operations by kind and result; webhook/metrics.c exposes them as
 * webhook_reconcile_operations_total. Kinds outside the list count as "other". */
#define OBJECTS_METRIC_KINDS 5
extern const char *const objects_metric_kinds[OBJECTS_METRIC_KINDS];
/* [kind][0 ensure, 1 delete][0 error, 1 ok]; a foreign object left alone is ok (D12). */
extern struct metric_counter objects_ops[OBJECTS_METRIC_KINDS][2][2];

/** Count one operation: kind "ConfigMap", ...; op "ensure" or "delete". Thread-safe. */
void objects_count_op(const char *kind, const char *op, bool ok);

#endif
