/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_svc.c - the svc plugin's pod side (docs/plugins.md §4.2, §8 #6/#16/#17, D4, D5, D14)
 * and svc_configmap_data (plugins/svc.h).
 */
/* The cases are JSON in adjacent string literals and macros, laid out by hand (one
 * container or field a line); clang-format would break them apart. */
/* clang-format off */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugin.h"
#include "plugins/svc.h"
#include "tests/plugincase.h"

#define P (&plugin_svc)

/* From examples/mpi-job.yaml (plugins ssh + svc). */
static const char *const JOB =
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
    " \"metadata\":{\"name\":\"mpi-job\",\"namespace\":\"default\",\"uid\":\"u1\"},"
    " \"spec\":{\"plugins\":{\"ssh\":[],\"svc\":[]},"
    "  \"tasks\":[{\"name\":\"mpimaster\",\"replicas\":1,\"template\":{\"spec\":{}}},"
    "            {\"name\":\"mpiworker\",\"replicas\":2,\"template\":{\"spec\":{}}}]}}";

static const struct plugin_pod_info POD = {"mpi-job-mpiworker-1", "default", "mpiworker", "1"};

#define REF(n) "{\"name\":\"" n "\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"mpi-job-svc\",\"key\":\"" n "\"}}}"
#define REFS REF("VC_MPIMASTER_HOSTS") "," REF("VC_MPIMASTER_NUM") "," \
             REF("VC_MPIWORKER_HOSTS") "," REF("VC_MPIWORKER_NUM")
#define VOLUME "{\"name\":\"mpi-job-svc\",\"configMap\":{\"name\":\"mpi-job-svc\"}}"
#define MOUNT "{\"name\":\"mpi-job-svc\",\"mountPath\":\"/etc/volcano\"}"

START_TEST(full_pod)
{
    pc_ok_args(P, JOB, "[]", &POD,
               "{\"metadata\":{\"name\":\"mpi-job-mpiworker-1\"},"
               " \"spec\":{\"initContainers\":[{\"name\":\"init\"}],"
               "  \"containers\":[{\"name\":\"w\",\"env\":[{\"name\":\"A\",\"value\":\"a\"}],"
               "                   \"volumeMounts\":[{\"name\":\"d\",\"mountPath\":\"/d\"}]},"
               "                  {\"name\":\"side\"}]}}",
               "{\"metadata\":{\"name\":\"mpi-job-mpiworker-1\"},"
               " \"spec\":{\"hostname\":\"mpi-job-mpiworker-1\",\"subdomain\":\"mpi-job\","
               "  \"volumes\":[" VOLUME "],"
               "  \"initContainers\":[{\"name\":\"init\",\"env\":[" REFS "],\"volumeMounts\":[" MOUNT "]}],"
               "  \"containers\":[{\"name\":\"w\",\"env\":[{\"name\":\"A\",\"value\":\"a\"}," REFS "],"
               "                   \"volumeMounts\":[{\"name\":\"d\",\"mountPath\":\"/d\"}," MOUNT "]},"
               "                  {\"name\":\"side\",\"env\":[" REFS "],\"volumeMounts\":[" MOUNT "]}]}}",
               "[]");
}
END_TEST

/* Hostname and subdomain are set only when empty: template values stay; "" counts as empty. */
START_TEST(template_names_kept)
{
    pc_ok_args(P, JOB, NULL, &POD,
               "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"s\",\"containers\":[]}}",
               "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"s\",\"containers\":[],"
               "  \"volumes\":[" VOLUME "]}}",
               "[]");
    pc_ok_args(P, JOB, NULL, &POD,
               "{\"spec\":{\"hostname\":\"\",\"subdomain\":\"s\"}}",
               "{\"spec\":{\"hostname\":\"mpi-job-mpiworker-1\",\"subdomain\":\"s\","
               "  \"volumes\":[" VOLUME "]}}",
               "[]");
    pc_ok_args(P, JOB, NULL, &POD,
               "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"\"}}",
               "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"mpi-job\",\"volumes\":[" VOLUME "]}}",
               "[]");
}
END_TEST

