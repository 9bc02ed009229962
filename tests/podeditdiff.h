/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podeditdiff.h - the differential of plugins/podedit.c against its reference, podutil.h
 * on a jansson copy of the pod with base/patch.c's diff and k8s/podcheck.c's D15: the
 * same edits made both ways must give the same result of every call, the same
 * warnings and errors, the same container counts, the same first new violation and the
 * same patch, byte for byte. Seeded random scripts of edits over a pod, with names
 * taken from the pod to collide with it. For tests/plugins/check_podedit.c and
 * tests/fuzz/fuzz_podedit.c, which define PED_CHECK(cond, fmt, ...) first (a failed
 * property: the test's assertion, the fuzzer's abort).
 */
#ifndef WH_TESTS_PODEDITDIFF_H
#define WH_TESTS_PODEDITDIFF_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonobj.h"
#include "base/jsonr.h"
#include "base/patch.h"
#include "k8s/podcheck.h"
#include "k8s/podview.h"
#include "plugins/plugin.h"
#include "plugins/podedit.h"
#include "plugins/podutil.h"

#define PED_FLAGS (JSON_DECODE_ANY | JSON_ALLOW_NUL)

enum op_kind {
    OP_ENV,
    OP_ENVS,
    OP_VOLUME,
    OP_MOUNT,
    OP_PORT,
    OP_INIT,
    OP_SPEC,
    OP_COMMAND,
    OP_HCCL,
    OP_KINDS,
};

/* One edit: its kind, the container (list, place) and its argument. */
struct op {
    enum op_kind kind;
    enum pv_container_list list;
    size_t i;
    json_t *arg;     /* the value (a copy goes to each side), or for OP_SPEC/OP_HCCL a string */
    const char *key; /* OP_SPEC: "hostname" or "subdomain" */
};

/* The reference: hcclrank's hccl_set_annotation on a jansson pod. */
static int ref_hccl(json_t *pod, const char *value)
{
    json_t *meta = json_member(pod, "metadata");
    json_t *ann;

    if (meta == NULL || json_is_null(meta)) {
        meta = json_object();
        if (json_object_set_new(pod, "metadata", meta) < 0)
            return WH_ENOMEM;
    }
    ann = json_member(meta, "annotations");
    if (json_is_object(meta) && (ann == NULL || json_is_null(ann))) {
        ann = json_object();
        if (json_object_set_new(meta, "annotations", ann) < 0)
            return WH_ENOMEM;
    }
    return podutil_set_string(ann, PLUGIN_HCCL_RANK_KEY, value);
}

static json_t *ref_container(json_t *pod, enum pv_container_list l, size_t i)
{
    return json_array_get(
        l == PV_CONTAINERS ? podutil_containers(pod) : podutil_init_containers(pod), i);
}

/* op on the jansson copy (podutil). */
static int ref_apply(json_t *copy, const struct op *op, struct warnings *w, struct wh_error *err)
{
    json_t *ctr = ref_container(copy, op->list, op->i);
    json_t *arg = json_deep_copy(op->arg);
    size_t failed = 0;
    int rc;

    switch (op->kind) {
    case OP_ENV: return podutil_upsert_env(ctr, arg, "p", w);
    case OP_ENVS:
        rc = podutil_upsert_envs(ctr, arg, &failed, "p", w);
        json_decref(arg);
        return rc < 0 ? rc : (int)failed;
    case OP_VOLUME: return podutil_upsert_volume(copy, arg, err);
    case OP_MOUNT: return podutil_upsert_mount(ctr, arg, err);
    case OP_PORT: return podutil_add_port(ctr, arg, "p", w);
    case OP_INIT: return podutil_add_init_container(copy, arg);
    case OP_SPEC:
        rc = podutil_set_string(json_member(copy, "spec"), op->key, json_string_value(arg));
        json_decref(arg);
        return json_is_object(json_member(copy, "spec")) ? rc : WH_EINVAL;
    case OP_COMMAND: return podutil_set(ctr, "command", arg);
    case OP_HCCL:
        rc = ref_hccl(copy, json_string_value(arg));
        json_decref(arg);
        return rc;
    default: json_decref(arg); return WH_EINVAL;
    }
}

/* op recorded over the view (podedit). */
static int edit_apply(struct pod_edits *e, const struct op *op, struct warnings *w,
                      struct wh_error *err)
{
    struct pe_ref c = {op->list, op->i};
    json_t *arg = json_deep_copy(op->arg);
    size_t failed = 0;
    int rc;

