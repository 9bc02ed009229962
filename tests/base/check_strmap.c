/*
 * check_strmap.c - base/strmap.c: set/get/replace/remove/take, the value
 * destructor (called exactly once per value), growth past many entries, clear.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"
#include "tests/testutil.h"

static int freed; /* values freed by counted_free */

static void counted_free(void *v)
{
    freed++;
    free(v);
}

static char *dup_of(const char *s)
{
    char *d = strdup(s);

    ck_assert_ptr_nonnull(d);
    return d;
}

START_TEST(test_set_get_replace)
{
    struct strmap *m = strmap_create(counted_free);
    char *b;

    freed = 0;
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(strmap_size(m), 0);
    ck_assert_ptr_null(strmap_get(m, "ns/a"));
    ck_assert_int_eq(strmap_set(m, "ns/a", dup_of("one")), 0);
    ck_assert_int_eq(strmap_set(m, "ns/b", dup_of("two")), 0);
    ck_assert_int_eq(strmap_set(m, "", dup_of("empty key")), 0);
    ck_assert_uint_eq(strmap_size(m), 3);
    ck_assert_str_eq(strmap_get(m, "ns/a"), "one");
    ck_assert_str_eq(strmap_get(m, "ns/b"), "two");
    ck_assert_str_eq(strmap_get(m, ""), "empty key");
    ck_assert_ptr_null(strmap_get(m, "ns/c"));
    ck_assert_ptr_null(strmap_get(m, "ns/"));
    /* Replacing frees the old value, once; setting the same value again frees nothing. */
    ck_assert_int_eq(strmap_set(m, "ns/a", dup_of("uno")), 0);
    ck_assert_int_eq(freed, 1);
    ck_assert_str_eq(strmap_get(m, "ns/a"), "uno");
    b = strmap_get(m, "ns/b");
    ck_assert_int_eq(strmap_set(m, "ns/b", b), 0);
    ck_assert_int_eq(freed, 1);
    ck_assert_uint_eq(strmap_size(m), 3);
    strmap_destroy(m);
    ck_assert_int_eq(freed, 4);
}
END_TEST

START_TEST(test_key_is_copied)
{
    struct strmap *m = strmap_create(NULL);
    char key[8] = "uid-1";
    int v = 7;

    ck_assert_int_eq(strmap_set(m, key, &v), 0);
    key[4] = '2'; /* the caller's buffer changes; the map's key does not */
    ck_assert_ptr_eq(strmap_get(m, "uid-1"), &v);
    ck_assert_ptr_null(strmap_get(m, "uid-2"));
    strmap_destroy(m); /* no destructor: &v is not freed */
}
END_TEST

START_TEST(test_remove_and_take)
{
    struct strmap *m = strmap_create(counted_free);
    char *v;

    freed = 0;
    ck_assert_int_eq(strmap_set(m, "a", dup_of("A")), 0);
    ck_assert_int_eq(strmap_set(m, "b", dup_of("B")), 0);
    ck_assert_int_eq(strmap_remove(m, "a"), 0);
    ck_assert_int_eq(freed, 1);
    ck_assert_int_eq(strmap_remove(m, "a"), WH_ENOTFOUND);
    ck_assert_ptr_null(strmap_get(m, "a"));
    v = strmap_take(m, "b");
    ck_assert_str_eq(v, "B");
    ck_assert_int_eq(freed, 1); /* taken, not freed */
    ck_assert_ptr_null(strmap_take(m, "b"));
    ck_assert_uint_eq(strmap_size(m), 0);
    free(v);
    strmap_destroy(m);
    ck_assert_int_eq(freed, 1);
}
END_TEST

START_TEST(test_many_entries)
{
    struct strmap *m = strmap_create(counted_free);
    char key[32];

    freed = 0;
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof(key), "job-%d", i);
        ck_assert_int_eq(strmap_set(m, key, dup_of(key)), 0);
    }
    ck_assert_uint_eq(strmap_size(m), 20000);
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof(key), "job-%d", i);
        ck_assert_str_eq(strmap_get(m, key), key);
    }
    for (int i = 0; i < 20000; i += 2) {
        snprintf(key, sizeof(key), "job-%d", i);
        ck_assert_int_eq(strmap_remove(m, key), 0);
    }
    ck_assert_uint_eq(strmap_size(m), 10000);
    ck_assert_int_eq(freed, 10000);
    ck_assert_ptr_null(strmap_get(m, "job-0"));
    ck_assert_str_eq(strmap_get(m, "job-1"), "job-1");
    ck_assert_str_eq(strmap_get(m, "job-19999"), "job-19999");
    strmap_clear(m);
    ck_assert_int_eq(freed, 20000);
    ck_assert_uint_eq(strmap_size(m), 0);
    ck_assert_ptr_null(strmap_get(m, "job-1"));
    ck_assert_int_eq(strmap_set(m, "again", dup_of("yes")), 0); /* usable after clear */
    ck_assert_str_eq(strmap_get(m, "again"), "yes");
    strmap_destroy(m);
    ck_assert_int_eq(freed, 20001);
}
END_TEST

START_TEST(test_destroy_null)
{
    strmap_destroy(NULL);
}
END_TEST

static Suite *strmap_suite(void)
{
    Suite *s = suite_create("strmap");
    TCase *t = tcase_create("strmap");

    tcase_add_test(t, test_set_get_replace);
    tcase_add_test(t, test_key_is_copied);
    tcase_add_test(t, test_remove_and_take);
    tcase_add_test(t, test_many_entries);
    tcase_add_test(t, test_destroy_null);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tu_run(strmap_suite());
}
