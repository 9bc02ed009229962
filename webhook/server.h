/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server.h - the HTTP(S) front of the webhook (libmicrohttpd, TLS by GnuTLS).
 *
 * Routes: POST /pods/mutate → admission_handle; POST /jobs/validate →
 * admission_validate_job (the Job webhook); GET (or HEAD) /healthz → 200
 * "ok"; GET (or HEAD) /readyz → 200 "ok" when server_config.ready says so, else
 * 503 with a Status naming the reason ("shutting down" once server_set_draining
 * was called); GET (or HEAD) /metrics → metrics_render in the Prometheus text
 * format 0.0.4. Anything else gets a Kubernetes Status body: 404 unknown path,
 * 405 (with Allow) wrong method, 413 body over the cap, 415 Content-Type not
 * application/json, 503 (with Retry-After: 1, and the connection closed) when
 * the body would take the bodies held by all connections together past
 * max_body_in_flight. Query strings (?timeout=10s) are ignored. Every 4xx
 * answer (and every refused TLS handshake) is logged at info with the
 * client's address and the reason, one line per 5 s for each of the two
 * kinds with the count of those left out; refused handshakes are counted by
 * reason in server_metrics.
 *
 * Listening: the server makes its own socket (server_create), so an IPv6
 * address is bound with IPV6_V6ONLY off: "::", the default, takes IPv4
 * clients too, and falls back to 0.0.0.0 on a kernel without IPv6.
 *
 * TLS: TLS 1.2 and 1.3 only, the Mozilla "intermediate" cipher
 * suites (SERVER_TLS_PRIORITIES), ALPN "http/1.1" only. The pair is served
 * through a certificate callback, so server_set_tls_pair swaps it while the
 * server runs: new handshakes use the new pair, open connections keep theirs.
 *
 * Hostile clients: at most connection_limit connections (and
 * per_ip_limit per client address). Near the limit (server_conn.c says how
 * near) each new connection makes the oldest reusable one give way, as nginx
 * does with its reusable connections: one that has not sent a whole request
 * yet (TLS handshake included) or idles between keep-alive requests, oldest
 * by when it entered that state; a request being handled is never closed.
 * So a flood of idle or slow connections cannot keep a prompt client in the
 * kernel's accept queue. A connection idle for connection_timeout
 * is closed; a request whose headers and body have not all arrived within
 * request_timeout_ms of its start is closed (a new connection's first request
 * starts at accept, so the TLS handshake counts too); the body buffer grows as
 * data arrives, never past max_body, and the bodies of all requests together
 * never past max_body_in_flight (a request reserves its Content-Length when it
 * has one, else its bytes as they arrive, and releases them when it ends on
 * any path), so slow uploads on many connections cannot exhaust memory.
 *
 * Threads: server_create, server_run, server_start and server_stop on the main
 * thread; requests are served on MHD's own worker pool, each request entirely
 * on one worker; one reaper thread of the server closes requests over their time. server_set_tls_pair,
 * server_set_draining and server_in_flight may be called from any thread.
 */
#ifndef WH_SERVER_H
#define WH_SERVER_H

#include <stdatomic.h>
#include <stddef.h>

#include "base/error.h"
#include "webhook/admission.h"
#include "webhook/metrics.h"
#include "webhook/mutate.h"

#define SERVER_MAX_BODY        ((size_t)3 * 1024 * 1024) /* bytes; kube-apiserver's own request cap */
#define SERVER_DEFAULT_TIMEOUT 30                        /* seconds a connection may idle */
/*
 * Concurrent connections: an idle TLS connection costs about 16 KiB of RSS
 * (bench/RESULTS.md, "Connections"), and connections may take a quarter of the
 * Deployment's 64Mi memory request: 64 MiB / 4 / 16 KiB = 1024, rounded down.
 */
#define SERVER_DEFAULT_CONNECTIONS        1000
#define SERVER_DEFAULT_REQUEST_TIMEOUT_MS 10000u /* headers + body of one request */
/*
 * Request body bytes all connections may hold at once (--max-body-bytes-in-flight):
 * a quarter of the Deployment's 256Mi memory limit, beside the 16 MiB that
 * SERVER_DEFAULT_CONNECTIONS idle TLS connections take (bench/RESULTS.md,
 * "Connections"). Without it 1000 slow 3 MiB uploads would hold 3 GB, and an
 * OOM-killed webhook with failurePolicy: Fail refuses every Volcano pod.
 */
#define SERVER_DEFAULT_BODY_BYTES_IN_FLIGHT ((size_t)64 * 1024 * 1024)

/*
 * GnuTLS priority string of the HTTPS server: Mozilla's "intermediate" profile
 * (https://wiki.mozilla.org/Security/Server_Side_TLS, v5.7): TLS 1.3 and 1.2
 * only; TLS 1.3 suites AES-128-GCM, AES-256-GCM, CHACHA20-POLY1305; TLS 1.2
 * ECDHE-ECDSA / ECDHE-RSA / DHE-RSA with those AEAD ciphers only (no CBC, no
 * RSA key exchange, no 3DES/RC4/SHA-1 MACs); groups X25519, P-256, P-384,
 * ffdhe2048; the client's cipher preference is honoured, as the profile says.
 */
