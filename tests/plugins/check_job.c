/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_job.c - read-only Job helpers (plugins/job.h, docs/plugins.md §1.3, §3.6, §4.2).
 */
#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/error.h"
#include "plugins/job.h"
#include "tests/testutil.h"

static const char *const JOB =
    "{\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\",\"uid\":\"u-1\"},"
    " \"spec\":{\"tasks\":["
    "  {\"name\":\"mpi-worker\",\"replicas\":3,\"template\":{\"spec\":{}}},"
    "  {\"name\":\"h\",\"replicas\":3,\"template\":{\"spec\":{\"hostname\":\"host\"}}},"
    "  {\"name\":\"s\",\"replicas\":2,\"template\":{\"spec\":{\"subdomain\":\"sub\"}}},"
    "  "
    "{\"name\":\"hs\",\"replicas\":2,\"template\":{\"spec\":{\"hostname\":\"host\",\"subdomain\":"
    "\"sub\"}}},"
    "  "
    "{\"name\":\"e\",\"replicas\":2,\"template\":{\"spec\":{\"hostname\":\"\",\"subdomain\":\"\"}}}"
    ","
    "  {\"name\":\"zero\",\"replicas\":0,\"template\":{\"spec\":{\"hostname\":\"host\"}}},"
    "  {\"name\":\"omitted\"},"
    "  {\"name\":\"bad\",\"replicas\":\"3\"},"
    "  {\"name\":\"mpi-worker\",\"replicas\":7}]}}";

START_TEST(metadata_getters)
{
    json_t *job = tu_json(JOB);
    json_t *empty = tu_json("{\"metadata\":{\"name\":5}}");

    ck_assert_str_eq(job_name(job), "j");
    ck_assert_str_eq(job_namespace(job), "ns");
    ck_assert_str_eq(job_uid(job), "u-1");
    ck_assert_str_eq(job_name(empty), "");
    ck_assert_str_eq(job_namespace(empty), "");
    ck_assert_str_eq(job_uid(NULL), "");
    json_decref(empty);
    json_decref(job);
}
END_TEST

START_TEST(tasks_and_replicas)
{
    json_t *job = tu_json(JOB);
    json_t *notasks = tu_json("{\"spec\":{\"tasks\":{}}}");
    const json_t *t;

    ck_assert_uint_eq(json_array_size(job_tasks(job)), 9);
    ck_assert_ptr_null(job_tasks(notasks));
    ck_assert_ptr_null(job_find_task(notasks, "x"));
    /* The first task of that name wins (docs/plugins.md §3.6). */
    t = job_find_task(job, "mpi-worker");
    ck_assert_ptr_eq(t, json_array_get(job_tasks(job), 0));
    ck_assert_str_eq(job_task_name(t), "mpi-worker");
    ck_assert_int_eq(job_task_replicas(t), 3);
    ck_assert_int_eq(job_replicas_of(job, "mpi-worker"), 3);
    ck_assert_int_eq(job_replicas_of(job, "omitted"), 0);
    ck_assert_int_eq(job_replicas_of(job, "bad"), 0);
    ck_assert_int_eq(job_replicas_of(job, "none"), 0);
    ck_assert_ptr_null(job_find_task(job, "none"));
    ck_assert_str_eq(job_task_name(NULL), "");
    ck_assert_str_eq(job_task_hostname(job_find_task(job, "h")), "host");
    ck_assert_str_eq(job_task_subdomain(job_find_task(job, "h")), "");
    ck_assert_str_eq(job_task_subdomain(job_find_task(job, "s")), "sub");
    ck_assert_str_eq(job_task_hostname(job_find_task(job, "omitted")), "");
    json_decref(notasks);
    json_decref(job);
}
END_TEST

static void assert_domain(const json_t *job, const char *task, int64_t i, const char *want)
{
    char *got = job_task_domain(job, job_find_task(job, task), i);

    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want);
    free(got);
}

/* docs/plugins.md §3.6: host = template hostname or J-T-i; domain = template subdomain or J. */
START_TEST(task_domain)
{
    json_t *job = tu_json(JOB);

    assert_domain(job, "mpi-worker", 0, "j-mpi-worker-0.j");
    assert_domain(job, "mpi-worker", 12, "j-mpi-worker-12.j");
    assert_domain(job, "h", 2, "host.j");
    assert_domain(job, "s", 1, "j-s-1.sub");
    assert_domain(job, "hs", 1, "host.sub");
    assert_domain(job, "e", 1, "j-e-1.j"); /* "" counts as unset */
    json_decref(job);
}
END_TEST

static void assert_hosts(const json_t *job, const char *task, const char *sep, const char *want,
                         int64_t want_count)
{
    int64_t count = -1;
    char *got = NULL;

    ck_assert_int_eq(job_task_hosts(&got, job, job_find_task(job, task), sep, &count), 0);

    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want);
    ck_assert_int_eq(count, want_count);
    free(got);
}

