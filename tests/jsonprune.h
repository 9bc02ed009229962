/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonprune.h - what base/jsonr.h's jsonr_fast_kept promises, written with jansson
 * alone: the test's oracle for the reader that builds only what a keep list names
 * (tests/base/check_jsonr.c, tests/fuzz/fuzz_reader.c).
 */
#ifndef WH_TESTS_JSONPRUNE_H
#define WH_TESTS_JSONPRUNE_H

#include <jansson.h>
#include <string.h>

#include "base/jsonr.h"

/* v with keep applied (struct jsonr_keep): a new tree, NULL for NULL. */
static inline json_t *jsonprune(const json_t *v, const struct jsonr_keep *keep)
{
    json_t *out;
    const char *key;
    size_t klen;
    json_t *m;
    size_t i;

    if (keep == NULL || !(json_is_object(v) || json_is_array(v)))
        return json_deep_copy(v);
    if (json_is_array(v)) {
        out = json_array();
        json_array_foreach(v, i, m)
            json_array_append_new(out, jsonprune(m, keep));
        return out;
    }
    out = json_object();
    json_object_keylen_foreach((json_t *)v, key, klen, m) {
        const struct jsonr_keep *e = keep;

        while (e->key != NULL && !(strlen(e->key) == klen && memcmp(e->key, key, klen) == 0))
            e++;
        if (e->key != NULL)
            json_object_setn_new(out, key, klen, jsonprune(m, e->sub));
        else if (e->sub == JSONR_KEEP_NAMES)
            json_object_setn_new(out, key, klen, json_null());
    }
    return out;
}

#endif
