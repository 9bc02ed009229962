/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_admission.c - admission_handle as a bytes-to-bytes function: every 400
 * answer with its exact message, v1/v1beta1 echo, uid copy, patchType only with
 * ops, warnings only when any, the denial shape and the base64 patch. The Job
 * lookup is a fake job_source; the plugin chain is the real one.
 */
#include <check.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "tests/testutil.h"
#include "webhook/admission.h"
#include "webhook/metrics.h"

/* Fake Job lookup: answers rc (and job when rc == 0), records what was asked. */
struct fake_src {
    int rc;
    const char *job_text;              /* JSON of the Job returned when rc == 0 */
    const char *msg;                   /* err->msg when rc < 0 */
    enum lookup_failure_policy policy; /* the options admission_handle gets */
    int calls;
    char ns[64];
    char name[64];
};

static int fake_get(void *userdata, const char *ns, const char *name, const char *uid,
                    json_t **job_out, struct wh_error *err)
{
    struct fake_src *f = userdata;

    (void)uid;
    f->calls++;
    snprintf(f->ns, sizeof(f->ns), "%s", ns);
    snprintf(f->name, sizeof(f->name), "%s", name);
    if (f->rc < 0)
        return wh_error_set(err, f->rc, "%s", f->msg);
    *job_out = tu_json(f->job_text);
    return 0;
}

static const char job_env[] =
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
    " \"metadata\":{\"name\":\"j\",\"namespace\":\"team\",\"uid\":\"job-uid-1\"},"
    " \"spec\":{\"minAvailable\":1,\"plugins\":{\"env\":[]},"
    "  \"tasks\":[{\"name\":\"worker\",\"replicas\":1,\"template\":{\"spec\":"
    "   {\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}]}}";

/* A pod of Job team/j, as the Volcano controller makes it. */
#define POD_OF_J                                                                                   \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"j-worker-0\","               \
    "\"annotations\":{\"volcano.sh/task-spec\":\"worker\",\"volcano.sh/job-name\":\"j\"},"         \
    "\"ownerReferences\":[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","         \
    "\"name\":\"j\",\"uid\":\"job-uid-1\",\"controller\":true,"                                    \
    "\"blockOwnerDeletion\":true}]},"                                                              \
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}"

/* An AdmissionReview of version api around request text req. */
static char *review(const char *api, const char *uid, const char *op, const char *object)
{
    json_t *r =
        json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, s:s}}",
                  "apiVersion", api, "kind", "AdmissionReview", "request", "uid", uid, "kind",
                  "group", "", "kind", "Pod", "resource", "group", "", "version", "v1", "resource",
                  "pods", "namespace", "team", "operation", op, "name", "");
    char *s;

    ck_assert_ptr_nonnull(r);
    if (object != NULL)
        ck_assert_int_eq(
            json_object_set_new(json_object_get(r, "request"), "object", tu_json(object)), 0);
    s = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* Run admission_handle on text; check the status; return the decoded answer. */
static json_t *handle(const char *text, size_t len, struct fake_src *f, int want_status)
{
    struct jobsource src = {.get = fake_get, .userdata = f};
    struct mutate_options opt = {.lookup_failure = f->policy};
    char *out = NULL;
    size_t out_len = 0;
    json_error_t e;
    json_t *v;
    int status = admission_handle(text, len, &src, &opt, &out, &out_len);

    ck_assert_int_eq(status, want_status);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(out_len, strlen(out));
    /* Compact output: no newline, no ": " separators. */
    ck_assert_ptr_null(strchr(out, '\n'));
    ck_assert_ptr_null(strstr(out, "\": "));
    v = json_loadb(out, out_len, 0, &e);
    ck_assert_msg(v != NULL, "answer is not JSON: %s", out);
    free(out);
    return v;
}

static json_t *handle_str(const char *text, struct fake_src *f, int want_status)
{
    return handle(text, strlen(text), f, want_status);
}

/* Expected Status body for a 400 with message msg. */
static void assert_bad_request(const char *body, size_t len, const char *msg)
{
    struct fake_src f = {.rc = WH_ENOTFOUND, .msg = "not found"};
    json_t *got = handle(body, len, &f, 400);
    json_t *want = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion",
                             "v1", "metadata", "status", "Failure", "message", msg, "reason",
                             "BadRequest", "code", 400);
    char *g = json_dumps(got, JSON_COMPACT);

    ck_assert_msg(json_equal(got, want), "body %.*s\n got: %s\nwant message: %s", (int)len, body, g,
                  msg);
    ck_assert_int_eq(f.calls, 0);
    free(g);
    json_decref(want);
    json_decref(got);
}

