/* SPDX-License-Identifier: Apache-2.0 */
/*
 * args.c - the plugin argument parser (docs/plugins.md §3.4, D4): Go's `flag` package in
 * ContinueOnError mode, with strconv.ParseInt(s, 0, 64) and strconv.ParseBool.
 *
 * The code follows Go's flag.(*FlagSet).parseOne and strconv.ParseUint/ParseInt
 * step by step, so corner cases (which error wins, what value a failed Set
 * leaves behind) come out the way Volcano sees them.
 *
 * Threads: none of its own; no state, so callable from any thread.
 */
#include "plugins/args.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

static int fail(char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *errbuf, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (errbuf != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(errbuf, errlen, fmt, ap);
        va_end(ap);
    }
    return WH_EINVAL;
}

/* Go's strconv lower(): ASCII letters fold to lower case, other bytes move harmlessly. */
static unsigned char lower(unsigned char c)
{
    return c | ('x' - 'X');
}

/* Go's strconv.underscoreOK: `_` only between digits or after a base prefix. */
static bool underscore_ok(const char *s)
{
    char saw = '^'; /* ^ start, 0 digit or prefix, _ underscore, ! other */
    bool hex = false;
    size_t i = 0;

    if (s[0] == '-' || s[0] == '+')
        s++;
    if (s[0] == '0'
        && (lower((unsigned char)s[1]) == 'b' || lower((unsigned char)s[1]) == 'o'
            || lower((unsigned char)s[1]) == 'x')) {
        i = 2;
        saw = '0';
        hex = lower((unsigned char)s[1]) == 'x';
    }
    for (; s[i] != '\0'; i++) {
        unsigned char c = (unsigned char)s[i];

        if ((c >= '0' && c <= '9') || (hex && lower(c) >= 'a' && lower(c) <= 'f')) {
            saw = '0';
            continue;
        }
        if (c == '_') {
            if (saw != '0')
                return false;
            saw = '_';
            continue;
        }
        if (saw == '_')
            return false;
        saw = '!';
    }
    return saw != '_';
}

/* Go's strconv.ParseUint(s, 0, 64). On overflow *out = UINT64_MAX and WH_ETOOBIG. */
static int parse_uint(const char *s, uint64_t *out)
{
    const char *s0 = s;
    unsigned base = 10;
    bool underscores = false;
    uint64_t n = 0;
    uint64_t cutoff;

    *out = 0;
    if (s[0] == '\0')
        return WH_EINVAL;
    if (s[0] == '0') {
        size_t len = strlen(s);
        unsigned char p = lower((unsigned char)s[1]);

        if (len >= 3 && p == 'b') {
            base = 2;
            s += 2;
        } else if (len >= 3 && p == 'o') {
            base = 8;
            s += 2;
        } else if (len >= 3 && p == 'x') {
            base = 16;
            s += 2;
        } else {
            base = 8;
            s += 1;
        }
    }
    cutoff = UINT64_MAX / base + 1; /* smallest n with n * base > UINT64_MAX */
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        unsigned d;
        uint64_t n1;

        if (c == '_') {
            underscores = true;
            continue;
        } else if (c >= '0' && c <= '9') {
            d = c - '0';
        } else if (lower(c) >= 'a' && lower(c) <= 'z') {
            d = lower(c) - 'a' + 10u;
        } else {
            return WH_EINVAL;
        }
        if (d >= base)
            return WH_EINVAL;
        /* Go reports overflow as soon as it happens, before later bad digits. */
        if (n >= cutoff) {
            *out = UINT64_MAX;
            return WH_ETOOBIG;
        }
        n *= base;
        n1 = n + d;
        if (n1 < n) {
            *out = UINT64_MAX;
            return WH_ETOOBIG;
        }
        n = n1;
    }
    if (underscores && !underscore_ok(s0))
        return WH_EINVAL;
    *out = n;
    return 0;
}

int args_parse_int(const char *s, int64_t *out)
{
    const uint64_t cutoff = (uint64_t)1 << 63;
    bool neg = false;
    uint64_t un;
    int rc;

    *out = 0;
    if (s == NULL || s[0] == '\0')
        return WH_EINVAL;
    if (s[0] == '+') {
        s++;
    } else if (s[0] == '-') {
        neg = true;
        s++;
    }
    rc = parse_uint(s, &un);
    if (rc == WH_EINVAL)
        return rc;
    if (!neg && un >= cutoff) {
        *out = INT64_MAX;
        return WH_ETOOBIG;
    }
    if (neg && un > cutoff) {
        *out = INT64_MIN;
        return WH_ETOOBIG;
    }
    if (neg)
        *out = un == cutoff ? INT64_MIN : -(int64_t)un;
    else
        *out = (int64_t)un;
    return 0;
}

int args_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    size_t i;

    *out = false;
    if (s == NULL)
        return WH_EINVAL;
    for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcmp(s, no[i]) == 0)
            return 0;
    }
    return WH_EINVAL;
}

