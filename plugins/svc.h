/* SPDX-License-Identifier: Apache-2.0 */
/*
 * svc.h - what the `svc` plugin shares with the reconcile side and `render`
 * (docs/plugins.md §4.2). The pod-side hook is plugin_svc (plugins/plugin.h).
 */
#ifndef WH_SVC_H
#define WH_SVC_H

#include <jansson.h>

/**
 * The `data` object of ConfigMap J-svc for a Job (docs/plugins.md §4.2): for every task of
 * job.spec.tasks in array order, three keys
 *   "US(T).host"     host list joined with "\n", no trailing newline ("" if none)
 *   "VC_UP(T)_HOSTS" host list joined with ","
 *   "VC_UP(T)_NUM"   number of entries, decimal
 * where the host list is that of docs/plugins.md §4.2 / §3.6 (replicas 0..replicas-1, one
 * entry when the task template sets a hostname). A later task with the same
 * name overwrites an earlier one's keys, as Volcano's map does.
 *
 * @param job       borrowed Volcano Job; not modified
 * @param[out] out   new reference to a JSON object ({} for a Job without tasks) on
 *                   0, else NULL
 * @return 0; WH_ENOMEM; WH_ETOOBIG when a task's host list would exceed
 *         JOB_HOSTS_MAX_BYTES (1 MiB, the most a ConfigMap holds). Pure; thread-safe.
 */
int svc_configmap_data(const json_t *job, json_t **out);

#endif
