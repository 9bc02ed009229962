/*
 * client.c - Kubernetes REST GETs over libcurl (client.h).
 *
 * Design: the client holds an immutable copy of the config. Each thread that
 * calls it gets its own CURL easy handle, kept under a pthread key and reused,
 * so connections are kept alive per thread. The handle is configured once with
 * the TLS material (files, or PEM from memory through the *_BLOB options);
 * per request only the URL, timeout and headers change. The bearer token is
 * read from token_file on every request (kubelet rotates bound tokens) and
 * never logged; the header buffer holding it is wiped after use.
 *
 * Errors: 2xx → decoded body; 404 → WH_ENOTFOUND; CURLE_OPERATION_TIMEDOUT →
 * WH_ETIMEOUT; any other status or transport failure → WH_EAPI. An error body
 * that is a Status fills err with "Reason: message", else "HTTP <code>".
 * Bodies over K8S_MAX_BODY are refused.
 *
 * Threads: any thread may call k8s_get concurrently. Handles are tracked in a
 * list guarded by c->mu, so k8s_client_destroy frees the handles of threads
 * that are still alive; a thread that exits first frees its own through the
 * key's destructor. curl_global_init must have run (main does it).
 */
#include "k8s/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/log.h"

#define K8S_MAX_BODY (16u * 1024 * 1024)   /* bytes */
#define K8S_MAX_TOKEN (64u * 1024)         /* bytes in a token file */
#define K8S_USER_AGENT "volcano-plugin-webhook/0.1.0"

struct handle {
    CURL *curl;
    struct k8s_client *owner;
    struct handle *prev;
    struct handle *next;
};

struct k8s_client {
    struct k8s_config cfg;   /* deep copy, immutable */
    pthread_key_t key;       /* this thread's struct handle */
    pthread_mutex_t mu;      /* guards handles */
    struct handle *handles;  /* every live handle */
};

struct body {
    char *data;
    size_t len;
    size_t cap;
    bool toobig;
};

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
    if (copy_str(&d->server, cfg->server) < 0 || copy_str(&d->ca_file, cfg->ca_file) < 0 ||
        copy_str(&d->ca_data, cfg->ca_data) < 0 || copy_str(&d->cert_file, cfg->cert_file) < 0 ||
        copy_str(&d->cert_data, cfg->cert_data) < 0 || copy_str(&d->key_file, cfg->key_file) < 0 ||
        copy_str(&d->key_data, cfg->key_data) < 0 || copy_str(&d->token, cfg->token) < 0 ||
        copy_str(&d->token_file, cfg->token_file) < 0) {
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
    k8s_config_dispose(&c->cfg);
    free(c);
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct body *b = userdata;
    size_t n = size * nmemb;

    if (n > K8S_MAX_BODY - b->len) {
        b->toobig = true;
        return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
    }
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 16 * 1024;
        char *nd;

        while (ncap < b->len + n + 1)
            ncap *= 2;
        nd = realloc(b->data, ncap);
        if (nd == NULL)
            return 0;
        b->data = nd;
        b->cap = ncap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
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
static int handle_setup(CURL *h, const struct k8s_config *cfg, struct wh_error *err)
{
    CURLcode cc = CURLE_OK;

    cc |= curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    cc |= curl_easy_setopt(h, CURLOPT_USERAGENT, K8S_USER_AGENT);
    cc |= curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    cc |= curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    cc |= curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    cc |= curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    if (cc != CURLE_OK)
        return wh_error_set(err, WH_EAPI, "curl: cannot set options");
    /* a configured CA is the only one trusted (no system bundle), as in client-go */
    if (cfg->ca_data != NULL) {
        if (blob_opt(h, CURLOPT_CAINFO_BLOB, cfg->ca_data) < 0 ||
            curl_easy_setopt(h, CURLOPT_CAINFO, NULL) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_CAPATH, NULL) != CURLE_OK)
            return wh_error_set(err, WH_EAPI, "curl: cannot use certificate-authority-data");
    } else if (cfg->ca_file != NULL) {
        if (curl_easy_setopt(h, CURLOPT_CAINFO, cfg->ca_file) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_CAPATH, NULL) != CURLE_OK)
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
    if (handle_setup(h->curl, &c->cfg, err) < 0 || pthread_setspecific(c->key, h) != 0) {
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
            while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
                             buf[n - 1] == '\t'))
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

