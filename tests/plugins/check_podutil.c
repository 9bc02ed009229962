/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_podutil.c - upsert edits on a JSON Pod (plugins/podutil.h, D5).
 */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>

#include "base/error.h"
#include "plugins/podutil.h"
#include "plugins/warnings.h"
#include "tests/testutil.h"

static bool covers_text(const char *have, const char *want)
{
    json_t *h = tu_json(have);
    json_t *w = tu_json(want);
    bool r = podutil_covers(h, w);

    json_decref(w);
    json_decref(h);
    return r;
}

START_TEST(covers_rules)
{
    /* Extra members of have are ignored, recursively. */
    ck_assert(covers_text("{\"name\":\"v\",\"configMap\":{\"name\":\"c\",\"defaultMode\":420}}",
                          "{\"name\":\"v\",\"configMap\":{\"name\":\"c\"}}"));
    ck_assert(!covers_text("{\"name\":\"v\",\"configMap\":{\"name\":\"c\"}}",
                           "{\"name\":\"v\",\"configMap\":{\"name\":\"c\",\"defaultMode\":420}}"));
    ck_assert(!covers_text("{\"name\":\"v\"}", "{\"name\":\"w\"}"));
    /* "" in want matches an absent member; not another value, and not the reverse. */
    ck_assert(covers_text("{\"name\":\"X\"}", "{\"name\":\"X\",\"value\":\"\"}"));
    ck_assert(covers_text("{\"name\":\"X\",\"value\":\"\"}", "{\"name\":\"X\",\"value\":\"\"}"));
    ck_assert(covers_text("{\"name\":\"X\",\"value\":\"\"}", "{\"name\":\"X\"}"));
    ck_assert(!covers_text("{\"name\":\"X\",\"value\":\"y\"}", "{\"name\":\"X\",\"value\":\"\"}"));
    ck_assert(!covers_text("{\"name\":\"X\",\"value\":\"\"}", "{\"name\":\"X\",\"value\":\"y\"}"));
    ck_assert(!covers_text("{\"name\":\"X\"}", "{\"name\":\"X\",\"value\":\"y\"}"));
    /* Arrays: equal length, element-wise cover (extra members inside elements ignored). */
    ck_assert(covers_text("[{\"key\":\"a\",\"path\":\"p\",\"mode\":384},{\"key\":\"b\"}]",
                          "[{\"key\":\"a\",\"path\":\"p\"},{\"key\":\"b\"}]"));
    ck_assert(!covers_text("[{\"key\":\"a\"},{\"key\":\"b\"},{\"key\":\"c\"}]",
                           "[{\"key\":\"a\"},{\"key\":\"b\"}]"));
    ck_assert(!covers_text("[{\"key\":\"a\"}]", "[{\"key\":\"a\"},{\"key\":\"b\"}]"));
    ck_assert(
        !covers_text("[{\"key\":\"b\"},{\"key\":\"a\"}]", "[{\"key\":\"a\"},{\"key\":\"b\"}]"));
    ck_assert(covers_text("[]", "[]"));
    /* Types and scalars must match exactly. */
    ck_assert(!covers_text("{\"p\":\"22\"}", "{\"p\":22}"));
    ck_assert(!covers_text("{\"p\":22.0}", "{\"p\":22}"));
    ck_assert(!covers_text("[]", "{}"));
    ck_assert(!covers_text("{}", "[]"));
    ck_assert(covers_text("{\"a\":null}", "{\"a\":null}"));
    ck_assert(!covers_text("{}", "{\"a\":null}"));
    ck_assert(covers_text("true", "true"));
    ck_assert(!covers_text("true", "false"));
    ck_assert(podutil_covers(NULL, NULL));
    {
        json_t *o = json_object();

        ck_assert(!podutil_covers(NULL, o));
        ck_assert(!podutil_covers(o, NULL));
        json_decref(o);
    }
}
END_TEST

START_TEST(upsert_env_results)
{
    json_t *c = tu_json("{\"name\":\"c\"}");

    /* ADDED creates the list. */
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("A", "1"), "t", NULL),
                     PODUTIL_UPSERT_ADDED);
    tu_assert_json_eq(c, "{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}");
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("B", ""), "t", NULL),
                     PODUTIL_UPSERT_ADDED);
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("C", "3"), "t", NULL),
                     PODUTIL_UPSERT_ADDED);
    /* SAME: nothing changes. */
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("A", "1"), "t", NULL),
                     PODUTIL_UPSERT_SAME);
    /* REPLACED in place. */
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("B", "2"), "t", NULL),
                     PODUTIL_UPSERT_REPLACED);
    tu_assert_json_eq(c,
                      "{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
                      "{\"name\":\"B\",\"value\":\"2\"},{\"name\":\"C\",\"value\":\"3\"}]}");
    /* A reference replaces a literal value whole. */
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_configmap("C", "cm", "k"), "t", NULL),
                     PODUTIL_UPSERT_REPLACED);
    tu_assert_json_eq(
        c,
        "{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
        "{\"name\":\"B\",\"value\":\"2\"},"
        "{\"name\":\"C\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\",\"key\":\"k\"}}}]}");
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_configmap("C", "cm", "k"), "t", NULL),
                     PODUTIL_UPSERT_SAME);
    json_decref(c);
}
END_TEST

