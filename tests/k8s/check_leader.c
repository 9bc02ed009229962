/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_leader.c - k8s/leader.c: the MicroTime format and parser, then
 * leader election against tests/apiserver.py (a child process on a free
 * loopback port, plain HTTP): create, renew, an unexpired lease of another
 * identity is left alone, takeover after expiry, release on stop, lost races
 * (409 AlreadyExists / Conflict), the renew deadline, a stolen lease.
 *
 * Lease timing is the smallest client-go allows in whole seconds: duration 3 s,
 * renew deadline 2 s, retry period 1 s. Waits poll with generous deadlines;
 * no assertion is about how long something took.
 * Runs from the repository root (TEST_APISERVER overrides tests/apiserver.py).
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "k8s/client.h"
#include "k8s/leader.h"
#include "tests/apitest.h"
#include "tests/testutil.h"

#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/ns1/leases/volcano-plugin-webhook"

static struct apitest api; /* per test: no token, plain HTTP */
static struct k8s_client *kc;

/* ---- callback record ---- */

static pthread_mutex_t cb_mu = PTHREAD_MUTEX_INITIALIZER;
static char cb_log[64]; /* one character per call: 'T' leading, 'F' not, per identity slot */
static size_t cb_n;

static void on_change(void *userdata, bool leading)
{
    const char *tag = userdata;

    pthread_mutex_lock(&cb_mu);
    if (cb_n + 2 < sizeof(cb_log)) {
        cb_log[cb_n++] = tag[0];
        cb_log[cb_n++] = leading ? 'T' : 'F';
        cb_log[cb_n] = '\0';
    }
    pthread_mutex_unlock(&cb_mu);
}

/* The callback runs after leader_is_leading turns: wait for it (up to 10 s), then compare. */
static void cb_expect(const char *want)
{
    char got[sizeof(cb_log)];

    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&cb_mu);
        snprintf(got, sizeof(got), "%s", cb_log);
        pthread_mutex_unlock(&cb_mu);
        if (strcmp(got, want) == 0)
            break;
        apitest_nap(50);
    }
    ck_assert_str_eq(got, want);
}

/* ---- the test API server ---- */

static void setup(void)
{
    const struct apitest_opts o = {.token = NULL};

    apitest_start_opts(&api, &o);
    kc = apitest_client(&api);
    pthread_mutex_lock(&cb_mu);
    cb_n = 0;
    cb_log[0] = '\0';
    pthread_mutex_unlock(&cb_mu);
}

static void teardown(void)
{
    k8s_client_destroy(kc);
    kc = NULL;
    apitest_stop(&api);
}

static struct leader *start(const char *identity)
{
    struct leader_config cfg = {"ns1", "volcano-plugin-webhook", identity, 3, 2, 1};
    struct leader *l = NULL;
    struct wh_error err = {0, ""};

    ck_assert_int_eq(leader_start(&l, kc, &cfg, on_change, (void *)identity, &err), 0);
    return l;
}

/* Wait (at most 15 s) until leader_is_leading(l) == want. */
static void wait_leading(struct leader *l, bool want)
{
    for (int i = 0; i < 1500; i++) {
        if (leader_is_leading(l) == want)
            return;
        apitest_nap(10);
    }
    ck_abort_msg("leader_is_leading never became %d", want);
}

/* The Lease's spec from the server (new reference). */
static json_t *lease_spec(void)
{
    json_t *lease = NULL;
    json_t *spec;

    ck_assert_int_eq(apitest_call(&api, "GET", LEASE_PATH, NULL, true, &lease), 200);
    spec = json_incref(json_object_get(lease, "spec"));
    json_decref(lease);
    ck_assert_ptr_nonnull(spec);
    return spec;
}

static const char *sget(const json_t *spec, const char *key)
{
    const char *s = json_string_value(json_object_get(spec, key));

    ck_assert_msg(s != NULL, "spec.%s missing", key);
    return s;
}

static long long iget(const json_t *spec, const char *key)
{
    ck_assert_msg(json_is_integer(json_object_get(spec, key)), "spec.%s not an integer", key);
    return json_integer_value(json_object_get(spec, key));
}

