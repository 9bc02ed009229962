/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client.c - Kubernetes REST requests over libcurl (client.h, client_internal.h).
 *
 * Design: the client holds an immutable copy of the config. Each thread that
 * calls it gets its own CURL easy handle, kept under a pthread key and reused,
 * so connections are kept alive per thread. The handle is configured once with
 * the TLS material (files, or PEM from memory through the *_BLOB options);
 * per request only the method, URL, body, timeout and headers change. The
 * bearer token is read from token_file on every request (kubelet rotates bound
 * tokens) and never logged; every buffer holding it is wiped after use.
 *
 * Every verb goes through k8s_request: rate limiter (a token bucket shared by
 * all threads; an urgent request, an admission's Job GET, goes ahead of the
 * queued callers within a bound: k8s_client_throttle), then the transfer
 * (request_attempt), then the answer: 2xx →
 * decoded body (request_decode); 429 or 503 with Retry-After → sleep and try
 * again (request_should_retry: at most retry_max times, only while the request's
 * own timeout leaves room); any other status → the Status body decoded into a code (client_internal.h k8s_client_status_error) and
 * "Reason: message" in err. CURLE_OPERATION_TIMEDOUT → WH_ETIMEOUT; other
 * transport failures → WH_EAPI. Bodies over the cap (k8s_client_set_max_body, by
 * default K8S_MAX_BODY) are refused with WH_ETOOBIG, so that a caller that
 * can ask for less (a LIST with a smaller limit) knows to.
 *
 * Threads: any thread may call any function concurrently, except
 * k8s_client_set_options and k8s_client_set_max_body (before threads use the client) and
 * k8s_client_destroy (after they are done). Locks: c->mu guards the handle
 * list, so k8s_client_destroy frees the handles of threads that are still
 * alive (a thread that exits first frees its own through the key's
 * destructor); c->lim_mu guards the token bucket and is never held while
 * sleeping or doing I/O. curl_global_init must have run (main does it).
 */
#include "k8s/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/log.h"
#include "k8s/client_internal.h"

#define K8S_MAX_BODY    (16u * 1024 * 1024) /* bytes */
#define K8S_MAX_TOKEN   (64u * 1024)        /* bytes in a token file */
#define URGENT_AHEAD_MS 1000L /* the most an urgent debt adds to the waits queued after it */
#define K8S_USER_AGENT  "volcano-plugin-webhook/0.1.0"

struct handle {
    CURL *curl;
    struct k8s_client *owner;
    struct handle *prev;
    struct handle *next;
};

struct k8s_client {
    struct k8s_config cfg;         /* deep copy, immutable */
    struct k8s_client_options opt; /* set before threads start, then read-only */
    size_t max_body;               /* bytes of a body accepted; same rule as opt */
    pthread_key_t key;             /* this thread's struct handle */
    pthread_mutex_t mu;            /* guards handles */
    struct handle *handles;        /* every live handle */
    pthread_mutex_t lim_mu;        /* guards tokens, sleeping, lim_last_ms and closing */
    pthread_cond_t lim_cv;         /* CLOCK_MONOTONIC; broadcast by k8s_client_close */
    bool closing;                  /* k8s_client_close was called: nobody waits any more */
    double tokens;         /* bucket level; negative = reserved by sleepers, or urgent debt */
    unsigned sleeping;     /* callers sleeping on a token they reserved */
    long long lim_last_ms; /* monotonic ms of the last refill */
};

/* Wait ms, or less once k8s_client_close is called (at once if it was). */
static void wait_unless_closing(struct k8s_client *c, long long ms)
{
    long long until = clock_mono_ms() + ms;
    struct timespec ts = clock_at_ms(until); /* lim_cv's clock is CLOCK_MONOTONIC */

    pthread_mutex_lock(&c->lim_mu);
    while (!c->closing && clock_mono_ms() < until)
        pthread_cond_timedwait(&c->lim_cv, &c->lim_mu, &ts);
    pthread_mutex_unlock(&c->lim_mu);
}

static void handle_free(struct handle *h)
{
    curl_easy_cleanup(h->curl);
    free(h);
}

/* Key destructor: the thread exits; unlink and free its handle. */
static void handle_release(void *p)
{
    struct handle *h = p;
    struct k8s_client *c = h->owner;

    pthread_mutex_lock(&c->mu);
    if (h->prev != NULL)
        h->prev->next = h->next;
    else
        c->handles = h->next;
    if (h->next != NULL)
        h->next->prev = h->prev;
    pthread_mutex_unlock(&c->mu);
    handle_free(h);
}

