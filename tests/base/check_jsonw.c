/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_jsonw.c - the JSON text writer (base/jsonw.h) against jansson's dumper.
 *
 * The writer promises json_dumps(JSON_COMPACT)'s bytes, so jansson is the oracle:
 * every ASCII byte alone, UTF-8, NULs, the JSON Pointer escapes (RFC 6901), values
 * of every type and a seeded random set of documents, each compared byte for byte,
 * plus fixed expectations for the escapes themselves.
 */
#include <stdint.h>
#include <stdio.h>

#include "base/buf.h"
#include "base/jsonw.h"
#include "tests/jsongen.h"
#include "tests/testutil.h"

/* Compact dump of v (the oracle). Caller frees. */
static char *dump(const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

    ck_assert_ptr_nonnull(s);
    return s;
}

/* jsonw_value's text of v must be dump(v), byte for byte. */
static void assert_value_is_dump(const json_t *v, const char *name)
{
    struct buf o;
    char *want = dump(v);

    buf_init(&o, BUF_NO_MAX);
    ck_assert_int_eq(jsonw_value(&o, v), 0);
    ck_assert_msg(strcmp(buf_cstr(&o), want) == 0, "%s:\n got: %s\nwant: %s", name, buf_cstr(&o),
                  want);
    free(want);
    buf_dispose(&o);
}

/* jsonw_string of n bytes must be json_dumps of json_stringn of them. */
static void assert_string_is_dump(const char *s, size_t n, const char *name)
{
    json_t *v = json_stringn(s, n);

    ck_assert_msg(v != NULL, "%s: not valid UTF-8", name);
    assert_value_is_dump(v, name);
    json_decref(v);
}

START_TEST(test_every_ascii_byte)
{
    char s[4] = {'a', (char)_i, 'b', '\0'};
    char name[32];

    snprintf(name, sizeof(name), "byte 0x%02x", (unsigned)_i);
    assert_string_is_dump(s, 3, name);
}
END_TEST

/* Strings of 1-24 bytes with byte _i at each place and 'a' or a high byte around it: the
 * eight-at-a-time scan (plain_run) meets it in a word, in a word's tail and alone. */
START_TEST(test_every_ascii_byte_at_every_place)
{
    char s[32];
    char name[64];

    for (size_t n = 1; n <= 24; n++) {
        for (size_t at = 0; at < n; at++) {
            memset(s, 'a', n);
            if (at >= 2) /* "é" before it: a high byte in the same word */
                memcpy(s + at - 2, "\xc3\xa9", 2);
            s[at] = (char)_i;
            snprintf(name, sizeof(name), "byte 0x%02x at %zu of %zu", (unsigned)_i, at, n);
            assert_string_is_dump(s, n, name);
        }
    }
}
END_TEST

START_TEST(test_escapes_exact)
{
    struct buf o;

    buf_init(&o, BUF_NO_MAX);
    ck_assert_int_eq(jsonw_string(&o, "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f", 14), 0);
    ck_assert_str_eq(buf_cstr(&o), "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001F\x7f\"");
    buf_reset(&o);
    ck_assert_int_eq(jsonw_string(&o, "a\0b", 3), 0);
    ck_assert_str_eq(buf_cstr(&o), "\"a\\u0000b\"");
    buf_reset(&o);
    ck_assert_int_eq(jsonw_cstring(&o, ""), 0);
    ck_assert_str_eq(buf_cstr(&o), "\"\"");
    buf_dispose(&o);
}
END_TEST

START_TEST(test_utf8_copied)
{
    /* 2-, 3- and 4-byte characters, U+2028 and U+FFFF: copied, never \u-escaped */
    static const char s[] = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xe2\x80\xa8\xef\xbf\xbf";
    struct buf o;

    assert_string_is_dump(s, sizeof(s) - 1, "utf-8");
    buf_init(&o, BUF_NO_MAX);
    ck_assert_int_eq(jsonw_cstring(&o, s), 0);
    ck_assert_uint_eq(o.len, sizeof(s) + 1);
    buf_dispose(&o);
}
END_TEST

START_TEST(test_raw)
{
    struct buf o;

    buf_init(&o, BUF_NO_MAX);
    ck_assert_int_eq(jsonw_raw(&o, "{\"a\\u0041\":", 11), 0);
    ck_assert_int_eq(jsonw_raw(&o, "1}", 2), 0);
    ck_assert_str_eq(buf_cstr(&o), "{\"a\\u0041\":1}");
    buf_dispose(&o);
}
END_TEST

