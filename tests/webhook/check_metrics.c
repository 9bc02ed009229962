/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_metrics.c - Prometheus text of webhook/metrics.c after known traffic, and the
 * process_* families read from /proc (checks that hold on any Linux).
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "certs/certwatch.h"
#include "plugins/objects.h"
#include "tests/testutil.h"
#include "webhook/metrics.h"
#include "webhook/metrics_internal.h"
#include "webhook/server.h"
#include "webhook/version.h"

static char *render(void (*collect)(void *, struct metric_writer *))
{
    size_t len = 0;
    char *text = metrics_render(collect, NULL, &len);

    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(strlen(text), len);
    return text;
}

#define assert_line(text, line)                                                                    \
    ck_assert_msg(strstr((text), "\n" line "\n") != NULL, "missing line: %s\n%s", line, (text))

START_TEST(counters_after_known_traffic)
{
    char build_info[128];
    char *text;

    metrics_reset();
    metrics_admission(200, METRICS_PATCHED, 0.0003); /* bucket le=0.0005 */
    metrics_admission(200, METRICS_PATCHED, 0.0003);
    metrics_admission(200, METRICS_UNCHANGED, 0.00005); /* le=0.0001 */
    metrics_admission(200, METRICS_DENIED, 0.002);      /* le=0.0025 */
    metrics_admission(400, METRICS_ERROR, 20);          /* past the last bound */
    metrics_admission(418, METRICS_ERROR, 0);           /* an unlisted code */
    metrics_inflight_add(3);
    metrics_inflight_add(-1);
    metrics_plugin_patch(0);
    metrics_plugin_patch(5);
    metrics_plugin_patch(5);
    metrics_plugin_patch(99); /* ignored */
    metrics_warnings(2);
    metric_counter_add(&certwatch_metrics.reloads_ok, 1);
    metric_counter_add(&certwatch_metrics.reloads_refused, 1);
    metric_counter_add(&certwatch_metrics.reloads_refused, 1);
    objects_count_op("Secret", "ensure", true);
    objects_count_op("Secret", "ensure", false);
    objects_count_op("NetworkPolicy", "delete", true);
    objects_count_op("Lease", "delete", false);
    atomic_fetch_add(&server_metrics.body_bytes, 4096);
    text = render(NULL);
    assert_line(text, "# TYPE webhook_admission_requests_total counter");
    assert_line(text, "webhook_admission_requests_total{code=\"200\",outcome=\"patched\"} 2");
    assert_line(text, "webhook_admission_requests_total{code=\"200\",outcome=\"unchanged\"} 1");
    assert_line(text, "webhook_admission_requests_total{code=\"200\",outcome=\"denied\"} 1");
    assert_line(text, "webhook_admission_requests_total{code=\"400\",outcome=\"error\"} 1");
    assert_line(text, "webhook_admission_requests_total{code=\"other\",outcome=\"error\"} 1");
    assert_line(text, "webhook_admission_duration_seconds_bucket{le=\"0.0001\"} 2");
    assert_line(text, "webhook_admission_duration_seconds_bucket{le=\"0.0005\"} 4");
    assert_line(text, "webhook_admission_duration_seconds_bucket{le=\"0.0025\"} 5");
    assert_line(text, "webhook_admission_duration_seconds_bucket{le=\"10\"} 5");
    assert_line(text, "webhook_admission_duration_seconds_bucket{le=\"+Inf\"} 6");
    assert_line(text, "webhook_admission_duration_seconds_count 6");
    assert_line(text, "webhook_admission_duration_seconds_sum 20.002650000");
    assert_line(text, "webhook_admission_in_flight 2");
    assert_line(text, "# TYPE webhook_http_body_bytes_in_flight gauge");
    assert_line(text, "webhook_http_body_bytes_in_flight 4096");
    assert_line(text, "webhook_plugin_patches_total{plugin=\"ssh\"} 1");
    assert_line(text, "webhook_plugin_patches_total{plugin=\"pytorch\"} 2");
    assert_line(text, "webhook_plugin_patches_total{plugin=\"ray\"} 0");
    assert_line(text, "webhook_admission_warnings_total 2");
    assert_line(text, "webhook_tls_reloads_total{result=\"ok\"} 1");
    assert_line(text, "webhook_tls_reloads_total{result=\"refused\"} 2");
    /* the commit the library was built from (webhook/version.c, "unknown" outside git) */
    snprintf(build_info, sizeof(build_info),
             "\nwebhook_build_info{version=\"0.1.0\",commit=\"%s\"} 1\n", version_commit);
    ck_assert_msg(strstr(text, build_info) != NULL, "missing: %s\n%s", build_info, text);
    ck_assert_str_ne(version_commit, "");
    assert_line(
        text, "webhook_reconcile_operations_total{kind=\"Secret\",op=\"ensure\",result=\"ok\"} 1");
    assert_line(
        text,
        "webhook_reconcile_operations_total{kind=\"Secret\",op=\"ensure\",result=\"error\"} 1");
    assert_line(
        text,
        "webhook_reconcile_operations_total{kind=\"NetworkPolicy\",op=\"delete\",result=\"ok\"} 1");
    assert_line(
        text,
        "webhook_reconcile_operations_total{kind=\"other\",op=\"delete\",result=\"error\"} 1");
    assert_line(
        text,
        "webhook_reconcile_operations_total{kind=\"ConfigMap\",op=\"ensure\",result=\"ok\"} 0");
    /* HELP/TYPE once per family. */
    ck_assert_ptr_null(strstr(strstr(text, "# TYPE webhook_tls_reloads_total") + 1,
                              "# TYPE webhook_tls_reloads_total"));
    free(text);
}
END_TEST

