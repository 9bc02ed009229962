/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podedit.h - the plugins' edits of a pod recorded over its typed view (k8s/podview.h),
 * and the RFC 6902 patch of them: the speed issue's "plugins decide their edits on a
 * view and emit ops", with no copy of the pod and no diff of it.
 *
 * Each function is podutil.h's upsert of the same name, with the same D5 decisions,
 * results, warnings and errors (the helpers of plugins/podutil_internal.h are the
 * same code), on the pod as the view shows it with the edits recorded so far. A
 * container is named by its list and place (struct pe_ref); a container a plugin
 * added (pod_edits_add_init_container) is a jansson object of the edits' own, edited
 * by podutil.h's functions themselves. pod_edits_write writes the patch that takes the
 * view's pod to the edited one: the bytes patch_diff_write writes for the jansson pod
 * and its edited copy (the same ops in the same order), by walking the edits.
 *
 * The plugins' on_pod_create write through it (plugins/plugin.h); webhook/mutate.c runs
 * the chain over it. tests/plugins/check_podedit.c and tests/fuzz/fuzz_podedit.c hold
 * each function to its podutil.h twin on a jansson copy, edit by edit, patch bytes and
 * D15's answer included (tests/podeditdiff.h).
 *
 * Request-owned; not thread-safe on one struct pod_edits.
 */
#ifndef WH_PODEDIT_H
#define WH_PODEDIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/jsonw.h"
#include "k8s/podcheck.h"
#include "k8s/podview.h"
#include "plugins/warnings.h"

/* One list member the upserts change entry by entry (a container's env, volumeMounts
 * or ports; spec.volumes, spec.containers, spec.initContainers). */
struct pe_list {
    const struct pv_value *orig; /* the view's member: its kind and place */
    size_t n_orig;               /* the view's entries (0 unless an array) */
    json_t **now;                /* per view entry: the entry that replaced it, or NULL */
    json_t *added;               /* the entries appended, in order (an array), or NULL */
    bool made;                   /* the member was absent or null: the list is added alone */
    unsigned long seq;           /* made where it was absent: its order among new members */
};

/* One member set whole (spec hostname and subdomain, a container's command and args). */
struct pe_set {
    json_t *value; /* NULL: not set */
    unsigned long seq;
};

/* The edits of one of the view's containers. */
struct pe_container {
    struct pe_list env;
    struct pe_list mounts;
    struct pe_list ports;
    struct pe_set command;
    struct pe_set args;
};

struct pod_edits {
    const struct pod_view *view;
    /* spec.containers and spec.initContainers: added holds the added containers */
    struct pe_list lists[2];
    struct pe_container *ctrs[2]; /* per view container of each list */
    struct pe_list volumes;
    struct pe_set hostname;
    struct pe_set subdomain;
    struct pe_set hccl_rank; /* metadata.annotations["hccl/rankIndex"] */
    bool metadata_made;      /* metadata was absent or null: made for the annotation */
    unsigned long metadata_seq;
    bool annotations_made; /* annotations was absent or null */
    unsigned long next_seq;
};

/* A container: list PV_CONTAINERS or PV_INIT_CONTAINERS, place i (the view's, then added). */
struct pe_ref {
    enum pv_container_list list;
    size_t i;
};

/**
 * Start recording edits over view (borrowed: it must outlive e): a pod object with a
 * spec object, as the chain gets (webhook/mutate.c denies any other pod before it);
 * the functions answer for any other view too, and check_podedit compares them only
 * on such pods.
 * @return 0, or WH_ENOMEM.
 */
int pod_edits_init(struct pod_edits *e, const struct pod_view *view);

/** Free what e holds (the entries and containers the edits added). */
void pod_edits_dispose(struct pod_edits *e);

/** @return how many containers list holds now: the view's (when an array) and the added ones. */
size_t pod_edits_count(const struct pod_edits *e, enum pv_container_list list);

/**
 * The name of container c as podutil_str gives it: its string, up to its first NUL,
 * or "" when it has none.
 * @return malloc'd copy (the caller frees it); NULL on ENOMEM.
 */
char *pod_edits_container_name(const struct pod_edits *e, struct pe_ref c);

/** Whether the pod's spec is an object (the chain's pods: always). */
bool pod_edits_has_spec(const struct pod_edits *e);

/**
 * spec[key] ("hostname" or "subdomain") as podutil_str gives it on the edited pod: its
 * string up to its first NUL, or "" (also for any other key); into buf (cut to len).
 * @return buf
 */
const char *pod_edits_spec_string(const struct pod_edits *e, const char *key, char *buf,
                                  size_t len);

