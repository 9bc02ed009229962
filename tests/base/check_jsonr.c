/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_jsonr.c - the fast reader (base/jsonr.h) against jansson's json_loadb.
 *
 * The property, everywhere: the fast path builds nothing, or exactly json_loadb's
 * tree (its compact dump, which shows values, types and key order, byte for byte);
 * jsonr_loadb then answers as json_loadb does, errors included. Checked on every
 * JSON file of the fuzz corpora, regressions and fixtures (and the count read on
 * the fast path, so that a reader that declines everything fails), on fixed inputs
 * with exact trees, on inputs it must leave to jansson, on random documents written
 * by jansson's dumper with and without escapes, and on seeded byte mutations.
 *
 * Everywhere too, the reader that builds only what a keep list names
 * (jsonr_fast_kept): it declines exactly where the whole reader declines, and
 * otherwise builds json_loadb's tree with every member not named left out
 * (tests/jsonprune.h, written with jansson alone). And everywhere the document
 * (jsonr_doc_read): it declines where the fast path declines, and its root's tree is
 * json_loadb's; test_doc_navigation reads one in place.
 */
#include <glob.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/buf.h"
#include "base/jsonr.h"
#include "base/jsonr_internal.h"
#include "tests/jsongen.h"
#include "tests/jsonprune.h"
#include "tests/testutil.h"

#define FLAGS (JSON_DECODE_ANY | JSON_ALLOW_NUL)

/* Compact dump of v, or "<null>". Caller frees. */
static char *dump(const json_t *v)
{
    char *s = v != NULL ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("<null>");

    ck_assert_ptr_nonnull(s);
    return s;
}

/* A keep list that names itself: "a" and "" kept with its rule again, "Z" whole, "0"
 * with test_names (its other members kept as null). The random documents' keys are
 * random strings of a few pieces, "a", "Z" and "0" among them. */
static const struct jsonr_keep test_keep[6];
static const struct jsonr_keep test_names[] = {
    {"a", test_keep},
    {"Z", NULL},
    {NULL, JSONR_KEEP_NAMES},
};
static const struct jsonr_keep test_keep[6] = {
    {"a", test_keep},   {"", test_keep},   {"Z", NULL},
    {"\xc3\xa9", NULL}, {"0", test_names}, {NULL, NULL},
};

/* The kept reader on the n bytes at body, against the whole one (fast) and json_loadb (want). */
static void check_kept(const char *body, size_t n, const json_t *fast, const json_t *want,
                       const char *name)
{
    json_t *kept = jsonr_fast_kept(body, n, test_keep);
    json_error_t e;
    struct jsonr_scan scan;
    json_t *loaded;

    /* with the caller's scan, as admission_handle reads a review */
    jsonr_scan_body(body, n, &scan);
    loaded = jsonr_loadb_kept(body, n, test_keep, &scan, &e);

    ck_assert_msg((kept != NULL) == (fast != NULL), "%s: the kept reader %s where the whole one %s",
                  name, kept != NULL ? "built" : "declined", fast != NULL ? "built" : "declined");
    if (kept != NULL) {
        json_t *pruned = jsonprune(want, test_keep);
        char *a = dump(kept);
        char *b = dump(pruned);

        ck_assert_msg(strcmp(a, b) == 0, "%s:\n kept: %s\n pruned: %s", name, a, b);
        ck_assert(json_equal(loaded, kept));
        free(a);
        free(b);
        json_decref(pruned);
    } else {
        /* declined: jansson's whole tree, or its error */
        ck_assert_msg((loaded == NULL) == (want == NULL),
                      "%s: jsonr_loadb_kept and json_loadb disagree", name);
        ck_assert(loaded == NULL || json_equal(loaded, want));
    }
    json_decref(kept);
    json_decref(loaded);
}

/*
 * jsmn read in steps (jsonr.h, JSONR_STEP) makes the tokens of one call, or stops
 * (JSMN_ERROR_INVAL) on a body the reader declines with one call's tokens too: nested
 * too deep, or not JSON in a way that makes jsmn count deeper (`[[]:[`).
 */
static void check_steps(const char *body, size_t n, const char *name)
{
    size_t whole_tokens;
    size_t stepped_tokens;
    json_t *one_call;
    int whole;
    int stepped;

    if (n == 0 || memchr(body, '\0', n) != NULL || n > JSONR_STEPPED_MAX)
        return;
    whole = jsonr_tokenize(body, n, false, &whole_tokens);
    stepped = jsonr_tokenize(body, n, true, &stepped_tokens);
    if (stepped == whole && stepped_tokens == whole_tokens)
        return;
    ck_assert_msg(stepped == -2 /* JSMN_ERROR_INVAL */,
                  "%s: jsmn in steps says %d (%zu tokens), in one call %d (%zu tokens)", name,
                  stepped, stepped_tokens, whole, whole_tokens);
    one_call = jsonr_fast_whole(body, n);
    ck_assert_msg(one_call == NULL,
                  "%s: jsmn in steps stopped where one call's tokens build a tree", name);
}

/* The document (jsonr_doc_read) declines where the fast path does, its root's tree
 * (jsonr_doc_value) is json_loadb's, and its kept tree (jsonr_doc_value_kept) the kept
 * reader's. */
static void check_doc(const char *body, size_t n, const json_t *fast, const json_t *want,
                      const char *name)
{
    struct jsonr_doc *doc = jsonr_doc_read(body, n, NULL);

    ck_assert_msg((doc != NULL) == (fast != NULL), "%s: the document %s where the fast path %s",
                  name, doc != NULL ? "was read" : "declined", fast != NULL ? "built" : "declined");
    if (doc != NULL) {
        json_t *tree = jsonr_doc_value(doc, 0);
        json_t *kept = jsonr_doc_value_kept(doc, 0, test_keep);
        json_t *fast_kept = jsonr_fast_kept(body, n, test_keep);
        char *a = dump(tree);
        char *b = dump(want);
        char *c = dump(kept);
        char *k = dump(fast_kept);

        ck_assert_msg(strcmp(a, b) == 0, "%s:\n document: %s\n json_loadb: %s", name, a, b);
        ck_assert_msg(strcmp(c, k) == 0, "%s:\n document kept: %s\n fast kept: %s", name, c, k);
        free(a);
        free(b);
        free(c);
        free(k);
        json_decref(fast_kept);
        json_decref(kept);
        json_decref(tree);
    }
    jsonr_doc_free(doc);
}

