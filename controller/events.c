/* SPDX-License-Identifier: Apache-2.0 */
/*
 * events.c - Warning Events on Volcano Jobs (D17); the contract is in events.h.
 *
 * Per Job uid the table keeps a token bucket and, for each message posted, the
 * hash of (reason, message) and the count last written: enough to PATCH the next
 * count without a GET. Uids form an LRU list (head = most recently used) so the
 * table can be capped; a uid's messages are a ring of at most EVENTS_MAX_PER_JOB.
 * ev->mu guards the table, the list and the counters; requests run unlocked, and
 * what they learn is written back only if the uid is still there.
 */
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/strmap.h"
#include "controller/cache.h"
#include "controller/events.h"

#define DEFAULT_REQUEST_TIMEOUT_MS 2000L
#define DEFAULT_BUDGET_MS          5000L
#define DEFAULT_BURST              10
#define DEFAULT_REFILL_MS          300000L /* client-go spam filter: qps 1/300 */
#define DEFAULT_MAX_JOBS           16384u
#define REASON_MAX                 128  /* kube-apiserver's ReasonLengthLimit */
#define MESSAGE_MAX                1024 /* kube-apiserver's NoteLengthLimit */
#define NAME_MAX_LEN               253  /* DNS-1123 subdomain */
#define HASH_HEX                   16

struct events_seen {
    uint64_t hash;
    long count; /* the Event's count as last written */
};

struct events_job {
    char *uid;
    struct events_job *prev; /* LRU, towards the head (more recent) */
    struct events_job *next;
    double tokens;
    long long refilled_ms; /* when tokens were last brought up to date */
    struct events_seen *seen;
    size_t n;              /* entries of seen in use */
    size_t cap;            /* allocated */
    size_t oldest;         /* ring position replaced next once n == EVENTS_MAX_PER_JOB */
    uint64_t diagnosed_rv; /* FNV-1a of the resourceVersion last diagnosed; 0 none */
};

struct events {
    struct k8s_client *kc; /* borrowed */
    struct events_config cfg;
    char instance[256];

    pthread_mutex_t mu;
    struct strmap *jobs; /* uid -> struct events_job (owned) */
    struct events_job *head;
    struct events_job *tail;
    struct events_stats stats;
};

/* ---- the table (ev->mu held) ---- */

static void job_free(void *v)
{
    struct events_job *j = v;

    free(j->seen);
    free(j->uid);
    free(j);
}

static void lru_unlink(struct events *ev, struct events_job *j)
{
    if (j->prev != NULL)
        j->prev->next = j->next;
    else
        ev->head = j->next;
    if (j->next != NULL)
        j->next->prev = j->prev;
    else
        ev->tail = j->prev;
    j->prev = NULL;
    j->next = NULL;
}

static void lru_push(struct events *ev, struct events_job *j)
{
    j->prev = NULL;
    j->next = ev->head;
    if (ev->head != NULL)
        ev->head->prev = j;
    ev->head = j;
    if (ev->tail == NULL)
        ev->tail = j;
}

static void job_remove(struct events *ev, struct events_job *j)
{
    lru_unlink(ev, j);
    (void)strmap_remove(ev->jobs, j->uid); /* frees j */
}

/* The uid's record, made (full bucket) when create; the least recently used goes
 * when the table is full. @return NULL when absent (create false) or on ENOMEM. */
static struct events_job *job_get(struct events *ev, const char *uid, bool create, long long now)
{
    struct events_job *j = strmap_get(ev->jobs, uid);

    if (j != NULL) {
        lru_unlink(ev, j);
        lru_push(ev, j);
        return j;
    }
    if (!create)
        return NULL;
    if (strmap_size(ev->jobs) >= ev->cfg.max_jobs && ev->tail != NULL)
        job_remove(ev, ev->tail);
    j = calloc(1, sizeof(*j));
    if (j == NULL)
        return NULL;
    j->uid = strdup(uid);
    if (j->uid == NULL || strmap_set(ev->jobs, uid, j) < 0) {
        job_free(j);
        return NULL;
    }
    j->tokens = ev->cfg.burst;
    j->refilled_ms = now;
    lru_push(ev, j);
    return j;
}

