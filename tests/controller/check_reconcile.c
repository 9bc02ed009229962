/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_reconcile.c - controller/reconcile.c with a fake hook table
 * (reconcile_internal.h): which hook runs when (D10), queue semantics
 * (one pending run per key, never two workers on one key), backoff and retry,
 * leadership gating, resync. No API server: the fake hooks only record calls.
 *
 * Waits poll the reconciler's counters with a generous deadline; nothing asserts
 * how long anything took.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/cache.h"
#include "controller/reconcile.h"
#include "controller/reconcile_internal.h"
#include "plugins/plugin.h"
#include "plugins/sshkeys.h"
#include "tests/testutil.h"

#define MAX_CALLS 256

/* ---- the fake plugins: record "hook:plugin:ns/name:uid" ---- */

static pthread_mutex_t fk_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fk_cv = PTHREAD_COND_INITIALIZER;
static char fk_calls[MAX_CALLS][128];
static size_t fk_ncalls;
static int fk_fail[8][3];        /* [plugin][hook]: fail this many more calls */
static bool fk_block;            /* hooks of blocking plugin wait while set */
static int fk_block_plugin = -1; /* registry index that blocks, -1 none */
static int fk_blocked;           /* hooks waiting at the gate */
static int fk_active[2];         /* running hooks per job name j1/j2 */
static int fk_max_active[2];
static int fk_max_total; /* most hooks running at once, all jobs */
static int fk_total;
static long fk_sleep_ms;               /* every hook sleeps this long */
static bool fk_ctx_ok = true;          /* every ctx looked right */
static struct sshkeys_store *fk_store; /* the reconciler's key store, seen by the ssh add */
static struct k8s_client *fk_kc = (struct k8s_client *)&fk_mu; /* any non-NULL marker */

