/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_k8s_watch.c - k8s/watch.c: the event decoder as a table, then real
 * watch streams from tests/apiserver.py (a child process on a free loopback
 * port, bookmarks every 0.2 s): events in order, bookmarks, 410 as an ERROR
 * event and as HTTP 410, idle timeout on a stalled stream, the stop flag,
 * dropped connections, the line cap and the callback's own stop.
 *
 * A dropped connection (no final chunk) returns WH_EAPI; a stream the server
 * ends cleanly (timeoutSeconds) returns 0. Either way last_rv says where to resume.
 *
 * Runs from the repository root (TEST_APISERVER overrides tests/apiserver.py).
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "k8s/client.h"
#include "k8s/watch.h"
#include "tests/apitest.h"
#include "tests/testutil.h"

#define CMS "/api/v1/namespaces/ns1/configmaps"

static struct apitest api; /* the test API server of the "server" TCase */

/* ---- decoder ---- */

struct dec_case {
    const char *line;
    int rc;
    enum watch_event_type type;
    const char *object; /* expected object JSON, or the error message */
};

static const struct dec_case dec_cases[] = {
    {"{\"type\":\"ADDED\",\"object\":{\"a\":1}}", 0, WATCH_ADDED, "{\"a\":1}"},
    {"{\"type\":\"MODIFIED\",\"object\":{\"b\":[]}}", 0, WATCH_MODIFIED, "{\"b\":[]}"},
    {"{\"object\":{},\"type\":\"DELETED\"}", 0, WATCH_DELETED, "{}"},
    {"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}", 0,
     WATCH_BOOKMARK, "{\"metadata\":{\"resourceVersion\":\"7\"}}"},
    {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}", 0, WATCH_ERROR,
     "{\"kind\":\"Status\",\"code\":410}"},
    {"  {\"type\":\"ADDED\",\"object\":{}}\r", 0, WATCH_ADDED, "{}"},
    {"{\"type\":\"ADDED\",\"object\":", WH_EINVAL, 0,
     "watch event: invalid JSON: unexpected token near end of file"},
    {"", WH_EINVAL, 0, "watch event: invalid JSON: '[' or '{' expected near end of file"},
    {"{\"type\":\"ADDED\"}", WH_EINVAL, 0, "watch event ADDED: object is not an object"},
    {"{\"type\":\"ADDED\",\"object\":null}", WH_EINVAL, 0,
     "watch event ADDED: object is not an object"},
    {"{\"type\":\"ADDED\",\"object\":[1]}", WH_EINVAL, 0,
     "watch event ADDED: object is not an object"},
    {"{\"type\":\"SYNC\",\"object\":{}}", WH_EINVAL, 0, "watch event: unknown type \"SYNC\""},
    {"{\"type\":\"added\",\"object\":{}}", WH_EINVAL, 0, "watch event: unknown type \"added\""},
    {"{\"type\":7,\"object\":{}}", WH_EINVAL, 0, "watch event: no type"},
    {"{\"object\":{}}", WH_EINVAL, 0, "watch event: no type"},
    {"[\"ADDED\",{}]", WH_EINVAL, 0, "watch event: no type"},
};

START_TEST(test_decode_table)
{
    const struct dec_case *tc = &dec_cases[_i];
    enum watch_event_type type = (enum watch_event_type)99;
    struct wh_error err = {0};
    json_t *obj = NULL;
    int rc = watch_decode_event(tc->line, strlen(tc->line), &type, &obj, &err);

    ck_assert_msg(rc == tc->rc, "case %d: rc %d: %s", _i, rc, err.msg);
    if (rc == 0) {
        ck_assert_int_eq(type, tc->type);
        tu_assert_json_eq(obj, tc->object);
        json_decref(obj);
    } else {
        ck_assert_ptr_null(obj);
        ck_assert_int_eq(err.code, tc->rc);
        ck_assert_str_eq(err.msg, tc->object);
    }
}
END_TEST

