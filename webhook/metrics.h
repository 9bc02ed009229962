/* SPDX-License-Identifier: Apache-2.0 */
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
#include "controller/informer.h"
#include "controller/reconcile.h"

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

/* The values of the running objects (cache, informers, lookup, reconciler, leader)
 * that a scrape reads: serve's collect callback fills it and hands it to
 * metrics_write_running, so that their names too are in this catalogue. */
struct metrics_running {
    bool has_cache;
    size_t cache_jobs;                      /* webhook_cache_jobs */
    size_t ninformers;                      /* entries of informers */
    const struct informer_stats *informers; /* borrowed */
    const char *const *informer_namespaces; /* label of each, NULL: one, unlabelled */
    bool has_lookup;
    unsigned long namespace_not_served; /* webhook_admission_namespace_not_served_total */
    bool has_reconciler;
    struct reconcile_stats reconcile;    /* webhook_reconcile_* */
    bool has_keeper;                     /* --cert-secret: the certificate keeper */
    unsigned long long cabundle_repairs; /* webhook_tls_cabundle_repairs_total */
    bool leading;                        /* webhook_leader */
};

/**
 * Write the families of r (each only when its object exists, webhook_leader always).
 * Called from a collect callback with its writer; r and what it points to are borrowed.
 */
void metrics_write_running(struct metric_writer *w, const struct metrics_running *r);

/**
 * Render every family of the catalogue (this module's values and those other
 * modules own: certs/certwatch.h, certs/sshkey.h, plugins/objects.h), then
 * whatever collect writes (may be NULL; module-owned values read at scrape time).
 * @param[out] len_out  length of the text
 * @return malloc'd text (free()), NULL on ENOMEM.
 */
char *metrics_render(metric_collect_fn collect, void *userdata, size_t *len_out);

/** Zero every recorded value (tests only; not thread-safe against recorders). */
void metrics_reset(void);

#endif
