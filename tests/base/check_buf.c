/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_buf.c - base/buf.c: growth, the max cap (WH_ETOOBIG), the sticky first
 * failure, formatted appends, streams, truncation and handing the content over.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "tests/testutil.h"

START_TEST(test_empty)
{
    struct buf b;

    buf_init(&b, 16);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_str_eq(buf_cstr(&b), "");
    buf_dispose(&b);
    buf_dispose(&b); /* safe to repeat */
    ck_assert_uint_eq(b.max, 16);
}
END_TEST

START_TEST(test_append_grows_and_terminates)
{
    struct buf b;
    char chunk[100];

    buf_init(&b, BUF_NO_MAX);
    memset(chunk, 'x', sizeof(chunk));
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(buf_append(&b, chunk, sizeof(chunk)), 0);
    ck_assert_uint_eq(b.len, 100000);
    ck_assert_uint_ge(b.alloc, 100001);
    ck_assert_int_eq(b.data[99999], 'x');
    ck_assert_int_eq(b.data[100000], '\0');
    ck_assert_int_eq(buf_append(&b, "\0y", 2), 0); /* binary content keeps its NULs */
    ck_assert_uint_eq(b.len, 100002);
    ck_assert_int_eq(b.data[100000], '\0');
    ck_assert_int_eq(b.data[100001], 'y');
    buf_dispose(&b);
}
END_TEST

START_TEST(test_max_is_exact)
{
    struct buf b;

    buf_init(&b, 5);
    ck_assert_int_eq(buf_append_str(&b, "abc"), 0);
    ck_assert_int_eq(buf_append_str(&b, "de"), 0); /* exactly max */
    ck_assert_str_eq(buf_cstr(&b), "abcde");
    ck_assert_uint_le(b.alloc, 6); /* never past max + 1 */
    ck_assert_int_eq(buf_append_str(&b, "f"), WH_ETOOBIG);
    ck_assert_str_eq(buf_cstr(&b), "abcde"); /* the content is as it was */
    ck_assert_uint_eq(b.len, 5);
    buf_dispose(&b);
}
END_TEST

START_TEST(test_failure_is_sticky_until_reset)
{
    struct buf b;

    buf_init(&b, 4);
    ck_assert_int_eq(buf_append_str(&b, "abcdef"), WH_ETOOBIG);
    ck_assert_int_eq(b.rc, WH_ETOOBIG);
    ck_assert_int_eq(buf_append_str(&b, "a"),
                     WH_ETOOBIG); /* it would fit, but the first failure stays */
    ck_assert_int_eq(buf_reserve(&b, 0), WH_ETOOBIG);
    ck_assert_ptr_null(buf_take(&b, NULL));
    ck_assert_ptr_null(b.data);
    buf_init(&b, 4);
    ck_assert_int_eq(buf_append_str(&b, "abcdef"), WH_ETOOBIG);
    buf_reset(&b);
    ck_assert_int_eq(b.rc, 0);
    ck_assert_int_eq(buf_append_str(&b, "ab"), 0);
    ck_assert_str_eq(buf_cstr(&b), "ab");
    buf_dispose(&b);
}
END_TEST

START_TEST(test_fail_of_the_callers_own)
{
    struct buf b;

    buf_init(&b, BUF_NO_MAX);
    ck_assert_int_eq(buf_append_str(&b, "{"), 0);
    buf_fail(&b, 0); /* not a failure: nothing */
    ck_assert_int_eq(b.rc, 0);
    buf_fail(&b, WH_ENOMEM);
    buf_fail(&b, WH_ETOOBIG); /* the first one stays */
    ck_assert_int_eq(b.rc, WH_ENOMEM);
    ck_assert_int_eq(buf_append_str(&b, "}"), WH_ENOMEM);
    ck_assert_ptr_null(buf_take(&b, NULL));
}
END_TEST

START_TEST(test_reserve_then_write)
{
    struct buf b;

    buf_init(&b, 10);
    ck_assert_int_eq(buf_reserve(&b, 10), 0);
    ck_assert_uint_ge(b.alloc, 11);
    memcpy(b.data, "0123456789", 10);
    b.len = 10;
    b.data[b.len] = '\0';
    ck_assert_str_eq(buf_cstr(&b), "0123456789");
    ck_assert_int_eq(buf_reserve(&b, 1), WH_ETOOBIG);
    buf_dispose(&b);
}
END_TEST

START_TEST(test_appendf)
{
    struct buf b;
    char big[300];

    buf_init(&b, BUF_NO_MAX);
    ck_assert_int_eq(buf_appendf(&b, "%s=%d", "a", 1), 0);
    ck_assert_int_eq(buf_appendf(&b, " %s", ""), 0);
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ck_assert_int_eq(buf_appendf(&b, "[%s]", big), 0); /* past the first allocation */
    ck_assert_uint_eq(b.len, 3 + 1 + 301);
    ck_assert_int_eq(strncmp(b.data, "a=1 [zzz", 8), 0);
    ck_assert_int_eq(b.data[b.len - 1], ']');
    ck_assert_uint_eq(strlen(b.data), b.len);
    buf_dispose(&b);

    buf_init(&b, 6);
    ck_assert_int_eq(buf_appendf(&b, "%d", 12345), 0);
    ck_assert_int_eq(buf_appendf(&b, "%d", 67), WH_ETOOBIG);
    ck_assert_str_eq(buf_cstr(&b), "12345"); /* no cut text left behind */
    buf_dispose(&b);
}
END_TEST