    switch (op->kind) {
    case OP_ENV: return pod_edits_upsert_env(e, c, arg, "p", w);
    case OP_ENVS:
        rc = pod_edits_upsert_envs(e, c, arg, &failed, "p", w);
        json_decref(arg);
        return rc < 0 ? rc : (int)failed;
    case OP_VOLUME: return pod_edits_upsert_volume(e, arg, err);
    case OP_MOUNT: return pod_edits_upsert_mount(e, c, arg, err);
    case OP_PORT: return pod_edits_add_port(e, c, arg, "p", w);
    case OP_INIT: return pod_edits_add_init_container(e, arg);
    case OP_SPEC:
        rc = pod_edits_set_spec(e, op->key, json_string_value(arg));
        json_decref(arg);
        return rc;
    case OP_COMMAND: return pod_edits_set_container(e, c, "command", arg);
    case OP_HCCL:
        rc = pod_edits_set_hccl_rank(e, json_string_value(arg));
        json_decref(arg);
        return rc;
    default: json_decref(arg); return WH_EINVAL;
    }
}

static char *ref_patch(const json_t *pod, const json_t *copy)
{
    struct buf out;
    size_t n = 0;

    buf_init(&out, BUF_NO_MAX);
    PED_CHECK(patch_diff_write(pod, copy, NULL, &out, &n) == 0, "patch_diff_write failed");
    return buf_take(&out, NULL);
}

static char *edit_patch(const struct pod_edits *e)
{
    struct buf out;
    size_t n = 0;

    buf_init(&out, BUF_NO_MAX);
    PED_CHECK(pod_edits_write(e, NULL, &out, &n) == 0, "pod_edits_write failed");
    return buf_take(&out, NULL);
}

/* Scripts that gave D15 an answer of each kind, and the pods without a violation of
 * their own whose first look was compared (test_random_* require each). */
static size_t violations_found;
static size_t violations_none;
static size_t first_looks;

static bool stop_at_first(const struct podcheck_violation *v, void *ud)
{
    (void)v;
    (void)ud;
    return true;
}

/* D15: the same first new violation both ways, or none both ways. */
static void check_violation(const json_t *pod, const json_t *copy, const struct pod_edits *e,
                            const char *name)
{
    struct podcheck_violation va = {0};
    struct podcheck_violation vb = {0};
    bool fa = podcheck_first_new(pod, copy, &va);
    bool fb = pod_edits_first_new_violation(e, &vb) == 1;

    PED_CHECK(fa == fb, "%s: podcheck_first_new %d, podedit %d (%s)", name, fa, fb,
              fa ? va.value : vb.value);
    /* The first look is exact: on a pod with no violation of its own, it finds one
     * exactly when the edited pod has one. */
    if (!podcheck_each(pod, stop_at_first, NULL)) {
        bool any = podcheck_each(copy, stop_at_first, NULL);

        PED_CHECK(pod_edits_violates(e) == (any ? 1 : 0), "%s: the first look says %d", name,
                  pod_edits_violates(e));
        first_looks++;
    }
    if (!fa) {
        violations_none++;
        return;
    }
    violations_found++;
    PED_CHECK(va.kind == vb.kind && strcmp(va.list, vb.list) == 0
                  && strcmp(va.container, vb.container) == 0
                  && strcmp(va.other_list, vb.other_list) == 0 && strcmp(va.value, vb.value) == 0
                  && va.why == vb.why && va.number == vb.number,
              "%s: violations differ: %d %s %s %s / %d %s %s %s", name, (int)va.kind, va.list,
              va.container, va.value, (int)vb.kind, vb.list, vb.container, vb.value);
}

/*
 * ops run both ways on pod (a jansson pod) with the view of view (its document or its
 * tree). Every result, error, warning and count the same, then the patch.
 * @return the patch (malloc'd), for a caller that knows what it must be.
 */
