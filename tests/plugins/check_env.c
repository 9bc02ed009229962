/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_env.c - the env plugin's pod side (docs/plugins.md §4.1, D5, D6).
 */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugin.h"
#include "tests/plugincase.h"

#define P (&plugin_env)

static const char *const JOB =
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
    " \"metadata\":{\"name\":\"job1\",\"namespace\":\"ns1\",\"uid\":\"u1\"},"
    " \"spec\":{\"plugins\":{\"env\":[]},"
    "  \"tasks\":[{\"name\":\"worker\",\"replicas\":4,\"template\":{\"spec\":{}}}]}}";

static const struct plugin_pod_info POD3 = {"job1-worker-3", "ns1", "worker", "3"};

START_TEST(containers_then_init_containers)
{
    pc_ok_args(P, JOB, "[]", &POD3,
               "{\"metadata\":{\"name\":\"job1-worker-3\"},"
               " \"spec\":{\"initContainers\":[{\"name\":\"i1\"}],"
               "  \"containers\":[{\"name\":\"c1\",\"env\":[{\"name\":\"A\",\"value\":\"a\"}]},"
               "                 {\"name\":\"c2\"}]}}",
               "{\"metadata\":{\"name\":\"job1-worker-3\"},"
               " \"spec\":{\"initContainers\":[{\"name\":\"i1\",\"env\":["
               "    "
               "{\"name\":\"VK_TASK_INDEX\",\"value\":\"3\"},{\"name\":\"VC_TASK_INDEX\",\"value\":"
               "\"3\"}]}],"
               "  \"containers\":[{\"name\":\"c1\",\"env\":[{\"name\":\"A\",\"value\":\"a\"},"
               "    "
               "{\"name\":\"VK_TASK_INDEX\",\"value\":\"3\"},{\"name\":\"VC_TASK_INDEX\",\"value\":"
               "\"3\"}]},"
               "                 {\"name\":\"c2\",\"env\":["
               "    "
               "{\"name\":\"VK_TASK_INDEX\",\"value\":\"3\"},{\"name\":\"VC_TASK_INDEX\",\"value\":"
               "\"3\"}]}]}}",
               "[]");
}
END_TEST

