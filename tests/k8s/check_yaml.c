/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_yaml.c - k8s/yaml.c: scalar typing, keys, aliases, block scalars, the
 * published examples, errors with line/column, size and expansion caps; the
 * writer (yaml_dump_buffer): its text, and values read back as written.
 *
 * Runs from the repository root (examples/ and tests/fixtures/ are relative;
 * TEST_FIXTURES and TEST_EXAMPLES override them).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s/yaml.h"
#include "tests/testutil.h"

static const char *examples_dir(void)
{
    const char *d = getenv("TEST_EXAMPLES");

    return d ? d : "examples";
}

static const char *fixtures_dir(void)
{
    const char *d = getenv("TEST_FIXTURES");

    return d ? d : "tests/fixtures";
}

/* Load text that must parse; new reference. */
static json_t *load_ok(const char *text)
{
    struct wh_error err = {0};
    json_t *v = NULL;
    int rc = yaml_load_buffer(text, strlen(text), &v, &err);

    ck_assert_msg(rc == 0, "yaml_load_buffer(%s) = %d: %s", text, rc, err.msg);
    ck_assert_ptr_nonnull(v);
    return v;
}

/* Load text that must fail with code; err filled. */
static void load_fail(const char *text, int code, struct wh_error *err)
{
    json_t *v = NULL;
    int rc = yaml_load_buffer(text, strlen(text), &v, err);

    ck_assert_msg(rc == code, "yaml_load_buffer(%s) = %d (%s), want %d", text, rc, err->msg, code);
    ck_assert_int_eq(err->code, code);
    ck_assert_ptr_null(v);
}

struct typing_case {
    const char *yaml;
    const char *json;
};

/* Each yaml text is the value of key "v"; want is the JSON of that value. */
static const struct typing_case typing_cases[] = {
    /* null */
    {"v:", "null"},
    {"v: ~", "null"},
    {"v: null", "null"},
    {"v: Null", "null"},
    {"v: NULL", "null"},
    {"v: nULL", "\"nULL\""},
    /* booleans, YAML 1.1 as go-yaml v2 */
    {"v: true", "true"},
    {"v: True", "true"},
    {"v: TRUE", "true"},
    {"v: false", "false"},
    {"v: False", "false"},
    {"v: FALSE", "false"},
    {"v: yes", "true"},
    {"v: Yes", "true"},
    {"v: YES", "true"},
    {"v: no", "false"},
    {"v: No", "false"},
    {"v: on", "true"},
    {"v: ON", "true"},
    {"v: off", "false"},
    {"v: Off", "false"},
    {"v: y", "true"},
    {"v: N", "false"},
    {"v: tRUE", "\"tRUE\""},
    {"v: yES", "\"yES\""},
    /* integers */
    {"v: 0", "0"},
    {"v: 42", "42"},
    {"v: -17", "-17"},
    {"v: +5", "5"},
    {"v: 1_000", "1000"},
    {"v: 0x1F", "31"},
    {"v: 0X1f", "31"},
    {"v: -0x10", "-16"},
    {"v: 0o17", "15"},
    {"v: 017", "15"},
    {"v: 0755", "493"},
    {"v: 0b101", "5"},
    {"v: 9223372036854775807", "9223372036854775807"},
    {"v: -9223372036854775808", "-9223372036854775808"},
    {"v: 08", "8.0"}, /* not octal, but a YAML float */
    {"v: 0x", "\"0x\""},
    {"v: 0xG", "\"0xG\""},
    {"v: 12abc", "\"12abc\""},
    {"v: 18446744073709551615", "1.8446744073709552e19"},
    /* floats */
    {"v: 1.5", "1.5"},
    {"v: 1e3", "1000.0"},
    {"v: .5", "0.5"},
    {"v: -.5", "-0.5"},
    {"v: 1.", "1.0"},
    {"v: 6.02e+23", "6.02e23"},
    {"v: 1_0.5", "10.5"},
    {"v: .inf", "\".inf\""},
    {"v: -.Inf", "\"-.Inf\""},
    {"v: +.INF", "\"+.INF\""},
    {"v: .nan", "\".nan\""},
    {"v: .NaN", "\".NaN\""},
    {"v: 1e999", "\"1e999\""},
    {"v: 1.2.3", "\"1.2.3\""},
    {"v: .", "\".\""},
    {"v: -x", "\"-x\""},
    /* timestamps stay strings */
    {"v: 2001-12-14", "\"2001-12-14\""},
    {"v: 2001-12-14T21:59:43.10Z", "\"2001-12-14T21:59:43.10Z\""},
    /* strings, quoted and tagged scalars */
    {"v: hello world", "\"hello world\""},
    {"v: v1", "\"v1\""},
    {"v: \"123\"", "\"123\""},
    {"v: '123'", "\"123\""},
    {"v: 'true'", "\"true\""},
    {"v: \"\"", "\"\""},
    {"v: ''", "\"\""},
    {"v: \"~\"", "\"~\""},
    {"v: !!str 5", "\"5\""},
    {"v: !!str true", "\"true\""},
    {"v: !!int 5", "5"},
    {"v: !custom 5", "\"5\""},
    {"v: \"a\\tb\\u00e9\"", "\"a\\tb\\u00e9\""},
    /* flow collections */
    {"v: [1, two, \"3\", null]", "[1, \"two\", \"3\", null]"},
    {"v: {a: 1, b: [x]}", "{\"a\": 1, \"b\": [\"x\"]}"},
    {"v: []", "[]"},
    {"v: {}", "{}"},
};

