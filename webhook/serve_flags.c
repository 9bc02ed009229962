/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serve_flags.c - the flags of the `serve` subcommand (webhook/serve_flags.h):
 * defaults, the flag table (--help and getopt_long's options come from it) and
 * each flag's value checks. Every message
 * here is a usage message: "volcano-plugin-webhook: serve: ..." on err_to, and
 * the command exits 2. webhook/serve.c starts nothing before this returns 0.
 *
 * Design: the flags are one table (serve_flag_table, webhook/flags.h), from
 * which come getopt_long's options and the --help flag list. serve_flags_parse
 * fills the defaults, then one flags_next loop hands each flag to one_flag,
 * which gives it to its side (serving_flag, reconcile_flag, selfsigned_flag,
 * ops_flag), then checks what is left (flags_no_arguments) and the flags against
 * each other (tls_flags_check, reconcile_flags_check). Every duration flag goes
 * through flags_parse_duration_ms and every integer through flags_parse_long,
 * so one spelling is valid for all of them (and for render's and gen-certs').
 *
 * Threads: main thread only; getopt_long's globals make this not reentrant.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "controller/certkeeper.h"
#include "k8s/names.h"
#include "webhook/commands.h"
#include "webhook/flags.h"
#include "webhook/serve_flags.h"
#include "webhook/server.h"

#define DEFAULT_BIND              "::" /* IPv6 and IPv4; 0.0.0.0 without IPv6 (server.h) */
#define DEFAULT_PORT              8443
#define DEFAULT_LOOKUP_TIMEOUT_MS 2000L
#define MAX_LOOKUP_TIMEOUT_MS     30000L /* kube-apiserver waits at most 30 s for a webhook */
#define DEFAULT_SELFSIGNED_NAME   "volcano-plugin-webhook" /* Service and webhook config */
#define DEFAULT_SHUTDOWN_GRACE_MS 15000L
/* --cert-secret durations (controller/certkeeper.h's defaults), milliseconds */
#define DEFAULT_CERT_VALIDITY_MS   (CERTKEEPER_DEFAULT_VALIDITY_S * 1000)
#define DEFAULT_CA_VALIDITY_MS     (CERTKEEPER_DEFAULT_CA_VALIDITY_S * 1000)
#define DEFAULT_RENEW_BEFORE_MS    (CERTKEEPER_DEFAULT_RENEW_BEFORE_S * 1000)
#define MAX_CERT_DURATION_MS       (876000L * 3600 * 1000) /* 100 years */
#define DEFAULT_CABUNDLE_REPAIR_MS CERTKEEPER_DEFAULT_REPAIR_MS

/* 100 years in milliseconds needs more than 32 bits */
_Static_assert(sizeof(long) >= 8, "struct serve_options keeps certificate durations in a long");

/* ---- the flags ---- */

enum {
    OPT_BIND = 256,
    OPT_PORT,
    OPT_CERT,
    OPT_KEY,
    OPT_INSECURE,
    OPT_KUBECONFIG,
    OPT_LOOKUP_FAILURE,
    OPT_JOB_VALIDATION,
    OPT_LOOKUP_TIMEOUT,
    OPT_PORT_FILE,
    /* reconcile side */
    OPT_LEADER_ELECT,
    OPT_LEASE_DURATION,
    OPT_RENEW_DEADLINE,
    OPT_RETRY_PERIOD,
    OPT_LEASE_NAMESPACE,
    OPT_RESYNC_PERIOD,
    OPT_RECONCILE_WORKERS,
    OPT_KUBE_API_QPS,
    OPT_KUBE_API_BURST,
    OPT_NAMESPACES,
    /* --self-signed */
    OPT_SELF_SIGNED,
    OPT_SERVICE_NAME,
    OPT_TLS_SAN,
    OPT_WEBHOOK_CONFIG,
    OPT_WATCH_IDLE_TIMEOUT, /* hidden: stalled-watch detection */
    OPT_ALLOW_INSECURE_KEY, /* --allow-insecure-key-permissions */
    /* --cert-secret */
    OPT_CERT_SECRET,
    OPT_CERT_VALIDITY,
    OPT_CA_VALIDITY,
    OPT_CERT_RENEW_BEFORE,
    OPT_CABUNDLE_REPAIR,
    /* operations */
    OPT_SHUTDOWN_GRACE,
    OPT_MAX_CONNECTIONS,
    OPT_MAX_CONNECTIONS_PER_IP,
    OPT_CONNECTION_IDLE_TIMEOUT,
    OPT_REQUEST_TIMEOUT,
    OPT_MAX_BODY_IN_FLIGHT,
};

/* The flags, in --help order (webhook/flags.h); one_flag acts on each. */
static const struct flag serve_flag_table[] = {
    {OPT_BIND, "bind-address", 0, required_argument, "ADDR",
     "IPv4 or IPv6 address to listen on; :: is every\n"
     "address of both families (IPv4 alone where the\n"
     "kernel has no IPv6)",
     DEFAULT_BIND},
    {OPT_PORT, "port", 0, required_argument, "N", "TCP port, 0 = any free port",
     FLAGS_STR(DEFAULT_PORT)},
    {OPT_CERT, "tls-cert-file", 0, required_argument, "FILE",
     "PEM serving certificate (chain) (required\n"
     "unless --cert-secret, --self-signed or\n"
     "--insecure-http)",
     NULL},
    {OPT_KEY, "tls-private-key-file", 0, required_argument, "FILE",
     "PEM private key of the certificate (required\n"
     "unless --cert-secret, --self-signed or\n"
     "--insecure-http)",
     NULL},
    {OPT_SELF_SIGNED, "self-signed", 0, no_argument, NULL,
     "instead of the two flags above: --cert-secret\n"
     "with the Secret kept in memory (no Secret in the\n"
     "API); renewed, rolled over and kept in the\n"
     "caBundle the same way. One replica only: each\n"
     "would keep its own CA (use --cert-secret)",
     NULL},
    {OPT_SERVICE_NAME, "service-name", 0, required_argument, "NAME",
     "with --self-signed or --cert-secret: the Service\n"
     "in the certificate",
     DEFAULT_SELFSIGNED_NAME},
    {OPT_TLS_SAN, "tls-san", 0, required_argument, "NAME",
     "with --self-signed or --cert-secret: one more\n"
     "subjectAltName, DNS name or IP; repeatable\n"
     "(default: none)",
     NULL},
    {OPT_WEBHOOK_CONFIG, "webhook-config-name", 0, required_argument, "NAME",
     "with --self-signed or --cert-secret: the\n"
     "MutatingWebhookConfiguration whose webhooks get\n"
     "the caBundle",
     DEFAULT_SELFSIGNED_NAME},
    {OPT_CERT_SECRET, "cert-secret", 0, required_argument, "NAME",
     "instead of the TLS files: managed certificates.\n"
     "The replicas keep a CA and the serving pair in\n"
     "Secret NAME of the Lease namespace; the Lease\n"
     "holder makes, renews and rolls them over and\n"
     "keeps the caBundle of --webhook-config-name (and\n"
     "of the ValidatingWebhookConfiguration of that\n"
     "name) equal to the trust bundle. Serving starts\n"
     "once this replica has a pair (within 2m, else\n"
     "exit 1) (default: off)",
     NULL},
    {OPT_CERT_VALIDITY, "cert-validity", 0, required_argument, "DURATION",
     "with --cert-secret or --self-signed: lifetime\n"
     "of a serving certificate, whole seconds",
     "8760h"},
    {OPT_CA_VALIDITY, "ca-validity", 0, required_argument, "DURATION",
     "with --cert-secret or --self-signed: lifetime\n"
     "of a CA, at least --cert-validity",
     "87600h"},
    {OPT_CERT_RENEW_BEFORE, "cert-renew-before", 0, required_argument, "DURATION",
     "with --cert-secret or --self-signed: a new\n"
     "serving certificate when less than this is left,\n"
     "below --cert-validity; a new CA when less than\n"
     "twice this is left",
     "720h"},
    {OPT_CABUNDLE_REPAIR, "cabundle-repair-interval", 0, required_argument, "DURATION",
     "with --cert-secret or --self-signed: a caBundle\n"
     "changed by hand is repaired within this, whole\n"
     "seconds from 1s to 24h",
     "60s"},
    {OPT_ALLOW_INSECURE_KEY, "allow-insecure-key-permissions", 0, no_argument, NULL,
     "load --tls-private-key-file even when it\n"
     "is readable by others or group-writable\n"
     "(default: refuse; want 0600/0400/0440)",
     NULL},
    {OPT_INSECURE, "insecure-http", 0, no_argument, NULL,
     "serve plain HTTP without TLS; tests and demos\n"
     "only, kube-apiserver needs HTTPS (default off)",
     NULL},
    {OPT_KUBECONFIG, "kubeconfig", 0, required_argument, "FILE",
     "kubeconfig for the Jobs list/watch and lookups\n"
     "(default $KUBECONFIG, else the in-cluster\n"
     "service account)",
     NULL},
    {OPT_NAMESPACES, "namespaces", 0, required_argument, "NS[,NS...]",
     "serve and reconcile only the Jobs of these\n"
     "namespaces, one list/watch each, at most " FLAGS_STR(
         SERVE_MAX_NAMESPACES) ";\n"
                               "repeatable; pods of other namespaces are\n"
                               "allowed unmutated (default: every namespace)",
     NULL},
    {OPT_LOOKUP_FAILURE, "job-lookup-failure", 0, required_argument, "deny|allow",
     "when a Job cannot be read (timeout, 5xx): deny\n"
     "the pod, or allow it unmutated with a warning\n",
     "deny"},
    {OPT_LOOKUP_TIMEOUT, "job-lookup-timeout", 0, required_argument, "DURATION",
     "time limit of one Job lookup, e.g. 500ms, 2s;\n"
     "at most 30s",
     "2s"},
    {OPT_JOB_VALIDATION, "job-validation", 0, required_argument, "warn|deny",
     "the Job webhook (POST /jobs/validate): warn of\n"
     "what will not work, or also refuse Jobs whose\n"
     "pods could never be admitted",
     "warn"},
    {OPT_LEADER_ELECT, "leader-elect", 0, optional_argument, "BOOL",
     "reconcile only while holding the Lease\n"
     "volcano-plugin-webhook; false: this replica\n"
     "always reconciles",
     "true"},
    {OPT_LEASE_DURATION, "leader-elect-lease-duration", 0, required_argument, "DURATION",
     "how long a Lease is valid without\n"
     "renewal, whole seconds",
     "15s"},
    {OPT_RENEW_DEADLINE, "leader-elect-renew-deadline", 0, required_argument, "DURATION",
     "a leader that cannot renew for this\n"
     "long stops reconciling",
     "10s"},
    {OPT_RETRY_PERIOD, "leader-elect-retry-period", 0, required_argument, "DURATION",
     "time between tries to acquire or\n"
     "renew the Lease",
     "2s"},
    {OPT_LEASE_NAMESPACE, "leader-elect-resource-namespace", 0, required_argument, "NS",
     "namespace of the Lease (default: the\n"
     "pod's own namespace, else \"default\")",
     NULL},
    {OPT_RESYNC_PERIOD, "resync-period", 0, required_argument, "DURATION",
     "reconcile every cached Job this often, e.g.\n"
     "30s, 10m, 1h",
     "10m"},
    {OPT_RECONCILE_WORKERS, "reconcile-workers", 0, required_argument, "N",
     "Jobs reconciled in parallel, 1..64", "4"},
    {OPT_KUBE_API_QPS, "kube-api-qps", 0, required_argument, "QPS",
     "sustained API requests per second, shared by\n"
     "every thread but leader election's;\n"
     "0 = no limit",
     "50"},
    {OPT_KUBE_API_BURST, "kube-api-burst", 0, required_argument, "N",
     "API requests allowed in a burst", "100"},
    {'v', "v", 'v', required_argument, "N",
     "log verbosity: 0 error, 1 warn, 2 info,\n"
     "3+ debug",
     "2"},
    {OPT_PORT_FILE, "port-file", 0, required_argument, "FILE",
     "write the bound port to FILE once listening\n"
     "(default none)",
     NULL},
    {OPT_SHUTDOWN_GRACE, "shutdown-grace", 0, required_argument, "DURATION",
     "on SIGTERM/SIGINT: /readyz fails at once; new\n"
     "connections are served until none is in flight\n"
     "(after at least 2s) or until a third of this is\n"
     "left (at most 5s), which the requests in flight\n"
     "get; 0 = stop at once",
     "15s"},
    {OPT_MAX_CONNECTIONS, "max-connections", 0, required_argument, "N",
     "concurrent connections, 1..1000000", "1000"},
    {OPT_MAX_CONNECTIONS_PER_IP, "max-connections-per-ip", 0, required_argument, "N",
     "concurrent connections from one client address;\n"
     "0 = no limit (default 0: kube-apiserver may call\n"
     "from a single address)",
     NULL},
    {OPT_CONNECTION_IDLE_TIMEOUT, "connection-idle-timeout", 0, required_argument, "DURATION",
     "close a connection idle this long, whole\n"
     "seconds",
     "30s"},
    {OPT_REQUEST_TIMEOUT, "request-timeout", 0, required_argument, "DURATION",
     "close a connection whose request (headers and\n"
     "body; for a new connection also the TLS\n"
     "handshake) has not arrived within this\n",
     "10s"},
    /* The default is SERVER_DEFAULT_BODY_BYTES_IN_FLIGHT (64 MiB): a quarter of the
     * Deployment's 256Mi memory limit, beside the 16 MiB that connections take at
     * the default --max-connections (bench/RESULTS.md). */
    {OPT_MAX_BODY_IN_FLIGHT, "max-body-bytes-in-flight", 0, required_argument, "BYTES",
     "request body bytes held in memory by all\n"
     "connections together, at least the 3 MiB\n"
     "body cap: slow uploads cannot exhaust the\n"
     "memory limit; past it a request gets 503\n"
     "with Retry-After: 1",
     "67108864"},
    /* not in --help: a watch with no byte (event or bookmark) for this long is dead; the
     * default (90s) suits kube-apiserver's one-minute bookmarks (tests, advanced) */
    {OPT_WATCH_IDLE_TIMEOUT, "watch-idle-timeout", 0, required_argument, "DURATION", NULL, NULL},
    {'h', "help", 'h', no_argument, NULL, "show this help", NULL},
};

static const struct flag_set serve_flags = {
    .command = "serve",
    .flags = serve_flag_table,
    .nflags = sizeof(serve_flag_table) / sizeof(serve_flag_table[0]),
    .help_column = 33,
    .short_column = false,
    .usage = "usage: " WH_PROG " serve [flags]\n"
             "\n"
             "Serve the mutating admission webhook for pods of Volcano Jobs and the\n"
             "Job webhook (POST /pods/mutate, POST /jobs/validate, GET /healthz,\n"
             "GET /readyz, GET /metrics).\n"
             "\n"
             "flags:\n",
};

/* Report a bad flag value on err_to. @return WH_EINVAL (the command exits 2). */
static int bad_value(FILE *err_to, const char *flag, const char *value, const char *want)
{
    return flags_bad_value(&serve_flags, err_to, flag, value, want);
}

/* A duration flag of whole seconds, from 1s to max_ms. @return 0 or -1. */
static int parse_seconds_ms(const char *s, long max_ms, long *ms_out)
{
    long ms;

    if (flags_parse_duration_ms(s, 1000, max_ms, &ms) < 0 || ms % 1000 != 0)
        return -1;
    *ms_out = ms;
    return 0;
}

/* Every default, as --help states it. */
static void options_init(struct serve_options *o)
{
    memset(o, 0, sizeof(*o));
    o->bind_address = DEFAULT_BIND;
    o->port = DEFAULT_PORT;
    o->verbosity = LOG_LEVEL_INFO;
    o->lookup_failure = LOOKUP_FAILURE_DENY;
    o->job_validation = JOB_VALIDATION_WARN;
    o->lookup_timeout_ms = DEFAULT_LOOKUP_TIMEOUT_MS;
    o->watch_idle_ms = 0;
    /* reconcile side */
    o->leader_elect = true;
    o->lease_duration_ms = 15000;
    o->renew_deadline_ms = 10000;
    o->retry_period_ms = 2000;
    o->resync_period_ms = 600000;
    o->reconcile_workers = 4;
    o->kube_api_qps = 50;
    o->kube_api_burst = 100;
    /* --self-signed */
    o->service_name = DEFAULT_SELFSIGNED_NAME;
    o->webhook_config = DEFAULT_SELFSIGNED_NAME;
    /* --cert-secret */
    o->cert_validity_ms = DEFAULT_CERT_VALIDITY_MS;
    o->ca_validity_ms = DEFAULT_CA_VALIDITY_MS;
    o->cert_renew_before_ms = DEFAULT_RENEW_BEFORE_MS;
    o->cabundle_repair_ms = DEFAULT_CABUNDLE_REPAIR_MS;
    /* operations */
    o->shutdown_grace_ms = DEFAULT_SHUTDOWN_GRACE_MS;
    o->max_connections = SERVER_DEFAULT_CONNECTIONS;
    o->max_per_ip = 0;
    o->idle_timeout_ms = (long)SERVER_DEFAULT_TIMEOUT * 1000;
    o->request_timeout_ms = (long)SERVER_DEFAULT_REQUEST_TIMEOUT_MS;
    o->max_body_in_flight = (long)SERVER_DEFAULT_BODY_BYTES_IN_FLIGHT;
}

/* ---- reconcile side: leader election, resync, API client limits ---- */

/* One reconcile-side flag. @return 0, or WH_EINVAL after the message. */
static int reconcile_flag(struct serve_options *o, int opt, const char *arg, FILE *err_to)
{
    /* Bounded so that deadlines (now + period, in ms) can never overflow. */
    static const char *const secs = "want whole seconds from 1s to 1h, like 15s";
    static const char *const resync = "want whole seconds from 1s to 24h, like 10m";
    char *end;

    switch (opt) {
    case OPT_LEADER_ELECT:
        if (arg != NULL && flags_parse_bool(arg, &o->leader_elect) < 0)
            return bad_value(err_to, "--leader-elect", arg, "want true or false");
        if (arg == NULL)
            o->leader_elect = true;
        return 0;
    case OPT_LEASE_DURATION:
        return parse_seconds_ms(arg, 3600000L, &o->lease_duration_ms) < 0
            ? bad_value(err_to, "--leader-elect-lease-duration", arg, secs)
            : 0;
    case OPT_RENEW_DEADLINE:
        return parse_seconds_ms(arg, 3600000L, &o->renew_deadline_ms) < 0
            ? bad_value(err_to, "--leader-elect-renew-deadline", arg, secs)
            : 0;
    case OPT_RETRY_PERIOD:
        return parse_seconds_ms(arg, 3600000L, &o->retry_period_ms) < 0
            ? bad_value(err_to, "--leader-elect-retry-period", arg, secs)
            : 0;
    case OPT_LEASE_NAMESPACE:
        if (arg[0] == '\0' || strlen(arg) > 63 || strchr(arg, '/') != NULL)
            return bad_value(err_to, "--leader-elect-resource-namespace", arg,
                             "want a namespace name");
        o->lease_ns = arg;
        return 0;
    case OPT_RESYNC_PERIOD:
        return parse_seconds_ms(arg, 86400000L, &o->resync_period_ms) < 0
            ? bad_value(err_to, "--resync-period", arg, resync)
            : 0;
    case OPT_RECONCILE_WORKERS:
        return flags_parse_long(arg, 1, 64, &o->reconcile_workers) < 0
            ? bad_value(err_to, "--reconcile-workers", arg, "want an integer 1..64")
            : 0;
    case OPT_KUBE_API_QPS:
        errno = 0;
        o->kube_api_qps = strtod(arg, &end);
        if (arg[0] == '\0' || *end != '\0' || errno != 0
            || !(o->kube_api_qps >= 0 && o->kube_api_qps <= 1e6))
            return bad_value(err_to, "--kube-api-qps", arg,
                             "want a number from 0 (no limit) to 1e6");
        return 0;
    case OPT_KUBE_API_BURST:
        return flags_parse_long(arg, 1, 1000000, &o->kube_api_burst) < 0
            ? bad_value(err_to, "--kube-api-burst", arg, "want an integer 1..1000000")
            : 0;
    default: return WH_EINVAL;
    }
}

/* client-go's rule: lease duration > renew deadline > retry period. @return 0 or WH_EINVAL. */
static int reconcile_flags_check(const struct serve_options *o, FILE *err_to)
{
    if (o->lease_duration_ms <= o->renew_deadline_ms
        || o->renew_deadline_ms <= o->retry_period_ms) {
        fprintf(err_to,
                WH_PROG ": serve: want --leader-elect-lease-duration (%lds) > "
                        "--leader-elect-renew-deadline (%lds) > --leader-elect-retry-period "
                        "(%lds)\n",
                o->lease_duration_ms / 1000, o->renew_deadline_ms / 1000,
                o->retry_period_ms / 1000);
        return WH_EINVAL;
    }
    return 0;
}

/* ---- --namespaces ---- */

/*
 * One --namespaces NS[,NS...]: each name appended to o->namespaces (a repeated flag
 * adds to the list, as pflag's string slices do). @return 0, or WH_EINVAL after the
 * message: a name that is no DNS-1123 label (an empty one too), a name given twice,
 * more than SERVE_MAX_NAMESPACES in all.
 */
static int namespaces_flag(struct serve_options *o, const char *arg, FILE *err_to)
{
    const char *p = arg;

    for (;;) {
        size_t n = strcspn(p, ",");
        char name[SERVE_NAMESPACE_MAX_LEN + 1];

        /* a namespace name is a DNS-1123 label (apimachinery's ValidateNamespaceName) */
        if (n < sizeof(name)) {
            memcpy(name, p, n);
            name[n] = '\0';
        }
        if (n >= sizeof(name) || !k8s_name_is_label(name))
            return bad_value(err_to, "--namespaces", arg,
                             "want namespace names (DNS-1123 labels) separated by commas");
        for (size_t k = 0; k < o->nnamespaces; k++)
            if (strcmp(o->namespaces[k], name) == 0)
                return flags_usage_error(&serve_flags, err_to,
                                         "--namespaces: namespace \"%s\" given twice", name);
        if (o->nnamespaces == SERVE_MAX_NAMESPACES)
            return flags_usage_error(&serve_flags, err_to,
                                     "--namespaces: more than %d namespaces (serve every "
                                     "namespace instead, without the flag)",
                                     SERVE_MAX_NAMESPACES);
        memcpy(o->namespaces[o->nnamespaces++], name, n + 1);
        if (p[n] == '\0')
            return 0;
        p += n + 1;
    }
}

/* ---- --self-signed ---- */

/* Flags given that need a mode (the checks across flags): bits of serve_flags_parse's named. */
#define NAMED_TLS     1u /* --service-name, --tls-san, --webhook-config-name */
#define NAMED_MANAGED 2u /* --cert-validity, --ca-validity, --cert-renew-before, ... */

/*
 * One --self-signed flag; *named gets NAMED_TLS for a flag that needs --self-signed
 * or --cert-secret. @return 0, or WH_EINVAL after the message.
 */
static int selfsigned_flag(struct serve_options *o, unsigned *named, int opt, const char *arg,
                           FILE *err_to)
{
    size_t n;

    switch (opt) {
    case OPT_SELF_SIGNED: o->self_signed = true; return 0;
    case OPT_SERVICE_NAME:
        if (!k8s_name_is_label(arg))
            return bad_value(err_to, "--service-name", arg, "want a Service name (DNS-1123 label)");
        o->service_name = arg;
        *named |= NAMED_TLS;
        return 0;
    case OPT_WEBHOOK_CONFIG:
        if (!k8s_name_is_subdomain(arg))
            return bad_value(err_to, "--webhook-config-name", arg, "want an object name");
        o->webhook_config = arg;
        *named |= NAMED_TLS;
        return 0;
    case OPT_TLS_SAN:
        /* a DNS name or an IP address: printable, no spaces or commas */
        n = strlen(arg);
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)arg[i] <= 0x20 || (unsigned char)arg[i] > 0x7E || arg[i] == ',')
                n = 0;
        if (n == 0 || n > 253)
            return bad_value(err_to, "--tls-san", arg, "want a DNS name or an IP address");
        if (o->ntls_sans == CERTKEEPER_MAX_SANS) {
            fprintf(err_to, WH_PROG ": serve: more than %d --tls-san flags\n", CERTKEEPER_MAX_SANS);
            return WH_EINVAL;
        }
        o->tls_sans[o->ntls_sans++] = arg;
        *named |= NAMED_TLS;
        return 0;
    default: return WH_EINVAL;
    }
}

