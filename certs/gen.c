/*
 * gen.c - the `gen-certs` subcommand: write a CA and a serving certificate for
 * the webhook Service (ca.crt, ca.key, tls.crt, tls.key) into a directory, and
 * optionally the kubernetes.io/tls Secret manifest (--secret-manifest) and the
 * webhook's caBundle value (--ca-bundle). With --ca-cert/--ca-key the serving
 * certificate is signed by that existing CA instead (renewal that keeps the
 * deployed caBundle): ca.crt is the given CA certificate, ca.key is not written.
 *
 * SANs: NAME, NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local and every
 * --dns / --ip. Keys (and the Secret manifest, which holds one) are written
 * mode 0600, certificates 0644; each file is written to a temporary name and
 * renamed, so a reader never sees half a file. The Secret manifest is emitted
 * by libyaml.
 *
 * Threads: main thread only (getopt_long).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "certs/certs.h"
#include "webhook/commands.h"

#define GEN_MAX_DNS 32        /* --dns entries */
#define GEN_DEFAULT_DAYS 365
#define GEN_SECRET_NAME "volcano-plugin-webhook-tls"  /* the Secret manifests/ mounts */

static void gen_usage(FILE *to)
{
    fprintf(to,
            "usage: " WH_PROG " gen-certs --service NAME --namespace NS --out DIR [flags]\n"
            "\n"
            "Write a CA (ca.crt, ca.key) and a serving certificate signed by it (tls.crt,\n"
            "tls.key) for the webhook Service, or with --ca-cert/--ca-key only a new\n"
            "serving certificate signed by an existing CA. ECDSA P-256 or RSA-2048, SHA-256.\n"
            "\n"
            "flags:\n"
            "  --service NAME     Service name (required)\n"
            "  --namespace NS     Service namespace (required)\n"
            "  --out DIR          output directory, created with its parents if missing\n"
            "                     (required)\n"
            "  --days N           validity in days, 1..36500 (default %d)\n"
            "  --dns NAME         extra subjectAltName (DNS name or IP address); repeatable\n"
            "                     (default: none)\n"
            "  --ip ADDR          extra IP subjectAltName (IPv4 or IPv6); repeatable; --dns\n"
            "                     and --ip together up to %d (default: none)\n"
            "  --key-type TYPE    ecdsa (P-256) or rsa (2048 bits) (default ecdsa)\n"
            "  --secret-manifest FILE  also write a kubernetes.io/tls Secret manifest\n"
            "                     \"" GEN_SECRET_NAME "\" in NS with tls.crt, tls.key and\n"
            "                     ca.crt, mode 0600 (default: none)\n"
            "  --ca-bundle FILE   also write base64 of ca.crt on one line: the caBundle\n"
            "                     value of the webhook configuration (default: none)\n"
            "  --ca-cert FILE     sign tls.crt with this existing CA certificate (PEM,\n"
            "                     CA:TRUE, keyCertSign, not expired) instead of making a\n"
            "                     new CA: the deployed caBundle stays valid. ca.crt is\n"
            "                     then a copy of it and ca.key is NOT written: the CA's\n"
            "                     key stays where it is. tls.crt expires no later than\n"
            "                     the CA. Needs --ca-key (default: make a new CA)\n"
            "  --ca-key FILE      the unencrypted PEM private key of --ca-cert; only read\n"
            "                     (default: none)\n"
            "  --force            replace existing files (a new CA invalidates the\n"
            "                     caBundle already deployed; default: refuse)\n"
            "  -h, --help         show this help\n"
            "\n"
            "subjectAltNames always include NAME, NAME.NS, NAME.NS.svc and\n"
            "NAME.NS.svc.cluster.local. The webhook's caBundle is base64 of ca.crt\n"
            "(--ca-bundle writes it).\n",
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

/* Write text to path with mode, through a temporary file beside it and rename(2). */
static int write_file(const char *path, const char *text, mode_t mode)
{
    char tmp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int dirlen = slash != NULL ? (int)(slash - path + 1) : 0;
    size_t len = strlen(text);
    size_t done = 0;
    int fd;

    /* "dir/.name.tmp": hidden, and on the same file system as path (rename is atomic) */
    if ((size_t)snprintf(tmp, sizeof(tmp), "%.*s.%s.tmp", dirlen, path, path + dirlen)
        >= sizeof(tmp)) {
        fprintf(stderr, WH_PROG ": gen-certs: path too long: %s\n", path);
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

/* write_file of dir/name. */
static int write_in_dir(const char *dir, const char *name, const char *text, mode_t mode)
{
    char path[PATH_MAX];

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
        fprintf(stderr, WH_PROG ": gen-certs: path too long in --out %s\n", dir);
        return -1;
    }
    return write_file(path, text, mode);
}

/* ---- Secret manifest and caBundle ---- */

/* One event: a plain scalar, or double-quoted when quoted. @return 1 or 0. */
static int emit_scalar(yaml_emitter_t *e, const char *text, bool quoted)
{
    yaml_event_t ev;

    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text),
                                      !quoted, quoted,
                                      quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
                                             : YAML_PLAIN_SCALAR_STYLE))
        return 0;
    return yaml_emitter_emit(e, &ev);
}