START_TEST(test_scalar_typing)
{
    size_t i;

    for (i = 0; i < sizeof(typing_cases) / sizeof(typing_cases[0]); i++) {
        json_t *doc = load_ok(typing_cases[i].yaml);
        json_t *want = tu_json(typing_cases[i].json);
        json_t *got = json_object_get(doc, "v");
        char *g = json_dumps(got, JSON_ENCODE_ANY);

        ck_assert_msg(got != NULL && json_equal(got, want), "%s: got %s, want %s",
                      typing_cases[i].yaml, g ? g : "(none)", typing_cases[i].json);
        free(g);
        json_decref(want);
        json_decref(doc);
    }
}
END_TEST

START_TEST(test_root_scalars_and_json)
{
    json_t *v;

    v = load_ok("42");
    tu_assert_json_eq(v, "42");
    json_decref(v);
    v = load_ok("plain text");
    tu_assert_json_eq(v, "\"plain text\"");
    json_decref(v);
    v = load_ok("---\n");
    ck_assert(json_is_null(v));
    json_decref(v);
    v = load_ok("{\"kind\": \"Job\", \"spec\": {\"minAvailable\": 3, \"ok\": true, \"x\": null,"
                " \"f\": 2.5, \"l\": [\"a\", 1]}}");
    tu_assert_json_eq(v,
                      "{\"kind\":\"Job\",\"spec\":{\"minAvailable\":3,\"ok\":true,\"x\":null,"
                      "\"f\":2.5,\"l\":[\"a\",1]}}");
    json_decref(v);
    /* only the first document is read */
    v = load_ok("a: 1\n---\nb: 2\n---\n[unclosed\n");
    tu_assert_json_eq(v, "{\"a\":1}");
    json_decref(v);
}
END_TEST

START_TEST(test_keys)
{
    json_t *v;
    struct wh_error err = {0};

    v = load_ok("a: 1\nb: 2\na: 3\n");
    tu_assert_json_eq(v, "{\"a\":3,\"b\":2}");
    ck_assert_uint_eq(json_object_size(v), 2);
    json_decref(v);
    /* non-string keys keep their text */
    v = load_ok("1: a\ntrue: b\n~: c\n0x10: d\n\"q\": e\n");
    tu_assert_json_eq(v, "{\"1\":\"a\",\"true\":\"b\",\"~\":\"c\",\"0x10\":\"d\",\"q\":\"e\"}");
    json_decref(v);
    load_fail("? [a, b]\n: 1\n", WH_EINVAL, &err);
    ck_assert_str_eq(err.msg, "line 1 column 3: a mapping key must be a scalar");
    load_fail("base: &b {x: 1}\nuse:\n  <<: *b\n", WH_EINVAL, &err);
    ck_assert_str_eq(err.msg, "line 3 column 3: merge keys (<<) are not supported");
}
END_TEST