static const struct {
    const char *body;
    const char *msg;
} bad_cases[] = {
    {"", "request body is empty"},
    {"{\"apiVersion\":", "invalid JSON at line 1 column 14: unexpected token near end of file"},
    {"{\"a\" 1}", "invalid JSON at line 1 column 6: ':' expected near '1'"},
    {"nul", "invalid JSON at line 1 column 3: invalid token near 'nul'"},
    {"{} {}", "invalid JSON at line 1 column 4: end of file expected near '{'"},
    {"[]", "body is not a JSON object"},
    {"\"AdmissionReview\"", "body is not a JSON object"},
    {"{}", "apiVersion missing"},
    {"{\"apiVersion\":null}", "apiVersion missing"},
    {"{\"apiVersion\":1}", "apiVersion must be a string"},
    {"{\"apiVersion\":\"x\"}",
     "unsupported apiVersion \"x\" (want admission.k8s.io/v1 or admission.k8s.io/v1beta1)"},
    {"{\"apiVersion\":\"admission.k8s.io/v2\",\"kind\":\"AdmissionReview\"}",
     "unsupported apiVersion \"admission.k8s.io/v2\" (want admission.k8s.io/v1 or "
     "admission.k8s.io/v1beta1)"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\"}", "kind missing"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":[]}", "kind must be a string"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\"}",
     "unsupported kind \"Pod\" (want AdmissionReview)"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", "request missing"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":[]}",
     "request must be an object"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}",
     "request.uid missing"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":7}}",
     "request.uid must be a string"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":\"\"}}",
     "request.uid is empty"},
    /* found by fuzz_admission: the answer's uid was "" */
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":\"\\u0000\",\"object\":{\"metadata\":{\"name\":\"p\"}}}}",
     "request.uid must not contain a NUL character"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":\"u\\u0000v\"}}",
     "request.uid must not contain a NUL character"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":\"u\",\"operation\":1}}",
     "request.operation must be a string"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":\"u\",\"resource\":\"pods\"}}",
     "request.resource must be an object"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":\"u\",\"resource\":{\"resource\":false}}}",
     "request.resource.resource must be a string"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":\"u\",\"resource\":{\"group\":{}}}}",
     "request.resource.group must be a string"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":\"u\",\"subResource\":[]}}",
     "request.subResource must be a string"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":\"u\",\"namespace\":2}}",
     "request.namespace must be a string"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":\"u\",\"object\":\"pod\"}}",
     "request.object must be an object"},
};

START_TEST(test_bad_request)
{
    assert_bad_request(bad_cases[_i].body, strlen(bad_cases[_i].body), bad_cases[_i].msg);
}
END_TEST

/* Bytes jansson cannot decode never make an invalid-UTF-8 message. */
START_TEST(test_bad_request_binary)
{
    static const char nul_body[] = "{\"apiVersion\":\"a\0b\"}";
    static const char bin_body[] = "{\"k\":\"\xff\xfe\"}";
    static const char esc_body[] = "{\"apiVersion\":\"a\\u0000b\"}";

    assert_bad_request(nul_body, sizeof(nul_body) - 1,
                       "invalid JSON at line 1 column 16: control character 0x0 near '\"a'");
    /* \u0000 is valid JSON (and valid in Kubernetes strings): decoded, then judged. */
    assert_bad_request(esc_body, sizeof(esc_body) - 1,
                       "unsupported apiVersion \"a\" (want admission.k8s.io/v1 or "
                       "admission.k8s.io/v1beta1)");
    assert_bad_request(bin_body, sizeof(bin_body) - 1,
                       "invalid JSON at line 1 column 6: unable to decode byte 0xff near "
                       "'\"'");
}
END_TEST

/* A long apiVersion is quoted in part, cut on a character boundary. */
/* Too many objects/arrays are refused before jansson allocates them; braces
 * inside strings (escaped quotes included) do not count. */
START_TEST(test_bad_request_too_many_containers)
{
    static const char head[] =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
        "\"request\":{\"uid\":\"u\",\"x\":[";
    size_t n = 200000;
    size_t len = sizeof(head) - 1 + n * 3 + 3;
    char *body = malloc(len + 1);
    char *p = body;
    json_t *v;

    memcpy(p, head, sizeof(head) - 1);
    p += sizeof(head) - 1;
    for (size_t i = 0; i < n; i++) { /* 200000 arrays + 2 objects: over the limit */
        memcpy(p, "[],", 3);
        p += 3;
    }
    memcpy(p - 1, "]}}", 3);
    p += 2;
    *p = '\0';
    assert_bad_request(body, (size_t)(p - body),
                       "request has more than 200000 JSON objects and arrays");
    /* The same braces inside a string are text, not containers. */
    v = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "admission.k8s.io/v1", "kind",
                  "AdmissionReview", "request", "uid", "u", "x", body);
    free(body);
    body = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    {
        char *out = NULL;
        size_t out_len = 0;
        struct jobsource src = {.get = NULL};
        struct mutate_options opt = {.lookup_failure = LOOKUP_FAILURE_DENY};

        ck_assert_int_eq(admission_handle(body, strlen(body), &src, &opt, &out, &out_len), 200);
        free(out);
    }
    free(body);
}
END_TEST

/* The count finds each string's end past backslash runs: `\\` before a quote ends the
 * string (the arrays after it count), `\\\"` does not (the text after it is string). */
