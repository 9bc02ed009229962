/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsongen.h - seeded random JSON documents for the Check suites (header-only,
 * static): the JSON writer's (check_jsonw) and the fast reader's (check_jsonr)
 * random tests. A linear congruential generator, so a seed gives the same
 * documents on every machine.
 */
#ifndef WH_TESTS_JSONGEN_H
#define WH_TESTS_JSONGEN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct jsongen {
    uint64_t state; /* the seed, then the generator's state */
    bool reals;     /* numbers include reals; else 64-bit integer extremes instead */
};

/* A number in [0, n). */
static inline uint32_t jsongen_rnd(struct jsongen *g, uint32_t n)
{
    g->state = g->state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(g->state >> 33) % n;
}

/* A string of ASCII (control characters, quotes, slashes, ~ included) and some UTF-8.
 * @return new reference. */
static inline json_t *jsongen_string(struct jsongen *g)
{
    static const char *const pieces[] = {"a",
                                         "Z",
                                         "0",
                                         "\"",
                                         "\\",
                                         "/",
                                         "~",
                                         "\n",
                                         "\t",
                                         "\x01",
                                         "\x1f",
                                         " ",
                                         "\xc3\xa9",
                                         "\x7f",
                                         "\xe2\x82\xac",
                                         "\xf0\x9f\x98\x80"};
    char s[64] = "";
    size_t n = jsongen_rnd(g, 8);

    for (size_t i = 0; i < n; i++)
        strcat(s, pieces[jsongen_rnd(g, sizeof(pieces) / sizeof(pieces[0]))]);
    return json_string(s);
}

/* A value at most depth containers deep; top: an object or an array. @return new reference. */
static inline json_t *jsongen_value(struct jsongen *g, int depth, bool top)
{
    uint32_t k = top ? 6 + jsongen_rnd(g, 3) : jsongen_rnd(g, depth > 0 ? 9 : 6);
    json_t *v;

    switch (k) {
    case 0: return json_null();
    case 1: return jsongen_rnd(g, 2) ? json_true() : json_false();
    case 2: return json_integer((json_int_t)jsongen_rnd(g, 2000000) - 1000000);
    case 3:
        if (g->reals)
            return json_real((double)jsongen_rnd(g, 100000) / 7.0);
        return json_integer(jsongen_rnd(g, 2) ? INT64_MIN : INT64_MAX);
    case 4:
    case 5: return jsongen_string(g);
    case 6:
    case 7:
        v = json_object();
        for (uint32_t i = jsongen_rnd(g, 5); i > 0; i--) {
            json_t *key = jsongen_string(g);

            json_object_set_new(v, json_string_value(key), jsongen_value(g, depth - 1, false));
            json_decref(key);
        }
        return v;
    default:
        v = json_array();
        for (uint32_t i = jsongen_rnd(g, 5); i > 0; i--)
            json_array_append_new(v, jsongen_value(g, depth - 1, false));
        return v;
    }
}

#endif
