/*
 * names.c - the DNS-1123 checks of names.h.
 *
 * Threads: none; pure functions.
 */
#include "k8s/names.h"

#include <stddef.h>
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
