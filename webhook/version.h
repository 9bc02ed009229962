/* SPDX-License-Identifier: Apache-2.0 */
/*
 * version.h - what this binary is: the release (WH_VERSION, webhook/commands.h), the
 * git state it was built from and when it was built. `version` prints them and
 * webhook_build_info carries them (webhook/metrics.c).
 *
 * The values come from the Makefile as -D defines of webhook/version.c, the only
 * object that embeds them, so a new commit rebuilds that one object:
 *   WH_GIT_VERSION  `git describe --always --dirty`
 *   WH_GIT_COMMIT   `git rev-parse --short HEAD`
 *   WH_BUILD_DATE   RFC 3339 UTC, from SOURCE_DATE_EPOCH when set (reproducible builds,
 *                   https://reproducible-builds.org/specs/source-date-epoch/), else the time
 *                   version.c was compiled
 * Each is "unknown" when not known (a source tarball: no git tree). Immutable; any thread.
 */
#ifndef WH_VERSION_H
#define WH_VERSION_H

/** `git describe --always --dirty` of the tree built (e.g. "v0.1.0-3-gab46f7b-dirty"). */
extern const char version_git[];

/** The abbreviated commit hash built (`git rev-parse --short HEAD`). */
extern const char version_commit[];

/** When the binary was built, RFC 3339 UTC ("2026-12-01T20:40:00Z"). */
extern const char version_build_date[];

#endif
