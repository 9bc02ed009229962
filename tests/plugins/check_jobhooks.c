/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_jobhooks.c - the job hooks of svc, ssh and ray (docs/plugins.md §4.2,
 * §4.3, §4.7, §5.2, D9-D12) and plugins/objects.c, against tests/apiserver.py
 * started as a child process on a free loopback port.
 *
 * For example-like Jobs: the exact stored bodies (server-filled metadata
 * dropped), idempotence (a second run writes nothing), the ConfigMap following
 * a scale-up while the ssh keys stay, re-creation of deleted objects, foreign
 * objects left alone (D12), deletes that remove exactly our objects, the svc
 * and ssh flags, conflicts and API errors.
 *
 * Runs from the repository root (TEST_APISERVER overrides tests/apiserver.py).
 */
/* The cases are JSON in adjacent string literals and macros, laid out by hand (one
 * container or field a line); clang-format would break them apart. */
/* clang-format off */
#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s/client.h"
#include "plugins/objects.h"
#include "plugins/plugin.h"
#include "plugins/sshkeys.h"
#include "tests/apitest.h"
#include "tests/testutil.h"

#define NS "ns1"
#define CM_PATH(name) "/api/v1/namespaces/" NS "/configmaps/" name
#define SVC_PATH(name) "/api/v1/namespaces/" NS "/services/" name
#define SEC_PATH(name) "/api/v1/namespaces/" NS "/secrets/" name
#define NP_PATH(name) "/apis/networking.k8s.io/v1/namespaces/" NS "/networkpolicies/" name

static char tmpdir[256];      /* per process: captured stderr */
static struct apitest api;    /* the test API server of the current TCase */

/* Per test (each runs in its own forked process). */
static struct k8s_client *kc;
static struct sshkeys_store *store;
static unsigned long foreign;

/* ---- the test API server ---- */

/* apiserver.py with token tok1. */
static void server_start(void)
{
    const struct apitest_opts o = {.token = "tok1"};

    apitest_start_opts(&api, &o);
}

static void server_stop(void)
{
    apitest_stop(&api);
}

/* A REST request as an outside user (with the token); HTTP status and body. */
static long ctl(const char *method, const char *path, const char *body, json_t **resp)
{
    return apitest_call(&api, method, path, body, true, resp);
}

/* The stored object at path (new reference), or NULL on 404. */
static json_t *api_get(const char *path)
{
    json_t *obj = NULL;
    long code = ctl("GET", path, NULL, &obj);

    if (code == 404) {
        json_decref(obj);
        return NULL;
    }
    ck_assert_msg(code == 200, "GET %s: HTTP %ld", path, code);
    return obj;
}

static const char *rv_of(const json_t *obj)
{
    const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"),
                                                       "resourceVersion"));

    ck_assert_ptr_nonnull(rv);
    return rv;
}

/* Assert the methods of the logged API requests since the last reset, joined by ' '. */
static void assert_methods(const char *want)
{
    json_t *log = apitest_requests(&api);
    json_t *r;
    size_t i;
    size_t off = 0;
    char buf[512] = "";

    json_array_foreach(log, i, r) {
        int n = snprintf(buf + off, sizeof(buf) - off, "%s%s", off > 0 ? " " : "",
                         json_string_value(json_object_get(r, "method")));

        ck_assert(n > 0 && (size_t)n < sizeof(buf) - off);
        off += (size_t)n;
    }
    json_decref(log);
    ck_assert_str_eq(buf, want);
}

/* Empty server, no faults, GC off (the tests prove the hooks' own deletes); fresh client. */
static void per_test_setup(void)
{
    apitest_reset(&api);
    apitest_gc(&api, false);
    kc = apitest_client(&api);
    store = sshkeys_create();
    ck_assert_ptr_nonnull(store);
    foreign = 0;
}

static void per_test_teardown(void)
{
    k8s_client_destroy(kc);
    kc = NULL;
    sshkeys_destroy(store);
    store = NULL;
}

/* ---- hooks, bodies ---- */

enum hook { ADD, UPDATE, DEL };

/* Run one job hook as the reconciler does; args = the plugin's argument array or NULL. */
static int run_hook(const struct plugin *p, enum hook which, const json_t *job,
                    const json_t *args, struct wh_error *err)
{
    struct plugin_job_env env = {5000, store, &foreign};
    struct plugin_ctx c = {.name = p->name, .job = job, .args = args, .kc = kc, .env = &env};
    int (*fn)(const struct plugin_ctx *, struct wh_error *) =
        which == ADD ? p->on_job_add : which == UPDATE ? p->on_job_update : p->on_job_delete;

    ck_assert(fn != NULL);
    wh_error_clear(err);
    return fn(&c, err);
}

/* Run a hook that must succeed. */
static void hook_ok(const struct plugin *p, enum hook which, const json_t *job, const char *args)
{
    struct wh_error err = {0};
    json_t *a = args != NULL ? tu_json(args) : NULL;
    int rc = run_hook(p, which, job, a, &err);

    ck_assert_msg(rc == 0, "%s hook %d: rc %d: %s", p->name, (int)which, rc, err.msg);
    json_decref(a);
}

/* obj without what the server fills in (uid, resourceVersion, creationTimestamp, generation). */
static json_t *stripped(const json_t *obj)
{
    json_t *copy = json_deep_copy(obj);
    json_t *meta = json_object_get(copy, "metadata");

    ck_assert_ptr_nonnull(copy);
    json_object_del(meta, "uid");
    json_object_del(meta, "resourceVersion");
    json_object_del(meta, "creationTimestamp");
    json_object_del(meta, "generation");
    return copy;
}

/* tmpl with every "@UID@" replaced by uid (malloc'd). */
static char *subst_uid(const char *tmpl, const char *uid)
{
    size_t cap = strlen(tmpl) * 2 + 64;
    char *out = malloc(cap);
    size_t o = 0;

    ck_assert_ptr_nonnull(out);
    for (const char *p = tmpl; *p != '\0';) {
        if (strncmp(p, "@UID@", 5) == 0) {
            ck_assert_uint_lt(o + strlen(uid), cap - 1);
            memcpy(out + o, uid, strlen(uid));
            o += strlen(uid);
            p += 5;
        } else {
            ck_assert_uint_lt(o, cap - 1);
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    return out;
}

/* The object at path, stripped, equals tmpl (with @UID@ = uid). */
static void assert_stored(const char *path, const char *tmpl, const char *uid)
{
    json_t *obj = api_get(path);
    json_t *s;
    char *want = subst_uid(tmpl, uid);

    ck_assert_msg(obj != NULL, "%s is missing", path);
    s = stripped(obj);
    tu_assert_json_eq(s, want);
    free(want);
    json_decref(s);
    json_decref(obj);
}

static void assert_absent(const char *path)
{
    json_t *obj = api_get(path);

    ck_assert_msg(obj == NULL, "%s still exists", path);
}

static const char *uid_of(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
}

static char *b64(const char *text)
{
    size_t n = strlen(text);
    char *out = malloc(4 * ((n + 2) / 3) + 1);

    ck_assert_ptr_nonnull(out);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)text, (int)n);
    return out;
}