START_TEST(test_decode_length_and_null)
{
    const char *two = "{\"type\":\"ADDED\",\"object\":{}}{\"type\":\"DELETED\"";
    enum watch_event_type type;
    json_t *obj = NULL;
    struct wh_error err = {0};

    /* only len bytes are read: the first event of a longer buffer */
    ck_assert_int_eq(watch_decode_event(two, 28, &type, &obj, &err), 0);
    ck_assert_int_eq(type, WATCH_ADDED);
    json_decref(obj);
    ck_assert_int_eq(watch_decode_event(NULL, 0, &type, &obj, NULL), WH_EINVAL);
    ck_assert_ptr_null(obj);
}
END_TEST

/*
 * A \u0000 in a string is valid JSON and valid in Kubernetes strings (an annotation
 * value, an env value of a task template): the event is decoded, the NUL kept. It
 * was refused, so one such Job ended every watch at the same event, forever.
 */
START_TEST(test_decode_nul_in_string)
{
    static const char line[] = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"j\","
                               "\"annotations\":{\"a\":\"x\\u0000y\"}}}}";
    enum watch_event_type type;
    json_t *obj = NULL;
    struct wh_error err = {0};
    const json_t *v;

    ck_assert_msg(watch_decode_event(line, sizeof(line) - 1, &type, &obj, &err) == 0, "%s",
                  err.msg);
    ck_assert_int_eq(type, WATCH_MODIFIED);
    v = json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), "a");
    ck_assert_uint_eq(json_string_length(v), 3);
    ck_assert_int_eq(memcmp(json_string_value(v), "x\0y", 3), 0);
    json_decref(obj);
}
END_TEST

/* ---- against the test API server ---- */

/* apiserver.py with token tok1 and a bookmark every 0.2 s. */
static void server_start(void)
{
    static const char *const extra[] = {"--bookmark-interval", "0.2", NULL};
    const struct apitest_opts o = {.token = "tok1", .extra = extra, .timeout_ms = 30000};

    apitest_start_opts(&api, &o);
}

static void server_stop(void)
{
    apitest_stop(&api);
}

/* A ConfigMap body for k8s_create (new ref). */
static json_t *cm(const char *name, const char *value)
{
    json_t *o = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                          "metadata", "name", name, "data", "v", value);

    ck_assert_ptr_nonnull(o);
    return o;
}

static const char *meta_rv(const json_t *o)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), "resourceVersion"));
}

/* Events seen by the callback. */
struct seen {
    int n;
    enum watch_event_type type[64];
    char name[64][32];
    char rv[64][16];
    int bookmarks;
    json_t *last_bookmark; /* new ref */
    int stop_after;        /* return -42 at this event (1-based), 0 = never */
};

/* Forget what was seen (drops the kept bookmark). */
static void seen_reset(struct seen *s)
{
    json_decref(s->last_bookmark);
    memset(s, 0, sizeof(*s));
}

static int on_event(void *ud, enum watch_event_type type, json_t *obj)
{
    struct seen *s = ud;
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));

    if (type == WATCH_BOOKMARK) {
        s->bookmarks++;
        json_decref(s->last_bookmark);
        s->last_bookmark = json_incref(obj);
        return 0;
    }
    if (s->n < 64) {
        s->type[s->n] = type;
        snprintf(s->name[s->n], sizeof(s->name[0]), "%s", name ? name : "");
        snprintf(s->rv[s->n], sizeof(s->rv[0]), "%s", meta_rv(obj) ? meta_rv(obj) : "");
    }
    s->n++;
    if (s->stop_after > 0 && s->n == s->stop_after)
        return -42;
    return 0;
}

