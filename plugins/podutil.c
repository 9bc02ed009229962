/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podutil.c - upsert edits on a JSON Pod (D5). Works on a request-owned
 * pod; no shared state, no locking.
 */
#include "plugins/podutil.h"
#include "plugins/podutil_internal.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/jsonobj.h"
#include "base/sanitize.h"

bool podutil_covers(const json_t *have, const json_t *want)
{
    const char *key;
    const json_t *wv;
    size_t i;

    if (have == NULL || want == NULL)
        return have == want;
    if (json_is_object(want)) {
        if (!json_is_object(have))
            return false;
        json_object_foreach((json_t *)want, key, wv) {
            const json_t *hv = json_member(have, key);

            if (hv == NULL) {
                /* The API server omits empty strings: absent == "". */
                if (json_is_string(wv) && json_string_length(wv) == 0)
                    continue;
                return false;
            }
            if (!podutil_covers(hv, wv))
                return false;
        }
        return true;
    }
    if (json_is_array(want)) {
        if (!json_is_array(have) || json_array_size(have) != json_array_size(want))
            return false;
        json_array_foreach(want, i, wv) {
            if (!podutil_covers(json_array_get(have, i), wv))
                return false;
        }
        return true;
    }
    return json_equal(have, want);
}

static json_t *pod_spec(json_t *pod)
{
    json_t *spec = json_member(pod, "spec");

    return json_is_object(spec) ? spec : NULL;
}

json_t *podutil_containers(json_t *pod)
{
    json_t *a = json_member(pod_spec(pod), "containers");

    return json_is_array(a) ? a : NULL;
}

json_t *podutil_init_containers(json_t *pod)
{
    json_t *a = json_member(pod_spec(pod), "initContainers");

    return json_is_array(a) ? a : NULL;
}

const char *podutil_str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_member(obj, key));

    return s != NULL ? s : "";
}

#define KEYED_NONE ((size_t)-1) /* keyed_at: no entry has the key */

/*
 * The place of the entry of list (an array, else none) whose member key equals
 * want_key (json_equal), the first one, or with from_end the last. @return KEYED_NONE
 * when there is none.
 */
static size_t keyed_at(const json_t *list, const char *key, const json_t *want_key, bool from_end)
{
    size_t n = json_array_size(list);

    for (size_t i = 0; i < n; i++) {
        size_t at = from_end ? n - 1 - i : i;

        if (json_equal(json_member(json_array_get(list, at), key), want_key))
            return at;
    }
    return KEYED_NONE;
}

/*
 * upsert_keyed with the list's entry of item_new's key found already: list is
 * obj[list_key] (NULL or null when there is none yet), found its place (KEYED_NONE:
 * none has the key). Steals item_new.
 */
static int upsert_keyed_at(json_t *obj, const char *list_key, json_t *list, size_t found,
                           json_t *item_new)
{
    if (item_new == NULL)
        return WH_ENOMEM;
    if (!json_is_object(obj)) {
        json_decref(item_new);
        return WH_EINVAL;
    }
    if (list == NULL || json_is_null(list)) {
        json_t *fresh = json_array();

        if (fresh == NULL) {
            json_decref(item_new); /* stolen even on failure */
            return WH_ENOMEM;
        }
        if (json_array_append_new(fresh, item_new) < 0) {
            json_decref(fresh);
            return WH_ENOMEM;
        }
        return json_object_set_new(obj, list_key, fresh) < 0 ? WH_ENOMEM : PODUTIL_UPSERT_ADDED;
    }
    if (!json_is_array(list)) {
        json_decref(item_new);
        return WH_EINVAL;
    }
    if (found == KEYED_NONE)
        return json_array_append_new(list, item_new) < 0 ? WH_ENOMEM : PODUTIL_UPSERT_ADDED;
    if (podutil_covers(json_array_get(list, found), item_new)) {
        json_decref(item_new);
        return PODUTIL_UPSERT_SAME;
    }
    return json_array_set_new(list, found, item_new) < 0 ? WH_ENOMEM : PODUTIL_UPSERT_REPLACED;
}

/*
 * Upsert item_new into the array obj[list_key], keyed by the string or integer
 * member item_new[key]. With from_end the last match counts (env: the later
 * duplicate wins at run time, docs/plugins.md §6). Steals item_new.
 */
