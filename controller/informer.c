/* SPDX-License-Identifier: Apache-2.0 */
/*
 * informer.c - list/watch of Volcano Jobs into the Jobs cache (informer.h;
 * docs/kube-api.md §3).
 *
 * The loop, on the informer's own thread:
 *   LIST (paged) → cache_replace_all → handlers (on_delete for Jobs gone,
 *   on_add for new ones, on_update for ones whose resourceVersion changed;
 *   unchanged ones are not reported) → cache_set_synced(true)
 *   → WATCH from the list's resourceVersion, with bookmarks:
 *       ADDED / MODIFIED → cache_put, then on_add (not cached before) or
 *                          on_update (old copy, new)
 *       DELETED          → cache_remove, then on_delete
 *       BOOKMARK         → remember its resourceVersion only
 *   → the watch ends normally (timeoutSeconds): watch again from the last
 *     resourceVersion seen; WH_EGONE (410, or an ERROR event with 410): LIST
 *     again; any other error: sleep a capped exponential backoff with jitter,
 *     then watch again from the last resourceVersion (LIST when there is none).
 *     A failed LIST backs off the same way and is tried again.
 * The backoff grows with consecutive failures (backoff_min_ms · 2^(n-1), at most
 * backoff_max_ms), is drawn from [d/2, d] ("equal jitter", so that replicas do
 * not reconnect in step), and is reset only by a watch that delivered an event
 * or a bookmark, as client-go's reflector: a LIST alone proves nothing about
 * the watch. Also failures, so that a broken server cannot make us spin: a
 * watch that ends normally at once with no event (bookmarks or not), and a
 * 410 when no watch since the last LIST delivered anything (a server that
 * answers every WATCH with 410 made 229 LISTs in 10 s). A 410 after a watch
 * that did deliver (the usual compaction) relists at once.
 *
 * A LIST page over the client's body cap (WH_ETOOBIG) halves the page size and
 * lists again at once, down to 1 (one object is at most 1.5 MiB in etcd, so a
 * single-object page over the cap is a plain error with backoff). The smaller
 * size is kept for the informer's life: growing back would fail again at the
 * next relist, and smaller pages only cost more requests.
 *
 * Namespaced (informer_config.ns, serve --namespaces: one informer per
 * namespace, all on one cache): LIST and WATCH .../namespaces/NS/jobs, and a
 * LIST replaces that namespace's Jobs only (cache_replace_namespace), marking it
 * synced (cache_set_namespace_synced). A Job of another namespace in the answer
 * is skipped like an object of another kind.
 *
 * Objects of another kind than batch.volcano.sh/v1alpha1 Job (a misbehaving
 * proxy) are skipped, logged and counted in errors. LIST items may omit kind
 * and apiVersion (they are filled in), watch events may not.
 *
 * Threads: informer_start/informer_stop on the main thread; everything else on
 * the informer thread, which is the cache's only writer and calls the handlers.
 * Shared with the main thread: the stats (atomic_ulong, read by
 * informer_get_stats from any thread) and the struct backoff_thread (base/backoff.h:
 * the stop flag and the condition variable backoff sleeps wait on, so that
 * informer_stop wakes a sleeping thread at once). A WATCH notices the stop flag
 * within about a second (k8s/watch.h); a LIST page in flight is not cut short
 * (k8s_list has no stop flag), so a stop may wait for it, at most
 * request_timeout_ms.
 *
 * Objects put in the cache are the ones the watch or the LIST decoded; they are
 * referenced only by this thread and by the cache (readers get copies), which
 * keeps jansson reference counts off shared objects (see cache.c).
 */
#include "controller/informer.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/heap.h"
#include "base/log.h"
#include "k8s/names.h"
#include "k8s/watch.h"

#define JOBS_PATH       "/apis/batch.volcano.sh/v1alpha1/jobs"
#define NS_JOBS_PATH    "/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs"
#define NS_MAX_LEN      K8S_LABEL_MAX /* a namespace name is a DNS-1123 label */
#define JOB_API_VERSION "batch.volcano.sh/v1alpha1"

