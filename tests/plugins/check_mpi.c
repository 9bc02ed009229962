/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_mpi.c - the mpi plugin's pod side (docs/plugins.md §4.6, §5.3, §8 #8/#9, D4, D5).
 */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugin.h"
#include "tests/plugincase.h"

#define P (&plugin_mpi)

/* examples/lm-mpi-job.yaml. */
static const char *const LM_JOB =
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
    " \"metadata\":{\"name\":\"lm-mpi-job\",\"namespace\":\"default\",\"uid\":\"u1\"},"
    " \"spec\":{\"minAvailable\":1,"
    "  \"plugins\":{\"mpi\":[\"--master=mpimaster\",\"--worker=mpiworker\",\"--port=22\"]},"
    "  \"tasks\":[{\"name\":\"mpimaster\",\"replicas\":1,\"template\":{\"spec\":{}}},"
    "            {\"name\":\"mpiworker\",\"replicas\":2,\"template\":{\"spec\":{}}}]}}";
static const char *const LM_ARGS = "[\"--master=mpimaster\",\"--worker=mpiworker\",\"--port=22\"]";
static const struct plugin_pod_info LM_MASTER = {"lm-mpi-job-mpimaster-0", "default", "mpimaster",
                                                 "0"};
static const struct plugin_pod_info LM_WORKER = {"lm-mpi-job-mpiworker-1", "default", "mpiworker",
                                                 "1"};

/* Default task names. */
static const struct plugin_pod_info MASTER = {"j-master-0", "ns", "master", "0"};
static const struct plugin_pod_info WORKER = {"j-worker-0", "ns", "worker", "0"};

#define PORT(n)  "{\"name\":\"mpijob-port\",\"containerPort\":" #n "}"
#define LM_HOSTS "lm-mpi-job-mpiworker-0.lm-mpi-job,lm-mpi-job-mpiworker-1.lm-mpi-job"

static const char *const SIMPLE_POD =
    "{\"spec\":{\"initContainers\":[{\"name\":\"init\"}],\"containers\":[{\"name\":\"c\"}]}}";

/* Master pod: MPI_HOST = worker domains joined by ",", port on init containers and containers. */
START_TEST(lm_master_pod)
{
    pc_ok_args(
        P, LM_JOB, LM_ARGS, &LM_MASTER,
        "{\"metadata\":{\"name\":\"lm-mpi-job-mpimaster-0\"},"
        " \"spec\":{\"initContainers\":[{\"name\":\"init\"}],"
        "  \"containers\":[{\"name\":\"mpimaster\",\"image\":\"volcanosh/example-mpi:0.0.3\","
        "                   "
        "\"workingDir\":\"/home\"},{\"name\":\"side\",\"ports\":[{\"containerPort\":80}]}]}}",
        "{\"metadata\":{\"name\":\"lm-mpi-job-mpimaster-0\"},"
        " \"spec\":{\"initContainers\":[{\"name\":\"init\",\"ports\":[" PORT(
            22) "],"
                "    \"env\":[{\"name\":\"MPI_HOST\",\"value\":\"" LM_HOSTS "\"}]}],"
                "  "
                "\"containers\":[{\"name\":\"mpimaster\",\"image\":\"volcanosh/example-mpi:0.0.3\","
                "    \"workingDir\":\"/home\",\"ports\":[" PORT(
                    22) "],"
                        "    \"env\":[{\"name\":\"MPI_HOST\",\"value\":\"" LM_HOSTS "\"}]},"
                        "   {\"name\":\"side\",\"ports\":[{\"containerPort\":80}," PORT(
                            22) "],"
                                "    \"env\":[{\"name\":\"MPI_HOST\",\"value\":\"" LM_HOSTS
                                "\"}]}]}}",
        "[]");
}
END_TEST

