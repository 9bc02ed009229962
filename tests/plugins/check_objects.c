/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_objects.c - plugins/objects.c against tests/apiserver.py (a child process on
 * a free loopback port): a DELETE carries the uid just read as its precondition
 * (exact DeleteOptions from the request log), an object replaced between the GET
 * and the DELETE survives (the race staged with a stalled DELETE), and objects of
 * a previous incarnation of the Job (same name, another uid) make ensure fail
 * with a retryable WH_ECONFLICT until garbage collection has removed them, while
 * truly foreign objects are still left alone and reported once (D12).
 *
 * Threads: test_delete_replaced_meanwhile runs objects_delete on a thread of
 * its own while the test replaces the object. Runs from the repository root.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/client.h"
#include "plugins/objects.h"
#include "plugins/plugin.h"
#include "tests/apitest.h"
#include "tests/testutil.h"

#define CM_PATH "/api/v1/namespaces/ns1/configmaps/rj-svc"

static struct apitest api;
static struct k8s_client *kc;
static unsigned long foreign;

static void server_start(void)
{
    apitest_start(&api, NULL);
}

static void server_stop(void)
{
    apitest_stop(&api);
}

static void setup(void)
{
    apitest_reset(&api);
    apitest_gc(&api, false);
    kc = apitest_client(&api);
    foreign = 0;
}

static void teardown(void)
{
    k8s_client_destroy(kc);
    kc = NULL;
}

/* The Volcano Job ns1/rj with uid (new reference). */
static json_t *job(const char *uid)
{
    json_t *j =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "apiVersion", "batch.volcano.sh/v1alpha1",
                  "kind", "Job", "metadata", "name", "rj", "namespace", "ns1", "uid", uid);

    ck_assert_ptr_nonnull(j);
    return j;
}

/* Store ConfigMap ns1/rj-svc with one ownerReference; @return it as stored (new reference). */
static json_t *load_cm(const char *api_version, const char *kind, const char *name, const char *uid)
{
    char text[1024];

    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"rj-svc\","
             "\"namespace\":\"ns1\",\"ownerReferences\":[{\"apiVersion\":\"%s\",\"kind\":\"%s\","
             "\"name\":\"%s\",\"uid\":\"%s\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
             "\"data\":{\"k\":\"v\"}}",
             api_version, kind, name, uid);
    return apitest_load(&api, text);
}

/* The stored ConfigMap (new reference), NULL on 404. */
static json_t *get_cm(void)
{
    json_t *obj = NULL;
    long code = apitest_call(&api, "GET", CM_PATH, NULL, true, &obj);

    if (code == 404) {
        json_decref(obj);
        return NULL;
    }
    ck_assert_int_eq(code, 200);
    return obj;
}

static const char *uid_of(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
}

/* "METHOD path" of every logged request, as one JSON array (new reference). */
static json_t *request_lines(void)
{
    json_t *reqs = apitest_requests(&api);
    json_t *out = json_array();
    json_t *r;
    size_t i;

    json_array_foreach(reqs, i, r) {
        json_array_append_new(out,
                              json_sprintf("%s %s", json_string_value(json_object_get(r, "method")),
                                           json_string_value(json_object_get(r, "path"))));
    }
    json_decref(reqs);
    return out;
}

/* The body of logged request i, parsed (new reference; NULL when it has none). */
static json_t *request_body(size_t i)
{
    json_t *reqs = apitest_requests(&api);
    const char *body = json_string_value(json_object_get(json_array_get(reqs, i), "body"));
    json_t *v = body != NULL ? json_loads(body, 0, NULL) : NULL;

    json_decref(reqs);
    return v;
}

static struct objects_owner_ctx owner(const json_t *j)
{
    struct objects_owner_ctx o = {.kc = kc, .timeout_ms = 5000, .foreign = &foreign, .job = j};

    return o;
}