/* D14: a generateName pod has no name: hostname stays unset, subdomain is set, one warning. */
START_TEST(pod_without_name)
{
    const struct plugin_pod_info info = {"", "default", "mpiworker", "1"};

    pc_ok_args(P, JOB, "[]", &info,
               "{\"metadata\":{\"generateName\":\"mpi-job-mpiworker-\"},"
               " \"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"metadata\":{\"generateName\":\"mpi-job-mpiworker-\"},"
               " \"spec\":{\"subdomain\":\"mpi-job\",\"volumes\":[" VOLUME "],"
               "  \"containers\":[{\"name\":\"c\",\"env\":[" REFS "],\"volumeMounts\":[" MOUNT "]}]}}",
               "[\"svc plugin: pod has no name (generateName), spec.hostname left unset\"]");
    /* A template hostname needs no pod name: no warning. */
    pc_ok_args(P, JOB, "[]", &info,
               "{\"spec\":{\"hostname\":\"h\"}}",
               "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"mpi-job\",\"volumes\":[" VOLUME "]}}",
               "[]");
}
END_TEST

/* --inject-hosts-env=false: no env, but the volume and mounts are still there (docs/plugins.md
 * §4.2). */
START_TEST(inject_hosts_env_false)
{
    pc_ok_args(P, JOB, "[\"--inject-hosts-env=false\"]", &POD,
               "{\"metadata\":{\"name\":\"mpi-job-mpiworker-1\"},"
               " \"spec\":{\"containers\":[{\"name\":\"c\"}],\"initContainers\":[{\"name\":\"i\"}]}}",
               "{\"metadata\":{\"name\":\"mpi-job-mpiworker-1\"},"
               " \"spec\":{\"hostname\":\"mpi-job-mpiworker-1\",\"subdomain\":\"mpi-job\","
               "  \"volumes\":[" VOLUME "],"
               "  \"containers\":[{\"name\":\"c\",\"volumeMounts\":[" MOUNT "]}],"
               "  \"initContainers\":[{\"name\":\"i\",\"volumeMounts\":[" MOUNT "]}]}}",
               "[]");
    /* The other two flags are accepted and change nothing on the pod. */
    pc_ok_args(P, JOB, "[\"--publish-not-ready-addresses\", \"--disable-network-policy=true\"]", &POD,
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"hostname\":\"mpi-job-mpiworker-1\",\"subdomain\":\"mpi-job\","
               "  \"volumes\":[" VOLUME "],"
               "  \"containers\":[{\"name\":\"c\",\"env\":[" REFS "],\"volumeMounts\":[" MOUNT "]}]}}",
               "[]");
}
END_TEST

/* D4 + §3.4 rule 7: a bad boolean spelling sets the flag to false and is one warning. */
START_TEST(bad_boolean_warns)
{
    pc_ok_args(P, JOB, "[\"--inject-hosts-env=yes\", \"--inject-hosts-env=true\"]", &POD,
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"hostname\":\"mpi-job-mpiworker-1\",\"subdomain\":\"mpi-job\","
               "  \"volumes\":[" VOLUME "],"
               "  \"containers\":[{\"name\":\"c\",\"volumeMounts\":[" MOUNT "]}]}}",
               "[\"svc plugin: invalid boolean value \\\"yes\\\" for -inject-hosts-env: parse error, "
               "later arguments ignored\"]");
}
END_TEST

