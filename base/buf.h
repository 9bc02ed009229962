/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf.h - a growable byte buffer with a size cap (curl's lib/curlx/dynbuf.h, whose
 * `toobig` is our `max`).
 *
 * The content is always NUL-terminated once anything was allocated, so text can be
 * read from data directly; binary content may hold NULs (len counts them). Memory
 * grows by doubling as bytes arrive, never past max + 1, so what a peer announces
 * does not decide what we allocate. The first failed append (WH_ENOMEM, WH_ETOOBIG)
 * is kept in rc and every later append returns it, so a builder checks once at the
 * end (buf_take); buf_reset clears it.
 *
 * A struct buf is caller-owned (on the stack or in a larger struct): buf_init, then
 * buf_dispose (safe to repeat). Not thread-safe: one thread at a time.
 */
#ifndef WH_BUF_H
#define WH_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

/* A max for "no cap of our own": half the address space, so sizes never overflow. */
#define BUF_NO_MAX (SIZE_MAX / 4)

struct buf {
    char *data;   /* malloc'd content + NUL; NULL until the first growth */
    size_t len;   /* content bytes, the NUL not counted */
    size_t alloc; /* bytes allocated at data */
    size_t max;   /* most content bytes it may hold (<= BUF_NO_MAX) */
    int rc;       /* 0, or the first failure (WH_ENOMEM, WH_ETOOBIG) until buf_reset */
};

/** Make b empty, holding at most max bytes (clamped to BUF_NO_MAX); allocates nothing. */
void buf_init(struct buf *b, size_t max);

/** Free b's memory and make it empty again with the same max; safe to repeat. */
void buf_dispose(struct buf *b);

/** Empty b and clear its rc, keeping its memory for the next content. */
void buf_reset(struct buf *b);

/**
 * Make room for n more bytes (and the NUL) without changing the content, so a
 * caller can write up to n bytes at data + len itself and then add them to len.
 * @return 0; WH_ETOOBIG when len + n would pass max; WH_ENOMEM; or the rc of an
 * earlier failure. A failure leaves the content as it was.
 */
int buf_reserve(struct buf *b, size_t n) WH_WARN_UNUSED;

/** Append n bytes of data (borrowed; may hold NULs). @return as buf_reserve. */
int buf_append(struct buf *b, const void *data, size_t n) WH_WARN_UNUSED;

/** Append the NUL-terminated string s (borrowed). @return as buf_reserve. */
int buf_append_str(struct buf *b, const char *s) WH_WARN_UNUSED;

/** Append v in decimal ("-" and its digits, as printf's "%lld"). @return as buf_reserve. */
int buf_append_decimal(struct buf *b, long long v) WH_WARN_UNUSED;

/**
 * Append printf-formatted text. @return as buf_reserve; WH_ERROR (kept in rc)
 * when vsnprintf fails (an invalid format or a wide character it cannot convert).
 */
int buf_appendf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3))) WH_WARN_UNUSED;

/** buf_appendf with a va_list (used, not ended: the caller calls va_end). */
int buf_vappendf(struct buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0))) WH_WARN_UNUSED;

/**
 * Append everything f (borrowed, left open) still has to give, up to EOF.
 * @return 0; WH_ETOOBIG once the content would pass max (what was read stays);
 * WH_ERROR on a read error, with errno from the read (EIO when it set none);
 * WH_ENOMEM.
 */
int buf_append_stream(struct buf *b, FILE *f) WH_WARN_UNUSED;

/**
 * Record a failure of the caller's own (rc < 0: a piece it could not build) as if
 * an append had failed, so later appends and buf_take fail too. The first failure
 * stays; rc >= 0 does nothing.
 */
void buf_fail(struct buf *b, int rc);

/** Cut the content to its first len bytes (len <= b->len; a larger len does nothing). */
void buf_truncate(struct buf *b, size_t len);

/** The content as a NUL-terminated string, borrowed from b ("" while nothing was allocated). */
const char *buf_cstr(const struct buf *b);

/**
 * Hand the content to the caller: b's own malloc'd, NUL-terminated memory (not a
 * copy; free() it), its length in *len_out (may be NULL); "" when b is empty. b is
 * left empty and its rc cleared. @return NULL, with b disposed, when an append had failed (b->rc < 0)
 * or nothing could be allocated for an empty content.
 */
char *buf_take(struct buf *b, size_t *len_out) WH_WARN_UNUSED;

#endif