/* --self-signed excludes a certificate from files and plain HTTP. @return 0 or WH_EINVAL. */
static int selfsigned_flags_check(const struct serve_options *o, unsigned named, FILE *err_to)
{
    if (o->self_signed
        && (o->tls_cert_file != NULL || o->tls_key_file != NULL || o->insecure_http)) {
        fprintf(err_to, WH_PROG ": serve: --self-signed cannot be combined with %s\n",
                o->tls_cert_file != NULL      ? "--tls-cert-file"
                    : o->tls_key_file != NULL ? "--tls-private-key-file"
                                              : "--insecure-http");
        return WH_EINVAL;
    }
    if (!o->self_signed && o->cert_secret == NULL && (named & NAMED_TLS) != 0) {
        fprintf(err_to,
                WH_PROG ": serve: --service-name, --tls-san and --webhook-config-name "
                        "need --self-signed or --cert-secret\n");
        return WH_EINVAL;
    }
    return 0;
}

/* ---- --cert-secret: managed certificates ---- */

/*
 * One --cert-secret flag; *named gets NAMED_MANAGED for a flag that needs
 * --cert-secret. Certificates hold whole seconds. @return 0, or WH_EINVAL after
 * the message.
 */
static int certsecret_flag(struct serve_options *o, unsigned *named, int opt, const char *arg,
                           FILE *err_to)
{
    static const char *const secs = "want whole seconds from 1s to 876000h, like 8760h";

    if (opt != OPT_CERT_SECRET)
        *named |= NAMED_MANAGED;
    switch (opt) {
    case OPT_CERT_SECRET:
        if (!k8s_name_is_subdomain(arg))
            return bad_value(err_to, "--cert-secret", arg, "want a Secret name");
        o->cert_secret = arg;
        return 0;
    case OPT_CERT_VALIDITY:
        return parse_seconds_ms(arg, MAX_CERT_DURATION_MS, &o->cert_validity_ms) < 0
            ? bad_value(err_to, "--cert-validity", arg, secs)
            : 0;
    case OPT_CA_VALIDITY:
        return parse_seconds_ms(arg, MAX_CERT_DURATION_MS, &o->ca_validity_ms) < 0
            ? bad_value(err_to, "--ca-validity", arg, secs)
            : 0;
    case OPT_CERT_RENEW_BEFORE:
        return parse_seconds_ms(arg, MAX_CERT_DURATION_MS, &o->cert_renew_before_ms) < 0
            ? bad_value(err_to, "--cert-renew-before", arg, secs)
            : 0;
    case OPT_CABUNDLE_REPAIR:
        return parse_seconds_ms(arg, 86400000L, &o->cabundle_repair_ms) < 0
            ? bad_value(err_to, "--cabundle-repair-interval", arg,
                        "want whole seconds from 1s to 24h, like 60s")
            : 0;
    default: return WH_EINVAL;
    }
}

