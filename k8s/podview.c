/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podview.c - the typed view of a pod (podview.h). One walk fills it; it reads its
 * source through three steps (a value, a member, the next item), each made for the
 * document (base/jsonr.h) or for a jansson tree, whichever the view reads from.
 */
#include "k8s/podview.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/jsonobj.h"

const char *const podview_list_names[PV_LISTS] = {"containers", "initContainers",
                                                  "ephemeralContainers"};

static const struct pv_value absent = {.kind = JSONR_NONE, .tok = -1, .place = -1};

/* ---- the three steps, for either source ---- */

static enum jsonr_kind json_kind(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return JSONR_OBJECT;
    case JSON_ARRAY: return JSONR_ARRAY;
    case JSON_STRING: return JSONR_STRING;
    case JSON_INTEGER: return JSONR_INTEGER;
    case JSON_TRUE: return JSONR_TRUE;
    case JSON_FALSE: return JSONR_FALSE;
    case JSON_NULL: return JSONR_NULL;
    case JSON_REAL: return JSONR_REAL; /* only a tree holds one: the document declines them */
    default: return JSONR_NONE;
    }
}

/* The view's value of the document's value tok, or of the tree's j (whichever v reads). */
static struct pv_value value_at(const struct pod_view *v, int tok, const json_t *j)
{
    struct pv_value x = absent;

    if (v->doc != NULL) {
        x.kind = jsonr_doc_kind(v->doc, tok);
        if (x.kind == JSONR_NONE)
            return absent;
        x.tok = tok;
        if (x.kind == JSONR_STRING)
            (void)jsonr_doc_string(v->doc, tok, &x.s, &x.n);
        else if (x.kind == JSONR_INTEGER)
            (void)jsonr_doc_integer(v->doc, tok, &x.integer);
        return x;
    }
    if (j == NULL)
        return absent;
    x.kind = json_kind(j);
    x.json = j;
    if (x.kind == JSONR_STRING) {
        x.s = json_string_value(j);
        x.n = json_string_length(j);
    } else if (x.kind == JSONR_INTEGER) {
        x.integer = (long long)json_integer_value(j);
    }
    return x;
}

/*
 * obj's members keys[0..n) into out, in one pass (absent when obj is no object or has
 * none); with placed, each one's place among obj's members (pv_value.place).
 */
static void members(const struct pod_view *v, const struct pv_value *obj, const char *const *keys,
                    size_t n, bool placed, struct pv_value *out)
{
    int toks[JSONR_MEMBERS_MAX];
    long places[JSONR_MEMBERS_MAX];
    const json_t *js[JSONR_MEMBERS_MAX];

    for (size_t i = 0; i < n; i++)
        out[i] = absent;
    if (obj->kind != JSONR_OBJECT || n > JSONR_MEMBERS_MAX)
        return;
    if (v->doc != NULL) {
        jsonr_doc_members(v->doc, obj->tok, keys, n, toks, placed ? places : NULL);
        for (size_t i = 0; i < n; i++) {
            out[i] = value_at(v, toks[i], NULL);
            if (placed && out[i].kind != JSONR_NONE)
                out[i].place = places[i];
        }
        return;
    }
    json_members(obj->json, keys, n, js);
    for (size_t i = 0; i < n; i++)
        out[i] = value_at(v, -1, js[i]);
    if (!placed)
        return;
    /* jansson's order is the place: one walk of obj's members, matched by key (not by
     * value: every null, true and false is one shared value) */
    {
        long at = 0;

        for (void *it = json_object_iter((json_t *)obj->json); it != NULL;
             it = json_object_iter_next((json_t *)obj->json, it), at++) {
            const char *key = json_object_iter_key(it);
            size_t len = json_object_iter_key_len(it);

            for (size_t i = 0; i < n; i++) {
                if (js[i] != NULL && strlen(keys[i]) == len && memcmp(keys[i], key, len) == 0)
                    out[i].place = at;
            }
        }
    }
}

/* Where an array's walk is: the document's token of item i, or the tree's index i. */
struct cursor {
    int tok;
    size_t i;
};

static struct pv_value first_item(const struct pod_view *v, const struct pv_value *list,
                                  struct cursor *c)
{
    c->i = 0;
    if (v->doc != NULL) {
        c->tok = jsonr_doc_first(v->doc, list->tok);
        return value_at(v, c->tok, NULL);
    }
    return value_at(v, -1, json_array_get(list->json, 0));
}

