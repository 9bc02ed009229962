/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cabundle.c - the caBundle keeper (cabundle.h): the background thread that
 * installs a CA as the caBundle of every webhook of the
 * MutatingWebhookConfiguration (`serve --self-signed`).
 *
 * The patch is one JSON Patch per attempt, built from a fresh GET: a `test` of
 * metadata.resourceVersion (a configuration changed in between is refused with
 * 422 rather than patched at the wrong indexes), then one `replace` of
 * /webhooks/i/clientConfig/caBundle per webhook (`add` where the member is
 * absent). Any failure is retried with a doubling delay (500 ms to 30 s by
 * default) until it succeeds or the patcher stops.
 *
 * Threads: the patch thread only reads the patcher's immutable fields and the
 * shareable k8s client; its struct backoff_thread (base/backoff.h) holds the
 * stop flag it sleeps on, `done` is atomic (read by MHD workers through
 * cabundle_done).
 * The CA certificate is public; no key material reaches a log line.
 */
#include "controller/cabundle.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/backoff.h"
#include "base/log.h"
#include "certs/certs.h"

#define WEBHOOK_CONFIG_GROUP       "admissionregistration.k8s.io"
#define WEBHOOK_CONFIG_VERSION     "v1"
#define WEBHOOK_CONFIG_RESOURCE    "mutatingwebhookconfigurations"
#define DEFAULT_INITIAL_BACKOFF_MS 500L
#define DEFAULT_MAX_BACKOFF_MS     30000L
#define DEFAULT_REQUEST_TIMEOUT_MS 10000L

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

struct cabundle_patcher {
    struct k8s_client *kc; /* borrowed */
    char *path;            /* REST path of the configuration */
    char *name;            /* its name, for log lines */
    char *ca_b64;          /* the caBundle value */
    long initial_backoff_ms;
    long max_backoff_ms;
    long timeout_ms;
    struct backoff_thread th; /* the patch thread, stopped by cabundle_stop */
    atomic_bool done;
};

/* One GET + PATCH. @return 0 with *n the webhooks patched, or the error code. */
static int patch_once(struct cabundle_patcher *p, size_t *n, struct wh_error *err)
{
    json_t *config = NULL;
    json_t *ops = NULL;
    int rc;

    rc = k8s_request(p->kc, "GET", p->path, NULL, NULL, p->timeout_ms, &config, err);
    if (rc < 0)
        return rc;
    rc = cabundle_patch_build(config, p->ca_b64, &ops, n, err);
    if (rc == 0)
        rc = k8s_request(p->kc, "PATCH", p->path, ops, "application/json-patch+json", p->timeout_ms,
                         NULL, err);
    json_decref(ops);
    json_decref(config);
    return rc;
}

static void *patch_thread(void *arg)
{
    struct cabundle_patcher *p = arg;

    for (unsigned attempt = 1;; attempt++) {
        struct wh_error err = {0, ""};
        /* No jitter: one patcher per replica, and they race for nothing. */
        long delay = backoff_delay_ms(p->initial_backoff_ms, p->max_backoff_ms, attempt);
        size_t n = 0;
        int rc;

        if (backoff_thread_stopping(&p->th))
            break;
        rc = patch_once(p, &n, &err);
        if (rc == 0) {
            atomic_store(&p->done, true);
            LOG_INFO("caBundle patched mutatingwebhookconfiguration=%s webhooks=%zu attempt=%u",
                     p->name, n, attempt);
            break;
        }
        LOG_WARN("caBundle patch failed mutatingwebhookconfiguration=%s attempt=%u code=\"%s\" "
                 "err=%s retry_in_ms=%ld",
                 p->name, attempt, wh_error_str(rc), LOG_QUOTED(err.msg), delay);
        if (backoff_thread_sleep_ms(&p->th, delay))
            break;
    }
    return NULL;
}

static void patcher_free(struct cabundle_patcher *p)
{
    free(p->path);
    free(p->name);
    free(p->ca_b64);
    free(p);
}

int cabundle_start(struct cabundle_patcher **out, struct k8s_client *kc,
                   const struct cabundle_config *cfg, struct wh_error *err)
{
    struct cabundle_patcher *p;

    *out = NULL;
    if (cfg->webhook_config == NULL || cfg->webhook_config[0] == '\0' || cfg->ca_pem == NULL
        || cfg->ca_pem[0] == '\0')
        return wh_error_set(err, WH_EINVAL, "self-signed: no webhook configuration name or CA");
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    p->kc = kc;
    p->initial_backoff_ms =
        cfg->initial_backoff_ms > 0 ? cfg->initial_backoff_ms : DEFAULT_INITIAL_BACKOFF_MS;
    p->max_backoff_ms = cfg->max_backoff_ms > 0 ? cfg->max_backoff_ms : DEFAULT_MAX_BACKOFF_MS;
    if (p->max_backoff_ms < p->initial_backoff_ms)
        p->max_backoff_ms = p->initial_backoff_ms;
    p->timeout_ms =
        cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : DEFAULT_REQUEST_TIMEOUT_MS;
    atomic_init(&p->done, false);
    p->path = k8s_path(WEBHOOK_CONFIG_GROUP, WEBHOOK_CONFIG_VERSION, NULL, WEBHOOK_CONFIG_RESOURCE,
                       cfg->webhook_config);
    p->name = strdup(cfg->webhook_config);
    p->ca_b64 = certs_base64(cfg->ca_pem, strlen(cfg->ca_pem));
    if (p->path == NULL || p->name == NULL || p->ca_b64 == NULL) {
        patcher_free(p);
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    if (backoff_thread_start(&p->th, patch_thread, p) < 0) {
        patcher_free(p);
        return wh_error_set(err, WH_ERROR, "self-signed: cannot start the caBundle thread");
    }
    *out = p;
    return 0;
}

bool cabundle_done(const struct cabundle_patcher *p)
{
    /* atomic_load wants a pointer to non-const in C11; done is only read here */
    return p != NULL && atomic_load(&((struct cabundle_patcher *)p)->done);
}

void cabundle_stop(struct cabundle_patcher *p)
{
    if (p == NULL)
        return;
    backoff_thread_stop(&p->th);
    patcher_free(p);
}
