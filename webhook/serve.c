/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serve.c - the `serve` subcommand's wiring: start order, callbacks, signals,
 * shutdown. Its flags (struct serve_options, defaults, --help, parsing and
 * validation) live in webhook/serve_flags.c.
 *
 * serve_main: serve_flags_parse (exit 2 on a bad flag, 0 after --help), then
 * serve_start (exit 1 when anything fails to start), serve_wait (until SIGTERM
 * or SIGINT, then drain: /readyz 503 at once; serve until nothing is in flight
 * and min(grace, 2 s) passed, at most --shutdown-grace) and serve_stop (exit 0).
 * What each step owns and the order of start and stop: struct serve_state.
 *
 * Threads: serve_main runs on the main thread. Its struct serve_options is
 * filled before any thread exists and only read after. The admission lookup
 * (lookup_job_get, controller/lookup.h) and serve_ready run on MHD workers; they
 * read struct lookup, unchanged while the server runs (its shared GETs have
 * their own mutex), the cache (its own rwlock) and the shareable k8s client. The
 * informer threads write the cache: one for every namespace, or with --namespaces
 * one per namespace named (a namespaced cache, which serialises them); /readyz
 * waits for every one of them to have listed. The reconciler's handlers (serve_on_job_*)
 * run on the informer thread and serve_on_leading on the leader-election thread;
 * both only call the thread-safe reconcile_* functions. serve_collect (GET
 * /metrics) runs on MHD workers and reads the modules under serve_ops.lock;
 * serve_apply_tls runs on the certwatch thread and calls the thread-safe
 * server_set_tls_pair (certwatch then sets the certificate-expiry gauge, an
 * atomic in metrics.c). With
 * --cert-secret or --self-signed, the certificate keeper (controller/certkeeper.h) runs its
 * rounds on the main thread until this replica has a pair, then on a thread of
 * its own, with the shared client; its on_pair (managed_on_pair) calls the
 * thread-safe server_set_tls_pair; serve_on_leading feeds it the Lease, and
 * serve_ready and serve_collect read it under their locks.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "base/clock.h"
#include "base/log.h"
#include "certs/certs.h"
#include "certs/certwatch.h"
#include "controller/cache.h"
#include "controller/certkeeper.h"
#include "controller/informer.h"
#include "controller/lookup.h"
#include "controller/reconcile.h"
#include "k8s/client.h"
#include "k8s/leader.h"
#include "webhook/commands.h"
#include "webhook/metrics.h"
#include "webhook/serve_flags.h"
#include "webhook/server.h"
#include "webhook/version.h"

static volatile sig_atomic_t stop_signal; /* set by on_signal, read by serve_main */

/* Async-signal-safe: record the signal, nothing else (no logging here). */
static void on_signal(int sig)
{
    stop_signal = sig;
}

/* ---- --cert-secret: readiness ---- */

/* The keeper of --cert-secret, NULL without it. Set on the main thread before
 * server_run, cleared under the lock before the keeper is destroyed. */
static pthread_mutex_t ready_keeper_mu = PTHREAD_MUTEX_INITIALIZER;
static struct certkeeper *ready_keeper;

/* NULL when the served certificate verifies under every caBundle (or --cert-secret is
 * off), else the keeper's reason, in a buffer of the calling MHD worker's own. */
static const char *managed_not_ready(void)
{
    static _Thread_local char reason[256];
    const char *why = NULL;

    pthread_mutex_lock(&ready_keeper_mu);
    if (ready_keeper != NULL && !certkeeper_ready(ready_keeper, reason, sizeof(reason)))
        why = reason;
    pthread_mutex_unlock(&ready_keeper_mu);
    return why;
}

/* ---- end of --cert-secret readiness ---- */

/* ---- Jobs cache: readiness ---- */

/* server_config.ready: /readyz waits for the first LIST, of every namespace with
 * --namespaces (the TLS pair is loaded before the server starts at all). Runs on
 * MHD workers; cache_synced is atomic. */
static const char *serve_ready(void *userdata)
{
    /* --cert-secret, --self-signed: once the API server trusts what we serve */
    const char *why = managed_not_ready();

    if (why != NULL)
        return why;
    return cache_synced(userdata) ? NULL : "jobs cache not synced";
}

