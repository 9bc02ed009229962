/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_kubeconfig.c - bytes → a kubeconfig file → k8s_config_load (k8s/client.h).
 *
 * The input is written to <tmpdir>/config (one private directory per process,
 * removed at exit), so relative paths resolve inside it.
 * Properties:
 *  - 0 with server an http(s) URL without a trailing slash; *-data members hold
 *    PEM text ("-----BEGIN "); file members are absolute paths; a client
 *    certificate comes with a key and back;
 *  - or WH_EINVAL/WH_ENOMEM with a message naming the file, and the struct left
 *    all zero;
 *  - k8s_config_dispose frees everything (LeakSanitizer) and may run twice.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s/client.h"
#include "tests/fuzz/fuzzutil.h"

static char dir[64];
static char path[96];

static void cleanup(void)
{
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");

    (void)argc;
    (void)argv;
    snprintf(dir, sizeof(dir), "%s/fuzzkc.XXXXXX", tmp != NULL && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        abort();
    }
    snprintf(path, sizeof(path), "%s/config", dir);
    atexit(cleanup);
    return 0;
}

static void check_pem(const char *data, const char *what)
{
    if (data != NULL)
        FUZZ_CHECK(strstr(data, "-----BEGIN ") != NULL, "%s is not PEM text", what);
}

static void check_file(const char *f, const char *what)
{
    if (f != NULL)
        FUZZ_CHECK(f[0] == '/', "%s \"%s\" is not absolute", what, f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct k8s_config zero;
    struct k8s_config cfg;
    struct wh_error err = {0};
    FILE *f = fopen(path, "wb");
    int rc;

    FUZZ_CHECK(f != NULL, "cannot write %s", path);
    FUZZ_CHECK(fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write %s", path);

    memset(&cfg, 0xA5, sizeof(cfg));
    rc = k8s_config_load(&cfg, path, &err);
    if (rc == 0) {
        size_t n;

        FUZZ_CHECK(cfg.server != NULL, "no server");
        n = strlen(cfg.server);
        FUZZ_CHECK(strncmp(cfg.server, "https://", 8) == 0
                       || strncmp(cfg.server, "http://", 7) == 0,
                   "server %s", cfg.server);
        FUZZ_CHECK(n > 0 && cfg.server[n - 1] != '/', "server %s ends with /", cfg.server);
        check_pem(cfg.ca_data, "ca_data");
        check_pem(cfg.cert_data, "cert_data");
        check_pem(cfg.key_data, "key_data");
        check_file(cfg.ca_file, "ca_file");
        check_file(cfg.cert_file, "cert_file");
        check_file(cfg.key_file, "key_file");
        check_file(cfg.token_file, "token_file");
        FUZZ_CHECK((cfg.cert_file || cfg.cert_data) == (cfg.key_file || cfg.key_data),
                   "client certificate without key or back");
        if (cfg.token != NULL)
            FUZZ_CHECK(cfg.token[0] != '\0', "empty token");
    } else {
        FUZZ_CHECK(rc == WH_EINVAL || rc == WH_ENOMEM, "k8s_config_load returned %d: %s", rc,
                   err.msg);
        FUZZ_CHECK(strstr(err.msg, "kubeconfig ") == err.msg, "message does not name the file: %s",
                   err.msg);
        FUZZ_CHECK(memcmp(&cfg, &zero, sizeof(cfg)) == 0, "config not zeroed on error");
    }
    k8s_config_dispose(&cfg);
    k8s_config_dispose(&cfg);
    return 0;
}
