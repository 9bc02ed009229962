/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_lookup.c - controller/lookup.c, the admission path's Job lookup, against
 * tests/apiserver.py: a cached Job costs no API request at all; a miss, or a
 * cached Job with another uid (D6), costs exactly one GET; 404, a stall
 * past the timeout and a 500 come back as the errors mutate_review expects.
 * A namespace a namespaced cache does not serve is declined with no request.
 * Request counts come from the server's own request log.
 */
#include <pthread.h>

#include "controller/cache.h"
#include "controller/lookup.h"
#include "plugins/diagnose.h"
#include "tests/apitest.h"

#define JOB_PATH "/apis/batch.volcano.sh/v1alpha1/namespaces/ns1/jobs/j1"

static struct apitest api;
static struct k8s_client *kc;
static struct cache *cache;
static json_t *stored; /* Job ns1/j1 as the API server stored it */

static void setup(void)
{
    json_t *resp = NULL;

    apitest_start(&api, NULL);
    kc = apitest_client(&api);
    cache = cache_create();
    ck_assert_ptr_nonnull(cache);
    ck_assert_int_eq(apitest_call(&api, "POST", "/_test/objects",
                                  "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                                  "\"metadata\":{\"name\":\"j1\",\"namespace\":\"ns1\"},"
                                  "\"spec\":{\"minAvailable\":1}}",
                                  false, &resp),
                     201);
    stored = json_incref(json_array_get(json_object_get(resp, "items"), 0));
    json_decref(resp);
    ck_assert(json_is_object(stored));
    apitest_ctl(&api, "DELETE", "/_test/requests", NULL);
}

static void teardown(void)
{
    json_decref(stored);
    stored = NULL;
    cache_destroy(cache);
    cache = NULL;
    k8s_client_destroy(kc);
    kc = NULL;
    apitest_stop(&api);
}

static const char *uid_of(const json_t *j)
{
    return json_string_value(json_object_get(json_object_get(j, "metadata"), "uid"));
}

/* A Job ns1/j1 as the cache might hold it (new reference). */
static json_t *cached_job(const char *uid)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:{s:[]}}}", "apiVersion",
                     "batch.volcano.sh/v1alpha1", "kind", "Job", "metadata", "name", "j1",
                     "namespace", "ns1", "uid", uid, "resourceVersion", "1", "spec", "plugins",
                     "svc");
}

static int get_ns(struct lookup *l, const char *ns, const char *name, json_t **out,
                  struct wh_error *err)
{
    struct jobsource src = lookup_job_source(l);

    return src.get(src.userdata, ns, name, "", out, err);
}

static int get(struct lookup *l, const char *name, const char *uid, json_t **out,
               struct wh_error *err)
{
    struct jobsource src = lookup_job_source(l);

    ck_assert_ptr_eq(src.userdata, l);
    return src.get(src.userdata, "ns1", name, uid, out, err);
}

START_TEST(test_cached_job_makes_no_request)
{
    struct lookup l = {.cache = cache, .client = kc, .timeout_ms = 2000};
    struct wh_error err = {0, ""};
    json_t *job = cached_job(uid_of(stored));
    json_t *got = NULL;

    ck_assert_int_eq(cache_put(cache, job), 0);
    cache_set_synced(cache, true);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(get(&l, "j1", uid_of(stored), &got, &err), 0);
        ck_assert(json_equal(got, job)); /* the cached one (plugins svc), not the API's */
        json_decref(got);
        got = NULL;
    }
    /* No uid to compare (an ownerReference without one): the cached Job too. */
    ck_assert_int_eq(get(&l, "j1", "", &got, &err), 0);
    ck_assert(json_equal(got, job));
    /* and the plugins' slots beside this thread's tree of it (cache_read_slot) */
    {
        struct jobsource src = lookup_job_source(&l);

        ck_assert_ptr_eq(src.job_memo(src.userdata, got, 2), cache_read_slot(got, 2));
        ck_assert_ptr_nonnull(src.job_memo(src.userdata, got, 2));
    }
    json_decref(got);
    ck_assert_uint_eq(apitest_total(&api), 0);
    json_decref(job);
}
END_TEST

/* The diagnostics the cache computed for the version the pod's lookup got: no API request,
 * no diagnose_job; another version, or no cache, is left to the caller (WH_ENOTFOUND). */
