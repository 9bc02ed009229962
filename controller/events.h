/* SPDX-License-Identifier: Apache-2.0 */
/*
 * events.h - Kubernetes Events on a Volcano Job, posted by the Lease holder (D17):
 * the Job-level diagnostics of plugins/diagnose.h and reconcile failures that
 * outlast their retries, where `kubectl describe vcjob` shows them.
 *
 * One core v1 Event (type Warning) per distinct (reason, message) per Job uid,
 * named "<job>.<16 hex digits of SHA-256(reason NUL message)>", so the name is
 * the same after a restart. The first time this process posts a message it
 * creates the Event; a repeat raises its count and lastTimestamp with a merge
 * PATCH, as client-go's EventCorrelator does with the Event it created. A 409
 * AlreadyExists on create (a restarted leader, or another one racing) GETs the
 * Event and PATCHes its count; a 404 on PATCH (Events expire, an hour by
 * default) creates it again with count 1.
 *
 * Rate limit per Job uid, client-go's spam filter shape (tools/record
 * events_cache.go, keyed by source and object): a token bucket of `burst` (10;
 * client-go's default is 25) refilled one token per `refill_ms` (5 min, as
 * client-go's 1/300 qps); a new Event and a
 * count update each take one token, and without one the message is dropped
 * (counted). Bounded memory: at most max_jobs uids (the least recently used
 * goes) and EVENTS_MAX_PER_JOB messages per uid (the oldest goes); forgetting
 * only costs a GET, as the Event's name is derived, not remembered.
 *
 * Bounded time: every request has a timeout of request_timeout_ms, and one
 * events_record / events_record_diagnostics call stops making requests after
 * budget_ms, dropping the rest with one log line. An API error other than 404
 * and 409 (a 5xx, a timeout, a cut connection) is tried once more inside that
 * budget, then the message is dropped with a log line: an Event is advice, never
 * a reason to retry a Job.
 *
 * Threads: every function may be called from any thread; one mutex guards the
 * table and is never held across a request.
 */
#ifndef WH_EVENTS_H
#define WH_EVENTS_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"
#include "k8s/client.h"
#include "plugins/diagnose.h"

#define EVENTS_COMPONENT   "volcano-plugin-webhook" /* source.component, reportingComponent */
#define EVENTS_MAX_PER_JOB 64                       /* distinct messages remembered per uid */

struct cache;

struct events_config {
    const char *instance;        /* source.host and reportingInstance; NULL: the host name */
    long request_timeout_ms;     /* per request; <= 0: 2000 */
    long budget_ms;              /* per record call, all requests; <= 0: 5000 */
    int burst;                   /* token bucket size per Job; <= 0: 10 */
    long refill_ms;              /* one token back per this long; <= 0: 300000 */
    size_t max_jobs;             /* uids remembered; 0: 16384 */
    long long (*clock_ms)(void); /* monotonic ms for the bucket; NULL: clock_mono_ms */
    struct cache *cache;         /* borrowed, may be NULL: the Jobs cache whose per-version
                                  * diagnostics events_diagnose_job uses before any GET */
};

struct events;

/**
 * A recorder posting through kc (borrowed, must outlive it); cfg copied (its
 * instance string too), NULL for every default.
 * @param[out] out  the recorder (events_destroy)
 * @return 0; WH_ENOMEM with err filled.
 */
int events_create(struct events **out, struct k8s_client *kc, const struct events_config *cfg,
                  struct wh_error *err) __attribute__((warn_unused_result));

/** Free the recorder. NULL is a no-op. No call may be running. */
void events_destroy(struct events *ev);

/**
 * One Warning Event on job for (reason, message): created, or its count raised
 * when this process posted it before (see the top of this file).
 * @param job      borrowed Volcano Job; metadata.namespace, name and uid required
 *                 (resourceVersion copied when present); not modified
 * @param reason   CamelCase, 1-128 bytes ("TaskNotFound", "PluginError")
 * @param message  what the Job's author reads; cut to 1024 bytes
 * @return 0 posted (created or count raised); WH_DECLINED (> 0) not posted because
 *         the Job's bucket is empty or the call's budget is spent; WH_EINVAL for a
 *         Job without namespace, name or uid, or a bad reason; WH_ENOMEM; the API
 *         error (WH_EAPI, WH_ETIMEOUT, ...) after its retry, logged. err may be NULL.
 */
int events_record(struct events *ev, const json_t *job, const char *reason, const char *message,
                  struct wh_error *err);

/**
 * events_record for each entry of d (diagnose_reason_name as the reason), in
 * order, within one budget_ms; entries beyond the budget or the bucket are
 * dropped with one log line naming the Job and how many.
 * @param job  borrowed, as events_record; d borrowed
 * @return how many Events were posted (created or counted).
 */
size_t events_record_diagnostics(struct events *ev, const json_t *job, const struct diagnostics *d);

/**
 * Diagnose job and post its diagnostics (events_record_diagnostics), once per
 * resourceVersion of the Job. The cache's Job (controller/cache.h) keeps no
 * containers, volumes or env, which half the diagnostics read, but cfg.cache keeps
 * each version's diagnostics, computed from the full Job when it was stored
 * (cache_get_diagnostics): they are used when it holds this uid and resourceVersion.
 * Otherwise (no cache, another version there, or none) the whole Job is read with
 * one GET (?resourceVersion=0: kube-apiserver's watch cache answers) and diagnosed.
 * A version already diagnosed (a resync) costs nothing. Time: the GET's
 * request_timeout_ms when there is one, then events_record_diagnostics' budget_ms.
 * A Job of that name with another uid (deleted and created again) is left to its
 * own run. The version is remembered even when there is nothing to say.
 * @param job  borrowed Job (the cache's is enough: namespace, name, uid and
 *             resourceVersion are read); not modified
 * @return 0 diagnosed (posted or not); WH_DECLINED already diagnosed, or another
 *         uid; WH_EINVAL without namespace, name, uid or resourceVersion; the
 *         GET's error (logged). err may be NULL.
 */
int events_diagnose_job(struct events *ev, const json_t *job, struct wh_error *err);

/** Forget what is kept for Job uid (its OnJobDelete ran: the Job is gone). Unknown uid: no-op. */
void events_forget(struct events *ev, const char *uid);

/** Forget every uid (the lead was lost: a follower keeps no per-Job state). */
void events_forget_all(struct events *ev);

struct events_stats {
    unsigned long created;      /* Events created (201) */
    unsigned long updated;      /* count raised (PATCH 200) */
    unsigned long rate_limited; /* messages dropped for an empty bucket or a spent budget */
    unsigned long failed;       /* messages dropped for an API error */
    unsigned long jobs;         /* uids remembered now */
};

/** Copy the counters into *out (ev NULL gives zeros). Any thread. */
void events_get_stats(struct events *ev, struct events_stats *out);

/**
 * The Event's name for job name, reason and message into buf (at least 254
 * bytes): "<name>.<16 hex>", the name part cut so that the whole is at most 253
 * characters (a DNS-1123 subdomain). @return buf. Pure.
 */
char *events_name(char *buf, size_t len, const char *job_name, const char *reason,
                  const char *message);

#endif