/* Non-master pods only get the port. */
START_TEST(lm_worker_pod_only_port)
{
    pc_ok_args(P, LM_JOB, LM_ARGS, &LM_WORKER, SIMPLE_POD,
               "{\"spec\":{\"initContainers\":[{\"name\":\"init\",\"ports\":[" PORT(
                   22) "]}],"
                       "  \"containers\":[{\"name\":\"c\",\"ports\":[" PORT(22) "]}]}}",
               "[]");
    /* Another task (and a pod without task annotation, "default") too. */
    pc_ok_args(P, LM_JOB, LM_ARGS, &(struct plugin_pod_info){"x", "default", "default", ""},
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[" PORT(22) "]}]}}", "[]");
}
END_TEST

/* examples/mpi-job.yaml declares mpijob-port 22 already: nothing is duplicated. */
START_TEST(port_number_already_declared)
{
    static const char *const pod =
        "{\"spec\":{\"containers\":[{\"name\":\"mpiworker\",\"ports\":"
        "  [{\"containerPort\":22,\"name\":\"mpijob-port\",\"protocol\":\"TCP\"}]},"
        "  "
        "{\"name\":\"other\",\"ports\":[{\"containerPort\":22,\"name\":\"ssh\",\"protocol\":"
        "\"UDP\"}]}]}}";

    pc_ok_args(P, LM_JOB, LM_ARGS, &LM_WORKER, pod, pod, "[]");
}
END_TEST

/* D5: a port name taken by another number is not added, with podutil's warning; init first. */
START_TEST(port_name_taken_by_other_number)
{
    static const char *const pod =
        "{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"ports\":[" PORT(
            2222) "]}],"
                  " \"containers\":[{\"name\":\"c\",\"ports\":[" PORT(23) "]}]}}";

    pc_ok_args(P, LM_JOB, LM_ARGS, &LM_WORKER, pod, pod,
               "[\"mpi plugin: port name mpijob-port already used by port 2222 in container i, "
               "port 22 not added\","
               " \"mpi plugin: port name mpijob-port already used by port 23 in container c, "
               "port 22 not added\"]");
}
END_TEST

