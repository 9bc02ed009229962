/* SPDX-License-Identifier: Apache-2.0 */
/*
 * registry.c - the plugin table. Its order is the execution order (D2);
 * immutable, no runtime registration, no lock. Also what every plugin shares
 * through plugins/plugin.h: its argument parsing (plugin_args) and the plugin's
 * name in its errors (plugin_error_name), and its Job-constant parts kept per Job
 * version with their texts (plugin_memo_get, plugin_memo_keep).
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonobj.h"
#include "base/jsonw.h"
#include "plugins/args.h"
#include "plugins/plugin.h"

/* Each plugin's place in plugin_registry, the execution order (D2). */
enum registry_place {
    AT_SSH,
    AT_ENV,
    AT_SVC,
    AT_TENSORFLOW,
    AT_MPI,
    AT_PYTORCH,
    AT_HCCLRANK,
    AT_RAY,
    REGISTRY_LEN
};

const struct plugin *const plugin_registry[REGISTRY_LEN] = {
    [AT_SSH] = &plugin_ssh,           [AT_ENV] = &plugin_env,
    [AT_SVC] = &plugin_svc,           [AT_TENSORFLOW] = &plugin_tensorflow,
    [AT_MPI] = &plugin_mpi,           [AT_PYTORCH] = &plugin_pytorch,
    [AT_HCCLRANK] = &plugin_hcclrank, [AT_RAY] = &plugin_ray,
};
const size_t plugin_registry_len = REGISTRY_LEN;

/* The place of the plugin named name in plugin_registry; plugin_registry_len when none. */
static size_t registry_index(const char *name)
{
    for (size_t k = 0; k < plugin_registry_len; k++)
        if (strcmp(plugin_registry[k]->name, name) == 0)
            return k;
    return plugin_registry_len;
}

const struct plugin *plugin_find(const char *name)
{
    size_t k = registry_index(name);

    return k < plugin_registry_len ? plugin_registry[k] : NULL;
}

void plugin_args(const struct plugin_ctx *c, const struct args_def *defs, size_t ndefs)
{
    char msg[200];
    char key[WARNINGS_KEY_MAX];

    if (args_parse(defs, ndefs, c->args, msg, sizeof(msg)) < 0) {
        snprintf(key, sizeof(key), "spec.plugins.%s", c->name != NULL ? c->name : "");
        warnings_add_keyed(c->warnings, key, "%s plugin: %s, later arguments ignored",
                           c->name != NULL ? c->name : "", msg);
    }
}

int plugin_error_name(struct wh_error *err, const char *name, int rc)
{
    char cause[WH_ERROR_MSG_MAX];

    if (err == NULL)
        return rc;
    memcpy(cause, err->msg, sizeof(cause));
    cause[sizeof(cause) - 1] = '\0';
    return wh_error_set(err, rc, "%s plugin: %s", name,
                        cause[0] != '\0' ? cause : wh_error_str(rc));
}

void plugin_effective_set(const json_t *job, bool *enabled, const json_t **args, struct warnings *w)
{
    const json_t *plugins = json_member(json_member(job, "spec"), "plugins");
    const char *name;
    const json_t *value;

    for (size_t k = 0; k < plugin_registry_len; k++) {
        enabled[k] = false;
        args[k] = NULL;
    }
    json_object_foreach((json_t *)plugins, name, value) {
        size_t k = registry_index(name);

        if (k == plugin_registry_len) {
            warnings_add(w, "unknown plugin %s in job spec.plugins ignored", name);
            continue;
        }
        enabled[k] = true;
        args[k] = json_is_array(value) ? value : NULL;
    }
    /* Implied plugins (docs/plugins.md §3.7, D1): what Volcano's Job webhook adds on CREATE. */
    if (enabled[AT_TENSORFLOW] || enabled[AT_MPI] || enabled[AT_PYTORCH] || enabled[AT_RAY])
        enabled[AT_SVC] = true;
    if (enabled[AT_MPI])
        enabled[AT_SSH] = true;
}

/* A slot holds [parts, texts]: texts[i] is the compact text of parts[i], or, for an
 * array part (a list whose items are placed one by one), the texts of its items. */
enum { MEMO_PARTS, MEMO_TEXTS };

/* The texts of parts' items (item_texts) registered in c->texts. */
static void memo_register(const struct plugin_ctx *c, const json_t *parts, const json_t *texts)
{
    const json_t *item;
    size_t i;

    json_array_foreach(parts, i, item) {
        const json_t *t = json_array_get(texts, i);

        if (json_is_array(t))
            memo_register(c, item, t);
        else if (t != NULL) /* none past the texts kept (plugin_memo_keep_parts) */
            jsonw_texts_add(c->texts, item, json_string_value(t), json_string_length(t));
    }
}

json_t *plugin_memo_get(const struct plugin_ctx *c)
{
    const json_t *memo = c->job_memo != NULL ? *c->job_memo : NULL;

    if (memo == NULL)
        return NULL;
    if (c->texts != NULL)
        memo_register(c, json_array_get(memo, MEMO_PARTS), json_array_get(memo, MEMO_TEXTS));
    return json_incref(json_array_get(memo, MEMO_PARTS));
}

/* The compact text of each item of parts as a JSON string, an array item's as the
 * texts of its own items; NULL on ENOMEM. */
static json_t *item_texts(const json_t *parts, struct buf *b)
{
    json_t *texts = json_array();
    const json_t *item;
    size_t i;

    if (texts == NULL)
        return NULL;
    json_array_foreach(parts, i, item) {
        json_t *t;

        if (json_is_array(item)) {
            t = item_texts(item, b);
        } else {
            buf_truncate(b, 0);
            /* The text of valid strings is valid UTF-8: no second check. */
            t = jsonw_value(b, item) == 0 ? json_stringn_nocheck(buf_cstr(b), b->len) : NULL;
        }
        if (json_array_append_new(texts, t) < 0) {
            json_decref(texts);
            return NULL;
        }
    }
    return texts;
}

/* plugin_memo_keep, and plugin_memo_keep_parts when with_texts is false (texts: []). */
static json_t *memo_keep(const struct plugin_ctx *c, json_t *parts, bool with_texts)
{
    json_t *memo;
    struct buf b;

    /* A filled slot stays: texts registered from it may be in use (their values'
     * addresses must not be freed, and so reused, within the admission). */
    if (parts == NULL || c->job_memo == NULL || *c->job_memo != NULL)
        return parts;
    buf_init(&b, BUF_NO_MAX);
    memo = json_array();
    if (memo == NULL || json_array_append(memo, parts) < 0
        || json_array_append_new(memo, with_texts ? item_texts(parts, &b) : json_array()) < 0) {
        json_decref(memo);
        buf_dispose(&b);
        return parts; /* ENOMEM: derived again for the next pod */
    }
    buf_dispose(&b);
    *c->job_memo = memo;
    if (c->texts != NULL)
        memo_register(c, parts, json_array_get(memo, MEMO_TEXTS));
    return parts;
}

json_t *plugin_memo_keep(const struct plugin_ctx *c, json_t *parts)
{
    return memo_keep(c, parts, true);
}

json_t *plugin_memo_keep_parts(const struct plugin_ctx *c, json_t *parts)
{
    return memo_keep(c, parts, false);
}
