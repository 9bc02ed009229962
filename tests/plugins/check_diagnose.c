/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_diagnose.c - the Job-level diagnostics (plugins/diagnose.h, D15-D17):
 * each case is a Job and the exact list of reason, fatal, plugin and message.
 */
/* The Jobs are JSON in adjacent string literals, one task a line; clang-format would
 * break them apart. */
/* clang-format off */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/diagnose.h"
#include "plugins/job.h"
#include "plugins/plugin.h"
#include "plugins/podutil.h"
#include "plugins/svc.h"
#include "tests/plugincase.h"

/* A Job named name in ns1 (quotes written as '). */
#define JOB_NAMED(name, plugins, tasks)                                                     \
    "{'apiVersion':'batch.volcano.sh/v1alpha1','kind':'Job',"                               \
    " 'metadata':{'name':'" name "','namespace':'ns1','uid':'u1'},"                          \
    " 'spec':{'plugins':" plugins ",'tasks':[" tasks "]}}"
#define JOB(plugins, tasks) JOB_NAMED("j", plugins, tasks)
#define TASK_SPEC(name, n, spec) "{'name':'" name "','replicas':" #n ",'template':{'spec':" spec "}}"
#define TASK(name, n) TASK_SPEC(name, n, "{'containers':[{'name':'c','image':'busybox'}]}")

struct want {
    const char *reason;
    bool fatal;
    const char *plugin;
    const char *message;
};

/* Run diagnose_job on the Job text and assert exactly n diagnostics, in order. */
static void check_job(const char *job_sq, const struct want *want, size_t n)
{
    json_t *job = pc_json(job_sq);
    struct diagnostics d;

    ck_assert_int_eq(diagnose_job(job, &d), 0);
    for (size_t i = 0; i < d.n && i < n; i++) {
        ck_assert_str_eq(d.items[i].message, want[i].message);
        /* kube-apiserver may cut a warning past 256 characters: the text around
         * short names fits */
        ck_assert_msg(strlen(job_name(job)) > 8 || strlen(d.items[i].message) <= 256,
                      "%zu bytes: %s", strlen(d.items[i].message), d.items[i].message);
        ck_assert_str_eq(diagnose_reason_name(d.items[i].reason), want[i].reason);
        ck_assert_msg(d.items[i].fatal == want[i].fatal, "fatal of %zu: %s", i,
                      d.items[i].message);
        ck_assert_str_eq(d.items[i].plugin, want[i].plugin);
    }
    if (d.n != n)
        for (size_t i = 0; i < d.n; i++)
            fprintf(stderr, "got %zu: %s\n", i, d.items[i].message);
    ck_assert_uint_eq(d.n, n);
    ck_assert_uint_eq(d.dropped, 0);
    json_decref(job);
}

#define CHECK(job, ...)                                                                     \
    do {                                                                                    \
        static const struct want w_[] = {__VA_ARGS__};                                      \
        check_job(job, w_, sizeof(w_) / sizeof(w_[0]));                                     \
    } while (0)
#define CHECK_NONE(job) check_job(job, NULL, 0)

START_TEST(clean_jobs_say_nothing)
{
    json_t *job = pc_json(JOB("{'ssh':[],'svc':[],'env':[],'pytorch':[]}",
                              TASK("master", 1) "," TASK("worker", 3)));
    struct diagnostics d;

    ck_assert_int_eq(diagnose_job(job, &d), 0);
    ck_assert_uint_eq(d.n, 0);
    json_decref(job);
    job = pc_json(JOB("null", TASK("a", 2)));
    ck_assert_int_eq(diagnose_job(job, &d), 0);
    ck_assert_uint_eq(d.n, 0);
    json_decref(job);
}
END_TEST

/* `plugins: [ssh, svc]`: an empty patch today; the author is told how to write it. */
START_TEST(plugins_as_a_list)
{
    CHECK(JOB("['ssh','svc']", TASK("a", 1)),
          {"PluginArgumentInvalid", false, "",
           "spec.plugins is a list, not a map of plugin name to arguments, so no plugin runs: "
           "write it as {\"ssh\": [], \"svc\": []}"});
    CHECK(JOB("'ssh'", TASK("a", 1)),
          {"PluginArgumentInvalid", false, "",
           "spec.plugins is a string, not a map of plugin name to arguments, so no plugin runs: "
           "write it as {\"ssh\": []}"});
    /* A list of one-entry maps (a YAML "- ssh: []" too many): the same map, arguments kept. */
    CHECK(JOB("[{'ssh':[]},{'mpi':['--port=22']},3]", TASK("a", 1)),
          {"PluginArgumentInvalid", false, "",
           "spec.plugins is a list, not a map of plugin name to arguments, so no plugin runs: "
           "write it as {\"ssh\": [], \"mpi\": [\"--port=22\"]}"});
    /* Nothing to show: an example. */
    CHECK(JOB("7", TASK("a", 1)),
          {"PluginArgumentInvalid", false, "",
           "spec.plugins is a number, not a map of plugin name to arguments, so no plugin runs: "
           "write it as {\"svc\": []}"});
}
END_TEST

