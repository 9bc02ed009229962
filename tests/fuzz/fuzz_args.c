/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_args.c - bytes → a JSON array of strings (split on NUL) → args_parse
 * with a table of every type (and an alias sharing storage, D4).
 *
 * An element that is exactly "\x01" becomes the integer 1 and "\x02" becomes
 * null, to reach the non-string element rule. Properties (plugins/args.h):
 *  - return 0 or WH_EINVAL; on WH_EINVAL the message is non-empty; the message
 *    buffer is never overrun (exact-size heap buffers, a small and a large one)
 *    and always NUL-terminated;
 *  - a string result is its default or points inside one of argv's strings,
 *    ending where that string ends;
 *  - parsing is deterministic (same results with either buffer);
 *  - args_parse_int on every element: 0, WH_EINVAL (value 0) or WH_ETOOBIG
 *    (INT64_MAX/INT64_MIN); plain decimals agree with strtoll;
 *  - args_parse_bool accepts exactly Go's strconv.ParseBool set.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "plugins/args.h"
#include "tests/fuzz/fuzzutil.h"

#define NDEFS 10

static const char default_s[] = "default-s";
static const char default_path[] = "/root/.ssh";

struct values {
    const char *s, *str, *path;
    int64_t i, i2, big;
    bool b, b2, wait;
};

static void values_init(struct values *v)
{
    memset(v, 0, sizeof(*v));
    v->s = default_s;
    v->str = NULL;
    v->path = default_path;
    v->i = 23456;
    v->i2 = -1;
    v->big = INT64_MAX;
    v->b = false;
    v->b2 = true;
    v->wait = false;
}

static void defs_init(struct args_def *d, struct values *v)
{
    const struct args_def t[NDEFS] = {
        {"s", ARGS_STRING, &v->s},
        {"str", ARGS_STRING, &v->str},
        {"ssh-key-file-path", ARGS_STRING, &v->path},
        {"i", ARGS_INT, &v->i},
        {"i2", ARGS_INT, &v->i2},
        {"alias", ARGS_INT, &v->i2}, /* shares storage with i2 (D4) */
        {"int", ARGS_INT, &v->big},
        {"b", ARGS_BOOL, &v->b},
        {"bool", ARGS_BOOL, &v->b2},
        {"wait-master-enabled", ARGS_BOOL, &v->wait},
    };

    memcpy(d, t, sizeof(t));
}

/* A string result: the default, or a suffix of one of argv's strings. */
static void check_string_result(const char *p, const char *dflt, const json_t *argv)
{
    size_t k;
    const json_t *e;

    if (p == dflt)
        return;
    json_array_foreach(argv, k, e) {
        const char *s = json_string_value(e);
        size_t n = json_string_length(e);

        if (s != NULL && p >= s && p <= s + n) {
            FUZZ_CHECK(p + strlen(p) == s + n, "string result %s does not end with its element", p);
            return;
        }
    }
    FUZZ_CHECK(0, "string result %p (\"%.40s\") points outside argv", (const void *)p,
               p != NULL ? p : "(null)");
}

static int parse(const json_t *argv, struct values *v, char **errbuf, size_t errlen)
{
    struct args_def defs[NDEFS];
    int rc;

    values_init(v);
    defs_init(defs, v);
    *errbuf = malloc(errlen);
    FUZZ_CHECK(*errbuf != NULL, "out of memory");
    memset(*errbuf, 'X', errlen);
    rc = args_parse(defs, NDEFS, argv, *errbuf, errlen);
    FUZZ_CHECK(rc == 0 || rc == WH_EINVAL, "args_parse returned %d", rc);
    FUZZ_CHECK(memchr(*errbuf, '\0', errlen) != NULL || rc == 0,
               "error message not NUL-terminated");
    if (rc == WH_EINVAL)
        FUZZ_CHECK((*errbuf)[0] != '\0', "WH_EINVAL without a message");
    check_string_result(v->s, default_s, argv);
    check_string_result(v->str, NULL, argv);
    check_string_result(v->path, default_path, argv);
    return rc;
}

