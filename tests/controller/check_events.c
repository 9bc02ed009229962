/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_events.c - the Event recorder against tests/apiserver.py: an Event created
 * once with every field, its count raised on a repeat (PATCH, no second POST),
 * another message another Event, the per-Job token bucket, a 409 on create (an
 * Event written before this process knew it), an expired Event created again,
 * 5xx retried once or dropped with a log line, the call's time budget, the uid
 * table's cap, forget, bad input, and diagnose_job's results posted as they are.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/cache.h"
#include "controller/events.h"
#include "tests/apitest.h"
#include "tests/testutil.h"

#define EVENTS_PATH "/api/v1/namespaces/ns1/events"
#define JOB_TEXT                                                                                   \
    "{\"apiVersion\": \"batch.volcano.sh/v1alpha1\", \"kind\": \"Job\", \"metadata\":"             \
    " {\"name\": \"j1\", \"namespace\": \"ns1\", \"uid\": \"uid-1\", \"resourceVersion\": \"7\"}}"

static struct apitest api;
static struct k8s_client *kc;
static long long fake_now;

static long long fake_clock(void)
{
    return fake_now;
}

static void api_setup(void)
{
    apitest_start(&api, NULL);
    kc = apitest_client(&api);
    fake_now = 1000000;
}

static void api_teardown(void)
{
    k8s_client_destroy(kc);
    apitest_stop(&api);
}

static struct events *recorder(const struct events_config *cfg)
{
    struct events_config c = {.instance = "replica-0", .clock_ms = fake_clock};
    struct events *ev = NULL;
    struct wh_error err = {0, ""};

    if (cfg != NULL)
        c = *cfg;
    ck_assert_int_eq(events_create(&ev, kc, &c, &err), 0);
    return ev;
}

/* GET the Event ns1/name: new reference, NULL on 404. */
static json_t *get_event(const char *name)
{
    char path[512];
    json_t *obj = NULL;
    long code;

    snprintf(path, sizeof(path), EVENTS_PATH "/%s", name);
    code = apitest_call(&api, "GET", path, NULL, true, &obj);
    if (code == 404) {
        json_decref(obj);
        return NULL;
    }
    ck_assert_int_eq(code, 200);
    return obj;
}

static size_t event_count(void)
{
    json_t *list = NULL;
    size_t n;

    ck_assert_int_eq(apitest_call(&api, "GET", EVENTS_PATH, NULL, true, &list), 200);
    n = json_array_size(json_object_get(list, "items"));
    json_decref(list);
    return n;
}

static long count_of(const char *name)
{
    json_t *e = get_event(name);
    long c;

    ck_assert_ptr_nonnull(e);
    c = (long)json_integer_value(json_object_get(e, "count"));
    json_decref(e);
    return c;
}

START_TEST(test_name)
{
    char buf[300];
    char longname[300];

    ck_assert_str_eq(events_name(buf, sizeof(buf), "j1", "TaskNotFound", "no task"),
                     "j1.3b1d57620e2abc2e");
    /* The same reason and message: the same name, also in another process. */
    ck_assert_str_eq(events_name(buf, sizeof(buf), "j1", "TaskNotFound", "no task"),
                     "j1.3b1d57620e2abc2e");
    ck_assert_str_ne(events_name(buf, sizeof(buf), "j1", "Conflict", "no task"),
                     "j1.3b1d57620e2abc2e");
    memset(longname, 'a', 253);
    longname[253] = '\0';
    events_name(buf, sizeof(buf), longname, "TaskNotFound", "no task");
    ck_assert_uint_eq(strlen(buf), 253);
    ck_assert_str_eq(buf + 236, ".3b1d57620e2abc2e");
}
END_TEST

