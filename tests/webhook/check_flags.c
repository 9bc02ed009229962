/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_flags.c - webhook/flags.h: the getopt_long options and optstring made
 * from a table, the --help layout (columns, short-name column, overflowing
 * flags, help lines, defaults, hidden flags), the usage-error lines with the
 * user's text sanitised, and every parser's accepted and refused values.
 * Streams are memory streams (open_memstream), so every byte is asserted.
 */
#include <check.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "webhook/flags.h"

#define P "volcano-plugin-webhook: demo: "

enum { OPT_PORT = 256, OPT_LEADER, OPT_HIDDEN, OPT_VERY_LONG };

static const struct flag demo_table[] = {
    {'f', "file", 'f', required_argument, "FILE", "read FILE\nthen more", NULL},
    {OPT_PORT, "port", 0, required_argument, "N", "TCP port", "8443"},
    {OPT_LEADER, "leader-elect", 0, optional_argument, "BOOL", "hold the Lease", "true"},
    {OPT_HIDDEN, "hidden", 0, required_argument, "D", NULL, NULL},
    {OPT_VERY_LONG, "a-very-long-flag-name", 0, no_argument, NULL, "overflows\n", "off"},
    {'n', NULL, 'n', required_argument, NULL, NULL, NULL},
    {'h', "help", 'h', no_argument, NULL, "this help", NULL},
};

static const struct flag_set demo = {
    .command = "demo",
    .flags = demo_table,
    .nflags = sizeof(demo_table) / sizeof(demo_table[0]),
    .help_column = 20,
    .short_column = false,
    .usage = "usage: demo [flags]\n",
    .footer = "end\n",
};

/* A memory stream's text. */
struct stream {
    FILE *f;
    char *text;
    size_t len;
};

static void stream_open(struct stream *s)
{
    s->text = NULL;
    s->len = 0;
    s->f = open_memstream(&s->text, &s->len);
    ck_assert_ptr_nonnull(s->f);
}

static void stream_close(struct stream *s)
{
    ck_assert_int_eq(fclose(s->f), 0);
    s->f = NULL;
}

START_TEST(test_generated_options)
{
    struct flags_parser p;

    ck_assert_int_eq(flags_parser_init(&p, &demo), 0);
    ck_assert_str_eq(p.optstring, ":f:n:h");
    ck_assert_str_eq(p.options[0].name, "file");
    ck_assert_int_eq(p.options[0].has_arg, required_argument);
    ck_assert_int_eq(p.options[0].val, 'f');
    ck_assert_ptr_null(p.options[0].flag);
    ck_assert_str_eq(p.options[1].name, "port");
    ck_assert_int_eq(p.options[1].val, OPT_PORT);
    ck_assert_str_eq(p.options[2].name, "leader-elect");
    ck_assert_int_eq(p.options[2].has_arg, optional_argument);
    ck_assert_str_eq(p.options[3].name, "hidden"); /* hidden from --help, not from getopt */
    ck_assert_str_eq(p.options[4].name, "a-very-long-flag-name");
    ck_assert_int_eq(p.options[4].has_arg, no_argument);
    ck_assert_str_eq(p.options[5].name, "help"); /* -n has no long name */
    ck_assert_ptr_null(p.options[6].name);
    ck_assert_int_eq(p.options[6].val, 0);
}
END_TEST

START_TEST(test_bad_tables)
{
    static const struct flag dup[] = {
        {OPT_PORT, "port", 0, required_argument, "N", "x", NULL},
        {OPT_PORT, "port2", 0, required_argument, "N", "x", NULL},
    };
    static const struct flag mismatch[] = {
        {OPT_PORT, "file", 'f', required_argument, "F", "x", NULL},
    };
    struct flag_set set = demo;
    struct flags_parser p;

    set.flags = dup;
    set.nflags = 2;
    ck_assert_int_eq(flags_parser_init(&p, &set), WH_EINVAL);
    set.flags = mismatch;
    set.nflags = 1;
    ck_assert_int_eq(flags_parser_init(&p, &set), WH_EINVAL);
    set.flags = demo_table;
    set.nflags = FLAGS_MAX + 1;
    ck_assert_int_eq(flags_parser_init(&p, &set), WH_EINVAL);
}
END_TEST

START_TEST(test_help_layout)
{
    struct stream s;

    stream_open(&s);
    flags_print_help(&demo, s.f);
    stream_close(&s);
    ck_assert_str_eq(s.text,
                     "usage: demo [flags]\n"
                     "  -f, --file FILE   read FILE\n"
                     "                    then more\n"
                     "  --port N          TCP port (default 8443)\n"
                     "  --leader-elect[=BOOL]  hold the Lease (default true)\n"
                     "  --a-very-long-flag-name  overflows\n"
                     "                    (default off)\n"
                     "  -h, --help        this help\n"
                     "end\n");
    free(s.text);
}
END_TEST

