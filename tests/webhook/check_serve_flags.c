/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_serve_flags.c - serve_flags_parse (webhook/serve_flags.h) driven
 * directly with argv arrays: every default, every flag's parsed value, every
 * duration flag in each unit, integer ranges at and past both ends, the enums,
 * the exact message of each kind of usage error, the --cert-secret flags and
 * their rules across flags, --help (the whole text against
 * tests/fixtures/serve/help.txt, the binary's --help output before serve.c was
 * split), every default --help states against the parsed defaults, and the
 * checks across flags. The help and error streams are memory
 * streams (open_memstream), so every byte printed is asserted.
 */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tests/testutil.h"
#include "webhook/serve_flags.h"

#define P "volcano-plugin-webhook: serve: "

/* What one serve_flags_parse call printed and returned. */
struct result {
    int rc;
    char *out; /* help_to text, malloc'd (free) */
    size_t out_len;
    char *err; /* err_to text, malloc'd (free) */
    size_t err_len;
};

static void result_free(struct result *r)
{
    free(r->out);
    free(r->err);
    r->out = NULL;
    r->err = NULL;
}

/* Parse argv (NULL-terminated, writable: getopt_long may reorder it) into *o. */
static void parse_argv(struct serve_options *o, struct result *r, char **argv)
{
    FILE *out;
    FILE *err;
    int argc = 0;

    while (argv[argc] != NULL)
        argc++;
    memset(r, 0, sizeof(*r));
    out = open_memstream(&r->out, &r->out_len);
    err = open_memstream(&r->err, &r->err_len);
    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(err);
    r->rc = serve_flags_parse(o, argc, argv, out, err);
    ck_assert_int_eq(fclose(out), 0);
    ck_assert_int_eq(fclose(err), 0);
}

/* PARSE(&o, &r, "--flag", "value", ...): argv[0] is "serve", as serve_main gets it. */
#define PARSE(o, r, ...) parse_argv((o), (r), (char *[]){"serve", __VA_ARGS__, NULL})

/* Assert a usage error: WH_EINVAL, nothing on the help stream, exactly msg on err. */
static void assert_usage_error(const struct result *r, const char *msg)
{
    ck_assert_int_eq(r->rc, WH_EINVAL);
    ck_assert_uint_eq(r->out_len, 0);
    ck_assert_str_eq(r->err, msg);
}

/* Assert success: 0 and nothing printed on either stream. */
static void assert_ok(const struct result *r)
{
    ck_assert_msg(r->rc == 0, "rc %d, err \"%s\"", r->rc, r->err);
    ck_assert_uint_eq(r->out_len, 0);
    ck_assert_uint_eq(r->err_len, 0);
}

static long long_at(const struct serve_options *o, size_t off)
{
    long v;

    memcpy(&v, (const char *)o + off, sizeof(v));
    return v;
}

START_TEST(test_defaults)
{
    struct serve_options o;
    struct result r;

    PARSE(&o, &r, "--insecure-http");
    assert_ok(&r);
    ck_assert_str_eq(o.bind_address, "::");
    ck_assert_int_eq(o.port, 8443);
    ck_assert_ptr_null(o.tls_cert_file);
    ck_assert_ptr_null(o.tls_key_file);
    ck_assert(o.insecure_http);
    ck_assert(!o.allow_insecure_key);
    ck_assert_ptr_null(o.kubeconfig);
    ck_assert_ptr_null(o.port_file);
    ck_assert_int_eq(o.verbosity, 2);
    ck_assert_int_eq(o.lookup_failure, LOOKUP_FAILURE_DENY);
    ck_assert_int_eq(o.job_validation, JOB_VALIDATION_WARN);
    ck_assert_int_eq(o.lookup_timeout_ms, 2000);
    ck_assert_int_eq(o.watch_idle_ms, 0);
    ck_assert(o.leader_elect);
    ck_assert_int_eq(o.lease_duration_ms, 15000);
    ck_assert_int_eq(o.renew_deadline_ms, 10000);
    ck_assert_int_eq(o.retry_period_ms, 2000);
    ck_assert_ptr_null(o.lease_ns);
    ck_assert_int_eq(o.resync_period_ms, 600000);
    ck_assert_int_eq(o.reconcile_workers, 4);
    ck_assert_double_eq(o.kube_api_qps, 50.0);
    ck_assert_int_eq(o.kube_api_burst, 100);
    ck_assert(!o.self_signed);
    ck_assert_str_eq(o.service_name, "volcano-plugin-webhook");
    ck_assert_str_eq(o.webhook_config, "volcano-plugin-webhook");
    ck_assert_uint_eq(o.ntls_sans, 0);
    ck_assert_ptr_null(o.cert_secret);
    ck_assert_int_eq(o.cert_validity_ms, 8760L * 3600 * 1000);
    ck_assert_int_eq(o.ca_validity_ms, 87600L * 3600 * 1000);
    ck_assert_int_eq(o.cert_renew_before_ms, 720L * 3600 * 1000);
    ck_assert_int_eq(o.cabundle_repair_ms, 60000);
    ck_assert_int_eq(o.shutdown_grace_ms, 15000);
    ck_assert_int_eq(o.max_connections, 1000);
    ck_assert_int_eq(o.max_per_ip, 0);
    ck_assert_int_eq(o.idle_timeout_ms, 30000);
    ck_assert_int_eq(o.request_timeout_ms, 10000);
    ck_assert_int_eq(o.max_body_in_flight, 64L * 1024 * 1024);
    ck_assert_uint_eq(o.nnamespaces, 0);
    result_free(&r);
}
END_TEST