static char *run_both(const json_t *pod, const struct pod_view *view, const struct op *ops,
                      size_t n, const char *name)
{
    json_t *copy = json_deep_copy(pod);
    struct pod_edits e;
    struct warnings wa;
    struct warnings wb;
    char *a;
    char *b;

    warnings_init(&wa);
    warnings_init(&wb);
    PED_CHECK(pod_edits_init(&e, view) == 0, "pod_edits_init failed");
    for (size_t k = 0; k < n; k++) {
        struct wh_error ea;
        struct wh_error eb;
        int ra;
        int rb;

        wh_error_clear(&ea);
        wh_error_clear(&eb);
        ra = ref_apply(copy, &ops[k], &wa, &ea);
        rb = edit_apply(&e, &ops[k], &wb, &eb);
        PED_CHECK(ra == rb, "%s: op %zu (kind %d on %d/%zu): podutil %d, podedit %d", name, k,
                  ops[k].kind, ops[k].list, ops[k].i, ra, rb);
        PED_CHECK(strcmp(ea.msg, eb.msg) == 0, "%s: op %zu: errors\n %s\n %s", name, k, ea.msg,
                  eb.msg);
        for (int l = 0; l < 2; l++) {
            json_t *list = l == 0 ? podutil_containers(copy) : podutil_init_containers(copy);

            PED_CHECK(json_array_size(list) == pod_edits_count(&e, (enum pv_container_list)l),
                      "%s: container counts differ", name);
        }
    }
    PED_CHECK(wa.n == wb.n, "%s: %zu warnings, %zu", name, wa.n, wb.n);
    for (size_t k = 0; k < wa.n; k++)
        PED_CHECK(strcmp(wa.items[k], wb.items[k]) == 0 && strcmp(wa.keys[k], wb.keys[k]) == 0,
                  "%s: warnings differ:\n %s\n %s", name, wa.items[k], wb.items[k]);
    check_violation(pod, copy, &e, name);
    a = ref_patch(pod, copy);
    b = edit_patch(&e);
    PED_CHECK(strcmp(a, b) == 0, "%s: patches differ\n podutil: %.3000s\n podedit: %.3000s", name,
              a, b);
    free(b);
    pod_edits_dispose(&e);
    json_decref(copy);
    return a;
}

/* A value past what one environment string holds (PODCHECK_ENV_TOO_LARGE). */
static json_t *huge_value(void)
{
    static char text[PODCHECK_ENV_MAX + 1];

    memset(text, 'x', sizeof(text) - 1);
    return json_string(text);
}

/* ---- random scripts over many pods ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static size_t pick(size_t n)
{
    return n > 0 ? (size_t)(rnd() % n) : 0;
}

/* Names worth colliding with: the pod's own (pool) and a few of the plugins'. */
static const char *pool_name(const json_t *pool)
{
    static const char *const ours[] = {"A", "B", "RANK", "VC_W_HOSTS", "ssh", "svc", "", "c"};

    if (json_array_size(pool) > 0 && rnd() % 2 == 0)
        return json_string_value(json_array_get(pool, pick(json_array_size(pool))));
    return ours[pick(sizeof(ours) / sizeof(ours[0]))];
}

static void pool_add(json_t *pool, const json_t *v)
{
    if (json_is_string(v))
        json_array_append(pool, (json_t *)v);
}

/* The strings of the pod worth colliding with: entry names, mount paths, port names. */
static json_t *pool_of(const json_t *pod)
{
    json_t *pool = json_array();
    const json_t *spec = json_member(pod, "spec");
    static const char *const lists[] = {"containers", "initContainers"};
    size_t i;
    size_t j;
    const json_t *c;
    const json_t *x;

    json_array_foreach(json_member(spec, "volumes"), i, x)
        pool_add(pool, json_member(x, "name"));
    for (int l = 0; l < 2; l++) {
        json_array_foreach(json_member(spec, lists[l]), i, c) {
            pool_add(pool, json_member(c, "name"));
            json_array_foreach(json_member(c, "env"), j, x)
                pool_add(pool, json_member(x, "name"));
            json_array_foreach(json_member(c, "volumeMounts"), j, x) {
                pool_add(pool, json_member(x, "mountPath"));
                pool_add(pool, json_member(x, "name"));
            }
            json_array_foreach(json_member(c, "ports"), j, x)
                pool_add(pool, json_member(x, "name"));
        }
    }
    return pool;
}

static json_t *rand_env(const json_t *pool)
{
    if (pick(32) == 0)
        return json_pack("{s:s,s:o}", "name", pool_name(pool), "value", huge_value());
    switch (pick(4)) {
    case 0:
        return json_pack("{s:s,s:{s:{s:s,s:s}}}", "name", pool_name(pool), "valueFrom",
                         "configMapKeyRef", "name", "cm", "key", pool_name(pool));
    case 1: return json_pack("{s:s,s:s}", "name", pool_name(pool), "value", "");
    default: return json_pack("{s:s,s:s}", "name", pool_name(pool), "value", pick(2) ? "1" : "v");
    }
}