/* data[key] of a Secret, decoded (malloc'd). */
static char *secret_value(const json_t *secret, const char *key)
{
    const char *in = json_string_value(json_object_get(json_object_get(secret, "data"), key));
    unsigned char *out;
    EVP_ENCODE_CTX *ctx = EVP_ENCODE_CTX_new();
    int n = 0;
    int tail = 0;

    ck_assert_msg(in != NULL, "secret has no data.%s", key);
    out = malloc(strlen(in) / 4 * 3 + 4);
    ck_assert_ptr_nonnull(out);
    EVP_DecodeInit(ctx);
    ck_assert_int_ge(EVP_DecodeUpdate(ctx, out, &n, (const unsigned char *)in, (int)strlen(in)),
                     0);
    ck_assert_int_eq(EVP_DecodeFinal(ctx, out + n, &tail), 1);
    EVP_ENCODE_CTX_free(ctx);
    out[n + tail] = '\0';
    return (char *)out;
}

/* The Job with tasks[k].replicas = replicas (new reference). */
static json_t *job_scaled(const json_t *job, size_t k, int replicas)
{
    json_t *j = json_deep_copy(job);
    json_t *task = json_array_get(json_object_get(json_object_get(j, "spec"), "tasks"), k);

    ck_assert_ptr_nonnull(task);
    ck_assert_int_eq(json_object_set_new(task, "replicas", json_integer(replicas)), 0);
    return j;
}

/* ---- example-like Jobs ---- */

/* examples/mpi-job.yaml: ssh and svc, mpimaster x1, mpiworker x2. */
#define MPI_JOB                                                                              \
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","                      \
    "\"metadata\":{\"name\":\"mpi-job\",\"namespace\":\"" NS "\"},"                          \
    "\"spec\":{\"minAvailable\":3,\"schedulerName\":\"volcano\",\"queue\":\"default\","      \
    "\"plugins\":{\"ssh\":[],\"svc\":[]},\"tasks\":["                                        \
    "{\"replicas\":1,\"name\":\"mpimaster\",\"template\":{\"spec\":{\"containers\":"         \
    "[{\"name\":\"mpimaster\",\"image\":\"lyd911/mindspore-gpu-example:0.2.0\"}]}}},"        \
    "{\"replicas\":2,\"name\":\"mpiworker\",\"template\":{\"spec\":{\"containers\":"         \
    "[{\"name\":\"mpiworker\",\"image\":\"lyd911/mindspore-gpu-example:0.2.0\"}]}}}]}}"

#define OWNER(J)                                                                             \
    "\"ownerReferences\":[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","  \
    "\"name\":\"" J "\",\"uid\":\"@UID@\",\"controller\":true,\"blockOwnerDeletion\":true}]"

#define MPI_CM_DATA_2                                                                        \
    "{\"mpimaster.host\":\"mpi-job-mpimaster-0.mpi-job\","                                   \
    "\"VC_MPIMASTER_HOSTS\":\"mpi-job-mpimaster-0.mpi-job\",\"VC_MPIMASTER_NUM\":\"1\","     \
    "\"mpiworker.host\":\"mpi-job-mpiworker-0.mpi-job\\nmpi-job-mpiworker-1.mpi-job\","      \
    "\"VC_MPIWORKER_HOSTS\":\"mpi-job-mpiworker-0.mpi-job,mpi-job-mpiworker-1.mpi-job\","    \
    "\"VC_MPIWORKER_NUM\":\"2\"}"

#define MPI_CM_DATA_3                                                                        \
    "{\"mpimaster.host\":\"mpi-job-mpimaster-0.mpi-job\","                                   \
    "\"VC_MPIMASTER_HOSTS\":\"mpi-job-mpimaster-0.mpi-job\",\"VC_MPIMASTER_NUM\":\"1\","     \
    "\"mpiworker.host\":\"mpi-job-mpiworker-0.mpi-job\\nmpi-job-mpiworker-1.mpi-job"         \
    "\\nmpi-job-mpiworker-2.mpi-job\","                                                      \
    "\"VC_MPIWORKER_HOSTS\":\"mpi-job-mpiworker-0.mpi-job,mpi-job-mpiworker-1.mpi-job,"      \
    "mpi-job-mpiworker-2.mpi-job\",\"VC_MPIWORKER_NUM\":\"3\"}"

#define MPI_CM(data)                                                                         \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"mpi-job-svc\","  \
    "\"namespace\":\"" NS "\"," OWNER("mpi-job") "},\"data\":" data "}"

#define MPI_SVC(publish)                                                                     \
    "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"mpi-job\","        \
    "\"namespace\":\"" NS "\"," OWNER("mpi-job") "},"                                        \
    "\"spec\":{\"clusterIP\":\"None\",\"selector\":{\"volcano.sh/job-name\":\"mpi-job\","    \
    "\"volcano.sh/job-namespace\":\"" NS "\"},\"publishNotReadyAddresses\":" publish "}}"

#define MPI_NP                                                                               \
    "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","                   \
    "\"metadata\":{\"name\":\"mpi-job\",\"namespace\":\"" NS "\"," OWNER("mpi-job") "},"     \
    "\"spec\":{\"podSelector\":{\"matchLabels\":{\"volcano.sh/job-name\":\"mpi-job\","       \
    "\"volcano.sh/job-namespace\":\"" NS "\"}},"                                             \
    "\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{"                            \
    "\"volcano.sh/job-name\":\"mpi-job\",\"volcano.sh/job-namespace\":\"" NS "\"}}}]}],"     \
    "\"policyTypes\":[\"Ingress\"]}}"

#define SSH_HEAD "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
#define SSH_HOST(h, d, port) "Host " h "\n  HostName " h "." d "\n  Port " port "\n"
#define MPI_SSH_CONFIG_2                                                                     \
    SSH_HEAD SSH_HOST("mpi-job-mpimaster-0", "mpi-job", "22")                                \
        SSH_HOST("mpi-job-mpiworker-0", "mpi-job", "22")                                     \
            SSH_HOST("mpi-job-mpiworker-1", "mpi-job", "22")
#define MPI_SSH_CONFIG_3 MPI_SSH_CONFIG_2 SSH_HOST("mpi-job-mpiworker-2", "mpi-job", "22")

/* examples/ray-cluster-job.yaml: ray and svc, head x1, worker x2. */
#define RAY_JOB                                                                              \
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","                      \
    "\"metadata\":{\"name\":\"ray-cluster-job\",\"namespace\":\"" NS "\"},"                  \
    "\"spec\":{\"minAvailable\":3,\"schedulerName\":\"volcano\",\"queue\":\"default\","      \
    "\"plugins\":{\"ray\":[],\"svc\":[]},\"tasks\":["                                        \
    "{\"replicas\":1,\"name\":\"head\",\"template\":{\"spec\":{\"containers\":"              \
    "[{\"name\":\"head\",\"image\":\"rayproject/ray:latest-py311-cpu\"}]}}},"                \
    "{\"replicas\":2,\"name\":\"worker\",\"template\":{\"spec\":{\"containers\":"            \
    "[{\"name\":\"worker\",\"image\":\"rayproject/ray:latest-py311-cpu\"}]}}}]}}"