static struct pv_value next_item(const struct pod_view *v, const struct pv_value *list,
                                 struct cursor *c)
{
    c->i++;
    if (v->doc != NULL) {
        c->tok = jsonr_doc_after(v->doc, c->tok);
        return value_at(v, c->tok, NULL);
    }
    return value_at(v, -1, json_array_get(list->json, c->i));
}

/* How many items list has: its size when it is an array, else 0. */
static size_t list_size(const struct pod_view *v, const struct pv_value *list)
{
    if (list->kind != JSONR_ARRAY)
        return 0;
    return v->doc != NULL ? jsonr_doc_size(v->doc, list->tok) : json_array_size(list->json);
}

/* ---- the walk ---- */

/* The list value list as n entries of size bytes each, filled by fill. */
static int read_list(const struct pod_view *v, const struct pv_value *list, size_t *n, void **at,
                     size_t size,
                     void (*fill)(const struct pod_view *, const struct pv_value *, void *))
{
    struct cursor c = {-1, 0};
    struct pv_value item;
    char *entries;

    *n = list_size(v, list);
    *at = NULL;
    if (*n == 0)
        return 0;
    entries = calloc(*n, size);
    if (entries == NULL) {
        *n = 0;
        return WH_ENOMEM;
    }
    item = first_item(v, list, &c);
    for (size_t i = 0; i < *n; i++) {
        fill(v, &item, entries + i * size);
        if (i + 1 < *n)
            item = next_item(v, list, &c);
    }
    *at = entries;
    return 0;
}

/* field (a PV_LIST) read from the list value in field.list. */
#define READ_LIST(v, field, fill)                                                                  \
    read_list((v), &(field).list, &(field).n, (void **)&(field).at, sizeof(*(field).at), (fill))

static void fill_env(const struct pod_view *v, const struct pv_value *e, void *out)
{
    static const char *const keys[] = {"name"};
    struct pv_env *env = out;

    env->entry = *e;
    members(v, e, keys, 1, false, &env->name);
}

static void fill_mount(const struct pod_view *v, const struct pv_value *e, void *out)
{
    static const char *const keys[] = {"name", "mountPath"};
    struct pv_mount *m = out;
    struct pv_value x[2];

    m->entry = *e;
    members(v, e, keys, 2, false, x);
    m->name = x[0];
    m->mount_path = x[1];
}

static void fill_port(const struct pod_view *v, const struct pv_value *e, void *out)
{
    static const char *const keys[] = {"name", "containerPort"};
    struct pv_port *p = out;
    struct pv_value x[2];

    p->entry = *e;
    members(v, e, keys, 2, false, x);
    p->name = x[0];
    p->container_port = x[1];
}

static void fill_volume(const struct pod_view *v, const struct pv_value *e, void *out)
{
    static const char *const keys[] = {"name"};
    struct pv_volume *vol = out;

    vol->entry = *e;
    members(v, e, keys, 1, false, &vol->name);
}

static void fill_owner(const struct pod_view *v, const struct pv_value *e, void *out)
{
    static const char *const keys[] = {"apiVersion", "kind", "name", "controller", "uid"};
    struct pv_owner *o = out;
    struct pv_value x[5];

    o->entry = *e;
    members(v, e, keys, 5, false, x);
    o->api_version = x[0];
    o->kind = x[1];
    o->name = x[2];
    o->controller = x[3];
    o->uid = x[4];
}

/* A container; its lists are left empty when memory runs out (read_container says so). */
static void fill_container(const struct pod_view *v, const struct pv_value *e, void *out)
{
    static const char *const keys[] = {"name", "command", "args", "env", "volumeMounts", "ports"};
    struct pv_container *c = out;
    struct pv_value x[6];

    c->entry = *e;
    members(v, e, keys, 6, true, x);
    c->name = x[0];
    c->name.place = -1; /* not one a patch orders */
    c->command = x[1];
    c->args = x[2];
    c->env.list = x[3];
    c->mounts.list = x[4];
    c->ports.list = x[5];
    if (READ_LIST(v, c->env, fill_env) < 0 || READ_LIST(v, c->mounts, fill_mount) < 0
        || READ_LIST(v, c->ports, fill_port) < 0)
        c->entry.kind = JSONR_NONE; /* the mark of a container not read whole */
}

