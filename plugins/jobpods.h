/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jobpods.h - the pods of a Volcano Job as Volcano's job controller builds them
 * (docs/plugins.md §2.1-2.4), before any plugin runs. Used by `render` and the demo.
 * Pure functions over a borrowed Job; thread-safe.
 */
#ifndef WH_JOBPODS_H
#define WH_JOBPODS_H

#include <jansson.h>
#include <stdint.h>

/**
 * Build pod i of task (an element of job.spec.tasks): name J-T-i, namespace
 * job.metadata.namespace, the template's labels and annotations plus the
 * controller's keys of §1.2/§2.2 (task-index, job-name, task-spec, job-namespace,
 * queue-name, group-name J-UID, job-version, template-uid J-T, job-retry-count,
 * partition-id when the task has partitionPolicy, numa-topology-policy from the
 * task's topologyPolicy; preemptable and cooldown-time from the Job's labels and
 * annotations, revocable-zone and jdb-min-available, else jdb-max-unavailable, from
 * its annotations; not job-forwarding, which needs the Queue), the single controller
 * ownerReference of §2.2, schedulerName / priorityClassName from the Job when the
 * template has none, and the Job-level PVC volumes of §2.3 (the 12-character
 * suffix is derived from the claim name instead of random, so output is stable).
 * @return new reference, NULL on ENOMEM.
 */
json_t *jobpods_build(const json_t *job, const json_t *task, int64_t index);

/**
 * Ensure job (a writable copy) has metadata.namespace (default_ns when absent),
 * spec.queue ("default" when absent or empty, as Volcano's Job webhook sets it)
 * and metadata.uid (when absent, a stable UUID-shaped value derived from
 * namespace/name with SHA-1, as a file Job has none).
 * @return 0, or WH_ENOMEM / WH_EINVAL (job is not an object).
 */
int jobpods_complete_job(json_t *job, const char *default_ns);

#endif
