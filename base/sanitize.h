/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sanitize.h - untrusted text made safe to show: one line, printable, short.
 *
 * Text a peer controls (a URL, a method, a header, an annotation, a parser's
 * quote of raw input) reaches log lines, error messages and render output. Each
 * use needs one of three things: no control bytes (a CR/LF would forge a second
 * log line), printable ASCII only (where the bytes may not be UTF-8 at all, as a
 * URL-decoded path), or a length cap that never cuts a UTF-8 character (a JSON
 * string must stay valid UTF-8). A replaced byte becomes '?'. "Control" means
 * C0 (< 0x20), DEL and C1 (U+0080-U+009F, the two bytes 0xC2 0x80-0x9F): a
 * terminal acts on all three, and none is printable text.
 *
 * For making arbitrary bytes valid UTF-8 see wh_utf8_sanitize (base/error.h); for
 * a log field value that must not close its quotes, log_quote (base/log.h).
 * Pure functions; thread-safe.
 */
#ifndef WH_SANITIZE_H
#define WH_SANITIZE_H

#include <stddef.h>

#define SANITIZE_CONTROLS 0x1u /* C0, DEL and C1 controls become '?'; other UTF-8 stays */
#define SANITIZE_ASCII    0x2u /* every byte outside printable ASCII (0x20-0x7E) becomes '?' */
#define SANITIZE_ELLIPSIS 0x4u /* a cut copy ends in "..." */

/** In place: SANITIZE_CONTROLS on s (NUL-terminated), so it stays one line. */
void sanitize_controls(char *s);

/** In place: SANITIZE_ASCII on s (NUL-terminated). */
void sanitize_ascii(char *s);

/**
 * Copy s (NULL is "") into buf of len bytes, cut to at most max bytes of s and to
 * what fits, and filtered by flags (SANITIZE_CONTROLS or SANITIZE_ASCII, and
 * SANITIZE_ELLIPSIS to mark a cut with "..."). Without SANITIZE_ASCII a cut never
 * falls inside a UTF-8 sequence. buf is the caller's; len >= 4 with
 * SANITIZE_ELLIPSIS, len >= 1 otherwise (a smaller len leaves buf untouched and
 * gives ""). @return buf (or "" as said).
 */
const char *sanitize_copy(char *buf, size_t len, const char *s, size_t max, unsigned flags);

#endif
