/*
 * cache.c - the Jobs cache: a jansson object "namespace/name" → Job, guarded by
 * a pthread_rwlock (C-STYLE §6.5).
 *
 * Threads: readers (cache_get, cache_list, cache_size) run on MHD workers and
 * reconcile workers and take the read lock; the writer (cache_put,
 * cache_remove, cache_replace_all) is the informer thread and takes the write
 * lock. Cached Jobs are never modified: an update swaps in another object.
 *
 * Readers get a deep copy made under the read lock, not a shared reference.
 * jansson's reference counts are atomic (checked below), but its inline
 * json_incref/json_decref also read the count non-atomically and the last
 * json_decref frees without an acquire fence, so a Job shared between threads
 * is a data race in C11 terms and ThreadSanitizer reports every admission.
 * With copies, a cached object is touched only under the lock (reads under the
 * read lock, the writer's decref under the write lock), and readers own what
 * they get. A Job is a few KB: the copy costs microseconds per admission.
 * The synced flag is an atomic_bool, read without the lock.
 */
#include "webhook/cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !JANSSON_THREAD_SAFE_REFCOUNT
#error "the Jobs cache shares json_t references between threads: jansson >= 2.11 with atomic refcounts is required"
#endif

#define KEY_MAX 512   /* namespace (63) + "/" + name (253) fit with room to spare */

struct job_cache {
    pthread_rwlock_t lock;
    json_t *map;            /* owned; "ns/name" → Job (one reference each); under lock */
    atomic_bool synced;     /* the first LIST has completed */
};

/* "ns/name" into buf. @return 0, or WH_EINVAL when a part is missing or too long. */
static int make_key(char *buf, size_t len, const char *ns, const char *name)
{
    int n;

    if (ns == NULL || name == NULL || ns[0] == '\0' || name[0] == '\0')
        return WH_EINVAL;
    n = snprintf(buf, len, "%s/%s", ns, name);
    return n < 0 || (size_t)n >= len ? WH_EINVAL : 0;
}

/* The key of a Job from its metadata. */
static int job_key(char *buf, size_t len, const json_t *job)
{
    const json_t *meta = json_object_get(job, "metadata");

    return make_key(buf, len, json_string_value(json_object_get(meta, "namespace")),
                    json_string_value(json_object_get(meta, "name")));
}

struct job_cache *cache_create(void)
{
    struct job_cache *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->map = json_object();
    if (c->map == NULL || pthread_rwlock_init(&c->lock, NULL) != 0) {
        json_decref(c->map);
        free(c);
        return NULL;
    }
    atomic_init(&c->synced, false);
    return c;
}

void cache_destroy(struct job_cache *c)
{
    if (c == NULL)
        return;
    pthread_rwlock_destroy(&c->lock);
    json_decref(c->map);
    free(c);
}

int cache_get(struct job_cache *c, const char *ns, const char *name, json_t **job_out)
{
    char key[KEY_MAX];
    json_t *job;
    int rc = WH_ENOMEM;

    *job_out = NULL;
    if (make_key(key, sizeof(key), ns, name) < 0)
        return WH_ENOTFOUND;
    pthread_rwlock_rdlock(&c->lock);
    job = json_object_get(c->map, key);
    if (job != NULL)
        job = json_deep_copy(job);  /* reads only: safe beside other readers */
    else
        rc = WH_ENOTFOUND;
    pthread_rwlock_unlock(&c->lock);
    if (job == NULL)
        return rc;
    *job_out = job;
    return 0;
}

int cache_put(struct job_cache *c, json_t *job)
{
    char key[KEY_MAX];
    int rc;

    if (!json_is_object(job) || job_key(key, sizeof(key), job) < 0)
        return WH_EINVAL;
    json_incref(job);
    pthread_rwlock_wrlock(&c->lock);
    /* The old Job (if any) loses the map's reference; readers keep their own. */
    rc = json_object_set_new(c->map, key, job);
    pthread_rwlock_unlock(&c->lock);
    return rc == 0 ? 0 : WH_ENOMEM;
}

int cache_remove(struct job_cache *c, const char *ns, const char *name)
{
    char key[KEY_MAX];
    int rc;

    if (make_key(key, sizeof(key), ns, name) < 0)
        return WH_ENOTFOUND;
    pthread_rwlock_wrlock(&c->lock);
    rc = json_object_del(c->map, key);
    pthread_rwlock_unlock(&c->lock);
    return rc == 0 ? 0 : WH_ENOTFOUND;
}

int cache_replace_all(struct job_cache *c, const json_t *items, json_t **removed_out)
{
    json_t *fresh = json_object();
    json_t *old = NULL;
    json_t *removed = NULL;
    const char *key;
    json_t *job;
    size_t i;
    int rc = WH_ENOMEM;

    if (removed_out != NULL)
        *removed_out = NULL;
    if (fresh == NULL)
        return WH_ENOMEM;
    if (!json_is_array(items)) {
        rc = WH_EINVAL;
        goto out;
    }
    /* Build the new map outside the lock: readers are held up only by the swap. */
    json_array_foreach(items, i, job) {
        char k[KEY_MAX];

        if (!json_is_object(job) || job_key(k, sizeof(k), job) < 0)
            continue;  /* not a Job we could ever look up */
        if (json_object_set(fresh, k, job) != 0)
            goto out;
    }
    if (removed_out != NULL) {
        removed = json_array();
        if (removed == NULL)
            goto out;
    }
    pthread_rwlock_wrlock(&c->lock);
    old = c->map;
    c->map = fresh;
    pthread_rwlock_unlock(&c->lock);
    fresh = NULL;  /* now owned by the cache */

    /* The old map is private now: collect what the LIST no longer has. */
    if (removed != NULL) {
        pthread_rwlock_rdlock(&c->lock);
        json_object_foreach(old, key, job) {
            if (json_object_get(c->map, key) == NULL && json_array_append(removed, job) != 0) {
                pthread_rwlock_unlock(&c->lock);
                goto out;
            }
        }
        pthread_rwlock_unlock(&c->lock);
        *removed_out = removed;
        removed = NULL;  /* now owned by the caller */
    }
    rc = 0;
out:
    json_decref(fresh);
    json_decref(old);
    json_decref(removed);
    return rc;
}

json_t *cache_list(struct job_cache *c)
{
    json_t *arr = json_array();
    const char *key;
    json_t *job;

    if (arr == NULL)
        return NULL;
    pthread_rwlock_rdlock(&c->lock);
    json_object_foreach(c->map, key, job) {
        if (json_array_append_new(arr, json_deep_copy(job)) != 0) {
            pthread_rwlock_unlock(&c->lock);
            json_decref(arr);
            return NULL;
        }
    }
    pthread_rwlock_unlock(&c->lock);
    return arr;
}

size_t cache_size(struct job_cache *c)
{
    size_t n;

    pthread_rwlock_rdlock(&c->lock);
    n = json_object_size(c->map);
    pthread_rwlock_unlock(&c->lock);
    return n;
}

bool cache_synced(struct job_cache *c)
{
    return atomic_load(&c->synced);
}

void cache_set_synced(struct job_cache *c, bool synced)
{
    atomic_store(&c->synced, synced);
}
