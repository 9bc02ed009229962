/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_mutate.c - the admission decision: D1-D3, D5-D8, D13-D15 of docs/decisions.md,
 * through mutate_review / mutate_pod_with_job with a fake Job source.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/patch.h"
#include "plugins/diagnose.h"
#include "plugins/plugin.h"
#include "tests/testutil.h"
#include "webhook/mutate.h"

/* ---- a fake job_source ---- */

struct fake_source {
    json_t *job; /* returned (as a copy) when name matches */
    int rc;      /* forced error when < 0; WH_DECLINED: a namespace the source does not serve */
    int calls;
    char last_ns[64];
    char last_name[64];
    char last_uid[64];
};

static int fake_get(void *ud, const char *ns, const char *name, const char *uid, json_t **out,
                    struct wh_error *err)
{
    struct fake_source *fs = ud;

    fs->calls++;
    snprintf(fs->last_ns, sizeof(fs->last_ns), "%s", ns);
    snprintf(fs->last_name, sizeof(fs->last_name), "%s", name);
    snprintf(fs->last_uid, sizeof(fs->last_uid), "%s", uid);
    if (fs->rc < 0)
        return wh_error_set(err, fs->rc, "InternalError: etcd is sad");
    if (fs->rc == WH_DECLINED)
        return WH_DECLINED;
    if (fs->job == NULL
        || strcmp(json_string_value(json_object_get(json_object_get(fs->job, "metadata"), "name")),
                  name)
            != 0)
        return wh_error_set(err, WH_ENOTFOUND, "NotFound: jobs.batch.volcano.sh \"%s\" not found",
                            name);
    *out = json_deep_copy(fs->job);
    return 0;
}

static const char *JOB_SIMPLE =
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
    " \"metadata\":{\"name\":\"j\",\"namespace\":\"ns1\",\"uid\":\"u-1\"},"
    " \"spec\":{\"plugins\":{\"env\":[]},"
    "  "
    "\"tasks\":[{\"name\":\"worker\",\"replicas\":2,\"template\":{\"spec\":{\"containers\":[{"
    "\"name\":\"c\"}]}}}]}}";

static const char *POD_SIMPLE =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
    " \"metadata\":{\"name\":\"j-worker-1\","
    "  \"annotations\":{\"volcano.sh/task-spec\":\"worker\"},"
    "  "
    "\"ownerReferences\":[{\"apiVersion\":\"batch.volcano.sh/"
    "v1alpha1\",\"kind\":\"Job\",\"name\":\"j\","
    "   \"uid\":\"u-1\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
    " \"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}]}}";

static void review(struct fake_source *fs, const char *op, const char *resource, const char *ns,
                   json_t *pod, enum lookup_failure_policy policy, struct mutate_result *out)
{
    struct jobsource src = {.get = fake_get, .userdata = fs};
    struct mutate_options opt = {.lookup_failure = policy};
    struct mutate_request req = {
        .uid = "req-1",
        .operation = op,
        .resource = resource,
        .group = "",
        .sub_resource = "",
        .ns = ns,
        .pod = pod,
    };

    mutate_review(&req, &src, &opt, out);
}

START_TEST(served_pod_gets_env_patch)
{
    struct fake_source fs = {.job = tu_json(JOB_SIMPLE)};
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;

    review(&fs, "CREATE", "pods", "ns1", pod, LOOKUP_FAILURE_DENY, &r);
    ck_assert(r.allowed);
    ck_assert_int_eq(fs.calls, 1);
    ck_assert_str_eq(fs.last_ns, "ns1");
    ck_assert_str_eq(fs.last_name, "j");
    ck_assert_str_eq(fs.last_uid, "u-1"); /* the ownerReference's uid (D6) */
    tu_assert_json_eq(r.patch,
                      "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env/"
                      "-\",\"value\":{\"name\":\"VK_TASK_INDEX\",\"value\":\"1\"}},"
                      " {\"op\":\"add\",\"path\":\"/spec/containers/0/env/"
                      "-\",\"value\":{\"name\":\"VC_TASK_INDEX\",\"value\":\"1\"}}]");
    ck_assert_uint_eq(r.warnings.n, 0);
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(fs.job);
}
END_TEST

/* A source as the Jobs cache is (cache_get_read, cache_read_slot): get hands out the
 * same tree of a version each time, and job_memo a slot per plugin beside each tree. */
struct memo_source {
    json_t *tree[2]; /* two versions of the Job; get gives tree[version] */
    json_t *slot[2][16];
    int version;
};

static int memo_get(void *ud, const char *ns, const char *name, const char *uid, json_t **out,
                    struct wh_error *err)
{
    struct memo_source *ms = ud;

    (void)ns;
    (void)name;
    (void)uid;
    (void)err;
    *out = json_incref(ms->tree[ms->version]);
    return 0;
}

static json_t **memo_slot(void *ud, const json_t *job, size_t k)
{
    struct memo_source *ms = ud;

    for (int v = 0; v < 2; v++)
        if (job == ms->tree[v] && k < 16)
            return &ms->slot[v][k];
    return NULL;
}

/* A CREATE of pod in ns1, as patch_of and patch_text_of send it (pod borrowed). */
static struct mutate_request create_request(json_t *pod)
{
    struct mutate_request req = {.uid = "req-1",
                                 .operation = "CREATE",
                                 .resource = "pods",
                                 .group = "",
                                 .sub_resource = "",
                                 .ns = "ns1",
                                 .pod = pod};

    return req;
}

/* The patch of pod from src, as compact text (freed by the caller). */
static char *patch_of(const struct jobsource *src, json_t *pod)
{
    struct mutate_options opt = {.lookup_failure = LOOKUP_FAILURE_DENY};
    struct mutate_request req = create_request(pod);
    struct mutate_result r;
    char *text;

    mutate_review(&req, src, &opt, &r);
    ck_assert_msg(r.allowed, "%s", r.message);
    text = json_dumps(r.patch, JSON_COMPACT);
    ck_assert_ptr_nonnull(text);
    mutate_result_dispose(&r);
    return text;
}

/* The patch of pod from src as mutate_review_text writes it (freed by the caller). */
static char *patch_text_of(const struct jobsource *src, json_t *pod)
{
    struct mutate_options opt = {.lookup_failure = LOOKUP_FAILURE_DENY};
    struct mutate_request req = create_request(pod);
    struct mutate_result r;
    struct buf b;
    char *text;

    buf_init(&b, BUF_NO_MAX);
    mutate_review_text(&req, src, &opt, &b, &r);
    ck_assert_msg(r.allowed, "%s", r.message);
    ck_assert_int_eq(b.rc, 0);
    text = strdup(buf_cstr(&b));
    ck_assert_ptr_nonnull(text);
    buf_dispose(&b);
    mutate_result_dispose(&r);
    return text;
}

/* A head of TF_CONFIG past TF_KEPT_MAX (300 workers: ~8 KiB of a 200-byte Job) is made
 * per pod, not kept: a slot is bounded by its Job's text (controller/cache.c). */
