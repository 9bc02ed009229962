/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cache.c - the Jobs cache: a jansson object "namespace/name" → entry (one
 * struct cached_job per Job: the compact JSON text of the fields its readers
 * use), guarded by a pthread_rwlock (many readers, one writer).
 *
 * Threads: readers (cache_get, cache_list, cache_size) run on MHD workers and
 * reconcile workers and take the read lock; the writer (cache_put, cache_remove,
 * cache_replace_all) is the informer thread and takes the write lock.
 *
 * Why text and not jansson trees: a cached Job is read by one admission at a
 * time and lives for days, so what it costs at rest matters more than what one
 * read costs. A jansson tree costs about 250 bytes per object or array (the
 * hashtable's buckets, the pairs, the mallocs), so even a pruned Job of ten tasks
 * took 15 KiB, 150 MiB for 10,000 Jobs (bench/RESULTS.md: target 64 MiB); its compact
 * text takes a few hundred bytes. A reader parses its own private tree from the
 * text (jsonr_loadb of a pruned Job: a few microseconds, and nothing shared, so
 * no jansson reference count is ever touched by two threads); the admission path
 * reads through cache_get_read, which keeps each thread's tree of the last Jobs it
 * read, per entry, so a Job's pods cost one parse per thread and version. An entry is
 * immutable; an update swaps in another. Each entry is reference-counted in a C11
 * atomic (the map's reference plus one per reader parsing it outside the lock);
 * the last release frees it, its acq_rel decrement ordering every reader's reads
 * before the free. The map holds each entry as a json_integer of its address
 * (jansson is the string-keyed hashtable here; the entry is released by hand when
 * its key goes). The synced flag is an atomic_bool, read without the lock.
 *
 * Each entry also holds the Job's diagnostics (plugins/diagnose.h), computed once
 * from the full Job when the entry is made (the kept text lacks the task
 * templates many diagnostics read), so pod admission tells them (D16) at the
 * cost of a copy, not of diagnose_job, per pod: once per Job resourceVersion.
 *
 * A namespaced cache (cache_create_namespaced: --namespaces) holds the Jobs of
 * its namespaces only and has one writer per namespace (one informer each), so
 * the writers are serialised by write_mu: cache_replace_namespace builds the new
 * map from the current one outside the rwlock (readers are not held up while it
 * copies), and no other writer may change the map meanwhile. Each namespace's
 * first LIST is marked (ns_synced, under write_mu); the cache is synced when
 * every namespace is.
 */
#include "controller/cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonobj.h"
#include "base/jsonr.h"
#include "plugins/diagnose.h"

#define KEY_MAX 512 /* namespace (63) + "/" + name (253) fit with room to spare */

struct cache {
    pthread_rwlock_t lock;
    json_t *map;        /* owned; "ns/name" → entry address (one entry ref each); under lock */
    atomic_bool synced; /* the first LIST has completed (of every namespace) */
    pthread_mutex_t write_mu; /* serialises the writers (one informer per namespace) */
    char **namespaces;        /* owned; the namespaces served, NULL: every namespace */
    size_t nnamespaces;       /* entries of namespaces (and of ns_synced) */
    bool *ns_synced;          /* owned; namespace k's first LIST done; under write_mu */
    size_t nsynced;           /* true entries of ns_synced; under write_mu */
};

struct cached_job {
    atomic_size_t refs; /* the map's (while it is in one) + one per reader */
    char *diag;         /* owned: "uid\0resourceVersion\0" + diagnose_pack's block */
    size_t diag_len;    /* bytes of diag */
    size_t len;         /* of text, without a terminator */
    char text[];        /* compact JSON of the kept fields; immutable */
};

/*
 * What the cache keeps of a Job: a member list per object, NULL-key terminated;
 * only == NULL keeps the member's whole value, otherwise the member is filtered by
 * only (an array: each of its elements). The readers of cached Jobs are the
 * plugins (plugins/job.h: metadata name, namespace, uid; spec.tasks[].name,
 * .replicas, .template.spec.hostname and .subdomain; registry.c: spec.plugins),
 * mutate.c and lookup.c (metadata.uid), reconcile.c (metadata, status.state.phase)
 * and the informer (metadata, apiVersion, kind, resourceVersion). Pods are
 * rendered from task templates only by jobpods.c, from a Job read from the API or
 * a file, never from the cache. A new reader of a Job field adds it here.
 */
struct keep {
    const char *key;
    const struct keep *only;
};

static const struct keep keep_template_spec[] = {
    {"hostname", NULL}, {"subdomain", NULL}, {NULL, NULL}};
static const struct keep keep_template[] = {{"spec", keep_template_spec}, {NULL, NULL}};
static const struct keep keep_task[] = {
    {"name", NULL},
    {"replicas", NULL},
    {"template", keep_template},
    {NULL, NULL},
};
static const struct keep keep_spec[] = {{"plugins", NULL}, {"tasks", keep_task}, {NULL, NULL}};
static const struct keep keep_metadata[] = {
    {"name", NULL}, {"namespace", NULL}, {"uid", NULL}, {"resourceVersion", NULL}, {NULL, NULL},
};
static const struct keep keep_state[] = {{"phase", NULL}, {NULL, NULL}};
static const struct keep keep_status[] = {{"state", keep_state}, {NULL, NULL}};
static const struct keep keep_job[] = {
    {"apiVersion", NULL}, {"kind", NULL},          {"metadata", keep_metadata},
    {"spec", keep_spec},  {"status", keep_status}, {NULL, NULL},
};

/*
 * A new value with only the members of v that only names (see struct keep).
 * A filtered member left empty is dropped (nothing under it is read); a value of
 * another type than expected is kept as it is, so readers see what they would
 * have seen in the full Job. @return new reference, NULL on ENOMEM.
 */
static json_t *copy_kept(const json_t *v, const struct keep *only)
{
    json_t *c;

    if (only == NULL || (!json_is_object(v) && !json_is_array(v)))
        return json_deep_copy(v);
    if (json_is_array(v)) {
        size_t i;
        const json_t *m;

        c = json_array();
        if (c == NULL)
            return NULL;
        json_array_foreach(v, i, m) {
            if (json_array_append_new(c, copy_kept(m, only)) < 0) {
                json_decref(c);
                return NULL;
            }
        }
        return c;
    }
    c = json_object();
    if (c == NULL)
        return NULL;
    for (const struct keep *k = only; k->key != NULL; k++) {
        const json_t *m = json_member(v, k->key);
        json_t *mc;

        if (m == NULL)
            continue;
        mc = copy_kept(m, k->only);
        if (mc == NULL) {
            json_decref(c);
            return NULL;
        }
        if (k->only != NULL && json_is_object(mc) && json_object_size(mc) == 0) {
            json_decref(mc);
            continue;
        }
        if (json_object_set_new_nocheck(c, k->key, mc) < 0) {
            json_decref(c);
            return NULL;
        }
    }
    return c;
}

static const char *meta_string(const json_t *job, const char *key)
{
    const char *v = json_string_value(json_member(json_member(job, "metadata"), key));

    return v != NULL ? v : "";
}

/*
 * e->diag: the version of job and its diagnostics (diagnose_job on the full Job).
 * @return 0 or WH_ENOMEM.
 */
static int entry_diagnose(struct cached_job *e, const json_t *job)
{
    const char *uid = meta_string(job, "uid");
    const char *rv = meta_string(job, "resourceVersion");
    size_t head = strlen(uid) + 1 + strlen(rv) + 1;
    struct diagnostics *d = malloc(sizeof(*d)); /* 17 KiB: not on the stack */
    char *packed = NULL;
    size_t plen = 0;
    int rc = WH_ENOMEM;

    if (d == NULL || diagnose_job(job, d) < 0 || diagnose_pack(d, &packed, &plen) < 0)
        goto out;
    e->diag = malloc(head + plen);
    if (e->diag == NULL)
        goto out;
    memcpy(e->diag, uid, strlen(uid) + 1);
    memcpy(e->diag + strlen(uid) + 1, rv, strlen(rv) + 1);
    if (plen > 0)
        memcpy(e->diag + head, packed, plen);
    e->diag_len = head + plen;
    rc = 0;
out:
    free(packed);
    free(d);
    return rc;
}

/* A new entry with one reference: the kept fields of job as compact text. NULL on ENOMEM. */
static struct cached_job *entry_new(const json_t *job)
{
    json_t *kept = copy_kept(job, keep_job);
    struct cached_job *e = NULL;
    size_t len;

    if (kept == NULL)
        return NULL;
    len = json_dumpb(kept, NULL, 0, JSON_COMPACT);
    if (len > 0)
        e = malloc(sizeof(*e) + len);
    if (e != NULL) {
        e->len = json_dumpb(kept, e->text, len, JSON_COMPACT);
        e->diag = NULL;
        e->diag_len = 0;
        atomic_init(&e->refs, 1);
        if (entry_diagnose(e, job) < 0) {
            free(e);
            e = NULL;
        }
    }
    json_decref(kept);
    return e;
}

/* Give back a reference to e (NULL: nothing to do); the last one frees it. */
static void entry_release(struct cached_job *e)
{
    if (e == NULL)
        return;
    /* acq_rel: every reader's reads happen before the free by the last one. */
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) {
        free(e->diag);
        free(e);
    }
}

/* A private tree of e's Job: new reference, NULL on ENOMEM (the text is the cache's own). */
static json_t *entry_job(const struct cached_job *e)
{
    /* As json_loadb with JSON_ALLOW_NUL (the text may carry a \u0000 the API sent),
     * on the admission path's fast reader. */
    return jsonr_loadb(e->text, e->len, NULL);
}

/* The entry a map value stands for; NULL for NULL. */
static struct cached_job *entry_of(const json_t *v)
{
    return v != NULL ? (struct cached_job *)(uintptr_t)json_integer_value(v) : NULL;
}

/* The entry stored under key in map, NULL when none. */
static struct cached_job *map_get(const json_t *map, const char *key)
{
    return entry_of(json_member(map, key));
}

/*
 * Store e under key (the map takes e's reference). *old_out gets the entry it
 * replaces (its reference now the caller's), NULL when none.
 * @return 0, or WH_ENOMEM (map unchanged, e still the caller's).
 */
static int map_set(json_t *map, const char *key, struct cached_job *e, struct cached_job **old_out)
{
    struct cached_job *old = map_get(map, key);

    *old_out = NULL;
    if (json_object_set_new(map, key, json_integer((json_int_t)(uintptr_t)e)) < 0)
        return WH_ENOMEM;
    *old_out = old;
    return 0;
}

/* Release every entry of map, then map. */
static void map_free(json_t *map)
{
    const char *key;
    json_t *v;

    json_object_foreach(map, key, v) {
        entry_release(entry_of(v));
    }
    json_decref(map);
}

/* "ns/name" into buf. @return 0, or WH_EINVAL when a part is missing or too long. */
static int make_key(char *buf, size_t len, const char *ns, const char *name)
{
    size_t nl;
    size_t ml;

    if (ns == NULL || name == NULL || ns[0] == '\0' || name[0] == '\0')
        return WH_EINVAL;
    nl = strlen(ns);
    ml = strlen(name);
    if (nl + 1 + ml >= len)
        return WH_EINVAL;
    memcpy(buf, ns, nl); /* "ns/name", as snprintf's "%s/%s" at a tenth of the cost */
    buf[nl] = '/';
    memcpy(buf + nl + 1, name, ml + 1);
    return 0;
}

/* The key of a Job from its metadata. */
static int job_key(char *buf, size_t len, const json_t *job)
{
    const json_t *meta = json_member(job, "metadata");

    return make_key(buf, len, json_string_value(json_member(meta, "namespace")),
                    json_string_value(json_member(meta, "name")));
}

struct cache *cache_create(void)
{
    return cache_create_namespaced(NULL, 0);
}

/* The namespaces and their synced marks, copied (n > 0). @return 0 or WH_ENOMEM. */
static int copy_namespaces(struct cache *c, const char *const *namespaces, size_t n)
{
    c->namespaces = calloc(n, sizeof(*c->namespaces));
    c->ns_synced = calloc(n, sizeof(*c->ns_synced));
    if (c->namespaces == NULL || c->ns_synced == NULL)
        return WH_ENOMEM;
    c->nnamespaces = n;
    for (size_t k = 0; k < n; k++) {
        c->namespaces[k] = strdup(namespaces[k]);
        if (c->namespaces[k] == NULL)
            return WH_ENOMEM;
    }
    return 0;
}

/* Free what copy_namespaces made (any part of it). */
static void free_namespaces(struct cache *c)
{
    for (size_t k = 0; c->namespaces != NULL && k < c->nnamespaces; k++)
        free(c->namespaces[k]);
    free(c->namespaces);
    free(c->ns_synced);
}

struct cache *cache_create_namespaced(const char *const *namespaces, size_t n)
{
    struct cache *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    if (n > 0 && copy_namespaces(c, namespaces, n) < 0) {
        free_namespaces(c);
        free(c);
        return NULL;
    }
    c->map = json_object();
    if (c->map == NULL || pthread_rwlock_init(&c->lock, NULL) != 0) {
        json_decref(c->map);
        free_namespaces(c);
        free(c);
        return NULL;
    }
    if (pthread_mutex_init(&c->write_mu, NULL) != 0) {
        pthread_rwlock_destroy(&c->lock);
        json_decref(c->map);
        free_namespaces(c);
        free(c);
        return NULL;
    }
    atomic_init(&c->synced, false);
    return c;
}

void cache_destroy(struct cache *c)
{
    if (c == NULL)
        return;
    pthread_mutex_destroy(&c->write_mu);
    pthread_rwlock_destroy(&c->lock);
    map_free(c->map);
    free_namespaces(c);
    free(c);
}

/* The index of ns among c's namespaces, or -1 (also for a cache of every namespace). */
static long namespace_index(const struct cache *c, const char *ns)
{
    for (size_t k = 0; ns != NULL && k < c->nnamespaces; k++)
        if (strcmp(c->namespaces[k], ns) == 0)
            return (long)k;
    return -1;
}

bool cache_serves(const struct cache *c, const char *ns)
{
    return c->nnamespaces == 0 || namespace_index(c, ns) >= 0;
}

/* Whether the key "ns/name" is one of namespace ns. */
static bool key_in_namespace(const char *key, const char *ns)
{
    size_t n = strlen(ns);

    return strncmp(key, ns, n) == 0 && key[n] == '/';
}

/*
 * The entry of ns/name with a reference of the caller's (entry_release it), taken
 * under the read lock; NULL when there is none (or ns/name makes no key).
 */
static struct cached_job *entry_acquire(struct cache *c, const char *ns, const char *name)
{
    char key[KEY_MAX];
    struct cached_job *e;

    if (make_key(key, sizeof(key), ns, name) < 0)
        return NULL;
    pthread_rwlock_rdlock(&c->lock);
    e = map_get(c->map, key);
    /* Under the read lock the map's reference keeps e alive: a relaxed increment will do. */
    if (e != NULL)
        atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    pthread_rwlock_unlock(&c->lock);
    return e;
}

int cache_get(struct cache *c, const char *ns, const char *name, json_t **job_out)
{
    struct cached_job *e = entry_acquire(c, ns, name);

    *job_out = NULL;
    if (e == NULL)
        return WH_ENOTFOUND;
    /* Parsed outside the lock: the informer's writes wait for no reader's parse. */
    *job_out = entry_job(e);
    entry_release(e);
    return *job_out != NULL ? 0 : WH_ENOMEM;
}

/*
 * Each reading thread's own trees of the entries it read last (cache_get_read): an
 * entry is immutable and held here by a reference, so the same pointer is the same
 * Job version, and the tree parsed from it once serves every later read of that
 * version on this thread. No tree is ever seen by another thread.
 */
/* A tree costs some twenty times its Job's kept text (a 700-byte Job, ~15 KiB): the
 * trees a thread keeps are bounded by their text, so 64 MHD threads keep at most
 * ~20 MiB whatever the Jobs (a 700-byte Job: 16 fit). What readers derive beside a tree
 * (cache_read_slot) is bounded by the Job too: svc's two env entries per task (~1 KiB)
 * for a task's ~100 bytes of kept text at least, so at most about as much again. */
#define MEMO_SLOTS      16          /* Jobs a thread keeps trees of; the oldest gives way */
#define MEMO_TEXT_MAX   (8 * 1024)  /* a Job with more kept text is parsed per read */
#define MEMO_TEXT_TOTAL (16 * 1024) /* the kept text of a thread's Jobs, all together */

struct memo {
    struct cached_job *entry[MEMO_SLOTS];       /* one reference each; NULL: a free slot */
    json_t *tree[MEMO_SLOTS];                   /* the thread's tree of entry[k] */
    json_t *slot[MEMO_SLOTS][CACHE_READ_SLOTS]; /* what readers derived from it */
    size_t next;                                /* the slot the next new entry takes */
    size_t text;                                /* the kept text of the entries held */
};

/* Slot k given up: its tree and its entry's reference go. */
static void memo_drop(struct memo *m, size_t k)
{
    if (m->entry[k] != NULL)
        m->text -= m->entry[k]->len;
    for (size_t j = 0; j < CACHE_READ_SLOTS; j++) {
        json_decref(m->slot[k][j]);
        m->slot[k][j] = NULL;
    }
    json_decref(m->tree[k]);
    entry_release(m->entry[k]);
    m->tree[k] = NULL;
    m->entry[k] = NULL;
}

static pthread_key_t memo_key;
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;
static bool memo_key_made;

/* At the thread's exit (pthread_key_create's destructor): its trees and references go. */
static void memo_free(void *v)
{
    struct memo *m = v;

    for (size_t k = 0; k < MEMO_SLOTS; k++)
        memo_drop(m, k);
    free(m);
}

static void memo_key_make(void)
{
    memo_key_made = pthread_key_create(&memo_key, memo_free) == 0;
}

/* This thread's memo, made on first use; NULL when none can be (each read then parses). */
static struct memo *thread_memo(void)
{
    struct memo *m;

    (void)pthread_once(&memo_once, memo_key_make);
    if (!memo_key_made)
        return NULL;
    m = pthread_getspecific(memo_key);
    if (m == NULL && (m = calloc(1, sizeof(*m))) != NULL && pthread_setspecific(memo_key, m) != 0) {
        free(m);
        m = NULL;
    }
    return m;
}

int cache_get_read(struct cache *c, const char *ns, const char *name, json_t **job_out)
{
    struct cached_job *e = entry_acquire(c, ns, name);
    struct memo *m;
    json_t *tree;
    size_t k;

    *job_out = NULL;
    if (e == NULL)
        return WH_ENOTFOUND;
    m = e->len <= MEMO_TEXT_MAX ? thread_memo() : NULL;
    for (k = 0; m != NULL && k < MEMO_SLOTS; k++) {
        if (m->entry[k] == e) {
            entry_release(e); /* the memo holds a reference of its own */
            *job_out = json_incref(m->tree[k]);
            return 0;
        }
    }
    tree = entry_job(e);
    if (tree == NULL) {
        entry_release(e);
        return WH_ENOMEM;
    }
    if (m == NULL) {
        entry_release(e);
    } else {
        k = m->next;
        memo_drop(m, k);
        /* the oldest after it give way until the text fits (e->len alone does) */
        for (size_t j = (k + 1) % MEMO_SLOTS; m->text + e->len > MEMO_TEXT_TOTAL;
             j = (j + 1) % MEMO_SLOTS)
            memo_drop(m, j);
        m->next = (k + 1) % MEMO_SLOTS;
        m->entry[k] = e; /* entry_acquire's reference, now the memo's */
        m->tree[k] = json_incref(tree);
        m->text += e->len;
    }
    *job_out = tree;
    return 0;
}

json_t **cache_read_slot(const json_t *job, size_t k)
{
    struct memo *m;

    if (job == NULL || k >= CACHE_READ_SLOTS)
        return NULL;
    (void)pthread_once(&memo_once, memo_key_make);
    if (!memo_key_made || (m = pthread_getspecific(memo_key)) == NULL)
        return NULL;
    for (size_t i = 0; i < MEMO_SLOTS; i++)
        if (m->entry[i] != NULL && m->tree[i] == job)
            return &m->slot[i][k];
    return NULL;
}

int cache_get_diagnostics(struct cache *c, const char *ns, const char *name, const char *uid,
                          const char *rv, struct diagnostics *out)
{
    struct cached_job *e;
    int rc = WH_ENOTFOUND;

    if (out != NULL)
        diagnose_init(out);
    e = entry_acquire(c, ns, name);
    if (e == NULL)
        return WH_ENOTFOUND;
    if (e->diag != NULL) {
        const char *e_uid = e->diag;
        const char *e_rv = e_uid + strlen(e_uid) + 1;
        size_t head = (size_t)(e_rv + strlen(e_rv) + 1 - e->diag);

        /* No block after the version: diagnose_pack found nothing (no entry, none dropped). */
        if (strcmp(e_uid, uid) != 0 || strcmp(e_rv, rv) != 0)
            rc = WH_ENOTFOUND;
        else if (out == NULL)
            rc = e->diag_len > head ? 0 : WH_DECLINED;
        else {
            diagnose_unpack(e->diag + head, e->diag_len - head, out);
            rc = 0;
        }
    }
    entry_release(e);
    return rc;
}

json_t *cache_kept_job(const json_t *job)
{
    return copy_kept(job, keep_job);
}

int cache_put(struct cache *c, json_t *job)
{
    char key[KEY_MAX];
    struct cached_job *e;
    struct cached_job *old = NULL;
    int rc;

    if (!json_is_object(job) || job_key(key, sizeof(key), job) < 0)
        return WH_EINVAL;
    if (!cache_serves(c, json_string_value(json_member(json_member(job, "metadata"), "namespace"))))
        return WH_EINVAL;
    e = entry_new(job); /* before the lock: readers wait only for the swap */
    if (e == NULL)
        return WH_ENOMEM;
    pthread_mutex_lock(&c->write_mu);
    pthread_rwlock_wrlock(&c->lock);
    rc = map_set(c->map, key, e, &old);
    pthread_rwlock_unlock(&c->lock);
    pthread_mutex_unlock(&c->write_mu);
    if (rc < 0) {
        entry_release(e);
        return WH_ENOMEM;
    }
    /* The old entry (if any) loses the map's reference; readers parsing it keep theirs. */
    entry_release(old);
    return 0;
}

int cache_remove(struct cache *c, const char *ns, const char *name)
{
    char key[KEY_MAX];
    struct cached_job *old;

    if (make_key(key, sizeof(key), ns, name) < 0)
        return WH_ENOTFOUND;
    pthread_mutex_lock(&c->write_mu);
    pthread_rwlock_wrlock(&c->lock);
    old = map_get(c->map, key);
    if (old != NULL)
        json_object_del(c->map, key);
    pthread_rwlock_unlock(&c->lock);
    pthread_mutex_unlock(&c->write_mu);
    if (old == NULL)
        return WH_ENOTFOUND;
    entry_release(old);
    return 0;
}

struct cache_batch {
    json_t *map; /* owned; "ns/name" → entry address, as struct cache's map */
};

struct cache_batch *cache_batch_create(void)
{
    struct cache_batch *b = malloc(sizeof(*b));

    if (b == NULL)
        return NULL;
    b->map = json_object();
    if (b->map == NULL) {
        free(b);
        return NULL;
    }
    return b;
}

int cache_batch_add(struct cache_batch *b, const json_t *job)
{
    char key[KEY_MAX];
    struct cached_job *e;
    struct cached_job *dup = NULL;

    if (!json_is_object(job) || job_key(key, sizeof(key), job) < 0)
        return WH_EINVAL;
    e = entry_new(job);
    if (e == NULL)
        return WH_ENOMEM;
    if (map_set(b->map, key, e, &dup) < 0) {
        entry_release(e);
        return WH_ENOMEM;
    }
    entry_release(dup); /* the same key twice: the last one wins */
    return 0;
}

void cache_batch_destroy(struct cache_batch *b)
{
    if (b == NULL)
        return;
    map_free(b->map);
    free(b);
}

/* metadata.uid of a parsed Job, "" when absent. */
static const char *uid_of(const json_t *job)
{
    const char *uid = json_string_value(json_member(json_member(job, "metadata"), "uid"));

    return uid != NULL ? uid : "";
}

/*
 * on_change(old, new) with private trees of the entries (NULL stays NULL). When
 * both are set but their uids differ, the Job was deleted and created again under
 * its name while nobody watched: that is on_change(old, NULL), then
 * on_change(NULL, new), so the old Job gets its delete and the new one its add.
 * @return 0 or WH_ENOMEM.
 */
static int report(cache_change_fn on_change, void *userdata, const struct cached_job *old,
                  const struct cached_job *e)
{
    json_t *old_job = old != NULL ? entry_job(old) : NULL;
    json_t *job = e != NULL ? entry_job(e) : NULL;
    int rc = WH_ENOMEM;

    if ((old == NULL || old_job != NULL) && (e == NULL || job != NULL)) {
        if (old_job != NULL && job != NULL && strcmp(uid_of(old_job), uid_of(job)) != 0) {
            on_change(userdata, old_job, NULL);
            on_change(userdata, NULL, job);
        } else {
            on_change(userdata, old_job, job);
        }
        rc = 0;
    }
    json_decref(old_job);
    json_decref(job);
    return rc;
}

/*
 * The differences from old to fresh (maps of entries) to on_change (NULL: none), as
 * cache_replace_all describes. Both maps must be private to the caller or changed
 * by no other thread. @return 0 or WH_ENOMEM (the rest is not reported).
 */
static int report_changes(const json_t *old, const json_t *fresh, cache_change_fn on_change,
                          void *userdata)
{
    const char *key;
    json_t *v;
    int rc = 0;

    if (on_change == NULL)
        return 0;
    json_object_foreach((json_t *)old, key, v) {
        if (rc == 0 && json_member(fresh, key) == NULL)
            rc = report(on_change, userdata, entry_of(v), NULL);
    }
    json_object_foreach((json_t *)fresh, key, v) {
        const struct cached_job *was = map_get(old, key);
        const struct cached_job *e = entry_of(v);

        if (rc != 0
            || (was != NULL && was->len == e->len && memcmp(was->text, e->text, e->len) == 0))
            continue;
        rc = report(on_change, userdata, was, e);
    }
    return rc;
}

int cache_replace_all(struct cache *c, struct cache_batch *b, cache_change_fn on_change,
                      void *userdata)
{
    json_t *empty = json_object();
    json_t *old;
    json_t *fresh;
    int rc;

    if (empty == NULL)
        return WH_ENOMEM;
    fresh = b->map;
    b->map = empty;
    pthread_mutex_lock(&c->write_mu);
    pthread_rwlock_wrlock(&c->lock);
    old = c->map;
    c->map = fresh;
    pthread_rwlock_unlock(&c->lock);
    pthread_mutex_unlock(&c->write_mu);

    /*
     * The old map is private now, and fresh changes only by this thread (the one
     * writer): both are read without the lock, so the handlers run outside it.
     */
    rc = report_changes(old, fresh, on_change, userdata);
    map_free(old);
    return rc;
}

/* Store e under key with a reference of its own. @return 0 or WH_ENOMEM (nothing kept). */
static int map_add_ref(json_t *map, const char *key, struct cached_job *e)
{
    /* The caller holds a reference (a map's, under write_mu): a relaxed increment will do. */
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    if (json_object_set_new(map, key, json_integer((json_int_t)(uintptr_t)e)) < 0) {
        entry_release(e);
        return WH_ENOMEM;
    }
    return 0;
}

int cache_replace_namespace(struct cache *c, const char *ns, struct cache_batch *b,
                            cache_change_fn on_change, void *userdata)
{
    json_t *fresh = json_object(); /* the whole new map */
    json_t *was = json_object();   /* ns's entries before (private) */
    json_t *mine = json_object();  /* ns's entries now (private) */
    json_t *empty = json_object();
    json_t *old = NULL;
    const char *key;
    json_t *v;
    int rc = WH_ENOMEM;

    if (ns == NULL || ns[0] == '\0' || !cache_serves(c, ns)) {
        json_decref(fresh);
        json_decref(was);
        json_decref(mine);
        json_decref(empty);
        return WH_EINVAL;
    }
    pthread_mutex_lock(&c->write_mu);
    if (fresh == NULL || was == NULL || mine == NULL || empty == NULL)
        goto unlock;
    /* Writers wait on write_mu, so c->map is read here without the rwlock. */
    json_object_foreach(c->map, key, v) {
        if (map_add_ref(key_in_namespace(key, ns) ? was : fresh, key, entry_of(v)) < 0)
            goto unlock;
    }
    json_object_foreach(b->map, key, v) {
        /* Another namespace's Job in ns's LIST (a misbehaving server): not kept. */
        if (!key_in_namespace(key, ns))
            continue;
        if (map_add_ref(fresh, key, entry_of(v)) < 0 || map_add_ref(mine, key, entry_of(v)) < 0)
            goto unlock;
    }
    pthread_rwlock_wrlock(&c->lock);
    old = c->map;
    c->map = fresh;
    fresh = NULL; /* now owned by the cache */
    pthread_rwlock_unlock(&c->lock);
    rc = 0;
unlock:
    pthread_mutex_unlock(&c->write_mu);
    map_free(fresh);
    map_free(old);
    if (rc == 0) {
        map_free(b->map);
        b->map = empty;
        empty = NULL;
        rc = report_changes(was, mine, on_change, userdata);
    }
    json_decref(empty);
    map_free(was);
    map_free(mine);
    return rc;
}

json_t *cache_list(struct cache *c)
{
    json_t *arr = json_array();
    const char *key;
    json_t *job;

    if (arr == NULL)
        return NULL;
    pthread_rwlock_rdlock(&c->lock);
    json_object_foreach(c->map, key, job) {
        if (json_array_append_new(arr, entry_job(entry_of(job))) != 0) {
            pthread_rwlock_unlock(&c->lock);
            json_decref(arr);
            return NULL;
        }
    }
    pthread_rwlock_unlock(&c->lock);
    return arr;
}

size_t cache_size(struct cache *c)
{
    size_t n;

    pthread_rwlock_rdlock(&c->lock);
    n = json_object_size(c->map);
    pthread_rwlock_unlock(&c->lock);
    return n;
}

bool cache_synced(struct cache *c)
{
    return atomic_load(&c->synced);
}

void cache_set_synced(struct cache *c, bool synced)
{
    atomic_store(&c->synced, synced);
}

void cache_set_namespace_synced(struct cache *c, const char *ns)
{
    long k = namespace_index(c, ns);

    if (k < 0)
        return;
    pthread_mutex_lock(&c->write_mu);
    if (!c->ns_synced[k]) {
        c->ns_synced[k] = true;
        if (++c->nsynced == c->nnamespaces)
            atomic_store(&c->synced, true);
    }
    pthread_mutex_unlock(&c->write_mu);
}
