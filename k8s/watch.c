/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch.c - a Kubernetes WATCH stream over libcurl (watch.h; docs/kube-api.md
 * §3.3).
 *
 * Design: each k8s_watch call makes its own CURL easy handle (a watch holds its
 * connection for minutes; sharing the thread's request handle would serialise
 * every other request of the thread behind it), configured by the client's
 * k8s_client_handle_setup so TLS, auth and User-Agent are the same. The write
 * callback cuts the chunked body into lines (a line over WATCH_MAX_LINE is an
 * error), decodes each with watch_decode_event and hands ADDED / MODIFIED /
 * DELETED / BOOKMARK to the caller's callback in stream order. A line buffer
 * grown past WATCH_BUF_KEEP by one big event is freed once that line is
 * handled, and the free pages handed back (heap_release_free), so a watch of
 * minutes does not keep its biggest event's memory (one 15 MiB event kept
 * 32 MB for the rest of the watch). An ERROR event
 * ends the watch (code 410 → WH_EGONE). A non-200 answer is collected and
 * decoded as a Status (410 → WH_EGONE); a 429 or 503 with Retry-After is
 * waited out here (at most WATCH_RETRY_AFTER_MAX_MS, stop flag honoured) before
 * the error is returned, so the caller's reconnect comes no sooner than the
 * server asked, as client-go's watch retries do.
 *
 * The progress callback, which libcurl calls about once a second even when no
 * byte arrives, enforces the idle timeout (no byte for idle_timeout_ms:
 * WH_ETIMEOUT, the way a client that expects bookmarks detects a dead path)
 * and honours the stop flag.
 *
 * How a watch ends: the server closing the stream cleanly (timeoutSeconds, a
 * terminated chunked body) → 0; the connection dropping mid-stream (reset, or
 * closed without the final chunk) → WH_EAPI with curl's message; either way
 * last_rv says where to resume.
 *
 * Threads: runs entirely on the calling thread; the only shared state is the
 * client (read-only) and its rate limiter (locked inside client.c).
 */
#include "k8s/watch.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/heap.h"
#include "base/log.h"
#include "k8s/client_internal.h"

#define WATCH_MAX_LINE           (16u * 1024 * 1024) /* bytes in one event line */
#define WATCH_BUF_KEEP           (1024u * 1024)      /* line buffer capacity kept between lines */
#define WATCH_MAX_ERRBODY        (64u * 1024)        /* bytes of a non-200 body kept */
#define WATCH_CONNECT_MS         10000L              /* connect timeout without an idle timeout */
#define WATCH_RETRY_AFTER_MAX_MS 60000L              /* longest Retry-After honoured */

static const struct {
    const char *name;
    enum watch_event_type type;
} event_types[] = {
    {"ADDED", WATCH_ADDED},       {"MODIFIED", WATCH_MODIFIED}, {"DELETED", WATCH_DELETED},
    {"BOOKMARK", WATCH_BOOKMARK}, {"ERROR", WATCH_ERROR},
};

int watch_decode_event(const char *line, size_t len, enum watch_event_type *type_out,
                       json_t **object_out, struct wh_error *err)
{
    json_error_t je;
    json_t *ev;
    json_t *obj;
    const char *t;
    size_t i;
    int rc;

    *object_out = NULL;
    if (line == NULL)
        return wh_error_set(err, WH_EINVAL, "watch event: no data");
    /* JSON_ALLOW_NUL: a \u0000 is valid in Kubernetes strings; refused, the watch ended at
     * that event and was resumed before it, forever. */
    ev = json_loadb(line, len, JSON_ALLOW_NUL, &je);
    if (ev == NULL)
        return wh_error_set(err, WH_EINVAL, "watch event: invalid JSON: %s", je.text);
    t = json_string_value(json_object_get(ev, "type"));
    obj = json_object_get(ev, "object");
    if (t == NULL) {
        rc = wh_error_set(err, WH_EINVAL, "watch event: no type");
        goto out;
    }
    if (!json_is_object(obj)) {
        rc = wh_error_set(err, WH_EINVAL, "watch event %.32s: object is not an object", t);
        goto out;
    }
    for (i = 0; i < sizeof(event_types) / sizeof(event_types[0]); i++) {
        if (strcmp(t, event_types[i].name) == 0) {
            *type_out = event_types[i].type;
            *object_out = json_incref(obj);
            rc = 0;
            goto out;
        }
    }
    rc = wh_error_set(err, WH_EINVAL, "watch event: unknown type \"%.32s\"", t);
out:
    json_decref(ev);
    return rc;
}

