/* SPDX-License-Identifier: Apache-2.0 */
/*
 * patch.h - RFC 6902 JSON Patch from a before/after pair (the patch builder).
 *
 * All patch correctness lives here. Pure functions; thread-safe.
 */
#ifndef WH_PATCH_H
#define WH_PATCH_H

#include <jansson.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/jsonw.h"

/**
 * Compute the RFC 6902 operations that turn `before` into `after`.
 *
 * Rules (docs/plugins.md §7.3):
 *  - objects compare key by key, in `after`'s key order: a member absent in
 *    before gives ONE `add` of the whole value (so a missing env/volumes/ports/
 *    initContainers array is created whole, once); a member absent in after
 *    gives `remove`; different JSON types or scalars give `replace`; objects recurse.
 *  - arrays: when after is at least as long as before, the common prefix recurses
 *    element by element and each extra element gives `add` with path `.../-`;
 *    a shorter array gives one `replace` of the whole array.
 *  - path segments escape `~` as `~0` and `/` as `~1` (RFC 6901 §3).
 *  - integers and reals compare by json_equal (so 420 != 420.0).
 * @return new reference: JSON array of ops ([] when equal); NULL on ENOMEM
 *         (or when before or after is NULL). Op values are after's own nodes
 *         (new references, no copy): change neither while the other is in use
 *         (json_deep_copy one first).
 */
json_t *patch_diff(const json_t *before, const json_t *after);

/**
 * patch_diff's ops written as the compact JSON text of the op array, appended to
 * out as the walk finds them: no ops tree and no dump (base/jsonw.h). The bytes are
 * exactly json_dumps(patch_diff(before, after), JSON_COMPACT) ("[]" when equal),
 * so the same rules and op order hold (docs/plugins.md §7.3).
 * @param before, after  borrowed, not changed
 * @param known    may be NULL: values of after whose text is known (base/jsonw.h
 *                 jsonw_value_texts: an op's value, or its array's items, copied
 *                 from there; the bytes are the same)
 * @param out      caller-owned buffer; its max bounds the patch (WH_ETOOBIG)
 * @param n_ops    out, may be NULL: the ops written (0 when equal)
 * @return out->rc: 0; WH_EINVAL when before or after is NULL; WH_ENOMEM; WH_ETOOBIG
 *         when the text would pass out's max (the walk stops there). On failure out
 *         holds a partial text and keeps the failure in its rc (base/buf.h).
 */
int patch_diff_write(const json_t *before, const json_t *after, const struct jsonw_texts *known,
                     struct buf *out, size_t *n_ops);

/*
 * The patch writer: patch_diff_write's text and rules for a caller that walks its own
 * edits (plugins/podedit.c) and knows where each op goes, in place of a diff of two
 * whole documents. The caller keeps the JSON Pointer with push and cut, and at each
 * place writes an add, or the diff of a before and after value (the same ops
 * patch_diff_write writes for them there). Ops are written as they come; the first
 * failure (WH_ENOMEM, WH_ETOOBIG at out's max) stays in out->rc and stops the rest.
 */
struct patch_writer {                /* the diff walk's state: patch.c's alone */
    struct buf path;                 /* the current JSON Pointer, escaped for JSON text */
    json_t *ops;                     /* patch_diff: the array the ops are appended to */
    struct buf *text;                /* where the op array's text goes */
    const struct jsonw_texts *known; /* op values' texts, or NULL */
    size_t n;                        /* ops written */
};

/** Start the op array's text in out (caller-owned), known as for patch_diff_write. */
void patch_writer_begin(struct patch_writer *w, struct buf *out, const struct jsonw_texts *known);

/**
 * Step down into member segment (borrowed, unescaped) of the current place; *mark is
 * what patch_writer_cut takes to step back. @return out->rc.
 */
int patch_writer_push(struct patch_writer *w, const char *segment, size_t *mark);

/** patch_writer_push of array index i. @return out->rc. */
int patch_writer_push_index(struct patch_writer *w, size_t i, size_t *mark);

/** Step back to where *mark was taken. */
void patch_writer_cut(struct patch_writer *w, size_t mark);

/** Write {"op":"add"} of value (borrowed) at the current place. @return out->rc. */
int patch_writer_add(struct patch_writer *w, const json_t *value);

/**
 * Write patch_diff_write's ops for before → after (both borrowed) at the current place
 * (a replace when their kinds differ, the members' ops when both are objects, ...).
 * @return out->rc.
 */
int patch_writer_diff(struct patch_writer *w, const json_t *before, const json_t *after);

/**
 * Close the op array's text. @param n_ops  out, may be NULL: the ops written.
 * @return out->rc: 0, WH_ENOMEM or WH_ETOOBIG.
 */
int patch_writer_end(struct patch_writer *w, size_t *n_ops);

/**
 * Append the RFC 6901 escaped form of segment to dst (capacity dstlen, NUL-terminated).
 * @return bytes the full escaped segment needs (excluding NUL); output is cut when
 *         that is >= the remaining space, like snprintf.
 */
size_t patch_escape_segment(char *dst, size_t dstlen, const char *segment);

/**
 * Apply an RFC 6902 patch (add, remove, replace, test, move, copy) to a deep copy
 * of doc, strictly per RFC 6902 §4-5 (a missing parent, an index past the end or
 * a failed test is an error; "-" appends). doc is never modified.
 * @return new reference: the patched copy; NULL when a op is malformed or does
 *         not apply (err filled, WH_EINVAL) or on ENOMEM (WH_ENOMEM).
 */
json_t *patch_apply(const json_t *doc, const json_t *patch, struct wh_error *err);

#endif