/* D5, docs/plugins.md §6: the later duplicate wins at run time: the LAST entry of a name counts. */
START_TEST(upsert_env_matches_last_entry)
{
    json_t *c = tu_json("{\"env\":[{\"name\":\"R\",\"value\":\"1\"},{\"name\":\"X\"},"
                        "{\"name\":\"R\",\"value\":\"2\"}]}");

    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("R", "2"), "t", NULL),
                     PODUTIL_UPSERT_SAME);
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("R", "3"), "t", NULL),
                     PODUTIL_UPSERT_REPLACED);
    tu_assert_json_eq(c,
                      "{\"env\":[{\"name\":\"R\",\"value\":\"1\"},{\"name\":\"X\"},"
                      "{\"name\":\"R\",\"value\":\"3\"}]}");
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("R", "1"), "t", NULL),
                     PODUTIL_UPSERT_REPLACED);
    tu_assert_json_eq(c,
                      "{\"env\":[{\"name\":\"R\",\"value\":\"1\"},{\"name\":\"X\"},"
                      "{\"name\":\"R\",\"value\":\"1\"}]}");
    json_decref(c);
}
END_TEST

/* A name is one whole string: "R" is not "RX" nor "XR", nor an entry's non-string name. */
START_TEST(upsert_env_whole_name)
{
    json_t *c = tu_json("{\"env\":[{\"name\":\"RX\",\"value\":\"1\"},{\"name\":7},"
                        "{\"name\":\"XR\",\"value\":\"1\"},{\"value\":\"R\"}]}");

    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("R", "1"), "t", NULL),
                     PODUTIL_UPSERT_ADDED);
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("RX", "2"), "t", NULL),
                     PODUTIL_UPSERT_REPLACED);
    tu_assert_json_eq(c,
                      "{\"env\":[{\"name\":\"RX\",\"value\":\"2\"},{\"name\":7},"
                      "{\"name\":\"XR\",\"value\":\"1\"},{\"value\":\"R\"},"
                      "{\"name\":\"R\",\"value\":\"1\"}]}");
    json_decref(c);
}
END_TEST

/* Bad input: error code, the stolen reference freed (ASan/LSan would report a leak). */
START_TEST(upsert_env_empty_value_replaces_value_from)
{
    /* A literal "" is not the same variable as a valueFrom one, although absent == "". */
    json_t *c = tu_json("{\"name\":\"c\",\"env\":[{\"name\":\"VK_TASK_INDEX\",\"valueFrom\":"
                        "{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},{\"name\":\"B\"}]}");

    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("VK_TASK_INDEX", ""), "t", NULL),
                     PODUTIL_UPSERT_REPLACED);
    tu_assert_json_eq(c,
                      "{\"name\":\"c\",\"env\":[{\"name\":\"VK_TASK_INDEX\",\"value\":\"\"},"
                      "{\"name\":\"B\"}]}");
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("VK_TASK_INDEX", ""), "t", NULL),
                     PODUTIL_UPSERT_SAME);
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("B", ""), "t", NULL),
                     PODUTIL_UPSERT_SAME);
    json_decref(c);
}
END_TEST

/* The batch upsert gives exactly what one podutil_upsert_env per entry gives, on short
 * lists and, from round 400, on long ones with many repeated names. */
