/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cabundle.h - the caBundle keeper of `serve --self-signed`: a background thread
 * that patches the caBundle of every webhook of the MutatingWebhookConfiguration
 * to the CA this replica made (certs/selfsigned.h).
 *
 * Each replica that runs with --self-signed makes its own CA, and the caBundle
 * holds the CA of the last replica that patched it: for single-replica or test
 * setups only. Readiness should wait for cabundle_done.
 *
 * Threads: a patcher runs one thread of its own; cabundle_done may be called
 * from any thread; start and stop from one thread (the main thread).
 */
#ifndef WH_CABUNDLE_H
#define WH_CABUNDLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "k8s/client.h"

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

struct cabundle_config {
    const char *webhook_config; /* MutatingWebhookConfiguration name (copied) */
    const char *ca_pem;         /* the PEM CA certificate to install (copied) */
    long initial_backoff_ms;    /* first retry delay; 0 → 500 */
    long max_backoff_ms;        /* cap of the doubling delay; 0 → 30000 */
    long request_timeout_ms;    /* per GET or PATCH; 0 → 10000 */
};

struct cabundle_patcher;

/**
 * Start the patch thread: GET the configuration, PATCH it with
 * cabundle_patch_build's patch (application/json-patch+json), and on any
 * failure (conflict, 5xx, timeout, 422 after a concurrent change, 404 while
 * the configuration is not created yet, 403 while RBAC is missing) log the
 * attempt and retry after a doubling delay, until it succeeds or the patcher
 * is stopped. Every attempt's outcome is logged (info on success, warn on a
 * failure, with the attempt number and next delay).
 * @param kc  shared client (borrowed; must outlive the patcher)
 * @param[out] out  the running patcher (cabundle_stop)
 * @return 0; WH_EINVAL (no name or CA); WH_ENOMEM; WH_ERROR when the thread
 *         cannot start.
 */
int cabundle_start(struct cabundle_patcher **out, struct k8s_client *kc,
                   const struct cabundle_config *cfg, struct wh_error *err);

/** True once the caBundle of every webhook holds our CA. Thread-safe; p NULL → false. */
bool cabundle_done(const struct cabundle_patcher *p);

/**
 * Stop retrying (an attempt in flight finishes first, bounded by its request
 * timeout), join the thread and free p. p may be NULL.
 */
void cabundle_stop(struct cabundle_patcher *p);

#endif
