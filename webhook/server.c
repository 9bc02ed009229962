/*
 * server.c - libmicrohttpd front: routes, body gathering with a hard cap,
 * Kubernetes Status bodies for every error, TLS through MHD (GnuTLS) with a
 * hot-swappable pair, time limits against slow clients, /metrics.
 *
 * Design: MHD calls access_handler several times per request. The first call
 * only routes and checks headers (method, Content-Type, Content-Length), so a
 * refusal is answered before any body byte is read; the calls that follow
 * append the body to a per-request buffer (struct req_ctx) that grows as data
 * arrives and never past the cap (a Content-Length is never trusted for an
 * allocation); the last call (no more data) runs admission_handle. A chunked
 * body (no Content-Length) that passes the cap is dropped from there on and
 * answered 413 at its end, since MHD 0.9 cannot answer mid-body; one that goes
 * on for another cap's worth has the connection closed. The buffer is freed in
 * request_completed (MHD_OPTION_NOTIFY_COMPLETED), which MHD calls on every
 * path once uri_log (MHD_OPTION_URI_LOG_CALLBACK, the request line) ran,
 * including aborted connections.
 *
 * Connections: conn_notify (MHD_OPTION_NOTIFY_CONNECTION) gives each
 * connection a struct conn_ctx, kept in the server's list under conn_lock:
 * its socket, the state of its current request and since when, and the TLS
 * pair its handshake used. MHD calls the CLOSED notification before it closes
 * the socket, so a socket found in the list under conn_lock is still open.
 * The reaper thread scans the list a few times a second and shuts down (2)
 * the socket of a request over its time (MHD's idle timeout cannot catch a
 * client that sends a byte now and then): MHD then sees end-of-file and
 * cleans up as for a vanished client.
 *
 * TLS hot reload: the pair is a refcounted struct tls_creds (GnuTLS pcert
 * chain + private key) under tls_lock. MHD_OPTION_HTTPS_CERT_CALLBACK makes
 * GnuTLS ask tls_retrieve for the pair at each handshake; it takes a
 * reference on the current pair for the connection, dropped when the
 * connection closes. server_set_tls_pair parses the new pair outside the lock,
 * swaps the pointer under it and drops the server's reference to the old one,
 * which is freed by whoever drops the last reference. ALPN: MHD 0.9.75 would
 * offer "http/1.1" and "http/1.0" (and gnutls_alpn_set_protocols appends to a
 * session's list), so MHD_OPTION_TLS_NO_ALPN turns that off and conn_notify
 * sets "http/1.1" alone on the session, which exists from accept on, before
 * the first handshake byte is read.
 *
 * Threads: server_start/server_stop on the main thread. access_handler,
 * uri_log, request_completed, conn_notify, tls_retrieve and mhd_log run on MHD
 * worker threads (a pool with one epoll/poll loop per thread); each
 * connection stays on one worker. reaper_main is the server's own thread.
 * Shared between them: the connection list and each conn_ctx's state
 * (conn_lock), the current pair and the refcounts (tls_lock), draining and
 * in_flight (atomics, in_flight written under conn_lock). The rest of struct
 * server is read-only while the
 * daemon runs.
 */
#include "webhook/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/sanitize.h"
#include "webhook/admission.h"

#define PATH_MUTATE      "/pods/mutate"
#define PATH_HEALTHZ     "/healthz"
#define PATH_READYZ      "/readyz"
#define PATH_METRICS     "/metrics"
#define ECHO_MAX         96   /* bytes of client text echoed in a message */
#define TLS_CHAIN_MAX    16   /* certificates in a served chain */
#define REAPER_PERIOD_MS 200L /* how often the reaper scans */
#define METRICS_TYPE     "text/plain; version=0.0.4; charset=utf-8"