START_TEST(upsert_envs_matches_single_upserts)
{
    static const char *const names[] = {"A", "B", "C", "D", "E", "F", "G", "H",
                                        "I", "J", "K", "L", "M", "N", "O", "P"};
    static const char *const values[] = {"", "1", "2"};
    unsigned seed = 12345;

    for (int round = 0; round < 600; round++) {
        json_t *c1 = tu_json("{\"name\":\"c\"}");
        json_t *envs = json_array();
        json_t *c2;
        size_t failed = 99;
        bool large = round >= 400;
        int n_existing = (int)((seed = seed * 1103515245u + 12345u) >> 16) % (large ? 60 : 5);
        int n_new = (int)((seed = seed * 1103515245u + 12345u) >> 16) % (large ? 40 : 5);
        unsigned n_names = large ? 16 : 4;

        for (int i = 0; i < n_existing; i++) {
            unsigned r = (seed = seed * 1103515245u + 12345u) >> 16;
            json_t *e = (r & 8) ? podutil_env_configmap(names[r % n_names], "cm", "k")
                                : podutil_env_value(names[r % n_names], values[(r >> 4) % 3]);

            if (json_object_get(c1, "env") == NULL)
                json_object_set_new(c1, "env", json_array());
            json_array_append_new(json_object_get(c1, "env"), e); /* duplicates allowed */
        }
        c2 = json_deep_copy(c1);
        for (int i = 0; i < n_new; i++) {
            unsigned r = (seed = seed * 1103515245u + 12345u) >> 16;
            json_t *e = (r & 8) ? podutil_env_configmap(names[r % n_names], "cm", "k2")
                                : podutil_env_value(names[r % n_names], values[(r >> 4) % 3]);

            json_array_append_new(envs, e);
        }
        for (size_t i = 0; i < json_array_size(envs); i++)
            ck_assert_int_ge(
                podutil_upsert_env(c1, json_deep_copy(json_array_get(envs, i)), "t", NULL), 0);
        ck_assert_int_eq(podutil_upsert_envs(c2, envs, &failed, "t", NULL), 0);
        if (!json_equal(c1, c2)) {
            char *a = json_dumps(c1, JSON_COMPACT), *b = json_dumps(c2, JSON_COMPACT);
            ck_abort_msg("round %d: single %s, batch %s", round, a, b);
        }
        json_decref(c1);
        json_decref(c2);
        json_decref(envs);
    }
}
END_TEST

/* {"name": the n bytes at name (NUL bytes and all), "value": value}: new reference. */
static json_t *env_named(const char *name, size_t n, const char *value)
{
    return json_pack("{s:o, s:s}", "name", json_stringn(name, n), "value", value);
}

/*
 * A name is all its bytes: "R" is not "R\0x" (json_equal's answer, podutil_upsert_env's),
 * in the batch's scan of a short list and in its index of a long one.
 */
START_TEST(upsert_envs_whole_names)
{
    for (int big = 0; big < 2; big++) {
        json_t *c1 = tu_json("{\"env\":[]}");
        json_t *envs = json_array();
        json_t *c2;
        json_t *list;

        json_array_append_new(json_object_get(c1, "env"), env_named("R\0x", 3, "1"));
        json_array_append_new(json_object_get(c1, "env"), env_named("S", 1, "1"));
        for (int k = 0; big && k < 40; k++) {
            char name[16];

            snprintf(name, sizeof(name), "E%d", k);
            json_array_append_new(json_object_get(c1, "env"), podutil_env_value(name, "1"));
            json_array_append_new(envs, podutil_env_value(name, "2"));
        }
        json_array_append_new(envs, env_named("R", 1, "2"));
        json_array_append_new(envs, env_named("S\0", 2, "2"));
        json_array_append_new(envs, env_named("R\0x", 3, "3"));
        c2 = json_deep_copy(c1);
        for (size_t i = 0; i < json_array_size(envs); i++)
            ck_assert_int_ge(
                podutil_upsert_env(c1, json_deep_copy(json_array_get(envs, i)), "t", NULL), 0);
        ck_assert_int_eq(podutil_upsert_envs(c2, envs, NULL, "t", NULL), 0);
        ck_assert_msg(json_equal(c1, c2), "big %d: single and batch differ", big);
        list = json_object_get(c2, "env");
        /* R\0x replaced in place (3), S kept, R and S\0 appended */
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "value")), "3");
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 1), "value")), "1");
        ck_assert_uint_eq(json_array_size(list), big ? 44 : 4);
        json_decref(c1);
        json_decref(c2);
        json_decref(envs);
    }
}
END_TEST

START_TEST(upsert_envs_edges)
{
    json_t *c = tu_json("{\"name\":\"c\"}");
    json_t *none = json_array();
    json_t *bad = tu_json("[{\"name\":\"A\",\"value\":\"1\"},{\"value\":\"x\"}]");
    size_t failed = 99;

    /* nothing to add: no empty env list is created (it would be a patch op) */
    ck_assert_int_eq(podutil_upsert_envs(c, none, NULL, "t", NULL), 0);
    tu_assert_json_eq(c, "{\"name\":\"c\"}");
    ck_assert_int_eq(podutil_upsert_envs(c, bad, &failed, "t", NULL), WH_EINVAL);
    ck_assert_uint_eq(failed, 1);
    tu_assert_json_eq(c, "{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}");
    json_object_set_new(c, "env", json_string("oops"));
    ck_assert_int_eq(podutil_upsert_envs(c, bad, NULL, "t", NULL), WH_EINVAL);
    json_decref(c);
    json_decref(none);
    json_decref(bad);
}
END_TEST

