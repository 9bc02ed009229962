/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin.h - the contract between the framework and a Volcano job plugin.
 *
 * The only header a plugin author needs (with args.h, podutil.h, job.h).
 * A plugin is a const table of hooks, one exported symbol `plugin_<name>`.
 * Plugins keep no state: arguments are parsed on every call (docs/plugins.md §3.1, §3.4)
 * into a stack struct, so every hook is reentrant and callable from any thread.
 *
 * Chain semantics (webhook/mutate.c, plugins/registry.c):
 *   on_pod_create  run in registry order (D2), each sees the edits of the
 *                  ones before; first error stops the chain and denies the pod
 *                  (D7). The chain is run again while a pass added a
 *                  container (D13), so every hook must be an upsert (D5).
 *   on_job_add     the Job is first seen in a non-terminal phase (D10): ensure the
 *                  plugin's objects exist (GET before CREATE, 409 = exists, D9).
 *   on_job_update  every MODIFIED event and resync: recompute and repair (D10).
 *   on_job_delete  the Job is deleted, terminal, or the plugin was removed:
 *                  delete the objects (404 = done). Never writes the Job (D9).
 *   All three are idempotent, leave objects owned by someone else alone (D12),
 *   and run on reconcile worker threads with ctx->kc and ctx->env set.
 *   diagnose       not a hook of Volcano's: what the plugin cannot do, or does
 *                  unexpectedly, because of the Job alone (D15-D17), for the Job
 *                  webhook, Events and `render` (plugins/diagnose.h).
 * A NULL hook is a no-op. A hook's error message never names its plugin: both
 * runners (webhook/mutate.c, controller/reconcile.c) prefix it with
 * plugin_error_name, so every log line, AdmissionResponse and reconcile error
 * says which plugin failed.
 */
#ifndef WH_PLUGIN_H
#define WH_PLUGIN_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"
#include "plugins/warnings.h"

struct args_def;
struct jsonw_texts;
struct k8s_client;
struct pod_edits;
struct sshkeys_store;

/* What the job hooks get from the reconciler (borrowed, shared by workers). */
struct plugin_job_env {
    long timeout_ms;                /* limit of each API request */
    struct sshkeys_store *ssh_keys; /* D11: key pairs by Job uid (plugins/sshkeys.h) */
    unsigned long *foreign;         /* D12: incremented (atomically) per foreign object */
};

/* hcclrank's annotation of the pod's rank. Besides it, plugins read no pod label or
 * annotation of their own: the review's pod is read with only these and the
 * framework's task keys (webhook/mutate.c, mutate_pod_read). */
#define PLUGIN_HCCL_RANK_KEY "hccl/rankIndex"

/* What the framework knows about the pod under admission (docs/plugins.md §3.6, D6, D14). */
struct plugin_pod_info {
    const char *name;  /* metadata.name; "" for a generateName-only pod */
    const char *ns;    /* namespace (request.namespace when the pod lacks one) */
    const char *task;  /* task key: annotation volcano.sh/task-spec, else "default" */
    const char *index; /* replica index string (§2.1, D6); "" when unknown */
};

/* Every member is borrowed for the duration of one hook call. */
struct plugin_ctx {
    const char *name;                  /* the plugin's own name, for messages */
    const json_t *job;                 /* the Job object; read-only */
    const json_t *args;                /* job.spec.plugins[name]: array, or NULL */
    const struct plugin_pod_info *pod; /* on_pod_create only; NULL for job hooks */
    struct warnings *warnings;         /* response warnings; may be NULL */
    struct k8s_client *kc;             /* job hooks only; NULL on the admission path */
    const struct plugin_job_env *env;  /* job hooks only; NULL on the admission path */
    /* on_pod_create: where this thread keeps what the plugin derives from this Job
     * version alone, for its later pods (plugins/jobsource.h job_memo: NULL until the
     * plugin stores a new reference, which must never be edited, as the Job is not);
     * NULL when the source keeps none (derive per pod). Use it through
     * plugin_memo_get and plugin_memo_keep. */
    json_t **job_memo;
    /* on_pod_create: where plugin_memo_get and plugin_memo_keep put the texts of the
     * parts they hand out, for the patch writer (base/jsonw.h); may be NULL. */
    struct jsonw_texts *texts;
};

struct diagnostics; /* plugins/diagnose.h */

struct plugin {
    const char *name; /* key in job.spec.plugins */
    /**
     * OnPodCreate: upsert this plugin's additions into pod: the request's pod as its
     * view shows it with the edits of the plugins before, recorded through
     * plugins/podedit.h (podutil.h's upserts, the same D5 rules); pod->view is the pod
     * as admitted. @return 0, or < 0 with err filled (docs/plugins.md §3.8).
     * Job hooks: @return 0, or < 0 with err filled (retried with backoff).
     * No message names the plugin: the framework prefixes "<name> plugin: ".
     */
    int (*on_pod_create)(const struct plugin_ctx *c, struct pod_edits *pod, struct wh_error *err);
    int (*on_job_add)(const struct plugin_ctx *c, struct wh_error *err);
    int (*on_job_update)(const struct plugin_ctx *c, struct wh_error *err);
    int (*on_job_delete)(const struct plugin_ctx *c, struct wh_error *err);
    /**
     * The Job-level diagnostics of this plugin (D15-D17, plugins/diagnose.h):
     * what it cannot do, or does that the author may not expect, because of the
     * Job alone (c->job, c->args; c->pod, c->kc and c->env are NULL). Parses its
     * arguments as its hooks do; their parse warnings in c->warnings become
     * PluginArgumentInvalid in diagnose_job. Adds to out (diagnose_add).
     * @return 0, or WH_ENOMEM (what was added stays).
     */
    int (*diagnose)(const struct plugin_ctx *c, struct diagnostics *out);
};

