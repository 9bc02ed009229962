/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podutil_internal.h - the D5 decisions and messages of the upserts, shared by the two
 * forms of them: podutil.c's on a jansson Pod and podedit.c's recorded over a pod view
 * (plugins/podedit.h). One text and one rule for each, whichever form runs. Not for
 * plugins: they call podutil.h or podedit.h.
 */
#ifndef WH_PODUTIL_INTERNAL_H
#define WH_PODUTIL_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"
#include "plugins/warnings.h"

/**
 * D5 "identical" for env: have covers want (podutil_covers), except that "absent ==
 * empty" must not let a literal "" match a valueFrom entry (the two are different
 * variables). Both borrowed.
 */
bool podutil_env_same(const json_t *have, const json_t *want);

/**
 * D5, D16: podutil_upsert_env's warning that the user's entry have of container (its
 * name, NUL-terminated) is replaced by want, into w (may be NULL).
 */
void podutil_warn_env_replaced(struct warnings *w, const char *plugin, const char *container,
                               const json_t *have, const json_t *want);

/**
 * D5: whether volume have, of want's name, may become want (it covers want, or it is
 * the same Secret or ConfigMap). @return 0 when it may; else WH_ECONFLICT with
 * podutil_upsert_volume's message in err (may be NULL).
 */
int podutil_volume_conflict(const json_t *have, const json_t *want, struct wh_error *err);

/**
 * D5: podutil_upsert_mount's message for the user's mount have at want's mountPath,
 * of another volume, in container (its name, NUL-terminated), into err (may be NULL).
 * @return WH_ECONFLICT
 */
int podutil_mount_conflict(const char *container, const json_t *have, const json_t *want,
                           struct wh_error *err);

/**
 * podutil_add_port's warning that port name (NUL-terminated, not empty) of container is
 * taken by port taken_by (its containerPort) where number was to be added; keyed
 * podutil_port_key. w may be NULL.
 */
void podutil_warn_port_taken(struct warnings *w, const char *plugin, const char *container,
                             const char *name, const json_t *taken_by, const json_t *number);

/** podutil_add_port's warning when number is no integer in 1-65535. w may be NULL. */
void podutil_warn_port_range(struct warnings *w, const char *plugin, const json_t *number);

#endif
