/* SPDX-License-Identifier: Apache-2.0 */
/*
 * yaml.c - YAML (or JSON) text to jansson values over libyaml's event API, and
 * back (yaml_dump_buffer, over libyaml's emitter).
 *
 * Design: one pass over the parser's events with an explicit stack of open
 * collections (no recursion, so input depth cannot overflow the C stack).
 * yaml_load_buffer reads the first document (as go-yaml's Unmarshal does);
 * yaml_load_documents reads them all, as kubectl does with a multi-document file
 * (anchors are per document; the node cap counts the whole stream).
 *
 * Plain scalars are typed like go-yaml v2, the reader behind sigs.k8s.io/yaml
 * (its resolve.go, YAML 1.1 rules), when the target is untyped:
 *   - "" ~ null Null NULL                        -> null
 *   - y Y yes Yes YES true True TRUE on On ON    -> true
 *     n N no No NO false False FALSE off Off OFF -> false
 *   - integers as Go's strconv.ParseInt(s, 0, 64) after removing '_':
 *     optional sign, decimal, 0x/0X hex, 0o/0O octal, 0b/0B binary, and a
 *     leading 0 for octal (YAML 1.1): "0755" -> 493, "08" is no integer
 *   - floats matching ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
 *     -> real; integers beyond int64 become reals as well (JSON number)
 *   - .inf/.nan spellings, out-of-range floats and timestamps stay strings
 *     (JSON has no inf/nan; go-yaml keeps timestamps as strings when the
 *     target is untyped)
 *   - anything else, every quoted or block (| >) scalar, and every scalar
 *     tagged !!str, !!binary or with a tag of its own -> string
 * Mapping keys: a scalar key is used by its text (`1: a` -> "1"; sigs.k8s.io
 * would print a resolved bool key as "true", here it stays "yes"); a mapping or
 * sequence as a key is an error. A repeated key: the last value wins (in the
 * first key's position), and yaml_load_file_documents can list each repeat, so
 * that `render` warns of what sigs.k8s.io/yaml drops without a word. Merge keys `<<` are refused with an error.
 * Aliases are expanded by deep copy; the expansion is bounded (YAML_MAX_NODES
 * nodes, a scalar weighing one more per YAML_BYTES_PER_NODE bytes, and
 * YAML_MAX_DEPTH levels) so a "billion laughs" document, of nodes or of long
 * strings, fails fast with WH_ETOOBIG before anything large is allocated.
 *
 * The writer quotes a string wherever a plain scalar would be typed otherwise, by
 * the rules above or by a YAML 1.1 reader such as PyYAML (timestamps, "1:20"), so
 * that this loader, kubectl and PyYAML read back the value that was written.
 *
 * Threads: no shared state; every call owns its parser or emitter. Reentrant.
 */
#include "k8s/yaml.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "base/buf.h"
#include "base/strmap.h"

#define YAML_MAX_NODES 1000000u /* nodes after alias expansion */
/* A scalar weighs one node per this many bytes more, so that aliases of one long string
 * cannot expand a small file into gigabytes: the nodes cap also bounds the bytes. */
#define YAML_BYTES_PER_NODE 256u
#define YAML_MAX_DEPTH      1000u               /* nesting levels after alias expansion */
#define YAML_MAX_FILE       (16u * 1024 * 1024) /* bytes, yaml_load_file */

#define TAG_PREFIX "tag:yaml.org,2002:"

struct frame {
    json_t *val;          /* the open array or object (owned) */
    char *anchor;         /* anchor name of this collection, or NULL */
    char *key;            /* pending mapping key, NULL while a key is expected */
    size_t key_len;       /* bytes in key */
    yaml_mark_t key_mark; /* where key begins, for a repeated key */
    size_t nodes_start;   /* loader.nodes when the collection opened */
    size_t height;        /* levels below this collection so far */
};

struct anchor {
    json_t *val;   /* owned reference */
    size_t nodes;  /* nodes in val, aliases expanded */
    size_t height; /* levels below val */
};

struct loader {
    const char *buf; /* input, for line/column of reader errors */
    size_t len;
    struct frame *stack;
    size_t depth;           /* frames in use */
    size_t cap;             /* frames allocated */
    struct strmap *anchors; /* name → its latest struct anchor; NULL until the first */
    size_t nodes;           /* nodes so far, aliases expanded */
    json_t *root;           /* the document's value once complete (owned) */
    json_t *dups;           /* borrowed array for repeated keys, or NULL: not listed */
    size_t document;        /* 1-based number of the document being read */
    struct wh_error *err;
};

