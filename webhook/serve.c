/*
 * serve.c - the `serve` subcommand: flags, start order, signals, shutdown.
 *
 * Start order: parse and validate every flag (exit 2 on a bad one) → log level
 * → TLS pair (exit 1 naming the file) → Kubernetes client (exit 1) → block
 * SIGTERM/SIGINT → Jobs cache → reconciler (idle) → informer thread (its
 * handlers queue Jobs for the reconciler) → leader election (or, with
 * --leader-elect=false, reconcile at once) → server_start (every thread
 * inherits the blocked mask, so the signals reach this thread only) → port
 * file → wait in sigsuspend until a signal sets the flag → leader_stop (stops
 * reconciling, releases the Lease) → server_stop → informer_stop (no more
 * queueing) → reconcile_stop (joins the workers) → client destroy → cache
 * destroy → exit 0.
 *
 * Threads: serve_main runs on the main thread. The admission lookup
 * (lookup_job_get, webhook/lookup.h) and serve_ready run on MHD workers; they
 * read struct job_lookup, immutable while the server runs, the cache (its own
 * rwlock) and the shareable k8s client. The informer thread writes the cache.
 * The reconciler's handlers (serve_on_job_*) run on the informer thread and
 * serve_on_leading on the leader-election thread; both only call the
 * thread-safe reconcile_* functions.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "certs/certs.h"
#include "k8s/client.h"
#include "webhook/cache.h"
#include "webhook/commands.h"
#include "webhook/informer.h"
#include "webhook/leader.h"
#include "webhook/log.h"
#include "webhook/lookup.h"
#include "webhook/reconcile.h"
#include "webhook/server.h"

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

/* ---- Jobs cache: readiness (issue 3) ---- */

/* server_config.ready: /readyz waits for the first LIST (the TLS pair is loaded
 * before the server starts at all). Runs on MHD workers; cache_synced is atomic. */
static const char *serve_ready(void *userdata)
{
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
            "                                 (default none)\n"
            "  -h, --help                     show this help\n",
            DEFAULT_BIND, DEFAULT_PORT);
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
    struct serve_reconcile rs;           /* reconciler and leader election (issue 3) */
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
        case OPT_PORT_FILE:
            port_file = optarg;
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
    if (insecure && (cert_file != NULL || key_file != NULL)) {
        fprintf(stderr, WH_PROG ": serve: --insecure-http cannot be combined with %s\n",
                cert_file != NULL ? "--tls-cert-file" : "--tls-private-key-file");
        return 2;
    }
    if (!insecure && (cert_file == NULL || key_file == NULL)) {
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

        if (informer_start(&informer, lookup.client, cache, NULL, &inf_handlers, &err) < 0) {
            LOG_ERROR("cannot start the jobs informer: %s", err.msg);
            goto out;
        }
    }
    lookup.cache = cache;
    /* ---- end of Jobs cache and informer ---- */

    /* reconcile side: leader election (or reconcile at once) */
    if (reconcile_side_lead(&rs, lookup.client) < 0)
        goto out;

    scfg.bind_address = bind;
    scfg.port = (unsigned)port;
    scfg.tls_cert_pem = pair.cert_pem;
    scfg.tls_key_pem = pair.key_pem;
    scfg.src = lookup_job_source(&lookup);   /* cache first, else one GET */
    scfg.ready = serve_ready;
    scfg.ready_userdata = cache;
    if (server_start(&srv, &scfg, &err) < 0) {
        LOG_ERROR("%s", err.msg);
        goto out;
    }
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
    rc = 0;
out:
    /* reconcile side first: stop reconciling and release the Lease for the successor */
    leader_stop(rs.leader);
    server_stop(srv);
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
