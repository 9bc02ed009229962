/*
 * cache.c - the Jobs cache: a jansson object "namespace/name" → lease (one
 * struct cache_lease per cached Job), guarded by a pthread_rwlock (C-STYLE §6.5).
 *
 * Threads: readers (cache_get, cache_lend, cache_list, cache_size) run on MHD
 * workers and reconcile workers and take the read lock; the writer (cache_put,
 * cache_remove, cache_replace_all) is the informer thread and takes the write
 * lock. cache_lease_release runs on any thread, without the lock. Cached Jobs
 * are never modified: an update swaps in another object.
 *
 * Why leases and not jansson references: jansson's reference counts are atomic
 * (checked below), but its inline json_incref/json_decref also read the count
 * non-atomically and the last json_decref frees without an acquire fence, so a
 * json_t whose count several threads change is a data race in C11 terms and
 * ThreadSanitizer reports it. So the jansson counts of a cached Job are never
 * touched while it is shared: the cache stores a deep copy of its own (nobody
 * else holds a reference to it), and sharing is counted in the lease's own C11
 * atomic (the map's reference plus one per lender). Readers get either a lease
 * (cache_lend: an increment, no copy, the admission path) or a deep copy made
 * under the read lock (cache_get, cache_list). The last lease released frees the
 * Job; its acq_rel decrement orders every lender's reads before the free.
 * The map holds each lease as a json_integer of its address (jansson is the
 * string-keyed hashtable here; the lease is released by hand when its key goes).
 * The synced flag is an atomic_bool, read without the lock.
 */
#include "webhook/cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !JANSSON_THREAD_SAFE_REFCOUNT
#error "the Jobs cache shares json_t references between threads: jansson >= 2.11 with atomic refcounts is required"
#endif

#define KEY_MAX 512   /* namespace (63) + "/" + name (253) fit with room to spare */

struct job_cache {
    pthread_rwlock_t lock;
    json_t *map;            /* owned; "ns/name" → lease address (one lease ref each); under lock */
    atomic_bool synced;     /* the first LIST has completed */
};

struct cache_lease {
    atomic_size_t refs;     /* the map's (while it is in one) + one per lender */
    json_t *job;            /* owned; the only reference; immutable while shared */
};

/* Delete every member of obj whose key is not in keep (NULL-terminated). */
static void keep_only(json_t *obj, const char *const *keep)
{
    const char *key;
    json_t *v;
    void *tmp;

    json_object_foreach_safe(obj, tmp, key, v) {
        size_t k = 0;

        while (keep[k] != NULL && strcmp(keep[k], key) != 0)
            k++;
        if (keep[k] == NULL)
            json_object_del(obj, key);
    }
}

/*
 * The cache's own copy of a Job, without what no reader of the cache looks at.
 * The readers are the plugins (through plugins/jobutil.h: metadata name,
 * namespace, uid; spec.tasks[].name, .replicas, .template.spec.hostname and
 * .subdomain; registry.c: spec.plugins), mutate.c and lookup.c (metadata.uid),
 * reconcile.c (metadata, status.state.phase) and the informer (metadata,
 * resourceVersion). Pods are rendered from task templates only by jobpods.c,
 * from a Job read from the API or a file, never from the cache. So the copy
 * drops what makes most of a Job's size and is read by none of them:
 *  - in each spec.tasks[].template, everything but spec.hostname and
 *    spec.subdomain (the pod template: containers, volumes, metadata, ...);
 *  - metadata.managedFields and the kubectl last-applied-configuration
 *    annotation (a copy of the whole Job as text).
 * Anything else is kept as it is, malformed or not, so readers see what they
 * would have seen in the full Job. @return new reference, NULL on ENOMEM.
 */
static json_t *job_copy_for_cache(const json_t *job)
{
    static const char *const template_keep[] = {"spec", NULL};
    static const char *const spec_keep[] = {"hostname", "subdomain", NULL};
    json_t *copy = json_deep_copy(job);
    json_t *meta = json_object_get(copy, "metadata");
    const json_t *tasks = json_object_get(json_object_get(copy, "spec"), "tasks");
    json_t *task;
    size_t i;

    if (copy == NULL)
        return NULL;
    json_object_del(meta, "managedFields");
    json_object_del(json_object_get(meta, "annotations"),
                    "kubectl.kubernetes.io/last-applied-configuration");
    json_array_foreach(tasks, i, task) {
        json_t *tmpl = json_object_get(task, "template");

        if (!json_is_object(tmpl))
            continue;
        keep_only(tmpl, template_keep);
        if (json_is_object(json_object_get(tmpl, "spec")))
            keep_only(json_object_get(tmpl, "spec"), spec_keep);
    }
    return copy;
}

/* A lease with one reference over job_new (taken). NULL on ENOMEM (job_new released). */
static struct cache_lease *lease_new(json_t *job_new)
{
    struct cache_lease *l;

    if (job_new == NULL)
        return NULL;
    l = malloc(sizeof(*l));
    if (l == NULL) {
        json_decref(job_new);
        return NULL;
    }
    atomic_init(&l->refs, 1);
    l->job = job_new;
    return l;
}

/* The lease a map value stands for; NULL for NULL. */
static struct cache_lease *lease_of(const json_t *v)
{
    return v != NULL ? (struct cache_lease *)(uintptr_t)json_integer_value(v) : NULL;
}

