/* SPDX-License-Identifier: Apache-2.0 */
/*
 * patch.c - RFC 6902 JSON Patch: the diff that becomes the admission response
 * (docs/plugins.md §7.3) and a strict applier used by tests and the fixed-point check.
 *
 * Design: one walk of both documents (struct patch_writer), keeping the current JSON
 * Pointer in one struct buf (push a segment, recurse, cut back; "" for the root). It
 * hands each op, as it finds it, to a jansson array (patch_diff: the op values are
 * after's own nodes) or to the JSON text of the patch (patch_diff_write, base/jsonw.h:
 * the answer's path, with no ops tree and no dump).
 * patch_apply works on a deep copy and throws it away at the first failing op,
 * so a patch applies whole or not at all.
 *
 * Threads: none of its own; no state, so callable from any thread.
 */
#include "base/patch.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonobj.h"
#include "base/jsonw.h"

/* ---- the diff ------------------------------------------------------------ */

size_t patch_escape_segment(char *dst, size_t dstlen, const char *segment)
{
    size_t used = dst != NULL ? strnlen(dst, dstlen) : dstlen;
    size_t room = dstlen - used; /* includes the NUL */
    size_t need = 0;
    const char *c;

    for (c = segment; *c != '\0'; c++) {
        const char *piece = *c == '~' ? "~0" : *c == '/' ? "~1" : NULL;
        size_t n = piece != NULL ? 2 : 1;
        size_t k;

        for (k = 0; k < n; k++, need++) {
            if (need + 1 < room)
                dst[used + need] = piece != NULL ? piece[k] : *c;
        }
    }
    if (room > 0)
        dst[used + (need < room ? need : room - 1)] = '\0';
    return need;
}

/*
 * One diff walk (struct patch_writer, patch.h): the ops go either into a jansson array
 * (ops, for patch_diff) or, as the walk finds them, straight into JSON text (text, for
 * patch_diff_write and the writer). path is the current JSON Pointer: plain for the
 * array, already JSON-escaped for the text (each segment escaped once, when pushed,
 * not once per op).
 */

/* Append "/" and the escaped segment; the old length goes to *mark for path_cut. */
static int path_push(struct patch_writer *d, const char *segment, size_t *mark)
{
    struct buf *p = &d->path;
    /* Most keys need no escaping: measure the plain run once, escape only the rest. */
    size_t plain = strcspn(segment, "~/");
    size_t seglen = plain + strlen(segment + plain);
    size_t need = 1 + seglen; /* bytes added, the NUL not counted */
    int rc;

    *mark = p->len;
    if (d->text != NULL)
        return jsonw_pointer_segment(p, segment, seglen);
    if (segment[plain] != '\0')
        need = 1 + plain + patch_escape_segment(NULL, 0, segment + plain);
    rc = buf_reserve(p, need);
    if (rc < 0)
        return rc;
    p->data[p->len] = '/';
    memcpy(p->data + p->len + 1, segment, plain);
    p->len += 1 + plain;
    p->data[p->len] = '\0';
    if (segment[plain] != '\0')
        p->len += patch_escape_segment(p->data, p->alloc, segment + plain);
    return 0;
}

static void path_cut(struct patch_writer *d, size_t mark)
{
    buf_truncate(&d->path, mark);
}

/* The ops the diff writes (RFC 6902 §4.1-§4.3): the name, and the text that opens
 * one after another op (the comma dropped for the first), up to the path's value. */
enum op_kind { OP_ADD, OP_REMOVE, OP_REPLACE };

static const struct {
    const char *name;
    const char *head;
    size_t head_len;
} ops[] = {
#define OP_TEXT(name) ",{\"op\":\"" name "\",\"path\":\""
#define OP_HEAD(name)                                                                              \
    {                                                                                              \
        name, OP_TEXT(name), sizeof(OP_TEXT(name)) - 1                                             \
    }
    [OP_ADD] = OP_HEAD("add"),
    [OP_REMOVE] = OP_HEAD("remove"),
    [OP_REPLACE] = OP_HEAD("replace"),
#undef OP_HEAD
#undef OP_TEXT
};

/* The op {"op", "path"[, "value"]} in that key order, written as text. */
static int emit_text(struct patch_writer *d, enum op_kind op, const json_t *value)
{
    struct buf *o = d->text;
    size_t first = d->n == 0; /* no comma before the first op */

    (void)jsonw_raw(o, ops[op].head + first, ops[op].head_len - first);
    (void)jsonw_raw(o, buf_cstr(&d->path), d->path.len);
    if (value != NULL) {
        (void)jsonw_lit(o, "\",\"value\":");
        (void)jsonw_value_texts(o, value, d->known);
        (void)jsonw_lit(o, "}");
    } else {
        (void)jsonw_lit(o, "\"}");
    }
    d->n++;
    return o->rc;
}

