/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_podcheck.c - kube-apiserver's checks of the Pod fields a webhook writes
 * (k8s/podcheck.h): each kind of violation with its place and value, the walk's
 * order, and which violations an edit introduced.
 */
#include <check.h>
#include <string.h>

#include "k8s/podcheck.h"
#include "tests/testutil.h"

/* Up to 16 violations of a pod, as "KIND list/container value why number" lines. */
struct seen {
    int n;
    char lines[16][320];
};

static const char *kind_name(enum podcheck_kind k)
{
    static const char *const names[] = {
        "SUBDOMAIN",           "HOSTNAME",        "VOLUME_NAME",   "VOLUME_DUPLICATE",
        "CONTAINER_DUPLICATE", "MOUNT_DUPLICATE", "PORT_NAME",     "PORT_DUPLICATE",
        "PORT_NUMBER",         "ENV_NAME",        "ENV_TOO_LARGE",
    };

    return names[k];
}

static bool collect(const struct podcheck_violation *v, void *ud)
{
    struct seen *s = ud;

    snprintf(s->lines[s->n], sizeof(s->lines[0]), "%s %s/%s %s%s%s %lld%s%s", kind_name(v->kind),
             v->list, v->container, v->value, v->why != NULL ? " | " : "",
             v->why != NULL ? v->why : "", v->number, v->other_list[0] != '\0' ? " first in " : "",
             v->other_list);
    s->n++;
    return s->n == 16;
}

START_TEST(every_kind_in_order)
{
    json_t *pod = tu_json(
        "{\"spec\":{\"hostname\":\"H\",\"subdomain\":\"a.b\","
        " \"volumes\":[{\"name\":\"v\"},{\"name\":\"v\"},{\"name\":\"V_\"}],"
        " \"containers\":[{\"name\":\"c\","
        "   "
        "\"volumeMounts\":[{\"name\":\"v\",\"mountPath\":\"/x\"},{\"name\":\"w\",\"mountPath\":\"/"
        "x\"}],"
        "   \"ports\":[{\"name\":\"p\",\"containerPort\":1},{\"name\":\"p\",\"containerPort\":2},"
        "             {\"name\":\"too-long-port-name\",\"containerPort\":3},{\"containerPort\":0}],"
        "   \"env\":[{\"name\":\"1X\",\"value\":\"\"},{\"name\":\"OK\",\"valueFrom\":{}}]}],"
        " \"initContainers\":[{\"name\":\"c\"}],"
        " \"ephemeralContainers\":[{\"name\":\"c\"}]}}");
    struct seen s = {0};

    ck_assert(!podcheck_each(pod, collect, &s));
    ck_assert_int_eq(s.n, 11);
    ck_assert_str_eq(s.lines[0], "SUBDOMAIN / a.b | a DNS-1123 label has no '.' 0");
    ck_assert_str_eq(s.lines[1],
                     "HOSTNAME / H | a DNS-1123 label has only lower case letters, "
                     "digits and '-' 0");
    ck_assert_str_eq(s.lines[2], "VOLUME_DUPLICATE / v 0");
    ck_assert_str_eq(s.lines[3],
                     "VOLUME_NAME / V_ | a DNS-1123 label has only lower case "
                     "letters, digits and '-' 0");
    ck_assert_str_eq(s.lines[4], "CONTAINER_DUPLICATE initContainers/c c 0 first in containers");
    ck_assert_str_eq(s.lines[5],
                     "CONTAINER_DUPLICATE ephemeralContainers/c c 0 first in containers");
    ck_assert_str_eq(s.lines[6], "MOUNT_DUPLICATE containers/c /x 0");
    ck_assert_str_eq(s.lines[7], "PORT_DUPLICATE containers/c p 0");
    ck_assert_str_eq(s.lines[8],
                     "PORT_NAME containers/c too-long-port-name | a port name has at "
                     "most 15 characters 0");
    ck_assert_str_eq(s.lines[9], "PORT_NUMBER containers/c  0");
    ck_assert_str_eq(s.lines[10],
                     "ENV_NAME containers/c 1X | an env var name starts with a "
                     "letter, '-', '.' or '_' 0");
    /* the walk stops when asked */
    s.n = 15;
    ck_assert(podcheck_each(pod, collect, &s));
    ck_assert_int_eq(s.n, 16);
    ck_assert_str_eq(s.lines[15], "SUBDOMAIN / a.b | a DNS-1123 label has no '.' 0");
    json_decref(pod);
}
END_TEST

