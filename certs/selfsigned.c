/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selfsigned.c - `serve --self-signed`: the in-memory CA and serving pair with the
 * Service's names (selfsigned.h). controller/cabundle.c installs the CA.
 */
#include "certs/selfsigned.h"

#include <stdio.h>
#include <string.h>

#define NAME_MAX_LEN 253 /* a DNS-1123 subdomain */

int selfsigned_generate(const struct selfsigned_config *cfg, struct certs_pair *ca,
                        struct certs_pair *leaf, struct wh_error *err)
{
    char names[4][NAME_MAX_LEN + 32];
    const char *sans[4 + SELFSIGNED_MAX_EXTRA];
    size_t n = 0;

    if (cfg->service == NULL || cfg->service[0] == '\0' || cfg->ns == NULL || cfg->ns[0] == '\0')
        return wh_error_set(err, WH_EINVAL, "self-signed: empty service name or namespace");
    if (strlen(cfg->service) + strlen(cfg->ns) + strlen("..svc.cluster.local") > NAME_MAX_LEN)
        return wh_error_set(err, WH_EINVAL, "self-signed: service name and namespace too long");
    if (cfg->nextra > SELFSIGNED_MAX_EXTRA)
        return wh_error_set(err, WH_EINVAL, "self-signed: more than %d extra names",
                            SELFSIGNED_MAX_EXTRA);
    snprintf(names[0], sizeof(names[0]), "%s", cfg->service);
    snprintf(names[1], sizeof(names[1]), "%s.%s", cfg->service, cfg->ns);
    snprintf(names[2], sizeof(names[2]), "%s.%s.svc", cfg->service, cfg->ns);
    snprintf(names[3], sizeof(names[3]), "%s.%s.svc.cluster.local", cfg->service, cfg->ns);
    for (size_t i = 0; i < 4; i++)
        sans[n++] = names[i];
    for (size_t i = 0; i < cfg->nextra; i++)
        sans[n++] = cfg->extra[i];
    return certs_generate(ca, leaf, cfg->key_type, sans, n,
                          cfg->days > 0 ? cfg->days : SELFSIGNED_DEFAULT_DAYS, err);
}
