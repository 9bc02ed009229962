/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_ssh.c - the ssh plugin's pod side (docs/plugins.md §4.3, §5.4, D4, D5).
 */
/* The cases are JSON in adjacent string literals and macros, laid out by hand (one
 * container or field a line); clang-format would break them apart. */
/* clang-format off */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugin.h"
#include "tests/plugincase.h"

#define P (&plugin_ssh)

/* From examples/mpi-job.yaml (plugins ssh + svc). */
static const char *const JOB =
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
    " \"metadata\":{\"name\":\"mpi-job\",\"namespace\":\"default\",\"uid\":\"u1\"},"
    " \"spec\":{\"plugins\":{\"ssh\":[],\"svc\":[]},"
    "  \"tasks\":[{\"name\":\"mpimaster\",\"replicas\":1,\"template\":{\"spec\":{}}},"
    "            {\"name\":\"mpiworker\",\"replicas\":2,\"template\":{\"spec\":{}}}]}}";

static const struct plugin_pod_info POD = {"mpi-job-mpiworker-1", "default", "mpiworker", "1"};

#define ITEMS                                                                                \
    "[{\"key\":\"id_rsa\",\"path\":\".ssh/id_rsa\"},"                                        \
    " {\"key\":\"id_rsa.pub\",\"path\":\".ssh/id_rsa.pub\"},"                                \
    " {\"key\":\"authorized_keys\",\"path\":\".ssh/authorized_keys\"},"                      \
    " {\"key\":\"config\",\"path\":\".ssh/config\"}]"
#define VOLUME(mode)                                                                         \
    "{\"name\":\"mpi-job-ssh\",\"secret\":{\"secretName\":\"mpi-job-ssh\",\"items\":" ITEMS  \
    ",\"defaultMode\":" mode "}}"
#define MOUNT(path) "{\"name\":\"mpi-job-ssh\",\"mountPath\":\"" path "\",\"subPath\":\".ssh\"}"

static const char *const POD_IN =
    "{\"metadata\":{\"name\":\"mpi-job-mpiworker-1\"},"
    " \"spec\":{\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}}],"
    "  \"initContainers\":[{\"name\":\"init\"}],"
    "  \"containers\":[{\"name\":\"mpiworker\",\"image\":\"img\","
    "                   \"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\"}]},"
    "                  {\"name\":\"side\"}]}}";

/* docs/plugins.md §4.3 / §5.4: the default path gets 0600 (384); mounts in containers and init
 * containers. */
START_TEST(default_path_mode_384)
{
    pc_ok_args(P, JOB, "[]", &POD, POD_IN,
               "{\"metadata\":{\"name\":\"mpi-job-mpiworker-1\"},"
               " \"spec\":{\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}}, " VOLUME("384") "],"
               "  \"initContainers\":[{\"name\":\"init\",\"volumeMounts\":[" MOUNT("/root/.ssh") "]}],"
               "  \"containers\":[{\"name\":\"mpiworker\",\"image\":\"img\","
               "                   \"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\"},"
               MOUNT("/root/.ssh") "]},"
               "                  {\"name\":\"side\",\"volumeMounts\":[" MOUNT("/root/.ssh") "]}]}}",
               "[]");
}
END_TEST

/* Args NULL (implied plugin, D1) behave as the defaults. */
START_TEST(no_args_is_default)
{
    pc_ok_args(P, JOB, NULL, &POD,
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"volumes\":[" VOLUME("384") "],"
               "  \"containers\":[{\"name\":\"c\",\"volumeMounts\":[" MOUNT("/root/.ssh") "]}]}}",
               "[]");
}
END_TEST

/* A plain string comparison: a trailing slash is "another path" (420). */
START_TEST(trailing_slash_mode_420)
{
    pc_ok_args(P, JOB, "[\"--ssh-key-file-path=/root/.ssh/\"]", &POD,
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}],\"initContainers\":[{\"name\":\"i\"}]}}",
               "{\"spec\":{\"volumes\":[" VOLUME("420") "],"
               "  \"containers\":[{\"name\":\"c\",\"volumeMounts\":[" MOUNT("/root/.ssh/") "]}],"
               "  \"initContainers\":[{\"name\":\"i\",\"volumeMounts\":[" MOUNT("/root/.ssh/") "]}]}}",
               "[]");
}
END_TEST

