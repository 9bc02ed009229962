/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonr.c - jansson's tree from jsmn's tokens (jsonr.h).
 *
 * jsmn (strict mode, parent links) splits the body into tokens: containers with
 * their child count, strings with their content's bounds (escapes checked),
 * primitives. It does not check what lies between tokens (`[1 2]` and `{"a" 1}` are
 * two tokens to it), so the builder walks the tokens in order with a cursor over the
 * text and requires each token to start where the grammar puts the next value, with
 * exactly the separators of RFC 8259 §2 between them. A body the walk accepts is
 * grammatical JSON and the tree follows its text; anything else is declined.
 */
#include "base/jsonr.h"
#include "base/jsonr_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#include <jsmn.h>

_Static_assert(sizeof(json_int_t) == sizeof(long long), "json_int_t is read with strtoll");

/* What jsonr_doc_read keeps of a token: a string's decoded content, or the place after a
 * container's last token (a primitive's is never read). */
struct jsonr_tokinfo {
    const char *text; /* strings: the content, in the body or the reader's scratch */
    uint32_t len;     /* a body is at most JSONR_MAX_LEN bytes */
    int32_t after;    /* objects and arrays: the index of the token after the last one inside */
};

struct reader {
    const char *js;
    size_t len;
    const jsmntok_t *tok;
    int ntok;
    int next;      /* the next token to read */
    size_t pos;    /* the text cursor: everything before it is read */
    char *scratch; /* strings with escapes, decoded; len bytes, made on first use */
    size_t top;    /* scratch in use by the keys of the objects being read */
    /* jsonr_doc_read: what skip_value learns of each token, kept (one per token); the
     * decoded strings then stay in scratch. NULL for the tree builders. */
    struct jsonr_tokinfo *info;
};

/*
 * What read_value does with a value: keep == NULL builds it whole; keep == &skipped
 * checks it as the builder would and builds nothing (skip_value; the answer is
 * json_null(), a static value, or NULL to decline); any other keep builds an object
 * with only keep's members (of each item, for an array of objects).
 */
static const struct jsonr_keep skipped[1] = {{NULL, NULL}};

const struct jsonr_keep jsonr_keep_names[1] = {{NULL, NULL}};

static json_t *read_value(struct reader *r, int depth, const struct jsonr_keep *keep);

static void skip_ws_run(struct reader *r)
{
    while (r->pos < r->len) {
        char c = r->js[r->pos];

        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        r->pos++;
    }
}

/* Whitespace at the cursor, skipped. A compact body, as kube-apiserver sends it, has
 * none: one compare, inline, in place of a call per token. */
static inline void skip_ws(struct reader *r)
{
    if (r->pos < r->len && (unsigned char)r->js[r->pos] > ' ')
        return;
    skip_ws_run(r);
}

/* Whitespace, then c. */
static inline bool expect(struct reader *r, char c)
{
    skip_ws(r);
    if (r->pos >= r->len || r->js[r->pos] != c)
        return false;
    r->pos++;
    return true;
}

