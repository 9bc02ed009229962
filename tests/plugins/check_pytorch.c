/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_pytorch.c - the pytorch plugin's pod side (docs/plugins.md §4.4, §5.3,
 * §8 #5, #21, #22, D4, D5).
 */
/* The cases are JSON in adjacent string literals and macros, laid out by hand (one
 * container or field a line); clang-format would break them apart. */
/* clang-format off */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>

#include "plugins/plugin.h"
#include "tests/plugincase.h"

#define P (&plugin_pytorch)

/* A Job named j in ns1 (quotes written as '). */
#define JOB(plugins, tasks)                                                                 \
    "{'apiVersion':'batch.volcano.sh/v1alpha1','kind':'Job',"                               \
    " 'metadata':{'name':'j','namespace':'ns1','uid':'u1'},"                                \
    " 'spec':{'plugins':{'pytorch':" plugins ",'svc':[]},'tasks':[" tasks "]}}"
#define TASK(name, n) "{'name':'" name "','replicas':" #n ",'template':{'spec':{}}}"

#define POD_IN(name) "{'metadata':{'name':'" name "'},'spec':{'containers':[{'name':'c'}]}}"
#define PORT(n) "{'name':'pytorchjob-port','containerPort':" #n "}"
#define ENV(k, v) "{'name':'" k "','value':'" v "'}"
/* The default plugin's additions to container c (MASTER_ADDR j-master-0.j). */
#define POD_OUT(name, world, rank_env)                                                       \
    "{'metadata':{'name':'" name "'},'spec':{'containers':[{'name':'c',"                    \
    " 'ports':[" PORT(23456) "],"                                                            \
    " 'env':[" ENV("MASTER_ADDR", "j-master-0.j") "," ENV("MASTER_PORT", "23456") ","         \
    ENV("WORLD_SIZE", world) rank_env "]}]}}"

/* docs/plugins.md §4.4 step 6, {A} = j-master-0.j, {P} = 23456 and {T} = T (a string literal). */
#define WAIT_SCRIPT(T)                                                                       \
    "echo \"Waiting for master node j-master-0.j:23456 to be ready...\"\n"                   \
    "TIMEOUT=" T "\n"                                                                        \
    "ELAPSED=0\n"                                                                            \
    "until { nc -z j-master-0.j 23456 || echo > /dev/tcp/j-master-0.j/23456; } 2>/dev/null; do\n" \
    "  if [ $ELAPSED -ge $TIMEOUT ]; then\n"                                                 \
    "    echo \"Timeout waiting for master after ${TIMEOUT} seconds\"\n"                     \
    "    exit 1\n"                                                                           \
    "  fi\n"                                                                                 \
    "  echo \"Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)\"\n"     \
    "  sleep 2\n"                                                                            \
    "  ELAPSED=$((ELAPSED + 2))\n"                                                           \
    "done\n"                                                                                 \
    "echo \"Master node is ready!\""

/* §5.3: no master task, no change at all, no error (even a bad worker index). */
START_TEST(no_master_task_no_change)
{
    static const struct plugin_pod_info info = {"j-worker-x", "ns1", "worker", "x"};

    pc_ok(P, JOB("[]", TASK("worker", 2)), &info, POD_IN("j-worker-x"), POD_IN("j-worker-x"),
          "[]");
}
END_TEST

/* examples/pytorch-job.yaml: master x1, worker x2, its own arguments. */
#define EX_JOB                                                                                 \
    "{'apiVersion':'batch.volcano.sh/v1alpha1','kind':'Job',"                                  \
    " 'metadata':{'name':'pytorch-job','namespace':'default','uid':'u3'},"                     \
    " 'spec':{'queue':'default','minAvailable':3,'schedulerName':'volcano',"                   \
    "  'plugins':{'pytorch':['--master=master','--worker=worker','--port=23456'],'svc':[]},"   \
    "  'tasks':[{'replicas':1,'name':'master',"                                                \
    "    'policies':[{'event':'TaskCompleted','action':'CompleteJob'}],"                        \
    "    'template':{'spec':{'containers':[{'name':'pytorch',"                                 \
    "      'image':'pytorch/pytorch:2.4.1-cuda11.8-cudnn9-runtime','imagePullPolicy':'IfNotPresent',"\
    "      'command':['python','-c','import torch.distributed as dist']}],'restartPolicy':'OnFailure'}}},"\
    "   {'replicas':2,'name':'worker','template':{'spec':{'containers':[{'name':'pytorch',"      \
    "      'image':'pytorch/pytorch:2.4.1-cuda11.8-cudnn9-runtime','imagePullPolicy':'IfNotPresent',"\
    "      'command':['python','-c','import torch.distributed as dist']}],'restartPolicy':'OnFailure'}}}]}}"
