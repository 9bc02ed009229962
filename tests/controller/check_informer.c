/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_informer.c - controller/informer.c against tests/apiserver.py (a child
 * process): the first LIST (paged) fills the cache and calls on_add; creates,
 * updates and deletes made through the API reach the cache and the handlers in
 * order; a 410 (an ERROR event, or HTTP 410) makes it LIST again and report
 * what changed meanwhile; a dropped watch resumes from the last resourceVersion
 * without losing or repeating an event; informer_stop is prompt while backing
 * off, watching, or on a stalled stream. Robustness: a LIST page over the
 * client's body cap halves the page size (exact limit= values from the request
 * log); a server answering every WATCH with 410 gets LISTs spaced by the
 * growing backoff (gaps from the server's own clock, lower bounds only), while
 * a 410 after a watch that delivered relists at once; objects of another kind
 * in the LIST or the WATCH are skipped. Namespaced informers (serve --namespaces)
 * on one cache ask only their own namespaces' collections.
 *
 * Waits poll with a generous deadline; nothing asserts how long anything took.
 * The stop tests rely on the TCase timeout: their backoff and watch timeouts
 * are many times longer, so a stop that is not prompt fails them.
 */
#include <pthread.h>

#include "controller/cache.h"
#include "controller/informer.h"
#include "tests/apitest.h"

#define JOBS     "/apis/batch.volcano.sh/v1alpha1/jobs"
#define NS1_JOBS "/apis/batch.volcano.sh/v1alpha1/namespaces/ns1/jobs"
#define NS2_JOBS "/apis/batch.volcano.sh/v1alpha1/namespaces/ns2/jobs"
#define WAIT_MS  20000L

static struct apitest api;
static struct k8s_client *kc;
static struct cache *cache;
static struct informer *inf;
static struct informer *inf2; /* the second namespace's, in test_namespaced_informers */

/* ---- handler log: "add ns/name rv", "update ns/name oldrv>newrv", "delete ns/name" ---- */

static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static json_t *ev_log; /* array of strings; under ev_mu */

static const char *meta(const json_t *j, const char *k)
{
    const char *v = json_string_value(json_object_get(json_object_get(j, "metadata"), k));

    return v != NULL ? v : "?";
}

static void ev_add(const char *text)
{
    pthread_mutex_lock(&ev_mu);
    json_array_append_new(ev_log, json_string(text));
    pthread_mutex_unlock(&ev_mu);
}

static void on_add(void *ud, const json_t *job)
{
    char buf[256];

    if (ud != &ev_mu)
        ev_add("bad userdata"); /* no ck_assert off the test's own thread */
    snprintf(buf, sizeof(buf), "add %s/%s %s", meta(job, "namespace"), meta(job, "name"),
             meta(job, "resourceVersion"));
    ev_add(buf);
}

static void on_update(void *ud, const json_t *old, const json_t *job)
{
    char buf[256];

    (void)ud;
    snprintf(buf, sizeof(buf), "update %s/%s %s>%s", meta(job, "namespace"), meta(job, "name"),
             meta(old, "resourceVersion"), meta(job, "resourceVersion"));
    ev_add(buf);
}

/* Logs the Job's spec too: on_delete must get only the kept fields (no minAvailable). */
static void on_delete(void *ud, const json_t *job)
{
    char buf[512];
    char *spec = json_dumps(json_object_get(job, "spec"), JSON_COMPACT | JSON_ENCODE_ANY);

    (void)ud;
    snprintf(buf, sizeof(buf), "delete %s/%s %s", meta(job, "namespace"), meta(job, "name"),
             spec != NULL ? spec : "-");
    free(spec);
    ev_add(buf);
}

static size_t ev_count(void)
{
    size_t n;

    pthread_mutex_lock(&ev_mu);
    n = json_array_size(ev_log);
    pthread_mutex_unlock(&ev_mu);
    return n;
}

/* Wait until at least n events were handled (or the deadline passes). */
static void wait_events(size_t n)
{
    for (long t = 0; t < WAIT_MS && ev_count() < n; t += 20)
        apitest_nap(20);
}

/* Give any stray extra event a chance to show up before an exact comparison. */
static void settle(void)
{
    apitest_nap(300);
}

#define assert_events(want_text)                                                                   \
    do {                                                                                           \
        pthread_mutex_lock(&ev_mu);                                                                \
        tu_assert_json_eq(ev_log, want_text);                                                      \
        pthread_mutex_unlock(&ev_mu);                                                              \
    } while (0)

static struct informer_stats stats(void)
{
    struct informer_stats s;

    informer_get_stats(inf, &s);
    return s;
}

/* Wait until the stats satisfy cond (an expression over s). */
#define wait_stats(cond)                                                                           \
    do {                                                                                           \
        struct informer_stats s = stats();                                                         \
        for (long t_ = 0; t_ < WAIT_MS && !(cond); t_ += 20) {                                     \
            apitest_nap(20);                                                                       \
            s = stats();                                                                           \
        }                                                                                          \
        ck_assert_msg((cond), "timed out waiting for " #cond);                                     \
    } while (0)

/* ---- fixture ---- */

static void setup(void)
{
    const char *const extra[] = {"--bookmark-interval", "0.5", NULL};

    apitest_start(&api, extra);
    kc = apitest_client(&api);
    cache = cache_create();
    ck_assert_ptr_nonnull(cache);
    ev_log = json_array();
    inf = NULL;
    inf2 = NULL;
}

static void teardown(void)
{
    informer_stop(inf);
    inf = NULL;
    informer_stop(inf2);
    inf2 = NULL;
    cache_destroy(cache);
    cache = NULL;
    k8s_client_destroy(kc);
    kc = NULL;
    apitest_stop(&api);
    json_decref(ev_log);
    ev_log = NULL;
}

static void start_cfg(const struct informer_config *cfg)
{
    struct informer_handlers h = {on_add, on_update, on_delete, &ev_mu};
    struct wh_error err = {0, ""};

    ck_assert_msg(informer_start(&inf, kc, cache, cfg, &h, &err) == 0, "informer_start: %s",
                  err.msg);
}

static void start(long watch_timeout_s, long backoff_ms)
{
    struct informer_config cfg = {
        .page_size = 2,
        .request_timeout_ms = 5000,
        .watch_timeout_s = watch_timeout_s,
        .idle_timeout_ms = 10000,
        .backoff_min_ms = backoff_ms,
        .backoff_max_ms = backoff_ms * 4,
    };

    start_cfg(&cfg);
}

/* Store Jobs directly (before the informer runs): ns1/a, ns1/b, ns2/c at rv 1, 2, 3.
 * b has a field the cache does not keep (minAvailable). */
static void seed_jobs(void)
{
    apitest_ctl(&api, "POST", "/_test/objects",
                "[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                "  "
                "\"metadata\":{\"name\":\"a\",\"namespace\":\"ns1\"},\"spec\":{\"tasks\":[{"
                "\"name\":\"t\",\"replicas\":1}]}},"
                " {\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                "  "
                "\"metadata\":{\"name\":\"b\",\"namespace\":\"ns1\"},\"spec\":{\"minAvailable\":1,"
                "\"tasks\":[{\"name\":\"t\",\"replicas\":1}]}},"
                " {\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                "  "
                "\"metadata\":{\"name\":\"c\",\"namespace\":\"ns2\"},\"spec\":{\"tasks\":[{"
                "\"name\":\"t\",\"replicas\":1}]}}]");
}

/* REST writes through the API, as a user would make them. */
static void api_create(const char *name)
{
    char body[256];

    snprintf(
        body, sizeof(body),
        "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
        "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"tasks\":[{\"name\":\"t\",\"replicas\":1}]}}",
        name);
    ck_assert_int_eq(apitest_call(&api, "POST", NS1_JOBS, body, true, NULL), 201);
}

static void api_set_replicas(const char *name, int n)
{
    char path[256];
    json_t *job = NULL;
    char *text;

    snprintf(path, sizeof(path), NS1_JOBS "/%s", name);
    ck_assert_int_eq(apitest_call(&api, "GET", path, NULL, true, &job), 200);
    json_object_set_new(json_array_get(json_object_get(json_object_get(job, "spec"), "tasks"), 0),
                        "replicas", json_integer(n));
    text = json_dumps(job, JSON_COMPACT);
    ck_assert_int_eq(apitest_call(&api, "PUT", path, text, true, NULL), 200);
    free(text);
    json_decref(job);
}

static void api_delete(const char *name)
{
    char path[256];

    snprintf(path, sizeof(path), NS1_JOBS "/%s", name);
    ck_assert_int_eq(apitest_call(&api, "DELETE", path, NULL, true, NULL), 200);
}

/* Logged requests to the collection path whose query contains needle. */
static int count_path_requests(const char *path, const char *needle)
{
    json_t *resp = NULL;
    json_t *r;
    size_t i;
    int n = 0;

    ck_assert_int_eq(apitest_call(&api, "GET", "/_test/requests", NULL, false, &resp), 200);
    json_array_foreach(json_object_get(resp, "requests"), i, r) {
        const char *q = json_string_value(json_object_get(r, "query"));

        if (strcmp(json_string_value(json_object_get(r, "path")), path) == 0
            && strstr(q != NULL ? q : "", needle) != NULL)
            n++;
    }
    json_decref(resp);
    return n;
}

/* Logged requests to the all-namespaces Jobs collection whose query contains needle. */
static int count_jobs_requests(const char *needle)
{
    return count_path_requests(JOBS, needle);
}

/*
 * The LIST requests (not watches) to the all-namespaces Jobs collection, in order, as
 * "limit=N" or "limit=N&continue" (the token dropped): new reference. times_out (may
 * be NULL): new reference to their server-side "time" values (seconds).
 */
static json_t *list_queries(json_t **times_out)
{
    json_t *reqs = apitest_requests(&api);
    json_t *out = json_array();
    json_t *times = json_array();
    json_t *r;
    size_t i;

    json_array_foreach(reqs, i, r) {
        const char *q = json_string_value(json_object_get(r, "query"));
        const char *cont;
        char buf[64];

        if (strcmp(json_string_value(json_object_get(r, "path")), JOBS) != 0 || q == NULL
            || strstr(q, "watch=") != NULL)
            continue;
        cont = strstr(q, "&continue=");
        snprintf(buf, sizeof(buf), "%.*s%s", (int)(cont != NULL ? cont - q : (long)strlen(q)), q,
                 cont != NULL ? "&continue" : "");
        json_array_append_new(out, json_string(buf));
        json_array_append(times, json_object_get(r, "time"));
    }
    json_decref(reqs);
    if (times_out != NULL)
        *times_out = times;
    else
        json_decref(times);
    return out;
}

/* Store Job ns1/NAME with an annotation of pad bytes (its size in a LIST: about pad). */
static void seed_job_of_size(const char *name, size_t pad)
{
    char *body = malloc(pad + 512);
    int off;

    ck_assert_ptr_nonnull(body);
    off = snprintf(body, 512,
                   "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                   "\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns1\","
                   "\"annotations\":{\"pad\":\"",
                   name);
    memset(body + off, 'p', pad);
    snprintf(body + off + pad, 512, "\"}},\"spec\":{\"tasks\":[{\"name\":\"t\",\"replicas\":1}]}}");
    apitest_ctl(&api, "POST", "/_test/objects", body);
    free(body);
}

static long cached_replicas(const char *ns, const char *name)
{
    json_t *job = NULL;
    long v;

    if (cache_get(cache, ns, name, &job) != 0)
        return -1;
    v = (long)json_integer_value(json_object_get(
        json_array_get(json_object_get(json_object_get(job, "spec"), "tasks"), 0), "replicas"));
    json_decref(job);
    return v;
}

/* ---- tests ---- */

START_TEST(test_initial_list)
{
    json_t *job = NULL;

    seed_jobs();
    ck_assert(!cache_synced(cache));
    start(300, 50);
    wait_events(3);
    settle();
    /* The LIST's order (namespace, name); every Job is new: on_add. */
    assert_events("[\"add ns1/a 1\", \"add ns1/b 2\", \"add ns2/c 3\"]");
    ck_assert(cache_synced(cache));
    ck_assert_uint_eq(cache_size(cache), 3);
    ck_assert_int_eq(cache_get(cache, "ns2", "c", &job), 0);
    ck_assert_str_eq(json_string_value(json_object_get(job, "kind")), "Job");
    ck_assert_str_eq(json_string_value(json_object_get(job, "apiVersion")),
                     "batch.volcano.sh/v1alpha1");
    ck_assert_str_eq(meta(job, "resourceVersion"), "3");
    json_decref(job);
    /* Paged by 2: two LIST requests, the second with the continue token. */
    ck_assert_int_eq(count_jobs_requests("limit=2"), 2);
    ck_assert_int_eq(count_jobs_requests("continue="), 1);
    /* Then one WATCH from the list's resourceVersion, with bookmarks. */
    wait_stats(s.watches >= 1);
    ck_assert_int_eq(count_jobs_requests("watch=1&allowWatchBookmarks=true&resourceVersion=3"), 1);
    ck_assert_uint_eq(stats().lists, 1);
    ck_assert_uint_eq(stats().errors, 0);
}
END_TEST

START_TEST(test_watch_events_in_order)
{
    seed_jobs();
    start(300, 50);
    wait_events(3);
    api_create("d");          /* rv 4 */
    api_set_replicas("a", 5); /* rv 5 */
    api_delete("b");          /* rv 6 */
    api_set_replicas("d", 9); /* rv 7 */
    wait_events(7);
    settle();
    assert_events("[\"add ns1/a 1\", \"add ns1/b 2\", \"add ns2/c 3\","
                  " \"add ns1/d 4\", \"update ns1/a 1>5\","
                  " \"delete ns1/b {\\\"tasks\\\":[{\\\"name\\\":\\\"t\\\",\\\"replicas\\\":1}]}\","
                  " \"update ns1/d 4>7\"]");
    ck_assert_uint_eq(cache_size(cache), 3);
    ck_assert_int_eq(cached_replicas("ns1", "a"), 5);
    ck_assert_int_eq(cached_replicas("ns1", "b"), -1);
    ck_assert_int_eq(cached_replicas("ns1", "d"), 9);
    ck_assert_int_eq(cached_replicas("ns2", "c"), 1);
    ck_assert_uint_eq(stats().lists, 1);
    ck_assert_uint_eq(stats().relists_gone, 0);
    ck_assert_uint_eq(stats().errors, 0);
}
END_TEST

/* _i = 0: the server answers 200 and an ERROR event with 410; 1: HTTP 410. */
START_TEST(test_relist_after_compaction)
{
    seed_jobs();
    start(1, 50); /* 1 s watches: the next one comes soon */
    wait_events(3);
    /* Keep every new watch failing while the history moves on without us. */
    apitest_ctl(&api, "POST", "/_test/faults",
                "{\"method\":\"GET\",\"path_regex\":\"watch=\",\"status\":500,"
                "\"reason\":\"InternalError\",\"message\":\"down\",\"count\":-1}");
    wait_stats(s.errors >= 1);
    api_delete("b");          /* rv 4 */
    api_create("e");          /* rv 5 */
    api_set_replicas("a", 3); /* rv 6 */
    apitest_ctl(&api, "POST", "/_test/compact", "{}");
    apitest_ctl(&api, "DELETE", "/_test/faults", NULL);
    if (_i == 1)
        apitest_ctl(&api, "POST", "/_test/faults",
                    "{\"method\":\"GET\",\"path_regex\":\"watch=\",\"watch_gone_http\":true,"
                    "\"count\":1}");
    wait_stats(s.lists >= 2);
    wait_events(6);
    settle();
    /* The relist reports what the watch missed: the deletion first, then the rest. */
    assert_events("[\"add ns1/a 1\", \"add ns1/b 2\", \"add ns2/c 3\","
                  " \"delete ns1/b {\\\"tasks\\\":[{\\\"name\\\":\\\"t\\\",\\\"replicas\\\":1}]}\","
                  " \"update ns1/a 1>6\", \"add ns1/e 5\"]");
    ck_assert_uint_eq(stats().lists, 2);
    ck_assert_uint_eq(stats().relists_gone, 1);
    ck_assert_uint_eq(cache_size(cache), 3);
    ck_assert_int_eq(cached_replicas("ns1", "a"), 3);
    ck_assert_int_eq(cached_replicas("ns1", "e"), 1);
    ck_assert_int_eq(cached_replicas("ns1", "b"), -1);
    /* And it watches on from the new list. */
    api_create("f"); /* rv 7 */
    wait_events(7);
    settle();
    assert_events("[\"add ns1/a 1\", \"add ns1/b 2\", \"add ns2/c 3\","
                  " \"delete ns1/b {\\\"tasks\\\":[{\\\"name\\\":\\\"t\\\",\\\"replicas\\\":1}]}\","
                  " \"update ns1/a 1>6\", \"add ns1/e 5\", \"add ns1/f 7\"]");
}
END_TEST

START_TEST(test_dropped_watch_resumes)
{
    seed_jobs();
    /* The first watch dies (no final chunk) after two events. */
    apitest_ctl(&api, "POST", "/_test/faults",
                "{\"method\":\"GET\",\"path_regex\":\"watch=\",\"watch_drop_after_events\":2,"
                "\"count\":1}");
    start(300, 50);
    wait_events(3);
    for (int i = 0; i < 5; i++) {
        char name[8];

        snprintf(name, sizeof(name), "j%d", i);
        api_create(name); /* rv 4..8 */
    }
    wait_events(8);
    settle();
    assert_events("[\"add ns1/a 1\", \"add ns1/b 2\", \"add ns2/c 3\","
                  " \"add ns1/j0 4\", \"add ns1/j1 5\", \"add ns1/j2 6\", \"add ns1/j3 7\","
                  " \"add ns1/j4 8\"]");
    /* Resumed with a WATCH from the last event seen, not a LIST. */
    ck_assert_uint_eq(stats().lists, 1);
    ck_assert_uint_eq(stats().errors, 1);
    ck_assert_uint_eq(stats().watches, 2);
    ck_assert_int_eq(count_jobs_requests("resourceVersion=5"), 1);
    ck_assert_uint_eq(cache_size(cache), 8);
}
END_TEST

START_TEST(test_list_error_backoff_then_sync)
{
    seed_jobs();
    apitest_ctl(&api, "POST", "/_test/faults",
                "{\"method\":\"GET\",\"path_regex\":\"/v1alpha1/jobs\\\\?limit\","
                "\"status\":503,\"reason\":\"ServiceUnavailable\",\"message\":\"x\",\"count\":3}");
    start(300, 20);
    wait_events(3);
    ck_assert(cache_synced(cache));
    ck_assert_uint_eq(stats().errors, 3);
    ck_assert_uint_eq(stats().lists, 1);
    ck_assert_int_eq(count_jobs_requests("limit=2"), 5); /* 3 refused + 2 pages */
}
END_TEST

/* ---- robustness: page size, 410 storms, wrong kinds ---- */

/*
 * Pages bigger than the client's body cap (a 64 KiB cap here, 16 MiB in production,
 * where 500 Jobs of 36 KB each were refused forever and the cache never synced):
 * the informer halves its page size and lists again from the start, and keeps the
 * smaller size for later relists. j00-j07 are small and j08-j11 carry 20 KB each, so
 * a page of 8 or 4 reaching j08 is over the cap and a page of 2 is not.
 */
START_TEST(test_list_page_over_body_cap_halves)
{
    struct informer_config cfg = {
        .page_size = 8,
        .request_timeout_ms = 5000,
        .watch_timeout_s = 1,
        .idle_timeout_ms = 10000,
        .backoff_min_ms = 50,
        .backoff_max_ms = 200,
    };
    json_t *q;

    for (int i = 0; i < 12; i++) {
        char name[8];

        snprintf(name, sizeof(name), "j%02d", i);
        seed_job_of_size(name, i < 8 ? 10 : 20000);
    }
    k8s_client_set_max_body(kc, 64 * 1024);
    start_cfg(&cfg);
    wait_events(12);
    wait_stats(s.lists >= 1);
    ck_assert(cache_synced(cache));
    ck_assert_uint_eq(cache_size(cache), 12);
    ck_assert_int_eq(cached_replicas("ns1", "j11"), 1);
    /* 8: page 2 too big; 4: page 3 too big; 2: six pages, each from the start. */
    q = list_queries(NULL);
    tu_assert_json_eq(q,
                      "[\"limit=8\", \"limit=8&continue\","
                      " \"limit=4\", \"limit=4&continue\", \"limit=4&continue\","
                      " \"limit=2\", \"limit=2&continue\", \"limit=2&continue\","
                      " \"limit=2&continue\", \"limit=2&continue\", \"limit=2&continue\"]");
    json_decref(q);
    ck_assert_uint_eq(stats().errors, 2);
    ck_assert_uint_eq(stats().lists, 1);

    /* A relist (the next watch answers 410) keeps the smaller size: no 8 or 4 again. */
    apitest_fault(&api,
                  "{\"method\":\"GET\",\"path_regex\":\"watch=\",\"status\":410,"
                  "\"reason\":\"Expired\",\"message\":\"too old\",\"count\":1}");
    wait_stats(s.lists >= 2);
    q = list_queries(NULL);
    tu_assert_json_eq(q,
                      "[\"limit=8\", \"limit=8&continue\","
                      " \"limit=4\", \"limit=4&continue\", \"limit=4&continue\","
                      " \"limit=2\", \"limit=2&continue\", \"limit=2&continue\","
                      " \"limit=2&continue\", \"limit=2&continue\", \"limit=2&continue\","
                      " \"limit=2\", \"limit=2&continue\", \"limit=2&continue\","
                      " \"limit=2&continue\", \"limit=2&continue\", \"limit=2&continue\"]");
    json_decref(q);
    ck_assert_uint_eq(stats().errors, 2);
    ck_assert_uint_eq(stats().relists_gone, 1);
    ck_assert_uint_eq(cache_size(cache), 12);
}
END_TEST

/*
 * One Job alone over the cap: the size stops at 1 (never 0) and that is a plain error
 * with backoff (5-10 minutes here, so the log below is complete); not synced.
 */
START_TEST(test_list_single_object_over_body_cap)
{
    struct informer_config cfg = {
        .page_size = 2,
        .request_timeout_ms = 5000,
        .watch_timeout_s = 300,
        .idle_timeout_ms = 10000,
        .backoff_min_ms = 600000,
        .backoff_max_ms = 600000,
    };
    json_t *q;

    seed_job_of_size("a", 10);
    seed_job_of_size("b", 20000);
    k8s_client_set_max_body(kc, 16 * 1024);
    start_cfg(&cfg);
    wait_stats(s.errors >= 2);
    settle();
    ck_assert(!cache_synced(cache));
    ck_assert_uint_eq(cache_size(cache), 0);
    /* limit=2 (a and b: too big), then limit=1: a fits, b alone does not: back off. */
    q = list_queries(NULL);
    tu_assert_json_eq(q, "[\"limit=2\", \"limit=1\", \"limit=1&continue\"]");
    json_decref(q);
    ck_assert_uint_eq(stats().errors, 2);
    ck_assert_uint_eq(stats().lists, 0);
    ck_assert_uint_eq(stats().watches, 0);
}
END_TEST

/* Install a fault rule (count 1) that answers requests matching re with text. */
static void fault_override(const char *re, const char *text)
{
    json_t *rule = json_pack("{s:s, s:s, s:s, s:i}", "method", "GET", "path_regex", re,
                             "body_override", text, "count", 1);
    char *body = json_dumps(rule, JSON_COMPACT);

    ck_assert_ptr_nonnull(body);
    apitest_fault(&api, body);
    free(body);
    json_decref(rule);
}

#define GONE_STATUS                                                                                \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","           \
    "\"reason\":\"Expired\",\"code\":410,\"message\":\"too old resource version\"}"

/*
 * _i = 0: every WATCH answered with HTTP 410; 1: with 200 and an ERROR event (410).
 * The LIST succeeds each time, but no watch ever delivers: each 410 is a failure, so
 * LISTs come after a growing backoff (it was a storm: 229 LISTs in 10 s, because a
 * LIST reset the failure count and a 410 relisted at once).
 *
 * The requests alternate LIST, WATCH; after the k-th WATCH the informer sleeps at
 * least d/2, d = min(50 ms · 2^(k-1), 800 ms) ("equal jitter"), so the server-side
 * gap from that WATCH to the next LIST is at least that (a lower bound: no clock on
 * the test's side is read).
 */
START_TEST(test_gone_storm_backs_off)
{
    struct informer_config cfg = {
        .page_size = 2,
        .request_timeout_ms = 5000,
        .watch_timeout_s = 300,
        .idle_timeout_ms = 10000,
        .backoff_min_ms = 50,
        .backoff_max_ms = 800,
    };
    json_t *reqs;
    json_t *r;
    double t[13];
    size_t i;
    int n = 0;

    seed_job_of_size("a", 10);
    if (_i == 0)
        apitest_fault(&api,
                      "{\"method\":\"GET\",\"path_regex\":\"watch=\",\"status\":410,"
                      "\"reason\":\"Expired\",\"message\":\"too old resource version\","
                      "\"count\":-1}");
    else
        apitest_fault(&api,
                      "{\"method\":\"GET\",\"path_regex\":\"watch=\",\"count\":-1,"
                      "\"body_override\":\"{\\\"type\\\":\\\"ERROR\\\",\\\"object\\\":"
                      "{\\\"kind\\\":\\\"Status\\\",\\\"apiVersion\\\":\\\"v1\\\","
                      "\\\"status\\\":\\\"Failure\\\",\\\"reason\\\":\\\"Expired\\\","
                      "\\\"code\\\":410,\\\"message\\\":\\\"too old\\\"}}\\n\"}");
    start_cfg(&cfg);
    wait_stats(s.lists >= 7);
    /* The first 13 Jobs requests: LIST, WATCH, ... LIST (7 LISTs of one page each). */
    reqs = apitest_requests(&api);
    json_array_foreach(reqs, i, r) {
        const char *q = json_string_value(json_object_get(r, "query"));

        if (n == 13)
            break;
        if (strcmp(json_string_value(json_object_get(r, "path")), JOBS) != 0)
            continue;
        ck_assert_msg((strstr(q, "watch=1") != NULL) == (n % 2 == 1), "request %d: %s", n, q);
        if (n % 2 == 0)
            ck_assert_str_eq(q, "limit=2");
        t[n++] = json_real_value(json_object_get(r, "time"));
    }
    json_decref(reqs);
    ck_assert_int_eq(n, 13);
    for (int k = 1; k <= 6; k++) {
        long d = 50L << (k - 1);
        double gap = t[2 * k] - t[2 * k - 1]; /* WATCH k → LIST k+1 */

        if (d > 800)
            d = 800;
        ck_assert_msg(gap >= (double)(d / 2) / 1000.0, "gap %d: %.4f s, want >= %ld ms", k, gap,
                      d / 2);
    }
    ck_assert_uint_ge(stats().relists_gone, 6);
    ck_assert_uint_eq(stats().errors, 0); /* a 410 is a relist, not an error */
}
END_TEST

/*
 * A 410 after a watch that delivered an event (the usual compaction) relists at once:
 * with a 5-10 minute backoff, a relist that backed off would miss the wait's deadline.
 */
START_TEST(test_gone_after_delivery_relists_at_once)
{
    struct informer_config cfg = {
        .page_size = 2,
        .request_timeout_ms = 5000,
        .watch_timeout_s = 1,
        .idle_timeout_ms = 10000,
        .backoff_min_ms = 600000,
        .backoff_max_ms = 600000,
    };
    json_t *q;

    seed_jobs();
    start_cfg(&cfg);
    wait_events(3);
    api_create("d"); /* rv 4: the watch delivers it */
    wait_events(4);
    apitest_fault(&api,
                  "{\"method\":\"GET\",\"path_regex\":\"watch=\",\"status\":410,"
                  "\"reason\":\"Expired\",\"message\":\"too old\",\"count\":1}");
    wait_stats(s.lists >= 2);
    ck_assert_uint_eq(stats().relists_gone, 1);
    ck_assert_uint_eq(stats().errors, 0);
    q = list_queries(NULL);
    tu_assert_json_eq(q, "[\"limit=2\", \"limit=2&continue\", \"limit=2\", \"limit=2&continue\"]");
    json_decref(q);
    settle();
    assert_events("[\"add ns1/a 1\", \"add ns1/b 2\", \"add ns2/c 3\", \"add ns1/d 4\"]");
}
END_TEST

/*
 * A misbehaving proxy puts other kinds into the Jobs LIST and WATCH: they are not
 * cached, not reported, and counted as errors. LIST items may omit kind and
 * apiVersion (filled in); watch objects may not. A skipped event still moves the
 * resume point (the next watch starts from its resourceVersion), and a DELETED of a
 * Pod does not remove the Job of the same name.
 */
START_TEST(test_wrong_kind_skipped)
{
    json_t *job = NULL;

    fault_override("/v1alpha1/jobs\\?limit",
                   "{\"kind\":\"JobList\",\"apiVersion\":\"batch.volcano.sh/v1alpha1\","
                   "\"metadata\":{\"resourceVersion\":\"2\"},\"items\":["
                   "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                   "\"namespace\":\"ns1\",\"resourceVersion\":\"1\"}},"
                   "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"k\","
                   "\"namespace\":\"ns1\",\"resourceVersion\":\"1\"}},"
                   "{\"metadata\":{\"name\":\"bare\",\"namespace\":\"ns1\","
                   "\"resourceVersion\":\"1\"},\"spec\":{}},"
                   "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                   "\"metadata\":{\"name\":\"good\",\"namespace\":\"ns1\","
                   "\"resourceVersion\":\"2\"},\"spec\":{}}]}");
    fault_override("watch=",
                   "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
                   "\"metadata\":{\"name\":\"p\",\"namespace\":\"ns1\","
                   "\"resourceVersion\":\"3\"}}}\n"
                   "{\"type\":\"MODIFIED\",\"object\":{\"apiVersion\":\"batch/v1\","
                   "\"kind\":\"Job\",\"metadata\":{\"name\":\"k\",\"namespace\":\"ns1\","
                   "\"resourceVersion\":\"4\"}}}\n"
                   "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"nokind\","
                   "\"namespace\":\"ns1\",\"resourceVersion\":\"5\"}}}\n"
                   "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"batch.volcano.sh/v1alpha1\","
                   "\"kind\":\"Job\",\"metadata\":{\"name\":\"w\",\"namespace\":\"ns1\","
                   "\"resourceVersion\":\"6\"},\"spec\":{}}}\n"
                   "{\"type\":\"DELETED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
                   "\"metadata\":{\"name\":\"good\",\"namespace\":\"ns1\","
                   "\"resourceVersion\":\"7\"}}}\n");
    start(300, 50);
    wait_stats(s.watches >= 2);
    settle();
    assert_events("[\"add ns1/bare 1\", \"add ns1/good 2\", \"add ns1/w 6\"]");
    ck_assert_uint_eq(cache_size(cache), 3);
    ck_assert_int_eq(cache_get(cache, "ns1", "bare", &job), 0);
    ck_assert_str_eq(json_string_value(json_object_get(job, "kind")), "Job");
    json_decref(job);
    ck_assert_int_eq(cache_get(cache, "ns1", "p", &job), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get(cache, "ns1", "k", &job), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get(cache, "ns1", "nokind", &job), WH_ENOTFOUND);
    ck_assert_uint_eq(stats().errors, 6); /* 2 in the LIST, 4 in the WATCH */
    ck_assert_uint_eq(stats().lists, 1);
    ck_assert_uint_eq(stats().watches, 2);
    ck_assert_int_eq(count_jobs_requests("resourceVersion=7"), 1);
}
END_TEST

/* ---- stop is prompt ---- */

START_TEST(test_stop_while_backing_off)
{
    apitest_ctl(&api, "POST", "/_test/faults",
                "{\"method\":\"GET\",\"path_regex\":\"/v1alpha1/jobs\",\"status\":500,"
                "\"reason\":\"InternalError\",\"message\":\"down\",\"count\":-1}");
    start(300, 600000); /* a 5-10 minute backoff after the first failure */
    wait_stats(s.errors >= 1);
    ck_assert(!cache_synced(cache));
    informer_stop(inf);
    inf = NULL;
}
END_TEST

START_TEST(test_stop_while_watching)
{
    seed_jobs();
    start(600, 50);
    wait_events(3);
    wait_stats(s.watches >= 1);
    informer_stop(inf);
    inf = NULL;
    ck_assert_uint_eq(cache_size(cache), 3); /* the cache outlives its informer */
}
END_TEST

START_TEST(test_stop_on_stalled_watch)
{
    struct informer_config cfg = {.watch_timeout_s = 600, .idle_timeout_ms = 600000};
    struct wh_error err = {0, ""};

    apitest_ctl(&api, "POST", "/_test/faults",
                "{\"method\":\"GET\",\"path_regex\":\"watch=\",\"watch_stall_ms\":-1,"
                "\"count\":-1}");
    /* Default handlers and config otherwise: NULL handlers are allowed. */
    ck_assert_int_eq(informer_start(&inf, kc, cache, &cfg, NULL, &err), 0);
    wait_stats(s.watches >= 1);
    ck_assert(cache_synced(cache));
    informer_stop(inf);
    inf = NULL;
    informer_stop(NULL);
}
END_TEST

/*
 * serve --namespaces: one informer per namespace on one namespaced cache. Each
 * LISTs and WATCHes its own namespace's collection (never the all-namespaces one),
 * the cache holds the Jobs of both and no other, and is synced only once both
 * have listed. A Job created in a namespace not served is never seen.
 */
START_TEST(test_namespaced_informers)
{
    static const char *const served[] = {"ns1", "ns2"};
    struct informer_handlers h = {on_add, on_update, on_delete, &ev_mu};
    struct informer_config cfg = {
        .page_size = 2,
        .request_timeout_ms = 5000,
        .watch_timeout_s = 300,
        .idle_timeout_ms = 10000,
        .backoff_min_ms = 50,
        .backoff_max_ms = 200,
    };
    struct wh_error err = {0, ""};
    struct informer_stats st;
    json_t *job = NULL;

    seed_jobs();
    apitest_ctl(&api, "POST", "/_test/objects",
                "[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                "\"metadata\":{\"name\":\"d\",\"namespace\":\"ns3\"},\"spec\":{}}]");
    cache_destroy(cache);
    cache = cache_create_namespaced(served, 2);
    ck_assert_ptr_nonnull(cache);
    cfg.ns = "ns1";
    ck_assert_msg(informer_start(&inf, kc, cache, &cfg, &h, &err) == 0, "%s", err.msg);
    wait_events(2);
    settle();
    assert_events("[\"add ns1/a 1\", \"add ns1/b 2\"]");
    ck_assert(!cache_synced(cache)); /* ns2 has not listed yet */
    cfg.ns = "ns2";
    ck_assert_msg(informer_start(&inf2, kc, cache, &cfg, &h, &err) == 0, "%s", err.msg);
    wait_events(3);
    for (long t = 0; t < WAIT_MS && !cache_synced(cache); t += 20)
        apitest_nap(20);
    ck_assert(cache_synced(cache));
    ck_assert_uint_eq(cache_size(cache), 3);
    ck_assert_int_eq(cache_get(cache, "ns3", "d", &job), WH_ENOTFOUND);

    /* Watches: ns1's create reaches the cache, ns3's never does. */
    wait_stats(s.watches >= 1);
    ck_assert_int_eq(apitest_call(&api, "POST",
                                  "/apis/batch.volcano.sh/v1alpha1/namespaces/ns3/jobs",
                                  "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":"
                                  "\"Job\",\"metadata\":{\"name\":\"x\"},\"spec\":{}}",
                                  true, NULL),
                     201);
    api_create("e");
    wait_events(4);
    settle();
    assert_events("[\"add ns1/a 1\", \"add ns1/b 2\", \"add ns2/c 3\", \"add ns1/e 6\"]");
    ck_assert_int_eq(cache_get(cache, "ns3", "x", &job), WH_ENOTFOUND);
    ck_assert_uint_eq(cache_size(cache), 4);

    /* Only the two namespaces' collections were asked, each listed once, then watched. */
    ck_assert_int_eq(count_jobs_requests(""), 0);
    ck_assert_int_eq(count_path_requests(NS1_JOBS, "limit=2"), 1);
    ck_assert_int_eq(count_path_requests(NS2_JOBS, "limit=2"), 1);
    ck_assert_int_eq(
        count_path_requests(NS1_JOBS, "watch=1&allowWatchBookmarks=true&resourceVersion="), 1);
    ck_assert_int_eq(
        count_path_requests(NS2_JOBS, "watch=1&allowWatchBookmarks=true&resourceVersion="), 1);
    informer_get_stats(inf2, &st);
    ck_assert_uint_eq(st.lists, 1);
    ck_assert_uint_eq(st.errors, 0);
    ck_assert_uint_eq(stats().lists, 1);
    ck_assert_uint_eq(stats().errors, 0);
}
END_TEST

START_TEST(test_start_errors)
{
    struct wh_error err = {0, ""};
    struct informer *i2 = (struct informer *)1;
    struct informer_config cfg = {.ns = "Ns/1"};

    ck_assert_int_eq(informer_start(&i2, NULL, cache, NULL, NULL, &err), WH_EINVAL);
    ck_assert_ptr_null(i2);
    ck_assert_int_eq(informer_start(&i2, kc, NULL, NULL, NULL, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "informer: no client or cache");
    /* a namespace must be a DNS-1123 label: it is a path segment as it is */
    ck_assert_int_eq(informer_start(&i2, kc, cache, &cfg, NULL, &err), WH_EINVAL);
    ck_assert_ptr_null(i2);
    ck_assert_str_eq(err.msg, "informer: invalid namespace \"Ns/1\"");
    /* a namespace must be one the cache serves (a cache of every namespace serves all) */
    {
        static const char *const served[] = {"ns1"};
        struct cache *nc = cache_create_namespaced(served, 1);

        cfg.ns = "ns2";
        ck_assert_int_eq(informer_start(&i2, kc, nc, &cfg, NULL, &err), WH_EINVAL);
        ck_assert_ptr_null(i2);
        ck_assert_str_eq(err.msg, "informer: the cache does not serve namespace ns2");
        cache_destroy(nc);
    }
}
END_TEST

static Suite *informer_suite(void)
{
    Suite *s = suite_create("informer");
    TCase *tc = tcase_create("core");
    TCase *stop = tcase_create("stop");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_initial_list);
    tcase_add_test(tc, test_watch_events_in_order);
    tcase_add_loop_test(tc, test_relist_after_compaction, 0, 2);
    tcase_add_test(tc, test_dropped_watch_resumes);
    tcase_add_test(tc, test_list_error_backoff_then_sync);
    tcase_add_test(tc, test_start_errors);
    tcase_add_test(tc, test_list_page_over_body_cap_halves);
    tcase_add_test(tc, test_list_single_object_over_body_cap);
    tcase_add_loop_test(tc, test_gone_storm_backs_off, 0, 2);
    tcase_add_test(tc, test_gone_after_delivery_relists_at_once);
    tcase_add_test(tc, test_wrong_kind_skipped);
    tcase_add_test(tc, test_namespaced_informers);
    suite_add_tcase(s, tc);

    /* Backoffs and watch timeouts of 5-10 minutes: only a prompt stop passes. */
    tcase_add_checked_fixture(stop, setup, teardown);
    tcase_set_timeout(stop, 30);
    tcase_add_test(stop, test_stop_while_backing_off);
    tcase_add_test(stop, test_stop_while_watching);
    tcase_add_test(stop, test_stop_on_stalled_watch);
    suite_add_tcase(s, stop);
    return s;
}

int main(void)
{
    int rc;

    json_object_seed(0);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = tu_run(informer_suite());
    curl_global_cleanup();
    return rc;
}