START_TEST(test_created_once_then_counted)
{
    json_t *job = tu_json(JOB_TEXT);
    struct events *ev = recorder(NULL);
    struct events_stats st;
    struct wh_error err = {0, ""};
    char name[300];
    json_t *e;

    events_name(name, sizeof(name), "j1", "TaskNotFound", "no task");
    ck_assert_int_eq(events_record(ev, job, "TaskNotFound", "no task", &err), 0);
    e = get_event(name);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(json_string_value(json_object_get(e, "firstTimestamp")),
                     json_string_value(json_object_get(e, "lastTimestamp")));
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(e, "lastTimestamp"))), 20);
    json_object_del(e, "firstTimestamp");
    json_object_del(e, "lastTimestamp");
    json_object_del(json_object_get(e, "metadata"), "uid");
    json_object_del(json_object_get(e, "metadata"), "resourceVersion");
    json_object_del(json_object_get(e, "metadata"), "creationTimestamp");
    json_object_del(json_object_get(e, "metadata"), "generation");
    tu_assert_json_eq(e,
                      "{\"apiVersion\": \"v1\", \"kind\": \"Event\", \"metadata\":"
                      " {\"name\": \"j1.3b1d57620e2abc2e\", \"namespace\": \"ns1\"},"
                      " \"involvedObject\": {\"apiVersion\": \"batch.volcano.sh/v1alpha1\","
                      " \"kind\": \"Job\", \"name\": \"j1\", \"namespace\": \"ns1\","
                      " \"uid\": \"uid-1\", \"resourceVersion\": \"7\"},"
                      " \"reason\": \"TaskNotFound\", \"message\": \"no task\","
                      " \"type\": \"Warning\", \"source\": {\"component\":"
                      " \"volcano-plugin-webhook\", \"host\": \"replica-0\"},"
                      " \"reportingComponent\": \"volcano-plugin-webhook\","
                      " \"reportingInstance\": \"replica-0\", \"count\": 1}");
    json_decref(e);

    /* A repeat: the count, by PATCH; no second POST, no second Event. */
    ck_assert_int_eq(events_record(ev, job, "TaskNotFound", "no task", &err), 0);
    ck_assert_int_eq(count_of(name), 2);
    ck_assert_int_eq(events_record(ev, job, "TaskNotFound", "no task", &err), 0);
    ck_assert_int_eq(count_of(name), 3);
    ck_assert_int_eq(apitest_count(&api, "POST", EVENTS_PATH), 1);
    ck_assert_int_eq(apitest_count(&api, "PATCH", EVENTS_PATH "/j1.3b1d57620e2abc2e"), 2);
    ck_assert_uint_eq(event_count(), 1);

    /* Another message: another Event. */
    ck_assert_int_eq(events_record(ev, job, "TaskNotFound", "another task", &err), 0);
    ck_assert_uint_eq(event_count(), 2);
    ck_assert_int_eq(apitest_count(&api, "POST", EVENTS_PATH), 2);

    events_get_stats(ev, &st);
    ck_assert_uint_eq(st.created, 2);
    ck_assert_uint_eq(st.updated, 2);
    ck_assert_uint_eq(st.rate_limited, 0);
    ck_assert_uint_eq(st.failed, 0);
    ck_assert_uint_eq(st.jobs, 1);
    events_destroy(ev);
    json_decref(job);
}
END_TEST

