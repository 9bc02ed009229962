/*
 * gen.c - the `gen-certs` subcommand: write a CA and a serving certificate for
 * the webhook Service (ca.crt, ca.key, tls.crt, tls.key) into a directory.
 *
 * SANs: NAME, NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local and every
 * --dns. Keys are written mode 0600, certificates 0644; each file is written
 * to a temporary name and renamed, so a reader never sees half a file.
 *
 * Threads: main thread only (getopt_long).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "certs/certs.h"
#include "webhook/commands.h"

#define GEN_MAX_DNS 32        /* --dns entries */
#define GEN_DEFAULT_DAYS 365

static void gen_usage(FILE *to)
{
    fprintf(to,
            "usage: " WH_PROG " gen-certs --service NAME --namespace NS --out DIR [flags]\n"
            "\n"
            "Write a CA (ca.crt, ca.key) and a serving certificate signed by it (tls.crt,\n"
            "tls.key) for the webhook Service. ECDSA P-256, SHA-256.\n"
            "\n"
            "flags:\n"
            "  --service NAME     Service name (required)\n"
            "  --namespace NS     Service namespace (required)\n"
            "  --out DIR          output directory, created with its parents if missing\n"
            "                     (required)\n"
            "  --days N           validity in days, 1..36500 (default %d)\n"
            "  --dns NAME         extra subjectAltName (DNS name or IP address); repeatable,\n"
            "                     up to %d (default: none)\n"
            "  --force            replace existing files in DIR (a new CA invalidates the\n"
            "                     caBundle already deployed; default: refuse)\n"
            "  -h, --help         show this help\n"
            "\n"
            "subjectAltNames always include NAME, NAME.NS, NAME.NS.svc and\n"
            "NAME.NS.svc.cluster.local. Put base64 of ca.crt in the webhook's caBundle.\n",
            GEN_DEFAULT_DAYS, GEN_MAX_DNS);
}

/* A DNS-1123 label: 1-63 of [a-z0-9-], alphanumeric at both ends. */
static bool dns_label(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* A --dns value: 1-253 printable ASCII bytes without spaces or commas. */
static bool dns_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] > 0x7E || s[i] == ',')
            return false;
    return true;
}

/* Write text to dir/name with mode, through a temporary file and rename(2). */
static int write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
    char path[PATH_MAX];
    char tmp[PATH_MAX];
    size_t len = strlen(text);
    size_t done = 0;
    int fd;

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)
        || (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >= sizeof(tmp)) {
        fprintf(stderr, WH_PROG ": gen-certs: path too long in --out %s\n", dir);
        return -1;
    }
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        fprintf(stderr, WH_PROG ": gen-certs: cannot create %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    /* The umask may have removed bits; a key must be exactly 0600 anyway. */
    if (fchmod(fd, mode) != 0)
        goto fail;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);

        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            goto fail;
        done += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0)
        goto fail;
    return 0;
fail:
    fprintf(stderr, WH_PROG ": gen-certs: cannot write %s: %s\n", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return -1;
}

/* mkdir -p: create dir and any missing parents (mode 0755). @return 0 or -1 (errno). */
static int mkdir_parents(const char *dir)
{
    char path[PATH_MAX];
    size_t n = strlen(dir);

    if (n == 0 || n >= sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        path[i] = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return -1;
        if (i < n)
            path[i] = '/';
    }
    return 0;
}

/* Parse --days strictly. @return 0 or -1. */
static int parse_days(const char *s, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 1 || v > 36500)
        return -1;
    *out = (int)v;
    return 0;
}

