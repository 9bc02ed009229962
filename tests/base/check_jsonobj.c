/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_jsonobj.c - base/jsonobj.h: json_member gives json_object_get's answer, on
 * objects walked (up to JSON_MEMBER_SCAN_MAX members) and hashed (more), for keys
 * that share a first byte or a prefix, the empty key, keys with a NUL inside, members
 * removed and set again, and values that are not objects, and so does json_members for
 * several keys in one pass; json_array_each visits what
 * json_array_foreach visits with its array evaluated once.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonobj.h"
#include "tests/testutil.h"

/* Keys alike in every way json_member compares: first byte, length, prefix, NUL. */
static const char *const probes[] = {
    "",      "a",   "ab",    "abc",   "b",     "ba",        "name",
    "names", "nam", "namea", "aname", "value", "valueFrom", "\xc3\xa9n",
};

#define PROBES (sizeof(probes) / sizeof(probes[0]))

static void same_for_every_probe(const json_t *obj, const char *what)
{
    const json_t *all[PROBES];
    const json_t *three[3];

    for (size_t i = 0; i < PROBES; i++)
        ck_assert_msg(json_member(obj, probes[i]) == json_object_get(obj, probes[i]),
                      "%s: json_member(\"%s\") differs from json_object_get", what, probes[i]);
    /* json_members: every probe in one pass, and every three in a row */
    json_members(obj, probes, PROBES, all);
    for (size_t i = 0; i < PROBES; i++)
        ck_assert_msg(all[i] == json_object_get(obj, probes[i]),
                      "%s: json_members(\"%s\") differs from json_object_get", what, probes[i]);
    for (size_t i = 0; i + 3 <= PROBES; i++) {
        json_members(obj, probes + i, 3, three);
        for (size_t k = 0; k < 3; k++)
            ck_assert_msg(three[k] == json_object_get(obj, probes[i + k]),
                          "%s: json_members(\"%s\") of three differs from json_object_get", what,
                          probes[i + k]);
    }
}

START_TEST(test_fixed_objects)
{
    json_t *o = json_object();
    json_t *name = json_string("n");

    ck_assert_ptr_nonnull(o);
    same_for_every_probe(o, "empty");
    ck_assert_int_eq(json_object_set_new(o, "name", name), 0);
    ck_assert_int_eq(json_object_set_new(o, "names", json_integer(2)), 0);
    ck_assert_int_eq(json_object_set_new(o, "", json_integer(3)), 0);
    /* "a\0b": first byte 'a', three bytes: never "a" nor "ab" */
    ck_assert_int_eq(json_object_setn_new(o, "a\0b", 3, json_integer(4)), 0);
    /* "\0": the empty key's first byte, one byte long */
    ck_assert_int_eq(json_object_setn_new(o, "\0", 1, json_integer(5)), 0);
    same_for_every_probe(o, "fixed");
    ck_assert_ptr_eq(json_member(o, "name"), name);
    ck_assert_int_eq(json_integer_value(json_member(o, "")), 3);
    ck_assert_ptr_null(json_member(o, "a"));
    ck_assert_ptr_null(json_member(o, "nam"));
    ck_assert_int_eq(json_object_del(o, "name"), 0);
    ck_assert_ptr_null(json_member(o, "name"));
    ck_assert_int_eq(json_object_set_new(o, "name", json_true()), 0);
    ck_assert(json_is_true(json_member(o, "name")));
    same_for_every_probe(o, "after del and set");
    json_decref(o);
}
END_TEST

START_TEST(test_not_objects)
{
    json_t *a = json_pack("[{s:i}]", "a", 1);
    json_t *s = json_string("a");

    ck_assert_ptr_null(json_member(NULL, "a"));
    ck_assert_ptr_null(json_member(a, "a"));
    ck_assert_ptr_null(json_member(s, "a"));
    ck_assert_ptr_null(json_member(json_null(), "a"));
    {
        const json_t *out[2] = {a, s};
        static const char *const keys[] = {"a", "b"};

        json_members(a, keys, 2, out);
        ck_assert(out[0] == NULL && out[1] == NULL);
        json_members(NULL, keys, 2, out);
        ck_assert(out[0] == NULL && out[1] == NULL);
    }
    /* a NULL key: NULL, as json_object_get, on a small object and a large one */
    {
        json_t *small = json_pack("{s:i}", "a", 1);
        json_t *large = json_object();

        for (int k = 0; k <= JSON_MEMBER_SCAN_MAX; k++) {
            char key[8];

            snprintf(key, sizeof(key), "k%d", k);
            json_object_set_new(large, key, json_integer(k));
        }
        ck_assert_ptr_null(json_object_get(small, NULL));
        ck_assert_ptr_null(json_member(small, NULL));
        ck_assert_ptr_null(json_object_get(large, NULL));
        ck_assert_ptr_null(json_member(large, NULL));
        json_decref(small);
        json_decref(large);
    }
    json_decref(a);
    json_decref(s);
}
END_TEST

