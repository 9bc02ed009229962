/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_k8s_client.c - k8s/config.c and k8s/client.c: kubeconfig and
 * in-cluster config, then real requests (GET, create/update/patch/delete, paged
 * lists, Retry-After retries, the rate limiter) against tests/apiserver.py started as a
 * child process on a free loopback port, over HTTP and HTTPS (a throwaway CA
 * and serving certificate made with the openssl CLI).
 *
 * Runs from the repository root (TEST_APISERVER overrides tests/apiserver.py).
 */
/* The cases are JSON in adjacent string literals and macros, laid out by hand (one
 * container or field a line); clang-format would break them apart. */
/* clang-format off */
#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "k8s/client.h"
#include "k8s/client_internal.h"
#include "tests/apitest.h"
#include "tests/testutil.h"

#define JOBS "/apis/batch.volcano.sh/v1alpha1/namespaces/ns1/jobs"

static char tmpdir[256];     /* per process: certs, kubeconfigs */
static struct apitest api;   /* the test API server of the current TCase */
static char ca_crt[512];     /* tmpdir/ca.crt, srv.crt, srv.key: borrowed by api */
static char srv_crt[512];
static char srv_key[512];

/* ---- helpers ---- */

static void tpath(char *buf, size_t len, const char *rel)
{
    snprintf(buf, len, "%s/%s", tmpdir, rel);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static char *b64(const char *text)
{
    size_t n = strlen(text);
    char *out = malloc(4 * ((n + 2) / 3) + 1);

    ck_assert_ptr_nonnull(out);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)text, (int)n);
    return out;
}

/*
 * Once per process, from main (outside any test, so no ck_assert): a temp dir,
 * a CA, a serving cert for 127.0.0.1 signed by it, and an unrelated CA.
 * @return 0, or -1 after printing why.
 */
static int make_tmpdir_and_certs(void)
{
    char cmd[2048];

    snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_k8s_client_XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    snprintf(cmd, sizeof(cmd),
             "cd %s && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout ca.key -out ca.crt -days 2 -subj /CN=test-ca 2>/dev/null && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout srv.key -out srv.csr -subj /CN=apiserver 2>/dev/null && "
             "openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
             "-out srv.crt -days 2 -extfile san.ext 2>/dev/null && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout other.key -out other.crt -days 2 -subj /CN=other-ca 2>/dev/null",
             tmpdir);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot make test certificates: %s\n", cmd);
        return -1;
    }
    return 0;
}

static void remove_tmpdir(void)
{
    char cmd[512];

    if (tmpdir[0] == '\0')
        return;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmpdir);
    tmpdir[0] = '\0';
}

/* apiserver.py with token tok1, over HTTPS (srv.crt, signed by ca.crt) when tls. */
static void server_start(bool tls)
{
    struct apitest_opts o = {.token = "tok1", .timeout_ms = 60000};

    if (tls) {
        tpath(ca_crt, sizeof(ca_crt), "ca.crt");
        tpath(srv_crt, sizeof(srv_crt), "srv.crt");
        tpath(srv_key, sizeof(srv_key), "srv.key");
        o.tls_cert = srv_crt;
        o.tls_key = srv_key;
        o.ca_file = ca_crt;
    }
    apitest_start_opts(&api, &o);
}

static void server_stop(void)
{
    apitest_stop(&api);
}

static void http_setup(void)
{
    server_start(false);
}

static void https_setup(void)
{
    server_start(true);
}

/* Reset the server's faults, request log and objects; create Job ns1/j1; new ref to it. */
static json_t *reset_and_create_job(void)
{
    apitest_reset(&api);
    return apitest_load(&api, "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
                              "\"metadata\":{\"name\":\"j1\",\"namespace\":\"ns1\"},"
                              "\"spec\":{\"minAvailable\":2,\"plugins\":{\"ssh\":[]}}}");
}

/* A client for the running server with token file tok (contents "tok1"). */
static struct k8s_client *client_for_server(bool with_ca_file)
{
    struct k8s_config cfg = {0};
    struct wh_error err = {0};
    struct k8s_client *c;
    char server[128];
    char tok[512];
    char ca[512];

    tpath(tok, sizeof(tok), "token");
    tpath(ca, sizeof(ca), "ca.crt");
    write_file(tok, "tok1\n");
    cfg.server = (char *)apitest_url(&api, server, sizeof(server));
    cfg.token_file = tok;
    cfg.ca_file = with_ca_file ? ca : NULL;
    c = k8s_client_create(&cfg, &err);
    ck_assert_msg(c != NULL, "%s", err.msg);
    return c;
}

/* The n-th logged request (borrowed from *log, the whole log, which the caller decrefs). */
static json_t *logged_request(json_t **log, size_t n)
{
    *log = apitest_requests(&api);
    return json_array_get(*log, n);
}

/* ---- kubeconfig ---- */

START_TEST(test_kubeconfig_data_fields)
{
    char kc[512];
    char text[16384];
    char *ca;
    char *crt;
    char *key;
    char *b_ca;
    char *b_crt;
    char *b_key;
    struct k8s_config cfg;
    struct wh_error err = {0};

    tpath(kc, sizeof(kc), "ca.crt");
    ca = tu_read_file(kc);
    tpath(kc, sizeof(kc), "srv.crt");
    crt = tu_read_file(kc);
    tpath(kc, sizeof(kc), "srv.key");
    key = tu_read_file(kc);
    b_ca = b64(ca);
    b_crt = b64(crt);
    b_key = b64(key);
    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: Config\ncurrent-context: prod\n"
             "contexts:\n"
             "- name: dev\n  context: {cluster: devc, user: devu}\n"
             "- name: prod\n  context:\n    cluster: prodc\n    user: produ\n    namespace: x\n"
             "clusters:\n"
             "- name: devc\n  cluster: {server: 'https://dev:1'}\n"
             "- name: prodc\n  cluster:\n    server: https://10.1.2.3:6443/\n"
             "    certificate-authority: /ignored/because/data/wins\n"
             "    certificate-authority-data: %s\n"
             "users:\n"
             "- name: devu\n  user: {token: devtoken}\n"
             "- name: produ\n  user:\n    client-certificate-data: %s\n"
             "    client-key-data: %s\n    token: prodtoken\n",
             b_ca, b_crt, b_key);
    tpath(kc, sizeof(kc), "kc-data.yaml");
    write_file(kc, text);
    ck_assert_int_eq(k8s_config_load(&cfg, kc, &err), 0);
    ck_assert_str_eq(cfg.server, "https://10.1.2.3:6443");
    ck_assert_str_eq(cfg.ca_data, ca);
    ck_assert_ptr_null(cfg.ca_file);
    ck_assert_str_eq(cfg.cert_data, crt);
    ck_assert_str_eq(cfg.key_data, key);
    ck_assert_ptr_null(cfg.cert_file);
    ck_assert_ptr_null(cfg.key_file);
    ck_assert_str_eq(cfg.token, "prodtoken");
    ck_assert_ptr_null(cfg.token_file);
    ck_assert(!cfg.insecure);
    k8s_config_dispose(&cfg);
    k8s_config_dispose(&cfg); /* twice is safe */
    free(ca);
    free(crt);
    free(key);
    free(b_ca);
    free(b_crt);
    free(b_key);
}
END_TEST

