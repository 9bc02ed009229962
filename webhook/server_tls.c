/*
 * server_tls.c - the server's TLS (webhook/server_internal.h): the pair as
 * GnuTLS credentials, its hot reload and the GnuTLS callbacks.
 *
 * Design: the pair is a refcounted struct tls_creds (GnuTLS pcert chain +
 * private key) under tls_lock. MHD_OPTION_HTTPS_CERT_CALLBACK makes GnuTLS ask
 * server_tls_retrieve for the pair at each handshake; it takes a reference on
 * the current pair for the connection, dropped when the connection closes
 * (server_conn.c). server_set_tls_pair parses the new pair outside the lock,
 * swaps the pointer under it and drops the server's reference to the old one,
 * which is freed by whoever drops the last reference. ALPN: MHD 0.9.75 would
 * offer "http/1.1" and "http/1.0" (and gnutls_alpn_set_protocols appends to a
 * session's list), so MHD_OPTION_TLS_NO_ALPN turns that off and
 * server_tls_conn_start sets "http/1.1" alone on the session, which exists from
 * accept on, before the first handshake byte is read.
 *
 * Threads: server_tls_retrieve and server_tls_conn_start run on MHD workers,
 * server_set_tls_pair on any thread (the certwatch thread in serve); the pair
 * pointer and every refcount under tls_lock.
 */
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/server.h"
#include "webhook/server_internal.h"

/* ALPN: HTTP/1.1 only (MHD serves nothing else; kube-apiserver offers h2 too). */
static unsigned char alpn_http11[] = "http/1.1";

void server_tls_creds_free(struct tls_creds *cr)
{
    if (cr == NULL)
        return;
    for (unsigned i = 0; i < cr->n; i++)
        gnutls_pcert_deinit(&cr->chain[i]);
    if (cr->key != NULL)
        gnutls_privkey_deinit(cr->key);
    free(cr);
}

/* SHA-256 key id of a public key into id (64 bytes). @return its length, 0 on error. */
static size_t key_id(gnutls_pubkey_t pub, unsigned char *id)
{
    size_t n = 64;

    return gnutls_pubkey_get_key_id(pub, GNUTLS_KEYID_USE_SHA256, id, &n) < 0 ? 0 : n;
}

/*
 * Parse a PEM chain and key with GnuTLS and check that the key belongs to the
 * first certificate. @return 0 and *out (refs 1), WH_EINVAL or WH_ENOMEM.
 */
int server_tls_creds_parse(const char *cert_pem, const char *key_pem, struct tls_creds **out,
                           struct wh_error *err)
{
    gnutls_datum_t cd = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
    gnutls_datum_t kd = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
    struct tls_creds *cr = calloc(1, sizeof(*cr));
    gnutls_pubkey_t pub = NULL;
    unsigned char a[64];
    unsigned char b[64];
    size_t na;
    size_t nb;
    unsigned n = TLS_CHAIN_MAX;
    int grc;
    int rc;

    *out = NULL;
    if (cr == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    grc = gnutls_pcert_list_import_x509_raw(cr->chain, &n, &cd, GNUTLS_X509_FMT_PEM, 0);
    if (grc < 0 || n == 0) {
        rc = wh_error_set(err, WH_EINVAL, "the TLS certificate does not parse: %s",
                          grc < 0 ? gnutls_strerror(grc) : "no certificate");
        goto out;
    }
    cr->n = n;
    grc = gnutls_privkey_init(&cr->key);
    if (grc < 0) {
        cr->key = NULL;
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    grc = gnutls_privkey_import_x509_raw(cr->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (grc < 0) {
        rc = wh_error_set(err, WH_EINVAL, "the TLS private key does not parse: %s",
                          gnutls_strerror(grc));
        goto out;
    }
    if (gnutls_pubkey_init(&pub) < 0) {
        pub = NULL;
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    na = gnutls_pubkey_import_privkey(pub, cr->key, 0, 0) < 0 ? 0 : key_id(pub, a);
    nb = key_id(cr->chain[0].pubkey, b);
    if (na == 0 || na != nb || memcmp(a, b, na) != 0) {
        rc = wh_error_set(err, WH_EINVAL,
                          "the TLS private key does not match the first certificate");
        goto out;
    }
    cr->refs = 1;
    *out = cr;
    cr = NULL;
    rc = 0;
out:
    if (pub != NULL)
        gnutls_pubkey_deinit(pub);
    server_tls_creds_free(cr);
    return rc;
}

/* A new reference on the current pair (NULL without TLS). */
static struct tls_creds *creds_acquire(struct server *s)
{
    struct tls_creds *cr;

    pthread_mutex_lock(&s->tls_lock);
    cr = s->creds;
    if (cr != NULL)
        cr->refs++;
    pthread_mutex_unlock(&s->tls_lock);
    return cr;
}

/* Drop a reference; the last one frees the pair (outside the lock). */
void server_tls_creds_release(struct server *s, struct tls_creds *cr)
{
    bool last;

    if (cr == NULL)
        return;
    pthread_mutex_lock(&s->tls_lock);
    last = --cr->refs == 0;
    pthread_mutex_unlock(&s->tls_lock);
    if (last)
        server_tls_creds_free(cr);
}

/*
 * gnutls_certificate_retrieve_function2, called by GnuTLS during a handshake
 * on the connection's worker: hand out the current pair and keep a reference
 * on it for the connection (GnuTLS does not copy it).
 */
int server_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                        const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                        gnutls_pcert_st **pcert, unsigned int *pcert_length,
                        gnutls_privkey_t *privkey)
{
    /* MHD sets the session's pointer to its connection. */
    struct conn_ctx *cc = server_conn_of(gnutls_session_get_ptr(session));
    struct tls_creds *cr;

    (void)req_ca_rdn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    if (cc == NULL)
        return -1;
    cr = creds_acquire(cc->srv);
    if (cr == NULL)
        return -1;
    server_tls_creds_release(cc->srv, cc->creds); /* a second handshake on the connection */
    cc->creds = cr;
    *pcert = cr->chain;
    *pcert_length = cr->n;
    *privkey = cr->key;
    return 0;
}

int server_set_tls_pair(struct server *s, const char *cert_pem, const char *key_pem,
                        struct wh_error *err)
{
    struct tls_creds *cr = NULL;
    struct tls_creds *old;
    int rc;

    if (s == NULL || !s->tls)
        return wh_error_set(err, WH_EINVAL, "the server does not serve TLS");
    if (cert_pem == NULL || key_pem == NULL)
        return wh_error_set(err, WH_EINVAL, "TLS needs both a certificate and a key");
    rc = server_tls_creds_parse(cert_pem, key_pem, &cr, err);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&s->tls_lock);
    old = s->creds;
    s->creds = cr;
    pthread_mutex_unlock(&s->tls_lock);
    server_tls_creds_release(s, old); /* freed now, or when its last connection closes */
    return 0;
}

void server_tls_conn_start(const struct server *s, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ti =
        s->tls ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION) : NULL;

    if (ti != NULL && ti->tls_session != NULL) {
        gnutls_datum_t proto = {alpn_http11, sizeof(alpn_http11) - 1};

        gnutls_alpn_set_protocols(ti->tls_session, &proto, 1, 0);
    }
}
