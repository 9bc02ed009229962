/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jobsource.h - where the admission path gets a pod's Volcano Job: a GET per
 * request, the informer cache (controller/lookup.h), or a file (render).
 */
#ifndef WH_JOBSOURCE_H
#define WH_JOBSOURCE_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"

struct diagnostics;

/* Where Jobs come from: a GET per request, a cache, or a file (render). */
struct jobsource {
    /**
     * Look up Job ns/name. uid: the uid the pod's ownerReference names ("" when
     * none); a source that may be stale (a cache) reads again when its Job has
     * another uid (D6), others may ignore it. @param[out] job_out new reference
     * on success, which the caller only reads (a source may hand the same tree to
     * its thread's later calls: controller/cache.h cache_get_read) and decrefs on
     * the thread that got it.
     * @return 0; WH_DECLINED (> 0) when the source does not serve namespace ns
     *         (serve --namespaces: the pod is allowed unmutated, with no warning,
     *         and no API request was made); WH_ENOTFOUND when it does not exist;
     *         any other < 0 when it could not be read (err filled with the reason).
     */
    int (*get)(void *userdata, const char *ns, const char *name, const char *uid, json_t **job_out,
               struct wh_error *err);
    /**
     * Optional (NULL: get never waits on the network). get without waiting: the same
     * answers as get when the source has the Job at hand (a cache hit) or knows at once
     * that it cannot serve the pod, and WH_EWOULDBLOCK (err untouched, *job_out NULL)
     * when only a read that waits (an API GET) would answer; the caller then asks get
     * on a thread that may wait (webhook/server_defer.c: an MHD worker serves many
     * connections and must not wait on the API server).
     */
    int (*get_nowait)(void *userdata, const char *ns, const char *name, const char *uid,
                      json_t **job_out, struct wh_error *err);
    /**
     * Optional (NULL: the caller runs diagnose_job itself). The Job-level
     * diagnostics (plugins/diagnose.h) of job, a Job this source's get gave,
     * kept from when the source stored that version (a cache computes them once
     * per Job resourceVersion, from the full Job). job borrowed; out filled from
     * empty, or NULL to ask only whether that version has any (nothing unpacked,
     * so a caller allocates its 17 KiB struct diagnostics only when there are).
     * @return 0 (with out NULL: it has some); WH_DECLINED (> 0) only with out NULL:
     *         it has none; WH_ENOTFOUND when the source has none for that version
     *         (the caller diagnoses job itself).
     */
    int (*diagnose)(void *userdata, const json_t *job, struct diagnostics *out);
    /**
     * Optional (NULL: none). Where the calling thread keeps value k (a plugin's place
     * in plugin_registry) derived from job alone, a Job this source's get gave this
     * thread, for as long as the source keeps that tree (controller/cache.h
     * cache_read_slot): NULL until the caller stores a new reference there, which
     * the source decrefs with the tree. The slot stays valid until this thread's next
     * get (which may let the tree give way): a caller uses it within one admission.
     * @return the slot, or NULL when the source keeps none for job (the caller
     * derives per pod).
     */
    json_t **(*job_memo)(void *userdata, const json_t *job, size_t k);
    void *userdata;
};

#endif
