/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_podview.c - k8s/podview.c: the typed view of a pod, with exact values for a
 * pod that has every member it reads (and a repeated key, escapes, members of the
 * wrong kind), and the differential of its two builders: for every JSON file of the
 * fuzz corpora, regressions and fixtures that the document reads (base/jsonr.h), the
 * view of the document and the view of json_loadb's tree are the same view
 * (tests/podviewdump.h: every member, kind, value and tree), for the review's pod
 * (request.object) and for the whole body read as a pod.
 */
#include <check.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonr.h"
#include "k8s/podview.h"
#include "tests/podviewdump.h"
#include "tests/testutil.h"

#define FLAGS (JSON_DECODE_ANY | JSON_ALLOW_NUL)

static const char pod_text[] =
    "{\"metadata\":{\"name\":\"pt-master-0\",\"namespace\":\"ns1\","
    "\"labels\":{\"volcano.sh/task-index\":\"0\",\"other\":\"x\"},"
    "\"annotations\":{\"volcano.sh/task-spec\":\"master\",\"hccl/rankIndex\":3},"
    "\"ownerReferences\":[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
    "\"name\":\"pt\",\"uid\":\"u-1\",\"controller\":true}]},"
    "\"spec\":{\"hostname\":\"h\\u00e9\",\"volumes\":[{\"name\":\"v1\",\"emptyDir\":{}}],"
    "\"containers\":[{\"name\":\"c\",\"command\":[\"sh\"],"
    "\"env\":[{\"name\":\"\\u0041\",\"value\":\"1\"},{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":"
    "{\"fieldPath\":\"x\"}}}],\"volumeMounts\":[{\"name\":\"v1\",\"mountPath\":\"/m\"}],"
    "\"ports\":[{\"name\":\"p\",\"containerPort\":80},{\"containerPort\":\"81\"}]}],"
    "\"initContainers\":null,\"hostname\":\"h2\"}}";

static void check_pod(const struct pod_view *v)
{
    const struct pv_container *c;
    json_t *want;
    json_t *got;

    ck_assert_int_eq(v->pod.kind, JSONR_OBJECT);
    ck_assert(podview_is(&v->name, "pt-master-0"));
    ck_assert(podview_is(&v->ns, "ns1"));
    ck_assert_int_eq(v->generate_name.kind, JSONR_NONE);
    ck_assert(podview_is(&v->label_task_index, "0"));
    ck_assert(podview_is(&v->annotation_task_spec, "master"));
    ck_assert_int_eq(v->annotation_task_index.kind, JSONR_NONE);
    ck_assert_int_eq(v->annotation_hccl_rank.kind, JSONR_INTEGER);
    ck_assert_int_eq(v->annotation_hccl_rank.integer, 3);
    ck_assert_uint_eq(v->owners.n, 1);
    ck_assert(podview_is(&v->owners.at[0].kind, "Job"));
    ck_assert(podview_is(&v->owners.at[0].uid, "u-1"));
    ck_assert_int_eq(v->owners.at[0].controller.kind, JSONR_TRUE);
    /* spec.hostname is written twice: the last one counts, at the first one's place,
     * as in json_loadb */
    ck_assert(podview_is(&v->hostname, "h2"));
    ck_assert_int_eq(v->hostname.place, 0);
    ck_assert_int_eq(v->metadata.place, 0);
    ck_assert_int_eq(v->spec.place, 1);
    ck_assert_int_eq(v->volumes.list.place, 1);
    ck_assert_int_eq(v->containers[PV_CONTAINERS].list.place, 2);
    ck_assert_int_eq(v->containers[PV_INIT_CONTAINERS].list.place, 3);
    ck_assert_int_eq(v->subdomain.place, -1);
    ck_assert_int_eq(v->owners.list.place, -1); /* not one a patch orders */
    ck_assert_int_eq(v->subdomain.kind, JSONR_NONE);
    ck_assert_uint_eq(v->volumes.n, 1);
    ck_assert(podview_is(&v->volumes.at[0].name, "v1"));
    ck_assert_uint_eq(v->containers[PV_CONTAINERS].n, 1);
    ck_assert_int_eq(v->containers[PV_INIT_CONTAINERS].list.kind, JSONR_NULL);
    ck_assert_uint_eq(v->containers[PV_INIT_CONTAINERS].n, 0);
    ck_assert_int_eq(v->containers[PV_EPHEMERAL_CONTAINERS].list.kind, JSONR_NONE);
    c = &v->containers[PV_CONTAINERS].at[0];
    ck_assert(podview_is(&c->name, "c"));
    ck_assert_int_eq(c->command.place, 1);
    ck_assert_int_eq(c->env.list.place, 2);
    ck_assert_int_eq(c->mounts.list.place, 3);
    ck_assert_int_eq(c->ports.list.place, 4);
    ck_assert_int_eq(c->args.place, -1);
    ck_assert_int_eq(c->command.kind, JSONR_ARRAY);
    ck_assert_int_eq(c->args.kind, JSONR_NONE);
    ck_assert_uint_eq(c->env.n, 2);
    ck_assert(podview_is(&c->env.at[0].name, "A"));
    ck_assert(podview_is(&c->env.at[1].name, "B"));
    ck_assert(!podview_is(&c->env.at[1].name, "BB"));
    ck_assert_uint_eq(c->mounts.n, 1);
    ck_assert(podview_is(&c->mounts.at[0].mount_path, "/m"));
    ck_assert_uint_eq(c->ports.n, 2);
    ck_assert_int_eq(c->ports.at[0].container_port.integer, 80);
    ck_assert_int_eq(c->ports.at[1].name.kind, JSONR_NONE);
    ck_assert_int_eq(c->ports.at[1].container_port.kind, JSONR_STRING);
    /* a whole entry, as jansson's tree */
    want =
        json_loads("{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"x\"}}}", 0, NULL);
    got = podview_value(v, &c->env.at[1].entry);
    ck_assert(json_equal(got, want));
    json_decref(got);
    json_decref(want);
    ck_assert_ptr_null(podview_value(v, &c->args));
}

