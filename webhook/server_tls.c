/* SPDX-License-Identifier: Apache-2.0 */
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
 * Refused handshakes: libmicrohttpd logs every failed handshake with one fixed
 * line ("received handshake message out of context.") and no address, so
 * server.c demotes that line to debug and this file says what happened: a
 * GnuTLS handshake hook notes on the connection's conn_ctx whether a
 * ClientHello came (and its legacy_version), whether our ServerHello went out
 * and whether the client's Finished did. When a connection closes with neither
 * the Finished nor a shutdown of ours, server_tls_conn_end tells why from
 * those, whether TCP received any data (TCP_INFO) and the last alert received
 * (noted by server_tls_handshake_failed while the session lives), counts it by
 * reason and logs it with the client's address, one line per LOG_PERIOD_MS.
 *
 * One answer, one write: MHD 0.9.75 gives GnuTLS an answer's header and body in
 * two calls, so each answer took two sendmsg calls. server_tls_answer_coming
 * arms the connection before the answer is queued; server_tls_push, the
 * session's writer from then on, holds the header's record and writes it with the
 * body's first record (server_internal.h says why nothing is held for good).
 *
 * Threads: server_tls_retrieve, server_tls_conn_start, tls_pull,
 * server_tls_handshake_failed, server_tls_answer_coming, server_tls_push and
 * server_tls_answer_done run on MHD workers (a connection's on its own),
 * server_set_tls_pair on any thread (the certwatch thread in serve); the pair
 * pointer and every refcount under tls_lock.
 */
#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/socket.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_received (glibc's lacks it) */
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "base/log.h"
#include "webhook/server.h"
#include "webhook/server_internal.h"

static const char *const refusal_names[SERVER_REFUSED_N] = {
    "no_data", "not_tls", "tls_version", "no_common_algorithm", "client_alert", "client_closed",
};

const char *server_refusal_name(enum server_refusal r)
{
    return (unsigned)r < SERVER_REFUSED_N ? refusal_names[r] : "";
}

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

/*
 * gnutls_handshake_hook_func, on the connection's worker: note the client's
 * ClientHello (before GnuTLS reads it, so a refused one is noted too), our
 * ServerHello (GnuTLS found a version, suite and group to use) and the
 * client's Finished (after: the handshake is complete).
 */
static int handshake_hook(gnutls_session_t session, unsigned int htype, unsigned when,
                          unsigned int incoming, const gnutls_datum_t *msg)
{
    struct conn_ctx *cc = server_conn_of(gnutls_session_get_ptr(session));

    if (cc == NULL)
        return 0;
    cc->tls_session = session;
    if (!incoming) {
        if (htype == GNUTLS_HANDSHAKE_SERVER_HELLO)
            cc->tls_server_hello = true;
        return 0;
    }
    if (htype == GNUTLS_HANDSHAKE_CLIENT_HELLO && when == GNUTLS_HOOK_PRE && !cc->tls_hello) {
        cc->tls_hello = true;
        /* RFC 8446 4.1.2: legacy_version first; TLS 1.3 clients say 0x0303 there too */
        if (msg != NULL && msg->size >= 2)
            cc->tls_hello_version = (unsigned)msg->data[0] << 8 | msg->data[1];
    } else if (htype == GNUTLS_HANDSHAKE_FINISHED && when == GNUTLS_HOOK_POST) {
        cc->tls_done = true;
    }
    return 0;
}

/* The GnuTLS session of c; NULL without TLS. */
static gnutls_session_t session_of(const struct server *s, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ti =
        s->tls ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION) : NULL;

    return ti != NULL ? ti->tls_session : NULL;
}

/* The socket this thread last read for GnuTLS (tls_pull); -1: none, or closed since. */
static _Thread_local int pulled_fd = -1;

/* GnuTLS's own reader (recv on the fd that is the pointer), noting the fd. */
static ssize_t tls_pull(gnutls_transport_ptr_t ptr, void *data, size_t len)
{
    pulled_fd = (int)(intptr_t)ptr;
    return recv(pulled_fd, data, len, 0);
}

/* GnuTLS's own wait for data, paired with tls_pull under a name of its own: GnuTLS
 * refuses its default timeout function beside a pull function that is not its own. */
static int tls_pull_timeout(gnutls_transport_ptr_t ptr, unsigned int ms)
{
    return gnutls_system_recv_timeout(ptr, ms);
}