START_TEST(other_path_mode_420)
{
    pc_ok_args(P, JOB, "[\"--ssh-key-file-path=/home/u/.ssh\"]", &POD,
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"volumes\":[" VOLUME("420") "],"
               "  \"containers\":[{\"name\":\"c\",\"volumeMounts\":[" MOUNT("/home/u/.ssh") "]}]}}",
               "[]");
    /* Single dash and the value in the next element (docs/plugins.md §3.4 rules 4, 8). */
    pc_ok_args(P, JOB, "[\"-ssh-key-file-path\", \"/home/u/.ssh\"]", &POD,
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"volumes\":[" VOLUME("420") "],"
               "  \"containers\":[{\"name\":\"c\",\"volumeMounts\":[" MOUNT("/home/u/.ssh") "]}]}}",
               "[]");
}
END_TEST

/* D4: one warning; values set before the error stay, later arguments are ignored. */
START_TEST(unknown_flag_warns_and_stops)
{
    pc_ok_args(P, JOB, "[\"--ssh-port=2022\", \"--ssh-key\", \"--ssh-key-file-path=/home/u/.ssh\"]", &POD,
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"volumes\":[" VOLUME("384") "],"
               "  \"containers\":[{\"name\":\"c\",\"volumeMounts\":[" MOUNT("/root/.ssh") "]}]}}",
               "[\"ssh plugin: flag provided but not defined: -ssh-key, later arguments ignored\"]");
    pc_ok_args(P, JOB, "[\"--ssh-key-file-path=/opt/k\", \"--ssh-port=abc\", \"--ssh-key-file-path=/x\"]",
               &POD, "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"volumes\":[" VOLUME("420") "],"
               "  \"containers\":[{\"name\":\"c\",\"volumeMounts\":[" MOUNT("/opt/k") "]}]}}",
               "[\"ssh plugin: invalid value \\\"abc\\\" for flag -ssh-port: parse error, "
               "later arguments ignored\"]");
}
END_TEST

/* D5: the volume as the API server stores it (extra defaults) and mounts with extras -> no change. */
START_TEST(identical_with_api_defaults_unchanged)
{
    static const char *const pod =
        "{\"spec\":{\"volumes\":[{\"name\":\"mpi-job-ssh\",\"secret\":{\"secretName\":\"mpi-job-ssh\","
        "   \"items\":[{\"key\":\"id_rsa\",\"path\":\".ssh/id_rsa\",\"mode\":384},"
        "              {\"key\":\"id_rsa.pub\",\"path\":\".ssh/id_rsa.pub\"},"
        "              {\"key\":\"authorized_keys\",\"path\":\".ssh/authorized_keys\"},"
        "              {\"key\":\"config\",\"path\":\".ssh/config\"}],"
        "   \"defaultMode\":384,\"optional\":false}},"
        "  {\"name\":\"kube-api-access\",\"projected\":{\"sources\":[]}}],"
        " \"containers\":[{\"name\":\"c\",\"volumeMounts\":["
        "   {\"name\":\"mpi-job-ssh\",\"mountPath\":\"/root/.ssh\",\"subPath\":\".ssh\",\"readOnly\":true}]}],"
        " \"initContainers\":[{\"name\":\"i\",\"volumeMounts\":[" MOUNT("/root/.ssh") "]}]}}";

    pc_ok_args(P, JOB, "[]", &POD, pod, pod, "[]");
}
END_TEST

/* D5: the plugin's own J-ssh volume (same Secret, other mode) and its own mount (other
 * subPath) are replaced whole at their positions. */
START_TEST(different_volume_replaced_at_position)
{
    pc_ok_args(P, JOB, "[]", &POD,
               "{\"spec\":{\"volumes\":[{\"name\":\"a\",\"emptyDir\":{}},"
               "  {\"name\":\"mpi-job-ssh\",\"secret\":{\"secretName\":\"mpi-job-ssh\",\"defaultMode\":420}},"
               "  {\"name\":\"b\",\"emptyDir\":{}}],"
               " \"containers\":[{\"name\":\"c\",\"volumeMounts\":["
               "  {\"name\":\"mpi-job-ssh\",\"mountPath\":\"/root/.ssh\"},{\"name\":\"y\",\"mountPath\":\"/y\"}]}]}}",
               "{\"spec\":{\"volumes\":[{\"name\":\"a\",\"emptyDir\":{}}," VOLUME("384") ","
               "  {\"name\":\"b\",\"emptyDir\":{}}],"
               " \"containers\":[{\"name\":\"c\",\"volumeMounts\":["
               MOUNT("/root/.ssh") ",{\"name\":\"y\",\"mountPath\":\"/y\"}]}]}}",
               "[]");
}
END_TEST

