/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_cache.c - controller/cache.c: get/put/remove, replace_all with its reported
 * list, snapshots, the synced flag, and many readers with one writer on real
 * threads (run it under SANITIZER=thread as well); namespaced caches: what they
 * serve, a namespace's LIST replacing that namespace only, synced when every
 * namespace is, and two namespace writers at once.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/cache.h"
#include "plugins/diagnose.h"
#include "tests/testutil.h"

/* A Job ns/name with resourceVersion rv (new reference). */
static json_t *job(const char *ns, const char *name, const char *rv)
{
    json_t *j = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:[{s:s, s:i}]}}", "apiVersion",
                          "batch.volcano.sh/v1alpha1", "kind", "Job", "metadata", "name", name,
                          "namespace", ns, "resourceVersion", rv, "uid", "u-1", "spec", "tasks",
                          "name", "t", "replicas", 1);

    ck_assert_ptr_nonnull(j);
    return j;
}

static const char *rv_of(const json_t *j)
{
    return json_string_value(json_object_get(json_object_get(j, "metadata"), "resourceVersion"));
}

static const char *name_of(const json_t *j)
{
    return json_string_value(json_object_get(json_object_get(j, "metadata"), "name"));
}

START_TEST(test_empty)
{
    struct cache *c = cache_create();
    json_t *got = (json_t *)1;
    json_t *all;

    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(cache_size(c), 0);
    ck_assert(!cache_synced(c));
    ck_assert_int_eq(cache_get(c, "ns1", "j1", &got), WH_ENOTFOUND);
    ck_assert_ptr_null(got);
    ck_assert_int_eq(cache_remove(c, "ns1", "j1"), WH_ENOTFOUND);
    all = cache_list(c);
    tu_assert_json_eq(all, "[]");
    json_decref(all);
    cache_destroy(c);
    cache_destroy(NULL);
}
END_TEST

START_TEST(test_put_get_replace_remove)
{
    struct cache *c = cache_create();
    json_t *j1 = job("ns1", "j1", "5");
    json_t *j1b = job("ns1", "j1", "9");
    json_t *j2 = job("ns2", "j1", "6");
    json_t *got = NULL;
    json_t *old = NULL;

    ck_assert_int_eq(cache_put(c, j1), 0);
    ck_assert_int_eq(cache_put(c, j2), 0);
    ck_assert_uint_eq(cache_size(c), 2);
    /* The cache keeps a copy of its own: the caller's object gains no reference. */
    ck_assert_int_eq(j1->refcount, 1);

    ck_assert_int_eq(cache_get(c, "ns1", "j1", &got), 0);
    /* A private copy: equal, not the cached object, which gains no reference. */
    ck_assert_ptr_ne(got, j1);
    ck_assert(json_equal(got, j1));
    ck_assert_int_eq(got->refcount, 1);
    ck_assert_int_eq(j1->refcount, 1);
    old = got;
    got = NULL;

    /* An update swaps the object; what a reader holds stays valid and unchanged. */
    ck_assert_int_eq(cache_put(c, j1b), 0);
    ck_assert_uint_eq(cache_size(c), 2);
    ck_assert_int_eq(j1->refcount, 1);
    ck_assert_str_eq(rv_of(old), "5");
    ck_assert_int_eq(cache_get(c, "ns1", "j1", &got), 0);
    ck_assert_str_eq(rv_of(got), "9");
    json_decref(got);
    json_decref(old);

    /* Namespaces are part of the key. */
    ck_assert_int_eq(cache_get(c, "ns2", "j1", &got), 0);
    ck_assert_str_eq(rv_of(got), "6");
    json_decref(got);
    ck_assert_int_eq(cache_get(c, "ns3", "j1", &got), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get(c, "ns1", "j2", &got), WH_ENOTFOUND);

    ck_assert_int_eq(cache_remove(c, "ns1", "j1"), 0);
    ck_assert_int_eq(cache_remove(c, "ns1", "j1"), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get(c, "ns1", "j1", &got), WH_ENOTFOUND);
    ck_assert_uint_eq(cache_size(c), 1);
    ck_assert_int_eq(j1b->refcount, 1);

    cache_destroy(c);
    ck_assert_int_eq(j2->refcount, 1);
    json_decref(j1);
    json_decref(j1b);
    json_decref(j2);
}
END_TEST

/* Every read is a private tree: changing it changes neither the cache nor another read. */
START_TEST(test_reads_are_private)
{
    struct cache *c = cache_create();
    json_t *j1 = job("ns1", "j1", "5");
    json_t *j1b = job("ns1", "j1", "9");
    json_t *a = NULL;
    json_t *b = NULL;

    ck_assert_int_eq(cache_put(c, j1), 0);
    json_object_set_new(j1, "kind",
                        json_string("Changed")); /* the caller's object stays the caller's */
    ck_assert_int_eq(cache_get(c, "ns1", "j1", &a), 0);
    ck_assert_int_eq(cache_get(c, "ns1", "j1", &b), 0);
    ck_assert_ptr_ne(a, b);
    ck_assert_int_eq(a->refcount, 1);
    ck_assert_str_eq(json_string_value(json_object_get(a, "kind")), "Job");
    json_object_set_new(json_object_get(a, "metadata"), "resourceVersion", json_string("77"));
    ck_assert_str_eq(rv_of(b), "5");
    json_decref(b);

    /* Replaced while a read is held: the read keeps the old Job, a new read sees the new. */
    ck_assert_int_eq(cache_put(c, j1b), 0);
    ck_assert_str_eq(rv_of(a), "77");
    ck_assert_int_eq(cache_get(c, "ns1", "j1", &b), 0);
    ck_assert_str_eq(rv_of(b), "9");
    json_decref(a);
    json_decref(b);
    cache_destroy(c);
    json_decref(j1);
    json_decref(j1b);
}
END_TEST