START_TEST(test_rate_limit_per_job)
{
    json_t *job = tu_json(JOB_TEXT);
    json_t *other = tu_json("{\"metadata\": {\"name\": \"j2\", \"namespace\": \"ns1\","
                            " \"uid\": \"uid-2\"}}");
    struct events *ev = recorder(NULL);
    struct events_stats st;
    struct wh_error err = {0, ""};
    char msg[32];

    /* A burst of 10, new Events and repeats alike. */
    for (int i = 0; i < 8; i++) {
        snprintf(msg, sizeof(msg), "message %d", i);
        ck_assert_int_eq(events_record(ev, job, "Conflict", msg, &err), 0);
    }
    ck_assert_int_eq(events_record(ev, job, "Conflict", "message 0", &err), 0);
    ck_assert_int_eq(events_record(ev, job, "Conflict", "message 0", &err), 0);
    ck_assert_int_eq(events_record(ev, job, "Conflict", "message 8", &err), WH_DECLINED);
    ck_assert_int_eq(events_record(ev, job, "Conflict", "message 0", &err), WH_DECLINED);
    ck_assert_uint_eq(event_count(), 8);
    /* Another Job has its own bucket. */
    ck_assert_int_eq(events_record(ev, other, "Conflict", "message 0", &err), 0);
    ck_assert_uint_eq(event_count(), 9);

    /* One token back per 5 minutes. */
    fake_now += 299999;
    ck_assert_int_eq(events_record(ev, job, "Conflict", "message 8", &err), WH_DECLINED);
    fake_now += 1;
    ck_assert_int_eq(events_record(ev, job, "Conflict", "message 8", &err), 0);
    ck_assert_int_eq(events_record(ev, job, "Conflict", "message 9", &err), WH_DECLINED);
    ck_assert_uint_eq(event_count(), 10);
    /* Refilled to the burst and no further. */
    fake_now += 100 * 300000LL;
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(events_record(ev, job, "Conflict", "message 1", &err), 0);
    ck_assert_int_eq(events_record(ev, job, "Conflict", "message 1", &err), WH_DECLINED);

    events_get_stats(ev, &st);
    ck_assert_uint_eq(st.created, 10);
    ck_assert_uint_eq(st.updated, 12);
    ck_assert_uint_eq(st.rate_limited, 5);
    events_destroy(ev);
    json_decref(other);
    json_decref(job);
}
END_TEST

/* An Event of that name already exists (a restarted leader): GET it, count on. */
START_TEST(test_conflict_on_create)
{
    json_t *job = tu_json(JOB_TEXT);
    json_t *stored = apitest_load(
        &api,
        "{\"apiVersion\": \"v1\", \"kind\": \"Event\", \"metadata\": {\"name\":"
        " \"j1.3b1d57620e2abc2e\", \"namespace\": \"ns1\"}, \"reason\": \"TaskNotFound\","
        " \"message\": \"no task\", \"type\": \"Warning\", \"count\": 5}");
    struct events *ev = recorder(NULL);
    struct events_stats st;
    struct wh_error err = {0, ""};

    apitest_clear_requests(&api);
    ck_assert_int_eq(events_record(ev, job, "TaskNotFound", "no task", &err), 0);
    ck_assert_int_eq(count_of("j1.3b1d57620e2abc2e"), 6);
    ck_assert_int_eq(apitest_count(&api, "POST", EVENTS_PATH), 1);
    ck_assert_int_eq(apitest_count(&api, "GET", EVENTS_PATH "/j1.3b1d57620e2abc2e"), 2);
    ck_assert_int_eq(apitest_count(&api, "PATCH", EVENTS_PATH "/j1.3b1d57620e2abc2e"), 1);
    /* Known now: the next repeat is one PATCH. */
    apitest_clear_requests(&api);
    ck_assert_int_eq(events_record(ev, job, "TaskNotFound", "no task", &err), 0);
    ck_assert_int_eq(count_of("j1.3b1d57620e2abc2e"), 7);
    ck_assert_int_eq(apitest_count(&api, "POST", EVENTS_PATH), 0);
    ck_assert_int_eq(apitest_count(&api, "PATCH", EVENTS_PATH "/j1.3b1d57620e2abc2e"), 1);

    /* Forgotten (OnJobDelete): found again with a 409 and a GET. */
    events_forget(ev, "uid-1");
    events_get_stats(ev, &st);
    ck_assert_uint_eq(st.jobs, 0);
    ck_assert_int_eq(events_record(ev, job, "TaskNotFound", "no task", &err), 0);
    ck_assert_int_eq(count_of("j1.3b1d57620e2abc2e"), 8);

    /* Expired (deleted): the PATCH finds nothing, so it is created again. */
    ck_assert_int_eq(
        apitest_call(&api, "DELETE", EVENTS_PATH "/j1.3b1d57620e2abc2e", NULL, true, NULL), 200);
    ck_assert_int_eq(events_record(ev, job, "TaskNotFound", "no task", &err), 0);
    ck_assert_int_eq(count_of("j1.3b1d57620e2abc2e"), 1);
    events_get_stats(ev, &st);
    ck_assert_uint_eq(st.created, 1);
    ck_assert_uint_eq(st.updated, 3);
    events_destroy(ev);
    json_decref(stored);
    json_decref(job);
}
END_TEST