START_TEST(test_delete_sends_uid_precondition)
{
    json_t *j = job("u-new");
    json_t *cm = load_cm("batch.volcano.sh/v1alpha1", "Job", "rj", "u-new");
    struct objects_owner_ctx o = owner(j);
    struct wh_error err = {0, ""};
    json_t *lines;
    json_t *body;
    char want[512];

    apitest_clear_requests(&api);
    ck_assert_int_eq(objects_delete(&o, &objects_kind_configmap, "rj-svc", &err), 0);
    ck_assert_str_eq(err.msg, "");
    lines = request_lines();
    tu_assert_json_eq(lines, "[\"GET " CM_PATH "\", \"DELETE " CM_PATH "\"]");
    body = request_body(1);
    snprintf(want, sizeof(want),
             "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":"
             "{\"uid\":\"%s\"},\"propagationPolicy\":\"Background\"}",
             uid_of(cm));
    tu_assert_json_eq(body, want);
    ck_assert_ptr_null(get_cm());
    ck_assert_uint_eq(foreign, 0);
    json_decref(body);
    json_decref(lines);
    json_decref(cm);
    json_decref(j);
}
END_TEST

START_TEST(test_apiserver_precondition_conflict)
{
    json_t *cm = load_cm("batch.volcano.sh/v1alpha1", "Job", "rj", "u-1");
    json_t *resp = NULL;
    json_t *still;
    char want[512];

    /* kube-apiserver's answer to a uid precondition that does not hold */
    ck_assert_int_eq(apitest_call(&api, "DELETE", CM_PATH,
                                  "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                                  "\"preconditions\":{\"uid\":\"not-it\"}}",
                                  true, &resp),
                     409);
    snprintf(want, sizeof(want),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
             "\"message\":\"Operation cannot be fulfilled on configmaps \\\"rj-svc\\\": "
             "Precondition failed: UID in precondition: not-it, UID in object meta: %s\","
             "\"reason\":\"Conflict\",\"details\":{\"name\":\"rj-svc\",\"kind\":\"configmaps\"},"
             "\"code\":409}",
             uid_of(cm));
    tu_assert_json_eq(resp, want);
    still = get_cm();
    ck_assert(json_equal(still, cm));
    json_decref(still);
    json_decref(resp);
    json_decref(cm);
}
END_TEST

struct delete_run {
    const struct objects_owner_ctx *o;
    struct wh_error err;
    int rc;
};

static void *delete_thread(void *arg)
{
    struct delete_run *d = arg;

    d->rc = objects_delete(d->o, &objects_kind_configmap, "rj-svc", &d->err);
    return NULL;
}

START_TEST(test_delete_replaced_meanwhile)
{
    json_t *j = job("u-old");
    json_t *cm = load_cm("batch.volcano.sh/v1alpha1", "Job", "rj", "u-old");
    struct objects_owner_ctx o = owner(j);
    struct delete_run d = {&o, {0, ""}, 1};
    json_t *again;
    json_t *now;
    pthread_t t;
    int i;

    /* The DELETE stalls 1.5 s; meanwhile the object is replaced by one of a new Job. */
    apitest_fault(&api,
                  "{\"method\":\"DELETE\",\"path_regex\":\"/configmaps/rj-svc$\","
                  "\"count\":1,\"delay_ms\":1500}");
    apitest_clear_requests(&api);
    ck_assert_int_eq(pthread_create(&t, NULL, delete_thread, &d), 0);
    for (i = 0; i < 1000 && apitest_count(&api, "DELETE", CM_PATH) == 0; i++)
        apitest_nap(10);
    ck_assert_int_eq(apitest_count(&api, "DELETE", CM_PATH), 1);
    apitest_ctl_expect(&api, "DELETE", "/_test/objects", NULL, 200);
    again = load_cm("batch.volcano.sh/v1alpha1", "Job", "rj", "u-new");
    ck_assert_str_ne(uid_of(again), uid_of(cm));
    ck_assert_int_eq(pthread_join(t, NULL), 0);

    /* 409 Conflict: not ours any more, nothing to delete, success */
    ck_assert_int_eq(d.rc, 0);
    ck_assert_str_eq(d.err.msg, "");
    now = get_cm();
    ck_assert(json_equal(now, again));
    ck_assert_uint_eq(foreign, 0);
    json_decref(now);
    json_decref(again);
    json_decref(cm);
    json_decref(j);
}
END_TEST