START_TEST(upsert_bad_input_no_leak)
{
    json_t *s = json_string("not a container");
    json_t *c = tu_json("{\"env\":{},\"volumeMounts\":\"x\",\"ports\":7}");
    json_t *pod = tu_json("{\"spec\":{\"volumes\":\"x\",\"initContainers\":5}}");
    json_t *nospec = tu_json("{\"spec\":[]}");

    ck_assert_int_eq(podutil_upsert_env(s, podutil_env_value("A", "1"), "t", NULL), WH_EINVAL);
    ck_assert_int_eq(podutil_upsert_env(NULL, podutil_env_value("A", "1"), "t", NULL), WH_EINVAL);
    ck_assert_int_eq(podutil_upsert_mount(s, json_pack("{s:s}", "mountPath", "/x"), NULL),
                     WH_EINVAL);
    ck_assert_int_eq(
        podutil_add_port(s, json_pack("{s:s,s:i}", "name", "p", "containerPort", 1), "t", NULL),
        WH_EINVAL);
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("A", "1"), "t", NULL), WH_EINVAL);
    ck_assert_int_eq(podutil_upsert_mount(c, json_pack("{s:s}", "mountPath", "/x"), NULL),
                     WH_EINVAL);
    ck_assert_int_eq(
        podutil_add_port(c, json_pack("{s:s,s:i}", "name", "p", "containerPort", 1), "t", NULL),
        WH_EINVAL);
    ck_assert_int_eq(podutil_upsert_volume(pod, json_pack("{s:s}", "name", "v"), NULL), WH_EINVAL);
    ck_assert_int_eq(podutil_upsert_volume(nospec, json_pack("{s:s}", "name", "v"), NULL),
                     WH_EINVAL);
    ck_assert_int_eq(podutil_add_init_container(nospec, json_pack("{s:s}", "name", "i")),
                     WH_EINVAL);
    ck_assert_int_eq(podutil_add_init_container(pod, json_pack("{s:s}", "name", "i")), WH_EINVAL);
    ck_assert_int_eq(podutil_set_string(s, "k", "v"), WH_EINVAL);
    /* NULL *_new (an allocation that failed upstream) is ENOMEM. */
    ck_assert_int_eq(podutil_upsert_env(c, NULL, "t", NULL), WH_ENOMEM);
    ck_assert_int_eq(podutil_upsert_volume(pod, NULL, NULL), WH_ENOMEM);
    ck_assert_int_eq(podutil_upsert_mount(c, NULL, NULL), WH_ENOMEM);
    ck_assert_int_eq(podutil_add_port(c, NULL, "t", NULL), WH_ENOMEM);
    ck_assert_int_eq(podutil_add_init_container(pod, NULL), WH_ENOMEM);
    ck_assert_int_eq(podutil_set(c, "k", NULL), WH_ENOMEM);
    /* Nothing was changed. */
    tu_assert_json_eq(c, "{\"env\":{},\"volumeMounts\":\"x\",\"ports\":7}");
    tu_assert_json_eq(pod, "{\"spec\":{\"volumes\":\"x\",\"initContainers\":5}}");
    json_decref(nospec);
    json_decref(pod);
    json_decref(c);
    json_decref(s);
}
END_TEST

