/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_tensorflow.c - the tensorflow plugin's pod side (docs/plugins.md §4.5,
 * §5.3, §8 #11-13, D4, D5): TF_CONFIG compared byte for byte.
 */
/* The cases are JSON in adjacent string literals and macros, laid out by hand (one
 * container or field a line); clang-format would break them apart. */
/* clang-format off */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>

#include "plugins/plugin.h"
#include "tests/plugincase.h"

#define P (&plugin_tensorflow)

/* A Job named j in ns1 (quotes written as '). */
#define JOB(plugins, tasks)                                                                 \
    "{'apiVersion':'batch.volcano.sh/v1alpha1','kind':'Job',"                               \
    " 'metadata':{'name':'j','namespace':'ns1','uid':'u1'},"                                \
    " 'spec':{'plugins':{'tensorflow':" plugins ",'svc':[]},'tasks':[" tasks "]}}"
#define TASK(name, n) "{'name':'" name "','replicas':" #n ",'template':{'spec':{}}}"

/* A one-container pod; after the plugin: the same with env TF_CONFIG = @@. */
#define POD_IN(name)                                                                         \
    "{'metadata':{'name':'" name "','namespace':'ns1'},"                                     \
    " 'spec':{'containers':[{'name':'tf','image':'tensorflow/tensorflow:2.4.0'}]}}"
#define POD_OUT(name)                                                                        \
    "{'metadata':{'name':'" name "','namespace':'ns1'},"                                     \
    " 'spec':{'containers':[{'name':'tf','image':'tensorflow/tensorflow:2.4.0',"             \
    "   'env':[{'name':'TF_CONFIG','value':@@}]}]}}"

/*
 * Run one case on POD_IN-shaped pod_sq whose expected result is want_sq with
 * @@ = want_config; also assert the value byte for byte.
 */
static void tf_case(const char *job_sq, const struct plugin_pod_info *info, const char *pod_sq,
                    const char *want_sq, const char *want_config, const char *want_warnings)
{
    char *want = pc_subst(want_sq, want_config);
    json_t *pod = pc_ok_keep(P, job_sq, info, pod_sq, want, want_warnings);

    ck_assert_str_eq(pc_env(pod, 0, "TF_CONFIG"), want_config);
    json_decref(pod);
    free(want);
}

/* docs/plugins.md §4.5 step 1: exactly one task with exactly one replica is standalone. */
START_TEST(standalone_one_task_one_replica)
{
    static const struct plugin_pod_info info = {"j-worker-0", "ns1", "worker", "0"};

    pc_ok(P, JOB("[]", TASK("worker", 1)), &info, POD_IN("j-worker-0"), POD_IN("j-worker-0"),
          "[]");
}
END_TEST

/* §8 #11: two tasks of one replica each are not standalone. */
START_TEST(two_tasks_one_replica_each)
{
    static const struct plugin_pod_info info = {"j-worker-0", "ns1", "worker", "0"};

    tf_case(JOB("[]", TASK("ps", 1) "," TASK("worker", 1)), &info, POD_IN("j-worker-0"),
            POD_OUT("j-worker-0"),
            "{\"cluster\":{\"ps\":[\"j-ps-0.j:2222\"],\"worker\":[\"j-worker-0.j:2222\"]},"
            "\"task\":{\"type\":\"worker\",\"index\":0}}",
            "[]");
}
END_TEST

/* One task with two replicas is not standalone either. */
START_TEST(one_task_two_replicas)
{
    static const struct plugin_pod_info info = {"j-worker-1", "ns1", "worker", "1"};

    tf_case(JOB("[]", TASK("worker", 2)), &info, POD_IN("j-worker-1"), POD_OUT("j-worker-1"),
            "{\"cluster\":{\"worker\":[\"j-worker-0.j:2222\",\"j-worker-1.j:2222\"]},"
            "\"task\":{\"type\":\"worker\",\"index\":1}}",
            "[]");
}
END_TEST

