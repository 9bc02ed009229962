/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.c - see metrics.h. Lock-free recording with C11 atomics; rendering
 * reads each atomic once (a scrape is a consistent-enough snapshot, as with
 * every Prometheus client library). The process_* families are read from /proc at
 * each scrape (metrics_internal.h), on the scraping thread.
 */
#include "webhook/metrics.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/metric.h"
#include "certs/certwatch.h"
#include "certs/sshkey.h"
#include "plugins/objects.h"
#include "plugins/plugin.h"
#include "webhook/commands.h"
#include "webhook/metrics_internal.h"
#include "webhook/server.h"
#include "webhook/version.h"

/* Admission latency buckets: 0.1 ms to 10 s, the webhook configuration's timeoutSeconds. */
static const double latency_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                        0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
#define NBUCKETS  (sizeof(latency_bounds) / sizeof(latency_bounds[0]))
#define NOUTCOMES 4
#define NPLUGINS  8

/* HTTP statuses the server sends; anything else is counted as "other". */
static const int status_codes[] = {200, 400, 404, 405, 413, 415, 500, 503};
#define NSTATUS (sizeof(status_codes) / sizeof(status_codes[0]))

static const char *const outcome_names[NOUTCOMES] = {"patched", "unchanged", "denied", "error"};

static atomic_ulong requests[NSTATUS + 1][NOUTCOMES];
static atomic_ulong latency_buckets[NBUCKETS]; /* non-cumulative; summed at render */
static atomic_ulong latency_count;
static atomic_ullong latency_sum_ns;
static atomic_long inflight;
static atomic_ulong plugin_patches[NPLUGINS];
static atomic_ulong warnings_total;
static const char *const op_names[] = {"ensure", "delete"};

void metrics_admission(int http_status, enum metrics_outcome outcome, double seconds)
{
    size_t s = NSTATUS;
    size_t b = 0;

    for (size_t i = 0; i < NSTATUS; i++)
        if (status_codes[i] == http_status)
            s = i;
    if ((unsigned)outcome >= NOUTCOMES)
        outcome = METRICS_ERROR;
    atomic_fetch_add_explicit(&requests[s][outcome], 1, memory_order_relaxed);
    if (seconds < 0)
        seconds = 0;
    while (b < NBUCKETS && seconds > latency_bounds[b])
        b++;
    if (b < NBUCKETS)
        atomic_fetch_add_explicit(&latency_buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&latency_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&latency_sum_ns, (unsigned long long)(seconds * 1e9),
                              memory_order_relaxed);
}

void metrics_inflight_add(int delta)
{
    atomic_fetch_add_explicit(&inflight, delta, memory_order_relaxed);
}

void metrics_plugin_patch(size_t k)
{
    if (k < NPLUGINS)
        atomic_fetch_add_explicit(&plugin_patches[k], 1, memory_order_relaxed);
}

void metrics_warnings(unsigned n)
{
    atomic_fetch_add_explicit(&warnings_total, n, memory_order_relaxed);
}

void metrics_reset(void)
{
    for (size_t s = 0; s <= NSTATUS; s++)
        for (size_t o = 0; o < NOUTCOMES; o++)
            atomic_store(&requests[s][o], 0);
    for (size_t b = 0; b < NBUCKETS; b++)
        atomic_store(&latency_buckets[b], 0);
    atomic_store(&latency_count, 0);
    atomic_store(&latency_sum_ns, 0);
    atomic_store(&inflight, 0);
    for (size_t k = 0; k < NPLUGINS; k++)
        atomic_store(&plugin_patches[k], 0);
    atomic_store(&warnings_total, 0);
    /* The values other modules own (their headers). */
    atomic_store(&certwatch_metrics.reloads_ok.n, 0);
    atomic_store(&certwatch_metrics.reloads_refused.n, 0);
    atomic_store(&certwatch_metrics.cert_expiry.v, METRIC_GAUGE_UNSET);
    atomic_store(&sshkey_keygen.count, 0);
    atomic_store(&sshkey_keygen.sum_ns, 0);
    for (size_t k = 0; k < OBJECTS_METRIC_KINDS; k++)
        for (size_t o = 0; o < 2; o++)
            for (size_t r = 0; r < 2; r++)
                atomic_store(&objects_ops[k][o][r].n, 0);
    atomic_store(&server_metrics.evicted.n, 0);
    atomic_store(&server_metrics.body_bytes, 0);
    for (size_t r = 0; r < SERVER_REFUSED_N; r++)
        atomic_store(&server_metrics.handshakes_refused[r].n, 0);
}

/* ---- process metrics (metrics_internal.h) ---- */

