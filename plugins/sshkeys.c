/*
 * sshkeys.c - the per-uid store of the `ssh` plugin's key pairs (sshkeys.h;
 * docs/plugins.md §4.3, D11); the pairs themselves are made by certs/sshkey.c.
 *
 * A chained hash map uid → entry under one mutex and one condition variable. An
 * entry is either ready (keys set) or a placeholder (generating) that the
 * generating thread fills; waiters sleep on the condition variable. The private
 * key text is wiped (sshkey_free_secret) before it is freed.
 *
 * Threads: the store functions lock (see the header).
 */
#include "plugins/sshkeys.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "certs/sshkey.h"

#define STORE_BUCKETS 1024u

struct key_entry {
    char *uid;
    char *priv; /* NULL while generating */
    char *pub;
    bool generating;        /* a thread is making this pair without the lock */
    struct key_entry *next; /* bucket chain */
};

struct ssh_key_store {
    pthread_mutex_t mu;  /* guards buckets and every entry */
    pthread_cond_t cond; /* signalled when a generation ends */
    struct key_entry *buckets[STORE_BUCKETS];
};

/* ---- the store ---- */

static size_t bucket_of(const char *uid)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (const unsigned char *p = (const unsigned char *)uid; *p != '\0'; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h % STORE_BUCKETS;
}

/* The entry of uid, or NULL. Lock held. */
static struct key_entry *find_locked(struct ssh_key_store *s, const char *uid)
{
    for (struct key_entry *e = s->buckets[bucket_of(uid)]; e != NULL; e = e->next)
        if (strcmp(e->uid, uid) == 0)
            return e;
    return NULL;
}

/* Unlink and free e. Lock held. */
static void remove_locked(struct ssh_key_store *s, struct key_entry *e)
{
    struct key_entry **pp = &s->buckets[bucket_of(e->uid)];

    while (*pp != NULL && *pp != e)
        pp = &(*pp)->next;
    if (*pp == e)
        *pp = e->next;
    free(e->uid);
    sshkey_free_secret(e->priv);
    free(e->pub);
    free(e);
}

/* A new entry for uid at the head of its bucket. Lock held. NULL on ENOMEM. */
static struct key_entry *insert_locked(struct ssh_key_store *s, const char *uid)
{
    struct key_entry *e = calloc(1, sizeof(*e));
    size_t b = bucket_of(uid);

    if (e == NULL)
        return NULL;
    e->uid = strdup(uid);
    if (e->uid == NULL) {
        free(e);
        return NULL;
    }
    e->next = s->buckets[b];
    s->buckets[b] = e;
    return e;
}

/* Copies of a ready entry's keys. Lock held. @return 0 or WH_ENOMEM. */
static int copy_pair(const struct key_entry *e, char **priv_out, char **pub_out)
{
    *priv_out = strdup(e->priv);
    *pub_out = strdup(e->pub);
    if (*priv_out == NULL || *pub_out == NULL) {
        sshkey_free_secret(*priv_out);
        free(*pub_out);
        *priv_out = NULL;
        *pub_out = NULL;
        return WH_ENOMEM;
    }
    return 0;
}

struct ssh_key_store *sshkeys_create(void)
{
    struct ssh_key_store *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s);
        return NULL;
    }
    if (pthread_cond_init(&s->cond, NULL) != 0) {
        pthread_mutex_destroy(&s->mu);
        free(s);
        return NULL;
    }
    return s;
}

void sshkeys_destroy(struct ssh_key_store *s)
{
    if (s == NULL)
        return;
    for (size_t b = 0; b < STORE_BUCKETS; b++)
        while (s->buckets[b] != NULL)
            remove_locked(s, s->buckets[b]);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int sshkeys_get_or_generate(struct ssh_key_store *s, const char *uid, char **priv_out,
                            char **pub_out, struct wh_error *err)
{
    struct key_entry *e;
    char *priv = NULL;
    char *pub = NULL;
    int rc;

    *priv_out = NULL;
    *pub_out = NULL;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        e = find_locked(s, uid);
        if (e == NULL)
            break;
        if (!e->generating) {
            rc = copy_pair(e, priv_out, pub_out);
            pthread_mutex_unlock(&s->mu);
            return rc < 0 ? wh_error_set(err, rc, "out of memory") : 0;
        }
        pthread_cond_wait(&s->cond, &s->mu); /* another worker makes this uid's pair */
    }
    e = insert_locked(s, uid);
    if (e == NULL) {
        pthread_mutex_unlock(&s->mu);
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    e->generating = true;
    pthread_mutex_unlock(&s->mu);

    /* The slow part (tens to hundreds of ms), without the lock. */
    rc = sshkey_generate(&priv, &pub, err);

    pthread_mutex_lock(&s->mu);
    /* e may have been dropped (or replaced by sshkeys_put) meanwhile: look it up again. */
    e = find_locked(s, uid);
    if (rc < 0) {
        if (e != NULL && e->generating)
            remove_locked(s, e); /* not stored: the next caller tries again */
    } else if (e != NULL && e->generating) {
        e->priv = priv;
        e->pub = pub;
        e->generating = false;
        rc = copy_pair(e, priv_out, pub_out);
        priv = NULL; /* now owned by the entry */
        pub = NULL;
        if (rc < 0)
            rc = wh_error_set(err, rc, "out of memory");
    } else if (e != NULL) {
        rc = copy_pair(e, priv_out, pub_out); /* sshkeys_put won: one pair per uid */
        if (rc < 0)
            rc = wh_error_set(err, rc, "out of memory");
    } else {
        *priv_out = priv; /* dropped meanwhile: hand out, do not keep */
        *pub_out = pub;
        priv = NULL;
        pub = NULL;
    }
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    sshkey_free_secret(priv);
    free(pub);
    return rc;
}

int sshkeys_lookup(struct ssh_key_store *s, const char *uid, char **priv_out, char **pub_out)
{
    struct key_entry *e;
    int rc = WH_ENOTFOUND;

    *priv_out = NULL;
    *pub_out = NULL;
    pthread_mutex_lock(&s->mu);
    e = find_locked(s, uid);
    if (e != NULL && !e->generating)
        rc = copy_pair(e, priv_out, pub_out);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sshkeys_put(struct ssh_key_store *s, const char *uid, const char *priv, const char *pub)
{
    char *p = strdup(priv);
    char *q = strdup(pub);
    struct key_entry *e;

    if (p == NULL || q == NULL)
        goto nomem;
    pthread_mutex_lock(&s->mu);
    e = find_locked(s, uid);
    if (e == NULL)
        e = insert_locked(s, uid);
    if (e == NULL) {
        pthread_mutex_unlock(&s->mu);
        goto nomem;
    }
    sshkey_free_secret(e->priv);
    free(e->pub);
    e->priv = p;
    e->pub = q;
    e->generating = false; /* a running generation finds it ready and yields */
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    return 0;
nomem:
    sshkey_free_secret(p);
    free(q);
    return WH_ENOMEM;
}

void sshkeys_drop(struct ssh_key_store *s, const char *uid)
{
    struct key_entry *e;

    pthread_mutex_lock(&s->mu);
    e = find_locked(s, uid);
    if (e != NULL)
        remove_locked(s, e);
    pthread_cond_broadcast(&s->cond); /* waiters on a dropped placeholder re-check */
    pthread_mutex_unlock(&s->mu);
}