/* Keys in the fixed order ps, worker, chief, evaluator whatever the task order. */
START_TEST(fixed_key_order)
{
    static const struct plugin_pod_info info = {"j-chief-0", "ns1", "chief", "0"};

    tf_case(JOB("[]", TASK("evaluator", 1) "," TASK("chief", 1) "," TASK("worker", 2) ","
                      TASK("ps", 1)),
            &info, POD_IN("j-chief-0"), POD_OUT("j-chief-0"),
            "{\"cluster\":{\"ps\":[\"j-ps-0.j:2222\"],"
            "\"worker\":[\"j-worker-0.j:2222\",\"j-worker-1.j:2222\"],"
            "\"chief\":[\"j-chief-0.j:2222\"],\"evaluator\":[\"j-evaluator-0.j:2222\"]},"
            "\"task\":{\"type\":\"chief\",\"index\":0}}",
            "[]");
}
END_TEST

/* Roles are matched by the flag values; the type string is the role name. */
START_TEST(roles_by_flag_values)
{
    static const struct plugin_pod_info info = {"j-trainer-1", "ns1", "trainer", "1"};

    tf_case(JOB("['--ps=param','--worker=trainer','--chief=boss','--evaluator=judge','--port=3333']",
                TASK("param", 1) "," TASK("trainer", 2) "," TASK("boss", 1) "," TASK("judge", 1)
                "," TASK("ps", 1)),
            &info, POD_IN("j-trainer-1"), POD_OUT("j-trainer-1"),
            "{\"cluster\":{\"ps\":[\"j-param-0.j:3333\"],"
            "\"worker\":[\"j-trainer-0.j:3333\",\"j-trainer-1.j:3333\"],"
            "\"chief\":[\"j-boss-0.j:3333\"],\"evaluator\":[\"j-judge-0.j:3333\"]},"
            "\"task\":{\"type\":\"worker\",\"index\":1}}",
            "[]");
}
END_TEST

/*
 * One task name for two roles: the type checks chief before worker, the cluster
 * assigns the task to the first of ps, worker, chief, evaluator.
 */
START_TEST(type_order_chief_first)
{
    static const struct plugin_pod_info info = {"j-main-0", "ns1", "main", "0"};

    tf_case(JOB("['--worker=main','--chief=main']", TASK("main", 2) "," TASK("ps", 1)), &info,
            POD_IN("j-main-0"), POD_OUT("j-main-0"),
            "{\"cluster\":{\"ps\":[\"j-ps-0.j:2222\"],"
            "\"worker\":[\"j-main-0.j:2222\",\"j-main-1.j:2222\"]},"
            "\"task\":{\"type\":\"chief\",\"index\":0}}",
            "[]");
}
END_TEST

/* ps matches before evaluator in the type order ps, evaluator. */
START_TEST(type_order_ps_before_evaluator)
{
    static const struct plugin_pod_info info = {"j-x-0", "ns1", "x", "0"};

    tf_case(JOB("['--evaluator=x','--ps=x']", TASK("x", 2)), &info, POD_IN("j-x-0"),
            POD_OUT("j-x-0"),
            "{\"cluster\":{\"ps\":[\"j-x-0.j:2222\",\"j-x-1.j:2222\"]},"
            "\"task\":{\"type\":\"ps\",\"index\":0}}",
            "[]");
}
END_TEST

/* §8 #12: an unmatched task is left out of cluster; its pod's type is the raw key. */
START_TEST(unmatched_task_raw_type)
{
    static const struct plugin_pod_info info = {"j-launcher-0", "ns1", "launcher", "0"};
    static const struct plugin_pod_info dflt = {"j-x-3", "ns1", "default", "3"};
    const char *job = JOB("[]", TASK("ps", 1) "," TASK("worker", 2) "," TASK("launcher", 1));

    tf_case(job, &info, POD_IN("j-launcher-0"), POD_OUT("j-launcher-0"),
            "{\"cluster\":{\"ps\":[\"j-ps-0.j:2222\"],"
            "\"worker\":[\"j-worker-0.j:2222\",\"j-worker-1.j:2222\"]},"
            "\"task\":{\"type\":\"launcher\",\"index\":0}}",
            "[]");
    /* A pod without task annotation has the task key "default". */
    tf_case(job, &dflt, POD_IN("j-x-3"), POD_OUT("j-x-3"),
            "{\"cluster\":{\"ps\":[\"j-ps-0.j:2222\"],"
            "\"worker\":[\"j-worker-0.j:2222\",\"j-worker-1.j:2222\"]},"
            "\"task\":{\"type\":\"default\",\"index\":3}}",
            "[]");
}
END_TEST