START_TEST(test_help_short_column)
{
    struct flag_set set = demo;
    struct stream s;

    set.short_column = true;
    set.flags = demo_table;
    set.nflags = 2;
    set.footer = NULL;
    stream_open(&s);
    flags_print_help(&set, s.f);
    stream_close(&s);
    ck_assert_str_eq(s.text,
                     "usage: demo [flags]\n"
                     "  -f, --file FILE   read FILE\n"
                     "                    then more\n"
                     "      --port N      TCP port (default 8443)\n");
    free(s.text);
}
END_TEST

/* Run flags_next over argv, then flags_no_arguments; ids into got, args into args.
 * @return how many flags were taken; *rc the first error (WH_EINVAL) or 0. */
static int parse_all(char **argv, int *got, const char **args, struct stream *err,
                     struct flags_parser *p, int *rc)
{
    int argc = 0;
    int n = 0;
    int c;

    while (argv[argc] != NULL)
        argc++;
    ck_assert_int_eq(flags_parser_init(p, &demo), 0);
    stream_open(err);
    *rc = 0;
    while ((c = flags_next(p, argc, argv, &args[n], err->f)) != -1) {
        if (c < 0) {
            *rc = c;
            break;
        }
        got[n++] = c;
    }
    if (c == -1)
        *rc = flags_no_arguments(p, argc, argv, err->f);
    stream_close(err);
    return n;
}

START_TEST(test_next)
{
    char *argv[] = {"demo", "-f", "a", "--port=1", "--leader-elect", "-nX", "--hidden", "d", NULL};
    const char *args[16];
    int got[16];
    struct flags_parser p;
    struct stream err;

    int rc;

    ck_assert_int_eq(parse_all(argv, got, args, &err, &p, &rc), 5);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(got[0], 'f');
    ck_assert_str_eq(args[0], "a");
    ck_assert_int_eq(got[1], OPT_PORT);
    ck_assert_str_eq(args[1], "1");
    ck_assert_int_eq(got[2], OPT_LEADER);
    ck_assert_ptr_null(args[2]);
    ck_assert_int_eq(got[3], 'n');
    ck_assert_str_eq(args[3], "X");
    ck_assert_int_eq(got[4], OPT_HIDDEN);
    ck_assert_str_eq(args[4], "d");
    ck_assert_uint_eq(err.len, 0);
    free(err.text);
}
END_TEST

/* argv (after "demo") gives exactly the usage line msg and WH_EINVAL. */
static void assert_refused(char **argv, const char *msg)
{
    const char *args[16];
    int got[16];
    struct flags_parser p;
    struct stream err;
    int rc;

    (void)parse_all(argv, got, args, &err, &p, &rc);
    ck_assert_int_eq(rc, WH_EINVAL);
    ck_assert_str_eq(err.text, msg);
    free(err.text);
}

START_TEST(test_usage_errors)
{
    assert_refused((char *[]){"demo", "--frob", NULL}, P "unknown flag --frob (see --help)\n");
    assert_refused((char *[]){"demo", "-x", NULL}, P "unknown flag -x (see --help)\n");
    assert_refused((char *[]){"demo", "--help=1", NULL}, P "unknown flag --help=1 (see --help)\n");
    assert_refused((char *[]){"demo", "--port", NULL}, P "flag --port needs a value\n");
    assert_refused((char *[]){"demo", "-f", NULL}, P "flag -f needs a value\n");
    assert_refused((char *[]){"demo", "stray", NULL}, P "unexpected argument \"stray\"\n");
    assert_refused((char *[]){"demo", "--leader-elect", "false", NULL},
                   P "unexpected argument \"false\" (write --leader-elect=false)\n");
    /* the user's text stays one line */
    assert_refused((char *[]){"demo", "--fr\nob", NULL}, P "unknown flag --fr?ob (see --help)\n");
    assert_refused((char *[]){"demo", "a\x1b[2Jb", NULL}, P "unexpected argument \"a?[2Jb\"\n");
}
END_TEST

START_TEST(test_bad_value)
{
    char long_value[300];
    char want[512];
    struct stream err;

    stream_open(&err);
    ck_assert_int_eq(flags_bad_value(&demo, err.f, "--port", "x\ry", "want an integer 0..65535"),
                     WH_EINVAL);
    stream_close(&err);
    ck_assert_str_eq(err.text, P "invalid --port \"x?y\": want an integer 0..65535\n");
    free(err.text);

    /* cut to 124 bytes of the value, then "..." */
    memset(long_value, 'a', sizeof(long_value) - 1);
    long_value[sizeof(long_value) - 1] = '\0';
    snprintf(want, sizeof(want), P "invalid --port \"%.124s...\": want N\n", long_value);
    stream_open(&err);
    ck_assert_int_eq(flags_bad_value(&demo, err.f, "--port", long_value, "want N"), WH_EINVAL);
    stream_close(&err);
    ck_assert_str_eq(err.text, want);
    free(err.text);

    stream_open(&err);
    ck_assert_int_eq(flags_usage_error(&demo, err.f, "--a needs %s\t", "--b"), WH_EINVAL);
    stream_close(&err);
    ck_assert_str_eq(err.text, P "--a needs --b?\n");
    free(err.text);
}
END_TEST