/* Token bucket: one token per refill_ms since the last reading, up to burst. */
static void job_refill(const struct events *ev, struct events_job *j, long long now)
{
    if (now > j->refilled_ms) {
        j->tokens += (double)(now - j->refilled_ms) / (double)ev->cfg.refill_ms;
        if (j->tokens > ev->cfg.burst)
            j->tokens = ev->cfg.burst;
    }
    j->refilled_ms = now;
}

static struct events_seen *seen_find(struct events_job *j, uint64_t hash)
{
    for (size_t i = 0; i < j->n; i++)
        if (j->seen[i].hash == hash)
            return &j->seen[i];
    return NULL;
}

/* Remember count for hash; the oldest message goes when the ring is full. On ENOMEM
 * nothing is remembered: the next repeat finds the Event with a 409 and a GET. */
static void seen_set(struct events_job *j, uint64_t hash, long count)
{
    struct events_seen *s = seen_find(j, hash);

    if (s == NULL && j->n == EVENTS_MAX_PER_JOB) {
        s = &j->seen[j->oldest];
        j->oldest = (j->oldest + 1) % EVENTS_MAX_PER_JOB;
    } else if (s == NULL) {
        if (j->n == j->cap) {
            size_t cap = j->cap != 0 ? j->cap * 2 : 4;
            struct events_seen *ns;

            if (cap > EVENTS_MAX_PER_JOB)
                cap = EVENTS_MAX_PER_JOB;
            ns = realloc(j->seen, cap * sizeof(*ns));
            if (ns == NULL)
                return;
            j->seen = ns;
            j->cap = cap;
        }
        s = &j->seen[j->n++];
    }
    s->hash = hash;
    s->count = count;
}

/* ---- names and bodies ---- */

static const char *meta_str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(json_object_get(obj, "metadata"), key));

    return s != NULL ? s : "";
}