START_TEST(test_ensure_previous_incarnation_retryable)
{
    json_t *j = job("u-new");
    json_t *old = load_cm("batch.volcano.sh/v1alpha1", "Job", "rj", "u-old");
    json_t *desired = objects_for_job(&objects_kind_configmap, j, "rj-svc");
    struct objects_owner_ctx o = owner(j);
    struct objects_ensure_spec s = {
        .kind = &objects_kind_configmap, .name = "rj-svc", .desired = desired};
    struct wh_error err = {0, ""};
    json_t *stored = NULL;
    json_t *now;
    json_t *lines;

    ck_assert_ptr_nonnull(desired);
    apitest_clear_requests(&api);
    ck_assert_int_eq(objects_ensure(&o, &s, &stored, &err), WH_ECONFLICT);
    ck_assert_int_eq(err.code, WH_ECONFLICT);
    ck_assert_str_eq(err.msg,
                     "create ConfigMap ns1/rj-svc: owned by a previous incarnation of "
                     "job ns1/rj (uid u-old), waiting for its garbage collection");
    ck_assert_ptr_null(stored);
    ck_assert_uint_eq(foreign, 0); /* not reported as foreign (D12 is for others' objects) */
    lines = request_lines();
    tu_assert_json_eq(lines, "[\"GET " CM_PATH "\"]");
    json_decref(lines);
    now = get_cm();
    ck_assert(json_equal(now, old)); /* untouched */
    json_decref(now);

    /* delete of the new Job leaves it to garbage collection: no DELETE, no report */
    apitest_clear_requests(&api);
    wh_error_clear(&err);
    ck_assert_int_eq(objects_delete(&o, &objects_kind_configmap, "rj-svc", &err), 0);
    lines = request_lines();
    tu_assert_json_eq(lines, "[\"GET " CM_PATH "\"]");
    json_decref(lines);
    ck_assert_uint_eq(foreign, 0);

    /* garbage collection removes it: the retry creates the object of the new Job */
    apitest_ctl_expect(&api, "DELETE", "/_test/objects", NULL, 200);
    wh_error_clear(&err);
    ck_assert_int_eq(objects_ensure(&o, &s, &stored, &err), 0);
    ck_assert(objects_owned_by(stored, "u-new"));
    now = get_cm();
    ck_assert(json_equal(now, stored));
    json_decref(now);
    json_decref(stored);
    json_decref(desired);
    json_decref(old);
    json_decref(j);
}
END_TEST

START_TEST(test_ensure_foreign_still_declined)
{
    /* owners that are not a previous incarnation of batch.volcano.sh/v1alpha1 Job rj */
    static const char *const owners[][3] = {
        {"batch.volcano.sh/v1alpha1", "Job", "other"},
        {"batch/v1", "Job", "rj"},
        {"v1", "Pod", "rj"},
    };
    json_t *j = job("u-new");
    json_t *desired = objects_for_job(&objects_kind_configmap, j, "rj-svc");
    struct objects_owner_ctx o = owner(j);
    struct objects_ensure_spec s = {
        .kind = &objects_kind_configmap, .name = "rj-svc", .desired = desired};

    for (size_t i = 0; i < sizeof(owners) / sizeof(owners[0]); i++) {
        struct wh_error err = {0, ""};
        json_t *theirs;
        json_t *now;
        json_t *stored = NULL;

        apitest_reset(&api);
        theirs = load_cm(owners[i][0], owners[i][1], owners[i][2], "u-x");
        ck_assert_int_eq(objects_ensure(&o, &s, &stored, &err), WH_DECLINED);
        ck_assert_str_eq(err.msg, "");
        ck_assert_ptr_null(stored);
        ck_assert_uint_eq(foreign, 2 * i + 1);
        ck_assert_int_eq(objects_delete(&o, &objects_kind_configmap, "rj-svc", &err), WH_DECLINED);
        ck_assert_uint_eq(foreign, 2 * i + 2);
        ck_assert_int_eq(apitest_count(&api, "DELETE", CM_PATH), 0);
        now = get_cm();
        ck_assert(json_equal(now, theirs));
        json_decref(now);
        json_decref(theirs);
    }
    json_decref(desired);
    json_decref(j);
}
END_TEST