START_TEST(test_aliases)
{
    json_t *v;
    struct wh_error err = {0};

    v = load_ok("base: &b {x: 1, y: [a, yes]}\nuse: *b\nlist: [*b, *b]\nn: &n 5\nm: *n\n");
    tu_assert_json_eq(v,
                      "{\"base\":{\"x\":1,\"y\":[\"a\",true]},\"use\":{\"x\":1,\"y\":[\"a\",true]},"
                      "\"list\":[{\"x\":1,\"y\":[\"a\",true]},{\"x\":1,\"y\":[\"a\",true]}],"
                      "\"n\":5,\"m\":5}");
    /* expanded copies are independent */
    json_object_set_new(json_object_get(v, "use"), "x", json_integer(99));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(v, "base"), "x")), 1);
    json_decref(v);
    /* an alias used as a key gives the anchored scalar's text */
    v = load_ok("k: &k name\n*k : 7\n");
    tu_assert_json_eq(v, "{\"k\":\"name\",\"name\":7}");
    json_decref(v);
    load_fail("a: *nope\n", WH_EINVAL, &err);
    ck_assert_str_eq(err.msg, "line 1 column 4: unknown anchor");
    /* an anchor is not visible inside its own value */
    load_fail("a: &a [1, *a]\n", WH_EINVAL, &err);
    ck_assert_str_eq(err.msg, "line 1 column 11: unknown anchor");
}
END_TEST

START_TEST(test_billion_laughs)
{
    static const char doc[] = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                              "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                              "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                              "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                              "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                              "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                              "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
                              "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
                              "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]\n";
    struct wh_error err = {0};

    load_fail(doc, WH_ETOOBIG, &err);
    ck_assert_msg(strstr(err.msg, "too many nodes after alias expansion") != NULL, "%s", err.msg);
    ck_assert_msg(strncmp(err.msg, "line 6 column ", 14) == 0, "%s", err.msg);
}
END_TEST

/* Aliases of one long string: a 1 MiB file must not become gigabytes. Each alias weighs
 * what its string does (one node per 256 bytes), so the nodes cap stops it at once. */
START_TEST(test_string_bomb)
{
    size_t n = 1u << 20;
    size_t aliases = 1500;
    char *doc = malloc(n + aliases * 4 + 64);
    size_t off = 0;
    struct wh_error err = {0};
    json_t *v = NULL;

    ck_assert_ptr_nonnull(doc);
    off += (size_t)sprintf(doc + off, "x: &s ");
    memset(doc + off, 'a', n);
    off += n;
    off += (size_t)sprintf(doc + off, "\ny: [");
    for (size_t i = 0; i < aliases; i++)
        off += (size_t)sprintf(doc + off, i ? ",*s" : "*s");
    off += (size_t)sprintf(doc + off, "]\n");
    ck_assert_int_eq(yaml_load_buffer(doc, off, &v, &err), WH_ETOOBIG);
    ck_assert_ptr_null(v);
    ck_assert_msg(strstr(err.msg, "too many nodes after alias expansion") != NULL, "%s", err.msg);
    /* the same string aliased a few times is fine: 4 x 1 MiB */
    off = (size_t)sprintf(doc, "x: &s ");
    memset(doc + off, 'a', n);
    off += n;
    off += (size_t)sprintf(doc + off, "\ny: [*s, *s, *s]\n");
    ck_assert_int_eq(yaml_load_buffer(doc, off, &v, &err), 0);
    ck_assert_uint_eq(json_string_length(json_array_get(json_object_get(v, "y"), 2)), n);
    json_decref(v);
    free(doc);
}
END_TEST

