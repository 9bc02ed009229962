/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_server.c - the HTTP(S) server over loopback with libcurl: routes,
 * status codes and Status bodies (404, 405 + Allow, 413, 415, 400), a valid
 * review, keep-alive reuse, the 3 MiB cap from both sides, TLS verified
 * against the generated CA by the Service name, IPv6 and dual stack, and garbage on a raw
 * socket. Every server binds 127.0.0.1 (or ::1) port 0; server_start returns
 * only once the socket listens, so no test waits or sleeps. server_create
 * binds without serving, server_run serves what queued meanwhile.
 * Operations: TLS pair swap while serving (old connections keep
 * theirs, bad pairs refused), GET /metrics with the collect callback,
 * draining (/readyz 503, Connection: close), quiesce, and the request time
 * limit against clients that trickle headers or body (these wait for the
 * server to close, with generous upper bounds only). TLS answers' writes
 * (server_tls_push) with a sendmsg that can be made to take only part.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "certs/certs.h"
#include "tests/testutil.h"
#include "webhook/admission.h"
#include "webhook/metrics.h"
#include "webhook/server.h"
#include "webhook/server_internal.h"

#define MiB ((size_t)1024 * 1024)

static int fake_get(void *userdata, const char *ns, const char *name, const char *uid,
                    json_t **job_out, struct wh_error *err)
{
    (void)userdata;
    (void)uid;
    (void)job_out;
    return wh_error_set(err, WH_ENOTFOUND, "jobs.batch.volcano.sh \"%s/%s\" not found", ns, name);
}

static struct server *srv;
static char base[64];

static struct server *start(const char *addr, const char *cert, const char *key)
{
    struct server_config cfg = {
        .bind_address = addr,
        .port = 0,
        .tls_cert_pem = cert,
        .tls_key_pem = key,
        .threads = 2,
        .src = {.get = fake_get, .userdata = NULL},
        .mutate = {.lookup_failure = LOOKUP_FAILURE_DENY},
    };
    struct wh_error err = {0, ""};
    struct server *s = NULL;

    ck_assert_msg(server_start(&s, &cfg, &err) == 0, "server_start: %s", err.msg);
    ck_assert_uint_ne(server_port(s), 0);
    return s;
}

static void plain_setup(void)
{
    srv = start("127.0.0.1", NULL, NULL);
    snprintf(base, sizeof(base), "http://127.0.0.1:%u", server_port(srv));
}

static void plain_teardown(void)
{
    server_stop(srv);
    srv = NULL;
}

/* One HTTP exchange's results. */
struct reply {
    long status;
    char *body; /* NUL-terminated */
    size_t len;
    char allow[64];      /* Allow header value, "" when absent */
    char ctype[64];      /* Content-Type header value */
    char connection[32]; /* Connection header value, "" when absent */
    long new_conns;      /* CURLINFO_NUM_CONNECTS */
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    struct reply *r = ud;
    char *nb = realloc(r->body, r->len + sz * n + 1);

    ck_assert_ptr_nonnull(nb);
    memcpy(nb + r->len, p, sz * n);
    r->body = nb;
    r->len += sz * n;
    r->body[r->len] = '\0';
    return sz * n;
}

/* Copy "Name: value" header values we look at; trims CR/LF. */
static void header_value(const char *line, size_t n, const char *name, char *dst, size_t dlen)
{
    size_t nl = strlen(name);
    size_t i = nl + 1;
    size_t j = 0;

    if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return;
    while (i < n && line[i] == ' ')
        i++;
    while (i < n && line[i] != '\r' && line[i] != '\n' && j + 1 < dlen)
        dst[j++] = line[i++];
    dst[j] = '\0';
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    struct reply *r = ud;

    header_value(p, sz * n, "Allow", r->allow, sizeof(r->allow));
    header_value(p, sz * n, "Content-Type", r->ctype, sizeof(r->ctype));
    header_value(p, sz * n, "Connection", r->connection, sizeof(r->connection));
    return sz * n;
}

/* Body source for chunked uploads (no length known to the server). */
struct src {
    const char *data;
    size_t len;
    size_t off;
};

static size_t on_read(char *p, size_t sz, size_t n, void *ud)
{
    struct src *s = ud;
    size_t k = s->len - s->off < sz * n ? s->len - s->off : sz * n;

    memcpy(p, s->data + s->off, k);
    s->off += k;
    return k;
}

/* Set around a request whose answer comes before its body: curl then sends
 * "Expect: 100-continue" and waits for that answer instead of racing the server's
 * close with the body (a send error instead of the 413, under ThreadSanitizer). */
static bool expect_continue;

/*
 * Run one request on h (reused across calls for keep-alive). ctype NULL sends
 * no Content-Type at all; chunked sends the body without Content-Length.
 */
static CURLcode exchange(CURL *h, const char *method, const char *url, const char *ctype,
                         const char *body, size_t len, bool chunked, struct reply *r)
{
    struct curl_slist *hdrs = NULL;
    char ct[128];
    struct src s = {body, len, 0};
    CURLcode rc;

    memset(r, 0, sizeof(*r));
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
    snprintf(ct, sizeof(ct), "Content-Type: %s", ctype != NULL ? ctype : "");
    if (ctype == NULL)
        snprintf(ct, sizeof(ct), "Content-Type:"); /* removes curl's default */
    hdrs = curl_slist_append(hdrs, ct);
    /* no 100-continue round trip, unless expect_continue */
    hdrs = curl_slist_append(hdrs, expect_continue ? "Expect: 100-continue" : "Expect:");
    curl_easy_setopt(h, CURLOPT_EXPECT_100_TIMEOUT_MS, expect_continue ? 60000L : 1000L);
    if (chunked)
        hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (chunked) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, &s);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
    } else {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0 && strcmp(method, "HEAD") != 0)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    else
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
    rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &r->new_conns);
    curl_easy_setopt(h, CURLOPT_NOBODY, 0L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdrs);
    if (r->body == NULL)
        r->body = strdup("");
    return rc;
}

/* One request on a fresh handle; asserts the transfer itself worked. */
static void request(const char *method, const char *path, const char *ctype, const char *body,
                    size_t len, struct reply *r)
{
    CURL *h = curl_easy_init();
    char url[256];
    CURLcode rc;

    ck_assert_ptr_nonnull(h);
    snprintf(url, sizeof(url), "%s%s", base, path);
    rc = exchange(h, method, url, ctype, body, len, false, r);
    ck_assert_msg(rc == CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
    curl_easy_cleanup(h);
}

/* The Status body every error carries. */
static void assert_status_body(const struct reply *r, int code, const char *reason,
                               const char *message)
{
    json_t *got = tu_json(r->body);
    json_t *want = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion",
                             "v1", "metadata", "status", "Failure", "message", message, "reason",
                             reason, "code", code);

    ck_assert_msg(json_equal(got, want), "got %s", r->body);
    ck_assert_str_eq(r->ctype, "application/json");
    json_decref(want);
    json_decref(got);
}

static const char valid_review[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
    "{\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    "\"namespace\":\"team\",\"operation\":\"CREATE\",\"object\":{\"metadata\":{\"name\":\"p\"},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}";
static const char valid_answer[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
    "\"response\":{\"uid\":\"u-1\",\"allowed\":true}}";

static void assert_valid_answer(const struct reply *r)
{
    json_t *got = tu_json(r->body);

    tu_assert_json_eq(got, valid_answer);
    json_decref(got);
}

static void reply_free(struct reply *r)
{
    free(r->body);
    r->body = NULL;
}

START_TEST(test_healthz)
{
    struct reply r;

    request("GET", "/healthz", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "ok");
    ck_assert_str_eq(r.ctype, "text/plain; charset=utf-8");
    reply_free(&r);
    request("HEAD", "/healthz", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "");
    reply_free(&r);
    /* The query string is ignored. */
    request("GET", "/healthz?verbose=1", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "ok");
    reply_free(&r);
}
END_TEST

/* Probes and scrapes keep their connection, as admissions do (no TLS handshake each). */
START_TEST(test_probes_keep_alive)
{
    static const char *const paths[] = {"/healthz", "/readyz", "/metrics", "/healthz"};
    CURL *h = curl_easy_init();
    char url[128];
    struct reply r;

    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        snprintf(url, sizeof(url), "%s%s", base, paths[i]);
        ck_assert_int_eq(exchange(h, i == 3 ? "HEAD" : "GET", url, NULL, NULL, 0, false, &r),
                         CURLE_OK);
        ck_assert_int_eq(r.status, 200);
        ck_assert_int_eq(r.new_conns, (i == 0 ? 1 : 0));
        reply_free(&r);
    }
    curl_easy_cleanup(h);
}
END_TEST

static size_t raw_exchange(unsigned port, const char *data, size_t len, char *buf, size_t blen);

/*
 * A probe announcing a body over the 3 MiB cap is answered at once, without its
 * body (which is never read): waiting for the body, the server read a cap's worth
 * and closed with no answer, or sat until the request timeout when the client sent
 * only the headers.
 */
START_TEST(test_probe_with_body_over_cap)
{
    static const char get[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n";
    static const char head[] =
        "HEAD /readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n";
    char buf[4096];

    raw_exchange(server_port(srv), get, sizeof(get) - 1, buf, sizeof(buf));
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "got \"%s\"", buf);
    ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\nok"));
    raw_exchange(server_port(srv), head, sizeof(head) - 1, buf, sizeof(buf));
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "got \"%s\"", buf);
    ck_assert_ptr_null(strstr(buf, "\r\n\r\nok")); /* HEAD: no body */
}
END_TEST

/* server_config.ready for test_readyz: ready once the flag is set. */
static const char *flag_ready(void *userdata)
{
    return atomic_load((atomic_bool *)userdata) ? NULL : "jobs cache not synced";
}