static void collect(void *ud, struct metric_writer *w)
{
    (void)ud;
    metric_write(w, "webhook_jobs_cached", "gauge", "Jobs in the cache.", NULL, 42);
    metric_write(w, "webhook_reconcile_errors_total", "counter", "Errors.", "kind=\"Secret\"", 3);
    metric_write(w, "webhook_reconcile_errors_total", "counter", "Errors.", "kind=\"Service\"", 1);
}

START_TEST(collect_callback_values)
{
    char *text;

    metrics_reset();
    text = render(collect);
    assert_line(text, "# HELP webhook_jobs_cached Jobs in the cache.");
    assert_line(text, "webhook_jobs_cached 42");
    assert_line(text, "webhook_reconcile_errors_total{kind=\"Secret\"} 3");
    assert_line(text, "webhook_reconcile_errors_total{kind=\"Service\"} 1");
    ck_assert_ptr_null(strstr(strstr(text, "# TYPE webhook_reconcile_errors_total") + 1,
                              "# TYPE webhook_reconcile_errors_total"));
    free(text);
}
END_TEST

/* The serving certificate's notAfter: absent until set (plain HTTP), then the last value
 * set, as an integer (no exponent), with its HELP and TYPE. */
START_TEST(tls_certificate_expiry_gauge)
{
    char *text;

    metrics_reset();
    text = render(NULL);
    ck_assert_ptr_null(strstr(text, "webhook_tls_certificate_expiry_timestamp_seconds"));
    free(text);
    metric_gauge_set(&certwatch_metrics.cert_expiry, 2051222400LL);
    metric_gauge_set(&certwatch_metrics.cert_expiry, 2855824496LL); /* a reload: the new pair's */
    text = render(NULL);
    assert_line(text,
                "# HELP webhook_tls_certificate_expiry_timestamp_seconds notAfter of the "
                "serving certificate in use, Unix seconds.");
    assert_line(text, "# TYPE webhook_tls_certificate_expiry_timestamp_seconds gauge");
    assert_line(text, "webhook_tls_certificate_expiry_timestamp_seconds 2855824496");
    ck_assert_ptr_null(strstr(text, "2051222400"));
    free(text);
    metrics_reset();
    text = render(NULL);
    ck_assert_ptr_null(strstr(text, "webhook_tls_certificate_expiry_timestamp_seconds"));
    free(text);
}
END_TEST

#define EXPIRY "webhook_tls_certificate_expiry_timestamp_seconds"

/* A reload thread sets the gauge while scrapes render it (run under TSan too): every
 * scrape sees one of the values set, never a torn or absent one. */
static void *set_expiry(void *arg)
{
    (void)arg;
    for (int i = 0; i < 2000; i++)
        metric_gauge_set(&certwatch_metrics.cert_expiry, i % 2 ? 2051222400LL : 2855824496LL);
    return NULL;
}

START_TEST(tls_certificate_expiry_concurrent)
{
    pthread_t t;

    metrics_reset();
    metric_gauge_set(&certwatch_metrics.cert_expiry, 2051222400LL);
    ck_assert_int_eq(pthread_create(&t, NULL, set_expiry, NULL), 0);
    for (int i = 0; i < 200; i++) {
        char *text = render(NULL);

        bool a = strstr(text, "\n" EXPIRY " 2051222400\n") != NULL;
        bool b = strstr(text, "\n" EXPIRY " 2855824496\n") != NULL;

        ck_assert_msg(a != b, "%s", text);
        free(text);
    }
    pthread_join(t, NULL);
}
END_TEST

static void *hammer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10000; i++)
        metrics_admission(200, METRICS_PATCHED, 0.001);
    return NULL;
}

START_TEST(concurrent_recording_loses_nothing)
{
    pthread_t t[4];
    char *text;

    metrics_reset();
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, NULL), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    text = render(NULL);
    assert_line(text, "webhook_admission_requests_total{code=\"200\",outcome=\"patched\"} 40000");
    assert_line(text, "webhook_admission_duration_seconds_count 40000");
    free(text);
}
END_TEST

/* The value of the one sample "name value" in text; fails when absent or repeated. */
static double sample(const char *text, const char *name)
{
    char key[96];
    const char *at;
    double v = -1;

    snprintf(key, sizeof(key), "\n%s ", name);
    at = strstr(text, key);
    ck_assert_msg(at != NULL, "no sample %s in\n%s", name, text);
    ck_assert_ptr_null(strstr(at + 1, key));
    ck_assert_int_eq(sscanf(at + strlen(key), "%lf", &v), 1);
    return v;
}

