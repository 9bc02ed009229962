/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_certs.c - certs_generate checked with OpenSSL's own verifier in strict
 * mode, host names from the SAN only (the CN is never consulted, as Go's
 * crypto/x509 does): chain, IP SAN, EKU, CA flags, algorithms (ECDSA P-256 and
 * RSA-2048), validity; certs_base64; certs_load_pair on good / mismatched /
 * garbage / missing files; the gen-certs subcommand end to end in a temporary
 * directory, with its Secret manifest (parsed with k8s/yaml.h) and caBundle.
 * certs_not_after against certificates of known dates; certs_generate_leaf
 * under an existing CA (chain, SANs, notAfter cap, refused CAs) and
 * gen-certs --ca-cert/--ca-key.
 */
#include <check.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "certs/certs.h"
#include "k8s/yaml.h"
#include "tests/certtest.h"
#include "tests/testutil.h"
#include "webhook/commands.h"

static const char *const sans[] = {"wh",        "wh.ns", "wh.ns.svc", "wh.ns.svc.cluster.local",
                                   "127.0.0.1", "::1"};
#define NSANS (sizeof(sans) / sizeof(sans[0]))

START_TEST(test_generate_verifies)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct wh_error err = {0, ""};
    X509 *cac;
    X509 *lc;

    ck_assert_int_eq(certs_generate(&ca, &leaf, CERTS_KEY_ECDSA_P256, sans, NSANS, 30, &err), 0);
    cac = ct_pem_cert(ca.cert_pem);
    lc = ct_pem_cert(leaf.cert_pem);
    for (size_t i = 0; i < 4; i++)
        ck_assert_msg(ct_verify(cac, lc, sans[i], NULL) == X509_V_OK, "name %s", sans[i]);
    ck_assert_int_eq(ct_verify(cac, lc, "127.0.0.1", NULL), X509_V_ERR_HOSTNAME_MISMATCH);
    ck_assert_int_eq(ct_verify(cac, lc, NULL, "127.0.0.1"), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, NULL, "::1"), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, NULL, "127.0.0.2"), X509_V_ERR_IP_ADDRESS_MISMATCH);
    ck_assert_int_eq(ct_verify(cac, lc, "other.ns.svc", NULL), X509_V_ERR_HOSTNAME_MISMATCH);
    ck_assert_int_eq(ct_verify(cac, lc, "wh.other.svc", NULL), X509_V_ERR_HOSTNAME_MISMATCH);
    /* The CA cannot serve: its key usage lacks serverAuth purpose for a leaf. */
    ck_assert_int_ne(ct_verify(cac, cac, "wh.ns.svc", NULL), X509_V_OK);
    X509_free(cac);
    X509_free(lc);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);
    certs_pair_dispose(&leaf); /* twice is safe */
}
END_TEST

/* A leaf of another CA does not verify. */
START_TEST(test_other_ca_fails)
{
    struct certs_pair ca1 = {NULL, NULL}, leaf1 = {NULL, NULL};
    struct certs_pair ca2 = {NULL, NULL}, leaf2 = {NULL, NULL};
    X509 *c2;
    X509 *l1;

    ck_assert_int_eq(certs_generate(&ca1, &leaf1, CERTS_KEY_ECDSA_P256, sans, 1, 1, NULL), 0);
    ck_assert_int_eq(certs_generate(&ca2, &leaf2, CERTS_KEY_ECDSA_P256, sans, 1, 1, NULL), 0);
    c2 = ct_pem_cert(ca2.cert_pem);
    l1 = ct_pem_cert(leaf1.cert_pem);
    ck_assert_int_eq(ct_verify(c2, l1, "wh", NULL), X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
    X509_free(c2);
    X509_free(l1);
    certs_pair_dispose(&ca1);
    certs_pair_dispose(&leaf1);
    certs_pair_dispose(&ca2);
    certs_pair_dispose(&leaf2);
}
END_TEST

static int ext_critical(X509 *x, int nid)
{
    int idx = X509_get_ext_by_NID(x, nid, -1);

    ck_assert_int_ge(idx, 0);
    return X509_EXTENSION_get_critical(X509_get_ext(x, idx));
}

START_TEST(test_generate_fields)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    X509 *cac;
    X509 *lc;
    EVP_PKEY *lk;
    EVP_PKEY *pub;
    char group[32];
    size_t glen = 0;
    int day = -1;
    int sec = -1;
    BIGNUM *s1;
    BIGNUM *s2;

    ck_assert_int_eq(certs_generate(&ca, &leaf, CERTS_KEY_ECDSA_P256, sans, NSANS, 30, NULL), 0);
    cac = ct_pem_cert(ca.cert_pem);
    lc = ct_pem_cert(leaf.cert_pem);
    lk = ct_pem_key(leaf.key_pem);
    ck_assert_ptr_nonnull(strstr(leaf.key_pem, "-----BEGIN PRIVATE KEY-----"));

    /* CA flags: the CA is one, the leaf is not. */
    ck_assert_int_eq(X509_check_ca(cac), 1);
    ck_assert_int_eq(X509_check_ca(lc), 0);
    ck_assert_int_eq(ext_critical(cac, NID_basic_constraints), 1);
    ck_assert_int_eq(ext_critical(lc, NID_basic_constraints), 1);
    ck_assert_int_eq(ext_critical(lc, NID_key_usage), 1);
    ck_assert_uint_eq(X509_get_key_usage(lc), KU_DIGITAL_SIGNATURE);
    ck_assert_uint_eq(X509_get_key_usage(cac),
                      KU_KEY_CERT_SIGN | KU_CRL_SIGN | KU_DIGITAL_SIGNATURE);
    ck_assert_uint_eq(X509_get_extended_key_usage(lc), XKU_SSL_SERVER);
    ck_assert_int_eq(X509_get_ext_by_NID(cac, NID_ext_key_usage, -1), -1);
    /* Key identifiers chain leaf → CA. */
    ck_assert_ptr_nonnull(X509_get0_subject_key_id(cac));
    ck_assert_ptr_nonnull(X509_get0_subject_key_id(lc));
    ck_assert_int_eq(
        ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(lc), X509_get0_subject_key_id(cac)), 0);
    /* ECDSA P-256 with SHA-256. */
    ck_assert_int_eq(X509_get_signature_nid(lc), NID_ecdsa_with_SHA256);
    ck_assert_int_eq(X509_get_signature_nid(cac), NID_ecdsa_with_SHA256);
    pub = X509_get0_pubkey(lc);
    ck_assert_int_eq(EVP_PKEY_get_base_id(pub), EVP_PKEY_EC);
    ck_assert_int_eq(EVP_PKEY_get_utf8_string_param(pub, "group", group, sizeof(group), &glen), 1);
    ck_assert_str_eq(group, "prime256v1");
    ck_assert_int_eq(X509_check_private_key(lc, lk), 1);
    /* Validity: one hour back, `days` days forward: 30 days + 3600 s in all. */
    ck_assert_int_eq(ASN1_TIME_diff(&day, &sec, X509_get0_notBefore(lc), X509_get0_notAfter(lc)),
                     1);
    ck_assert_int_eq(day, 30);
    ck_assert_int_eq(sec, 3600);
    /* Serials: positive, random, at most 128 bits, different per certificate. */
    s1 = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cac), NULL);
    s2 = ASN1_INTEGER_to_BN(X509_get0_serialNumber(lc), NULL);
    ck_assert_int_eq(BN_is_negative(s1), 0);
    ck_assert_int_le(BN_num_bits(s1), 128);
    ck_assert_int_le(BN_num_bits(s2), 128);
    ck_assert_int_ne(BN_cmp(s1, s2), 0);
    BN_free(s1);
    BN_free(s2);
    EVP_PKEY_free(lk);
    X509_free(cac);
    X509_free(lc);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);
}
END_TEST