START_TEST(test_events_in_order)
{
    struct k8s_client *c = apitest_client(&api);
    struct wh_error err = {0};
    struct seen s = {0};
    struct watch_params p = {.path = CMS, .timeout_seconds = 1, .idle_timeout_ms = 5000};
    json_t *items = NULL;
    json_t *a = cm("a", "1");
    json_t *made = NULL;
    json_t *upd;
    char *list_rv = NULL;
    char *last = NULL;
    long base;
    char want[32];

    apitest_reset(&api);
    /* a write first, so that the list's RV is not "0" (which means "from now") */
    ck_assert_int_eq(k8s_create(c, "/api/v1/namespaces/ns1/secrets", a, 5000, NULL, &err), 0);
    ck_assert_int_eq(k8s_list(c, CMS, 0, 5000, &items, &list_rv, &err), 0);
    json_decref(items);
    base = strtol(list_rv, NULL, 10);
    ck_assert_int_gt(base, 0);
    ck_assert_int_eq(k8s_create(c, CMS, a, 5000, &made, &err), 0);
    upd = json_deep_copy(made);
    json_object_set_new(json_object_get(upd, "data"), "v", json_string("2"));
    json_decref(made);
    ck_assert_int_eq(k8s_update(c, CMS "/a", upd, 5000, NULL, &err), 0);
    ck_assert_int_eq(k8s_delete(c, CMS "/a", 5000, &err), 0);
    /* another namespace and another resource: not in this stream */
    ck_assert_int_eq(k8s_create(c, "/api/v1/namespaces/ns2/configmaps", a, 5000, NULL, &err), 0);
    ck_assert_int_eq(k8s_create(c, "/api/v1/namespaces/ns2/secrets", a, 5000, NULL, &err), 0);

    p.resource_version = list_rv;
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, &last, &err), 0); /* timeoutSeconds: clean */
    ck_assert_int_eq(s.n, 3);
    ck_assert_int_eq(s.type[0], WATCH_ADDED);
    ck_assert_int_eq(s.type[1], WATCH_MODIFIED);
    ck_assert_int_eq(s.type[2], WATCH_DELETED);
    ck_assert_str_eq(s.name[0], "a");
    ck_assert_str_eq(s.name[2], "a");
    snprintf(want, sizeof(want), "%ld", base + 1);
    ck_assert_str_eq(s.rv[0], want);
    snprintf(want, sizeof(want), "%ld", base + 3);
    ck_assert_str_eq(s.rv[2], want);
    /* bookmarks came (1 s stream, one every 0.2 s) and carry the newest RV, base + 5 */
    ck_assert_int_ge(s.bookmarks, 1);
    ck_assert_ptr_nonnull(last);
    snprintf(want, sizeof(want), "%ld", base + 5);
    ck_assert_str_eq(last, want);
    free(last);
    last = NULL;

    /* all namespaces, from "0": synthetic ADDED for what exists now (ns2/a) */
    seen_reset(&s);
    p.path = "/api/v1/configmaps";
    p.resource_version = "0";
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, &last, &err), 0);
    ck_assert_int_eq(s.n, 1);
    ck_assert_int_eq(s.type[0], WATCH_ADDED);
    snprintf(want, sizeof(want), "%ld", base + 4);
    ck_assert_str_eq(s.rv[0], want);
    seen_reset(&s);
    free(last);
    free(list_rv);
    json_decref(upd);
    json_decref(a);
    k8s_client_destroy(c);
}
END_TEST

START_TEST(test_bookmarks_update_rv)
{
    struct k8s_client *c = apitest_client(&api);
    struct wh_error err = {0};
    struct seen s = {0};
    struct watch_params p = {.path = CMS, .timeout_seconds = 1, .idle_timeout_ms = 5000};
    json_t *items = NULL;
    json_t *x = cm("x", "1");
    char *list_rv = NULL;
    char *last = NULL;
    char want[128];
    json_t *log = NULL;
    json_t *req;

    apitest_reset(&api);
    ck_assert_int_eq(k8s_create(c, "/api/v1/namespaces/ns2/secrets", x, 5000, NULL, &err), 0);
    ck_assert_int_eq(k8s_list(c, CMS, 0, 5000, &items, &list_rv, &err), 0);
    json_decref(items);
    /* writes elsewhere move the RV that bookmarks carry */
    ck_assert_int_eq(k8s_create(c, "/api/v1/namespaces/ns1/secrets", x, 5000, NULL, &err), 0);
    ck_assert_int_eq(k8s_create(c, "/api/v1/namespaces/ns9/configmaps", x, 5000, NULL, &err), 0);
    p.resource_version = list_rv;
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, &last, &err), 0);
    ck_assert_int_eq(s.n, 0);
    ck_assert_int_ge(s.bookmarks, 2);
    snprintf(want, sizeof(want),
             "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":"
             "{\"resourceVersion\":\"%ld\"}}",
             strtol(list_rv, NULL, 10) + 2);
    tu_assert_json_eq(s.last_bookmark, want);
    snprintf(want, sizeof(want), "%ld", strtol(list_rv, NULL, 10) + 2);
    ck_assert_str_eq(last, want);

    /* what the client asked for */
    log = apitest_requests(&api);
    req = json_array_get(log, 4);
    ck_assert_str_eq(json_string_value(json_object_get(req, "path")), CMS);
    snprintf(want, sizeof(want),
             "watch=1&allowWatchBookmarks=true&resourceVersion=%s"
             "&timeoutSeconds=1",
             list_rv);
    ck_assert_str_eq(json_string_value(json_object_get(req, "query")), want);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(req, "headers"), "Authorization")),
        "Bearer tok1");
    json_decref(log);
    seen_reset(&s);
    free(last);
    free(list_rv);
    json_decref(x);
    k8s_client_destroy(c);
}
END_TEST

