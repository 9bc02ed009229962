/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sshkeys.h - the per-process store of the `ssh` plugin's key pairs (docs/plugins.md §4.3,
 * decision D11): one pair per Job uid for the Job's whole life, made by
 * certs/sshkey.h's sshkey_generate.
 *
 * Threads: the store is shared by every reconcile worker. One mutex guards the
 * map; an RSA key is generated outside it, so workers for different Jobs
 * generate in parallel, while a worker asking for a uid whose pair is being
 * generated waits for that pair (one pair per uid).
 */
#ifndef WH_SSHKEYS_H
#define WH_SSHKEYS_H

#include "base/error.h"

struct sshkeys_store;

/** @return a new empty store (sshkeys_destroy), NULL on ENOMEM. */
struct sshkeys_store *sshkeys_create(void);

/** Free the store and its keys (wiped first). NULL is a no-op. No other thread may use it. */
void sshkeys_destroy(struct sshkeys_store *s);

/**
 * The pair of Job uid: the stored one, else a new one (sshkeys_generate) that is
 * stored before it is returned. Never regenerates a stored pair (D11).
 * Generation runs without the lock; a second caller for the same uid waits and
 * gets the same pair. If sshkeys_drop(uid) runs meanwhile, the new pair is
 * returned but not kept.
 * @param[out] priv_out, pub_out malloc'd copies (free())
 * @return 0; < 0 with err filled (a failed generation is not stored).
 */
int sshkeys_get_or_generate(struct sshkeys_store *s, const char *uid, char **priv_out,
                            char **pub_out, struct wh_error *err) WH_WARN_UNUSED;

/**
 * Look up uid without generating.
 * @param[out] priv_out, pub_out malloc'd copies (free()), set only when found
 * @return 0 found; WH_ENOTFOUND (also while a pair is still being generated); WH_ENOMEM.
 */
int sshkeys_lookup(struct sshkeys_store *s, const char *uid, char **priv_out, char **pub_out);

/**
 * Record the pair found in an adopted J-ssh Secret for uid (D11), replacing any
 * stored pair: the Secret in the cluster is what the pods mount. priv/pub are copied.
 * @return 0 or WH_ENOMEM.
 */
int sshkeys_put(struct sshkeys_store *s, const char *uid, const char *priv,
                const char *pub) WH_WARN_UNUSED;

/** Forget uid's pair (the Job's Secret was deleted). Unknown uid: no-op. */
void sshkeys_drop(struct sshkeys_store *s, const char *uid);

#endif
