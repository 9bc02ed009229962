/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf.c - the capped growable byte buffer of buf.h.
 *
 * Threads: none of its own; a struct buf is used by one thread at a time.
 */
#include "base/buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MIN_ALLOC 64 /* first allocation, bytes: small pieces need not realloc at once */

void buf_init(struct buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
    b->max = max < BUF_NO_MAX ? max : BUF_NO_MAX;
    b->rc = 0;
}

void buf_dispose(struct buf *b)
{
    free(b->data);
    buf_init(b, b->max);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    b->rc = 0;
    if (b->data != NULL)
        b->data[0] = '\0';
}

/* Record the first failure; @return rc. */
static int fail(struct buf *b, int rc)
{
    if (b->rc == 0)
        b->rc = rc;
    return rc;
}

int buf_reserve(struct buf *b, size_t n)
{
    size_t need;
    size_t alloc;
    char *grown;

    if (b->rc < 0)
        return b->rc;
    if (n > b->max - b->len)
        return fail(b, WH_ETOOBIG);
    need = b->len + n + 1; /* <= BUF_NO_MAX + 1: no overflow below */
    if (need <= b->alloc)
        return 0;
    /* Double, so a stream of small appends costs O(log n) reallocs; never past max + 1. */
    alloc = b->alloc > 0 ? b->alloc : BUF_MIN_ALLOC;
    while (alloc < need)
        alloc *= 2;
    if (alloc > b->max + 1)
        alloc = b->max + 1;
    grown = realloc(b->data, alloc);
    if (grown == NULL)
        return fail(b, WH_ENOMEM);
    if (b->data == NULL)
        grown[0] = '\0';
    b->data = grown;
    b->alloc = alloc;
    return 0;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
    int rc = buf_reserve(b, n);

    if (rc < 0)
        return rc;
    if (n > 0)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int buf_append_str(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_append_decimal(struct buf *b, long long v)
{
    char text[24];
    char *c = text + sizeof(text);
    /* Negated as unsigned, so the most negative value has a magnitude too. */
    unsigned long long m = v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v;

    do {
        *--c = (char)('0' + m % 10);
        m /= 10;
    } while (m > 0);
    if (v < 0)
        *--c = '-';
    return buf_append(b, c, (size_t)(text + sizeof(text) - c));
}

int buf_vappendf(struct buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;
    int rc;

    if (b->rc < 0)
        return b->rc;
    /* Measure first: the room that is already there may be enough, often is. */
    va_copy(ap2, ap);
    n = vsnprintf(b->data != NULL ? b->data + b->len : NULL,
                  b->data != NULL ? b->alloc - b->len : 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        if (b->data != NULL)
            b->data[b->len] = '\0';
        return fail(b, WH_ERROR);
    }
    if (b->data != NULL && (size_t)n < b->alloc - b->len) {
        b->len += (size_t)n;
        return 0;
    }
    if (b->data != NULL)
        b->data[b->len] = '\0'; /* the cut attempt must not stay */
    rc = buf_reserve(b, (size_t)n);
    if (rc < 0)
        return rc;
    va_copy(ap2, ap);
    vsnprintf(b->data + b->len, b->alloc - b->len, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
    return 0;
}

int buf_appendf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = buf_vappendf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int buf_append_stream(struct buf *b, FILE *f)
{
    for (;;) {
        size_t room = b->max - b->len;
        size_t n;
        int rc;

        if (room == 0) {
            /* Full: one more byte means too big. */
            if (fgetc(f) != EOF)
                return fail(b, WH_ETOOBIG);
            if (ferror(f))
                break;
            return 0;
        }
        /* 64 KiB at a time at least; then whatever the doubling gave, up to max. */
        rc = buf_reserve(b, room < 64 * 1024 ? room : 64 * 1024);
        if (rc < 0)
            return rc;
        if (room > b->alloc - 1 - b->len)
            room = b->alloc - 1 - b->len;
        errno = 0;
        n = fread(b->data + b->len, 1, room, f);
        b->len += n;
        b->data[b->len] = '\0';
        if (n < room) {
            if (ferror(f))
                break;
            return 0; /* EOF */
        }
    }
    if (errno == 0)
        errno = EIO;
    return WH_ERROR;
}

void buf_fail(struct buf *b, int rc)
{
    if (rc < 0)
        (void)fail(b, rc);
}

void buf_truncate(struct buf *b, size_t len)
{
    if (len >= b->len)
        return;
    b->len = len;
    b->data[len] = '\0';
}

const char *buf_cstr(const struct buf *b)
{
    return b->data != NULL ? b->data : "";
}

char *buf_take(struct buf *b, size_t *len_out)
{
    char *data;

    /* An empty buffer still hands over a "" the caller can free. */
    if (b->data == NULL && buf_reserve(b, 0) < 0) {
        /* the failure is in b->rc */
    }
    if (b->rc < 0) {
        buf_dispose(b);
        return NULL;
    }
    data = b->data;
    if (len_out != NULL)
        *len_out = b->len;
    b->data = NULL; /* now the caller's */
    buf_init(b, b->max);
    return data;
}