static const char status_enomem[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"out of memory\",\"reason\":\"InternalError\",\"code\":500}";

/* ALPN: HTTP/1.1 only (MHD serves nothing else; kube-apiserver offers h2 too). */
static unsigned char alpn_http11[] = "http/1.1";

/* A parsed TLS pair; refs guarded by server.tls_lock. */
struct tls_creds {
    unsigned refs; /* the server's (while current) + one per connection */
    unsigned n;    /* certificates in chain */
    gnutls_pcert_st chain[TLS_CHAIN_MAX];
    gnutls_privkey_t key;
};

/* Where a connection's current request stands (for the request time limit). */
enum conn_state {
    CONN_NEW,      /* accepted, no request line yet: limit from accept */
    CONN_REQUEST,  /* request line seen, headers/body arriving: limit from start */
    CONN_HANDLING, /* whole request received: no limit (the idle timeout applies) */
    CONN_IDLE,     /* keep-alive between requests: limit idle + request time */
};

struct server;

/* Per connection (MHD's socket_context). Fields but creds under conn_lock. */
struct conn_ctx {
    struct server *srv;
    int fd;
    enum conn_state state;
    long long since_ms; /* monotonic ms the state's limit counts from */
    bool shut;          /* the reaper has shut the socket down */
    struct conn_ctx *prev;
    struct conn_ctx *next;
    struct tls_creds *creds; /* pair of its handshake; the connection's thread only */
};

struct server {
    struct MHD_Daemon *daemon;
    struct job_source src;
    struct mutate_options mutate;
    admission_fn admission;               /* admission_handle unless the config says otherwise */
    const char *(*ready)(void *userdata); /* NULL: always ready */
    void *ready_userdata;
    metric_collect_fn metrics_collect;
    void *metrics_userdata;
    size_t max_body; /* bytes */
    unsigned port;
    bool tls;
    long long request_timeout_ms;
    long long idle_timeout_ms;
    atomic_bool draining;  /* server_set_draining was called */
    atomic_uint in_flight; /* connections not CONN_IDLE; written under conn_lock */
    int quiesced_fd;       /* listening socket after server_quiesce, else -1 */

    pthread_mutex_t tls_lock;
    struct tls_creds *creds; /* current pair; NULL without TLS */

    pthread_mutex_t conn_lock;
    pthread_cond_t reaper_cond;
    struct conn_ctx *conns; /* every open connection */
    bool reaper_stop;
    bool reaper_running;
    pthread_t reaper;
};

/* Per-request state (MHD's *req_cls), from uri_log to request_completed. */
struct req_ctx {
    struct conn_ctx *conn; /* its connection's context, NULL if it has none */
    long long deadline_ms; /* headers and body complete by then; 0: none */
    bool begun;            /* access_handler ran request_begin */
    bool admission;        /* counted in metrics_inflight_add */
    struct buf body;       /* body gathered so far, capped at max_body (413 past it) */
    bool answered;         /* a response is queued: discard the rest */
    bool probe;            /* GET/HEAD of a probe path: answered once the request is whole */
    bool too_big;          /* over the cap and the 413 could not be queued yet */
    size_t discarded;      /* bytes dropped since too_big was set */
};

/* Route MHD's own error messages to our log (one line each). */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    size_t n;

    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    LOG_WARN("http: %s", msg);
}

/*
 * Copy client text into buf for a message: printable ASCII only (the path is
 * URL-decoded and may hold any byte; JSON strings must be UTF-8), cut at
 * ECHO_MAX bytes.
 */
static const char *echo_safe(const char *s, char *buf, size_t len)
{
    return sanitize_copy(buf, len, s, ECHO_MAX, SANITIZE_ASCII | SANITIZE_ELLIPSIS);
}

/* The connection's context (MHD socket_context), NULL when conn_notify could not make one. */
static struct conn_ctx *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        c != NULL ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;

    return ci != NULL ? ci->socket_context : NULL;
}

/* ---- TLS pair: parse, refcount, serve ---- */

static void creds_free(struct tls_creds *cr)
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
static int creds_parse(const char *cert_pem, const char *key_pem, struct tls_creds **out,
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
    creds_free(cr);
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
static void creds_release(struct server *s, struct tls_creds *cr)
{
    bool last;

    if (cr == NULL)
        return;
    pthread_mutex_lock(&s->tls_lock);
    last = --cr->refs == 0;
    pthread_mutex_unlock(&s->tls_lock);
    if (last)
        creds_free(cr);
}

/*
 * gnutls_certificate_retrieve_function2, called by GnuTLS during a handshake
 * on the connection's worker: hand out the current pair and keep a reference
 * on it for the connection (GnuTLS does not copy it).
 */
static int tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                        const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                        gnutls_pcert_st **pcert, unsigned int *pcert_length,
                        gnutls_privkey_t *privkey)
{
    /* MHD sets the session's pointer to its connection. */
    struct conn_ctx *cc = conn_of(gnutls_session_get_ptr(session));
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
    creds_release(cc->srv, cc->creds); /* a second handshake on the connection */
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
    rc = creds_parse(cert_pem, key_pem, &cr, err);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&s->tls_lock);
    old = s->creds;
    s->creds = cr;
    pthread_mutex_unlock(&s->tls_lock);
    creds_release(s, old); /* freed now, or when its last connection closes */
    return 0;
}

/* ---- connections: registry, request time limit, reaper ---- */

