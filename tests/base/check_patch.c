/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_patch.c - RFC 6902 diff and apply, RFC 6901 escaping (docs/plugins.md §7.3).
 *
 * Every diff case asserts the exact op array (including key order op, path,
 * value) and that applying it to `before` gives `after`. A seeded random test
 * checks the same round trip over many small documents.
 */
#include <stdint.h>
#include <stdio.h>

#include "base/buf.h"
#include "base/patch.h"
#include "tests/testutil.h"

/* Compact text of v, with keys in their stored order. Caller frees. */
static char *dump(const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

    ck_assert_ptr_nonnull(s);
    return s;
}

/* Assert patch_apply(before, ops) is exactly after (json_equal: 420 != 420.0). */
static void assert_round_trip(const json_t *before, const json_t *ops, const json_t *after,
                              const char *name)
{
    struct wh_error err = {0, ""};
    json_t *got = patch_apply(before, ops, &err);
    char *g;
    char *w;

    ck_assert_msg(got != NULL, "%s: patch does not apply: %s", name, err.msg);
    g = dump(got);
    w = dump(after);
    ck_assert_msg(json_equal(got, after), "%s: round trip differs\n got: %s\nwant: %s", name, g, w);
    free(g);
    free(w);
    json_decref(got);
}

/*
 * The differential check of patch_diff_write: its text is byte for byte the dump of
 * patch_diff's array (the oracle), and it counts the same ops. @return the text (free it).
 */
static char *assert_text_is_dump(const json_t *before, const json_t *after, const json_t *ops,
                                 const char *name)
{
    struct buf text;
    size_t n = 99;
    char *want = dump(ops);
    char *got;

    buf_init(&text, BUF_NO_MAX);
    ck_assert_int_eq(patch_diff_write(before, after, NULL, &text, &n), 0);
    got = buf_take(&text, NULL);
    ck_assert_ptr_nonnull(got);
    ck_assert_msg(strcmp(got, want) == 0, "%s: text differs from the dump\n got: %s\nwant: %s",
                  name, got, want);
    ck_assert_uint_eq(n, json_array_size(ops));
    free(want);
    return got;
}

/* ---- patch_diff: exact ops ----------------------------------------------- */

struct dcase {
    const char *name;
    const char *before;
    const char *after;
    const char *ops; /* exact expected op array; key order matters */
};

