/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certkeeper.c - managed serving certificates in one Secret (certkeeper.h).
 *
 * A round reads everything it decides on from the API server (the Secret, the
 * MutatingWebhookConfiguration, the ValidatingWebhookConfiguration of the same
 * name) and keeps nothing between rounds but what this replica serves, the
 * bundle it last put in the caBundles (to tell a hand-made change from its own)
 * and the time of the next caBundle check. So two keepers, or one restarted,
 * agree as soon as they read the same objects.
 *
 * Threads: the round runs on the keeper's thread (a struct backoff_thread,
 * base/backoff.h, which also holds its stop flag), or the caller's before
 * certkeeper_start; mu guards served_cert, ready and reason, which MHD workers read
 * through certkeeper_ready; leading and the repair counter are atomic. No lock is
 * held across a request or on_pair. Private keys never reach a log line.
 */
#include "controller/certkeeper.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/jsonobj.h"
#include "base/log.h"
#include "base/metric.h"
#include "controller/cabundle.h"
#include "k8s/watch.h"

#define WEBHOOK_GROUP      "admissionregistration.k8s.io"
#define WEBHOOK_VERSION    "v1"
#define PEM_END            "-----END CERTIFICATE-----"
#define PEM_BEGIN          "-----BEGIN CERTIFICATE-----"
#define DEFAULT_TIMEOUT_MS 10000L
#define KEY_CA_CRT         "ca.crt"
#define KEY_CA_KEY         "ca.key"
#define KEY_BUNDLE         "ca-bundle.crt"
#define KEY_TLS_CRT        "tls.crt"
#define KEY_TLS_KEY        "tls.key"
#define NCONFIGS           2   /* mutating, validating */
#define RECORD_TRIES       3   /* a record's update, read again after a 409 */
#define KICK_STEP_MS       50L /* how soon a watch event starts a round */
#define WATCH_TIMEOUT_S    300L
#define SHORT_WATCH_MS     1000L /* a watch over sooner with no event: a failure */

static const char *const config_resources[NCONFIGS] = {"mutatingwebhookconfigurations",
                                                       "validatingwebhookconfigurations"};
static const char *const config_kinds[NCONFIGS] = {"mutatingwebhookconfiguration",
                                                   "validatingwebhookconfiguration"};

struct certkeeper {
    struct k8s_client *kc;
    char *ns;
    char *secret;
    char *secret_path;
    char *secrets_path; /* the collection, for the create */
    char *webhook_config;
    char *config_path[NCONFIGS];
    char *verify_name; /* SERVICE.NS.svc: the name kube-apiserver checks */
    char *sans_text[4];
    char **extra;
    size_t nextra;
    const char *sans[4 + CERTKEEPER_MAX_SANS]; /* into sans_text and extra */
    size_t nsans;
    enum certs_key_type key_type;
    long long validity_s;
    long long ca_validity_s;
    long long renew_before_s;
    long long drain_s;
    long long record_ttl_s;
    char *replica;
    bool in_memory;
    long poll_ms;
    long repair_ms;
    long timeout_ms;
    certkeeper_pair_fn on_pair;
    void *userdata;

    atomic_bool leading;
    struct metric_counter repairs;
    char *applied_b64;        /* the caBundle this keeper last wrote; round thread only */
    long long next_repair_ms; /* monotonic; round thread only */
    bool seen[NCONFIGS];      /* the configuration existed at the last check */
    json_t *mem;              /* in_memory: the Secret, NULL when none; round thread only */
    unsigned long long mem_rv;
    char served_ca_fp[65];     /* the served certificate's CA (SHA-256); round thread only */
    long long recorded_at;     /* when this replica's record was last written (Unix) */
    char *watch_path;          /* the Secret's collection ?fieldSelector=metadata.name=NAME */
    atomic_bool kick;          /* a watch event: start a round now */
    struct backoff_thread wth; /* the watch's thread, from certkeeper_start */

    pthread_mutex_t mu; /* guards served_cert, ready, reason */
    char *served_cert;  /* PEM of the pair handed to on_pair last */
    bool ready;
    char reason[256];
    struct backoff_thread th; /* the rounds' thread, from certkeeper_start */
};

/* ---- PEM bundles: a list of certificates ---- */

struct pem_list {
    char **v;
    size_t n;
};

static void pem_list_dispose(struct pem_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static bool pem_list_has(const struct pem_list *l, const char *pem)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], pem) == 0)
            return true;
    return false;
}

/* Append a copy of pem unless it is there already. @return 0 or WH_ENOMEM. */
static int pem_list_add(struct pem_list *l, const char *pem, size_t len)
{
    char **nv;
    char *copy;

    copy = strndup(pem, len);
    if (copy == NULL)
        return WH_ENOMEM;
    if (pem_list_has(l, copy)) {
        free(copy);
        return 0;
    }
    nv = realloc(l->v, (l->n + 1) * sizeof(*nv));
    if (nv == NULL) {
        free(copy);
        return WH_ENOMEM;
    }
    l->v = nv;
    l->v[l->n++] = copy;
    return 0;
}

/* A CA certificate usable now: a PEM certificate whose notAfter lies ahead. */
static bool ca_cert_current(const char *pem, long long now)
{
    long long na = 0;

    return certs_not_after(pem, &na, NULL) == 0 && na > now;
}

/*
 * Add each certificate block of text (PEM, any order) that is still current to l,
 * in order, without duplicates; anything else in text is ignored (garbage in a
 * Secret or caBundle must not stop the keeper). @return 0 or WH_ENOMEM.
 */
static int pem_list_add_text(struct pem_list *l, const char *text, long long now)
{
    const char *p = text;

    while (p != NULL && (p = strstr(p, PEM_BEGIN)) != NULL) {
        const char *end = strstr(p, PEM_END);
        size_t len;
        char *one;
        int rc = 0;

        if (end == NULL)
            break;
        len = (size_t)(end - p) + strlen(PEM_END);
        one = malloc(len + 2);
        if (one == NULL)
            return WH_ENOMEM;
        memcpy(one, p, len);
        one[len] = '\n'; /* the form certs_generate_ca writes */
        one[len + 1] = '\0';
        if (ca_cert_current(one, now))
            rc = pem_list_add(l, one, len + 1);
        free(one);
        if (rc < 0)
            return rc;
        p = end + strlen(PEM_END);
    }
    return 0;
}

/* The certificates one after the other. @return malloc'd text, or NULL (ENOMEM). */
static char *pem_list_join(const struct pem_list *l)
{
    size_t n = 1;
    char *out;
    char *w;

    for (size_t i = 0; i < l->n; i++)
        n += strlen(l->v[i]);
    out = malloc(n);
    if (out == NULL)
        return NULL;
    w = out;
    for (size_t i = 0; i < l->n; i++) {
        size_t k = strlen(l->v[i]);

        memcpy(w, l->v[i], k);
        w += k;
    }
    *w = '\0';
    return out;
}

/* ---- the Secret ---- */

