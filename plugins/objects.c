/* SPDX-License-Identifier: Apache-2.0 */
/*
 * objects.c - owner references and ensure/delete of a Job's auxiliary objects
 * (objects.h; docs/plugins.md §2.2, §5.2, D9-D12).
 *
 * Design: every operation starts from a GET, so the cluster is the only state
 * (D9: no markers in the Job). Ownership is "an ownerReference with the Job's
 * uid", whatever its other fields say. A Job recreated under the same name has a
 * new uid; its predecessor's leftovers (an ownerReference to a Volcano Job of the
 * same name and another uid) are neither ours nor foreign (D12): garbage
 * collection is about to remove them, so ensure fails with WH_ECONFLICT (the
 * reconciler retries with backoff and creates the object once they are gone) and
 * delete leaves them to the collector. A DELETE carries the uid just read as a
 * precondition, so an object re-created between the GET and the DELETE is kept.
 *
 * Threads: stateless; safe from any thread. The D12 counter is shared between
 * reconcile workers, hence the atomic increment.
 */
#include "plugins/objects.h"

#include <stdlib.h>
#include <string.h>

#include "base/jsonobj.h"
#include "base/log.h"
#include "plugins/plugin.h"

#define JOB_API_VERSION   "batch.volcano.sh/v1alpha1"
#define ENSURE_MAX_ROUNDS (OBJECTS_CONFLICT_RETRIES + 3) /* + create race + first GET */

const struct objects_kind objects_kind_configmap = {"", "v1", "configmaps", "ConfigMap"};
const struct objects_kind objects_kind_secret = {"", "v1", "secrets", "Secret"};
const struct objects_kind objects_kind_service = {"", "v1", "services", "Service"};
const struct objects_kind objects_kind_networkpolicy = {"networking.k8s.io", "v1",
                                                        "networkpolicies", "NetworkPolicy"};

/* metadata.<key> of obj as a string, "" when absent. */
const char *const objects_metric_kinds[OBJECTS_METRIC_KINDS] = {"ConfigMap", "Secret", "Service",
                                                                "NetworkPolicy", "other"};
struct metric_counter objects_ops[OBJECTS_METRIC_KINDS][2][2];

void objects_count_op(const char *kind, const char *op, bool ok)
{
    size_t k = OBJECTS_METRIC_KINDS - 1;

    for (size_t i = 0; i + 1 < OBJECTS_METRIC_KINDS; i++)
        if (strcmp(objects_metric_kinds[i], kind) == 0)
            k = i;
    metric_counter_add(&objects_ops[k][strcmp(op, "delete") == 0 ? 1 : 0][ok ? 1 : 0], 1);
}

static const char *meta_str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_member(json_member(obj, "metadata"), key));

    return s != NULL ? s : "";
}

json_t *objects_owner_ref(const json_t *job)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "apiVersion", JOB_API_VERSION, "kind", "Job",
                     "name", meta_str(job, "name"), "uid", meta_str(job, "uid"), "controller", 1,
                     "blockOwnerDeletion", 1);
}

json_t *objects_for_job(const struct objects_kind *kind, const json_t *job, const char *name)
{
    json_t *ref = objects_owner_ref(job);
    json_t *api_version;

    if (ref == NULL)
        return NULL;
    if (kind->group[0] == '\0')
        api_version = json_string(kind->version);
    else
        api_version = json_sprintf("%s/%s", kind->group, kind->version);
    /* "o" steals: ref and api_version are consumed even when json_pack fails. */
    return json_pack("{s:o, s:s, s:{s:s, s:s, s:[o]}}", "apiVersion", api_version, "kind",
                     kind->kind, "metadata", "name", name, "namespace", meta_str(job, "namespace"),
                     "ownerReferences", ref);
}