static const struct dcase dcases[] = {
    {"equal-scalar", "1", "1", "[]"},
    {"equal-pod",
     "{\"metadata\":{\"name\":\"j-w-0\",\"annotations\":{\"a/b\":\"1\"}},"
     "\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}]}}",
     "{\"spec\":{\"containers\":[{\"env\":[{\"value\":\"1\",\"name\":\"A\"}],\"name\":\"c\"}]},"
     "\"metadata\":{\"annotations\":{\"a/b\":\"1\"},\"name\":\"j-w-0\"}}",
     "[]"},
    {"equal-empty", "{}", "{}", "[]"},

    /* a missing array is created whole, once */
    {"missing-env", "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
     "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
     "{\"name\":\"B\",\"value\":\"2\"}]}]}}",
     "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env\",\"value\":[{\"name\":\"A\","
     "\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}]}]"},
    {"missing-volumes", "{\"spec\":{\"containers\":[]}}",
     "{\"spec\":{\"containers\":[],\"volumes\":[{\"name\":\"j-svc\",\"configMap\":"
     "{\"name\":\"j-svc\"}}]}}",
     "[{\"op\":\"add\",\"path\":\"/spec/volumes\",\"value\":[{\"name\":\"j-svc\",\"configMap\":"
     "{\"name\":\"j-svc\"}}]}]"},
    {"missing-volume-mounts", "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}",
     "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\",\"volumeMounts\":"
     "[{\"name\":\"j-svc\",\"mountPath\":\"/etc/volcano\"}]}]}}",
     "[{\"op\":\"add\",\"path\":\"/spec/containers/1/volumeMounts\",\"value\":[{\"name\":"
     "\"j-svc\",\"mountPath\":\"/etc/volcano\"}]}]"},
    {"missing-ports", "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
     "{\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[{\"name\":\"mpijob-port\","
     "\"containerPort\":22}]}]}}",
     "[{\"op\":\"add\",\"path\":\"/spec/containers/0/ports\",\"value\":[{\"name\":"
     "\"mpijob-port\",\"containerPort\":22}]}]"},
    {"missing-init-containers", "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
     "{\"spec\":{\"containers\":[{\"name\":\"c\"}],\"initContainers\":[{\"name\":"
     "\"wait-for-master\",\"image\":\"busybox:1.36.1\"}]}}",
     "[{\"op\":\"add\",\"path\":\"/spec/initContainers\",\"value\":[{\"name\":"
     "\"wait-for-master\",\"image\":\"busybox:1.36.1\"}]}]"},
    {"missing-all-in-after-order", "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
     "{\"spec\":{\"initContainers\":[{\"name\":\"i\"}],\"containers\":[{\"name\":\"c\","
     "\"image\":\"i\",\"volumeMounts\":[{\"name\":\"v\",\"mountPath\":\"/v\"}],\"env\":"
     "[{\"name\":\"E\",\"value\":\"\"}]}],\"volumes\":[{\"name\":\"v\"}]}}",
     "[{\"op\":\"add\",\"path\":\"/spec/initContainers\",\"value\":[{\"name\":\"i\"}]},"
     "{\"op\":\"add\",\"path\":\"/spec/containers/0/volumeMounts\",\"value\":[{\"name\":\"v\","
     "\"mountPath\":\"/v\"}]},"
     "{\"op\":\"add\",\"path\":\"/spec/containers/0/env\",\"value\":[{\"name\":\"E\","
     "\"value\":\"\"}]},"
     "{\"op\":\"add\",\"path\":\"/spec/volumes\",\"value\":[{\"name\":\"v\"}]}]"},

    /* an existing array grows with "/-" per item and keeps its entries */
    {"env-grows",
     "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}]}}",
     "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
     "{\"name\":\"B\",\"value\":\"2\"},{\"name\":\"C\",\"value\":\"3\"}]}]}}",
     "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":{\"name\":\"B\","
     "\"value\":\"2\"}},"
     "{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":{\"name\":\"C\","
     "\"value\":\"3\"}}]"},
    {"volumes-and-ports-grow",
     "{\"spec\":{\"volumes\":[{\"name\":\"token\"}],\"containers\":[{\"name\":\"c\",\"ports\":"
     "[{\"containerPort\":80}]}]}}",
     "{\"spec\":{\"volumes\":[{\"name\":\"token\"},{\"name\":\"j-ssh\"}],\"containers\":"
     "[{\"name\":\"c\",\"ports\":[{\"containerPort\":80},{\"containerPort\":22}]}]}}",
     "[{\"op\":\"add\",\"path\":\"/spec/volumes/-\",\"value\":{\"name\":\"j-ssh\"}},"
     "{\"op\":\"add\",\"path\":\"/spec/containers/0/ports/-\",\"value\":{\"containerPort\":22}}]"},
    {"empty-array-grows", "{\"a\":[]}", "{\"a\":[1,[2]]}",
     "[{\"op\":\"add\",\"path\":\"/a/-\",\"value\":1},"
     "{\"op\":\"add\",\"path\":\"/a/-\",\"value\":[2]}]"},
    {"prefix-changes-then-grows", "[{\"a\":1}]", "[{\"a\":2},{\"b\":1}]",
     "[{\"op\":\"replace\",\"path\":\"/0/a\",\"value\":2},"
     "{\"op\":\"add\",\"path\":\"/-\",\"value\":{\"b\":1}}]"},

    /* an element changed in place */
    {"env-value-replaced",
     "{\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}]}",
     "{\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"3\"}]}",
     "[{\"op\":\"replace\",\"path\":\"/env/1/value\",\"value\":\"3\"}]"},
    {"env-value-from-to-value",
     "{\"env\":[{\"name\":\"B\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"x\"}}}]}",
     "{\"env\":[{\"name\":\"B\",\"value\":\"3\"}]}",
     "[{\"op\":\"add\",\"path\":\"/env/0/value\",\"value\":\"3\"},"
     "{\"op\":\"remove\",\"path\":\"/env/0/valueFrom\"}]"},
    {"whole-element-replaced", "{\"v\":[{\"name\":\"a\"},1]}", "{\"v\":[{\"name\":\"a\"},\"x\"]}",
     "[{\"op\":\"replace\",\"path\":\"/v/1\",\"value\":\"x\"}]"},

    /* RFC 6901 escaping of keys */
    {"escape-slash", "{\"metadata\":{\"annotations\":{}}}",
     "{\"metadata\":{\"annotations\":{\"hccl/rankIndex\":\"0\"}}}",
     "[{\"op\":\"add\",\"path\":\"/metadata/annotations/hccl~1rankIndex\",\"value\":\"0\"}]"},
    {"escape-tilde", "{\"a~b\":1}", "{\"a~b\":2}",
     "[{\"op\":\"replace\",\"path\":\"/a~0b\",\"value\":2}]"},
    {"escape-tilde-one-literal", "{}", "{\"hccl~1rankIndex\":\"0\"}",
     "[{\"op\":\"add\",\"path\":\"/hccl~01rankIndex\",\"value\":\"0\"}]"},
    {"escape-both-nested", "{\"~/\":{\"/~\":1}}", "{\"~/\":{\"/~\":2}}",
     "[{\"op\":\"replace\",\"path\":\"/~0~1/~1~0\",\"value\":2}]"},
    {"escape-in-remove", "{\"volcano.sh/task-spec\":\"w\",\"k\":1}", "{\"k\":1}",
     "[{\"op\":\"remove\",\"path\":\"/volcano.sh~1task-spec\"}]"},

    /* new objects are added whole */
    {"nested-new-object", "{\"spec\":{}}",
     "{\"spec\":{},\"metadata\":{\"annotations\":{\"a\":\"b\"},\"labels\":{}}}",
     "[{\"op\":\"add\",\"path\":\"/metadata\",\"value\":{\"annotations\":{\"a\":\"b\"},"
     "\"labels\":{}}}]"},
    {"annotations-created", "{\"metadata\":{\"name\":\"p\"}}",
     "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"x/y\":\"1\"}}}",
     "[{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{\"x/y\":\"1\"}}]"},

    /* hostname / subdomain: add when absent, replace when present */
    {"hostname-added", "{\"spec\":{\"containers\":[]}}",
     "{\"spec\":{\"containers\":[],\"hostname\":\"j-w-0\",\"subdomain\":\"j\"}}",
     "[{\"op\":\"add\",\"path\":\"/spec/hostname\",\"value\":\"j-w-0\"},"
     "{\"op\":\"add\",\"path\":\"/spec/subdomain\",\"value\":\"j\"}]"},
    {"hostname-replaced", "{\"spec\":{\"hostname\":\"\",\"subdomain\":\"old\"}}",
     "{\"spec\":{\"hostname\":\"j-w-0\",\"subdomain\":\"j\"}}",
     "[{\"op\":\"replace\",\"path\":\"/spec/hostname\",\"value\":\"j-w-0\"},"
     "{\"op\":\"replace\",\"path\":\"/spec/subdomain\",\"value\":\"j\"}]"},

    /* type changes replace */
    {"type-int-string", "{\"a\":1}", "{\"a\":\"1\"}",
     "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":\"1\"}]"},
    {"type-int-real", "{\"mode\":420}", "{\"mode\":420.0}",
     "[{\"op\":\"replace\",\"path\":\"/mode\",\"value\":420.0}]"},
    {"type-array-object", "{\"a\":[1]}", "{\"a\":{\"0\":1}}",
     "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":{\"0\":1}}]"},
    {"type-null-object", "{\"a\":null}", "{\"a\":{}}",
     "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":{}}]"},
    {"type-true-false", "{\"a\":true}", "{\"a\":false}",
     "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":false}]"},
    {"command-replaced", "{\"command\":[\"sh\",\"-c\",\"x\"]}",
     "{\"command\":[\"ray\",\"start\",\"--head\"]}",
     "[{\"op\":\"replace\",\"path\":\"/command/0\",\"value\":\"ray\"},"
     "{\"op\":\"replace\",\"path\":\"/command/1\",\"value\":\"start\"},"
     "{\"op\":\"replace\",\"path\":\"/command/2\",\"value\":\"--head\"}]"},

    /* a shorter array is replaced whole */
    {"shrink", "{\"a\":[1,2,3]}", "{\"a\":[1,2]}",
     "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":[1,2]}]"},
    {"shrink-to-empty", "{\"a\":[1]}", "{\"a\":[]}",
     "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":[]}]"},
    {"shrink-root", "[1,2]", "[3]", "[{\"op\":\"replace\",\"path\":\"\",\"value\":[3]}]"},

    /* the root */
    {"root-scalar", "1", "2", "[{\"op\":\"replace\",\"path\":\"\",\"value\":2}]"},
    {"root-string", "\"a\"", "\"b\"", "[{\"op\":\"replace\",\"path\":\"\",\"value\":\"b\"}]"},
    {"root-type", "{}", "[]", "[{\"op\":\"replace\",\"path\":\"\",\"value\":[]}]"},
    {"root-array-grows", "[1]", "[1,2]", "[{\"op\":\"add\",\"path\":\"/-\",\"value\":2}]"},

    /* empty-string keys */
    {"empty-key-replace", "{\"\":1}", "{\"\":2}",
     "[{\"op\":\"replace\",\"path\":\"/\",\"value\":2}]"},
    {"empty-key-nested", "{\"\":{\"\":1}}", "{\"\":{\"\":2}}",
     "[{\"op\":\"replace\",\"path\":\"//\",\"value\":2}]"},
    {"empty-key-add", "{}", "{\"\":{\"\":[]}}",
     "[{\"op\":\"add\",\"path\":\"/\",\"value\":{\"\":[]}}]"},
    {"empty-key-remove", "{\"\":1,\"a\":1}", "{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"/\"}]"},

    /* after's order first, then removes in before's order */
    {"order", "{\"x\":1,\"y\":1,\"w\":1}", "{\"z\":3,\"y\":2}",
     "[{\"op\":\"add\",\"path\":\"/z\",\"value\":3},"
     "{\"op\":\"replace\",\"path\":\"/y\",\"value\":2},"
     "{\"op\":\"remove\",\"path\":\"/x\"},{\"op\":\"remove\",\"path\":\"/w\"}]"},
    {"deep-index-paths", "{\"a\":[[0,[1]]]}", "{\"a\":[[0,[1,2]]]}",
     "[{\"op\":\"add\",\"path\":\"/a/0/1/-\",\"value\":2}]"},
};

