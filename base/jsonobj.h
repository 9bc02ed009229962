/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonobj.h - members of a small jansson object read without hashing their keys, one
 * (json_member) or several in one pass (json_members); the items of an array given as an
 * expression, evaluated once (json_array_each).
 *
 * json_object_get hashes the key (jansson's seeded lookup3) and searches its bucket:
 * about 160 instructions a call, paid some 500 times per admission on objects of a
 * few members (a container, an env entry, a port, an ownerReference). Walking the
 * object's members in order costs a few instructions per member, so the first
 * JSON_MEMBER_SCAN_MAX members are walked and the rest of a larger object (labels,
 * annotations) left to jansson's hash. The answer is json_object_get's: keys are
 * unique in a jansson object, so the member found is the same in either order.
 */
#ifndef WH_JSONOBJ_H
#define WH_JSONOBJ_H

#include <jansson.h>
#include <string.h>

/* Objects with more members are looked up by jansson's hash (bench/RESULTS.md). */
#define JSON_MEMBER_SCAN_MAX 8

/**
 * json_object_get(obj, key), the same value for every obj and key.
 * @param obj  borrowed; NULL or not an object: NULL, as json_object_get
 * @param key  NUL-terminated; a key with a NUL inside it is never matched, as in
 *             json_object_get (the member's length must equal strlen(key)); NULL:
 *             NULL, as json_object_get
 * @return borrowed member value, or NULL when obj has no member key.
 */
static inline json_t *json_member(const json_t *obj, const char *key)
{
    /* jansson's iterator functions take a non-const object; they only read it here. */
    json_t *o = (json_t *)obj;
    size_t seen = 0;
    size_t n;

    if (!json_is_object(o) || key == NULL)
        return NULL;
    n = strlen(key);
    for (void *it = json_object_iter(o); it != NULL; it = json_object_iter_next(o, it)) {
        const char *k = json_object_iter_key(it);

        /* past the first members, the rest by the hash (no size asked first: a call) */
        if (++seen > JSON_MEMBER_SCAN_MAX)
            return json_object_get(o, key);
        if (k[0] == key[0] && json_object_iter_key_len(it) == n && memcmp(k, key, n) == 0)
            return json_object_iter_value(it);
    }
    return NULL;
}

/**
 * json_member(obj, keys[i]) for each of the n keys, in one pass over obj's members: a
 * look-up walks the members before its key, so reading several members of one object
 * (an ownerReference's apiVersion, kind, name, uid, controller) walked them again for
 * each. The pass stops when every key is found.
 * @param obj   borrowed; NULL or not an object: every out[i] NULL
 * @param keys  n NUL-terminated keys, each at most once
 * @param[out] out  n borrowed values, NULL for a key obj has no member of
 */
static inline void json_members(const json_t *obj, const char *const *keys, size_t n,
                                const json_t **out)
{
    /* jansson's iterator functions take a non-const object; they only read it here. */
    json_t *o = (json_t *)obj;
    size_t left = n;

    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    if (!json_is_object(o))
        return;
    for (void *it = json_object_iter(o); it != NULL && left > 0;
         it = json_object_iter_next(o, it)) {
        const char *k = json_object_iter_key(it);

        for (size_t i = 0; i < n; i++) {
            if (out[i] == NULL && k[0] == keys[i][0] && strcmp(k, keys[i]) == 0
                && json_object_iter_key_len(it) == strlen(keys[i])) {
                out[i] = json_object_iter_value(it);
                left--;
                break;
            }
        }
    }
}

/* A name of json_array_each's own per line, so that loops nest (-Wshadow). */
#define JSON_ARRAY_EACH_PASTE(a, b) a##b
#define JSON_ARRAY_EACH_NAME(line)  JSON_ARRAY_EACH_PASTE(json_array_each_, line)

/**
 * json_array_foreach(array, index, value) with array evaluated once. jansson's macro
 * evaluates it twice per item (its size and its item), so a lookup given to it
 * (json_member(ctr, "env"), job_tasks(job), podutil_containers(pod)) is walked again
 * for every item: over the env entries of a container, twice each. Use this one when
 * array is anything but a variable. index (size_t) and value (json_t * or
 * const json_t *) are the caller's, as in json_array_foreach; break and continue work
 * as in any for loop. At most one per source line.
 */
#define json_array_each(array, index, value)                                                       \
    for (const json_t *JSON_ARRAY_EACH_NAME(__LINE__) = ((index) = 0, (array));                    \
         (index) < json_array_size(JSON_ARRAY_EACH_NAME(__LINE__))                                 \
         && ((value) = json_array_get(JSON_ARRAY_EACH_NAME(__LINE__), (index)));                   \
         (index)++)

#endif