/* Every flag at once, given values other than the defaults; strings are argv's own. */
START_TEST(test_every_flag)
{
    char *argv[] = {"serve",
                    "--bind-address",
                    "::1",
                    "--port=9443",
                    "--tls-cert-file",
                    "c.pem",
                    "--tls-private-key-file",
                    "k.pem",
                    "--allow-insecure-key-permissions",
                    "--kubeconfig",
                    "kc.yaml",
                    "--port-file",
                    "port.txt",
                    "-v",
                    "4",
                    "--job-lookup-failure",
                    "allow",
                    "--job-lookup-timeout",
                    "500ms",
                    "--watch-idle-timeout",
                    "90s",
                    "--leader-elect=false",
                    "--leader-elect-lease-duration",
                    "30s",
                    "--leader-elect-renew-deadline",
                    "20s",
                    "--leader-elect-retry-period",
                    "5s",
                    "--leader-elect-resource-namespace",
                    "kube-system",
                    "--resync-period",
                    "1h",
                    "--reconcile-workers",
                    "64",
                    "--kube-api-qps",
                    "12.5",
                    "--kube-api-burst",
                    "7",
                    "--shutdown-grace",
                    "0",
                    "--max-connections",
                    "10",
                    "--max-connections-per-ip",
                    "3",
                    "--connection-idle-timeout",
                    "2m",
                    "--request-timeout",
                    "250ms",
                    "--max-body-bytes-in-flight",
                    "8388608",
                    "--job-validation",
                    "deny",
                    NULL};
    struct serve_options o;
    struct result r;

    parse_argv(&o, &r, argv);
    assert_ok(&r);
    ck_assert_ptr_eq(o.bind_address, argv[2]); /* borrowed, not copied */
    ck_assert_str_eq(o.bind_address, "::1");
    ck_assert_int_eq(o.port, 9443);
    ck_assert_str_eq(o.tls_cert_file, "c.pem");
    ck_assert_str_eq(o.tls_key_file, "k.pem");
    ck_assert(!o.insecure_http);
    ck_assert(o.allow_insecure_key);
    ck_assert_str_eq(o.kubeconfig, "kc.yaml");
    ck_assert_str_eq(o.port_file, "port.txt");
    ck_assert_int_eq(o.verbosity, 4);
    ck_assert_int_eq(o.lookup_failure, LOOKUP_FAILURE_ALLOW);
    ck_assert_int_eq(o.job_validation, JOB_VALIDATION_DENY);
    ck_assert_int_eq(o.lookup_timeout_ms, 500);
    ck_assert_int_eq(o.watch_idle_ms, 90000);
    ck_assert(!o.leader_elect);
    ck_assert_int_eq(o.lease_duration_ms, 30000);
    ck_assert_int_eq(o.renew_deadline_ms, 20000);
    ck_assert_int_eq(o.retry_period_ms, 5000);
    ck_assert_str_eq(o.lease_ns, "kube-system");
    ck_assert_int_eq(o.resync_period_ms, 3600000);
    ck_assert_int_eq(o.reconcile_workers, 64);
    ck_assert_double_eq(o.kube_api_qps, 12.5);
    ck_assert_int_eq(o.kube_api_burst, 7);
    ck_assert_int_eq(o.shutdown_grace_ms, 0);
    ck_assert_int_eq(o.max_connections, 10);
    ck_assert_int_eq(o.max_per_ip, 3);
    ck_assert_int_eq(o.idle_timeout_ms, 120000);
    ck_assert_int_eq(o.request_timeout_ms, 250);
    ck_assert_int_eq(o.max_body_in_flight, 8388608);
    result_free(&r);
}
END_TEST

START_TEST(test_self_signed_flags)
{
    struct serve_options o;
    struct result r;

    PARSE(&o, &r, "--self-signed", "--service-name", "svc", "--tls-san", "10.0.0.1",
          "--webhook-config-name", "my.config", "--tls-san", "web.example.com");
    assert_ok(&r);
    ck_assert(o.self_signed);
    ck_assert_str_eq(o.service_name, "svc");
    ck_assert_str_eq(o.webhook_config, "my.config");
    ck_assert_uint_eq(o.ntls_sans, 2);
    ck_assert_str_eq(o.tls_sans[0], "10.0.0.1");
    ck_assert_str_eq(o.tls_sans[1], "web.example.com");
    ck_assert_ptr_null(o.tls_cert_file);
    result_free(&r);
}
END_TEST

/* --cert-secret and its flags; --service-name, --tls-san and --webhook-config-name serve it too. */
START_TEST(test_cert_secret_flags)
{
    struct serve_options o;
    struct result r;

    PARSE(&o, &r, "--cert-secret", "vpw-certs", "--cert-validity", "20s", "--ca-validity=1h",
          "--cert-renew-before", "10s", "--cabundle-repair-interval", "2s", "--tls-san",
          "127.0.0.1", "--service-name", "svc", "--webhook-config-name", "my.config");
    assert_ok(&r);
    ck_assert_str_eq(o.cert_secret, "vpw-certs");
    ck_assert_int_eq(o.cert_validity_ms, 20000);
    ck_assert_int_eq(o.ca_validity_ms, 3600000);
    ck_assert_int_eq(o.cert_renew_before_ms, 10000);
    ck_assert_int_eq(o.cabundle_repair_ms, 2000);
    ck_assert_uint_eq(o.ntls_sans, 1);
    ck_assert_str_eq(o.tls_sans[0], "127.0.0.1");
    ck_assert_str_eq(o.service_name, "svc");
    ck_assert_str_eq(o.webhook_config, "my.config");
    ck_assert(!o.self_signed);
    ck_assert(!o.insecure_http);
    ck_assert_ptr_null(o.tls_cert_file);
    ck_assert_ptr_null(o.tls_key_file);
    result_free(&r);
    /* the largest durations: 100 years, in milliseconds */
    PARSE(&o, &r, "--cert-secret", "s", "--cert-validity", "876000h", "--ca-validity", "876000h",
          "--cabundle-repair-interval", "24h");
    assert_ok(&r);
    ck_assert_int_eq(o.cert_validity_ms, 876000L * 3600 * 1000);
    ck_assert_int_eq(o.ca_validity_ms, 876000L * 3600 * 1000);
    ck_assert_int_eq(o.cabundle_repair_ms, 86400000);
    result_free(&r);
}
END_TEST