static int upsert_keyed(json_t *obj, const char *list_key, const char *key, json_t *item_new,
                        bool from_end)
{
    json_t *list = json_member(obj, list_key);

    return upsert_keyed_at(obj, list_key, list,
                           keyed_at(list, key, json_member(item_new, key), from_end), item_new);
}

char *podutil_shown(char *buf, size_t len, const char *s)
{
    size_t n;

    if (len < 6) { /* room for "\"...\"" and the NUL */
        if (len > 0)
            buf[0] = '\0';
        return buf;
    }
    buf[0] = '"';
    sanitize_copy(buf + 1, len - 2, s, PODUTIL_SHOWN_MAX, SANITIZE_CONTROLS | SANITIZE_ELLIPSIS);
    n = strlen(buf);
    buf[n] = '"';
    buf[n + 1] = '\0';
    return buf;
}

/* An env entry's value for a message: the literal, quoted and cut, or its valueFrom kind. */
static const char *env_shown(char *buf, size_t len, const json_t *e)
{
    const json_t *from = json_member(e, "valueFrom");
    const char *kind;
    const json_t *ref;
    char name[PODUTIL_SHOWN_MAX + 8];
    char key[PODUTIL_SHOWN_MAX + 8];

    if (from == NULL)
        return podutil_shown(buf, len, podutil_str(e, "value"));
    kind = json_object_iter_key(json_object_iter((json_t *)from));
    if (kind == NULL) {
        snprintf(buf, len, "valueFrom");
        return buf;
    }
    ref = json_member(from, kind);
    if (strcmp(kind, "configMapKeyRef") == 0 || strcmp(kind, "secretKeyRef") == 0) {
        sanitize_copy(name, sizeof(name), podutil_str(ref, "name"), PODUTIL_SHOWN_MAX,
                      SANITIZE_CONTROLS | SANITIZE_ELLIPSIS);
        sanitize_copy(key, sizeof(key), podutil_str(ref, "key"), PODUTIL_SHOWN_MAX,
                      SANITIZE_CONTROLS | SANITIZE_ELLIPSIS);
        snprintf(buf, len, "valueFrom.%s %s/%s", kind, name, key);
    } else {
        sanitize_copy(name, sizeof(name), kind, PODUTIL_SHOWN_MAX,
                      SANITIZE_CONTROLS | SANITIZE_ELLIPSIS);
        snprintf(buf, len, "valueFrom.%s", name);
    }
    return buf;
}

void podutil_warn_env_replaced(struct warnings *w, const char *plugin, const char *container,
                               const json_t *have, const json_t *want)
{
    char ctr[PODUTIL_SHOWN_MAX + 8];
    char old[2 * PODUTIL_SHOWN_MAX + 48];
    char now[2 * PODUTIL_SHOWN_MAX + 48];

    if (w == NULL)
        return;
    warnings_add(w,
                 "%s plugin: container %s sets %s=%s, replaced by %s: the plugin sets it, drop it "
                 "from the pod template",
                 plugin, podutil_shown(ctr, sizeof(ctr), container), podutil_str(want, "name"),
                 env_shown(old, sizeof(old), have), env_shown(now, sizeof(now), want));
}

bool podutil_env_same(const json_t *have, const json_t *want)
{
    if (json_member(want, "valueFrom") == NULL && json_member(have, "valueFrom") != NULL)
        return false;
    return podutil_covers(have, want);
}

int podutil_upsert_env(json_t *container, json_t *env_new, const char *plugin, struct warnings *w)
{
    json_t *list = json_member(container, "env");
    const json_t *name = json_member(env_new, "name");

    if (env_new == NULL)
        return WH_ENOMEM;
    if (json_is_object(container) && json_is_array(list)) {
        /* json_equal's answer for a string name, without its call per entry */
        const char *nv = json_string_value(name);
        size_t nl = json_string_length(name);

        /* the last entry of that name counts (docs/plugins.md §6) */
        for (size_t i = json_array_size(list); i-- > 0;) {
            const json_t *e = json_array_get(list, i);
            const json_t *en = json_member(e, "name");

            if (nv != NULL ? !json_is_string(en) || json_string_length(en) != nl
                        || memcmp(json_string_value(en), nv, nl) != 0
                           : !json_equal(en, name))
                continue;
            if (podutil_env_same(e, env_new)) {
                json_decref(env_new);
                return PODUTIL_UPSERT_SAME;
            }
            podutil_warn_env_replaced(w, plugin, podutil_str(container, "name"), e, env_new);
            return json_array_set_new(list, i, env_new) < 0 ? WH_ENOMEM : PODUTIL_UPSERT_REPLACED;
        }
        /* none of that name: appended, without upsert_keyed's second look */
        return json_array_append_new(list, env_new) < 0 ? WH_ENOMEM : PODUTIL_UPSERT_ADDED;
    }
    return upsert_keyed(container, "env", "name", env_new, true);
}

