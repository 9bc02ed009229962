/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_transport.c - the webhook's HTTP and TLS layer alone, for `make bench`:
 * webhook/server.c (libmicrohttpd, GnuTLS, the product's routing, body buffering
 * and limits) serving POST /pods/mutate with a fixed answer instead of
 * admission_handle (server_config.admission). Measured with the same load as the
 * webhook and nginx, it shows what the server costs before any admission work:
 * the highest throughput this webhook could reach with a free admission.
 *
 *   bench_transport CERT KEY ANSWER PORT_FILE [SPIN_US]
 *
 * CERT and KEY are PEM files (the webhook's serving pair), ANSWER the body sent
 * with HTTP 200 to every POST /pods/mutate (nginx gets the same one); it listens on
 * 127.0.0.1 on a port the OS picks, written to PORT_FILE once listening. Every
 * other setting is server.c's default, as `serve` has them by default. With SPIN_US,
 * each answer first spends that many microseconds of its thread's CPU time, standing
 * for an admission of that cost: the rate it reaches against SPIN_US is what an
 * admission may cost for the webhook to reach a rate (bench.py, "What limits
 * throughput"). Runs until
 * SIGTERM or SIGINT; exit status 1 when a file cannot be read or the server does
 * not start, 2 on bad usage.
 * Built by bench/run (not by the Makefile) against build/libwebhook.a.
 */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "webhook/server.h"

static char *fixed_answer;
static size_t fixed_answer_len;
static long long spin_ns; /* CPU time each answer spends first (SPIN_US) */

/* Spend ns of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID: time the thread waits
 * for a core does not count, as an admission's would not). */
static void spin(long long ns)
{
    struct timespec from;
    struct timespec now;

    if (ns <= 0 || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &from) != 0)
        return;
    do {
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0)
            return;
    } while ((now.tv_sec - from.tv_sec) * 1000000000LL + (now.tv_nsec - from.tv_nsec) < ns);
}

/* admission_fn: a copy of the fixed answer, whatever the body (owned by the server),
 * after spin_ns of CPU time. */
static int transport_admission(const char *body, size_t len, const struct jobsource *src,
                               const struct mutate_options *opt, char **out, size_t *out_len)
{
    (void)body;
    (void)len;
    (void)src;
    (void)opt;
    spin(spin_ns);
    *out = malloc(fixed_answer_len);
    if (*out == NULL) {
        *out_len = 0;
        return 500;
    }
    memcpy(*out, fixed_answer, fixed_answer_len);
    *out_len = fixed_answer_len;
    return 200;
}

/* job_source.get: never called (server_start wants a source). */
static int transport_job_get(void *userdata, const char *ns, const char *name, const char *uid,
                             json_t **job_out, struct wh_error *err)
{
    (void)userdata;
    (void)uid;
    (void)job_out;
    return wh_error_set(err, WH_ENOTFOUND, "jobs.batch.volcano.sh \"%s/%s\" not found", ns, name);
}

/* The whole file as a malloc'd NUL-terminated text; NULL (message printed) on failure. */
static char *read_text(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0
        || (text = malloc((size_t)n + 1)) == NULL || fread(text, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "bench_transport: cannot read %s\n", path);
        free(text);
        if (f != NULL)
            fclose(f);
        return NULL;
    }
    fclose(f);
    text[n] = '\0';
    if (len_out != NULL)
        *len_out = (size_t)n;
    return text;
}

int main(int argc, char **argv)
{
    struct server_config cfg = {
        .bind_address = "127.0.0.1",
        .src = {.get = transport_job_get, .userdata = NULL},
        .admission = transport_admission,
    };
    struct wh_error err = {0, ""};
    struct server *srv = NULL;
    char *cert;
    char *key;
    FILE *pf;
    sigset_t stop;
    int sig;

    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: bench_transport CERT KEY ANSWER PORT_FILE [SPIN_US]\n");
        return 2;
    }
    if (argc == 6) {
        char *end;
        long long us = strtoll(argv[5], &end, 10);

        if (end == argv[5] || *end != '\0' || us < 0 || us > 1000000) {
            fprintf(stderr, "bench_transport: SPIN_US must be 0..1000000, got %s\n", argv[5]);
            return 2;
        }
        spin_ns = us * 1000;
    }
    cert = read_text(argv[1], NULL);
    key = read_text(argv[2], NULL);
    fixed_answer = read_text(argv[3], &fixed_answer_len);
    if (cert == NULL || key == NULL || fixed_answer == NULL)
        return 1;
    cfg.tls_cert_pem = cert;
    cfg.tls_key_pem = key;
    /* Signals are taken by sigwait below, so no thread of the server gets them. */
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    if (server_start(&srv, &cfg, &err) < 0) {
        fprintf(stderr, "bench_transport: %s\n", err.msg);
        return 1;
    }
    pf = fopen(argv[4], "w");
    if (pf == NULL || fprintf(pf, "%u\n", server_port(srv)) < 0 || fclose(pf) != 0) {
        fprintf(stderr, "bench_transport: cannot write %s\n", argv[4]);
        server_stop(srv);
        return 1;
    }
    sigwait(&stop, &sig);
    server_stop(srv);
    free(cert);
    free(key);
    free(fixed_answer);
    return 0;
}
