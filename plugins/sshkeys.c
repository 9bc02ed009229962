/*
 * sshkeys.c - RSA key pairs for the `ssh` plugin and the per-uid store
 * (sshkeys.h; spec §4.3, D11).
 *
 * Formats: id_rsa is OpenSSL's "traditional" (PKCS#1) PEM, which is exactly the
 * layout Volcano writes (64-column base64, no headers). id_rsa.pub is built from
 * n and e: BN_bn2mpi writes a 4-byte big-endian length and the magnitude with a
 * leading 0x00 when the top bit is set, i.e. RFC 4253 §5's mpint for a positive
 * number.
 *
 * Store: a chained hash map uid → entry under one mutex and one condition
 * variable. An entry is either ready (keys set) or a placeholder (generating)
 * that the generating thread fills; waiters sleep on the condition variable.
 * The private key text is wiped (OPENSSL_cleanse) before it is freed.
 *
 * Threads: sshkeys_generate is pure but for the key generation time it adds to
 * the metrics (atomics); the store functions lock (see the header).
 */
#include "plugins/sshkeys.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "webhook/metrics.h"
#include "webhook/clock.h"

#define STORE_BUCKETS 1024u

struct key_entry {
    char *uid;
    char *priv;               /* NULL while generating */
    char *pub;
    bool generating;          /* a thread is making this pair without the lock */
    struct key_entry *next;   /* bucket chain */
};

struct ssh_key_store {
    pthread_mutex_t mu;       /* guards buckets and every entry */
    pthread_cond_t cond;      /* signalled when a generation ends */
    struct key_entry *buckets[STORE_BUCKETS];
};

/* ---- generation ---- */

/* Last OpenSSL error as text, for a one-line message. */
static int ossl_error(struct wh_error *err, const char *what)
{
    char buf[160];
    unsigned long e = ERR_get_error();

    if (e == 0)
        return wh_error_set(err, WH_ERROR, "ssh key: %s failed", what);
    ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    return wh_error_set(err, WH_ERROR, "ssh key: %s failed: %s", what, buf);
}

/* The BIO's contents as a NUL-terminated malloc'd string, NULL on ENOMEM. */
static char *bio_take_string(BIO *b)
{
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    char *out;

    if (n < 0)
        return NULL;
    out = malloc((size_t)n + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, data, (size_t)n);
    out[n] = '\0';
    return out;
}

/* PKCS#1 "BEGIN RSA PRIVATE KEY" PEM of pk. */
static int private_pem(EVP_PKEY *pk, char **out, struct wh_error *err)
{
    BIO *b = BIO_new(BIO_s_mem());
    int rc = 0;

    *out = NULL;
    if (b == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    if (PEM_write_bio_PrivateKey_traditional(b, pk, NULL, NULL, 0, NULL, NULL) != 1) {
        rc = ossl_error(err, "PEM encoding");
        goto out;
    }
    *out = bio_take_string(b);
    if (*out == NULL)
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
out:
    /* the memory BIO held the private key: wipe it before it is freed */
    {
        char *data = NULL;
        long n = BIO_get_mem_data(b, &data);

        if (n > 0 && data != NULL)
            OPENSSL_cleanse(data, (size_t)n);
    }
    BIO_free(b);
    return rc;
}

/* Append the mpint of bn (RFC 4253 §5) at buf + *off; buf is large enough. */
static void put_mpint(unsigned char *buf, size_t *off, const BIGNUM *bn)
{
    *off += (size_t)BN_bn2mpi(bn, buf + *off);
}

/* "ssh-rsa " + base64(string "ssh-rsa", mpint e, mpint n) + "\n" (RFC 4253 §6.6). */
static int public_line(EVP_PKEY *pk, char **out, struct wh_error *err)
{
    static const char type[] = "ssh-rsa";
    BIGNUM *n = NULL;
    BIGNUM *e = NULL;
    unsigned char *blob = NULL;
    char *line = NULL;
    size_t len = 0;
    size_t cap;
    size_t b64;
    int rc = 0;

    *out = NULL;
    if (EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_N, &n) != 1
        || EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_E, &e) != 1) {
        rc = ossl_error(err, "reading n and e");
        goto out;
    }
    cap = 4 + (sizeof(type) - 1) + (size_t)BN_bn2mpi(e, NULL) + (size_t)BN_bn2mpi(n, NULL);
    blob = malloc(cap);
    b64 = 4 * ((cap + 2) / 3);
    line = malloc(strlen(type) + 1 + b64 + 2);
    if (blob == NULL || line == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    blob[0] = 0;
    blob[1] = 0;
    blob[2] = 0;
    blob[3] = (unsigned char)(sizeof(type) - 1);
    memcpy(blob + 4, type, sizeof(type) - 1);
    len = 4 + sizeof(type) - 1;
    put_mpint(blob, &len, e);
    put_mpint(blob, &len, n);
    memcpy(line, type, sizeof(type) - 1);
    line[sizeof(type) - 1] = ' ';
    b64 = (size_t)EVP_EncodeBlock((unsigned char *)line + sizeof(type), blob, (int)len);
    line[sizeof(type) + b64] = '\n';
    line[sizeof(type) + b64 + 1] = '\0';
    *out = line;
    line = NULL;   /* now owned by the caller */
out:
    BN_free(n);
    BN_free(e);
    free(blob);
    free(line);
    return rc;
}

