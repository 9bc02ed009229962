/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_warnings.c - plugins/warnings.c: the AdmissionResponse warnings of one
 * request: one printable line each (controls, C1 too, become '?'), valid UTF-8,
 * de-duplicated, capped.
 */
#include <check.h>
#include <jansson.h>
#include <string.h>

#include "plugins/warnings.h"
#include "tests/testutil.h"

/* User text (a plugin name from spec.plugins, a container name) with C0 and C1 controls:
 * each control byte is '?', printable UTF-8 stays. */
START_TEST(controls_replaced)
{
    struct warnings w;

    warnings_init(&w);
    warnings_add(&w, "unknown plugin %s in job spec.plugins ignored",
                 "x\n\x1b[31my\xc2\x9b"
                 "0m\xc2\x85\x7f\xc3\xa9\xc2\xa0");
    ck_assert_uint_eq(w.n, 1);
    ck_assert_str_eq(w.items[0],
                     "unknown plugin x??[31my??0m???\xc3\xa9\xc2\xa0 in job spec.plugins ignored");
    /* Not UTF-8 at all: each bad byte '?' (a lone 0x9B is no C1 control, just invalid). */
    warnings_add(&w, "%s", "a\x9b\xc2");
    ck_assert_uint_eq(w.n, 2);
    ck_assert_str_eq(w.items[1], "a??");
}
END_TEST

/* The same text twice is one warning, also when only the sanitised forms are equal. */
START_TEST(duplicates_and_cap)
{
    struct warnings w;
    json_t *got;

    warnings_init(&w);
    warnings_add(&w, "p\nq");
    warnings_add(&w, "p\rq");
    warnings_add(&w, "p?q");
    ck_assert_uint_eq(w.n, 1);
    for (int i = 0; i < WARNINGS_MAX + 3; i++)
        warnings_add(&w, "w%d", i);
    ck_assert_uint_eq(w.n, WARNINGS_MAX);
    ck_assert_str_eq(w.items[WARNINGS_MAX - 1], "w14");
    warnings_add(NULL, "nothing");
    got = warnings_to_json(&w);
    ck_assert_uint_eq(json_array_size(got), WARNINGS_MAX);
    ck_assert_str_eq(json_string_value(json_array_get(got, 0)), "p?q");
    json_decref(got);
}
END_TEST

/* The key of the finding a warning tells (warnings_add_keyed), for matching the Job's
 * diagnostic of it (webhook/mutate.c). */
START_TEST(keys)
{
    struct warnings w;
    char long_key[WARNINGS_KEY_MAX + 10];

    warnings_init(&w);
    warnings_add(&w, "plain");
    warnings_add_keyed(&w, "spec.plugins.ray", "ray plugin: %s", "bad flag");
    ck_assert_uint_eq(w.n, 2);
    ck_assert_str_eq(w.keys[0], "");
    ck_assert_str_eq(w.keys[1], "spec.plugins.ray");
    ck_assert(warnings_has_key(&w, 2, "spec.plugins.ray"));
    ck_assert(!warnings_has_key(&w, 1, "spec.plugins.ray")); /* only the first n */
    ck_assert(!warnings_has_key(&w, 2, "spec.plugins.ra"));
    ck_assert(!warnings_has_key(&w, 2, ""));
    ck_assert(!warnings_has_key(&w, 2, NULL));
    ck_assert(!warnings_has_key(NULL, 2, "spec.plugins.ray"));
    /* The same text again, keyed: one warning, which gets the key it lacked. */
    warnings_add_keyed(&w, "k", "plain");
    ck_assert_uint_eq(w.n, 2);
    ck_assert_str_eq(w.keys[0], "k");
    warnings_add_keyed(&w, "other", "plain");
    ck_assert_str_eq(w.keys[0], "k");
    /* A key longer than fits is cut; looked up by the same long key, it is found. */
    memset(long_key, 'k', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = '\0';
    warnings_add_keyed(&w, long_key, "long");
    ck_assert_uint_eq(strlen(w.keys[2]), WARNINGS_KEY_MAX - 1);
    ck_assert(warnings_has_key(&w, 3, long_key));
    warnings_add_keyed(NULL, "k", "nothing");
}
END_TEST

static Suite *warnings_suite(void)
{
    Suite *s = suite_create("warnings");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, controls_replaced);
    tcase_add_test(tc, duplicates_and_cap);
    tcase_add_test(tc, keys);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(warnings_suite());
}
