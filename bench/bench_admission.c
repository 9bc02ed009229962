/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_admission.c - admissions in-process, for `make bench`: the instruction count
 * of one admission under callgrind, and the time of one admission without a socket.
 *
 *   bench_admission JOBS.json BODIES.jsonl N
 *   bench_admission --keys N
 *
 * JOBS.json is a JSON array of Jobs; they go into the product's Jobs cache
 * (controller/cache.c) and are served from it as in the server: each admission parses
 * its Job's kept text (cache_get), with no API call. BODIES.jsonl holds one AdmissionReview per line. bench_loop() runs
 * admission_handle N times over the bodies in rotation; callgrind counts only it
 * (--collect-atstart=no --toggle-collect=bench_loop). Prints one line
 *   admissions=N patched=P failed=F seconds=S ns_per_admission=X
 * --keys N generates N ssh key pairs (sshkeys_generate, the reconcile side's RSA 2048)
 * one after the other and prints "keys=N seconds=S keys_per_second=X".
 * Exit status 1 when an answer is not HTTP 200, a key cannot be made or a file cannot
 * be read; 2 on bad usage.
 * Single thread. Built by bench/run (not by the Makefile) against build/libwebhook.a.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "certs/sshkey.h"
#include "controller/cache.h"
#include "plugins/sshkeys.h"
#include "webhook/admission.h"
#include "webhook/mutate.h"

#define MAX_BODIES 4096

struct bench_bodies {
    char *text[MAX_BODIES];
    size_t len[MAX_BODIES];
    size_t n;
};

/* job_source.get: the product's own Jobs cache (cache_get parses a private tree of
 * the Job's kept text per read, as an admission does in the server). */
static int bench_job_get(void *userdata, const char *ns, const char *name, const char *uid,
                         json_t **job_out, struct wh_error *err)
{
    struct cache *cache = userdata;
    int rc;

    (void)uid; /* the Jobs of the file are current: nothing is stale */
    rc = cache_get_read(cache, ns, name, job_out);
    if (rc == WH_ENOTFOUND)
        return wh_error_set(err, WH_ENOTFOUND, "jobs.batch.volcano.sh \"%s\" not found", name);
    return rc < 0 ? wh_error_set(err, rc, "out of memory") : 0;
}

/* job_source.diagnose: the diagnostics the cache computed once per Job version, as
 * controller/lookup.c serves them. */
static int bench_job_diagnose(void *userdata, const json_t *job, struct diagnostics *out)
{
    const json_t *meta = json_object_get(job, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));

    return cache_get_diagnostics(userdata, ns != NULL ? ns : "", name != NULL ? name : "",
                                 uid != NULL ? uid : "", rv != NULL ? rv : "", out);
}

/* job_source.job_memo: the slots beside this thread's trees, as controller/lookup.c. */
static json_t **bench_job_memo(void *userdata, const json_t *job, size_t k)
{
    (void)userdata;
    return cache_read_slot(job, k);
}

static int bench_load_jobs(const char *path, struct cache *cache)
{
    json_error_t jerr;
    json_t *arr = json_load_file(path, 0, &jerr);
    json_t *job;
    size_t i;

    if (!json_is_array(arr)) {
        fprintf(stderr, "bench_admission: %s: %s\n", path, arr ? "not an array" : jerr.text);
        json_decref(arr);
        return -1;
    }
    json_array_foreach(arr, i, job) {
        if (cache_put(cache, job) < 0) {
            fprintf(stderr, "bench_admission: %s: Job %zu has no namespace or name\n", path, i);
            json_decref(arr);
            return -1;
        }
    }
    json_decref(arr);
    return 0;
}

static int bench_load_bodies(const char *path, struct bench_bodies *b)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;

    if (f == NULL) {
        perror(path);
        return -1;
    }
    while (b->n < MAX_BODIES && (got = getline(&line, &cap, f)) > 0) {
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
            line[--got] = '\0';
        if (got == 0)
            continue;
        b->text[b->n] = strdup(line);
        b->len[b->n] = (size_t)got;
        if (b->text[b->n] == NULL)
            break;
        b->n++;
    }
    free(line);
    fclose(f);
    return b->n > 0 ? 0 : -1;
}

/* The measured part; not inlined so that callgrind can toggle on it. */
__attribute__((noinline)) static long bench_loop(const struct bench_bodies *b,
                                                 const struct jobsource *src,
                                                 const struct mutate_options *opt, long n,
                                                 long *patched)
{
    long i, failed = 0;

    for (i = 0; i < n; i++) {
        size_t k = (size_t)i % b->n;
        char *out = NULL;
        size_t out_len = 0;
        int status = admission_handle(b->text[k], b->len[k], src, opt, &out, &out_len);

        if (status != 200)
            failed++;
        else if (out != NULL && strstr(out, "\"patch\"") != NULL)
            (*patched)++;
        free(out);
    }
    return failed;
}

static double bench_seconds(const struct timespec *t0, const struct timespec *t1)
{
    return (double)(t1->tv_sec - t0->tv_sec) + (double)(t1->tv_nsec - t0->tv_nsec) / 1e9;
}

/* --keys N: RSA key pairs per second on one thread. */
static int bench_keys(long n)
{
    struct timespec t0, t1;
    struct wh_error err = {0};
    double secs;
    long i;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < n; i++) {
        char *priv = NULL, *pub = NULL;

        if (sshkey_generate(&priv, &pub, &err) < 0) {
            fprintf(stderr, "bench_admission: sshkeys_generate: %s\n", err.msg);
            return 1;
        }
        free(priv);
        free(pub);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = bench_seconds(&t0, &t1);
    printf("keys=%ld seconds=%.3f keys_per_second=%.1f\n", n, secs, (double)n / secs);
    return 0;
}

int main(int argc, char **argv)
{
    struct cache *cache = cache_create();
    static struct bench_bodies bodies;
    struct mutate_options opt = {.lookup_failure = LOOKUP_FAILURE_DENY};
    struct jobsource src = {.get = bench_job_get,
                            .diagnose = bench_job_diagnose,
                            .job_memo = bench_job_memo,
                            .userdata = cache};
    struct timespec t0, t1;
    long n, failed, patched = 0;
    double secs;
    size_t i;

    if (argc == 3 && strcmp(argv[1], "--keys") == 0 && (n = strtol(argv[2], NULL, 10)) > 0)
        return bench_keys(n);
    if (argc != 4 || (n = strtol(argv[3], NULL, 10)) <= 0) {
        fprintf(stderr,
                "usage: bench_admission JOBS.json BODIES.jsonl N\n"
                "       bench_admission --keys N\n");
        return 2;
    }
    if (cache == NULL) {
        fprintf(stderr, "bench_admission: out of memory\n");
        return 1;
    }
    if (bench_load_jobs(argv[1], cache) < 0 || bench_load_bodies(argv[2], &bodies) < 0)
        return 1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    failed = bench_loop(&bodies, &src, &opt, n, &patched);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = bench_seconds(&t0, &t1);
    printf("admissions=%ld patched=%ld failed=%ld seconds=%.3f ns_per_admission=%.0f\n", n, patched,
           failed, secs, secs * 1e9 / (double)n);
    for (i = 0; i < bodies.n; i++)
        free(bodies.text[i]);
    cache_destroy(cache);
    return failed == 0 ? 0 : 1;
}
