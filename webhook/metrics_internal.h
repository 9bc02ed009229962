/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_internal.h - the process metrics of webhook/metrics.c, exposed for
 * tests/webhook/check_metrics.c. Not for other modules: they get the values through
 * metrics_render.
 *
 * The process_* families as Prometheus' client libraries export them on Linux
 * (client_golang prometheus/process_collector_procfsenabled.go, through
 * github.com/prometheus/procfs): from /proc/self/stat (proc(5): utime, stime, starttime,
 * vsize, rss), the boot time of /proc/stat (btime), the entries of /proc/self/fd and
 * getrlimit(RLIMIT_NOFILE). Any thread; nothing is cached.
 */
#ifndef WH_METRICS_INTERNAL_H
#define WH_METRICS_INTERNAL_H

#include "base/error.h"

struct metrics_process {
    double cpu_seconds;                /* user + system CPU time, seconds */
    double start_time_seconds;         /* process start, Unix seconds */
    unsigned long long virtual_bytes;  /* vsize */
    unsigned long long resident_bytes; /* rss pages x page size */
    unsigned long long open_fds;       /* entries of /proc/self/fd (the reader's own included) */
    unsigned long long max_fds;        /* soft RLIMIT_NOFILE */
};

/**
 * Fill the /proc/self/stat part of out (cpu_seconds, start_time_seconds, virtual_bytes,
 * resident_bytes) from the text of that file, proc(5). The command name (field 2) may
 * hold spaces and parentheses: fields are counted from its last ')'.
 * @param[out] out   filled on success; untouched members keep their values
 * @param stat       the file's text, NUL-terminated (borrowed)
 * @param ticks      clock ticks per second, sysconf(_SC_CLK_TCK)
 * @param page_size  bytes per page, sysconf(_SC_PAGESIZE)
 * @param boot_time  the system's boot time, Unix seconds (btime of /proc/stat)
 * @return 0, or WH_EINVAL (message in err) when the text has too few fields or a field is
 *         not a number; out is then untouched.
 */
int metrics_process_parse_stat(struct metrics_process *out, const char *stat, long ticks,
                               long page_size, double boot_time,
                               struct wh_error *err) WH_WARN_UNUSED;

/**
 * Read every member of out for the calling process.
 * @param[out] out  filled on success
 * @return 0; WH_ERROR when a file of /proc cannot be read (no procfs mounted, not Linux)
 *         or getrlimit fails, WH_EINVAL when /proc/self/stat cannot be parsed; the message
 *         in err names the file.
 */
int metrics_process_read(struct metrics_process *out, struct wh_error *err) WH_WARN_UNUSED;

#endif