/*
 * Up to this many name comparisons (the list's entries, those placed included, x entries
 * to place), the batch finds each name by a scan of the list's names, which costs less
 * than an index object (a hash table and an integer per entry) for the few names a
 * plugin places in a few dozen entries; past it, by the index, so thousands of tasks
 * stay O(existing + new).
 */
#define UPSERT_SCAN_MAX   1024
#define UPSERT_SCAN_STACK 64 /* names kept on the stack; more are allocated */

/* An env entry's name as the scan compares it: its bytes (NULL when the entry has no
 * string name) and their length, read once per entry rather than once per compare. */
struct env_key {
    const char *s;
    size_t len;
};

/* Whether a and b are one name: both strings of the same bytes (json_equal's answer). */
static bool same_name(struct env_key a, struct env_key b)
{
    return a.s != NULL && b.s != NULL && a.len == b.len && memcmp(a.s, b.s, a.len) == 0;
}

/* The "name" of env entry e when it is a string, else NULL. */
static const json_t *env_name(const json_t *e)
{
    const json_t *name = json_member(e, "name");

    return json_is_string(name) ? name : NULL;
}

/* The key of env entry e (struct env_key). */
static struct env_key env_key(const json_t *e)
{
    const json_t *name = env_name(e);
    struct env_key k = {NULL, 0};

    if (name != NULL) {
        k.s = json_string_value(name);
        k.len = json_string_length(name);
    }
    return k;
}

/* podutil_upsert_envs's placing (list: the container's env array) by a scan of names. */
static int upsert_envs_scan(json_t *container, json_t *list, const json_t *envs, size_t *failed_at,
                            const char *plugin, struct warnings *w)
{
    struct env_key stack[UPSERT_SCAN_STACK];
    size_t n = json_array_size(list);
    size_t cap = n + json_array_size(envs);
    /* names[k]: the name of list entry k, kept as entries are placed */
    struct env_key *names = cap <= UPSERT_SCAN_STACK ? stack : malloc(cap * sizeof(*names));
    size_t i;
    const json_t *e;
    int rc = 0;

    if (names == NULL)
        return WH_ENOMEM;
    for (size_t k = 0; k < n; k++)
        names[k] = env_key(json_array_get(list, k));
    json_array_foreach(envs, i, e) {
        struct env_key name = env_key(e);
        size_t k = n;

        if (failed_at != NULL)
            *failed_at = i;
        if (name.s == NULL) {
            rc = WH_EINVAL;
            break;
        }
        while (k > 0 && !same_name(names[k - 1], name))
            k--; /* the last entry of that name counts */
        if (k > 0) {
            const json_t *have = json_array_get(list, k - 1);

            if (podutil_env_same(have, e))
                continue;
            podutil_warn_env_replaced(w, plugin, podutil_str(container, "name"), have, e);
            if (json_array_set(list, k - 1, (json_t *)e) < 0) {
                rc = WH_ENOMEM;
                break;
            }
            names[k - 1] = name; /* the replaced entry's name may be gone with it */
            continue;
        }
        if (json_array_append(list, (json_t *)e) < 0) {
            rc = WH_ENOMEM;
            break;
        }
        names[n++] = name;
    }
    if (names != stack)
        free(names);
    return rc;
}