START_TEST(test_generate_bad_args)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct wh_error err = {0, ""};
    const char *const empty[] = {""};

    ck_assert_int_eq(certs_generate(&ca, &leaf, CERTS_KEY_ECDSA_P256, sans, 0, 30, &err),
                     WH_EINVAL);
    ck_assert_str_eq(err.msg, "no subjectAltName given");
    ck_assert_int_eq(certs_generate(&ca, &leaf, CERTS_KEY_ECDSA_P256, sans, 1, 0, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "days 0 out of range 1..36500");
    ck_assert_int_eq(certs_generate(&ca, &leaf, CERTS_KEY_ECDSA_P256, empty, 1, 1, &err),
                     WH_EINVAL);
    ck_assert_str_eq(err.msg, "empty subjectAltName");
    ck_assert_int_eq(certs_generate(&ca, &leaf, (enum certs_key_type)7, sans, 1, 1, &err),
                     WH_EINVAL);
    ck_assert_str_eq(err.msg, "unknown key type 7");
    ck_assert_ptr_null(ca.cert_pem);
    ck_assert_ptr_null(leaf.key_pem);
}
END_TEST

/* RSA-2048: every SAN verifies (strict, SAN only); RSA keys, SHA-256 signatures. */
START_TEST(test_generate_rsa)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct wh_error err = {0, ""};
    X509 *cac;
    X509 *lc;
    EVP_PKEY *lk;

    ck_assert_msg(certs_generate(&ca, &leaf, CERTS_KEY_RSA_2048, sans, NSANS, 30, &err) == 0, "%s",
                  err.msg);
    cac = ct_pem_cert(ca.cert_pem);
    lc = ct_pem_cert(leaf.cert_pem);
    lk = ct_pem_key(leaf.key_pem);
    for (size_t i = 0; i < 4; i++)
        ck_assert_msg(ct_verify(cac, lc, sans[i], NULL) == X509_V_OK, "name %s", sans[i]);
    ck_assert_int_eq(ct_verify(cac, lc, NULL, "127.0.0.1"), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, NULL, "::1"), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, "wh.other.svc", NULL), X509_V_ERR_HOSTNAME_MISMATCH);
    ck_assert_int_ne(ct_verify(cac, cac, "wh.ns.svc", NULL), X509_V_OK);
    ck_assert_int_eq(EVP_PKEY_get_base_id(X509_get0_pubkey(lc)), EVP_PKEY_RSA);
    ck_assert_int_eq(EVP_PKEY_get_bits(X509_get0_pubkey(lc)), 2048);
    ck_assert_int_eq(EVP_PKEY_get_base_id(X509_get0_pubkey(cac)), EVP_PKEY_RSA);
    ck_assert_int_eq(EVP_PKEY_get_bits(X509_get0_pubkey(cac)), 2048);
    ck_assert_int_eq(X509_get_signature_nid(lc), NID_sha256WithRSAEncryption);
    ck_assert_int_eq(X509_get_signature_nid(cac), NID_sha256WithRSAEncryption);
    ck_assert_uint_eq(X509_get_key_usage(lc), KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT);
    ck_assert_uint_eq(X509_get_extended_key_usage(lc), XKU_SSL_SERVER);
    ck_assert_int_eq(X509_check_ca(lc), 0);
    ck_assert_int_eq(X509_check_private_key(lc, lk), 1);
    ck_assert_ptr_nonnull(strstr(leaf.key_pem, "-----BEGIN PRIVATE KEY-----"));
    EVP_PKEY_free(lk);
    X509_free(cac);
    X509_free(lc);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);
}
END_TEST

/* RFC 4648 section 10 test vectors; one line however long. */
START_TEST(test_base64)
{
    static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const want[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                       "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    char big[3000];
    char *b;

    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        b = certs_base64(in[i], strlen(in[i]));
        ck_assert_ptr_nonnull(b);
        ck_assert_str_eq(b, want[i]);
        free(b);
    }
    memset(big, 0xff, sizeof(big));
    b = certs_base64(big, sizeof(big));
    ck_assert_uint_eq(strlen(b), 4000);
    ck_assert_ptr_null(strchr(b, '\n'));
    ck_assert_int_eq(strspn(b, "/"), 4000);
    free(b);
}
END_TEST

/* A scratch directory per test (Check forks each test). */
static char tmpdir[64];

static void tmp_setup(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_certs.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tmp_teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmpdir);
}

static const char *tmp_path(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
    return buf;
}

static void put(const char *name, const char *text)
{
    char p[128];
    FILE *f = fopen(tmp_path(name, p, sizeof(p)), "w");

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

static int load(struct certs_pair *p, const char *cert, const char *key, struct wh_error *err)
{
    char a[128];
    char b[128];

    return certs_load_pair(p, tmp_path(cert, a, sizeof(a)), tmp_path(key, b, sizeof(b)), err);
}

START_TEST(test_load_pair)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct certs_pair got = {NULL, NULL};
    struct wh_error err = {0, ""};
    char want[256];
    char *chain;
    size_t n;

    ck_assert_int_eq(certs_generate(&ca, &leaf, CERTS_KEY_ECDSA_P256, sans, NSANS, 30, NULL), 0);
    put("tls.crt", leaf.cert_pem);
    put("tls.key", leaf.key_pem);
    put("ca.key", ca.key_pem);
    put("garbage", "this is not PEM\n\x01\x02\xff");
    put("empty", "");
    n = strlen(leaf.cert_pem) + strlen(ca.cert_pem) + 1;
    chain = malloc(n);
    snprintf(chain, n, "%s%s", leaf.cert_pem, ca.cert_pem);
    put("chain.crt", chain);

    /* Matching pair: the cert comes back as read, the key as PKCS#8. */
    ck_assert_int_eq(load(&got, "tls.crt", "tls.key", &err), 0);
    ck_assert_str_eq(got.cert_pem, leaf.cert_pem);
    ck_assert_str_eq(got.key_pem, leaf.key_pem);
    certs_pair_dispose(&got);

    /* A chain file keeps both certificates, leaf first. */
    ck_assert_int_eq(load(&got, "chain.crt", "tls.key", &err), 0);
    ck_assert_str_eq(got.cert_pem, chain);
    certs_pair_dispose(&got);

    /* Key of another certificate. */
    ck_assert_int_eq(load(&got, "tls.crt", "ca.key", &err), WH_EINVAL);
    snprintf(want, sizeof(want),
             "%s/ca.key: private key does not match the certificate in %s/tls.crt", tmpdir, tmpdir);
    ck_assert_str_eq(err.msg, want);
    ck_assert_ptr_null(got.cert_pem);

    /* Garbage or empty certificate file. */
    ck_assert_int_eq(load(&got, "garbage", "tls.key", &err), WH_EINVAL);
    snprintf(want, sizeof(want), "%s/garbage: no PEM certificate found", tmpdir);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(load(&got, "empty", "tls.key", &err), WH_EINVAL);
    snprintf(want, sizeof(want), "%s/empty: no PEM certificate found", tmpdir);
    ck_assert_str_eq(err.msg, want);

    /* Garbage key file; a certificate where the key should be. */
    ck_assert_int_eq(load(&got, "tls.crt", "garbage", &err), WH_EINVAL);
    snprintf(want, sizeof(want), "%s/garbage: no unencrypted PEM private key found", tmpdir);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(load(&got, "tls.crt", "tls.crt", &err), WH_EINVAL);

    /* Missing files are named. */
    ck_assert_int_eq(load(&got, "nope.crt", "tls.key", &err), WH_ERROR);
    snprintf(want, sizeof(want), "cannot read %s/nope.crt: No such file or directory", tmpdir);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(load(&got, "tls.crt", "nope.key", &err), WH_ERROR);
    snprintf(want, sizeof(want), "cannot read %s/nope.key: No such file or directory", tmpdir);
    ck_assert_str_eq(err.msg, want);
    ck_assert_ptr_null(got.cert_pem);
    ck_assert_ptr_null(got.key_pem);

    free(chain);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);
}
END_TEST

/* An encrypted key is refused without prompting. */
START_TEST(test_load_encrypted_key)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct certs_pair got = {NULL, NULL};
    struct wh_error err = {0, ""};
    EVP_PKEY *k;
    BIO *b = BIO_new(BIO_s_mem());
    char *data;
    long n;
    char *text;

    ck_assert_int_eq(certs_generate(&ca, &leaf, CERTS_KEY_ECDSA_P256, sans, 1, 1, NULL), 0);
    k = ct_pem_key(leaf.key_pem);
    ck_assert_int_eq(
        PEM_write_bio_PKCS8PrivateKey(b, k, EVP_aes_256_cbc(), NULL, 0, NULL, (void *)"secret"), 1);
    n = BIO_get_mem_data(b, &data);
    text = strndup(data, (size_t)n);
    put("tls.crt", leaf.cert_pem);
    put("enc.key", text);
    ck_assert_int_eq(load(&got, "tls.crt", "enc.key", &err), WH_EINVAL);
    free(text);
    BIO_free(b);
    EVP_PKEY_free(k);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);
}
END_TEST