START_TEST(test_diff_table)
{
    const struct dcase *c = &dcases[_i];
    json_t *before = tu_json(c->before);
    json_t *after = tu_json(c->after);
    json_t *want = tu_json(c->ops);
    json_t *ops = patch_diff(before, after);
    char *g;
    char *w;

    ck_assert_msg(ops != NULL, "%s: patch_diff returned NULL", c->name);
    g = dump(ops);
    w = dump(want);
    /* Compare text so that key order (op, path, value) counts too. */
    ck_assert_msg(strcmp(g, w) == 0, "%s: ops differ\n got: %s\nwant: %s", c->name, g, w);
    assert_round_trip(before, ops, after, c->name);
    free(assert_text_is_dump(before, after, ops, c->name));
    free(g);
    free(w);
    json_decref(ops);
    json_decref(want);
    json_decref(before);
    json_decref(after);
}
END_TEST

/* Op values are after's own nodes (no copy), and the patch holds its own references. */
START_TEST(test_diff_values_are_references)
{
    json_t *before = tu_json("{}");
    json_t *after = tu_json("{\"a\":{\"b\":1}}");
    json_t *a = json_object_get(after, "a");
    json_t *ops = patch_diff(before, after);

    ck_assert_ptr_nonnull(ops);
    ck_assert_ptr_eq(json_object_get(json_array_get(ops, 0), "value"), a);
    ck_assert_int_eq(a->refcount, 2);
    json_decref(after); /* the patch outlives the document it was made from */
    tu_assert_json_eq(ops, "[{\"op\":\"add\",\"path\":\"/a\",\"value\":{\"b\":1}}]");
    json_decref(ops);
    json_decref(before);
}
END_TEST

