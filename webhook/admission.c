/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admission.c - AdmissionReview (admission.k8s.io/v1 and v1beta1) in and out.
 *
 * Owns the wire format only: decode and validate the review, hand the parts
 * that matter to mutate_review (struct mutate_request, all borrowed from the
 * decoded body), and encode the AdmissionReview answer (docs/kube-api.md
 * §1) or a Kubernetes Status for a body that is not one.
 *
 * Every call is recorded in the process metrics (metrics.h): HTTP status and
 * outcome, time spent, the plugins of a patched pod, warnings sent.
 *
 * The Job webhook (admission_validate_job, D17) shares the decoding and the
 * 400 answers, and answers with the Job's diagnostics (plugins/diagnose.h).
 *
 * Threads: called from MHD worker threads and tests; no state of its own, every
 * value is request-owned, so it is reentrant without locks (metrics are atomics).
 */
#include "webhook/admission.h"

#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/jsonobj.h"
#include "base/jsonr.h"
#include "base/jsonw.h"
#include "base/log.h"
#include "base/sanitize.h"
#include "k8s/podview.h"
#include "plugins/diagnose.h"
#include "plugins/plugin.h"
#include "webhook/metrics.h"

#define API_V1      "admission.k8s.io/v1"
#define API_V1BETA1 "admission.k8s.io/v1beta1"
#define QUOTE_MAX   64 /* bytes of a client-supplied value echoed in a message */

