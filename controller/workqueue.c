/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workqueue.c - client-go workqueue semantics over string keys (workqueue.h).
 *
 * Each key has one record holding three flags: dirty (wants a run), queued (in the
 * FIFO) and processing (handed out by workqueue_get). Records live in a base/strmap
 * keyed by the key; the FIFO and the list of delayed re-adds are links inside the
 * records, so no operation allocates but the first add of a key.
 *
 * Threads: none of its own, no lock; the caller serialises every call.
 */
#include "controller/workqueue.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/backoff.h"
#include "base/strmap.h"

struct workqueue_item {
    char *key;
    struct workqueue_item *qnext; /* FIFO link while queued */
    struct workqueue_item *dnext; /* delayed list link while retry_at_ms != 0 */
    bool dirty;                   /* wants a run */
    bool queued;                  /* in the FIFO */
    bool processing;              /* handed out, not done yet */
    unsigned failures;            /* since the last forget */
    long long retry_at_ms;        /* monotonic time of the pending re-add; 0 = none */
    void *data;                   /* owned, freed by q->free_data; may be NULL */
};

/* ---- the records, in a base/strmap keyed by the key ---- */

static struct workqueue_item *item_find(const struct workqueue *q, const char *key)
{
    return q->items != NULL ? strmap_get(q->items, key) : NULL;
}

static struct workqueue_item *item_get(struct workqueue *q, const char *key)
{
    struct workqueue_item *it = item_find(q, key);

    if (it != NULL)
        return it;
    if (q->items == NULL && (q->items = strmap_create(NULL)) == NULL)
        return NULL;
    it = calloc(1, sizeof(*it));
    if (it == NULL)
        return NULL;
    it->key = strdup(key);
    if (it->key == NULL || strmap_set(q->items, key, it) < 0) {
        free(it->key);
        free(it);
        return NULL;
    }
    return it;
}

static void item_free(struct workqueue *q, struct workqueue_item *it)
{
    if (it->data != NULL && q->free_data != NULL)
        q->free_data(it->data);
    free(it->key);
    free(it);
}

/* Free the record when nothing refers to it any more. */
static void item_release_if_idle(struct workqueue *q, struct workqueue_item *it)
{
    if (it->dirty || it->queued || it->processing || it->retry_at_ms != 0 || it->failures != 0
        || it->data != NULL)
        return;
    (void)strmap_take(q->items, it->key);
    item_free(q, it);
}

/* ---- FIFO and delayed list ---- */

/* Add: at most one pending entry per key, never queued while processing. */
static void item_add(struct workqueue *q, struct workqueue_item *it)
{
    if (it->dirty)
        return;
    it->dirty = true;
    if (it->processing)
        return; /* queued again by workqueue_done */
    it->queued = true;
    it->qnext = NULL;
    if (q->tail != NULL)
        q->tail->qnext = it;
    else
        q->head = it;
    q->tail = it;
    q->len++;
}

static void delayed_unlink(struct workqueue *q, struct workqueue_item *it)
{
    struct workqueue_item **pp;

    for (pp = &q->delayed; *pp != NULL; pp = &(*pp)->dnext) {
        if (*pp == it) {
            *pp = it->dnext;
            break;
        }
    }
    it->dnext = NULL;
    it->retry_at_ms = 0;
}

/* AddAfter: keep the earlier of two pending re-adds. */
static void item_add_after(struct workqueue *q, struct workqueue_item *it, long long at)
{
    if (it->retry_at_ms != 0) {
        if (it->retry_at_ms <= at)
            return;
        delayed_unlink(q, it);
    }
    it->retry_at_ms = at;
    it->dnext = q->delayed;
    q->delayed = it;
}

/* ---- public ---- */

void workqueue_init(struct workqueue *q, long backoff_min_ms, long backoff_max_ms,
                    void (*free_data)(void *data))
{
    memset(q, 0, sizeof(*q));
    q->backoff_min_ms = backoff_min_ms;
    q->backoff_max_ms = backoff_max_ms < backoff_min_ms ? backoff_min_ms : backoff_max_ms;
    q->free_data = free_data;
}

/* strmap_filter callback of workqueue_dispose: free every record. */
static bool dispose_item(const char *key, void *value, void *ctx)
{
    (void)key;
    item_free(ctx, value);
    return false;
}