static int run_gen(int argc, const char **argv)
{
    return gen_certs_main(argc, (char **)argv);
}

START_TEST(test_gen_certs_command)
{
    char out[128];
    char a[160];
    char b[160];
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct stat st;
    X509 *cac;
    X509 *lc;
    const char *argv[] = {
        "gen-certs", "--service", "vpw",   "--namespace",     "volcano-system", "--out",    out,
        "--days",    "10",        "--dns", "vpw.example.org", "--dns",          "10.0.0.7", NULL};

    snprintf(out, sizeof(out), "%s/certs", tmpdir);
    ck_assert_int_eq(run_gen(13, argv), 0);

    ck_assert_int_eq(stat(tmp_path("certs/ca.key", a, sizeof(a)), &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    ck_assert_int_eq(stat(tmp_path("certs/tls.key", a, sizeof(a)), &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    ck_assert_int_eq(stat(tmp_path("certs/tls.crt", a, sizeof(a)), &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0644);
    ck_assert_int_eq(stat(tmp_path("certs/ca.crt", a, sizeof(a)), &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0644);

    ck_assert_int_eq(certs_load_pair(&ca, tmp_path("certs/ca.crt", a, sizeof(a)),
                                     tmp_path("certs/ca.key", b, sizeof(b)), NULL),
                     0);
    ck_assert_int_eq(certs_load_pair(&leaf, tmp_path("certs/tls.crt", a, sizeof(a)),
                                     tmp_path("certs/tls.key", b, sizeof(b)), NULL),
                     0);
    cac = ct_pem_cert(ca.cert_pem);
    lc = ct_pem_cert(leaf.cert_pem);
    ck_assert_int_eq(ct_verify(cac, lc, "vpw", NULL), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, "vpw.volcano-system", NULL), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, "vpw.volcano-system.svc", NULL), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, "vpw.volcano-system.svc.cluster.local", NULL), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, "vpw.example.org", NULL), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, NULL, "10.0.0.7"), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, "vpw.default.svc", NULL), X509_V_ERR_HOSTNAME_MISMATCH);
    X509_free(cac);
    X509_free(lc);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);

    /* Running again refuses to replace the CA (the deployed caBundle would break)... */
    {
        char *before = NULL;
        char *after = NULL;
        const char *forced[] = {"gen-certs",   "--service",      "vpw",
                                "--namespace", "volcano-system", "--out",
                                out,           "--force",        NULL};

        ck_assert_int_eq(certs_load_pair(&ca, tmp_path("certs/ca.crt", a, sizeof(a)),
                                         tmp_path("certs/ca.key", b, sizeof(b)), NULL),
                         0);
        before = ca.cert_pem;
        ca.cert_pem = NULL;
        certs_pair_dispose(&ca);
        ck_assert_int_eq(run_gen(13, argv), 1);
        ck_assert_int_eq(certs_load_pair(&ca, tmp_path("certs/ca.crt", a, sizeof(a)),
                                         tmp_path("certs/ca.key", b, sizeof(b)), NULL),
                         0);
        ck_assert_str_eq(ca.cert_pem, before);
        certs_pair_dispose(&ca);
        /* ... unless --force: new keys, still 0600. */
        ck_assert_int_eq(run_gen(8, forced), 0);
        ck_assert_int_eq(certs_load_pair(&ca, tmp_path("certs/ca.crt", a, sizeof(a)),
                                         tmp_path("certs/ca.key", b, sizeof(b)), NULL),
                         0);
        after = ca.cert_pem;
        ck_assert_str_ne(after, before);
        certs_pair_dispose(&ca);
        free(before);
        ck_assert_int_eq(stat(tmp_path("certs/tls.key", a, sizeof(a)), &st), 0);
        ck_assert_uint_eq(st.st_mode & 0777, 0600);
    }
}
END_TEST

/* Whole file as a malloc'd string. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = calloc(1, 1 << 16);
    size_t n;

    ck_assert_ptr_nonnull(f);
    n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Base64-decode text (standard alphabet, padded) into a malloc'd NUL-terminated string. */
static char *unbase64(const char *text)
{
    size_t n = strlen(text);
    unsigned char *out = calloc(1, n + 4);
    int len;

    ck_assert_uint_eq(n % 4, 0);
    len = EVP_DecodeBlock(out, (const unsigned char *)text, (int)n);
    ck_assert_int_ge(len, 0);
    /* EVP_DecodeBlock counts the padding as zero bytes: take them off */
    if (n >= 1 && text[n - 1] == '=')
        len--;
    if (n >= 2 && text[n - 2] == '=')
        len--;
    out[len] = '\0';
    ck_assert_uint_eq(strlen((char *)out), (size_t)len);
    return (char *)out;
}

/* --key-type rsa --secret-manifest --ca-bundle: the Secret and the caBundle hold exactly
 * the PEM files written to --out. */
