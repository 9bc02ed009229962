/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podcheck.h - the parts of kube-apiserver's Pod validation
 * (k8s.io/kubernetes/pkg/apis/core/validation ValidatePodSpec) that concern the
 * fields an admission webhook writes or relies on: hostname and subdomain,
 * volume names, container names across containers, init containers and
 * ephemeral containers, mount paths, container ports, env var names, plus the
 * kernel's limit on one environment string (MAX_ARG_STRLEN), past which the
 * container cannot start.
 *
 * It knows nothing of Volcano: the webhook (webhook/mutate.c, D15) asks
 * which violations its own edits introduced (podcheck_first_new) and says who
 * made them. Pure functions over borrowed, read-only pods; thread-safe.
 */
#ifndef WH_PODCHECK_H
#define WH_PODCHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define PODCHECK_ENV_MAX 131072u /* MAX_ARG_STRLEN: "NAME=value" and its NUL, bytes */

enum podcheck_kind {
    PODCHECK_SUBDOMAIN,           /* spec.subdomain is not a DNS-1123 label */
    PODCHECK_HOSTNAME,            /* spec.hostname is not a DNS-1123 label */
    PODCHECK_VOLUME_NAME,         /* a volume name is not a DNS-1123 label */
    PODCHECK_VOLUME_DUPLICATE,    /* two volumes of one name */
    PODCHECK_CONTAINER_DUPLICATE, /* two containers of one name, over all three lists */
    PODCHECK_MOUNT_DUPLICATE,     /* one container mounts two volumes at one path */
    PODCHECK_PORT_NAME,           /* a port name is not an IANA service name */
    PODCHECK_PORT_DUPLICATE,      /* one container has two ports of one name */
    PODCHECK_PORT_NUMBER,         /* containerPort outside 1-65535 */
    PODCHECK_ENV_NAME,            /* an env var name is not valid */
    PODCHECK_ENV_TOO_LARGE,       /* "NAME=value" over PODCHECK_ENV_MAX bytes */
};

/* One violation; strings are copies (cut to fit), valid while the struct lives. */
struct podcheck_violation {
    enum podcheck_kind kind;
    char list[24];       /* "containers", "initContainers", "ephemeralContainers"; "" for
                           * pod-level fields and volumes */
    char container[64];  /* the container's name, "" for pod-level fields */
    char other_list[24]; /* CONTAINER_DUPLICATE: the list of the first of that name */
    char value[128];     /* the offending name, path or env var name */
    const char *why;     /* k8s/names.h phrase for *_NAME, SUBDOMAIN and HOSTNAME; else NULL */
    long long number;    /* PORT_NUMBER: the port; ENV_TOO_LARGE: bytes with "NAME=" and NUL */
};

/**
 * Call fn for each violation in pod, in this order: subdomain, hostname,
 * volumes, container names, then per container (containers, initContainers,
 * ephemeralContainers) mounts, ports, env. Stops when fn returns true.
 * @param pod  borrowed Pod object (NULL or a non-object: no violations)
 * @param fn   called with a violation valid only during the call, and ud
 * @return true when fn stopped the walk.
 */
bool podcheck_each(const json_t *pod, bool (*fn)(const struct podcheck_violation *v, void *ud),
                   void *ud);

/** @return whether pod has violation v (same kind, place and value). */
bool podcheck_has(const json_t *pod, const struct podcheck_violation *v);

/**
 * The first violation of after that before does not have: what an edit of
 * before into after introduced (a pod that was invalid already stays the API
 * server's to refuse). An env entry or port of after that is before's own object at the
 * same place of the same container, or a volume at the same place of the pod (after a
 * copy sharing what it did not change, as the webhook's), is not checked alone until a
 * violation elsewhere makes the full comparison run: its own violations cannot be new
 * (whether its name repeats one of another entry still is checked).
 * @param[out] out  the violation, when there is one
 * @return true when there is one.
 */
bool podcheck_first_new(const json_t *before, const json_t *after, struct podcheck_violation *out);

#endif