#define EX_POD(name, task, extra)                                                                \
    "{'metadata':{'name':'" name "','namespace':'default',"                                      \
    "  'annotations':{'volcano.sh/task-spec':'" task "'}},"                                      \
    " 'spec':{'containers':[{'name':'pytorch','image':'pytorch/pytorch:2.4.1-cuda11.8-cudnn9-runtime',"\
    "   'imagePullPolicy':'IfNotPresent','command':['python','-c','import torch.distributed as dist']" \
    extra "}],'restartPolicy':'OnFailure'}}"
#define EX_ADD(rank)                                                                            \
    ",'ports':[" PORT(23456) "],"                                                                \
    "'env':[" ENV("MASTER_ADDR", "pytorch-job-master-0.pytorch-job") "," ENV("MASTER_PORT", "23456") \
    "," ENV("WORLD_SIZE", "3") "," ENV("RANK", rank) "]"

START_TEST(example_pytorch_job)
{
    static const struct plugin_pod_info m0 = {"pytorch-job-master-0", "default", "master", "0"};
    static const struct plugin_pod_info w0 = {"pytorch-job-worker-0", "default", "worker", "0"};
    static const struct plugin_pod_info w1 = {"pytorch-job-worker-1", "default", "worker", "1"};

    pc_ok(P, EX_JOB, &m0, EX_POD("pytorch-job-master-0", "master", ""),
          EX_POD("pytorch-job-master-0", "master", EX_ADD("0")), "[]");
    pc_ok(P, EX_JOB, &w0, EX_POD("pytorch-job-worker-0", "worker", ""),
          EX_POD("pytorch-job-worker-0", "worker", EX_ADD("1")), "[]");
    pc_ok(P, EX_JOB, &w1, EX_POD("pytorch-job-worker-1", "worker", ""),
          EX_POD("pytorch-job-worker-1", "worker", EX_ADD("2")), "[]");
}
END_TEST

/* MASTER_ADDR: replica 0 of the master task, template hostname/subdomain respected. */
START_TEST(master_addr_template_names)
{
    static const struct plugin_pod_info info = {"j-worker-0", "ns1", "worker", "0"};
#define ADDR_OUT(addr)                                                                        \
    "{'metadata':{'name':'j-worker-0'},'spec':{'containers':[{'name':'c',"                   \
    " 'ports':[" PORT(23456) "],'env':[" ENV("MASTER_ADDR", addr) ","                         \
    ENV("MASTER_PORT", "23456") "," ENV("WORLD_SIZE", "3") "," ENV("RANK", "1") "]}]}}"

    pc_ok(P, JOB("[]", "{'name':'master','replicas':2,"
                       " 'template':{'spec':{'hostname':'m','subdomain':'s'}}}," TASK("worker", 1)),
          &info, POD_IN("j-worker-0"), ADDR_OUT("m.s"), "[]");
    pc_ok(P, JOB("[]", "{'name':'master','replicas':1,'template':{'spec':{'subdomain':'s'}}},"
                       TASK("worker", 2)),
          &info, POD_IN("j-worker-0"), ADDR_OUT("j-master-0.s"), "[]");
    pc_ok(P, JOB("[]", "{'name':'master','replicas':1,'template':{'spec':{'hostname':'h'}}},"
                       TASK("worker", 2)),
          &info, POD_IN("j-worker-0"), ADDR_OUT("h.j"), "[]");
#undef ADDR_OUT
}
END_TEST

