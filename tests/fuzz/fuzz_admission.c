/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_admission.c - bytes → admission_handle with a fixed set of Jobs (the
 * examples/ Jobs and tests/fuzz/jobs/, every plugin enabled somewhere).
 *
 * Properties checked on every input (D5, docs/kube-api.md §1):
 *  - the HTTP status is 200 or 400 (500 only on ENOMEM, which does not happen
 *    here), the body is JSON; a 400 is a Status with reason BadRequest;
 *  - a 200 is an AdmissionReview with the input's apiVersion and kind and
 *    response.uid == request.uid; a denial carries status.code 400 or 500;
 *  - patch present ⇔ patchType "JSONPatch"; the base64 patch decodes to a
 *    non-empty array of ops that patch_apply applies cleanly to request.object;
 *  - the review of the patched object is allowed with no patch (D5 idempotence);
 *  - the Job given to the webhook is not modified.
 * Job lookups: the ownerReference name picks a Job by metadata.name; the name
 * "lookup-error" fails with WH_EAPI (D7); the input length's parity picks
 * --job-lookup-failure (deny/allow), so both policies are reached.
 */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/patch.h"
#include "tests/fuzz/fuzzutil.h"
#include "webhook/admission.h"

#include "fuzz_jobs.h" /* generated: static const char *const fuzz_jobs[] */

#define NJOBS (sizeof(fuzz_jobs) / sizeof(fuzz_jobs[0]))

static json_t *jobs[NJOBS];     /* what the fake source hands out (incref) */
static json_t *pristine[NJOBS]; /* deep copies, to see that nobody writes to a Job */

struct fake_src {
    int served; /* index of the Job handed out last, -1 when none */
};

