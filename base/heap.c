/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap.c - see heap.h. mimalloc is linked or not at build time (Makefile
 * ALLOCATOR), so its mi_collect is a weak reference: NULL without it.
 */
#include "base/heap.h"

#include <malloc.h>
#include <stdbool.h>

/* mimalloc.h's declaration, weak so that builds without mimalloc still link. */
extern void mi_collect(bool force) __attribute__((weak));

void heap_release_free(void)
{
    if (mi_collect != NULL)
        mi_collect(true);
    else
        malloc_trim(0);
}