int podutil_upsert_envs(json_t *container, const json_t *envs, size_t *failed_at,
                        const char *plugin, struct warnings *w)
{
    json_t *list;
    json_t *index = NULL; /* name -> position of the LAST entry of that name */
    size_t i;
    const json_t *e;
    int rc = 0;

    if (failed_at != NULL)
        *failed_at = 0;
    if (!json_is_object(container) || !json_is_array(envs))
        return WH_EINVAL;
    if (json_array_size(envs) == 0)
        return 0;
    list = json_member(container, "env");
    if (list == NULL || json_is_null(list)) {
        list = json_array();
        if (list == NULL || json_object_set_new(container, "env", list) < 0)
            return WH_ENOMEM;
    } else if (!json_is_array(list)) {
        return WH_EINVAL;
    }
    if ((json_array_size(list) + json_array_size(envs)) * json_array_size(envs) <= UPSERT_SCAN_MAX)
        return upsert_envs_scan(container, list, envs, failed_at, plugin, w);
    /* keyed by the whole name, NUL bytes and all (json_object_setn), as same_name */
    index = json_object();
    if (index == NULL)
        return WH_ENOMEM;
    json_array_foreach(list, i, e) {
        const json_t *name = env_name(e);

        if (name != NULL
            && json_object_setn_new(index, json_string_value(name), json_string_length(name),
                                    json_integer((json_int_t)i))
                < 0)
            goto nomem;
    }
    json_array_foreach(envs, i, e) {
        const json_t *name = env_name(e);
        const json_t *pos = name != NULL
            ? json_object_getn(index, json_string_value(name), json_string_length(name))
            : NULL;

        if (failed_at != NULL)
            *failed_at = i;
        if (name == NULL) {
            rc = WH_EINVAL;
            break;
        }
        if (pos != NULL) {
            const json_t *have = json_array_get(list, (size_t)json_integer_value(pos));

            if (podutil_env_same(have, e))
                continue;
            podutil_warn_env_replaced(w, plugin, podutil_str(container, "name"), have, e);
            if (json_array_set(list, (size_t)json_integer_value(pos), (json_t *)e) < 0)
                goto nomem;
            continue;
        }
        if (json_array_append(list, (json_t *)e) < 0
            || json_object_setn_new(index, json_string_value(name), json_string_length(name),
                                    json_integer((json_int_t)json_array_size(list) - 1))
                < 0)
            goto nomem;
    }
    json_decref(index);
    return rc;
nomem:
    json_decref(index);
    return WH_ENOMEM;
}

/* The source member of a volume: its first member other than "name" (NULL when none). */
static const char *volume_source(const json_t *v, const json_t **src_out)
{
    const char *key;
    json_t *m;

    json_object_foreach((json_t *)v, key, m) {
        if (strcmp(key, "name") != 0) {
            *src_out = m;
            return key;
        }
    }
    *src_out = NULL;
    return NULL;
}

/* A volume's source for a message: Secret "s", ConfigMap "c", or the member's name. */
static const char *volume_shown(char *buf, size_t len, const json_t *v)
{
    const json_t *src;
    const char *kind = volume_source(v, &src);
    char name[PODUTIL_SHOWN_MAX + 8];

    if (kind == NULL)
        snprintf(buf, len, "no source");
    else if (strcmp(kind, "secret") == 0)
        snprintf(buf, len, "Secret %s",
                 podutil_shown(name, sizeof(name), podutil_str(src, "secretName")));
    else if (strcmp(kind, "configMap") == 0)
        snprintf(buf, len, "ConfigMap %s",
                 podutil_shown(name, sizeof(name), podutil_str(src, "name")));
    else
        sanitize_copy(buf, len, kind, PODUTIL_SHOWN_MAX, SANITIZE_CONTROLS | SANITIZE_ELLIPSIS);
    return buf;
}

/*
 * D5: the same source as want's (the plugin's own Secret or ConfigMap): the same
 * source member, naming the same object. Its other fields may differ.
 */
static bool volume_same_source(const json_t *have, const json_t *want)
{
    static const char *const ids[] = {"secretName", "name"};
    const json_t *wsrc;
    const char *kind = volume_source(want, &wsrc);
    const json_t *hsrc = kind != NULL ? json_member(have, kind) : NULL;

    if (!json_is_object(hsrc))
        return false;
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        const json_t *id = json_member(wsrc, ids[i]);

        if (id != NULL && !json_equal(json_member(hsrc, ids[i]), id))
            return false;
    }
    return true;
}

