/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podutil.h - upsert edits on a JSON Pod (D5) and small JSON builders.
 *
 * Every mutation is an upsert, never a blind append, so that running the plugin
 * chain on its own output changes nothing (D5, D13). "Identical" means
 * every field the plugin would write is already present with the same value
 * (podutil_covers); extra fields on the existing entry are kept. A different
 * entry is replaced whole, at its position.
 *
 * All functions take a writable, request-owned pod or container; not
 * thread-safe on the same object. Arguments named *_new are stolen (jansson's
 * convention), even on failure.
 */
#ifndef WH_PODUTIL_H
#define WH_PODUTIL_H

#include <jansson.h>
#include <stdbool.h>

#include "plugins/warnings.h"

/* What an upsert did. Negative values are WH_E* errors (WH_ENOMEM, WH_EINVAL). */
enum podutil_upsert {
    PODUTIL_UPSERT_ADDED = 0,    /* appended (the list was created if absent) */
    PODUTIL_UPSERT_SAME = 1,     /* an identical entry was there: nothing changed */
    PODUTIL_UPSERT_REPLACED = 2, /* an entry with the same key differed: replaced in place */
    PODUTIL_UPSERT_SKIPPED = 3,  /* left alone by rule (port number taken, name clash, ...) */
};

/**
 * D5 identity: true when every member of `want` is in `have` with an equal value,
 * recursively for objects; arrays must have equal length and cover element-wise;
 * an empty-string member of want matches an absent member of have (the API server
 * omits empty strings). Extra members of have are ignored.
 */
bool podutil_covers(const json_t *have, const json_t *want);

/** @return borrowed spec.containers / spec.initContainers array, or NULL when absent. */
json_t *podutil_containers(json_t *pod);
json_t *podutil_init_containers(json_t *pod);

/** Env var of the same name in container: covered → SAME, else replaced; absent → appended. */
int podutil_upsert_env(json_t *container, json_t *env_new);

/**
 * podutil_upsert_env for every entry of envs (a borrowed array of env vars,
 * copied), in order, in O(existing + new) time: a Job with thousands of tasks
 * gives svc thousands of entries per container.
 * @param[out] failed_at  index in envs of the entry that failed (may be NULL)
 * @return 0; WH_EINVAL (container or its env not the right type, an entry without
 *         a string name); WH_ENOMEM. Entries before the failure stay applied.
 */
int podutil_upsert_envs(json_t *container, const json_t *envs, size_t *failed_at);

/** Volume keyed by name in spec.volumes (created when absent). */
int podutil_upsert_volume(json_t *pod, json_t *volume_new);

/** Volume mount keyed by mountPath in container.volumeMounts (created when absent). */
int podutil_upsert_mount(json_t *container, json_t *mount_new);

/**
 * Container port keyed by number (docs/plugins.md §4.4-4.7): a port with the same
 * containerPort exists → SKIPPED (left alone, whatever its name); else a port
 * whose name equals the new port's name exists with another number → SKIPPED and
 * a warning "PLUGIN plugin: port name NAME already used by port N in container C" (D5);
 * else appended, with a warning when the number is outside 1-65535 (a bad --port
 * that Go's flag parsing turned into 0, docs/plugins.md §6). port_new must have "name" and
 * "containerPort".
 */
int podutil_add_port(json_t *container, json_t *port_new, const char *plugin, struct warnings *w);

/** Init container keyed by name: present → SKIPPED (D5), absent → appended. */
int podutil_add_init_container(json_t *pod, json_t *container_new);

/** Set obj[key] = string value unless it already equals it. @return UPSERT_* or < 0. */
int podutil_set_string(json_t *obj, const char *key, const char *value);

/** Set obj[key] = value_new (stolen) unless json_equal to the existing member. */
int podutil_set(json_t *obj, const char *key, json_t *value_new);

/** @return borrowed string member of obj, or "" when absent / not a string. */
const char *podutil_str(const json_t *obj, const char *key);

/** @return new reference {"name": name, "value": value}; NULL on ENOMEM. */
json_t *podutil_env_value(const char *name, const char *value);

/**
 * {"name": name, "value": value} where value (a JSON string, borrowed) gets one more
 * reference instead of a copy: a large value (TF_CONFIG, MPI_HOST, up to a few MiB)
 * set on every container is then held once, not once per container.
 * @return new reference; NULL on ENOMEM or when value is NULL.
 */
json_t *podutil_env_shared(const char *name, json_t *value);

/** @return new reference {"name": name, "valueFrom": {"configMapKeyRef": {"name": cm, "key": key}}}. */
json_t *podutil_env_configmap(const char *name, const char *cm, const char *key);

#endif
