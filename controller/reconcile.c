/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile.c - the reconcile side (docs/plugins.md §3.2, §5.2, decisions D9-D12): a work
 * queue of Job keys "ns/name" and worker threads that run the plugins'
 * OnJobAdd / OnJobUpdate / OnJobDelete.
 *
 * Queue: controller/workqueue.h (client-go workqueue semantics): a key is never
 * worked on by two workers at once and ten changes during one run cause one more
 * run. A failed run re-adds the key after a per-key exponential backoff
 * (reconcile_backoff_ms); a successful run resets it. A key's datum is its
 * pending deletion (the last known Job).
 *
 * Per Job uid the reconciler remembers which plugins it has run hooks for
 * ("touched": OnJobAdd was called, so objects may exist) and which OnJobAdd
 * succeeded ("added"). Rules (D10):
 *   - Job live, phase not terminal: for every plugin of the effective set (D1) in
 *     registry order, OnJobAdd while its add has not succeeded for this uid
 *     (first sight, also after a restart of this process), else OnJobUpdate;
 *     touched plugins no longer in the set get OnJobDelete.
 *   - Job terminal (Completed, Failed, Terminated, Aborted) or deleted: OnJobDelete
 *     of the touched set, or of the effective set when nothing is recorded.
 *   Every hook of a run is called even if one fails; the first error is kept and
 *   the key retried with backoff, as a hook that failed must run again.
 *
 * Followers keep no per-Job state. While this replica does not lead, enqueue and
 * deleted are ignored; losing the lead drops every queued key, pending retry and
 * pending deletion, and (once no run is in flight) every uid record together with
 * the ssh key pair the store keeps for that uid. Taking the lead queues every
 * cached Job (enqueue_all), which covers each live Job (a terminal one gets its
 * teardown); the objects of Jobs deleted meanwhile go with ownerReference garbage
 * collection (D10). Without this a standby held a key and a Job copy per deleted
 * Job, without bound, and a new leader first tore down thousands of long-gone Jobs.
 *
 * Threads:
 *   informer thread  reconcile_enqueue, reconcile_deleted (take r->mu briefly)
 *   leader thread    reconcile_set_leading
 *   workers          cfg.workers threads: pick a key, run its hooks with no lock held
 *   clock thread     moves keys whose backoff has passed into the FIFO, and
 *                    re-queues every cached Job each resync period while leading
 * r->mu guards everything below it in struct reconcile (the work queue, which
 * has no lock of its own, the uid table, flags, counters); it is never held across
 * a hook, a cache call or an API request.
 * The foreign counter is written by plugins with atomic builtins.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/strmap.h"
#include "controller/events.h"
#include "controller/reconcile.h"
#include "controller/reconcile_internal.h"
#include "controller/workqueue.h"
#include "plugins/plugin.h"
#include "plugins/sshkeys.h"

#define DEFAULT_WORKERS        4
#define DEFAULT_RESYNC_S       600L
#define DEFAULT_TIMEOUT_MS     10000L
#define DEFAULT_BACKOFF_MIN_MS 500L
#define DEFAULT_BACKOFF_MAX_MS 60000L
#define MAX_WORKERS            64
#define MAX_PLUGINS            32 /* bits of a plugin mask */
/* Failed runs in a row (0.5 + 1 + 2 + 4 s of backoff between them) before a hook's
 * error becomes a PluginError Event on the Job. */
#define EVENT_AFTER_FAILURES 5

/* Per Job uid: what this process has run hooks for. */
struct rc_uid {
    uint32_t touched; /* bit k: plugin k's OnJobAdd was called */
    uint32_t added;   /* bit k: plugin k's OnJobAdd succeeded */
};

struct reconcile {
    struct k8s_client *kc;             /* borrowed */
    struct cache *cache;               /* borrowed */
    const struct plugin *const *table; /* borrowed, plugin_registry_len entries */
    struct reconcile_config cfg;       /* with defaults filled in */
    struct sshkeys_store *ssh_keys;    /* owned (D11) */
    struct events *events;             /* owned (D17); NULL without a client */
    struct plugin_job_env env;         /* handed to every job hook */
    unsigned long foreign;             /* D12 counter, atomic builtins */
    pthread_t *workers;
    int nworkers; /* started worker threads */
    pthread_t clock;
    bool clock_started;