/* Create the Lease held by holder, renewed now, with transitions. */
static void make_lease(const char *holder, int transitions)
{
    char body[1024];
    char now_s[32];
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    leader_format_microtime(now_s, sizeof(now_s), (long long)ts.tv_sec, ts.tv_nsec / 1000);
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
             "\"metadata\":{\"name\":\"volcano-plugin-webhook\",\"namespace\":\"ns1\"},"
             "\"spec\":{\"holderIdentity\":\"%s\",\"leaseDurationSeconds\":3,"
             "\"acquireTime\":\"2026-01-02T03:04:05.000006Z\",\"renewTime\":\"%s\","
             "\"leaseTransitions\":%d}}",
             holder, now_s, transitions);
    apitest_ctl_expect(&api, "POST", "/_test/objects", body, 201);
}

static void fault(const char *method, const char *regex, int status, const char *reason, int count)
{
    char body[512];

    snprintf(body, sizeof(body),
             "{\"method\":\"%s\",\"path_regex\":\"%s\",\"status\":%d,\"reason\":\"%s\","
             "\"message\":\"injected\",\"count\":%d}",
             method, regex, status, reason, count);
    apitest_fault(&api, body);
}

/* ---- MicroTime ---- */

START_TEST(test_microtime_format)
{
    char buf[40];

    leader_format_microtime(buf, sizeof(buf), 0, 0);
    ck_assert_str_eq(buf, "1970-01-01T00:00:00.000000Z");
    leader_format_microtime(buf, sizeof(buf), 1796011506LL, 123456);
    ck_assert_str_eq(buf, "2026-11-30T04:05:06.123456Z");
    leader_format_microtime(buf, sizeof(buf), 1709251199LL, 999999);
    ck_assert_str_eq(buf, "2024-02-29T23:59:59.999999Z");
    leader_format_microtime(buf, sizeof(buf), 253402300799LL, 7);
    ck_assert_str_eq(buf, "9999-12-31T23:59:59.000007Z");
    leader_format_microtime(buf, sizeof(buf), -1, 5);
    ck_assert_str_eq(buf, "1969-12-31T23:59:59.000005Z");
    leader_format_microtime(buf, sizeof(buf), 1796011506LL, 1000000); /* out of range → 0 */
    ck_assert_str_eq(buf, "2026-11-30T04:05:06.000000Z");
    leader_format_microtime(buf, 28, 1796011506LL, 42); /* exactly fits */
    ck_assert_str_eq(buf, "2026-11-30T04:05:06.000042Z");
    ck_assert_uint_eq(strlen(buf), 27);
    leader_format_microtime(buf, 10, 1796011506LL, 42); /* truncated, terminated */
    ck_assert_str_eq(buf, "2026-11-3");
}
END_TEST

START_TEST(test_microtime_parse)
{
    static const char *const bad[] = {
        "",
        "2026-11-30T04:05:06Z",         /* no fraction */
        "2026-11-30T04:05:06.12345Z",   /* five digits */
        "2026-11-30T04:05:06.1234567Z", /* seven digits */
        "2026-11-30T04:05:06.123456+00:00",
        "2026-11-30T04:05:06.123456",
        "2026-11-30t04:05:06.123456Z",
        "2026-11-30T04:05:06.123456z",
        "2026-11-30 04:05:06.123456Z",
        " 2026-11-30T04:05:06.123456Z",
        "2026-11-30T04:05:06.123456Z ",
        "2026-13-30T04:05:06.123456Z",
        "2026-00-30T04:05:06.123456Z",
        "2026-11-31T04:05:06.123456Z",
        "2026-02-29T04:05:06.123456Z", /* not a leap year */
        "1900-02-29T04:05:06.123456Z",
        "2026-11-00T04:05:06.123456Z",
        "2026-11-30T24:05:06.123456Z",
        "2026-11-30T04:60:06.123456Z",
        "2026-11-30T04:05:60.123456Z", /* Go rejects leap seconds too */
        "2026-11-30T04:05:06.12345aZ",
        "+026-11-30T04:05:06.123456Z",
        "2026-1-030T04:05:06.123456Z",
        "2026/11/30T04:05:06.123456Z",
    };
    long long sec = 0;
    long usec = 0;

    ck_assert_int_eq(leader_parse_microtime("2026-11-30T04:05:06.123456Z", &sec, &usec), 0);
    ck_assert_int_eq(sec, 1796011506LL);
    ck_assert_int_eq(usec, 123456);
    ck_assert_int_eq(leader_parse_microtime("2024-02-29T23:59:59.999999Z", &sec, &usec), 0);
    ck_assert_int_eq(sec, 1709251199LL);
    ck_assert_int_eq(usec, 999999);
    ck_assert_int_eq(leader_parse_microtime("2000-02-29T00:00:00.000000Z", &sec, &usec), 0);
    ck_assert_int_eq(sec, 951782400LL);
    ck_assert_int_eq(leader_parse_microtime("1970-01-01T00:00:00.000000Z", &sec, &usec), 0);
    ck_assert_int_eq(sec, 0);
    ck_assert_int_eq(usec, 0);
    ck_assert_int_eq(leader_parse_microtime("2026-11-30T04:05:06.000001Z", NULL, NULL), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sec = 7;
        usec = 7;
        ck_assert_msg(leader_parse_microtime(bad[i], &sec, &usec) == WH_EINVAL, "accepted \"%s\"",
                      bad[i]);
        ck_assert_int_eq(sec, 7); /* untouched on error */
        ck_assert_int_eq(usec, 7);
    }
    ck_assert_int_eq(leader_parse_microtime(NULL, &sec, &usec), WH_EINVAL);
}
END_TEST