START_TEST(job_memo_leaves_long_tf_config_head)
{
    static const char *job =
        "{\"metadata\":{\"name\":\"j\",\"namespace\":\"ns1\",\"uid\":\"u-1\"},"
        "\"spec\":{\"plugins\":{\"tensorflow\":[]},\"tasks\":[{\"name\":\"worker\","
        "\"replicas\":300}]}}";
    struct memo_source ms = {.tree = {tu_json(job), NULL}};
    struct jobsource memo = {.get = memo_get, .job_memo = memo_slot, .userdata = &ms};
    struct jobsource plain = {.get = memo_get, .userdata = &ms};
    json_t *pod =
        tu_json("{\"metadata\":{\"name\":\"j-worker-7\",\"annotations\":{\"volcano.sh/task-spec\":"
                "\"worker\"},\"ownerReferences\":[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\","
                "\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"u-1\",\"controller\":true}]},"
                "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    size_t tf = 0;
    char *want = patch_of(&plain, pod);
    char *got;

    while (strcmp(plugin_registry[tf]->name, "tensorflow") != 0)
        tf++;
    ck_assert_ptr_nonnull(strstr(want,
                                 "\\\"j-worker-299.j:2222\\\"]},\\\"task\\\":{\\\"type\\\":"
                                 "\\\"worker\\\",\\\"index\\\":7}}\"}"));
    got = patch_text_of(&memo, pod);
    ck_assert_str_eq(got, want);
    free(got);
    ck_assert_ptr_null(ms.slot[0][tf]);
    got = patch_of(&memo, pod);
    ck_assert_str_eq(got, want);
    free(got);
    free(want);
    for (size_t k = 0; k < 16; k++)
        json_decref(ms.slot[0][k]);
    json_decref(ms.tree[0]);
    json_decref(pod);
}
END_TEST

/* svc's env entries, ssh's volume and mount, pytorch's port and env entries kept in the
 * source's slots per Job version (jobsource.job_memo): the same patch as made per pod,
 * first and second time, and a new version's own entries. */
START_TEST(job_memo_keeps_svc_env_per_version)
{
    static const char *job_v1 =
        "{\"metadata\":{\"name\":\"j\",\"namespace\":\"ns1\",\"uid\":\"u-1\"},"
        " \"spec\":{\"plugins\":{\"svc\":[],\"ssh\":[],\"pytorch\":[],\"tensorflow\":[]},\"tasks\":"
        "[{\"name\":"
        "\"master\","
        "\"replicas\":1}, {\"name\":\"worker\",\"replicas\":2}]}}";
    static const char *job_v2 =
        "{\"metadata\":{\"name\":\"j\",\"namespace\":\"ns1\",\"uid\":\"u-1\"},"
        " \"spec\":{\"plugins\":{\"svc\":[],\"ssh\":[],\"pytorch\":[],\"tensorflow\":[]},\"tasks\":"
        "[{\"name\":"
        "\"master\","
        "\"replicas\":1}, {\"name\":\"worker\",\"replicas\":3},{\"name\":\"ps\",\"replicas\":1}]}}";
    struct memo_source ms = {.tree = {tu_json(job_v1), tu_json(job_v2)}};
    struct jobsource memo = {.get = memo_get, .job_memo = memo_slot, .userdata = &ms};
    struct jobsource plain = {.get = memo_get, .userdata = &ms};
    json_t *pod =
        tu_json("{\"metadata\":{\"name\":\"j-worker-1\",\"annotations\":{\"volcano.sh/task-spec\":"
                "\"worker\"},\"ownerReferences\":[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\","
                "\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"u-1\",\"controller\":true}]},"
                " \"spec\":{\"containers\":[{\"name\":\"c\"},{\"name\":\"d\",\"env\":[{\"name\":"
                "\"VC_MASTER_NUM\",\"value\":\"9\"}]}],\"initContainers\":[{\"name\":\"i\"}]}}");
    json_t *pod0 = json_deep_copy(pod);
    size_t svc = 0;
    size_t ssh = 0;
    size_t pt = 0;
    size_t tf = 0;
    char *want = patch_of(&plain, pod);
    char *got;

    while (strcmp(plugin_registry[svc]->name, "svc") != 0)
        svc++;
    while (strcmp(plugin_registry[ssh]->name, "ssh") != 0)
        ssh++;
    while (strcmp(plugin_registry[pt]->name, "pytorch") != 0)
        pt++;
    while (strcmp(plugin_registry[tf]->name, "tensorflow") != 0)
        tf++;
    ck_assert_int_eq(
        json_object_set_new(json_object_get(pod0, "metadata"), "name", json_string("j-worker-0")),
        0);
    ck_assert_ptr_nonnull(strstr(want, "VC_WORKER_HOSTS"));
    ck_assert_ptr_nonnull(strstr(want, "\"secretName\":\"j-ssh\""));
    ck_assert_ptr_nonnull(strstr(want, "{\"name\":\"RANK\",\"value\":\"2\"}"));
    ck_assert_ptr_nonnull(
        strstr(want,
               "\"name\":\"TF_CONFIG\",\"value\":\"{\\\"cluster\\\":{\\\"worker\\\":[\\\"j-worker-"
               "0.j:2222\\\",\\\"j-worker-1.j:2222\\\"]},\\\"task\\\":{\\\"type\\\":\\\"worker\\\","
               "\\\"index\\\":1}}\"}"));
    got = patch_of(&memo, pod);
    ck_assert_str_eq(got, want);
    free(got);
    /* the text writer copies the kept parts' texts (plugin_memo_keep): the same bytes */
    got = patch_text_of(&memo, pod);
    ck_assert_str_eq(got, want);
    free(got);
    /* kept for the next pod: svc's 4 entries, volume and mount, ssh's name, volume and
     * mount, pytorch's address, port and 3 entries (RANK is the pod's own) */
    ck_assert_uint_eq(json_array_size(json_array_get(ms.slot[0][svc], 0)), 3);
    ck_assert_uint_eq(json_array_size(json_array_get(json_array_get(ms.slot[0][svc], 0), 0)), 4);
    ck_assert_uint_eq(json_array_size(json_array_get(ms.slot[0][ssh], 0)), 3);
    ck_assert_uint_eq(json_array_size(json_array_get(ms.slot[0][pt], 0)), 5);
    /* tensorflow's: TF_CONFIG up to its task, the pod's own */
    ck_assert_uint_eq(json_array_size(json_array_get(ms.slot[0][tf], 0)), 1);
    for (size_t k = 0; k < 16; k++)
        ck_assert(k == svc || k == ssh || k == pt || k == tf || ms.slot[0][k] == NULL);
    /* ... without a text: no op value is the head alone (plugin_memo_keep_parts) */
    ck_assert_uint_eq(json_array_size(json_array_get(ms.slot[0][tf], 1)), 0);
    /* another pod of the version: its own index and rank, beside the kept parts */
    free(want);
    want = patch_of(&plain, pod0);
    ck_assert_ptr_nonnull(strstr(want, "\\\"index\\\":0}}"));
    got = patch_text_of(&memo, pod0);
    ck_assert_str_eq(got, want);
    free(got);
    free(want);
    want = patch_of(&plain, pod);
    got = patch_of(&memo, pod);
    ck_assert_str_eq(got, want);
    free(got);
    got = patch_text_of(&memo, pod);
    ck_assert_str_eq(got, want);
    free(got);
    free(want);
    /* the texts are what the writer copies: ssh's volume text, changed in its slot, is
     * the volume's op value (so the equality above is the texts' own) */
    ck_assert_int_eq(json_array_set_new(json_array_get(ms.slot[0][ssh], 1), 1,
                                        json_string("{\"name\":\"kept-text\"}")),
                     0);
    /* and an env entry's, among the texts of svc's list of entries */
    ck_assert_int_eq(json_array_set_new(json_array_get(json_array_get(ms.slot[0][svc], 1), 0), 0,
                                        json_string("{\"name\":\"kept-env\"}")),
                     0);
    got = patch_text_of(&memo, pod);
    ck_assert_ptr_nonnull(
        strstr(got, "\"path\":\"/spec/volumes\",\"value\":[{\"name\":\"kept-text\"},{"));
    ck_assert_ptr_nonnull(strstr(got, "{\"name\":\"kept-env\"}"));
    free(got);
    /* the new version: its own entries, VC_PS_* among them, and its WORLD_SIZE; the text
     * writer first, so its texts are the ones plugin_memo_keep made */
    ms.version = 1;
    want = patch_of(&plain, pod);
    ck_assert_ptr_nonnull(strstr(want, "VC_PS_HOSTS"));
    ck_assert_ptr_nonnull(strstr(want, "{\"name\":\"WORLD_SIZE\",\"value\":\"4\"}"));
    got = patch_text_of(&memo, pod);
    ck_assert_str_eq(got, want);
    free(got);
    got = patch_of(&memo, pod);
    ck_assert_str_eq(got, want);
    ck_assert_uint_eq(json_array_size(json_array_get(json_array_get(ms.slot[1][svc], 0), 0)), 6);
    free(got);
    free(want);
    for (int v = 0; v < 2; v++) {
        for (size_t k = 0; k < 16; k++)
            json_decref(ms.slot[v][k]);
        json_decref(ms.tree[v]);
    }
    json_decref(pod0);
    json_decref(pod);
}
END_TEST

START_TEST(not_served_d8)
{
    struct fake_source fs = {.job = tu_json(JOB_SIMPLE)};
    json_t *pod = tu_json(POD_SIMPLE);
    json_t *orphan =
        tu_json("{\"metadata\":{\"name\":\"x-y-1\",\"ownerReferences\":[{\"apiVersion\":"
                "\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"u-1\"}]},"
                "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    json_t *other_kind = tu_json(
        "{\"metadata\":{\"name\":\"x-y-1\",\"ownerReferences\":[{\"apiVersion\":"
        "\"batch/v1\",\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"u-1\",\"controller\":true}]},"
        "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    struct mutate_result r;

    review(&fs, "UPDATE", "pods", "ns1", pod, LOOKUP_FAILURE_DENY, &r);
    ck_assert(r.allowed);
    ck_assert_ptr_null(r.patch);
    mutate_result_dispose(&r);
    review(&fs, "CREATE", "services", "ns1", pod, LOOKUP_FAILURE_DENY, &r);
    ck_assert(r.allowed);
    ck_assert_ptr_null(r.patch);
    mutate_result_dispose(&r);
    /* an ownerReference that is not the controller does not make it ours */
    review(&fs, "CREATE", "pods", "ns1", orphan, LOOKUP_FAILURE_DENY, &r);
    ck_assert(r.allowed);
    ck_assert_ptr_null(r.patch);
    mutate_result_dispose(&r);
    review(&fs, "CREATE", "pods", "ns1", other_kind, LOOKUP_FAILURE_DENY, &r);
    ck_assert(r.allowed);
    ck_assert_ptr_null(r.patch);
    mutate_result_dispose(&r);
    ck_assert_int_eq(fs.calls, 0);
    json_decref(pod);
    json_decref(orphan);
    json_decref(other_kind);
    json_decref(fs.job);
}
END_TEST

START_TEST(job_not_found_allows_with_warning_d7)
{
    struct fake_source fs = {.job = NULL};
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;

    review(&fs, "CREATE", "pods", "ns1", pod, LOOKUP_FAILURE_DENY, &r);
    ck_assert(r.allowed);
    ck_assert_ptr_null(r.patch);
    ck_assert_uint_eq(r.warnings.n, 1);
    ck_assert_str_eq(r.warnings.items[0], "volcano job ns1/j not found, pod not mutated");
    mutate_result_dispose(&r);
    json_decref(pod);
}
END_TEST

/* serve --namespaces: a source that does not serve the pod's namespace declines; the
 * pod is allowed as it is, with no warning (another webhook may serve that namespace),
 * whatever the lookup-failure policy. */
START_TEST(namespace_not_served_allows_unpatched)
{
    struct fake_source fs = {.job = tu_json(JOB_SIMPLE), .rc = WH_DECLINED};
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;

    for (int k = 0; k < 2; k++) {
        review(&fs, "CREATE", "pods", "ns3", pod,
               k == 0 ? LOOKUP_FAILURE_DENY : LOOKUP_FAILURE_ALLOW, &r);
        ck_assert(r.allowed);
        ck_assert_ptr_null(r.patch);
        ck_assert_str_eq(r.message, "");
        ck_assert_uint_eq(r.warnings.n, 0);
        mutate_result_dispose(&r);
    }
    ck_assert_int_eq(fs.calls, 2);
    ck_assert_str_eq(fs.last_ns, "ns3");
    json_decref(pod);
    json_decref(fs.job);
}
END_TEST

START_TEST(lookup_failure_policy_d7)
{
    struct fake_source fs = {.job = NULL, .rc = WH_ETIMEOUT};
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;

    review(&fs, "CREATE", "pods", "ns1", pod, LOOKUP_FAILURE_DENY, &r);
    ck_assert(!r.allowed);
    ck_assert_int_eq(r.status_code, 500);
    ck_assert_str_eq(r.message, "cannot read volcano job ns1/j: InternalError: etcd is sad");
    ck_assert_ptr_null(r.patch);
    mutate_result_dispose(&r);

    review(&fs, "CREATE", "pods", "ns1", pod, LOOKUP_FAILURE_ALLOW, &r);
    ck_assert(r.allowed);
    ck_assert_ptr_null(r.patch);
    ck_assert_uint_eq(r.warnings.n, 1);
    ck_assert_str_eq(
        r.warnings.items[0],
        "volcano job ns1/j could not be read (InternalError: etcd is sad), pod not mutated");
    mutate_result_dispose(&r);
    json_decref(pod);
}
END_TEST

START_TEST(namespace_from_pod_when_request_has_none_d6)
{
    struct fake_source fs = {.job = tu_json(JOB_SIMPLE)};
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;

    json_object_set_new(json_object_get(pod, "metadata"), "namespace", json_string("ns1"));
    review(&fs, "CREATE", "pods", "", pod, LOOKUP_FAILURE_DENY, &r);
    ck_assert(r.allowed);
    ck_assert_str_eq(fs.last_ns, "ns1");
    ck_assert_uint_eq(json_array_size(r.patch), 2);
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(fs.job);
}
END_TEST

START_TEST(uid_mismatch_is_not_our_job_d6)
{
    struct fake_source fs = {.job = tu_json(JOB_SIMPLE)};
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;

    json_object_set_new(json_object_get(fs.job, "metadata"), "uid", json_string("u-2"));
    review(&fs, "CREATE", "pods", "ns1", pod, LOOKUP_FAILURE_DENY, &r);
    ck_assert(r.allowed);
    ck_assert_ptr_null(r.patch);
    ck_assert_uint_eq(r.warnings.n, 1);
    /* as for a missing Job: the answer tells a forger neither the uid nor that j exists */
    ck_assert_str_eq(r.warnings.items[0], "volcano job ns1/j not found, pod not mutated");
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(fs.job);
}
END_TEST

/* The API requires a uid in every ownerReference: without one (absent or ""), only a
 * forged review, which is not looked up and gets no patch. */
START_TEST(owner_without_uid_not_looked_up_d6)
{
    static const char *const forms[] = {"\"\"", NULL};
    struct fake_source fs = {.job = tu_json(JOB_SIMPLE)};

    for (size_t i = 0; i < 2; i++) {
        json_t *pod = tu_json(POD_SIMPLE);
        json_t *ref =
            json_array_get(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), 0);
        struct mutate_result r;

        if (forms[i] != NULL)
            json_object_set_new(ref, "uid", json_string(""));
        else
            json_object_del(ref, "uid");
        review(&fs, "CREATE", "pods", "ns1", pod, LOOKUP_FAILURE_DENY, &r);
        ck_assert(r.allowed);
        ck_assert_ptr_null(r.patch);
        ck_assert_uint_eq(r.warnings.n, 1);
        ck_assert_str_eq(r.warnings.items[0],
                         "the pod's ownerReference to volcano job ns1/j "
                         "has no uid, pod not mutated");
        mutate_result_dispose(&r);
        json_decref(pod);
    }
    ck_assert_int_eq(fs.calls, 0);
    json_decref(fs.job);
}
END_TEST

/* The effective set of a Job whose spec.plugins is plugins_json (D1): the names of
 * the registry in it, comma separated, in registry order. */
static void effective_names(const char *plugins_json, char *out, size_t len, size_t *warned)
{
    json_t *job = json_pack("{s:{s:o}}", "spec", "plugins", tu_json(plugins_json));
    bool enabled[16];
    const json_t *args[16];
    struct warnings w;

    warnings_init(&w);
    plugin_effective_set(job, enabled, args, &w);
    out[0] = '\0';
    for (size_t k = 0; k < plugin_registry_len; k++) {
        if (!enabled[k])
            continue;
        if (out[0] != '\0')
            strncat(out, ",", len - strlen(out) - 1);
        strncat(out, plugin_registry[k]->name, len - strlen(out) - 1);
    }
    *warned = w.n;
    json_decref(job);
}

/* D1: svc comes with tensorflow, mpi, pytorch or ray; ssh with mpi; unknown names are
 * told and left out. */
START_TEST(effective_set_implies_svc_and_ssh_d1)
{
    char names[128];
    size_t warned;

    effective_names("{\"mpi\":[]}", names, sizeof(names), &warned);
    ck_assert_str_eq(names, "ssh,svc,mpi");
    effective_names("{\"ray\":[]}", names, sizeof(names), &warned);
    ck_assert_str_eq(names, "svc,ray");
    effective_names("{\"pytorch\":[]}", names, sizeof(names), &warned);
    ck_assert_str_eq(names, "svc,pytorch");
    effective_names("{\"tensorflow\":[]}", names, sizeof(names), &warned);
    ck_assert_str_eq(names, "svc,tensorflow");
    effective_names("{\"hcclrank\":[],\"env\":[],\"gpu\":[]}", names, sizeof(names), &warned);
    ck_assert_str_eq(names, "env,hcclrank");
    ck_assert_uint_eq(warned, 1);
}
END_TEST

START_TEST(unknown_plugin_warns_and_others_run_d3)
{
    json_t *job = tu_json(JOB_SIMPLE);
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;

    json_object_set_new(json_object_get(json_object_get(job, "spec"), "plugins"), "gpu",
                        json_array());
    mutate_result_init(&r);
    mutate_pod_with_job(job, pod, "ns1", &r);
    ck_assert(r.allowed);
    ck_assert_uint_eq(json_array_size(r.patch), 2);
    ck_assert_uint_eq(r.warnings.n, 1);
    ck_assert_str_eq(r.warnings.items[0], "unknown plugin gpu in job spec.plugins ignored");
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(job);
}
END_TEST

START_TEST(plugin_error_denies_400_d7)
{
    json_t *job = tu_json(JOB_SIMPLE);
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;

    /* ray without a head task blocks every pod of the job (docs/plugins.md §3.8) */
    json_object_set_new(json_object_get(json_object_get(job, "spec"), "plugins"), "ray",
                        json_array());
    mutate_result_init(&r);
    mutate_pod_with_job(job, pod, "ns1", &r);
    ck_assert(!r.allowed);
    ck_assert_int_eq(r.status_code, 400);
    ck_assert_str_eq(r.message, "ray plugin: job j doesn't have head task head");
    ck_assert_ptr_null(r.patch);
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(job);
}
END_TEST

/* jansson's allocator failing from the Nth allocation on (C-STYLE §11). */
static int oom_left;

static void *oom_malloc(size_t n)
{
    if (oom_left <= 0)
        return NULL;
    oom_left--;
    return malloc(n);
}

/*
 * D7 with memory running out: a plugin's WH_ENOMEM denies with 500, and the message
 * names the plugin (the chain runner adds it, as for every plugin error); running out
 * outside the plugins stays "out of memory".
 */
START_TEST(plugin_out_of_memory_denies_500_named)
{
    json_t *job = tu_json(JOB_SIMPLE);
    json_t *pod = tu_json(POD_SIMPLE);
    int named = 0;
    int n;

    for (n = 0; n < 1000; n++) {
        struct mutate_result r;
        bool allowed;

        mutate_result_init(&r);
        oom_left = n;
        json_set_alloc_funcs(oom_malloc, free);
        mutate_pod_with_job(job, pod, "ns1", &r);
        json_set_alloc_funcs(malloc, free);
        allowed = r.allowed;
        if (!allowed) {
            ck_assert_int_eq(r.status_code, 500);
            if (strcmp(r.message, "out of memory") != 0) {
                /* the entries made for every container, or either one's placing in
                 * the container, can be what finds no memory */
                ck_assert_msg(strcmp(r.message, "env plugin: out of memory") == 0
                                  || strcmp(r.message,
                                            "env plugin: cannot set env VK_TASK_INDEX in "
                                            "spec.containers[0]: out of memory")
                                      == 0
                                  || strcmp(r.message,
                                            "env plugin: cannot set env VC_TASK_INDEX in "
                                            "spec.containers[0]: out of memory")
                                      == 0,
                              "message: %s", r.message);
                named++;
            }
        }
        mutate_result_dispose(&r);
        if (allowed)
            break;
    }
    ck_assert_int_lt(n, 1000);
    ck_assert_int_gt(named, 0);
    json_decref(pod);
    json_decref(job);
}
END_TEST

/* Mutate, then check the patch against the result and the fixed point (D5). */
static json_t *mutate_and_check_fixed_point(const json_t *job, const json_t *pod,
                                            struct mutate_result *r)
{
    struct mutate_result again;
    json_t *applied;

    mutate_result_init(r);
    mutate_pod_with_job(job, pod, "ns1", r);
    ck_assert_msg(r->allowed, "denied: %s", r->message);
    applied = patch_apply(pod, r->patch ? r->patch : json_array(), NULL);
    ck_assert_ptr_nonnull(applied);
    ck_assert(json_equal(applied, r->pod));
    json_decref(applied);
    mutate_result_init(&again);
    mutate_pod_with_job(job, r->pod, "ns1", &again);
    ck_assert(again.allowed);
    ck_assert_msg(again.patch == NULL, "webhook applied to its own output changed it");
    mutate_result_dispose(&again);
    return r->pod;
}

static const char *WAIT_SCRIPT =
    "echo \"Waiting for master node pj-master-0.pj:23456 to be ready...\"\n"
    "TIMEOUT=300\n"
    "ELAPSED=0\n"
    "until { nc -z pj-master-0.pj 23456 || echo > /dev/tcp/pj-master-0.pj/23456; } 2>/dev/null; "
    "do\n"
    "  if [ $ELAPSED -ge $TIMEOUT ]; then\n"
    "    echo \"Timeout waiting for master after ${TIMEOUT} seconds\"\n"
    "    exit 1\n"
    "  fi\n"
    "  echo \"Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)\"\n"
    "  sleep 2\n"
    "  ELAPSED=$((ELAPSED + 2))\n"
    "done\n"
    "echo \"Master node is ready!\"";

START_TEST(added_init_container_gets_every_plugin_d13)
{
    json_t *job = tu_json(
        "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
        " \"metadata\":{\"name\":\"pj\",\"namespace\":\"ns1\",\"uid\":\"u-9\"},"
        " \"spec\":{\"plugins\":{\"pytorch\":[\"--wait-master-enabled\"],\"env\":[],\"ssh\":[]},"
        "  "
        "\"tasks\":[{\"name\":\"master\",\"replicas\":1},{\"name\":\"worker\",\"replicas\":2}]}}");
    json_t *pod = tu_json("{\"metadata\":{\"name\":\"pj-worker-0\",\"annotations\":{\"volcano.sh/"
                          "task-spec\":\"worker\"}},"
                          " \"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}");
    json_t *want = tu_json(
        "{\"metadata\":{\"name\":\"pj-worker-0\",\"annotations\":{\"volcano.sh/"
        "task-spec\":\"worker\"}},"
        " \"spec\":{\"hostname\":\"pj-worker-0\",\"subdomain\":\"pj\","
        "  \"volumes\":[{\"name\":\"pj-ssh\",\"secret\":{\"secretName\":\"pj-ssh\",\"items\":["
        "     "
        "{\"key\":\"id_rsa\",\"path\":\".ssh/id_rsa\"},{\"key\":\"id_rsa.pub\",\"path\":\".ssh/"
        "id_rsa.pub\"},"
        "     "
        "{\"key\":\"authorized_keys\",\"path\":\".ssh/"
        "authorized_keys\"},{\"key\":\"config\",\"path\":\".ssh/config\"}],"
        "     \"defaultMode\":384}},"
        "   {\"name\":\"pj-svc\",\"configMap\":{\"name\":\"pj-svc\"}}],"
        "  \"containers\":[{\"name\":\"c\",\"image\":\"i\","
        "   "
        "\"volumeMounts\":[{\"name\":\"pj-ssh\",\"mountPath\":\"/root/.ssh\",\"subPath\":\".ssh\"},"
        "                    {\"name\":\"pj-svc\",\"mountPath\":\"/etc/volcano\"}],"
        "   \"ports\":[{\"name\":\"pytorchjob-port\",\"containerPort\":23456}],"
        "   "
        "\"env\":[{\"name\":\"VK_TASK_INDEX\",\"value\":\"0\"},{\"name\":\"VC_TASK_INDEX\","
        "\"value\":\"0\"},"
        "     "
        "{\"name\":\"VC_MASTER_HOSTS\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"pj-svc\","
        "\"key\":\"VC_MASTER_HOSTS\"}}},"
        "     "
        "{\"name\":\"VC_MASTER_NUM\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"pj-svc\","
        "\"key\":\"VC_MASTER_NUM\"}}},"
        "     "
        "{\"name\":\"VC_WORKER_HOSTS\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"pj-svc\","
        "\"key\":\"VC_WORKER_HOSTS\"}}},"
        "     "
        "{\"name\":\"VC_WORKER_NUM\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"pj-svc\","
        "\"key\":\"VC_WORKER_NUM\"}}},"
        "     "
        "{\"name\":\"MASTER_ADDR\",\"value\":\"pj-master-0.pj\"},{\"name\":\"MASTER_PORT\","
        "\"value\":\"23456\"},"
        "     {\"name\":\"WORLD_SIZE\",\"value\":\"3\"},{\"name\":\"RANK\",\"value\":\"1\"}]}],"
        "  "
        "\"initContainers\":[{\"name\":\"wait-for-master\",\"image\":\"busybox:1.36.1\","
        "\"command\":[\"sh\",\"-c\",\"S\"],"
        "   "
        "\"volumeMounts\":[{\"name\":\"pj-ssh\",\"mountPath\":\"/root/.ssh\",\"subPath\":\".ssh\"},"
        "                    {\"name\":\"pj-svc\",\"mountPath\":\"/etc/volcano\"}],"
        "   "
        "\"env\":[{\"name\":\"VK_TASK_INDEX\",\"value\":\"0\"},{\"name\":\"VC_TASK_INDEX\","
        "\"value\":\"0\"},"
        "     "
        "{\"name\":\"VC_MASTER_HOSTS\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"pj-svc\","
        "\"key\":\"VC_MASTER_HOSTS\"}}},"
        "     "
        "{\"name\":\"VC_MASTER_NUM\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"pj-svc\","
        "\"key\":\"VC_MASTER_NUM\"}}},"
        "     "
        "{\"name\":\"VC_WORKER_HOSTS\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"pj-svc\","
        "\"key\":\"VC_WORKER_HOSTS\"}}},"
        "     "
        "{\"name\":\"VC_WORKER_NUM\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"pj-svc\","
        "\"key\":\"VC_WORKER_NUM\"}}}]}]}}");
    struct mutate_result r;
    json_t *got;

    json_array_set_new(
        json_object_get(
            json_array_get(json_object_get(json_object_get(want, "spec"), "initContainers"), 0),
            "command"),
        2, json_string(WAIT_SCRIPT));
    got = mutate_and_check_fixed_point(job, pod, &r);
    {
        char *g = json_dumps(got, JSON_COMPACT);
        ck_assert_msg(json_equal(got, want), "got %s", g);
        free(g);
    }
    ck_assert_uint_eq(r.warnings.n, 0);
    mutate_result_dispose(&r);
    json_decref(want);
    json_decref(pod);
    json_decref(job);
}
END_TEST

/*
 * Every plugin at once on a pod with most of what pods carry: the admitted pod is
 * left exactly as it was (the chain records its edits over the pod's view,
 * plugins/podedit.h, and never writes the pod), the parts no plugin edits are the
 * admitted pod's, the patch applied to it gives the mutated pod, and each plugin
 * left its mark.
 */
START_TEST(chain_leaves_the_admitted_pod_as_it_was)
{
    json_t *job = tu_json(
        "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
        " \"metadata\":{\"name\":\"aj\",\"namespace\":\"ns1\",\"uid\":\"u-7\"},"
        " \"spec\":{\"plugins\":{\"env\":[],\"svc\":[],\"ssh\":[],\"mpi\":[],\"pytorch\":[],"
        "   \"tensorflow\":[],\"ray\":[],\"hcclrank\":[]},"
        "  \"tasks\":[{\"name\":\"master\",\"replicas\":1},{\"name\":\"worker\",\"replicas\":2},"
        "   {\"name\":\"ps\",\"replicas\":1},{\"name\":\"head\",\"replicas\":1}]}}");
    const char *pod_text =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
        " \"metadata\":{\"name\":\"aj-worker-1\",\"namespace\":\"ns1\",\"labels\":{\"app\":\"x\"},"
        "  \"annotations\":{\"volcano.sh/task-spec\":\"worker\",\"a\":\"b\"},"
        "  \"ownerReferences\":[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
        "   \"name\":\"aj\",\"uid\":\"u-7\",\"controller\":true}]},"
        " \"spec\":{\"affinity\":{\"nodeAffinity\":{\"x\":[1,2]}},\"tolerations\":[{\"key\":\"k\"}]"
        ","
        "  \"securityContext\":{\"runAsUser\":1000},\"restartPolicy\":\"Never\","
        "  \"volumes\":[{\"name\":\"data\",\"emptyDir\":{}}],"
        "  "
        "\"initContainers\":[{\"name\":\"init\",\"image\":\"i\",\"env\":[{\"name\":\"E\",\"value\":"
        "\"1\"}]}],"
        "  \"containers\":[{\"name\":\"main\",\"image\":\"i\",\"command\":[\"run\"],"
        "   \"resources\":{\"limits\":{\"cpu\":\"1\"}},"
        "   "
        "\"env\":[{\"name\":\"RANK\",\"value\":\"9\"},{\"name\":\"F\",\"valueFrom\":{\"fieldRef\":{"
        "\"fieldPath\":\"x\"}}}],"
        "   \"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/d\"}],"
        "   \"ports\":[{\"containerPort\":80}]}]},"
        " \"status\":{\"phase\":\"Pending\"}}";
    json_t *pod = tu_json(pod_text);
    json_t *pristine = tu_json(pod_text);
    struct mutate_result r;
    const json_t *out;
    const json_t *spec;

    out = mutate_and_check_fixed_point(job, pod, &r);
    ck_assert_ptr_nonnull(r.patch);
    ck_assert(json_equal(pod, pristine));
    /* The parts no plugin edits are the admitted pod's. */
    spec = json_object_get(out, "spec");
    ck_assert(json_equal(json_object_get(json_object_get(out, "metadata"), "labels"),
                         json_object_get(json_object_get(pod, "metadata"), "labels")));
    ck_assert(json_equal(json_object_get(spec, "affinity"),
                         json_object_get(json_object_get(pod, "spec"), "affinity")));
    ck_assert(json_equal(json_object_get(out, "status"), json_object_get(pod, "status")));
    ck_assert(json_equal(json_object_get(spec, "tolerations"),
                         json_object_get(json_object_get(pod, "spec"), "tolerations")));
    /* Marks of the chain: hcclrank's annotation, svc's hostname, ssh's volume, pytorch's RANK. */
    ck_assert_str_eq(
        json_string_value(json_object_get(
            json_object_get(json_object_get(out, "metadata"), "annotations"), "hccl/rankIndex")),
        "2"); /* pytorch's RANK: 1 master + index 1 */
    ck_assert_str_eq(json_string_value(json_object_get(spec, "hostname")), "aj-worker-1");
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(spec, "volumes"), 1), "name")),
                     "aj-ssh");
    ck_assert_str_eq(
        json_string_value(json_object_get(
            json_array_get(
                json_object_get(json_array_get(json_object_get(spec, "containers"), 0), "env"), 0),
            "value")),
        "2"); /* the pod's RANK=9, upserted in place by pytorch */
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(pristine);
    json_decref(job);
}
END_TEST