/* WORLD_SIZE counts master and worker only; other tasks' pods get no RANK (§8 #21). */
START_TEST(world_size_and_other_tasks)
{
    static const struct plugin_pod_info other = {"j-ps-0", "ns1", "ps", "0"};
    static const struct plugin_pod_info m1 = {"j-master-1", "ns1", "master", "1"};
    const char *job = JOB("[]", TASK("master", 2) "," TASK("ps", 5) "," TASK("worker", 3));

    pc_ok(P, job, &other, POD_IN("j-ps-0"), POD_OUT("j-ps-0", "5", ""), "[]");
    /* Every master replica gets RANK 0. */
    pc_ok(P, job, &m1, POD_IN("j-master-1"), POD_OUT("j-master-1", "5", "," ENV("RANK", "0")),
          "[]");
}
END_TEST

/* §5.3: no worker task: masters get RANK 0 and WORLD_SIZE = master replicas. */
START_TEST(no_worker_task)
{
    static const struct plugin_pod_info m0 = {"j-master-0", "ns1", "master", "0"};

    pc_ok(P, JOB("[]", TASK("master", 1)), &m0, POD_IN("j-master-0"),
          POD_OUT("j-master-0", "1", "," ENV("RANK", "0")), "[]");
}
END_TEST

/* Worker RANK = index + 1, regardless of the number of masters. */
START_TEST(worker_rank_index_plus_one)
{
    static const struct plugin_pod_info w7 = {"j-worker-7", "ns1", "worker", "7"};

    pc_ok(P, JOB("[]", TASK("master", 3) "," TASK("worker", 8)), &w7, POD_IN("j-worker-7"),
          POD_OUT("j-worker-7", "11", "," ENV("RANK", "8")), "[]");
}
END_TEST

/* docs/plugins.md §4.4 step 4: a worker pod needs a numeric index; a master pod does not. */
START_TEST(worker_non_numeric_index_is_error)
{
    static const struct plugin_pod_info wx = {"j-worker-x", "ns1", "worker", "x"};
    static const struct plugin_pod_info mx = {"j-master-x", "ns1", "master", "x"};
    const char *job = JOB("['--wait-master-enabled']", TASK("master", 1) "," TASK("worker", 1));

    pc_err(P, job, &wx, POD_IN("j-worker-x"), "pod index \"x\" of pod j-worker-x is not a number",
           "[]");
    pc_ok(P, job, &mx, POD_IN("j-master-x"), POD_OUT("j-master-x", "2", "," ENV("RANK", "0")),
          "[]");
}
END_TEST

/* Ports: added only when no port has that number; a name clash is a warning (D5). */
START_TEST(port_rules)
{
    static const struct plugin_pod_info m0 = {"j-master-0", "ns1", "master", "0"};
    const char *job = JOB("[]", TASK("master", 1));

    pc_ok(P, job, &m0,
          "{'metadata':{'name':'j-master-0'},'spec':{'containers':["
          " {'name':'a','ports':[{'name':'x','containerPort':23456,'protocol':'UDP'}]},"
          " {'name':'b','ports':[{'name':'pytorchjob-port','containerPort':1234}]},"
          " {'name':'c','ports':[{'name':'http','containerPort':80}]}]}}",
          "{'metadata':{'name':'j-master-0'},'spec':{'containers':["
          " {'name':'a','ports':[{'name':'x','containerPort':23456,'protocol':'UDP'}],'env':["
          ENV("MASTER_ADDR", "j-master-0.j") "," ENV("MASTER_PORT", "23456") ","
          ENV("WORLD_SIZE", "1") "," ENV("RANK", "0") "]},"
          " {'name':'b','ports':[{'name':'pytorchjob-port','containerPort':1234}],'env':["
          ENV("MASTER_ADDR", "j-master-0.j") "," ENV("MASTER_PORT", "23456") ","
          ENV("WORLD_SIZE", "1") "," ENV("RANK", "0") "]},"
          " {'name':'c','ports':[{'name':'http','containerPort':80}," PORT(23456) "],'env':["
          ENV("MASTER_ADDR", "j-master-0.j") "," ENV("MASTER_PORT", "23456") ","
          ENV("WORLD_SIZE", "1") "," ENV("RANK", "0") "]}]}}",
          "['pytorch plugin: port name pytorchjob-port already used by port 1234 in container b,"
          " port 23456 not added']");
}
END_TEST