/*
 * --cert-secret excludes every other source of the pair, and its durations obey
 * certkeeper_create's rules (controller/certkeeper.h). @return 0 or WH_EINVAL.
 */
static int certsecret_flags_check(const struct serve_options *o, unsigned named, FILE *err_to)
{
    const char *other = o->tls_cert_file != NULL ? "--tls-cert-file"
        : o->tls_key_file != NULL                ? "--tls-private-key-file"
        : o->insecure_http                       ? "--insecure-http"
        : o->self_signed                         ? "--self-signed"
                                                 : NULL;

    if (o->cert_secret == NULL && !o->self_signed) {
        if ((named & NAMED_MANAGED) == 0)
            return 0;
        fprintf(err_to,
                WH_PROG ": serve: --cert-validity, --ca-validity, --cert-renew-before "
                        "and --cabundle-repair-interval need --cert-secret or --self-signed\n");
        return WH_EINVAL;
    }
    if (o->cert_secret != NULL && other != NULL) {
        fprintf(err_to, WH_PROG ": serve: --cert-secret cannot be combined with %s\n", other);
        return WH_EINVAL;
    }
    if (o->cert_renew_before_ms >= o->cert_validity_ms) {
        fprintf(err_to,
                WH_PROG ": serve: want --cert-renew-before (%lds) < --cert-validity (%lds)\n",
                o->cert_renew_before_ms / 1000, o->cert_validity_ms / 1000);
        return WH_EINVAL;
    }
    if (o->ca_validity_ms < o->cert_validity_ms) {
        fprintf(err_to, WH_PROG ": serve: want --ca-validity (%lds) >= --cert-validity (%lds)\n",
                o->ca_validity_ms / 1000, o->cert_validity_ms / 1000);
        return WH_EINVAL;
    }
    /* the rollover starts at twice renew-before: a new CA must not qualify at once */
    if (o->ca_validity_ms <= 2 * o->cert_renew_before_ms) {
        fprintf(err_to,
                WH_PROG ": serve: want --ca-validity (%lds) > twice --cert-renew-before (%lds)\n",
                o->ca_validity_ms / 1000, o->cert_renew_before_ms / 1000);
        return WH_EINVAL;
    }
    return 0;
}