START_TEST(test_gen_certs_secret_and_bundle)
{
    char out[128];
    char secret[128];
    char bundle[128];
    char a[160];
    struct wh_error err = {0, ""};
    struct stat st;
    json_t *doc = NULL;
    json_t *data;
    char *text;
    char *file;
    char *dec;
    const char *argv[] = {
        "gen-certs", "--service",         "vpw",  "--namespace", "no",   "--out", out, "--key-type",
        "rsa",       "--secret-manifest", secret, "--ca-bundle", bundle, NULL};
    static const char *const keys[] = {"ca.crt", "tls.crt", "tls.key"};

    snprintf(out, sizeof(out), "%s/certs", tmpdir);
    snprintf(secret, sizeof(secret), "%s/secret.yaml", tmpdir);
    snprintf(bundle, sizeof(bundle), "%s/ca-bundle.txt", tmpdir);
    ck_assert_int_eq(run_gen(13, argv), 0);

    /* The Secret: exactly these fields (namespace "no" stays a string, not YAML 1.1 false). */
    ck_assert_msg(yaml_load_file(secret, &doc, &err) == 0, "%s", err.msg);
    data = json_object_get(doc, "data");
    ck_assert_uint_eq(json_object_size(doc), 5);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "apiVersion")), "v1");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "kind")), "Secret");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "type")), "kubernetes.io/tls");
    tu_assert_json_eq(json_object_get(doc, "metadata"),
                      "{\"name\": \"volcano-plugin-webhook-tls\", \"namespace\": \"no\","
                      " \"labels\": {\"app.kubernetes.io/name\": \"volcano-plugin-webhook\","
                      " \"app.kubernetes.io/part-of\": \"volcano-plugin-webhook\"}}");
    ck_assert_uint_eq(json_object_size(data), 3);
    for (size_t i = 0; i < 3; i++) {
        const char *v = json_string_value(json_object_get(data, keys[i]));
        char p[160];

        ck_assert_msg(v != NULL, "data.%s missing", keys[i]);
        dec = unbase64(v);
        snprintf(p, sizeof(p), "%s/%s", out, keys[i]);
        file = slurp(p);
        ck_assert_str_eq(dec, file);
        free(dec);
        free(file);
    }
    json_decref(doc);
    ck_assert_int_eq(stat(secret, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0600);

    /* The caBundle: one line of base64 of ca.crt, then a newline. */
    text = slurp(bundle);
    ck_assert_uint_gt(strlen(text), 100);
    ck_assert_ptr_eq(strchr(text, '\n'), text + strlen(text) - 1);
    text[strlen(text) - 1] = '\0';
    dec = unbase64(text);
    file = slurp(tmp_path("certs/ca.crt", a, sizeof(a)));
    ck_assert_str_eq(dec, file);
    ck_assert_ptr_nonnull(strstr(dec, "-----BEGIN CERTIFICATE-----"));
    free(dec);
    free(file);
    free(text);
    ck_assert_int_eq(stat(bundle, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0644);

    /* RSA keys on disk. */
    {
        struct certs_pair leaf = {NULL, NULL};
        char b[160];
        EVP_PKEY *k;

        ck_assert_int_eq(certs_load_pair(&leaf, tmp_path("certs/tls.crt", a, sizeof(a)),
                                         tmp_path("certs/tls.key", b, sizeof(b)), NULL),
                         0);
        k = ct_pem_key(leaf.key_pem);
        ck_assert_int_eq(EVP_PKEY_get_base_id(k), EVP_PKEY_RSA);
        ck_assert_int_eq(EVP_PKEY_get_bits(k), 2048);
        EVP_PKEY_free(k);
        certs_pair_dispose(&leaf);
    }

    /* Again: the secret manifest and caBundle alone also block a run without --force. */
    {
        const char *again[] = {"gen-certs", "--service", "vpw", "--namespace",
                               "no",        "--out",     a,     "--secret-manifest",
                               secret,      NULL};
        const char *again_bundle[] = {"gen-certs", "--service", "vpw",         "--namespace", "no",
                                      "--out",     a,           "--ca-bundle", bundle,        NULL};
        const char *forced[] = {
            "gen-certs",         "--service", "vpw",         "--namespace", "no",      "--out", out,
            "--secret-manifest", secret,      "--ca-bundle", bundle,        "--force", NULL};

        snprintf(a, sizeof(a), "%s/other", tmpdir);
        text = slurp(secret);
        ck_assert_int_eq(run_gen(9, again), 1);
        ck_assert_int_eq(run_gen(9, again_bundle), 1);
        file = slurp(secret);
        ck_assert_str_eq(file, text); /* untouched */
        free(file);
        ck_assert_int_eq(run_gen(12, forced), 0);
        file = slurp(secret);
        ck_assert_str_ne(file, text); /* a new CA and pair */
        free(file);
        free(text);
        ck_assert_int_eq(stat(secret, &st), 0);
        ck_assert_uint_eq(st.st_mode & 0777, 0600);
    }
}
END_TEST

START_TEST(test_gen_certs_usage)
{
    char out[128];
    const char *help[] = {"gen-certs", "--help", NULL};
    const char *no_service[] = {"gen-certs", "--namespace", "ns", "--out", out, NULL};
    const char *bad_days[] = {"gen-certs", "--service", "s",      "--namespace", "ns",
                              "--out",     out,         "--days", "10x",         NULL};
    const char *zero_days[] = {"gen-certs", "--service", "s",      "--namespace", "ns",
                               "--out",     out,         "--days", "0",           NULL};
    const char *bad_flag[] = {"gen-certs", "--service", "s", "--frobnicate", NULL};
    const char *no_value[] = {"gen-certs", "--service", NULL};
    const char *bad_name[] = {"gen-certs", "--service", "Bad_Name", "--namespace",
                              "ns",        "--out",     out,        NULL};
    const char *bad_dns[] = {"gen-certs", "--service", "s",     "--namespace", "ns",
                             "--out",     out,         "--dns", "a,b",         NULL};
    const char *extra_arg[] = {"gen-certs", "--service", "s",     "--namespace", "ns",
                               "--out",     out,         "stray", NULL};
    const char *bad_type[] = {"gen-certs", "--service", "s",          "--namespace", "ns",
                              "--out",     out,         "--key-type", "dsa",         NULL};
    const char *bad_ip[] = {"gen-certs", "--service", "s",    "--namespace", "ns",
                            "--out",     out,         "--ip", "wh.example",  NULL};
    const char *empty_secret[] = {"gen-certs", "--service", "s", "--namespace",
                                  "ns",        "--out",     out, "--secret-manifest",
                                  "",          NULL};

    snprintf(out, sizeof(out), "%s/x", tmpdir);
    ck_assert_int_eq(run_gen(2, help), 0);
    ck_assert_int_eq(run_gen(5, no_service), 2);
    ck_assert_int_eq(run_gen(9, bad_days), 2);
    ck_assert_int_eq(run_gen(9, zero_days), 2);
    ck_assert_int_eq(run_gen(4, bad_flag), 2);
    ck_assert_int_eq(run_gen(2, no_value), 2);
    ck_assert_int_eq(run_gen(7, bad_name), 2);
    ck_assert_int_eq(run_gen(9, bad_dns), 2);
    ck_assert_int_eq(run_gen(8, extra_arg), 2);
    ck_assert_int_eq(run_gen(9, bad_type), 2);
    ck_assert_int_eq(run_gen(9, bad_ip), 2);
    ck_assert_int_eq(run_gen(9, empty_secret), 2);
    /* Nothing was written by a refused run. */
    ck_assert_int_eq(access(out, F_OK), -1);
}
END_TEST

/*
 * A self-signed certificate valid since 400 days: notAfter as ASN.1 text (NULL: 10
 * days from now), and basicConstraints / keyUsage in openssl.cnf syntax (NULL: left
 * out).
 */
static void make_custom(struct certs_pair *out, const char *not_after, const char *bc,
                        const char *ku)
{
    struct ct_cert t = {.cn = "custom",
                        .serial = 7,
                        .not_before_s = -86400L * 400,
                        .not_after = not_after,
                        .not_after_s = 86400L * 10,
                        .bc = bc,
                        .ku = ku};

    ct_make_cert(out, &t);
}

/* notAfter of certificates with dates fixed here: UTCTime, GeneralizedTime (2050+). */
START_TEST(test_not_after_known_dates)
{
    struct certs_pair a = {NULL, NULL};
    struct certs_pair b = {NULL, NULL};
    struct wh_error err = {0, ""};
    long long t = 0;
    char *chain;
    size_t n;

    make_custom(&a, "20350101000000Z", "critical,CA:TRUE", NULL);
    make_custom(&b, "20600630123456Z", "critical,CA:TRUE", NULL);
    ck_assert_int_eq(certs_not_after(a.cert_pem, &t, &err), 0);
    ck_assert_int_eq(t, 2051222400LL); /* date -u -d 2035-01-01 +%s */
    ck_assert_int_eq(certs_not_after(b.cert_pem, &t, &err), 0);
    ck_assert_int_eq(t, 2855824496LL); /* date -u -d '2060-06-30 12:34:56' +%s */
    /* A chain: the first certificate counts. */
    n = strlen(a.cert_pem) + strlen(b.cert_pem) + 1;
    chain = malloc(n);
    snprintf(chain, n, "%s%s", b.cert_pem, a.cert_pem);
    ck_assert_int_eq(certs_not_after(chain, &t, &err), 0);
    ck_assert_int_eq(t, 2855824496LL);
    free(chain);
    /* Not a certificate. */
    t = 5;
    ck_assert_int_eq(certs_not_after("garbage", &t, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "no PEM certificate found");
    ck_assert_int_eq(certs_not_after(a.key_pem, &t, &err), WH_EINVAL);
    ck_assert_int_eq(certs_not_after(NULL, &t, &err), WH_EINVAL);
    ck_assert_int_eq(t, 5);
    certs_pair_dispose(&a);
    certs_pair_dispose(&b);
}
END_TEST

/* certs_generate with `days`: notAfter is the generation time plus days * 86400 s
 * (the hour back applies to notBefore only). */
START_TEST(test_not_after_of_generated)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    long long before = (long long)time(NULL);
    long long after;
    long long t = 0;

    ck_assert_int_eq(certs_generate(&ca, &leaf, CERTS_KEY_ECDSA_P256, sans, 1, 10, NULL), 0);
    after = (long long)time(NULL);
    ck_assert_int_eq(certs_not_after(leaf.cert_pem, &t, NULL), 0);
    ck_assert_int_ge(t, before + 10 * 86400LL);
    ck_assert_int_le(t, after + 10 * 86400LL);
    ck_assert_int_eq(certs_not_after(ca.cert_pem, &t, NULL), 0);
    ck_assert_int_ge(t, before + 10 * 86400LL);
    ck_assert_int_le(t, after + 10 * 86400LL);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);
}
END_TEST

/* A leaf under an existing (ECDSA) CA, with an RSA key: verifies strictly for every SAN,
 * chains by key id, keeps `days`, and carries no CA material. */
