/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssh.c - the `ssh` plugin, pod side (docs/plugins.md §4.3, D4, D5).
 *
 * Adds the volume J-ssh (Secret J-ssh, four items under .ssh/, defaultMode 0600
 * when the key path is exactly "/root/.ssh", else 0644) and mounts it with
 * subPath ".ssh" at --ssh-key-file-path in every container, then every init
 * container. Both are upserts (D5): volume keyed by name, mount by mountPath; a
 * user's volume of that name or mount at that path is a conflict that denies
 * the pod, never re-pointed (their keys would be gone). So is a key path of
 * /etc/volcano when svc runs, since svc mounts there (docs/plugins.md §4.2).
 * The pod waits for the Secret, as in Volcano.
 *
 * Job hooks (docs/plugins.md §4.3, §5.2, D9, D11, D12): Secret J-ssh with data (base64)
 * id_rsa, id_rsa.pub, authorized_keys, config.
 *   add, update  absent → create it with the Job uid's pair from the key store
 *                (made once per uid, plugins/sshkeys.h) or the user's keys
 *                verbatim; present and ours → adopted as is (D11) except that
 *                `config` is brought up to date (PUT with only config changed),
 *                and its keys go into the store, so that a Secret someone
 *                deleted comes back with the same keys. Never regenerated.
 *                ssh-port <= 0 or > 65535 → 22.
 *   delete       our Secret (404 = done), then the uid leaves the store.
 *
 * Threads: no state; arguments are parsed per call (plugins/plugin.h). The key
 * store is shared and locks itself.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonobj.h"
#include "certs/sshkey.h"
#include "k8s/names.h"
#include "plugins/args.h"
#include "plugins/diagnose.h"
#include "plugins/job.h"
#include "plugins/objects.h"
#include "plugins/plugin.h"
#include "plugins/podedit.h"
#include "plugins/podutil.h"
#include "plugins/sshkeys.h"

#define SSH_DEFAULT_PATH "/root/.ssh"
#define SSH_MODE_ROOT    0600           /* JSON 384, only for the exact default path */
#define SSH_MODE_OTHER   0644           /* JSON 420, any other path string */
#define SSH_SVC_PATH     "/etc/volcano" /* the svc plugin's mountPath (docs/plugins.md §4.2) */

struct ssh_args {
    const char *key_path;    /* ssh-key-file-path */
    const char *private_key; /* ssh-private-key (reconcile side only) */
    const char *public_key;  /* ssh-public-key (reconcile side only) */
    int64_t port;            /* ssh-port (reconcile side only) */
};

/* Defaults, then the Job's arguments (plugin_args: a parse error is one warning, D4). */
static void ssh_args_parse(const struct plugin_ctx *c, struct ssh_args *a)
{
    const struct args_def defs[] = {
        {"ssh-key-file-path", ARGS_STRING, &a->key_path},
        {"ssh-private-key", ARGS_STRING, &a->private_key},
        {"ssh-public-key", ARGS_STRING, &a->public_key},
        {"ssh-port", ARGS_INT, &a->port},
    };

    a->key_path = SSH_DEFAULT_PATH;
    a->private_key = "";
    a->public_key = "";
    a->port = 22;
    plugin_args(c, defs, sizeof(defs) / sizeof(defs[0]));
}

/* {"key": key, "path": path}. */
static json_t *ssh_item(const char *key, const char *path)
{
    return podutil_object("key", json_string_nocheck(key), "path", json_string_nocheck(path));
}

/* The pod's volume of the Secret named secret (a JSON string, borrowed). Built member
 * by member (podutil_object): json_pack cost more than the objects. */