START_TEST(framework_entries)
{
    CHECK(JOB("{'foo':[],'env':'x','svc':[1]}", TASK("a", 1) "," TASK("a", 2)),
          {"PluginUnknown", false, "",
           "spec.plugins has an unknown plugin \"foo\", which is ignored: the plugins are ssh, "
           "env, svc, tensorflow, mpi, pytorch, hcclrank and ray"},
          {"PluginArgumentInvalid", false, "env",
           "env plugin: spec.plugins.env is a string, not a list of arguments, so the plugin runs "
           "with its defaults: write it as a list of strings"},
          {"PluginArgumentInvalid", false, "svc",
           "svc plugin: spec.plugins.svc[0] is a number, not a string, so it and the arguments "
           "after it are ignored: quote it"},
          {"TaskDuplicate", false, "",
           "spec.tasks[1] has the name \"a\" of spec.tasks[0]: the plugins see only the first and "
           "the pods of both get the same names; rename one"});
}
END_TEST

/* A parse error (docs/plugins.md §3.4, D4) comes first among its plugin's diagnostics. */
START_TEST(argument_errors_first)
{
    CHECK(JOB("{'ssh':['--ssh-port=0','--nope']}", TASK("a", 1)),
          {"PluginArgumentInvalid", false, "ssh",
           "ssh plugin: flag provided but not defined: -nope, later arguments ignored; fix "
           "spec.plugins.ssh"},
          {"PluginArgumentInvalid", false, "ssh",
           "ssh plugin: --ssh-port=0 is not a port (1-65535), so the ssh config says Port 22: fix "
           "spec.plugins.ssh"});
    CHECK(JOB("{'pytorch':['--port=abc']}", TASK("master", 1) "," TASK("worker", 1)),
          {"PluginArgumentInvalid", false, "pytorch",
           "pytorch plugin: invalid value \"abc\" for flag -port: parse error, later arguments "
           "ignored; fix spec.plugins.pytorch"},
          {"PluginArgumentInvalid", true, "pytorch",
           "pytorch plugin: --port=0 is not a port (1-65535), and the API server refuses a "
           "container port 0: fix spec.plugins.pytorch"});
}
END_TEST

/* D15: Job `a.b` gives hostname a.b-master-0 and subdomain a.b. */
START_TEST(job_name_with_a_dot)
{
    CHECK(JOB_NAMED("a.b", "{'svc':[]}", TASK("master", 1)),
          {"NameInvalid", true, "svc",
           "svc plugin: job name \"a.b\" cannot be a pod subdomain (a DNS-1123 label has no '.'): "
           "rename the job"});
    /* ssh alone: its volume a.b-ssh. */
    CHECK(JOB_NAMED("a.b", "{'ssh':[]}", TASK("master", 1)),
          {"NameInvalid", true, "ssh",
           "ssh plugin: volume name \"a.b-ssh\" cannot be a volume name (a DNS-1123 label has no "
           "'.'): rename the job"});
    /* The template's own subdomain and hostname are used instead, and checked. */
    CHECK(JOB_NAMED("a.b", "{'svc':[]}",
                    TASK_SPEC("m", 1, "{'subdomain':'x','hostname':'H','containers':[]}")),
          {"NameInvalid", true, "svc",
           "svc plugin: spec.tasks[0].template.spec.hostname \"H\" cannot be a pod hostname (a "
           "DNS-1123 label has only lower case letters, digits and '-'): change it"});
}
END_TEST

#define NAME59 "abcdefghij" "abcdefghij" "abcdefghij" "abcdefghij" "abcdefghij" "abcdefghi"

/* D15: a 59-character Job name: pod NAME59-a-10 gets a 64-character hostname. */
START_TEST(hostname_too_long)
{
    CHECK(JOB_NAMED(NAME59, "{'svc':[]}", TASK("a", 11)),
          {"NameInvalid", true, "svc",
           "svc plugin: pod hostname \"" NAME59 "-a-10\" has 64 characters, more than the 63 of a "
           "DNS-1123 label: shorten the job name to at most 58 characters, or the name of task a"});
    /* Ten replicas end at -a-9: 63 characters, fine. */
    CHECK_NONE(JOB_NAMED(NAME59, "{'svc':[]}", TASK("a", 10)));
    /* A 60-character name: the volume j-svc is 64. */
    CHECK(JOB_NAMED(NAME59 "x", "{'svc':[]}", TASK_SPEC("a", 1, "{'hostname':'h'}")),
          {"NameInvalid", true, "svc",
           "svc plugin: volume name \"" NAME59 "x-svc\" has 64 characters, more than the 63 of a "
           "DNS-1123 label: shorten the job name to at most 59 characters"});
}
END_TEST