static int hex4(const char *p)
{
    int v = 0;

    for (int i = 0; i < 4; i++) {
        char c = p[i];

        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

/* The UTF-8 bytes of code point cp (not a surrogate, at most U+10FFFF) at o. */
static size_t utf8_put(long cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/*
 * The decoded content of the raw bytes p..p+n of a string (RFC 8259 §7) at o, which
 * has room for n bytes (decoding never lengthens). @return its length, or -1 to
 * decline: an escape jansson refuses (an unpaired surrogate), or \u0000 in a key
 * (jansson: "NUL byte in object key not supported").
 */
static long decode(const char *p, size_t n, bool key, char *o)
{
    size_t w = 0;

    for (size_t i = 0; i < n;) {
        long cp;

        if (p[i] != '\\') {
            o[w++] = p[i++];
            continue;
        }
        if (i + 1 >= n)
            return -1;
        switch (p[i + 1]) {
        case '"': o[w++] = '"'; break;
        case '\\': o[w++] = '\\'; break;
        case '/': o[w++] = '/'; break;
        case 'b': o[w++] = '\b'; break;
        case 'f': o[w++] = '\f'; break;
        case 'n': o[w++] = '\n'; break;
        case 'r': o[w++] = '\r'; break;
        case 't': o[w++] = '\t'; break;
        case 'u':
            if (i + 6 > n || (cp = hex4(p + i + 2)) < 0)
                return -1;
            i += 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return -1;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long low;

                if (i + 6 > n || p[i] != '\\' || p[i + 1] != 'u' || (low = hex4(p + i + 2)) < 0xDC00
                    || low > 0xDFFF)
                    return -1;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                i += 6;
            }
            if (cp == 0 && key)
                return -1;
            w += utf8_put(cp, o + w);
            continue;
        default: return -1;
        }
        i += 2;
    }
    return (long)w;
}

/* The bytes of x (eight of the body) that are below 0x20, a backslash or over 0x7F,
 * each as its high bit; 0 when none (Anderson, "Bit Twiddling Hacks": hasless,
 * haszero: a borrow can mark a byte above one marked already, never a lone byte). */
static inline uint64_t special_bytes(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ULL;
    uint64_t bs = x ^ (ones * '\\');

    return (((x - ones * 0x20) & ~x) | ((bs - ones) & ~bs) | x) & (ones * 0x80);
}

/*
 * Whether the n bytes at p (inside r's body) hold no control character, backslash or
 * byte over 0x7F: most strings of a review, keys above all. Eight bytes at a time;
 * a tail of fewer is read as a whole word too when eight bytes remain in the body
 * (the string's closing quote among them), the bytes past the tail counted as 'a'.
 * false also when it cannot tell that way (the caller then looks at each byte).
 */
static inline bool plain_text(const struct reader *r, const char *p, size_t n)
{
    const uint64_t ones = 0x0101010101010101ULL;
    size_t i = 0;
    uint64_t x;

    for (; i + 8 <= n; i += 8) {
        memcpy(&x, p + i, 8);
        if (special_bytes(x) != 0)
            return false;
    }
    if (i == n)
        return true;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if ((size_t)(p + i - r->js) + 8 <= r->len) {
        uint64_t tail = (1ULL << (8 * (n - i))) - 1; /* the first n - i bytes, 1 to 7 */

        memcpy(&x, p + i, 8);
        return special_bytes((x & tail) | (ones * 'a' & ~tail)) == 0;
    }
#else
    (void)r;
    (void)ones;
#endif
    return false;
}

/* string_content for a string that is not plain_text: looked at byte by byte, its
 * escapes decoded. Out of line: most strings of a review never get here. */
static __attribute__((noinline)) bool string_content_slow(struct reader *r, const char *p,
                                                          size_t raw, bool key, const char **s,
                                                          size_t *n, bool *utf8)
{
    bool escaped = false;
    unsigned char high = 0;
    long w;

    for (size_t i = 0; i < raw; i++) {
        unsigned char c = (unsigned char)p[i];

        if (c < 0x20)
            return false;
        escaped |= c == '\\';
        high |= c & 0x80;
    }
    *utf8 = high == 0;
    if (!escaped) {
        *s = p;
        *n = raw;
        return true;
    }
    if (r->scratch == NULL && (r->scratch = malloc(r->len)) == NULL)
        return false;
    w = decode(p, raw, key, r->scratch + r->top);
    if (w < 0)
        return false;
    *s = r->scratch + r->top;
    *n = (size_t)w;
    if (key || r->info != NULL)
        r->top += (size_t)w;
    return true;
}

/*
 * A string token's content: *s, *n point into the body when it has no escape, else
 * into r->scratch (a key's stays there until the caller gives its scratch back).
 * *utf8 is true when the content is valid UTF-8 for certain: no raw byte of it is
 * over 0x7F (escapes decode to valid UTF-8, surrogates being refused); else jansson
 * must check it. @return false to decline (a raw control character, which jansson
 * refuses, or a declined escape). Inline: called for every string of a body, and
 * most are plain.
 */
static inline bool string_content(struct reader *r, const jsmntok_t *t, bool key, const char **s,
                                  size_t *n, bool *utf8)
{
    const char *p = r->js + t->start;
    size_t raw = (size_t)(t->end - t->start);

    if (plain_text(r, p, raw)) {
        *s = p;
        *n = raw;
        *utf8 = true;
        return true;
    }
    return string_content_slow(r, p, raw, key, s, n, utf8);
}

/* A string token at the cursor. @return whether it is one (then the cursor is past it).
 * jsmn makes a string token only of a whole string: its content starts after an
 * opening quote and ends at the closing one, inside the text, so the token starting
 * right after the cursor is all there is to check. */
static inline bool at_string(struct reader *r, const jsmntok_t *t)
{
    skip_ws(r);
    if (t->type != JSMN_STRING || (size_t)t->start != r->pos + 1)
        return false;
    r->pos = (size_t)t->end + 1;
    return true;
}

/* A primitive token at the cursor. @return whether it is there (then the cursor is past
 * it): jsmn does not check what lies before a token. */
static inline bool at_primitive(struct reader *r, const jsmntok_t *t)
{
    skip_ws(r);
    if ((size_t)t->start != r->pos)
        return false;
    r->pos = (size_t)t->end;
    return true;
}

/* An object's or an array's opening bracket at the cursor. @return whether it is there
 * (then the cursor is past it). */
static inline bool at_open(struct reader *r, const jsmntok_t *t)
{
    skip_ws(r);
    if ((size_t)t->start != r->pos || r->pos >= r->len
        || r->js[r->pos] != (t->type == JSMN_OBJECT ? '{' : '['))
        return false;
    r->pos++;
    return true;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* What a primitive's text is (RFC 8259 §3, §6); PRIM_NONE for anything the reader
 * declines. */
enum prim { PRIM_NONE, PRIM_TRUE, PRIM_FALSE, PRIM_NULL, PRIM_INT };

/*
 * The kind of the primitive's n bytes at p, and an integer's value in *v: true, false,
 * null or an integer. PRIM_NONE to decline: any other text, reals (left to jansson,
 * with its locale handling and range rules; pods hardly hold any), integers beyond 64
 * bits (jansson: "too big integer").
 */
static enum prim primitive_kind(const char *p, size_t n, long long *v)
{
    char text[24]; /* -9223372036854775808 and a NUL */
    size_t i = 0;
    char *end;

    if (n == 4 && memcmp(p, "true", 4) == 0)
        return PRIM_TRUE;
    if (n == 5 && memcmp(p, "false", 5) == 0)
        return PRIM_FALSE;
    if (n == 4 && memcmp(p, "null", 4) == 0)
        return PRIM_NULL;
    if (n == 0 || n >= sizeof(text))
        return PRIM_NONE;
    if (p[i] == '-')
        i++;
    if (i < n && p[i] == '0')
        i++;
    else if (i < n && p[i] >= '1' && p[i] <= '9')
        while (i < n && is_digit(p[i]))
            i++;
    else
        return PRIM_NONE;
    if (i != n)
        return PRIM_NONE; /* a fraction, an exponent or no number at all */
    if (n - (p[0] == '-') <= 18) {
        /* at most 18 digits: within 64 bits, summed here (strtoll for longer ones) */
        long long u = 0;

        for (size_t k = p[0] == '-'; k < n; k++)
            u = u * 10 + (p[k] - '0');
        *v = p[0] == '-' ? -u : u;
        return PRIM_INT;
    }
    memcpy(text, p, n);
    text[n] = '\0';
    errno = 0;
    *v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return PRIM_NONE;
    return PRIM_INT;
}

/* A primitive's n bytes at p as a value (primitive_kind). @return new reference, or NULL
 * to decline. */
static json_t *primitive(const char *p, size_t n)
{
    long long v = 0;

    switch (primitive_kind(p, n, &v)) {
    case PRIM_TRUE: return json_true();
    case PRIM_FALSE: return json_false();
    case PRIM_NULL: return json_null();
    case PRIM_INT: return json_integer((json_int_t)v);
    default: return NULL;
    }
}

/* Whether the n bytes at s are UTF-8 as jansson's lexer requires (its own check). */
static bool jansson_utf8(const char *s, size_t n)
{
    json_t *v = json_stringn(s, n);

    json_decref(v);
    return v != NULL;
}

/* jsonr_doc_read: string token t's decoded content (in the body, or in scratch, kept). */
static void keep_text(struct reader *r, const jsmntok_t *t, const char *s, size_t len)
{
    r->info[t - r->tok].text = s;
    r->info[t - r->tok].len = (uint32_t)len;
}

/*
 * The value at the next token checked as read_value would read it, with nothing built:
 * a member no keep list names, most of a review (its userInfo, the pod's resources,
 * affinity, probes, ...). The same checks, in one loop, with the containers open around
 * the cursor on a stack of its own: no call per token, no value made (and freed) per
 * number. The order of the checks is not read_value's, and need not be: every failure
 * is the same answer (the reader declines the body).
 * @return false to decline.
 */
static bool skip_value(struct reader *r, int depth)
{
    struct {
        const jsmntok_t *t;
        int left; /* members or items still to read */
    } open[JSONR_MAX_DEPTH + 2];
    int n = 0; /* open containers; the next value is depth + n deep */

    for (;;) {
        const jsmntok_t *t;
        const char *s;
        size_t len;
        bool utf8;
        long long number;

        if (depth + n > JSONR_MAX_DEPTH || r->next >= r->ntok)
            return false;
        t = &r->tok[r->next++];
        switch (t->type) {
        case JSMN_STRING:
            if (!at_string(r, t) || !string_content(r, t, false, &s, &len, &utf8)
                || (!utf8 && !jansson_utf8(s, len)))
                return false;
            if (r->info != NULL)
                keep_text(r, t, s, len);
            break;
        case JSMN_PRIMITIVE:
            if (!at_primitive(r, t)
                || primitive_kind(r->js + t->start, (size_t)(t->end - t->start), &number)
                    == PRIM_NONE)
                return false;
            break;
        case JSMN_OBJECT:
        case JSMN_ARRAY:
            if (!at_open(r, t))
                return false;
            open[n].t = t;
            open[n].left = t->size;
            n++;
            break;
        default: return false;
        }
        /* Close the containers read to their end, then step to the next value. */
        for (;;) {
            const jsmntok_t *c;
            const jsmntok_t *kt;
            size_t mark = r->top;

            if (n == 0)
                return true;
            c = open[n - 1].t;
            if (open[n - 1].left == 0) {
                if (!expect(r, c->type == JSMN_OBJECT ? '}' : ']') || r->pos != (size_t)c->end)
                    return false;
                if (r->info != NULL)
                    r->info[c - r->tok].after = r->next;
                n--;
                continue;
            }
            if (open[n - 1].left < c->size && !expect(r, ','))
                return false;
            open[n - 1].left--;
            if (c->type == JSMN_OBJECT) {
                /* a key, checked as json_object_setn_new would check it */
                if (r->next >= r->ntok)
                    return false;
                kt = &r->tok[r->next++];
                if (!at_string(r, kt) || !string_content(r, kt, true, &s, &len, &utf8)
                    || !expect(r, ':') || (!utf8 && !jansson_utf8(s, len)))
                    return false;
                if (r->info != NULL)
                    keep_text(r, kt, s, len);
                else
                    r->top = mark;
            }
            break;
        }
    }
}

static json_t *read_array(struct reader *r, const jsmntok_t *t, int depth,
                          const struct jsonr_keep *keep)
{
    json_t *a = json_array();

    if (a == NULL)
        return NULL;
    for (int k = 0; k < t->size; k++) {
        json_t *v;

        if (k > 0 && !expect(r, ','))
            goto fail;
        v = read_value(r, depth + 1, keep);
        if (v == NULL)
            goto fail;
        if (json_array_append_new(a, v) < 0)
            goto fail;
    }
    if (!expect(r, ']'))
        goto fail;
    return a;
fail:
    json_decref(a);
    return NULL;
}

/* The entry of keep named by the len bytes at key, or the list's end ({NULL, ...}). */
static const struct jsonr_keep *kept_member(const struct jsonr_keep *keep, const char *key,
                                            size_t len)
{
    /* the first byte first: most of a body's members are named by no entry */
    for (; keep->key != NULL; keep++) {
        if ((len == 0 ? keep->key[0] == '\0' : keep->key[0] == key[0])
            && strncmp(keep->key, key, len) == 0 && keep->key[len] == '\0')
            return keep;
    }
    return keep;
}

static json_t *read_object(struct reader *r, const jsmntok_t *t, int depth,
                           const struct jsonr_keep *keep)
{
    json_t *o = json_object();

    if (o == NULL)
        return NULL;
    for (int k = 0; k < t->size; k++) {
        size_t mark = r->top;
        const jsmntok_t *kt;
        const char *key;
        size_t key_len;
        bool utf8;
        const struct jsonr_keep *member;
        bool named; /* the member is in o, with v */
        json_t *v;

        if (k > 0 && !expect(r, ','))
            goto fail;
        if (r->next >= r->ntok)
            goto fail;
        kt = &r->tok[r->next++];
        if (!at_string(r, kt) || !string_content(r, kt, true, &key, &key_len, &utf8)
            || !expect(r, ':'))
            goto fail;
        if (keep == NULL) {
            member = NULL;
            named = true;
        } else {
            const struct jsonr_keep *e = kept_member(keep, key, key_len);

            member = e->key != NULL ? e->sub : skipped;
            named = e->key != NULL || e->sub == JSONR_KEEP_NAMES; /* v: null */
        }
        if (member == skipped && !named) {
            /* Left out, but checked as read and as json_object_setn_new would check
             * its key. */
            if (!skip_value(r, depth + 1) || (!utf8 && !jansson_utf8(key, key_len)))
                goto fail;
            r->top = mark;
            continue;
        }
        v = read_value(r, depth + 1, member);
        if (v == NULL)
            goto fail;
        /* json_object_setn_new checks the key's UTF-8 as jansson's lexer does; a
         * repeated key keeps its place and takes the new value, as in json_loadb.
         * Both take v, even when they fail. */
        if ((utf8 ? json_object_setn_new_nocheck(o, key, key_len, v)
                  : json_object_setn_new(o, key, key_len, v))
            < 0)
            goto fail;
        r->top = mark;
    }
    if (!expect(r, '}'))
        goto fail;
    return o;
fail:
    json_decref(o);
    return NULL;
}

static json_t *read_value(struct reader *r, int depth, const struct jsonr_keep *keep)
{
    const jsmntok_t *t;
    const char *s;
    size_t n;
    bool utf8;
    json_t *v;

    if (keep == skipped)
        return skip_value(r, depth) ? json_null() : NULL;
    if (depth > JSONR_MAX_DEPTH || r->next >= r->ntok)
        return NULL;
    t = &r->tok[r->next++];
    switch (t->type) {
    case JSMN_STRING:
        if (!at_string(r, t) || !string_content(r, t, false, &s, &n, &utf8))
            return NULL;
        /* json_stringn: NULL for invalid UTF-8, which jansson's lexer refuses */
        return utf8 ? json_stringn_nocheck(s, n) : json_stringn(s, n);
    case JSMN_PRIMITIVE:
        if (!at_primitive(r, t))
            return NULL;
        return primitive(r->js + t->start, (size_t)(t->end - t->start));
    case JSMN_OBJECT:
    case JSMN_ARRAY:
        if (!at_open(r, t))
            return NULL;
        /* An array passes keep on to each of its items. */
        v = t->type == JSMN_OBJECT ? read_object(r, t, depth, keep) : read_array(r, t, depth, keep);
        if (v != NULL && r->pos != (size_t)t->end) {
            json_decref(v);
            return NULL;
        }
        return v;
    default: return NULL;
    }
}

/* What a byte is to jsonr_scan_body outside strings: one table look-up, not a chain
 * of compares, for each of the bytes between strings. */
enum scan_class { SCAN_OTHER, SCAN_OPEN, SCAN_CLOSE, SCAN_QUOTE, SCAN_PRIMITIVE, SCAN_DELIMIT };

static const unsigned char scan_class[256] = {
    ['{'] = SCAN_OPEN,      ['['] = SCAN_OPEN,      ['}'] = SCAN_CLOSE,     [']'] = SCAN_CLOSE,
    ['"'] = SCAN_QUOTE,     ['-'] = SCAN_PRIMITIVE, ['0'] = SCAN_PRIMITIVE, ['1'] = SCAN_PRIMITIVE,
    ['2'] = SCAN_PRIMITIVE, ['3'] = SCAN_PRIMITIVE, ['4'] = SCAN_PRIMITIVE, ['5'] = SCAN_PRIMITIVE,
    ['6'] = SCAN_PRIMITIVE, ['7'] = SCAN_PRIMITIVE, ['8'] = SCAN_PRIMITIVE, ['9'] = SCAN_PRIMITIVE,
    ['t'] = SCAN_PRIMITIVE, ['f'] = SCAN_PRIMITIVE, ['n'] = SCAN_PRIMITIVE, ['\t'] = SCAN_DELIMIT,
    ['\r'] = SCAN_DELIMIT,  ['\n'] = SCAN_DELIMIT,  [' '] = SCAN_DELIMIT,   [','] = SCAN_DELIMIT,
};

/* A primitive runs to whitespace, a comma or a closing bracket (jsmn's strict lexer). */
static bool delimits_primitive(char c)
{
    unsigned char k = scan_class[(unsigned char)c];

    return k == SCAN_DELIMIT || k == SCAN_CLOSE;
}

/*
 * One pass over the bytes (jsonr.h). Depth is counted as jsmn's strict mode lexes
 * the text: a string runs to its first unescaped quote, a primitive to a delimiter
 * (quotes and brackets in it are its own). jsmn closes a bracket by walking up from
 * its last token one level per step, so a body d deep costs it d * d steps: deeper
 * bodies are declined before jsmn reads them. Where this count and jsmn part ways,
 * jsmn has already failed. Containers are counted on every bracket outside strings,
 * those inside a primitive (invalid JSON) too: up to the first byte that is not JSON,
 * all that jansson ever builds of a body, the count is every container opened.
 */
void jsonr_scan_body(const char *js, size_t len, struct jsonr_scan *out)
{
    size_t depth = 0;

    out->containers = 0;
    out->shallow = true;
    for (size_t i = 0; i < len; i++) {
        switch (scan_class[(unsigned char)js[i]]) {
        case SCAN_OPEN:
            out->containers++;
            if (++depth > JSONR_MAX_DEPTH + 1)
                out->shallow = false;
            break;
        case SCAN_CLOSE:
            if (depth > 0)
                depth--;
            break;
        case SCAN_QUOTE: i = jsonr_string_end(js, len, i + 1); break;
        case SCAN_PRIMITIVE:
            while (i + 1 < len && !delimits_primitive(js[i + 1])) {
                i++;
                if (scan_class[(unsigned char)js[i]] == SCAN_OPEN)
                    out->containers++;
            }
            break;
        default: break;
        }
    }
}

/* The open objects and arrays around jsmn's position: those up the parent links from
 * toksuper (an open container, or the key whose value is being read) that jsmn has not
 * closed. In JSON all of them are open; jsmn also takes a ':' after any token
 * (`[[]:[`), and then a closed container is among the parents. */
static int open_depth(const jsmntok_t *tok, int super)
{
    int depth = 0;

    for (int i = super; i >= 0; i = tok[i].parent) {
        if ((tok[i].type == JSMN_OBJECT || tok[i].type == JSMN_ARRAY) && tok[i].end == -1)
            depth++;
    }
    return depth;
}

/* Where the string or primitive starting at js[at] ends, as jsmn's strict lexer reads
 * it: past its closing quote, or at the delimiter after it; len when it runs out. */
static size_t token_end(const char *js, size_t len, size_t at)
{
    if (js[at] == '"') {
        size_t q = jsonr_string_end(js, len, at + 1);

        return q < len ? q + 1 : len;
    }
    while (at < len && !delimits_primitive(js[at]))
        at++;
    return at;
}

/*
 * jsmn over the len bytes at js, *tok grown (from *cap) as jsmn asks, up to max
 * tokens. stepped: jsmn reads JSONR_STEP bytes at a time (it goes on from where it
 * stopped: a token the step's end cuts is read again whole in the next step, which
 * reaches past it), and between steps the open containers are counted: deeper than
 * JSONR_MAX_DEPTH + 1, the parse stops (JSMN_ERROR_INVAL; the builder would decline
 * them anyway). That bounds jsmn's square cost of depth to one step's bytes, as
 * jsonr_scan_body's count does before the parse, without a pass over the body.
 * @return jsmn_parse's answer for the whole text.
 */
static int tokenize(jsmn_parser *p, const char *js, size_t len, bool stepped, jsmntok_t **tok,
                    size_t *cap, size_t max)
{
    size_t end = stepped && len > JSONR_STEP ? JSONR_STEP : len;

    for (;;) {
        int rc = jsmn_parse(p, js, end, *tok, (unsigned int)*cap);
        if (rc == JSMN_ERROR_NOMEM && *cap < max) {
            size_t want = *cap * 2 < max ? *cap * 2 : max;
            jsmntok_t *grown = realloc(*tok, want * sizeof(**tok));

            if (grown == NULL)
                return JSMN_ERROR_NOMEM;
            *tok = grown;
            *cap = want;
            continue;
        }
        if (end == len || rc == JSMN_ERROR_INVAL || rc == JSMN_ERROR_NOMEM)
            return rc;
        /* JSMN_ERROR_PART (or a whole value with more text after it): a step on */
        if (open_depth(*tok, p->toksuper) > JSONR_MAX_DEPTH + 1)
            return JSMN_ERROR_INVAL;
        if (p->pos < end) {
            size_t cut = token_end(js, len, p->pos);

            if (cut > end)
                end = cut;
        }
        end = len - end > JSONR_STEP ? end + JSONR_STEP : len;
    }
}

/*
 * jsmn's tokens of the len bytes at js (tokenize), into *tok_out (malloc'd, the
 * caller frees it; NULL when none could be had) and their number into *ntok.
 * @return jsmn_parse's answer.
 */
static int tokens_of(const char *js, size_t len, bool stepped, jsmntok_t **tok_out, int *ntok)
{
    /* A body the reader accepts has at most (len + 1) / 2 tokens: a scalar takes a
     * byte, a key three, a container of n members n + 1 bytes of brackets and commas.
     * jsmn gets no more, whatever else it would tokenize (`[1][1]...`: two tokens per
     * three bytes, 13 bytes of tokens per byte of body). */
    size_t max = len / 2 + 1;
    size_t cap = len / 4 + 16 < max ? len / 4 + 16 : max;
    jsmn_parser p;
    int rc;

    *ntok = 0;
    *tok_out = malloc(cap * sizeof(**tok_out));
    if (*tok_out == NULL)
        return JSMN_ERROR_NOMEM;
    jsmn_init(&p);
    rc = tokenize(&p, js, len, stepped, tok_out, &cap, max);
    *ntok = (int)p.toknext;
    return rc;
}

int jsonr_tokenize(const char *js, size_t len, bool stepped, size_t *tokens)
{
    jsmntok_t *tok;
    int ntok;
    int rc = tokens_of(js, len, stepped, &tok, &ntok);

    *tokens = (size_t)ntok;
    free(tok);
    return rc;
}

/*
 * The start of every read of a body: what the reader declines before any parse (no
 * body, NUL bytes, too long, too deep: jsonr.h), then jsmn's tokens, into r (set to
 * read them from the start) and *tok (malloc'd, the caller frees it; NULL when none).
 * scan: the body's, or NULL (a body up to JSONR_STEPPED_MAX bytes is tokenized in
 * steps, a longer one scanned first). @return false to decline.
 */
static bool reader_begin(struct reader *r, const char *body, size_t len,
                         const struct jsonr_scan *scan, jsmntok_t **tok)
{
    bool stepped = scan == NULL && len <= JSONR_STEPPED_MAX;
    struct jsonr_scan own;

    *tok = NULL;
    /* jsmn stops at a NUL byte. */
    if (body == NULL || len == 0 || len > JSONR_MAX_LEN || memchr(body, '\0', len) != NULL)
        return false;
    if (!stepped) {
        if (scan == NULL) {
            jsonr_scan_body(body, len, &own);
            scan = &own;
        }
        if (!scan->shallow)
            return false;
    }
    if (tokens_of(body, len, stepped, tok, &r->ntok) <= 0)
        return false;
    r->js = body;
    r->len = len;
    r->tok = *tok;
    return true;
}

/* jsonr_fast_kept with the body's scan made (scan), or none made (NULL). */
static json_t *fast(const char *body, size_t len, const struct jsonr_keep *keep,
                    const struct jsonr_scan *scan)
{
    struct reader r = {0};
    jsmntok_t *tok = NULL;
    json_t *v = NULL;

    if (!reader_begin(&r, body, len, scan, &tok))
        goto out;
    v = read_value(&r, 0, keep);
    skip_ws(&r);
    if (v != NULL && (r.pos != len || r.next != r.ntok)) {
        json_decref(v);
        v = NULL;
    }
out:
    free(r.scratch);
    free(tok);
    return v;
}

json_t *jsonr_fast_whole(const char *body, size_t len)
{
    struct jsonr_scan scan;

    if (body == NULL || len == 0)
        return NULL;
    jsonr_scan_body(body, len, &scan);
    return fast(body, len, NULL, &scan);
}

json_t *jsonr_fast_kept(const char *body, size_t len, const struct jsonr_keep *keep)
{
    return fast(body, len, keep, NULL);
}

json_t *jsonr_fast(const char *body, size_t len)
{
    return fast(body, len, NULL, NULL);
}

json_t *jsonr_loadb_kept(const char *body, size_t len, const struct jsonr_keep *keep,
                         const struct jsonr_scan *scan, json_error_t *err)
{
    json_t *v = fast(body, len, keep, scan);

    if (v != NULL)
        return v;
    return json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, err);
}

json_t *jsonr_loadb(const char *body, size_t len, json_error_t *err)
{
    json_t *v = jsonr_fast(body, len);

    if (v != NULL)
        return v;
    return json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, err);
}

/* ---- the document: the checked tokens, kept for reading in place (jsonr.h) ---- */

struct jsonr_doc {
    const char *js; /* the body, borrowed */
    jsmntok_t *tok;
    int ntok;
    struct jsonr_tokinfo *info;
    char *scratch; /* the decoded strings with escapes */
};

struct jsonr_doc *jsonr_doc_read(const char *body, size_t len, const struct jsonr_scan *scan)
{
    struct reader r = {0};
    struct jsonr_doc *d = calloc(1, sizeof(*d));
    jsmntok_t *tok = NULL;
    bool ok;

    /* fast()'s start: what it declines, the document declines */
    if (d == NULL || !reader_begin(&r, body, len, scan, &tok))
        goto fail;
    /* every field read is written by skip_value: no need to clear them */
    r.info = malloc((size_t)r.ntok * sizeof(*r.info));
    if (r.info == NULL)
        goto fail;
    ok = skip_value(&r, 0);
    skip_ws(&r);
    if (!ok || r.pos != len || r.next != r.ntok)
        goto fail;
    d->js = body;
    d->tok = tok;
    d->ntok = r.ntok;
    d->info = r.info;
    d->scratch = r.scratch;
    return d;
fail:
    free(r.info);
    free(r.scratch);
    free(tok);
    free(d);
    return NULL;
}

void jsonr_doc_free(struct jsonr_doc *d)
{
    if (d == NULL)
        return;
    free(d->tok);
    free(d->info);
    free(d->scratch);
    free(d);
}

static bool in_doc(const struct jsonr_doc *d, int v)
{
    return d != NULL && v >= 0 && v < d->ntok;
}

/* A primitive token's kind (the document holds only those primitive_kind accepts). */
static enum prim doc_primitive(const struct jsonr_doc *d, int v, long long *number)
{
    const jsmntok_t *t = &d->tok[v];

    return primitive_kind(d->js + t->start, (size_t)(t->end - t->start), number);
}

enum jsonr_kind jsonr_doc_kind(const struct jsonr_doc *d, int v)
{
    long long number;

    if (!in_doc(d, v))
        return JSONR_NONE;
    switch (d->tok[v].type) {
    case JSMN_OBJECT: return JSONR_OBJECT;
    case JSMN_ARRAY: return JSONR_ARRAY;
    case JSMN_STRING: return JSONR_STRING;
    default: break;
    }
    switch (doc_primitive(d, v, &number)) {
    case PRIM_TRUE: return JSONR_TRUE;
    case PRIM_FALSE: return JSONR_FALSE;
    case PRIM_NULL: return JSONR_NULL;
    default: return JSONR_INTEGER;
    }
}

size_t jsonr_doc_size(const struct jsonr_doc *d, int v)
{
    if (!in_doc(d, v) || (d->tok[v].type != JSMN_OBJECT && d->tok[v].type != JSMN_ARRAY))
        return 0;
    return (size_t)d->tok[v].size;
}

int jsonr_doc_first(const struct jsonr_doc *d, int v)
{
    return jsonr_doc_size(d, v) > 0 ? v + 1 : -1;
}

int jsonr_doc_after(const struct jsonr_doc *d, int v)
{
    if (!in_doc(d, v))
        return -1;
    if (d->tok[v].type == JSMN_OBJECT || d->tok[v].type == JSMN_ARRAY)
        return d->info[v].after;
    return v + 1;
}

bool jsonr_doc_string(const struct jsonr_doc *d, int v, const char **s, size_t *n)
{
    if (!in_doc(d, v) || d->tok[v].type != JSMN_STRING)
        return false;
    *s = d->info[v].text;
    *n = d->info[v].len;
    return true;
}

bool jsonr_doc_integer(const struct jsonr_doc *d, int v, long long *number)
{
    return in_doc(d, v) && d->tok[v].type == JSMN_PRIMITIVE
        && doc_primitive(d, v, number) == PRIM_INT;
}

int jsonr_doc_member(const struct jsonr_doc *d, int obj, const char *key)
{
    size_t klen = strlen(key);
    size_t n;
    int found = -1;
    int k;

    if (!in_doc(d, obj) || d->tok[obj].type != JSMN_OBJECT)
        return -1;
    n = (size_t)d->tok[obj].size;
    k = obj + 1;
    for (size_t m = 0; m < n; m++) {
        /* json_loadb keeps a repeated key's last value: the last match counts */
        if (d->info[k].len == klen && memcmp(d->info[k].text, key, klen) == 0)
            found = k + 1;
        k = jsonr_doc_after(d, k + 1);
    }
    return found;
}

/* Whether key tokens a and b of d are the same key (their decoded bytes). */
static bool same_key(const struct jsonr_doc *d, int a, int b)
{
    return d->info[a].len == d->info[b].len
        && memcmp(d->info[a].text, d->info[b].text, d->info[a].len) == 0;
}

/* The place after v (jsonr_doc_after, for a v known to be in d). */
static inline int after_in(const struct jsonr_doc *d, int v)
{
    return d->tok[v].type == JSMN_OBJECT || d->tok[v].type == JSMN_ARRAY ? d->info[v].after : v + 1;
}

/* An object of at most this many members finds repeated keys by comparing each key with
 * those before it; a larger one sorts its keys (places_sorted), so no body costs the
 * square of its size. */
#define MEMBERS_KEYS_SEEN 64

/* A key of an object, for places_sorted. */
struct key_ref {
    const char *text;
    uint32_t len;
    uint32_t order; /* its place in the text among the object's keys */
};

/* Whether two keys are the same bytes. */
static bool same_text(const struct key_ref *x, const struct key_ref *y)
{
    return x->len == y->len && memcmp(x->text, y->text, x->len) == 0;
}

/* By length, bytes, then place: one key's occurrences side by side, the first first. */
static int key_ref_cmp(const void *a, const void *b)
{
    const struct key_ref *x = a;
    const struct key_ref *y = b;
    int c;

    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    c = memcmp(x->text, y->text, x->len);
    if (c != 0)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * For each of the count keys of object obj, in text order, the number of distinct keys
 * before its first occurrence (its place in json_loadb's order), into places_of[]:
 * n log n, by sorting the keys. @return 0, or -1 without memory.
 */
static int places_sorted(const struct jsonr_doc *d, int obj, size_t count, long *places_of)
{
    struct key_ref *refs = malloc(count * sizeof(*refs));
    bool *first = calloc(count, sizeof(*first));
    long distinct = 0;
    int k = obj + 1;

    if (refs == NULL || first == NULL) {
        free(refs);
        free(first);
        return -1;
    }
    for (size_t m = 0; m < count; m++) {
        refs[m] = (struct key_ref){d->info[k].text, d->info[k].len, (uint32_t)m};
        k = after_in(d, k + 1);
    }
    qsort(refs, count, sizeof(*refs), key_ref_cmp);
    for (size_t m = 0; m < count; m++) /* the first of each run of one key */
        first[refs[m].order] = m == 0 || !same_text(&refs[m - 1], &refs[m]);
    /* a repeated key's later occurrences take the place of its first: places_of of a
     * repeat is not read (jsonr_doc_members records the first occurrence only) */
    for (size_t m = 0; m < count; m++) {
        places_of[m] = distinct;
        distinct += first[m] ? 1 : 0;
    }
    free(refs);
    free(first);
    return 0;
}

void jsonr_doc_members(const struct jsonr_doc *d, int obj, const char *const *keys, size_t n,
                       int *out, long *places)
{
    size_t lens[JSONR_MEMBERS_MAX];
    int seen_keys[MEMBERS_KEYS_SEEN];
    long *places_of = NULL; /* a large object's places (places_sorted) */
    size_t count;
    long distinct = 0; /* the keys walked, each counted once */
    int k;

    for (size_t i = 0; i < n; i++) {
        out[i] = -1;
        if (places != NULL)
            places[i] = -1;
        lens[i < JSONR_MEMBERS_MAX ? i : 0] = strlen(keys[i]);
    }
    if (!in_doc(d, obj) || d->tok[obj].type != JSMN_OBJECT || n > JSONR_MEMBERS_MAX)
        return;
    count = (size_t)d->tok[obj].size;
    if (places != NULL && count > MEMBERS_KEYS_SEEN) {
        places_of = malloc(count * sizeof(*places_of));
        if (places_of == NULL || places_sorted(d, obj, count, places_of) < 0) {
            free(places_of);
            places_of = NULL;
            places = NULL; /* no memory to tell: every place stays -1 */
        }
    }
    k = obj + 1;
    for (size_t m = 0; m < count; m++) {
        const struct jsonr_tokinfo *key = &d->info[k];
        bool seen = false;

        /* a repeated key keeps its first place (json_loadb): is k new? */
        if (places != NULL && places_of == NULL) {
            for (size_t j = 0; j < m && !seen; j++)
                seen = d->info[seen_keys[j]].len == key->len && same_key(d, seen_keys[j], k);
            seen_keys[m] = k;
        }
        for (size_t i = 0; i < n; i++) {
            /* the last value of a repeated key, as json_loadb keeps */
            if (key->len == lens[i] && (lens[i] == 0 || key->text[0] == keys[i][0])
                && memcmp(key->text, keys[i], lens[i]) == 0) {
                out[i] = k + 1;
                if (places != NULL && places[i] < 0)
                    places[i] = places_of != NULL ? places_of[m] : distinct;
                break;
            }
        }
        distinct += seen ? 0 : 1;
        k = after_in(d, k + 1);
    }
    free(places_of);
}

long jsonr_doc_place(const struct jsonr_doc *d, int obj, const char *key)
{
    int at;
    long place;

    jsonr_doc_members(d, obj, &key, 1, &at, &place);
    return place;
}

/* jsonr_doc_value_kept's builder: keep == NULL builds v whole. */
static json_t *doc_value(const struct jsonr_doc *d, int v, const struct jsonr_keep *keep);

json_t *jsonr_doc_value(const struct jsonr_doc *d, int v)
{
    return doc_value(d, v, NULL);
}

json_t *jsonr_doc_value_kept(const struct jsonr_doc *d, int v, const struct jsonr_keep *keep)
{
    return doc_value(d, v, keep);
}

static json_t *doc_value(const struct jsonr_doc *d, int v, const struct jsonr_keep *keep)
{
    long long number;
    json_t *c;
    size_t n;
    int k;

    if (!in_doc(d, v))
        return NULL;
    switch (d->tok[v].type) {
    case JSMN_STRING:
        /* checked as UTF-8 when read (skip_value) */
        return json_stringn_nocheck(d->info[v].text, d->info[v].len);
    case JSMN_OBJECT:
        c = json_object();
        n = (size_t)d->tok[v].size;
        k = v + 1;
        for (size_t m = 0; c != NULL && m < n; m++) {
            const struct jsonr_keep *e =
                keep != NULL ? kept_member(keep, d->info[k].text, d->info[k].len) : NULL;
            json_t *value;

            if (e == NULL) {
                value = doc_value(d, k + 1, NULL);
            } else if (e->key != NULL) {
                value = doc_value(d, k + 1, e->sub);
            } else if (e->sub == JSONR_KEEP_NAMES) {
                value = json_null(); /* kept by name only */
            } else {
                k = jsonr_doc_after(d, k + 1); /* left out, as jsonr_fast_kept leaves it */
                continue;
            }
            /* a repeated key keeps its first place and takes the last value, as in json_loadb */
            if (json_object_setn_new_nocheck(c, d->info[k].text, d->info[k].len, value) < 0) {
                json_decref(c);
                return NULL;
            }
            k = jsonr_doc_after(d, k + 1);
        }
        return c;
    case JSMN_ARRAY:
        c = json_array();
        n = (size_t)d->tok[v].size;
        k = v + 1;
        for (size_t m = 0; c != NULL && m < n; m++) {
            /* an array passes keep on to each of its items */
            if (json_array_append_new(c, doc_value(d, k, keep)) < 0) {
                json_decref(c);
                return NULL;
            }
            k = jsonr_doc_after(d, k);
        }
        return c;
    default: break;
    }
    switch (doc_primitive(d, v, &number)) {
    case PRIM_TRUE: return json_true();
    case PRIM_FALSE: return json_false();
    case PRIM_NULL: return json_null();
    case PRIM_INT: return json_integer((json_int_t)number);
    default: return NULL;
    }
}