START_TEST(test_diff_null_inputs)
{
    json_t *v = tu_json("{}");

    ck_assert_ptr_null(patch_diff(NULL, v));
    ck_assert_ptr_null(patch_diff(v, NULL));
    json_decref(v);
}
END_TEST

/* NULL documents are WH_EINVAL for the text writer, kept in the buffer and counting no op. */
START_TEST(test_diff_write_null_inputs)
{
    json_t *v = tu_json("{}");
    struct buf text;
    size_t n = 7;

    buf_init(&text, BUF_NO_MAX);
    ck_assert_int_eq(patch_diff_write(NULL, v, NULL, &text, &n), WH_EINVAL);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(text.rc, WH_EINVAL);
    buf_dispose(&text);
    json_decref(v);
}
END_TEST

/* The buffer's max bounds the patch: WH_ETOOBIG, the walk stops; one byte more fits. */
START_TEST(test_diff_write_cap)
{
    json_t *before = tu_json("{\"a\":1}");
    json_t *after = tu_json("{\"a\":2,\"b\":\"x\\\"y\"}");
    const char *want = "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":2},"
                       "{\"op\":\"add\",\"path\":\"/b\",\"value\":\"x\\\"y\"}]";
    struct buf text;
    size_t n;

    buf_init(&text, strlen(want) - 1);
    ck_assert_int_eq(patch_diff_write(before, after, NULL, &text, &n), WH_ETOOBIG);
    ck_assert_int_eq(text.rc, WH_ETOOBIG);
    buf_dispose(&text);
    buf_init(&text, strlen(want));
    ck_assert_int_eq(patch_diff_write(before, after, NULL, &text, &n), 0);
    ck_assert_str_eq(buf_cstr(&text), want);
    ck_assert_uint_eq(n, 2);
    buf_dispose(&text);
    json_decref(before);
    json_decref(after);
}
END_TEST

