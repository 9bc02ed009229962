/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sshkeys.c - the per-uid store of the `ssh` plugin's key pairs (sshkeys.h;
 * docs/plugins.md §4.3, D11); the pairs themselves are made by certs/sshkey.c.
 *
 * A map uid → entry (base/strmap.h) under one mutex and one condition variable. An
 * entry is either ready (keys set) or a placeholder (generating) that the
 * generating thread fills; waiters sleep on the condition variable. The private
 * key text is wiped (sshkey_free_secret) before it is freed.
 *
 * Threads: the store functions lock (see the header).
 */
#include "plugins/sshkeys.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"
#include "certs/sshkey.h"

struct key_entry {
    char *priv; /* NULL while generating */
    char *pub;
    bool generating; /* a thread is making this pair without the lock */
};

struct sshkeys_store {
    pthread_mutex_t mu;     /* guards the map and every entry */
    pthread_cond_t cond;    /* signalled when a generation ends */
    struct strmap *entries; /* uid → struct key_entry, freed by entry_free */
};

/* ---- the store ---- */

/* strmap_free_fn of the entries: the private key is wiped before it goes. */
static void entry_free(void *v)
{
    struct key_entry *e = v;

    sshkey_free_secret(e->priv);
    free(e->pub);
    free(e);
}

/* The entry of uid, or NULL. Lock held. */
static struct key_entry *find_locked(struct sshkeys_store *s, const char *uid)
{
    return strmap_get(s->entries, uid);
}

/* Remove and free uid's entry. Lock held. */
static void remove_locked(struct sshkeys_store *s, const char *uid)
{
    (void)strmap_remove(s->entries, uid);
}

/* A new entry for uid. Lock held. NULL on ENOMEM. */
static struct key_entry *insert_locked(struct sshkeys_store *s, const char *uid)
{
    struct key_entry *e = calloc(1, sizeof(*e));

    if (e == NULL)
        return NULL;
    if (strmap_set(s->entries, uid, e) < 0) {
        free(e);
        return NULL;
    }
    return e; /* now owned by the map */
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

struct sshkeys_store *sshkeys_create(void)
{
    struct sshkeys_store *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->entries = strmap_create(entry_free);
    if (s->entries == NULL) {
        free(s);
        return NULL;
    }
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        strmap_destroy(s->entries);
        free(s);
        return NULL;
    }
    if (pthread_cond_init(&s->cond, NULL) != 0) {
        pthread_mutex_destroy(&s->mu);
        strmap_destroy(s->entries);
        free(s);
        return NULL;
    }
    return s;
}

void sshkeys_destroy(struct sshkeys_store *s)
{
    if (s == NULL)
        return;
    strmap_destroy(s->entries);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int sshkeys_get_or_generate(struct sshkeys_store *s, const char *uid, char **priv_out,
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
            remove_locked(s, uid); /* not stored: the next caller tries again */
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

int sshkeys_lookup(struct sshkeys_store *s, const char *uid, char **priv_out, char **pub_out)
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

int sshkeys_put(struct sshkeys_store *s, const char *uid, const char *priv, const char *pub)
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

void sshkeys_drop(struct sshkeys_store *s, const char *uid)
{
    pthread_mutex_lock(&s->mu);
    remove_locked(s, uid);
    pthread_cond_broadcast(&s->cond); /* waiters on a dropped placeholder re-check */
    pthread_mutex_unlock(&s->mu);
}
