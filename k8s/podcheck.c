/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podcheck.c - kube-apiserver's checks of the Pod fields a webhook writes (see
 * podcheck.h), after ValidatePodSpec: validateVolumes (names, uniqueness),
 * validateContainers / validateInitContainers / validateEphemeralContainers
 * (names unique across the three lists), validateVolumeMounts (mountPath unique
 * per container), validateContainerPorts (IANA names unique per container,
 * containerPort 1-65535), ValidateEnv (names), ValidateDNS1123Label for hostname
 * and subdomain. No state; thread-safe.
 */
#include "k8s/podcheck.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonobj.h"
#include "k8s/names.h"

static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};

static const char *str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_member(obj, key));

    return s != NULL ? s : "";
}

struct walk {
    bool (*fn)(const struct podcheck_violation *v, void *ud);
    void *ud;
    struct podcheck_violation v;
    const json_t *before_spec; /* podcheck_first_new's first walk: see user_env */
};

static void fill(struct walk *w, enum podcheck_kind kind, const char *list, const char *ctr,
                 const char *value, const char *why, long long number)
{
    memset(&w->v, 0, sizeof(w->v));
    w->v.kind = kind;
    snprintf(w->v.list, sizeof(w->v.list), "%s", list);
    snprintf(w->v.container, sizeof(w->v.container), "%s", ctr);
    snprintf(w->v.value, sizeof(w->v.value), "%s", value);
    w->v.why = why;
    w->v.number = number;
}

/* Report one violation; @return true when the walk stops. */
static bool report(struct walk *w, enum podcheck_kind kind, const char *list, const char *ctr,
                   const char *value, const char *why, long long number)
{
    fill(w, kind, list, ctr, value, why, number);
    return w->fn(&w->v, w->ud);
}

/* The key member of each element of arr (NULL for a missing or empty one when
 * skip_empty). @return k8s_name_first_positions of them, NULL as it. */
static size_t *list_firsts(const json_t *arr, const char *key, bool skip_empty)
{
    const char *stack[16]; /* a container's mounts and ports, a pod's volumes: a few */
    size_t n = json_array_size(arr);
    const char **names = n <= sizeof(stack) / sizeof(stack[0]) ? stack : malloc(n * sizeof(*names));
    size_t *first;

    if (n == 0 || names == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *v = str(json_array_get(arr, i), key);

        names[i] = skip_empty && v[0] == '\0' ? NULL : v;
    }
    first = k8s_name_first_positions(names, n);
    if (names != stack)
        free(names);
    return first;
}

static bool check_volumes(struct walk *w, const json_t *spec)
{
    const json_t *volumes = json_member(spec, "volumes");
    size_t *first = list_firsts(volumes, "name", false);
    bool stop = false;
    size_t i;
    const json_t *v;

    json_array_foreach(volumes, i, v) {
        const char *name = str(v, "name");
        const char *why = k8s_name_label_error(name);

        if (why != NULL)
            stop = report(w, PODCHECK_VOLUME_NAME, "", "", name, why, 0);
        else if (first != NULL && first[i] != i)
            stop = report(w, PODCHECK_VOLUME_DUPLICATE, "", "", name, NULL, 0);
        if (stop)
            break;
    }
    free(first);
    return stop;
}

/* Names unique over containers, initContainers, ephemeralContainers (in that order). */
static bool check_container_names(struct walk *w, const json_t *spec)
{
    size_t counts[3];
    size_t n = 0;
    const char **names;
    size_t *first;
    bool stop = false;

    for (size_t l = 0; l < 3; l++) {
        counts[l] = json_array_size(json_member(spec, lists[l]));
        n += counts[l];
    }
    names = n > 0 ? malloc(n * sizeof(*names)) : NULL;
    if (names == NULL)
        return false;
    for (size_t l = 0, k = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++)
            names[k++] = str(json_array_get(json_member(spec, lists[l]), i), "name");
    first = k8s_name_first_positions(names, n);
    for (size_t l = 0, k = 0; first != NULL && l < 3 && !stop; l++) {
        for (size_t i = 0; i < counts[l] && !stop; i++, k++) {
            /* the list of the first container of that name */
            size_t m = first[k] < counts[0] ? 0 : first[k] < counts[0] + counts[1] ? 1 : 2;

            if (first[k] == k)
                continue;
            fill(w, PODCHECK_CONTAINER_DUPLICATE, lists[l], names[k], names[k], NULL, 0);
            snprintf(w->v.other_list, sizeof(w->v.other_list), "%s", lists[m]);
            stop = w->fn(&w->v, w->ud);
        }
    }
    free(first);
    free(names);
    return stop;
}

