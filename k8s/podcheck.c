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

#include <stdio.h>
#include <string.h>

#include "k8s/names.h"

static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};

static const char *str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));

    return s != NULL ? s : "";
}

struct walk {
    bool (*fn)(const struct podcheck_violation *v, void *ud);
    void *ud;
    struct podcheck_violation v;
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

/* @return whether arr[0..end) has an element whose key equals arr[end]'s. */
static bool seen_before(const json_t *arr, size_t end, const char *key)
{
    const char *want = str(json_array_get(arr, end), key);

    for (size_t i = 0; i < end; i++)
        if (strcmp(str(json_array_get(arr, i), key), want) == 0)
            return true;
    return false;
}

static bool check_volumes(struct walk *w, const json_t *spec)
{
    const json_t *volumes = json_object_get(spec, "volumes");
    size_t i;
    const json_t *v;

    json_array_foreach(volumes, i, v) {
        const char *name = str(v, "name");
        const char *why = names_dns_label_error(name);

        if (why != NULL && report(w, PODCHECK_VOLUME_NAME, "", "", name, why, 0))
            return true;
        if (why == NULL && seen_before(volumes, i, "name")
            && report(w, PODCHECK_VOLUME_DUPLICATE, "", "", name, NULL, 0))
            return true;
    }
    return false;
}

/* Names unique over containers, initContainers, ephemeralContainers (in that order). */
static bool check_container_names(struct walk *w, const json_t *spec)
{
    for (size_t l = 0; l < 3; l++) {
        size_t i;
        const json_t *ctr;

        json_array_foreach(json_object_get(spec, lists[l]), i, ctr) {
            const char *name = str(ctr, "name");

            for (size_t m = 0; m <= l; m++) {
                const json_t *earlier = json_object_get(spec, lists[m]);
                size_t end = m == l ? i : json_array_size(earlier);
                bool dup = false;

                for (size_t j = 0; j < end && !dup; j++)
                    dup = strcmp(str(json_array_get(earlier, j), "name"), name) == 0;
                if (!dup)
                    continue;
                fill(w, PODCHECK_CONTAINER_DUPLICATE, lists[l], name, name, NULL, 0);
                /* the list of the first container of that name */
                snprintf(w->v.other_list, sizeof(w->v.other_list), "%s", lists[m]);
                if (w->fn(&w->v, w->ud))
                    return true;
                break;
            }
        }
    }
    return false;
}

static bool check_container(struct walk *w, const char *list, const json_t *ctr)
{
    const char *cname = str(ctr, "name");
    const json_t *mounts = json_object_get(ctr, "volumeMounts");
    const json_t *ports = json_object_get(ctr, "ports");
    size_t i;
    const json_t *e;

    json_array_foreach(mounts, i, e) {
        if (seen_before(mounts, i, "mountPath")
            && report(w, PODCHECK_MOUNT_DUPLICATE, list, cname, str(e, "mountPath"), NULL, 0))
            return true;
    }
    json_array_foreach(ports, i, e) {
        const char *name = str(e, "name");
        const json_t *num = json_object_get(e, "containerPort");
        json_int_t n = json_integer_value(num);
        const char *why = name[0] != '\0' ? names_port_name_error(name) : NULL;

        if (json_is_integer(num) && (n < 1 || n > 65535)
            && report(w, PODCHECK_PORT_NUMBER, list, cname, name, NULL, (long long)n))
            return true;
        if (why != NULL && report(w, PODCHECK_PORT_NAME, list, cname, name, why, 0))
            return true;
        if (why == NULL && name[0] != '\0' && seen_before(ports, i, "name")
            && report(w, PODCHECK_PORT_DUPLICATE, list, cname, name, NULL, 0))
            return true;
    }
    json_array_foreach(json_object_get(ctr, "env"), i, e) {
        const char *name = str(e, "name");
        const json_t *value = json_object_get(e, "value");
        const char *why = names_env_var_error(name);
        /* "NAME=value" and its NUL: one string of the process's environment */
        size_t bytes = strlen(name) + 1 + json_string_length(value) + 1;

        if (why != NULL && report(w, PODCHECK_ENV_NAME, list, cname, name, why, 0))
            return true;
        if (json_is_string(value) && bytes > PODCHECK_ENV_MAX
            && report(w, PODCHECK_ENV_TOO_LARGE, list, cname, name, NULL, (long long)bytes))
            return true;
    }
    return false;
}

bool podcheck_each(const json_t *pod, bool (*fn)(const struct podcheck_violation *v, void *ud),
                   void *ud)
{
    const json_t *spec = json_object_get(pod, "spec");
    struct walk w = {fn, ud, {0}};
    const char *why;

    if (!json_is_object(spec))
        return false;
    /* Empty means unset: the API server checks them only when set. */
    if (str(spec, "subdomain")[0] != '\0') {
        why = names_dns_label_error(str(spec, "subdomain"));
        if (why != NULL && report(&w, PODCHECK_SUBDOMAIN, "", "", str(spec, "subdomain"), why, 0))
            return true;
    }
    if (str(spec, "hostname")[0] != '\0') {
        why = names_dns_label_error(str(spec, "hostname"));
        if (why != NULL && report(&w, PODCHECK_HOSTNAME, "", "", str(spec, "hostname"), why, 0))
            return true;
    }
    if (check_volumes(&w, spec) || check_container_names(&w, spec))
        return true;
    for (size_t l = 0; l < 3; l++) {
        size_t i;
        const json_t *ctr;

        json_array_foreach(json_object_get(spec, lists[l]), i, ctr)
            if (check_container(&w, lists[l], ctr))
                return true;
    }
    return false;
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

struct first_new {
    const json_t *before;
    struct podcheck_violation *out;
};

static bool stop_if_new(const struct podcheck_violation *v, void *ud)
{
    struct first_new *f = ud;

    if (podcheck_has(f->before, v))
        return false;
    *f->out = *v;
    return true;
}

bool podcheck_first_new(const json_t *before, const json_t *after, struct podcheck_violation *out)
{
    struct first_new f = {before, out};

    return podcheck_each(after, stop_if_new, &f);
}
