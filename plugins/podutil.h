/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podutil.h - upsert edits on a JSON Pod (D5) and small JSON builders.
 *
 * The plugins edit a pod through plugins/podedit.h, the same upserts recorded over the
 * pod's view; these work on a jansson object: a container a plugin adds (podedit
 * edits it with them), and the reference podedit is held to (tests/podeditdiff.h).
 *
 * Every mutation is an upsert, never a blind append, so that running the plugin
 * chain on its own output changes nothing (D5, D13). "Identical" means
 * every field the plugin would write is already present with the same value
 * (podutil_covers); extra fields on the existing entry are kept. The user's entry
 * is never overwritten silently (D5): an env var of another value is replaced
 * in place with a warning naming container, variable, old and new value; a
 * volume or mount that holds the plugin's place for something else is a
 * conflict (WH_ECONFLICT, with a message for the denial), never re-pointed.
 *
 * All functions take a writable, request-owned pod or container; not
 * thread-safe on the same object. Arguments named *_new are stolen (jansson's
 * convention), even on failure.
 */
#ifndef WH_PODUTIL_H
#define WH_PODUTIL_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"
#include "plugins/warnings.h"

/* Longest user value (env value, command, path) quoted whole in a message; longer is cut. */
#define PODUTIL_SHOWN_MAX 40

/*
 * What an upsert did. Negative values are WH_E* errors: WH_ENOMEM, WH_EINVAL, and
 * WH_ECONFLICT from podutil_upsert_volume / podutil_upsert_mount (D5).
 */
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

/**
 * Env var env_new (stolen) in container, keyed by name; the last entry of that
 * name counts (the later duplicate wins at run time, docs/plugins.md §6).
 * Covered → SAME. Another value, or a literal where a valueFrom was → replaced
 * in place (REPLACED), and w gets (D5, D16):
 *   "PLUGIN plugin: container \"C\" sets NAME=OLD, replaced by NEW: the plugin sets
 *    it, drop it from the pod template"
 * where OLD and NEW are a quoted value cut to PODUTIL_SHOWN_MAX bytes ("..."), or
 * "valueFrom.KIND" (configMapKeyRef and secretKeyRef add " NAME/KEY").
 * Absent → appended (ADDED; the list is created when absent).
 * @param plugin  the plugin's name, for the warning
 * @param w       may be NULL
 * @return ADDED, SAME, REPLACED; WH_EINVAL (container or its env not the right
 *         type); WH_ENOMEM.
 */
int podutil_upsert_env(json_t *container, json_t *env_new, const char *plugin, struct warnings *w);

/**
 * podutil_upsert_env for every entry of envs (a borrowed array of env vars; each
 * entry placed gets one more reference, not a copy: no code edits a pod's list
 * entries in place, they are replaced whole, so the containers can share them), in
 * order, in O(existing + new) time: a Job with thousands of tasks gives svc thousands
 * of entries per container. Each replaced entry gives
 * podutil_upsert_env's warning.
 * @param[out] failed_at  index in envs of the entry that failed (may be NULL)
 * @param plugin          the plugin's name, for the warnings
 * @param w               may be NULL
 * @return 0; WH_EINVAL (container or its env not the right type, an entry without
 *         a string name); WH_ENOMEM. Entries before the failure stay applied.
 */
int podutil_upsert_envs(json_t *container, const json_t *envs, size_t *failed_at,
                        const char *plugin, struct warnings *w);

/**
 * Volume volume_new (stolen; "name" and one source member: "secret" with
 * "secretName", or "configMap" with "name") keyed by name in spec.volumes
 * (created when absent). Covered → SAME. The same source (the same Secret or
 * ConfigMap) with other fields → replaced in place (REPLACED). Any other source
 * (an emptyDir, another Secret or ConfigMap, ...) is the user's volume: nothing
 * changes and the result is WH_ECONFLICT, err holding (no plugin name: the chain
 * prefixes it, plugins/plugin.h):
 *   "volume \"V\" is your SOURCE, and the plugin needs that name for its
 *    Secret|ConfigMap \"S\": rename yours or remove the plugin (Volcano would add a
 *    second one, which the API server refuses)"
 * SOURCE is Secret "s", ConfigMap "c", or the source member's name (emptyDir, ...).
 * @param err  may be NULL
 * @return ADDED, SAME, REPLACED; WH_ECONFLICT; WH_EINVAL (no spec object,
 *         volumes not a list); WH_ENOMEM.
 */
