/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonw.h - JSON text written straight into a struct buf (the answer and patch writer).
 *
 * For answers built once and sent: no tree is made, each piece is appended as text.
 * The bytes are exactly those jansson's json_dumps(JSON_COMPACT) writes for the same
 * values (RFC 8259 §7 escaping of `"`, `\` and control characters only, `/` and
 * non-ASCII copied), so a reader cannot tell the two apart.
 *
 * Every function appends to o and returns o->rc: 0, or the buffer's first failure
 * (WH_ENOMEM, WH_ETOOBIG at o's max), which stays in o->rc and makes every later
 * append a no-op (base/buf.h), so a writer checks once at the end.
 * Pure functions on a caller-owned buffer; thread-safe for distinct buffers.
 */
#ifndef WH_JSONW_H
#define WH_JSONW_H

#include <jansson.h>
#include <stddef.h>
#include <string.h>

#include "base/buf.h"

/** Append n bytes of JSON text as they are (borrowed): punctuation, or a string's
 * content already escaped (as it stood in a JSON body). @return o->rc. Inline: most
 * pieces are a few bytes into room already there, copied here (a literal's with a
 * copy of known length); buf_append only to grow. */
static inline int jsonw_raw(struct buf *o, const char *s, size_t n)
{
    if (o->rc == 0 && o->data != NULL && n < o->alloc - o->len && n <= o->max - o->len) {
        memcpy(o->data + o->len, s, n);
        o->len += n;
        o->data[o->len] = '\0';
        return 0;
    }
    {
        int rc = buf_append(o, s, n); /* a failure stays in o->rc */

        (void)rc;
    }
    return o->rc;
}

/** jsonw_raw of a string literal (its length known at compile time). @return o->rc. */
#define jsonw_lit(o, lit) jsonw_raw((o), "" lit, sizeof(lit) - 1)

/**
 * Append the JSON string of the n bytes at s (borrowed; may hold NULs), quotes
 * included, escaped per RFC 8259 §7: `"` `\` as `\"` `\\`, the control characters
 * U+0000-U+001F as `\b \f \n \r \t` or `\u00XX` (upper-case hex, as jansson writes),
 * every other byte copied. s must be valid UTF-8 (RFC 8259 §8.1); not checked here.
 * @return o->rc.
 */
int jsonw_string(struct buf *o, const char *s, size_t n);

/** jsonw_string of the NUL-terminated s. @return o->rc. */
int jsonw_cstring(struct buf *o, const char *s);

/**
 * Append "/" and the n bytes of the reference token seg (borrowed), escaped per
 * RFC 6901 §3 (`~` as `~0`, `/` as `~1`) and then as JSON string content (RFC 8259
 * §7, no quotes): a JSON Pointer built in o is ready to be quoted as it stands.
 * @return o->rc.
 */
int jsonw_pointer_segment(struct buf *o, const char *seg, size_t n);

/**
 * Append the compact JSON text of v (borrowed): objects in their stored key order,
 * no whitespace, integers in decimal; exactly json_dumps(v, JSON_COMPACT |
 * JSON_ENCODE_ANY) (reals are written by jansson's own dumper, for its precision
 * and form). Recursion follows v's depth, which jansson's parser bounds (2048).
 * @return o->rc; WH_EINVAL (kept in o->rc) for a NULL v or one jansson cannot dump.
 */
int jsonw_value(struct buf *o, const json_t *v);

/* How many values a struct jsonw_texts holds; later ones are written the long way. */
#define JSONW_TEXTS_MAX 64

/*
 * Values whose compact text is known already: nodes of trees no one edits (the
 * plugins' Job-constant parts, plugins/plugin.h plugin_memo_get), each beside the
 * text jsonw_value wrote for it once. Every pointer is borrowed. Found by the value's
 * address in an open-addressing table at most half full: one probe or two per value
 * written, known or not, however many a Job with thousands of tasks registers.
 */
struct jsonw_texts {
    size_t n;
    struct jsonw_text {
        const json_t *value;
        const char *text;
        size_t len;
    } e[JSONW_TEXTS_MAX];
    unsigned char at[2 * JSONW_TEXTS_MAX]; /* by address hash: 1 + index in e, 0 = free */
};

/** Make t empty. */
void jsonw_texts_init(struct jsonw_texts *t);

/**
 * Remember that v's compact text is the len bytes at text (both borrowed: they must
 * outlive t's use, and v must not change meanwhile). Ignored when t is NULL or full,
 * or v is known already (the value is then written as before, with the same bytes).
 */
void jsonw_texts_add(struct jsonw_texts *t, const json_t *v, const char *text, size_t len);

/**
 * jsonw_value(o, v), the same bytes, copying the known text (t, may be NULL) of v,
 * or of each item when v is an array, in place of walking it: the patch writer's
 * op values are such parts, or arrays of them. @return o->rc, as jsonw_value's.
 */
int jsonw_value_texts(struct buf *o, const json_t *v, const struct jsonw_texts *t);

#endif