START_TEST(test_too_deep)
{
    size_t n = 5000;
    char *doc = malloc(n + 1);
    struct wh_error err = {0};

    ck_assert_ptr_nonnull(doc);
    memset(doc, '[', n);
    doc[n] = '\0';
    load_fail(doc, WH_ETOOBIG, &err);
    ck_assert_str_eq(err.msg, "line 1 column 1001: document nested too deeply");
    free(doc);
}
END_TEST

START_TEST(test_block_scalars)
{
    json_t *v = load_ok("lit: |\n  line1\n    indented\n\n  line3\nstrip: |-\n  s\nfold: >\n"
                        "  a\n  b\n\n  c\nkeep: |+\n  k\n\nnum: |\n  123\n");

    tu_assert_json_eq(v,
                      "{\"lit\":\"line1\\n  indented\\n\\nline3\\n\",\"strip\":\"s\","
                      "\"fold\":\"a b\\nc\\n\",\"keep\":\"k\\n\\n\",\"num\":\"123\\n\"}");
    json_decref(v);
}
END_TEST

START_TEST(test_pytorch_example)
{
    char path[512];
    char fix[512];
    json_t *got = NULL;
    json_t *want;
    json_error_t je;
    struct wh_error err = {0};
    const char *cmd;
    const char *tail;

    snprintf(path, sizeof(path), "%s/pytorch-job.yaml", examples_dir());
    ck_assert_int_eq(yaml_load_file(path, &got, &err), 0);
    want = json_load_file(tu_fixture("yaml/pytorch-job.json", fix, sizeof(fix)), 0, &je);
    ck_assert_msg(want != NULL, "%s: %s", fix, je.text);
    ck_assert_msg(json_equal(got, want), "pytorch-job.yaml differs from %s", fix);
    /* the command script keeps its trailing newline and its blank lines */
    cmd = json_string_value(json_array_get(
        json_object_get(
            json_array_get(
                json_object_get(
                    json_object_get(
                        json_object_get(
                            json_array_get(json_object_get(json_object_get(got, "spec"), "tasks"),
                                           0),
                            "template"),
                        "spec"),
                    "containers"),
                0),
            "command"),
        2));
    ck_assert_ptr_nonnull(cmd);
    ck_assert_msg(
        strncmp(cmd, "import os\nimport torch\nimport torch.distributed as dist\n\nprint(", 62)
            == 0,
        "%s", cmd);
    tail = "# PyTorch训练代码...\n";
    ck_assert_uint_ge(strlen(cmd), strlen(tail));
    ck_assert_str_eq(cmd + strlen(cmd) - strlen(tail), tail);
    json_decref(want);
    json_decref(got);
}
END_TEST

START_TEST(test_all_examples)
{
    static const char *const files[] = {
        "example-job.yaml",
        "lm-mpi-job.yaml",
        "mpi-job.yaml",
        "pytorch-job.yaml",
        "ray-cluster-job.yaml",
        "tensorflow-dist-mnist-with-comments.yaml",
        "tensorflow-dist-mnist.yaml",
        "tensorflow-training.yaml",
    };
    size_t i;

    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[512];
        json_t *v = NULL;
        struct wh_error err = {0};
        json_t *spec;

        snprintf(path, sizeof(path), "%s/%s", examples_dir(), files[i]);
        ck_assert_msg(yaml_load_file(path, &v, &err) == 0, "%s: %s", files[i], err.msg);
        ck_assert_str_eq(json_string_value(json_object_get(v, "kind")), "Job");
        ck_assert_str_eq(json_string_value(json_object_get(v, "apiVersion")),
                         "batch.volcano.sh/v1alpha1");
        spec = json_object_get(v, "spec");
        ck_assert(json_is_object(json_object_get(spec, "plugins")));
        if (i == 0) {
            /* comments with Chinese text, no tasks */
            tu_assert_json_eq(
                v,
                "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                "\"metadata\":{\"name\":\"example-job\"},\"spec\":{\"plugins\":{"
                "\"ssh\":[],\"env\":[],\"svc\":[\"--publish-not-ready-addresses=true\"],"
                "\"pytorch\":[\"--master=master\",\"--worker=worker\"]}}}");
        } else {
            ck_assert_str_eq(json_string_value(json_object_get(spec, "queue")), "default");
            ck_assert(json_array_size(json_object_get(spec, "tasks")) > 0);
        }
        json_decref(v);
    }
}
END_TEST

