/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backoff.c - the delays and the stoppable thread of backoff.h.
 *
 * Threads: see backoff.h. The flag is atomic so that a loop can poll it without the
 * lock; the lock is only taken around the condition-variable waits and the wake-up,
 * so that a stop between the flag test and the wait cannot be missed.
 */
#include "base/backoff.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/clock.h"

long backoff_delay_ms(long min_ms, long max_ms, unsigned failures)
{
    long d = min_ms;

    for (unsigned i = 1; i < failures && d < max_ms; i++)
        d = d > max_ms / 2 ? max_ms : d * 2;
    return d < max_ms ? d : max_ms;
}

long backoff_jitter_ms(unsigned *seed, long lo_ms, long hi_ms)
{
    if (hi_ms <= lo_ms)
        return lo_ms;
    return lo_ms + (long)((unsigned long)rand_r(seed) % ((unsigned long)(hi_ms - lo_ms) + 1));
}

unsigned backoff_seed(const void *salt)
{
    return (unsigned)clock_mono_ms() ^ (unsigned)(uintptr_t)salt;
}

int backoff_thread_start(struct backoff_thread *t, void *(*fn)(void *), void *arg)
{
    int rc;

    atomic_init(&t->stopping, false);
    t->started = false;
    rc = clock_cond_init(&t->cv);
    if (rc != 0)
        goto fail;
    rc = pthread_mutex_init(&t->mu, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&t->cv);
        goto fail;
    }
    rc = pthread_create(&t->thread, NULL, fn, arg);
    if (rc != 0) {
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
        goto fail;
    }
    t->started = true;
    return 0;
fail:
    errno = rc;
    return WH_ERROR;
}

bool backoff_thread_stopping(const struct backoff_thread *t)
{
    return atomic_load(&t->stopping);
}

const atomic_bool *backoff_thread_flag(const struct backoff_thread *t)
{
    return &t->stopping;
}

bool backoff_thread_sleep_until(struct backoff_thread *t, long long at_ms)
{
    struct timespec ts = clock_at_ms(at_ms);
    bool stop;

    pthread_mutex_lock(&t->mu);
    /* The clock, not ETIMEDOUT, ends the wait: a spurious wake-up sleeps again. */
    while (!atomic_load(&t->stopping) && clock_mono_ms() < at_ms)
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
    stop = atomic_load(&t->stopping);
    pthread_mutex_unlock(&t->mu);
    return stop;
}

bool backoff_thread_sleep_ms(struct backoff_thread *t, long ms)
{
    /* clock_mono_ms counts whole milliseconds: now + ms may be as little as ms - 1 away. */
    return backoff_thread_sleep_until(t, clock_mono_ms() + ms + 1);
}

void backoff_thread_stop(struct backoff_thread *t)
{
    if (!t->started)
        return;
    pthread_mutex_lock(&t->mu);
    atomic_store(&t->stopping, true);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    t->started = false;
}