static void fk_reset(void)
{
    pthread_mutex_lock(&fk_mu);
    fk_ncalls = 0;
    memset(fk_fail, 0, sizeof(fk_fail));
    fk_block = false;
    fk_block_plugin = -1;
    fk_blocked = 0;
    memset(fk_active, 0, sizeof(fk_active));
    memset(fk_max_active, 0, sizeof(fk_max_active));
    fk_max_total = 0;
    fk_total = 0;
    fk_sleep_ms = 0;
    fk_ctx_ok = true;
    fk_store = NULL;
    pthread_mutex_unlock(&fk_mu);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static int fk_hook(int plugin, int hook, const struct plugin_ctx *c, struct wh_error *err)
{
    static const char *const hooks[] = {"add", "update", "delete"};
    const json_t *meta = json_object_get(c->job, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    int j = name != NULL && strcmp(name, "j2") == 0 ? 1 : 0;
    int rc = 0;

    pthread_mutex_lock(&fk_mu);
    if (c->kc != fk_kc || c->env == NULL || c->env->timeout_ms != 1234 || c->env->ssh_keys == NULL
        || c->env->foreign == NULL || c->pod != NULL
        || strcmp(c->name, plugin_registry[plugin]->name) != 0)
        fk_ctx_ok = false;
    if (fk_ncalls < MAX_CALLS) {
        const json_t *a = c->args;
        char *args = a != NULL ? json_dumps(a, JSON_COMPACT) : NULL;

        snprintf(fk_calls[fk_ncalls++], sizeof(fk_calls[0]), "%s:%s:%s/%s:%s%s%s", hooks[hook],
                 plugin_registry[plugin]->name,
                 json_string_value(json_object_get(meta, "namespace")), name,
                 json_string_value(json_object_get(meta, "uid")), args ? ":" : "",
                 args ? args : "");
        free(args);
    }
    fk_active[j]++;
    fk_total++;
    if (fk_active[j] > fk_max_active[j])
        fk_max_active[j] = fk_active[j];
    if (fk_total > fk_max_total)
        fk_max_total = fk_total;
    if (plugin == fk_block_plugin) {
        fk_blocked++;
        pthread_cond_broadcast(&fk_cv);
        while (fk_block)
            pthread_cond_wait(&fk_cv, &fk_mu);
        fk_blocked--;
    }
    if (fk_fail[plugin][hook] > 0) {
        fk_fail[plugin][hook]--;
        rc = wh_error_set(err, WH_EAPI, "injected failure");
    }
    if (plugin == 2 && hook == 0 && c->env != NULL && c->env->foreign != NULL)
        __atomic_add_fetch(c->env->foreign, 1, __ATOMIC_RELAXED);
    /* ssh's add keeps a key pair per uid, as plugins/ssh.c does (D11) */
    if (plugin == 0 && hook == 0 && c->env != NULL && c->env->ssh_keys != NULL) {
        fk_store = c->env->ssh_keys;
        if (sshkeys_put(c->env->ssh_keys, json_string_value(json_object_get(meta, "uid")), "priv",
                        "pub")
            < 0)
            fk_ctx_ok = false;
    }
    pthread_mutex_unlock(&fk_mu);
    if (fk_sleep_ms > 0)
        sleep_ms(fk_sleep_ms);
    pthread_mutex_lock(&fk_mu);
    fk_active[j]--;
    fk_total--;
    pthread_mutex_unlock(&fk_mu);
    return rc;
}

#define FAKE(idx, nm)                                                                              \
    static int fk_add_##nm(const struct plugin_ctx *c, struct wh_error *e)                         \
    {                                                                                              \
        return fk_hook(idx, 0, c, e);                                                              \
    }                                                                                              \
    static int fk_update_##nm(const struct plugin_ctx *c, struct wh_error *e)                      \
    {                                                                                              \
        return fk_hook(idx, 1, c, e);                                                              \
    }                                                                                              \
    static int fk_delete_##nm(const struct plugin_ctx *c, struct wh_error *e)                      \
    {                                                                                              \
        return fk_hook(idx, 2, c, e);                                                              \
    }                                                                                              \
    static const struct plugin fake_##nm = {.name = #nm,                                           \
                                            .on_pod_create = NULL,                                 \
                                            .on_job_add = fk_add_##nm,                             \
                                            .on_job_update = fk_update_##nm,                       \
                                            .on_job_delete = fk_delete_##nm};

FAKE(0, ssh)
FAKE(2, svc)
FAKE(5, pytorch)
/* env, tensorflow, mpi, hcclrank, ray: hooks left NULL (skipped) except ray's delete. */
static const struct plugin fake_env = {.name = "env"};
static const struct plugin fake_tensorflow = {.name = "tensorflow"};
static const struct plugin fake_mpi = {.name = "mpi"};
static const struct plugin fake_hcclrank = {.name = "hcclrank"};
static int fk_delete_ray(const struct plugin_ctx *c, struct wh_error *e)
{
    return fk_hook(7, 2, c, e);
}
static const struct plugin fake_ray = {.name = "ray", .on_job_delete = fk_delete_ray};

static const struct plugin *const fake_table[] = {
    &fake_ssh, &fake_env,     &fake_svc,      &fake_tensorflow,
    &fake_mpi, &fake_pytorch, &fake_hcclrank, &fake_ray,
};

/* ---- fixture ---- */

static struct cache *cache;
static struct reconcile *rec;

static void start_rec(long resync_s)
{
    struct reconcile_config cfg = {0};
    struct wh_error err = {0, ""};

    cfg.workers = 4;
    cfg.resync_period_s = resync_s;
    cfg.request_timeout_ms = 1234;
    cfg.backoff_min_ms = 5;
    cfg.backoff_max_ms = 40;
    ck_assert_int_eq(reconcile_start_table(&rec, fk_kc, cache, &cfg, fake_table, &err), 0);
}

static void setup(void)
{
    ck_assert_uint_eq(plugin_registry_len, 8);
    for (size_t k = 0; k < 8; k++)
        ck_assert_str_eq(fake_table[k]->name, plugin_registry[k]->name);
    fk_reset();
    cache = cache_create();
    ck_assert_ptr_nonnull(cache);
    start_rec(3600);
}

static void teardown(void)
{
    pthread_mutex_lock(&fk_mu);
    fk_block = false;
    pthread_cond_broadcast(&fk_cv);
    pthread_mutex_unlock(&fk_mu);
    reconcile_stop(rec);
    rec = NULL;
    cache_destroy(cache);
    cache = NULL;
}

/* A Job ns1/<name> with uid and plugins JSON text; phase may be NULL. New reference. */
static json_t *job(const char *name, const char *uid, const char *plugins, const char *phase)
{
    char text[1024];
    json_t *j;

    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
             "\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns1\",\"uid\":\"%s\"},"
             "\"spec\":{\"plugins\":%s,\"tasks\":[]}%s%s%s}",
             name, uid, plugins, phase ? ",\"status\":{\"state\":{\"phase\":\"" : "",
             phase ? phase : "", phase ? "\"}}" : "");
    j = tu_json(text);
    return j;
}

/* Put the Job in the cache and enqueue it, as the informer does. */
static void put_and_enqueue(json_t *j)
{
    ck_assert_int_eq(cache_put(cache, j), 0);
    reconcile_enqueue(rec, j);
    json_decref(j);
}

/* Wait (at most 10 s) until at least n runs have finished and q keys are queued. */
static void wait_runs_queued(unsigned long n, unsigned long q)
{
    struct reconcile_stats st;

    for (int i = 0; i < 2000; i++) {
        reconcile_get_stats(rec, &st);
        if (st.reconciles >= n && st.queue_len == q)
            return;
        sleep_ms(5);
    }
    ck_abort_msg("timed out waiting for %lu runs (have %lu, queued %lu)", n, st.reconciles,
                 st.queue_len);
}

static void wait_runs(unsigned long n)
{
    wait_runs_queued(n, 0);
}

/* Wait until n hooks wait at the gate. */
static void wait_blocked(int n)
{
    struct timespec ts;

    pthread_mutex_lock(&fk_mu);
    while (fk_blocked < n) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 10;
        ck_assert_int_eq(pthread_cond_timedwait(&fk_cv, &fk_mu, &ts), 0);
    }
    pthread_mutex_unlock(&fk_mu);
}

