/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_heap.c - base/heap.c: heap_release_free from several threads at once, as the
 * namespaced informers call it at the end of their first LISTs. Under a sanitizer (its
 * allocator replaces malloc, so glibc's heap is never set up) the first malloc_trim runs
 * glibc's ptmalloc_init, which marks the heap initialized before it sets up main_arena's
 * bins: a second malloc_trim meanwhile walks NULL bin links (SEGV at 0x8 in mtrim). Each
 * round is a fresh child process, whose glibc heap is as fresh as a new webhook's. Only a
 * sanitizer build (without mimalloc) can fail it: elsewhere the parent's first malloc set
 * the heap up before the fork.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/heap.h"
#include "tests/testutil.h"

#define ROUNDS  300
#define THREADS 8

static pthread_barrier_t start_line;

static void *trimmer(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start_line);
    heap_release_free();
    return NULL;
}

/* In a child: THREADS threads call heap_release_free at once, as its first use. */
static void concurrent_first_trims(void)
{
    pthread_t t[THREADS];

    pthread_barrier_init(&start_line, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, trimmer, NULL) != 0)
            _exit(3);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    _exit(0);
}

START_TEST(test_concurrent_first_trims)
{
    for (int r = 0; r < ROUNDS; r++) {
        int status = 0;
        pid_t pid = fork();

        ck_assert_int_ge(pid, 0);
        if (pid == 0)
            concurrent_first_trims();
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "round %d: a child trimming from %d threads died (status 0x%x)", r, THREADS,
                      status);
    }
}
END_TEST

static Suite *heap_suite(void)
{
    Suite *s = suite_create("heap");
    TCase *tc = tcase_create("trim");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_concurrent_first_trims);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(heap_suite());
}