/*
 * The env list of before_ctr, a container at the same place of the pod before, when it
 * has ctr's name: an entry of ctr's env that is the very object at the same place of
 * this list (shared by reference: the webhook's copy of a pod, webhook/mutate.c) has
 * every violation the pod had already, told with the same list, container and value,
 * so the first walk of podcheck_first_new need not look at it (most of a pod's env
 * entries are the user's). NULL when there is no such list.
 */
static const json_t *user_env(const json_t *before_ctr, const char *cname)
{
    if (before_ctr == NULL || strcmp(str(before_ctr, "name"), cname) != 0)
        return NULL;
    return json_member(before_ctr, "env");
}

static bool check_container(struct walk *w, const char *list, const json_t *ctr,
                            const json_t *before_ctr)
{
    const char *cname = str(ctr, "name");
    const json_t *mounts = json_member(ctr, "volumeMounts");
    const json_t *ports = json_member(ctr, "ports");
    size_t *first = list_firsts(mounts, "mountPath", false);
    const json_t *before_env = user_env(before_ctr, cname);
    bool stop = false;
    size_t i;
    const json_t *e;

    json_array_foreach(mounts, i, e) {
        if (first != NULL && first[i] != i
            && report(w, PODCHECK_MOUNT_DUPLICATE, list, cname, str(e, "mountPath"), NULL, 0)) {
            free(first);
            return true;
        }
    }
    free(first);
    first = list_firsts(ports, "name", true);
    json_array_foreach(ports, i, e) {
        const char *name = str(e, "name");
        const json_t *num = json_member(e, "containerPort");
        json_int_t n = json_integer_value(num);
        const char *why = name[0] != '\0' ? k8s_name_port_error(name) : NULL;

        if (json_is_integer(num) && (n < 1 || n > 65535))
            stop = report(w, PODCHECK_PORT_NUMBER, list, cname, name, NULL, (long long)n);
        if (!stop && why != NULL)
            stop = report(w, PODCHECK_PORT_NAME, list, cname, name, why, 0);
        if (!stop && why == NULL && first != NULL && first[i] != i)
            stop = report(w, PODCHECK_PORT_DUPLICATE, list, cname, name, NULL, 0);
        if (stop)
            break;
    }
    free(first);
    if (stop)
        return true;
    json_array_each(json_member(ctr, "env"), i, e) {
        const char *name;
        const json_t *value;
        const char *why;
        size_t bytes;

        if (json_array_get(before_env, i) == e)
            continue; /* the user's own (user_env) */
        name = str(e, "name");
        value = json_member(e, "value");
        why = k8s_name_env_error(name);
        /* "NAME=value" and its NUL: one string of the process's environment */
        bytes = strlen(name) + 1 + json_string_length(value) + 1;
        if (why != NULL && report(w, PODCHECK_ENV_NAME, list, cname, name, why, 0))
            return true;
        if (json_is_string(value) && bytes > PODCHECK_ENV_MAX
            && report(w, PODCHECK_ENV_TOO_LARGE, list, cname, name, NULL, (long long)bytes))
            return true;
    }
    return false;
}

/* podcheck_each; with before, the env entries user_env finds unchanged are passed. */
static bool walk_pod(const json_t *pod, const json_t *before,
                     bool (*fn)(const struct podcheck_violation *v, void *ud), void *ud)
{
    const json_t *spec = json_member(pod, "spec");
    struct walk w = {fn, ud, {0}, json_member(before, "spec")};
    const char *why;

    if (!json_is_object(spec))
        return false;
    /* Empty means unset: the API server checks them only when set. */
    if (str(spec, "subdomain")[0] != '\0') {
        why = k8s_name_label_error(str(spec, "subdomain"));
        if (why != NULL && report(&w, PODCHECK_SUBDOMAIN, "", "", str(spec, "subdomain"), why, 0))
            return true;
    }
    if (str(spec, "hostname")[0] != '\0') {
        why = k8s_name_label_error(str(spec, "hostname"));
        if (why != NULL && report(&w, PODCHECK_HOSTNAME, "", "", str(spec, "hostname"), why, 0))
            return true;
    }
    if (check_volumes(&w, spec) || check_container_names(&w, spec))
        return true;
    for (size_t l = 0; l < 3; l++) {
        size_t i;
        const json_t *ctr;

        const json_t *before_list = json_member(w.before_spec, lists[l]);

        json_array_each(json_member(spec, lists[l]), i, ctr)
            if (check_container(&w, lists[l], ctr, json_array_get(before_list, i)))
                return true;
    }
    return false;
}

