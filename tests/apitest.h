/*
 * apitest.h - tests/apiserver.py as a child process of a Check suite, over
 * plain HTTP on a loopback port the OS picks, with a bearer token; helpers for
 * its /_test/ controls, authenticated REST calls and the request log.
 * Header-only (static inline), like testutil.h.
 *
 * Runs from the repository root (TEST_APISERVER overrides tests/apiserver.py).
 * Call apitest_start from a checked fixture or a test, apitest_stop after.
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

struct apitest {
    pid_t pid;
    int port;
    char dir[64];         /* temp dir holding the port file */
};

/* Start apiserver.py; extra (NULL-terminated, may be NULL) are more flags. */
static inline void apitest_start(struct apitest *t, const char *const *extra)
{
    const char *script = getenv("TEST_APISERVER");
    const char *argv[32];
    char port_file[128];
    struct timespec ts = {0, 20 * 1000 * 1000};
    size_t n = 0;
    FILE *f;

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
    argv[n++] = "--token";
    argv[n++] = APITEST_TOKEN;
    for (size_t i = 0; extra != NULL && extra[i] != NULL && n + 1 < 32; i++)
        argv[n++] = extra[i];
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
 * One request to the test server (with the token when auth). body: JSON text or
 * NULL. @return the HTTP status; *resp (may be NULL) the decoded body, new ref.
 */
static inline long apitest_call(const struct apitest *t, const char *method, const char *path,
                                const char *body, bool auth, json_t **resp)
{
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    struct apitest_buf buf = {NULL, 0};
    char url[1024];
    long code = 0;

    ck_assert_ptr_nonnull(h);
    if (auth)
        hdrs = curl_slist_append(hdrs, "Authorization: Bearer " APITEST_TOKEN);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", t->port, path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
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

/* A k8s client for the server (plain HTTP, the token). */
static inline struct k8s_client *apitest_client(const struct apitest *t)
{
    struct k8s_config cfg;
    struct wh_error err = {0, ""};
    struct k8s_client *c;
    char server[64];

    memset(&cfg, 0, sizeof(cfg));
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", t->port);
    cfg.server = server;
    cfg.token = (char *)APITEST_TOKEN;
    c = k8s_client_create(&cfg, &err);
    ck_assert_msg(c != NULL, "k8s_client_create: %s", err.msg);
    return c;
}

/* Number of logged REST requests with this method whose path is path. */
static inline int apitest_count(const struct apitest *t, const char *method, const char *path)
{
    json_t *resp = NULL;
    json_t *reqs;
    json_t *r;
    size_t i;
    int n = 0;

    ck_assert_int_eq(apitest_call(t, "GET", "/_test/requests", NULL, false, &resp), 200);
    reqs = json_object_get(resp, "requests");
    json_array_foreach(reqs, i, r) {
        if (strcmp(json_string_value(json_object_get(r, "method")), method) == 0
            && strcmp(json_string_value(json_object_get(r, "path")), path) == 0)
            n++;
    }
    json_decref(resp);
    return n;
}

/* Number of logged REST requests in all. */
static inline size_t apitest_total(const struct apitest *t)
{
    json_t *resp = NULL;
    size_t n;

    ck_assert_int_eq(apitest_call(t, "GET", "/_test/requests", NULL, false, &resp), 200);
    n = json_array_size(json_object_get(resp, "requests"));
    json_decref(resp);
    return n;
}

/* Sleep ms milliseconds (polling loops). */
static inline void apitest_nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

#endif
