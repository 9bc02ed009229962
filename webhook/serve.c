/*
 * serve.c - the `serve` subcommand: flags, start order, signals, shutdown.
 *
 * Start order: parse and validate every flag (exit 2 on a bad one) → log level
 * → TLS pair (exit 1 naming the file) → Kubernetes client (exit 1) → block
 * SIGTERM/SIGINT → server_start (workers inherit the blocked mask, so the
 * signals reach this thread only) → port file → wait in sigsuspend until a
 * signal sets the flag → server_stop → client destroy → exit 0.
 *
 * Threads: serve_main runs on the main thread. job_lookup_get runs on MHD
 * workers; it only reads struct job_lookup, which is immutable while the
 * server runs, and the k8s client is shareable (k8s/client.h).
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

#include "certs/certs.h"
#include "k8s/client.h"
#include "webhook/commands.h"
#include "webhook/log.h"
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

/* The Job lookup behind struct job_source: one GET with a timeout. */
struct job_lookup {
    struct k8s_client *kc;
    long timeout_ms;
};

static int job_lookup_get(void *userdata, const char *ns, const char *name, json_t **job_out,
                          struct wh_error *err)
{
    const struct job_lookup *l = userdata;

    return k8s_get_job(l->kc, ns, name, l->timeout_ms, job_out, err);
}

static void serve_usage(FILE *to)
{
    fprintf(to,
            "usage: " WH_PROG " serve [flags]\n"
            "\n"
            "Serve the mutating admission webhook for pods of Volcano Jobs\n"
            "(POST /pods/mutate, GET /healthz).\n"
            "\n"
            "flags:\n"
            "  --bind-address ADDR            IPv4 or IPv6 address to listen on (default %s)\n"
            "  --port N                       TCP port, 0 = any free port (default %d)\n"
            "  --tls-cert-file FILE           PEM serving certificate (chain) (required)\n"
            "  --tls-private-key-file FILE    PEM private key of the certificate (required)\n"
            "  --insecure-http                serve plain HTTP without TLS; tests and demos\n"
            "                                 only, kube-apiserver needs HTTPS (default off)\n"
            "  --kubeconfig FILE              kubeconfig for the Job lookups (default\n"
            "                                 $KUBECONFIG, else the in-cluster service account)\n"
            "  --job-lookup-failure deny|allow  when a Job cannot be read (timeout, 5xx): deny\n"
            "                                 the pod, or allow it unmutated with a warning\n"
            "                                 (default deny)\n"
            "  --job-lookup-timeout DURATION  time limit of one Job lookup, e.g. 500ms, 2s;\n"
            "                                 at most 30s (default 2s)\n"
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
 * A Go-style duration with one integer and a unit: "500ms", "2s", "1m".
 * @return 0 with *ms_out in milliseconds, or -1.
 */
static int parse_duration_ms(const char *s, long *ms_out)
{
    static const struct {
        const char *unit;
        long ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}};
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
};

/* Report a bad flag value and return the usage exit status. */
static int bad_value(const char *flag, const char *value, const char *want)
{
    fprintf(stderr, WH_PROG ": serve: invalid %s \"%s\": %s\n", flag, value, want);
    return 2;
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
    struct job_lookup lookup = {NULL, DEFAULT_LOOKUP_TIMEOUT_MS};
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
    lookup.kc = k8s_client_create(&kcfg, &err);
    if (lookup.kc == NULL) {
        LOG_ERROR("cannot create the Kubernetes client: %s", err.msg);
        goto out;
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

    scfg.bind_address = bind;
    scfg.port = (unsigned)port;
    scfg.tls_cert_pem = pair.cert_pem;
    scfg.tls_key_pem = pair.key_pem;
    scfg.src.get = job_lookup_get;
    scfg.src.userdata = &lookup;
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
    server_stop(srv);
    if (lookup.kc != NULL)
        k8s_client_destroy(lookup.kc);
    k8s_config_dispose(&kcfg);
    certs_pair_dispose(&pair);
    if (signals_set) {
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGINT, &old_int, NULL);
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    }
    return rc;
}