/* docs/plugins.md §4.2: replicas 0..n-1, one entry if the template sets a hostname, no end sep. */
START_TEST(task_hosts)
{
    json_t *job = tu_json(JOB);
    char *s;

    assert_hosts(job, "mpi-worker", ",", "j-mpi-worker-0.j,j-mpi-worker-1.j,j-mpi-worker-2.j", 3);
    assert_hosts(job, "mpi-worker", "\n", "j-mpi-worker-0.j\nj-mpi-worker-1.j\nj-mpi-worker-2.j",
                 3);
    assert_hosts(job, "mpi-worker", " | ", "j-mpi-worker-0.j | j-mpi-worker-1.j | j-mpi-worker-2.j",
                 3);
    assert_hosts(job, "h", ",", "host.j", 1);
    assert_hosts(job, "hs", "\n", "host.sub", 1);
    assert_hosts(job, "s", ",", "j-s-0.sub,j-s-1.sub", 2);
    assert_hosts(job, "zero", ",", "", 0);
    assert_hosts(job, "omitted", ",", "", 0);
    assert_hosts(job, "bad", ",", "", 0);
    /* count may be NULL. */
    ck_assert_int_eq(job_task_hosts(&s, job, job_find_task(job, "s"), "", NULL), 0);
    ck_assert_str_eq(s, "j-s-0.subj-s-1.sub");
    free(s);
    json_decref(job);
}
END_TEST

START_TEST(task_hosts_bounded)
{
    /* A Job with absurd replicas must not make the webhook allocate without bound. */
    json_t *job = tu_json("{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":["
                          "{\"name\":\"w\",\"replicas\":2147483647}]}}");
    char *s = (char *)"untouched";
    int64_t count = -1;

    ck_assert_int_eq(job_task_hosts(&s, job, job_find_task(job, "w"), ",", &count), WH_ETOOBIG);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(count, -1);
    json_decref(job);
}
END_TEST

START_TEST(name_mapping)
{
    char buf[64];

    job_name_upper(buf, sizeof(buf), "mpi-worker");
    ck_assert_str_eq(buf, "MPI_WORKER");
    job_name_underscore(buf, sizeof(buf), "mpi-worker");
    ck_assert_str_eq(buf, "mpi_worker");
    job_name_underscore(buf, sizeof(buf), "Mpi-Worker-2");
    ck_assert_str_eq(buf, "Mpi_Worker_2");
    job_name_upper(buf, sizeof(buf), "a--b9");
    ck_assert_str_eq(buf, "A__B9");
    job_name_upper(buf, sizeof(buf), "");
    ck_assert_str_eq(buf, "");
    /* Cut to fit. */
    job_name_upper(buf, 4, "mpi-worker");
    ck_assert_str_eq(buf, "MPI");
    job_name_underscore(buf, 1, "mpi");
    ck_assert_str_eq(buf, "");
    buf[0] = 'x';
    job_name_upper(buf, 0, "mpi");
    ck_assert_int_eq(buf[0], 'x');
}
END_TEST

START_TEST(parse_index)
{
    int64_t v = 42;

    ck_assert_int_eq(job_parse_index("3", &v), 0);
    ck_assert_int_eq(v, 3);
    ck_assert_int_eq(job_parse_index("+3", &v), 0);
    ck_assert_int_eq(v, 3);
    ck_assert_int_eq(job_parse_index("-1", &v), 0);
    ck_assert_int_eq(v, -1);
    ck_assert_int_eq(job_parse_index("007", &v), 0);
    ck_assert_int_eq(v, 7);
    ck_assert_int_eq(job_parse_index("9223372036854775807", &v), 0);
    ck_assert_int_eq(v, INT64_MAX);
    ck_assert_int_eq(job_parse_index("-9223372036854775808", &v), 0);
    ck_assert_int_eq(v, INT64_MIN);
    ck_assert_int_eq(job_parse_index("", &v), WH_EINVAL);
    ck_assert_int_eq(job_parse_index("1a", &v), WH_EINVAL);
    ck_assert_int_eq(job_parse_index(" 1", &v), WH_EINVAL);
    ck_assert_int_eq(job_parse_index("1 ", &v), WH_EINVAL);
    ck_assert_int_eq(job_parse_index("99999999999999999999", &v), WH_EINVAL);
    ck_assert_int_eq(job_parse_index("9223372036854775808", &v), WH_EINVAL);
    ck_assert_int_eq(job_parse_index("-9223372036854775809", &v), WH_EINVAL);
    ck_assert_int_eq(job_parse_index("+", &v), WH_EINVAL);
    ck_assert_int_eq(job_parse_index("-", &v), WH_EINVAL);
    ck_assert_int_eq(job_parse_index("+-1", &v), WH_EINVAL);
    ck_assert_int_eq(job_parse_index("0x10", &v), WH_EINVAL);
    ck_assert_int_eq(job_parse_index("1_0", &v), WH_EINVAL);
}
END_TEST

static Suite *job_suite(void)
{
    Suite *s = suite_create("job");
    TCase *tc = tcase_create("job");

    tcase_add_test(tc, metadata_getters);
    tcase_add_test(tc, tasks_and_replicas);
    tcase_add_test(tc, task_domain);
    tcase_add_test(tc, task_hosts);
    tcase_add_test(tc, task_hosts_bounded);
    tcase_add_test(tc, name_mapping);
    tcase_add_test(tc, parse_index);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(job_suite());
}