static json_t *ssh_volume(json_t *secret, const char *key_path)
{
    int mode = strcmp(key_path, SSH_DEFAULT_PATH) == 0 ? SSH_MODE_ROOT : SSH_MODE_OTHER;
    json_t *items = json_array();
    json_t *src;

    if (items == NULL || json_array_append_new(items, ssh_item("id_rsa", ".ssh/id_rsa")) < 0
        || json_array_append_new(items, ssh_item("id_rsa.pub", ".ssh/id_rsa.pub")) < 0
        || json_array_append_new(items, ssh_item("authorized_keys", ".ssh/authorized_keys")) < 0
        || json_array_append_new(items, ssh_item("config", ".ssh/config")) < 0) {
        json_decref(items);
        return NULL;
    }
    src = podutil_object("secretName", json_incref(secret), "items", items);
    if (src != NULL && json_object_set_new_nocheck(src, "defaultMode", json_integer(mode)) < 0) {
        json_decref(src);
        return NULL;
    }
    return podutil_object("name", json_incref(secret), "secret", src);
}

/* A container's mount of the volume named secret (a JSON string, borrowed). */
static json_t *ssh_mount(json_t *secret, const char *key_path)
{
    json_t *m = podutil_object("name", json_incref(secret), "mountPath", json_string(key_path));

    if (m != NULL && json_object_set_new_nocheck(m, "subPath", json_string_nocheck(".ssh")) < 0) {
        json_decref(m);
        return NULL;
    }
    return m;
}

/* The mount (shared by every container, as ssh_parts) in each container of list. */
static int ssh_mount_list(struct pod_edits *pod, enum pv_container_list list, const json_t *secret,
                          json_t *mount, struct wh_error *err)
{
    const char *list_name = podview_list_names[list];

    for (size_t i = 0; i < pod_edits_count(pod, list); i++) {
        int rc = pod_edits_upsert_mount(pod, (struct pe_ref){list, i}, json_incref(mount), err);

        if (rc == WH_ECONFLICT)
            return rc; /* D5: the user's mount, err says whose */
        if (rc < 0)
            return wh_error_set(err, rc, "cannot mount %s in spec.%s[%zu]: %s",
                                json_string_value(secret), list_name, i,
                                rc == WH_ENOMEM ? "out of memory" : "malformed container");
    }
    return 0;
}

/*
 * [secret name, volume, mount] of the Job's pods (the Job's alone: its name and
 * --ssh-key-file-path), made once per thread and Job version where the source keeps
 * them (plugin_memo_get): every pod and container shares them (never edited in place).
 * @return new reference, NULL on ENOMEM.
 */
static json_t *ssh_parts(const struct plugin_ctx *c, const struct ssh_args *a)
{
    char *name;
    json_t *secret;
    json_t *parts;

    parts = plugin_memo_get(c);
    if (parts != NULL)
        return parts;
    /* "<job>-ssh", shared by the volume and the mount (strings are never edited) */
    name = objects_name(c->job, "-ssh");
    secret = name != NULL ? json_string(name) : NULL;
    free(name);
    parts = secret != NULL ? json_array() : NULL;
    if (parts == NULL || json_array_append(parts, secret) < 0
        || json_array_append_new(parts, ssh_volume(secret, a->key_path)) < 0
        || json_array_append_new(parts, ssh_mount(secret, a->key_path)) < 0) {
        json_decref(parts);
        json_decref(secret);
        return NULL;
    }
    json_decref(secret);
    return plugin_memo_keep(c, parts);
}

static int ssh_on_pod_create(const struct plugin_ctx *c, struct pod_edits *pod,
                             struct wh_error *err)
{
    struct ssh_args a;
    json_t *parts;
    json_t *secret;
    int rc;

    ssh_args_parse(c, &a);
    /* svc mounts its host files there, and one path holds one mount: the keys would
     * be lost, or the user told of a clash with a volume that is not theirs. */
    if (strcmp(a.key_path, SSH_SVC_PATH) == 0 && diagnose_plugin_enabled(c->job, "svc"))
        return wh_error_set(err, WH_ECONFLICT,
                            "--ssh-key-file-path=" SSH_SVC_PATH " is where the svc plugin mounts "
                            "its host files, so the ssh keys cannot be mounted there: choose "
                            "another path in spec.plugins.ssh");
    parts = ssh_parts(c, &a);
    if (parts == NULL)
        return wh_error_set(err, WH_ENOMEM, "cannot add volume %s-ssh: out of memory",
                            job_name(c->job));
    secret = json_array_get(parts, 0);
    rc = pod_edits_upsert_volume(pod, json_incref(json_array_get(parts, 1)), err);
    if (rc == WH_ECONFLICT)
        goto out; /* D5: the user's volume, err says whose */
    if (rc < 0) {
        rc = wh_error_set(err, rc, "cannot add volume %s: %s", json_string_value(secret),
                          rc == WH_ENOMEM ? "out of memory" : "malformed pod spec");
        goto out;
    }
    rc = ssh_mount_list(pod, PV_CONTAINERS, secret, json_array_get(parts, 2), err);
    if (rc >= 0)
        rc = ssh_mount_list(pod, PV_INIT_CONTAINERS, secret, json_array_get(parts, 2), err);
out:
    json_decref(parts);
    return rc;
}