/* §5.3: a role with 0 replicas is omitted; no role at all gives "cluster":{}. */
START_TEST(zero_replica_role_omitted)
{
    static const struct plugin_pod_info info = {"j-worker-0", "ns1", "worker", "0"};
    static const struct plugin_pod_info a0 = {"j-a-0", "ns1", "a", "0"};

    tf_case(JOB("[]", TASK("ps", 0) "," TASK("worker", 2) "," TASK("chief", 0)), &info,
            POD_IN("j-worker-0"), POD_OUT("j-worker-0"),
            "{\"cluster\":{\"worker\":[\"j-worker-0.j:2222\",\"j-worker-1.j:2222\"]},"
            "\"task\":{\"type\":\"worker\",\"index\":0}}",
            "[]");
    tf_case(JOB("[]", TASK("a", 1) "," TASK("b", 1)), &a0, POD_IN("j-a-0"), POD_OUT("j-a-0"),
            "{\"cluster\":{},\"task\":{\"type\":\"a\",\"index\":0}}", "[]");
}
END_TEST

/* A later task of the same role replaces the earlier list (Volcano assigns). */
START_TEST(later_task_same_role_replaces)
{
    static const struct plugin_pod_info info = {"j-w1-0", "ns1", "w1", "0"};

    tf_case(JOB("['--worker=w1','--ps=w1']", TASK("w1", 2) "," TASK("w1", 1)), &info,
            POD_IN("j-w1-0"), POD_OUT("j-w1-0"),
            "{\"cluster\":{\"ps\":[\"j-w1-0.j:2222\"]},\"task\":{\"type\":\"worker\",\"index\":0}}",
            "[]");
}
END_TEST

/* §3.6: a template hostname gives one entry PER REPLICA, all identical. */
START_TEST(template_hostname_one_entry_per_replica)
{
    static const struct plugin_pod_info info = {"j-ps-0", "ns1", "ps", "0"};

    tf_case(JOB("[]", TASK("ps", 1) ","
                "{'name':'worker','replicas':3,"
                " 'template':{'spec':{'hostname':'wk','subdomain':'sub'}}}"),
            &info, POD_IN("j-ps-0"), POD_OUT("j-ps-0"),
            "{\"cluster\":{\"ps\":[\"j-ps-0.j:2222\"],"
            "\"worker\":[\"wk.sub:2222\",\"wk.sub:2222\",\"wk.sub:2222\"]},"
            "\"task\":{\"type\":\"ps\",\"index\":0}}",
            "[]");
}
END_TEST

/* docs/plugins.md §4.5 step 2: the pod-name index must be an integer. */
START_TEST(non_numeric_index_is_error)
{
    static const struct plugin_pod_info bad = {"j-worker-x", "ns1", "worker", "x"};
    static const struct plugin_pod_info empty = {"", "ns1", "worker", ""};
    const char *job = JOB("[]", TASK("ps", 1) "," TASK("worker", 2));

    pc_err(P, job, &bad, POD_IN("j-worker-x"), "pod index \"x\" of pod j-worker-x is not a number",
           "[]");
    pc_err(P, job, &empty, POD_IN(""), "pod index \"\" of pod (generateName) is not a number", "[]");
    /* Standalone: no index needed, no error. */
    pc_ok(P, JOB("[]", TASK("worker", 1)), &bad, POD_IN("j-worker-x"), POD_IN("j-worker-x"), "[]");
}
END_TEST