static void unblock(void)
{
    pthread_mutex_lock(&fk_mu);
    fk_block = false;
    pthread_cond_broadcast(&fk_cv);
    pthread_mutex_unlock(&fk_mu);
}

/* Assert the recorded calls equal want (NULL-terminated), then forget them. */
static void assert_calls(const char *const *want)
{
    size_t n = 0;

    pthread_mutex_lock(&fk_mu);
    while (want[n] != NULL)
        n++;
    for (size_t i = 0; i < fk_ncalls || i < n; i++) {
        ck_assert_msg(i < fk_ncalls && i < n && strcmp(fk_calls[i], want[i]) == 0,
                      "call %zu: got \"%s\", want \"%s\" (%zu calls, want %zu)", i,
                      i < fk_ncalls ? fk_calls[i] : "(none)", i < n ? want[i] : "(none)", fk_ncalls,
                      n);
    }
    fk_ncalls = 0;
    ck_assert(fk_ctx_ok);
    pthread_mutex_unlock(&fk_mu);
}

/* ---- tests ---- */

START_TEST(test_backoff_formula)
{
    struct reconcile_config c = {0};

    ck_assert_int_eq(reconcile_backoff_ms(NULL, 1), 500);
    ck_assert_int_eq(reconcile_backoff_ms(NULL, 2), 1000);
    ck_assert_int_eq(reconcile_backoff_ms(NULL, 7), 32000);
    ck_assert_int_eq(reconcile_backoff_ms(NULL, 8), 60000);
    ck_assert_int_eq(reconcile_backoff_ms(NULL, 4000000000u), 60000);
    c.backoff_min_ms = 100;
    c.backoff_max_ms = 250;
    ck_assert_int_eq(reconcile_backoff_ms(&c, 0), 100);
    ck_assert_int_eq(reconcile_backoff_ms(&c, 1), 100);
    ck_assert_int_eq(reconcile_backoff_ms(&c, 2), 200);
    ck_assert_int_eq(reconcile_backoff_ms(&c, 3), 250);
}
END_TEST

START_TEST(test_idle_until_leading)
{
    static const char *const none[] = {NULL};
    static const char *const want[] = {"add:ssh:ns1/j1:u1:[\"--ssh-port=2022\"]",
                                       "add:svc:ns1/j1:u1:[]", NULL};
    struct reconcile_stats st;

    put_and_enqueue(job("j1", "u1", "{\"svc\":[],\"ssh\":[\"--ssh-port=2022\"]}", NULL));
    sleep_ms(100);
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.reconciles, 0);
    ck_assert_uint_eq(st.queue_len, 0); /* a follower queues nothing */
    ck_assert_uint_eq(st.keys, 0);
    assert_calls(none);
    reconcile_set_leading(rec, true); /* the cache has j1: queued now */
    wait_runs(1);
    assert_calls(want);
}
END_TEST

START_TEST(test_add_then_update)
{
    static const char *const first[] = {"add:ssh:ns1/j1:u1:[]", "add:svc:ns1/j1:u1", NULL};
    static const char *const second[] = {"update:ssh:ns1/j1:u1:[]", "update:svc:ns1/j1:u1", NULL};
    struct reconcile_stats st;

    reconcile_set_leading(rec, true);
    /* svc given as null: enabled with no arguments (ctx.args NULL) */
    put_and_enqueue(job("j1", "u1", "{\"svc\":null,\"ssh\":[],\"nope\":[]}", NULL));
    wait_runs(1);
    assert_calls(first);
    reconcile_enqueue(rec, NULL); /* no Job: ignored */
    put_and_enqueue(job("j1", "u1", "{\"svc\":null,\"ssh\":[]}", NULL));
    wait_runs(2);
    assert_calls(second);
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.errors, 0);
    ck_assert_uint_eq(st.foreign, 1); /* the fake svc add counts one foreign object */
}
END_TEST