/* ---- job hooks (reconcile side) ---- */

#define SSH_DEFAULT_PORT 22

/* ssh-port validation at the start of OnJobAdd (docs/plugins.md §4.3): out of range → 22. */
static int64_t ssh_port(const struct ssh_args *a)
{
    return a->port <= 0 || a->port > 65535 ? SSH_DEFAULT_PORT : a->port;
}

/*
 * The `config` entry (docs/plugins.md §4.3): two fixed lines, then per task (array order)
 * and replica one Host block; one block only for a task whose template sets a
 * hostname. @return malloc'd text, NULL on ENOMEM.
 */
static char *ssh_config_text(const json_t *job, int64_t port)
{
    const char *J = job_name(job);
    const json_t *task;
    char *buf = NULL;
    size_t len = 0;
    size_t k;
    FILE *f = open_memstream(&buf, &len);

    if (f == NULL)
        return NULL;
    fputs("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n", f);
    json_array_each(job_tasks(job), k, task) {
        const char *hostname = job_task_hostname(task);
        const char *domain = job_task_subdomain(task);
        int64_t replicas = job_task_replicas(task);

        if (domain[0] == '\0')
            domain = J;
        for (int64_t i = 0; i < replicas; i++) {
            if (hostname[0] != '\0') {
                fprintf(f, "Host %s\n  HostName %s.%s\n  Port %lld\n", hostname, hostname, domain,
                        (long long)port);
                break;
            }
            fprintf(f, "Host %s-%s-%lld\n  HostName %s-%s-%lld.%s\n  Port %lld\n", J,
                    job_task_name(task), (long long)i, J, job_task_name(task), (long long)i, domain,
                    (long long)port);
        }
    }
    if (ferror(f) != 0) {
        fclose(f);
        free(buf);
        return NULL;
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* base64 of text (OpenSSL, no line breaks): new JSON string, NULL on ENOMEM. */
static json_t *b64_string(const char *text)
{
    size_t n = strlen(text);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    json_t *s;

    if (out == NULL)
        return NULL;
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)text, (int)n);
    s = json_string(out);
    OPENSSL_cleanse(out, strlen(out)); /* may be a private key */
    free(out);
    return s;
}

/*
 * Decode a base64 Secret value (as the API server stores it).
 * @return malloc'd NUL-terminated text; NULL when v is no string, is not
 *         base64, holds a NUL byte, or on ENOMEM.
 */
static char *b64_decode(const json_t *v)
{
    const char *in = json_string_value(v);
    EVP_ENCODE_CTX *ctx;
    unsigned char *out;
    int n = 0;
    int tail = 0;
    size_t len;

    if (in == NULL || (len = strlen(in)) > (size_t)INT32_MAX / 2)
        return NULL;
    out = malloc(len / 4 * 3 + 4);
    ctx = EVP_ENCODE_CTX_new();
    if (out == NULL || ctx == NULL)
        goto fail;
    EVP_DecodeInit(ctx);
    if (EVP_DecodeUpdate(ctx, out, &n, (const unsigned char *)in, (int)len) < 0
        || EVP_DecodeFinal(ctx, out + n, &tail) != 1)
        goto fail;
    n += tail;
    out[n] = '\0';
    if (memchr(out, '\0', (size_t)n) != NULL)
        goto fail;
    EVP_ENCODE_CTX_free(ctx);
    return (char *)out;
fail:
    EVP_ENCODE_CTX_free(ctx);
    if (out != NULL)
        OPENSSL_cleanse(out, len / 4 * 3 + 4);
    free(out);
    return NULL;
}