/* Error at a libyaml mark (0-based line and column). */
static int mark_error(struct loader *ld, int code, const yaml_mark_t *m, const char *what)
{
    return wh_error_set(ld->err, code, "line %lu column %lu: %s", (unsigned long)m->line + 1,
                        (unsigned long)m->column + 1, what);
}

/* Line and column (1-based) of byte offset off in the input. */
static void offset_position(const struct loader *ld, size_t off, unsigned long *line,
                            unsigned long *col)
{
    size_t i;

    *line = 1;
    *col = 1;
    for (i = 0; i < off && i < ld->len; i++) {
        if (ld->buf[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

/* Turn the parser's error state into err. */
static int parser_error(struct loader *ld, const yaml_parser_t *p)
{
    unsigned long line;
    unsigned long col;
    const char *problem = p->problem ? p->problem : "syntax error";

    if (p->error == YAML_MEMORY_ERROR)
        return wh_error_set(ld->err, WH_ENOMEM, "out of memory parsing yaml");
    if (p->error == YAML_READER_ERROR) {
        offset_position(ld, p->problem_offset, &line, &col);
        return wh_error_set(ld->err, WH_EINVAL, "line %lu column %lu: %s", line, col, problem);
    }
    if (p->context != NULL)
        return wh_error_set(ld->err, WH_EINVAL, "line %lu column %lu: %s (%s at line %lu)",
                            (unsigned long)p->problem_mark.line + 1,
                            (unsigned long)p->problem_mark.column + 1, problem, p->context,
                            (unsigned long)p->context_mark.line + 1);
    return wh_error_set(ld->err, WH_EINVAL, "line %lu column %lu: %s",
                        (unsigned long)p->problem_mark.line + 1,
                        (unsigned long)p->problem_mark.column + 1, problem);
}

/* ---- scalar typing (go-yaml v2 resolve) ---- */

struct word {
    const char *text;
    int kind; /* 0 null, 1 true, 2 false, 3 keep as string */
};

static const struct word words[] = {
    {"~", 0},
    {"null", 0},
    {"Null", 0},
    {"NULL", 0},
    {"y", 1},
    {"Y", 1},
    {"yes", 1},
    {"Yes", 1},
    {"YES", 1},
    {"true", 1},
    {"True", 1},
    {"TRUE", 1},
    {"on", 1},
    {"On", 1},
    {"ON", 1},
    {"n", 2},
    {"N", 2},
    {"no", 2},
    {"No", 2},
    {"NO", 2},
    {"false", 2},
    {"False", 2},
    {"FALSE", 2},
    {"off", 2},
    {"Off", 2},
    {"OFF", 2},
    /* JSON cannot hold these floats: they stay the string that was written */
    {".nan", 3},
    {".NaN", 3},
    {".NAN", 3},
    {".inf", 3},
    {".Inf", 3},
    {".INF", 3},
    {"+.inf", 3},
    {"+.Inf", 3},
    {"+.INF", 3},
    {"-.inf", 3},
    {"-.Inf", 3},
    {"-.INF", 3},
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int digit_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return 99;
}

/*
 * strconv.ParseInt(s, 0, 64) and, failing that, ParseUint(s, 0, 64).
 * @return 1 with *out for an int64, 2 for a value only uint64 holds
 *         (in *uout), 0 when s is no integer.
 */
static int parse_go_int(const char *s, json_int_t *out, uint64_t *uout)
{
    bool neg = false;
    bool sign = false;
    unsigned base = 10;
    uint64_t v = 0;

    if (*s == '+' || *s == '-') {
        neg = *s == '-';
        sign = true;
        s++;
    }
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    } else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
        base = 8;
        s += 2;
    } else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
        base = 2;
        s += 2;
    } else if (s[0] == '0' && s[1] != '\0') {
        base = 8; /* YAML 1.1 / Go: leading zero means octal */
        s += 1;
    }
    if (*s == '\0')
        return 0;
    for (; *s != '\0'; s++) {
        unsigned d = (unsigned)digit_value(*s);

        if (d >= base)
            return 0;
        if (v > (UINT64_MAX - d) / base)
            return 0; /* beyond uint64: maybe a float below */
        v = v * base + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return 0;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(json_int_t)v;
        return 1;
    }
    if (v <= (uint64_t)INT64_MAX) {
        *out = (json_int_t)v;
        return 1;
    }
    if (sign)
        return 0; /* ParseUint takes no sign */
    *uout = v;
    return 2;
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool is_yaml_float(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    if (*s == '.') {
        s++;
        if (!is_digit(*s))
            return false;
        while (is_digit(*s))
            s++;
    } else {
        if (!is_digit(*s))
            return false;
        while (is_digit(*s))
            s++;
        if (*s == '.') {
            s++;
            while (is_digit(*s))
                s++;
        }
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!is_digit(*s))
            return false;
        while (is_digit(*s))
            s++;
    }
    return *s == '\0';
}

/* A finite double from a string that passed is_yaml_float, or false. */
static bool parse_float(const char *s, double *out)
{
    char *end = NULL;
    double d;

    errno = 0;
    d = strtod(s, &end);
    if (end == s || *end != '\0' || isinf(d) || isnan(d))
        return false;
    *out = d;
    return true;
}

/* The JSON value of a plain scalar. New reference, NULL on ENOMEM. */
static json_t *resolve_plain(const char *s, size_t len)
{
    char hint;
    size_t i;
    size_t j;
    char *plain = NULL;
    json_t *v = NULL;
    json_int_t iv;
    uint64_t uv;
    double d;
    int kind;

    if (len == 0)
        return json_null();
    if (memchr(s, '\0', len) != NULL)
        return json_stringn(s, len);
    for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (strcmp(s, words[i].text) == 0) {
            switch (words[i].kind) {
            case 0: return json_null();
            case 1: return json_true();
            case 2: return json_false();
            default: return json_stringn(s, len);
            }
        }
    }
    hint = s[0];
    if (hint == '.') {
        if (is_yaml_float(s) && parse_float(s, &d))
            return json_real(d);
        return json_stringn(s, len);
    }
    if (!(is_digit(hint) || hint == '+' || hint == '-'))
        return json_stringn(s, len);

    plain = malloc(len + 1);
    if (plain == NULL)
        return NULL;
    for (i = 0, j = 0; i < len; i++) {
        if (s[i] != '_')
            plain[j++] = s[i];
    }
    plain[j] = '\0';
    kind = parse_go_int(plain, &iv, &uv);
    if (kind == 1)
        v = json_integer(iv);
    else if (kind == 2)
        v = json_real((double)uv); /* jansson holds no uint64: a JSON number all the same */
    else if (is_yaml_float(plain) && parse_float(plain, &d))
        v = json_real(d);
    else
        v = json_stringn(s, len);
    free(plain);
    return v;
}

