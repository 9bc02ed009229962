/* SPDX-License-Identifier: Apache-2.0 */
/*
 * diagnose.h - what is wrong with a Volcano Job, told to the person who wrote it
 * (D15-D17): one diagnostic per mistake, each with a stable reason, the
 * plugin it concerns and a message naming the Job field to change.
 *
 * The Job webhook (`warnings`), the Events on the Job and `render` all print
 * these, so each plugin computes its own in one function, struct plugin's
 * `diagnose` (plugins/plugin.h); diagnose_job adds the framework's (spec.plugins,
 * tasks) and calls every plugin of the effective set (D1) in registry order.
 *
 * Only what can be known from the Job alone: a pod can still bring its own
 * problems, which pod admission checks (webhook/mutate.c, D15).
 * A struct diagnostics is caller-owned (no heap), used by one thread at a time.
 */
#ifndef WH_DIAGNOSE_H
#define WH_DIAGNOSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define DIAGNOSE_MAX     32  /* entries kept; later ones are counted in `dropped` */
#define DIAGNOSE_MSG_MAX 384 /* bytes of one message, NUL included; longer is cut */
#define DIAGNOSE_KEY_MAX 128 /* bytes of one key, NUL included (WARNINGS_KEY_MAX) */

/* Limits the messages refer to. */
#define DIAGNOSE_ENV_MAX      131072u  /* MAX_ARG_STRLEN: one "NAME=value\0" string, bytes */
#define DIAGNOSE_OBJECT_MAX   1048576u /* data of one ConfigMap or Secret, bytes */
#define DIAGNOSE_NEAR_PERCENT 80       /* "near the limit" from this share of it */

/*
 * What kube-apiserver passes on of an AdmissionResponse's `warnings` (k8s.io/apiserver
 * pkg/endpoints/filters/warning.go; "Dynamic Admission Control", Response): once all
 * the warnings of a request exceed 4096 characters each is cut to 256, and those
 * past 4096 are dropped. An answer within both loses nothing.
 */
#define DIAGNOSE_WARNING_CHARS  256  /* characters (code points) of one warning */
#define DIAGNOSE_WARNINGS_CHARS 4096 /* characters of all the warnings of one answer */

/* Stable, machine-readable reasons (Kubernetes' CamelCase, as an Event's reason). */
enum diagnose_reason {
    DIAGNOSE_PLUGIN_ARGUMENT_INVALID, /* PluginArgumentInvalid: a flag, or spec.plugins itself */
    DIAGNOSE_PLUGIN_UNKNOWN,          /* PluginUnknown: a name that is none of the eight */
    DIAGNOSE_TASK_DUPLICATE,          /* TaskDuplicate: two tasks of one name */
    DIAGNOSE_TASK_NOT_FOUND,          /* TaskNotFound: a task named by a plugin is missing */
    DIAGNOSE_CONTAINER_NOT_FOUND,     /* ContainerNotFound: likewise a container */
    DIAGNOSE_NAME_INVALID,            /* NameInvalid: a name the API server refuses */
    DIAGNOSE_VALUE_TOO_LARGE,         /* ValueTooLarge: over a size limit */
    DIAGNOSE_VALUE_NEAR_LIMIT,        /* ValueNearLimit: past DIAGNOSE_NEAR_PERCENT of one */
    DIAGNOSE_RANK_NOT_UNIQUE,         /* RankNotUnique: several pods get the same rank */
    DIAGNOSE_USER_VALUE_REPLACED,     /* UserValueReplaced: the template's value is overwritten */
    DIAGNOSE_CONFLICT,                /* Conflict: the template holds what the plugin adds */
};

struct diagnostic {
    enum diagnose_reason reason;
    bool fatal;                     /* no pod of the Job can be admitted or started as it is
                                     * (D15 class): what --job-validation=deny refuses */
    char plugin[16];                /* the plugin concerned, "" for the framework */
    char message[DIAGNOSE_MSG_MAX]; /* "<plugin> plugin: ..." or "spec...: ...", valid UTF-8 */
    char key[DIAGNOSE_KEY_MAX];     /* the finding, when the pod chain's warning of it
                                     * records the same key (warnings_add_keyed); "" none */
};

struct diagnostics {
    size_t n;       /* entries in use */
    size_t dropped; /* entries not kept because the list was full */
    struct diagnostic items[DIAGNOSE_MAX];
};

/** Empty the list. Safe on an uninitialised struct and to repeat. */
void diagnose_init(struct diagnostics *d);

/**
 * Append one diagnostic: message = "<plugin> plugin: " + the printf-formatted text
 * when plugin is non-NULL, else the text alone; cut to DIAGNOSE_MSG_MAX - 1 bytes,
 * made valid UTF-8 and its C0, DEL and C1 controls replaced by '?' (sanitize_controls). An identical message is not added twice; a full list
 * counts it in d->dropped. d may be NULL (nothing happens). Never fails.
 */
