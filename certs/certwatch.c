/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certwatch.c - see certwatch.h. One thread: poll(2) on an inotify descriptor
 * (the directories of the two files) and a wake-up pipe, with the stat
 * fallback period as timeout. After an event it waits for the directory to go
 * quiet (a kubelet update or an editor writes several entries), then compares
 * the files' fingerprints with those of the last attempt and, when they
 * differ, loads and applies the pair. The same loop re-checks the expiry of
 * the pair in service once per expiry_check_ms (certwatch_check_expiry).
 *
 * Threads: certwatch_start/certwatch_stop on the caller's thread; watch_main
 * on the watcher thread, which alone touches the fingerprints and the copy of
 * the current pair after start. The wake-up pipe is the only thing shared.
 */
#include "certs/certwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"

#define WATCH_MASK                                                                                 \
    (IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB  \
     | IN_DELETE_SELF | IN_MOVE_SELF)
#define SETTLE_ROUNDS_MAX 25 /* give up waiting for quiet after this many settle periods */

/* What identifies one version of a file (symlinks followed); all zero when it is missing. */
struct file_print {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    struct timespec ctime;
    int err; /* errno of stat, 0 when it worked */
};

struct certwatch_metrics certwatch_metrics = {.cert_expiry = {.v = METRIC_GAUGE_UNSET}};

struct certwatch {
    char *cert_file;
    char *key_file;
    long poll_ms;
    long settle_ms;
    long expiry_check_ms;
    long long next_expiry_check; /* clock_mono_ms time of the next expiry check */
    certwatch_apply_fn apply;
    void *userdata;
    struct certs_pair current;  /* content in service (watcher thread after start) */
    struct file_print tried[2]; /* fingerprints of the last attempt */
    int ifd;                    /* inotify descriptor, -1 when unavailable */
    int wake[2];                /* pipe: certwatch_stop writes a byte */
    pthread_t thread;
};

static void print_file(const char *path, struct file_print *fp)
{
    struct stat st;

    memset(fp, 0, sizeof(*fp));
    if (stat(path, &st) != 0) {
        fp->err = errno;
        return;
    }
    fp->dev = st.st_dev;
    fp->ino = st.st_ino;
    fp->size = st.st_size;
    fp->mtime = st.st_mtim;
    fp->ctime = st.st_ctim;
}

static bool same_print(const struct file_print *a, const struct file_print *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size
        && a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec
        && a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec
        && a->err == b->err;
}

static bool same_text(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* Watch the directory of path (once per directory). */
static void watch_dir_of(struct certwatch *w, const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    size_t n;

    if (slash == NULL) {
        snprintf(dir, sizeof(dir), ".");
    } else {
        n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof(dir))
            return;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    /* Both files in one directory: the second call finds the same watch, no harm. */
    if (inotify_add_watch(w->ifd, dir, WATCH_MASK) < 0)
        LOG_WARN("tls: cannot watch directory dir=%s err=\"%s\" (checking every %ld ms)", dir,
                 strerror(errno), w->poll_ms);
}

/* Read and discard pending inotify events. @return whether there were any. */
static bool drain_events(int ifd)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool any = false;
    ssize_t n;

    while ((n = read(ifd, buf, sizeof(buf))) > 0)
        any = true;
    return any;
}

int certwatch_check_expiry(const char *cert_pem, long long now, struct wh_error *err)
{
    long long not_after;
    size_t index = 0;
    char when[64];
    char which[48] = "";
    int rc;

    /* The chain ends with its first certificate to expire, an intermediate included. */
    rc = certs_chain_not_after(cert_pem, &not_after, &index, err);
    if (rc < 0)
        return rc;
    metric_gauge_set(&certwatch_metrics.cert_expiry, not_after);
    if (not_after - now >= (long long)CERTWATCH_EXPIRY_WARN_DAYS * 86400)
        return 0;
    certs_format_utc(not_after, when, sizeof(when));
    if (index > 0)
        snprintf(which, sizeof(which), " chain_index=%zu", index);
    /* notAfter is the last valid second (RFC 5280 4.1.2.5): expired only after it. */
    if (now > not_after)
        LOG_ERROR("tls: serving certificate expired not_after=%s days_ago=%lld%s", when,
                  (now - not_after) / 86400, which);
    else
        LOG_WARN("tls: serving certificate expires soon not_after=%s days_left=%lld%s", when,
                 (not_after - now) / 86400, which);
    return 0;
}