int podutil_volume_conflict(const json_t *have, const json_t *want, struct wh_error *err)
{
    char name[PODUTIL_SHOWN_MAX + 8];
    char yours[2 * PODUTIL_SHOWN_MAX + 32];
    char ours[2 * PODUTIL_SHOWN_MAX + 32];

    if (podutil_covers(have, want) || volume_same_source(have, want))
        return 0;
    podutil_shown(name, sizeof(name), podutil_str(want, "name"));
    volume_shown(yours, sizeof(yours), have);
    volume_shown(ours, sizeof(ours), want);
    return wh_error_set(err, WH_ECONFLICT,
                        "volume %s is your %s, and the plugin needs that name for its %s: "
                        "rename yours or remove the plugin (Volcano would add a second one, "
                        "which the API server refuses)",
                        name, yours, ours);
}

int podutil_upsert_volume(json_t *pod, json_t *volume_new, struct wh_error *err)
{
    json_t *spec = pod_spec(pod);
    json_t *list;
    size_t at;
    const json_t *have;

    if (volume_new == NULL)
        return WH_ENOMEM;
    if (spec == NULL) {
        json_decref(volume_new);
        return WH_EINVAL;
    }
    list = json_member(spec, "volumes");
    at = keyed_at(list, "name", json_member(volume_new, "name"), false);
    have = at != KEYED_NONE ? json_array_get(list, at) : NULL;
    if (have != NULL && podutil_volume_conflict(have, volume_new, err) < 0) {
        json_decref(volume_new);
        return WH_ECONFLICT;
    }
    return upsert_keyed_at(spec, "volumes", list, at, volume_new);
}

int podutil_mount_conflict(const char *container, const json_t *have, const json_t *want,
                           struct wh_error *err)
{
    char ctr[PODUTIL_SHOWN_MAX + 8];
    char yours[PODUTIL_SHOWN_MAX + 8];
    char path[PODUTIL_SHOWN_MAX + 8];
    char ours[PODUTIL_SHOWN_MAX + 8];

    podutil_shown(ctr, sizeof(ctr), container);
    podutil_shown(yours, sizeof(yours), podutil_str(have, "name"));
    sanitize_copy(path, sizeof(path), podutil_str(have, "mountPath"), PODUTIL_SHOWN_MAX,
                  SANITIZE_CONTROLS | SANITIZE_ELLIPSIS);
    podutil_shown(ours, sizeof(ours), podutil_str(want, "name"));
    return wh_error_set(err, WH_ECONFLICT,
                        "container %s mounts your volume %s at %s, where the plugin mounts %s: "
                        "mount yours elsewhere or remove the plugin (Volcano would add a "
                        "second mount there, which the API server refuses; replacing yours "
                        "would lose it)",
                        ctr, yours, path, ours);
}

int podutil_upsert_mount(json_t *container, json_t *mount_new, struct wh_error *err)
{
    json_t *list;
    size_t at;
    const json_t *have;

    if (mount_new == NULL)
        return WH_ENOMEM;
    list = json_member(container, "volumeMounts");
    at = keyed_at(list, "mountPath", json_member(mount_new, "mountPath"), false);
    have = at != KEYED_NONE ? json_array_get(list, at) : NULL;
    if (have != NULL && !json_equal(json_member(have, "name"), json_member(mount_new, "name"))) {
        podutil_mount_conflict(podutil_str(container, "name"), have, mount_new, err);
        json_decref(mount_new);
        return WH_ECONFLICT;
    }
    return upsert_keyed_at(container, "volumeMounts", list, at, mount_new);
}

void podutil_warn_port_taken(struct warnings *w, const char *plugin, const char *container,
                             const char *name, const json_t *taken_by, const json_t *number)
{
    char key[WARNINGS_KEY_MAX];

    /* Port names are unique per container: adding would get the pod rejected. */
    podutil_port_key(key, sizeof(key), plugin, container, name);
    warnings_add_keyed(w, key,
                       "%s plugin: port name %s already used by port %lld in container %s, port "
                       "%lld not added",
                       plugin, name, (long long)json_integer_value(taken_by), container,
                       (long long)json_integer_value(number));
}

void podutil_warn_port_range(struct warnings *w, const char *plugin, const json_t *number)
{
    if (!json_is_integer(number) || json_integer_value(number) < 1
        || json_integer_value(number) > 65535)
        warnings_add(w,
                     "%s plugin: container port %lld is outside 1-65535, the pod will be rejected",
                     plugin, (long long)json_integer_value(number));
}