/*
 * The property for n bytes at body. @return whether the fast path built the tree.
 * name labels failures.
 */
static bool check_same(const char *body, size_t n, const char *name)
{
    json_error_t e1;
    json_error_t e2;
    json_t *fast = jsonr_fast(body, n);
    json_t *want = json_loadb(body, n, FLAGS, &e1);
    json_t *got = jsonr_loadb(body, n, &e2);
    bool built = fast != NULL;

    if (fast != NULL) {
        char *a = dump(fast);
        char *b = dump(want);

        ck_assert_msg(want != NULL, "%s: fast path built %s where jansson says %s", name, a,
                      e1.text);
        ck_assert_msg(strcmp(a, b) == 0, "%s:\n fast: %s\n json_loadb: %s", name, a, b);
        ck_assert(json_equal(fast, want));
        free(a);
        free(b);
    }
    ck_assert_msg((got == NULL) == (want == NULL), "%s: jsonr_loadb and json_loadb disagree", name);
    check_kept(body, n, fast, want, name);
    check_doc(body, n, fast, want, name);
    check_steps(body, n, name);
    if (got == NULL) {
        ck_assert_str_eq(e2.text, e1.text);
        ck_assert_int_eq(e2.line, e1.line);
        ck_assert_int_eq(e2.column, e1.column);
    } else {
        char *a = dump(got);
        char *b = dump(want);

        ck_assert_str_eq(a, b);
        free(a);
        free(b);
    }
    json_decref(fast);
    json_decref(want);
    json_decref(got);
    return built;
}

/* ---- every corpus and fixture ---------------------------------------------- */

struct files {
    size_t total;
    size_t fast;
};

static void check_glob(const char *pattern, struct files *f)
{
    glob_t g;

    ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        FILE *fp = fopen(g.gl_pathv[i], "rb");
        char buf[1 << 17];
        size_t n;

        ck_assert_ptr_nonnull(fp);
        n = fread(buf, 1, sizeof(buf), fp);
        fclose(fp);
        ck_assert_uint_lt(n, sizeof(buf));
        f->total++;
        f->fast += check_same(buf, n, g.gl_pathv[i]) ? 1 : 0;
    }
    globfree(&g);
}

START_TEST(test_admission_seeds)
{
    struct files f = {0};

    check_glob("tests/fuzz/corpus/admission/*", &f);
    ck_assert_uint_eq(f.total, 50);
    /* every one but not-json (invalid JSON: jansson's error) */
    ck_assert_uint_eq(f.fast, 49);
}
END_TEST

START_TEST(test_other_corpora)
{
    struct files f = {0};

    check_glob("tests/fuzz/regressions/*/*", &f);
    check_glob("tests/fuzz/corpus/watch/*", &f);
    check_glob("tests/fuzz/corpus/patch/*", &f);
    check_glob("tests/fixtures/*/*.json", &f);
    ck_assert_uint_gt(f.total, 10);
    ck_assert_uint_gt(f.fast, 0);
}
END_TEST

/* ---- fixed inputs ------------------------------------------------------------ */

/* Read on the fast path, with the tree's compact dump. */
static const struct {
    const char *in;
    const char *tree;
} accepted[] = {
    {"{}", "{}"},
    {" \t\r\n[ ] ", "[]"},
    {"{\"a\":1,\"b\":[true,false,null],\"c\":{}}", "{\"a\":1,\"b\":[true,false,null],\"c\":{}}"},
    {"{ \"a\" : 1 , \"b\" :\n[ 1 , 2 ] }", "{\"a\":1,\"b\":[1,2]}"},
    /* a repeated key keeps its first place and takes the last value */
    {"{\"a\":1,\"b\":2,\"a\":3}", "{\"a\":3,\"b\":2}"},
    {"[-9223372036854775808,9223372036854775807,0,-0,10]",
     "[-9223372036854775808,9223372036854775807,0,0,10]"},
    /* 18 digits are summed by the reader, 19 read by strtoll */
    {"[999999999999999999,-999999999999999999,1000000000000000000,-1000000000000000000,"
     "123456789012345678,-7]",
     "[999999999999999999,-999999999999999999,1000000000000000000,-1000000000000000000,"
     "123456789012345678,-7]"},
    {"[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]", "[\"\\\"\\\\/\\b\\f\\n\\r\\t\"]"},
    {"\"\\u00e9\\u20AC\\ud83d\\ude00\"", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""},
    {"\"a\\u0000b\"", "\"a\\u0000b\""},
    {"\"\xc3\xa9\xf4\x8f\xbf\xbf\"", "\"\xc3\xa9\xf4\x8f\xbf\xbf\""},
    /* escaped keys of nested objects, each decoded while the inner ones are read */
    {"{\"k\\u00e9\":{\"x\\n\":\"v\\u00e9\",\"y\\t\":{\"\\\"\":\"\\\\\"}},\"z\\/\":\"\\u0041\"}",
     "{\"k\xc3\xa9\":{\"x\\n\":\"v\xc3\xa9\",\"y\\t\":{\"\\\"\":\"\\\\\"}},\"z/\":\"A\"}"},
    {"[[[[[]]]],{\"\":\"\"}]", "[[[[[]]]],{\"\":\"\"}]"},
    /* escapes at the very end of the body */
    {"\"\\\\\"", "\"\\\\\""},
    {"\"\\u0041\"", "\"A\""},
    {"\"\\\"\"", "\"\\\"\""},
    /* a repeated key, spelt with and without escapes, around nested values */
    {"{\"a\":1,\"\\u0061\":{\"b\":2},\"c\":3,\"a\":[4]}", "{\"a\":[4],\"c\":3}"},
    /* escaped keys three deep, each held in the scratch while the next is decoded */
    {"{\"\\\\\":{\"\\\\\":{\"\\\\\":\"\\\\\\\\\"}}}",
     "{\"\\\\\":{\"\\\\\":{\"\\\\\":\"\\\\\\\\\"}}}"},
    /* a top-level scalar that jsmn ends at whitespace */
    {"1 ", "1"},
    {"-9223372036854775808\n", "-9223372036854775808"},
    {"true\t", "true"},
    /* short strings read a word at a time with the body's next bytes (string_content) */
    {"[\"a\\u0041\",\"padding-padding\"]", "[\"aA\",\"padding-padding\"]"},
    {"[\"\xc3\xa9\",\"padding-padding\"]", "[\"\xc3\xa9\",\"padding-padding\"]"},
    {"{\"k\\\"\":1,\"padding\":\"padding\"}", "{\"k\\\"\":1,\"padding\":\"padding\"}"},
    {"null\r", "null"},
    {" \"x\" ", "\"x\""},
};