/* First 8 bytes of SHA-256(reason NUL message), big-endian. */
static uint64_t message_hash(const char *reason, const char *message)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    uint64_t h = 0;

    if (ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1
        && EVP_DigestUpdate(ctx, reason, strlen(reason) + 1) == 1
        && EVP_DigestUpdate(ctx, message, strlen(message)) == 1
        && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen >= 8) {
        for (int i = 0; i < 8; i++)
            h = (h << 8) | md[i];
    } else {
        /* No digest (out of memory): FNV-1a keeps names stable within this process. */
        h = 1469598103934665603ULL;
        for (const char *p = reason; *p != '\0'; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        h *= 1099511628211ULL;
        for (const char *p = message; *p != '\0'; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    }
    EVP_MD_CTX_free(ctx);
    return h;
}

static char *name_of(char *buf, size_t len, const char *job_name, uint64_t hash)
{
    int keep = (int)strlen(job_name);

    if (keep > NAME_MAX_LEN - 1 - HASH_HEX)
        keep = NAME_MAX_LEN - 1 - HASH_HEX;
    snprintf(buf, len, "%.*s.%016llx", keep, job_name, (unsigned long long)hash);
    return buf;
}

char *events_name(char *buf, size_t len, const char *job_name, const char *reason,
                  const char *message)
{
    return name_of(buf, len, job_name, message_hash(reason, message));
}

/* RFC 3339 UTC to the second, as a core v1 Event's Time fields. */
static void rfc3339_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The new Event. @return new reference, NULL on ENOMEM. */
static json_t *event_body(const struct events *ev, const json_t *job, const char *name,
                          const char *reason, const char *message)
{
    const char *rv = meta_str(job, "resourceVersion");
    json_t *involved;
    json_t *source;
    char now[32];

    rfc3339_now(now, sizeof(now));
    involved = json_pack("{s:s, s:s, s:s, s:s, s:s}", "apiVersion", "batch.volcano.sh/v1alpha1",
                         "kind", "Job", "name", meta_str(job, "name"), "namespace",
                         meta_str(job, "namespace"), "uid", meta_str(job, "uid"));
    if (involved != NULL && *rv != '\0'
        && json_object_set_new(involved, "resourceVersion", json_string(rv)) < 0) {
        json_decref(involved);
        involved = NULL;
    }
    source = ev->instance[0] != '\0'
        ? json_pack("{s:s, s:s}", "component", EVENTS_COMPONENT, "host", ev->instance)
        : json_pack("{s:s}", "component", EVENTS_COMPONENT);
    if (involved == NULL || source == NULL) {
        json_decref(involved);
        json_decref(source);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:s, s:o, s:s, s:s, s:s, s:s, "
                     "s:i}",
                     "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
                     meta_str(job, "namespace"), "involvedObject", involved, "reason", reason,
                     "message", message, "type", "Warning", "source", source, "reportingComponent",
                     EVENTS_COMPONENT, "reportingInstance", ev->instance, "firstTimestamp", now,
                     "lastTimestamp", now, "count", 1);
}

/* ---- requests ---- */

/* One request within the deadline; an error other than 404 or 409 is tried once more
 * while time is left. An attempt that timed out at the deadline spent the budget: curl
 * may give up a millisecond before the clock says so, and a second try of what is left
 * would still reach a slow server (a second Event of the same name, or its 409), as
 * would the call's next Event. So *deadline is moved to now: the budget is spent for
 * the rest of the call too. */
static int request(struct events *ev, const char *method, const char *path, const json_t *body,
                   const char *ctype, long long *deadline, json_t **out, struct wh_error *err)
{
    int rc = WH_ETIMEOUT;

    for (int attempt = 0; attempt < 2; attempt++) {
        long long left = *deadline - ev->cfg.clock_ms();
        long timeout = ev->cfg.request_timeout_ms;

        if (left <= 0) {
            if (attempt == 0)
                wh_error_set(err, WH_ETIMEOUT, "events: budget spent");
            break;
        }
        if (left < timeout)
            timeout = (long)left;
        rc = k8s_request(ev->kc, method, path, body, ctype, timeout, out, err);
        if (rc == WH_ETIMEOUT && timeout == left) {
            *deadline = ev->cfg.clock_ms();
            break;
        }
        if (rc == 0 || rc == WH_ENOTFOUND || rc == WH_EEXISTS || rc == WH_ECONFLICT
            || rc == WH_ENOMEM || rc == WH_EINVAL)
            break;
    }
    return rc;
}

/* PATCH the Event's count and lastTimestamp. *count_out: the count stored. */
static int patch_count(struct events *ev, const char *path, long count, long long *deadline,
                       long *count_out, struct wh_error *err)
{
    char now[32];
    json_t *patch;
    json_t *got = NULL;
    int rc;

    rfc3339_now(now, sizeof(now));
    patch = json_pack("{s:I, s:s}", "count", (json_int_t)count, "lastTimestamp", now);
    if (patch == NULL)
        return wh_error_set(err, WH_ENOMEM, "events: out of memory");
    rc = request(ev, "PATCH", path, patch, "application/merge-patch+json", deadline, &got, err);
    if (rc == 0) {
        json_int_t c = json_integer_value(json_object_get(got, "count"));

        *count_out = c > 0 ? (long)c : count;
    }
    json_decref(got);
    json_decref(patch);
    return rc;
}

/*
 * Create the Event, or raise the count of the one this process or another wrote.
 * count: the count this process last wrote, 0 for none. *count_out: the count now.
 * *created: whether it was created.
 */
static int post(struct events *ev, const json_t *job, const char *name, const char *reason,
                const char *message, long count, long long *deadline, long *count_out,
                bool *created, struct wh_error *err)
{
    char *coll = k8s_path("", "v1", meta_str(job, "namespace"), "events", NULL);
    char *path = k8s_path("", "v1", meta_str(job, "namespace"), "events", name);
    json_t *body = NULL;
    json_t *got = NULL;
    int rc;

    *created = false;
    if (coll == NULL || path == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "events: out of memory");
        goto out;
    }
    if (count > 0) {
        rc = patch_count(ev, path, count + 1, deadline, count_out, err);
        if (rc != WH_ENOTFOUND)
            goto out;
        /* Gone (expired, deleted): post it anew. */
    }
    body = event_body(ev, job, name, reason, message);
    if (body == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "events: out of memory");
        goto out;
    }
    rc = request(ev, "POST", coll, body, NULL, deadline, NULL, err);
    if (rc == 0) {
        *created = true;
        *count_out = 1;
        goto out;
    }
    if (rc != WH_EEXISTS)
        goto out;
    /* Written before this process knew of it: count on from the stored count. */
    rc = request(ev, "GET", path, NULL, NULL, deadline, &got, err);
    if (rc < 0)
        goto out;
    count = (long)json_integer_value(json_object_get(got, "count"));
    rc = patch_count(ev, path, (count > 0 ? count : 1) + 1, deadline, count_out, err);
