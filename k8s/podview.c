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

/* obj's member key (absent when obj is no object or has none). */
static struct pv_value member(const struct pod_view *v, const struct pv_value *obj, const char *key)
{
    if (obj->kind != JSONR_OBJECT)
        return absent;
    if (v->doc != NULL)
        return value_at(v, jsonr_doc_member(v->doc, obj->tok, key), NULL);
    return value_at(v, -1, json_object_get(obj->json, key));
}

/* member, with its place among obj's members (pv_value.place). */
static struct pv_value placed_member(const struct pod_view *v, const struct pv_value *obj,
                                     const char *key)
{
    struct pv_value x = member(v, obj, key);
    void *it;

    if (x.kind == JSONR_NONE)
        return x;
    if (v->doc != NULL) {
        x.place = jsonr_doc_place(v->doc, obj->tok, key);
        return x;
    }
    x.place = 0;
    for (it = json_object_iter((json_t *)obj->json);
         it != NULL && json_object_iter_value(it) != x.json;
         it = json_object_iter_next((json_t *)obj->json, it))
        x.place++;
    return x;
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

/* The member key of obj as a list of n entries of size bytes each, filled by fill. */
static int read_list(const struct pod_view *v, const struct pv_value *obj, const char *key,
                     bool placed, struct pv_value *list, size_t *n, void **at, size_t size,
                     void (*fill)(const struct pod_view *, const struct pv_value *, void *))
{
    struct cursor c = {-1, 0};
    struct pv_value item;
    char *entries;

    *list = placed ? placed_member(v, obj, key) : member(v, obj, key);
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

#define READ_LIST(v, obj, key, placed, field, fill)                                                \
    read_list((v), (obj), (key), (placed), &(field).list, &(field).n, (void **)&(field).at,        \
              sizeof(*(field).at), (fill))

static void fill_env(const struct pod_view *v, const struct pv_value *e, void *out)
{
    struct pv_env *env = out;

    env->entry = *e;
    env->name = member(v, e, "name");
}

static void fill_mount(const struct pod_view *v, const struct pv_value *e, void *out)
{
    struct pv_mount *m = out;

    m->entry = *e;
    m->name = member(v, e, "name");
    m->mount_path = member(v, e, "mountPath");
}

static void fill_port(const struct pod_view *v, const struct pv_value *e, void *out)
{
    struct pv_port *p = out;

    p->entry = *e;
    p->name = member(v, e, "name");
    p->container_port = member(v, e, "containerPort");
}

static void fill_volume(const struct pod_view *v, const struct pv_value *e, void *out)
{
    struct pv_volume *vol = out;

    vol->entry = *e;
    vol->name = member(v, e, "name");
}

static void fill_owner(const struct pod_view *v, const struct pv_value *e, void *out)
{
    struct pv_owner *o = out;

    o->entry = *e;
    o->api_version = member(v, e, "apiVersion");
    o->kind = member(v, e, "kind");
    o->name = member(v, e, "name");
    o->controller = member(v, e, "controller");
    o->uid = member(v, e, "uid");
}

/* A container; its lists are left empty when memory runs out (read_container says so). */
static void fill_container(const struct pod_view *v, const struct pv_value *e, void *out)
{
    struct pv_container *c = out;

    c->entry = *e;
    c->name = member(v, e, "name");
    c->command = placed_member(v, e, "command");
    c->args = placed_member(v, e, "args");
    if (READ_LIST(v, e, "env", true, c->env, fill_env) < 0
        || READ_LIST(v, e, "volumeMounts", true, c->mounts, fill_mount) < 0
        || READ_LIST(v, e, "ports", true, c->ports, fill_port) < 0)
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
    int rc = READ_LIST(v, &v->spec, podview_list_names[l], true, v->containers[l], fill_container);

    for (size_t i = 0; rc == 0 && i < v->containers[l].n; i++) {
        if (v->containers[l].at[i].entry.kind == JSONR_NONE)
            rc = WH_ENOMEM;
    }
    return rc;
}

static int walk(struct pod_view *v, struct pv_value pod)
{
    struct pv_value *md = &v->metadata;

    v->pod = pod;
    v->metadata = placed_member(v, &pod, "metadata");
    v->name = member(v, md, "name");
    v->generate_name = member(v, md, "generateName");
    v->ns = member(v, md, "namespace");
    v->labels = member(v, md, "labels");
    v->label_task_index = member(v, &v->labels, "volcano.sh/task-index");
    v->annotations = member(v, md, "annotations");
    v->annotation_task_spec = member(v, &v->annotations, "volcano.sh/task-spec");
    v->annotation_task_index = member(v, &v->annotations, "volcano.sh/task-index");
    v->annotation_hccl_rank = member(v, &v->annotations, "hccl/rankIndex");
    v->spec = placed_member(v, &pod, "spec");
    v->hostname = placed_member(v, &v->spec, "hostname");
    v->subdomain = placed_member(v, &v->spec, "subdomain");
    if (READ_LIST(v, md, "ownerReferences", false, v->owners, fill_owner) < 0
        || READ_LIST(v, &v->spec, "volumes", true, v->volumes, fill_volume) < 0)
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
