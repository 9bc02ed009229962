/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzzutil.h - what the libFuzzer harnesses share: a property check that
 * aborts (so libFuzzer records the input as a crash) and input splitting.
 *
 * Header-only (static functions) so each harness stays one translation unit
 * linked against the library sources. Single-threaded, as libFuzzer calls.
 */
#ifndef WH_FUZZUTIL_H
#define WH_FUZZUTIL_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));

/* A property does not hold: say which and abort, so the input is kept. */
static void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "\n==PROPERTY VIOLATION== %s:%d: (%s) ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                                     \
    } while (0)

/* Compact JSON text of v for a violation message (malloc'd, never NULL). */
__attribute__((unused)) static char *fuzz_dump(const json_t *v)
{
    char *s = v != NULL ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

    return s != NULL ? s : strdup("(null)");
}

/* Whether v is the JSON string s. */
__attribute__((unused)) static int str_is(const json_t *v, const char *s)
{
    return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

#endif
