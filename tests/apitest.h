/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apitest.h - tests/apiserver.py as a child process of a Check suite, on a
 * loopback port the OS picks: start and stop it, its /_test/ controls (faults,
 * request log, objects, GC switch), authenticated REST calls and a k8s client
 * for it. Plain HTTP by default; HTTPS and the bearer token are options.
 * Header-only (static inline), like testutil.h; the one harness every suite
 * that talks to apiserver.py uses.
 *
 * Runs from the repository root (TEST_APISERVER overrides tests/apiserver.py).
 * Call apitest_start/apitest_start_opts from a fixture or a test, apitest_stop
 * after; the struct may then be read (not changed) from any thread, and every
 * helper makes its own curl handle, so threads may call them at once.
 */
#ifndef WH_APITEST_H
#define WH_APITEST_H

#include <curl/curl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "k8s/client.h"
#include "tests/testutil.h"

#define APITEST_TOKEN "tok-apitest"

/* How to run the server; every string is borrowed and must outlive the server. */
struct apitest_opts {
    const char *token;    /* --token: the bearer token it requires; NULL: none, all pass */
    const char *tls_cert; /* with tls_key, --tls-cert/--tls-key: HTTPS; NULL: plain HTTP */
    const char *tls_key;
    const char *ca_file;      /* CA that signed tls_cert, for apitest_call and apitest_client */
    const char *const *extra; /* more flags, NULL-terminated; may be NULL */
    long timeout_ms;          /* per apitest_call; 0: 10000 */
};

struct apitest {
    pid_t pid;
    int port;
    char dir[64];             /* temp dir holding the port file */
    struct apitest_opts opts; /* as started */
};

