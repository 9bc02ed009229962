/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jobpods.c - pods as Volcano's job controller builds them (docs/plugins.md §2). No state.
 */
#include "plugins/jobpods.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/jsonobj.h"
#include "plugins/job.h"

static json_t *object_member(json_t *obj, const char *key)
{
    json_t *m = json_member(obj, key);

    if (json_is_object(m))
        return m;
    m = json_object();
    if (m == NULL || json_object_set_new(obj, key, m) < 0)
        return NULL;
    return m;
}

static int set_str(json_t *obj, const char *key, const char *value)
{
    return json_object_set_new(obj, key, json_string(value));
}

static const char *spec_str(const json_t *job, const char *key)
{
    const char *s = json_string_value(json_member(json_member(job, "spec"), key));

    return s != NULL ? s : "";
}

/* metadata.<field>.<key> of the Job when it is a string, else NULL. */
static const char *job_meta_str(const json_t *job, const char *field, const char *key)
{
    return json_string_value(json_member(json_member(json_member(job, "metadata"), field), key));
}

/*
 * The optional keys of §1.2 copied from the Job (job_controller_util.go createJobPod):
 * preemptable and cooldown-time from its labels to the pod's labels and from its
 * annotations to the pod's annotations; revocable-zone and one of jdb-min-available
 * (wins) / jdb-max-unavailable from its annotations. @return 0 or WH_ENOMEM.
 */
static int copy_job_keys(json_t *labels, json_t *annotations, const json_t *job)
{
    static const char *const both[] = {"volcano.sh/preemptable", "volcano.sh/cooldown-time"};
    const char *v;

    for (size_t i = 0; i < sizeof(both) / sizeof(both[0]); i++) {
        if ((v = job_meta_str(job, "labels", both[i])) != NULL && set_str(labels, both[i], v) < 0)
            return WH_ENOMEM;
        if ((v = job_meta_str(job, "annotations", both[i])) != NULL
            && set_str(annotations, both[i], v) < 0)
            return WH_ENOMEM;
    }
    if ((v = job_meta_str(job, "annotations", "volcano.sh/revocable-zone")) != NULL
        && set_str(annotations, "volcano.sh/revocable-zone", v) < 0)
        return WH_ENOMEM;
    if ((v = job_meta_str(job, "annotations", "volcano.sh/jdb-min-available")) != NULL)
        return set_str(annotations, "volcano.sh/jdb-min-available", v) < 0 ? WH_ENOMEM : 0;
    if ((v = job_meta_str(job, "annotations", "volcano.sh/jdb-max-unavailable")) != NULL)
        return set_str(annotations, "volcano.sh/jdb-max-unavailable", v) < 0 ? WH_ENOMEM : 0;
    return 0;
}

static long long status_int(const json_t *job, const char *key)
{
    return json_integer_value(json_member(json_member(job, "status"), key));
}

/* 12 chars of [0-9a-z] derived from the claim name (Volcano uses random ones). */
static void volume_suffix(char out[13], const char *claim)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";

    EVP_Digest(claim, strlen(claim), md, &mdlen, EVP_sha1(), NULL);
    for (int i = 0; i < 12; i++)
        out[i] = alphabet[md[i] % 36];
    out[12] = '\0';
}

static int add_job_volumes(json_t *spec, const json_t *job)
{
    const json_t *vols = json_member(json_member(job, "spec"), "volumes");
    json_t *seen = json_object();
    size_t i;
    const json_t *v;
    int rc = 0;

    if (seen == NULL)
        return WH_ENOMEM;
    json_array_foreach(vols, i, v) {
        const char *claim = json_string_value(json_member(v, "volumeClaimName"));
        const char *mount = json_string_value(json_member(v, "mountPath"));
        char name[300];
        char suffix[13];
        json_t *list;
        json_t *c;
        size_t k;

        if (claim == NULL || mount == NULL || json_member(seen, claim) != NULL)
            continue; /* a claim seen before is skipped entirely (§2.3) */
        json_object_set_new(seen, claim, json_true());
        volume_suffix(suffix, claim);
        snprintf(name, sizeof(name), "%s-%s", job_name(job), suffix);
        list = json_member(spec, "volumes");
        if (!json_is_array(list)) {
            list = json_array();
            json_object_set_new(spec, "volumes", list);
        }
        if (json_array_append_new(list,
                                  json_pack("{s:s, s:{s:s}}", "name", name, "persistentVolumeClaim",
                                            "claimName", claim))
            < 0) {
            rc = WH_ENOMEM;
            break;
        }
        json_array_each(json_member(spec, "containers"), k, c) {
            json_t *mounts = json_member(c, "volumeMounts");

            if (!json_is_array(mounts)) {
                mounts = json_array();
                json_object_set_new(c, "volumeMounts", mounts);
            }
            json_array_append_new(mounts,
                                  json_pack("{s:s, s:s}", "name", name, "mountPath", mount));
        }
    }
    json_decref(seen);
    return rc;
}