/* D5: the user's own Secret at the key path, or a volume J-ssh of another source, is a
 * conflict: never re-pointed (the user's keys would be gone). */
START_TEST(user_entries_are_conflicts)
{
    static const char *const job_other_path =
        "{\"metadata\":{\"name\":\"mpi-job\",\"uid\":\"u1\"},"
        " \"spec\":{\"plugins\":{\"ssh\":[\"--ssh-key-file-path=/home/u/.ssh\"]},\"tasks\":[]}}";

    pc_err_rc(P, JOB, &POD,
              "{\"spec\":{\"volumes\":[{\"name\":\"my-keys\",\"secret\":{\"secretName\":\"my-keys\"}}],"
              " \"containers\":[{\"name\":\"main\",\"volumeMounts\":["
              "  {\"name\":\"my-keys\",\"mountPath\":\"/root/.ssh\"}]}]}}",
              WH_ECONFLICT,
              "container \"main\" mounts your volume \"my-keys\" at /root/.ssh, where the plugin "
              "mounts \"mpi-job-ssh\": mount yours elsewhere or remove the plugin (Volcano would "
              "add a second mount there, which the API server refuses; replacing yours would "
              "lose it)",
              /* the volume went in first; the chain drops the copy on the error */
              "{\"spec\":{\"volumes\":[{\"name\":\"my-keys\",\"secret\":{\"secretName\":\"my-keys\"}},"
              VOLUME("384") "],"
              " \"containers\":[{\"name\":\"main\",\"volumeMounts\":["
              "  {\"name\":\"my-keys\",\"mountPath\":\"/root/.ssh\"}]}]}}",
              "[]");
    /* the same in an init container, at a path of --ssh-key-file-path */
    pc_err_rc(P, job_other_path, &POD,
              "{\"spec\":{\"initContainers\":[{\"name\":\"prep\",\"volumeMounts\":["
              "  {\"name\":\"home\",\"mountPath\":\"/home/u/.ssh\"}]}]}}",
              WH_ECONFLICT,
              "container \"prep\" mounts your volume \"home\" at /home/u/.ssh, where the plugin "
              "mounts \"mpi-job-ssh\": mount yours elsewhere or remove the plugin (Volcano would "
              "add a second mount there, which the API server refuses; replacing yours would "
              "lose it)",
              "{\"spec\":{\"volumes\":[" VOLUME("420") "],"
              " \"initContainers\":[{\"name\":\"prep\",\"volumeMounts\":["
              "  {\"name\":\"home\",\"mountPath\":\"/home/u/.ssh\"}]}]}}",
              "[]");
    pc_err_rc(P, JOB, &POD,
              "{\"spec\":{\"volumes\":[{\"name\":\"mpi-job-ssh\",\"secret\":{\"secretName\":\"mine\"}}],"
              " \"containers\":[{\"name\":\"main\"}]}}",
              WH_ECONFLICT,
              "volume \"mpi-job-ssh\" is your Secret \"mine\", and the plugin needs that name for "
              "its Secret \"mpi-job-ssh\": rename yours or remove the plugin (Volcano would add a "
              "second one, which the API server refuses)",
              NULL, "[]");
}
END_TEST

/* --ssh-key-file-path=/etc/volcano with svc enabled: svc mounts its host files there, so
 * the keys could not be mounted; the flag is named. Without svc the path is mounted. */
START_TEST(key_path_of_svc)
{
    static const char *const with_svc =
        "{\"metadata\":{\"name\":\"mpi-job\",\"uid\":\"u1\"},"
        " \"spec\":{\"plugins\":{\"ssh\":[\"--ssh-key-file-path=/etc/volcano\"],\"svc\":[]},"
        "  \"tasks\":[]}}";
    static const char *const implied_svc =
        "{\"metadata\":{\"name\":\"mpi-job\",\"uid\":\"u1\"},"
        " \"spec\":{\"plugins\":{\"ssh\":[\"--ssh-key-file-path=/etc/volcano\"],\"mpi\":[]},"
        "  \"tasks\":[]}}";
    static const char *const without_svc =
        "{\"metadata\":{\"name\":\"mpi-job\",\"uid\":\"u1\"},"
        " \"spec\":{\"plugins\":{\"ssh\":[\"--ssh-key-file-path=/etc/volcano\"]},\"tasks\":[]}}";
    static const char *const msg =
        "--ssh-key-file-path=/etc/volcano is where the svc plugin mounts its host files, so the "
        "ssh keys cannot be mounted there: choose another path in spec.plugins.ssh";

    pc_err_rc(P, with_svc, &POD, "{\"spec\":{\"containers\":[{\"name\":\"main\"}]}}",
              WH_ECONFLICT, msg, NULL, "[]");
    /* svc implied by mpi (D1) */
    pc_err_rc(P, implied_svc, &POD, "{\"spec\":{\"containers\":[{\"name\":\"main\"}]}}",
              WH_ECONFLICT, msg, NULL, "[]");
    pc_ok(P, without_svc, &POD, "{\"spec\":{\"containers\":[{\"name\":\"main\"}]}}",
          "{\"spec\":{\"volumes\":[" VOLUME("420") "],"
          " \"containers\":[{\"name\":\"main\",\"volumeMounts\":[" MOUNT("/etc/volcano") "]}]}}",
          "[]");
}
END_TEST