START_TEST(env_value_limit)
{
    json_t *pod = tu_json("{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[]}]}}");
    json_t *env = json_object_get(
        json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0), "env");
    char *big = malloc(PODCHECK_ENV_MAX);
    struct seen s = {0};

    /* "AB=" + value + NUL = 131072 exactly: fine; one more byte is too large. */
    memset(big, 'x', PODCHECK_ENV_MAX - 4);
    big[PODCHECK_ENV_MAX - 4] = '\0';
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", "AB", "value", big));
    ck_assert(!podcheck_each(pod, collect, &s));
    ck_assert_int_eq(s.n, 0);
    big[PODCHECK_ENV_MAX - 4] = 'x';
    big[PODCHECK_ENV_MAX - 3] = '\0';
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", "AB", "value", big));
    ck_assert(!podcheck_each(pod, collect, &s));
    ck_assert_int_eq(s.n, 1);
    ck_assert_str_eq(s.lines[0], "ENV_TOO_LARGE containers/c AB 131073");
    free(big);
    json_decref(pod);
}
END_TEST

START_TEST(first_new_ignores_what_was_there)
{
    json_t *before = tu_json("{\"spec\":{\"hostname\":\"a.b\",\"containers\":[{\"name\":\"c\"},"
                             " {\"name\":\"c\"}]}}");
    json_t *after = tu_json("{\"spec\":{\"hostname\":\"a.b\",\"subdomain\":\"ok\","
                            " \"containers\":[{\"name\":\"c\"},{\"name\":\"c\"}],"
                            " \"initContainers\":[{\"name\":\"w\"}],"
                            " \"ephemeralContainers\":[{\"name\":\"w\"}]}}");
    struct podcheck_violation v;

    ck_assert(!podcheck_first_new(before, before, &v));
    ck_assert(podcheck_first_new(before, after, &v));
    ck_assert_int_eq(v.kind, PODCHECK_CONTAINER_DUPLICATE);
    ck_assert_str_eq(v.list, "ephemeralContainers");
    ck_assert_str_eq(v.other_list, "initContainers");
    ck_assert_str_eq(v.value, "w");
    ck_assert(podcheck_has(after, &v));
    ck_assert(!podcheck_has(before, &v));
    ck_assert(!podcheck_first_new(after, after, &v));
    ck_assert(!podcheck_each(NULL, collect, NULL));
    json_decref(before);
    json_decref(after);
}
END_TEST

/* Thousands of violations of the pod's own, and the one an edit adds is still found. */
START_TEST(many_old_violations)
{
    json_t *before =
        tu_json("{\"spec\":{\"volumes\":[],\"containers\":[{\"name\":\"c\",\"env\":[]}]}}");
    json_t *spec = json_object_get(before, "spec");
    json_t *env = json_object_get(json_array_get(json_object_get(spec, "containers"), 0), "env");
    json_t *after;
    struct podcheck_violation v;

    for (int i = 0; i < 50000; i++) {
        json_array_append_new(json_object_get(spec, "volumes"), json_pack("{s:s}", "name", "v"));
        json_array_append_new(env, json_pack("{s:s+}", "name", "1", i % 2 ? "a" : "b"));
    }
    after = json_deep_copy(before);
    ck_assert(!podcheck_first_new(before, after, &v));
    json_array_append_new(
        json_object_get(
            json_array_get(json_object_get(json_object_get(after, "spec"), "containers"), 0),
            "env"),
        json_pack("{s:s}", "name", "2x"));
    ck_assert(podcheck_first_new(before, after, &v));
    ck_assert_int_eq(v.kind, PODCHECK_ENV_NAME);
    ck_assert_str_eq(v.value, "2x");
    json_decref(after);
    json_decref(before);
}
END_TEST

