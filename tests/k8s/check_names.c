/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_names.c - k8s/names.c: DNS-1123 labels and subdomains, as kube-apiserver
 * validates them (IsDNS1123Label, IsDNS1123Subdomain), at their length limits;
 * the reasons of the label, port name and env var name checks; repeated names.
 */
#include <check.h>
#include <stdlib.h>
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

START_TEST(dns_label)
{
    char s64[65];

    ck_assert_ptr_null(k8s_name_label_error("a"));
    ck_assert_ptr_null(k8s_name_label_error("j-master-0"));
    ck_assert_ptr_null(k8s_name_label_error("0abc"));
    memset(s64, 'a', 63);
    s64[63] = '\0';
    ck_assert_ptr_null(k8s_name_label_error(s64));
    s64[63] = 'a';
    s64[64] = '\0';
    ck_assert_str_eq(k8s_name_label_error(s64), "a DNS-1123 label has at most 63 characters");
    ck_assert_str_eq(k8s_name_label_error(""), "it is empty");
    ck_assert_str_eq(k8s_name_label_error("a.b"), "a DNS-1123 label has no '.'");
    ck_assert_str_eq(k8s_name_label_error("a.b-master-0"), "a DNS-1123 label has no '.'");
    ck_assert_str_eq(k8s_name_label_error("Abc"),
                     "a DNS-1123 label has only lower case letters, digits and '-'");
    ck_assert_str_eq(k8s_name_label_error("a_b"),
                     "a DNS-1123 label has only lower case letters, digits and '-'");
    ck_assert_str_eq(k8s_name_label_error("-a"),
                     "a DNS-1123 label starts and ends with a letter or digit");
    ck_assert_str_eq(k8s_name_label_error("a-"),
                     "a DNS-1123 label starts and ends with a letter or digit");
}
END_TEST

START_TEST(port_name)
{
    ck_assert_ptr_null(k8s_name_port_error("pytorchjob-port")); /* exactly 15 */
    ck_assert_ptr_null(k8s_name_port_error("gcs"));
    ck_assert_ptr_null(k8s_name_port_error("client-server"));
    ck_assert_ptr_null(k8s_name_port_error("h2c"));
    ck_assert_str_eq(k8s_name_port_error(""), "it is empty");
    ck_assert_str_eq(k8s_name_port_error("pytorchjob-ports"),
                     "a port name has at most 15 characters");
    ck_assert_str_eq(k8s_name_port_error("Http"),
                     "a port name has only lower case letters, digits and '-'");
    ck_assert_str_eq(k8s_name_port_error("a--b"), "a port name has no \"--\"");
    ck_assert_str_eq(k8s_name_port_error("-ab"),
                     "a port name starts and ends with a letter or digit");
    ck_assert_str_eq(k8s_name_port_error("8080"), "a port name has at least one letter");
}
END_TEST

START_TEST(env_var_name)
{
    ck_assert_ptr_null(k8s_name_env_error("VC_MPI_WORKER_HOSTS"));
    ck_assert_ptr_null(k8s_name_env_error("_x.y-z9"));
    ck_assert_ptr_null(k8s_name_env_error("TF_CONFIG"));
    ck_assert_str_eq(k8s_name_env_error(""), "an env var name is not empty");
    ck_assert_str_eq(k8s_name_env_error("1A"),
                     "an env var name starts with a letter, '-', '.' or '_'");
    ck_assert_str_eq(k8s_name_env_error("A=B"),
                     "an env var name has only letters, digits, '-', '.' and '_'");
    ck_assert_str_eq(k8s_name_env_error("A B"),
                     "an env var name has only letters, digits, '-', '.' and '_'");
}
END_TEST

START_TEST(first_positions)
{
    static const char *const names[] = {"b", "a", NULL, "b", "c", "a", "b", NULL};
    size_t *first = k8s_name_first_positions(names, 8);
    static const size_t want[] = {0, 1, 2, 0, 4, 1, 0, 7};

    ck_assert_ptr_nonnull(first);
    for (size_t i = 0; i < 8; i++)
        ck_assert_uint_eq(first[i], want[i]);
    free(first);
    ck_assert_ptr_null(k8s_name_first_positions(names, 0));
}
END_TEST

/* Lists of up to 40 names from a three-name alphabet and NULL, so that short lists
 * (compared pairwise) and long ones (sorted) repeat names, against the definition. */
START_TEST(first_positions_random)
{
    static const char *const alphabet[] = {"x", "y", "xy", NULL};
    const char *names[40];
    unsigned seed = 7;

    for (int round = 0; round < 400; round++) {
        size_t n = 1 + (size_t)round % 40;
        size_t *first;

        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            names[i] = alphabet[(seed >> 16) % 4];
        }
        first = k8s_name_first_positions(names, n);
        ck_assert_ptr_nonnull(first);
        for (size_t i = 0; i < n; i++) {
            size_t want = i;

            for (size_t j = 0; names[i] != NULL && j < i; j++) {
                if (names[j] != NULL && strcmp(names[j], names[i]) == 0) {
                    want = j;
                    break;
                }
            }
            ck_assert_uint_eq(first[i], want);
        }
        free(first);
    }
}
END_TEST

static Suite *names_suite(void)
{
    Suite *s = suite_create("names");
    TCase *t = tcase_create("names");

    tcase_add_test(t, test_label);
    tcase_add_test(t, test_subdomain);
    tcase_add_test(t, dns_label);
    tcase_add_test(t, port_name);
    tcase_add_test(t, env_var_name);
    tcase_add_test(t, first_positions);
    tcase_add_test(t, first_positions_random);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tu_run(names_suite());
}