START_TEST(test_accepted)
{
    const char *in = accepted[_i].in;
    json_t *v = jsonr_fast(in, strlen(in));
    char *got = dump(v);

    ck_assert_msg(v != NULL, "declined: %s", in);
    ck_assert_str_eq(got, accepted[_i].tree);
    ck_assert(check_same(in, strlen(in), in));
    free(got);
    json_decref(v);
}
END_TEST

/* Left to jansson: invalid JSON (jansson's error stands) and what the fast path does
 * not decide (reals, big integers, deep nesting, NUL in a key). */
static const char *const declined[] = {
    "",
    "   ",
    "[1 2]",
    "{\"a\" 1}",
    "{\"a\":1,}",
    "{\"a\":1 \"b\":2}",
    "[,1]",
    "[1,]",
    "[1,,2]",
    "{\"a\":1}}",
    "{} {}",
    "[1]x",
    "{\"a\":[}",
    "{\"a\":1:2}",
    "{1:2}",
    "{\"a\"}",
    "{\"a\":}",
    "[-]",
    "[01]",
    "[1.]",
    "[.5]",
    "[+1]",
    "[1.5]",
    "[1e5]",
    "[-0.0]",
    "[9223372036854775808]",
    "[-9223372036854775809]",
    "[123456789012345678901234567890]",
    "[tru]",
    "[nul]",
    "[truex]",
    "[True]",
    "\"\\ud800\"",
    "\"\\ud800x\"",
    "\"\\ud800\\u0041\"",
    "\"\\udc00\"",
    "\"\\x\"",
    "\"\\u12G4\"",
    "{\"\\u0000\":1}",
    "{\"a\\u0000\":1}",
    "[\"a\tb\"]",
    "[\"\x01\"]",
    /* a control character or invalid UTF-8 in a short string with the body going on */
    "[\"\x01\",\"padding-padding\"]",
    "[\"ab\xff\",\"padding-padding\"]",
    "{\"k\x1f\":1,\"padding\":\"padding\"}",
    "[\"abcdefgh\x7f\xff\",\"padding-padding\"]",
    "[\"\xff\"]",
    "[\"\xc0\x80\"]",
    "[\"\xed\xa0\x80\"]",
    "[\"\xf4\x90\x80\x80\"]",
    "[\"\xc3\"]",
    "{\"\xff\":1}",
    "\xef\xbb\xbf{}",
    "[",
    "{\"a\":\"b",
    "]",
    "5",
    "'a'",
    "[\"a\"\"b\"]",
    /* whitespace jansson does not accept */
    "[1,\f2]",
    "[1,\v2]",
    "[\xc2\xa0"
    "1]",
    "\f[1]",
    "[1]\v",
    /* separators jsmn does not check */
    "[\"a\"1]",
    "[1\"a\"]",
    "[true\"x\"]",
    "[[1]2]",
    "[1:2]",
    "{\"a\"::1}",
    "{\"a\":1,:2}",
    "{\"a\":{\"b\":1}\"c\":2}",
    "{\"a\":true:1}",
    "\"a\" \"b\"",
    "\"a\",",
    "\"a\":",
    "1,",
    "1",
    /* strings cut at the end of the body */
    "\"\\u00",
    "\"abc\\",
    "[\"\\u00\"]",
    /* UTF-8 split by an escape; a surrogate pair split by an escaped backslash */
    "[\"\xc3\\u00a9\"]",
    "[\"\\u00e9\xa9\"]",
    "[\"\\ud83d\\\\ude00\"]",
    "{\"\\udc00\":1}",
    /* numbers */
    "[00]",
    "[-00]",
    "[--1]",
    "[1-]",
    "[0x1]",
    "[1e]",
    "[nan]",
    "[-0000000000000000000001]",
    "[10000000000000000000]",
};

START_TEST(test_declined)
{
    const char *in = declined[_i];

    ck_assert_msg(jsonr_fast(in, strlen(in)) == NULL, "not declined: %s", in);
    check_same(in, strlen(in), in);
}
END_TEST

/* The document read in place: kinds, members (a repeated key's last value), decoded
 * strings, integers, and walking an object's keys and an array's items. */