START_TEST(pytorch_tasks_and_ranks)
{
    /* --master naming no task: no MASTER_ADDR, RANK or WORLD_SIZE anywhere. */
    CHECK(JOB("{'pytorch':['--master=boss'],'svc':[]}", TASK("master", 1) "," TASK("worker", 2)),
          {"TaskNotFound", false, "pytorch",
           "pytorch plugin: no task named \"boss\" (--master), so no pod gets MASTER_ADDR, "
           "MASTER_PORT, WORLD_SIZE or RANK: name the master task with --master in "
           "spec.plugins.pytorch, or rename the task"});
    /* Two masters get RANK 0 twice. */
    CHECK(JOB("{'pytorch':[]}", TASK("master", 2) "," TASK("worker", 2)),
          {"RankNotUnique", false, "pytorch",
           "pytorch plugin: task master has 2 replicas and every master replica gets RANK 0, so "
           "the ranks collide and the training waits forever: give the master task 1 replica and "
           "put the others in the worker task"});
    CHECK(JOB("{'pytorch':[]}", TASK("master", 1)),
          {"TaskNotFound", false, "pytorch",
           "pytorch plugin: no task named \"worker\" (--worker), so WORLD_SIZE counts only the "
           "master replicas and no pod gets a RANK above 0: name the worker task with --worker in "
           "spec.plugins.pytorch, or rename the task"});
    /* A user's RANK is replaced (D5). */
    CHECK(JOB("{'pytorch':[]}", TASK("master", 1) ","
              TASK_SPEC("worker", 1, "{'containers':[{'name':'w','env':[{'name':'RANK','value':'7'}]}]}")),
          {"UserValueReplaced", false, "pytorch",
           "pytorch plugin: container \"w\" of task worker sets RANK, which the plugin replaces: "
           "drop it from spec.tasks[1].template"});
}
END_TEST

/* D15: wait-for-master when a container already has that name. */
START_TEST(pytorch_wait_for_master_name_taken)
{
    CHECK(JOB("{'pytorch':['--wait-master-enabled']}", TASK("master", 1) ","
              TASK_SPEC("worker", 2, "{'containers':[{'name':'wait-for-master'},{'name':'c'}]}")),
          {"Conflict", true, "pytorch",
           "pytorch plugin: container \"wait-for-master\" of task worker has the name of the init "
           "container --wait-master-enabled adds, and the API server refuses two containers of "
           "one name: rename the container in spec.tasks[1].template"});
    /* An init container of that name is left alone (D5): nothing to say. */
    CHECK_NONE(JOB("{'pytorch':['--wait-master-enabled']}", TASK("master", 1) ","
              TASK_SPEC("worker", 2, "{'initContainers':[{'name':'wait-for-master'}],'containers':[{'name':'c'}]}")));
}
END_TEST

/* `mpi: []` with tasks launcher/worker: no MPI_HOST. */
START_TEST(mpi_master_missing)
{
    CHECK(JOB("{'mpi':[]}", TASK("launcher", 1) "," TASK("worker", 2)),
          {"TaskNotFound", false, "mpi",
           "mpi plugin: no task named \"master\" (--master), so no pod gets MPI_HOST: name the "
           "launcher task with --master in spec.plugins.mpi, or rename the task"});
    CHECK(JOB("{'mpi':['--master=launcher','--worker=w']}", TASK("launcher", 1) "," TASK("worker", 2)),
          {"TaskNotFound", false, "mpi",
           "mpi plugin: no task named \"w\" (--worker), so the master pods get neither MPI_HOST "
           "nor the port mpijob-port: name the worker task with --worker in spec.plugins.mpi, or "
           "rename the task"});
}
END_TEST