json_t *objects_for_job_with(const struct objects_kind *kind, const json_t *job, const char *name,
                             const char *key, json_t *value_new)
{
    json_t *obj = objects_for_job(kind, job, name);

    if (obj == NULL || value_new == NULL || json_object_set_new(obj, key, value_new) < 0) {
        if (obj == NULL)
            json_decref(value_new);
        json_decref(obj);
        return NULL;
    }
    return obj;
}

char *objects_name(const json_t *job, const char *suffix)
{
    const char *name = meta_str(job, "name");
    size_t n = strlen(name);
    size_t m = strlen(suffix);
    char *out = malloc(n + m + 1);

    if (out != NULL) {
        memcpy(out, name, n);
        memcpy(out + n, suffix, m + 1);
    }
    return out;
}

int objects_owner_init(struct objects_owner_ctx *out, const struct plugin_ctx *c,
                       struct wh_error *err)
{
    if (c->kc == NULL)
        return wh_error_set(err, WH_EINVAL, "job hook called without an API client");
    out->kc = c->kc;
    out->timeout_ms = c->env != NULL ? c->env->timeout_ms : OBJECTS_DEFAULT_TIMEOUT_MS;
    out->foreign = c->env != NULL ? c->env->foreign : NULL;
    out->job = c->job;
    return 0;
}

bool objects_owned_by(const json_t *obj, const char *uid)
{
    const json_t *refs = json_member(json_member(obj, "metadata"), "ownerReferences");
    const json_t *ref;
    size_t i;

    if (uid == NULL || uid[0] == '\0')
        return false;
    json_array_foreach(refs, i, ref) {
        const char *u = json_string_value(json_member(ref, "uid"));

        if (u != NULL && strcmp(u, uid) == 0)
            return true;
    }
    return false;
}

/*
 * The uid of an ownerReference of obj naming a Volcano Job called job_name whose
 * uid is not job_uid: a previous incarnation of the Job (deleted, then created
 * again under its name), whose dependents the garbage collector is about to
 * remove. @return that uid (borrowed from obj), or NULL when there is none.
 */
static const char *previous_incarnation(const json_t *obj, const char *job_name,
                                        const char *job_uid)
{
    const json_t *refs = json_member(json_member(obj, "metadata"), "ownerReferences");
    const json_t *ref;
    size_t i;

    json_array_foreach(refs, i, ref) {
        const char *av = json_string_value(json_member(ref, "apiVersion"));
        const char *kind = json_string_value(json_member(ref, "kind"));
        const char *name = json_string_value(json_member(ref, "name"));
        const char *uid = json_string_value(json_member(ref, "uid"));

        if (av != NULL && kind != NULL && name != NULL && uid != NULL
            && strcmp(av, JOB_API_VERSION) == 0 && strcmp(kind, "Job") == 0
            && strcmp(name, job_name) == 0 && strcmp(uid, job_uid) != 0)
            return uid;
    }
    return NULL;
}

/* D12: log one line, count it, decline. */
static int foreign_object(const struct objects_owner_ctx *o, const struct objects_kind *kind,
                          const char *name)
{
    const char *ns = meta_str(o->job, "namespace");

    LOG_WARN("reconcile: %s %s/%s exists and is not owned by job %s/%s (uid %s), left alone",
             kind->kind, ns, name, ns, meta_str(o->job, "name"), meta_str(o->job, "uid"));
    if (o->foreign != NULL)
        __atomic_fetch_add(o->foreign, 1, __ATOMIC_RELAXED);
    return WH_DECLINED;
}

/* Prefix err's message with "<verb> <Kind> NS/name: " (context added once, here). */
static int wrap_error(int rc, struct wh_error *err, const char *verb,
                      const struct objects_kind *kind, const char *ns, const char *name)
{
    char cause[WH_ERROR_MSG_MAX];

    if (err == NULL)
        return rc;
    memcpy(cause, err->msg, sizeof(cause));
    cause[sizeof(cause) - 1] = '\0';
    return wh_error_set(err, rc, "%s %s %s/%s: %s", verb, kind->kind, ns, name,
                        cause[0] != '\0' ? cause : wh_error_str(rc));
}