START_TEST(test_doc_navigation)
{
    static const char body[] = "{\"a\":[1,{\"x\":true},\"s\\u00e9\\n\"],\"b\":null,\"a\":{"
                               "\"k\\\"\":-42,\"e\":[]},\"f\":false}";
    struct jsonr_doc *d = jsonr_doc_read(body, sizeof(body) - 1, NULL);
    const char *s;
    size_t n;
    long long number = 0;
    int a0;
    int a;
    int k;
    int item;

    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(jsonr_doc_kind(d, 0), JSONR_OBJECT);
    ck_assert_uint_eq(jsonr_doc_size(d, 0), 4);
    /* "a" twice: the member is the last value, the first one is still walked */
    a = jsonr_doc_member(d, 0, "a");
    ck_assert_int_eq(jsonr_doc_kind(d, a), JSONR_OBJECT);
    ck_assert(jsonr_doc_integer(d, jsonr_doc_member(d, a, "k\""), &number));
    ck_assert_int_eq(number, -42);
    ck_assert_int_eq(jsonr_doc_kind(d, jsonr_doc_member(d, a, "e")), JSONR_ARRAY);
    ck_assert_int_eq(jsonr_doc_first(d, jsonr_doc_member(d, a, "e")), -1);
    ck_assert_int_eq(jsonr_doc_kind(d, jsonr_doc_member(d, 0, "b")), JSONR_NULL);
    ck_assert_int_eq(jsonr_doc_kind(d, jsonr_doc_member(d, 0, "f")), JSONR_FALSE);
    ck_assert_int_eq(jsonr_doc_member(d, 0, "c"), -1);
    ck_assert_int_eq(jsonr_doc_member(d, a, "a"), -1);
    /* places in json_loadb's order: the repeated "a" at its first place */
    ck_assert_int_eq(jsonr_doc_place(d, 0, "a"), 0);
    ck_assert_int_eq(jsonr_doc_place(d, 0, "b"), 1);
    ck_assert_int_eq(jsonr_doc_place(d, 0, "f"), 2);
    ck_assert_int_eq(jsonr_doc_place(d, 0, "c"), -1);
    ck_assert_int_eq(jsonr_doc_place(d, a, "e"), 1);
    ck_assert_int_eq(jsonr_doc_place(d, jsonr_doc_member(d, 0, "b"), "e"), -1); /* no object */
    /* the keys in text order */
    k = jsonr_doc_first(d, 0);
    ck_assert(jsonr_doc_string(d, k, &s, &n));
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(s[0], 'a');
    a0 = k + 1;
    k = jsonr_doc_after(d, k + 1);
    ck_assert(jsonr_doc_string(d, k, &s, &n) && n == 1 && s[0] == 'b');
    k = jsonr_doc_after(d, k + 1);
    ck_assert(jsonr_doc_string(d, k, &s, &n) && n == 1 && s[0] == 'a');
    ck_assert_int_eq(k + 1, a);
    k = jsonr_doc_after(d, k + 1);
    ck_assert(jsonr_doc_string(d, k, &s, &n) && n == 1 && s[0] == 'f');
    ck_assert_int_eq(jsonr_doc_after(d, k + 1), 18); /* the token count: past the end */
    /* the first "a": its items, the escaped string decoded */
    ck_assert_uint_eq(jsonr_doc_size(d, a0), 3);
    item = jsonr_doc_first(d, a0);
    ck_assert(jsonr_doc_integer(d, item, &number));
    ck_assert_int_eq(number, 1);
    ck_assert(!jsonr_doc_string(d, item, &s, &n));
    item = jsonr_doc_after(d, item);
    ck_assert_int_eq(jsonr_doc_kind(d, jsonr_doc_member(d, item, "x")), JSONR_TRUE);
    item = jsonr_doc_after(d, item);
    ck_assert(jsonr_doc_string(d, item, &s, &n));
    ck_assert_uint_eq(n, 4);
    ck_assert_int_eq(memcmp(s, "s\xc3\xa9\n", 4), 0);
    ck_assert(!jsonr_doc_integer(d, item, &number));
    /* no value */
    ck_assert_int_eq(jsonr_doc_kind(d, -1), JSONR_NONE);
    ck_assert_int_eq(jsonr_doc_member(d, -1, "a"), -1);
    ck_assert_ptr_null(jsonr_doc_value(d, -1));
    jsonr_doc_free(d);
    /* what the fast path declines, the document declines */
    ck_assert_ptr_null(jsonr_doc_read("[1.5]", 5, NULL));
    ck_assert_ptr_null(jsonr_doc_read("{\"a\" 1}", 7, NULL));
    ck_assert_ptr_null(jsonr_doc_read("", 0, NULL));
}
END_TEST

/* Places in an object too large to compare each key with those before it (sorted keys,
 * jsonr.c places_sorted): each key's place is its place in json_loadb's tree, a
 * repeated key at its first place. */
START_TEST(test_doc_places_of_a_large_object)
{
    struct buf b;
    struct jsonr_doc *d;
    json_t *tree;
    const char *key;
    json_t *value;
    long want = 0;

    buf_init(&b, BUF_NO_MAX);
    ck_assert_int_eq(buf_append_str(&b, "{"), 0);
    for (int i = 0; i < 300; i++) {
        /* every seventh key repeats one written before it */
        int k = i % 7 == 6 ? i - 6 : i;

        ck_assert_int_eq(buf_appendf(&b, "%s\"k%d\":%d", i > 0 ? "," : "", k, i), 0);
    }
    ck_assert_int_eq(buf_append_str(&b, "}"), 0);
    d = jsonr_doc_read(b.data, b.len, NULL);
    tree = json_loadb(b.data, b.len, FLAGS, NULL);
    ck_assert_ptr_nonnull(d);
    ck_assert_ptr_nonnull(tree);
    json_object_foreach(tree, key, value) {
        ck_assert_int_eq(jsonr_doc_place(d, 0, key), want);
        want++;
    }
    ck_assert_int_eq(want, 300 - 300 / 7);
    ck_assert_int_eq(jsonr_doc_place(d, 0, "k300"), -1);
    json_decref(tree);
    jsonr_doc_free(d);
    buf_dispose(&b);
}
END_TEST

START_TEST(test_nul_byte_declined)
{
    static const char in[] = "{\"a\":\"b\0\"}";

    ck_assert_ptr_null(jsonr_fast(in, sizeof(in) - 1));
    check_same(in, sizeof(in) - 1, "raw NUL");
}
END_TEST