void server_tls_conn_start(const struct server *s, struct MHD_Connection *c,
                           const struct conn_ctx *cc)
{
    gnutls_session_t session = session_of(s, c);

    if (session != NULL) {
        gnutls_datum_t proto = {alpn_http11, sizeof(alpn_http11) - 1};

        gnutls_alpn_set_protocols(session, &proto, 1, 0);
        gnutls_handshake_set_hook_function(session, GNUTLS_HANDSHAKE_ANY, GNUTLS_HOOK_BOTH,
                                           handshake_hook);
        /* The pointer stays the fd (what kTLS reads in GnuTLS 3.7). */
        if (cc != NULL) {
            gnutls_transport_set_pull_function(session, tls_pull);
            gnutls_transport_set_pull_timeout_function(session, tls_pull_timeout);
        }
    }
}

void server_tls_handshake_failed(struct server *s)
{
    int fd = pulled_fd;

    pulled_fd = -1; /* one failure per read */
    if (s == NULL || !s->tls || fd < 0)
        return;
    pthread_mutex_lock(&s->conn_lock);
    for (struct conn_ctx *cc = s->conns; cc != NULL; cc = cc->next) {
        /* this thread's connection: fd stays its own until its CLOSED, on this thread */
        if (cc->fd == fd && cc->tls_session != NULL && !cc->tls_done) {
            cc->tls_alert = (unsigned)gnutls_alert_get(cc->tls_session);
            cc->tls_alert_noted = true;
            break;
        }
    }
    pthread_mutex_unlock(&s->conn_lock);
}

/* sendmsg of iov[0..n) on fd, as GnuTLS's own writer sends (MSG_NOSIGNAL). */
static ssize_t send_iov(int fd, const struct iovec *iov, int n)
{
    struct msghdr m;

    memset(&m, 0, sizeof(m));
    m.msg_iov = (struct iovec *)iov;
    m.msg_iovlen = (size_t)n;
    return sendmsg(fd, &m, MSG_NOSIGNAL);
}

/* Of the held bytes (held of them), the first sent went out: keep the rest. */
static void held_sent(struct conn_ctx *cc, size_t held, size_t sent)
{
    memmove(cc->tls_held, cc->tls_held + sent, held - sent);
    cc->tls_held_len = held - sent;
}

ssize_t server_tls_push(gnutls_transport_ptr_t ptr, const giovec_t *iov, int iovcnt)
{
    struct conn_ctx *cc = ptr;
    struct iovec v[TLS_PUSH_IOV_MAX + 1];
    size_t total = 0;
    size_t below = cc->tls_hold_below;
    size_t held = cc->tls_held_len;
    ssize_t w;

    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    cc->tls_hold_below = 0;
    if (below > 0 && held == 0 && total < below && total <= sizeof(cc->tls_held)) {
        for (int i = 0; i < iovcnt; i++) {
            memcpy(cc->tls_held + cc->tls_held_len, iov[i].iov_base, iov[i].iov_len);
            cc->tls_held_len += iov[i].iov_len;
        }
        return (ssize_t)total;
    }
    if (held == 0)
        return send_iov(cc->fd, iov, iovcnt);
    if (iovcnt > TLS_PUSH_IOV_MAX) {
        /* more than one write takes with it (GnuTLS queues fewer): the held bytes alone */
        v[0] = (struct iovec){cc->tls_held, held};
        w = send_iov(cc->fd, v, 1);
        if (w < 0)
            return -1;
        held_sent(cc, held, (size_t)w);
        if (cc->tls_held_len > 0) {
            errno = EAGAIN; /* the socket is full */
            return -1;
        }
        return send_iov(cc->fd, iov, iovcnt);
    }
    v[0] = (struct iovec){cc->tls_held, held};
    memcpy(v + 1, iov, (size_t)iovcnt * sizeof(*iov));
    w = send_iov(cc->fd, v, iovcnt + 1);
    if (w < 0)
        return -1;
    if ((size_t)w <= held) {
        held_sent(cc, held, (size_t)w); /* the socket is full */
        errno = EAGAIN;
        return -1;
    }
    cc->tls_held_len = 0;
    return w - (ssize_t)held;
}

void server_tls_answer_coming(const struct server *s, struct MHD_Connection *c, size_t body_len)
{
    struct conn_ctx *cc = server_conn_of(c);
    gnutls_session_t session;

    if (cc == NULL || cc->fd < 0)
        return;
    if (!cc->tls_push_ours) {
        session = body_len > 0 ? session_of(s, c) : NULL;
        /* kTLS (a system-wide GnuTLS setting) writes to the send pointer's fd itself */
        if (session == NULL || (gnutls_transport_is_ktls_enabled(session) & GNUTLS_KTLS_SEND))
            return;
        gnutls_transport_set_ptr2(session, (gnutls_transport_ptr_t)(intptr_t)cc->fd, cc);
        gnutls_transport_set_vec_push_function(session, server_tls_push);
        cc->tls_push_ours = true;
    }
    cc->tls_hold_below = body_len;
}

