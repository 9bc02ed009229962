/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - leveled, one-line-per-event logging to stderr.
 *
 * Call sites write "event text key=value key=\"quoted value\"" (log_quote for
 * values a request controls). In the default
 * JSON format each line is one object {"time","level","msg", key: value...}
 * (time RFC 3339 UTC with microseconds); the text format prints the line as is.
 * Level and format are process-wide settings made once at start-up, before
 * threads start; the macros check the level before formatting. Never log tokens,
 * keys, certificates or Secret data.
 */
#ifndef WH_LOG_H
#define WH_LOG_H

#include <stddef.h>

#include "base/error.h"

enum log_level { LOG_LEVEL_ERROR = 0, LOG_LEVEL_WARN = 1, LOG_LEVEL_INFO = 2, LOG_LEVEL_DEBUG = 3 };
enum log_format { LOG_FORMAT_JSON = 0, LOG_FORMAT_TEXT = 1 };

extern int log_level_current;

/** Set the level (clamped to ERROR..DEBUG). Call before threads start. */
void log_set_level(int level);

/** JSON (default) or text lines. Call before threads start. */
void log_set_format(enum log_format format);

/** Write one line to stderr in the current format. Use the macros instead. */
void log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Bytes log_quote needs for a value of n bytes, quotes and NUL included (at most). */
#define LOG_QUOTE_SIZE(n) (2 * (n) + 3)

/**
 * s as a quoted field value for a call site's key=%s: '"', s with '\' and '"'
 * escaped by a '\', '"'. For values a request controls (an AdmissionReview's uid,
 * a pod's name, an API server's message): escaped, such a value cannot close its
 * field early and forge fields after it (log_write reads \" and \\ back).
 * Cut to fit len, never inside an escape or a UTF-8 character (len >= 3; NULL s
 * is ""). @return buf.
 */
const char *log_quote(char *buf, size_t len, const char *s);

/*
 * log_quote of s (quotes included) into a buffer alive in the enclosing block (a
 * compound literal), for a LOG_* argument written as a field, err=%s: text an API
 * server or a peer wrote, such as an error message, stays in its field.
 */
#define LOG_QUOTED(s)                                                                              \
    log_quote((char[LOG_QUOTE_SIZE(WH_ERROR_MSG_MAX)]){0}, LOG_QUOTE_SIZE(WH_ERROR_MSG_MAX), (s))

#define LOG_AT(lvl, ...)                                                                           \
    do {                                                                                           \
        if ((lvl) <= log_level_current)                                                            \
            log_write((lvl), __VA_ARGS__);                                                         \
    } while (0)
#define LOG_ERROR(...) LOG_AT(LOG_LEVEL_ERROR, __VA_ARGS__)
#define LOG_WARN(...)  LOG_AT(LOG_LEVEL_WARN, __VA_ARGS__)
#define LOG_INFO(...)  LOG_AT(LOG_LEVEL_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) LOG_AT(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
