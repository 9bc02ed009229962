/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cabundle.h - the JSON Patch that sets the caBundle of every webhook of a
 * webhook configuration; controller/certkeeper.c, which keeps the caBundles,
 * sends it.
 *
 * Threads: cabundle_patch_build is reentrant.
 */
#ifndef WH_CABUNDLE_H
#define WH_CABUNDLE_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"

/**
 * The JSON Patch (RFC 6902) that sets every webhook's caBundle of a
 * MutatingWebhookConfiguration, as read by a GET: first
 * {"op":"test","path":"/metadata/resourceVersion","value":RV} (so that a
 * configuration changed since the GET is refused, 422, and read again), then for
 * each i in webhooks[]: {"op":"replace","path":"/webhooks/i/clientConfig/caBundle",
 * "value":ca_b64}, or "add" for a webhook without a caBundle member (RFC 6902
 * replace needs an existing target).
 * @param config    the configuration object (borrowed)
 * @param ca_b64    base64 of the PEM CA certificate (copied)
 * @param[out] out  new reference to the patch array
 * @param[out] nwebhooks  webhooks patched (may be NULL)
 * @return 0; WH_EINVAL when config has no metadata.resourceVersion or no
 *         webhooks array, or a webhook without a clientConfig object; WH_ENOMEM.
 */
int cabundle_patch_build(const json_t *config, const char *ca_b64, json_t **out, size_t *nwebhooks,
                         struct wh_error *err);

#endif