START_TEST(test_implied_and_removed)
{
    /* pytorch implies svc (D1); removing pytorch removes both */
    static const char *const first[] = {"add:svc:ns1/j1:u1", "add:pytorch:ns1/j1:u1:[]", NULL};
    static const char *const second[] = {"add:ssh:ns1/j1:u1:[]", "delete:svc:ns1/j1:u1",
                                         "delete:pytorch:ns1/j1:u1", NULL};
    static const char *const third[] = {"update:ssh:ns1/j1:u1:[]", NULL};

    reconcile_set_leading(rec, true);
    put_and_enqueue(job("j1", "u1", "{\"pytorch\":[]}", NULL));
    wait_runs(1);
    assert_calls(first);
    put_and_enqueue(job("j1", "u1", "{\"ssh\":[]}", NULL));
    wait_runs(2);
    assert_calls(second);
    put_and_enqueue(job("j1", "u1", "{\"ssh\":[]}", NULL));
    wait_runs(3);
    assert_calls(third);
}
END_TEST

START_TEST(test_terminal_phases)
{
    static const char *const none[] = {NULL};
    static const char *const phases[] = {"Completed", "Failed", "Terminated", "Aborted"};
    static const char *const running[] = {"Pending",    "Running",  "Restarting",
                                          "Completing", "Aborting", "Terminating"};
    unsigned long n = 0;

    reconcile_set_leading(rec, true);
    for (size_t i = 0; i < 4; i++) {
        put_and_enqueue(job("j1", "u1", "{\"mpi\":[]}", "Running"));
        wait_runs(++n);
        if (i == 0) {
            static const char *const mpi[] = {"add:ssh:ns1/j1:u1", "add:svc:ns1/j1:u1", NULL};

            assert_calls(mpi);
        }
        pthread_mutex_lock(&fk_mu);
        fk_ncalls = 0;
        pthread_mutex_unlock(&fk_mu);
        put_and_enqueue(job("j1", "u1", "{\"mpi\":[]}", phases[i]));
        wait_runs(++n);
        {
            static const char *const mpidel[] = {"delete:ssh:ns1/j1:u1", "delete:svc:ns1/j1:u1",
                                                 NULL};

            assert_calls(mpidel);
        }
        /* terminal again (resync): nothing left to delete */
        put_and_enqueue(job("j1", "u1", "{\"mpi\":[]}", phases[i]));
        wait_runs(++n);
        assert_calls(none);
    }
    /* the non-terminal phases of Volcano do not tear down */
    for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++) {
        put_and_enqueue(job("j2", "u2", "{\"ssh\":[],\"svc\":[]}", running[i]));
        wait_runs(++n);
    }
    pthread_mutex_lock(&fk_mu);
    ck_assert_uint_eq(fk_ncalls, 12);
    ck_assert_str_eq(fk_calls[0], "add:ssh:ns1/j2:u2:[]");
    ck_assert_str_eq(fk_calls[11], "update:svc:ns1/j2:u2:[]");
    fk_ncalls = 0;
    pthread_mutex_unlock(&fk_mu);

    /* after a restart a terminal Job seen first gets the effective set's deletes */
    reconcile_stop(rec);
    start_rec(3600);
    reconcile_set_leading(rec, true); /* enqueues every cached Job: j1 (terminal) and j2 */
    wait_runs(2);
    pthread_mutex_lock(&fk_mu);
    ck_assert_uint_eq(fk_ncalls, 4);
    pthread_mutex_unlock(&fk_mu);
}
END_TEST

START_TEST(test_restart_terminal_first_seen)
{
    static const char *const del[] = {"delete:ssh:ns1/j1:u1:[]", "delete:svc:ns1/j1:u1",
                                      "delete:ray:ns1/j1:u1:[]", NULL};
    static const char *const none[] = {NULL};

    reconcile_set_leading(rec, true);
    put_and_enqueue(job("j1", "u1", "{\"ssh\":[],\"ray\":[]}", "Failed"));
    wait_runs(1);
    assert_calls(del);
    put_and_enqueue(job("j1", "u1", "{\"ssh\":[],\"ray\":[]}", "Failed"));
    wait_runs(2);
    assert_calls(none);
}
END_TEST

