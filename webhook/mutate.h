/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutate.h - one admission decision: find the Job, run the plugin chain, diff.
 *
 * Implements docs/decisions.md: D1-D3 (effective set, order, unknown names),
 * D5/D13 (upsert, chain re-run while it adds containers), D6 (pod identity),
 * D7 (error policy), D8 (pods not served), D14 (pods without a name), D15 (no
 * pod the API server will refuse).
 * Called from MHD worker threads and from `render`; reentrant. The Job lookup is
 * behind struct jobsource (plugins/jobsource.h): the informer cache, or a file.
 */
#ifndef WH_MUTATE_H
#define WH_MUTATE_H

#include <jansson.h>
#include <stdbool.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/jsonr.h"
#include "plugins/jobsource.h"
#include "plugins/warnings.h"

enum lookup_failure_policy { LOOKUP_FAILURE_DENY = 0, LOOKUP_FAILURE_ALLOW = 1 };

/* What the Job webhook does with a Job whose pods could never run (D17). */
enum job_validation_mode { JOB_VALIDATION_WARN = 0, JOB_VALIDATION_DENY = 1 };

struct mutate_options {
    enum lookup_failure_policy lookup_failure; /* --job-lookup-failure, default deny */
    enum job_validation_mode job_validation;   /* --job-validation, default warn */
};

/* The parts of an AdmissionRequest that decide what is done (borrowed). */
struct mutate_request {
    const char *uid;          /* request.uid, for logs */
    const char *operation;    /* request.operation: "CREATE", ... */
    const char *resource;     /* request.resource.resource: "pods" */
    const char *group;        /* request.resource.group: "" for core */
    const char *sub_resource; /* request.subResource, "" when none */
    const char *ns;           /* request.namespace */
    const json_t *pod;        /* request.object; with view, its metadata suffices
                                 (mutate_pod_meta_read) */
    /* request.object's view (k8s/podview.h), when the caller read the review as a
     * document (webhook/admission.c); NULL: made here from pod. */
    const struct pod_view *view;
};

struct mutate_result {
    bool allowed;
    int status_code;          /* response.status.code when denied (400, 500) */
    char message[512];        /* response.status.message when denied */
    json_t *patch;            /* new reference: RFC 6902 ops; NULL when there are none or
                                 when they were written as text (mutate_review_text) */
    size_t patch_ops;         /* ops in the patch, either form */
    json_t *pod;              /* new reference: the mutated pod; NULL when not served or
                                 when the patch was written as text (mutate_review_text) */
    struct warnings warnings; /* response.warnings */
    unsigned enabled;         /* bit k: plugin_registry[k] was in the effective set */
    bool deferred;            /* src->get answered WH_EWOULDBLOCK: nothing decided (the rest
                                 of the result means nothing); ask again with a source that
                                 may wait (webhook/server_defer.c) */
};

/**
 * What an admission reads in a pod (base/jsonr.h struct jsonr_keep): the choice of
 * Job and task (D6: metadata name, generateName, namespace, the task-spec and
 * task-index labels and annotations, ownerReferences), hcclrank's rank annotation,
 * every plugin's on_pod_create (spec hostname, subdomain, volumes: their names, their
 * Secret and ConfigMap sources and only the kind of other sources;
 * each container's name, env, volumeMounts, ports, command, args) and D15's check
 * (k8s/podcheck.h: the same, ephemeral containers too): the members the pod's view
 * reads (k8s/podview.h), which admission_handle reads in place; a plugin or check that
 * reads another member of a pod must be given it there. tests/fuzz/fuzz_reader.c holds
 * the kept reader to this list; tests/webhook/check_answer.c compares every answer
 * with the one the whole tree gives.
 */
extern const struct jsonr_keep mutate_pod_read[];

/**
 * The part of mutate_pod_read a review's pod needs as a tree when its view comes with
 * it (struct mutate_request.view): metadata, for the choice of Job and task (D6).
 */
extern const struct jsonr_keep mutate_pod_meta_read[];

/** Zero a result. */
void mutate_result_init(struct mutate_result *r);
/** Release a result's references; safe to call twice. */
void mutate_result_dispose(struct mutate_result *r);

/**
 * Decide one AdmissionRequest (D6-D8): pods not served are allowed
 * unpatched; otherwise the Job is fetched through src, its uid compared with the
 * ownerReference's and the chain run (mutate_pod_with_job). An allowed pod's
 * warnings then get the Job's diagnostics (D16, plugins/diagnose.h): src->diagnose's
 * when it keeps them for that Job version, else diagnose_job's; those the chain told
 * already are left out, and at most WARNINGS_MAX in all are kept, the last saying
 * how many more there are.
 * Never fails: every outcome, including ENOMEM, is expressed in *out
 * (ENOMEM → denied, code 500), and a Job src->get could only read by waiting
 * (WH_EWOULDBLOCK: a src whose get is a get_nowait) as out->deferred, with nothing
 * else decided. The caller disposes *out.
 */
void mutate_review(const struct mutate_request *req, const struct jobsource *src,
                   const struct mutate_options *opt, struct mutate_result *out);

/**
 * mutate_review with the patch written as text, for the AdmissionResponse: the ops
 * are appended to patch_text as the compact JSON of the op array as the diff finds
 * them (base/patch.h patch_diff_write: no ops tree), out->patch stays NULL and
 * out->patch_ops counts them; every other outcome is mutate_review's.
 * @param patch_text  caller-owned, empty. Its max bounds the patch: a patch over it
 *                    leaves WH_ETOOBIG in patch_text->rc with out still allowed, for
 *                    the caller to answer. Left as it is when no diff is made.
 */
void mutate_review_text(const struct mutate_request *req, const struct jobsource *src,
                        const struct mutate_options *opt, struct buf *patch_text,
                        struct mutate_result *out);

/**
 * Run the effective plugin chain of job on pod (D1, D2, D5, D13, D14), its edits
 * recorded over the pod's view (plugins/podedit.h; pod is never written), and write
 * their patch; out->pod is the pod they make. ns is the namespace to use when the pod
 * has none. On a plugin
 * error the pod is denied with code 400 (D7). So is a result that the API server
 * would refuse because of the plugins' edits (D15: a hostname, subdomain, volume,
 * container, mount path, port or env var name, or an env value over 128 KiB, that
 * the pod did not have before), with a message naming the plugin, the value and
 * the Job field to change; a pod invalid already stays the API server's to refuse.
 * The caller disposes *out.
 */
void mutate_pod_with_job(const json_t *job, const json_t *pod, const char *ns,
                         struct mutate_result *out);

/**
 * The Job a pod belongs to (D6): its controller ownerReference with
 * apiVersion batch.volcano.sh/v1alpha1 and kind Job.
 * @return 0 and borrowed name/uid (uid may be ""), WH_DECLINED when there is none.
 */
int mutate_pod_owner(const json_t *pod, const char **name_out, const char **uid_out);

#endif