static int emit_mapping(yaml_emitter_t *e, bool start)
{
    yaml_event_t ev;

    if (start) {
        if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE))
            return 0;
    } else if (!yaml_mapping_end_event_initialize(&ev)) {
        return 0;
    }
    return yaml_emitter_emit(e, &ev);
}

/*
 * The Secret manifest text (malloc'd, or NULL on failure):
 *   apiVersion: v1 / kind: Secret / metadata {name, namespace, labels} /
 *   type: kubernetes.io/tls / data {ca.crt, tls.crt, tls.key: base64 of the PEM}.
 */
static char *secret_manifest(const char *ns, const struct certs_pair *ca,
                             const struct certs_pair *leaf)
{
    const char *pem[3] = {ca->cert_pem, leaf->cert_pem, leaf->key_pem};
    static const char *const keys[3] = {"ca.crt", "tls.crt", "tls.key"};
    char *b64[3] = {NULL, NULL, NULL};
    char *text = NULL;
    size_t len = 0;
    FILE *mem = NULL;
    yaml_emitter_t e;
    yaml_event_t ev;
    int ok = 0;

    for (size_t i = 0; i < 3; i++) {
        b64[i] = certs_base64(pem[i], strlen(pem[i]));
        if (b64[i] == NULL)
            goto out;
    }
    /* libyaml writes to a FILE: a memory stream (POSIX open_memstream) grows as it writes. */
    mem = open_memstream(&text, &len);
    if (mem == NULL)
        goto out;
    if (!yaml_emitter_initialize(&e))
        goto out;
    yaml_emitter_set_output_file(&e, mem);
    yaml_emitter_set_unicode(&e, 1);
    yaml_emitter_set_width(&e, -1);   /* never fold the long base64 lines */
    ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING)
         && yaml_emitter_emit(&e, &ev)
         && yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1)
         && yaml_emitter_emit(&e, &ev)
         && emit_mapping(&e, true)
         && emit_scalar(&e, "apiVersion", false) && emit_scalar(&e, "v1", false)
         && emit_scalar(&e, "kind", false) && emit_scalar(&e, "Secret", false)
         && emit_scalar(&e, "metadata", false) && emit_mapping(&e, true)
         && emit_scalar(&e, "name", false) && emit_scalar(&e, GEN_SECRET_NAME, false)
         && emit_scalar(&e, "namespace", false) && emit_scalar(&e, ns, true)
         && emit_scalar(&e, "labels", false) && emit_mapping(&e, true)
         && emit_scalar(&e, "app.kubernetes.io/name", false)
         && emit_scalar(&e, "volcano-plugin-webhook", false)
         && emit_scalar(&e, "app.kubernetes.io/part-of", false)
         && emit_scalar(&e, "volcano-plugin-webhook", false)
         && emit_mapping(&e, false) && emit_mapping(&e, false)
         && emit_scalar(&e, "type", false) && emit_scalar(&e, "kubernetes.io/tls", false)
         && emit_scalar(&e, "data", false) && emit_mapping(&e, true);
    for (size_t i = 0; ok && i < 3; i++)
        ok = emit_scalar(&e, keys[i], false) && emit_scalar(&e, b64[i], true);
    ok = ok && emit_mapping(&e, false) && emit_mapping(&e, false)
         && yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&e, &ev)
         && yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&e, &ev);
    yaml_emitter_delete(&e);
out:
    if (mem != NULL && fclose(mem) != 0)
        ok = 0;
    if (!ok || mem == NULL) {
        free(text);
        text = NULL;
    }
    for (size_t i = 0; i < 3; i++) {
        /* b64[2] is the private key in base64: scrub it too */
        if (b64[i] != NULL)
            OPENSSL_cleanse(b64[i], strlen(b64[i]));
        free(b64[i]);
    }
    return text;
}