/* What a Secret holds, decoded; a missing or undecodable key is NULL. */
struct secret_state {
    json_t *obj;   /* as read (new reference), NULL when there is none */
    char *data[5]; /* KEY_CA_CRT, KEY_CA_KEY, KEY_BUNDLE, KEY_TLS_CRT, KEY_TLS_KEY */
};

static const char *const secret_keys[5] = {KEY_CA_CRT, KEY_CA_KEY, KEY_BUNDLE, KEY_TLS_CRT,
                                           KEY_TLS_KEY};
enum { S_CA_CRT, S_CA_KEY, S_BUNDLE, S_TLS_CRT, S_TLS_KEY };

static void secret_state_dispose(struct secret_state *s)
{
    json_decref(s->obj);
    s->obj = NULL;
    for (size_t i = 0; i < 5; i++) {
        if (s->data[i] != NULL)
            memset(s->data[i], 0, strlen(s->data[i])); /* key material */
        free(s->data[i]);
        s->data[i] = NULL;
    }
}

/*
 * The Secret's store: the API server, or with in_memory an object of the keeper's
 * own that answers as the API server would (a copy on GET; 409 on a create over
 * an object, or an update at another resourceVersion; a new resourceVersion on
 * each write). Round thread only.
 */
static int store_get(struct certkeeper *ck, json_t **out, struct wh_error *err)
{
    if (!ck->in_memory)
        return k8s_get(ck->kc, ck->secret_path, ck->timeout_ms, out, err);
    *out = NULL;
    if (ck->mem == NULL)
        return wh_error_set(err, WH_ENOTFOUND, "secret %s/%s not found", ck->ns, ck->secret);
    *out = json_deep_copy(ck->mem);
    return *out != NULL ? 0 : wh_error_set(err, WH_ENOMEM, "out of memory");
}

/* obj borrowed; create: no resourceVersion expected. @return 0, WH_EEXISTS, WH_ECONFLICT. */
static int store_put(struct certkeeper *ck, const json_t *obj, bool create, struct wh_error *err)
{
    json_t *copy;
    json_t *meta;
    const char *want;
    const char *have;
    char rv[32];

    if (!ck->in_memory)
        return create ? k8s_create(ck->kc, ck->secrets_path, obj, ck->timeout_ms, NULL, err)
                      : k8s_update(ck->kc, ck->secret_path, obj, ck->timeout_ms, NULL, err);
    if (create && ck->mem != NULL)
        return wh_error_set(err, WH_EEXISTS, "secrets \"%s\" already exists", ck->secret);
    if (!create) {
        if (ck->mem == NULL)
            return wh_error_set(err, WH_ENOTFOUND, "secret %s/%s not found", ck->ns, ck->secret);
        want =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
        have = json_string_value(
            json_object_get(json_object_get(ck->mem, "metadata"), "resourceVersion"));
        if (want == NULL || have == NULL || strcmp(want, have) != 0)
            return wh_error_set(err, WH_ECONFLICT, "secret %s/%s: the object has been modified",
                                ck->ns, ck->secret);
    }
    copy = json_deep_copy(obj);
    meta = json_object_get(copy, "metadata");
    snprintf(rv, sizeof(rv), "%llu", ++ck->mem_rv);
    if (copy == NULL || meta == NULL
        || json_object_set_new(meta, "resourceVersion", json_string(rv)) != 0) {
        json_decref(copy);
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    json_decref(ck->mem);
    ck->mem = copy;
    return 0;
}

/* GET the Secret into s (s->obj NULL on 404). @return 0 or the request's error. */
static int secret_read(struct certkeeper *ck, struct secret_state *s, struct wh_error *err)
{
    const json_t *data;
    int rc;

    memset(s, 0, sizeof(*s));
    rc = store_get(ck, &s->obj, err);
    if (rc == WH_ENOTFOUND)
        return 0;
    if (rc < 0)
        return rc;
    data = json_object_get(s->obj, "data");
    for (size_t i = 0; i < 5; i++) {
        const char *b64 = json_string_value(json_object_get(data, secret_keys[i]));

        if (b64 != NULL)
            s->data[i] = certs_base64_decode(b64, NULL); /* NULL when garbage */
    }
    return 0;
}

/* ---- the serving records (CERTKEEPER_ANNOTATION) ---- */

json_t *certkeeper_records_parse(const char *text)
{
    json_t *in = text != NULL ? json_loads(text, 0, NULL) : NULL;
    json_t *out = json_object();
    const char *name;
    json_t *rec;

    if (out == NULL) {
        json_decref(in);
        return NULL;
    }
    json_object_foreach(in, name, rec) {
        const char *ca = json_string_value(json_object_get(rec, "ca"));
        const json_t *t = json_object_get(rec, "time");

        if (name[0] == '\0' || ca == NULL || strlen(ca) != 64 || !json_is_integer(t))
            continue; /* garbage in the Secret must not stop the keeper */
        if (json_object_set_new(out, name,
                                json_pack("{s:s, s:I}", "ca", ca, "time", json_integer_value(t)))
            != 0) {
            json_decref(in);
            json_decref(out);
            return NULL;
        }
    }
    json_decref(in);
    return out;
}

static bool record_fresh(const json_t *rec, long long now, long long ttl_s)
{
    long long t = (long long)json_integer_value(json_object_get(rec, "time"));

    /* t comes from the Secret, any int64: compared, never subtracted (signed overflow). */
    return t >= now - ttl_s && t <= now + ttl_s;
}

size_t certkeeper_records_prune(json_t *records, long long now, long long ttl_s)
{
    const char *name;
    json_t *rec;
    void *tmp;
    size_t n = 0;

    json_object_foreach_safe(records, tmp, name, rec) {
        if (!record_fresh(rec, now, ttl_s)) {
            json_object_del(records, name);
            n++;
        }
    }
    return n;
}

bool certkeeper_records_all_on(const json_t *records, const char *ca_fp, long long now,
                               long long ttl_s)
{
    const char *name;
    const json_t *rec;
    size_t fresh = 0;

    json_object_foreach((json_t *)records, name, rec) {
        if (!record_fresh(rec, now, ttl_s))
            continue;
        fresh++;
        if (strcmp(json_string_value(json_object_get(rec, "ca")), ca_fp) != 0)
            return false;
    }
    return fresh > 0;
}

/* The records of a Secret as read (NULL: none). @return new reference, NULL on ENOMEM. */
static json_t *secret_records(const json_t *obj)
{
    const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");

    return certkeeper_records_parse(json_string_value(json_object_get(ann, CERTKEEPER_ANNOTATION)));
}

/*
 * A copy of obj's annotations (other writers' kept) with CERTKEEPER_ANNOTATION set
 * to records (none when records is empty). @return new reference, NULL on ENOMEM.
 */
static json_t *annotations_with(const json_t *obj, const json_t *records)
{
    const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
    json_t *out = json_is_object(ann) ? json_deep_copy(ann) : json_object();
    char *text;

    if (out == NULL)
        return NULL;
    json_object_del(out, CERTKEEPER_ANNOTATION);
    if (json_object_size(records) == 0)
        return out;
    text = json_dumps(records, JSON_COMPACT | JSON_SORT_KEYS);
    if (text == NULL || json_object_set_new(out, CERTKEEPER_ANNOTATION, json_string(text)) != 0) {
        free(text);
        json_decref(out);
        return NULL;
    }
    free(text);
    return out;
}

/*
 * Write the Secret with data[] (PEM texts; NULL written as ""): a create when
 * s->obj is NULL, else an update at the resourceVersion read, keeping its type
 * and its annotations, with the serving records as records (borrowed; NULL: as read).
 * @return 0; WH_EEXISTS / WH_ECONFLICT when another writer was first.
 */
static int secret_write(struct certkeeper *ck, const struct secret_state *s,
                        const char *const data[5], const json_t *records, struct wh_error *err)
{
    json_t *obj = NULL;
    json_t *d = json_object();
    const json_t *meta = json_object_get(s->obj, "metadata");
    const char *type = json_string_value(json_object_get(s->obj, "type"));
    int rc;

    if (d == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    for (size_t i = 0; i < 5; i++) {
        char *b64 =
            certs_base64(data[i] != NULL ? data[i] : "", data[i] != NULL ? strlen(data[i]) : 0);

        if (b64 == NULL || json_object_set_new(d, secret_keys[i], json_string(b64)) != 0) {
            free(b64);
            json_decref(d);
            return wh_error_set(err, WH_ENOMEM, "out of memory");
        }
        free(b64);
    }
    obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:s, s:o}", "apiVersion", "v1", "kind",
                    "Secret", "metadata", "name", ck->secret, "namespace", ck->ns, "labels",
                    "app.kubernetes.io/name", "volcano-plugin-webhook", "type",
                    type != NULL ? type : "kubernetes.io/tls", "data", d);
    if (obj == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    if (s->obj == NULL) {
        rc = store_put(ck, obj, true, err);
    } else {
        const json_t *rv = json_object_get(meta, "resourceVersion");
        json_t *m = json_object_get(obj, "metadata");
        json_t *read = records == NULL ? secret_records(s->obj) : NULL;
        json_t *ann = annotations_with(s->obj, records != NULL ? records : read);

        json_decref(read);
        if ((json_is_string(rv) && json_object_set(m, "resourceVersion", (json_t *)rv) != 0)
            || ann == NULL
            || (json_object_size(ann) > 0
                && json_object_set_new(m, "annotations", json_incref(ann)) != 0)) {
            json_decref(ann);
            json_decref(obj);
            return wh_error_set(err, WH_ENOMEM, "out of memory");
        }
        json_decref(ann);
        rc = store_put(ck, obj, false, err);
    }
    json_decref(obj);
    return rc;
}

/* ---- the webhook configurations ---- */

/* What the API server holds: each configuration (NULL when absent). */
struct configs {
    json_t *obj[NCONFIGS];
};

static void configs_dispose(struct configs *c)
{
    for (size_t i = 0; i < NCONFIGS; i++) {
        json_decref(c->obj[i]);
        c->obj[i] = NULL;
    }
}

/* GET both configurations; an absent one stays NULL. @return 0 or the error. */
static int configs_read(struct certkeeper *ck, struct configs *c, struct wh_error *err)
{
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < NCONFIGS; i++) {
        int rc = k8s_get(ck->kc, ck->config_path[i], ck->timeout_ms, &c->obj[i], err);

        if (rc == WH_ENOTFOUND) {
            c->obj[i] = NULL;
            continue;
        }
        if (rc < 0) {
            configs_dispose(c);
            return rc;
        }
    }
    return 0;
}