START_TEST(generate_name_pod_d14)
{
    json_t *job =
        tu_json("{\"metadata\":{\"name\":\"g\",\"namespace\":\"ns1\",\"uid\":\"u\"},"
                " \"spec\":{\"plugins\":{\"env\":[],\"svc\":[\"--inject-hosts-env=false\"]},"
                "  \"tasks\":[{\"name\":\"t\",\"replicas\":3}]}}");
    json_t *pod = tu_json(
        "{\"metadata\":{\"generateName\":\"g-t-\",\"labels\":{\"volcano.sh/task-index\":\"2\"},"
        "  \"annotations\":{\"volcano.sh/task-spec\":\"t\",\"volcano.sh/task-index\":\"7\"}},"
        " \"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    struct mutate_result r;

    mutate_result_init(&r);
    mutate_pod_with_job(job, pod, "ns1", &r);
    ck_assert(r.allowed);
    tu_assert_json_eq(
        r.patch,
        "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env\",\"value\":["
        "   "
        "{\"name\":\"VK_TASK_INDEX\",\"value\":\"2\"},{\"name\":\"VC_TASK_INDEX\",\"value\":\"2\"}]"
        "},"
        " {\"op\":\"add\",\"path\":\"/spec/containers/0/"
        "volumeMounts\",\"value\":[{\"name\":\"g-svc\",\"mountPath\":\"/etc/volcano\"}]},"
        " {\"op\":\"add\",\"path\":\"/spec/subdomain\",\"value\":\"g\"},"
        " {\"op\":\"add\",\"path\":\"/spec/"
        "volumes\",\"value\":[{\"name\":\"g-svc\",\"configMap\":{\"name\":\"g-svc\"}}]}]");
    ck_assert_uint_eq(r.warnings.n, 1);
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(job);
}
END_TEST

/* D6: without a name or the task-index label, the index comes from the annotation;
 * D14: svc's warning appears once although D13 runs the chain twice (pytorch adds
 * wait-for-master to a worker). */
START_TEST(generate_name_index_from_annotation_warned_once_d6_d14)
{
    json_t *job = tu_json(
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns1\",\"uid\":\"u\"},"
        " \"spec\":{\"plugins\":{\"env\":[],\"pytorch\":[\"--wait-master-enabled\"],"
        "   \"svc\":[\"--inject-hosts-env=false\"]},"
        "  "
        "\"tasks\":[{\"name\":\"master\",\"replicas\":1},{\"name\":\"worker\",\"replicas\":3}]}}");
    json_t *pod = tu_json(
        "{\"metadata\":{\"generateName\":\"p-worker-\","
        "  \"annotations\":{\"volcano.sh/task-spec\":\"worker\",\"volcano.sh/task-index\":\"1\"}},"
        " \"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    struct mutate_result r;

    mutate_result_init(&r);
    mutate_pod_with_job(job, pod, "ns1", &r);
    ck_assert(r.allowed);
    ck_assert_uint_eq(r.warnings.n, 1);
    ck_assert_str_eq(r.warnings.items[0],
                     "svc plugin: pod has no name (generateName), spec.hostname left unset");
    /* index 1 from the annotation: RANK = master replicas + 1; the init container too */
    ck_assert_uint_eq(json_array_size(r.patch), 6);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(r.patch, 0), "path")),
                     "/spec/containers/0/env");
    tu_assert_json_eq(
        json_object_get(json_array_get(r.patch, 0), "value"),
        "[{\"name\":\"VK_TASK_INDEX\",\"value\":\"1\"},{\"name\":\"VC_TASK_INDEX\",\"value\":\"1\"}"
        ","
        " {\"name\":\"MASTER_ADDR\",\"value\":\"p-master-0.p\"},{\"name\":\"MASTER_PORT\","
        "\"value\":\"23456\"},"
        " {\"name\":\"WORLD_SIZE\",\"value\":\"4\"},{\"name\":\"RANK\",\"value\":\"2\"}]");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(r.patch, 5), "path")),
                     "/spec/initContainers");
    tu_assert_json_eq(
        json_object_get(json_array_get(json_object_get(json_array_get(r.patch, 5), "value"), 0),
                        "env"),
        "[{\"name\":\"VK_TASK_INDEX\",\"value\":\"1\"},{\"name\":\"VC_TASK_INDEX\",\"value\":\"1\"}"
        "]");
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(job);
}
END_TEST