/* RFC 6901 §3 first (~0, ~1), then JSON escapes; "" is a valid reference token. */
START_TEST(test_pointer_segment)
{
    struct buf o;

    buf_init(&o, BUF_NO_MAX);
    ck_assert_int_eq(jsonw_pointer_segment(&o, "metadata", 8), 0);
    ck_assert_int_eq(jsonw_pointer_segment(&o, "volcano.sh/task-spec", 20), 0);
    ck_assert_int_eq(jsonw_pointer_segment(&o, "~1/\"\\\n", 6), 0);
    ck_assert_int_eq(jsonw_pointer_segment(&o, "", 0), 0);
    ck_assert_str_eq(buf_cstr(&o), "/metadata/volcano.sh~1task-spec/~01~1\\\"\\\\\\n/");
    buf_dispose(&o);
}
END_TEST

static const char *const values[] = {
    "null",
    "true",
    "false",
    "0",
    "-1",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
    "420.0",
    "1e300",
    "-0.0",
    "0.1",
    "123456789.123456789",
    "\"\"",
    "{}",
    "[]",
    "[[],{},[{}]]",
    "{\"b\":1,\"a\":[1,2,{\"c\":null}],\"\":\"\"}",
    "{\"z\":{\"y\":{\"x\":[true,false,\"\\u00e9\\n\"]}}}",
    "{\"env\":[{\"name\":\"TF_CONFIG\",\"value\":\"{\\\"cluster\\\":{\\\"ps\\\":[\\\"a:2222\\\"]}}"
    "\"}]}",
};

START_TEST(test_values)
{
    json_t *v = json_loads(values[_i], JSON_DECODE_ANY, NULL);

    ck_assert_ptr_nonnull(v);
    assert_value_is_dump(v, values[_i]);
    json_decref(v);
}
END_TEST

START_TEST(test_null_value)
{
    struct buf o;

    buf_init(&o, BUF_NO_MAX);
    ck_assert_int_eq(jsonw_value(&o, NULL), WH_EINVAL);
    ck_assert_int_eq(o.rc, WH_EINVAL);
    buf_dispose(&o);
}
END_TEST

/* The cap: the first failing append is kept, later ones change nothing. */
START_TEST(test_cap)
{
    struct buf o;

    buf_init(&o, 5);
    ck_assert_int_eq(jsonw_cstring(&o, "abc"), 0); /* "abc" with its quotes: 5 bytes */
    ck_assert_int_eq(jsonw_raw(&o, ",", 1), WH_ETOOBIG);
    ck_assert_int_eq(jsonw_cstring(&o, ""), WH_ETOOBIG);
    ck_assert_str_eq(buf_cstr(&o), "\"abc\"");
    buf_dispose(&o);
    buf_init(&o, 4); /* one byte short, plain and escaped: nothing of either written */
    ck_assert_int_eq(jsonw_cstring(&o, "abc"), WH_ETOOBIG);
    ck_assert_uint_eq(o.len, 0);
    buf_dispose(&o);
    buf_init(&o, 3);
    ck_assert_int_eq(jsonw_cstring(&o, "a\n"), WH_ETOOBIG);
    buf_dispose(&o);
}
END_TEST

/* jsonw_value_texts copies a known text for the value itself or an array's item, and
 * walks everything else: texts made unlike the values show which was copied. */
