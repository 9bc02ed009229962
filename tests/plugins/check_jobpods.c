/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_jobpods.c - the pods `render` builds as Volcano's job controller would
 * (plugins/jobpods.h, docs/plugins.md §1.2, §2.2-2.4): every label, annotation, the
 * ownerReference, the spec adjustments and the Job completion, as exact JSON.
 */
#include <check.h>
#include <stdlib.h>

#include "base/error.h"
#include "plugins/jobpods.h"
#include "tests/testutil.h"

/* A Job with every field the controller copies onto a pod. The volume's suffix is
 * SHA-1("c1")'s first 12 bytes mod 36 over [0-9a-z] (byal43q7t9kk); the second entry
 * with claim c1 is skipped, and one without a claim name is not mounted. */
static const char *const full_job =
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
    " \"metadata\":{\"name\":\"j\",\"namespace\":\"ns1\",\"uid\":\"u-1\","
    "  \"labels\":{\"volcano.sh/preemptable\":\"true\",\"volcano.sh/revocable-zone\":\"z\","
    "             \"team\":\"a\"},"
    "  \"annotations\":{\"volcano.sh/preemptable\":\"false\",\"volcano.sh/cooldown-time\":\"60s\","
    "                  \"volcano.sh/revocable-zone\":\"rz\",\"volcano.sh/jdb-min-available\":\"2\","
    "                  \"volcano.sh/jdb-max-unavailable\":\"1\",\"other\":\"x\"}},"
    " \"spec\":{\"queue\":\"q1\",\"schedulerName\":\"volcano\",\"priorityClassName\":\"high\","
    "  \"volumes\":[{\"mountPath\":\"/data\",\"volumeClaimName\":\"c1\"},"
    "              {\"mountPath\":\"/again\",\"volumeClaimName\":\"c1\"},"
    "              {\"mountPath\":\"/nameless\"}],"
    "  \"tasks\":[{\"name\":\"w\",\"replicas\":5,\"topologyPolicy\":\"best-effort\","
    "   \"partitionPolicy\":{\"partitionSize\":2},"
    "   \"template\":{\"metadata\":{\"labels\":{\"app\":\"t\",\"volcano.sh/task-index\":\"9\"},"
    "                              \"annotations\":{\"note\":\"n\"}},"
    "                 \"spec\":{\"schedulerName\":\"mine\","
    "                          \"initContainers\":[{\"name\":\"i\",\"image\":\"busybox\"}],"
    "                          \"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}]},"
    " \"status\":{\"version\":3,\"retryCount\":1}}";

START_TEST(test_every_controller_key)
{
    json_t *job = tu_json(full_job);
    json_t *task = json_array_get(json_object_get(json_object_get(job, "spec"), "tasks"), 0);
    json_t *pod = jobpods_build(job, task, 3);

    ck_assert_ptr_nonnull(pod);
    tu_assert_json_eq(
        pod,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
        " \"metadata\":{\"name\":\"j-w-3\",\"namespace\":\"ns1\","
        "  \"labels\":{\"app\":\"t\",\"volcano.sh/task-index\":\"3\",\"volcano.sh/job-name\":\"j\","
        "   \"volcano.sh/task-spec\":\"w\",\"volcano.sh/job-namespace\":\"ns1\","
        "   \"volcano.sh/queue-name\":\"q1\",\"volcano.sh/preemptable\":\"true\","
        "   \"volcano.sh/partition-id\":\"1\"},"
        "  \"annotations\":{\"note\":\"n\",\"volcano.sh/task-index\":\"3\","
        "   \"volcano.sh/task-spec\":\"w\",\"scheduling.k8s.io/group-name\":\"j-u-1\","
        "   \"volcano.sh/job-name\":\"j\",\"volcano.sh/queue-name\":\"q1\","
        "   \"volcano.sh/job-version\":\"3\",\"volcano.sh/template-uid\":\"j-w\","
        "   \"volcano.sh/job-retry-count\":\"1\","
        "   \"volcano.sh/numa-topology-policy\":\"best-effort\","
        "   \"volcano.sh/preemptable\":\"false\",\"volcano.sh/cooldown-time\":\"60s\","
        "   \"volcano.sh/revocable-zone\":\"rz\",\"volcano.sh/jdb-min-available\":\"2\"},"
        "  \"ownerReferences\":[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
        "   \"name\":\"j\",\"uid\":\"u-1\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
        " \"spec\":{\"schedulerName\":\"mine\","
        "  \"initContainers\":[{\"name\":\"i\",\"image\":\"busybox\"}],"
        "  \"containers\":[{\"name\":\"c\",\"image\":\"busybox\","
        "   \"volumeMounts\":[{\"name\":\"j-byal43q7t9kk\",\"mountPath\":\"/data\"}]}],"
        "  \"priorityClassName\":\"high\","
        "  \"volumes\":[{\"name\":\"j-byal43q7t9kk\","
        "   \"persistentVolumeClaim\":{\"claimName\":\"c1\"}}]}}");
    json_decref(pod);
    json_decref(job);
}
END_TEST