/* Start apiserver.py as o says (copied into t; its strings stay borrowed). */
static inline void apitest_start_opts(struct apitest *t, const struct apitest_opts *o)
{
    const char *script = getenv("TEST_APISERVER");
    const char *argv[32];
    char port_file[128];
    struct timespec ts = {0, 20 * 1000 * 1000};
    size_t n = 0;
    FILE *f;

    t->opts = *o;
    snprintf(t->dir, sizeof(t->dir), "/tmp/apitest.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(t->dir));
    snprintf(port_file, sizeof(port_file), "%s/port", t->dir);
    argv[n++] = "python3";
    argv[n++] = script != NULL ? script : "tests/apiserver.py";
    argv[n++] = "--port";
    argv[n++] = "0";
    argv[n++] = "--port-file";
    argv[n++] = port_file;
    argv[n++] = "--bind";
    argv[n++] = "127.0.0.1";
    if (o->token != NULL) {
        argv[n++] = "--token";
        argv[n++] = o->token;
    }
    if (o->tls_cert != NULL && o->tls_key != NULL) {
        argv[n++] = "--tls-cert";
        argv[n++] = o->tls_cert;
        argv[n++] = "--tls-key";
        argv[n++] = o->tls_key;
    }
    for (size_t i = 0; o->extra != NULL && o->extra[i] != NULL && n + 1 < 32; i++)
        argv[n++] = o->extra[i];
    argv[n] = NULL;
    t->pid = fork();
    ck_assert_int_ge(t->pid, 0);
    if (t->pid == 0) {
        execv("/usr/bin/python3", (char *const *)argv);
        _exit(127);
    }
    /* Wait for the port file (written by rename: all or nothing). */
    for (int i = 0; i < 1000 && access(port_file, R_OK) != 0; i++) {
        int st;

        ck_assert_msg(waitpid(t->pid, &st, WNOHANG) == 0, "apiserver.py exited");
        nanosleep(&ts, NULL);
    }
    f = fopen(port_file, "r");
    ck_assert_msg(f != NULL, "apiserver.py did not start");
    ck_assert_int_eq(fscanf(f, "%d", &t->port), 1);
    fclose(f);
    unlink(port_file);
    ck_assert_int_gt(t->port, 0);
}

/* Start apiserver.py over HTTP with APITEST_TOKEN; extra: more flags (NULL-terminated, or NULL). */
static inline void apitest_start(struct apitest *t, const char *const *extra)
{
    const struct apitest_opts o = {.token = APITEST_TOKEN, .extra = extra};

    apitest_start_opts(t, &o);
}

static inline void apitest_stop(struct apitest *t)
{
    int st;

    if (t->pid > 0) {
        kill(t->pid, SIGTERM);
        waitpid(t->pid, &st, 0);
        t->pid = -1;
    }
    if (t->dir[0] != '\0') {
        rmdir(t->dir);
        t->dir[0] = '\0';
    }
}

/* The server's base URL, "http(s)://127.0.0.1:PORT", into buf. @return buf. */
static inline const char *apitest_url(const struct apitest *t, char *buf, size_t len)
{
    snprintf(buf, len, "%s://127.0.0.1:%d", t->opts.tls_cert != NULL ? "https" : "http", t->port);
    return buf;
}

struct apitest_buf {
    char *data;
    size_t len;
};

static inline size_t apitest_body(char *p, size_t size, size_t nmemb, void *ud)
{
    struct apitest_buf *b = ud;
    char *nb = realloc(b->data, b->len + size * nmemb + 1);

    if (nb == NULL)
        return 0;
    memcpy(nb + b->len, p, size * nmemb);
    b->len += size * nmemb;
    nb[b->len] = '\0';
    b->data = nb;
    return size * nmemb;
}

/*
 * One request to the test server (with the bearer token when auth and the server
 * has one). body: JSON text or NULL. @return the HTTP status; *resp (may be NULL)
 * the decoded body, new ref (NULL when empty or not JSON).
 */
static inline long apitest_call(const struct apitest *t, const char *method, const char *path,
                                const char *body, bool auth, json_t **resp)
{
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    struct apitest_buf buf = {NULL, 0};
    char url[1024];
    char base[64];
    long code = 0;

    ck_assert_ptr_nonnull(h);
    if (auth && t->opts.token != NULL) {
        char authz[256];

        snprintf(authz, sizeof(authz), "Authorization: Bearer %s", t->opts.token);
        hdrs = curl_slist_append(hdrs, authz);
    }
    snprintf(url, sizeof(url), "%s%s", apitest_url(t, base, sizeof(base)), path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    if (t->opts.ca_file != NULL)
        curl_easy_setopt(h, CURLOPT_CAINFO, t->opts.ca_file);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, t->opts.timeout_ms > 0 ? t->opts.timeout_ms : 10000L);
    if (body != NULL)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, apitest_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &buf);
    ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (resp != NULL)
        *resp = buf.data != NULL ? json_loadb(buf.data, buf.len, 0, NULL) : NULL;
    free(buf.data);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    return code;
}

/* A /_test/ control request that must answer 200 or 201. */
static inline void apitest_ctl(const struct apitest *t, const char *method, const char *path,
                               const char *body)
{
    long code = apitest_call(t, method, path, body, false, NULL);

    ck_assert_msg(code == 200 || code == 201, "%s %s: HTTP %ld", method, path, code);
}

/* A /_test/ control request that must answer exactly want. */
static inline void apitest_ctl_expect(const struct apitest *t, const char *method, const char *path,
                                      const char *body, long want)
{
    long code = apitest_call(t, method, path, body, false, NULL);

    ck_assert_msg(code == want, "%s %s: HTTP %ld, want %ld", method, path, code, want);
}

