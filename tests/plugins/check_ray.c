/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_ray.c - the ray plugin's pod side (docs/plugins.md §4.7, §3.8, §5.3, §8 #1,
 * #27, D4, D5, D7).
 */
/* The cases are JSON in adjacent string literals and macros, laid out by hand (one
 * container or field a line); clang-format would break them apart. */
/* clang-format off */
#include <check.h>
#include <jansson.h>

#include "plugins/plugin.h"
#include "tests/plugincase.h"

#define P (&plugin_ray)

/* A Job named j in ns1 (quotes written as '). */
#define JOB(plugins, tasks)                                                                 \
    "{'apiVersion':'batch.volcano.sh/v1alpha1','kind':'Job',"                               \
    " 'metadata':{'name':'j','namespace':'ns1','uid':'u1'},"                                \
    " 'spec':{'plugins':{'ray':" plugins ",'svc':[]},'tasks':[" tasks "]}}"
#define TASK(name, n) "{'name':'" name "','replicas':" #n ",'template':{'spec':{}}}"
#define JOB_HW(plugins) JOB(plugins, TASK("head", 1) "," TASK("worker", 2))

#define POD(name, ctrs) "{'metadata':{'name':'" name "'},'spec':{'containers':[" ctrs "]}}"
#define HEAD_CMD(p, d, c)                                                                      \
    "['sh','-c','ray start --head --block --dashboard-host=0.0.0.0 --port=" p                 \
    " --dashboard-port=" d " --ray-client-server-port=" c "']"
#define WORKER_CMD(addr) "['sh','-c','ray start --block --address=" addr "']"
#define PORTS3(p, d, c)                                                                        \
    "{'name':'gcs','containerPort':" p "},{'name':'dashboard','containerPort':" d "},"          \
    "{'name':'client-server','containerPort':" c "}"
#define HEAD_DEFAULT                                                                           \
    "{'name':'head','ports':[" PORTS3("6379", "8265", "10001") "],"                            \
    " 'command':" HEAD_CMD("6379", "8265", "10001") "}"

static const struct plugin_pod_info H0 = {"j-head-0", "ns1", "head", "0"};
static const struct plugin_pod_info W1 = {"j-worker-1", "ns1", "worker", "1"};

/* examples/ray-cluster-job.yaml: head x1, worker x2, default arguments. */
#define EX_JOB                                                                                 \
    "{'apiVersion':'batch.volcano.sh/v1alpha1','kind':'Job',"                                  \
    " 'metadata':{'name':'ray-cluster-job','namespace':'default','uid':'u4'},"                 \
    " 'spec':{'queue':'default','minAvailable':3,'schedulerName':'volcano',"                   \
    "  'plugins':{'ray':[],'svc':[]},'policies':[{'event':'PodEvicted','action':'RestartJob'}]," \
    "  'tasks':[{'replicas':1,'name':'head','template':{'spec':{'containers':[{'name':'head',"  \
    "     'image':'rayproject/ray:latest-py311-cpu','resources':{'limits':{'cpu':2,'memory':'4Gi'}}}]," \
    "     'restartPolicy':'OnFailure'}}},"                                                      \
    "   {'replicas':2,'name':'worker','template':{'spec':{'containers':[{'name':'worker',"       \
    "     'image':'rayproject/ray:latest-py311-cpu','resources':{'limits':{'cpu':2,'memory':'4Gi'}}}]," \
    "     'restartPolicy':'OnFailure'}}}]}}"
#define EX_POD(name, task, ctr, extra)                                                         \
    "{'metadata':{'name':'" name "','namespace':'default',"                                    \
    "  'annotations':{'volcano.sh/task-spec':'" task "'}},"                                    \
    " 'spec':{'containers':[{'name':'" ctr "','image':'rayproject/ray:latest-py311-cpu',"      \
    "   'resources':{'limits':{'cpu':'2','memory':'4Gi'}}" extra "}],'restartPolicy':'OnFailure'}}"