/* Every duration flag, in each unit it accepts; the value is in milliseconds. */
static const struct {
    const char *flag;
    const char *value;
    size_t field; /* offsetof the long in struct serve_options */
    long want_ms;
} durations[] = {
    {"--job-lookup-timeout", "1ms", offsetof(struct serve_options, lookup_timeout_ms), 1},
    {"--job-lookup-timeout", "500ms", offsetof(struct serve_options, lookup_timeout_ms), 500},
    {"--job-lookup-timeout", "2s", offsetof(struct serve_options, lookup_timeout_ms), 2000},
    {"--job-lookup-timeout", "30s", offsetof(struct serve_options, lookup_timeout_ms), 30000},
    {"--job-lookup-timeout", "30000ms", offsetof(struct serve_options, lookup_timeout_ms), 30000},
    {"--leader-elect-lease-duration", "16s", offsetof(struct serve_options, lease_duration_ms),
     16000},
    {"--leader-elect-lease-duration", "1m", offsetof(struct serve_options, lease_duration_ms),
     60000},
    {"--leader-elect-lease-duration", "1h", offsetof(struct serve_options, lease_duration_ms),
     3600000},
    {"--leader-elect-lease-duration", "60000ms", offsetof(struct serve_options, lease_duration_ms),
     60000},
    {"--leader-elect-renew-deadline", "5s", offsetof(struct serve_options, renew_deadline_ms),
     5000},
    {"--leader-elect-renew-deadline", "14000ms", offsetof(struct serve_options, renew_deadline_ms),
     14000},
    {"--leader-elect-retry-period", "1s", offsetof(struct serve_options, retry_period_ms), 1000},
    {"--leader-elect-retry-period", "3000ms", offsetof(struct serve_options, retry_period_ms),
     3000},
    {"--resync-period", "1000ms", offsetof(struct serve_options, resync_period_ms), 1000},
    {"--resync-period", "30s", offsetof(struct serve_options, resync_period_ms), 30000},
    {"--resync-period", "10m", offsetof(struct serve_options, resync_period_ms), 600000},
    {"--resync-period", "24h", offsetof(struct serve_options, resync_period_ms), 86400000},
    {"--watch-idle-timeout", "100ms", offsetof(struct serve_options, watch_idle_ms), 100},
    {"--watch-idle-timeout", "90s", offsetof(struct serve_options, watch_idle_ms), 90000},
    {"--watch-idle-timeout", "2m", offsetof(struct serve_options, watch_idle_ms), 120000},
    {"--watch-idle-timeout", "1h", offsetof(struct serve_options, watch_idle_ms), 3600000},
    {"--shutdown-grace", "0", offsetof(struct serve_options, shutdown_grace_ms), 0},
    {"--shutdown-grace", "0s", offsetof(struct serve_options, shutdown_grace_ms), 0},
    {"--shutdown-grace", "1500ms", offsetof(struct serve_options, shutdown_grace_ms), 1500},
    {"--shutdown-grace", "15s", offsetof(struct serve_options, shutdown_grace_ms), 15000},
    {"--shutdown-grace", "1m", offsetof(struct serve_options, shutdown_grace_ms), 60000},
    {"--shutdown-grace", "1h", offsetof(struct serve_options, shutdown_grace_ms), 3600000},
    {"--connection-idle-timeout", "1s", offsetof(struct serve_options, idle_timeout_ms), 1000},
    {"--connection-idle-timeout", "5000ms", offsetof(struct serve_options, idle_timeout_ms), 5000},
    {"--connection-idle-timeout", "2m", offsetof(struct serve_options, idle_timeout_ms), 120000},
    {"--connection-idle-timeout", "1h", offsetof(struct serve_options, idle_timeout_ms), 3600000},
    {"--request-timeout", "100ms", offsetof(struct serve_options, request_timeout_ms), 100},
    {"--request-timeout", "10s", offsetof(struct serve_options, request_timeout_ms), 10000},
    {"--request-timeout", "1m", offsetof(struct serve_options, request_timeout_ms), 60000},
    {"--request-timeout", "10m", offsetof(struct serve_options, request_timeout_ms), 600000},
};

/* The managed durations (they need --cert-secret or --self-signed), in each unit they accept. */
static const struct {
    const char *flag;
    const char *value;
    size_t field;
    long want_ms;
} cert_durations[] = {
    {"--cert-validity", "3600000s", offsetof(struct serve_options, cert_validity_ms), 3600000000L},
    {"--cert-validity", "60000m", offsetof(struct serve_options, cert_validity_ms), 3600000000L},
    {"--cert-validity", "1000h", offsetof(struct serve_options, cert_validity_ms), 3600000000L},
    {"--cert-validity", "3600000000ms", offsetof(struct serve_options, cert_validity_ms),
     3600000000L},
    {"--ca-validity", "9000h", offsetof(struct serve_options, ca_validity_ms), 9000L * 3600 * 1000},
    {"--ca-validity", "540000m", offsetof(struct serve_options, ca_validity_ms),
     9000L * 3600 * 1000},
    {"--cert-renew-before", "1s", offsetof(struct serve_options, cert_renew_before_ms), 1000},
    {"--cert-renew-before", "10m", offsetof(struct serve_options, cert_renew_before_ms), 600000},
    {"--cert-renew-before", "100h", offsetof(struct serve_options, cert_renew_before_ms),
     360000000L},
    {"--cabundle-repair-interval", "1s", offsetof(struct serve_options, cabundle_repair_ms), 1000},
    {"--cabundle-repair-interval", "5000ms", offsetof(struct serve_options, cabundle_repair_ms),
     5000},
    {"--cabundle-repair-interval", "2m", offsetof(struct serve_options, cabundle_repair_ms),
     120000},
};

START_TEST(test_cert_durations)
{
    struct serve_options o;
    struct result r;
    char joined[64];

    PARSE(&o, &r, "--cert-secret", "s", (char *)cert_durations[_i].flag,
          (char *)cert_durations[_i].value);
    assert_ok(&r);
    ck_assert_int_eq(long_at(&o, cert_durations[_i].field), cert_durations[_i].want_ms);
    result_free(&r);
    snprintf(joined, sizeof(joined), "%s=%s", cert_durations[_i].flag, cert_durations[_i].value);
    PARSE(&o, &r, "--cert-secret", "s", joined);
    assert_ok(&r);
    ck_assert_int_eq(long_at(&o, cert_durations[_i].field), cert_durations[_i].want_ms);
    result_free(&r);
}
END_TEST

START_TEST(test_durations)
{
    struct serve_options o;
    struct result r;
    char joined[64];

    /* FLAG VALUE */
    PARSE(&o, &r, "--insecure-http", (char *)durations[_i].flag, (char *)durations[_i].value);
    assert_ok(&r);
    ck_assert_int_eq(long_at(&o, durations[_i].field), durations[_i].want_ms);
    result_free(&r);
    /* FLAG=VALUE, the same */
    snprintf(joined, sizeof(joined), "%s=%s", durations[_i].flag, durations[_i].value);
    PARSE(&o, &r, "--insecure-http", joined);
    assert_ok(&r);
    ck_assert_int_eq(long_at(&o, durations[_i].field), durations[_i].want_ms);
    result_free(&r);
}
END_TEST