START_TEST(test_kubeconfig_files_relative)
{
    char dir[512];
    char kc[512];
    char want[1024];
    struct k8s_config cfg;
    struct wh_error err = {0};

    tpath(dir, sizeof(dir), "sub");
    mkdir(dir, 0700);
    tpath(kc, sizeof(kc), "sub/config");
    write_file(kc, "current-context: c\n"
                   "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                   "clusters:\n- name: k\n  cluster:\n    server: http://127.0.0.1:8080\n"
                   "    certificate-authority: ca.crt\n    insecure-skip-tls-verify: true\n"
                   "users:\n- name: u\n  user:\n    client-certificate: ../client.crt\n"
                   "    client-key: /abs/client.key\n    tokenFile: tok\n");
    ck_assert_int_eq(k8s_config_load(&cfg, kc, &err), 0);
    ck_assert_str_eq(cfg.server, "http://127.0.0.1:8080");
    snprintf(want, sizeof(want), "%s/sub/ca.crt", tmpdir);
    ck_assert_str_eq(cfg.ca_file, want);
    snprintf(want, sizeof(want), "%s/sub/../client.crt", tmpdir);
    ck_assert_str_eq(cfg.cert_file, want);
    ck_assert_str_eq(cfg.key_file, "/abs/client.key");
    snprintf(want, sizeof(want), "%s/sub/tok", tmpdir);
    ck_assert_str_eq(cfg.token_file, want);
    ck_assert_ptr_null(cfg.token);
    ck_assert_ptr_null(cfg.ca_data);
    ck_assert(cfg.insecure);
    k8s_config_dispose(&cfg);

    /* $KUBECONFIG when no path is given: the first entry of the list */
    setenv("KUBECONFIG", kc, 1);
    {
        char list[1100];

        snprintf(list, sizeof(list), "%s:/nonexistent", kc);
        setenv("KUBECONFIG", list, 1);
    }
    ck_assert_int_eq(k8s_config_load(&cfg, NULL, &err), 0);
    ck_assert_str_eq(cfg.server, "http://127.0.0.1:8080");
    k8s_config_dispose(&cfg);
    unsetenv("KUBECONFIG");
}
END_TEST

struct bad_kc {
    const char *text;
    const char *msg;   /* after "kubeconfig <path>: " */
};

static const struct bad_kc bad_kcs[] = {
    {"contexts: []\n", "current-context is not set"},
    {"current-context: nope\ncontexts: [{name: c, context: {cluster: k}}]\n",
     "context \"nope\" not found"},
    {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\nclusters: []\n",
     "cluster \"k\" not found"},
    {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
     "clusters: [{name: k, cluster: {}}]\n",
     "cluster \"k\" has no server"},
    {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
     "clusters: [{name: k, cluster: {server: 'ftp://x'}}]\n",
     "cluster \"k\": server \"ftp://x\" is not an http(s) URL"},
    /* found by fuzz_kubeconfig: "https://" became "https:" once its slash was dropped */
    {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
     "clusters: [{name: k, cluster: {server: 'https://'}}]\n",
     "cluster \"k\": server \"https://\" names no host"},
    {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
     "clusters: [{name: k, cluster: {server: 'http:///api'}}]\n",
     "cluster \"k\": server \"http:///api\" names no host"},
    {"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
     "clusters: [{name: k, cluster: {server: 'https://x'}}]\n",
     "user \"u\" not found"},
    {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
     "clusters: [{name: k, cluster: {server: 'https://x', certificate-authority-data: '@@@@'}}]\n",
     "certificate-authority-data is not valid base64"},
    {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
     "clusters: [{name: k, cluster: {server: 'https://x', certificate-authority-data: aGVsbG8=}}]\n",
     "certificate-authority-data does not hold PEM text"},
    {"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
     "clusters: [{name: k, cluster: {server: 'https://x'}}]\n"
     "users: [{name: u, user: {exec: {command: aws}}}]\n",
     "user \"u\": exec and auth-provider are not supported"},
    {"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
     "clusters: [{name: k, cluster: {server: 'https://x'}}]\n"
     "users: [{name: u, user: {client-certificate: c.crt}}]\n",
     "user \"u\": client certificate and key go together"},
    {"a: b: c\n", "line 1 column 5: mapping values are not allowed in this context"},
    {"- a\n", "not a mapping"},
};

START_TEST(test_kubeconfig_errors)
{
    char kc[512];
    char want[1024];
    struct k8s_config cfg;
    struct wh_error err = {0};
    size_t i;

    tpath(kc, sizeof(kc), "bad.yaml");
    for (i = 0; i < sizeof(bad_kcs) / sizeof(bad_kcs[0]); i++) {
        write_file(kc, bad_kcs[i].text);
        ck_assert_int_eq(k8s_config_load(&cfg, kc, &err), WH_EINVAL);
        snprintf(want, sizeof(want), "kubeconfig %s: %s", kc, bad_kcs[i].msg);
        ck_assert_str_eq(err.msg, want);
        ck_assert_ptr_null(cfg.server);
    }
    ck_assert_int_eq(k8s_config_load(&cfg, "/nonexistent/kubeconfig", &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "kubeconfig /nonexistent/kubeconfig: No such file or directory");
}
END_TEST

START_TEST(test_in_cluster)
{
    char sa[512];
    char p[600];
    char want[700];
    struct k8s_config cfg;
    struct wh_error err = {0};

    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    ck_assert_int_eq(k8s_config_load(&cfg, NULL, &err), WH_ENOTFOUND);

    tpath(sa, sizeof(sa), "sa");
    mkdir(sa, 0700);
    setenv("WEBHOOK_SERVICEACCOUNT_DIR", sa, 1);
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    ck_assert_int_eq(k8s_config_load(&cfg, NULL, &err), WH_EINVAL);
    snprintf(want, sizeof(want), "in-cluster: cannot read %s/token: No such file or directory", sa);
    ck_assert_str_eq(err.msg, want);

    snprintf(p, sizeof(p), "%s/token", sa);
    write_file(p, "satoken\n");
    ck_assert_int_eq(k8s_config_load(&cfg, NULL, &err), 0);
    ck_assert_str_eq(cfg.server, "https://10.96.0.1:443");
    ck_assert_str_eq(cfg.token_file, p);
    ck_assert_ptr_null(cfg.ca_file); /* no ca.crt yet */
    ck_assert_ptr_null(cfg.token);
    k8s_config_dispose(&cfg);

    snprintf(p, sizeof(p), "%s/ca.crt", sa);
    write_file(p, "-----BEGIN CERTIFICATE-----\n");
    setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
    ck_assert_int_eq(k8s_config_load(&cfg, NULL, &err), 0);
    ck_assert_str_eq(cfg.server, "https://[fd00:10:96::1]:443");
    ck_assert_str_eq(cfg.ca_file, p);
    k8s_config_dispose(&cfg);

    unsetenv("WEBHOOK_SERVICEACCOUNT_DIR");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}
END_TEST

/* ---- requests over HTTP ---- */

/* Per test of the "http" TCase (checked fixture): Job ns1/j1 as stored, and a client. */
static json_t *job;
static struct k8s_client *kc;

static void http_test_setup(void)
{
    job = reset_and_create_job();
    kc = client_for_server(false);
}

static void http_test_teardown(void)
{
    k8s_client_destroy(kc);
    kc = NULL;
    json_decref(job);
    job = NULL;
}

START_TEST(test_get_job_200)
{
    struct wh_error err = {0};
    json_t *got = NULL;
    json_t *log = NULL;
    json_t *req;

    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), 0);
    ck_assert(json_equal(got, job));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "metadata"), "uid")),
                     json_string_value(json_object_get(json_object_get(job, "metadata"), "uid")));
    json_decref(got);
    /* the same thread's handle again (connection reuse), via k8s_get */
    ck_assert_int_eq(k8s_get(kc, JOBS "/j1", 5000, &got, &err), 0);
    ck_assert(json_equal(got, job));
    json_decref(got);

    req = logged_request(&log, 0);
    ck_assert_str_eq(json_string_value(json_object_get(req, "method")), "GET");
    ck_assert_str_eq(json_string_value(json_object_get(req, "path")), JOBS "/j1");
    req = json_object_get(req, "headers");
    ck_assert_str_eq(json_string_value(json_object_get(req, "Authorization")), "Bearer tok1");
    ck_assert_str_eq(json_string_value(json_object_get(req, "User-Agent")),
                     "volcano-plugin-webhook/0.1.0");
    ck_assert_str_eq(json_string_value(json_object_get(req, "Accept")), "application/json");
    ck_assert_uint_eq(json_array_size(log), 2);
    json_decref(log);
}
END_TEST