/* ---- D15: no pod the API server will refuse ---- */

/* A Job called name with plugins and tasks (JSON texts), and the pod of task/index. */
static json_t *job_named(const char *name, const char *plugins, const char *tasks)
{
    json_t *job = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:o, s:o}}", "apiVersion",
                            "batch.volcano.sh/v1alpha1", "kind", "Job", "metadata", "name", name,
                            "namespace", "ns1", "uid", "u-1", "spec", "plugins", tu_json(plugins),
                            "tasks", tu_json(tasks));

    ck_assert_ptr_nonnull(job);
    return job;
}

static json_t *pod_of(const char *job, const char *task, int index, const char *containers)
{
    char name[128];
    json_t *pod;

    snprintf(name, sizeof(name), "%s-%s-%d", job, task, index);
    pod = json_pack("{s:{s:s, s:{s:s}}, s:{s:o}}", "metadata", "name", name, "annotations",
                    "volcano.sh/task-spec", task, "spec", "containers", tu_json(containers));
    ck_assert_ptr_nonnull(pod);
    return pod;
}

/* Mutate and assert the D15 denial: code 400, no patch, the exact message. */
static void assert_d15(const json_t *job, const json_t *pod, const char *message)
{
    struct mutate_result r;

    mutate_result_init(&r);
    mutate_pod_with_job(job, pod, "ns1", &r);
    ck_assert_msg(!r.allowed, "allowed");
    ck_assert_int_eq(r.status_code, 400);
    ck_assert_str_eq(r.message, message);
    ck_assert_ptr_null(r.patch);
    mutate_result_dispose(&r);
}

