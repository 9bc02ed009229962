/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_hcclrank.c - the hcclrank plugin's pod side (docs/plugins.md §4.8, §3.6,
 * §3.8, §5.3, D4, D5, D7).
 */
/* The cases are JSON in adjacent string literals and macros, laid out by hand (one
 * container or field a line); clang-format would break them apart. */
/* clang-format off */
#include <check.h>
#include <jansson.h>

#include "plugins/plugin.h"
#include "tests/plugincase.h"

#define P (&plugin_hcclrank)

/* A Job named j in ns1 (quotes written as '). */
#define JOB(plugins, tasks)                                                                 \
    "{'apiVersion':'batch.volcano.sh/v1alpha1','kind':'Job',"                               \
    " 'metadata':{'name':'j','namespace':'ns1','uid':'u1'},"                                \
    " 'spec':{'plugins':{'hcclrank':" plugins "},'tasks':[" tasks "]}}"
#define TASK(name, n) "{'name':'" name "','replicas':" #n ",'template':{'spec':{}}}"
#define JOB_MW JOB("[]", TASK("master", 2) "," TASK("worker", 4))

/* A pod with the given labels/annotations members and containers. */
#define POD(name, labels, anns, ctrs)                                                          \
    "{'metadata':{'name':'" name "','labels':{" labels "},'annotations':{" anns "}},"          \
    " 'spec':{'containers':[" ctrs "]}}"
#define IDX(i) "'volcano.sh/task-index':'" i "'"
#define RANKANN(v) "'hccl/rankIndex':'" v "'"

static const struct plugin_pod_info M1 = {"j-master-1", "ns1", "master", "1"};
static const struct plugin_pod_info W3 = {"j-worker-3", "ns1", "worker", "3"};
static const struct plugin_pod_info PS0 = {"j-ps-0", "ns1", "ps", "0"};

/* Step 1: an existing non-empty annotation wins over everything. */
START_TEST(existing_annotation_kept)
{
    pc_ok(P, JOB_MW, &W3,
          POD("j-worker-3", IDX("3"), RANKANN("42"), "{'name':'c','env':[{'name':'RANK','value':'9'}]}"),
          POD("j-worker-3", IDX("3"), RANKANN("42"), "{'name':'c','env':[{'name':'RANK','value':'9'}]}"),
          "[]");
    /* An empty one does not count. */
    pc_ok(P, JOB_MW, &W3, POD("j-worker-3", IDX("3"), RANKANN(""), "{'name':'c'}"),
          POD("j-worker-3", IDX("3"), RANKANN("5"), "{'name':'c'}"), "[]");
}
END_TEST

/* No Job: no change. */
START_TEST(no_job_no_change)
{
    pc_ok(P, NULL, &W3, POD("j-worker-3", IDX("3"), "", "{'name':'c'}"),
          POD("j-worker-3", IDX("3"), "", "{'name':'c'}"), "[]");
}
END_TEST

/* Step 2: the first RANK entry's literal value is copied, for any task. */
START_TEST(rank_env_copied)
{
    pc_ok(P, JOB_MW, &PS0,
          POD("j-ps-0", "", "",
              "{'name':'a','env':[{'name':'X','value':'1'}]},"
              "{'name':'b','env':[{'name':'RANK','value':'7'},{'name':'RANK','value':'8'}]}"),
          POD("j-ps-0", "", RANKANN("7"),
              "{'name':'a','env':[{'name':'X','value':'1'}]},"
              "{'name':'b','env':[{'name':'RANK','value':'7'},{'name':'RANK','value':'8'}]}"),
          "[]");
}
END_TEST

/*
 * A RANK with valueFrom has no literal value: the search stops there (only the
 * first RANK counts) and the rank is computed from the label.
 */
START_TEST(rank_value_from_falls_through)
{
#define CTRS                                                                                   \
    "{'name':'a','env':[{'name':'RANK','valueFrom':{'fieldRef':{'fieldPath':'x'}}}]},"         \
    "{'name':'b','env':[{'name':'RANK','value':'9'}]}"
    pc_ok(P, JOB_MW, &M1, POD("j-master-1", IDX("1"), "", CTRS),
          POD("j-master-1", IDX("1"), RANKANN("1"), CTRS), "[]");
    /* ... and for a task that is neither master nor worker, nothing. */
    pc_ok(P, JOB_MW, &PS0, POD("j-ps-0", "", "", CTRS), POD("j-ps-0", "", "", CTRS), "[]");
#undef CTRS
}
END_TEST

/* A RANK only in an init container is not looked at. */
START_TEST(init_container_rank_ignored)
{
    pc_ok(P, JOB_MW, &W3,
          "{'metadata':{'name':'j-worker-3','labels':{" IDX("3") "}},"
          " 'spec':{'initContainers':[{'name':'i','env':[{'name':'RANK','value':'77'}]}],"
          "  'containers':[{'name':'c'}]}}",
          "{'metadata':{'name':'j-worker-3','labels':{" IDX("3") "},'annotations':{" RANKANN("5") "}},"
          " 'spec':{'initContainers':[{'name':'i','env':[{'name':'RANK','value':'77'}]}],"
          "  'containers':[{'name':'c'}]}}",
          "[]");
}
END_TEST

