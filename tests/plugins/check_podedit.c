/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_podedit.c - plugins/podedit.c against its reference, podutil.h on a jansson copy
 * of the pod with base/patch.c's diff: the same edits, made both ways, give the same
 * result of every call, the same warnings and errors, the same container counts, and
 * the same patch, byte for byte. Run on fixed scripts with exact patches (each rule of
 * the writer: a member made where it was absent or null, a replaced entry, appended
 * entries, the order of new members) and on seeded random scripts over every review of
 * the admission corpus and over pods made to hit the edge cases (lists of the wrong
 * kind, null members, repeated and non-string names), with views of both builders.
 */
#include <check.h>
#include <glob.h>
#include <jansson.h>
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
#include "tests/testutil.h"

#define FLAGS (JSON_DECODE_ANY | JSON_ALLOW_NUL)

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
    ck_assert_int_eq(patch_diff_write(pod, copy, NULL, &out, &n), 0);
    return buf_take(&out, NULL);
}

static char *edit_patch(const struct pod_edits *e)
{
    struct buf out;
    size_t n = 0;

    buf_init(&out, BUF_NO_MAX);
    ck_assert_int_eq(pod_edits_write(e, NULL, &out, &n), 0);
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
    bool fb = pod_edits_first_new_violation(e, &vb);

    ck_assert_msg(fa == fb, "%s: podcheck_first_new %d, podedit %d (%s)", name, fa, fb,
                  fa ? va.value : vb.value);
    /* The first look is exact: on a pod with no violation of its own, it finds one
     * exactly when the edited pod has one. */
    if (!podcheck_each(pod, stop_at_first, NULL)) {
        bool any = podcheck_each(copy, stop_at_first, NULL);

        ck_assert_msg(pod_edits_violates(e) == (any ? 1 : 0), "%s: the first look says %d", name,
                      pod_edits_violates(e));
        first_looks++;
    }
    if (!fa) {
        violations_none++;
        return;
    }
    violations_found++;
    ck_assert_int_eq(va.kind, vb.kind);
    ck_assert_str_eq(va.list, vb.list);
    ck_assert_str_eq(va.container, vb.container);
    ck_assert_str_eq(va.other_list, vb.other_list);
    ck_assert_str_eq(va.value, vb.value);
    ck_assert_ptr_eq(va.why, vb.why);
    ck_assert_int_eq(va.number, vb.number);
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
    ck_assert_int_eq(pod_edits_init(&e, view), 0);
    for (size_t k = 0; k < n; k++) {
        struct wh_error ea;
        struct wh_error eb;
        int ra;
        int rb;

        wh_error_clear(&ea);
        wh_error_clear(&eb);
        ra = ref_apply(copy, &ops[k], &wa, &ea);
        rb = edit_apply(&e, &ops[k], &wb, &eb);
        ck_assert_msg(ra == rb, "%s: op %zu (kind %d on %d/%zu): podutil %d, podedit %d", name, k,
                      ops[k].kind, ops[k].list, ops[k].i, ra, rb);
        ck_assert_msg(strcmp(ea.msg, eb.msg) == 0, "%s: op %zu: errors\n %s\n %s", name, k, ea.msg,
                      eb.msg);
        for (int l = 0; l < 2; l++) {
            json_t *list = l == 0 ? podutil_containers(copy) : podutil_init_containers(copy);

            ck_assert_uint_eq(json_array_size(list),
                              pod_edits_count(&e, (enum pv_container_list)l));
        }
    }
    ck_assert_uint_eq(wa.n, wb.n);
    for (size_t k = 0; k < wa.n; k++) {
        ck_assert_str_eq(wa.items[k], wb.items[k]);
        ck_assert_str_eq(wa.keys[k], wb.keys[k]);
    }
    check_violation(pod, copy, &e, name);
    a = ref_patch(pod, copy);
    b = edit_patch(&e);
    ck_assert_msg(strcmp(a, b) == 0, "%s: patches differ\n podutil: %.3000s\n podedit: %.3000s",
                  name, a, b);
    free(b);
    pod_edits_dispose(&e);
    json_decref(copy);
    return a;
}

/* ---- fixed scripts with exact patches ---- */

/* A value past what one environment string holds (PODCHECK_ENV_TOO_LARGE). */
static json_t *huge_value(void)
{
    static char text[PODCHECK_ENV_MAX + 1];

    memset(text, 'x', sizeof(text) - 1);
    return json_string(text);
}


