/* SPDX-License-Identifier: Apache-2.0 */
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
 * The connection limit: MHD stops accepting when it holds connection_limit
 * connections (each worker its share), and a new client then waits in the
 * kernel's queue until one closes. So server_conn_notify keeps the open ones
 * (not shut down yet) at evict_above, a little below the limit: a new
 * connection past it shuts down the oldest reusable one (any state but
 * CONN_HANDLING, oldest since_ms first, found by a scan of the list), as
 * nginx's ngx_drain_connections() closes its oldest reusable connections. The
 * reserve (at least one per worker) keeps every worker below its share in the
 * time a shut-down socket takes to reach its worker's loop. A client that
 * sends its request promptly is the newest in the list, so a flood reaches
 * it last. The reaper logs the evictions, at most once per LOG_PERIOD_MS.
 *
 * Requests: server_uri_log makes the struct req_ctx (MHD's *req_cls) when
 * the request line arrives; the body is appended to its buffer, which grows as
 * data arrives and never past the cap (a Content-Length is never trusted for
 * an allocation); server_request_completed (MHD_OPTION_NOTIFY_COMPLETED),
 * which MHD calls on every path once uri_log ran, aborted connections
 * included, frees it.
 *
 * The body budget: s->body_bytes counts the body bytes reserved by every
 * request (server_body_reserve: a compare-and-swap loop, so concurrent
 * requests never pass s->body_budget together). A request gives its bytes back
 * when its body is no longer needed and, whatever happened to it, in
 * server_request_completed (server_body_release is idempotent).
 *
 * Threads: everything here but the reaper runs on MHD workers (each
 * connection stays on one); reaper_main is the server's own thread, started
 * by server_run and joined by server_stop.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "webhook/metrics.h"
#include "webhook/server.h"
#include "webhook/server_internal.h"

struct server_metrics server_metrics;

/* The connection's context (MHD socket_context), NULL when server_conn_notify could not make one. */
struct conn_ctx *server_conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        c != NULL ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;

    return ci != NULL ? ci->socket_context : NULL;
}

/* Shut cc's socket down (MHD then closes it as a vanished client's). conn_lock held. */
static void conn_shut_locked(struct server *s, struct conn_ctx *cc)
{
    /* The socket is open: its CLOSED notification has not run (conn_lock). */
    shutdown(cc->fd, SHUT_RDWR);
    cc->shut = true;
    s->open--;
}

/*
 * The connection that has been reusable the longest, other than keep: any state
 * but CONN_HANDLING, with a socket not shut down yet. NULL when there is none.
 * conn_lock held.
 */
static struct conn_ctx *conn_oldest_reusable_locked(struct server *s, const struct conn_ctx *keep)
{
    struct conn_ctx *best = NULL;

    for (struct conn_ctx *cc = s->conns; cc != NULL; cc = cc->next) {
        if (cc == keep || cc->shut || cc->fd < 0 || cc->state == CONN_HANDLING)
            continue;
        /* <=: the list is newest first, so of equal times the later one is older */
        if (best == NULL || cc->since_ms <= best->since_ms)
            best = cc;
    }
    return best;
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
        cc = calloc(1, sizeof(*cc));
        server_tls_conn_start(s, c, cc); /* before any handshake byte */
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
        s->open++;
        if (s->open > s->evict_above) {
            struct conn_ctx *old = conn_oldest_reusable_locked(s, cc);

            if (old != NULL) {
                conn_shut_locked(s, old);
                s->evicted++;
                metric_counter_add(&server_metrics.evicted, 1);
            }
        }
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
    if (!cc->shut)
        s->open--;
    if (cc->prev != NULL)
        cc->prev->next = cc->next;
    else
        s->conns = cc->next;
    if (cc->next != NULL)
        cc->next->prev = cc->prev;
    pthread_mutex_unlock(&s->conn_lock);
    /* Out of the list: nothing else touches cc now, and the socket is still open. */
    server_tls_conn_end(s, c, cc);
    server_tls_creds_release(s, cc->creds);
    free(cc);
    *socket_context = NULL;
}

bool server_log_take(struct server_log_limit *l, unsigned long *suppressed)
{
    long long now = clock_mono_ms();
    bool take;

    pthread_mutex_lock(&l->lock);
    take = l->last_ms == 0 || now - l->last_ms >= LOG_PERIOD_MS;
    if (take) {
        *suppressed = l->suppressed;
        l->suppressed = 0;
        l->last_ms = now > 0 ? now : 1;
    } else {
        l->suppressed++;
    }
    pthread_mutex_unlock(&l->lock);
    return take;
}

const char *server_client_address(struct MHD_Connection *c, char *buf, size_t len)
{
    const union MHD_ConnectionInfo *ci =
        c != NULL ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
    const struct sockaddr *sa = ci != NULL ? ci->client_addr : NULL;
    char a[INET6_ADDRSTRLEN];

    snprintf(buf, len, "unknown");
    if (sa != NULL && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)sa;

        if (inet_ntop(AF_INET, &in4->sin_addr, a, sizeof(a)) != NULL)
            snprintf(buf, len, "%s:%u", a, ntohs(in4->sin_port));
    } else if (sa != NULL && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

        /* "::" listens dual-stack: an IPv4 client arrives as ::ffff:a.b.c.d */
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
            if (inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], a, sizeof(a)) != NULL)
                snprintf(buf, len, "%s:%u", a, ntohs(in6->sin6_port));
        } else if (inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a)) != NULL) {
            snprintf(buf, len, "[%s]:%u", a, ntohs(in6->sin6_port));
        }
    }
    return buf;
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
            conn_shut_locked(s, cc);
            closed++;
        }
        if (closed > 0)
            LOG_INFO("http: closed connections over their time count=%u request_timeout_ms=%lld",
                     closed, s->request_timeout_ms);
        if (s->evicted > 0 && now - s->evict_log_ms >= LOG_PERIOD_MS) {
            LOG_INFO("http: connection limit near, closed the oldest idle or incomplete "
                     "connections count=%u open=%u limit=%u",
                     s->evicted, s->open, s->connection_limit);
            s->evicted = 0;
            s->evict_log_ms = now;
        }
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

bool server_body_reserve(struct server *s, struct req_ctx *req, size_t total)
{
    size_t need = total > req->reserved ? total - req->reserved : 0;
    size_t cur = atomic_load(&s->body_bytes);

    if (need == 0)
        return true;
    do {
        if (cur > s->body_budget || need > s->body_budget - cur)
            return false;
    } while (!atomic_compare_exchange_weak(&s->body_bytes, &cur, cur + need));
    req->reserved += need;
    atomic_fetch_add(&server_metrics.body_bytes, (long long)need);
    return true;
}

void server_body_release(struct server *s, struct req_ctx *req)
{
    if (req->reserved == 0)
        return;
    atomic_fetch_sub(&s->body_bytes, req->reserved);
    atomic_fetch_sub(&server_metrics.body_bytes, (long long)req->reserved);
    req->reserved = 0;
}

void server_request_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                              enum MHD_RequestTerminationCode toe)
{
    struct req_ctx *ctx = *req_cls;
    struct conn_ctx *cc = ctx != NULL ? ctx->conn : server_conn_of(c);

    (void)toe;
    server_conn_set_state(cc, CONN_IDLE);
    server_tls_answer_done(cc);
    if (ctx == NULL)
        return;
    if (ctx->admission)
        metrics_inflight_add(-1);
    server_body_release(cls, ctx); /* answered, refused or aborted: every path ends here */
    buf_dispose(&ctx->body);
    free(ctx->deferred_out); /* a lookup thread's answer never queued */
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