START_TEST(test_container_count_backslash_runs)
{
    static const char *const strings[] = {"\\\\", "\\\\\\\""};
    size_t n = 200000;

    for (size_t k = 0; k < 2; k++) {
        struct buf b;
        char *out = NULL;
        size_t out_len = 0;
        struct jobsource src = {.get = NULL};
        struct mutate_options opt = {.lookup_failure = LOOKUP_FAILURE_DENY};
        int status;

        buf_init(&b, BUF_NO_MAX);
        ck_assert_int_eq(buf_appendf(&b,
                                     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
                                     "\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"s\":\"%s%s",
                                     strings[k], k == 0 ? "\",\"x\":[" : ""),
                         0);
        for (size_t i = 0; i < n; i++)
            ck_assert_int_eq(buf_append(&b, "[],", 3), 0);
        ck_assert_int_eq(buf_appendf(&b, "%s}}", k == 0 ? "[]]" : "\""), 0);
        status = admission_handle(buf_cstr(&b), b.len, &src, &opt, &out, &out_len);
        if (k == 0) {
            ck_assert_int_eq(status, 400);
            ck_assert_ptr_nonnull(strstr(out, "more than 200000 JSON objects and arrays"));
        } else {
            ck_assert_int_eq(status, 200); /* one long string: a review, not served */
        }
        free(out);
        buf_dispose(&b);
    }
}
END_TEST

START_TEST(test_bad_request_long_value)
{
    char body[256];
    char want[256];
    /* 63 ASCII bytes then a 2-byte character straddling byte 64. */
    char val[80];

    memset(val, 'a', 63);
    memcpy(val + 63, "\xc3\xa9zz", 5);
    snprintf(body, sizeof(body), "{\"apiVersion\":\"%s\"}", val);
    snprintf(want, sizeof(want),
             "unsupported apiVersion \"%.63s...\" (want admission.k8s.io/v1 or "
             "admission.k8s.io/v1beta1)",
             val);
    assert_bad_request(body, strlen(body), want);
}
END_TEST

/* Length is honoured: bytes after len are not read. */
START_TEST(test_len_honoured)
{
    assert_bad_request("{}garbage", 2, "apiVersion missing");
}
END_TEST

/* D8: a pod that belongs to no Job is allowed with no patch, in either version. */
START_TEST(test_version_echo_no_patch)
{
    static const char *const apis[] = {"admission.k8s.io/v1", "admission.k8s.io/v1beta1"};
    struct fake_src f = {.rc = WH_ENOTFOUND, .msg = "not found"};
    char *body = review(apis[_i], "705ab4f5-6393-11e8-b7cc-42010a800002", "CREATE",
                        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":"
                        "[{\"name\":\"c\",\"image\":\"i\"}]}}");
    json_t *got = handle_str(body, &f, 200);
    char want[256];

    snprintf(want, sizeof(want),
             "{\"apiVersion\":\"%s\",\"kind\":\"AdmissionReview\",\"response\":"
             "{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"allowed\":true}}",
             apis[_i]);
    tu_assert_json_eq(got, want);
    ck_assert_int_eq(f.calls, 0);
    json_decref(got);
    free(body);
}
END_TEST

/* D8: a DELETE carries no object (null): allowed, nothing looked up. */
START_TEST(test_delete_null_object)
{
    struct fake_src f = {.rc = WH_ENOTFOUND, .msg = "not found"};
    json_t *got = handle_str("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                             "\"request\":{\"uid\":\"u-1\",\"operation\":\"DELETE\","
                             "\"resource\":{\"group\":\"\",\"resource\":\"pods\"},"
                             "\"namespace\":\"team\",\"object\":null,\"oldObject\":{}}}",
                             &f, 200);

    tu_assert_json_eq(got,
                      "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"response\":{\"uid\":\"u-1\",\"allowed\":true}}");
    ck_assert_int_eq(f.calls, 0);
    json_decref(got);
}
END_TEST

/* Decode response.patch (base64, no line breaks) to JSON. */
static json_t *decode_patch(const json_t *resp)
{
    const char *b64 = json_string_value(json_object_get(resp, "patch"));
    size_t n;
    unsigned char *raw;
    int got;
    json_t *ops;

    ck_assert_ptr_nonnull(b64);
    n = strlen(b64);
    ck_assert_uint_eq(n % 4, 0);
    ck_assert_ptr_null(strchr(b64, '\n'));
    raw = malloc(n / 4 * 3 + 1);
    ck_assert_ptr_nonnull(raw);
    got = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
    ck_assert_int_ge(got, 0);
    /* EVP_DecodeBlock keeps the padding's zero bytes: strip them. */
    while (got > 0 && raw[got - 1] == '\0')
        got--;
    ops = json_loadb((const char *)raw, (size_t)got, 0, NULL);
    ck_assert_ptr_nonnull(ops);
    free(raw);
    return ops;
}