static const char fixed_pod[] =
    "{\"metadata\":{\"name\":\"j-w-0\",\"labels\":{\"a\":\"b\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
    "\"ports\":null},{\"image\":\"i\",\"name\":\"d\",\"volumeMounts\":[{\"name\":\"u\","
    "\"mountPath\":\"/u\"}]}],\"volumes\":[{\"name\":\"u\",\"emptyDir\":{}}],\"hostname\":\"\"}}";

static json_t *J(const char *text)
{
    return tu_json(text);
}

/* The patch of ops on fixed_pod, both ways and with both views; ops' args are freed. */
static void check_fixed(struct op *ops, size_t n, const char *want)
{
    struct jsonr_doc *doc = jsonr_doc_read(fixed_pod, sizeof(fixed_pod) - 1, NULL);
    json_t *pod = J(fixed_pod);
    struct pod_view dv;
    struct pod_view tv;
    char *got;

    ck_assert_ptr_nonnull(doc);
    ck_assert_int_eq(podview_from_doc(&dv, doc, 0), 0);
    ck_assert_int_eq(podview_from_json(&tv, pod), 0);
    got = run_both(pod, &dv, ops, n, "fixed (document)");
    ck_assert_str_eq(got, want);
    free(got);
    got = run_both(pod, &tv, ops, n, "fixed (tree)");
    ck_assert_str_eq(got, want);
    free(got);
    for (size_t k = 0; k < n; k++)
        json_decref(ops[k].arg);
    podview_dispose(&dv);
    podview_dispose(&tv);
    json_decref(pod);
    jsonr_doc_free(doc);
}

/* Appends, a replaced entry (its member replaced, a member it lost removed), a list
 * made over null, new spec members in the order made. */