/* Whether every webhook of config holds caBundle b64 exactly. */
static bool config_holds(const json_t *config, const char *b64)
{
    const json_t *webhooks = json_object_get(config, "webhooks");
    const json_t *wh;
    size_t i;

    json_array_foreach(webhooks, i, wh) {
        const char *have =
            json_string_value(json_object_get(json_object_get(wh, "clientConfig"), "caBundle"));

        if (have == NULL || strcmp(have, b64) != 0)
            return false;
    }
    return true;
}

/*
 * Whether configuration k is no longer the one read as `read` (another resourceVersion,
 * or gone). A JSON patch whose "test" of metadata.resourceVersion fails is answered
 * 422 Invalid, not 409 (kube-apiserver's patch handler; tests/apiserver.py does the
 * same): after a 422, reading again tells that race from a patch the server refuses.
 */
static bool config_changed(struct certkeeper *ck, size_t k, const json_t *read)
{
    const char *was =
        json_string_value(json_object_get(json_object_get(read, "metadata"), "resourceVersion"));
    struct wh_error e = {0, ""};
    json_t *now = NULL;
    const char *is;
    bool changed;
    int rc = k8s_get(ck->kc, ck->config_path[k], ck->timeout_ms, &now, &e);

    if (rc == WH_ENOTFOUND)
        return true;
    if (rc < 0)
        return false;
    is = json_string_value(json_object_get(json_object_get(now, "metadata"), "resourceVersion"));
    changed = was != NULL && is != NULL && strcmp(was, is) != 0;
    json_decref(now);
    return changed;
}

