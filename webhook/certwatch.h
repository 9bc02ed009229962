/*
 * certwatch.h - reload the serving TLS pair when its files change (issue 4,
 * "TLS serving": hot reload).
 *
 * A watcher thread notices a change of --tls-cert-file or
 * --tls-private-key-file in two ways: inotify on the directories holding them
 * (which catches the atomic swap of a kubelet Secret volume: the "..data"
 * symlink is renamed over, so the files' own paths never see an event), and a
 * stat(2) of both files every poll period as a fallback (other file systems,
 * paths behind further symlinks). A change is a different (device, inode,
 * size, mtime, ctime) of either file, symlinks followed. On a change the pair
 * is read with certs_load_pair; a pair that does not load (unreadable, not
 * PEM, key not matching) or that apply refuses is logged and counted
 * (metrics_tls_reload(false)) and the old pair stays; a pair with new content
 * is handed to apply and counted as a reload (metrics_tls_reload(true)). The
 * same files are not tried again until they change again.
 *
 * Threads: certwatch_start/certwatch_stop on one thread (main); apply runs on
 * the watcher thread.
 */
#ifndef WH_CERTWATCH_H
#define WH_CERTWATCH_H

#include "certs/certs.h"
#include "webhook/error.h"

#define CERTWATCH_DEFAULT_POLL_MS 2000L    /* stat fallback period */
#define CERTWATCH_DEFAULT_SETTLE_MS 200L   /* quiet time after an inotify event */

struct certwatch_config {
    const char *cert_file;    /* PEM certificate (chain) file; borrowed, must outlive the watcher */
    const char *key_file;     /* PEM private key file; borrowed, must outlive the watcher */
    long poll_ms;             /* stat fallback period; 0 → CERTWATCH_DEFAULT_POLL_MS */
    long settle_ms;           /* after an event, wait until the directory is quiet this
                                 long before reading; 0 → CERTWATCH_DEFAULT_SETTLE_MS */
};

/*
 * Put a new pair in service. pair is borrowed for the call (the callee copies
 * what it keeps). @return 0, or < 0 with err filled when it refuses the pair.
 */
typedef int (*certwatch_apply_fn)(void *userdata, const struct certs_pair *pair,
                                  struct wh_error *err);

struct certwatch;

/**
 * Start watching. current is the pair in service now (copied: a reload with
 * the same content does nothing). apply is called on the watcher thread with
 * userdata (borrowed, must outlive the watcher).
 * @param[out] out the watcher, stopped and freed by certwatch_stop.
 * @return 0; WH_EINVAL (a file name missing, apply NULL); WH_ENOMEM; WH_ERROR
 *         when the thread cannot start. inotify being unavailable is not an
 *         error (the stat fallback still runs; a warning is logged).
 */
int certwatch_start(struct certwatch **out, const struct certwatch_config *cfg,
                    const struct certs_pair *current, certwatch_apply_fn apply, void *userdata,
                    struct wh_error *err) WH_WARN_UNUSED;

/** Stop and join the watcher thread and free w; apply is not called after. NULL is a no-op. */
void certwatch_stop(struct certwatch *w);

#endif