/* Store ConfigMap ns1/NAME whose data.x holds n bytes ('a'), straight into the server. */
static inline void apitest_store_cm_of_size(const struct apitest *t, const char *name, size_t n)
{
    char *body = malloc(n + 200);
    int off;

    ck_assert_ptr_nonnull(body);
    off = snprintf(body, 200,
                   "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                   "{\"name\":\"%s\",\"namespace\":\"ns1\"},\"data\":{\"x\":\"",
                   name);
    memset(body + off, 'a', n);
    snprintf(body + off + n, 200, "\"}}");
    apitest_ctl_expect(t, "POST", "/_test/objects", body, 201);
    free(body);
}

/* Add fault rules (a JSON object or array of them, see apiserver.py): must answer 201. */
static inline void apitest_fault(const struct apitest *t, const char *rules)
{
    apitest_ctl_expect(t, "POST", "/_test/faults", rules, 201);
}

/* Empty the request log: must answer 200. */
static inline void apitest_clear_requests(const struct apitest *t)
{
    apitest_ctl_expect(t, "DELETE", "/_test/requests", NULL, 200);
}

/* No faults, no objects, an empty request log (each must answer 200). */
static inline void apitest_reset(const struct apitest *t)
{
    apitest_ctl_expect(t, "DELETE", "/_test/faults", NULL, 200);
    apitest_ctl_expect(t, "DELETE", "/_test/objects", NULL, 200);
    apitest_clear_requests(t);
}

/* Switch the server's ownerReference garbage collector on or off: must answer 200. */
static inline void apitest_gc(const struct apitest *t, bool enabled)
{
    const char *body = enabled ? "{\"enabled\":true}" : "{\"enabled\":false}";

    apitest_ctl_expect(t, "POST", "/_test/gc", body, 200);
}

/*
 * Store objects directly (POST /_test/objects with one object or a List): must
 * answer 201. @return new reference: the first stored object, as stored.
 */
static inline json_t *apitest_load(const struct apitest *t, const char *objects)
{
    json_t *resp = NULL;
    json_t *first;

    ck_assert_int_eq(apitest_call(t, "POST", "/_test/objects", objects, false, &resp), 201);
    first = json_incref(json_array_get(json_object_get(resp, "items"), 0));
    json_decref(resp);
    ck_assert(json_is_object(first));
    return first;
}

/* A k8s client for the server: its URL, its token (if any) and its CA file (if any). */
static inline struct k8s_client *apitest_client(const struct apitest *t)
{
    struct k8s_config cfg;
    struct wh_error err = {0, ""};
    struct k8s_client *c;
    char server[64];

    memset(&cfg, 0, sizeof(cfg));
    cfg.server = (char *)apitest_url(t, server, sizeof(server));
    cfg.token = (char *)t->opts.token;
    cfg.ca_file = (char *)t->opts.ca_file;
    c = k8s_client_create(&cfg, &err);
    ck_assert_msg(c != NULL, "k8s_client_create: %s", err.msg);
    return c;
}

/*
 * The request log (GET /_test/requests, must answer 200): new reference to its
 * array of {method, path, query, headers, time, ...}, oldest first (NULL if the
 * answer had none).
 */
static inline json_t *apitest_requests(const struct apitest *t)
{
    json_t *resp = NULL;
    json_t *reqs;

    ck_assert_int_eq(apitest_call(t, "GET", "/_test/requests", NULL, false, &resp), 200);
    reqs = json_incref(json_object_get(resp, "requests"));
    json_decref(resp);
    return reqs;
}

/* Number of logged REST requests with this method whose path is path. */
static inline int apitest_count(const struct apitest *t, const char *method, const char *path)
{
    json_t *reqs = apitest_requests(t);
    json_t *r;
    size_t i;
    int n = 0;

    json_array_foreach(reqs, i, r) {
        if (strcmp(json_string_value(json_object_get(r, "method")), method) == 0
            && strcmp(json_string_value(json_object_get(r, "path")), path) == 0)
            n++;
    }
    json_decref(reqs);
    return n;
}

/* Number of logged REST requests in all. */
static inline size_t apitest_total(const struct apitest *t)
{
    json_t *reqs = apitest_requests(t);
    size_t n = json_array_size(reqs);

    json_decref(reqs);
    return n;
}

/* Sleep ms milliseconds (polling loops). */
static inline void apitest_nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

#endif
