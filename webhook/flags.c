/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flags.c - the flag tables of the commands (webhook/flags.h): getopt_long's
 * option array and optstring generated from a table, the --help flag list from
 * the same table, the shared usage-error lines and the value parsers.
 *
 * Threads: main thread only (getopt_long's globals).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sanitize.h"
#include "webhook/commands.h"
#include "webhook/flags.h"

#define FLAGS_SHOWN_MAX 128 /* bytes of the user's text in one message, "..." included */

int flags_parser_init(struct flags_parser *p, const struct flag_set *set)
{
    size_t n = 0;
    size_t k = 0;

    memset(p, 0, sizeof(*p));
    p->set = set;
    if (set->nflags > FLAGS_MAX)
        return WH_EINVAL;
    p->optstring[k++] = ':'; /* ':' for a missing value, '?' for an unknown flag */
    for (size_t i = 0; i < set->nflags; i++) {
        const struct flag *f = &set->flags[i];

        if (f->id == '?' || f->id == ':' || f->id <= 0
            || (f->short_name != 0 && f->id != f->short_name))
            return WH_EINVAL;
        for (size_t j = 0; j < i; j++)
            if (set->flags[j].id == f->id)
                return WH_EINVAL;
        if (f->name != NULL)
            p->options[n++] = (struct option){f->name, f->has_arg, NULL, f->id};
        if (f->short_name != 0) {
            p->optstring[k++] = f->short_name;
            if (f->has_arg != no_argument)
                p->optstring[k++] = ':';
            if (f->has_arg == optional_argument)
                p->optstring[k++] = ':';
        }
    }
    p->optstring[k] = '\0';
    optind = 0; /* a full reset: a command may run more than once (tests) */
    opterr = 0; /* our own messages, naming the flag */
    return 0;
}

int flags_next(struct flags_parser *p, int argc, char **argv, const char **arg, FILE *err_to)
{
    int c = getopt_long(argc, argv, p->optstring, p->options, NULL);

    *arg = optarg;
    if (c == ':')
        return flags_usage_error(p->set, err_to, "flag %s needs a value", argv[optind - 1]);
    if (c == '?')
        return flags_usage_error(p->set, err_to, "unknown flag %s (see --help)", argv[optind - 1]);
    return c;
}

int flags_no_arguments(const struct flags_parser *p, int argc, char **argv, FILE *err_to)
{
    const char *prev = optind > 1 ? argv[optind - 1] : "";

    if (optind >= argc)
        return 0;
    /* "--leader-elect false": an optional value must be joined with "=" */
    for (size_t k = 0; prev[0] == '-' && prev[1] == '-' && p->options[k].name != NULL; k++)
        if (p->options[k].has_arg == optional_argument && strcmp(prev + 2, p->options[k].name) == 0)
            return flags_usage_error(p->set, err_to, "unexpected argument \"%s\" (write %s=%s)",
                                     argv[optind], prev, argv[optind]);
    return flags_usage_error(p->set, err_to, "unexpected argument \"%s\"", argv[optind]);
}

/* The left part of f's --help entry, "  -s, --name ARG", into buf. @return its length. */
static int flag_left(const struct flag_set *set, const struct flag *f, char *buf, size_t cap)
{
    char shortpart[8] = "";
    const char *arg = f->arg != NULL ? f->arg : "";
    int n;

    if (f->short_name != 0)
        snprintf(shortpart, sizeof(shortpart), "-%c, ", f->short_name);
    else if (set->short_column)
        snprintf(shortpart, sizeof(shortpart), "    ");
    n = snprintf(buf, cap, "  %s--%s%s%s%s", shortpart, f->name,
                 f->has_arg == required_argument       ? " "
                     : f->has_arg == optional_argument ? "[="
                                                       : "",
                 f->has_arg != no_argument ? arg : "", f->has_arg == optional_argument ? "]" : "");
    return n < 0 ? 0 : n;
}

/* The help lines of f, each but the first indented to column, then its default. */
static void flag_help(const struct flag *f, int column, FILE *to)
{
    const char *s = f->help;

    for (bool first = true;; first = false) {
        const char *nl = strchr(s, '\n');
        size_t n = nl != NULL ? (size_t)(nl - s) : strlen(s);
        bool last = nl == NULL;

        if (!first)
            fprintf(to, "%*s", column, "");
        fwrite(s, 1, n, to);
        /* a trailing '\n' leaves an empty last line: the default alone on it */
        if (last && f->def != NULL)
            fprintf(to, "%s(default %s)", n > 0 ? " " : "", f->def);
        if (last || (nl[1] == '\0' && f->def == NULL)) {
            fputc('\n', to);
            return;
        }
        fputc('\n', to);
        s = nl + 1;
    }
}

void flags_print_help(const struct flag_set *set, FILE *to)
{
    fputs(set->usage, to);
    for (size_t i = 0; i < set->nflags; i++) {
        const struct flag *f = &set->flags[i];
        char left[256];
        int n;

        if (f->help == NULL)
            continue;
        n = flag_left(set, f, left, sizeof(left));
        fputs(left, to);
        if (n + 2 > set->help_column)
            fputs("  ", to);
        else
            fprintf(to, "%*s", set->help_column - n, "");
        flag_help(f, set->help_column, to);
    }
    if (set->footer != NULL)
        fputs(set->footer, to);
}

int flags_bad_value(const struct flag_set *set, FILE *err_to, const char *flag, const char *value,
                    const char *want)
{
    char shown[FLAGS_SHOWN_MAX]; /* the user's text, one line */

    fprintf(err_to, WH_PROG ": %s: invalid %s \"%s\": %s\n", set->command, flag,
            sanitize_copy(shown, sizeof(shown), value, sizeof(shown) - 4,
                          SANITIZE_CONTROLS | SANITIZE_ELLIPSIS),
            want);
    return WH_EINVAL;
}

int flags_usage_error(const struct flag_set *set, FILE *err_to, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    sanitize_controls(line);
    fprintf(err_to, WH_PROG ": %s: %s\n", set->command, line);
    return WH_EINVAL;
}

/* ---- value parsers ---- */

int flags_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;

    /* strtol alone would take " 5" and "+5" */
    if (s == NULL || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')))
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || errno != 0 || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int flags_parse_duration_ms(const char *s, long lo_ms, long hi_ms, long *ms_out)
{
    static const struct {
        const char *unit;
        long ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    char *end;
    long v;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0)
        return -1;
    if (strcmp(s, "0") == 0) /* Go's rule: "0" alone needs no unit */
        end = "ms";
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(end, units[i].unit) != 0)
            continue;
        if (v > LONG_MAX / units[i].ms || v * units[i].ms < lo_ms || v * units[i].ms > hi_ms)
            return -1;
        *ms_out = v * units[i].ms;
        return 0;
    }
    return -1;
}

int flags_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True", NULL};
    static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False", NULL};
    int i;

    if (flags_parse_enum(s, yes, &i) == 0) {
        *out = true;
        return 0;
    }
    if (flags_parse_enum(s, no, &i) == 0) {
        *out = false;
        return 0;
    }
    return -1;
}

int flags_parse_enum(const char *s, const char *const *names, int *index_out)
{
    if (s == NULL)
        return -1;
    for (int i = 0; names[i] != NULL; i++)
        if (strcmp(s, names[i]) == 0) {
            *index_out = i;
            return 0;
        }
    return -1;
}