/* A pod of an env Job: uid copied, patchType + base64 patch of the exact ops. */
START_TEST(test_patch_base64)
{
    struct fake_src f = {.rc = 0, .job_text = job_env};
    char *body = review("admission.k8s.io/v1beta1", "uid-patch", "CREATE", POD_OF_J);
    json_t *got = handle_str(body, &f, 200);
    json_t *resp = json_object_get(got, "response");
    json_t *ops;

    ck_assert_int_eq(f.calls, 1);
    ck_assert_str_eq(f.ns, "team");
    ck_assert_str_eq(f.name, "j");
    ck_assert_str_eq(json_string_value(json_object_get(got, "apiVersion")),
                     "admission.k8s.io/v1beta1");
    ck_assert_str_eq(json_string_value(json_object_get(got, "kind")), "AdmissionReview");
    ck_assert_str_eq(json_string_value(json_object_get(resp, "uid")), "uid-patch");
    ck_assert(json_is_true(json_object_get(resp, "allowed")));
    ck_assert_str_eq(json_string_value(json_object_get(resp, "patchType")), "JSONPatch");
    ck_assert_ptr_null(json_object_get(resp, "warnings"));
    ck_assert_ptr_null(json_object_get(resp, "status"));
    ck_assert_uint_eq(json_object_size(resp), 4);
    ops = decode_patch(resp);
    tu_assert_json_eq(ops,
                      "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env\",\"value\":["
                      "{\"name\":\"VK_TASK_INDEX\",\"value\":\"0\"},"
                      "{\"name\":\"VC_TASK_INDEX\",\"value\":\"0\"}]}]");
    json_decref(ops);
    json_decref(got);
    free(body);
}
END_TEST

/* D7: Job not found → allowed, no patch, a warning. */
START_TEST(test_warning_present)
{
    struct fake_src f = {.rc = WH_ENOTFOUND, .msg = "jobs.batch.volcano.sh \"j\" not found"};
    char *body = review("admission.k8s.io/v1", "uid-w", "CREATE", POD_OF_J);
    json_t *got = handle_str(body, &f, 200);
    json_t *resp = json_object_get(got, "response");
    json_t *w = json_object_get(resp, "warnings");

    ck_assert_int_eq(f.calls, 1);
    ck_assert(json_is_true(json_object_get(resp, "allowed")));
    ck_assert_ptr_null(json_object_get(resp, "patch"));
    ck_assert_ptr_null(json_object_get(resp, "patchType"));
    ck_assert_ptr_null(json_object_get(resp, "status"));
    tu_assert_json_eq(w, "[\"volcano job team/j not found, pod not mutated\"]");
    json_decref(got);
    free(body);
}
END_TEST

/* D7: the Job cannot be read → denied, status {code 500, message, Failure}. */
START_TEST(test_denial_shape)
{
    struct fake_src f = {.rc = WH_ETIMEOUT, .msg = "timed out after 2000 ms"};
    char *body = review("admission.k8s.io/v1", "uid-deny", "CREATE", POD_OF_J);
    json_t *got = handle_str(body, &f, 200);
    json_t *resp = json_object_get(got, "response");
    json_t *st = json_object_get(resp, "status");

    ck_assert_str_eq(json_string_value(json_object_get(resp, "uid")), "uid-deny");
    ck_assert(json_is_false(json_object_get(resp, "allowed")));
    ck_assert_ptr_null(json_object_get(resp, "patch"));
    ck_assert_ptr_null(json_object_get(resp, "patchType"));
    ck_assert(json_is_object(st));
    ck_assert_uint_eq(json_object_size(st), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(st, "code")), 500);
    ck_assert_str_eq(json_string_value(json_object_get(st, "status")), "Failure");
    ck_assert_str_eq(json_string_value(json_object_get(st, "message")),
                     "cannot read volcano job team/j: timed out after 2000 ms");
    json_decref(got);
    free(body);
}
END_TEST

/* tensorflow with 10000 workers that share one hostname: TF_CONFIG ~110 KB (under the
 * 128 KiB of one environment string, D15), set on every container. */
static const char job_tf_wide[] =
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
    " \"metadata\":{\"name\":\"j\",\"namespace\":\"team\",\"uid\":\"job-uid-1\"},"
    " \"spec\":{\"plugins\":{\"tensorflow\":[]},"
    "  \"tasks\":[{\"name\":\"ps\",\"replicas\":1},"
    "   {\"name\":\"worker\",\"replicas\":10000,\"template\":{\"spec\":{\"hostname\":\"w\"}}}]}}";

/* A pod of team/j with n containers. @return malloc'd JSON. */
static char *pod_with_containers(int n)
{
    json_t *pod = tu_json(POD_OF_J);
    json_t *list = json_object_get(json_object_get(pod, "spec"), "containers");
    char *text;

    for (int i = 1; i < n; i++) {
        char name[16];

        snprintf(name, sizeof(name), "c%d", i);
        json_array_append_new(list, json_pack("{s:s, s:s}", "name", name, "image", "busybox"));
    }
    text = json_dumps(pod, JSON_COMPACT);
    json_decref(pod);
    return text;
}