/* Step 5: master = label index (not the pod-name index); worker = master replicas + index. */
START_TEST(master_and_worker_ranks)
{
    static const struct plugin_pod_info m_named0 = {"j-master-0", "ns1", "master", "0"};

    pc_ok(P, JOB_MW, &M1, POD("j-master-1", IDX("1"), "", "{'name':'c'}"),
          POD("j-master-1", IDX("1"), RANKANN("1"), "{'name':'c'}"), "[]");
    pc_ok(P, JOB_MW, &m_named0, POD("j-master-0", IDX("6"), "", "{'name':'c'}"),
          POD("j-master-0", IDX("6"), RANKANN("6"), "{'name':'c'}"), "[]");
    pc_ok(P, JOB_MW, &W3, POD("j-worker-3", IDX("3"), "", "{'name':'c'}"),
          POD("j-worker-3", IDX("3"), RANKANN("5"), "{'name':'c'}"), "[]");
    /* Negative indexes parse (strconv.Atoi). */
    pc_ok(P, JOB_MW, &W3, POD("j-worker-3", IDX("-1"), "", "{'name':'c'}"),
          POD("j-worker-3", IDX("-1"), RANKANN("1"), "{'name':'c'}"), "[]");
}
END_TEST

/* §5.3: no master task → worker rank = 0 + index. */
START_TEST(no_master_task)
{
    pc_ok(P, JOB("[]", TASK("worker", 4)), &W3, POD("j-worker-3", IDX("3"), "", "{'name':'c'}"),
          POD("j-worker-3", IDX("3"), RANKANN("3"), "{'name':'c'}"), "[]");
}
END_TEST

/* Custom task names through --master / --worker. */
START_TEST(custom_task_names)
{
    static const struct plugin_pod_info t1 = {"j-trainer-1", "ns1", "trainer", "1"};

    pc_ok(P, JOB("['--master=chief','--worker=trainer']", TASK("chief", 3) "," TASK("trainer", 2)),
          &t1, POD("j-trainer-1", IDX("1"), "", "{'name':'c'}"),
          POD("j-trainer-1", IDX("1"), RANKANN("4"), "{'name':'c'}"), "[]");
    /* With these flags "worker" is just another task. */
    pc_ok(P, JOB("['--master=chief','--worker=trainer']", TASK("chief", 3) "," TASK("worker", 2)),
          &W3, POD("j-worker-3", IDX("3"), "", "{'name':'c'}"),
          POD("j-worker-3", IDX("3"), "", "{'name':'c'}"), "[]");
}
END_TEST

/* Step 4: the task-index label is required and must be a number (docs/plugins.md §3.8, D7). */
START_TEST(label_missing_or_bad_is_error)
{
    pc_err(P, JOB_MW, &W3, POD("j-worker-3", "", "", "{'name':'c'}"),
           "pod j-worker-3 has no volcano.sh/task-index label", "[]");
    pc_err(P, JOB_MW, &M1, POD("j-master-1", IDX("one"), "", "{'name':'c'}"),
           "volcano.sh/task-index label \"one\" of pod j-master-1 is not a number", "[]");
    pc_err(P, JOB_MW, &M1, POD("j-master-1", IDX(""), "", "{'name':'c'}"),
           "volcano.sh/task-index label \"\" of pod j-master-1 is not a number", "[]");
    /* Other tasks never need it. */
    pc_ok(P, JOB_MW, &PS0, POD("j-ps-0", "", "", "{'name':'c'}"),
          POD("j-ps-0", "", "", "{'name':'c'}"), "[]");
}
END_TEST

/* The annotations object is created when absent; the key is written raw. */
START_TEST(annotations_created)
{
    json_t *pod = pc_ok_keep(P, JOB_MW, &W3,
                             "{'metadata':{'name':'j-worker-3','labels':{" IDX("2") "}},"
                             " 'spec':{'containers':[{'name':'c'}]}}",
                             "{'metadata':{'name':'j-worker-3','labels':{" IDX("2") "},"
                             "  'annotations':{'hccl/rankIndex':'4'}},"
                             " 'spec':{'containers':[{'name':'c'}]}}",
                             "[]");

    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(pod, "metadata"), "annotations"),
                         "hccl/rankIndex")),
                     "4");
    json_decref(pod);
    /* A RANK copy also creates it. */
    pc_ok(P, JOB_MW, &PS0,
          "{'metadata':{'name':'j-ps-0'},'spec':{'containers':[{'name':'c','env':[{'name':'RANK','value':'3'}]}]}}",
          "{'metadata':{'name':'j-ps-0','annotations':{" RANKANN("3") "}},"
          " 'spec':{'containers':[{'name':'c','env':[{'name':'RANK','value':'3'}]}]}}",
          "[]");
}
END_TEST

/* D4: a parse error keeps earlier values and adds one warning. */
START_TEST(parse_error_warning)
{
    static const struct plugin_pod_info b0 = {"j-boss-0", "ns1", "boss", "0"};

    pc_ok(P, JOB("['--master=boss','--rank=1','--master=x']", TASK("boss", 1)), &b0,
          POD("j-boss-0", IDX("0"), "", "{'name':'c'}"),
          POD("j-boss-0", IDX("0"), RANKANN("0"), "{'name':'c'}"),
          "['hcclrank plugin: flag provided but not defined: -rank, later arguments ignored']");
}
END_TEST

static Suite *hcclrank_suite(void)
{
    Suite *s = suite_create("plugin_hcclrank");
    TCase *tc = tcase_create("on_pod_create");

    tcase_add_test(tc, existing_annotation_kept);
    tcase_add_test(tc, no_job_no_change);
    tcase_add_test(tc, rank_env_copied);
    tcase_add_test(tc, rank_value_from_falls_through);
    tcase_add_test(tc, init_container_rank_ignored);
    tcase_add_test(tc, master_and_worker_ranks);
    tcase_add_test(tc, no_master_task);
    tcase_add_test(tc, custom_task_names);
    tcase_add_test(tc, label_missing_or_bad_is_error);
    tcase_add_test(tc, annotations_created);
    tcase_add_test(tc, parse_error_warning);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(hcclrank_suite());
}
