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

/* v's string, "" when v is no string. */
static const char *str_value(const json_t *v)
{
    const char *s = json_string_value(v);

    return s != NULL ? s : "";
}

static const char *str(const json_t *obj, const char *key)
{
    return str_value(json_member(obj, key));
}

/* What the checks read in a pod's spec. */
struct spec_view {
    const char *hostname;  /* "" when unset */
    const char *subdomain; /* "" when unset */
    const json_t *volumes;
    const json_t *lists[3]; /* containers, initContainers, ephemeralContainers (lists[]) */
};

/* spec's members the checks read, in one pass (all unset when spec is no object). */
static void spec_view(const json_t *spec, struct spec_view *sv)
{
    /* the lists first, in lists[] order */
    static const char *const keys[] = {"containers", "initContainers", "ephemeralContainers",
                                       "volumes",    "hostname",       "subdomain"};
    const json_t *m[6];

    json_members(spec, keys, 6, m);
    for (size_t l = 0; l < 3; l++)
        sv->lists[l] = m[l];
    sv->volumes = m[3];
    sv->hostname = str_value(m[4]);
    sv->subdomain = str_value(m[5]);
}

/* What the checks read in a container. */
struct ctr_view {
    const char *name; /* "" when unset */
    const json_t *mounts;
    const json_t *ports;
    const json_t *env;
};

/* ctr's members the checks read, in one pass (all unset when ctr is no object). */
static void ctr_view(const json_t *ctr, struct ctr_view *cv)
{
    static const char *const keys[] = {"name", "env", "volumeMounts", "ports"};
    const json_t *m[4];

    json_members(ctr, keys, 4, m);
    cv->name = str_value(m[0]);
    cv->env = m[1];
    cv->mounts = m[2];
    cv->ports = m[3];
}

