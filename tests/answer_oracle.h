/* SPDX-License-Identifier: Apache-2.0 */
/*
 * answer_oracle.h - the AdmissionReview answer as the jansson path built it, for
 * the differential checks of the text writer (tests/webhook/check_answer.c,
 * tests/fuzz/fuzz_answer.c).
 *
 * The oracle runs the same decision (mutate_review, with the ops as a jansson tree
 * from patch_diff), dumps the ops with json_dumps, and builds the whole answer as a
 * json_t: {"apiVersion","kind","response":{"uid","allowed"[,"patchType","patch"]
 * [,"warnings"][,"status"]}}. admission_handle's text must be exactly its compact
 * dump and parse to a tree json_equal to it.
 *
 * Header-only (static functions, no Check) so the fuzz harness can use it too.
 * Single-threaded use; every result is caller-owned.
 */
#ifndef WH_ANSWER_ORACLE_H
#define WH_ANSWER_ORACLE_H

#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sanitize.h"
#include "webhook/mutate.h"

#define ORACLE_MAX_PATCH (3u << 20) /* admission.c ADMISSION_MAX_PATCH */

/* An optional string member as admission.c reads it: absent, null or not a string → "". */
static const char *oracle_str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));

    return s != NULL ? s : "";
}

/* base64 (no line breaks) of n bytes as a JSON string; new reference, NULL on ENOMEM. */
static json_t *oracle_base64(const char *s, size_t n)
{
    char *b64 = malloc(4 * ((n + 2) / 3) + 1);
    json_t *v;

    if (b64 == NULL)
        return NULL;
    EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)s, (int)n);
    v = json_string(b64);
    free(b64);
    return v;
}

/*
 * The answer tree for a body that admission_handle answered with 200 (a valid
 * AdmissionReview), deciding it again through src and opt (borrowed).
 * @return new reference; NULL when body is not an object or on ENOMEM.
 */
static json_t *oracle_answer(const char *body, size_t len, const struct jobsource *src,
                             const struct mutate_options *opt)
{
    json_t *review = json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    const json_t *request = json_object_get(review, "request");
    const json_t *resource = json_object_get(request, "resource");
    const json_t *object = json_object_get(request, "object");
    struct mutate_request req = {
        .uid = oracle_str(request, "uid"),
        .operation = oracle_str(request, "operation"),
        .resource = oracle_str(resource, "resource"),
        .group = oracle_str(resource, "group"),
        .sub_resource = oracle_str(request, "subResource"),
        .ns = oracle_str(request, "namespace"),
        .pod = json_is_object(object) ? object : NULL,
    };
    struct mutate_result res;
    json_t *resp = NULL;
    json_t *answer = NULL;
    char *text = NULL;

    if (!json_is_object(review)) {
        json_decref(review);
        return NULL;
    }
    mutate_review(&req, src, opt, &res);
    text = json_array_size(res.patch) > 0 ? json_dumps(res.patch, JSON_COMPACT) : NULL;
    if (text != NULL && strlen(text) > ORACLE_MAX_PATCH) {
        res.allowed = false;
        res.status_code = 400;
        snprintf(res.message, sizeof(res.message),
                 "the plugins' patch for this pod is over %u bytes, more than a pod can hold",
                 ORACLE_MAX_PATCH);
    }
    resp = json_pack("{s:s, s:b}", "uid", req.uid, "allowed", res.allowed);
    if (resp == NULL)
        goto out;
    if (text != NULL && res.allowed) {
        json_object_set_new(resp, "patchType", json_string("JSONPatch"));
        json_object_set_new(resp, "patch", oracle_base64(text, strlen(text)));
    }
    if (res.warnings.n > 0)
        json_object_set_new(resp, "warnings", warnings_to_json(&res.warnings));
    if (!res.allowed) {
        char msg[sizeof(res.message)];
        json_t *m;

        memcpy(msg, res.message, sizeof(msg));
        msg[sizeof(msg) - 1] = '\0';
        m = json_string(msg);
        if (m == NULL)
            sanitize_ascii(msg);
        json_decref(m);
        json_object_set_new(resp, "status",
                            json_pack("{s:i, s:s, s:s}", "code",
                                      res.status_code > 0 ? res.status_code : 500, "message", msg,
                                      "status", "Failure"));
    }
    answer = json_pack("{s:s, s:s, s:o}", "apiVersion", oracle_str(review, "apiVersion"), "kind",
                       "AdmissionReview", "response", resp);
    resp = NULL;
out:
    free(text);
    json_decref(resp);
    mutate_result_dispose(&res);
    json_decref(review);
    return answer;
}

/*
 * Compare admission_handle's 200 answer (got, got_len bytes) for body with the oracle's.
 * @return 0 when got is byte for byte the oracle's compact dump and parses to a tree
 *         json_equal to it; -1 with a message in why (the two texts) otherwise.
 */
static int oracle_compare(const char *body, size_t len, const struct jobsource *src,
                          const struct mutate_options *opt, const char *got, size_t got_len,
                          char *why, size_t why_len)
{
    json_t *want = oracle_answer(body, len, src, opt);
    char *want_text = want != NULL ? json_dumps(want, JSON_COMPACT) : NULL;
    json_t *got_tree = json_loadb(got, got_len, 0, NULL);
    int rc = 0;

    if (want_text == NULL) {
        snprintf(why, why_len, "the oracle built no answer");
        rc = -1;
    } else if (got_tree == NULL || !json_equal(got_tree, want)) {
        snprintf(why, why_len, "trees differ\n got: %.1500s\nwant: %.1500s", got, want_text);
        rc = -1;
    } else if (strlen(want_text) != got_len || memcmp(want_text, got, got_len) != 0) {
        snprintf(why, why_len, "texts differ\n got: %.1500s\nwant: %.1500s", got, want_text);
        rc = -1;
    }
    free(want_text);
    json_decref(got_tree);
    json_decref(want);
    return rc;
}

#endif