START_TEST(test_generate_leaf_under_ca)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair old = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct wh_error err = {0, ""};
    bool capped = true;
    long long before;
    long long after;
    long long t = 0;
    X509 *cac;
    X509 *lc;
    EVP_PKEY *lk;

    ck_assert_int_eq(certs_generate(&ca, &old, CERTS_KEY_ECDSA_P256, sans, 1, 3650, NULL), 0);
    before = (long long)time(NULL);
    ck_assert_msg(
        certs_generate_leaf(&leaf, &capped, &ca, CERTS_KEY_RSA_2048, sans, NSANS, 30, &err) == 0,
        "%s", err.msg);
    after = (long long)time(NULL);
    ck_assert(!capped);
    cac = ct_pem_cert(ca.cert_pem);
    lc = ct_pem_cert(leaf.cert_pem);
    lk = ct_pem_key(leaf.key_pem);
    for (size_t i = 0; i < 4; i++)
        ck_assert_msg(ct_verify(cac, lc, sans[i], NULL) == X509_V_OK, "name %s", sans[i]);
    ck_assert_int_eq(ct_verify(cac, lc, NULL, "127.0.0.1"), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, NULL, "::1"), X509_V_OK);
    ck_assert_int_eq(ct_verify(cac, lc, "wh.other.svc", NULL), X509_V_ERR_HOSTNAME_MISMATCH);
    ck_assert_int_eq(X509_check_private_key(lc, lk), 1);
    ck_assert_int_eq(EVP_PKEY_get_base_id(lk), EVP_PKEY_RSA);
    ck_assert_int_eq(X509_get_signature_nid(lc), NID_ecdsa_with_SHA256); /* the CA signs */
    ck_assert_int_eq(X509_check_ca(lc), 0);
    ck_assert_uint_eq(X509_get_extended_key_usage(lc), XKU_SSL_SERVER);
    ck_assert_int_eq(
        ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(lc), X509_get0_subject_key_id(cac)), 0);
    ck_assert_ptr_null(strstr(leaf.cert_pem, ca.cert_pem));
    ck_assert_int_eq(certs_not_after(leaf.cert_pem, &t, NULL), 0);
    ck_assert_int_ge(t, before + 30 * 86400LL);
    ck_assert_int_le(t, after + 30 * 86400LL);
    /* The old leaf of the same CA is another key. */
    ck_assert_str_ne(leaf.key_pem, old.key_pem);
    EVP_PKEY_free(lk);
    X509_free(cac);
    X509_free(lc);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&old);
    certs_pair_dispose(&leaf);
}
END_TEST

/* A CA expiring before `days` is over: the leaf's notAfter is the CA's, and verifies. */
START_TEST(test_generate_leaf_capped)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair old = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct wh_error err = {0, ""};
    bool capped = false;
    long long ca_end = 0;
    long long leaf_end = 0;
    X509 *cac;
    X509 *lc;

    ck_assert_int_eq(certs_generate(&ca, &old, CERTS_KEY_ECDSA_P256, sans, 1, 5, NULL), 0);
    ck_assert_msg(certs_generate_leaf(&leaf, &capped, &ca, CERTS_KEY_ECDSA_P256, sans, 1, 365, &err)
                      == 0,
                  "%s", err.msg);
    ck_assert(capped);
    ck_assert_int_eq(certs_not_after(ca.cert_pem, &ca_end, NULL), 0);
    ck_assert_int_eq(certs_not_after(leaf.cert_pem, &leaf_end, NULL), 0);
    ck_assert_int_eq(leaf_end, ca_end);
    cac = ct_pem_cert(ca.cert_pem);
    lc = ct_pem_cert(leaf.cert_pem);
    ck_assert_int_eq(ct_verify(cac, lc, sans[0], NULL), X509_V_OK);
    X509_free(cac);
    X509_free(lc);
    certs_pair_dispose(&leaf);
    /* A CA made elsewhere, with a fixed notAfter: exactly that; NULL capped is allowed. */
    certs_pair_dispose(&ca);
    make_custom(&ca, "20350101000000Z", "critical,CA:TRUE", "critical,keyCertSign,cRLSign");
    ck_assert_msg(certs_generate_leaf(&leaf, NULL, &ca, CERTS_KEY_ECDSA_P256, sans, 1, 36500, &err)
                      == 0,
                  "%s", err.msg);
    ck_assert_int_eq(certs_not_after(leaf.cert_pem, &leaf_end, NULL), 0);
    ck_assert_int_eq(leaf_end, 2051222400LL);
    cac = ct_pem_cert(ca.cert_pem);
    lc = ct_pem_cert(leaf.cert_pem);
    ck_assert_int_eq(ct_verify(cac, lc, sans[0], NULL), X509_V_OK);
    X509_free(cac);
    X509_free(lc);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&old);
    certs_pair_dispose(&leaf);
}
END_TEST