/* containerPort is the flag narrowed to 32 bits; MASTER_PORT keeps the full value. */
START_TEST(port_narrowed_env_full)
{
    static const struct plugin_pod_info m0 = {"j-master-0", "ns1", "master", "0"};

    pc_ok(P, JOB("['--port=4294967297']", TASK("master", 1)), &m0, POD_IN("j-master-0"),
          "{'metadata':{'name':'j-master-0'},'spec':{'containers':[{'name':'c',"
          " 'ports':[" PORT(1) "],"
          " 'env':[" ENV("MASTER_ADDR", "j-master-0.j") "," ENV("MASTER_PORT", "4294967297") ","
          ENV("WORLD_SIZE", "1") "," ENV("RANK", "0") "]}]}}",
          "[]");
}
END_TEST

/* D5: a user RANK earlier in the list is replaced in place; identical entries stay. */
START_TEST(user_env_replaced_in_place)
{
    static const struct plugin_pod_info w0 = {"j-worker-0", "ns1", "worker", "0"};

    pc_ok(P, JOB("[]", TASK("master", 1) "," TASK("worker", 1)), &w0,
          "{'metadata':{'name':'j-worker-0'},'spec':{'containers':[{'name':'c','env':["
          ENV("RANK", "5") "," ENV("MASTER_PORT", "23456") "," ENV("A", "a") "]}]}}",
          "{'metadata':{'name':'j-worker-0'},'spec':{'containers':[{'name':'c','env':["
          ENV("RANK", "1") "," ENV("MASTER_PORT", "23456") "," ENV("A", "a") ","
          ENV("MASTER_ADDR", "j-master-0.j") "," ENV("WORLD_SIZE", "2") "],"
          " 'ports':[" PORT(23456) "]}]}}",
          "['pytorch plugin: container \\'c\\' sets RANK=\\'5\\', replaced by \\'1\\': the plugin sets it, drop it from the pod template']");
}
END_TEST

/* The wait-for-master init container: worker pods only, flag on, appended once. */
START_TEST(wait_for_master_container)
{
    static const struct plugin_pod_info w0 = {"j-worker-0", "ns1", "worker", "0"};
    static const struct plugin_pod_info m0 = {"j-master-0", "ns1", "master", "0"};
    const char *job = JOB("['--wait-master-enabled','--wait-master-timeout=60','--wait-master-image=x']",
                          TASK("master", 1) "," TASK("worker", 1));
    char *want = pc_subst(
        "{'metadata':{'name':'j-worker-0'},'spec':{"
        " 'initContainers':[{'name':'setup','image':'busybox'},"
        "   {'name':'wait-for-master','image':'x','command':['sh','-c',@@]}],"
        " 'containers':[{'name':'c','ports':[" PORT(23456) "],'env':["
        ENV("MASTER_ADDR", "j-master-0.j") "," ENV("MASTER_PORT", "23456") ","
        ENV("WORLD_SIZE", "2") "," ENV("RANK", "1") "]}]}}",
        WAIT_SCRIPT("60"));
    json_t *pod;
    const char *script;

    pod = pc_ok_keep(P, job, &w0,
                     "{'metadata':{'name':'j-worker-0'},'spec':{"
                     " 'initContainers':[{'name':'setup','image':'busybox'}],"
                     " 'containers':[{'name':'c'}]}}",
                     want, "[]");
    script = json_string_value(json_array_get(json_object_get(json_array_get(
        json_object_get(json_object_get(pod, "spec"), "initContainers"), 1), "command"), 2));
    ck_assert_str_eq(script, WAIT_SCRIPT("60"));
    json_decref(pod);
    free(want);

    /* Master pods never get it. */
    pc_ok(P, job, &m0, POD_IN("j-master-0"), POD_OUT("j-master-0", "2", "," ENV("RANK", "0")),
          "[]");
    /* Flag off (default): no init container. */
    pc_ok(P, JOB("[]", TASK("master", 1) "," TASK("worker", 1)), &w0, POD_IN("j-worker-0"),
          POD_OUT("j-worker-0", "2", "," ENV("RANK", "1")), "[]");
}
END_TEST