/* ---- operations: shutdown, connection limits ---- */

/* --max-body-bytes-in-flight's upper bound: 1 TiB, far past any memory limit. */
#define MAX_BODY_IN_FLIGHT (1L << 40)
_Static_assert((long)SERVER_MAX_BODY <= MAX_BODY_IN_FLIGHT, "the body cap fits the budget");

/* One operations flag. @return 0, or WH_EINVAL after the message. */
static int ops_flag(struct serve_options *o, int opt, const char *arg, FILE *err_to)
{
    switch (opt) {
    case OPT_SHUTDOWN_GRACE:
        /* "0" alone is a duration too (Go's rule): stop at once. */
        if (flags_parse_duration_ms(arg, 0, 3600000L, &o->shutdown_grace_ms) < 0)
            return bad_value(err_to, "--shutdown-grace", arg,
                             "want a duration from 0 (stop at once) to 1h, like 15s");
        return 0;
    case OPT_MAX_CONNECTIONS:
        return flags_parse_long(arg, 1, 1000000, &o->max_connections) < 0
            ? bad_value(err_to, "--max-connections", arg, "want an integer 1..1000000")
            : 0;
    case OPT_MAX_CONNECTIONS_PER_IP:
        return flags_parse_long(arg, 0, 1000000, &o->max_per_ip) < 0 ? bad_value(
                   err_to, "--max-connections-per-ip", arg, "want an integer 0 (no limit)..1000000")
                                                                     : 0;
    case OPT_CONNECTION_IDLE_TIMEOUT:
        return parse_seconds_ms(arg, 3600000L, &o->idle_timeout_ms) < 0
            ? bad_value(err_to, "--connection-idle-timeout", arg,
                        "want whole seconds from 1s to 1h, like 30s")
            : 0;
    case OPT_REQUEST_TIMEOUT:
        return flags_parse_duration_ms(arg, 100, 600000L, &o->request_timeout_ms) < 0 ? bad_value(
                   err_to, "--request-timeout", arg, "want a duration from 100ms to 10m, like 10s")
                                                                                      : 0;
    case OPT_MAX_BODY_IN_FLIGHT:
        /* No body of the largest size could ever be served below the cap. */
        return flags_parse_long(arg, (long)SERVER_MAX_BODY, MAX_BODY_IN_FLIGHT,
                                &o->max_body_in_flight)
                < 0
            ? bad_value(err_to, "--max-body-bytes-in-flight", arg,
                        "want a byte count from 3145728 (the 3 MiB body cap) to "
                        "1099511627776 (1 TiB), like 67108864")
            : 0;
    default: return WH_EINVAL;
    }
}