static int fake_get(void *userdata, const char *ns, const char *name, const char *uid,
                    json_t **job_out, struct wh_error *err)
{
    struct fake_src *f = userdata;

    (void)ns;
    (void)uid;
    FUZZ_CHECK(name != NULL && job_out != NULL, "job_source.get called with NULL");
    if (strcmp(name, "lookup-error") == 0)
        return wh_error_set(err, WH_EAPI, "injected lookup failure");
    for (size_t k = 0; k < NJOBS; k++) {
        const char *n =
            json_string_value(json_object_get(json_object_get(jobs[k], "metadata"), "name"));
        if (strcmp(n, name) == 0) {
            f->served = (int)k;
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
    log_set_level(getenv("FUZZ_LOG_DEBUG") != NULL ? LOG_LEVEL_DEBUG : LOG_LEVEL_ERROR);
    for (size_t k = 0; k < NJOBS; k++) {
        json_error_t e;

        jobs[k] = json_loads(fuzz_jobs[k], 0, &e);
        if (jobs[k] == NULL
            || !json_is_string(json_object_get(json_object_get(jobs[k], "metadata"), "name"))) {
            fprintf(stderr, "fuzz_jobs[%zu] is not a Job: %s\n", k, e.text);
            abort();
        }
        pristine[k] = json_deep_copy(jobs[k]);
    }
    return 0;
}

/* The decoded "patch" of a response: base64 of a JSON array. New reference. */
static json_t *decode_patch(const char *b64)
{
    size_t n = strlen(b64);
    unsigned char *bin;
    json_error_t e;
    json_t *ops;
    int dec;

    FUZZ_CHECK(n > 0 && n % 4 == 0, "patch is not padded base64: %s", b64);
    bin = malloc(n / 4 * 3 + 1);
    FUZZ_CHECK(bin != NULL, "out of memory");
    dec = EVP_DecodeBlock(bin, (const unsigned char *)b64, (int)n);
    FUZZ_CHECK(dec >= 0, "patch is not base64: %s", b64);
    if (b64[n - 1] == '=')
        dec--;
    if (b64[n - 2] == '=')
        dec--;
    ops = json_loadb((const char *)bin, (size_t)dec, 0, &e);
    FUZZ_CHECK(ops != NULL, "patch is not JSON: %s: %.*s", e.text, dec, (const char *)bin);
    free(bin);
    return ops;
}

/* admission_handle on body; returns the status and the decoded answer. */
static int handle(const char *body, size_t len, struct fake_src *f, json_t **answer)
{
    struct jobsource src = {.get = fake_get, .userdata = f};
    struct mutate_options opt = {
        .lookup_failure = (len & 1) ? LOOKUP_FAILURE_ALLOW : LOOKUP_FAILURE_DENY,
    };
    char *out = NULL;
    size_t out_len = 0;
    json_error_t e;
    int status;

    f->served = -1;
    status = admission_handle(body, len, &src, &opt, &out, &out_len);
    FUZZ_CHECK(status == 200 || status == 400, "HTTP status %d: %s", status,
               out != NULL ? out : "(no body)");
    FUZZ_CHECK(out != NULL, "no body");
    FUZZ_CHECK(out_len == strlen(out), "out_len %zu != strlen %zu", out_len, strlen(out));
    *answer = json_loadb(out, out_len, 0, &e);
    FUZZ_CHECK(json_is_object(*answer), "answer is not a JSON object: %s: %s", e.text, out);
    free(out);
    if (f->served >= 0)
        FUZZ_CHECK(json_equal(jobs[f->served], pristine[f->served]), "Job %d was modified",
                   f->served);
    return status;
}

static void check_bad_request(const json_t *answer)
{
    const char *msg = json_string_value(json_object_get(answer, "message"));
    char *a = fuzz_dump(answer);

    FUZZ_CHECK(str_is(json_object_get(answer, "kind"), "Status"), "400 body is not a Status: %s",
               a);
    FUZZ_CHECK(json_integer_value(json_object_get(answer, "code")) == 400, "code: %s", a);
    FUZZ_CHECK(str_is(json_object_get(answer, "reason"), "BadRequest"), "reason: %s", a);
    FUZZ_CHECK(msg != NULL && msg[0] != '\0', "no message: %s", a);
    free(a);
}

/*
 * The response of a 200 answer to review `in`: echo, uid, patch ⇔ patchType,
 * denial shape. @return borrowed response object.
 */
static const json_t *check_review(const json_t *in, const json_t *answer)
{
    const json_t *resp = json_object_get(answer, "response");
    const json_t *patch;
    const json_t *ptype;
    char *a = fuzz_dump(answer);

    FUZZ_CHECK(json_equal(json_object_get(answer, "apiVersion"), json_object_get(in, "apiVersion")),
               "apiVersion not echoed: %s", a);
    FUZZ_CHECK(json_equal(json_object_get(answer, "kind"), json_object_get(in, "kind")),
               "kind not echoed: %s", a);
    FUZZ_CHECK(json_is_object(resp), "no response: %s", a);
    FUZZ_CHECK(json_is_string(json_object_get(resp, "uid"))
                   && json_equal(json_object_get(resp, "uid"),
                                 json_object_get(json_object_get(in, "request"), "uid")),
               "response.uid != request.uid: %s", a);
    FUZZ_CHECK(json_is_boolean(json_object_get(resp, "allowed")), "allowed: %s", a);
    patch = json_object_get(resp, "patch");
    ptype = json_object_get(resp, "patchType");
    FUZZ_CHECK((patch != NULL) == (ptype != NULL), "patch without patchType or back: %s", a);
    if (patch != NULL) {
        FUZZ_CHECK(json_is_string(patch), "patch is not a string: %s", a);
        FUZZ_CHECK(str_is(ptype, "JSONPatch"), "patchType: %s", a);
    }
    if (!json_is_true(json_object_get(resp, "allowed"))) {
        json_int_t code =
            json_integer_value(json_object_get(json_object_get(resp, "status"), "code"));

        FUZZ_CHECK(code == 400 || code == 500, "denial code: %s", a);
        FUZZ_CHECK(json_is_string(json_object_get(json_object_get(resp, "status"), "message")),
                   "denial message: %s", a);
    }
    free(a);
    return resp;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fake_src f = {.served = -1};
    json_t *answer = NULL;
    json_t *answer2 = NULL;
    json_t *in = NULL;
    json_t *ops = NULL;
    json_t *patched = NULL;
    json_t *again = NULL;
    const json_t *resp;
    const json_t *object;
    struct wh_error err = {0};
    char *text;
    int status;

    status = handle((const char *)data, size, &f, &answer);
    if (status == 400) {
        check_bad_request(answer);
        goto out;
    }
    /* read as the handler reads it: a NUL inside a string is allowed */
    in = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    FUZZ_CHECK(json_is_object(in), "200 for a body that is not a JSON object");
    resp = check_review(in, answer);
    object = json_object_get(json_object_get(in, "request"), "object");
    if (json_object_get(resp, "patch") == NULL)
        goto out;

    /* The patch applies to the object it was made for. */
    FUZZ_CHECK(json_is_object(object), "a patch for a request without an object");
    ops = decode_patch(json_string_value(json_object_get(resp, "patch")));
    FUZZ_CHECK(json_is_array(ops) && json_array_size(ops) > 0, "patch is not a non-empty array");
    patched = patch_apply(object, ops, &err);
    if (patched == NULL) {
        char *o = fuzz_dump(object);
        char *p = fuzz_dump(ops);

        FUZZ_CHECK(0, "patch does not apply: %s\nobject: %s\npatch: %s", err.msg, o, p);
    }

    /* D5: the webhook on its own output has nothing more to do. */
    again = json_deep_copy(in);
    FUZZ_CHECK(again != NULL, "out of memory");
    json_object_set(json_object_get(again, "request"), "object", patched);
    text = json_dumps(again, JSON_COMPACT);
    FUZZ_CHECK(text != NULL, "out of memory");
    status = handle(text, strlen(text), &f, &answer2);
    FUZZ_CHECK(status == 200, "second review: HTTP %d", status);
    resp = check_review(again, answer2);
    if (!json_is_true(json_object_get(resp, "allowed")) || json_object_get(resp, "patch") != NULL) {
        char *p2 = fuzz_dump(json_object_get(resp, "patch") != NULL
                                 ? decode_patch(json_string_value(json_object_get(resp, "patch")))
                                 : json_object_get(resp, "status"));
        char *p1 = fuzz_dump(ops);
        char *o = fuzz_dump(patched);

        FUZZ_CHECK(0, "not idempotent (D5)\nfirst patch: %s\npatched: %s\nsecond: %s", p1, o, p2);
    }
    free(text);
out:
    json_decref(again);
    json_decref(patched);
    json_decref(ops);
    json_decref(in);
    json_decref(answer2);
    json_decref(answer);
    return 0;
}