    pthread_mutex_t mu;
    pthread_cond_t work_cv;  /* workers: key queued, leading, stopping */
    pthread_cond_t clock_cv; /* clock thread: backoff scheduled, leading, stopping */
    struct workqueue queue;  /* keys "ns/name"; datum: owned json_t * of a pending deletion */
    struct strmap *uids;     /* metadata.uid -> struct rc_uid; NULL until the first */
    bool accepting;          /* enqueue/deleted take work (set before enqueue_all) */
    bool leading;            /* workers run */
    bool forget_uids;        /* lead lost: drop uid records when running is 0 */
    bool stopping;
    unsigned running; /* keys being processed now */
    unsigned long reconciles;
    unsigned long errors;
};

/* ---- time ---- */

/* The queue's destructor of a key's datum: a pending deletion's last known Job. */
static void deleted_free(void *data)
{
    json_decref(data);
}

/* ---- uid records (r->mu held) ---- */

static struct rc_uid *uid_get(struct reconcile *r, const char *uid, bool create)
{
    struct rc_uid *u = r->uids != NULL ? strmap_get(r->uids, uid) : NULL;

    if (u != NULL || !create)
        return u;
    if (r->uids == NULL && (r->uids = strmap_create(free)) == NULL)
        return NULL;
    u = calloc(1, sizeof(*u));
    if (u == NULL || strmap_set(r->uids, uid, u) < 0) {
        free(u);
        return NULL;
    }
    return u;
}

static void uid_forget(struct reconcile *r, const char *uid)
{
    if (r->uids == NULL || strmap_remove(r->uids, uid) < 0)
        return;
    events_forget(r->events, uid);
}

/* strmap_filter callback of uids_forget_all: drop the uid's ssh key pair, and the record. */
static bool drop_uid_keys(const char *uid, void *value, void *ctx)
{
    (void)value;
    sshkeys_drop(ctx, uid);
    return false;
}

/*
 * Forget every uid record and the ssh key pair kept for each uid (the lead was
 * lost and no run is in flight). r->mu held on entry and on return; released
 * while the pairs are dropped, since the key store has a lock of its own.
 */
static void uids_forget_all(struct reconcile *r)
{
    struct strmap *uids = r->uids; /* detached: the next uid_get makes a new map */
    size_t n = uids != NULL ? strmap_size(uids) : 0;

    r->forget_uids = false;
    r->uids = NULL;
    pthread_mutex_unlock(&r->mu);
    events_forget_all(r->events);
    if (uids != NULL)
        strmap_filter(uids, drop_uid_keys, r->ssh_keys);
    strmap_destroy(uids);
    if (n > 0)
        LOG_INFO("reconcile: not leading, forgot jobs=%zu", n);
    pthread_mutex_lock(&r->mu);
}

/* ---- Jobs ---- */

static const char *job_str(const json_t *job, const char *a, const char *b)
{
    const char *s = json_string_value(json_object_get(json_object_get(job, a), b));

    return s != NULL ? s : "";
}

/* "ns/name" of job into buf. @return 0, or WH_EINVAL when a part is missing or too long. */
static int job_key(const json_t *job, char *buf, size_t len)
{
    const char *ns = job_str(job, "metadata", "namespace");
    const char *name = job_str(job, "metadata", "name");

    if (*ns == '\0' || *name == '\0')
        return WH_EINVAL;
    if ((size_t)snprintf(buf, len, "%s/%s", ns, name) >= len)
        return WH_EINVAL;
    return 0;
}

/* Phases after which Volcano kills the Job's pods for good (D10). */
static bool job_terminal(const json_t *job)
{
    static const char *const terminal[] = {"Completed", "Failed", "Terminated", "Aborted"};
    const char *phase = json_string_value(
        json_object_get(json_object_get(json_object_get(job, "status"), "state"), "phase"));

    if (phase == NULL)
        return false;
    for (size_t i = 0; i < sizeof(terminal) / sizeof(terminal[0]); i++)
        if (strcmp(phase, terminal[i]) == 0)
            return true;
    return false;
}