/** metadata.annotations["hccl/rankIndex"] of the edited pod, as pod_edits_spec_string. */
const char *pod_edits_hccl_rank(const struct pod_edits *e, char *buf, size_t len);

/**
 * Member key ("command" or "args") of container c of the edited pod.
 * @return new reference; NULL when absent (or no container, or another key).
 */
json_t *pod_edits_container_member(const struct pod_edits *e, struct pe_ref c, const char *key);

/**
 * The literal value of the first env entry of container c whose name (podutil_str) is
 * name, as podutil_str gives it ("" when it has no literal value).
 * @param[out] value  malloc'd copy (the caller frees it), or NULL when the container has
 *                    no entry of that name
 * @return 0, or WH_ENOMEM.
 */
int pod_edits_env_value(const struct pod_edits *e, struct pe_ref c, const char *name, char **value);

/** podutil_upsert_env on container c: same arguments, result and warning. */
int pod_edits_upsert_env(struct pod_edits *e, struct pe_ref c, json_t *env_new, const char *plugin,
                         struct warnings *w);

/** podutil_upsert_envs on container c: same arguments, result and warnings. */
int pod_edits_upsert_envs(struct pod_edits *e, struct pe_ref c, const json_t *envs,
                          size_t *failed_at, const char *plugin, struct warnings *w);

/** podutil_upsert_volume on the pod: same arguments, result and error. */
int pod_edits_upsert_volume(struct pod_edits *e, json_t *volume_new, struct wh_error *err);

/** podutil_upsert_mount on container c: same arguments, result and error. */
int pod_edits_upsert_mount(struct pod_edits *e, struct pe_ref c, json_t *mount_new,
                           struct wh_error *err);

/** podutil_add_port on container c: same arguments, result and warnings. */
int pod_edits_add_port(struct pod_edits *e, struct pe_ref c, json_t *port_new, const char *plugin,
                       struct warnings *w);

/** podutil_add_init_container on the pod: same arguments and result. */
int pod_edits_add_init_container(struct pod_edits *e, json_t *container_new);

/**
 * podutil_set_string on spec (key "hostname" or "subdomain"; WH_EINVAL for any other,
 * which no plugin sets). Same result.
 */
int pod_edits_set_spec(struct pod_edits *e, const char *key, const char *value);

/**
 * podutil_set on container c (key "command" or "args"; WH_EINVAL for any other).
 * value_new is stolen. Same result.
 */
int pod_edits_set_container(struct pod_edits *e, struct pe_ref c, const char *key,
                            json_t *value_new);

/**
 * hcclrank's annotation (docs/plugins.md §4.8): metadata.annotations["hccl/rankIndex"]
 * set to value, metadata and annotations made when absent or null. @return what
 * podutil_set_string gives on the annotations object; WH_EINVAL when metadata or
 * annotations is of another kind.
 */
int pod_edits_set_hccl_rank(struct pod_edits *e, const char *value);

/**
 * The RFC 6902 patch from the view's pod to the edited one, appended to out as
 * patch_diff_write appends it (the same bytes for the jansson pod and its edited copy).
 * @param known  may be NULL: texts of values the plugins placed (base/jsonw.h)
 * @param n_ops  out, may be NULL
 * @return out->rc: 0; WH_ENOMEM; WH_ETOOBIG at out's max.
 */
int pod_edits_write(const struct pod_edits *e, const struct jsonw_texts *known, struct buf *out,
                    size_t *n_ops);

/**
 * D15's first look (podcheck_first_new's first walk, with the view's pod as the pod
 * before): whether the edited pod has a violation other than those of the view's own
 * entries alone (an env entry the edits kept, in its place, is not checked; a port or
 * volume kept is checked only for a name it repeats).
 * @return 1 when it has one, 0 when not, WH_ENOMEM when it cannot tell.
 */
int pod_edits_violates(const struct pod_edits *e);

/**
 * The edited pod as a tree (the view's pod with the patch applied), for what reads a
 * whole pod (render, D15's whole comparison). @return new reference; NULL on ENOMEM.
 */
json_t *pod_edits_pod(const struct pod_edits *e);

/**
 * D15: podcheck_first_new of the view's pod and the edited one, the same answer: the
 * first violation the edits brought (k8s/podcheck.h). One walk of the view and the
 * records, with the view's entries the edits kept passed as the user's own, answers
 * the common case (no violation at all); only when it finds one are the two pods
 * built as trees and compared whole.
 * @param[out] out  the violation, when there is one
 * @return 1 when there is one, 0 when not, WH_ENOMEM when memory runs out building
 *         the trees (the caller denies: no pod passes D15 unchecked).
 */
int pod_edits_first_new_violation(const struct pod_edits *e, struct podcheck_violation *out);

#endif