int podutil_add_port(json_t *container, json_t *port_new, const char *plugin, struct warnings *w)
{
    json_t *ports;
    const json_t *number;
    const char *name;
    size_t i;
    json_t *p;

    if (port_new == NULL)
        return WH_ENOMEM;
    if (!json_is_object(container)) {
        json_decref(port_new);
        return WH_EINVAL;
    }
    number = json_member(port_new, "containerPort");
    name = podutil_str(port_new, "name");
    ports = json_member(container, "ports");
    json_array_foreach(ports, i, p) {
        if (json_equal(json_member(p, "containerPort"), number)) {
            json_decref(port_new);
            return PODUTIL_UPSERT_SKIPPED;
        }
    }
    json_array_foreach(ports, i, p) {
        if (name[0] != '\0' && strcmp(podutil_str(p, "name"), name) == 0) {
            podutil_warn_port_taken(w, plugin, podutil_str(container, "name"), name,
                                    json_member(p, "containerPort"), number);
            json_decref(port_new);
            return PODUTIL_UPSERT_SKIPPED;
        }
    }
    podutil_warn_port_range(w, plugin, number);
    /* no port has its number (the first loop): appended */
    return upsert_keyed_at(container, "ports", ports, KEYED_NONE, port_new);
}

char *podutil_port_key(char *buf, size_t len, const char *plugin, const char *container,
                       const char *port_name)
{
    snprintf(buf, len, "%s:spec.containers[%s].ports[%s]", plugin, container, port_name);
    return buf;
}

int podutil_add_init_container(json_t *pod, json_t *container_new)
{
    json_t *spec = pod_spec(pod);
    json_t *list;
    size_t i;
    json_t *c;

    if (container_new == NULL)
        return WH_ENOMEM;
    if (spec == NULL) {
        json_decref(container_new);
        return WH_EINVAL;
    }
    list = json_member(spec, "initContainers");
    json_array_foreach(list, i, c) {
        if (json_equal(json_member(c, "name"), json_member(container_new, "name"))) {
            json_decref(container_new);
            return PODUTIL_UPSERT_SKIPPED;
        }
    }
    return upsert_keyed(spec, "initContainers", "name", container_new, false);
}

int podutil_set(json_t *obj, const char *key, json_t *value_new)
{
    const json_t *old;
    int done;

    if (value_new == NULL)
        return WH_ENOMEM;
    if (!json_is_object(obj)) {
        json_decref(value_new);
        return WH_EINVAL;
    }
    old = json_member(obj, key);
    if (json_equal(old, value_new)) {
        json_decref(value_new);
        return PODUTIL_UPSERT_SAME;
    }
    /* ADDED for a new member, as the enum documents; REPLACED only for an existing one. */
    done = old == NULL ? PODUTIL_UPSERT_ADDED : PODUTIL_UPSERT_REPLACED;
    return json_object_set_new(obj, key, value_new) < 0 ? WH_ENOMEM : done;
}

int podutil_set_string(json_t *obj, const char *key, const char *value)
{
    return podutil_set(obj, key, json_string(value));
}

json_t *podutil_object(const char *k1, json_t *v1_new, const char *k2, json_t *v2_new)
{
    json_t *o = v1_new != NULL && (k2 == NULL || v2_new != NULL) ? json_object() : NULL;

    if (o == NULL || json_object_set_new_nocheck(o, k1, v1_new) < 0) {
        json_decref(o);
        if (o == NULL)
            json_decref(v1_new);
        json_decref(v2_new);
        return NULL;
    }
    if (k2 != NULL && json_object_set_new_nocheck(o, k2, v2_new) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *podutil_env_value(const char *name, const char *value)
{
    return podutil_object("name", json_string(name), "value", json_string(value));
}

json_t *podutil_env_shared(const char *name, json_t *value)
{
    return value != NULL ? podutil_object("name", json_string(name), "value", json_incref(value))
                         : NULL;
}

json_t *podutil_env_configmap(const char *name, const char *cm, const char *key)
{
    json_t *ref = podutil_object("name", json_string(cm), "key", json_string(key));

    return podutil_object("name", json_string(name), "valueFrom",
                          podutil_object("configMapKeyRef", ref, NULL, NULL));
}
