/*
 * serve.c - the `serve` subcommand: flags, start order, signals, shutdown.
 *
 * Start order: parse and validate every flag (exit 2 on a bad one) → log level
 * → TLS pair (exit 1 naming the file) → Kubernetes client (exit 1) → block
 * SIGTERM/SIGINT → Jobs cache → reconciler (idle) → informer thread (its
 * handlers queue Jobs for the reconciler) → leader election (or, with
 * --leader-elect=false, reconcile at once) → server_start (every thread
 * inherits the blocked mask, so the signals reach this thread only) → TLS
 * files watcher (certwatch) → port file → wait in sigsuspend until a signal
 * sets the flag → drain (/readyz 503 at once; serve until nothing is in flight
 * and min(grace, 2 s) passed, at most --shutdown-grace) → certwatch stop →
 * leader_stop (stops reconciling, releases the Lease) → server_stop → informer_stop (no more
 * queueing) → reconcile_stop (joins the workers) → client destroy → cache
 * destroy → exit 0.
 *
 * Threads: serve_main runs on the main thread. The admission lookup
 * (lookup_job_get, webhook/lookup.h) and serve_ready run on MHD workers; they
 * read struct job_lookup, immutable while the server runs, the cache (its own
 * rwlock) and the shareable k8s client. The informer thread writes the cache.
 * The reconciler's handlers (serve_on_job_*) run on the informer thread and
 * serve_on_leading on the leader-election thread; both only call the
 * thread-safe reconcile_* functions. serve_collect (GET /metrics) runs on MHD
 * workers and reads the modules under serve_ops.lock; serve_apply_tls runs on
 * the certwatch thread and calls the thread-safe server_set_tls_pair. With
 * --self-signed, the caBundle patch thread (certs/selfsigned.c, started after
 * the signal mask) uses the shared client; serve_ready reads its atomic flag.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "certs/certs.h"
#include "certs/selfsigned.h"
#include "k8s/client.h"
#include "webhook/cache.h"
#include "webhook/certwatch.h"
#include "webhook/commands.h"
#include "webhook/informer.h"
#include "webhook/leader.h"
#include "webhook/log.h"
#include "webhook/lookup.h"
#include "webhook/metrics.h"
#include "webhook/reconcile.h"
#include "webhook/server.h"
#include "webhook/clock.h"

#define DEFAULT_BIND "0.0.0.0"
#define DEFAULT_PORT 8443
#define DEFAULT_LOOKUP_TIMEOUT_MS 2000L
#define MAX_LOOKUP_TIMEOUT_MS 30000L  /* kube-apiserver waits at most 30 s for a webhook */

static volatile sig_atomic_t stop_signal;  /* set by on_signal, read by serve_main */

/* Async-signal-safe: record the signal, nothing else (no logging here). */
static void on_signal(int sig)
{
    stop_signal = sig;
}

/* ---- --self-signed: readiness flag (issue 4, certificates) ---- */

/* The caBundle patcher of --self-signed, NULL without it. Set on the main thread
 * before server_start and cleared after server_stop, so MHD workers only read it. */
static const struct selfsigned_patcher *ready_patcher;

/* NULL when our caBundle is in place (or --self-signed is off), else the reason. */
static const char *selfsigned_not_ready(void)
{
    if (ready_patcher == NULL || selfsigned_patch_done(ready_patcher))
        return NULL;
    return "caBundle not patched yet";
}

/* ---- end of --self-signed readiness flag ---- */

/* ---- Jobs cache: readiness (issue 3) ---- */

/* server_config.ready: /readyz waits for the first LIST (the TLS pair is loaded
 * before the server starts at all). Runs on MHD workers; cache_synced is atomic. */
static const char *serve_ready(void *userdata)
{
    const char *why = selfsigned_not_ready();  /* --self-signed: once our CA is trusted */

    if (why != NULL)
        return why;
    return cache_synced(userdata) ? NULL : "jobs cache not synced";
}

