/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metric.h - metric primitives and the Prometheus text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/).
 *
 * A module that measures something owns its values (a struct metric_counter, a
 * struct metric_gauge, ...) and records into them; the catalogue of names, help
 * texts and types is webhook/metrics.c, which reads every value at scrape time.
 * Recording is one relaxed C11 atomic: lock-free and safe from any thread. A
 * scrape reads each atomic once (a consistent-enough snapshot, as with every
 * Prometheus client library).
 */
#ifndef WH_BASE_METRIC_H
#define WH_BASE_METRIC_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* A monotonic count. Zero-initialised statics are ready to use. */
struct metric_counter {
    atomic_ullong n;
};

/** Add n to c. Thread-safe. */
void metric_counter_add(struct metric_counter *c, unsigned long long n);
/** The current count. */
unsigned long long metric_counter_get(struct metric_counter *c);

/* A value set from time to time; METRIC_GAUGE_UNSET until the first set (a gauge
 * that is unset is not exposed). Initialise statics with {.v = METRIC_GAUGE_UNSET}. */
#define METRIC_GAUGE_UNSET LLONG_MIN
struct metric_gauge {
    atomic_llong v;
};

/** Set g to v; the last call wins. Thread-safe. */
void metric_gauge_set(struct metric_gauge *g, long long v);
/** The current value, METRIC_GAUGE_UNSET when never set. */
long long metric_gauge_get(struct metric_gauge *g);

/* How many times something took how long: a count and a sum of seconds (kept in
 * nanoseconds, so that both are integers added atomically). */
struct metric_seconds {
    atomic_ullong count;
    atomic_ullong sum_ns;
};

/** Count one event that took seconds (< 0 counts as 0). Thread-safe. */
void metric_seconds_add(struct metric_seconds *s, double seconds);
/** The count of events. */
unsigned long long metric_seconds_count(struct metric_seconds *s);
/** The sum of their durations, seconds. */
double metric_seconds_sum(struct metric_seconds *s);

/* The text being rendered: handed to whoever writes samples. */
struct metric_writer;

/**
 * Write one sample "name{labels} value". help and type ("gauge", "counter") are
 * written once per family, before its first sample, when non-NULL. labels is the
 * text inside the braces (e.g. "kind=\"ConfigMap\"") or NULL. On ENOMEM the writer
 * remembers it and metric_render returns NULL.
 */
void metric_write(struct metric_writer *w, const char *name, const char *type, const char *help,
                  const char *labels, double value);

/**
 * Write a histogram family: name_bucket{le=...} for each of the n upper bounds
 * (bucket counts given non-cumulative, summed here), le="+Inf" = count, name_sum
 * (seconds) and name_count.
 */
void metric_write_histogram(struct metric_writer *w, const char *name, const char *help,
                            const double *bounds, const unsigned long *buckets, size_t n,
                            unsigned long count, double sum);

typedef void (*metric_collect_fn)(void *userdata, struct metric_writer *w);

/**
 * Render what each of the collect callbacks writes, in order (NULL entries are
 * skipped), into one text.
 * @param[out] len_out  length of the text
 * @return malloc'd text (free()), NULL on ENOMEM.
 */
char *metric_render(const metric_collect_fn *collect, void *const *userdata, size_t n,
                    size_t *len_out);

#endif
