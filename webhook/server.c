/*
 * server.c - libmicrohttpd front: routes, body gathering with a hard cap,
 * Kubernetes Status bodies for every error, TLS through MHD (GnuTLS).
 *
 * Design: MHD calls access_handler several times per request. The first call
 * only routes and checks headers (method, Content-Type, Content-Length), so a
 * refusal is answered before any body byte is read; the calls that follow
 * append the body to a per-connection buffer (struct req_ctx) that never grows
 * past the cap; the last call (no more data) runs admission_handle. A chunked
 * body (no Content-Length) that passes the cap is dropped from there on and
 * answered 413 at its end, since MHD 0.9 cannot answer mid-body; one that goes
 * on for another cap's worth has the connection closed. The
 * buffer is freed in request_completed (MHD_OPTION_NOTIFY_COMPLETED), which
 * MHD calls on every path, including aborted connections.
 *
 * Threads: server_start/server_stop on the main thread. access_handler,
 * request_completed and mhd_log run on MHD worker threads (a pool with one
 * epoll/poll loop per thread); each request stays on one worker. struct
 * server is read-only while the daemon runs, so no locks.
 */
#include "webhook/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "webhook/admission.h"
#include "webhook/log.h"

#define PATH_MUTATE  "/pods/mutate"
#define PATH_HEALTHZ "/healthz"
#define PATH_READYZ  "/readyz"
#define BODY_INITIAL ((size_t)64 * 1024)   /* first buffer when the length is unknown */
#define ECHO_MAX     96                     /* bytes of client text echoed in a message */

/* TLS 1.2+ only: kube-apiserver speaks 1.2 and 1.3. */
static const char tls_priorities[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

static const char status_enomem[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"out of memory\",\"reason\":\"InternalError\",\"code\":500}";

struct server {
    struct MHD_Daemon *daemon;
    struct job_source src;
    struct mutate_options mutate;
    const char *(*ready)(void *userdata);  /* NULL: always ready */
    void *ready_userdata;
    size_t max_body;          /* bytes */
    unsigned port;
    char *cert_pem;           /* owned copies, alive as long as the daemon */
    char *key_pem;
};

/* Per-request state (MHD's *req_cls), freed in request_completed. */
struct req_ctx {
    char *buf;                /* body gathered so far */
    size_t len;               /* bytes in buf */
    size_t cap;               /* bytes allocated */
    bool answered;            /* a response is queued: discard the rest */
    bool too_big;             /* over the cap and the 413 could not be queued yet */
    size_t discarded;         /* bytes dropped since too_big was set */
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
    size_t i;

    for (i = 0; s != NULL && s[i] != '\0' && i < ECHO_MAX && i + 4 < len; i++)
        buf[i] = ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7E) ? '?' : s[i];
    if (s != NULL && s[i] != '\0') {
        memcpy(buf + i, "...", 4);
        return buf;
    }
    buf[i] = '\0';
    return buf;
}

/* Queue body (copied unless must_free, then freed by MHD) with status and type. */
static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, const char *type,
                             const char *allow, char *body, size_t len, bool must_free)
{
    struct MHD_Response *r;
    enum MHD_Result ret;

    r = MHD_create_response_from_buffer(len, body,
                                        must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
    if (r == NULL) {
        if (must_free)
            free(body);
        return MHD_NO;   /* MHD closes the connection */
    }
    if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) == MHD_NO
        || (allow != NULL && MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow) == MHD_NO)) {
        MHD_destroy_response(r);
        return MHD_NO;
    }
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Answer with a Kubernetes Status (kube-api-facts "Errors: Status objects"). */
static enum MHD_Result queue_status(struct MHD_Connection *c, unsigned code, const char *reason,
                                    const char *allow, const char *message)
{
    json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status",
                           "apiVersion", "v1", "metadata", "status", "Failure", "message",
                           message, "reason", reason, "code", (int)code);
    char *text = st != NULL ? json_dumps(st, JSON_COMPACT) : NULL;

    json_decref(st);
    if (text == NULL)
        return queue(c, code, "application/json", allow, (char *)status_enomem,
                     sizeof(status_enomem) - 1, false);
    return queue(c, code, "application/json", allow, text, strlen(text), true);
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

/*
 * First call of a request: route and check the headers. @return MHD_YES when
 * the body should be read, else the result of queueing the answer (healthz or
 * a refusal) with ctx->answered set, so that later calls discard the body.
 */