struct walk {
    bool (*fn)(const struct podcheck_violation *v, void *ud);
    void *ud;
    struct podcheck_violation v;
    /* podcheck_first_new's first walk: the pod before, for own_entry; else all unset */
    struct spec_view before;
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

/* Names of a list's entries (a container's mounts and ports, a pod's volumes or
 * containers: a few), on the stack up to NAMES_ON_STACK. */
#define NAMES_ON_STACK 16

struct names {
    const char *stack[NAMES_ON_STACK];
    const char **at; /* n of them: stack, or malloc'd; NULL without memory for them */
    size_t n;
    size_t *first; /* k8s_name_first_positions of them; NULL when n == 0 or on ENOMEM */
    const json_t *arr;
    const char *key;
    bool skip_empty;
};

/* The key member of arr's entry i (NULL for a missing or empty one when skip_empty). */
static const char *entry_name(const json_t *arr, size_t i, const char *key, bool skip_empty)
{
    const char *v = str(json_array_get(arr, i), key);

    return skip_empty && v[0] == '\0' ? NULL : v;
}

/* The name of entry i of nm's list (entry_name). */
static const char *name_at(const struct names *nm, size_t i)
{
    return nm->at != NULL ? nm->at[i] : entry_name(nm->arr, i, nm->key, nm->skip_empty);
}

/* The names of arr's entries (name_at) and which repeat (nm->first), each name fetched
 * once for both. Without memory for them, each name is fetched when asked for and no
 * repeat is found: the entries are still checked alone. */
static void names_of(struct names *nm, const json_t *arr, const char *key, bool skip_empty)
{
    size_t n = json_array_size(arr);

    *nm = (struct names){.n = n, .arr = arr, .key = key, .skip_empty = skip_empty};
    nm->at = n <= NAMES_ON_STACK ? nm->stack : malloc(n * sizeof(*nm->at));
    if (n == 0 || nm->at == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        nm->at[i] = entry_name(arr, i, key, skip_empty);
    nm->first = k8s_name_first_positions(nm->at, n);
}

static void names_dispose(struct names *nm)
{
    if (nm->at != nm->stack)
        free(nm->at); /* NULL too */
    free(nm->first);
}

/* Whether entry i of list is the very object at place i of before_list: the entry of
 * a pod before (shared by the webhook's copy) has every violation of its own that the
 * pod had already, told with the same list, container and value, so the first walk of
 * podcheck_first_new need not check it alone (whether it repeats a name still is). */
static bool own_entry(const json_t *before_list, size_t i, const json_t *entry)
{
    return before_list != NULL && json_array_get(before_list, i) == entry;
}

static bool check_volumes(struct walk *w, const struct spec_view *sv)
{
    const json_t *volumes = sv->volumes;
    struct names nm;
    bool stop = false;

    names_of(&nm, volumes, "name", false);
    for (size_t i = 0; i < nm.n && !stop; i++) {
        const char *name = name_at(&nm, i);
        const char *why = own_entry(w->before.volumes, i, json_array_get(volumes, i))
            ? NULL
            : k8s_name_label_error(name);

        if (why != NULL)
            stop = report(w, PODCHECK_VOLUME_NAME, "", "", name, why, 0);
        else if (nm.first != NULL && nm.first[i] != i)
            stop = report(w, PODCHECK_VOLUME_DUPLICATE, "", "", name, NULL, 0);
    }
    names_dispose(&nm);
    return stop;
}

/* Names unique over containers, initContainers, ephemeralContainers (in that order). */
static bool check_container_names(struct walk *w, const struct spec_view *sv)
{
    const json_t *const *list = sv->lists;
    size_t counts[3];
    size_t n = 0;
    const char *stack[NAMES_ON_STACK];
    const char **names;
    size_t *first;
    bool stop = false;

    for (size_t l = 0; l < 3; l++) {
        counts[l] = json_array_size(list[l]);
        n += counts[l];
    }
    names = n <= NAMES_ON_STACK ? stack : malloc(n * sizeof(*names));
    if (n == 0 || names == NULL)
        return false;
    for (size_t l = 0, k = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++)
            names[k++] = str(json_array_get(list[l], i), "name");
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
    if (names != stack)
        free(names);
    return stop;
}

/*
 * A container of the pod and the container at the same place of the pod before, when
 * it has the same name (else before is all unset): an entry of the container's that is
 * the very object at the same place of before's list is the user's own (own_entry).
 * Most of a pod's env entries are.
 */
static bool check_container(struct walk *w, const char *list, const json_t *ctr,
                            const json_t *before_ctr)
{
    struct ctr_view cv;
    struct ctr_view before = {.name = ""};
    const char *cname;
    struct names nm;
    bool stop = false;
    size_t i;
    const json_t *e;

    ctr_view(ctr, &cv);
    cname = cv.name;
    if (before_ctr != NULL) {
        ctr_view(before_ctr, &before);
        if (strcmp(before.name, cname) != 0)
            before = (struct ctr_view){.name = ""};
    }
    names_of(&nm, cv.mounts, "mountPath", false);
    for (i = 0; i < nm.n && !stop; i++) {
        if (nm.first != NULL && nm.first[i] != i)
            stop = report(w, PODCHECK_MOUNT_DUPLICATE, list, cname, name_at(&nm, i), NULL, 0);
    }
    names_dispose(&nm);
    if (stop)
        return true;
    names_of(&nm, cv.ports, "name", true);
    for (i = 0; i < nm.n && !stop; i++) {
        const char *name = name_at(&nm, i) != NULL ? name_at(&nm, i) : "";
        const json_t *port = json_array_get(cv.ports, i);
        bool repeated = nm.first != NULL && nm.first[i] != i;
        bool own = own_entry(before.ports, i, port);
        const char *why = NULL;

        /* A name repeated is checked for the duplicate only when valid, own port or not. */
        if (name[0] != '\0' && (!own || repeated))
            why = k8s_name_port_error(name);
        if (!own) {
            const json_t *num = json_member(port, "containerPort");
            json_int_t n = json_integer_value(num);

            if (json_is_integer(num) && (n < 1 || n > 65535))
                stop = report(w, PODCHECK_PORT_NUMBER, list, cname, name, NULL, (long long)n);
            if (!stop && why != NULL)
                stop = report(w, PODCHECK_PORT_NAME, list, cname, name, why, 0);
        }
        if (!stop && why == NULL && repeated)
            stop = report(w, PODCHECK_PORT_DUPLICATE, list, cname, name, NULL, 0);
    }
    names_dispose(&nm);
    if (stop)
        return true;
    json_array_foreach(cv.env, i, e) {
        const char *name;
        const json_t *value;
        const char *why;
        size_t bytes;

        if (own_entry(before.env, i, e))
            continue; /* the user's own */
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

/* podcheck_each; with before, the user's own volumes, ports and env entries
 * (own_entry) are not checked alone. */
static bool walk_pod(const json_t *pod, const json_t *before,
                     bool (*fn)(const struct podcheck_violation *v, void *ud), void *ud)
{
    const json_t *spec = json_member(pod, "spec");
    struct walk w = {.fn = fn, .ud = ud};
    struct spec_view sv;
    const char *why;

    if (!json_is_object(spec))
        return false;
    spec_view(spec, &sv);
    spec_view(json_member(before, "spec"), &w.before);
    /* Empty means unset: the API server checks them only when set. */
    if (sv.subdomain[0] != '\0') {
        why = k8s_name_label_error(sv.subdomain);
        if (why != NULL && report(&w, PODCHECK_SUBDOMAIN, "", "", sv.subdomain, why, 0))
            return true;
    }
    if (sv.hostname[0] != '\0') {
        why = k8s_name_label_error(sv.hostname);
        if (why != NULL && report(&w, PODCHECK_HOSTNAME, "", "", sv.hostname, why, 0))
            return true;
    }
    if (check_volumes(&w, &sv) || check_container_names(&w, &sv))
        return true;
    for (size_t l = 0; l < 3; l++) {
        size_t i;
        const json_t *ctr;

        json_array_foreach(sv.lists[l], i, ctr) {
            if (check_container(&w, lists[l], ctr, json_array_get(w.before.lists[l], i)))
                return true;
        }
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
     * entries, volumes and ports (own_entry: none of their own violations can be new). */
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