START_TEST(upsert_volume_results)
{
    json_t *pod = tu_json("{\"spec\":{\"volumes\":null}}");

    ck_assert_int_eq(podutil_upsert_volume(pod, tu_json("{\"name\":\"a\",\"emptyDir\":{}}"), NULL),
                     PODUTIL_UPSERT_ADDED);
    ck_assert_int_eq(podutil_upsert_volume(
                         pod, tu_json("{\"name\":\"v\",\"configMap\":{\"name\":\"c\"}}"), NULL),
                     PODUTIL_UPSERT_ADDED);
    ck_assert_int_eq(podutil_upsert_volume(pod, tu_json("{\"name\":\"b\",\"emptyDir\":{}}"), NULL),
                     PODUTIL_UPSERT_ADDED);
    tu_assert_json_eq(pod,
                      "{\"spec\":{\"volumes\":[{\"name\":\"a\",\"emptyDir\":{}},"
                      "{\"name\":\"v\",\"configMap\":{\"name\":\"c\"}},"
                      "{\"name\":\"b\",\"emptyDir\":{}}]}}");
    /* The API server's defaults on the stored entry do not make it different. */
    json_object_set_new(
        json_object_get(json_array_get(json_object_get(json_object_get(pod, "spec"), "volumes"), 1),
                        "configMap"),
        "defaultMode", json_integer(420));
    ck_assert_int_eq(podutil_upsert_volume(
                         pod, tu_json("{\"name\":\"v\",\"configMap\":{\"name\":\"c\"}}"), NULL),
                     PODUTIL_UPSERT_SAME);
    /* D5: the same source (ConfigMap c) with other fields is the plugin's: replaced in place. */
    ck_assert_int_eq(
        podutil_upsert_volume(pod,
                              tu_json("{\"name\":\"v\",\"configMap\":{\"name\":"
                                      "\"c\",\"items\":[{\"key\":\"k\",\"path\":\"p\"}]}}"),
                              NULL),
        PODUTIL_UPSERT_REPLACED);
    tu_assert_json_eq(pod,
                      "{\"spec\":{\"volumes\":[{\"name\":\"a\",\"emptyDir\":{}},"
                      "{\"name\":\"v\",\"configMap\":{\"name\":\"c\",\"items\":"
                      "[{\"key\":\"k\",\"path\":\"p\"}]}},{\"name\":\"b\",\"emptyDir\":{}}]}}");
    json_decref(pod);
}
END_TEST

/* D5: a volume of the plugin's name with another source is the user's: never re-pointed. */
START_TEST(upsert_volume_conflicts)
{
    static const char *const before =
        "{\"spec\":{\"volumes\":[{\"name\":\"j-svc\",\"emptyDir\":{}},"
        "{\"name\":\"j-ssh\",\"secret\":{\"secretName\":\"mine\"}},"
        "{\"name\":\"x\",\"configMap\":{\"name\":\"other\"}}]}}";
    json_t *pod = tu_json(before);
    struct wh_error err;

    wh_error_clear(&err);
    ck_assert_int_eq(
        podutil_upsert_volume(
            pod, tu_json("{\"name\":\"j-svc\",\"configMap\":{\"name\":\"j-svc\"}}"), &err),
        WH_ECONFLICT);
    ck_assert_int_eq(err.code, WH_ECONFLICT);
    ck_assert_str_eq(err.msg,
                     "volume \"j-svc\" is your emptyDir, and the plugin needs that name for its "
                     "ConfigMap \"j-svc\": rename yours or remove the plugin (Volcano would add a "
                     "second one, which the API server refuses)");
    ck_assert_int_eq(
        podutil_upsert_volume(
            pod, tu_json("{\"name\":\"j-ssh\",\"secret\":{\"secretName\":\"j-ssh\"}}"), &err),
        WH_ECONFLICT);
    ck_assert_str_eq(err.msg,
                     "volume \"j-ssh\" is your Secret \"mine\", and the plugin needs that name for "
                     "its Secret \"j-ssh\": rename yours or remove the plugin (Volcano would add a "
                     "second one, which the API server refuses)");
    /* Another kind of source with the same object name is another source. */
    ck_assert_int_eq(
        podutil_upsert_volume(
            pod, tu_json("{\"name\":\"x\",\"secret\":{\"secretName\":\"other\"}}"), &err),
        WH_ECONFLICT);
    ck_assert_str_eq(err.msg,
                     "volume \"x\" is your ConfigMap \"other\", and the plugin needs that name for "
                     "its Secret \"other\": rename yours or remove the plugin (Volcano would add a "
                     "second one, which the API server refuses)");
    /* err may be NULL; nothing changed. */
    ck_assert_int_eq(
        podutil_upsert_volume(
            pod, tu_json("{\"name\":\"j-svc\",\"configMap\":{\"name\":\"j-svc\"}}"), NULL),
        WH_ECONFLICT);
    tu_assert_json_eq(pod, before);
    json_decref(pod);
}
END_TEST

START_TEST(upsert_mount_keyed_by_path)
{
    json_t *c = tu_json("{\"name\":\"c\"}");

    ck_assert_int_eq(
        podutil_upsert_mount(c, tu_json("{\"name\":\"a\",\"mountPath\":\"/a\"}"), NULL),
        PODUTIL_UPSERT_ADDED);
    ck_assert_int_eq(
        podutil_upsert_mount(c, tu_json("{\"name\":\"b\",\"mountPath\":\"/b\"}"), NULL),
        PODUTIL_UPSERT_ADDED);
    /* Same name, another path: a new mount (the key is mountPath). */
    ck_assert_int_eq(
        podutil_upsert_mount(c, tu_json("{\"name\":\"a\",\"mountPath\":\"/c\"}"), NULL),
        PODUTIL_UPSERT_ADDED);
    ck_assert_int_eq(
        podutil_upsert_mount(c, tu_json("{\"name\":\"a\",\"mountPath\":\"/a\"}"), NULL),
        PODUTIL_UPSERT_SAME);
    /* The same volume at that path with other fields: the plugin's mount, replaced in place. */
    ck_assert_int_eq(
        podutil_upsert_mount(c, tu_json("{\"name\":\"a\",\"mountPath\":\"/a\",\"subPath\":\"s\"}"),
                             NULL),
        PODUTIL_UPSERT_REPLACED);
    tu_assert_json_eq(
        c,
        "{\"name\":\"c\",\"volumeMounts\":["
        "{\"name\":\"a\",\"mountPath\":\"/a\",\"subPath\":\"s\"},"
        "{\"name\":\"b\",\"mountPath\":\"/b\"},{\"name\":\"a\",\"mountPath\":\"/c\"}]}");
    json_decref(c);
}
END_TEST