START_TEST(test_deleted)
{
    static const char *const add[] = {"add:ssh:ns1/j1:u1:[]", NULL};
    static const char *const del[] = {"delete:ssh:ns1/j1:u1:[]", NULL};
    static const char *const none[] = {NULL};
    json_t *j = job("j1", "u1", "{\"ssh\":[]}", NULL);

    reconcile_set_leading(rec, true);
    ck_assert_int_eq(cache_put(cache, j), 0);
    reconcile_enqueue(rec, j);
    wait_runs(1);
    assert_calls(add);
    ck_assert_int_eq(cache_remove(cache, "ns1", "j1"), 0);
    reconcile_deleted(rec, j);
    wait_runs(2);
    assert_calls(del);
    /* forgotten: a second DELETED (relist) tears down the effective set again */
    reconcile_enqueue(rec, j); /* not in the cache: nothing */
    wait_runs(3);
    assert_calls(none);
    json_decref(j);
}
END_TEST

START_TEST(test_deleted_then_recreated)
{
    static const char *const want[] = {"add:ssh:ns1/j1:uA:[]",    "add:svc:ns1/j1:uA:[]",
                                       "delete:ssh:ns1/j1:uA:[]", "delete:svc:ns1/j1:uA:[]",
                                       "add:svc:ns1/j1:uB:[]",    NULL};
    json_t *a = job("j1", "uA", "{\"ssh\":[],\"svc\":[]}", NULL);
    json_t *b = job("j1", "uB", "{\"svc\":[]}", NULL);
    struct reconcile_stats st;

    reconcile_set_leading(rec, true);
    pthread_mutex_lock(&fk_mu);
    fk_block = true;
    fk_block_plugin = 2; /* svc: uA's add waits at the gate */
    pthread_mutex_unlock(&fk_mu);
    ck_assert_int_eq(cache_put(cache, a), 0);
    reconcile_enqueue(rec, a);
    wait_blocked(1);
    /* both events while the key is being processed: one more run, which tears the
     * old uid down, then adds the new one */
    ck_assert_int_eq(cache_put(cache, b), 0);
    reconcile_deleted(rec, a);
    reconcile_enqueue(rec, b);
    pthread_mutex_lock(&fk_mu);
    fk_block_plugin = -1;
    pthread_mutex_unlock(&fk_mu);
    unblock();
    wait_runs(2);
    assert_calls(want);
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.uids, 1); /* uA forgotten, uB remembered */
    json_decref(a);
    json_decref(b);
}
END_TEST

START_TEST(test_one_more_run_after_changes_during_run)
{
    struct reconcile_stats st;

    reconcile_set_leading(rec, true);
    pthread_mutex_lock(&fk_mu);
    fk_block = true;
    fk_block_plugin = 2; /* svc */
    pthread_mutex_unlock(&fk_mu);
    put_and_enqueue(job("j1", "u1", "{\"svc\":[]}", NULL));
    wait_blocked(1);
    for (int i = 0; i < 10; i++)
        put_and_enqueue(job("j1", "u1", "{\"svc\":[]}", NULL));
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.queue_len, 0); /* processing: only marked dirty */
    ck_assert_uint_eq(st.reconciles, 0);
    pthread_mutex_lock(&fk_mu);
    fk_block_plugin = -1;
    pthread_mutex_unlock(&fk_mu);
    unblock();
    wait_runs(2);
    sleep_ms(100);
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.reconciles, 2);
    pthread_mutex_lock(&fk_mu);
    ck_assert_uint_eq(fk_ncalls, 2);
    ck_assert_str_eq(fk_calls[0], "add:svc:ns1/j1:u1:[]");
    ck_assert_str_eq(fk_calls[1], "update:svc:ns1/j1:u1:[]");
    ck_assert_int_eq(fk_max_active[0], 1);
    pthread_mutex_unlock(&fk_mu);
}
END_TEST

START_TEST(test_never_concurrent_per_key)
{
    reconcile_set_leading(rec, true);
    pthread_mutex_lock(&fk_mu);
    fk_sleep_ms = 2;
    pthread_mutex_unlock(&fk_mu);
    for (int i = 0; i < 200; i++) {
        put_and_enqueue(job("j1", "u1", "{\"ssh\":[],\"svc\":[]}", NULL));
        put_and_enqueue(job("j2", "u2", "{\"ssh\":[],\"svc\":[]}", NULL));
        if (i % 10 == 0)
            sleep_ms(1);
    }
    wait_runs(2);
    sleep_ms(100);
    wait_runs(2);
    pthread_mutex_lock(&fk_mu);
    ck_assert_int_eq(fk_max_active[0], 1);
    ck_assert_int_eq(fk_max_active[1], 1);
    pthread_mutex_unlock(&fk_mu);
}
END_TEST

