/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_args.c - the Go-flag argument parser (docs/plugins.md §3.4 rules 1-11, D4),
 * strconv.ParseInt(s, 0, 64) and strconv.ParseBool. Every table row asserts the
 * exact values of all flags, the return code and Go's exact error message.
 */
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "plugins/args.h"
#include "plugins/plugin.h"
#include "tests/testutil.h"

/* ---- args_parse ---------------------------------------------------------- */

/*
 * The flag table every row is parsed against: two strings, an int, two bools with
 * different defaults, and an int alias pair sharing storage (ray's clientPort, D4).
 */
struct flags {
    const char *master;
    const char *worker;
    int64_t port;
    int64_t cport;
    bool x;
    bool y;
};

#define DEF_MASTER "m"
#define DEF_WORKER "w"
#define DEF_PORT   23456
#define DEF_CPORT  10001

struct pcase {
    const char *name;
    const char *argv; /* JSON text; NULL = pass a C NULL */
    struct flags want;
    int rc;
    const char *err; /* exact message, "" on success */
};

/* Expected values that differ from the defaults are spelled out with these. */
#define DEFAULTS DEF_MASTER, DEF_WORKER, DEF_PORT, DEF_CPORT, false, true
#define OK       0, ""

static const struct pcase pcases[] = {
    /* no arguments at all */
    {"c-null", NULL, {DEFAULTS}, OK},
    {"json-null", "null", {DEFAULTS}, OK},
    {"not-an-array", "{\"master\":\"a\"}", {DEFAULTS}, OK},
    {"string-not-array", "\"--master=a\"", {DEFAULTS}, OK},
    {"empty-array", "[]", {DEFAULTS}, OK},

    /* rule 1: one element is one token, never split on spaces */
    {"one-token",
     "[\"--master=a --worker=b\"]",
     {"a --worker=b", DEF_WORKER, DEF_PORT, DEF_CPORT, false, true},
     OK},
    {"two-tokens",
     "[\"--master=a\",\"--worker=b\"]",
     {"a", "b", DEF_PORT, DEF_CPORT, false, true},
     OK},
    {"separate-values",
     "[\"--master\",\"a\",\"--worker\",\"b\",\"--port\",\"7\"]",
     {"a", "b", 7, DEF_CPORT, false, true},
     OK},
    {"space-in-next-value",
     "[\"--master\",\"a b\"]",
     {"a b", DEF_WORKER, DEF_PORT, DEF_CPORT, false, true},
     OK},

    /* rule 2: silent stops */
    {"stop-empty",
     "[\"--master=a\",\"\",\"--worker=b\"]",
     {"a", DEF_WORKER, DEF_PORT, DEF_CPORT, false, true},
     OK},
    {"stop-dash", "[\"-\",\"--master=a\"]", {DEFAULTS}, OK},
    {"stop-one-char", "[\"a\",\"--master=a\"]", {DEFAULTS}, OK},
    {"stop-positional-first", "[\"pos\",\"--master=a\"]", {DEFAULTS}, OK},
    {"stop-positional-middle",
     "[\"--master=a\",\"pos\",\"--worker=b\"]",
     {"a", DEF_WORKER, DEF_PORT, DEF_CPORT, false, true},
     OK},
    {"stop-no-dash-eq", "[\"master=a\"]", {DEFAULTS}, OK},

    /* rule 3: "--" is consumed and stops */
    {"double-dash",
     "[\"--master=a\",\"--\",\"--worker=b\"]",
     {"a", DEF_WORKER, DEF_PORT, DEF_CPORT, false, true},
     OK},
    {"double-dash-first", "[\"--\",\"--master=a\"]", {DEFAULTS}, OK},
    {"double-dash-as-value",
     "[\"--master\",\"--\",\"--worker=b\"]",
     {"--", "b", DEF_PORT, DEF_CPORT, false, true},
     OK},

    /* rule 4: one or two dashes; bad syntax */
    {"single-dash",
     "[\"-master=a\",\"-worker\",\"b\"]",
     {"a", "b", DEF_PORT, DEF_CPORT, false, true},
     OK},
    {"triple-dash",
     "[\"--master=a\",\"---x\",\"--worker=b\"]",
     {"a", DEF_WORKER, DEF_PORT, DEF_CPORT, false, true},
     WH_EINVAL,
     "bad flag syntax: ---x"},
    {"dash-eq", "[\"-=x\"]", {DEFAULTS}, WH_EINVAL, "bad flag syntax: -=x"},
    {"dash-dash-eq", "[\"--=x\"]", {DEFAULTS}, WH_EINVAL, "bad flag syntax: --=x"},
    {"dash-eq-only", "[\"-=\"]", {DEFAULTS}, WH_EINVAL, "bad flag syntax: -="},
    {"triple-dash-only", "[\"---\"]", {DEFAULTS}, WH_EINVAL, "bad flag syntax: ---"},

    /* rule 5: split at the first '=' */
    {"value-with-eq",
     "[\"--master=a=b\"]",
     {"a=b", DEF_WORKER, DEF_PORT, DEF_CPORT, false, true},
     OK},
    {"value-is-eq", "[\"--master==\"]", {"=", DEF_WORKER, DEF_PORT, DEF_CPORT, false, true}, OK},

    /* rule 6: exact names; unknown stops with an error */
    {"unknown",
     "[\"--master=a\",\"--nope=1\",\"--worker=b\"]",
     {"a", DEF_WORKER, DEF_PORT, DEF_CPORT, false, true},
     WH_EINVAL,
     "flag provided but not defined: -nope"},
    {"unknown-no-value",
     "[\"-nope\"]",
     {DEFAULTS},
     WH_EINVAL,
     "flag provided but not defined: -nope"},
    {"case-sensitive",
     "[\"--Master=a\"]",
     {DEFAULTS},
     WH_EINVAL,
     "flag provided but not defined: -Master"},
    {"prefix-not-enough",
     "[\"--mast=a\"]",
     {DEFAULTS},
     WH_EINVAL,
     "flag provided but not defined: -mast"},
    {"help-h", "[\"-h\",\"--master=a\"]", {DEFAULTS}, WH_EINVAL, "flag: help requested"},
    {"help-long", "[\"--help\"]", {DEFAULTS}, WH_EINVAL, "flag: help requested"},
    {"help-with-value", "[\"-help=1\"]", {DEFAULTS}, WH_EINVAL, "flag: help requested"},
    {"not-help", "[\"-hh\"]", {DEFAULTS}, WH_EINVAL, "flag provided but not defined: -hh"},

    /* rule 7: booleans */
    {"bool-bare", "[\"--x\"]", {DEF_MASTER, DEF_WORKER, DEF_PORT, DEF_CPORT, true, true}, OK},
    {"bool-single-dash",
     "[\"-x\",\"--master=a\"]",
     {"a", DEF_WORKER, DEF_PORT, DEF_CPORT, true, true},
     OK},
    {"bool-then-positional",
     "[\"--x\",\"true\",\"--master=a\"]",
     {DEF_MASTER, DEF_WORKER, DEF_PORT, DEF_CPORT, true, true},
     OK},
    {"bool-then-false-positional", "[\"--y\",\"false\"]", {DEFAULTS}, OK},
    {"bool-eq-false",
     "[\"--y=false\",\"--x=1\"]",
     {DEF_MASTER, DEF_WORKER, DEF_PORT, DEF_CPORT, true, false},
     OK},
    {"bool-eq-T", "[\"--x=T\"]", {DEF_MASTER, DEF_WORKER, DEF_PORT, DEF_CPORT, true, true}, OK},
    {"bool-eq-F", "[\"--y=F\"]", {DEF_MASTER, DEF_WORKER, DEF_PORT, DEF_CPORT, false, false}, OK},
    {"bool-bad-sets-false",
     "[\"--y=yes\",\"--master=a\"]",
     {DEF_MASTER, DEF_WORKER, DEF_PORT, DEF_CPORT, false, false},
     WH_EINVAL,
     "invalid boolean value \"yes\" for -y: parse error"},
    {"bool-empty-sets-false",
     "[\"--y=\"]",
     {DEF_MASTER, DEF_WORKER, DEF_PORT, DEF_CPORT, false, false},
     WH_EINVAL,
     "invalid boolean value \"\" for -y: parse error"},
    {"bool-mixed-case",
     "[\"--x=tRUE\"]",
     {DEFAULTS},
     WH_EINVAL,
     "invalid boolean value \"tRUE\" for -x: parse error"},

    /* rule 8: non-boolean flags take the next element, whatever it is */
    {"next-starts-with-dash",
     "[\"--master\",\"--worker=b\"]",
     {"--worker=b", DEF_WORKER, DEF_PORT, DEF_CPORT, false, true},
     OK},
    {"next-is-dash",
     "[\"--master\",\"-\",\"--worker=b\"]",
     {"-", "b", DEF_PORT, DEF_CPORT, false, true},
     OK},
    {"next-negative-int",
     "[\"--port\",\"-5\"]",
     {DEF_MASTER, DEF_WORKER, -5, DEF_CPORT, false, true},
     OK},
    {"needs-argument-string",
     "[\"--worker=b\",\"--master\"]",
     {DEF_MASTER, "b", DEF_PORT, DEF_CPORT, false, true},
     WH_EINVAL,
     "flag needs an argument: -master"},
    {"needs-argument-int", "[\"-port\"]", {DEFAULTS}, WH_EINVAL, "flag needs an argument: -port"},

    /* rule 9: strings take anything, including "" */
    {"string-empty-eq",
     "[\"--master=\",\"--worker=b\"]",
     {"", "b", DEF_PORT, DEF_CPORT, false, true},
     OK},
    {"string-empty-next",
     "[\"--master\",\"\",\"--worker=b\"]",
     {"", "b", DEF_PORT, DEF_CPORT, false, true},
     OK},

    /* rule 10: integers */
    {"int-octal", "[\"--port=010\"]", {DEF_MASTER, DEF_WORKER, 8, DEF_CPORT, false, true}, OK},
    {"int-hex-neg",
     "[\"--port=-0x10\"]",
     {DEF_MASTER, DEF_WORKER, -16, DEF_CPORT, false, true},
     OK},
    {"int-plus", "[\"--port\",\"+5\"]", {DEF_MASTER, DEF_WORKER, 5, DEF_CPORT, false, true}, OK},
    {"int-syntax-sets-zero",
     "[\"--master=a\",\"--port=abc\",\"--worker=b\"]",
     {"a", DEF_WORKER, 0, DEF_CPORT, false, true},
     WH_EINVAL,
     "invalid value \"abc\" for flag -port: parse error"},
    {"int-empty-eq",
     "[\"--port=\"]",
     {DEF_MASTER, DEF_WORKER, 0, DEF_CPORT, false, true},
     WH_EINVAL,
     "invalid value \"\" for flag -port: parse error"},
    {"int-float",
     "[\"--port=1e99\"]",
     {DEF_MASTER, DEF_WORKER, 0, DEF_CPORT, false, true},
     WH_EINVAL,
     "invalid value \"1e99\" for flag -port: parse error"},
    {"int-overflow",
     "[\"--port\",\"9223372036854775808\"]",
     {DEF_MASTER, DEF_WORKER, INT64_MAX, DEF_CPORT, false, true},
     WH_EINVAL,
     "invalid value \"9223372036854775808\" for flag -port: value out of range"},
    {"int-underflow",
     "[\"--port=-9223372036854775809\"]",
     {DEF_MASTER, DEF_WORKER, INT64_MIN, DEF_CPORT, false, true},
     WH_EINVAL,
     "invalid value \"-9223372036854775809\" for flag -port: value out of range"},
    {"int-quoting",
     "[\"--port=a\\\"b\\\\c\\n\\u0001\\u007f\"]",
     {DEF_MASTER, DEF_WORKER, 0, DEF_CPORT, false, true},
     WH_EINVAL,
     "invalid value \"a\\\"b\\\\c\\n\\x01\\x7f\" for flag -port: parse error"},
    {"int-quoting-utf8",
     "[\"--port=\\u00e9\"]",
     {DEF_MASTER, DEF_WORKER, 0, DEF_CPORT, false, true},
     WH_EINVAL,
     "invalid value \"\xc3\xa9\" for flag -port: parse error"},

    /* rule 11: the last occurrence wins; aliases share storage */
    {"last-wins",
     "[\"--port=1\",\"--port\",\"2\",\"--master=a\",\"-master=b\"]",
     {"b", DEF_WORKER, 2, DEF_CPORT, false, true},
     OK},
    {"bool-last-wins", "[\"--x\",\"--x=false\"]", {DEFAULTS}, OK},
    {"alias-then-name",
     "[\"--clientServerPort=5\",\"--clientPort=6\"]",
     {DEF_MASTER, DEF_WORKER, DEF_PORT, 6, false, true},
     OK},
    {"name-then-alias",
     "[\"--clientPort=6\",\"--clientServerPort\",\"5\"]",
     {DEF_MASTER, DEF_WORKER, DEF_PORT, 5, false, true},
     OK},

    /* values set before an error stay set (ContinueOnError) */
    {"keep-before-error",
     "[\"--port=7\",\"--master=a\",\"--port=zz\",\"--worker=b\"]",
     {"a", DEF_WORKER, 0, DEF_CPORT, false, true},
     WH_EINVAL,
     "invalid value \"zz\" for flag -port: parse error"},

    /* non-string elements end the argument list silently */
    {"non-string-stops",
     "[\"--master=a\",5,\"--worker=b\"]",
     {"a", DEF_WORKER, DEF_PORT, DEF_CPORT, false, true},
     OK},
    {"non-string-first", "[true,\"--master=a\"]", {DEFAULTS}, OK},
    {"non-string-null", "[null,\"--master=a\"]", {DEFAULTS}, OK},
    {"non-string-as-value",
     "[\"--port\",5]",
     {DEFAULTS},
     WH_EINVAL,
     "flag needs an argument: -port"},
    {"bool-before-non-string",
     "[\"--x\",{}]",
     {DEF_MASTER, DEF_WORKER, DEF_PORT, DEF_CPORT, true, true},
     OK},
};

