/*
 * server_conn.c - the server's connections (webhook/server_internal.h): the
 * per-connection context, the request time limit, body gathering.
 *
 * Connections: server_conn_notify (MHD_OPTION_NOTIFY_CONNECTION) gives each
 * connection a struct conn_ctx, kept in the server's list under conn_lock:
 * its socket, the state of its current request and since when, and the TLS
 * pair its handshake used. MHD calls the CLOSED notification before it closes
 * the socket, so a socket found in the list under conn_lock is still open.
 * The reaper thread scans the list a few times a second and shuts down (2)
 * the socket of a request over its time (MHD's idle timeout cannot catch a
 * client that sends a byte now and then): MHD then sees end-of-file and
 * cleans up as for a vanished client. in_flight counts the connections not
 * idle between keep-alive requests (written under conn_lock).
 *
 * Requests: server_uri_log makes the struct req_ctx (MHD's *req_cls) when
 * the request line arrives; the body is appended to its buffer, which grows as
 * data arrives and never past the cap (a Content-Length is never trusted for
 * an allocation); server_request_completed (MHD_OPTION_NOTIFY_COMPLETED),
 * which MHD calls on every path once uri_log ran, aborted connections
 * included, frees it.
 *
 * Threads: everything here but the reaper runs on MHD workers (each
 * connection stays on one); reaper_main is the server's own thread, started
 * by server_run and joined by server_stop.
 */
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "webhook/metrics.h"
#include "webhook/server.h"
#include "webhook/server_internal.h"

/* The connection's context (MHD socket_context), NULL when server_conn_notify could not make one. */
struct conn_ctx *server_conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        c != NULL ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;

    return ci != NULL ? ci->socket_context : NULL;
}

/* MHD_OPTION_NOTIFY_CONNECTION: register a connection on start, drop it on close. */
void server_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe)
{
    struct server *s = cls;
    struct conn_ctx *cc = *socket_context;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fi =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        server_tls_conn_start(s, c); /* before any handshake byte */
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
    server_tls_creds_release(s, cc->creds);
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
void server_conn_set_state(struct conn_ctx *cc, enum conn_state st)
{
    if (cc == NULL)
        return;
    pthread_mutex_lock(&cc->srv->conn_lock);
    conn_set_state_locked(cc, st);
    cc->since_ms = clock_mono_ms();
    pthread_mutex_unlock(&cc->srv->conn_lock);
}

/*
 * MHD_OPTION_URI_LOG_CALLBACK: the request line has arrived. Start the
 * request's clock (a connection's first request keeps the one started at
 * accept) and its req_ctx, which MHD hands to access_handler as *req_cls.
 */
void *server_uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
    struct server *s = cls;
    struct conn_ctx *cc = server_conn_of(c);
    struct req_ctx *ctx = server_req_ctx_create(s);

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

struct req_ctx *server_req_ctx_create(const struct server *s)
{
    struct req_ctx *ctx = calloc(1, sizeof(*ctx));

    if (ctx != NULL)
        buf_init(&ctx->body, s->max_body);
    return ctx;
}

void server_request_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                              enum MHD_RequestTerminationCode toe)
{
    struct req_ctx *ctx = *req_cls;

    (void)cls;
    (void)toe;
    server_conn_set_state(ctx != NULL ? ctx->conn : server_conn_of(c), CONN_IDLE);
    if (ctx == NULL)
        return;
    if (ctx->admission)
        metrics_inflight_add(-1);
    buf_dispose(&ctx->body);
    free(ctx);
    *req_cls = NULL;
}

/* Stop and join the reaper (if it runs). */
void server_reaper_stop(struct server *s)
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

int server_reaper_start(struct server *s, struct wh_error *err)
{
    if (pthread_create(&s->reaper, NULL, reaper_main, s) != 0)
        return wh_error_set(err, WH_ERROR, "cannot start the connection reaper thread");
    s->reaper_running = true;
    return 0;
}
