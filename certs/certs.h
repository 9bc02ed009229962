/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certs.h - serving certificates: generation (OpenSSL EVP API) and loading.
 *
 * Reentrant. Private keys never reach a log line.
 */
#ifndef WH_CERTS_H
#define WH_CERTS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* A certificate and its private key, both PEM text (NUL-terminated, malloc'd). */
struct certs_pair {
    char *cert_pem;
    char *key_pem;
};

/** Free both members; safe to call twice. */
void certs_pair_dispose(struct certs_pair *p);

/**
 * Read a PEM certificate (chain) file and PEM private key file and check that the
 * key matches the first certificate. Both must be regular files (symlinks
 * followed): a FIFO or device is refused without blocking (gen-certs
 * review: a FIFO as --ca-key hung gen-certs).
 * @return 0; WH_ERROR naming the file when unreadable; WH_EINVAL naming the file
 *         when it is not a regular file ("FILE: a FIFO, not a regular file"), not
 *         PEM, or when the key does not match.
 */
int certs_load_pair(struct certs_pair *out, const char *cert_file, const char *key_file,
                    struct wh_error *err);

/* Key algorithm of certs_generate (both the CA's and the serving key). */
enum certs_key_type {
    CERTS_KEY_ECDSA_P256 = 0, /* ECDSA on P-256 (prime256v1), signed with SHA-256; default */
    CERTS_KEY_RSA_2048 = 1,   /* RSA 2048 bits (e 65537), PKCS#1 v1.5 with SHA-256 */
};

/**
 * Make a CA (self-signed, CA:TRUE, keyCertSign) and a serving certificate signed
 * by it: keys of key_type (ECDSA P-256 or RSA-2048, signatures with SHA-256),
 * subjectAltName DNS entries = dns[0..ndns) (and IP entries for names that parse
 * as IPv4/IPv6), extendedKeyUsage serverAuth, CA:FALSE, valid `days` days from
 * one hour ago. Verifiable by clients that ignore the CN (RFC 6125, Go crypto/x509).
 * @param[out] ca    CA certificate and key
 * @param[out] leaf  serving certificate and key
 * @return 0; WH_EINVAL on no/empty SAN, days outside 1..36500 or an unknown
 *         key_type; WH_ERROR / WH_ENOMEM with the OpenSSL reason.
 */
int certs_generate(struct certs_pair *ca, struct certs_pair *leaf, enum certs_key_type key_type,
                   const char *const *dns, size_t ndns, int days, struct wh_error *err);

/**
 * Make a serving certificate signed by an existing CA (renewal that keeps the
 * caBundle already deployed): a new key of key_type, the subjectAltNames,
 * extensions and `days` (from one hour ago) of certs_generate's leaf, except
 * that notAfter is capped at the CA's notAfter. The leaf's algorithm may differ
 * from the CA's. The CA (the first certificate of ca->cert_pem, key
 * ca->key_pem, unencrypted) is checked with OpenSSL first: basicConstraints
 * CA:TRUE (RFC 5280 4.2.1.9), keyCertSign when keyUsage is present (4.2.1.3),
 * the key matching it, notAfter still ahead. The new leaf is then verified with
 * X509_verify_cert as a TLS client would (gen-certs review): every certificate of
 * ca->cert_pem trusted, X509_V_FLAG_PARTIAL_CHAIN (an intermediate CA may be
 * given alone), purpose sslserver, host dns[0] (an IP address when it parses as
 * one) matched against the SAN only; so a CA not yet valid, or whose
 * nameConstraints exclude the names, is refused.
 * @param[out] leaf    serving certificate and key (certs_pair_dispose)
 * @param[out] capped  whether notAfter was cut to the CA's; may be NULL
 * @param ca  borrowed; its key is only used to sign, never copied
 * @return 0; WH_EINVAL as certs_generate for the arguments, and with a one-line
 *         reason (naming no file) for a CA that is not PEM, not a CA, without
 *         keyCertSign, not matching its key, or expired, and "a serving
 *         certificate signed by it does not verify for NAME: REASON" (REASON:
 *         X509_verify_cert_error_string) when the leaf fails verification;
 *         WH_ERROR / WH_ENOMEM with the OpenSSL reason.
 */