/* ---- the parse ---- */

/* One serving flag (address, TLS files, client, lookups, log). @return 0, or WH_EINVAL
 * after the message. */
static int serving_flag(struct serve_options *o, int opt, const char *arg, FILE *err_to)
{
    static const char *const lookup_failures[] = {"deny", "allow", NULL};
    static const char *const job_validations[] = {"warn", "deny", NULL};
    const char *val;
    int k;

    switch (opt) {
    case OPT_BIND:
        if (!server_address_valid(arg))
            return bad_value(err_to, "--bind-address", arg,
                             "want an IPv4 or IPv6 address, like 0.0.0.0 or ::");
        o->bind_address = arg;
        return 0;
    case OPT_PORT:
        return flags_parse_long(arg, 0, 65535, &o->port) < 0
            ? bad_value(err_to, "--port", arg, "want an integer 0..65535")
            : 0;
    case OPT_CERT: o->tls_cert_file = arg; return 0;
    case OPT_KEY: o->tls_key_file = arg; return 0;
    case OPT_INSECURE: o->insecure_http = true; return 0;
    case OPT_ALLOW_INSECURE_KEY: o->allow_insecure_key = true; return 0;
    case OPT_KUBECONFIG: o->kubeconfig = arg; return 0;
    case OPT_PORT_FILE: o->port_file = arg; return 0;
    case OPT_LOOKUP_FAILURE:
        if (flags_parse_enum(arg, lookup_failures, &k) < 0)
            return bad_value(err_to, "--job-lookup-failure", arg, "want deny or allow");
        o->lookup_failure = k == 0 ? LOOKUP_FAILURE_DENY : LOOKUP_FAILURE_ALLOW;
        return 0;
    case OPT_JOB_VALIDATION:
        if (flags_parse_enum(arg, job_validations, &k) < 0)
            return bad_value(err_to, "--job-validation", arg, "want warn or deny");
        o->job_validation = k == 0 ? JOB_VALIDATION_WARN : JOB_VALIDATION_DENY;
        return 0;
    case OPT_LOOKUP_TIMEOUT:
        if (flags_parse_duration_ms(arg, 1, MAX_LOOKUP_TIMEOUT_MS, &o->lookup_timeout_ms) < 0)
            return bad_value(err_to, "--job-lookup-timeout", arg,
                             "want a duration from 1ms to 30s, like 500ms or 2s");
        return 0;
    case OPT_WATCH_IDLE_TIMEOUT:
        if (flags_parse_duration_ms(arg, 100, 3600000L, &o->watch_idle_ms) < 0)
            return bad_value(err_to, "--watch-idle-timeout", arg,
                             "want a duration from 100ms to 1h, like 90s");
        return 0;
    case 'v':
        /* -v N, -vN, -v=N, --v=N, --v N */
        val = arg[0] == '=' ? arg + 1 : arg;
        return flags_parse_long(val, 0, 10, &o->verbosity) < 0
            ? bad_value(err_to, "-v", val, "want an integer 0..10")
            : 0;
    default: return WH_EINVAL;
    }
}