/* Containers not named --headContainer / --workerContainer: no ray start, no ports. */
START_TEST(ray_containers)
{
    CHECK(JOB("{'ray':[]}",
              TASK_SPEC("head", 1, "{'containers':[{'name':'ray-head'},{'name':'side'}]}") ","
              TASK_SPEC("worker", 2, "{'containers':[{'name':'ray-worker'}]}")),
          {"ContainerNotFound", false, "ray",
           "ray plugin: task head has no container named \"head\" (--headContainer), so none "
           "gets \"ray start\" or the ports gcs, dashboard, client-server: rename one, or pass "
           "--headContainer=NAME in spec.plugins.ray (containers: ray-head, side)"},
          {"ContainerNotFound", false, "ray",
           "ray plugin: task worker has no container named \"worker\" (--workerContainer), so "
           "none gets \"ray start\": rename one, or pass --workerContainer=NAME in "
           "spec.plugins.ray (containers: ray-worker)"});
    /* Its command is replaced; 6379 under another name leaves the Service's gcs empty. */
    CHECK(JOB("{'ray':[]}",
              TASK_SPEC("head", 1, "{'containers':[{'name':'head','command':['ray'],"
                                   "'ports':[{'name':'redis','containerPort':6379}]}]}") ","
              TASK_SPEC("worker", 2, "{'containers':[{'name':'worker'}]}")),
          {"UserValueReplaced", false, "ray",
           "ray plugin: container \"head\" of task head has its own command or args, and the "
           "plugin replaces the command with \"sh -c 'ray start ...'\" (sh then ignores the "
           "args): drop them from spec.tasks[0].template"},
          {"Conflict", false, "ray",
           "ray plugin: container \"head\" of task head declares port 6379 as \"redis\", so the "
           "plugin does not add \"gcs\" and the Service's port gcs has no endpoints: name the "
           "port \"gcs\" in spec.tasks[0].template"});
    /* The names gcs and client-server under other numbers (--clientPort=10005 is its
     * number, so its name is fine; dashboard is free): the message opens with the chain's
     * per-pod warning. */
    CHECK(JOB("{'ray':['--port=6380']}",
              TASK_SPEC("head", 1, "{'containers':[{'name':'head','ports':["
                                   "{'name':'gcs','containerPort':7000},"
                                   "{'name':'client-server','containerPort':10002}]}]}") ","
              TASK_SPEC("worker", 2, "{'containers':[{'name':'worker'}]}")),
          {"Conflict", false, "ray",
           "ray plugin: port name gcs already used by port 7000 in container head, port 6380 not "
           "added; the head Service sends gcs to 7000, where ray does not listen: make it 6380 "
           "in spec.tasks[0].template or pass --port=7000"},
          {"Conflict", false, "ray",
           "ray plugin: port name client-server already used by port 10002 in container head, "
           "port 10001 not added; the head Service sends client-server to 10002, where ray does "
           "not listen: make it 10001 in spec.tasks[0].template or pass --clientPort=10002"});
    CHECK_NONE(JOB("{'ray':['--clientPort=10002']}",
                   TASK_SPEC("head", 1, "{'containers':[{'name':'head','ports':["
                                        "{'name':'client-server','containerPort':10002}]}]}") ","
                   TASK_SPEC("worker", 2, "{'containers':[{'name':'worker'}]}")));
    /* No head task: every pod is denied (docs/plugins.md §3.8). */
    CHECK(JOB("{'ray':['--head=boss']}", TASK("head", 1) ","
              TASK_SPEC("worker", 1, "{'containers':[{'name':'worker'}]}")),
          {"TaskNotFound", true, "ray",
           "ray plugin: no task named \"boss\" (--head), so every pod of the job is denied: name "
           "the head task with --head in spec.plugins.ray, or rename the task"});
}
END_TEST

/* --chief=boss while the task is chief; the default roles may be absent. */
START_TEST(tensorflow_roles)
{
    CHECK(JOB("{'tensorflow':['--chief=boss']}", TASK("chief", 1) "," TASK("worker", 2)),
          {"TaskNotFound", false, "tensorflow",
           "tensorflow plugin: no task named \"boss\" (--chief), so TF_CONFIG has no chief: name "
           "the task with --chief in spec.plugins.tensorflow, or rename the task"});
    CHECK_NONE(JOB("{'tensorflow':[]}", TASK("worker", 2)));
    /* Standalone (one task, one replica): the plugin does nothing, so nothing to say. */
    CHECK_NONE(JOB("{'tensorflow':['--chief=boss']}", TASK("worker", 1)));
}
END_TEST

/* A TF Job of 9,000 workers: the size told is exactly that of the worst pod's TF_CONFIG. */
START_TEST(tensorflow_config_too_large)
{
    json_t *job = pc_json(JOB_NAMED("tf-dist", "{'tensorflow':[]}", TASK("ps", 1) "," TASK("worker", 9000)));
    json_t *pod = pc_json("{'metadata':{'name':'tf-dist-worker-8999'},'spec':{'containers':[{'name':'c'}]}}");
    static const struct plugin_pod_info info = {"tf-dist-worker-8999", "ns1", "worker", "8999"};
    struct plugin_ctx c = pc_ctx(&plugin_tensorflow, job, &info, NULL);
    struct wh_error err;
    struct diagnostics d;
    const char *tf;
    char want[DIAGNOSE_MSG_MAX];

    ck_assert_int_eq(pc_call(&plugin_tensorflow, &c, pod, &err), 0);
    tf = json_string_value(json_object_get(
        json_array_get(json_object_get(json_array_get(json_object_get(json_object_get(pod, "spec"),
                                                                      "containers"), 0), "env"), 0),
        "value"));
    ck_assert_ptr_nonnull(tf);
    ck_assert_uint_eq(strlen(tf), 313987);
    snprintf(want, sizeof(want),
             "tensorflow plugin: TF_CONFIG would be %zu bytes, more than the 131072 (128 KiB) one "
             "environment string can hold (the kernel's MAX_ARG_STRLEN: \"argument list too "
             "long\"), so no container can start: run fewer replicas (spec.tasks[].replicas)",
             strlen("TF_CONFIG=") + strlen(tf) + 1);
    ck_assert_int_eq(diagnose_job(job, &d), 0);
    ck_assert_uint_eq(d.n, 2);
    /* svc is implied (D1), and its VC_WORKER_HOSTS would be too large as well. */
    ck_assert_str_eq(d.items[0].message,
                     "svc plugin: env VC_WORKER_HOSTS would be 250906 bytes, more than the 131072 "
                     "(128 KiB) one environment string can hold (the kernel's MAX_ARG_STRLEN), so "
                     "no container starts: pass --inject-hosts-env=false in spec.plugins.svc and "
                     "read the host files in /etc/volcano, or run fewer worker replicas");
    ck_assert(d.items[0].fatal);
    ck_assert_str_eq(d.items[1].message, want);
    ck_assert_str_eq(diagnose_reason_name(d.items[1].reason), "ValueTooLarge");
    ck_assert(d.items[1].fatal);
    ck_assert_uint_eq(diagnose_fatal_count(&d), 2);
    json_decref(pod);
    json_decref(job);
}
END_TEST