static bool tag_is(const char *tag, const char *name)
{
    size_t n = strlen(TAG_PREFIX);

    return strncmp(tag, TAG_PREFIX, n) == 0 && strcmp(tag + n, name) == 0;
}

/* The JSON value of a scalar event. New reference, NULL on ENOMEM. */
static json_t *scalar_value(const yaml_event_t *ev)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;

    if (tag != NULL) {
        if (tag_is(tag, "int") || tag_is(tag, "float") || tag_is(tag, "bool") || tag_is(tag, "null")
            || tag_is(tag, "timestamp"))
            return resolve_plain(s, len);
        return json_stringn(s, len); /* !!str, !!binary, local tags */
    }
    if (ev->data.scalar.plain_implicit && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
        return resolve_plain(s, len);
    return json_stringn(s, len);
}

/* ---- the loader ---- */

static void loader_dispose(struct loader *ld)
{
    size_t i;

    for (i = 0; i < ld->depth; i++) {
        json_decref(ld->stack[i].val);
        free(ld->stack[i].anchor);
        free(ld->stack[i].key);
    }
    free(ld->stack);
    strmap_destroy(ld->anchors);
    json_decref(ld->root);
}

/* strmap_free_fn of the anchors. */
static void anchor_free(void *v)
{
    struct anchor *a = v;

    json_decref(a->val);
    free(a);
}

/* Remember an anchor (a later one of the same name replaces it). */
static int anchor_add(struct loader *ld, const char *name, json_t *val, size_t nodes, size_t height)
{
    struct anchor *a;

    /* a hash lookup: N aliases of N anchors must not cost N*N string compares */
    if (ld->anchors == NULL && (ld->anchors = strmap_create(anchor_free)) == NULL)
        return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
    a = malloc(sizeof(*a));
    if (a == NULL)
        return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
    a->val = json_incref(val);
    a->nodes = nodes;
    a->height = height;
    if (strmap_set(ld->anchors, name, a) < 0) {
        anchor_free(a);
        return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
    }
    return 0; /* a now owned by the map */
}

