/*
 * lookup.c - Job lookup for admission: the Jobs cache, else one GET.
 *
 * Threads: lookup_job_get runs on MHD workers, concurrently. It reads the
 * immutable struct job_lookup, leases the Job from the cache (cache.h: the
 * read lock, then an atomic lease count; lookup_job_get copies it) and, on a
 * miss, calls the shareable k8s client (one CURL handle per thread). Nothing
 * here is written after start, so no locks of its own.
 */
#include "webhook/lookup.h"

#include <string.h>

#include "webhook/log.h"

static const char *job_uid(const json_t *job)
{
    const char *uid = json_string_value(json_object_get(json_object_get(job, "metadata"), "uid"));

    return uid != NULL ? uid : "";
}

/*
 * The cache part of a lookup: a lease on the cached Job when it may be used.
 * @return 0 with *lease_out; WH_ENOTFOUND (a miss or a stale uid: *why says which,
 *         the caller reads the API).
 */
static int lookup_cached(const struct job_lookup *l, const char *ns, const char *name,
                         const char *uid, struct cache_lease **lease_out, const char **why)
{
    struct cache_lease *lease = NULL;
    const char *cached;

    *lease_out = NULL;
    *why = "miss";
    if (l->cache == NULL)
        return WH_ENOTFOUND;
    if (cache_lend(l->cache, ns, name, &lease) != 0) {
        if (!cache_synced(l->cache))
            *why = "not-synced";
        return WH_ENOTFOUND;
    }
    cached = job_uid(cache_lease_job(lease));
    if (uid[0] == '\0' || cached[0] == '\0' || strcmp(cached, uid) == 0) {
        LOG_DEBUG("job lookup job=%s/%s source=cache", ns, name);
        *lease_out = lease;
        return 0;
    }
    /* D6: another incarnation of the Job, or the cache is behind: read again. */
    *why = "stale-uid";
    cache_lease_release(lease);
    return WH_ENOTFOUND;
}

int lookup_job_get(void *userdata, const char *ns, const char *name, const char *uid,
                   json_t **job_out, struct wh_error *err)
{
    const struct job_lookup *l = userdata;
    struct cache_lease *lease = NULL;
    const char *why;
    int rc;

    *job_out = NULL;
    if (uid == NULL)
        uid = "";
    rc = lookup_cached(l, ns, name, uid, &lease, &why);
    if (rc == 0) {
        /* A private copy for the caller, who may keep or change it. */
        *job_out = json_deep_copy(cache_lease_job(lease));
        cache_lease_release(lease);
        return *job_out != NULL ? 0 : wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    LOG_DEBUG("job lookup job=%s/%s source=api reason=%s", ns, name, why);
    return k8s_get_job(l->client, ns, name, l->timeout_ms, job_out, err);
}

int lookup_job_lend(void *userdata, const char *ns, const char *name, const char *uid,
                    const json_t **job_out, void **hold_out, struct wh_error *err)
{
    const struct job_lookup *l = userdata;
    struct cache_lease *lease = NULL;
    json_t *job = NULL;
    const char *why;
    int rc;

    *job_out = NULL;
    *hold_out = NULL;
    if (uid == NULL)
        uid = "";
    rc = lookup_cached(l, ns, name, uid, &lease, &why);
    if (rc != 0) {
        LOG_DEBUG("job lookup job=%s/%s source=api reason=%s", ns, name, why);
        rc = k8s_get_job(l->client, ns, name, l->timeout_ms, &job, err);
        if (rc < 0)
            return rc;
        lease = cache_lease_wrap(job);
        job = NULL;  /* now owned by the lease (released by it on ENOMEM) */
        if (lease == NULL)
            return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    *job_out = cache_lease_job(lease);
    *hold_out = lease;
    return 0;
}

void lookup_job_put(void *userdata, void *hold)
{
    (void)userdata;
    cache_lease_release(hold);
}

struct job_source lookup_job_source(struct job_lookup *l)
{
    struct job_source src = {
        .get = lookup_job_get, .userdata = l, .lend = lookup_job_lend, .put = lookup_job_put,
    };

    return src;
}
