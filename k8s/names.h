/*
 * names.h - the name rules kube-apiserver applies to the pod fields the plugins
 * write or rely on (k8s.io/apimachinery/pkg/util/validation): DNS-1123 labels,
 * IANA service names (port names) and environment variable names.
 *
 * Each check returns NULL when the name is valid, else a short constant phrase
 * saying what is wrong, for a message such as
 *   job name "a.b" cannot be a pod subdomain (a DNS-1123 label has no '.').
 * Pure functions on a borrowed NUL-terminated string; thread-safe.
 */
#ifndef WH_NAMES_H
#define WH_NAMES_H

#include <stddef.h>

#define NAMES_DNS_LABEL_MAX 63 /* IsDNS1123Label: at most 63 characters */
#define NAMES_IANA_SVC_MAX  15 /* IsValidPortName: at most 15 characters */

/**
 * DNS-1123 label (hostname, subdomain, volume and container names):
 * [a-z0-9]([-a-z0-9]*[a-z0-9])?, 1 to 63 characters.
 * @return NULL when s is one; else a phrase: "it is empty", "a DNS-1123 label has
 *         no '.'", "a DNS-1123 label has at most 63 characters", "a DNS-1123 label
 *         has only lower case letters, digits and '-'", "a DNS-1123 label starts and
 *         ends with a letter or digit" (the first rule broken, in that order).
 */
const char *names_dns_label_error(const char *s);

/**
 * IANA service name (a container port's name, IsValidPortName): 1 to 15
 * characters of [-a-z0-9], at least one letter, no "--", not starting or ending
 * with '-'.
 * @return NULL when s is one, else a phrase like names_dns_label_error's
 *         ("a port name has at most 15 characters", ...).
 */
const char *names_port_name_error(const char *s);

/**
 * Environment variable name as kube-apiserver has validated it for years
 * (IsEnvVarName): [-._a-zA-Z][-._a-zA-Z0-9]*. Newer servers accept more; every
 * name the plugins write passes this one.
 * @return NULL when s is one, else a phrase ("an env var name is not empty", ...).
 */
const char *names_env_var_error(const char *s);

/**
 * Which names repeat (names unique in a pod, task names in a Job), by sorting:
 * n log n, so a list of 100,000 costs no more than parsing it.
 * @param names  borrowed array of n strings; a NULL entry equals nothing
 * @return malloc'd array of n (the caller frees it): [i] = the index of the first
 *         name equal to names[i], i itself when it is the first; NULL when n == 0
 *         or on ENOMEM.
 */
size_t *names_first_positions(const char *const *names, size_t n);

#endif
