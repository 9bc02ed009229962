/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cache.h - the Jobs cache (informer store): namespace/name → Job.
 *
 * Threads: many readers (MHD workers, reconcile workers), one writer (the
 * informer thread), or one per namespace for a namespaced cache (--namespaces:
 * one informer each; a mutex serialises them). A pthread_rwlock guards the map. The cache keeps, for each
 * Job, the compact JSON text of the fields its readers use (cache.c says which
 * and why text); every read parses a private tree from it, outside the lock
 * (a jansson tree is not safe to share between threads), so no jansson object
 * is ever shared between threads.
 */
#ifndef WH_CACHE_H
#define WH_CACHE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct cache;
struct diagnostics;

/** @return a new empty cache, NULL on ENOMEM. */
struct cache *cache_create(void);
/**
 * A cache of the Jobs of these namespaces only (serve --namespaces), each filled
 * by its own informer (cache_replace_namespace, cache_put) and synced when every
 * one of them has marked its first LIST (cache_set_namespace_synced). The names
 * are copied; n == 0 is cache_create (every namespace).
 * @return a new empty cache, NULL on ENOMEM.
 */
struct cache *cache_create_namespaced(const char *const *namespaces, size_t n);

/**
 * Whether the cache holds the Jobs of namespace ns: true for every ns in a cache
 * of every namespace. Any thread (the namespaces never change). A lookup that
 * misses for a namespace not served must not ask the API server (lookup.h).
 */
bool cache_serves(const struct cache *c, const char *ns);

/** Free the cache and its references. No other thread may use it any more. */
void cache_destroy(struct cache *c);

/**
 * Look up ns/name. @param[out] job_out new reference (the caller's to keep,
 * change or decref): a private tree of the cached Job, as cache_put kept it.
 * @return 0, WH_ENOTFOUND, or WH_ENOMEM.
 */
int cache_get(struct cache *c, const char *ns, const char *name, json_t **job_out);

/**
 * cache_get for a reader that only reads the Job, on the calling thread (the
 * admission path: controller/lookup.c): the same Job, as a tree this thread parsed
 * when it first read that version of the entry, not parsed again per read. Each
 * thread keeps trees of the last 16 Jobs it read, as long as their kept text adds up
 * to at most 16 KiB (the oldest give way; none for a Job of over 8 KiB, a hundred
 * tasks or so: it is parsed per read), each with a reference to its entry, so an update (a new entry) is
 * read anew and no tree is shared between threads; they are freed when the
 * thread exits. @param[out] job_out new reference to a tree the caller must not
 * change (this thread's later reads are given it again); json_decref it on this
 * thread. @return 0, WH_ENOTFOUND, or WH_ENOMEM.
 */
int cache_get_read(struct cache *c, const char *ns, const char *name, json_t **job_out);

/* Values a reader derives from a Job alone, kept beside this thread's tree of it. */
#define CACHE_READ_SLOTS 16

/**
 * Where the calling thread keeps value k (< CACHE_READ_SLOTS; the admission path: a
 * plugin's place in the registry) derived from job alone, a tree cache_get_read gave
 * this thread and still keeps: what every pod of that Job version gets alike is then
 * made once per thread and version, not per pod (plugins/jobsource.h job_memo). The
 * slot holds NULL until the reader stores a new reference there; it is the thread's
 * own as the tree is (never seen by another thread) and json_decref'd with the tree,
 * when the version gives way or the thread exits; the slot itself is valid until this
 * thread's next cache_get_read (which may make the tree give way). A value must be bounded by the Job
 * (its kept text bounds the trees a thread keeps, MEMO_TEXT_TOTAL).
 * @return the slot, or NULL when job is not such a tree (a Job parsed per read: over
 *         8 KiB of kept text, or read from the API or a file) or k is out of range:
 *         the reader then derives the value per read.
 */
json_t **cache_read_slot(const json_t *job, size_t k);

/**
 * Insert or replace the Job (keyed by its metadata.namespace/name). job stays the
 * caller's (its reference count is not changed; the cache keeps text, not a
 * reference). Only what a reader of the cache uses is kept (cache.c keep_job):
 * apiVersion, kind; metadata name, namespace, uid, resourceVersion; spec.plugins;
 * spec.tasks[] name, replicas, template.spec.hostname and .subdomain;
 * status.state.phase. An object left empty by this is dropped; a value of an
 * unexpected type is kept as it is. Every Job the cache hands out (cache_get,
 * cache_list, cache_replace_all's reports) is such a Job.
 * @return 0, WH_EINVAL (not an object, no namespace or name, or a namespace the
 *         cache does not serve), or WH_ENOMEM.
 */