START_TEST(test_microtime_round_trip)
{
    static const long long secs[] = {
        0, 1, 59, 86399, 951782400LL, 1709251199LL, 1796011506LL, 4102444800LL, 253402300799LL};
    char buf[32];

    for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
        for (long usec = 0; usec < 1000000; usec += 142857) {
            long long s2 = -1;
            long u2 = -1;

            leader_format_microtime(buf, sizeof(buf), secs[i], usec);
            ck_assert_int_eq(leader_parse_microtime(buf, &s2, &u2), 0);
            ck_assert_int_eq(s2, secs[i]);
            ck_assert_int_eq(u2, usec);
        }
    }
}
END_TEST

START_TEST(test_bad_config)
{
    struct leader_config cfg = {"ns1", "volcano-plugin-webhook", "me", 15, 10, 2};
    struct leader *l = (struct leader *)&cfg;
    struct wh_error err = {0, ""};

    cfg.renew_deadline_s = 15;
    ck_assert_int_eq(leader_start(&l, kc, &cfg, NULL, NULL, &err), WH_EINVAL);
    ck_assert_ptr_null(l);
    ck_assert_str_eq(err.msg,
                     "leader election: want lease duration > renew deadline > retry "
                     "period > 0 (got 15s, 15s, 2s)");
    cfg.renew_deadline_s = 10;
    cfg.identity = "";
    ck_assert_int_eq(leader_start(&l, kc, &cfg, NULL, NULL, &err), WH_EINVAL);
    cfg.identity = "me";
    cfg.retry_period_s = 0;
    ck_assert_int_eq(leader_start(&l, kc, &cfg, NULL, NULL, &err), WH_EINVAL);
    leader_stop(NULL);
    ck_assert(!leader_is_leading(NULL));
}
END_TEST

/* ---- election ---- */

START_TEST(test_create_renew_release)
{
    struct leader *l = start("a");
    json_t *s1;
    json_t *s2 = NULL;
    json_t *s3;
    long long sec;
    long usec;

    wait_leading(l, true);
    cb_expect("aT");
    s1 = lease_spec();
    ck_assert_str_eq(sget(s1, "holderIdentity"), "a");
    ck_assert_int_eq(iget(s1, "leaseDurationSeconds"), 3);
    ck_assert_int_eq(iget(s1, "leaseTransitions"), 0);
    ck_assert_int_eq(leader_parse_microtime(sget(s1, "acquireTime"), &sec, &usec), 0);
    ck_assert_str_eq(sget(s1, "acquireTime"), sget(s1, "renewTime"));
    /* renewed every retry period: renewTime moves, the rest stays */
    for (int i = 0; i < 100; i++) {
        json_decref(s2);
        s2 = lease_spec();
        if (strcmp(sget(s2, "renewTime"), sget(s1, "renewTime")) != 0)
            break;
        apitest_nap(50);
    }
    ck_assert_str_ne(sget(s2, "renewTime"), sget(s1, "renewTime"));
    ck_assert_int_eq(leader_parse_microtime(sget(s2, "renewTime"), &sec, &usec), 0);
    ck_assert_str_eq(sget(s2, "acquireTime"), sget(s1, "acquireTime"));
    ck_assert_str_eq(sget(s2, "holderIdentity"), "a");
    ck_assert_int_eq(iget(s2, "leaseTransitions"), 0);
    ck_assert(leader_is_leading(l));

    leader_stop(l);
    cb_expect("aTaF");
    s3 = lease_spec();
    ck_assert_str_eq(sget(s3, "holderIdentity"), "");
    ck_assert_int_eq(iget(s3, "leaseDurationSeconds"), 1);
    ck_assert_int_eq(iget(s3, "leaseTransitions"), 0);
    ck_assert_str_eq(sget(s3, "acquireTime"), sget(s3, "renewTime"));
    ck_assert_int_eq(leader_parse_microtime(sget(s3, "renewTime"), &sec, &usec), 0);
    json_decref(s1);
    json_decref(s2);
    json_decref(s3);

    /* a released lease is free: the next candidate takes it at once, transitions + 1 */
    l = start("b");
    wait_leading(l, true);
    s1 = lease_spec();
    ck_assert_str_eq(sget(s1, "holderIdentity"), "b");
    ck_assert_int_eq(iget(s1, "leaseTransitions"), 1);
    ck_assert_int_eq(iget(s1, "leaseDurationSeconds"), 3);
    json_decref(s1);
    leader_stop(l);
    cb_expect("aTaFbTbF");
}
END_TEST