/* The tree another thread's cache_get_read gives for ns1/j1 (its address, for comparing). */
static void *read_on_other_thread(void *arg)
{
    struct cache *c = arg;
    json_t *got = NULL;
    uintptr_t addr = 0;

    if (cache_get_read(c, "ns1", "j1", &got) == 0 && strcmp(rv_of(got), "9") == 0)
        addr = (uintptr_t)got;
    json_decref(got);
    return (void *)addr; /* the tree lives in that thread's memo until it exits */
}

/* A Job of n tasks with 89-byte names, ~116 bytes of kept text each: 60 tasks ~7 KiB,
 * 1000 over 100 KiB. */
static json_t *big_job(const char *name, int n)
{
    json_t *j = job("ns1", name, "1");
    json_t *tasks = json_array();
    char tname[96];

    for (int k = 0; k < n; k++) {
        snprintf(tname, sizeof(tname), "%089d", k);
        json_array_append_new(tasks, json_pack("{s:s, s:i}", "name", tname, "replicas", 1));
    }
    json_object_set_new(json_object_get(j, "spec"), "tasks", tasks);
    return j;
}

/* Job j (taken) put in the cache, then read with cache_get_read: its tree (a new
 * reference), checked to be the Job's. */
static json_t *put_then_read(struct cache *c, json_t *j)
{
    const char *name = json_string_value(json_object_get(json_object_get(j, "metadata"), "name"));
    json_t *tree = NULL;

    ck_assert_int_eq(cache_put(c, j), 0);
    ck_assert_int_eq(cache_get_read(c, "ns1", name, &tree), 0);
    ck_assert_str_eq(name_of(tree), name);
    json_decref(j);
    return tree;
}

START_TEST(test_read_keeps_a_tree_per_version)
{
    struct cache *c = cache_create();
    json_t *j1 = job("ns1", "j1", "5");
    json_t *j1b = job("ns1", "j1", "9");
    json_t *big = big_job("big", 1000);
    json_t *a = NULL;
    json_t *b = NULL;
    json_t *priv = NULL;
    json_t *first[17];
    pthread_t th;
    void *other = NULL;
    char name[16];

    ck_assert_int_eq(cache_put(c, j1), 0);
    /* one version, one tree on this thread; cache_get's stays private */
    ck_assert_int_eq(cache_get_read(c, "ns1", "j1", &a), 0);
    ck_assert_int_eq(cache_get_read(c, "ns1", "j1", &b), 0);
    ck_assert_ptr_eq(a, b);
    ck_assert_str_eq(rv_of(a), "5");
    json_decref(b);
    ck_assert_int_eq(cache_get(c, "ns1", "j1", &priv), 0);
    ck_assert_ptr_ne(priv, a);
    ck_assert(json_equal(priv, a));
    json_decref(priv);

    /* a new version is read anew; the old tree stays what it was for its holder */
    ck_assert_int_eq(cache_put(c, j1b), 0);
    ck_assert_int_eq(cache_get_read(c, "ns1", "j1", &b), 0);
    ck_assert_ptr_ne(b, a);
    ck_assert_str_eq(rv_of(b), "9");
    ck_assert_str_eq(rv_of(a), "5");
    json_decref(a);

    /* another thread gets a tree of its own */
    ck_assert_int_eq(pthread_create(&th, NULL, read_on_other_thread, c), 0);
    ck_assert_int_eq(pthread_join(th, &other), 0);
    ck_assert_ptr_nonnull(other);
    ck_assert_ptr_ne(other, b);
    json_decref(b);

    /* gone from the cache: not found, whatever this thread kept */
    ck_assert_int_eq(cache_remove(c, "ns1", "j1"), 0);
    ck_assert_int_eq(cache_get_read(c, "ns1", "j1", &a), WH_ENOTFOUND);
    ck_assert_ptr_null(a);

    /* 17 Jobs read in turn: the first read again is a new tree (16 are kept), each right */
    for (int k = 0; k < 17; k++) {
        snprintf(name, sizeof(name), "m%d", k);
        first[k] = put_then_read(c, job("ns1", name, "3"));
    }
    ck_assert_int_eq(cache_get_read(c, "ns1", "m16", &a), 0);
    ck_assert_ptr_eq(a, first[16]);
    json_decref(a);
    ck_assert_int_eq(cache_get_read(c, "ns1", "m0", &a), 0);
    ck_assert_ptr_ne(a, first[0]);
    ck_assert_str_eq(name_of(a), "m0");
    json_decref(a);
    for (int k = 0; k < 17; k++)
        json_decref(first[k]);

    /* the kept text of a thread's trees adds up to 16 KiB at most: of three ~7 KiB
     * Jobs the first gives way to the third, the second stays */
    for (int k = 0; k < 3; k++) {
        snprintf(name, sizeof(name), "w%d", k);
        first[k] = put_then_read(c, big_job(name, 60));
    }
    ck_assert_int_eq(cache_get_read(c, "ns1", "w1", &a), 0);
    ck_assert_ptr_eq(a, first[1]);
    json_decref(a);
    ck_assert_int_eq(cache_get_read(c, "ns1", "w2", &a), 0);
    ck_assert_ptr_eq(a, first[2]);
    json_decref(a);
    ck_assert_int_eq(cache_get_read(c, "ns1", "w0", &a), 0);
    ck_assert_ptr_ne(a, first[0]);
    ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(a, "spec"), "tasks")), 60);
    json_decref(a);
    for (int k = 0; k < 3; k++)
        json_decref(first[k]);

    /* a Job of over 8 KiB of kept text is parsed for each read */
    ck_assert_int_eq(cache_put(c, big), 0);
    ck_assert_int_eq(cache_get_read(c, "ns1", "big", &a), 0);
    ck_assert_int_eq(cache_get_read(c, "ns1", "big", &b), 0);
    ck_assert_ptr_ne(a, b);
    ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(a, "spec"), "tasks")), 1000);
    ck_assert(json_equal(a, b));
    json_decref(a);
    json_decref(b);

    cache_destroy(c);
    json_decref(j1);
    json_decref(j1b);
    json_decref(big);
}
END_TEST