/* Fallback bodies when even the error answer cannot be built (ENOMEM). */
static const char status_enomem[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"out of memory\",\"reason\":\"InternalError\",\"code\":500}";

/* A validation failure: the message of the 400 answer. */
struct bad_request {
    char msg[512];
};

static int bad(struct bad_request *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(struct bad_request *b, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(b->msg, sizeof(b->msg), fmt, ap);
    va_end(ap);
    return WH_EINVAL;
}

/*
 * At most QUOTE_MAX bytes of a (valid UTF-8) client string, copied into buf and
 * never cut inside a character, so the message stays valid UTF-8 for json_string.
 * "..." marks a cut.
 */
static const char *quote_safe(const char *s, char *buf, size_t len)
{
    return sanitize_copy(buf, len, s, QUOTE_MAX, SANITIZE_ELLIPSIS);
}

/* Whether s is valid UTF-8 (jansson refuses anything else in a string). */
static int utf8_valid(const char *s)
{
    json_t *v = json_string(s);

    json_decref(v);
    return v != NULL;
}

/* Dump v compactly into a malloc'd *out of *out_len bytes. @return 0 or WH_ENOMEM. */
static int dump_body(const json_t *v, char **out, size_t *out_len)
{
    char *s = json_dumps(v, JSON_COMPACT);

    if (s == NULL)
        return WH_ENOMEM;
    *out = s;
    *out_len = strlen(s);
    return 0;
}

/* The last-resort 500 body; *out stays NULL if even this copy fails. */
static int answer_enomem(char **out, size_t *out_len)
{
    *out = strdup(status_enomem);
    *out_len = *out != NULL ? sizeof(status_enomem) - 1 : 0;
    return 500;
}

/* A Kubernetes Status body (docs/kube-api.md §2). */
static int answer_status(int code, const char *reason, const char *message, char **out,
                         size_t *out_len)
{
    json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion",
                           "v1", "metadata", "status", "Failure", "message", message, "reason",
                           reason, "code", code);
    int rc;

    if (st == NULL)
        return answer_enomem(out, out_len);
    rc = dump_body(st, out, out_len);
    json_decref(st);
    if (rc < 0)
        return answer_enomem(out, out_len);
    return code;
}

/*
 * Optional string member v: absent or null → "" (kube-apiserver omits empty
 * strings); any other non-string → a 400 naming path.
 */
static int opt_string(const json_t *v, const char *path, const char **out, struct bad_request *b)
{
    *out = "";
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return bad(b, "%s must be a string", path);
    *out = json_string_value(v);
    return 0;
}

/* Validate the review and fill req (borrowing from review) and *api_out. Each object's
 * members are read in one pass (json_members); the checks go in the order they are
 * written, so a review with several faults is told its first. */
static int parse_review(const json_t *review, const char **api_out, struct mutate_request *req,
                        struct bad_request *b)
{
    enum { API_VERSION, KIND, REQUEST };
    static const char *const review_keys[] = {"apiVersion", "kind", "request"};
    enum { UID, OPERATION, RESOURCE, SUB_RESOURCE, NAMESPACE, OBJECT };
    static const char *const request_keys[] = {"uid",         "operation", "resource",
                                               "subResource", "namespace", "object"};
    enum { GROUP, RESOURCE_NAME };
    static const char *const resource_keys[] = {"group", "resource"};
    const json_t *top[3];
    const json_t *r[6];
    const json_t *res[2];
    const json_t *v;
    const json_t *request;
    const char *s;
    char q[QUOTE_MAX + 4];
    int rc;

    if (!json_is_object(review))
        return bad(b, "body is not a JSON object");
    json_members(review, review_keys, 3, top);

    v = top[API_VERSION];
    if (v == NULL || json_is_null(v))
        return bad(b, "apiVersion missing");
    if (!json_is_string(v))
        return bad(b, "apiVersion must be a string");
    s = json_string_value(v);
    if (strcmp(s, API_V1) != 0 && strcmp(s, API_V1BETA1) != 0)
        return bad(b, "unsupported apiVersion \"%s\" (want " API_V1 " or " API_V1BETA1 ")",
                   quote_safe(s, q, sizeof(q)));
    *api_out = s;

    v = top[KIND];
    if (v == NULL || json_is_null(v))
        return bad(b, "kind missing");
    if (!json_is_string(v))
        return bad(b, "kind must be a string");
    s = json_string_value(v);
    if (strcmp(s, "AdmissionReview") != 0)
        return bad(b, "unsupported kind \"%s\" (want AdmissionReview)",
                   quote_safe(s, q, sizeof(q)));

    request = top[REQUEST];
    if (request == NULL || json_is_null(request))
        return bad(b, "request missing");
    if (!json_is_object(request))
        return bad(b, "request must be an object");
    json_members(request, request_keys, 6, r);

    v = r[UID];
    if (v == NULL || json_is_null(v))
        return bad(b, "request.uid missing");
    if (!json_is_string(v))
        return bad(b, "request.uid must be a string");
    if (json_string_length(v) == 0)
        return bad(b, "request.uid is empty");
    /* The answer echoes it as a C string: "\u0000" inside would cut it (a uid is a UUID). */
    if (strlen(json_string_value(v)) != json_string_length(v))
        return bad(b, "request.uid must not contain a NUL character");
    req->uid = json_string_value(v);

    rc = opt_string(r[OPERATION], "request.operation", &req->operation, b);
    if (rc < 0)
        return rc;
    if (r[RESOURCE] != NULL && !json_is_null(r[RESOURCE]) && !json_is_object(r[RESOURCE]))
        return bad(b, "request.resource must be an object");
    json_members(r[RESOURCE], resource_keys, 2, res);
    rc = opt_string(res[GROUP], "request.resource.group", &req->group, b);
    if (rc < 0)
        return rc;
    rc = opt_string(res[RESOURCE_NAME], "request.resource.resource", &req->resource, b);
    if (rc < 0)
        return rc;
    rc = opt_string(r[SUB_RESOURCE], "request.subResource", &req->sub_resource, b);
    if (rc < 0)
        return rc;
    rc = opt_string(r[NAMESPACE], "request.namespace", &req->ns, b);
    if (rc < 0)
        return rc;

    /* Absent or null object (e.g. DELETE) → NULL: mutate decides what that means. */
    v = r[OBJECT];
    if (v != NULL && !json_is_null(v) && !json_is_object(v))
        return bad(b, "request.object must be an object");
    req->pod = json_is_object(v) ? v : NULL;
    return 0;
}

/*
 * The answer is written as text, piece by piece (base/jsonw.h), not built as a
 * json_t and dumped, and the patch comes as text from the diff itself
 * (mutate_review_text): no ops tree, no dump. base64 never needs escaping, so it goes
 * straight into the body. The bytes are exactly those json_dumps(JSON_COMPACT) gives
 * for {"apiVersion","kind","response":{"uid","allowed"[,"patchType","patch"]
 * [,"warnings"][,"status"]}} in that key order (tests/webhook/check_answer.c
 * compares the two).
 */
/*
 * The most JSON Patch text an answer carries. The patched pod must still fit a request
 * (kube-apiserver's 3 MiB body limit) and etcd (1.5 MiB by default), so a bigger patch
 * can never be applied; refusing it bounds what one small review can make us build
 * (a 3 MiB TF_CONFIG on each of 100 containers would be 300 MB).
 */
#define ADMISSION_MAX_PATCH (3u << 20)
/* The most reserved for a patch before it is written (a review is a few KiB). */
#define ADMISSION_PATCH_RESERVE (64u << 10)

/* base64 (RFC 4648, no line breaks) of the patch's text, appended to o. */
static void answer_patch_base64(struct buf *o, const struct buf *text)
{
    if (buf_reserve(o, 4 * ((text->len + 2) / 3)) == 0) {
        /* EVP_EncodeBlock writes the NUL too: reserve leaves room for it. */
        o->len += (size_t)EVP_EncodeBlock((unsigned char *)o->data + o->len,
                                          (const unsigned char *)buf_cstr(text), (int)text->len);
    }
}

/*
 * Objects and arrays in a JSON text, counted on the bytes before any decoding
 * (jsonr_scan_body). A real Pod has a few thousand.
 */
#define ADMISSION_MAX_CONTAINERS 200000

/*
 * Whether the len bytes at body hold more than ADMISSION_MAX_CONTAINERS objects and
 * arrays. jsonr_scan_body counts at most one per byte, so only a longer body is
 * scanned, into *scan; *used says whether it was (the reader then takes the scan
 * instead of making its own).
 */
static bool too_many_containers(const char *body, size_t len, struct jsonr_scan *scan, bool *used)
{
    *used = len > ADMISSION_MAX_CONTAINERS;
    if (!*used)
        return false;
    jsonr_scan_body(body, len, scan);
    return scan->containers > ADMISSION_MAX_CONTAINERS;
}


/*
 * What admission_handle builds as a tree of a pod's AdmissionReview read as a document
 * (base/jsonr.h): what parse_review reads, and of the pod only its metadata
 * (mutate_pod_meta_read); the plugins read the pod through its view (k8s/podview.h).
 * The rest (userInfo, options, the pod's resources, probes, affinity, managedFields,
 * ...) is checked as JSON and not built.
 */
static const struct jsonr_keep request_read[] = {
    {"uid", NULL},         {"operation", NULL}, {"resource", NULL},
    {"subResource", NULL}, {"namespace", NULL}, {"object", mutate_pod_meta_read},
    {NULL, NULL},
};
static const struct jsonr_keep review_read[] = {
    {"apiVersion", NULL},
    {"kind", NULL},
    {"request", request_read},
    {NULL, NULL},
};

/* The members of the AdmissionResponse after the patch: ,"warnings" and ,"status". */
static void answer_tail(struct buf *o, const struct mutate_result *res)
{
    if (res->warnings.n > 0) {
        jsonw_lit(o, ",\"warnings\":[");
        for (size_t i = 0; i < res->warnings.n; i++) {
            if (i > 0)
                jsonw_lit(o, ",");
            jsonw_cstring(o, res->warnings.items[i]); /* valid UTF-8: warnings_add */
        }
        jsonw_lit(o, "]");
    }
    if (!res->allowed) {
        /* A denial always carries a code; 500 if mutate left none. */
        int code = res->status_code > 0 ? res->status_code : 500;
        char msg[sizeof(res->message)];
        char num[16];

        /* A message cut inside a character is not valid UTF-8: fall back to ASCII. */
        memcpy(msg, res->message, sizeof(msg));
        msg[sizeof(msg) - 1] = '\0';
        if (!utf8_valid(msg))
            sanitize_ascii(msg);
        snprintf(num, sizeof(num), "%d", code);
        jsonw_lit(o, ",\"status\":{\"code\":");
        jsonw_raw(o, num, strlen(num));
        jsonw_lit(o, ",\"message\":");
        jsonw_cstring(o, msg);
        jsonw_lit(o, ",\"status\":\"Failure\"}");
    }
}

/*
 * Encode the AdmissionReview answer for res, with the patch's text (when res has
 * ops), into a malloc'd *out.
 * @return 0 or WH_ENOMEM; nothing allocated is left behind.
 */
static int answer_encode(const char *api, const char *uid, const struct mutate_result *res,
                         const struct buf *patch, char **out, size_t *out_len)
{
    struct buf o;
    char *text;
    size_t len;
    size_t want = 192 + strlen(api) + strlen(uid);

    buf_init(&o, BUF_NO_MAX);
    /* One allocation for most answers: the fixed text, uid, the patch in base64 (its
     * warnings and message may still grow it). */
    if (res->patch_ops > 0 && patch != NULL) /* as written below: a denial has none */
        want += 4 * ((patch->len + 2) / 3);
    if (buf_reserve(&o, want) < 0)
        return WH_ENOMEM;
    jsonw_lit(&o, "{\"apiVersion\":");
    jsonw_cstring(&o, api);
    jsonw_lit(&o, ",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    jsonw_cstring(&o, uid);
    if (res->allowed)
        jsonw_lit(&o, ",\"allowed\":true");
    else
        jsonw_lit(&o, ",\"allowed\":false");
    if (res->patch_ops > 0 && patch != NULL) {
        jsonw_lit(&o, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
        answer_patch_base64(&o, patch);
        jsonw_lit(&o, "\"");
    }
    answer_tail(&o, res);
    jsonw_lit(&o, "}}");
    text = buf_take(&o, &len);
    if (text == NULL)
        return WH_ENOMEM;
    *out = text;
    *out_len = len;
    return 0;
}

/* Pod name for the log line: metadata.name, else generateName, else "". */
static const char *pod_name(const json_t *pod)
{
    const json_t *md = json_member(pod, "metadata");
    const char *s = json_string_value(json_member(md, "name"));

    if (s == NULL)
        s = json_string_value(json_member(md, "generateName"));
    return s != NULL ? s : "";
}

/* Record one answered review: status, outcome, latency, plugins, warnings. */
static void record(int status, const struct mutate_result *res, double started)
{
    enum metrics_outcome outcome = METRICS_ERROR;

    if (status == 200 && !res->allowed)
        outcome = METRICS_DENIED;
    else if (status == 200 && res->patch_ops > 0)
        outcome = METRICS_PATCHED;
    else if (status == 200)
        outcome = METRICS_UNCHANGED;
    metrics_admission(status, outcome, clock_mono_s() - started);
    if (outcome == METRICS_PATCHED)
        for (size_t k = 0; k < sizeof(res->enabled) * 8; k++)
            if (res->enabled & (1u << k))
                metrics_plugin_patch(k);
    if (status == 200 && res->warnings.n > 0)
        metrics_warnings((unsigned)res->warnings.n);
}

int admission_handle(const char *body, size_t len, const struct jobsource *src,
                     const struct mutate_options *opt, char **out, size_t *out_len)
{
    double started = clock_mono_s();
    struct mutate_request req = {0};
    struct mutate_result res;
    struct bad_request b = {{0}};
    char q[LOG_QUOTE_SIZE(sizeof(b.msg))]; /* b.msg quoted for the log */
    json_error_t jerr;
    struct jsonr_scan scan;
    bool scanned;
    json_t *review = NULL;
    struct jsonr_doc *doc = NULL;
    struct pod_view view;
    bool viewed = false;
    struct buf patch;
    const char *api = NULL;
    const char *job = "";
    const char *job_uid = "";
    int status;
    int rc;

    *out = NULL;
    *out_len = 0;
    mutate_result_init(&res);
    buf_init(&patch, ADMISSION_MAX_PATCH);

    if (body == NULL || len == 0) {
        status = answer_status(400, "BadRequest", "request body is empty", out, out_len);
        goto out;
    }
    /* jansson spends ~500 bytes per object: a 3 MiB body of `{}` would cost ~0.5 GB. */
    if (too_many_containers(body, len, &scan, &scanned)) {
        char msg[96];

        snprintf(msg, sizeof(msg), "request has more than %d JSON objects and arrays",
                 ADMISSION_MAX_CONTAINERS);
        status = answer_status(400, "BadRequest", msg, out, out_len);
        goto out;
    }
    /* One allocation for most patches: a pod's is about as long as its review (a huge
     * review's grows from ADMISSION_PATCH_RESERVE, as it is written). */
    if (buf_reserve(&patch, len < ADMISSION_PATCH_RESERVE ? len : ADMISSION_PATCH_RESERVE) < 0) {
        status = answer_status(500, "InternalError", "out of memory", out, out_len);
        goto out;
    }
    /* One read: the document, with the envelope and the pod's metadata built from it and
     * the pod's view pointing into it; a body it declines is jansson's, whole (then the
     * pod's view is made from that tree, in mutate.c). */
    doc = jsonr_doc_read(body, len, scanned ? &scan : NULL);
    if (doc != NULL) {
        review = jsonr_doc_value_kept(doc, 0, review_read);
        if (review == NULL) {
            status = answer_status(500, "InternalError", "out of memory", out, out_len);
            goto out;
        }
    } else {
        review = json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    }
    if (review == NULL) {
        sanitize_ascii(jerr.text); /* jansson may quote raw input bytes */
        snprintf(b.msg, sizeof(b.msg), "invalid JSON at line %d column %d: %s", jerr.line,
                 jerr.column, jerr.text);
        LOG_DEBUG("admission bad request err=%s", log_quote(q, sizeof(q), b.msg));
        status = answer_status(400, "BadRequest", b.msg, out, out_len);
        goto out;
    }
    if (parse_review(review, &api, &req, &b) < 0) {
        LOG_DEBUG("admission bad request err=%s", log_quote(q, sizeof(q), b.msg));
        status = answer_status(400, "BadRequest", b.msg, out, out_len);
        goto out;
    }

    if (doc != NULL && req.pod != NULL) {
        if (podview_from_doc(&view, doc,
                             jsonr_doc_member(doc, jsonr_doc_member(doc, 0, "request"), "object"))
            < 0) {
            podview_dispose(&view);
            status = answer_status(500, "InternalError", "out of memory", out, out_len);
            goto out;
        }
        viewed = true;
        req.view = &view;
    }
    mutate_review_text(&req, src, opt, &patch, &res);
    if (res.deferred) {
        status = ADMISSION_DEFERRED; /* no answer, nothing recorded: asked again */
        goto out;
    }

    if (patch.rc == WH_ETOOBIG) {
        /* A patch no pod can take: denied, as a plugin error is (D7). */
        res.allowed = false;
        res.status_code = 400;
        snprintf(res.message, sizeof(res.message),
                 "the plugins' patch for this pod is over %u bytes, more than a pod can hold",
                 ADMISSION_MAX_PATCH);
        res.patch_ops = 0;
    }
    rc = answer_encode(api, req.uid, &res, &patch, out, out_len);
    if (rc < 0) {
        status = answer_status(500, "InternalError", "out of memory", out, out_len);
        goto out;
    }
    status = 200;
    if (log_level_current >= LOG_LEVEL_DEBUG && req.pod != NULL
        && mutate_pod_owner(req.pod, &job, &job_uid) != 0)
        job = "";
    if (log_level_current >= LOG_LEVEL_DEBUG) {
        char plugins[256] = "";
        char qv[4][LOG_QUOTE_SIZE(128)]; /* request values, quoted */
        size_t n = 0;

        /* The effective plugin set, comma separated (names are short and fixed). */
        for (size_t k = 0; k < plugin_registry_len && k < sizeof(res.enabled) * 8; k++)
            if ((res.enabled & (1u << k)) && n + 1 < sizeof(plugins))
                n += (size_t)snprintf(plugins + n, sizeof(plugins) - n, "%s%s", n > 0 ? "," : "",
                                      plugin_registry[k]->name);
        LOG_DEBUG("admission uid=%s ns=%s pod=%s job=%s allowed=%s ops=%zu plugins=%s "
                  "duration_ms=%.3f",
                  log_quote(qv[0], sizeof(qv[0]), req.uid), log_quote(qv[1], sizeof(qv[1]), req.ns),
                  log_quote(qv[2], sizeof(qv[2]), pod_name(req.pod)),
                  log_quote(qv[3], sizeof(qv[3]), job), res.allowed ? "true" : "false",
                  res.patch_ops, plugins[0] != '\0' ? plugins : "none",
                  (clock_mono_s() - started) * 1000);
    }
out:
    if (status != ADMISSION_DEFERRED)
        record(status, &res, started);
    if (viewed)
        podview_dispose(&view);
    jsonr_doc_free(doc);
    json_decref(review);
    buf_dispose(&patch);
    mutate_result_dispose(&res);
    return status;
}

/* ---- the Job webhook (D17) ---- */

#define JOB_GROUP        "batch.volcano.sh"
#define JOB_DENY_MSG_MAX 4096 /* bytes of a refusal's message */

/*
 * The Job to diagnose: the object, or for a generateName-only CREATE a shallow
 * copy named generateName + "xxxxx", the length of the name the API server will
 * give it (so the name checks of D15 still count right).
 * @return new reference, NULL on ENOMEM.
 */
static json_t *job_as_named(const json_t *job)
{
    const json_t *meta = json_member(job, "metadata");
    const char *name = json_string_value(json_member(meta, "name"));
    const char *gen = json_string_value(json_member(meta, "generateName"));
    json_t *copy;
    json_t *meta_copy;

    if ((name != NULL && name[0] != '\0') || gen == NULL || gen[0] == '\0')
        return json_incref((json_t *)job);
    copy = json_copy((json_t *)job);
    meta_copy = json_copy((json_t *)meta);
    if (copy == NULL || meta_copy == NULL
        || json_object_set_new(meta_copy, "name", json_sprintf("%sxxxxx", gen)) < 0
        || json_object_set_new(copy, "metadata", meta_copy) < 0) {
        json_decref(copy);
        return NULL;
    }
    return copy;
}

/* "<lead>: m1; m2" of the fatal diagnostics, cut to fit buf. */
static void deny_message(char *buf, size_t len, const struct diagnostics *d)
{
    size_t off = (size_t)snprintf(buf, len,
                                  "the pods of this job could never be admitted or "
                                  "started: ");

    for (size_t i = 0, n = 0; i < d->n && off < len; i++) {
        int w;

        if (!d->items[i].fatal)
            continue;
        w = snprintf(buf + off, len - off, "%s%s", n++ > 0 ? "; " : "", d->items[i].message);
        if (w < 0)
            break;
        off += (size_t)w;
    }
    wh_utf8_sanitize(buf); /* a cut may fall inside a character */
}

/*
 * The AdmissionReview answer for one Job request (req borrowed from the review):
 * allowed with no warnings when not served. @return new reference, NULL on ENOMEM.
 */
static json_t *job_answer(const char *api, const char *uid, const struct mutate_request *req,
                          const struct mutate_options *opt)
{
    bool served = strcmp(req->group, JOB_GROUP) == 0 && strcmp(req->resource, "jobs") == 0
        && req->sub_resource[0] == '\0'
        && (strcmp(req->operation, "CREATE") == 0 || strcmp(req->operation, "UPDATE") == 0);
    json_t *resp = json_pack("{s:s, s:b}", "uid", uid, "allowed", 1);
    json_t *answer = json_pack("{s:s, s:s, s:o}", "apiVersion", api, "kind", "AdmissionReview",
                               "response", resp);
    struct diagnostics *d = NULL;
    json_t *job = NULL;
    char *msg = NULL;

    if (answer == NULL || !served)
        return answer;
    if (req->pod == NULL) {
        if (json_object_set_new(resp, "allowed", json_false()) < 0
            || json_object_set_new(resp, "status",
                                   json_pack("{s:i, s:s, s:s}", "code", 400, "message",
                                             "request.object is not a job", "status", "Failure"))
                < 0)
            goto fail;
        return answer;
    }
    d = malloc(sizeof(*d)); /* 12 KB: not on an MHD worker's stack */
    job = job_as_named(req->pod);
    if (d == NULL || job == NULL || diagnose_job(job, d) < 0)
        goto fail;
    if (d->n > 0 && json_object_set_new(resp, "warnings", diagnose_messages(d, false)) < 0)
        goto fail;
    if (opt != NULL && opt->job_validation == JOB_VALIDATION_DENY && diagnose_fatal_count(d) > 0) {
        msg = malloc(JOB_DENY_MSG_MAX);
        if (msg == NULL)
            goto fail;
        deny_message(msg, JOB_DENY_MSG_MAX, d);
        if (json_object_set_new(resp, "allowed", json_false()) < 0
            || json_object_set_new(
                   resp, "status",
                   json_pack("{s:i, s:s, s:s}", "code", 400, "message", msg, "status", "Failure"))
                < 0)
            goto fail;
    }
    free(msg);
    free(d);
    json_decref(job);
    return answer;
fail:
    free(msg);
    free(d);
    json_decref(job);
    json_decref(answer);
    return NULL;
}

int admission_validate_job(const char *body, size_t len, const struct jobsource *src,
                           const struct mutate_options *opt, char **out, size_t *out_len)
{
    struct mutate_request req = {0};
    struct bad_request b = {{0}};
    char q[LOG_QUOTE_SIZE(sizeof(b.msg))]; /* b.msg quoted for the log */
    json_error_t jerr;
    struct jsonr_scan scan;
    bool scanned;
    json_t *review = NULL;
    json_t *answer = NULL;
    const char *api = NULL;
    int status;

    (void)src;
    *out = NULL;
    *out_len = 0;
    if (body == NULL || len == 0)
        return answer_status(400, "BadRequest", "request body is empty", out, out_len);
    if (too_many_containers(body, len, &scan, &scanned)) {
        char msg[96];

        snprintf(msg, sizeof(msg), "request has more than %d JSON objects and arrays",
                 ADMISSION_MAX_CONTAINERS);
        return answer_status(400, "BadRequest", msg, out, out_len);
    }
    review = jsonr_loadb_kept(body, len, NULL, scanned ? &scan : NULL, &jerr);
    if (review == NULL) {
        sanitize_ascii(jerr.text); /* jansson may quote raw input bytes */
        snprintf(b.msg, sizeof(b.msg), "invalid JSON at line %d column %d: %s", jerr.line,
                 jerr.column, jerr.text);
        LOG_DEBUG("job admission bad request err=%s", log_quote(q, sizeof(q), b.msg));
        return answer_status(400, "BadRequest", b.msg, out, out_len);
    }
    if (parse_review(review, &api, &req, &b) < 0) {
        LOG_DEBUG("job admission bad request err=%s", log_quote(q, sizeof(q), b.msg));
        status = answer_status(400, "BadRequest", b.msg, out, out_len);
        goto out;
    }
    answer = job_answer(api, req.uid, &req, opt);
    if (answer == NULL || dump_body(answer, out, out_len) < 0) {
        status = answer_status(500, "InternalError", "out of memory", out, out_len);
        goto out;
    }
    status = 200;
out:
    json_decref(answer);
    json_decref(review);
    return status;
}
