/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile_internal.h - semi-private entry points of controller/reconcile.c for
 * tests (a header of its own, so that no test includes a .c file): start the
 * reconciler on a hook table of one's own, and the backoff formula. Not for
 * production callers.
 */
#ifndef WH_RECONCILE_INTERNAL_H
#define WH_RECONCILE_INTERNAL_H

#include "controller/reconcile.h"
#include "plugins/plugin.h"

/**
 * reconcile_start with the hooks of table instead of plugin_registry. table has
 * plugin_registry_len entries, index-aligned with plugin_registry (entry k stands
 * for plugin_registry[k], so the effective set of D1 still selects it); the
 * table and its plugins are borrowed and must outlive the reconciler. No Events
 * are posted (controller/events.h): kc may be a test's stand-in.
 * @return as reconcile_start.
 */
int reconcile_start_table(struct reconcile **out, struct k8s_client *kc, struct cache *cache,
                          const struct reconcile_config *cfg, const struct plugin *const *table,
                          struct wh_error *err);

/**
 * Delay before retry number `failures` (1 = first retry) of a failed key:
 * backoff_min_ms * 2^(failures-1), capped at backoff_max_ms (client-go's
 * ItemExponentialFailureRateLimiter). cfg values <= 0 take the defaults of
 * struct reconcile_config.
 */
long reconcile_backoff_ms(const struct reconcile_config *cfg, unsigned failures);

#endif
