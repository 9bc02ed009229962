/*
 * cache.h - the Jobs cache (informer store): namespace/name → immutable Job.
 *
 * Threads: many readers (MHD workers, reconcile workers), one writer (the
 * informer thread). A pthread_rwlock guards the map; readers take a deep copy
 * under the read lock and work outside it (C-STYLE §6.5; cache.c says why a copy
 * and not a shared reference). Cached Jobs are never
 * modified: an update swaps in a new object.
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

/** Insert or replace the Job (keyed by its metadata.namespace/name); takes a reference. */
int cache_put(struct job_cache *c, json_t *job);
/** Remove ns/name. @return 0, or WH_ENOTFOUND. */
int cache_remove(struct job_cache *c, const char *ns, const char *name);

/**
 * Replace the whole content with items (a JSON array of Jobs) after a LIST.
 * @param[out] removed_out  new reference: array of the Jobs that were cached and are
 *                          not in items (so their deletion can be handled); NULL allowed
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