/* State of one watch, shared by the curl callbacks (all on the watching thread). */
struct watch_state {
    CURL *h;
    const struct watch_params *p;
    watch_fn fn;
    void *userdata;
    struct buf line;        /* the unfinished line (or the error body), WATCH_MAX_LINE at most */
    long http_code;         /* 0 until the first body byte */
    long long last_byte_ms; /* monotonic ms of the last byte (or the start) */
    char *rv;               /* resourceVersion of the last event handled (malloc'd) */
    int rc;                 /* why the transfer was aborted by us; 0 = it was not */
    bool stopped;           /* the stop flag ended it */
    struct wh_error *err;
};

/* Remember obj.metadata.resourceVersion as the last one seen. 0 or WH_ENOMEM. */
static int note_rv(struct watch_state *s, const json_t *obj)
{
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    char *d;

    if (rv == NULL || rv[0] == '\0')
        return 0;
    d = strdup(rv);
    if (d == NULL)
        return wh_error_set(s->err, WH_ENOMEM, "out of memory");
    free(s->rv);
    s->rv = d;
    return 0;
}

/* One complete line of the stream. 0 to go on, < 0 to end the watch (err filled). */
static int handle_line(struct watch_state *s, const char *line, size_t len)
{
    enum watch_event_type type;
    json_t *obj = NULL;
    size_t i;
    int rc;

    for (i = 0; i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'); i++)
        ;
    if (i == len)
        return 0; /* blank keep-alive line */
    rc = watch_decode_event(line, len, &type, &obj, s->err);
    if (rc < 0)
        return rc;
    if (type == WATCH_ERROR) {
        struct wh_error st = {0};

        rc = k8s_client_status_from_json(0, obj, &st);
        rc = wh_error_set(s->err, rc == WH_EGONE ? WH_EGONE : WH_EAPI, "watch %s: ERROR event: %s",
                          s->p->path, st.msg);
        goto out;
    }
    rc = s->fn(s->userdata, type, obj);
    if (rc < 0)
        goto out; /* the caller's own value, its err untouched */
    /* only after the callback took it: a resume must not skip an unhandled event */
    rc = note_rv(s, obj);
out:
    json_decref(obj);
    return rc;
}

/* err for a buf_append failure (WH_ETOOBIG: the line cap; WH_ENOMEM). */
static int line_error(struct watch_state *s, int rc)
{
    if (rc == WH_ETOOBIG)
        return wh_error_set(s->err, WH_EINVAL, "watch %s: event line longer than %u bytes",
                            s->p->path, WATCH_MAX_LINE);
    return wh_error_set(s->err, WH_ENOMEM, "out of memory");
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct watch_state *s = userdata;
    size_t n = size * nmemb;
    size_t start = 0;
    size_t i;
    int rc;

    s->last_byte_ms = clock_mono_ms();
    if (s->http_code == 0)
        curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->http_code);
    if (s->http_code != 200) {
        /* an error answer: keep the (Status) body for later, capped */
        size_t keep = WATCH_MAX_ERRBODY - s->line.len;

        if (buf_append(&s->line, ptr, n < keep ? n : keep) < 0)
            return 0;
        return n;
    }
    for (i = 0; i < n; i++) {
        if (ptr[i] != '\n')
            continue;
        if (s->line.len > 0) {
            /* the line began in an earlier chunk */
            rc = buf_append(&s->line, ptr + start, i - start);
            rc = rc < 0 ? line_error(s, rc) : handle_line(s, s->line.data, s->line.len);
            buf_reset(&s->line);
            if (s->line.alloc > WATCH_BUF_KEEP) {
                /* A big event is done: give its memory back, the next line regrows.
                 * mimalloc keeps freed pages while this thread waits on the stream, so
                 * ask for them to go back to the kernel (rare: big events only). */
                buf_dispose(&s->line);
                heap_release_free();
            }
        } else if (i - start > WATCH_MAX_LINE) {
            rc = line_error(s, WH_ETOOBIG);
        } else {
            rc = handle_line(s, ptr + start, i - start);
        }
        if (rc < 0) {
            s->rc = rc;
            return 0; /* abort: CURLE_WRITE_ERROR */
        }
        start = i + 1;
    }
    if (start < n) {
        rc = buf_append(&s->line, ptr + start, n - start);
        if (rc < 0) {
            s->rc = line_error(s, rc);
            return 0;
        }
    }
    return n;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    struct watch_state *s = userdata;

    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    if (s->p->stop != NULL && atomic_load(s->p->stop)) {
        s->stopped = true;
        return 1;
    }
    if (s->p->idle_timeout_ms > 0 && clock_mono_ms() - s->last_byte_ms > s->p->idle_timeout_ms) {
        s->rc = wh_error_set(s->err, WH_ETIMEOUT, "watch %s: no data for %ld ms", s->p->path,
                             s->p->idle_timeout_ms);
        return 1;
    }
    return 0;
}