/* A patch over ADMISSION_MAX_PATCH (3 MiB) is denied 400, not sent; just under, sent. */
START_TEST(test_patch_over_cap_denied)
{
    struct fake_src f = {.job_text = job_tf_wide};
    char *pod2 = pod_with_containers(24);
    char *pod3 = pod_with_containers(25);
    char *body2 = review("admission.k8s.io/v1", "uid-2", "CREATE", pod2);
    char *body3 = review("admission.k8s.io/v1", "uid-3", "CREATE", pod3);
    json_t *got = handle_str(body3, &f, 200);
    json_t *resp = json_object_get(got, "response");
    json_t *ops;

    ck_assert(json_is_false(json_object_get(resp, "allowed")));
    ck_assert_ptr_null(json_object_get(resp, "patch"));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(resp, "status"), "code")),
                     400);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(resp, "status"), "message")),
                     "the plugins' patch for this pod is over 3145728 bytes, more than a pod "
                     "can hold");
    json_decref(got);
    got = handle_str(body2, &f, 200);
    resp = json_object_get(got, "response");
    ck_assert(json_is_true(json_object_get(resp, "allowed")));
    ops = decode_patch(resp);
    /* svc (implied, D1) and tensorflow: env, mounts, hostname, subdomain, volume */
    ck_assert_uint_eq(json_array_size(ops), 2 * 24 + 3);
    {
        const json_t *env0 = json_object_get(json_array_get(ops, 0), "value");
        const json_t *env1 = json_object_get(json_array_get(ops, 2), "value");
        const json_t *tf = json_array_get(env0, json_array_size(env0) - 1);

        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ops, 2), "path")),
                         "/spec/containers/1/env");
        ck_assert_str_eq(json_string_value(json_object_get(tf, "name")), "TF_CONFIG");
        /* {"cluster":{"ps":["j-ps-0.j:2222"],"worker":["w.j:2222" x 10000]},"task":...} */
        ck_assert_uint_eq(json_string_length(json_object_get(tf, "value")), 110082);
        ck_assert(json_equal(env0, env1));
    }
    json_decref(ops);
    json_decref(got);
    free(body2);
    free(body3);
    free(pod2);
    free(pod3);
}
END_TEST

/* --job-lookup-failure=allow: allowed unmutated, the reason in a warning. */
START_TEST(test_lookup_failure_allow)
{
    struct fake_src f = {
        .rc = WH_EAPI, .msg = "InternalError: etcd unavailable", .policy = LOOKUP_FAILURE_ALLOW};
    char *body = review("admission.k8s.io/v1", "uid-allow", "CREATE", POD_OF_J);
    json_t *got = handle_str(body, &f, 200);

    tu_assert_json_eq(got,
                      "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"response\":{\"uid\":\"uid-allow\",\"allowed\":true,\"warnings\":"
                      "[\"volcano job team/j could not be read (InternalError: etcd "
                      "unavailable), pod not mutated\"]}}");
    ck_assert_int_eq(f.calls, 1);
    json_decref(got);
    free(body);
}
END_TEST

/* The admission families of the metrics text (malloc'd): webhook_admission_* lines. */
static char *admission_metrics(void)
{
    size_t len = 0;
    char *text = metrics_render(NULL, NULL, &len);
    char *out = calloc(1, len + 1);
    size_t n = 0;

    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(out);
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n"))
        if (strncmp(line, "webhook_admission_", 18) == 0)
            n += (size_t)sprintf(out + n, "%s\n", line);
    free(text);
    ck_assert_uint_gt(n, 0);
    return out;
}

/* A source that can only answer by waiting (a get_nowait's WH_EWOULDBLOCK): no answer
 * and nothing in the metrics; asked again with one that waits, the answer is whole. */
START_TEST(test_deferred)
{
    struct fake_src wouldblock = {.rc = WH_EWOULDBLOCK, .msg = "would block"};
    struct fake_src waits = {.job_text = job_env};
    struct jobsource src = {.get = fake_get, .userdata = &wouldblock};
    struct mutate_options opt = {.lookup_failure = LOOKUP_FAILURE_DENY};
    char *body = review("admission.k8s.io/v1", "uid-deferred", "CREATE", POD_OF_J);
    char *out = (char *)1;
    size_t out_len = 7;
    char *before;
    char *after;
    json_t *got;

    metrics_reset();
    before = admission_metrics();
    ck_assert_int_eq(admission_handle(body, strlen(body), &src, &opt, &out, &out_len),
                     ADMISSION_DEFERRED);
    ck_assert_ptr_null(out);
    ck_assert_uint_eq(out_len, 0);
    ck_assert_int_eq(wouldblock.calls, 1);
    ck_assert_str_eq(wouldblock.name, "j");
    after = admission_metrics();
    /* not counted: the review is not answered yet (the text is too long to print) */
    ck_assert_msg(strcmp(after, before) == 0, "the admission metrics changed");
    got = handle_str(body, &waits, 200);
    ck_assert_int_eq(waits.calls, 1);
    free(after);
    after = admission_metrics(); /* counted once answered */
    ck_assert_ptr_nonnull(strstr(after,
                                 "webhook_admission_requests_total{code=\"200\","
                                 "outcome=\"patched\"} 1\n"));
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(got, "response"), "patchType")),
        "JSONPatch");
    json_decref(got);
    free(before);
    free(after);
    free(body);
}
END_TEST

/* UPDATE of a Job pod is not served: nothing looked up, allowed (D8). */
START_TEST(test_update_not_served)
{
    struct fake_src f = {.rc = 0, .job_text = job_env};
    char *body = review("admission.k8s.io/v1", "uid-up", "UPDATE", POD_OF_J);
    json_t *got = handle_str(body, &f, 200);

    tu_assert_json_eq(got,
                      "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"response\":{\"uid\":\"uid-up\",\"allowed\":true}}");
    ck_assert_int_eq(f.calls, 0);
    json_decref(got);
    free(body);
}
END_TEST