/* docs/plugins.md §8 #17: dashes in task names become underscores in the env names. */
START_TEST(dashes_in_task_names)
{
    pc_ok_args(P, "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":["
               "  {\"name\":\"mpi-worker\",\"replicas\":2},{\"name\":\"ps\",\"replicas\":0}]}}",
               NULL, &POD,
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"hostname\":\"mpi-job-mpiworker-1\",\"subdomain\":\"j\","
               "  \"volumes\":[{\"name\":\"j-svc\",\"configMap\":{\"name\":\"j-svc\"}}],"
               "  \"containers\":[{\"name\":\"c\",\"env\":["
               "   {\"name\":\"VC_MPI_WORKER_HOSTS\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"j-svc\",\"key\":\"VC_MPI_WORKER_HOSTS\"}}},"
               "   {\"name\":\"VC_MPI_WORKER_NUM\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"j-svc\",\"key\":\"VC_MPI_WORKER_NUM\"}}},"
               "   {\"name\":\"VC_PS_HOSTS\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"j-svc\",\"key\":\"VC_PS_HOSTS\"}}},"
               "   {\"name\":\"VC_PS_NUM\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"j-svc\",\"key\":\"VC_PS_NUM\"}}}],"
               "   \"volumeMounts\":[{\"name\":\"j-svc\",\"mountPath\":\"/etc/volcano\"}]}]}}",
               "[]");
}
END_TEST

/* D5: a pod already mutated (by Volcano, then API-defaulted) is left as it is. */
START_TEST(already_mutated_with_api_defaults_unchanged)
{
    static const char *const pod =
        "{\"metadata\":{\"name\":\"mpi-job-mpiworker-1\"},"
        " \"spec\":{\"hostname\":\"mpi-job-mpiworker-1\",\"subdomain\":\"mpi-job\","
        "  \"volumes\":[{\"name\":\"kube-api-access-x\",\"projected\":{}},"
        "   {\"name\":\"mpi-job-svc\",\"configMap\":{\"name\":\"mpi-job-svc\",\"defaultMode\":420}}],"
        "  \"containers\":[{\"name\":\"c\",\"env\":[" REFS "],"
        "   \"volumeMounts\":[{\"name\":\"mpi-job-svc\",\"mountPath\":\"/etc/volcano\",\"readOnly\":false}]}]}}";

    pc_ok_args(P, JOB, "[]", &POD, pod, pod, "[]");
}
END_TEST

/* D5: the plugin's own entries (its ConfigMap, its volume at /etc/volcano) with extra fields
 * are identical and kept as they are; a user's env value replaced is told. */
START_TEST(different_entries_replaced_in_place)
{
    pc_ok_args(P, JOB, "[\"--inject-hosts-env=false\"]", &POD,
               "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"s\","
               "  \"volumes\":[{\"name\":\"mpi-job-svc\",\"configMap\":{\"name\":\"mpi-job-svc\","
               "   \"items\":[{\"key\":\"k\",\"path\":\"p\"}]}},{\"name\":\"z\"}],"
               "  \"containers\":[{\"name\":\"c\",\"volumeMounts\":["
               "   {\"name\":\"mpi-job-svc\",\"mountPath\":\"/etc/volcano\",\"subPath\":\"x\"},"
               "   {\"name\":\"z\",\"mountPath\":\"/z\"}]}]}}",
               "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"s\","
               "  \"volumes\":[{\"name\":\"mpi-job-svc\",\"configMap\":{\"name\":\"mpi-job-svc\","
               "   \"items\":[{\"key\":\"k\",\"path\":\"p\"}]}},{\"name\":\"z\"}],"
               "  \"containers\":[{\"name\":\"c\",\"volumeMounts\":["
               "   {\"name\":\"mpi-job-svc\",\"mountPath\":\"/etc/volcano\",\"subPath\":\"x\"},"
               "   {\"name\":\"z\",\"mountPath\":\"/z\"}]}]}}",
               "[]");
    /* An env entry of that name with a literal value becomes the reference, with a warning. */
    pc_ok_args(P, "{\"metadata\":{\"name\":\"mpi-job\"},\"spec\":{\"tasks\":[{\"name\":\"mpimaster\"}]}}",
               NULL, &POD,
               "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"s\",\"containers\":[{\"name\":\"c\",\"env\":["
               "  {\"name\":\"VC_MPIMASTER_NUM\",\"value\":\"1\"},{\"name\":\"B\"}]}]}}",
               "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"s\",\"volumes\":[" VOLUME "],"
               "  \"containers\":[{\"name\":\"c\",\"env\":["
               REF("VC_MPIMASTER_NUM") ",{\"name\":\"B\"}," REF("VC_MPIMASTER_HOSTS") "],"
               "  \"volumeMounts\":[" MOUNT "]}]}}",
               "[\"svc plugin: container \\\"c\\\" sets VC_MPIMASTER_NUM=\\\"1\\\", replaced by "
               "valueFrom.configMapKeyRef mpi-job-svc/VC_MPIMASTER_NUM: the plugin sets it, drop it "
               "from the pod template\"]");
}
END_TEST

/* D5: a user's volume named J-svc (an emptyDir, another ConfigMap), or a user's volume at
 * /etc/volcano, is a conflict: never turned into the plugin's read-only ConfigMap. */
START_TEST(user_entries_are_conflicts)
{
    pc_err_rc(P, JOB, &POD,
              "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"s\","
              "  \"volumes\":[{\"name\":\"mpi-job-svc\",\"emptyDir\":{}}],"
              "  \"containers\":[{\"name\":\"c\"}]}}",
              WH_ECONFLICT,
              "volume \"mpi-job-svc\" is your emptyDir, and the plugin needs that name for its "
              "ConfigMap \"mpi-job-svc\": rename yours or remove the plugin (Volcano would add a "
              "second one, which the API server refuses)",
              "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"s\","
              "  \"volumes\":[{\"name\":\"mpi-job-svc\",\"emptyDir\":{}}],"
              "  \"containers\":[{\"name\":\"c\",\"env\":[" REFS "]}]}}",
              "[]");
    pc_err_rc(P, JOB, &POD,
              "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"s\","
              "  \"volumes\":[{\"name\":\"mpi-job-svc\",\"configMap\":{\"name\":\"other\"}}]}}",
              WH_ECONFLICT,
              "volume \"mpi-job-svc\" is your ConfigMap \"other\", and the plugin needs that name "
              "for its ConfigMap \"mpi-job-svc\": rename yours or remove the plugin (Volcano "
              "would add a second one, which the API server refuses)",
              NULL, "[]");
    pc_err_rc(P, JOB, &POD,
              "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"s\",\"containers\":[{\"name\":\"c\","
              "  \"env\":[" REFS "],\"volumeMounts\":[{\"name\":\"cfg\",\"mountPath\":\"/etc/volcano\"}]}]}}",
              WH_ECONFLICT,
              "container \"c\" mounts your volume \"cfg\" at /etc/volcano, where the plugin mounts "
              "\"mpi-job-svc\": mount yours elsewhere or remove the plugin (Volcano would add a "
              "second mount there, which the API server refuses; replacing yours would lose it)",
              "{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"s\",\"volumes\":[" VOLUME "],"
              "  \"containers\":[{\"name\":\"c\","
              "  \"env\":[" REFS "],\"volumeMounts\":[{\"name\":\"cfg\",\"mountPath\":\"/etc/volcano\"}]}]}}",
              "[]");
}
END_TEST

START_TEST(allocation_failures)
{
    pc_chaos_args(P, JOB, "[]", &POD,
                  "{\"spec\":{\"containers\":[{\"name\":\"c\"}],\"initContainers\":[{\"name\":\"i\"}]}}",
                  "{\"spec\":{\"hostname\":\"mpi-job-mpiworker-1\",\"subdomain\":\"mpi-job\","
                  "  \"volumes\":[" VOLUME "],"
                  "  \"containers\":[{\"name\":\"c\",\"env\":[" REFS "],\"volumeMounts\":[" MOUNT "]}],"
                  "  \"initContainers\":[{\"name\":\"i\",\"env\":[" REFS "],\"volumeMounts\":[" MOUNT "]}]}}");
}
END_TEST

/* A host list past JOB_HOSTS_MAX_BYTES: WH_ETOOBIG, nothing returned. */
START_TEST(configmap_data_too_large)
{
    json_t *job = tu_json("{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":["
                          " {\"name\":\"w\",\"replicas\":200000}]}}");
    json_t *data = json_object();   /* overwritten with NULL */

    json_decref(data);
    ck_assert_int_eq(svc_configmap_data(job, &data), WH_ETOOBIG);
    ck_assert_ptr_null(data);
    json_decref(job);
}
END_TEST

/* svc_configmap_data under allocation failures: WH_ENOMEM or the exact data, never a leak. */
START_TEST(configmap_data_allocation_failures)
{
    json_t *job = tu_json(JOB);
    json_t *data = NULL;
    long n;

    for (n = 0; n < 100000 && data == NULL; n++) {
        pc_alloc_fail_nth(n);
        ck_assert_int_eq(svc_configmap_data(job, &data), data != NULL ? 0 : WH_ENOMEM);
        pc_alloc_restore();
    }
    ck_assert_ptr_nonnull(data);
    ck_assert_int_gt(n, 1);
    ck_assert_uint_eq(json_object_size(data), 6);
    ck_assert_str_eq(json_string_value(json_object_get(data, "VC_MPIWORKER_HOSTS")),
                     "mpi-job-mpiworker-0.mpi-job,mpi-job-mpiworker-1.mpi-job");
    json_decref(data);
    json_decref(job);
}
END_TEST

START_TEST(malformed_pod_is_an_error)
{
    json_t *job = tu_json(JOB);
    json_t *nospec = tu_json("{\"metadata\":{}}");
    json_t *badenv = tu_json("{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":\"x\"}]}}");
    json_t *badmount = tu_json("{\"spec\":{\"initContainers\":[{\"name\":\"c\",\"volumeMounts\":1}]}}");
    json_t *badctr = tu_json("{\"spec\":{\"containers\":[1]}}");
    json_t *noenv = tu_json("[\"--inject-hosts-env=false\"]");
    struct wh_error err = {0, ""};
    struct plugin_ctx c = {.name = "svc", .job = job, .args = NULL, .pod = &POD};

    ck_assert_int_eq(pc_call(P, &c, nospec, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "pod has no spec object");
    ck_assert_int_eq(pc_call(P, &c, badenv, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "cannot set env VC_MPIMASTER_HOSTS in spec.containers[0]: "
                              "malformed container");
    ck_assert_int_eq(pc_call(P, &c, badmount, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "cannot mount /etc/volcano in spec.initContainers[0]: "
                              "malformed container");
    /* no env to set: the container is the mount's to name, not an env entry's */
    c.args = noenv;
    ck_assert_int_eq(pc_call(P, &c, badctr, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "cannot mount /etc/volcano in spec.containers[0]: "
                              "malformed container");
    json_decref(badctr);
    json_decref(noenv);
    json_decref(badmount);
    json_decref(badenv);
    json_decref(nospec);
    json_decref(job);
}
END_TEST

START_TEST(plugin_table)
{
    /* job hooks: tests/plugins/check_jobhooks.c */
    pc_assert_entry(P, "svc", true);
}
END_TEST

static void assert_data(const char *job_text, const char *want)
{
    json_t *job = tu_json(job_text);
    json_t *data = NULL;

    ck_assert_int_eq(svc_configmap_data(job, &data), 0);
    tu_assert_json_eq(data, want);
    json_decref(data);
    json_decref(job);
}

/* docs/plugins.md §4.2 ConfigMap data for examples/mpi-job.yaml. */
START_TEST(configmap_data_example)
{
    assert_data(JOB,
                "{\"mpimaster.host\":\"mpi-job-mpimaster-0.mpi-job\","
                " \"VC_MPIMASTER_HOSTS\":\"mpi-job-mpimaster-0.mpi-job\","
                " \"VC_MPIMASTER_NUM\":\"1\","
                " \"mpiworker.host\":\"mpi-job-mpiworker-0.mpi-job\\nmpi-job-mpiworker-1.mpi-job\","
                " \"VC_MPIWORKER_HOSTS\":\"mpi-job-mpiworker-0.mpi-job,mpi-job-mpiworker-1.mpi-job\","
                " \"VC_MPIWORKER_NUM\":\"2\"}");
}
END_TEST

/* Template hostname: one entry, NUM 1; template subdomain replaces J; 0 replicas; US/UP keys. */
START_TEST(configmap_data_edge_cases)
{
    assert_data("{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":["
                " {\"name\":\"Mpi-Worker\",\"replicas\":3,"
                "  \"template\":{\"spec\":{\"hostname\":\"h\",\"subdomain\":\"sd\"}}},"
                " {\"name\":\"ps\",\"replicas\":2,\"template\":{\"spec\":{\"subdomain\":\"sd\"}}},"
                " {\"name\":\"zero\",\"replicas\":0},"
                " {\"name\":\"omitted\"}]}}",
                "{\"Mpi_Worker.host\":\"h.sd\",\"VC_MPI_WORKER_HOSTS\":\"h.sd\",\"VC_MPI_WORKER_NUM\":\"1\","
                " \"ps.host\":\"j-ps-0.sd\\nj-ps-1.sd\",\"VC_PS_HOSTS\":\"j-ps-0.sd,j-ps-1.sd\","
                " \"VC_PS_NUM\":\"2\","
                " \"zero.host\":\"\",\"VC_ZERO_HOSTS\":\"\",\"VC_ZERO_NUM\":\"0\","
                " \"omitted.host\":\"\",\"VC_OMITTED_HOSTS\":\"\",\"VC_OMITTED_NUM\":\"0\"}");
    /* A template hostname with 0 replicas: the loop never runs, no entry. */
    assert_data("{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":["
                " {\"name\":\"a\",\"replicas\":0,\"template\":{\"spec\":{\"hostname\":\"h\"}}}]}}",
                "{\"a.host\":\"\",\"VC_A_HOSTS\":\"\",\"VC_A_NUM\":\"0\"}");
    assert_data("{\"metadata\":{\"name\":\"j\"},\"spec\":{}}", "{}");
    assert_data("{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":[]}}", "{}");
    assert_data("{}", "{}");
}
END_TEST

/* No trailing newline / comma, checked on the raw strings. */
START_TEST(configmap_data_no_trailing_separator)
{
    json_t *job = tu_json("{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":["
                          " {\"name\":\"w\",\"replicas\":3}]}}");
    json_t *data = NULL;

    ck_assert_int_eq(svc_configmap_data(job, &data), 0);
    ck_assert_str_eq(json_string_value(json_object_get(data, "w.host")),
                     "j-w-0.j\nj-w-1.j\nj-w-2.j");
    ck_assert_str_eq(json_string_value(json_object_get(data, "VC_W_HOSTS")),
                     "j-w-0.j,j-w-1.j,j-w-2.j");
    ck_assert_str_eq(json_string_value(json_object_get(data, "VC_W_NUM")), "3");
    ck_assert_uint_eq(json_object_size(data), 3);
    json_decref(data);
    json_decref(job);
}
END_TEST

static Suite *svc_suite(void)
{
    Suite *s = suite_create("plugin_svc");
    TCase *tc = tcase_create("on_pod_create");
    TCase *td = tcase_create("configmap_data");

    tcase_add_test(tc, full_pod);
    tcase_add_test(tc, template_names_kept);
    tcase_add_test(tc, pod_without_name);
    tcase_add_test(tc, inject_hosts_env_false);
    tcase_add_test(tc, bad_boolean_warns);
    tcase_add_test(tc, dashes_in_task_names);
    tcase_add_test(tc, already_mutated_with_api_defaults_unchanged);
    tcase_add_test(tc, different_entries_replaced_in_place);
    tcase_add_test(tc, user_entries_are_conflicts);
    tcase_add_test(tc, malformed_pod_is_an_error);
    tcase_add_test(tc, allocation_failures);
    tcase_add_test(tc, plugin_table);
    suite_add_tcase(s, tc);
    tcase_add_test(td, configmap_data_example);
    tcase_add_test(td, configmap_data_edge_cases);
    tcase_add_test(td, configmap_data_no_trailing_separator);
    tcase_add_test(td, configmap_data_allocation_failures);
    tcase_add_test(td, configmap_data_too_large);
    suite_add_tcase(s, td);
    return s;
}

int main(void)
{
    return tu_run(svc_suite());
}