/* Each change made to the cluster is logged at info: an operator's record of what
 * the reconcile side did (unchanged objects are not). */
static void log_change(const char *what, const struct objects_owner_ctx *o,
                       const struct objects_kind *kind, const char *name)
{
    LOG_INFO("reconcile: %s kind=%s object=%s/%s job=%s/%s uid=%s", what, kind->kind,
             meta_str(o->job, "namespace"), name, meta_str(o->job, "namespace"),
             meta_str(o->job, "name"), meta_str(o->job, "uid"));
}

/* The object to create: a new reference to s->desired, or s->build's result. */
static int ensure_desired(const struct objects_ensure_spec *s, json_t **out, struct wh_error *err)
{
    *out = NULL;
    if (s->desired != NULL) {
        *out = json_incref((json_t *)s->desired);
        return 0;
    }
    if (s->build == NULL)
        return wh_error_set(err, WH_EINVAL, "nothing to create");
    return s->build(s->ud, out, err);
}

int objects_ensure(const struct objects_owner_ctx *o, const struct objects_ensure_spec *s,
                   json_t **out, struct wh_error *err)
{
    const char *ns = meta_str(o->job, "namespace");
    const char *uid = meta_str(o->job, "uid");
    char *path = k8s_path(s->kind->group, s->kind->version, ns, s->kind->resource, s->name);
    char *coll = k8s_path(s->kind->group, s->kind->version, ns, s->kind->resource, NULL);
    json_t *cur = NULL;
    json_t *edit = NULL;
    json_t *desired = NULL;
    int conflicts = 0;
    int rc = WH_ENOMEM;

    if (out != NULL)
        *out = NULL;
    if (path == NULL || coll == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    for (int round = 0; round < ENSURE_MAX_ROUNDS; round++) {
        json_decref(cur);
        cur = NULL;
        rc = k8s_request(o->kc, "GET", path, NULL, NULL, o->timeout_ms, &cur, err);
        if (rc == WH_ENOTFOUND) {
            if (desired == NULL) {
                rc = ensure_desired(s, &desired, err);
                if (rc < 0)
                    goto out;
            }
            rc = k8s_request(o->kc, "POST", coll, desired, NULL, o->timeout_ms, &cur, err);
            if (rc == WH_EEXISTS)
                continue; /* someone created it meanwhile: look at what is there */
            if (rc < 0) {
                rc = wrap_error(rc, err, "create", s->kind, ns, s->name);
                goto out;
            }
            log_change("created", o, s->kind, s->name);
            goto done;
        }
        if (rc < 0) {
            rc = wrap_error(rc, err, "get", s->kind, ns, s->name);
            goto out;
        }
        if (!objects_owned_by(cur, uid)) {
            const char *prev = previous_incarnation(cur, meta_str(o->job, "name"), uid);

            if (prev != NULL) {
                /* Not foreign: garbage collection removes it soon, and then the object
                 * must be made for this Job. Fail, so the reconciler retries. */
                wh_error_set(err, WH_ECONFLICT,
                             "owned by a previous incarnation of job %s/%s (uid %s), waiting "
                             "for its garbage collection",
                             ns, meta_str(o->job, "name"), prev);
                rc = wrap_error(WH_ECONFLICT, err, "create", s->kind, ns, s->name);
                goto out;
            }
            wh_error_clear(err);
            rc = foreign_object(o, s->kind, s->name);
            goto out;
        }
        if (s->update == NULL)
            goto done;
        json_decref(edit);
        edit = json_deep_copy(cur);
        if (edit == NULL) {
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
            goto out;
        }
        rc = s->update(edit, s->ud, err);
        if (rc < 0)
            goto out;
        if (rc == 0)
            goto done;
        json_decref(cur);
        cur = NULL;
        rc = k8s_request(o->kc, "PUT", path, edit, NULL, o->timeout_ms, &cur, err);
        if (rc == WH_ECONFLICT && conflicts < OBJECTS_CONFLICT_RETRIES) {
            conflicts++; /* changed under us: read again, reapply */
            continue;
        }
        if (rc == WH_ENOTFOUND)
            continue; /* deleted under us: create it again */
        if (rc < 0) {
            rc = wrap_error(rc, err, "update", s->kind, ns, s->name);
            goto out;
        }
        log_change("updated", o, s->kind, s->name);
        goto done;
    }
    rc = wh_error_set(err, WH_ECONFLICT, "ensure %s %s/%s: still changing after %d attempts",
                      s->kind->kind, ns, s->name, ENSURE_MAX_ROUNDS);
    goto out;
done:
    rc = 0;
    wh_error_clear(err); /* a 409 on the way is no longer the story */
    if (out != NULL) {
        *out = cur;
        cur = NULL; /* now owned by the caller */
    }
out:
    objects_count_op(s->kind->kind, "ensure", rc >= 0);
    json_decref(cur);
    json_decref(edit);
    json_decref(desired);
    free(path);
    free(coll);
    return rc;
}

/*
 * The DeleteOptions of objects_delete: delete only the object of this uid
 * (kube-apiserver answers 409 Conflict when the stored one has another), with the
 * dependents going in the background. @return new reference, NULL on ENOMEM.
 */
static json_t *delete_options(const char *uid)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:s}", "kind", "DeleteOptions", "apiVersion", "v1",
                     "preconditions", "uid", uid, "propagationPolicy", "Background");
}

