/* SPDX-License-Identifier: Apache-2.0 */
/*
 * warnings.h - the AdmissionResponse `warnings` list of one request.
 *
 * Request-owned (one per admission call), never shared between threads.
 * Entries are de-duplicated (D14: "warnings are never repeated within one
 * response") and capped, since kube-apiserver shows each to the user.
 */
#ifndef WH_WARNINGS_H
#define WH_WARNINGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* kube-apiserver passes on 256 characters of each warning and 4096 of them all
 * (plugins/diagnose.h DIAGNOSE_WARNING_CHARS): 16 entries of 256 bytes fit both. */
#define WARNINGS_MAX     16  /* entries kept; later ones are dropped */
#define WARNINGS_LEN_MAX 257 /* bytes per entry with its NUL, longer text is cut */
#define WARNINGS_KEY_MAX 128 /* bytes of an entry's key with its NUL (DIAGNOSE_KEY_MAX) */

struct warnings {
    size_t n; /* entries in use */
    char items[WARNINGS_MAX][WARNINGS_LEN_MAX];
    char keys[WARNINGS_MAX][WARNINGS_KEY_MAX]; /* the finding items[i] tells, "" none */
};

/** Empty the list. Safe to call on an uninitialised struct. */
void warnings_init(struct warnings *w);

/**
 * Append a printf-formatted warning unless an identical one is already there or
 * the list is full. The text is cut to WARNINGS_LEN_MAX - 1 bytes, made valid UTF-8
 * (wh_utf8_sanitize) and its control characters, C0, DEL and C1, replaced by '?'
 * (sanitize_controls): a warning is one printable line ("Dynamic Admission
 * Control", Response: warnings are shown to the client as HTTP Warning headers).
 * w may be NULL (then nothing happens).
 */
void warnings_add(struct warnings *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * warnings_add, recording under the warning the key of the finding it tells (a
 * field path such as "spec.plugins.ray", see plugins/diagnose.h struct diagnostic's
 * key): a Job-level diagnostic with the same key says the same thing, so pod
 * admission leaves it out (webhook/mutate.c, D16). key borrowed, NULL or "" is
 * none, cut to WARNINGS_KEY_MAX - 1 bytes. A warning already there keeps its text
 * and gets the key if it had none.
 */
void warnings_add_keyed(struct warnings *w, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** @return whether one of w's first n entries has key (non-empty); false for NULL or "". */
bool warnings_has_key(const struct warnings *w, size_t n, const char *key);

/** @return new reference: JSON array of strings (empty array when none), NULL on ENOMEM. */
json_t *warnings_to_json(const struct warnings *w);

#endif