/* Plain decimal: [+-]?(0|[1-9][0-9]*), where Go's base-0 ParseInt and strtoll agree. */
static bool plain_decimal(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    if (s[0] == '0')
        return s[1] == '\0';
    if (*s < '1' || *s > '9')
        return false;
    while (*s >= '0' && *s <= '9')
        s++;
    return *s == '\0';
}

static void check_int(const char *s)
{
    int64_t out = 12345;
    int rc = args_parse_int(s, &out);

    FUZZ_CHECK(rc == 0 || rc == WH_EINVAL || rc == WH_ETOOBIG, "args_parse_int(%s) = %d", s, rc);
    if (rc == WH_EINVAL)
        FUZZ_CHECK(out == 0, "args_parse_int(%s): syntax error but value %lld", s, (long long)out);
    if (rc == WH_ETOOBIG)
        FUZZ_CHECK(out == INT64_MAX || out == INT64_MIN, "args_parse_int(%s): overflow value %lld",
                   s, (long long)out);
    if (plain_decimal(s)) {
        long long want;

        errno = 0;
        want = strtoll(s, NULL, 10);
        FUZZ_CHECK(rc == (errno == ERANGE ? WH_ETOOBIG : 0), "args_parse_int(%s) = %d", s, rc);
        FUZZ_CHECK(out == want, "args_parse_int(%s) = %lld, strtoll says %lld", s, (long long)out,
                   want);
    }
}

static void check_bool(const char *s)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    int want = -1;
    bool out = true;
    int rc;

    for (size_t k = 0; k < 6; k++) {
        if (strcmp(s, yes[k]) == 0)
            want = 1;
        if (strcmp(s, no[k]) == 0)
            want = 0;
    }
    rc = args_parse_bool(s, &out);
    if (want < 0)
        FUZZ_CHECK(rc == WH_EINVAL && !out, "args_parse_bool(%s) accepted", s);
    else
        FUZZ_CHECK(rc == 0 && out == (want == 1), "args_parse_bool(%s) = %d/%d", s, rc, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *argv = json_array();
    struct values v1, v2;
    char *e1 = NULL;
    char *e2 = NULL;
    size_t start = 0;
    int rc1, rc2;

    FUZZ_CHECK(argv != NULL, "out of memory");
    for (size_t k = 0; k <= size; k++) {
        json_t *el;
        const char *seg = (const char *)data + start;
        size_t n = k - start;

        if (k < size && data[k] != '\0')
            continue;
        if (n == 1 && seg[0] == '\x01')
            el = json_integer(1);
        else if (n == 1 && seg[0] == '\x02')
            el = json_null();
        else
            el = json_stringn(seg, n); /* NULL: not UTF-8, which JSON cannot carry */
        if (el == NULL) {
            json_decref(argv);
            return -1;
        }
        json_array_append_new(argv, el);
        start = k + 1;
    }

    rc1 = parse(argv, &v1, &e1, 8);
    rc2 = parse(argv, &v2, &e2, 512);
    FUZZ_CHECK(rc1 == rc2, "rc %d with a small buffer, %d with a large one", rc1, rc2);
    FUZZ_CHECK(v1.s == v2.s && v1.str == v2.str && v1.path == v2.path && v1.i == v2.i
                   && v1.i2 == v2.i2 && v1.big == v2.big && v1.b == v2.b && v1.b2 == v2.b2
                   && v1.wait == v2.wait,
               "results differ between two identical parses");
    if (rc1 != 0)
        FUZZ_CHECK(strncmp(e1, e2, 7) == 0, "messages differ: %s / %s", e1, e2);

    {
        size_t k;
        const json_t *el;

        json_array_foreach(argv, k, el) {
            if (!json_is_string(el))
                continue;
            check_int(json_string_value(el));
            check_bool(json_string_value(el));
        }
    }
    free(e1);
    free(e2);
    json_decref(argv);
    return 0;
}