/* TF_CONFIG goes to every container, never to init containers; D5 upsert. */
START_TEST(containers_only_and_upsert)
{
    static const struct plugin_pod_info info = {"j-worker-0", "ns1", "worker", "0"};
    static const char config[] =
        "{\"cluster\":{\"worker\":[\"j-worker-0.j:2222\",\"j-worker-1.j:2222\"]},"
        "\"task\":{\"type\":\"worker\",\"index\":0}}";
    char *want = pc_subst(
        "{'metadata':{'name':'j-worker-0'},"
        " 'spec':{'initContainers':[{'name':'init'}],"
        "  'containers':[{'name':'a','env':[{'name':'TF_CONFIG','value':@@},{'name':'X','value':'1'}]},"
        "                {'name':'b','env':[{'name':'TF_CONFIG','value':@@}]},"
        "                {'name':'c','env':[{'name':'Y','value':'2'},{'name':'TF_CONFIG','value':@@}]}]}}",
        config);
    char *in = pc_subst(
        "{'metadata':{'name':'j-worker-0'},"
        " 'spec':{'initContainers':[{'name':'init'}],"
        "  'containers':[{'name':'a','env':[{'name':'TF_CONFIG','value':'stale'},{'name':'X','value':'1'}]},"
        "                {'name':'b','env':[{'name':'TF_CONFIG','value':@@}]},"
        "                {'name':'c','env':[{'name':'Y','value':'2'}]}]}}",
        config);

    /* a: different value replaced in place; b: identical kept; c: appended. */
    pc_ok(P, JOB("[]", TASK("worker", 2)), &info, in, want,
          "['tensorflow plugin: container \\'a\\' sets TF_CONFIG=\\'stale\\', replaced by "
          "\\'{\\'cluster\\':{\\'worker\\':[\\'j-worker-0.j:2222...\\': the plugin sets it, drop it from the pod template']");
    free(in);
    free(want);
}
END_TEST

/* examples/tensorflow-training.yaml: ps x2, worker x3, its own arguments. */
START_TEST(example_tensorflow_training)
{
    static const struct plugin_pod_info info = {"tensorflow-training-worker-2", "default", "worker",
                                                "2"};
    static const char job[] =
        "{'apiVersion':'batch.volcano.sh/v1alpha1','kind':'Job',"
        " 'metadata':{'name':'tensorflow-training','namespace':'default','uid':'u2'},"
        " 'spec':{'queue':'default','minAvailable':4,'schedulerName':'volcano',"
        "  'plugins':{'tensorflow':['--ps=ps','--worker=worker','--port=2222'],'svc':[]},"
        "  'tasks':[{'replicas':2,'name':'ps','template':{'spec':{'containers':[{'name':'tensorflow',"
        "     'image':'tensorflow/tensorflow:2.4.0','resources':{'limits':{'cpu':4,'memory':'8Gi'}}}],"
        "     'restartPolicy':'OnFailure'}}},"
        "   {'replicas':3,'name':'worker','template':{'spec':{'containers':[{'name':'tensorflow',"
        "     'image':'tensorflow/tensorflow:2.4.0','resources':{'limits':{'cpu':2,'memory':'4Gi'}}}],"
        "     'restartPolicy':'OnFailure'}}}]}}";
    static const char pod[] =
        "{'metadata':{'name':'tensorflow-training-worker-2','namespace':'default',"
        "  'annotations':{'volcano.sh/task-spec':'worker'}},"
        " 'spec':{'containers':[{'name':'tensorflow','image':'tensorflow/tensorflow:2.4.0',"
        "   'resources':{'limits':{'cpu':'2','memory':'4Gi'}}}],'restartPolicy':'OnFailure'}}";
    static const char want_sq[] =
        "{'metadata':{'name':'tensorflow-training-worker-2','namespace':'default',"
        "  'annotations':{'volcano.sh/task-spec':'worker'}},"
        " 'spec':{'containers':[{'name':'tensorflow','image':'tensorflow/tensorflow:2.4.0',"
        "   'resources':{'limits':{'cpu':'2','memory':'4Gi'}},"
        "   'env':[{'name':'TF_CONFIG','value':@@}]}],'restartPolicy':'OnFailure'}}";

    tf_case(job, &info, pod, want_sq,
            "{\"cluster\":{\"ps\":[\"tensorflow-training-ps-0.tensorflow-training:2222\","
            "\"tensorflow-training-ps-1.tensorflow-training:2222\"],"
            "\"worker\":[\"tensorflow-training-worker-0.tensorflow-training:2222\","
            "\"tensorflow-training-worker-1.tensorflow-training:2222\","
            "\"tensorflow-training-worker-2.tensorflow-training:2222\"]},"
            "\"task\":{\"type\":\"worker\",\"index\":2}}",
            "[]");
}
END_TEST

/* The port is written in full (int64 decimal) into the host strings; no containerPort. */
START_TEST(port_in_host_strings)
{
    static const struct plugin_pod_info info = {"j-ps-0", "ns1", "ps", "0"};

    tf_case(JOB("['--port=0x100000000']", TASK("ps", 1) "," TASK("worker", 1)), &info,
            POD_IN("j-ps-0"), POD_OUT("j-ps-0"),
            "{\"cluster\":{\"ps\":[\"j-ps-0.j:4294967296\"],\"worker\":[\"j-worker-0.j:4294967296\"]},"
            "\"task\":{\"type\":\"ps\",\"index\":0}}",
            "[]");
}
END_TEST

