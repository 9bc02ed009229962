/* SPDX-License-Identifier: Apache-2.0 */
/*
 * args.h - the plugin argument parser: Go's `flag` package in ContinueOnError
 * mode, exactly as docs/plugins.md §3.4 describes it, shared by every plugin but env.
 *
 * Pure function of its inputs; thread-safe.
 */
#ifndef WH_ARGS_H
#define WH_ARGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum args_type { ARGS_STRING, ARGS_INT, ARGS_BOOL };

/*
 * One flag. `value` points at the caller's storage, already holding the default:
 *   ARGS_STRING -> const char **  (result borrowed from the argv array's strings)
 *   ARGS_INT    -> int64_t *
 *   ARGS_BOOL   -> bool *
 * Two defs may share storage (an alias, D4: ray's clientServerPort).
 */
struct args_def {
    const char *name; /* exact, case-sensitive, without dashes */
    enum args_type type;
    void *value;
};

/**
 * Parse argv (a JSON array of strings, or NULL / JSON null / any non-array =
 * no arguments) against defs, left to right, per docs/plugins.md §3.4 rules 1-11.
 * Values set before an error stay set (Go ContinueOnError).
 * A non-string element is treated like a non-flag element: parsing stops there
 * (the list ends there, so a flag waiting for its value there gets "flag needs an
 * argument"). An undefined -h/-help gives "flag: help requested" (Go's ErrHelp).
 *
 * @param errbuf  receives Go's message on error ("flag provided but not defined: -x",
 *                "bad flag syntax: ---x", "flag needs an argument: -port",
 *                "invalid value \"abc\" for flag -port: parse error",
 *                "invalid value \"1e99\" for flag -port: parse error",
 *                "invalid value \"9223372036854775808\" for flag -port: value out of range",
 *                "invalid boolean value \"yes\" for -x: parse error"); may be NULL.
 * @return 0 when parsing ended without error (including a silent stop),
 *         WH_EINVAL on a parse error.
 */
int args_parse(const struct args_def *defs, size_t ndefs, const json_t *argv, char *errbuf,
               size_t errlen);

/**
 * Go strconv.ParseInt(s, 0, 64): optional sign, 0x/0o/0b/0 prefixes, `_` separators
 * per Go's underscoreOK. On syntax error *out = 0 and returns WH_EINVAL; on overflow
 * *out = INT64_MAX or INT64_MIN and returns WH_ETOOBIG; else 0.
 */
int args_parse_int(const char *s, int64_t *out);

/** Go strconv.ParseBool. @return 0 and *out set, or WH_EINVAL (and *out = false). */
int args_parse_bool(const char *s, bool *out);

#endif