START_TEST(test_get_job_404_and_escaping)
{
    struct wh_error err = {0};
    json_t *got = NULL;
    json_t *log = NULL;

    ck_assert_int_eq(k8s_get_job(kc, "ns1", "missing", 5000, &got, &err), WH_ENOTFOUND);
    ck_assert_ptr_null(got);
    ck_assert_int_eq(err.code, WH_ENOTFOUND);
    ck_assert_str_eq(err.msg, "NotFound: jobs.batch.volcano.sh \"missing\" not found");

    ck_assert_int_eq(k8s_get_job(kc, "n s", "a b/c?d", 5000, &got, &err), WH_ENOTFOUND);
    ck_assert_str_eq(err.msg, "NotFound: jobs.batch.volcano.sh \"a b/c?d\" not found");
    ck_assert_str_eq(json_string_value(json_object_get(logged_request(&log, 1), "path")),
                     "/apis/batch.volcano.sh/v1alpha1/namespaces/n%20s/jobs/a%20b%2Fc%3Fd");
    json_decref(log);

    ck_assert_int_eq(k8s_get(kc, "/no/such/thing", 5000, &got, &err), WH_ENOTFOUND);
    ck_assert_str_eq(err.msg, "NotFound: the server could not find the requested resource");
    ck_assert_int_eq(k8s_get_job(kc, "", "x", 5000, &got, &err), WH_EINVAL);
}
END_TEST

START_TEST(test_injected_errors)
{
    struct wh_error err = {0};
    json_t *got = NULL;

    apitest_fault(&api, "{\"method\":\"GET\",\"path_regex\":\"/jobs/j1$\",\"status\":500,"
                        "\"reason\":\"InternalError\",\"message\":\"etcd is down\",\"count\":1}");
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), WH_EAPI);
    ck_assert_str_eq(err.msg, "InternalError: etcd is down");
    ck_assert_ptr_null(got);
    /* used up: the next request succeeds on the same handle */
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), 0);
    ck_assert(json_equal(got, job));
    json_decref(got);
    got = NULL;

    /* a Status without reason or message: the HTTP code */
    apitest_fault(&api, "{\"path_regex\":\"/jobs/j1$\",\"status\":503,\"count\":1}");
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), WH_EAPI);
    ck_assert_str_eq(err.msg, "HTTP 503");

    /* a dropped connection is a transport error */
    apitest_fault(&api, "{\"path_regex\":\"/jobs/j1$\",\"close\":true,\"count\":-1}");
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), WH_EAPI);
    ck_assert_msg(strncmp(err.msg, "GET " JOBS "/j1: ", strlen(JOBS) + 9) == 0, "%s", err.msg);
    apitest_ctl_expect(&api, "DELETE", "/_test/faults", NULL, 200);
}
END_TEST

/* The Status reason of an answer, as k8s_request writes it into err. */
START_TEST(test_error_reason)
{
    static const char invalid[] = "{\"kind\":\"Status\",\"reason\":\"Invalid\","
                                  "\"message\":\"test operation failed\",\"code\":422}";
    struct wh_error err = {0, ""};

    ck_assert_int_eq(k8s_client_status_error(422, invalid, strlen(invalid), &err), WH_EAPI);
    ck_assert_str_eq(err.msg, "Invalid: test operation failed");
    ck_assert(k8s_error_reason_is(&err, "Invalid"));
    ck_assert(!k8s_error_reason_is(&err, "Inval"));
    ck_assert(!k8s_error_reason_is(&err, "Conflict"));
    ck_assert_int_eq(k8s_client_status_error(422, "{\"reason\":\"Invalid\"}", 20, &err), WH_EAPI);
    ck_assert_str_eq(err.msg, "Invalid: HTTP 422");
    ck_assert(k8s_error_reason_is(&err, "Invalid"));
    ck_assert_int_eq(k8s_client_status_error(422, NULL, 0, &err), WH_EAPI);
    ck_assert_str_eq(err.msg, "HTTP 422");
    ck_assert(!k8s_error_reason_is(&err, "Invalid"));
    ck_assert(!k8s_error_reason_is(NULL, "Invalid"));
}
END_TEST

START_TEST(test_timeout)
{
    struct wh_error err = {0};
    json_t *got = NULL;

    apitest_fault(&api, "{\"path_regex\":\"/jobs/j1$\",\"delay_ms\":3000,\"count\":1}");
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 300, &got, &err), WH_ETIMEOUT);
    ck_assert_str_eq(err.msg, "GET " JOBS "/j1: timed out after 300 ms");
    ck_assert_ptr_null(got);
    /* the client recovers on a fresh connection */
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), 0);
    json_decref(got);
}
END_TEST

START_TEST(test_token_rotation)
{
    struct wh_error err = {0};
    json_t *got = NULL;
    json_t *log = NULL;
    char tok[512];

    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), 0);
    json_decref(got);
    /* the kubelet rewrites the token: the next request sends the new one */
    tpath(tok, sizeof(tok), "token");
    write_file(tok, "tok2\n");
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), WH_EAPI);
    ck_assert_str_eq(err.msg, "Unauthorized: Unauthorized");
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(logged_request(&log, 1), "headers"), "Authorization")),
                     "Bearer tok2");
    json_decref(log);
    write_file(tok, "  tok1  \n");
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), 0);
    json_decref(got);
    /* an empty token file is an error, not an anonymous request */
    write_file(tok, "\n");
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), WH_EAPI);
    ck_assert_msg(strstr(err.msg, "is empty") != NULL, "%s", err.msg);
}
END_TEST

