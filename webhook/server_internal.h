/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server_internal.h - what the three files of the server share, and nothing
 * else includes: struct server and the per-connection and per-request contexts,
 * and the functions one file gives the others.
 *
 *   server.c       routing: the routes, their answers (Kubernetes Status bodies),
 *                  the listening socket and the server's life (create, run,
 *                  drain, quiesce, stop)
 *   server_tls.c   TLS: the refcounted pair (credentials), hot reload
 *                  (server_set_tls_pair) and the GnuTLS callbacks
 *   server_conn.c  connections: the per-connection context and its registry,
 *                  the request time limit and its reaper thread, body gathering
 *                  with the cap, the per-request context's end
 *   server_defer.c admissions whose Job only a GET would find: their connections
 *                  suspended, answered on the lookup threads, resumed
 *
 * Locks: conn_lock guards the connection list, each conn_ctx's fields but creds
 * and the tls_* ones, the counts beside the list and the reaper's flag;
 * tls_lock guards the current pair and every refcount; each server_log_limit
 * has its own lock; defer_lock guards the deferred requests' queue and counts.
 * The rest of struct server is written by server_create and read-only after.
 */
#ifndef WH_SERVER_INTERNAL_H
#define WH_SERVER_INTERNAL_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/error.h"
#include "webhook/server.h"

#define TLS_CHAIN_MAX    16     /* certificates in a served chain */
#define REAPER_PERIOD_MS 200L   /* how often the reaper scans */
#define LOG_PERIOD_MS    5000LL /* at most one line per kind per period */
/* An answer's header record held for its body's (server_tls_answer_coming): an
 * admission answer's header record is about 160 bytes. */
#define TLS_HOLD_MAX 512
/* Buffers of GnuTLS's one push written with the held record in one sendmsg (GnuTLS
 * queues fewer than 32); more: the held record goes alone first. */
#define TLS_PUSH_IOV_MAX 63

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
    bool shut;          /* the reaper or an eviction has shut the socket down */
    struct conn_ctx *prev;
    struct conn_ctx *next;
    struct tls_creds *creds; /* pair of its handshake; the connection's thread only */
    /* The TLS handshake, as server_tls.c's hook saw it; the connection's thread only. */
    bool tls_hello;               /* a ClientHello arrived */
    unsigned tls_hello_version;   /* its legacy_version (0x0303 for TLS 1.2 and 1.3) */
    bool tls_server_hello;        /* our ServerHello went out */
    bool tls_done;                /* the client's Finished arrived: the handshake is complete */
    gnutls_session_t tls_session; /* from the first hook call; freed before CLOSED */
    bool tls_alert_noted;         /* the handshake failed with tls_alert the last alert read */
    unsigned tls_alert;           /* a gnutls_alert_description_t */
    /* One answer's records in one write (server_tls_answer_coming); the connection's thread only. */
    bool tls_push_ours;    /* the session writes through server_tls_push */
    size_t tls_hold_below; /* armed: hold the next record when shorter than this; 0: not */
    size_t tls_held_len;   /* bytes of a held record not yet written */
    unsigned char tls_held[TLS_HOLD_MAX];
};

/*
 * One log line per LOG_PERIOD_MS for a kind of event, with a count of those not
 * logged since the line before (server_log_take). Any thread.
 */
struct server_log_limit {
    pthread_mutex_t lock;
    long long last_ms;        /* monotonic ms of the last line; 0: none yet */
    unsigned long suppressed; /* events since then that were not logged */
};

struct server {
    struct MHD_Daemon *daemon;
    int listen_fd; /* bound and listening until server_run hands it to MHD, then -1 */
    struct jobsource src;
    struct mutate_options mutate;
    admission_fn admission;               /* admission_handle unless the config says otherwise */
    admission_fn validate_job;            /* admission_validate_job unless the config says so */
    const char *(*ready)(void *userdata); /* NULL: always ready */
    void *ready_userdata;
    metric_collect_fn metrics_collect;
    void *metrics_userdata;
    size_t max_body;                    /* bytes */
    size_t body_budget;                 /* max_body_in_flight, bytes */
    atomic_size_t body_bytes;           /* reserved by all requests now (server_body_reserve) */
    unsigned port;                      /* bound (the OS's choice for port 0) */
    char address[INET6_ADDRSTRLEN + 2]; /* listened on: as configured, or 0.0.0.0 for "::"
                                           without IPv6 */
    unsigned threads;                   /* MHD worker pool */
    unsigned connection_limit;
    unsigned per_ip_limit; /* 0: none */
    bool tls;
    long long request_timeout_ms;
    long long idle_timeout_ms;
    atomic_bool draining;             /* server_set_draining was called */
    atomic_bool stopping;             /* server_stop is closing every connection */
    struct server_log_limit tls_log;  /* refused TLS handshakes */
    struct server_log_limit http_log; /* requests answered 4xx by the server */
    atomic_uint in_flight;            /* connections not CONN_IDLE; written under conn_lock */
    unsigned evict_above; /* more open connections than this: the oldest reusable one goes */
    int quiesced_fd;      /* listening socket after server_quiesce, else -1 */