static int copy_str(char **dst, const char *src)
{
    if (src == NULL)
        return 0;
    *dst = strdup(src);
    return *dst == NULL ? -1 : 0;
}

struct k8s_client *k8s_client_create(const struct k8s_config *cfg, struct wh_error *err)
{
    struct k8s_client *c;
    struct k8s_config *d;

    if (cfg == NULL || cfg->server == NULL) {
        wh_error_set(err, WH_EINVAL, "client config has no server");
        return NULL;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        wh_error_set(err, WH_ENOMEM, "out of memory");
        return NULL;
    }
    d = &c->cfg;
    if (copy_str(&d->server, cfg->server) < 0 || copy_str(&d->ca_file, cfg->ca_file) < 0
        || copy_str(&d->ca_data, cfg->ca_data) < 0 || copy_str(&d->cert_file, cfg->cert_file) < 0
        || copy_str(&d->cert_data, cfg->cert_data) < 0 || copy_str(&d->key_file, cfg->key_file) < 0
        || copy_str(&d->key_data, cfg->key_data) < 0 || copy_str(&d->token, cfg->token) < 0
        || copy_str(&d->token_file, cfg->token_file) < 0) {
        k8s_config_dispose(d);
        free(c);
        wh_error_set(err, WH_ENOMEM, "out of memory");
        return NULL;
    }
    d->insecure = cfg->insecure;
    if (pthread_key_create(&c->key, handle_release) != 0) {
        k8s_config_dispose(d);
        free(c);
        wh_error_set(err, WH_ERROR, "pthread_key_create failed");
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->lim_mu, NULL);
    clock_cond_init(&c->lim_cv);
    c->opt.qps = 0; /* no limit, no retries until k8s_client_set_options */
    c->opt.burst = 1;
    c->opt.retry_max = 0;
    c->max_body = K8S_MAX_BODY;
    return c;
}

void k8s_client_destroy(struct k8s_client *c)
{
    struct handle *h;

    if (c == NULL)
        return;
    /* threads still alive will not run the destructor once the key is gone */
    pthread_key_delete(c->key);
    pthread_mutex_lock(&c->mu);
    h = c->handles;
    c->handles = NULL;
    pthread_mutex_unlock(&c->mu);
    while (h != NULL) {
        struct handle *next = h->next;

        handle_free(h);
        h = next;
    }
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->lim_cv);
    pthread_mutex_destroy(&c->lim_mu);
    k8s_config_dispose(&c->cfg);
    free(c);
}

void k8s_client_close(struct k8s_client *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->lim_mu);
    c->closing = true;
    pthread_cond_broadcast(&c->lim_cv);
    pthread_mutex_unlock(&c->lim_mu);
}

void k8s_client_set_options(struct k8s_client *c, const struct k8s_client_options *opt)
{
    if (c == NULL || opt == NULL)
        return;
    pthread_mutex_lock(&c->lim_mu);
    c->opt = *opt;
    if (c->opt.burst < 1)
        c->opt.burst = 1;
    if (c->opt.retry_max < 0)
        c->opt.retry_max = 0;
    c->tokens = c->opt.burst; /* a full bucket to start with, as client-go's */
    c->lim_last_ms = clock_mono_ms();
    pthread_mutex_unlock(&c->lim_mu);
}

void k8s_client_set_max_body(struct k8s_client *c, size_t max_body)
{
    if (c != NULL)
        c->max_body = max_body > 0 ? max_body : K8S_MAX_BODY;
}

/*
 * Token bucket with reservations: a caller takes a token at once, driving the
 * level negative when the bucket is empty, and then sleeps until the refill
 * would have covered it. Waiters thus queue in arrival order and the lock is
 * held only for the arithmetic. An urgent caller goes at once, ahead of the
 * queue, while the tokens taken ahead of it (the level with the sleepers'
 * reservations given back, less its own) stay within URGENT_AHEAD_MS of the rate
 * (at least one token, at most burst): the sleepers keep their turns, and the
 * callers after it wait for its token, at most URGENT_AHEAD_MS longer (one
 * token's interval when the rate is under one per second).
 */
