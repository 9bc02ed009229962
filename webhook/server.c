/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server.c - libmicrohttpd front, routing (webhook/server.h): the routes and
 * their checks, Kubernetes Status bodies for every error, /metrics, and the
 * server's life: the listening socket, the daemon, draining, quiesce, stop.
 * TLS lives in server_tls.c, connections and body gathering in server_conn.c
 * (the three share webhook/server_internal.h).
 *
 * Design: MHD calls access_handler several times per request. The first call
 * only routes and checks headers (method, Content-Type, Content-Length), so a
 * refusal is answered before any body byte is read; the calls that follow
 * append the body to the request's buffer (a struct buf capped at max_body); the
 * last call (no more data) runs admission_handle. A chunked body (no
 * Content-Length) that passes the cap is dropped from there on and answered
 * 413 at its end, since MHD 0.9 cannot answer mid-body; one that goes on for
 * another cap's worth has the connection closed. The body also reserves its
 * bytes of the budget all requests share (max_body_in_flight,
 * server_body_reserve): its Content-Length in the first call, so a request
 * over the budget is answered 503 before its body, else as bytes arrive (a
 * chunked body over the budget is dropped from there on and answered 503 at
 * its end, as one over the cap).
 *
 * Threads: server_create/server_run/server_stop on the main thread.
 * access_handler and mhd_log run on MHD worker threads (a pool with one
 * epoll/poll loop per thread); each connection stays on one worker. A review
 * whose Job only a GET would find is answered on a lookup thread while its
 * connection is suspended (server_defer.c). draining and in_flight are atomics;
 * the rest of struct server is read-only while the daemon runs.
 */
#include "webhook/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
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
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/sanitize.h"
#include "webhook/admission.h"
#include "webhook/server_internal.h"

#define PATH_MUTATE       "/pods/mutate"
#define PATH_VALIDATE_JOB "/jobs/validate"
#define PATH_HEALTHZ      "/healthz"
#define PATH_READYZ       "/readyz"
#define PATH_METRICS      "/metrics"
#define ECHO_MAX          96 /* bytes of client text echoed in a message */
#define METRICS_TYPE      "text/plain; version=0.0.4; charset=utf-8"