extern const struct plugin plugin_ssh;
extern const struct plugin plugin_env;
extern const struct plugin plugin_svc;
extern const struct plugin plugin_tensorflow;
extern const struct plugin plugin_mpi;
extern const struct plugin plugin_pytorch;
extern const struct plugin plugin_hcclrank;
extern const struct plugin plugin_ray;

/**
 * Parse c->args (job.spec.plugins[c->name]) against defs, whose storage holds
 * the defaults (docs/plugins.md §3.4, the rules of args_parse in plugins/args.h). A parse
 * error is no error of the hook: values set before it stay set, the rest keep
 * their defaults, and c->warnings (may be NULL) gets the one warning
 * "<name> plugin: <Go's message>, later arguments ignored" (D4), keyed
 * "spec.plugins.<name>" (warnings_add_keyed): diagnose_job's PluginArgumentInvalid
 * of it carries that key, so pod admission does not tell it twice.
 * Every plugin but env calls it at the start of each hook (plugins keep no state).
 * @param c     borrowed; only name, args and warnings are read
 * @param defs  borrowed table of ndefs flags (plugins/args.h)
 */
void plugin_args(const struct plugin_ctx *c, const struct args_def *defs, size_t ndefs);

/**
 * Name the plugin in a hook's error, the one place the framework does it (C-STYLE
 * §5: context added once, at the boundary): err->msg becomes "<name> plugin: <msg>",
 * or "<name> plugin: <wh_error_str(rc)>" when the hook left no message; cut to
 * WH_ERROR_MSG_MAX - 1 bytes. err->code = rc. Called by the chain runner
 * (webhook/mutate.c, D7) and the job-hook runner (controller/reconcile.c).
 * @param err   may be NULL (then nothing is written)
 * @param name  the plugin's name (struct plugin.name)
 * @return rc
 */
int plugin_error_name(struct wh_error *err, const char *name, int rc);

/**
 * The plugin's Job-constant parts kept in its slot (c->job_memo) by plugin_memo_keep
 * for this thread and Job version: what it derives from the Job alone and places by
 * reference in every pod (docs/plugins.md §3.1: the same for every pod of a version).
 * The compact text of each item goes to c->texts (may be NULL), so the patch writer
 * copies it (patch_diff_write) in place of walking the item again.
 * @param c  borrowed; job_memo and texts are read
 * @return new reference to the parts (an array, never to be edited), or NULL when
 *         there are none yet, or no slot: the plugin then makes them and calls
 *         plugin_memo_keep. The texts stay valid while the slot does (plugins/jobsource.h
 *         job_memo: until this thread's next read of a Job), past the patch.
 */
json_t *plugin_memo_get(const struct plugin_ctx *c);

/**
 * Keep parts (an array, new reference taken; its items are shared by every pod and
 * must never be edited) in c's slot, beside the compact text of each item (base/jsonw.h
 * jsonw_value; of an array item, the texts of its items: a list placed entry by
 * entry), and register those texts in c->texts as plugin_memo_get does. No slot
 * (c->job_memo NULL), a slot filled already, or no memory for the texts: nothing is
 * kept (the parts are the caller's alone).
 * @return parts, the caller's reference (NULL when parts is NULL).
 */
json_t *plugin_memo_keep(const struct plugin_ctx *c, json_t *parts);

/**
 * plugin_memo_keep without texts: for parts no patch op carries as they are (tensorflow's
 * head of TF_CONFIG, which each pod's value only begins with), so none is made, kept or
 * registered. Same ownership, conditions and result as plugin_memo_keep.
 */
json_t *plugin_memo_keep_parts(const struct plugin_ctx *c, json_t *parts);

/** The registry in execution order (D2): ssh, env, svc, tensorflow, mpi, pytorch, hcclrank, ray. */
extern const struct plugin *const plugin_registry[];
extern const size_t plugin_registry_len;

/** @return the plugin called name, or NULL when there is none (docs/plugins.md §3.1). */
const struct plugin *plugin_find(const char *name);

/**
 * Effective plugin set of a Job (docs/plugins.md §3.7, D1): the names in job.spec.plugins
 * plus svc when any of tensorflow/mpi/pytorch/ray is enabled and ssh when mpi is.
 * @param[out] enabled  enabled[k] is true when plugin_registry[k] is in the set
 *                      (array of plugin_registry_len entries)
 * @param[out] args     args[k] = borrowed job.spec.plugins[name] (NULL when
 *                      implied, null, or not an array)
 * Unknown names are reported in w (D3: "unknown plugin NAME ignored").
 */
void plugin_effective_set(const json_t *job, bool *enabled, const json_t **args,
                          struct warnings *w);

#endif
