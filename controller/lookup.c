/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lookup.c - Job lookup for admission: the Jobs cache, else one GET, shared by
 * every concurrent miss of the same Job, with a bound on the lookups waiting
 * (lookup.h).
 *
 * Threads: lookup_job_get_nowait runs on MHD workers and lookup_job_get on the
 * server's lookup threads (webhook/server_defer.c), concurrently. It reads the
 * struct lookup (not changed while serving), reads the Job from the cache
 * (cache_get_read: this thread's own tree of that Job version) and, on a miss,
 * calls the shareable k8s client (one CURL handle per thread). The flights map is guarded by
 * flights->mu; a flight's result is written once by its leader, under mu, and
 * read by its followers under mu.
 *
 * Namespaces not served (a namespaced cache, serve --namespaces): the lookup
 * answers WH_DECLINED at once, so no GET ever reaches outside the namespaces
 * served. Each such pod is counted (an atomic) and the first pod of each
 * namespace is logged, for the first LOOKUP_LOGGED_NS_MAX namespaces (under
 * mu): a namespaceSelector that sends more than it should shows up once per
 * namespace in the log, not once per pod.
 */
#include "controller/lookup.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/strmap.h"

/* One GET in progress (or just done) for ns/name, shared by `callers` lookups. */
struct flight {
    char *key;        /* "ns/name", its key in the flights map */
    unsigned callers; /* the leader and its followers still to read the result */
    bool landed;      /* the GET is done: rc, job and err are set */
    int rc;
    json_t *job; /* the GET's Job (rc == 0); followers copy it */
    struct wh_error err;
};

#define LOOKUP_LOGGED_NS_MAX 16  /* namespaces not served whose first pod is logged */
#define LOOKUP_NS_MAX_LEN    253 /* the longest namespace mutate_review passes (a subdomain) */

struct lookup_flights {
    pthread_mutex_t mu;
    pthread_cond_t landed;   /* broadcast whenever a flight lands */
    struct strmap *flights;  /* "ns/name" → its struct flight (one per Job at most) */
    unsigned waiting;        /* callers blocked on a GET, leaders and followers */
    atomic_ulong not_served; /* pods of namespaces not served (lookup_not_served) */
    char logged[LOOKUP_LOGGED_NS_MAX][LOOKUP_NS_MAX_LEN + 1]; /* under mu */
    unsigned nlogged; /* entries of logged; LOOKUP_LOGGED_NS_MAX + 1 once that is said */
};

/* strmap_free_fn of the flights. */
static void flight_free(void *v)
{
    struct flight *f = v;

    json_decref(f->job);
    free(f->key);
    free(f);
}

int lookup_init(struct lookup *l)
{
    struct lookup_flights *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return WH_ENOMEM;
    f->flights = strmap_create(flight_free);
    if (f->flights == NULL) {
        free(f);
        return WH_ENOMEM;
    }
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->landed, NULL);
    atomic_init(&f->not_served, 0);
    l->flights = f;
    return 0;
}

unsigned long lookup_not_served(const struct lookup *l)
{
    return l->flights != NULL ? atomic_load(&l->flights->not_served) : 0;
}

/* A pod of namespace ns, which the cache does not serve: count it, and log the first
 * of its namespace (of the first LOOKUP_LOGGED_NS_MAX namespaces). */