START_TEST(test_server_errors)
{
    json_t *job = tu_json(JOB_TEXT);
    struct events *ev = recorder(NULL);
    struct events_stats st;
    struct wh_error err = {0, ""};
    struct tu_stderr cap;
    char *log;

    /* One 500: retried, created. */
    apitest_fault(&api,
                  "{\"method\": \"POST\", \"path_regex\": \"/events$\", \"status\": 500,"
                  " \"reason\": \"InternalError\", \"message\": \"etcd down\", \"count\": 1}");
    ck_assert_int_eq(events_record(ev, job, "TaskNotFound", "no task", &err), 0);
    ck_assert_int_eq(apitest_count(&api, "POST", EVENTS_PATH), 2);
    ck_assert_int_eq(count_of("j1.3b1d57620e2abc2e"), 1);

    /* 500 for good: dropped after one retry, with a log line; nothing stored. */
    apitest_fault(&api,
                  "{\"method\": \"POST\", \"path_regex\": \"/events$\", \"status\": 500,"
                  " \"reason\": \"InternalError\", \"message\": \"etcd down\","
                  " \"count\": -1}");
    apitest_clear_requests(&api);
    tu_stderr_begin(&cap);
    ck_assert_int_eq(events_record(ev, job, "Conflict", "two volumes", &err), WH_EAPI);
    log = tu_stderr_end(&cap);
    ck_assert_str_eq(err.msg, "InternalError: etcd down");
    ck_assert_int_eq(apitest_count(&api, "POST", EVENTS_PATH), 2);
    ck_assert_uint_eq(event_count(), 1);
    ck_assert_ptr_nonnull(strstr(log,
                                 "\"msg\":\"events: not posted\",\"job\":\"ns1/j1\","
                                 "\"uid\":\"uid-1\",\"event\":\"j1."));
    ck_assert_ptr_nonnull(strstr(log,
                                 "\"reason\":\"Conflict\",\"rc\":\"api error\","
                                 "\"err\":\"InternalError: etcd down\"}"));
    free(log);
    events_get_stats(ev, &st);
    ck_assert_uint_eq(st.created, 1);
    ck_assert_uint_eq(st.failed, 1);
    events_destroy(ev);
    json_decref(job);
}
END_TEST

/* Three diagnostics for a stalled API server, recorded with cfg's clock: the first POST
 * gives up at the budget, and the rest of the call is dropped. */
static void check_budget_spent(const struct events_config *cfg)
{
    json_t *job = tu_json(JOB_TEXT);
    struct events *ev = recorder(cfg);
    struct diagnostics d;
    struct events_stats st;
    struct tu_stderr cap;

    diagnose_init(&d);
    diagnose_add(&d, DIAGNOSE_TASK_NOT_FOUND, false, "pytorch", "first");
    diagnose_add(&d, DIAGNOSE_TASK_NOT_FOUND, false, "pytorch", "second");
    diagnose_add(&d, DIAGNOSE_TASK_NOT_FOUND, false, "pytorch", "third");
    apitest_fault(&api,
                  "{\"method\": \"POST\", \"path_regex\": \"/events$\", \"delay_ms\": 3000,"
                  " \"count\": -1}");
    tu_stderr_begin(&cap);
    ck_assert_uint_eq(events_record_diagnostics(ev, job, &d), 0);
    free(tu_stderr_end(&cap));
    events_get_stats(ev, &st);
    ck_assert_uint_eq(st.failed, 1);
    ck_assert_uint_eq(st.rate_limited, 2);
    ck_assert_int_eq(apitest_count(&api, "POST", EVENTS_PATH), 1);
    events_destroy(ev);
    json_decref(job);
}