#define NAME59                                                                                     \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghi"

START_TEST(job_name_with_a_dot_denied_d15)
{
    json_t *job = job_named("a.b", "{\"svc\":[]}", "[{\"name\":\"master\",\"replicas\":1}]");
    json_t *pod = pod_of("a.b", "master", 0, "[{\"name\":\"c\"}]");

    assert_d15(job, pod,
               "svc plugin: job name \"a.b\" cannot be a pod subdomain (a DNS-1123 label has no "
               "'.'): rename the job");
    json_decref(pod);
    json_decref(job);
}
END_TEST

START_TEST(hostname_over_63_denied_d15)
{
    json_t *job = job_named(NAME59, "{\"svc\":[]}", "[{\"name\":\"a\",\"replicas\":11}]");
    json_t *pod = pod_of(NAME59, "a", 10, "[{\"name\":\"c\"}]");
    struct mutate_result r;

    assert_d15(job, pod,
               "svc plugin: pod hostname \"" NAME59 "-a-10\" (the pod's name) cannot be a hostname "
               "(a DNS-1123 label has at most 63 characters): shorten the job name to at most 58 "
               "characters");
    json_decref(pod);
    /* ...-a-9 has 63 characters: served */
    pod = pod_of(NAME59, "a", 9, "[{\"name\":\"c\"}]");
    mutate_result_init(&r);
    mutate_pod_with_job(job, pod, "ns1", &r);
    ck_assert_msg(r.allowed, "%s", r.message);
    ck_assert_ptr_nonnull(r.patch);
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(job);
}
END_TEST