static enum MHD_Result request_begin(struct server *s, struct MHD_Connection *c, const char *url,
                                     const char *method, struct req_ctx *ctx)
{
    char a[ECHO_MAX + 4];
    char b[ECHO_MAX + 4];
    char msg[384];
    const char *v;

    if (strcmp(url, PATH_HEALTHZ) == 0) {
        ctx->answered = true;
        if (strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0)
            return queue(c, MHD_HTTP_OK, "text/plain; charset=utf-8", NULL, (char *)"ok", 2,
                         false);
        snprintf(msg, sizeof(msg), "method %s is not allowed on " PATH_HEALTHZ ", use GET",
                 echo_safe(method, a, sizeof(a)));
        return queue_status(c, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed", "GET, HEAD", msg);
    }
    if (strcmp(url, PATH_READYZ) == 0) {
        const char *why = NULL;

        ctx->answered = true;
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
            snprintf(msg, sizeof(msg), "method %s is not allowed on " PATH_READYZ ", use GET",
                     echo_safe(method, a, sizeof(a)));
            return queue_status(c, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed", "GET, HEAD",
                                msg);
        }
        if (s->ready != NULL)
            why = s->ready(s->ready_userdata);
        if (why == NULL)
            return queue(c, MHD_HTTP_OK, "text/plain; charset=utf-8", NULL, (char *)"ok", 2,
                         false);
        return queue_status(c, MHD_HTTP_SERVICE_UNAVAILABLE, "ServiceUnavailable", NULL, why);
    }
    if (strcmp(url, PATH_MUTATE) != 0) {
        ctx->answered = true;
        snprintf(msg, sizeof(msg), "no such path \"%s\" (the webhook serves POST " PATH_MUTATE
                 ")", echo_safe(url, a, sizeof(a)));
        return queue_status(c, MHD_HTTP_NOT_FOUND, "NotFound", NULL, msg);
    }
    if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
        ctx->answered = true;
        snprintf(msg, sizeof(msg), "method %s is not allowed on " PATH_MUTATE ", use POST",
                 echo_safe(method, a, sizeof(a)));
        return queue_status(c, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed", "POST", msg);
    }
    v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!content_type_json(v)) {
        ctx->answered = true;
        if (v == NULL)
            snprintf(msg, sizeof(msg), "Content-Type must be application/json, got none");
        else
            snprintf(msg, sizeof(msg), "Content-Type must be application/json, got \"%s\"",
                     echo_safe(v, b, sizeof(b)));
        return queue_status(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "UnsupportedMediaType", NULL,
                            msg);
    }
    /* MHD has checked Content-Length already (400 on a malformed one). */
    v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (v != NULL) {
        char *end;
        unsigned long long n;

        errno = 0;
        n = strtoull(v, &end, 10);
        if (errno != 0 || n > s->max_body) {
            ctx->answered = true;
            snprintf(msg, sizeof(msg), "request body is larger than %zu bytes", s->max_body);
            return queue_status(c, MHD_HTTP_CONTENT_TOO_LARGE, "RequestEntityTooLarge", NULL,
                                msg);
        }
        /* Reserve once: the length is known and within the cap. */
        if (end != v && n > 0) {
            ctx->buf = malloc((size_t)n);
            ctx->cap = ctx->buf != NULL ? (size_t)n : 0;
        }
    }
    return MHD_YES;
}

/* Append data to ctx->buf. @return 0, WH_ETOOBIG past the cap, WH_ENOMEM. */
static int body_append(struct req_ctx *ctx, const char *data, size_t n, size_t max)
{
    if (n > max - ctx->len)
        return WH_ETOOBIG;
    if (ctx->len + n > ctx->cap) {
        size_t cap = ctx->cap > 0 ? ctx->cap : BODY_INITIAL;
        char *nb;

        while (cap < ctx->len + n)
            cap = cap > max / 2 ? max : cap * 2;
        nb = realloc(ctx->buf, cap);
        if (nb == NULL)
            return WH_ENOMEM;
        ctx->buf = nb;
        ctx->cap = cap;
    }
    memcpy(ctx->buf + ctx->len, data, n);
    ctx->len += n;
    return 0;
}

static enum MHD_Result queue_too_big(struct server *s, struct MHD_Connection *c)
{
    char msg[96];

    snprintf(msg, sizeof(msg), "request body is larger than %zu bytes", s->max_body);
    return queue_status(c, MHD_HTTP_CONTENT_TOO_LARGE, "RequestEntityTooLarge", NULL, msg);
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
        ctx = calloc(1, sizeof(*ctx));
        if (ctx == NULL)
            return MHD_NO;
        *req_cls = ctx;  /* now owned by MHD until request_completed */
        return request_begin(s, c, url != NULL ? url : "", method != NULL ? method : "", ctx);
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;