/* Write --secret-manifest (0600: it holds the key) and --ca-bundle files. @return 0 or -1. */
static int write_extras(const char *secret_file, const char *bundle_file, const char *ns,
                        const struct certs_pair *ca, const struct certs_pair *leaf)
{
    int rc = 0;

    if (secret_file != NULL) {
        char *text = secret_manifest(ns, ca, leaf);

        if (text == NULL) {
            fprintf(stderr, WH_PROG ": gen-certs: cannot make the Secret manifest: out of "
                            "memory\n");
            return -1;
        }
        rc = write_file(secret_file, text, 0600);
        OPENSSL_cleanse(text, strlen(text));
        free(text);
        if (rc < 0)
            return -1;
    }
    if (bundle_file != NULL) {
        char *b64 = certs_base64(ca->cert_pem, strlen(ca->cert_pem));
        char *line;
        size_t n;

        if (b64 == NULL) {
            fprintf(stderr, WH_PROG ": gen-certs: out of memory\n");
            return -1;
        }
        n = strlen(b64) + 2;
        line = malloc(n);
        if (line != NULL) {
            snprintf(line, n, "%s\n", b64);
            rc = write_file(bundle_file, line, 0644);
        } else {
            fprintf(stderr, WH_PROG ": gen-certs: out of memory\n");
            rc = -1;
        }
        free(line);
        free(b64);
    }
    return rc;
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

/* --key-type: "ecdsa" or "rsa". @return 0 or -1. */
static int parse_key_type(const char *s, enum certs_key_type *out)
{
    if (strcmp(s, "ecdsa") == 0)
        *out = CERTS_KEY_ECDSA_P256;
    else if (strcmp(s, "rsa") == 0)
        *out = CERTS_KEY_RSA_2048;
    else
        return -1;
    return 0;
}

/* An --ip value: a numeric IPv4 or IPv6 address. */
static bool ip_ok(const char *s)
{
    unsigned char buf[16];

    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
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

/* Append one --dns/--ip name to extra (GEN_MAX_DNS slots). @return 0, or -1 after the usage message. */
static int add_extra_san(const char **extra, size_t *nextra, const char *name)
{
    if (*nextra == GEN_MAX_DNS) {
        fprintf(stderr, WH_PROG ": gen-certs: more than %d --dns and --ip flags\n", GEN_MAX_DNS);
        return -1;
    }
    extra[(*nextra)++] = name;
    return 0;
}

/* Unix seconds as RFC 3339 UTC ("2026-01-31T12:00:00Z") into buf. */
static const char *format_utc(long long t, char *buf, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;

    if (gmtime_r(&tt, &tm) == NULL || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "%lld", t);
    return buf;
}

/*
 * --ca-cert/--ca-key: load and check the CA, sign a new leaf with it. ca gets
 * the CA certificate(s) as PEM and its key (to dispose); a capped notAfter is
 * noted on stderr. @return 0, or 1 after one line on stderr (unusable files).
 */
static int sign_with_ca(struct certs_pair *ca, struct certs_pair *leaf, const char *ca_cert_file,
                        const char *ca_key_file, enum certs_key_type key_type,
                        const char *const *sans, size_t nsans, int days)
{
    struct wh_error err = {0, ""};
    bool capped = false;
    long long ca_not_after = 0;
    char when[64];

    /* certs_load_pair: PEM certificate(s), unencrypted key, and the key matching the first. */
    if (certs_load_pair(ca, ca_cert_file, ca_key_file, &err) < 0) {
        fprintf(stderr, WH_PROG ": gen-certs: %s\n", err.msg);
        return 1;
    }
    if (certs_generate_leaf(leaf, &capped, ca, key_type, sans, nsans, days, &err) < 0) {
        if (err.code == WH_EINVAL)
            fprintf(stderr, WH_PROG ": gen-certs: --ca-cert %s: %s\n", ca_cert_file, err.msg);
        else
            fprintf(stderr, WH_PROG ": gen-certs: %s\n", err.msg);
        return 1;
    }
    if (capped && certs_not_after(ca->cert_pem, &ca_not_after, &err) == 0)
        fprintf(stderr,
                WH_PROG ": gen-certs: note: tls.crt expires with the CA at %s, sooner than "
                "--days %d\n", format_utc(ca_not_after, when, sizeof(when)), days);
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
        {"ip", required_argument, NULL, 'I'},
        {"key-type", required_argument, NULL, 'k'},
        {"secret-manifest", required_argument, NULL, 'S'},
        {"ca-bundle", required_argument, NULL, 'B'},
        {"ca-cert", required_argument, NULL, 'C'},
        {"ca-key", required_argument, NULL, 'K'},
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
    enum certs_key_type key_type = CERTS_KEY_ECDSA_P256;
    const char *secret_file = NULL;
    const char *bundle_file = NULL;
    const char *ca_cert_file = NULL;   /* --ca-cert: sign with this CA */
    const char *ca_key_file = NULL;
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
                fprintf(stderr, WH_PROG ": gen-certs: invalid --dns \"%s\": want a DNS name or "
                        "IP address of 1..253 printable characters, no spaces or commas\n", optarg);
                return 2;
            }
            if (add_extra_san(extra, &nextra, optarg) < 0)
                return 2;
            break;
        case 'I':
            if (!ip_ok(optarg)) {
                fprintf(stderr, WH_PROG ": gen-certs: invalid --ip \"%s\": want an IPv4 or "
                                "IPv6 address\n", optarg);
                return 2;
            }
            if (add_extra_san(extra, &nextra, optarg) < 0)
                return 2;
            break;
        case 'k':
            if (parse_key_type(optarg, &key_type) < 0) {
                fprintf(stderr,
                        WH_PROG ": gen-certs: invalid --key-type \"%s\": want ecdsa or rsa\n",
                        optarg);
                return 2;
            }
            break;
        case 'S':
        case 'B':
        case 'C':
        case 'K':
            if (optarg[0] == '\0') {
                fprintf(stderr, WH_PROG ": gen-certs: %s needs a file name\n",
                        opt == 'S'   ? "--secret-manifest"
                        : opt == 'B' ? "--ca-bundle"
                        : opt == 'C' ? "--ca-cert"
                                     : "--ca-key");
                return 2;
            }
            if (opt == 'S')
                secret_file = optarg;
            else if (opt == 'B')
                bundle_file = optarg;
            else if (opt == 'C')
                ca_cert_file = optarg;
            else
                ca_key_file = optarg;
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
    if ((ca_cert_file == NULL) != (ca_key_file == NULL)) {
        fprintf(stderr, WH_PROG ": gen-certs: %s needs %s: give both or neither\n",
                ca_cert_file != NULL ? "--ca-cert" : "--ca-key",
                ca_cert_file != NULL ? "--ca-key" : "--ca-cert");
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

    /* A new CA invalidates every caBundle already deployed: never replace one silently.
     * With --ca-cert the CA stays, but a pair in service is still not replaced unasked;
     * ca.key is not written then, so one in --out does not matter. */
    for (size_t i = 0; !force && i < 6; i++) {
        static const char *const files[] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
        char buf[PATH_MAX];
        const char *path = i == 4 ? secret_file : i == 5 ? bundle_file : buf;

        if (i < 4) {
            if (ca_cert_file != NULL && i == 1)
                continue;
            snprintf(buf, sizeof(buf), "%s/%s", dir, files[i]);
        }
        if (path == NULL || access(path, F_OK) != 0)
            continue;
        if (ca_cert_file != NULL)
            fprintf(stderr, WH_PROG ": gen-certs: %s exists (use --force to replace it)\n",
                    path);
        else
            fprintf(stderr,
                    WH_PROG ": gen-certs: %s exists; a new CA invalidates the deployed caBundle "
                    "(use --force to replace it)\n", path);
        return 1;
    }
    /* Before --out is made: a CA that cannot be used leaves nothing behind. */
    if (ca_cert_file != NULL
        && sign_with_ca(&ca, &leaf, ca_cert_file, ca_key_file, key_type, sans, nsans, days) != 0)
        goto out;
    /* Only now, so that a refusal above leaves no empty --out behind. */
    if (mkdir_parents(dir) != 0) {
        fprintf(stderr, WH_PROG ": gen-certs: cannot create --out %s: %s\n", dir,
                strerror(errno));
        return 1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, WH_PROG ": gen-certs: --out %s is not a directory\n", dir);
        return 1;
    }
    if (ca_cert_file == NULL
        && certs_generate(&ca, &leaf, key_type, sans, nsans, days, &err) < 0) {
        fprintf(stderr, WH_PROG ": gen-certs: %s\n", err.msg);
        goto out;
    }
    /* ca.key only for a CA made here; an existing CA's key stays where it is. */
    if ((ca_cert_file == NULL && write_in_dir(dir, "ca.key", ca.key_pem, 0600) < 0)
        || write_in_dir(dir, "ca.crt", ca.cert_pem, 0644) < 0
        || write_in_dir(dir, "tls.key", leaf.key_pem, 0600) < 0
        || write_in_dir(dir, "tls.crt", leaf.cert_pem, 0644) < 0
        || write_extras(secret_file, bundle_file, ns, &ca, &leaf) < 0)
        goto out;
    if (ca_cert_file != NULL)
        printf("wrote %s/ca.crt (a copy of %s) %s/tls.crt %s/tls.key (%s, signed by that CA; "
               "its key stays in %s, no ca.key written)\n", dir, ca_cert_file, dir, dir,
               key_type == CERTS_KEY_RSA_2048 ? "RSA-2048" : "ECDSA P-256", ca_key_file);
    else
        printf("wrote %s/ca.crt %s/ca.key %s/tls.crt %s/tls.key (%s, valid %d days)\n", dir,
               dir, dir, dir, key_type == CERTS_KEY_RSA_2048 ? "RSA-2048" : "ECDSA P-256", days);
    if (secret_file != NULL)
        printf("wrote Secret %s/%s manifest to %s\n", ns, GEN_SECRET_NAME, secret_file);
    if (bundle_file != NULL)
        printf("wrote caBundle (base64 of ca.crt) to %s\n", bundle_file);
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
