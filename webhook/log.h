/*
 * log.h - leveled, one-line-per-event logging to stderr in key=value form.
 *
 * The level is a process-wide setting made once at start-up (log_set_level),
 * before threads start; the macros check it before formatting. Never log
 * tokens, keys or Secret data.
 */
#ifndef WH_LOG_H
#define WH_LOG_H

enum log_level { LOG_LEVEL_ERROR = 0, LOG_LEVEL_WARN = 1, LOG_LEVEL_INFO = 2, LOG_LEVEL_DEBUG = 3 };

extern int log_level_current;

/** Set the level (clamped to ERROR..DEBUG). Call before threads start. */
void log_set_level(int level);

/** Write one line "time level msg" to stderr. Use the macros instead. */
void log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOG_AT(lvl, ...) \
    do { if ((lvl) <= log_level_current) log_write((lvl), __VA_ARGS__); } while (0)
#define LOG_ERROR(...) LOG_AT(LOG_LEVEL_ERROR, __VA_ARGS__)
#define LOG_WARN(...)  LOG_AT(LOG_LEVEL_WARN, __VA_ARGS__)
#define LOG_INFO(...)  LOG_AT(LOG_LEVEL_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) LOG_AT(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
