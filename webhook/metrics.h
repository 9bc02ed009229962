/*
 * metrics.h - Prometheus metrics of the process, text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/).
 *
 * Counters and histograms are process-wide C11 atomics: recording is lock-free
 * and safe from any thread (MHD workers, reconcile workers, informer). Values
 * owned by other modules (cache size, leader status, ...) are read at scrape
 * time through the collect callback given to metrics_render.
 */
#ifndef WH_METRICS_H
#define WH_METRICS_H

#include <stdbool.h>
#include <stddef.h>

/* What one admission came to (issue 4, "Observability"). */
enum metrics_outcome {
    METRICS_PATCHED = 0,    /* allowed with a non-empty patch */
    METRICS_UNCHANGED = 1,  /* allowed without a patch */
    METRICS_DENIED = 2,     /* allowed: false */
    METRICS_ERROR = 3,      /* not an AdmissionReview answer (HTTP 4xx/5xx) */
};

/** Record one admission request: HTTP status sent, outcome, duration in seconds. */
void metrics_admission(int http_status, enum metrics_outcome outcome, double seconds);

/** Requests being served now: +1 when one starts, -1 when it ends. */
void metrics_inflight_add(int delta);

/** An admission with a patch in which plugin index k (plugin_registry order) was enabled. */
void metrics_plugin_patch(size_t k);

/** n warnings were sent in one AdmissionResponse. */
void metrics_warnings(unsigned n);

/** A TLS pair reload: ok (new pair in use) or refused (old pair kept). */
void metrics_tls_reload(bool ok);

/**
 * The serving certificate now in use expires at unix_seconds (its notAfter):
 * the gauge webhook_tls_certificate_expiry_timestamp_seconds, absent until the
 * first call (so with plain HTTP). Thread-safe (one atomic); the last call wins.
 */
void metrics_tls_cert_expiry(long long unix_seconds);

/**
 * One reconcile operation on an auxiliary object: kind "ConfigMap", "Secret",
 * "Service", "NetworkPolicy" (others count as "other"), op "ensure" or "delete",
 * and whether it succeeded (a foreign object left alone counts as success, D12).
 */
void metrics_reconcile_op(const char *kind, const char *op, bool ok);

/** One ssh key pair generated, taking seconds. */
void metrics_ssh_keygen(double seconds);

/* Writer handed to the collect callback for module-owned values. */
struct metrics_writer;

/**
 * Write one sample "name{labels} value". help and type ("gauge" or "counter") are
 * written once per name, before its first sample, when non-NULL. labels is the
 * text inside the braces (e.g. "kind=\"ConfigMap\"") or NULL.
 */
void metrics_write(struct metrics_writer *w, const char *name, const char *type,
                   const char *help, const char *labels, double value);

typedef void (*metrics_collect_fn)(void *userdata, struct metrics_writer *w);

/**
 * Render every metric, then whatever collect writes (may be NULL).
 * @param[out] len_out  length of the text
 * @return malloc'd text (free()), NULL on ENOMEM.
 */
char *metrics_render(metrics_collect_fn collect, void *userdata, size_t *len_out);

/** Zero every recorded value (tests only; not thread-safe against recorders). */
void metrics_reset(void);

#endif
