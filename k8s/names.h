/*
 * names.h - the DNS-1123 name checks kube-apiserver applies (k8s.io/apimachinery
 * pkg/util/validation: IsDNS1123Label, IsDNS1123Subdomain).
 *
 * A label names a Service, a namespace, a pod's hostname and subdomain, a volume;
 * a subdomain names most other objects (a Volcano Job, a ConfigMap, a
 * MutatingWebhookConfiguration). Pure functions; thread-safe.
 */
#ifndef WH_NAMES_H
#define WH_NAMES_H

#include <stdbool.h>

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

#endif