static void note_not_served(const struct lookup *l, const char *ns)
{
    struct lookup_flights *fl = l->flights;
    unsigned k;

    LOG_DEBUG("job lookup ns=%s outcome=namespace-not-served", ns);
    if (fl == NULL)
        return;
    atomic_fetch_add(&fl->not_served, 1);
    pthread_mutex_lock(&fl->mu);
    for (k = 0; k < fl->nlogged && k < LOOKUP_LOGGED_NS_MAX; k++)
        if (strcmp(fl->logged[k], ns) == 0)
            break;
    if (k == fl->nlogged && k < LOOKUP_LOGGED_NS_MAX && strlen(ns) <= LOOKUP_NS_MAX_LEN) {
        snprintf(fl->logged[k], sizeof(fl->logged[k]), "%s", ns);
        fl->nlogged++;
        LOG_INFO("admission: a pod of a namespace not served (--namespaces) is allowed "
                 "unpatched; this namespace's next ones are only counted "
                 "(webhook_admission_namespace_not_served_total) ns=%s",
                 ns);
    } else if (k == LOOKUP_LOGGED_NS_MAX && fl->nlogged == LOOKUP_LOGGED_NS_MAX) {
        fl->nlogged++; /* said once */
        LOG_INFO("admission: pods of more than %d namespaces not served arrived; the next "
                 "new ones are only counted (webhook_admission_namespace_not_served_total)",
                 LOOKUP_LOGGED_NS_MAX);
    }
    pthread_mutex_unlock(&fl->mu);
}

void lookup_dispose(struct lookup *l)
{
    struct lookup_flights *f = l->flights;

    if (f == NULL)
        return;
    pthread_cond_destroy(&f->landed);
    pthread_mutex_destroy(&f->mu);
    strmap_destroy(f->flights);
    free(f);
    l->flights = NULL;
}

static const char *job_uid(const json_t *job)
{
    const char *uid = json_string_value(json_object_get(json_object_get(job, "metadata"), "uid"));

    return uid != NULL ? uid : "";
}

/* Drop one caller of f (mu held); the last one unlinks and frees it. */
static void flight_release(struct lookup_flights *fl, struct flight *f)
{
    if (--f->callers > 0)
        return;
    (void)strmap_remove(fl->flights, f->key); /* frees f */
}

/* "ns/name", malloc'd (the names are DNS-1123, so the "/" is unambiguous); NULL on ENOMEM. */
static char *flight_key(const char *ns, const char *name)
{
    struct buf key;

    buf_init(&key, BUF_NO_MAX);
    if (buf_appendf(&key, "%s/%s", ns, name) < 0) {
        buf_dispose(&key);
        return NULL;
    }
    return buf_take(&key, NULL);
}

/*
 * The GET of ns/name, shared: a follower waits for the flight of ns/name that
 * is in the air and takes a copy of its answer; else this caller leads one. No
 * more than max_waiting callers wait at once. The leader keeps its own Job when
 * nobody followed, else leaves it to the followers and takes a copy too.
 */
static int get_shared(const struct lookup *l, const char *ns, const char *name, json_t **job_out,
                      struct wh_error *err)
{
    struct lookup_flights *fl = l->flights;
    char *key = flight_key(ns, name);
    struct flight *f;
    json_t *job = NULL;
    int rc;

