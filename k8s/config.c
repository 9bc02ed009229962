/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - where the Kubernetes client gets its server and credentials
 * (k8s_config_load / k8s_config_dispose of client.h).
 *
 * Sources, first match wins: the --kubeconfig path, $KUBECONFIG (the first
 * entry of a ':'-separated list), the in-cluster service account
 * (docs/kube-api.md §6).
 *
 * kubeconfig is read with yaml_load_file (k8s/yaml.c): current-context names a
 * context, whose cluster and user are looked up by name. A *-data field takes
 * precedence over the matching file field, as client-go does; the base64 text
 * is decoded with OpenSSL (EVP_DecodeBlock) and must be PEM. Relative paths
 * are taken against the kubeconfig's directory. exec and auth-provider users
 * are refused (the webhook only needs token or client certificate auth).
 *
 * In-cluster: $WEBHOOK_SERVICEACCOUNT_DIR (for tests) or
 * /var/run/secrets/kubernetes.io/serviceaccount holds token (required, kept as
 * a file so that the client re-reads the rotated token) and ca.crt (used when
 * present); the server is https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT,
 * an IPv6 host in brackets.
 *
 * Threads: called from main at start-up; no shared state.
 */
#include "k8s/client.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s/yaml.h"

#define SA_DIR_DEFAULT "/var/run/secrets/kubernetes.io/serviceaccount"

void k8s_config_dispose(struct k8s_config *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->server);
    free(cfg->ca_file);
    free(cfg->ca_data);
    free(cfg->cert_file);
    free(cfg->cert_data);
    if (cfg->key_data != NULL)
        OPENSSL_cleanse(cfg->key_data, strlen(cfg->key_data));
    free(cfg->key_data);
    free(cfg->key_file);
    if (cfg->token != NULL)
        OPENSSL_cleanse(cfg->token, strlen(cfg->token));
    free(cfg->token);
    free(cfg->token_file);
    memset(cfg, 0, sizeof(*cfg));
}

/* malloc'd "a/b", or NULL. */
static char *path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);

    if (s != NULL)
        snprintf(s, n, "%s/%s", a, b);
    return s;
}

/* p made absolute against the kubeconfig's directory (malloc'd), or NULL. */
static char *resolve_path(const char *kubeconfig, const char *p)
{
    const char *slash = strrchr(kubeconfig, '/');
    char *dir;
    char *s;

    if (p[0] == '/' || slash == NULL)
        return strdup(p);
    dir = strndup(kubeconfig, (size_t)(slash - kubeconfig) + (slash == kubeconfig ? 1 : 0));
    if (dir == NULL)
        return NULL;
    s = slash == kubeconfig ? path_join("", p) : path_join(dir, p);
    free(dir);
    return s;
}

/* The entry of a named list ("contexts", "clusters", "users") called name; borrowed. */
static json_t *named_entry(const json_t *doc, const char *list, const char *name)
{
    json_t *arr = json_object_get(doc, list);
    json_t *e;
    size_t i;

    json_array_foreach(arr, i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));

        if (n != NULL && strcmp(n, name) == 0)
            return e;
    }
    return NULL;
}

/*
 * Decode base64 PEM text from a *-data field into a malloc'd NUL-terminated
 * string. Whitespace in the base64 text is ignored.
 */
static int decode_pem_data(const char *b64, char **out, const char *kc, const char *field,
                           struct wh_error *err)
{
    size_t len = strlen(b64);
    char *clean = malloc(len + 1);
    unsigned char *bin = NULL;
    size_t n = 0;
    size_t i;
    int dec;
    int rc = 0;

