/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certwatch.h - reload the serving TLS pair when its files change (hot
 * reload: a renewed certificate is served without a restart).
 *
 * A watcher thread notices a change of --tls-cert-file or
 * --tls-private-key-file in two ways: inotify on the directories holding them
 * (which catches the atomic swap of a kubelet Secret volume: the "..data"
 * symlink is renamed over, so the files' own paths never see an event), and a
 * stat(2) of both files every poll period as a fallback (other file systems,
 * paths behind further symlinks). A change is a different (device, inode,
 * size, mtime, ctime) of either file, symlinks followed. On a change the pair
 * is read with certs_load_pair; a pair that does not load (unreadable, not
 * PEM, key not matching), whose chain has already expired (its earliest
 * notAfter is past: gen-certs review, an expired pair used to replace a valid
 * one) or that apply refuses is logged and counted
 * (certwatch_metrics.reloads_refused) and the old pair stays; a pair with new content
 * is handed to apply and counted as a reload (certwatch_metrics.reloads_ok). The
 * same files are not tried again until they change again.
 *
 * Expiry (failurePolicy Fail refuses every Volcano pod once the certificate
 * has expired): certwatch_check_expiry sets the notAfter gauge and logs a
 * warning under CERTWATCH_EXPIRY_WARN_DAYS days left, an error once expired.
 * serve calls it for the pair it starts with; the watcher thread calls it for
 * each pair it puts in service and, for the pair in service, once per
 * expiry_check_ms (a day) from the same poll loop: no thread of its own.
 *
 * Threads: certwatch_start/certwatch_stop on one thread (main); apply runs on
 * the watcher thread. certwatch_check_expiry may be called from any thread.
 */
#ifndef WH_CERTWATCH_H
#define WH_CERTWATCH_H

#include "base/error.h"
#include "base/metric.h"
#include "certs/certs.h"

#define CERTWATCH_DEFAULT_POLL_MS         2000L /* stat fallback period */
#define CERTWATCH_DEFAULT_SETTLE_MS       200L  /* quiet time after an inotify event */
#define CERTWATCH_DEFAULT_EXPIRY_CHECK_MS (24L * 3600 * 1000) /* expiry re-check period */
#define CERTWATCH_EXPIRY_WARN_DAYS        30 /* warn when fewer days than this are left */

struct certwatch_config {
    const char *cert_file; /* PEM certificate (chain) file; borrowed, must outlive the watcher */
    const char *key_file;  /* PEM private key file; borrowed, must outlive the watcher */
    long poll_ms;          /* stat fallback period; 0 → CERTWATCH_DEFAULT_POLL_MS */
    long settle_ms;        /* after an event, wait until the directory is quiet this
                                 long before reading; 0 → CERTWATCH_DEFAULT_SETTLE_MS */
    long expiry_check_ms;  /* re-check the expiry of the pair in service this often
                                 (noticed within poll_ms after it is due);
                                 0 → CERTWATCH_DEFAULT_EXPIRY_CHECK_MS */
};

/*
 * Put a new pair in service. pair is borrowed for the call (the callee copies
 * what it keeps). @return 0, or < 0 with err filled when it refuses the pair.
 */
typedef int (*certwatch_apply_fn)(void *userdata, const struct certs_pair *pair,
                                  struct wh_error *err);

struct certwatch;

/* What the pair reloads came to; webhook/metrics.c exposes them as
 * webhook_tls_reloads_total and webhook_tls_certificate_expiry_timestamp_seconds. */
struct certwatch_metrics {
    struct metric_counter reloads_ok;
    struct metric_counter reloads_refused; /* the old pair kept */
    struct metric_gauge cert_expiry;       /* the chain's earliest notAfter, Unix seconds */
};
extern struct certwatch_metrics certwatch_metrics;

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

/**
 * The serving chain cert_pem is in service at Unix time now. Its validity ends
 * with the earliest notAfter of all its certificates (certs_chain_not_after: an
 * intermediate expiring before the leaf counts; gen-certs review): set
 * webhook_tls_certificate_expiry_timestamp_seconds to it
 * (certwatch_metrics.cert_expiry), then log at warn level
 * "tls: serving certificate expires soon not_after=<RFC 3339 UTC> days_left=N"
 * (N whole days left, rounded down) when fewer than CERTWATCH_EXPIRY_WARN_DAYS
 * days remain, or at error level
 * "tls: serving certificate expired not_after=<RFC 3339 UTC> days_ago=N" once
 * notAfter has passed; both end in " chain_index=I" when that notAfter is the
 * I-th certificate's (0-based, I > 0: not the leaf). Nothing when more time is
 * left. Thread-safe.
 * @param cert_pem  borrowed PEM text (a chain, leaf first)
 * @return 0; as certs_chain_not_after when no certificate can be read (no gauge
 *         set, nothing logged).
 */
int certwatch_check_expiry(const char *cert_pem, long long now, struct wh_error *err);

/** Stop and join the watcher thread and free w; apply is not called after. NULL is a no-op. */
void certwatch_stop(struct certwatch *w);

#endif