/* ---- the Job webhook: admission_validate_job (D17) ---- */

/* An AdmissionReview of a Volcano Job (group batch.volcano.sh, resource jobs). */
static char *job_review(const char *api, const char *uid, const char *op, const char *job)
{
    json_t *r = json_pack(
        "{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, s:s}}", "apiVersion",
        api, "kind", "AdmissionReview", "request", "uid", uid, "kind", "group", "batch.volcano.sh",
        "version", "v1alpha1", "kind", "Job", "resource", "group", "batch.volcano.sh", "version",
        "v1alpha1", "resource", "jobs", "namespace", "team", "operation", op, "name", "j");
    char *s;

    ck_assert_ptr_nonnull(r);
    if (job != NULL)
        ck_assert_int_eq(json_object_set_new(json_object_get(r, "request"), "object", tu_json(job)),
                         0);
    s = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* Run admission_validate_job in mode on text; check the status; the decoded answer. */
static json_t *validate(const char *text, enum job_validation_mode mode, int want_status)
{
    struct mutate_options opt = {.job_validation = mode};
    char *out = NULL;
    size_t out_len = 0;
    int status = admission_validate_job(text, strlen(text), NULL, &opt, &out, &out_len);
    json_t *v;

    ck_assert_int_eq(status, want_status);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(out_len, strlen(out));
    v = json_loadb(out, out_len, 0, NULL);
    ck_assert_msg(v != NULL, "answer is not JSON: %s", out);
    free(out);
    return v;
}

/* A Job named name of team with plugins and tasks (JSON texts). @return malloc'd JSON. */
static char *vc_job(const char *name, const char *plugins, const char *tasks)
{
    json_t *j =
        json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:o, s:o}}", "apiVersion",
                  "batch.volcano.sh/v1alpha1", "kind", "Job", "metadata", "name", name, "namespace",
                  "team", "spec", "plugins", tu_json(plugins), "tasks", tu_json(tasks));
    char *s = json_dumps(j, JSON_COMPACT);

    json_decref(j);
    ck_assert_ptr_nonnull(s);
    return s;
}

#define MSG_DOT                                                                                    \
    "svc plugin: job name \"a.b\" cannot be a pod subdomain (a DNS-1123 label has no '.'): "       \
    "rename the job"
#define MSG_NO_MASTER                                                                              \
    "pytorch plugin: no task named \"boss\" (--master), so no pod gets MASTER_ADDR, MASTER_PORT, " \
    "WORLD_SIZE or RANK: name the master task with --master in spec.plugins.pytorch, or rename "   \
    "the task"

/* Every diagnostic as a warning, allowed, in the version asked: v1 CREATE, v1beta1 UPDATE. */
START_TEST(test_job_warnings_both_versions)
{
    static const char *const apis[] = {"admission.k8s.io/v1", "admission.k8s.io/v1beta1"};
    static const char *const ops[] = {"CREATE", "UPDATE"};
    char *job =
        vc_job("a.b", "{\"pytorch\":[\"--master=boss\"]}",
               "[{\"name\":\"master\",\"replicas\":1},{\"name\":\"worker\",\"replicas\":1}]");
    char *body = job_review(apis[_i], "uid-j", ops[_i], job);
    json_t *got = validate(body, JOB_VALIDATION_WARN, 200);
    /* registry order (D2): svc's diagnostics before pytorch's */
    json_t *want = json_pack("{s:s, s:s, s:{s:s, s:b, s:[s, s]}}", "apiVersion", apis[_i], "kind",
                             "AdmissionReview", "response", "uid", "uid-j", "allowed", 1,
                             "warnings", MSG_DOT, MSG_NO_MASTER);
    char *g = json_dumps(got, JSON_COMPACT);

    ck_assert_msg(json_equal(got, want), "got %s", g);
    free(g);
    json_decref(want);
    json_decref(got);
    free(body);
    free(job);
}
END_TEST

/* A good Job: allowed, no warnings member. */
START_TEST(test_job_good_no_warnings)
{
    char *job =
        vc_job("good", "{\"mpi\":[]}",
               "[{\"name\":\"master\",\"replicas\":1},{\"name\":\"worker\",\"replicas\":2}]");
    char *body = job_review("admission.k8s.io/v1", "uid-g", "CREATE", job);
    json_t *got = validate(body, JOB_VALIDATION_DENY, 200);

    tu_assert_json_eq(got,
                      "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"response\":{\"uid\":\"uid-g\",\"allowed\":true}}");
    json_decref(got);
    free(body);
    free(job);
}
END_TEST