/* MHD_OPTION_NOTIFY_CONNECTION: register a connection on start, drop it on close. */
static void conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe)
{
    struct server *s = cls;
    struct conn_ctx *cc = *socket_context;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fi =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ti =
            s->tls ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION) : NULL;

        /* Before any handshake byte: offer only http/1.1 in ALPN. */
        if (ti != NULL && ti->tls_session != NULL) {
            gnutls_datum_t proto = {alpn_http11, sizeof(alpn_http11) - 1};

            gnutls_alpn_set_protocols(ti->tls_session, &proto, 1, 0);
        }
        cc = calloc(1, sizeof(*cc));
        if (cc == NULL)
            return; /* no limit for this one; TLS handshakes fail without it */
        cc->srv = s;
        cc->fd = fi != NULL ? fi->connect_fd : -1;
        cc->state = CONN_NEW;
        cc->since_ms = clock_mono_ms();
        pthread_mutex_lock(&s->conn_lock);
        atomic_fetch_add(&s->in_flight, 1); /* a new connection brings a request */
        cc->next = s->conns;
        if (s->conns != NULL)
            s->conns->prev = cc;
        s->conns = cc;
        pthread_mutex_unlock(&s->conn_lock);
        *socket_context = cc;
        return;
    }
    if (cc == NULL)
        return;
    /* CLOSED: MHD closes the socket only after this returns. */
    pthread_mutex_lock(&s->conn_lock);
    if (cc->state != CONN_IDLE)
        atomic_fetch_sub(&s->in_flight, 1);
    if (cc->prev != NULL)
        cc->prev->next = cc->next;
    else
        s->conns = cc->next;
    if (cc->next != NULL)
        cc->next->prev = cc->prev;
    pthread_mutex_unlock(&s->conn_lock);
    creds_release(s, cc->creds);
    free(cc);
    *socket_context = NULL;
}

/* Move to state st (from now), keeping in_flight = connections not idle. conn_lock held. */
static void conn_set_state_locked(struct conn_ctx *cc, enum conn_state st)
{
    if (cc->state == CONN_IDLE && st != CONN_IDLE)
        atomic_fetch_add(&cc->srv->in_flight, 1);
    else if (cc->state != CONN_IDLE && st == CONN_IDLE)
        atomic_fetch_sub(&cc->srv->in_flight, 1);
    cc->state = st;
}

/* Move a connection's request to state st (from now). */
static void conn_set_state(struct conn_ctx *cc, enum conn_state st)
{
    if (cc == NULL)
        return;
    pthread_mutex_lock(&cc->srv->conn_lock);
    conn_set_state_locked(cc, st);
    cc->since_ms = clock_mono_ms();
    pthread_mutex_unlock(&cc->srv->conn_lock);
}

/* A zeroed request context whose body may grow to s->max_body; NULL on ENOMEM. */
static struct req_ctx *req_ctx_create(const struct server *s)
{
    struct req_ctx *ctx = calloc(1, sizeof(*ctx));

    if (ctx != NULL)
        buf_init(&ctx->body, s->max_body);
    return ctx;
}

/*
 * MHD_OPTION_URI_LOG_CALLBACK: the request line has arrived. Start the
 * request's clock (a connection's first request keeps the one started at
 * accept) and its req_ctx, which MHD hands to access_handler as *req_cls.
 */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
    struct server *s = cls;
    struct conn_ctx *cc = conn_of(c);
    struct req_ctx *ctx = req_ctx_create(s);

    (void)uri;
    if (cc != NULL) {
        pthread_mutex_lock(&s->conn_lock);
        if (cc->state != CONN_NEW)
            cc->since_ms = clock_mono_ms();
        conn_set_state_locked(cc, CONN_REQUEST);
        if (ctx != NULL)
            ctx->deadline_ms = cc->since_ms + s->request_timeout_ms;
        pthread_mutex_unlock(&s->conn_lock);
    }
    if (ctx != NULL)
        ctx->conn = cc;
    return ctx; /* NULL: access_handler allocates it */
}

/* Deadline of a connection in its state, 0 when none. conn_lock held. */
static long long conn_deadline(const struct server *s, const struct conn_ctx *cc)
{
    switch (cc->state) {
    case CONN_NEW:
    case CONN_REQUEST: return cc->since_ms + s->request_timeout_ms;
    case CONN_IDLE:
        /* MHD closes a connection idle this long; this catches one that trickles. */
        return cc->since_ms + s->idle_timeout_ms + s->request_timeout_ms;
    case CONN_HANDLING:
    default: return 0;
    }
}