/* D5: a mount path taken by another volume is the user's: a conflict, nothing changed. */
START_TEST(upsert_mount_conflict)
{
    static const char *const before =
        "{\"name\":\"main\",\"volumeMounts\":[{\"name\":\"my-keys\",\"mountPath\":"
        "\"/root/.ssh\",\"readOnly\":true}]}";
    json_t *c = tu_json(before);
    json_t *long_path;
    struct wh_error err;

    wh_error_clear(&err);
    ck_assert_int_eq(
        podutil_upsert_mount(c,
                             tu_json("{\"name\":\"j-ssh\",\"mountPath\":\"/root/.ssh\",\"subPath\":"
                                     "\".ssh\"}"),
                             &err),
        WH_ECONFLICT);
    ck_assert_str_eq(err.msg,
                     "container \"main\" mounts your volume \"my-keys\" at /root/.ssh, where the "
                     "plugin mounts \"j-ssh\": mount yours elsewhere or remove the plugin (Volcano "
                     "would add a second mount there, which the API server refuses; replacing "
                     "yours would lose it)");
    tu_assert_json_eq(c, before);
    json_decref(c);
    /* Long values are cut to PODUTIL_SHOWN_MAX bytes. */
    long_path = tu_json("{\"name\":\"c\",\"volumeMounts\":[{\"name\":\"u\",\"mountPath\":"
                        "\"/a/bbbbbbbbbbcccccccccceeeeeeeeeeffffffffffgggg\"}]}");
    ck_assert_int_eq(
        podutil_upsert_mount(long_path,
                             tu_json("{\"name\":\"v\",\"mountPath\":"
                                     "\"/a/bbbbbbbbbbcccccccccceeeeeeeeeeffffffffffgggg\"}"),
                             &err),
        WH_ECONFLICT);
    /* ... and the message whole: four values at their longest fit WH_ERROR_MSG_MAX */
    ck_assert_str_eq(err.msg,
                     "container \"c\" mounts your volume \"u\" at "
                     "/a/bbbbbbbbbbcccccccccceeeeeeeeeefffffff..., where the plugin mounts \"v\": "
                     "mount yours elsewhere or remove the plugin (Volcano would add a second mount "
                     "there, which the API server refuses; replacing yours would lose it)");
    json_decref(long_path);
}
END_TEST

/* D5, D16: a replaced env value is told, with the old and the new value. */
START_TEST(upsert_env_replaced_warns)
{
    json_t *c =
        tu_json("{\"name\":\"main\",\"env\":[{\"name\":\"RANK\",\"value\":\"5\"},{\"name\":\"X\","
                "\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},{\"name\":\"H\","
                "\"value\":\"aaaaaaaaaabbbbbbbbbbccccccccccddddddddddeeee\"},{\"name\":\"S\","
                "\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}]}");
    json_t *envs = tu_json("[{\"name\":\"S\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":"
                           "\"j-svc\",\"key\":\"S\"}}},{\"name\":\"NEW\",\"value\":\"1\"}]");
    struct warnings w;
    json_t *got;

    warnings_init(&w);
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("RANK", "0"), "pytorch", &w),
                     PODUTIL_UPSERT_REPLACED);
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("RANK", "0"), "pytorch", &w),
                     PODUTIL_UPSERT_SAME);
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("X", "3"), "env", &w),
                     PODUTIL_UPSERT_REPLACED);
    ck_assert_int_eq(podutil_upsert_env(c, podutil_env_value("H", "h"), "mpi", &w),
                     PODUTIL_UPSERT_REPLACED);
    ck_assert_int_eq(podutil_upsert_envs(c, envs, NULL, "svc", &w), 0);
    /* Added entries give no warning. */
    got = warnings_to_json(&w);
    tu_assert_json_eq(
        got,
        "[\"pytorch plugin: container \\\"main\\\" sets RANK=\\\"5\\\", replaced by \\\"0\\\": the "
        "plugin sets it, drop it from the pod template\","
        "\"env plugin: container \\\"main\\\" sets X=valueFrom.fieldRef, replaced by \\\"3\\\": "
        "the "
        "plugin sets it, drop it from the pod template\","
        "\"mpi plugin: container \\\"main\\\" sets "
        "H=\\\"aaaaaaaaaabbbbbbbbbbccccccccccdddddddddd...\\\", replaced by \\\"h\\\": the plugin "
        "sets it, drop it from the pod template\","
        "\"svc plugin: container \\\"main\\\" sets S=valueFrom.secretKeyRef s/k, replaced by "
        "valueFrom.configMapKeyRef j-svc/S: the plugin sets it, drop it from the pod template\"]");
    json_decref(got);
    json_decref(envs);
    json_decref(c);
}
END_TEST