void workqueue_dispose(struct workqueue *q)
{
    if (q->items != NULL) {
        strmap_filter(q->items, dispose_item, q);
        strmap_destroy(q->items);
    }
    workqueue_init(q, q->backoff_min_ms, q->backoff_max_ms, q->free_data);
}

int workqueue_add(struct workqueue *q, const char *key, void *data)
{
    struct workqueue_item *it = item_get(q, key);

    if (it == NULL)
        return WH_ENOMEM;
    if (data != NULL) {
        if (it->data != NULL && q->free_data != NULL)
            q->free_data(it->data);
        it->data = data; /* now owned by the record */
    }
    item_add(q, it);
    return 0;
}

long workqueue_add_rate_limited(struct workqueue *q, const char *key, long long now_ms)
{
    struct workqueue_item *it = item_get(q, key);
    long delay;

    if (it == NULL)
        return WH_ENOMEM;
    it->failures++;
    delay = backoff_delay_ms(q->backoff_min_ms, q->backoff_max_ms, it->failures);
    item_add_after(q, it, now_ms + delay);
    return delay;
}

void workqueue_forget(struct workqueue *q, const char *key)
{
    struct workqueue_item *it = item_find(q, key);

    if (it == NULL)
        return;
    it->failures = 0;
    if (it->retry_at_ms != 0)
        delayed_unlink(q, it);
    item_release_if_idle(q, it);
}

unsigned workqueue_num_requeues(const struct workqueue *q, const char *key)
{
    const struct workqueue_item *it = item_find(q, key);

    return it != NULL ? it->failures : 0;
}

const char *workqueue_get(struct workqueue *q, void **data_out)
{
    struct workqueue_item *it = q->head;

    *data_out = NULL;
    if (it == NULL)
        return NULL;
    q->head = it->qnext;
    if (q->head == NULL)
        q->tail = NULL;
    it->qnext = NULL;
    it->queued = false;
    q->len--;
    it->processing = true;
    it->dirty = false;
    *data_out = it->data; /* now owned by the caller */
    it->data = NULL;
    return it->key;
}

void workqueue_done(struct workqueue *q, const char *key, void *data_back)
{
    struct workqueue_item *it = item_find(q, key);

    if (it == NULL) {
        if (data_back != NULL && q->free_data != NULL)
            q->free_data(data_back);
        return;
    }
    it->processing = false;
    if (data_back != NULL) {
        if (it->data == NULL)
            it->data = data_back; /* retried with the next run */
        else if (q->free_data != NULL)
            q->free_data(data_back); /* a newer one replaced it meanwhile */
    }
    if (it->dirty) {
        it->dirty = false; /* item_add sets it again and queues */
        item_add(q, it);
    }
    item_release_if_idle(q, it);
}

size_t workqueue_promote(struct workqueue *q, long long now_ms, long long *next_ms)
{
    struct workqueue_item **pp = &q->delayed;
    size_t moved = 0;

    *next_ms = 0;
    while (*pp != NULL) {
        struct workqueue_item *it = *pp;

        if (it->retry_at_ms <= now_ms) {
            *pp = it->dnext;
            it->dnext = NULL;
            it->retry_at_ms = 0;
            item_add(q, it);
            moved++;
            continue;
        }
        if (*next_ms == 0 || it->retry_at_ms < *next_ms)
            *next_ms = it->retry_at_ms;
        pp = &it->dnext;
    }
    return moved;
}

/* strmap_filter callback of workqueue_clear: forget what is pending; free idle records. */
static bool clear_item(const char *key, void *value, void *ctx)
{
    struct workqueue *q = ctx;
    struct workqueue_item *it = value;

    (void)key;
    it->queued = false;
    it->qnext = NULL;
    it->dirty = false;
    it->failures = 0;
    it->retry_at_ms = 0;
    it->dnext = NULL;
    if (it->data != NULL && q->free_data != NULL)
        q->free_data(it->data);
    it->data = NULL;
    if (it->processing)
        return true; /* its worker calls workqueue_done */
    item_free(q, it);
    return false;
}

void workqueue_clear(struct workqueue *q)
{
    if (q->items != NULL)
        strmap_filter(q->items, clear_item, q);
    q->head = NULL;
    q->tail = NULL;
    q->len = 0;
    q->delayed = NULL;
}

size_t workqueue_len(const struct workqueue *q)
{
    return q->len;
}

size_t workqueue_size(const struct workqueue *q)
{
    return q->items != NULL ? strmap_size(q->items) : 0;
}
