/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_strmap.c - base/strmap.c: set/get/replace/remove/take, the value
 * destructor (called exactly once per value), growth past many entries, clear.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
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

/* Keeps the values whose text starts with 'k'; counts and records the visits. */
static bool keep_k(const char *key, void *value, void *ctx)
{
    char *seen = ctx;

    strcat(seen, key);
    return ((const char *)value)[0] == 'k';
}

START_TEST(test_filter)
{
    struct strmap *m = strmap_create(counted_free);
    char seen[64] = "";
    char letters[8] = "";
    size_t n = 0;

    freed = 0;
    for (const char *k = "abcdef"; *k != '\0'; k++) {
        char key[2] = {*k, '\0'};

        ck_assert_int_eq(strmap_set(m, key, dup_of(strchr("bdf", *k) ? "keep" : "drop")), 0);
    }
    strmap_filter(m, keep_k, seen);
    /* every entry visited exactly once, in whatever order */
    ck_assert_uint_eq(strlen(seen), 6);
    for (const char *k = "abcdef"; *k != '\0'; k++)
        ck_assert_ptr_nonnull(strchr(seen, *k));
    ck_assert_int_eq(freed, 3); /* a, c, e removed through the destructor */
    ck_assert_uint_eq(strmap_size(m), 3);
    ck_assert_ptr_null(strmap_get(m, "a"));
    ck_assert_str_eq(strmap_get(m, "d"), "keep");
    /* the map stays usable: set after filtering, and filter everything away */
    ck_assert_int_eq(strmap_set(m, "g", dup_of("drop")), 0);
    seen[0] = '\0';
    strmap_filter(m, keep_k, seen);
    for (const char *k = "bdf"; *k != '\0'; k++, n++)
        letters[n] = strmap_get(m, (char[]){*k, '\0'}) != NULL ? *k : '-';
    ck_assert_str_eq(letters, "bdf");
    ck_assert_int_eq(freed, 4);
    strmap_destroy(m);
    ck_assert_int_eq(freed, 7);
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


/* FNV-1a, 32 bits, unseeded: the hash strmap had, for building keys that collide in it. */
static uint32_t fnv1a32(uint32_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

/*
 * 2^10 keys whose unseeded FNV-1a agrees in its low 20 bits (each of 10 stages appends
 * one of two 3-byte blocks that lead to the same low bits), so they shared one bucket of
 * any table up to 2^20 buckets. Keyed, they spread: no chain comes near their number.
 */
START_TEST(test_chosen_keys_spread)
{
    static const char alpha[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    enum { STAGES = 10, MASK = (1u << 20) - 1 };
    unsigned char blocks[STAGES][2][3];
    uint32_t s = fnv1a32(2166136261u, (const unsigned char *)"a", 1) & MASK;
    static uint32_t slot[1u << 20]; /* low bits -> 1 + index of the block that gave them */
    struct strmap *m = strmap_create(NULL);

    ck_assert_ptr_nonnull(m);
    for (int j = 0; j < STAGES; j++) {
        bool found = false;

        memset(slot, 0, sizeof(slot));
        for (uint32_t i = 0; i < 62 * 62 * 62 && !found; i++) {
            unsigned char blk[3] = {(unsigned char)alpha[i / (62 * 62)],
                                    (unsigned char)alpha[(i / 62) % 62],
                                    (unsigned char)alpha[i % 62]};
            uint32_t t = fnv1a32(s, blk, 3) & MASK;

            if (slot[t] != 0) {
                uint32_t k = slot[t] - 1;

                blocks[j][0][0] = (unsigned char)alpha[k / (62 * 62)];
                blocks[j][0][1] = (unsigned char)alpha[(k / 62) % 62];
                blocks[j][0][2] = (unsigned char)alpha[k % 62];
                memcpy(blocks[j][1], blk, 3);
                s = t;
                found = true;
            } else {
                slot[t] = i + 1;
            }
        }
        ck_assert(found);
    }
    for (unsigned bits = 0; bits < (1u << STAGES); bits++) {
        char key[1 + 3 * STAGES + 1] = "a";

        for (int j = 0; j < STAGES; j++)
            memcpy(key + 1 + 3 * j, blocks[j][(bits >> j) & 1], 3);
        key[1 + 3 * STAGES] = '\0';
        /* they do collide in the unseeded hash */
        ck_assert_uint_eq(fnv1a32(2166136261u, (const unsigned char *)key, strlen(key)) & MASK, s);
        ck_assert_int_eq(strmap_set(m, key, NULL), 0);
    }
    ck_assert_uint_eq(strmap_size(m), 1u << STAGES);
    ck_assert_msg(strmap_max_chain(m) <= 16, "longest chain %zu", strmap_max_chain(m));
    strmap_destroy(m);
}
END_TEST

static Suite *strmap_suite(void)
{
    Suite *s = suite_create("strmap");
    TCase *t = tcase_create("strmap");

    tcase_add_test(t, test_set_get_replace);
    tcase_add_test(t, test_key_is_copied);
    tcase_add_test(t, test_remove_and_take);
    tcase_add_test(t, test_filter);
    tcase_add_test(t, test_many_entries);
    tcase_add_test(t, test_destroy_null);
    tcase_add_test(t, test_chosen_keys_spread);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tu_run(strmap_suite());
}