START_TEST(test_body_cap)
{
    size_t n = 17u * 1024 * 1024;
    char *body = malloc(n + 200);
    struct wh_error err = {0};
    json_t *got = NULL;
    int off;

    ck_assert_ptr_nonnull(body);
    off = snprintf(body, 200, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                              "{\"name\":\"big\",\"namespace\":\"ns1\"},\"data\":{\"x\":\"");
    memset(body + off, 'a', n);
    snprintf(body + off + n, 200, "\"}}");
    apitest_ctl_expect(&api, "POST", "/_test/objects", body, 201);
    free(body);
    /* WH_ETOOBIG, not WH_EAPI: the informer halves its LIST pages on it */
    ck_assert_int_eq(k8s_get(kc, "/api/v1/namespaces/ns1/configmaps/big", 20000, &got, &err),
                     WH_ETOOBIG);
    ck_assert_str_eq(err.msg, "GET /api/v1/namespaces/ns1/configmaps/big: response body larger "
                              "than 16777216 bytes");
    ck_assert_ptr_null(got);
}
END_TEST

/* k8s_client_set_max_body: the cap is the client's; 0 restores the 16 MiB default. */
START_TEST(test_body_cap_settable)
{
    struct wh_error err = {0};
    json_t *got = NULL;
    char *rv = NULL;

    apitest_store_cm_of_size(&api, "small", 1000);
    apitest_store_cm_of_size(&api, "large", 9000);
    k8s_client_set_max_body(kc, 8192);
    ck_assert_int_eq(k8s_get(kc, "/api/v1/namespaces/ns1/configmaps/small", 5000, &got, &err), 0);
    json_decref(got);
    got = NULL;
    ck_assert_int_eq(k8s_get(kc, "/api/v1/namespaces/ns1/configmaps/large", 5000, &got, &err),
                     WH_ETOOBIG);
    ck_assert_str_eq(err.msg, "GET /api/v1/namespaces/ns1/configmaps/large: response body "
                              "larger than 8192 bytes");
    ck_assert_ptr_null(got);
    /* a LIST page over the cap fails the LIST with the same code (the caller may page less) */
    ck_assert_int_eq(k8s_list(kc, "/api/v1/namespaces/ns1/configmaps", 2, 5000, &got, &rv, &err),
                     WH_ETOOBIG);
    ck_assert_str_eq(err.msg, "GET /api/v1/namespaces/ns1/configmaps?limit=2: response body "
                              "larger than 8192 bytes");
    ck_assert_ptr_null(got);
    ck_assert_ptr_null(rv);
    k8s_client_set_max_body(kc, 0);
    ck_assert_int_eq(k8s_get(kc, "/api/v1/namespaces/ns1/configmaps/large", 5000, &got, &err), 0);
    json_decref(got);
}
END_TEST

struct thread_arg {
    struct k8s_client *c;
    int rc[5];
};

static void *thread_main(void *p)
{
    struct thread_arg *a = p;
    int i;

    for (i = 0; i < 5; i++) {
        json_t *got = NULL;
        struct wh_error err = {0};

        a->rc[i] = k8s_get_job(a->c, "ns1", "j1", 5000, &got, &err);
        json_decref(got);
    }
    return NULL;
}

START_TEST(test_threads)
{
    struct thread_arg args[3];
    pthread_t th[3];
    int i;
    int j;

    for (i = 0; i < 3; i++) {
        args[i].c = kc;
        ck_assert_int_eq(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    }
    for (i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        for (j = 0; j < 5; j++)
            ck_assert_int_eq(args[i].rc[j], 0);
    }
    /* one thread still holding a handle at destroy time: its handle is freed too */
    thread_main(&args[0]);
}
END_TEST


/* ---- writes, lists, retries, rate limit (what the reconcile side calls) ---- */

#define CMS "/api/v1/namespaces/ns1/configmaps"

static const char *meta_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

START_TEST(test_path_helper)
{
    static const struct {
        const char *g, *v, *ns, *r, *n, *want;
    } cases[] = {
        {"", "v1", "ns1", "configmaps", "c", "/api/v1/namespaces/ns1/configmaps/c"},
        {NULL, "v1", "ns1", "secrets", NULL, "/api/v1/namespaces/ns1/secrets"},
        {"batch.volcano.sh", "v1alpha1", NULL, "jobs", NULL, "/apis/batch.volcano.sh/v1alpha1/jobs"},
        {"coordination.k8s.io", "v1", "kube-system", "leases", "vpw",
         "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/vpw"},
        {"networking.k8s.io", "v1", "n s", "networkpolicies", "a/b?c",
         "/apis/networking.k8s.io/v1/namespaces/n%20s/networkpolicies/a%2Fb%3Fc"},
        {"", "v1", "", "namespaces", "x", "/api/v1/namespaces/x"},
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *p = k8s_path(cases[i].g, cases[i].v, cases[i].ns, cases[i].r, cases[i].n);

        ck_assert_ptr_nonnull(p);
        ck_assert_str_eq(p, cases[i].want);
        free(p);
    }
    ck_assert_ptr_null(k8s_path("", NULL, "ns", "x", NULL));
}
END_TEST

START_TEST(test_create_update_delete)
{
    struct wh_error err = {0};
    json_t *cm = tu_json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                         "\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"1\"}},"
                         "\"data\":{\"k\":\"v\"}}");
    json_t *created = NULL;
    json_t *got = NULL;
    json_t *upd = NULL;
    json_t *log = NULL;
    json_t *req;
    long rv;

    ck_assert_int_eq(k8s_create(kc, CMS, cm, 5000, &created, &err), 0);
    ck_assert_str_eq(meta_str(created, "namespace"), "ns1");
    ck_assert_uint_eq(strlen(meta_str(created, "uid")), 36);
    rv = strtol(meta_str(job, "resourceVersion"), NULL, 10);
    ck_assert_int_eq(strtol(meta_str(created, "resourceVersion"), NULL, 10), rv + 1);
    ck_assert_int_eq(k8s_get(kc, CMS "/a", 5000, &got, &err), 0);
    ck_assert(json_equal(got, created)); /* 201 carried the stored object */
    json_decref(got);
    got = NULL;
    req = logged_request(&log, 0);
    ck_assert_str_eq(json_string_value(json_object_get(req, "method")), "POST");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(req, "headers"),
                                                       "Content-Type")),
                     "application/json");
    json_decref(log);

    /* the name is taken */
    ck_assert_int_eq(k8s_create(kc, CMS, cm, 5000, &got, &err), WH_EEXISTS);
    ck_assert_ptr_null(got);
    ck_assert_str_eq(err.msg, "AlreadyExists: configmaps \"a\" already exists");

    /* PUT with the current resourceVersion, then again with the now stale one */
    upd = json_deep_copy(created);
    json_object_set_new(json_object_get(upd, "data"), "k", json_string("v2"));
    ck_assert_int_eq(k8s_update(kc, CMS "/a", upd, 5000, &got, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "data"), "k")), "v2");
    ck_assert_int_eq(strtol(meta_str(got, "resourceVersion"), NULL, 10), rv + 2);
    json_decref(got);
    got = NULL;
    ck_assert_int_eq(k8s_update(kc, CMS "/a", upd, 5000, &got, &err), WH_ECONFLICT);
    ck_assert_str_eq(err.msg, "Conflict: Operation cannot be fulfilled on configmaps \"a\": the "
                              "object has been modified; please apply your changes to the latest "
                              "version and try again");
    /* any other status: WH_EAPI with the Status reason */
    ck_assert_int_eq(k8s_update(kc, CMS "/nope", upd, 5000, NULL, &err), WH_EAPI);
    ck_assert_str_eq(err.msg, "BadRequest: the name of the object (a) does not match the name "
                              "on the URL (nope)");

    /* PATCH: merge and JSON patch content types */
    {
        json_t *mp = tu_json("{\"data\":{\"k\":null,\"m\":\"1\"}}");
        json_t *jp = tu_json("[{\"op\":\"add\",\"path\":\"/data/n\",\"value\":\"2\"}]");

        ck_assert_int_eq(k8s_request(kc, "PATCH", CMS "/a", mp, "application/merge-patch+json",
                                     5000, &got, &err),
                         0);
        tu_assert_json_eq(json_object_get(got, "data"), "{\"m\":\"1\"}");
        json_decref(got);
        ck_assert_int_eq(k8s_request(kc, "PATCH", CMS "/a", jp, "application/json-patch+json",
                                     5000, &got, &err),
                         0);
        tu_assert_json_eq(json_object_get(got, "data"), "{\"m\":\"1\",\"n\":\"2\"}");
        json_decref(got);
        got = NULL;
        json_decref(mp);
        json_decref(jp);
    }
    ck_assert_int_eq(k8s_request(kc, "HEAD", CMS "/a", NULL, NULL, 5000, &got, &err), WH_EINVAL);

    ck_assert_int_eq(k8s_delete(kc, CMS "/a", 5000, &err), 0);
    ck_assert_int_eq(k8s_get(kc, CMS "/a", 5000, &got, &err), WH_ENOTFOUND);
    ck_assert_int_eq(k8s_delete(kc, CMS "/a", 5000, &err), WH_ENOTFOUND);
    ck_assert_str_eq(err.msg, "NotFound: configmaps \"a\" not found");
    req = logged_request(&log, 10);
    ck_assert_uint_eq(json_array_size(log), 11);
    ck_assert_str_eq(json_string_value(json_object_get(req, "method")), "DELETE");
    ck_assert_str_eq(json_string_value(json_object_get(req, "path")), CMS "/a");
    json_decref(log);

    json_decref(upd);
    json_decref(created);
    json_decref(cm);
}
END_TEST

