/* SPDX-License-Identifier: Apache-2.0 */
/* warnings.c - see warnings.h. Request-owned; no locking. */
#include "plugins/warnings.h"

#include "base/error.h"
#include "base/sanitize.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void warnings_init(struct warnings *w)
{
    w->n = 0;
}

static void add(struct warnings *w, const char *key, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void add(struct warnings *w, const char *key, const char *fmt, va_list ap)
{
    char buf[WARNINGS_LEN_MAX];

    if (key == NULL)
        key = "";
    vsnprintf(buf, sizeof(buf), fmt, ap);
    /* Cut to fit, or built from user text: it must stay valid UTF-8 for JSON, and one
     * printable line for kube-apiserver's Warning header and the user's terminal (C0,
     * DEL and C1 controls, which sanitize_controls finds in valid UTF-8 only). */
    wh_utf8_sanitize(buf);
    sanitize_controls(buf);
    for (size_t i = 0; i < w->n; i++) {
        if (strcmp(w->items[i], buf) == 0) {
            if (w->keys[i][0] == '\0')
                snprintf(w->keys[i], sizeof(w->keys[i]), "%s", key);
            return;
        }
    }
    if (w->n == WARNINGS_MAX)
        return;
    snprintf(w->keys[w->n], sizeof(w->keys[w->n]), "%s", key);
    memcpy(w->items[w->n++], buf, sizeof(buf));
}

void warnings_add(struct warnings *w, const char *fmt, ...)
{
    va_list ap;

    if (w == NULL)
        return;
    va_start(ap, fmt);
    add(w, NULL, fmt, ap);
    va_end(ap);
}

void warnings_add_keyed(struct warnings *w, const char *key, const char *fmt, ...)
{
    va_list ap;

    if (w == NULL)
        return;
    va_start(ap, fmt);
    add(w, key, fmt, ap);
    va_end(ap);
}

bool warnings_has_key(const struct warnings *w, size_t n, const char *key)
{
    if (w == NULL || key == NULL || key[0] == '\0')
        return false;
    for (size_t i = 0; i < n && i < w->n; i++)
        if (strncmp(w->keys[i], key, WARNINGS_KEY_MAX - 1) == 0)
            return true;
    return false;
}

json_t *warnings_to_json(const struct warnings *w)
{
    json_t *arr = json_array();

    if (arr == NULL)
        return NULL;
    for (size_t i = 0; w != NULL && i < w->n; i++) {
        if (json_array_append_new(arr, json_string(w->items[i])) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}