START_TEST(test_two_keys_in_parallel)
{
    reconcile_set_leading(rec, true);
    pthread_mutex_lock(&fk_mu);
    fk_block = true;
    fk_block_plugin = 0; /* ssh */
    pthread_mutex_unlock(&fk_mu);
    put_and_enqueue(job("j1", "u1", "{\"ssh\":[]}", NULL));
    put_and_enqueue(job("j2", "u2", "{\"ssh\":[]}", NULL));
    wait_blocked(2); /* both workers inside a hook at the same time */
    unblock();
    wait_runs(2);
    pthread_mutex_lock(&fk_mu);
    ck_assert_int_eq(fk_max_total, 2);
    pthread_mutex_unlock(&fk_mu);
}
END_TEST

START_TEST(test_retry_with_backoff)
{
    static const char *const want[] = {
        "add:ssh:ns1/j1:u1:[]",    "add:svc:ns1/j1:u1:[]",    "update:ssh:ns1/j1:u1:[]",
        "add:svc:ns1/j1:u1:[]",    "update:ssh:ns1/j1:u1:[]", "add:svc:ns1/j1:u1:[]",
        "update:ssh:ns1/j1:u1:[]", "add:svc:ns1/j1:u1:[]",    NULL};
    struct reconcile_stats st;

    pthread_mutex_lock(&fk_mu);
    fk_fail[2][0] = 3; /* svc add fails three times */
    pthread_mutex_unlock(&fk_mu);
    reconcile_set_leading(rec, true);
    put_and_enqueue(job("j1", "u1", "{\"ssh\":[],\"svc\":[]}", NULL));
    wait_runs(4);
    sleep_ms(150); /* no fifth run: success reset the backoff, nothing re-queued */
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.reconciles, 4);
    ck_assert_uint_eq(st.errors, 3);
    assert_calls(want);
}
END_TEST

/* The runner names the plugin in a hook's error, once (the fake hook's message has none). */
START_TEST(test_hook_error_names_plugin)
{
    struct tu_stderr cap;
    char *log;

    pthread_mutex_lock(&fk_mu);
    fk_fail[2][0] = 1; /* svc add fails once */
    pthread_mutex_unlock(&fk_mu);
    tu_stderr_begin(&cap);
    reconcile_set_leading(rec, true);
    put_and_enqueue(job("j1", "u1", "{\"svc\":[]}", NULL));
    wait_runs(2);
    log = tu_stderr_end(&cap);
    ck_assert_msg(strstr(log,
                         "\"msg\":\"reconcile: hook failed\",\"job\":\"ns1/j1\",\"uid\":\"u1\","
                         "\"plugin\":\"svc\",\"hook\":\"add\",\"rc\":\"api error\","
                         "\"err\":\"svc plugin: injected failure\"}\n")
                      != NULL,
                  "log: %s", log);
    free(log);
}
END_TEST

START_TEST(test_delete_runs_every_hook)
{
    static const char *const first[] = {"delete:ssh:ns1/j1:u1:[]", "delete:svc:ns1/j1:u1:[]",
                                        "delete:ssh:ns1/j1:u1:[]", NULL};
    json_t *j = job("j1", "u1", "{\"ssh\":[],\"svc\":[]}", NULL);
    struct reconcile_stats st;

    pthread_mutex_lock(&fk_mu);
    fk_fail[0][2] = 1; /* ssh delete fails once */
    pthread_mutex_unlock(&fk_mu);
    reconcile_set_leading(rec, true);
    reconcile_deleted(rec, j); /* never seen: effective set */
    wait_runs(2);
    sleep_ms(100);
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.reconciles, 2);
    ck_assert_uint_eq(st.errors, 1);
    assert_calls(first); /* the retry only redoes the failed plugin */
    json_decref(j);
}
END_TEST