static void free_containers(struct pv_container *at, size_t n)
{
    for (size_t i = 0; at != NULL && i < n; i++) {
        free(at[i].env.at);
        free(at[i].mounts.at);
        free(at[i].ports.at);
    }
    free(at);
}

static int read_containers(struct pod_view *v, enum pv_container_list l)
{
    int rc = READ_LIST(v, v->containers[l], fill_container);

    for (size_t i = 0; rc == 0 && i < v->containers[l].n; i++) {
        if (v->containers[l].at[i].entry.kind == JSONR_NONE)
            rc = WH_ENOMEM;
    }
    return rc;
}

static int walk(struct pod_view *v, struct pv_value pod)
{
    static const char *const pod_keys[] = {"metadata", "spec"};
    static const char *const meta_keys[] = {"name",   "generateName", "namespace",
                                            "labels", "annotations",  "ownerReferences"};
    static const char *const label_keys[] = {"volcano.sh/task-index"};
    static const char *const annotation_keys[] = {"volcano.sh/task-spec", "volcano.sh/task-index",
                                                  "hccl/rankIndex"};
    static const char *const spec_keys[] = {"hostname",   "subdomain",      "volumes",
                                            "containers", "initContainers", "ephemeralContainers"};
    struct pv_value x[6];

    v->pod = pod;
    members(v, &pod, pod_keys, 2, true, x);
    v->metadata = x[0];
    v->spec = x[1];
    members(v, &v->metadata, meta_keys, 6, false, x);
    v->name = x[0];
    v->generate_name = x[1];
    v->ns = x[2];
    v->labels = x[3];
    v->annotations = x[4];
    v->owners.list = x[5];
    members(v, &v->labels, label_keys, 1, false, &v->label_task_index);
    members(v, &v->annotations, annotation_keys, 3, false, x);
    v->annotation_task_spec = x[0];
    v->annotation_task_index = x[1];
    v->annotation_hccl_rank = x[2];
    members(v, &v->spec, spec_keys, 6, true, x);
    v->hostname = x[0];
    v->subdomain = x[1];
    v->volumes.list = x[2];
    for (int l = 0; l < PV_LISTS; l++)
        v->containers[l].list = x[3 + l];
    if (READ_LIST(v, v->owners, fill_owner) < 0 || READ_LIST(v, v->volumes, fill_volume) < 0)
        return WH_ENOMEM;
    for (int l = 0; l < PV_LISTS; l++) {
        if (read_containers(v, (enum pv_container_list)l) < 0)
            return WH_ENOMEM;
    }
    return 0;
}

/* An empty view: every member absent. */
static void view_init(struct pod_view *v)
{
    memset(v, 0, sizeof(*v));
    v->pod = absent;
}

int podview_from_doc(struct pod_view *v, const struct jsonr_doc *doc, int pod)
{
    int rc;

    view_init(v);
    v->doc = doc;
    rc = walk(v, value_at(v, pod, NULL));
    if (rc < 0) {
        podview_dispose(v);
        v->doc = doc;
    }
    return rc;
}

int podview_from_json(struct pod_view *v, const json_t *pod)
{
    int rc;

    view_init(v);
    v->tree = json_incref((json_t *)pod); /* the view reads it, never writes it */
    rc = walk(v, value_at(v, -1, pod));
    if (rc < 0)
        podview_dispose(v);
    return rc;
}

void podview_dispose(struct pod_view *v)
{
    free(v->owners.at);
    free(v->volumes.at);
    for (int l = 0; l < PV_LISTS; l++)
        free_containers(v->containers[l].at, v->containers[l].n);
    json_decref(v->tree);
    view_init(v);
}

json_t *podview_value(const struct pod_view *v, const struct pv_value *x)
{
    if (x->kind == JSONR_NONE)
        return NULL;
    if (v->doc != NULL)
        return jsonr_doc_value(v->doc, x->tok);
    return json_incref((json_t *)x->json);
}

bool podview_is(const struct pv_value *x, const char *s)
{
    size_t n = strlen(s);

    return x->kind == JSONR_STRING && x->n == n && memcmp(x->s, s, n) == 0;
}