START_TEST(test_view_of_a_pod)
{
    struct jsonr_doc *doc = jsonr_doc_read(pod_text, sizeof(pod_text) - 1, NULL);
    json_t *tree = json_loads(pod_text, FLAGS, NULL);
    struct pod_view a;
    struct pod_view b;
    char *da;
    char *db;

    ck_assert_ptr_nonnull(doc);
    ck_assert_ptr_nonnull(tree);
    ck_assert_int_eq(podview_from_doc(&a, doc, 0), 0);
    ck_assert_int_eq(podview_from_json(&b, tree), 0);
    json_decref(tree); /* the view holds its own reference */
    check_pod(&a);
    check_pod(&b);
    /* and the two builders agree on every member */
    da = podview_dump(&a);
    db = podview_dump(&b);
    ck_assert_str_eq(da, db);
    free(da);
    free(db);
    podview_dispose(&a);
    podview_dispose(&b);
    jsonr_doc_free(doc);
}
END_TEST

/* Not a pod: an array, a string. Every member absent, in both views. */
START_TEST(test_not_a_pod)
{
    static const char *const bodies[] = {"[{\"metadata\":{}}]", "\"pod\"", "{\"spec\":[]}"};

    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        struct jsonr_doc *doc = jsonr_doc_read(bodies[i], strlen(bodies[i]), NULL);
        struct pod_view v;

        ck_assert_ptr_nonnull(doc);
        ck_assert_int_eq(podview_from_doc(&v, doc, 0), 0);
        ck_assert_int_eq(v.metadata.kind, JSONR_NONE);
        ck_assert_int_eq(v.hostname.kind, JSONR_NONE);
        ck_assert_uint_eq(v.containers[PV_CONTAINERS].n, 0);
        podview_dispose(&v);
        jsonr_doc_free(doc);
    }
}
END_TEST

/* The pod of a review body, or the body itself: the document's value and the tree's. */
static int pod_at(const struct jsonr_doc *doc)
{
    int pod = jsonr_doc_member(doc, jsonr_doc_member(doc, 0, "request"), "object");

    return pod >= 0 ? pod : 0;
}

static const json_t *pod_in(const json_t *body)
{
    const json_t *pod = json_object_get(json_object_get(body, "request"), "object");

    return pod != NULL ? pod : body;
}

/* The two views of the n bytes at body agree. @return whether the document read it. */
static bool check_same_view(const char *body, size_t n, const char *name)
{
    struct jsonr_doc *doc = jsonr_doc_read(body, n, NULL);
    json_t *tree;
    struct pod_view a;
    struct pod_view b;
    char *da;
    char *db;

    if (doc == NULL)
        return false;
    tree = json_loadb(body, n, FLAGS, NULL);
    ck_assert_msg(tree != NULL, "%s: the document read what jansson refuses", name);
    ck_assert_int_eq(podview_from_doc(&a, doc, pod_at(doc)), 0);
    ck_assert_int_eq(podview_from_json(&b, pod_in(tree)), 0);
    da = podview_dump(&a);
    db = podview_dump(&b);
    ck_assert_ptr_nonnull(da);
    ck_assert_ptr_nonnull(db);
    ck_assert_msg(strcmp(da, db) == 0, "%s:\n document: %.3000s\n tree: %.3000s", name, da, db);
    free(da);
    free(db);
    podview_dispose(&a);
    podview_dispose(&b);
    json_decref(tree);
    jsonr_doc_free(doc);
    return true;
}

/* @return how many files of pattern the document read (and the views agreed on). */
static size_t check_glob(const char *pattern, size_t *total)
{
    glob_t g;
    size_t read = 0;

    ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char *text = tu_read_file(g.gl_pathv[i]);

        /* tu_read_file's NUL ends the text; a file with NUL bytes is read to its first */
        read += check_same_view(text, strlen(text), g.gl_pathv[i]) ? 1 : 0;
        (*total)++;
        free(text);
    }
    globfree(&g);
    return read;
}

START_TEST(test_corpora_and_fixtures)
{
    size_t total = 0;
    size_t reviews = check_glob("tests/fuzz/corpus/admission/*", &total);
    size_t others = 0;

    /* every admission seed but not-json, as base/jsonr's test counts them */
    ck_assert_uint_eq(total, 50);
    ck_assert_uint_eq(reviews, 49);
    others += check_glob("tests/fuzz/corpus/watch/*", &total);
    others += check_glob("tests/fuzz/corpus/patch/*", &total);
    others += check_glob("tests/fuzz/regressions/*/*", &total);
    others += check_glob("tests/fixtures/*/*.json", &total);
    ck_assert_uint_gt(others, 0);
}
END_TEST

static Suite *podview_suite(void)
{
    Suite *s = suite_create("podview");
    TCase *t = tcase_create("podview");

    tcase_add_test(t, test_view_of_a_pod);
    tcase_add_test(t, test_not_a_pod);
    tcase_add_test(t, test_corpora_and_fixtures);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tu_run(podview_suite());
}