/* A stalled API server: the call gives up at its budget and drops the rest. */
START_TEST(test_budget)
{
    struct events_config cfg = {
        .instance = "replica-0", .budget_ms = 300, .request_timeout_ms = 10000};

    check_budget_spent(&cfg);
}
END_TEST

/* A POST that timed out at the budget is not tried again, however the clocks round:
 * curl may give up just before the recorder's clock reaches the deadline (here a clock
 * that stands still), and a second try would reach the slow server all the same. */
START_TEST(test_budget_timeout_not_retried)
{
    json_t *job = tu_json(JOB_TEXT);
    struct events_config cfg = {.instance = "replica-0",
                                .clock_ms = fake_clock,
                                .budget_ms = 300,
                                .request_timeout_ms = 10000};
    struct events *ev = recorder(&cfg);
    struct wh_error err = {0, ""};
    struct tu_stderr cap;
    char *log;

    apitest_fault(&api,
                  "{\"method\": \"POST\", \"path_regex\": \"/events$\", \"delay_ms\": 3000,"
                  " \"count\": -1}");
    tu_stderr_begin(&cap);
    ck_assert_int_eq(events_record(ev, job, "Conflict", "two volumes", &err), WH_ETIMEOUT);
    log = tu_stderr_end(&cap);
    free(log);
    ck_assert_int_eq(apitest_count(&api, "POST", EVENTS_PATH), 1);
    events_destroy(ev);
    json_decref(job);
}
END_TEST

/* ... nor is the call's next Event posted: that timeout spent the budget of the whole
 * call, whatever the clock says is left (it stands still here; in CI's test_budget
 * curl gave up a millisecond early and the second Event's POST failed too). */
START_TEST(test_budget_spent_for_the_rest)
{
    struct events_config cfg = {.instance = "replica-0",
                                .clock_ms = fake_clock,
                                .budget_ms = 300,
                                .request_timeout_ms = 10000};

    check_budget_spent(&cfg);
}
END_TEST

/* diagnose_job's results, each under its reason; the same list again only counts. */
START_TEST(test_diagnostics)
{
    json_t *job = tu_json(
        "{\"apiVersion\": \"batch.volcano.sh/v1alpha1\", \"kind\": \"Job\", \"metadata\":"
        " {\"name\": \"pt\", \"namespace\": \"ns1\", \"uid\": \"uid-pt\"}, \"spec\":"
        " {\"plugins\": {\"pytorch\": [\"--master=boss\"]}, \"tasks\": [{\"name\": \"master\","
        " \"replicas\": 1, \"template\": {\"spec\": {\"containers\": [{\"name\": \"c\"}]}}},"
        " {\"name\": \"worker\", \"replicas\": 2, \"template\": {\"spec\": {\"containers\":"
        " [{\"name\": \"c\"}]}}}]}}");
    struct events *ev = recorder(NULL);
    struct diagnostics d;
    char name[300];
    json_t *e;

    ck_assert_int_eq(diagnose_job(job, &d), 0);
    ck_assert_uint_eq(d.n, 1);
    ck_assert_uint_eq(events_record_diagnostics(ev, job, &d), 1);
    events_name(name, sizeof(name), "pt", "TaskNotFound", d.items[0].message);
    e = get_event(name);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(json_string_value(json_object_get(e, "reason")), "TaskNotFound");
    ck_assert_str_eq(json_string_value(json_object_get(e, "message")),
                     "pytorch plugin: no task named \"boss\" (--master), so no pod gets "
                     "MASTER_ADDR, MASTER_PORT, WORLD_SIZE or RANK: name the master task with "
                     "--master in spec.plugins.pytorch, or rename the task");
    json_decref(e);
    ck_assert_uint_eq(events_record_diagnostics(ev, job, &d), 1);
    ck_assert_int_eq(count_of(name), 2);
    ck_assert_uint_eq(event_count(), 1);
    /* Nothing to say: no request, no record. */
    diagnose_init(&d);
    events_forget_all(ev);
    apitest_clear_requests(&api);
    ck_assert_uint_eq(events_record_diagnostics(ev, job, &d), 0);
    ck_assert_uint_eq(apitest_total(&api), 0);
    events_destroy(ev);
    json_decref(job);
}
END_TEST