static const char status_enomem[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"out of memory\",\"reason\":\"InternalError\",\"code\":500}";

static void log_refusal(struct server *s, struct MHD_Connection *c, unsigned code,
                        const char *reason, const char *message);

/*
 * MHD's line for an error answer of its own (a request it cannot parse):
 * "Error processing request (HTTP response code is 400 ('<html>...</html>')).
 * Closing connection." @return true when msg is one, logged as log_refusal does
 * (the page's text without its tags as the message; no client address there).
 */
static bool mhd_refusal(struct server *s, const char *msg)
{
    static const char prefix[] = "Error processing request (HTTP response code is ";
    const char *p = strstr(msg, "<body>");
    const char *end = p != NULL ? strstr(p, "</body>") : NULL;
    char text[256];
    size_t n = 0;
    unsigned code;

    if (strncmp(msg, prefix, sizeof(prefix) - 1) != 0
        || sscanf(msg + sizeof(prefix) - 1, "%3u", &code) != 1)
        return false;
    for (p = p != NULL ? p + 6 : NULL; p != NULL && p < end && n + 1 < sizeof(text); p++) {
        if (*p == '<') {
            while (p < end && *p != '>')
                p++;
            continue;
        }
        text[n++] = *p;
    }
    text[n] = '\0';
    log_refusal(s, NULL, code, "BadRequest", n > 0 ? text : "malformed request");
    return true;
}

/* Route MHD's own error messages to our log (one line each; cls: the server). */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    size_t n;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    /* MHD's one line for every failed handshake, with no address: server_tls_conn_end
     * logs each (rate-limited) with the client and the reason instead. */
    if (strstr(msg, "received handshake message out of context") != NULL) {
        server_tls_handshake_failed(cls); /* the session is still there: its last alert */
        LOG_DEBUG("http: %s", msg);
        return;
    }
    if (cls != NULL && mhd_refusal(cls, msg))
        return;
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

/* ---- answers ---- */

/* How queue_ex answers. */
enum answer_flags {
    ANSWER_BUSY = 1,  /* "Retry-After: 1" and "Connection: close" (over the body budget) */
    ANSWER_OWNED = 2, /* body is malloc'd and MHD frees it; else MHD copies it */
    ANSWER_WHOLE = 4, /* the body is sent (not a HEAD's answer): its records may go out with
                       * the header's in one write (server_tls_answer_coming) */
};

/* Queue body with status and type, as flags (enum answer_flags) say. */
static enum MHD_Result queue_ex(struct server *s, struct MHD_Connection *c, unsigned status,
                                const char *type, const char *allow, char *body, size_t len,
                                unsigned flags)
{
    bool busy = (flags & ANSWER_BUSY) != 0;
    bool must_free = (flags & ANSWER_OWNED) != 0;
    bool whole = (flags & ANSWER_WHOLE) != 0;
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
        || (busy && MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1") == MHD_NO)
        /* Draining: send clients to another replica for their next request; busy:
         * a connection that was refused its body goes too. */
        || ((busy || atomic_load(&s->draining))
            && MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_NO)) {
        MHD_destroy_response(r);
        return MHD_NO;
    }
    if (whole && len > 0)
        server_tls_answer_coming(s, c, len);
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    if (ret == MHD_NO && whole && len > 0)
        server_tls_answer_done(server_conn_of(c)); /* not queued: hold nothing */
    return ret;
}

/* queue_ex without the busy headers. */
static enum MHD_Result queue(struct server *s, struct MHD_Connection *c, unsigned status,
                             const char *type, const char *allow, char *body, size_t len,
                             bool must_free)
{
    return queue_ex(s, c, status, type, allow, body, len, must_free ? ANSWER_OWNED : 0);
}

/* Answer with a Kubernetes Status (docs/kube-api.md §2); flags: 0 or ANSWER_BUSY. */
static enum MHD_Result queue_status_ex(struct server *s, struct MHD_Connection *c, unsigned code,
                                       const char *reason, const char *allow, unsigned flags,
                                       const char *message)
{
    json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion",
                           "v1", "metadata", "status", "Failure", "message", message, "reason",
                           reason, "code", (int)code);
    char *text = st != NULL ? json_dumps(st, JSON_COMPACT) : NULL;

    json_decref(st);
    if (text == NULL)
        return queue_ex(s, c, code, "application/json", allow, (char *)status_enomem,
                        sizeof(status_enomem) - 1, flags);
    return queue_ex(s, c, code, "application/json", allow, text, strlen(text),
                    flags | ANSWER_OWNED);
}

/* queue_status_ex without the busy headers. */
static enum MHD_Result queue_status(struct server *s, struct MHD_Connection *c, unsigned code,
                                    const char *reason, const char *allow, const char *message)
{
    return queue_status_ex(s, c, code, reason, allow, 0, message);
}

/*
 * Log a 4xx answer (or the body budget's 503) at info with the client's address
 * and why, at most one line per LOG_PERIOD_MS (http_log) with the count of those
 * not logged since.
 */
static void log_refusal(struct server *s, struct MHD_Connection *c, unsigned code,
                        const char *reason, const char *message)
{
    char addr[INET6_ADDRSTRLEN + 8];
    char q[LOG_QUOTE_SIZE(384)];
    unsigned long suppressed = 0;

    /* another 5xx (out of memory) is no refusal of the client's request */
    if ((code >= 500 && code != MHD_HTTP_SERVICE_UNAVAILABLE) || log_level_current < LOG_LEVEL_INFO
        || !server_log_take(&s->http_log, &suppressed))
        return;
    LOG_INFO("http: refused request client=%s code=%u reason=%s message=%s suppressed=%lu",
             server_client_address(c, addr, sizeof(addr)), code, reason,
             log_quote(q, sizeof(q), message), suppressed);
}