#define RAY_HEAD_SVC(head, p1, p2, p3)                                                       \
    "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":"                    \
    "\"ray-cluster-job-head-svc\",\"namespace\":\"" NS "\"," OWNER("ray-cluster-job") "},"   \
    "\"spec\":{\"selector\":{\"volcano.sh/job-name\":\"ray-cluster-job\","                   \
    "\"volcano.sh/job-namespace\":\"" NS "\",\"volcano.sh/task-spec\":\"" head "\"},"        \
    "\"ports\":[{\"name\":\"gcs\",\"port\":" p1 ",\"targetPort\":\"gcs\",\"protocol\":\"TCP\"}," \
    "{\"name\":\"dashboard\",\"port\":" p2 ",\"targetPort\":\"dashboard\","                  \
    "\"protocol\":\"TCP\"},{\"name\":\"client-server\",\"port\":" p3 ","                     \
    "\"targetPort\":\"client-server\",\"protocol\":\"TCP\"}]}}"

/* Tasks with dashes, a template hostname/subdomain, and zero replicas. */
#define ODD_JOB                                                                              \
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","                      \
    "\"metadata\":{\"name\":\"odd\",\"namespace\":\"" NS "\"},"                              \
    "\"spec\":{\"plugins\":{\"ssh\":[\"--ssh-port=2222\"],\"svc\":[]},\"tasks\":["           \
    "{\"replicas\":2,\"name\":\"mpi-worker\",\"template\":{\"spec\":{}}},"                   \
    "{\"replicas\":3,\"name\":\"ps\",\"template\":{\"spec\":{\"hostname\":\"psh\","          \
    "\"subdomain\":\"sub\"}}},"                                                              \
    "{\"replicas\":0,\"name\":\"idle\",\"template\":{\"spec\":{}}},"                         \
    "{\"replicas\":1,\"name\":\"eval\",\"template\":{\"spec\":{\"subdomain\":\"evs\"}}}]}}"

/* ---- svc ---- */

START_TEST(test_svc_add_exact_and_idempotent)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    const char *uid = uid_of(job);
    json_t *cm;
    json_t *svc;
    json_t *np;

    hook_ok(&plugin_svc, ADD, job, "[]");
    assert_methods("GET POST GET POST GET POST");
    assert_stored(CM_PATH("mpi-job-svc"), MPI_CM(MPI_CM_DATA_2), uid);
    assert_stored(SVC_PATH("mpi-job"), MPI_SVC("false"), uid);
    assert_stored(NP_PATH("mpi-job"), MPI_NP, uid);

    /* a second add and an update write nothing: same resourceVersions, only GETs */
    cm = api_get(CM_PATH("mpi-job-svc"));
    svc = api_get(SVC_PATH("mpi-job"));
    np = api_get(NP_PATH("mpi-job"));
    apitest_clear_requests(&api);
    hook_ok(&plugin_svc, ADD, job, "[]");
    hook_ok(&plugin_svc, UPDATE, job, NULL);
    assert_methods("GET GET GET GET GET GET");
    {
        json_t *cm2 = api_get(CM_PATH("mpi-job-svc"));
        json_t *svc2 = api_get(SVC_PATH("mpi-job"));
        json_t *np2 = api_get(NP_PATH("mpi-job"));

        ck_assert_str_eq(rv_of(cm2), rv_of(cm));
        ck_assert_str_eq(rv_of(svc2), rv_of(svc));
        ck_assert_str_eq(rv_of(np2), rv_of(np));
        json_decref(cm2);
        json_decref(svc2);
        json_decref(np2);
    }
    ck_assert_uint_eq(foreign, 0);
    json_decref(cm);
    json_decref(svc);
    json_decref(np);
    json_decref(job);
}
END_TEST

START_TEST(test_svc_scale_up_and_repair)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    const char *uid = uid_of(job);
    json_t *job3 = job_scaled(job, 1, 3);
    json_t *svc;
    json_t *svc2;

    hook_ok(&plugin_svc, ADD, job, NULL);
    svc = api_get(SVC_PATH("mpi-job"));
    /* replicas 2 → 3: the host lists follow, the Service is not touched */
    hook_ok(&plugin_svc, UPDATE, job3, NULL);
    assert_stored(CM_PATH("mpi-job-svc"), MPI_CM(MPI_CM_DATA_3), uid);
    svc2 = api_get(SVC_PATH("mpi-job"));
    ck_assert_str_eq(rv_of(svc2), rv_of(svc));
    json_decref(svc2);

    /* someone deletes the Service, the NetworkPolicy and the ConfigMap: resync re-creates */
    ck_assert_int_eq(ctl("DELETE", SVC_PATH("mpi-job"), NULL, NULL), 200);
    ck_assert_int_eq(ctl("DELETE", NP_PATH("mpi-job"), NULL, NULL), 200);
    ck_assert_int_eq(ctl("DELETE", CM_PATH("mpi-job-svc"), NULL, NULL), 200);
    hook_ok(&plugin_svc, UPDATE, job3, NULL);
    assert_stored(CM_PATH("mpi-job-svc"), MPI_CM(MPI_CM_DATA_3), uid);
    assert_stored(SVC_PATH("mpi-job"), MPI_SVC("false"), uid);
    assert_stored(NP_PATH("mpi-job"), MPI_NP, uid);

    /* drifted data (someone edited the ConfigMap) is put back */
    {
        json_t *cm = api_get(CM_PATH("mpi-job-svc"));
        char *text;

        json_object_set_new(json_object_get(cm, "data"), "VC_MPIWORKER_NUM", json_string("9"));
        json_object_set_new(json_object_get(cm, "data"), "extra", json_string("x"));
        text = json_dumps(cm, JSON_COMPACT);
        ck_assert_int_eq(ctl("PUT", CM_PATH("mpi-job-svc"), text, NULL), 200);
        free(text);
        json_decref(cm);
    }
    hook_ok(&plugin_svc, UPDATE, job, NULL);   /* back to 2 replicas, too */
    assert_stored(CM_PATH("mpi-job-svc"), MPI_CM(MPI_CM_DATA_2), uid);
    json_decref(svc);
    json_decref(job3);
    json_decref(job);
}
END_TEST

