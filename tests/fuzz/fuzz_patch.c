/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_patch.c - two JSON documents (split on the first NUL) → patch_diff, then
 * patch_apply (base/patch.h).
 *
 * Properties: patch_diff gives an array of ops (an empty one for equal docs);
 * patch_apply of it, sent through its JSON text as the webhook sends it, turns
 * the first document into one json_equal to the second and leaves the first
 * untouched; the diff of the result against the second is []; each op carries
 * "op" and "path", paths are RFC 6901 pointers ("" or starting with "/");
 * patch_diff_write's text (the answer's patch) is byte for byte the dump of
 * patch_diff's ops, with as many ops.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/patch.h"
#include "tests/fuzz/fuzzutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    json_t *a, *b, *a_copy, *ops, *ops2, *res, *none;
    struct wh_error err = {0};
    char *text;
    size_t k;
    json_t *op;

    if (nul == NULL)
        return -1;
    a = json_loadb((const char *)data, (size_t)(nul - data), JSON_DECODE_ANY, NULL);
    b = json_loadb((const char *)nul + 1, size - (size_t)(nul - data) - 1, JSON_DECODE_ANY, NULL);
    if (a == NULL || b == NULL) {
        json_decref(a);
        json_decref(b);
        return -1;
    }
    a_copy = json_deep_copy(a);
    FUZZ_CHECK(a_copy != NULL, "out of memory");

    ops = patch_diff(a, b);
    FUZZ_CHECK(json_is_array(ops), "patch_diff gave no array");
    FUZZ_CHECK(json_equal(a, b) == (json_array_size(ops) == 0), "empty patch iff equal docs");
    json_array_foreach(ops, k, op) {
        const char *p = json_string_value(json_object_get(op, "path"));

        FUZZ_CHECK(json_is_string(json_object_get(op, "op")), "op without \"op\"");
        FUZZ_CHECK(p != NULL && (p[0] == '\0' || p[0] == '/'), "bad path %s", p ? p : "(none)");
    }
    text = json_dumps(ops, JSON_COMPACT);
    FUZZ_CHECK(text != NULL, "patch does not encode");
    {
        struct buf direct;
        size_t n = 0;

        buf_init(&direct, BUF_NO_MAX);
        FUZZ_CHECK(patch_diff_write(a, b, NULL, &direct, &n) == 0, "patch_diff_write failed");
        FUZZ_CHECK(strcmp(buf_cstr(&direct), text) == 0 && n == json_array_size(ops),
                   "patch_diff_write differs from the dump\n text: %s\n dump: %s",
                   buf_cstr(&direct), text);
        buf_dispose(&direct);
    }
    ops2 = json_loads(text, 0, NULL);
    FUZZ_CHECK(ops2 != NULL, "patch does not decode: %s", text);

    res = patch_apply(a, ops2, &err);
    if (res == NULL) {
        char *sa = fuzz_dump(a);
        char *sb = fuzz_dump(b);

        FUZZ_CHECK(0, "patch does not apply: %s\n a: %s\n b: %s\n patch: %s", err.msg, sa, sb,
                   text);
    }
    FUZZ_CHECK(json_equal(a, a_copy), "patch_apply modified its input");
    if (!json_equal(res, b)) {
        char *sa = fuzz_dump(a);
        char *sb = fuzz_dump(b);
        char *sr = fuzz_dump(res);

        FUZZ_CHECK(0, "apply(a, diff(a, b)) != b\n a: %s\n b: %s\n patch: %s\n got: %s", sa, sb,
                   text, sr);
    }
    none = patch_diff(res, b);
    FUZZ_CHECK(json_is_array(none) && json_array_size(none) == 0, "second diff not empty");

    json_decref(none);
    json_decref(res);
    json_decref(ops2);
    free(text);
    json_decref(ops);
    json_decref(a_copy);
    json_decref(a);
    json_decref(b);
    return 0;
}
