/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_podedit.c - the differential fuzzer of the edits recorded over a pod view
 * (plugins/podedit.h): bytes → a review or a pod (the document's, when it reads them,
 * and jansson's tree), then random scripts of edits seeded by the bytes, made by
 * podedit over the view of either builder and by podutil on a jansson copy.
 *
 * Property (tests/podeditdiff.h): every call gives the same result, warning and error,
 * the containers are counted alike, D15 finds the same first new violation, and the
 * patches are the same bytes. Seeds: the admission harness's corpus.
 */
#include <stdint.h>

#include "tests/fuzz/fuzzutil.h"

#define PED_CHECK(cond, ...) FUZZ_CHECK(cond, __VA_ARGS__)
#include "tests/podeditdiff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t seed = 0xcbf29ce484222325ull;

    /* the scripts follow the bytes: FNV-1a of them, never 0 (xorshift's fixed point) */
    for (size_t i = 0; i < size; i++)
        seed = (seed ^ data[i]) * 0x100000001b3ull;
    rng_state = seed != 0 ? seed : 1;
    check_random((const char *)data, size, 4, "input");
    return 0;
}
