/*
 * cache.h - the Jobs cache (informer store): namespace/name → immutable Job.
 *
 * Threads: many readers (MHD workers, reconcile workers), one writer (the
 * informer thread). A pthread_rwlock guards the map. The cache keeps its own
 * private copy of each Job; readers either take a deep copy under the read lock
 * (cache_get) or lease the cached Job itself (cache_lend: no copy, the admission
 * path) and work outside the lock (C-STYLE §6.5; cache.c says why leases and not
 * jansson references). Cached Jobs are never modified: an update swaps in a new
 * object.
 */
#ifndef WH_CACHE_H
#define WH_CACHE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "webhook/error.h"

struct job_cache;

/** @return a new empty cache, NULL on ENOMEM. */
struct job_cache *cache_create(void);
/** Free the cache and its references. No other thread may use it any more. */
void cache_destroy(struct job_cache *c);

/**
 * Look up ns/name. @param[out] job_out new reference (the caller decrefs): a private copy.
 * @return 0, WH_ENOTFOUND, or WH_ENOMEM.
 */
int cache_get(struct job_cache *c, const char *ns, const char *name, json_t **job_out);

/**
 * A lease on one Job: it stays valid and unchanged until cache_lease_release, even
 * when the cache replaces or removes the Job meanwhile. Opaque; any thread.
 */
struct cache_lease;

/**
 * Lend ns/name without copying it (the admission path: one atomic increment).
 * @param[out] lease_out  the lease (release it with cache_lease_release); NULL
 *                        unless 0 is returned
 * @return 0, or WH_ENOTFOUND.
 */
int cache_lend(struct job_cache *c, const char *ns, const char *name,
               struct cache_lease **lease_out);

/**
 * A lease over a Job that is not in the cache (e.g. one read by a GET), so that
 * callers handle every Job the same way. job_new is taken (released with the
 * lease, or at once on ENOMEM) and must be referenced by nobody else.
 * @return the lease, NULL on ENOMEM.
 */
struct cache_lease *cache_lease_wrap(json_t *job_new);

/**
 * The leased Job: borrowed, valid until cache_lease_release. Read it only: it may
 * be shared with other threads, so never modify it and never json_incref or
 * json_decref it or anything in it (keep a json_deep_copy instead).
 */
const json_t *cache_lease_job(const struct cache_lease *l);

/** Give a lease back (NULL: nothing to do); the last one frees a replaced Job. */
void cache_lease_release(struct cache_lease *l);

/**
 * Insert or replace the Job (keyed by its metadata.namespace/name). The cache
 * stores a deep copy of its own: job stays the caller's (its reference count is
 * not changed) and may be modified or freed afterwards. The copy leaves out what
 * no reader of the cache uses (cache.c job_copy_for_cache lists it): in each
 * spec.tasks[].template all but spec.hostname and spec.subdomain, and
 * metadata.managedFields and the kubectl last-applied-configuration annotation.
 * Every Job the cache hands out (cache_get, cache_lend, cache_list,
 * cache_replace_all's removed) is such a copy.
 * @return 0, WH_EINVAL (not an object, or no namespace or name), or WH_ENOMEM.
 */
int cache_put(struct job_cache *c, json_t *job);
/** Remove ns/name. @return 0, or WH_ENOTFOUND. */
int cache_remove(struct job_cache *c, const char *ns, const char *name);

/**
 * Replace the whole content with items (a JSON array of Jobs) after a LIST.
 * items are copied, as by cache_put.
 * @param[out] removed_out  new reference: array of (copies of) the Jobs that were
 *                          cached and are not in items (so their deletion can be
 *                          handled); NULL allowed
 */
int cache_replace_all(struct job_cache *c, const json_t *items, json_t **removed_out);

/** @return new reference: array of copies of every cached Job (a snapshot, for resyncs);
 *  NULL on ENOMEM. */
json_t *cache_list(struct job_cache *c);

size_t cache_size(struct job_cache *c);

/** Whether the first LIST has completed (readiness, /readyz). */
bool cache_synced(struct job_cache *c);
void cache_set_synced(struct job_cache *c, bool synced);

#endif
