/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_cabundle.c - the JSON Patch built from a MutatingWebhookConfiguration
 * (the keeping itself: check_certkeeper.c).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certs/certs.h"
#include "controller/cabundle.h"
#include "tests/testutil.h"

#define MWC_PATH "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/vpw-test"

START_TEST(test_patch_build)
{
    json_t *cfg = tu_json("{\"metadata\": {\"name\": \"x\", \"resourceVersion\": \"42\"},"
                          " \"webhooks\": [{\"name\": \"a\", \"clientConfig\": {\"caBundle\":"
                          " \"b2xk\", \"service\": {\"name\": \"s\"}}},"
                          " {\"name\": \"b\", \"clientConfig\": {\"url\": \"https://x\"}}]}");
    json_t *bad;
    json_t *ops = NULL;
    struct wh_error err = {0, ""};
    size_t n = 0;

    ck_assert_int_eq(cabundle_patch_build(cfg, "Q0E=", &ops, &n, &err), 0);
    ck_assert_uint_eq(n, 2);
    tu_assert_json_eq(ops,
                      "[{\"op\": \"test\", \"path\": \"/metadata/resourceVersion\","
                      " \"value\": \"42\"},"
                      " {\"op\": \"replace\", \"path\": \"/webhooks/0/clientConfig/caBundle\","
                      " \"value\": \"Q0E=\"},"
                      " {\"op\": \"add\", \"path\": \"/webhooks/1/clientConfig/caBundle\","
                      " \"value\": \"Q0E=\"}]");
    json_decref(ops);

    /* No webhooks at all: only the test op, nothing to patch. */
    bad = tu_json("{\"metadata\": {\"resourceVersion\": \"7\"}, \"webhooks\": []}");
    ck_assert_int_eq(cabundle_patch_build(bad, "Q0E=", &ops, &n, &err), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(json_array_size(ops), 1);
    json_decref(ops);
    json_decref(bad);

    bad = tu_json("{\"metadata\": {}, \"webhooks\": []}");
    ck_assert_int_eq(cabundle_patch_build(bad, "Q0E=", &ops, NULL, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "configuration has no metadata.resourceVersion");
    ck_assert_ptr_null(ops);
    json_decref(bad);
    bad = tu_json("{\"metadata\": {\"resourceVersion\": \"1\"}}");
    ck_assert_int_eq(cabundle_patch_build(bad, "Q0E=", &ops, NULL, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "configuration has no webhooks array");
    json_decref(bad);
    bad = tu_json("{\"metadata\": {\"resourceVersion\": \"1\"}, \"webhooks\": [{\"name\": \"a\","
                  " \"clientConfig\": {}}, {\"name\": \"b\"}]}");
    ck_assert_int_eq(cabundle_patch_build(bad, "Q0E=", &ops, NULL, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "webhooks[1] has no clientConfig");
    ck_assert_ptr_null(ops);
    json_decref(bad);
    json_decref(cfg);
}
END_TEST

static Suite *cabundle_suite(void)
{
    Suite *s = suite_create("cabundle");
    TCase *build = tcase_create("build");

    tcase_add_test(build, test_patch_build);
    suite_add_tcase(s, build);
    return s;
}

int main(void)
{
    return tu_run(cabundle_suite());
}