START_TEST(test_gone)
{
    struct k8s_client *c = apitest_client(&api);
    struct wh_error err = {0};
    struct seen s = {0};
    struct watch_params p = {.path = CMS, .resource_version = "1", .idle_timeout_ms = 5000};
    json_t *x = cm("x", "1");
    json_t *made = NULL;
    json_t *resp = NULL;
    char *last = NULL;
    char want[256];
    long compacted;

    apitest_reset(&api);
    ck_assert_int_eq(k8s_create(c, CMS, x, 5000, &made, &err), 0);
    ck_assert_int_eq(apitest_call(&api, "POST", "/_test/compact", "{}", false, &resp), 200);
    compacted = (long)json_integer_value(json_object_get(resp, "compacted"));
    ck_assert_int_eq(compacted, strtol(meta_rv(made), NULL, 10));
    json_decref(resp);

    /* HTTP 200, then an ERROR event with a 410 Status */
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, &last, &err), WH_EGONE);
    snprintf(want, sizeof(want),
             "watch " CMS ": ERROR event: Expired: too old resource version: 1 (%ld)",
             compacted - 1);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(s.n, 0);
    ck_assert_ptr_null(last);

    /* HTTP 410 directly */
    apitest_fault(&api, "{\"path_regex\":\"watch=1\",\"watch_gone_http\":true}");
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, &last, &err), WH_EGONE);
    snprintf(want, sizeof(want), "watch " CMS ": Expired: too old resource version: 1 (%ld)",
             compacted - 1);
    ck_assert_str_eq(err.msg, want);

    /* an RV at the compaction point still works */
    snprintf(want, sizeof(want), "%ld", compacted - 1);
    p.resource_version = want;
    p.timeout_seconds = 1;
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, &last, &err), 0);
    ck_assert_int_eq(s.n, 1);
    free(last);

    /* another error status: WH_EAPI with the Status */
    apitest_fault(&api,
                  "{\"path_regex\":\"watch=1\",\"status\":500,\"reason\":\"InternalError\","
                  "\"message\":\"boom\"}");
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, NULL, &err), WH_EAPI);
    ck_assert_str_eq(err.msg, "watch " CMS ": InternalError: boom");
    seen_reset(&s);
    json_decref(made);
    json_decref(x);
    k8s_client_destroy(c);
}
END_TEST

START_TEST(test_idle_timeout)
{
    struct k8s_client *c = apitest_client(&api);
    struct wh_error err = {0};
    struct seen s = {0};
    struct watch_params p = {.path = CMS, .resource_version = "0", .idle_timeout_ms = 500};
    char *last = NULL;

    apitest_reset(&api);
    /* the server keeps the connection open and sends nothing, bookmarks included */
    apitest_fault(&api, "{\"path_regex\":\"watch=1\",\"watch_stall_ms\":-1}");
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, &last, &err), WH_ETIMEOUT);
    ck_assert_str_eq(err.msg, "watch " CMS ": no data for 500 ms");
    ck_assert_int_eq(s.n, 0);
    ck_assert_ptr_null(last);
    /* bookmarks every 0.2 s keep an idle stream alive: clean end at timeoutSeconds */
    p.timeout_seconds = 1;
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, &last, &err), 0);
    ck_assert_int_ge(s.bookmarks, 2);
    seen_reset(&s);
    free(last);
    k8s_client_destroy(c);
}
END_TEST

