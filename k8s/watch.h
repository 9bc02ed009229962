/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch.h - a Kubernetes WATCH stream (docs/kube-api.md §3).
 *
 * k8s_watch runs on the calling thread (the informer's) and uses its own CURL
 * handle. The event decoder is a pure function, fuzzed on its own.
 */
#ifndef WH_K8S_WATCH_H
#define WH_K8S_WATCH_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>

#include "base/error.h"
#include "k8s/client.h"

enum watch_event_type {
    WATCH_ADDED,
    WATCH_MODIFIED,
    WATCH_DELETED,
    WATCH_BOOKMARK,
    WATCH_ERROR,
};

/**
 * Decode one line of a watch stream: {"type": T, "object": O}.
 * @param[out] type_out    the event type
 * @param[out] object_out  new reference to O (a Status for ERROR events)
 * @return 0; WH_EINVAL with the reason in err when the line is not an event (bad
 *         JSON, unknown type, object not an object).
 */
int watch_decode_event(const char *line, size_t len, enum watch_event_type *type_out,
                       json_t **object_out, struct wh_error *err);

/*
 * Called for each ADDED/MODIFIED/DELETED/BOOKMARK event, in stream order, on the
 * watching thread. object is borrowed (incref to keep it). Return < 0 to stop.
 */
typedef int (*watch_fn)(void *userdata, enum watch_event_type type, json_t *object);

struct watch_params {
    const char *path;             /* collection path, e.g. /apis/batch.volcano.sh/v1alpha1/jobs */
    const char *resource_version; /* where to start (the list's RV, or the last event's) */
    long timeout_seconds;         /* server-side timeoutSeconds (the stream then ends: 0) */
    long idle_timeout_ms;         /* no byte (event or bookmark) for this long → WH_ETIMEOUT */
    const atomic_bool *stop;      /* set → return 0 within about a second; may be NULL */
};

/**
 * WATCH path?watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=N and
 * feed events to fn until the stream ends.
 * @param[out] last_rv  receives (malloc'd, free()) the resourceVersion of the last
 *                      event or bookmark seen; untouched when none
 * @return 0 when the stream ended normally or stop was set; WH_EGONE when the server
 *         answered 410 or sent an ERROR event with code 410 (list again);
 *         WH_ETIMEOUT on idle timeout; the callback's negative value; WH_EAPI /
 *         WH_EINVAL (bad line) otherwise, with err filled. A 429 or 503 answer with
 *         Retry-After returns (WH_EAPI) only after waiting that long (at most 60 s;
 *         sooner when stop is set).
 */
int k8s_watch(struct k8s_client *c, const struct watch_params *p, watch_fn fn, void *userdata,
              char **last_rv, struct wh_error *err);

#endif
