/* log.c - see log.h. log_write is thread-safe: one fprintf per line. */
#include "webhook/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

int log_level_current = LOG_LEVEL_INFO;

void log_set_level(int level)
{
    if (level < LOG_LEVEL_ERROR)
        level = LOG_LEVEL_ERROR;
    if (level > LOG_LEVEL_DEBUG)
        level = LOG_LEVEL_DEBUG;
    log_level_current = level;
}

void log_write(int level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    char msg[1024];
    char ts[32];
    struct timespec now;
    struct tm tm;
    va_list ap;

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s.%03ldZ level=%s %s\n", ts, now.tv_nsec / 1000000L,
            names[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}
