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

#include "plugins/plugin.h"
#include "webhook/commands.h"

/* Admission latency buckets: 0.1 ms to 10 s (issue 4). */
static const double latency_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                        0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                        1,      2.5,     5,      10};
#define NBUCKETS (sizeof(latency_bounds) / sizeof(latency_bounds[0]))
#define NOUTCOMES 4
#define NPLUGINS 8

/* HTTP statuses the server sends; anything else is counted as "other". */
static const int status_codes[] = {200, 400, 404, 405, 413, 415, 500, 503};
#define NSTATUS (sizeof(status_codes) / sizeof(status_codes[0]))

static const char *const outcome_names[NOUTCOMES] = {"patched", "unchanged", "denied", "error"};

static atomic_ulong requests[NSTATUS + 1][NOUTCOMES];
static atomic_ulong latency_buckets[NBUCKETS];    /* non-cumulative; summed at render */
static atomic_ulong latency_count;
static atomic_ullong latency_sum_ns;
static atomic_long inflight;
static atomic_ulong plugin_patches[NPLUGINS];
static atomic_ulong warnings_total;
static atomic_ulong tls_reloads[2];               /* [0] refused, [1] ok */
/* notAfter of the certificate served, Unix seconds; TLS_EXPIRY_UNSET until one is (plain
 * HTTP never sets it, so the gauge stays absent). One atomic: a scrape sees old or new. */
#define TLS_EXPIRY_UNSET LLONG_MIN
static atomic_llong tls_cert_expiry = TLS_EXPIRY_UNSET;
static const char *const op_kinds[] = {"ConfigMap", "Secret", "Service", "NetworkPolicy", "other"};
#define NKINDS (sizeof(op_kinds) / sizeof(op_kinds[0]))
static const char *const op_names[] = {"ensure", "delete"};
static atomic_ulong reconcile_ops[NKINDS][2][2];   /* [kind][op][ok] */
static atomic_ulong keygen_count;
static atomic_ullong keygen_sum_ns;

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

void metrics_tls_reload(bool ok)
{
    atomic_fetch_add_explicit(&tls_reloads[ok ? 1 : 0], 1, memory_order_relaxed);
}

void metrics_tls_cert_expiry(long long unix_seconds)
{
    atomic_store_explicit(&tls_cert_expiry, unix_seconds, memory_order_relaxed);
}

void metrics_reconcile_op(const char *kind, const char *op, bool ok)
{
    size_t k = NKINDS - 1;

    for (size_t i = 0; i + 1 < NKINDS; i++)
        if (strcmp(op_kinds[i], kind) == 0)
            k = i;
    atomic_fetch_add_explicit(&reconcile_ops[k][strcmp(op, "delete") == 0 ? 1 : 0][ok ? 1 : 0], 1,
                              memory_order_relaxed);
}

void metrics_ssh_keygen(double seconds)
{
    atomic_fetch_add_explicit(&keygen_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&keygen_sum_ns, (unsigned long long)(seconds * 1e9),
                              memory_order_relaxed);
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
    atomic_store(&tls_reloads[0], 0);
    atomic_store(&tls_reloads[1], 0);
    atomic_store(&tls_cert_expiry, TLS_EXPIRY_UNSET);
    atomic_store(&keygen_count, 0);
    atomic_store(&keygen_sum_ns, 0);
    for (size_t k = 0; k < NKINDS; k++)
        for (size_t o = 0; o < 2; o++)
            for (size_t r = 0; r < 2; r++)
                atomic_store(&reconcile_ops[k][o][r], 0);
}

/* ---- rendering ---- */

struct metrics_writer {
    char *buf;
    size_t len;
    size_t cap;
    bool oom;
    char last_name[128];   /* the family whose HELP/TYPE was written last */
};

static void appendf(struct metrics_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void appendf(struct metrics_writer *w, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (w->oom)
        return;
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(w->buf + w->len, w->cap - w->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            w->oom = true;
            return;
        }
        if ((size_t)n < w->cap - w->len) {
            w->len += (size_t)n;
            return;
        }
        {
            size_t cap = (w->cap + (size_t)n + 1) * 2;
            char *grown = realloc(w->buf, cap);

            if (grown == NULL) {
                w->oom = true;
                return;
            }
            w->buf = grown;
            w->cap = cap;
        }
    }
}

static void family(struct metrics_writer *w, const char *name, const char *type,
                   const char *help)
{
    if (strcmp(w->last_name, name) == 0)
        return;
    snprintf(w->last_name, sizeof(w->last_name), "%s", name);
    if (help != NULL)
        appendf(w, "# HELP %s %s\n", name, help);
    if (type != NULL)
        appendf(w, "# TYPE %s %s\n", name, type);
}

