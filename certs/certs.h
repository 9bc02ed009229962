/*
 * certs.h - serving certificates: generation (OpenSSL EVP API) and loading.
 *
 * Reentrant. Private keys never reach a log line.
 */
#ifndef WH_CERTS_H
#define WH_CERTS_H

#include <stddef.h>

#include "webhook/error.h"

/* A certificate and its private key, both PEM text (NUL-terminated, malloc'd). */
struct certs_pair {
    char *cert_pem;
    char *key_pem;
};

/** Free both members; safe to call twice. */
void certs_pair_dispose(struct certs_pair *p);

/**
 * Read a PEM certificate (chain) file and PEM private key file and check that the
 * key matches the first certificate.
 * @return 0; WH_ERROR naming the file when unreadable; WH_EINVAL when not PEM or
 *         when the key does not match.
 */
int certs_load_pair(struct certs_pair *out, const char *cert_file, const char *key_file,
                    struct wh_error *err);

/**
 * Make a CA (self-signed, CA:TRUE, keyCertSign) and a serving certificate signed
 * by it: ECDSA P-256, subjectAltName DNS entries = dns[0..ndns) (and IP entries for
 * names that parse as IPv4/IPv6), extendedKeyUsage serverAuth, CA:FALSE, valid
 * `days` days from one hour ago. Verifiable by clients that ignore the CN.
 * @param[out] ca    CA certificate and key
 * @param[out] leaf  serving certificate and key
 * @return 0, or WH_ERROR / WH_ENOMEM with the OpenSSL reason.
 */
int certs_generate(struct certs_pair *ca, struct certs_pair *leaf, const char *const *dns,
                   size_t ndns, int days, struct wh_error *err);

#endif