static void serve_usage(FILE *to)
{
    fprintf(to,
            "usage: " WH_PROG " serve [flags]\n"
            "\n"
            "Serve the mutating admission webhook for pods of Volcano Jobs\n"
            "(POST /pods/mutate, GET /healthz, GET /readyz).\n"
            "\n"
            "flags:\n"
            "  --bind-address ADDR            IPv4 or IPv6 address to listen on (default %s)\n"
            "  --port N                       TCP port, 0 = any free port (default %d)\n"
            "  --tls-cert-file FILE           PEM serving certificate (chain) (required)\n"
            "  --tls-private-key-file FILE    PEM private key of the certificate (required)\n"
            "  --self-signed                  instead of the two flags above: make a CA and\n"
            "                                 serving certificate in memory at start-up and\n"
            "                                 patch the caBundle of --webhook-config-name;\n"
            "                                 single-replica or test setups only (each replica\n"
            "                                 makes its own CA, the last to patch wins)\n"
            "  --service-name NAME            with --self-signed: Service name in the\n"
            "                                 certificate (default volcano-plugin-webhook)\n"
            "  --tls-san NAME                 with --self-signed: one more subjectAltName,\n"
            "                                 DNS name or IP; repeatable (default: none)\n"
            "  --webhook-config-name NAME     with --self-signed: the\n"
            "                                 MutatingWebhookConfiguration whose webhooks get\n"
            "                                 the caBundle (default volcano-plugin-webhook)\n"
            "  --allow-insecure-key-permissions  load --tls-private-key-file even when it\n"
            "                                 is readable by others or group-writable\n"
            "                                 (default: refuse; want 0600/0400/0440)\n"
            "  --insecure-http                serve plain HTTP without TLS; tests and demos\n"
            "                                 only, kube-apiserver needs HTTPS (default off)\n"
            "  --kubeconfig FILE              kubeconfig for the Jobs list/watch and lookups\n"
            "                                 (default $KUBECONFIG, else the in-cluster\n"
            "                                 service account)\n"
            "  --job-lookup-failure deny|allow  when a Job cannot be read (timeout, 5xx): deny\n"
            "                                 the pod, or allow it unmutated with a warning\n"
            "                                 (default deny)\n"
            "  --job-lookup-timeout DURATION  time limit of one Job lookup, e.g. 500ms, 2s;\n"
            "                                 at most 30s (default 2s)\n"
            "  --leader-elect[=BOOL]          reconcile only while holding the Lease\n"
            "                                 volcano-plugin-webhook; false: this replica\n"
            "                                 always reconciles (default true)\n"
            "  --leader-elect-lease-duration DURATION  how long a Lease is valid without\n"
            "                                 renewal, whole seconds (default 15s)\n"
            "  --leader-elect-renew-deadline DURATION  a leader that cannot renew for this\n"
            "                                 long stops reconciling (default 10s)\n"
            "  --leader-elect-retry-period DURATION  time between tries to acquire or\n"
            "                                 renew the Lease (default 2s)\n"
            "  --leader-elect-resource-namespace NS  namespace of the Lease (default: the\n"
            "                                 pod's own namespace, else \"default\")\n"
            "  --resync-period DURATION       reconcile every cached Job this often, e.g.\n"
            "                                 30s, 10m, 1h (default 10m)\n"
            "  --reconcile-workers N          Jobs reconciled in parallel, 1..64 (default 4)\n"
            "  --kube-api-qps QPS             sustained API requests per second, shared by\n"
            "                                 every thread; 0 = no limit (default 50)\n"
            "  --kube-api-burst N             API requests allowed in a burst (default 100)\n"
            "  -v, --v N                      log verbosity: 0 error, 1 warn, 2 info,\n"
            "                                 3+ debug (default 2)\n"
            "  --port-file FILE               write the bound port to FILE once listening\n"
            "                                 (default none)\n",
            DEFAULT_BIND, DEFAULT_PORT);
    /* operations flags (issue 4/6): a second string, ISO C caps one literal at 4095 bytes */
    fputs("  --shutdown-grace DURATION      on SIGTERM/SIGINT: /readyz fails at once; new\n"
          "                                 connections are served until none is in flight\n"
          "                                 (after at least 2s) or until a third of this is\n"
          "                                 left (at most 5s), which the requests in flight\n"
          "                                 get; 0 = stop at once (default 15s)\n"
          "  --max-connections N            concurrent connections, 1..1000000 (default 1000)\n"
          "  --max-connections-per-ip N     concurrent connections from one client address;\n"
          "                                 0 = no limit (default 0: kube-apiserver may call\n"
          "                                 from a single address)\n"
          "  --connection-idle-timeout DURATION  close a connection idle this long, whole\n"
          "                                 seconds (default 30s)\n"
          "  --request-timeout DURATION     close a connection whose request (headers and\n"
          "                                 body; for a new connection also the TLS\n"
          "                                 handshake) has not arrived within this\n"
          "                                 (default 10s)\n"
          "  -h, --help                     show this help\n",
          to);
}

/* Strict integer parse of s into [lo, hi]. @return 0 or -1. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;

    if (s == NULL || *s == '\0' || *s == ' ' || *s == '+')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/*
 * A Go-style duration with one integer and a unit: "500ms", "2s", "1m", "1h".
 * Every duration flag goes through here.
 * @return 0 with *ms_out in milliseconds, or -1.
 */
static int parse_duration_ms(const char *s, long *ms_out)
{
    static const struct {
        const char *unit;
        long ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    char *end;
    long v;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0)
        return -1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(end, units[i].unit) == 0) {
            if (v > LONG_MAX / units[i].ms)
                return -1;
            *ms_out = v * units[i].ms;
            return 0;
        }
    }
    return -1;
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

enum {
    OPT_BIND = 256,
    OPT_PORT,
    OPT_CERT,
    OPT_KEY,
    OPT_INSECURE,
    OPT_KUBECONFIG,
    OPT_LOOKUP_FAILURE,
    OPT_LOOKUP_TIMEOUT,
    OPT_PORT_FILE,
    /* reconcile side (issue 3) */
    OPT_LEADER_ELECT,
    OPT_LEASE_DURATION,
    OPT_RENEW_DEADLINE,
    OPT_RETRY_PERIOD,
    OPT_LEASE_NAMESPACE,
    OPT_RESYNC_PERIOD,
    OPT_RECONCILE_WORKERS,
    OPT_KUBE_API_QPS,
    OPT_KUBE_API_BURST,
    /* --self-signed (issue 4, certificates) */
    OPT_SELF_SIGNED,
    OPT_SERVICE_NAME,
    OPT_TLS_SAN,
    OPT_WEBHOOK_CONFIG,
    OPT_WATCH_IDLE_TIMEOUT,     /* hidden (tests, advanced): stalled-watch detection */
    OPT_ALLOW_INSECURE_KEY,     /* --allow-insecure-key-permissions (issue 6) */
};

/* Report a bad flag value and return the usage exit status. */
static int bad_value(const char *flag, const char *value, const char *want)
{
    fprintf(stderr, WH_PROG ": serve: invalid %s \"%s\": %s\n", flag, value, want);
    return 2;
}

/* ---- reconcile side: reconciler, leader election, API client limits (issue 3) ---- */

#define LEASE_NAME "volcano-plugin-webhook"
#define SA_NAMESPACE_FILE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

/* The reconcile side's flags and objects; main thread only. */
struct serve_reconcile {
    bool leader_elect;          /* --leader-elect */
    long lease_duration_ms;     /* --leader-elect-lease-duration */
    long renew_deadline_ms;     /* --leader-elect-renew-deadline */
    long retry_period_ms;       /* --leader-elect-retry-period */
    const char *lease_ns;       /* --leader-elect-resource-namespace, NULL = detect */
    long resync_period_ms;      /* --resync-period */
    long workers;               /* --reconcile-workers */
    double qps;                 /* --kube-api-qps */
    long burst;                 /* --kube-api-burst */
    struct reconciler *rec;     /* owned */
    struct leader *leader;      /* owned */
    char ns_buf[256];           /* the detected namespace */
    char identity[320];         /* hostname_xxxxxxxx */
};