/* Bad values, each with the exact message; every one is a usage error. */
static const struct {
    const char *flag;
    const char *value;
    const char *msg;
} bad_values[] = {
    /* --bind-address: what server_start could not bind, refused before anything starts */
    {"--bind-address", "1.2.3",
     P "invalid --bind-address \"1.2.3\": want an IPv4 or IPv6 address, like 0.0.0.0 or ::\n"},
    {"--bind-address", "localhost",
     P "invalid --bind-address \"localhost\": want an IPv4 or IPv6 address, like 0.0.0.0 or "
       "::\n"},
    {"--bind-address", "[::1",
     P "invalid --bind-address \"[::1\": want an IPv4 or IPv6 address, like 0.0.0.0 or ::\n"},
    /* durations: no unit, out of range, fraction, sign, unknown unit, overflow */
    {"--job-lookup-timeout", "2",
     P "invalid --job-lookup-timeout \"2\": want a duration from 1ms to 30s, like 500ms or 2s\n"},
    {"--job-lookup-timeout", "0s",
     P "invalid --job-lookup-timeout \"0s\": want a duration from 1ms to 30s, like 500ms or 2s\n"},
    {"--job-lookup-timeout", "30001ms",
     P "invalid --job-lookup-timeout \"30001ms\": want a duration from 1ms to 30s, like 500ms "
       "or 2s\n"},
    {"--job-lookup-timeout", "-5ms",
     P "invalid --job-lookup-timeout \"-5ms\": want a duration from 1ms to 30s, like 500ms or "
       "2s\n"},
    {"--job-lookup-timeout", "1.5s",
     P "invalid --job-lookup-timeout \"1.5s\": want a duration from 1ms to 30s, like 500ms or "
       "2s\n"},
    {"--job-lookup-timeout", "1d",
     P "invalid --job-lookup-timeout \"1d\": want a duration from 1ms to 30s, like 500ms or 2s\n"},
    {"--leader-elect-lease-duration", "1500ms",
     P "invalid --leader-elect-lease-duration \"1500ms\": want whole seconds from 1s to 1h, "
       "like 15s\n"},
    {"--leader-elect-lease-duration", "3601s",
     P "invalid --leader-elect-lease-duration \"3601s\": want whole seconds from 1s to 1h, "
       "like 15s\n"},
    {"--leader-elect-lease-duration", "2562047788015h",
     P "invalid --leader-elect-lease-duration \"2562047788015h\": want whole seconds from 1s "
       "to 1h, like 15s\n"},
    {"--leader-elect-renew-deadline", "0s",
     P "invalid --leader-elect-renew-deadline \"0s\": want whole seconds from 1s to 1h, like "
       "15s\n"},
    {"--leader-elect-retry-period", "100ms",
     P "invalid --leader-elect-retry-period \"100ms\": want whole seconds from 1s to 1h, like "
       "15s\n"},
    {"--resync-period", "9223372036854775807h",
     P "invalid --resync-period \"9223372036854775807h\": want whole seconds from 1s to 24h, "
       "like 10m\n"},
    {"--resync-period", "99999999999999999999s",
     P "invalid --resync-period \"99999999999999999999s\": want whole seconds from 1s to 24h, "
       "like 10m\n"},
    /* accepted before: now + period overflowed (UBSan) or wrapped into a busy loop */
    {"--resync-period", "2562047788015h",
     P "invalid --resync-period \"2562047788015h\": want whole seconds from 1s to 24h, like "
       "10m\n"},
    {"--resync-period", "86401s",
     P "invalid --resync-period \"86401s\": want whole seconds from 1s to 24h, like 10m\n"},
    /* 103122423467612424 * 3600000 wraps to exactly 128000 (128s) in 64 bits */
    {"--request-timeout", "103122423467612424h",
     P "invalid --request-timeout \"103122423467612424h\": want a duration from 100ms to 10m, "
       "like 10s\n"},
    {"--watch-idle-timeout", "99ms",
     P "invalid --watch-idle-timeout \"99ms\": want a duration from 100ms to 1h, like 90s\n"},
    {"--watch-idle-timeout", "61m",
     P "invalid --watch-idle-timeout \"61m\": want a duration from 100ms to 1h, like 90s\n"},
    {"--shutdown-grace", "2h",
     P "invalid --shutdown-grace \"2h\": want a duration from 0 (stop at once) to 1h, like "
       "15s\n"},
    {"--shutdown-grace", "00",
     P "invalid --shutdown-grace \"00\": want a duration from 0 (stop at once) to 1h, like "
       "15s\n"},
    {"--connection-idle-timeout", "1500ms",
     P "invalid --connection-idle-timeout \"1500ms\": want whole seconds from 1s to 1h, like "
       "30s\n"},
    {"--connection-idle-timeout", "2h",
     P "invalid --connection-idle-timeout \"2h\": want whole seconds from 1s to 1h, like 30s\n"},
    {"--request-timeout", "99ms",
     P "invalid --request-timeout \"99ms\": want a duration from 100ms to 10m, like 10s\n"},
    {"--request-timeout", "11m",
     P "invalid --request-timeout \"11m\": want a duration from 100ms to 10m, like 10s\n"},
    /* integers: past either end, signs, spaces, trailing junk, empty, overflow */
    {"--port", "65536", P "invalid --port \"65536\": want an integer 0..65535\n"},
    {"--port", "-1", P "invalid --port \"-1\": want an integer 0..65535\n"},
    {"--port", "+1", P "invalid --port \"+1\": want an integer 0..65535\n"},
    {"--port", " 1", P "invalid --port \" 1\": want an integer 0..65535\n"},
    {"--port", "80x", P "invalid --port \"80x\": want an integer 0..65535\n"},
    {"--port", "", P "invalid --port \"\": want an integer 0..65535\n"},
    {"--port", "99999999999999999999",
     P "invalid --port \"99999999999999999999\": want an integer 0..65535\n"},
    {"-v", "11", P "invalid -v \"11\": want an integer 0..10\n"},
    {"--v", "-1", P "invalid -v \"-1\": want an integer 0..10\n"},
    {"--reconcile-workers", "0", P "invalid --reconcile-workers \"0\": want an integer 1..64\n"},
    {"--reconcile-workers", "65", P "invalid --reconcile-workers \"65\": want an integer 1..64\n"},
    {"--kube-api-burst", "0", P "invalid --kube-api-burst \"0\": want an integer 1..1000000\n"},
    {"--kube-api-burst", "1000001",
     P "invalid --kube-api-burst \"1000001\": want an integer 1..1000000\n"},
    {"--max-connections", "0", P "invalid --max-connections \"0\": want an integer 1..1000000\n"},
#define BUDGET_WANT                                                                                \
    "want a byte count from 3145728 (the 3 MiB body cap) to 1099511627776 (1 TiB), like "          \
    "67108864\n"
    /* below the per-request body cap: no body of the largest size could be served */
    {"--max-body-bytes-in-flight", "3145727",
     P "invalid --max-body-bytes-in-flight \"3145727\": " BUDGET_WANT},
    {"--max-body-bytes-in-flight", "0", P "invalid --max-body-bytes-in-flight \"0\": " BUDGET_WANT},
    {"--max-body-bytes-in-flight", "1099511627777",
     P "invalid --max-body-bytes-in-flight \"1099511627777\": " BUDGET_WANT},
    {"--max-body-bytes-in-flight", "64Mi",
     P "invalid --max-body-bytes-in-flight \"64Mi\": " BUDGET_WANT},
    {"--max-body-bytes-in-flight", "", P "invalid --max-body-bytes-in-flight \"\": " BUDGET_WANT},
    {"--max-connections", "1000001",
     P "invalid --max-connections \"1000001\": want an integer 1..1000000\n"},
    {"--max-connections-per-ip", "-1",
     P "invalid --max-connections-per-ip \"-1\": want an integer 0 (no limit)..1000000\n"},
    {"--max-connections-per-ip", "1000001",
     P "invalid --max-connections-per-ip \"1000001\": want an integer 0 (no limit)..1000000\n"},
    /* a real number */
    {"--kube-api-qps", "-1",
     P "invalid --kube-api-qps \"-1\": want a number from 0 (no limit) to 1e6\n"},
    {"--kube-api-qps", "1e7",
     P "invalid --kube-api-qps \"1e7\": want a number from 0 (no limit) to 1e6\n"},
    {"--kube-api-qps", "nan",
     P "invalid --kube-api-qps \"nan\": want a number from 0 (no limit) to 1e6\n"},
    {"--kube-api-qps", "",
     P "invalid --kube-api-qps \"\": want a number from 0 (no limit) to 1e6\n"},
    /* enums and names */
    {"--job-lookup-failure", "DENY",
     P "invalid --job-lookup-failure \"DENY\": want deny or allow\n"},
    {"--job-validation", "refuse", P "invalid --job-validation \"refuse\": want warn or deny\n"},
    {"--leader-elect-resource-namespace", "a/b",
     P "invalid --leader-elect-resource-namespace \"a/b\": want a namespace name\n"},
    {"--service-name", "a.b",
     P "invalid --service-name \"a.b\": want a Service name (DNS-1123 label)\n"},
    {"--webhook-config-name", "Config",
     P "invalid --webhook-config-name \"Config\": want an object name\n"},
    {"--tls-san", "a,b", P "invalid --tls-san \"a,b\": want a DNS name or an IP address\n"},
};