START_TEST(example_ray_cluster_job)
{
    static const struct plugin_pod_info h0 = {"ray-cluster-job-head-0", "default", "head", "0"};
    static const struct plugin_pod_info w0 = {"ray-cluster-job-worker-0", "default", "worker", "0"};

    pc_ok(P, EX_JOB, &h0, EX_POD("ray-cluster-job-head-0", "head", "head", ""),
          EX_POD("ray-cluster-job-head-0", "head", "head",
                 ",'ports':[" PORTS3("6379", "8265", "10001") "],"
                 "'command':" HEAD_CMD("6379", "8265", "10001")),
          "[]");
    pc_ok(P, EX_JOB, &w0, EX_POD("ray-cluster-job-worker-0", "worker", "worker", ""),
          EX_POD("ray-cluster-job-worker-0", "worker", "worker",
                 ",'command':" WORKER_CMD("ray-cluster-job-head-0.ray-cluster-job:6379")),
          "[]");
}
END_TEST

/* docs/plugins.md §3.8: no head task blocks every pod of the Job. */
START_TEST(no_head_task_is_error)
{
    static const struct plugin_pod_info other = {"j-x-0", "ns1", "x", "0"};
    const char *job = JOB("[]", TASK("worker", 2) "," TASK("x", 1));

    pc_err(P, job, &W1, POD("j-worker-1", "{'name':'worker'}"),
           "job j doesn't have head task head", "[]");
    pc_err(P, job, &H0, POD("j-head-0", "{'name':'head'}"), "job j doesn't have head task head",
           "[]");
    pc_err(P, job, &other, POD("j-x-0", "{'name':'x'}"), "job j doesn't have head task head", "[]");
    pc_err(P, JOB_HW("['--head=boss']"), &H0, POD("j-head-0", "{'name':'head'}"),
           "job j doesn't have head task boss", "[]");
}
END_TEST

/* §5.3: no worker task is nothing special; the head pod is still edited. */
START_TEST(no_worker_task)
{
    pc_ok(P, JOB("[]", TASK("head", 1)), &H0, POD("j-head-0", "{'name':'head'}"),
          POD("j-head-0", HEAD_DEFAULT), "[]");
}
END_TEST

/* Each port only when its number is free; a taken name is a warning (D5). */
START_TEST(head_ports_only_when_free)
{
    pc_ok(P, JOB_HW("[]"), &H0,
          POD("j-head-0", "{'name':'head','ports':[{'name':'web','containerPort':8265}]}"),
          POD("j-head-0", "{'name':'head','ports':[{'name':'web','containerPort':8265},"
                          " {'name':'gcs','containerPort':6379},"
                          " {'name':'client-server','containerPort':10001}],"
                          " 'command':" HEAD_CMD("6379", "8265", "10001") "}"),
          "[]");
    pc_ok(P, JOB_HW("[]"), &H0,
          POD("j-head-0", "{'name':'head','ports':[{'name':'gcs','containerPort':7000}]}"),
          POD("j-head-0", "{'name':'head','ports':[{'name':'gcs','containerPort':7000},"
                          " {'name':'dashboard','containerPort':8265},"
                          " {'name':'client-server','containerPort':10001}],"
                          " 'command':" HEAD_CMD("6379", "8265", "10001") "}"),
          "['ray plugin: port name gcs already used by port 7000 in container head, port 6379 not added']");
}
END_TEST