/* Write the port through a temporary file and rename(2): readers see all or nothing. */
static int write_port_file(const char *path, unsigned port)
{
    char tmp[PATH_MAX];
    FILE *f;

    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return -1;
    f = fopen(tmp, "w");
    if (f == NULL)
        return -1;
    if (fprintf(f, "%u\n", port) < 0) {
        fclose(f);
        unlink(tmp);
        return -1;
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* ---- reconcile side: reconciler, leader election, API client limits ---- */

#define LEASE_NAME        "volcano-plugin-webhook"
#define SA_NAMESPACE_FILE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

/* The reconcile side's objects; main thread only. */
struct serve_reconcile {
    const struct serve_options *opt; /* the parsed flags, borrowed */
    struct reconcile *rec;           /* owned */
    struct leader *leader;           /* owned */
    struct certkeeper *keeper;       /* --cert-secret's, borrowed: it follows the Lease too */
    char ns_buf[256];                /* the detected namespace */
    char identity[320];              /* hostname_xxxxxxxx */
};

/* The Lease namespace: the flag, else the service account's namespace file, else "default". */
static const char *lease_namespace(struct serve_reconcile *rs)
{
    FILE *f;
    size_t n = 0;

    if (rs->opt->lease_ns != NULL)
        return rs->opt->lease_ns;
    f = fopen(SA_NAMESPACE_FILE, "r");
    if (f != NULL) {
        n = fread(rs->ns_buf, 1, sizeof(rs->ns_buf) - 1, f);
        fclose(f);
    }
    while (n > 0
           && (rs->ns_buf[n - 1] == '\n' || rs->ns_buf[n - 1] == ' ' || rs->ns_buf[n - 1] == '\r'
               || rs->ns_buf[n - 1] == '\t'))
        n--;
    rs->ns_buf[n] = '\0';
    return n > 0 ? rs->ns_buf : "default";
}

/* identity = hostname + "_" + 8 random hex digits, so two pods never share one. */
static int make_identity(struct serve_reconcile *rs)
{
    char host[256];
    unsigned char rnd[4];

    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';
    if (RAND_bytes(rnd, (int)sizeof(rnd)) != 1)
        return -1;
    snprintf(rs->identity, sizeof(rs->identity), "%s_%02x%02x%02x%02x", host, rnd[0], rnd[1],
             rnd[2], rnd[3]);
    return 0;
}

/* Informer handlers (informer thread): queue the Job for the reconciler (userdata). */
static void serve_on_job_add(void *userdata, const json_t *job)
{
    reconcile_enqueue(userdata, job);
}

static void serve_on_job_update(void *userdata, const json_t *old_job, const json_t *job)
{
    (void)old_job;
    reconcile_enqueue(userdata, job);
}

static void serve_on_job_delete(void *userdata, const json_t *last_known)
{
    reconcile_deleted(userdata, last_known);
}

/* Leader-election callback (leader thread; userdata the serve_reconcile): only the
 * leader reconciles, and with --cert-secret only it writes the certificates. */
static void serve_on_leading(void *userdata, bool leading)
{
    struct serve_reconcile *rs = userdata;

    reconcile_set_leading(rs->rec, leading);
    if (rs->keeper != NULL)
        certkeeper_set_leading(rs->keeper, leading);
}

/* Start the reconciler (idle). @return 0 or -1 after logging. */
static int reconcile_side_start(struct serve_reconcile *rs, struct k8s_client *kc,
                                struct cache *cache)
{
    struct reconcile_config rcfg;
    struct wh_error err = {0, ""};

    memset(&rcfg, 0, sizeof(rcfg));
    rcfg.workers = (int)rs->opt->reconcile_workers;
    rcfg.resync_period_s = rs->opt->resync_period_ms / 1000;
    if (reconcile_start(&rs->rec, kc, cache, &rcfg, &err) < 0) {
        LOG_ERROR("cannot start the reconciler err=%s", LOG_QUOTED(err.msg));
        return -1;
    }
    return 0;
}

/* After the informer: campaign for the Lease, or reconcile at once. @return 0 or -1. */
static int reconcile_side_lead(struct serve_reconcile *rs, struct k8s_client *kc)
{
    struct leader_config lcfg;
    struct wh_error err = {0, ""};

    if (!rs->opt->leader_elect) {
        LOG_INFO("leader election off: this replica reconciles");
        serve_on_leading(rs, true); /* and keeps the certificates, with --cert-secret */
        return 0;
    }
    if (make_identity(rs) < 0) {
        LOG_ERROR("cannot make a leader-election identity: no random bytes");
        return -1;
    }
    lcfg.ns = lease_namespace(rs);
    lcfg.name = LEASE_NAME;
    lcfg.identity = rs->identity;
    lcfg.lease_duration_s = rs->opt->lease_duration_ms / 1000;
    lcfg.renew_deadline_s = rs->opt->renew_deadline_ms / 1000;
    lcfg.retry_period_s = rs->opt->retry_period_ms / 1000;
    if (leader_start(&rs->leader, kc, &lcfg, serve_on_leading, rs, &err) < 0) {
        LOG_ERROR("cannot start leader election err=%s", LOG_QUOTED(err.msg));
        return -1;
    }
    return 0;
}

/* ---- operations: TLS hot reload, metrics, connection limits, graceful shutdown,
 *      hostile clients ---- */

#define SHUTDOWN_MIN_WAIT_MS                                                                       \
    2000L /* accept at least this long (within the grace) so that
                                          endpoints drop the pod before the listener goes */
#define SHUTDOWN_RESERVE_MAX_MS                                                                    \
    5000L /* at most this much of the grace is kept for the
                                          requests in flight once the listener is closed */
#define SHUTDOWN_POLL_MS 100L

/* The Jobs informers: one for every namespace, or one per --namespaces name. */
struct serve_informers {
    struct informer *v[SERVE_MAX_NAMESPACES]; /* owned; v[0..n) started */
    size_t n;
};

/*
 * The operations side's objects. Flags and certwatch: main thread only. The
 * module pointers are read by serve_collect on MHD workers under lock, and
 * cleared under it (ops_stop) before those modules are stopped.
 */
struct serve_ops {
    const struct serve_options *opt; /* the parsed flags, borrowed */
    struct certwatch *watch;         /* TLS files watcher, owned */
    struct server *srv;              /* borrowed; set before the watcher starts, then read-only */
    pthread_mutex_t lock;            /* guards the pointers below and leader_elect */
    struct cache *cache;             /* borrowed, for /metrics */
    struct serve_informers *inf;     /* borrowed: serve_state's */
    const struct lookup *lookup;     /* borrowed: pods of namespaces not served */
    struct reconcile *rec;
    struct leader *leader;
    struct certkeeper *keeper; /* --cert-secret */
    bool leader_elect;
    bool attached; /* the pointers above may be read */
};

/* Zeroed, with its lock; opt (the parsed flags) is borrowed for the whole run. */
static void ops_init(struct serve_ops *ops, const struct serve_options *opt)
{
    memset(ops, 0, sizeof(*ops));
    pthread_mutex_init(&ops->lock, NULL);
    ops->opt = opt;
}

/* server_config.metrics_collect (MHD workers): the running objects' values, named by the
 * catalogue (webhook/metrics.c). */
static void serve_collect(void *userdata, struct metric_writer *w)
{
    struct serve_ops *ops = userdata;
    struct informer_stats st[SERVE_MAX_NAMESPACES];
    const char *ns[SERVE_MAX_NAMESPACES];
    struct metrics_running r = {0};

    pthread_mutex_lock(&ops->lock);
    if (!ops->attached) {
        pthread_mutex_unlock(&ops->lock);
        return;
    }
    r.has_cache = ops->cache != NULL;
    r.cache_jobs = ops->cache != NULL ? cache_size(ops->cache) : 0;
    r.ninformers = ops->inf != NULL ? ops->inf->n : 0;
    for (size_t k = 0; k < r.ninformers; k++)
        informer_get_stats(ops->inf->v[k], &st[k]);
    r.informers = st;
    for (size_t k = 0; k < ops->opt->nnamespaces && k < SERVE_MAX_NAMESPACES; k++)
        ns[k] = ops->opt->namespaces[k];
    r.informer_namespaces = ops->opt->nnamespaces > 0 ? ns : NULL;
    r.has_lookup = ops->lookup != NULL;
    r.namespace_not_served = ops->lookup != NULL ? lookup_not_served(ops->lookup) : 0;
    r.has_reconciler = ops->rec != NULL;
    if (ops->rec != NULL)
        reconcile_get_stats(ops->rec, &r.reconcile);
    r.has_keeper = ops->keeper != NULL;
    r.cabundle_repairs = ops->keeper != NULL ? certkeeper_repairs(ops->keeper) : 0;
    r.leading = !ops->leader_elect || leader_is_leading(ops->leader);
    metrics_write_running(w, &r);
    pthread_mutex_unlock(&ops->lock);
}

/* Fill the server's limits and /metrics source (it reads nothing before ops_attach). */
static void ops_server_config(struct serve_ops *ops, struct server_config *scfg)
{
    scfg->connection_limit = (unsigned)ops->opt->max_connections;
    scfg->per_ip_limit = (unsigned)ops->opt->max_per_ip;
    scfg->connection_timeout = (unsigned)(ops->opt->idle_timeout_ms / 1000);
    scfg->request_timeout_ms = (unsigned)ops->opt->request_timeout_ms;
    scfg->max_body_in_flight = (size_t)ops->opt->max_body_in_flight;
    scfg->metrics_collect = serve_collect;
    scfg->metrics_userdata = ops;
}

/* The modules /metrics reads, from now until ops_stop (each may be NULL). */
static void ops_attach(struct serve_ops *ops, struct cache *cache, struct serve_informers *inf,
                       const struct lookup *lookup, struct reconcile *rec, struct leader *leader,
                       bool leader_elect)
{
    pthread_mutex_lock(&ops->lock);
    ops->cache = cache;
    ops->inf = inf;
    ops->lookup = lookup;
    ops->rec = rec;
    ops->leader = leader;
    ops->leader_elect = leader_elect;
    ops->attached = true;
    pthread_mutex_unlock(&ops->lock);
}

/* The keeper /metrics reads (--cert-secret), from now until ops_stop. */
static void ops_attach_keeper(struct serve_ops *ops, struct certkeeper *keeper)
{
    pthread_mutex_lock(&ops->lock);
    ops->keeper = keeper;
    pthread_mutex_unlock(&ops->lock);
}

/* certwatch_apply_fn (watcher thread): check and serve the new pair; userdata is the serve_ops. */
static int serve_apply_tls(void *userdata, const struct certs_pair *pair, struct wh_error *err)
{
    const struct serve_ops *ops = userdata;

    /* A reloaded key gets the start-up check too: a key others can read is published. */
    if (!ops->opt->allow_insecure_key
        && certs_check_key_permissions(ops->opt->tls_key_file, err) < 0)
        return err->code;
    return server_set_tls_pair(ops->srv, pair->cert_pem, pair->key_pem, err);
}

/* Watch the TLS files (pair: what the server serves now). @return 0 or -1 after logging. */
static int ops_watch_start(struct serve_ops *ops, struct server *srv, const char *cert_file,
                           const char *key_file, const struct certs_pair *pair)
{
    struct certwatch_config wcfg = {cert_file, key_file, 0, 0, 0};
    struct wh_error err = {0, ""};

    ops->srv = srv;
    if (certwatch_start(&ops->watch, &wcfg, pair, serve_apply_tls, ops, &err) < 0) {
        LOG_ERROR("cannot watch the TLS files: %s", err.msg);
        return -1;
    }
    return 0;
}

/* Milliseconds since t0 (clock_mono_ms). */
static long ms_since(long long t0)
{
    return (long)(clock_mono_ms() - t0);
}

/*
 * Wait until the server has nothing in flight and at least min_ms passed since
 * t0, or until max_ms passed. @return false when a second stop signal ended
 * the wait. block: the stop signals (blocked on every thread, so sigtimedwait
 * takes them).
 */
static bool ops_wait_idle(struct server *srv, long long t0, long min_ms, long max_ms,
                          const sigset_t *block)
{
    long waited;

    while ((waited = ms_since(t0)) < max_ms) {
        struct timespec step = {0, SHUTDOWN_POLL_MS * 1000000L};

        if (waited >= min_ms && server_in_flight(srv) == 0)
            return true;
        if (sigtimedwait(block, NULL, &step) > 0) {
            LOG_INFO("second stop signal: stopping without waiting for requests in flight");
            return false;
        }
    }
    return true;
}

/*
 * After SIGTERM/SIGINT: /readyz answers 503 at once and every answer says
 * "Connection: close", while everything is still served. Phase 1 keeps
 * accepting until nothing is in flight (after at least min(grace, 2 s)), or
 * until only the reserve (a third of the grace, at most 5 s) is left: under
 * steady load nothing-in-flight never comes. Phase 2 stops accepting and gives
 * the connections already accepted the rest of the grace, so that the stop
 * drops no request that reached the listener (a connect queued after phase 1
 * is refused, which a client sees before it sends anything).
 */
static void ops_drain(struct serve_ops *ops, struct server *srv, const sigset_t *block)
{
    long grace = ops->opt->shutdown_grace_ms;
    long reserve = grace / 3 < SHUTDOWN_RESERVE_MAX_MS ? grace / 3 : SHUTDOWN_RESERVE_MAX_MS;
    long accept_ms = grace - reserve;
    long min_ms = accept_ms < SHUTDOWN_MIN_WAIT_MS ? accept_ms : SHUTDOWN_MIN_WAIT_MS;
    long long t0;

    server_set_draining(srv);
    t0 = clock_mono_ms();
    if (ops_wait_idle(srv, t0, min_ms, accept_ms, block) && ms_since(t0) < grace) {
        server_quiesce(srv);
        ops_wait_idle(srv, t0, 0, grace, block);
    }
    LOG_INFO("drained waited_ms=%ld in_flight=%u shutdown_grace_ms=%ld", ms_since(t0),
             server_in_flight(srv), grace);
}

/* Before the server and the modules stop: no more reloads, no more module reads. */
static void ops_stop(struct serve_ops *ops)
{
    certwatch_stop(ops->watch);
    ops->watch = NULL;
    pthread_mutex_lock(&ops->lock);
    ops->attached = false;
    pthread_mutex_unlock(&ops->lock);
}

/* ---- end of operations ---- */

/* ---- --cert-secret, --self-signed: managed certificates (controller/certkeeper.h) ---- */

#define SELFSIGNED_SECRET "self-signed" /* the in-memory Secret's name, in logs only */

/* Managed mode: the Secret in the API (--cert-secret) or in memory (--self-signed). */
static bool managed_mode(const struct serve_options *o)
{
    return o->cert_secret != NULL || o->self_signed;
}

/* The Secret's name, for the keeper and the logs. */
static const char *managed_secret(const struct serve_options *o)
{
    return o->cert_secret != NULL ? o->cert_secret : SELFSIGNED_SECRET;
}

/* This replica's record key in the Secret: $POD_NAME (the Deployment sets it from
 * metadata.name), else the hostname (a pod's hostname is its name). */
static void managed_replica(char *out, size_t len)
{
    const char *pod = getenv("POD_NAME");

    if (pod != NULL && pod[0] != '\0' && strlen(pod) < len) {
        snprintf(out, len, "%s", pod);
        return;
    }
    if (gethostname(out, len) != 0 || out[0] == '\0')
        snprintf(out, len, "unknown");
    out[len - 1] = '\0';
}

#define MANAGED_WAIT_MS     120000L /* serving starts within this, else exit 1 (--help) */
#define MANAGED_STEP_MS     500L    /* between rounds while waiting */
#define MANAGED_LOG_MS      10000L  /* say what it waits for this often */
#define MANAGED_MIN_POLL_MS 100L

/*
 * The managed-mode objects; main thread, except that on_pair runs on the keeper's
 * thread once started. srv is written on the main thread only, before the first
 * round, and not changed until the keeper is destroyed; has_pair on the main
 * thread (on_pair runs there until certkeeper_start).
 */
struct serve_managed {
    const struct serve_options *opt; /* the parsed flags, borrowed */
    struct certkeeper *keeper;       /* owned */
    const char *ns;                  /* the Secret's (the Lease's); borrowed */
    char replica[256];               /* this replica's record key */
    struct server *srv;              /* borrowed; created (not running) before the first round */
    bool has_pair;                   /* on_pair loaded the Secret's pair into srv */
};

/*
 * Rounds often enough to renew in time (a tenth of --cert-renew-before) and to repair
 * within the interval (half of it), at most CERTKEEPER_MAX_POLL_MS apart.
 */
static long managed_poll_ms(const struct serve_options *o)
{
    long poll = CERTKEEPER_MAX_POLL_MS;

    if (o->cert_renew_before_ms / 10 < poll)
        poll = o->cert_renew_before_ms / 10;
    if (o->cabundle_repair_ms / 2 < poll)
        poll = o->cabundle_repair_ms / 2;
    return poll < MANAGED_MIN_POLL_MS ? MANAGED_MIN_POLL_MS : poll;
}

/*
 * certkeeper_pair_fn (main thread until the keeper's thread starts, then that
 * thread): hot-load the pair into the server for new handshakes (open connections
 * keep theirs) and set the expiry gauge. The server exists, not yet running, from
 * before the first round (serve_server_create).
 */
static int managed_on_pair(void *userdata, const struct certs_pair *pair, struct wh_error *err)
{
    struct serve_managed *ms = userdata;
    int rc;

    rc = server_set_tls_pair(ms->srv, pair->cert_pem, pair->key_pem, err);
    if (rc < 0)
        return rc;
    if (certwatch_check_expiry(pair->cert_pem, (long long)time(NULL), NULL) < 0)
        LOG_WARN("tls: cannot read the serving certificate's notAfter");
    ms->has_pair = true;
    return 0;
}

/*
 * A throwaway pair to create the server with before the Secret's (never served: the
 * server runs only once on_pair has replaced it), so that the port is bound before
 * the first request to the API server. @return 0 or -1 after logging.
 */
static int managed_placeholder_pair(struct certs_pair *out)
{
    static const char *const names[] = {"placeholder.invalid"};
    struct certs_pair ca = {NULL, NULL};
    struct wh_error err = {0, ""};
    int rc;

    rc = certs_generate_ca(&ca, CERTS_KEY_ECDSA_P256, 3600, &err);
    if (rc == 0)
        rc =
            certs_generate_leaf_seconds(out, NULL, &ca, CERTS_KEY_ECDSA_P256, names, 1, 3600, &err);
    certs_pair_dispose(&ca);
    if (rc < 0) {
        LOG_ERROR("cannot make a certificate: %s", err.msg);
        return -1;
    }
    return 0;
}

/* The keeper, not started, nothing sent. @return 0 or -1. */
static int managed_side_create(struct serve_managed *ms, struct k8s_client *kc, const char *ns)
{
    const struct serve_options *o = ms->opt;
    struct certkeeper_config cfg;
    struct wh_error err = {0, ""};

    if (!managed_mode(o))
        return 0;
    managed_replica(ms->replica, sizeof(ms->replica));
    memset(&cfg, 0, sizeof(cfg));
    cfg.kc = kc;
    cfg.ns = ns;
    cfg.secret = managed_secret(o);
    cfg.replica = ms->replica;
    cfg.in_memory = o->self_signed;
    cfg.service = o->service_name;
    cfg.extra_sans = o->tls_sans;
    cfg.nextra = o->ntls_sans;
    cfg.webhook_config = o->webhook_config;
    cfg.key_type = CERTS_KEY_ECDSA_P256;
    cfg.validity_s = o->cert_validity_ms / 1000;
    cfg.ca_validity_s = o->ca_validity_ms / 1000;
    cfg.renew_before_s = o->cert_renew_before_ms / 1000;
    cfg.poll_ms = managed_poll_ms(o);
    /* a check falls due at most one round before it runs: repaired within the interval */
    cfg.repair_ms = o->cabundle_repair_ms - cfg.poll_ms;
    cfg.on_pair = managed_on_pair;
    cfg.userdata = ms;
    ms->ns = ns;
    if (certkeeper_create(&ms->keeper, &cfg, &err) < 0) {
        LOG_ERROR("cannot set up the managed certificates: %s", err.msg);
        return -1;
    }
    pthread_mutex_lock(&ready_keeper_mu);
    ready_keeper = ms->keeper;
    pthread_mutex_unlock(&ready_keeper_mu);
    if (o->self_signed) {
        /* its Secret is its own: it keeps it whoever holds the Lease */
        certkeeper_set_leading(ms->keeper, true);
        LOG_WARN("--self-signed: this replica keeps its own CA in memory; with several "
                 "replicas each would put its own in the caBundle (use --cert-secret)");
    }
    LOG_INFO("managed certificates secret=%s/%s in_memory=%s replica=%s service=%s "
             "webhook_config=%s validity_s=%lld ca_validity_s=%lld renew_before_s=%lld "
             "poll_ms=%ld",
             ns, cfg.secret, o->self_signed ? "true" : "false", ms->replica, o->service_name,
             o->webhook_config, cfg.validity_s, cfg.ca_validity_s, cfg.renew_before_s, cfg.poll_ms);
    return 0;
}

/*
 * Rounds on the main thread (leader election runs) until this replica has a pair
 * in srv (created, not running), at most MANAGED_WAIT_MS; a stop signal (block:
 * blocked on every thread) ends the wait. @return 0, or -1 after logging.
 */
static int managed_side_wait(struct serve_managed *ms, struct server *srv,
                             const struct leader *leader, const sigset_t *block)
{
    long long t0 = clock_mono_ms();
    long next_log = 0;

    if (ms->keeper == NULL)
        return 0;
    ms->srv = srv;
    for (;;) {
        struct timespec step = {0, MANAGED_STEP_MS * 1000000L};
        struct wh_error err = {0, ""};
        bool leading = !ms->opt->leader_elect || leader_is_leading(leader);

        (void)certkeeper_sync(ms->keeper, &err); /* failures are logged there */
        if (ms->has_pair) {
            LOG_INFO("managed certificates: serving the pair of the secret secret=%s/%s "
                     "waited_ms=%ld",
                     ms->ns, managed_secret(ms->opt), ms_since(t0));
            return 0;
        }
        if (ms_since(t0) >= MANAGED_WAIT_MS) {
            LOG_ERROR("managed certificates: no serving pair in time, giving up secret=%s/%s "
                      "waited_s=%ld leading=%s err=%s",
                      ms->ns, managed_secret(ms->opt), MANAGED_WAIT_MS / 1000,
                      leading ? "true" : "false", LOG_QUOTED(err.msg));
            return -1;
        }
        if (ms_since(t0) >= next_log) {
            /* the Lease holder writes the pair; serving starts once this replica has it */
            LOG_INFO("managed certificates: waiting for a serving pair before serving "
                     "secret=%s/%s leading=%s waited_s=%ld",
                     ms->ns, managed_secret(ms->opt), leading ? "true" : "false",
                     ms_since(t0) / 1000);
            next_log += MANAGED_LOG_MS;
        }
        if (sigtimedwait(block, NULL, &step) > 0) {
            LOG_INFO("stop signal while waiting for the serving pair");
            return -1;
        }
    }
}

/* Later pairs go to the running server, from the keeper's own thread. @return 0 or -1. */
static int managed_side_start(struct serve_managed *ms)
{
    struct wh_error err = {0, ""};

    if (ms->keeper == NULL)
        return 0;
    if (certkeeper_start(ms->keeper, &err) < 0) {
        LOG_ERROR("cannot start the managed certificates: %s", err.msg);
        return -1;
    }
    return 0;
}

/* Before the server stops: no more pairs to load, no more readiness reads. */
static void managed_side_stop(struct serve_managed *ms)
{
    pthread_mutex_lock(&ready_keeper_mu);
    ready_keeper = NULL;
    pthread_mutex_unlock(&ready_keeper_mu);
    certkeeper_destroy(ms->keeper); /* joins its thread: on_pair is not called after */
    ms->keeper = NULL;
    ms->srv = NULL;
}

/* ---- end of --cert-secret ---- */

/*
 * One run of `serve`, in three steps over this struct (serve_main):
 *
 * serve_start owns everything below from the moment it makes it, and starts it
 * in this order: TLS pair (files; none yet in managed mode) → Kubernetes
 * client (no request yet) → Jobs cache → server created (port bound, pair
 * parsed, nothing served yet) → stop signals blocked (before any thread) →
 * reconciler (idle) → informers (one, or one per --namespaces namespace) →
 * leader election (or reconcile at once) →
 * server runs → TLS files watcher → port file.
 * Whatever can fail on its own (the pair, the client config, the port) fails
 * before the first request to the API server: a replica that cannot serve
 * never takes the Lease, lists no Job and patches no caBundle. It stops at the
 * first failure, leaving what it made for serve_stop.
 *
 * With --cert-secret (or --self-signed, its Secret in memory) the pair comes from
 * the keeper: it is made after the client (nothing sent); the server is created
 * with a throwaway pair (the port bound, nothing served); after leader election
 * has started (the Lease holder writes the first pair) the keeper's rounds run on
 * the main thread until the Secret's pair is in the server, which only then runs;
 * the keeper's threads start after.
 *
 * serve_wait owns nothing: it sleeps until a stop signal, then drains the server.
 *
 * serve_stop undoes whatever serve_start got to, in this order: TLS files
 * watcher and /metrics reads → Lease (stops reconciling, released for the
 * successor) → certificate keeper (--cert-secret) → server → lookups → caBundle
 * informers → reconciler →
 * client → cache → TLS pair → signal handlers and mask.
 *
 * Main thread only; the modules it points to have their own thread rules (top of file).
 */
struct serve_state {
    const struct serve_options *opt; /* the parsed flags, borrowed */
    struct lookup lookup;            /* admission's Job lookups; its client is owned here */
    struct cache *cache;             /* Jobs cache, owned */
    struct serve_informers inf;      /* list/watch threads, owned */
    struct serve_reconcile rs;       /* reconciler and leader election */
    struct serve_ops ops;            /* TLS reload, metrics, limits, shutdown */
    struct serve_managed ms;         /* --cert-secret */
    struct server_config scfg;       /* what server_create copies */
    struct certs_pair pair;          /* the TLS pair until the server has its copy */
    struct k8s_config kcfg;
    struct k8s_client *lease_client; /* leader election's own, not rate-limited; owned */
    struct server *srv;              /* owned */
    struct sigaction old_term;
    struct sigaction old_int;
    sigset_t block;    /* SIGTERM and SIGINT */
    sigset_t old_mask; /* the mask before serve_start */
    bool signals_set;  /* old_term, old_int and old_mask are to be restored */
};

/* Zeroed, with the flags (borrowed); every pointer NULL, so serve_stop may run at once. */
static void serve_state_init(struct serve_state *st, const struct serve_options *o)
{
    memset(st, 0, sizeof(*st));
    st->opt = o;
    st->rs.opt = o;
    st->ms.opt = o;
    ops_init(&st->ops, o);
    st->scfg.mutate.lookup_failure = o->lookup_failure;
    st->scfg.mutate.job_validation = o->job_validation;
    st->lookup.timeout_ms = o->lookup_timeout_ms;
}

/* The serving pair: none (plain HTTP), made in memory, or read from the files. @return 0 or -1. */
static int serve_tls_pair(struct serve_state *st)
{
    const struct serve_options *o = st->opt;
    struct wh_error err = {0, ""};
    int key_rc;

    if (o->insecure_http) {
        LOG_WARN("serving plain HTTP (--insecure-http): for tests and demos only, "
                 "kube-apiserver calls webhooks over HTTPS");
        return 0;
    }
    if (managed_mode(o)) /* from the Secret, once the keeper has it (serve_managed_wait) */
        return 0;
    if (!o->allow_insecure_key
        && (key_rc = certs_check_key_permissions(o->tls_key_file, &err)) < 0) {
        /* a key others can read is as good as published;
         * the override only helps with permissions, not with a missing file */
        if (key_rc == WH_EINVAL)
            LOG_ERROR("refusing the TLS private key: %s (--allow-insecure-key-permissions "
                      "to load it anyway)",
                      err.msg);
        else
            LOG_ERROR("cannot load the TLS pair: %s", err.msg);
        return -1;
    }
    if (certs_load_pair(&st->pair, o->tls_cert_file, o->tls_key_file, &err) < 0) {
        LOG_ERROR("cannot load the TLS pair: %s", err.msg);
        return -1;
    }
    return 0;
}

/* The shared Kubernetes client (no request yet). @return 0 or -1 after logging. */
static int serve_client(struct serve_state *st)
{
    /* before any thread uses the client; shared by every thread */
    struct k8s_client_options kopt = {st->opt->kube_api_qps, (int)st->opt->kube_api_burst, 2};
    struct wh_error err = {0, ""};

    if (k8s_config_load(&st->kcfg, st->opt->kubeconfig, &err) < 0) {
        LOG_ERROR("cannot load the Kubernetes client config: %s", err.msg);
        return -1;
    }
    st->lookup.client = k8s_client_create(&st->kcfg, &err);
    if (st->lookup.client == NULL) {
        LOG_ERROR("cannot create the Kubernetes client: %s", err.msg);
        return -1;
    }
    k8s_client_set_options(st->lookup.client, &kopt);
    /* The Lease's requests never queue behind the reconciler's: one per retry period at
     * most, on a client of their own with no rate limit (at a low --kube-api-qps a
     * renewal queued behind a reconcile backlog would miss its renew deadline). */
    kopt.qps = 0;
    st->lease_client = k8s_client_create(&st->kcfg, &err);
    if (st->lease_client == NULL) {
        LOG_ERROR("cannot create the Kubernetes client: %s", err.msg);
        return -1;
    }
    k8s_client_set_options(st->lease_client, &kopt);
    return 0;
}

/* Block the stop signals before any worker exists; serve_wait unblocks them in sigsuspend. */
static void serve_signals_block(struct serve_state *st)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigemptyset(&st->block);
    sigaddset(&st->block, SIGTERM);
    sigaddset(&st->block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &st->block, &st->old_mask);
    sigaction(SIGTERM, &sa, &st->old_term);
    sigaction(SIGINT, &sa, &st->old_int);
    st->signals_set = true;
}

/*
 * The cluster side, the first requests to the API server: reconciler (idle,
 * before the informer's first event), informer, then leader election.
 * @return 0 or -1.
 */
static int serve_cluster_start(struct serve_state *st)
{
    struct informer_handlers inf_handlers = {serve_on_job_add, serve_on_job_update,
                                             serve_on_job_delete, NULL};
    const struct serve_options *o = st->opt;
    struct informer_config inf_cfg;
    struct wh_error err = {0, ""};
    size_t n = o->nnamespaces > 0 ? o->nnamespaces : 1;

    if (reconcile_side_start(&st->rs, st->lookup.client, st->cache) < 0)
        return -1;
    inf_handlers.userdata = st->rs.rec;
    memset(&inf_cfg, 0, sizeof(inf_cfg)); /* 0 = the informer's defaults */
    inf_cfg.idle_timeout_ms = o->watch_idle_ms;
    /* --namespaces: one informer per namespace, as client-go's namespaced informers;
     * the handlers, the reconciler and the Lease are shared. */
    for (size_t k = 0; k < n; k++) {
        inf_cfg.ns = o->nnamespaces > 0 ? o->namespaces[k] : NULL;
        if (informer_start(&st->inf.v[k], st->lookup.client, st->cache, &inf_cfg, &inf_handlers,
                           &err)
            < 0) {
            LOG_ERROR("cannot start the jobs informer ns=%s: %s",
                      inf_cfg.ns != NULL ? inf_cfg.ns : "(all)", err.msg);
            return -1;
        }
        st->inf.n++;
    }
    if (o->nnamespaces > 0) {
        char names[SERVE_MAX_NAMESPACES * (SERVE_NAMESPACE_MAX_LEN + 1)] = "";
        size_t off = 0;

        for (size_t k = 0; k < o->nnamespaces; k++)
            off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s", k > 0 ? "," : "",
                                    o->namespaces[k]);
        LOG_INFO("serving the jobs of these namespaces only namespaces=%s", names);
    }
    return reconcile_side_lead(&st->rs, st->lease_client);
}