static void free_secret_text(char *s)
{
    if (s != NULL) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

/* What the Secret build/update functions need. */
struct ssh_secret_job {
    const struct plugin_ctx *c;
    const struct ssh_args *a;
    const char *name;   /* J-ssh */
    const char *config; /* the config text */
};

/* objects_build_fn: the Secret with the uid's pair (made now if new) or the user's keys. */
static int ssh_secret_build(void *ud, json_t **out, struct wh_error *err)
{
    const struct ssh_secret_job *sj = ud;
    const struct plugin_ctx *c = sj->c;
    struct sshkeys_store *store = c->env != NULL ? c->env->ssh_keys : NULL;
    char *priv = NULL;
    char *pub = NULL;
    json_t *obj = NULL;
    json_t *data = NULL;
    int rc = 0;

    *out = NULL;
    if (sj->a->private_key[0] != '\0') {
        /* user-provided (docs/plugins.md §4.3): verbatim, public key "" when not given */
        priv = strdup(sj->a->private_key);
        pub = strdup(sj->a->public_key);
        if (priv == NULL || pub == NULL)
            rc = wh_error_set(err, WH_ENOMEM, "out of memory");
    } else if (store != NULL) {
        rc = sshkeys_get_or_generate(store, job_uid(c->job), &priv, &pub, err);
    } else {
        rc = sshkey_generate(&priv, &pub, err);
    }
    if (rc < 0)
        goto out;
    data = json_object();
    if (data == NULL || json_object_set_new(data, "id_rsa", b64_string(priv)) < 0
        || json_object_set_new(data, "id_rsa.pub", b64_string(pub)) < 0
        || json_object_set_new(data, "authorized_keys", b64_string(pub)) < 0
        || json_object_set_new(data, "config", b64_string(sj->config)) < 0) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    /* no type: the API makes it Opaque */
    obj = objects_for_job_with(&objects_kind_secret, c->job, sj->name, "data", data);
    data = NULL; /* now owned by obj (even on failure) */
    if (obj == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    *out = obj;
    obj = NULL; /* now owned by the caller */
    rc = 0;
out:
    json_decref(obj);
    json_decref(data);
    free_secret_text(priv);
    free(pub);
    return rc;
}

/* objects_update_fn: adopt as is (D11), only `config` brought up to date. */
static int ssh_secret_update(json_t *obj, void *ud, struct wh_error *err)
{
    const struct ssh_secret_job *sj = ud;
    json_t *data = json_member(obj, "data");
    const json_t *pub = json_member(data, "id_rsa.pub");
    char *have = b64_decode(json_member(data, "config"));
    bool same = have != NULL && strcmp(have, sj->config) == 0;
    /* D18: an older Volcano's Secret without authorized_keys gets it from its own public key
     * (Volcano writes the two with the same bytes); the pair itself is never replaced (D11). */
    bool add_authorized = json_is_string(pub) && json_string_length(pub) > 0
        && !json_is_string(json_member(data, "authorized_keys"));

    free(have);
    if (same && !add_authorized)
        return 0;
    if (!json_is_object(data)) {
        data = json_object();
        if (json_object_set_new(obj, "data", data) < 0)
            return wh_error_set(err, WH_ENOMEM, "out of memory");
    }
    if (!same && json_object_set_new(data, "config", b64_string(sj->config)) < 0)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    if (add_authorized
        && json_object_set_new(data, "authorized_keys", json_copy((json_t *)pub)) < 0)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    return 1;
}

/* D11: remember the keys of our Secret as stored, so a re-creation reuses them. */
static int ssh_adopt_keys(const struct plugin_ctx *c, const json_t *secret)
{
    struct sshkeys_store *store = c->env != NULL ? c->env->ssh_keys : NULL;
    const json_t *data = json_member(secret, "data");
    char *priv;
    char *pub;
    int rc = 0;

    if (store == NULL)
        return 0;
    priv = b64_decode(json_member(data, "id_rsa"));
    pub = b64_decode(json_member(data, "id_rsa.pub"));
    /* a Secret without usable keys is adopted as is, but gives the store nothing */
    if (priv != NULL && pub != NULL && priv[0] != '\0' && pub[0] != '\0')
        rc = sshkeys_put(store, job_uid(c->job), priv, pub);
    free_secret_text(priv);
    free(pub);
    return rc;
}

/* OnJobAdd and OnJobUpdate (D10, D11: the same, and never a new key). */
static int ssh_job_sync(const struct plugin_ctx *c, struct wh_error *err)
{
    struct ssh_args a;
    struct objects_owner_ctx o;
    struct ssh_secret_job sj = {c, &a, NULL, NULL};
    char *name = NULL;
    char *config = NULL;
    json_t *stored = NULL;
    int rc;

    ssh_args_parse(c, &a);
    rc = objects_owner_init(&o, c, err);
    if (rc < 0)
        return rc;
    name = objects_name(c->job, "-ssh");
    config = ssh_config_text(c->job, ssh_port(&a));
    if (name == NULL || config == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    sj.name = name;
    sj.config = config;
    {
        const struct objects_ensure_spec s = {.kind = &objects_kind_secret,
                                              .name = name,
                                              .build = ssh_secret_build,
                                              .update = ssh_secret_update,
                                              .ud = &sj};

        rc = objects_ensure(&o, &s, &stored, err);
    }
    if (rc < 0) {
        /* Volcano's wording (docs/plugins.md §4.3), with the cause */
        char cause[WH_ERROR_MSG_MAX];

        snprintf(cause, sizeof(cause), "%s", err != NULL ? err->msg : "");
        rc = wh_error_set(err, rc, "create secret for job %s/%s with ssh plugin failed for %s",
                          job_namespace(c->job), job_name(c->job), cause);
        goto out;
    }
    if (rc == 0 && a.private_key[0] == '\0' && ssh_adopt_keys(c, stored) < 0) {
        rc = wh_error_set(err, WH_ENOMEM, "out of memory");
        goto out;
    }
    rc = 0; /* a foreign Secret (WH_DECLINED) is no failure of the hook (D12) */
out:
    json_decref(stored);
    free(name);
    free(config);
    return rc;
}

/* OnJobDelete: our Secret, then the uid's pair leaves the store. */
static int ssh_job_delete(const struct plugin_ctx *c, struct wh_error *err)
{
    struct objects_owner_ctx o;
    char *name;
    int rc;

    rc = objects_owner_init(&o, c, err);
    if (rc < 0)
        return rc;
    name = objects_name(c->job, "-ssh");
    if (name == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    rc = objects_delete(&o, &objects_kind_secret, name, err);
    free(name);
    if (rc < 0)
        return rc; /* retried; the pair stays until the Secret is gone */
    if (c->env != NULL && c->env->ssh_keys != NULL)
        sshkeys_drop(c->env->ssh_keys, job_uid(c->job));
    return 0;
}

/* ---- Job-level diagnostics (plugins/diagnose.h) ---- */

/* Generated keys: a 2048-bit PKCS#1 PEM (about 1.7 KB) and twice the public key. */
#define SSH_KEYS_BYTES 2600u

/*
 * Bytes of Secret J-ssh's data (a Secret holds at most 1 MiB): the keys and the
 * config of ssh_config_text, one 3-line Host block per entry of every task,
 * computed without building it.
 */
static unsigned long long ssh_secret_bytes(const json_t *job, const struct ssh_args *a)
{
    size_t plen = diagnose_digits((long long)ssh_port(a));
    unsigned long long bytes = strlen("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n");
    size_t k;
    const json_t *task;

    if (a->private_key[0] != '\0')
        bytes += strlen(a->private_key) + 2 * strlen(a->public_key);
    else
        bytes += SSH_KEYS_BYTES;
    json_array_each(job_tasks(job), k, task) {
        const char *subdomain = job_task_subdomain(task);
        size_t d = strlen(subdomain[0] != '\0' ? subdomain : job_name(job));
        unsigned long long n = 0;
        /* sum of "host.domain" plus separators = H + n(1 + d) + n - 1 */
        unsigned long long list = diagnose_hosts_bytes(job, task, true, 0, &n);
        unsigned long long hosts = n > 0 ? list - n * (1 + d) - (n - 1) : 0;

        /* "Host h\n  HostName h.d\n  Port p\n" = 27 + 2h + d + p */
        bytes += n * (27 + d + plen) + 2 * hosts;
    }
    return bytes;
}

static int ssh_diagnose(const struct plugin_ctx *c, struct diagnostics *out)
{
    struct ssh_args a;
    const char *J = job_name(c->job);
    char vol[320];
    const char *why;
    unsigned long long bytes;
    size_t k;
    const json_t *task;

    ssh_args_parse(c, &a);
    if (a.port <= 0 || a.port > 65535)
        diagnose_add(out, DIAGNOSE_PLUGIN_ARGUMENT_INVALID, false, "ssh",
                     "--ssh-port=%lld is not a port (1-65535), so the ssh config says Port 22: "
                     "fix spec.plugins.ssh",
                     (long long)a.port);
    if (a.key_path[0] == '\0')
        diagnose_add(out, DIAGNOSE_PLUGIN_ARGUMENT_INVALID, true, "ssh",
                     "--ssh-key-file-path is empty, and the API server refuses a volume mount "
                     "without a path: fix spec.plugins.ssh");
    else if (strcmp(a.key_path, SSH_SVC_PATH) == 0 && diagnose_plugin_enabled(c->job, "svc"))
        diagnose_add(out, DIAGNOSE_CONFLICT, true, "ssh",
                     "--ssh-key-file-path=" SSH_SVC_PATH " is where the svc plugin mounts its host "
                     "files, so the keys would not be mounted: choose another path in "
                     "spec.plugins.ssh");
    snprintf(vol, sizeof(vol), "%s-ssh", J);
    why = k8s_name_label_error(vol);
    if (why != NULL && strlen(vol) > K8S_LABEL_MAX && strchr(J, '.') == NULL)
        diagnose_add(out, DIAGNOSE_NAME_INVALID, true, "ssh",
                     "volume name \"%s\" has %zu characters, more than the 63 of a DNS-1123 "
                     "label: shorten the job name to at most 59 characters",
                     vol, strlen(vol));
    else if (why != NULL)
        diagnose_add(out, DIAGNOSE_NAME_INVALID, true, "ssh",
                     "volume name \"%s\" cannot be a volume name (%s): rename the job", vol, why);

    bytes = ssh_secret_bytes(c->job, &a);
    if (bytes > DIAGNOSE_OBJECT_MAX)
        diagnose_add(out, DIAGNOSE_VALUE_TOO_LARGE, true, "ssh",
                     "Secret %s would hold about %llu bytes (its ssh config has a Host block per "
                     "pod), more than the 1048576 (1 MiB) a Secret can hold, so it cannot be "
                     "created and no pod starts: run fewer replicas (spec.tasks[].replicas)",
                     vol, bytes);
    else if (bytes * 100 >= (unsigned long long)DIAGNOSE_OBJECT_MAX * DIAGNOSE_NEAR_PERCENT)
        diagnose_add(out, DIAGNOSE_VALUE_NEAR_LIMIT, false, "ssh",
                     "Secret %s holds about %llu bytes (its ssh config has a Host block per pod), "
                     "%llu%% of the 1048576 (1 MiB) a Secret can hold: with more replicas it "
                     "cannot be created",
                     vol, bytes, bytes * 100 / DIAGNOSE_OBJECT_MAX);
    if (a.key_path[0] == '\0')
        return 0;
    json_array_each(job_tasks(c->job), k, task)
        diagnose_template_conflicts(out, "ssh", task, k, vol, "secret", "secretName", a.key_path,
                                    "its ssh keys");
    return 0;
}

const struct plugin plugin_ssh = {
    .name = "ssh",
    .on_pod_create = ssh_on_pod_create,
    .on_job_add = ssh_job_sync,
    .on_job_update = ssh_job_sync, /* same as add: repair, never regenerate (D11) */
    .on_job_delete = ssh_job_delete,
    .diagnose = ssh_diagnose,
};