START_TEST(test_syntax_errors)
{
    struct wh_error err = {0};

    load_fail("a: b: c\n", WH_EINVAL, &err);
    ck_assert_str_eq(err.msg, "line 1 column 5: mapping values are not allowed in this context");
    load_fail("kind: Job\nspec:\n  tasks: [a, b\n", WH_EINVAL, &err);
    ck_assert_str_eq(err.msg,
                     "line 4 column 1: did not find expected ',' or ']' "
                     "(while parsing a flow sequence at line 3)");
    load_fail("a: \"unterminated\n", WH_EINVAL, &err);
    ck_assert_msg(strncmp(err.msg, "line 2 column 1: found unexpected end of stream", 47) == 0,
                  "%s", err.msg);
    /* invalid UTF-8 on line 2 */
    load_fail("a: 1\nb: \xff\n", WH_EINVAL, &err);
    ck_assert_str_eq(err.msg, "line 2 column 4: invalid leading UTF-8 octet");
    /* a "\0" escape (found by fuzzing): names would be cut short as C strings */
    load_fail("a: 1\n\"svc\\0x\": []\n", WH_EINVAL, &err);
    ck_assert_str_eq(err.msg, "line 2 column 1: NUL character not supported");
    load_fail("a: \"x\\0y\"\n", WH_EINVAL, &err);
    ck_assert_str_eq(err.msg, "line 1 column 4: NUL character not supported");
}
END_TEST

START_TEST(test_empty)
{
    struct wh_error err = {0};
    char path[] = "/tmp/check_yaml_XXXXXX";
    int fd;
    json_t *v = NULL;

    load_fail("", WH_EINVAL, &err);
    ck_assert_str_eq(err.msg, "line 1 column 1: empty document");
    load_fail("# only a comment\n\n", WH_EINVAL, &err);
    ck_assert_str_eq(err.msg, "line 3 column 1: empty document");
    fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(yaml_load_file(path, &v, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "line 1 column 1: empty document");
    ck_assert_ptr_null(v);
    unlink(path);
}
END_TEST

START_TEST(test_file_errors)
{
    struct wh_error err = {0};
    char path[] = "/tmp/check_yaml_XXXXXX";
    int fd;
    json_t *v = NULL;

    ck_assert_int_eq(yaml_load_file("/nonexistent/job.yaml", &v, &err), WH_ERROR);
    ck_assert_str_eq(err.msg, "No such file or directory");
    fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, 16 * 1024 * 1024 + 1), 0);
    close(fd);
    ck_assert_int_eq(yaml_load_file(path, &v, &err), WH_ETOOBIG);
    ck_assert_str_eq(err.msg, "file is larger than 16777216 bytes");
    ck_assert_ptr_null(v);
    unlink(path);
}
END_TEST