/* Worker template hostname: one entry. */
START_TEST(worker_template_hostname_one_entry)
{
    pc_ok_args(
        P,
        "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":["
        " {\"name\":\"master\",\"replicas\":1},"
        " {\"name\":\"worker\",\"replicas\":3,\"template\":{\"spec\":{\"hostname\":\"w\"}}}]}}",
        NULL, &MASTER, "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
        "{\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[" PORT(
            22) "],"
                "  \"env\":[{\"name\":\"MPI_HOST\",\"value\":\"w.j\"}]}]}}",
        "[]");
    /* Template subdomain replaces J in every entry. */
    pc_ok_args(
        P,
        "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":["
        " {\"name\":\"master\",\"replicas\":1},"
        " {\"name\":\"worker\",\"replicas\":2,\"template\":{\"spec\":{\"subdomain\":\"sd\"}}}]}}",
        NULL, &MASTER, "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
        "{\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[" PORT(
            22) "],"
                "  \"env\":[{\"name\":\"MPI_HOST\",\"value\":\"j-worker-0.sd,j-worker-1.sd\"}]}]}}",
        "[]");
}
END_TEST

/* Worker task with 0 replicas (explicit or omitted): MPI_HOST "" is still added. */
START_TEST(worker_zero_replicas_empty_host)
{
    static const char *const want = "{\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[" PORT(
        22) "],"
            "  \"env\":[{\"name\":\"MPI_HOST\",\"value\":\"\"}]}]}}";

    pc_ok_args(P,
               "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":["
               " {\"name\":\"master\",\"replicas\":1},{\"name\":\"worker\",\"replicas\":0}]}}",
               NULL, &MASTER, "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}", want, "[]");
    pc_ok_args(P,
               "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":["
               " {\"name\":\"master\",\"replicas\":1},{\"name\":\"worker\"}]}}",
               NULL, &MASTER, "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}", want, "[]");
}
END_TEST

/* docs/plugins.md §4.6 / §5.3: a master pod of a Job without worker task gets nothing at all. */
START_TEST(master_without_worker_task_unchanged)
{
    static const char *const job = "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":[{\"name\":"
                                   "\"master\",\"replicas\":1}]}}";

    pc_ok_args(P, job, NULL, &MASTER, SIMPLE_POD, SIMPLE_POD, "[]");
    /* lm-mpi-job with default flags: no task is named "master", so every pod gets the port. */
    pc_ok_args(P, LM_JOB, "[]", &LM_MASTER, SIMPLE_POD,
               "{\"spec\":{\"initContainers\":[{\"name\":\"init\",\"ports\":[" PORT(
                   22) "]}],"
                       "  \"containers\":[{\"name\":\"c\",\"ports\":[" PORT(22) "]}]}}",
               "[]");
}
END_TEST

START_TEST(port_flag)
{
    static const char *const job =
        "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":["
        " {\"name\":\"master\",\"replicas\":1},{\"name\":\"worker\",\"replicas\":1}]}}";

    pc_ok_args(
        P, job, "[\"--port=2222\"]", &MASTER, SIMPLE_POD,
        "{\"spec\":{\"initContainers\":[{\"name\":\"init\",\"ports\":[" PORT(
            2222) "],"
                  "   \"env\":[{\"name\":\"MPI_HOST\",\"value\":\"j-worker-0.j\"}]}],"
                  "  \"containers\":[{\"name\":\"c\",\"ports\":[" PORT(
                      2222) "],"
                            "   \"env\":[{\"name\":\"MPI_HOST\",\"value\":\"j-worker-0.j\"}]}]}}",
        "[]");
    /* docs/plugins.md §3.4 rule 10: 2^32 + 22 is narrowed to 22 unchecked; 0x prefix accepted. */
    pc_ok_args(P, job, "[\"-port\", \"4294967318\"]", &WORKER, "{\"spec\":{\"containers\":[{}]}}",
               "{\"spec\":{\"containers\":[{\"ports\":[" PORT(22) "]}]}}", "[]");
    pc_ok_args(P, job, "[\"--port=0x8AE\"]", &WORKER, "{\"spec\":{\"containers\":[{}]}}",
               "{\"spec\":{\"containers\":[{\"ports\":[" PORT(2222) "]}]}}", "[]");
    /* 2^31 wraps to a negative number, as Go's int32() conversion does. */
    pc_ok_args(P, job, "[\"--port=2147483648\"]", &WORKER, "{\"spec\":{\"containers\":[{}]}}",
               "{\"spec\":{\"containers\":[{\"ports\":[" PORT(-2147483648) "]}]}}",
               "[\"mpi plugin: container port -2147483648 is outside 1-65535, the pod will be "
               "rejected\"]");
}
END_TEST

/* D4: a bad port value is set to 0 and warned about; later arguments are ignored. */
START_TEST(bad_args_warn)
{
    static const char *const job =
        "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tasks\":["
        " {\"name\":\"master\",\"replicas\":1},{\"name\":\"worker\",\"replicas\":1}]}}";

    pc_ok_args(P, job, "[\"--port=abc\", \"--master=worker\"]", &WORKER,
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[" PORT(0) "]}]}}",
               "[\"mpi plugin: invalid value \\\"abc\\\" for flag -port: parse error, "
               "later arguments ignored\", \"mpi plugin: container port 0 is outside 1-65535, "
               "the pod will be rejected\"]");
    /* Values before the error stay: worker is now the master task. */
    pc_ok_args(P, job, "[\"--master=worker\", \"--worker=master\", \"--slots=2\", \"--port=1\"]",
               &WORKER, "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[" PORT(
                   22) "],"
                       "  \"env\":[{\"name\":\"MPI_HOST\",\"value\":\"j-master-0.j\"}]}]}}",
               "[\"mpi plugin: flag provided but not defined: -slots, later arguments ignored\"]");
}
END_TEST

/* D5: an MPI_HOST with another value is replaced in place. */
START_TEST(mpi_host_replaced_in_place)
{
    pc_ok_args(
        P, LM_JOB, LM_ARGS, &LM_MASTER,
        "{\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[" PORT(
            22) "],\"env\":["
                " {\"name\":\"MPI_HOST\",\"value\":\"old\"},{\"name\":\"X\",\"value\":\"x\"}]}]}}",
        "{\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[" PORT(
            22) "],\"env\":["
                " {\"name\":\"MPI_HOST\",\"value\":\"" LM_HOSTS
                "\"},{\"name\":\"X\",\"value\":\"x\"}]}]}}",
        "[\"mpi plugin: container \\\"c\\\" sets MPI_HOST=\\\"old\\\", replaced by "
        "\\\"lm-mpi-job-mpiworker-0.lm-mpi-job,lm-mpi...\\\": the plugin sets it, drop it from the "
        "pod template\"]");
}
END_TEST

START_TEST(allocation_failures)
{
    pc_chaos_args(P, LM_JOB, LM_ARGS, &LM_MASTER, SIMPLE_POD,
                  "{\"spec\":{\"initContainers\":[{\"name\":\"init\",\"ports\":[" PORT(
                      22) "],"
                          "   \"env\":[{\"name\":\"MPI_HOST\",\"value\":\"" LM_HOSTS "\"}]}],"
                          "  \"containers\":[{\"name\":\"c\",\"ports\":[" PORT(
                              22) "],"
                                  "   \"env\":[{\"name\":\"MPI_HOST\",\"value\":\"" LM_HOSTS
                                  "\"}]}]}}");
}
END_TEST

START_TEST(malformed_container_is_an_error)
{
    json_t *job = tu_json(LM_JOB);
    json_t *args = tu_json(LM_ARGS);
    json_t *badports = tu_json("{\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":{}}]}}");
    json_t *badenv = tu_json("{\"spec\":{\"initContainers\":[{\"name\":\"c\",\"env\":3}]}}");
    json_t *notobj = tu_json("{\"spec\":{\"containers\":[null]}}");
    struct wh_error err = {0, ""};
    struct plugin_ctx c = {.name = "mpi", .job = job, .args = args, .pod = &LM_MASTER};

    ck_assert_int_eq(pc_call(P, &c, badports, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg,
                     "cannot add port 22 to spec.containers[0]: "
                     "malformed container");
    ck_assert_int_eq(pc_call(P, &c, badenv, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg,
                     "cannot set env MPI_HOST in spec.initContainers[0]: "
                     "malformed container");
    ck_assert_int_eq(pc_call(P, &c, notobj, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg,
                     "cannot add port 22 to spec.containers[0]: "
                     "malformed container");
    json_decref(notobj);
    json_decref(badenv);
    json_decref(badports);
    json_decref(args);
    json_decref(job);
}
END_TEST

START_TEST(plugin_table)
{
    pc_assert_entry(P, "mpi", false);
}
END_TEST

static Suite *mpi_suite(void)
{
    Suite *s = suite_create("plugin_mpi");
    TCase *tc = tcase_create("on_pod_create");

    tcase_add_test(tc, lm_master_pod);
    tcase_add_test(tc, lm_worker_pod_only_port);
    tcase_add_test(tc, port_number_already_declared);
    tcase_add_test(tc, port_name_taken_by_other_number);
    tcase_add_test(tc, worker_template_hostname_one_entry);
    tcase_add_test(tc, worker_zero_replicas_empty_host);
    tcase_add_test(tc, master_without_worker_task_unchanged);
    tcase_add_test(tc, port_flag);
    tcase_add_test(tc, bad_args_warn);
    tcase_add_test(tc, mpi_host_replaced_in_place);
    tcase_add_test(tc, malformed_container_is_an_error);
    tcase_add_test(tc, allocation_failures);
    tcase_add_test(tc, plugin_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(mpi_suite());
}