/* Defaults: timeout 300, image busybox:1.36.1; an existing container of that name wins. */
START_TEST(wait_for_master_defaults_and_existing)
{
    static const struct plugin_pod_info w0 = {"j-worker-0", "ns1", "worker", "0"};
    const char *job = JOB("['--wait-master-enabled']", TASK("master", 1) "," TASK("worker", 1));
    char *want = pc_subst(
        "{'metadata':{'name':'j-worker-0'},'spec':{"
        " 'containers':[{'name':'c','ports':[" PORT(23456) "],'env':["
        ENV("MASTER_ADDR", "j-master-0.j") "," ENV("MASTER_PORT", "23456") ","
        ENV("WORLD_SIZE", "2") "," ENV("RANK", "1") "]}],"
        " 'initContainers':[{'name':'wait-for-master','image':'busybox:1.36.1',"
        "   'command':['sh','-c',@@]}]}}",
        WAIT_SCRIPT("300"));

    pc_ok(P, job, &w0, POD_IN("j-worker-0"), want, "[]");
    free(want);

    pc_ok(P, job, &w0,
          "{'metadata':{'name':'j-worker-0'},'spec':{"
          " 'initContainers':[{'name':'wait-for-master','image':'mine'}],"
          " 'containers':[{'name':'c'}]}}",
          "{'metadata':{'name':'j-worker-0'},'spec':{"
          " 'initContainers':[{'name':'wait-for-master','image':'mine'}],"
          " 'containers':[{'name':'c','ports':[" PORT(23456) "],'env':["
          ENV("MASTER_ADDR", "j-master-0.j") "," ENV("MASTER_PORT", "23456") ","
          ENV("WORLD_SIZE", "2") "," ENV("RANK", "1") "]}]}}",
          "[]");
}
END_TEST

/* D4: a parse error keeps earlier values, defaults after it, one warning. */
START_TEST(parse_error_warning)
{
    static const struct plugin_pod_info w0 = {"j-w-0", "ns1", "w", "0"};

    pc_ok(P, JOB("['--worker=w','--port','abc','--master=m']", TASK("master", 1) "," TASK("w", 1)),
          &w0, POD_IN("j-w-0"),
          "{'metadata':{'name':'j-w-0'},'spec':{'containers':[{'name':'c',"
          " 'ports':[" PORT(0) "],"
          " 'env':[" ENV("MASTER_ADDR", "j-master-0.j") "," ENV("MASTER_PORT", "0") ","
          ENV("WORLD_SIZE", "2") "," ENV("RANK", "1") "]}]}}",
          "['pytorch plugin: invalid value \\'abc\\' for flag -port: parse error,"
          " later arguments ignored',"
          " 'pytorch plugin: container port 0 is outside 1-65535, the pod will be rejected']");
}
END_TEST

static Suite *pytorch_suite(void)
{
    Suite *s = suite_create("plugin_pytorch");
    TCase *tc = tcase_create("on_pod_create");

    tcase_add_test(tc, no_master_task_no_change);
    tcase_add_test(tc, example_pytorch_job);
    tcase_add_test(tc, master_addr_template_names);
    tcase_add_test(tc, world_size_and_other_tasks);
    tcase_add_test(tc, no_worker_task);
    tcase_add_test(tc, worker_rank_index_plus_one);
    tcase_add_test(tc, worker_non_numeric_index_is_error);
    tcase_add_test(tc, port_rules);
    tcase_add_test(tc, port_narrowed_env_full);
    tcase_add_test(tc, user_env_replaced_in_place);
    tcase_add_test(tc, wait_for_master_container);
    tcase_add_test(tc, wait_for_master_defaults_and_existing);
    tcase_add_test(tc, parse_error_warning);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(pytorch_suite());
}