int gen_certs_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"service", required_argument, NULL, 's'},
        {"namespace", required_argument, NULL, 'n'},
        {"out", required_argument, NULL, 'o'},
        {"days", required_argument, NULL, 'd'},
        {"dns", required_argument, NULL, 'D'},
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *service = NULL;
    const char *ns = NULL;
    const char *dir = NULL;
    const char *extra[GEN_MAX_DNS];
    size_t nextra = 0;
    int days = GEN_DEFAULT_DAYS;
    char names[4][512];
    const char *sans[4 + GEN_MAX_DNS];
    size_t nsans = 0;
    struct certs_pair ca = {NULL, NULL};
    struct certs_pair leaf = {NULL, NULL};
    struct wh_error err = {0, ""};
    struct stat st;
    bool force = false;
    int opt;
    int rc = 1;

    optind = 0;  /* full getopt reset: the subcommand may run more than once (tests) */
    opterr = 0;  /* our own messages, naming the flag */
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case 's':
            service = optarg;
            break;
        case 'n':
            ns = optarg;
            break;
        case 'o':
            dir = optarg;
            break;
        case 'd':
            if (parse_days(optarg, &days) < 0) {
                fprintf(stderr,
                        WH_PROG ": gen-certs: invalid --days \"%s\": want an integer 1..36500\n",
                        optarg);
                return 2;
            }
            break;
        case 'D':
            if (!dns_name_ok(optarg)) {
                fprintf(stderr, WH_PROG ": gen-certs: invalid --dns \"%s\"\n", optarg);
                return 2;
            }
            if (nextra == GEN_MAX_DNS) {
                fprintf(stderr, WH_PROG ": gen-certs: more than %d --dns flags\n", GEN_MAX_DNS);
                return 2;
            }
            extra[nextra++] = optarg;
            break;
        case 'f':
            force = true;
            break;
        case 'h':
            gen_usage(stdout);
            return 0;
        case ':':
            fprintf(stderr, WH_PROG ": gen-certs: flag %s needs a value\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, WH_PROG ": gen-certs: unknown flag %s (see --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, WH_PROG ": gen-certs: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    if (service == NULL || ns == NULL || dir == NULL) {
        fprintf(stderr, WH_PROG ": gen-certs: missing required flag %s (see --help)\n",
                service == NULL ? "--service" : ns == NULL ? "--namespace" : "--out");
        return 2;
    }
    if (!dns_label(service)) {
        fprintf(stderr, WH_PROG ": gen-certs: invalid --service \"%s\": want a DNS-1123 label\n",
                service);
        return 2;
    }
    if (!dns_label(ns)) {
        fprintf(stderr,
                WH_PROG ": gen-certs: invalid --namespace \"%s\": want a DNS-1123 label\n", ns);
        return 2;
    }

    snprintf(names[0], sizeof(names[0]), "%s", service);
    snprintf(names[1], sizeof(names[1]), "%s.%s", service, ns);
    snprintf(names[2], sizeof(names[2]), "%s.%s.svc", service, ns);
    snprintf(names[3], sizeof(names[3]), "%s.%s.svc.cluster.local", service, ns);
    for (size_t i = 0; i < 4; i++)
        sans[nsans++] = names[i];
    for (size_t i = 0; i < nextra; i++)
        sans[nsans++] = extra[i];

    if (mkdir_parents(dir) != 0) {
        fprintf(stderr, WH_PROG ": gen-certs: cannot create --out %s: %s\n", dir,
                strerror(errno));
        return 1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, WH_PROG ": gen-certs: --out %s is not a directory\n", dir);
        return 1;
    }
    /* A new CA invalidates every caBundle already deployed: never replace one silently. */
    for (size_t i = 0; !force && i < 4; i++) {
        static const char *const files[] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        if (access(path, F_OK) == 0) {
            fprintf(stderr,
                    WH_PROG ": gen-certs: %s exists; a new CA invalidates the deployed caBundle "
                    "(use --force to replace it)\n", path);
            return 1;
        }
    }
    if (certs_generate(&ca, &leaf, sans, nsans, days, &err) < 0) {
        fprintf(stderr, WH_PROG ": gen-certs: %s\n", err.msg);
        goto out;
    }
    if (write_file(dir, "ca.key", ca.key_pem, 0600) < 0
        || write_file(dir, "ca.crt", ca.cert_pem, 0644) < 0
        || write_file(dir, "tls.key", leaf.key_pem, 0600) < 0
        || write_file(dir, "tls.crt", leaf.cert_pem, 0644) < 0)
        goto out;
    printf("wrote %s/ca.crt %s/ca.key %s/tls.crt %s/tls.key (valid %d days)\n", dir, dir, dir,
           dir, days);
    printf("subjectAltNames:");
    for (size_t i = 0; i < nsans; i++)
        printf(" %s", sans[i]);
    printf("\n");
    rc = 0;
out:
    certs_pair_dispose(&ca);
    certs_pair_dispose(&leaf);
    return rc;
}
