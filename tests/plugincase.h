/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugincase.h - one-call harness for the eight plugin suites (header-only, static).
 *
 * A case is a Job, the framework's pod info and a pod, all JSON text written
 * with ' in place of " so the tables stay readable (no value in these suites
 * needs a real apostrophe). Plain JSON with real double quotes is read as it
 * is, provided it holds no '. The plugin's arguments are taken from the Job's
 * spec.plugins[<plugin name>], as the framework does (pc_ok, pc_err), or given
 * on their own, NULL standing for "no arguments" (pc_ok_args, pc_chaos_args).
 *
 * Every check runs one plugin's on_pod_create in the test's own thread; the
 * allocation-failure switch (pc_alloc_fail_nth) is process-wide jansson state.
 */
#ifndef WH_PLUGINCASE_H
#define WH_PLUGINCASE_H

#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "k8s/podview.h"
#include "plugins/plugin.h"
#include "plugins/podedit.h"
#include "plugins/warnings.h"
#include "tests/testutil.h"

/* Parse text with ' standing for ". New reference; fails the test on bad JSON. */
static inline json_t *pc_json(const char *sq_text)
{
    char *t = strdup(sq_text);
    json_t *v;

    ck_assert_ptr_nonnull(t);
    for (char *p = t; *p != '\0'; p++)
        if (*p == '\'')
            *p = '"';
    v = tu_json(t);
    free(t);
    return v;
}

/* Assert got equals the JSON text sq_want (' for "), printing both when not. */
static inline void pc_assert_json(const json_t *got, const char *sq_want)
{
    json_t *want = pc_json(sq_want);
    char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
    char *w = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);

    ck_assert_msg(json_equal(got, want), "JSON differs\n got: %s\nwant: %s", g ? g : "(null)", w);
    free(g);
    free(w);
    json_decref(want);
}

/* Assert the warnings list w equals the JSON text sq_want (' for "). */
static inline void pc_assert_warnings(const struct warnings *w, const char *sq_want)
{
    json_t *got = warnings_to_json(w);

    pc_assert_json(got, sq_want);
    json_decref(got);
}

/* @return a pod-side context for p with job and args (both borrowed, may be NULL). */
static inline struct plugin_ctx pc_ctx_args(const struct plugin *p, const json_t *job,
                                            const json_t *args, const struct plugin_pod_info *info,
                                            struct warnings *w)
{
    struct plugin_ctx c = {
        .name = p->name,
        .job = job,
        .args = args,
        .pod = info,
        .warnings = w,
        .kc = NULL,
    };

    return c;
}

/* @return borrowed job.spec.plugins[p->name], NULL when absent (or job is NULL). */
static inline const json_t *pc_job_args(const struct plugin *p, const json_t *job)
{
    return json_object_get(json_object_get(json_object_get(job, "spec"), "plugins"), p->name);
}

/* @return a pod-side context whose args are job.spec.plugins[p->name] (borrowed). */
static inline struct plugin_ctx pc_ctx(const struct plugin *p, const json_t *job,
                                       const struct plugin_pod_info *info, struct warnings *w)
{
    return pc_ctx_args(p, job, pc_job_args(p, job), info, w);
}

/* A hook's pod as the chain gives it: the view of a jansson pod and the edits over it. */
struct pc_pod {
    struct pod_view view;
    struct pod_edits edits;
};

static inline void pc_pod_open(struct pc_pod *pp, const json_t *pod)
{
    ck_assert_int_eq(podview_from_json(&pp->view, pod), 0);
    ck_assert_int_eq(pod_edits_init(&pp->edits, &pp->view), 0);
}

/* The edits made on pod itself (its members replaced by the edited pod's, in its order),
 * failed hook or not (the chain drops a failed hook's, and the suites check them). */
static inline void pc_pod_close(struct pc_pod *pp, json_t *pod)
{
    json_t *after = pod_edits_pod(&pp->edits);

    ck_assert_ptr_nonnull(after);
    if (json_is_object(pod)) {
        ck_assert_int_eq(json_object_clear(pod), 0);
        ck_assert_int_eq(json_object_update(pod, after), 0);
    }
    json_decref(after);
    pod_edits_dispose(&pp->edits);
    podview_dispose(&pp->view);
}

/* p.on_pod_create on pod (a jansson pod, changed in place) as the chain runs it. */
static inline int pc_call(const struct plugin *p, const struct plugin_ctx *c, json_t *pod,
                          struct wh_error *err)
{
    struct pc_pod pp;
    int rc;

    pc_pod_open(&pp, pod);
    rc = p->on_pod_create(c, &pp.edits, err);
    pc_pod_close(&pp, pod);
    return rc;
}

/*
 * The core of every successful case: run p.on_pod_create on pod (changed in
 * place) and assert it returns 0 with err.code 0, the WHOLE resulting pod and
 * the exact warnings; then D5's fixed point: a second call on the result
 * returns 0, changes nothing and adds no warning. job and args are borrowed
 * and may be NULL.
 */
