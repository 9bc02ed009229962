/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sshkey.c - RSA key pairs in the formats Volcano's `ssh` plugin writes (sshkey.h;
 * docs/plugins.md §4.3).
 *
 * id_rsa is OpenSSL's "traditional" (PKCS#1) PEM, which is exactly the layout
 * Volcano writes (64-column base64, no headers). id_rsa.pub is built from n and e:
 * BN_bn2mpi writes a 4-byte big-endian length and the magnitude with a leading 0x00
 * when the top bit is set, i.e. RFC 4253 §5's mpint for a positive number.
 *
 * Threads: sshkey_generate is pure but for the generation time it adds to
 * sshkey_keygen (atomics).
 */
#include "certs/sshkey.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

struct metric_seconds sshkey_keygen;

/* Last OpenSSL error as text, for a one-line message. */
static int ossl_error(struct wh_error *err, const char *what)
{
    char buf[160];
    unsigned long e = ERR_get_error();

    if (e == 0)
        return wh_error_set(err, WH_ERROR, "ssh key: %s failed", what);
    ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    return wh_error_set(err, WH_ERROR, "ssh key: %s failed: %s", what, buf);
}

/* The BIO's contents as a NUL-terminated malloc'd string, NULL on ENOMEM. */
static char *bio_take_string(BIO *b)
{
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    char *out;

    if (n < 0)
        return NULL;
    out = malloc((size_t)n + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, data, (size_t)n);
    out[n] = '\0';
    return out;
}

/* PKCS#1 "BEGIN RSA PRIVATE KEY" PEM of pk. */
static int private_pem(EVP_PKEY *pk, char **out, struct wh_error *err)
{
    BIO *b = BIO_new(BIO_s_mem());
    int rc = 0;

    *out = NULL;
    if (b == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    if (PEM_write_bio_PrivateKey_traditional(b, pk, NULL, NULL, 0, NULL, NULL) != 1) {
        rc = ossl_error(err, "PEM encoding");
        goto out;
    }
    *out = bio_take_string(b);
    if (*out == NULL)
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
out:
    /* the memory BIO held the private key: wipe it before it is freed */
    {
        char *data = NULL;
        long n = BIO_get_mem_data(b, &data);

        if (n > 0 && data != NULL)
            OPENSSL_cleanse(data, (size_t)n);
    }
    BIO_free(b);
    return rc;
}

/* Append the mpint of bn (RFC 4253 §5) at buf + *off; buf is large enough. */
static void put_mpint(unsigned char *buf, size_t *off, const BIGNUM *bn)
{
    *off += (size_t)BN_bn2mpi(bn, buf + *off);
}

/* "ssh-rsa " + base64(string "ssh-rsa", mpint e, mpint n) + "\n" (RFC 4253 §6.6). */
static int public_line(EVP_PKEY *pk, char **out, struct wh_error *err)
{
    static const char type[] = "ssh-rsa";
    BIGNUM *n = NULL;
    BIGNUM *e = NULL;
    unsigned char *blob = NULL;
    char *line = NULL;
    size_t len = 0;
    size_t cap;
    size_t b64;
    int rc = 0;

    *out = NULL;
    if (EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_N, &n) != 1
        || EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_E, &e) != 1) {
        rc = ossl_error(err, "reading n and e");
        goto out;
    }
    cap = 4 + (sizeof(type) - 1) + (size_t)BN_bn2mpi(e, NULL) + (size_t)BN_bn2mpi(n, NULL);
    blob = malloc(cap);
    b64 = 4 * ((cap + 2) / 3);
    line = malloc(strlen(type) + 1 + b64 + 2);
    if (blob == NULL || line == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    blob[0] = 0;
    blob[1] = 0;
    blob[2] = 0;
    blob[3] = (unsigned char)(sizeof(type) - 1);
    memcpy(blob + 4, type, sizeof(type) - 1);
    len = 4 + sizeof(type) - 1;
    put_mpint(blob, &len, e);
    put_mpint(blob, &len, n);
    memcpy(line, type, sizeof(type) - 1);
    line[sizeof(type) - 1] = ' ';
    b64 = (size_t)EVP_EncodeBlock((unsigned char *)line + sizeof(type), blob, (int)len);
    line[sizeof(type) + b64] = '\n';
    line[sizeof(type) + b64 + 1] = '\0';
    *out = line;
    line = NULL; /* now owned by the caller */
out:
    BN_free(n);
    BN_free(e);
    free(blob);
    free(line);
    return rc;
}

void sshkey_free_secret(char *s)
{
    if (s != NULL) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

int sshkey_generate(char **priv_out, char **pub_out, struct wh_error *err)
{
    double started = clock_mono_s();
    EVP_PKEY *pk = EVP_RSA_gen(SSHKEY_RSA_BITS); /* e = 65537, OpenSSL's default */
    int rc;

    *priv_out = NULL;
    *pub_out = NULL;
    if (pk == NULL)
        return ossl_error(err, "RSA generation");
    metric_seconds_add(&sshkey_keygen, clock_mono_s() - started);
    rc = private_pem(pk, priv_out, err);
    if (rc == 0)
        rc = public_line(pk, pub_out, err);
    if (rc < 0) {
        sshkey_free_secret(*priv_out);
        *priv_out = NULL;
    }
    EVP_PKEY_free(pk);
    return rc;
}