START_TEST(test_parse_table)
{
    const struct pcase *c = &pcases[_i];
    struct flags f = {DEFAULTS};
    const struct args_def defs[] = {
        {"master", ARGS_STRING, &f.master},
        {"worker", ARGS_STRING, &f.worker},
        {"port", ARGS_INT, &f.port},
        {"x", ARGS_BOOL, &f.x},
        {"y", ARGS_BOOL, &f.y},
        {"clientPort", ARGS_INT, &f.cport},
        {"clientServerPort", ARGS_INT, &f.cport},
    };
    json_t *argv = c->argv != NULL ? tu_json(c->argv) : NULL;
    char err[256] = "garbage";
    int rc = args_parse(defs, sizeof(defs) / sizeof(defs[0]), argv, err, sizeof(err));

    ck_assert_msg(rc == c->rc, "%s: rc %d, want %d (err %s)", c->name, rc, c->rc, err);
    ck_assert_msg(strcmp(err, c->err) == 0, "%s: err '%s', want '%s'", c->name, err, c->err);
    ck_assert_msg(strcmp(f.master, c->want.master) == 0, "%s: master '%s', want '%s'", c->name,
                  f.master, c->want.master);
    ck_assert_msg(strcmp(f.worker, c->want.worker) == 0, "%s: worker '%s', want '%s'", c->name,
                  f.worker, c->want.worker);
    ck_assert_msg(f.port == c->want.port, "%s: port %lld, want %lld", c->name, (long long)f.port,
                  (long long)c->want.port);
    ck_assert_msg(f.cport == c->want.cport, "%s: cport %lld, want %lld", c->name,
                  (long long)f.cport, (long long)c->want.cport);
    ck_assert_msg(f.x == c->want.x, "%s: x %d, want %d", c->name, f.x, c->want.x);
    ck_assert_msg(f.y == c->want.y, "%s: y %d, want %d", c->name, f.y, c->want.y);
    json_decref(argv);
}
END_TEST