START_TEST(test_list_paged)
{
    static const char *names[] = {"e", "a", "c", "d", "b"};
    struct wh_error err = {0};
    json_t *items = NULL;
    json_t *all = NULL;
    json_t *reqs;
    char *rv = NULL;
    char *rv_all = NULL;
    size_t i;

    for (i = 0; i < 5; i++) {
        char body[256];

        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
                 "\"namespace\":\"ns1\"}}",
                 names[i]);
        apitest_ctl_expect(&api, "POST", "/_test/objects", body, 201);
    }
    apitest_clear_requests(&api);
    ck_assert_int_eq(k8s_list(kc, CMS, 2, 5000, &items, &rv, &err), 0);
    ck_assert_int_eq(k8s_list(kc, CMS, 0, 5000, &all, &rv_all, &err), 0);
    ck_assert_uint_eq(json_array_size(items), 5);
    ck_assert(json_equal(items, all));
    ck_assert_str_eq(meta_str(json_array_get(items, 0), "name"), "a");
    ck_assert_str_eq(meta_str(json_array_get(items, 4), "name"), "e");
    ck_assert_str_eq(rv, rv_all);
    ck_assert_int_eq(strtol(rv, NULL, 10), strtol(meta_str(job, "resourceVersion"), NULL, 10) + 5);
    /* three pages of limit=2 (the last two carrying continue), then the unpaged list */
    reqs = apitest_requests(&api);
    ck_assert_uint_eq(json_array_size(reqs), 4);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(reqs, 0), "query")),
                     "limit=2");
    for (i = 1; i < 3; i++)
        ck_assert_msg(strncmp(json_string_value(json_object_get(json_array_get(reqs, i), "query")),
                              "limit=2&continue=", 17) == 0,
                      "page %zu", i);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(reqs, 3), "query")), "");
    json_decref(reqs);
    json_decref(items);
    json_decref(all);
    free(rv);
    free(rv_all);
}
END_TEST

/* k8s_page_fn: append the page's names as one array to userdata; a page that starts
 * with "c" stops the LIST with WH_ETOOBIG. */
static int record_page(void *userdata, json_t *items, struct wh_error *err)
{
    json_t *names = json_array();
    const json_t *it;
    size_t i;

    json_array_foreach(items, i, it) {
        json_array_append_new(names, json_string(meta_str(it, "name")));
    }
    json_array_append_new(userdata, names);
    if (strcmp(meta_str(json_array_get(items, 0), "name"), "c") == 0)
        return wh_error_set(err, WH_ETOOBIG, "enough");
    return 0;
}

/* Pages handed over one by one, in order; the callback's error ends the LIST with it. */
START_TEST(test_list_pages)
{
    static const char *names[] = {"e", "a", "c", "d", "b"};
    struct wh_error err = {0};
    json_t *pages = json_array();
    char *rv = NULL;
    size_t i;

    for (i = 0; i < 5; i++) {
        char body[256];

        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
                 "\"namespace\":\"ns1\"}}",
                 names[i]);
        apitest_ctl_expect(&api, "POST", "/_test/objects", body, 201);
    }
    apitest_clear_requests(&api);
    /* limit=3: two pages, a-c and d-e. */
    ck_assert_int_eq(k8s_list_pages(kc, CMS, 3, 5000, record_page, pages, &rv, &err), 0);
    tu_assert_json_eq(pages, "[[\"a\",\"b\",\"c\"],[\"d\",\"e\"]]");
    ck_assert_ptr_nonnull(rv);
    free(rv);
    rv = NULL;

    json_array_clear(pages);
    ck_assert_int_eq(k8s_list_pages(kc, CMS "?labelSelector=", 2, 5000, record_page, pages, &rv,
                                    &err),
                     WH_ETOOBIG);
    ck_assert_str_eq(err.msg, "enough");
    tu_assert_json_eq(pages, "[[\"a\",\"b\"],[\"c\",\"d\"]]");
    ck_assert_ptr_null(rv);
    /* Two requests per LIST: the second stopped after its page 2 (its page 3, e, never asked). */
    ck_assert_uint_eq(apitest_total(&api), 4);
    json_decref(pages);
}
END_TEST

