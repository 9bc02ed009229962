/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_podedit.c - plugins/podedit.c against its reference, podutil.h on a jansson copy
 * of the pod with base/patch.c's diff: the same edits, made both ways, give the same
 * result of every call, the same warnings and errors, the same container counts, and
 * the same patch, byte for byte. Run on fixed scripts with exact patches (each rule of
 * the writer: a member made where it was absent or null, a replaced entry, appended
 * entries, the order of new members) and on seeded random scripts over every review of
 * the admission corpus and over pods made to hit the edge cases (lists of the wrong
 * kind, null members, repeated and non-string names), with views of both builders
 * (tests/podeditdiff.h, which tests/fuzz/fuzz_podedit.c runs on any input).
 */
#include <check.h>
#include <glob.h>

#include "tests/testutil.h"

#define PED_CHECK(cond, ...) ck_assert_msg(cond, __VA_ARGS__)
#include "tests/podeditdiff.h"

/* ---- fixed scripts with exact patches ---- */

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
    ck_assert_int_eq(pod_edits_first_new_violation(&e, &v), 0);
    ck_assert_int_eq(pod_edits_violates(&e), 0);
    ck_assert_int_eq(pod_edits_upsert_env(&e, (struct pe_ref){PV_CONTAINERS, 0}, env, "p", NULL),
                     PODUTIL_UPSERT_REPLACED);
    ck_assert_int_eq(pod_edits_violates(&e), 1);
    ck_assert_int_eq(pod_edits_first_new_violation(&e, &v), 1);
    ck_assert_int_eq(v.kind, PODCHECK_ENV_TOO_LARGE);
    ck_assert_str_eq(v.container, "c");
    ck_assert_str_eq(v.value, "A");
    ck_assert_int_eq(v.number, 1 + 1 + PODCHECK_ENV_MAX + 1); /* "A=", the value, NUL */
    pod_edits_dispose(&e);
    podview_dispose(&view);
    jsonr_doc_free(doc);
}
END_TEST

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
 * non-string names, no metadata, annotations of another kind, a body the document
 * declines (a real number). */
static const char *const edge_pods[] = {
    /* null members the edits make lists or set: their places, in both views (jansson
     * shares one null); and the same with a real number, which the document declines */
    "{\"metadata\":{},\"spec\":{\"hostname\":null,\"volumes\":null,\"containers\":[{\"name\":"
    "\"c\",\"command\":null,\"env\":null,\"tty\":null,\"ports\":null,\"volumeMounts\":null}],"
    "\"x\":null,\"initContainers\":null,\"subdomain\":null}}",
    "{\"metadata\":null,\"spec\":{\"priority\":1.5,\"hostname\":null,\"containers\":[{\"name\":"
    "\"c\",\"env\":null,\"args\":[\"x\"],\"ports\":null}],\"subdomain\":null,\"volumes\":null}}",
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
    "{\"metadata\":\"m\",\"spec\":{}}",
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
