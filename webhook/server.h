/*
 * server.h - the HTTP(S) front of the webhook (libmicrohttpd, TLS by GnuTLS).
 *
 * Routes: POST /pods/mutate → admission_handle; GET (or HEAD) /healthz → 200
 * "ok"; GET (or HEAD) /readyz → 200 "ok" when server_config.ready says so, else
 * 503 with a Status naming the reason. Anything else gets a Kubernetes Status
 * body: 404 unknown path, 405 (with Allow) wrong method, 413 body over the cap,
 * 415 Content-Type not application/json. Query strings (?timeout=10s) are
 * ignored.
 *
 * Threads: server_start/server_stop on the main thread; requests are served
 * on MHD's own worker pool, each request entirely on one worker.
 */
#ifndef WH_SERVER_H
#define WH_SERVER_H

#include <stddef.h>

#include "webhook/error.h"
#include "webhook/mutate.h"

#define SERVER_MAX_BODY ((size_t)3 * 1024 * 1024)   /* bytes; kube-apiserver's own request cap */
#define SERVER_DEFAULT_TIMEOUT 30                    /* seconds a connection may idle */
#define SERVER_DEFAULT_CONNECTIONS 1000              /* concurrent connections */

struct server_config {
    const char *bind_address;     /* numeric IPv4 or IPv6 address; NULL → "0.0.0.0" */
    unsigned port;                /* TCP port; 0 → the OS picks (see server_port) */
    const char *tls_cert_pem;     /* PEM certificate chain; NULL (with tls_key_pem NULL) →
                                     plain HTTP, for tests and the demo only */
    const char *tls_key_pem;      /* PEM private key matching tls_cert_pem */
    unsigned threads;             /* worker threads; 0 → online CPUs, at least 2 */
    unsigned connection_timeout;  /* seconds; 0 → SERVER_DEFAULT_TIMEOUT */
    unsigned connection_limit;    /* 0 → SERVER_DEFAULT_CONNECTIONS */
    size_t max_body;              /* bytes; 0 → SERVER_MAX_BODY */
    struct job_source src;        /* copied; src.userdata is borrowed and must outlive the
                                     server, and src.get must be callable from any worker */
    struct mutate_options mutate; /* copied */
    /*
     * GET /readyz. NULL → ready whenever the server answers (a server with TLS
     * answers only once its pair is loaded: server_start fails otherwise). Else
     * called on MHD workers (so it must be thread-safe) with ready_userdata
     * (borrowed, must outlive the server): NULL when ready, else the reason, a
     * constant string ("jobs cache not synced"), answered with 503.
     */
    const char *(*ready)(void *userdata);
    void *ready_userdata;
};

struct server;

/**
 * Bind, listen and start serving on MHD's worker threads. The config and the
 * PEM texts are copied; nothing in cfg is needed after the call except
 * cfg->src.userdata and cfg->ready_userdata.
 * @param[out] out the running server, stopped and freed by server_stop.
 * @return 0; WH_EINVAL (bad address, only one of cert/key, TLS unsupported by
 *         this libmicrohttpd); WH_ERROR when the daemon cannot start (port in
 *         use, bad PEM: MHD's reason is also logged); WH_ENOMEM.
 */
int server_start(struct server **out, const struct server_config *cfg, struct wh_error *err)
    WH_WARN_UNUSED;

/** The TCP port actually bound (the one the OS chose when cfg->port was 0). */
unsigned server_port(const struct server *s);

/**
 * Stop accepting, close every connection, join the workers and free s.
 * A handler already running finishes before this returns, but its answer may
 * not be sent (kube-apiserver then applies the failurePolicy).
 * s may be NULL. Main thread only.
 */
void server_stop(struct server *s);

#endif
