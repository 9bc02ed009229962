/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certs.c - serving certificates with the OpenSSL 3 EVP/X509 API.
 *
 * certs_generate makes a small two-level PKI: a self-signed CA and one
 * serving certificate, both ECDSA P-256 (or both RSA-2048) signed with
 * SHA-256, with the
 * extensions kube-apiserver (Go crypto/x509) checks: subjectAltName (the CN is
 * ignored), basicConstraints, keyUsage, extendedKeyUsage serverAuth, and
 * subject/authority key identifiers. certs_generate_leaf makes only the serving
 * certificate, signed by an existing CA (renewal under the same caBundle),
 * after checking that CA with OpenSSL (CA:TRUE, keyCertSign, key, notAfter) and
 * capping the leaf's notAfter at the CA's, and verifies the new leaf under
 * that CA with X509_verify_cert before handing it out. certs_not_after reads a
 * certificate's notAfter as Unix seconds, certs_chain_not_after the earliest
 * of a chain's. certs_load_pair reads a PEM pair and
 * re-encodes it (certificate chain as read, key as unencrypted PKCS#8), so that
 * the TLS library gets one format whatever the file held.
 *
 * Threads: reentrant; OpenSSL's error queue is per thread and is cleared on
 * every exit. Private key text is never logged nor put in an error message.
 */
#include "certs/certs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PEM_FILE_MAX   ((long)1024 * 1024) /* bytes; a cert chain or key is far smaller */
#define CA_COMMON_NAME "volcano-plugin-webhook-ca"

void certs_pair_dispose(struct certs_pair *p)
{
    if (p == NULL)
        return;
    free(p->cert_pem);
    /* Scrub the key text before it goes back to the allocator. */
    if (p->key_pem != NULL)
        OPENSSL_cleanse(p->key_pem, strlen(p->key_pem));
    free(p->key_pem);
    p->cert_pem = NULL;
    p->key_pem = NULL;
}

/* Fill err with what failed and OpenSSL's first queued reason; clear the queue. */
static int ossl_fail(struct wh_error *err, int code, const char *what)
{
    unsigned long e = ERR_peek_error();
    char reason[160];

    if (e != 0) {
        ERR_error_string_n(e, reason, sizeof(reason));
        wh_error_set(err, code, "%s: %s", what, reason);
    } else {
        wh_error_set(err, code, "%s", what);
    }
    ERR_clear_error();
    return code;
}

/* The contents of a memory BIO as a malloc'd NUL-terminated string, or NULL. */
static char *bio_take_string(BIO *b)
{
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *s;

    if (n < 0)
        return NULL;
    s = malloc((size_t)n + 1);
    if (s == NULL)
        return NULL;
    memcpy(s, data, (size_t)n);
    s[n] = '\0';
    return s;
}

/* Never prompt for a pass phrase: an encrypted key is refused. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

/* What a non-regular file is, for a message ("a FIFO"). */
static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    return "not a regular file";
}

/*
 * Read a whole (small) regular file into a malloc'd buffer; symlinks are followed
 * (kubelet Secret volumes are symlinks). A FIFO or device would block or never end:
 * it is opened O_NONBLOCK (open(2) of a FIFO then returns at once) and refused
 * after fstat. @return 0, or WH_ERROR / WH_EINVAL / WH_ENOMEM.
 */