/* A refusal of an admission request by the server itself: counted, logged, answered. */
static enum MHD_Result refuse(struct server *s, struct MHD_Connection *c, unsigned code,
                              const char *reason, const char *allow, const char *message)
{
    metrics_admission((int)code, METRICS_ERROR, 0);
    log_refusal(s, c, code, reason, message);
    return queue_status(s, c, code, reason, allow, message);
}

/* The request's body would take the bodies in memory past the budget: 503, closed. */
static enum MHD_Result refuse_busy(struct server *s, struct MHD_Connection *c)
{
    char msg[160];

    snprintf(msg, sizeof(msg),
             "request bodies in memory would exceed %zu bytes (--max-body-bytes-in-flight), "
             "retry later",
             s->body_budget);
    metrics_admission(MHD_HTTP_SERVICE_UNAVAILABLE, METRICS_ERROR, 0);
    log_refusal(s, c, MHD_HTTP_SERVICE_UNAVAILABLE, "ServiceUnavailable", msg);
    return queue_status_ex(s, c, MHD_HTTP_SERVICE_UNAVAILABLE, "ServiceUnavailable", NULL,
                           ANSWER_BUSY, msg);
}

/* admission_handle answered 4xx (a Status, e.g. 400 for a body that is not an
 * AdmissionReview): log it as the server's own refusals are. */
