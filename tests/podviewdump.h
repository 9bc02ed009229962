/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podviewdump.h - a pod view (k8s/podview.h) as one JSON text, every member in order
 * with its kind, its string or integer, and podview_value's tree of it: two views
 * are the same view when their dumps are the same bytes. For the differential tests
 * of the view's two builders (tests/k8s/check_podview.c, tests/fuzz/fuzz_reader.c).
 * Written with jansson alone, apart from the view itself.
 */
#ifndef WH_TESTS_PODVIEWDUMP_H
#define WH_TESTS_PODVIEWDUMP_H

#include <jansson.h>
#include <stdlib.h>

#include "k8s/podview.h"

/* x as [kind, string or integer or null, podview_value's tree or null, place]. */
static inline json_t *pvd_value(const struct pod_view *v, const struct pv_value *x)
{
    json_t *payload = x->kind == JSONR_STRING ? json_stringn_nocheck(x->s, x->n)
        : x->kind == JSONR_INTEGER            ? json_integer(x->integer)
                                              : json_null();
    json_t *tree = podview_value(v, x);

    return json_pack("[iooI]", (int)x->kind, payload, tree != NULL ? tree : json_null(),
                     (json_int_t)x->place);
}

#define PVD_LIST(v, field, each)                                                                   \
    do {                                                                                           \
        json_t *items_ = json_array();                                                             \
        json_array_append_new(out, pvd_value((v), &(field).list));                                 \
        for (size_t i_ = 0; i_ < (field).n; i_++) {                                                \
            json_t *e_ = json_array();                                                             \
            each(v, &(field).at[i_], e_);                                                          \
            json_array_append_new(items_, e_);                                                     \
        }                                                                                          \
        json_array_append_new(out, items_);                                                        \
    } while (0)

static inline void pvd_env(const struct pod_view *v, const struct pv_env *e, json_t *o)
{
    json_array_append_new(o, pvd_value(v, &e->entry));
    json_array_append_new(o, pvd_value(v, &e->name));
}

static inline void pvd_mount(const struct pod_view *v, const struct pv_mount *m, json_t *o)
{
    json_array_append_new(o, pvd_value(v, &m->entry));
    json_array_append_new(o, pvd_value(v, &m->name));
    json_array_append_new(o, pvd_value(v, &m->mount_path));
}

static inline void pvd_port(const struct pod_view *v, const struct pv_port *p, json_t *o)
{
    json_array_append_new(o, pvd_value(v, &p->entry));
    json_array_append_new(o, pvd_value(v, &p->name));
    json_array_append_new(o, pvd_value(v, &p->container_port));
}

static inline void pvd_volume(const struct pod_view *v, const struct pv_volume *x, json_t *o)
{
    json_array_append_new(o, pvd_value(v, &x->entry));
    json_array_append_new(o, pvd_value(v, &x->name));
}

static inline void pvd_owner(const struct pod_view *v, const struct pv_owner *x, json_t *o)
{
    json_array_append_new(o, pvd_value(v, &x->entry));
    json_array_append_new(o, pvd_value(v, &x->api_version));
    json_array_append_new(o, pvd_value(v, &x->kind));
    json_array_append_new(o, pvd_value(v, &x->name));
    json_array_append_new(o, pvd_value(v, &x->controller));
    json_array_append_new(o, pvd_value(v, &x->uid));
}

static inline void pvd_container(const struct pod_view *v, const struct pv_container *c,
                                 json_t *out)
{
    json_array_append_new(out, pvd_value(v, &c->entry));
    json_array_append_new(out, pvd_value(v, &c->name));
    json_array_append_new(out, pvd_value(v, &c->command));
    json_array_append_new(out, pvd_value(v, &c->args));
    PVD_LIST(v, c->env, pvd_env);
    PVD_LIST(v, c->mounts, pvd_mount);
    PVD_LIST(v, c->ports, pvd_port);
}

/* The dump of v: a malloc'd compact JSON text (free()), or NULL without memory. */
static inline char *podview_dump(const struct pod_view *v)
{
    const struct pv_value *scalars[] = {
        &v->pod,
        &v->metadata,
        &v->name,
        &v->generate_name,
        &v->ns,
        &v->labels,
        &v->label_task_index,
        &v->annotations,
        &v->annotation_task_spec,
        &v->annotation_task_index,
        &v->annotation_hccl_rank,
        &v->spec,
        &v->hostname,
        &v->subdomain,
    };
    json_t *out = json_array();
    char *text;

    for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++)
        json_array_append_new(out, pvd_value(v, scalars[i]));
    PVD_LIST(v, v->owners, pvd_owner);
    PVD_LIST(v, v->volumes, pvd_volume);
    for (int l = 0; l < PV_LISTS; l++) {
        PVD_LIST(v, v->containers[l], pvd_container);
    }
    text = json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(out);
    return text;
}

#endif
