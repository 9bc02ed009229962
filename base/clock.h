/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock.h - the few clock readings the threads need: a monotonic "now" for
 * durations and deadlines, and absolute times for pthread_cond_timedwait.
 * Pure functions; thread-safe.
 */
#ifndef WH_CLOCK_H
#define WH_CLOCK_H

#include <pthread.h>
#include <time.h>

/** CLOCK_MONOTONIC now, in milliseconds. */
long long clock_mono_ms(void);

/** CLOCK_MONOTONIC now, in seconds (nanosecond resolution), for latencies. */
double clock_mono_s(void);

/**
 * The absolute CLOCK_MONOTONIC time at_ms (as clock_mono_ms counts) as a timespec,
 * for a condition variable whose clock is CLOCK_MONOTONIC (pthread_condattr_setclock).
 */
struct timespec clock_at_ms(long long at_ms);

/**
 * Initialise cv as a condition variable whose timed waits count on CLOCK_MONOTONIC
 * (pthread_condattr_setclock), for deadlines from clock_at_ms or clock_after_ms: a
 * wall-clock step neither shortens nor stretches them. Destroy with pthread_cond_destroy.
 * @return 0, or pthread_cond_init's error number.
 */
int clock_cond_init(pthread_cond_t *cv);

/** now(clock) + ms as a timespec, for pthread_cond_timedwait on a cond of that clock. */
struct timespec clock_after_ms(clockid_t clock, long long ms);

#endif