START_TEST(test_readyz)
{
    static atomic_bool synced;
    struct server_config cfg = {
        .bind_address = "127.0.0.1",
        .threads = 2,
        .src = {.get = fake_get},
        .ready = flag_ready,
        .ready_userdata = &synced,
    };
    struct wh_error err = {0, ""};
    struct server *s2 = NULL;
    char saved[sizeof(base)];
    struct reply r;

    /* Without a ready callback: ready whenever it answers. */
    request("GET", "/readyz", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "ok");
    reply_free(&r);

    atomic_init(&synced, false);
    ck_assert_msg(server_start(&s2, &cfg, &err) == 0, "server_start: %s", err.msg);
    memcpy(saved, base, sizeof(base));
    snprintf(base, sizeof(base), "http://127.0.0.1:%u", server_port(s2));
    request("GET", "/readyz", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 503);
    assert_status_body(&r, 503, "ServiceUnavailable", "jobs cache not synced");
    reply_free(&r);
    request("HEAD", "/readyz", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 503);
    reply_free(&r);
    /* Liveness does not depend on readiness. */
    request("GET", "/healthz", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    request("POST", "/readyz", "application/json", "{}", 2, &r);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(r.allow, "GET, HEAD");
    assert_status_body(&r, 405, "MethodNotAllowed",
                       "method POST is not allowed on /readyz, use GET");
    reply_free(&r);

    atomic_store(&synced, true);
    request("GET", "/readyz?verbose", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "ok");
    ck_assert_str_eq(r.ctype, "text/plain; charset=utf-8");
    reply_free(&r);
    server_stop(s2);
    memcpy(base, saved, sizeof(base));
}
END_TEST

START_TEST(test_not_found)
{
    struct reply r;

    request("GET", "/", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 404);
    assert_status_body(
        &r, 404, "NotFound",
        "no such path \"/\" (the webhook serves POST /pods/mutate and POST /jobs/validate)");
    reply_free(&r);
    request("POST", "/pods/mutate/x", "application/json", "{}", 2, &r);
    ck_assert_int_eq(r.status, 404);
    assert_status_body(
        &r, 404, "NotFound",
        "no such path \"/pods/mutate/x\" (the webhook serves POST /pods/mutate and POST "
        "/jobs/validate)");
    reply_free(&r);
    /* A URL-decoded non-ASCII path is echoed as '?', keeping the body valid JSON. */
    request("GET", "/%ff%00a", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 404);
    json_decref(tu_json(r.body));
    reply_free(&r);
}
END_TEST

START_TEST(test_method_not_allowed)
{
    struct reply r;

    request("GET", "/pods/mutate", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(r.allow, "POST");
    assert_status_body(&r, 405, "MethodNotAllowed",
                       "method GET is not allowed on /pods/mutate, use POST");
    reply_free(&r);
    request("PUT", "/pods/mutate", "application/json", "{}", 2, &r);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(r.allow, "POST");
    reply_free(&r);
    request("POST", "/healthz", "application/json", "{}", 2, &r);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(r.allow, "GET, HEAD");
    assert_status_body(&r, 405, "MethodNotAllowed",
                       "method POST is not allowed on /healthz, use GET");
    reply_free(&r);
}
END_TEST

START_TEST(test_unsupported_media_type)
{
    struct reply r;

    request("POST", "/pods/mutate", "text/plain", valid_review, strlen(valid_review), &r);
    ck_assert_int_eq(r.status, 415);
    assert_status_body(&r, 415, "UnsupportedMediaType",
                       "Content-Type must be application/json, got \"text/plain\"");
    reply_free(&r);
    request("POST", "/pods/mutate", NULL, valid_review, strlen(valid_review), &r);
    ck_assert_int_eq(r.status, 415);
    assert_status_body(&r, 415, "UnsupportedMediaType",
                       "Content-Type must be application/json, got none");
    reply_free(&r);
    request("POST", "/pods/mutate", "application/jsonx", valid_review, strlen(valid_review), &r);
    ck_assert_int_eq(r.status, 415);
    reply_free(&r);
    /* Parameters and any letter case are fine. */
    request("POST", "/pods/mutate", "Application/JSON; charset=utf-8", valid_review,
            strlen(valid_review), &r);
    ck_assert_int_eq(r.status, 200);
    assert_valid_answer(&r);
    reply_free(&r);
}
END_TEST

START_TEST(test_valid_review_and_query)
{
    struct reply r;
    json_t *got;

    request("POST", "/pods/mutate?timeout=10s", "application/json", valid_review,
            strlen(valid_review), &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.ctype, "application/json");
    got = tu_json(r.body);
    tu_assert_json_eq(got, valid_answer);
    json_decref(got);
    reply_free(&r);
}
END_TEST

/* server_config.admission: records what it was given and answers 201 with a fixed body. */
static char handler_body[64];
static bool handler_saw_src;
static int handler_lookup_failure;

static int fixed_admission(const char *body, size_t len, const struct jobsource *src,
                           const struct mutate_options *opt, char **out, size_t *out_len)
{
    snprintf(handler_body, sizeof(handler_body), "%.*s", (int)len, body);
    handler_saw_src = src->get == fake_get;
    handler_lookup_failure = (int)opt->lookup_failure;
    *out = strdup("{\"fixed\":true}");
    *out_len = *out != NULL ? strlen(*out) : 0;
    return 201;
}

START_TEST(test_admission_handler)
{
    struct server_config cfg = {
        .bind_address = "127.0.0.1",
        .threads = 1,
        .src = {.get = fake_get, .userdata = NULL},
        .mutate = {.lookup_failure = LOOKUP_FAILURE_ALLOW},
        .admission = fixed_admission,
    };
    struct wh_error err = {0, ""};
    struct server *s = NULL;
    struct reply r;

    server_stop(srv); /* the fixture's server (admission_handle) is replaced */
    ck_assert_msg(server_start(&s, &cfg, &err) == 0, "server_start: %s", err.msg);
    srv = s;
    snprintf(base, sizeof(base), "http://127.0.0.1:%u", server_port(srv));
    request("POST", "/pods/mutate", "application/json", "{\"a\":1}", 7, &r);
    ck_assert_int_eq(r.status, 201);
    ck_assert_str_eq(r.body, "{\"fixed\":true}");
    ck_assert_str_eq(r.ctype, "application/json");
    ck_assert_str_eq(handler_body, "{\"a\":1}");
    ck_assert(handler_saw_src);
    ck_assert_int_eq(handler_lookup_failure, LOOKUP_FAILURE_ALLOW);
    reply_free(&r);
}
END_TEST

/* POST /jobs/validate: the Job webhook, answered with the Job's diagnostics as warnings. */
START_TEST(test_job_validate_route)
{
    static const char review[] =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"j-1\",\"kind\":{\"group\":\"batch.volcano.sh\",\"version\":\"v1alpha1\","
        "\"kind\":\"Job\"},\"resource\":{\"group\":\"batch.volcano.sh\",\"version\":"
        "\"v1alpha1\",\"resource\":\"jobs\"},\"operation\":\"CREATE\",\"namespace\":\"team\","
        "\"object\":{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
        "\"metadata\":{\"name\":\"a.b\",\"namespace\":\"team\"},\"spec\":{\"plugins\":"
        "{\"svc\":[]},\"tasks\":[{\"name\":\"t\",\"replicas\":1}]}}}}";
    struct reply r;
    json_t *got;

    request("POST", "/jobs/validate", "application/json", review, strlen(review), &r);
    ck_assert_int_eq(r.status, 200);
    got = tu_json(r.body);
    tu_assert_json_eq(got,
                      "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"response\":{\"uid\":\"j-1\",\"allowed\":true,\"warnings\":["
                      "\"svc plugin: job name \\\"a.b\\\" cannot be a pod subdomain (a DNS-1123 "
                      "label has no '.'): rename the job\"]}}");
    json_decref(got);
    reply_free(&r);
    request("GET", "/jobs/validate", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 405);
    assert_status_body(&r, 405, "MethodNotAllowed",
                       "method GET is not allowed on /jobs/validate, use POST");
    reply_free(&r);
}
END_TEST

START_TEST(test_bad_json)
{
    struct reply r;

    request("POST", "/pods/mutate", "application/json", "{\"apiVersion\":", 14, &r);
    ck_assert_int_eq(r.status, 400);
    assert_status_body(&r, 400, "BadRequest",
                       "invalid JSON at line 1 column 14: unexpected token near end of file");
    reply_free(&r);
    request("POST", "/pods/mutate", "application/json", "", 0, &r);
    ck_assert_int_eq(r.status, 400);
    assert_status_body(&r, 400, "BadRequest", "request body is empty");
    reply_free(&r);
}
END_TEST

/* A valid review padded with spaces to exactly len bytes. */
static char *padded_review(size_t len)
{
    char *b = malloc(len);
    size_t n = strlen(valid_review);

    ck_assert_ptr_nonnull(b);
    memcpy(b, valid_review, n);
    memset(b + n, ' ', len - n);
    return b;
}

START_TEST(test_body_cap)
{
    char *big = padded_review(3 * MiB + 1);
    CURL *h = curl_easy_init();
    char url[128];
    struct reply r;

    /* Exactly 3 MiB: served. */
    request("POST", "/pods/mutate", "application/json", big, 3 * MiB, &r);
    ck_assert_int_eq(r.status, 200);
    assert_valid_answer(&r);
    reply_free(&r);

    /* One byte more, announced by Content-Length: refused before the body. */
    expect_continue = true;
    request("POST", "/pods/mutate", "application/json", big, 3 * MiB + 1, &r);
    expect_continue = false;
    ck_assert_int_eq(r.status, 413);
    assert_status_body(&r, 413, "RequestEntityTooLarge",
                       "request body is larger than 3145728 bytes");
    reply_free(&r);

    /* Chunked, no length: refused once the cap is passed. */
    snprintf(url, sizeof(url), "%s/pods/mutate", base);
    ck_assert_int_eq(exchange(h, "POST", url, "application/json", big, 3 * MiB + 1, true, &r),
                     CURLE_OK);
    ck_assert_int_eq(r.status, 413);
    assert_status_body(&r, 413, "RequestEntityTooLarge",
                       "request body is larger than 3145728 bytes");
    reply_free(&r);

    /* Chunked and endless (over twice the cap): the connection is closed. */
    {
        char *huge = padded_review(7 * MiB);

        ck_assert_int_ne(exchange(h, "POST", url, "application/json", huge, 7 * MiB, true, &r),
                         CURLE_OK);
        ck_assert_int_ne(r.status, 200);
        reply_free(&r);
        free(huge);
    }

    /* Chunked and exactly at the cap: served. */
    ck_assert_int_eq(exchange(h, "POST", url, "application/json", big, 3 * MiB, true, &r),
                     CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    curl_easy_cleanup(h);
    free(big);
}
END_TEST

static int connect_loopback(unsigned port);

/* Poll (bounded) until the server's body bytes in flight are want; then assert it. */
static void wait_body_bytes(struct server *s, size_t want)
{
    for (int i = 0; i < 500 && atomic_load(&s->body_bytes) != want; i++)
        usleep(10000);
    ck_assert_uint_eq(atomic_load(&s->body_bytes), want);
    ck_assert_int_eq(atomic_load(&server_metrics.body_bytes), (long long)want);
}

/* Read from fd until the server closes it or a whole answer (headers, Content-Length) is in. */
static size_t read_answer(int fd, char *buf, size_t blen)
{
    struct timeval tv = {.tv_sec = 10};
    size_t got = 0;
    ssize_t n;

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (got + 1 < blen && (n = recv(fd, buf + got, blen - 1 - got, 0)) > 0) {
        const char *end;
        const char *cl;

        got += (size_t)n;
        buf[got] = '\0';
        end = strstr(buf, "\r\n\r\n");
        cl = strstr(buf, "\r\nContent-Length: ");
        if (end != NULL && cl != NULL
            && got >= (size_t)(end + 4 - buf) + strtoul(cl + 18, NULL, 10))
            break;
    }
    buf[got] = '\0';
    return got;
}

/*
 * max_body_in_flight: two slow uploads that announced 1024 bytes each hold the
 * whole 2048-byte budget from their headers on; a third request is refused 503
 * before its body (Retry-After: 1, Connection: close, the Status), and a chunked
 * one once its first bytes would pass it; both count as 503 errors. When the
 * slow ones finish they are served and the budget is back to 0.
 */
START_TEST(test_body_budget)
{
    static const char busy_body[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"request bodies in memory would exceed 2048 bytes "
        "(--max-body-bytes-in-flight), retry later\",\"reason\":\"ServiceUnavailable\","
        "\"code\":503}";
    static const char head[] = "POST /pods/mutate HTTP/1.1\r\nHost: x\r\n"
                               "Content-Type: application/json\r\nContent-Length: 1024\r\n\r\n";
    static const char chunked[] = "POST /pods/mutate HTTP/1.1\r\nHost: x\r\n"
                                  "Content-Type: application/json\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\n"
                                  "a\r\n0123456789\r\n0\r\n\r\n";
    struct server_config cfg = {
        .bind_address = "127.0.0.1",
        .threads = 2,
        .max_body = 1024,
        .max_body_in_flight = 2048,
        .src = {.get = fake_get},
        .mutate = {.lookup_failure = LOOKUP_FAILURE_DENY},
    };
    struct wh_error err = {0, ""};
    struct server *s = NULL;
    char *body = padded_review(1024);
    char buf[4096];
    char *metrics;
    size_t len;
    int slow[2];

    metrics_reset();
    ck_assert_int_eq(server_start(&s, &cfg, &err), 0);
    for (int i = 0; i < 2; i++) {
        slow[i] = connect_loopback(server_port(s));
        ck_assert_int_ge(slow[i], 0);
        ck_assert_int_eq(send(slow[i], head, sizeof(head) - 1, MSG_NOSIGNAL),
                         (ssize_t)sizeof(head) - 1);
        ck_assert_int_eq(send(slow[i], body, 100, MSG_NOSIGNAL), 100); /* and then nothing */
        wait_body_bytes(s, 1024 * (size_t)(i + 1));
    }
    /* Announced: refused before the body. */
    len = raw_exchange(server_port(s),
                       "POST /pods/mutate HTTP/1.1\r\nHost: x\r\n"
                       "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
                       sizeof("POST /pods/mutate HTTP/1.1\r\nHost: x\r\n"
                              "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
                           - 1,
                       buf, sizeof(buf));
    ck_assert_uint_gt(len, 0);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 503 Service Unavailable\r\n", 34) == 0, "%s", buf);
    ck_assert_ptr_nonnull(strstr(buf, "\r\nRetry-After: 1\r\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\r\nConnection: close\r\n"));
    ck_assert_str_eq(strstr(buf, "\r\n\r\n") + 4, busy_body);
    /* Chunked: dropped once it would pass the budget, answered at its end. */
    len = raw_exchange(server_port(s), chunked, sizeof(chunked) - 1, buf, sizeof(buf));
    ck_assert_uint_gt(len, 0);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 503 Service Unavailable\r\n", 34) == 0, "%s", buf);
    ck_assert_ptr_nonnull(strstr(buf, "\r\nRetry-After: 1\r\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\r\nConnection: close\r\n"));
    ck_assert_str_eq(strstr(buf, "\r\n\r\n") + 4, busy_body);
    wait_body_bytes(s, 2048); /* the refused ones held nothing */
    /* The slow ones finish: served in full, and the budget is free again. */
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(send(slow[i], body + 100, 1024 - 100, MSG_NOSIGNAL), 1024 - 100);
        len = read_answer(slow[i], buf, sizeof(buf));
        ck_assert_msg(strncmp(buf, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", buf);
        {
            json_t *got = tu_json(strstr(buf, "\r\n\r\n") + 4);

            tu_assert_json_eq(got, valid_answer);
            json_decref(got);
        }
        close(slow[i]);
    }
    wait_body_bytes(s, 0);
    metrics = metrics_render(NULL, NULL, &len);
    ck_assert_ptr_nonnull(strstr(metrics, "\nwebhook_http_body_bytes_in_flight 0\n"));
    ck_assert_ptr_nonnull(
        strstr(metrics, "\nwebhook_admission_requests_total{code=\"503\",outcome=\"error\"} 2\n"));
    free(metrics);
    /* A client that vanishes mid-body gives its reservation back too. */
    slow[0] = connect_loopback(server_port(s));
    ck_assert_int_ge(slow[0], 0);
    ck_assert_int_eq(send(slow[0], head, sizeof(head) - 1, MSG_NOSIGNAL),
                     (ssize_t)sizeof(head) - 1);
    wait_body_bytes(s, 1024);
    close(slow[0]);
    wait_body_bytes(s, 0);
    server_stop(s);
    free(body);
}
END_TEST

START_TEST(test_keep_alive)
{
    CURL *h = curl_easy_init();
    char url[128];
    struct reply r;

    snprintf(url, sizeof(url), "%s/pods/mutate", base);
    ck_assert_int_eq(
        exchange(h, "POST", url, "application/json", valid_review, strlen(valid_review), false, &r),
        CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(r.new_conns, 1);
    reply_free(&r);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(exchange(h, "POST", url, "application/json", valid_review,
                                  strlen(valid_review), false, &r),
                         CURLE_OK);
        ck_assert_int_eq(r.status, 200);
        ck_assert_int_eq(r.new_conns, 0); /* the same connection again */
        reply_free(&r);
    }
    /* A 400 keeps the connection too. */
    ck_assert_int_eq(exchange(h, "POST", url, "application/json", "[]", 2, false, &r), CURLE_OK);
    ck_assert_int_eq(r.status, 400);
    reply_free(&r);
    ck_assert_int_eq(
        exchange(h, "POST", url, "application/json", valid_review, strlen(valid_review), false, &r),
        CURLE_OK);
    ck_assert_int_eq(r.new_conns, 0);
    reply_free(&r);
    curl_easy_cleanup(h);
}
END_TEST

/* Send raw bytes, read until the server closes or answers; return what came back. */
static size_t raw_exchange(unsigned port, const char *data, size_t len, char *buf, size_t blen)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct timeval tv = {.tv_sec = 10};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    size_t got = 0;
    ssize_t n;

    ck_assert_int_ge(fd, 0);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ck_assert_int_eq(send(fd, data, len, MSG_NOSIGNAL) == (ssize_t)len, 1);
    shutdown(fd, SHUT_WR);
    while (got + 1 < blen && (n = recv(fd, buf + got, blen - 1 - got, 0)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    close(fd);
    return got;
}

START_TEST(test_garbage_survives)
{
    /* Each ends a request (or a line), so the server answers or closes at once. */
    static const struct {
        const char *data;
        size_t len;
    } junk[] = {
#define J(s) {s, sizeof(s) - 1}
        J("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"), /* TLS hello on plain HTTP */
        J("GET\r\n\r\n"),
        J("\x01\x02\xff\r\n\r\n"),
        J("GET /\x00x HTTP/1.1\r\nHost: x\r\n\r\n"),
        J("POST /pods/mutate HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"),
        J("POST /pods/mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          "Content-Length: 99999999999999999999999\r\n\r\n{}"),
        J("POST /pods/mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          "Transfer-Encoding: chunked\r\n\r\nzz\r\n"),
        J("POST /pods/mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n7\r\n{\"a\":1}\r\n0\r\n\r\n"),
#undef J
    };
    static const char good[] =
        "POST /pods/mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 2\r\nConnection: close\r\n\r\n[]";
    static const char cut[] =
        "POST /pods/mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 10\r\n\r\n{\"a\"";
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)server_port(srv))};
    char buf[4096];
    struct reply r;
    int fd;

    for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
        raw_exchange(server_port(srv), junk[i].data, junk[i].len, buf, sizeof(buf));
    /* A body cut short by a vanished client: the buffer is freed when MHD drops it. */
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(send(fd, cut, sizeof(cut) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(cut) - 1), 1);
    close(fd);
    /* A well-formed raw request still gets the exact answer. */
    raw_exchange(server_port(srv), good, sizeof(good) - 1, buf, sizeof(buf));
    ck_assert_msg(strncmp(buf, "HTTP/1.1 400", 12) == 0, "got %s", buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"message\":\"body is not a JSON object\""));
    request("GET", "/healthz", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
}
END_TEST

START_TEST(test_start_errors)
{
    struct server_config cfg = {.bind_address = "localhost", .src = {.get = fake_get}};
    struct wh_error err = {0, ""};
    struct server *s = NULL;
    struct certs_pair ca = {NULL, NULL}, leaf = {NULL, NULL};
    const char *const names[] = {"localhost"};

    ck_assert_int_eq(server_start(&s, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "bind address \"localhost\" is not an IP address");
    ck_assert_ptr_null(s);
    cfg.bind_address = "127.0.0.1";
    cfg.port = 70000;
    ck_assert_int_eq(server_start(&s, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "port 70000 is out of range");
    cfg.port = 0;
    /* A budget below the body cap could never hold a body of the largest size. */
    cfg.max_body = 1024;
    cfg.max_body_in_flight = 1023;
    ck_assert_int_eq(server_start(&s, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg,
                     "body bytes in flight 1023 are below the body cap 1024: no body of "
                     "the largest size could be served");
    ck_assert_ptr_null(s);
    cfg.max_body_in_flight = 0; /* the default, 64 MiB, over the 3 MiB cap */
    cfg.max_body = 64 * MiB + 1;
    ck_assert_int_eq(server_start(&s, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg,
                     "body bytes in flight 67108864 are below the body cap 67108865: "
                     "no body of the largest size could be served");
    cfg.max_body = 0;
    cfg.tls_cert_pem = "x";
    ck_assert_int_eq(server_start(&s, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "TLS needs both a certificate and a key");
    /* A key that does not match the certificate: the daemon refuses to start. */
    ck_assert_int_eq(certs_generate(&ca, &leaf, CERTS_KEY_ECDSA_P256, names, 1, 1, NULL), 0);
    cfg.tls_cert_pem = leaf.cert_pem;
    cfg.tls_key_pem = ca.key_pem;
    ck_assert_int_eq(server_start(&s, &cfg, &err), WH_ERROR);
    ck_assert_ptr_null(s);
    /* The port of a running server is taken. */
    cfg.tls_cert_pem = cfg.tls_key_pem = NULL;
    cfg.port = server_port(srv);
    ck_assert_int_eq(server_start(&s, &cfg, &err), WH_ERROR);
    ck_assert_ptr_null(s);
    server_stop(NULL);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);
}
END_TEST

/* A TCP connection to 127.0.0.1:port (connect only: the listen queue accepts it). */
static int connect_loopback(unsigned port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ck_assert_int_ge(fd, 0);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/*
 * server_create binds and parses and serves nothing (serve_start creates the
 * server before any request to the API server); server_run serves what queued
 * meanwhile. A taken port fails server_create with the kernel's reason.
 */
START_TEST(test_create_then_run)
{
    static const char get[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    struct server_config cfg = {
        .bind_address = "127.0.0.1", .threads = 2, .src = {.get = fake_get}};
    struct wh_error err = {0, ""};
    struct server *s = NULL;
    struct server *taken = NULL;
    struct pollfd pfd;
    char want[96];
    char buf[512];
    size_t got = 0;
    ssize_t n;
    unsigned port;
    int fd;

    ck_assert_int_eq(server_create(&s, &cfg, &err), 0);
    port = server_port(s);
    ck_assert_uint_ne(port, 0);
    /* Bound and listening, not served: the connect waits in the listen queue. */
    fd = connect_loopback(port);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(send(fd, get, sizeof(get) - 1, MSG_NOSIGNAL), (ssize_t)(sizeof(get) - 1));
    pfd = (struct pollfd){.fd = fd, .events = POLLIN};
    ck_assert_int_eq(poll(&pfd, 1, 100), 0);
    /* The port is taken from server_create on. */
    cfg.port = port;
    ck_assert_int_eq(server_create(&taken, &cfg, &err), WH_ERROR);
    snprintf(want, sizeof(want), "cannot listen on 127.0.0.1 port %u: Address already in use",
             port);
    ck_assert_str_eq(err.msg, want);
    ck_assert_ptr_null(taken);
    ck_assert_int_eq(server_start(&taken, &cfg, &err), WH_ERROR);
    ck_assert_str_eq(err.msg, want);
    ck_assert_ptr_null(taken);
    /* server_run answers the request that queued. */
    ck_assert_int_eq(server_run(s, &err), 0);
    while (got + 1 < sizeof(buf) && (n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    close(fd);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "got \"%s\"", buf);
    ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\nok"));
    ck_assert_int_eq(server_run(s, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "the server is not created or runs already");
    server_stop(s);
    /* Created and never run: server_stop closes the socket, the port is free again. */
    cfg.port = 0;
    ck_assert_int_eq(server_create(&s, &cfg, &err), 0);
    port = server_port(s);
    server_stop(s);
    ck_assert_int_eq(connect_loopback(port), -1);
    ck_assert_int_eq(server_run(NULL, &err), WH_EINVAL);
}
END_TEST

START_TEST(test_ipv6)
{
    struct server *s6 = start("::1", NULL, NULL);
    struct server *s6b = start("[::1]", NULL, NULL);
    char saved[64];
    struct reply r;

    memcpy(saved, base, sizeof(saved));
    snprintf(base, sizeof(base), "http://[::1]:%u", server_port(s6));
    request("GET", "/healthz", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "ok");
    reply_free(&r);
    memcpy(base, saved, sizeof(saved));
    ck_assert_str_eq(server_address(s6b), "[::1]");
    server_stop(s6);
    server_stop(s6b);
}
END_TEST

/* "::", the default (NULL), listens on both families: IPV6_V6ONLY off. */
START_TEST(test_dual_stack)
{
    static const char *const addrs[] = {"::", NULL};
    char saved[64];
    struct reply r;

    memcpy(saved, base, sizeof(saved));
    for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
        struct server *s = start(addrs[i], NULL, NULL);

        ck_assert_str_eq(server_address(s), "::");
        snprintf(base, sizeof(base), "http://127.0.0.1:%u", server_port(s));
        request("GET", "/healthz", NULL, NULL, 0, &r);
        ck_assert_int_eq(r.status, 200);
        ck_assert_str_eq(r.body, "ok");
        reply_free(&r);
        snprintf(base, sizeof(base), "http://[::1]:%u", server_port(s));
        request("GET", "/healthz", NULL, NULL, 0, &r);
        ck_assert_int_eq(r.status, 200);
        ck_assert_str_eq(r.body, "ok");
        reply_free(&r);
        server_stop(s);
    }
    memcpy(base, saved, sizeof(saved));
    ck_assert_str_eq(server_address(NULL), "");
}
END_TEST

/* TLS: the serving certificate verifies by the Service name against the CA. */
static struct certs_pair tls_ca;
static struct certs_pair tls_leaf;

static void tls_setup(void)
{
    const char *const names[] = {"wh", "wh.ns", "wh.ns.svc", "wh.ns.svc.cluster.local"};
    struct wh_error err = {0, ""};

    ck_assert_msg(certs_generate(&tls_ca, &tls_leaf, CERTS_KEY_ECDSA_P256, names, 4, 1, &err) == 0,
                  "%s", err.msg);
    srv = start("127.0.0.1", tls_leaf.cert_pem, tls_leaf.key_pem);
}

static void tls_teardown(void)
{
    server_stop(srv);
    srv = NULL;
    certs_pair_dispose(&tls_ca);
    certs_pair_dispose(&tls_leaf);
}

/* GET https://host:port/healthz trusting ca_pem, with host resolved to 127.0.0.1. */
static CURLcode tls_get(const char *host, const char *ca_pem, struct reply *r, CURL **keep)
{
    CURL *h = keep != NULL && *keep != NULL ? *keep : curl_easy_init();
    struct curl_blob blob = {
        .data = (void *)ca_pem, .len = strlen(ca_pem), .flags = CURL_BLOB_COPY};
    struct curl_slist *res = NULL;
    char url[256];
    char resolve[256];
    CURLcode rc;

    snprintf(url, sizeof(url), "https://%s:%u/pods/mutate", host, server_port(srv));
    snprintf(resolve, sizeof(resolve), "%s:%u:127.0.0.1", host, server_port(srv));
    res = curl_slist_append(res, resolve);
    curl_easy_setopt(h, CURLOPT_RESOLVE, res);
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    rc = exchange(h, "POST", url, "application/json", valid_review, strlen(valid_review), false, r);
    curl_easy_setopt(h, CURLOPT_RESOLVE, NULL);
    curl_slist_free_all(res);
    if (keep != NULL)
        *keep = h;
    else
        curl_easy_cleanup(h);
    return rc;
}

START_TEST(test_tls)
{
    struct reply r;
    CURL *h = NULL;

    ck_assert_int_eq(tls_get("wh.ns.svc", tls_ca.cert_pem, &r, &h), CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    assert_valid_answer(&r);
    ck_assert_int_eq(r.new_conns, 1);
    reply_free(&r);
    /* Keep-alive over TLS. */
    ck_assert_int_eq(tls_get("wh.ns.svc", tls_ca.cert_pem, &r, &h), CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(r.new_conns, 0);
    reply_free(&r);
    curl_easy_cleanup(h);
    ck_assert_int_eq(tls_get("wh.ns.svc.cluster.local", tls_ca.cert_pem, &r, NULL), CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
}
END_TEST

START_TEST(test_tls_rejects)
{
    struct certs_pair other_ca = {NULL, NULL}, other_leaf = {NULL, NULL};
    const char *const names[] = {"wh.ns.svc"};
    struct reply r;
    CURLcode rc;

    /* A name not in the SAN. */
    rc = tls_get("wh.other.svc", tls_ca.cert_pem, &r, NULL);
    ck_assert_int_eq(rc, CURLE_PEER_FAILED_VERIFICATION);
    reply_free(&r);
    /* Another CA. */
    ck_assert_int_eq(
        certs_generate(&other_ca, &other_leaf, CERTS_KEY_ECDSA_P256, names, 1, 1, NULL), 0);
    rc = tls_get("wh.ns.svc", other_ca.cert_pem, &r, NULL);
    ck_assert_int_eq(rc, CURLE_PEER_FAILED_VERIFICATION);
    reply_free(&r);
    certs_pair_dispose(&other_ca);
    certs_pair_dispose(&other_leaf);
    /* Plain HTTP to the TLS port gets no HTTP answer, and the server lives on. */
    snprintf(base, sizeof(base), "http://127.0.0.1:%u", server_port(srv));
    {
        CURL *h = curl_easy_init();
        char url[128];

        snprintf(url, sizeof(url), "%s/healthz", base);
        ck_assert_int_ne(exchange(h, "GET", url, NULL, NULL, 0, false, &r), CURLE_OK);
        reply_free(&r);
        curl_easy_cleanup(h);
    }
    ck_assert_int_eq(tls_get("wh.ns.svc", tls_ca.cert_pem, &r, NULL), CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
}
END_TEST

/* ---- operations ---- */

/* TLS hot reload: new handshakes get the new pair, an open connection keeps its own. */
START_TEST(test_tls_swap)
{
    struct certs_pair other_ca = {NULL, NULL}, other_leaf = {NULL, NULL};
    const char *const names[] = {"wh.ns.svc"};
    struct wh_error err = {0, ""};
    struct server *plain = start("127.0.0.1", NULL, NULL);
    struct reply r;
    CURL *h = NULL;

    ck_assert_int_eq(tls_get("wh.ns.svc", tls_ca.cert_pem, &r, &h), CURLE_OK);
    ck_assert_int_eq(r.new_conns, 1);
    reply_free(&r);
    ck_assert_int_eq(
        certs_generate(&other_ca, &other_leaf, CERTS_KEY_ECDSA_P256, names, 1, 1, NULL), 0);
    ck_assert_int_eq(server_set_tls_pair(srv, other_leaf.cert_pem, other_leaf.key_pem, &err), 0);
    /* The open connection goes on with the pair of its handshake. */
    ck_assert_int_eq(tls_get("wh.ns.svc", tls_ca.cert_pem, &r, &h), CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(r.new_conns, 0);
    reply_free(&r);
    curl_easy_cleanup(h);
    /* New connections: the new pair only. */
    ck_assert_int_eq(tls_get("wh.ns.svc", other_ca.cert_pem, &r, NULL), CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    ck_assert_int_eq(tls_get("wh.ns.svc", tls_ca.cert_pem, &r, NULL),
                     CURLE_PEER_FAILED_VERIFICATION);
    reply_free(&r);
    /* Broken pairs are refused; the current one stays. */
    ck_assert_int_eq(server_set_tls_pair(srv, tls_leaf.cert_pem, other_leaf.key_pem, &err),
                     WH_EINVAL);
    ck_assert_str_eq(err.msg, "the TLS private key does not match the first certificate");
    ck_assert_int_eq(server_set_tls_pair(srv,
                                         "-----BEGIN CERTIFICATE-----\nxx\n"
                                         "-----END CERTIFICATE-----\n",
                                         other_leaf.key_pem, &err),
                     WH_EINVAL);
    ck_assert_msg(strncmp(err.msg, "the TLS certificate does not parse: ", 36) == 0, "%s", err.msg);
    ck_assert_int_eq(server_set_tls_pair(srv, other_leaf.cert_pem, "not a key", &err), WH_EINVAL);
    ck_assert_msg(strncmp(err.msg, "the TLS private key does not parse: ", 36) == 0, "%s", err.msg);
    ck_assert_int_eq(server_set_tls_pair(srv, NULL, other_leaf.key_pem, &err), WH_EINVAL);
    ck_assert_int_eq(tls_get("wh.ns.svc", other_ca.cert_pem, &r, NULL), CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    /* Swapping back works as often as wanted. */
    ck_assert_int_eq(server_set_tls_pair(srv, tls_leaf.cert_pem, tls_leaf.key_pem, &err), 0);
    ck_assert_int_eq(tls_get("wh.ns.svc", tls_ca.cert_pem, &r, NULL), CURLE_OK);
    reply_free(&r);
    /* A plain HTTP server has no pair to swap. */
    ck_assert_int_eq(server_set_tls_pair(plain, tls_leaf.cert_pem, tls_leaf.key_pem, &err),
                     WH_EINVAL);
    ck_assert_str_eq(err.msg, "the server does not serve TLS");
    server_stop(plain);
    certs_pair_dispose(&other_ca);
    certs_pair_dispose(&other_leaf);
}
END_TEST

/* metrics_collect of test_metrics: one sample naming its userdata. */
static void test_collect(void *userdata, struct metric_writer *w)
{
    metric_write(w, "test_collected", "gauge", "A test value.", NULL, *(double *)userdata);
}

START_TEST(test_metrics)
{
    static double value = 42;
    struct server_config cfg = {
        .bind_address = "127.0.0.1",
        .threads = 2,
        .src = {.get = fake_get},
        .metrics_collect = test_collect,
        .metrics_userdata = &value,
    };
    struct wh_error err = {0, ""};
    struct server *s2 = NULL;
    struct reply r;

    metrics_reset();
    ck_assert_msg(server_start(&s2, &cfg, &err) == 0, "server_start: %s", err.msg);
    snprintf(base, sizeof(base), "http://127.0.0.1:%u", server_port(s2));
    request("GET", "/nope", NULL, NULL, 0, &r);
    reply_free(&r);
    request("GET", "/pods/mutate", NULL, NULL, 0, &r);
    reply_free(&r);
    request("POST", "/pods/mutate", "application/json", valid_review, strlen(valid_review), &r);
    reply_free(&r);
    request("POST", "/pods/mutate", "application/json", "{", 1, &r);
    reply_free(&r);
    request("GET", "/healthz", NULL, NULL, 0, &r); /* probes are not admissions */
    reply_free(&r);
    request("GET", "/metrics?x=1", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.ctype, "text/plain; version=0.0.4; charset=utf-8");
    ck_assert_ptr_nonnull(
        strstr(r.body, "webhook_admission_requests_total{code=\"404\",outcome=\"error\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(r.body, "webhook_admission_requests_total{code=\"405\",outcome=\"error\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(r.body, "webhook_admission_requests_total{code=\"200\",outcome=\"unchanged\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(r.body, "webhook_admission_requests_total{code=\"400\",outcome=\"error\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(r.body, "webhook_admission_duration_seconds_count 4\n"));
    ck_assert_ptr_nonnull(strstr(r.body, "webhook_admission_in_flight 0\n"));
    ck_assert_ptr_nonnull(strstr(r.body, "# TYPE test_collected gauge\ntest_collected 42\n"));
    reply_free(&r);
    request("HEAD", "/metrics", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "");
    reply_free(&r);
    request("POST", "/metrics", "application/json", "{}", 2, &r);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(r.allow, "GET, HEAD");
    assert_status_body(&r, 405, "MethodNotAllowed",
                       "method POST is not allowed on /metrics, use GET");
    reply_free(&r);
    server_stop(s2);
}
END_TEST

/* Poll until the server has nothing in flight (the last answer's completion runs
 * just after the client got it). */
static void wait_idle(struct server *s)
{
    for (int i = 0; i < 500 && server_in_flight(s) != 0; i++)
        usleep(10000);
    ck_assert_uint_eq(server_in_flight(s), 0);
}

START_TEST(test_draining)
{
    struct reply r;
    CURL *h = curl_easy_init();
    char url[128];

    snprintf(url, sizeof(url), "%s/pods/mutate", base);
    ck_assert_int_eq(
        exchange(h, "POST", url, "application/json", valid_review, strlen(valid_review), false, &r),
        CURLE_OK);
    ck_assert_str_eq(r.connection, "");
    reply_free(&r);
    wait_idle(srv);
    server_set_draining(srv);
    server_set_draining(srv); /* idempotent */
    request("GET", "/readyz", NULL, NULL, 0, &r);
    assert_status_body(&r, 503, "ServiceUnavailable", "shutting down");
    ck_assert_str_eq(r.connection, "close");
    reply_free(&r);
    request("GET", "/healthz", NULL, NULL, 0, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.connection, "close");
    reply_free(&r);
    /* Admissions are still served, each on a connection the server then closes. */
    ck_assert_int_eq(
        exchange(h, "POST", url, "application/json", valid_review, strlen(valid_review), false, &r),
        CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(r.new_conns, 0);
    ck_assert_str_eq(r.connection, "close");
    assert_valid_answer(&r);
    reply_free(&r);
    ck_assert_int_eq(
        exchange(h, "POST", url, "application/json", valid_review, strlen(valid_review), false, &r),
        CURLE_OK);
    ck_assert_int_eq(r.new_conns, 1);
    reply_free(&r);
    curl_easy_cleanup(h);
    wait_idle(srv);
}
END_TEST

START_TEST(test_quiesce)
{
    static const char head[] =
        "POST /pods/mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Connection: close\r\nContent-Length: ";
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)server_port(srv))};
    struct timeval tv = {.tv_sec = 10};
    CURL *fresh = curl_easy_init();
    char url[128];
    char len[32];
    char buf[4096];
    size_t got = 0;
    ssize_t n;
    struct reply r;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    /* A request under way when the listener stops... */
    ck_assert_int_ge(fd, 0);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    snprintf(len, sizeof(len), "%zu\r\n\r\n", strlen(valid_review));
    ck_assert_int_eq(send(fd, head, strlen(head), MSG_NOSIGNAL) == (ssize_t)strlen(head), 1);
    ck_assert_int_eq(send(fd, len, strlen(len), MSG_NOSIGNAL) == (ssize_t)strlen(len), 1);
    for (int i = 0; i < 500 && server_in_flight(srv) == 0; i++)
        usleep(10000); /* until the server has accepted it */
    server_quiesce(srv);
    server_quiesce(srv); /* idempotent */
    ck_assert_uint_eq(server_in_flight(srv), 1);
    /* ...is still served to the end. */
    ck_assert_int_eq(send(fd, valid_review, strlen(valid_review), MSG_NOSIGNAL)
                         == (ssize_t)strlen(valid_review),
                     1);
    while (got + 1 < sizeof(buf) && (n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    close(fd);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "got %s", buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"uid\":\"u-1\""));
    /* A new connection is not accepted any more. */
    snprintf(url, sizeof(url), "%s/readyz", base);
    memset(&r, 0, sizeof(r));
    curl_easy_setopt(fresh, CURLOPT_URL, url);
    curl_easy_setopt(fresh, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(fresh, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(fresh, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(fresh, CURLOPT_TIMEOUT_MS, 1000L);
    ck_assert_int_eq(curl_easy_perform(fresh), CURLE_OPERATION_TIMEDOUT);
    free(r.body);
    curl_easy_cleanup(fresh);
    wait_idle(srv);
}
END_TEST

/* A raw client: connect to port, send head, then one more byte every 50 ms until the
 * server closes. @return whether it closed within 20 s. */
static bool trickle_until_closed(unsigned port, const char *head)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    bool closed = false;

    ck_assert_int_ge(fd, 0);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    if (head[0] != '\0')
        ck_assert_int_eq(send(fd, head, strlen(head), MSG_NOSIGNAL) == (ssize_t)strlen(head), 1);
    for (int i = 0; i < 400 && !closed; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        char buf[256];

        if (poll(&p, 1, 50) > 0) {
            ssize_t n = recv(fd, buf, sizeof(buf), 0);

            ck_assert_msg(n <= 0, "the server answered a request still arriving");
            closed = true;
        } else if (head[0] != '\0' && send(fd, "a", 1, MSG_NOSIGNAL) != 1) {
            closed = true;
        }
    }
    close(fd);
    return closed;
}

START_TEST(test_request_timeout)
{
    struct server_config cfg = {
        .bind_address = "127.0.0.1",
        .threads = 2,
        .request_timeout_ms = 300,
        .src = {.get = fake_get},
    };
    struct wh_error err = {0, ""};
    struct server *s2 = NULL;
    CURL *h = curl_easy_init();
    char url[128];
    struct reply r;

    ck_assert_msg(server_start(&s2, &cfg, &err) == 0, "server_start: %s", err.msg);
    snprintf(base, sizeof(base), "http://127.0.0.1:%u", server_port(s2));
    /* Headers a byte at a time, the body a byte at a time, nothing at all. */
    ck_assert(trickle_until_closed(server_port(s2),
                                   "POST /pods/mutate HTTP/1.1\r\nHost: x\r\n"
                                   "X-Slow: "));
    ck_assert(trickle_until_closed(server_port(s2),
                                   "POST /pods/mutate HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                   "application/json\r\nContent-Length: 100000\r\n\r\n{"));
    ck_assert(trickle_until_closed(server_port(s2), "GET /heal"));
    ck_assert(trickle_until_closed(server_port(s2), ""));
    /* A keep-alive connection idle past the request time is not a slow request. */
    snprintf(url, sizeof(url), "%s/pods/mutate", base);
    ck_assert_int_eq(
        exchange(h, "POST", url, "application/json", valid_review, strlen(valid_review), false, &r),
        CURLE_OK);
    ck_assert_int_eq(r.new_conns, 1);
    reply_free(&r);
    usleep(700 * 1000);
    ck_assert_int_eq(
        exchange(h, "POST", url, "application/json", valid_review, strlen(valid_review), false, &r),
        CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(r.new_conns, 0);
    assert_valid_answer(&r);
    reply_free(&r);
    curl_easy_cleanup(h);
    wait_idle(s2);
    server_stop(s2);
}
END_TEST

/* Whether the peer of fd has closed within ms (poll, then a read of 0 bytes). */
static bool closed_within(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;

    return poll(&p, 1, ms) == 1 && recv(fd, &c, 1, MSG_DONTWAIT) == 0;
}

/*
 * Near connection_limit a new connection makes the oldest reusable one give way:
 * with a limit of 8 on one worker the server keeps 7 (a reserve of one per
 * worker), so the 8th connection closes the 1st, and a request on a 9th is
 * served and closes the 2nd; the others stay open.
 */
START_TEST(test_evict_oldest)
{
    struct server_config cfg = {
        .bind_address = "127.0.0.1",
        .threads = 1,
        .connection_limit = 8,
        .src = {.get = fake_get},
    };
    struct wh_error err = {0, ""};
    struct server *s2 = NULL;
    unsigned long long evicted = metric_counter_get(&server_metrics.evicted);
    int fds[8];
    char url[128];
    struct reply r;
    CURL *h = curl_easy_init();

    ck_assert_msg(server_start(&s2, &cfg, &err) == 0, "server_start: %s", err.msg);
    for (int i = 0; i < 8; i++) {
        fds[i] = connect_loopback(server_port(s2));
        ck_assert_int_ge(fds[i], 0);
        usleep(20 * 1000); /* accepted one after another: each older than the next */
    }
    ck_assert(closed_within(fds[0], 5000));
    for (int i = 1; i < 8; i++)
        ck_assert_msg(!closed_within(fds[i], 50), "connection %d closed", i);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", server_port(s2));
    ck_assert_int_eq(exchange(h, "GET", url, NULL, NULL, 0, false, &r), CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    ck_assert(closed_within(fds[1], 5000));
    for (int i = 2; i < 8; i++)
        ck_assert_msg(!closed_within(fds[i], 50), "connection %d closed", i);
    ck_assert_uint_eq(metric_counter_get(&server_metrics.evicted) - evicted, 2);
    for (int i = 0; i < 8; i++)
        close(fds[i]);
    curl_easy_cleanup(h);
    server_stop(s2);
}
END_TEST

/*
 * sendmsg of this test program: while send_cap is not 0, a call writes at most
 * send_cap bytes (a socket with that little room, to the byte, which no real
 * socket gives on demand); else the next sendmsg (libc's, or a sanitizer's
 * interceptor) as it is.
 */
static _Atomic size_t send_cap;
static ssize_t (*sendmsg_next)(int, const struct msghdr *, int); /* set by main */

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
    ssize_t (*next)(int, const struct msghdr *, int) = sendmsg_next;
    size_t left = atomic_load(&send_cap);
    struct msghdr capped;
    struct iovec v[64];
    size_t n = 0;

    if (left == 0 || m->msg_iovlen > sizeof(v) / sizeof(v[0]))
        return next(fd, m, flags);
    capped = *m;
    for (size_t i = 0; i < m->msg_iovlen && left > 0; i++) {
        v[n] = m->msg_iov[i];
        if (v[n].iov_len > left)
            v[n].iov_len = left;
        left -= v[n++].iov_len;
    }
    capped.msg_iov = v;
    capped.msg_iovlen = n;
    return next(fd, &capped, flags);
}

/* Bytes waiting on fd, appended to out (capacity cap) without blocking. */
static size_t take_waiting(int fd, unsigned char *out, size_t have, size_t cap)
{
    ssize_t n;

    while (have < cap && (n = recv(fd, out + have, cap - have, MSG_DONTWAIT)) > 0)
        have += (size_t)n;
    return have;
}

/*
 * server_tls_push: an armed connection holds a record shorter than the answer's
 * body and writes it before the next one; anything else goes straight out; a
 * full socket loses and repeats nothing (the stream is exactly what was pushed).
 */
START_TEST(test_tls_push_holds_one_record)
{
    static unsigned char head[160], body[3000], junk[1 << 20], got[(1 << 20) + 8192];
    struct conn_ctx *cc = calloc(1, sizeof(*cc));
    int sv[2];
    int sndbuf = 4096;
    size_t njunk = 0;
    size_t have;
    ssize_t w;
    bool full_seen = false;
    giovec_t v;

    ck_assert_ptr_nonnull(cc);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
    cc->fd = sv[0];
    memset(head, 'h', sizeof(head));
    for (size_t i = 0; i < sizeof(body); i++)
        body[i] = (unsigned char)('a' + i % 26);

    /* armed: the header's record is held, nothing is written, the arm is spent */
    cc->tls_hold_below = sizeof(body);
    v = (giovec_t){head, sizeof(head)};
    ck_assert_int_eq(server_tls_push(cc, &v, 1), (ssize_t)sizeof(head));
    ck_assert_uint_eq(cc->tls_held_len, sizeof(head));
    ck_assert_uint_eq(cc->tls_hold_below, 0);
    ck_assert_uint_eq(take_waiting(sv[1], got, 0, sizeof(got)), 0);
    /* the body's record goes out after it, in the same write */
    v = (giovec_t){body, sizeof(body)};
    ck_assert_int_eq(server_tls_push(cc, &v, 1), (ssize_t)sizeof(body));
    ck_assert_uint_eq(cc->tls_held_len, 0);
    have = take_waiting(sv[1], got, 0, sizeof(got));
    ck_assert_uint_eq(have, sizeof(head) + sizeof(body));
    ck_assert_mem_eq(got, head, sizeof(head));
    ck_assert_mem_eq(got + sizeof(head), body, sizeof(body));

    /* not shorter than the body (the whole answer in one record), or longer than
     * TLS_HOLD_MAX, or not armed: written at once */
    cc->tls_hold_below = sizeof(head);
    v = (giovec_t){head, sizeof(head)};
    ck_assert_int_eq(server_tls_push(cc, &v, 1), (ssize_t)sizeof(head));
    cc->tls_hold_below = sizeof(body);
    v = (giovec_t){body, TLS_HOLD_MAX + 1};
    ck_assert_int_eq(server_tls_push(cc, &v, 1), TLS_HOLD_MAX + 1);
    v = (giovec_t){head, 10};
    ck_assert_int_eq(server_tls_push(cc, &v, 1), 10);
    ck_assert_uint_eq(cc->tls_held_len, 0);
    ck_assert_uint_eq(take_waiting(sv[1], got, 0, sizeof(got)), sizeof(head) + TLS_HOLD_MAX + 11);

    /* more buffers than one write takes with the held record: it goes alone first,
     * then every buffer (a short count would wait for an edge that never comes) */
    {
        giovec_t many[TLS_PUSH_IOV_MAX + 5];

        for (size_t i = 0; i < TLS_PUSH_IOV_MAX + 5; i++)
            many[i] = (giovec_t){body + i, 1};
        cc->tls_hold_below = sizeof(body);
        v = (giovec_t){head, sizeof(head)};
        ck_assert_int_eq(server_tls_push(cc, &v, 1), (ssize_t)sizeof(head));
        ck_assert_int_eq(server_tls_push(cc, many, TLS_PUSH_IOV_MAX + 5), TLS_PUSH_IOV_MAX + 5);
        ck_assert_uint_eq(cc->tls_held_len, 0);
        have = take_waiting(sv[1], got, 0, sizeof(got));
        ck_assert_uint_eq(have, sizeof(head) + TLS_PUSH_IOV_MAX + 5);
        ck_assert_mem_eq(got, head, sizeof(head));
        ck_assert_mem_eq(got + sizeof(head), body, TLS_PUSH_IOV_MAX + 5);
    }

    /* a socket with room for part of the held record, then for the rest of it
     * alone, then for more: the body waits (EAGAIN) until a write takes some of it */
    cc->tls_hold_below = sizeof(body);
    v = (giovec_t){head, sizeof(head)};
    ck_assert_int_eq(server_tls_push(cc, &v, 1), (ssize_t)sizeof(head));
    v = (giovec_t){body, sizeof(body)};
    atomic_store(&send_cap, 100);
    errno = 0;
    ck_assert_int_eq(server_tls_push(cc, &v, 1), -1);
    ck_assert_int_eq(errno, EAGAIN);
    ck_assert_uint_eq(cc->tls_held_len, sizeof(head) - 100);
    atomic_store(&send_cap, sizeof(head) - 100);
    errno = 0;
    ck_assert_int_eq(server_tls_push(cc, &v, 1), -1);
    ck_assert_int_eq(errno, EAGAIN);
    ck_assert_uint_eq(cc->tls_held_len, 0);
    atomic_store(&send_cap, 1000);
    ck_assert_int_eq(server_tls_push(cc, &v, 1), 1000);
    atomic_store(&send_cap, 0);
    v = (giovec_t){body + 1000, sizeof(body) - 1000};
    ck_assert_int_eq(server_tls_push(cc, &v, 1), (ssize_t)v.iov_len);
    have = take_waiting(sv[1], got, 0, sizeof(got));
    ck_assert_uint_eq(have, sizeof(head) + sizeof(body));
    ck_assert_mem_eq(got, head, sizeof(head));
    ck_assert_mem_eq(got + sizeof(head), body, sizeof(body));

    /* a full socket: the held record and the body arrive whole, in order, once */
    ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)(i * 7);
    for (;;) {
        w = send(sv[0], junk + njunk, 512, MSG_DONTWAIT);
        if (w < 0)
            break;
        njunk += (size_t)w;
        ck_assert_uint_lt(njunk, sizeof(junk) - 512);
    }
    ck_assert_int_eq(errno, EAGAIN);
    cc->tls_hold_below = sizeof(body);
    v = (giovec_t){head, sizeof(head)};
    ck_assert_int_eq(server_tls_push(cc, &v, 1), (ssize_t)sizeof(head));
    have = 0;
    for (int round = 0; round < 100000; round++) {
        v = (giovec_t){body, sizeof(body)};
        w = server_tls_push(cc, &v, 1);
        if (w < 0) {
            ck_assert_int_eq(errno, EAGAIN);
            full_seen = true;
            /* the reader takes a little, as a slow client does */
            if (have < sizeof(got)) {
                ssize_t n = recv(sv[1], got + have, 700, MSG_DONTWAIT);

                if (n > 0)
                    have += (size_t)n;
            }
            continue;
        }
        /* GnuTLS pushes the rest of a record the socket took part of */
        ck_assert_int_gt(w, 0);
        if ((size_t)w < sizeof(body)) {
            v = (giovec_t){body + w, sizeof(body) - (size_t)w};
            while ((w = server_tls_push(cc, &v, 1)) < 0 || (size_t)w < v.iov_len) {
                if (w > 0)
                    v = (giovec_t){(unsigned char *)v.iov_base + w, v.iov_len - (size_t)w};
                have = take_waiting(sv[1], got, have, sizeof(got));
            }
        }
        break;
    }
    ck_assert(full_seen);
    ck_assert_uint_eq(cc->tls_held_len, 0);
    have = take_waiting(sv[1], got, have, sizeof(got));
    ck_assert_uint_eq(have, njunk + sizeof(head) + sizeof(body));
    ck_assert_mem_eq(got, junk, njunk);
    ck_assert_mem_eq(got + njunk, head, sizeof(head));
    ck_assert_mem_eq(got + njunk + sizeof(head), body, sizeof(body));
    close(sv[0]);
    close(sv[1]);
    free(cc);
}
END_TEST

/* One line per LOG_PERIOD_MS, and the next one says how many were left out. */
START_TEST(test_log_take)
{
    struct server_log_limit l = {.lock = PTHREAD_MUTEX_INITIALIZER};
    unsigned long n = 99;

    ck_assert(server_log_take(&l, &n));
    ck_assert_uint_eq(n, 0);
    ck_assert(!server_log_take(&l, &n));
    ck_assert(!server_log_take(&l, &n));
    ck_assert(!server_log_take(&l, &n));
    l.last_ms -= LOG_PERIOD_MS; /* one period later */
    ck_assert(server_log_take(&l, &n));
    ck_assert_uint_eq(n, 3);
    ck_assert(!server_log_take(&l, &n));
    /* within a period: half of one, so that a slow run (TSan, a loaded machine)
     * cannot cross it between the take above and this one (a margin of 1 ms did) */
    l.last_ms -= LOG_PERIOD_MS / 2;
    ck_assert(!server_log_take(&l, &n));
    pthread_mutex_destroy(&l.lock);
}
END_TEST

/* ---- reviews whose Job only a GET would find (server_defer.c) ---- */

/*
 * A job source like the lookup's (controller/lookup.h): Job "fast" is at hand
 * (get_nowait answers it), Job "slow" is not (get_nowait: WH_EWOULDBLOCK), and its
 * get waits until the test releases it, as a GET to a slow API server does.
 */
struct slow_source {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned nowait_calls; /* get_nowait, any Job */
    unsigned get_calls;    /* get, any Job */
    unsigned waiting;      /* gets waiting for release now */
    bool release;
};

static json_t *defer_job(const char *name)
{
    json_t *job = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:[{s:s, s:i, s:{}}], s:{s:[]}}}",
                            "apiVersion", "batch.volcano.sh/v1alpha1", "kind", "Job", "metadata",
                            "name", name, "namespace", "team", "uid", name, "spec", "tasks", "name",
                            "w", "replicas", 2, "template", "plugins", "env");

    ck_assert_ptr_nonnull(job);
    return job;
}

/* get (wait) or get_nowait of the slow source: counts the call, then answers. */
static int slow_lookup(struct slow_source *ss, const char *name, bool wait, json_t **job_out)
{
    pthread_mutex_lock(&ss->mu);
    if (!wait) {
        ss->nowait_calls++;
        pthread_mutex_unlock(&ss->mu);
        if (strcmp(name, "fast") != 0)
            return WH_EWOULDBLOCK;
        *job_out = defer_job(name);
        return 0;
    }
    ss->get_calls++;
    ss->waiting++;
    pthread_cond_broadcast(&ss->cv);
    while (!ss->release)
        pthread_cond_wait(&ss->cv, &ss->mu);
    ss->waiting--;
    pthread_mutex_unlock(&ss->mu);
    *job_out = defer_job(name);
    return 0;
}

static int slow_get_nowait(void *userdata, const char *ns, const char *name, const char *uid,
                           json_t **job_out, struct wh_error *err)
{
    (void)ns;
    (void)uid;
    (void)err;
    return slow_lookup(userdata, name, false, job_out);
}

static int slow_get(void *userdata, const char *ns, const char *name, const char *uid,
                    json_t **job_out, struct wh_error *err)
{
    (void)ns;
    (void)uid;
    (void)err;
    return slow_lookup(userdata, name, true, job_out);
}

static struct slow_source slow_src;

static void slow_setup(void)
{
    memset(&slow_src, 0, sizeof(slow_src));
    pthread_mutex_init(&slow_src.mu, NULL);
    pthread_cond_init(&slow_src.cv, NULL);
}

static void slow_teardown(void)
{
    pthread_cond_destroy(&slow_src.cv);
    pthread_mutex_destroy(&slow_src.mu);
}

static void slow_release(void)
{
    pthread_mutex_lock(&slow_src.mu);
    slow_src.release = true;
    pthread_cond_broadcast(&slow_src.cv);
    pthread_mutex_unlock(&slow_src.mu);
}

/* Wait (10 s at most) until n gets wait for release. */
static void slow_wait_waiting(unsigned n)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&slow_src.mu);
    while (slow_src.waiting < n)
        if (pthread_cond_timedwait(&slow_src.cv, &slow_src.mu, &until) != 0)
            break;
    ck_assert_uint_eq(slow_src.waiting, n);
    pthread_mutex_unlock(&slow_src.mu);
}

/* One worker, so a review that held it would hold every connection. */
static struct server *start_slow(unsigned lookup_threads)
{
    struct server_config cfg = {
        .bind_address = "127.0.0.1",
        .threads = 1,
        .lookup_threads = lookup_threads,
        .src = {.get = slow_get, .get_nowait = slow_get_nowait, .userdata = &slow_src},
        .mutate = {.lookup_failure = LOOKUP_FAILURE_DENY},
    };
    struct wh_error err = {0, ""};
    struct server *s = NULL;

    ck_assert_msg(server_start(&s, &cfg, &err) == 0, "server_start: %s", err.msg);
    return s;
}

/* A review of pod <job>-w-<k> of Job job (its uid is its name), uid "u-<job>-<k>". */
static char *defer_review(const char *job, int k)
{
    char uid[64];
    char pod[64];
    char *text = NULL;
    json_t *rev;

    snprintf(uid, sizeof(uid), "u-%s-%d", job, k);
    snprintf(pod, sizeof(pod), "%s-w-%d", job, k);
    rev =
        json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, "
                  "s:{s:{s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:s, s:s, s:s, s:b}]}, "
                  "s:{s:[{s:s, s:s}]}}}}",
                  "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid",
                  uid, "kind", "group", "", "version", "v1", "kind", "Pod", "resource", "group", "",
                  "version", "v1", "resource", "pods", "namespace", "team", "operation", "CREATE",
                  "object", "metadata", "name", pod, "namespace", "team", "annotations",
                  "volcano.sh/job-name", job, "volcano.sh/task-spec", "w", "ownerReferences",
                  "apiVersion", "batch.volcano.sh/v1alpha1", "kind", "Job", "name", job, "uid", job,
                  "controller", 1, "spec", "containers", "name", "c", "image", "i");
    ck_assert_ptr_nonnull(rev);
    text = json_dumps(rev, JSON_COMPACT);
    json_decref(rev);
    ck_assert_ptr_nonnull(text);
    return text;
}

/* What admission_handle answers for review when the Job is at hand: the deferred
 * answer must be the same, byte for byte. */
static char *answer_at_hand(const char *review)
{
    struct slow_source released = {.release = true};
    struct jobsource src = {.get = slow_get, .userdata = &released};
    struct mutate_options opt = {.lookup_failure = LOOKUP_FAILURE_DENY};
    char *out = NULL;
    size_t len = 0;

    pthread_mutex_init(&released.mu, NULL);
    pthread_cond_init(&released.cv, NULL);
    ck_assert_int_eq(admission_handle(review, strlen(review), &src, &opt, &out, &len), 200);
    pthread_cond_destroy(&released.cv);
    pthread_mutex_destroy(&released.mu);
    return out;
}

struct post_job {
    unsigned port;
    const char *body;
    struct reply r;
    CURLcode rc;
    pthread_t tid;
};

static void *post_main(void *arg)
{
    struct post_job *pj = arg;
    CURL *h = curl_easy_init();
    char url[96];

    snprintf(url, sizeof(url), "http://127.0.0.1:%u/pods/mutate", pj->port);
    pj->rc =
        exchange(h, "POST", url, "application/json", pj->body, strlen(pj->body), false, &pj->r);
    curl_easy_cleanup(h);
    return NULL;
}

static void post_start(struct post_job *pj, struct server *s, const char *body)
{
    memset(pj, 0, sizeof(*pj));
    pj->port = server_port(s);
    pj->body = body;
    ck_assert_int_eq(pthread_create(&pj->tid, NULL, post_main, pj), 0);
}

/* POST body to s on a new connection, here. */
static void post_now(struct server *s, const char *body, struct reply *r)
{
    struct post_job pj;

    post_start(&pj, s, body);
    pthread_join(pj.tid, NULL);
    ck_assert_msg(pj.rc == CURLE_OK, "POST: %s", curl_easy_strerror(pj.rc));
    *r = pj.r;
}

START_TEST(test_defer_frees_the_worker)
{
    struct server *s = start_slow(2);
    char *slow = defer_review("slow", 0);
    char *fast = defer_review("fast", 1);
    char *slow_want = answer_at_hand(slow);
    char *fast_want = answer_at_hand(fast);
    struct post_job first;
    struct reply r;

    /* The pod whose Job only a GET finds: its connection waits on a lookup thread. */
    post_start(&first, s, slow);
    slow_wait_waiting(1);
    /* The one worker is free: another connection's review of a Job at hand is answered
     * while that GET still waits (before, the worker itself waited on it). */
    post_now(s, fast, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, fast_want);
    reply_free(&r);
    pthread_mutex_lock(&slow_src.mu);
    ck_assert_uint_eq(slow_src.waiting, 1);
    ck_assert_uint_eq(slow_src.get_calls, 1);
    ck_assert_uint_eq(slow_src.nowait_calls, 2);
    pthread_mutex_unlock(&slow_src.mu);
    /* The GET lands: the suspended connection gets the answer the Job makes. */
    slow_release();
    pthread_join(first.tid, NULL);
    ck_assert_msg(first.rc == CURLE_OK, "POST: %s", curl_easy_strerror(first.rc));
    ck_assert_int_eq(first.r.status, 200);
    ck_assert_str_eq(first.r.body, slow_want);
    ck_assert_ptr_nonnull(strstr(slow_want, "\"patch\":")); /* the env plugin's patch */
    reply_free(&first.r);
    wait_idle(s);
    server_stop(s);
    free(slow);
    free(fast);
    free(slow_want);
    free(fast_want);
}
END_TEST

static void *defer_stop_main(void *arg)
{
    server_defer_stop(arg);
    return NULL;
}

/*
 * With the one lookup thread waiting on a GET (and, when stopping, its stop begun), a
 * second review that would need one is answered at once per the failure mode (deny),
 * with why as the reason; the review in the air then gets its own answer.
 */
static void declined_while_one_waits(bool stopping, const char *why)
{
    struct server *s = start_slow(1);
    char *slow0 = defer_review("slow", 0);
    char *slow1 = defer_review("slow", 1);
    char *want0 = answer_at_hand(slow0);
    char want1[512];
    struct post_job first;
    struct reply r;
    pthread_t stopper;
    json_t *got;

    post_start(&first, s, slow0);
    slow_wait_waiting(1);
    if (stopping) {
        bool begun = false;

        ck_assert_int_eq(pthread_create(&stopper, NULL, defer_stop_main, s), 0);
        for (int i = 0; i < 1000 && !begun; i++) {
            pthread_mutex_lock(&s->defer_lock);
            begun = s->defer_stop;
            pthread_mutex_unlock(&s->defer_lock);
            if (!begun)
                usleep(10000);
        }
        ck_assert(begun);
    }
    post_now(s, slow1, &r);
    ck_assert_int_eq(r.status, 200);
    snprintf(want1, sizeof(want1),
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
             "\"response\":{\"uid\":\"u-slow-1\",\"allowed\":false,\"status\":{\"code\":500,"
             "\"message\":\"cannot read volcano job team/slow: %s\",\"status\":\"Failure\"}}}",
             why);
    got = tu_json(r.body);
    tu_assert_json_eq(got, want1);
    json_decref(got);
    reply_free(&r);
    pthread_mutex_lock(&slow_src.mu);
    ck_assert_uint_eq(slow_src.get_calls, 1);
    pthread_mutex_unlock(&slow_src.mu);
    /* The GET in the air lands: its review is answered (and a stop completes). */
    slow_release();
    if (stopping)
        pthread_join(stopper, NULL);
    pthread_join(first.tid, NULL);
    ck_assert_int_eq(first.rc, CURLE_OK);
    ck_assert_str_eq(first.r.body, want0);
    reply_free(&first.r);
    wait_idle(s);
    server_stop(s);
    free(slow0);
    free(slow1);
    free(want0);
}

START_TEST(test_defer_busy)
{
    declined_while_one_waits(
        false, "too many reviews waiting on volcano job reads from the API server (1); try again");
}
END_TEST

/* While the lookup threads stop (each finishing its GET), a review that would need one
 * is answered at once, saying why; none is left suspended. */
START_TEST(test_defer_while_stopping)
{
    declined_while_one_waits(true,
                             "the webhook is stopping and reads no more volcano jobs from "
                             "the API server; try again");
}
END_TEST

static void *release_later(void *arg)
{
    (void)arg;
    usleep(200 * 1000);
    slow_release();
    return NULL;
}

START_TEST(test_defer_stop)
{
    struct server *s = start_slow(1);
    char *slow = defer_review("slow", 0);
    char *want = answer_at_hand(slow);
    struct post_job first;
    pthread_t releaser;

    post_start(&first, s, slow);
    slow_wait_waiting(1);
    /* Stopping with a connection suspended: the stop waits for its GET and resumes it
     * (libmicrohttpd must not stop with one suspended), and nothing leaks. */
    ck_assert_int_eq(pthread_create(&releaser, NULL, release_later, NULL), 0);
    server_stop(s);
    pthread_join(releaser, NULL);
    pthread_join(first.tid, NULL);
    /* The answer went out, or the stop closed the connection first. */
    if (first.rc == CURLE_OK && first.r.status == 200)
        ck_assert_str_eq(first.r.body, want);
    else
        ck_assert_int_ne(first.rc, CURLE_OK);
    pthread_mutex_lock(&slow_src.mu);
    ck_assert_uint_eq(slow_src.get_calls, 1);
    ck_assert_uint_eq(slow_src.waiting, 0);
    pthread_mutex_unlock(&slow_src.mu);
    reply_free(&first.r);
    free(slow);
    free(want);
}
END_TEST

static Suite *server_suite(void)
{
    Suite *s = suite_create("server");
    TCase *plain = tcase_create("plain");
    TCase *tls = tcase_create("tls");
    TCase *defer = tcase_create("defer");

    tcase_add_checked_fixture(plain, plain_setup, plain_teardown);
    tcase_set_timeout(plain, 60);
    tcase_add_test(plain, test_healthz);
    tcase_add_test(plain, test_probes_keep_alive);
    tcase_add_test(plain, test_probe_with_body_over_cap);
    tcase_add_test(plain, test_readyz);
    tcase_add_test(plain, test_not_found);
    tcase_add_test(plain, test_method_not_allowed);
    tcase_add_test(plain, test_unsupported_media_type);
    tcase_add_test(plain, test_valid_review_and_query);
    tcase_add_test(plain, test_bad_json);
    tcase_add_test(plain, test_admission_handler);
    tcase_add_test(plain, test_job_validate_route);
    tcase_add_test(plain, test_body_cap);
    tcase_add_test(plain, test_body_budget);
    tcase_add_test(plain, test_keep_alive);
    tcase_add_test(plain, test_garbage_survives);
    tcase_add_test(plain, test_start_errors);
    tcase_add_test(plain, test_create_then_run);
    tcase_add_test(plain, test_ipv6);
    tcase_add_test(plain, test_dual_stack);
    tcase_add_test(plain, test_metrics);
    tcase_add_test(plain, test_draining);
    tcase_add_test(plain, test_quiesce);
    tcase_add_test(plain, test_request_timeout);
    tcase_add_test(plain, test_evict_oldest);
    tcase_add_test(plain, test_log_take);
    tcase_add_test(plain, test_tls_push_holds_one_record);
    tcase_add_checked_fixture(tls, tls_setup, tls_teardown);
    tcase_set_timeout(tls, 60);
    tcase_add_test(tls, test_tls);
    tcase_add_test(tls, test_tls_rejects);
    tcase_add_test(tls, test_tls_swap);
    tcase_add_checked_fixture(defer, slow_setup, slow_teardown);
    tcase_set_timeout(defer, 60);
    tcase_add_test(defer, test_defer_frees_the_worker);
    tcase_add_test(defer, test_defer_busy);
    tcase_add_test(defer, test_defer_stop);
    tcase_add_test(defer, test_defer_while_stopping);
    suite_add_tcase(s, plain);
    suite_add_tcase(s, tls);
    suite_add_tcase(s, defer);
    return s;
}

int main(void)
{
    int rc;

    *(void **)&sendmsg_next = dlsym(RTLD_NEXT, "sendmsg");
    if (sendmsg_next == NULL)
        return 99;
    json_object_seed(0);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = tu_run(server_suite());
    curl_global_cleanup();
    return rc;
}