/* The reaper: shut down connections whose request is over its time. */
static void *reaper_main(void *arg)
{
    struct server *s = arg;

    pthread_mutex_lock(&s->conn_lock);
    while (!s->reaper_stop) {
        struct timespec ts;
        unsigned closed = 0;
        long long now = clock_mono_ms();

        for (struct conn_ctx *cc = s->conns; cc != NULL; cc = cc->next) {
            long long dl = conn_deadline(s, cc);

            if (dl == 0 || now <= dl || cc->shut || cc->fd < 0)
                continue;
            /* The socket is open: its CLOSED notification has not run (conn_lock). */
            shutdown(cc->fd, SHUT_RDWR);
            cc->shut = true;
            closed++;
        }
        if (closed > 0)
            LOG_INFO("http: closed connections over their time count=%u request_timeout_ms=%lld",
                     closed, s->request_timeout_ms);
        ts = clock_after_ms(CLOCK_REALTIME, REAPER_PERIOD_MS);
        pthread_cond_timedwait(&s->reaper_cond, &s->conn_lock, &ts);
    }
    pthread_mutex_unlock(&s->conn_lock);
    return NULL;
}

/* ---- answers ---- */

/* Queue body (copied unless must_free, then freed by MHD) with status and type. */
static enum MHD_Result queue(struct server *s, struct MHD_Connection *c, unsigned status,
                             const char *type, const char *allow, char *body, size_t len,
                             bool must_free)
{
    struct MHD_Response *r;
    enum MHD_Result ret;

    r = MHD_create_response_from_buffer(len, body,
                                        must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
    if (r == NULL) {
        if (must_free)
            free(body);
        return MHD_NO; /* MHD closes the connection */
    }
    if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) == MHD_NO
        || (allow != NULL && MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow) == MHD_NO)
        /* Draining: send clients to another replica for their next request. */
        || (atomic_load(&s->draining)
            && MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_NO)) {
        MHD_destroy_response(r);
        return MHD_NO;
    }
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Answer with a Kubernetes Status (kube-api-facts "Errors: Status objects"). */
static enum MHD_Result queue_status(struct server *s, struct MHD_Connection *c, unsigned code,
                                    const char *reason, const char *allow, const char *message)
{
    json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion",
                           "v1", "metadata", "status", "Failure", "message", message, "reason",
                           reason, "code", (int)code);
    char *text = st != NULL ? json_dumps(st, JSON_COMPACT) : NULL;

    json_decref(st);
    if (text == NULL)
        return queue(s, c, code, "application/json", allow, (char *)status_enomem,
                     sizeof(status_enomem) - 1, false);
    return queue(s, c, code, "application/json", allow, text, strlen(text), true);
}

/* A refusal of an admission request by the server itself: counted, then answered. */
static enum MHD_Result refuse(struct server *s, struct MHD_Connection *c, unsigned code,
                              const char *reason, const char *allow, const char *message)
{
    metrics_admission((int)code, METRICS_ERROR, 0);
    return queue_status(s, c, code, reason, allow, message);
}

/* "application/json", any case, optionally followed by parameters (RFC 9110 8.3.1). */
static bool content_type_json(const char *v)
{
    static const char want[] = "application/json";

    if (v == NULL)
        return false;
    while (*v == ' ' || *v == '\t')
        v++;
    if (strncasecmp(v, want, sizeof(want) - 1) != 0)
        return false;
    v += sizeof(want) - 1;
    while (*v == ' ' || *v == '\t')
        v++;
    return *v == '\0' || *v == ';';
}

/* GET /healthz, /readyz, /metrics (ctx->answered is set by the caller). */
static enum MHD_Result answer_probe(struct server *s, struct MHD_Connection *c, const char *url,
                                    const char *method)
{
    char a[ECHO_MAX + 4];
    char msg[384];

    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        snprintf(msg, sizeof(msg), "method %s is not allowed on %s, use GET",
                 echo_safe(method, a, sizeof(a)), url);
        return queue_status(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed", "GET, HEAD",
                            msg);
    }
    if (strcmp(url, PATH_READYZ) == 0) {
        const char *why = NULL;

        if (atomic_load(&s->draining))
            why = "shutting down";
        else if (s->ready != NULL)
            why = s->ready(s->ready_userdata);
        if (why != NULL)
            return queue_status(s, c, MHD_HTTP_SERVICE_UNAVAILABLE, "ServiceUnavailable", NULL,
                                why);
    }
    if (strcmp(url, PATH_METRICS) == 0) {
        size_t len = 0;
        char *text = metrics_render(s->metrics_collect, s->metrics_userdata, &len);

        if (text == NULL)
            return queue_status(s, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "InternalError", NULL,
                                "out of memory");
        return queue(s, c, MHD_HTTP_OK, METRICS_TYPE, NULL, text, len, true);
    }
    return queue(s, c, MHD_HTTP_OK, "text/plain; charset=utf-8", NULL, (char *)"ok", 2, false);
}

/* The request announces a Content-Length over the body cap. */
static bool length_over_cap(const struct server *s, struct MHD_Connection *c)
{
    /* MHD has checked Content-Length already (400 on a malformed one). */
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long n;

    if (v == NULL)
        return false;
    errno = 0;
    n = strtoull(v, NULL, 10);
    return errno != 0 || n > s->max_body;
}

