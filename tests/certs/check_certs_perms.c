/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_certs_perms.c - certs_check_key_permissions (certs.h: a key others can read
 * is as good as published): which private key file modes are accepted, through a
 * symlink as kubelet Secret volumes lay them out, and the messages of the refusals.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "certs/certs.h"
#include "tests/testutil.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/check_certs_perms.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* dir/name with the given mode; returns the path in buf. */
static const char *key_file(const char *name, mode_t mode, char *buf, size_t len)
{
    FILE *f;

    snprintf(buf, len, "%s/%s", dir, name);
    f = fopen(buf, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs("-----BEGIN PRIVATE KEY-----\n", f), 0);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(buf, mode), 0);
    return buf;
}

START_TEST(test_private_modes_accepted)
{
    static const mode_t ok[] = {0600, 0400, 0440, 0640, 0700};
    char p[128];
    struct wh_error err = {0, ""};

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        ck_assert_int_eq(
            certs_check_key_permissions(key_file("tls.key", ok[i], p, sizeof(p)), &err), 0);
        ck_assert_str_eq(err.msg, "");
    }
}
END_TEST

START_TEST(test_open_modes_refused)
{
    static const mode_t bad[] = {0644, 0604, 0666, 0660, 0620, 0601, 0602, 0444};
    char p[128];
    char want[512];
    struct wh_error err = {0, ""};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        key_file("tls.key", bad[i], p, sizeof(p));
        ck_assert_int_eq(certs_check_key_permissions(p, &err), WH_EINVAL);
        snprintf(want, sizeof(want),
                 "%s: private key has mode %04o, writable by its group or open to others "
                 "(want 0600, 0640, 0400 or 0440; a Secret volume needs defaultMode 0440 "
                 "or 0400)",
                 p, (unsigned)bad[i]);
        ck_assert_str_eq(err.msg, want);
        ck_assert_int_eq(err.code, WH_EINVAL);
    }
}
END_TEST

START_TEST(test_symlink_followed)
{
    /* kubelet: tls.key -> ..data/tls.key -> ..2024_01_01/tls.key; the target counts */
    char target[128];
    char link[128];
    struct wh_error err = {0, ""};

    key_file("real.key", 0440, target, sizeof(target));
    snprintf(link, sizeof(link), "%s/tls.key", dir);
    ck_assert_int_eq(symlink(target, link), 0);
    ck_assert_int_eq(certs_check_key_permissions(link, &err), 0);
    ck_assert_int_eq(chmod(target, 0644), 0);
    ck_assert_int_eq(certs_check_key_permissions(link, &err), WH_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "mode 0644"));
}
END_TEST

START_TEST(test_missing_and_not_regular)
{
    char p[128];
    char want[512];
    struct wh_error err = {0, ""};

    snprintf(p, sizeof(p), "%s/nope.key", dir);
    ck_assert_int_eq(certs_check_key_permissions(p, &err), WH_ERROR);
    snprintf(want, sizeof(want), "%s: No such file or directory", p);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(certs_check_key_permissions(dir, &err), WH_EINVAL);
    snprintf(want, sizeof(want), "%s: private key is not a regular file", dir);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(certs_check_key_permissions(NULL, &err), WH_EINVAL);
    ck_assert_int_eq(certs_check_key_permissions(p, NULL), WH_ERROR);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("certs_perms");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_private_modes_accepted);
    tcase_add_test(tc, test_open_modes_refused);
    tcase_add_test(tc, test_symlink_followed);
    tcase_add_test(tc, test_missing_and_not_regular);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