/* Add every current CA of every caBundle the API server holds to l. */
static int configs_add_cas(const struct configs *c, struct pem_list *l, long long now)
{
    for (size_t k = 0; k < NCONFIGS; k++) {
        const json_t *wh;
        size_t i;

        json_array_each(json_object_get(c->obj[k], "webhooks"), i, wh) {
            const char *b64 =
                json_string_value(json_object_get(json_object_get(wh, "clientConfig"), "caBundle"));
            char *pem = b64 != NULL ? certs_base64_decode(b64, NULL) : NULL;
            int rc = pem != NULL ? pem_list_add_text(l, pem, now) : 0;

            free(pem);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

/*
 * Whether cert_pem verifies under the caBundle of every webhook of every
 * configuration (and there is a MutatingWebhookConfiguration); why not in reason.
 */
static bool trusted_by_api(struct certkeeper *ck, const struct configs *c, const char *cert_pem,
                           char *reason, size_t len)
{
    if (c->obj[0] == NULL) {
        snprintf(reason, len, "%s %s not found", config_kinds[0], ck->webhook_config);
        return false;
    }
    for (size_t k = 0; k < NCONFIGS; k++) {
        const json_t *wh;
        size_t i;

        json_array_each(json_object_get(c->obj[k], "webhooks"), i, wh) {
            const char *name = json_string_value(json_object_get(wh, "name"));
            const char *b64 =
                json_string_value(json_object_get(json_object_get(wh, "clientConfig"), "caBundle"));
            char *pem = b64 != NULL ? certs_base64_decode(b64, NULL) : NULL;
            struct wh_error e = {0, ""};
            int rc;

            if (pem == NULL) {
                snprintf(reason, len, "%s %s webhook %s has no valid caBundle", config_kinds[k],
                         ck->webhook_config, name != NULL ? name : "?");
                return false;
            }
            rc = certs_verify_leaf(cert_pem, pem, ck->verify_name, &e);
            free(pem);
            if (rc < 0) {
                snprintf(reason, len,
                         "serving certificate not trusted by the caBundle of %s %s webhook %s: "
                         "%s",
                         config_kinds[k], ck->webhook_config, name != NULL ? name : "?", e.msg);
                return false;
            }
        }
    }
    return true;
}

/*
 * Set caBundle = b64 in every webhook of each configuration that does not hold it,
 * when the bundle changed since the last write or a check is due. *all_hold says
 * whether every configuration held it as read, before any patch of this round
 * (true when none exists): the API server's webhooks pick a new caBundle up
 * through an informer, so a certificate under a new CA waits one round more.
 * @return 0, or the first error (the other configuration is still tried).
 */
static int configs_sync(struct certkeeper *ck, struct configs *c, const char *b64, bool *all_hold,
                        struct wh_error *err)
{
    long long now_ms = clock_mono_ms();
    bool changed = ck->applied_b64 == NULL || strcmp(ck->applied_b64, b64) != 0;
    bool due = changed || now_ms >= ck->next_repair_ms;
    int first = 0;

    *all_hold = true;
    for (size_t k = 0; k < NCONFIGS; k++) {
        struct wh_error e = {0, ""};
        json_t *ops = NULL;
        size_t n = 0;
        int rc;

        bool appeared = c->obj[k] != NULL && !ck->seen[k];

        ck->seen[k] = c->obj[k] != NULL;
        if (c->obj[k] == NULL || config_holds(c->obj[k], b64))
            continue;
        if (!due && !appeared) {
            *all_hold = false;
            continue;
        }
        rc = cabundle_patch_build(c->obj[k], b64, &ops, &n, &e);
        if (rc == 0)
            rc = k8s_request(ck->kc, "PATCH", ck->config_path[k], ops,
                             "application/json-patch+json", ck->timeout_ms, NULL, &e);
        json_decref(ops);
        if (rc == WH_EAPI && k8s_error_reason_is(&e, "Invalid")
            && config_changed(ck, k, c->obj[k])) {
            char was[sizeof(e.msg)];

            snprintf(was, sizeof(was), "%s", e.msg);
            rc = wh_error_set(&e, WH_ECONFLICT, "%s %s changed since it was read (%s)",
                              config_kinds[k], ck->webhook_config, was);
        }
        if (rc < 0) {
            LOG_WARN("certkeeper: caBundle patch failed %s=%s code=\"%s\" err=%s", config_kinds[k],
                     ck->webhook_config, wh_error_str(rc), LOG_QUOTED(e.msg));
            *all_hold = false;
            if (first == 0)
                first = wh_error_set(err, rc, "%s", e.msg);
            continue;
        }
        *all_hold = false; /* patched now: trusted from the next round on */
        if (!changed && !appeared) {
            metric_counter_add(&ck->repairs, 1);
            LOG_WARN("certkeeper: caBundle changed outside the webhook, repaired %s=%s "
                     "webhooks=%zu",
                     config_kinds[k], ck->webhook_config, n);
        } else {
            LOG_INFO("certkeeper: caBundle set %s=%s webhooks=%zu", config_kinds[k],
                     ck->webhook_config, n);
        }
    }
    if (first == 0) {
        char *copy = strdup(b64);

        if (copy == NULL)
            return wh_error_set(err, WH_ENOMEM, "out of memory");
        free(ck->applied_b64);
        ck->applied_b64 = copy;
        if (due)
            ck->next_repair_ms = now_ms + ck->repair_ms;
    }
    return first;
}

/* ---- the Lease holder's round ---- */

/* Whether the Secret's CA pair signs: key matching, a CA certificate still current. */
static bool ca_usable_now(const struct secret_state *s, long long now)
{
    struct certs_pair ca = {s->data[S_CA_CRT], s->data[S_CA_KEY]};

    return ca.cert_pem != NULL && ca.key_pem != NULL && certs_pair_check(&ca, NULL) == 0
        && ca_cert_current(ca.cert_pem, now);
}

/* Whether the Secret's serving pair needs no new one: signed by ca_pem, for our name,
 * with renew_before or more left. */
static bool leaf_good(struct certkeeper *ck, const char *crt, const char *key, const char *ca_pem,
                      long long now)
{
    struct certs_pair leaf = {(char *)crt, (char *)key};
    long long na = 0;

    return crt != NULL && key != NULL && certs_pair_check(&leaf, NULL) == 0
        && certs_verify_leaf(crt, ca_pem, ck->verify_name, NULL) == 0
        && certs_not_after(crt, &na, NULL) == 0 && na - now >= ck->renew_before_s;
}

static int leader_round(struct certkeeper *ck, struct wh_error *err)
{
    struct secret_state s;
    struct configs c;
    struct pem_list bundle = {NULL, 0};
    struct certs_pair new_ca = {NULL, NULL};
    struct certs_pair new_leaf = {NULL, NULL};
    const char *data[5];
    char *bundle_pem = NULL;
    char *bundle_b64 = NULL;
    json_t *records = NULL;
    long long now = (long long)time(NULL);
    long long ca_end = 0;
    bool write = false;
    bool all_hold = false;
    size_t gone;
    int rc;

    memset(&c, 0, sizeof(c));
    rc = secret_read(ck, &s, err);
    if (rc < 0)
        return rc;
    rc = configs_read(ck, &c, err);
    if (rc < 0)
        goto out;
    for (size_t i = 0; i < 5; i++)
        data[i] = s.data[i];
    /* Records of replicas gone (none for record_ttl_s) are pruned with this round's write. */
    records = secret_records(s.obj);
    if (records == NULL)
        goto nomem;
    gone = certkeeper_records_prune(records, now, ck->record_ttl_s);
    if (gone > 0 && s.obj != NULL) {
        LOG_INFO("certkeeper: %zu serving record(s) older than %llds pruned", gone,
                 ck->record_ttl_s);
        write = true;
    }

    /* 1. The CA: kept, made anew (missing, garbage, expired), or rolled over. */
    if (s.data[S_BUNDLE] != NULL) {
        rc = pem_list_add_text(&bundle, s.data[S_BUNDLE], now);
        if (rc < 0)
            goto nomem;
    }
    if (!ca_usable_now(&s, now)) {
        if (s.obj != NULL)
            LOG_WARN("certkeeper: secret %s/%s holds no usable CA: making a new one", ck->ns,
                     ck->secret);
        else
            LOG_INFO("certkeeper: secret %s/%s not found: making a CA", ck->ns, ck->secret);
        /* What the API server trusts stays trusted: a replica may serve under it. */
        rc = configs_add_cas(&c, &bundle, now);
        if (rc < 0)
            goto nomem;
        rc = certs_generate_ca(&new_ca, ck->key_type, ck->ca_validity_s, err);
        if (rc < 0)
            goto out;
    } else if (!pem_list_has(&bundle, s.data[S_CA_CRT])) {
        /* A bundle lost or garbled: what the API server trusts stays trusted. */
        LOG_WARN("certkeeper: secret %s/%s: the trust bundle lacks the CA: rebuilding it", ck->ns,
                 ck->secret);
        rc = configs_add_cas(&c, &bundle, now);
        if (rc < 0)
            goto nomem;
    }
    if (new_ca.cert_pem == NULL && certs_not_after(s.data[S_CA_CRT], &ca_end, NULL) == 0
        && ca_end - now < 2 * ck->renew_before_s) {
        LOG_INFO("certkeeper: CA expires in %llds: rolling it over", ca_end - now);
        rc = certs_generate_ca(&new_ca, ck->key_type, ck->ca_validity_s, err);
        if (rc < 0)
            goto out;
    }
    if (new_ca.cert_pem != NULL) {
        data[S_CA_CRT] = new_ca.cert_pem;
        data[S_CA_KEY] = new_ca.key_pem;
        write = true;
    }
    rc = pem_list_add(&bundle, data[S_CA_CRT], strlen(data[S_CA_CRT]));
    if (rc < 0)
        goto nomem;

    /* 4. The old CAs leave once the pair under the CA has been out for drain_s and
     * every replica's fresh record names the CA: none serves under an old one. */
    if (bundle.n > 1 && new_ca.cert_pem == NULL
        && leaf_good(ck, s.data[S_TLS_CRT], s.data[S_TLS_KEY], data[S_CA_CRT], now)) {
        long long nb = 0;
        char fp[65] = "";
        bool drained = certs_not_before(s.data[S_TLS_CRT], &nb, NULL) == 0
            && now - (nb + 3600) >= ck->drain_s
            && certs_fingerprint_sha256(data[S_CA_CRT], fp, NULL) == 0;

        if (drained && !certkeeper_records_all_on(records, fp, now, ck->record_ttl_s))
            LOG_DEBUG("certkeeper: the old CA(s) stay: a replica may still serve under one");
        else if (drained) {
            struct pem_list only = {NULL, 0};

            rc = pem_list_add(&only, data[S_CA_CRT], strlen(data[S_CA_CRT]));
            if (rc < 0)
                goto nomem;
            LOG_INFO("certkeeper: %zu old CA(s) leave the trust bundle", bundle.n - 1);
            pem_list_dispose(&bundle);
            bundle = only;
        }
    }
    bundle_pem = pem_list_join(&bundle);
    if (bundle_pem == NULL)
        goto nomem;
    if (s.data[S_BUNDLE] == NULL || strcmp(s.data[S_BUNDLE], bundle_pem) != 0)
        write = true;
    data[S_BUNDLE] = bundle_pem;
    if (write) {
        rc = secret_write(ck, &s, data, records, err);
        if (rc < 0)
            goto out;
        /* Read again: the next write needs the new resourceVersion. */
        json_decref(records);
        records = NULL;
        secret_state_dispose(&s);
        rc = secret_read(ck, &s, err);
        if (rc < 0)
            goto out;
        /* The old texts are gone with the old state: all from what was read now. */
        for (size_t i = 0; i < 5; i++)
            data[i] = s.data[i];
        if (s.obj == NULL || data[S_CA_CRT] == NULL || data[S_CA_KEY] == NULL) {
            rc = wh_error_set(err, WH_ECONFLICT, "secret %s/%s changed while written", ck->ns,
                              ck->secret);
            goto out;
        }
        write = false;
    }

    /* 2. The caBundles. */
    bundle_b64 = certs_base64(bundle_pem, strlen(bundle_pem));
    if (bundle_b64 == NULL)
        goto nomem;
    rc = configs_sync(ck, &c, bundle_b64, &all_hold, err);
    if (rc < 0)
        goto out;

    /* 3. A serving certificate signed by the CA, once the API server trusts the CA (the
     * caBundles held it when read). */
    if (!leaf_good(ck, s.data[S_TLS_CRT], s.data[S_TLS_KEY], data[S_CA_CRT], now)) {
        struct certs_pair ca = {(char *)data[S_CA_CRT], (char *)data[S_CA_KEY]};

        if (!all_hold) {
            LOG_INFO("certkeeper: new serving certificate waits for the caBundle");
        } else {
            rc = certs_generate_leaf_seconds(&new_leaf, NULL, &ca, ck->key_type, ck->sans,
                                             ck->nsans, ck->validity_s, err);
            if (rc < 0)
                goto out;
            data[S_TLS_CRT] = new_leaf.cert_pem;
            data[S_TLS_KEY] = new_leaf.key_pem;
            rc = secret_write(ck, &s, data, records, err);
            if (rc < 0)
                goto out;
            LOG_INFO("certkeeper: serving certificate issued secret=%s/%s", ck->ns, ck->secret);
        }
    }
    rc = 0;
    goto out;
nomem:
    rc = wh_error_set(err, WH_ENOMEM, "out of memory");
out:
    json_decref(records);
    free(bundle_b64);
    free(bundle_pem);
    pem_list_dispose(&bundle);
    certs_pair_dispose(&new_ca);
    certs_pair_dispose(&new_leaf);
    configs_dispose(&c);
    secret_state_dispose(&s);
    return rc;
}

/* ---- every replica's round ---- */

static void set_ready(struct certkeeper *ck, bool ready, const char *reason)
{
    pthread_mutex_lock(&ck->mu);
    if (ready != ck->ready || strcmp(reason, ck->reason) != 0) {
        if (ready)
            LOG_INFO("certkeeper: ready");
        else
            LOG_INFO("certkeeper: not ready: %s", reason);
    }
    ck->ready = ready;
    snprintf(ck->reason, sizeof(ck->reason), "%s", reason);
    pthread_mutex_unlock(&ck->mu);
}

/*
 * The SHA-256 of the CA that signed cert_pem, among the Secret's bundle and the
 * caBundles the API server holds, into fp ("" when none). @return 0 or WH_ENOMEM.
 */
static int issuer_fingerprint(struct certkeeper *ck, const struct secret_state *s,
                              const struct configs *c, const char *cert_pem, char fp[65])
{
    struct pem_list cas = {NULL, 0};
    long long now = (long long)time(NULL);
    int rc = 0;

    fp[0] = '\0';
    if (s->data[S_BUNDLE] != NULL)
        rc = pem_list_add_text(&cas, s->data[S_BUNDLE], now);
    if (rc == 0 && s->data[S_CA_CRT] != NULL)
        rc = pem_list_add_text(&cas, s->data[S_CA_CRT], now);
    if (rc == 0)
        rc = configs_add_cas(c, &cas, now);
    for (size_t i = 0; rc == 0 && i < cas.n; i++)
        if (certs_verify_leaf(cert_pem, cas.v[i], ck->verify_name, NULL) == 0) {
            if (certs_fingerprint_sha256(cas.v[i], fp, NULL) < 0)
                fp[0] = '\0';
            break;
        }
    pem_list_dispose(&cas);
    return rc;
}

/*
 * Record what this replica serves in the Secret's annotation when its record is
 * missing, names another CA or is a third of record_ttl_s old: an update of the
 * Secret as read (s), read again and retried after a 409. Nothing without a
 * Secret (the leader makes it; the next round records). @return 0 or the error.
 */
static int record_serving(struct certkeeper *ck, const struct secret_state *s, struct wh_error *err)
{
    long long now = (long long)time(NULL);
    json_t *obj = s->obj != NULL ? json_incref(s->obj) : NULL;
    int rc = 0;

    if (ck->served_ca_fp[0] == '\0')
        goto out;
    for (int attempt = 0; attempt < RECORD_TRIES && obj != NULL; attempt++) {
        json_t *records = secret_records(obj);
        const json_t *mine = json_object_get(records, ck->replica);
        const char *ca = json_string_value(json_object_get(mine, "ca"));
        long long t = (long long)json_integer_value(json_object_get(mine, "time"));
        json_t *ann = NULL;
        json_t *upd = NULL;

        if (records == NULL) {
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
            goto out;
        }
        if (ca != NULL && strcmp(ca, ck->served_ca_fp) == 0 && t <= now
            && t > now - ck->record_ttl_s / 3) {
            json_decref(records);
            goto out; /* fresh and right */
        }
        if (json_object_set_new(
                records, ck->replica,
                json_pack("{s:s, s:I}", "ca", ck->served_ca_fp, "time", (json_int_t)now))
            == 0)
            ann = annotations_with(obj, records);
        json_decref(records);
        upd = ann != NULL ? json_deep_copy(obj) : NULL;
        if (upd == NULL
            || json_object_set(json_object_get(upd, "metadata"), "annotations", ann) != 0) {
            json_decref(ann);
            json_decref(upd);
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
            goto out;
        }
        json_decref(ann);
        rc = store_put(ck, upd, false, err);
        json_decref(upd);
        if (rc == 0) {
            ck->recorded_at = now;
            LOG_DEBUG("certkeeper: recorded what this replica serves replica=%s ca=%.16s",
                      ck->replica, ck->served_ca_fp);
            goto out;
        }
        if (rc != WH_ECONFLICT)
            goto out;
        json_decref(obj); /* another writer first: read again */
        obj = NULL;
        rc = store_get(ck, &obj, err);
        if (rc == WH_ENOTFOUND) {
            rc = 0;
            goto out;
        }
        if (rc < 0)
            goto out;
    }
out:
    json_decref(obj);
    return rc;
}

static int replica_round(struct certkeeper *ck, struct wh_error *err)
{
    struct secret_state s;
    struct configs c;
    char reason[256] = "";
    char *served = NULL;
    int rc;

    memset(&c, 0, sizeof(c));
    rc = secret_read(ck, &s, err);
    if (rc == 0)
        rc = configs_read(ck, &c, err);
    if (rc < 0) {
        /* Readiness stays as it was: the API server, not the certificate, is away. */
        secret_state_dispose(&s);
        return rc;
    }
    served = certkeeper_served_cert(ck);
    if (s.data[S_TLS_CRT] != NULL && s.data[S_TLS_KEY] != NULL
        && (served == NULL || strcmp(served, s.data[S_TLS_CRT]) != 0)) {
        struct certs_pair p = {s.data[S_TLS_CRT], s.data[S_TLS_KEY]};
        char why[256] = "";
        bool take = false;

        if (certs_pair_check(&p, NULL) == 0) {
            take = trusted_by_api(ck, &c, p.cert_pem, why, sizeof(why));
            /* Serving nothing yet, there is nothing to keep: a pair of the Secret's own
             * bundle is the best there is. */
            if (!take && served == NULL && s.data[S_BUNDLE] != NULL)
                take = certs_verify_leaf(p.cert_pem, s.data[S_BUNDLE], ck->verify_name, NULL) == 0;
        }
        if (take) {
            char *copy = strdup(p.cert_pem);

            if (copy == NULL) {
                rc = wh_error_set(err, WH_ENOMEM, "out of memory");
                goto out;
            }
            if (ck->on_pair != NULL) {
                struct wh_error perr = {0, ""};
                int prc = ck->on_pair(ck->userdata, &p, &perr);

                if (prc < 0) {
                    LOG_WARN("certkeeper: the new pair could not be served code=\"%s\" "
                             "err=%s",
                             wh_error_str(prc), LOG_QUOTED(perr.msg));
                    free(copy);
                    goto readiness;
                }
            }
            pthread_mutex_lock(&ck->mu);
            free(ck->served_cert);
            ck->served_cert = copy;
            pthread_mutex_unlock(&ck->mu);
            free(served);
            served = strdup(copy);
            rc = issuer_fingerprint(ck, &s, &c, p.cert_pem, ck->served_ca_fp);
            if (rc < 0) {
                rc = wh_error_set(err, rc, "out of memory");
                goto out;
            }
            LOG_INFO("certkeeper: serving the pair of secret %s/%s", ck->ns, ck->secret);
        } else if (served != NULL) {
            LOG_DEBUG("certkeeper: the secret's pair is not trusted yet, keeping ours: %s", why);
        }
    }
readiness:
    if (served != NULL) {
        struct wh_error rerr = {0, ""};
        int rrc = record_serving(ck, &s, &rerr);

        if (rrc < 0) /* the leader keeps the old CAs meanwhile: nothing breaks */
            LOG_WARN("certkeeper: cannot record what this replica serves code=\"%s\" err=%s",
                     wh_error_str(rrc), LOG_QUOTED(rerr.msg));
    }
    if (served == NULL)
        set_ready(ck, false, "no serving certificate yet");
    else if (trusted_by_api(ck, &c, served, reason, sizeof(reason)))
        set_ready(ck, true, "");
    else
        set_ready(ck, false, reason);
out:
    free(served);
    configs_dispose(&c);
    secret_state_dispose(&s);
    return rc;
}

/* ---- the keeper ---- */

int certkeeper_sync(struct certkeeper *ck, struct wh_error *err)
{
    struct wh_error lerr = {0, ""};
    int lrc = 0;
    int rc;

    if (atomic_load(&ck->leading)) {
        lrc = leader_round(ck, &lerr);
        if (lrc == WH_EEXISTS || lrc == WH_ECONFLICT)
            LOG_INFO("certkeeper: another writer came first (%s): reading again", lerr.msg);
        else if (lrc < 0)
            LOG_WARN("certkeeper: round failed code=\"%s\" err=%s", wh_error_str(lrc),
                     LOG_QUOTED(lerr.msg));
    }
    rc = replica_round(ck, err);
    if (rc < 0)
        LOG_WARN("certkeeper: cannot read secret %s/%s or the webhook configurations "
                 "code=\"%s\" err=%s",
                 ck->ns, ck->secret, wh_error_str(rc), LOG_QUOTED(err != NULL ? err->msg : ""));
    if (lrc < 0)
        return wh_error_set(err, lrc, "%s", lerr.msg);
    return rc;
}

void certkeeper_set_leading(struct certkeeper *ck, bool leading)
{
    atomic_store(&ck->leading, leading);
}

bool certkeeper_ready(struct certkeeper *ck, char *reason, size_t len)
{
    bool ready;

    pthread_mutex_lock(&ck->mu);
    ready = ck->ready;
    if (!ready && reason != NULL && len > 0)
        snprintf(reason, len, "%s", ck->reason);
    pthread_mutex_unlock(&ck->mu);
    return ready;
}

unsigned long long certkeeper_repairs(struct certkeeper *ck)
{
    return metric_counter_get(&ck->repairs);
}

char *certkeeper_served_cert(struct certkeeper *ck)
{
    char *copy = NULL;

    pthread_mutex_lock(&ck->mu);
    if (ck->served_cert != NULL)
        copy = strdup(ck->served_cert);
    pthread_mutex_unlock(&ck->mu);
    return copy;
}

/* Sleep until poll_ms passed or a watch event came. @return true when stopping. */
static bool keeper_sleep(struct certkeeper *ck)
{
    long long until = clock_mono_ms() + ck->poll_ms;

    while (clock_mono_ms() < until) {
        if (atomic_exchange(&ck->kick, false))
            return false;
        if (backoff_thread_sleep_ms(&ck->th, KICK_STEP_MS))
            return true;
    }
    return false;
}

static void *keeper_thread(void *arg)
{
    struct certkeeper *ck = arg;

    do {
        struct wh_error err = {0, ""};

        (void)certkeeper_sync(ck, &err); /* logged there; the next round tries again */
    } while (!keeper_sleep(ck));
    return NULL;
}

/* One watch request's view, on the watch thread. */
struct watch_run {
    struct certkeeper *ck;
    unsigned events; /* delivered, bookmarks included */
};

/* watch_fn: any change of the Secret (made, written, deleted) starts a round. */
static int watch_event(void *userdata, enum watch_event_type type, json_t *object)
{
    struct watch_run *run = userdata;

    (void)object;
    run->events++;
    if (type != WATCH_BOOKMARK)
        atomic_store(&run->ck->kick, true);
    return 0;
}

/*
 * The Secret's watch, from the last resourceVersion seen; 410 Gone starts again from
 * now (and a round, as the rounds read everything anyway). Failures back off to
 * poll_ms at most and are logged at debug: the rounds are the fallback. A watch
 * over at once with no event (a server that answers every watch with 410, or ends
 * it) is a failure too, as in the informer: else the thread spins.
 */
static void *watch_thread(void *arg)
{
    struct certkeeper *ck = arg;
    unsigned failures = 0;
    char *rv = NULL;

    while (!backoff_thread_stopping(&ck->wth)) {
        struct watch_params p = {ck->watch_path, rv, WATCH_TIMEOUT_S, 0,
                                 backoff_thread_flag(&ck->wth)};
        struct wh_error err = {0, ""};
        struct watch_run run = {ck, 0};
        char *last = NULL;
        long long started = clock_mono_ms();
        int rc = k8s_watch(ck->kc, &p, watch_event, &run, &last, &err);
        bool quick = run.events == 0 && clock_mono_ms() - started < SHORT_WATCH_MS;

        if (last != NULL) {
            free(rv);
            rv = last;
        }
        if (rc == WH_EGONE) {
            free(rv);
            rv = NULL;
            atomic_store(&ck->kick, true);
        }
        if ((rc == 0 || rc == WH_EGONE) && !quick) {
            failures = 0;
            continue;
        }
        if (failures < 32)
            failures++;
        LOG_DEBUG("certkeeper: watch of secret %s/%s failed code=\"%s\" err=%s", ck->ns, ck->secret,
                  wh_error_str(rc), LOG_QUOTED(err.msg));
        if (backoff_thread_sleep_ms(&ck->wth, backoff_delay_ms(200, ck->poll_ms, failures)))
            break;
    }
    free(rv);
    return NULL;
}

int certkeeper_start(struct certkeeper *ck, struct wh_error *err)
{
    if (ck->th.started)
        return wh_error_set(err, WH_EINVAL, "certkeeper already started");
    if (backoff_thread_start(&ck->th, keeper_thread, ck) < 0)
        return wh_error_set(err, WH_ERROR, "certkeeper: cannot start its thread: %s",
                            strerror(errno));
    if (!ck->in_memory && backoff_thread_start(&ck->wth, watch_thread, ck) < 0)
        return wh_error_set(err, WH_ERROR, "certkeeper: cannot start the watch thread: %s",
                            strerror(errno));
    return 0;
}

void certkeeper_destroy(struct certkeeper *ck)
{
    if (ck == NULL)
        return;
    backoff_thread_stop(&ck->wth); /* nothing when never started */
    backoff_thread_stop(&ck->th);
    json_decref(ck->mem);
    free(ck->replica);
    free(ck->watch_path);
    pthread_mutex_destroy(&ck->mu);
    free(ck->ns);
    free(ck->secret);
    free(ck->secret_path);
    free(ck->secrets_path);
    free(ck->webhook_config);
    for (size_t i = 0; i < NCONFIGS; i++)
        free(ck->config_path[i]);
    free(ck->verify_name);
    for (size_t i = 0; i < 4; i++)
        free(ck->sans_text[i]);
    for (size_t i = 0; i < ck->nextra; i++)
        free(ck->extra[i]);
    free(ck->extra);
    free(ck->applied_b64);
    free(ck->served_cert);
    free(ck);
}

static bool empty(const char *s)
{
    return s == NULL || s[0] == '\0';
}

/* The durations of cfg, defaults filled in, checked. @return 0 or WH_EINVAL. */
static int durations_init(struct certkeeper *ck, const struct certkeeper_config *cfg,
                          struct wh_error *err)
{
    if (cfg->validity_s < 0 || cfg->ca_validity_s < 0 || cfg->renew_before_s < 0 || cfg->drain_s < 0
        || cfg->poll_ms < 0 || cfg->repair_ms < 0 || cfg->request_timeout_ms < 0
        || cfg->record_ttl_s < 0)
        return wh_error_set(err, WH_EINVAL, "certkeeper: negative duration");
    ck->validity_s = cfg->validity_s > 0 ? cfg->validity_s : CERTKEEPER_DEFAULT_VALIDITY_S;
    ck->ca_validity_s =
        cfg->ca_validity_s > 0 ? cfg->ca_validity_s : CERTKEEPER_DEFAULT_CA_VALIDITY_S;
    ck->renew_before_s =
        cfg->renew_before_s > 0 ? cfg->renew_before_s : CERTKEEPER_DEFAULT_RENEW_BEFORE_S;
    ck->poll_ms = cfg->poll_ms > 0 && cfg->poll_ms <= CERTKEEPER_MAX_POLL_MS
        ? cfg->poll_ms
        : CERTKEEPER_MAX_POLL_MS;
    ck->repair_ms = cfg->repair_ms > 0 ? cfg->repair_ms : CERTKEEPER_DEFAULT_REPAIR_MS;
    ck->timeout_ms = cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : DEFAULT_TIMEOUT_MS;
    ck->drain_s = cfg->drain_s > 0 ? cfg->drain_s : 3 * (ck->poll_ms + 999) / 1000;
    ck->record_ttl_s = cfg->record_ttl_s > 0 ? cfg->record_ttl_s : 60 * (ck->poll_ms + 999) / 1000;
    if (ck->record_ttl_s < 3)
        ck->record_ttl_s = 3; /* refreshed every third of it: whole seconds */
    if (ck->renew_before_s >= ck->validity_s)
        return wh_error_set(err, WH_EINVAL,
                            "certkeeper: renew-before %llds is not below the validity %llds",
                            ck->renew_before_s, ck->validity_s);
    if (ck->ca_validity_s < ck->validity_s)
        return wh_error_set(err, WH_EINVAL,
                            "certkeeper: CA validity %llds is below the serving validity %llds",
                            ck->ca_validity_s, ck->validity_s);
    /* The rollover starts 2 * renew_before before the CA's end: a new CA must not qualify. */
    if (ck->ca_validity_s <= 2 * ck->renew_before_s)
        return wh_error_set(err, WH_EINVAL,
                            "certkeeper: CA validity %llds is not above twice the renew-before "
                            "%llds",
                            ck->ca_validity_s, ck->renew_before_s);
    return 0;
}

/* The Service's four names (as gen-certs), then the extra SANs. @return 0 or WH_ENOMEM. */
static int sans_init(struct certkeeper *ck, const struct certkeeper_config *cfg, const char *sns)
{
    static const char *const suffix[4] = {NULL, "", ".svc", ".svc.cluster.local"};

    for (size_t i = 0; i < 4; i++) {
        size_t n = strlen(cfg->service) + strlen(sns) + 32;

        ck->sans_text[i] = malloc(n);
        if (ck->sans_text[i] == NULL)
            return WH_ENOMEM;
        if (suffix[i] == NULL)
            snprintf(ck->sans_text[i], n, "%s", cfg->service);
        else
            snprintf(ck->sans_text[i], n, "%s.%s%s", cfg->service, sns, suffix[i]);
        ck->sans[ck->nsans++] = ck->sans_text[i];
    }
    ck->extra = calloc(cfg->nextra + 1, sizeof(*ck->extra));
    if (ck->extra == NULL)
        return WH_ENOMEM;
    for (size_t i = 0; i < cfg->nextra; i++) {
        ck->extra[i] = strdup(cfg->extra_sans[i]);
        if (ck->extra[i] == NULL)
            return WH_ENOMEM;
        ck->nextra++;
        ck->sans[ck->nsans++] = ck->extra[i];
    }
    ck->verify_name = strdup(ck->sans_text[2]);
    return ck->verify_name != NULL ? 0 : WH_ENOMEM;
}

int certkeeper_create(struct certkeeper **out, const struct certkeeper_config *cfg,
                      struct wh_error *err)
{
    struct certkeeper *ck;
    const char *sns;
    json_t *probe;
    int rc;

    *out = NULL;
    if (cfg->kc == NULL)
        return wh_error_set(err, WH_EINVAL, "certkeeper: no API client");
    if (empty(cfg->ns) || empty(cfg->secret))
        return wh_error_set(err, WH_EINVAL, "certkeeper: no Secret namespace or name");
    if (empty(cfg->service))
        return wh_error_set(err, WH_EINVAL, "certkeeper: no service name");
    if (empty(cfg->webhook_config))
        return wh_error_set(err, WH_EINVAL, "certkeeper: no webhook configuration name");
    if (empty(cfg->replica))
        return wh_error_set(err, WH_EINVAL, "certkeeper: no replica name");
    /* The record's key in a JSON annotation: jansson would refuse it on every round. */
    probe = json_string(cfg->replica);
    if (probe == NULL)
        return wh_error_set(err, WH_EINVAL, "certkeeper: replica name is not valid UTF-8");
    json_decref(probe);
    if (cfg->nextra > CERTKEEPER_MAX_SANS)
        return wh_error_set(err, WH_EINVAL, "certkeeper: more than %d extra names",
                            CERTKEEPER_MAX_SANS);
    for (size_t i = 0; i < cfg->nextra; i++)
        if (empty(cfg->extra_sans[i]))
            return wh_error_set(err, WH_EINVAL, "certkeeper: empty extra name");
    sns = empty(cfg->service_ns) ? cfg->ns : cfg->service_ns;
    ck = calloc(1, sizeof(*ck));
    if (ck == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    if (pthread_mutex_init(&ck->mu, NULL) != 0) {
        free(ck);
        return wh_error_set(err, WH_ERROR, "certkeeper: cannot create a mutex");
    }
    ck->kc = cfg->kc;
    ck->key_type = cfg->key_type;
    ck->on_pair = cfg->on_pair;
    ck->userdata = cfg->userdata;
    ck->in_memory = cfg->in_memory;
    atomic_init(&ck->leading, false);
    atomic_init(&ck->kick, false);
    snprintf(ck->reason, sizeof(ck->reason), "no serving certificate yet");
    rc = durations_init(ck, cfg, err);
    if (rc < 0)
        goto fail;
    ck->ns = strdup(cfg->ns);
    ck->secret = strdup(cfg->secret);
    ck->webhook_config = strdup(cfg->webhook_config);
    ck->secret_path = k8s_path("", "v1", cfg->ns, "secrets", cfg->secret);
    ck->secrets_path = k8s_path("", "v1", cfg->ns, "secrets", NULL);
    ck->replica = strdup(cfg->replica);
    if (ck->secrets_path != NULL) {
        size_t n = strlen(ck->secrets_path) + strlen(cfg->secret) + 40;

        ck->watch_path = malloc(n);
        if (ck->watch_path != NULL) /* a Secret name needs no escaping: a DNS subdomain */
            snprintf(ck->watch_path, n, "%s?fieldSelector=metadata.name%%3D%s", ck->secrets_path,
                     cfg->secret);
    }
    for (size_t i = 0; i < NCONFIGS; i++)
        ck->config_path[i] = k8s_path(WEBHOOK_GROUP, WEBHOOK_VERSION, NULL, config_resources[i],
                                      cfg->webhook_config);
    if (ck->ns == NULL || ck->secret == NULL || ck->webhook_config == NULL
        || ck->secret_path == NULL || ck->secrets_path == NULL || ck->replica == NULL
        || ck->watch_path == NULL || ck->config_path[0] == NULL || ck->config_path[1] == NULL
        || sans_init(ck, cfg, sns) < 0) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto fail;
    }
    *out = ck;
    return 0;
fail:
    certkeeper_destroy(ck);
    return rc;
}