/*
 * A \u0000 in a string is valid JSON and valid in Kubernetes strings (an annotation
 * or env value): LIST and GET return the object with the NUL kept. It was refused as
 * invalid JSON, so one such Job failed every LIST of the informer (the webhook never
 * became ready) and every GET of that Job.
 */
START_TEST(test_nul_in_string)
{
    struct wh_error err = {0};
    json_t *items = NULL;
    json_t *got = NULL;
    char *rv = NULL;
    const json_t *v;

    apitest_ctl_expect(&api, "POST", "/_test/objects",
                       "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"nul\","
                       "\"namespace\":\"nulns\"},\"data\":{\"k\":\"a\\u0000b\"}}",
                       201);
    ck_assert_msg(k8s_list(kc, "/api/v1/namespaces/nulns/configmaps", 10, 5000, &items, &rv,
                           &err) == 0,
                  "%s", err.msg);
    ck_assert_uint_eq(json_array_size(items), 1);
    v = json_object_get(json_object_get(json_array_get(items, 0), "data"), "k");
    ck_assert_uint_eq(json_string_length(v), 3);
    ck_assert_int_eq(memcmp(json_string_value(v), "a\0b", 3), 0);
    ck_assert_msg(k8s_get(kc, "/api/v1/namespaces/nulns/configmaps/nul", 5000, &got, &err) == 0,
                  "%s", err.msg);
    ck_assert(json_equal(got, json_array_get(items, 0)));
    json_decref(got);
    json_decref(items);
    free(rv);
}
END_TEST

/* While page 2 is held back by the server, write and compact past the list's RV. */
static void *compact_soon(void *p)
{
    struct timespec ts = {0, 150 * 1000 * 1000};

    (void)p;
    nanosleep(&ts, NULL);
    apitest_call(&api, "POST", "/_test/objects",
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"late\","
                 "\"namespace\":\"ns1\"}}",
                 false, NULL);
    apitest_call(&api, "POST", "/_test/compact", "{}", false, NULL);
    return NULL;
}

START_TEST(test_list_expired_continue)
{
    struct wh_error err = {0};
    json_t *items = NULL;
    char *rv = NULL;
    pthread_t th;
    int i;

    for (i = 0; i < 3; i++) {
        char body[256];

        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c%d\","
                 "\"namespace\":\"ns1\"}}",
                 i);
        apitest_ctl_expect(&api, "POST", "/_test/objects", body, 201);
    }
    apitest_fault(&api, "{\"path_regex\":\"continue=\",\"delay_ms\":800,\"count\":1}");
    ck_assert_int_eq(pthread_create(&th, NULL, compact_soon, NULL), 0);
    ck_assert_int_eq(k8s_list(kc, CMS, 2, 5000, &items, &rv, &err), WH_EGONE);
    pthread_join(th, NULL);
    ck_assert_ptr_null(items);
    ck_assert_ptr_null(rv);
    ck_assert_msg(strncmp(err.msg, "Expired: The provided continue parameter is too old", 51) == 0,
                  "%s", err.msg);
    /* listing again from scratch works */
    ck_assert_int_eq(k8s_list(kc, CMS, 2, 5000, &items, &rv, &err), 0);
    ck_assert_uint_eq(json_array_size(items), 4);
    json_decref(items);
    free(rv);
}
END_TEST

/* The server's monotonic time of logged request n (seconds). */
static double req_time(json_t *log, size_t n)
{
    json_t *t = json_object_get(json_array_get(log, n), "time");

    ck_assert_msg(json_is_number(t), "request %zu has no time", n);
    return json_number_value(t);
}

/* A 429 TooManyRequests rule for Job j1 with this Retry-After, count times. */
#define TOO_MANY(retry_after, count)                                                       \
    "{\"path_regex\":\"/jobs/j1$\",\"status\":429,\"reason\":\"TooManyRequests\","            \
    "\"message\":\"slow down\",\"retry_after\":" retry_after ",\"count\":" count "}"

/*
 * With an empty request log and the fault rule added, GET Job ns1/j1 within
 * timeout_ms fails with WH_EAPI and exactly want_msg after want_requests requests.
 */
static void get_job_fails_after(const char *fault, long timeout_ms, const char *want_msg,
                                size_t want_requests)
{
    struct wh_error err = {0};
    json_t *got = NULL;

    apitest_clear_requests(&api);
    apitest_fault(&api, fault);
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", timeout_ms, &got, &err), WH_EAPI);
    ck_assert_str_eq(err.msg, want_msg);
    ck_assert_uint_eq(apitest_total(&api), want_requests);
}

START_TEST(test_retry_after)
{
    struct k8s_client_options opt = {.qps = 0, .burst = 1, .retry_max = 3};
    struct wh_error err = {0};
    json_t *got = NULL;
    json_t *log = NULL;

    k8s_client_set_options(kc, &opt);
    apitest_clear_requests(&api);
    apitest_fault(&api, "[" TOO_MANY("1", "1") ","
                        "{\"path_regex\":\"/jobs/j1$\",\"status\":503,\"reason\":"
                        "\"ServiceUnavailable\",\"message\":\"busy\",\"retry_after\":1,"
                        "\"count\":1}]");
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 10000, &got, &err), 0);
    ck_assert(json_equal(got, job));
    json_decref(got);
    log = apitest_requests(&api);
    ck_assert_uint_eq(json_array_size(log), 3);
    /* the server saw each retry at least Retry-After (1 s) after the one before */
    ck_assert_msg(req_time(log, 1) - req_time(log, 0) >= 0.95, "%f",
                  req_time(log, 1) - req_time(log, 0));
    ck_assert_msg(req_time(log, 2) - req_time(log, 1) >= 0.95, "%f",
                  req_time(log, 2) - req_time(log, 1));
    json_decref(log);

    /* a Retry-After longer than the time left: the error at once, no retry */
    get_job_fails_after(TOO_MANY("30", "1"), 2000, "TooManyRequests: slow down", 1);
    /* retries used up: the last 429 is the answer */
    opt.retry_max = 1;
    k8s_client_set_options(kc, &opt);
    get_job_fails_after(TOO_MANY("0", "2"), 5000, "TooManyRequests: slow down", 2);
    /* a 429 without Retry-After is not retried */
    get_job_fails_after("{\"path_regex\":\"/jobs/j1$\",\"status\":429,\"count\":1}", 5000,
                        "HTTP 429", 1);
}
END_TEST

struct rl_arg {
    struct k8s_client *c;
    int n;
    int fails;
};

static void *rl_thread(void *p)
{
    struct rl_arg *a = p;
    int i;

    for (i = 0; i < a->n; i++) {
        json_t *got = NULL;
        struct wh_error err = {0};

        if (k8s_get_job(a->c, "ns1", "j1", 10000, &got, &err) != 0)
            a->fails++;
        json_decref(got);
    }
    return NULL;
}