START_TEST(test_svc_flags)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    const char *uid = uid_of(job);

    /* --disable-network-policy: none created; --publish-not-ready-addresses copied */
    hook_ok(&plugin_svc, ADD, job,
            "[\"--publish-not-ready-addresses\", \"--disable-network-policy=true\"]");
    assert_stored(SVC_PATH("mpi-job"), MPI_SVC("true"), uid);
    assert_absent(NP_PATH("mpi-job"));
    hook_ok(&plugin_svc, UPDATE, job, "[\"--disable-network-policy\"]");
    assert_absent(NP_PATH("mpi-job"));

    /* ... nor deleted: one made earlier without the flag survives a delete with it */
    hook_ok(&plugin_svc, UPDATE, job, "[]");
    assert_stored(NP_PATH("mpi-job"), MPI_NP, uid);
    hook_ok(&plugin_svc, DEL, job, "[\"--disable-network-policy\"]");
    assert_absent(CM_PATH("mpi-job-svc"));
    assert_absent(SVC_PATH("mpi-job"));
    assert_stored(NP_PATH("mpi-job"), MPI_NP, uid);

    /* a parse error: values set before it count, the rest are defaults */
    hook_ok(&plugin_svc, DEL, job, "[]");
    assert_absent(NP_PATH("mpi-job"));
    hook_ok(&plugin_svc, ADD, job, "[\"--publish-not-ready-addresses\", \"--bogus\", "
                                   "\"--disable-network-policy\"]");
    assert_stored(SVC_PATH("mpi-job"), MPI_SVC("true"), uid);
    assert_stored(NP_PATH("mpi-job"), MPI_NP, uid);
    json_decref(job);
}
END_TEST

START_TEST(test_svc_delete_exactly_ours)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    json_t *other;
    json_t *got;

    /* an unrelated ConfigMap, and our ssh Secret, in the same namespace */
    other = apitest_load(&api, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                               "\"mpi-job-other\",\"namespace\":\"" NS "\"},\"data\":{\"a\":\"b\"}}");
    hook_ok(&plugin_ssh, ADD, job, NULL);
    hook_ok(&plugin_svc, ADD, job, NULL);
    hook_ok(&plugin_svc, DEL, job, NULL);
    assert_absent(CM_PATH("mpi-job-svc"));
    assert_absent(SVC_PATH("mpi-job"));
    assert_absent(NP_PATH("mpi-job"));
    got = api_get(CM_PATH("mpi-job-other"));
    ck_assert(json_equal(got, other));
    json_decref(got);
    got = api_get(SEC_PATH("mpi-job-ssh"));
    ck_assert_ptr_nonnull(got);
    json_decref(got);

    /* again: everything is already gone (404s), still success, no DELETE sent */
    apitest_clear_requests(&api);
    hook_ok(&plugin_svc, DEL, job, NULL);
    assert_methods("GET GET GET");

    /* a DELETE that finds the object gone (404) counts as done */
    hook_ok(&plugin_svc, ADD, job, NULL);
    apitest_fault(&api, "{\"method\":\"DELETE\",\"path_regex\":\"/services/mpi-job(\\\\?|$)\","
                        "\"status\":404,\"reason\":\"NotFound\",\"message\":\"gone\","
                        "\"count\":1}");
    hook_ok(&plugin_svc, DEL, job, NULL);
    assert_absent(CM_PATH("mpi-job-svc"));
    assert_absent(NP_PATH("mpi-job"));
    ck_assert_uint_eq(foreign, 0);
    json_decref(other);
    json_decref(job);
}
END_TEST

/* D12: same-named objects of someone else are left alone, logged and counted. */
START_TEST(test_svc_foreign)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    const char *uid = uid_of(job);
    json_t *cm0 = apitest_load(&api, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                                     "{\"name\":\"mpi-job-svc\",\"namespace\":\"" NS "\"},"
                                     "\"data\":{\"mine\":\"yes\"}}");
    /* another Job owns the Service (a predecessor of the same name is not foreign:
     * plugins/objects.c waits for its garbage collection, tests/plugins/check_objects.c) */
    json_t *svc0 = apitest_load(&api, "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":"
                                      "{\"name\":\"mpi-job\",\"namespace\":\"" NS "\",\"ownerReferences\":"
                                      "[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                                      "\"name\":\"other-job\",\"uid\":\"0ld-uid\",\"controller\":true}]},"
                                      "\"spec\":{\"clusterIP\":\"10.0.0.7\"}}");
    json_t *got;
    struct tu_stderr c;
    char *log;
    char want[512];

    tu_stderr_begin(&c);
    hook_ok(&plugin_svc, ADD, job, NULL);
    log = tu_stderr_end(&c);
    snprintf(want, sizeof(want),
             "\"level\":\"warn\",\"msg\":\"reconcile: ConfigMap " NS "/mpi-job-svc exists and is not owned by job "
             NS "/mpi-job (uid %s), left alone\"}\n", uid);
    ck_assert_msg(strstr(log, want) != NULL, "log: %s", log);
    snprintf(want, sizeof(want),
             "\"level\":\"warn\",\"msg\":\"reconcile: Service " NS "/mpi-job exists and is not owned by job "
             NS "/mpi-job (uid %s), left alone\"}\n", uid);
    ck_assert_msg(strstr(log, want) != NULL, "log: %s", log);
    free(log);
    ck_assert_uint_eq(foreign, 2);
    got = api_get(CM_PATH("mpi-job-svc"));
    ck_assert(json_equal(got, cm0));
    json_decref(got);
    got = api_get(SVC_PATH("mpi-job"));
    ck_assert(json_equal(got, svc0));
    json_decref(got);
    assert_stored(NP_PATH("mpi-job"), MPI_NP, uid);   /* ours is still made */

    /* delete: ours goes, theirs stay */
    hook_ok(&plugin_svc, DEL, job, NULL);
    ck_assert_uint_eq(foreign, 4);
    assert_absent(NP_PATH("mpi-job"));
    got = api_get(CM_PATH("mpi-job-svc"));
    ck_assert(json_equal(got, cm0));
    json_decref(got);
    got = api_get(SVC_PATH("mpi-job"));
    ck_assert(json_equal(got, svc0));
    json_decref(got);
    json_decref(cm0);
    json_decref(svc0);
    json_decref(job);
}
END_TEST

START_TEST(test_svc_odd_tasks)
{
    json_t *job = apitest_load(&api, ODD_JOB);
    const char *uid = uid_of(job);

    hook_ok(&plugin_svc, ADD, job, NULL);
    assert_stored(CM_PATH("odd-svc"),
                  "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                  "\"odd-svc\",\"namespace\":\"" NS "\"," OWNER("odd") "},\"data\":{"
                  "\"mpi_worker.host\":\"odd-mpi-worker-0.odd\\nodd-mpi-worker-1.odd\","
                  "\"VC_MPI_WORKER_HOSTS\":\"odd-mpi-worker-0.odd,odd-mpi-worker-1.odd\","
                  "\"VC_MPI_WORKER_NUM\":\"2\","
                  "\"ps.host\":\"psh.sub\",\"VC_PS_HOSTS\":\"psh.sub\",\"VC_PS_NUM\":\"1\","
                  "\"idle.host\":\"\",\"VC_IDLE_HOSTS\":\"\",\"VC_IDLE_NUM\":\"0\","
                  "\"eval.host\":\"odd-eval-0.evs\",\"VC_EVAL_HOSTS\":\"odd-eval-0.evs\","
                  "\"VC_EVAL_NUM\":\"1\"}}",
                  uid);
    json_decref(job);
}
END_TEST