int objects_delete(const struct objects_owner_ctx *o, const struct objects_kind *kind,
                   const char *name, struct wh_error *err)
{
    const char *ns = meta_str(o->job, "namespace");
    char *path = k8s_path(kind->group, kind->version, ns, kind->resource, name);
    json_t *cur = NULL;
    json_t *opts = NULL;
    int rc;

    if (path == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    rc = k8s_request(o->kc, "GET", path, NULL, NULL, o->timeout_ms, &cur, err);
    if (rc == WH_ENOTFOUND) {
        rc = 0;
        goto out;
    }
    if (rc < 0) {
        rc = wrap_error(rc, err, "get", kind, ns, name);
        goto out;
    }
    if (!objects_owned_by(cur, meta_str(o->job, "uid"))) {
        /* A previous incarnation's object is not ours to delete, and not foreign
         * either: garbage collection removes it. */
        if (previous_incarnation(cur, meta_str(o->job, "name"), meta_str(o->job, "uid")) != NULL)
            rc = 0;
        else
            rc = foreign_object(o, kind, name);
        goto out;
    }
    /* The uid just read as precondition: an object re-created under this name since
     * the GET (for a new Job) is not deleted. */
    opts = delete_options(meta_str(cur, "uid"));
    if (opts == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    rc = k8s_request(o->kc, "DELETE", path, opts, NULL, o->timeout_ms, NULL, err);
    if (rc == 0) {
        log_change("deleted", o, kind, name);
    } else if (rc == WH_ENOTFOUND) {
        rc = 0;
    } else if (rc == WH_ECONFLICT) {
        /* precondition failed: the object there now is another one, not ours */
        LOG_INFO("reconcile: not deleted, replaced meanwhile kind=%s object=%s/%s job=%s/%s "
                 "uid=%s",
                 kind->kind, ns, name, ns, meta_str(o->job, "name"), meta_str(o->job, "uid"));
        rc = 0;
    } else if (rc < 0) {
        rc = wrap_error(rc, err, "delete", kind, ns, name);
    }
out:
    if (rc == 0)
        wh_error_clear(err);
    objects_count_op(kind->kind, "delete", rc >= 0);
    json_decref(cur);
    json_decref(opts);
    free(path);
    return rc;
}