START_TEST(test_diagnostics_of_the_cached_version)
{
    struct lookup l = {.cache = cache, .client = kc, .timeout_ms = 2000};
    struct lookup none = {.cache = NULL, .client = kc, .timeout_ms = 2000};
    struct jobsource src = lookup_job_source(&l);
    struct wh_error err = {0, ""};
    struct diagnostics *d = malloc(sizeof(*d));
    json_t *job = cached_job(uid_of(stored));
    json_t *got = NULL;

    ck_assert_ptr_nonnull(d);
    json_object_set_new(json_object_get(job, "spec"), "plugins", json_pack("[s]", "svc"));
    ck_assert_int_eq(cache_put(cache, job), 0);
    ck_assert_int_eq(get(&l, "j1", uid_of(stored), &got, &err), 0);
    ck_assert(src.diagnose == lookup_job_diagnose);
    ck_assert_int_eq(src.diagnose(src.userdata, got, NULL), 0); /* there are some */
    ck_assert_int_eq(src.diagnose(src.userdata, got, d), 0);
    ck_assert_uint_eq(d->n, 1);
    ck_assert_str_eq(d->items[0].message,
                     "spec.plugins is a list, not a map of plugin name to arguments, so no "
                     "plugin runs: write it as {\"svc\": []}");
    /* A newer version than the cache's (a GET after a miss raced a watch event). */
    json_object_set_new(json_object_get(got, "metadata"), "resourceVersion", json_string("2"));
    ck_assert_int_eq(src.diagnose(src.userdata, got, d), WH_ENOTFOUND);
    ck_assert_uint_eq(d->n, 0);
    ck_assert_int_eq(src.diagnose(src.userdata, got, NULL), WH_ENOTFOUND);
    ck_assert_int_eq(lookup_job_diagnose(&none, job, d), WH_ENOTFOUND);
    ck_assert_int_eq(lookup_job_diagnose(&none, job, NULL), WH_ENOTFOUND);
    /* A clean version: "none", nothing to unpack. */
    json_object_set_new(json_object_get(job, "spec"), "plugins", json_pack("{s:[]}", "svc"));
    json_object_set_new(json_object_get(job, "metadata"), "resourceVersion", json_string("3"));
    ck_assert_int_eq(cache_put(cache, job), 0);
    ck_assert_int_eq(lookup_job_diagnose(&l, job, NULL), WH_DECLINED);
    ck_assert_int_eq(lookup_job_diagnose(&l, job, d), 0);
    ck_assert_uint_eq(d->n, 0);
    ck_assert_uint_eq(apitest_total(&api), 0);
    json_decref(got);
    json_decref(job);
    free(d);
}
END_TEST

START_TEST(test_miss_makes_one_get)
{
    struct lookup l = {.cache = cache, .client = kc, .timeout_ms = 2000};
    struct wh_error err = {0, ""};
    json_t *got = NULL;

    ck_assert_int_eq(get(&l, "j1", uid_of(stored), &got, &err), 0);
    ck_assert(json_equal(got, stored));
    {
        /* a Job read from the API is the caller's alone: no slots (derived per pod) */
        struct jobsource src = lookup_job_source(&l);

        ck_assert_ptr_null(src.job_memo(src.userdata, got, 2));
    }
    json_decref(got);
    ck_assert_int_eq(apitest_count(&api, "GET", JOB_PATH), 1);
    ck_assert_uint_eq(apitest_total(&api), 1);
    /* The lookup never writes the cache: the informer is its only writer. */
    ck_assert_uint_eq(cache_size(cache), 0);

    /* Synced or not, a miss is a GET (the watch may lag behind a new Job). */
    cache_set_synced(cache, true);
    ck_assert_int_eq(get(&l, "j1", uid_of(stored), &got, &err), 0);
    json_decref(got);
    ck_assert_int_eq(apitest_count(&api, "GET", JOB_PATH), 2);
}
END_TEST

START_TEST(test_stale_uid_reads_again)
{
    struct lookup l = {.cache = cache, .client = kc, .timeout_ms = 2000};
    struct wh_error err = {0, ""};
    json_t *old = cached_job("uid-of-a-deleted-incarnation");
    json_t *got = NULL;

    ck_assert_int_eq(cache_put(cache, old), 0);
    cache_set_synced(cache, true);
    ck_assert_int_eq(get(&l, "j1", uid_of(stored), &got, &err), 0);
    ck_assert(json_equal(got, stored));
    ck_assert_str_eq(uid_of(got), uid_of(stored));
    json_decref(got);
    ck_assert_int_eq(apitest_count(&api, "GET", JOB_PATH), 1);
    ck_assert_uint_eq(apitest_total(&api), 1);
    json_decref(old);
}
END_TEST

