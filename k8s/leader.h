/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leader.h - leader election with a coordination.k8s.io/v1 Lease
 * (docs/kube-api.md §5), as client-go's leaderelection does: acquire or renew
 * with PUT and the current resourceVersion every retry period; a lease held by
 * another identity may be taken once renewTime + leaseDurationSeconds has passed;
 * a leader that cannot renew within the renew deadline stops leading at once.
 * MicroTime values are RFC 3339 UTC with exactly six fractional digits.
 *
 * Threads: one thread of its own; the callback runs on it.
 */
#ifndef WH_LEADER_H
#define WH_LEADER_H

#include <stdbool.h>

#include "base/error.h"
#include "k8s/client.h"

struct leader_config {
    const char *ns;        /* --leader-elect-resource-namespace */
    const char *name;      /* Lease name, "volcano-plugin-webhook" */
    const char *identity;  /* hostname (+ "_" + random suffix) */
    long lease_duration_s; /* 15 */
    long renew_deadline_s; /* 10 */
    long retry_period_s;   /* 2 */
};

struct leader;

/** Start campaigning. on_change(userdata, leading) is called on every transition. */
int leader_start(struct leader **out, struct k8s_client *kc, const struct leader_config *cfg,
                 void (*on_change)(void *userdata, bool leading), void *userdata,
                 struct wh_error *err);

/** Stop; a held lease is released (holderIdentity cleared) first. NULL is a no-op. */
void leader_stop(struct leader *l);

bool leader_is_leading(const struct leader *l);

/**
 * Format t (seconds + microseconds, UTC) as MicroTime "2026-11-30T04:05:06.123456Z"
 * into buf (at least 28 bytes). Parse the reverse: 0, or WH_EINVAL when not exactly
 * that form.
 */
void leader_format_microtime(char *buf, size_t len, long long sec, long usec);
int leader_parse_microtime(const char *s, long long *sec_out, long *usec_out);

#endif