/* The Job name is read from the Job object, not from the pod. */
START_TEST(names_follow_job_name)
{
    pc_ok_args(P, "{\"metadata\":{\"name\":\"lm\"},\"spec\":{\"tasks\":[]}}", "[]", &POD,
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"volumes\":[{\"name\":\"lm-ssh\",\"secret\":{\"secretName\":\"lm-ssh\","
               "  \"items\":" ITEMS ",\"defaultMode\":384}}],"
               "  \"containers\":[{\"name\":\"c\",\"volumeMounts\":["
               "  {\"name\":\"lm-ssh\",\"mountPath\":\"/root/.ssh\",\"subPath\":\".ssh\"}]}]}}",
               "[]");
}
END_TEST

START_TEST(allocation_failures)
{
    pc_chaos_args(P, JOB, "[\"--ssh-key-file-path=/home/u/.ssh\"]", &POD,
                  "{\"spec\":{\"containers\":[{\"name\":\"c\"}],\"initContainers\":[{\"name\":\"i\"}]}}",
                  "{\"spec\":{\"volumes\":[" VOLUME("420") "],"
                  "  \"containers\":[{\"name\":\"c\",\"volumeMounts\":[" MOUNT("/home/u/.ssh") "]}],"
                  "  \"initContainers\":[{\"name\":\"i\",\"volumeMounts\":[" MOUNT("/home/u/.ssh") "]}]}}");
}
END_TEST

START_TEST(malformed_pod_is_an_error)
{
    json_t *job = tu_json(JOB);
    json_t *nospec = tu_json("{\"metadata\":{}}");
    json_t *badvol = tu_json("{\"spec\":{\"volumes\":{}}}");
    json_t *badctr = tu_json("{\"spec\":{\"containers\":[{\"name\":\"c\"}],\"initContainers\":[7]}}");
    struct wh_error err = {0, ""};
    struct plugin_ctx c = {.name = "ssh", .job = job, .args = NULL, .pod = &POD};

    ck_assert_int_eq(pc_call(P, &c, nospec, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "cannot add volume mpi-job-ssh: malformed pod spec");
    ck_assert_int_eq(pc_call(P, &c, badvol, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "cannot add volume mpi-job-ssh: malformed pod spec");
    ck_assert_int_eq(pc_call(P, &c, badctr, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "cannot mount mpi-job-ssh in spec.initContainers[0]: "
                              "malformed container");
    json_decref(badctr);
    json_decref(badvol);
    json_decref(nospec);
    json_decref(job);
}
END_TEST

START_TEST(plugin_table)
{
    /* job hooks: tests/plugins/check_jobhooks.c */
    pc_assert_entry(P, "ssh", true);
}
END_TEST

static Suite *ssh_suite(void)
{
    Suite *s = suite_create("plugin_ssh");
    TCase *tc = tcase_create("on_pod_create");

    tcase_add_test(tc, default_path_mode_384);
    tcase_add_test(tc, no_args_is_default);
    tcase_add_test(tc, trailing_slash_mode_420);
    tcase_add_test(tc, other_path_mode_420);
    tcase_add_test(tc, unknown_flag_warns_and_stops);
    tcase_add_test(tc, identical_with_api_defaults_unchanged);
    tcase_add_test(tc, different_volume_replaced_at_position);
    tcase_add_test(tc, user_entries_are_conflicts);
    tcase_add_test(tc, key_path_of_svc);
    tcase_add_test(tc, names_follow_job_name);
    tcase_add_test(tc, malformed_pod_is_an_error);
    tcase_add_test(tc, allocation_failures);
    tcase_add_test(tc, plugin_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(ssh_suite());
}