/* Whether another thread's slot 3 for its tree of ns1/j1 is its own: empty, and not slot. */
static void *slot_on_other_thread(void *arg)
{
    void **args = arg;
    json_t *got = NULL;
    json_t **slot;
    uintptr_t own = 0;

    if (cache_get_read(args[0], "ns1", "j1", &got) == 0) {
        slot = cache_read_slot(got, 3);
        own = slot != NULL && *slot == NULL && (void *)slot != args[1];
    }
    json_decref(got);
    return (void *)own;
}

/* cache_read_slot: a slot per tree this thread keeps and value index, as long as the
 * tree is kept (a new version has its own, empty), none for other trees. */
START_TEST(test_read_slots)
{
    struct cache *c = cache_create();
    json_t *a = put_then_read(c, job("ns1", "j1", "5"));
    json_t *value = json_string("derived");
    json_t *b = NULL;
    json_t *priv = NULL;
    json_t **slot = cache_read_slot(a, 3);
    json_t *kept[16];
    void *args[2] = {c, NULL};
    pthread_t th;
    void *own = NULL;
    char name[16];

    ck_assert_ptr_nonnull(slot);
    ck_assert_ptr_null(*slot);
    *slot = json_incref(value);
    ck_assert_ptr_eq(cache_read_slot(a, 3), slot);
    ck_assert_ptr_ne(cache_read_slot(a, 4), slot);
    ck_assert_ptr_null(*cache_read_slot(a, 4));
    ck_assert_ptr_null(cache_read_slot(a, CACHE_READ_SLOTS));
    ck_assert_ptr_null(cache_read_slot(NULL, 0));
    /* read again: the same tree, the value still there */
    ck_assert_int_eq(cache_get_read(c, "ns1", "j1", &b), 0);
    ck_assert_ptr_eq(b, a);
    ck_assert_ptr_eq(*cache_read_slot(b, 3), value);
    json_decref(b);
    /* a private tree (cache_get) has none */
    ck_assert_int_eq(cache_get(c, "ns1", "j1", &priv), 0);
    ck_assert_ptr_null(cache_read_slot(priv, 3));
    json_decref(priv);
    /* another thread's tree has its own */
    args[1] = slot;
    ck_assert_int_eq(pthread_create(&th, NULL, slot_on_other_thread, args), 0);
    ck_assert_int_eq(pthread_join(th, &own), 0);
    ck_assert_ptr_nonnull(own);
    /* a new version: a new tree with empty slots; the old one's value stays with it */
    b = put_then_read(c, job("ns1", "j1", "9"));
    ck_assert_ptr_ne(b, a);
    ck_assert_ptr_nonnull(cache_read_slot(b, 3));
    ck_assert_ptr_null(*cache_read_slot(b, 3));
    ck_assert_ptr_eq(*cache_read_slot(a, 3), value);
    json_decref(b);
    json_decref(a);
    /* when the old tree gives way (16 other Jobs read), its value is released */
    ck_assert_int_eq(value->refcount, 2);
    for (int k = 0; k < 16; k++) {
        snprintf(name, sizeof(name), "s%d", k);
        kept[k] = put_then_read(c, job("ns1", name, "1"));
    }
    ck_assert_int_eq(value->refcount, 1);
    for (int k = 0; k < 16; k++)
        json_decref(kept[k]);
    /* a Job parsed per read (over 8 KiB of kept text) has none */
    a = put_then_read(c, big_job("big", 1000));
    ck_assert_ptr_null(cache_read_slot(a, 0));
    json_decref(a);
    json_decref(value);
    cache_destroy(c);
}
END_TEST

/* The cache keeps only what its readers use (cache.h cache_put); the caller's Job is untouched. */
START_TEST(test_put_prunes_unread_parts)
{
    struct cache *c = cache_create();
    const char *full =
        "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
        "\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\",\"uid\":\"u-1\","
        "\"resourceVersion\":\"4\",\"managedFields\":[{\"manager\":\"kubectl\"}],"
        "\"annotations\":{\"kubectl.kubernetes.io/"
        "last-applied-configuration\":\"{}\",\"a\":\"1\"}},"
        "\"spec\":{\"minAvailable\":3,\"plugins\":{\"svc\":[]},\"tasks\":["
        "{\"name\":\"ps\",\"replicas\":1,\"template\":{\"metadata\":{\"labels\":{\"x\":\"y\"}},"
        "\"spec\":{\"hostname\":\"h\",\"subdomain\":\"d\",\"containers\":[{\"name\":\"c\"}],"
        "\"restartPolicy\":\"Never\"}}},"
        "{\"name\":\"w\",\"replicas\":2,\"template\":{\"spec\":{\"hostname\":7,\"volumes\":[]}}},"
        "{\"name\":\"odd\",\"template\":{\"spec\":\"not an object\",\"x\":1}},"
        "{\"name\":\"odder\",\"template\":5},"
        "{\"name\":\"bare\",\"template\":{\"spec\":{\"containers\":[]}}}, 3]},"
        "\"status\":{\"state\":{\"phase\":\"Running\",\"reason\":\"x\"},\"retryCount\":1}}";
    json_t *j = tu_json(full);
    json_t *orig = tu_json(full);
    json_t *got = NULL;
    const char *want = "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                       "\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\",\"uid\":\"u-1\","
                       "\"resourceVersion\":\"4\"},"
                       "\"spec\":{\"plugins\":{\"svc\":[]},\"tasks\":["
                       "{\"name\":\"ps\",\"replicas\":1,\"template\":{\"spec\":{\"hostname\":\"h\","
                       "\"subdomain\":\"d\"}}},"
                       "{\"name\":\"w\",\"replicas\":2,\"template\":{\"spec\":{\"hostname\":7}}},"
                       "{\"name\":\"odd\",\"template\":{\"spec\":\"not an object\"}},"
                       "{\"name\":\"odder\",\"template\":5},"
                       "{\"name\":\"bare\"}, 3]},"
                       "\"status\":{\"state\":{\"phase\":\"Running\"}}}";

    ck_assert_int_eq(cache_put(c, j), 0);
    ck_assert(json_equal(j, orig));
    ck_assert_int_eq(cache_get(c, "ns", "j", &got), 0);
    tu_assert_json_eq(got, want);
    json_decref(got);
    json_decref(j);
    json_decref(orig);
    cache_destroy(c);
}
END_TEST

