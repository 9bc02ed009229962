/*
 * metrics.c - see metrics.h. Lock-free recording with C11 atomics; rendering
 * reads each atomic once (a scrape is a consistent-enough snapshot, as with
 * every Prometheus client library).
 */
#include "webhook/metrics.h"

#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/metric.h"
#include "certs/certwatch.h"
#include "certs/sshkey.h"
#include "plugins/objects.h"
#include "plugins/plugin.h"
#include "webhook/commands.h"
#include "webhook/version.h"

/* Admission latency buckets: 0.1 ms to 10 s (issue 4). */
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
}

char *metrics_render(metric_collect_fn collect, void *userdata, size_t *len_out)
{
    const metric_collect_fn fns[] = {render_own, collect};
    void *const uds[] = {NULL, userdata};

    return metric_render(fns, uds, 2, len_out);
}