int metrics_process_parse_stat(struct metrics_process *out, const char *stat, long ticks,
                               long page_size, double boot_time, struct wh_error *err)
{
    /* proc(5) field numbers: 14 utime, 15 stime, 22 starttime (ticks), 23 vsize (bytes),
     * 24 rss (pages). Field 3, the state, is one letter. */
    unsigned long long field[25] = {0};
    const char *p = strrchr(stat, ')');

    if (p == NULL || ticks <= 0 || page_size <= 0)
        return wh_error_set(err, WH_EINVAL, "/proc/self/stat: no \"(comm)\" field");
    p++;
    for (int n = 3; n <= 24; n++) {
        char *end = NULL;

        while (*p == ' ')
            p++;
        if (*p == '\0' || *p == '\n')
            return wh_error_set(err, WH_EINVAL, "/proc/self/stat: %d fields, want 24", n - 1);
        if (n == 3) {
            p++;
            continue;
        }
        errno = 0;
        field[n] = strtoull(p, &end, 10); /* signed fields (priority, nice) are not used */
        if (end == p || errno != 0 || (*end != ' ' && *end != '\n' && *end != '\0'))
            return wh_error_set(err, WH_EINVAL, "/proc/self/stat: field %d is not a number", n);
        p = end;
    }
    out->cpu_seconds = (double)(field[14] + field[15]) / (double)ticks;
    out->start_time_seconds = boot_time + (double)field[22] / (double)ticks;
    out->virtual_bytes = field[23];
    out->resident_bytes = field[24] * (unsigned long long)page_size;
    return 0;
}

/* btime of /proc/stat: the boot time, Unix seconds. */
static int read_boot_time(double *out, struct wh_error *err)
{
    FILE *f = fopen("/proc/stat", "r");
    char *line = NULL;
    size_t cap = 0;
    int rc = WH_ERROR;

    if (f == NULL)
        return wh_error_set(err, WH_ERROR, "/proc/stat: %s", strerror(errno));
    /* line by line: the intr line before btime can be long on a machine with many IRQs */
    while (rc < 0 && getline(&line, &cap, f) >= 0) {
        unsigned long long v;

        if (sscanf(line, "btime %llu", &v) == 1) {
            *out = (double)v;
            rc = 0;
        }
    }
    free(line);
    fclose(f);
    if (rc < 0)
        return wh_error_set(err, WH_ERROR, "/proc/stat: no btime line");
    return 0;
}

int metrics_process_read(struct metrics_process *out, struct wh_error *err)
{
    struct metrics_process m = {0};
    char stat[2048]; /* 52 fields, comm at most 64 bytes: well under this */
    struct rlimit lim;
    struct dirent *e;
    double boot_time = 0;
    size_t n;
    FILE *f;
    DIR *d;
    int rc;

    f = fopen("/proc/self/stat", "r");
    if (f == NULL)
        return wh_error_set(err, WH_ERROR, "/proc/self/stat: %s", strerror(errno));
    n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    rc = read_boot_time(&boot_time, err);
    if (rc < 0)
        return rc;
    rc = metrics_process_parse_stat(&m, stat, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE),
                                    boot_time, err);
    if (rc < 0)
        return rc;
    d = opendir("/proc/self/fd");
    if (d == NULL)
        return wh_error_set(err, WH_ERROR, "/proc/self/fd: %s", strerror(errno));
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            m.open_fds++;
    closedir(d);
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0)
        return wh_error_set(err, WH_ERROR, "getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
    m.max_fds = (unsigned long long)lim.rlim_cur;
    *out = m;
    return 0;
}

/* The process_* families; none when /proc cannot be read (nothing to report then). */
static void render_process(struct metric_writer *w)
{
    struct metrics_process m;

    if (metrics_process_read(&m, NULL) < 0)
        return;
    metric_write(w, "process_cpu_seconds_total", "counter",
                 "Total user and system CPU time spent in seconds.", NULL, m.cpu_seconds);
    metric_write(w, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
                 NULL, (double)m.resident_bytes);
    metric_write(w, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", NULL,
                 (double)m.virtual_bytes);
    metric_write(w, "process_open_fds", "gauge", "Number of open file descriptors.", NULL,
                 (double)m.open_fds);
    metric_write(w, "process_max_fds", "gauge", "Maximum number of open file descriptors.", NULL,
                 (double)m.max_fds);
    metric_write(w, "process_start_time_seconds", "gauge",
                 "Start time of the process since unix epoch in seconds.", NULL,
                 m.start_time_seconds);
}

/* ---- the catalogue: every family this process exposes ---- */