/* A host list no ConfigMap can hold: the hook says so and sends nothing (no half-made
 * objects); the reconciler retries it, in case the Job is scaled down. */
START_TEST(test_svc_host_list_too_large)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    json_t *huge = job_scaled(job, 1, 50000);   /* 50000 x "mpi-job-mpiworker-N.mpi-job" */
    struct wh_error err = {0};

    apitest_reset(&api);
    ck_assert_int_eq(run_hook(&plugin_svc, ADD, huge, NULL, &err), WH_ETOOBIG);
    ck_assert_str_eq(err.msg, "a task's host list is over 1048576 bytes, too large for ConfigMap "
                              "mpi-job-svc");
    assert_methods("");
    json_decref(huge);
    json_decref(job);
}
END_TEST

/* API failures end the hook with the cause; conflicts and create races are retried. */
START_TEST(test_svc_api_errors_and_conflicts)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    const char *uid = uid_of(job);
    json_t *job3 = job_scaled(job, 1, 3);
    struct wh_error err = {0};

    apitest_fault(&api, "{\"method\":\"POST\",\"path_regex\":\"/configmaps$\",\"status\":500,"
                        "\"reason\":\"InternalError\",\"message\":\"etcd is down\","
                        "\"count\":1}");
    ck_assert_int_eq(run_hook(&plugin_svc, ADD, job, NULL, &err), WH_EAPI);
    ck_assert_str_eq(err.msg, "create ConfigMap " NS "/mpi-job-svc: InternalError: etcd is down");
    assert_absent(SVC_PATH("mpi-job"));   /* the first error ends the hook */
    hook_ok(&plugin_svc, ADD, job, NULL);   /* the retry converges */
    assert_stored(CM_PATH("mpi-job-svc"), MPI_CM(MPI_CM_DATA_2), uid);

    /* one 409 Conflict on PUT: read again, reapply, succeed */
    apitest_fault(&api, "{\"method\":\"PUT\",\"path_regex\":\"/configmaps/mpi-job-svc$\","
                        "\"status\":409,\"reason\":\"Conflict\",\"message\":\"modified\","
                        "\"count\":1}");
    apitest_clear_requests(&api);
    hook_ok(&plugin_svc, UPDATE, job3, NULL);
    assert_methods("GET PUT GET PUT GET GET");
    assert_stored(CM_PATH("mpi-job-svc"), MPI_CM(MPI_CM_DATA_3), uid);

    /* Conflict every time: the first PUT and 3 retries, then the error */
    apitest_fault(&api, "{\"method\":\"PUT\",\"path_regex\":\"/configmaps/mpi-job-svc$\","
                        "\"status\":409,\"reason\":\"Conflict\",\"message\":\"modified\","
                        "\"count\":-1}");
    apitest_clear_requests(&api);
    ck_assert_int_eq(run_hook(&plugin_svc, UPDATE, job, NULL, &err), WH_ECONFLICT);
    ck_assert_str_eq(err.msg, "update ConfigMap " NS "/mpi-job-svc: Conflict: modified");
    assert_methods("GET PUT GET PUT GET PUT GET PUT");
    apitest_ctl_expect(&api, "DELETE", "/_test/faults", NULL, 200);

    /* create race: GET says 404, POST says AlreadyExists → GET again, update what is there */
    apitest_fault(&api, "{\"method\":\"GET\",\"path_regex\":\"/configmaps/mpi-job-svc$\","
                        "\"status\":404,\"reason\":\"NotFound\",\"message\":\"not yet\","
                        "\"count\":1}");
    apitest_clear_requests(&api);
    hook_ok(&plugin_svc, UPDATE, job, NULL);
    assert_methods("GET POST GET PUT GET GET");
    assert_stored(CM_PATH("mpi-job-svc"), MPI_CM(MPI_CM_DATA_2), uid);
    json_decref(job3);
    json_decref(job);
}
END_TEST

/* ---- ssh ---- */

/* The exact Secret for keys (priv, pub) and config text. */
static void assert_secret(const char *path, const char *name, const char *job_name_,
                          const char *uid, const char *priv, const char *pub,
                          const char *config)
{
    char *b_priv = b64(priv);
    char *b_pub = b64(pub);
    char *b_cfg = b64(config);
    json_t *want = json_pack("{s:s, s:s, s:{s:s, s:s, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]},"
                             " s:{s:s, s:s, s:s, s:s}}",
                             "apiVersion", "v1", "kind", "Secret", "metadata", "name", name,
                             "namespace", NS, "ownerReferences", "apiVersion",
                             "batch.volcano.sh/v1alpha1", "kind", "Job", "name", job_name_,
                             "uid", uid, "controller", 1, "blockOwnerDeletion", 1, "data",
                             "id_rsa", b_priv, "id_rsa.pub", b_pub, "authorized_keys", b_pub,
                             "config", b_cfg);
    json_t *obj = api_get(path);
    json_t *s;
    char *w;

    ck_assert_ptr_nonnull(want);
    ck_assert_msg(obj != NULL, "%s is missing", path);
    s = stripped(obj);
    w = json_dumps(want, JSON_COMPACT);
    tu_assert_json_eq(s, w);
    free(w);
    json_decref(s);
    json_decref(obj);
    json_decref(want);
    free(b_priv);
    free(b_pub);
    free(b_cfg);
}

START_TEST(test_ssh_add_exact_and_idempotent)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    const char *uid = uid_of(job);
    char *priv = NULL;
    char *pub = NULL;
    json_t *sec;
    json_t *sec2;

    hook_ok(&plugin_ssh, ADD, job, "[]");
    /* the pair was made for this uid and is what the Secret holds */
    ck_assert_int_eq(sshkeys_lookup(store, uid, &priv, &pub), 0);
    ck_assert_int_eq(strncmp(priv, "-----BEGIN RSA PRIVATE KEY-----\n", 32), 0);
    ck_assert_int_eq(strncmp(pub, "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ", 38), 0);
    assert_secret(SEC_PATH("mpi-job-ssh"), "mpi-job-ssh", "mpi-job", uid, priv, pub,
                  MPI_SSH_CONFIG_2);

    sec = api_get(SEC_PATH("mpi-job-ssh"));
    apitest_clear_requests(&api);
    hook_ok(&plugin_ssh, ADD, job, "[]");
    hook_ok(&plugin_ssh, UPDATE, job, NULL);
    assert_methods("GET GET");
    sec2 = api_get(SEC_PATH("mpi-job-ssh"));
    ck_assert(json_equal(sec2, sec));
    json_decref(sec2);
    json_decref(sec);
    free(priv);
    free(pub);
    json_decref(job);
}
END_TEST

