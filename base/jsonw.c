/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonw.c - JSON text written into a struct buf (see jsonw.h).
 *
 * Strings are copied run by run: the bytes that need no escape (all but `"`, `\`
 * and U+0000-U+001F) go in with one memcpy per run, found eight bytes at a time, so a
 * base64 or plain ASCII value costs a scan and a copy. The escapes are jansson's (dump.c dump_string
 * without JSON_ESCAPE_SLASH or JSON_ENSURE_ASCII), so the text is byte for byte
 * what json_dumps(JSON_COMPACT) writes.
 */
#include "base/jsonw.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/error.h"

/* 1: the byte is written escaped in a JSON string (RFC 8259 §7). */
static const unsigned char json_escaped[256] = {
    1,         1,          1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x00-0x0f */
    1,         1,          1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x10-0x1f */
    ['"'] = 1, ['\\'] = 1,
};

/* The escape of one byte that json_escaped marks; seq holds at least 7 bytes. */
static size_t escape_byte(unsigned char c, char *seq)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *named = NULL;

    switch (c) {
    case '"': named = "\\\""; break;
    case '\\': named = "\\\\"; break;
    case '\b': named = "\\b"; break;
    case '\f': named = "\\f"; break;
    case '\n': named = "\\n"; break;
    case '\r': named = "\\r"; break;
    case '\t': named = "\\t"; break;
    default: break;
    }
    if (named != NULL) {
        memcpy(seq, named, 2);
        return 2;
    }
    memcpy(seq, "\\u00", 4);
    seq[4] = hex[c >> 4];
    seq[5] = hex[c & 0xf];
    return 6;
}

/* 1: the byte is escaped in a JSON Pointer's reference token too (RFC 6901 §3). */
static const unsigned char pointer_escaped[256] = {
    1,         1,          1,         1,         1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x00-0x0f */
    1,         1,          1,         1,         1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x10-0x1f */
    ['"'] = 1, ['\\'] = 1, ['~'] = 1, ['/'] = 1,
};

/* The bytes of x (eight of a string) that json_escaped marks, each as its high bit; 0
 * when none (Anderson, "Bit Twiddling Hacks": hasless, haszero; a borrow can mark a
 * byte above one marked already, never a lone byte, so 0 is exact). */
static inline uint64_t escaped_bytes(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ULL;
    uint64_t q = x ^ (ones * '"');
    uint64_t b = x ^ (ones * '\\');

    /* ~x: a byte over 0x7F is copied (its high bit is q's and b's too) */
    return ((x - ones * 0x20) | (q - ones) | (b - ones)) & ~x & (ones * 0x80);
}

/* How many bytes from s on table marks none of (at most n): eight at a time while
 * none of eight is escaped (JSON strings; a JSON Pointer's few bytes go one by one). */
static size_t plain_run(const char *s, size_t n, const unsigned char *table)
{
    size_t i = 0;
    uint64_t x;

    if (table == json_escaped) {
        for (; i + 8 <= n; i += 8) {
            memcpy(&x, s + i, 8);
            if (escaped_bytes(x) != 0)
                break;
        }
    }
    while (i < n && !table[(unsigned char)s[i]])
        i++;
    return i;
}

/*
 * The string's content, escaped, without quotes; table says which bytes are. Room
 * for n bytes is made once (the text is never shorter), so a plain string is one
 * reserve and one memcpy per run of plain bytes; escapes append their own bytes.
 */
static int string_content(struct buf *o, const char *s, size_t n, const unsigned char *table)
{
    size_t i = 0;

    if (buf_reserve(o, n) < 0)
        return o->rc;
    while (i < n && o->rc == 0) {
        size_t run = i;
        char seq[8];
        size_t k;
        unsigned char c;

        run += plain_run(s + run, n - run, table);
        (void)jsonw_raw(o, s + i, run - i);
        if (run == n)
            break;
        c = (unsigned char)s[run];
        if (c == '~' || c == '/') { /* only pointer_escaped marks them */
            seq[0] = '~';
            seq[1] = c == '~' ? '0' : '1';
            k = 2;
        } else {
            k = escape_byte(c, seq);
        }
        (void)jsonw_raw(o, seq, k);
        i = run + 1;
    }
    return o->rc;
}

int jsonw_string(struct buf *o, const char *s, size_t n)
{
    /* Most strings (keys above all) need no escape: room made once, one copy. */
    if (plain_run(s, n, json_escaped) == n) {
        char *d;

        if (buf_reserve(o, n + 2) < 0)
            return o->rc;
        d = o->data + o->len;
        d[0] = '"';
        memcpy(d + 1, s, n);
        d[n + 1] = '"';
        d[n + 2] = '\0';
        o->len += n + 2;
        return 0;
    }
    (void)jsonw_raw(o, "\"", 1);
    (void)string_content(o, s, n, json_escaped);
    (void)jsonw_raw(o, "\"", 1);
    return o->rc;
}

int jsonw_cstring(struct buf *o, const char *s)
{
    return jsonw_string(o, s, strlen(s));
}

int jsonw_pointer_segment(struct buf *o, const char *seg, size_t n)
{
    (void)jsonw_raw(o, "/", 1);
    return string_content(o, seg, n, pointer_escaped);
}

/* Decimal of v, as jansson's "%" JSON_INTEGER_FORMAT (json_int_t is long long). */
static int integer(struct buf *o, json_int_t v)
{
    return buf_append_decimal(o, (long long)v); /* o->rc, as buf_append's */
}

/* json_dump_callback_t appending to a struct buf. */
static int dump_to_buf(const char *s, size_t n, void *data)
{
    return buf_append(data, s, n) < 0 ? -1 : 0;
}

int jsonw_value(struct buf *o, const json_t *v)
{
    const char *key;
    json_t *item;
    size_t i;
    bool first = true;

    if (o->rc < 0)
        return o->rc;
    if (v == NULL) {
        buf_fail(o, WH_EINVAL);
        return o->rc;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        (void)jsonw_raw(o, "{", 1);
        /* json_object_foreach wants a non-const object; it only reads it. */
        json_object_foreach((json_t *)v, key, item) {
            if (!first)
                (void)jsonw_raw(o, ",", 1);
            first = false;
            (void)jsonw_cstring(o, key);
            (void)jsonw_raw(o, ":", 1);
            if (jsonw_value(o, item) < 0)
                return o->rc;
        }
        return jsonw_raw(o, "}", 1);
    case JSON_ARRAY:
        (void)jsonw_raw(o, "[", 1);
        json_array_foreach(v, i, item) {
            if (i > 0)
                (void)jsonw_raw(o, ",", 1);
            if (jsonw_value(o, item) < 0)
                return o->rc;
        }
        return jsonw_raw(o, "]", 1);
    case JSON_STRING: return jsonw_string(o, json_string_value(v), json_string_length(v));
    case JSON_INTEGER: return integer(o, json_integer_value(v));
    case JSON_TRUE: return jsonw_raw(o, "true", 4);
    case JSON_FALSE: return jsonw_raw(o, "false", 5);
    case JSON_NULL: return jsonw_raw(o, "null", 4);
    case JSON_REAL:
        /* jansson's "%.17g" and its ".0" rule: its own dumper, not a copy of it. */
        if (json_dump_callback(v, dump_to_buf, o, JSON_COMPACT | JSON_ENCODE_ANY) < 0)
            buf_fail(o, WH_ENOMEM);
        return o->rc;
    }
    buf_fail(o, WH_EINVAL); /* not a jansson type */
    return o->rc;
}

void jsonw_texts_init(struct jsonw_texts *t)
{
    t->n = 0;
    memset(t->at, 0, sizeof(t->at));
}

/* The first place of v in t->at (Knuth's multiplicative hash of the address; its low
 * bits are the allocator's alignment). */
static size_t text_home(const json_t *v)
{
    const size_t places = sizeof(((struct jsonw_texts *)0)->at);

    return (size_t)(((uint64_t)(uintptr_t)v * 0x9E3779B97F4A7C15ULL) >> 32) % places;
}

/* The place in t->at that holds v, or the free one where it would go. */
static size_t text_place(const struct jsonw_texts *t, const json_t *v)
{
    size_t k = text_home(v);

    while (t->at[k] != 0 && t->e[t->at[k] - 1].value != v)
        k = (k + 1) % sizeof(t->at);
    return k; /* ends: at most half the places are taken */
}

void jsonw_texts_add(struct jsonw_texts *t, const json_t *v, const char *text, size_t len)
{
    size_t k;

    if (t == NULL || t->n >= JSONW_TEXTS_MAX)
        return;
    k = text_place(t, v);
    if (t->at[k] != 0)
        return;
    t->e[t->n] = (struct jsonw_text){.value = v, .text = text, .len = len};
    t->at[k] = (unsigned char)++t->n;
}

/* The known text of v in t, or NULL. */
static const struct jsonw_text *known_text(const struct jsonw_texts *t, const json_t *v)
{
    size_t k = text_place(t, v);

    return t->at[k] != 0 ? &t->e[t->at[k] - 1] : NULL;
}

/* v's known text, else jsonw_value's. */
static int value_or_text(struct buf *o, const json_t *v, const struct jsonw_texts *t)
{
    const struct jsonw_text *k = known_text(t, v);

    return k != NULL ? jsonw_raw(o, k->text, k->len) : jsonw_value(o, v);
}

int jsonw_value_texts(struct buf *o, const json_t *v, const struct jsonw_texts *t)
{
    json_t *item;
    size_t i;

    if (t == NULL || t->n == 0 || o->rc < 0 || v == NULL)
        return jsonw_value(o, v);
    if (!json_is_array(v) || known_text(t, v) != NULL)
        return value_or_text(o, v, t);
    (void)jsonw_raw(o, "[", 1);
    json_array_foreach(v, i, item) {
        if (i > 0)
            (void)jsonw_raw(o, ",", 1);
        if (value_or_text(o, item, t) < 0)
            return o->rc;
    }
    return jsonw_raw(o, "]", 1);
}
