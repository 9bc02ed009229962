/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podview.h - a typed, read-only view of what the webhook reads in a Pod: metadata
 * name, generateName, namespace, the task and hccl keys of labels and annotations,
 * ownerReferences; spec hostname, subdomain, volumes; for every container, init
 * container and ephemeral container: name, env, volumeMounts, ports, command, args
 * (webhook/mutate.c's mutate_pod_read names the same members).
 *
 * Two builders fill it: from a document (base/jsonr.h: the review read once, the
 * view pointing into the body, no tree built) and from a jansson tree (the pod of a
 * body the document declines, which jansson reads). The jansson one is the reference:
 * the two give the same view of every body both read (tests/k8s/check_podview.c over
 * every corpus and fixture, tests/fuzz/fuzz_reader.c).
 *
 * Every member is a struct pv_value: what the pod holds there (its kind, JSONR_NONE
 * when absent), the string or integer when it is one, and where it is, for
 * podview_value, which gives any of them as jansson's tree (an env entry's valueFrom,
 * a volume's source: what the D5 upserts compare whole). A view is read-only and
 * request-owned: not thread-safe while it is being built, and freely shared after.
 */
#ifndef WH_PODVIEW_H
#define WH_PODVIEW_H

#include <jansson.h>
#include <stddef.h>

#include "base/jsonr.h"

/* One member of the pod as the view holds it. */
struct pv_value {
    enum jsonr_kind kind; /* JSONR_NONE: absent (or its object absent or no object) */
    const char *s;        /* JSONR_STRING: decoded UTF-8, n bytes, not NUL-terminated */
    size_t n;
    long long integer;  /* JSONR_INTEGER */
    int tok;            /* where it is in the view's document (-1: none, or no document) */
    const json_t *json; /* where it is in the view's tree (NULL: none, or no tree) */
    /* Of the members whose edits a patch orders (pod metadata and spec; spec hostname,
     * subdomain, volumes and the container lists; a container's command, args, env,
     * volumeMounts and ports): its place among its object's members in json_loadb's
     * order (from 0; a repeated key at its first place). -1 for every other value. */
    long place;
};

struct pv_env {
    struct pv_value entry; /* the whole entry */
    struct pv_value name;
};

struct pv_mount {
    struct pv_value entry;
    struct pv_value name;
    struct pv_value mount_path;
};

struct pv_port {
    struct pv_value entry;
    struct pv_value name;
    struct pv_value container_port;
};

struct pv_volume {
    struct pv_value entry;
    struct pv_value name;
};

struct pv_owner {
    struct pv_value entry;
    struct pv_value api_version;
    struct pv_value kind;
    struct pv_value name;
    struct pv_value controller;
    struct pv_value uid;
};

/* A list member: list.kind says what the member is (absent, null, an array, or
 * something else); n entries when it is an array (0 otherwise). */
#define PV_LIST(type)                                                                              \
    struct {                                                                                       \
        struct pv_value list;                                                                      \
        size_t n;                                                                                  \
        type *at;                                                                                  \
    }

struct pv_container {
    struct pv_value entry;
    struct pv_value name;
    struct pv_value command;
    struct pv_value args;
    PV_LIST(struct pv_env) env;
    PV_LIST(struct pv_mount) mounts; /* volumeMounts */
    PV_LIST(struct pv_port) ports;
};

/* The container lists, in the order kube-apiserver checks their names' uniqueness. */
enum pv_container_list { PV_CONTAINERS, PV_INIT_CONTAINERS, PV_EPHEMERAL_CONTAINERS, PV_LISTS };

/* The list's member name in a pod spec: "containers", "initContainers", "ephemeralContainers". */
extern const char *const podview_list_names[PV_LISTS];

struct pod_view {
    struct pv_value pod; /* the pod itself: an object, or not (then nothing else is set) */
    struct pv_value metadata;
    struct pv_value name;
    struct pv_value generate_name;
    struct pv_value ns; /* metadata.namespace */
    struct pv_value labels;
    struct pv_value label_task_index; /* labels["volcano.sh/task-index"] */
    struct pv_value annotations;
    struct pv_value annotation_task_spec;  /* annotations["volcano.sh/task-spec"] */
    struct pv_value annotation_task_index; /* annotations["volcano.sh/task-index"] */
    struct pv_value annotation_hccl_rank;  /* annotations["hccl/rankIndex"] */
    PV_LIST(struct pv_owner) owners;       /* metadata.ownerReferences */
    struct pv_value spec;
    struct pv_value hostname;
    struct pv_value subdomain;
    PV_LIST(struct pv_volume) volumes;
    PV_LIST(struct pv_container) containers[PV_LISTS];
    /* what the view reads from: one of the two */
    const struct jsonr_doc *doc;
    json_t *tree; /* a reference held while the view lives */
};

/**
 * The view of the pod at value pod of doc (a document of the body that holds it,
 * borrowed: it must outlive the view). Strings point into doc and its body.
 * @return 0, or WH_ENOMEM (the view is then empty; podview_dispose it all the same).
 */
int podview_from_doc(struct pod_view *v, const struct jsonr_doc *doc, int pod);

/**
 * The view of pod (a jansson tree; the view holds a reference until podview_dispose).
 * Strings point into the tree. The reference builder: podview_from_doc must agree.
 * @return 0, or WH_ENOMEM (the view is then empty; podview_dispose it all the same).
 */
int podview_from_json(struct pod_view *v, const json_t *pod);

/** Free what v holds (its lists, its tree's reference); v is then empty. */
void podview_dispose(struct pod_view *v);

/**
 * What the view holds at value x (one of v's members) as jansson's tree: the same
 * value, types and key order json_loadb gives for it.
 * @return new reference; NULL when x is absent (JSONR_NONE) or out of memory.
 */
json_t *podview_value(const struct pod_view *v, const struct pv_value *x);

/** Whether x is the string s (NUL-terminated): its n bytes and no more. */
bool podview_is(const struct pv_value *x, const char *s);

#endif