/* The svc ConfigMap, the ssh Secret and MPI_HOST, counted without being built. */
START_TEST(host_lists_near_and_over_limits)
{
    CHECK(JOB("{'mpi':[],'svc':['--inject-hosts-env=false']}", TASK("master", 1) "," TASK("worker", 20000)),
          {"ValueTooLarge", true, "ssh",
           "ssh plugin: Secret j-ssh would hold about 1140484 bytes (its ssh config has a Host "
           "block per pod), more than the 1048576 (1 MiB) a Secret can hold, so it cannot be "
           "created and no pod starts: run fewer replicas (spec.tasks[].replicas)"},
          {"ValueTooLarge", true, "mpi",
           "mpi plugin: MPI_HOST would be 328899 bytes, more than the 131072 (128 KiB) one "
           "environment string can hold (the kernel's MAX_ARG_STRLEN), so the master cannot "
           "start: run fewer worker replicas and read /etc/volcano/worker.host"});
    CHECK(JOB("{'svc':['--inject-hosts-env=false']}", TASK("worker", 28000)),
          {"ValueNearLimit", false, "svc",
           "svc plugin: ConfigMap j-svc holds 929822 bytes of host lists, 88% of the 1048576 "
           "(1 MiB) a ConfigMap can hold: with more replicas it cannot be updated"});
    CHECK(JOB("{'svc':['--inject-hosts-env=false']}", TASK("worker", 40000)),
          {"ValueTooLarge", true, "svc",
           "svc plugin: ConfigMap j-svc would hold 1337822 bytes of host lists, more than the "
           "1048576 (1 MiB) a ConfigMap can hold, so it cannot be created and no pod starts: run "
           "fewer replicas (spec.tasks[].replicas)"});
}
END_TEST

/* The computed sizes equal what svc_configmap_data and MPI_HOST really hold. */
START_TEST(sizes_match_the_plugins)
{
    json_t *job = pc_json(JOB("{'svc':['--inject-hosts-env=false']}",
                              TASK("worker", 28000) ","
                              TASK_SPEC("x-y", 5, "{'hostname':'h','subdomain':'s'}")));
    json_t *data = NULL;
    const char *key;
    json_t *v;
    size_t total = 0;
    struct diagnostics d;
    char want[DIAGNOSE_MSG_MAX];

    ck_assert_int_eq(svc_configmap_data(job, &data), 0);
    json_object_foreach(data, key, v)
        total += strlen(key) + json_string_length(v);
    snprintf(want, sizeof(want),
             "svc plugin: ConfigMap j-svc holds %zu bytes of host lists, %zu%% of the 1048576 "
             "(1 MiB) a ConfigMap can hold: with more replicas it cannot be updated",
             total, total * 100 / 1048576);
    ck_assert_int_eq(diagnose_job(job, &d), 0);
    ck_assert_uint_eq(d.n, 1);
    ck_assert_str_eq(d.items[0].message, want);
    json_decref(data);
    json_decref(job);
}
END_TEST

