/*
 * check_names.c - kube-apiserver's name rules for the fields the plugins write
 * (k8s/names.h): DNS-1123 labels, port names, env var names; which names repeat.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/names.h"
#include "tests/testutil.h"

START_TEST(dns_label)
{
    char s64[65];

    ck_assert_ptr_null(names_dns_label_error("a"));
    ck_assert_ptr_null(names_dns_label_error("j-master-0"));
    ck_assert_ptr_null(names_dns_label_error("0abc"));
    memset(s64, 'a', 63);
    s64[63] = '\0';
    ck_assert_ptr_null(names_dns_label_error(s64));
    s64[63] = 'a';
    s64[64] = '\0';
    ck_assert_str_eq(names_dns_label_error(s64), "a DNS-1123 label has at most 63 characters");
    ck_assert_str_eq(names_dns_label_error(""), "it is empty");
    ck_assert_str_eq(names_dns_label_error("a.b"), "a DNS-1123 label has no '.'");
    ck_assert_str_eq(names_dns_label_error("a.b-master-0"), "a DNS-1123 label has no '.'");
    ck_assert_str_eq(names_dns_label_error("Abc"),
                     "a DNS-1123 label has only lower case letters, digits and '-'");
    ck_assert_str_eq(names_dns_label_error("a_b"),
                     "a DNS-1123 label has only lower case letters, digits and '-'");
    ck_assert_str_eq(names_dns_label_error("-a"),
                     "a DNS-1123 label starts and ends with a letter or digit");
    ck_assert_str_eq(names_dns_label_error("a-"),
                     "a DNS-1123 label starts and ends with a letter or digit");
}
END_TEST

START_TEST(port_name)
{
    ck_assert_ptr_null(names_port_name_error("pytorchjob-port")); /* exactly 15 */
    ck_assert_ptr_null(names_port_name_error("gcs"));
    ck_assert_ptr_null(names_port_name_error("client-server"));
    ck_assert_ptr_null(names_port_name_error("h2c"));
    ck_assert_str_eq(names_port_name_error(""), "it is empty");
    ck_assert_str_eq(names_port_name_error("pytorchjob-ports"),
                     "a port name has at most 15 characters");
    ck_assert_str_eq(names_port_name_error("Http"),
                     "a port name has only lower case letters, digits and '-'");
    ck_assert_str_eq(names_port_name_error("a--b"), "a port name has no \"--\"");
    ck_assert_str_eq(names_port_name_error("-ab"),
                     "a port name starts and ends with a letter or digit");
    ck_assert_str_eq(names_port_name_error("8080"), "a port name has at least one letter");
}
END_TEST

START_TEST(env_var_name)
{
    ck_assert_ptr_null(names_env_var_error("VC_MPI_WORKER_HOSTS"));
    ck_assert_ptr_null(names_env_var_error("_x.y-z9"));
    ck_assert_ptr_null(names_env_var_error("TF_CONFIG"));
    ck_assert_str_eq(names_env_var_error(""), "an env var name is not empty");
    ck_assert_str_eq(names_env_var_error("1A"),
                     "an env var name starts with a letter, '-', '.' or '_'");
    ck_assert_str_eq(names_env_var_error("A=B"),
                     "an env var name has only letters, digits, '-', '.' and '_'");
    ck_assert_str_eq(names_env_var_error("A B"),
                     "an env var name has only letters, digits, '-', '.' and '_'");
}
END_TEST

START_TEST(first_positions)
{
    static const char *const names[] = {"b", "a", NULL, "b", "c", "a", "b", NULL};
    size_t *first = names_first_positions(names, 8);
    static const size_t want[] = {0, 1, 2, 0, 4, 1, 0, 7};

    ck_assert_ptr_nonnull(first);
    for (size_t i = 0; i < 8; i++)
        ck_assert_uint_eq(first[i], want[i]);
    free(first);
    ck_assert_ptr_null(names_first_positions(names, 0));
}
END_TEST

static Suite *names_suite(void)
{
    Suite *s = suite_create("names");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, dns_label);
    tcase_add_test(tc, port_name);
    tcase_add_test(tc, env_var_name);
    tcase_add_test(tc, first_positions);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(names_suite());
}