out:
    json_decref(got);
    json_decref(body);
    free(path);
    free(coll);
    return rc;
}

static int record(struct events *ev, const json_t *job, const char *reason, const char *message,
                  long long *deadline, struct wh_error *err)
{
    const char *ns = meta_str(job, "namespace");
    const char *jname = meta_str(job, "name");
    const char *uid = meta_str(job, "uid");
    char msg[MESSAGE_MAX + 1];
    char name[NAME_MAX_LEN + 1];
    struct events_job *j;
    struct events_seen *s;
    uint64_t hash;
    long count;
    long stored = 0;
    bool created = false;
    long long now = ev->cfg.clock_ms();
    int rc;

    if (*ns == '\0' || *jname == '\0' || *uid == '\0')
        return wh_error_set(err, WH_EINVAL, "events: job without namespace, name or uid");
    if (reason == NULL || *reason == '\0' || strlen(reason) > REASON_MAX)
        return wh_error_set(err, WH_EINVAL, "events: reason must be 1-%d bytes", REASON_MAX);
    snprintf(msg, sizeof(msg), "%s", message != NULL ? message : "");
    wh_utf8_sanitize(msg); /* a cut may split a character */
    hash = message_hash(reason, msg);
    name_of(name, sizeof(name), jname, hash);

    pthread_mutex_lock(&ev->mu);
    if (now >= *deadline) {
        ev->stats.rate_limited++;
        pthread_mutex_unlock(&ev->mu);
        return WH_DECLINED;
    }
    j = job_get(ev, uid, true, now);
    if (j == NULL) {
        pthread_mutex_unlock(&ev->mu);
        return wh_error_set(err, WH_ENOMEM, "events: out of memory");
    }
    job_refill(ev, j, now);
    if (j->tokens < 1.0) {
        ev->stats.rate_limited++;
        pthread_mutex_unlock(&ev->mu);
        LOG_DEBUG("events: rate limited job=%s/%s uid=%s reason=%s", ns, jname, uid, reason);
        return WH_DECLINED;
    }
    j->tokens -= 1.0;
    s = seen_find(j, hash);
    count = s != NULL ? s->count : 0;
    pthread_mutex_unlock(&ev->mu);

    rc = post(ev, job, name, reason, msg, count, deadline, &stored, &created, err);

    pthread_mutex_lock(&ev->mu);
    if (rc == 0) {
        j = job_get(ev, uid, false, now); /* forgotten meanwhile: keep nothing */
        if (j != NULL)
            seen_set(j, hash, stored);
        if (created)
            ev->stats.created++;
        else
            ev->stats.updated++;
    } else {
        ev->stats.failed++;
    }
    pthread_mutex_unlock(&ev->mu);
    if (rc < 0)
        LOG_WARN("events: not posted job=%s/%s uid=%s event=%s reason=%s rc=\"%s\" err=%s", ns,
                 jname, uid, name, reason, wh_error_str(rc),
                 LOG_QUOTED(err != NULL && err->msg[0] != '\0' ? err->msg : wh_error_str(rc)));
    else
        LOG_DEBUG("events: posted job=%s/%s event=%s reason=%s count=%ld", ns, jname, name, reason,
                  stored);
    return rc;
}

/* FNV-1a of s, never 0 (0 means "none"). */
static uint64_t rv_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h != 0 ? h : 1;
}

/* ---- public ---- */