static const struct anchor *anchor_find(const struct loader *ld, const char *name)
{
    return ld->anchors != NULL ? strmap_get(ld->anchors, name) : NULL;
}

/* Text of a scalar JSON value used as a mapping key through an alias. */
static char *key_text_of(const json_t *v, size_t *len)
{
    char buf[64];
    char *s = NULL;

    switch (json_typeof(v)) {
    case JSON_STRING:
        *len = json_string_length(v);
        s = malloc(*len + 1);
        if (s != NULL)
            memcpy(s, json_string_value(v), *len + 1);
        return s;
    case JSON_INTEGER:
        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL: snprintf(buf, sizeof(buf), "%.17g", json_real_value(v)); break;
    case JSON_TRUE: snprintf(buf, sizeof(buf), "true"); break;
    case JSON_FALSE: snprintf(buf, sizeof(buf), "false"); break;
    default: snprintf(buf, sizeof(buf), "null"); break;
    }
    *len = strlen(buf);
    return strdup(buf);
}

/*
 * Where the key pending in the top frame sits, as a field path: "spec.queue",
 * "spec.tasks[0].name" (cut to fit buf).
 */
static void key_path(const struct loader *ld, char *buf, size_t cap)
{
    size_t n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < ld->depth && n < cap; i++) {
        const struct frame *f = &ld->stack[i];
        int w;

        if (json_is_array(f->val))
            w = snprintf(buf + n, cap - n, "[%zu]", json_array_size(f->val));
        else
            w = snprintf(buf + n, cap - n, "%s%.*s", n > 0 ? "." : "", (int)f->key_len,
                         f->key != NULL ? f->key : "");
        if (w < 0)
            return;
        n += (size_t)w;
    }
}

/* The top frame's pending key is already in its mapping: list it in ld->dups. */
static int note_duplicate(struct loader *ld)
{
    const struct frame *top = &ld->stack[ld->depth - 1];
    char path[512];
    json_t *d;

    key_path(ld, path, sizeof(path));
    d = json_pack("{s:I, s:I, s:I, s:s%, s:s}", "document", (json_int_t)ld->document, "line",
                  (json_int_t)top->key_mark.line + 1, "column",
                  (json_int_t)top->key_mark.column + 1, "key", top->key, top->key_len, "path",
                  path);
    if (d == NULL || json_array_append_new(ld->dups, d) < 0)
        return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
    return 0;
}

/*
 * A complete value: into the open collection, or as the root.
 * val_new is consumed. height: levels below val.
 */
static int place_value(struct loader *ld, json_t *val_new, size_t height, const yaml_mark_t *mark)
{
    struct frame *top;
    int rc;

    if (val_new == NULL)
        return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
    if (ld->depth == 0) {
        ld->root = val_new;
        return 0;
    }
    top = &ld->stack[ld->depth - 1];
    if (top->height < height + 1)
        top->height = height + 1;
    if (json_is_array(top->val)) {
        if (json_array_append_new(top->val, val_new) != 0)
            return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
        return 0;
    }
    if (top->key == NULL) {
        /* this value is a key */
        if (json_is_object(val_new) || json_is_array(val_new)) {
            json_decref(val_new);
            return mark_error(ld, WH_EINVAL, mark, "a mapping key must be a scalar");
        }
        top->key = key_text_of(val_new, &top->key_len);
        top->key_mark = *mark;
        json_decref(val_new);
        if (top->key == NULL)
            return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
        return 0;
    }
    if (ld->dups != NULL && json_object_getn(top->val, top->key, top->key_len) != NULL) {
        rc = note_duplicate(ld);
        if (rc < 0) {
            json_decref(val_new);
            return rc;
        }
    }
    /* setn_new replaces an existing key in place: the last value wins */
    rc = json_object_setn_new(top->val, top->key, top->key_len, val_new);
    free(top->key);
    top->key = NULL;
    if (rc != 0)
        return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
    return 0;
}