/* --job-validation=deny: refused (400) only for what no pod could survive. */
START_TEST(test_job_deny_mode)
{
    char *job = vc_job("a.b", "{\"pytorch\":[\"--master=boss\"]}",
                       "[{\"name\":\"master\",\"replicas\":1}]");
    char *body = job_review("admission.k8s.io/v1", "uid-d", "CREATE", job);
    json_t *got = validate(body, JOB_VALIDATION_DENY, 200);
    json_t *resp = json_object_get(got, "response");
    json_t *st = json_object_get(resp, "status");

    ck_assert(json_is_false(json_object_get(resp, "allowed")));
    ck_assert_int_eq(json_integer_value(json_object_get(st, "code")), 400);
    ck_assert_str_eq(json_string_value(json_object_get(st, "status")), "Failure");
    ck_assert_str_eq(json_string_value(json_object_get(st, "message")),
                     "the pods of this job could never be admitted or started: " MSG_DOT);
    /* the warnings still say everything (pytorch's worker is missing too) */
    ck_assert_uint_eq(json_array_size(json_object_get(resp, "warnings")), 3);
    json_decref(got);
    free(body);
    free(job);
    /* only warnings of the non-fatal kind: allowed */
    job = vc_job("ab", "{\"pytorch\":[\"--master=boss\"]}",
                 "[{\"name\":\"master\",\"replicas\":1},{\"name\":\"worker\",\"replicas\":1}]");
    body = job_review("admission.k8s.io/v1", "uid-d", "CREATE", job);
    got = validate(body, JOB_VALIDATION_DENY, 200);
    resp = json_object_get(got, "response");
    ck_assert(json_is_true(json_object_get(resp, "allowed")));
    ck_assert_ptr_null(json_object_get(resp, "status"));
    ck_assert_uint_eq(json_array_size(json_object_get(resp, "warnings")), 1);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(resp, "warnings"), 0)),
                     MSG_NO_MASTER);
    json_decref(got);
    free(body);
    free(job);
}
END_TEST

/* More diagnostics than kube-apiserver passes on: each warning at most 256 characters, all
 * of them at most 4096, the last one counting the rest. */
START_TEST(test_job_warnings_bounded)
{
    char tasks[8192] = "[";
    char name[61];
    size_t off = 1;
    size_t total = 0;
    size_t n;
    char *job;
    char *body;
    json_t *got;
    json_t *warnings;

    memset(name, 't', 60);
    name[60] = '\0';
    for (int i = 0; i < 30; i++)
        off += (size_t)snprintf(tasks + off, sizeof(tasks) - off,
                                "%s{\"name\":\"%s\",\"replicas\":1}", i > 0 ? "," : "", name);
    snprintf(tasks + off, sizeof(tasks) - off, "]");
    job = vc_job("ab", "{}", tasks);
    body = job_review("admission.k8s.io/v1", "uid-b", "CREATE", job);
    got = validate(body, JOB_VALIDATION_WARN, 200);
    warnings = json_object_get(json_object_get(got, "response"), "warnings");
    n = json_array_size(warnings);
    /* 29 duplicates of 190 or 191 characters: 21 fit in 4096 - 48 (4002), 8 more counted */
    ck_assert_uint_eq(n, 22);
    for (size_t i = 0; i < n; i++) {
        size_t len = json_string_length(json_array_get(warnings, i));

        ck_assert_uint_le(len, 256);
        total += len;
    }
    ck_assert_uint_eq(total, 4002 + strlen("8 more diagnostics not shown"));
    ck_assert_str_eq(json_string_value(json_array_get(warnings, n - 1)),
                     "8 more diagnostics not shown");
    json_decref(got);
    free(body);
    free(job);
}
END_TEST

/* generateName: checked under the name it will get (generateName + 5 characters). */
#define GEN55                                                                                      \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcd-"

START_TEST(test_job_generate_name)
{
    json_t *j = tu_json("{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                        " \"metadata\":{\"generateName\":\"" GEN55 "\",\"namespace\":\"team\"},"
                        " \"spec\":{\"plugins\":{\"svc\":[]},"
                        "  \"tasks\":[{\"name\":\"a\",\"replicas\":1}]}}");
    char *job = json_dumps(j, JSON_COMPACT);
    char *body = job_review("admission.k8s.io/v1", "uid-gn", "CREATE", job);
    json_t *got = validate(body, JOB_VALIDATION_WARN, 200);
    json_t *warnings = json_object_get(json_object_get(got, "response"), "warnings");

    ck_assert_uint_eq(json_array_size(warnings), 2);
    ck_assert_str_eq(json_string_value(json_array_get(warnings, 0)),
                     "svc plugin: pod hostname \"" GEN55 "xxxxx-a-0\" has 64 characters, more than "
                     "the 63 of a DNS-1123 label: shorten the job name to at most 59 characters, "
                     "or the name of task a");
    ck_assert_str_eq(json_string_value(json_array_get(warnings, 1)),
                     "svc plugin: volume name \"" GEN55 "xxxxx-svc\" has 64 characters, more than "
                     "the 63 of a DNS-1123 label: shorten the job name to at most 59 characters");
    json_decref(got);
    free(body);
    free(job);
    json_decref(j);
}
END_TEST