/*
 * Go's %q (strconv.Quote) into dst: `"` and `\` escaped, C escapes for \a..\r,
 * \xNN for other ASCII controls. Non-ASCII UTF-8 is copied as is (jansson strings
 * are valid UTF-8); Go would \u-escape the few non-printable code points.
 */
static void go_quote(char *dst, size_t len, const char *s)
{
    static const char esc_from[] = "\a\b\f\n\r\t\v\"\\";
    static const char esc_to[] = "abfnrtv\"\\";
    size_t o = 0;

    if (len < 3) {
        if (len > 0)
            dst[0] = '\0';
        return;
    }
    dst[o++] = '"';
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        const char *e = strchr(esc_from, c);
        char piece[5];
        size_t n;

        if (e != NULL) {
            piece[0] = '\\';
            piece[1] = esc_to[e - esc_from];
            n = 2;
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(piece, sizeof(piece), "\\x%02x", c);
            n = 4;
        } else {
            piece[0] = (char)c;
            n = 1;
        }
        if (o + n + 2 > len) /* room for the closing quote and NUL */
            break;
        memcpy(dst + o, piece, n);
        o += n;
    }
    dst[o++] = '"';
    dst[o] = '\0';
}

static const struct args_def *find_def(const struct args_def *defs, size_t ndefs, const char *name,
                                       size_t namelen)
{
    size_t i;

    for (i = 0; i < ndefs; i++) {
        if (strlen(defs[i].name) == namelen && memcmp(defs[i].name, name, namelen) == 0)
            return &defs[i];
    }
    return NULL;
}

/* Element i of argv as a string, or NULL past the end or at a non-string element. */
static const char *arg_at(const json_t *argv, size_t i)
{
    return json_string_value(json_array_get(argv, i));
}

int args_parse(const struct args_def *defs, size_t ndefs, const json_t *argv, char *errbuf,
               size_t errlen)
{
    char quoted[512];
    size_t i = 0;

    if (errbuf != NULL && errlen > 0)
        errbuf[0] = '\0';
    if (!json_is_array(argv))
        return 0;

    for (;;) {
        const char *s = arg_at(argv, i);
        const char *name;
        const char *eq;
        const char *value = NULL;
        size_t namelen;
        const struct args_def *def;
        int rc;

        /* Rule 2: the end, a non-string, or a non-flag element stops silently. */
        if (s == NULL || strlen(s) < 2 || s[0] != '-')
            return 0;
        /* Rule 3: "--" is consumed and ends the flags. */
        if (strcmp(s, "--") == 0)
            return 0;
        /* Rule 4: one or two leading dashes. */
        name = s[1] == '-' ? s + 2 : s + 1;
        if (name[0] == '\0' || name[0] == '-' || name[0] == '=')
            return fail(errbuf, errlen, "bad flag syntax: %s", s);
        i++;

        /* Rule 5: split at the first `=`; it cannot be the first character. */
        eq = strchr(name + 1, '=');
        namelen = eq != NULL ? (size_t)(eq - name) : strlen(name);
        if (eq != NULL)
            value = eq + 1;

        /* Rule 6: exact names; -h/-help are Go's flag.ErrHelp when undefined. */
        def = find_def(defs, ndefs, name, namelen);
        if (def == NULL) {
            if ((namelen == 1 && name[0] == 'h') || (namelen == 4 && memcmp(name, "help", 4) == 0))
                return fail(errbuf, errlen, "flag: help requested");
            return fail(errbuf, errlen, "flag provided but not defined: -%.*s", (int)namelen, name);
        }

        /* Rule 7: booleans never take the next element; a bad spelling sets false. */
        if (def->type == ARGS_BOOL) {
            if (value == NULL) {
                *(bool *)def->value = true;
                continue;
            }
            if (args_parse_bool(value, (bool *)def->value) < 0) {
                go_quote(quoted, sizeof(quoted), value);
                return fail(errbuf, errlen, "invalid boolean value %s for -%s: parse error", quoted,
                            def->name);
            }
            continue;
        }

        /* Rule 8: otherwise the value is after `=` or the next element, whatever it is. */
        if (value == NULL) {
            value = arg_at(argv, i);
            if (value == NULL)
                return fail(errbuf, errlen, "flag needs an argument: -%s", def->name);
            i++;
        }
        if (def->type == ARGS_STRING) {
            *(const char **)def->value = value; /* rule 9: anything, even "" */
            continue;
        }
        /* Rule 10: the failed parse leaves 0 or the clamp in the flag, as Go does. */
        rc = args_parse_int(value, (int64_t *)def->value);
        if (rc < 0) {
            go_quote(quoted, sizeof(quoted), value);
            return fail(errbuf, errlen, "invalid value %s for flag -%s: %s", quoted, def->name,
                        rc == WH_ETOOBIG ? "value out of range" : "parse error");
        }
    }
}