/* The lease stored under key in map, NULL when none. */
static struct cache_lease *map_get(const json_t *map, const char *key)
{
    return lease_of(json_object_get(map, key));
}

/*
 * Store l under key (the map takes l's reference). *old_out gets the lease it
 * replaces (its reference now the caller's), NULL when none.
 * @return 0, or WH_ENOMEM (map unchanged, l still the caller's).
 */
static int map_set(json_t *map, const char *key, struct cache_lease *l,
                   struct cache_lease **old_out)
{
    struct cache_lease *old = map_get(map, key);

    *old_out = NULL;
    if (json_object_set_new(map, key, json_integer((json_int_t)(uintptr_t)l)) < 0)
        return WH_ENOMEM;
    *old_out = old;
    return 0;
}

/* Release every lease of map, then map. */
static void map_free(json_t *map)
{
    const char *key;
    json_t *v;

    json_object_foreach(map, key, v) {
        cache_lease_release(lease_of(v));
    }
    json_decref(map);
}

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
    map_free(c->map);
    free(c);
}

int cache_get(struct job_cache *c, const char *ns, const char *name, json_t **job_out)
{
    char key[KEY_MAX];
    struct cache_lease *l;
    json_t *job = NULL;
    int rc = WH_ENOMEM;

    *job_out = NULL;
    if (make_key(key, sizeof(key), ns, name) < 0)
        return WH_ENOTFOUND;
    pthread_rwlock_rdlock(&c->lock);
    l = map_get(c->map, key);
    if (l != NULL)
        job = json_deep_copy(l->job);  /* reads only: safe beside other readers */
    else
        rc = WH_ENOTFOUND;
    pthread_rwlock_unlock(&c->lock);
    if (job == NULL)
        return rc;
    *job_out = job;
    return 0;
}

int cache_lend(struct job_cache *c, const char *ns, const char *name,
               struct cache_lease **lease_out)
{
    char key[KEY_MAX];
    struct cache_lease *l;

    *lease_out = NULL;
    if (make_key(key, sizeof(key), ns, name) < 0)
        return WH_ENOTFOUND;
    pthread_rwlock_rdlock(&c->lock);
    l = map_get(c->map, key);
    /* Under the read lock the map's reference keeps l alive: a relaxed increment will do. */
    if (l != NULL)
        atomic_fetch_add_explicit(&l->refs, 1, memory_order_relaxed);
    pthread_rwlock_unlock(&c->lock);
    if (l == NULL)
        return WH_ENOTFOUND;
    *lease_out = l;
    return 0;
}

struct cache_lease *cache_lease_wrap(json_t *job_new)
{
    return lease_new(job_new);
}

const json_t *cache_lease_job(const struct cache_lease *l)
{
    return l->job;
}

void cache_lease_release(struct cache_lease *l)
{
    if (l == NULL)
        return;
    /* acq_rel: every holder's reads happen before the free by the last one. */
    if (atomic_fetch_sub_explicit(&l->refs, 1, memory_order_acq_rel) != 1)
        return;
    json_decref(l->job);
    free(l);
}

int cache_put(struct job_cache *c, json_t *job)
{
    char key[KEY_MAX];
    struct cache_lease *l;
    struct cache_lease *old = NULL;
    int rc;

    if (!json_is_object(job) || job_key(key, sizeof(key), job) < 0)
        return WH_EINVAL;
    /* The cache's own (pruned) copy, made before the lock: nobody else ever holds a reference to it. */
    l = lease_new(job_copy_for_cache(job));
    if (l == NULL)
        return WH_ENOMEM;
    pthread_rwlock_wrlock(&c->lock);
    rc = map_set(c->map, key, l, &old);
    pthread_rwlock_unlock(&c->lock);
    if (rc < 0) {
        cache_lease_release(l);
        return WH_ENOMEM;
    }
    /* The old Job (if any) loses the map's reference; lenders keep theirs. */
    cache_lease_release(old);
    return 0;
}

int cache_remove(struct job_cache *c, const char *ns, const char *name)
{
    char key[KEY_MAX];
    struct cache_lease *old;

    if (make_key(key, sizeof(key), ns, name) < 0)
        return WH_ENOTFOUND;
    pthread_rwlock_wrlock(&c->lock);
    old = map_get(c->map, key);
    if (old != NULL)
        json_object_del(c->map, key);
    pthread_rwlock_unlock(&c->lock);
    if (old == NULL)
        return WH_ENOTFOUND;
    cache_lease_release(old);
    return 0;
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
        struct cache_lease *l;
        struct cache_lease *dup = NULL;

        if (!json_is_object(job) || job_key(k, sizeof(k), job) < 0)
            continue;  /* not a Job we could ever look up */
        l = lease_new(job_copy_for_cache(job));
        if (l == NULL)
            goto out;
        if (map_set(fresh, k, l, &dup) < 0) {
            cache_lease_release(l);
            goto out;
        }
        cache_lease_release(dup);  /* the same key twice: the last one wins */
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
            /* A copy: the leased Job may still be read by lenders on other threads. */
            if (json_object_get(c->map, key) == NULL
                && json_array_append_new(removed,
                                         json_deep_copy(lease_of(job)->job)) != 0) {
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
    if (fresh != NULL)
        map_free(fresh);
    if (old != NULL)
        map_free(old);
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
        if (json_array_append_new(arr, json_deep_copy(lease_of(job)->job)) != 0) {
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