START_TEST(test_stop_leading_stops_picking)
{
    static const char *const want[] = {"add:ssh:ns1/j1:u1:[]", NULL};
    struct reconcile_stats st;

    reconcile_set_leading(rec, true);
    pthread_mutex_lock(&fk_mu);
    fk_block = true;
    fk_block_plugin = 0;
    pthread_mutex_unlock(&fk_mu);
    put_and_enqueue(job("j1", "u1", "{\"ssh\":[]}", NULL));
    wait_blocked(1);
    reconcile_set_leading(rec, false);
    put_and_enqueue(job("j2", "u2", "{\"svc\":[]}", NULL));
    put_and_enqueue(job("j1", "u1", "{\"ssh\":[]}", NULL)); /* j1 changes during its run */
    unblock();
    wait_runs_queued(1, 0);
    sleep_ms(100);
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.reconciles, 1); /* j1 not run again, j2 not run */
    ck_assert_uint_eq(st.queue_len, 0);
    assert_calls(want);
    /* the new lead finds both in the cache; j1's state was forgotten: an add again */
    pthread_mutex_lock(&fk_mu);
    fk_block_plugin = -1;
    pthread_mutex_unlock(&fk_mu);
    reconcile_set_leading(rec, true);
    wait_runs(3);
    pthread_mutex_lock(&fk_mu);
    ck_assert_uint_eq(fk_ncalls, 2);
    ck_assert(strcmp(fk_calls[0], "add:ssh:ns1/j1:u1:[]") == 0
                  ? strcmp(fk_calls[1], "add:svc:ns1/j2:u2:[]") == 0
                  : strcmp(fk_calls[0], "add:svc:ns1/j2:u2:[]") == 0
                      && strcmp(fk_calls[1], "add:ssh:ns1/j1:u1:[]") == 0);
    fk_ncalls = 0;
    pthread_mutex_unlock(&fk_mu);
}
END_TEST

/* Wait (at most 10 s) until the reconciler remembers n uids and holds k key records. */
static void wait_uids_keys(unsigned long n, unsigned long k)
{
    struct reconcile_stats st;

    for (int i = 0; i < 2000; i++) {
        reconcile_get_stats(rec, &st);
        if (st.uids == n && st.keys == k)
            return;
        sleep_ms(5);
    }
    ck_abort_msg("timed out waiting for %lu uids and %lu keys (have %lu, %lu)", n, k, st.uids,
                 st.keys);
}

START_TEST(test_follower_keeps_no_work)
{
    static const char *const want[] = {"add:ssh:ns1/live:uL:[]", NULL};
    static const char *const none[] = {NULL};
    struct reconcile_stats st;
    char name[32];
    char uid[32];

    /* A standby sees 300 Jobs created, changed and deleted, and one that stays. */
    for (int i = 0; i < 300; i++) {
        json_t *j;

        snprintf(name, sizeof(name), "gone-%03d", i);
        snprintf(uid, sizeof(uid), "ug-%03d", i);
        j = job(name, uid, "{\"ssh\":[],\"svc\":[]}", NULL);
        ck_assert_int_eq(cache_put(cache, j), 0);
        reconcile_enqueue(rec, j);
        reconcile_enqueue(rec, j);
        ck_assert_int_eq(cache_remove(cache, "ns1", name), 0);
        reconcile_deleted(rec, j);
        json_decref(j);
    }
    put_and_enqueue(job("live", "uL", "{\"ssh\":[]}", NULL));
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.queue_len, 0);
    ck_assert_uint_eq(st.keys, 0);
    ck_assert_uint_eq(st.uids, 0);
    assert_calls(none);

    /* Taking the lead runs the live Job only: no teardown of the long-gone ones
     * (their objects go with garbage collection). */
    reconcile_set_leading(rec, true);
    wait_runs(1);
    sleep_ms(100);
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.reconciles, 1);
    ck_assert_uint_eq(st.queue_len, 0);
    ck_assert_uint_eq(st.uids, 1);
    assert_calls(want);
}
END_TEST

