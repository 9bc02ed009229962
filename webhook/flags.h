/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flags.h - one flag table per command (serve, render, gen-certs): from it come
 * the getopt_long option array and optstring, the flag list of --help, and the
 * usage-error messages every command shares ("unknown flag X (see --help)",
 * "flag X needs a value", "invalid --F \"V\": want ...", "unexpected argument").
 * Beside them, the value parsers every command shares: durations (ms, s, m, h),
 * bounded integers, booleans and enums, so one spelling is valid for every flag
 * of a kind.
 *
 * Every message is one usage line on err_to, "volcano-plugin-webhook: CMD: ...\n",
 * after which the command exits 2 (webhook/commands.h). The user's text in it
 * (a flag, a value, an argument) is cut and has its control characters shown as
 * '?' (base/sanitize.h), so the message stays one line.
 *
 * Threads: main thread only. flags_next uses getopt_long's globals (optind,
 * optarg, opterr); flags_parser_init resets them, so nothing here is reentrant.
 */
#ifndef WH_FLAGS_H
#define WH_FLAGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/error.h"

#define FLAGS_MAX 64 /* flags in one table, --help included */

/* "8443" from 8443: a number macro inside a static help text or default */
#define FLAGS_STR(x)  FLAGS_STR_(x)
#define FLAGS_STR_(x) #x

/*
 * One flag of a command. --help prints it as
 *   "  -s, --name ARG   help line 1\n" then each further help line under the first,
 * with " (default DEF)" after the last one.
 */
struct flag {
    int id;           /* what flags_next returns for it: short_name when set, else >= 256 */
    const char *name; /* long name without "--" */
    char short_name;  /* one-letter spelling ("-f"), or 0 for none */
    int has_arg;      /* no_argument, required_argument or optional_argument (getopt.h) */
    const char *arg;  /* the value's name in --help ("FILE"); optional: "--name[=ARG]" */
    const char *help; /* lines without their indent, '\n' between them (a trailing '\n'
                         puts the default on a line of its own); NULL: not in --help */
    const char *def;  /* the default as --help states it, a value the flag accepts:
                         "(default DEF)"; NULL when the help words it otherwise */
};

/* A command's flags and the text of its --help around them. */
struct flag_set {
    const char *command;      /* "render": messages say "volcano-plugin-webhook: render: " */
    const struct flag *flags; /* the table, in --help order */
    size_t nflags;            /* entries in flags, at most FLAGS_MAX */
    int help_column;          /* column where every help line starts */
    bool short_column;        /* indent long-only flags by 4, under the "-s, " of others */
    const char *usage;        /* printed before the flag list, verbatim */
    const char *footer;       /* printed after it, verbatim; NULL: none */
};

/* getopt_long's view of a flag_set: made by flags_parser_init, owns no memory. */
struct flags_parser {
    const struct flag_set *set;            /* borrowed */
    struct option options[FLAGS_MAX + 1];  /* the generated long options, {0} last */
    char optstring[2 + 3 * FLAGS_MAX + 1]; /* ":" then "s", "s:" or "s::" per short name */
};

/**
 * Generate the getopt_long option array and optstring of set into p and reset
 * getopt_long (optind = 0, opterr = 0: our own messages), ready for flags_next.
 * The optstring starts with ':' so that a missing value is told from an
 * unknown flag.
 *
 * @param[out] p  filled; borrows set, which must outlive it (tables are static)
 * @param set     borrowed; at most FLAGS_MAX flags, ids unique, a flag with a
 *                short_name has id == short_name
 * @return 0, or WH_EINVAL when set breaks those rules (a programming error: the
 *         table is static)
 */
int flags_parser_init(struct flags_parser *p, const struct flag_set *set) WH_WARN_UNUSED;