START_TEST(wait_for_master_name_taken_denied_d15)
{
    json_t *job = job_named("pj", "{\"pytorch\":[\"--wait-master-enabled\"]}",
                            "[{\"name\":\"master\",\"replicas\":1},"
                            " {\"name\":\"worker\",\"replicas\":2}]");
    json_t *pod = pod_of("pj", "worker", 0, "[{\"name\":\"wait-for-master\"},{\"name\":\"c\"}]");

    assert_d15(job, pod,
               "pytorch plugin: the pod would have a container and an init container both named "
               "\"wait-for-master\", which the API server refuses: rename the container in the "
               "template of task worker");
    json_decref(pod);
    json_decref(job);
}
END_TEST

/* 9,000 workers: TF_CONFIG of 313,987 bytes, which no process can be started with. */
START_TEST(tf_config_over_128k_denied_d15)
{
    json_t *job = job_named("tf-dist", "{\"tensorflow\":[]}",
                            "[{\"name\":\"ps\",\"replicas\":1},"
                            " {\"name\":\"worker\",\"replicas\":9000}]");
    json_t *pod = pod_of("tf-dist", "worker", 8999, "[{\"name\":\"c\"}]");

    assert_d15(job, pod,
               "tensorflow plugin: env TF_CONFIG of container \"c\" would be 313998 bytes, more "
               "than the 131072 (128 KiB) one environment string can hold (the kernel's "
               "MAX_ARG_STRLEN), so the container cannot start: run fewer replicas "
               "(spec.tasks[].replicas)");
    json_decref(pod);
    json_decref(job);
}
END_TEST

START_TEST(port_and_volume_names_denied_d15)
{
    json_t *job =
        job_named("pj", "{\"pytorch\":[\"--port=abc\"]}", "[{\"name\":\"master\",\"replicas\":1}]");
    json_t *pod = pod_of("pj", "master", 0, "[{\"name\":\"c\"}]");

    /* Go's flag parsing leaves 0 in the port (docs/plugins.md §3.4 rule 10) */
    assert_d15(job, pod,
               "pytorch plugin: container \"c\" would get container port 0, outside 1-65535: fix "
               "the port in spec.plugins.pytorch");
    json_decref(pod);
    json_decref(job);
    /* ssh alone on a 60-character Job: its volume name has 64 */
    job = job_named(NAME59 "x", "{\"ssh\":[]}", "[{\"name\":\"m\",\"replicas\":1}]");
    pod = pod_of(NAME59 "x", "m", 0, "[{\"name\":\"c\"}]");
    assert_d15(job, pod,
               "ssh plugin: volume name \"" NAME59 "x-ssh\" cannot be a volume name (a DNS-1123 "
               "label has at most 63 characters): shorten the job name to at most 59 characters");
    json_decref(pod);
    json_decref(job);
}
END_TEST

/* A pod invalid before the plugins is not ours to refuse: served, the API server says why. */
START_TEST(pod_invalid_already_is_served_d15)
{
    json_t *job = job_named("j", "{\"env\":[]}", "[{\"name\":\"w\",\"replicas\":1}]");
    json_t *pod = pod_of("j", "w", 0,
                         "[{\"name\":\"c\",\"ports\":[{\"name\":\"Bad\",\"containerPort\":0}]},"
                         " {\"name\":\"c\"}]");
    struct mutate_result r;

    json_object_set_new(json_object_get(pod, "spec"), "hostname", json_string("a.b"));
    mutate_result_init(&r);
    mutate_pod_with_job(job, pod, "ns1", &r);
    ck_assert_msg(r.allowed, "%s", r.message);
    ck_assert_uint_eq(json_array_size(r.patch), 2); /* env of both containers */
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(job);
}
END_TEST

