/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap.h - giving freed heap memory back to the kernel, whichever allocator the
 * binary links (Makefile ALLOCATOR: mimalloc by default, glibc's malloc without).
 */
#ifndef WH_HEAP_H
#define WH_HEAP_H

/**
 * Return the free pages of the heap to the kernel, so that the resident size
 * falls back after a burst of allocation (a Jobs LIST). With mimalloc linked it
 * calls mi_collect(true) (mimalloc.h: frees the calling thread's cached pages and
 * decommits free segments); otherwise glibc's malloc_trim(0). Costs a walk of the
 * heap: call it after rare, large work, never per request. Any thread, and several
 * at once: glibc's calls go one at a time (heap.c says why).
 */
void heap_release_free(void);

#endif