/**
 * The next flag of argv, as getopt_long finds it (argv[0] is the subcommand
 * name; getopt_long may reorder argv's pointers, not the strings).
 *
 * @param p         from flags_parser_init
 * @param[out] arg  the flag's value, borrowed from argv; NULL for a flag
 *                  without one (or an optional value not given)
 * @param err_to    where an unknown flag or a missing value is told
 * @return the flag's id; -1 when the flags are done (optind is the first
 *         argument left, for flags_no_arguments); WH_EINVAL after one message:
 *         "unknown flag X (see --help)" or "flag X needs a value"
 */
int flags_next(struct flags_parser *p, int argc, char **argv, const char **arg, FILE *err_to);

/**
 * After flags_next returned -1: refuse an argument left over. A left-over
 * argument after a flag whose value is optional gets the hint to join them with
 * "=" (getopt_long never takes an optional value from the next argument).
 *
 * @param p       from flags_parser_init, after the last flags_next
 * @param err_to  where the message goes
 * @return 0 when nothing is left; WH_EINVAL after one message:
 *         "unexpected argument \"X\"" or "unexpected argument \"X\" (write --F=X)"
 */
int flags_no_arguments(const struct flags_parser *p, int argc, char **argv, FILE *err_to);

/**
 * Print the --help text of set on to: usage, the flag list (hidden flags, those
 * with help NULL, left out), footer. A flag's left part ("  -s, --name ARG")
 * is padded to help_column, or followed by two spaces when it reaches it.
 */
void flags_print_help(const struct flag_set *set, FILE *to);

/**
 * One usage line on err_to: "volcano-plugin-webhook: CMD: invalid FLAG \"VALUE\": WANT\n".
 * VALUE is the user's text: cut to 124 bytes ("..." marks the cut) and control
 * characters shown as '?'. flag and want are the program's text.
 *
 * @param set    gives the command's name (borrowed)
 * @param flag   as the user knows it: "--port", "-v"
 * @param value  the value given (NULL is "")
 * @return WH_EINVAL, for `return flags_bad_value(...)`
 */
int flags_bad_value(const struct flag_set *set, FILE *err_to, const char *flag, const char *value,
                    const char *want);

/**
 * One usage line on err_to: "volcano-plugin-webhook: CMD: " then fmt. The
 * formatted line (which may hold the user's text) has its control characters
 * shown as '?' and is cut to 1 KiB, so it stays one line. '\n' is added.
 * @return WH_EINVAL
 */
__attribute__((format(printf, 3, 4))) int flags_usage_error(const struct flag_set *set,
                                                            FILE *err_to, const char *fmt, ...);

/**
 * A strict decimal integer in [lo, hi]: an optional '-' then digits only (no
 * spaces, no '+', no trailing text).
 * @param[out] out  set on 0 only
 * @return 0, or -1 (not such an integer, out of range)
 */
int flags_parse_long(const char *s, long lo, long hi, long *out) WH_WARN_UNUSED;

/**
 * A Go-style duration of one integer and one unit ("500ms", "2s", "1m", "1h"),
 * or "0" alone (Go's time.ParseDuration takes it), in [lo_ms, hi_ms].
 * @param[out] ms_out  milliseconds, set on 0 only
 * @return 0, or -1 (no such duration, overflow, out of range)
 */
int flags_parse_duration_ms(const char *s, long lo_ms, long hi_ms, long *ms_out) WH_WARN_UNUSED;

/**
 * A boolean as Go's strconv.ParseBool spells one: 1 t T true TRUE True, and
 * 0 f F false FALSE False.
 * @param[out] out  set on 0 only
 * @return 0, or -1
 */
int flags_parse_bool(const char *s, bool *out) WH_WARN_UNUSED;

/**
 * One of names (NULL-terminated, borrowed), compared exactly.
 * @param[out] index_out  the index of s in names, set on 0 only
 * @return 0, or -1 (none of them)
 */
int flags_parse_enum(const char *s, const char *const *names, int *index_out) WH_WARN_UNUSED;

#endif
