/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leader.c - leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection package does it (docs/kube-api.md §5).
 *
 * Every retry period the thread runs one attempt (client-go tryAcquireOrRenew):
 *   - leading and the last written Lease is known: PUT it renewed (fast path);
 *     on any failure fall through to the slow path;
 *   - GET the Lease; 404 → CREATE it holding it (a 409 there lost the race);
 *   - when the record differs from the one seen last, remember it and the time we
 *     saw it change (our monotonic clock: clocks of other hosts are never compared);
 *   - held by another identity and observed_time + leaseDurationSeconds not yet
 *     passed → not ours; while leading that means the lease was taken: stop now;
 *   - else PUT with the fetched resourceVersion: ours → renewTime now, acquireTime
 *     and leaseTransitions kept; someone else's (expired) or free → acquireTime
 *     now, leaseTransitions + 1. A 409 Conflict means another candidate won.
 * A leader whose renewals fail for renew_deadline (counted from the start of its
 * last successful attempt) stops leading at once and campaigns again.
 * leader_stop: a leader first reports false, then releases the Lease as client-go's
 * ReleaseOnCancel does (holderIdentity "", leaseDurationSeconds 1, both times now),
 * so a successor need not wait for the lease to expire.
 *
 * Threads: one election thread (the callback runs on it). leader_start and
 * leader_stop run on the caller's thread; leader_is_leading from any thread
 * (atomic). l->th (base/backoff.h) holds the stop flag and the wake-up condition;
 * everything else belongs to the election thread (read by leader_stop after the join).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/log.h"
#include "k8s/leader.h"

#define LEASE_GROUP        "coordination.k8s.io"
#define LEASE_VERSION      "v1"
#define RELEASE_TIMEOUT_MS 5000L

struct leader {
    struct k8s_client *kc; /* borrowed */
    char *ns;
    char *name;
    char *identity;
    char *path;       /* the Lease */
    char *collection; /* its namespace's leases */
    long lease_ms;
    long renew_deadline_ms;
    long retry_ms;
    void (*on_change)(void *userdata, bool leading);
    void *userdata;
    struct backoff_thread th; /* the election thread, stopped by leader_stop */
    atomic_bool leading;
    unsigned seed; /* rand_r state for the retry jitter (election thread) */

    /* election thread only */
    json_t *lease;         /* last Lease read or written (owned), NULL if none */
    json_t *observed;      /* spec of the record seen last (owned) */
    long long observed_ms; /* monotonic time it was first seen */
    long long renewed_ms;  /* start of the last successful attempt while leading */
};

/* ---- time ---- */

static void now_microtime(char *buf, size_t len)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    leader_format_microtime(buf, len, (long long)ts.tv_sec, ts.tv_nsec / 1000);
}

void leader_format_microtime(char *buf, size_t len, long long sec, long usec)
{
    time_t t = (time_t)sec;
    struct tm tm;

    if (len == 0)
        return;
    buf[0] = '\0';
    if (usec < 0 || usec > 999999)
        usec = 0;
    if ((long long)t != sec || gmtime_r(&t, &tm) == NULL)
        return;
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, usec);
}

/* n decimal digits of s as a number, or -1 when one is not a digit. */
static long digits(const char *s, int n)
{
    long v = 0;

    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static int days_in_month(long year, long mon)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

    return mon == 2 && leap ? 29 : days[mon - 1];
}

int leader_parse_microtime(const char *s, long long *sec_out, long *usec_out)
{
    long year;
    long mon;
    long day;
    long hour;
    long min;
    long sec;
    long usec;
    struct tm tm;
    time_t t;

    /* "2026-11-30T04:05:06.123456Z": 27 characters, nothing else accepted */
    if (s == NULL || strlen(s) != 27 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':'
        || s[16] != ':' || s[19] != '.' || s[26] != 'Z')
        return WH_EINVAL;
    year = digits(s, 4);
    mon = digits(s + 5, 2);
    day = digits(s + 8, 2);
    hour = digits(s + 11, 2);
    min = digits(s + 14, 2);
    sec = digits(s + 17, 2);
    usec = digits(s + 20, 6);
    if (year < 0 || mon < 1 || mon > 12 || day < 1 || hour < 0 || hour > 23 || min < 0 || min > 59
        || sec < 0 || sec > 59 || usec < 0 || day > days_in_month(year, mon))
        return WH_EINVAL;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = (int)(year - 1900);
    tm.tm_mon = (int)(mon - 1);
    tm.tm_mday = (int)day;
    tm.tm_hour = (int)hour;
    tm.tm_min = (int)min;
    tm.tm_sec = (int)sec;
    t = timegm(&tm);
    if (sec_out != NULL)
        *sec_out = (long long)t;
    if (usec_out != NULL)
        *usec_out = usec;
    return 0;
}

