/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podedit.c - edits recorded over a pod view, and their patch (podedit.h).
 *
 * The pod as edited so far is the view with the records laid over it: a list is the
 * view's entries, each replaced or kept, then the entries appended; a member set whole
 * hides the view's. Look-ups read the view's typed keys (names, mount paths, port
 * numbers) and build a jansson value of a view entry only where a decision needs the
 * whole entry (D5's "covers", a message). Each decision is podutil.c's, through
 * podutil_internal.h, in podutil.c's order.
 *
 * The patch: the edits walked in the order the edited copy would keep its members (the
 * view's members in their place, new members after them in the order they were made),
 * the ops written through base/patch.h's patch_writer: an add for a new member or an
 * appended entry, the diff of the view's value and the edit's for a replaced one. The
 * diff of the whole pod would write the same ops, as it skips what no edit touched.
 */
#include "plugins/podedit.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonobj.h"
#include "base/patch.h"
#include "k8s/names.h"
#include "k8s/podcheck.h"
#include "plugins/plugin.h"
#include "plugins/podutil.h"
#include "plugins/podutil_internal.h"

#define NONE ((size_t)-1) /* no entry has the key */

/* ---- the view's values, compared as podutil compares jansson's ---- */

/* json_equal(x's value, want): typed for a string or integer want, else by x's tree. */
static bool pv_equal(const struct pod_view *v, const struct pv_value *x, const json_t *want)
{
    json_t *have;
    bool same;

    if (want == NULL || x->kind == JSONR_NONE)
        return false;
    if (json_is_string(want))
        return x->kind == JSONR_STRING && x->n == json_string_length(want)
            && memcmp(x->s, json_string_value(want), x->n) == 0;
    if (json_is_integer(want))
        return x->kind == JSONR_INTEGER && x->integer == (long long)json_integer_value(want);
    have = podview_value(v, x);
    same = json_equal(have, want);
    json_decref(have);
    return same;
}

/* podutil_str of x: its string up to its first NUL, or "", into buf (cut to len). */
static const char *pv_cstr(const struct pv_value *x, char *buf, size_t len)
{
    size_t n = 0;

    if (len == 0)
        return "";
    if (x->kind == JSONR_STRING) {
        n = strnlen(x->s, x->n);
        if (n >= len)
            n = len - 1;
        memcpy(buf, x->s, n);
    }
    buf[n] = '\0';
    return buf;
}

/* Longest container name a message or a warning key quotes whole (a DNS label has 63). */
#define NAME_MAX_SHOWN 256

/* ---- lists: the view's entries, replaced or kept, then the appended ones ---- */

/* The view's entry structs of one list: their array, size, and where their key is. */
struct view_entries {
    const void *base;
    size_t stride;
    size_t key_off; /* offset of the struct pv_value of the key ("name", "mountPath") */
};

static void list_init(struct pe_list *l, const struct pv_value *orig, size_t n)
{
    memset(l, 0, sizeof(*l));
    l->orig = orig;
    l->n_orig = orig->kind == JSONR_ARRAY ? n : 0;
}

static void list_dispose(struct pe_list *l)
{
    for (size_t k = 0; l->now != NULL && k < l->n_orig; k++)
        json_decref(l->now[k]);
    free(l->now);
    json_decref(l->added);
    l->now = NULL;
    l->added = NULL;
}

static size_t list_len(const struct pe_list *l)
{
    return l->n_orig + json_array_size(l->added);
}

/* Whether the list is an array now: the view's, or made by an upsert. */
static bool list_is_array(const struct pe_list *l)
{
    return l->made || l->orig->kind == JSONR_ARRAY;
}

/* The view's struct for entry k (k < n_orig). */
static const void *view_entry(const struct view_entries *ve, size_t k)
{
    return (const char *)ve->base + k * ve->stride;
}

/* Entry k (borrowed) when it is jansson's (replaced or appended), else NULL. */
static json_t *edited_entry(const struct pe_list *l, size_t k)
{
    if (k < l->n_orig)
        return l->now != NULL ? l->now[k] : NULL;
    return json_array_get(l->added, k - l->n_orig);
}

/* Entry k as a tree: new reference (the view's entry built, or the edited one). */
static json_t *entry_value(const struct pod_edits *e, const struct pe_list *l,
                           const struct view_entries *ve, size_t k)
{
    json_t *j = edited_entry(l, k);

    if (j != NULL)
        return json_incref(j);
    /* every view entry struct starts with the whole entry (struct pv_env.entry, ...) */
    return podview_value(e->view, (const struct pv_value *)view_entry(ve, k));
}

/* Whether entry k's member key equals want (json_equal, as podutil's keyed_at). */
static bool entry_key_is(const struct pod_edits *e, const struct pe_list *l,
                         const struct view_entries *ve, size_t k, const char *key,
                         const json_t *want)
{
    json_t *j = edited_entry(l, k);

    if (j != NULL)
        return json_equal(json_member(j, key), want);
    return pv_equal(e->view,
                    (const struct pv_value *)((const char *)view_entry(ve, k) + ve->key_off), want);
}

/* podutil's keyed_at over the list as it is now. */
static size_t keyed_at(const struct pod_edits *e, const struct pe_list *l,
                       const struct view_entries *ve, const char *key, const json_t *want,
                       bool from_end)
{
    size_t n = list_len(l);

    for (size_t i = 0; i < n; i++) {
        size_t at = from_end ? n - 1 - i : i;

        if (entry_key_is(e, l, ve, at, key, want))
            return at;
    }
    return NONE;
}

/* Entry k becomes item (stolen). @return 0 or WH_ENOMEM. */
static int list_set(struct pe_list *l, size_t k, json_t *item)
{
    if (k >= l->n_orig)
        return json_array_set_new(l->added, k - l->n_orig, item) < 0 ? WH_ENOMEM : 0;
    if (l->now == NULL && (l->now = calloc(l->n_orig, sizeof(*l->now))) == NULL) {
        json_decref(item);
        return WH_ENOMEM;
    }
    json_decref(l->now[k]);
    l->now[k] = item;
    return 0;
}

/* item (stolen) appended. @return 0 or WH_ENOMEM. */
static int list_append(struct pe_list *l, json_t *item)
{
    if (l->added == NULL && (l->added = json_array()) == NULL) {
        json_decref(item);
        return WH_ENOMEM;
    }
    return json_array_append_new(l->added, item) < 0 ? WH_ENOMEM : 0;
}

/* The list made where the member was absent or null (podutil: a fresh array set), with
 * fresh's entries (stolen; NULL: a new empty array). @return 0, or WH_ENOMEM (no list
 * made, as podutil's set fails whole). */
static int list_make(struct pod_edits *e, struct pe_list *l, json_t *fresh)
{
    if (fresh == NULL && (fresh = json_array()) == NULL)
        return WH_ENOMEM;
    json_decref(l->added); /* NULL: nothing was appended to a list not made */
    l->added = fresh;
    l->made = true;
    if (l->orig->kind == JSONR_NONE)
        l->seq = e->next_seq++;
    return 0;
}

/*
 * podutil's upsert_keyed_at on list l of an object (obj_ok: the object is one), with
 * the entry of item_new's key at found (NONE: none). Steals item_new.
 */
static int upsert_at(struct pod_edits *e, bool obj_ok, struct pe_list *l,
                     const struct view_entries *ve, size_t found, json_t *item_new)
{
    json_t *fresh;
    json_t *have;
    bool same;

    if (item_new == NULL)
        return WH_ENOMEM;
    if (!obj_ok) {
        json_decref(item_new);
        return WH_EINVAL;
    }
    if (!list_is_array(l)) {
        if (l->orig->kind != JSONR_NONE && l->orig->kind != JSONR_NULL) {
            json_decref(item_new);
            return WH_EINVAL;
        }
        fresh = json_array();
        if (fresh == NULL || json_array_append_new(fresh, item_new) < 0) {
            if (fresh == NULL)
                json_decref(item_new); /* stolen even on failure */
            json_decref(fresh);
            return WH_ENOMEM;
        }
        return list_make(e, l, fresh) < 0 ? WH_ENOMEM : PODUTIL_UPSERT_ADDED;
    }
    if (found == NONE)
        return list_append(l, item_new) < 0 ? WH_ENOMEM : PODUTIL_UPSERT_ADDED;
    have = entry_value(e, l, ve, found);
    if (have == NULL) {
        json_decref(item_new);
        return WH_ENOMEM;
    }
    same = podutil_covers(have, item_new);
    json_decref(have);
    if (same) {
        json_decref(item_new);
        return PODUTIL_UPSERT_SAME;
    }
    return list_set(l, found, item_new) < 0 ? WH_ENOMEM : PODUTIL_UPSERT_REPLACED;
}

/* ---- containers ---- */

/* Where container c is: the view's (*vc, *pc), or one a plugin added (the result). */
static json_t *container_at(const struct pod_edits *e, struct pe_ref c,
                            const struct pv_container **vc, struct pe_container **pc)
{
    const struct pe_list *l;

    *vc = NULL;
    *pc = NULL;
    if (c.list != PV_CONTAINERS && c.list != PV_INIT_CONTAINERS)
        return NULL; /* no list the plugins edit: podutil's functions say EINVAL */
    l = &e->lists[c.list];
    if (c.i < l->n_orig) {
        *vc = &e->view->containers[c.list].at[c.i];
        *pc = &e->ctrs[c.list][c.i];
        return NULL;
    }
    return json_array_get(l->added, c.i - l->n_orig);
}

static struct view_entries env_entries(const struct pv_container *vc)
{
    return (struct view_entries){vc->env.at, sizeof(*vc->env.at), offsetof(struct pv_env, name)};
}

static struct view_entries mount_entries(const struct pv_container *vc)
{
    return (struct view_entries){vc->mounts.at, sizeof(*vc->mounts.at),
                                 offsetof(struct pv_mount, mount_path)};
}

static struct view_entries port_entries(const struct pv_container *vc)
{
    return (struct view_entries){vc->ports.at, sizeof(*vc->ports.at),
                                 offsetof(struct pv_port, container_port)};
}

static struct view_entries container_entries(const struct pod_edits *e, enum pv_container_list l)
{
    return (struct view_entries){e->view->containers[l].at, sizeof(*e->view->containers[l].at),
                                 offsetof(struct pv_container, name)};
}

static struct view_entries volume_entries(const struct pod_edits *e)
{
    return (struct view_entries){e->view->volumes.at, sizeof(*e->view->volumes.at),
                                 offsetof(struct pv_volume, name)};
}

int pod_edits_init(struct pod_edits *e, const struct pod_view *view)
{
    memset(e, 0, sizeof(*e));
    e->view = view;
    list_init(&e->volumes, &view->volumes.list, view->volumes.n);
    for (int l = 0; l < 2; l++) {
        size_t n = view->containers[l].n;

        list_init(&e->lists[l], &view->containers[l].list, n);
        if (e->lists[l].n_orig == 0)
            continue;
        e->ctrs[l] = calloc(n, sizeof(*e->ctrs[l]));
        if (e->ctrs[l] == NULL) {
            pod_edits_dispose(e);
            return WH_ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
            const struct pv_container *vc = &view->containers[l].at[i];
            struct pe_container *pc = &e->ctrs[l][i];

            list_init(&pc->env, &vc->env.list, vc->env.n);
            list_init(&pc->mounts, &vc->mounts.list, vc->mounts.n);
            list_init(&pc->ports, &vc->ports.list, vc->ports.n);
        }
    }
    return 0;
}

void pod_edits_dispose(struct pod_edits *e)
{
    for (int l = 0; l < 2; l++) {
        for (size_t i = 0; e->ctrs[l] != NULL && i < e->lists[l].n_orig; i++) {
            struct pe_container *pc = &e->ctrs[l][i];

            list_dispose(&pc->env);
            list_dispose(&pc->mounts);
            list_dispose(&pc->ports);
            json_decref(pc->command.value);
            json_decref(pc->args.value);
        }
        free(e->ctrs[l]);
        e->ctrs[l] = NULL;
        list_dispose(&e->lists[l]);
    }
    list_dispose(&e->volumes);
    json_decref(e->hostname.value);
    json_decref(e->subdomain.value);
    json_decref(e->hccl_rank.value);
    e->hostname.value = e->subdomain.value = e->hccl_rank.value = NULL;
}

size_t pod_edits_count(const struct pod_edits *e, enum pv_container_list list)
{
    return list < 2 ? list_len(&e->lists[list]) : 0;
}

char *pod_edits_container_name(const struct pod_edits *e, struct pe_ref c)
{
    const struct pv_container *vc;
    struct pe_container *pc;
    json_t *added = container_at(e, c, &vc, &pc);

    if (vc != NULL)
        return vc->name.kind == JSONR_STRING ? strndup(vc->name.s, vc->name.n) : strdup("");
    return strdup(podutil_str(added, "name"));
}

bool pod_edits_has_spec(const struct pod_edits *e)
{
    return e->view->spec.kind == JSONR_OBJECT;
}

/* The string of set member s, else of the view's orig, as podutil_str reads it. */
static const char *set_cstr(const struct pe_set *s, const struct pv_value *orig, char *buf,
                            size_t len)
{
    if (s->value != NULL) {
        const char *v = json_string_value(s->value);

        snprintf(buf, len, "%s", v != NULL ? v : "");
        return buf;
    }
    return pv_cstr(orig, buf, len);
}

const char *pod_edits_spec_string(const struct pod_edits *e, const char *key, char *buf, size_t len)
{
    if (strcmp(key, "hostname") == 0)
        return set_cstr(&e->hostname, &e->view->hostname, buf, len);
    if (strcmp(key, "subdomain") == 0)
        return set_cstr(&e->subdomain, &e->view->subdomain, buf, len);
    return pv_cstr(&(struct pv_value){.kind = JSONR_NONE}, buf, len);
}

const char *pod_edits_hccl_rank(const struct pod_edits *e, char *buf, size_t len)
{
    static const struct pv_value none = {.kind = JSONR_NONE};

    if (e->hccl_rank.value != NULL || e->annotations_made || e->metadata_made)
        return set_cstr(&e->hccl_rank, &none, buf, len);
    return pv_cstr(&e->view->annotation_hccl_rank, buf, len);
}

json_t *pod_edits_container_member(const struct pod_edits *e, struct pe_ref c, const char *key)
{
    const struct pv_container *vc;
    struct pe_container *pc;
    json_t *added = container_at(e, c, &vc, &pc);
    bool command = strcmp(key, "command") == 0;
    const struct pe_set *s;

    if (!command && strcmp(key, "args") != 0)
        return NULL;
    if (vc == NULL)
        return json_incref(json_member(added, key));
    s = command ? &pc->command : &pc->args;
    if (s->value != NULL)
        return json_incref(s->value);
    return podview_value(e->view, command ? &vc->command : &vc->args);
}

/* podutil_str(env, "value") of env (borrowed) as a malloc'd copy into *value. */
static int env_literal(const json_t *env, char **value)
{
    *value = strdup(podutil_str(env, "value"));
    return *value != NULL ? 0 : WH_ENOMEM;
}

int pod_edits_env_value(const struct pod_edits *e, struct pe_ref c, const char *name, char **value)
{
    const struct pv_container *vc;
    struct pe_container *pc;
    json_t *added = container_at(e, c, &vc, &pc);
    struct view_entries ve;
    size_t n;

    *value = NULL;
    if (vc == NULL) {
        size_t i;
        const json_t *env;

        json_array_foreach(json_member(added, "env"), i, env) {
            if (strcmp(podutil_str(env, "name"), name) == 0)
                return env_literal(env, value);
        }
        return 0;
    }
    ve = env_entries(vc);
    n = list_len(&pc->env);
    for (size_t k = 0; k < n; k++) {
        json_t *j = edited_entry(&pc->env, k);

        if (j == NULL) {
            const struct pv_env *ve_k = view_entry(&ve, k);
            size_t len = ve_k->name.kind == JSONR_STRING ? strnlen(ve_k->name.s, ve_k->name.n) : 0;
            int rc;

            /* podutil_str's name, compared as a C string (strcmp) */
            if (len != strlen(name) || memcmp(len > 0 ? ve_k->name.s : "", name, len) != 0)
                continue;
            j = podview_value(e->view, &ve_k->entry);
            rc = j != NULL ? env_literal(j, value) : WH_ENOMEM;
            json_decref(j);
            return rc;
        }
        if (strcmp(podutil_str(j, "name"), name) == 0)
            return env_literal(j, value);
    }
    return 0;
}

/* ---- the upserts ---- */

/* The last entry of l named name (a string), or NONE. */
static size_t env_named(const struct pod_edits *e, const struct pe_list *l,
                        const struct view_entries *ve, const json_t *name)
{
    return keyed_at(e, l, ve, "name", name, true);
}

/* podutil_upsert_env's replace of entry k by env (stolen), with its warning. */
static int env_replace(struct pod_edits *e, const struct pv_container *vc, struct pe_list *l,
                       const struct view_entries *ve, size_t k, json_t *env, bool *same,
                       const char *plugin, struct warnings *w)
{
    json_t *have = entry_value(e, l, ve, k);
    char name[NAME_MAX_SHOWN];

    *same = false;
    if (have == NULL) {
        json_decref(env);
        return WH_ENOMEM;
    }
    if (podutil_env_same(have, env)) {
        json_decref(have);
        json_decref(env);
        *same = true;
        return 0;
    }
    podutil_warn_env_replaced(w, plugin, pv_cstr(&vc->name, name, sizeof(name)), have, env);
    json_decref(have);
    return list_set(l, k, env);
}

int pod_edits_upsert_env(struct pod_edits *e, struct pe_ref c, json_t *env_new, const char *plugin,
                         struct warnings *w)
{
    const struct pv_container *vc;
    struct pe_container *pc;
    json_t *added = container_at(e, c, &vc, &pc);
    struct view_entries ve;
    size_t k;
    bool same;
    int rc;

    if (vc == NULL)
        return podutil_upsert_env(added, env_new, plugin, w);
    if (env_new == NULL)
        return WH_ENOMEM;
    ve = env_entries(vc);
    if (vc->entry.kind != JSONR_OBJECT || !list_is_array(&pc->env))
        return upsert_at(e, vc->entry.kind == JSONR_OBJECT, &pc->env, &ve, NONE, env_new);
    k = env_named(e, &pc->env, &ve, json_member(env_new, "name"));
    if (k == NONE)
        return list_append(&pc->env, env_new) < 0 ? WH_ENOMEM : PODUTIL_UPSERT_ADDED;
    rc = env_replace(e, vc, &pc->env, &ve, k, env_new, &same, plugin, w);
    if (rc < 0)
        return rc;
    return same ? PODUTIL_UPSERT_SAME : PODUTIL_UPSERT_REPLACED;
}

/* A name index of entries (a jansson object: name -> the last place of that name), for
 * a batch whose scan would compare more than this many names (as podutil's). */
#define UPSERT_SCAN_MAX 1024

/* The index of l's string names: name -> place of the last entry of it. NULL on ENOMEM. */
static json_t *name_index(const struct pe_list *l, const struct view_entries *ve)
{
    json_t *index = json_object();
    size_t n = list_len(l);

    for (size_t k = 0; index != NULL && k < n; k++) {
        json_t *j = edited_entry(l, k);
        const char *s = NULL;
        size_t len = 0;

        if (j != NULL) {
            const json_t *name = json_member(j, "name");

            if (json_is_string(name)) {
                s = json_string_value(name);
                len = json_string_length(name);
            }
        } else {
            const struct pv_value *name =
                (const struct pv_value *)((const char *)view_entry(ve, k) + ve->key_off);

            if (name->kind == JSONR_STRING) {
                s = name->s;
                len = name->n;
            }
        }
        if (s != NULL && json_object_setn_new(index, s, len, json_integer((json_int_t)k)) < 0) {
            json_decref(index);
            return NULL;
        }
    }
    return index;
}

int pod_edits_upsert_envs(struct pod_edits *e, struct pe_ref c, const json_t *envs,
                          size_t *failed_at, const char *plugin, struct warnings *w)
{
    const struct pv_container *vc;
    struct pe_container *pc;
    json_t *added = container_at(e, c, &vc, &pc);
    struct pe_list *l;
    struct view_entries ve;
    json_t *index = NULL;
    size_t i;
    const json_t *env;
    int rc = 0;

    if (vc == NULL)
        return podutil_upsert_envs(added, envs, failed_at, plugin, w);
    if (failed_at != NULL)
        *failed_at = 0;
    if (vc->entry.kind != JSONR_OBJECT || !json_is_array(envs))
        return WH_EINVAL;
    if (json_array_size(envs) == 0)
        return 0;
    l = &pc->env;
    ve = env_entries(vc);
    if (!list_is_array(l)) {
        if (l->orig->kind != JSONR_NONE && l->orig->kind != JSONR_NULL)
            return WH_EINVAL;
        if (list_make(e, l, NULL) < 0)
            return WH_ENOMEM;
    }
    if ((list_len(l) + json_array_size(envs)) * json_array_size(envs) > UPSERT_SCAN_MAX
        && (index = name_index(l, &ve)) == NULL)
        return WH_ENOMEM;
    json_array_foreach(envs, i, env) {
        const json_t *name = json_member(env, "name");
        size_t k;
        bool same;

        if (failed_at != NULL)
            *failed_at = i;
        if (!json_is_string(name)) {
            rc = WH_EINVAL;
            break;
        }
        if (index != NULL) {
            const json_t *at =
                json_object_getn(index, json_string_value(name), json_string_length(name));

            k = at != NULL ? (size_t)json_integer_value(at) : NONE;
        } else {
            k = env_named(e, l, &ve, name);
        }
        if (k != NONE) {
            rc = env_replace(e, vc, l, &ve, k, json_incref((json_t *)env), &same, plugin, w);
            if (rc < 0)
                break;
            continue;
        }
        rc = list_append(l, json_incref((json_t *)env));
        if (rc == 0 && index != NULL
            && json_object_setn_new(index, json_string_value(name), json_string_length(name),
                                    json_integer((json_int_t)list_len(l) - 1))
                < 0)
            rc = WH_ENOMEM;
        if (rc < 0)
            break;
    }
    json_decref(index);
    return rc;
}

int pod_edits_upsert_volume(struct pod_edits *e, json_t *volume_new, struct wh_error *err)
{
    struct view_entries ve = volume_entries(e);
    size_t at;

    if (volume_new == NULL)
        return WH_ENOMEM;
    if (e->view->spec.kind != JSONR_OBJECT) {
        json_decref(volume_new);
        return WH_EINVAL;
    }
    at = list_is_array(&e->volumes)
        ? keyed_at(e, &e->volumes, &ve, "name", json_member(volume_new, "name"), false)
        : NONE;
    if (at != NONE) {
        json_t *have = entry_value(e, &e->volumes, &ve, at);
        int rc = have != NULL ? podutil_volume_conflict(have, volume_new, err) : WH_ENOMEM;

        json_decref(have);
        if (rc < 0) {
            json_decref(volume_new);
            return rc;
        }
    }
    return upsert_at(e, true, &e->volumes, &ve, at, volume_new);
}

int pod_edits_upsert_mount(struct pod_edits *e, struct pe_ref c, json_t *mount_new,
                           struct wh_error *err)
{
    const struct pv_container *vc;
    struct pe_container *pc;
    json_t *added = container_at(e, c, &vc, &pc);
    struct view_entries ve;
    size_t at = NONE;

    if (vc == NULL)
        return podutil_upsert_mount(added, mount_new, err);
    if (mount_new == NULL)
        return WH_ENOMEM;
    ve = mount_entries(vc);
    if (vc->entry.kind == JSONR_OBJECT && list_is_array(&pc->mounts))
        at = keyed_at(e, &pc->mounts, &ve, "mountPath", json_member(mount_new, "mountPath"), false);
    if (at != NONE) {
        const json_t *want = json_member(mount_new, "name");
        json_t *j = edited_entry(&pc->mounts, at);
        bool same_volume = j != NULL ? json_equal(json_member(j, "name"), want)
                                     : pv_equal(e->view, &vc->mounts.at[at].name, want);

        if (!same_volume) {
            json_t *have = entry_value(e, &pc->mounts, &ve, at);
            char name[NAME_MAX_SHOWN];

            if (have != NULL)
                podutil_mount_conflict(pv_cstr(&vc->name, name, sizeof(name)), have, mount_new,
                                       err);
            json_decref(have);
            json_decref(mount_new);
            return have != NULL ? WH_ECONFLICT : WH_ENOMEM;
        }
    }
    return upsert_at(e, vc->entry.kind == JSONR_OBJECT, &pc->mounts, &ve, at, mount_new);
}

int pod_edits_add_port(struct pod_edits *e, struct pe_ref c, json_t *port_new, const char *plugin,
                       struct warnings *w)
{
    const struct pv_container *vc;
    struct pe_container *pc;
    json_t *added = container_at(e, c, &vc, &pc);
    struct view_entries ve;
    const json_t *number;
    const char *name;
    size_t n;

    if (vc == NULL)
        return podutil_add_port(added, port_new, plugin, w);
    if (port_new == NULL)
        return WH_ENOMEM;
    if (vc->entry.kind != JSONR_OBJECT) {
        json_decref(port_new);
        return WH_EINVAL;
    }
    ve = port_entries(vc);
    number = json_member(port_new, "containerPort");
    name = podutil_str(port_new, "name");
    n = list_len(&pc->ports);
    for (size_t k = 0; k < n; k++) {
        if (entry_key_is(e, &pc->ports, &ve, k, "containerPort", number)) {
            json_decref(port_new);
            return PODUTIL_UPSERT_SKIPPED;
        }
    }
    for (size_t k = 0; name[0] != '\0' && k < n; k++) {
        json_t *j = edited_entry(&pc->ports, k);
        char have[NAME_MAX_SHOWN];
        char ctr[NAME_MAX_SHOWN];
        json_t *taken_by;

        /* podutil_str's name, compared as a C string (strcmp) */
        if (j != NULL ? strcmp(podutil_str(j, "name"), name) != 0
                      : strcmp(pv_cstr(&vc->ports.at[k].name, have, sizeof(have)), name) != 0)
            continue;
        taken_by = j != NULL ? json_incref(json_member(j, "containerPort"))
                             : podview_value(e->view, &vc->ports.at[k].container_port);
        podutil_warn_port_taken(w, plugin, pv_cstr(&vc->name, ctr, sizeof(ctr)), name, taken_by,
                                number);
        json_decref(taken_by);
        json_decref(port_new);
        return PODUTIL_UPSERT_SKIPPED;
    }
    podutil_warn_port_range(w, plugin, number);
    return upsert_at(e, true, &pc->ports, &ve, NONE, port_new);
}

int pod_edits_add_init_container(struct pod_edits *e, json_t *container_new)
{
    struct pe_list *l = &e->lists[PV_INIT_CONTAINERS];
    struct view_entries ve = container_entries(e, PV_INIT_CONTAINERS);
    size_t n = list_len(l);
    const json_t *name;

    if (container_new == NULL)
        return WH_ENOMEM;
    name = json_member(container_new, "name");
    if (e->view->spec.kind != JSONR_OBJECT) {
        json_decref(container_new);
        return WH_EINVAL;
    }
    for (size_t k = 0; k < n; k++) {
        if (entry_key_is(e, l, &ve, k, "name", name)) {
            json_decref(container_new);
            return PODUTIL_UPSERT_SKIPPED;
        }
    }
    return upsert_at(e, true, l, &ve, NONE, container_new);
}

/* podutil_set of member s, whose value in the view is orig, in an object (obj_ok). */
static int set_member(struct pod_edits *e, bool obj_ok, struct pe_set *s,
                      const struct pv_value *orig, json_t *value_new)
{
    bool was;
    bool same;

    if (value_new == NULL)
        return WH_ENOMEM;
    if (!obj_ok) {
        json_decref(value_new);
        return WH_EINVAL;
    }
    was = s->value != NULL || (orig != NULL && orig->kind != JSONR_NONE);
    if (s->value != NULL)
        same = json_equal(s->value, value_new);
    else
        same = orig != NULL && pv_equal(e->view, orig, value_new);
    if (same) {
        json_decref(value_new);
        return PODUTIL_UPSERT_SAME;
    }
    if (!was)
        s->seq = e->next_seq++;
    json_decref(s->value);
    s->value = value_new;
    return was ? PODUTIL_UPSERT_REPLACED : PODUTIL_UPSERT_ADDED;
}

int pod_edits_set_spec(struct pod_edits *e, const char *key, const char *value)
{
    if (strcmp(key, "hostname") == 0)
        return set_member(e, e->view->spec.kind == JSONR_OBJECT, &e->hostname, &e->view->hostname,
                          json_string(value));
    if (strcmp(key, "subdomain") == 0)
        return set_member(e, e->view->spec.kind == JSONR_OBJECT, &e->subdomain, &e->view->subdomain,
                          json_string(value));
    return WH_EINVAL;
}

int pod_edits_set_container(struct pod_edits *e, struct pe_ref c, const char *key,
                            json_t *value_new)
{
    const struct pv_container *vc;
    struct pe_container *pc;
    json_t *added = container_at(e, c, &vc, &pc);
    bool command = strcmp(key, "command") == 0;

    if (!command && strcmp(key, "args") != 0) {
        json_decref(value_new);
        return WH_EINVAL;
    }
    if (vc == NULL)
        return podutil_set(added, key, value_new);
    return set_member(e, vc->entry.kind == JSONR_OBJECT, command ? &pc->command : &pc->args,
                      command ? &vc->command : &vc->args, value_new);
}

int pod_edits_set_hccl_rank(struct pod_edits *e, const char *value)
{
    const struct pod_view *v = e->view;
    const struct pv_value *orig = NULL;

    if (!e->metadata_made && (v->metadata.kind == JSONR_NONE || v->metadata.kind == JSONR_NULL)) {
        e->metadata_made = true;
        if (v->metadata.kind == JSONR_NONE)
            e->metadata_seq = e->next_seq++;
    }
    if (!e->metadata_made && v->metadata.kind != JSONR_OBJECT)
        return set_member(e, false, &e->hccl_rank, NULL, json_string(value));
    if (!e->annotations_made
        && (e->metadata_made || v->annotations.kind == JSONR_NONE
            || v->annotations.kind == JSONR_NULL))
        e->annotations_made = true;
    if (!e->annotations_made) {
        if (v->annotations.kind != JSONR_OBJECT)
            return set_member(e, false, &e->hccl_rank, NULL, json_string(value));
        orig = &v->annotation_hccl_rank;
    }
    return set_member(e, true, &e->hccl_rank, orig, json_string(value));
}

/* ---- the patch: the edits walked in the edited copy's order ---- */

/* Whether l was edited. */
static bool list_edited(const struct pe_list *l)
{
    if (l->made || json_array_size(l->added) > 0)
        return true;
    for (size_t k = 0; l->now != NULL && k < l->n_orig; k++) {
        if (l->now[k] != NULL)
            return true;
    }
    return false;
}

static bool container_edited(const struct pe_container *pc)
{
    return list_edited(&pc->env) || list_edited(&pc->mounts) || list_edited(&pc->ports)
        || pc->command.value != NULL || pc->args.value != NULL;
}

/* What an edited member is, for its writer. */
enum member_kind { M_SET, M_LIST, M_METADATA, M_SPEC };

/* An edited member of an object being written. */
struct member {
    const char *key;
    bool is_new;
    long order; /* the view's place, or the order it was made in */
    enum member_kind kind;
    const struct pv_value *orig; /* the view's member */
    const struct pe_set *set;    /* M_SET */
    const struct pe_list *list;  /* M_LIST */
    struct view_entries ve;      /* M_LIST: the view's entries */
    int ctr_list;                /* M_LIST of containers: its list, else -1 */
};

/* The members of one object: at most a container's five, or the spec's. */
#define MEMBERS_MAX 8

struct members {
    struct member m[MEMBERS_MAX];
    size_t n;
};

static void add_member(struct members *ms, struct member m, unsigned long seq)
{
    m.is_new = m.orig->kind == JSONR_NONE;
    m.order = m.is_new ? (long)seq : m.orig->place;
    ms->m[ms->n++] = m;
}

static int member_cmp(const void *a, const void *b)
{
    const struct member *x = a;
    const struct member *y = b;

    if (x->is_new != y->is_new)
        return x->is_new ? 1 : -1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static void set_member_of(struct members *ms, const char *key, const struct pe_set *s,
                          const struct pv_value *orig)
{
    if (s->value != NULL)
        add_member(ms, (struct member){.key = key, .kind = M_SET, .orig = orig, .set = s}, s->seq);
}

static void list_member_of(const struct pod_edits *e, struct members *ms, const char *key,
                           const struct pe_list *l, struct view_entries ve, int ctr_list)
{
    bool edited = list_edited(l);

    for (size_t k = 0; !edited && ctr_list >= 0 && k < l->n_orig; k++)
        edited = container_edited(&e->ctrs[ctr_list][k]);
    if (edited)
        add_member(ms,
                   (struct member){.key = key,
                                   .kind = M_LIST,
                                   .orig = l->orig,
                                   .list = l,
                                   .ve = ve,
                                   .ctr_list = ctr_list},
                   l->seq);
}

static int write_members(const struct pod_edits *e, struct patch_writer *w, struct members *ms);

/* A view container k of list l, edited: its members in their order. */
static int write_container(const struct pod_edits *e, struct patch_writer *w, int l, size_t k)
{
    const struct pv_container *vc = &e->view->containers[l].at[k];
    const struct pe_container *pc = &e->ctrs[l][k];
    struct members ms = {.n = 0};

    set_member_of(&ms, "command", &pc->command, &vc->command);
    set_member_of(&ms, "args", &pc->args, &vc->args);
    list_member_of(e, &ms, "env", &pc->env, env_entries(vc), -1);
    list_member_of(e, &ms, "volumeMounts", &pc->mounts, mount_entries(vc), -1);
    list_member_of(e, &ms, "ports", &pc->ports, port_entries(vc), -1);
    return write_members(e, w, &ms);
}

/* An edited list at the current place: made (its entries whole), or entry by entry as
 * the diff of the view's list and the edited one (a replaced entry's diff, an edited
 * container's members, the appended entries). */
static int write_list(const struct pod_edits *e, struct patch_writer *w, const struct member *m)
{
    const struct pe_list *l = m->list;
    size_t n_added = json_array_size(l->added);
    size_t mark;
    int rc = 0;

    if (l->made)
        return m->is_new ? patch_writer_add(w, l->added)
                         : patch_writer_diff(w, json_null(), l->added);
    for (size_t k = 0; rc == 0 && k < l->n_orig; k++) {
        bool replaced = l->now != NULL && l->now[k] != NULL;

        if (!replaced && (m->ctr_list < 0 || !container_edited(&e->ctrs[m->ctr_list][k])))
            continue;
        rc = patch_writer_push_index(w, k, &mark);
        if (rc == 0 && replaced) {
            json_t *was = podview_value(e->view, (const struct pv_value *)view_entry(&m->ve, k));

            rc = was != NULL ? patch_writer_diff(w, was, l->now[k]) : WH_ENOMEM;
            json_decref(was);
        } else if (rc == 0) {
            rc = write_container(e, w, m->ctr_list, k);
        }
        patch_writer_cut(w, mark);
    }
    for (size_t k = 0; rc == 0 && k < n_added; k++) {
        rc = patch_writer_push(w, "-", &mark);
        if (rc == 0)
            rc = patch_writer_add(w, json_array_get(l->added, k));
        patch_writer_cut(w, mark);
    }
    return rc;
}

/* metadata at the current place: {"annotations": {"hccl/rankIndex": ...}} as made or set. */
static int write_metadata(const struct pod_edits *e, struct patch_writer *w, const struct member *m)
{
    const struct pod_view *v = e->view;
    json_t *made = NULL;
    size_t mark;
    size_t mark2;
    int rc;

    if (e->metadata_made || e->annotations_made) {
        json_t *ann = json_object();

        if (ann != NULL && e->hccl_rank.value != NULL
            && json_object_set_nocheck(ann, PLUGIN_HCCL_RANK_KEY, e->hccl_rank.value) < 0) {
            json_decref(ann);
            ann = NULL;
        }
        made = ann;
        if (made != NULL && e->metadata_made) {
            made = json_object();
            if (made == NULL)
                json_decref(ann);
            if (made == NULL || json_object_set_new_nocheck(made, "annotations", ann) < 0) {
                json_decref(made);
                made = NULL;
            }
        }
        if (made == NULL)
            return WH_ENOMEM;
    }
    if (e->metadata_made) {
        rc = m->is_new ? patch_writer_add(w, made) : patch_writer_diff(w, json_null(), made);
        json_decref(made);
        return rc;
    }
    rc = patch_writer_push(w, "annotations", &mark);
    if (rc == 0 && e->annotations_made)
        rc = v->annotations.kind == JSONR_NONE ? patch_writer_add(w, made)
                                               : patch_writer_diff(w, json_null(), made);
    else if (rc == 0 && e->hccl_rank.value != NULL) {
        rc = patch_writer_push(w, PLUGIN_HCCL_RANK_KEY, &mark2);
        if (rc == 0 && v->annotation_hccl_rank.kind == JSONR_NONE) {
            rc = patch_writer_add(w, e->hccl_rank.value);
        } else if (rc == 0) {
            json_t *was = podview_value(v, &v->annotation_hccl_rank);

            rc = was != NULL ? patch_writer_diff(w, was, e->hccl_rank.value) : WH_ENOMEM;
            json_decref(was);
        }
        patch_writer_cut(w, mark2);
    }
    patch_writer_cut(w, mark);
    json_decref(made);
    return rc;
}

/* ms's members at the current place, in the edited copy's order. */
static int write_members(const struct pod_edits *e, struct patch_writer *w, struct members *ms)
{
    int rc = 0;

    qsort(ms->m, ms->n, sizeof(ms->m[0]), member_cmp);
    for (size_t i = 0; rc == 0 && i < ms->n; i++) {
        const struct member *m = &ms->m[i];
        size_t mark;

        rc = patch_writer_push(w, m->key, &mark);
        if (rc == 0 && m->kind == M_SET) {
            if (m->is_new) {
                rc = patch_writer_add(w, m->set->value);
            } else {
                json_t *was = podview_value(e->view, m->orig);

                rc = was != NULL ? patch_writer_diff(w, was, m->set->value) : WH_ENOMEM;
                json_decref(was);
            }
        } else if (rc == 0 && m->kind == M_LIST) {
            rc = write_list(e, w, m);
        } else if (rc == 0) {
            rc = write_metadata(e, w, m);
        }
        patch_writer_cut(w, mark);
    }
    return rc;
}

int pod_edits_write(const struct pod_edits *e, const struct jsonw_texts *known, struct buf *out,
                    size_t *n_ops)
{
    const struct pod_view *v = e->view;
    struct members spec = {.n = 0};
    struct members pod = {.n = 0};
    struct patch_writer w;
    size_t mark;
    int rc = 0;

    set_member_of(&spec, "hostname", &e->hostname, &v->hostname);
    set_member_of(&spec, "subdomain", &e->subdomain, &v->subdomain);
    list_member_of(e, &spec, "volumes", &e->volumes, volume_entries(e), -1);
    for (int l = 0; l < 2; l++)
        list_member_of(e, &spec, podview_list_names[l], &e->lists[l],
                       container_entries(e, (enum pv_container_list)l), l);
    if (e->hccl_rank.value != NULL || e->metadata_made || e->annotations_made)
        add_member(&pod,
                   (struct member){.key = "metadata", .kind = M_METADATA, .orig = &v->metadata},
                   e->metadata_seq);
    patch_writer_begin(&w, out, known);
    /* spec: an object the chain's pods all have, so never new */
    if (spec.n > 0)
        add_member(&pod, (struct member){.key = "spec", .kind = M_SPEC, .orig = &v->spec}, 0);
    qsort(pod.m, pod.n, sizeof(pod.m[0]), member_cmp);
    for (size_t i = 0; rc == 0 && i < pod.n; i++) {
        rc = patch_writer_push(&w, pod.m[i].key, &mark);
        if (rc == 0)
            rc = pod.m[i].kind == M_METADATA ? write_metadata(e, &w, &pod.m[i])
                                             : write_members(e, &w, &spec);
        patch_writer_cut(&w, mark);
    }
    if (rc < 0)
        buf_fail(out, rc);
    rc = patch_writer_end(&w, n_ops);
    return rc;
}

/* ---- D15: a violation the edits brought ---- */

/* The C strings podcheck reads of a list's entries (json_string_value's: up to a NUL). */
struct cnames {
    const char **at; /* n of them; NULL entries for skipped empty ones */
    char *text;      /* the view's names, copied with their NULs */
    size_t n;
    size_t *first; /* k8s_name_first_positions */
};

static void cnames_dispose(struct cnames *c)
{
    free(c->at);
    free(c->text);
    free(c->first);
}

/* The name (at key_off of the view's entry, else member key of the edited one) of each
 * entry of l, as podcheck's names_of takes them. @return 0, or WH_ENOMEM. */
static int cnames_of(const struct pe_list *l, const struct view_entries *ve, size_t key_off,
                     const char *key, bool skip_empty, struct cnames *c)
{
    size_t bytes = 0;
    size_t used = 0;

    memset(c, 0, sizeof(*c));
    c->n = list_len(l);
    if (c->n == 0)
        return 0;
    for (size_t k = 0; k < l->n_orig; k++) {
        const struct pv_value *x = (const void *)((const char *)view_entry(ve, k) + key_off);

        bytes += x->kind == JSONR_STRING ? strnlen(x->s, x->n) + 1 : 1;
    }
    c->at = calloc(c->n, sizeof(*c->at));
    c->text = malloc(bytes > 0 ? bytes : 1);
    if (c->at == NULL || c->text == NULL)
        return WH_ENOMEM;
    for (size_t k = 0; k < c->n; k++) {
        json_t *j = edited_entry(l, k);
        const char *s;

        if (j != NULL || k >= l->n_orig) {
            s = podutil_str(j, key);
        } else {
            const struct pv_value *x = (const void *)((const char *)view_entry(ve, k) + key_off);
            size_t len = x->kind == JSONR_STRING ? strnlen(x->s, x->n) : 0;

            memcpy(c->text + used, x->s != NULL ? x->s : "", len);
            c->text[used + len] = '\0';
            s = c->text + used;
            used += len + 1;
        }
        c->at[k] = skip_empty && s[0] == '\0' ? NULL : s;
    }
    c->first = k8s_name_first_positions(c->at, c->n);
    return c->first != NULL ? 0 : WH_ENOMEM;
}

/* Whether cnames has a repeat. */
static bool cnames_repeat(const struct cnames *c)
{
    for (size_t k = 0; k < c->n; k++) {
        if (c->first[k] != k)
            return true;
    }
    return false;
}


/* podcheck's check of entry k of a container's ports and env lists (not the view's own). */
static bool own(const struct pe_list *l, size_t k)
{
    return k < l->n_orig && (l->now == NULL || l->now[k] == NULL);
}

/* 1 when podcheck's check_container finds a violation in container (vc, pc) or the added
 * one (added): mounts, ports, env; 0 when none; < 0 on ENOMEM. */
static int container_violates(const struct pe_container *pc, const struct pv_container *vc,
                              const json_t *added)
{
    struct pe_list lone[3]; /* an added container's lists, as lists of edited entries */
    const struct pe_list *mounts;
    const struct pe_list *ports;
    const struct pe_list *env;
    struct view_entries pve = {NULL, 0, 0};
    struct view_entries mve = {NULL, 0, 0};
    struct cnames cn;
    int rc;

    if (vc != NULL) {
        if (vc->entry.kind != JSONR_OBJECT)
            return 0;
        mounts = &pc->mounts;
        ports = &pc->ports;
        env = &pc->env;
        pve = port_entries(vc);
        mve = mount_entries(vc);
    } else {
        static const struct pv_value absent_list = {.kind = JSONR_NONE, .tok = -1, .place = -1};
        static const char *const keys[3] = {"volumeMounts", "ports", "env"};

        if (!json_is_object(added))
            return 0;
        for (int k = 0; k < 3; k++) {
            list_init(&lone[k], &absent_list, 0);
            lone[k].added = json_member(added, keys[k]);
            if (!json_is_array(lone[k].added))
                lone[k].added = NULL;
        }
        mounts = &lone[0];
        ports = &lone[1];
        env = &lone[2];
    }
    rc = cnames_of(mounts, &mve, offsetof(struct pv_mount, mount_path), "mountPath", false, &cn);
    if (rc == 0 && cnames_repeat(&cn))
        rc = 1;
    cnames_dispose(&cn);
    if (rc != 0)
        return rc;
    rc = cnames_of(ports, &pve, offsetof(struct pv_port, name), "name", true, &cn);
    for (size_t k = 0; rc == 0 && k < cn.n; k++) {
        const char *name = cn.at[k] != NULL ? cn.at[k] : "";
        bool repeated = cn.first[k] != k;
        bool mine = vc != NULL && own(ports, k);
        const char *why = name[0] != '\0' && (!mine || repeated) ? k8s_name_port_error(name) : NULL;

        if (!mine) {
            const json_t *num = json_member(edited_entry(ports, k), "containerPort");
            json_int_t n = json_integer_value(num);

            if ((json_is_integer(num) && (n < 1 || n > 65535)) || why != NULL)
                rc = 1;
        }
        if (why == NULL && repeated)
            rc = 1;
    }
    cnames_dispose(&cn);
    if (rc != 0)
        return rc;
    for (size_t k = 0; k < list_len(env); k++) {
        const json_t *e;
        const json_t *value;
        const char *name;

        if (vc != NULL && own(env, k))
            continue; /* the user's own */
        e = edited_entry(env, k);
        name = podutil_str(e, "name");
        value = json_member(e, "value");
        if (k8s_name_env_error(name) != NULL
            || (json_is_string(value)
                && strlen(name) + 1 + json_string_length(value) + 1 > PODCHECK_ENV_MAX))
            return 1;
    }
    return 0;
}

int pod_edits_violates(const struct pod_edits *e)
{
    const struct pod_view *v = e->view;
    struct view_entries vols = volume_entries(e);
    char buf[256];
    const char *s;
    struct cnames cn;
    size_t total = 0;
    const char **names;
    size_t *first;
    int rc;

    if (v->spec.kind != JSONR_OBJECT)
        return 0;
    s = set_cstr(&e->subdomain, &v->subdomain, buf, sizeof(buf));
    if (s[0] != '\0' && k8s_name_label_error(s) != NULL)
        return 1;
    s = set_cstr(&e->hostname, &v->hostname, buf, sizeof(buf));
    if (s[0] != '\0' && k8s_name_label_error(s) != NULL)
        return 1;
    rc = cnames_of(&e->volumes, &vols, offsetof(struct pv_volume, name), "name", false, &cn);
    for (size_t k = 0; rc == 0 && k < cn.n; k++) {
        if ((!own(&e->volumes, k) && k8s_name_label_error(cn.at[k]) != NULL) || cn.first[k] != k)
            rc = 1;
    }
    cnames_dispose(&cn);
    if (rc != 0)
        return rc;
    /* container names over the three lists */
    for (int l = 0; l < PV_LISTS; l++)
        total += l < 2 ? list_len(&e->lists[l]) : v->containers[l].n;
    if (total > 0) {
        struct cnames parts[PV_LISTS];
        size_t at = 0;

        memset(parts, 0, sizeof(parts));
        names = calloc(total, sizeof(*names));
        for (int l = 0; l < PV_LISTS; l++) {
            struct pe_list eph;
            const struct pe_list *pl = &e->lists[l < 2 ? l : 0];
            struct view_entries ve = container_entries(e, (enum pv_container_list)l);

            if (l == PV_EPHEMERAL_CONTAINERS) {
                list_init(&eph, &v->containers[l].list, v->containers[l].n);
                pl = &eph;
            }
            rc = names == NULL
                ? WH_ENOMEM
                : cnames_of(pl, &ve, offsetof(struct pv_container, name), "name", false, &parts[l]);
            for (size_t k = 0; rc == 0 && k < parts[l].n; k++)
                names[at++] = parts[l].at[k];
            if (rc != 0) {
                for (int m = 0; m <= l; m++)
                    cnames_dispose(&parts[m]);
                free(names);
                return rc;
            }
        }
        first = k8s_name_first_positions(names, total);
        rc = first == NULL ? WH_ENOMEM : 0;
        for (size_t k = 0; rc == 0 && k < total; k++) {
            if (first[k] != k)
                rc = 1;
        }
        free(first);
        free(names);
        for (int l = 0; l < PV_LISTS; l++)
            cnames_dispose(&parts[l]);
        if (rc != 0)
            return rc;
    }
    for (int l = 0; l < PV_LISTS; l++) {
        size_t n_orig = l < 2 ? e->lists[l].n_orig : v->containers[l].n;
        size_t n = l < 2 ? list_len(&e->lists[l]) : n_orig;

        for (size_t i = 0; i < n; i++) {
            static const struct pe_container untouched; /* an ephemeral container's edits */
            struct pe_container eph;
            const struct pe_container *pc = &untouched;
            const struct pv_container *vc = NULL;
            const json_t *added = NULL;

            if (i < n_orig) {
                vc = &v->containers[l].at[i];
                if (l < 2) {
                    pc = &e->ctrs[l][i];
                } else {
                    list_init(&eph.env, &vc->env.list, vc->env.n);
                    list_init(&eph.mounts, &vc->mounts.list, vc->mounts.n);
                    list_init(&eph.ports, &vc->ports.list, vc->ports.n);
                    pc = &eph;
                }
            } else {
                added = json_array_get(e->lists[l].added, i - n_orig);
            }
            rc = container_violates(pc, vc, added);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

int pod_edits_first_new_violation(const struct pod_edits *e, struct podcheck_violation *out)
{
    json_t *before;
    json_t *after;
    int rc = pod_edits_violates(e);

    if (rc == 0)
        return 0;
    /* A violation somewhere (maybe the user's own), or no memory to tell: the whole
     * comparison, on the trees of the pod and of the pod patched. */
    before = podview_value(e->view, &e->view->pod);
    after = before != NULL ? pod_edits_pod(e) : NULL;
    rc = after != NULL ? (podcheck_first_new(before, after, out) ? 1 : 0) : WH_ENOMEM;
    json_decref(after);
    json_decref(before);
    return rc;
}

json_t *pod_edits_pod(const struct pod_edits *e)
{
    struct buf text;
    json_t *before = podview_value(e->view, &e->view->pod);
    json_t *patch = NULL;
    json_t *after = NULL;

    buf_init(&text, BUF_NO_MAX);
    if (before != NULL && pod_edits_write(e, NULL, &text, NULL) == 0)
        patch = json_loadb(text.data, text.len, JSON_ALLOW_NUL, NULL);
    if (patch != NULL)
        after = patch_apply(before, patch, NULL);
    json_decref(patch);
    json_decref(before);
    buf_dispose(&text);
    return after;
}