START_TEST(test_known_texts)
{
    json_t *part = json_pack("{s:s}", "name", "a");
    json_t *other = json_pack("{s:s}", "name", "b");
    json_t *list = json_pack("[OO]", part, other);
    json_t *nested = json_pack("{s:O}", "v", part);
    json_t *many[JSONW_TEXTS_MAX];
    struct jsonw_texts t;
    struct buf o;

    ck_assert_ptr_nonnull(list);
    ck_assert_ptr_nonnull(nested);
    jsonw_texts_init(&t);
    buf_init(&o, BUF_NO_MAX);
    /* no texts: jsonw_value's bytes */
    ck_assert_int_eq(jsonw_value_texts(&o, list, NULL), 0);
    ck_assert_str_eq(buf_cstr(&o), "[{\"name\":\"a\"},{\"name\":\"b\"}]");
    jsonw_texts_add(&t, part, "PART", 4);
    buf_truncate(&o, 0);
    ck_assert_int_eq(jsonw_value_texts(&o, part, &t), 0);
    ck_assert_str_eq(buf_cstr(&o), "PART");
    buf_truncate(&o, 0);
    ck_assert_int_eq(jsonw_value_texts(&o, list, &t), 0);
    ck_assert_str_eq(buf_cstr(&o), "[PART,{\"name\":\"b\"}]");
    /* an object's members are walked: only op values and their items are looked up */
    buf_truncate(&o, 0);
    ck_assert_int_eq(jsonw_value_texts(&o, nested, &t), 0);
    ck_assert_str_eq(buf_cstr(&o), "{\"v\":{\"name\":\"a\"}}");
    /* a known array is copied whole */
    jsonw_texts_add(&t, list, "LIST", 4);
    buf_truncate(&o, 0);
    ck_assert_int_eq(jsonw_value_texts(&o, list, &t), 0);
    ck_assert_str_eq(buf_cstr(&o), "LIST");
    /* a value known already keeps its first text */
    jsonw_texts_add(&t, part, "AGAIN", 5);
    ck_assert_uint_eq(t.n, 2);
    buf_truncate(&o, 0);
    ck_assert_int_eq(jsonw_value_texts(&o, part, &t), 0);
    ck_assert_str_eq(buf_cstr(&o), "PART");
    /* a full table ignores more (that value is walked), and finds every one it took */
    jsonw_texts_init(&t);
    for (int i = 0; i < JSONW_TEXTS_MAX; i++) {
        many[i] = json_integer(i);
        ck_assert_ptr_nonnull(many[i]);
        jsonw_texts_add(&t, many[i], "K", 1);
    }
    jsonw_texts_add(&t, other, "OTHER", 5);
    ck_assert_uint_eq(t.n, JSONW_TEXTS_MAX);
    for (int i = 0; i < JSONW_TEXTS_MAX; i++) {
        buf_truncate(&o, 0);
        ck_assert_int_eq(jsonw_value_texts(&o, many[i], &t), 0);
        ck_assert_str_eq(buf_cstr(&o), "K");
        json_decref(many[i]);
    }
    buf_truncate(&o, 0);
    ck_assert_int_eq(jsonw_value_texts(&o, other, &t), 0);
    ck_assert_str_eq(buf_cstr(&o), "{\"name\":\"b\"}");
    ck_assert_int_eq(jsonw_value_texts(&o, NULL, &t), WH_EINVAL);
    buf_dispose(&o);
    json_decref(nested);
    json_decref(list);
    json_decref(other);
    json_decref(part);
}
END_TEST

/* ---- random documents: the writer's text is the dumper's ---------------- */

START_TEST(test_random_documents)
{
    struct jsongen g = {.state = 0x2545f4914f6cdd1dULL, .reals = true};

    for (int iter = 0; iter < 3000; iter++) {
        json_t *v = jsongen_value(&g, 4, false);
        char name[32];

        ck_assert_ptr_nonnull(v);
        snprintf(name, sizeof(name), "iter %d", iter);
        assert_value_is_dump(v, name);
        json_decref(v);
    }
}
END_TEST

static Suite *jsonw_suite(void)
{
    Suite *s = suite_create("jsonw");
    TCase *ts = tcase_create("strings");
    TCase *tv = tcase_create("values");

    tcase_add_loop_test(ts, test_every_ascii_byte, 0, 128);
    tcase_add_loop_test(ts, test_every_ascii_byte_at_every_place, 0, 128);
    tcase_add_test(ts, test_escapes_exact);
    tcase_add_test(ts, test_utf8_copied);
    tcase_add_test(ts, test_raw);
    tcase_add_test(ts, test_pointer_segment);
    tcase_add_test(ts, test_cap);
    suite_add_tcase(s, ts);
    tcase_add_loop_test(tv, test_values, 0, (int)(sizeof(values) / sizeof(values[0])));
    tcase_add_test(tv, test_null_value);
    tcase_add_test(tv, test_known_texts);
    tcase_add_test(tv, test_random_documents);
    suite_add_tcase(s, tv);
    return s;
}

int main(void)
{
    return tu_run(jsonw_suite());
}