/* A long key and deep nesting grow the path buffer past its first size. */
START_TEST(test_diff_long_path)
{
    char key[300];
    json_t *before = json_object();
    json_t *after;
    json_t *ops;
    json_t *inner;
    const char *path;
    int i;

    memset(key, '/', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    after = json_pack("{s:{s:[i]}}", key, key, 1);
    ck_assert_ptr_nonnull(after);
    inner = json_deep_copy(after);
    json_object_set_new(json_object_get(inner, key), key, json_pack("[i,i]", 1, 2));
    ops = patch_diff(after, inner);
    ck_assert_ptr_nonnull(ops);
    ck_assert_uint_eq(json_array_size(ops), 1);
    path = json_string_value(json_object_get(json_array_get(ops, 0), "path"));
    ck_assert_uint_eq(strlen(path), 1 + 2 * 299 + 1 + 2 * 299 + 2);
    for (i = 0; i < 299; i++)
        ck_assert_int_eq(memcmp(path + 1 + 2 * i, "~1", 2), 0);
    ck_assert_str_eq(path + strlen(path) - 2, "/-");
    assert_round_trip(after, ops, inner, "long-path");
    json_decref(ops);
    ops = patch_diff(before, after);
    assert_round_trip(before, ops, after, "long-path-add");
    json_decref(ops);
    json_decref(inner);
    json_decref(before);
    json_decref(after);
}
END_TEST

/* ---- patch_escape_segment ------------------------------------------------ */

START_TEST(test_escape_segment)
{
    char buf[32];

    buf[0] = '\0';
    ck_assert_uint_eq(patch_escape_segment(buf, sizeof(buf), ""), 0);
    ck_assert_str_eq(buf, "");
    ck_assert_uint_eq(patch_escape_segment(buf, sizeof(buf), "abc"), 3);
    ck_assert_str_eq(buf, "abc");
    /* appends to what is already there */
    ck_assert_uint_eq(patch_escape_segment(buf, sizeof(buf), "/a/b~c"), 9);
    ck_assert_str_eq(buf, "abc~1a~1b~0c");
    buf[0] = '\0';
    ck_assert_uint_eq(patch_escape_segment(buf, sizeof(buf), "~1"), 3);
    ck_assert_str_eq(buf, "~01");
    buf[0] = '\0';
    ck_assert_uint_eq(patch_escape_segment(buf, sizeof(buf), "volcano.sh/task-spec"), 21);
    ck_assert_str_eq(buf, "volcano.sh~1task-spec");
}
END_TEST

START_TEST(test_escape_segment_truncates)
{
    char buf[6] = "ab";
    char one[1] = {'\0'};
    char full[3] = {'x', 'y', 'z'}; /* no NUL: nothing may be written */

    /* needs 5 bytes but only 4 remain (3 + NUL): cut like snprintf */
    ck_assert_uint_eq(patch_escape_segment(buf, sizeof(buf), "~/x"), 5);
    ck_assert_str_eq(buf, "ab~0~");
    ck_assert_uint_eq(patch_escape_segment(one, sizeof(one), "a"), 1);
    ck_assert_int_eq(one[0], '\0');
    ck_assert_uint_eq(patch_escape_segment(NULL, 0, "a/b"), 4);
    ck_assert_uint_eq(patch_escape_segment(full, sizeof(full), "q"), 1);
    ck_assert_int_eq(memcmp(full, "xyz", 3), 0);
    /* exactly enough room */
    buf[0] = '\0';
    ck_assert_uint_eq(patch_escape_segment(buf, sizeof(buf), "a~b/"), 6);
    ck_assert_str_eq(buf, "a~0b~");
    buf[0] = '\0';
    ck_assert_uint_eq(patch_escape_segment(buf, sizeof(buf), "a~b"), 4);
    ck_assert_str_eq(buf, "a~0b");
}
END_TEST

/* ---- patch_apply --------------------------------------------------------- */

struct acase {
    const char *name;
    const char *doc;
    const char *patch;
    const char *want; /* result, or NULL when the patch must fail */
    const char *err;  /* exact error message when it fails */
};

static const struct acase acases[] = {
    {"add-member", "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/b\",\"value\":2}]",
     "{\"a\":1,\"b\":2}", NULL},
    {"add-overwrites", "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a\",\"value\":[2]}]",
     "{\"a\":[2]}", NULL},
    {"add-insert", "[1,3]", "[{\"op\":\"add\",\"path\":\"/1\",\"value\":2}]", "[1,2,3]", NULL},
    {"add-at-end-index", "[1]", "[{\"op\":\"add\",\"path\":\"/1\",\"value\":2}]", "[1,2]", NULL},
    {"add-dash", "{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/-\",\"value\":2}]", "{\"a\":[1,2]}",
     NULL},
    {"add-root", "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"\",\"value\":[true]}]", "[true]", NULL},
    {"add-escaped", "{}",
     "[{\"op\":\"add\",\"path\":\"/a~1b~0c\",\"value\":1},"
     "{\"op\":\"add\",\"path\":\"/\",\"value\":2},"
     "{\"op\":\"add\",\"path\":\"/~01\",\"value\":3}]",
     "{\"a/b~c\":1,\"\":2,\"~1\":3}", NULL},
    {"remove-member", "{\"a\":1,\"b\":2}", "[{\"op\":\"remove\",\"path\":\"/a\"}]", "{\"b\":2}",
     NULL},
    {"remove-element", "[1,2,3]", "[{\"op\":\"remove\",\"path\":\"/1\"}]", "[1,3]", NULL},
    {"replace-member", "{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":\"x\"}]",
     "{\"a\":\"x\"}", NULL},
    {"replace-element", "[1,2]", "[{\"op\":\"replace\",\"path\":\"/0\",\"value\":9}]", "[9,2]",
     NULL},
    {"replace-root", "1", "[{\"op\":\"replace\",\"path\":\"\",\"value\":{}}]", "{}", NULL},
    {"move", "{\"a\":{\"b\":1},\"c\":[]}",
     "[{\"op\":\"move\",\"from\":\"/a/b\",\"path\":\"/c/-\"}]", "{\"a\":{},\"c\":[1]}", NULL},
    {"move-within-array", "[1,2,3]", "[{\"op\":\"move\",\"from\":\"/0\",\"path\":\"/2\"}]",
     "[2,3,1]", NULL},
    {"move-to-self", "{\"a\":1}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a\"}]",
     "{\"a\":1}", NULL},
    {"copy", "{\"a\":{\"b\":[1]}}", "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/c\"}]",
     "{\"a\":{\"b\":[1]},\"c\":{\"b\":[1]}}", NULL},
    {"test-ok", "{\"a\":[1,{\"b\":null}]}",
     "[{\"op\":\"test\",\"path\":\"/a\",\"value\":[1,{\"b\":null}]}]", "{\"a\":[1,{\"b\":null}]}",
     NULL},
    {"test-number-by-value", "{\"a\":1,\"b\":[2.0]}",
     "[{\"op\":\"test\",\"path\":\"/a\",\"value\":1.0},"
     "{\"op\":\"test\",\"path\":\"/b\",\"value\":[2]}]",
     "{\"a\":1,\"b\":[2.0]}", NULL},
    {"test-root", "{}", "[{\"op\":\"test\",\"path\":\"\",\"value\":{}}]", "{}", NULL},
    {"extra-members-ignored", "{}",
     "[{\"op\":\"add\",\"path\":\"/a\",\"value\":1,\"from\":\"/zz\",\"x\":2}]", "{\"a\":1}", NULL},
    {"empty-patch", "{\"a\":1}", "[]", "{\"a\":1}", NULL},
    {"sequential", "{}",
     "[{\"op\":\"add\",\"path\":\"/a\",\"value\":[]},"
     "{\"op\":\"add\",\"path\":\"/a/-\",\"value\":{}},"
     "{\"op\":\"add\",\"path\":\"/a/0/k\",\"value\":1}]",
     "{\"a\":[{\"k\":1}]}", NULL},

    /* errors */
    {"missing-parent", "{\"a\":{}}", "[{\"op\":\"add\",\"path\":\"/b/c\",\"value\":1}]", NULL,
     "patch op 0 (add /b/c): path not found"},
    {"missing-deep-parent", "{\"a\":{}}", "[{\"op\":\"add\",\"path\":\"/a/b/c\",\"value\":1}]",
     NULL, "patch op 0 (add /a/b/c): path not found"},
    {"index-past-end", "{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/2\",\"value\":1}]", NULL,
     "patch op 0 (add /a/2): bad array index"},
    {"index-leading-zero", "{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/01\",\"value\":1}]",
     NULL, "patch op 0 (add /a/01): bad array index"},
    {"index-not-number", "[1]", "[{\"op\":\"replace\",\"path\":\"/x\",\"value\":1}]", NULL,
     "patch op 0 (replace /x): bad array index"},
    {"index-negative", "[1]", "[{\"op\":\"remove\",\"path\":\"/-1\"}]", NULL,
     "patch op 0 (remove /-1): bad array index"},
    {"index-huge", "[1]", "[{\"op\":\"remove\",\"path\":\"/99999999999999999999999\"}]", NULL,
     "patch op 0 (remove /99999999999999999999999): bad array index"},
    {"dash-for-replace", "[1]", "[{\"op\":\"replace\",\"path\":\"/-\",\"value\":1}]", NULL,
     "patch op 0 (replace /-): bad array index"},
    {"replace-at-size", "[1]", "[{\"op\":\"replace\",\"path\":\"/1\",\"value\":1}]", NULL,
     "patch op 0 (replace /1): bad array index"},
    {"index-in-middle", "{\"a\":[{}]}", "[{\"op\":\"add\",\"path\":\"/a/1/b\",\"value\":1}]", NULL,
     "patch op 0 (add /a/1/b): path not found"},
    {"no-leading-slash", "{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"a\",\"value\":1}]", NULL,
     "patch op 0 (replace a): pointer does not start with /"},
    {"bad-escape", "{\"a~2\":1}", "[{\"op\":\"remove\",\"path\":\"/a~2\"}]", NULL,
     "patch op 0 (remove /a~2): bad ~ escape in pointer"},
    {"bad-escape-at-end", "{\"a~\":1}", "[{\"op\":\"remove\",\"path\":\"/a~\"}]", NULL,
     "patch op 0 (remove /a~): bad ~ escape in pointer"},
    {"bad-escape-before-slash", "{}", "[{\"op\":\"add\",\"path\":\"/a~/b\",\"value\":1}]", NULL,
     "patch op 0 (add /a~/b): bad ~ escape in pointer"},
    {"test-failed", "{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":\"1\"}]", NULL,
     "patch op 0 (test /a): test failed"},
    {"test-failed-later", "{\"a\":[1]}",
     "[{\"op\":\"add\",\"path\":\"/b\",\"value\":1},"
     "{\"op\":\"test\",\"path\":\"/a\",\"value\":[1,2]}]",
     NULL, "patch op 1 (test /a): test failed"},
    {"test-missing", "{}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":null}]", NULL,
     "patch op 0 (test /a): path not found"},
    {"remove-missing", "{}", "[{\"op\":\"remove\",\"path\":\"/a\"}]", NULL,
     "patch op 0 (remove /a): path not found"},
    {"replace-missing", "{}", "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":1}]", NULL,
     "patch op 0 (replace /a): path not found"},
    {"remove-root", "{}", "[{\"op\":\"remove\",\"path\":\"\"}]", NULL,
     "patch op 0 (remove ): cannot remove the root"},
    {"add-under-scalar", "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a/b\",\"value\":1}]", NULL,
     "patch op 0 (add /a/b): parent is not an object or array"},
    {"move-into-child", "{\"a\":{}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b\"}]", NULL,
     "patch op 0 (move /a/b): cannot move a value into itself"},
    {"move-missing-from", "{}", "[{\"op\":\"move\",\"from\":\"/x\",\"path\":\"/y\"}]", NULL,
     "patch op 0 (move /y): path not found"},
    {"copy-missing-from", "{}", "[{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/y\"}]", NULL,
     "patch op 0 (copy /y): path not found"},
    {"no-from", "{}", "[{\"op\":\"copy\",\"path\":\"/y\"}]", NULL,
     "patch op 0 (copy /y): missing from"},
    {"no-value", "{}", "[{\"op\":\"add\",\"path\":\"/y\"}]", NULL,
     "patch op 0 (add /y): missing value"},
    {"unknown-op", "{}", "[{\"op\":\"merge\",\"path\":\"/y\",\"value\":1}]", NULL,
     "patch op 0 (merge /y): unknown op"},
    {"no-op", "{}", "[{\"path\":\"/y\",\"value\":1}]", NULL,
     "patch op 0 (? /y): op needs string members op and path"},
    {"path-not-string", "{}", "[{\"op\":\"add\",\"path\":1,\"value\":1}]", NULL,
     "patch op 0 (add ?): op needs string members op and path"},
    {"op-not-object", "{}", "[[\"add\"]]", NULL, "patch op 0 (? ?): op is not an object"},
    {"patch-not-array", "{}", "{\"op\":\"add\"}", NULL,
     "patch is not an array or document is missing"},
};

