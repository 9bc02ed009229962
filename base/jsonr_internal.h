/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonr_internal.h - jsmn's tokenizing as base/jsonr.c runs it, exposed for
 * tests/base/check_jsonr.c and tests/fuzz/fuzz_reader.c: they hold the stepped
 * tokenizing (jsonr.h, JSONR_STEP) to the one-call one. Not for other modules.
 */
#ifndef WH_JSONR_INTERNAL_H
#define WH_JSONR_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/**
 * jsmn (strict, parent links) over the len bytes at js, in one call (stepped false)
 * or JSONR_STEP bytes at a time with the depth counted between steps (stepped true),
 * tokens grown as fast() grows them. *tokens gets how many tokens jsmn made.
 * @return jsmn_parse's answer (the token count, or a JSMN_ERROR_* value; stepped, also
 * JSMN_ERROR_INVAL when containers nest deeper than JSONR_MAX_DEPTH + 1 at a step's
 * end), or JSMN_ERROR_NOMEM when memory runs out.
 */
int jsonr_tokenize(const char *js, size_t len, bool stepped, size_t *tokens);

/**
 * jsonr_fast with the body's scan made first (jsonr_scan_body), so jsmn reads it in one
 * call whatever its length: the reader the stepped one must agree with. Where the two
 * tokenizings differ (a body jsmn reads as invalid JSON in a way the depth count
 * between steps meets, `[[]:[`), this one must decline too.
 * @return new reference, or NULL when the fast path declines.
 */
json_t *jsonr_fast_whole(const char *body, size_t len);

#endif
