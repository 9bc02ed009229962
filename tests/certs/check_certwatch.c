/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_certwatch.c - the TLS files watcher over a kubelet-style Secret volume
 * in a temporary directory: ..data symlink swaps reach apply with the new
 * pair, a mismatched pair or one apply refuses is counted as refused, a swap
 * to the same content does nothing, and certwatch_stop joins cleanly. Waits
 * poll for the expected state with a generous upper bound (no latency asserts).
 * Expiry: certwatch_check_expiry's gauge and log lines at fixed "now" values
 * around a certificate of known notAfter; the gauge set on a reload and by the
 * periodic re-check; a chain whose second certificate expires first counts by
 * that one; a reload to an expired chain is refused.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "certs/certs.h"
#include "certs/certwatch.h"
#include "tests/certtest.h"
#include "tests/testutil.h"
#include "webhook/metrics.h"

/* What apply saw (the watcher thread writes, the test reads, under mu). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int applied;
static char last_cert[8192];
static bool refuse;

static int apply(void *userdata, const struct certs_pair *pair, struct wh_error *err)
{
    int rc = 0;

    ck_assert_ptr_eq(userdata, &mu);
    pthread_mutex_lock(&mu);
    applied++;
    if (refuse)
        rc = wh_error_set(err, WH_EINVAL, "refused by the test");
    else
        snprintf(last_cert, sizeof(last_cert), "%s", pair->cert_pem);
    pthread_mutex_unlock(&mu);
    return rc;
}

static int applied_now(void)
{
    int n;

    pthread_mutex_lock(&mu);
    n = applied;
    pthread_mutex_unlock(&mu);
    return n;
}

static bool cert_is(const char *pem)
{
    bool same;

    pthread_mutex_lock(&mu);
    same = strcmp(last_cert, pem) == 0;
    pthread_mutex_unlock(&mu);
    return same;
}

/* The rendered metrics contain sample (a whole line). */
static bool metrics_has(const char *sample)
{
    size_t len = 0;
    char *text = metrics_render(NULL, NULL, &len);
    bool found;

    ck_assert_ptr_nonnull(text);
    found = strstr(text, sample) != NULL;
    free(text);
    return found;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(path, mode), 0);
}

static char root[PATH_MAX];
static int version;

/* rm -rf the test's directory tree. */
static void remove_root(void)
{
    char cmd[PATH_MAX + 16];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    ck_assert_int_eq(system(cmd), 0);
}

/* The kubelet's atomic writer: new ..vN directory, ..data_tmp → rename over ..data. */
static void publish(const char *cert_pem, const char *key_pem)
{
    char dir[PATH_MAX + 32];
    char file[PATH_MAX + 64];
    char tmp[PATH_MAX + 32];
    char data[PATH_MAX + 32];
    char target[32];

    version++;
    snprintf(target, sizeof(target), "..v%d", version);
    snprintf(dir, sizeof(dir), "%s/%s", root, target);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(file, sizeof(file), "%s/tls.crt", dir);
    write_file(file, cert_pem, 0644);
    snprintf(file, sizeof(file), "%s/tls.key", dir);
    write_file(file, key_pem, 0600);
    snprintf(tmp, sizeof(tmp), "%s/..data_tmp", root);
    snprintf(data, sizeof(data), "%s/..data", root);
    ck_assert_int_eq(symlink(target, tmp), 0);
    ck_assert_int_eq(rename(tmp, data), 0);
    if (version == 1) {
        snprintf(file, sizeof(file), "%s/tls.crt", root);
        ck_assert_int_eq(symlink("..data/tls.crt", file), 0);
        snprintf(file, sizeof(file), "%s/tls.key", root);
        ck_assert_int_eq(symlink("..data/tls.key", file), 0);
    }
}