/* ---- the Lease ---- */

static const char *spec_str(const json_t *spec, const char *key)
{
    const char *s = json_string_value(json_object_get(spec, key));

    return s != NULL ? s : "";
}

static long long spec_int(const json_t *spec, const char *key)
{
    return json_integer_value(json_object_get(spec, key));
}

/* The acquireTime to keep on renewal: the recorded one when it is valid MicroTime. */
static const char *kept_time(const json_t *spec, const char *now_s)
{
    const char *t = spec_str(spec, "acquireTime");

    return leader_parse_microtime(t, NULL, NULL) == 0 ? t : now_s;
}

/*
 * A Lease spec (new reference, NULL on ENOMEM): holder, duration, both times and
 * the transition count, the fields of client-go's LeaderElectionRecord.
 */
static json_t *make_spec(const char *holder, long long duration_s, const char *acquire,
                         const char *renew, long long transitions)
{
    return json_pack("{s:s, s:I, s:s, s:s, s:I}", "holderIdentity", holder, "leaseDurationSeconds",
                     (json_int_t)duration_s, "acquireTime", acquire, "renewTime", renew,
                     "leaseTransitions", (json_int_t)transitions);
}

/* Remember spec (borrowed) as the record last written or seen, at now. */
static void set_observed(struct leader *l, const json_t *spec, long long now)
{
    json_t *copy = json_deep_copy(spec);

    if (copy == NULL)
        return; /* keep the old one: the next attempt compares again */
    json_decref(l->observed);
    l->observed = copy;
    l->observed_ms = now;
}

/* Keep the Lease the server returned (new reference consumed). */
static void set_lease(struct leader *l, json_t *lease_new)
{
    json_decref(l->lease);
    l->lease = lease_new;
}

/*
 * PUT base (borrowed; its metadata.resourceVersion is sent) with spec_new (consumed).
 * @return 1 written; 0 Conflict (someone else wrote first); < 0 other error.
 */
static int put_spec(struct leader *l, const json_t *base, json_t *spec_new, long long now,
                    long timeout_ms, struct wh_error *err)
{
    json_t *body = json_deep_copy(base);
    json_t *out = NULL;
    int rc;

    if (body == NULL || spec_new == NULL || json_object_set(body, "spec", spec_new) < 0) {
        json_decref(body);
        json_decref(spec_new);
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    rc = k8s_update(l->kc, l->path, body, timeout_ms, &out, err);
    if (rc == 0) {
        set_observed(l, spec_new, now);
        set_lease(l, out); /* now owned by l */
        out = NULL;
    }
    json_decref(out);
    json_decref(spec_new);
    json_decref(body);
    if (rc == WH_ECONFLICT)
        return 0;
    return rc < 0 ? rc : 1;
}

/*
 * One attempt (client-go tryAcquireOrRenew).
 * @return 1 this replica holds the Lease now; 0 another holder has it (valid), or
 *         another candidate won a race; < 0 the API failed (err filled).
 */
static int try_acquire_or_renew(struct leader *l, long timeout_ms, struct wh_error *err)
{
    char now_s[32];
    long long now = clock_mono_ms();
    bool leading = atomic_load(&l->leading);
    json_t *got = NULL;
    const json_t *spec;
    const char *holder;
    int rc;

    now_microtime(now_s, sizeof(now_s));

    /* Fast path: renew the Lease we wrote last, without reading it first. */
    if (leading && l->lease != NULL && l->observed != NULL) {
        rc = put_spec(l, l->lease,
                      make_spec(l->identity, l->lease_ms / 1000, kept_time(l->observed, now_s),
                                now_s, spec_int(l->observed, "leaseTransitions")),
                      now, timeout_ms, err);
        if (rc == 1)
            return 1;
        LOG_DEBUG("leader: optimistic renew failed, reading the lease rc=\"%s\"",
                  rc == 0 ? "conflict" : wh_error_str(rc));
    }

    rc = k8s_get(l->kc, l->path, timeout_ms, &got, err);
    if (rc == WH_ENOTFOUND) {
        json_t *lease =
            json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", LEASE_GROUP "/" LEASE_VERSION,
                      "kind", "Lease", "metadata", "name", l->name, "namespace", l->ns, "spec",
                      make_spec(l->identity, l->lease_ms / 1000, now_s, now_s, 0));
        json_t *out = NULL;

        if (lease == NULL)
            return wh_error_set(err, WH_ENOMEM, "out of memory");
        rc = k8s_create(l->kc, l->collection, lease, timeout_ms, &out, err);
        if (rc == 0) {
            set_observed(l, json_object_get(lease, "spec"), now);
            set_lease(l, out); /* now owned by l */
            out = NULL;
        }
        json_decref(out);
        json_decref(lease);
        if (rc == WH_EEXISTS)
            return 0; /* another candidate created it first */
        return rc < 0 ? rc : 1;
    }
    if (rc < 0)
        return rc;

    spec = json_object_get(got, "spec");
    if (!json_is_object(spec)) {
        json_object_set_new(got, "spec", json_object());
        spec = json_object_get(got, "spec");
    }
    if (l->observed == NULL || !json_equal(l->observed, spec))
        set_observed(l, spec, now);
    holder = spec_str(spec, "holderIdentity");
    if (holder[0] != '\0' && strcmp(holder, l->identity) != 0) {
        long long dur = spec_int(spec, "leaseDurationSeconds");

        if (l->observed_ms + dur * 1000 > now) {
            set_lease(l, got); /* now owned by l */
            LOG_DEBUG("leader: lease held by holder=%s", holder);
            return 0;
        }
        LOG_INFO("leader: lease expired, taking it holder=%s", holder);
    }
    if (strcmp(holder, l->identity) == 0)
        rc = put_spec(l, got,
                      make_spec(l->identity, l->lease_ms / 1000, kept_time(spec, now_s), now_s,
                                spec_int(spec, "leaseTransitions")),
                      now, timeout_ms, err);
    else
        rc = put_spec(l, got,
                      make_spec(l->identity, l->lease_ms / 1000, now_s, now_s,
                                spec_int(spec, "leaseTransitions") + 1),
                      now, timeout_ms, err);
    json_decref(got);
    return rc;
}

