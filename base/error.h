/* SPDX-License-Identifier: Apache-2.0 */
/*
 * error.h - error codes and the caller-owned error record.
 *
 * Functions return int: 0 on success, WH_DECLINED (> 0) for "not applicable,
 * not an error", and a negative WH_E* code on failure. The message travels in a
 * struct wh_error on the caller's stack (NULL allowed), as jansson's json_error_t.
 * Thread-safe: no hidden state.
 */
#ifndef WH_ERROR_H
#define WH_ERROR_H

#define WH_OK        0
#define WH_DECLINED  1    /* not applicable; not an error */
#define WH_ERROR     (-1) /* generic failure */
#define WH_ENOMEM    (-2)
#define WH_EINVAL    (-3) /* bad input */
#define WH_ENOTFOUND (-4) /* 404 NotFound */
#define WH_EEXISTS   (-5) /* 409 AlreadyExists */
#define WH_ECONFLICT (-6) /* 409 Conflict */
#define WH_EGONE     (-7) /* 410 Gone / Expired */
#define WH_ETIMEOUT  (-8)
#define WH_EAPI      (-9)  /* any other API server or transport failure */
#define WH_ETOOBIG   (-10) /* input over a size cap */
#define WH_EBUSY     (-11) /* a local limit is reached; try again later */
/* Only a call that waits (an API request) would answer: ask again where waiting is
 * allowed (plugins/jobsource.h get_nowait). */
#define WH_EWOULDBLOCK (-12)

/* As an admission denial's message (mutate.h): a conflict names four values. */
#define WH_ERROR_MSG_MAX 512

struct wh_error {
    int code;                   /* one of WH_E*, 0 when unset */
    char msg[WH_ERROR_MSG_MAX]; /* one line, lower case, no trailing period */
};

#define WH_WARN_UNUSED __attribute__((warn_unused_result))

/**
 * Fill err (may be NULL) with code and a printf-formatted message, truncated to
 * WH_ERROR_MSG_MAX - 1 bytes.
 * @return code, so callers can write `return wh_error_set(err, WH_EINVAL, ...)`.
 */
int wh_error_set(struct wh_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** Reset err (may be NULL) to "no error". */
void wh_error_clear(struct wh_error *err);

/**
 * Make s valid UTF-8 in place: every byte that does not start a complete,
 * well-formed sequence (RFC 3629: no overlongs, surrogates or code points above
 * U+10FFFF) becomes '?'. Text cut to fit a buffer, or built from user input,
 * must pass through this before it becomes a JSON string (jansson refuses
 * invalid UTF-8).
 */
void wh_utf8_sanitize(char *s);

/** A short constant name for code ("not found", "timeout", ...); never NULL. */
const char *wh_error_str(int code);

#endif