/* cache_change_fn: append [old, new] (null for NULL) to the array userdata. */
static void record_change(void *userdata, const json_t *old_job, const json_t *job)
{
    ck_assert_int_eq(json_array_append_new(userdata, json_pack("[O?, O?]", old_job, job)), 0);
}

/*
 * LIST semantics through a batch: items into a batch (every add's status appended
 * to *adds_out when not NULL), then cache_replace_all. *changes_out (NULL allowed):
 * new reference, the reported [old, new] pairs in order.
 */
static int replace_all(struct cache *c, const json_t *items, json_t **adds_out,
                       json_t **changes_out)
{
    struct cache_batch *b = cache_batch_create();
    json_t *changes = json_array();
    json_t *adds = json_array();
    const json_t *j;
    size_t i;
    int rc;

    ck_assert_ptr_nonnull(b);
    json_array_foreach(items, i, j) {
        json_array_append_new(adds, json_integer(cache_batch_add(b, j)));
    }
    rc = cache_replace_all(c, b, changes_out != NULL ? record_change : NULL, changes);
    cache_batch_destroy(b);
    if (adds_out != NULL)
        *adds_out = adds;
    else
        json_decref(adds);
    if (changes_out != NULL)
        *changes_out = changes;
    else
        json_decref(changes);
    return rc;
}

START_TEST(test_bad_input)
{
    struct cache *c = cache_create();
    json_t *nons = tu_json("{\"metadata\":{\"name\":\"x\"}}");
    json_t *noname = tu_json("{\"metadata\":{\"namespace\":\"x\"}}");
    json_t *str = json_string("job");
    json_t *got = NULL;
    json_t *changes = NULL;
    json_t *adds = NULL;
    json_t *items;

    ck_assert_int_eq(cache_put(c, nons), WH_EINVAL);
    ck_assert_int_eq(cache_put(c, noname), WH_EINVAL);
    ck_assert_int_eq(cache_put(c, str), WH_EINVAL);
    ck_assert_int_eq(cache_put(c, NULL), WH_EINVAL);
    ck_assert_int_eq(cache_get(c, "", "x", &got), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get(c, NULL, "x", &got), WH_ENOTFOUND);
    ck_assert_int_eq(cache_remove(c, "x", ""), WH_ENOTFOUND);
    ck_assert_uint_eq(cache_size(c), 0);
    /* Items that are not Jobs with a namespace and a name are refused by the batch. */
    items = json_pack("[O, O, O, n, o]", nons, noname, str, job("a", "b", "1"));
    ck_assert_int_eq(replace_all(c, items, &adds, &changes), 0);
    tu_assert_json_eq(adds, "[-3, -3, -3, -3, 0]");
    ck_assert_int_eq(WH_EINVAL, -3);
    ck_assert_uint_eq(json_array_size(changes), 1); /* a/b added */
    ck_assert_uint_eq(cache_size(c), 1);
    ck_assert_int_eq(cache_get(c, "a", "b", &got), 0);
    json_decref(got);
    json_decref(changes);
    json_decref(adds);
    json_decref(items);
    json_decref(nons);
    json_decref(noname);
    json_decref(str);
    cache_destroy(c);
}
END_TEST

