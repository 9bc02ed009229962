/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_cabundle.c - the caBundle keeper: the JSON Patch built from a
 * MutatingWebhookConfiguration, and the patch thread against tests/apiserver.py
 * (two webhooks, conflicts and 5xx retried, a configuration created late, stop
 * while retrying).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certs/certs.h"
#include "controller/cabundle.h"
#include "tests/apitest.h"
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

/* ---- the patch thread against tests/apiserver.py ---- */

static struct apitest api;

static void api_setup(void)
{
    apitest_start(&api, NULL);
}

static void api_teardown(void)
{
    apitest_stop(&api);
}

static const char *const two_webhooks =
    "{\"apiVersion\": \"admissionregistration.k8s.io/v1\","
    " \"kind\": \"MutatingWebhookConfiguration\", \"metadata\": {\"name\": \"vpw-test\"},"
    " \"webhooks\": [{\"name\": \"a.example.org\", \"clientConfig\": {\"caBundle\": \"b2xk\","
    " \"service\": {\"name\": \"vpw\", \"namespace\": \"ns\"}}},"
    " {\"name\": \"b.example.org\", \"clientConfig\": {"
    " \"service\": {\"name\": \"vpw\", \"namespace\": \"ns\"}}}]}";

/* Poll until the patcher is done (Check's test timeout bounds the wait). */
static void wait_done(struct cabundle_patcher *p)
{
    while (!cabundle_done(p))
        apitest_nap(20);
}

/* Both webhooks hold base64 of pem. */
static void assert_bundles(const char *pem)
{
    json_t *cfg = NULL;
    json_t *wh;
    size_t i;
    char *want = certs_base64(pem, strlen(pem));

    ck_assert_int_eq(apitest_call(&api, "GET", MWC_PATH, NULL, true, &cfg), 200);
    ck_assert_uint_eq(json_array_size(json_object_get(cfg, "webhooks")), 2);
    json_array_foreach(json_object_get(cfg, "webhooks"), i, wh) {
        const char *got =
            json_string_value(json_object_get(json_object_get(wh, "clientConfig"), "caBundle"));

        ck_assert_msg(got != NULL && strcmp(got, want) == 0, "webhooks[%zu] caBundle %s", i,
                      got ? got : "(none)");
    }
    /* the rest of the configuration is untouched */
    wh = json_array_get(json_object_get(cfg, "webhooks"), 1);
    tu_assert_json_eq(json_object_get(json_object_get(wh, "clientConfig"), "service"),
                      "{\"name\": \"vpw\", \"namespace\": \"ns\"}");
    ck_assert_str_eq(json_string_value(json_object_get(wh, "name")), "b.example.org");
    json_decref(cfg);
    free(want);
}

/* A 503 on the first GET and two 409 Conflicts on PATCH: retried until it lands. */
START_TEST(test_patcher_retries)
{
    struct k8s_client *kc = apitest_client(&api);
    struct cabundle_config pcfg = {"vpw-test", "-----BEGIN CERTIFICATE-----\nQ0E=\n", 20, 80, 5000};
    struct cabundle_patcher *p = NULL;
    struct wh_error err = {0, ""};

    apitest_ctl(&api, "POST", "/_test/objects", two_webhooks);
    apitest_ctl(&api, "POST", "/_test/faults",
                "[{\"method\": \"GET\","
                " \"path_regex\": \"mutatingwebhookconfigurations/vpw-test$\","
                " \"count\": 1, \"status\": 503, \"reason\": \"ServiceUnavailable\","
                " \"message\": \"etcd is away\"},"
                " {\"method\": \"PATCH\", \"path_regex\": \"mutatingwebhookconfigurations/\","
                " \"count\": 2, \"status\": 409, \"reason\": \"Conflict\","
                " \"message\": \"the object has been modified\"}]");
    ck_assert_int_eq(cabundle_done(p), 0); /* NULL: not done */
    ck_assert_msg(cabundle_start(&p, kc, &pcfg, &err) == 0, "%s", err.msg);
    wait_done(p);
    cabundle_stop(p);
    assert_bundles(pcfg.ca_pem);
    /* 503 GET; GET + 409; GET + 409; GET + PATCH: then nothing more */
    ck_assert_int_eq(apitest_count(&api, "GET", MWC_PATH), 4 + 1); /* + assert_bundles */
    ck_assert_int_eq(apitest_count(&api, "PATCH", MWC_PATH), 3);
    k8s_client_destroy(kc);
}
END_TEST

/* The configuration does not exist yet (404): retried until it is created. */
START_TEST(test_patcher_waits_for_config)
{
    struct k8s_client *kc = apitest_client(&api);
    struct cabundle_config pcfg = {"vpw-test", "-----BEGIN CERTIFICATE-----\nTEFURQ==\n", 20, 40,
                                   5000};
    struct cabundle_patcher *p = NULL;

    ck_assert_int_eq(cabundle_start(&p, kc, &pcfg, NULL), 0);
    while (apitest_count(&api, "GET", MWC_PATH) < 2)
        apitest_nap(20);
    ck_assert_int_eq(cabundle_done(p), 0);
    apitest_ctl(&api, "POST", "/_test/objects", two_webhooks);
    wait_done(p);
    cabundle_stop(p);
    assert_bundles(pcfg.ca_pem);
    k8s_client_destroy(kc);
}
END_TEST

/* Stop while it keeps failing: returns (no hang), never done. */
START_TEST(test_patcher_stop_while_retrying)
{
    struct k8s_client *kc = apitest_client(&api);
    struct cabundle_config pcfg = {"vpw-test", "x", 20, 60000, 5000};
    struct cabundle_patcher *p = NULL;
    struct wh_error err = {0, ""};

    ck_assert_int_eq(cabundle_start(&p, kc, &pcfg, NULL), 0);
    while (apitest_count(&api, "GET", MWC_PATH) < 3)
        apitest_nap(20);
    ck_assert_int_eq(cabundle_done(p), 0);
    cabundle_stop(p);
    cabundle_stop(NULL);
    /* bad configs */
    pcfg.webhook_config = "";
    ck_assert_int_eq(cabundle_start(&p, kc, &pcfg, &err), WH_EINVAL);
    ck_assert_ptr_null(p);
    pcfg.webhook_config = "x";
    pcfg.ca_pem = NULL;
    ck_assert_int_eq(cabundle_start(&p, kc, &pcfg, &err), WH_EINVAL);
    k8s_client_destroy(kc);
}
END_TEST

static Suite *cabundle_suite(void)
{
    Suite *s = suite_create("cabundle");
    TCase *build = tcase_create("build");
    TCase *patch = tcase_create("patch");

    tcase_add_test(build, test_patch_build);
    tcase_add_checked_fixture(patch, api_setup, api_teardown);
    tcase_set_timeout(patch, 60);
    tcase_add_test(patch, test_patcher_retries);
    tcase_add_test(patch, test_patcher_waits_for_config);
    tcase_add_test(patch, test_patcher_stop_while_retrying);
    suite_add_tcase(s, build);
    suite_add_tcase(s, patch);
    return s;
}

int main(void)
{
    return tu_run(cabundle_suite());
}