/* Bad --cert-secret values, each with the exact message (given with --cert-secret). */
static const struct {
    const char *flag;
    const char *value;
    const char *msg;
} bad_cert_values[] = {
    {"--cert-validity", "1500ms",
     P "invalid --cert-validity \"1500ms\": want whole seconds from 1s to 876000h, like 8760h\n"},
    {"--cert-validity", "0s",
     P "invalid --cert-validity \"0s\": want whole seconds from 1s to 876000h, like 8760h\n"},
    {"--cert-validity", "876001h",
     P "invalid --cert-validity \"876001h\": want whole seconds from 1s to 876000h, like "
       "8760h\n"},
    {"--ca-validity", "10d",
     P "invalid --ca-validity \"10d\": want whole seconds from 1s to 876000h, like 8760h\n"},
    {"--ca-validity", "-1h",
     P "invalid --ca-validity \"-1h\": want whole seconds from 1s to 876000h, like 8760h\n"},
    {"--cert-renew-before", "30",
     P "invalid --cert-renew-before \"30\": want whole seconds from 1s to 876000h, like "
       "8760h\n"},
    {"--cert-renew-before", "2562047788015h",
     P "invalid --cert-renew-before \"2562047788015h\": want whole seconds from 1s to 876000h, "
       "like 8760h\n"},
    {"--cabundle-repair-interval", "500ms",
     P "invalid --cabundle-repair-interval \"500ms\": want whole seconds from 1s to 24h, like "
       "60s\n"},
    {"--cabundle-repair-interval", "25h",
     P "invalid --cabundle-repair-interval \"25h\": want whole seconds from 1s to 24h, like "
       "60s\n"},
    {"--cert-secret", "Bad_Name", P "invalid --cert-secret \"Bad_Name\": want a Secret name\n"},
};

START_TEST(test_bad_cert_values)
{
    struct serve_options o;
    struct result r;

    PARSE(&o, &r, "--cert-secret", "s", (char *)bad_cert_values[_i].flag,
          (char *)bad_cert_values[_i].value);
    assert_usage_error(&r, bad_cert_values[_i].msg);
    result_free(&r);
}
END_TEST

START_TEST(test_bad_values)
{
    struct serve_options o;
    struct result r;

    PARSE(&o, &r, "--insecure-http", (char *)bad_values[_i].flag, (char *)bad_values[_i].value);
    assert_usage_error(&r, bad_values[_i].msg);
    result_free(&r);
}
END_TEST

/* Both ends of each integer range are accepted. */
START_TEST(test_integer_bounds)
{
    struct serve_options o;
    struct result r;

    PARSE(&o, &r, "--insecure-http", "--port", "0", "--reconcile-workers", "1", "--kube-api-burst",
          "1000000", "--max-connections", "1000000", "--max-connections-per-ip", "1000000", "-v",
          "0", "--kube-api-qps", "0", "--max-body-bytes-in-flight", "3145728");
    assert_ok(&r);
    ck_assert_int_eq(o.max_body_in_flight, 3145728);
    ck_assert_int_eq(o.port, 0);
    ck_assert_int_eq(o.reconcile_workers, 1);
    ck_assert_int_eq(o.kube_api_burst, 1000000);
    ck_assert_int_eq(o.max_connections, 1000000);
    ck_assert_int_eq(o.max_per_ip, 1000000);
    ck_assert_int_eq(o.verbosity, 0);
    ck_assert_double_eq(o.kube_api_qps, 0.0);
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--port", "65535", "-v", "10", "--kube-api-qps", "1e6",
          "--max-connections", "1", "--max-body-bytes-in-flight", "1099511627776");
    assert_ok(&r);
    ck_assert_int_eq(o.max_body_in_flight, 1099511627776L);
    ck_assert_int_eq(o.port, 65535);
    ck_assert_int_eq(o.verbosity, 10);
    ck_assert_double_eq(o.kube_api_qps, 1e6);
    ck_assert_int_eq(o.max_connections, 1);
    result_free(&r);
}
END_TEST

/* -v N, -vN, -v=N, --v=N, --v N; the last one given wins. */
START_TEST(test_verbosity_forms)
{
    static const struct {
        const char *a;
        const char *b; /* NULL: one argument */
        long want;
    } forms[] = {
        {"-v", "3", 3}, {"-v5", NULL, 5}, {"-v=6", NULL, 6}, {"--v=7", NULL, 7}, {"--v", "8", 8}};
    struct serve_options o;
    struct result r;

    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        if (forms[i].b != NULL)
            PARSE(&o, &r, "--insecure-http", (char *)forms[i].a, (char *)forms[i].b);
        else
            PARSE(&o, &r, "--insecure-http", (char *)forms[i].a);
        assert_ok(&r);
        ck_assert_int_eq(o.verbosity, forms[i].want);
        result_free(&r);
    }
    PARSE(&o, &r, "--insecure-http", "-v", "1", "--v=9");
    assert_ok(&r);
    ck_assert_int_eq(o.verbosity, 9);
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "-v=x1");
    assert_usage_error(&r, P "invalid -v \"x1\": want an integer 0..10\n");
    result_free(&r);
}
END_TEST

/* --leader-elect takes an optional Go bool, only as --leader-elect=BOOL. */
START_TEST(test_leader_elect_bool)
{
    struct serve_options o;
    struct result r;

    PARSE(&o, &r, "--insecure-http", "--leader-elect=false");
    assert_ok(&r);
    ck_assert(!o.leader_elect);
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--leader-elect=0", "--leader-elect");
    assert_ok(&r);
    ck_assert(o.leader_elect); /* the bare flag means true */
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--leader-elect=F");
    assert_ok(&r);
    ck_assert(!o.leader_elect);
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--leader-elect=False", "--leader-elect=T");
    assert_ok(&r);
    ck_assert(o.leader_elect);
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--leader-elect=maybe");
    assert_usage_error(&r, P "invalid --leader-elect \"maybe\": want true or false\n");
    result_free(&r);
    /* with a space the value is not the flag's: a stray argument, and how to write it */
    PARSE(&o, &r, "--insecure-http", "--leader-elect", "false");
    assert_usage_error(&r, P "unexpected argument \"false\" (write --leader-elect=false)\n");
    result_free(&r);
}
END_TEST