START_TEST(test_depth)
{
    char buf[2 * (JSONR_MAX_DEPTH + 2) + 1];
    size_t n;

    /* JSONR_MAX_DEPTH + 1 nested arrays: read fast; one more: left to jansson. */
    for (int d = JSONR_MAX_DEPTH + 1; d <= JSONR_MAX_DEPTH + 2; d++) {
        n = 0;
        for (int i = 0; i < d; i++)
            buf[n++] = '[';
        for (int i = 0; i < d; i++)
            buf[n++] = ']';
        ck_assert_int_eq(check_same(buf, n, "nested"), d == JSONR_MAX_DEPTH + 1);
    }
}
END_TEST

/* jsmn closes a bracket by walking up from the last token to the open container, one
 * step per level: `[[[...]]]` costs it the square of its depth (half a MiB deep: over ten minutes).
 * Bodies nested beyond the reader's depth are declined before jsmn reads them, so these
 * run in a few milliseconds; unclosed, jsmn's tokens (one per byte) would also take 20
 * bytes per byte of body. A timeout here is the bug back. */
START_TEST(test_deep_body)
{
    size_t n = JSONR_MAX_LEN;
    char *buf = malloc(n);

    ck_assert_ptr_nonnull(buf);
    memset(buf, '[', n / 2);
    memset(buf + n / 2, ']', n / 2);
    ck_assert_ptr_null(jsonr_fast(buf, n));
    check_same(buf, n, "half a MiB deep");
    memset(buf, '[', n);
    ck_assert_ptr_null(jsonr_fast(buf, n));
    check_same(buf, n, "a MiB of [");
    /* deep nesting after a string, and after a primitive holding a quote (jsmn reads
     * `1"` as one primitive, so the quote opens no string) */
    memcpy(buf, "[\"[\",1\"]", 8);
    memset(buf + 8, '[', (n - 8) / 2);
    memset(buf + 8 + (n - 8) / 2, ']', (n - 8) / 2);
    ck_assert_ptr_null(jsonr_fast(buf, n));
    check_same(buf, n, "deep after a quote in a primitive");
    free(buf);
}
END_TEST

/* A string, a primitive or an escape cut by a step's end is read whole in the next
 * step: bodies whose tokens straddle the first and second steps' ends at every offset
 * read as in one call, and build jansson's tree. */
START_TEST(test_stepped_cuts)
{
    static const char *const tails[] = {
        "\"k\":\"\\u00e9\\n\\\\\\\"x\",\"n\":-12345,\"t\":true,\"f\":false,\"z\":null",
        "\"\\ud83d\\ude00\":[1,2,{\"\\u00e9\":[\"a\\\\\"]}],\"\xc3\xa9t\xc3\xa9\":\"\\/\"",
        "\"deep\":[[[[[[[[[[{\"a\":[[[[1]]]]}]]]]]]]]]]",
        "\"bad\":1.5e3",       /* a real: declined, jansson reads it */
        "\"bad\":\"\\ud800\"", /* an unpaired surrogate: declined */
        "\"bad\":tru",         /* not JSON */
    };
    char buf[2 * JSONR_STEP + 256];

    for (size_t t = 0; t < sizeof(tails) / sizeof(tails[0]); t++) {
        for (size_t pad = JSONR_STEP - 80; pad <= JSONR_STEP + 8; pad++) {
            for (int second = 0; second < 2; second++) {
                /* {"p":"<pad>","q":"<pad2>",<tail>}: the tail cut by the first step's end,
                 * or (second) by the second's */
                size_t pad2 = second ? JSONR_STEP - 13 : 0;
                int n = snprintf(buf, sizeof(buf), "{\"p\":\"%0*d\",\"q\":\"%0*d\",%s}",
                                 (int)pad - 8, 0, (int)pad2, 0, tails[t]);
                char name[64];

                ck_assert(n > 0 && (size_t)n < sizeof(buf));
                snprintf(name, sizeof(name), "tail %zu at %zu (%s step)", t, pad,
                         second ? "second" : "first");
                ck_assert_int_eq(check_same(buf, (size_t)n, name), t < 3);
            }
        }
    }
}
END_TEST

/* jsmn takes a ':' after any token and makes the token before it the parent of what
 * follows: then a container it has closed is among the parents, and only the open ones
 * count (found by a review: counting all of them stopped these bodies, 33 deep at most,
 * where one call reads them). Not JSON: the reader declines them either way. */
START_TEST(test_stepped_colon)
{
    char buf[2 * JSONR_STEP];
    size_t tokens_whole;
    size_t tokens_stepped;

    for (int arrays = 1; arrays <= 3; arrays++) {
        size_t n = 0;

        buf[n++] = '[';
        for (int i = 0; i < JSONR_MAX_DEPTH; i++)
            buf[n++] = '[';
        for (int i = 0; i < JSONR_MAX_DEPTH; i++)
            buf[n++] = ']';
        buf[n++] = ':';
        for (int i = 0; i < arrays; i++)
            buf[n++] = '[';
        memset(buf + n, ' ', JSONR_STEP + 100 - n);
        n = JSONR_STEP + 100;
        for (int i = 0; i <= arrays; i++)
            buf[n++] = ']';
        ck_assert_int_eq(jsonr_tokenize(buf, n, true, &tokens_stepped),
                         jsonr_tokenize(buf, n, false, &tokens_whole));
        ck_assert_uint_eq(tokens_stepped, tokens_whole);
        ck_assert(!check_same(buf, n, "a colon after a closed array"));
    }
}
END_TEST

/* A body too deep is stopped within a step of where it went too deep: jsmn, which
 * walks up a level per closing bracket, never reads the rest (`[` x 8192 `]` x 8192 in
 * one call: 33 million steps). Just deep enough after a long string, it is read. */