START_TEST(test_unexpired_then_takeover)
{
    struct leader *l;
    json_t *s;

    make_lease("other", 4);
    l = start("a");
    /* the lease was renewed "now" for 3 s: "a" must wait; check it holds back meanwhile */
    apitest_nap(1500);
    ck_assert(!leader_is_leading(l));
    s = lease_spec();
    ck_assert_str_eq(sget(s, "holderIdentity"), "other");
    json_decref(s);
    cb_expect("");
    /* "other" never renews: once 3 s have passed since "a" saw the record, "a" takes it */
    wait_leading(l, true);
    s = lease_spec();
    ck_assert_str_eq(sget(s, "holderIdentity"), "a");
    ck_assert_int_eq(iget(s, "leaseTransitions"), 5);
    ck_assert_int_eq(iget(s, "leaseDurationSeconds"), 3);
    ck_assert_str_ne(sget(s, "acquireTime"), "2026-01-02T03:04:05.000006Z");
    ck_assert_str_eq(sget(s, "acquireTime"), sget(s, "renewTime"));
    json_decref(s);
    leader_stop(l);
    cb_expect("aTaF");
}
END_TEST

/* A holder that keeps renewing is never displaced. */
START_TEST(test_renewing_holder_kept)
{
    struct leader *a = start("a");
    struct leader *b;
    json_t *s;

    wait_leading(a, true);
    b = start("b");
    for (int i = 0; i < 45; i++) { /* 4.5 s: longer than the lease duration */
        ck_assert(!leader_is_leading(b));
        ck_assert(leader_is_leading(a));
        apitest_nap(100);
    }
    s = lease_spec();
    ck_assert_str_eq(sget(s, "holderIdentity"), "a");
    ck_assert_int_eq(iget(s, "leaseTransitions"), 0);
    json_decref(s);
    /* a stops and releases: b takes over without waiting for expiry */
    leader_stop(a);
    wait_leading(b, true);
    s = lease_spec();
    ck_assert_str_eq(sget(s, "holderIdentity"), "b");
    ck_assert_int_eq(iget(s, "leaseTransitions"), 1);
    json_decref(s);
    leader_stop(b);
    cb_expect("aTaFbTbF");
}
END_TEST

START_TEST(test_create_race_lost)
{
    struct leader *l;
    json_t *log = NULL;
    size_t i;
    json_t *r;
    char seq[64] = "";

    /* the first CREATE answers 409 AlreadyExists: another candidate won that round */
    fault("POST", "/leases$", 409, "AlreadyExists", 1);
    apitest_clear_requests(&api);
    l = start("a");
    wait_leading(l, true);
    log = apitest_requests(&api);
    json_array_foreach(log, i, r) {
        size_t off = strlen(seq);

        if (i == 4)
            break;
        if (strstr(json_string_value(json_object_get(r, "path")), "/leases") != NULL)
            snprintf(seq + off, sizeof(seq) - off, "%s ",
                     json_string_value(json_object_get(r, "method")));
    }
    ck_assert_str_eq(seq, "GET POST GET POST ");
    json_decref(log);
    leader_stop(l);
    cb_expect("aTaF");
}
END_TEST