/* Effective set of D1 as a mask, with each plugin's borrowed arguments. */
static uint32_t effective_mask(const json_t *job, const json_t **args)
{
    bool enabled[MAX_PLUGINS];
    uint32_t mask = 0;

    plugin_effective_set(job, enabled, args, NULL);
    for (size_t k = 0; k < plugin_registry_len; k++)
        if (enabled[k])
            mask |= (uint32_t)1 << k;
    return mask;
}

/* ---- running hooks (no lock held) ---- */

enum rc_hook { HOOK_ADD, HOOK_UPDATE, HOOK_DELETE };

/*
 * Call one hook of plugin k on job. NULL hook = success.
 * @return 0 or the hook's error, logged here with the job key, and its message
 *         prefixed with the plugin's name (plugin_error_name, the one place).
 */
static int run_hook(struct reconcile *r, size_t k, enum rc_hook which, const char *key,
                    const json_t *job, const json_t *args)
{
    static const char *const names[] = {"add", "update", "delete"};
    const struct plugin *p = r->table[k];
    int (*fn)(const struct plugin_ctx *, struct wh_error *) = which == HOOK_ADD ? p->on_job_add
        : which == HOOK_UPDATE                                                  ? p->on_job_update
                                                                                : p->on_job_delete;
    struct plugin_ctx ctx;
    struct wh_error err = {0, ""};
    unsigned failures;
    int rc;

    if (fn == NULL)
        return 0;
    memset(&ctx, 0, sizeof(ctx));
    ctx.name = p->name;
    ctx.job = job;
    ctx.args = args;
    ctx.kc = r->kc;
    ctx.env = &r->env;
    rc = fn(&ctx, &err);
    if (rc < 0) {
        plugin_error_name(&err, p->name, rc);
        LOG_WARN("reconcile: hook failed job=%s uid=%s plugin=%s hook=%s rc=\"%s\" err=%s", key,
                 job_str(job, "metadata", "uid"), p->name, names[which], wh_error_str(rc),
                 LOG_QUOTED(err.msg));
        pthread_mutex_lock(&r->mu);
        r->errors++;
        failures = workqueue_num_requeues(&r->queue, key) + 1; /* this one included */
        pthread_mutex_unlock(&r->mu);
        /* Outlasted its retries: tell the Job (D17). The message leaves the number of
         * failures out, so that each repeat counts on one Event. */
        if (failures >= EVENT_AFTER_FAILURES) {
            static const char *const hooks[] = {"OnJobAdd", "OnJobUpdate", "OnJobDelete"};
            char msg[512];

            char own[64];
            const char *why = err.msg[0] != '\0' ? err.msg : wh_error_str(rc);

            /* plugin_error_name put "<plugin> plugin: " first: say it once */
            snprintf(own, sizeof(own), "%s plugin: ", p->name);
            if (strncmp(why, own, strlen(own)) == 0)
                why += strlen(own);
            snprintf(msg, sizeof(msg), "%s%s keeps failing, retried with backoff: %s", own,
                     hooks[which], why);
            (void)events_record(r->events, job, "PluginError", msg, NULL);
        }
        return rc;
    }
    LOG_DEBUG("reconcile: hook done job=%s plugin=%s hook=%s", key, p->name, names[which]);
    return 0;
}

/*
 * OnJobDelete for the touched set of job's uid (the effective set when nothing is
 * recorded). Every hook runs; the record keeps the plugins whose delete failed.
 * forget: drop the uid record on full success (the Job is gone).
 * @return 0 or the first error.
 */