START_TEST(test_stepped_deep)
{
    size_t n = JSONR_STEPPED_MAX;
    char *buf = malloc(n);
    size_t tokens;
    size_t at;

    ck_assert_ptr_nonnull(buf);
    memset(buf, '[', n / 2);
    memset(buf + n / 2, ']', n / 2);
    ck_assert_int_eq(jsonr_tokenize(buf, n, true, &tokens), -2 /* JSMN_ERROR_INVAL */);
    ck_assert_uint_le(tokens, JSONR_STEP);
    ck_assert_ptr_null(jsonr_fast(buf, n));
    /* the same depth after a string three steps long: stopped in the step after it */
    memcpy(buf, "[\"", 2);
    memset(buf + 2, 'a', 3 * JSONR_STEP);
    memcpy(buf + 2 + 3 * JSONR_STEP, "\",", 2);
    ck_assert_int_eq(jsonr_tokenize(buf, n, true, &tokens), -2);
    ck_assert_uint_le(tokens, 2 + JSONR_STEP);
    /* JSONR_MAX_DEPTH + 1 deep after it: read; one more: left to jansson */
    for (int d = JSONR_MAX_DEPTH; d <= JSONR_MAX_DEPTH + 1; d++) {
        at = 4 + 3 * JSONR_STEP;
        for (int i = 0; i < d; i++)
            buf[at++] = '[';
        for (int i = 0; i <= d; i++)
            buf[at++] = ']';
        ck_assert_int_eq(check_same(buf, at, "deep after a long string"), d == JSONR_MAX_DEPTH);
    }
    free(buf);
}
END_TEST

/* jsmn's token array starts at a quarter of the body's length and grows when jsmn
 * asks (it goes on where it stopped), up to the most tokens a body the reader accepts
 * can have: (len + 1) / 2, as `[1,1,...,1]` has. Arrays of k items of each kind, so
 * that jsmn runs out of tokens at a primitive, a string, a bracket, a key, and
 * `[1,...]` at exactly that bound, are all read fast. */
START_TEST(test_token_bound)
{
    static const char *const items[] = {"1", "\"\"", "[]", "{}", "{\"k\":[1]}", "\"\\n\""};
    char *buf = malloc(16 * 700 + 2);

    ck_assert_ptr_nonnull(buf);
    for (size_t kind = 0; kind < sizeof(items) / sizeof(items[0]); kind++) {
        for (size_t k = 1; k <= 700; k += kind == 0 ? 1 : 7) {
            size_t n = 0;
            char name[48];

            buf[n++] = '[';
            for (size_t i = 0; i < k; i++) {
                if (i > 0)
                    buf[n++] = ',';
                memcpy(buf + n, items[kind], strlen(items[kind]));
                n += strlen(items[kind]);
            }
            buf[n++] = ']';
            snprintf(name, sizeof(name), "%zu of %s", k, items[kind]);
            ck_assert_msg(check_same(buf, n, name), "%s declined", name);
        }
    }
    free(buf);
}
END_TEST

START_TEST(test_length_limit)
{
    /* ["aaa...a"] of JSONR_MAX_LEN bytes: read fast; one byte more: left to jansson. */
    size_t n = JSONR_MAX_LEN + 1;
    char *buf = malloc(n);
    json_t *v;

    ck_assert_ptr_nonnull(buf);
    for (size_t len = JSONR_MAX_LEN; len <= n; len++) {
        buf[0] = '[';
        buf[1] = '"';
        memset(buf + 2, 'a', len - 4);
        buf[len - 2] = '"';
        buf[len - 1] = ']';
        v = jsonr_fast(buf, len);
        ck_assert_int_eq(v != NULL, len == JSONR_MAX_LEN);
        json_decref(v);
        v = jsonr_loadb(buf, len, NULL);
        ck_assert_uint_eq(json_string_length(json_array_get(v, 0)), len - 4);
        json_decref(v);
    }
    free(buf);
}
END_TEST

/* The closing quote: the first not after an odd run of backslashes; len when none. */
START_TEST(test_string_end)
{
    static const struct {
        const char *s;
        size_t from;
        size_t end;
    } cases[] = {
        {"abc\"", 0, 3},   {"\"", 0, 0},           {"a\\\"b\"", 0, 4},
        {"a\\\\\"", 0, 3}, {"a\\\\\\\"x\"", 0, 6}, {"abc", 0, 3},
        {"x\"ab\"", 2, 4}, {"\\\"", 1, 1}, /* the run counts from `from` only */
        {"a\\", 0, 2},
    };

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        ck_assert_msg(jsonr_string_end(cases[k].s, strlen(cases[k].s), cases[k].from)
                          == cases[k].end,
                      "case %zu: %s", k, cases[k].s);
}
END_TEST

/* The definition, byte by byte: an escape takes the next byte; the first other quote ends. */
static size_t string_end_reference(const char *js, size_t len, size_t from)
{
    for (size_t i = from; i < len; i++) {
        if (js[i] == '"')
            return i;
        if (js[i] == '\\')
            i++;
    }
    return len;
}

/* Strings of quotes, backslashes and letters, up to 95 bytes, from every start:
 * jsonr_string_end agrees with the definition. */
START_TEST(test_string_end_random)
{
    static const char alphabet[] = "a\\\\\"xyz";
    struct jsongen g = {.state = 0x2545f4914f6cdd1dULL, .reals = false};
    char s[96];

    for (int iter = 0; iter < 20000; iter++) {
        size_t n = jsongen_rnd(&g, sizeof(s));

        for (size_t k = 0; k < n; k++)
            s[k] = alphabet[jsongen_rnd(&g, sizeof(alphabet) - 1)];
        for (size_t from = 0; from <= n; from++)
            ck_assert_msg(jsonr_string_end(s, n, from) == string_end_reference(s, n, from),
                          "%.*s from %zu: %zu, want %zu", (int)n, s, from,
                          jsonr_string_end(s, n, from), string_end_reference(s, n, from));
    }
    ck_assert_uint_eq(jsonr_string_end("ab", 2, 3), 2); /* from past the end: nothing read */
}
END_TEST

/* The kept reader on fixed inputs (test_keep): the exact tree, or declined ("" here)
 * because a member left out holds what the whole reader declines on. */