START_TEST(test_unknown_and_missing)
{
    struct serve_options o;
    struct result r;

    PARSE(&o, &r, "--insecure-http", "--frobnicate");
    assert_usage_error(&r, P "unknown flag --frobnicate (see --help)\n");
    result_free(&r);
    PARSE(&o, &r, "-x", "--insecure-http");
    assert_usage_error(&r, P "unknown flag -x (see --help)\n");
    result_free(&r);
    /* ambiguous abbreviations (--port or --port-file?) are unknown too */
    PARSE(&o, &r, "--insecure-http", "--por", "1");
    assert_usage_error(&r, P "unknown flag --por (see --help)\n");
    result_free(&r);
    PARSE(&o, &r, "--insecure-http=1");
    assert_usage_error(&r, P "unknown flag --insecure-http=1 (see --help)\n");
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--port");
    assert_usage_error(&r, P "flag --port needs a value\n");
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "-v");
    assert_usage_error(&r, P "flag -v needs a value\n");
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "stray");
    assert_usage_error(&r, P "unexpected argument \"stray\"\n");
    result_free(&r);
    /* the first bad flag stops the parse */
    PARSE(&o, &r, "--insecure-http", "--port", "x", "--reconcile-workers", "0");
    assert_usage_error(&r, P "invalid --port \"x\": want an integer 0..65535\n");
    result_free(&r);
}
END_TEST

START_TEST(test_help)
{
    char fix[256];
    char *want = tu_read_file(tu_fixture("serve/help.txt", fix, sizeof(fix)));
    struct serve_options o;
    struct result r;

    PARSE(&o, &r, "--help");
    ck_assert_int_eq(r.rc, SERVE_FLAGS_HELP);
    ck_assert_uint_eq(r.err_len, 0);
    ck_assert_uint_eq(r.out_len, strlen(want));
    ck_assert_str_eq(r.out, want);
    result_free(&r);
    /* -h, and --help before a bad flag: help wins; TLS flags are not required */
    PARSE(&o, &r, "-h", "--frobnicate");
    ck_assert_int_eq(r.rc, SERVE_FLAGS_HELP);
    ck_assert_uint_eq(r.err_len, 0);
    ck_assert_str_eq(r.out, want);
    result_free(&r);
    /* a bad flag before --help: the error, no help */
    PARSE(&o, &r, "--port", "x", "--help");
    assert_usage_error(&r, P "invalid --port \"x\": want an integer 0..65535\n");
    result_free(&r);
    free(want);
}
END_TEST

/* --namespaces: names in the order given, a repeated flag appends; each bad list
 * is refused with its own message and exit 2. */
START_TEST(test_namespaces)
{
    char name63[64], name64[65], list[SERVE_MAX_NAMESPACES * 8 + 8];
    struct serve_options o;
    struct result r;
    size_t off = 0;

    PARSE(&o, &r, "--insecure-http", "--namespaces", "team-a,b2", "--namespaces=0c");
    assert_ok(&r);
    ck_assert_uint_eq(o.nnamespaces, 3);
    ck_assert_str_eq(o.namespaces[0], "team-a");
    ck_assert_str_eq(o.namespaces[1], "b2");
    ck_assert_str_eq(o.namespaces[2], "0c");
    result_free(&r);

    memset(name63, 'n', 63);
    name63[63] = '\0';
    PARSE(&o, &r, "--insecure-http", "--namespaces", name63);
    assert_ok(&r);
    ck_assert_uint_eq(o.nnamespaces, 1);
    ck_assert_str_eq(o.namespaces[0], name63);
    result_free(&r);
    memset(name64, 'n', 64);
    name64[64] = '\0';
    PARSE(&o, &r, "--insecure-http", "--namespaces", name64);
    ck_assert_int_eq(r.rc, WH_EINVAL);
    ck_assert_ptr_nonnull(strstr(r.err,
                                 "want namespace names (DNS-1123 labels) separated by "
                                 "commas\n"));
    result_free(&r);

    /* duplicates, within one flag and across two */
    PARSE(&o, &r, "--insecure-http", "--namespaces", "a,b,a");
    assert_usage_error(&r, P "--namespaces: namespace \"a\" given twice\n");
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--namespaces", "a,b", "--namespaces", "b");
    assert_usage_error(&r, P "--namespaces: namespace \"b\" given twice\n");
    result_free(&r);

    /* SERVE_MAX_NAMESPACES names pass, one more does not */
    for (int k = 0; k < SERVE_MAX_NAMESPACES; k++)
        off += (size_t)snprintf(list + off, sizeof(list) - off, "%sns%d", k > 0 ? "," : "", k);
    PARSE(&o, &r, "--insecure-http", "--namespaces", list);
    assert_ok(&r);
    ck_assert_uint_eq(o.nnamespaces, SERVE_MAX_NAMESPACES);
    ck_assert_str_eq(o.namespaces[SERVE_MAX_NAMESPACES - 1], "ns31");
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--namespaces", list, "--namespaces", "one-more");
    assert_usage_error(&r,
                       P "--namespaces: more than 32 namespaces (serve every namespace "
                         "instead, without the flag)\n");
    result_free(&r);
}
END_TEST

/* --namespaces values that are no list of DNS-1123 labels. */
static const char *const bad_namespaces[] = {
    "", ",", "a,", ",a", "a,,b", "A", "a_b", "a.b", "-a", "a-", "a b", "a,B", "ü",
};

START_TEST(test_bad_namespaces)
{
    char want[256];
    struct serve_options o;
    struct result r;

    snprintf(want, sizeof(want),
             P "invalid --namespaces \"%s\": want namespace names (DNS-1123 labels) "
               "separated by commas\n",
             bad_namespaces[_i]);
    PARSE(&o, &r, "--insecure-http", "--namespaces", (char *)bad_namespaces[_i]);
    assert_usage_error(&r, want);
    result_free(&r);
}
END_TEST

