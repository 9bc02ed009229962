/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client.h - Kubernetes REST client over libcurl.
 *
 * Config: --kubeconfig, else $KUBECONFIG, else in-cluster (service account token,
 * CA, KUBERNETES_SERVICE_HOST/_PORT), see docs/kube-api.md §6.
 * The token file is read again on every request (bound tokens rotate).
 *
 * Threads: a client is immutable after k8s_client_create and may be shared;
 * each thread uses its own CURL easy handle (kept in thread-local storage, so
 * connections are reused per thread). k8s_client_destroy only after every
 * thread using it is done.
 */
#ifndef WH_K8S_CLIENT_H
#define WH_K8S_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct k8s_config {
    char *server;     /* "https://host:port" or "http://..." (no trailing slash) */
    char *ca_file;    /* PEM file path, or NULL */
    char *ca_data;    /* PEM text (decoded certificate-authority-data), or NULL */
    char *cert_file;  /* client certificate PEM file, or NULL */
    char *cert_data;  /* client certificate PEM text, or NULL */
    char *key_file;   /* client key PEM file, or NULL */
    char *key_data;   /* client key PEM text, or NULL */
    char *token;      /* bearer token text, or NULL */
    char *token_file; /* bearer token file, re-read per request, or NULL */
    bool insecure;    /* insecure-skip-tls-verify */
};

/**
 * Load the client config. path: --kubeconfig (NULL → $KUBECONFIG → in-cluster).
 * kubeconfig: current-context → context.cluster/user → server,
 * certificate-authority(-data), client-certificate(-data), client-key(-data),
 * token, tokenFile, insecure-skip-tls-verify; relative file paths are resolved
 * against the kubeconfig's directory.
 * @param[out] out filled on success; free with k8s_config_dispose.
 * @return 0; WH_EINVAL with a message naming the file/field on a bad config;
 *         WH_ENOTFOUND when no config source exists at all.
 */
int k8s_config_load(struct k8s_config *out, const char *path, struct wh_error *err);

/** Free every member; safe to call twice and on a zeroed struct. */
void k8s_config_dispose(struct k8s_config *cfg);

struct k8s_client;

/**
 * Create a client. The config is copied.
 * @return new client (k8s_client_destroy), or NULL with err filled.
 */
struct k8s_client *k8s_client_create(const struct k8s_config *cfg, struct wh_error *err);
void k8s_client_destroy(struct k8s_client *c);

/**
 * The process is stopping: from now on nothing waits in c's rate limiter. Callers
 * sleeping on a token, or before a retry after a 429 or 503, go at once, and later
 * ones are not limited, so a stop is not held up by the queue at a low --kube-api-qps
 * (a reconcile worker's current Job, an Event: what the threads have under
 * way, bounded by them, still goes out). Requests themselves are not cut. Any
 * thread; idempotent; c stays usable until k8s_client_destroy.
 */
void k8s_client_close(struct k8s_client *c);

/**
 * GET path (e.g. "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j") with
 * a total timeout of timeout_ms (milliseconds).
 * @param[out] out new reference to the decoded body on 200.
 * @return 0; WH_ENOTFOUND on 404; WH_ETIMEOUT; WH_EAPI for any other HTTP status
 *         or transport error. On an error status the Kubernetes Status body's
 *         reason and message go into err ("NotFound: jobs.batch.volcano.sh \"x\" not found").
 */
int k8s_get(struct k8s_client *c, const char *path, long timeout_ms, json_t **out,
            struct wh_error *err);

/** k8s_get of Job ns/name (docs/plugins.md §1.1 REST path; names are URL-escaped). */
int k8s_get_job(struct k8s_client *c, const char *ns, const char *name, long timeout_ms,
                json_t **out, struct wh_error *err);

/**
 * k8s_get_job for an admission review, which kube-apiserver waits on: the request
 * goes ahead of the callers queued on the rate limit (the reconciler's, the
 * informer's), while what was taken ahead of them stays within a
 * second of --kube-api-qps (client_internal.h k8s_client_throttle). Same
 * arguments, results and errors as k8s_get_job.
 */
int k8s_get_job_urgent(struct k8s_client *c, const char *ns, const char *name, long timeout_ms,
                       json_t **out, struct wh_error *err);

/* ---- writes, lists, rate limiting (implemented in k8s/client.c) ---- */

/* Client-side limits (kube style --kube-api-qps / --kube-api-burst). */
struct k8s_client_options {
    double qps;     /* sustained requests per second, shared by every thread; <= 0 → no limit */
    int burst;      /* token bucket size; < 1 → 1 */
    long retry_max; /* extra attempts on 429 / 503 honouring Retry-After (seconds) while the
                          request's own timeout allows; 0 → none */
};