static void reconcile_flags_init(struct serve_reconcile *rs)
{
    memset(rs, 0, sizeof(*rs));
    rs->leader_elect = true;
    rs->lease_duration_ms = 15000;
    rs->renew_deadline_ms = 10000;
    rs->retry_period_ms = 2000;
    rs->resync_period_ms = 600000;
    rs->workers = 4;
    rs->qps = 50;
    rs->burst = 100;
}

/* Go's strconv.ParseBool. @return 0 or -1. */
static int parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
    static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

/* A duration flag of whole seconds, at least 1s. @return 0 or -1. */
static int parse_seconds_ms(const char *s, long *ms_out)
{
    long ms;

    if (parse_duration_ms(s, &ms) < 0 || ms < 1000 || ms % 1000 != 0)
        return -1;
    *ms_out = ms;
    return 0;
}

/* One reconcile-side flag. @return 0, or the usage exit status after the message. */
static int reconcile_flag(struct serve_reconcile *rs, int opt, const char *arg)
{
    static const char *const secs = "want a whole number of seconds, at least 1s, like 15s";
    char *end;

    switch (opt) {
    case OPT_LEADER_ELECT:
        if (arg != NULL && parse_bool(arg, &rs->leader_elect) < 0)
            return bad_value("--leader-elect", arg, "want true or false");
        if (arg == NULL)
            rs->leader_elect = true;
        return 0;
    case OPT_LEASE_DURATION:
        return parse_seconds_ms(arg, &rs->lease_duration_ms) < 0
                   ? bad_value("--leader-elect-lease-duration", arg, secs) : 0;
    case OPT_RENEW_DEADLINE:
        return parse_seconds_ms(arg, &rs->renew_deadline_ms) < 0
                   ? bad_value("--leader-elect-renew-deadline", arg, secs) : 0;
    case OPT_RETRY_PERIOD:
        return parse_seconds_ms(arg, &rs->retry_period_ms) < 0
                   ? bad_value("--leader-elect-retry-period", arg, secs) : 0;
    case OPT_LEASE_NAMESPACE:
        if (arg[0] == '\0' || strlen(arg) > 63 || strchr(arg, '/') != NULL)
            return bad_value("--leader-elect-resource-namespace", arg, "want a namespace name");
        rs->lease_ns = arg;
        return 0;
    case OPT_RESYNC_PERIOD:
        return parse_seconds_ms(arg, &rs->resync_period_ms) < 0
                   ? bad_value("--resync-period", arg, secs) : 0;
    case OPT_RECONCILE_WORKERS:
        return parse_long(arg, 1, 64, &rs->workers) < 0
                   ? bad_value("--reconcile-workers", arg, "want an integer 1..64") : 0;
    case OPT_KUBE_API_QPS:
        errno = 0;
        rs->qps = strtod(arg, &end);
        if (arg[0] == '\0' || *end != '\0' || errno != 0 || !(rs->qps >= 0 && rs->qps <= 1e6))
            return bad_value("--kube-api-qps", arg, "want a number from 0 (no limit) to 1e6");
        return 0;
    case OPT_KUBE_API_BURST:
        return parse_long(arg, 1, 1000000, &rs->burst) < 0
                   ? bad_value("--kube-api-burst", arg, "want an integer 1..1000000") : 0;
    default:
        return 2;
    }
}

/* client-go's rule: lease duration > renew deadline > retry period. @return 0 or 2. */
static int reconcile_flags_check(const struct serve_reconcile *rs)
{
    if (rs->lease_duration_ms <= rs->renew_deadline_ms
        || rs->renew_deadline_ms <= rs->retry_period_ms) {
        fprintf(stderr, WH_PROG ": serve: want --leader-elect-lease-duration (%lds) > "
                        "--leader-elect-renew-deadline (%lds) > --leader-elect-retry-period "
                        "(%lds)\n",
                rs->lease_duration_ms / 1000, rs->renew_deadline_ms / 1000,
                rs->retry_period_ms / 1000);
        return 2;
    }
    return 0;
}

/* The Lease namespace: the flag, else the service account's namespace file, else "default". */
static const char *lease_namespace(struct serve_reconcile *rs)
{
    FILE *f;
    size_t n = 0;

    if (rs->lease_ns != NULL)
        return rs->lease_ns;
    f = fopen(SA_NAMESPACE_FILE, "r");
    if (f != NULL) {
        n = fread(rs->ns_buf, 1, sizeof(rs->ns_buf) - 1, f);
        fclose(f);
    }
    while (n > 0 && (rs->ns_buf[n - 1] == '\n' || rs->ns_buf[n - 1] == ' '
                     || rs->ns_buf[n - 1] == '\r' || rs->ns_buf[n - 1] == '\t'))
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

/* Leader-election callback (leader thread): only the leader reconciles. */
static void serve_on_leading(void *userdata, bool leading)
{
    reconcile_set_leading(userdata, leading);
}

/* Start the reconciler (idle). @return 0 or -1 after logging. */
static int reconcile_side_start(struct serve_reconcile *rs, struct k8s_client *kc,
                                struct job_cache *cache)
{
    struct reconcile_config rcfg;
    struct wh_error err = {0, ""};

    memset(&rcfg, 0, sizeof(rcfg));
    rcfg.workers = (int)rs->workers;
    rcfg.resync_period_s = rs->resync_period_ms / 1000;
    if (reconcile_start(&rs->rec, kc, cache, &rcfg, &err) < 0) {
        LOG_ERROR("cannot start the reconciler err=\"%s\"", err.msg);
        return -1;
    }
    return 0;
}

/* After the informer: campaign for the Lease, or reconcile at once. @return 0 or -1. */
static int reconcile_side_lead(struct serve_reconcile *rs, struct k8s_client *kc)
{
    struct leader_config lcfg;
    struct wh_error err = {0, ""};

    if (!rs->leader_elect) {
        LOG_INFO("leader election off: this replica reconciles");
        reconcile_set_leading(rs->rec, true);
        return 0;
    }
    if (make_identity(rs) < 0) {
        LOG_ERROR("cannot make a leader-election identity: no random bytes");
        return -1;
    }
    lcfg.ns = lease_namespace(rs);
    lcfg.name = LEASE_NAME;
    lcfg.identity = rs->identity;
    lcfg.lease_duration_s = rs->lease_duration_ms / 1000;
    lcfg.renew_deadline_s = rs->renew_deadline_ms / 1000;
    lcfg.retry_period_s = rs->retry_period_ms / 1000;
    if (leader_start(&rs->leader, kc, &lcfg, serve_on_leading, rs->rec, &err) < 0) {
        LOG_ERROR("cannot start leader election err=\"%s\"", err.msg);
        return -1;
    }
    return 0;
}

/* ---- --self-signed: in-memory pair and caBundle patch (issue 4, certificates) ---- */

#define SELFSIGNED_DEFAULT_NAME "volcano-plugin-webhook"  /* Service and webhook config */

/* The --self-signed flags and objects; main thread only. */
struct serve_selfsigned {
    bool on;                                  /* --self-signed */
    const char *service;                      /* --service-name */
    const char *config;                       /* --webhook-config-name */
    const char *sans[SELFSIGNED_MAX_EXTRA];   /* --tls-san, borrowed from argv */
    size_t nsans;
    bool named;                               /* any of the three given */
    struct certs_pair ca;                     /* the CA made at start-up */
    struct selfsigned_patcher *patcher;       /* owned */
};

/* DNS-1123 subdomain-ish: 1-253 of [a-z0-9.-], alphanumeric at both ends. */
static bool dns1123_name(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 253 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'
              || s[i] == '.'))
            return false;
    return true;
}