json_t *jobpods_build(const json_t *job, const json_t *task, int64_t index)
{
    const char *J = job_name(job);
    const char *T = job_task_name(task);
    const char *ns = job_namespace(job);
    const char *queue = spec_str(job, "queue");
    const json_t *tmpl = json_member(task, "template");
    const json_t *tmpl_meta = json_member(tmpl, "metadata");
    const json_t *partition = json_member(task, "partitionPolicy");
    json_t *pod = NULL;
    json_t *meta, *labels, *annotations, *spec;
    char name[512], idx[32], buf[512];

    if (T[0] == '\0')
        T = "default";
    snprintf(name, sizeof(name), "%s-%s-%lld", J, T, (long long)index);
    snprintf(idx, sizeof(idx), "%lld", (long long)index);
    pod = json_pack("{s:s, s:s, s:{}}", "apiVersion", "v1", "kind", "Pod", "metadata");
    if (pod == NULL)
        return NULL;
    spec = json_is_object(json_member(tmpl, "spec")) ? json_deep_copy(json_member(tmpl, "spec"))
                                                     : json_object();
    if (spec == NULL || json_object_set_new(pod, "spec", spec) < 0)
        goto nomem;
    meta = json_member(pod, "metadata");
    set_str(meta, "name", name);
    set_str(meta, "namespace", ns);
    labels = object_member(meta, "labels");
    annotations = object_member(meta, "annotations");
    if (labels == NULL || annotations == NULL)
        goto nomem;
    if (json_is_object(json_member(tmpl_meta, "labels")))
        json_object_update(labels, json_member(tmpl_meta, "labels"));
    if (json_is_object(json_member(tmpl_meta, "annotations")))
        json_object_update(annotations, json_member(tmpl_meta, "annotations"));

    set_str(labels, "volcano.sh/task-index", idx);
    set_str(labels, "volcano.sh/job-name", J);
    set_str(labels, "volcano.sh/task-spec", T);
    set_str(labels, "volcano.sh/job-namespace", ns);
    set_str(labels, "volcano.sh/queue-name", queue);
    set_str(annotations, "volcano.sh/task-index", idx);
    set_str(annotations, "volcano.sh/task-spec", T);
    snprintf(buf, sizeof(buf), "%s-%s", J, job_uid(job));
    set_str(annotations, "scheduling.k8s.io/group-name", buf);
    set_str(annotations, "volcano.sh/job-name", J);
    set_str(annotations, "volcano.sh/queue-name", queue);
    snprintf(buf, sizeof(buf), "%lld", status_int(job, "version"));
    set_str(annotations, "volcano.sh/job-version", buf);
    snprintf(buf, sizeof(buf), "%s-%s", J, T);
    set_str(annotations, "volcano.sh/template-uid", buf);
    snprintf(buf, sizeof(buf), "%lld", status_int(job, "retryCount"));
    set_str(annotations, "volcano.sh/job-retry-count", buf);
    if (json_string_length(json_member(task, "topologyPolicy")) > 0
        && set_str(annotations, "volcano.sh/numa-topology-policy",
                   json_string_value(json_member(task, "topologyPolicy")))
            < 0)
        goto nomem;
    if (copy_job_keys(labels, annotations, job) < 0)
        goto nomem;
    if (json_is_object(partition)) {
        long long size = json_integer_value(json_member(partition, "partitionSize"));

        snprintf(buf, sizeof(buf), "%lld", size > 0 ? (long long)index / size : 0LL);
        set_str(labels, "volcano.sh/partition-id", buf);
    }
    if (json_object_set_new(meta, "ownerReferences",
                            json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion",
                                      "batch.volcano.sh/v1alpha1", "kind", "Job", "name", J, "uid",
                                      job_uid(job), "controller", 1, "blockOwnerDeletion", 1))
        < 0)
        goto nomem;

    if (json_string_length(json_member(spec, "schedulerName")) == 0
        && spec_str(job, "schedulerName")[0] != '\0')
        set_str(spec, "schedulerName", spec_str(job, "schedulerName"));
    if (json_string_length(json_member(spec, "priorityClassName")) == 0
        && spec_str(job, "priorityClassName")[0] != '\0')
        set_str(spec, "priorityClassName", spec_str(job, "priorityClassName"));
    if (add_job_volumes(spec, job) < 0)
        goto nomem;
    return pod;
nomem:
    json_decref(pod);
    return NULL;
}

int jobpods_complete_job(json_t *job, const char *default_ns)
{
    json_t *meta;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char key[512];
    char uid[40];

    if (!json_is_object(job))
        return WH_EINVAL;
    meta = object_member(job, "metadata");
    if (meta == NULL)
        return WH_ENOMEM;
    if (job_namespace(job)[0] == '\0' && set_str(meta, "namespace", default_ns) < 0)
        return WH_ENOMEM;
    /* Volcano's Job webhook (mutate_job.go) defaults the queue before any pod exists. */
    if (json_is_object(json_member(job, "spec")) && spec_str(job, "queue")[0] == '\0'
        && set_str(json_member(job, "spec"), "queue", "default") < 0)
        return WH_ENOMEM;
    if (job_uid(job)[0] != '\0')
        return 0;
    snprintf(key, sizeof(key), "%s/%s", job_namespace(job), job_name(job));
    EVP_Digest(key, strlen(key), md, &mdlen, EVP_sha1(), NULL);
    md[6] = (unsigned char)((md[6] & 0x0f) | 0x50); /* RFC 4122 version 5 layout */
    md[8] = (unsigned char)((md[8] & 0x3f) | 0x80);
    snprintf(uid, sizeof(uid),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", md[0], md[1],
             md[2], md[3], md[4], md[5], md[6], md[7], md[8], md[9], md[10], md[11], md[12], md[13],
             md[14], md[15]);
    return set_str(meta, "uid", uid) < 0 ? WH_ENOMEM : 0;
}