/** Set the rate limit and retry policy. Call before threads use the client. */
void k8s_client_set_options(struct k8s_client *c, const struct k8s_client_options *opt);

/**
 * Set the largest response body accepted, in bytes (0 → the default, 16 MiB). A
 * bigger body fails the request with WH_ETOOBIG. Call before threads use the
 * client. Tests lower it to make a LIST page "too big" without 16 MiB of data.
 */
void k8s_client_set_max_body(struct k8s_client *c, size_t max_body);

/**
 * One request. method "GET" "POST" "PUT" "PATCH" "DELETE"; path absolute with query;
 * body NULL or a JSON object sent compact (content_type NULL → application/json);
 * waits for the rate limiter, then at most timeout_ms in all (retries included).
 * @param[out] out  new reference to the decoded 2xx body (NULL allowed: body dropped)
 * @return 0 on 2xx; WH_ENOTFOUND 404; WH_EEXISTS 409 AlreadyExists; WH_ECONFLICT 409
 *         Conflict; WH_EGONE 410 (Gone or Expired); WH_ETIMEOUT; WH_ETOOBIG when the
 *         response body is over the cap (k8s_client_set_max_body); WH_EAPI otherwise
 *         (err = "Reason: message" from the Status body, docs/kube-api.md §2).
 */
int k8s_request(struct k8s_client *c, const char *method, const char *path, const json_t *body,
                const char *content_type, long timeout_ms, json_t **out, struct wh_error *err);

/**
 * Whether err holds an API server answer of this Status reason ("Invalid": 422, a
 * JSON patch whose "test" op failed among them), as k8s_request writes it
 * ("Reason: message" or "Reason: HTTP N"). err may be NULL (false).
 */
bool k8s_error_reason_is(const struct wh_error *err, const char *reason);

/** POST obj to collection_path (".../namespaces/NS/configmaps"). out: the stored object. */
int k8s_create(struct k8s_client *c, const char *collection_path, const json_t *obj,
               long timeout_ms, json_t **out, struct wh_error *err);
/** PUT obj (its metadata.resourceVersion must be current) to object_path. */
int k8s_update(struct k8s_client *c, const char *object_path, const json_t *obj, long timeout_ms,
               json_t **out, struct wh_error *err);
/** DELETE object_path (propagationPolicy Background). 404 → WH_ENOTFOUND. */
int k8s_delete(struct k8s_client *c, const char *object_path, long timeout_ms,
               struct wh_error *err);

/**
 * Called with each page of a LIST: items is the page's array (borrowed: valid for
 * the call only; the callee may modify its members, e.g. to take them with
 * json_incref). @return 0 to go on, < 0 (err filled) to stop the LIST with that.
 */
typedef int (*k8s_page_fn)(void *userdata, json_t *items, struct wh_error *err);

/**
 * LIST collection_path in pages of `limit` (continue tokens followed to the end,
 * docs/kube-api.md §3.2), handing each page to on_page as it arrives, so a
 * caller that keeps less than the items holds one page at a time.
 * @param[out] rv_out  malloc'd metadata.resourceVersion of the list (free())
 * @return 0; WH_EGONE when a continue token expired (410 Expired: list again);
 *         WH_ETOOBIG when a page is over the body cap (list again with a smaller
 *         limit); what on_page returned when < 0; other errors as k8s_request.
 */
int k8s_list_pages(struct k8s_client *c, const char *collection_path, long limit, long timeout_ms,
                   k8s_page_fn on_page, void *userdata, char **rv_out, struct wh_error *err);

/**
 * LIST collection_path in pages of `limit` (continue tokens followed to the end).
 * @param[out] items_out new reference: JSON array of every item
 * @param[out] rv_out    malloc'd metadata.resourceVersion of the list (free())
 * @return 0; WH_EGONE when a continue token expired (410 Expired: list again);
 *         other errors as k8s_request.
 */
int k8s_list(struct k8s_client *c, const char *collection_path, long limit, long timeout_ms,
             json_t **items_out, char **rv_out, struct wh_error *err);

/**
 * Path helpers: "/api/v1/namespaces/NS/RESOURCE[/NAME]" for core ("" group) or
 * "/apis/GROUP/VERSION/namespaces/NS/RESOURCE[/NAME]"; name NULL → collection.
 * Segments URL-escaped. @return malloc'd path, NULL on ENOMEM.
 */
char *k8s_path(const char *group, const char *version, const char *ns, const char *resource,
               const char *name);

#endif
