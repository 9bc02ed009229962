/*
 * check_names.c - k8s/names.c: DNS-1123 labels and subdomains, as kube-apiserver
 * validates them (IsDNS1123Label, IsDNS1123Subdomain), at their length limits.
 */
#include <check.h>
#include <string.h>

#include "k8s/names.h"
#include "tests/testutil.h"

/* n bytes of c, then NUL, in buf. */
static const char *repeat(char *buf, char c, size_t n)
{
    memset(buf, c, n);
    buf[n] = '\0';
    return buf;
}

START_TEST(test_label)
{
    char buf[300];

    ck_assert(k8s_name_is_label("a"));
    ck_assert(k8s_name_is_label("0"));
    ck_assert(k8s_name_is_label("volcano-plugin-webhook"));
    ck_assert(k8s_name_is_label("a-b--c9"));
    ck_assert(k8s_name_is_label(repeat(buf, 'a', 63)));
    ck_assert(!k8s_name_is_label(repeat(buf, 'a', 64)));
    ck_assert(!k8s_name_is_label(""));
    ck_assert(!k8s_name_is_label("-a"));
    ck_assert(!k8s_name_is_label("a-"));
    ck_assert(!k8s_name_is_label("-"));
    ck_assert(!k8s_name_is_label("a.b")); /* a subdomain, not a label */
    ck_assert(!k8s_name_is_label("A"));
    ck_assert(!k8s_name_is_label("a_b"));
    ck_assert(!k8s_name_is_label("a b"));
    ck_assert(!k8s_name_is_label("caf\xc3\xa9"));
}
END_TEST

START_TEST(test_subdomain)
{
    char buf[300];

    ck_assert(k8s_name_is_subdomain("a"));
    ck_assert(k8s_name_is_subdomain("my-job"));
    ck_assert(k8s_name_is_subdomain("volcano.sh"));
    ck_assert(k8s_name_is_subdomain("a.b-c.0"));
    ck_assert(k8s_name_is_subdomain(repeat(buf, 'a', 253))); /* one long label is allowed */
    ck_assert(!k8s_name_is_subdomain(repeat(buf, 'a', 254)));
    ck_assert(!k8s_name_is_subdomain(""));
    ck_assert(!k8s_name_is_subdomain("."));
    ck_assert(!k8s_name_is_subdomain(".."));
    ck_assert(!k8s_name_is_subdomain(".a"));
    ck_assert(!k8s_name_is_subdomain("a."));
    ck_assert(!k8s_name_is_subdomain("a..b"));
    ck_assert(!k8s_name_is_subdomain("a.-b"));
    ck_assert(!k8s_name_is_subdomain("a-.b"));
    ck_assert(!k8s_name_is_subdomain("-a"));
    ck_assert(!k8s_name_is_subdomain("a-"));
    ck_assert(!k8s_name_is_subdomain("a/b")); /* would name another URL path */
    ck_assert(!k8s_name_is_subdomain("My-Job"));
    ck_assert(!k8s_name_is_subdomain("a b"));
}
END_TEST

static Suite *names_suite(void)
{
    Suite *s = suite_create("names");
    TCase *t = tcase_create("names");

    tcase_add_test(t, test_label);
    tcase_add_test(t, test_subdomain);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tu_run(names_suite());
}