START_TEST(test_fixed_edits)
{
    struct op ops[] = {
        {OP_ENV, PV_CONTAINERS, 0, J("{\"name\":\"B\",\"value\":\"2\"}"), NULL},
        {OP_ENV, PV_CONTAINERS, 0, J("{\"name\":\"A\",\"valueFrom\":{\"x\":1}}"), NULL},
        {OP_ENV, PV_CONTAINERS, 1, J("{\"name\":\"A\",\"value\":\"1\"}"), NULL},
        {OP_PORT, PV_CONTAINERS, 0, J("{\"name\":\"p\",\"containerPort\":80}"), NULL},
        {OP_SPEC, PV_CONTAINERS, 0, J("\"sub\""), "subdomain"},
        {OP_VOLUME, PV_CONTAINERS, 0, J("{\"name\":\"s\",\"secret\":{\"secretName\":\"x\"}}"),
         NULL},
        {OP_SPEC, PV_CONTAINERS, 0, J("\"j-w-0\""), "hostname"},
        {OP_HCCL, PV_CONTAINERS, 0, J("\"3\""), NULL},
    };

    check_fixed(ops, sizeof(ops) / sizeof(ops[0]),
                "[{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{\"hccl/"
                "rankIndex\":\"3\"}},"
                "{\"op\":\"add\",\"path\":\"/spec/containers/0/env/0/valueFrom\",\"value\":{"
                "\"x\":1}},"
                "{\"op\":\"remove\",\"path\":\"/spec/containers/0/env/0/value\"},"
                "{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":{\"name\":\"B\","
                "\"value\":\"2\"}},"
                "{\"op\":\"replace\",\"path\":\"/spec/containers/0/ports\",\"value\":[{\"name\":"
                "\"p\",\"containerPort\":80}]},"
                "{\"op\":\"add\",\"path\":\"/spec/containers/1/env\",\"value\":[{\"name\":\"A\","
                "\"value\":\"1\"}]},"
                "{\"op\":\"add\",\"path\":\"/spec/volumes/-\",\"value\":{\"name\":\"s\","
                "\"secret\":{\"secretName\":\"x\"}}},"
                "{\"op\":\"replace\",\"path\":\"/spec/hostname\",\"value\":\"j-w-0\"},"
                "{\"op\":\"add\",\"path\":\"/spec/subdomain\",\"value\":\"sub\"}]");
}
END_TEST

/* An added init container, edited after it was added (podutil on its own object), and a
 * mount of another volume at a path taken (the conflict, nothing changed). */
START_TEST(test_fixed_added_container)
{
    struct op ops[] = {
        {OP_INIT, PV_CONTAINERS, 0, J("{\"name\":\"wait\",\"image\":\"b\"}"), NULL},
        {OP_ENV, PV_INIT_CONTAINERS, 0, J("{\"name\":\"E\",\"value\":\"e\"}"), NULL},
        {OP_MOUNT, PV_CONTAINERS, 1, J("{\"name\":\"s\",\"mountPath\":\"/u\"}"), NULL},
        {OP_INIT, PV_CONTAINERS, 0, J("{\"name\":\"wait\",\"image\":\"other\"}"), NULL},
        {OP_COMMAND, PV_CONTAINERS, 1, J("[\"sh\",\"-c\",\"x\"]"), NULL},
    };

    check_fixed(ops, sizeof(ops) / sizeof(ops[0]),
                "[{\"op\":\"add\",\"path\":\"/spec/containers/1/command\",\"value\":[\"sh\","
                "\"-c\",\"x\"]},"
                "{\"op\":\"add\",\"path\":\"/spec/initContainers\",\"value\":[{\"name\":\"wait\","
                "\"image\":\"b\",\"env\":[{\"name\":\"E\",\"value\":\"e\"}]}]}]");
}
END_TEST

/* D15 on a replaced entry: the user's env var A replaced by a value too large is a new
 * violation, though the entry stands where the user's did. */
START_TEST(test_replaced_entry_checked)
{
    struct jsonr_doc *doc = jsonr_doc_read(fixed_pod, sizeof(fixed_pod) - 1, NULL);
    struct pod_view view;
    struct pod_edits e;
    struct podcheck_violation v;
    json_t *env = json_pack("{s:s,s:o}", "name", "A", "value", huge_value());

    ck_assert_int_eq(podview_from_doc(&view, doc, 0), 0);
    ck_assert_int_eq(pod_edits_init(&e, &view), 0);
    ck_assert(!pod_edits_first_new_violation(&e, &v));
    ck_assert_int_eq(pod_edits_violates(&e), 0);
    ck_assert_int_eq(pod_edits_upsert_env(&e, (struct pe_ref){PV_CONTAINERS, 0}, env, "p", NULL),
                     PODUTIL_UPSERT_REPLACED);
    ck_assert_int_eq(pod_edits_violates(&e), 1);
    ck_assert(pod_edits_first_new_violation(&e, &v));
    ck_assert_int_eq(v.kind, PODCHECK_ENV_TOO_LARGE);
    ck_assert_str_eq(v.container, "c");
    ck_assert_str_eq(v.value, "A");
    ck_assert_int_eq(v.number, 1 + 1 + PODCHECK_ENV_MAX + 1); /* "A=", the value, NUL */
    pod_edits_dispose(&e);
    podview_dispose(&view);
    jsonr_doc_free(doc);
}
END_TEST

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
    ck_assert_ptr_nonnull(op->arg);
    if (op->kind == OP_INIT && counts[PV_INIT_CONTAINERS] < 64)
        counts[PV_INIT_CONTAINERS]++; /* maybe: run_both compares the real counts */
}

#define SCRIPT_OPS 14

/* scripts random scripts on the pod in the n bytes at text (a pod or a review). */
static void check_random(const char *text, size_t n, int scripts, const char *name)
{
    struct jsonr_doc *doc = jsonr_doc_read(text, n, NULL);
    json_t *body = json_loadb(text, n, FLAGS, NULL);
    const json_t *pod;
    int at;
    json_t *pool;
    struct pod_view dv;
    struct pod_view tv;

    if (doc == NULL || body == NULL) {
        jsonr_doc_free(doc);
        json_decref(body);
        return;
    }
    at = jsonr_doc_member(doc, jsonr_doc_member(doc, 0, "request"), "object");
    pod = at >= 0 ? json_member(json_member(body, "request"), "object") : body;
    at = at >= 0 ? at : 0;
    pool = pool_of(pod);
    ck_assert_int_eq(podview_from_doc(&dv, doc, at), 0);
    ck_assert_int_eq(podview_from_json(&tv, pod), 0);
    for (int s = 0; s < scripts; s++) {
        struct op ops[SCRIPT_OPS];
        size_t counts[2] = {json_array_size(podutil_containers((json_t *)pod)),
                            json_array_size(podutil_init_containers((json_t *)pod))};
        char label[512];

        for (size_t k = 0; k < SCRIPT_OPS; k++)
            rand_op(&ops[k], pool, counts);
        snprintf(label, sizeof(label), "%s script %d", name, s);
        free(run_both(pod, s % 2 == 0 ? &dv : &tv, ops, SCRIPT_OPS, label));
        for (size_t k = 0; k < SCRIPT_OPS; k++)
            json_decref(ops[k].arg);
    }
    podview_dispose(&dv);
    podview_dispose(&tv);
    json_decref(pool);
    json_decref(body);
    jsonr_doc_free(doc);
}