int events_create(struct events **out, struct k8s_client *kc, const struct events_config *cfg,
                  struct wh_error *err)
{
    struct events *ev = calloc(1, sizeof(*ev));

    *out = NULL;
    if (ev == NULL)
        return wh_error_set(err, WH_ENOMEM, "events: out of memory");
    ev->kc = kc;
    if (cfg != NULL)
        ev->cfg = *cfg;
    if (ev->cfg.request_timeout_ms <= 0)
        ev->cfg.request_timeout_ms = DEFAULT_REQUEST_TIMEOUT_MS;
    if (ev->cfg.budget_ms <= 0)
        ev->cfg.budget_ms = DEFAULT_BUDGET_MS;
    if (ev->cfg.burst <= 0)
        ev->cfg.burst = DEFAULT_BURST;
    if (ev->cfg.refill_ms <= 0)
        ev->cfg.refill_ms = DEFAULT_REFILL_MS;
    if (ev->cfg.max_jobs == 0)
        ev->cfg.max_jobs = DEFAULT_MAX_JOBS;
    if (ev->cfg.clock_ms == NULL)
        ev->cfg.clock_ms = clock_mono_ms;
    if (ev->cfg.instance != NULL)
        snprintf(ev->instance, sizeof(ev->instance), "%s", ev->cfg.instance);
    else if (gethostname(ev->instance, sizeof(ev->instance) - 1) != 0)
        ev->instance[0] = '\0';
    ev->cfg.instance = NULL; /* not kept: the caller's string */
    ev->jobs = strmap_create(job_free);
    if (ev->jobs == NULL) {
        free(ev);
        return wh_error_set(err, WH_ENOMEM, "events: out of memory");
    }
    pthread_mutex_init(&ev->mu, NULL);
    *out = ev;
    return 0;
}

void events_destroy(struct events *ev)
{
    if (ev == NULL)
        return;
    strmap_destroy(ev->jobs);
    pthread_mutex_destroy(&ev->mu);
    free(ev);
}

int events_record(struct events *ev, const json_t *job, const char *reason, const char *message,
                  struct wh_error *err)
{
    long long deadline;

    if (ev == NULL)
        return WH_DECLINED;
    deadline = ev->cfg.clock_ms() + ev->cfg.budget_ms;
    return record(ev, job, reason, message, &deadline, err);
}

size_t events_record_diagnostics(struct events *ev, const json_t *job, const struct diagnostics *d)
{
    long long deadline;
    size_t posted = 0;
    size_t dropped = 0;
    size_t failed = 0;

    if (ev == NULL || d == NULL)
        return 0;
    deadline = ev->cfg.clock_ms() + ev->cfg.budget_ms;
    for (size_t i = 0; i < d->n; i++) {
        struct wh_error err = {0, ""};
        int rc = record(ev, job, diagnose_reason_name(d->items[i].reason), d->items[i].message,
                        &deadline, &err);

        if (rc == 0)
            posted++;
        else if (rc > 0)
            dropped++;
        else
            failed++; /* logged by record */
    }
    /* An empty bucket is the rate limit doing its work; a spent budget means slow
     * requests, worth a line. */
    if (dropped > 0 && ev->cfg.clock_ms() >= deadline)
        LOG_WARN("events: budget spent job=%s/%s uid=%s posted=%zu failed=%zu dropped=%zu",
                 meta_str(job, "namespace"), meta_str(job, "name"), meta_str(job, "uid"), posted,
                 failed, dropped);
    else if (dropped > 0)
        LOG_DEBUG("events: rate limited job=%s/%s uid=%s posted=%zu dropped=%zu",
                  meta_str(job, "namespace"), meta_str(job, "name"), meta_str(job, "uid"), posted,
                  dropped);
    return posted;
}