static int run_teardown(struct reconcile *r, const char *key, const json_t *job, bool forget)
{
    const char *uid = job_str(job, "metadata", "uid");
    const json_t *args[MAX_PLUGINS];
    uint32_t eff = effective_mask(job, args);
    uint32_t mask;
    uint32_t failed = 0;
    struct rc_uid *u;
    int first = 0;

    pthread_mutex_lock(&r->mu);
    u = uid_get(r, uid, false);
    mask = u != NULL ? u->touched : eff;
    pthread_mutex_unlock(&r->mu);

    for (size_t k = 0; k < plugin_registry_len; k++) {
        int rc;

        if (!(mask & ((uint32_t)1 << k)))
            continue;
        rc = run_hook(r, k, HOOK_DELETE, key, job, (eff & ((uint32_t)1 << k)) ? args[k] : NULL);
        if (rc < 0) {
            failed |= (uint32_t)1 << k;
            if (first == 0)
                first = rc;
        }
    }

    pthread_mutex_lock(&r->mu);
    if (forget && failed == 0) {
        uid_forget(r, uid);
    } else {
        u = uid_get(r, uid, true);
        if (u != NULL) {
            u->touched = failed;
            u->added &= failed;
        } else if (first == 0) {
            first = WH_ENOMEM; /* cannot remember: retry rather than forget */
        }
    }
    pthread_mutex_unlock(&r->mu);
    if (mask != 0)
        LOG_INFO("reconcile: teardown job=%s uid=%s rc=\"%s\"", key, uid, wh_error_str(first));
    return first;
}

/* Live, non-terminal Job: add/update its effective set, delete what left it. */
static int run_apply(struct reconcile *r, const char *key, const json_t *job)
{
    const char *uid = job_str(job, "metadata", "uid");
    const json_t *args[MAX_PLUGINS];
    uint32_t eff = effective_mask(job, args);
    uint32_t touched;
    uint32_t added;
    struct rc_uid *u;
    int first = 0;

    pthread_mutex_lock(&r->mu);
    u = uid_get(r, uid, true);
    if (u == NULL) {
        pthread_mutex_unlock(&r->mu);
        return WH_ENOMEM;
    }
    touched = u->touched;
    added = u->added;
    /* Mark before the calls: a failed OnJobAdd may have created objects already. */
    u->touched |= eff;
    pthread_mutex_unlock(&r->mu);

    for (size_t k = 0; k < plugin_registry_len; k++) {
        uint32_t bit = (uint32_t)1 << k;
        int rc;

        if (eff & bit) {
            rc = run_hook(r, k, (added & bit) ? HOOK_UPDATE : HOOK_ADD, key, job, args[k]);
            if (rc == 0)
                added |= bit;
        } else if (touched & bit) {
            rc = run_hook(r, k, HOOK_DELETE, key, job, NULL);
            if (rc == 0) {
                touched &= ~bit;
                added &= ~bit;
            }
        } else {
            continue;
        }
        if (rc < 0 && first == 0)
            first = rc;
    }

    pthread_mutex_lock(&r->mu);
    u = uid_get(r, uid, false); /* only this worker touches this uid's record */
    if (u != NULL) {
        u->touched = touched | eff;
        u->added = added;
    }
    pthread_mutex_unlock(&r->mu);
    (void)events_diagnose_job(r->events, job, NULL); /* told on the Job (D17); logs its errors */
    return first;
}

/*
 * One run of key. deleted (owned, may be NULL) is a pending deletion; when its
 * teardown fails it is handed back through *deleted_back for the retry.
 */
static int process_key(struct reconcile *r, const char *key, json_t *deleted, json_t **deleted_back)
{
    const char *slash = strchr(key, '/');
    char ns[256];
    json_t *live = NULL;
    int rc = 0;
    int rc2;

    *deleted_back = NULL;
    if (slash == NULL || (size_t)(slash - key) >= sizeof(ns)) {
        json_decref(deleted);
        return 0;
    }
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    if (cache_get(r->cache, ns, slash + 1, &live) < 0)
        live = NULL;

    if (deleted != NULL) {
        const char *duid = job_str(deleted, "metadata", "uid");

        /* A Job of the same name but another uid is a new Job: tear the old one down. */
        if (live == NULL || strcmp(duid, job_str(live, "metadata", "uid")) != 0) {
            rc = run_teardown(r, key, deleted, true);
            if (rc < 0) {
                *deleted_back = deleted; /* now owned by the caller */
                deleted = NULL;
            }
        }
        json_decref(deleted);
    }
    if (live != NULL) {
        rc2 = job_terminal(live) ? run_teardown(r, key, live, false) : run_apply(r, key, live);
        if (rc == 0)
            rc = rc2;
        json_decref(live);
    }
    return rc;
}

