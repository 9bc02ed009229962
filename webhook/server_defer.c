/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server_defer.c - admissions whose Job must be read from the API server, off the
 * MHD workers (server_internal.h).
 *
 * An MHD worker serves every connection it accepted, one request at a time: a
 * worker waiting on a Job GET would hold all of them up (a review of a cached Job
 * behind one of a Job not cached yet). So a worker runs each admission with the
 * source's get_nowait (plugins/jobsource.h): a Job at hand is answered at once; one
 * that only a GET would find (admission_handle's ADMISSION_DEFERRED) has its
 * connection suspended (MHD_suspend_connection) and its request queued for the
 * lookup threads. A lookup thread runs the admission again with the source's get,
 * which may wait, keeps the answer in the request's context and resumes the
 * connection (MHD_resume_connection); MHD then calls the access handler again on
 * the connection's worker, which queues that answer (server.c).
 *
 * Bounds: at most defer_threads requests are deferred at once (queued or running),
 * the old bound of reviews waiting on GETs (controller/lookup.h max_waiting);
 * past it a worker answers at once as for a Job that cannot be read, "too many
 * reviews waiting" (server_defer_busy_source), per --job-lookup-failure.
 *
 * Threads: server_defer_take on MHD workers; defer_main on the lookup threads;
 * start and stop on the main thread. defer_lock guards the queue, defer_pending,
 * defer_stop and (once the daemon runs) defer_started. A request's context belongs
 * to its lookup thread from the queue until MHD_resume_connection, and to its
 * worker again after.
 */
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/log.h"
#include "webhook/admission.h"
#include "webhook/server_internal.h"

/* The lookup thread's side: run each queued request's admission, answer, resume. */
static void *defer_main(void *arg)
{
    struct server *s = arg;

    pthread_mutex_lock(&s->defer_lock);
    for (;;) {
        struct req_ctx *ctx;
        int status;

        while (s->defer_head == NULL && !s->defer_stop)
            pthread_cond_wait(&s->defer_cond, &s->defer_lock);
        ctx = s->defer_head;
        if (ctx == NULL)
            break; /* stopping, and nothing is left to answer */
        s->defer_head = ctx->defer_next;
        if (s->defer_head == NULL)
            s->defer_tail = NULL;
        pthread_mutex_unlock(&s->defer_lock);

        status = ctx->handler(buf_cstr(&ctx->body), ctx->body.len, &s->src, &s->mutate,
                              &ctx->deferred_out, &ctx->deferred_out_len);
        if (status == ADMISSION_DEFERRED) {
            /* s->src.get waits: it never defers. Answered as an internal error, not hung. */
            LOG_ERROR("admission: the job source deferred a review on a lookup thread");
            status = 500;
        }
        ctx->deferred_status = status;
        ctx->deferred_done = true;
        /* Its place is free before the client has its answer (and may send the next). */
        pthread_mutex_lock(&s->defer_lock);
        s->defer_pending--;
        pthread_mutex_unlock(&s->defer_lock);
        /* The worker owns ctx again from here (it may free it at once). */
        MHD_resume_connection(ctx->mhd);

        pthread_mutex_lock(&s->defer_lock);
    }
    pthread_mutex_unlock(&s->defer_lock);
    return NULL;
}

int server_defer_start(struct server *s, struct wh_error *err)
{
    if (s->src.get_nowait == NULL || s->defer_threads == 0)
        return 0; /* every get answers at once: the workers run it */
    s->defer_tids = calloc(s->defer_threads, sizeof(*s->defer_tids));
    if (s->defer_tids == NULL)
        return wh_error_set(err, WH_ENOMEM, "out of memory");
    for (s->defer_started = 0; s->defer_started < s->defer_threads; s->defer_started++)
        if (pthread_create(&s->defer_tids[s->defer_started], NULL, defer_main, s) != 0) {
            server_defer_stop(s);
            return wh_error_set(err, WH_ERROR, "cannot start the job lookup threads");
        }
    return 0;
}

void server_defer_stop(struct server *s)
{
    pthread_mutex_lock(&s->defer_lock);
    s->defer_stop = true; /* no new request is taken; the queued ones are answered */
    pthread_cond_broadcast(&s->defer_cond);
    pthread_mutex_unlock(&s->defer_lock);
    for (unsigned k = 0; k < s->defer_started; k++)
        pthread_join(s->defer_tids[k], NULL);
    pthread_mutex_lock(&s->defer_lock);
    s->defer_started = 0;
    pthread_mutex_unlock(&s->defer_lock);
    free(s->defer_tids);
    s->defer_tids = NULL;
}

bool server_defer_take(struct server *s, struct MHD_Connection *c, struct req_ctx *ctx)
{
    /* One critical section from the check to the queue: a stop in between would find
     * the queue empty and leave this connection suspended (MHD then aborts). Suspended
     * before it is queued: a lookup thread may resume it at once. The lock is held
     * across MHD_suspend_connection; the lookup threads never hold it while they call
     * into MHD. */
    pthread_mutex_lock(&s->defer_lock);
    if (s->defer_started == 0 || s->defer_stop || s->defer_pending >= s->defer_started) {
        pthread_mutex_unlock(&s->defer_lock);
        return false;
    }
    s->defer_pending++; /* this request's place, held while it is suspended */
    MHD_suspend_connection(c);
    ctx->mhd = c;
    ctx->defer_next = NULL;
    if (s->defer_tail != NULL)
        s->defer_tail->defer_next = ctx;
    else
        s->defer_head = ctx;
    s->defer_tail = ctx;
    pthread_cond_signal(&s->defer_cond);
    pthread_mutex_unlock(&s->defer_lock);
    return true;
}

/* The get of server_defer_busy_source: every lookup thread is taken, or stopping. */
static int busy_get(void *userdata, const char *ns, const char *name, const char *uid,
                    json_t **job_out, struct wh_error *err)
{
    struct server *s = userdata;
    bool stopping;

    (void)ns;
    (void)name;
    (void)uid;
    *job_out = NULL;
    pthread_mutex_lock(&s->defer_lock);
    stopping = s->defer_stop;
    pthread_mutex_unlock(&s->defer_lock);
    if (stopping)
        return wh_error_set(err, WH_EBUSY,
                            "the webhook is stopping and reads no more volcano jobs from the "
                            "API server; try again");
    return wh_error_set(err, WH_EBUSY,
                        "too many reviews waiting on volcano job reads from the API server "
                        "(%u); try again",
                        s->defer_threads);
}

struct jobsource server_defer_busy_source(struct server *s)
{
    struct jobsource src = {.get = busy_get, .userdata = s};

    return src;
}