/* Sleep the Retry-After of a 429/503 answer on s->h, in slices so that stop is seen. */
static void wait_retry_after(struct watch_state *s)
{
    curl_off_t secs = 0;
    long long until;

    if ((s->http_code != 429 && s->http_code != 503) || !k8s_client_retry_after(s->h, &secs))
        return;
    until = clock_mono_ms()
        + (secs * 1000 < WATCH_RETRY_AFTER_MAX_MS ? (long long)secs * 1000
                                                  : WATCH_RETRY_AFTER_MAX_MS);
    LOG_DEBUG("k8s: watch paused by the server path=%s status=%ld retry_after=%ld", s->p->path,
              s->http_code, (long)secs);
    while (clock_mono_ms() < until && !(s->p->stop != NULL && atomic_load(s->p->stop))) {
        long long left = until - clock_mono_ms();
        struct timespec ts = {0, (left > 100 ? 100 : (left > 0 ? left : 0)) * 1000000L};

        nanosleep(&ts, NULL);
    }
}

/* path?watch=1&allowWatchBookmarks=true[&resourceVersion=RV][&timeoutSeconds=N], malloc'd. */
static char *watch_path(const struct watch_params *p)
{
    char *erv = NULL;
    char *out;
    size_t n;

    if (p->resource_version != NULL) {
        erv = curl_easy_escape(NULL, p->resource_version, 0);
        if (erv == NULL)
            return NULL;
    }
    n = strlen(p->path) + (erv ? strlen(erv) : 0) + 128;
    out = malloc(n);
    if (out != NULL)
        snprintf(out, n, "%s%swatch=1&allowWatchBookmarks=true%s%s", p->path,
                 strchr(p->path, '?') != NULL ? "&" : "?", erv ? "&resourceVersion=" : "",
                 erv ? erv : "");
    if (out != NULL && p->timeout_seconds > 0) {
        size_t l = strlen(out);

        snprintf(out + l, n - l, "&timeoutSeconds=%ld", p->timeout_seconds);
    }
    curl_free(erv);
    return out;
}