/* The checks across flags, in the order they run. */
START_TEST(test_combinations)
{
    char *many[2 + 2 * (CERTKEEPER_MAX_SANS + 1) + 1];
    char names[CERTKEEPER_MAX_SANS + 1][16];
    size_t n = 0;
    struct serve_options o;
    struct result r;

    parse_argv(&o, &r, (char *[]){"serve", NULL});
    assert_usage_error(&r,
                       P "missing required flag --tls-cert-file (or --cert-secret, or "
                         "--self-signed, or --insecure-http; see --help)\n");
    result_free(&r);
    PARSE(&o, &r, "--tls-cert-file", "c.pem");
    assert_usage_error(&r,
                       P "missing required flag --tls-private-key-file (or --cert-secret, "
                         "or --self-signed, or --insecure-http; see --help)\n");
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--tls-private-key-file", "k.pem");
    assert_usage_error(&r, P "--insecure-http cannot be combined with --tls-private-key-file\n");
    result_free(&r);
    PARSE(&o, &r, "--self-signed", "--insecure-http");
    assert_usage_error(&r, P "--self-signed cannot be combined with --insecure-http\n");
    result_free(&r);
    PARSE(&o, &r, "--self-signed", "--tls-cert-file", "c.pem");
    assert_usage_error(&r, P "--self-signed cannot be combined with --tls-cert-file\n");
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--tls-san", "x");
    assert_usage_error(&r,
                       P "--service-name, --tls-san and --webhook-config-name need "
                         "--self-signed or --cert-secret\n");
    result_free(&r);
    /* --cert-secret: one source of the pair, whatever the order */
    PARSE(&o, &r, "--cert-secret", "s", "--tls-cert-file", "c.pem");
    assert_usage_error(&r, P "--cert-secret cannot be combined with --tls-cert-file\n");
    result_free(&r);
    PARSE(&o, &r, "--tls-private-key-file", "k.pem", "--cert-secret", "s");
    assert_usage_error(&r, P "--cert-secret cannot be combined with --tls-private-key-file\n");
    result_free(&r);
    PARSE(&o, &r, "--cert-secret", "s", "--insecure-http");
    assert_usage_error(&r, P "--cert-secret cannot be combined with --insecure-http\n");
    result_free(&r);
    PARSE(&o, &r, "--self-signed", "--cert-secret", "s");
    assert_usage_error(&r, P "--cert-secret cannot be combined with --self-signed\n");
    result_free(&r);
    /* --self-signed is the same mode with the Secret in memory: the same durations */
    PARSE(&o, &r, "--self-signed", "--cert-validity", "20s");
    assert_usage_error(&r, P "want --cert-renew-before (2592000s) < --cert-validity (20s)\n");
    result_free(&r);
    PARSE(&o, &r, "--self-signed", "--cert-validity", "20s", "--cert-renew-before", "10s",
          "--ca-validity", "30s", "--cabundle-repair-interval", "2s");
    assert_ok(&r);
    ck_assert(o.self_signed);
    ck_assert_int_eq(o.cert_validity_ms, 20000);
    ck_assert_int_eq(o.cert_renew_before_ms, 10000);
    ck_assert_int_eq(o.ca_validity_ms, 30000);
    ck_assert_int_eq(o.cabundle_repair_ms, 2000);
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--cabundle-repair-interval", "60s");
    assert_usage_error(&r,
                       P "--cert-validity, --ca-validity, --cert-renew-before and "
                         "--cabundle-repair-interval need --cert-secret or --self-signed\n");
    result_free(&r);
    /* certkeeper_create's rules on the durations */
    PARSE(&o, &r, "--cert-secret", "s", "--cert-validity", "20s", "--cert-renew-before", "20s");
    assert_usage_error(&r, P "want --cert-renew-before (20s) < --cert-validity (20s)\n");
    result_free(&r);
    PARSE(&o, &r, "--cert-secret", "s", "--cert-validity", "10s");
    assert_usage_error(&r, P "want --cert-renew-before (2592000s) < --cert-validity (10s)\n");
    result_free(&r);
    PARSE(&o, &r, "--cert-secret", "s", "--ca-validity", "8759h");
    assert_usage_error(&r, P "want --ca-validity (31532400s) >= --cert-validity (31536000s)\n");
    result_free(&r);
    PARSE(&o, &r, "--cert-secret", "s", "--cert-validity", "20s", "--cert-renew-before", "10s",
          "--ca-validity", "20s");
    assert_usage_error(&r, P "want --ca-validity (20s) > twice --cert-renew-before (10s)\n");
    result_free(&r);
    PARSE(&o, &r, "--cert-secret", "s", "--cert-validity", "20s", "--cert-renew-before", "10s",
          "--ca-validity", "21s");
    assert_ok(&r);
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--leader-elect-renew-deadline", "20s");
    assert_usage_error(&r,
                       P "want --leader-elect-lease-duration (15s) > "
                         "--leader-elect-renew-deadline (20s) > "
                         "--leader-elect-retry-period (2s)\n");
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--leader-elect-retry-period", "10s");
    assert_usage_error(&r,
                       P "want --leader-elect-lease-duration (15s) > "
                         "--leader-elect-renew-deadline (10s) > "
                         "--leader-elect-retry-period (10s)\n");
    result_free(&r);
    /* 32 --tls-san are accepted, the 33rd is refused */
    many[n++] = "serve";
    many[n++] = "--self-signed";
    for (unsigned i = 0; i <= CERTKEEPER_MAX_SANS; i++) {
        snprintf(names[i], sizeof(names[i]), "s%u", i);
        many[n++] = "--tls-san";
        many[n++] = names[i];
    }
    many[n] = NULL;
    parse_argv(&o, &r, many);
    assert_usage_error(&r, P "more than 32 --tls-san flags\n");
    result_free(&r);
    many[n - 2] = NULL;
    parse_argv(&o, &r, many);
    assert_ok(&r);
    ck_assert_uint_eq(o.ntls_sans, 32);
    ck_assert_str_eq(o.tls_sans[31], "s31");
    result_free(&r);
}
END_TEST

/* getopt's state is reset on entry: a second parse in one process sees its own argv. */
START_TEST(test_parse_twice)
{
    struct serve_options o;
    struct result r;

    PARSE(&o, &r, "--insecure-http", "--port", "1", "stray");
    assert_usage_error(&r, P "unexpected argument \"stray\"\n");
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--port", "2", "--reconcile-workers", "9");
    assert_ok(&r);
    ck_assert_int_eq(o.port, 2);
    ck_assert_int_eq(o.reconcile_workers, 9);
    result_free(&r);
    PARSE(&o, &r, "--insecure-http", "--port", "3");
    assert_ok(&r);
    ck_assert_int_eq(o.port, 3);
    ck_assert_int_eq(o.reconcile_workers, 4); /* defaults again, not the last parse's */
    result_free(&r);
    /* -h returns in the middle of the cluster "-hv5"; the next parse must not resume it */
    PARSE(&o, &r, "-hv5");
    ck_assert_int_eq(r.rc, SERVE_FLAGS_HELP);
    result_free(&r);
    PARSE(&o, &r, "--insecure-http");
    assert_ok(&r);
    ck_assert_int_eq(o.verbosity, 2);
    result_free(&r);
}
END_TEST

