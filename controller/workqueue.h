/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workqueue.h - a queue of string keys with client-go workqueue semantics, as the
 * reconciler uses it (docs/plugins.md §3.2, D10): a rate-limited, de-duplicating FIFO.
 *
 *   - A key is pending at most once: adding a key that waits already does nothing,
 *     and adding a key that is being processed only marks it dirty; workqueue_done
 *     queues it again, so one key is never processed twice at once and ten adds
 *     during one run give one more run.
 *   - workqueue_get hands out keys in the order they were first added.
 *   - A failed run is re-added after a per-key exponential backoff
 *     (workqueue_add_rate_limited, client-go's ItemExponentialFailureRateLimiter);
 *     workqueue_forget resets it after a success.
 *   - Each key may carry one datum (the reconciler's pending deletion), owned by the
 *     queue and freed through the destructor given to workqueue_init.
 * A key's record is freed when it is idle: not queued, not processing, no retry
 * pending, no failures counted, no datum.
 *
 * Threads: not thread-safe; the caller serialises every call (controller/reconcile.c
 * holds its mutex). Time is passed in (monotonic milliseconds), so the queue never
 * reads a clock and never sleeps.
 */
#ifndef WH_WORKQUEUE_H
#define WH_WORKQUEUE_H

#include <stddef.h>

#include "base/error.h"

struct workqueue_item;
struct strmap;

/* A queue; caller-owned, members private to workqueue.c. */
struct workqueue {
    struct strmap *items;        /* key -> struct workqueue_item; NULL before the first add */
    struct workqueue_item *head; /* FIFO of queued keys */
    struct workqueue_item *tail;
    size_t len;                     /* keys in the FIFO */
    struct workqueue_item *delayed; /* keys waiting for their backoff */
    long backoff_min_ms;            /* first retry delay */
    long backoff_max_ms;            /* cap of the retry delay */
    void (*free_data)(void *data);  /* destructor of the keys' data; NULL: not freed */
};

/**
 * Make q an empty queue. backoff_min_ms/backoff_max_ms drive
 * workqueue_add_rate_limited through backoff_delay_ms (base/backoff.h; max below
 * min is raised to min). free_data frees a
 * key's datum (NULL: data are not freed). Allocates nothing (the map of records
 * comes with the first add).
 */
void workqueue_init(struct workqueue *q, long backoff_min_ms, long backoff_max_ms,
                    void (*free_data)(void *data));

/** Free every record and datum; q is left empty (safe to repeat after workqueue_init). */
void workqueue_dispose(struct workqueue *q);

/**
 * client-go Add: queue key unless it is pending already; a key being processed is
 * only marked, and workqueue_done queues it.
 * @param key   copied
 * @param data  NULL keeps the key's datum; otherwise it becomes the key's datum (now
 *              owned by q; a previous one is freed)
 * @return 0; WH_ENOMEM (nothing changed, data not taken).
 */
int workqueue_add(struct workqueue *q, const char *key, void *data) WH_WARN_UNUSED;

/**
 * client-go AddRateLimited: count one more failure of key and re-add it after
 * backoff_delay_ms(min, max, failures) from now_ms (client-go's
 * ItemExponentialFailureRateLimiter, no jitter); of two pending re-adds the earlier wins.
 * @return the delay in ms, or WH_ENOMEM (nothing changed).
 */
long workqueue_add_rate_limited(struct workqueue *q, const char *key,
                                long long now_ms) WH_WARN_UNUSED;

/** client-go Forget: key's failure count back to 0 and its pending re-add dropped. */
void workqueue_forget(struct workqueue *q, const char *key);

/** @return the failures counted for key since its last workqueue_forget (0 when unknown). */
unsigned workqueue_num_requeues(const struct workqueue *q, const char *key);

/**
 * client-go Get: take the first queued key; it is processing until workqueue_done.
 * @param[out] data_out  the key's datum, now owned by the caller (NULL when none)
 * @return the key, borrowed: valid until workqueue_done for it; NULL when the FIFO
 *         is empty (then *data_out = NULL).
 */
const char *workqueue_get(struct workqueue *q, void **data_out);

/**
 * client-go Done: key (from workqueue_get) is no longer processing. When it was added
 * meanwhile it is queued again. Call workqueue_add_rate_limited or workqueue_forget
 * for the run before this: key is invalid afterwards.
 * @param data_back  NULL, or a datum handed back for the next run (now owned by q);
 *                   freed when the key got a newer datum meanwhile
 */
void workqueue_done(struct workqueue *q, const char *key, void *data_back);

/**
 * Queue every key whose re-add time is at or before now_ms.
 * @param[out] next_ms  the earliest re-add time still pending, 0 when none
 * @return the number of keys whose time had come.
 */
size_t workqueue_promote(struct workqueue *q, long long now_ms, long long *next_ms);

/**
 * Forget all work: every queued key, pending re-add, failure count, datum and mark
 * is dropped. Keys being processed keep their record until workqueue_done.
 */
void workqueue_clear(struct workqueue *q);

/** @return the keys waiting in the FIFO. */
size_t workqueue_len(const struct workqueue *q);

/** @return the records held (queued, processing, retrying or holding a datum). */
size_t workqueue_size(const struct workqueue *q);

#endif
