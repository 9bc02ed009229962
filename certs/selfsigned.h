/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selfsigned.h - `serve --self-signed`: a CA and serving pair made in memory at
 * start-up, with the Service's names. controller/cabundle.h installs the CA as
 * the caBundle of the MutatingWebhookConfiguration.
 *
 * Threads: selfsigned_generate is reentrant.
 */
#ifndef WH_SELFSIGNED_H
#define WH_SELFSIGNED_H

#include <stddef.h>

#include "base/error.h"
#include "certs/certs.h"

#define SELFSIGNED_MAX_EXTRA    32 /* --tls-san entries */
#define SELFSIGNED_DEFAULT_DAYS 365

struct selfsigned_config {
    const char *service;      /* Service name, e.g. "volcano-plugin-webhook" */
    const char *ns;           /* the Service's namespace */
    const char *const *extra; /* more subjectAltNames (DNS names or IPs), borrowed */
    size_t nextra;            /* at most SELFSIGNED_MAX_EXTRA */
    int days;                 /* validity; 0 → SELFSIGNED_DEFAULT_DAYS */
    enum certs_key_type key_type;
};

/**
 * certs_generate with the Service's subjectAltNames: SERVICE, SERVICE.NS,
 * SERVICE.NS.svc, SERVICE.NS.svc.cluster.local, then cfg->extra in order.
 * @param[out] ca    CA certificate and key (certs_pair_dispose)
 * @param[out] leaf  serving certificate and key (certs_pair_dispose)
 * @return 0; WH_EINVAL on an empty service or namespace, names over 253 bytes or
 *         too many extras; else as certs_generate.
 */
int selfsigned_generate(const struct selfsigned_config *cfg, struct certs_pair *ca,
                        struct certs_pair *leaf, struct wh_error *err);

#endif