/* ---- helpers without a server ---- */

/* The owner context of a job hook: the hook's client, Job, env timeout and counter. */
START_TEST(test_owner_init)
{
    json_t *j = job("u1");
    struct k8s_client *fake = (struct k8s_client *)&foreign; /* never dereferenced */
    struct plugin_job_env env = {1234, NULL, &foreign};
    struct plugin_ctx c = {.name = "svc", .job = j, .kc = fake, .env = &env};
    struct objects_owner_ctx o;
    struct wh_error err = {0};

    ck_assert_int_eq(objects_owner_init(&o, &c, &err), 0);
    ck_assert_ptr_eq(o.kc, fake);
    ck_assert_int_eq(o.timeout_ms, 1234);
    ck_assert_ptr_eq(o.foreign, &foreign);
    ck_assert_ptr_eq(o.job, j);

    c.env = NULL; /* no env: the default limit, no D12 counter */
    ck_assert_int_eq(objects_owner_init(&o, &c, &err), 0);
    ck_assert_int_eq(o.timeout_ms, OBJECTS_DEFAULT_TIMEOUT_MS);
    ck_assert_ptr_null(o.foreign);

    c.kc = NULL; /* the admission path has no client */
    ck_assert_int_eq(objects_owner_init(&o, &c, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "job hook called without an API client");
    json_decref(j);
}
END_TEST

/* Names J<suffix>, and an owned object with its spec (the value is stolen, also on failure). */
START_TEST(test_name_and_object_with)
{
    json_t *j = job("u1");
    char *name = objects_name(j, "-head-svc");
    json_t *obj;

    ck_assert_str_eq(name, "rj-head-svc");
    obj = objects_for_job_with(&objects_kind_service, j, name, "spec",
                               json_pack("{s:s}", "clusterIP", "None"));
    tu_assert_json_eq(obj,
                      "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":"
                      "\"rj-head-svc\",\"namespace\":\"ns1\",\"ownerReferences\":[{"
                      "\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\",\"name\":"
                      "\"rj\",\"uid\":\"u1\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
                      "\"spec\":{\"clusterIP\":\"None\"}}");
    ck_assert_ptr_null(objects_for_job_with(&objects_kind_service, j, name, "spec", NULL));
    json_decref(obj);
    free(name);
    json_decref(j);
}
END_TEST

static Suite *objects_suite(void)
{
    Suite *s = suite_create("objects");
    TCase *tc = tcase_create("apiserver");
    TCase *th = tcase_create("helpers");

    tcase_add_unchecked_fixture(tc, server_start, server_stop);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_delete_sends_uid_precondition);
    tcase_add_test(tc, test_apiserver_precondition_conflict);
    tcase_add_test(tc, test_delete_replaced_meanwhile);
    tcase_add_test(tc, test_ensure_previous_incarnation_retryable);
    tcase_add_test(tc, test_ensure_foreign_still_declined);
    suite_add_tcase(s, tc);
    tcase_add_test(th, test_owner_init);
    tcase_add_test(th, test_name_and_object_with);
    suite_add_tcase(s, th);
    return s;
}

int main(void)
{
    int rc;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = tu_run(objects_suite());
    curl_global_cleanup();
    return rc;
}