static const struct {
    const char *in;
    const char *tree;
} kept_cases[] = {
    {"{\"a\":{\"a\":1,\"b\":2},\"b\":{\"Z\":3},\"Z\":{\"q\":[1]},\"\":[{\"a\":1,\"c\":2},3]}",
     "{\"a\":{\"a\":1},\"Z\":{\"q\":[1]},\"\":[{\"a\":1},3]}"},
    /* a repeated kept key: its first place, its last value; a left-out one in between */
    {"{\"a\":[1],\"x\":{\"y\":[true,null,\"s\\n\"]},\"a\":{\"Z\":\"\\u00e9\"}}",
     "{\"a\":{\"Z\":\"\xc3\xa9\"}}"},
    {"[{\"b\":1},{\"a\":2}]", "[{},{\"a\":2}]"},
    /* names kept: other members null, checked all the same; "a" and "Z" as named */
    {"{\"0\":{\"p\":{\"q\":[1]},\"a\":{\"a\":1,\"b\":2},\"Z\":{\"q\":1},\"p\":\"s\"},\"0\":{}}",
     "{\"0\":{}}"},
    {"{\"0\":{\"p\":{\"q\":[1]},\"a\":{\"a\":1,\"b\":2},\"Z\":{\"q\":1},\"r\":\"s\"}}",
     "{\"0\":{\"p\":null,\"a\":{\"a\":1},\"Z\":{\"q\":1},\"r\":null}}"},
    {"{\"0\":[{\"p\":1},2]}", "{\"0\":[{\"p\":null},2]}"},
    {"{\"0\":{\"p\":1.5}}", ""},
    {"{\"0\":{\"\xff\":1}}", ""},
    {"{\"b\":1.5}", ""},
    {"{\"b\":\"\xff\"}", ""},
    {"{\"b\":{\"\xff\":1}}", ""},
    {"{\"b\":{\"\\u0000\":1}}", ""},
    {"{\"b\":\"\\ud800\"}", ""},
    {"{\"b\":99999999999999999999}", ""},
    {"{\"b\":[1 2]}", ""},
    {"{\"b\":\"\x01\"}", ""},
    /* strings long enough to be read eight bytes at a time: each class of byte that
     * needs a closer look, in a word of its own, kept and left out */
    {"{\"a\":\"abcdefgh\x1fijklmnop\"}", ""},
    {"{\"b\":\"abcdefghijklmno\x1fpqrstuvw\"}", ""},
    {"{\"Z\":\"abcdefgh\x7fijklmnop\"}", "{\"Z\":\"abcdefgh\x7fijklmnop\"}"},
    {"{\"Z\":\"abcdefghijklmnop\\u0041rstuvwxyz\"}", "{\"Z\":\"abcdefghijklmnopArstuvwxyz\"}"},
    {"{\"Z\":\"abcdefgh\xc3\xa9ijklmnopqrstuvwx\\\\\"}",
     "{\"Z\":\"abcdefgh\xc3\xa9ijklmnopqrstuvwx\\\\\"}"},
    {"{\"b\":\"abcdefghijklmnop\xc3qrstuvwx\"}", ""},
    {"{\"Z\":\"abcdefghijklmnop\xc3qrstuvwx\"}", ""},
};

START_TEST(test_kept)
{
    const char *in = kept_cases[_i].in;
    json_t *v = jsonr_fast_kept(in, strlen(in), test_keep);
    char *got = v != NULL ? dump(v) : strdup("");

    ck_assert_msg(strcmp(got, kept_cases[_i].tree) == 0, "%s: got %s, want %s", in, got,
                  kept_cases[_i].tree);
    check_same(in, strlen(in), in);
    free(got);
    json_decref(v);
}
END_TEST

/* jsonr_scan_body: containers outside strings (inside primitives too), depth as jsmn lexes. */
START_TEST(test_scan_body)
{
    static const struct {
        const char *s;
        size_t containers;
    } cases[] = {
        {"{}", 1},
        {"{\"a\":[1,{\"b\":\"[{\\\"[\"}],\"c\":[]}", 4},
        {"[tru[e,n{ull]", 3}, /* invalid JSON: brackets in a primitive count */
        {"\"{[\"", 0},
        {"[\"\\\\\",[]]", 2},
        {"", 0},
    };
    struct jsonr_scan sc;
    char deep[2 * (JSONR_MAX_DEPTH + 2) + 1];
    size_t n = 0;

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        jsonr_scan_body(cases[k].s, strlen(cases[k].s), &sc);
        ck_assert_msg(sc.containers == cases[k].containers, "case %zu: %s: %zu containers", k,
                      cases[k].s, sc.containers);
        ck_assert(sc.shallow);
    }
    /* JSONR_MAX_DEPTH + 1 deep is shallow, one more is not; closing brackets do not undo it */
    for (int d = 0; d < JSONR_MAX_DEPTH + 1; d++)
        deep[n++] = '[';
    for (int d = 0; d < JSONR_MAX_DEPTH + 1; d++)
        deep[n++] = ']';
    jsonr_scan_body(deep, n, &sc);
    ck_assert(sc.shallow);
    ck_assert_uint_eq(sc.containers, JSONR_MAX_DEPTH + 1);
    memmove(deep + 1, deep, n);
    deep[0] = '[';
    deep[++n] = ']';
    n++;
    jsonr_scan_body(deep, n, &sc);
    ck_assert(!sc.shallow);
    ck_assert_ptr_null(jsonr_fast(deep, n));
    /* declined by the fast path, read by jansson (its own limit is 2048) */
    {
        json_t *v = jsonr_loadb_kept(deep, n, NULL, &sc, NULL);

        ck_assert_ptr_nonnull(v);
        json_decref(v);
    }
}
END_TEST

