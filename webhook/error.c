/* error.c - see error.h. No state; safe from any thread. */
#include "webhook/error.h"

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
    return code;
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
    default: return "error";
    }
}