/* The server created with st->pair: the port bound and the pair parsed, nothing
 * served yet. @return 0 or -1 after logging. */
static int serve_server_bind(struct serve_state *st)
{
    struct wh_error err = {0, ""};

    st->scfg.tls_cert_pem = st->pair.cert_pem;
    st->scfg.tls_key_pem = st->pair.key_pem;
    if (server_create(&st->srv, &st->scfg, &err) < 0) {
        LOG_ERROR("%s", err.msg);
        return -1;
    }
    return 0;
}

/*
 * Jobs cache, lookups and the server created: the port bound and the pair
 * parsed, nothing served yet (in managed mode a throwaway pair until
 * serve_managed_wait). No request to the API server. @return 0 or -1.
 */
static int serve_server_create(struct serve_state *st)
{
    const struct serve_options *o = st->opt;
    struct server_config *scfg = &st->scfg;

    {
        const char *names[SERVE_MAX_NAMESPACES];

        for (size_t k = 0; k < o->nnamespaces; k++)
            names[k] = o->namespaces[k];
        st->cache = cache_create_namespaced(names, o->nnamespaces); /* 0: every namespace */
    }
    if (st->cache == NULL) {
        LOG_ERROR("cannot create the jobs cache: out of memory");
        return -1;
    }
    st->lookup.cache = st->cache;
    scfg->bind_address = o->bind_address;
    scfg->port = (unsigned)o->port;
    /* The MHD workers never wait on Job GETs: the server's lookup threads do (its
     * server_defer.c), and no more lookups wait than there are of them. */
    scfg->threads = server_default_threads("/sys/fs/cgroup");
    scfg->lookup_threads = server_default_lookup_threads(scfg->threads);
    st->lookup.max_waiting = scfg->lookup_threads;
    if (lookup_init(&st->lookup) < 0) {
        LOG_ERROR("out of memory");
        return -1;
    }
    scfg->src = lookup_job_source(&st->lookup); /* cache first, else one shared GET */
    scfg->ready = serve_ready;
    scfg->ready_userdata = st->cache;
    ops_server_config(&st->ops, scfg); /* operations: connection limits and /metrics */
    /* managed mode: bound with a throwaway pair now, the Secret's before it runs
     * (serve_managed_wait), so that a port taken fails before any request */
    if (managed_mode(o) && managed_placeholder_pair(&st->pair) < 0)
        return -1;
    if (serve_server_bind(st) < 0)
        return -1;
    if (managed_mode(o))
        certs_pair_dispose(&st->pair); /* never served, nor in the expiry gauge */
    return 0;
}

