/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certkeeper.h - managed serving certificates: the replicas keep their CA and
 * serving pair in one Secret, and the Lease holder makes, renews and rolls them
 * over and keeps the webhook configurations' caBundle equal to the trust bundle.
 *
 * The Secret (type kubernetes.io/tls; data base64 as the API stores it):
 *   ca.crt, ca.key   the CA that signs new serving certificates (the newest CA)
 *   ca-bundle.crt    the trust bundle: PEM CA certificates, oldest first; what
 *                    every webhook's caBundle must hold (base64 of this text)
 *   tls.crt, tls.key the serving certificate (signed by a CA of the bundle)
 *
 * The Lease holder (certkeeper_set_leading(true)), each round:
 *   1. no Secret, or no valid CA in it: a new CA. The bundle keeps every valid CA
 *      of the Secret's bundle and of the caBundles the API server holds, so that
 *      a certificate a replica still serves stays trusted, and the new CA last.
 *      A CA with less than 2 * renew_before left: a new CA too (the rollover),
 *      appended to the bundle.
 *   2. every webhook of the MutatingWebhookConfiguration (and of the
 *      ValidatingWebhookConfiguration of the same name, if it exists) gets
 *      caBundle = base64(bundle): at once when the bundle changed, else every
 *      repair interval; a caBundle changed by hand is logged and counted.
 *   3. a serving certificate signed by the CA is issued when the one in the
 *      Secret is missing, invalid, not signed by the CA, or has less than
 *      renew_before left, and only once every caBundle held the bundle when
 *      read, a round after it was patched (or no webhook configuration exists
 *      yet): a new CA signs only after the API server trusts it, with a round's
 *      time for its webhook informer to pick the caBundle up.
 *   4. the other CAs leave the bundle once no replica serves a certificate under
 *      them: the serving certificate is signed by the CA and was issued drain_s
 *      ago or more (every live replica has read the Secret and recorded what it
 *      serves since), and every fresh record of the Secret's serving annotation
 *      names the CA (at least one). Records older than record_ttl_s are a
 *      replica gone: ignored, and pruned when the leader writes the Secret.
 * Every replica, each round: reads the Secret and, when it holds a serving pair
 * other than the one served, hands it to on_pair if the caBundle the API server
 * holds trusts it (or if the replica serves nothing yet and the pair verifies
 * under the Secret's bundle): the last good pair is kept until a replacement is
 * trusted. Then it records what it serves in the Secret's annotation
 * CERTKEEPER_ANNOTATION: {"<replica>": {"ca": "<SHA-256 of the issuing CA>",
 * "time": <Unix seconds>}}, after a new pair, when its record is missing or
 * names another CA, and every record_ttl_s / 3; an update at the resourceVersion
 * read, read again and retried on 409. Then readiness: the served certificate
 * must verify under the caBundle of every webhook.
 *
 * Every replica also watches the Secret (fieldSelector metadata.name=NAME): an
 * event starts a round at once, so a new pair is served well under a second
 * after it is written; the rounds every poll interval are the fallback.
 *
 * In memory (in_memory, `serve --self-signed`): the Secret is an object of the
 * keeper's own, with resourceVersions and 409s as the API server gives them;
 * nothing reads or watches it through the API. The caBundles are still the API
 * server's. One replica only: each would keep a CA of its own.
 *
 * Writes use the resourceVersion read: a 409 (AlreadyExists on create, Conflict
 * on update) is the race of two replicas and ends the round; the next round reads
 * the winner's Secret. docs: issue "Certificates that never lapse"; the caBundle
 * check is what kube-apiserver does (kube-api-facts: webhook clientConfig).
 *
 * Threads: certkeeper_start runs rounds on one thread of its own;
 * certkeeper_set_leading, certkeeper_ready and certkeeper_repairs may be called
 * from any thread; certkeeper_sync from one thread at a time (the keeper's own,
 * or a test's when not started). on_pair is called on the thread running the
 * round, with no lock held.
 */
#ifndef WH_CERTKEEPER_H
#define WH_CERTKEEPER_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "certs/certs.h"
#include "k8s/client.h"

#define CERTKEEPER_DEFAULT_VALIDITY_S     (365LL * 86400)  /* --cert-validity 1 year */
#define CERTKEEPER_DEFAULT_CA_VALIDITY_S  (3650LL * 86400) /* --ca-validity 10 years */
#define CERTKEEPER_DEFAULT_RENEW_BEFORE_S (30LL * 86400)   /* --cert-renew-before 30 days */
#define CERTKEEPER_MAX_POLL_MS            10000L           /* every replica reads this often */
#define CERTKEEPER_DEFAULT_REPAIR_MS      60000L           /* caBundle repaired within */
#define CERTKEEPER_MAX_SANS               32               /* extra_sans (--tls-san) */
#define CERTKEEPER_ANNOTATION             "volcano-plugin-webhook/serving" /* the records */

/**
 * A new serving pair to serve from now on, for new handshakes (the caller
 * hot-loads it, e.g. with server_set_tls_pair, as certs/certwatch.c's reload
 * does). pair is borrowed for the call: copy what is kept.
 * @return 0 when it is served now; < 0 (err filled) when not: the keeper logs it,
 *         keeps reporting the pair served before, and offers it again next round.
 */
typedef int (*certkeeper_pair_fn)(void *userdata, const struct certs_pair *pair,
                                  struct wh_error *err);

struct certkeeper_config {
    struct k8s_client *kc;         /* borrowed; outlives the keeper */
    const char *ns;                /* the Secret's namespace (the Lease's) */
    const char *secret;            /* the Secret's name (--cert-secret) */
    const char *service;           /* --service-name: the SANs' first label */
    const char *service_ns;        /* the Service's namespace; NULL: ns */
    const char *const *extra_sans; /* --tls-san, DNS names or IP addresses; may be NULL */
    size_t nextra;                 /* at most CERTKEEPER_MAX_SANS */
    const char *webhook_config;    /* MutatingWebhookConfiguration (and Validating) name */
    enum certs_key_type key_type;  /* of the CA and serving keys */
    long long validity_s;          /* serving certificate; 0: 1 year */
    long long ca_validity_s;       /* CA; 0: 10 years; not below validity_s */
    long long renew_before_s;      /* renew with less left; 0: 30 days; < validity_s */
    long long drain_s;             /* old CA kept after the new pair at least; 0: 3 * poll */
    long long record_ttl_s;        /* a record older is a replica gone; 0: 60 * poll, >= 3 */
    const char *replica;           /* this replica's record key (the pod's name), valid UTF-8 */
    bool in_memory;                /* the Secret in memory, not in the API (--self-signed) */
    long poll_ms;                  /* between rounds; 0 or more than 10000: 10000 */
    long repair_ms;                /* between caBundle checks; 0: 60000 */
    long request_timeout_ms;       /* per API request; 0: 10000 */
    certkeeper_pair_fn on_pair;    /* may be NULL */
    void *userdata;                /* for on_pair */
};

struct certkeeper;

/**
 * Make a keeper (not leading, serving nothing, not ready); every string of cfg
 * is copied. Nothing is sent to the API server yet.
 * @param[out] out  the keeper (certkeeper_destroy)
 * @return 0; WH_EINVAL naming the field (no namespace, Secret, service or
 *         configuration name, too many SANs, renew_before not below validity,
 *         a CA validity below the serving one or not above 2 * renew_before,
 *         negative durations, no replica name or one not valid UTF-8); WH_ENOMEM.
 */
int certkeeper_create(struct certkeeper **out, const struct certkeeper_config *cfg,
                      struct wh_error *err) __attribute__((warn_unused_result));

/**
 * The records of CERTKEEPER_ANNOTATION's value text (borrowed; NULL or garbage:
 * none). @return new reference to an object {replica: {"ca": hex, "time": n}}
 *         holding only the well-formed records; NULL when out of memory.
 */
json_t *certkeeper_records_parse(const char *text);

/**
 * Remove from records (borrowed, edited) each record older than ttl_s at now, or
 * more than ttl_s ahead of now (a clock gone wrong).
 * @return how many were removed.
 */
size_t certkeeper_records_prune(json_t *records, long long now, long long ttl_s);

/**
 * The rule for an old CA to leave the bundle: at least one record of records
 * (borrowed) is fresh (as certkeeper_records_prune keeps), and every fresh one
 * names ca_fp (64 hex digits, certs_fingerprint_sha256).
 */
bool certkeeper_records_all_on(const json_t *records, const char *ca_fp, long long now,
                               long long ttl_s);

/** Tell the keeper whether this replica holds the Lease. Thread-safe. */
void certkeeper_set_leading(struct certkeeper *ck, bool leading);

/**
 * One round: the Lease holder's steps when leading, then every replica's (see
 * the top of this file). Failures are logged; the next round starts again from
 * the API server's state.
 * @return 0; WH_EEXISTS / WH_ECONFLICT when another writer (a replica, a user)
 *         changed the Secret or a webhook configuration between this round's read
 *         and its write, a failed resourceVersion test (422) included (the round
 *         ended: read again next round); the first other error of the
 *         round (WH_EAPI, WH_ETIMEOUT, WH_ENOMEM, ...) with its message.
 */
int certkeeper_sync(struct certkeeper *ck, struct wh_error *err);

/**
 * Run certkeeper_sync every poll_ms on a thread of its own (the first round at
 * once), and at once after each event of the Secret's watch (a second thread,
 * not in memory), until certkeeper_destroy.
 * @return 0; WH_ERROR when the thread cannot start; WH_EINVAL when started twice.
 */
int certkeeper_start(struct certkeeper *ck, struct wh_error *err)
    __attribute__((warn_unused_result));

/**
 * Whether this replica may take traffic: it serves a certificate that verifies
 * under the caBundle of every webhook the API server holds (as of the last
 * round). Thread-safe.
 * @param[out] reason  why not (one line), when false; may be NULL
 * @return true when ready.
 */
bool certkeeper_ready(struct certkeeper *ck, char *reason, size_t len);

/** caBundles found changed by hand and repaired so far (a counter, base/metric.h). */
unsigned long long certkeeper_repairs(struct certkeeper *ck);

/**
 * The PEM certificate this replica serves (a copy, free()), or NULL when none
 * yet or out of memory. Thread-safe.
 */
char *certkeeper_served_cert(struct certkeeper *ck);

/** Stop the thread if started (a round in flight finishes first), free ck. NULL allowed. */
void certkeeper_destroy(struct certkeeper *ck);

#endif