/* The least a Job can have: task named "default", no queue, scheduler from the Job,
 * jdb-max-unavailable when there is no min-available, partitionSize 0 → partition 0. */
START_TEST(test_bare_task)
{
    json_t *job =
        tu_json("{\"metadata\":{\"name\":\"b\",\"namespace\":\"n\",\"uid\":\"u\","
                "  \"annotations\":{\"volcano.sh/jdb-max-unavailable\":\"25%\"}},"
                " \"spec\":{\"schedulerName\":\"volcano\","
                "  \"tasks\":[{\"replicas\":1,\"partitionPolicy\":{\"partitionSize\":0}}]}}");
    json_t *task = json_array_get(json_object_get(json_object_get(job, "spec"), "tasks"), 0);
    json_t *pod = jobpods_build(job, task, 0);

    ck_assert_ptr_nonnull(pod);
    tu_assert_json_eq(
        pod,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
        " \"metadata\":{\"name\":\"b-default-0\",\"namespace\":\"n\","
        "  \"labels\":{\"volcano.sh/task-index\":\"0\",\"volcano.sh/job-name\":\"b\","
        "   \"volcano.sh/task-spec\":\"default\",\"volcano.sh/job-namespace\":\"n\","
        "   \"volcano.sh/queue-name\":\"\",\"volcano.sh/partition-id\":\"0\"},"
        "  \"annotations\":{\"volcano.sh/task-index\":\"0\",\"volcano.sh/task-spec\":\"default\","
        "   \"scheduling.k8s.io/group-name\":\"b-u\",\"volcano.sh/job-name\":\"b\","
        "   \"volcano.sh/queue-name\":\"\",\"volcano.sh/job-version\":\"0\","
        "   \"volcano.sh/template-uid\":\"b-default\",\"volcano.sh/job-retry-count\":\"0\","
        "   \"volcano.sh/jdb-max-unavailable\":\"25%\"},"
        "  \"ownerReferences\":[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
        "   \"name\":\"b\",\"uid\":\"u\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
        " \"spec\":{\"schedulerName\":\"volcano\"}}");
    json_decref(pod);
    json_decref(job);
}
END_TEST

/* A Job from a file: namespace, queue and a stable uid filled in (a UUID version 5
 * layout of SHA-1("team/f"), as computed by Python's hashlib); what is set is kept. */
START_TEST(test_complete_job)
{
    json_t *job = tu_json("{\"metadata\":{\"name\":\"f\"},\"spec\":{\"tasks\":[]}}");
    json_t *set = tu_json("{\"metadata\":{\"name\":\"f\",\"namespace\":\"x\",\"uid\":\"u\"},"
                          " \"spec\":{\"queue\":\"q\"}}");
    json_t *bad = json_array();

    ck_assert_int_eq(jobpods_complete_job(job, "team"), 0);
    tu_assert_json_eq(job,
                      "{\"metadata\":{\"name\":\"f\",\"namespace\":\"team\","
                      "  \"uid\":\"8e41aa3f-d081-57b3-9ac4-548e0b778c2c\"},"
                      " \"spec\":{\"tasks\":[],\"queue\":\"default\"}}");
    ck_assert_int_eq(jobpods_complete_job(set, "team"), 0);
    tu_assert_json_eq(set,
                      "{\"metadata\":{\"name\":\"f\",\"namespace\":\"x\",\"uid\":\"u\"},"
                      " \"spec\":{\"queue\":\"q\"}}");
    ck_assert_int_eq(jobpods_complete_job(bad, "team"), WH_EINVAL);
    json_decref(job);
    json_decref(set);
    json_decref(bad);
}
END_TEST

static Suite *jobpods_suite(void)
{
    Suite *s = suite_create("jobpods");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_every_controller_key);
    tcase_add_test(tc, test_bare_task);
    tcase_add_test(tc, test_complete_job);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(jobpods_suite());
}