/* Check the expiry of the pair in service now, and again after expiry_check_ms. */
static void expiry_check(struct certwatch *w)
{
    struct wh_error err = {0, ""};

    w->next_expiry_check = clock_mono_ms() + w->expiry_check_ms;
    if (w->current.cert_pem != NULL
        && certwatch_check_expiry(w->current.cert_pem, (long long)time(NULL), &err) < 0)
        LOG_WARN("tls: cannot read the serving certificate's notAfter err=%s", LOG_QUOTED(err.msg));
}

/*
 * Whether the chain in cert_pem has expired at now (its earliest notAfter is
 * past); err then says when ("certificate expired at ...", or "chain
 * certificate N expired at ..." for an intermediate). A chain whose notAfter
 * cannot be read is not refused here: it loaded, and apply decides.
 */
static bool chain_expired(const char *cert_pem, long long now, struct wh_error *err)
{
    long long not_after;
    size_t index = 0;
    char when[64];

    if (certs_chain_not_after(cert_pem, &not_after, &index, NULL) < 0 || now <= not_after)
        return false;
    certs_format_utc(not_after, when, sizeof(when));
    if (index == 0)
        wh_error_set(err, WH_EINVAL, "certificate expired at %s", when);
    else
        wh_error_set(err, WH_EINVAL, "chain certificate %zu expired at %s", index, when);
    return true;
}

/* The files changed since the last attempt: load, compare, apply, count. */
static void try_reload(struct certwatch *w)
{
    struct certs_pair pair = {NULL, NULL};
    struct wh_error err = {0, ""};

    if (certs_load_pair(&pair, w->cert_file, w->key_file, &err) < 0) {
        LOG_WARN("tls: new pair refused, serving the old one cert_file=%s key_file=%s "
                 "err=%s",
                 w->cert_file, w->key_file, LOG_QUOTED(err.msg));
        metric_counter_add(&certwatch_metrics.reloads_refused, 1);
        return;
    }
    if (same_text(pair.cert_pem, w->current.cert_pem)
        && same_text(pair.key_pem, w->current.key_pem)) {
        LOG_DEBUG("tls: files touched, pair unchanged cert_file=%s", w->cert_file);
        certs_pair_dispose(&pair);
        return;
    }
    /* An expired chain would only replace a working pair by one every client refuses. */
    if (chain_expired(pair.cert_pem, (long long)time(NULL), &err)
        || w->apply(w->userdata, &pair, &err) < 0) {
        LOG_WARN("tls: new pair refused, serving the old one cert_file=%s key_file=%s "
                 "err=%s",
                 w->cert_file, w->key_file, LOG_QUOTED(err.msg));
        metric_counter_add(&certwatch_metrics.reloads_refused, 1);
        certs_pair_dispose(&pair);
        return;
    }
    certs_pair_dispose(&w->current);
    w->current = pair; /* keep the texts for the next comparison */
    LOG_INFO("tls: pair reloaded cert_file=%s key_file=%s", w->cert_file, w->key_file);
    metric_counter_add(&certwatch_metrics.reloads_ok, 1);
    expiry_check(w);
}

/* Compare fingerprints; reload when either file is not what was last tried. */
static void check_files(struct certwatch *w)
{
    struct file_print now[2];

    print_file(w->cert_file, &now[0]);
    print_file(w->key_file, &now[1]);
    if (same_print(&now[0], &w->tried[0]) && same_print(&now[1], &w->tried[1]))
        return;
    w->tried[0] = now[0];
    w->tried[1] = now[1];
    try_reload(w);
}