static void free_secret(char *s)
{
    if (s != NULL) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

int sshkeys_generate(char **priv_out, char **pub_out, struct wh_error *err)
{
    double started = clock_mono_s();
    EVP_PKEY *pk = EVP_RSA_gen(SSHKEYS_RSA_BITS);   /* e = 65537, OpenSSL's default */
    int rc;

    *priv_out = NULL;
    *pub_out = NULL;
    if (pk == NULL)
        return ossl_error(err, "RSA generation");
    metrics_ssh_keygen(clock_mono_s() - started);   /* webhook_ssh_keygen_seconds_total */
    rc = private_pem(pk, priv_out, err);
    if (rc == 0)
        rc = public_line(pk, pub_out, err);
    if (rc < 0) {
        free_secret(*priv_out);
        *priv_out = NULL;
    }
    EVP_PKEY_free(pk);
    return rc;
}

/* ---- the store ---- */

static size_t bucket_of(const char *uid)
{
    uint32_t h = 2166136261u;   /* FNV-1a */

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
    free_secret(e->priv);
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
        free_secret(*priv_out);
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
        pthread_cond_wait(&s->cond, &s->mu);   /* another worker makes this uid's pair */
    }
    e = insert_locked(s, uid);
    if (e == NULL) {
        pthread_mutex_unlock(&s->mu);
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    e->generating = true;
    pthread_mutex_unlock(&s->mu);

    /* The slow part (tens to hundreds of ms), without the lock. */
    rc = sshkeys_generate(&priv, &pub, err);

    pthread_mutex_lock(&s->mu);
    /* e may have been dropped (or replaced by sshkeys_put) meanwhile: look it up again. */
    e = find_locked(s, uid);
    if (rc < 0) {
        if (e != NULL && e->generating)
            remove_locked(s, e);   /* not stored: the next caller tries again */
    } else if (e != NULL && e->generating) {
        e->priv = priv;
        e->pub = pub;
        e->generating = false;
        rc = copy_pair(e, priv_out, pub_out);
        priv = NULL;   /* now owned by the entry */
        pub = NULL;
        if (rc < 0)
            rc = wh_error_set(err, rc, "out of memory");
    } else if (e != NULL) {
        rc = copy_pair(e, priv_out, pub_out);   /* sshkeys_put won: one pair per uid */
        if (rc < 0)
            rc = wh_error_set(err, rc, "out of memory");
    } else {
        *priv_out = priv;   /* dropped meanwhile: hand out, do not keep */
        *pub_out = pub;
        priv = NULL;
        pub = NULL;
    }
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    free_secret(priv);
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
    free_secret(e->priv);
    free(e->pub);
    e->priv = p;
    e->pub = q;
    e->generating = false;   /* a running generation finds it ready and yields */
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    return 0;
nomem:
    free_secret(p);
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
    pthread_cond_broadcast(&s->cond);   /* waiters on a dropped placeholder re-check */
    pthread_mutex_unlock(&s->mu);
}
