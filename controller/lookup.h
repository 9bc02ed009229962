/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lookup.h - the admission path's Job lookup: a struct jobsource (plugins/jobsource.h)
 * that reads the Jobs cache first and falls back to one GET (D6;
 * D7 is applied by mutate_review on what this returns).
 *
 * API reads are shared and bounded (after lookup_init): concurrent misses for
 * the same Job wait for one GET (a new Job's pods all arrive before the watch
 * has brought it), and at most max_waiting lookups wait on GETs at once.
 * lookup_job_get_nowait never waits: the server's MHD workers call it, and hand
 * a review it cannot answer to a lookup thread that calls lookup_job_get
 * (webhook/server_defer.c), so reviews of cached Jobs never wait behind a GET.
 *
 * Threads: lookup_job_get_nowait on MHD workers, lookup_job_get on the server's
 * lookup threads, many at once. The fields of
 * struct lookup are not changed while the server runs; its flights are
 * guarded by their own mutex. The cache and the client are thread-safe. The
 * cache is only read here: the informer thread is its one writer.
 */
#ifndef WH_LOOKUP_H
#define WH_LOOKUP_H

#include <jansson.h>

#include "base/error.h"
#include "controller/cache.h"
#include "k8s/client.h"
#include "plugins/jobsource.h"

struct lookup_flights;

struct lookup {
    struct cache *cache;            /* borrowed; NULL → every lookup is a GET */
    struct k8s_client *client;      /* borrowed */
    long timeout_ms;                /* limit of the one GET (--job-lookup-timeout) */
    unsigned max_waiting;           /* most lookups waiting on a GET at once (its leader and
                                   followers each count); 0: no limit */
    struct lookup_flights *flights; /* lookup_init's; NULL: every miss its own GET */
};

/**
 * Make l's shared-GET state (l->flights); the other fields are set by the caller,
 * before or after. @return 0 or WH_ENOMEM. Undo with lookup_dispose.
 */
int lookup_init(struct lookup *l) WH_WARN_UNUSED;

/** Free l->flights (none may be in flight: the server is stopped); safe twice. */
void lookup_dispose(struct lookup *l);

/**
 * The get() of struct jobsource; userdata is a struct lookup (borrowed).
 * The cached Job ns/name is returned when its metadata.uid equals uid (or uid
 * is "", or the cached Job has no uid), with no API request. On a miss, or when
 * the cached Job has another uid (a stale cache, D6: read again), one
 * k8s_get_job_urgent with timeout_ms (a review waits on it: it goes ahead of the
 * requests queued on the client's rate limiter, within a bound); after lookup_init,
 * a GET of ns/name already in flight is waited for and its answer shared instead.
 * A namespace the cache does not serve (cache_serves: serve --namespaces) is never
 * looked up: WH_DECLINED at once, counted (lookup_not_served) and logged once per
 * namespace, at info.
 * @param[out] job_out new reference on success, for reading only: from the cache, this
 *                     thread's own tree of that Job version (cache_get_read), which its
 *                     later lookups are given again; from the API, a private tree
 * @return 0; WH_DECLINED (> 0, not an error; err untouched, *job_out NULL) for a
 *         namespace not served; WH_ENOTFOUND when the API says 404; WH_ETIMEOUT / WH_EAPI /
 *         WH_ENOMEM with err filled (k8s_get_job_urgent's reason); WH_EBUSY when
 *         max_waiting lookups are waiting on GETs already (err says so), at once
 *         and without a request.
 */
int lookup_job_get(void *userdata, const char *ns, const char *name, const char *uid,
                   json_t **job_out, struct wh_error *err);

/**
 * The get_nowait() of struct jobsource; userdata is a struct lookup (borrowed).
 * lookup_job_get up to its GET: a cached Job of that uid, WH_DECLINED for a namespace
 * not served and WH_ENOMEM as it gives them; where it would GET (a miss, a stale uid),
 * WH_EWOULDBLOCK at once (*job_out NULL, err untouched, nothing counted), for the
 * caller to ask lookup_job_get on a thread that may wait.
 */
int lookup_job_get_nowait(void *userdata, const char *ns, const char *name, const char *uid,
                          json_t **job_out, struct wh_error *err);

/**
 * The diagnose() of struct jobsource; userdata is a struct lookup (borrowed).
 * The diagnostics the cache computed for job's version (cache_get_diagnostics,
 * by job's metadata namespace, name, uid and resourceVersion), no diagnose_job
 * run here. out NULL: only whether that version has any (cache_get_diagnostics).
 * @return 0 (out filled; with out NULL: it has some); WH_DECLINED (> 0) only with
 * out NULL: it has none; WH_ENOTFOUND when there is no cache, or it holds another
 * version (a Job GET from the API after a miss, a newer watch event).
 */
int lookup_job_diagnose(void *userdata, const json_t *job, struct diagnostics *out);

/**
 * Pods whose namespace the cache does not serve, since lookup_init (0 without it).
 * Any thread (an atomic read; monotonic). For GET /metrics.
 */
unsigned long lookup_not_served(const struct lookup *l);

/**
 * @return a job_source over l (borrowed: l must outlive every user of the source)
 *         whose get is lookup_job_get and get_nowait lookup_job_get_nowait.
 */
struct jobsource lookup_job_source(struct lookup *l);

#endif
