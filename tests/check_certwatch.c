/*
 * check_certwatch.c - the TLS files watcher over a kubelet-style Secret volume
 * in a temporary directory: ..data symlink swaps reach apply with the new
 * pair, a mismatched pair or one apply refuses is counted as refused, a swap
 * to the same content does nothing, and certwatch_stop joins cleanly. Waits
 * poll for the expected state with a generous upper bound (no latency asserts).
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

#include "certs/certs.h"
#include "tests/testutil.h"
#include "webhook/certwatch.h"
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
#define WAIT_FOR(cond)                                                       \
    do {                                                                     \
        for (int w_ = 0; w_ < 1000 && !(cond); w_++)                         \
            usleep(10000);                                                   \
        ck_assert_msg((cond), "not within 10 s: %s", #cond);                 \
    } while (0)

START_TEST(test_kubelet_swaps)
{
    const char *const names[] = {"wh.ns.svc"};
    struct certs_pair ca[3], leaf[3];
    struct certwatch_config cfg = {NULL, NULL, 60000, 50};  /* inotify only: no polling */
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
    {
        char cmd[PATH_MAX + 16];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
        ck_assert_int_eq(system(cmd), 0);
    }
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
    struct certwatch_config cfg = {NULL, NULL, 100, 50};
    struct certwatch *w = NULL;
    struct wh_error err = {0, ""};
    char cert_file[PATH_MAX + 16];
    char key_file[PATH_MAX + 16];

    metrics_reset();
    applied = 0;
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
    write_file(key_file, leaf[1].key_pem, 0600);   /* half way: mismatched */
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

static Suite *certwatch_suite(void)
{
    Suite *s = suite_create("certwatch");
    TCase *tc = tcase_create("watch");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_kubelet_swaps);
    tcase_add_test(tc, test_poll_fallback_and_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(certwatch_suite());
}