/* A scalar key is placed by its text, not by its typed value. */
static int on_scalar(struct loader *ld, const yaml_event_t *ev)
{
    struct frame *top = ld->depth ? &ld->stack[ld->depth - 1] : NULL;
    const char *anchor = (const char *)ev->data.scalar.anchor;
    json_t *v;
    int rc;

    size_t weight = 1 + ev->data.scalar.length / YAML_BYTES_PER_NODE;

    if (weight > YAML_MAX_NODES - ld->nodes)
        return mark_error(ld, WH_ETOOBIG, &ev->start_mark, "document has too many nodes");
    ld->nodes += weight;
    /* A "\0" escape would cut a name short wherever it is read as a C string. */
    if (memchr(ev->data.scalar.value, '\0', ev->data.scalar.length) != NULL)
        return mark_error(ld, WH_EINVAL, &ev->start_mark, "NUL character not supported");
    if (top != NULL && json_is_object(top->val) && top->key == NULL) {
        const char *s = (const char *)ev->data.scalar.value;
        size_t len = ev->data.scalar.length;

        if (ev->data.scalar.plain_implicit && ev->data.scalar.tag == NULL && len == 2
            && memcmp(s, "<<", 2) == 0)
            return mark_error(ld, WH_EINVAL, &ev->start_mark, "merge keys (<<) are not supported");
        top->key = malloc(len + 1);
        if (top->key == NULL)
            return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
        memcpy(top->key, s, len + 1);
        top->key_len = len;
        top->key_mark = ev->start_mark;
        if (anchor != NULL) {
            /* an anchored key: aliases to it get the typed value */
            v = scalar_value(ev);
            if (v == NULL)
                return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
            rc = anchor_add(ld, anchor, v, weight, 0);
            json_decref(v);
            return rc;
        }
        return 0;
    }
    v = scalar_value(ev);
    if (v == NULL)
        return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
    if (anchor != NULL) {
        rc = anchor_add(ld, anchor, v, weight, 0);
        if (rc < 0) {
            json_decref(v);
            return rc;
        }
    }
    return place_value(ld, v, 0, &ev->start_mark);
}

static int on_alias(struct loader *ld, const yaml_event_t *ev)
{
    const struct anchor *a = anchor_find(ld, (const char *)ev->data.alias.anchor);
    json_t *copy;

    if (a == NULL)
        return mark_error(ld, WH_EINVAL, &ev->start_mark, "unknown anchor");
    if (a->nodes > YAML_MAX_NODES - ld->nodes)
        return mark_error(ld, WH_ETOOBIG, &ev->start_mark,
                          "document has too many nodes after alias expansion");
    if (ld->depth + a->height > YAML_MAX_DEPTH)
        return mark_error(ld, WH_ETOOBIG, &ev->start_mark, "document nested too deeply");
    ld->nodes += a->nodes;
    /* a copy, so that editing one place never changes another */
    copy = json_deep_copy(a->val);
    return place_value(ld, copy, a->height, &ev->start_mark);
}

static int on_collection_start(struct loader *ld, const yaml_event_t *ev, bool mapping)
{
    const char *anchor =
        (const char *)(mapping ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor);
    struct frame *f;

    if (++ld->nodes > YAML_MAX_NODES)
        return mark_error(ld, WH_ETOOBIG, &ev->start_mark, "document has too many nodes");
    if (ld->depth >= YAML_MAX_DEPTH)
        return mark_error(ld, WH_ETOOBIG, &ev->start_mark, "document nested too deeply");
    if (ld->depth > 0) {
        const struct frame *top = &ld->stack[ld->depth - 1];

        if (json_is_object(top->val) && top->key == NULL)
            return mark_error(ld, WH_EINVAL, &ev->start_mark, "a mapping key must be a scalar");
    }
    if (ld->depth == ld->cap) {
        size_t ncap = ld->cap ? ld->cap * 2 : 16;
        struct frame *n = realloc(ld->stack, ncap * sizeof(*n));

        if (n == NULL)
            return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
        ld->stack = n;
        ld->cap = ncap;
    }
    f = &ld->stack[ld->depth];
    memset(f, 0, sizeof(*f));
    f->val = mapping ? json_object() : json_array();
    if (f->val == NULL)
        return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
    if (anchor != NULL) {
        f->anchor = strdup(anchor);
        if (f->anchor == NULL) {
            json_decref(f->val);
            return wh_error_set(ld->err, WH_ENOMEM, "out of memory");
        }
    }
    f->nodes_start = ld->nodes - 1;
    ld->depth++;
    return 0;
}

