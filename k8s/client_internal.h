/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client_internal.h - what k8s/watch.c shares with k8s/client.c (not for other modules).
 *
 * The watch stream needs the same TLS material, User-Agent, bearer token and
 * Status decoding as ordinary requests, but on its own CURL handle; these
 * functions give it exactly that, so the setup lives in one place (client.c).
 * Thread-safe: every function may be called from any thread.
 */
#ifndef WH_K8S_CLIENT_INTERNAL_H
#define WH_K8S_CLIENT_INTERNAL_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "k8s/client.h"

/**
 * Configure a fresh easy handle h with the client's fixed options: NOSIGNAL,
 * User-Agent, http/https only, no redirects, TCP keep-alive, CA / client
 * certificate and key (files or PEM blobs), insecure-skip-tls-verify.
 * The caller owns h and sets URL, headers, timeouts and callbacks itself.
 * @return 0; WH_EAPI when libcurl refuses an option (err filled).
 */
int k8s_client_handle_setup(struct k8s_client *c, CURL *h, struct wh_error *err) WH_WARN_UNUSED;

/**
 * Request headers: "Accept: accept", "Content-Type: content_type" when not
 * NULL, "Expect:" (no 100-continue round trip) and "Authorization: Bearer T"
 * with the token read now (token files are re-read on every call).
 * @param[out] out new list; free with k8s_client_headers_free (wipes the token).
 * @return 0; WH_ENOMEM; WH_EAPI when the token file is unreadable or empty.
 */
int k8s_client_headers(struct k8s_client *c, const char *accept, const char *content_type,
                       struct curl_slist **out, struct wh_error *err) WH_WARN_UNUSED;

/** Wipe every header string (the token) and free the list; NULL allowed. */
void k8s_client_headers_free(struct curl_slist *hdrs);

/** malloc'd "server + path", NULL on ENOMEM. */
char *k8s_client_url(const struct k8s_client *c, const char *path);

/**
 * Map a non-2xx answer to a code and fill err with "Reason: message" from the
 * Status body (body may be NULL or not JSON: "HTTP <code>").
 * 404 → WH_ENOTFOUND; 409 reason AlreadyExists → WH_EEXISTS, other 409 →
 * WH_ECONFLICT; 410 → WH_EGONE; anything else → WH_EAPI.
 * @return the code.
 */
int k8s_client_status_error(long http_code, const char *body, size_t len, struct wh_error *err);

/** The same mapping for a decoded Status object (borrowed), e.g. a watch ERROR event. */
int k8s_client_status_from_json(long http_code, const json_t *status, struct wh_error *err);

/**
 * Take one token from the client's rate limiter, sleeping (without holding the
 * lock) until one is free. A wait longer than max_wait_ms gives the token back.
 * urgent: a caller something waits on (an admission's Job GET: kube-apiserver holds
 * the pod's CREATE meanwhile) goes at once, ahead of the callers sleeping on their
 * reservations, while the tokens taken ahead of them stay within one second of the
 * rate (at least one token, at most burst). The sleepers keep their turns; callers
 * that come after wait for the urgent token too, so every request still counts
 * against the same rate, and the waits after it grow by at most a second (a token's
 * interval below one request per second). Past that bound an urgent caller queues
 * like the others (first attempts only: k8s_request's retries after a 429 or 503
 * queue). After k8s_client_close: 0 at once, and a sleeper wakes and returns 0.
 * @return 0; WH_ETIMEOUT when the wait would exceed max_wait_ms.
 */
int k8s_client_throttle(struct k8s_client *c, long max_wait_ms, bool urgent,
                        struct wh_error *err) WH_WARN_UNUSED;

/**
 * Whether the answer on h carried a Retry-After header (RFC 9110 §10.2.3; libcurl
 * parses both the seconds and the HTTP-date form).
 * @param[out] secs its value in seconds, 0 when negative or unparsable
 * @return true when the header is present ("Retry-After: 0" included).
 */
bool k8s_client_retry_after(CURL *h, curl_off_t *secs);

#endif