int k8s_client_throttle(struct k8s_client *c, long max_wait_ms, bool urgent, struct wh_error *err)
{
    long long now;
    long long wait_ms = 0;
    double qps;

    pthread_mutex_lock(&c->lim_mu);
    qps = c->opt.qps;
    if (qps <= 0 || c->closing) {
        pthread_mutex_unlock(&c->lim_mu);
        return 0;
    }
    now = clock_mono_ms();
    c->tokens += (double)(now - c->lim_last_ms) * qps / 1000.0;
    if (c->tokens > c->opt.burst)
        c->tokens = c->opt.burst;
    c->lim_last_ms = now;
    if (urgent) {
        double ahead = qps * (double)URGENT_AHEAD_MS / 1000.0;

        if (ahead > c->opt.burst)
            ahead = c->opt.burst;
        if (ahead < 1.0)
            ahead = 1.0;
        if (c->tokens + c->sleeping - 1.0 >= -ahead) {
            c->tokens -= 1.0;
            pthread_mutex_unlock(&c->lim_mu);
            return 0;
        }
    }
    c->tokens -= 1.0;
    if (c->tokens < 0) {
        /* round up: waking a millisecond early would find no token */
        wait_ms = (long long)(-c->tokens * 1000.0 / qps) + 1;
        if (wait_ms > max_wait_ms) {
            c->tokens += 1.0; /* give the reservation back */
            pthread_mutex_unlock(&c->lim_mu);
            return wh_error_set(err, WH_ETIMEOUT,
                                "client rate limit: waiting %lld ms exceeds the timeout", wait_ms);
        }
        c->sleeping++;
    }
    pthread_mutex_unlock(&c->lim_mu);
    if (wait_ms > 0) {
        wait_unless_closing(c, wait_ms);
        pthread_mutex_lock(&c->lim_mu);
        c->sleeping--;
        pthread_mutex_unlock(&c->lim_mu);
    }
    return 0;
}

/* CURLOPT_WRITEFUNCTION into a struct buf; 0 aborts the transfer (CURLE_WRITE_ERROR), with
 * b->rc saying why: WH_ETOOBIG past the client's max_body, WH_ENOMEM. */
static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct buf *b = userdata;
    size_t n = size * nmemb;

    return buf_append(b, ptr, n) < 0 ? 0 : n;
}

static int blob_opt(CURL *h, CURLoption opt, const char *pem)
{
    struct curl_blob blob;

    blob.data = (void *)pem;
    blob.len = strlen(pem);
    blob.flags = CURL_BLOB_COPY;
    return curl_easy_setopt(h, opt, &blob) == CURLE_OK ? 0 : -1;
}

/* Options that never change for this client. */
int k8s_client_handle_setup(struct k8s_client *c, CURL *h, struct wh_error *err)
{
    const struct k8s_config *cfg = &c->cfg;
    CURLcode cc = CURLE_OK;

    cc |= curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    /* Never let curl resolve "." or ".." segments into another resource's path. */
    cc |= curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
    cc |= curl_easy_setopt(h, CURLOPT_USERAGENT, K8S_USER_AGENT);
    cc |= curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    cc |= curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    cc |= curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    cc |= curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    if (cc != CURLE_OK)
        return wh_error_set(err, WH_EAPI, "curl: cannot set options");
    /* a configured CA is the only one trusted (no system bundle), as in client-go */
    if (cfg->ca_data != NULL) {
        if (blob_opt(h, CURLOPT_CAINFO_BLOB, cfg->ca_data) < 0
            || curl_easy_setopt(h, CURLOPT_CAINFO, NULL) != CURLE_OK
            || curl_easy_setopt(h, CURLOPT_CAPATH, NULL) != CURLE_OK)
            return wh_error_set(err, WH_EAPI, "curl: cannot use certificate-authority-data");
    } else if (cfg->ca_file != NULL) {
        if (curl_easy_setopt(h, CURLOPT_CAINFO, cfg->ca_file) != CURLE_OK
            || curl_easy_setopt(h, CURLOPT_CAPATH, NULL) != CURLE_OK)
            return wh_error_set(err, WH_EAPI, "curl: cannot use CA file");
    }
    if (cfg->cert_data != NULL) {
        if (blob_opt(h, CURLOPT_SSLCERT_BLOB, cfg->cert_data) < 0)
            return wh_error_set(err, WH_EAPI, "curl: cannot use client-certificate-data");
    } else if (cfg->cert_file != NULL) {
        if (curl_easy_setopt(h, CURLOPT_SSLCERT, cfg->cert_file) != CURLE_OK)
            return wh_error_set(err, WH_EAPI, "curl: cannot use client certificate file");
    }
    if (cfg->key_data != NULL) {
        if (blob_opt(h, CURLOPT_SSLKEY_BLOB, cfg->key_data) < 0)
            return wh_error_set(err, WH_EAPI, "curl: cannot use client-key-data");
    } else if (cfg->key_file != NULL) {
        if (curl_easy_setopt(h, CURLOPT_SSLKEY, cfg->key_file) != CURLE_OK)
            return wh_error_set(err, WH_EAPI, "curl: cannot use client key file");
    }
    if (cfg->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return 0;
}

/* This thread's handle, created on first use. Borrowed. */
static CURL *thread_handle(struct k8s_client *c, struct wh_error *err)
{
    struct handle *h = pthread_getspecific(c->key);

    if (h != NULL)
        return h->curl;
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        wh_error_set(err, WH_ENOMEM, "out of memory");
        return NULL;
    }
    h->owner = c;
    h->curl = curl_easy_init();
    if (h->curl == NULL) {
        free(h);
        wh_error_set(err, WH_EAPI, "curl_easy_init failed");
        return NULL;
    }
    if (k8s_client_handle_setup(c, h->curl, err) < 0 || pthread_setspecific(c->key, h) != 0) {
        if (err != NULL && err->code == 0)
            wh_error_set(err, WH_ERROR, "pthread_setspecific failed");
        handle_free(h);
        return NULL;
    }
    pthread_mutex_lock(&c->mu);
    h->next = c->handles;
    if (c->handles != NULL)
        c->handles->prev = h;
    c->handles = h;
    pthread_mutex_unlock(&c->mu);
    return h->curl;
}