void server_tls_answer_done(struct conn_ctx *cc)
{
    if (cc != NULL)
        cc->tls_hold_below = 0;
}

/* Segments with data the client sent on fd (TCP_INFO's tcpi_data_segs_in, Linux 4.6+:
 * a bare FIN or RST is none, where tcpi_bytes_received counts a FIN's byte but not an
 * RST); -1 when unknown. */
static long long tcp_data_segments_in(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);

    memset(&ti, 0, sizeof(ti));
    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0
        || len < offsetof(struct tcp_info, tcpi_data_segs_in) + sizeof(ti.tcpi_data_segs_in))
        return -1;
    return (long long)ti.tcpi_data_segs_in;
}

/* "TLS 1.1" for a legacy_version, into buf. */
static const char *version_text(unsigned v, char *buf, size_t len)
{
    if (v == 0x0300)
        snprintf(buf, len, "SSL 3.0");
    else if (v >> 8 == 3 && (v & 0xff) >= 1)
        snprintf(buf, len, "TLS 1.%u", (v & 0xff) - 1);
    else
        snprintf(buf, len, "0x%04x", v);
    return buf;
}

void server_tls_conn_end(struct server *s, struct MHD_Connection *c, const struct conn_ctx *cc)
{
    enum server_refusal why;
    unsigned long suppressed = 0;
    char detail[128];
    char q[LOG_QUOTE_SIZE(sizeof(detail))];
    char addr[INET6_ADDRSTRLEN + 8];
    char v[16];

    if (cc->fd >= 0 && cc->fd == pulled_fd)
        pulled_fd = -1; /* MHD closes the fd next: a new connection may get its number */
    if (!s->tls || cc->tls_done || cc->shut || atomic_load(&s->stopping))
        return;
    if (!cc->tls_hello) {
        long long got = tcp_data_segments_in(cc->fd);

        why = got == 0 ? SERVER_REFUSED_NO_DATA : SERVER_REFUSED_NOT_TLS;
        snprintf(detail, sizeof(detail), "%s",
                 why == SERVER_REFUSED_NO_DATA
                     ? "closed without sending a byte"
                     : "not a TLS ClientHello (plain HTTP to the HTTPS port?)");
    } else if (cc->tls_hello_version < 0x0303) {
        why = SERVER_REFUSED_TLS_VERSION;
        snprintf(detail, sizeof(detail), "the client offers %s at most, TLS 1.2 or 1.3 needed",
                 version_text(cc->tls_hello_version, v, sizeof(v)));
    } else if (!cc->tls_server_hello) {
        /* A whole ClientHello of TLS 1.2 or 1.3 and no ServerHello: GnuTLS found
         * nothing it may choose (the client closing that instant looks the same). */
        why = SERVER_REFUSED_NO_COMMON;
        snprintf(detail, sizeof(detail),
                 "no cipher suite, group or signature algorithm in common with the profile");
    } else if (cc->tls_alert_noted && cc->tls_alert != GNUTLS_A_CLOSE_NOTIFY) {
        const char *name = gnutls_alert_get_name((gnutls_alert_description_t)cc->tls_alert);

        why = SERVER_REFUSED_CLIENT_ALERT;
        if (name != NULL)
            snprintf(detail, sizeof(detail), "the client sent the alert \"%s\"", name);
        else /* a code GnuTLS has no name for (RFC 8446 6: alerts are one byte) */
            snprintf(detail, sizeof(detail), "the client sent the alert %u", cc->tls_alert);
    } else {
        why = SERVER_REFUSED_CLOSED;
        snprintf(detail, sizeof(detail),
                 "the client closed the connection after the server's hello (does it trust "
                 "the certificate?)");
    }
    metric_counter_add(&server_metrics.handshakes_refused[why], 1);
    if (log_level_current < LOG_LEVEL_INFO || !server_log_take(&s->tls_log, &suppressed))
        return;
    LOG_INFO("http: refused TLS handshake client=%s reason=%s detail=%s suppressed=%lu",
             server_client_address(c, addr, sizeof(addr)), server_refusal_name(why),
             log_quote(q, sizeof(q), detail), suppressed);
}