/* One --self-signed flag. @return 0, or the usage exit status after the message. */
static int selfsigned_flag(struct serve_selfsigned *ss, int opt, const char *arg)
{
    size_t n;

    switch (opt) {
    case OPT_SELF_SIGNED:
        ss->on = true;
        return 0;
    case OPT_SERVICE_NAME:
        if (!dns1123_name(arg) || strchr(arg, '.') != NULL || strlen(arg) > 63)
            return bad_value("--service-name", arg, "want a Service name (DNS-1123 label)");
        ss->service = arg;
        ss->named = true;
        return 0;
    case OPT_WEBHOOK_CONFIG:
        if (!dns1123_name(arg))
            return bad_value("--webhook-config-name", arg, "want an object name");
        ss->config = arg;
        ss->named = true;
        return 0;
    case OPT_TLS_SAN:
        /* a DNS name or an IP address: printable, no spaces or commas */
        n = strlen(arg);
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)arg[i] <= 0x20 || (unsigned char)arg[i] > 0x7E || arg[i] == ',')
                n = 0;
        if (n == 0 || n > 253)
            return bad_value("--tls-san", arg, "want a DNS name or an IP address");
        if (ss->nsans == SELFSIGNED_MAX_EXTRA) {
            fprintf(stderr, WH_PROG ": serve: more than %d --tls-san flags\n",
                    SELFSIGNED_MAX_EXTRA);
            return 2;
        }
        ss->sans[ss->nsans++] = arg;
        ss->named = true;
        return 0;
    default:
        return 2;
    }
}

/* --self-signed excludes a certificate from files and plain HTTP. @return 0 or 2. */
static int selfsigned_flags_check(const struct serve_selfsigned *ss, bool insecure,
                                  const char *cert_file, const char *key_file)
{
    if (ss->on && (cert_file != NULL || key_file != NULL || insecure)) {
        fprintf(stderr, WH_PROG ": serve: --self-signed cannot be combined with %s\n",
                cert_file != NULL ? "--tls-cert-file"
                : key_file != NULL ? "--tls-private-key-file" : "--insecure-http");
        return 2;
    }
    if (!ss->on && ss->named) {
        fprintf(stderr, WH_PROG ": serve: --service-name, --tls-san and --webhook-config-name "
                        "need --self-signed\n");
        return 2;
    }
    return 0;
}

/* Make the CA and the serving pair for SERVICE.NS (ns: the Lease namespace). */
static int selfsigned_side_generate(struct serve_selfsigned *ss, const char *ns,
                                    struct certs_pair *leaf)
{
    struct selfsigned_config cfg;
    struct wh_error err = {0, ""};

    memset(&cfg, 0, sizeof(cfg));
    cfg.service = ss->service;
    cfg.ns = ns;
    cfg.extra = ss->sans;
    cfg.nextra = ss->nsans;
    cfg.key_type = CERTS_KEY_ECDSA_P256;
    if (selfsigned_generate(&cfg, &ss->ca, leaf, &err) < 0) {
        LOG_ERROR("cannot make the self-signed serving certificate: %s", err.msg);
        return -1;
    }
    LOG_INFO("self-signed serving certificate made service=%s namespace=%s extra_sans=%zu "
             "webhook_config=%s", ss->service, ns, ss->nsans, ss->config);
    LOG_WARN("--self-signed: this replica made its own CA; with several replicas the last "
             "to patch the caBundle wins (single-replica or test setups only)");
    return 0;
}

/* Start patching the caBundle; /readyz waits for it. Main thread, before server_start. */
static int selfsigned_side_start(struct serve_selfsigned *ss, struct k8s_client *kc)
{
    struct selfsigned_patch_config pcfg;
    struct wh_error err = {0, ""};

    if (!ss->on)
        return 0;
    memset(&pcfg, 0, sizeof(pcfg));
    pcfg.webhook_config = ss->config;
    pcfg.ca_pem = ss->ca.cert_pem;
    if (selfsigned_patch_start(&ss->patcher, kc, &pcfg, &err) < 0) {
        LOG_ERROR("cannot start the caBundle patch: %s", err.msg);
        return -1;
    }
    ready_patcher = ss->patcher;
    return 0;
}

