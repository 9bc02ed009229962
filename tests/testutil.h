/* SPDX-License-Identifier: Apache-2.0 */
/*
 * testutil.h - helpers shared by the Check suites (header-only, static).
 */
#ifndef WH_TESTUTIL_H
#define WH_TESTUTIL_H

#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Parse JSON text or fail the test. New reference. */
static inline json_t *tu_json(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);

    ck_assert_msg(v != NULL, "bad test JSON at line %d: %s", e.line, e.text);
    return v;
}

/* Assert that JSON value got equals the JSON text want, printing both when not. */
#define tu_assert_json_eq(got, want_text)                                                          \
    do {                                                                                           \
        json_t *tu_want_ = tu_json(want_text);                                                     \
        char *tu_g_ = json_dumps((got), JSON_COMPACT | JSON_ENCODE_ANY);                           \
        char *tu_w_ = json_dumps(tu_want_, JSON_COMPACT | JSON_ENCODE_ANY);                        \
        ck_assert_msg(json_equal((got), tu_want_), "JSON differs\n got: %s\nwant: %s",             \
                      tu_g_ ? tu_g_ : "(null)", tu_w_);                                            \
        free(tu_g_);                                                                               \
        free(tu_w_);                                                                               \
        json_decref(tu_want_);                                                                     \
    } while (0)

/* Path of a file under tests/fixtures (TEST_FIXTURES env overrides the root). */
static inline const char *tu_fixture(const char *rel, char *buf, size_t len)
{
    const char *root = getenv("TEST_FIXTURES");

    snprintf(buf, len, "%s/%s", root ? root : "tests/fixtures", rel);
    return buf;
}

/* Whole file as a NUL-terminated malloc'd string (free()); fails the test when unreadable. */
static inline char *tu_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* stderr sent to a temporary file, from tu_stderr_begin to tu_stderr_end. */
struct tu_stderr {
    FILE *tmp;
    int saved; /* the real stderr */
};

static inline void tu_stderr_begin(struct tu_stderr *c)
{
    c->tmp = tmpfile();
    ck_assert_ptr_nonnull(c->tmp);
    fflush(stderr);
    c->saved = dup(STDERR_FILENO);
    ck_assert_int_ge(c->saved, 0);
    ck_assert_int_ge(dup2(fileno(c->tmp), STDERR_FILENO), 0);
}

/* Restore stderr. @return what was written to it meanwhile (malloc'd, NUL-terminated). */
static inline char *tu_stderr_end(struct tu_stderr *c)
{
    char *out;
    long n;

    fflush(stderr);
    ck_assert_int_ge(dup2(c->saved, STDERR_FILENO), 0);
    close(c->saved);
    fseek(c->tmp, 0, SEEK_END);
    n = ftell(c->tmp);
    rewind(c->tmp);
    out = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(fread(out, 1, (size_t)n, c->tmp), (size_t)n);
    out[n] = '\0';
    fclose(c->tmp);
    return out;
}

/* Run one suite; return the process exit status. */
static inline int tu_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