START_TEST(test_ssh_scale_up_keeps_keys)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    const char *uid = uid_of(job);
    json_t *job3 = job_scaled(job, 1, 3);
    char *priv = NULL;
    char *pub = NULL;

    hook_ok(&plugin_ssh, ADD, job, NULL);
    ck_assert_int_eq(sshkeys_lookup(store, uid, &priv, &pub), 0);
    apitest_clear_requests(&api);
    hook_ok(&plugin_ssh, UPDATE, job3, NULL);
    assert_methods("GET PUT");
    /* keys unchanged, config has the third worker */
    assert_secret(SEC_PATH("mpi-job-ssh"), "mpi-job-ssh", "mpi-job", uid, priv, pub,
                  MPI_SSH_CONFIG_3);

    /* someone deletes the Secret: it comes back with the same keys (D11) */
    ck_assert_int_eq(ctl("DELETE", SEC_PATH("mpi-job-ssh"), NULL, NULL), 200);
    hook_ok(&plugin_ssh, UPDATE, job3, NULL);
    assert_secret(SEC_PATH("mpi-job-ssh"), "mpi-job-ssh", "mpi-job", uid, priv, pub,
                  MPI_SSH_CONFIG_3);
    free(priv);
    free(pub);
    json_decref(job3);
    json_decref(job);
}
END_TEST

/* D11: an existing Secret of the Job is adopted as is; only config is brought up to date. */
START_TEST(test_ssh_adopt)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    const char *uid = uid_of(job);
    char *text;
    char *priv = NULL;
    char *pub = NULL;
    json_t *sec;
    char *b_cfg = b64("stale config\n");

    {
        char tmpl[2048];

        snprintf(tmpl, sizeof(tmpl),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":"
                 "\"mpi-job-ssh\",\"namespace\":\"" NS "\"," OWNER("mpi-job") "},"
                 "\"type\":\"Opaque\",\"data\":{\"id_rsa\":\"UFJJVgo=\",\"id_rsa.pub\":"
                 "\"UFVCCg==\",\"authorized_keys\":\"QVVUSAo=\",\"config\":\"%s\"}}",
                 b_cfg);
        text = subst_uid(tmpl, uid);
    }
    json_decref(apitest_load(&api, text));
    free(text);
    hook_ok(&plugin_ssh, ADD, job, NULL);
    /* keys and everything else as they were, config replaced */
    sec = api_get(SEC_PATH("mpi-job-ssh"));
    {
        char *cfg = secret_value(sec, "config");

        ck_assert_str_eq(cfg, MPI_SSH_CONFIG_2);
        free(cfg);
    }
    {
        json_t *s = stripped(sec);
        char *b = b64(MPI_SSH_CONFIG_2);
        char tmpl[2048];
        char *want;

        snprintf(tmpl, sizeof(tmpl),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":"
                 "\"mpi-job-ssh\",\"namespace\":\"" NS "\"," OWNER("mpi-job") "},"
                 "\"type\":\"Opaque\",\"data\":{\"id_rsa\":\"UFJJVgo=\",\"id_rsa.pub\":"
                 "\"UFVCCg==\",\"authorized_keys\":\"QVVUSAo=\",\"config\":\"%s\"}}",
                 b);
        want = subst_uid(tmpl, uid);
        tu_assert_json_eq(s, want);
        free(want);
        free(b);
        json_decref(s);
    }
    json_decref(sec);
    /* no key was generated: the adopted pair is in the store */
    ck_assert_int_eq(sshkeys_lookup(store, uid, &priv, &pub), 0);
    ck_assert_str_eq(priv, "PRIV\n");
    ck_assert_str_eq(pub, "PUB\n");
    free(priv);
    free(pub);

    /* re-created after a deletion: with the adopted keys */
    ck_assert_int_eq(ctl("DELETE", SEC_PATH("mpi-job-ssh"), NULL, NULL), 200);
    hook_ok(&plugin_ssh, UPDATE, job, NULL);
    assert_secret(SEC_PATH("mpi-job-ssh"), "mpi-job-ssh", "mpi-job", uid, "PRIV\n", "PUB\n",
                  MPI_SSH_CONFIG_2);
    free(b_cfg);
    json_decref(job);
}
END_TEST

/* D18: an adopted Secret an older Volcano wrote without authorized_keys (and config) gets
 * them, authorized_keys from its own id_rsa.pub; the pair is kept as it is. */
START_TEST(test_ssh_adopt_completes_old_secret)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    const char *uid = uid_of(job);
    char *text;
    json_t *sec;

    text = subst_uid("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":"
                     "\"mpi-job-ssh\",\"namespace\":\"" NS "\"," OWNER("mpi-job") "},"
                     "\"type\":\"Opaque\",\"data\":{\"id_rsa\":\"UFJJVgo=\",\"id_rsa.pub\":"
                     "\"UFVCCg==\"}}",
                     uid);
    json_decref(apitest_load(&api, text));
    free(text);
    hook_ok(&plugin_ssh, ADD, job, NULL);
    sec = api_get(SEC_PATH("mpi-job-ssh"));
    {
        json_t *s = stripped(sec);
        char *b = b64(MPI_SSH_CONFIG_2);
        char tmpl[2048];
        char *want;

        snprintf(tmpl, sizeof(tmpl),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":"
                 "\"mpi-job-ssh\",\"namespace\":\"" NS "\"," OWNER("mpi-job") "},"
                 "\"type\":\"Opaque\",\"data\":{\"id_rsa\":\"UFJJVgo=\",\"id_rsa.pub\":"
                 "\"UFVCCg==\",\"authorized_keys\":\"UFVCCg==\",\"config\":\"%s\"}}",
                 b);
        want = subst_uid(tmpl, uid);
        tu_assert_json_eq(s, want);
        free(want);
        free(b);
        json_decref(s);
    }
    json_decref(sec);
    /* a second pass finds nothing to change: no update is sent */
    apitest_clear_requests(&api);
    hook_ok(&plugin_ssh, UPDATE, job, NULL);
    ck_assert_int_eq(apitest_count(&api, "PUT", SEC_PATH("mpi-job-ssh")), 0);
    ck_assert_int_eq(apitest_count(&api, "GET", SEC_PATH("mpi-job-ssh")), 1);
    json_decref(job);
}
END_TEST

