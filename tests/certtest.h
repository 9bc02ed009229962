/*
 * certtest.h - certificate checks shared by the Check suites (header-only):
 * PEM parsing and strict, SAN-only verification as Go's crypto/tls does it.
 */
#ifndef WH_CERTTEST_H
#define WH_CERTTEST_H

#include <check.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

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

#endif