static void render_own(void *userdata, struct metric_writer *w)
{
    unsigned long buckets[NBUCKETS];
    char labels[96];

    (void)userdata;

    for (size_t s = 0; s <= NSTATUS; s++) {
        for (size_t o = 0; o < NOUTCOMES; o++) {
            unsigned long v = atomic_load_explicit(&requests[s][o], memory_order_relaxed);

            if (s == NSTATUS && v == 0)
                continue;
            if (s == NSTATUS)
                snprintf(labels, sizeof(labels), "code=\"other\",outcome=\"%s\"", outcome_names[o]);
            else
                snprintf(labels, sizeof(labels), "code=\"%d\",outcome=\"%s\"", status_codes[s],
                         outcome_names[o]);
            metric_write(w, "webhook_admission_requests_total", "counter",
                         "Admission requests by HTTP code and outcome.", labels, (double)v);
        }
    }
    for (size_t b = 0; b < NBUCKETS; b++)
        buckets[b] = atomic_load_explicit(&latency_buckets[b], memory_order_relaxed);
    metric_write_histogram(
        w, "webhook_admission_duration_seconds",
        "Time from the last request byte to the response, seconds.", latency_bounds, buckets,
        NBUCKETS, atomic_load_explicit(&latency_count, memory_order_relaxed),
        (double)atomic_load_explicit(&latency_sum_ns, memory_order_relaxed) / 1e9);
    metric_write(w, "webhook_admission_in_flight", "gauge", "Admission requests being served.",
                 NULL, (double)atomic_load_explicit(&inflight, memory_order_relaxed));
    for (size_t k = 0; k < plugin_registry_len && k < NPLUGINS; k++) {
        snprintf(labels, sizeof(labels), "plugin=\"%s\"", plugin_registry[k]->name);
        metric_write(w, "webhook_plugin_patches_total", "counter",
                     "Patched admissions in which the plugin was enabled.", labels,
                     (double)atomic_load_explicit(&plugin_patches[k], memory_order_relaxed));
    }
    metric_write(w, "webhook_admission_warnings_total", "counter",
                 "Warnings sent in AdmissionResponses.", NULL,
                 (double)atomic_load_explicit(&warnings_total, memory_order_relaxed));
    metric_write(w, "webhook_http_connections_evicted_total", "counter",
                 "Connections closed to make room for new ones near --max-connections (idle "
                 "or not yet sent a whole request).",
                 NULL, (double)metric_counter_get(&server_metrics.evicted));
    metric_write(w, "webhook_http_body_bytes_in_flight", "gauge",
                 "Request body bytes held in memory now, of --max-body-bytes-in-flight.", NULL,
                 (double)atomic_load(&server_metrics.body_bytes));
    for (size_t r = 0; r < SERVER_REFUSED_N; r++) {
        snprintf(labels, sizeof(labels), "reason=\"%s\"", server_refusal_name(r));
        metric_write(w, "webhook_tls_handshakes_refused_total", "counter",
                     "TLS handshakes that failed, by reason.", labels,
                     (double)metric_counter_get(&server_metrics.handshakes_refused[r]));
    }
    metric_write(w, "webhook_tls_reloads_total", "counter", "TLS pair reloads by result.",
                 "result=\"ok\"", (double)metric_counter_get(&certwatch_metrics.reloads_ok));
    metric_write(w, "webhook_tls_reloads_total", NULL, NULL, "result=\"refused\"",
                 (double)metric_counter_get(&certwatch_metrics.reloads_refused));
    {
        long long not_after = metric_gauge_get(&certwatch_metrics.cert_expiry);

        /* %.17g prints every integer below 2^53 exactly: no exponent for a date. */
        if (not_after != METRIC_GAUGE_UNSET)
            metric_write(w, "webhook_tls_certificate_expiry_timestamp_seconds", "gauge",
                         "notAfter of the serving certificate in use, Unix seconds.", NULL,
                         (double)not_after);
    }
    for (size_t k = 0; k < OBJECTS_METRIC_KINDS; k++) {
        for (size_t o = 0; o < 2; o++) {
            for (size_t r = 0; r < 2; r++) {
                snprintf(labels, sizeof(labels), "kind=\"%s\",op=\"%s\",result=\"%s\"",
                         objects_metric_kinds[k], op_names[o], r ? "ok" : "error");
                metric_write(
                    w, "webhook_reconcile_operations_total", "counter",
                    "Ensure and delete operations on auxiliary objects by kind and result.", labels,
                    (double)metric_counter_get(&objects_ops[k][o][r]));
            }
        }
    }
    metric_write(w, "webhook_ssh_keygen_seconds_total", "counter",
                 "Time spent generating ssh key pairs, seconds.", NULL,
                 metric_seconds_sum(&sshkey_keygen));
    metric_write(w, "webhook_ssh_keygen_total", "counter", "ssh key pairs generated.", NULL,
                 (double)metric_seconds_count(&sshkey_keygen));
    /* version.h's values hold only [A-Za-z0-9._+-] (Makefile): nothing to escape */
    snprintf(labels, sizeof(labels), "version=\"%s\",commit=\"%s\"", WH_VERSION, version_commit);
    metric_write(w, "webhook_build_info", "gauge", "Build information; always 1.", labels, 1);
    render_process(w);
}

