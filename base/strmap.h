/* SPDX-License-Identifier: Apache-2.0 */
/*
 * strmap.h - a hash map from NUL-terminated string keys to void * values.
 *
 * Chained buckets, doubled when the map holds more entries than buckets, so a
 * lookup stays O(1) as it grows (redis src/dict.h). The map copies each key and
 * owns each value: it frees a value through the destructor it was given when the
 * value is replaced, removed or the map goes (C-STYLE §6.7, redis dictType's
 * valDestructor). The hash is keyed per map (strmap.c), so keys a peer picks
 * (YAML anchors, Job names) cannot be made to share a bucket.
 *
 * For jansson values keyed by string, a json_t object is the tool; this map is for
 * C structs. Not thread-safe: the caller locks.
 */
#ifndef WH_STRMAP_H
#define WH_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct strmap;

/** Frees one value of a map; called with a non-NULL value only. */
typedef void (*strmap_free_fn)(void *value);

/**
 * A new, empty map whose values are freed with free_value (NULL: values are not
 * the map's to free). @return the map (strmap_destroy), NULL on ENOMEM.
 */
struct strmap *strmap_create(strmap_free_fn free_value) WH_WARN_UNUSED;

/** Free every value (through the destructor), every key and the map; NULL is a no-op. */
void strmap_destroy(struct strmap *m);

/**
 * Map key (borrowed; the map keeps its own copy) to value, which the map owns from
 * then on. A value already under key is freed (unless it is value itself).
 * @return 0; WH_ENOMEM, and then value stays the caller's and the map is unchanged.
 */
int strmap_set(struct strmap *m, const char *key, void *value) WH_WARN_UNUSED;

/** The value under key, borrowed (valid until it is replaced or removed); NULL when absent. */
void *strmap_get(const struct strmap *m, const char *key);

/** Remove key and free its value. @return 0, or WH_ENOTFOUND when key is not there. */
int strmap_remove(struct strmap *m, const char *key);

/** Remove key and hand its value to the caller (not freed). @return it, NULL when absent. */
void *strmap_take(struct strmap *m, const char *key);

/**
 * Visit every entry once, in no particular order: keep(key, value, ctx) returns
 * true to keep the entry, false to remove it (its value freed through the
 * destructor, if the map has one). keep may free a value it removes when the map
 * has no destructor, and must not call other strmap functions on m. Never fails.
 */
void strmap_filter(struct strmap *m, bool (*keep)(const char *key, void *value, void *ctx),
                   void *ctx);

/** Remove every entry, freeing the values; the map stays usable. */
void strmap_clear(struct strmap *m);

/** The number of entries. */
size_t strmap_size(const struct strmap *m);

/** The longest bucket chain: how well the keys spread (tests, diagnostics). */
size_t strmap_max_chain(const struct strmap *m);

#endif
