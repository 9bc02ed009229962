/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_answer.c - the differential fuzzer of the AdmissionReview text writer: bytes →
 * admission_handle (the answer written as text, the patch from patch_diff_write)
 * and, for every 200 answer, the jansson path's answer for the same review
 * (tests/answer_oracle.h: mutate_review's ops tree, json_dumps, a json_t answer).
 *
 * Property: the two answers are the same bytes and parse to json_equal trees.
 * Seeds: the admission harness's corpus (example pods, hostile reviews). Jobs: the
 * fixed set of fuzz_admission (examples/ and tests/fuzz/jobs/, by metadata.name).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "tests/answer_oracle.h"
#include "tests/fuzz/fuzzutil.h"
#include "webhook/admission.h"

#include "fuzz_jobs.h" /* generated: static const char *const fuzz_jobs[] */

#define NJOBS (sizeof(fuzz_jobs) / sizeof(fuzz_jobs[0]))

static json_t *jobs[NJOBS];

static int fake_get(void *userdata, const char *ns, const char *name, const char *uid,
                    json_t **job_out, struct wh_error *err)
{
    (void)userdata;
    (void)ns;
    (void)uid;
    if (strcmp(name, "lookup-error") == 0)
        return wh_error_set(err, WH_EAPI, "injected lookup failure");
    for (size_t k = 0; k < NJOBS; k++) {
        const char *n =
            json_string_value(json_object_get(json_object_get(jobs[k], "metadata"), "name"));

        if (strcmp(n, name) == 0) {
            *job_out = json_incref(jobs[k]);
            return 0;
        }
    }
    return wh_error_set(err, WH_ENOTFOUND, "jobs.batch.volcano.sh \"%s\" not found", name);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_set_level(LOG_LEVEL_ERROR);
    for (size_t k = 0; k < NJOBS; k++) {
        jobs[k] = json_loads(fuzz_jobs[k], 0, NULL);
        if (jobs[k] == NULL) {
            fprintf(stderr, "fuzz_jobs[%zu] is not JSON\n", k);
            abort();
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char why[8192];
    struct jobsource src = {.get = fake_get};
    struct mutate_options opt = {
        .lookup_failure = (size & 1) ? LOOKUP_FAILURE_ALLOW : LOOKUP_FAILURE_DENY,
    };
    char *out = NULL;
    size_t out_len = 0;
    int status = admission_handle((const char *)data, size, &src, &opt, &out, &out_len);

    FUZZ_CHECK(out != NULL, "no body (status %d)", status);
    if (status == 200)
        FUZZ_CHECK(
            oracle_compare((const char *)data, size, &src, &opt, out, out_len, why, sizeof(why))
                == 0,
            "the answer is not the jansson path's: %s", why);
    free(out);
    return 0;
}