    if (key == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    pthread_mutex_lock(&fl->mu);
    /* Every caller blocks its thread (a lookup thread, webhook/server_defer.c): leaders
     * and followers alike count against the limit. */
    if (l->max_waiting > 0 && fl->waiting >= l->max_waiting) {
        unsigned waiting = fl->waiting;

        pthread_mutex_unlock(&fl->mu);
        free(key);
        return wh_error_set(err, WH_EBUSY,
                            "too many reviews waiting on volcano job reads from "
                            "the API server (%u); try again",
                            waiting);
    }
    fl->waiting++;
    f = strmap_get(fl->flights, key);
    if (f != NULL) {
        f->callers++;
        while (!f->landed)
            pthread_cond_wait(&fl->landed, &fl->mu); /* the leader's GET has a timeout */
        fl->waiting--;
        rc = f->rc;
        if (rc == 0 && (*job_out = json_deep_copy(f->job)) == NULL)
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        else if (rc < 0 && err != NULL)
            *err = f->err;
        flight_release(fl, f);
        pthread_mutex_unlock(&fl->mu);
        free(key);
        return rc;
    }
    f = calloc(1, sizeof(*f));
    if (f == NULL || strmap_set(fl->flights, key, f) < 0) {
        fl->waiting--;
        pthread_mutex_unlock(&fl->mu);
        free(f);
        free(key);
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    f->key = key; /* now owned by the flight, and f by the map */
    f->callers = 1;
    pthread_mutex_unlock(&fl->mu);

    rc = k8s_get_job_urgent(l->client, ns, name, l->timeout_ms, &job, &f->err);

    pthread_mutex_lock(&fl->mu);
    fl->waiting--;
    f->landed = true;
    f->rc = rc;
    if (rc < 0 && err != NULL)
        *err = f->err;
    if (rc == 0 && f->callers == 1) {
        *job_out = job; /* nobody followed: the Job is ours alone */
    } else if (rc == 0) {
        f->job = job; /* followers copy it; freed with the flight */
        if ((*job_out = json_deep_copy(job)) == NULL)
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    pthread_cond_broadcast(&fl->landed);
    flight_release(fl, f);
    pthread_mutex_unlock(&fl->mu);
    return rc;
}

/* lookup_job_get, or with wait false lookup_job_get_nowait. */
static int lookup_get(const struct lookup *l, const char *ns, const char *name, const char *uid,
                      bool wait, json_t **job_out, struct wh_error *err)
{
    const char *why = "miss";
    json_t *job = NULL;
    int rc;

    *job_out = NULL;
    if (uid == NULL)
        uid = "";
    if (l->cache != NULL && !cache_serves(l->cache, ns)) {
        /* Not ours (another replica set may serve it): no GET, no warning. */
        note_not_served(l, ns);
        return WH_DECLINED;
    }
    if (l->cache != NULL) {
        /* read only, here and by mutate_review: this thread's own tree of that version */
        rc = cache_get_read(l->cache, ns, name, &job);
        if (rc == WH_ENOMEM)
            return wh_error_set(err, WH_ENOMEM, "out of memory");
        if (rc == 0) {
            const char *cached = job_uid(job);

            if (uid[0] == '\0' || cached[0] == '\0' || strcmp(cached, uid) == 0) {
                LOG_DEBUG("job lookup job=%s/%s source=cache", ns, name);
                *job_out = job;
                return 0;
            }
            /* D6: another incarnation of the Job, or the cache is behind: read again. */
            why = "stale-uid";
            json_decref(job);
        } else if (!cache_synced(l->cache)) {
            why = "not-synced";
        }
    }
    if (!wait)
        return WH_EWOULDBLOCK; /* the caller asks again on a thread that may wait */
    LOG_DEBUG("job lookup job=%s/%s source=api reason=%s", ns, name, why);
    if (l->flights == NULL)
        return k8s_get_job_urgent(l->client, ns, name, l->timeout_ms, job_out, err);
    return get_shared(l, ns, name, job_out, err);
}

int lookup_job_get(void *userdata, const char *ns, const char *name, const char *uid,
                   json_t **job_out, struct wh_error *err)
{
    return lookup_get(userdata, ns, name, uid, true, job_out, err);
}

int lookup_job_get_nowait(void *userdata, const char *ns, const char *name, const char *uid,
                          json_t **job_out, struct wh_error *err)
{
    return lookup_get(userdata, ns, name, uid, false, job_out, err);
}

int lookup_job_diagnose(void *userdata, const json_t *job, struct diagnostics *out)
{
    const struct lookup *l = userdata;
    const json_t *meta = json_object_get(job, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));

    if (l->cache == NULL || ns == NULL || name == NULL || uid == NULL || rv == NULL)
        return WH_ENOTFOUND;
    return cache_get_diagnostics(l->cache, ns, name, uid, rv, out);
}

/* jobsource.job_memo: the slots beside this thread's cached trees (cache_read_slot). */
static json_t **lookup_job_memo(void *userdata, const json_t *job, size_t k)
{
    const struct lookup *l = userdata;

    return l->cache != NULL ? cache_read_slot(job, k) : NULL;
}

struct jobsource lookup_job_source(struct lookup *l)
{
    struct jobsource src = {.get = lookup_job_get,
                            .get_nowait = lookup_job_get_nowait,
                            .diagnose = lookup_job_diagnose,
                            .job_memo = lookup_job_memo,
                            .userdata = l};

    return src;
}