/* Every document of a stream; anchors do not cross "---"; a lone "---" is null. */
START_TEST(test_documents)
{
    static const char text[] = "a: &x 1\nb: *x\n---\n- 2\n---\n---\nc: \"3\"\n";
    static const char cross[] = "a: &x 1\n---\nb: *x\n";
    static const char shadow[] = "a: &x 1\nb: *x\nc: &x 2\nd: *x\n---\ne: &x 3\nf: *x\n";
    struct wh_error err = {0};
    json_t *docs = NULL;
    json_t *first = NULL;

    ck_assert_int_eq(yaml_load_documents(text, strlen(text), &docs, &err), 0);
    tu_assert_json_eq(docs, "[{\"a\":1,\"b\":1},[2],null,{\"c\":\"3\"}]");
    json_decref(docs);
    /* a later anchor of the same name shadows the earlier one, in a document and after
     * a "---" (where the earlier one is gone) */
    ck_assert_int_eq(yaml_load_documents(shadow, strlen(shadow), &docs, &err), 0);
    tu_assert_json_eq(docs, "[{\"a\":1,\"b\":1,\"c\":2,\"d\":2},{\"e\":3,\"f\":3}]");
    json_decref(docs);
    /* yaml_load_buffer still reads the first one only */
    ck_assert_int_eq(yaml_load_buffer(text, strlen(text), &first, &err), 0);
    tu_assert_json_eq(first, "{\"a\":1,\"b\":1}");
    json_decref(first);
    docs = json_true(); /* a singleton, to see it overwritten with NULL on failure */
    ck_assert_int_eq(yaml_load_documents(cross, strlen(cross), &docs, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "line 3 column 4: unknown anchor");
    ck_assert_ptr_null(docs);
    ck_assert_int_eq(yaml_load_documents("", 0, &docs, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "line 1 column 1: empty document");
    ck_assert_ptr_null(docs);
    /* a syntax error in a later document fails the whole stream */
    ck_assert_int_eq(yaml_load_documents("a: 1\n---\nb: [\n", 15, &docs, &err), WH_EINVAL);
    ck_assert_ptr_null(docs);
}
END_TEST

/* yaml_dump_buffer(v), which must succeed; the caller frees the text. */
static char *dump_ok(const json_t *v)
{
    struct wh_error err = {0};
    char *text = NULL;
    size_t len = 0;

    ck_assert_msg(yaml_dump_buffer(v, &text, &len, &err) == 0, "yaml_dump_buffer: %s", err.msg);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(len, strlen(text));
    return text;
}

/* v written and read back must be v. */
static void assert_round_trip(const json_t *v)
{
    char *text = dump_ok(v);
    json_t *back = load_ok(text);
    char *want = json_dumps(v, JSON_ENCODE_ANY);

    ck_assert_msg(json_equal(back, v), "%s written as\n%s", want, text);
    free(want);
    json_decref(back);
    free(text);
}

/* A real with an exponent keeps a dot ("1.0e+20"): YAML 1.1 readers (PyYAML) type
 * "1e+20" as a string. Written and read back, each stays the number it was. */
START_TEST(test_dump_real_exponent)
{
    json_t *v = json_pack("{s:f, s:f, s:f, s:f}", "a", 1e20, "b", 1.5e-7, "c", 2.0, "d", -3e300);
    char *text = dump_ok(v);

    ck_assert_str_eq(
        text, "a: 1.0e+20\nb: 1.4999999999999999e-07\nc: 2.0\nd: -3.0000000000000002e+300\n");
    assert_round_trip(v);
    free(text);
    json_decref(v);
}
END_TEST

START_TEST(test_dump_text)
{
    json_t *v = tu_json("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-0\","
                        "\"labels\":{\"volcano.sh/task-index\":\"0\",\"on\":\"yes\"}},"
                        "\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"sh\",\"-c\","
                        "\"echo a\\necho b\\n\"],\"ports\":[{\"containerPort\":23456}]}],"
                        "\"x\":[],\"y\":{},\"n\":null,\"t\":true,\"r\":2.0,\"e\":\"\"}}");
    char *text = dump_ok(v);

    /* kubectl's layout: block style, sequences at the key's indent, quotes only
     * where a plain scalar would read as another type, a literal block for lines */
    ck_assert_str_eq(text,
                     "apiVersion: v1\n"
                     "kind: Pod\n"
                     "metadata:\n"
                     "  name: p-0\n"
                     "  labels:\n"
                     "    volcano.sh/task-index: \"0\"\n"
                     "    \"on\": \"yes\"\n"
                     "spec:\n"
                     "  containers:\n"
                     "  - name: c\n"
                     "    command:\n"
                     "    - sh\n"
                     "    - -c\n"
                     "    - |\n"
                     "      echo a\n"
                     "      echo b\n"
                     "    ports:\n"
                     "    - containerPort: 23456\n"
                     "  x: []\n"
                     "  \"y\": {}\n" /* y and n are YAML 1.1 booleans */
                     "  \"n\": null\n"
                     "  t: true\n"
                     "  r: 2.0\n"
                     "  e: \"\"\n");
    free(text);
    json_decref(v);
}
END_TEST

START_TEST(test_dump_round_trip)
{
    /* every string a plain scalar of typing_cases spells, and every value it gives */
    for (size_t i = 0; i < sizeof(typing_cases) / sizeof(typing_cases[0]); i++) {
        const char *spelled = typing_cases[i].yaml + strlen("v:");
        json_t *as_string = json_pack("{s:s}", "v", spelled[0] == ' ' ? spelled + 1 : spelled);
        json_t *typed = load_ok(typing_cases[i].yaml);

        assert_round_trip(as_string);
        assert_round_trip(typed);
        json_decref(as_string);
        json_decref(typed);
    }
    /* strings another YAML 1.1 reader (PyYAML) would type, and awkward ones */
    static const char *const strings[] = {
        "2001-12-14", "1:20",     "-1:20:30",  "=",      "<<",  ".5_0",
        "0o17",       "a: b",     "- x",       "#c",     "'q'", "\"q\"",
        "trailing ",  " leading", "tab\there", "line\n", "\n",  "é ü 中文",
        "*alias",     "&anchor",  "!tag",      "%x",     "@x",  "`x",
        "{a}",        "[a]",      "key:",      "?",      "|",   ">",
    };
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        json_t *v = json_pack("{s:s, s:[s]}", strings[i], strings[i], "list", strings[i]);

        assert_round_trip(v);
        json_decref(v);
    }
    json_t *nums = tu_json("[0, -1, 9223372036854775807, -9223372036854775808, 1.5, 1e300, "
                           "-2.0, 0.1, 1e-7, 123456789012345678.0]");
    assert_round_trip(nums);
    json_decref(nums);
}
END_TEST

START_TEST(test_dump_examples)
{
    static const char *const files[] = {"mpi-job.yaml", "pytorch-job.yaml",
                                        "tensorflow-dist-mnist-with-comments.yaml"};

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[512];
        json_t *v = NULL;
        struct wh_error err = {0};

        snprintf(path, sizeof(path), "%s/%s", examples_dir(), files[i]);
        ck_assert_msg(yaml_load_file(path, &v, &err) == 0, "%s: %s", files[i], err.msg);
        assert_round_trip(v);
        json_decref(v);
    }
}
END_TEST

