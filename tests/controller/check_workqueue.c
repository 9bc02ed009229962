/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_workqueue.c - controller/workqueue.c on its own, driven the way
 * controller/reconcile.c drives it: FIFO order, one pending entry per key, a key
 * added while processing runs once more after done, rate-limited retries with the
 * capped backoff and their promotion at the given times, forget, the keys' data
 * (a pending deletion) and clear (the lead lost). Time is passed in: nothing
 * sleeps and no clock is read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "controller/workqueue.h"
#include "tests/testutil.h"

static int freed; /* data given to the destructor */

static void count_free(void *data)
{
    freed++;
    free(data);
}

static struct workqueue q;

static void setup(void)
{
    freed = 0;
    workqueue_init(&q, 5, 40, count_free);
}

static void teardown(void)
{
    workqueue_dispose(&q);
}

static void add(const char *key)
{
    ck_assert_int_eq(workqueue_add(&q, key, NULL), 0);
}

/* workqueue_get must hand out want, with no datum. */
static void get_is(const char *want)
{
    void *data = (void *)&q;
    const char *key = workqueue_get(&q, &data);

    ck_assert_ptr_nonnull(key);
    ck_assert_str_eq(key, want);
    ck_assert_ptr_null(data);
}

static void *datum(const char *text)
{
    char *d = strdup(text);

    ck_assert_ptr_nonnull(d);
    return d;
}

START_TEST(test_fifo_order_and_dedup)
{
    void *data = (void *)&q;

    add("ns/a");
    add("ns/b");
    add("ns/a"); /* pending already: no second entry, no new place */
    add("ns/c");
    ck_assert_uint_eq(workqueue_len(&q), 3);
    ck_assert_uint_eq(workqueue_size(&q), 3);
    get_is("ns/a");
    get_is("ns/b");
    get_is("ns/c");
    ck_assert_uint_eq(workqueue_len(&q), 0);
    ck_assert_ptr_null(workqueue_get(&q, &data));
    ck_assert_ptr_null(data);
    workqueue_done(&q, "ns/a", NULL);
    workqueue_done(&q, "ns/b", NULL);
    workqueue_done(&q, "ns/c", NULL);
    ck_assert_uint_eq(workqueue_size(&q), 0); /* idle records are freed */
}
END_TEST

/* Adds during processing: not handed out again until done, then exactly once more. */
START_TEST(test_add_while_processing)
{
    void *data = NULL;

    add("ns/a");
    get_is("ns/a");
    add("ns/a");
    add("ns/a");
    ck_assert_uint_eq(workqueue_len(&q), 0); /* never twice at once */
    ck_assert_ptr_null(workqueue_get(&q, &data));
    add("ns/b");
    workqueue_done(&q, "ns/a", NULL);
    ck_assert_uint_eq(workqueue_len(&q), 2);
    get_is("ns/b"); /* a re-queued key goes to the back */
    get_is("ns/a");
    workqueue_done(&q, "ns/a", NULL);
    workqueue_done(&q, "ns/b", NULL);
    ck_assert_uint_eq(workqueue_len(&q), 0);
    ck_assert_uint_eq(workqueue_size(&q), 0);
}
END_TEST

/* A failing key as the worker retries it: get, add_rate_limited, done; promote at the time. */
START_TEST(test_rate_limited_retry)
{
    long long next = -1;

    add("ns/a");
    for (unsigned fail = 1; fail <= 5; fail++) {
        static const long want[] = {0, 5, 10, 20, 40, 40};
        long long now = 1000 * fail;

        get_is("ns/a");
        ck_assert_int_eq(workqueue_add_rate_limited(&q, "ns/a", now), want[fail]);
        ck_assert_uint_eq(workqueue_num_requeues(&q, "ns/a"), fail);
        workqueue_done(&q, "ns/a", NULL);
        ck_assert_uint_eq(workqueue_len(&q), 0); /* not before its time */
        ck_assert_uint_eq(workqueue_promote(&q, now + want[fail] - 1, &next), 0);
        ck_assert_int_eq(next, now + want[fail]);
        ck_assert_uint_eq(workqueue_promote(&q, now + want[fail], &next), 1);
        ck_assert_int_eq(next, 0);
        ck_assert_uint_eq(workqueue_len(&q), 1);
    }
    /* success: forget resets the count, the record goes once idle */
    get_is("ns/a");
    workqueue_forget(&q, "ns/a");
    ck_assert_uint_eq(workqueue_num_requeues(&q, "ns/a"), 0);
    workqueue_done(&q, "ns/a", NULL);
    ck_assert_uint_eq(workqueue_size(&q), 0);
    add("ns/a");
    get_is("ns/a");
    ck_assert_int_eq(workqueue_add_rate_limited(&q, "ns/a", 0), 5); /* from the start again */
    workqueue_done(&q, "ns/a", NULL);
}
END_TEST

/* Of two pending re-adds the earlier wins; forget drops the pending one; a retry of a
 * key queued meanwhile does not queue it twice. */
