/* warnings.c - see warnings.h. Request-owned; no locking. */
#include "webhook/warnings.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* vsnprintf may cut a multi-byte character; JSON strings must stay valid UTF-8. */
static void trim_partial_utf8(char *s)
{
    size_t len = strlen(s);
    size_t start = len;
    size_t need;
    unsigned char lead;

    while (start > 0 && ((unsigned char)s[start - 1] & 0xC0) == 0x80)
        start--;
    if (start == 0)
        return;
    lead = (unsigned char)s[start - 1];
    if (lead < 0xC0)
        return;
    need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    if (len - (start - 1) < need)
        s[start - 1] = '\0';
}

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
    trim_partial_utf8(buf);
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