#define DEFAULT_PAGE_SIZE          500L
#define DEFAULT_REQUEST_TIMEOUT_MS 30000L
#define DEFAULT_WATCH_TIMEOUT_S    300L
#define DEFAULT_IDLE_TIMEOUT_MS    90000L
#define DEFAULT_BACKOFF_MIN_MS     500L
#define DEFAULT_BACKOFF_MAX_MS     30000L
#define SHORT_WATCH_MS             1000L /* a normal end sooner than this with no event: a failure */

struct informer {
    struct k8s_client *client;  /* borrowed */
    struct cache *cache;        /* borrowed */
    struct informer_config cfg; /* defaults filled in */
    struct informer_handlers h;
    char ns[NS_MAX_LEN + 1];  /* cfg.ns copied; "" = every namespace */
    char path[128];           /* the Jobs collection listed and watched */
    struct backoff_thread th; /* the informer thread, stopped by informer_stop */

    atomic_ulong lists;
    atomic_ulong watches;
    atomic_ulong relists_gone;
    atomic_ulong errors;

    /* Informer thread only. */
    char *rv;                /* where the next WATCH starts; NULL → LIST first */
    long page_size;          /* LIST limit now: cfg.page_size, halved on WH_ETOOBIG */
    unsigned failures;       /* consecutive failed attempts (backoff exponent) */
    unsigned seed;           /* rand_r state for jitter */
    unsigned long delivered; /* change events handled by the current watch */
    unsigned long bookmarks; /* bookmarks seen by the current watch */
    bool progressed;         /* a watch since the last LIST delivered something */
    size_t skipped;          /* wrong-kind items of the LIST in progress */
};

static bool stopping(struct informer *inf)
{
    return backoff_thread_stopping(&inf->th);
}

static const char *meta_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static const char *str_or(const char *s, const char *dflt)
{
    return s != NULL ? s : dflt;
}

/* Remember rv as the place to resume from. */
static void set_rv(struct informer *inf, const char *rv)
{
    char *copy;

    if (rv == NULL || rv[0] == '\0')
        return;
    copy = strdup(rv);
    if (copy == NULL)
        return; /* keep the older one: at worst events are seen twice */
    free(inf->rv);
    inf->rv = copy;
}

/* One more failure: sleep the capped exponential backoff with equal jitter. */
static void backoff(struct informer *inf)
{
    long d;
    long wait;

    if (inf->failures < 32)
        inf->failures++;
    d = backoff_delay_ms(inf->cfg.backoff_min_ms, inf->cfg.backoff_max_ms, inf->failures);
    wait = backoff_jitter_ms(&inf->seed, d / 2, d);
    LOG_DEBUG("informer: backoff ms=%ld failures=%u", wait, inf->failures);
    backoff_thread_sleep_ms(&inf->th, wait);
}

/*
 * Whether obj is a Volcano Job by its kind and apiVersion. missing_ok: an absent
 * member passes (LIST items may omit them); a present other value never does.
 */
static bool is_job(const json_t *obj, bool missing_ok)
{
    const json_t *kind = json_object_get(obj, "kind");
    const json_t *av = json_object_get(obj, "apiVersion");

    if ((kind == NULL || av == NULL) && !missing_ok)
        return false;
    if (kind != NULL && !(json_is_string(kind) && strcmp(json_string_value(kind), "Job") == 0))
        return false;
    return av == NULL
        || (json_is_string(av) && strcmp(json_string_value(av), JOB_API_VERSION) == 0);
}

/* Log an object is_job refused; where: "list" or "watch". */
static void warn_wrong_kind(const json_t *obj, const char *where)
{
    LOG_WARN("informer: skipped an object of another kind in the jobs %s kind=%s "
             "api_version=%s job=%s/%s",
             where, str_or(json_string_value(json_object_get(obj, "kind")), "-"),
             str_or(json_string_value(json_object_get(obj, "apiVersion")), "-"),
             str_or(meta_str(obj, "namespace"), ""), str_or(meta_str(obj, "name"), ""));
}