/* Append {"op", "path"[, "value"]} in that key order; value is referenced, not copied. */
static int emit(struct patch_writer *d, enum op_kind op, const json_t *value)
{
    /* Built member by member: json_pack's format parsing cost more than the op itself. */
    json_t *o;

    if (d->text != NULL)
        return emit_text(d, op, value);
    o = json_object();
    if (o == NULL)
        return WH_ENOMEM;
    if (json_object_set_new_nocheck(o, "op", json_string_nocheck(ops[op].name)) < 0
        || json_object_set_new_nocheck(o, "path", json_stringn(buf_cstr(&d->path), d->path.len)) < 0
        || (value != NULL && json_object_set_nocheck(o, "value", (json_t *)value) < 0)) {
        json_decref(o);
        return WH_ENOMEM;
    }
    d->n++;
    return json_array_append_new(d->ops, o) < 0 ? WH_ENOMEM : 0;
}

/* Decimal digits of i into buf (at least 21 bytes), NUL-terminated; @return buf. */
static const char *index_text(char *buf, size_t i)
{
    char *c = buf + 20;

    *c = '\0';
    do {
        *--c = (char)('0' + i % 10);
        i /= 10;
    } while (i > 0);
    return c;
}

static int diff_value(struct patch_writer *d, const json_t *a, const json_t *b);

/*
 * json_member(obj, key), looked for first at *at, an iterator of obj (or NULL), which
 * steps on past a member found there: the webhook's copy keeps the members of the pod
 * in their order and adds members at the end, so walking the two objects side by side
 * finds each member at the step, with no look-up (which walks the members before it).
 */
static const json_t *member_at(json_t *obj, void **at, const char *key)
{
    size_t n = strlen(key);
    const json_t *v;

    if (*at == NULL || json_object_iter_key_len(*at) != n
        || memcmp(json_object_iter_key(*at), key, n) != 0)
        return json_member(obj, key);
    v = json_object_iter_value(*at);
    *at = json_object_iter_next(obj, *at);
    return v;
}

