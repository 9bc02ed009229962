/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metric.c - see metric.h.
 */
#include "base/metric.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

void metric_counter_add(struct metric_counter *c, unsigned long long n)
{
    atomic_fetch_add_explicit(&c->n, n, memory_order_relaxed);
}

unsigned long long metric_counter_get(struct metric_counter *c)
{
    return atomic_load_explicit(&c->n, memory_order_relaxed);
}

void metric_gauge_set(struct metric_gauge *g, long long v)
{
    atomic_store_explicit(&g->v, v, memory_order_relaxed);
}

long long metric_gauge_get(struct metric_gauge *g)
{
    return atomic_load_explicit(&g->v, memory_order_relaxed);
}

void metric_seconds_add(struct metric_seconds *s, double seconds)
{
    if (seconds < 0)
        seconds = 0;
    atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sum_ns, (unsigned long long)(seconds * 1e9),
                              memory_order_relaxed);
}

unsigned long long metric_seconds_count(struct metric_seconds *s)
{
    return atomic_load_explicit(&s->count, memory_order_relaxed);
}

double metric_seconds_sum(struct metric_seconds *s)
{
    return (double)atomic_load_explicit(&s->sum_ns, memory_order_relaxed) / 1e9;
}

/* ---- rendering ---- */

struct metric_writer {
    struct buf out;      /* the exposition text; a failed append stays in out.rc */
    char last_name[128]; /* the family whose HELP/TYPE was written last */
};

static void appendf(struct metric_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void appendf(struct metric_writer *w, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = buf_vappendf(&w->out, fmt, ap);
    va_end(ap);
    (void)rc; /* kept in w->out.rc: metric_render gives NULL */
}

static void family(struct metric_writer *w, const char *name, const char *type, const char *help)
{
    if (strcmp(w->last_name, name) == 0)
        return;
    snprintf(w->last_name, sizeof(w->last_name), "%s", name);
    if (help != NULL)
        appendf(w, "# HELP %s %s\n", name, help);
    if (type != NULL)
        appendf(w, "# TYPE %s %s\n", name, type);
}

void metric_write(struct metric_writer *w, const char *name, const char *type, const char *help,
                  const char *labels, double value)
{
    family(w, name, type, help);
    if (labels != NULL && labels[0] != '\0')
        appendf(w, "%s{%s} %.17g\n", name, labels, value);
    else
        appendf(w, "%s %.17g\n", name, value);
}

void metric_write_histogram(struct metric_writer *w, const char *name, const char *help,
                            const double *bounds, const unsigned long *buckets, size_t n,
                            unsigned long count, double sum)
{
    unsigned long cumulative = 0;

    family(w, name, "histogram", help);
    for (size_t b = 0; b < n; b++) {
        cumulative += buckets[b];
        appendf(w, "%s_bucket{le=\"%g\"} %lu\n", name, bounds[b], cumulative);
    }
    appendf(w, "%s_bucket{le=\"+Inf\"} %lu\n", name, count);
    appendf(w, "%s_sum %.9f\n", name, sum);
    appendf(w, "%s_count %lu\n", name, count);
}

char *metric_render(const metric_collect_fn *collect, void *const *userdata, size_t n,
                    size_t *len_out)
{
    struct metric_writer w = {.last_name = ""};

    buf_init(&w.out, BUF_NO_MAX);
    for (size_t i = 0; i < n; i++)
        if (collect[i] != NULL)
            collect[i](userdata[i], &w);
    return buf_take(&w.out, len_out); /* NULL, and *len_out untouched, on ENOMEM */
}