START_TEST(test_rate_limit)
{
    struct k8s_client_options opt = {.qps = 20, .burst = 4, .retry_max = 0};
    struct rl_arg args[2] = {{kc, 12, 0}, {kc, 12, 0}};
    struct wh_error err = {0};
    json_t *got = NULL;
    json_t *log = NULL;
    pthread_t th[2];
    size_t n;
    int i;

    k8s_client_set_options(kc, &opt);
    apitest_clear_requests(&api);
    /* 24 requests from two threads sharing one bucket: at least (24 - 4) / 20 = 1 s */
    for (i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, rl_thread, &args[i]), 0);
    for (i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(args[i].fails, 0);
    }
    log = apitest_requests(&api);
    n = json_array_size(log);
    ck_assert_uint_eq(n, 24);
    ck_assert_msg(req_time(log, n - 1) - req_time(log, 0) >= 0.9, "24 requests in %f s",
                  req_time(log, n - 1) - req_time(log, 0));
    json_decref(log);

    /* a wait longer than the request's timeout is a timeout, without a request */
    opt.qps = 0.2;
    opt.burst = 1;
    k8s_client_set_options(kc, &opt);
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), 0);
    json_decref(got);
    got = NULL;
    apitest_clear_requests(&api);
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 200, &got, &err), WH_ETIMEOUT);
    ck_assert_msg(strncmp(err.msg, "client rate limit: waiting ", 27) == 0, "%s", err.msg);
    ck_assert_uint_eq(apitest_total(&api), 0);
}
END_TEST

/* The N of err's "client rate limit: waiting N ms exceeds the timeout", or -1. */
static long long waited_ms(const struct wh_error *err)
{
    long long n = -1;

    if (sscanf(err->msg, "client rate limit: waiting %lld ms", &n) != 1)
        return -1;
    return n;
}

/* A wait of want ms, less what the bucket refilled meanwhile: at 0.001/s, one ms less per
 * second passed since the calls before (a loaded machine took 2 ms between them). */
static bool waited_about(const struct wh_error *err, long long want)
{
    long long n = waited_ms(err);

    return n <= want && n > want - 1000;
}

struct sleeper_arg {
    struct k8s_client *c;
    int rc;
};

/* A background caller that sleeps on its reserved token (up to 10 s allowed). */
static void *sleeper(void *p)
{
    struct sleeper_arg *a = p;
    struct wh_error err = {0};

    a->rc = k8s_client_throttle(a->c, 10000, false, &err);
    return NULL;
}

/*
 * An urgent caller (an admission's Job GET) goes ahead of the queue, within a second
 * of the rate (at least one token, at most burst), and the callers after it wait for
 * its token. max_wait_ms 0 tells "goes at once" from "would wait" without a clock: a
 * caller that would wait gets WH_ETIMEOUT, saying how long, and gives its reservation
 * back. A bucket refilling one token in 1000 s moves only by the calls.
 */
START_TEST(test_urgent_throttle)
{
    struct k8s_client_options opt = {.qps = 0.001, .burst = 2, .retry_max = 0};
    struct sleeper_arg arg = {kc, -1};
    struct wh_error err = {0};
    pthread_t th;

    k8s_client_set_options(kc, &opt);
    ck_assert_int_eq(k8s_client_throttle(kc, 0, false, &err), 0); /* 2 → 1 */
    ck_assert_int_eq(k8s_client_throttle(kc, 0, false, &err), 0); /* 1 → 0 */
    ck_assert_int_eq(k8s_client_throttle(kc, 0, false, &err), WH_ETIMEOUT);
    ck_assert_msg(waited_about(&err, 1000001), "%s", err.msg); /* one token at 0.001/s */
    /* the empty bucket: an urgent caller goes, one token ahead (a second of this rate
     * is less than one token), and no further */
    ck_assert_int_eq(k8s_client_throttle(kc, 0, true, &err), 0); /* 0 → -1 */
    wh_error_clear(&err);
    ck_assert_int_eq(k8s_client_throttle(kc, 0, true, &err), WH_ETIMEOUT);
    ck_assert_msg(waited_about(&err, 2000001), "%s", err.msg);
    /* the callers after it wait for its token too: two tokens owed, not one */
    wh_error_clear(&err);
    ck_assert_int_eq(k8s_client_throttle(kc, 0, false, &err), WH_ETIMEOUT);
    ck_assert_msg(waited_about(&err, 2000001), "%s", err.msg);

    /* A caller sleeping on its reservation keeps its turn, and its token is not taken
     * for debt: at 1/s with a bucket of 1, after one call, a sleeper waits a second;
     * meanwhile an urgent caller still goes (the level is -1 with the sleeper's token,
     * 0 without). Had the sleeper not reserved yet, or woken already, it goes too. */
    opt.qps = 1;
    opt.burst = 1;
    k8s_client_set_options(kc, &opt);
    ck_assert_int_eq(k8s_client_throttle(kc, 0, false, &err), 0); /* 1 → 0 */
    ck_assert_int_eq(pthread_create(&th, NULL, sleeper, &arg), 0);
    usleep(200 * 1000);
    ck_assert_int_eq(k8s_client_throttle(kc, 0, true, &err), 0);
    pthread_join(th, NULL);
    ck_assert_int_eq(arg.rc, 0);

    /* no limit: neither kind waits */
    opt.qps = 0;
    k8s_client_set_options(kc, &opt);
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(k8s_client_throttle(kc, 0, false, &err), 0);
        ck_assert_int_eq(k8s_client_throttle(kc, 0, true, &err), 0);
    }
}
END_TEST

/* A background caller that sleeps on its reserved token for up to ~1000 s. */
static void *long_sleeper(void *p)
{
    struct sleeper_arg *a = p;
    struct wh_error err = {0};

    a->rc = k8s_client_throttle(a->c, 10000000, false, &err);
    return NULL;
}

/*
 * k8s_client_close (a stop): the callers sleeping on their tokens wake and go, and
 * later ones do not wait, so a stop is not held by the queue. At one token per 1000 s,
 * the sleepers' reservations would keep them ~1000 and ~2000 s: the joins below
 * return only because close woke them.
 */
START_TEST(test_close_ends_waits)
{
    struct k8s_client_options opt = {.qps = 0.001, .burst = 1, .retry_max = 0};
    struct sleeper_arg a1 = {kc, -1};
    struct sleeper_arg a2 = {kc, -1};
    struct wh_error err = {0};
    json_t *got = NULL;
    pthread_t t1;
    pthread_t t2;

    k8s_client_set_options(kc, &opt);
    ck_assert_int_eq(k8s_client_throttle(kc, 0, false, &err), 0); /* the bucket's one */
    ck_assert_int_eq(pthread_create(&t1, NULL, long_sleeper, &a1), 0);
    ck_assert_int_eq(pthread_create(&t2, NULL, long_sleeper, &a2), 0);
    ck_assert_int_eq(k8s_client_throttle(kc, 0, false, &err), WH_ETIMEOUT); /* queued */
    usleep(100 * 1000);
    k8s_client_close(kc);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    ck_assert_int_eq(a1.rc, 0);
    ck_assert_int_eq(a2.rc, 0);
    /* after it, nothing waits, and requests still go out (the Lease's release) */
    ck_assert_int_eq(k8s_client_throttle(kc, 0, false, &err), 0);
    apitest_clear_requests(&api);
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), 0);
    ck_assert(json_equal(got, job));
    json_decref(got);
    ck_assert_uint_eq(apitest_total(&api), 1);
    k8s_client_close(kc); /* idempotent */
    k8s_client_close(NULL);
}
END_TEST

