/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_certkeeper.c - managed certificates against tests/apiserver.py: a fresh
 * install (the Secret's keys, every caBundle of the Mutating and Validating
 * configurations), a follower that waits for the leader, two leaders racing on
 * an empty namespace (one CA), a serving-certificate renewal and a CA rollover in
 * seconds (which CA signed the served certificate at each step, the bundle in
 * order), a caBundle changed by hand (repaired at the interval, counted), the
 * Secret deleted and overwritten with garbage (no replica ever serves a
 * certificate the caBundle does not trust), an expired pair at start, and the
 * readiness reasons.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "certs/certs.h"
#include "controller/certkeeper.h"
#include "tests/apitest.h"
#include "tests/testutil.h"

#define NS          "vpw-system"
#define SECRET      "vpw-certs"
#define SECRET_PATH "/api/v1/namespaces/" NS "/secrets/" SECRET
#define MWC_PATH    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/vpw"
#define VWC_PATH    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/vpw"
#define SVC_NAME    "vpw.vpw-system.svc"

static struct apitest api;

static void api_setup(void)
{
    apitest_start(&api, NULL);
}

static void api_teardown(void)
{
    apitest_stop(&api);
}

static const char *const mwc =
    "{\"apiVersion\": \"admissionregistration.k8s.io/v1\","
    " \"kind\": \"MutatingWebhookConfiguration\", \"metadata\": {\"name\": \"vpw\"},"
    " \"webhooks\": [{\"name\": \"a.example.org\", \"clientConfig\": {\"caBundle\": \"cGxhY2U=\","
    " \"service\": {\"name\": \"vpw\", \"namespace\": \"vpw-system\"}}},"
    " {\"name\": \"b.example.org\", \"clientConfig\": {"
    " \"service\": {\"name\": \"vpw\", \"namespace\": \"vpw-system\"}}}]}";

static const char *const vwc =
    "{\"apiVersion\": \"admissionregistration.k8s.io/v1\","
    " \"kind\": \"ValidatingWebhookConfiguration\", \"metadata\": {\"name\": \"vpw\"},"
    " \"webhooks\": [{\"name\": \"v.example.org\", \"clientConfig\": {"
    " \"service\": {\"name\": \"vpw\", \"namespace\": \"vpw-system\"}}}]}";

/* What on_pair was handed. */
struct served {
    pthread_mutex_t mu;
    int calls;
    int refuse; /* answer this many calls with an error */
    char *cert; /* the last pair's certificate */
};

static int on_pair(void *userdata, const struct certs_pair *pair, struct wh_error *err)
{
    struct served *s = userdata;
    int rc = 0;

    pthread_mutex_lock(&s->mu);
    s->calls++;
    if (s->refuse > 0) {
        s->refuse--;
        rc = wh_error_set(err, WH_EINVAL, "the server refused the pair");
    } else {
        free(s->cert);
        s->cert = strdup(pair->cert_pem);
    }
    ck_assert_ptr_nonnull(pair->key_pem);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static void served_init(struct served *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
}

static void served_dispose(struct served *s)
{
    free(s->cert);
    pthread_mutex_destroy(&s->mu);
}

static const char *const extra_sans[] = {"vpw.example.org"};

/* A keeper on the test server with short durations (seconds), handing pairs to s. */
/* Each keeper a replica of its own: replica-1, replica-2, ... */
static int nreplicas;

static struct certkeeper *keeper(struct k8s_client *kc, struct served *s, long long validity_s,
                                 long long ca_validity_s, long long renew_before_s, long repair_ms)
{
    char name[32];
    struct certkeeper_config cfg = {
        .kc = kc,
        .ns = NS,
        .secret = SECRET,
        .service = "vpw",
        .extra_sans = extra_sans,
        .nextra = 1,
        .webhook_config = "vpw",
        .validity_s = validity_s,
        .ca_validity_s = ca_validity_s,
        .renew_before_s = renew_before_s,
        .drain_s = 1,
        .record_ttl_s = 30,
        .replica = name,
        .poll_ms = 100,
        .repair_ms = repair_ms,
        .request_timeout_ms = 5000,
        .on_pair = on_pair,
        .userdata = s,
    };
    struct certkeeper *ck = NULL;
    struct wh_error err = {0, ""};

    snprintf(name, sizeof(name), "replica-%d", ++nreplicas);
    ck_assert_msg(certkeeper_create(&ck, &cfg, &err) == 0, "%s", err.msg);
    return ck;
}

static void sync_ok(struct certkeeper *ck)
{
    struct wh_error err = {0, ""};
    int rc = certkeeper_sync(ck, &err);

    ck_assert_msg(rc == 0, "certkeeper_sync: %s (%s)", wh_error_str(rc), err.msg);
}

/* The Secret's data[key], decoded (malloc'd), or NULL when absent. */
static char *secret_get(const char *key)
{
    json_t *obj = NULL;
    const char *b64;
    char *text = NULL;

    ck_assert_int_eq(apitest_call(&api, "GET", SECRET_PATH, NULL, true, &obj), 200);
    b64 = json_string_value(json_object_get(json_object_get(obj, "data"), key));
    if (b64 != NULL)
        text = certs_base64_decode(b64, NULL);
    json_decref(obj);
    return text;
}

/* The Secret's data keys, comma-separated, in the order jansson sorts them. */
static void assert_secret_keys(void)
{
    json_t *obj = NULL;

    ck_assert_int_eq(apitest_call(&api, "GET", SECRET_PATH, NULL, true, &obj), 200);
    ck_assert_str_eq(json_string_value(json_object_get(obj, "type")), "kubernetes.io/tls");
    ck_assert_uint_eq(json_object_size(json_object_get(obj, "data")), 5);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(obj, "data"), "ca.crt"));
    ck_assert_ptr_nonnull(json_object_get(json_object_get(obj, "data"), "ca.key"));
    ck_assert_ptr_nonnull(json_object_get(json_object_get(obj, "data"), "ca-bundle.crt"));
    ck_assert_ptr_nonnull(json_object_get(json_object_get(obj, "data"), "tls.crt"));
    ck_assert_ptr_nonnull(json_object_get(json_object_get(obj, "data"), "tls.key"));
    json_decref(obj);
}

/* Every webhook of the configuration at path holds base64 of pem (NULL: has none). */
static void assert_ca_bundle(const char *path, size_t nwebhooks, const char *pem)
{
    json_t *cfg = NULL;
    json_t *wh;
    size_t i;
    char *want = pem != NULL ? certs_base64(pem, strlen(pem)) : NULL;

    ck_assert_int_eq(apitest_call(&api, "GET", path, NULL, true, &cfg), 200);
    ck_assert_uint_eq(json_array_size(json_object_get(cfg, "webhooks")), nwebhooks);
    json_array_foreach(json_object_get(cfg, "webhooks"), i, wh) {
        const char *got =
            json_string_value(json_object_get(json_object_get(wh, "clientConfig"), "caBundle"));

        if (want == NULL)
            ck_assert_ptr_null(got);
        else
            ck_assert_msg(got != NULL && strcmp(got, want) == 0, "%s webhooks[%zu] caBundle %s",
                          path, i, got != NULL ? got : "(none)");
    }
    json_decref(cfg);
    free(want);
}