int certs_generate_leaf(struct certs_pair *leaf, bool *capped, const struct certs_pair *ca,
                        enum certs_key_type key_type, const char *const *dns, size_t ndns, int days,
                        struct wh_error *err);

/**
 * certs_generate_leaf with the validity in seconds (1 s .. 100 years) instead of
 * days, so that managed rotations (controller/certkeeper.c) run in seconds in tests.
 * Same checks, capping, verification, ownership and errors as certs_generate_leaf;
 * WH_EINVAL "validity N s out of range 1..M" for seconds out of range.
 */
int certs_generate_leaf_seconds(struct certs_pair *leaf, bool *capped, const struct certs_pair *ca,
                                enum certs_key_type key_type, const char *const *dns, size_t ndns,
                                long long seconds, struct wh_error *err);

/**
 * Make a CA alone (self-signed, CN volcano-plugin-webhook-ca, basicConstraints
 * critical CA:TRUE pathlen:0, keyUsage keyCertSign cRLSign digitalSignature, as
 * certs_generate's), with a new key of key_type, valid `seconds` (1 s .. 100 years)
 * from one hour ago. Its serving certificates come from certs_generate_leaf* : the
 * CA gets its own lifetime (gen-certs --ca-days, certkeeper's CA validity).
 * @param[out] ca  certificate and key (certs_pair_dispose)
 * @return 0; WH_EINVAL for an unknown key_type or seconds out of range; WH_ERROR /
 *         WH_ENOMEM with the OpenSSL reason.
 */
int certs_generate_ca(struct certs_pair *ca, enum certs_key_type key_type, long long seconds,
                      struct wh_error *err);

/**
 * Whether the first certificate of cert_pem verifies now for name (a DNS name or
 * an IP address, matched against the subjectAltName only) with every certificate
 * of bundle_pem as a trust anchor (X509_V_FLAG_PARTIAL_CHAIN), purpose sslserver:
 * what kube-apiserver checks of a webhook against its caBundle. Both borrowed.
 * @return 0; WH_EINVAL when a text holds no certificate, or "certificate does not
 *         verify for NAME: REASON" (X509_verify_cert_error_string: expired, not yet
 *         valid, unable to get local issuer certificate, ...); WH_ENOMEM / WH_ERROR.
 */
int certs_verify_leaf(const char *cert_pem, const char *bundle_pem, const char *name,
                      struct wh_error *err);

/**
 * Whether p holds a PEM certificate and an unencrypted PEM private key that
 * matches its first certificate (X509_check_private_key). p borrowed.
 * @return 0; WH_EINVAL "no PEM certificate found", "no unencrypted PEM private key
 *         found" or "private key does not match the certificate".
 */
int certs_pair_check(const struct certs_pair *p, struct wh_error *err);

/**
 * notAfter of the first certificate in cert_pem (a chain's leaf) as Unix
 * seconds (UTC; negative before 1970), read with OpenSSL's ASN1_TIME_diff.
 * @param[out] unix_seconds
 * @return 0; WH_EINVAL when cert_pem is NULL, holds no PEM certificate or an
 *         invalid time; WH_ENOMEM.
 */
int certs_not_after(const char *cert_pem, long long *unix_seconds, struct wh_error *err);

/**
 * The SHA-256 fingerprint of the first certificate in cert_pem: the digest of its
 * DER encoding (what `openssl x509 -fingerprint -sha256` prints), as 64 lower-case
 * hex digits and a NUL. cert_pem borrowed.
 * @param[out] hex  65 bytes of the caller's
 * @return 0; WH_EINVAL when cert_pem is NULL or holds no PEM certificate; WH_ENOMEM.
 */
