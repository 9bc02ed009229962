/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_server_threads.c - server_default_threads (webhook/server.h) against
 * fake cgroup trees in a temporary directory: no quota, a cgroup v2 cpu.max
 * quota, a v1 CFS quota, malformed files. The expected counts follow this
 * machine's online CPUs, which the function also reads. And
 * server_default_lookup_threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "webhook/server.h"

static char root[64];

static void setup(void)
{
    snprintf(root, sizeof(root), "/tmp/vpw-cgroup-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
}

static void put(const char *rel, const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    ck_assert_int_eq(system(cmd), 0);
}

/* 1 thread per CPU, CPUs = min(online, cgroup's), at most 64 threads. */
static unsigned want(long cgroup_cpus)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    if (cgroup_cpus > 0 && cgroup_cpus < n)
        n = cgroup_cpus;
    return n >= 64 ? 64 : (unsigned)n;
}

START_TEST(test_no_quota)
{
    ck_assert_uint_eq(server_default_threads(NULL), want(0));
    ck_assert_uint_eq(server_default_threads(root), want(0)); /* no files at all */
    put("cpu.max", "max 100000\n");
    ck_assert_uint_eq(server_default_threads(root), want(0));
}
END_TEST

START_TEST(test_v2_quota)
{
    put("cpu.max", "50000 100000\n"); /* limits.cpu: 500m → one CPU, rounded up */
    ck_assert_uint_eq(server_default_threads(root), 1);
    put("cpu.max", "100000 100000\n");
    ck_assert_uint_eq(server_default_threads(root), 1);
    put("cpu.max", "150000 100000\n"); /* 1.5 CPUs → 2 */
    ck_assert_uint_eq(server_default_threads(root), want(2));
    put("cpu.max", "100000000 100000\n"); /* more than the machine has: the machine's */
    ck_assert_uint_eq(server_default_threads(root), want(0));
}
END_TEST

START_TEST(test_v1_quota)
{
    char dir[96];

    snprintf(dir, sizeof(dir), "%s/cpu", root);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    put("cpu/cpu.cfs_quota_us", "-1\n");
    put("cpu/cpu.cfs_period_us", "100000\n");
    ck_assert_uint_eq(server_default_threads(root), want(0));
    put("cpu/cpu.cfs_quota_us", "100000\n");
    ck_assert_uint_eq(server_default_threads(root), 1);
    /* v2's file wins when both are there. */
    put("cpu.max", "max 100000\n");
    ck_assert_uint_eq(server_default_threads(root), want(0));
}
END_TEST

START_TEST(test_malformed)
{
    put("cpu.max", "");
    ck_assert_uint_eq(server_default_threads(root), want(0));
    put("cpu.max", "lots of cpus\n");
    ck_assert_uint_eq(server_default_threads(root), want(0));
    put("cpu.max", "0 100000\n");
    ck_assert_uint_eq(server_default_threads(root), want(0));
    put("cpu.max", "50000 0\n");
    ck_assert_uint_eq(server_default_threads(root), want(0));
}
END_TEST

START_TEST(test_lookup_threads)
{
    /* two per core the workers stand for (one worker per core), at most 64 */
    ck_assert_uint_eq(server_default_lookup_threads(0), 2);
    ck_assert_uint_eq(server_default_lookup_threads(1), 2);
    ck_assert_uint_eq(server_default_lookup_threads(2), 4);
    ck_assert_uint_eq(server_default_lookup_threads(31), 62);
    ck_assert_uint_eq(server_default_lookup_threads(32), 64);
    ck_assert_uint_eq(server_default_lookup_threads(64), 64);
}
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("server_threads");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_no_quota);
    tcase_add_test(tc, test_v2_quota);
    tcase_add_test(tc, test_v1_quota);
    tcase_add_test(tc, test_malformed);
    tcase_add_test(tc, test_lookup_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(threads_suite());
}