static int on_collection_end(struct loader *ld, const yaml_event_t *ev)
{
    struct frame f;
    int rc;

    if (ld->depth == 0)
        return mark_error(ld, WH_EINVAL, &ev->start_mark, "unbalanced collection end");
    f = ld->stack[--ld->depth];
    free(f.key); /* libyaml never ends a mapping after a lone key; be safe */
    if (f.anchor != NULL) {
        /* the anchor becomes usable only now, so an alias cannot contain itself */
        rc = anchor_add(ld, f.anchor, f.val, ld->nodes - f.nodes_start, f.height);
        free(f.anchor);
        if (rc < 0) {
            json_decref(f.val);
            return rc;
        }
    }
    return place_value(ld, f.val, f.height, &ev->start_mark);
}

/* Feed one event. @return 0 to go on, 1 when the first document is complete. */
static int loader_event(struct loader *ld, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_STREAM_END_EVENT: return mark_error(ld, WH_EINVAL, &ev->start_mark, "empty document");
    case YAML_DOCUMENT_END_EVENT: return 1;
    case YAML_SCALAR_EVENT: return on_scalar(ld, ev);
    case YAML_ALIAS_EVENT: return on_alias(ld, ev);
    case YAML_SEQUENCE_START_EVENT: return on_collection_start(ld, ev, false);
    case YAML_MAPPING_START_EVENT: return on_collection_start(ld, ev, true);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: return on_collection_end(ld, ev);
    default: return 0; /* stream/document start, no-op */
    }
}

/* Forget the anchors of a finished document (YAML anchors do not cross "---"). */
static void anchors_clear(struct loader *ld)
{
    if (ld->anchors != NULL)
        strmap_clear(ld->anchors);
}

/*
 * The documents of buf: the first only (docs NULL, into *first), or every one
 * appended to docs. @return 0, or an error with err filled.
 */
static int load_stream(const char *buf, size_t len, json_t **first, json_t *docs, json_t *dups,
                       struct wh_error *err)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    struct loader ld;
    int rc = 0;

    memset(&ld, 0, sizeof(ld));
    ld.buf = buf;
    ld.len = len;
    ld.err = err;
    ld.dups = dups;
    ld.document = 1;
    if (!yaml_parser_initialize(&parser))
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    yaml_parser_set_encoding(&parser, YAML_ANY_ENCODING);
    for (;;) {
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parser_error(&ld, &parser);
            goto out;
        }
        if (docs != NULL && ev.type == YAML_STREAM_END_EVENT && json_array_size(docs) > 0) {
            yaml_event_delete(&ev);
            break;
        }
        rc = loader_event(&ld, &ev);
        yaml_event_delete(&ev);
        if (rc < 0)
            goto out;
        if (rc == 0)
            continue;
        /* "---" with nothing after it: an explicit empty (null) document */
        if (ld.root == NULL)
            ld.root = json_null();
        if (docs == NULL) {
            *first = ld.root;
            ld.root = NULL; /* now owned by the caller */
            break;
        }
        if (json_array_append_new(docs, ld.root) < 0) {
            ld.root = NULL;
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
            goto out;
        }
        ld.root = NULL; /* now owned by docs */
        anchors_clear(&ld);
        ld.document++;
    }
    rc = 0;
out:
    loader_dispose(&ld);
    yaml_parser_delete(&parser);
    return rc;
}

int yaml_load_buffer(const char *buf, size_t len, json_t **out, struct wh_error *err)
{
    *out = NULL;
    return load_stream(buf, len, out, NULL, NULL, err);
}

/* yaml_load_documents, and the repeated keys into *dups_out when it is not NULL. */
static int load_documents(const char *buf, size_t len, json_t **docs_out, json_t **dups_out,
                          struct wh_error *err)
{
    json_t *docs = json_array();
    json_t *dups = dups_out != NULL ? json_array() : NULL;
    int rc;