static int file_read(const char *path, char **out, size_t *len_out, struct wh_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    FILE *f = NULL;
    char *buf = NULL;
    size_t n = 0;
    struct stat st;
    int rc = 0;

    *out = NULL;
    if (fd < 0)
        return wh_error_set(err, WH_ERROR, "cannot read %s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = wh_error_set(err, WH_ERROR, "cannot read %s: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return wh_error_set(err, WH_EINVAL, "%s: %s, not a regular file", path,
                            file_kind(st.st_mode));
    }
    f = fdopen(fd, "rb");
    if (f == NULL) {
        rc = wh_error_set(err, WH_ERROR, "cannot read %s: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    buf = malloc((size_t)PEM_FILE_MAX + 1);
    if (buf == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    n = fread(buf, 1, (size_t)PEM_FILE_MAX + 1, f);
    if (ferror(f)) {
        rc = wh_error_set(err, WH_ERROR, "cannot read %s: %s", path, strerror(errno));
        goto out;
    }
    if (n > (size_t)PEM_FILE_MAX) {
        rc = wh_error_set(err, WH_EINVAL, "%s: larger than %ld bytes, not a PEM file", path,
                          PEM_FILE_MAX);
        goto out;
    }
    buf[n] = '\0';
    *out = buf;
    *len_out = n;
    buf = NULL; /* now owned by the caller */
out:
    if (buf != NULL) {
        OPENSSL_cleanse(buf, n);
        free(buf);
    }
    fclose(f);
    return rc;
}

int certs_load_pair(struct certs_pair *out, const char *cert_file, const char *key_file,
                    struct wh_error *err)
{
    char *cert_text = NULL;
    char *key_text = NULL;
    size_t cert_len = 0;
    size_t key_len = 0;
    BIO *in = NULL;
    BIO *mem = NULL;
    X509 *first = NULL;
    X509 *x = NULL;
    EVP_PKEY *key = NULL;
    struct certs_pair p = {NULL, NULL};
    int ncerts = 0;
    int rc;

    rc = file_read(cert_file, &cert_text, &cert_len, err);
    if (rc < 0)
        goto out;
    rc = file_read(key_file, &key_text, &key_len, err);
    if (rc < 0)
        goto out;

    /* Certificates: every PEM CERTIFICATE block, in order; the first is the leaf. */
    in = BIO_new_mem_buf(cert_text, (int)cert_len);
    mem = BIO_new(BIO_s_mem());
    if (in == NULL || mem == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    while ((x = PEM_read_bio_X509(in, NULL, no_password, NULL)) != NULL) {
        if (PEM_write_bio_X509(mem, x) != 1) {
            rc = ossl_fail(err, WH_ENOMEM, "cannot encode certificate");
            goto out;
        }
        if (first == NULL)
            first = x;
        else
            X509_free(x);
        x = NULL;
        ncerts++;
    }
    ERR_clear_error(); /* the loop ends on "no start line" */
    if (ncerts == 0) {
        rc = wh_error_set(err, WH_EINVAL, "%s: no PEM certificate found", cert_file);
        goto out;
    }
    p.cert_pem = bio_take_string(mem);
    BIO_free(in);
    BIO_free(mem);
    in = NULL;
    mem = NULL;

    in = BIO_new_mem_buf(key_text, (int)key_len);
    mem = BIO_new(BIO_s_mem());
    if (p.cert_pem == NULL || in == NULL || mem == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    key = PEM_read_bio_PrivateKey(in, NULL, no_password, NULL);
    if (key == NULL) {
        ERR_clear_error();
        rc = wh_error_set(err, WH_EINVAL, "%s: no unencrypted PEM private key found", key_file);
        goto out;
    }
    if (X509_check_private_key(first, key) != 1) {
        ERR_clear_error();
        rc = wh_error_set(err, WH_EINVAL, "%s: private key does not match the certificate in %s",
                          key_file, cert_file);
        goto out;
    }
    if (PEM_write_bio_PrivateKey(mem, key, NULL, NULL, 0, NULL, NULL) != 1) {
        rc = ossl_fail(err, WH_ENOMEM, "cannot encode private key");
        goto out;
    }
    p.key_pem = bio_take_string(mem);
    if (p.key_pem == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    *out = p;
    p.cert_pem = NULL; /* now owned by the caller */
    p.key_pem = NULL;
    rc = 0;
out:
    certs_pair_dispose(&p);
    X509_free(x);
    X509_free(first);
    EVP_PKEY_free(key);
    BIO_free(in);
    BIO_free(mem);
    if (key_text != NULL) {
        OPENSSL_cleanse(key_text, key_len);
        free(key_text);
    }
    free(cert_text);
    ERR_clear_error();
    return rc;
}

/* Add one extension given in openssl.cnf syntax ("critical,CA:TRUE"). */
static int add_ext(X509 *cert, X509V3_CTX *ctx, int nid, const char *value, struct wh_error *err)
{
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    int ok;

    if (ext == NULL)
        return ossl_fail(err, WH_ERROR, "cannot make certificate extension");
    ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    if (ok != 1)
        return ossl_fail(err, WH_ERROR, "cannot add certificate extension");
    return 0;
}

/* subjectAltName: DNS entries, and IP entries for names that parse as addresses. */
static int add_san(X509 *cert, const char *const *dns, size_t ndns, struct wh_error *err)
{
    GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
    int rc = 0;

    if (names == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    for (size_t i = 0; i < ndns; i++) {
        unsigned char ip[16];
        GENERAL_NAME *gn = NULL;
        int iplen = 0;

        if (inet_pton(AF_INET, dns[i], ip) == 1)
            iplen = 4;
        else if (inet_pton(AF_INET6, dns[i], ip) == 1)
            iplen = 16;
        if (iplen > 0) {
            ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();

            if (os == NULL || ASN1_OCTET_STRING_set(os, ip, iplen) != 1) {
                ASN1_OCTET_STRING_free(os);
                rc = wh_error_set(err, WH_ENOMEM, "out of memory");
                goto out;
            }
            gn = GENERAL_NAME_new();
            if (gn != NULL)
                GENERAL_NAME_set0_value(gn, GEN_IPADD, os);
            else
                ASN1_OCTET_STRING_free(os);
        } else {
            ASN1_IA5STRING *s = ASN1_IA5STRING_new();

            if (s == NULL || ASN1_STRING_set(s, dns[i], -1) != 1) {
                ASN1_IA5STRING_free(s);
                rc = wh_error_set(err, WH_ENOMEM, "out of memory");
                goto out;
            }
            gn = GENERAL_NAME_new();
            if (gn != NULL)
                GENERAL_NAME_set0_value(gn, GEN_DNS, s);
            else
                ASN1_IA5STRING_free(s);
        }
        if (gn == NULL || sk_GENERAL_NAME_push(names, gn) == 0) {
            GENERAL_NAME_free(gn);
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
            goto out;
        }
    }
    if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT) != 1)
        rc = ossl_fail(err, WH_ERROR, "cannot add subjectAltName");
out:
    GENERAL_NAMES_free(names);
    return rc;
}

/* A random positive 128-bit serial number (RFC 5280 4.1.2.2: at most 20 octets). */
static int set_serial(X509 *cert, struct wh_error *err)
{
    BIGNUM *bn = BN_new();
    ASN1_INTEGER *serial = NULL;
    int rc = 0;

    if (bn == NULL || BN_rand(bn, 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1
        || (serial = BN_to_ASN1_INTEGER(bn, NULL)) == NULL
        || X509_set_serialNumber(cert, serial) != 1)
        rc = ossl_fail(err, WH_ERROR, "cannot make serial number");
    ASN1_INTEGER_free(serial);
    BN_free(bn);
    return rc;
}

/*
 * Make one certificate for key, named cn, signed by issuer/issuer_key (itself
 * when issuer is NULL), valid `seconds` from now. With capped and issuer non-NULL,
 * notAfter is capped at the issuer's and *capped says whether it was
 * (certs_generate's own CA and leaf keep their exact `days`). @param[out] out new
 * certificate.
 */
static int make_cert(X509 **out, bool *capped, EVP_PKEY *key, const char *cn, X509 *issuer,
                     EVP_PKEY *issuer_key, bool is_ca, const char *const *dns, size_t ndns,
                     long long seconds, struct wh_error *err)
{
    X509 *cert = X509_new();
    X509_NAME *name = NULL;
    X509V3_CTX ctx;
    time_t now = time(NULL);
    int rc;

    *out = NULL;
    if (cert == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    name = X509_get_subject_name(cert);
    if (X509_set_version(cert, X509_VERSION_3) != 1
        || X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                      0)
            != 1
        || X509_set_issuer_name(cert, issuer != NULL ? X509_get_subject_name(issuer) : name) != 1
        || X509_set_pubkey(cert, key) != 1
        /* From one hour ago: tolerate clock skew between nodes. One reading of the
         * clock for both ends, so that the lifetime is exactly seconds + 1 h. */
        || X509_time_adj_ex(X509_getm_notBefore(cert), 0, -3600, &now) == NULL
        || X509_time_adj_ex(X509_getm_notAfter(cert), (int)(seconds / 86400),
                            (long)(seconds % 86400), &now)
            == NULL) {
        rc = ossl_fail(err, WH_ERROR, "cannot fill certificate");
        goto out;
    }
    /* A certificate outliving its issuer only fails later, at the issuer's notAfter. */
    if (capped != NULL)
        *capped = false;
    if (capped != NULL && issuer != NULL
        && ASN1_TIME_compare(X509_get0_notAfter(cert), X509_get0_notAfter(issuer)) > 0) {
        if (X509_set1_notAfter(cert, X509_get0_notAfter(issuer)) != 1) {
            rc = ossl_fail(err, WH_ERROR, "cannot fill certificate");
            goto out;
        }
        if (capped != NULL)
            *capped = true;
    }
    rc = set_serial(cert, err);
    if (rc < 0)
        goto out;

    X509V3_set_ctx(&ctx, issuer != NULL ? issuer : cert, cert, NULL, NULL, 0);
    if (is_ca) {
        rc = add_ext(cert, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0", err);
        if (rc == 0)
            rc = add_ext(cert, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature",
                         err);
    } else {
        rc = add_ext(cert, &ctx, NID_basic_constraints, "critical,CA:FALSE", err);
        /* RSA keys also encipher (TLS 1.2 RSA key transport), as Go's generate_cert sets. */
        if (rc == 0)
            rc = add_ext(cert, &ctx, NID_key_usage,
                         EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA
                             ? "critical,digitalSignature,keyEncipherment"
                             : "critical,digitalSignature",
                         err);
        if (rc == 0)
            rc = add_ext(cert, &ctx, NID_ext_key_usage, "serverAuth", err);
        if (rc == 0)
            rc = add_san(cert, dns, ndns, err);
    }
    /* The subject key id first: a self-signed CA's authority key id refers to it. */
    if (rc == 0)
        rc = add_ext(cert, &ctx, NID_subject_key_identifier, "hash", err);
    /* An existing CA may lack a subject key id: name it by issuer and serial then. */
    if (rc == 0)
        rc = add_ext(cert, &ctx, NID_authority_key_identifier,
                     issuer == NULL || X509_get0_subject_key_id(issuer) != NULL ? "keyid:always"
                                                                                : "issuer:always",
                     err);
    if (rc < 0)
        goto out;
    /* EdDSA keys sign the message itself: no digest may be named for them. */
    if (X509_sign(cert, issuer_key,
                  EVP_PKEY_get_base_id(issuer_key) == EVP_PKEY_ED25519
                          || EVP_PKEY_get_base_id(issuer_key) == EVP_PKEY_ED448
                      ? NULL
                      : EVP_sha256())
        <= 0) {
        rc = ossl_fail(err, WH_ERROR, "cannot sign certificate");
        goto out;
    }
    *out = cert;
    cert = NULL; /* now owned by the caller */
    rc = 0;
out:
    X509_free(cert);
    return rc;
}

/* PEM-encode cert and key (unencrypted PKCS#8) into p. */
static int pair_encode(struct certs_pair *p, X509 *cert, EVP_PKEY *key, struct wh_error *err)
{
    BIO *cb = BIO_new(BIO_s_mem());
    BIO *kb = BIO_new(BIO_s_mem());
    int rc = 0;

    if (cb == NULL || kb == NULL || PEM_write_bio_X509(cb, cert) != 1
        || PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL) != 1) {
        rc = ossl_fail(err, WH_ENOMEM, "cannot PEM-encode");
        goto out;
    }
    p->cert_pem = bio_take_string(cb);
    p->key_pem = bio_take_string(kb);
    if (p->cert_pem == NULL || p->key_pem == NULL) {
        certs_pair_dispose(p);
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
    }
out:
    BIO_free(cb);
    BIO_free(kb);
    return rc;
}

/* A new key of type. @return the key, or NULL (OpenSSL error queued). */
static EVP_PKEY *key_generate(enum certs_key_type type)
{
    if (type == CERTS_KEY_RSA_2048)
        return EVP_RSA_gen(2048);
    return EVP_EC_gen("P-256");
}

#define CERTS_MAX_SECONDS (36500LL * 86400) /* 100 years, as --days 36500 */

/* Arguments shared by certs_generate and certs_generate_leaf*; the validity in seconds. */
static int check_leaf_args(enum certs_key_type key_type, const char *const *dns, size_t ndns,
                           struct wh_error *err)
{
    if (ndns == 0 || dns == NULL)
        return wh_error_set(err, WH_EINVAL, "no subjectAltName given");
    if (key_type != CERTS_KEY_ECDSA_P256 && key_type != CERTS_KEY_RSA_2048)
        return wh_error_set(err, WH_EINVAL, "unknown key type %d", (int)key_type);
    for (size_t i = 0; i < ndns; i++)
        if (dns[i] == NULL || dns[i][0] == '\0')
            return wh_error_set(err, WH_EINVAL, "empty subjectAltName");
    return 0;
}

static int check_days(int days, struct wh_error *err)
{
    if (days <= 0 || days > 36500)
        return wh_error_set(err, WH_EINVAL, "days %d out of range 1..36500", days);
    return 0;
}

static int check_seconds(long long seconds, struct wh_error *err)
{
    if (seconds <= 0 || seconds > CERTS_MAX_SECONDS)
        return wh_error_set(err, WH_EINVAL, "validity %lld s out of range 1..%lld", seconds,
                            CERTS_MAX_SECONDS);
    return 0;
}

/* The CN is informational only (clients use the SAN) and limited to 64 bytes. */
static const char *leaf_cn(const char *first_san)
{
    return strlen(first_san) <= 64 ? first_san : "volcano-plugin-webhook";
}

/* The first certificate of a PEM text, or NULL (OpenSSL queue cleared). */
static X509 *pem_first_cert(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = NULL;

    if (b != NULL)
        x = PEM_read_bio_X509(b, NULL, no_password, NULL);
    BIO_free(b);
    ERR_clear_error();
    return x;
}

/* The unencrypted private key of a PEM text, or NULL (OpenSSL queue cleared). */
static EVP_PKEY *pem_key(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *k = NULL;

    if (b != NULL)
        k = PEM_read_bio_PrivateKey(b, NULL, no_password, NULL);
    BIO_free(b);
    ERR_clear_error();
    return k;
}

/* Seconds from the Unix epoch to t (either sign). @return 0, or WH_EINVAL. */
static int asn1_time_unix(const ASN1_TIME *t, long long *out, struct wh_error *err)
{
    ASN1_TIME *epoch = ASN1_TIME_set(NULL, 0);
    int day = 0;
    int sec = 0;
    int ok;

    if (epoch == NULL)
        return ossl_fail(err, WH_ENOMEM, "out of memory");
    ok = ASN1_TIME_diff(&day, &sec, epoch, t);
    ASN1_TIME_free(epoch);
    if (ok != 1)
        return ossl_fail(err, WH_EINVAL, "certificate has an invalid time");
    *out = (long long)day * 86400 + sec;
    return 0;
}

int certs_not_after(const char *cert_pem, long long *unix_seconds, struct wh_error *err)
{
    X509 *x;
    int rc;

    if (cert_pem == NULL)
        return wh_error_set(err, WH_EINVAL, "no certificate");
    x = pem_first_cert(cert_pem);
    if (x == NULL)
        return wh_error_set(err, WH_EINVAL, "no PEM certificate found");
    rc = asn1_time_unix(X509_get0_notAfter(x), unix_seconds, err);
    X509_free(x);
    return rc;
}

int certs_fingerprint_sha256(const char *cert_pem, char hex[65], struct wh_error *err)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    X509 *x;
    int ok;

    if (cert_pem == NULL)
        return wh_error_set(err, WH_EINVAL, "no certificate");
    x = pem_first_cert(cert_pem);
    if (x == NULL)
        return wh_error_set(err, WH_EINVAL, "no PEM certificate found");
    ok = X509_digest(x, EVP_sha256(), md, &n);
    X509_free(x);
    if (ok != 1 || n != 32)
        return wh_error_set(err, WH_ENOMEM, "cannot digest the certificate");
    for (unsigned int i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return 0;
}

int certs_not_before(const char *cert_pem, long long *unix_seconds, struct wh_error *err)
{
    X509 *x;
    int rc;

    if (cert_pem == NULL)
        return wh_error_set(err, WH_EINVAL, "no certificate");
    x = pem_first_cert(cert_pem);
    if (x == NULL)
        return wh_error_set(err, WH_EINVAL, "no PEM certificate found");
    rc = asn1_time_unix(X509_get0_notBefore(x), unix_seconds, err);
    X509_free(x);
    return rc;
}

int certs_chain_not_after(const char *cert_pem, long long *unix_seconds, size_t *index,
                          struct wh_error *err)
{
    BIO *b;
    X509 *x;
    long long earliest = 0;
    size_t first = 0;
    size_t n = 0;
    int rc = 0;

    if (cert_pem == NULL)
        return wh_error_set(err, WH_EINVAL, "no certificate");
    b = BIO_new_mem_buf(cert_pem, -1);
    if (b == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    while (rc == 0 && (x = PEM_read_bio_X509(b, NULL, no_password, NULL)) != NULL) {
        long long t = 0;

        rc = asn1_time_unix(X509_get0_notAfter(x), &t, err);
        /* Strictly earlier: of equal notAfters the first certificate is named. */
        if (rc == 0 && (n == 0 || t < earliest)) {
            earliest = t;
            first = n;
        }
        n++;
        X509_free(x);
    }
    BIO_free(b);
    ERR_clear_error(); /* the loop ends on "no start line" */
    if (rc < 0)
        return rc;
    if (n == 0)
        return wh_error_set(err, WH_EINVAL, "no PEM certificate found");
    *unix_seconds = earliest;
    if (index != NULL)
        *index = first;
    return 0;
}

int certs_check_key_file(const char *key_file, const char *cert_pem, struct wh_error *err)
{
    char *text = NULL;
    size_t len = 0;
    X509 *cert = NULL;
    EVP_PKEY *key = NULL;
    int rc;

    if (key_file == NULL || cert_pem == NULL)
        return wh_error_set(err, WH_EINVAL, "no key file or certificate");
    rc = file_read(key_file, &text, &len, err);
    if (rc < 0)
        return rc;
    key = pem_key(text);
    cert = pem_first_cert(cert_pem);
    if (key == NULL) {
        rc = wh_error_set(err, WH_EINVAL, "%s: no unencrypted PEM private key found", key_file);
        goto out;
    }
    if (cert == NULL) {
        rc = wh_error_set(err, WH_EINVAL, "no PEM certificate found");
        goto out;
    }
    /* Public halves only: EVP_PKEY_eq compares the key parameters and public key. */
    if (EVP_PKEY_eq(X509_get0_pubkey(cert), key) != 1)
        rc =
            wh_error_set(err, WH_ECONFLICT, "%s: the private key of another certificate", key_file);
out:
    EVP_PKEY_free(key);
    X509_free(cert);
    OPENSSL_cleanse(text, len);
    free(text);
    ERR_clear_error();
    return rc;
}

/*
 * Verify leaf as a TLS client would, with every certificate of ca_pem trusted
 * (X509_V_FLAG_PARTIAL_CHAIN: an intermediate CA is an anchor too) and name (a
 * DNS name or an IP address) as the server's name, matched against the SAN
 * only; `what` starts the message. Catches what a CA's own checks miss: a CA not yet valid, nameConstraints
 * excluding the name, an extendedKeyUsage without serverAuth.
 * @return 0, or WH_EINVAL with X509_verify_cert_error_string's reason.
 */
static int leaf_verifies(X509 *leaf, const char *ca_pem, const char *name, const char *what,
                         struct wh_error *err)
{
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    BIO *b = BIO_new_mem_buf(ca_pem, -1);
    X509_VERIFY_PARAM *param;
    unsigned char ip[16];
    X509 *x = NULL;
    int rc = 0;

    if (store == NULL || ctx == NULL || b == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    while ((x = PEM_read_bio_X509(b, NULL, no_password, NULL)) != NULL) {
        int ok = X509_STORE_add_cert(store, x); /* takes its own reference */

        X509_free(x);
        if (ok != 1) {
            rc = ossl_fail(err, WH_ERROR, "cannot add the CA certificate to a trust store");
            goto out;
        }
    }
    ERR_clear_error(); /* the loop ends on "no start line" */
    if (X509_STORE_CTX_init(ctx, store, leaf, NULL) != 1) {
        rc = ossl_fail(err, WH_ERROR, "cannot verify the serving certificate");
        goto out;
    }
    param = X509_STORE_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    if (X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_PARTIAL_CHAIN) != 1
        || X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER) != 1
        || (inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1
                ? X509_VERIFY_PARAM_set1_ip_asc(param, name)
                : X509_VERIFY_PARAM_set1_host(param, name, 0))
            != 1) {
        rc = ossl_fail(err, WH_ERROR, "cannot set verification parameters");
        goto out;
    }
    if (X509_verify_cert(ctx) != 1)
        rc = wh_error_set(err, WH_EINVAL, "%s does not verify for %s: %s", what, name,
                          X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
out:
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    BIO_free(b);
    ERR_clear_error();
    return rc;
}

/* The checks of certs_generate_leaf on an existing CA; messages name no file. */
static int ca_usable(X509 *ca, EVP_PKEY *ca_key, struct wh_error *err)
{
    uint32_t flags = X509_get_extension_flags(ca);

    if ((flags & EXFLAG_INVALID) != 0)
        return wh_error_set(err, WH_EINVAL, "certificate has invalid extensions");
    /* X509_check_ca also accepts v1 roots and keyCertSign alone; RFC 5280 4.2.1.9 wants this. */
    if ((flags & EXFLAG_CA) == 0)
        return wh_error_set(err, WH_EINVAL, "not a CA certificate (no basicConstraints CA:TRUE)");
    if ((flags & EXFLAG_KUSAGE) != 0 && (X509_get_key_usage(ca) & KU_KEY_CERT_SIGN) == 0)
        return wh_error_set(err, WH_EINVAL,
                            "CA certificate's keyUsage lacks keyCertSign (RFC 5280 4.2.1.3)");
    if (X509_check_private_key(ca, ca_key) != 1) {
        ERR_clear_error();
        return wh_error_set(err, WH_EINVAL, "private key does not match the CA certificate");
    }
    /* 0 is "cannot compare" (a malformed time): as unusable as an expired one. */
    if (X509_cmp_current_time(X509_get0_notAfter(ca)) <= 0)
        return wh_error_set(err, WH_EINVAL, "CA certificate has expired");
    return 0;
}

int certs_generate_leaf_seconds(struct certs_pair *leaf, bool *capped, const struct certs_pair *ca,
                                enum certs_key_type key_type, const char *const *dns, size_t ndns,
                                long long seconds, struct wh_error *err)
{
    X509 *ca_cert = NULL;
    EVP_PKEY *ca_key = NULL;
    EVP_PKEY *leaf_key = NULL;
    X509 *leaf_cert = NULL;
    struct certs_pair l = {NULL, NULL};
    bool was_capped = false;
    int rc;

    if (ca == NULL || ca->cert_pem == NULL || ca->key_pem == NULL)
        return wh_error_set(err, WH_EINVAL, "no CA certificate and key given");
    rc = check_leaf_args(key_type, dns, ndns, err);
    if (rc == 0)
        rc = check_seconds(seconds, err);
    if (rc < 0)
        return rc;
    ca_cert = pem_first_cert(ca->cert_pem);
    if (ca_cert == NULL) {
        rc = wh_error_set(err, WH_EINVAL, "no PEM certificate found");
        goto out;
    }
    ca_key = pem_key(ca->key_pem);
    if (ca_key == NULL) {
        rc = wh_error_set(err, WH_EINVAL, "no unencrypted PEM private key found");
        goto out;
    }
    rc = ca_usable(ca_cert, ca_key, err);
    if (rc < 0)
        goto out;
    leaf_key = key_generate(key_type);
    if (leaf_key == NULL) {
        rc = ossl_fail(err, WH_ERROR,
                       key_type == CERTS_KEY_RSA_2048 ? "cannot generate RSA-2048 key"
                                                      : "cannot generate P-256 key");
        goto out;
    }
    rc = make_cert(&leaf_cert, &was_capped, leaf_key, leaf_cn(dns[0]), ca_cert, ca_key, false, dns,
                   ndns, seconds, err);
    if (rc < 0)
        goto out;
    /* The CA's own checks above are not all a client makes (notBefore, nameConstraints). */
    rc = leaf_verifies(leaf_cert, ca->cert_pem, dns[0], "a serving certificate signed by it", err);
    if (rc < 0)
        goto out;
    rc = pair_encode(&l, leaf_cert, leaf_key, err);
    if (rc < 0)
        goto out;
    *leaf = l;
    l = (struct certs_pair){NULL, NULL}; /* now owned by the caller */
    if (capped != NULL)
        *capped = was_capped;
out:
    certs_pair_dispose(&l);
    X509_free(ca_cert);
    X509_free(leaf_cert);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(leaf_key);
    ERR_clear_error();
    return rc;
}

int certs_generate_leaf(struct certs_pair *leaf, bool *capped, const struct certs_pair *ca,
                        enum certs_key_type key_type, const char *const *dns, size_t ndns, int days,
                        struct wh_error *err)
{
    int rc = check_days(days, err);

    if (rc < 0)
        return rc;
    return certs_generate_leaf_seconds(leaf, capped, ca, key_type, dns, ndns,
                                       (long long)days * 86400, err);
}

int certs_generate_ca(struct certs_pair *ca, enum certs_key_type key_type, long long seconds,
                      struct wh_error *err)
{
    EVP_PKEY *key = NULL;
    X509 *cert = NULL;
    struct certs_pair c = {NULL, NULL};
    int rc;

    if (key_type != CERTS_KEY_ECDSA_P256 && key_type != CERTS_KEY_RSA_2048)
        return wh_error_set(err, WH_EINVAL, "unknown key type %d", (int)key_type);
    rc = check_seconds(seconds, err);
    if (rc < 0)
        return rc;
    key = key_generate(key_type);
    if (key == NULL) {
        rc = ossl_fail(err, WH_ERROR,
                       key_type == CERTS_KEY_RSA_2048 ? "cannot generate RSA-2048 key"
                                                      : "cannot generate P-256 key");
        goto out;
    }
    rc = make_cert(&cert, NULL, key, CA_COMMON_NAME, NULL, key, true, NULL, 0, seconds, err);
    if (rc < 0)
        goto out;
    rc = pair_encode(&c, cert, key, err);
    if (rc < 0)
        goto out;
    *ca = c;
    c = (struct certs_pair){NULL, NULL}; /* now owned by the caller */
out:
    certs_pair_dispose(&c);
    X509_free(cert);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return rc;
}

int certs_verify_leaf(const char *cert_pem, const char *bundle_pem, const char *name,
                      struct wh_error *err)
{
    X509 *leaf;
    int rc;

    if (cert_pem == NULL || bundle_pem == NULL || name == NULL)
        return wh_error_set(err, WH_EINVAL, "no certificate, bundle or name");
    leaf = pem_first_cert(cert_pem);
    if (leaf == NULL)
        return wh_error_set(err, WH_EINVAL, "no PEM certificate found");
    rc = leaf_verifies(leaf, bundle_pem, name, "certificate", err);
    X509_free(leaf);
    return rc;
}

int certs_pair_check(const struct certs_pair *p, struct wh_error *err)
{
    X509 *cert = NULL;
    EVP_PKEY *key = NULL;
    int rc = 0;

    if (p == NULL || p->cert_pem == NULL || p->key_pem == NULL)
        return wh_error_set(err, WH_EINVAL, "no certificate or key");
    cert = pem_first_cert(p->cert_pem);
    key = pem_key(p->key_pem);
    if (cert == NULL)
        rc = wh_error_set(err, WH_EINVAL, "no PEM certificate found");
    else if (key == NULL)
        rc = wh_error_set(err, WH_EINVAL, "no unencrypted PEM private key found");
    else if (X509_check_private_key(cert, key) != 1)
        rc = wh_error_set(err, WH_EINVAL, "private key does not match the certificate");
    X509_free(cert);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return rc;
}

int certs_generate(struct certs_pair *ca, struct certs_pair *leaf, enum certs_key_type key_type,
                   const char *const *dns, size_t ndns, int days, struct wh_error *err)
{
    EVP_PKEY *ca_key = NULL;
    EVP_PKEY *leaf_key = NULL;
    X509 *ca_cert = NULL;
    X509 *leaf_cert = NULL;
    struct certs_pair c = {NULL, NULL};
    struct certs_pair l = {NULL, NULL};
    int rc;

    rc = check_leaf_args(key_type, dns, ndns, err);
    if (rc == 0)
        rc = check_days(days, err);
    if (rc < 0)
        return rc;
    ca_key = key_generate(key_type);
    leaf_key = key_generate(key_type);
    if (ca_key == NULL || leaf_key == NULL) {
        rc = ossl_fail(err, WH_ERROR,
                       key_type == CERTS_KEY_RSA_2048 ? "cannot generate RSA-2048 key"
                                                      : "cannot generate P-256 key");
        goto out;
    }
    rc = make_cert(&ca_cert, NULL, ca_key, CA_COMMON_NAME, NULL, ca_key, true, NULL, 0,
                   (long long)days * 86400, err);
    if (rc < 0)
        goto out;
    rc = make_cert(&leaf_cert, NULL, leaf_key, leaf_cn(dns[0]), ca_cert, ca_key, false, dns, ndns,
                   (long long)days * 86400, err);
    if (rc < 0)
        goto out;
    rc = pair_encode(&c, ca_cert, ca_key, err);
    if (rc < 0)
        goto out;
    rc = pair_encode(&l, leaf_cert, leaf_key, err);
    if (rc < 0)
        goto out;
    *ca = c;
    *leaf = l;
    c = (struct certs_pair){NULL, NULL}; /* now owned by the caller */
    l = (struct certs_pair){NULL, NULL};
out:
    certs_pair_dispose(&c);
    certs_pair_dispose(&l);
    X509_free(ca_cert);
    X509_free(leaf_cert);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(leaf_key);
    ERR_clear_error();
    return rc;
}

const char *certs_format_utc(long long t, char *buf, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;

    if (gmtime_r(&tt, &tm) == NULL || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "%lld", t);
    return buf;
}

char *certs_base64(const void *data, size_t len)
{
    size_t cap;
    char *out;

    /* EVP_EncodeBlock takes an int length; caBundles and Secrets are far smaller. */
    if (len > (size_t)1 << 30)
        return NULL;
    cap = 4 * ((len + 2) / 3) + 1;
    out = malloc(cap);
    if (out == NULL)
        return NULL;
    /* One line, padded, NUL-terminated: EVP_EncodeBlock writes no newlines. */
    EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

char *certs_base64_decode(const char *text, size_t *len_out)
{
    size_t n = text != NULL ? strlen(text) : 0;
    size_t pad = 0;
    unsigned char *out;
    int got;

    /* Whole groups of four only: EVP_DecodeBlock takes no line breaks and no partial group. */
    if (text == NULL || n % 4 != 0 || n > (size_t)1 << 30)
        return NULL;
    out = malloc(n / 4 * 3 + 1);
    if (out == NULL)
        return NULL;
    got = n == 0 ? 0 : EVP_DecodeBlock(out, (const unsigned char *)text, (int)n);
    if (got < 0) {
        free(out);
        return NULL;
    }
    /* EVP_DecodeBlock counts the padding as zero bytes: take them off again. */
    if (n >= 1 && text[n - 1] == '=')
        pad++;
    if (n >= 2 && text[n - 2] == '=')
        pad++;
    got -= (int)pad;
    out[got] = '\0';
    if (len_out != NULL)
        *len_out = (size_t)got;
    return (char *)out;
}

/* Separate from certs_load_pair so that tests and tools can load any file; serve calls
 * it first unless --allow-insecure-key-permissions. */
int certs_check_key_permissions(const char *key_file, struct wh_error *err)
{
    struct stat st;

    if (key_file == NULL)
        return wh_error_set(err, WH_EINVAL, "no private key file");
    if (stat(key_file, &st) != 0)
        return wh_error_set(err, WH_ERROR, "%s: %s", key_file, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return wh_error_set(err, WH_EINVAL, "%s: private key is not a regular file", key_file);
    if (st.st_uid != 0 && st.st_uid != geteuid())
        return wh_error_set(err, WH_EINVAL,
                            "%s: private key is owned by uid %lu, neither root nor this "
                            "process (uid %lu)",
                            key_file, (unsigned long)st.st_uid, (unsigned long)geteuid());
    if ((st.st_mode & (S_IWGRP | S_IRWXO)) != 0)
        return wh_error_set(err, WH_EINVAL,
                            "%s: private key has mode %04o, writable by its group or open "
                            "to others (want 0600, 0640, 0400 or 0440; a Secret volume "
                            "needs defaultMode 0440 or 0400)",
                            key_file, (unsigned)(st.st_mode & 07777));
    return 0;
}