START_TEST(test_dump_too_deep)
{
    json_t *v = json_array();
    json_t *inner = v;
    struct wh_error err = {0};
    char *text = (char *)"unset";

    for (int i = 0; i < 1001; i++) {
        json_t *next = json_array();

        ck_assert_int_eq(json_array_append_new(inner, next), 0);
        inner = next;
    }
    ck_assert_int_eq(yaml_dump_buffer(v, &text, NULL, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "value nested deeper than 1000 levels");
    ck_assert_ptr_null(text);
    json_decref(v);
}
END_TEST

/* yaml_load_file_documents(path) with its repeated keys; both must be there. */
static void load_file_dups(const char *path, json_t **docs, json_t **dups)
{
    struct wh_error err = {0};

    ck_assert_msg(yaml_load_file_documents(path, docs, dups, &err) == 0, "%s: %s", path, err.msg);
    ck_assert_ptr_nonnull(*docs);
    ck_assert_ptr_nonnull(*dups);
}

START_TEST(test_duplicate_keys_fixture)
{
    char path[512];
    json_t *docs = NULL;
    json_t *dups = NULL;
    json_t *alone = NULL;
    struct wh_error err = {0};

    snprintf(path, sizeof(path), "%s/yaml/duplicate-keys.yaml", fixtures_dir());
    load_file_dups(path, &docs, &dups);
    /* the last value is kept, in the first key's position */
    tu_assert_json_eq(docs,
                      "[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                      "\"metadata\":{\"name\":\"dup-2\"},\"spec\":{\"queue\":\"last\","
                      "\"tasks\":[{\"name\":\"b\",\"replicas\":1},"
                      "{\"name\":\"c\",\"template\":{\"spec\":{}}}]}},"
                      "{\"kind\":\"Job\"}]");
    /* each repeat, where it is: a nested one, one whose value is a mapping, an anchored
     * key and an alias as a key, a quoted key in a later document */
    tu_assert_json_eq(
        dups,
        "[{\"document\":1,\"line\":6,\"column\":3,\"key\":\"name\",\"path\":\"metadata.name\"},"
        "{\"document\":1,\"line\":12,\"column\":7,\"key\":\"name\","
        "\"path\":\"spec.tasks[0].name\"},"
        "{\"document\":1,\"line\":15,\"column\":7,\"key\":\"template\","
        "\"path\":\"spec.tasks[1].template\"},"
        "{\"document\":1,\"line\":17,\"column\":3,\"key\":\"queue\",\"path\":\"spec.queue\"},"
        "{\"document\":1,\"line\":18,\"column\":3,\"key\":\"queue\",\"path\":\"spec.queue\"},"
        "{\"document\":2,\"line\":21,\"column\":1,\"key\":\"kind\",\"path\":\"kind\"}]");
    /* listing them changes nothing read */
    ck_assert_int_eq(yaml_load_file(path, &alone, &err), 0);
    ck_assert(json_equal(alone, json_array_get(docs, 0)));
    json_decref(alone);
    json_decref(docs);
    json_decref(dups);
    /* dups_out NULL: not listed, same documents */
    ck_assert_int_eq(yaml_load_file_documents(path, &docs, NULL, &err), 0);
    ck_assert_uint_eq(json_array_size(docs), 2);
    json_decref(docs);
}
END_TEST

START_TEST(test_duplicate_keys_examples)
{
    char path[512];
    json_t *docs = NULL;
    json_t *dups = NULL;

    /* as published, the Ray example repeats `queue` (line 6 and line 15) */
    snprintf(path, sizeof(path), "%s/ray-cluster-job.yaml", examples_dir());
    load_file_dups(path, &docs, &dups);
    tu_assert_json_eq(dups,
                      "[{\"document\":1,\"line\":15,\"column\":3,\"key\":\"queue\","
                      "\"path\":\"spec.queue\"}]");
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_array_get(docs, 0), "spec"), "queue")),
                     "default");
    json_decref(docs);
    json_decref(dups);
    snprintf(path, sizeof(path), "%s/pytorch-job.yaml", examples_dir());
    load_file_dups(path, &docs, &dups);
    ck_assert_uint_eq(json_array_size(dups), 0);
    json_decref(docs);
    json_decref(dups);
}
END_TEST

static Suite *yaml_suite(void)
{
    Suite *s = suite_create("yaml");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_scalar_typing);
    tcase_add_test(tc, test_root_scalars_and_json);
    tcase_add_test(tc, test_keys);
    tcase_add_test(tc, test_aliases);
    tcase_add_test(tc, test_billion_laughs);
    tcase_add_test(tc, test_string_bomb);
    tcase_add_test(tc, test_too_deep);
    tcase_add_test(tc, test_block_scalars);
    tcase_add_test(tc, test_pytorch_example);
    tcase_add_test(tc, test_all_examples);
    tcase_add_test(tc, test_syntax_errors);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_documents);
    tcase_add_test(tc, test_file_errors);
    tcase_add_test(tc, test_dump_text);
    tcase_add_test(tc, test_dump_real_exponent);
    tcase_add_test(tc, test_dump_round_trip);
    tcase_add_test(tc, test_dump_examples);
    tcase_add_test(tc, test_dump_too_deep);
    tcase_add_test(tc, test_duplicate_keys_fixture);
    tcase_add_test(tc, test_duplicate_keys_examples);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(yaml_suite());
}