int certs_fingerprint_sha256(const char *cert_pem, char hex[65], struct wh_error *err)
    __attribute__((warn_unused_result));

/**
 * notBefore of the first certificate in cert_pem as Unix seconds, read like
 * certs_not_after (certs_generate* put it one hour before the issue time).
 * @param[out] unix_seconds
 * @return 0; WH_EINVAL when cert_pem is NULL, holds no PEM certificate or an
 *         invalid time; WH_ENOMEM.
 */
int certs_not_before(const char *cert_pem, long long *unix_seconds, struct wh_error *err);

/**
 * The earliest notAfter of every certificate in cert_pem (a served chain: an
 * intermediate that expires before the leaf ends the chain's validity, RFC 5280
 * 6.1.3 (a)(2)), as Unix seconds read like certs_not_after.
 * @param[out] unix_seconds
 * @param[out] index  0-based position in cert_pem of the certificate with that
 *                    notAfter (the first of equals; 0 is the leaf); may be NULL
 * @return 0; WH_EINVAL when cert_pem is NULL, holds no PEM certificate or an
 *         invalid time; WH_ENOMEM. Outputs are untouched on error.
 */
int certs_chain_not_after(const char *cert_pem, long long *unix_seconds, size_t *index,
                          struct wh_error *err);

/**
 * Whether key_file holds the private key of the first certificate of cert_pem
 * (public keys compared with EVP_PKEY_eq), e.g. a ca.key left in gen-certs --out
 * beside a ca.crt it would not match (gen-certs review). key_file must be a
 * regular file (symlinks followed); its text is scrubbed after use.
 * @param cert_pem  borrowed PEM text
 * @return 0 when it is that key; WH_ECONFLICT ("FILE: the private key of another
 *         certificate") when it is another key; WH_ERROR naming the file when
 *         unreadable; WH_EINVAL naming the file when not a regular file or not an
 *         unencrypted PEM private key, or when cert_pem holds no certificate.
 */
int certs_check_key_file(const char *key_file, const char *cert_pem, struct wh_error *err);

/**
 * Unix seconds t as RFC 3339 UTC ("2035-01-01T00:00:00Z") into buf (len bytes;
 * 21 are enough), for notAfter in messages; the bare number when gmtime_r or
 * strftime cannot. @return buf.
 */
const char *certs_format_utc(long long t, char *buf, size_t len);

/**
 * Base64 (RFC 4648, standard alphabet, padded, no line breaks) of data[0..len),
 * e.g. a PEM CA certificate as a webhook's caBundle or a Secret's data value.
 * @return malloc'd NUL-terminated text (free()), or NULL when out of memory or
 *         len is over 1 GiB.
 */
char *certs_base64(const void *data, size_t len);

/**
 * Decode base64 (RFC 4648, standard alphabet, padded, no line breaks: what the
 * API server sends for a Secret's data and a caBundle) with OpenSSL's
 * EVP_DecodeBlock.
 * @param[out] len_out  decoded length (may be NULL)
 * @return malloc'd bytes with a NUL after them (free()), or NULL when text is
 *         NULL, not whole groups of four, holds a character outside the alphabet,
 *         is over 1 GiB, or memory ran out.
 */
char *certs_base64_decode(const char *text, size_t *len_out);

/**
 * Refuse a private key file that others could read or change (such a key is as
 * good as published): follows symbolic links (kubelet Secret volumes are symlinks into a
 * ..data directory), then requires a regular file owned by root or by the
 * effective user, with no permission for "other" and no group write
 * (mode & 0027 == 0). Group read stays allowed: a Secret volume with
 * defaultMode 0440 and the pod's fsGroup is how a non-root process reads its key.
 * Nothing is read from the file.
 * @return 0; WH_ERROR naming the file when it cannot be stat'ed; WH_EINVAL naming
 *         the file, its mode or owner and the fix when the rule is broken.
 */
int certs_check_key_permissions(const char *key_file, struct wh_error *err);

#endif