/* ReleaseOnCancel: clear the holder so a successor takes over at once. */
static void release(struct leader *l)
{
    char now_s[32];
    struct wh_error err = {0, ""};
    int rc;

    if (l->lease == NULL || l->observed == NULL)
        return;
    now_microtime(now_s, sizeof(now_s));
    rc = put_spec(l, l->lease,
                  make_spec("", 1, now_s, now_s, spec_int(l->observed, "leaseTransitions")),
                  clock_mono_ms(), RELEASE_TIMEOUT_MS, &err);
    if (rc == 1)
        LOG_INFO("leader: released lease=%s/%s", l->ns, l->name);
    else
        LOG_WARN("leader: cannot release lease=%s/%s rc=\"%s\" err=%s", l->ns, l->name,
                 rc == 0 ? "conflict" : wh_error_str(rc),
                 LOG_QUOTED(rc == 0 ? "conflict" : err.msg));
}

static void set_leading(struct leader *l, bool leading)
{
    atomic_store(&l->leading, leading);
    /* Info either way: a lost Lease has its warning already (taken, or not renewed),
     * and a shutdown is no fault. */
    if (leading)
        LOG_INFO("leader: leading identity=%s lease=%s/%s", l->identity, l->ns, l->name);
    else
        LOG_INFO("leader: stopped leading identity=%s", l->identity);
    if (l->on_change != NULL)
        l->on_change(l->userdata, leading);
}

