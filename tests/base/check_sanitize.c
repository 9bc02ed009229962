/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_sanitize.c - base/sanitize.c: controls (C0, DEL, C1) and non-ASCII replaced by '?',
 * copies cut at the cap (with "..." when asked) and never inside a UTF-8
 * character unless the copy is ASCII anyway.
 */
#include <check.h>
#include <string.h>

#include "base/sanitize.h"
#include "tests/testutil.h"

START_TEST(test_controls)
{
    char s[] = "job x\r\nX-Injected: 1\t\x7f\x01 caf\xc3\xa9";

    sanitize_controls(s);
    ck_assert_str_eq(s, "job x??X-Injected: 1??? caf\xc3\xa9"); /* UTF-8 kept */
}
END_TEST

/* C1 controls (U+0080-U+009F: 0xC2 0x80-0x9F) are controls too: NEL, CSI; each byte '?'.
 * U+00A0 (0xC2 0xA0) and other two-byte characters are printable and stay. */
START_TEST(test_controls_c1)
{
    char s[] = "a\xc2\x85"
               "b\xc2\x9b[31mc\xc2\x80\xc2\x9f \xc2\xa0\xc2\xa9\xc3\x85";
    char lone[] = "x\xc2"; /* a lead byte at the end: no C1, left to wh_utf8_sanitize */
    char buf[32];

    sanitize_controls(s);
    ck_assert_str_eq(s, "a??b??[31mc???? \xc2\xa0\xc2\xa9\xc3\x85");
    sanitize_controls(lone);
    ck_assert_str_eq(lone, "x\xc2");
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf),
                                   "\xc2\x9b"
                                   "2J",
                                   8, SANITIZE_CONTROLS),
                     "??2J");
    /* a cut never splits a C1 control either: kept whole, and replaced whole */
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), "aaaaaa\xc2\x85zz", 7,
                                   SANITIZE_CONTROLS | SANITIZE_ELLIPSIS),
                     "aaaaaa...");
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), "aaaaaa\xc2\x85zz", 8,
                                   SANITIZE_CONTROLS | SANITIZE_ELLIPSIS),
                     "aaaaaa??...");
    /* no filter asked: the bytes stay */
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), "\xc2\x85", 8, 0), "\xc2\x85");
}
END_TEST

START_TEST(test_ascii)
{
    char s[] = "caf\xc3\xa9\n~ \x7f";

    sanitize_ascii(s);
    ck_assert_str_eq(s, "caf???~ ?");
}
END_TEST

START_TEST(test_copy_whole)
{
    char buf[16];

    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), "GET", 8, SANITIZE_ASCII | SANITIZE_ELLIPSIS),
                     "GET");
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), NULL, 8, SANITIZE_ELLIPSIS), "");
    /* exactly the cap: not cut */
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), "12345678", 8, SANITIZE_ELLIPSIS), "12345678");
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), "a\nb", 8, SANITIZE_CONTROLS), "a?b");
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), "a\nb", 8, 0), "a\nb"); /* no filter asked */
}
END_TEST

START_TEST(test_copy_cut)
{
    char buf[12];

    /* over the cap: cap bytes and "..." */
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), "123456789", 8, SANITIZE_ELLIPSIS),
                     "12345678...");
    /* over what fits: len - 4 bytes and "..." */
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), "abcdefghijklmnop", 100, SANITIZE_ELLIPSIS),
                     "abcdefgh...");
    /* without the ellipsis, len - 1 bytes */
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), "abcdefghijklmnop", 100, SANITIZE_CONTROLS),
                     "abcdefghijk");
    /* the filter applies to the kept part */
    ck_assert_str_eq(
        sanitize_copy(buf, sizeof(buf), "\r\n345678910", 8, SANITIZE_ASCII | SANITIZE_ELLIPSIS),
        "??345678...");
}
END_TEST

START_TEST(test_copy_utf8_boundary)
{
    char buf[32];
    /* "aaaaaaé": the 8-byte cap falls inside é (bytes 7 and 8) */
    const char *s = "aaaaaa\xc3\xa9zz";

    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), s, 7, SANITIZE_ELLIPSIS), "aaaaaa...");
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), s, 8, SANITIZE_ELLIPSIS), "aaaaaa\xc3\xa9...");
    /* ASCII copies are never cut back: every byte past 0x7E is '?' anyway */
    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), s, 7, SANITIZE_ASCII | SANITIZE_ELLIPSIS),
                     "aaaaaa?...");
}
END_TEST

START_TEST(test_copy_tiny_buffer)
{
    char buf[3] = "xy";

    ck_assert_str_eq(sanitize_copy(buf, sizeof(buf), "long", 10, SANITIZE_ELLIPSIS), "");
    ck_assert_str_eq(buf, "xy"); /* untouched */
    ck_assert_str_eq(sanitize_copy(buf, 1, "long", 10, 0), "");
}
END_TEST

static Suite *sanitize_suite(void)
{
    Suite *s = suite_create("sanitize");
    TCase *t = tcase_create("sanitize");

    tcase_add_test(t, test_controls);
    tcase_add_test(t, test_controls_c1);
    tcase_add_test(t, test_ascii);
    tcase_add_test(t, test_copy_whole);
    tcase_add_test(t, test_copy_cut);
    tcase_add_test(t, test_copy_utf8_boundary);
    tcase_add_test(t, test_copy_tiny_buffer);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tu_run(sanitize_suite());
}