/*
 * after shares before's env entries as the webhook's copy does (one object in both):
 * a user's invalid one is not new in its place, but it is when it moves to another
 * place or container, and an entry replaced or appended in its place is looked at.
 */
START_TEST(first_new_shared_env_entries)
{
    json_t *before = tu_json("{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":"
                             "[{\"name\":\"1bad\"},{\"name\":\"OK\"}]},{\"name\":\"d\"}]}}");
    json_t *benv = json_object_get(
        json_array_get(json_object_get(json_object_get(before, "spec"), "containers"), 0), "env");
    json_t *after = tu_json("{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[]},"
                            "{\"name\":\"d\",\"env\":[]}]}}");
    json_t *ctrs = json_object_get(json_object_get(after, "spec"), "containers");
    json_t *aenv = json_object_get(json_array_get(ctrs, 0), "env");
    json_t *denv = json_object_get(json_array_get(ctrs, 1), "env");
    struct podcheck_violation v;

    /* the user's own entries, each in its place: nothing new */
    json_array_append(aenv, json_array_get(benv, 0));
    json_array_append(aenv, json_array_get(benv, 1));
    ck_assert(!podcheck_first_new(before, after, &v));
    /* an appended entry is looked at */
    json_array_append_new(aenv, json_pack("{s:s}", "name", "2x"));
    ck_assert(podcheck_first_new(before, after, &v));
    ck_assert_int_eq(v.kind, PODCHECK_ENV_NAME);
    ck_assert_str_eq(v.container, "c");
    ck_assert_str_eq(v.value, "2x");
    json_array_remove(aenv, 2);
    /* the user's invalid entry in another container is new there */
    json_array_append(denv, json_array_get(benv, 0));
    ck_assert(podcheck_first_new(before, after, &v));
    ck_assert_int_eq(v.kind, PODCHECK_ENV_NAME);
    ck_assert_str_eq(v.container, "d");
    ck_assert_str_eq(v.value, "1bad");
    json_array_clear(denv);
    /* an entry replaced in the user's place is looked at */
    json_array_set_new(aenv, 1, json_pack("{s:s}", "name", "3y"));
    ck_assert(podcheck_first_new(before, after, &v));
    ck_assert_str_eq(v.value, "3y");
    /* and a container renamed keeps no entry of the other name's */
    json_array_set(aenv, 1, json_array_get(benv, 1));
    json_object_set_new(json_array_get(ctrs, 0), "name", json_string("e"));
    ck_assert(podcheck_first_new(before, after, &v));
    ck_assert_str_eq(v.container, "e");
    ck_assert_str_eq(v.value, "1bad");
    json_decref(after);
    json_decref(before);
}
END_TEST

/* podcheck_first_new(before, after) finds a new violation of kind, on value. */
static void assert_new(const json_t *before, const json_t *after, enum podcheck_kind kind,
                       const char *value)
{
    struct podcheck_violation v;

    ck_assert(podcheck_first_new(before, after, &v));
    ck_assert_int_eq(v.kind, kind);
    ck_assert_str_eq(v.value, value);
}

/* The user's own volumes and ports (the very objects at their places, as in the
 * webhook's copy) are not checked alone in the first walk: their invalid names and
 * numbers were there before. A name they share with a new entry still is a new
 * duplicate, wherever it is found. */