static void *leader_main(void *arg)
{
    struct leader *l = arg;
    long long next = clock_mono_ms();

    while (!backoff_thread_sleep_until(&l->th, next)) {
        struct wh_error err = {0, ""};
        long long start = clock_mono_ms();
        int rc;

        if (!atomic_load(&l->leading)) {
            /* client-go waits RetryPeriod with jitter factor 1.2 between attempts */
            rc = try_acquire_or_renew(l, l->renew_deadline_ms, &err);
            if (rc == 1) {
                l->renewed_ms = start;
                set_leading(l, true);
                next = start + l->retry_ms;
            } else {
                if (rc < 0)
                    LOG_WARN("leader: cannot acquire lease=%s/%s rc=\"%s\" err=%s", l->ns, l->name,
                             wh_error_str(rc), LOG_QUOTED(err.msg));
                next = clock_mono_ms()
                    + backoff_jitter_ms(&l->seed, l->retry_ms, l->retry_ms + l->retry_ms * 6 / 5);
            }
            continue;
        }
        {
            long long left = l->renewed_ms + l->renew_deadline_ms - start;

            rc = left > 0 ? try_acquire_or_renew(l, (long)left, &err)
                          : wh_error_set(&err, WH_ETIMEOUT, "renew deadline passed");
        }
        if (rc == 1) {
            l->renewed_ms = start;
            next = start + l->retry_ms;
        } else if (rc == 0) {
            LOG_WARN("leader: lease taken lease=%s/%s holder=%s", l->ns, l->name,
                     spec_str(l->observed, "holderIdentity"));
            set_leading(l, false);
            next = clock_mono_ms() + l->retry_ms;
        } else if (clock_mono_ms() >= l->renewed_ms + l->renew_deadline_ms) {
            LOG_WARN("leader: cannot renew within the renew deadline lease=%s/%s rc=\"%s\" "
                     "err=%s",
                     l->ns, l->name, wh_error_str(rc), LOG_QUOTED(err.msg));
            set_leading(l, false);
            next = clock_mono_ms() + l->retry_ms;
        } else {
            LOG_WARN("leader: renew failed, retrying rc=\"%s\" err=%s", wh_error_str(rc),
                     LOG_QUOTED(err.msg));
            next = clock_mono_ms() + l->retry_ms;
            if (next > l->renewed_ms + l->renew_deadline_ms)
                next = l->renewed_ms + l->renew_deadline_ms;
        }
    }
    if (atomic_load(&l->leading)) {
        set_leading(l, false);
        release(l);
    }
    return NULL;
}

static void leader_free(struct leader *l)
{
    json_decref(l->lease);
    json_decref(l->observed);
    free(l->ns);
    free(l->name);
    free(l->identity);
    free(l->path);
    free(l->collection);
    free(l);
}

int leader_start(struct leader **out, struct k8s_client *kc, const struct leader_config *cfg,
                 void (*on_change)(void *userdata, bool leading), void *userdata,
                 struct wh_error *err)
{
    struct leader *l;
    int rc;

    *out = NULL;
    if (kc == NULL || cfg == NULL || cfg->ns == NULL || cfg->ns[0] == '\0' || cfg->name == NULL
        || cfg->name[0] == '\0' || cfg->identity == NULL || cfg->identity[0] == '\0')
        return wh_error_set(err, WH_EINVAL,
                            "leader election: namespace, name and identity "
                            "are required");
    if (cfg->lease_duration_s <= 0 || cfg->renew_deadline_s <= 0 || cfg->retry_period_s <= 0
        || cfg->renew_deadline_s >= cfg->lease_duration_s
        || cfg->retry_period_s >= cfg->renew_deadline_s)
        return wh_error_set(err, WH_EINVAL,
                            "leader election: want lease duration > renew deadline > retry "
                            "period > 0 (got %lds, %lds, %lds)",
                            cfg->lease_duration_s, cfg->renew_deadline_s, cfg->retry_period_s);
    l = calloc(1, sizeof(*l));
    if (l == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    l->kc = kc;
    l->ns = strdup(cfg->ns);
    l->name = strdup(cfg->name);
    l->identity = strdup(cfg->identity);
    l->path = k8s_path(LEASE_GROUP, LEASE_VERSION, cfg->ns, "leases", cfg->name);
    l->collection = k8s_path(LEASE_GROUP, LEASE_VERSION, cfg->ns, "leases", NULL);
    if (l->ns == NULL || l->name == NULL || l->identity == NULL || l->path == NULL
        || l->collection == NULL) {
        leader_free(l);
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    l->lease_ms = cfg->lease_duration_s * 1000;
    l->renew_deadline_ms = cfg->renew_deadline_s * 1000;
    l->retry_ms = cfg->retry_period_s * 1000;
    l->on_change = on_change;
    l->userdata = userdata;
    l->seed = backoff_seed(l);
    atomic_init(&l->leading, false);
    if (backoff_thread_start(&l->th, leader_main, l) < 0) {
        rc = errno;
        leader_free(l);
        return wh_error_set(err, WH_ERROR, "leader election: cannot start thread: %s",
                            strerror(rc));
    }
    LOG_INFO("leader election started identity=%s lease=%s/%s lease_duration_s=%ld "
             "renew_deadline_s=%ld retry_period_s=%ld",
             cfg->identity, cfg->ns, cfg->name, cfg->lease_duration_s, cfg->renew_deadline_s,
             cfg->retry_period_s);
    *out = l;
    return 0;
}

void leader_stop(struct leader *l)
{
    if (l == NULL)
        return;
    backoff_thread_stop(&l->th); /* the thread releases a held lease on its way out */
    leader_free(l);
}

bool leader_is_leading(const struct leader *l)
{
    return l != NULL && atomic_load(&((struct leader *)l)->leading);
}
