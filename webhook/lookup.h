/*
 * lookup.h - the admission path's Job lookup: a struct job_source (mutate.h)
 * that reads the Jobs cache first and falls back to one GET (issue 3; spec D6,
 * D7 is applied by mutate_review on what this returns).
 *
 * Threads: lookup_job_get runs on MHD workers, many at once. struct job_lookup
 * is immutable while the server runs; the cache and the client are thread-safe.
 * The cache is only read here: the informer thread is its one writer.
 */
#ifndef WH_LOOKUP_H
#define WH_LOOKUP_H

#include <jansson.h>

#include "k8s/client.h"
#include "webhook/cache.h"
#include "webhook/error.h"
#include "webhook/mutate.h"

struct job_lookup {
    struct job_cache *cache;    /* borrowed; NULL → every lookup is a GET */
    struct k8s_client *client;  /* borrowed */
    long timeout_ms;            /* limit of the one GET (--job-lookup-timeout) */
};

/**
 * The get() of struct job_source; userdata is a struct job_lookup (borrowed).
 * The cached Job ns/name is returned when its metadata.uid equals uid (or uid
 * is "", or the cached Job has no uid), with no API request. On a miss, or when
 * the cached Job has another uid (a stale cache, spec D6: read again), one
 * k8s_get_job with timeout_ms.
 * @param[out] job_out new reference on success (a private copy either way)
 * @return 0; WH_ENOTFOUND when the API says 404; WH_ETIMEOUT / WH_EAPI /
 *         WH_ENOMEM with err filled (k8s_get_job's reason).
 */
int lookup_job_get(void *userdata, const char *ns, const char *name, const char *uid,
                   json_t **job_out, struct wh_error *err);

/**
 * @return a job_source over l (borrowed: l must outlive every user of the source)
 *         whose get is lookup_job_get.
 */
struct job_source lookup_job_source(struct job_lookup *l);

#endif
