/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_answer.c - the differential check of the AdmissionReview text writer:
 * admission_handle's answer, written as text with the patch from patch_diff_write,
 * against the answer the jansson path builds (tests/answer_oracle.h: mutate_review's
 * ops tree, json_dumps, a json_t answer). Byte for byte, and as parsed trees.
 *
 * Inputs: every pod of every example Job (examples/ and tests/fuzz/jobs/, as
 * Volcano's controller builds them: plugins/jobpods.h) in both AdmissionReview
 * versions; every seed review of the admission fuzzer (tests/fuzz/corpus/admission:
 * the hostile ones too); and pods with hostile strings (escapes, RFC 6901
 * characters, NULs, UTF-8, numbers) and denials.
 */
#include <check.h>
#include <glob.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "k8s/yaml.h"
#include "plugins/jobpods.h"
#include "tests/answer_oracle.h"
#include "tests/testutil.h"
#include "webhook/admission.h"

/* The Jobs, named after their files, in namespace "default", uid "uid-<name>" (as
 * tests/fuzz/gen.py names them, so the fuzz seeds' ownerReferences find them). */
static json_t *jobs;

static void load_jobs(void)
{
    static const char *const patterns[] = {"examples/*.yaml", "tests/fuzz/jobs/*.yaml"};

    jobs = json_array();
    ck_assert_ptr_nonnull(jobs);
    for (size_t p = 0; p < 2; p++) {
        glob_t g;

        ck_assert_int_eq(glob(patterns[p], 0, NULL, &g), 0);
        for (size_t i = 0; i < g.gl_pathc; i++) {
            const char *path = g.gl_pathv[i];
            const char *base = strrchr(path, '/') + 1;
            struct wh_error err = {0};
            json_t *job = NULL;
            json_t *md;
            char name[128];
            char uid[160];

            ck_assert_msg(yaml_load_file(path, &job, &err) == 0, "%s: %s", path, err.msg);
            snprintf(name, sizeof(name), "%.*s", (int)(strlen(base) - 5), base);
            snprintf(uid, sizeof(uid), "uid-%s", name);
            md = json_object_get(job, "metadata");
            ck_assert_ptr_nonnull(md);
            json_object_set_new(md, "name", json_string(name));
            json_object_set_new(md, "namespace", json_string("default"));
            json_object_set_new(md, "uid", json_string(uid));
            ck_assert_int_eq(jobpods_complete_job(job, "default"), 0);
            json_array_append_new(jobs, job);
        }
        globfree(&g);
    }
}

/* The Job named by the ownerReference; "lookup-error" fails as an API error would. */
static int jobs_get(void *userdata, const char *ns, const char *name, const char *uid,
                    json_t **job_out, struct wh_error *err)
{
    size_t i;
    json_t *job;

    (void)userdata;
    (void)ns;
    (void)uid;
    if (strcmp(name, "lookup-error") == 0)
        return wh_error_set(err, WH_EAPI, "injected lookup failure");
    json_array_foreach(jobs, i, job) {
        if (strcmp(json_string_value(json_object_get(json_object_get(job, "metadata"), "name")),
                   name)
            == 0) {
            *job_out = json_incref(job);
            return 0;
        }
    }
    return wh_error_set(err, WH_ENOTFOUND, "jobs.batch.volcano.sh \"%s\" not found", name);
}

static const struct jobsource src = {.get = jobs_get};

struct tally {
    int answered; /* 200 answers compared */
    int patched;  /* of which with a patch */
    int denied;   /* of which allowed false */
};

/* admission_handle on body; a 200 answer must be the oracle's. */
static void check_body(const char *body, size_t len, const char *name, struct tally *t)
{
    struct mutate_options opt = {.lookup_failure = LOOKUP_FAILURE_DENY};
    static char why[4000];
    char *out = NULL;
    size_t out_len = 0;
    int status = admission_handle(body, len, &src, &opt, &out, &out_len);

    ck_assert_ptr_nonnull(out);
    if (status == 200) {
        ck_assert_msg(oracle_compare(body, len, &src, &opt, out, out_len, why, sizeof(why)) == 0,
                      "%s: %s", name, why);
        t->answered++;
        t->patched += strstr(out, "\"patchType\":\"JSONPatch\"") != NULL;
        t->denied += strstr(out, "\"allowed\":false") != NULL;
    }
    free(out);
}

/* The AdmissionReview (version api) of a CREATE of pod in namespace default. */
static char *review_of(const json_t *pod, const char *api, const char *uid)
{
    json_t *r = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, "
                          "s:O}}",
                          "apiVersion", api, "kind", "AdmissionReview", "request", "uid", uid,
                          "kind", "group", "", "version", "v1", "kind", "Pod", "resource", "group",
                          "", "version", "v1", "resource", "pods", "namespace", "default",
                          "operation", "CREATE", "object", pod);
    char *s;

    ck_assert_ptr_nonnull(r);
    s = json_dumps(r, JSON_COMPACT);
    ck_assert_ptr_nonnull(s);
    json_decref(r);
    return s;
}