void diagnose_add(struct diagnostics *d, enum diagnose_reason reason, bool fatal,
                  const char *plugin, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/**
 * diagnose_add with the entry's key (struct diagnostic): the key under which the
 * plugin's pod hook records its own warning of the same finding, so pod admission
 * tells it once (webhook/mutate.c, D16). key borrowed; NULL or "" is none; cut to
 * DIAGNOSE_KEY_MAX - 1 bytes. Never fails.
 */
void diagnose_add_keyed(struct diagnostics *d, const char *key, enum diagnose_reason reason,
                        bool fatal, const char *plugin, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/** @return the reason's stable name ("PluginArgumentInvalid", ...); never NULL. */
const char *diagnose_reason_name(enum diagnose_reason reason);

/** @return how many entries of d are fatal. */
size_t diagnose_fatal_count(const struct diagnostics *d);

/**
 * The messages as a JSON array of strings (AdmissionResponse `warnings`), in
 * order; all of them, or only the fatal ones. Bounded as kube-apiserver passes
 * warnings on: each cut to DIAGNOSE_WARNING_CHARS characters, and no more than
 * DIAGNOSE_WARNINGS_CHARS in all; when entries were dropped (here or in d), a
 * last string says how many and where to read them all (the Job's Events).
 * @return new reference; NULL on ENOMEM.
 */
json_t *diagnose_messages(const struct diagnostics *d, bool fatal_only);

/**
 * d as one compact block of bytes, for a store that keeps the diagnostics of a Job
 * version (the Jobs cache) and hands them to many readers: diagnose_unpack gives
 * d back, entry for entry.
 * @param[out] buf_out  new buffer (free()), NULL when d is empty (no entry, none dropped)
 * @param[out] len_out  its length in bytes (0 when NULL)
 * @return 0, or WH_ENOMEM (*buf_out NULL).
 */
int diagnose_pack(const struct diagnostics *d, char **buf_out, size_t *len_out);

/**
 * Fill out (from empty) from a diagnose_pack block; buf borrowed, may be NULL with
 * len 0 (no diagnostics). A block cut short gives the entries it holds whole.
 */
void diagnose_unpack(const char *buf, size_t len, struct diagnostics *out);

/**
 * Every Job-level diagnostic of job (D15-D17), framework's first, then each
 * plugin of the effective set (D1) in registry order (D2):
 *   spec.plugins that is not a map (nothing runs), a plugin's value that is not a
 *   list of strings, unknown plugin names, duplicate task names; then the plugin's
 *   own (`diagnose` in struct plugin), and a PluginArgumentInvalid for each of its
 *   argument parse errors (docs/plugins.md §3.4, D4).
 * @param job  borrowed Volcano Job; not modified
 * @param out  filled from empty (diagnose_init is called)
 * @return 0, or WH_ENOMEM (out holds what was found before).
 * Pure; thread-safe on distinct out.
 */
int diagnose_job(const json_t *job, struct diagnostics *out);

/* ---- helpers for the plugins' diagnose functions ---- */

/** @return borrowed task.template.spec.<list> ("containers", "initContainers") or NULL. */
const json_t *diagnose_task_containers(const json_t *task, const char *list);

/** @return the number of characters of v in decimal, sign included. */
size_t diagnose_digits(long long v);

/** @return whether plugin name is in job's effective plugin set (D1). */
bool diagnose_plugin_enabled(const json_t *job, const char *name);

/**
 * Bytes of a task's host list (docs/plugins.md §3.6) joined with a one-byte separator,
 * computed without building it: replicas 0..replicas-1 of "host.domain", host the
 * template hostname or "J-T-i", domain the template subdomain or J; one entry only
 * when one_per_hostname and the template sets a hostname (svc, ssh, mpi; not
 * tensorflow). extra is added to every entry (tensorflow's quotes and ":port").
 * @param[out] count  entries (may be NULL)
 */
unsigned long long diagnose_hosts_bytes(const json_t *job, const json_t *task,
                                        bool one_per_hostname, size_t extra,
                                        unsigned long long *count);

/**
 * A port flag whose value, narrowed to 32 bits as the pod's containerPort (spec
 * §3.4 rule 10), is outside 1-65535: a fatal PluginArgumentInvalid (the API
 * server refuses such a port) when declared, else a warning.
 */
void diagnose_port_arg(struct diagnostics *out, const char *plugin, const char *flag,
                       long long value, bool declared);

/**
 * UserValueReplaced for each container in spec.tasks[k].template.spec.<list> that
 * sets env var env_name, which the plugin overwrites (D5): one diagnostic per
 * container, naming it, the task and the variable.
 */
void diagnose_env_replaced(struct diagnostics *out, const char *plugin, const json_t *task,
                           size_t k, const char *list, const char *env_name);

/**
 * Conflict checks of D5 against a task template: a volume named volume that
 * is not the plugin's (matches(volume) false), and a mount at mount_path of
 * another volume in any container or init container. Both fatal.
 * @param what  what the plugin keeps there, for the message ("its host files")
 */
void diagnose_template_conflicts(struct diagnostics *out, const char *plugin, const json_t *task,
                                 size_t k, const char *volume, const char *source_key,
                                 const char *source_name_key, const char *mount_path,
                                 const char *what);

#endif