START_TEST(huge_replicas_denied_not_exhausted)
{
    /* mpi's MPI_HOST for 2^31-1 workers would be ~80 GB: denied with a clear reason. */
    json_t *job = tu_json("{\"metadata\":{\"name\":\"big\",\"namespace\":\"ns1\",\"uid\":\"u\"},"
                          " \"spec\":{\"plugins\":{\"mpi\":[]},"
                          "  "
                          "\"tasks\":[{\"name\":\"master\",\"replicas\":1},{\"name\":\"worker\","
                          "\"replicas\":2147483647}]}}");
    json_t *master = tu_json(
        "{\"metadata\":{\"name\":\"big-master-0\",\"annotations\":"
        "{\"volcano.sh/task-spec\":\"master\"}},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    json_t *worker = tu_json(
        "{\"metadata\":{\"name\":\"big-worker-7\",\"annotations\":"
        "{\"volcano.sh/task-spec\":\"worker\"}},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    struct mutate_result r;

    mutate_result_init(&r);
    mutate_pod_with_job(job, master, "ns1", &r);
    ck_assert(!r.allowed);
    ck_assert_int_eq(r.status_code, 400);
    ck_assert_str_eq(r.message, "mpi plugin: MPI_HOST of task worker would exceed 1048576 bytes");
    mutate_result_dispose(&r);
    /* the workers need no host list and are served */
    mutate_result_init(&r);
    mutate_pod_with_job(job, worker, "ns1", &r);
    ck_assert(r.allowed);
    ck_assert_ptr_nonnull(r.patch);
    mutate_result_dispose(&r);
    json_decref(worker);
    json_decref(master);
    json_decref(job);
}
END_TEST

START_TEST(cut_utf8_in_warning_stays_valid)
{
    /* Go's flag message quotes the value and is cut to fit: the cut may fall inside
     * a multi-byte character, which jansson would refuse (was an HTTP 500). */
    json_t *job = tu_json(JOB_SIMPLE);
    json_t *pod = tu_json(POD_SIMPLE);
    json_t *args = json_array();
    json_t *warnings;
    char arg[512] = "--port=x";
    struct mutate_result r;

    for (int i = 0; i < 100; i++)
        strcat(arg, "\xc3\xa9"); /* é */
    json_array_append_new(args, json_string(arg));
    json_object_set_new(json_object_get(json_object_get(job, "spec"), "plugins"), "tensorflow",
                        args);
    mutate_result_init(&r);
    mutate_pod_with_job(job, pod, "ns1", &r);
    ck_assert(r.allowed);
    ck_assert_uint_ge(r.warnings.n, 1);
    warnings = warnings_to_json(&r.warnings);
    ck_assert_ptr_nonnull(warnings); /* every entry is valid UTF-8 */
    ck_assert_uint_eq(json_array_size(warnings), r.warnings.n);
    ck_assert_msg(strncmp(r.warnings.items[0], "tensorflow plugin: invalid value \"x\xc3\xa9", 37)
                      == 0,
                  "%s", r.warnings.items[0]);
    json_decref(warnings);
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(job);
}
END_TEST

/* A namespace is a DNS-1123 label: "x.y" or 64 characters names no namespace, so no GET. */
START_TEST(invalid_namespace_not_looked_up)
{
    struct fake_source fs = {.job = tu_json(JOB_SIMPLE)};
    json_t *pod = tu_json(POD_SIMPLE);
    static const char *const bad[] = {
        "x.y", "a234567890123456789012345678901234567890123456789012345678901234", "NS"};
    struct mutate_result r;

    json_object_del(json_object_get(pod, "metadata"), "namespace");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fs.calls = 0;
        review(&fs, "CREATE", "pods", bad[i], pod, LOOKUP_FAILURE_DENY, &r);
        ck_assert(r.allowed);
        ck_assert_ptr_null(r.patch);
        ck_assert_uint_eq(r.warnings.n, 1);
        ck_assert_str_eq(r.warnings.items[0],
                         "ownerReference names no valid volcano job, pod not mutated");
        ck_assert_int_eq(fs.calls, 0);
        mutate_result_dispose(&r);
    }
    json_decref(pod);
    json_decref(fs.job);
}
END_TEST

START_TEST(invalid_owner_name_not_looked_up)
{
    /* "." would make the GET path the namespace's Job list. */
    struct fake_source fs = {.job = tu_json(JOB_SIMPLE)};
    json_t *pod = tu_json(POD_SIMPLE);
    json_t *refs = json_object_get(json_object_get(pod, "metadata"), "ownerReferences");
    static const char *const bad[] = {".", "..", "J", "a/b", "-a", ""};
    struct mutate_result r;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_object_set_new(json_array_get(refs, 0), "name", json_string(bad[i]));
        review(&fs, "CREATE", "pods", "ns1", pod, LOOKUP_FAILURE_DENY, &r);
        ck_assert(r.allowed);
        ck_assert_ptr_null(r.patch);
        if (bad[i][0] != '\0') { /* an empty name is no owner at all: not served, no warning */
            ck_assert_uint_eq(r.warnings.n, 1);
            ck_assert_str_eq(r.warnings.items[0],
                             "ownerReference names no valid volcano job, pod not mutated");
        }
        mutate_result_dispose(&r);
    }
    ck_assert_int_eq(fs.calls, 0);
    json_decref(pod);
    json_decref(fs.job);
}
END_TEST

/* ---- D16 in pod admission: the Job's diagnostics as the pod's warnings ---- */

/* A Job with three diagnostics: an unknown plugin, an argument error of svc, two tasks
 * named worker. */
static const char *JOB_DIAG =
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
    " \"metadata\":{\"name\":\"j\",\"namespace\":\"ns1\",\"uid\":\"u-1\",\"resourceVersion\":\"7\"}"
    ","
    " \"spec\":{\"plugins\":{\"svc\":[\"--nope\"],\"zzz\":[]},"
    "  \"tasks\":[{\"name\":\"worker\",\"replicas\":2,\"template\":{\"spec\":{\"containers\":[{"
    "\"name\":\"c\"}]}}},"
    "   {\"name\":\"worker\",\"replicas\":1,\"template\":{\"spec\":{\"containers\":[{"
    "\"name\":\"c\"}]}}}]}}";

/* A source that keeps diagnostics per Job version: fake_get on fs (its first member,
 * so one userdata serves both callbacks), and a diagnose that counts its calls: those
 * that only ask whether there are any (out NULL) and those that fill out. */
struct diag_source {
    struct fake_source fs;
    int calls;    /* all of them */
    int fills;    /* with out set */
    int rc;       /* what diagnose returns (WH_DECLINED when asked with none) */
    size_t count; /* diagnostics it gives when rc == 0 */
    void (*fill)(struct diagnostics *out); /* gives these instead (count ignored) */
};

static int fake_diagnose(void *ud, const json_t *job, struct diagnostics *out)
{
    struct diag_source *ds = ud;

    (void)job;
    ds->calls++;
    if (out == NULL)
        return ds->rc == 0 && ds->count == 0 && ds->fill == NULL ? WH_DECLINED : ds->rc;
    ds->fills++;
    diagnose_init(out);
    if (ds->fill != NULL) {
        ds->fill(out);
        return ds->rc;
    }
    for (size_t i = 0; ds->rc == 0 && i < ds->count; i++)
        diagnose_add(out, DIAGNOSE_TASK_NOT_FOUND, i == 0, "svc", "kept diagnostic %zu", i);
    return ds->rc;
}

static void review_diag(struct diag_source *ds, json_t *pod, struct mutate_result *out)
{
    struct jobsource src = {.get = fake_get, .diagnose = fake_diagnose, .userdata = ds};
    struct mutate_options opt = {.lookup_failure = LOOKUP_FAILURE_DENY};
    struct mutate_request req = {
        .uid = "req-1",
        .operation = "CREATE",
        .resource = "pods",
        .group = "",
        .sub_resource = "",
        .ns = "ns1",
        .pod = pod,
    };

    mutate_review(&req, &src, &opt, out);
}

START_TEST(job_diagnostics_are_pod_warnings)
{
    struct fake_source fs = {.job = tu_json(JOB_DIAG)};
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;

    review(&fs, "CREATE", "pods", "ns1", pod, LOOKUP_FAILURE_DENY, &r);
    ck_assert(r.allowed);
    /* The chain's own warnings first (its argument error, the unknown plugin); then the Job's
     * diagnostics, less those the chain told already in its words (the argument error, with
     * "; fix spec.plugins.svc" added, and the unknown name). */
    ck_assert_uint_eq(r.warnings.n, 3);
    ck_assert_str_eq(r.warnings.items[0], "unknown plugin zzz in job spec.plugins ignored");
    ck_assert_str_eq(r.warnings.items[1],
                     "svc plugin: flag provided but not defined: -nope, later arguments ignored");
    ck_assert_str_eq(r.warnings.items[2],
                     "spec.tasks[1] has the name \"worker\" of spec.tasks[0]: the plugins see "
                     "only the first and the pods of both get the same names; rename one");
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(fs.job);
}
END_TEST

/* The source's kept diagnostics are used as they are (no diagnose_job per pod); a source
 * without this version (WH_ENOTFOUND) leaves it to diagnose_job. */
START_TEST(job_diagnostics_from_the_source)
{
    struct diag_source ds = {.fs = {.job = tu_json(JOB_SIMPLE)}, .count = 2};
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;

    review_diag(&ds, pod, &r);
    ck_assert(r.allowed);
    ck_assert_int_eq(ds.calls, 2); /* whether there are any, then the fill */
    ck_assert_int_eq(ds.fills, 1);
    ck_assert_uint_eq(r.warnings.n, 2);
    ck_assert_str_eq(r.warnings.items[0], "svc plugin: kept diagnostic 0"); /* fatal: advice here */
    ck_assert_str_eq(r.warnings.items[1], "svc plugin: kept diagnostic 1");
    mutate_result_dispose(&r);

    json_decref(ds.fs.job);
    ds.fs.job = tu_json(JOB_DIAG);
    ds.rc = WH_ENOTFOUND;
    review_diag(&ds, pod, &r);
    ck_assert_int_eq(ds.calls, 3); /* asked once: not this version, so no fill either */
    ck_assert_int_eq(ds.fills, 1);
    ck_assert_uint_eq(r.warnings.n, 3);
    ck_assert_str_eq(r.warnings.items[2],
                     "spec.tasks[1] has the name \"worker\" of spec.tasks[0]: the plugins see "
                     "only the first and the pods of both get the same names; rename one");
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(ds.fs.job);
}
END_TEST