    *docs_out = NULL;
    if (dups_out != NULL)
        *dups_out = NULL;
    if (docs == NULL || (dups_out != NULL && dups == NULL)) {
        json_decref(docs);
        json_decref(dups);
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    rc = load_stream(buf, len, NULL, docs, dups, err);
    if (rc < 0) {
        json_decref(docs);
        json_decref(dups);
        return rc;
    }
    *docs_out = docs;
    if (dups_out != NULL)
        *dups_out = dups; /* now the caller's */
    return 0;
}

int yaml_load_documents(const char *buf, size_t len, json_t **docs_out, struct wh_error *err)
{
    return load_documents(buf, len, docs_out, NULL, err);
}

/*
 * The whole of path ("-": standard input) into *buf_out (malloc'd, the caller's to
 * free; NULL when empty). @return 0; WH_ERROR (strerror text), WH_ETOOBIG, WH_ENOMEM.
 */
static int read_whole(const char *path, char **buf_out, size_t *len_out, struct wh_error *err)
{
    FILE *f = NULL;
    struct buf b;
    struct stat st;
    int rc;

    *buf_out = NULL;
    *len_out = 0;
    f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (f == NULL)
        return wh_error_set(err, WH_ERROR, "%s", strerror(errno));
    buf_init(&b, YAML_MAX_FILE);
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > (off_t)YAML_MAX_FILE) {
        rc = wh_error_set(err, WH_ETOOBIG, "file is larger than %u bytes", YAML_MAX_FILE);
        goto out;
    }
    rc = buf_append_stream(&b, f);
    if (rc == WH_ETOOBIG)
        rc = wh_error_set(err, WH_ETOOBIG, "file is larger than %u bytes", YAML_MAX_FILE);
    else if (rc == WH_ENOMEM)
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
    else if (rc < 0)
        rc = wh_error_set(err, WH_ERROR, "%s", strerror(errno));
    if (rc < 0)
        goto out;
    if (b.len > 0) {
        *len_out = b.len;
        *buf_out = buf_take(&b, NULL); /* now the caller's */
    }
out:
    buf_dispose(&b);
    if (f != NULL && f != stdin)
        fclose(f);
    return rc;
}

/* yaml_load_buffer (all false) or load_documents (all true) on a whole file. */
static int load_file(const char *path, bool all, json_t **out, json_t **dups_out,
                     struct wh_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = read_whole(path, &buf, &len, err);

    *out = NULL;
    if (dups_out != NULL)
        *dups_out = NULL;
    if (rc == 0)
        rc = all ? load_documents(buf ? buf : "", len, out, dups_out, err)
                 : yaml_load_buffer(buf ? buf : "", len, out, err);
    free(buf);
    return rc;
}

int yaml_load_file(const char *path, json_t **out, struct wh_error *err)
{
    return load_file(path, false, out, NULL, err);
}

int yaml_load_file_documents(const char *path, json_t **docs_out, json_t **dups_out,
                             struct wh_error *err)
{
    return load_file(path, true, docs_out, dups_out, err);
}

/* ---- the writer ---- */

/* Four digits and '-': how every YAML 1.1 timestamp begins. */
static bool looks_like_timestamp(const char *s, size_t len)
{
    return len >= 5 && is_digit(s[0]) && is_digit(s[1]) && is_digit(s[2]) && is_digit(s[3])
        && s[4] == '-';
}

/*
 * Whether the string s, written plain, would be read as something else: by this
 * loader (resolve_plain), or by a YAML 1.1 reader that also types timestamps,
 * base-60 numbers ("1:20"), "=" and ".5_0" (PyYAML), or as a merge key.
 */
static bool plain_reads_otherwise(const char *s, size_t len)
{
    const char *p = s;
    json_t *v;
    bool other;

    if (len == 0 || (len == 1 && s[0] == '=') || (len == 2 && memcmp(s, "<<", 2) == 0))
        return true;
    if (memchr(s, '\0', len) != NULL)
        return false; /* the emitter escapes it in double quotes anyway */
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcmp(s, words[i].text) == 0)
            return true;
    if (*p == '+' || *p == '-')
        p++;
    if (looks_like_timestamp(s, len) || (is_digit(*p) && memchr(s, ':', len) != NULL)
        || (*p == '.' && memchr(s, '_', len) != NULL))
        return true;
    v = resolve_plain(s, len);
    other = v == NULL || !json_is_string(v);
    json_decref(v);
    return other;
}

/* One scalar event. A string that would read as another type is double-quoted, one
 * with a line break is a literal block where libyaml allows it. @return 1, or 0. */
static int emit_scalar(yaml_emitter_t *e, const char *s, size_t len, bool is_string)
{
    yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
    int plain = 1;
    yaml_event_t ev;

    if (is_string && plain_reads_otherwise(s, len)) {
        style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        plain = 0;
    } else if (is_string && memchr(s, '\n', len) != NULL) {
        style = YAML_LITERAL_SCALAR_STYLE; /* libyaml falls back to quotes for a key */
    }
    if (len > INT_MAX
        || !yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)len, plain, 1,
                                         style))
        return 0;
    return yaml_emitter_emit(e, &ev);
}

