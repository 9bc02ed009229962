/* SPDX-License-Identifier: Apache-2.0 */
/*
 * informer.h - list/watch of Volcano Jobs feeding the cache (docs/kube-api.md
 * §3): LIST all namespaces (paged), then WATCH from the list's
 * resourceVersion with bookmarks; 410 Gone / Expired → LIST again; other errors →
 * reconnect with capped exponential backoff and jitter. The backoff is reset only
 * by a watch that delivered an event or bookmark; a 410 with nothing delivered
 * since the LIST backs off too (client-go's reflector). A LIST page over the
 * client's body cap (k8s_client_options.max_body) halves the page size for good.
 * Objects that are not batch.volcano.sh/v1alpha1 Jobs are skipped. With
 * informer_config.ns, one namespace only (serve --namespaces: one informer per
 * namespace on a cache_create_namespaced cache): .../namespaces/NS/jobs.
 *
 * Threads: one informer thread of its own. Handlers are called on it, in event
 * order, after the cache was updated.
 */
#ifndef WH_INFORMER_H
#define WH_INFORMER_H

#include <jansson.h>

#include "controller/cache.h"
#include "k8s/client.h"

/* Event handlers; any may be NULL. Objects are borrowed for the call. After a (re)LIST:
 * on_delete for cached Jobs not listed, on_add for new ones, on_update for ones whose
 * resourceVersion changed; unchanged ones are not reported. A Job listed under a name
 * the cache holds with another uid (deleted and created again while the watch was
 * down) is on_delete of the old one, then on_add of the new one. on_delete's Job has only
 * the fields the cache keeps (cache_put), whether from a DELETED event or a relist. */
struct informer_handlers {
    void (*on_add)(void *userdata, const json_t *job);                           /* LIST or ADDED */
    void (*on_update)(void *userdata, const json_t *old_job, const json_t *job); /* MODIFIED */
    void (*on_delete)(void *userdata, const json_t *last_known); /* DELETED, or gone at relist */
    void *userdata;
};

struct informer_config {
    long page_size;          /* LIST limit, default 500; halved (down to 1) while a page is
                                   over the client's body cap, and kept so */
    long request_timeout_ms; /* LIST page timeout, default 30000 */
    long watch_timeout_s;    /* server-side timeoutSeconds, default 300 (randomised ±10%) */
    long idle_timeout_ms;    /* stalled watch detection, default 90000 */
    long backoff_min_ms;     /* default 500 */
    long backoff_max_ms;     /* default 30000 */
    const char *ns;          /* list/watch this namespace's Jobs only, a DNS-1123 label
                                (copied); NULL or "" = every namespace. A namespace must be
                                one the cache serves (cache_create_namespaced) */
};

struct informer;

/**
 * Start the informer thread. client and cache are borrowed and must outlive it.
 * @return 0 and *out, or < 0 with err filled: WH_EINVAL (no client or cache,
 *         cfg->ns not a namespace name or not one the cache serves), WH_ENOMEM,
 *         WH_ERROR (no thread).
 */
int informer_start(struct informer **out, struct k8s_client *client, struct cache *cache,
                   const struct informer_config *cfg, const struct informer_handlers *h,
                   struct wh_error *err);

/** Ask the thread to stop, join it and free the informer. NULL is a no-op. */
void informer_stop(struct informer *inf);

/** Counters for metrics and tests (read without locks; monotonic). */
struct informer_stats {
    unsigned long lists;        /* completed LISTs */
    unsigned long watches;      /* WATCH requests started */
    unsigned long relists_gone; /* LISTs caused by 410 */
    unsigned long errors;       /* failed LIST/WATCH attempts (a page over the body cap
                                     too), and objects of another kind or namespace skipped */
};
/** Copy the counters into *out (relaxed atomic reads; each value monotonic). Any thread. */
void informer_get_stats(const struct informer *inf, struct informer_stats *out);

#endif