/* Objects of 0 to 3 * JSON_MEMBER_SCAN_MAX members with keys made of the probes'
 * pieces, some members removed: walked and hashed alike. */
START_TEST(test_random_objects)
{
    static const char *const pieces[] = {"", "a", "b", "n", "name", "value", "\xc3\xa9"};
    uint32_t seed = 20261202u;
    size_t walked = 0;
    size_t hashed = 0;

    for (int round = 0; round < 2000; round++) {
        json_t *o = json_object();
        size_t members = (size_t)(round % (3 * JSON_MEMBER_SCAN_MAX + 1));
        char what[64];

        ck_assert_ptr_nonnull(o);
        for (size_t m = 0; m < members; m++) {
            char key[32] = "";

            for (int p = 0; p < 2; p++) {
                seed = seed * 1103515245u + 12345u;
                strcat(key, pieces[(seed >> 16) % (sizeof(pieces) / sizeof(pieces[0]))]);
            }
            ck_assert_int_eq(json_object_set_new(o, key, json_integer((json_int_t)m)), 0);
            seed = seed * 1103515245u + 12345u;
            if ((seed >> 16) % 5 == 0)
                (void)json_object_del(o, key);
        }
        if (json_object_size(o) > JSON_MEMBER_SCAN_MAX)
            hashed++;
        else
            walked++;
        snprintf(what, sizeof(what), "round %d (%zu members)", round, json_object_size(o));
        same_for_every_probe(o, what);
        json_decref(o);
    }
    /* both ways were taken, many times */
    ck_assert_uint_gt(walked, 500);
    ck_assert_uint_gt(hashed, 500);
}
END_TEST

/* The array given to json_array_each, counted each time it is evaluated. */
static int evaluations;

static const json_t *counted(const json_t *array)
{
    evaluations++;
    return array;
}

START_TEST(test_array_each)
{
    json_t *arr = tu_json("[\"a\",\"b\",null,\"d\"]");
    json_t *nested = tu_json("[[1,2],[],[3]]");
    json_t *text = json_string("x");
    const json_t *v;
    const json_t *w;
    size_t i;
    size_t j;
    char seen[16] = "";
    size_t n = 0;

    /* every item in order, index and value as json_array_foreach, the array once */
    evaluations = 0;
    json_array_each(counted(arr), i, v) {
        ck_assert_ptr_eq(v, json_array_get(arr, i));
        seen[n++] = json_is_string(v) ? json_string_value(v)[0] : '-';
    }
    ck_assert_int_eq(evaluations, 1);
    ck_assert_str_eq(seen, "ab-d");
    ck_assert_uint_eq(i, 4);
    /* break and continue, as in any for loop */
    n = 0;
    json_array_each(counted(arr), i, v) {
        if (i == 0)
            continue;
        if (json_is_null(v))
            break;
        n++;
    }
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(i, 2);
    /* nested, one per line; no items, not an array, NULL: no pass */
    n = 0;
    evaluations = 0;
    json_array_each(counted(nested), i, v) {
        json_array_each(counted(v), j, w) {
            n += (size_t)json_integer_value(w);
        }
    }
    ck_assert_uint_eq(n, 6);
    ck_assert_int_eq(evaluations, 1 + 3); /* the outer array once, each inner one once */
    evaluations = 0;
    json_array_each(counted(json_array_get(nested, 1)), i, v)
        ck_abort();
    json_array_each(counted(text), i, v)
        ck_abort();
    json_array_each(counted(NULL), i, v)
        ck_abort();
    ck_assert_int_eq(evaluations, 3);
    json_decref(text);
    json_decref(nested);
    json_decref(arr);
}
END_TEST

static Suite *jsonobj_suite(void)
{
    Suite *s = suite_create("jsonobj");
    TCase *t = tcase_create("jsonobj");

    tcase_add_test(t, test_fixed_objects);
    tcase_add_test(t, test_not_objects);
    tcase_add_test(t, test_random_objects);
    tcase_add_test(t, test_array_each);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tu_run(jsonobj_suite());
}