/*
 * First call of a request: route and check the headers. @return MHD_YES when
 * the body should be read, else the result of queueing the answer (a probe or
 * a refusal) with ctx->answered set, so that later calls discard the body.
 */
/* The Content-Length headers of a request, as length_header sees them. */
struct lengths {
    const char *first; /* the first one's value, NULL before it */
    bool conflict;     /* a later one says otherwise */
};

/* MHD_KeyValueIterator over the headers: note whether the Content-Lengths disagree. */
static enum MHD_Result length_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    struct lengths *l = cls;

    (void)kind;
    if (key == NULL || strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0)
        return MHD_YES;
    if (value == NULL)
        value = "";
    if (l->first == NULL) {
        l->first = value;
    } else if (strcmp(l->first, value) != 0) {
        l->conflict = true;
        return MHD_NO; /* enough: stop the iteration */
    }
    return MHD_YES;
}

/*
 * RFC 9112 §6.3: Content-Length headers that differ leave the body's length
 * unknowable (MHD takes one of them): the shape of request smuggling. Refused;
 * MHD closes the connection after an answer sent before the body.
 */
static bool lengths_conflict(struct MHD_Connection *c)
{
    struct lengths l = {NULL, false};

    MHD_get_connection_values(c, MHD_HEADER_KIND, length_header, &l);
    return l.conflict;
}

static enum MHD_Result request_begin(struct server *s, struct MHD_Connection *c, const char *url,
                                     const char *method, struct req_ctx *ctx)
{
    char a[ECHO_MAX + 4];
    char b[ECHO_MAX + 4];
    char msg[384];
    const char *v;

    if (strcmp(url, PATH_HEALTHZ) == 0 || strcmp(url, PATH_READYZ) == 0
        || strcmp(url, PATH_METRICS) == 0) {
        /*
         * A GET or HEAD is answered when the whole request is in (access_handler):
         * an answer queued before that makes MHD close the connection, so every
         * probe and scrape would pay for a new TLS handshake.
         */
        if ((strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0)
            && !length_over_cap(s, c)) {
            ctx->probe = true;
            return MHD_YES;
        }
        /*
         * A probe announcing a body over the cap is answered now, as it was before
         * probes waited for their body: waiting, it read a cap's worth and was then
         * closed with no answer at all (and a client that sent only the headers got
         * nothing until the request timeout). MHD closes the connection after it.
         */
        ctx->answered = true;
        return answer_probe(s, c, url, method);
    }
    if (strcmp(url, PATH_MUTATE) != 0) {
        ctx->answered = true;
        snprintf(msg, sizeof(msg), "no such path \"%s\" (the webhook serves POST " PATH_MUTATE ")",
                 echo_safe(url, a, sizeof(a)));
        return refuse(s, c, MHD_HTTP_NOT_FOUND, "NotFound", NULL, msg);
    }
    /* An admission request from here on: in flight until request_completed. */
    ctx->admission = true;
    metrics_inflight_add(1);
    if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
        ctx->answered = true;
        snprintf(msg, sizeof(msg), "method %s is not allowed on " PATH_MUTATE ", use POST",
                 echo_safe(method, a, sizeof(a)));
        return refuse(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed", "POST", msg);
    }
    if (lengths_conflict(c)) {
        ctx->answered = true;
        return refuse(s, c, MHD_HTTP_BAD_REQUEST, "BadRequest", NULL,
                      "conflicting Content-Length headers");
    }
    v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!content_type_json(v)) {
        ctx->answered = true;
        if (v == NULL)
            snprintf(msg, sizeof(msg), "Content-Type must be application/json, got none");
        else
            snprintf(msg, sizeof(msg), "Content-Type must be application/json, got \"%s\"",
                     echo_safe(v, b, sizeof(b)));
        return refuse(s, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "UnsupportedMediaType", NULL, msg);
    }
    /* Refused on the announced length; nothing is allocated from it (the buffer
     * grows as bytes arrive). */
    if (length_over_cap(s, c)) {
        ctx->answered = true;
        snprintf(msg, sizeof(msg), "request body is larger than %zu bytes", s->max_body);
        return refuse(s, c, MHD_HTTP_CONTENT_TOO_LARGE, "RequestEntityTooLarge", NULL, msg);
    }
    return MHD_YES;
}

static enum MHD_Result queue_too_big(struct server *s, struct MHD_Connection *c)
{
    char msg[96];