/* CAs that cannot sign a serving certificate are refused with one reason each. */
START_TEST(test_generate_leaf_refusals)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf0 = {NULL, NULL};
    struct certs_pair other = {NULL, NULL};
    struct certs_pair bad = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct wh_error err = {0, ""};

    ck_assert_int_eq(certs_generate(&ca, &leaf0, CERTS_KEY_ECDSA_P256, sans, 1, 30, NULL), 0);
    /* A serving certificate is not a CA. */
    ck_assert_int_eq(
        certs_generate_leaf(&leaf, NULL, &leaf0, CERTS_KEY_ECDSA_P256, sans, 1, 30, &err),
        WH_EINVAL);
    ck_assert_str_eq(err.msg, "not a CA certificate (no basicConstraints CA:TRUE)");
    /* The key of another certificate. */
    bad.cert_pem = ca.cert_pem;
    bad.key_pem = leaf0.key_pem;
    ck_assert_int_eq(
        certs_generate_leaf(&leaf, NULL, &bad, CERTS_KEY_ECDSA_P256, sans, 1, 30, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "private key does not match the CA certificate");
    bad.cert_pem = "garbage";
    ck_assert_int_eq(
        certs_generate_leaf(&leaf, NULL, &bad, CERTS_KEY_ECDSA_P256, sans, 1, 30, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "no PEM certificate found");
    bad.cert_pem = ca.cert_pem;
    bad.key_pem = ca.cert_pem;
    ck_assert_int_eq(
        certs_generate_leaf(&leaf, NULL, &bad, CERTS_KEY_ECDSA_P256, sans, 1, 30, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "no unencrypted PEM private key found");
    ck_assert_int_eq(
        certs_generate_leaf(&leaf, NULL, NULL, CERTS_KEY_ECDSA_P256, sans, 1, 30, &err), WH_EINVAL);
    /* Arguments as certs_generate. */
    ck_assert_int_eq(certs_generate_leaf(&leaf, NULL, &ca, CERTS_KEY_ECDSA_P256, sans, 0, 30, &err),
                     WH_EINVAL);
    ck_assert_str_eq(err.msg, "no subjectAltName given");
    ck_assert_int_eq(
        certs_generate_leaf(&leaf, NULL, &ca, CERTS_KEY_ECDSA_P256, sans, 1, 36501, &err),
        WH_EINVAL);
    ck_assert_str_eq(err.msg, "days 36501 out of range 1..36500");
    /* CA:TRUE but a keyUsage without keyCertSign; no basicConstraints; expired. */
    make_custom(&other, NULL, "critical,CA:TRUE", "critical,digitalSignature");
    ck_assert_int_eq(
        certs_generate_leaf(&leaf, NULL, &other, CERTS_KEY_ECDSA_P256, sans, 1, 30, &err),
        WH_EINVAL);
    ck_assert_str_eq(err.msg, "CA certificate's keyUsage lacks keyCertSign (RFC 5280 4.2.1.3)");
    certs_pair_dispose(&other);
    make_custom(&other, NULL, NULL, "critical,keyCertSign");
    ck_assert_int_eq(
        certs_generate_leaf(&leaf, NULL, &other, CERTS_KEY_ECDSA_P256, sans, 1, 30, &err),
        WH_EINVAL);
    ck_assert_str_eq(err.msg, "not a CA certificate (no basicConstraints CA:TRUE)");
    certs_pair_dispose(&other);
    make_custom(&other, "20200101000000Z", "critical,CA:TRUE", "critical,keyCertSign");
    ck_assert_int_eq(
        certs_generate_leaf(&leaf, NULL, &other, CERTS_KEY_ECDSA_P256, sans, 1, 30, &err),
        WH_EINVAL);
    ck_assert_str_eq(err.msg, "CA certificate has expired");
    certs_pair_dispose(&other);
    /* Without keyUsage at all, CA:TRUE is enough (RFC 5280 4.2.1.3 "when present"). */
    make_custom(&other, NULL, "critical,CA:TRUE", NULL);
    ck_assert_msg(certs_generate_leaf(&leaf, NULL, &other, CERTS_KEY_ECDSA_P256, sans, 1, 30, &err)
                      == 0,
                  "%s", err.msg);
    ck_assert_ptr_nonnull(leaf.cert_pem);
    certs_pair_dispose(&leaf);
    certs_pair_dispose(&other);
    ck_assert_ptr_null(leaf.cert_pem);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf0);
}
END_TEST

/*
 * A CA: CA:TRUE, keyCertSign, key ids, notBefore not_before_s seconds from now
 * (negative: in the past), 30 days long; nameConstraints in openssl.cnf syntax
 * (NULL: none); signed by issuer (NULL: self-signed).
 */
static void make_ca(struct certs_pair *out, const char *cn, long not_before_s, const char *nc,
                    const struct certs_pair *issuer)
{
    struct ct_cert t = {.cn = cn,
                        .serial = 9,
                        .not_before_s = not_before_s,
                        .not_after_s = 86400L * 30,
                        .bc = "critical,CA:TRUE",
                        .ku = "critical,keyCertSign,cRLSign",
                        .nc = nc,
                        .akid = true,
                        .issuer = issuer};

    ct_make_cert(out, &t);
}

/* CAs whose leaves a client would refuse (gen-certs review): the new leaf is verified
 * with X509_verify_cert and refused with OpenSSL's reason; an intermediate CA given
 * alone (partial chain) signs leaves that verify. */
START_TEST(test_generate_leaf_must_verify)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair root = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct wh_error err = {0, ""};
    X509 *ic;
    X509 *lc;

    /* notBefore a day ahead: every check of the CA itself passes, the chain does not. */
    make_ca(&ca, "future", 86400L, NULL, NULL);
    ck_assert_int_eq(
        certs_generate_leaf(&leaf, NULL, &ca, CERTS_KEY_ECDSA_P256, sans, NSANS, 30, &err),
        WH_EINVAL);
    ck_assert_str_eq(err.msg,
                     "a serving certificate signed by it does not verify for wh: "
                     "certificate is not yet valid");
    ck_assert_ptr_null(leaf.cert_pem);
    certs_pair_dispose(&ca);
    /* nameConstraints that permit only example.com: "wh" and the Service names are out. */
    make_ca(&ca, "nc", -3600L, "critical,permitted;DNS:example.com", NULL);
    ck_assert_int_eq(
        certs_generate_leaf(&leaf, NULL, &ca, CERTS_KEY_ECDSA_P256, sans, NSANS, 30, &err),
        WH_EINVAL);
    ck_assert_str_eq(err.msg,
                     "a serving certificate signed by it does not verify for wh: "
                     "permitted subtree violation");
    ck_assert_ptr_null(leaf.cert_pem);
    certs_pair_dispose(&ca);
    /* nameConstraints that permit the names (and the IPs): fine. */
    make_ca(&ca, "nc-ok", -3600L,
            "critical,permitted;DNS:wh,permitted;DNS:.wh.ns.svc,"
            "permitted;DNS:wh.ns,permitted;DNS:wh.ns.svc,"
            "permitted;DNS:wh.ns.svc.cluster.local",
            NULL);
    ck_assert_msg(certs_generate_leaf(&leaf, NULL, &ca, CERTS_KEY_ECDSA_P256, sans, 4, 30, &err)
                      == 0,
                  "%s", err.msg);
    certs_pair_dispose(&leaf);
    certs_pair_dispose(&ca);
    /* An intermediate CA given without its root: verifies as a partial chain. */
    make_ca(&root, "root", -3600L, NULL, NULL);
    make_ca(&ca, "intermediate", -3600L, NULL, &root);
    ck_assert_msg(certs_generate_leaf(&leaf, NULL, &ca, CERTS_KEY_ECDSA_P256, sans, NSANS, 30, &err)
                      == 0,
                  "%s", err.msg);
    ic = ct_pem_cert(ca.cert_pem);
    lc = ct_pem_cert(leaf.cert_pem);
    ck_assert_int_eq(ct_verify(ic, lc, "wh.ns.svc", NULL), X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT);
    X509_free(ic);
    X509_free(lc);
    certs_pair_dispose(&leaf);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&root);
}
END_TEST

/* The earliest notAfter of a chain, and which certificate has it. */
START_TEST(test_chain_not_after)
{
    struct certs_pair a = {NULL, NULL};
    struct certs_pair b = {NULL, NULL};
    struct wh_error err = {0, ""};
    long long t = 0;
    size_t index = 9;
    char *chain;
    size_t n;

    make_custom(&a, "20350101000000Z", "critical,CA:TRUE", NULL); /* 2051222400 */
    make_custom(&b, "20600630123456Z", "critical,CA:TRUE", NULL); /* 2855824496 */
    n = strlen(a.cert_pem) * 2 + strlen(b.cert_pem) + 1;
    chain = malloc(n);
    /* The second certificate expires first: it counts, not the leaf. */
    snprintf(chain, n, "%s%s", b.cert_pem, a.cert_pem);
    ck_assert_int_eq(certs_chain_not_after(chain, &t, &index, &err), 0);
    ck_assert_int_eq(t, 2051222400LL);
    ck_assert_uint_eq(index, 1);
    ck_assert_int_eq(certs_not_after(chain, &t, &err), 0); /* the leaf's alone */
    ck_assert_int_eq(t, 2855824496LL);
    /* The leaf first; then two equal ones: the first of them is named. */
    snprintf(chain, n, "%s%s%s", a.cert_pem, b.cert_pem, a.cert_pem);
    ck_assert_int_eq(certs_chain_not_after(chain, &t, &index, &err), 0);
    ck_assert_int_eq(t, 2051222400LL);
    ck_assert_uint_eq(index, 0);
    snprintf(chain, n, "%s%s%s", b.cert_pem, a.cert_pem, a.cert_pem);
    ck_assert_int_eq(certs_chain_not_after(chain, &t, NULL, &err), 0);
    ck_assert_int_eq(certs_chain_not_after(chain, &t, &index, &err), 0);
    ck_assert_uint_eq(index, 1);
    /* One certificate; no certificate (outputs untouched). */
    ck_assert_int_eq(certs_chain_not_after(b.cert_pem, &t, &index, &err), 0);
    ck_assert_int_eq(t, 2855824496LL);
    ck_assert_uint_eq(index, 0);
    ck_assert_int_eq(certs_chain_not_after("garbage", &t, &index, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "no PEM certificate found");
    ck_assert_int_eq(certs_chain_not_after(NULL, &t, &index, &err), WH_EINVAL);
    ck_assert_int_eq(t, 2855824496LL);
    ck_assert_uint_eq(index, 0);
    free(chain);
    certs_pair_dispose(&a);
    certs_pair_dispose(&b);
}
END_TEST

/* certs_check_key_file: the CA's own key, another key, and files that are no key. */
START_TEST(test_check_key_file)
{
    struct certs_pair a = {NULL, NULL};
    struct certs_pair b = {NULL, NULL};
    struct wh_error err = {0, ""};
    char p[128];
    char want[256];

    make_custom(&a, NULL, "critical,CA:TRUE", NULL);
    make_custom(&b, NULL, "critical,CA:TRUE", NULL);
    put("a.key", a.key_pem);
    put("b.key", b.key_pem);
    ck_assert_int_eq(certs_check_key_file(tmp_path("a.key", p, sizeof(p)), a.cert_pem, &err), 0);
    ck_assert_int_eq(certs_check_key_file(tmp_path("b.key", p, sizeof(p)), a.cert_pem, &err),
                     WH_ECONFLICT);
    snprintf(want, sizeof(want), "%s/b.key: the private key of another certificate", tmpdir);
    ck_assert_str_eq(err.msg, want);
    put("a.crt", a.cert_pem);
    ck_assert_int_eq(certs_check_key_file(tmp_path("a.crt", p, sizeof(p)), a.cert_pem, &err),
                     WH_EINVAL);
    snprintf(want, sizeof(want), "%s/a.crt: no unencrypted PEM private key found", tmpdir);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(certs_check_key_file(tmp_path("nope", p, sizeof(p)), a.cert_pem, &err),
                     WH_ERROR);
    ck_assert_int_eq(mkfifo(tmp_path("fifo", p, sizeof(p)), 0600), 0);
    ck_assert_int_eq(certs_check_key_file(p, a.cert_pem, &err), WH_EINVAL);
    snprintf(want, sizeof(want), "%s/fifo: a FIFO, not a regular file", tmpdir);
    ck_assert_str_eq(err.msg, want);
    certs_pair_dispose(&a);
    certs_pair_dispose(&b);
}
END_TEST

/* A FIFO or a directory as either file of a pair: refused at once, never read (a FIFO
 * without a writer used to block forever). */
START_TEST(test_load_pair_not_regular)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct certs_pair got = {NULL, NULL};
    struct wh_error err = {0, ""};
    char p[128];
    char want[256];

    ck_assert_int_eq(certs_generate(&ca, &leaf, CERTS_KEY_ECDSA_P256, sans, 1, 1, NULL), 0);
    put("tls.crt", leaf.cert_pem);
    put("tls.key", leaf.key_pem);
    ck_assert_int_eq(mkfifo(tmp_path("fifo", p, sizeof(p)), 0600), 0);
    ck_assert_int_eq(mkdir(tmp_path("dir", p, sizeof(p)), 0700), 0);
    ck_assert_int_eq(symlink("fifo", tmp_path("link", p, sizeof(p))), 0);
    ck_assert_int_eq(load(&got, "tls.crt", "fifo", &err), WH_EINVAL);
    snprintf(want, sizeof(want), "%s/fifo: a FIFO, not a regular file", tmpdir);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(load(&got, "link", "tls.key", &err), WH_EINVAL); /* followed */
    snprintf(want, sizeof(want), "%s/link: a FIFO, not a regular file", tmpdir);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(load(&got, "dir", "tls.key", &err), WH_EINVAL);
    snprintf(want, sizeof(want), "%s/dir: a directory, not a regular file", tmpdir);
    ck_assert_str_eq(err.msg, want);
    ck_assert_ptr_null(got.cert_pem);
    ck_assert_int_eq(load(&got, "tls.crt", "tls.key", &err), 0);
    certs_pair_dispose(&got);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);
}
END_TEST

