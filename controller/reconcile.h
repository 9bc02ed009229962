/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile.h - the reconcile side: a work queue of Job keys and worker threads
 * running the plugins' OnJobAdd / OnJobUpdate / OnJobDelete (docs/plugins.md §3.2, §5.2,
 * decisions D9-D12).
 *
 * Per key the queue holds at most one pending entry (a Job that changes ten times
 * while it is being reconciled is reconciled once more); a key is never worked on
 * by two workers at once; failed keys are retried with capped exponential backoff;
 * every Job is re-queued each resync period. Workers only work while this replica
 * leads (reconcile_set_leading), and a replica that does not lead keeps no
 * per-Job work or state: taking the lead queues every cached Job.
 *
 * Threads: enqueue functions are called from the informer thread; workers are
 * the reconciler's own threads; set_leading from the leader-election thread.
 */
#ifndef WH_RECONCILE_H
#define WH_RECONCILE_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"
#include "controller/cache.h"
#include "k8s/client.h"

struct reconcile_config {
    int workers;             /* worker threads, default 4 (an RSA key takes one) */
    long resync_period_s;    /* --resync-period, default 600 */
    long request_timeout_ms; /* per API request, default 10000 */
    long backoff_min_ms;     /* default 500 */
    long backoff_max_ms;     /* default 60000 */
};

struct reconcile;

/** Start the workers (idle until reconcile_set_leading(true)). kc and cache are borrowed. */
int reconcile_start(struct reconcile **out, struct k8s_client *kc, struct cache *cache,
                    const struct reconcile_config *cfg, struct wh_error *err);

/** Stop and join the workers, free everything. NULL is a no-op. */
void reconcile_stop(struct reconcile *r);

/** Queue the Job's key (ADDED / MODIFIED / LIST). job is borrowed. Ignored while not
 *  leading (reconcile_set_leading(true) queues every cached Job). */
void reconcile_enqueue(struct reconcile *r, const json_t *job);

/**
 * The Job is gone (DELETED, or absent at relist): queue its OnJobDelete. last_known
 * borrowed. Ignored while not leading: a new leader never sees the Job, and its
 * objects go with ownerReference garbage collection (D10).
 */
void reconcile_deleted(struct reconcile *r, const json_t *last_known);

/**
 * Leadership changed. true: queue every cached Job, then start the workers. false:
 * the workers stop picking keys at once; every queued key, pending retry and pending
 * deletion is dropped, and, once no run is in flight, every per-uid record and the
 * ssh key pair kept for that uid (a follower keeps no per-Job state).
 */
void reconcile_set_leading(struct reconcile *r, bool leading);

struct reconcile_stats {
    unsigned long reconciles; /* keys processed */
    unsigned long errors;     /* failed hook runs (retried) */
    unsigned long queue_len;  /* keys waiting now */
    unsigned long keys;       /* key records held (queued, running, retrying, deleting) */
    unsigned long uids;       /* Job uids whose hook state is remembered */
    unsigned long foreign;    /* D12: objects found that belong to someone else */
};
/** Copy the counters into *out (taken under the queue lock; r NULL gives zeros). Any thread. */
void reconcile_get_stats(struct reconcile *r, struct reconcile_stats *out);

#endif