/* err from a non-2xx answer: the Status body's "Reason: message", else "HTTP code". */
static int status_error(long code, const struct body *b, struct wh_error *err)
{
    int rc = code == 404 ? WH_ENOTFOUND : WH_EAPI;
    json_t *st = b->data ? json_loadb(b->data, b->len, 0, NULL) : NULL;
    const char *reason = json_string_value(json_object_get(st, "reason"));
    const char *msg = json_string_value(json_object_get(st, "message"));

    if (msg != NULL && msg[0] != '\0' && reason != NULL && reason[0] != '\0')
        wh_error_set(err, rc, "%s: %s", reason, msg);
    else if (msg != NULL && msg[0] != '\0')
        wh_error_set(err, rc, "HTTP %ld: %s", code, msg);
    else if (reason != NULL && reason[0] != '\0')
        wh_error_set(err, rc, "%s: HTTP %ld", reason, code);
    else
        wh_error_set(err, rc, "HTTP %ld", code);
    json_decref(st);
    return rc;
}

int k8s_get(struct k8s_client *c, const char *path, long timeout_ms, json_t **out,
            struct wh_error *err)
{
    struct body b = {0};
    struct curl_slist *hdrs = NULL;
    struct curl_slist *tmp;
    char *auth = NULL;
    char *url = NULL;
    char errbuf[CURL_ERROR_SIZE];
    json_error_t je;
    CURLcode cc;
    CURL *h;
    long code = 0;
    size_t n;
    int rc;

    *out = NULL;
    h = thread_handle(c, err);
    if (h == NULL)
        return err != NULL && err->code != 0 ? err->code : WH_EAPI;
    rc = auth_header(&c->cfg, &auth, err);
    if (rc < 0)
        goto out;
    n = strlen(c->cfg.server) + strlen(path) + 1;
    url = malloc(n);
    if (url == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    snprintf(url, n, "%s%s", c->cfg.server, path);
    tmp = curl_slist_append(hdrs, "Accept: application/json");
    if (tmp != NULL) {
        hdrs = tmp;
        tmp = auth != NULL ? curl_slist_append(hdrs, auth) : hdrs;
    }
    if (tmp == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    hdrs = tmp;
    errbuf[0] = '\0';
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    cc = curl_easy_perform(h);
    /* the handle outlives this call: drop pointers to our stack and heap */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        rc = wh_error_set(err, WH_ETIMEOUT, "GET %s: timed out after %ld ms", path, timeout_ms);
        goto out;
    }
    if (cc == CURLE_WRITE_ERROR && b.toobig) {
        rc = wh_error_set(err, WH_EAPI, "GET %s: response body larger than %u bytes", path,
                          K8S_MAX_BODY);
        goto out;
    }
    if (cc != CURLE_OK) {
        rc = wh_error_set(err, WH_EAPI, "GET %s: %s", path,
                          errbuf[0] ? errbuf : curl_easy_strerror(cc));
        goto out;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    LOG_DEBUG("k8s: GET path=%s status=%ld bytes=%zu", path, code, b.len);
    if (code < 200 || code > 299) {
        rc = status_error(code, &b, err);
        goto out;
    }
    *out = json_loadb(b.data ? b.data : "", b.len, 0, &je);
    if (*out == NULL) {
        rc = wh_error_set(err, WH_EAPI, "GET %s: invalid JSON in response: %s", path, je.text);
        goto out;
    }
    rc = 0;
out:
    curl_slist_free_all(hdrs);
    if (auth != NULL)
        OPENSSL_cleanse(auth, strlen(auth));
    free(auth);
    free(url);
    free(b.data);
    return rc;
}

int k8s_get_job(struct k8s_client *c, const char *ns, const char *name, long timeout_ms,
                json_t **out, struct wh_error *err)
{
    char *ens = NULL;
    char *ename = NULL;
    char *path = NULL;
    size_t n;
    CURL *h;
    int rc;

    *out = NULL;
    if (ns == NULL || ns[0] == '\0' || name == NULL || name[0] == '\0')
        return wh_error_set(err, WH_EINVAL, "job namespace and name must not be empty");
    h = thread_handle(c, err);
    if (h == NULL)
        return err != NULL && err->code != 0 ? err->code : WH_EAPI;
    ens = curl_easy_escape(h, ns, 0);
    ename = curl_easy_escape(h, name, 0);
    if (ens == NULL || ename == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    n = strlen(ens) + strlen(ename) + 64;
    path = malloc(n);
    if (path == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    snprintf(path, n, "/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs/%s", ens, ename);
    rc = k8s_get(c, path, timeout_ms, out, err);
out:
    curl_free(ens);
    curl_free(ename);
    free(path);
    return rc;
}