/*
 * events_diagnose_job with the cache's Job, which has no containers: the whole Job is
 * read, so ray's containers are found (no ContainerNotFound) and pytorch's missing
 * master task is told; once per resourceVersion.
 */
START_TEST(test_diagnose_job)
{
    json_t *stored = apitest_load(
        &api,
        "{\"apiVersion\": \"batch.volcano.sh/v1alpha1\", \"kind\": \"Job\", \"metadata\":"
        " {\"name\": \"rp\", \"namespace\": \"ns1\"}, \"spec\": {\"plugins\":"
        " {\"ray\": [], \"pytorch\": [\"--master=boss\", \"--worker=worker\"]},"
        " \"tasks\": [{\"name\": \"head\", \"replicas\": 1, \"template\": {\"spec\":"
        " {\"containers\": [{\"name\": \"head\", \"image\": \"ray\"}]}}},"
        " {\"name\": \"worker\", \"replicas\": 2, \"template\": {\"spec\":"
        " {\"containers\": [{\"name\": \"worker\", \"image\": \"ray\"}]}}}]}}");
    json_t *kept = cache_kept_job(stored);
    json_t *other;
    json_t *updated = NULL;
    json_t *reqs;
    char *text;
    struct events *ev = recorder(NULL);
    struct wh_error err = {0, ""};
    json_t *list = NULL;
    json_t *e;
    char name[300];
    char path[256];

    text = json_dumps(kept, JSON_COMPACT);
    ck_assert_ptr_null(strstr(text, "containers")); /* what the cache keeps */
    free(text);
    apitest_clear_requests(&api);
    ck_assert_int_eq(events_diagnose_job(ev, kept, &err), 0);
    ck_assert_int_eq(
        apitest_count(&api, "GET", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns1/jobs/rp"), 1);
    reqs = apitest_requests(&api);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(reqs, 0), "query")),
                     "resourceVersion=0");
    json_decref(reqs);
    ck_assert_int_eq(apitest_call(&api, "GET", EVENTS_PATH, NULL, true, &list), 200);
    ck_assert_uint_eq(json_array_size(json_object_get(list, "items")), 1);
    e = json_array_get(json_object_get(list, "items"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(e, "reason")), "TaskNotFound");
    ck_assert_str_eq(json_string_value(json_object_get(e, "message")),
                     "pytorch plugin: no task named \"boss\" (--master), so no pod gets "
                     "MASTER_ADDR, MASTER_PORT, WORLD_SIZE or RANK: name the master task with "
                     "--master in spec.plugins.pytorch, or rename the task");
    snprintf(name, sizeof(name), "%s",
             json_string_value(json_object_get(json_object_get(e, "metadata"), "name")));
    json_decref(list);

    /* The same version again (a resync): nothing asked, nothing posted. */
    apitest_clear_requests(&api);
    ck_assert_int_eq(events_diagnose_job(ev, kept, &err), WH_DECLINED);
    ck_assert_uint_eq(apitest_total(&api), 0);

    /* A new version: read and told again, which counts on the same Event. */
    snprintf(path, sizeof(path), "/apis/batch.volcano.sh/v1alpha1/namespaces/ns1/jobs/rp");
    json_object_set_new(json_object_get(stored, "metadata"), "annotations",
                        json_pack("{s:s}", "touched", "1"));
    text = json_dumps(stored, JSON_COMPACT);
    ck_assert_int_eq(apitest_call(&api, "PUT", path, text, true, &updated), 200);
    free(text);
    json_decref(kept);
    kept = cache_kept_job(updated);
    json_decref(updated);
    ck_assert_int_eq(events_diagnose_job(ev, kept, &err), 0);
    ck_assert_int_eq(count_of(name), 2);
    ck_assert_uint_eq(event_count(), 1);

    /* Another uid under that name (recreated): left to its own run. */
    other = json_deep_copy(kept);
    json_object_set_new(json_object_get(other, "metadata"), "uid", json_string("old-uid"));
    json_object_set_new(json_object_get(other, "metadata"), "resourceVersion", json_string("1"));
    ck_assert_int_eq(events_diagnose_job(ev, other, &err), WH_DECLINED);
    ck_assert_int_eq(count_of(name), 2);
    json_decref(other);

    /* No such Job: the GET's error. */
    other = tu_json("{\"metadata\": {\"name\": \"gone\", \"namespace\": \"ns1\","
                    " \"uid\": \"u\", \"resourceVersion\": \"3\"}}");
    ck_assert_int_eq(events_diagnose_job(ev, other, &err), WH_ENOTFOUND);
    json_decref(other);
    other = tu_json("{\"metadata\": {\"name\": \"gone\", \"namespace\": \"ns1\","
                    " \"uid\": \"u\"}}");
    ck_assert_int_eq(events_diagnose_job(ev, other, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "events: job without namespace, name, uid or resourceVersion");
    json_decref(other);
    events_destroy(ev);
    json_decref(kept);
    json_decref(stored);
}
END_TEST

