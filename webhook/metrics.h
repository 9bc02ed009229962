/*
 * metrics.h - the catalogue of the process's Prometheus metrics: every family's
 * name, type and help text, rendered with base/metric.h.
 *
 * The admission side's counters and histogram are kept here (C11 atomics: lock-free
 * and safe from any thread). Values that lower layers measure are owned by them
 * (certs/certwatch.h, certs/sshkey.h, plugins/objects.h) and read here at scrape
 * time; values of running objects (cache size, leader status, ...) come through the
 * collect callback given to metrics_render.
 */
#ifndef WH_METRICS_H
#define WH_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/metric.h"

/* What one admission came to (the outcome label of webhook_admission_requests_total). */
enum metrics_outcome {
    METRICS_PATCHED = 0,   /* allowed with a non-empty patch */
    METRICS_UNCHANGED = 1, /* allowed without a patch */
    METRICS_DENIED = 2,    /* allowed: false */
    METRICS_ERROR = 3,     /* not an AdmissionReview answer (HTTP 4xx/5xx) */
};

/** Record one admission request: HTTP status sent, outcome, duration in seconds. */
void metrics_admission(int http_status, enum metrics_outcome outcome, double seconds);

/** Requests being served now: +1 when one starts, -1 when it ends. */
void metrics_inflight_add(int delta);

/** An admission with a patch in which plugin index k (plugin_registry order) was enabled. */
void metrics_plugin_patch(size_t k);

/** n warnings were sent in one AdmissionResponse. */
void metrics_warnings(unsigned n);

/**
 * Render every family of the catalogue (this module's values and those other
 * modules own: certs/certwatch.h, certs/sshkey.h, plugins/objects.h), then
 * whatever collect writes (may be NULL; module-owned values read at scrape time).
 * @param[out] len_out  length of the text
 * @return malloc'd text (free()), NULL on ENOMEM.
 */
char *metrics_render(metric_collect_fn collect, void *userdata, size_t *len_out);

/**
 * Write webhook_tls_cabundle_repairs_total (counter): caBundles found changed by hand
 * and repaired by the managed certificates (--cert-secret). The value is the keeper's
 * (controller/certkeeper.h, certkeeper_repairs), so the collect callback of the
 * process that runs one (webhook/serve.c) writes it; the name, type and help text
 * live here with the rest of the catalogue. Any thread (w is the caller's).
 */
void metrics_write_cabundle_repairs(struct metric_writer *w, unsigned long long repairs);

/** Zero every recorded value (tests only; not thread-safe against recorders). */
void metrics_reset(void);

#endif