/* The labels of informer k's series: none for the one informer of every namespace, else
 * namespace="NS" (names are DNS-1123 labels: nothing to escape). */
static const char *informer_labels(const struct metrics_running *r, size_t k, char *buf, size_t len)
{
    if (r->informer_namespaces == NULL)
        return NULL;
    snprintf(buf, len, "namespace=\"%s\"", r->informer_namespaces[k]);
    return buf;
}

/* A family's series follow each other (base/metric.c writes HELP and TYPE once): one loop
 * over the informers per family. */
static void write_informers(struct metric_writer *w, const struct metrics_running *r)
{
    const struct informer_stats *st = r->informers;
    char lb[96];

    for (size_t k = 0; k < r->ninformers; k++)
        metric_write(w, "webhook_informer_lists_total", "counter",
                     "Completed LISTs of Volcano Jobs (start-up and relists).",
                     informer_labels(r, k, lb, sizeof(lb)), (double)st[k].lists);
    for (size_t k = 0; k < r->ninformers; k++)
        metric_write(w, "webhook_informer_watches_total", "counter",
                     "WATCH requests of Volcano Jobs started.",
                     informer_labels(r, k, lb, sizeof(lb)), (double)st[k].watches);
    for (size_t k = 0; k < r->ninformers; k++)
        metric_write(w, "webhook_informer_relists_total", "counter",
                     "LISTs caused by 410 Gone (watch history expired).",
                     informer_labels(r, k, lb, sizeof(lb)), (double)st[k].relists_gone);
    for (size_t k = 0; k < r->ninformers; k++)
        metric_write(w, "webhook_informer_errors_total", "counter",
                     "Failed LIST or WATCH attempts (retried with backoff).",
                     informer_labels(r, k, lb, sizeof(lb)), (double)st[k].errors);
    for (size_t k = 0; k < r->ninformers; k++)
        metric_write(w, "webhook_watch_restarts_total", "counter",
                     "WATCHes of Volcano Jobs started after the first one.",
                     informer_labels(r, k, lb, sizeof(lb)),
                     (double)(st[k].watches > 0 ? st[k].watches - 1 : 0));
}

void metrics_write_running(struct metric_writer *w, const struct metrics_running *r)
{
    if (r->has_cache)
        metric_write(w, "webhook_cache_jobs", "gauge", "Volcano Jobs in the informer cache.", NULL,
                     (double)r->cache_jobs);
    write_informers(w, r);
    if (r->has_lookup)
        metric_write(w, "webhook_admission_namespace_not_served_total", "counter",
                     "Pods of namespaces not served (--namespaces), allowed unpatched without "
                     "a lookup.",
                     NULL, (double)r->namespace_not_served);
    if (r->has_reconciler) {
        const struct reconcile_stats *st = &r->reconcile;

        metric_write(w, "webhook_reconcile_total", "counter",
                     "Job keys reconciled (job hooks run).", NULL, (double)st->reconciles);
        metric_write(w, "webhook_reconcile_errors_total", "counter",
                     "Failed job hook runs (retried with backoff).", NULL, (double)st->errors);
        metric_write(w, "webhook_reconcile_queue_length", "gauge",
                     "Job keys waiting to be reconciled.", NULL, (double)st->queue_len);
        metric_write(w, "webhook_reconcile_foreign_objects_total", "counter",
                     "Objects with a plugin's name that belong to someone else, left alone.", NULL,
                     (double)st->foreign);
    }
    if (r->has_keeper)
        metric_write(w, "webhook_tls_cabundle_repairs_total", "counter",
                     "caBundles of the webhook configurations found changed by hand and repaired "
                     "(--cert-secret).",
                     NULL, (double)r->cabundle_repairs);
    metric_write(w, "webhook_leader", "gauge",
                 "1 while this replica reconciles: it holds the Lease, or "
                 "--leader-elect=false; else 0.",
                 NULL, r->leading ? 1 : 0);
}

char *metrics_render(metric_collect_fn collect, void *userdata, size_t *len_out)
{
    const metric_collect_fn fns[] = {render_own, collect};
    void *const uds[] = {NULL, userdata};

    return metric_render(fns, uds, 2, len_out);
}