START_TEST(test_replace_all)
{
    struct cache *c = cache_create();
    json_t *a = job("ns", "a", "1");
    json_t *b = job("ns", "b", "2");
    json_t *b2 = job("ns", "b", "7");
    json_t *d = job("ns", "d", "3");
    json_t *e = job("ns2", "e", "8");
    json_t *items;
    json_t *changes = NULL;
    json_t *got = NULL;
    json_t *all;
    json_t *want_changes;
    char *want;

    ck_assert_int_eq(cache_put(c, a), 0);
    ck_assert_int_eq(cache_put(c, b), 0);
    ck_assert_int_eq(cache_put(c, d), 0);

    /* LIST now says: b (changed), e (new) and d (unchanged); a is gone. */
    items = json_pack("[O, O, O]", b2, e, d);
    ck_assert_int_eq(replace_all(c, items, NULL, &changes), 0);
    /* Removals first, then additions and changes in the LIST's order; d unchanged: not reported. */
    want_changes = json_pack("[[O, n], [O, O], [n, O]]", a, b, b2, e);
    want = json_dumps(want_changes, JSON_COMPACT);
    ck_assert_ptr_nonnull(want);
    tu_assert_json_eq(changes, want);
    free(want);
    json_decref(want_changes);
    json_decref(changes);
    ck_assert_uint_eq(cache_size(c), 3);
    ck_assert_int_eq(cache_get(c, "ns", "a", &got), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get(c, "ns", "b", &got), 0);
    ck_assert(json_equal(got, b2));
    json_decref(got);
    ck_assert_int_eq(cache_get(c, "ns2", "e", &got), 0);
    ck_assert(json_equal(got, e));
    json_decref(got);
    /* The cache holds no reference to any caller's object (d: ours and items'). */
    ck_assert_int_eq(a->refcount, 1);
    ck_assert_int_eq(b->refcount, 1);
    ck_assert_int_eq(d->refcount, 2);

    /* A snapshot is independent of later writes. */
    all = cache_list(c);
    ck_assert_uint_eq(json_array_size(all), 3);
    ck_assert_int_eq(cache_remove(c, "ns", "b"), 0);
    ck_assert_uint_eq(json_array_size(all), 3);
    ck_assert(json_equal(json_array_get(all, 0), b2));
    ck_assert(json_equal(json_array_get(all, 1), e));
    ck_assert(json_equal(json_array_get(all, 2), d));
    ck_assert_ptr_ne(json_array_get(all, 0), b2);
    ck_assert_int_eq(b2->refcount, 2); /* ours and items': the snapshot holds copies */
    json_decref(all);

    /* No handler is allowed; an empty LIST empties the cache. */
    json_decref(items);
    items = json_array();
    ck_assert_int_eq(replace_all(c, items, NULL, NULL), 0);
    ck_assert_uint_eq(cache_size(c), 0);
    ck_assert_int_eq(e->refcount, 1);

    json_decref(items);
    json_decref(a);
    json_decref(b);
    json_decref(b2);
    json_decref(d);
    json_decref(e);
    cache_destroy(c);
}
END_TEST

/* job() with metadata.uid set to uid (new reference). */
static json_t *job_uid(const char *ns, const char *name, const char *rv, const char *uid)
{
    json_t *j = job(ns, name, rv);

    ck_assert_int_eq(json_object_set_new(json_object_get(j, "metadata"), "uid", json_string(uid)),
                     0);
    return j;
}

START_TEST(test_replace_all_uid_changed)
{
    struct cache *c = cache_create();
    json_t *a = job_uid("ns", "a", "1", "uid-a1");
    json_t *a2 = job_uid("ns", "a", "9", "uid-a2"); /* deleted and created again */
    json_t *b = job_uid("ns", "b", "2", "uid-b");
    json_t *b2 = job_uid("ns", "b", "5", "uid-b"); /* only changed */
    json_t *d = job_uid("ns", "d", "3", "uid-d1");
    json_t *d2 = job_uid("ns", "d", "3", "uid-d2"); /* same resourceVersion, other uid */
    json_t *items;
    json_t *changes = NULL;
    json_t *want_changes;
    json_t *got = NULL;
    char *want;

    ck_assert_int_eq(cache_put(c, a), 0);
    ck_assert_int_eq(cache_put(c, b), 0);
    ck_assert_int_eq(cache_put(c, d), 0);
    items = json_pack("[O, O, O]", d2, a2, b2);
    ck_assert_int_eq(replace_all(c, items, NULL, &changes), 0);
    /* A new uid under a known name: the old Job gone, then the new one added, at its
     * place in the LIST's order; a changed Job of the same uid stays one update. */
    want_changes = json_pack("[[O, n], [n, O], [O, n], [n, O], [O, O]]", d, d2, a, a2, b, b2);
    want = json_dumps(want_changes, JSON_COMPACT);
    ck_assert_ptr_nonnull(want);
    tu_assert_json_eq(changes, want);
    free(want);
    ck_assert_int_eq(cache_get(c, "ns", "a", &got), 0);
    ck_assert(json_equal(got, a2));
    json_decref(got);
    ck_assert_uint_eq(cache_size(c), 3);

    json_decref(want_changes);
    json_decref(changes);
    json_decref(items);
    json_decref(a);
    json_decref(a2);
    json_decref(b);
    json_decref(b2);
    json_decref(d);
    json_decref(d2);
    cache_destroy(c);
}
END_TEST

START_TEST(test_synced)
{
    struct cache *c = cache_create();

    ck_assert(!cache_synced(c));
    cache_set_synced(c, true);
    ck_assert(cache_synced(c));
    cache_set_synced(c, false);
    ck_assert(!cache_synced(c));
    cache_destroy(c);
}
END_TEST

/* ---- many readers, one writer ---- */

#define N_READERS 4
#define N_JOBS    16
#define N_ROUNDS  300

struct race {
    struct cache *c;
    atomic_bool done;
    atomic_ulong hits;
    atomic_ulong bad; /* a reader saw a Job that is not the one it asked for */
};

static void *reader(void *arg)
{
    struct race *r = arg;
    char name[16];
    unsigned i = 0;
    long last_rv[N_JOBS] = {0}; /* the newest version this reader saw of each Job */

    while (!atomic_load(&r->done)) {
        json_t *got = NULL;
        json_t *all;
        char *text;

        unsigned k = i++ % N_JOBS;
        int rc;

        snprintf(name, sizeof(name), "j%u", k);
        /* every other round through the Jobs, the reader's own trees (cache_get_read) */
        rc = (i / N_JOBS) % 2 == 0 ? cache_get(r->c, "ns", name, &got)
                                   : cache_get_read(r->c, "ns", name, &got);
        if (rc == 0) {
            /* Work on the Job outside the lock: read it, dump it. */
            const char *n = name_of(got);
            long rv = strtol(rv_of(got), NULL, 10);

            /* versions only grow: an older one after a newer is a stale tree */
            if (n == NULL || strcmp(n, name) != 0 || rv < 1 || rv < last_rv[k])
                atomic_fetch_add(&r->bad, 1);
            last_rv[k] = rv;
            text = json_dumps(got, JSON_COMPACT);
            if (text == NULL)
                atomic_fetch_add(&r->bad, 1);
            free(text);
            json_decref(got);
            atomic_fetch_add(&r->hits, 1);
        }
        if (i % 64 == 0) {
            all = cache_list(r->c);
            if (all == NULL || json_array_size(all) > N_JOBS)
                atomic_fetch_add(&r->bad, 1);
            json_decref(all);
            (void)cache_size(r->c);
            (void)cache_synced(r->c);
        }
    }
    return NULL;
}