int k8s_watch(struct k8s_client *c, const struct watch_params *p, watch_fn fn, void *userdata,
              char **last_rv, struct wh_error *err)
{
    struct watch_state s = {0};
    struct curl_slist *hdrs = NULL;
    char errbuf[CURL_ERROR_SIZE];
    char *path = NULL;
    char *url = NULL;
    CURLcode cc;
    int rc;

    if (c == NULL || p == NULL || p->path == NULL || p->path[0] != '/' || fn == NULL)
        return wh_error_set(err, WH_EINVAL, "watch: bad parameters");
    if (p->stop != NULL && atomic_load(p->stop))
        return 0;
    buf_init(&s.line, WATCH_MAX_LINE);
    s.p = p;
    s.fn = fn;
    s.userdata = userdata;
    s.err = err;
    rc = k8s_client_throttle(c, p->idle_timeout_ms > 0 ? p->idle_timeout_ms : WATCH_CONNECT_MS,
                             false, err);
    if (rc < 0)
        return rc;
    path = watch_path(p);
    url = path != NULL ? k8s_client_url(c, path) : NULL;
    s.h = curl_easy_init();
    if (path == NULL || url == NULL || s.h == NULL) {
        rc = wh_error_set(err, WH_ENOMEM, "watch %s: out of memory", p->path);
        goto out;
    }
    rc = k8s_client_handle_setup(c, s.h, err);
    if (rc < 0)
        goto out;
    rc = k8s_client_headers(c, "application/json", NULL, &hdrs, err);
    if (rc < 0)
        goto out;
    errbuf[0] = '\0';
    curl_easy_setopt(s.h, CURLOPT_URL, url);
    curl_easy_setopt(s.h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(s.h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(s.h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(s.h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(s.h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(s.h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(s.h, CURLOPT_XFERINFODATA, &s);
    curl_easy_setopt(s.h, CURLOPT_CONNECTTIMEOUT_MS,
                     p->idle_timeout_ms > 0 ? p->idle_timeout_ms : WATCH_CONNECT_MS);
    curl_easy_setopt(s.h, CURLOPT_ERRORBUFFER, errbuf);
    s.last_byte_ms = clock_mono_ms();
    LOG_DEBUG("k8s: watch started path=%s rv=%s", p->path,
              p->resource_version != NULL ? p->resource_version : "");
    cc = curl_easy_perform(s.h);
    if (s.stopped) {
        rc = 0;
        goto out;
    }
    if (s.rc != 0) {
        rc = s.rc; /* our own abort: idle, ERROR event, bad line, the callback's value */
        goto out;
    }
    if (s.http_code == 0)
        curl_easy_getinfo(s.h, CURLINFO_RESPONSE_CODE, &s.http_code);
    if (cc == CURLE_OK && s.http_code != 200) {
        struct wh_error st = {0};

        rc = k8s_client_status_error(s.http_code, s.line.data, s.line.len, &st);
        rc =
            wh_error_set(err, rc == WH_EGONE ? WH_EGONE : WH_EAPI, "watch %s: %s", p->path, st.msg);
        wait_retry_after(&s);
        goto out;
    }
    if (cc != CURLE_OK) {
        rc = wh_error_set(err, cc == CURLE_OPERATION_TIMEDOUT ? WH_ETIMEOUT : WH_EAPI,
                          "watch %s: %s", p->path, errbuf[0] ? errbuf : curl_easy_strerror(cc));
        goto out;
    }
    /* a clean end; a last line without its newline still counts */
    rc = s.line.len > 0 ? handle_line(&s, s.line.data, s.line.len) : 0;
    if (rc > 0)
        rc = 0;
out:
    if (s.rv != NULL && last_rv != NULL) {
        *last_rv = s.rv;
        s.rv = NULL; /* now owned by the caller */
    }
    LOG_DEBUG("k8s: watch ended path=%s rc=%s", p->path, wh_error_str(rc));
    k8s_client_headers_free(hdrs);
    curl_easy_cleanup(s.h);
    free(s.rv);
    buf_dispose(&s.line);
    free(url);
    free(path);
    return rc;
}