/* The options as one line of text, strings by value, so two parses can be compared. */
static void options_text(const struct serve_options *o, char *buf, size_t len)
{
#define S(x) ((x) != NULL ? (x) : "(null)")
    snprintf(buf, len,
             "bind=%s port=%ld cert=%s key=%s http=%d insecure_key=%d kubeconfig=%s "
             "port_file=%s v=%ld lookup=%d job_validation=%d lookup_ms=%ld watch_idle=%ld "
             "leader=%d lease=%ld "
             "renew=%ld retry=%ld lease_ns=%s resync=%ld workers=%ld qps=%g burst=%ld "
             "self_signed=%d service=%s config=%s sans=%zu cert_secret=%s cert_validity=%ld "
             "ca_validity=%ld renew_before=%ld repair=%ld grace=%ld conns=%ld per_ip=%ld "
             "idle=%ld request=%ld body_in_flight=%ld",
             S(o->bind_address), o->port, S(o->tls_cert_file), S(o->tls_key_file), o->insecure_http,
             o->allow_insecure_key, S(o->kubeconfig), S(o->port_file), o->verbosity,
             (int)o->lookup_failure, (int)o->job_validation, o->lookup_timeout_ms, o->watch_idle_ms,
             o->leader_elect, o->lease_duration_ms, o->renew_deadline_ms, o->retry_period_ms,
             S(o->lease_ns), o->resync_period_ms, o->reconcile_workers, o->kube_api_qps,
             o->kube_api_burst, o->self_signed, S(o->service_name), S(o->webhook_config),
             o->ntls_sans, S(o->cert_secret), o->cert_validity_ms, o->ca_validity_ms,
             o->cert_renew_before_ms, o->cabundle_repair_ms, o->shutdown_grace_ms,
             o->max_connections, o->max_per_ip, o->idle_timeout_ms, o->request_timeout_ms,
             o->max_body_in_flight);
#undef S
}

/*
 * Every "(default X)" the help states, given as that flag's value, parses to the
 * options given by nothing at all: the help text cannot drift from the defaults.
 * Defaults that are not a value ("(default: none)", "(default $KUBECONFIG ...",
 * "none", a switch's "off") are skipped; the count pins how many are checked.
 */
START_TEST(test_help_states_the_defaults)
{
    char *help_argv[] = {"serve", "--help", NULL};
    char want[1024], want_ss[1024], want_cs[1024], got[1024];
    struct serve_options o;
    struct result help, r;
    char flag[64] = "";
    char *save = NULL;
    int checked = 0;

    parse_argv(&o, &help, help_argv);
    ck_assert_int_eq(help.rc, SERVE_FLAGS_HELP);
    PARSE(&o, &r, "--insecure-http");
    assert_ok(&r);
    options_text(&o, want, sizeof(want));
    result_free(&r);
    PARSE(&o, &r, "--self-signed");
    assert_ok(&r);
    options_text(&o, want_ss, sizeof(want_ss));
    result_free(&r);
    PARSE(&o, &r, "--cert-secret", "s");
    assert_ok(&r);
    options_text(&o, want_cs, sizeof(want_cs));
    result_free(&r);
    for (char *line = strtok_r(help.out, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char *d, *f = strstr(line, "--");
        char value[128];
        bool self_signed, managed;
        size_t n;

        /* A flag's own line names it ("  --port N ...", "  -v, --v N ..."). */
        if (strncmp(line, "  -", 3) == 0 && f != NULL) {
            n = strcspn(f, " =[");
            snprintf(flag, sizeof(flag), "%.*s", (int)n, f);
        }
        d = strstr(line, "(default ");
        if (d == NULL || flag[0] == '\0')
            continue;
        d += strlen("(default ");
        /* "::" is an address, not the colon of "(default: none)" */
        n = d[0] == ':' && d[1] == ':' ? strcspn(d, " )") : strcspn(d, " :)");
        if (n == 0 || n >= sizeof(value) || (d[n] != ')' && d[n] != ':') || d[0] == '$')
            continue;
        /* --FLAG=VALUE, the one form getopt_long takes for optional values too */
        snprintf(value, sizeof(value), "%s=%.*s", flag, (int)n, d);
        if (strcmp(d, "none)") == 0 || strcmp(d, "off)") == 0) /* a switch, or no value */
            continue;
        /* --service-name and --webhook-config-name need --self-signed */
        self_signed =
            strcmp(flag, "--service-name") == 0 || strcmp(flag, "--webhook-config-name") == 0;
        /* --cert-validity, --ca-validity, --cert-renew-before, --cabundle-repair-interval */
        managed = strncmp(flag, "--cert-", 7) == 0 || strcmp(flag, "--ca-validity") == 0
            || strcmp(flag, "--cabundle-repair-interval") == 0;
        if (managed)
            parse_argv(&o, &r, (char *[]){"serve", "--cert-secret", "s", value, NULL});
        else
            parse_argv(&o, &r,
                       (char *[]){"serve", self_signed ? "--self-signed" : "--insecure-http", value,
                                  NULL});
        assert_ok(&r);
        options_text(&o, got, sizeof(got));
        ck_assert_msg(strcmp(got,
                             managed           ? want_cs
                                 : self_signed ? want_ss
                                               : want)
                          == 0,
                      "%s (the help's default) gives\n%s\nnot\n%s", value, got,
                      managed           ? want_cs
                          : self_signed ? want_ss
                                        : want);
        result_free(&r);
        checked++;
    }
    /* bind, port, service and config names, the four --cert-secret durations, lookup
     * failure and timeout, leader-elect and its three durations, resync, workers, qps,
     * burst, -v, grace, connections, per-ip, idle and request timeouts, body bytes in flight */
    ck_assert_int_eq(checked, 26);
    result_free(&help);
}
END_TEST

static Suite *serve_flags_suite(void)
{
    Suite *s = suite_create("serve_flags");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_every_flag);
    tcase_add_test(tc, test_self_signed_flags);
    tcase_add_test(tc, test_cert_secret_flags);
    tcase_add_loop_test(tc, test_cert_durations, 0,
                        (int)(sizeof(cert_durations) / sizeof(cert_durations[0])));
    tcase_add_loop_test(tc, test_bad_cert_values, 0,
                        (int)(sizeof(bad_cert_values) / sizeof(bad_cert_values[0])));
    tcase_add_loop_test(tc, test_durations, 0, (int)(sizeof(durations) / sizeof(durations[0])));
    tcase_add_loop_test(tc, test_bad_values, 0, (int)(sizeof(bad_values) / sizeof(bad_values[0])));
    tcase_add_test(tc, test_integer_bounds);
    tcase_add_test(tc, test_verbosity_forms);
    tcase_add_test(tc, test_leader_elect_bool);
    tcase_add_test(tc, test_unknown_and_missing);
    tcase_add_test(tc, test_help);
    tcase_add_test(tc, test_namespaces);
    tcase_add_loop_test(tc, test_bad_namespaces, 0,
                        (int)(sizeof(bad_namespaces) / sizeof(bad_namespaces[0])));
    tcase_add_test(tc, test_help_states_the_defaults);
    tcase_add_test(tc, test_combinations);
    tcase_add_test(tc, test_parse_twice);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(serve_flags_suite());
}