static void rand_op(struct op *op, const json_t *pool, size_t counts[2])
{
    static const long long ports[] = {22, 80, 6379, 0, 70000, 8265};

    op->kind = (enum op_kind)pick(OP_KINDS);
    op->list = (enum pv_container_list)pick(2);
    op->i = pick(counts[op->list] + 1); /* one past the end too */
    op->key = NULL;
    switch (op->kind) {
    case OP_ENV: op->arg = rand_env(pool); break;
    case OP_ENVS:
        op->arg = json_array();
        for (size_t k = pick(4); k > 0; k--)
            json_array_append_new(op->arg,
                                  rnd() % 16 == 0 ? json_pack("{s:i}", "name", 1) : rand_env(pool));
        break;
    case OP_VOLUME:
        op->arg = pick(2) ? json_pack("{s:s,s:{s:s,s:i}}", "name", pool_name(pool), "secret",
                                      "secretName", pool_name(pool), "defaultMode", 420)
                          : json_pack("{s:s,s:{s:s}}", "name", pool_name(pool), "configMap", "name",
                                      pool_name(pool));
        break;
    case OP_MOUNT:
        op->arg = json_pack("{s:s,s:s}", "name", pool_name(pool), "mountPath", pool_name(pool));
        if (pick(3) == 0)
            json_object_set_new(op->arg, "subPath", json_string(".ssh"));
        break;
    case OP_PORT:
        op->arg = json_pack("{s:s,s:I}", "name", pool_name(pool), "containerPort",
                            (json_int_t)ports[pick(sizeof(ports) / sizeof(ports[0]))]);
        break;
    case OP_INIT: op->arg = json_pack("{s:s,s:s}", "name", pool_name(pool), "image", "i"); break;
    case OP_SPEC:
        op->key = pick(2) ? "hostname" : "subdomain";
        op->arg = json_string(pool_name(pool));
        break;
    case OP_COMMAND: op->arg = json_pack("[s,s]", "sh", pool_name(pool)); break;
    default: op->arg = json_string(pick(2) ? "0" : pool_name(pool)); break;
    }
    PED_CHECK(op->arg != NULL, "no memory for an op");
    if (op->kind == OP_INIT && counts[PV_INIT_CONTAINERS] < 64)
        counts[PV_INIT_CONTAINERS]++; /* maybe: run_both compares the real counts */
}

#define SCRIPT_OPS 14

/*
 * scripts random scripts on the pod in the n bytes at text (a pod or a review), over
 * the view of the document and of jansson's tree by turns; a body the document declines
 * (admission then reads it with jansson whole) over the tree's view alone.
 */
static void check_random(const char *text, size_t n, int scripts, const char *name)
{
    struct jsonr_doc *doc = jsonr_doc_read(text, n, NULL);
    json_t *body = json_loadb(text, n, PED_FLAGS, NULL);
    const json_t *request = json_member(body, "request");
    const json_t *pod = request != NULL ? json_member(request, "object") : body;
    json_t *pool;
    struct pod_view dv;
    struct pod_view tv;

    /* the chain's pods only: webhook/mutate.c denies any other before it runs */
    if (body == NULL || !json_is_object(pod) || !json_is_object(json_member(pod, "spec"))) {
        jsonr_doc_free(doc);
        json_decref(body);
        return;
    }
    pool = pool_of(pod);
    if (doc != NULL) {
        int at = jsonr_doc_member(doc, jsonr_doc_member(doc, 0, "request"), "object");

        PED_CHECK(podview_from_doc(&dv, doc, at >= 0 ? at : 0) == 0, "%s: no view", name);
    }
    PED_CHECK(podview_from_json(&tv, pod) == 0, "%s: no view", name);
    for (int s = 0; s < scripts; s++) {
        struct op ops[SCRIPT_OPS];
        size_t counts[2] = {json_array_size(podutil_containers((json_t *)pod)),
                            json_array_size(podutil_init_containers((json_t *)pod))};
        char label[512];

        for (size_t k = 0; k < SCRIPT_OPS; k++)
            rand_op(&ops[k], pool, counts);
        snprintf(label, sizeof(label), "%s script %d", name, s);
        free(run_both(pod, s % 2 == 0 && doc != NULL ? &dv : &tv, ops, SCRIPT_OPS, label));
        for (size_t k = 0; k < SCRIPT_OPS; k++)
            json_decref(ops[k].arg);
    }
    if (doc != NULL)
        podview_dispose(&dv);
    podview_dispose(&tv);
    json_decref(pool);
    json_decref(body);
    jsonr_doc_free(doc);
}


#endif
