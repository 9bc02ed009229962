/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_backoff.c - base/backoff.c: the capped exponential delay, the jitter's
 * range, and the stoppable thread (a stop wakes its sleep; the flag is seen).
 */
#include <check.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "tests/testutil.h"

START_TEST(test_delay)
{
    /* the informer's and the reconciler's defaults: 500 ms doubling to 30 s */
    ck_assert_int_eq(backoff_delay_ms(500, 30000, 0), 500);
    ck_assert_int_eq(backoff_delay_ms(500, 30000, 1), 500);
    ck_assert_int_eq(backoff_delay_ms(500, 30000, 2), 1000);
    ck_assert_int_eq(backoff_delay_ms(500, 30000, 3), 2000);
    ck_assert_int_eq(backoff_delay_ms(500, 30000, 7), 30000); /* 32000 capped */
    ck_assert_int_eq(backoff_delay_ms(500, 30000, 6), 16000);
    ck_assert_int_eq(backoff_delay_ms(500, 30000, UINT_MAX), 30000);
    ck_assert_int_eq(backoff_delay_ms(1, LONG_MAX, UINT_MAX), LONG_MAX); /* no overflow */
    ck_assert_int_eq(backoff_delay_ms(700, 700, 5), 700);
    ck_assert_int_eq(backoff_delay_ms(900, 300, 1), 300); /* min over max: max */
}
END_TEST

START_TEST(test_jitter_range)
{
    unsigned seed = 12345;
    bool seen_lo = false, seen_hi = false;

    for (int i = 0; i < 20000; i++) {
        long v = backoff_jitter_ms(&seed, 10, 20);

        ck_assert_int_ge(v, 10);
        ck_assert_int_le(v, 20);
        seen_lo = seen_lo || v == 10;
        seen_hi = seen_hi || v == 20;
    }
    ck_assert(seen_lo && seen_hi); /* both ends are drawn */
    ck_assert_int_eq(backoff_jitter_ms(&seed, 42, 42), 42);
    ck_assert_int_eq(backoff_jitter_ms(&seed, 42, 7), 42);
}
END_TEST

START_TEST(test_jitter_follows_seed)
{
    unsigned a = 7, b = 7;

    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(backoff_jitter_ms(&a, 0, 1000000), backoff_jitter_ms(&b, 0, 1000000));
}
END_TEST

/* A thread that sleeps an hour at a time until stopped, counting its wake-ups. */
struct sleeper {
    struct backoff_thread th;
    atomic_int wakes;
    atomic_bool saw_flag;
};

static void *sleeper_main(void *arg)
{
    struct sleeper *s = arg;

    while (!backoff_thread_sleep_ms(&s->th, 3600 * 1000L))
        atomic_fetch_add(&s->wakes, 1);
    atomic_store(&s->saw_flag,
                 backoff_thread_stopping(&s->th) && atomic_load(backoff_thread_flag(&s->th)));
    return NULL;
}

START_TEST(test_stop_wakes_the_sleep)
{
    struct sleeper s = {0};

    ck_assert_int_eq(backoff_thread_start(&s.th, sleeper_main, &s), 0);
    ck_assert(!backoff_thread_stopping(&s.th));
    backoff_thread_stop(&s.th); /* returns only because the hour-long sleep ended */
    ck_assert_int_eq(atomic_load(&s.wakes), 0);
    ck_assert(atomic_load(&s.saw_flag));
    ck_assert(backoff_thread_stopping(&s.th));
    backoff_thread_stop(&s.th); /* stopped already: nothing */
}
END_TEST

/* A thread whose short sleeps end on their own, three times, before it returns. */
static void *short_main(void *arg)
{
    struct sleeper *s = arg;

    /* in the past: returns at once, and not stopping (nobody stops before wakes is 3) */
    atomic_store(&s->saw_flag, backoff_thread_sleep_until(&s->th, 0));
    for (int i = 0; i < 3; i++)
        if (!backoff_thread_sleep_ms(&s->th, 1))
            atomic_fetch_add(&s->wakes, 1);
    return NULL;
}

START_TEST(test_sleep_ends_without_stop)
{
    struct sleeper s = {0};

    ck_assert_int_eq(backoff_thread_start(&s.th, short_main, &s), 0);
    while (atomic_load(&s.wakes) < 3)
        ; /* the thread's own sleeps end; no stop yet */
    backoff_thread_stop(&s.th);
    ck_assert_int_eq(atomic_load(&s.wakes), 3);
    ck_assert(!atomic_load(&s.saw_flag));
}
END_TEST

/* Twenty sleeps of 2 ms, each timed by clock_mono_s; the shortest is kept. */
struct timed {
    struct backoff_thread th;
    double shortest_s;
    atomic_bool done;
};

static void *timed_main(void *arg)
{
    struct timed *s = arg;

    s->shortest_s = -1;
    for (int i = 0; i < 20; i++) {
        double t0 = clock_mono_s();
        double took;

        backoff_thread_sleep_ms(&s->th, 2);
        took = clock_mono_s() - t0;
        if (s->shortest_s < 0 || took < s->shortest_s)
            s->shortest_s = took;
    }
    atomic_store(&s->done, true);
    return NULL;
}

/* At least ms, whatever fraction of a millisecond the clock is at (a sleep counted in
 * whole milliseconds from a truncated now was up to 1 ms short: the informer's 25 ms
 * backoff was seen at 24.97 ms). */
START_TEST(test_sleep_lasts_at_least_ms)
{
    struct timed s = {0};

    ck_assert_int_eq(backoff_thread_start(&s.th, timed_main, &s), 0);
    while (!atomic_load(&s.done))
        ; /* a stop would end a sleep early */
    backoff_thread_stop(&s.th);
    ck_assert_msg(s.shortest_s >= 0.002, "a 2 ms sleep took %.6f s", s.shortest_s);
}
END_TEST

static Suite *backoff_suite(void)
{
    Suite *s = suite_create("backoff");
    TCase *td = tcase_create("delay");
    TCase *tt = tcase_create("thread");

    tcase_add_test(td, test_delay);
    tcase_add_test(td, test_jitter_range);
    tcase_add_test(td, test_jitter_follows_seed);
    suite_add_tcase(s, td);
    tcase_add_test(tt, test_stop_wakes_the_sleep);
    tcase_add_test(tt, test_sleep_ends_without_stop);
    tcase_add_test(tt, test_sleep_lasts_at_least_ms);
    suite_add_tcase(s, tt);
    return s;
}

int main(void)
{
    return tu_run(backoff_suite());
}
