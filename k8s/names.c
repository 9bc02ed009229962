/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names.c - the DNS-1123 checks of names.h, after k8s.io/apimachinery's
 * pkg/util/validation (IsDNS1123Label, IsDNS1123Subdomain, IsValidPortName,
 * IsEnvVarName), and which names of a list repeat.
 *
 * Threads: none; pure functions.
 */
#include "k8s/names.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Whether s[0..n) is one label's text: [a-z0-9]([-a-z0-9]*[a-z0-9])?, any length >= 1. */
static bool label_chars(const char *s, size_t n)
{
    if (n == 0 || !alnum(s[0]) || !alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

bool k8s_name_is_label(const char *s)
{
    size_t n = strnlen(s, K8S_LABEL_MAX + 1);

    return n <= K8S_LABEL_MAX && label_chars(s, n);
}

bool k8s_name_is_subdomain(const char *s)
{
    size_t n = strnlen(s, K8S_SUBDOMAIN_MAX + 1);
    size_t start = 0;

    if (n > K8S_SUBDOMAIN_MAX)
        return false;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        if (!label_chars(s + start, i - start))
            return false;
        start = i + 1;
    }
    return true;
}

const char *k8s_name_label_error(const char *s)
{
    size_t n = strlen(s);

    if (n == 0)
        return "it is empty";
    if (strchr(s, '.') != NULL)
        return "a DNS-1123 label has no '.'";
    if (n > K8S_LABEL_MAX)
        return "a DNS-1123 label has at most 63 characters";
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && s[i] != '-')
            return "a DNS-1123 label has only lower case letters, digits and '-'";
    if (s[0] == '-' || s[n - 1] == '-')
        return "a DNS-1123 label starts and ends with a letter or digit";
    return NULL;
}

const char *k8s_name_port_error(const char *s)
{
    size_t n = strlen(s);
    bool letter = false;

    if (n == 0)
        return "it is empty";
    if (n > K8S_PORT_NAME_MAX)
        return "a port name has at most 15 characters";
    for (size_t i = 0; i < n; i++) {
        if (!alnum(s[i]) && s[i] != '-')
            return "a port name has only lower case letters, digits and '-'";
        letter = letter || (s[i] >= 'a' && s[i] <= 'z');
    }
    if (strstr(s, "--") != NULL)
        return "a port name has no \"--\"";
    if (s[0] == '-' || s[n - 1] == '-')
        return "a port name starts and ends with a letter or digit";
    if (!letter)
        return "a port name has at least one letter";
    return NULL;
}

static bool env_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '.' || c == '_'
        || (!first && c >= '0' && c <= '9');
}

const char *k8s_name_env_error(const char *s)
{
    if (s[0] == '\0')
        return "an env var name is not empty";
    if (!env_char(s[0], true))
        return "an env var name starts with a letter, '-', '.' or '_'";
    for (size_t i = 1; s[i] != '\0'; i++)
        if (!env_char(s[i], false))
            return "an env var name has only letters, digits, '-', '.' and '_'";
    return NULL;
}

/* One name for the duplicate search: its text and its position. */
struct named {
    const char *s;
    size_t pos;
};

static int cmp_named(const void *a, const void *b)
{
    const struct named *x = a;
    const struct named *y = b;
    int c = strcmp(x->s, y->s);

    if (c != 0)
        return c;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Up to this many names, each is compared with those before it: fewer steps than a
 * sort's for the few mounts, ports and volumes of a container or a pod. */
#define FIRST_POSITIONS_SCAN_MAX 8

size_t *k8s_name_first_positions(const char *const *names, size_t n)
{
    struct named *sorted;
    size_t *first = n > 0 ? malloc(n * sizeof(*first)) : NULL;
    size_t m = 0;

    if (first != NULL && n <= FIRST_POSITIONS_SCAN_MAX) {
        for (size_t i = 0; i < n; i++) {
            first[i] = i;
            for (size_t j = 0; names[i] != NULL && j < i; j++) {
                if (names[j] != NULL && strcmp(names[j], names[i]) == 0) {
                    first[i] = first[j];
                    break;
                }
            }
        }
        return first;
    }
    sorted = n > 0 ? malloc(n * sizeof(*sorted)) : NULL;
    if (sorted == NULL || first == NULL) {
        free(sorted);
        free(first);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        first[i] = i;
        if (names[i] != NULL)
            sorted[m++] = (struct named){names[i], i};
    }
    qsort(sorted, m, sizeof(*sorted), cmp_named);
    for (size_t i = 1; i < m; i++)
        if (strcmp(sorted[i].s, sorted[i - 1].s) == 0)
            first[sorted[i].pos] = first[sorted[i - 1].pos];
    free(sorted);
    return first;
}