/* String results are borrowed from the argv array, not copied. */
START_TEST(test_parse_string_borrowed)
{
    const char *master = "m";
    const struct args_def defs[] = {{"master", ARGS_STRING, &master}};
    json_t *argv = tu_json("[\"--master\",\"abc\"]");

    ck_assert_int_eq(args_parse(defs, 1, argv, NULL, 0), 0);
    ck_assert_ptr_eq(master, json_string_value(json_array_get(argv, 1)));
    json_decref(argv);
}
END_TEST

/* errbuf may be NULL or tiny; the message is cut like snprintf. */
START_TEST(test_parse_errbuf_sizes)
{
    int64_t port = 1;
    const struct args_def defs[] = {{"port", ARGS_INT, &port}};
    json_t *argv = tu_json("[\"--nope\"]");
    char small[8] = "xxxxxxx";

    ck_assert_int_eq(args_parse(defs, 1, argv, NULL, 0), WH_EINVAL);
    ck_assert_int_eq(args_parse(defs, 1, argv, small, sizeof(small)), WH_EINVAL);
    ck_assert_str_eq(small, "flag pr");
    ck_assert_int_eq(args_parse(defs, 1, argv, small, 0), WH_EINVAL);
    ck_assert_str_eq(small, "flag pr"); /* errlen 0: untouched */
    json_decref(argv);
}
END_TEST