START_TEST(test_random_corpus)
{
    glob_t g;

    rng_state = 0x9e3779b97f4a7c15ULL;
    violations_found = violations_none = first_looks = 0;
    ck_assert_int_eq(glob("tests/fuzz/corpus/admission/*", 0, NULL, &g), 0);
    ck_assert_uint_eq(g.gl_pathc, 50);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char *text = tu_read_file(g.gl_pathv[i]);

        check_random(text, strlen(text), 40, g.gl_pathv[i]);
        free(text);
    }
    globfree(&g);
    /* D15 compared on both answers */
    ck_assert_uint_gt(violations_found, 100);
    ck_assert_uint_gt(violations_none, 100);
    ck_assert_uint_gt(first_looks, 100);
}
END_TEST

/* Pods made for the edge cases: members of the wrong kind, null members, repeated and
 * non-string names, no metadata, annotations of another kind. */
static const char *const edge_pods[] = {
    "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":\"x\",\"volumeMounts\":null,"
    "\"ports\":{}}],\"volumes\":null,\"initContainers\":null}}",
    "{\"metadata\":null,\"spec\":{\"containers\":[\"c\",{\"name\":\"c\",\"env\":[{\"name\":\"A\"},"
    "{\"name\":\"A\",\"value\":\"2\"},{\"name\":1},{\"value\":\"x\"}]}],\"volumes\":5}}",
    "{\"metadata\":{\"annotations\":null},\"spec\":{\"hostname\":null,\"subdomain\":3,"
    "\"containers\":[{\"name\":\"A\",\"ports\":[{\"name\":\"p\",\"containerPort\":\"80\"},"
    "{\"name\":\"q\",\"containerPort\":22},{\"containerPort\":6379}]}],"
    "\"initContainers\":[{\"name\":\"ssh\"},{\"name\":\"ssh\"}]}}",
    "{\"metadata\":{\"annotations\":\"x\"},\"spec\":{\"volumes\":[{\"name\":\"ssh\",\"secret\":{"
    "\"secretName\":\"ssh\"}},{\"name\":\"svc\",\"configMap\":{\"name\":\"c\"},\"x\":1},{\"name\":"
    "\"A\"}],\"containers\":[{\"name\":\"c\",\"volumeMounts\":[{\"name\":\"ssh\",\"mountPath\":"
    "\"ssh\"},{\"name\":\"x\",\"mountPath\":\"svc\"},{\"mountPath\":\"c\"}]}]}}",
    "{\"metadata\":\"m\",\"spec\":[]}",
    "{\"metadata\":{\"annotations\":{\"hccl/rankIndex\":\"0\",\"a\":1}},\"spec\":{\"containers\":"
    "[{\"name\":\"c\",\"command\":[\"sh\",\"c\"],\"env\":[{\"name\":\"RANK\",\"value\":\"1\"},"
    "{\"name\":\"c\",\"value\":\"\"}]}],\"initContainers\":[{\"name\":\"w\",\"env\":[]}]}}",
};

START_TEST(test_random_edges)
{
    rng_state = 0x2545f4914f6cdd1dULL;
    violations_found = violations_none = first_looks = 0;
    for (size_t i = 0; i < sizeof(edge_pods) / sizeof(edge_pods[0]); i++) {
        char label[32];

        snprintf(label, sizeof(label), "edge pod %zu", i);
        check_random(edge_pods[i], strlen(edge_pods[i]), 400, label);
    }
    ck_assert_uint_gt(violations_found, 100);
    ck_assert_uint_gt(violations_none, 100);
    ck_assert_uint_gt(first_looks, 100);
}
END_TEST

static Suite *podedit_suite(void)
{
    Suite *s = suite_create("podedit");
    TCase *t = tcase_create("podedit");

    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_fixed_edits);
    tcase_add_test(t, test_fixed_added_container);
    tcase_add_test(t, test_replaced_entry_checked);
    tcase_add_test(t, test_random_corpus);
    tcase_add_test(t, test_random_edges);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tu_run(podedit_suite());
}