/*
 * The "Authorization: Bearer ..." header line (malloc'd; wipe before free),
 * or NULL with *out NULL when the client has no token.
 */
static int auth_header(const struct k8s_config *cfg, char **out, struct wh_error *err)
{
    char buf[K8S_MAX_TOKEN];
    const char *tok = cfg->token;
    size_t n = 0;
    size_t len;
    int rc = 0;

    *out = NULL;
    if (cfg->token_file != NULL) {
        FILE *f = fopen(cfg->token_file, "rb");

        if (f != NULL) {
            n = fread(buf, 1, sizeof(buf) - 1, f);
            fclose(f);
            buf[n] = '\0';
            /* trim surrounding whitespace, as client-go does */
            while (n > 0
                   && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '
                       || buf[n - 1] == '\t'))
                buf[--n] = '\0';
            tok = buf;
            while (*tok == ' ' || *tok == '\t' || *tok == '\n' || *tok == '\r')
                tok++;
        } else if (tok == NULL) {
            return wh_error_set(err, WH_EAPI, "cannot read token file %s: %s", cfg->token_file,
                                strerror(errno));
        }
        /* unreadable file with a static token: fall back to the static one */
    }
    if (tok == NULL)
        goto out;
    if (tok[0] == '\0') {
        rc = wh_error_set(err, WH_EAPI, "token file %s is empty", cfg->token_file);
        goto out;
    }
    len = strlen(tok) + sizeof("Authorization: Bearer ");
    *out = malloc(len);
    if (*out == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    snprintf(*out, len, "Authorization: Bearer %s", tok);
out:
    OPENSSL_cleanse(buf, sizeof(buf));
    return rc;
}

void k8s_client_headers_free(struct curl_slist *hdrs)
{
    struct curl_slist *l;

    for (l = hdrs; l != NULL; l = l->next)
        OPENSSL_cleanse(l->data, strlen(l->data));
    curl_slist_free_all(hdrs);
}

/* Append a formatted "Name: value" line; 0 or -1 on ENOMEM (list kept). */
static int hdr_add(struct curl_slist **l, const char *name, const char *value)
{
    char line[512];
    struct curl_slist *n;

    if ((size_t)snprintf(line, sizeof(line), "%s: %s", name, value) >= sizeof(line))
        return -1;
    n = curl_slist_append(*l, line);
    if (n == NULL)
        return -1;
    *l = n;
    return 0;
}

int k8s_client_headers(struct k8s_client *c, const char *accept, const char *content_type,
                       struct curl_slist **out, struct wh_error *err)
{
    struct curl_slist *l = NULL;
    struct curl_slist *n;
    char *auth = NULL;
    int rc;