struct stopper {
    atomic_bool *flag;
    long ms;
};

static void *set_stop(void *p)
{
    struct stopper *st = p;
    struct timespec ts = {st->ms / 1000, (st->ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
    atomic_store(st->flag, true);
    return NULL;
}

START_TEST(test_stop_flag)
{
    struct k8s_client *c = apitest_client(&api);
    struct wh_error err = {0};
    struct seen s = {0};
    atomic_bool stop = false;
    struct watch_params p = {.path = CMS, .resource_version = "0", .stop = &stop};
    struct stopper st = {&stop, 300};
    pthread_t th;

    apitest_reset(&api);
    /* a stall with no idle timeout and no server timeout: only stop ends it */
    apitest_fault(&api, "{\"path_regex\":\"watch=1\",\"watch_stall_ms\":-1}");
    ck_assert_int_eq(pthread_create(&th, NULL, set_stop, &st), 0);
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, NULL, &err), 0);
    pthread_join(th, NULL);
    ck_assert_int_eq(s.n, 0);
    /* already set: no request at all */
    apitest_clear_requests(&api);
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, NULL, &err), 0);
    ck_assert_uint_eq(apitest_total(&api), 0);
    seen_reset(&s);
    k8s_client_destroy(c);
}
END_TEST

START_TEST(test_dropped_connection)
{
    struct k8s_client *c = apitest_client(&api);
    struct wh_error err = {0};
    struct seen s = {0};
    struct watch_params p = {.path = CMS, .resource_version = "0", .idle_timeout_ms = 5000};
    json_t *made[3] = {NULL, NULL, NULL};
    char *last = NULL;
    int i;

    apitest_reset(&api);
    for (i = 0; i < 3; i++) {
        char name[8];
        json_t *o;

        snprintf(name, sizeof(name), "c%d", i);
        o = cm(name, "x");
        ck_assert_int_eq(k8s_create(c, CMS, o, 5000, &made[i], &err), 0);
        json_decref(o);
    }
    /* after two events the connection dies without the final chunk: WH_EAPI */
    apitest_fault(&api, "{\"path_regex\":\"watch=1\",\"watch_drop_after_events\":2}");
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, &last, &err), WH_EAPI);
    ck_assert_msg(strncmp(err.msg, "watch " CMS ": ", strlen(CMS) + 8) == 0, "%s", err.msg);
    ck_assert_int_eq(s.n, 2);
    ck_assert_str_eq(last, meta_rv(made[1]));
    free(last);
    last = NULL;

    /* dropped after a time: the same */
    seen_reset(&s);
    apitest_fault(&api, "{\"path_regex\":\"watch=1\",\"watch_drop_after_ms\":300}");
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, &last, &err), WH_EAPI);
    ck_assert_int_eq(s.n, 3);
    ck_assert_str_eq(last, meta_rv(made[2]));
    free(last);
    last = NULL;

    /* a connection refused outright (closed on arrival) */
    apitest_fault(&api, "{\"path_regex\":\"watch=1\",\"close\":true,\"count\":-1,\"for_ms\":500}");
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, &last, &err), WH_EAPI);
    ck_assert_ptr_null(last);

    /* the callback's own stop value comes back as is */
    seen_reset(&s);
    s.stop_after = 2;
    apitest_ctl_expect(&api, "DELETE", "/_test/faults", NULL, 200);
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, &last, &err), -42);
    ck_assert_int_eq(s.n, 2);
    /* the refused event is not counted as seen */
    ck_assert_str_eq(last, meta_rv(made[0]));
    free(last);
    seen_reset(&s);
    for (i = 0; i < 3; i++)
        json_decref(made[i]);
    k8s_client_destroy(c);
}
END_TEST