/* After server_stop (its readiness callback reads the patcher). */
static void selfsigned_side_stop(struct serve_selfsigned *ss)
{
    ready_patcher = NULL;
    selfsigned_patch_stop(ss->patcher);
    ss->patcher = NULL;
    certs_pair_dispose(&ss->ca);
}

/* ---- end of --self-signed ---- */

/* ---- operations: TLS hot reload, metrics, connection limits, graceful shutdown
 *      (issue 4 "TLS serving", "Observability", "Operations"; issue 6 "Hostile clients") ---- */

#define DEFAULT_SHUTDOWN_GRACE_MS 15000L
#define SHUTDOWN_MIN_WAIT_MS 2000L     /* accept at least this long (within the grace) so that
                                          endpoints drop the pod before the listener goes */
#define SHUTDOWN_RESERVE_MAX_MS 5000L  /* at most this much of the grace is kept for the
                                          requests in flight once the listener is closed */
#define SHUTDOWN_POLL_MS 100L

enum {
    OPT_SHUTDOWN_GRACE = 512,
    OPT_MAX_CONNECTIONS,
    OPT_MAX_CONNECTIONS_PER_IP,
    OPT_CONNECTION_IDLE_TIMEOUT,
    OPT_REQUEST_TIMEOUT,
};

/*
 * The operations side's flags and objects. Flags and certwatch: main thread
 * only. The module pointers are read by serve_collect on MHD workers under
 * lock, and cleared under it (ops_stop) before those modules are stopped.
 */
struct serve_ops {
    long shutdown_grace_ms;         /* --shutdown-grace */
    long max_connections;           /* --max-connections */
    long max_per_ip;                /* --max-connections-per-ip, 0 = no limit */
    long idle_timeout_ms;           /* --connection-idle-timeout, whole seconds */
    long request_timeout_ms;        /* --request-timeout */
    struct certwatch *watch;        /* TLS files watcher, owned */
    pthread_mutex_t lock;           /* guards the five pointers below and leader_elect */
    struct job_cache *cache;        /* borrowed, for /metrics */
    struct informer *informer;
    struct reconciler *rec;
    struct leader *leader;
    bool leader_elect;
    bool attached;                  /* the pointers above may be read */
};

static void ops_flags_init(struct serve_ops *ops)
{
    memset(ops, 0, sizeof(*ops));
    pthread_mutex_init(&ops->lock, NULL);
    ops->shutdown_grace_ms = DEFAULT_SHUTDOWN_GRACE_MS;
    ops->max_connections = SERVER_DEFAULT_CONNECTIONS;
    ops->max_per_ip = 0;
    ops->idle_timeout_ms = (long)SERVER_DEFAULT_TIMEOUT * 1000;
    ops->request_timeout_ms = (long)SERVER_DEFAULT_REQUEST_TIMEOUT_MS;
}

/* One operations flag. @return 0, or the usage exit status after the message. */
static int ops_flag(struct serve_ops *ops, int opt, const char *arg)
{
    switch (opt) {
    case OPT_SHUTDOWN_GRACE:
        /* "0" alone is a duration too (Go's rule): stop at once. */
        if (strcmp(arg, "0") == 0) {
            ops->shutdown_grace_ms = 0;
            return 0;
        }
        if (parse_duration_ms(arg, &ops->shutdown_grace_ms) < 0
            || ops->shutdown_grace_ms > 3600000L)
            return bad_value("--shutdown-grace", arg,
                             "want a duration from 0 (stop at once) to 1h, like 15s");
        return 0;
    case OPT_MAX_CONNECTIONS:
        return parse_long(arg, 1, 1000000, &ops->max_connections) < 0
                   ? bad_value("--max-connections", arg, "want an integer 1..1000000") : 0;
    case OPT_MAX_CONNECTIONS_PER_IP:
        return parse_long(arg, 0, 1000000, &ops->max_per_ip) < 0
                   ? bad_value("--max-connections-per-ip", arg,
                               "want an integer 0 (no limit)..1000000") : 0;
    case OPT_CONNECTION_IDLE_TIMEOUT:
        return parse_seconds_ms(arg, &ops->idle_timeout_ms) < 0
                       || ops->idle_timeout_ms > 3600000L
                   ? bad_value("--connection-idle-timeout", arg,
                               "want whole seconds from 1s to 1h, like 30s") : 0;
    case OPT_REQUEST_TIMEOUT:
        return parse_duration_ms(arg, &ops->request_timeout_ms) < 0
                       || ops->request_timeout_ms < 100 || ops->request_timeout_ms > 600000L
                   ? bad_value("--request-timeout", arg,
                               "want a duration from 100ms to 10m, like 10s") : 0;
    default:
        return 2;
    }
}

