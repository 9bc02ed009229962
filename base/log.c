/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c - see log.h. One line per event on stderr, JSON by default: the event
 * text becomes "msg" and every key=value token after it (value optionally
 * "quoted") becomes a field, so call sites keep the one-line key=value style.
 * log_write is thread-safe: the line is built in a buffer and written with one
 * fwrite under stdio's own lock.
 */
#include "base/log.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/sanitize.h"

int log_level_current = LOG_LEVEL_INFO;
static enum log_format log_format_current = LOG_FORMAT_JSON;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_level(int level)
{
    if (level < LOG_LEVEL_ERROR)
        level = LOG_LEVEL_ERROR;
    if (level > LOG_LEVEL_DEBUG)
        level = LOG_LEVEL_DEBUG;
    log_level_current = level;
}

void log_set_format(enum log_format format)
{
    log_format_current = format;
}

static bool key_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || c == '_' || (!first && ((c >= '0' && c <= '9') || c == '.'));
}

/* Length of a "key=" prefix at s (key [a-z_][a-z0-9_.]*), 0 when there is none. */
static size_t key_len(const char *s)
{
    size_t n = 0;

    while (key_char(s[n], n == 0))
        n++;
    return n > 0 && s[n] == '=' ? n : 0;
}

const char *log_quote(char *buf, size_t len, const char *s)
{
    size_t n = 0;
    size_t i = 0;

    if (s == NULL)
        s = "";
    buf[n++] = '"';
    while (s[i] != '\0') {
        size_t k = 1; /* bytes of this character: a UTF-8 lead byte takes its tail */
        size_t esc = s[i] == '"' || s[i] == '\\';

        if ((unsigned char)s[i] >= 0xc0)
            while (((unsigned char)s[i + k] & 0xc0) == 0x80)
                k++;
        if (n + esc + k + 2 > len) /* room for it, the closing quote and the NUL */
            break;
        if (esc)
            buf[n++] = '\\';
        memcpy(buf + n, s + i, k);
        n += k;
        i += k;
    }
    buf[n++] = '"';
    buf[n] = '\0';
    return buf;
}

/* Fields a call site's text can never set: the line's own. */
static bool reserved_key(const char *key)
{
    return strcmp(key, "time") == 0 || strcmp(key, "level") == 0 || strcmp(key, "msg") == 0;
}

/*
 * Split "event text k1=v1 k2=\"v 2\"" into fields of obj. Values are copied
 * into scratch (same size as msg); quotes and \" escapes are removed.
 */
static void split_fields(json_t *obj, char *msg)
{
    char *p = msg;
    char *fields = NULL;

    /* The event text ends where the first " key=" begins. */
    for (char *q = msg; *q != '\0'; q++) {
        if ((q == msg || q[-1] == ' ') && key_len(q) > 0) {
            fields = q;
            break;
        }
    }
    if (fields == NULL) {
        json_object_set_new(obj, "msg", json_string(msg));
        return;
    }
    if (fields > msg)
        fields[-1] = '\0';
    json_object_set_new(obj, "msg", json_string(fields > msg ? msg : ""));
    p = fields;
    while (*p != '\0') {
        size_t klen = key_len(p);
        char *key = p;
        char *val;
        char *out;

        if (klen == 0) { /* stray text between fields: skip the word */
            while (*p != '\0' && *p != ' ')
                p++;
            while (*p == ' ')
                p++;
            continue;
        }
        key[klen] = '\0';
        p += klen + 1;
        val = out = p;
        if (*p == '"') {
            /* Call sites do not escape: a quote closes the value only where the
             * line or the next key=value begins after it. */
            p++;
            while (*p != '\0') {
                if (*p == '"' && (p[1] == '\0' || (p[1] == ' ' && key_len(p + 2) > 0)))
                    break;
                if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
                    p++;
                *out++ = *p++;
            }
            if (*p == '"')
                p++;
        } else {
            while (*p != '\0' && *p != ' ')
                *out++ = *p++;
        }
        {
            char end = *p;

            *out = '\0';
            if (!reserved_key(key))
                json_object_set_new(obj, key, json_string(val));
            if (end == '\0')
                break;
        }
        p++;
        while (*p == ' ')
            p++;
    }
}

void log_write(int level, const char *fmt, ...)
{
    char msg[2048];
    char ts[40];
    struct timespec now;
    struct tm tm;
    va_list ap;
    const char *lname = level_names[level < 0 ? 0 : level > 3 ? 3 : level];

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + strlen(ts), sizeof(ts) - strlen(ts), ".%06ldZ", now.tv_nsec / 1000L);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (log_format_current == LOG_FORMAT_JSON) {
        json_t *obj = json_pack("{s:s, s:s}", "time", ts, "level", lname);
        char *line = NULL;

        if (obj != NULL) {
            split_fields(obj, msg);
            line = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII);
            json_decref(obj);
        }
        if (line != NULL) {
            fprintf(stderr, "%s\n", line);
            free(line);
            return;
        }
        /* No memory for JSON: fall through to the plain line rather than lose it. */
    }
    /* Values come from requests: a CR/LF must not forge a second log line. */
    sanitize_controls(msg);
    fprintf(stderr, "%s level=%s %s\n", ts, lname, msg);
}