/* Only the named container's command changes; args, other containers, init containers stay. */
START_TEST(only_named_container_command_replaced)
{
    pc_ok(P, JOB_HW("[]"), &H0,
          "{'metadata':{'name':'j-head-0'},'spec':{"
          " 'initContainers':[{'name':'head','command':['init']}],"
          " 'containers':[{'name':'sidecar','command':['log']},"
          "  {'name':'head','command':['python','x.py'],'args':['--a','b']},"
          "  {'name':'worker','command':['w']}]}}",
          "{'metadata':{'name':'j-head-0'},'spec':{"
          " 'initContainers':[{'name':'head','command':['init']}],"
          " 'containers':[{'name':'sidecar','command':['log']},"
          "  {'name':'head','command':" HEAD_CMD("6379", "8265", "10001") ",'args':['--a','b'],"
          "   'ports':[" PORTS3("6379", "8265", "10001") "]},"
          "  {'name':'worker','command':['w']}]}}",
          "['ray plugin: container \\'head\\' command [\\'python\\',\\'x.py\\'] replaced by "
          "[\\'sh\\',\\'-c\\',\\'ray start --head --block --d...: run your program in another "
          "container',"
          " 'ray plugin: container \\'head\\' args [\\'--a\\',\\'b\\'] are ignored by the new "
          "command (sh -c \\'ray start ...\\'): drop them from the pod template']");
    pc_ok(P, JOB_HW("[]"), &W1,
          "{'metadata':{'name':'j-worker-1'},'spec':{"
          " 'initContainers':[{'name':'worker'}],"
          " 'containers':[{'name':'head'},{'name':'worker','command':['old'],'args':['x']}]}}",
          "{'metadata':{'name':'j-worker-1'},'spec':{"
          " 'initContainers':[{'name':'worker'}],"
          " 'containers':[{'name':'head'},"
          "  {'name':'worker','command':" WORKER_CMD("j-head-0.j:6379") ",'args':['x']}]}}",
          "['ray plugin: container \\'worker\\' command [\\'old\\'] replaced by "
          "[\\'sh\\',\\'-c\\',\\'ray start --block --address=...: run your program in another "
          "container',"
          " 'ray plugin: container \\'worker\\' args [\\'x\\'] are ignored by the new command "
          "(sh -c \\'ray start ...\\'): drop them from the pod template']");
    /* Pods of other tasks are untouched. */
    pc_ok(P, JOB("[]", TASK("head", 1) "," TASK("x", 1)), &(struct plugin_pod_info){"j-x-0", "ns1", "x", "0"},
          POD("j-x-0", "{'name':'head'},{'name':'worker'}"),
          POD("j-x-0", "{'name':'head'},{'name':'worker'}"), "[]");
}
END_TEST

/* The worker's address is replica 0 of the head task, template names respected. */
START_TEST(worker_address_template_names)
{
    pc_ok(P, JOB("['--port=7000']",
                 "{'name':'head','replicas':1,'template':{'spec':{'hostname':'rh','subdomain':'rs'}}},"
                 TASK("worker", 2)),
          &W1, POD("j-worker-1", "{'name':'worker'}"),
          POD("j-worker-1", "{'name':'worker','command':" WORKER_CMD("rh.rs:7000") "}"), "[]");
}
END_TEST

/* D4: --clientServerPort is an alias of --clientPort and parsing continues. */
START_TEST(client_server_port_alias)
{
    const char *job = JOB_HW("['--clientServerPort=10002','--port=7000']");

    pc_ok(P, job, &H0, POD("j-head-0", "{'name':'head'}"),
          POD("j-head-0", "{'name':'head','ports':[" PORTS3("7000", "8265", "10002") "],"
                          " 'command':" HEAD_CMD("7000", "8265", "10002") "}"),
          "[]");
    pc_ok(P, job, &W1, POD("j-worker-1", "{'name':'worker'}"),
          POD("j-worker-1", "{'name':'worker','command':" WORKER_CMD("j-head-0.j:7000") "}"), "[]");
    /* The last occurrence wins between the two names. */
    pc_ok(P, JOB_HW("['--clientPort=1','--clientServerPort=2','-clientPort','3']"), &H0,
          POD("j-head-0", "{'name':'head'}"),
          POD("j-head-0", "{'name':'head','ports':[" PORTS3("6379", "8265", "3") "],"
                          " 'command':" HEAD_CMD("6379", "8265", "3") "}"),
          "[]");
}
END_TEST

/* Flag names are camelCase: a dashed name is unknown → warning, later flags ignored. */
START_TEST(unknown_flag_warning)
{
    pc_ok(P, JOB_HW("['--dashboardPort=9000','--dashboard-port=9100','--port=7000']"), &H0,
          POD("j-head-0", "{'name':'head'}"),
          POD("j-head-0", "{'name':'head','ports':[" PORTS3("6379", "9000", "10001") "],"
                          " 'command':" HEAD_CMD("6379", "9000", "10001") "}"),
          "['ray plugin: flag provided but not defined: -dashboard-port, later arguments ignored']");
}
END_TEST