/* buf_append_decimal is printf's "%lld", the extremes included, and honours the cap. */
START_TEST(test_append_decimal)
{
    static const long long values[] = {
        0, 7, -7, 10, 99, -100, 1234567890123LL, LLONG_MAX, LLONG_MIN, LLONG_MIN + 1};
    struct buf b;
    char want[32];

    buf_init(&b, BUF_NO_MAX);
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        buf_reset(&b);
        ck_assert_int_eq(buf_append_str(&b, "x"), 0);
        ck_assert_int_eq(buf_append_decimal(&b, values[i]), 0);
        snprintf(want, sizeof(want), "x%lld", values[i]);
        ck_assert_str_eq(buf_cstr(&b), want);
    }
    buf_dispose(&b);
    buf_init(&b, 3);
    ck_assert_int_eq(buf_append_decimal(&b, -99), 0);
    ck_assert_int_eq(buf_append_decimal(&b, 1), WH_ETOOBIG);
    ck_assert_str_eq(buf_cstr(&b), "-99");
    buf_dispose(&b);
}
END_TEST

START_TEST(test_truncate)
{
    struct buf b;

    buf_init(&b, BUF_NO_MAX);
    ck_assert_int_eq(buf_append_str(&b, "/spec/containers"), 0);
    buf_truncate(&b, 5);
    ck_assert_str_eq(buf_cstr(&b), "/spec");
    ck_assert_uint_eq(b.len, 5);
    buf_truncate(&b, 50); /* longer: nothing */
    ck_assert_str_eq(buf_cstr(&b), "/spec");
    buf_dispose(&b);
}
END_TEST

START_TEST(test_take)
{
    struct buf b;
    size_t len = 99;
    char *s;

    buf_init(&b, 100);
    s = buf_take(&b, &len); /* empty: a "" to free */
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s, "");
    ck_assert_uint_eq(len, 0);
    free(s);
    ck_assert_int_eq(buf_append_str(&b, "hello"), 0);
    s = buf_take(&b, &len);
    ck_assert_str_eq(s, "hello");
    ck_assert_uint_eq(len, 5);
    ck_assert_ptr_null(b.data); /* b is empty again, same max */
    ck_assert_uint_eq(b.len, 0);
    ck_assert_uint_eq(b.max, 100);
    free(s);
}
END_TEST

/* A stream of n bytes 'a'..'z' repeated. */
static FILE *stream_of(size_t n)
{
    FILE *f = tmpfile();

    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < n; i++)
        fputc('a' + (int)(i % 26), f);
    rewind(f);
    return f;
}

START_TEST(test_stream)
{
    struct buf b;
    FILE *f = stream_of(200000);

    buf_init(&b, 200000); /* exactly max */
    ck_assert_int_eq(buf_append_stream(&b, f), 0);
    ck_assert_uint_eq(b.len, 200000);
    ck_assert_int_eq(b.data[0], 'a');
    ck_assert_int_eq(b.data[199999], 'a' + 199999 % 26);
    ck_assert_int_eq(b.data[200000], '\0');
    buf_dispose(&b);
    fclose(f);

    f = stream_of(200001);
    buf_init(&b, 200000);
    ck_assert_int_eq(buf_append_stream(&b, f), WH_ETOOBIG);
    buf_dispose(&b);
    fclose(f);

    f = stream_of(0);
    buf_init(&b, 10);
    ck_assert_int_eq(buf_append_stream(&b, f), 0);
    ck_assert_uint_eq(b.len, 0);
    buf_dispose(&b);
    fclose(f);
}
END_TEST

START_TEST(test_stream_read_error)
{
    struct buf b;
    FILE *f = fopen("/", "r"); /* a directory: fread fails with EISDIR */

    ck_assert_ptr_nonnull(f);
    buf_init(&b, 100);
    ck_assert_int_eq(buf_append_stream(&b, f), WH_ERROR);
    ck_assert_int_eq(errno, EISDIR);
    buf_dispose(&b);
    fclose(f);
}
END_TEST

static Suite *buf_suite(void)
{
    Suite *s = suite_create("buf");
    TCase *t = tcase_create("buf");

    tcase_add_test(t, test_empty);
    tcase_add_test(t, test_append_grows_and_terminates);
    tcase_add_test(t, test_max_is_exact);
    tcase_add_test(t, test_failure_is_sticky_until_reset);
    tcase_add_test(t, test_fail_of_the_callers_own);
    tcase_add_test(t, test_reserve_then_write);
    tcase_add_test(t, test_appendf);
    tcase_add_test(t, test_append_decimal);
    tcase_add_test(t, test_truncate);
    tcase_add_test(t, test_take);
    tcase_add_test(t, test_stream);
    tcase_add_test(t, test_stream_read_error);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tu_run(buf_suite());
}