    snprintf(msg, sizeof(msg), "request body is larger than %zu bytes", s->max_body);
    return refuse(s, c, MHD_HTTP_CONTENT_TOO_LARGE, "RequestEntityTooLarge", NULL, msg);
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *c, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **req_cls)
{
    struct server *s = cls;
    struct req_ctx *ctx = *req_cls;
    char *out = NULL;
    size_t out_len = 0;
    int status;
    int rc;

    (void)version;
    if (ctx == NULL) {
        /* uri_log could not allocate it. */
        ctx = req_ctx_create(s);
        if (ctx == NULL)
            return MHD_NO;
        ctx->conn = conn_of(c);
        *req_cls = ctx; /* now owned by MHD until request_completed */
    }
    if (!ctx->begun) {
        ctx->begun = true;
        return request_begin(s, c, url != NULL ? url : "", method != NULL ? method : "", ctx);
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;

        *upload_data_size = 0; /* consumed (or discarded) */
        /* A body dribbling in past the request timeout: close (MHD 0.9 cannot answer mid-body). */
        if (ctx->deadline_ms > 0 && clock_mono_ms() > ctx->deadline_ms) {
            LOG_DEBUG("http: request body not complete within request_timeout_ms=%lld, "
                      "closing the connection",
                      s->request_timeout_ms);
            return MHD_NO;
        }
        if (ctx->answered)
            return MHD_YES;
        if (ctx->too_big || ctx->probe) {
            /* Dropped (a probe's body is ignored); an endless chunked body is not
             * drained: closed after another cap's worth. */
            ctx->discarded += n < s->max_body - ctx->discarded ? n : s->max_body - ctx->discarded;
            return ctx->discarded < s->max_body ? MHD_YES : MHD_NO;
        }
        /* Memory follows what arrived, not what was announced (buf.h doubles). */
        rc = buf_append(&ctx->body, upload_data, n);
        if (rc == WH_ETOOBIG) {
            /* Stop buffering at once; free what we have. */
            buf_dispose(&ctx->body);
            if (queue_too_big(s, c) == MHD_YES) {
                ctx->answered = true;
                return MHD_YES;
            }
            /*
             * MHD 0.9.x queues a response only before the body or after all of
             * it (only a chunked body gets here: a Content-Length over the cap
             * was refused before reading). Drop the rest, answer at its end.
             */
            ctx->too_big = true;
            return MHD_YES;
        }
        if (rc < 0) {
            ctx->answered = true;
            return refuse(s, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "InternalError", NULL,
                          "out of memory");
        }
        return MHD_YES;
    }
    /* Whole request received: no request time limit from here on. */
    conn_set_state(ctx->conn, CONN_HANDLING);
    if (ctx->answered)
        return MHD_YES;
    ctx->answered = true;
    if (ctx->probe)
        return answer_probe(s, c, url != NULL ? url : "", method != NULL ? method : "");
    if (ctx->too_big)
        return queue_too_big(s, c);
    /* admission_handle records the request in the metrics (outcome, latency). */
    status = s->admission(buf_cstr(&ctx->body), ctx->body.len, &s->src, &s->mutate, &out, &out_len);
    /* The body is no longer needed: release it before the answer is sent. */
    buf_dispose(&ctx->body);
    if (out == NULL)
        return queue(s, c, (unsigned)status, "application/json", NULL, (char *)status_enomem,
                     sizeof(status_enomem) - 1, false);
    return queue(s, c, (unsigned)status, "application/json", NULL, out, out_len, true);
}

static void request_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                              enum MHD_RequestTerminationCode toe)
{
    struct req_ctx *ctx = *req_cls;

    (void)cls;
    (void)toe;
    conn_set_state(ctx != NULL ? ctx->conn : conn_of(c), CONN_IDLE);
    if (ctx == NULL)
        return;
    if (ctx->admission)
        metrics_inflight_add(-1);
    buf_dispose(&ctx->body);
    free(ctx);
    *req_cls = NULL;
}

/* Parse a numeric v4/v6 address into ss. @return 0 or WH_EINVAL. */
static int parse_bind(const char *addr, unsigned port, struct sockaddr_storage *ss,
                      struct wh_error *err)
{
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

    memset(ss, 0, sizeof(*ss));
    if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        return 0;
    }
    /* Accept the bracketed form too ("[::1]"), as in host:port notation. */
    if (addr[0] == '[') {
        char tmp[INET6_ADDRSTRLEN + 2];
        size_t n = strlen(addr);

        if (n < 3 || n - 2 >= sizeof(tmp) || addr[n - 1] != ']')
            return wh_error_set(err, WH_EINVAL, "bind address \"%s\" is not an IP address", addr);
        memcpy(tmp, addr + 1, n - 2);
        tmp[n - 2] = '\0';
        return parse_bind(tmp, port, ss, err);
    }
    if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        return 0;
    }
    return wh_error_set(err, WH_EINVAL, "bind address \"%s\" is not an IP address", addr);
}