/* Not a Job CREATE/UPDATE: allowed, nothing said; no object: 400 in the review. */
START_TEST(test_job_not_served)
{
    char *job = vc_job("a.b", "{\"svc\":[]}", "[{\"name\":\"m\",\"replicas\":1}]");
    char *body = job_review("admission.k8s.io/v1", "uid-n", "DELETE", job);
    json_t *got = validate(body, JOB_VALIDATION_DENY, 200);

    tu_assert_json_eq(got,
                      "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"response\":{\"uid\":\"uid-n\",\"allowed\":true}}");
    json_decref(got);
    free(body);
    /* a pod review sent to the Job route */
    body = review("admission.k8s.io/v1", "uid-p", "CREATE", POD_OF_J);
    got = validate(body, JOB_VALIDATION_DENY, 200);
    tu_assert_json_eq(got,
                      "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"response\":{\"uid\":\"uid-p\",\"allowed\":true}}");
    json_decref(got);
    free(body);
    body = job_review("admission.k8s.io/v1beta1", "uid-o", "CREATE", NULL);
    got = validate(body, JOB_VALIDATION_WARN, 200);
    tu_assert_json_eq(got,
                      "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\","
                      "\"response\":{\"uid\":\"uid-o\",\"allowed\":false,\"status\":{\"code\":400,"
                      "\"message\":\"request.object is not a job\",\"status\":\"Failure\"}}}");
    json_decref(got);
    free(body);
    free(job);
}
END_TEST

/* Malformed reviews: the same 400 Status answers as pod admission. */
START_TEST(test_job_bad_request)
{
    struct mutate_options opt = {.job_validation = JOB_VALIDATION_DENY};
    char *out = NULL;
    size_t out_len = 0;
    json_t *got;

    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        json_t *want = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status",
                                 "apiVersion", "v1", "metadata", "status", "Failure", "message",
                                 bad_cases[i].msg, "reason", "BadRequest", "code", 400);

        ck_assert_int_eq(admission_validate_job(bad_cases[i].body, strlen(bad_cases[i].body), NULL,
                                                &opt, &out, &out_len),
                         400);
        got = json_loadb(out, out_len, 0, NULL);
        ck_assert_msg(json_equal(got, want), "%s -> %s", bad_cases[i].body, out);
        json_decref(got);
        json_decref(want);
        free(out);
    }
}
END_TEST

/* jansson's allocator failing from the Nth allocation on: every failure must end cleanly. */
static int alloc_left;

static void *alloc_counted(size_t n)
{
    if (alloc_left <= 0)
        return NULL;
    alloc_left--;
    return malloc(n);
}

/* Out of memory anywhere: a 500 Status or the full answer, never a crash or a half answer. */
START_TEST(test_job_out_of_memory)
{
    struct mutate_options opt = {.job_validation = JOB_VALIDATION_DENY};
    char *job = vc_job("a.b", "{\"pytorch\":[\"--master=boss\"],\"ray\":[]}",
                       "[{\"name\":\"master\",\"replicas\":2}]");
    char *body = job_review("admission.k8s.io/v1", "uid-m", "CREATE", job);
    int n;

    for (n = 0; n < 5000; n++) {
        char *out = NULL;
        size_t out_len = 0;
        int status;

        alloc_left = n;
        json_set_alloc_funcs(alloc_counted, free);
        status = admission_validate_job(body, strlen(body), NULL, &opt, &out, &out_len);
        json_set_alloc_funcs(malloc, free);
        ck_assert_msg(status == 200 || status == 500, "status %d", status);
        if (status == 500 && out != NULL)
            ck_assert_ptr_nonnull(strstr(out, "\"code\":500"));
        free(out);
        if (status == 200)
            break;
    }
    ck_assert_int_lt(n, 5000);
    ck_assert_int_gt(n, 0);
    free(body);
    free(job);
}
END_TEST

static Suite *admission_suite(void)
{
    Suite *s = suite_create("admission");
    TCase *tc = tcase_create("core");

    tcase_add_loop_test(tc, test_bad_request, 0, (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
    tcase_add_test(tc, test_bad_request_binary);
    tcase_add_test(tc, test_bad_request_too_many_containers);
    tcase_add_test(tc, test_container_count_backslash_runs);
    tcase_add_test(tc, test_bad_request_long_value);
    tcase_add_test(tc, test_len_honoured);
    tcase_add_loop_test(tc, test_version_echo_no_patch, 0, 2);
    tcase_add_test(tc, test_delete_null_object);
    tcase_add_test(tc, test_patch_base64);
    tcase_add_test(tc, test_warning_present);
    tcase_add_test(tc, test_denial_shape);
    tcase_add_test(tc, test_patch_over_cap_denied);
    tcase_add_test(tc, test_lookup_failure_allow);
    tcase_add_test(tc, test_update_not_served);
    tcase_add_test(tc, test_deferred);
    tcase_add_loop_test(tc, test_job_warnings_both_versions, 0, 2);
    tcase_add_test(tc, test_job_good_no_warnings);
    tcase_add_test(tc, test_job_deny_mode);
    tcase_add_test(tc, test_job_generate_name);
    tcase_add_test(tc, test_job_warnings_bounded);
    tcase_add_test(tc, test_job_not_served);
    tcase_add_test(tc, test_job_bad_request);
    tcase_add_test(tc, test_job_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(admission_suite());
}