START_TEST(test_parse_long)
{
    static const char *const bad[] = {
        "", " 5", "+5", "5 ", "5x", "x", "0x10", "11", "-1", "--1", "99999999999999999999"};
    long v = 42;

    ck_assert_int_eq(flags_parse_long("0", 0, 10, &v), 0);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(flags_parse_long("10", 0, 10, &v), 0);
    ck_assert_int_eq(v, 10);
    ck_assert_int_eq(flags_parse_long("-3", -5, 10, &v), 0);
    ck_assert_int_eq(v, -3);
    ck_assert_int_eq(flags_parse_long("007", 0, 10, &v), 0);
    ck_assert_int_eq(v, 7);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = 42;
        ck_assert_msg(flags_parse_long(bad[i], 0, 10, &v) == -1, "took \"%s\"", bad[i]);
        ck_assert_int_eq(v, 42);
    }
    ck_assert_int_eq(flags_parse_long(NULL, 0, 10, &v), -1);
}
END_TEST

START_TEST(test_parse_duration)
{
    static const struct {
        const char *s;
        long ms;
    } good[] = {{"0", 0}, {"1ms", 1}, {"500ms", 500}, {"2s", 2000}, {"1m", 60000}, {"1h", 3600000}};
    static const char *const bad[] = {"",     "1",    "0s0", "1 s", " 1s",
                                      "-1s",  "+1s",  "1S",  "1d",  "1.5s",
                                      "1sec", "1h1m", "ms",  "2h",  "99999999999999999999h"};
    long v = 42;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ck_assert_int_eq(flags_parse_duration_ms(good[i].s, 0, 3600000, &v), 0);
        ck_assert_int_eq(v, good[i].ms);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = 42;
        ck_assert_msg(flags_parse_duration_ms(bad[i], 0, 3600000, &v) == -1, "took \"%s\"", bad[i]);
        ck_assert_int_eq(v, 42);
    }
    /* the bounds, at and past both ends */
    ck_assert_int_eq(flags_parse_duration_ms("100ms", 100, 1000, &v), 0);
    ck_assert_int_eq(v, 100);
    ck_assert_int_eq(flags_parse_duration_ms("1s", 100, 1000, &v), 0);
    ck_assert_int_eq(v, 1000);
    ck_assert_int_eq(flags_parse_duration_ms("99ms", 100, 1000, &v), -1);
    ck_assert_int_eq(flags_parse_duration_ms("1001ms", 100, 1000, &v), -1);
    ck_assert_int_eq(flags_parse_duration_ms("0", 1, 1000, &v), -1);
    ck_assert_int_eq(flags_parse_duration_ms(NULL, 0, 1000, &v), -1);
}
END_TEST

START_TEST(test_parse_bool)
{
    static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
    static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};
    static const char *const bad[] = {"", "yes", "no", "tRUE", "2", " true", "true "};
    bool b;

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        b = false;
        ck_assert_int_eq(flags_parse_bool(yes[i], &b), 0);
        ck_assert(b);
        ck_assert_int_eq(flags_parse_bool(no[i], &b), 0);
        ck_assert(!b);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        b = true;
        ck_assert_msg(flags_parse_bool(bad[i], &b) == -1, "took \"%s\"", bad[i]);
        ck_assert(b);
    }
}
END_TEST

START_TEST(test_parse_enum)
{
    static const char *const names[] = {"pod", "yaml", "patch", NULL};
    int i = 7;

    ck_assert_int_eq(flags_parse_enum("pod", names, &i), 0);
    ck_assert_int_eq(i, 0);
    ck_assert_int_eq(flags_parse_enum("patch", names, &i), 0);
    ck_assert_int_eq(i, 2);
    i = 7;
    ck_assert_int_eq(flags_parse_enum("Pod", names, &i), -1);
    ck_assert_int_eq(flags_parse_enum("", names, &i), -1);
    ck_assert_int_eq(flags_parse_enum("pods", names, &i), -1);
    ck_assert_int_eq(flags_parse_enum(NULL, names, &i), -1);
    ck_assert_int_eq(i, 7);
}
END_TEST

static Suite *flags_suite(void)
{
    Suite *s = suite_create("flags");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_generated_options);
    tcase_add_test(tc, test_bad_tables);
    tcase_add_test(tc, test_help_layout);
    tcase_add_test(tc, test_help_short_column);
    tcase_add_test(tc, test_next);
    tcase_add_test(tc, test_usage_errors);
    tcase_add_test(tc, test_bad_value);
    tcase_add_test(tc, test_parse_long);
    tcase_add_test(tc, test_parse_duration);
    tcase_add_test(tc, test_parse_bool);
    tcase_add_test(tc, test_parse_enum);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(flags_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
