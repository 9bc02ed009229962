/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_log.c - the log line formats of base/log.c: JSON fields split from
 * "event key=value" text, and no forged lines in the text format.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "tests/testutil.h"

/* Run one LOG call with stderr sent to a temporary file; return what it wrote. */
static char *capture(enum log_format format, void (*emit)(void))
{
    struct tu_stderr c;
    char *out;

    tu_stderr_begin(&c);
    log_set_format(format);
    emit();
    out = tu_stderr_end(&c);
    log_set_format(LOG_FORMAT_JSON);
    return out;
}

static void emit_fields(void)
{
    LOG_INFO("admission uid=%s job=%s allowed=%s err=\"%s\"", "u-1", "ns/j", "true",
             "InternalError: \"boom\" now");
}

static void emit_plain(void)
{
    LOG_WARN("reconcile: Secret ns/j-ssh exists and is not owned by job ns/j, left alone");
}

static void emit_injection(void)
{
    LOG_INFO("admission job=%s outcome=x", "j\r\nX-Injected: 1");
}

/* A forger's uid: it tries to close its field and set the line's own and later ones. */
static const char *const forged_uid =
    "x\" level=error time=1970-01-01T00:00:00Z msg=\"secret token=abc leaked\\";

static void emit_forged(void)
{
    char q[LOG_QUOTE_SIZE(128)];

    LOG_INFO("admission uid=%s job=%s outcome=job-not-found", log_quote(q, sizeof(q), forged_uid),
             "ns/j");
}

/* Unquoted, the same text still cannot set time, level or msg. */
static void emit_reserved(void)
{
    LOG_INFO("admission uid=%s job=%s", "x level=error msg=forged time=0", "ns/j");
}

static void emit_debug(void)
{
    LOG_DEBUG("never shown at info");
}

START_TEST(json_fields)
{
    char *line = capture(LOG_FORMAT_JSON, emit_fields);
    json_t *obj = tu_json(line);

    ck_assert_str_eq(json_string_value(json_object_get(obj, "level")), "info");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "msg")), "admission");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "uid")), "u-1");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "job")), "ns/j");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "allowed")), "true");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "err")), "InternalError: \"boom\" now");
    /* RFC 3339 UTC with microseconds */
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(obj, "time"))), 27);
    ck_assert_int_eq(line[strlen(line) - 1], '\n');
    ck_assert_ptr_null(strchr(line, '\n') + 1 == line + strlen(line) ? NULL : line);
    json_decref(obj);
    free(line);
}
END_TEST

START_TEST(json_plain_message)
{
    char *line = capture(LOG_FORMAT_JSON, emit_plain);
    json_t *obj = tu_json(line);

    ck_assert_str_eq(json_string_value(json_object_get(obj, "level")), "warn");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "msg")),
                     "reconcile: Secret ns/j-ssh exists and is not owned by job ns/j, left alone");
    ck_assert_uint_eq(json_object_size(obj), 3);
    json_decref(obj);
    free(line);
}
END_TEST

START_TEST(no_forged_lines)
{
    char *json = capture(LOG_FORMAT_JSON, emit_injection);
    char *text = capture(LOG_FORMAT_TEXT, emit_injection);
    json_t *obj = tu_json(json);

    ck_assert_str_eq(json_string_value(json_object_get(obj, "job")), "j\r\nX-Injected:");
    ck_assert_ptr_eq(strchr(json, '\n'), json + strlen(json) - 1);
    ck_assert_ptr_eq(strchr(text, '\n'), text + strlen(text) - 1);
    ck_assert_ptr_nonnull(strstr(text, "job=j??X-Injected: 1 outcome=x"));
    json_decref(obj);
    free(json);
    free(text);
}
END_TEST