/*
 * MHD's pool keeps each connection on the thread that accepted it, and which
 * thread accepts is a race: with one thread per core, 16 connections opened at
 * once often landed mostly on one thread, and a core sat idle (admissions/s at
 * 16 connections fell by half in one run out of two; bench/RESULTS.md). Four
 * threads per core leave the balancing to the kernel's scheduler.
 */
#define THREADS_PER_CORE 4
#define THREADS_MAX      64

bool server_address_valid(const char *addr)
{
    struct sockaddr_storage ss;
    struct wh_error err = {0};

    return addr != NULL && parse_bind(addr, 0, &ss, &err) == 0;
}

/* The first one or two numbers of the file dir/name into a, b ("max" reads as -1).
 * @return how many were read. */
static int read_numbers(const char *dir, const char *name, long long *a, long long *b)
{
    char path[512];
    char first[32];
    FILE *f;
    int n;

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
        return 0;
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    n = fscanf(f, "%31s %lld", first, b);
    fclose(f);
    if (n < 1)
        return 0;
    *a = strcmp(first, "max") == 0 ? -1 : strtoll(first, NULL, 10);
    return n;
}

/*
 * CPUs the cgroup under root lets this process use, rounded up: a pod's
 * limits.cpu becomes a CFS quota (cgroup v2 cpu.max "QUOTA PERIOD"; v1
 * cpu/cpu.cfs_quota_us and cpu/cpu.cfs_period_us). 0 when there is no quota.
 */
static long cgroup_cpu_limit(const char *root)
{
    long long quota = -1;
    long long period = 0;
    long long unused;
    char v1[512];

    if (read_numbers(root, "cpu.max", &quota, &period) < 2) {
        quota = -1;
        if ((size_t)snprintf(v1, sizeof(v1), "%s/cpu", root) < sizeof(v1)
            && read_numbers(v1, "cpu.cfs_quota_us", &quota, &unused) >= 1
            && read_numbers(v1, "cpu.cfs_period_us", &period, &unused) < 1)
            period = 0;
    }
    if (quota <= 0 || period <= 0)
        return 0;
    return (long)((quota + period - 1) / period);
}

unsigned server_default_threads(const char *cgroup_root)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    long limit = cgroup_root != NULL ? cgroup_cpu_limit(cgroup_root) : 0;

    if (limit > 0 && (n < 1 || limit < n))
        n = limit; /* a 1-CPU pod on a 64-core node runs 4 threads, not 256 */
    if (n < 1)
        n = 1;
    return n > THREADS_MAX / THREADS_PER_CORE ? THREADS_MAX : (unsigned)n * THREADS_PER_CORE;
}

/* Free s and what it owns; the daemon and the reaper are stopped. */
static void server_free(struct server *s)
{
    creds_free(s->creds); /* every connection has released its reference */
    pthread_cond_destroy(&s->reaper_cond);
    pthread_mutex_destroy(&s->conn_lock);
    pthread_mutex_destroy(&s->tls_lock);
    free(s);
}

/* Stop and join the reaper (if it runs). */
static void reaper_stop(struct server *s)
{
    if (!s->reaper_running)
        return;
    pthread_mutex_lock(&s->conn_lock);
    s->reaper_stop = true;
    pthread_cond_signal(&s->reaper_cond);
    pthread_mutex_unlock(&s->conn_lock);
    pthread_join(s->reaper, NULL);
    s->reaper_running = false;
}