/*
 * One flag from flags_next with its value arg, handed to its side; *named as
 * selfsigned_flag and certsecret_flag say. @return 0, or WH_EINVAL after the message.
 */
static int one_flag(struct serve_options *o, unsigned *named, int opt, const char *arg,
                    FILE *err_to)
{
    switch (opt) {
    case OPT_CERT_SECRET:
    case OPT_CERT_VALIDITY:
    case OPT_CA_VALIDITY:
    case OPT_CERT_RENEW_BEFORE:
    case OPT_CABUNDLE_REPAIR: return certsecret_flag(o, named, opt, arg, err_to);
    case OPT_SELF_SIGNED:
    case OPT_SERVICE_NAME:
    case OPT_TLS_SAN:
    case OPT_WEBHOOK_CONFIG: return selfsigned_flag(o, named, opt, arg, err_to);
    case OPT_LEADER_ELECT:
    case OPT_LEASE_DURATION:
    case OPT_RENEW_DEADLINE:
    case OPT_RETRY_PERIOD:
    case OPT_LEASE_NAMESPACE:
    case OPT_RESYNC_PERIOD:
    case OPT_RECONCILE_WORKERS:
    case OPT_KUBE_API_QPS:
    case OPT_KUBE_API_BURST: return reconcile_flag(o, opt, arg, err_to);
    case OPT_NAMESPACES: return namespaces_flag(o, arg, err_to);
    case OPT_SHUTDOWN_GRACE:
    case OPT_MAX_CONNECTIONS:
    case OPT_MAX_CONNECTIONS_PER_IP:
    case OPT_CONNECTION_IDLE_TIMEOUT:
    case OPT_REQUEST_TIMEOUT:
    case OPT_MAX_BODY_IN_FLIGHT: return ops_flag(o, opt, arg, err_to);
    case OPT_BIND:
    case OPT_PORT:
    case OPT_CERT:
    case OPT_KEY:
    case OPT_INSECURE:
    case OPT_ALLOW_INSECURE_KEY:
    case OPT_KUBECONFIG:
    case OPT_PORT_FILE:
    case OPT_LOOKUP_FAILURE:
    case OPT_JOB_VALIDATION:
    case OPT_LOOKUP_TIMEOUT:
    case OPT_WATCH_IDLE_TIMEOUT:
    case 'v': return serving_flag(o, opt, arg, err_to);
    default: return WH_EINVAL;
    }
}