START_TEST(test_errors)
{
    struct lookup l = {.cache = cache, .client = kc, .timeout_ms = 300};
    struct wh_error err = {0, ""};
    json_t *got = NULL;

    /* 404 → WH_ENOTFOUND (D7: allowed with a warning). */
    ck_assert_int_eq(get(&l, "nope", "u", &got, &err), WH_ENOTFOUND);
    ck_assert_ptr_null(got);
    ck_assert_int_eq(
        apitest_count(&api, "GET", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns1/jobs/nope"), 1);

    /* 500 → WH_EAPI with the Status reason. */
    apitest_ctl(&api, "POST", "/_test/faults",
                "{\"method\":\"GET\",\"path_regex\":\"/jobs/j1$\",\"status\":500,"
                "\"reason\":\"InternalError\",\"message\":\"boom\",\"count\":1}");
    wh_error_clear(&err);
    ck_assert_int_eq(get(&l, "j1", "", &got, &err), WH_EAPI);
    ck_assert_str_eq(err.msg, "InternalError: boom");

    /* A stall past --job-lookup-timeout → WH_ETIMEOUT. */
    apitest_ctl(&api, "POST", "/_test/faults",
                "{\"method\":\"GET\",\"path_regex\":\"/jobs/j1$\",\"delay_ms\":3000,\"count\":1}");
    wh_error_clear(&err);
    ck_assert_int_eq(get(&l, "j1", "", &got, &err), WH_ETIMEOUT);
    ck_assert_ptr_null(got);
}
END_TEST

START_TEST(test_no_cache)
{
    struct lookup l = {.cache = NULL, .client = kc, .timeout_ms = 2000};
    struct wh_error err = {0, ""};
    json_t *got = NULL;

    ck_assert_int_eq(get(&l, "j1", NULL, &got, &err), 0);
    ck_assert(json_equal(got, stored));
    json_decref(got);
    ck_assert_int_eq(apitest_count(&api, "GET", JOB_PATH), 1);
}
END_TEST

/* One lookup on its own thread, released with the others by a barrier. */
struct lookup_thread {
    pthread_t th;
    struct lookup *l;
    pthread_barrier_t *go;
    const char *name;
    int rc;
    json_t *job;
    struct wh_error err;
};

static void *lookup_main(void *arg)
{
    struct lookup_thread *t = arg;

    if (t->go != NULL)
        pthread_barrier_wait(t->go);
    t->rc = lookup_job_get(t->l, "ns1", t->name, "", &t->job, &t->err);
    return NULL;
}

/* Wait (up to 20 s) until the API server has received n GETs of path. */
static void wait_gets(const char *path, int n)
{
    for (int i = 0; i < 2000 && apitest_count(&api, "GET", path) < n; i++)
        usleep(10000);
    ck_assert_int_eq(apitest_count(&api, "GET", path), n);
}

START_TEST(test_concurrent_misses_share_one_get)
{
    enum { N = 8 };
    struct lookup l = {.cache = cache, .client = kc, .timeout_ms = 10000};
    struct lookup_thread t[N];
    pthread_barrier_t go;

    ck_assert_int_eq(lookup_init(&l), 0);
    /* The GET stalls, so every lookup starts while it is in the air. */
    apitest_ctl(&api, "POST", "/_test/faults",
                "{\"method\":\"GET\",\"path_regex\":\"/jobs/j1$\",\"delay_ms\":2000,\"count\":1}");
    pthread_barrier_init(&go, NULL, N);
    for (int i = 0; i < N; i++) {
        t[i] = (struct lookup_thread){.l = &l, .go = &go, .name = "j1"};
        ck_assert_int_eq(pthread_create(&t[i].th, NULL, lookup_main, &t[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(t[i].th, NULL);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(t[i].rc, 0);
        ck_assert(json_equal(t[i].job, stored));
        for (int k = 0; k < i; k++)
            ck_assert_ptr_ne(t[i].job, t[k].job); /* each its own copy */
    }
    for (int i = 0; i < N; i++)
        json_decref(t[i].job);
    ck_assert_int_eq(apitest_count(&api, "GET", JOB_PATH), 1);
    ck_assert_uint_eq(apitest_total(&api), 1);

    /* An error is shared too: one 500, every caller gets its Status reason. */
    apitest_ctl(&api, "POST", "/_test/faults",
                "{\"method\":\"GET\",\"path_regex\":\"/jobs/j1$\",\"delay_ms\":2000,"
                "\"status\":500,\"reason\":\"InternalError\",\"message\":\"boom\",\"count\":1}");
    for (int i = 0; i < N; i++) {
        t[i] = (struct lookup_thread){.l = &l, .go = &go, .name = "j1"};
        ck_assert_int_eq(pthread_create(&t[i].th, NULL, lookup_main, &t[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i].th, NULL);
        ck_assert_int_eq(t[i].rc, WH_EAPI);
        ck_assert_str_eq(t[i].err.msg, "InternalError: boom");
        ck_assert_ptr_null(t[i].job);
    }
    ck_assert_int_eq(apitest_count(&api, "GET", JOB_PATH), 2);
    pthread_barrier_destroy(&go);
    lookup_dispose(&l);
    lookup_dispose(&l); /* safe twice */
}
END_TEST

START_TEST(test_waiting_capped)
{
    struct lookup l = {.cache = cache, .client = kc, .timeout_ms = 10000, .max_waiting = 1};
    struct lookup_thread a = {.l = &l, .name = "j1"};
    struct wh_error err = {0, ""};
    json_t *got = NULL;

    ck_assert_int_eq(lookup_init(&l), 0);
    apitest_ctl(&api, "POST", "/_test/faults",
                "{\"method\":\"GET\",\"path_regex\":\"/jobs/j1$\",\"delay_ms\":2000,\"count\":1}");
    ck_assert_int_eq(pthread_create(&a.th, NULL, lookup_main, &a), 0);
    wait_gets(JOB_PATH, 1);
    /* One lookup waits on j1's GET, the most allowed: another Job is refused at once,
     * without a request, and so is a follower of j1 (it would block a worker too). */
    ck_assert_int_eq(get(&l, "j2", "u", &got, &err), WH_EBUSY);
    ck_assert_str_eq(err.msg,
                     "too many reviews waiting on volcano job reads from the API "
                     "server (1); try again");
    ck_assert_ptr_null(got);
    wh_error_clear(&err);
    ck_assert_int_eq(get(&l, "j1", "", &got, &err), WH_EBUSY);
    ck_assert_ptr_null(got);
    pthread_join(a.th, NULL);
    ck_assert_int_eq(a.rc, 0);
    ck_assert(json_equal(a.job, stored));
    json_decref(a.job);
    ck_assert_int_eq(apitest_count(&api, "GET", JOB_PATH), 1);
    ck_assert_int_eq(
        apitest_count(&api, "GET", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns1/jobs/j2"), 0);
    /* Landed: room again. */
    wh_error_clear(&err);
    ck_assert_int_eq(get(&l, "j2", "u", &got, &err), WH_ENOTFOUND);
    lookup_dispose(&l);
}
END_TEST

/* Lines of text that contain needle. */
static int count_lines(const char *text, const char *needle)
{
    int n = 0;

    for (const char *p = text; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
        char line[1024];

        snprintf(line, sizeof(line), "%.*s", (int)len, p);
        if (strstr(line, needle) != NULL)
            n++;
        p = nl != NULL ? nl + 1 : NULL;
    }
    return n;
}

/*
 * serve --namespaces: a namespaced cache serves ns1 only. A pod of ns2 or ns3 is
 * declined with no API request at all (no GET outside the namespaces served), counted
 * per pod, and logged once per namespace (stderr captured); ns1's miss is still a GET.
 */
START_TEST(test_namespace_not_served)
{
    static const char *const served[] = {"ns1"};
    struct lookup l = {.client = kc, .timeout_ms = 2000};
    struct wh_error err = {0, ""};
    json_t *got = (json_t *)1;
    char logpath[] = "/tmp/check_lookup.XXXXXX";
    int fd = mkstemp(logpath);
    int saved = dup(2);
    char *log;

    ck_assert_int_ge(fd, 0);
    cache_destroy(cache);
    cache = cache_create_namespaced(served, 1);
    l.cache = cache;
    cache_set_namespace_synced(cache, "ns1");
    ck_assert_int_eq(lookup_init(&l), 0);
    ck_assert_uint_eq(lookup_not_served(&l), 0);
    fflush(stderr);
    dup2(fd, 2);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(get_ns(&l, "ns2", "j1", &got, &err), WH_DECLINED);
        ck_assert_ptr_null(got);
    }
    ck_assert_int_eq(get_ns(&l, "ns3", "j1", &got, &err), WH_DECLINED);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ck_assert_uint_eq(lookup_not_served(&l), 4);
    ck_assert_uint_eq(apitest_total(&api), 0);
    ck_assert_str_eq(err.msg, "");
    log = tu_read_file(logpath);
    unlink(logpath);
    close(fd);
    ck_assert_int_eq(count_lines(log, "namespace not served"), 2);
    ck_assert_int_eq(count_lines(log, "\"ns\":\"ns2\""), 1);
    ck_assert_int_eq(count_lines(log, "\"ns\":\"ns3\""), 1);
    free(log);
    /* A miss in the namespace served is a GET, as before. */
    ck_assert_int_eq(get_ns(&l, "ns1", "j1", &got, &err), 0);
    ck_assert(json_equal(got, stored));
    json_decref(got);
    ck_assert_int_eq(apitest_count(&api, "GET", JOB_PATH), 1);
    ck_assert_uint_eq(apitest_total(&api), 1);
    ck_assert_uint_eq(lookup_not_served(&l), 4);
    lookup_dispose(&l);
    ck_assert_uint_eq(lookup_not_served(&l), 0);
}
END_TEST

/* get_nowait: what get answers without a request, and WH_EWOULDBLOCK where get would
 * make one (a miss, a stale uid), with nothing sent, counted or written to err. */
START_TEST(test_nowait_never_requests)
{
    static const char *const served[] = {"ns1"};
    struct lookup l = {.cache = cache, .client = kc, .timeout_ms = 2000};
    struct jobsource src = lookup_job_source(&l);
    struct wh_error err = {0, ""};
    json_t *job = cached_job("uid-of-a-deleted-incarnation");
    json_t *got = (json_t *)1;

    ck_assert(src.get_nowait == lookup_job_get_nowait);
    ck_assert_int_eq(lookup_init(&l), 0);
    /* a miss */
    ck_assert_int_eq(src.get_nowait(&l, "ns1", "j1", uid_of(stored), &got, &err), WH_EWOULDBLOCK);
    ck_assert_ptr_null(got);
    /* a stale uid (D6) */
    ck_assert_int_eq(cache_put(cache, job), 0);
    ck_assert_int_eq(src.get_nowait(&l, "ns1", "j1", uid_of(stored), &got, &err), WH_EWOULDBLOCK);
    ck_assert_ptr_null(got);
    ck_assert_uint_eq(apitest_total(&api), 0);
    ck_assert_str_eq(err.msg, "");
    /* the cached Job of that uid, or with no uid to compare */
    ck_assert_int_eq(src.get_nowait(&l, "ns1", "j1", "uid-of-a-deleted-incarnation", &got, &err),
                     0);
    ck_assert(json_equal(got, job));
    json_decref(got);
    ck_assert_int_eq(src.get_nowait(&l, "ns1", "j1", "", &got, &err), 0);
    ck_assert(json_equal(got, job));
    json_decref(got);
    /* get, where waiting is allowed, reads the stale one's successor from the API */
    ck_assert_int_eq(src.get(&l, "ns1", "j1", uid_of(stored), &got, &err), 0);
    ck_assert(json_equal(got, stored));
    json_decref(got);
    ck_assert_uint_eq(apitest_total(&api), 1);
    lookup_dispose(&l);
    /* a namespace not served: declined at once, as get does */
    cache_destroy(cache);
    cache = cache_create_namespaced(served, 1);
    l.cache = cache;
    ck_assert_int_eq(lookup_init(&l), 0);
    ck_assert_int_eq(src.get_nowait(&l, "ns2", "j1", "", &got, &err), WH_DECLINED);
    ck_assert_ptr_null(got);
    ck_assert_uint_eq(lookup_not_served(&l), 1);
    ck_assert_int_eq(src.get_nowait(&l, "ns1", "j1", "", &got, &err), WH_EWOULDBLOCK);
    ck_assert_uint_eq(apitest_total(&api), 1);
    lookup_dispose(&l);
    json_decref(job);
}
END_TEST

static Suite *lookup_suite(void)
{
    Suite *s = suite_create("lookup");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_cached_job_makes_no_request);
    tcase_add_test(tc, test_diagnostics_of_the_cached_version);
    tcase_add_test(tc, test_miss_makes_one_get);
    tcase_add_test(tc, test_stale_uid_reads_again);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_no_cache);
    tcase_add_test(tc, test_concurrent_misses_share_one_get);
    tcase_add_test(tc, test_waiting_capped);
    tcase_add_test(tc, test_namespace_not_served);
    tcase_add_test(tc, test_nowait_never_requests);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int rc;

    json_object_seed(0);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = tu_run(lookup_suite());
    curl_global_cleanup();
    return rc;
}