START_TEST(test_lead_lost_forgets_uids)
{
    static const char *const none[] = {NULL};
    json_t *j1 = job("j1", "u1", "{\"ssh\":[]}", NULL);
    char *priv = NULL;
    char *pub = NULL;
    struct reconcile_stats st;

    reconcile_set_leading(rec, true);
    ck_assert_int_eq(cache_put(cache, j1), 0);
    reconcile_enqueue(rec, j1);
    wait_runs(1);
    wait_uids_keys(1, 0);
    ck_assert_ptr_nonnull(fk_store);
    ck_assert_int_eq(sshkeys_lookup(fk_store, "u1", &priv, &pub), 0);
    ck_assert_str_eq(priv, "priv");
    free(priv);
    free(pub);

    /* j2's svc add fails, and its run is in flight when the lead goes. */
    pthread_mutex_lock(&fk_mu);
    fk_ncalls = 0;
    fk_fail[2][0] = 1;
    fk_block = true;
    fk_block_plugin = 2;
    pthread_mutex_unlock(&fk_mu);
    put_and_enqueue(job("j2", "u2", "{\"svc\":[]}", NULL));
    wait_blocked(1);
    reconcile_set_leading(rec, false);
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.uids, 2); /* a run is in flight: kept until it ends */
    ck_assert_uint_eq(st.keys, 1);
    /* j1 is deleted while this replica follows */
    ck_assert_int_eq(cache_remove(cache, "ns1", "j1"), 0);
    reconcile_deleted(rec, j1);
    unblock();
    /* the run ends: no retry kept, every uid and its key pair forgotten */
    wait_uids_keys(0, 0);
    ck_assert_int_eq(sshkeys_lookup(fk_store, "u1", &priv, &pub), WH_ENOTFOUND);
    sleep_ms(100); /* more than the 5 ms backoff: nothing came back */
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.keys, 0);
    ck_assert_uint_eq(st.queue_len, 0);
    ck_assert_uint_eq(st.reconciles, 2);
    pthread_mutex_lock(&fk_mu);
    ck_assert_uint_eq(fk_ncalls, 1);
    ck_assert_str_eq(fk_calls[0], "add:svc:ns1/j2:u2:[]");
    fk_ncalls = 0;
    fk_block_plugin = -1;
    pthread_mutex_unlock(&fk_mu);

    /* the next lead: j2 added again (first sight), nothing at all for j1 */
    reconcile_set_leading(rec, true);
    wait_runs(3);
    {
        static const char *const want[] = {"add:svc:ns1/j2:u2:[]", NULL};

        assert_calls(want);
    }
    sleep_ms(100);
    assert_calls(none);
    json_decref(j1);
}
END_TEST

START_TEST(test_resync)
{
    static const char *const want[] = {"add:ssh:ns1/j1:u1:[]", "update:ssh:ns1/j1:u1:[]", NULL};
    json_t *j = job("j1", "u1", "{\"ssh\":[]}", NULL);

    reconcile_stop(rec);
    start_rec(1);
    reconcile_set_leading(rec, true); /* the cache is empty: nothing queued */
    ck_assert_int_eq(cache_put(cache, j), 0);
    json_decref(j);
    /* no event at all: each resync (1 s) finds the Job in the cache */
    wait_runs(2);
    pthread_mutex_lock(&fk_mu);
    fk_ncalls = 2; /* a third resync may have started meanwhile */
    pthread_mutex_unlock(&fk_mu);
    assert_calls(want);
}
END_TEST

START_TEST(test_null_and_bad_input)
{
    struct reconcile_stats st;
    json_t *nameless = tu_json("{\"metadata\":{\"namespace\":\"ns1\"}}");

    reconcile_enqueue(NULL, nameless);
    reconcile_deleted(NULL, nameless);
    reconcile_set_leading(NULL, true);
    reconcile_get_stats(NULL, &st);
    ck_assert_uint_eq(st.reconciles, 0);
    reconcile_stop(NULL);
    reconcile_enqueue(rec, nameless);
    reconcile_deleted(rec, nameless);
    reconcile_enqueue(rec, NULL);
    reconcile_get_stats(rec, &st);
    ck_assert_uint_eq(st.queue_len, 0);
    json_decref(nameless);
}
END_TEST

static Suite *reconcile_suite(void)
{
    Suite *s = suite_create("reconcile");
    TCase *tc = tcase_create("queue");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_backoff_formula);
    tcase_add_test(tc, test_idle_until_leading);
    tcase_add_test(tc, test_add_then_update);
    tcase_add_test(tc, test_implied_and_removed);
    tcase_add_test(tc, test_terminal_phases);
    tcase_add_test(tc, test_restart_terminal_first_seen);
    tcase_add_test(tc, test_deleted);
    tcase_add_test(tc, test_deleted_then_recreated);
    tcase_add_test(tc, test_one_more_run_after_changes_during_run);
    tcase_add_test(tc, test_never_concurrent_per_key);
    tcase_add_test(tc, test_two_keys_in_parallel);
    tcase_add_test(tc, test_retry_with_backoff);
    tcase_add_test(tc, test_hook_error_names_plugin);
    tcase_add_test(tc, test_delete_runs_every_hook);
    tcase_add_test(tc, test_stop_leading_stops_picking);
    tcase_add_test(tc, test_follower_keeps_no_work);
    tcase_add_test(tc, test_lead_lost_forgets_uids);
    tcase_add_test(tc, test_resync);
    tcase_add_test(tc, test_null_and_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(reconcile_suite());
}