/* Whether obj belongs to another namespace than the one inf watches (never for every
 * namespace). */
static bool other_namespace(const struct informer *inf, const json_t *obj)
{
    const char *ns = meta_str(obj, "namespace");

    return inf->ns[0] != '\0' && (ns == NULL || strcmp(ns, inf->ns) != 0);
}

/* Log an object of another namespace than ours; where: "list" or "watch". */
static void warn_other_namespace(const struct informer *inf, const json_t *obj, const char *where)
{
    LOG_WARN("informer: skipped a job of another namespace in the jobs %s ns=%s job=%s/%s", where,
             inf->ns, str_or(meta_str(obj, "namespace"), ""), str_or(meta_str(obj, "name"), ""));
}

/* Items of a Job LIST may lack apiVersion/kind (kube omits them in lists): add them. */
static void fill_type_meta(json_t *job)
{
    if (json_object_get(job, "apiVersion") == NULL)
        json_object_set_new(job, "apiVersion", json_string(JOB_API_VERSION));
    if (json_object_get(job, "kind") == NULL)
        json_object_set_new(job, "kind", json_string("Job"));
}

struct list_report {
    struct informer *inf;
    struct cache_batch *batch;
    size_t removed;
};

/* k8s_page_fn of informer_list: each listed Job into the batch (userdata: the report). */
static int add_page(void *userdata, json_t *items, struct wh_error *err)
{
    struct list_report *r = userdata;
    size_t i;
    json_t *job;

    json_array_foreach(items, i, job) {
        if (json_is_object(job) && !is_job(job, true)) {
            /* One line per LIST, not per item: a proxy may answer with thousands. */
            if (r->inf->skipped++ == 0)
                warn_wrong_kind(job, "list");
            atomic_fetch_add(&r->inf->errors, 1);
            continue;
        }
        if (json_is_object(job) && other_namespace(r->inf, job)) {
            if (r->inf->skipped++ == 0)
                warn_other_namespace(r->inf, job, "list");
            atomic_fetch_add(&r->inf->errors, 1);
            continue;
        }
        if (json_is_object(job))
            fill_type_meta(job);
        /* WH_EINVAL: no namespace or name, never a Job we could look up: skipped. */
        if (cache_batch_add(r->batch, job) == WH_ENOMEM)
            return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    return 0;
}

/* cache_change_fn of informer_list: the differences the LIST made, to the handlers. */
static void on_list_change(void *userdata, const json_t *old_job, const json_t *job)
{
    struct list_report *r = userdata;
    const struct informer_handlers *h = &r->inf->h;

    if (job == NULL) {
        r->removed++;
        if (h->on_delete != NULL)
            h->on_delete(h->userdata, old_job);
    } else if (old_job == NULL) {
        if (h->on_add != NULL)
            h->on_add(h->userdata, job);
    } else if (h->on_update != NULL) {
        h->on_update(h->userdata, old_job, job);
    }
}

/*
 * LIST every Job, replace the cache, report the differences. Page by page into a
 * cache batch: only one page of full Jobs is held at a time (a LIST of 10,000
 * Jobs held whole peaked at over 300 MiB).
 */
static int informer_list(struct informer *inf, struct wh_error *err)
{
    struct cache_batch *batch = cache_batch_create();
    struct list_report report = {inf, batch, 0};
    char *rv = NULL;
    int rc;

    if (batch == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    inf->skipped = 0;
    rc = k8s_list_pages(inf->client, inf->path, inf->page_size, inf->cfg.request_timeout_ms,
                        add_page, &report, &rv, err);
    if (inf->skipped > 1)
        LOG_WARN("informer: skipped objects of another kind or namespace in the jobs list "
                 "count=%zu",
                 inf->skipped);
    if (rc < 0)
        goto out;
    if (inf->ns[0] != '\0')
        rc = cache_replace_namespace(inf->cache, inf->ns, batch, on_list_change, &report);
    else
        rc = cache_replace_all(inf->cache, batch, on_list_change, &report);
    if (rc < 0) {
        wh_error_set(err, rc, "cannot replace the jobs cache: %s", wh_error_str(rc));
        goto out;
    }
    if (inf->ns[0] != '\0')
        cache_set_namespace_synced(inf->cache, inf->ns);
    else
        cache_set_synced(inf->cache, true);
    free(inf->rv);
    inf->rv = rv;
    rv = NULL; /* now owned by inf */
    inf->progressed = false;
    atomic_fetch_add(&inf->lists, 1);
    LOG_INFO("informer: listed path=%s jobs=%zu removed=%zu resource_version=%s", inf->path,
             cache_size(inf->cache), report.removed, str_or(inf->rv, ""));
out:
    free(rv);
    cache_batch_destroy(batch);
    /*
     * The LIST's pages are gone now, and the cache kept only compact text: give the
     * freed pages back to the kernel, or the resident size stays at the LIST's peak
     * (neither glibc nor mimalloc returns them by itself).
     */
    heap_release_free();
    return rc;
}

/* watch_fn: apply one event to the cache, then call the handler. */
static int on_watch_event(void *userdata, enum watch_event_type type, json_t *obj)
{
    struct informer *inf = userdata;
    const char *ns = str_or(meta_str(obj, "namespace"), "");
    const char *name = str_or(meta_str(obj, "name"), "");
    json_t *old = NULL;

    if (type != WATCH_BOOKMARK && type != WATCH_ERROR && !is_job(obj, false)) {
        /* Never cached, never reported, not progress; its rv still moves us on. */
        warn_wrong_kind(obj, "watch");
        atomic_fetch_add(&inf->errors, 1);
        set_rv(inf, meta_str(obj, "resourceVersion"));
        return 0;
    }
    if (type != WATCH_BOOKMARK && type != WATCH_ERROR && other_namespace(inf, obj)) {
        warn_other_namespace(inf, obj, "watch");
        atomic_fetch_add(&inf->errors, 1);
        set_rv(inf, meta_str(obj, "resourceVersion"));
        return 0;
    }
    switch (type) {
    case WATCH_BOOKMARK:
        LOG_DEBUG("informer: bookmark resource_version=%s",
                  str_or(meta_str(obj, "resourceVersion"), ""));
        inf->bookmarks++;
        break;
    case WATCH_ADDED:
    case WATCH_MODIFIED:
        if (cache_get(inf->cache, ns, name, &old) != 0)
            old = NULL;
        if (cache_put(inf->cache, obj) < 0) {
            LOG_WARN("informer: cannot cache a job without namespace or name job=%s/%s", ns, name);
            json_decref(old);
            break;
        }
        LOG_DEBUG("informer: event type=%s job=%s/%s resource_version=%s",
                  type == WATCH_ADDED ? "added" : "modified", ns, name,
                  str_or(meta_str(obj, "resourceVersion"), ""));
        if (old == NULL) {
            if (inf->h.on_add != NULL)
                inf->h.on_add(inf->h.userdata, obj);
        } else if (inf->h.on_update != NULL) {
            inf->h.on_update(inf->h.userdata, old, obj);
        }
        json_decref(old);
        inf->delivered++;
        break;
    case WATCH_DELETED:
        cache_remove(inf->cache, ns, name); /* WH_ENOTFOUND: already gone, still report */
        LOG_DEBUG("informer: event type=deleted job=%s/%s", ns, name);
        if (inf->h.on_delete != NULL) {
            /* The kept fields only, as at a relist: a handler may hold it until it runs. */
            json_t *kept = cache_kept_job(obj);

            inf->h.on_delete(inf->h.userdata, kept != NULL ? kept : obj);
            json_decref(kept);
        }
        inf->delivered++;
        break;
    case WATCH_ERROR: break; /* k8s_watch ends the stream itself on ERROR events */
    }
    set_rv(inf, meta_str(obj, "resourceVersion"));
    return 0;
}

/* One WATCH from inf->rv. @return k8s_watch's result. */
static int informer_watch(struct informer *inf, struct wh_error *err)
{
    struct watch_params p;
    long t = inf->cfg.watch_timeout_s;
    char *last_rv = NULL;
    int rc;

    /* timeoutSeconds randomised ±10% so that replicas do not reconnect in step. */
    if (t >= 10)
        t = backoff_jitter_ms(&inf->seed, t - t / 10, t + t / 10);
    memset(&p, 0, sizeof(p));
    p.path = inf->path;
    p.resource_version = inf->rv;
    p.timeout_seconds = t;
    p.idle_timeout_ms = inf->cfg.idle_timeout_ms;
    p.stop = backoff_thread_flag(&inf->th);
    atomic_fetch_add(&inf->watches, 1);
    LOG_DEBUG("informer: watch resource_version=%s timeout_seconds=%ld", str_or(inf->rv, ""), t);
    rc = k8s_watch(inf->client, &p, on_watch_event, inf, &last_rv, err);
    /* Our callback tracked every event's rv; last_rv can only agree (or be newer). */
    if (last_rv != NULL)
        set_rv(inf, last_rv);
    free(last_rv);
    return rc;
}

static void *informer_main(void *arg)
{
    struct informer *inf = arg;
    bool need_list = true;
    struct wh_error err;
    int rc;

    while (!stopping(inf)) {
        if (need_list || inf->rv == NULL) {
            wh_error_clear(&err);
            rc = informer_list(inf, &err);
            if (stopping(inf))
                break;
            if (rc < 0) {
                atomic_fetch_add(&inf->errors, 1);
                if (rc == WH_EGONE)
                    atomic_fetch_add(&inf->relists_gone, 1);
                if (rc == WH_ETOOBIG && inf->page_size > 1) {
                    /* A page of big Jobs is over the body cap: ask for fewer, at once. */
                    inf->page_size /= 2;
                    LOG_WARN("informer: list page over the body cap, listing again with "
                             "smaller pages limit=%ld err=%s",
                             inf->page_size, LOG_QUOTED(err.msg));
                    continue;
                }
                LOG_WARN("informer: list failed path=%s err=%s", inf->path,
                         LOG_QUOTED(err.msg[0] != '\0' ? err.msg : wh_error_str(rc)));
                backoff(inf);
                continue;
            }
            /* Not a reset of failures: only a watch that delivers proves the server sane. */
            need_list = false;
        }
        {
            long started = clock_mono_ms();
            bool seen;

            inf->delivered = 0;
            inf->bookmarks = 0;
            wh_error_clear(&err);
            rc = informer_watch(inf, &err);
            if (stopping(inf))
                break;
            seen = inf->delivered > 0 || inf->bookmarks > 0;
            if (rc == 0) {
                /* Ended normally (timeoutSeconds): resume from the last rv at once, unless
                 * it ended at once with no change (a bookmark alone is no reason to spin). */
                if (inf->delivered == 0 && clock_mono_ms() - started < SHORT_WATCH_MS) {
                    backoff(inf);
                    continue;
                }
                if (seen) {
                    inf->failures = 0;
                    inf->progressed = true;
                }
                continue;
            }
            if (seen) {
                inf->failures = 0;
                inf->progressed = true;
            }
            if (rc == WH_EGONE) {
                /* Our resourceVersion is older than the server's history: LIST again. */
                atomic_fetch_add(&inf->relists_gone, 1);
                if (!inf->progressed) {
                    /* 410 right after a LIST, nothing delivered: a failure, or we storm. */
                    LOG_WARN("informer: resource version gone (410) with nothing watched "
                             "since the list, listing again after a backoff "
                             "resource_version=%s",
                             str_or(inf->rv, ""));
                    backoff(inf);
                } else {
                    LOG_INFO("informer: resource version gone (410), listing again "
                             "resource_version=%s",
                             str_or(inf->rv, ""));
                }
                need_list = true;
                continue;
            }
            atomic_fetch_add(&inf->errors, 1);
            LOG_WARN("informer: watch failed resource_version=%s err=%s", str_or(inf->rv, ""),
                     LOG_QUOTED(err.msg[0] != '\0' ? err.msg : wh_error_str(rc)));
            backoff(inf);
        }
    }
    return NULL;
}

int informer_start(struct informer **out, struct k8s_client *client, struct cache *cache,
                   const struct informer_config *cfg, const struct informer_handlers *h,
                   struct wh_error *err)
{
    struct informer *inf;
    int rc;

    *out = NULL;
    if (client == NULL || cache == NULL)
        return wh_error_set(err, WH_EINVAL, "informer: no client or cache");
    if (cfg != NULL && cfg->ns != NULL && cfg->ns[0] != '\0' && !k8s_name_is_label(cfg->ns))
        return wh_error_set(err, WH_EINVAL, "informer: invalid namespace \"%.64s\"", cfg->ns);
    /* Its LISTs would fail for good (cache_replace_namespace): say so now. */
    if (cfg != NULL && cfg->ns != NULL && cfg->ns[0] != '\0' && !cache_serves(cache, cfg->ns))
        return wh_error_set(err, WH_EINVAL, "informer: the cache does not serve namespace %s",
                            cfg->ns);
    inf = calloc(1, sizeof(*inf));
    if (inf == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    inf->client = client;
    inf->cache = cache;
    if (cfg != NULL && cfg->ns != NULL)
        snprintf(inf->ns, sizeof(inf->ns), "%s", cfg->ns);
    if (inf->ns[0] != '\0')
        snprintf(inf->path, sizeof(inf->path), NS_JOBS_PATH, inf->ns);
    else
        snprintf(inf->path, sizeof(inf->path), "%s", JOBS_PATH);
    if (cfg != NULL)
        inf->cfg = *cfg;
    inf->cfg.ns = inf->ns; /* our copy, not the caller's */
    if (h != NULL)
        inf->h = *h;
    if (inf->cfg.page_size <= 0)
        inf->cfg.page_size = DEFAULT_PAGE_SIZE;
    inf->page_size = inf->cfg.page_size;
    if (inf->cfg.request_timeout_ms <= 0)
        inf->cfg.request_timeout_ms = DEFAULT_REQUEST_TIMEOUT_MS;
    if (inf->cfg.watch_timeout_s <= 0)
        inf->cfg.watch_timeout_s = DEFAULT_WATCH_TIMEOUT_S;
    if (inf->cfg.idle_timeout_ms <= 0)
        inf->cfg.idle_timeout_ms = DEFAULT_IDLE_TIMEOUT_MS;
    if (inf->cfg.backoff_min_ms <= 0)
        inf->cfg.backoff_min_ms = DEFAULT_BACKOFF_MIN_MS;
    if (inf->cfg.backoff_max_ms <= 0)
        inf->cfg.backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
    if (inf->cfg.backoff_max_ms < inf->cfg.backoff_min_ms)
        inf->cfg.backoff_max_ms = inf->cfg.backoff_min_ms;
    inf->seed = backoff_seed(inf);
    atomic_init(&inf->lists, 0);
    atomic_init(&inf->watches, 0);
    atomic_init(&inf->relists_gone, 0);
    atomic_init(&inf->errors, 0);

    if (backoff_thread_start(&inf->th, informer_main, inf) < 0) {
        rc = errno;
        free(inf);
        return wh_error_set(err, WH_ERROR, "cannot start the informer thread: %s", strerror(rc));
    }
    *out = inf;
    return 0;
}

void informer_stop(struct informer *inf)
{
    if (inf == NULL)
        return;
    backoff_thread_stop(&inf->th);
    free(inf->rv);
    free(inf);
}

void informer_get_stats(const struct informer *inf, struct informer_stats *out)
{
    out->lists = atomic_load(&inf->lists);
    out->watches = atomic_load(&inf->watches);
    out->relists_gone = atomic_load(&inf->relists_gone);
    out->errors = atomic_load(&inf->errors);
}
