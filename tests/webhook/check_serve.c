/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_serve.c - the `serve` subcommand: every bad flag exits 2, --help 0,
 * unreadable TLS files exit 1; and one whole run in a child process: start on
 * port 0 with --port-file, answer /healthz and a review, stop on SIGTERM with
 * exit 0. The parent learns the port through inotify (IN_MOVED_TO of the
 * port file, which serve writes by rename), so nothing sleeps.
 */
#include <check.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "webhook/commands.h"

static int run(const char *const *argv)
{
    int argc = 0;

    while (argv[argc] != NULL)
        argc++;
    return serve_main(argc, (char **)argv);
}

START_TEST(test_usage_errors)
{
    static const char *const cases[][8] = {
        {"serve", "--port", "abc", "--insecure-http", NULL},
        {"serve", "--port", "65536", "--insecure-http", NULL},
        {"serve", "--port", "-1", "--insecure-http", NULL},
        {"serve", "--port", "80x", "--insecure-http", NULL},
        {"serve", "--port", "", "--insecure-http", NULL},
        {"serve", "--job-lookup-failure", "maybe", "--insecure-http", NULL},
        {"serve", "--job-lookup-timeout", "2", "--insecure-http", NULL},
        {"serve", "--job-lookup-timeout", "0s", "--insecure-http", NULL},
        {"serve", "--job-lookup-timeout", "31s", "--insecure-http", NULL},
        {"serve", "--job-lookup-timeout", "2h", "--insecure-http", NULL},
        {"serve", "--job-lookup-timeout", "-5ms", "--insecure-http", NULL},
        {"serve", "-v", "x", "--insecure-http", NULL},
        {"serve", "-v=11", "--insecure-http", NULL},
        {"serve", "--v=-1", "--insecure-http", NULL},
        {"serve", "--frobnicate", "--insecure-http", NULL},
        {"serve", "--port", NULL},
        {"serve", "--insecure-http", "stray", NULL},
        {"serve", NULL},                             /* no TLS files */
        {"serve", "--tls-cert-file", "a.crt", NULL}, /* no key */
        {"serve", "--insecure-http", "--tls-cert-file", "a.crt", NULL},
    };

    ck_assert_int_eq(run(cases[_i]), 2);
}
END_TEST

START_TEST(test_help)
{
    static const char *const help[] = {"serve", "--help", NULL};
    static const char *const h[] = {"serve", "-h", NULL};

    ck_assert_int_eq(run(help), 0);
    ck_assert_int_eq(run(h), 0);
}
END_TEST

START_TEST(test_missing_tls_files)
{
    static const char *const argv[] = {"serve",
                                       "--tls-cert-file",
                                       "/nonexistent/tls.crt",
                                       "--tls-private-key-file",
                                       "/nonexistent/tls.key",
                                       NULL};

    ck_assert_int_eq(run(argv), 1);
}
END_TEST

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return sz * n;
}

static long http_status(const char *url, const char *body)
{
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    long status = 0;

    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (body != NULL) {
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    }
    ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    return status;
}

START_TEST(test_run_and_sigterm)
{
    char dir[] = "/tmp/check_serve.XXXXXX";
    char kubeconfig[64];
    char port_file[64];
    char url[128];
    char evbuf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    const char *argv[] = {"serve",
                          "--insecure-http",
                          "--bind-address",
                          "127.0.0.1",
                          "--port",
                          "0",
                          "--port-file",
                          port_file,
                          "--kubeconfig",
                          kubeconfig,
                          "--job-lookup-timeout",
                          "500ms",
                          "--job-lookup-failure=allow",
                          "-v=3",
                          NULL};
    unsigned port = 0;
    bool ready = false;
    FILE *f;
    pid_t pid;
    int status;
    int ifd;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", dir);
    snprintf(port_file, sizeof(port_file), "%s/port", dir);
    f = fopen(kubeconfig, "w");
    ck_assert_ptr_nonnull(f);
    fputs("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
          "clusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\n"
          "users:\n- name: u\n  user:\n    token: abc\n"
          "contexts:\n- name: t\n  context:\n    cluster: c\n    user: u\n",
          f);
    ck_assert_int_eq(fclose(f), 0);
    ifd = inotify_init1(IN_CLOEXEC);
    ck_assert_int_ge(ifd, 0);
    ck_assert_int_ge(inotify_add_watch(ifd, dir, IN_MOVED_TO), 0);

    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(run(argv));

    /* Wait for the rename of the port file (a child that dies first fails the test
     * by the Check timeout). */
    while (!ready) {
        ssize_t n = read(ifd, evbuf, sizeof(evbuf));

        ck_assert_int_gt(n, 0);
        for (char *p = evbuf; p < evbuf + n;) {
            struct inotify_event *ev = (struct inotify_event *)p;

            if (ev->len > 0 && strcmp(ev->name, "port") == 0)
                ready = true;
            p += sizeof(*ev) + ev->len;
        }
    }
    close(ifd);
    f = fopen(port_file, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "%u", &port), 1);
    fclose(f);
    ck_assert_uint_ne(port, 0);

    snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", port);
    ck_assert_int_eq(http_status(url, NULL), 200);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/pods/mutate?timeout=10s", port);
    ck_assert_int_eq(http_status(url,
                                 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
                                 "\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}"),
                     200);
    ck_assert_int_eq(http_status(url, "not json"), 400);

    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    unlink(port_file);
    unlink(kubeconfig);
    rmdir(dir);
}
END_TEST

static Suite *serve_suite(void)
{
    Suite *s = suite_create("serve");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_usage_errors, 0, 20);
    tcase_add_test(tc, test_help);
    tcase_add_test(tc, test_missing_tls_files);
    tcase_add_test(tc, test_run_and_sigterm);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int rc;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = tu_run(serve_suite());
    curl_global_cleanup();
    return rc;
}
