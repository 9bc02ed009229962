/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certtest.h - certificate helpers shared by the Check suites (header-only):
 * PEM parsing, strict, SAN-only verification as Go's crypto/tls does it, and
 * test certificates made with OpenSSL alone.
 */
#ifndef WH_CERTTEST_H
#define WH_CERTTEST_H

#include <check.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <string.h>

#include "certs/certs.h"

/* The first certificate of pem; fails the test when there is none. Caller X509_free()s. */
static inline X509 *ct_pem_cert(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);

    BIO_free(b);
    ck_assert_ptr_nonnull(x);
    return x;
}

/*
 * Verify leaf against ca for host (or IP when ip is set): purpose sslserver,
 * strict RFC 5280 checks, and the SAN only (a CN that matches does not count).
 * @return X509_V_OK or the verification error.
 */
static inline int ct_verify(X509 *ca, X509 *leaf, const char *host, const char *ip)
{
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509_VERIFY_PARAM *param;
    int result;

    ck_assert_int_eq(X509_STORE_add_cert(store, ca), 1);
    ck_assert_int_eq(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
    param = X509_STORE_CTX_get0_param(ctx);
    ck_assert_int_eq(X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER), 1);
    ck_assert_int_eq(X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT), 1);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    if (host != NULL)
        ck_assert_int_eq(X509_VERIFY_PARAM_set1_host(param, host, 0), 1);
    if (ip != NULL)
        ck_assert_int_eq(X509_VERIFY_PARAM_set1_ip_asc(param, ip), 1);
    result = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    return result;
}

/* The private key of pem; fails the test when there is none. Caller EVP_PKEY_free()s. */
static inline EVP_PKEY *ct_pem_key(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);

    BIO_free(b);
    ck_assert_ptr_nonnull(k);
    return k;
}

/* The text of a memory BIO, malloc'd. */
static inline char *ct_bio_text(BIO *b)
{
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *s = strndup(data, (size_t)n);

    ck_assert_ptr_nonnull(s);
    return s;
}

/* A certificate for the tests, made with OpenSSL alone (not certs.c); P-256. */
struct ct_cert {
    const char *cn;
    long serial;
    long not_before_s;               /* from now (negative: in the past) */
    const char *not_after;           /* ASN.1 text ("20350101000000Z"), or NULL: */
    long not_after_s;                /*   this many seconds from now */
    const char *bc, *ku, *nc;        /* basicConstraints, keyUsage, nameConstraints in
                                       openssl.cnf syntax; NULL: left out */
    bool akid;                       /* an authority key id */
    const struct certs_pair *issuer; /* NULL: self-signed */
};

/* Make t as PEM cert and key into out (certs_pair_dispose). */
static inline void ct_make_cert(struct certs_pair *out, const struct ct_cert *t)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    EVP_PKEY *ik = t->issuer != NULL ? ct_pem_key(t->issuer->key_pem) : NULL;
    X509 *ic = t->issuer != NULL ? ct_pem_cert(t->issuer->cert_pem) : NULL;
    X509 *x = X509_new();
    X509_NAME *name = X509_get_subject_name(x);
    X509V3_CTX ctx;
    BIO *cb = BIO_new(BIO_s_mem());
    BIO *kb = BIO_new(BIO_s_mem());
    const char *values[5] = {t->bc, t->ku, "hash", t->akid ? "keyid:always" : NULL, t->nc};
    const int nids[5] = {NID_basic_constraints, NID_key_usage, NID_subject_key_identifier,
                         NID_authority_key_identifier, NID_name_constraints};

    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(X509_set_version(x, X509_VERSION_3), 1);
    ck_assert_int_eq(ASN1_INTEGER_set(X509_get_serialNumber(x), t->serial), 1);
    ck_assert_int_eq(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                                (const unsigned char *)t->cn, -1, -1, 0),
                     1);
    ck_assert_int_eq(X509_set_issuer_name(x, ic != NULL ? X509_get_subject_name(ic) : name), 1);
    ck_assert_int_eq(X509_set_pubkey(x, k), 1);
    ck_assert_ptr_nonnull(X509_gmtime_adj(X509_getm_notBefore(x), t->not_before_s));
    if (t->not_after != NULL)
        ck_assert_int_eq(ASN1_TIME_set_string_X509(X509_getm_notAfter(x), t->not_after), 1);
    else
        ck_assert_ptr_nonnull(X509_gmtime_adj(X509_getm_notAfter(x), t->not_after_s));
    X509V3_set_ctx(&ctx, ic != NULL ? ic : x, x, NULL, NULL, 0);
    for (size_t i = 0; i < 5; i++) {
        X509_EXTENSION *e;

        if (values[i] == NULL)
            continue;
        e = X509V3_EXT_conf_nid(NULL, &ctx, nids[i], values[i]);
        ck_assert_ptr_nonnull(e);
        ck_assert_int_eq(X509_add_ext(x, e, -1), 1);
        X509_EXTENSION_free(e);
    }
    ck_assert_int_gt(X509_sign(x, ik != NULL ? ik : k, EVP_sha256()), 0);
    ck_assert_int_eq(PEM_write_bio_X509(cb, x), 1);
    ck_assert_int_eq(PEM_write_bio_PrivateKey(kb, k, NULL, NULL, 0, NULL, NULL), 1);
    out->cert_pem = ct_bio_text(cb);
    out->key_pem = ct_bio_text(kb);
    BIO_free(cb);
    BIO_free(kb);
    X509_free(x);
    X509_free(ic);
    EVP_PKEY_free(k);
    EVP_PKEY_free(ik);
}

#endif
