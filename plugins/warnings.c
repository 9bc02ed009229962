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

void warnings_add(struct warnings *w, const char *fmt, ...)
{
    char buf[WARNINGS_LEN_MAX];
    va_list ap;

    if (w == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    /* Cut to fit, or built from user text: it must stay valid UTF-8 for JSON, and one
     * printable line for kube-apiserver's Warning header and the user's terminal (C0,
     * DEL and C1 controls, which sanitize_controls finds in valid UTF-8 only). */
    wh_utf8_sanitize(buf);
    sanitize_controls(buf);
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->items[i], buf) == 0)
            return;
    if (w->n == WARNINGS_MAX)
        return;
    memcpy(w->items[w->n++], buf, sizeof(buf));
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