/* Wait up to 10 s for cond. */
#define WAIT_FOR(cond)                                                                             \
    do {                                                                                           \
        for (int w_ = 0; w_ < 1000 && !(cond); w_++)                                               \
            usleep(10000);                                                                         \
        ck_assert_msg((cond), "not within 10 s: %s", #cond);                                       \
    } while (0)

START_TEST(test_kubelet_swaps)
{
    const char *const names[] = {"wh.ns.svc"};
    struct certs_pair ca[3], leaf[3];
    struct certwatch_config cfg = {NULL, NULL, 60000, 50, 0}; /* inotify only: no polling */
    struct certwatch *w = NULL;
    struct wh_error err = {0, ""};
    char cert_file[PATH_MAX + 16];
    char key_file[PATH_MAX + 16];

    metrics_reset();
    applied = 0;
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(certs_generate(&ca[i], &leaf[i], CERTS_KEY_ECDSA_P256, names, 1, 1, NULL),
                         0);
    snprintf(root, sizeof(root), "/tmp/check_certwatch.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    publish(leaf[0].cert_pem, leaf[0].key_pem);
    snprintf(cert_file, sizeof(cert_file), "%s/tls.crt", root);
    snprintf(key_file, sizeof(key_file), "%s/tls.key", root);
    cfg.cert_file = cert_file;
    cfg.key_file = key_file;
    ck_assert_int_eq(certwatch_start(&w, &cfg, &leaf[0], apply, &mu, &err), 0);

    /* A new pair: applied, counted. */
    publish(leaf[1].cert_pem, leaf[1].key_pem);
    WAIT_FOR(applied_now() == 1);
    ck_assert(cert_is(leaf[1].cert_pem));
    WAIT_FOR(metrics_has("webhook_tls_reloads_total{result=\"ok\"} 1\n"));

    /* A key that does not match: refused before apply. */
    publish(leaf[2].cert_pem, leaf[1].key_pem);
    WAIT_FOR(metrics_has("webhook_tls_reloads_total{result=\"refused\"} 1\n"));

    /* The same content as in service: nothing; then a real change is applied (events are
     * handled in order, so the count proves the same-content swap did nothing). */
    publish(leaf[1].cert_pem, leaf[1].key_pem);
    publish(leaf[0].cert_pem, leaf[0].key_pem);
    WAIT_FOR(applied_now() == 2);
    ck_assert(cert_is(leaf[0].cert_pem));
    WAIT_FOR(metrics_has("webhook_tls_reloads_total{result=\"ok\"} 2\n"));
    ck_assert(metrics_has("webhook_tls_reloads_total{result=\"refused\"} 1\n"));

    /* apply refuses: counted as refused, and the same files are not retried. */
    pthread_mutex_lock(&mu);
    refuse = true;
    pthread_mutex_unlock(&mu);
    publish(leaf[2].cert_pem, leaf[2].key_pem);
    WAIT_FOR(metrics_has("webhook_tls_reloads_total{result=\"refused\"} 2\n"));
    ck_assert_int_eq(applied_now(), 3);

    certwatch_stop(w);
    certwatch_stop(NULL);
    ck_assert(metrics_has("webhook_tls_reloads_total{result=\"ok\"} 2\n"));
    for (int i = 0; i < 3; i++) {
        certs_pair_dispose(&ca[i]);
        certs_pair_dispose(&leaf[i]);
    }
    remove_root();
}
END_TEST

/*
 * Files written in place (no symlink swap) with a short stat period: a key
 * written before its certificate is a mismatched pair at first, retried once
 * the certificate changes too; a missing file is refused and its return
 * applied. Also certwatch_start's argument errors.
 */
START_TEST(test_poll_fallback_and_errors)
{
    const char *const names[] = {"wh.ns.svc"};
    struct certs_pair ca[2], leaf[2];
    struct certwatch_config cfg = {NULL, NULL, 100, 50, 0};
    struct certwatch *w = NULL;
    struct wh_error err = {0, ""};
    char cert_file[PATH_MAX + 16];
    char key_file[PATH_MAX + 16];

    metrics_reset();
    applied = 0;
    refuse = false; /* test_kubelet_swaps leaves it set (matters with CK_FORK=no) */
    ck_assert_int_eq(certwatch_start(&w, &cfg, NULL, apply, NULL, &err), WH_EINVAL);
    ck_assert_ptr_null(w);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(certs_generate(&ca[i], &leaf[i], CERTS_KEY_ECDSA_P256, names, 1, 1, NULL),
                         0);
    snprintf(root, sizeof(root), "/tmp/check_certwatch.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(cert_file, sizeof(cert_file), "%s/tls.crt", root);
    snprintf(key_file, sizeof(key_file), "%s/tls.key", root);
    write_file(cert_file, leaf[0].cert_pem, 0644);
    write_file(key_file, leaf[0].key_pem, 0600);
    cfg.cert_file = cert_file;
    cfg.key_file = key_file;
    ck_assert_int_eq(certwatch_start(&w, &cfg, &leaf[0], apply, &mu, &err), 0);
    write_file(key_file, leaf[1].key_pem, 0600); /* half way: mismatched */
    write_file(cert_file, leaf[1].cert_pem, 0644);
    WAIT_FOR(applied_now() == 1);
    ck_assert(cert_is(leaf[1].cert_pem));
    /* A missing file is refused, the old pair stays; its return is applied. */
    ck_assert_int_eq(unlink(key_file), 0);
    WAIT_FOR(metrics_has("webhook_tls_reloads_total{result=\"refused\"} 1\n")
             || metrics_has("webhook_tls_reloads_total{result=\"refused\"} 2\n"));
    write_file(key_file, leaf[0].key_pem, 0600);
    write_file(cert_file, leaf[0].cert_pem, 0644);
    WAIT_FOR(applied_now() == 2);
    ck_assert(cert_is(leaf[0].cert_pem));
    certwatch_stop(w);
    for (int i = 0; i < 2; i++) {
        certs_pair_dispose(&ca[i]);
        certs_pair_dispose(&leaf[i]);
    }
    unlink(cert_file);
    unlink(key_file);
    rmdir(root);
}
END_TEST

/* A self-signed P-256 certificate (PEM, malloc'd) whose notAfter is 2035-01-01T00:00:00Z,
 * made with OpenSSL alone. */
#define FIXED_NOT_AFTER 2051222400LL /* date -u -d 2035-01-01 +%s */
static char *fixed_cert(void)
{
    struct ct_cert t = {
        .cn = "fixed", .serial = 1, .not_before_s = -3600, .not_after = "20350101000000Z"};
    struct certs_pair p = {NULL, NULL};
    char *pem;

    ct_make_cert(&p, &t);
    pem = p.cert_pem;
    p.cert_pem = NULL;
    certs_pair_dispose(&p);
    return pem;
}

/* certwatch_check_expiry(pem, now) with stderr in a temporary file: its return and
 * what it logged (malloc'd). */
static char *check_expiry_logged(const char *pem, long long now, int *rc)
{
    struct wh_error err = {0, ""};
    struct tu_stderr c;

    tu_stderr_begin(&c);
    *rc = certwatch_check_expiry(pem, now, &err);
    return tu_stderr_end(&c);
}

#define GAUGE "webhook_tls_certificate_expiry_timestamp_seconds "

START_TEST(test_check_expiry_lines)
{
    char *pem = fixed_cert();
    char *chain;
    char *log;
    size_t n;
    int rc = -1;
    const long long t = FIXED_NOT_AFTER;
    const char *warn9 = "\"level\":\"warn\",\"msg\":\"tls: serving certificate expires soon\","
                        "\"not_after\":\"2035-01-01T00:00:00Z\",\"days_left\":\"9\"}\n";

    metrics_reset();
    /* 40 days left, and exactly 30: the gauge, no line. */
    log = check_expiry_logged(pem, t - 40 * 86400LL, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(log, "");
    free(log);
    ck_assert(metrics_has("\n" GAUGE "2051222400\n"));
    log = check_expiry_logged(pem, t - 30 * 86400LL, &rc);
    ck_assert_str_eq(log, "");
    free(log);
    /* One second under 30 days: warn, whole days rounded down. */
    log = check_expiry_logged(pem, t - 30 * 86400LL + 1, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(strstr(log, "\"days_left\":\"29\"}\n"));
    ck_assert_ptr_nonnull(strstr(log, "\"level\":\"warn\""));
    free(log);
    /* 9.5 days: the whole line after its time; one line. */
    log = check_expiry_logged(pem, t - 9 * 86400LL - 43200, &rc);
    ck_assert_msg(strstr(log, warn9) != NULL, "%s", log);
    ck_assert_ptr_eq(strchr(log, '\n'), log + strlen(log) - 1);
    free(log);
    /* A chain: its first certificate counts. */
    n = 2 * strlen(pem) + 1;
    chain = malloc(n);
    snprintf(chain, n, "%s%s", pem, pem);
    log = check_expiry_logged(chain, t - 9 * 86400LL - 43200, &rc);
    ck_assert_msg(strstr(log, warn9) != NULL, "%s", log);
    free(log);
    free(chain);
    /* notAfter itself is still valid (RFC 5280): warn, 0 days left. */
    log = check_expiry_logged(pem, t, &rc);
    ck_assert_ptr_nonnull(strstr(log, "\"level\":\"warn\""));
    ck_assert_ptr_nonnull(strstr(log, "\"days_left\":\"0\"}\n"));
    free(log);
    /* After it: error, whole days ago. */
    log = check_expiry_logged(pem, t + 3 * 86400LL + 5, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(strstr(log,
                         "\"level\":\"error\",\"msg\":\"tls: serving certificate "
                         "expired\",\"not_after\":\"2035-01-01T00:00:00Z\","
                         "\"days_ago\":\"3\"}\n")
                      != NULL,
                  "%s", log);
    free(log);
    ck_assert(metrics_has("\n" GAUGE "2051222400\n"));
    /* No certificate: an error, nothing logged, the gauge untouched. */
    metrics_reset();
    log = check_expiry_logged("not a certificate", t, &rc);
    ck_assert_int_eq(rc, WH_EINVAL);
    ck_assert_str_eq(log, "");
    free(log);
    ck_assert(!metrics_has(GAUGE));
    free(pem);
}
END_TEST

/* The gauge follows the pair in service: set by a reload, and by the periodic re-check
 * of a pair that did not change. */
START_TEST(test_expiry_gauge_reload_and_recheck)
{
    const char *const names[] = {"wh.ns.svc"};
    struct certs_pair ca[2], leaf[2];
    struct certwatch_config cfg = {NULL, NULL, 60000, 50, 0}; /* re-check: a day */
    struct certwatch *w = NULL;
    struct wh_error err = {0, ""};
    char cert_file[PATH_MAX + 16];
    char key_file[PATH_MAX + 16];
    char want[2][96];

    metrics_reset();
    applied = 0;
    refuse = false;
    version = 0;
    for (int i = 0; i < 2; i++) {
        long long t = 0;

        /* 1 and 3 days: notAfters two days apart */
        ck_assert_int_eq(
            certs_generate(&ca[i], &leaf[i], CERTS_KEY_ECDSA_P256, names, 1, 1 + 2 * i, NULL), 0);
        ck_assert_int_eq(certs_not_after(leaf[i].cert_pem, &t, NULL), 0);
        snprintf(want[i], sizeof(want[i]), "\n" GAUGE "%lld\n", t);
    }
    snprintf(root, sizeof(root), "/tmp/check_certwatch.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    publish(leaf[0].cert_pem, leaf[0].key_pem);
    snprintf(cert_file, sizeof(cert_file), "%s/tls.crt", root);
    snprintf(key_file, sizeof(key_file), "%s/tls.key", root);
    cfg.cert_file = cert_file;
    cfg.key_file = key_file;
    ck_assert_int_eq(certwatch_start(&w, &cfg, &leaf[0], apply, &mu, &err), 0);
    publish(leaf[1].cert_pem, leaf[1].key_pem);
    WAIT_FOR(applied_now() == 1);
    WAIT_FOR(metrics_has(want[1]));
    ck_assert(!metrics_has(want[0])); /* serve sets the start pair's, not certwatch */
    certwatch_stop(w);

    /* Same files, nothing to reload: the re-check (every 100 ms here) sets it. */
    metrics_reset();
    cfg.poll_ms = 20;
    cfg.expiry_check_ms = 100;
    ck_assert_int_eq(certwatch_start(&w, &cfg, &leaf[1], apply, &mu, &err), 0);
    WAIT_FOR(metrics_has(want[1]));
    ck_assert_int_eq(applied_now(), 1);
    certwatch_stop(w);
    for (int i = 0; i < 2; i++) {
        certs_pair_dispose(&ca[i]);
        certs_pair_dispose(&leaf[i]);
    }
    remove_root();
}
END_TEST

/* A self-signed P-256 certificate and its key (PEM, malloc'd) with notAfter given as
 * ASN.1 text ("20200101000000Z"), made with OpenSSL alone. */
static void dated_pair(struct certs_pair *out, const char *not_after)
{
    struct ct_cert t = {
        .cn = "dated", .serial = 1, .not_before_s = -86400L * 3000, .not_after = not_after};

    ct_make_cert(out, &t);
}

/* A chain whose second certificate expires before the leaf: the gauge and the lines
 * use the earliest notAfter and name its position. */
START_TEST(test_check_expiry_chain)
{
    struct certs_pair leaf = {NULL, NULL};
    struct certs_pair mid = {NULL, NULL};
    char *chain;
    char *log;
    size_t n;
    int rc = -1;
    const long long t = FIXED_NOT_AFTER; /* the second certificate's */

    metrics_reset();
    dated_pair(&leaf, "20400101000000Z");
    dated_pair(&mid, "20350101000000Z");
    n = strlen(leaf.cert_pem) + strlen(mid.cert_pem) + 1;
    chain = malloc(n);
    ck_assert_ptr_nonnull(chain);
    snprintf(chain, n, "%s%s", leaf.cert_pem, mid.cert_pem);
    /* 40 days before the intermediate's end (years before the leaf's): no line. */
    log = check_expiry_logged(chain, t - 40 * 86400LL, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(log, "");
    free(log);
    ck_assert(metrics_has("\n" GAUGE "2051222400\n"));
    log = check_expiry_logged(chain, t - 9 * 86400LL - 43200, &rc);
    ck_assert_msg(strstr(log,
                         "\"level\":\"warn\",\"msg\":\"tls: serving certificate expires "
                         "soon\",\"not_after\":\"2035-01-01T00:00:00Z\",\"days_left\":\"9\","
                         "\"chain_index\":\"1\"}\n")
                      != NULL,
                  "%s", log);
    free(log);
    log = check_expiry_logged(chain, t + 86400LL, &rc);
    ck_assert_msg(strstr(log,
                         "\"level\":\"error\",\"msg\":\"tls: serving certificate expired\","
                         "\"not_after\":\"2035-01-01T00:00:00Z\",\"days_ago\":\"1\","
                         "\"chain_index\":\"1\"}\n")
                      != NULL,
                  "%s", log);
    free(log);
    free(chain);
    certs_pair_dispose(&leaf);
    certs_pair_dispose(&mid);
}
END_TEST

/* A swap to an expired certificate is refused (the old pair stays, counted, logged with
 * the reason); one to a valid pair afterwards is applied. certwatch_start itself takes an
 * expired pair as it is (serve logs it). */
START_TEST(test_reload_refuses_expired)
{
    const char *const names[] = {"wh.ns.svc"};
    struct certs_pair ca = {NULL, NULL}, leaf = {NULL, NULL};
    struct certs_pair expired = {NULL, NULL}, chain = {NULL, NULL};
    struct certs_pair valid = {NULL, NULL};
    struct certwatch_config cfg = {NULL, NULL, 60000, 50, 0};
    struct certwatch *w = NULL;
    struct wh_error err = {0, ""};
    char cert_file[PATH_MAX + 16];
    char key_file[PATH_MAX + 16];
    char want[2 * PATH_MAX + 256];
    FILE *tmp = tmpfile();
    int saved = dup(STDERR_FILENO);
    char *log = calloc(1, 16384);
    size_t n;

    ck_assert_ptr_nonnull(tmp);
    ck_assert_ptr_nonnull(log);
    metrics_reset();
    applied = 0;
    refuse = false;
    version = 0;
    ck_assert_int_eq(certs_generate(&ca, &leaf, CERTS_KEY_ECDSA_P256, names, 1, 30, NULL), 0);
    dated_pair(&expired, "20200101000000Z");
    dated_pair(&valid, "20400101000000Z");
    /* A valid leaf followed by an expired certificate: the chain has expired too. */
    n = strlen(valid.cert_pem) + strlen(expired.cert_pem) + 1;
    chain.cert_pem = malloc(n);
    ck_assert_ptr_nonnull(chain.cert_pem);
    snprintf(chain.cert_pem, n, "%s%s", valid.cert_pem, expired.cert_pem);
    snprintf(root, sizeof(root), "/tmp/check_certwatch.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    publish(leaf.cert_pem, leaf.key_pem);
    snprintf(cert_file, sizeof(cert_file), "%s/tls.crt", root);
    snprintf(key_file, sizeof(key_file), "%s/tls.key", root);
    cfg.cert_file = cert_file;
    cfg.key_file = key_file;
    fflush(stderr);
    dup2(fileno(tmp), STDERR_FILENO);
    ck_assert_int_eq(certwatch_start(&w, &cfg, &leaf, apply, &mu, &err), 0);
    publish(expired.cert_pem, expired.key_pem);
    WAIT_FOR(metrics_has("webhook_tls_reloads_total{result=\"refused\"} 1\n"));
    publish(chain.cert_pem, valid.key_pem);
    WAIT_FOR(metrics_has("webhook_tls_reloads_total{result=\"refused\"} 2\n"));
    ck_assert_int_eq(applied_now(), 0);
    publish(valid.cert_pem, valid.key_pem);
    WAIT_FOR(applied_now() == 1);
    ck_assert(cert_is(valid.cert_pem));
    certwatch_stop(w);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    n = fread(log, 1, 16383, tmp);
    log[n] = '\0';
    fclose(tmp);
    snprintf(want, sizeof(want),
             "\"level\":\"warn\",\"msg\":\"tls: new pair refused, serving "
             "the old one\",\"cert_file\":\"%s\",\"key_file\":\"%s\",\"err\":\"certificate "
             "expired at 2020-01-01T00:00:00Z\"}\n",
             cert_file, key_file);
    ck_assert_msg(strstr(log, want) != NULL, "%s", log);
    ck_assert_msg(strstr(log,
                         "\"err\":\"chain certificate 1 expired at "
                         "2020-01-01T00:00:00Z\"}\n")
                      != NULL,
                  "%s", log);
    ck_assert(metrics_has("webhook_tls_reloads_total{result=\"ok\"} 1\n"));
    ck_assert(metrics_has("webhook_tls_reloads_total{result=\"refused\"} 2\n"));
    free(log);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);
    certs_pair_dispose(&expired);
    certs_pair_dispose(&valid);
    certs_pair_dispose(&chain);
    remove_root();
}
END_TEST

static Suite *certwatch_suite(void)
{
    Suite *s = suite_create("certwatch");
    TCase *tc = tcase_create("watch");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_kubelet_swaps);
    tcase_add_test(tc, test_poll_fallback_and_errors);
    tcase_add_test(tc, test_check_expiry_lines);
    tcase_add_test(tc, test_expiry_gauge_reload_and_recheck);
    tcase_add_test(tc, test_check_expiry_chain);
    tcase_add_test(tc, test_reload_refuses_expired);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(certwatch_suite());
}