/* Where the serving pair comes from: exactly one of --cert-secret, --self-signed,
 * --insecure-http and the two TLS files. @return 0 or WH_EINVAL after the message. */
static int tls_flags_check(const struct serve_options *o, unsigned named, FILE *err_to)
{
    if (certsecret_flags_check(o, named, err_to) < 0)
        return WH_EINVAL;
    if (selfsigned_flags_check(o, named, err_to) < 0)
        return WH_EINVAL;
    if (o->insecure_http && (o->tls_cert_file != NULL || o->tls_key_file != NULL)) {
        fprintf(err_to, WH_PROG ": serve: --insecure-http cannot be combined with %s\n",
                o->tls_cert_file != NULL ? "--tls-cert-file" : "--tls-private-key-file");
        return WH_EINVAL;
    }
    if (!o->insecure_http && !o->self_signed && o->cert_secret == NULL
        && (o->tls_cert_file == NULL || o->tls_key_file == NULL)) {
        fprintf(err_to,
                WH_PROG ": serve: missing required flag %s (or --cert-secret, or --self-signed, "
                        "or --insecure-http; see --help)\n",
                o->tls_cert_file == NULL ? "--tls-cert-file" : "--tls-private-key-file");
        return WH_EINVAL;
    }
    return 0;
}

int serve_flags_parse(struct serve_options *out, int argc, char **argv, FILE *help_to, FILE *err_to)
{
    unsigned named = 0; /* NAMED_TLS, NAMED_MANAGED: flags given that need a mode */
    struct flags_parser p;
    const char *arg;
    int opt;

    options_init(out);
    if (flags_parser_init(&p, &serve_flags) < 0)
        return flags_usage_error(&serve_flags, err_to, "bad flag table");
    while ((opt = flags_next(&p, argc, argv, &arg, err_to)) != -1) {
        if (opt < 0)
            return WH_EINVAL; /* flags_next told it */
        if (opt == 'h') {
            flags_print_help(&serve_flags, help_to);
            return SERVE_FLAGS_HELP;
        }
        if (one_flag(out, &named, opt, arg, err_to) < 0)
            return WH_EINVAL;
    }
    if (flags_no_arguments(&p, argc, argv, err_to) < 0)
        return WH_EINVAL;
    if (tls_flags_check(out, named, err_to) < 0)
        return WH_EINVAL;
    return reconcile_flags_check(out, err_to);
}