START_TEST(process_metrics_rendered_and_consistent)
{
    double now = (double)time(NULL);
    char *text;
    double fds, max_fds, rss, vsize, start, cpu;

    metrics_reset();
    text = render(NULL);
    assert_line(text, "# TYPE process_cpu_seconds_total counter");
    assert_line(text, "# TYPE process_resident_memory_bytes gauge");
    assert_line(text, "# TYPE process_virtual_memory_bytes gauge");
    assert_line(text, "# TYPE process_open_fds gauge");
    assert_line(text, "# TYPE process_max_fds gauge");
    assert_line(text, "# TYPE process_start_time_seconds gauge");
    cpu = sample(text, "process_cpu_seconds_total");
    rss = sample(text, "process_resident_memory_bytes");
    vsize = sample(text, "process_virtual_memory_bytes");
    fds = sample(text, "process_open_fds");
    max_fds = sample(text, "process_max_fds");
    start = sample(text, "process_start_time_seconds");
    ck_assert(cpu >= 0);
    ck_assert(rss > 0);
    ck_assert(vsize >= rss);
    ck_assert(fds > 0);
    ck_assert(fds <= max_fds);
    /* started within the last day, not in the future (ticks: 1/100 s; one second slack) */
    ck_assert_msg(start > now - 86400 && start <= now + 1, "start %f now %f", start, now);
    free(text);
}
END_TEST

/* Exact values where the test controls them: one more open file is one more fd, and the
 * limit is the soft RLIMIT_NOFILE. */
START_TEST(process_fds_follow_the_process)
{
    struct metrics_process before, after;
    struct rlimit old, lim;
    struct wh_error err = {0};
    int fd;

    ck_assert_int_eq(metrics_process_read(&before, &err), 0);
    fd = open("/dev/null", O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(metrics_process_read(&after, &err), 0);
    ck_assert_uint_eq(after.open_fds, before.open_fds + 1);
    close(fd);
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
    lim = old;
    lim.rlim_cur = 200 < old.rlim_max ? 200 : old.rlim_max;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &lim), 0);
    ck_assert_int_eq(metrics_process_read(&after, &err), 0);
    ck_assert_uint_eq(after.max_fds, (unsigned long long)lim.rlim_cur);
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
    ck_assert(after.resident_bytes > 0);
}
END_TEST

START_TEST(process_stat_parsed_after_the_last_parenthesis)
{
    /* a command name with spaces and ")" in it; fields 14, 15, 22, 23, 24 as proc(5) */
    const char *stat = "4242 (we) ird) na me) S 1 2 3 4 5 6 7 8 9 10 150 50 0 0 20 -5 1 0 "
                       "500 1048576 256 18446744073709551615 1 2 3\n";
    struct metrics_process m = {0};
    struct wh_error err = {0};

    ck_assert_int_eq(metrics_process_parse_stat(&m, stat, 100, 4096, 1700000000.0, &err), 0);
    ck_assert(m.cpu_seconds == 2.0);
    ck_assert(m.start_time_seconds == 1700000005.0);
    ck_assert_uint_eq(m.virtual_bytes, 1048576);
    ck_assert_uint_eq(m.resident_bytes, 256 * 4096);
}
END_TEST

START_TEST(process_stat_bad_input_refused)
{
    struct metrics_process m = {.cpu_seconds = 7, .resident_bytes = 9};
    struct wh_error err = {0};

    ck_assert_int_eq(
        metrics_process_parse_stat(&m, "4242 (x) S 1 2 3 4 5 6 7\n", 100, 4096, 0, &err),
        WH_EINVAL);
    ck_assert_str_eq(err.msg, "/proc/self/stat: 10 fields, want 24");
    ck_assert_int_eq(metrics_process_parse_stat(&m,
                                                "4242 (x) S 1 2 3 4 5 6 7 8 9 10 1x 50 0 0 20 0 "
                                                "1 0 500 1048576 256\n",
                                                100, 4096, 0, &err),
                     WH_EINVAL);
    ck_assert_str_eq(err.msg, "/proc/self/stat: field 14 is not a number");
    ck_assert_int_eq(metrics_process_parse_stat(&m, "no command name", 100, 4096, 0, &err),
                     WH_EINVAL);
    ck_assert_str_eq(err.msg, "/proc/self/stat: no \"(comm)\" field");
    /* nothing changed */
    ck_assert(m.cpu_seconds == 7);
    ck_assert_uint_eq(m.resident_bytes, 9);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, counters_after_known_traffic);
    tcase_add_test(tc, collect_callback_values);
    tcase_add_test(tc, concurrent_recording_loses_nothing);
    tcase_add_test(tc, tls_certificate_expiry_gauge);
    tcase_add_test(tc, tls_certificate_expiry_concurrent);
    tcase_add_test(tc, process_metrics_rendered_and_consistent);
    tcase_add_test(tc, process_fds_follow_the_process);
    tcase_add_test(tc, process_stat_parsed_after_the_last_parenthesis);
    tcase_add_test(tc, process_stat_bad_input_refused);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