static inline void pc_run_ok(const struct plugin *p, const json_t *job, const json_t *args,
                             const struct plugin_pod_info *info, json_t *pod,
                             const char *want_pod_sq, const char *want_warnings_sq)
{
    json_t *first;
    struct warnings w;
    struct wh_error err = {0, ""};
    struct plugin_ctx c = pc_ctx_args(p, job, args, info, &w);
    int rc;

    warnings_init(&w);
    rc = pc_call(p, &c, pod, &err);
    ck_assert_msg(rc == 0, "on_pod_create returned %d: %s", rc, err.msg);
    ck_assert_int_eq(err.code, 0);
    pc_assert_json(pod, want_pod_sq);
    pc_assert_warnings(&w, want_warnings_sq);

    first = json_deep_copy(pod);
    ck_assert_ptr_nonnull(first);
    rc = pc_call(p, &c, pod, &err);
    ck_assert_msg(rc == 0, "second on_pod_create returned %d: %s", rc, err.msg);
    ck_assert_msg(json_equal(pod, first), "second call changed the pod");
    pc_assert_warnings(&w, want_warnings_sq);
    json_decref(first);
}

/*
 * pc_run_ok with the plugin's arguments from job.spec.plugins[p->name].
 * job_sq may be NULL (no Job).
 * @return new reference: the resulting pod, for further byte-level asserts.
 */
static inline json_t *pc_ok_keep(const struct plugin *p, const char *job_sq,
                                 const struct plugin_pod_info *info, const char *pod_sq,
                                 const char *want_pod_sq, const char *want_warnings_sq)
{
    json_t *job = job_sq != NULL ? pc_json(job_sq) : NULL;
    json_t *pod = pc_json(pod_sq);

    pc_run_ok(p, job, pc_job_args(p, job), info, pod, want_pod_sq, want_warnings_sq);
    json_decref(job);
    return pod;
}

/* pc_ok_keep without the result. */
static inline void pc_ok(const struct plugin *p, const char *job_sq,
                         const struct plugin_pod_info *info, const char *pod_sq,
                         const char *want_pod_sq, const char *want_warnings_sq)
{
    json_decref(pc_ok_keep(p, job_sq, info, pod_sq, want_pod_sq, want_warnings_sq));
}

/*
 * pc_run_ok with the arguments given apart from the Job: args_sq is the JSON
 * array text, or NULL for no arguments at all (an implied plugin, D1).
 * job_sq may be NULL (no Job).
 */
static inline void pc_ok_args(const struct plugin *p, const char *job_sq, const char *args_sq,
                              const struct plugin_pod_info *info, const char *pod_sq,
                              const char *want_pod_sq, const char *want_warnings_sq)
{
    json_t *job = job_sq != NULL ? pc_json(job_sq) : NULL;
    json_t *args = args_sq != NULL ? pc_json(args_sq) : NULL;
    json_t *pod = pc_json(pod_sq);

    pc_run_ok(p, job, args, info, pod, want_pod_sq, want_warnings_sq);
    json_decref(pod);
    json_decref(args);
    json_decref(job);
}

/*
 * Assert on_pod_create fails with want_rc and exactly want_msg; the pod is then
 * want_pod_sq, or as it was when that is NULL (a failed hook's edits are dropped
 * with the chain's copy, webhook/mutate.c, so some may be there).
 */
static inline void pc_err_rc(const struct plugin *p, const char *job_sq,
                             const struct plugin_pod_info *info, const char *pod_sq, int want_rc,
                             const char *want_msg, const char *want_pod_sq,
                             const char *want_warnings_sq)
{
    json_t *job = job_sq != NULL ? pc_json(job_sq) : NULL;
    json_t *pod = pc_json(pod_sq);
    struct warnings w;
    struct wh_error err = {0, ""};
    struct plugin_ctx c = pc_ctx(p, job, info, &w);

    warnings_init(&w);
    ck_assert_int_eq(pc_call(p, &c, pod, &err), want_rc);
    ck_assert_int_eq(err.code, want_rc);
    ck_assert_str_eq(err.msg, want_msg);
    pc_assert_json(pod, want_pod_sq != NULL ? want_pod_sq : pod_sq);
    pc_assert_warnings(&w, want_warnings_sq);
    json_decref(pod);
    json_decref(job);
}

/* Assert on_pod_create fails with WH_EINVAL and exactly want_msg, leaving the pod alone. */
static inline void pc_err(const struct plugin *p, const char *job_sq,
                          const struct plugin_pod_info *info, const char *pod_sq,
                          const char *want_msg, const char *want_warnings_sq)
{
    pc_err_rc(p, job_sq, info, pod_sq, WH_EINVAL, want_msg, NULL, want_warnings_sq);
}

