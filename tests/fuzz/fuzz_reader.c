/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_reader.c - the differential fuzzer of the fast JSON reader (base/jsonr.h):
 * bytes → jsonr_fast and json_loadb (JSON_DECODE_ANY | JSON_ALLOW_NUL, as the
 * admission path reads a review).
 *
 * Property: when the fast path builds a tree, jansson builds one too and the two
 * have the same compact dump (values, types, key order) and are json_equal; and
 * jsonr_loadb answers as json_loadb does (a tree with the same dump, or NULL with
 * the same error text and position). And the reader that builds only what a keep
 * list names, with the pod admission's list (mutate_pod_read inside a review):
 * jsonr_fast_kept declines exactly where jsonr_fast does, and otherwise builds
 * json_loadb's tree pruned by the list (tests/jsonprune.h). And jsmn read in steps
 * (JSONR_STEP) makes one call's tokens, unless the body nests too deep for the reader
 * (then it may stop early); a scanned body builds the stepped one's tree. And the
 * document (jsonr_doc_read) declines where jsonr_fast does, and its root's tree
 * (jsonr_doc_value) is json_loadb's, its kept tree the kept reader's, and the pod view of it (k8s/podview.h) is the view
 * of json_loadb's tree.
 * Seeds: the admission harness's corpus (example pods, hostile reviews).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonr.h"
#include "base/jsonr_internal.h"
#include "tests/fuzz/fuzzutil.h"
#include "tests/jsonprune.h"
#include "tests/podviewdump.h"
#include "webhook/mutate.h"

#define FLAGS (JSON_DECODE_ANY | JSON_ALLOW_NUL)

static char *dump(const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

    FUZZ_CHECK(s != NULL, "json_dumps failed");
    return s;
}

/* A review as admission_handle reads one: the pod's members mutate_pod_read names. */
static const struct jsonr_keep request_keep[] = {
    {"uid", NULL}, {"resource", NULL}, {"object", mutate_pod_read}, {NULL, NULL}};
static const struct jsonr_keep review_keep[] = {
    {"apiVersion", NULL}, {"kind", NULL}, {"request", request_keep}, {NULL, NULL}};

static void check_kept(const char *body, size_t size, const json_t *fast, const json_t *want)
{
    json_t *kept = jsonr_fast_kept(body, size, review_keep);

    FUZZ_CHECK((kept != NULL) == (fast != NULL), "the kept reader %s where the whole one %s",
               kept != NULL ? "built" : "declined", fast != NULL ? "built" : "declined");
    if (kept != NULL) {
        json_t *pruned = jsonprune(want, review_keep);
        char *a = dump(kept);
        char *b = dump(pruned);

        FUZZ_CHECK(strcmp(a, b) == 0, "kept tree differs:\n kept: %.2000s\n pruned: %.2000s", a, b);
        free(a);
        free(b);
        json_decref(pruned);
    }
    json_decref(kept);
}

static void check_steps(const char *body, size_t size, const json_t *fast)
{
    struct jsonr_scan scan;
    size_t whole_tokens;
    size_t stepped_tokens;
    int whole;
    int stepped;
    json_t *scanned;

    if (size == 0 || size > JSONR_STEPPED_MAX || memchr(body, '\0', size) != NULL)
        return;
    whole = jsonr_tokenize(body, size, false, &whole_tokens);
    stepped = jsonr_tokenize(body, size, true, &stepped_tokens);
    if (stepped != whole || stepped_tokens != whole_tokens) {
        json_t *one_call = jsonr_fast_whole(body, size);

        /* a stop (too deep, or not JSON), where one call's tokens build nothing either */
        FUZZ_CHECK(stepped == -2 /* JSMN_ERROR_INVAL */ && one_call == NULL,
                   "jsmn in steps: %d (%zu tokens), in one call: %d (%zu tokens)%s", stepped,
                   stepped_tokens, whole, whole_tokens,
                   one_call != NULL ? ", which build a tree" : "");
        json_decref(one_call);
    }
    /* with the scan made, the reader tokenizes in one call */
    jsonr_scan_body(body, size, &scan);
    scanned = jsonr_loadb_kept(body, size, NULL, &scan, NULL);
    FUZZ_CHECK(fast == NULL || json_equal(fast, scanned), "the scanned body's tree differs");
    json_decref(scanned);
}