/* server_config.metrics_collect (MHD workers): values other modules own. */
static void serve_collect(void *userdata, struct metrics_writer *w)
{
    struct serve_ops *ops = userdata;

    pthread_mutex_lock(&ops->lock);
    if (!ops->attached) {
        pthread_mutex_unlock(&ops->lock);
        return;
    }
    if (ops->cache != NULL)
        metrics_write(w, "webhook_cache_jobs", "gauge", "Volcano Jobs in the informer cache.",
                      NULL, (double)cache_size(ops->cache));
    if (ops->informer != NULL) {
        struct informer_stats st;

        informer_get_stats(ops->informer, &st);
        metrics_write(w, "webhook_informer_lists_total", "counter",
                      "Completed LISTs of Volcano Jobs (start-up and relists).", NULL,
                      (double)st.lists);
        metrics_write(w, "webhook_informer_watches_total", "counter",
                      "WATCH requests of Volcano Jobs started.", NULL, (double)st.watches);
        metrics_write(w, "webhook_informer_relists_total", "counter",
                      "LISTs caused by 410 Gone (watch history expired).", NULL,
                      (double)st.relists_gone);
        metrics_write(w, "webhook_informer_errors_total", "counter",
                      "Failed LIST or WATCH attempts (retried with backoff).", NULL,
                      (double)st.errors);
        metrics_write(w, "webhook_watch_restarts_total", "counter",
                      "WATCHes of Volcano Jobs started after the first one.", NULL,
                      (double)(st.watches > 0 ? st.watches - 1 : 0));
    }
    if (ops->rec != NULL) {
        struct reconcile_stats st;

        reconcile_get_stats(ops->rec, &st);
        metrics_write(w, "webhook_reconcile_total", "counter",
                      "Job keys reconciled (job hooks run).", NULL, (double)st.reconciles);
        metrics_write(w, "webhook_reconcile_errors_total", "counter",
                      "Failed job hook runs (retried with backoff).", NULL, (double)st.errors);
        metrics_write(w, "webhook_reconcile_queue_length", "gauge",
                      "Job keys waiting to be reconciled.", NULL, (double)st.queue_len);
        metrics_write(w, "webhook_reconcile_foreign_objects_total", "counter",
                      "Objects with a plugin's name that belong to someone else, left alone.",
                      NULL, (double)st.foreign);
    }
    metrics_write(w, "webhook_leader", "gauge",
                  "1 while this replica reconciles: it holds the Lease, or "
                  "--leader-elect=false; else 0.",
                  NULL, !ops->leader_elect || leader_is_leading(ops->leader) ? 1 : 0);
    pthread_mutex_unlock(&ops->lock);
}

/* Fill the server's limits and /metrics source; the modules are read until ops_stop. */
static void ops_server_config(struct serve_ops *ops, struct server_config *scfg,
                              struct job_cache *cache, struct informer *informer,
                              struct reconciler *rec, struct leader *leader, bool leader_elect)
{
    pthread_mutex_lock(&ops->lock);
    ops->cache = cache;
    ops->informer = informer;
    ops->rec = rec;
    ops->leader = leader;
    ops->leader_elect = leader_elect;
    ops->attached = true;
    pthread_mutex_unlock(&ops->lock);
    scfg->connection_limit = (unsigned)ops->max_connections;
    scfg->per_ip_limit = (unsigned)ops->max_per_ip;
    scfg->connection_timeout = (unsigned)(ops->idle_timeout_ms / 1000);
    scfg->request_timeout_ms = (unsigned)ops->request_timeout_ms;
    scfg->metrics_collect = serve_collect;
    scfg->metrics_userdata = ops;
}

/* certwatch_apply_fn (watcher thread): serve the new pair; userdata is the server. */
static int serve_apply_tls(void *userdata, const struct certs_pair *pair, struct wh_error *err)
{
    return server_set_tls_pair(userdata, pair->cert_pem, pair->key_pem, err);
}