    *out = NULL;
    if (clean == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    for (i = 0; i < len; i++) {
        if (!isspace((unsigned char)b64[i]))
            clean[n++] = b64[i];
    }
    clean[n] = '\0';
    if (n == 0 || n % 4 != 0 || n > 0x7fffffff) {
        rc = wh_error_set(err, WH_EINVAL, "kubeconfig %s: %s is not valid base64", kc, field);
        goto out;
    }
    bin = malloc(n / 4 * 3 + 1);
    if (bin == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    dec = EVP_DecodeBlock(bin, (const unsigned char *)clean, (int)n);
    if (dec < 0) {
        rc = wh_error_set(err, WH_EINVAL, "kubeconfig %s: %s is not valid base64", kc, field);
        goto out;
    }
    /* EVP_DecodeBlock counts the bytes that '=' padding stands for */
    if (clean[n - 1] == '=')
        dec--;
    if (clean[n - 2] == '=')
        dec--;
    bin[dec] = '\0';
    if (memchr(bin, '\0', (size_t)dec) != NULL || strstr((char *)bin, "-----BEGIN ") == NULL) {
        rc = wh_error_set(err, WH_EINVAL, "kubeconfig %s: %s does not hold PEM text", kc, field);
        goto out;
    }
    *out = (char *)bin;
    bin = NULL; /* now owned by the caller */
out:
    if (bin != NULL)
        OPENSSL_cleanse(bin, n / 4 * 3 + 1);
    free(bin);
    free(clean);
    return rc;
}

/*
 * One PEM source: field "<name>-data" (base64) wins over "<name>" (a path).
 * Either out may stay NULL.
 */
static int pem_source(const json_t *obj, const char *name, const char *kc, char **file_out,
                      char **data_out, struct wh_error *err)
{
    char field[64];
    const json_t *data;
    const json_t *file;

    snprintf(field, sizeof(field), "%s-data", name);
    data = json_object_get(obj, field);
    file = json_object_get(obj, name);
    if (data != NULL && !json_is_null(data)) {
        if (!json_is_string(data))
            return wh_error_set(err, WH_EINVAL, "kubeconfig %s: %s is not a string", kc, field);
        return decode_pem_data(json_string_value(data), data_out, kc, field, err);
    }
    if (file != NULL && !json_is_null(file)) {
        if (!json_is_string(file) || json_string_length(file) == 0)
            return wh_error_set(err, WH_EINVAL, "kubeconfig %s: %s is not a path", kc, name);
        *file_out = resolve_path(kc, json_string_value(file));
        if (*file_out == NULL)
            return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    return 0;
}

static int dup_string(char **out, const char *s, struct wh_error *err)
{
    *out = strdup(s);
    return *out == NULL ? wh_error_set(err, WH_ENOMEM, "out of memory") : 0;
}

/* Copy server, dropping trailing slashes; only http and https, with a host (RFC 3986
 * §3.2: the authority after "//" up to the next '/'; "https://" alone would leave
 * "https:" once its slash is dropped, and every request would go to no server). */
static int set_server(struct k8s_config *out, const char *server, const char *kc,
                      const char *cluster, struct wh_error *err)
{
    size_t n = strlen(server);
    size_t scheme = strncmp(server, "https://", 8) == 0 ? 8
        : strncmp(server, "http://", 7) == 0            ? 7
                                                        : 0;

    if (scheme == 0)
        return wh_error_set(err, WH_EINVAL,
                            "kubeconfig %s: cluster \"%s\": server \"%s\" is not an http(s) URL",
                            kc, cluster, server);
    if (server[scheme] == '\0' || server[scheme] == '/')
        return wh_error_set(err, WH_EINVAL,
                            "kubeconfig %s: cluster \"%s\": server \"%s\" names no host", kc,
                            cluster, server);
    while (n > 0 && server[n - 1] == '/')
        n--;
    out->server = strndup(server, n);
    return out->server == NULL ? wh_error_set(err, WH_ENOMEM, "out of memory") : 0;
}

static int load_kubeconfig(struct k8s_config *out, const char *kc, struct wh_error *err)
{
    json_t *doc = NULL;
    struct wh_error yerr = {0};
    const char *ctx_name;
    const char *cluster_name;
    const char *user_name;
    const char *server;
    json_t *ctx;
    json_t *cluster;
    json_t *user = NULL;
    json_t *v;
    int rc;

    rc = yaml_load_file(kc, &doc, &yerr);
    if (rc < 0) {
        rc = wh_error_set(err, rc == WH_ENOMEM ? WH_ENOMEM : WH_EINVAL, "kubeconfig %s: %s", kc,
                          yerr.msg);
        goto out;
    }
    if (!json_is_object(doc)) {
        rc = wh_error_set(err, WH_EINVAL, "kubeconfig %s: not a mapping", kc);
        goto out;
    }
    ctx_name = json_string_value(json_object_get(doc, "current-context"));
    if (ctx_name == NULL || ctx_name[0] == '\0') {
        rc = wh_error_set(err, WH_EINVAL, "kubeconfig %s: current-context is not set", kc);
        goto out;
    }
    ctx = json_object_get(named_entry(doc, "contexts", ctx_name), "context");
    if (!json_is_object(ctx)) {
        rc = wh_error_set(err, WH_EINVAL, "kubeconfig %s: context \"%s\" not found", kc, ctx_name);
        goto out;
    }
    cluster_name = json_string_value(json_object_get(ctx, "cluster"));
    if (cluster_name == NULL || cluster_name[0] == '\0') {
        rc = wh_error_set(err, WH_EINVAL, "kubeconfig %s: context \"%s\" names no cluster", kc,
                          ctx_name);
        goto out;
    }
    cluster = json_object_get(named_entry(doc, "clusters", cluster_name), "cluster");
    if (!json_is_object(cluster)) {
        rc = wh_error_set(err, WH_EINVAL, "kubeconfig %s: cluster \"%s\" not found", kc,
                          cluster_name);
        goto out;
    }
    server = json_string_value(json_object_get(cluster, "server"));
    if (server == NULL || server[0] == '\0') {
        rc = wh_error_set(err, WH_EINVAL, "kubeconfig %s: cluster \"%s\" has no server", kc,
                          cluster_name);
        goto out;
    }
    rc = set_server(out, server, kc, cluster_name, err);
    if (rc < 0)
        goto out;
    rc = pem_source(cluster, "certificate-authority", kc, &out->ca_file, &out->ca_data, err);
    if (rc < 0)
        goto out;
    v = json_object_get(cluster, "insecure-skip-tls-verify");
    out->insecure =
        json_is_true(v) || (json_is_string(v) && strcmp(json_string_value(v), "true") == 0);

    user_name = json_string_value(json_object_get(ctx, "user"));
    if (user_name != NULL && user_name[0] != '\0') {
        user = json_object_get(named_entry(doc, "users", user_name), "user");
        if (!json_is_object(user)) {
            rc =
                wh_error_set(err, WH_EINVAL, "kubeconfig %s: user \"%s\" not found", kc, user_name);
            goto out;
        }
    }
    if (user == NULL)
        goto out; /* anonymous */
    if (json_object_get(user, "exec") != NULL || json_object_get(user, "auth-provider") != NULL) {
        rc = wh_error_set(err, WH_EINVAL,
                          "kubeconfig %s: user \"%s\": exec and auth-provider are not supported",
                          kc, user_name);
        goto out;
    }
    rc = pem_source(user, "client-certificate", kc, &out->cert_file, &out->cert_data, err);
    if (rc < 0)
        goto out;
    rc = pem_source(user, "client-key", kc, &out->key_file, &out->key_data, err);
    if (rc < 0)
        goto out;
    if ((out->cert_file || out->cert_data) != (out->key_file || out->key_data)) {
        rc = wh_error_set(err, WH_EINVAL,
                          "kubeconfig %s: user \"%s\": client certificate and key go together", kc,
                          user_name);
        goto out;
    }
    v = json_object_get(user, "token");
    if (json_is_string(v) && json_string_length(v) > 0) {
        rc = dup_string(&out->token, json_string_value(v), err);
        if (rc < 0)
            goto out;
    }
    v = json_object_get(user, "tokenFile");
    if (json_is_string(v) && json_string_length(v) > 0) {
        out->token_file = resolve_path(kc, json_string_value(v));
        if (out->token_file == NULL) {
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
            goto out;
        }
    }
out:
    json_decref(doc);
    return rc;
}

static int load_in_cluster(struct k8s_config *out, const char *host, const char *port,
                           struct wh_error *err)
{
    const char *dir = getenv("WEBHOOK_SERVICEACCOUNT_DIR");
    char *ca = NULL;
    size_t n;

    if (dir == NULL || dir[0] == '\0')
        dir = SA_DIR_DEFAULT;
    if (port == NULL || port[0] == '\0')
        return wh_error_set(err, WH_EINVAL, "in-cluster: KUBERNETES_SERVICE_PORT is not set");
    n = strlen(host) + strlen(port) + 16;
    out->server = malloc(n);
    if (out->server == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    if (strchr(host, ':') != NULL && host[0] != '[')
        snprintf(out->server, n, "https://[%s]:%s", host, port);
    else
        snprintf(out->server, n, "https://%s:%s", host, port);
    out->token_file = path_join(dir, "token");
    ca = path_join(dir, "ca.crt");
    if (out->token_file == NULL || ca == NULL) {
        free(ca);
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    if (access(out->token_file, R_OK) != 0) {
        free(ca);
        return wh_error_set(err, WH_EINVAL, "in-cluster: cannot read %s: %s", out->token_file,
                            strerror(errno));
    }
    if (access(ca, R_OK) == 0)
        out->ca_file = ca; /* now owned by out */
    else
        free(ca);
    return 0;
}

int k8s_config_load(struct k8s_config *out, const char *path, struct wh_error *err)
{
    char *env_first = NULL;
    const char *host;
    int rc;

    memset(out, 0, sizeof(*out));
    if (path == NULL || path[0] == '\0') {
        const char *env = getenv("KUBECONFIG");

        if (env != NULL && env[0] != '\0') {
            env_first = strndup(env, strcspn(env, ":"));
            if (env_first == NULL)
                return wh_error_set(err, WH_ENOMEM, "out of memory");
            path = env_first;
        }
    }
    if (path != NULL && path[0] != '\0') {
        rc = load_kubeconfig(out, path, err);
    } else {
        host = getenv("KUBERNETES_SERVICE_HOST");
        if (host == NULL || host[0] == '\0')
            rc = wh_error_set(err, WH_ENOTFOUND,
                              "no kubeconfig: give --kubeconfig FILE or set KUBECONFIG "
                              "(~/.kube/config is not read unless named), or run in a "
                              "cluster (KUBERNETES_SERVICE_HOST is unset)");
        else
            rc = load_in_cluster(out, host, getenv("KUBERNETES_SERVICE_PORT"), err);
    }
    free(env_first);
    if (rc < 0)
        k8s_config_dispose(out);
    return rc;
}