/* --cert-secret: the keeper, for the Secret in the Lease namespace. @return 0 or -1. */
static int serve_managed_create(struct serve_state *st)
{
    if (managed_side_create(&st->ms, st->lookup.client, lease_namespace(&st->rs)) < 0)
        return -1;
    if (st->opt->cert_secret != NULL)  /* --self-signed's keeper leads its own Secret */
        st->rs.keeper = st->ms.keeper; /* fed the Lease by serve_on_leading */
    return 0;
}

/* Managed mode: rounds until the server has the Secret's pair. @return 0 or -1. */
static int serve_managed_wait(struct serve_state *st)
{
    return managed_side_wait(&st->ms, st->srv, st->rs.leader, &st->block);
}

/* Serve, and what serves with it: expiry gauge, TLS files watcher, port file. @return 0 or -1. */
static int serve_server_run(struct serve_state *st)
{
    const struct serve_options *o = st->opt;
    struct wh_error err = {0, ""};

    ops_attach(&st->ops, st->cache, &st->inf, &st->lookup, st->rs.rec, st->rs.leader,
               o->leader_elect);
    ops_attach_keeper(&st->ops, st->ms.keeper); /* --cert-secret */
    if (server_run(st->srv, &err) < 0) {
        LOG_ERROR("%s", err.msg);
        return -1;
    }
    /* --cert-secret: later pairs are hot-loaded from the keeper's thread */
    if (managed_side_start(&st->ms) < 0)
        return -1;
    /* operations: the served certificate's notAfter gauge, and a warning when it is
     * near (files; managed mode sets it in managed_on_pair); certwatch re-checks daily */
    if (st->pair.cert_pem != NULL
        && certwatch_check_expiry(st->pair.cert_pem, (long long)time(NULL), &err) < 0)
        LOG_WARN("tls: cannot read the serving certificate's notAfter err=%s", LOG_QUOTED(err.msg));
    /* operations: TLS files hot reload (not in managed mode or plain HTTP) */
    if (o->tls_cert_file != NULL && o->tls_key_file != NULL
        && ops_watch_start(&st->ops, st->srv, o->tls_cert_file, o->tls_key_file, &st->pair) < 0)
        return -1;
    certs_pair_dispose(&st->pair); /* the server keeps its own copy */
    LOG_INFO("serving version=%s commit=%s address=%s port=%u tls=%s job_lookup_failure=%s "
             "job_lookup_timeout_ms=%ld job_validation=%s",
             WH_VERSION, version_commit, server_address(st->srv), server_port(st->srv),
             o->insecure_http ? "off" : "on",
             st->scfg.mutate.lookup_failure == LOOKUP_FAILURE_ALLOW ? "allow" : "deny",
             st->lookup.timeout_ms,
             st->scfg.mutate.job_validation == JOB_VALIDATION_DENY ? "deny" : "warn");
    if (o->port_file != NULL && write_port_file(o->port_file, server_port(st->srv)) < 0) {
        LOG_ERROR("cannot write --port-file %s: %s", o->port_file, strerror(errno));
        return -1;
    }
    return 0;
}

