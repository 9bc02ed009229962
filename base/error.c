/* SPDX-License-Identifier: Apache-2.0 */
/* error.c - see error.h. No state; safe from any thread. */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int wh_error_set(struct wh_error *err, int code, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return code;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    wh_utf8_sanitize(err->msg);
    return code;
}

/* Length of the well-formed UTF-8 sequence at p, 0 when it is not one (RFC 3629 §4). */
static size_t utf8_seq_len(const unsigned char *p)
{
    unsigned char c = p[0];

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
        unsigned char hi = c == 0xED ? 0x9F : 0xBF;

        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
        unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;

        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

void wh_utf8_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;

    while (*p != '\0') {
        size_t n = utf8_seq_len(p);

        if (n == 0) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

void wh_error_clear(struct wh_error *err)
{
    if (err == NULL)
        return;
    err->code = 0;
    err->msg[0] = '\0';
}

const char *wh_error_str(int code)
{
    switch (code) {
    case WH_OK: return "ok";
    case WH_DECLINED: return "declined";
    case WH_ENOMEM: return "out of memory";
    case WH_EINVAL: return "invalid";
    case WH_ENOTFOUND: return "not found";
    case WH_EEXISTS: return "already exists";
    case WH_ECONFLICT: return "conflict";
    case WH_EGONE: return "gone";
    case WH_ETIMEOUT: return "timeout";
    case WH_EAPI: return "api error";
    case WH_ETOOBIG: return "too big";
    case WH_EBUSY: return "busy";
    case WH_EWOULDBLOCK: return "would block";
    default: return "error";
    }
}