        *upload_data_size = 0;  /* consumed (or discarded) */
        if (ctx->answered)
            return MHD_YES;
        if (ctx->too_big) {
            /* Do not drain an endless chunked body: close after another cap's worth. */
            ctx->discarded += n < s->max_body - ctx->discarded ? n : s->max_body - ctx->discarded;
            return ctx->discarded < s->max_body ? MHD_YES : MHD_NO;
        }
        rc = body_append(ctx, upload_data, n, s->max_body);
        if (rc == WH_ETOOBIG) {
            /* Stop buffering at once; free what we have. */
            free(ctx->buf);
            ctx->buf = NULL;
            ctx->len = ctx->cap = 0;
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
            return queue_status(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "InternalError", NULL,
                                "out of memory");
        }
        return MHD_YES;
    }
    /* Whole body received. */
    if (ctx->answered)
        return MHD_YES;
    ctx->answered = true;
    if (ctx->too_big)
        return queue_too_big(s, c);
    status = admission_handle(ctx->buf, ctx->len, &s->src, &s->mutate, &out, &out_len);
    /* The body is no longer needed: release it before the answer is sent. */
    free(ctx->buf);
    ctx->buf = NULL;
    ctx->len = ctx->cap = 0;
    if (out == NULL)
        return queue(c, (unsigned)status, "application/json", NULL, (char *)status_enomem,
                     sizeof(status_enomem) - 1, false);
    return queue(c, (unsigned)status, "application/json", NULL, out, out_len, true);
}

static void request_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                              enum MHD_RequestTerminationCode toe)
{
    struct req_ctx *ctx = *req_cls;

    (void)cls;
    (void)c;
    (void)toe;
    if (ctx == NULL)
        return;
    free(ctx->buf);
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
            return wh_error_set(err, WH_EINVAL, "bind address \"%s\" is not an IP address",
                                addr);
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

static unsigned default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    if (n < 2)
        return 2;
    return n > 256 ? 256 : (unsigned)n;
}

int server_start(struct server **out, const struct server_config *cfg, struct wh_error *err)
{
    struct server *s = NULL;
    struct sockaddr_storage ss;
    struct MHD_OptionItem opts[8];
    const union MHD_DaemonInfo *info;
    const char *addr = cfg->bind_address != NULL ? cfg->bind_address : "0.0.0.0";
    bool tls = cfg->tls_cert_pem != NULL || cfg->tls_key_pem != NULL;
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
    if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return wh_error_set(err, WH_EINVAL, "this libmicrohttpd was built without TLS");
    rc = parse_bind(addr, cfg->port, &ss, err);
    if (rc < 0)
        return rc;

    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    s->src = cfg->src;
    s->mutate = cfg->mutate;
    s->ready = cfg->ready;
    s->ready_userdata = cfg->ready_userdata;
    s->max_body = cfg->max_body > 0 ? cfg->max_body : SERVER_MAX_BODY;

    flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    /* epoll where this MHD has it, else poll; never select (FD_SETSIZE). */
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL
                                                                     : MHD_USE_POLL;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;

    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &ss};
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_THREAD_POOL_SIZE,
        (intptr_t)(cfg->threads > 0 ? cfg->threads : default_threads()), NULL};
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_CONNECTION_TIMEOUT,
        (intptr_t)(cfg->connection_timeout > 0 ? cfg->connection_timeout
                                               : SERVER_DEFAULT_TIMEOUT),
        NULL};
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_CONNECTION_LIMIT,
        (intptr_t)(cfg->connection_limit > 0 ? cfg->connection_limit
                                             : SERVER_DEFAULT_CONNECTIONS),
        NULL};
    if (tls) {
        s->cert_pem = strdup(cfg->tls_cert_pem);
        s->key_pem = strdup(cfg->tls_key_pem);
        if (s->cert_pem == NULL || s->key_pem == NULL) {
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
            goto out;
        }
        flags |= MHD_USE_TLS;
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, s->cert_pem};
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, s->key_pem};
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                            (void *)tls_priorities};
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

    s->daemon = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, access_handler, s,
                                 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                                 MHD_OPTION_NOTIFY_COMPLETED, request_completed, NULL,
                                 MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (s->daemon == NULL) {
        rc = wh_error_set(err, WH_ERROR,
                          "cannot start the %s server on %s port %u (see the log line before)",
                          tls ? "HTTPS" : "HTTP", addr, cfg->port);
        goto out;
    }
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info != NULL && info->port != 0 ? info->port : cfg->port;
    *out = s;
    s = NULL;  /* now owned by the caller */
    rc = 0;
out:
    if (s != NULL) {
        free(s->cert_pem);
        free(s->key_pem);
        free(s);
    }
    return rc;
}

unsigned server_port(const struct server *s)
{
    return s != NULL ? s->port : 0;
}

void server_stop(struct server *s)
{
    if (s == NULL)
        return;
    if (s->daemon != NULL)
        MHD_stop_daemon(s->daemon);
    free(s->cert_pem);
    free(s->key_pem);
    free(s);
}
