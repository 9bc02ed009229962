/*
 * lookup.c - Job lookup for admission: the Jobs cache, else one GET.
 *
 * Threads: lookup_job_get runs on MHD workers, concurrently. It reads the
 * immutable struct job_lookup, reads the Job from the cache (cache.h: a private
 * tree per read) and, on a miss, calls the shareable k8s client (one CURL handle
 * per thread). Nothing here is written after start, so no locks of its own.
 */
#include "webhook/lookup.h"

#include <string.h>

#include "webhook/log.h"

static const char *job_uid(const json_t *job)
{
    const char *uid = json_string_value(json_object_get(json_object_get(job, "metadata"), "uid"));

    return uid != NULL ? uid : "";
}

int lookup_job_get(void *userdata, const char *ns, const char *name, const char *uid,
                   json_t **job_out, struct wh_error *err)
{
    const struct job_lookup *l = userdata;
    const char *why = "miss";
    json_t *job = NULL;
    int rc;

    *job_out = NULL;
    if (uid == NULL)
        uid = "";
    if (l->cache != NULL) {
        rc = cache_get(l->cache, ns, name, &job);
        if (rc == WH_ENOMEM)
            return wh_error_set(err, WH_ENOMEM, "out of memory");
        if (rc == 0) {
            const char *cached = job_uid(job);

            if (uid[0] == '\0' || cached[0] == '\0' || strcmp(cached, uid) == 0) {
                LOG_DEBUG("job lookup job=%s/%s source=cache", ns, name);
                *job_out = job;
                return 0;
            }
            /* D6: another incarnation of the Job, or the cache is behind: read again. */
            why = "stale-uid";
            json_decref(job);
        } else if (!cache_synced(l->cache)) {
            why = "not-synced";
        }
    }
    LOG_DEBUG("job lookup job=%s/%s source=api reason=%s", ns, name, why);
    return k8s_get_job(l->client, ns, name, l->timeout_ms, job_out, err);
}

struct job_source lookup_job_source(struct job_lookup *l)
{
    struct job_source src = {.get = lookup_job_get, .userdata = l};

    return src;
}
