/*
 * plugincase.h - one-call harness for the plugin suites (header-only, static).
 *
 * A case is a Job, the framework's pod info and a pod, all JSON text written
 * with ' in place of " so the tables stay readable (no value in these suites
 * needs a real apostrophe). The plugin's arguments are taken from the Job's
 * spec.plugins[<plugin name>], as the framework does.
 */
#ifndef WH_PLUGINCASE_H
#define WH_PLUGINCASE_H

#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugin.h"
#include "tests/testutil.h"
#include "webhook/error.h"
#include "webhook/warnings.h"

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

static inline void pc_assert_warnings(const struct warnings *w, const char *sq_want)
{
    json_t *got = warnings_to_json(w);

    pc_assert_json(got, sq_want);
    json_decref(got);
}

static inline struct plugin_ctx pc_ctx(const struct plugin *p, const json_t *job,
                                       const struct plugin_pod_info *info, struct warnings *w)
{
    const json_t *args = json_object_get(json_object_get(json_object_get(job, "spec"), "plugins"),
                                         p->name);
    struct plugin_ctx c = {
        .name = p->name, .job = job, .args = args, .pod = info, .warnings = w, .kc = NULL,
    };

    return c;
}

/*
 * Run p.on_pod_create and assert success, the WHOLE resulting pod and the exact
 * warnings; then D5's fixed point: a second call on the result returns 0, changes
 * nothing and adds no warning. job_sq may be NULL (no Job).
 * @return new reference: the resulting pod, for further byte-level asserts.
 */
static inline json_t *pc_ok_keep(const struct plugin *p, const char *job_sq,
                                 const struct plugin_pod_info *info, const char *pod_sq,
                                 const char *want_pod_sq, const char *want_warnings_sq)
{
    json_t *job = job_sq != NULL ? pc_json(job_sq) : NULL;
    json_t *pod = pc_json(pod_sq);
    json_t *first;
    struct warnings w;
    struct wh_error err = {0, ""};
    struct plugin_ctx c = pc_ctx(p, job, info, &w);
    int rc;

    warnings_init(&w);
    rc = p->on_pod_create(&c, pod, &err);
    ck_assert_msg(rc == 0, "on_pod_create returned %d: %s", rc, err.msg);
    pc_assert_json(pod, want_pod_sq);
    pc_assert_warnings(&w, want_warnings_sq);

    first = json_deep_copy(pod);
    ck_assert_ptr_nonnull(first);
    rc = p->on_pod_create(&c, pod, &err);
    ck_assert_msg(rc == 0, "second on_pod_create returned %d: %s", rc, err.msg);
    ck_assert_msg(json_equal(pod, first), "second call changed the pod");
    pc_assert_warnings(&w, want_warnings_sq);

    json_decref(first);
    json_decref(job);
    return pod;
}

static inline void pc_ok(const struct plugin *p, const char *job_sq,
                         const struct plugin_pod_info *info, const char *pod_sq,
                         const char *want_pod_sq, const char *want_warnings_sq)
{
    json_decref(pc_ok_keep(p, job_sq, info, pod_sq, want_pod_sq, want_warnings_sq));
}

/* Assert on_pod_create fails with WH_EINVAL and exactly want_msg, leaving the pod alone. */
static inline void pc_err(const struct plugin *p, const char *job_sq,
                          const struct plugin_pod_info *info, const char *pod_sq,
                          const char *want_msg, const char *want_warnings_sq)
{
    json_t *job = job_sq != NULL ? pc_json(job_sq) : NULL;
    json_t *pod = pc_json(pod_sq);
    struct warnings w;
    struct wh_error err = {0, ""};
    struct plugin_ctx c = pc_ctx(p, job, info, &w);

    warnings_init(&w);
    ck_assert_int_eq(p->on_pod_create(&c, pod, &err), WH_EINVAL);
    ck_assert_int_eq(err.code, WH_EINVAL);
    ck_assert_str_eq(err.msg, want_msg);
    pc_assert_json(pod, pod_sq);
    pc_assert_warnings(&w, want_warnings_sq);
    json_decref(pod);
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