START_TEST(test_apply_table)
{
    const struct acase *c = &acases[_i];
    json_t *doc = tu_json(c->doc);
    json_t *patch = tu_json(c->patch);
    char *doc_text = dump(doc);
    struct wh_error err = {0, ""};
    json_t *got = patch_apply(doc, patch, &err);
    char *after_text = dump(doc);

    ck_assert_msg(strcmp(doc_text, after_text) == 0, "%s: doc was modified", c->name);
    if (c->want != NULL) {
        ck_assert_msg(got != NULL, "%s: failed: %s", c->name, err.msg);
        tu_assert_json_eq(got, c->want);
        ck_assert_int_eq(err.code, 0);
    } else {
        ck_assert_msg(got == NULL, "%s: applied but should fail", c->name);
        ck_assert_int_eq(err.code, WH_EINVAL);
        ck_assert_msg(strcmp(err.msg, c->err) == 0, "%s: err '%s', want '%s'", c->name, err.msg,
                      c->err);
    }
    free(doc_text);
    free(after_text);
    json_decref(got);
    json_decref(patch);
    json_decref(doc);
}
END_TEST

/* The result shares nothing with the patch: values are copied in. */
START_TEST(test_apply_copies_values)
{
    json_t *doc = tu_json("{}");
    json_t *patch = tu_json("[{\"op\":\"add\",\"path\":\"/a\",\"value\":{\"b\":1}}]");
    json_t *got = patch_apply(doc, patch, NULL);

    ck_assert_ptr_nonnull(got);
    ck_assert_ptr_ne(json_object_get(got, "a"), json_object_get(json_array_get(patch, 0), "value"));
    json_decref(got);
    ck_assert_ptr_null(patch_apply(NULL, patch, NULL));
    ck_assert_ptr_null(patch_apply(doc, NULL, NULL));
    json_decref(patch);
    json_decref(doc);
}
END_TEST