/* A version the source knows to have none: one question, nothing filled (so job_warnings
 * allocates no struct diagnostics), and the pod's warnings are the chain's alone. The
 * same Job with diagnostics gets them. */
START_TEST(job_without_diagnostics_is_asked_once)
{
    struct diag_source ds = {.fs = {.job = tu_json(JOB_SIMPLE)}, .count = 0};
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;

    review_diag(&ds, pod, &r);
    ck_assert(r.allowed);
    ck_assert_int_eq(ds.fs.calls, 1);
    ck_assert_int_eq(ds.calls, 1);
    ck_assert_int_eq(ds.fills, 0);
    ck_assert_uint_eq(r.warnings.n, 0);
    ck_assert_uint_eq(r.patch_ops, 2); /* env's VK_TASK_INDEX and VC_TASK_INDEX */
    mutate_result_dispose(&r);

    /* The same source without the version (WH_ENOTFOUND): diagnose_job, which finds none. */
    ds.rc = WH_ENOTFOUND;
    review_diag(&ds, pod, &r);
    ck_assert_int_eq(ds.calls, 2);
    ck_assert_int_eq(ds.fills, 0);
    ck_assert_uint_eq(r.warnings.n, 0);
    mutate_result_dispose(&r);

    ds.rc = 0;
    ds.count = 1;
    review_diag(&ds, pod, &r);
    ck_assert_int_eq(ds.calls, 4);
    ck_assert_int_eq(ds.fills, 1);
    ck_assert_uint_eq(r.warnings.n, 1);
    ck_assert_str_eq(r.warnings.items[0], "svc plugin: kept diagnostic 0");
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(ds.fs.job);
}
END_TEST

/* Diagnostics for the finding of a chain warning by key, not by text: the chain's
 * argument error of svc is keyed spec.plugins.svc (plugin_args). */
static void fill_keyed(struct diagnostics *out)
{
    /* Same key, other words: the chain told it. */
    diagnose_add_keyed(out, "spec.plugins.svc", DIAGNOSE_PLUGIN_ARGUMENT_INVALID, false, "svc",
                       "told in other words");
    /* The chain's text and more, but no key: another finding, shown. */
    diagnose_add(out, DIAGNOSE_CONFLICT, false, "svc",
                 "flag provided but not defined: -nope, later arguments ignored; and more");
    /* A key no chain warning has. */
    diagnose_add_keyed(out, "spec.plugins.ssh", DIAGNOSE_PLUGIN_ARGUMENT_INVALID, false, "ssh",
                       "not told");
}

START_TEST(job_diagnostics_told_by_the_chain_matched_by_key)
{
    struct diag_source ds = {.fs = {.job = tu_json(JOB_SIMPLE)}, .fill = fill_keyed};
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;

    json_object_set_new(json_object_get(ds.fs.job, "spec"), "plugins",
                        tu_json("{\"svc\":[\"--nope\"]}"));
    review_diag(&ds, pod, &r);
    ck_assert(r.allowed);
    ck_assert_int_eq(ds.fills, 1);
    ck_assert_uint_eq(r.warnings.n, 3);
    ck_assert_str_eq(r.warnings.items[0],
                     "svc plugin: flag provided but not defined: -nope, later arguments ignored");
    ck_assert_str_eq(r.warnings.keys[0], "spec.plugins.svc");
    ck_assert_str_eq(r.warnings.items[1],
                     "svc plugin: flag provided but not defined: -nope, "
                     "later arguments ignored; and more");
    ck_assert_str_eq(r.warnings.items[2], "ssh plugin: not told");
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(ds.fs.job);
}
END_TEST

/* More than fit: WARNINGS_MAX in all, the last one saying how many more there are. */
START_TEST(job_diagnostics_bounded)
{
    struct diag_source ds = {.fs = {.job = tu_json(JOB_SIMPLE)}, .count = 30};
    json_t *pod = tu_json(POD_SIMPLE);
    struct mutate_result r;
    size_t total = 0;

    review_diag(&ds, pod, &r);
    ck_assert(r.allowed);
    ck_assert_uint_eq(r.warnings.n, WARNINGS_MAX);
    ck_assert_str_eq(r.warnings.items[0], "svc plugin: kept diagnostic 0");
    ck_assert_str_eq(r.warnings.items[WARNINGS_MAX - 2], "svc plugin: kept diagnostic 14");
    ck_assert_str_eq(r.warnings.items[WARNINGS_MAX - 1],
                     "15 more diagnostics of volcano job j not shown: kubectl describe vcjob -n "
                     "ns1 j lists them");
    for (size_t i = 0; i < r.warnings.n; i++)
        total += strlen(r.warnings.items[i]);
    ck_assert_uint_le(total, DIAGNOSE_WARNINGS_CHARS);
    mutate_result_dispose(&r);

    /* Exactly as many as fit: no summary line. */
    ds.count = WARNINGS_MAX;
    review_diag(&ds, pod, &r);
    ck_assert_uint_eq(r.warnings.n, WARNINGS_MAX);
    ck_assert_str_eq(r.warnings.items[WARNINGS_MAX - 1], "svc plugin: kept diagnostic 15");
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(ds.fs.job);
}
END_TEST

/* A denied pod gets its denial, not the Job's advice. */
START_TEST(job_diagnostics_not_on_denied_pod)
{
    struct diag_source ds = {.fs = {.job = tu_json(JOB_SIMPLE)}, .count = 2};
    json_t *pod = tu_json("{\"metadata\":{\"name\":\"j-worker-1\",\"ownerReferences\":[{"
                          "\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                          "\"name\":\"j\",\"uid\":\"u-1\",\"controller\":true}]}}");
    struct mutate_result r;

    review_diag(&ds, pod, &r);
    ck_assert(!r.allowed);
    ck_assert_str_eq(r.message, "pod has no spec");
    ck_assert_int_eq(ds.calls, 0);
    ck_assert_uint_eq(r.warnings.n, 0);
    mutate_result_dispose(&r);
    json_decref(pod);
    json_decref(ds.fs.job);
}
END_TEST

static Suite *mutate_suite(void)
{
    Suite *s = suite_create("mutate");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, served_pod_gets_env_patch);
    tcase_add_test(tc, effective_set_implies_svc_and_ssh_d1);
    tcase_add_test(tc, job_memo_keeps_svc_env_per_version);
    tcase_add_test(tc, job_memo_leaves_long_tf_config_head);
    tcase_add_test(tc, not_served_d8);
    tcase_add_test(tc, job_not_found_allows_with_warning_d7);
    tcase_add_test(tc, lookup_failure_policy_d7);
    tcase_add_test(tc, namespace_not_served_allows_unpatched);
    tcase_add_test(tc, namespace_from_pod_when_request_has_none_d6);
    tcase_add_test(tc, uid_mismatch_is_not_our_job_d6);
    tcase_add_test(tc, owner_without_uid_not_looked_up_d6);
    tcase_add_test(tc, unknown_plugin_warns_and_others_run_d3);
    tcase_add_test(tc, plugin_error_denies_400_d7);
    tcase_add_test(tc, added_init_container_gets_every_plugin_d13);
    tcase_add_test(tc, chain_leaves_the_admitted_pod_as_it_was);
    tcase_add_test(tc, generate_name_pod_d14);
    tcase_add_test(tc, generate_name_index_from_annotation_warned_once_d6_d14);
    tcase_add_test(tc, job_name_with_a_dot_denied_d15);
    tcase_add_test(tc, hostname_over_63_denied_d15);
    tcase_add_test(tc, wait_for_master_name_taken_denied_d15);
    tcase_add_test(tc, tf_config_over_128k_denied_d15);
    tcase_add_test(tc, port_and_volume_names_denied_d15);
    tcase_add_test(tc, pod_invalid_already_is_served_d15);
    tcase_add_test(tc, huge_replicas_denied_not_exhausted);
    tcase_add_test(tc, cut_utf8_in_warning_stays_valid);
    tcase_add_test(tc, invalid_owner_name_not_looked_up);
    tcase_add_test(tc, invalid_namespace_not_looked_up);
    tcase_add_test(tc, plugin_out_of_memory_denies_500_named);
    tcase_add_test(tc, job_diagnostics_are_pod_warnings);
    tcase_add_test(tc, job_diagnostics_from_the_source);
    tcase_add_test(tc, job_without_diagnostics_is_asked_once);
    tcase_add_test(tc, job_diagnostics_told_by_the_chain_matched_by_key);
    tcase_add_test(tc, job_diagnostics_bounded);
    tcase_add_test(tc, job_diagnostics_not_on_denied_pod);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(mutate_suite());
}