/* D4: a parse error keeps what was set before it, defaults after, and one warning. */
START_TEST(parse_error_warning)
{
    static const struct plugin_pod_info info = {"j-p-0", "ns1", "p", "0"};

    tf_case(JOB("['--ps=p','--bogus','--worker=w']", TASK("p", 1) "," TASK("w", 1) ","
                TASK("worker", 1)),
            &info, POD_IN("j-p-0"), POD_OUT("j-p-0"),
            "{\"cluster\":{\"ps\":[\"j-p-0.j:2222\"],\"worker\":[\"j-worker-0.j:2222\"]},"
            "\"task\":{\"type\":\"ps\",\"index\":0}}",
            "['tensorflow plugin: flag provided but not defined: -bogus, later arguments ignored']");
}
END_TEST

/* Strings are escaped as Go's encoding/json does (HTML-safe, lower-case \u hex). */
START_TEST(go_string_escaping)
{
    static const struct plugin_pod_info info = {"j-w-0", "ns1", "a<b>&c\x1f\xe2\x80\xa8\"\\", "0"};

    tf_case(JOB("[]", TASK("w", 2)), &info, POD_IN("j-w-0"), POD_OUT("j-w-0"),
            "{\"cluster\":{},"
            "\"task\":{\"type\":\"a\\u003cb\\u003e\\u0026c\\u001f\\u2028\\\"\\\\\",\"index\":0}}",
            "[]");
}
END_TEST

/* A TF_CONFIG past kube-apiserver's 3 MiB body limit is refused before memory runs out. */
START_TEST(huge_replicas_refused)
{
    static const struct plugin_pod_info info = {"j-worker-0", "ns1", "worker", "0"};
    json_t *job = pc_json(JOB("[]", TASK("worker", 2147483647)));
    json_t *pod = pc_json(POD_IN("j-worker-0"));
    struct warnings w;
    struct wh_error err = {0, ""};
    struct plugin_ctx c = pc_ctx(P, job, &info, &w);

    warnings_init(&w);
    ck_assert_int_eq(pc_call(P, &c, pod, &err), WH_ETOOBIG);
    ck_assert_str_eq(err.msg, "TF_CONFIG would exceed 3145728 bytes");
    pc_assert_json(pod, POD_IN("j-worker-0"));
    json_decref(pod);
    json_decref(job);
}
END_TEST

/* A pod without containers is left as it is. */
START_TEST(no_containers)
{
    static const struct plugin_pod_info info = {"j-w-0", "ns1", "w", "0"};

    pc_ok(P, JOB("[]", TASK("w", 2)), &info, "{'metadata':{'name':'j-w-0'},'spec':{}}",
          "{'metadata':{'name':'j-w-0'},'spec':{}}", "[]");
}
END_TEST

static Suite *tensorflow_suite(void)
{
    Suite *s = suite_create("plugin_tensorflow");
    TCase *tc = tcase_create("on_pod_create");

    tcase_add_test(tc, standalone_one_task_one_replica);
    tcase_add_test(tc, two_tasks_one_replica_each);
    tcase_add_test(tc, one_task_two_replicas);
    tcase_add_test(tc, fixed_key_order);
    tcase_add_test(tc, roles_by_flag_values);
    tcase_add_test(tc, type_order_chief_first);
    tcase_add_test(tc, type_order_ps_before_evaluator);
    tcase_add_test(tc, unmatched_task_raw_type);
    tcase_add_test(tc, zero_replica_role_omitted);
    tcase_add_test(tc, later_task_same_role_replaces);
    tcase_add_test(tc, template_hostname_one_entry_per_replica);
    tcase_add_test(tc, non_numeric_index_is_error);
    tcase_add_test(tc, containers_only_and_upsert);
    tcase_add_test(tc, example_tensorflow_training);
    tcase_add_test(tc, port_in_host_strings);
    tcase_add_test(tc, parse_error_warning);
    tcase_add_test(tc, go_string_escaping);
    tcase_add_test(tc, huge_replicas_refused);
    tcase_add_test(tc, no_containers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(tensorflow_suite());
}