/* a then b, as one text (malloc'd). */
static char *concat(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 1;
    char *out = malloc(n);

    ck_assert_ptr_nonnull(out);
    snprintf(out, n, "%s%s", a, b);
    return out;
}

static bool signed_by(const char *cert, const char *ca)
{
    return certs_verify_leaf(cert, ca, SVC_NAME, NULL) == 0;
}

/* Set the caBundle of webhook i of the configuration at path by hand (a PUT). */
static void hand_set_ca_bundle(const char *path, size_t i, const char *b64)
{
    json_t *cfg = NULL;
    char *body;

    ck_assert_int_eq(apitest_call(&api, "GET", path, NULL, true, &cfg), 200);
    json_object_set_new(
        json_object_get(json_array_get(json_object_get(cfg, "webhooks"), i), "clientConfig"),
        "caBundle", json_string(b64));
    json_object_del(json_object_get(cfg, "metadata"), "resourceVersion");
    body = json_dumps(cfg, JSON_COMPACT);
    ck_assert_int_eq(apitest_call(&api, "PUT", path, body, true, NULL), 200);
    free(body);
    json_decref(cfg);
}

/* Sleep until the certificate has less than left_s seconds left. */
static void wait_until_left(const char *pem, long long left_s)
{
    long long na = 0;

    ck_assert_int_eq(certs_not_after(pem, &na, NULL), 0);
    while ((long long)time(NULL) <= na - left_s)
        apitest_nap(50);
}