/*
 * With the Jobs cache, whose entry for the Job's version holds the diagnostics made
 * from the full Job when it was stored: no GET, the same Event; a version the cache
 * does not hold is read as before.
 */
START_TEST(test_diagnose_job_from_cache)
{
    json_t *stored = apitest_load(
        &api,
        "{\"apiVersion\": \"batch.volcano.sh/v1alpha1\", \"kind\": \"Job\", \"metadata\":"
        " {\"name\": \"rp\", \"namespace\": \"ns1\"}, \"spec\": {\"plugins\":"
        " {\"ray\": [], \"pytorch\": [\"--master=boss\", \"--worker=worker\"]},"
        " \"tasks\": [{\"name\": \"head\", \"replicas\": 1, \"template\": {\"spec\":"
        " {\"containers\": [{\"name\": \"head\", \"image\": \"ray\"}]}}},"
        " {\"name\": \"worker\", \"replicas\": 2, \"template\": {\"spec\":"
        " {\"containers\": [{\"name\": \"worker\", \"image\": \"ray\"}]}}}]}}");
    struct cache *cache = cache_create();
    struct events_config cfg = {.instance = "replica-0", .clock_ms = fake_clock, .cache = cache};
    struct events *ev;
    struct wh_error err = {0, ""};
    json_t *kept = NULL;
    json_t *newer;
    json_t *list = NULL;
    json_t *e;
    char *text;
    char name[300];

    ck_assert_ptr_nonnull(cache);
    ev = recorder(&cfg);
    ck_assert_int_eq(cache_put(cache, stored), 0);
    ck_assert_int_eq(cache_get(cache, "ns1", "rp", &kept), 0);
    text = json_dumps(kept, JSON_COMPACT);
    ck_assert_ptr_null(strstr(text, "containers")); /* what the cache keeps */
    free(text);

    apitest_clear_requests(&api);
    ck_assert_int_eq(events_diagnose_job(ev, kept, &err), 0);
    ck_assert_int_eq(
        apitest_count(&api, "GET", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns1/jobs/rp"), 0);
    ck_assert_int_eq(apitest_count(&api, "POST", EVENTS_PATH), 1);
    ck_assert_uint_eq(apitest_total(&api), 1);
    ck_assert_int_eq(apitest_call(&api, "GET", EVENTS_PATH, NULL, true, &list), 200);
    ck_assert_uint_eq(json_array_size(json_object_get(list, "items")), 1);
    e = json_array_get(json_object_get(list, "items"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(e, "reason")), "TaskNotFound");
    ck_assert_str_eq(json_string_value(json_object_get(e, "message")),
                     "pytorch plugin: no task named \"boss\" (--master), so no pod gets "
                     "MASTER_ADDR, MASTER_PORT, WORLD_SIZE or RANK: name the master task with "
                     "--master in spec.plugins.pytorch, or rename the task");
    ck_assert_int_eq(json_integer_value(json_object_get(e, "count")), 1);
    snprintf(name, sizeof(name), "%s",
             json_string_value(json_object_get(json_object_get(e, "metadata"), "name")));
    json_decref(list);

    /* The same version again: told already, nothing asked. */
    apitest_clear_requests(&api);
    ck_assert_int_eq(events_diagnose_job(ev, kept, &err), WH_DECLINED);
    ck_assert_uint_eq(apitest_total(&api), 0);

    /* A version the cache does not hold (it still has "rv"): one GET, as without a cache;
     * the API server has the stored version, so the same Event is counted. */
    newer = json_deep_copy(kept);
    json_object_set_new(json_object_get(newer, "metadata"), "resourceVersion",
                        json_string("999999"));
    ck_assert_int_eq(events_diagnose_job(ev, newer, &err), 0);
    ck_assert_int_eq(
        apitest_count(&api, "GET", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns1/jobs/rp"), 1);
    ck_assert_int_eq(count_of(name), 2);
    ck_assert_uint_eq(event_count(), 1);
    json_decref(newer);

    events_destroy(ev);
    cache_destroy(cache);
    json_decref(kept);
    json_decref(stored);
}
END_TEST

START_TEST(test_cap_and_bad_input)
{
    struct events_config cfg = {.instance = "replica-0", .clock_ms = fake_clock, .max_jobs = 2};
    struct events *ev = recorder(&cfg);
    struct events_stats st;
    struct wh_error err = {0, ""};
    const char *jobs[] = {
        "{\"metadata\": {\"name\": \"a\", \"namespace\": \"ns1\", \"uid\": \"u-a\"}}",
        "{\"metadata\": {\"name\": \"b\", \"namespace\": \"ns1\", \"uid\": \"u-b\"}}",
        "{\"metadata\": {\"name\": \"c\", \"namespace\": \"ns1\", \"uid\": \"u-c\"}}",
    };
    json_t *bad;

    for (size_t i = 0; i < 3; i++) {
        json_t *j = tu_json(jobs[i]);

        ck_assert_int_eq(events_record(ev, j, "Conflict", "x", &err), 0);
        json_decref(j);
    }
    events_get_stats(ev, &st);
    ck_assert_uint_eq(st.jobs, 2);
    events_forget(ev, "u-c");
    events_forget(ev, "no-such-uid");
    events_get_stats(ev, &st);
    ck_assert_uint_eq(st.jobs, 1);

    apitest_clear_requests(&api);
    bad = tu_json("{\"metadata\": {\"name\": \"a\", \"namespace\": \"ns1\"}}");
    ck_assert_int_eq(events_record(ev, bad, "Conflict", "x", &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "events: job without namespace, name or uid");
    json_decref(bad);
    bad = tu_json(jobs[0]);
    ck_assert_int_eq(events_record(ev, bad, "", "x", &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "events: reason must be 1-128 bytes");
    json_decref(bad);
    ck_assert_uint_eq(apitest_total(&api), 0);
    events_get_stats(ev, &st);
    ck_assert_uint_eq(st.jobs, 1);
    events_destroy(ev);
    events_destroy(NULL);
}
END_TEST

static Suite *events_suite(void)
{
    Suite *s = suite_create("events");
    TCase *pure = tcase_create("pure");
    TCase *tc = tcase_create("apiserver");

    tcase_add_test(pure, test_name);
    suite_add_tcase(s, pure);
    tcase_add_checked_fixture(tc, api_setup, api_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_created_once_then_counted);
    tcase_add_test(tc, test_rate_limit_per_job);
    tcase_add_test(tc, test_conflict_on_create);
    tcase_add_test(tc, test_server_errors);
    tcase_add_test(tc, test_budget);
    tcase_add_test(tc, test_budget_timeout_not_retried);
    tcase_add_test(tc, test_budget_spent_for_the_rest);
    tcase_add_test(tc, test_diagnostics);
    tcase_add_test(tc, test_diagnose_job);
    tcase_add_test(tc, test_diagnose_job_from_cache);
    tcase_add_test(tc, test_cap_and_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(events_suite());
}
