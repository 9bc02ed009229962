/* SPDX-License-Identifier: Apache-2.0 */
/*
 * job.h - read-only helpers over a Volcano Job object (docs/plugins.md §1.3, §3.6).
 *
 * The Job is borrowed and never modified; every returned json_t is borrowed and
 * lives as long as the Job. Pure functions; thread-safe.
 */
#ifndef WH_JOB_H
#define WH_JOB_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/** @return metadata.name / metadata.namespace / metadata.uid, or "" when absent. */
const char *job_name(const json_t *job);
const char *job_namespace(const json_t *job);
const char *job_uid(const json_t *job);

/** @return borrowed spec.tasks array, or NULL. */
const json_t *job_tasks(const json_t *job);

/** @return the first task with name == task_name (docs/plugins.md §3.6), or NULL. */
const json_t *job_find_task(const json_t *job, const char *task_name);

/** @return task.name, or "" when absent. */
const char *job_task_name(const json_t *task);

/** @return task.replicas (int32 in the API), 0 when omitted or not an integer. */
int64_t job_task_replicas(const json_t *task);

/** @return replicas of the first task named task_name, 0 when none (docs/plugins.md §3.6). */
int64_t job_replicas_of(const json_t *job, const char *task_name);

/** @return task.template.spec.hostname / .subdomain, or "" when absent. */
const char *job_task_hostname(const json_t *task);
const char *job_task_subdomain(const json_t *task);

/**
 * Domain of replica i of task (docs/plugins.md §3.6): host = template hostname if non-empty,
 * else "J-T-i"; domain = template subdomain if non-empty, else J; "host.domain".
 * @return malloc'd string owned by the caller (free()), NULL on ENOMEM.
 */
char *job_task_domain(const json_t *job, const json_t *task, int64_t i);

/** job_task_domain's text appended to b (no allocation of its own). @return as buf_append. */
int job_task_domain_append(struct buf *b, const json_t *job, const json_t *task, int64_t i);

/* Longest host list built: a ConfigMap holds at most 1 MiB, and a Job with
 * absurd replicas must not make the webhook allocate without bound. */
#define JOB_HOSTS_MAX_BYTES (1u << 20)

/**
 * Host list of a task for svc, ssh and mpi (docs/plugins.md §4.2): domains of replicas
 * 0..replicas-1, stopping after the first when the template sets a hostname.
 * Entries are joined with sep.
 * @param[out] out    malloc'd string ("" for none), owned by the caller (free())
 * @param[out] count  number of entries (may be NULL)
 * @return 0; WH_ENOMEM; WH_ETOOBIG when the list would exceed JOB_HOSTS_MAX_BYTES.
 */
int job_task_hosts(char **out, const json_t *job, const json_t *task, const char *sep,
                   int64_t *count);

/** UP(T): '-' -> '_' then upper case; US(T): '-' -> '_'. Write into dst (cap dstlen), cut to fit. */
void job_name_upper(char *dst, size_t dstlen, const char *task_name);
void job_name_underscore(char *dst, size_t dstlen, const char *task_name);

/**
 * Go strconv.Atoi on a pod index string: optional sign, decimal digits only,
 * must fit in int64. @return 0 and *out, or WH_EINVAL.
 */
int job_parse_index(const char *s, int64_t *out);

#endif
