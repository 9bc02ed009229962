/* SPDX-License-Identifier: Apache-2.0 */
/*
 * live_heap.c - a measuring tool of bench/ (not part of the product): an LD_PRELOAD
 * library for a build linked with glibc's malloc (make ALLOCATOR=) that counts the
 * bytes and blocks the program holds allocated, and writes them, "bytes blocks\n",
 * to the file $LIVE_HEAP_FILE every 100 ms (a new file renamed over the old one, so a
 * reader never sees half a line).
 *
 * Why: a server's RSS mixes what it holds with what its allocator keeps of what it
 * freed (pages of each thread's arena), so RSS growth over a run cannot tell a leak
 * from a heap settling. The bytes held can: a leak grows them with the admissions.
 * Each block counts malloc_usable_size(), the same at its allocation and its free.
 * glibc's own entry points (__libc_malloc and the like) do the work, so no dlsym
 * (which allocates) is needed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void *__libc_malloc(size_t n);
void __libc_free(void *p);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);

static long live_bytes;
static long live_blocks;

static void held(void *p, long sign)
{
    if (p == NULL)
        return;
    __atomic_add_fetch(&live_bytes, sign * (long)malloc_usable_size(p), __ATOMIC_RELAXED);
    __atomic_add_fetch(&live_blocks, sign, __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
    void *p = __libc_malloc(n);

    held(p, 1);
    return p;
}

void free(void *p)
{
    held(p, -1);
    __libc_free(p);
}

void *calloc(size_t n, size_t size)
{
    void *p = __libc_calloc(n, size);

    held(p, 1);
    return p;
}

void *realloc(void *p, size_t n)
{
    void *q;

    if (p == NULL)
        return malloc(n);
    if (n == 0) {
        free(p);
        return NULL;
    }
    held(p, -1);
    q = __libc_realloc(p, n);
    held(q != NULL ? q : p, 1); /* on failure p stays allocated */
    return q;
}

void *memalign(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);

    held(p, 1);
    return p;
}

void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    void *p = memalign(align, n);

    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t n)
{
    return memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

/* glibc's own pvalloc would allocate past the counter, and its free be counted. */
void *pvalloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    if (n > SIZE_MAX - page) {
        errno = ENOMEM;
        return NULL;
    }
    return memalign(page, n == 0 ? page : (n + page - 1) / page * page);
}

/* Every 100 ms: the counts into path (path.tmp renamed over it). No allocation. */
static void *reporter(void *arg)
{
    const char *path = arg;
    char tmp[4096];
    char line[64];
    const struct timespec period = {0, 100 * 1000 * 1000};

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return NULL;
    for (;;) {
        int n = snprintf(line, sizeof(line), "%ld %ld\n",
                         __atomic_load_n(&live_bytes, __ATOMIC_RELAXED),
                         __atomic_load_n(&live_blocks, __ATOMIC_RELAXED));
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        if (fd >= 0) {
            bool whole = write(fd, line, (size_t)n) == n;

            if (close(fd) == 0 && whole)
                (void)rename(tmp, path);
        }
        nanosleep(&period, NULL);
    }
    return NULL;
}

/* The reporter starts with every signal blocked: the webhook blocks SIGTERM and SIGINT
 * on all its threads and waits for them itself (webhook/serve.c), and this thread,
 * made before main, must not take them. */
__attribute__((constructor)) static void live_heap_start(void)
{
    const char *path = getenv("LIVE_HEAP_FILE");
    sigset_t all;
    sigset_t old;
    pthread_t t;

    if (path == NULL || path[0] == '\0')
        return;
    sigfillset(&all);
    if (pthread_sigmask(SIG_BLOCK, &all, &old) != 0)
        return;
    if (pthread_create(&t, NULL, reporter, (void *)path) == 0)
        pthread_detach(t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}