/* jsonr_scan_body as first written, compare by compare: the oracle of its table. */
static void scan_reference(const char *js, size_t len, struct jsonr_scan *out)
{
    size_t depth = 0;

    out->containers = 0;
    out->shallow = true;
    for (size_t i = 0; i < len; i++) {
        char c = js[i];

        if (c == '[' || c == '{') {
            out->containers++;
            if (++depth > JSONR_MAX_DEPTH + 1)
                out->shallow = false;
        } else if (c == ']' || c == '}') {
            if (depth > 0)
                depth--;
        } else if (c == '"') {
            i = string_end_reference(js, len, i + 1);
        } else if (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n') {
            while (i + 1 < len && (js[i + 1] == '\0' || !strchr("\t\r\n ,]}", js[i + 1]))) {
                i++;
                if (js[i] == '[' || js[i] == '{')
                    out->containers++;
            }
        }
    }
}

/* Documents in jansson's three forms, each with bytes overwritten from the JSON
 * alphabet (and NUL, high bytes): the scan counts what the reference counts. */
START_TEST(test_scan_body_random)
{
    static const size_t forms[] = {JSON_COMPACT, JSON_INDENT(2), JSON_ENSURE_ASCII | JSON_COMPACT};
    static const char bytes[] = "{}[],:\"\\ \t\r\nu0123456789etrunlf-+.\x01\xc3\xff";
    struct jsongen g = {.state = 0x853c49e6748fea9bULL, .reals = true};

    for (int iter = 0; iter < 3000; iter++) {
        json_t *v = jsongen_value(&g, 5, true);
        char *text = json_dumps(v, forms[iter % 3] | JSON_ENCODE_ANY);
        size_t n = strlen(text);

        for (int m = 0; m < 6; m++) {
            struct jsonr_scan got;
            struct jsonr_scan want;

            jsonr_scan_body(text, n, &got);
            scan_reference(text, n, &want);
            ck_assert_msg(got.containers == want.containers && got.shallow == want.shallow,
                          "%s: %zu containers, shallow %d; want %zu, %d", text, got.containers,
                          got.shallow, want.containers, want.shallow);
            if (n > 0)
                text[jsongen_rnd(&g, (uint32_t)n)] = bytes[jsongen_rnd(&g, sizeof(bytes))];
        }
        free(text);
        json_decref(v);
    }
}
END_TEST

/* ---- random documents and mutations ----------------------------------------- */

/* Documents jansson writes (compact, indented, ASCII-only with \u escapes) are read
 * on the fast path, to the same tree; each one mutated is read the same by both. */
START_TEST(test_random_documents)
{
    static const size_t forms[] = {JSON_COMPACT, JSON_INDENT(2), JSON_ENSURE_ASCII | JSON_COMPACT};
    static const char bytes[] = "{}[],:\"\\ u0123456789abcdefetrunl-+.\x01\xc3\xa9\xff";
    struct jsongen g = {.state = 0x9e3779b97f4a7c15ULL, .reals = false};

    for (int iter = 0; iter < 2000; iter++) {
        json_t *v = jsongen_value(&g, 4, true);
        char *text = json_dumps(v, forms[iter % 3] | JSON_ENCODE_ANY);
        size_t n = strlen(text);
        char name[48];

        snprintf(name, sizeof(name), "document %d", iter);
        ck_assert_msg(check_same(text, n, name), "%s declined: %s", name, text);
        for (int m = 0; m < 8 && n > 0; m++) {
            char *t = malloc(n + 2);
            size_t at = jsongen_rnd(&g, (uint32_t)n);
            size_t len = n;

            memcpy(t, text, n);
            switch (jsongen_rnd(&g, 3)) {
            case 0: t[at] = bytes[jsongen_rnd(&g, sizeof(bytes) - 1)]; break;
            case 1:
                memmove(t + at, t + at + 1, n - at - 1);
                len--;
                break;
            default:
                memmove(t + at + 1, t + at, n - at);
                t[at] = bytes[jsongen_rnd(&g, sizeof(bytes) - 1)];
                len++;
                break;
            }
            snprintf(name, sizeof(name), "document %d mutation %d", iter, m);
            check_same(t, len, name);
            free(t);
        }
        free(text);
        json_decref(v);
    }
}
END_TEST

static Suite *jsonr_suite(void)
{
    Suite *s = suite_create("jsonr");
    TCase *tf = tcase_create("files");
    TCase *tx = tcase_create("fixed");
    TCase *tr = tcase_create("random");

    tcase_add_test(tf, test_admission_seeds);
    tcase_add_test(tf, test_other_corpora);
    suite_add_tcase(s, tf);
    tcase_add_loop_test(tx, test_accepted, 0, (int)(sizeof(accepted) / sizeof(accepted[0])));
    tcase_add_loop_test(tx, test_declined, 0, (int)(sizeof(declined) / sizeof(declined[0])));
    tcase_add_loop_test(tx, test_kept, 0, (int)(sizeof(kept_cases) / sizeof(kept_cases[0])));
    tcase_add_test(tx, test_doc_navigation);
    tcase_add_test(tx, test_doc_places_of_a_large_object);
    tcase_add_test(tx, test_nul_byte_declined);
    tcase_add_test(tx, test_depth);
    tcase_add_test(tx, test_string_end);
    tcase_add_test(tx, test_string_end_random);
    tcase_add_test(tx, test_scan_body);
    tcase_add_test(tx, test_scan_body_random);
    tcase_add_test(tx, test_deep_body);
    tcase_add_test(tx, test_stepped_cuts);
    tcase_add_test(tx, test_stepped_deep);
    tcase_add_test(tx, test_stepped_colon);
    tcase_add_test(tx, test_token_bound);
    tcase_add_test(tx, test_length_limit);
    /* test_token_bound: 1,200 documents through every reader, seconds under ASan */
    tcase_set_timeout(tx, 60);
    suite_add_tcase(s, tx);
    tcase_add_test(tr, test_random_documents);
    tcase_set_timeout(tr, 60);
    suite_add_tcase(s, tr);
    return s;
}

int main(void)
{
    return tu_run(jsonr_suite());
}
