/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_selfsigned.c - `serve --self-signed`'s certificate: the Service's names in
 * the in-memory certificate (strict, SAN-only verification).
 */
#include <check.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certs/certs.h"
#include "certs/selfsigned.h"
#include "tests/certtest.h"
#include "tests/testutil.h"

START_TEST(test_generate_names)
{
    static const char *const extra[] = {"vpw.example.org", "10.0.0.9"};
    struct selfsigned_config cfg = {"vpw", "team-a", extra, 2, 2, CERTS_KEY_ECDSA_P256};
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct wh_error err = {0, ""};
    static const char *const good[] = {"vpw", "vpw.team-a", "vpw.team-a.svc",
                                       "vpw.team-a.svc.cluster.local", "vpw.example.org"};
    X509 *cac;
    X509 *lc;
    int day = -1;
    int sec = -1;

    ck_assert_msg(selfsigned_generate(&cfg, &ca, &leaf, &err) == 0, "%s", err.msg);
    cac = ct_pem_cert(ca.cert_pem);
    lc = ct_pem_cert(leaf.cert_pem);
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        ck_assert_msg(ct_verify(cac, lc, good[i], NULL) == X509_V_OK, "name %s", good[i]);
    ck_assert_int_eq(ct_verify(cac, lc, NULL, "10.0.0.9"), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, "vpw.default.svc", NULL), X509_V_ERR_HOSTNAME_MISMATCH);
    ck_assert_int_eq(ct_verify(cac, lc, "volcano-plugin-webhook.team-a.svc", NULL),
                     X509_V_ERR_HOSTNAME_MISMATCH);
    ck_assert_int_eq(ct_verify(cac, lc, NULL, "10.0.0.8"), X509_V_ERR_IP_ADDRESS_MISMATCH);
    /* cfg.days = 2: two days and the hour of clock-skew margin */
    ck_assert_int_eq(ASN1_TIME_diff(&day, &sec, X509_get0_notBefore(lc), X509_get0_notAfter(lc)),
                     1);
    ck_assert_int_eq(day, 2);
    ck_assert_int_eq(sec, 3600);
    X509_free(cac);
    X509_free(lc);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);
}
END_TEST

START_TEST(test_generate_bad_config)
{
    struct selfsigned_config cfg = {"", "ns", NULL, 0, 0, CERTS_KEY_ECDSA_P256};
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct wh_error err = {0, ""};
    char long_ns[300];

    ck_assert_int_eq(selfsigned_generate(&cfg, &ca, &leaf, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "self-signed: empty service name or namespace");
    cfg.service = "vpw";
    memset(long_ns, 'a', sizeof(long_ns) - 1);
    long_ns[sizeof(long_ns) - 1] = '\0';
    cfg.ns = long_ns;
    ck_assert_int_eq(selfsigned_generate(&cfg, &ca, &leaf, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "self-signed: service name and namespace too long");
    cfg.ns = "ns";
    cfg.nextra = SELFSIGNED_MAX_EXTRA + 1;
    ck_assert_int_eq(selfsigned_generate(&cfg, &ca, &leaf, &err), WH_EINVAL);
    ck_assert_ptr_null(ca.cert_pem);
    ck_assert_ptr_null(leaf.cert_pem);
}
END_TEST

static Suite *selfsigned_suite(void)
{
    Suite *s = suite_create("selfsigned");
    TCase *gen = tcase_create("generate");

    tcase_set_timeout(gen, 30);
    tcase_add_test(gen, test_generate_names);
    tcase_add_test(gen, test_generate_bad_config);
    suite_add_tcase(s, gen);
    return s;
}

int main(void)
{
    return tu_run(selfsigned_suite());
}