/* Every pod (up to 4 per task) of every Job, in both versions. */
START_TEST(test_example_pods)
{
    struct tally t = {0};
    size_t j;
    json_t *job;

    json_array_foreach(jobs, j, job) {
        const json_t *tasks = json_object_get(json_object_get(job, "spec"), "tasks");
        size_t k;
        json_t *task;

        json_array_foreach(tasks, k, task) {
            json_int_t replicas = json_integer_value(json_object_get(task, "replicas"));

            for (json_int_t i = 0; i < (replicas < 4 ? replicas : 4); i++) {
                json_t *pod = jobpods_build(job, task, i);
                char *v1;
                char *v1beta1;

                ck_assert_ptr_nonnull(pod);
                v1 = review_of(pod, "admission.k8s.io/v1", "uid-a");
                v1beta1 = review_of(pod, "admission.k8s.io/v1beta1", "uid-\"b\\\u00e9");
                check_body(v1, strlen(v1), v1, &t);
                check_body(v1beta1, strlen(v1beta1), v1beta1, &t);
                free(v1);
                free(v1beta1);
                json_decref(pod);
            }
        }
    }
    /* 44 pods; denied: bad-args (a plugin's bad arguments) and ray-no-head (D7) */
    ck_assert_int_eq(t.answered, 88);
    ck_assert_int_eq(t.patched, 80);
    ck_assert_int_eq(t.denied, 8);
}
END_TEST

/* The admission fuzzer's seeds: example pods, hostile and malformed reviews. */
START_TEST(test_fuzz_seeds)
{
    struct tally t = {0};
    glob_t g;

    ck_assert_int_eq(glob("tests/fuzz/corpus/admission/*", 0, NULL, &g), 0);
    ck_assert_uint_eq(g.gl_pathc, 50);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char *body = tu_read_file(g.gl_pathv[i]);

        check_body(body, strlen(body), g.gl_pathv[i], &t);
        free(body);
    }
    globfree(&g);
    /* 2 are not JSON or not a review (400); lookup-error is denied 500; conflicts-master
     * and conflicts-worker mount a Secret of their own under the ssh plugin's volume name
     * (D5: denied 400) */
    ck_assert_int_eq(t.answered, 48);
    ck_assert_int_eq(t.patched, 36);
    ck_assert_int_eq(t.denied, 7);
}
END_TEST

/*
 * Pods of the all-plugins Job with hostile strings where the plugins copy or keep
 * them: label and annotation keys with RFC 6901 characters, quotes, backslashes and
 * control characters, NULs, UTF-8, numbers of every kind; a pod without spec (a
 * denial) and one naming an unknown task.
 */