int events_diagnose_job(struct events *ev, const json_t *job, struct wh_error *err)
{
    const char *ns = meta_str(job, "namespace");
    const char *name = meta_str(job, "name");
    const char *uid = meta_str(job, "uid");
    const char *rv = meta_str(job, "resourceVersion");
    uint64_t h = rv_hash(rv);
    struct events_job *j;
    struct diagnostics *d = NULL;
    json_t *full = NULL;
    char *path = NULL;
    char *query = NULL;
    long long now;
    int rc;

    if (ev == NULL)
        return WH_DECLINED;
    if (*ns == '\0' || *name == '\0' || *uid == '\0' || *rv == '\0')
        return wh_error_set(err, WH_EINVAL,
                            "events: job without namespace, name, uid or "
                            "resourceVersion");
    now = ev->cfg.clock_ms();
    pthread_mutex_lock(&ev->mu);
    j = job_get(ev, uid, false, now);
    if (j != NULL && j->diagnosed_rv == h) {
        pthread_mutex_unlock(&ev->mu);
        return WH_DECLINED; /* this version was told already */
    }
    pthread_mutex_unlock(&ev->mu);

    d = malloc(sizeof(*d)); /* 17 KiB: not on the stack */
    if (d == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "events: out of memory");
        goto out;
    }
    /* The cache diagnosed this very version from the full Job when it stored it. */
    if (ev->cfg.cache != NULL && cache_get_diagnostics(ev->cfg.cache, ns, name, uid, rv, d) == 0) {
        events_record_diagnostics(ev, job, d);
        pthread_mutex_lock(&ev->mu);
        j = job_get(ev, uid, true, now);
        if (j != NULL)
            j->diagnosed_rv = h;
        pthread_mutex_unlock(&ev->mu);
        rc = 0;
        goto out;
    }

    path = k8s_path("batch.volcano.sh", "v1alpha1", ns, "jobs", name);
    if (path == NULL || (query = malloc(strlen(path) + sizeof("?resourceVersion=0"))) == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "events: out of memory");
        goto out;
    }
    /* resourceVersion=0: any recent version will do, so kube-apiserver answers from its
     * watch cache, not with a quorum read of etcd. */
    sprintf(query, "%s?resourceVersion=0", path);
    rc = k8s_get(ev->kc, query, ev->cfg.request_timeout_ms, &full, err);
    if (rc < 0)
        goto out;
    if (strcmp(meta_str(full, "uid"), uid) != 0) {
        rc = WH_DECLINED; /* replaced by a new Job of that name: its own run tells it */
        goto out;
    }
    (void)diagnose_job(full, d); /* out of memory: what was found */
    events_record_diagnostics(ev, full, d);
    pthread_mutex_lock(&ev->mu);
    j = job_get(ev, uid, true, now);
    if (j != NULL)
        j->diagnosed_rv = rv_hash(meta_str(full, "resourceVersion"));
    pthread_mutex_unlock(&ev->mu);
    rc = 0;
out:
    if (rc == WH_ENOTFOUND) /* deleted meanwhile: its deletion is on its way */
        LOG_DEBUG("events: job gone job=%s/%s uid=%s", ns, name, uid);
    else if (rc < 0)
        LOG_WARN("events: job not diagnosed job=%s/%s uid=%s rc=\"%s\" err=%s", ns, name, uid,
                 wh_error_str(rc),
                 LOG_QUOTED(err != NULL && err->msg[0] != '\0' ? err->msg : wh_error_str(rc)));
    free(d);
    free(query);
    free(path);
    json_decref(full);
    return rc;
}

void events_forget(struct events *ev, const char *uid)
{
    struct events_job *j;

    if (ev == NULL || uid == NULL)
        return;
    pthread_mutex_lock(&ev->mu);
    j = strmap_get(ev->jobs, uid);
    if (j != NULL)
        job_remove(ev, j);
    pthread_mutex_unlock(&ev->mu);
}

void events_forget_all(struct events *ev)
{
    if (ev == NULL)
        return;
    pthread_mutex_lock(&ev->mu);
    strmap_clear(ev->jobs);
    ev->head = NULL;
    ev->tail = NULL;
    pthread_mutex_unlock(&ev->mu);
}

void events_get_stats(struct events *ev, struct events_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (ev == NULL)
        return;
    pthread_mutex_lock(&ev->mu);
    *out = ev->stats;
    out->jobs = strmap_size(ev->jobs);
    pthread_mutex_unlock(&ev->mu);
}
