/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sshkey.h - ssh key pairs in the formats Volcano's `ssh` plugin writes (docs/plugins.md §4.3):
 * RSA 2048 with OpenSSL. The store that keeps one pair per Job is plugins/sshkeys.h.
 */
#ifndef WH_CERTS_SSHKEY_H
#define WH_CERTS_SSHKEY_H

#include "base/error.h"
#include "base/metric.h"

#define SSHKEY_RSA_BITS 2048 /* docs/plugins.md §4.3, §5.4 */

/**
 * Generate a fresh pair (docs/plugins.md §4.3): RSA 2048 bits, e = 65537, with EVP_RSA_gen.
 * @param[out] priv_out malloc'd `id_rsa`: PKCS#1 PEM, "-----BEGIN RSA PRIVATE KEY-----",
 *             base64 in 64-character lines, "-----END RSA PRIVATE KEY-----", each line
 *             LF-terminated, no PEM headers (free())
 * @param[out] pub_out  malloc'd `id_rsa.pub`: "ssh-rsa " + base64 of the RFC 4253 §6.6
 *             wire form (string "ssh-rsa", mpint e, mpint n) + "\n", no comment (free())
 * @return 0; WH_ENOMEM or WH_ERROR (OpenSSL failure) with err filled. Thread-safe.
 */
int sshkey_generate(char **priv_out, char **pub_out, struct wh_error *err) WH_WARN_UNUSED;

/** Wipe a private key's text (OPENSSL_cleanse) and free it; NULL is a no-op. */
void sshkey_free_secret(char *s);

/* Pairs generated and the time they took: webhook_ssh_keygen_total and
 * webhook_ssh_keygen_seconds_total (webhook/metrics.c). */
extern struct metric_seconds sshkey_keygen;

#endif