    pthread_mutex_t tls_lock;
    struct tls_creds *creds; /* current pair; NULL without TLS */

    pthread_mutex_t conn_lock;
    pthread_cond_t reaper_cond;
    struct conn_ctx *conns; /* every open connection */
    unsigned open;          /* connections in conns not shut down yet */
    unsigned evicted;       /* evictions not logged yet */
    long long evict_log_ms; /* when evictions were last logged, monotonic ms */
    bool reaper_stop;
    bool reaper_running;
    pthread_t reaper;

    /* Admissions that wait on the API server (server_defer.c). */
    struct jobsource src_nowait; /* src with get = src.get_nowait; get NULL: never deferred */
    unsigned defer_threads;      /* lookup threads to start (server_config.lookup_threads) */
    pthread_mutex_t defer_lock;
    pthread_cond_t defer_cond;  /* a request queued, or defer_stop */
    struct req_ctx *defer_head; /* queued, oldest first (req_ctx.defer_next) */
    struct req_ctx *defer_tail;
    unsigned defer_pending; /* requests taken and not yet resumed, queued or running */
    bool defer_stop;
    unsigned defer_started; /* lookup threads running (written before the daemon starts,
                               and under defer_lock by server_defer_stop) */
    pthread_t *defer_tids;
};

/* Per-request state (MHD's *req_cls), from server_uri_log to server_request_completed. */
struct req_ctx {
    struct conn_ctx *conn; /* its connection's context, NULL if it has none */
    long long deadline_ms; /* headers and body complete by then; 0: none */
    bool begun;            /* access_handler ran request_begin */
    bool admission;        /* counted in metrics_inflight_add */
    admission_fn handler;  /* the route's: pods (s->admission) or Jobs (s->validate_job) */
    struct buf body;       /* body gathered so far, capped at max_body (413 past it) */
    bool answered;         /* a response is queued: discard the rest */
    bool probe;            /* GET/HEAD of a probe path: answered once the request is whole */
    bool too_big;          /* over the cap and the 413 could not be queued yet */
    size_t discarded;      /* bytes dropped since too_big or over_budget was set */
    size_t reserved;       /* bytes of s->body_bytes this request holds */
    bool over_budget;      /* the body would pass max_body_in_flight: 503 at its end */
    /* Deferred to a lookup thread (server_defer.c), which fills these and resumes. */
    struct MHD_Connection *mhd; /* to resume */
    struct req_ctx *defer_next; /* in the server's queue */
    bool deferred_done;         /* the answer below is ready to queue */
    int deferred_status;        /* the HTTP status */
    char *deferred_out;         /* malloc'd answer; freed with the request unless queued */
    size_t deferred_out_len;
};

/* ---- server_defer.c ---- */

/**
 * Start s->defer_threads lookup threads, when s->src has a get_nowait (else none:
 * server_defer_take then always declines). server_run, before the daemon starts.
 * @return 0; WH_ENOMEM or WH_ERROR (no thread left running).
 */
int server_defer_start(struct server *s, struct wh_error *err) WH_WARN_UNUSED;

/**
 * Answer the queued requests, resume their connections and join the lookup threads;
 * server_defer_take declines from here on. server_stop, before MHD_stop_daemon (MHD
 * must not stop with a connection suspended). Waits for the admissions running, each
 * bounded by its GET's timeout. Safe when none were started, and twice.
 */
void server_defer_stop(struct server *s);

/**
 * On c's worker, in the access handler, after admission_handle answered
 * ADMISSION_DEFERRED for ctx's body: when a lookup thread can take it (fewer than
 * s->defer_started are deferred, and the server is not stopping), suspend c and queue
 * ctx; a lookup thread runs ctx->handler with s->src into ctx->deferred_*, sets
 * deferred_done and resumes c, and MHD calls the access handler again.
 * @return true: taken (return MHD_YES, touch ctx no more until called again); false:
 *         nothing done, answer on this thread (server_defer_busy_source).
 */