/* Start everything (order: struct serve_state). @return 0, or -1 after logging. */
static int serve_start(struct serve_state *st, const struct serve_options *o)
{
    serve_state_init(st, o);
    log_set_level((int)o->verbosity);
    /* nothing here sends a request: whatever fails fails before the cluster sees us */
    if (serve_tls_pair(st) < 0 || serve_client(st) < 0 || serve_managed_create(st) < 0
        || serve_server_create(st) < 0)
        return -1;
    serve_signals_block(st);
    if (serve_cluster_start(st) < 0 || serve_managed_wait(st) < 0 || serve_server_run(st) < 0)
        return -1;
    return 0;
}

/* Sleep until SIGTERM or SIGINT, then drain the server (ops_drain). */
static void serve_wait(struct serve_state *st)
{
    sigset_t wait_mask = st->old_mask;

    sigdelset(&wait_mask, SIGTERM);
    sigdelset(&wait_mask, SIGINT);
    while (stop_signal == 0)
        sigsuspend(&wait_mask);
    LOG_INFO("shutting down signal=%d", (int)stop_signal);
    ops_drain(&st->ops, st->srv, &st->block); /* operations: readiness false, serve what comes */
}

/* Stop and free whatever serve_start made (order: struct serve_state); safe after any failure. */
static void serve_stop(struct serve_state *st)
{
    ops_stop(&st->ops); /* operations: before the server and the modules /metrics reads */
    /* Nothing waits in the client's rate limiter from here: at a low --kube-api-qps the
     * reconcile workers' queued tokens would hold their joins for seconds. */
    k8s_client_close(st->lookup.client);
    /* reconcile side first: stop reconciling and release the Lease for the successor */
    leader_stop(st->rs.leader);
    managed_side_stop(&st->ms); /* before the server: its on_pair loads pairs into it */
    st->rs.keeper = NULL;
    server_stop(st->srv);
    lookup_dispose(&st->lookup); /* after the server: its workers were the lookups */
    /* joins the threads: nothing uses the client or the cache after */
    for (size_t k = 0; k < st->inf.n; k++)
        informer_stop(st->inf.v[k]);
    reconcile_stop(st->rs.rec); /* after the informer (its handlers queue); joins the workers */
    if (st->lookup.client != NULL)
        k8s_client_destroy(st->lookup.client);
    k8s_client_destroy(st->lease_client);
    cache_destroy(st->cache);
    k8s_config_dispose(&st->kcfg);
    certs_pair_dispose(&st->pair);
    if (st->signals_set) {
        sigaction(SIGTERM, &st->old_term, NULL);
        sigaction(SIGINT, &st->old_int, NULL);
        pthread_sigmask(SIG_SETMASK, &st->old_mask, NULL);
    }
}

int serve_main(int argc, char **argv)
{
    struct serve_options o; /* the flags (webhook/serve_flags.h) */
    struct serve_state st;
    int rc;

    rc = serve_flags_parse(&o, argc, argv, stdout, stderr);
    if (rc != 0)
        return rc == SERVE_FLAGS_HELP ? 0 : 2; /* --help: 0; a bad flag: usage, 2 */
    rc = serve_start(&st, &o) < 0 ? 1 : 0;
    if (rc == 0)
        serve_wait(&st);
    serve_stop(&st);
    return rc;
}
