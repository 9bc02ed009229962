/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serve_flags.h - the flags of the `serve` subcommand: struct serve_options,
 * its defaults, the --help text, getopt_long parsing and every value check
 * (integers with ranges, Go-style durations, booleans, enums, names) and the
 * checks across flags. webhook/serve.c wires the modules together from the
 * parsed struct; nothing here starts a thread or touches the network.
 *
 * Threads: main thread only. serve_flags_parse uses getopt_long's globals
 * (optind, optarg, opterr) and resets them on entry, so it is not reentrant.
 */
#ifndef WH_SERVE_FLAGS_H
#define WH_SERVE_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/error.h"
#include "controller/certkeeper.h"
#include "k8s/names.h"
#include "webhook/mutate.h"

#define SERVE_FLAGS_HELP 1 /* > 0, not an error: --help was printed; exit 0 */

/*
 * --namespaces: at most this many. Each namespace costs an informer thread, a watch
 * connection and a LIST at start and after every 410; a webhook serving more
 * namespaces than this is better off with one cluster-wide informer (no flag).
 */
#define SERVE_MAX_NAMESPACES    32
#define SERVE_NAMESPACE_MAX_LEN K8S_LABEL_MAX /* a DNS-1123 label (k8s/names.h) */

/*
 * Every `serve` flag after parsing, defaults filled in. Strings are borrowed
 * from argv (serve_flags_parse copies nothing but the --namespaces names, split
 * into the struct's own array), so argv must outlive the struct; the struct owns
 * nothing on the heap and needs no dispose. Durations are milliseconds.
 */
struct serve_options {
    /* serving */
    const char *bind_address;  /* --bind-address, default "::" (both families) */
    long port;                 /* --port 0..65535, 0 = any free port, default 8443 */
    const char *tls_cert_file; /* --tls-cert-file, NULL when not given */
    const char *tls_key_file;  /* --tls-private-key-file, NULL when not given */
    bool insecure_http;        /* --insecure-http */
    bool allow_insecure_key;   /* --allow-insecure-key-permissions */
    const char *kubeconfig;    /* --kubeconfig, NULL = $KUBECONFIG, else in-cluster */
    const char *port_file;     /* --port-file, NULL = none */
    long verbosity;            /* -v / --v 0..10, default 2 (LOG_LEVEL_INFO) */
    enum lookup_failure_policy lookup_failure; /* --job-lookup-failure, default deny */
    enum job_validation_mode job_validation;   /* --job-validation, default warn */
    long lookup_timeout_ms;                    /* --job-lookup-timeout 1ms..30s, default 2000 */
    long watch_idle_ms;                        /* hidden --watch-idle-timeout 100ms..1h; 0 = the
                                     informer's default */
    /* reconcile side */
    bool leader_elect;      /* --leader-elect[=BOOL], default true */
    long lease_duration_ms; /* --leader-elect-lease-duration, whole s, default 15000 */
    long renew_deadline_ms; /* --leader-elect-renew-deadline, whole s, default 10000 */
    long retry_period_ms;   /* --leader-elect-retry-period, whole s, default 2000 */
    const char *lease_ns;   /* --leader-elect-resource-namespace, NULL = detect */
    long resync_period_ms;  /* --resync-period, whole s, default 600000 */
    long reconcile_workers; /* --reconcile-workers 1..64, default 4 */
    double kube_api_qps;    /* --kube-api-qps 0..1e6, 0 = no limit, default 50 */
    long kube_api_burst;    /* --kube-api-burst 1..1000000, default 100 */
    /* --namespaces: the namespaces whose Jobs are served and reconciled, in the order
     * given (DNS-1123 labels, no duplicates); none given = every namespace */
    char namespaces[SERVE_MAX_NAMESPACES][SERVE_NAMESPACE_MAX_LEN + 1];
    size_t nnamespaces; /* entries used in namespaces; 0 = every namespace (default) */
    /* --self-signed */
    bool self_signed;           /* --self-signed */
    const char *service_name;   /* --service-name, default "volcano-plugin-webhook" */
    const char *webhook_config; /* --webhook-config-name, default "volcano-plugin-webhook" */
    const char *tls_sans[CERTKEEPER_MAX_SANS]; /* --tls-san, in the order given (also
                                                   for --cert-secret) */
    size_t ntls_sans;                          /* entries used in tls_sans */
    /* --cert-secret: managed certificates (controller/certkeeper.h); whole seconds */
    const char *cert_secret;   /* --cert-secret, NULL = off */
    long cert_validity_ms;     /* --cert-validity 1s..876000h, default 8760h (1 year) */
    long ca_validity_ms;       /* --ca-validity 1s..876000h, default 87600h (10 years) */
    long cert_renew_before_ms; /* --cert-renew-before 1s..876000h, default 720h (30 days) */
    long cabundle_repair_ms;   /* --cabundle-repair-interval 2s..24h, default 60s */
    /* operations */
    long shutdown_grace_ms;  /* --shutdown-grace 0..1h, default 15000 */
    long max_connections;    /* --max-connections 1..1000000, default 1000 */
    long max_per_ip;         /* --max-connections-per-ip 0..1000000, 0 = no limit
                                     (default) */
    long idle_timeout_ms;    /* --connection-idle-timeout, whole s 1s..1h, default 30000 */
    long request_timeout_ms; /* --request-timeout 100ms..10m, default 10000 */
    long max_body_in_flight; /* --max-body-bytes-in-flight SERVER_MAX_BODY..1 TiB, default
                                SERVER_DEFAULT_BODY_BYTES_IN_FLIGHT */
};

/**
 * Parse the arguments of `serve` (argv[0] is the subcommand name, as
 * getopt_long wants) into *out: fill the defaults, parse every flag, then check
 * the flags against each other (--cert-secret, --self-signed, --insecure-http
 * and the TLS files exclude each other; without one of the first three both TLS
 * files are required; lease duration > renew deadline > retry period; with
 * --cert-secret, renew-before < validity <= CA validity and CA validity >
 * 2 * renew-before, the rules of certkeeper_create).
 *
 * The first bad flag stops the parse. Messages are the usage messages of the
 * binary, one line each, "volcano-plugin-webhook: serve: ..." plus '\n'.
 *
 * @param[out] out    filled on 0; on any other result its content is unspecified
 *                    (it never owns anything, so nothing leaks)
 * @param argv        borrowed: out's strings point into it, so it must outlive
 *                    out; getopt_long may reorder its pointers (not the strings)
 * @param help_to     where --help prints the usage text (serve_main: stdout)
 * @param err_to      where a bad flag's message goes (serve_main: stderr)
 * @return 0 when the flags are valid (nothing printed); SERVE_FLAGS_HELP after
 *         printing the usage text to help_to (the command exits 0); WH_EINVAL
 *         after printing one message to err_to (the command exits 2: unknown
 *         flag, missing value, bad value, stray argument, bad combination;
 *         for --namespaces also a name given twice or more than
 *         SERVE_MAX_NAMESPACES names).
 */
int serve_flags_parse(struct serve_options *out, int argc, char **argv, FILE *help_to,
                      FILE *err_to) WH_WARN_UNUSED;

#endif