bool server_defer_take(struct server *s, struct MHD_Connection *c, struct req_ctx *ctx);

/**
 * A job source (userdata s, borrowed) whose get answers WH_EBUSY, "too many reviews
 * waiting on volcano job reads from the API server (N); try again" (N: the lookup
 * threads), or once server_defer_stop has begun "the webhook is stopping and reads no
 * more volcano jobs from the API server; try again": the answer of a review that
 * server_defer_take declined, which mutate_review gives per --job-lookup-failure
 * (mutate_options.lookup_failure), as for a Job that cannot be read.
 */
struct jobsource server_defer_busy_source(struct server *s);

/* ---- server_tls.c ---- */

/**
 * Parse a PEM chain (at most TLS_CHAIN_MAX certificates) and key with GnuTLS and
 * check that the key belongs to the first certificate. The PEM texts are
 * borrowed for the call.
 * @param[out] out a new pair with one reference (the caller's), freed by
 *             server_tls_creds_release or server_tls_creds_free
 * @return 0; WH_EINVAL (err says which PEM does not parse, or that the key does
 *         not match); WH_ENOMEM.
 */
int server_tls_creds_parse(const char *cert_pem, const char *key_pem, struct tls_creds **out,
                           struct wh_error *err) WH_WARN_UNUSED;

/** Free cr whatever its refcount (server_free: nothing else holds it); NULL is fine. */
void server_tls_creds_free(struct tls_creds *cr);

/** Drop a reference on cr (NULL is fine); the last one frees it. Any thread. */
void server_tls_creds_release(struct server *s, struct tls_creds *cr);

/**
 * gnutls_certificate_retrieve_function2 (MHD_OPTION_HTTPS_CERT_CALLBACK), on
 * the connection's worker during a handshake: the current pair, with a
 * reference kept in the connection's conn_ctx (GnuTLS does not copy it).
 * @return 0, or -1 (the handshake fails) without a conn_ctx or a pair.
 */
int server_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                        const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                        gnutls_pcert_st **pcert, unsigned int *pcert_length,
                        gnutls_privkey_t *privkey);

/**
 * A new connection (server_conn_notify, before any handshake byte): offer
 * "http/1.1" alone in ALPN (MHD_OPTION_TLS_NO_ALPN keeps MHD's own list off),
 * install the handshake hook, and, when cc is not NULL, the pull function that
 * lets server_tls_handshake_failed find the connection (never without a cc,
 * whose CLOSED is what forgets the fd). Nothing without TLS.
 */
void server_tls_conn_start(const struct server *s, struct MHD_Connection *c,
                           const struct conn_ctx *cc);

/**
 * A connection is closing (server_conn_notify, CLOSED, with the socket still
 * open): when its TLS handshake never completed and neither the server nor
 * its shutdown closed it, count it in server_metrics.handshakes_refused by
 * reason and log "http: refused TLS handshake" at info (rate-limited: tls_log)
 * with the client's address. Nothing without TLS.
 */
void server_tls_conn_end(struct server *s, struct MHD_Connection *c, const struct conn_ctx *cc);

/**
 * MHD logged that a handshake failed (its one line, on the worker that ran the
 * handshake, before it frees the session): note on that connection's conn_ctx the
 * last alert the client sent, for server_tls_conn_end, which runs after MHD
 * 0.9.75 has freed the session (gnutls_deinit, then CLOSED). The connection is
 * the one whose socket this thread last read for GnuTLS (server_tls.c's pull
 * function); nothing is noted when there is none. Takes s->conn_lock.
 */
void server_tls_handshake_failed(struct server *s);

/**
 * An answer with a body of body_len bytes (> 0, sent in full: not a HEAD's) is
 * about to be queued on c: have its header record go out in the same write as
 * its body's first record. MHD 0.9.75 hands GnuTLS the header and the body in
 * two gnutls_record_send calls, one sendmsg each; on loopback every write also
 * runs the receiver's TCP path and wakes it, so two writes per answer cost
 * about a sixth of the throughput (bench/RESULTS.md). The session then writes
 * through server_tls_push (its send pointer is cc), which holds the next record when
 * it is shorter than the body (so it cannot be the whole answer) and at most
 * TLS_HOLD_MAX bytes, and writes it before the following record in one
 * sendmsg; when the socket takes only part, what is left waits for the next
 * write as GnuTLS's own unsent bytes do (GNUTLS_E_AGAIN: MHD waits until the
 * socket is writable), so nothing is held without a write to come. Nothing
 * without TLS, without a conn_ctx, or when kTLS sends for GnuTLS. cc outlives
 * the session: MHD 0.9.75 frees the session (gnutls_deinit) before the CLOSED
 * notification that frees cc, and sends nothing between.
 */
