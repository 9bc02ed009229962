/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backoff.h - waiting between attempts, and the thread that waits.
 *
 * The delay: a capped exponential backoff (min·2^(n-1) after n consecutive
 * failures, at most max) and a uniform jitter drawn with rand_r from a caller-kept
 * seed, so that replicas retrying the same API server do not do it in step
 * (client-go's wait.Backoff and wait.Jitter; the AWS "equal jitter" draws from
 * [d/2, d]). Each caller keeps its own constants.
 *
 * The thread: a background thread that sleeps between attempts and must stop
 * promptly. struct backoff_thread holds its mutex, a CLOCK_MONOTONIC condition
 * variable and an atomic stopping flag; backoff_thread_sleep_ms wakes at once when
 * backoff_thread_stop sets the flag, which then joins. No pthread_cancel
 * (C-STYLE §7).
 *
 * Threads: the delay functions are pure (the seed is the caller's, one thread at a
 * time). A struct backoff_thread is started and stopped by one owning thread; the
 * sleep and stopping functions are for the thread it runs (stopping may be read
 * from any thread).
 */
#ifndef WH_BACKOFF_H
#define WH_BACKOFF_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "base/error.h"

/**
 * The delay after failures consecutive failures: min_ms doubled (failures - 1)
 * times, never past max_ms (failures 0 counts as 1; max_ms when min_ms > max_ms).
 * No overflow for any failures. @return milliseconds.
 */
long backoff_delay_ms(long min_ms, long max_ms, unsigned failures);

/** A delay drawn uniformly from [lo_ms, hi_ms] (lo_ms when hi_ms <= lo_ms) with rand_r(seed). */
long backoff_jitter_ms(unsigned *seed, long lo_ms, long hi_ms);

/** A rand_r seed that differs between processes and between owners (salt: the owner's address). */
unsigned backoff_seed(const void *salt);

/* A background thread with a stop flag it sleeps on. Caller-owned, zeroed until started. */
struct backoff_thread {
    pthread_t thread;
    pthread_mutex_t mu;   /* guards nothing but the sleeps on cv */
    pthread_cond_t cv;    /* CLOCK_MONOTONIC; broadcast by backoff_thread_stop */
    atomic_bool stopping; /* set once by backoff_thread_stop; read anywhere */
    bool started;         /* the thread runs: backoff_thread_stop joins it */
};

/**
 * Set up t's lock, condition variable and flag, and run fn(arg) on a new thread.
 * @return 0; WH_ERROR with errno set to the pthread error (nothing is left to stop).
 */
int backoff_thread_start(struct backoff_thread *t, void *(*fn)(void *), void *arg) WH_WARN_UNUSED;

/** Whether backoff_thread_stop was called. */
bool backoff_thread_stopping(const struct backoff_thread *t);

/**
 * The flag itself, for a loop that polls it (k8s_watch's watch_params.stop);
 * borrowed from t.
 */
const atomic_bool *backoff_thread_flag(const struct backoff_thread *t);

/**
 * On t's thread: sleep at least ms (at most about a millisecond more: the clock counts
 * whole milliseconds), or less when stopped. @return true when stopping.
 */
bool backoff_thread_sleep_ms(struct backoff_thread *t, long ms);

/** On t's thread: sleep until at_ms (clock_mono_ms) or the stop. @return true when stopping. */
bool backoff_thread_sleep_until(struct backoff_thread *t, long long at_ms);

/**
 * Set the flag, wake the sleeper, join the thread, and free t's lock and condition
 * variable; from another thread than t's own. Again, or on a zeroed t that never
 * started, it does nothing.
 */
void backoff_thread_stop(struct backoff_thread *t);

#endif