/* Custom container names (and task names) through the camelCase flags. */
START_TEST(custom_containers)
{
    const char *job = JOB("['--head=boss','--headContainer=ray-head','--worker=hand',"
                          "'--workerContainer=ray-worker']",
                          TASK("boss", 1) "," TASK("hand", 3));
    static const struct plugin_pod_info b0 = {"j-boss-0", "ns1", "boss", "0"};
    static const struct plugin_pod_info h2 = {"j-hand-2", "ns1", "hand", "2"};

    pc_ok(P, job, &b0, POD("j-boss-0", "{'name':'head'},{'name':'ray-head'}"),
          POD("j-boss-0", "{'name':'head'},{'name':'ray-head','ports':["
                          PORTS3("6379", "8265", "10001") "],"
                          " 'command':" HEAD_CMD("6379", "8265", "10001") "}"),
          "[]");
    pc_ok(P, job, &h2, POD("j-hand-2", "{'name':'worker'},{'name':'ray-worker'}"),
          POD("j-hand-2", "{'name':'worker'},{'name':'ray-worker','command':"
                          WORKER_CMD("j-boss-0.j:6379") "}"),
          "[]");
}
END_TEST

/* D5: an identical command (and the ports) already present → no change at all. */
START_TEST(identical_command_no_change)
{
    pc_ok(P, JOB_HW("[]"), &W1,
          POD("j-worker-1", "{'name':'worker','command':" WORKER_CMD("j-head-0.j:6379") "}"),
          POD("j-worker-1", "{'name':'worker','command':" WORKER_CMD("j-head-0.j:6379") "}"),
          "[]");
    pc_ok(P, JOB_HW("[]"), &H0,
          POD("j-head-0", "{'name':'head','ports':[{'name':'gcs','containerPort':6379,'protocol':'TCP'},"
                          "{'name':'dashboard','containerPort':8265,'protocol':'TCP'},"
                          "{'name':'client-server','containerPort':10001,'protocol':'TCP'}],"
                          "'command':" HEAD_CMD("6379", "8265", "10001") "}"),
          POD("j-head-0", "{'name':'head','ports':[{'name':'gcs','containerPort':6379,'protocol':'TCP'},"
                          "{'name':'dashboard','containerPort':8265,'protocol':'TCP'},"
                          "{'name':'client-server','containerPort':10001,'protocol':'TCP'}],"
                          "'command':" HEAD_CMD("6379", "8265", "10001") "}"),
          "[]");
}
END_TEST

/* D5, D16: args without a command (the image's entrypoint) are ignored by sh -c once the
 * command is set: told, and left as they are; an identical command with args says nothing. */
START_TEST(args_ignored_warned)
{
    pc_ok(P, JOB_HW("[]"), &W1, POD("j-worker-1", "{'name':'worker','args':['serve']}"),
          POD("j-worker-1", "{'name':'worker','args':['serve'],"
                            " 'command':" WORKER_CMD("j-head-0.j:6379") "}"),
          "['ray plugin: container \\'worker\\' args [\\'serve\\'] are ignored by the new command "
          "(sh -c \\'ray start ...\\'): drop them from the pod template']");
    pc_ok(P, JOB_HW("[]"), &W1,
          POD("j-worker-1", "{'name':'worker','args':['serve'],"
                            " 'command':" WORKER_CMD("j-head-0.j:6379") "}"),
          POD("j-worker-1", "{'name':'worker','args':['serve'],"
                            " 'command':" WORKER_CMD("j-head-0.j:6379") "}"),
          "[]");
}
END_TEST

/* containerPort is narrowed to 32 bits; the command keeps the full value. */
START_TEST(port_narrowed_command_full)
{
    pc_ok(P, JOB_HW("['--port=4294967297']"), &H0, POD("j-head-0", "{'name':'head'}"),
          POD("j-head-0", "{'name':'head','ports':[" PORTS3("1", "8265", "10001") "],"
                          " 'command':" HEAD_CMD("4294967297", "8265", "10001") "}"),
          "[]");
}
END_TEST

static Suite *ray_suite(void)
{
    Suite *s = suite_create("plugin_ray");
    TCase *tc = tcase_create("on_pod_create");

    tcase_add_test(tc, example_ray_cluster_job);
    tcase_add_test(tc, no_head_task_is_error);
    tcase_add_test(tc, no_worker_task);
    tcase_add_test(tc, head_ports_only_when_free);
    tcase_add_test(tc, only_named_container_command_replaced);
    tcase_add_test(tc, worker_address_template_names);
    tcase_add_test(tc, client_server_port_alias);
    tcase_add_test(tc, unknown_flag_warning);
    tcase_add_test(tc, custom_containers);
    tcase_add_test(tc, identical_command_no_change);
    tcase_add_test(tc, args_ignored_warned);
    tcase_add_test(tc, port_narrowed_command_full);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(ray_suite());
}