START_TEST(test_ssh_user_keys_verbatim)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    const char *uid = uid_of(job);
    char *priv = NULL;
    char *pub = NULL;

    /* verbatim: the literal backslash-n stays, no newline is added */
    hook_ok(&plugin_ssh, ADD, job,
            "[\"--ssh-private-key\", \"-----BEGIN OPENSSH PRIVATE KEY-----\\\\nabc\", "
            "\"--ssh-public-key=ssh-ed25519 AAAAC3 user@host\"]");
    assert_secret(SEC_PATH("mpi-job-ssh"), "mpi-job-ssh", "mpi-job", uid,
                  "-----BEGIN OPENSSH PRIVATE KEY-----\\nabc", "ssh-ed25519 AAAAC3 user@host",
                  MPI_SSH_CONFIG_2);
    ck_assert_int_eq(sshkeys_lookup(store, uid, &priv, &pub), WH_ENOTFOUND);
    hook_ok(&plugin_ssh, DEL, job, NULL);

    /* a private key alone: empty id_rsa.pub and authorized_keys */
    hook_ok(&plugin_ssh, ADD, job, "[\"--ssh-private-key=K\"]");
    assert_secret(SEC_PATH("mpi-job-ssh"), "mpi-job-ssh", "mpi-job", uid, "K", "",
                  MPI_SSH_CONFIG_2);
    hook_ok(&plugin_ssh, DEL, job, NULL);

    /* a public key alone is ignored: keys are generated */
    hook_ok(&plugin_ssh, ADD, job, "[\"--ssh-public-key=ssh-rsa X\"]");
    ck_assert_int_eq(sshkeys_lookup(store, uid, &priv, &pub), 0);
    assert_secret(SEC_PATH("mpi-job-ssh"), "mpi-job-ssh", "mpi-job", uid, priv, pub,
                  MPI_SSH_CONFIG_2);
    free(priv);
    free(pub);
    json_decref(job);
}
END_TEST

START_TEST(test_ssh_port_and_hosts)
{
    json_t *job = apitest_load(&api, ODD_JOB);
    json_t *sec;
    char *cfg;
    static const char *const cases[][2] = {
        {"[\"--ssh-port=abc\"]", "22"},   /* parses to 0 (and an error) → 22 */
        {"[\"--ssh-port\", \"70000\"]", "22"},
        {"[\"--ssh-port=-5\"]", "22"},
        {"[\"--ssh-port=65535\"]", "65535"},
        {"[\"--ssh-port=0x50\"]", "80"},
        {"[]", "22"},
    };

    hook_ok(&plugin_ssh, ADD, job, "[\"--ssh-port=2222\"]");
    sec = api_get(SEC_PATH("odd-ssh"));
    cfg = secret_value(sec, "config");
    ck_assert_str_eq(cfg, SSH_HEAD SSH_HOST("odd-mpi-worker-0", "odd", "2222")
                              SSH_HOST("odd-mpi-worker-1", "odd", "2222")
                                  SSH_HOST("psh", "sub", "2222")
                                      SSH_HOST("odd-eval-0", "evs", "2222"));
    free(cfg);
    json_decref(sec);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[1024];

        snprintf(want, sizeof(want),
                 SSH_HEAD "Host odd-mpi-worker-0\n  HostName odd-mpi-worker-0.odd\n  Port %s\n"
                          "Host odd-mpi-worker-1\n  HostName odd-mpi-worker-1.odd\n  Port %s\n"
                          "Host psh\n  HostName psh.sub\n  Port %s\n"
                          "Host odd-eval-0\n  HostName odd-eval-0.evs\n  Port %s\n",
                 cases[i][1], cases[i][1], cases[i][1], cases[i][1]);
        hook_ok(&plugin_ssh, UPDATE, job, cases[i][0]);
        sec = api_get(SEC_PATH("odd-ssh"));
        cfg = secret_value(sec, "config");
        ck_assert_msg(strcmp(cfg, want) == 0, "%s: got\n%s", cases[i][0], cfg);
        free(cfg);
        json_decref(sec);
    }
    json_decref(job);
}
END_TEST

START_TEST(test_ssh_delete_and_foreign)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    const char *uid = uid_of(job);
    json_t *theirs;
    json_t *got;
    char *priv = NULL;
    char *pub = NULL;
    char *p2 = NULL;
    char *q2 = NULL;

    hook_ok(&plugin_ssh, ADD, job, NULL);
    ck_assert_int_eq(sshkeys_lookup(store, uid, &priv, &pub), 0);
    hook_ok(&plugin_ssh, DEL, job, NULL);
    assert_absent(SEC_PATH("mpi-job-ssh"));
    ck_assert_int_eq(sshkeys_lookup(store, uid, &p2, &q2), WH_ENOTFOUND);
    hook_ok(&plugin_ssh, DEL, job, NULL);   /* already gone: done */

    /* a Secret of that name that is not ours: untouched, and no key is made for it */
    theirs = apitest_load(&api, "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":"
                                "\"mpi-job-ssh\",\"namespace\":\"" NS "\",\"ownerReferences\":"
                                "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"x\","
                                "\"uid\":\"x-uid\"}]},\"data\":{\"id_rsa\":\"WA==\"}}");
    hook_ok(&plugin_ssh, ADD, job, NULL);
    ck_assert_uint_eq(foreign, 1);
    ck_assert_int_eq(sshkeys_lookup(store, uid, &p2, &q2), WH_ENOTFOUND);
    got = api_get(SEC_PATH("mpi-job-ssh"));
    ck_assert(json_equal(got, theirs));
    json_decref(got);
    hook_ok(&plugin_ssh, DEL, job, NULL);
    ck_assert_uint_eq(foreign, 2);
    got = api_get(SEC_PATH("mpi-job-ssh"));
    ck_assert(json_equal(got, theirs));
    json_decref(got);
    json_decref(theirs);
    free(priv);
    free(pub);
    json_decref(job);
}
END_TEST

START_TEST(test_ssh_api_error_message)
{
    json_t *job = apitest_load(&api, MPI_JOB);
    struct wh_error err = {0};

    apitest_fault(&api, "{\"method\":\"POST\",\"path_regex\":\"/secrets$\",\"status\":403,"
                        "\"reason\":\"Forbidden\",\"message\":\"no\",\"count\":1}");
    ck_assert_int_eq(run_hook(&plugin_ssh, ADD, job, NULL, &err), WH_EAPI);
    ck_assert_str_eq(err.msg, "create secret for job " NS "/mpi-job with ssh plugin failed for "
                              "create Secret " NS "/mpi-job-ssh: Forbidden: no");
    /* the key made for the failed create is kept and used by the retry */
    {
        char *priv = NULL;
        char *pub = NULL;
        json_t *sec;
        char *got;

        ck_assert_int_eq(sshkeys_lookup(store, uid_of(job), &priv, &pub), 0);
        hook_ok(&plugin_ssh, ADD, job, NULL);
        sec = api_get(SEC_PATH("mpi-job-ssh"));
        got = secret_value(sec, "id_rsa");
        ck_assert_str_eq(got, priv);
        free(got);
        json_decref(sec);
        free(priv);
        free(pub);
    }
    json_decref(job);
}
END_TEST

/* ---- ray ---- */

