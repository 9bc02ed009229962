/* SPDX-License-Identifier: Apache-2.0 */
/*
 * version.c - see version.h. The only file compiled with the build's -D defines
 * (Makefile, "Build information"): nothing else needs rebuilding for a new commit.
 */
#include "webhook/version.h"

#ifndef WH_GIT_VERSION
#define WH_GIT_VERSION "unknown"
#endif
#ifndef WH_GIT_COMMIT
#define WH_GIT_COMMIT "unknown"
#endif
#ifndef WH_BUILD_DATE
#define WH_BUILD_DATE "unknown"
#endif

const char version_git[] = WH_GIT_VERSION;
const char version_commit[] = WH_GIT_COMMIT;
const char version_build_date[] = WH_BUILD_DATE;