START_TEST(test_concurrent_readers_one_writer)
{
    struct race r;
    pthread_t th[N_READERS];
    char name[16];
    char rv[24];
    long next_rv = 1;
    json_t *got = NULL;

    r.c = cache_create();
    atomic_init(&r.done, false);
    atomic_init(&r.hits, 0);
    atomic_init(&r.bad, 0);
    for (int t = 0; t < N_READERS; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, reader, &r), 0);

    for (int round = 0; round < N_ROUNDS; round++) {
        json_t *items = json_array();

        for (unsigned k = 0; k < N_JOBS; k++) {
            json_t *j;

            snprintf(name, sizeof(name), "j%u", k);
            snprintf(rv, sizeof(rv), "%ld", next_rv++);
            j = job("ns", name, rv);
            switch ((round + (int)k) % 4) {
            case 0: ck_assert_int_eq(cache_put(r.c, j), 0); break;
            case 1: cache_remove(r.c, "ns", name); break;
            default: ck_assert_int_eq(json_array_append(items, j), 0); break;
            }
            json_decref(j);
        }
        if (round % 10 == 0) {
            json_t *changes = NULL;

            ck_assert_int_eq(replace_all(r.c, items, NULL, &changes), 0);
            json_decref(changes);
            cache_set_synced(r.c, true);
        }
        json_decref(items);
    }
    atomic_store(&r.done, true);
    for (int t = 0; t < N_READERS; t++)
        ck_assert_int_eq(pthread_join(th[t], NULL), 0);
    ck_assert_uint_eq(atomic_load(&r.bad), 0);
    ck_assert_uint_gt(atomic_load(&r.hits), 0);

    /* The last writes are what the cache holds: round N_ROUNDS-1 = 299, k=1 → put. */
    snprintf(rv, sizeof(rv), "%ld", (long)(N_ROUNDS - 1) * N_JOBS + 1 + 1);
    ck_assert_int_eq(cache_get(r.c, "ns", "j1", &got), 0);
    ck_assert_str_eq(rv_of(got), rv);
    ck_assert_int_eq(got->refcount, 1);
    json_decref(got);
    cache_destroy(r.c);
}
END_TEST

/* ---- namespaced caches (serve --namespaces) ---- */

static const char *const served_ab[] = {"a", "b"};

static const char *ns_of(const json_t *j)
{
    return json_string_value(json_object_get(json_object_get(j, "metadata"), "namespace"));
}

/* cache_change_fn: append "ns/name old_rv>new_rv" ("-" for a NULL side) to userdata. */
static void record_short(void *userdata, const json_t *old_job, const json_t *job)
{
    const json_t *any = job != NULL ? job : old_job;
    char buf[128];

    snprintf(buf, sizeof(buf), "%s/%s %s>%s", ns_of(any), name_of(any),
             old_job != NULL ? rv_of(old_job) : "-", job != NULL ? rv_of(job) : "-");
    ck_assert_int_eq(json_array_append_new(userdata, json_string(buf)), 0);
}

/* cache_replace_namespace(c, ns) with these Jobs (a new reference each, consumed). */
static int replace_ns(struct cache *c, const char *ns, json_t *changes, json_t *items_new)
{
    struct cache_batch *b = cache_batch_create();
    const json_t *j;
    size_t i;
    int rc;

    ck_assert_ptr_nonnull(b);
    json_array_foreach(items_new, i, j) {
        ck_assert_int_eq(cache_batch_add(b, j), 0);
    }
    rc = cache_replace_namespace(c, ns, b, changes != NULL ? record_short : NULL, changes);
    cache_batch_destroy(b);
    json_decref(items_new);
    return rc;
}

static const char *cached_rv(struct cache *c, const char *ns, const char *name, char *buf,
                             size_t len)
{
    json_t *got = NULL;

    if (cache_get(c, ns, name, &got) != 0)
        return "none";
    snprintf(buf, len, "%s", rv_of(got));
    json_decref(got);
    return buf;
}

START_TEST(test_namespaced_scope)
{
    struct cache *c = cache_create_namespaced(served_ab, 2);
    struct cache *all = cache_create();
    json_t *in_a = job("a", "j", "1");
    json_t *in_c = job("c", "j", "1");

    ck_assert_ptr_nonnull(c);
    ck_assert(cache_serves(c, "a"));
    ck_assert(cache_serves(c, "b"));
    ck_assert(!cache_serves(c, "c"));
    ck_assert(!cache_serves(c, "ab"));
    ck_assert(!cache_serves(c, ""));
    ck_assert(!cache_serves(c, NULL));
    ck_assert(cache_serves(all, "c"));
    ck_assert(cache_serves(all, "anything"));
    /* A Job of a namespace not served is refused and changes nothing. */
    ck_assert_int_eq(cache_put(c, in_c), WH_EINVAL);
    ck_assert_uint_eq(cache_size(c), 0);
    ck_assert_int_eq(cache_put(c, in_a), 0);
    ck_assert_uint_eq(cache_size(c), 1);
    ck_assert_int_eq(cache_put(all, in_c), 0);
    /* n == 0 is a cache of every namespace */
    cache_destroy(all);
    all = cache_create_namespaced(NULL, 0);
    ck_assert(cache_serves(all, "c"));
    json_decref(in_a);
    json_decref(in_c);
    cache_destroy(all);
    cache_destroy(c);
}
END_TEST