void server_tls_answer_coming(const struct server *s, struct MHD_Connection *c, size_t body_len);

/**
 * gnutls_vec_push_func of a session armed by server_tls_answer_coming: ptr is
 * its conn_ctx (fd, tls_hold_below, the held record). Holds the records of iov
 * (taken whole, nothing written) when armed, nothing is held yet, and they are
 * shorter than tls_hold_below and at most TLS_HOLD_MAX bytes; disarms. Else one
 * sendmsg of the held bytes, then iov (more than TLS_PUSH_IOV_MAX buffers: the
 * held bytes in a sendmsg of their own first). A short count only when the socket
 * is full: MHD's epoll is edge-triggered, so a short write with room left would
 * wait for a writable event that never comes.
 * @return the bytes of iov taken (held or written); -1 with errno: EAGAIN when
 *         the socket took none of iov (it is full: the held bytes it did take
 *         leave the hold, GnuTLS keeps iov and MHD writes again when the socket
 *         is writable), or sendmsg's error.
 */
ssize_t server_tls_push(gnutls_transport_ptr_t ptr, const giovec_t *iov, int iovcnt);

/**
 * The request on cc is over (answered, refused or aborted): an answer armed by
 * server_tls_answer_coming and never sent (the connection closed first) holds
 * nothing later. cc may be NULL. The connection's thread.
 */
void server_tls_answer_done(struct conn_ctx *cc);

/* ---- server_conn.c ---- */

/**
 * Whether an event of the kind l limits may be logged now: the first one, and
 * then the first one LOG_PERIOD_MS or more after the last line logged.
 * @param[out] suppressed events of the kind not logged since that last line
 *             (set when this returns true)
 * @return true: log it now; false: counted in the next line's suppressed.
 */
bool server_log_take(struct server_log_limit *l, unsigned long *suppressed);

/**
 * The client's address of c as "ADDR:PORT" ("[ADDR]:PORT" for IPv6; an IPv4
 * client of a dual-stack socket as plain IPv4) into buf (len bytes, at least
 * INET6_ADDRSTRLEN + 8). "unknown" when MHD has none. @return buf.
 */
const char *server_client_address(struct MHD_Connection *c, char *buf, size_t len);

/** The connection's context (borrowed), NULL when server_conn_notify could not make one. */
struct conn_ctx *server_conn_of(struct MHD_Connection *c);

/**
 * MHD_OPTION_NOTIFY_CONNECTION (cls: the server): on STARTED a new conn_ctx in
 * the list, in flight; on CLOSED out of the list, its pair released, freed.
 */
void server_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe);

/** Move a connection's request to state st from now (cc may be NULL). Takes conn_lock. */
void server_conn_set_state(struct conn_ctx *cc, enum conn_state st);

/**
 * MHD_OPTION_URI_LOG_CALLBACK (cls: the server), once the request line is in:
 * start the request's clock. @return a new req_ctx that MHD holds as *req_cls
 * until server_request_completed frees it; NULL when out of memory (the
 * access handler then makes one).
 */
void *server_uri_log(void *cls, const char *uri, struct MHD_Connection *c);

/**
 * MHD_OPTION_NOTIFY_COMPLETED: the request is over (answered or aborted): its
 * connection is idle, its admission leaves the in-flight gauge, its bytes of
 * the body budget are released (server_body_release), its req_ctx and body are
 * freed.
 */
void server_request_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                              enum MHD_RequestTerminationCode toe);

/** A zeroed request context whose body may grow to s->max_body; NULL on ENOMEM. */
struct req_ctx *server_req_ctx_create(const struct server *s);

/**
 * Make req hold at least total bytes of the server's body budget (its
 * Content-Length up front, or its body so far as it arrives): reserves what it
 * lacks, all or nothing. Any worker.
 * @return true when req holds total bytes now; false when that would take the
 *         requests' bodies together past s->body_budget (nothing reserved).
 */
bool server_body_reserve(struct server *s, struct req_ctx *req, size_t total);

/** Give back every byte req holds of the body budget (idempotent). Any worker. */
void server_body_release(struct server *s, struct req_ctx *req);

/** Start the reaper thread (server_run). @return 0 or WH_ERROR. */
int server_reaper_start(struct server *s, struct wh_error *err) WH_WARN_UNUSED;

/** Stop and join the reaper, if it runs (server_stop, before MHD closes the sockets). */
void server_reaper_stop(struct server *s);

#endif