/* D5: the template holds what the plugin adds: denied at the pod, said at the Job. */
START_TEST(template_conflicts)
{
    CHECK(JOB("{'svc':[],'ssh':[]}",
              TASK_SPEC("a", 1, "{'volumes':[{'name':'j-svc','emptyDir':{}},"
                                "{'name':'keys','secret':{'secretName':'mine'}}],"
                                "'containers':[{'name':'c','volumeMounts':[{'name':'keys','mountPath':'/root/.ssh'}]}]}")),
          {"Conflict", true, "ssh",
           "ssh plugin: container \"c\" of task a mounts volume \"keys\" at /root/.ssh, where the "
           "plugin mounts its ssh keys: mount it elsewhere (spec.tasks[0].template)"},
          {"Conflict", true, "svc",
           "svc plugin: task a has a volume \"j-svc\" of its own, and the plugin needs that name "
           "for its host files: rename the volume in spec.tasks[0].template.spec.volumes"});
    /* The plugin's own volume written into the template is no conflict. */
    CHECK_NONE(JOB("{'svc':[]}",
              TASK_SPEC("a", 1, "{'volumes':[{'name':'j-svc','configMap':{'name':'j-svc'}}],"
                                "'containers':[{'name':'c','volumeMounts':[{'name':'j-svc','mountPath':'/etc/volcano'}]}]}")));
    /* --ssh-key-file-path=/etc/volcano: svc's mount would take the keys' place. */
    CHECK(JOB("{'svc':[],'ssh':['--ssh-key-file-path=/etc/volcano']}", TASK("a", 1)),
          {"Conflict", true, "ssh",
           "ssh plugin: --ssh-key-file-path=/etc/volcano is where the svc plugin mounts its host "
           "files, so the keys would not be mounted: choose another path in spec.plugins.ssh"});
}
END_TEST

START_TEST(user_values_replaced)
{
    CHECK(JOB("{'env':[],'hcclrank':[],'pytorch':[]}",
              TASK_SPEC("master", 2, "{'initContainers':[{'name':'i','env':[{'name':'VC_TASK_INDEX','value':'x'}]}],"
                                     "'containers':[{'name':'c'}]}") "," TASK("worker", 2)),
          {"UserValueReplaced", false, "env",
           "env plugin: init container \"i\" of task master sets VC_TASK_INDEX, which the plugin "
           "replaces: drop it from spec.tasks[0].template"},
          {"RankNotUnique", false, "pytorch",
           "pytorch plugin: task master has 2 replicas and every master replica gets RANK 0, so "
           "the ranks collide and the training waits forever: give the master task 1 replica and "
           "put the others in the worker task"},
          {"RankNotUnique", false, "hcclrank",
           "hcclrank plugin: task master has 2 replicas, and the plugin copies pytorch's RANK, "
           "which is 0 on every master replica, so their hccl/rankIndex collide: give the master "
           "task 1 replica"});
}
END_TEST

/* 60,000 tasks and one name twice: found by sorting, told once. */
START_TEST(many_tasks_one_duplicate)
{
    json_t *job = pc_json(JOB("{}", TASK("a", 1)));
    json_t *tasks = json_object_get(json_object_get(job, "spec"), "tasks");
    struct diagnostics d;
    char name[16];

    for (int i = 0; i < 60000; i++) {
        snprintf(name, sizeof(name), "t%d", i);
        json_array_append_new(tasks, json_pack("{s:s, s:i}", "name", name, "replicas", 1));
    }
    json_array_append_new(tasks, json_pack("{s:s, s:i}", "name", "t123", "replicas", 1));
    ck_assert_int_eq(diagnose_job(job, &d), 0);
    ck_assert_uint_eq(d.n, 1);
    ck_assert_str_eq(d.items[0].message,
                     "spec.tasks[60001] has the name \"t123\" of spec.tasks[124]: the plugins see "
                     "only the first and the pods of both get the same names; rename one");
    json_decref(job);
}
END_TEST

START_TEST(list_helpers)
{
    struct diagnostics d;
    json_t *msgs;

    diagnose_init(&d);
    diagnose_add(NULL, DIAGNOSE_CONFLICT, true, "x", "ignored");
    diagnose_add(&d, DIAGNOSE_CONFLICT, true, "svc", "a %d", 1);
    diagnose_add(&d, DIAGNOSE_CONFLICT, true, "svc", "a %d", 1); /* the same: once */
    diagnose_add(&d, DIAGNOSE_TASK_DUPLICATE, false, NULL, "b");
    ck_assert_uint_eq(d.n, 2);
    ck_assert_str_eq(d.items[0].message, "svc plugin: a 1");
    ck_assert_str_eq(d.items[0].plugin, "svc");
    ck_assert_str_eq(d.items[1].message, "b");
    ck_assert_str_eq(d.items[1].plugin, "");
    for (int i = 0; i < DIAGNOSE_MAX + 3; i++)
        diagnose_add(&d, DIAGNOSE_TASK_DUPLICATE, false, NULL, "n%d", i);
    ck_assert_uint_eq(d.n, DIAGNOSE_MAX);
    ck_assert_uint_eq(d.dropped, 5);
    ck_assert_uint_eq(diagnose_fatal_count(&d), 1);
    msgs = diagnose_messages(&d, true);
    tu_assert_json_eq(msgs, "[\"svc plugin: a 1\", \"5 more diagnostics not shown\"]");
    json_decref(msgs);
    msgs = diagnose_messages(&d, false);
    ck_assert_uint_eq(json_array_size(msgs), DIAGNOSE_MAX + 1);
    json_decref(msgs);
    ck_assert_str_eq(diagnose_reason_name(DIAGNOSE_VALUE_NEAR_LIMIT), "ValueNearLimit");
    ck_assert_str_eq(diagnose_reason_name((enum diagnose_reason)99), "Unknown");
}
END_TEST