/*
 * Assert p's registry entry: its name, an on_pod_create, and either all three
 * job hooks (add and update being one sync) or none at all.
 */
static inline void pc_assert_entry(const struct plugin *p, const char *name, bool job_hooks)
{
    ck_assert_str_eq(p->name, name);
    ck_assert(p->on_pod_create != NULL);
    if (job_hooks) {
        ck_assert(p->on_job_add != NULL);
        ck_assert(p->on_job_update == p->on_job_add);
        ck_assert(p->on_job_delete != NULL);
    } else {
        ck_assert(p->on_job_add == NULL);
        ck_assert(p->on_job_update == NULL);
        ck_assert(p->on_job_delete == NULL);
    }
}

/*
 * Allocation failures (every one a path to test): pc_alloc_fail_nth(n) makes jansson's
 * allocation number n from now (0 = the next one) fail, and only that one;
 * pc_alloc_restore() puts malloc back. Always restore before asserting.
 */
static inline long *pc_alloc_countdown(void)
{
    static long left;

    return &left;
}

static inline void *pc_alloc_failing_malloc(size_t n)
{
    long *left = pc_alloc_countdown();

    if ((*left)-- == 0)
        return NULL;
    return malloc(n);
}

static inline void pc_alloc_fail_nth(long n)
{
    *pc_alloc_countdown() = n;
    json_set_alloc_funcs(pc_alloc_failing_malloc, free);
}

static inline void pc_alloc_restore(void)
{
    json_set_alloc_funcs(malloc, free);
}

/*
 * Run p.on_pod_create (args as for pc_ok_args) on a fresh pod_sq with the Nth
 * allocation failing, for N = 0, 1, ... until a run succeeds: every failing
 * run must return WH_ENOMEM with an "out of memory" message (no crash;
 * ASan/LSan catch leaks), the successful run must give want_pod_sq, and at
 * least one run must have failed.
 */
static inline void pc_chaos_args(const struct plugin *p, const char *job_sq, const char *args_sq,
                                 const struct plugin_pod_info *info, const char *pod_sq,
                                 const char *want_pod_sq)
{
    json_t *job = job_sq != NULL ? pc_json(job_sq) : NULL;
    json_t *args = args_sq != NULL ? pc_json(args_sq) : NULL;
    int rc = -1;
    long n;

    for (n = 0; n < 100000 && rc != 0; n++) {
        json_t *pod = pc_json(pod_sq);
        struct warnings w;
        struct wh_error err = {0, ""};
        struct plugin_ctx c = pc_ctx_args(p, job, args, info, &w);

        struct pc_pod pp;

        warnings_init(&w);
        pc_pod_open(&pp, pod);
        pc_alloc_fail_nth(n);
        rc = p->on_pod_create(&c, &pp.edits, &err);
        pc_alloc_restore();
        pc_pod_close(&pp, pod);
        if (rc != 0) {
            ck_assert_int_eq(rc, WH_ENOMEM);
            ck_assert_int_eq(err.code, WH_ENOMEM);
            ck_assert_msg(strstr(err.msg, "out of memory") != NULL, "message: %s", err.msg);
        } else {
            pc_assert_json(pod, want_pod_sq);
        }
        json_decref(pod);
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_gt(n, 1); /* at least one run did fail */
    json_decref(args);
    json_decref(job);
}

/*
 * Replace every "@@" in sq_text by raw encoded as a JSON string, so values full
 * of quotes and newlines (TF_CONFIG, scripts) can be written once as plain C.
 * @return malloc'd text (free()); raw must not contain a '.
 */
static inline char *pc_subst(const char *sq_text, const char *raw)
{
    json_t *s = json_string(raw);
    char *enc = json_dumps(s, JSON_ENCODE_ANY);
    size_t enclen;
    size_t cap;
    char *out;
    size_t o = 0;

    ck_assert_ptr_nonnull(enc);
    ck_assert_ptr_null(strchr(raw, '\''));
    enclen = strlen(enc);
    cap = strlen(sq_text) * (enclen + 1) + 1;
    out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    for (const char *p = sq_text; *p != '\0'; p++) {
        if (p[0] == '@' && p[1] == '@') {
            memcpy(out + o, enc, enclen);
            o += enclen;
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
    free(enc);
    json_decref(s);
    return out;
}

/* @return borrowed value of env name in spec.containers[k], NULL when absent. */
static inline const char *pc_env(const json_t *pod, size_t k, const char *name)
{
    const json_t *spec = json_object_get(pod, "spec");
    const json_t *ctr = json_array_get(json_object_get(spec, "containers"), k);
    size_t i;
    const json_t *e;

    json_array_foreach(json_object_get(ctr, "env"), i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));

        if (n != NULL && strcmp(n, name) == 0)
            return json_string_value(json_object_get(e, "value"));
    }
    return NULL;
}

#endif
