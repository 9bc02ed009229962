/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_watch.c - bytes → watch_decode_event (k8s/watch.h), one line of a
 * WATCH stream as the API server sends it.
 *
 * Properties: 0 exactly when the line is a JSON object whose "type" is one of
 * ADDED MODIFIED DELETED BOOKMARK ERROR and whose "object" is an object, and
 * then type_out names that type and object_out is that object (a new
 * reference, equal to what jansson reads); otherwise WH_EINVAL with a
 * non-empty message and object_out NULL. A \u0000 in a string is JSON the
 * decoder accepts (Kubernetes strings may carry one), so the reference parse
 * allows it too.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/watch.h"
#include "tests/fuzz/fuzzutil.h"

static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wh_error err = {0};
    enum watch_event_type type = (enum watch_event_type)99;
    json_t *object = (json_t *)&err; /* must be overwritten */
    json_t *ev = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    const json_t *want_obj = json_object_get(ev, "object");
    const char *t = json_string_value(json_object_get(ev, "type"));
    int want = -1;
    int rc;

    if (json_is_object(ev) && t != NULL && json_is_object(want_obj))
        for (int k = 0; k < 5; k++)
            if (strcmp(t, names[k]) == 0)
                want = k;

    rc = watch_decode_event((const char *)data, size, &type, &object, &err);
    if (want >= 0) {
        FUZZ_CHECK(rc == 0, "a valid %s event refused: %s", t, err.msg);
        FUZZ_CHECK((int)type == want, "type %d for %s", (int)type, t);
        FUZZ_CHECK(object != NULL && json_equal(object, want_obj), "object differs");
        json_decref(object);
    } else {
        FUZZ_CHECK(rc == WH_EINVAL, "not an event, but rc %d", rc);
        FUZZ_CHECK(err.msg[0] != '\0', "no message");
        FUZZ_CHECK(object == NULL, "object_out not NULL on error");
    }
    json_decref(ev);
    return 0;
}