/* v and everything below it. @return 0, or an error with err filled. */
static int emit_value(yaml_emitter_t *e, const json_t *v, size_t depth, struct wh_error *err)
{
    yaml_event_t ev;
    char num[64];
    int ok;

    if (depth > YAML_MAX_DEPTH)
        return wh_error_set(err, WH_EINVAL, "value nested deeper than %u levels", YAML_MAX_DEPTH);
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        const json_t *member;

        if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE)
            || !yaml_emitter_emit(e, &ev))
            goto emitter;
        json_object_foreach((json_t *)v, key, member) {
            int rc;

            if (!emit_scalar(e, key, strlen(key), true))
                goto emitter;
            rc = emit_value(e, member, depth + 1, err);
            if (rc < 0)
                return rc;
        }
        ok = yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
        break;
    }
    case JSON_ARRAY: {
        size_t i;
        const json_t *item;

        if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE)
            || !yaml_emitter_emit(e, &ev))
            goto emitter;
        json_array_foreach(v, i, item) {
            int rc = emit_value(e, item, depth + 1, err);

            if (rc < 0)
                return rc;
        }
        ok = yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
        break;
    }
    case JSON_STRING: ok = emit_scalar(e, json_string_value(v), json_string_length(v), true); break;
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        ok = emit_scalar(e, num, strlen(num), false);
        break;
    case JSON_REAL:
        /* as jansson writes a real: 17 digits, and a ".0" so that it reads back as one;
         * an exponent needs the dot too, for YAML 1.1 readers (PyYAML: "1e+20" is a string) */
        snprintf(num, sizeof(num), "%.17g", json_real_value(v));
        if (strchr(num, '.') == NULL) {
            char *exp = strchr(num, 'e');

            if (exp == NULL) {
                strncat(num, ".0", sizeof(num) - strlen(num) - 1);
            } else if (strlen(num) + 2 < sizeof(num)) {
                memmove(exp + 2, exp, strlen(exp) + 1);
                exp[0] = '.';
                exp[1] = '0';
            }
        }
        ok = emit_scalar(e, num, strlen(num), false);
        break;
    case JSON_TRUE: ok = emit_scalar(e, "true", 4, false); break;
    case JSON_FALSE: ok = emit_scalar(e, "false", 5, false); break;
    default: ok = emit_scalar(e, "null", 4, false); break;
    }
    if (ok)
        return 0;
emitter:
    if (e->error == YAML_MEMORY_ERROR)
        return wh_error_set(err, WH_ENOMEM, "out of memory writing yaml");
    return wh_error_set(err, WH_EINVAL, "cannot write yaml: %s",
                        e->problem ? e->problem : "emitter error");
}

int yaml_dump_buffer(const json_t *v, char **text_out, size_t *len_out, struct wh_error *err)
{
    yaml_emitter_t e;
    yaml_event_t ev;
    FILE *mem = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc;

    *text_out = NULL;
    if (len_out != NULL)
        *len_out = 0;
    /* libyaml writes to a FILE: a memory stream (POSIX open_memstream) grows as it writes */
    mem = open_memstream(&text, &len);
    if (mem == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    if (!yaml_emitter_initialize(&e)) {
        fclose(mem);
        free(text);
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    yaml_emitter_set_output_file(&e, mem);
    yaml_emitter_set_unicode(&e, 1);
    yaml_emitter_set_width(&e, -1); /* no folded lines: values copy and paste whole */
    rc = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) && yaml_emitter_emit(&e, &ev)
            && yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1)
            && yaml_emitter_emit(&e, &ev)
        ? 0
        : wh_error_set(err, WH_ENOMEM, "out of memory writing yaml");
    if (rc == 0)
        rc = emit_value(&e, v, 0, err);
    if (rc == 0
        && !(yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&e, &ev)
             && yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&e, &ev)))
        rc = wh_error_set(err, WH_ENOMEM, "out of memory writing yaml");
    yaml_emitter_delete(&e);
    if (fclose(mem) != 0 && rc == 0)
        rc = wh_error_set(err, WH_ENOMEM, "out of memory writing yaml");
    if (rc < 0) {
        free(text);
        return rc;
    }
    *text_out = text;
    if (len_out != NULL)
        *len_out = len;
    return 0;
}