/*
 * k8s_get_job_urgent is k8s_get_job, urgent: with an empty bucket that makes a
 * background GET time out at once, it is sent, and answered.
 */
START_TEST(test_get_job_urgent)
{
    struct k8s_client_options opt = {.qps = 0.001, .burst = 1, .retry_max = 0};
    struct wh_error err = {0};
    json_t *got = NULL;

    k8s_client_set_options(kc, &opt);
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 5000, &got, &err), 0); /* the bucket's one */
    json_decref(got);
    got = NULL;
    apitest_clear_requests(&api);
    ck_assert_int_eq(k8s_get_job(kc, "ns1", "j1", 200, &got, &err), WH_ETIMEOUT);
    ck_assert_uint_eq(apitest_total(&api), 0);
    ck_assert_int_eq(k8s_get_job_urgent(kc, "ns1", "j1", 5000, &got, &err), 0);
    ck_assert(json_equal(got, job));
    json_decref(got);
    got = NULL;
    ck_assert_uint_eq(apitest_total(&api), 1);
    /* past its debt of burst (1) it waits like the others: here too long */
    ck_assert_int_eq(k8s_get_job_urgent(kc, "ns1", "j1", 200, &got, &err), WH_ETIMEOUT);
    ck_assert_uint_eq(apitest_total(&api), 1);
    /* the same answers as k8s_get_job's */
    opt.qps = 0;
    k8s_client_set_options(kc, &opt);
    ck_assert_int_eq(k8s_get_job_urgent(kc, "ns1", "missing", 5000, &got, &err), WH_ENOTFOUND);
    ck_assert_str_eq(err.msg, "NotFound: jobs.batch.volcano.sh \"missing\" not found");
    ck_assert_ptr_null(got);
    ck_assert_int_eq(k8s_get_job_urgent(kc, "", "x", 5000, &got, &err), WH_EINVAL);
    ck_assert_ptr_null(got);
}
END_TEST

/* ---- requests over HTTPS ---- */

START_TEST(test_https_ca_file_and_data)
{
    json_t *want = reset_and_create_job();
    struct k8s_client *c = client_for_server(true);
    struct k8s_config cfg = {0};
    struct wh_error err = {0};
    json_t *got = NULL;
    char server[128];
    char p[512];
    char *ca;
    char *crt;
    char *key;

    ck_assert_int_eq(k8s_get_job(c, "ns1", "j1", 5000, &got, &err), 0);
    ck_assert(json_equal(got, want));
    json_decref(got);
    k8s_client_destroy(c);

    /* CA, client certificate and key from memory (the *_BLOB options) */
    tpath(p, sizeof(p), "ca.crt");
    ca = tu_read_file(p);
    tpath(p, sizeof(p), "srv.crt");
    crt = tu_read_file(p);
    tpath(p, sizeof(p), "srv.key");
    key = tu_read_file(p);
    apitest_url(&api, server, sizeof(server));
    cfg.server = server;
    cfg.ca_data = ca;
    cfg.cert_data = crt;
    cfg.key_data = key;
    cfg.token = "tok1";
    c = k8s_client_create(&cfg, &err);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(k8s_get_job(c, "ns1", "j1", 5000, &got, &err), 0);
    ck_assert(json_equal(got, want));
    json_decref(got);
    k8s_client_destroy(c);

    /* a key that is no key fails the transfer */
    cfg.key_data = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
    c = k8s_client_create(&cfg, &err);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(k8s_get_job(c, "ns1", "j1", 5000, &got, &err), WH_EAPI);
    k8s_client_destroy(c);
    free(ca);
    free(crt);
    free(key);
    json_decref(want);
}
END_TEST

START_TEST(test_https_verification)
{
    json_t *want = reset_and_create_job();
    struct k8s_config cfg = {0};
    struct wh_error err = {0};
    struct k8s_client *c;
    json_t *got = NULL;
    char server[128];
    char other[512];

    apitest_url(&api, server, sizeof(server));
    tpath(other, sizeof(other), "other.crt");
    cfg.server = server;
    cfg.token = "tok1";
    cfg.ca_file = other; /* a CA that did not sign the server's certificate */
    c = k8s_client_create(&cfg, &err);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(k8s_get_job(c, "ns1", "j1", 5000, &got, &err), WH_EAPI);
    ck_assert_msg(strstr(err.msg, "certificate") != NULL, "%s", err.msg);
    k8s_client_destroy(c);

    cfg.insecure = true;
    c = k8s_client_create(&cfg, &err);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(k8s_get_job(c, "ns1", "j1", 5000, &got, &err), 0);
    ck_assert(json_equal(got, want));
    json_decref(got);
    k8s_client_destroy(c);
    json_decref(want);
}
END_TEST

static Suite *k8s_client_suite(void)
{
    Suite *s = suite_create("k8s_client");
    TCase *cfg = tcase_create("config");
    TCase *http = tcase_create("http");
    TCase *https = tcase_create("https");

    tcase_add_test(cfg, test_kubeconfig_data_fields);
    tcase_add_test(cfg, test_kubeconfig_files_relative);
    tcase_add_test(cfg, test_kubeconfig_errors);
    tcase_add_test(cfg, test_in_cluster);
    tcase_add_test(cfg, test_path_helper);
    suite_add_tcase(s, cfg);

    tcase_add_unchecked_fixture(http, http_setup, server_stop);
    tcase_add_checked_fixture(http, http_test_setup, http_test_teardown);
    tcase_set_timeout(http, 120);
    tcase_add_test(http, test_get_job_200);
    tcase_add_test(http, test_get_job_404_and_escaping);
    tcase_add_test(http, test_injected_errors);
    tcase_add_test(http, test_error_reason);
    tcase_add_test(http, test_timeout);
    tcase_add_test(http, test_token_rotation);
    tcase_add_test(http, test_body_cap);
    tcase_add_test(http, test_body_cap_settable);
    tcase_add_test(http, test_threads);
    tcase_add_test(http, test_create_update_delete);
    tcase_add_test(http, test_list_paged);
    tcase_add_test(http, test_list_pages);
    tcase_add_test(http, test_nul_in_string);
    tcase_add_test(http, test_list_expired_continue);
    tcase_add_test(http, test_retry_after);
    tcase_add_test(http, test_rate_limit);
    tcase_add_test(http, test_urgent_throttle);
    tcase_add_test(http, test_close_ends_waits);
    tcase_add_test(http, test_get_job_urgent);
    suite_add_tcase(s, http);

    tcase_add_unchecked_fixture(https, https_setup, server_stop);
    tcase_set_timeout(https, 120);
    tcase_add_test(https, test_https_ca_file_and_data);
    tcase_add_test(https, test_https_verification);
    suite_add_tcase(s, https);
    return s;
}

int main(void)
{
    int rc;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (make_tmpdir_and_certs() < 0)
        return EXIT_FAILURE;
    rc = tu_run(k8s_client_suite());
    remove_tmpdir();
    curl_global_cleanup();
    return rc;
}