static const char *const hostile[] = {
    "{\"metadata\":{\"labels\":{\"a~b/c\":\"\\\"q\\\\\\u0001\\n\",\"\":\"\\u0000\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\\u00e9\\u2028\","
    "\"env\":[{\"name\":\"X\",\"value\":\"\\ud83d\\ude00\\t/~\"}]}]}}",
    "{\"metadata\":{\"annotations\":{\"x/\\\"y\":\"1\"}},\"spec\":{\"containers\":["
    "{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":1.5e3,\"n\":-9223372036854775808}},"
    "\"ports\":[{\"containerPort\":0.0}]},{\"name\":\"d~1\",\"args\":[\"\\u001f\",\"\"]}]}}",
    "{\"metadata\":{},\"spec\":{\"hostname\":\"\\u0000\",\"containers\":[{\"name\":\"c\","
    "\"env\":[{\"name\":\"OMPI_MCA_orte_default_hostfile\",\"value\":\"x\"}],"
    "\"volumeMounts\":[{\"name\":\"v\",\"mountPath\":\"/root/.ssh\"}]}]}}",
    "{\"metadata\":{}}",
    "{\"metadata\":{\"annotations\":{\"volcano.sh/task-spec\":\"no-such-task\"}},"
    "\"spec\":{\"containers\":[]}}",
    /* the plugins' volume names taken: a projected volume (its kind named in the denial),
     * and the plugin's own ConfigMap with more fields (replaced whole) */
    "{\"metadata\":{},\"spec\":{\"volumes\":[{\"name\":\"all-plugins-ssh\",\"projected\":"
    "{\"sources\":[{\"configMap\":{\"name\":\"x\"}}]}}],\"containers\":[{\"name\":\"c\"}]}}",
    "{\"metadata\":{},\"spec\":{\"volumes\":[{\"name\":\"all-plugins-svc\",\"configMap\":"
    "{\"name\":\"all-plugins-svc\",\"defaultMode\":256},\"emptyDir\":{}}],"
    "\"containers\":[{\"name\":\"c\"}]}}",
    /* hcclrank's annotation set already, beside labels and annotations no one reads */
    "{\"metadata\":{\"labels\":{\"app\":\"a\",\"volcano.sh/task-index\":\"0\"},"
    "\"annotations\":{\"x\":\"1\",\"hccl/rankIndex\":\"7\",\"volcano.sh/task-index\":\"0\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
};

START_TEST(test_hostile_pods)
{
    struct tally t = {0};
    char *body;

    for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
        static const char *const tasks[] = {"master", "worker"};

        for (size_t k = 0; k < 2; k++) {
            json_t *pod = json_loads(hostile[i], JSON_ALLOW_NUL, NULL);
            json_t *md = json_object_get(pod, "metadata");
            json_t *ann = json_object_get(md, "annotations");
            char name[64];

            ck_assert_ptr_nonnull(pod);
            snprintf(name, sizeof(name), "all-plugins-%s-0", tasks[k]);
            json_object_set_new(md, "name", json_string(name));
            json_object_set_new(md, "ownerReferences",
                                json_pack("[{s:s, s:s, s:s, s:s, s:b}]", "apiVersion",
                                          "batch.volcano.sh/v1alpha1", "kind", "Job", "name",
                                          "all-plugins", "uid", "uid-all-plugins", "controller",
                                          1));
            if (ann == NULL) {
                ann = json_object();
                json_object_set_new(md, "annotations", ann);
            }
            if (json_object_get(ann, "volcano.sh/task-spec") == NULL)
                json_object_set_new(ann, "volcano.sh/task-spec", json_string(tasks[k]));
            body = review_of(pod, k == 0 ? "admission.k8s.io/v1" : "admission.k8s.io/v1beta1",
                             "h\x01\x1f\x7f\"\\/~\xc3\xa9");
            check_body(body, strlen(body), body, &t);
            free(body);
            json_decref(pod);
        }
    }
    /* a NUL in request.uid: refused with 400 (the answer, which echoes it, could not),
     * so not among the answers compared */
    body = review_of(json_object_get(json_array_get(jobs, 0), "spec"), "admission.k8s.io/v1",
                     "NUL_HERE");
    ck_assert_ptr_nonnull(strstr(body, "NUL_HERE"));
    memcpy(strstr(body, "NUL_HERE"), "a\\u0000b", 8);
    check_body(body, strlen(body), body, &t);
    free(body);
    /* denied in both versions: the pod without spec, the one whose own volume "v" is
     * mounted at /root/.ssh (D5) and the one whose projected volume has ssh's name */
    ck_assert_int_eq(t.answered, 16);
    ck_assert_int_eq(t.patched, 10);
    ck_assert_int_eq(t.denied, 6);
}
END_TEST

static void setup(void)
{
    log_set_level(LOG_LEVEL_ERROR);
    load_jobs();
}

static void teardown(void)
{
    json_decref(jobs);
    jobs = NULL;
}

static Suite *answer_suite(void)
{
    Suite *s = suite_create("answer");
    TCase *tc = tcase_create("differential");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_example_pods);
    tcase_add_test(tc, test_fuzz_seeds);
    tcase_add_test(tc, test_hostile_pods);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(answer_suite());
}