/* The pod view of the document (at request.object, else the root) is the view of
 * json_loadb's tree (k8s/podview.h: its two builders agree). */
static void check_view(const struct jsonr_doc *doc, const json_t *want)
{
    int at = jsonr_doc_member(doc, jsonr_doc_member(doc, 0, "request"), "object");
    const json_t *pod = json_object_get(json_object_get(want, "request"), "object");
    struct pod_view a;
    struct pod_view b;
    char *da;
    char *db;

    if (at < 0) {
        at = 0;
        pod = want;
    }
    FUZZ_CHECK(podview_from_doc(&a, doc, at) == 0, "podview_from_doc failed");
    FUZZ_CHECK(podview_from_json(&b, pod) == 0, "podview_from_json failed");
    da = podview_dump(&a);
    db = podview_dump(&b);
    FUZZ_CHECK(da != NULL && db != NULL, "podview_dump failed");
    FUZZ_CHECK(strcmp(da, db) == 0, "the views differ:\n document: %.2000s\n tree: %.2000s", da,
               db);
    free(da);
    free(db);
    podview_dispose(&a);
    podview_dispose(&b);
}

/* The document declines where the fast path does, and its root's tree is json_loadb's. */
static void check_doc(const char *body, size_t size, const json_t *fast, const json_t *want)
{
    struct jsonr_doc *doc = jsonr_doc_read(body, size, NULL);

    FUZZ_CHECK((doc != NULL) == (fast != NULL), "the document %s where the fast path %s",
               doc != NULL ? "was read" : "declined", fast != NULL ? "built" : "declined");
    if (doc != NULL) {
        json_t *tree = jsonr_doc_value(doc, 0);
        json_t *kept = jsonr_doc_value_kept(doc, 0, review_keep);
        json_t *fast_kept = jsonr_fast_kept(body, size, review_keep);
        char *a = dump(tree);
        char *b = dump(want);
        char *c = dump(kept);
        char *k = dump(fast_kept);

        FUZZ_CHECK(strcmp(c, k) == 0,
                   "the document's kept tree differs:\n doc: %.2000s\n fast: %.2000s", c, k);
        free(c);
        free(k);
        json_decref(kept);
        json_decref(fast_kept);

        FUZZ_CHECK(strcmp(a, b) == 0,
                   "the document's tree differs:\n doc: %.2000s\n json_loadb: %.2000s", a, b);
        free(a);
        free(b);
        json_decref(tree);
        check_view(doc, want);
    }
    jsonr_doc_free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    json_error_t e1;
    json_error_t e2;
    json_t *fast = jsonr_fast(body, size);
    json_t *want = json_loadb(body, size, FLAGS, &e1);
    json_t *got = jsonr_loadb(body, size, &e2);

    if (fast != NULL) {
        char *a;
        char *b;

        FUZZ_CHECK(want != NULL, "the fast path built a tree where json_loadb says: %s", e1.text);
        a = dump(fast);
        b = dump(want);
        FUZZ_CHECK(strcmp(a, b) == 0, "trees differ:\n fast: %.2000s\n json_loadb: %.2000s", a, b);
        FUZZ_CHECK(json_equal(fast, want), "dumps agree but json_equal does not");
        free(a);
        free(b);
    }
    check_kept(body, size, fast, want);
    check_doc(body, size, fast, want);
    check_steps(body, size, fast);
    FUZZ_CHECK((got == NULL) == (want == NULL), "jsonr_loadb %s, json_loadb %s",
               got != NULL ? "built" : "failed", want != NULL ? "built" : "failed");
    if (got == NULL) {
        FUZZ_CHECK(strcmp(e1.text, e2.text) == 0 && e1.line == e2.line && e1.column == e2.column,
                   "errors differ: %s / %s", e2.text, e1.text);
    } else {
        char *a = dump(got);
        char *b = dump(want);

        FUZZ_CHECK(strcmp(a, b) == 0, "jsonr_loadb's tree is not json_loadb's");
        free(a);
        free(b);
    }
    json_decref(fast);
    json_decref(want);
    json_decref(got);
    return 0;
}