int cache_put(struct cache *c, json_t *job);
/**
 * The Job-level diagnostics (plugins/diagnose.h, D16/D17) of the cached Job
 * ns/name, computed by diagnose_job from the full Job when cache_put or
 * cache_batch_add was given it (once per version, not per reader).
 * @param uid, rv  the version the caller holds (metadata.uid, .resourceVersion of a
 *                 Job cache_get gave); borrowed
 * @param out      filled from empty (caller-owned); NULL to ask only whether that
 *                 version has any (nothing is unpacked: most Jobs have none, and a
 *                 struct diagnostics is 17 KiB)
 * @return 0 (with out NULL: the version has some); WH_DECLINED (> 0) only with out
 *         NULL: the version has none; WH_ENOTFOUND (out empty) when the cache has no
 *         such Job, or holds another version of it (the caller diagnoses its own copy).
 */
int cache_get_diagnostics(struct cache *c, const char *ns, const char *name, const char *uid,
                          const char *rv, struct diagnostics *out);

/**
 * The Job as the cache would keep it (the fields cache_put names), for a reader
 * that must hold a Job the cache no longer has (the informer's on_delete). job is
 * only read. @return new reference (the caller's), NULL on ENOMEM.
 */
json_t *cache_kept_job(const json_t *job);
/** Remove ns/name. @return 0, or WH_ENOTFOUND. */
int cache_remove(struct cache *c, const char *ns, const char *name);

/**
 * The Jobs of one LIST, gathered page by page (k8s_list_pages) before they
 * replace the cache's content at once: each Job is turned into the cache's compact
 * text as it is added, so the LIST's full items need not be held until the end.
 * Only its creator uses it.
 */
struct cache_batch;

/** @return a new empty batch, NULL on ENOMEM. */
struct cache_batch *cache_batch_create(void);

/**
 * Add job (kept as by cache_put; job stays the caller's). A second Job with the
 * same namespace/name replaces the first.
 * @return 0, WH_EINVAL (not an object, or no namespace or name: not added), or WH_ENOMEM.
 */
int cache_batch_add(struct cache_batch *b, const json_t *job);

/** Free the batch and what it still holds. NULL is a no-op. */
void cache_batch_destroy(struct cache_batch *b);

/**
 * Called by cache_replace_all for each difference: old_job NULL for a Job the
 * cache did not have, job NULL for one it had that the LIST no longer has, both
 * set for one whose kept fields (resourceVersion among them) changed. A Job whose
 * metadata.uid changed (deleted and created again under the same namespace/name
 * between two LISTs) is two calls: (old_job, NULL), then (NULL, job). Both are
 * private trees, valid for the call only.
 */
typedef void (*cache_change_fn)(void *userdata, const json_t *old_job, const json_t *job);

/**
 * Make the batch's Jobs the whole content of the cache (after a LIST; readers see
 * the old content or the new, never a mix), then report the differences to
 * on_change (NULL: none), outside the lock: the Jobs gone first, then the new and
 * changed ones in the batch's order (a Job whose uid changed: its old uid gone, then
 * the new one, at its place in that order). The batch is left empty. Only the cache's one
 * writer (the informer thread) may call it, and only on a cache of every namespace
 * (a namespaced cache has one writer per namespace: cache_replace_namespace).
 * @return 0; WH_ENOMEM before the swap (nothing changed), or during the report
 *         (the cache is replaced; the rest of the differences are not reported).
 */
int cache_replace_all(struct cache *c, struct cache_batch *b, cache_change_fn on_change,
                      void *userdata);

/**
 * cache_replace_all for the Jobs of namespace ns only (a namespaced informer's
 * LIST): the cached Jobs of ns become the batch's, those of other namespaces stay
 * as they are (another informer writes them). Batch Jobs of another namespace are
 * dropped. The differences of ns are reported as cache_replace_all reports them,
 * outside every lock. Only ns's writer (its informer thread) may call it. The new
 * map is built from a copy of the old one's entry references (a few dozen bytes a
 * Job, for the call) while the other writers wait; readers wait only for the swap.
 * @return 0; WH_EINVAL (ns NULL, "" or not served: nothing changed); WH_ENOMEM before
 *         the swap (nothing changed, the batch kept), or during the report (the cache
 *         is replaced; the rest is not reported).
 */
int cache_replace_namespace(struct cache *c, const char *ns, struct cache_batch *b,
                            cache_change_fn on_change, void *userdata);

/** @return new reference: array of copies of every cached Job (a snapshot, for resyncs);
 *  NULL on ENOMEM. */
json_t *cache_list(struct cache *c);

/** @return the number of cached Jobs (all namespaces); c must not be NULL. Takes the read lock. */
size_t cache_size(struct cache *c);

/** Whether the first LIST has completed, of every namespace for a namespaced cache
 *  (readiness, /readyz). Any thread (an atomic). */
bool cache_synced(struct cache *c);
/** Set whether the cache is synced (a cache of every namespace: its informer). */
void cache_set_synced(struct cache *c, bool synced);
/**
 * Mark namespace ns's first LIST done (its informer); the cache is synced once
 * every namespace is marked. Marking twice, or a namespace not served, changes
 * nothing. Any writer thread.
 */
void cache_set_namespace_synced(struct cache *c, const char *ns);

#endif