/* gen-certs --ca-cert/--ca-key: the CA of a first run signs the second run's pair. */
START_TEST(test_gen_certs_with_ca)
{
    char first[128];
    char second[128];
    char ca_crt[160];
    char ca_key[160];
    char p[192];
    char q[192];
    char r[192];
    struct certs_pair leaf = {NULL, NULL};
    struct stat st;
    char *a;
    char *b;
    X509 *cac;
    X509 *lc;
    const char *gen1[] = {"gen-certs", "--service", "vpw", "--namespace",
                          "ns",        "--out",     first, NULL};
    const char *gen2[] = {"gen-certs", "--service",  "vpw",       "--namespace", "ns",
                          "--out",     second,       "--ca-cert", ca_crt,        "--ca-key",
                          ca_key,      "--key-type", "rsa",       NULL};
    const char *only_cert[] = {"gen-certs", "--service", "vpw",       "--namespace", "ns",
                               "--out",     second,      "--ca-cert", ca_crt,        NULL};
    const char *not_ca[] = {"gen-certs", "--service", "vpw", "--namespace", "ns", "--out",
                            second,      "--ca-cert", p,     "--ca-key",    r,    "--force",
                            NULL};
    const char *mismatched[] = {"gen-certs", "--service", "vpw",       "--namespace", "ns",
                                "--out",     second,      "--ca-cert", ca_crt,        "--ca-key",
                                r,           "--force",   NULL};

    snprintf(first, sizeof(first), "%s/first", tmpdir);
    snprintf(second, sizeof(second), "%s/second", tmpdir);
    snprintf(ca_crt, sizeof(ca_crt), "%s/ca.crt", first);
    snprintf(ca_key, sizeof(ca_key), "%s/ca.key", first);
    ck_assert_int_eq(run_gen(7, gen1), 0);
    ck_assert_int_eq(run_gen(9, only_cert), 2); /* one of the two: bad usage */
    ck_assert_int_eq(access(second, F_OK), -1);
    ck_assert_int_eq(run_gen(13, gen2), 0);

    a = slurp(ca_crt);
    snprintf(p, sizeof(p), "%s/ca.crt", second);
    b = slurp(p);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    snprintf(p, sizeof(p), "%s/ca.key", second);
    ck_assert_int_eq(access(p, F_OK), -1);
    snprintf(p, sizeof(p), "%s/tls.key", second);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    snprintf(q, sizeof(q), "%s/tls.crt", second);
    ck_assert_int_eq(certs_load_pair(&leaf, q, p, NULL), 0);
    a = slurp(ca_crt);
    cac = ct_pem_cert(a);
    lc = ct_pem_cert(leaf.cert_pem);
    ck_assert_int_eq(ct_verify(cac, lc, "vpw.ns.svc", NULL), X509_V_OK);
    ck_assert_int_eq(EVP_PKEY_get_base_id(X509_get0_pubkey(lc)), EVP_PKEY_RSA);
    X509_free(cac);
    X509_free(lc);
    free(a);
    certs_pair_dispose(&leaf);

    /* Again without --force: refused. A leaf as --ca-cert, or the CA with another key:
     * refused even with --force (exit 1), the files untouched. */
    ck_assert_int_eq(run_gen(13, gen2), 1);
    snprintf(p, sizeof(p), "%s/tls.crt", first);
    snprintf(r, sizeof(r), "%s/tls.key", first);
    a = slurp(q);
    ck_assert_int_eq(run_gen(12, not_ca), 1);
    ck_assert_int_eq(run_gen(12, mismatched), 1);
    b = slurp(q);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
}
END_TEST

/* notAfter - notBefore of the first certificate of pem, in seconds. */
static long long lifetime_of(const char *pem)
{
    X509 *x = ct_pem_cert(pem);
    int day = 0;
    int sec = 0;

    ck_assert_int_eq(ASN1_TIME_diff(&day, &sec, X509_get0_notBefore(x), X509_get0_notAfter(x)), 1);
    X509_free(x);
    return (long long)day * 86400 + sec;
}

/* certs_generate_ca: its own lifetime (plus the hour before now), a CA; a leaf in
 * seconds under it; certs_verify_leaf under one bundle and not another; pair checks. */