    *out = NULL;
    rc = auth_header(&c->cfg, &auth, err);
    if (rc < 0)
        return rc;
    if (hdr_add(&l, "Accept", accept) < 0
        || (content_type != NULL && hdr_add(&l, "Content-Type", content_type) < 0)
        || (n = curl_slist_append(l, "Expect:")) == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    l = n;
    if (auth != NULL) {
        n = curl_slist_append(l, auth);
        if (n == NULL) {
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
            goto out;
        }
        l = n;
    }
    *out = l;
    l = NULL; /* now owned by the caller */
out:
    k8s_client_headers_free(l);
    if (auth != NULL)
        OPENSSL_cleanse(auth, strlen(auth));
    free(auth);
    return rc;
}

char *k8s_client_url(const struct k8s_client *c, const char *path)
{
    size_t n = strlen(c->cfg.server) + strlen(path) + 1;
    char *url = malloc(n);

    if (url != NULL)
        snprintf(url, n, "%s%s", c->cfg.server, path);
    return url;
}

int k8s_client_status_from_json(long http_code, const json_t *st, struct wh_error *err)
{
    const char *reason = json_string_value(json_object_get(st, "reason"));
    const char *msg = json_string_value(json_object_get(st, "message"));
    int rc;

    if (http_code == 0 && json_is_integer(json_object_get(st, "code")))
        http_code = (long)json_integer_value(json_object_get(st, "code"));
    switch (http_code) {
    case 404: rc = WH_ENOTFOUND; break;
    case 409:
        /* the two 409s need different handling: reread-and-retry vs. taken */
        rc = reason != NULL && strcmp(reason, "AlreadyExists") == 0 ? WH_EEXISTS : WH_ECONFLICT;
        break;
    case 410: rc = WH_EGONE; break;
    default: rc = WH_EAPI; break;
    }
    if (msg != NULL && msg[0] != '\0' && reason != NULL && reason[0] != '\0')
        wh_error_set(err, rc, "%s: %s", reason, msg);
    else if (msg != NULL && msg[0] != '\0')
        wh_error_set(err, rc, "HTTP %ld: %s", http_code, msg);
    else if (reason != NULL && reason[0] != '\0')
        wh_error_set(err, rc, "%s: HTTP %ld", reason, http_code);
    else
        wh_error_set(err, rc, "HTTP %ld", http_code);
    return rc;
}

bool k8s_error_reason_is(const struct wh_error *err, const char *reason)
{
    size_t n = strlen(reason);

    return err != NULL && strncmp(err->msg, reason, n) == 0 && err->msg[n] == ':';
}

int k8s_client_status_error(long http_code, const char *body, size_t len, struct wh_error *err)
{
    json_t *st = body != NULL ? json_loadb(body, len, 0, NULL) : NULL;
    int rc = k8s_client_status_from_json(http_code, st, err);

    json_decref(st);
    return rc;
}

/* Set method and body on a reused handle; every option a previous request set is overridden. */
static void set_method(CURL *h, const char *method, const char *data, size_t len)
{
    if (strcmp(method, "GET") == 0 || (data == NULL && strcmp(method, "DELETE") == 0)) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(data ? len : 0));
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, data ? data : "");
    }
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST,
                     strcmp(method, "GET") == 0 || strcmp(method, "POST") == 0 ? NULL : method);
}

/*
 * libcurl reports 0 for "absent", so presence is asked separately:
 * "Retry-After: 0" is a valid answer.
 */
bool k8s_client_retry_after(CURL *h, curl_off_t *secs)
{
    struct curl_header *hd;

    if (curl_easy_header(h, "Retry-After", 0, CURLH_HEADER, -1, &hd) != CURLHE_OK)
        return false;
    if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, secs) != CURLE_OK || *secs < 0)
        *secs = 0;
    return true;
}

/* One k8s_request: what each of its attempts sends. */
struct request {
    const char *method;
    const char *path;
    const char *url;          /* the server's URL of path */
    const char *data;         /* the JSON body, or NULL */
    const char *content_type; /* of data; NULL without a body */
    long timeout_ms;          /* the caller's limit, for messages */
    bool urgent;              /* k8s_client_throttle's: an admission waits on it */
};

static bool request_method_ok(const char *method)
{
    static const char *const verbs[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};

    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        if (strcmp(method, verbs[i]) == 0)
            return true;
    return false;
}

/*
 * One transfer of rq on h, given left_ms at most: headers made afresh (the token is
 * re-read on each attempt), the answer's body into *b (emptied first).
 * @param[out] code  the HTTP status, when 0 is returned
 * @return 0 whatever the status; WH_ETIMEOUT; WH_ETOOBIG (body over b->max);
 *         WH_EAPI (transport); the header builder's errors.
 */