/* ---- randomized round trip ----------------------------------------------- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    /* xorshift64*: deterministic across runs and platforms */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ULL) >> 32) % n;
}

static const char *const keys[] = {"a", "b", "c", "", "~", "/", "~1", "a/b", "env", "-", "0"};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static json_t *gen(int depth)
{
    uint32_t kind = rnd(depth > 0 ? 9 : 6);
    json_t *v;
    uint32_t n;
    uint32_t i;

    switch (kind) {
    case 0: return json_null();
    case 1: return json_boolean(rnd(2));
    case 2: return json_integer((json_int_t)rnd(5));
    case 3: return json_real((double)rnd(3)); /* 1 vs 1.0 clashes with case 2 */
    case 4: return json_string(keys[rnd(NKEYS)]);
    case 5: return json_string("");
    case 6:
    case 7:
        v = json_object();
        n = rnd(5);
        for (i = 0; i < n; i++)
            json_object_set_new(v, keys[rnd(NKEYS)], gen(depth - 1));
        return v;
    default:
        v = json_array();
        n = rnd(5);
        for (i = 0; i < n; i++)
            json_array_append_new(v, gen(depth - 1));
        return v;
    }
}

/* A changed copy of v: the usual case, where after shares most of before. */
static json_t *mutate(const json_t *v, int depth)
{
    json_t *m;
    size_t n;

    if (rnd(6) == 0)
        return gen(depth);
    m = json_deep_copy(v);
    if (json_is_object(m) && json_object_size(m) > 0) {
        const char *k = keys[rnd(NKEYS)];
        json_t *c = json_object_get(m, k);

        switch (rnd(3)) {
        case 0: json_object_del(m, k); break;
        case 1: json_object_set_new(m, k, gen(depth - 1)); break;
        default:
            if (c != NULL)
                json_object_set_new(m, k, mutate(c, depth - 1));
        }
    } else if (json_is_array(m)) {
        n = json_array_size(m);
        switch (rnd(4)) {
        case 0:
            if (n > 0)
                json_array_remove(m, rnd((uint32_t)n));
            break;
        case 1: json_array_append_new(m, gen(depth - 1)); break;
        case 2:
            if (n > 0) {
                uint32_t i = rnd((uint32_t)n);
                json_array_set_new(m, i, mutate(json_array_get(m, i), depth - 1));
            }
            break;
        default: json_array_insert_new(m, 0, gen(depth - 1));
        }
    } else if (rnd(2) == 0) {
        json_decref(m);
        m = gen(0);
    }
    return m;
}