/* Watch the TLS files (pair: what the server serves now). @return 0 or -1 after logging. */
static int ops_watch_start(struct serve_ops *ops, struct server *srv, const char *cert_file,
                           const char *key_file, const struct certs_pair *pair)
{
    struct certwatch_config wcfg = {cert_file, key_file, 0, 0};
    struct wh_error err = {0, ""};

    if (certwatch_start(&ops->watch, &wcfg, pair, serve_apply_tls, srv, &err) < 0) {
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
static bool ops_wait_idle(struct server *srv, long long t0, long min_ms,
                          long max_ms, const sigset_t *block)
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
    long grace = ops->shutdown_grace_ms;
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

int serve_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"bind-address", required_argument, NULL, OPT_BIND},
        {"port", required_argument, NULL, OPT_PORT},
        {"tls-cert-file", required_argument, NULL, OPT_CERT},
        {"tls-private-key-file", required_argument, NULL, OPT_KEY},
        {"insecure-http", no_argument, NULL, OPT_INSECURE},
        {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
        {"job-lookup-failure", required_argument, NULL, OPT_LOOKUP_FAILURE},
        {"job-lookup-timeout", required_argument, NULL, OPT_LOOKUP_TIMEOUT},
        {"v", required_argument, NULL, 'v'},
        {"port-file", required_argument, NULL, OPT_PORT_FILE},
        {"leader-elect", optional_argument, NULL, OPT_LEADER_ELECT},
        {"leader-elect-lease-duration", required_argument, NULL, OPT_LEASE_DURATION},
        {"leader-elect-renew-deadline", required_argument, NULL, OPT_RENEW_DEADLINE},
        {"leader-elect-retry-period", required_argument, NULL, OPT_RETRY_PERIOD},
        {"leader-elect-resource-namespace", required_argument, NULL, OPT_LEASE_NAMESPACE},
        {"resync-period", required_argument, NULL, OPT_RESYNC_PERIOD},
        {"reconcile-workers", required_argument, NULL, OPT_RECONCILE_WORKERS},
        {"kube-api-qps", required_argument, NULL, OPT_KUBE_API_QPS},
        {"kube-api-burst", required_argument, NULL, OPT_KUBE_API_BURST},
        {"self-signed", no_argument, NULL, OPT_SELF_SIGNED},
        {"service-name", required_argument, NULL, OPT_SERVICE_NAME},
        {"tls-san", required_argument, NULL, OPT_TLS_SAN},
        {"webhook-config-name", required_argument, NULL, OPT_WEBHOOK_CONFIG},
        {"watch-idle-timeout", required_argument, NULL, OPT_WATCH_IDLE_TIMEOUT},
        {"allow-insecure-key-permissions", no_argument, NULL, OPT_ALLOW_INSECURE_KEY},
        {"shutdown-grace", required_argument, NULL, OPT_SHUTDOWN_GRACE},
        {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
        {"max-connections-per-ip", required_argument, NULL, OPT_MAX_CONNECTIONS_PER_IP},
        {"connection-idle-timeout", required_argument, NULL, OPT_CONNECTION_IDLE_TIMEOUT},
        {"request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *bind = DEFAULT_BIND;
    const char *cert_file = NULL;
    const char *key_file = NULL;
    const char *kubeconfig = NULL;
    const char *port_file = NULL;
    bool insecure = false;
    long port = DEFAULT_PORT;
    long verbosity = LOG_LEVEL_INFO;
    struct job_lookup lookup = {NULL, NULL, DEFAULT_LOOKUP_TIMEOUT_MS};
    struct job_cache *cache = NULL;      /* Jobs cache (issue 3) */
    struct informer *informer = NULL;    /* its list/watch thread */
    long watch_idle_ms = 0;              /* --watch-idle-timeout; 0 = informer default */
    bool allow_insecure_key = false;     /* --allow-insecure-key-permissions */
    struct serve_reconcile rs;           /* reconciler and leader election (issue 3) */
    struct serve_ops ops;                /* TLS reload, metrics, limits, shutdown (issue 4) */
    struct serve_selfsigned ss = {false, SELFSIGNED_DEFAULT_NAME, SELFSIGNED_DEFAULT_NAME,
                                  {NULL}, 0, false, {NULL, NULL}, NULL};  /* --self-signed */
    struct server_config scfg;
    struct certs_pair pair = {NULL, NULL};
    struct k8s_config kcfg;
    struct server *srv = NULL;
    struct wh_error err = {0, ""};
    struct sigaction sa;
    struct sigaction old_term;
    struct sigaction old_int;
    sigset_t block;
    sigset_t old_mask;
    bool signals_set = false;
    int opt;
    int rc = 1;

    memset(&scfg, 0, sizeof(scfg));
    memset(&kcfg, 0, sizeof(kcfg));
    reconcile_flags_init(&rs);
    ops_flags_init(&ops);
    scfg.mutate.lookup_failure = LOOKUP_FAILURE_DENY;

    optind = 0;  /* full getopt reset: serve_main may run more than once (tests) */
    opterr = 0;  /* our own messages, naming the flag */
    while ((opt = getopt_long(argc, argv, ":v:h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_BIND:
            bind = optarg;
            break;
        case OPT_PORT:
            if (parse_long(optarg, 0, 65535, &port) < 0)
                return bad_value("--port", optarg, "want an integer 0..65535");
            break;
        case OPT_CERT:
            cert_file = optarg;
            break;
        case OPT_KEY:
            key_file = optarg;
            break;
        case OPT_INSECURE:
            insecure = true;
            break;
        case OPT_KUBECONFIG:
            kubeconfig = optarg;
            break;
        case OPT_LOOKUP_FAILURE:
            if (strcmp(optarg, "deny") == 0)
                scfg.mutate.lookup_failure = LOOKUP_FAILURE_DENY;
            else if (strcmp(optarg, "allow") == 0)
                scfg.mutate.lookup_failure = LOOKUP_FAILURE_ALLOW;
            else
                return bad_value("--job-lookup-failure", optarg, "want deny or allow");
            break;
        case OPT_LOOKUP_TIMEOUT:
            if (parse_duration_ms(optarg, &lookup.timeout_ms) < 0 || lookup.timeout_ms < 1
                || lookup.timeout_ms > MAX_LOOKUP_TIMEOUT_MS)
                return bad_value("--job-lookup-timeout", optarg,
                                 "want a duration from 1ms to 30s, like 500ms or 2s");
            break;
        case 'v': {
            /* -v N, -vN, -v=N, --v=N, --v N */
            const char *val = optarg[0] == '=' ? optarg + 1 : optarg;

            if (parse_long(val, 0, 10, &verbosity) < 0)
                return bad_value("-v", val, "want an integer 0..10");
            break;
        }
        case OPT_SELF_SIGNED:
        case OPT_SERVICE_NAME:
        case OPT_TLS_SAN:
        case OPT_WEBHOOK_CONFIG:
            if (selfsigned_flag(&ss, opt, optarg) != 0)
                return 2;
            break;
        case OPT_PORT_FILE:
            port_file = optarg;
            break;
        case OPT_ALLOW_INSECURE_KEY:
            allow_insecure_key = true;
            break;
        case OPT_WATCH_IDLE_TIMEOUT:
            /* not in --help: a watch with no byte (event or bookmark) for this long is
             * dead; the default (90s) suits kube-apiserver's one-minute bookmarks */
            if (parse_duration_ms(optarg, &watch_idle_ms) < 0 || watch_idle_ms < 100
                || watch_idle_ms > 3600000L)
                return bad_value("--watch-idle-timeout", optarg,
                                 "want a duration from 100ms to 1h, like 90s");
            break;
        case OPT_LEADER_ELECT:
        case OPT_LEASE_DURATION:
        case OPT_RENEW_DEADLINE:
        case OPT_RETRY_PERIOD:
        case OPT_LEASE_NAMESPACE:
        case OPT_RESYNC_PERIOD:
        case OPT_RECONCILE_WORKERS:
        case OPT_KUBE_API_QPS:
        case OPT_KUBE_API_BURST:
            if (reconcile_flag(&rs, opt, optarg) != 0)
                return 2;
            break;
        case OPT_SHUTDOWN_GRACE:
        case OPT_MAX_CONNECTIONS:
        case OPT_MAX_CONNECTIONS_PER_IP:
        case OPT_CONNECTION_IDLE_TIMEOUT:
        case OPT_REQUEST_TIMEOUT:
            if (ops_flag(&ops, opt, optarg) != 0)
                return 2;
            break;
        case 'h':
            serve_usage(stdout);
            return 0;
        case ':':
            fprintf(stderr, WH_PROG ": serve: flag %s needs a value\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, WH_PROG ": serve: unknown flag %s (see --help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, WH_PROG ": serve: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    if (selfsigned_flags_check(&ss, insecure, cert_file, key_file) != 0)
        return 2;
    if (insecure && (cert_file != NULL || key_file != NULL)) {
        fprintf(stderr, WH_PROG ": serve: --insecure-http cannot be combined with %s\n",
                cert_file != NULL ? "--tls-cert-file" : "--tls-private-key-file");
        return 2;
    }
    if (!insecure && !ss.on && (cert_file == NULL || key_file == NULL)) {
        fprintf(stderr, WH_PROG ": serve: missing required flag %s\n",
                cert_file == NULL ? "--tls-cert-file" : "--tls-private-key-file");
        return 2;
    }
    if (reconcile_flags_check(&rs) != 0)
        return 2;
    log_set_level((int)verbosity);

    if (insecure) {
        LOG_WARN("serving plain HTTP (--insecure-http): for tests and demos only, "
                 "kube-apiserver calls webhooks over HTTPS");
    } else if (ss.on) {
        /* --self-signed: SANs from the Service and the Lease (the pod's) namespace */
        if (selfsigned_side_generate(&ss, lease_namespace(&rs), &pair) < 0)
            goto out;
    } else if (!allow_insecure_key && certs_check_key_permissions(key_file, &err) < 0) {
        /* a key others can read is as good as published (issue 6, security review) */
        LOG_ERROR("refusing the TLS private key: %s (--allow-insecure-key-permissions to "
                  "load it anyway)", err.msg);
        goto out;
    } else if (certs_load_pair(&pair, cert_file, key_file, &err) < 0) {
        LOG_ERROR("cannot load the TLS pair: %s", err.msg);
        goto out;
    }
    if (k8s_config_load(&kcfg, kubeconfig, &err) < 0) {
        LOG_ERROR("cannot load the Kubernetes client config: %s", err.msg);
        goto out;
    }
    lookup.client = k8s_client_create(&kcfg, &err);
    if (lookup.client == NULL) {
        LOG_ERROR("cannot create the Kubernetes client: %s", err.msg);
        goto out;
    }
    {
        /* before any thread uses the client; shared by every thread (issue 3) */
        struct k8s_client_options kopt = {rs.qps, (int)rs.burst, 2};

        k8s_client_set_options(lookup.client, &kopt);
    }

    /* Block the stop signals before any worker exists; sigsuspend unblocks them here. */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old_mask);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGINT, &sa, &old_int);
    signals_set = true;

    /* ---- Jobs cache and informer (issue 3): after the client, before the workers ---- */
    cache = cache_create();
    if (cache == NULL) {
        LOG_ERROR("cannot create the jobs cache: out of memory");
        goto out;
    }
    /* reconcile side: the reconciler exists (idle) before the informer's first event */
    if (reconcile_side_start(&rs, lookup.client, cache) < 0)
        goto out;
    {
        struct informer_handlers inf_handlers = {serve_on_job_add, serve_on_job_update,
                                                 serve_on_job_delete, rs.rec};
        struct informer_config inf_cfg;

        memset(&inf_cfg, 0, sizeof(inf_cfg));  /* 0 = the informer's defaults */
        inf_cfg.idle_timeout_ms = watch_idle_ms;
        if (informer_start(&informer, lookup.client, cache, &inf_cfg, &inf_handlers, &err) < 0) {
            LOG_ERROR("cannot start the jobs informer: %s", err.msg);
            goto out;
        }
    }
    lookup.cache = cache;
    /* ---- end of Jobs cache and informer ---- */

    /* reconcile side: leader election (or reconcile at once) */
    if (reconcile_side_lead(&rs, lookup.client) < 0)
        goto out;
    /* --self-signed: patch the caBundle in the background (after the signal mask) */
    if (selfsigned_side_start(&ss, lookup.client) < 0)
        goto out;

    scfg.bind_address = bind;
    scfg.port = (unsigned)port;
    scfg.tls_cert_pem = pair.cert_pem;
    scfg.tls_key_pem = pair.key_pem;
    scfg.src = lookup_job_source(&lookup);   /* cache first, else one GET */
    scfg.ready = serve_ready;
    scfg.ready_userdata = cache;
    /* operations: connection limits and /metrics (issue 4/6) */
    ops_server_config(&ops, &scfg, cache, informer, rs.rec, rs.leader, rs.leader_elect);
    if (server_start(&srv, &scfg, &err) < 0) {
        LOG_ERROR("%s", err.msg);
        goto out;
    }
    /* operations: TLS files hot reload (not for --self-signed or plain HTTP) */
    if (cert_file != NULL && key_file != NULL
        && ops_watch_start(&ops, srv, cert_file, key_file, &pair) < 0)
        goto out;
    certs_pair_dispose(&pair);  /* the server keeps its own copy */
    LOG_INFO("serving version=%s address=%s port=%u tls=%s job_lookup_failure=%s "
             "job_lookup_timeout_ms=%ld",
             WH_VERSION, bind, server_port(srv), insecure ? "off" : "on",
             scfg.mutate.lookup_failure == LOOKUP_FAILURE_ALLOW ? "allow" : "deny",
             lookup.timeout_ms);
    if (port_file != NULL && write_port_file(port_file, server_port(srv)) < 0) {
        LOG_ERROR("cannot write --port-file %s: %s", port_file, strerror(errno));
        goto out;
    }

    {
        sigset_t wait_mask = old_mask;

        sigdelset(&wait_mask, SIGTERM);
        sigdelset(&wait_mask, SIGINT);
        while (stop_signal == 0)
            sigsuspend(&wait_mask);
    }
    LOG_INFO("shutting down signal=%d", (int)stop_signal);
    ops_drain(&ops, srv, &block);   /* operations: readiness false, serve what comes */
    rc = 0;
out:
    ops_stop(&ops);   /* operations: before the server and the modules /metrics reads */
    /* reconcile side first: stop reconciling and release the Lease for the successor */
    leader_stop(rs.leader);
    server_stop(srv);
    selfsigned_side_stop(&ss);  /* after the server: its readiness reads the patcher */
    informer_stop(informer);   /* joins the thread: nothing uses the client or the cache after */
    reconcile_stop(rs.rec);    /* after the informer (its handlers queue); joins the workers */
    if (lookup.client != NULL)
        k8s_client_destroy(lookup.client);
    cache_destroy(cache);
    k8s_config_dispose(&kcfg);
    certs_pair_dispose(&pair);
    if (signals_set) {
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGINT, &old_int, NULL);
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    }
    return rc;
}