int podutil_upsert_volume(json_t *pod, json_t *volume_new, struct wh_error *err);

/**
 * Volume mount mount_new (stolen; "name", "mountPath") keyed by mountPath in
 * container.volumeMounts (created when absent). A mount there of the same volume:
 * covered → SAME, else replaced in place (REPLACED, e.g. another subPath). A mount
 * there of another volume is the user's: nothing changes and the result is
 * WH_ECONFLICT, err holding
 *   "container \"C\" mounts your volume \"U\" at PATH, where the plugin mounts
 *    \"V\": mount yours elsewhere or remove the plugin (Volcano would add a second
 *    mount there, which the API server refuses; replacing yours would lose it)"
 * Values longer than PODUTIL_SHOWN_MAX bytes are cut ("..."), and the message to
 * WH_ERROR_MSG_MAX - 1 bytes.
 * @param err  may be NULL
 * @return ADDED, SAME, REPLACED; WH_ECONFLICT; WH_EINVAL (container or its
 *         volumeMounts not the right type); WH_ENOMEM.
 */
int podutil_upsert_mount(json_t *container, json_t *mount_new, struct wh_error *err);

/**
 * s for a message: "\"s\"" when it has at most PODUTIL_SHOWN_MAX bytes, else its
 * first PODUTIL_SHOWN_MAX bytes (not splitting a UTF-8 sequence) and "...",
 * quoted. Always NUL-terminated within len.
 * @return buf
 */
char *podutil_shown(char *buf, size_t len, const char *s);

/**
 * Container port keyed by number (docs/plugins.md §4.4-4.7): a port with the same
 * containerPort exists → SKIPPED (left alone, whatever its name); else a port
 * whose name equals the new port's name exists with another number → SKIPPED and
 * a warning "PLUGIN plugin: port name NAME already used by port N in container C" (D5),
 * keyed podutil_port_key(PLUGIN, C, NAME) (warnings_add_keyed);
 * else appended, with a warning when the number is outside 1-65535 (a bad --port
 * that Go's flag parsing turned into 0, docs/plugins.md §6). port_new must have "name" and
 * "containerPort".
 */
int podutil_add_port(json_t *container, json_t *port_new, const char *plugin, struct warnings *w);

/**
 * The key of podutil_add_port's "port name already used" warning (plugins/warnings.h):
 * "<plugin>:spec.containers[<container>].ports[<port_name>]" into buf (cut to len), for
 * a plugin's Job-level diagnostic of the same conflict (diagnose_add_keyed).
 * @return buf
 */
char *podutil_port_key(char *buf, size_t len, const char *plugin, const char *container,
                       const char *port_name);

/** Init container keyed by name: present → SKIPPED (D5), absent → appended. */
int podutil_add_init_container(json_t *pod, json_t *container_new);

/** Set obj[key] = string value unless it already equals it. @return UPSERT_* or < 0. */
int podutil_set_string(json_t *obj, const char *key, const char *value);

/** Set obj[key] = value_new (stolen) unless json_equal to the existing member. */
int podutil_set(json_t *obj, const char *key, json_t *value_new);

/** @return borrowed string member of obj, or "" when absent / not a string. */
const char *podutil_str(const json_t *obj, const char *key);

/**
 * {k1: v1_new, k2: v2_new} in that key order, or {k1: v1_new} when k2 is NULL (then
 * v2_new must be NULL). Built member by member: json_pack's format parsing cost an
 * admission more than the objects it built. The keys are the caller's ASCII
 * literals (set unchecked); the values are stolen, even on failure, and may be NULL
 * (a json_string that refused invalid UTF-8), which fails the whole object.
 * @return new reference; NULL when a value is NULL or on ENOMEM.
 */
json_t *podutil_object(const char *k1, json_t *v1_new, const char *k2, json_t *v2_new);

/** @return new reference {"name": name, "value": value}; NULL on ENOMEM or invalid UTF-8. */
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