static void log_admission_refusal(struct server *s, struct MHD_Connection *c, int status,
                                  const char *out, size_t out_len)
{
    json_t *st;
    const char *reason = "BadRequest";
    const char *message = "";

    if (status < 400 || status > 499 || log_level_current < LOG_LEVEL_INFO)
        return;
    st = out != NULL ? json_loadb(out, out_len, 0, NULL) : NULL;
    if (json_is_string(json_object_get(st, "reason")))
        reason = json_string_value(json_object_get(st, "reason"));
    if (json_is_string(json_object_get(st, "message")))
        message = json_string_value(json_object_get(st, "message"));
    log_refusal(s, c, (unsigned)status, reason, message);
    json_decref(st);
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
        log_refusal(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed", msg);
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

/*
 * The request's Content-Length into *n (ULLONG_MAX when it overflows).
 * @return false when it has none (chunked, or no body).
 */
static bool content_length(struct MHD_Connection *c, unsigned long long *n)
{
    /* MHD has checked Content-Length already (400 on a malformed one). */
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

    if (v == NULL)
        return false;
    errno = 0;
    *n = strtoull(v, NULL, 10);
    if (errno != 0)
        *n = ULLONG_MAX;
    return true;
}

/* The request announces a Content-Length over the body cap. */
static bool length_over_cap(const struct server *s, struct MHD_Connection *c)
{
    unsigned long long n;

    return content_length(c, &n) && n > s->max_body;
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
    if (strcmp(url, PATH_MUTATE) == 0) {
        ctx->handler = s->admission;
    } else if (strcmp(url, PATH_VALIDATE_JOB) == 0) {
        ctx->handler = s->validate_job;
    } else {
        ctx->answered = true;
        snprintf(msg, sizeof(msg),
                 "no such path \"%s\" (the webhook serves POST " PATH_MUTATE
                 " and POST " PATH_VALIDATE_JOB ")",
                 echo_safe(url, a, sizeof(a)));
        return refuse(s, c, MHD_HTTP_NOT_FOUND, "NotFound", NULL, msg);
    }
    /* An admission request from here on: in flight until server_request_completed. */
    ctx->admission = true;
    metrics_inflight_add(1);
    if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
        ctx->answered = true;
        snprintf(msg, sizeof(msg), "method %s is not allowed on %s, use POST",
                 echo_safe(method, a, sizeof(a)), url);
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
    /* Within the cap: the announced length is reserved of the budget now, so a
     * request that would pass it is refused before its body is read. */
    {
        unsigned long long n;

        if (content_length(c, &n) && !server_body_reserve(s, ctx, (size_t)n)) {
            ctx->answered = true;
            return refuse_busy(s, c);
        }
    }
    return MHD_YES;
}

static enum MHD_Result queue_too_big(struct server *s, struct MHD_Connection *c)
{
    char msg[96];

    snprintf(msg, sizeof(msg), "request body is larger than %zu bytes", s->max_body);
    return refuse(s, c, MHD_HTTP_CONTENT_TOO_LARGE, "RequestEntityTooLarge", NULL, msg);
}

/* Queue an admission's answer (out malloc'd, taken; NULL: out of memory). */
static enum MHD_Result answer_admission(struct server *s, struct MHD_Connection *c,
                                        struct req_ctx *ctx, int status, char *out, size_t out_len)
{
    log_admission_refusal(s, c, status, out, out_len);
    /* The body is no longer needed: release it before the answer is sent. */
    buf_dispose(&ctx->body);
    server_body_release(s, ctx);
    /* A POST's answer: its body is sent whole. */
    if (out == NULL)
        return queue_ex(s, c, (unsigned)status, "application/json", NULL, (char *)status_enomem,
                        sizeof(status_enomem) - 1, ANSWER_WHOLE);
    return queue_ex(s, c, (unsigned)status, "application/json", NULL, out, out_len,
                    ANSWER_OWNED | ANSWER_WHOLE);
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
        /* server_uri_log could not allocate it. */
        ctx = server_req_ctx_create(s);
        if (ctx == NULL)
            return MHD_NO;
        ctx->conn = server_conn_of(c);
        *req_cls = ctx; /* now owned by MHD until server_request_completed */
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
        if (ctx->too_big || ctx->over_budget || ctx->probe) {
            /* Dropped (a probe's body is ignored); an endless chunked body is not
             * drained: closed after another cap's worth. */
            ctx->discarded += n < s->max_body - ctx->discarded ? n : s->max_body - ctx->discarded;
            return ctx->discarded < s->max_body ? MHD_YES : MHD_NO;
        }
        /* A chunked body reserves as it arrives (one with a Content-Length holds it
         * all); past the budget it is dropped like one past the cap. */
        if (n <= s->max_body - ctx->body.len && !server_body_reserve(s, ctx, ctx->body.len + n)) {
            buf_dispose(&ctx->body);
            server_body_release(s, ctx);
            ctx->over_budget = true;
            ctx->discarded = n;
            return MHD_YES;
        }
        /* Memory follows what arrived, not what was announced (buf.h doubles). */
        rc = buf_append(&ctx->body, upload_data, n);
        if (rc == WH_ETOOBIG) {
            /* Stop buffering at once; free what we have. */
            buf_dispose(&ctx->body);
            server_body_release(s, ctx);
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
    if (ctx->deferred_done) {
        /* Resumed: a lookup thread answered (server_defer.c). */
        ctx->deferred_done = false;
        out = ctx->deferred_out;
        out_len = ctx->deferred_out_len;
        ctx->deferred_out = NULL; /* queued below, or freed there */
        return answer_admission(s, c, ctx, ctx->deferred_status, out, out_len);
    }
    /* Whole request received: no request time limit from here on. */
    server_conn_set_state(ctx->conn, CONN_HANDLING);
    if (ctx->answered)
        return MHD_YES;
    ctx->answered = true;
    if (ctx->probe)
        return answer_probe(s, c, url != NULL ? url : "", method != NULL ? method : "");
    if (ctx->too_big)
        return queue_too_big(s, c);
    if (ctx->over_budget)
        return refuse_busy(s, c);
    /* admission_handle records the request in the metrics (outcome, latency). A Job
     * that only a GET would find is read on a lookup thread, not on this worker, which
     * serves other connections (server_defer.c). */
    status = ctx->handler(buf_cstr(&ctx->body), ctx->body.len,
                          s->src_nowait.get != NULL ? &s->src_nowait : &s->src, &s->mutate, &out,
                          &out_len);
    if (status == ADMISSION_DEFERRED) {
        struct jobsource busy;

        if (server_defer_take(s, c, ctx))
            return MHD_YES; /* answered when resumed */
        busy = server_defer_busy_source(s);
        status =
            ctx->handler(buf_cstr(&ctx->body), ctx->body.len, &busy, &s->mutate, &out, &out_len);
    }
    return answer_admission(s, c, ctx, status, out, out_len);
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
 * One worker per core: a worker never waits on the API server (server_defer.c), so
 * more workers would only share the cores, at a context switch per request.
 */
#define THREADS_PER_CORE        1
#define THREADS_MAX             64
#define LOOKUP_THREADS_PER_CORE 2

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
        n = limit; /* a 1-CPU pod on a 64-core node runs 1 worker, not 64 */
    if (n < 1)
        n = 1;
    return n > THREADS_MAX / THREADS_PER_CORE ? THREADS_MAX : (unsigned)n * THREADS_PER_CORE;
}

unsigned server_default_lookup_threads(unsigned threads)
{
    unsigned cores = (threads + THREADS_PER_CORE - 1) / THREADS_PER_CORE;

    if (cores < 1)
        cores = 1;
    return cores > THREADS_MAX / LOOKUP_THREADS_PER_CORE ? THREADS_MAX
                                                         : cores * LOOKUP_THREADS_PER_CORE;
}

/*
 * How many open connections the server keeps before a new one makes the oldest
 * reusable give way (server_conn.c): the limit less a reserve of 1/32 of it, at
 * least one per worker (each worker stops accepting at its share of the limit).
 */
static unsigned evict_above(unsigned limit, unsigned threads)
{
    unsigned reserve = limit / 32 > threads ? limit / 32 : threads;

    return reserve < limit ? limit - reserve : 1;
}

/* Free s and what it owns; the daemon and the reaper are stopped. */
static void server_free(struct server *s)
{
    server_tls_creds_free(s->creds); /* every connection has released its reference */
    pthread_mutex_destroy(&s->http_log.lock);
    pthread_mutex_destroy(&s->tls_log.lock);
    pthread_cond_destroy(&s->defer_cond);
    pthread_mutex_destroy(&s->defer_lock);
    pthread_cond_destroy(&s->reaper_cond);
    pthread_mutex_destroy(&s->conn_lock);
    pthread_mutex_destroy(&s->tls_lock);
    free(s);
}

/*
 * Bind and listen on ss, SO_REUSEADDR as MHD's own sockets. An IPv6 socket has
 * IPV6_V6ONLY off, so "::" takes IPv4 too (as v4-mapped addresses), whatever
 * net.ipv6.bindv6only says. @return the socket, or -1 with errno set.
 */
static int listen_on(const struct sockaddr_storage *ss)
{
    socklen_t len =
        ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    int one = 1;
    int off = 0;
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0
        || (ss->ss_family == AF_INET6
            && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) != 0)
        || bind(fd, (const struct sockaddr *)ss, len) != 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;

        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/*
 * listen_on for the server's address (addr as configured, for messages). The
 * IPv6 wildcard "::" on a kernel without IPv6 (socket(2) EAFNOSUPPORT, e.g.
 * booted with ipv6.disable=1) is every address IPv4 has: 0.0.0.0, said at info
 * level, and s->address says which. @return 0 or WH_ERROR with err set.
 */
static int server_listen(struct server *s, struct sockaddr_storage *ss, const char *addr,
                         unsigned port, struct wh_error *err)
{
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

    snprintf(s->address, sizeof(s->address), "%s", addr);
    s->listen_fd = listen_on(ss);
    if (s->listen_fd < 0 && errno == EAFNOSUPPORT && ss->ss_family == AF_INET6
        && IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr)) {
        struct sockaddr_in *in4 = (struct sockaddr_in *)ss;

        LOG_INFO("http: no IPv6 in this kernel, listening on IPv4 only address=0.0.0.0 port=%u",
                 port);
        memset(ss, 0, sizeof(*ss));
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        in4->sin_addr.s_addr = htonl(INADDR_ANY);
        snprintf(s->address, sizeof(s->address), "0.0.0.0");
        s->listen_fd = listen_on(ss);
    }
    if (s->listen_fd < 0)
        return wh_error_set(err, WH_ERROR, "cannot listen on %s port %u: %s", s->address, port,
                            strerror(errno));
    return 0;
}

/* The port fd is bound to (the OS's choice for port 0), 0 when unknown. */
static unsigned bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int server_create(struct server **out, const struct server_config *cfg, struct wh_error *err)
{
    struct server *s = NULL;
    struct sockaddr_storage ss;
    const char *addr = cfg->bind_address != NULL ? cfg->bind_address : "::";
    bool tls = cfg->tls_cert_pem != NULL || cfg->tls_key_pem != NULL;
    unsigned timeout_s =
        cfg->connection_timeout > 0 ? cfg->connection_timeout : SERVER_DEFAULT_TIMEOUT;
    size_t max_body = cfg->max_body > 0 ? cfg->max_body : SERVER_MAX_BODY;
    size_t budget =
        cfg->max_body_in_flight > 0 ? cfg->max_body_in_flight : SERVER_DEFAULT_BODY_BYTES_IN_FLIGHT;
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
    if (budget < max_body)
        return wh_error_set(err, WH_EINVAL,
                            "body bytes in flight %zu are below the body cap %zu: no body of "
                            "the largest size could be served",
                            budget, max_body);
    rc = parse_bind(addr, cfg->port, &ss, err);
    if (rc < 0)
        return rc;

    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    pthread_mutex_init(&s->tls_lock, NULL);
    pthread_mutex_init(&s->conn_lock, NULL);
    pthread_cond_init(&s->reaper_cond, NULL);
    pthread_mutex_init(&s->tls_log.lock, NULL);
    pthread_mutex_init(&s->http_log.lock, NULL);
    pthread_mutex_init(&s->defer_lock, NULL);
    pthread_cond_init(&s->defer_cond, NULL);
    atomic_init(&s->draining, false);
    atomic_init(&s->stopping, false);
    atomic_init(&s->in_flight, 0);
    s->listen_fd = -1;
    s->quiesced_fd = -1;
    s->src = cfg->src;
    if (cfg->src.get_nowait != NULL) {
        s->src_nowait = cfg->src;
        s->src_nowait.get = cfg->src.get_nowait;
    }
    s->mutate = cfg->mutate;
    s->admission = cfg->admission != NULL ? cfg->admission : admission_handle;
    s->validate_job = cfg->validate_job != NULL ? cfg->validate_job : admission_validate_job;
    s->ready = cfg->ready;
    s->ready_userdata = cfg->ready_userdata;
    s->metrics_collect = cfg->metrics_collect;
    s->metrics_userdata = cfg->metrics_userdata;
    s->max_body = max_body;
    s->body_budget = budget;
    atomic_init(&s->body_bytes, 0);
    s->tls = tls;
    s->request_timeout_ms =
        cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : SERVER_DEFAULT_REQUEST_TIMEOUT_MS;
    s->idle_timeout_ms = (long long)timeout_s * 1000;
    s->threads = cfg->threads > 0 ? cfg->threads : server_default_threads("/sys/fs/cgroup");
    s->connection_limit =
        cfg->connection_limit > 0 ? cfg->connection_limit : SERVER_DEFAULT_CONNECTIONS;
    s->per_ip_limit = cfg->per_ip_limit;
    s->evict_above = evict_above(s->connection_limit, s->threads);
    s->defer_threads =
        cfg->lookup_threads > 0 ? cfg->lookup_threads : server_default_lookup_threads(s->threads);
    s->evict_log_ms = clock_mono_ms() - LOG_PERIOD_MS;
    if (tls) {
        /* Parsed by GnuTLS before the daemon starts: a bad pair never serves. */
        rc = server_tls_creds_parse(cfg->tls_cert_pem, cfg->tls_key_pem, &s->creds, err);
        if (rc < 0) {
            if (rc != WH_ENOMEM)
                rc = WH_ERROR;
            goto out;
        }
    }
    rc = server_listen(s, &ss, addr, cfg->port, err);
    if (rc < 0)
        goto out;
    s->port = bound_port(s->listen_fd);
    *out = s;
    s = NULL; /* now owned by the caller */
    rc = 0;
out:
    if (s != NULL)
        server_free(s);
    return rc;
}

int server_run(struct server *s, struct wh_error *err)
{
    struct MHD_OptionItem opts[10];
    unsigned int flags;
    size_t n = 0;

    if (s == NULL || s->daemon != NULL || s->listen_fd < 0)
        return wh_error_set(err, WH_EINVAL, "the server is not created or runs already");
    if (server_defer_start(s, err) < 0)
        return WH_ERROR;
    /* MHD_USE_ITC: server_quiesce (MHD_quiesce_daemon) needs it with worker threads, and
     * a connection resumed by a lookup thread wakes its worker through it. */
    flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC
        | MHD_ALLOW_SUSPEND_RESUME;
    /* epoll where this MHD has it, else poll; never select (FD_SETSIZE). */
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL;
    if (s->tls)
        flags |= MHD_USE_TLS;

    /* MHD closes the socket from here on, in MHD_stop_daemon or when it fails to start. */
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, s->listen_fd, NULL};
    s->listen_fd = -1;
    if (s->threads > 1) /* one: MHD's own thread, no pool (MHD warns at a pool of one) */
        opts[n++] =
            (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)s->threads, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                        (intptr_t)(s->idle_timeout_ms / 1000), NULL};
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->connection_limit, NULL};
    if (s->per_ip_limit > 0)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                            (intptr_t)s->per_ip_limit, NULL};
    if (s->tls) {
        opts[n++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)SERVER_TLS_PRIORITIES};
        /* MHD would offer "http/1.1" and "http/1.0"; server_conn_notify sets ours instead. */
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_TLS_NO_ALPN, 1, NULL};
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

    /*
     * The certificate callback is a function pointer, which an option array
     * cannot carry in ISO C: it goes last in the argument list, behind an
     * option code that is MHD_OPTION_END (ending the list) without TLS.
     */
    s->daemon = MHD_start_daemon(flags, (uint16_t)s->port, NULL, NULL, access_handler, s,
                                 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
                                 MHD_OPTION_NOTIFY_COMPLETED, server_request_completed, s,
                                 MHD_OPTION_NOTIFY_CONNECTION, server_conn_notify, s,
                                 MHD_OPTION_URI_LOG_CALLBACK, server_uri_log, s, MHD_OPTION_ARRAY,
                                 opts, s->tls ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_END,
                                 server_tls_retrieve, MHD_OPTION_END);
    if (s->daemon == NULL)
        return wh_error_set(err, WH_ERROR,
                            "cannot start the %s server on %s port %u (see the log line before)",
                            s->tls ? "HTTPS" : "HTTP", s->address, s->port);
    return server_reaper_start(s, err);
}

int server_start(struct server **out, const struct server_config *cfg, struct wh_error *err)
{
    struct server *s = NULL;
    int rc;

    rc = server_create(&s, cfg, err);
    if (rc < 0)
        return rc;
    rc = server_run(s, err);
    if (rc < 0) {
        server_stop(s);
        return rc;
    }
    *out = s;
    return 0;
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

const char *server_address(const struct server *s)
{
    return s != NULL ? s->address : "";
}

void server_stop(struct server *s)
{
    if (s == NULL)
        return;
    /* The reaper first: no shutdown(2) may race with MHD closing sockets. */
    server_reaper_stop(s);
    atomic_store(&s->stopping, true); /* the handshakes cut now are not refusals */
    server_defer_stop(s);             /* no connection may stay suspended */
    if (s->daemon != NULL)
        MHD_stop_daemon(s->daemon);
    if (s->quiesced_fd >= 0)
        close(s->quiesced_fd); /* connects still queued on it are refused now */
    if (s->listen_fd >= 0)
        close(s->listen_fd); /* created, never run: its queued connects are refused */
    server_free(s);
}