START_TEST(test_ray_head_service)
{
    json_t *job = apitest_load(&api, RAY_JOB);
    const char *uid = uid_of(job);
    json_t *svc;
    json_t *svc2;

    hook_ok(&plugin_ray, ADD, job, "[]");
    assert_stored(SVC_PATH("ray-cluster-job-head-svc"),
                  RAY_HEAD_SVC("head", "6379", "8265", "10001"), uid);
    svc = api_get(SVC_PATH("ray-cluster-job-head-svc"));
    apitest_clear_requests(&api);
    hook_ok(&plugin_ray, ADD, job, "[]");
    hook_ok(&plugin_ray, UPDATE, job, "[\"--port=1\"]");   /* never updated */
    assert_methods("GET GET");
    svc2 = api_get(SVC_PATH("ray-cluster-job-head-svc"));
    ck_assert(json_equal(svc2, svc));
    json_decref(svc2);
    json_decref(svc);

    /* deleted by someone: update re-creates it, with the flags of the day */
    ck_assert_int_eq(ctl("DELETE", SVC_PATH("ray-cluster-job-head-svc"), NULL, NULL), 200);
    hook_ok(&plugin_ray, UPDATE, job,
            "[\"--head=ray-head\", \"--port=6380\", \"--dashboardPort=0x2000\", "
            "\"--clientServerPort=10002\"]");
    assert_stored(SVC_PATH("ray-cluster-job-head-svc"),
                  RAY_HEAD_SVC("ray-head", "6380", "8192", "10002"), uid);

    /* delete removes it; again is fine */
    hook_ok(&plugin_ray, DEL, job, NULL);
    assert_absent(SVC_PATH("ray-cluster-job-head-svc"));
    hook_ok(&plugin_ray, DEL, job, NULL);
    ck_assert_uint_eq(foreign, 0);
    json_decref(job);
}
END_TEST

START_TEST(test_ray_foreign)
{
    json_t *job = apitest_load(&api, RAY_JOB);
    json_t *theirs = apitest_load(&api, "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":"
                                        "{\"name\":\"ray-cluster-job-head-svc\",\"namespace\":\"" NS "\"},"
                                        "\"spec\":{\"ports\":[{\"port\":1}]}}");
    json_t *got;

    hook_ok(&plugin_ray, ADD, job, NULL);
    hook_ok(&plugin_ray, DEL, job, NULL);
    ck_assert_uint_eq(foreign, 2);
    got = api_get(SVC_PATH("ray-cluster-job-head-svc"));
    ck_assert(json_equal(got, theirs));
    json_decref(got);
    json_decref(theirs);
    json_decref(job);
}
END_TEST

/* ---- the other plugins, plugins/objects helpers ---- */

START_TEST(test_no_hooks_without_objects)
{
    const struct plugin *none[] = {&plugin_env, &plugin_tensorflow, &plugin_mpi,
                                   &plugin_pytorch, &plugin_hcclrank};

    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        ck_assert(none[i]->on_job_add == NULL);
        ck_assert(none[i]->on_job_update == NULL);
        ck_assert(none[i]->on_job_delete == NULL);
    }
}
END_TEST

START_TEST(test_objects_helpers)
{
    json_t *job = tu_json("{\"metadata\":{\"name\":\"j\",\"namespace\":\"n\",\"uid\":\"u1\"}}");
    json_t *ref = objects_owner_ref(job);
    json_t *obj = objects_for_job(&objects_kind_networkpolicy, job, "j");
    json_t *o2 = objects_for_job(&objects_kind_secret, job, "j-ssh");

    tu_assert_json_eq(ref, "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                           "\"name\":\"j\",\"uid\":\"u1\",\"controller\":true,"
                           "\"blockOwnerDeletion\":true}");
    tu_assert_json_eq(obj, "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
                           "\"metadata\":{\"name\":\"j\",\"namespace\":\"n\",\"ownerReferences\":"
                           "[{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                           "\"name\":\"j\",\"uid\":\"u1\",\"controller\":true,"
                           "\"blockOwnerDeletion\":true}]}}");
    tu_assert_json_eq(json_object_get(o2, "apiVersion"), "\"v1\"");
    tu_assert_json_eq(json_object_get(o2, "kind"), "\"Secret\"");
    ck_assert(objects_owned_by(obj, "u1"));
    ck_assert(!objects_owned_by(obj, "u2"));
    ck_assert(!objects_owned_by(obj, ""));
    ck_assert(!objects_owned_by(job, "u1"));   /* no ownerReferences at all */
    {
        json_t *multi = tu_json("{\"metadata\":{\"ownerReferences\":[{\"uid\":7},"
                                "{\"kind\":\"X\"},{\"uid\":\"u1\"}]}}");

        ck_assert(objects_owned_by(multi, "u1"));   /* any entry, controller or not */
        json_decref(multi);
    }
    json_decref(ref);
    json_decref(obj);
    json_decref(o2);
    json_decref(job);
}
END_TEST

static Suite *jobhooks_suite(void)
{
    Suite *s = suite_create("plugin_jobhooks");
    TCase *unit = tcase_create("unit");
    TCase *svc = tcase_create("svc");
    TCase *ssh = tcase_create("ssh");
    TCase *ray = tcase_create("ray");

    tcase_add_test(unit, test_no_hooks_without_objects);
    tcase_add_test(unit, test_objects_helpers);
    suite_add_tcase(s, unit);

    tcase_add_unchecked_fixture(svc, server_start, server_stop);
    tcase_add_checked_fixture(svc, per_test_setup, per_test_teardown);
    tcase_set_timeout(svc, 60);
    tcase_add_test(svc, test_svc_add_exact_and_idempotent);
    tcase_add_test(svc, test_svc_scale_up_and_repair);
    tcase_add_test(svc, test_svc_flags);
    tcase_add_test(svc, test_svc_delete_exactly_ours);
    tcase_add_test(svc, test_svc_foreign);
    tcase_add_test(svc, test_svc_odd_tasks);
    tcase_add_test(svc, test_svc_host_list_too_large);
    tcase_add_test(svc, test_svc_api_errors_and_conflicts);
    suite_add_tcase(s, svc);

    tcase_add_unchecked_fixture(ssh, server_start, server_stop);
    tcase_add_checked_fixture(ssh, per_test_setup, per_test_teardown);
    tcase_set_timeout(ssh, 120);   /* RSA generation under sanitizers */
    tcase_add_test(ssh, test_ssh_add_exact_and_idempotent);
    tcase_add_test(ssh, test_ssh_scale_up_keeps_keys);
    tcase_add_test(ssh, test_ssh_adopt);
    tcase_add_test(ssh, test_ssh_adopt_completes_old_secret);
    tcase_add_test(ssh, test_ssh_user_keys_verbatim);
    tcase_add_test(ssh, test_ssh_port_and_hosts);
    tcase_add_test(ssh, test_ssh_delete_and_foreign);
    tcase_add_test(ssh, test_ssh_api_error_message);
    suite_add_tcase(s, ssh);

    tcase_add_unchecked_fixture(ray, server_start, server_stop);
    tcase_add_checked_fixture(ray, per_test_setup, per_test_teardown);
    tcase_set_timeout(ray, 60);
    tcase_add_test(ray, test_ray_head_service);
    tcase_add_test(ray, test_ray_foreign);
    suite_add_tcase(s, ray);
    return s;
}

int main(void)
{
    int rc;
    char cmd[300];

    curl_global_init(CURL_GLOBAL_DEFAULT);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_plugin_jobhooks_XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    rc = tu_run(jobhooks_suite());
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmpdir);
    curl_global_cleanup();
    return rc;
}
