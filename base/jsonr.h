/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonr.h - the fast JSON reader of the admission request path: jansson's tree for
 * a body, built from jsmn's tokens (Debian's libjsmn-dev) instead of jansson's own
 * lexer, which spends most of a review's parse reading it byte by byte.
 *
 * One rule makes it safe: the fast path either builds exactly the tree
 * json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL) builds (same values,
 * types, key order; a repeated key keeps its first place and its last value), or it
 * declines, and then jansson reads the body. It declines on anything it does not
 * decide itself: invalid JSON of any kind (so every error message is jansson's),
 * NUL bytes in the body, bodies over JSONR_MAX_LEN, integers beyond 64 bits, every
 * real (jansson's conversion and range rules stay its own; pods hardly hold any),
 * unpaired surrogates, NUL in keys, nesting deeper than JSONR_MAX_DEPTH. Structure
 * (separators between tokens, which jsmn does not check), literals and number
 * grammar (RFC 8259 §3-§6) are checked here; UTF-8 is checked by jansson itself
 * (json_stringn, json_object_setn_new use the lexer's own rules). The differential
 * test (tests/base/check_jsonr.c) and fuzzer (tests/fuzz/fuzz_reader.c) hold the two
 * paths to one answer.
 *
 * Pure functions; thread-safe.
 */
#ifndef WH_JSONR_H
#define WH_JSONR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Deeper bodies are left to jansson (its own limit is 2048); a review's deepest pod
 * field (affinity's matchExpressions values) is 13 deep. They are found before jsmn
 * reads them, or within a step of it (JSONR_STEP): jsmn closes a bracket by walking
 * up one level per step, so a body d deep costs it d * d steps, and even at the limit
 * every bracket of a 1 MiB body of nests costs up to the limit's steps (at 128:
 * 0.56 s, twice jansson's time). */
#define JSONR_MAX_DEPTH 32

/* A body of at most JSONR_STEPPED_MAX bytes is not scanned for its depth before the
 * parse (jsonr_scan_body: a pass over every byte, 5 instructions per byte): jsmn reads
 * it JSONR_STEP bytes at a time, and between steps the containers open around its
 * position are counted up the tokens' parent links, so a body too deep is stopped
 * within one step of where it went too deep. At each step's end jsmn also walks back
 * over its tokens to the last container still open: at most JSONR_STEPPED_MAX / 2
 * tokens, JSONR_STEPPED_MAX / JSONR_STEP times, for `[1,1,...]`; a few for a review. */
#define JSONR_STEP        512
#define JSONR_STEPPED_MAX (16 * 1024)

/* Longer bodies are left to jansson: jsmn's tokens (20 bytes each, at most one per two
 * bytes of text, the most a body read here has) add up to 10 bytes per byte to the
 * tree's own memory. A review is a few KiB; a pod at etcd's 1.5 MiB object limit is
 * rare enough. */
#define JSONR_MAX_LEN (1024 * 1024)

/**
 * Where the JSON string whose content starts at js[from] ends: the index of its
 * closing quote, the first `"` not escaped (not after an odd run of backslashes,
 * RFC 8259 §7), or len when there is none. For the scans that skip strings before
 * any parse (jsonr_scan_body). Reads only
 * js[from..len). Inline: called once per string of a body.
 */
static inline size_t jsonr_string_end(const char *js, size_t len, size_t from)
{
    size_t i = from;

    /* memchr to each quote: most of a review is string content */
    while (i < len) {
        const char *q = memchr(js + i, '"', len - i);
        size_t at;
        size_t run = 0;

        if (q == NULL)
            return len;
        at = (size_t)(q - js);
        while (at - run > from && js[at - run - 1] == '\\')
            run++;
        if (run % 2 == 0)
            return at;
        i = at + 1;
    }
    return len;
}

/* What one pass over a body's bytes finds before any parse (jsonr_scan_body). */
struct jsonr_scan {
    size_t containers; /* objects and arrays opened */
    bool shallow;      /* they nest at most JSONR_MAX_DEPTH + 1 deep: jsmn may read it */
};

/**
 * One pass over the len bytes at js (string contents skipped, escapes honoured) for
 * a caller that bounds a body's containers before reading it (admission: jansson
 * spends ~500 bytes on each) and then hands the scan to jsonr_loadb_kept, which would
 * make the same pass otherwise. Fills *out; any bytes, valid JSON or not.
 */
void jsonr_scan_body(const char *js, size_t len, struct jsonr_scan *out);

/*
 * What of a document a reader builds: the members named, each whole (sub NULL) or
 * only sub's members of it. keep applies to an object's members; an array passes
 * it on to each of its items (so {"containers", ctr} keeps ctr's members of every
 * container). A list ends with {NULL, NULL}. Members not named are read and checked
 * as the rest of the body (the fast path declines on them as anywhere), then left
 * out of the tree: a caller declares what it reads, and reads nothing else.
 */
struct jsonr_keep {
    const char *key;
    const struct jsonr_keep *sub;
};

/* A list that ends with {NULL, JSONR_KEEP_NAMES} keeps the members it does not name
 * too, each with the value null: for a caller that reads which members an object has
 * and not what they hold (a volume's source: its kind, podutil). They are checked as
 * left-out members are. */
extern const struct jsonr_keep jsonr_keep_names[];
#define JSONR_KEEP_NAMES jsonr_keep_names

/**
 * The fast path alone: the tree of the len bytes at body (borrowed), or NULL when
 * the fast path declines (see above; also out of memory). Never an error of its own.
 * @return new reference or NULL.
 */
json_t *jsonr_fast(const char *body, size_t len);

/**
 * jsonr_fast, building only what keep names (struct jsonr_keep; NULL: everything):
 * json_loadb's tree with every member keep does not name left out, the rest as
 * json_loadb gives it (values, types, key order, a repeated key's first place and
 * last value), or NULL when the fast path declines. The whole body is checked all
 * the same: what it declines on, it declines on in left-out members too.
 * @return new reference or NULL.
 */
json_t *jsonr_fast_kept(const char *body, size_t len, const struct jsonr_keep *keep);

/**
 * jsonr_loadb, building only what keep names: jsonr_fast_kept's tree when the fast
 * path builds one, else json_loadb's whole tree (which holds everything keep names,
 * and more: a caller that reads only what keep names sees the same either way), or
 * NULL with jansson's error in *err (which may be NULL). scan is jsonr_scan_body's
 * of these bytes, or NULL to have it made here when it is needed (a body up to
 * JSONR_STEPPED_MAX bytes is read in steps instead; the answer is the same).
 * @return new reference, or NULL with *err filled.
 */
json_t *jsonr_loadb_kept(const char *body, size_t len, const struct jsonr_keep *keep,
                         const struct jsonr_scan *scan, json_error_t *err);

/**
 * json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, err), same result: the
 * fast path's tree when it builds one, else jansson's (and jansson's error in *err,
 * which may be NULL). @return new reference, or NULL with *err filled.
 */
json_t *jsonr_loadb(const char *body, size_t len, json_error_t *err);

/*
 * The document: a body read once and checked as jsonr_fast checks it, kept as jsmn's
 * tokens for reading in place, with no tree built. A value is the index of its token
 * (the body's root is 0; -1 is no value, and every function takes it). Strings come
 * decoded (escapes undone), pointing into the body or into the document; primitives
 * are true, false, null or an integer (the document declines reals, as jsonr_fast
 * does). The reader of a pod's typed view (k8s/podview.h).
 */
struct jsonr_doc;

/* What a value is (jsonr_doc_kind); JSONR_NONE for no value. */
enum jsonr_kind {
    JSONR_NONE,
    JSONR_OBJECT,
    JSONR_ARRAY,
    JSONR_STRING,
    JSONR_INTEGER,
    JSONR_TRUE,
    JSONR_FALSE,
    JSONR_NULL,
    JSONR_REAL, /* never in a document (it declines reals); for readers of jansson's trees */
};

/**
 * Read the len bytes at body (borrowed: they must outlive the document) as a
 * document. It declines exactly where jsonr_fast declines (invalid JSON of any kind,
 * a body too long or too deep, reals, ...; jsonr.h), so a body it declines is left to
 * jansson as there. scan: jsonr_scan_body's of these bytes, or NULL (as
 * jsonr_loadb_kept takes it).
 * @return the document (jsonr_doc_free frees it), or NULL when declined or out of memory.
 */
struct jsonr_doc *jsonr_doc_read(const char *body, size_t len, const struct jsonr_scan *scan);

/** Free d (NULL: nothing). */
void jsonr_doc_free(struct jsonr_doc *d);

/** @return what value v of d is; JSONR_NONE when v is not one (-1, out of range). */
enum jsonr_kind jsonr_doc_kind(const struct jsonr_doc *d, int v);

/** @return how many members (object) or items (array) v has; 0 for anything else. */
size_t jsonr_doc_size(const struct jsonr_doc *d, int v);

/**
 * @return the first item of array v, or the first key of object v (its value is the
 *         next index); -1 when v is empty or no container. With jsonr_doc_after:
 *         for (k = first, m = 0; m < size; m++, k = after(k)) walks an array's items,
 *         and for (k = first ...; k = after(k + 1)) an object's keys in text order
 *         (a repeated key as many times as it is written: jsonr_doc_member counts once).
 */
int jsonr_doc_first(const struct jsonr_doc *d, int v);

/** @return the index after v's last token: the next item or key of v's container. */
int jsonr_doc_after(const struct jsonr_doc *d, int v);

/**
 * The member key of object obj: its value, the last one written when the key is
 * repeated (json_loadb keeps the last value). Keys compare by their decoded bytes.
 * @return the value's index, or -1 when obj is no object or has no such member.
 */
int jsonr_doc_member(const struct jsonr_doc *d, int obj, const char *key);

/* The most keys jsonr_doc_members reads in one pass. */
#define JSONR_MEMBERS_MAX 16

/**
 * jsonr_doc_member of each of the n keys (at most JSONR_MEMBERS_MAX, each once), in one
 * pass over obj's members, into out[0..n): -1 for a key obj has none of (every one
 * when obj is no object, or n is over the most). places (may be NULL): each key's
 * jsonr_doc_place, in the same pass (which then compares each key with those before
 * it).
 */
void jsonr_doc_members(const struct jsonr_doc *d, int obj, const char *const *keys, size_t n,
                       int *out, long *places);

/**
 * Where member key of object obj is in json_loadb's tree of obj: its place among the
 * members in jansson's order (text order, a repeated key at its first place), from 0.
 * Costs a walk of the keys before it, each compared with those before it.
 * @return the place, or -1 when obj is no object or has no such member.
 */
long jsonr_doc_place(const struct jsonr_doc *d, int obj, const char *key);

/**
 * String v's decoded content into *s and *n: valid UTF-8, *n bytes, not NUL-terminated
 * and possibly holding NUL (an escaped \u0000); borrowed from d and the body.
 * @return false (nothing written) when v is no string.
 */
bool jsonr_doc_string(const struct jsonr_doc *d, int v, const char **s, size_t *n);

/** Integer v into *number. @return false (nothing written) when v is no integer. */
bool jsonr_doc_integer(const struct jsonr_doc *d, int v, long long *number);

/**
 * jsonr_doc_value building only what keep names (struct jsonr_keep; NULL: everything):
 * jsonr_fast_kept's tree of v's text. @return new reference; NULL when v is no value
 * or out of memory.
 */
json_t *jsonr_doc_value_kept(const struct jsonr_doc *d, int v, const struct jsonr_keep *keep);

/**
 * Value v as the tree json_loadb(JSON_DECODE_ANY | JSON_ALLOW_NUL) builds of its text
 * (the same values, types and key order; a repeated key in its first place with its
 * last value).
 * @return new reference; NULL when v is no value or out of memory.
 */
json_t *jsonr_doc_value(const struct jsonr_doc *d, int v);

#endif