/* A namespace's LIST replaces that namespace's Jobs only, and reports its changes only. */
START_TEST(test_replace_namespace)
{
    struct cache *c = cache_create_namespaced(served_ab, 2);
    json_t *changes = json_array();
    json_t *a1 = job("a", "j1", "1");
    json_t *b1 = job("b", "j1", "1");
    char buf[32];

    ck_assert_int_eq(cache_put(c, a1), 0);
    ck_assert_int_eq(cache_put(c, b1), 0);
    /* a: j1 changed, j2 new, j3 gone (put first); b/j1 and c/j9 in a's LIST are dropped */
    json_decref(a1);
    a1 = job("a", "j3", "4");
    ck_assert_int_eq(cache_put(c, a1), 0);
    ck_assert_int_eq(replace_ns(c, "a", changes,
                                json_pack("[o, o, o, o]", job("a", "j1", "2"), job("b", "j1", "9"),
                                          job("a", "j2", "3"), job("c", "j9", "1"))),
                     0);
    tu_assert_json_eq(changes, "[\"a/j3 4>-\", \"a/j1 1>2\", \"a/j2 ->3\"]");
    ck_assert_uint_eq(cache_size(c), 3);
    ck_assert_str_eq(cached_rv(c, "a", "j1", buf, sizeof(buf)), "2");
    ck_assert_str_eq(cached_rv(c, "a", "j2", buf, sizeof(buf)), "3");
    ck_assert_str_eq(cached_rv(c, "a", "j3", buf, sizeof(buf)), "none");
    ck_assert_str_eq(cached_rv(c, "b", "j1", buf, sizeof(buf)), "1");
    ck_assert_str_eq(cached_rv(c, "c", "j9", buf, sizeof(buf)), "none");
    /* The same LIST again: nothing to report. */
    json_array_clear(changes);
    ck_assert_int_eq(
        replace_ns(c, "a", changes, json_pack("[o, o]", job("a", "j1", "2"), job("a", "j2", "3"))),
        0);
    tu_assert_json_eq(changes, "[]");
    /* A namespace the cache does not serve (or none): refused, nothing changed. */
    ck_assert_int_eq(replace_ns(c, "c", changes, json_pack("[o]", job("c", "j9", "1"))), WH_EINVAL);
    ck_assert_int_eq(replace_ns(c, "", changes, json_array()), WH_EINVAL);
    tu_assert_json_eq(changes, "[]");
    ck_assert_uint_eq(cache_size(c), 3);
    /* b empties: only b's Job goes */
    ck_assert_int_eq(replace_ns(c, "b", changes, json_array()), 0);
    tu_assert_json_eq(changes, "[\"b/j1 1>-\"]");
    ck_assert_uint_eq(cache_size(c), 2);
    ck_assert_str_eq(cached_rv(c, "a", "j1", buf, sizeof(buf)), "2");
    json_decref(a1);
    json_decref(b1);
    cache_destroy(c);
    /* Namespace "a" is not a prefix of "ab": a's LIST leaves ab's Jobs alone. */
    {
        static const char *const served_a_ab[] = {"a", "ab"};

        c = cache_create_namespaced(served_a_ab, 2);
        a1 = job("ab", "j", "5");
        ck_assert_int_eq(cache_put(c, a1), 0);
        json_array_clear(changes);
        ck_assert_int_eq(replace_ns(c, "a", changes, json_array()), 0);
        tu_assert_json_eq(changes, "[]");
        ck_assert_str_eq(cached_rv(c, "ab", "j", buf, sizeof(buf)), "5");
        json_decref(a1);
        cache_destroy(c);
    }
    json_decref(changes);
}
END_TEST

/* Synced once every namespace's first LIST is marked; repeats and strangers change nothing. */
START_TEST(test_namespace_synced)
{
    struct cache *c = cache_create_namespaced(served_ab, 2);

    ck_assert(!cache_synced(c));
    cache_set_namespace_synced(c, "a");
    ck_assert(!cache_synced(c));
    cache_set_namespace_synced(c, "a");
    cache_set_namespace_synced(c, "c");
    cache_set_namespace_synced(c, NULL);
    ck_assert(!cache_synced(c));
    cache_set_namespace_synced(c, "b");
    ck_assert(cache_synced(c));
    cache_destroy(c);
}
END_TEST

/* Two writers (one per namespace, as two informers) and a reader at once: each
 * namespace ends with exactly its writer's last content. Run under SANITIZER=thread. */
#define NS_ROUNDS 200

struct ns_writer {
    struct cache *c;
    const char *ns;
};

static void *ns_writer_main(void *arg)
{
    struct ns_writer *w = arg;
    char rv[16];

    for (int k = 0; k < NS_ROUNDS; k++) {
        struct cache_batch *b = cache_batch_create();
        json_t *j1, *j2;

        snprintf(rv, sizeof(rv), "%d", k);
        j1 = job(w->ns, "j1", rv);
        j2 = job(w->ns, k % 2 == 0 ? "even" : "odd", rv);
        if (b == NULL || cache_batch_add(b, j1) != 0 || cache_batch_add(b, j2) != 0
            || cache_replace_namespace(w->c, w->ns, b, NULL, NULL) != 0 || cache_put(w->c, j1) != 0)
            abort(); /* no ck_assert off the test's thread */
        cache_batch_destroy(b);
        json_decref(j1);
        json_decref(j2);
    }
    return NULL;
}