/* ---- threads ---- */

static void *worker_main(void *arg)
{
    struct reconcile *r = arg;

    pthread_mutex_lock(&r->mu);
    for (;;) {
        const char *key;
        void *deleted;
        json_t *back = NULL;
        int rc;

        while (!r->stopping && (!r->leading || workqueue_len(&r->queue) == 0))
            pthread_cond_wait(&r->work_cv, &r->mu);
        if (r->stopping)
            break;
        key = workqueue_get(&r->queue, &deleted); /* deleted: now owned by this run */
        r->running++;
        pthread_mutex_unlock(&r->mu);

        /* key stays valid until workqueue_done, and never changes. */
        rc = process_key(r, key, deleted, &back);

        pthread_mutex_lock(&r->mu);
        r->reconciles++;
        r->running--;
        if (!r->leading) {
            /* The lead was lost during the run: keep nothing for this key. */
            json_decref(back);
            back = NULL;
            rc = 0;
        }
        if (rc < 0) {
            if (workqueue_add_rate_limited(&r->queue, key, clock_mono_ms()) < 0)
                LOG_ERROR("reconcile: out of memory, retry not scheduled job=%s", key);
            pthread_cond_signal(&r->clock_cv);
        } else {
            workqueue_forget(&r->queue, key); /* success resets the backoff */
        }
        /* back: retried with the next run, unless a newer deletion replaced it */
        workqueue_done(&r->queue, key, back);
        if (workqueue_len(&r->queue) > 0)
            pthread_cond_signal(&r->work_cv);
        if (r->forget_uids && r->running == 0)
            uids_forget_all(r); /* the last run in flight when the lead was lost */
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* Queue every cached Job (resync, new leadership). No lock held on entry. */
static void enqueue_all(struct reconcile *r)
{
    json_t *jobs = cache_list(r->cache);
    size_t i;
    json_t *job;

    json_array_foreach(jobs, i, job)
        reconcile_enqueue(r, job);
    LOG_DEBUG("reconcile: resync jobs=%zu", json_array_size(jobs));
    json_decref(jobs);
}

static void *clock_main(void *arg)
{
    struct reconcile *r = arg;
    long long period = r->cfg.resync_period_s * 1000LL;
    long long next_resync = clock_mono_ms() + period;

    pthread_mutex_lock(&r->mu);
    while (!r->stopping) {
        long long now = clock_mono_ms();
        long long wake = next_resync;
        long long due;
        struct timespec ts;

        if (now >= next_resync) {
            next_resync = now + period;
            if (r->leading) {
                pthread_mutex_unlock(&r->mu);
                enqueue_all(r);
                pthread_mutex_lock(&r->mu);
                continue;
            }
        }
        if (workqueue_promote(&r->queue, now, &due) > 0)
            pthread_cond_broadcast(&r->work_cv);
        if (due != 0 && due < wake)
            wake = due;
        ts = clock_at_ms(wake);
        pthread_cond_timedwait(&r->clock_cv, &r->mu, &ts);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ---- public ---- */

long reconcile_backoff_ms(const struct reconcile_config *cfg, unsigned failures)
{
    long lo = cfg != NULL && cfg->backoff_min_ms > 0 ? cfg->backoff_min_ms : DEFAULT_BACKOFF_MIN_MS;
    long hi = cfg != NULL && cfg->backoff_max_ms > 0 ? cfg->backoff_max_ms : DEFAULT_BACKOFF_MAX_MS;

    return backoff_delay_ms(lo, hi, failures);
}

/* with_events: post Events through kc (D17); not with a test's hook table. */
static int start(struct reconcile **out, struct k8s_client *kc, struct cache *cache,
                 const struct reconcile_config *cfg, const struct plugin *const *table,
                 bool with_events, struct wh_error *err)
{
    struct reconcile *r = NULL;
    bool mu_init = false;
    int rc;

    *out = NULL;
    if (cache == NULL || table == NULL || plugin_registry_len > MAX_PLUGINS)
        return wh_error_set(err, WH_EINVAL, "reconcile: bad arguments");
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return wh_error_set(err, WH_ENOMEM, "reconcile: out of memory");
    r->kc = kc;
    r->cache = cache;
    r->table = table;
    if (cfg != NULL)
        r->cfg = *cfg;
    if (r->cfg.workers <= 0)
        r->cfg.workers = DEFAULT_WORKERS;
    if (r->cfg.workers > MAX_WORKERS)
        r->cfg.workers = MAX_WORKERS;
    if (r->cfg.resync_period_s <= 0)
        r->cfg.resync_period_s = DEFAULT_RESYNC_S;
    if (r->cfg.request_timeout_ms <= 0)
        r->cfg.request_timeout_ms = DEFAULT_TIMEOUT_MS;
    if (r->cfg.backoff_min_ms <= 0)
        r->cfg.backoff_min_ms = DEFAULT_BACKOFF_MIN_MS;
    if (r->cfg.backoff_max_ms <= 0)
        r->cfg.backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
    if (r->cfg.backoff_max_ms < r->cfg.backoff_min_ms)
        r->cfg.backoff_max_ms = r->cfg.backoff_min_ms;

    r->ssh_keys = sshkeys_create();
    r->workers = calloc((size_t)r->cfg.workers, sizeof(*r->workers));
    if (r->ssh_keys == NULL || r->workers == NULL
        || (with_events && kc != NULL
            && events_create(&r->events, kc, &(struct events_config){.cache = cache}, NULL) < 0)) {
        rc = wh_error_set(err, WH_ENOMEM, "reconcile: out of memory");
        goto fail;
    }
    r->env.timeout_ms = r->cfg.request_timeout_ms;
    r->env.ssh_keys = r->ssh_keys;
    r->env.foreign = &r->foreign;

    workqueue_init(&r->queue, r->cfg.backoff_min_ms, r->cfg.backoff_max_ms, deleted_free);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->work_cv, NULL);
    clock_cond_init(&r->clock_cv); /* the clock thread sleeps until mono_ms */
    mu_init = true;

    for (int i = 0; i < r->cfg.workers; i++) {
        rc = pthread_create(&r->workers[i], NULL, worker_main, r);
        if (rc != 0) {
            rc = wh_error_set(err, WH_ERROR, "reconcile: cannot start worker: %s", strerror(rc));
            goto fail;
        }
        r->nworkers++;
    }
    rc = pthread_create(&r->clock, NULL, clock_main, r);
    if (rc != 0) {
        rc = wh_error_set(err, WH_ERROR, "reconcile: cannot start clock: %s", strerror(rc));
        goto fail;
    }
    r->clock_started = true;
    LOG_INFO("reconcile: started workers=%d resync_period_s=%ld", r->cfg.workers,
             r->cfg.resync_period_s);
    *out = r;
    return 0;
fail:
    if (mu_init) {
        reconcile_stop(r); /* joins what was started, frees everything */
        return rc;
    }
    events_destroy(r->events);
    sshkeys_destroy(r->ssh_keys);
    free(r->workers);
    free(r);
    return rc;
}

int reconcile_start(struct reconcile **out, struct k8s_client *kc, struct cache *cache,
                    const struct reconcile_config *cfg, struct wh_error *err)
{
    return start(out, kc, cache, cfg, plugin_registry, true, err);
}

int reconcile_start_table(struct reconcile **out, struct k8s_client *kc, struct cache *cache,
                          const struct reconcile_config *cfg, const struct plugin *const *table,
                          struct wh_error *err)
{
    return start(out, kc, cache, cfg, table, false, err);
}

void reconcile_stop(struct reconcile *r)
{
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    r->stopping = true;
    pthread_cond_broadcast(&r->work_cv);
    pthread_cond_broadcast(&r->clock_cv);
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < r->nworkers; i++)
        pthread_join(r->workers[i], NULL);
    if (r->clock_started)
        pthread_join(r->clock, NULL);
    workqueue_dispose(&r->queue);
    strmap_destroy(r->uids);
    pthread_cond_destroy(&r->clock_cv);
    pthread_cond_destroy(&r->work_cv);
    pthread_mutex_destroy(&r->mu);
    sshkeys_destroy(r->ssh_keys);
    events_destroy(r->events);
    free(r->workers);
    free(r);
}

void reconcile_enqueue(struct reconcile *r, const json_t *job)
{
    char key[512];

    if (r == NULL || job_key(job, key, sizeof(key)) < 0)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->accepting) { /* a follower keeps nothing: enqueue_all covers it at takeover */
        if (workqueue_add(&r->queue, key, NULL) < 0)
            LOG_ERROR("reconcile: out of memory, not queued job=%s", key);
        else
            pthread_cond_signal(&r->work_cv);
    }
    pthread_mutex_unlock(&r->mu);
}

void reconcile_deleted(struct reconcile *r, const json_t *last_known)
{
    char key[512];
    json_t *copy;
    bool accepting;

    if (r == NULL || job_key(last_known, key, sizeof(key)) < 0)
        return;
    /* A follower keeps nothing: garbage collection removes the deleted Job's objects. */
    pthread_mutex_lock(&r->mu);
    accepting = r->accepting;
    pthread_mutex_unlock(&r->mu);
    if (!accepting)
        return;
    /* A private copy: a json_t shared across threads races on its refcount (cache.c). */
    copy = json_deep_copy(last_known);
    if (copy == NULL) {
        LOG_ERROR("reconcile: out of memory, deletion not queued job=%s", key);
        return;
    }
    pthread_mutex_lock(&r->mu);
    if (r->accepting) {
        if (workqueue_add(&r->queue, key, copy) < 0) {
            LOG_ERROR("reconcile: out of memory, deletion not queued job=%s", key);
        } else {
            copy = NULL; /* now owned by the queue (replacing an older deletion) */
            pthread_cond_signal(&r->work_cv);
        }
    }
    pthread_mutex_unlock(&r->mu);
    json_decref(copy);
}

void reconcile_set_leading(struct reconcile *r, bool leading)
{
    bool was;

    if (r == NULL)
        return;
    if (leading) {
        /* A new leader cannot know what happened meanwhile: look at every Job. Accept
         * events before the snapshot, so a Job added meanwhile is queued by its event;
         * queue them before the workers start, so a Job is not run twice for one
         * takeover. */
        pthread_mutex_lock(&r->mu);
        r->accepting = true;
        pthread_mutex_unlock(&r->mu);
        enqueue_all(r);
    }
    pthread_mutex_lock(&r->mu);
    was = r->leading;
    r->leading = leading;
    if (!leading) {
        r->accepting = false;
        workqueue_clear(&r->queue); /* keys being processed: their worker drops the rest */
        r->forget_uids = true;
        if (r->running == 0)
            uids_forget_all(r); /* else the last run in flight does it */
    }
    pthread_cond_broadcast(&r->work_cv);
    pthread_cond_broadcast(&r->clock_cv);
    pthread_mutex_unlock(&r->mu);
    if (was != leading)
        LOG_INFO("reconcile: %s", leading ? "leading, reconciling" : "not leading, idle");
}

void reconcile_get_stats(struct reconcile *r, struct reconcile_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    out->reconciles = r->reconciles;
    out->errors = r->errors;
    out->queue_len = workqueue_len(&r->queue);
    out->keys = workqueue_size(&r->queue);
    out->uids = r->uids != NULL ? strmap_size(r->uids) : 0;
    pthread_mutex_unlock(&r->mu);
    out->foreign = __atomic_load_n(&r->foreign, __ATOMIC_RELAXED);
}