static int request_attempt(struct k8s_client *c, CURL *h, const struct request *rq, long left_ms,
                           struct buf *b, long *code, struct wh_error *err)
{
    struct curl_slist *hdrs = NULL;
    char errbuf[CURL_ERROR_SIZE];
    CURLcode cc;
    int rc;

    rc = k8s_client_headers(c, "application/json", rq->content_type, &hdrs, err);
    if (rc < 0)
        return rc;
    buf_dispose(b); /* empty, same cap */
    errbuf[0] = '\0';
    curl_easy_setopt(h, CURLOPT_URL, rq->url);
    set_method(h, rq->method, rq->data, rq->data ? strlen(rq->data) : 0);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, left_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, left_ms);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    cc = curl_easy_perform(h);
    /* the handle outlives this call: drop pointers to our stack and heap */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    k8s_client_headers_free(hdrs);
    if (cc == CURLE_OPERATION_TIMEDOUT)
        return wh_error_set(err, WH_ETIMEOUT, "%s %s: timed out after %ld ms", rq->method, rq->path,
                            rq->timeout_ms);
    if (cc == CURLE_WRITE_ERROR && b->rc == WH_ETOOBIG)
        return wh_error_set(err, WH_ETOOBIG, "%s %s: response body larger than %zu bytes",
                            rq->method, rq->path, b->max);
    if (cc != CURLE_OK)
        return wh_error_set(err, WH_EAPI, "%s %s: %s", rq->method, rq->path,
                            errbuf[0] ? errbuf : curl_easy_strerror(cc));
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
    return 0;
}

/*
 * 429 or 503 with a Retry-After whose pause leaves time for one more try before
 * deadline, and retries left: the server asked for a pause (docs/kube-api.md §2).
 * @param[out] pause_s  the pause, in seconds, when true is returned
 */
static bool request_should_retry(const struct k8s_client *c, CURL *h, long code, long attempt,
                                 long long deadline, curl_off_t *pause_s)
{
    return (code == 429 || code == 503) && attempt < c->opt.retry_max
        && k8s_client_retry_after(h, pause_s)
        && (long long)*pause_s * 1000 < deadline - clock_mono_ms();
}

/* A 2xx body as JSON into *out (new reference; JSON null for an empty body). */
static int request_decode(const struct request *rq, const struct buf *b, json_t **out,
                          struct wh_error *err)
{
    json_error_t je;

    if (b->len == 0) {
        *out = json_null(); /* 204 or an empty 2xx: still a value, never NULL */
        return 0;
    }
    /*
     * JSON_ALLOW_NUL: a \u0000 is valid in Kubernetes strings (an annotation or env
     * value); refused, one such Job failed every LIST of the informer and every GET of it.
     */
    *out = json_loadb(b->data, b->len, JSON_ALLOW_NUL, &je);
    if (*out == NULL)
        return wh_error_set(err, WH_EAPI, "%s %s: invalid JSON in response: %s", rq->method,
                            rq->path, je.text);
    return 0;
}