START_TEST(test_two_namespace_writers)
{
    struct cache *c = cache_create_namespaced(served_ab, 2);
    struct ns_writer wa = {c, "a"}, wb = {c, "b"};
    pthread_t ta, tb;
    char buf[32];
    json_t *all;

    ck_assert_int_eq(pthread_create(&ta, NULL, ns_writer_main, &wa), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, ns_writer_main, &wb), 0);
    for (int k = 0; k < NS_ROUNDS; k++) {
        all = cache_list(c);
        ck_assert_ptr_nonnull(all);
        ck_assert_uint_le(json_array_size(all), 4);
        json_decref(all);
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_uint_eq(cache_size(c), 4);
    ck_assert_str_eq(cached_rv(c, "a", "j1", buf, sizeof(buf)), "199");
    ck_assert_str_eq(cached_rv(c, "a", "odd", buf, sizeof(buf)), "199");
    ck_assert_str_eq(cached_rv(c, "a", "even", buf, sizeof(buf)), "none");
    ck_assert_str_eq(cached_rv(c, "b", "j1", buf, sizeof(buf)), "199");
    ck_assert_str_eq(cached_rv(c, "b", "odd", buf, sizeof(buf)), "199");
    cache_destroy(c);
}
END_TEST

/* The diagnostics of the full Job, kept with its entry: handed out for that version only. */
START_TEST(test_diagnostics_per_version)
{
    struct cache *c = cache_create();
    json_t *j = job("ns", "a", "5");
    struct diagnostics *d = malloc(sizeof(*d));

    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "a", "u-1", "5", d), WH_ENOTFOUND);
    /* A ray container the cache does not keep (templates' containers): only the full Job
     * tells that the head container is not there. */
    json_object_set_new(json_object_get(j, "spec"), "plugins", tu_json("{\"ray\":[]}"));
    json_array_append_new(
        json_object_get(json_object_get(j, "spec"), "tasks"),
        tu_json("{\"name\":\"head\",\"replicas\":1,\"template\":{\"spec\":{\"containers\":"
                "[{\"name\":\"main\"}]}}}"));
    ck_assert_int_eq(cache_put(c, j), 0);
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "a", "u-1", "5", d), 0);
    ck_assert_uint_eq(d->n, 2);
    ck_assert_int_eq(d->items[0].reason, DIAGNOSE_TASK_NOT_FOUND); /* no task "worker" */
    ck_assert_int_eq(d->items[1].reason, DIAGNOSE_CONTAINER_NOT_FOUND);
    ck_assert_str_eq(d->items[1].plugin, "ray");
    ck_assert_ptr_nonnull(strstr(d->items[1].message, "no container named \"head\""));
    /* Only whether there are any (out NULL): this version has. */
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "a", "u-1", "5", NULL), 0);
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "a", "u-1", "4", NULL), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "a", "u-1", "4", d), WH_ENOTFOUND);
    ck_assert_uint_eq(d->n, 0);
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "a", "u-2", "5", d), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "b", "u-1", "5", d), WH_ENOTFOUND);
    json_decref(j);

    /* A clean Job: found, no diagnostics. */
    j = job("ns", "a", "6");
    ck_assert_int_eq(cache_put(c, j), 0);
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "a", "u-1", "6", d), 0);
    ck_assert_uint_eq(d->n, 0);
    ck_assert_uint_eq(d->dropped, 0);
    /* Asked with out NULL, the cache says "none" without unpacking anything. */
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "a", "u-1", "6", NULL), WH_DECLINED);
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "a", "u-1", "5", NULL), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "b", "u-1", "6", NULL), WH_ENOTFOUND);
    json_decref(j);
    free(d);
    cache_destroy(c);
}
END_TEST

/* The lookup cache_get and cache_get_diagnostics share: no key, no entry; a removed Job. */
START_TEST(test_diagnostics_lookup_misses)
{
    struct cache *c = cache_create();
    json_t *j = job("ns", "a", "5");
    struct diagnostics *d = malloc(sizeof(*d));
    char long_name[600];
    json_t *got = NULL;

    ck_assert_ptr_nonnull(d);
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    ck_assert_int_eq(cache_put(c, j), 0);
    ck_assert_int_eq(cache_get_diagnostics(c, "", "a", "u-1", "5", d), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get_diagnostics(c, NULL, "a", "u-1", "5", d), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "", "u-1", "5", d), WH_ENOTFOUND);
    /* "ns/" + 599 bytes is past the key buffer: no key, so no entry (not a cut key's). */
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", long_name, "u-1", "5", d), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get(c, "ns", long_name, &got), WH_ENOTFOUND);
    ck_assert_ptr_null(got);
    ck_assert_uint_eq(d->n, 0);
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "a", "u-1", "5", d), 0);
    ck_assert_int_eq(cache_remove(c, "ns", "a"), 0);
    ck_assert_int_eq(cache_get_diagnostics(c, "ns", "a", "u-1", "5", d), WH_ENOTFOUND);
    ck_assert_int_eq(cache_get(c, "ns", "a", &got), WH_ENOTFOUND);
    json_decref(j);
    free(d);
    cache_destroy(c);
}
END_TEST

static Suite *cache_suite(void)
{
    Suite *s = suite_create("cache");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_put_get_replace_remove);
    tcase_add_test(tc, test_reads_are_private);
    tcase_add_test(tc, test_read_keeps_a_tree_per_version);
    tcase_add_test(tc, test_read_slots);
    tcase_add_test(tc, test_put_prunes_unread_parts);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_replace_all);
    tcase_add_test(tc, test_replace_all_uid_changed);
    tcase_add_test(tc, test_synced);
    tcase_add_test(tc, test_concurrent_readers_one_writer);
    tcase_add_test(tc, test_namespaced_scope);
    tcase_add_test(tc, test_replace_namespace);
    tcase_add_test(tc, test_namespace_synced);
    tcase_add_test(tc, test_two_namespace_writers);
    tcase_add_test(tc, test_diagnostics_per_version);
    tcase_add_test(tc, test_diagnostics_lookup_misses);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    json_object_seed(0);
    return tu_run(cache_suite());
}