START_TEST(test_line_cap)
{
    size_t n = 17u * 1024 * 1024;
    char *body = malloc(n + 200);
    struct k8s_client *c = apitest_client(&api);
    struct wh_error err = {0};
    struct seen s = {0};
    struct watch_params p = {.path = CMS, .resource_version = "0", .idle_timeout_ms = 20000};
    int off;

    apitest_reset(&api);
    ck_assert_ptr_nonnull(body);
    off = snprintf(body, 200,
                   "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                   "{\"name\":\"big\",\"namespace\":\"ns1\"},\"data\":{\"x\":\"");
    memset(body + off, 'a', n);
    snprintf(body + off + n, 200, "\"}}");
    apitest_ctl_expect(&api, "POST", "/_test/objects", body, 201);
    free(body);
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, NULL, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "watch " CMS ": event line longer than 16777216 bytes");
    seen_reset(&s);
    ck_assert_int_eq(s.n, 0);
    k8s_client_destroy(c);
}
END_TEST

/*
 * A big event (3 MiB, so its line spans many reads and the line buffer grows past
 * the 1 MiB it keeps), then small ones, then another big one: the buffer is given
 * back after the big line and grown again for the next (run under ASan: a stale
 * pointer or a short buffer would be reported). Every event arrives whole and in
 * order. The memory itself is not observable here; see watch.c WATCH_BUF_KEEP.
 */
START_TEST(test_big_event_then_small_ones)
{
    struct k8s_client *c = apitest_client(&api);
    struct wh_error err = {0};
    struct seen s = {0};
    struct watch_params p = {
        .path = CMS, .resource_version = "0", .timeout_seconds = 1, .idle_timeout_ms = 20000};
    char want[16];

    apitest_reset(&api);
    /* names sort in stream order: the synthetic ADDED come by namespace and name */
    apitest_store_cm_of_size(&api, "a-big", 3u * 1024 * 1024);
    for (int i = 0; i < 50; i++) {
        char name[16];

        snprintf(name, sizeof(name), "b%02d", i);
        apitest_store_cm_of_size(&api, name, 100);
    }
    apitest_store_cm_of_size(&api, "c-big", 2u * 1024 * 1024);
    apitest_store_cm_of_size(&api, "d-small", 10);
    ck_assert_int_eq(k8s_watch(c, &p, on_event, &s, NULL, &err), 0);
    ck_assert_int_eq(s.n, 53);
    ck_assert_str_eq(s.name[0], "a-big");
    for (int i = 0; i < 50; i++) {
        snprintf(want, sizeof(want), "b%02d", i);
        ck_assert_str_eq(s.name[1 + i], want);
    }
    ck_assert_str_eq(s.name[51], "c-big");
    ck_assert_str_eq(s.name[52], "d-small");
    for (int i = 0; i < 53; i++)
        ck_assert_int_eq(s.type[i], WATCH_ADDED);
    seen_reset(&s);
    k8s_client_destroy(c);
}
END_TEST

static Suite *k8s_watch_suite(void)
{
    Suite *s = suite_create("k8s_watch");
    TCase *dec = tcase_create("decode");
    TCase *srv = tcase_create("server");

    tcase_add_loop_test(dec, test_decode_table, 0, (int)(sizeof(dec_cases) / sizeof(dec_cases[0])));
    tcase_add_test(dec, test_decode_length_and_null);
    tcase_add_test(dec, test_decode_nul_in_string);
    suite_add_tcase(s, dec);

    tcase_add_unchecked_fixture(srv, server_start, server_stop);
    tcase_set_timeout(srv, 60); /* test_line_cap sends 17 MiB through tests/apiserver.py */
    tcase_add_test(srv, test_events_in_order);
    tcase_add_test(srv, test_bookmarks_update_rv);
    tcase_add_test(srv, test_gone);
    tcase_add_test(srv, test_idle_timeout);
    tcase_add_test(srv, test_stop_flag);
    tcase_add_test(srv, test_dropped_connection);
    tcase_add_test(srv, test_line_cap);
    tcase_add_test(srv, test_big_event_then_small_ones);
    suite_add_tcase(s, srv);
    return s;
}

int main(void)
{
    int rc;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = tu_run(k8s_watch_suite());
    curl_global_cleanup();
    return rc;
}