bool podcheck_each(const json_t *pod, bool (*fn)(const struct podcheck_violation *v, void *ud),
                   void *ud)
{
    return walk_pod(pod, NULL, fn, ud);
}

static bool same(const struct podcheck_violation *a, const struct podcheck_violation *b)
{
    return a->kind == b->kind && strcmp(a->list, b->list) == 0
        && strcmp(a->container, b->container) == 0 && strcmp(a->value, b->value) == 0
        && a->number == b->number;
}

static bool stop_if_same(const struct podcheck_violation *v, void *ud)
{
    return same(v, ud);
}

bool podcheck_has(const json_t *pod, const struct podcheck_violation *v)
{
    return podcheck_each(pod, stop_if_same, (void *)v);
}

/* FNV-1a over the fields that make a violation the same one (see same()). */
static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t violation_hash(const struct podcheck_violation *v)
{
    uint64_t h = 0xcbf29ce484222325ull;
    int kind = (int)v->kind;

    h = fnv(h, &kind, sizeof(kind));
    h = fnv(h, v->list, strlen(v->list) + 1);
    h = fnv(h, v->container, strlen(v->container) + 1);
    h = fnv(h, v->value, strlen(v->value) + 1);
    return fnv(h, &v->number, sizeof(v->number));
}

/* The hashes of a pod's violations, growing; failed on ENOMEM. */
struct hashes {
    uint64_t *h;
    size_t n;
    size_t cap;
    bool failed;
};

static bool add_hash(const struct podcheck_violation *v, void *ud)
{
    struct hashes *hs = ud;

    if (hs->n == hs->cap) {
        size_t cap = hs->cap > 0 ? hs->cap * 2 : 64;
        uint64_t *grown = realloc(hs->h, cap * sizeof(*grown));

        if (grown == NULL) {
            hs->failed = true;
            return true;
        }
        hs->h = grown;
        hs->cap = cap;
    }
    hs->h[hs->n++] = violation_hash(v);
    return false;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

struct first_new {
    const json_t *before;
    const struct hashes *seen; /* sorted hashes of before's violations, or NULL */
    struct podcheck_violation *out;
};

static bool stop_if_new(const struct podcheck_violation *v, void *ud)
{
    struct first_new *f = ud;
    uint64_t h;

    if (f->seen != NULL) {
        h = violation_hash(v);
        if (f->seen->n > 0 && bsearch(&h, f->seen->h, f->seen->n, sizeof(h), cmp_u64) != NULL)
            return false;
    } else if (podcheck_has(f->before, v)) {
        return false;
    }
    *f->out = *v;
    return true;
}

static bool stop_at_first(const struct podcheck_violation *v, void *ud)
{
    (void)v;
    (void)ud;
    return true;
}

bool podcheck_first_new(const json_t *before, const json_t *after, struct podcheck_violation *out)
{
    struct hashes seen = {NULL, 0, 0, false};
    struct first_new f = {before, &seen, out};
    bool found;

    /* The common case: a valid result, one walk, which passes the user's own env
     * entries (user_env: none can be new). */
    if (!walk_pod(after, before, stop_at_first, NULL))
        return false;
    /* A pod may hold thousands of violations of its own: look each up in a sorted
     * set of before's (a 64-bit hash each) rather than walking before per one.
     * Without memory for the set, the walk per violation still answers. */
    podcheck_each(before, add_hash, &seen);
    if (seen.failed)
        f.seen = NULL;
    else if (seen.n > 0) /* qsort and bsearch want a non-NULL array, even empty */
        qsort(seen.h, seen.n, sizeof(seen.h[0]), cmp_u64);
    found = podcheck_each(after, stop_if_new, &f);
    free(seen.h);
    return found;
}