#define SERVER_TLS_PRIORITIES                                                                      \
    "SECURE:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"            \
    "+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:+DHE-RSA:"                  \
    "-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-FFDHE2048"

struct server_config {
    const char *bind_address;     /* numeric IPv4 or IPv6 address; IPv6 is bound with
                                     IPV6_V6ONLY off, so "::" takes IPv4 too, and "::"
                                     is 0.0.0.0 where the kernel has no IPv6 (logged at
                                     info); NULL → "::" */
    unsigned port;                /* TCP port; 0 → the OS picks (see server_port) */
    const char *tls_cert_pem;     /* PEM certificate chain; NULL (with tls_key_pem NULL) →
                                     plain HTTP, for tests and the demo only */
    const char *tls_key_pem;      /* PEM private key matching tls_cert_pem */
    unsigned threads;             /* worker threads; 0 → one per CPU the cgroup allows, at
                                     most 64 (server.c says why) */
    unsigned connection_timeout;  /* seconds; 0 → SERVER_DEFAULT_TIMEOUT */
    unsigned connection_limit;    /* 0 → SERVER_DEFAULT_CONNECTIONS */
    unsigned per_ip_limit;        /* connections per client IP address; 0 → no limit */
    unsigned request_timeout_ms;  /* headers + body of a request within this from its
                                     start, else the connection is closed;
                                     0 → SERVER_DEFAULT_REQUEST_TIMEOUT_MS */
    size_t max_body;              /* bytes; 0 → SERVER_MAX_BODY */
    size_t max_body_in_flight;    /* request body bytes held by all connections together, at
                                     least max_body; 0 → SERVER_DEFAULT_BODY_BYTES_IN_FLIGHT */
    struct jobsource src;         /* copied; src.userdata is borrowed and must outlive the
                                     server, and src.get must be callable from any worker;
                                     with src.get_nowait, the workers call it and a review
                                     it cannot answer at once is answered by src.get on a
                                     lookup thread (server_defer.c) */
    unsigned lookup_threads;      /* those lookup threads, also the most reviews deferred at
                                     once; 0 → server_default_lookup_threads(threads) */
    struct mutate_options mutate; /* copied */
    /*
     * POST /pods/mutate: NULL → admission_handle, called with src and mutate.
     * Anything else is for measuring the server alone (bench/bench_transport.c
     * answers a fixed body); it must keep admission_handle's contract.
     */
    admission_fn admission;
    /*
     * POST /jobs/validate (the Job webhook, D17): NULL → admission_validate_job, called
     * with src and mutate like admission.
     */
    admission_fn validate_job;
    /*
     * GET /readyz. NULL → ready whenever the server answers (a server with TLS
     * answers only once its pair is loaded: server_start fails otherwise). Else
     * called on MHD workers (so it must be thread-safe) with ready_userdata
     * (borrowed, must outlive the server): NULL when ready, else the reason, a
     * constant string ("jobs cache not synced"), answered with 503.
     */
    const char *(*ready)(void *userdata);
    void *ready_userdata;
    /* GET /metrics: passed to metrics_render (may be NULL); called on MHD workers
     * with metrics_userdata (borrowed, must outlive the server). */
    metric_collect_fn metrics_collect;
    void *metrics_userdata;
};

struct server;

/*
 * What the server counts (read by webhook/metrics.c at scrape time). Process-wide,
 * as Prometheus counters are: every server of the process adds to them.
 */
/* Why a TLS handshake failed (the reason label of webhook_tls_handshakes_refused_total). */
enum server_refusal {
    SERVER_REFUSED_NO_DATA = 0,  /* closed without sending a byte (a bare TCP connect) */
    SERVER_REFUSED_NOT_TLS,      /* bytes that are not a TLS ClientHello (plain HTTP, ...) */
    SERVER_REFUSED_TLS_VERSION,  /* a ClientHello of TLS 1.1 or older */
    SERVER_REFUSED_NO_COMMON,    /* no cipher suite, group or signature shared with the profile */
    SERVER_REFUSED_CLIENT_ALERT, /* the client ended it with an alert (e.g. unknown CA) */
    SERVER_REFUSED_CLOSED,       /* the client closed it midway, without an alert */
    SERVER_REFUSED_N
};

/** The label value of reason r ("no_data", "not_tls", ...); "" out of range. */
const char *server_refusal_name(enum server_refusal r);

struct server_metrics {
    struct metric_counter evicted; /* connections closed to make room near connection_limit */
    struct metric_counter handshakes_refused[SERVER_REFUSED_N]; /* by reason */
    atomic_llong body_bytes; /* request body bytes reserved now (max_body_in_flight) */
};
extern struct server_metrics server_metrics;