START_TEST(test_generate_ca_and_seconds)
{
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair other = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct certs_pair mixed = {NULL, NULL};
    struct wh_error err = {0, ""};
    bool capped = true;
    char *bundle = NULL;
    size_t n;
    X509 *x;

    ck_assert_int_eq(certs_generate_ca(&ca, CERTS_KEY_ECDSA_P256, 7200, &err), 0);
    ck_assert_int_eq(certs_generate_ca(&other, CERTS_KEY_RSA_2048, 90, &err), 0);
    ck_assert_int_eq(lifetime_of(ca.cert_pem), 7200 + 3600);
    ck_assert_int_eq(lifetime_of(other.cert_pem), 90 + 3600);
    x = ct_pem_cert(ca.cert_pem);
    ck_assert_int_eq(X509_check_ca(x), 1);
    X509_free(x);
    ck_assert_int_eq(certs_pair_check(&ca, &err), 0);

    ck_assert_int_eq(
        certs_generate_leaf_seconds(&leaf, &capped, &ca, CERTS_KEY_ECDSA_P256, sans, 4, 60, &err),
        0);
    ck_assert(!capped);
    ck_assert_int_eq(lifetime_of(leaf.cert_pem), 60 + 3600);
    ck_assert_int_eq(certs_pair_check(&leaf, &err), 0);
    ck_assert_int_eq(certs_verify_leaf(leaf.cert_pem, ca.cert_pem, "wh.ns.svc", &err), 0);
    ck_assert_int_eq(certs_verify_leaf(leaf.cert_pem, other.cert_pem, "wh.ns.svc", &err),
                     WH_EINVAL);
    ck_assert_str_eq(err.msg,
                     "certificate does not verify for wh.ns.svc: unable to get local issuer "
                     "certificate");
    ck_assert_int_eq(certs_verify_leaf(leaf.cert_pem, ca.cert_pem, "wh.other.svc", &err),
                     WH_EINVAL);
    ck_assert_str_eq(err.msg, "certificate does not verify for wh.other.svc: hostname mismatch");
    /* A bundle of two CAs trusts a leaf of either. */
    n = strlen(other.cert_pem) + strlen(ca.cert_pem) + 1;
    bundle = malloc(n);
    ck_assert_ptr_nonnull(bundle);
    snprintf(bundle, n, "%s%s", other.cert_pem, ca.cert_pem);
    ck_assert_int_eq(certs_verify_leaf(leaf.cert_pem, bundle, "wh.ns.svc", &err), 0);
    ck_assert_int_eq(certs_verify_leaf("junk", bundle, "wh.ns.svc", &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "no PEM certificate found");
    /* Capped at a CA that ends first. */
    certs_pair_dispose(&leaf);
    ck_assert_int_eq(certs_generate_leaf_seconds(&leaf, &capped, &other, CERTS_KEY_ECDSA_P256, sans,
                                                 4, 3600, &err),
                     0);
    ck_assert(capped);
    {
        long long leaf_end = 0;
        long long ca_end = 0;

        ck_assert_int_eq(certs_not_after(leaf.cert_pem, &leaf_end, NULL), 0);
        ck_assert_int_eq(certs_not_after(other.cert_pem, &ca_end, NULL), 0);
        ck_assert_int_eq(leaf_end, ca_end);
    }

    /* A key of another pair; out-of-range lifetimes. */
    mixed.cert_pem = leaf.cert_pem;
    mixed.key_pem = ca.key_pem;
    ck_assert_int_eq(certs_pair_check(&mixed, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "private key does not match the certificate");
    mixed.key_pem = (char *)"garbage";
    ck_assert_int_eq(certs_pair_check(&mixed, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "no unencrypted PEM private key found");
    ck_assert_int_eq(certs_generate_ca(&mixed, CERTS_KEY_ECDSA_P256, 0, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "validity 0 s out of range 1..3153600000");
    ck_assert_int_eq(certs_generate_leaf_seconds(&mixed, NULL, &ca, CERTS_KEY_ECDSA_P256, sans, 1,
                                                 3153600001LL, &err),
                     WH_EINVAL);
    ck_assert_str_eq(err.msg, "validity 3153600001 s out of range 1..3153600000");
    free(bundle);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&other);
    certs_pair_dispose(&leaf);
}
END_TEST

/* certs_base64_decode undoes certs_base64; refuses what is not whole padded groups of
 * the standard alphabet. certs_not_before: the hour before the issue time. */
START_TEST(test_base64_decode_and_not_before)
{
    struct certs_pair ca = {NULL, NULL};
    const char *const inputs[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    long long nb = 0;
    long long na = 0;
    size_t len = 99;
    char *d;

    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        char *e = certs_base64(inputs[i], strlen(inputs[i]));

        d = certs_base64_decode(e, &len);
        ck_assert_ptr_nonnull(d);
        ck_assert_uint_eq(len, strlen(inputs[i]));
        ck_assert_str_eq(d, inputs[i]);
        free(d);
        free(e);
    }
    ck_assert_ptr_null(certs_base64_decode("Zm9", NULL));      /* not a whole group */
    ck_assert_ptr_null(certs_base64_decode("Zm9v!!==", NULL)); /* outside the alphabet */
    ck_assert_ptr_null(certs_base64_decode(NULL, NULL));
    ck_assert_int_eq(certs_generate_ca(&ca, CERTS_KEY_ECDSA_P256, 100, NULL), 0);
    ck_assert_int_eq(certs_not_before(ca.cert_pem, &nb, NULL), 0);
    ck_assert_int_eq(certs_not_after(ca.cert_pem, &na, NULL), 0);
    ck_assert_int_eq(na - nb, 100 + 3600);
    ck_assert_int_eq(certs_not_before("junk", &nb, NULL), WH_EINVAL);
    certs_pair_dispose(&ca);
}
END_TEST

/* gen-certs: a new CA lives --ca-days (default 3650), its leaf --days (default 365). */
START_TEST(test_gen_certs_ca_days)
{
    char out[128];
    char a[160];
    char *pem;
    const char *defaults[] = {"gen-certs", "--service", "vpw", "--namespace",
                              "ns",        "--out",     out,   NULL};
    const char *custom[] = {"gen-certs", "--service", "vpw", "--namespace", "ns", "--out", out,
                            "--force",   "--ca-days", "40",  "--days",      "12", NULL};
    const char *too_long[] = {"gen-certs", "--service", "vpw", "--namespace", "ns", "--out", out,
                              "--force",   "--ca-days", "5",   "--days",      "6",  NULL};

    snprintf(out, sizeof(out), "%s/cadays", tmpdir);
    ck_assert_int_eq(run_gen(7, defaults), 0);
    pem = slurp(tmp_path("cadays/ca.crt", a, sizeof(a)));
    ck_assert_int_eq(lifetime_of(pem), 3650LL * 86400 + 3600);
    free(pem);
    pem = slurp(tmp_path("cadays/tls.crt", a, sizeof(a)));
    ck_assert_int_eq(lifetime_of(pem), 365LL * 86400 + 3600);
    free(pem);
    ck_assert_int_eq(run_gen(12, custom), 0);
    pem = slurp(tmp_path("cadays/ca.crt", a, sizeof(a)));
    ck_assert_int_eq(lifetime_of(pem), 40LL * 86400 + 3600);
    free(pem);
    pem = slurp(tmp_path("cadays/tls.crt", a, sizeof(a)));
    ck_assert_int_eq(lifetime_of(pem), 12LL * 86400 + 3600);
    free(pem);
    ck_assert_int_eq(run_gen(12, too_long), 2); /* the leaf would outlive its CA */
}
END_TEST

static Suite *certs_suite(void)
{
    Suite *s = suite_create("certs");
    TCase *gen = tcase_create("generate");
    TCase *files = tcase_create("files");

    tcase_set_timeout(gen, 30);
    tcase_add_test(gen, test_generate_verifies);
    tcase_add_test(gen, test_other_ca_fails);
    tcase_add_test(gen, test_generate_fields);
    tcase_add_test(gen, test_generate_bad_args);
    tcase_add_test(gen, test_generate_rsa);
    tcase_add_test(gen, test_base64);
    tcase_add_test(gen, test_not_after_known_dates);
    tcase_add_test(gen, test_not_after_of_generated);
    tcase_add_test(gen, test_generate_leaf_under_ca);
    tcase_add_test(gen, test_generate_leaf_capped);
    tcase_add_test(gen, test_generate_leaf_refusals);
    tcase_add_checked_fixture(files, tmp_setup, tmp_teardown);
    tcase_set_timeout(files, 30);
    tcase_add_test(files, test_load_pair);
    tcase_add_test(files, test_load_encrypted_key);
    tcase_add_test(files, test_gen_certs_command);
    tcase_add_test(files, test_gen_certs_secret_and_bundle);
    tcase_add_test(files, test_gen_certs_usage);
    tcase_add_test(files, test_gen_certs_with_ca);
    tcase_add_test(files, test_generate_leaf_must_verify);
    tcase_add_test(files, test_chain_not_after);
    tcase_add_test(files, test_check_key_file);
    tcase_add_test(files, test_load_pair_not_regular);
    tcase_add_test(files, test_gen_certs_ca_days);
    tcase_add_test(gen, test_generate_ca_and_seconds);
    tcase_add_test(gen, test_base64_decode_and_not_before);
    suite_add_tcase(s, gen);
    suite_add_tcase(s, files);
    return s;
}

int main(void)
{
    return tu_run(certs_suite());
}
