/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cabundle.c - the caBundle patch of a webhook configuration (cabundle.h), which
 * controller/certkeeper.c sends: one JSON Patch built from a fresh GET, a `test`
 * of metadata.resourceVersion (a configuration changed in between is refused with
 * 422 rather than patched at the wrong indexes), then one `replace` of
 * /webhooks/i/clientConfig/caBundle per webhook (`add` where the member is
 * absent).
 *
 * Threads: reentrant, no state.
 */
#include "controller/cabundle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certs/certs.h"


int cabundle_patch_build(const json_t *config, const char *ca_b64, json_t **out, size_t *nwebhooks,
                         struct wh_error *err)
{
    const json_t *webhooks = json_object_get(config, "webhooks");
    const char *rv =
        json_string_value(json_object_get(json_object_get(config, "metadata"), "resourceVersion"));
    json_t *ops = NULL;
    size_t i;
    const json_t *wh;

    *out = NULL;
    if (rv == NULL)
        return wh_error_set(err, WH_EINVAL, "configuration has no metadata.resourceVersion");
    if (!json_is_array(webhooks))
        return wh_error_set(err, WH_EINVAL, "configuration has no webhooks array");
    ops = json_array();
    if (ops == NULL
        || json_array_append_new(ops,
                                 json_pack("{s:s, s:s, s:s}", "op", "test", "path",
                                           "/metadata/resourceVersion", "value", rv))
            != 0)
        goto nomem;
    json_array_foreach(webhooks, i, wh) {
        const json_t *cc = json_object_get(wh, "clientConfig");
        char path[64];

        if (!json_is_object(cc)) {
            json_decref(ops);
            return wh_error_set(err, WH_EINVAL, "webhooks[%zu] has no clientConfig", i);
        }
        snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig/caBundle", i);
        /* RFC 6902 4.3: replace needs the member to exist; add creates or replaces it */
        if (json_array_append_new(
                ops,
                json_pack("{s:s, s:s, s:s}", "op",
                          json_object_get(cc, "caBundle") != NULL ? "replace" : "add", "path", path,
                          "value", ca_b64))
            != 0)
            goto nomem;
    }
    if (nwebhooks != NULL)
        *nwebhooks = json_array_size(webhooks);
    *out = ops;
    return 0;
nomem:
    json_decref(ops);
    return wh_error_set(err, WH_ENOMEM, "out of memory");
}
