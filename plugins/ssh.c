/*
 * ssh.c - the `ssh` plugin, pod side (spec §4.3, D4, D5).
 *
 * Adds the volume J-ssh (Secret J-ssh, four items under .ssh/, defaultMode 0600
 * when the key path is exactly "/root/.ssh", else 0644) and mounts it with
 * subPath ".ssh" at --ssh-key-file-path in every container, then every init
 * container. Both are upserts (D5): volume keyed by name, mount by mountPath.
 * The Secret itself is made by the reconcile side (spec D11, issue 3); the pod
 * waits for it, as in Volcano.
 *
 * Threads: no state; arguments are parsed per call (plugins/plugin.h).
 */
#include <stdint.h>
#include <string.h>

#include "plugins/args.h"
#include "plugins/jobutil.h"
#include "plugins/plugin.h"
#include "plugins/podutil.h"

#define SSH_DEFAULT_PATH "/root/.ssh"
#define SSH_MODE_ROOT    0600 /* JSON 384, only for the exact default path */
#define SSH_MODE_OTHER   0644 /* JSON 420, any other path string */

struct ssh_args {
    const char *key_path;    /* ssh-key-file-path */
    const char *private_key; /* ssh-private-key (reconcile side only) */
    const char *public_key;  /* ssh-public-key (reconcile side only) */
    int64_t port;            /* ssh-port (reconcile side only) */
};

/* Defaults, then the Job's arguments; a parse error is one warning (spec D4). */
static void ssh_args_parse(const struct plugin_ctx *c, struct ssh_args *a)
{
    char msg[200];
    const struct arg_def defs[] = {
        {"ssh-key-file-path", ARG_STRING, &a->key_path},
        {"ssh-private-key", ARG_STRING, &a->private_key},
        {"ssh-public-key", ARG_STRING, &a->public_key},
        {"ssh-port", ARG_INT, &a->port},
    };

    a->key_path = SSH_DEFAULT_PATH;
    a->private_key = "";
    a->public_key = "";
    a->port = 22;
    if (args_parse(defs, sizeof(defs) / sizeof(defs[0]), c->args, msg, sizeof(msg)) < 0)
        warnings_add(c->warnings, "ssh plugin: %s, later arguments ignored", msg);
}

static json_t *ssh_volume(const char *job, const char *key_path)
{
    int mode = strcmp(key_path, SSH_DEFAULT_PATH) == 0 ? SSH_MODE_ROOT : SSH_MODE_OTHER;

    return json_pack("{s:s+, s:{s:s+, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}, {s:s, s:s}], s:i}}",
                     "name", job, "-ssh",
                     "secret",
                     "secretName", job, "-ssh",
                     "items",
                     "key", "id_rsa", "path", ".ssh/id_rsa",
                     "key", "id_rsa.pub", "path", ".ssh/id_rsa.pub",
                     "key", "authorized_keys", "path", ".ssh/authorized_keys",
                     "key", "config", "path", ".ssh/config",
                     "defaultMode", mode);
}

static json_t *ssh_mount(const char *job, const char *key_path)
{
    return json_pack("{s:s+, s:s, s:s}", "name", job, "-ssh", "mountPath", key_path, "subPath",
                     ".ssh");
}

static int ssh_mount_list(json_t *list, const char *list_name, const char *job,
                          const char *key_path, struct wh_error *err)
{
    size_t i;
    json_t *ctr;

    json_array_foreach(list, i, ctr) {
        int rc = podutil_upsert_mount(ctr, ssh_mount(job, key_path));

        if (rc < 0)
            return wh_error_set(err, rc, "cannot mount %s-ssh in spec.%s[%zu]: %s",
                                job, list_name, i,
                                rc == WH_ENOMEM ? "out of memory" : "malformed container");
    }
    return 0;
}

static int ssh_on_pod_create(const struct plugin_ctx *c, json_t *pod, struct wh_error *err)
{
    struct ssh_args a;
    const char *job = job_name(c->job);
    int rc;

    ssh_args_parse(c, &a);
    rc = podutil_upsert_volume(pod, ssh_volume(job, a.key_path));
    if (rc < 0)
        return wh_error_set(err, rc, "cannot add volume %s-ssh: %s", job,
                            rc == WH_ENOMEM ? "out of memory" : "malformed pod spec");
    rc = ssh_mount_list(podutil_containers(pod), "containers", job, a.key_path, err);
    if (rc < 0)
        return rc;
    return ssh_mount_list(podutil_init_containers(pod), "initContainers", job, a.key_path, err);
}

const struct plugin plugin_ssh = {
    .name = "ssh",
    .on_pod_create = ssh_on_pod_create,
    .on_job_add = NULL,    /* wired by the reconcile thread (issue 3) */
    .on_job_update = NULL, /* wired by the reconcile thread (issue 3) */
    .on_job_delete = NULL, /* wired by the reconcile thread (issue 3) */
};