/* The keys of the findings a pod's chain tells in its own words (its warning records the
 * same key): a plugin's argument error, ray's port name taken by another number. Others
 * have none, the port flag out of range among them (the chain says another thing). */
START_TEST(keys_of_findings_the_chain_tells)
{
    json_t *job = pc_json(JOB("{'ray':['--port=6380','--nope']}",
                              TASK_SPEC("head", 1, "{'containers':[{'name':'head','ports':["
                                                   "{'name':'gcs','containerPort':7000}]}]}") ","
                              TASK_SPEC("worker", 2, "{'containers':[{'name':'worker'}]}")));
    static struct diagnostics d;
    char key[DIAGNOSE_KEY_MAX];
    char long_key[DIAGNOSE_KEY_MAX + 10];

    ck_assert_int_eq(diagnose_job(job, &d), 0);
    ck_assert_uint_eq(d.n, 2);
    ck_assert_int_eq(d.items[0].reason, DIAGNOSE_PLUGIN_ARGUMENT_INVALID);
    ck_assert_str_eq(d.items[0].key, "spec.plugins.ray");
    ck_assert_int_eq(d.items[1].reason, DIAGNOSE_CONFLICT);
    ck_assert_str_eq(d.items[1].key, "ray:spec.containers[head].ports[gcs]");
    ck_assert_str_eq(d.items[1].key, podutil_port_key(key, sizeof(key), "ray", "head", "gcs"));
    json_decref(job);

    job = pc_json(JOB("{'ssh':['--ssh-port=0']}", TASK("a", 1)));
    ck_assert_int_eq(diagnose_job(job, &d), 0);
    ck_assert_uint_eq(d.n, 1);
    ck_assert_str_eq(d.items[0].key, "");
    json_decref(job);

    /* diagnose_add has no key; diagnose_add_keyed's is cut to fit. */
    diagnose_init(&d);
    diagnose_add(&d, DIAGNOSE_CONFLICT, false, NULL, "a");
    ck_assert_str_eq(d.items[0].key, "");
    memset(long_key, 'k', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = '\0';
    diagnose_add_keyed(&d, "x", DIAGNOSE_CONFLICT, false, NULL, "b");
    diagnose_add_keyed(&d, NULL, DIAGNOSE_CONFLICT, false, NULL, "c");
    diagnose_add_keyed(&d, long_key, DIAGNOSE_CONFLICT, false, NULL, "d");
    ck_assert_str_eq(d.items[1].key, "x");
    ck_assert_str_eq(d.items[2].key, "");
    ck_assert_uint_eq(strlen(d.items[3].key), DIAGNOSE_KEY_MAX - 1);
}
END_TEST

/* A message is one printable line whatever names it quotes: C0, DEL and C1 controls '?'
 * (the Job webhook answers with the messages as they are: diagnose_messages). */
START_TEST(messages_have_no_controls)
{
    static struct diagnostics d;
    json_t *job = pc_json(JOB("{'ray':['--head=b\\u001b[2Jx\\u009by\\n']}", TASK("head", 1)));

    diagnose_init(&d);
    diagnose_add(&d, DIAGNOSE_CONFLICT, false, "svc", "a\tb\xc2\x85" "c\x7f\xc3\xa9");
    ck_assert_str_eq(d.items[0].message, "svc plugin: a?b??c?\xc3\xa9");
    ck_assert_int_eq(diagnose_job(job, &d), 0);
    ck_assert_uint_ge(d.n, 1);
    ck_assert_str_eq(d.items[0].message,
                     "ray plugin: no task named \"b?[2Jx??y?\" (--head), so every pod of the job "
                     "is denied: name the head task with --head in spec.plugins.ray, or rename the "
                     "task");
    json_decref(job);
}
END_TEST

/* diagnose_unpack(diagnose_pack(d)) is d, entry for entry; an empty list packs to nothing. */
START_TEST(pack_round_trip)
{
    static struct diagnostics d, back;
    char *buf = NULL;
    size_t len = 1;

    diagnose_init(&d);
    ck_assert_int_eq(diagnose_pack(&d, &buf, &len), 0);
    ck_assert_ptr_null(buf);
    ck_assert_uint_eq(len, 0);
    diagnose_unpack(NULL, 0, &back);
    ck_assert_uint_eq(back.n, 0);

    diagnose_add_keyed(&d, "svc:k", DIAGNOSE_CONFLICT, true, "svc", "a \xc3\xa9 %d", 1);
    diagnose_add(&d, DIAGNOSE_TASK_DUPLICATE, false, NULL, "b");
    d.dropped = 3;
    ck_assert_int_eq(diagnose_pack(&d, &buf, &len), 0);
    ck_assert_ptr_nonnull(buf);
    diagnose_unpack(buf, len, &back);
    ck_assert_uint_eq(back.n, 2);
    ck_assert_uint_eq(back.dropped, 3);
    ck_assert_int_eq(back.items[0].reason, DIAGNOSE_CONFLICT);
    ck_assert(back.items[0].fatal);
    ck_assert_str_eq(back.items[0].plugin, "svc");
    ck_assert_str_eq(back.items[0].message, "svc plugin: a \xc3\xa9 1");
    ck_assert_str_eq(back.items[0].key, "svc:k");
    ck_assert_int_eq(back.items[1].reason, DIAGNOSE_TASK_DUPLICATE);
    ck_assert(!back.items[1].fatal);
    ck_assert_str_eq(back.items[1].plugin, "");
    ck_assert_str_eq(back.items[1].message, "b");
    ck_assert_str_eq(back.items[1].key, "");
    /* Cut short: the whole entries only. */
    diagnose_unpack(buf, len - 1, &back);
    ck_assert_uint_eq(back.n, 1);
    free(buf);
}
END_TEST

/* What kube-apiserver passes on: each warning cut to 256 characters (not bytes), all of
 * them within 4096, the rest counted in a last line. */
START_TEST(messages_bounded)
{
    static struct diagnostics d;
    char text[DIAGNOSE_MSG_MAX];
    json_t *msgs;
    size_t total = 0;
    size_t i;
    json_t *m;

    diagnose_init(&d);
    /* 300 two-byte characters: cut at the 256th, 512 bytes. */
    for (i = 0; i < 150; i++)
        memcpy(text + 2 * i, "\xc3\xa9", 2);
    text[300] = '\0';
    diagnose_add(&d, DIAGNOSE_CONFLICT, true, NULL, "%s", text);
    for (i = 0; i < 20; i++) {
        memset(text, 'a' + (int)i, 250);
        text[250] = '\0';
        diagnose_add(&d, DIAGNOSE_CONFLICT, true, NULL, "%s", text);
    }
    msgs = diagnose_messages(&d, false);
    ck_assert_ptr_nonnull(msgs);
    /* 150 + 15 * 250 = 3900 characters; the 16th would pass 4096 - 48. */
    ck_assert_uint_eq(json_array_size(msgs), 17);
    ck_assert_uint_eq(json_string_length(json_array_get(msgs, 0)), 300);
    json_array_foreach(msgs, i, m) {
        if (i < 16)
            total += i == 0 ? 150 : json_string_length(m);
    }
    ck_assert_uint_eq(total, 3900);
    ck_assert_str_eq(json_string_value(json_array_get(msgs, 16)), "5 more diagnostics not shown");
    json_decref(msgs);

    /* One warning longer than 256 characters is cut there. */
    diagnose_init(&d);
    memset(text, 'x', DIAGNOSE_MSG_MAX - 1);
    text[DIAGNOSE_MSG_MAX - 1] = '\0';
    diagnose_add(&d, DIAGNOSE_CONFLICT, true, NULL, "%s", text);
    msgs = diagnose_messages(&d, false);
    ck_assert_uint_eq(json_array_size(msgs), 1);
    ck_assert_uint_eq(json_string_length(json_array_get(msgs, 0)), DIAGNOSE_WARNING_CHARS);
    json_decref(msgs);
}
END_TEST

static Suite *diagnose_suite(void)
{
    Suite *s = suite_create("diagnose");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, clean_jobs_say_nothing);
    tcase_add_test(tc, plugins_as_a_list);
    tcase_add_test(tc, framework_entries);
    tcase_add_test(tc, argument_errors_first);
    tcase_add_test(tc, job_name_with_a_dot);
    tcase_add_test(tc, hostname_too_long);
    tcase_add_test(tc, pytorch_tasks_and_ranks);
    tcase_add_test(tc, pytorch_wait_for_master_name_taken);
    tcase_add_test(tc, mpi_master_missing);
    tcase_add_test(tc, ray_containers);
    tcase_add_test(tc, tensorflow_roles);
    tcase_add_test(tc, tensorflow_config_too_large);
    tcase_add_test(tc, host_lists_near_and_over_limits);
    tcase_add_test(tc, sizes_match_the_plugins);
    tcase_add_test(tc, template_conflicts);
    tcase_add_test(tc, user_values_replaced);
    tcase_add_test(tc, many_tasks_one_duplicate);
    tcase_add_test(tc, list_helpers);
    tcase_add_test(tc, keys_of_findings_the_chain_tells);
    tcase_add_test(tc, messages_have_no_controls);
    tcase_add_test(tc, pack_round_trip);
    tcase_add_test(tc, messages_bounded);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(diagnose_suite());
}