/* k8s_request, urgent or not (k8s_client_throttle). */
static int request_run(struct k8s_client *c, const char *method, const char *path,
                       const json_t *body, const char *content_type, long timeout_ms, bool urgent,
                       json_t **out, struct wh_error *err)
{
    struct request rq = {method, path, NULL, NULL, NULL, timeout_ms, urgent};
    struct buf b;
    char *data = NULL;
    char *url = NULL;
    long long deadline = clock_mono_ms() + timeout_ms;
    long attempt;
    CURL *h;
    long code = 0;
    int rc;

    buf_init(&b, c->max_body);
    if (out != NULL)
        *out = NULL;
    if (method == NULL || path == NULL || path[0] != '/' || !request_method_ok(method))
        return wh_error_set(err, WH_EINVAL, "bad request method or path");
    h = thread_handle(c, err);
    if (h == NULL)
        return err != NULL && err->code != 0 ? err->code : WH_EAPI;
    if (body != NULL) {
        data = json_dumps(body, JSON_COMPACT);
        if (data == NULL)
            return wh_error_set(err, WH_ENOMEM, "%s %s: cannot encode the body", method, path);
        rq.data = data;
        rq.content_type = content_type != NULL ? content_type : "application/json";
    }
    url = k8s_client_url(c, path);
    if (url == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    rq.url = url;
    for (attempt = 0;; attempt++) {
        long long left = deadline - clock_mono_ms();
        curl_off_t retry_after = 0;

        if (left <= 0) {
            rc = wh_error_set(err, WH_ETIMEOUT, "%s %s: timed out after %ld ms", method, path,
                              timeout_ms);
            goto out;
        }
        /* a retry answers kube-apiserver's own pushback (429, 503): in the queue */
        rc = k8s_client_throttle(c, (long)left, rq.urgent && attempt == 0, err);
        if (rc < 0)
            goto out;
        left = deadline - clock_mono_ms();
        rc = request_attempt(c, h, &rq, left < 1 ? 1 : (long)left, &b, &code, err);
        if (rc < 0)
            goto out;
        LOG_DEBUG("k8s: response method=%s path=%s status=%ld bytes=%zu attempt=%ld", method, path,
                  code, b.len, attempt);
        if (code >= 200 && code <= 299)
            break;
        if (!request_should_retry(c, h, code, attempt, deadline, &retry_after)) {
            rc = k8s_client_status_error(code, b.data, b.len, err);
            goto out;
        }
        LOG_DEBUG("k8s: retrying after the server's pause method=%s path=%s status=%ld "
                  "retry_after=%ld",
                  method, path, code, (long)retry_after);
        wait_unless_closing(c, (long long)retry_after * 1000);
    }
    rc = out != NULL ? request_decode(&rq, &b, out, err) : 0;
out:
    free(url);
    free(data);
    buf_dispose(&b);
    return rc;
}

int k8s_request(struct k8s_client *c, const char *method, const char *path, const json_t *body,
                const char *content_type, long timeout_ms, json_t **out, struct wh_error *err)
{
    return request_run(c, method, path, body, content_type, timeout_ms, false, out, err);
}

int k8s_get(struct k8s_client *c, const char *path, long timeout_ms, json_t **out,
            struct wh_error *err)
{
    return k8s_request(c, "GET", path, NULL, NULL, timeout_ms, out, err);
}

/* k8s_get_job and k8s_get_job_urgent. */
static int get_job(struct k8s_client *c, const char *ns, const char *name, long timeout_ms,
                   bool urgent, json_t **out, struct wh_error *err)
{
    char *path;
    int rc;

    *out = NULL;
    if (ns == NULL || ns[0] == '\0' || name == NULL || name[0] == '\0')
        return wh_error_set(err, WH_EINVAL, "job namespace and name must not be empty");
    path = k8s_path("batch.volcano.sh", "v1alpha1", ns, "jobs", name);
    if (path == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    rc = request_run(c, "GET", path, NULL, NULL, timeout_ms, urgent, out, err);
    free(path);
    return rc;
}

int k8s_get_job(struct k8s_client *c, const char *ns, const char *name, long timeout_ms,
                json_t **out, struct wh_error *err)
{
    return get_job(c, ns, name, timeout_ms, false, out, err);
}

int k8s_get_job_urgent(struct k8s_client *c, const char *ns, const char *name, long timeout_ms,
                       json_t **out, struct wh_error *err)
{
    return get_job(c, ns, name, timeout_ms, true, out, err);
}

int k8s_create(struct k8s_client *c, const char *collection_path, const json_t *obj,
               long timeout_ms, json_t **out, struct wh_error *err)
{
    return k8s_request(c, "POST", collection_path, obj, NULL, timeout_ms, out, err);
}

int k8s_update(struct k8s_client *c, const char *object_path, const json_t *obj, long timeout_ms,
               json_t **out, struct wh_error *err)
{
    return k8s_request(c, "PUT", object_path, obj, NULL, timeout_ms, out, err);
}

int k8s_delete(struct k8s_client *c, const char *object_path, long timeout_ms, struct wh_error *err)
{
    json_t *opts = json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1",
                             "propagationPolicy", "Background");
    int rc;

    if (opts == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    rc = k8s_request(c, "DELETE", object_path, opts, NULL, timeout_ms, NULL, err);
    json_decref(opts);
    return rc;
}

/*
 * timeout_ms applies to each page (as client-go's per-request timeout), so a
 * long list is not cut short by its own length.
 */
int k8s_list_pages(struct k8s_client *c, const char *collection_path, long limit, long timeout_ms,
                   k8s_page_fn on_page, void *userdata, char **rv_out, struct wh_error *err)
{
    json_t *page = NULL;
    char *cont = NULL; /* escaped continue token of the next page */
    char *rv = NULL;
    char *path = NULL;
    const char *sep = strchr(collection_path, '?') != NULL ? "&" : "?";
    int rc = 0;

    *rv_out = NULL;
    for (;;) {
        size_t n = strlen(collection_path) + (cont ? strlen(cont) : 0) + 64;
        json_t *meta;
        json_t *arr;
        const char *next;
        const char *prv;

        free(path);
        path = malloc(n);
        if (path == NULL) {
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
            goto out;
        }
        if (limit > 0)
            snprintf(path, n, "%s%slimit=%ld%s%s", collection_path, sep, limit,
                     cont ? "&continue=" : "", cont ? cont : "");
        else if (cont != NULL)
            snprintf(path, n, "%s%scontinue=%s", collection_path, sep, cont);
        else
            snprintf(path, n, "%s", collection_path);
        json_decref(page);
        page = NULL;
        rc = k8s_request(c, "GET", path, NULL, NULL, timeout_ms, &page, err);
        if (rc < 0)
            goto out;
        meta = json_object_get(page, "metadata");
        arr = json_object_get(page, "items");
        if (!json_is_object(page) || (arr != NULL && !json_is_array(arr) && !json_is_null(arr))) {
            rc = wh_error_set(err, WH_EAPI, "LIST %s: answer is not a list", collection_path);
            goto out;
        }
        if (json_is_array(arr)) {
            rc = on_page(userdata, arr, err);
            if (rc < 0)
                goto out;
        }
        prv = json_string_value(json_object_get(meta, "resourceVersion"));
        if (prv != NULL) {
            free(rv);
            rv = strdup(prv);
            if (rv == NULL) {
                rc = wh_error_set(err, WH_ENOMEM, "out of memory");
                goto out;
            }
        }
        next = json_string_value(json_object_get(meta, "continue"));
        curl_free(cont);
        cont = NULL;
        if (next == NULL || next[0] == '\0')
            break;
        cont = curl_easy_escape(NULL, next, 0);
        if (cont == NULL) {
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
            goto out;
        }
    }
    if (rv == NULL) {
        rc = wh_error_set(err, WH_EAPI, "LIST %s: list has no metadata.resourceVersion",
                          collection_path);
        goto out;
    }
    *rv_out = rv;
    rv = NULL;
out:
    json_decref(page);
    curl_free(cont);
    free(rv);
    free(path);
    return rc;
}

/* k8s_page_fn of k8s_list: append the page's items to the array userdata. */
static int append_page(void *userdata, json_t *items, struct wh_error *err)
{
    return json_array_extend(userdata, items) < 0 ? wh_error_set(err, WH_ENOMEM, "out of memory")
                                                  : 0;
}

int k8s_list(struct k8s_client *c, const char *collection_path, long limit, long timeout_ms,
             json_t **items_out, char **rv_out, struct wh_error *err)
{
    json_t *items = json_array();
    int rc;

    *items_out = NULL;
    *rv_out = NULL;
    if (items == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    rc = k8s_list_pages(c, collection_path, limit, timeout_ms, append_page, items, rv_out, err);
    if (rc < 0) {
        json_decref(items);
        return rc;
    }
    *items_out = items;
    return 0;
}

/* Append "/" and s, URL-escaped when escape; a failure stays in b->rc. */
static void path_seg(struct buf *b, const char *s, bool escape)
{
    char *e = escape ? curl_easy_escape(NULL, s, 0) : (char *)s;
    int rc;

    if (e == NULL) {
        buf_fail(b, WH_ENOMEM);
        return;
    }
    rc = buf_append_str(b, "/");
    if (rc == 0)
        rc = buf_append_str(b, e);
    (void)rc; /* a failure stays in b->rc, for buf_take */
    if (escape)
        curl_free(e);
}

/*
 * ns NULL or "" gives the cluster-wide form ("/apis/G/V/RESOURCE"): the
 * all-namespaces collection, or a cluster-scoped object.
 */
char *k8s_path(const char *group, const char *version, const char *ns, const char *resource,
               const char *name)
{
    struct buf b;
    bool core = group == NULL || group[0] == '\0';

    if (version == NULL || resource == NULL)
        return NULL;
    buf_init(&b, BUF_NO_MAX);
    path_seg(&b, core ? "api" : "apis", false);
    if (!core)
        path_seg(&b, group, true);
    path_seg(&b, version, true);
    if (ns != NULL && ns[0] != '\0') {
        path_seg(&b, "namespaces", false);
        path_seg(&b, ns, true);
    }
    path_seg(&b, resource, true);
    if (name != NULL)
        path_seg(&b, name, true);
    return buf_take(&b, NULL); /* NULL when a segment failed */
}
