/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admission.h - AdmissionReview (admission.k8s.io/v1 and v1beta1) in and out.
 *
 * A pure bytes-to-bytes function, so tests drive it with no socket. Reentrant;
 * called from MHD worker threads.
 */
#ifndef WH_ADMISSION_H
#define WH_ADMISSION_H

#include <stddef.h>

#include "webhook/mutate.h"

/* admission_handle's answer when the pod's Job can only be read by waiting on the API
 * server (a jobsource get_nowait's WH_EWOULDBLOCK): no HTTP status, no body. */
#define ADMISSION_DEFERRED 0

/**
 * Decode an AdmissionReview body, decide it (mutate_review) and encode the
 * answer in the version it was asked in (docs/kube-api.md §1):
 * apiVersion/kind copied, response.uid = request.uid, allowed, patchType
 * "JSONPatch" + base64 patch only when there is at least one op, warnings when
 * any, status {code, message} when denied.
 *
 * @param[out] out       malloc'd response body (JSON), owned by the caller
 * @param[out] out_len   its length
 * @return the HTTP status to send: 200 with an AdmissionReview, or 400 with a
 *         Kubernetes Status body (reason BadRequest) naming what is wrong when
 *         the body is not JSON or not an AdmissionReview; 500 with a Status
 *         body on ENOMEM. ADMISSION_DEFERRED (0, *out NULL, nothing recorded) when
 *         src->get answered WH_EWOULDBLOCK (src's get is a get_nowait, and the Job is
 *         not at hand): call again with a src whose get may wait.
 * Records the call in the metrics (metrics.h): metrics_admission with the
 * status, outcome and time spent; metrics_plugin_patch for each enabled plugin
 * of a patched pod; metrics_warnings for the warnings sent.
 */
int admission_handle(const char *body, size_t len, const struct jobsource *src,
                     const struct mutate_options *opt, char **out, size_t *out_len);

/**
 * The Job webhook (D17, POST /jobs/validate): decode an AdmissionReview of
 * a batch.volcano.sh/v1alpha1 Job and answer, in the version asked, with every
 * Job-level diagnostic (plugins/diagnose.h diagnose_job) as `warnings`, which
 * kubectl prints to the Job's author. Served: CREATE and UPDATE of resource
 * `jobs` in group batch.volcano.sh; anything else is allowed with no warnings.
 * Allowed by default; with opt->job_validation == JOB_VALIDATION_DENY a Job with
 * a fatal diagnostic (its pods could never be admitted or started, D15) is
 * refused: allowed false, status code 400, the message listing the fatal ones.
 * A Job created with generateName only is checked under the name the API server
 * will give it (generateName and 5 characters).
 *
 * @param src      unused (the Job is in the review); may be NULL. There for the
 *                 shape of admission_fn, so the server routes either function.
 * @param opt      job_validation is read; NULL = warn
 * @param[out] out       malloc'd response body (JSON), owned by the caller
 * @param[out] out_len   its length
 * @return the HTTP status: 200 with an AdmissionReview; 400 with a Status body
 *         (reason BadRequest) for a body that is not an AdmissionReview, exactly as
 *         admission_handle; 500 with a Status body on ENOMEM. No metrics recorded.
 */
int admission_validate_job(const char *body, size_t len, const struct jobsource *src,
                           const struct mutate_options *opt, char **out, size_t *out_len);

/**
 * The shape of admission_handle, for server_config.admission: the same
 * arguments, ownership and return values. Called on MHD worker threads.
 */
typedef int (*admission_fn)(const char *body, size_t len, const struct jobsource *src,
                            const struct mutate_options *opt, char **out, size_t *out_len);

#endif
