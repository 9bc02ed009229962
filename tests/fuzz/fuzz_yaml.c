/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_yaml.c - bytes → yaml_load_buffer (k8s/yaml.h), the Job loader of
 * `render -f` and of kubeconfig.
 *
 * Properties:
 *  - 0 with a value that json_dumps encodes and that reads back equal (valid
 *    UTF-8, no NaN/inf; "\0" escapes give strings and keys with NUL, as in Go;
 *    jansson cannot read such keys back, so those are only dumped), or WH_EINVAL/WH_ENOMEM with a non-empty message and
 *    no value;
 *  - JSON is YAML: when jansson reads the input as JSON and libyaml accepts it
 *    too, both give the same value (spec: `render -f` takes JSON Jobs).
 *    libyaml refusing some valid JSON (YAML 1.1 limits, e.g. 1024-char implicit
 *    keys) is not checked here.
 *  - yaml_load_documents (every document) fails whenever yaml_load_buffer
 *    does, and when it succeeds its first document is yaml_load_buffer's value.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/yaml.h"
#include "tests/fuzz/fuzzutil.h"

/* The documents of data against yaml_load_buffer's rc and value (first, borrowed). */
static void check_documents(const uint8_t *data, size_t size, int rc, const json_t *first)
{
    struct wh_error err = {0};
    json_t *docs = NULL;
    int drc = yaml_load_documents((const char *)data, size, &docs, &err);

    if (drc != 0) {
        FUZZ_CHECK(drc == WH_EINVAL || drc == WH_ENOMEM || drc == WH_ETOOBIG,
                   "yaml_load_documents returned %d", drc);
        FUZZ_CHECK(docs == NULL && err.msg[0] != '\0', "error %d: a value or no message", drc);
        return;
    }
    FUZZ_CHECK(rc == 0, "documents read where the first one fails (%d)", rc);
    FUZZ_CHECK(json_array_size(docs) >= 1, "no document");
    FUZZ_CHECK(json_equal(json_array_get(docs, 0), first), "first document differs");
    json_decref(docs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wh_error err = {0};
    json_t *out = NULL;
    json_t *back;
    json_t *as_json;
    char *text;
    int rc = yaml_load_buffer((const char *)data, size, &out, &err);

    check_documents(data, size, rc, out);
    if (rc != 0) {
        FUZZ_CHECK(rc == WH_EINVAL || rc == WH_ENOMEM, "yaml_load_buffer returned %d", rc);
        FUZZ_CHECK(err.msg[0] != '\0', "error %d without a message", rc);
        FUZZ_CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL, "message not terminated");
        FUZZ_CHECK(out == NULL, "error %d but a value", rc);
        return 0;
    }
    FUZZ_CHECK(out != NULL, "0 without a value");
    text = json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY);
    FUZZ_CHECK(text != NULL, "json_dumps fails on the result");
    /* jansson reads NUL in strings (JSON_ALLOW_NUL) but never in object keys. */
    if (strstr(text, "\\u0000") == NULL) {
        back = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        FUZZ_CHECK(back != NULL && json_equal(back, out), "result does not read back: %s", text);
        json_decref(back);
    }

    as_json = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (as_json != NULL && !json_equal(as_json, out)) {
        char *j = fuzz_dump(as_json);

        FUZZ_CHECK(0, "JSON input read differently as YAML\n json: %s\n yaml: %s", j, text);
    }
    json_decref(as_json);
    free(text);
    json_decref(out);
    return 0;
}