static json_t *port(const char *name, int number)
{
    return json_pack("{s:s, s:i}", "name", name, "containerPort", number);
}

START_TEST(add_port_results)
{
    json_t *c = tu_json("{\"name\":\"main\"}");
    json_t *warns;
    struct warnings w;

    warnings_init(&w);
    ck_assert_int_eq(podutil_add_port(c, port("mpijob-port", 22), "mpi", &w), PODUTIL_UPSERT_ADDED);
    tu_assert_json_eq(
        c, "{\"name\":\"main\",\"ports\":[{\"name\":\"mpijob-port\",\"containerPort\":22}]}");
    /* Same number under any name: left alone. */
    ck_assert_int_eq(podutil_add_port(c, port("other", 22), "mpi", &w), PODUTIL_UPSERT_SKIPPED);
    ck_assert_int_eq(podutil_add_port(c, port("mpijob-port", 22), "mpi", &w),
                     PODUTIL_UPSERT_SKIPPED);
    /* Name taken by another number: skipped with a warning. */
    ck_assert_int_eq(podutil_add_port(c, port("mpijob-port", 2222), "mpi", &w),
                     PODUTIL_UPSERT_SKIPPED);
    ck_assert_int_eq(podutil_add_port(c, port("gcs", 6379), "ray plugin", &w),
                     PODUTIL_UPSERT_ADDED);
    tu_assert_json_eq(
        c,
        "{\"name\":\"main\",\"ports\":[{\"name\":\"mpijob-port\",\"containerPort\":22},"
        "{\"name\":\"gcs\",\"containerPort\":6379}]}");
    warns = warnings_to_json(&w);
    tu_assert_json_eq(warns,
                      "[\"mpi plugin: port name mpijob-port already used by port 22 in "
                      "container main, port 2222 not added\"]");
    json_decref(warns);
    /* Keyed by what it is about, as a Job-level diagnostic of it is (podutil_port_key). */
    ck_assert_str_eq(w.keys[0], "mpi:spec.containers[main].ports[mpijob-port]");
    /* A NULL warnings list is allowed. */
    ck_assert_int_eq(podutil_add_port(c, port("gcs", 1), "ray plugin", NULL),
                     PODUTIL_UPSERT_SKIPPED);
    json_decref(c);
}
END_TEST

START_TEST(add_init_container_results)
{
    json_t *pod = tu_json("{\"spec\":{}}");

    ck_assert_int_eq(podutil_add_init_container(pod, tu_json("{\"name\":\"w\",\"image\":\"a\"}")),
                     PODUTIL_UPSERT_ADDED);
    /* Same name: left alone, even when different. */
    ck_assert_int_eq(podutil_add_init_container(pod, tu_json("{\"name\":\"w\",\"image\":\"b\"}")),
                     PODUTIL_UPSERT_SKIPPED);
    ck_assert_int_eq(podutil_add_init_container(pod, tu_json("{\"name\":\"x\"}")),
                     PODUTIL_UPSERT_ADDED);
    tu_assert_json_eq(pod,
                      "{\"spec\":{\"initContainers\":[{\"name\":\"w\",\"image\":\"a\"},"
                      "{\"name\":\"x\"}]}}");
    json_decref(pod);
}
END_TEST