int server_start(struct server **out, const struct server_config *cfg, struct wh_error *err)
{
    struct server *s = NULL;
    struct sockaddr_storage ss;
    struct MHD_OptionItem opts[10];
    const union MHD_DaemonInfo *info;
    const char *addr = cfg->bind_address != NULL ? cfg->bind_address : "0.0.0.0";
    bool tls = cfg->tls_cert_pem != NULL || cfg->tls_key_pem != NULL;
    unsigned timeout_s =
        cfg->connection_timeout > 0 ? cfg->connection_timeout : SERVER_DEFAULT_TIMEOUT;
    unsigned int flags;
    size_t n = 0;
    int rc;

    *out = NULL;
    if (cfg->port > 65535)
        return wh_error_set(err, WH_EINVAL, "port %u is out of range", cfg->port);
    if (cfg->src.get == NULL)
        return wh_error_set(err, WH_EINVAL, "no job source");
    if (tls && (cfg->tls_cert_pem == NULL || cfg->tls_key_pem == NULL))
        return wh_error_set(err, WH_EINVAL, "TLS needs both a certificate and a key");
    if (tls
        && (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES
            || MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK) != MHD_YES))
        return wh_error_set(err, WH_EINVAL, "this libmicrohttpd was built without TLS");
    rc = parse_bind(addr, cfg->port, &ss, err);
    if (rc < 0)
        return rc;

    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    pthread_mutex_init(&s->tls_lock, NULL);
    pthread_mutex_init(&s->conn_lock, NULL);
    pthread_cond_init(&s->reaper_cond, NULL);
    atomic_init(&s->draining, false);
    atomic_init(&s->in_flight, 0);
    s->quiesced_fd = -1;
    s->src = cfg->src;
    s->mutate = cfg->mutate;
    s->admission = cfg->admission != NULL ? cfg->admission : admission_handle;
    s->ready = cfg->ready;
    s->ready_userdata = cfg->ready_userdata;
    s->metrics_collect = cfg->metrics_collect;
    s->metrics_userdata = cfg->metrics_userdata;
    s->max_body = cfg->max_body > 0 ? cfg->max_body : SERVER_MAX_BODY;
    s->tls = tls;
    s->request_timeout_ms =
        cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : SERVER_DEFAULT_REQUEST_TIMEOUT_MS;
    s->idle_timeout_ms = (long long)timeout_s * 1000;
    if (tls) {
        /* Parsed by GnuTLS before the daemon starts: a bad pair never serves. */
        rc = creds_parse(cfg->tls_cert_pem, cfg->tls_key_pem, &s->creds, err);
        if (rc < 0) {
            if (rc != WH_ENOMEM)
                rc = WH_ERROR;
            goto out;
        }
    }

    /* MHD_USE_ITC: server_quiesce (MHD_quiesce_daemon) needs it with worker threads. */
    flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
    /* epoll where this MHD has it, else poll; never select (FD_SETSIZE). */
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (tls)
        flags |= MHD_USE_TLS;

    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &ss};
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_THREAD_POOL_SIZE,
        (intptr_t)(cfg->threads > 0 ? cfg->threads : server_default_threads("/sys/fs/cgroup")),
        NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)timeout_s, NULL};
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_CONNECTION_LIMIT,
        (intptr_t)(cfg->connection_limit > 0 ? cfg->connection_limit : SERVER_DEFAULT_CONNECTIONS),
        NULL};
    if (cfg->per_ip_limit > 0)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                            (intptr_t)cfg->per_ip_limit, NULL};
    if (tls) {
        opts[n++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)SERVER_TLS_PRIORITIES};
        /* MHD would offer "http/1.1" and "http/1.0"; conn_notify sets ours instead. */
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_TLS_NO_ALPN, 1, NULL};
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

    /*
     * The certificate callback is a function pointer, which an option array
     * cannot carry in ISO C: it goes last in the argument list, behind an
     * option code that is MHD_OPTION_END (ending the list) without TLS.
     */
    s->daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->port, NULL, NULL, access_handler, s, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, NULL, MHD_OPTION_NOTIFY_COMPLETED, request_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s, MHD_OPTION_URI_LOG_CALLBACK, uri_log, s,
        MHD_OPTION_ARRAY, opts, tls ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_END, tls_retrieve,
        MHD_OPTION_END);
    if (s->daemon == NULL) {
        rc = wh_error_set(err, WH_ERROR,
                          "cannot start the %s server on %s port %u (see the log line before)",
                          tls ? "HTTPS" : "HTTP", addr, cfg->port);
        goto out;
    }
    if (pthread_create(&s->reaper, NULL, reaper_main, s) != 0) {
        rc = wh_error_set(err, WH_ERROR, "cannot start the connection reaper thread");
        goto out;
    }
    s->reaper_running = true;
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info != NULL && info->port != 0 ? info->port : cfg->port;
    *out = s;
    s = NULL; /* now owned by the caller */
    rc = 0;
out:
    if (s != NULL) {
        if (s->daemon != NULL)
            MHD_stop_daemon(s->daemon);
        server_free(s);
    }
    return rc;
}

void server_set_draining(struct server *s)
{
    if (s != NULL)
        atomic_store(&s->draining, true);
}

void server_quiesce(struct server *s)
{
    if (s == NULL || s->daemon == NULL || s->quiesced_fd >= 0)
        return;
    /* MHD hands the listening socket back; it is closed after MHD_stop_daemon. */
    s->quiesced_fd = MHD_quiesce_daemon(s->daemon);
}

unsigned server_in_flight(const struct server *s)
{
    /* atomic_load needs a non-const object in C11; the value is only read. */
    return s != NULL ? atomic_load((atomic_uint *)&s->in_flight) : 0;
}

unsigned server_port(const struct server *s)
{
    return s != NULL ? s->port : 0;
}

void server_stop(struct server *s)
{
    if (s == NULL)
        return;
    /* The reaper first: no shutdown(2) may race with MHD closing sockets. */
    reaper_stop(s);
    if (s->daemon != NULL)
        MHD_stop_daemon(s->daemon);
    if (s->quiesced_fd >= 0)
        close(s->quiesced_fd); /* connects still queued on it are refused now */
    server_free(s);
}