START_TEST(first_new_shared_volumes_and_ports)
{
    json_t *before =
        tu_json("{\"spec\":{\"volumes\":[{\"name\":\"Bad_Vol\"},{\"name\":\"data\"}],"
                "\"containers\":[{\"name\":\"c\",\"ports\":[{\"name\":\"bad name!\","
                "\"containerPort\":0},{\"name\":\"http\",\"containerPort\":8080}]}]}}");
    const json_t *bspec = json_object_get(before, "spec");
    json_t *bvols = json_object_get(bspec, "volumes");
    json_t *bports =
        json_object_get(json_array_get(json_object_get(bspec, "containers"), 0), "ports");
    json_t *after = tu_json("{\"spec\":{\"volumes\":[],\"containers\":[{\"name\":\"c\","
                            "\"ports\":[]}]}}");
    json_t *spec = json_object_get(after, "spec");
    json_t *vols = json_object_get(spec, "volumes");
    json_t *ports =
        json_object_get(json_array_get(json_object_get(spec, "containers"), 0), "ports");
    struct podcheck_violation v;

    /* the user's own, each in its place: nothing new */
    json_array_extend(vols, bvols);
    json_array_extend(ports, bports);
    ck_assert(!podcheck_first_new(before, after, &v));
    /* an appended volume with an invalid name, or the name of one there */
    json_array_append_new(vols, json_pack("{s:s}", "name", "Bad_Vol2"));
    assert_new(before, after, PODCHECK_VOLUME_NAME, "Bad_Vol2");
    json_array_set_new(vols, 2, json_pack("{s:s}", "name", "data"));
    assert_new(before, after, PODCHECK_VOLUME_DUPLICATE, "data");
    json_array_remove(vols, 2);
    /* a volume replaced in the user's first place by one of the second's name: the
     * user's own second volume is the new duplicate */
    json_array_set_new(vols, 0, json_pack("{s:s}", "name", "data"));
    assert_new(before, after, PODCHECK_VOLUME_DUPLICATE, "data");
    json_array_set(vols, 0, json_array_get(bvols, 0));
    ck_assert(!podcheck_first_new(before, after, &v));
    /* ports the same way: appended with a name there, and in the user's first place */
    json_array_append_new(ports, json_pack("{s:s,s:i}", "name", "http", "containerPort", 9090));
    ck_assert(podcheck_first_new(before, after, &v));
    ck_assert_int_eq(v.kind, PODCHECK_PORT_DUPLICATE);
    ck_assert_str_eq(v.container, "c");
    ck_assert_str_eq(v.value, "http");
    json_array_remove(ports, 2);
    json_array_set_new(ports, 0, json_pack("{s:s,s:i}", "name", "http", "containerPort", 81));
    assert_new(before, after, PODCHECK_PORT_DUPLICATE, "http");
    /* a port of the user's number out of range, no longer the user's object: new */
    json_array_set_new(ports, 0, json_pack("{s:s,s:i}", "name", "p", "containerPort", 0));
    assert_new(before, after, PODCHECK_PORT_NUMBER, "p");
    json_array_set(ports, 0, json_array_get(bports, 0));
    ck_assert(!podcheck_first_new(before, after, &v));
    json_decref(after);
    json_decref(before);
}
END_TEST

/* A list longer than names_of keeps on the stack: its names are fetched to the heap,
 * and a repeat found as in a short one. */
START_TEST(first_new_long_lists)
{
    json_t *before = tu_json("{\"spec\":{\"volumes\":[]}}");
    json_t *after = tu_json("{\"spec\":{\"volumes\":[]}}");
    json_t *bvols = json_object_get(json_object_get(before, "spec"), "volumes");
    json_t *vols = json_object_get(json_object_get(after, "spec"), "volumes");
    struct podcheck_violation v;

    for (int i = 0; i < 40; i++) {
        char name[16];

        snprintf(name, sizeof(name), "v%d", i);
        json_array_append_new(bvols, json_pack("{s:s}", "name", name));
    }
    json_array_extend(vols, bvols);
    ck_assert(!podcheck_first_new(before, after, &v));
    json_array_append_new(vols, json_pack("{s:s}", "name", "v17"));
    assert_new(before, after, PODCHECK_VOLUME_DUPLICATE, "v17");
    json_decref(after);
    json_decref(before);
}
END_TEST

static Suite *podcheck_suite(void)
{
    Suite *s = suite_create("podcheck");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, every_kind_in_order);
    tcase_add_test(tc, env_value_limit);
    tcase_add_test(tc, first_new_ignores_what_was_there);
    tcase_add_test(tc, many_old_violations);
    tcase_add_test(tc, first_new_shared_env_entries);
    tcase_add_test(tc, first_new_shared_volumes_and_ports);
    tcase_add_test(tc, first_new_long_lists);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(podcheck_suite());
}
