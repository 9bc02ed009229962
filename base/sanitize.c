/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sanitize.c - the text sanitisers of sanitize.h.
 *
 * Threads: none; pure functions over the caller's buffers.
 */
#include "base/sanitize.h"

#include <stdbool.h>
#include <string.h>

static bool replaced(unsigned char c, unsigned flags)
{
    if (flags & SANITIZE_ASCII)
        return c < 0x20 || c > 0x7E;
    if (flags & SANITIZE_CONTROLS)
        return c < 0x20 || c == 0x7F;
    return false;
}

/*
 * Whether s[i] opens a C1 control (U+0080-U+009F: 0xC2 0x80-0x9F in UTF-8), which
 * terminals act on as they do on C0 ones (0x9B is CSI) and which is no printable
 * text in a warning; its two bytes become "??" (a replaced byte becomes '?').
 */
static bool c1_control(const char *s, size_t i, size_t n)
{
    return i + 1 < n && (unsigned char)s[i] == 0xC2 && (unsigned char)s[i + 1] >= 0x80
        && (unsigned char)s[i + 1] <= 0x9F;
}

static void filter(char *s, size_t n, unsigned flags)
{
    for (size_t i = 0; i < n; i++) {
        if ((flags & SANITIZE_CONTROLS) && !(flags & SANITIZE_ASCII) && c1_control(s, i, n)) {
            s[i] = '?';
            s[++i] = '?';
        } else if (replaced((unsigned char)s[i], flags)) {
            s[i] = '?';
        }
    }
}

void sanitize_controls(char *s)
{
    filter(s, strlen(s), SANITIZE_CONTROLS);
}

void sanitize_ascii(char *s)
{
    filter(s, strlen(s), SANITIZE_ASCII);
}

const char *sanitize_copy(char *buf, size_t len, const char *s, size_t max, unsigned flags)
{
    size_t tail = (flags & SANITIZE_ELLIPSIS) ? 3 : 0; /* "..." */
    size_t n;
    size_t keep;

    if (len < tail + 1)
        return "";
    if (s == NULL)
        s = "";
    n = strnlen(s, max < len ? len : max); /* no need to measure past what could be kept */
    if (n <= max && n < len) {
        memcpy(buf, s, n);
        buf[n] = '\0';
        filter(buf, n, flags);
        return buf;
    }
    keep = max < len - 1 - tail ? max : len - 1 - tail;
    /* Back off to the start of a UTF-8 character (unneeded when all of it turns ASCII). */
    if (!(flags & SANITIZE_ASCII))
        while (keep > 0 && ((unsigned char)s[keep] & 0xC0) == 0x80)
            keep--;
    memcpy(buf, s, keep);
    filter(buf, keep, flags);
    memcpy(buf + keep, "...", tail);
    buf[keep + tail] = '\0';
    return buf;
}