/**
 * The worker threads used when server_config.threads is 0: one per CPU this
 * process may use, at most 64 (server.c says why one). The CPUs are the online
 * ones, or fewer when the cgroup under cgroup_root (production: "/sys/fs/cgroup";
 * NULL: not looked at) sets a CFS quota, as a pod's limits.cpu does: cgroup v2
 * cpu.max ("QUOTA PERIOD" or "max PERIOD"), else v1 cpu/cpu.cfs_quota_us and
 * cpu/cpu.cfs_period_us; quota/period is rounded up. Missing or unreadable files
 * mean no quota. Any thread; reads files only.
 */
unsigned server_default_threads(const char *cgroup_root);

/**
 * The lookup threads used when server_config.lookup_threads is 0, for threads
 * worker threads: two per core those workers stand for, at most 64. They wait on
 * Job GETs for reviews of Jobs not cached (server_defer.c), and their number is the
 * most such reviews waiting at once. Pure.
 */
unsigned server_default_lookup_threads(unsigned threads);

/**
 * Whether server_start would take addr as server_config.bind_address: a numeric
 * IPv4 or IPv6 address, the latter also in brackets ("[::1]"); no host names
 * (inet_pton, as server_start binds). For checking the flag before anything starts.
 */
bool server_address_valid(const char *addr);

/**
 * Everything of server_start that can fail on its own, and nothing that runs:
 * check the config, parse the TLS pair (GnuTLS) and bind and listen on
 * bind_address:port. No thread starts and nothing is served; connects wait in
 * the kernel's listen queue until server_run. serve_start creates the server
 * before any request to the API server, so a replica that cannot serve (port
 * taken, bad pair) never takes the Lease. The config and the PEM texts are
 * copied; nothing in cfg is needed after the call except cfg->src.userdata
 * and cfg->ready_userdata, which must be usable once server_run is called.
 * @param[out] out the bound server (server_port works), freed by server_stop.
 * @return 0; WH_EINVAL (bad address, only one of cert/key, TLS unsupported by
 *         this libmicrohttpd, max_body_in_flight below max_body); WH_ERROR when the pair does not parse or the
 *         socket cannot listen (err: "cannot listen on ADDR port N: " and the
 *         kernel's reason, e.g. "Address already in use"); WH_ENOMEM.
 */
int server_create(struct server **out, const struct server_config *cfg,
                  struct wh_error *err) WH_WARN_UNUSED;

/**
 * Start serving a server from server_create on MHD's worker threads (and its
 * reaper thread), on the socket it bound. Main thread, once.
 * @return 0; WH_EINVAL when s was not created or runs already; WH_ERROR when
 *         the daemon cannot start (MHD's reason is also logged). On an error s
 *         is still to be freed with server_stop.
 */
int server_run(struct server *s, struct wh_error *err) WH_WARN_UNUSED;

/**
 * server_create, then server_run: bind, listen and start serving.
 * @param[out] out the running server, stopped and freed by server_stop.
 * @return server_create's and server_run's errors (on one, nothing is left to free).
 */
int server_start(struct server **out, const struct server_config *cfg,
                 struct wh_error *err) WH_WARN_UNUSED;

/**
 * Serve a new TLS pair (hot reload): parse and check it first; on
 * success new handshakes use it at once while connections that handshook with
 * the old pair keep it (freed when the last of them closes). PEM texts are
 * copied. Any thread.
 * @return 0; WH_EINVAL when the server has no TLS, or when either PEM does not
 *         parse or the key does not match the first certificate (the old pair
 *         stays; err says why); WH_ENOMEM.
 */
int server_set_tls_pair(struct server *s, const char *cert_pem, const char *key_pem,
                        struct wh_error *err) WH_WARN_UNUSED;

/**
 * Start draining for shutdown: from now on GET /readyz answers 503 "shutting
 * down" and every answer carries "Connection: close"; everything is still
 * served. Any thread; idempotent.
 */
void server_set_draining(struct server *s);

/**
 * Requests being served now: connections that are not idle between keep-alive
 * requests, i.e. accepted and not yet sent their first answer (TLS handshake
 * and request included), or with a request under way. Any thread.
 */
unsigned server_in_flight(const struct server *s);

/**
 * Stop accepting connections (for the last moments of a graceful shutdown):
 * requests under way are still served to the end (libmicrohttpd may close
 * connections idle between keep-alive requests); new connects wait in the
 * kernel's queue and are refused when server_stop closes the socket. Main
 * thread; idempotent.
 */
void server_quiesce(struct server *s);

/** The TCP port actually bound (the one the OS chose when cfg->port was 0). */
unsigned server_port(const struct server *s);

/**
 * The address listened on, as server_config.bind_address gave it ("::" when
 * NULL), or "0.0.0.0" when "::" fell back for want of IPv6. Borrowed: lives as
 * long as s. "" for NULL. Any thread.
 */
const char *server_address(const struct server *s);

/**
 * Stop accepting, close every connection, join the workers and free s.
 * A handler already running finishes before this returns, but its answer may
 * not be sent (kube-apiserver then applies the failurePolicy). A server that
 * was created but never ran closes its socket (queued connects are refused).
 * s may be NULL. Main thread only.
 */
void server_stop(struct server *s);

#endif