/* docs/plugins.md §2.1: a name with fewer than two dashes gives the index "" (the framework's). */
START_TEST(short_name_gives_empty_index)
{
    const struct plugin_pod_info info = {"job1-x", "ns1", "default", ""};

    pc_ok_args(
        P, JOB, NULL, &info,
        "{\"metadata\":{\"name\":\"job1-x\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
        "{\"metadata\":{\"name\":\"job1-x\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":["
        "  "
        "{\"name\":\"VK_TASK_INDEX\",\"value\":\"\"},{\"name\":\"VC_TASK_INDEX\",\"value\":\"\"}]}]"
        "}}",
        "[]");
}
END_TEST

/* docs/plugins.md §4.1: env never parses its arguments, so even garbage gives no warning. */
START_TEST(arguments_ignored_without_warning)
{
    pc_ok_args(P, JOB, "[\"--bogus\", \"---x\", \"--port=abc\"]", &POD3,
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":["
               "  "
               "{\"name\":\"VK_TASK_INDEX\",\"value\":\"3\"},{\"name\":\"VC_TASK_INDEX\",\"value\":"
               "\"3\"}]}]}}",
               "[]");
}
END_TEST

/* D5: another value is replaced in place, keeping the entries around it, and told (D16). */
START_TEST(existing_other_value_replaced_in_place)
{
    pc_ok_args(P, JOB, NULL, &POD3,
               "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":["
               "  {\"name\":\"A\",\"value\":\"1\"},"
               "  {\"name\":\"VK_TASK_INDEX\",\"value\":\"9\"},"
               "  {\"name\":\"B\",\"value\":\"2\"}]}]}}",
               "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":["
               "  {\"name\":\"A\",\"value\":\"1\"},"
               "  {\"name\":\"VK_TASK_INDEX\",\"value\":\"3\"},"
               "  {\"name\":\"B\",\"value\":\"2\"},"
               "  {\"name\":\"VC_TASK_INDEX\",\"value\":\"3\"}]}]}}",
               "[\"env plugin: container \\\"c\\\" sets VK_TASK_INDEX=\\\"9\\\", replaced by "
               "\\\"3\\\": the plugin sets it, drop it from the pod template\"]");
}
END_TEST

/* D5: a variable defined through valueFrom is a different entry: replaced whole. */
START_TEST(existing_value_from_replaced)
{
    pc_ok_args(P, JOB, NULL, &POD3,
               "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":["
               "  "
               "{\"name\":\"VC_TASK_INDEX\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata."
               "name\"}}}]}]}}",
               "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":["
               "  {\"name\":\"VC_TASK_INDEX\",\"value\":\"3\"},"
               "  {\"name\":\"VK_TASK_INDEX\",\"value\":\"3\"}]}]}}",
               "[\"env plugin: container \\\"c\\\" sets VC_TASK_INDEX=valueFrom.fieldRef, replaced "
               "by \\\"3\\\": the plugin sets it, drop it from the pod template\"]");
}
END_TEST

/* D5: same values already there (as Volcano's controller would leave them) -> no change. */
START_TEST(existing_same_value_unchanged)
{
    static const char *const pod = "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":["
                                   "  {\"name\":\"VC_TASK_INDEX\",\"value\":\"3\"},"
                                   "  {\"name\":\"X\",\"value\":\"x\"},"
                                   "  {\"name\":\"VK_TASK_INDEX\",\"value\":\"3\"}]}],"
                                   " \"initContainers\":[{\"name\":\"i\",\"env\":["
                                   "  "
                                   "{\"name\":\"VK_TASK_INDEX\",\"value\":\"3\"},{\"name\":\"VC_"
                                   "TASK_INDEX\",\"value\":\"3\"}]}]}}";

    pc_ok_args(P, JOB, NULL, &POD3, pod, pod, "[]");
}
END_TEST

/* D5: the API server drops `value: ""`; an entry without value is identical to "". */
START_TEST(empty_value_stored_without_value_unchanged)
{
    const struct plugin_pod_info info = {"job1", "ns1", "default", ""};
    static const char *const pod =
        "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":["
        "  {\"name\":\"VK_TASK_INDEX\"},{\"name\":\"VC_TASK_INDEX\"}]}]}}";

    pc_ok_args(P, JOB, NULL, &info, pod, pod, "[]");
}
END_TEST

START_TEST(pod_without_containers_unchanged)
{
    pc_ok_args(P, JOB, NULL, &POD3, "{\"metadata\":{},\"spec\":{}}",
               "{\"metadata\":{},\"spec\":{}}", "[]");
    pc_ok_args(P, JOB, NULL, &POD3, "{}", "{}", "[]");
}
END_TEST

START_TEST(allocation_failures)
{
    pc_chaos_args(
        P, JOB, NULL, &POD3,
        "{\"spec\":{\"containers\":[{\"name\":\"c\"}],\"initContainers\":[{\"name\":\"i\"}]}}",
        "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":["
        "  "
        "{\"name\":\"VK_TASK_INDEX\",\"value\":\"3\"},{\"name\":\"VC_TASK_INDEX\",\"value\":\"3\"}]"
        "}],"
        " \"initContainers\":[{\"name\":\"i\",\"env\":["
        "  "
        "{\"name\":\"VK_TASK_INDEX\",\"value\":\"3\"},{\"name\":\"VC_TASK_INDEX\",\"value\":\"3\"}]"
        "}]}}");
}
END_TEST

START_TEST(malformed_container_is_an_error)
{
    json_t *job = tu_json(JOB);
    json_t *pod = tu_json("{\"spec\":{\"containers\":[{\"name\":\"c\"}],"
                          "\"initContainers\":[{\"name\":\"i\",\"env\":{}}]}}");
    json_t *pod2 = tu_json("{\"spec\":{\"containers\":[\"c\"]}}");
    struct wh_error err = {0, ""};
    struct plugin_ctx c = {.name = "env", .job = job, .args = NULL, .pod = &POD3};

    ck_assert_int_eq(pc_call(P, &c, pod, &err), WH_EINVAL);
    ck_assert_int_eq(err.code, WH_EINVAL);
    ck_assert_str_eq(err.msg,
                     "cannot set env VK_TASK_INDEX in "
                     "spec.initContainers[0]: malformed container");
    ck_assert_int_eq(pc_call(P, &c, pod2, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg,
                     "cannot set env VK_TASK_INDEX in "
                     "spec.containers[0]: malformed container");
    json_decref(pod2);
    json_decref(pod);
    json_decref(job);
}
END_TEST

START_TEST(plugin_table)
{
    pc_assert_entry(P, "env", false);
}
END_TEST

static Suite *env_suite(void)
{
    Suite *s = suite_create("plugin_env");
    TCase *tc = tcase_create("on_pod_create");

    tcase_add_test(tc, containers_then_init_containers);
    tcase_add_test(tc, short_name_gives_empty_index);
    tcase_add_test(tc, arguments_ignored_without_warning);
    tcase_add_test(tc, existing_other_value_replaced_in_place);
    tcase_add_test(tc, existing_value_from_replaced);
    tcase_add_test(tc, existing_same_value_unchanged);
    tcase_add_test(tc, empty_value_stored_without_value_unchanged);
    tcase_add_test(tc, pod_without_containers_unchanged);
    tcase_add_test(tc, malformed_container_is_an_error);
    tcase_add_test(tc, allocation_failures);
    tcase_add_test(tc, plugin_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(env_suite());
}
