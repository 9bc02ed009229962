/* SPDX-License-Identifier: Apache-2.0 */
/*
 * strmap.c - the string-keyed hash map of strmap.h.
 *
 * Each entry is one allocation (its key follows it), in a chain of a bucket array
 * whose size is a power of two. Growth rehashes every entry once, with the hash
 * kept in the entry so no key is hashed twice; a failed growth leaves the map as
 * it was and only costs longer chains.
 *
 * Keys may be chosen by a peer (YAML anchor names, namespace/name of a Job), so the
 * hash is keyed: FNV-1a over 64 bits started from a per-map random seed, then
 * murmur3's finaliser so that every bit of the state reaches the bucket bits. A
 * set of keys built to share a bucket for one map does not for another.
 *
 * Threads: none of its own; the caller serialises access.
 */
#include "base/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define STRMAP_MIN_BUCKETS 16u

struct entry {
    struct entry *next; /* bucket chain */
    uint32_t hash;
    void *value;
    char key[]; /* NUL-terminated copy */
};

struct strmap {
    struct entry **buckets;
    size_t nbuckets; /* a power of two */
    size_t size;     /* entries */
    strmap_free_fn free_value;
    uint64_t seed; /* random, per map */
};

static uint32_t hash_of(const struct strmap *m, const char *key)
{
    uint64_t h = 14695981039346656037ull ^ m->seed; /* FNV-1a, 64 bits */

    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    /* murmur3's fmix64 */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (uint32_t)h;
}

/* A seed from the kernel's random source; the clock and the map's address if it fails. */
static uint64_t random_seed(const void *salt)
{
    uint64_t seed = 0;
    struct timespec ts;

    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed))
        return seed;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((uint64_t)ts.tv_nsec << 32) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)salt;
}

struct strmap *strmap_create(strmap_free_fn free_value)
{
    struct strmap *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return NULL;
    m->buckets = calloc(STRMAP_MIN_BUCKETS, sizeof(*m->buckets));
    if (m->buckets == NULL) {
        free(m);
        return NULL;
    }
    m->nbuckets = STRMAP_MIN_BUCKETS;
    m->free_value = free_value;
    m->seed = random_seed(m);
    return m;
}

static void free_entry(const struct strmap *m, struct entry *e)
{
    if (m->free_value != NULL && e->value != NULL)
        m->free_value(e->value);
    free(e);
}

void strmap_clear(struct strmap *m)
{
    for (size_t b = 0; b < m->nbuckets; b++) {
        while (m->buckets[b] != NULL) {
            struct entry *e = m->buckets[b];

            m->buckets[b] = e->next;
            free_entry(m, e);
        }
    }
    m->size = 0;
}

void strmap_destroy(struct strmap *m)
{
    if (m == NULL)
        return;
    strmap_clear(m);
    free(m->buckets);
    free(m);
}

/* The link that points at key's entry (or the NULL ending its chain). */
static struct entry **find_link(const struct strmap *m, const char *key, uint32_t hash)
{
    struct entry **pp = &m->buckets[hash & (m->nbuckets - 1)];

    while (*pp != NULL && ((*pp)->hash != hash || strcmp((*pp)->key, key) != 0))
        pp = &(*pp)->next;
    return pp;
}

/* Double the buckets; on ENOMEM keep the old ones (chains get longer, nothing breaks). */
static void grow(struct strmap *m)
{
    size_t n = m->nbuckets * 2;
    struct entry **nb;

    if (n > SIZE_MAX / sizeof(*nb))
        return;
    nb = calloc(n, sizeof(*nb));
    if (nb == NULL)
        return;
    for (size_t b = 0; b < m->nbuckets; b++) {
        while (m->buckets[b] != NULL) {
            struct entry *e = m->buckets[b];

            m->buckets[b] = e->next;
            e->next = nb[e->hash & (n - 1)];
            nb[e->hash & (n - 1)] = e;
        }
    }
    free(m->buckets);
    m->buckets = nb;
    m->nbuckets = n;
}

int strmap_set(struct strmap *m, const char *key, void *value)
{
    uint32_t hash = hash_of(m, key);
    struct entry **pp = find_link(m, key, hash);
    size_t klen;
    struct entry *e;

    if (*pp != NULL) {
        void *old = (*pp)->value;

        (*pp)->value = value;
        if (old != value && old != NULL && m->free_value != NULL)
            m->free_value(old);
        return 0;
    }
    klen = strlen(key);
    e = malloc(sizeof(*e) + klen + 1);
    if (e == NULL)
        return WH_ENOMEM;
    e->hash = hash;
    e->value = value;
    memcpy(e->key, key, klen + 1);
    e->next = NULL;
    *pp = e; /* the end of its chain */
    m->size++;
    if (m->size > m->nbuckets)
        grow(m);
    return 0;
}

void *strmap_get(const struct strmap *m, const char *key)
{
    struct entry *e = *find_link(m, key, hash_of(m, key));

    return e != NULL ? e->value : NULL;
}

void *strmap_take(struct strmap *m, const char *key)
{
    struct entry **pp = find_link(m, key, hash_of(m, key));
    struct entry *e = *pp;
    void *value;

    if (e == NULL)
        return NULL;
    *pp = e->next;
    m->size--;
    value = e->value;
    free(e);
    return value;
}

int strmap_remove(struct strmap *m, const char *key)
{
    struct entry **pp = find_link(m, key, hash_of(m, key));
    struct entry *e = *pp;

    if (e == NULL)
        return WH_ENOTFOUND;
    *pp = e->next;
    m->size--;
    free_entry(m, e);
    return 0;
}

void strmap_filter(struct strmap *m, bool (*keep)(const char *key, void *value, void *ctx),
                   void *ctx)
{
    for (size_t b = 0; b < m->nbuckets; b++) {
        struct entry **pp = &m->buckets[b];

        while (*pp != NULL) {
            struct entry *e = *pp;

            if (keep(e->key, e->value, ctx)) {
                pp = &e->next;
                continue;
            }
            *pp = e->next;
            m->size--;
            free_entry(m, e);
        }
    }
}

size_t strmap_size(const struct strmap *m)
{
    return m->size;
}

size_t strmap_max_chain(const struct strmap *m)
{
    size_t longest = 0;

    for (size_t b = 0; b < m->nbuckets; b++) {
        size_t n = 0;

        for (const struct entry *e = m->buckets[b]; e != NULL; e = e->next)
            n++;
        if (n > longest)
            longest = n;
    }
    return longest;
}