START_TEST(test_create_refusals)
{
    struct k8s_client *kc = apitest_client(&api);
    struct certkeeper_config cfg = {.kc = kc,
                                    .ns = NS,
                                    .secret = SECRET,
                                    .service = "vpw",
                                    .webhook_config = "vpw",
                                    .replica = "pod-a"};
    struct certkeeper *ck = NULL;
    struct wh_error err = {0, ""};
    char reason[256];

    cfg.secret = "";
    ck_assert_int_eq(certkeeper_create(&ck, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "certkeeper: no Secret namespace or name");
    ck_assert_ptr_null(ck);
    cfg.secret = SECRET;
    cfg.webhook_config = NULL;
    ck_assert_int_eq(certkeeper_create(&ck, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "certkeeper: no webhook configuration name");
    cfg.webhook_config = "vpw";
    cfg.replica = "";
    ck_assert_int_eq(certkeeper_create(&ck, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "certkeeper: no replica name");
    /* Not a JSON string: its record could never be written (the annotation is JSON). */
    cfg.replica = "pod-\xff";
    ck_assert_int_eq(certkeeper_create(&ck, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "certkeeper: replica name is not valid UTF-8");
    ck_assert_ptr_null(ck);
    cfg.replica = "pod-a";
    cfg.validity_s = 10;
    cfg.renew_before_s = 10;
    ck_assert_int_eq(certkeeper_create(&ck, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "certkeeper: renew-before 10s is not below the validity 10s");
    cfg.renew_before_s = 5;
    cfg.ca_validity_s = 9;
    ck_assert_int_eq(certkeeper_create(&ck, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "certkeeper: CA validity 9s is below the serving validity 10s");
    cfg.renew_before_s = 6;
    cfg.ca_validity_s = 12;
    ck_assert_int_eq(certkeeper_create(&ck, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "certkeeper: CA validity 12s is not above twice the renew-before 6s");
    cfg.renew_before_s = 5;
    cfg.ca_validity_s = -1;
    ck_assert_int_eq(certkeeper_create(&ck, &cfg, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "certkeeper: negative duration");
    cfg.ca_validity_s = 0;
    cfg.validity_s = 0;
    cfg.renew_before_s = 0;
    ck_assert_int_eq(certkeeper_create(&ck, &cfg, &err), 0);
    /* Not started, never synced: not ready. */
    ck_assert(!certkeeper_ready(ck, reason, sizeof(reason)));
    ck_assert_str_eq(reason, "no serving certificate yet");
    ck_assert_ptr_null(certkeeper_served_cert(ck));
    ck_assert_uint_eq(certkeeper_repairs(ck), 0);
    certkeeper_destroy(ck);
    certkeeper_destroy(NULL);
    ck_assert_int_eq(apitest_total(&api), 0); /* nothing was sent */
    k8s_client_destroy(kc);
}
END_TEST

/* An empty namespace: one round makes the Secret and sets every caBundle, the next issues
 * the pair, serves it, is ready; a third writes nothing. */
START_TEST(test_fresh_install)
{
    struct k8s_client *kc = apitest_client(&api);
    struct served s;
    struct certkeeper *ck;
    char *ca;
    char *bundle;
    char *tls;
    char *cert;

    served_init(&s);
    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    apitest_ctl(&api, "POST", "/_test/objects", vwc);
    ck = keeper(kc, &s, 0, 0, 0, 0);
    certkeeper_set_leading(ck, true);
    sync_ok(ck);
    /* The CA and the caBundles first; no pair until a round has seen them hold it. */
    ca = secret_get("ca.crt");
    assert_ca_bundle(MWC_PATH, 2, ca);
    assert_ca_bundle(VWC_PATH, 1, ca);
    ck_assert_int_eq(s.calls, 0);
    ck_assert(!certkeeper_ready(ck, NULL, 0));
    free(ca);
    sync_ok(ck);

    assert_secret_keys();
    ca = secret_get("ca.crt");
    bundle = secret_get("ca-bundle.crt");
    tls = secret_get("tls.crt");
    ck_assert_str_eq(bundle, ca);
    assert_ca_bundle(MWC_PATH, 2, ca);
    assert_ca_bundle(VWC_PATH, 1, ca);
    ck_assert_int_eq(s.calls, 1);
    ck_assert_str_eq(s.cert, tls);
    ck_assert(signed_by(tls, ca));
    ck_assert_int_eq(certs_verify_leaf(tls, ca, "vpw.example.org", NULL), 0);
    ck_assert_int_eq(certs_verify_leaf(tls, ca, "vpw.vpw-system.svc.cluster.local", NULL), 0);
    ck_assert(certkeeper_ready(ck, NULL, 0));
    cert = certkeeper_served_cert(ck);
    ck_assert_str_eq(cert, tls);
    free(cert);
    /* 1 year and 10 years by default (plus the hour before now). */
    {
        long long nb = 0;
        long long na = 0;

        ck_assert_int_eq(certs_not_before(tls, &nb, NULL), 0);
        ck_assert_int_eq(certs_not_after(tls, &na, NULL), 0);
        ck_assert_int_eq(na - nb, 365LL * 86400 + 3600);
        ck_assert_int_eq(certs_not_before(ca, &nb, NULL), 0);
        ck_assert_int_eq(certs_not_after(ca, &na, NULL), 0);
        ck_assert_int_eq(na - nb, 3650LL * 86400 + 3600);
    }

    apitest_clear_requests(&api);
    sync_ok(ck);
    ck_assert_int_eq(apitest_count(&api, "PUT", SECRET_PATH), 0);
    ck_assert_int_eq(apitest_count(&api, "PATCH", MWC_PATH), 0);
    ck_assert_int_eq(apitest_count(&api, "PATCH", VWC_PATH), 0);
    ck_assert_int_eq(s.calls, 1);
    ck_assert_uint_eq(certkeeper_repairs(ck), 0);
    certkeeper_destroy(ck);
    free(ca);
    free(bundle);
    free(tls);
    served_dispose(&s);
    k8s_client_destroy(kc);
}
END_TEST

/* A replica that does not hold the Lease writes nothing and waits for the leader's pair. */
START_TEST(test_follower_waits_for_leader)
{
    struct k8s_client *kc = apitest_client(&api);
    struct served fs;
    struct served ls;
    struct certkeeper *follower;
    struct certkeeper *leader;
    char reason[256];
    char *tls;

    served_init(&fs);
    served_init(&ls);
    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    follower = keeper(kc, &fs, 0, 0, 0, 0);
    leader = keeper(kc, &ls, 0, 0, 0, 0);
    sync_ok(follower);
    ck_assert(!certkeeper_ready(follower, reason, sizeof(reason)));
    ck_assert_str_eq(reason, "no serving certificate yet");
    ck_assert_int_eq(apitest_count(&api, "POST", "/api/v1/namespaces/" NS "/secrets"), 0);
    ck_assert_int_eq(apitest_count(&api, "PATCH", MWC_PATH), 0);
    ck_assert_int_eq(fs.calls, 0);

    certkeeper_set_leading(leader, true);
    sync_ok(leader);
    sync_ok(leader); /* the pair a round after the caBundle holds its CA */
    /* The caller cannot serve it (on_pair fails): not served, offered again next round. */
    fs.refuse = 1;
    sync_ok(follower);
    ck_assert_int_eq(fs.calls, 1);
    ck_assert_ptr_null(certkeeper_served_cert(follower));
    ck_assert(!certkeeper_ready(follower, reason, sizeof(reason)));
    ck_assert_str_eq(reason, "no serving certificate yet");
    fs.calls = 0;
    sync_ok(follower);
    tls = secret_get("tls.crt");
    ck_assert_int_eq(fs.calls, 1);
    ck_assert_str_eq(fs.cert, tls);
    ck_assert_str_eq(ls.cert, tls);
    ck_assert(certkeeper_ready(follower, NULL, 0));
    free(tls);
    certkeeper_destroy(follower);
    certkeeper_destroy(leader);
    served_dispose(&fs);
    served_dispose(&ls);
    k8s_client_destroy(kc);
}
END_TEST

struct racer {
    struct certkeeper *ck;
    int rc;
    struct wh_error err;
};

static void *race(void *arg)
{
    struct racer *r = arg;

    r->rc = certkeeper_sync(r->ck, &r->err);
    return NULL;
}

/* Two replicas both believing they lead, on an empty namespace at once: one CA. */
START_TEST(test_two_leaders_one_ca)
{
    struct k8s_client *kc = apitest_client(&api);
    struct served s[2];
    struct racer r[2];
    pthread_t t[2];
    char *ca;
    char *tls;

    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    for (int i = 0; i < 2; i++) {
        served_init(&s[i]);
        r[i].err = (struct wh_error){0, ""};
        r[i].ck = keeper(kc, &s[i], 0, 0, 0, 0);
        certkeeper_set_leading(r[i].ck, true);
    }
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, race, &r[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    /* The loser met 409 (AlreadyExists or Conflict) or read the winner's Secret. */
    for (int i = 0; i < 2; i++)
        ck_assert_msg(r[i].rc == 0 || r[i].rc == WH_EEXISTS || r[i].rc == WH_ECONFLICT, "rc %d: %s",
                      r[i].rc, r[i].err.msg);
    for (int i = 0; i < 2; i++)
        sync_ok(r[i].ck);
    ca = secret_get("ca.crt");
    tls = secret_get("tls.crt");
    {
        char *bundle = secret_get("ca-bundle.crt");

        ck_assert_str_eq(bundle, ca); /* one CA, not two */
        free(bundle);
    }
    assert_ca_bundle(MWC_PATH, 2, ca);
    for (int i = 0; i < 2; i++) {
        char *cert = certkeeper_served_cert(r[i].ck);

        ck_assert_str_eq(cert, tls);
        ck_assert(certkeeper_ready(r[i].ck, NULL, 0));
        free(cert);
        certkeeper_destroy(r[i].ck);
        served_dispose(&s[i]);
    }
    free(ca);
    free(tls);
    k8s_client_destroy(kc);
}
END_TEST


/* A configuration written by someone else between the leader's read and its PATCH: the
 * resourceVersion test fails, answered 422 Invalid; that race is a conflict, set again next
 * round. A 422 on an unchanged configuration stays the API error it is. */
START_TEST(test_config_changed_while_patched)
{
    struct k8s_client *kc = apitest_client(&api);
    struct served s;
    struct racer r = {NULL, 0, {0, ""}};
    pthread_t t;
    json_t *cfg = NULL;
    char *body;
    char *ca;

    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    served_init(&s);
    r.ck = keeper(kc, &s, 0, 0, 0, 1000);
    certkeeper_set_leading(r.ck, true);
    apitest_fault(&api,
                  "{\"method\": \"PATCH\", \"path_regex\": \"mutatingwebhookconfigurations\","
                  " \"count\": 1, \"delay_ms\": 1500}");
    ck_assert_int_eq(pthread_create(&t, NULL, race, &r), 0);
    for (int waited = 0; apitest_count(&api, "PATCH", MWC_PATH) == 0; waited += 20) {
        ck_assert_msg(waited < 60000, "the leader never patched");
        apitest_nap(20);
    }
    /* While the PATCH stalls: a label, a new resourceVersion. */
    ck_assert_int_eq(apitest_call(&api, "GET", MWC_PATH, NULL, true, &cfg), 200);
    json_object_set_new(json_object_get(cfg, "metadata"), "labels",
                        json_pack("{s:s}", "team", "x"));
    json_object_del(json_object_get(cfg, "metadata"), "resourceVersion");
    body = json_dumps(cfg, JSON_COMPACT);
    ck_assert_int_eq(apitest_call(&api, "PUT", MWC_PATH, body, true, NULL), 200);
    free(body);
    json_decref(cfg);
    pthread_join(t, NULL);
    ck_assert_int_eq(r.rc, WH_ECONFLICT);
    ck_assert_str_eq(r.err.msg,
                     "mutatingwebhookconfiguration vpw changed since it was read "
                     "(Invalid: the server rejected our request due to an error in "
                     "our request: test operation failed)");
    sync_ok(r.ck);
    sync_ok(r.ck);
    ca = secret_get("ca.crt");
    assert_ca_bundle(MWC_PATH, 2, ca);
    ck_assert(certkeeper_ready(r.ck, NULL, 0));
    free(ca);

    /* A refusal of the PATCH itself, nothing changed: an API error, not a conflict. */
    hand_set_ca_bundle(MWC_PATH, 1, "cGxhY2U=");
    apitest_nap(1100); /* the repair check is due after repair_ms */
    apitest_fault(&api,
                  "{\"method\": \"PATCH\", \"path_regex\": \"mutatingwebhookconfigurations\","
                  " \"count\": 1, \"status\": 422, \"reason\": \"Invalid\","
                  " \"message\": \"caBundle: Invalid value\"}");
    r.err = (struct wh_error){0, ""};
    ck_assert_int_eq(certkeeper_sync(r.ck, &r.err), WH_EAPI);
    ck_assert_str_eq(r.err.msg, "Invalid: caBundle: Invalid value");
    certkeeper_destroy(r.ck);
    served_dispose(&s);
    k8s_client_destroy(kc);
}
END_TEST
/* The serving certificate renewed under the same CA once less than renew_before is left. */
START_TEST(test_renewal)
{
    struct k8s_client *kc = apitest_client(&api);
    struct served s;
    struct certkeeper *ck;
    char *ca;
    char *tls1;
    char *tls2;

    served_init(&s);
    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    ck = keeper(kc, &s, 6, 3600, 3, 0);
    certkeeper_set_leading(ck, true);
    sync_ok(ck);
    sync_ok(ck); /* the pair a round after the caBundle holds its CA */
    ca = secret_get("ca.crt");
    tls1 = secret_get("tls.crt");
    sync_ok(ck); /* more than 3 s left: nothing */
    tls2 = secret_get("tls.crt");
    ck_assert_str_eq(tls2, tls1);
    free(tls2);

    wait_until_left(tls1, 3);
    sync_ok(ck);
    tls2 = secret_get("tls.crt");
    ck_assert_str_ne(tls2, tls1);
    ck_assert(signed_by(tls2, ca));
    ck_assert_int_eq(s.calls, 2);
    ck_assert_str_eq(s.cert, tls2);
    {
        char *ca2 = secret_get("ca.crt");
        char *bundle = secret_get("ca-bundle.crt");

        ck_assert_str_eq(ca2, ca); /* same CA, same bundle, no caBundle change */
        ck_assert_str_eq(bundle, ca);
        free(ca2);
        free(bundle);
    }
    assert_ca_bundle(MWC_PATH, 2, ca);
    ck_assert(certkeeper_ready(ck, NULL, 0));
    certkeeper_destroy(ck);
    free(ca);
    free(tls1);
    free(tls2);
    served_dispose(&s);
    k8s_client_destroy(kc);
}
END_TEST

/*
 * The CA rolled over: the new CA joins the bundle after the old; while the API server
 * does not hold both (a failed PATCH), the served certificate stays under the old CA;
 * once it does, a certificate under the new CA is issued and served; drain_s later
 * the old CA leaves. A follower follows at each step and is ready throughout.
 */
START_TEST(test_ca_rollover)
{
    struct k8s_client *kc = apitest_client(&api);
    struct served ls;
    struct served fs;
    struct certkeeper *leader;
    struct certkeeper *follower;
    char *ca1;
    char *ca2;
    char *both;
    char *tls1;
    char *tls2;
    char *x;

    served_init(&ls);
    served_init(&fs);
    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    apitest_ctl(&api, "POST", "/_test/objects", vwc);
    leader = keeper(kc, &ls, 11, 12, 3, 0);
    follower = keeper(kc, &fs, 11, 12, 3, 0);
    certkeeper_set_leading(leader, true);
    sync_ok(leader);
    sync_ok(leader); /* the pair a round after the caBundle holds its CA */
    sync_ok(follower);
    ca1 = secret_get("ca.crt");
    tls1 = secret_get("tls.crt");
    ck_assert(signed_by(fs.cert, ca1));

    /* Step 1: CA1 has less than 2 * 3 s left; the PATCH of the caBundle fails once. */
    wait_until_left(ca1, 6);
    apitest_fault(&api,
                  "{\"method\": \"PATCH\", \"path_regex\": \"mutatingwebhookconfigurations\","
                  " \"count\": 1, \"status\": 500, \"reason\": \"InternalError\","
                  " \"message\": \"etcd is away\"}");
    ck_assert_int_eq(certkeeper_sync(leader, NULL), WH_EAPI);
    sync_ok(follower);
    ca2 = secret_get("ca.crt");
    ck_assert_str_ne(ca2, ca1);
    both = concat(ca1, ca2);
    x = secret_get("ca-bundle.crt");
    ck_assert_str_eq(x, both); /* old first */
    free(x);
    x = secret_get("tls.crt");
    ck_assert_str_eq(x, tls1); /* nothing under CA2 before the API server trusts it */
    free(x);
    assert_ca_bundle(MWC_PATH, 2, ca1);
    ck_assert(signed_by(ls.cert, ca1));
    ck_assert(signed_by(fs.cert, ca1));
    ck_assert(certkeeper_ready(follower, NULL, 0));

    /* Step 2: the PATCH lands: both CAs in every caBundle; a round later, a pair under
     * CA2, served. */
    sync_ok(leader);
    assert_ca_bundle(MWC_PATH, 2, both);
    assert_ca_bundle(VWC_PATH, 1, both);
    x = secret_get("tls.crt");
    ck_assert_str_eq(x, tls1);
    free(x);
    sync_ok(leader);
    tls2 = secret_get("tls.crt");
    ck_assert(signed_by(tls2, ca2));
    ck_assert(!signed_by(tls2, ca1));
    ck_assert_str_eq(ls.cert, tls2);
    sync_ok(follower);
    ck_assert_str_eq(fs.cert, tls2);
    ck_assert(certkeeper_ready(follower, NULL, 0));
    ck_assert(certkeeper_ready(leader, NULL, 0));

    /* Step 3: drain_s (1 s) after the new pair, CA1 leaves the bundle. */
    apitest_nap(1100);
    sync_ok(leader);
    x = secret_get("ca-bundle.crt");
    ck_assert_str_eq(x, ca2);
    free(x);
    assert_ca_bundle(MWC_PATH, 2, ca2);
    assert_ca_bundle(VWC_PATH, 1, ca2);
    sync_ok(follower);
    ck_assert_str_eq(fs.cert, tls2);
    ck_assert(certkeeper_ready(follower, NULL, 0));
    ck_assert_int_eq(fs.calls, 2);
    ck_assert_uint_eq(certkeeper_repairs(leader), 0);

    certkeeper_destroy(leader);
    certkeeper_destroy(follower);
    free(ca1);
    free(ca2);
    free(both);
    free(tls1);
    free(tls2);
    served_dispose(&ls);
    served_dispose(&fs);
    k8s_client_destroy(kc);
}
END_TEST

/* A caBundle changed by hand: a follower is not ready (why), the leader repairs it at the
 * next check (not before) and counts it. */
START_TEST(test_ca_bundle_repaired)
{
    struct k8s_client *kc = apitest_client(&api);
    struct served ls;
    struct served fs;
    struct certkeeper *leader;
    struct certkeeper *follower;
    struct certs_pair other = {NULL, NULL};
    char reason[512];
    char *ca;
    char *b64;

    served_init(&ls);
    served_init(&fs);
    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    leader = keeper(kc, &ls, 0, 0, 0, 5000);
    follower = keeper(kc, &fs, 0, 0, 0, 5000);
    certkeeper_set_leading(leader, true);
    sync_ok(leader);
    sync_ok(leader); /* the pair a round after the caBundle holds its CA */
    sync_ok(follower);
    ca = secret_get("ca.crt");

    ck_assert_int_eq(certs_generate_ca(&other, CERTS_KEY_ECDSA_P256, 3600, NULL), 0);
    b64 = certs_base64(other.cert_pem, strlen(other.cert_pem));
    hand_set_ca_bundle(MWC_PATH, 1, b64);
    sync_ok(follower);
    ck_assert(!certkeeper_ready(follower, reason, sizeof(reason)));
    ck_assert_str_eq(reason,
                     "serving certificate not trusted by the caBundle of "
                     "mutatingwebhookconfiguration vpw webhook b.example.org: certificate does "
                     "not verify for vpw.vpw-system.svc: unable to get local issuer certificate");
    sync_ok(leader); /* the check is not due yet */
    ck_assert_uint_eq(certkeeper_repairs(leader), 0);
    ck_assert(!certkeeper_ready(leader, NULL, 0));
    apitest_nap(5100);
    sync_ok(leader);
    ck_assert_uint_eq(certkeeper_repairs(leader), 1);
    assert_ca_bundle(MWC_PATH, 2, ca);
    sync_ok(follower);
    ck_assert(certkeeper_ready(follower, NULL, 0));
    ck_assert(certkeeper_ready(leader, NULL, 0));
    ck_assert_int_eq(fs.calls, 1); /* the pair never changed */

    certkeeper_destroy(leader);
    certkeeper_destroy(follower);
    certs_pair_dispose(&other);
    free(b64);
    free(ca);
    served_dispose(&ls);
    served_dispose(&fs);
    k8s_client_destroy(kc);
}
END_TEST

/* One recovery: the follower keeps its pair until the new one is trusted, and the leader
 * keeps the CA the caBundle held beside the new one until drain_s after the new pair. */
static void check_recovery(struct certkeeper *leader, struct served *ls,
                           struct certkeeper *follower, struct served *fs, const char *old_ca,
                           const char *old_tls)
{
    char *ca;
    char *both;
    char *x;
    char *tls;

    sync_ok(follower); /* the Secret is gone or garbage: keeps serving */
    ck_assert_str_eq(fs->cert, old_tls);
    ck_assert(certkeeper_ready(follower, NULL, 0));
    sync_ok(leader);
    ca = secret_get("ca.crt");
    ck_assert_str_ne(ca, old_ca);
    both = concat(old_ca, ca);
    x = secret_get("ca-bundle.crt");
    ck_assert_str_eq(x, both);
    free(x);
    assert_ca_bundle(MWC_PATH, 2, both);
    sync_ok(follower); /* nothing under the new CA yet: keeps serving */
    ck_assert_str_eq(fs->cert, old_tls);
    sync_ok(leader); /* the pair a round after the caBundle holds the new CA */
    tls = secret_get("tls.crt");
    ck_assert(signed_by(tls, ca));
    ck_assert_str_eq(ls->cert, tls);
    sync_ok(follower);
    ck_assert_str_eq(fs->cert, tls);
    ck_assert(certkeeper_ready(follower, NULL, 0));
    apitest_nap(1100);
    sync_ok(leader);
    assert_ca_bundle(MWC_PATH, 2, ca);
    sync_ok(follower);
    ck_assert(certkeeper_ready(follower, NULL, 0));
    assert_secret_keys();
    free(ca);
    free(both);
    free(tls);
}

START_TEST(test_secret_deleted_and_garbage)
{
    struct k8s_client *kc = apitest_client(&api);
    struct served ls;
    struct served fs;
    struct certkeeper *leader;
    struct certkeeper *follower;
    char *ca;
    char *tls;

    served_init(&ls);
    served_init(&fs);
    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    leader = keeper(kc, &ls, 0, 0, 0, 0);
    follower = keeper(kc, &fs, 0, 0, 0, 0);
    certkeeper_set_leading(leader, true);
    sync_ok(leader);
    sync_ok(leader); /* the pair a round after the caBundle holds its CA */
    sync_ok(follower);

    /* Deleted. */
    ca = secret_get("ca.crt");
    tls = secret_get("tls.crt");
    ck_assert_int_eq(apitest_call(&api, "DELETE", SECRET_PATH, NULL, true, NULL), 200);
    check_recovery(leader, &ls, follower, &fs, ca, tls);
    free(ca);
    free(tls);

    /* Overwritten with garbage: not base64, base64 of junk, a missing key. */
    ca = secret_get("ca.crt");
    tls = secret_get("tls.crt");
    ck_assert_int_eq(apitest_call(&api, "PUT", SECRET_PATH,
                                  "{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\":"
                                  " {\"name\": \"" SECRET "\", \"namespace\": \"" NS "\"},"
                                  " \"type\": \"kubernetes.io/tls\", \"data\": {"
                                  "\"ca.crt\": \"!!\", \"ca.key\": \"anVuaw==\","
                                  " \"tls.crt\": \"anVuaw==\", \"tls.key\": \"\"}}",
                                  true, NULL),
                     200);
    check_recovery(leader, &ls, follower, &fs, ca, tls);
    free(ca);
    free(tls);

    certkeeper_destroy(leader);
    certkeeper_destroy(follower);
    served_dispose(&ls);
    served_dispose(&fs);
    k8s_client_destroy(kc);
}
END_TEST

/* A Secret holding an expired serving pair at start: not served, renewed before ready. */
START_TEST(test_expired_pair_at_start)
{
    struct k8s_client *kc = apitest_client(&api);
    struct served ls;
    struct served fs;
    struct certkeeper *leader;
    struct certkeeper *follower;
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    static const char *const names[] = {"vpw", "vpw.vpw-system", SVC_NAME};
    char reason[256];
    char *body;
    char *b[4];
    char *tls;
    size_t n;

    served_init(&ls);
    served_init(&fs);
    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    ck_assert_int_eq(certs_generate_ca(&ca, CERTS_KEY_ECDSA_P256, 3650LL * 86400, NULL), 0);
    ck_assert_int_eq(
        certs_generate_leaf_seconds(&leaf, NULL, &ca, CERTS_KEY_ECDSA_P256, names, 3, 1, NULL), 0);
    b[0] = certs_base64(ca.cert_pem, strlen(ca.cert_pem));
    b[1] = certs_base64(ca.key_pem, strlen(ca.key_pem));
    b[2] = certs_base64(leaf.cert_pem, strlen(leaf.cert_pem));
    b[3] = certs_base64(leaf.key_pem, strlen(leaf.key_pem));
    n = strlen(b[0]) * 2 + strlen(b[1]) + strlen(b[2]) + strlen(b[3]) + 512;
    body = malloc(n);
    snprintf(body, n,
             "{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"" SECRET
             "\", \"namespace\": \"" NS "\"}, \"type\": \"kubernetes.io/tls\", \"data\": {"
             "\"ca.crt\": \"%s\", \"ca.key\": \"%s\", \"ca-bundle.crt\": \"%s\","
             " \"tls.crt\": \"%s\", \"tls.key\": \"%s\"}}",
             b[0], b[1], b[0], b[2], b[3]);
    apitest_ctl(&api, "POST", "/_test/objects", body);
    hand_set_ca_bundle(MWC_PATH, 0, b[0]);
    hand_set_ca_bundle(MWC_PATH, 1, b[0]);
    wait_until_left(leaf.cert_pem, 0);
    apitest_nap(1100); /* expired */

    follower = keeper(kc, &fs, 0, 0, 0, 0);
    sync_ok(follower);
    ck_assert_int_eq(fs.calls, 0);
    ck_assert(!certkeeper_ready(follower, reason, sizeof(reason)));
    ck_assert_str_eq(reason, "no serving certificate yet");

    leader = keeper(kc, &ls, 0, 0, 0, 0);
    certkeeper_set_leading(leader, true);
    sync_ok(leader);
    tls = secret_get("tls.crt");
    ck_assert_str_ne(tls, leaf.cert_pem);
    ck_assert(signed_by(tls, ca.cert_pem)); /* the CA in the Secret is kept */
    assert_ca_bundle(MWC_PATH, 2, ca.cert_pem);
    sync_ok(follower);
    ck_assert_str_eq(fs.cert, tls);
    ck_assert(certkeeper_ready(follower, NULL, 0));

    for (int i = 0; i < 4; i++)
        free(b[i]);
    free(body);
    free(tls);
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);
    certkeeper_destroy(leader);
    certkeeper_destroy(follower);
    served_dispose(&ls);
    served_dispose(&fs);
    k8s_client_destroy(kc);
}
END_TEST

/* No MutatingWebhookConfiguration yet: a pair is made and served, but not ready (why);
 * the configuration appears: its caBundle is set and the replica becomes ready. */
START_TEST(test_no_configuration_yet)
{
    struct k8s_client *kc = apitest_client(&api);
    struct served s;
    struct certkeeper *ck;
    char reason[256];
    char *ca;

    served_init(&s);
    ck = keeper(kc, &s, 0, 0, 0, 0);
    certkeeper_set_leading(ck, true);
    sync_ok(ck);
    ck_assert_int_eq(s.calls, 1);
    ck_assert(!certkeeper_ready(ck, reason, sizeof(reason)));
    ck_assert_str_eq(reason, "mutatingwebhookconfiguration vpw not found");
    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    sync_ok(ck);
    ca = secret_get("ca.crt");
    assert_ca_bundle(MWC_PATH, 2, ca);
    ck_assert(certkeeper_ready(ck, NULL, 0));
    ck_assert_uint_eq(certkeeper_repairs(ck), 0);
    free(ca);
    certkeeper_destroy(ck);
    served_dispose(&s);
    k8s_client_destroy(kc);
}
END_TEST

/* certkeeper_start: the thread's first round comes at once; destroy stops it. */
START_TEST(test_thread)
{
    struct k8s_client *kc = apitest_client(&api);
    struct served s;
    struct certkeeper *ck;
    struct wh_error err = {0, ""};

    served_init(&s);
    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    ck = keeper(kc, &s, 0, 0, 0, 0);
    certkeeper_set_leading(ck, true);
    ck_assert_int_eq(certkeeper_start(ck, &err), 0);
    ck_assert_int_eq(certkeeper_start(ck, &err), WH_EINVAL);
    while (!certkeeper_ready(ck, NULL, 0))
        apitest_nap(20);
    certkeeper_destroy(ck);
    ck_assert_int_eq(s.calls, 1);
    served_dispose(&s);
    k8s_client_destroy(kc);
}
END_TEST

/* The WATCH requests of the Secret in the request log. */
static size_t secret_watches(void)
{
    json_t *reqs = apitest_requests(&api);
    json_t *q;
    size_t i;
    size_t n = 0;

    json_array_foreach(reqs, i, q) {
        const char *path = json_string_value(json_object_get(q, "path"));
        const char *query = json_string_value(json_object_get(q, "query"));

        if (path != NULL && strstr(path, "/secrets") != NULL && query != NULL
            && strstr(query, "watch=") != NULL)
            n++;
    }
    json_decref(reqs);
    return n;
}

/* A server that answers every watch of the Secret with 410 at once (_i = 0: HTTP 410,
 * 1: 200 and an ERROR event with 410): the watch backs off (200 ms, doubling) as after
 * any failure, not a new watch at once forever. */
START_TEST(test_watch_gone_at_once_backs_off)
{
    struct k8s_client *kc = apitest_client(&api);
    struct certkeeper_config cfg = {.kc = kc,
                                    .ns = NS,
                                    .secret = SECRET,
                                    .service = "vpw",
                                    .webhook_config = "vpw",
                                    .replica = "pod-a",
                                    .poll_ms = 5000,
                                    .request_timeout_ms = 5000};
    struct certkeeper *ck = NULL;
    struct wh_error err = {0, ""};
    size_t n;

    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    if (_i == 0)
        apitest_ctl(&api, "POST", "/_test/faults",
                    "{\"method\":\"GET\",\"path_regex\":\"secrets.*watch=\",\"status\":410,"
                    "\"reason\":\"Expired\",\"message\":\"too old resource version\","
                    "\"count\":-1}");
    else
        apitest_ctl(&api, "POST", "/_test/faults",
                    "{\"method\":\"GET\",\"path_regex\":\"secrets.*watch=\",\"count\":-1,"
                    "\"body_override\":\"{\\\"type\\\":\\\"ERROR\\\",\\\"object\\\":{"
                    "\\\"kind\\\":\\\"Status\\\",\\\"apiVersion\\\":\\\"v1\\\","
                    "\\\"status\\\":\\\"Failure\\\",\\\"reason\\\":\\\"Expired\\\","
                    "\\\"code\\\":410}}\\n\"}");
    ck_assert_msg(certkeeper_create(&ck, &cfg, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(certkeeper_start(ck, &err), 0);
    while (secret_watches() == 0)
        apitest_nap(20);
    apitest_nap(1000);
    certkeeper_destroy(ck);
    /* At 0, 200, 600 ms after the first, 1400 after the nap: a slower machine makes
     * fewer; a spin makes hundreds. */
    n = secret_watches();
    ck_assert_msg(n >= 1 && n <= 6, "%zu watches", n);
    k8s_client_destroy(kc);
}
END_TEST

/* ---- the serving records: which CA each replica serves under ---- */

#define FP_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define FP_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

/* A certificate's fingerprint is the SHA-256 of its DER, what
 * `openssl x509 -noout -fingerprint -sha256` prints (here in lower case, no colons). */
START_TEST(test_fingerprint)
{
    static const char *const pem =
        "-----BEGIN CERTIFICATE-----\n"
        "MIIBizCCATGgAwIBAgIUPHtTGhJ0SnZV/6aoxWfjFW3iAhIwCgYIKoZIzj0EAwIw\n"
        "GzEZMBcGA1UEAwwQZmluZ2VycHJpbnQtdGVzdDAeFw0yNjEyMDIwMDAwMjNaFw0z\n"
        "NjExMjkwMDAwMjNaMBsxGTAXBgNVBAMMEGZpbmdlcnByaW50LXRlc3QwWTATBgcq\n"
        "hkjOPQIBBggqhkjOPQMBBwNCAAT3rPzk8F+Zfdywhl0M8ZbrTt7nUZobfor0/ENq\n"
        "bBNLkeqxfmCFD6khtXcTTUrWFyzdt6OgMkJZkGBaKWkk0PwXo1MwUTAdBgNVHQ4E\n"
        "FgQUThlxqisdgFczgOK4X1p21iTzopUwHwYDVR0jBBgwFoAUThlxqisdgFczgOK4\n"
        "X1p21iTzopUwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiEAxtDu\n"
        "sKMdVmX9bJSQCQfqF6a9+LfVwWdI7+bhNHTDCzgCIGIMQ2yrOnty+/DWbxCmT8wd\n"
        "Y+d7IyHYiHCdkI2E72BM\n"
        "-----END CERTIFICATE-----\n";
    char fp[65];
    struct wh_error err = {0, ""};

    ck_assert_int_eq(certs_fingerprint_sha256(pem, fp, &err), 0);
    ck_assert_str_eq(fp, "27b05c8660e18752fdeb5f7b48e034bc2227d98f6e35d3e9235a2b864dd032a7");
    ck_assert_int_eq(certs_fingerprint_sha256("no certificate", fp, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "no PEM certificate found");
    ck_assert_int_eq(certs_fingerprint_sha256(NULL, fp, &err), WH_EINVAL);
    ck_assert_str_eq(err.msg, "no certificate");
}
END_TEST

/* Parse keeps the well-formed records; fresh means within ttl either side of now; the
 * old CA may go only when at least one record is fresh and every fresh one names the CA. */
START_TEST(test_records_rules)
{
    json_t *r = certkeeper_records_parse("{\"pod-a\": {\"ca\": \"" FP_A "\", \"time\": 1000},"
                                         " \"pod-b\": {\"ca\": \"" FP_B "\", \"time\": 1090},"
                                         " \"short-ca\": {\"ca\": \"abc\", \"time\": 1000},"
                                         " \"no-time\": {\"ca\": \"" FP_A "\", \"time\": \"1000\"},"
                                         " \"not-an-object\": 7, \"\": {\"ca\": \"" FP_A
                                         "\", \"time\": 1000}}");

    ck_assert_ptr_nonnull(r);
    tu_assert_json_eq(r,
                      "{\"pod-a\": {\"ca\": \"" FP_A "\", \"time\": 1000},"
                      " \"pod-b\": {\"ca\": \"" FP_B "\", \"time\": 1090}}");
    /* at 1050 both are fresh and disagree: the old CA stays */
    ck_assert(!certkeeper_records_all_on(r, FP_B, 1050, 60));
    ck_assert(!certkeeper_records_all_on(r, FP_A, 1050, 60));
    /* at 1061 pod-a (61 s old) is a replica gone: pod-b alone decides */
    ck_assert(certkeeper_records_all_on(r, FP_B, 1061, 60));
    ck_assert(!certkeeper_records_all_on(r, FP_A, 1061, 60));
    /* the edge: exactly ttl old is still fresh */
    ck_assert(!certkeeper_records_all_on(r, FP_B, 1060, 60));
    ck_assert_uint_eq(certkeeper_records_prune(r, 1061, 60), 1);
    tu_assert_json_eq(r, "{\"pod-b\": {\"ca\": \"" FP_B "\", \"time\": 1090}}");
    /* a record more than ttl ahead of now is a clock gone wrong: pruned too */
    ck_assert_uint_eq(certkeeper_records_prune(r, 1029, 60), 1);
    ck_assert_uint_eq(json_object_size(r), 0);
    /* no fresh record: nothing says the old CA is unused */
    ck_assert(!certkeeper_records_all_on(r, FP_B, 1090, 60));
    json_decref(r);
    /* times at the ends of int64 (a hand-edited Secret): stale, no overflow */
    r = certkeeper_records_parse("{\"min\": {\"ca\": \"" FP_A "\", \"time\": -9223372036854775808},"
                                 " \"max\": {\"ca\": \"" FP_A
                                 "\", \"time\": 9223372036854775807}}");
    ck_assert_uint_eq(json_object_size(r), 2);
    ck_assert(!certkeeper_records_all_on(r, FP_A, 1000, 60));
    ck_assert_uint_eq(certkeeper_records_prune(r, 1000, 60), 2);
    json_decref(r);
    r = certkeeper_records_parse("{not json");
    tu_assert_json_eq(r, "{}");
    json_decref(r);
    r = certkeeper_records_parse(NULL);
    tu_assert_json_eq(r, "{}");
    json_decref(r);
}
END_TEST

/* The Secret's serving records (new reference; {} when none). */
static json_t *records_read(void)
{
    json_t *obj = NULL;
    json_t *r;

    ck_assert_int_eq(apitest_call(&api, "GET", SECRET_PATH, NULL, true, &obj), 200);
    r = certkeeper_records_parse(json_string_value(json_object_get(
        json_object_get(json_object_get(obj, "metadata"), "annotations"), CERTKEEPER_ANNOTATION)));
    json_decref(obj);
    return r;
}

/* The CA fingerprint replica's record names ("" when it has none). */
static const char *record_ca(const json_t *records, const char *replica)
{
    const char *ca = json_string_value(json_object_get(json_object_get(records, replica), "ca"));

    return ca != NULL ? ca : "";
}

/* Add a record by hand (a replica gone long ago), keeping the other annotations. */
static void hand_add_record(const char *replica, const char *fp, long long t)
{
    json_t *obj = NULL;
    json_t *r = records_read();
    json_t *ann;
    char *text;
    char *body;

    json_object_set_new(r, replica, json_pack("{s:s, s:I}", "ca", fp, "time", (json_int_t)t));
    text = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_int_eq(apitest_call(&api, "GET", SECRET_PATH, NULL, true, &obj), 200);
    ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
    json_object_set_new(ann, CERTKEEPER_ANNOTATION, json_string(text));
    json_object_set_new(ann, "example.org/kept", json_string("yes"));
    body = json_dumps(obj, JSON_COMPACT);
    ck_assert_int_eq(apitest_call(&api, "PUT", SECRET_PATH, body, true, NULL), 200);
    free(body);
    free(text);
    json_decref(obj);
    json_decref(r);
}

/*
 * A CA rollover where one replica cannot serve the new pair at first (its server
 * refuses it): the old CA stays in the bundle past drain_s for as long as that
 * replica's record names it, and leaves once it records the new CA; a stale record
 * (a replica gone) is ignored and pruned, other annotations kept.
 */
START_TEST(test_old_ca_waits_for_every_replica)
{
    struct k8s_client *kc = apitest_client(&api);
    struct served ls;
    struct served fs;
    struct certkeeper *leader;
    struct certkeeper *follower;
    char leader_name[32];
    char follower_name[32];
    char fp1[65];
    char fp2[65];
    char *ca1;
    char *ca2;
    char *both;
    char *tls1;
    char *tls2;
    char *x;
    json_t *r;
    json_t *obj = NULL;

    served_init(&ls);
    served_init(&fs);
    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    apitest_ctl(&api, "POST", "/_test/objects", vwc);
    leader = keeper(kc, &ls, 11, 12, 3, 0);
    snprintf(leader_name, sizeof(leader_name), "replica-%d", nreplicas);
    follower = keeper(kc, &fs, 11, 12, 3, 0);
    snprintf(follower_name, sizeof(follower_name), "replica-%d", nreplicas);
    certkeeper_set_leading(leader, true);
    sync_ok(leader);
    sync_ok(leader); /* the pair a round after the caBundle holds its CA */
    sync_ok(follower);
    ca1 = secret_get("ca.crt");
    tls1 = secret_get("tls.crt");
    ck_assert_int_eq(certs_fingerprint_sha256(ca1, fp1, NULL), 0);
    r = records_read();
    ck_assert_uint_eq(json_object_size(r), 2);
    ck_assert_str_eq(record_ca(r, leader_name), fp1);
    ck_assert_str_eq(record_ca(r, follower_name), fp1);
    json_decref(r);

    /* The rollover: CA2 trusted beside CA1, a pair under CA2; the follower refuses it. */
    wait_until_left(ca1, 6);
    fs.refuse = 1000;
    sync_ok(leader);
    sync_ok(leader); /* the pair under CA2 a round after the caBundle holds it */
    ca2 = secret_get("ca.crt");
    ck_assert_str_ne(ca2, ca1);
    ck_assert_int_eq(certs_fingerprint_sha256(ca2, fp2, NULL), 0);
    both = concat(ca1, ca2);
    tls2 = secret_get("tls.crt");
    ck_assert(signed_by(tls2, ca2));
    ck_assert_str_eq(ls.cert, tls2);
    sync_ok(follower);
    ck_assert_str_eq(fs.cert, tls1); /* still under CA1 */
    r = records_read();
    ck_assert_str_eq(record_ca(r, leader_name), fp2);
    ck_assert_str_eq(record_ca(r, follower_name), fp1);
    json_decref(r);

    /* drain_s (1 s) passed, but the follower serves under CA1: CA1 stays. */
    apitest_nap(1100);
    sync_ok(leader);
    x = secret_get("ca-bundle.crt");
    ck_assert_str_eq(x, both);
    free(x);
    assert_ca_bundle(MWC_PATH, 2, both);
    sync_ok(follower);
    ck_assert_str_eq(fs.cert, tls1);
    ck_assert(certkeeper_ready(follower, NULL, 0)); /* CA1 is still trusted */

    /* A replica gone an hour ago still names CA1: ignored, and pruned. */
    hand_add_record("gone-pod", fp1, (long long)time(NULL) - 3600);

    /* The follower takes the pair under CA2 and says so: CA1 leaves. */
    fs.refuse = 0;
    sync_ok(follower);
    ck_assert_str_eq(fs.cert, tls2);
    r = records_read();
    ck_assert_str_eq(record_ca(r, follower_name), fp2);
    ck_assert_str_eq(record_ca(r, "gone-pod"), fp1);
    json_decref(r);
    sync_ok(leader);
    x = secret_get("ca-bundle.crt");
    ck_assert_str_eq(x, ca2);
    free(x);
    assert_ca_bundle(MWC_PATH, 2, ca2);
    assert_ca_bundle(VWC_PATH, 1, ca2);
    r = records_read();
    ck_assert_uint_eq(json_object_size(r), 2);
    ck_assert_str_eq(record_ca(r, leader_name), fp2);
    ck_assert_str_eq(record_ca(r, follower_name), fp2);
    json_decref(r);
    ck_assert_int_eq(apitest_call(&api, "GET", SECRET_PATH, NULL, true, &obj), 200);
    ck_assert_str_eq(
        json_string_value(json_object_get(
            json_object_get(json_object_get(obj, "metadata"), "annotations"), "example.org/kept")),
        "yes");
    json_decref(obj);
    sync_ok(follower);
    ck_assert(certkeeper_ready(follower, NULL, 0));
    ck_assert(certkeeper_ready(leader, NULL, 0));

    certkeeper_destroy(leader);
    certkeeper_destroy(follower);
    free(ca1);
    free(ca2);
    free(both);
    free(tls1);
    free(tls2);
    served_dispose(&ls);
    served_dispose(&fs);
    k8s_client_destroy(kc);
}
END_TEST

/* In memory (--self-signed): a CA and pair of its own, the caBundles set through the API,
 * ready; no Secret read or written through the API, and a second round writes nothing. */
START_TEST(test_in_memory)
{
    struct k8s_client *kc = apitest_client(&api);
    struct certkeeper_config cfg = {.kc = kc,
                                    .ns = NS,
                                    .secret = "self-signed",
                                    .service = "vpw",
                                    .webhook_config = "vpw",
                                    .replica = "pod-a",
                                    .poll_ms = 100,
                                    .request_timeout_ms = 5000,
                                    .in_memory = true,
                                    .on_pair = on_pair};
    struct certkeeper *ck = NULL;
    struct wh_error err = {0, ""};
    struct served s;
    json_t *reqs;
    json_t *q;
    json_t *cfgobj = NULL;
    const char *b64;
    char *bundle;
    size_t i;

    served_init(&s);
    cfg.userdata = &s;
    apitest_ctl(&api, "POST", "/_test/objects", mwc);
    ck_assert_msg(certkeeper_create(&ck, &cfg, &err) == 0, "%s", err.msg);
    certkeeper_set_leading(ck, true);
    sync_ok(ck);
    ck_assert_int_eq(s.calls, 0); /* the pair a round after the caBundle holds its CA */
    sync_ok(ck);
    ck_assert_int_eq(s.calls, 1);
    ck_assert(certkeeper_ready(ck, NULL, 0));
    ck_assert_int_eq(apitest_call(&api, "GET", MWC_PATH, NULL, true, &cfgobj), 200);
    b64 = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(cfgobj, "webhooks"), 0), "clientConfig"),
        "caBundle"));
    bundle = certs_base64_decode(b64, NULL);
    ck_assert(signed_by(s.cert, bundle));
    free(bundle);
    json_decref(cfgobj);
    apitest_clear_requests(&api);
    sync_ok(ck);
    ck_assert_int_eq(s.calls, 1);
    reqs = apitest_requests(&api);
    json_array_foreach(reqs, i, q) {
        const char *path = json_string_value(json_object_get(q, "path"));

        ck_assert_msg(strstr(path, "/secrets") == NULL, "%s", path);
        ck_assert_str_eq(json_string_value(json_object_get(q, "method")), "GET");
    }
    json_decref(reqs);
    ck_assert_int_eq(apitest_call(&api, "GET", SECRET_PATH, NULL, true, NULL), 404);
    certkeeper_destroy(ck);
    served_dispose(&s);
    k8s_client_destroy(kc);
}
END_TEST

static Suite *certkeeper_suite(void)
{
    Suite *s = suite_create("certkeeper");
    TCase *tc = tcase_create("api");

    tcase_add_checked_fixture(tc, api_setup, api_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_create_refusals);
    tcase_add_test(tc, test_fresh_install);
    tcase_add_test(tc, test_follower_waits_for_leader);
    tcase_add_test(tc, test_two_leaders_one_ca);
    tcase_add_test(tc, test_config_changed_while_patched);
    tcase_add_test(tc, test_renewal);
    tcase_add_test(tc, test_ca_rollover);
    tcase_add_test(tc, test_ca_bundle_repaired);
    tcase_add_test(tc, test_secret_deleted_and_garbage);
    tcase_add_test(tc, test_expired_pair_at_start);
    tcase_add_test(tc, test_no_configuration_yet);
    tcase_add_test(tc, test_thread);
    tcase_add_loop_test(tc, test_watch_gone_at_once_backs_off, 0, 2);
    tcase_add_test(tc, test_fingerprint);
    tcase_add_test(tc, test_records_rules);
    tcase_add_test(tc, test_old_ca_waits_for_every_replica);
    tcase_add_test(tc, test_in_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(certkeeper_suite());
}
