/*
 * log.h - leveled, one-line-per-event logging to stderr.
 *
 * Call sites write "event text key=value key=\"quoted value\"". In the default
 * JSON format each line is one object {"time","level","msg", key: value...}
 * (time RFC 3339 UTC with microseconds); the text format prints the line as is.
 * Level and format are process-wide settings made once at start-up, before
 * threads start; the macros check the level before formatting. Never log tokens,
 * keys, certificates or Secret data.
 */
#ifndef WH_LOG_H
#define WH_LOG_H

enum log_level { LOG_LEVEL_ERROR = 0, LOG_LEVEL_WARN = 1, LOG_LEVEL_INFO = 2, LOG_LEVEL_DEBUG = 3 };
enum log_format { LOG_FORMAT_JSON = 0, LOG_FORMAT_TEXT = 1 };

extern int log_level_current;

/** Set the level (clamped to ERROR..DEBUG). Call before threads start. */
void log_set_level(int level);

/** JSON (default) or text lines. Call before threads start. */
void log_set_format(enum log_format format);

/** Write one line to stderr in the current format. Use the macros instead. */
void log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOG_AT(lvl, ...) \
    do { if ((lvl) <= log_level_current) log_write((lvl), __VA_ARGS__); } while (0)
#define LOG_ERROR(...) LOG_AT(LOG_LEVEL_ERROR, __VA_ARGS__)
#define LOG_WARN(...)  LOG_AT(LOG_LEVEL_WARN, __VA_ARGS__)
#define LOG_INFO(...)  LOG_AT(LOG_LEVEL_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) LOG_AT(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
