/* SPDX-License-Identifier: Apache-2.0 */
/*
 * job.c - read-only views of a Volcano Job (docs/plugins.md §1.3, §3.6).
 * Pure functions over a borrowed, immutable Job; thread-safe.
 */
#include "plugins/job.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/jsonobj.h"

static const char *str_at(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_member(obj, key));

    return s != NULL ? s : "";
}

const char *job_name(const json_t *job)
{
    return str_at(json_member(job, "metadata"), "name");
}

const char *job_namespace(const json_t *job)
{
    return str_at(json_member(job, "metadata"), "namespace");
}

const char *job_uid(const json_t *job)
{
    return str_at(json_member(job, "metadata"), "uid");
}

const json_t *job_tasks(const json_t *job)
{
    const json_t *tasks = json_member(json_member(job, "spec"), "tasks");

    return json_is_array(tasks) ? tasks : NULL;
}

const char *job_task_name(const json_t *task)
{
    return str_at(task, "name");
}

const json_t *job_find_task(const json_t *job, const char *task_name)
{
    const json_t *tasks = job_tasks(job);
    size_t i;
    const json_t *task;

    json_array_foreach(tasks, i, task) {
        if (strcmp(job_task_name(task), task_name) == 0)
            return task;
    }
    return NULL;
}

int64_t job_task_replicas(const json_t *task)
{
    const json_t *r = json_member(task, "replicas");

    return json_is_integer(r) ? (int64_t)json_integer_value(r) : 0;
}

int64_t job_replicas_of(const json_t *job, const char *task_name)
{
    const json_t *task = job_find_task(job, task_name);

    return task != NULL ? job_task_replicas(task) : 0;
}

static const json_t *template_spec(const json_t *task)
{
    return json_member(json_member(task, "template"), "spec");
}

const char *job_task_hostname(const json_t *task)
{
    return str_at(template_spec(task), "hostname");
}

const char *job_task_subdomain(const json_t *task)
{
    return str_at(template_spec(task), "subdomain");
}

int job_task_domain_append(struct buf *b, const json_t *job, const json_t *task, int64_t i)
{
    const json_t *spec = template_spec(task);
    const char *host = str_at(spec, "hostname");
    const char *domain = str_at(spec, "subdomain");
    const char *name = job_name(job);

    if (domain[0] == '\0')
        domain = name;
    if (host[0] != '\0' ? buf_append_str(b, host) < 0
                        : buf_append_str(b, name) < 0 || buf_append(b, "-", 1) < 0
                || buf_append_str(b, job_task_name(task)) < 0 || buf_append(b, "-", 1) < 0
                || buf_append_decimal(b, (long long)i) < 0)
        return b->rc;
    if (buf_append(b, ".", 1) < 0 || buf_append_str(b, domain) < 0)
        return b->rc;
    return 0;
}

char *job_task_domain(const json_t *job, const json_t *task, int64_t i)
{
    struct buf b;

    buf_init(&b, BUF_NO_MAX);
    if (job_task_domain_append(&b, job, task, i) < 0) {
        buf_dispose(&b);
        return NULL;
    }
    return buf_take(&b, NULL);
}

int job_task_hosts(char **out, const json_t *job, const json_t *task, const char *sep,
                   int64_t *count)
{
    int64_t replicas = job_task_replicas(task);
    int64_t n = 0;
    struct buf b;
    int rc = 0;

    *out = NULL;
    buf_init(&b, JOB_HOSTS_MAX_BYTES);
    for (int64_t i = 0; i < replicas; i++) {
        char *dom = job_task_domain(job, task, i);

        if (dom == NULL) {
            rc = WH_ENOMEM;
            goto out;
        }
        if (n > 0)
            rc = buf_append_str(&b, sep);
        if (rc == 0)
            rc = buf_append_str(&b, dom);
        free(dom);
        if (rc < 0)
            goto out; /* WH_ETOOBIG past JOB_HOSTS_MAX_BYTES, or WH_ENOMEM */
        n++;
        /* A template hostname names every replica alike: one entry (docs/plugins.md §3.6). */
        if (job_task_hostname(task)[0] != '\0')
            break;
    }
    *out = buf_take(&b, NULL);
    if (*out == NULL) {
        rc = WH_ENOMEM;
        goto out;
    }
    if (count != NULL)
        *count = n;
out:
    buf_dispose(&b);
    return rc;
}

static void map_name(char *dst, size_t dstlen, const char *src, int upper)
{
    size_t i = 0;

    if (dstlen == 0)
        return;
    for (; src[i] != '\0' && i + 1 < dstlen; i++) {
        char ch = src[i] == '-' ? '_' : src[i];

        dst[i] = upper ? (char)toupper((unsigned char)ch) : ch;
    }
    dst[i] = '\0';
}

void job_name_upper(char *dst, size_t dstlen, const char *task_name)
{
    map_name(dst, dstlen, task_name, 1);
}

void job_name_underscore(char *dst, size_t dstlen, const char *task_name)
{
    map_name(dst, dstlen, task_name, 0);
}

int job_parse_index(const char *s, int64_t *out)
{
    const char *p = s;
    char *end = NULL;
    long long v;

    /* strconv.Atoi: optional sign, then decimal digits only (no spaces, no prefixes). */
    if (*p == '+' || *p == '-')
        p++;
    if (*p == '\0')
        return WH_EINVAL;
    for (const char *q = p; *q != '\0'; q++)
        if (*q < '0' || *q > '9')
            return WH_EINVAL;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return WH_EINVAL;
    *out = v;
    return 0;
}