void metrics_write(struct metrics_writer *w, const char *name, const char *type,
                   const char *help, const char *labels, double value)
{
    family(w, name, type, help);
    if (labels != NULL && labels[0] != '\0')
        appendf(w, "%s{%s} %.17g\n", name, labels, value);
    else
        appendf(w, "%s %.17g\n", name, value);
}

static void render_own(struct metrics_writer *w)
{
    unsigned long cumulative = 0;
    char labels[96];

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
            metrics_write(w, "webhook_admission_requests_total", "counter",
                          "Admission requests by HTTP code and outcome.", labels, (double)v);
        }
    }
    family(w, "webhook_admission_duration_seconds", "histogram",
           "Time from the last request byte to the response, seconds.");
    for (size_t b = 0; b < NBUCKETS; b++) {
        cumulative += atomic_load_explicit(&latency_buckets[b], memory_order_relaxed);
        appendf(w, "webhook_admission_duration_seconds_bucket{le=\"%g\"} %lu\n", latency_bounds[b],
                cumulative);
    }
    appendf(w, "webhook_admission_duration_seconds_bucket{le=\"+Inf\"} %lu\n",
            atomic_load_explicit(&latency_count, memory_order_relaxed));
    appendf(w, "webhook_admission_duration_seconds_sum %.9f\n",
            (double)atomic_load_explicit(&latency_sum_ns, memory_order_relaxed) / 1e9);
    appendf(w, "webhook_admission_duration_seconds_count %lu\n",
            atomic_load_explicit(&latency_count, memory_order_relaxed));
    metrics_write(w, "webhook_admission_in_flight", "gauge", "Admission requests being served.",
                  NULL, (double)atomic_load_explicit(&inflight, memory_order_relaxed));
    for (size_t k = 0; k < plugin_registry_len && k < NPLUGINS; k++) {
        snprintf(labels, sizeof(labels), "plugin=\"%s\"", plugin_registry[k]->name);
        metrics_write(w, "webhook_plugin_patches_total", "counter",
                      "Patched admissions in which the plugin was enabled.", labels,
                      (double)atomic_load_explicit(&plugin_patches[k], memory_order_relaxed));
    }
    metrics_write(w, "webhook_admission_warnings_total", "counter",
                  "Warnings sent in AdmissionResponses.", NULL,
                  (double)atomic_load_explicit(&warnings_total, memory_order_relaxed));
    metrics_write(w, "webhook_tls_reloads_total", "counter", "TLS pair reloads by result.",
                  "result=\"ok\"", (double)atomic_load(&tls_reloads[1]));
    metrics_write(w, "webhook_tls_reloads_total", NULL, NULL, "result=\"refused\"",
                  (double)atomic_load(&tls_reloads[0]));
    {
        long long not_after = atomic_load_explicit(&tls_cert_expiry, memory_order_relaxed);

        /* %.17g prints every integer below 2^53 exactly: no exponent for a date. */
        if (not_after != TLS_EXPIRY_UNSET)
            metrics_write(w, "webhook_tls_certificate_expiry_timestamp_seconds", "gauge",
                          "notAfter of the serving certificate in use, Unix seconds.", NULL,
                          (double)not_after);
    }
    for (size_t k = 0; k < NKINDS; k++) {
        for (size_t o = 0; o < 2; o++) {
            for (size_t r = 0; r < 2; r++) {
                snprintf(labels, sizeof(labels), "kind=\"%s\",op=\"%s\",result=\"%s\"",
                         op_kinds[k], op_names[o], r ? "ok" : "error");
                metrics_write(w, "webhook_reconcile_operations_total", "counter",
                              "Ensure and delete operations on auxiliary objects by kind and result.",
                              labels, (double)atomic_load(&reconcile_ops[k][o][r]));
            }
        }
    }
    metrics_write(w, "webhook_ssh_keygen_seconds_total", "counter",
                  "Time spent generating ssh key pairs, seconds.", NULL,
                  (double)atomic_load(&keygen_sum_ns) / 1e9);
    metrics_write(w, "webhook_ssh_keygen_total", "counter", "ssh key pairs generated.", NULL,
                  (double)atomic_load(&keygen_count));
    metrics_write(w, "webhook_build_info", "gauge", "Build information; always 1.",
                  "version=\"" WH_VERSION "\"", 1);
}

char *metrics_render(metrics_collect_fn collect, void *userdata, size_t *len_out)
{
    struct metrics_writer w = {.buf = NULL, .len = 0, .cap = 0, .oom = false, .last_name = ""};

    w.cap = 8192;
    w.buf = malloc(w.cap);
    if (w.buf == NULL)
        return NULL;
    w.buf[0] = '\0';
    render_own(&w);
    if (collect != NULL)
        collect(userdata, &w);
    if (w.oom) {
        free(w.buf);
        return NULL;
    }
    *len_out = w.len;
    return w.buf;
}