START_TEST(test_update_race_lost)
{
    struct leader *l;
    json_t *s;

    make_lease("", 2); /* released: free to take */
    fault("PUT", "/leases/", 409, "Conflict", 1);
    l = start("a");
    wait_leading(l, true);
    s = lease_spec();
    ck_assert_str_eq(sget(s, "holderIdentity"), "a");
    ck_assert_int_eq(iget(s, "leaseTransitions"), 3);
    json_decref(s);
    /* a Conflict on a renewal: read again, still ours, renew; no flapping */
    fault("PUT", "/leases/", 409, "Conflict", 1);
    apitest_nap(2500);
    ck_assert(leader_is_leading(l));
    cb_expect("aT");
    leader_stop(l);
}
END_TEST

START_TEST(test_two_candidates)
{
    struct leader *a = start("a");
    struct leader *b = start("b");
    int leaders = 0;
    json_t *s;

    for (int i = 0; i < 300; i++) {
        bool la = leader_is_leading(a);
        bool lb = leader_is_leading(b);

        ck_assert(!(la && lb));
        leaders = la + lb;
        if (leaders == 1 && i > 150)
            break;
        apitest_nap(10);
    }
    ck_assert_int_eq(leaders, 1);
    s = lease_spec();
    ck_assert_str_eq(sget(s, "holderIdentity"), leader_is_leading(a) ? "a" : "b");
    ck_assert_int_eq(iget(s, "leaseTransitions"), 0);
    json_decref(s);
    leader_stop(a);
    leader_stop(b);
}
END_TEST

START_TEST(test_renew_deadline)
{
    struct leader *l = start("a");
    json_t *s;

    wait_leading(l, true);
    /* the API fails: within the renew deadline the leader gives up */
    fault("", "/leases", 500, "InternalError", 1000);
    wait_leading(l, false);
    cb_expect("aTaF");
    apitest_ctl_expect(&api, "DELETE", "/_test/faults", NULL, 200);
    /* the record still names "a": it renews as its own holder */
    wait_leading(l, true);
    cb_expect("aTaFaT");
    s = lease_spec();
    ck_assert_str_eq(sget(s, "holderIdentity"), "a");
    ck_assert_int_eq(iget(s, "leaseTransitions"), 0);
    json_decref(s);
    leader_stop(l);
}
END_TEST

START_TEST(test_stolen_lease)
{
    struct leader *l = start("a");
    json_t *lease = NULL;
    char *body;

    wait_leading(l, true);
    ck_assert_int_eq(apitest_call(&api, "GET", LEASE_PATH, NULL, true, &lease), 200);
    json_object_set_new(json_object_get(lease, "spec"), "holderIdentity", json_string("thief"));
    body = json_dumps(lease, JSON_COMPACT);
    ck_assert_int_eq(apitest_call(&api, "PUT", LEASE_PATH, body, true, NULL), 200);
    free(body);
    json_decref(lease);
    wait_leading(l, false);
    cb_expect("aTaF");
    leader_stop(l);
    cb_expect("aTaF"); /* not leading: no second report, no release */
    lease = lease_spec();
    ck_assert_str_eq(sget(lease, "holderIdentity"), "thief");
    json_decref(lease);
}
END_TEST

static Suite *leader_suite(void)
{
    Suite *s = suite_create("leader");
    TCase *t = tcase_create("microtime");
    TCase *e = tcase_create("election");

    tcase_add_test(t, test_microtime_format);
    tcase_add_test(t, test_microtime_parse);
    tcase_add_test(t, test_microtime_round_trip);
    suite_add_tcase(s, t);
    tcase_add_checked_fixture(e, setup, teardown);
    tcase_set_timeout(e, 60);
    tcase_add_test(e, test_bad_config);
    tcase_add_test(e, test_create_renew_release);
    tcase_add_test(e, test_unexpired_then_takeover);
    tcase_add_test(e, test_renewing_holder_kept);
    tcase_add_test(e, test_create_race_lost);
    tcase_add_test(e, test_update_race_lost);
    tcase_add_test(e, test_two_candidates);
    tcase_add_test(e, test_renew_deadline);
    tcase_add_test(e, test_stolen_lease);
    suite_add_tcase(s, e);
    return s;
}

int main(void)
{
    int rc;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = tu_run(leader_suite());
    curl_global_cleanup();
    return rc;
}