START_TEST(test_retry_earlier_wins_and_forget)
{
    long long next = 0;

    ck_assert_int_eq(workqueue_add_rate_limited(&q, "ns/a", 100), 5);  /* due 105 */
    ck_assert_int_eq(workqueue_add_rate_limited(&q, "ns/a", 100), 10); /* 110: later, kept 105 */
    ck_assert_uint_eq(workqueue_promote(&q, 104, &next), 0);
    ck_assert_int_eq(next, 105);
    ck_assert_int_eq(workqueue_add_rate_limited(&q, "ns/b", 50), 5); /* due 55 */
    ck_assert_uint_eq(workqueue_promote(&q, 60, &next), 1);
    ck_assert_int_eq(next, 105);
    get_is("ns/b");
    workqueue_forget(&q, "ns/b");
    workqueue_done(&q, "ns/b", NULL);

    workqueue_forget(&q, "ns/a"); /* pending re-add dropped */
    ck_assert_uint_eq(workqueue_promote(&q, 1000, &next), 0);
    ck_assert_int_eq(next, 0);
    ck_assert_uint_eq(workqueue_len(&q), 0);
    ck_assert_uint_eq(workqueue_size(&q), 0);

    add("ns/c");
    ck_assert_int_eq(workqueue_add_rate_limited(&q, "ns/c", 0), 5);
    ck_assert_uint_eq(workqueue_promote(&q, 5, &next), 1);
    ck_assert_uint_eq(workqueue_len(&q), 1); /* queued already: still one entry */
    get_is("ns/c");
    workqueue_forget(&q, "ns/c");
    workqueue_done(&q, "ns/c", NULL);
}
END_TEST

/* A key's datum: given with add, replaced by a newer one (the old freed), taken by get,
 * handed back by done unless a newer one arrived meanwhile. */
START_TEST(test_data)
{
    void *data = NULL;
    const char *key;

    ck_assert_int_eq(workqueue_add(&q, "ns/a", datum("old")), 0);
    ck_assert_int_eq(workqueue_add(&q, "ns/a", datum("new")), 0);
    ck_assert_int_eq(freed, 1);
    add("ns/a"); /* NULL keeps the datum */
    ck_assert_uint_eq(workqueue_len(&q), 1);
    key = workqueue_get(&q, &data);
    ck_assert_str_eq(key, "ns/a");
    ck_assert_str_eq(data, "new");

    /* handed back: kept for the retry, and the record with it */
    ck_assert_int_eq(workqueue_add_rate_limited(&q, "ns/a", 0), 5);
    workqueue_done(&q, "ns/a", data);
    ck_assert_int_eq(freed, 1);
    ck_assert_uint_eq(workqueue_promote(&q, 5, &(long long){0}), 1);
    key = workqueue_get(&q, &data);
    ck_assert_str_eq(data, "new");

    /* a newer datum while processing wins over the one handed back */
    ck_assert_int_eq(workqueue_add(&q, "ns/a", datum("newer")), 0);
    workqueue_forget(&q, "ns/a");
    workqueue_done(&q, "ns/a", data);
    ck_assert_int_eq(freed, 2);
    key = workqueue_get(&q, &data);
    ck_assert_str_eq(key, "ns/a");
    ck_assert_str_eq(data, "newer");
    free(data);
    workqueue_done(&q, "ns/a", NULL);
    ck_assert_uint_eq(workqueue_size(&q), 0);

    /* dispose frees what is left */
    ck_assert_int_eq(workqueue_add(&q, "ns/b", datum("left")), 0);
    workqueue_dispose(&q);
    ck_assert_int_eq(freed, 3);
    ck_assert_uint_eq(workqueue_size(&q), 0);
}
END_TEST

/* The lead lost: everything pending goes; a key being processed keeps its record until
 * done and is not run again. */
START_TEST(test_clear)
{
    long long next = 0;

    add("ns/b");
    ck_assert_int_eq(workqueue_add(&q, "ns/a", datum("del")), 0);
    add("ns/c");
    ck_assert_int_eq(workqueue_add_rate_limited(&q, "ns/d", 0), 5);
    get_is("ns/b");
    add("ns/b"); /* marked while processing */
    workqueue_clear(&q);
    ck_assert_int_eq(freed, 1);
    ck_assert_uint_eq(workqueue_len(&q), 0);
    ck_assert_uint_eq(workqueue_size(&q), 1); /* ns/b, processing */
    ck_assert_uint_eq(workqueue_promote(&q, 1000, &next), 0);
    ck_assert_uint_eq(workqueue_num_requeues(&q, "ns/d"), 0);
    workqueue_done(&q, "ns/b", NULL);
    ck_assert_uint_eq(workqueue_len(&q), 0);
    ck_assert_uint_eq(workqueue_size(&q), 0);
}
END_TEST

/* Many keys: the table grows past its first size and keeps order and de-duplication. */
START_TEST(test_many_keys)
{
    char key[32];

    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 1000; i++) {
            snprintf(key, sizeof(key), "ns/j%d", i);
            add(key);
        }
    }
    ck_assert_uint_eq(workqueue_len(&q), 1000);
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "ns/j%d", i);
        get_is(key);
        workqueue_done(&q, key, NULL);
    }
    ck_assert_uint_eq(workqueue_size(&q), 0);
}
END_TEST

static Suite *workqueue_suite(void)
{
    Suite *s = suite_create("workqueue");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_fifo_order_and_dedup);
    tcase_add_test(tc, test_add_while_processing);
    tcase_add_test(tc, test_rate_limited_retry);
    tcase_add_test(tc, test_retry_earlier_wins_and_forget);
    tcase_add_test(tc, test_data);
    tcase_add_test(tc, test_clear);
    tcase_add_test(tc, test_many_keys);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(workqueue_suite());
}