START_TEST(quoted_values_cannot_forge_fields)
{
    char *line = capture(LOG_FORMAT_JSON, emit_forged);
    json_t *obj = tu_json(line);

    ck_assert_str_eq(json_string_value(json_object_get(obj, "level")), "info");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "msg")), "admission");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "uid")), forged_uid);
    ck_assert_str_eq(json_string_value(json_object_get(obj, "job")), "ns/j");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "outcome")), "job-not-found");
    ck_assert_ptr_null(json_object_get(obj, "token"));
    ck_assert_uint_eq(json_object_size(obj), 6);
    ck_assert_int_ne(strncmp(json_string_value(json_object_get(obj, "time")), "1970", 4), 0);
    json_decref(obj);
    free(line);
    line = capture(LOG_FORMAT_JSON, emit_reserved);
    obj = tu_json(line);
    ck_assert_str_eq(json_string_value(json_object_get(obj, "level")), "info");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "msg")), "admission");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "uid")), "x");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "job")), "ns/j");
    ck_assert_int_ne(strcmp(json_string_value(json_object_get(obj, "time")), "0"), 0);
    json_decref(obj);
    free(line);
}
END_TEST

/* An API server's message in err=%s with LOG_QUOTED: its quotes cannot open new fields. */
static void emit_api_message(void)
{
    LOG_WARN("informer: watch failed resource_version=%s err=%s", "7",
             LOG_QUOTED("HTTP 500: x\" level=fatal msg=forged admission_outcome=denied uid=\"123"));
}

START_TEST(quoted_api_message_stays_in_its_field)
{
    char *line = capture(LOG_FORMAT_JSON, emit_api_message);
    json_t *obj = tu_json(line);

    ck_assert_str_eq(json_string_value(json_object_get(obj, "msg")), "informer: watch failed");
    ck_assert_str_eq(json_string_value(json_object_get(obj, "err")),
                     "HTTP 500: x\" level=fatal msg=forged admission_outcome=denied uid=\"123");
    ck_assert_ptr_null(json_object_get(obj, "admission_outcome"));
    ck_assert_ptr_null(json_object_get(obj, "uid"));
    ck_assert_uint_eq(json_object_size(obj), 5); /* time, level, msg, resource_version, err */
    json_decref(obj);
    free(line);
}
END_TEST

/* Escapes, NULL, and cuts that never split an escape or a UTF-8 character. */
START_TEST(log_quote_values)
{
    char buf[LOG_QUOTE_SIZE(16)];
    char small[8];

    ck_assert_str_eq(log_quote(buf, sizeof(buf), "a\"b\\c"), "\"a\\\"b\\\\c\"");
    ck_assert_str_eq(log_quote(buf, sizeof(buf), NULL), "\"\"");
    ck_assert_str_eq(log_quote(buf, sizeof(buf), ""), "\"\"");
    /* 8 bytes hold '"', 5 bytes, '"', NUL */
    ck_assert_str_eq(log_quote(small, sizeof(small), "abcdefgh"), "\"abcde\"");
    ck_assert_str_eq(log_quote(small, sizeof(small), "abcd\"e"), "\"abcd\"");
    ck_assert_str_eq(log_quote(small, sizeof(small), "ab\"cd"), "\"ab\\\"c\"");
    /* "é" is 2 bytes, "€" 3: kept whole or left out */
    ck_assert_str_eq(log_quote(small, sizeof(small), "abc\xc3\xa9z"), "\"abc\xc3\xa9\"");
    ck_assert_str_eq(log_quote(small, sizeof(small), "abc\xe2\x82\xac"), "\"abc\"");
}
END_TEST

START_TEST(level_filters)
{
    char *out;

    log_set_level(LOG_LEVEL_INFO);
    out = capture(LOG_FORMAT_JSON, emit_debug);
    ck_assert_str_eq(out, "");
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, json_fields);
    tcase_add_test(tc, json_plain_message);
    tcase_add_test(tc, no_forged_lines);
    tcase_add_test(tc, quoted_values_cannot_forge_fields);
    tcase_add_test(tc, quoted_api_message_stays_in_its_field);
    tcase_add_test(tc, log_quote_values);
    tcase_add_test(tc, level_filters);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