/* No defs: any flag is unknown, a positional still stops silently. */
START_TEST(test_parse_no_defs)
{
    json_t *argv = tu_json("[\"--a=1\"]");
    json_t *pos = tu_json("[\"a\",\"--a=1\"]");
    char err[128];

    ck_assert_int_eq(args_parse(NULL, 0, argv, err, sizeof(err)), WH_EINVAL);
    ck_assert_str_eq(err, "flag provided but not defined: -a");
    ck_assert_int_eq(args_parse(NULL, 0, pos, err, sizeof(err)), 0);
    ck_assert_str_eq(err, "");
    json_decref(argv);
    json_decref(pos);
}
END_TEST

/* A very long bad value is quoted and cut without overrunning errbuf. */
START_TEST(test_parse_long_value)
{
    int64_t port = 1;
    const struct args_def defs[] = {{"port", ARGS_INT, &port}};
    char text[1200];
    char err[256];
    json_t *argv;

    memset(text, 'z', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\0';
    argv = json_pack("[ss]", "--port", text);
    ck_assert_ptr_nonnull(argv);
    ck_assert_int_eq(args_parse(defs, 1, argv, err, sizeof(err)), WH_EINVAL);
    ck_assert_int_eq(port, 0);
    ck_assert_uint_eq(strlen(err), sizeof(err) - 1);
    ck_assert_int_eq(strncmp(err, "invalid value \"zzz", 18), 0);
    json_decref(argv);
}
END_TEST

/* ---- args_parse_int ------------------------------------------------------ */

struct icase {
    const char *in;
    int64_t want;
    int rc;
};

static const struct icase icases[] = {
    {"0", 0, 0},
    {"00", 0, 0},
    {"-0", 0, 0},
    {"7", 7, 0},
    {"+5", 5, 0},
    {"-5", -5, 0},
    {"010", 8, 0},
    {"0777", 511, 0},
    {"08", 0, WH_EINVAL},
    {"0x1F", 31, 0},
    {"0X1f", 31, 0},
    {"0x0", 0, 0},
    {"-0x10", -16, 0},
    {"0b101", 5, 0},
    {"0B101", 5, 0},
    {"0b2", 0, WH_EINVAL},
    {"0o17", 15, 0},
    {"0O17", 15, 0},
    {"0o8", 0, WH_EINVAL},
    {"0x", 0, WH_EINVAL},
    {"0b", 0, WH_EINVAL},
    {"0o", 0, WH_EINVAL},
    {"0xg", 0, WH_EINVAL},
    /* underscores (Go underscoreOK) */
    {"1_000", 1000, 0},
    {"1_000_000", 1000000, 0},
    {"_1", 0, WH_EINVAL},
    {"-_1", 0, WH_EINVAL},
    {"1__0", 0, WH_EINVAL},
    {"1_", 0, WH_EINVAL},
    {"_", 0, WH_EINVAL},
    {"0x_1f", 31, 0},
    {"0x1_f", 31, 0},
    {"0b_1_0", 2, 0},
    {"0o_17", 15, 0},
    {"0_1", 1, 0},
    {"0_7_7", 63, 0},
    {"0_", 0, WH_EINVAL},
    {"0x_", 0, WH_EINVAL},
    {"+1_0", 10, 0},
    /* range */
    {"9223372036854775807", INT64_MAX, 0},
    {"-9223372036854775808", INT64_MIN, 0},
    {"9223372036854775808", INT64_MAX, WH_ETOOBIG},
    {"-9223372036854775809", INT64_MIN, WH_ETOOBIG},
    {"18446744073709551615", INT64_MAX, WH_ETOOBIG},
    {"18446744073709551616", INT64_MAX, WH_ETOOBIG},
    {"-18446744073709551616", INT64_MIN, WH_ETOOBIG},
    {"0x7fffffffffffffff", INT64_MAX, 0},
    {"0x8000000000000000", INT64_MAX, WH_ETOOBIG},
    {"-0x8000000000000000", INT64_MIN, 0},
    {"0b1000000000000000000000000000000000000000000000000000000000000000", INT64_MAX, WH_ETOOBIG},
    /* Go reports the overflow it meets before a later bad character */
    {"99999999999999999999x", INT64_MAX, WH_ETOOBIG},
    {"_99999999999999999999", INT64_MAX, WH_ETOOBIG},
    {"x99999999999999999999", 0, WH_EINVAL},
    /* syntax */
    {"", 0, WH_EINVAL},
    {"abc", 0, WH_EINVAL},
    {"+", 0, WH_EINVAL},
    {"-", 0, WH_EINVAL},
    {"+-5", 0, WH_EINVAL},
    {"--5", 0, WH_EINVAL},
    {" 5", 0, WH_EINVAL},
    {"5 ", 0, WH_EINVAL},
    {"1e3", 0, WH_EINVAL},
    {"1.0", 0, WH_EINVAL},
    {"0_x1", 0, WH_EINVAL},
    {"\xc3\xa9", 0, WH_EINVAL},
};

START_TEST(test_parse_int_table)
{
    const struct icase *c = &icases[_i];
    int64_t v = 12345;
    int rc = args_parse_int(c->in, &v);

    ck_assert_msg(rc == c->rc, "'%s': rc %d, want %d", c->in, rc, c->rc);
    ck_assert_msg(v == c->want, "'%s': %lld, want %lld", c->in, (long long)v, (long long)c->want);
}
END_TEST

START_TEST(test_parse_int_null)
{
    int64_t v = 3;

    ck_assert_int_eq(args_parse_int(NULL, &v), WH_EINVAL);
    ck_assert_int_eq(v, 0);
}
END_TEST

/* ---- args_parse_bool ----------------------------------------------------- */

struct bcase {
    const char *in;
    bool want;
    int rc;
};

static const struct bcase bcases[] = {
    {"1", true, 0},
    {"t", true, 0},
    {"T", true, 0},
    {"TRUE", true, 0},
    {"true", true, 0},
    {"True", true, 0},
    {"0", false, 0},
    {"f", false, 0},
    {"F", false, 0},
    {"FALSE", false, 0},
    {"false", false, 0},
    {"False", false, 0},
    {"", false, WH_EINVAL},
    {"yes", false, WH_EINVAL},
    {"tRUE", false, WH_EINVAL},
    {"TRue", false, WH_EINVAL},
    {"2", false, WH_EINVAL},
    {" true", false, WH_EINVAL},
    {"true ", false, WH_EINVAL},
    {"on", false, WH_EINVAL},
    {"01", false, WH_EINVAL},
};

START_TEST(test_parse_bool_table)
{
    const struct bcase *c = &bcases[_i];
    bool v = !c->want; /* must be overwritten either way */
    int rc = args_parse_bool(c->in, &v);

    ck_assert_msg(rc == c->rc, "'%s': rc %d, want %d", c->in, rc, c->rc);
    ck_assert_msg(v == c->want, "'%s': %d, want %d", c->in, v, c->want);
}
END_TEST

/* ---- plugin_args: what every plugin calls ------------------------------ */

/* A parse error keeps the values set before it, leaves the rest at their defaults and
 * becomes one warning naming the plugin (D4); no warnings list is allowed too. */
START_TEST(test_plugin_args_warning)
{
    const char *master = "master";
    int64_t port = 22;
    bool flag = false;
    const struct args_def defs[] = {
        {"master", ARGS_STRING, &master},
        {"port", ARGS_INT, &port},
        {"flag", ARGS_BOOL, &flag},
    };
    json_t *argv = tu_json("[\"--master=m\", \"--slots=2\", \"--port=7\"]");
    struct warnings w;
    struct plugin_ctx c = {.name = "mpi", .args = argv, .warnings = &w};

    warnings_init(&w);
    plugin_args(&c, defs, sizeof(defs) / sizeof(defs[0]));
    ck_assert_str_eq(master, "m");
    ck_assert_int_eq(port, 22);
    ck_assert(!flag);
    ck_assert_uint_eq(w.n, 1);
    ck_assert_str_eq(w.items[0],
                     "mpi plugin: flag provided but not defined: -slots, later arguments ignored");

    c.warnings = NULL;
    plugin_args(&c, defs, sizeof(defs) / sizeof(defs[0]));
    ck_assert_str_eq(master, "m");
    json_decref(argv);
}
END_TEST

/* Arguments that parse, and no arguments at all, give no warning. */
START_TEST(test_plugin_args_clean)
{
    int64_t port = 22;
    bool flag = false;
    const struct args_def defs[] = {{"port", ARGS_INT, &port}, {"flag", ARGS_BOOL, &flag}};
    json_t *argv = tu_json("[\"-port\", \"0x10\", \"--flag\"]");
    struct warnings w;
    struct plugin_ctx c = {.name = "pytorch", .args = argv, .warnings = &w};

    warnings_init(&w);
    plugin_args(&c, defs, sizeof(defs) / sizeof(defs[0]));
    ck_assert_int_eq(port, 16);
    ck_assert(flag);
    c.args = NULL;
    port = 22;
    plugin_args(&c, defs, sizeof(defs) / sizeof(defs[0]));
    ck_assert_int_eq(port, 22);
    ck_assert_uint_eq(w.n, 0);
    json_decref(argv);
}
END_TEST

static Suite *args_suite(void)
{
    Suite *s = suite_create("args");
    TCase *tc = tcase_create("parse");
    TCase *ti = tcase_create("int");
    TCase *tb = tcase_create("bool");
    TCase *tp = tcase_create("plugin_args");

    tcase_add_loop_test(tc, test_parse_table, 0, (int)(sizeof(pcases) / sizeof(pcases[0])));
    tcase_add_test(tc, test_parse_string_borrowed);
    tcase_add_test(tc, test_parse_errbuf_sizes);
    tcase_add_test(tc, test_parse_no_defs);
    tcase_add_test(tc, test_parse_long_value);
    suite_add_tcase(s, tc);
    tcase_add_loop_test(ti, test_parse_int_table, 0, (int)(sizeof(icases) / sizeof(icases[0])));
    tcase_add_test(ti, test_parse_int_null);
    suite_add_tcase(s, ti);
    tcase_add_loop_test(tb, test_parse_bool_table, 0, (int)(sizeof(bcases) / sizeof(bcases[0])));
    suite_add_tcase(s, tb);
    tcase_add_test(tp, test_plugin_args_warning);
    tcase_add_test(tp, test_plugin_args_clean);
    suite_add_tcase(s, tp);
    return s;
}

int main(void)
{
    return tu_run(args_suite());
}
