/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap.c - see heap.h. mimalloc is linked or not at build time (Makefile
 * ALLOCATOR), so its mi_collect is a weak reference: NULL without it.
 *
 * malloc_trim is called by one thread at a time (trim_mu): when glibc's malloc has
 * never run in the process (a sanitizer's allocator replaces it), the first
 * malloc_trim runs glibc's lazy ptmalloc_init, which is not thread-safe: it marks
 * the heap initialized, then (after a getrandom call) sets up main_arena's bins,
 * and a malloc_trim on another thread meanwhile walks the still-NULL bin links
 * (SEGV at 0x8 in mtrim). The --namespaces informers end their first LISTs together.
 */
#include "base/heap.h"

#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>

/* mimalloc.h's declaration, weak so that builds without mimalloc still link. */
extern void mi_collect(bool force) __attribute__((weak));

static pthread_mutex_t trim_mu = PTHREAD_MUTEX_INITIALIZER;

void heap_release_free(void)
{
    if (mi_collect != NULL) {
        mi_collect(true);
        return;
    }
    pthread_mutex_lock(&trim_mu);
    malloc_trim(0);
    pthread_mutex_unlock(&trim_mu);
}