static void *watch_main(void *arg)
{
    struct certwatch *w = arg;

    for (;;) {
        struct pollfd p[2] = {{w->wake[0], POLLIN, 0}, {w->ifd, POLLIN, 0}};
        int n = poll(p, w->ifd >= 0 ? 2 : 1, (int)w->poll_ms);

        if (n < 0 && errno != EINTR)
            break;
        if (n > 0 && p[0].revents != 0)
            break; /* certwatch_stop */
        if (n > 0 && w->ifd >= 0 && p[1].revents != 0 && drain_events(w->ifd)) {
            /* Let the writer finish: wait until no event came for settle_ms. */
            for (int i = 0; i < SETTLE_ROUNDS_MAX; i++) {
                struct pollfd q[2] = {{w->wake[0], POLLIN, 0}, {w->ifd, POLLIN, 0}};

                if (poll(q, 2, (int)w->settle_ms) <= 0 || q[0].revents != 0
                    || !drain_events(w->ifd))
                    break;
            }
        }
        check_files(w);
        if (clock_mono_ms() >= w->next_expiry_check)
            expiry_check(w);
    }
    return NULL;
}

static void certwatch_free(struct certwatch *w)
{
    if (w == NULL)
        return;
    if (w->ifd >= 0)
        close(w->ifd);
    if (w->wake[0] >= 0)
        close(w->wake[0]);
    if (w->wake[1] >= 0)
        close(w->wake[1]);
    certs_pair_dispose(&w->current);
    free(w->cert_file);
    free(w->key_file);
    free(w);
}

int certwatch_start(struct certwatch **out, const struct certwatch_config *cfg,
                    const struct certs_pair *current, certwatch_apply_fn apply, void *userdata,
                    struct wh_error *err)
{
    struct certwatch *w;

    *out = NULL;
    if (cfg == NULL || cfg->cert_file == NULL || cfg->key_file == NULL || apply == NULL)
        return wh_error_set(err, WH_EINVAL, "certwatch needs both files and a callback");
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    w->ifd = -1;
    w->wake[0] = w->wake[1] = -1;
    w->cert_file = strdup(cfg->cert_file);
    w->key_file = strdup(cfg->key_file);
    if (current != NULL && current->cert_pem != NULL && current->key_pem != NULL) {
        w->current.cert_pem = strdup(current->cert_pem);
        w->current.key_pem = strdup(current->key_pem);
        if (w->current.cert_pem == NULL || w->current.key_pem == NULL)
            goto nomem;
    }
    if (w->cert_file == NULL || w->key_file == NULL)
        goto nomem;
    w->poll_ms = cfg->poll_ms > 0 ? cfg->poll_ms : CERTWATCH_DEFAULT_POLL_MS;
    w->settle_ms = cfg->settle_ms > 0 ? cfg->settle_ms : CERTWATCH_DEFAULT_SETTLE_MS;
    w->expiry_check_ms =
        cfg->expiry_check_ms > 0 ? cfg->expiry_check_ms : CERTWATCH_DEFAULT_EXPIRY_CHECK_MS;
    /* The caller checked the pair it starts with (certwatch_check_expiry); next one later. */
    w->next_expiry_check = clock_mono_ms() + w->expiry_check_ms;
    w->apply = apply;
    w->userdata = userdata;
    if (pipe(w->wake) != 0) {
        w->wake[0] = w->wake[1] = -1;
        certwatch_free(w);
        return wh_error_set(err, WH_ERROR, "cannot create a pipe: %s", strerror(errno));
    }
    fcntl(w->wake[0], F_SETFD, FD_CLOEXEC);
    fcntl(w->wake[1], F_SETFD, FD_CLOEXEC);
    w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->ifd < 0) {
        LOG_WARN("tls: inotify unavailable err=\"%s\" (checking the files every %ld ms)",
                 strerror(errno), w->poll_ms);
    } else {
        watch_dir_of(w, w->cert_file);
        watch_dir_of(w, w->key_file);
    }
    /*
     * Nothing tried yet (err -1 is no errno): the first check reads the files
     * and compares their content with current, so a change between the
     * caller's load and now is not missed.
     */
    w->tried[0].err = w->tried[1].err = -1;
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        certwatch_free(w);
        return wh_error_set(err, WH_ERROR, "cannot start the certificate watcher thread");
    }
    *out = w;
    return 0;
nomem:
    certwatch_free(w);
    return wh_error_set(err, WH_ENOMEM, "out of memory");
}

void certwatch_stop(struct certwatch *w)
{
    char b = 1;

    if (w == NULL)
        return;
    while (write(w->wake[1], &b, 1) < 0 && errno == EINTR)
        ;
    pthread_join(w->thread, NULL);
    certwatch_free(w);
}