START_TEST(test_random_round_trip)
{
    int iter;
    int nonempty = 0;

    rng_state = 0x9e3779b97f4a7c15ULL;
    for (iter = 0; iter < 2000; iter++) {
        json_t *before = gen(4);
        json_t *after = (iter % 4 == 0) ? gen(4) : mutate(before, 4);
        json_t *ops = patch_diff(before, after);
        json_t *self = patch_diff(after, after);
        struct wh_error err = {0, ""};
        json_t *got;
        char *b;
        char *a;
        char *o;

        ck_assert_ptr_nonnull(ops);
        ck_assert_ptr_nonnull(self);
        ck_assert_uint_eq(json_array_size(self), 0);
        got = patch_apply(before, ops, &err);
        b = dump(before);
        a = dump(after);
        o = dump(ops);
        ck_assert_msg(got != NULL, "iter %d: %s\nbefore %s\nafter %s\nops %s", iter, err.msg, b, a,
                      o);
        ck_assert_msg(json_equal(got, after), "iter %d:\nbefore %s\nafter %s\nops %s", iter, b, a,
                      o);
        nonempty += json_array_size(ops) > 0;
        free(assert_text_is_dump(before, after, ops, "random"));
        free(b);
        free(a);
        free(o);
        json_decref(got);
        json_decref(self);
        json_decref(ops);
        json_decref(after);
        json_decref(before);
    }
    /* the generator really produces differences */
    ck_assert_int_gt(nonempty, 1000);
}
END_TEST

/* ---- allocation failures ------------------------------------------------- */

static int alloc_budget = -1; /* allocations left before failing; -1 = unlimited */

static void *failing_malloc(size_t n)
{
    if (alloc_budget == 0)
        return NULL;
    if (alloc_budget > 0)
        alloc_budget--;
    return malloc(n);
}

/* Fail the Nth jansson allocation for N = 0, 1, ... until diff and apply succeed. */
START_TEST(test_alloc_failures)
{
    json_t *before = tu_json("{\"a\":[1,{\"b\":\"x\"}],\"c\":{\"d~/\":1},\"e\":2}");
    json_t *after = tu_json("{\"a\":[1,{\"b\":\"y\"},[3]],\"c\":{},\"f\":{\"g\":[1,2]}}");
    int budget;
    int ok = 0;

    for (budget = 0; budget < 10000 && !ok; budget++) {
        json_t *ops;
        json_t *got = NULL;

        json_set_alloc_funcs(failing_malloc, free);
        alloc_budget = budget;
        ops = patch_diff(before, after);
        if (ops != NULL)
            got = patch_apply(before, ops, NULL);
        alloc_budget = -1;
        json_set_alloc_funcs(malloc, free);
        if (got != NULL) {
            ck_assert(json_equal(got, after));
            ok = 1;
        }
        json_decref(got);
        json_decref(ops);
    }
    ck_assert_int_eq(ok, 1);
    ck_assert_int_gt(budget, 10);
    json_decref(before);
    json_decref(after);
}
END_TEST

static Suite *patch_suite(void)
{
    Suite *s = suite_create("patch");
    TCase *td = tcase_create("diff");
    TCase *te = tcase_create("escape");
    TCase *ta = tcase_create("apply");
    TCase *tr = tcase_create("random");

    tcase_add_loop_test(td, test_diff_table, 0, (int)(sizeof(dcases) / sizeof(dcases[0])));
    tcase_add_test(td, test_diff_values_are_references);
    tcase_add_test(td, test_diff_null_inputs);
    tcase_add_test(td, test_diff_write_null_inputs);
    tcase_add_test(td, test_diff_write_cap);
    tcase_add_test(td, test_diff_long_path);
    suite_add_tcase(s, td);
    tcase_add_test(te, test_escape_segment);
    tcase_add_test(te, test_escape_segment_truncates);
    suite_add_tcase(s, te);
    tcase_add_loop_test(ta, test_apply_table, 0, (int)(sizeof(acases) / sizeof(acases[0])));
    tcase_add_test(ta, test_apply_copies_values);
    suite_add_tcase(s, ta);
    tcase_add_test(tr, test_random_round_trip);
    tcase_add_test(tr, test_alloc_failures);
    tcase_set_timeout(tr, 60);
    suite_add_tcase(s, tr);
    return s;
}

int main(void)
{
    return tu_run(patch_suite());
}