/* Members in after's order (add or recurse), then members only before has (remove). */
static int diff_object(struct patch_writer *d, const json_t *a, const json_t *b)
{
    /* json_object_foreach wants a non-const object; it only reads it here. */
    json_t *ma = (json_t *)a;
    json_t *mb = (json_t *)b;
    const char *key;
    json_t *v;
    size_t mark;
    int rc;
    void *at = json_object_iter(ma);

    json_object_foreach(mb, key, v) {
        const json_t *old = member_at(ma, &at, key);

        if (old == v)
            continue; /* shared by the copy: no op, and no path to build */
        rc = path_push(d, key, &mark);
        if (rc < 0)
            return rc;
        rc = old == NULL ? emit(d, OP_ADD, v) : diff_value(d, old, v);
        path_cut(d, mark);
        if (rc < 0)
            return rc;
    }
    at = json_object_iter(mb);
    json_object_foreach(ma, key, v) {
        if (member_at(mb, &at, key) != NULL)
            continue;
        rc = path_push(d, key, &mark);
        if (rc < 0)
            return rc;
        rc = emit(d, OP_REMOVE, NULL);
        path_cut(d, mark);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* A kept prefix recurses and extra items append with "/-"; a shorter array is replaced. */
static int diff_array(struct patch_writer *d, const json_t *a, const json_t *b)
{
    size_t na = json_array_size(a);
    size_t nb = json_array_size(b);
    char idx[24];
    size_t mark;
    size_t i;
    int rc;

    if (nb < na)
        return emit(d, OP_REPLACE, b);
    for (i = 0; i < nb; i++) {
        if (i < na && json_array_get(a, i) == json_array_get(b, i))
            continue; /* shared by the copy */
        rc = path_push(d, i < na ? index_text(idx, i) : "-", &mark);
        if (rc < 0)
            return rc;
        if (i < na)
            rc = diff_value(d, json_array_get(a, i), json_array_get(b, i));
        else
            rc = emit(d, OP_ADD, json_array_get(b, i));
        path_cut(d, mark);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int diff_value(struct patch_writer *d, const json_t *a, const json_t *b)
{
    /* The same node (a leaf shared by a copy, or a subtree kept whole) is equal to itself. */
    if (a == b)
        return 0;
    /* Integer vs real counts as a type change, so 420 -> 420.0 is a replace. */
    if (json_typeof(a) != json_typeof(b))
        return emit(d, OP_REPLACE, b);
    if (json_is_object(b))
        return diff_object(d, a, b);
    if (json_is_array(b))
        return diff_array(d, a, b);
    return json_equal(a, b) ? 0 : emit(d, OP_REPLACE, b);
}

json_t *patch_diff(const json_t *before, const json_t *after)
{
    struct patch_writer d = {.ops = NULL};
    int rc;

    if (before == NULL || after == NULL)
        return NULL;
    buf_init(&d.path, BUF_NO_MAX);
    d.ops = json_array();
    if (d.ops == NULL)
        goto fail;
    rc = diff_value(&d, before, after);
    if (rc < 0)
        goto fail;
    buf_dispose(&d.path);
    return d.ops;
fail:
    buf_dispose(&d.path);
    json_decref(d.ops);
    return NULL;
}

int patch_diff_write(const json_t *before, const json_t *after, const struct jsonw_texts *known,
                     struct buf *out, size_t *n_ops)
{
    struct patch_writer d = {.text = out, .known = known};
    int rc;

    if (n_ops != NULL)
        *n_ops = 0;
    if (before == NULL || after == NULL) {
        buf_fail(out, WH_EINVAL);
        return WH_EINVAL;
    }
    buf_init(&d.path, BUF_NO_MAX);
    (void)jsonw_lit(out, "[");
    rc = diff_value(&d, before, after);
    /* A failed path push leaves out as it was: its failure is the walk's. */
    if (rc < 0)
        buf_fail(out, rc);
    (void)jsonw_lit(out, "]");
    buf_dispose(&d.path);
    if (n_ops != NULL)
        *n_ops = d.n;
    return out->rc;
}

/* ---- the writer: ops written by a caller's own walk ------------------------- */

void patch_writer_begin(struct patch_writer *w, struct buf *out, const struct jsonw_texts *known)
{
    struct patch_writer *d = w;

    memset(w, 0, sizeof(*w));
    d->text = out;
    d->known = known;
    buf_init(&d->path, BUF_NO_MAX);
    (void)jsonw_lit(out, "[");
}

int patch_writer_push(struct patch_writer *w, const char *segment, size_t *mark)
{
    struct patch_writer *d = w;
    int rc = path_push(d, segment, mark);

    if (rc < 0)
        buf_fail(d->text, rc);
    return d->text->rc;
}

int patch_writer_push_index(struct patch_writer *w, size_t i, size_t *mark)
{
    char idx[24];

    return patch_writer_push(w, index_text(idx, i), mark);
}

void patch_writer_cut(struct patch_writer *w, size_t mark)
{
    path_cut(w, mark);
}

int patch_writer_add(struct patch_writer *w, const json_t *value)
{
    struct patch_writer *d = w;

    if (d->text->rc == 0)
        (void)emit_text(d, OP_ADD, value);
    return d->text->rc;
}

int patch_writer_diff(struct patch_writer *w, const json_t *before, const json_t *after)
{
    struct patch_writer *d = w;
    int rc;

    if (d->text->rc != 0)
        return d->text->rc;
    rc = diff_value(d, before, after);
    if (rc < 0)
        buf_fail(d->text, rc);
    return d->text->rc;
}

int patch_writer_end(struct patch_writer *w, size_t *n_ops)
{
    struct patch_writer *d = w;

    (void)jsonw_lit(d->text, "]");
    buf_dispose(&d->path);
    if (n_ops != NULL)
        *n_ops = d->n;
    return d->text->rc;
}

/* ---- the applier --------------------------------------------------------- */

/* RFC 6901 §4 array index: "0" or digits without a leading zero. */
static bool parse_index(const char *seg, size_t *out)
{
    size_t n = 0;
    const char *c;

    if (seg[0] == '\0' || (seg[0] == '0' && seg[1] != '\0'))
        return false;
    for (c = seg; *c != '\0'; c++) {
        if (*c < '0' || *c > '9' || n > (SIZE_MAX - 9) / 10)
            return false;
        n = n * 10 + (size_t)(*c - '0');
    }
    *out = n;
    return true;
}

/* The child named by an unescaped segment, or NULL (absent, bad index, scalar). */
static json_t *child(json_t *v, const char *seg)
{
    size_t i;

    if (json_is_object(v))
        return json_member(v, seg);
    if (json_is_array(v) && parse_index(seg, &i))
        return json_array_get(v, i);
    return NULL;
}

/*
 * Resolve every segment of ptr but the last. For the root ("") *parent and
 * *last are NULL; otherwise *last is a new unescaped string to free().
 */
static int locate(json_t *root, const char *ptr, json_t **parent, char **last, const char **why)
{
    json_t *cur = root;

    *parent = NULL;
    *last = NULL;
    if (ptr[0] == '\0')
        return 0;
    if (ptr[0] != '/') {
        *why = "pointer does not start with /";
        return WH_EINVAL;
    }
    for (;;) {
        const char *seg = ptr + 1;
        size_t n = strcspn(seg, "/");
        char *dec = malloc(n + 1);
        size_t i;
        size_t o = 0;

        if (dec == NULL) {
            *why = "out of memory";
            return WH_ENOMEM;
        }
        for (i = 0; i < n; i++) {
            if (seg[i] == '~') {
                if (i + 1 >= n || (seg[i + 1] != '0' && seg[i + 1] != '1')) {
                    free(dec);
                    *why = "bad ~ escape in pointer";
                    return WH_EINVAL;
                }
                i++;
                dec[o++] = seg[i] == '0' ? '~' : '/';
            } else {
                dec[o++] = seg[i];
            }
        }
        dec[o] = '\0';
        ptr = seg + n;
        if (*ptr == '\0') {
            *parent = cur;
            *last = dec;
            return 0;
        }
        cur = child(cur, dec);
        free(dec);
        if (cur == NULL) {
            *why = "path not found";
            return WH_EINVAL;
        }
    }
}

/* Borrowed value at ptr, or NULL with *why set. */
static json_t *ptr_get(json_t *root, const char *ptr, const char **why)
{
    json_t *parent;
    json_t *v;
    char *last;

    if (locate(root, ptr, &parent, &last, why) < 0)
        return NULL;
    if (last == NULL)
        return root;
    v = child(parent, last);
    free(last);
    if (v == NULL)
        *why = "path not found";
    return v;
}

enum edit { EDIT_ADD, EDIT_REPLACE, EDIT_REMOVE };

/*
 * add / replace / remove at ptr (RFC 6902 §4.1-4.3). value_new is stolen (may be
 * NULL for remove). With taken != NULL, remove hands the old value to the caller.
 */
static int ptr_edit(json_t **root, const char *ptr, enum edit e, json_t *value_new, json_t **taken,
                    const char **why)
{
    json_t *parent = NULL;
    char *last = NULL;
    size_t i = 0;
    size_t n;
    int rc;

    rc = locate(*root, ptr, &parent, &last, why);
    if (rc < 0)
        goto out;
    if (last == NULL) { /* the whole document */
        if (e == EDIT_REMOVE) {
            *why = "cannot remove the root";
            rc = WH_EINVAL;
            goto out;
        }
        json_decref(*root);
        *root = value_new;
        value_new = NULL; /* now owned by *root */
        goto out;
    }
    if (json_is_object(parent)) {
        if (e != EDIT_ADD && json_member(parent, last) == NULL) {
            *why = "path not found";
            rc = WH_EINVAL;
            goto out;
        }
        if (taken != NULL)
            *taken = json_incref(json_member(parent, last));
        if (e == EDIT_REMOVE)
            json_object_del(parent, last);
        else if (json_object_set_new(parent, last, value_new) < 0)
            rc = WH_ENOMEM;
        value_new = NULL; /* consumed by json_object_set_new */
        goto out;
    }
    if (!json_is_array(parent)) {
        *why = "parent is not an object or array";
        rc = WH_EINVAL;
        goto out;
    }
    n = json_array_size(parent);
    if (e == EDIT_ADD && strcmp(last, "-") == 0) {
        i = n;
    } else if (!parse_index(last, &i) || i > n || (e != EDIT_ADD && i == n)) {
        *why = "bad array index";
        rc = WH_EINVAL;
        goto out;
    }
    if (taken != NULL)
        *taken = json_incref(json_array_get(parent, i));
    if (e == EDIT_REMOVE)
        rc = json_array_remove(parent, i);
    else if (e == EDIT_REPLACE)
        rc = json_array_set_new(parent, i, value_new);
    else
        rc = json_array_insert_new(parent, i, value_new);
    value_new = NULL; /* consumed by the _new call */
    if (rc < 0)
        rc = WH_ENOMEM;
out:
    if (rc == WH_ENOMEM)
        *why = "out of memory";
    json_decref(value_new);
    free(last);
    return rc;
}

/* RFC 6902 §4.6 equality: numbers compare by value, so 1 equals 1.0. */
static bool equal_rfc(const json_t *a, const json_t *b)
{
    const char *key;
    json_t *v;
    size_t i;

    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (i = 0; i < json_array_size(a); i++) {
            if (!equal_rfc(json_array_get(a, i), json_array_get(b, i)))
                return false;
        }
        return true;
    }
    if (json_is_object(a) && json_is_object(b)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        json_object_foreach((json_t *)a, key, v) {
            const json_t *w = json_member(b, key);

            if (w == NULL || !equal_rfc(v, w))
                return false;
        }
        return true;
    }
    return json_equal(a, b);
}

/* Apply one op to *root; on failure *why says what went wrong. */
static int apply_op(json_t **root, const json_t *op, const char **why)
{
    const char *name = json_string_value(json_member(op, "op"));
    const char *path = json_string_value(json_member(op, "path"));
    const char *from = json_string_value(json_member(op, "from"));
    const json_t *value = json_member(op, "value");
    json_t *v;
    json_t *moved = NULL;
    int rc;

    if (name == NULL || path == NULL) {
        *why = "op needs string members op and path";
        return WH_EINVAL;
    }
    if (value == NULL
        && (strcmp(name, "add") == 0 || strcmp(name, "replace") == 0
            || strcmp(name, "test") == 0)) {
        *why = "missing value";
        return WH_EINVAL;
    }
    if (from == NULL && (strcmp(name, "move") == 0 || strcmp(name, "copy") == 0)) {
        *why = "missing from";
        return WH_EINVAL;
    }
    if (strcmp(name, "add") == 0 || strcmp(name, "replace") == 0) {
        v = json_deep_copy(value);
        if (v == NULL) {
            *why = "out of memory";
            return WH_ENOMEM;
        }
        return ptr_edit(root, path, name[0] == 'a' ? EDIT_ADD : EDIT_REPLACE, v, NULL, why);
    }
    if (strcmp(name, "remove") == 0)
        return ptr_edit(root, path, EDIT_REMOVE, NULL, NULL, why);
    if (strcmp(name, "test") == 0) {
        v = ptr_get(*root, path, why);
        if (v == NULL)
            return WH_EINVAL;
        if (!equal_rfc(v, value)) {
            *why = "test failed";
            return WH_EINVAL;
        }
        return 0;
    }
    if (strcmp(name, "copy") == 0) {
        v = ptr_get(*root, from, why);
        if (v == NULL)
            return WH_EINVAL;
        v = json_deep_copy(v);
        if (v == NULL) {
            *why = "out of memory";
            return WH_ENOMEM;
        }
        return ptr_edit(root, path, EDIT_ADD, v, NULL, why);
    }
    if (strcmp(name, "move") == 0) {
        size_t n = strlen(from);

        /* RFC 6902 §4.4: a location cannot move into one of its children. */
        if (strncmp(path, from, n) == 0 && path[n] == '/') {
            *why = "cannot move a value into itself";
            return WH_EINVAL;
        }
        rc = ptr_edit(root, from, EDIT_REMOVE, NULL, &moved, why);
        if (rc < 0)
            return rc;
        return ptr_edit(root, path, EDIT_ADD, moved, NULL, why);
    }
    *why = "unknown op";
    return WH_EINVAL;
}

json_t *patch_apply(const json_t *doc, const json_t *patch, struct wh_error *err)
{
    json_t *root = NULL;
    const char *why = NULL;
    size_t i;
    int rc;

    if (doc == NULL || !json_is_array(patch)) {
        wh_error_set(err, WH_EINVAL, "patch is not an array or document is missing");
        return NULL;
    }
    root = json_deep_copy(doc);
    if (root == NULL) {
        wh_error_set(err, WH_ENOMEM, "out of memory");
        return NULL;
    }
    for (i = 0; i < json_array_size(patch); i++) {
        const json_t *op = json_array_get(patch, i);

        if (!json_is_object(op)) {
            rc = WH_EINVAL;
            why = "op is not an object";
        } else {
            rc = apply_op(&root, op, &why);
        }
        if (rc < 0) {
            const char *name = json_string_value(json_member(op, "op"));
            const char *path = json_string_value(json_member(op, "path"));

            wh_error_set(err, rc, "patch op %zu (%s %s): %s", i, name ? name : "?",
                         path ? path : "?", why);
            json_decref(root);
            return NULL;
        }
    }
    return root;
}
