/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names.h - the DNS-1123 name checks kube-apiserver applies (k8s.io/apimachinery
 * pkg/util/validation: IsDNS1123Label, IsDNS1123Subdomain).
 *
 * A label names a Service, a namespace, a pod's hostname and subdomain, a volume;
 * a subdomain names most other objects (a Volcano Job, a ConfigMap, a
 * MutatingWebhookConfiguration). Also the rules of port and env var names,
 * each check with the reason a name fails (for the messages of D15), and which
 * names of a list repeat. Pure functions; thread-safe.
 */
#ifndef WH_NAMES_H
#define WH_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#define K8S_LABEL_MAX     63  /* bytes in a DNS-1123 label */
#define K8S_SUBDOMAIN_MAX 253 /* bytes in a DNS-1123 subdomain */

/**
 * Whether s (NUL-terminated, borrowed; NULL is not) is a DNS-1123 label:
 * 1-63 bytes of [a-z0-9-], starting and ending with [a-z0-9]
 * (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`).
 */
bool k8s_name_is_label(const char *s);

/**
 * Whether s (NUL-terminated, borrowed; NULL is not) is a DNS-1123 subdomain:
 * 1-253 bytes of DNS-1123 labels joined by '.' (`label(\.label)*`, each label
 * of any length up to the total, as IsDNS1123Subdomain checks). So "." and ".."
 * never pass, nor "a..b" or "a.-b".
 */
bool k8s_name_is_subdomain(const char *s);

/* The rules of the other fields a webhook writes into a pod. */
#define K8S_PORT_NAME_MAX 15 /* IsValidPortName: at most 15 characters */

/**
 * A DNS-1123 label (hostname, subdomain, volume and container names), with the
 * reason when it is not one, for a message such as
 *   job name "a.b" cannot be a pod subdomain (a DNS-1123 label has no '.').
 * @return NULL when s is one; else a constant phrase, the first rule broken in
 *         this order: "it is empty", "a DNS-1123 label has no '.'", "a DNS-1123
 *         label has at most 63 characters", "a DNS-1123 label has only lower case
 *         letters, digits and '-'", "a DNS-1123 label starts and ends with a letter
 *         or digit".
 */
const char *k8s_name_label_error(const char *s);

/**
 * IANA service name (a container port's name, IsValidPortName): 1 to 15
 * characters of [-a-z0-9], at least one letter, no "--", not starting or ending
 * with '-'.
 * @return NULL when s is one, else a constant phrase like k8s_name_label_error's
 *         ("a port name has at most 15 characters", ...).
 */
const char *k8s_name_port_error(const char *s);

/**
 * Environment variable name as kube-apiserver has validated it for years
 * (IsEnvVarName): [-._a-zA-Z][-._a-zA-Z0-9]*. Newer servers accept more; every
 * name the plugins write passes this one.
 * @return NULL when s is one, else a constant phrase ("an env var name is not
 *         empty", ...).
 */
const char *k8s_name_env_error(const char *s);

/**
 * Which names repeat (names unique in a pod, task names in a Job), by sorting:
 * n log n, so a list of 100,000 costs no more than parsing it.
 * @param names  borrowed array of n strings; a NULL entry equals nothing
 * @return malloc'd array of n (the caller frees it): [i] = the index of the first
 *         name equal to names[i], i itself when it is the first; NULL when n == 0
 *         or on ENOMEM.
 */
size_t *k8s_name_first_positions(const char *const *names, size_t n);

#endif