START_TEST(set_results)
{
    json_t *spec = tu_json("{}");

    ck_assert_int_eq(podutil_set_string(spec, "hostname", "h"), PODUTIL_UPSERT_ADDED);
    ck_assert_int_eq(podutil_set_string(spec, "hostname", "h"), PODUTIL_UPSERT_SAME);
    ck_assert_int_eq(podutil_set_string(spec, "hostname", "g"), PODUTIL_UPSERT_REPLACED);
    ck_assert_int_eq(podutil_set(spec, "command", tu_json("[\"sh\"]")), PODUTIL_UPSERT_ADDED);
    ck_assert_int_eq(podutil_set(spec, "command", tu_json("[\"sh\"]")), PODUTIL_UPSERT_SAME);
    ck_assert_int_eq(podutil_set(spec, "command", tu_json("[\"sh\",\"-c\"]")),
                     PODUTIL_UPSERT_REPLACED);
    tu_assert_json_eq(spec, "{\"hostname\":\"g\",\"command\":[\"sh\",\"-c\"]}");
    json_decref(spec);
}
END_TEST

START_TEST(getters_and_builders)
{
    json_t *pod = tu_json("{\"spec\":{\"containers\":[{\"name\":\"c\"}],\"initContainers\":{}}}");
    json_t *e;

    ck_assert_ptr_eq(podutil_containers(pod),
                     json_object_get(json_object_get(pod, "spec"), "containers"));
    ck_assert_ptr_null(podutil_init_containers(pod));
    ck_assert_ptr_null(podutil_containers(NULL));
    ck_assert_str_eq(podutil_str(json_array_get(podutil_containers(pod), 0), "name"), "c");
    ck_assert_str_eq(podutil_str(pod, "spec"), "");
    ck_assert_str_eq(podutil_str(pod, "none"), "");
    e = podutil_env_value("A", "");
    tu_assert_json_eq(e, "{\"name\":\"A\",\"value\":\"\"}");
    json_decref(e);
    e = podutil_env_configmap("VC_X_NUM", "j-svc", "VC_X_NUM");
    tu_assert_json_eq(e,
                      "{\"name\":\"VC_X_NUM\",\"valueFrom\":{\"configMapKeyRef\":"
                      "{\"name\":\"j-svc\",\"key\":\"VC_X_NUM\"}}}");
    json_decref(e);
    json_decref(pod);
}
END_TEST

/* Allocation failures, each path tested: fail the Nth jansson allocation, N upward. */
static long chaos_left;

static void *chaos_malloc(size_t n)
{
    if (chaos_left-- == 0)
        return NULL;
    return malloc(n);
}

/*
 * Regression: when creating a missing list failed (json_array() == NULL), the
 * stolen item leaked. Every failing run must give WH_ENOMEM and leak nothing
 * (ASan/LSan), and the container must be left as it was or fully updated.
 */
START_TEST(upsert_allocation_failures)
{
    int rc = -1;
    long n;

    for (n = 0; n < 1000 && rc != PODUTIL_UPSERT_ADDED; n++) {
        json_t *c = tu_json("{\"name\":\"c\"}");
        json_t *item = tu_json("{\"name\":\"A\",\"value\":\"1\"}");

        chaos_left = n;
        json_set_alloc_funcs(chaos_malloc, free);
        rc = podutil_upsert_env(c, item, "t", NULL);
        json_set_alloc_funcs(malloc, free);
        if (rc != PODUTIL_UPSERT_ADDED) {
            ck_assert_int_eq(rc, WH_ENOMEM);
            tu_assert_json_eq(c, "{\"name\":\"c\"}");
        } else {
            tu_assert_json_eq(c, "{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}");
        }
        json_decref(c);
    }
    ck_assert_int_eq(rc, PODUTIL_UPSERT_ADDED);
    ck_assert_int_gt(n, 1);
}
END_TEST

static Suite *podutil_suite(void)
{
    Suite *s = suite_create("podutil");
    TCase *tc = tcase_create("podutil");

    tcase_add_test(tc, covers_rules);
    tcase_add_test(tc, upsert_env_results);
    tcase_add_test(tc, upsert_env_matches_last_entry);
    tcase_add_test(tc, upsert_env_empty_value_replaces_value_from);
    tcase_add_test(tc, upsert_env_whole_name);
    tcase_add_test(tc, upsert_envs_matches_single_upserts);
    tcase_add_test(tc, upsert_envs_edges);
    tcase_add_test(tc, upsert_envs_whole_names);
    tcase_add_test(tc, upsert_bad_input_no_leak);
    tcase_add_test(tc, upsert_env_replaced_warns);
    tcase_add_test(tc, upsert_volume_results);
    tcase_add_test(tc, upsert_volume_conflicts);
    tcase_add_test(tc, upsert_mount_keyed_by_path);
    tcase_add_test(tc, upsert_mount_conflict);
    tcase_add_test(tc, add_port_results);
    tcase_add_test(tc, add_init_container_results);
    tcase_add_test(tc, set_results);
    tcase_add_test(tc, getters_and_builders);
    tcase_add_test(tc, upsert_allocation_failures);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(podutil_suite());
}
