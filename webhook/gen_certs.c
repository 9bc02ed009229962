/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gen_certs.c - the `gen-certs` subcommand: write a CA and a serving certificate for
 * the webhook Service (ca.crt, ca.key, tls.crt, tls.key) into a directory, and
 * optionally the kubernetes.io/tls Secret manifest (--secret-manifest) and the
 * webhook's caBundle value (--ca-bundle). With --ca-cert/--ca-key the serving
 * certificate is signed by that existing CA instead (renewal that keeps the
 * deployed caBundle): ca.crt is the given CA certificate, ca.key is not written.
 * A new CA lives --ca-days (default 10 years) and its serving certificate --days
 * (default 1 year), so a renewal under it gets its full --days until the CA's last
 * year; a renewal the CA would outlive less is cut to the CA's notAfter with a note.
 *
 * SANs: NAME, NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local and every
 * --dns / --ip. Keys (and the Secret manifest, which holds one) are written
 * mode 0600, certificates 0644. All or nothing: every file is written in full
 * to a temporary name first and all are renamed into place only then (see
 * outputs_commit), so a failure leaves every existing file as it was and a
 * reader never sees half a file. The Secret manifest is emitted by libyaml.
 *
 * Threads: main thread only (getopt_long).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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
#include "k8s/names.h"
#include "webhook/commands.h"
#include "webhook/flags.h"

#define GEN_MAX_DNS         32                     /* --dns entries */
#define GEN_MAX_DNS_TEXT    FLAGS_STR(GEN_MAX_DNS) /* in --help */
#define GEN_DEFAULT_DAYS    365
#define GEN_DEFAULT_CA_DAYS 3650 /* a new CA outlives ten renewals of its serving pair */
#define GEN_MAX_OUTPUTS     6    /* ca.key, ca.crt, tls.key, tls.crt, Secret, caBundle */
#define GEN_SECRET_NAME     "volcano-plugin-webhook-tls" /* the Secret manifests/ mounts */

/* getopt_long ids of the flags */
enum {
    OPT_SERVICE = 256,
    OPT_NAMESPACE,
    OPT_OUT,
    OPT_DAYS,
    OPT_CA_DAYS,
    OPT_DNS,
    OPT_IP,
    OPT_KEY_TYPE,
    OPT_SECRET_MANIFEST,
    OPT_CA_BUNDLE,
    OPT_CA_CERT,
    OPT_CA_KEY,
    OPT_FORCE,
};

/* The flags, in --help order (webhook/flags.h); gen_parse_flag acts on each. */
static const struct flag gen_flag_table[] = {
    {OPT_SERVICE, "service", 0, required_argument, "NAME", "Service name (required)", NULL},
    {OPT_NAMESPACE, "namespace", 0, required_argument, "NS", "Service namespace (required)", NULL},
    {OPT_OUT, "out", 0, required_argument, "DIR",
     "output directory, created with its parents if missing\n"
     "(required)",
     NULL},
    {OPT_DAYS, "days", 0, required_argument, "N",
     "the serving certificate's validity in days, 1..36500\n", FLAGS_STR(GEN_DEFAULT_DAYS)},
    {OPT_CA_DAYS, "ca-days", 0, required_argument, "N",
     "a new CA's validity in days, 1..36500, no less than\n"
     "--days; not with --ca-cert",
     FLAGS_STR(GEN_DEFAULT_CA_DAYS)},
    {OPT_DNS, "dns", 0, required_argument, "NAME",
     "extra subjectAltName (DNS name or IP address); repeatable\n"
     "(default: none)",
     NULL},
    {OPT_IP, "ip", 0, required_argument, "ADDR",
     "extra IP subjectAltName (IPv4 or IPv6); repeatable; --dns\n"
     "and --ip together up to " GEN_MAX_DNS_TEXT " (default: none)",
     NULL},
    {OPT_KEY_TYPE, "key-type", 0, required_argument, "TYPE", "ecdsa (P-256) or rsa (2048 bits)",
     "ecdsa"},
    {OPT_SECRET_MANIFEST, "secret-manifest", 0, required_argument, "FILE",
     "also write a kubernetes.io/tls Secret manifest\n"
     "\"" GEN_SECRET_NAME "\" in NS with tls.crt, tls.key and\n"
     "ca.crt, mode 0600 (default: none)",
     NULL},
    {OPT_CA_BUNDLE, "ca-bundle", 0, required_argument, "FILE",
     "also write base64 of ca.crt on one line: the caBundle\n"
     "value of the webhook configuration (default: none)",
     NULL},
    {OPT_CA_CERT, "ca-cert", 0, required_argument, "FILE",
     "sign tls.crt with this existing CA certificate (PEM,\n"
     "CA:TRUE, keyCertSign, not expired) instead of making a\n"
     "new CA: the deployed caBundle stays valid. ca.crt is\n"
     "then a copy of it and ca.key is NOT written: the CA's\n"
     "key stays where it is. tls.crt gets its full --days\n"
     "unless the CA expires sooner: then it is cut to the\n"
     "CA's notAfter and the CA must be rolled over (README,\n"
     "\"Rolling the CA over\"); a ca.key already in --out\n"
     "must be this CA's key. Needs --ca-key (default: make\n"
     "a new CA)",
     NULL},
    {OPT_CA_KEY, "ca-key", 0, required_argument, "FILE",
     "the unencrypted PEM private key of --ca-cert; only read\n"
     "(default: none)",
     NULL},
    {OPT_FORCE, "force", 0, no_argument, NULL,
     "replace existing files (a new CA invalidates the\n"
     "caBundle already deployed; default: refuse)",
     NULL},
    {'h', "help", 'h', no_argument, NULL, "show this help", NULL},
};

static const struct flag_set gen_flags = {
    .command = "gen-certs",
    .flags = gen_flag_table,
    .nflags = sizeof(gen_flag_table) / sizeof(gen_flag_table[0]),
    .help_column = 21,
    .short_column = false,
    .usage = "usage: " WH_PROG " gen-certs --service NAME --namespace NS --out DIR [flags]\n"
             "\n"
             "Write a CA (ca.crt, ca.key) and a serving certificate signed by it (tls.crt,\n"
             "tls.key) for the webhook Service, or with --ca-cert/--ca-key only a new\n"
             "serving certificate signed by an existing CA. ECDSA P-256 or RSA-2048, SHA-256.\n"
             "\n"
             "flags:\n",
    .footer = "\n"
              "subjectAltNames always include NAME, NAME.NS, NAME.NS.svc and\n"
              "NAME.NS.svc.cluster.local. The webhook's caBundle is base64 of ca.crt\n"
              "(--ca-bundle writes it).\n",
};

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

/*
 * ---- All or nothing ----
 *
 * Every file of a run is first written in full to a temporary name beside it
 * ("dir/.name.tmp": same file system, so rename(2) is atomic), and only when all
 * of them were written are they renamed into place. Before the first rename each
 * file that exists gets a hard link "dir/.name.old", so that a rename failing
 * half way (a directory in the way, EBUSY, ...) puts every replaced file back.
 * Bad input thus leaves every existing file as it was, never a new ca.crt beside
 * an old tls.key.
 */

/* One file of the run. */
struct gen_output {
    char path[PATH_MAX];
    char tmp[PATH_MAX]; /* the new text, until renamed to path */
    char old[PATH_MAX]; /* hard link to the file path held before */
    const char *text;   /* borrowed */
    mode_t mode;
    bool written; /* tmp exists */
    bool has_old; /* old exists */
    bool placed;  /* tmp was renamed to path */
};

/* Fill o for path ("dir/name" when dir is not NULL). @return 0, or -1 after a message. */
static int output_init(struct gen_output *o, const char *dir, const char *name, const char *text,
                       mode_t mode)
{
    const char *slash;
    int dirlen;

    memset(o, 0, sizeof(*o));
    o->text = text;
    o->mode = mode;
    if ((size_t)snprintf(o->path, sizeof(o->path), "%s%s%s", dir != NULL ? dir : "",
                         dir != NULL ? "/" : "", name)
        >= sizeof(o->path)) {
        fprintf(stderr, WH_PROG ": gen-certs: path too long: %s%s%s\n", dir != NULL ? dir : "",
                dir != NULL ? "/" : "", name);
        return -1;
    }
    slash = strrchr(o->path, '/');
    dirlen = slash != NULL ? (int)(slash - o->path + 1) : 0;
    /* hidden, and beside path */
    if ((size_t)snprintf(o->tmp, sizeof(o->tmp), "%.*s.%s.tmp", dirlen, o->path, o->path + dirlen)
            >= sizeof(o->tmp)
        || (size_t)snprintf(o->old, sizeof(o->old), "%.*s.%s.old", dirlen, o->path,
                            o->path + dirlen)
            >= sizeof(o->old)) {
        fprintf(stderr, WH_PROG ": gen-certs: path too long: %s\n", o->path);
        return -1;
    }
    return 0;
}

/* Write o->text to o->tmp with o->mode, synced. @return 0, or -1 after a message. */
static int output_write_tmp(struct gen_output *o)
{
    size_t len = strlen(o->text);
    size_t done = 0;
    int fd;

    unlink(o->tmp); /* a crashed run's */
    fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, o->mode);
    if (fd < 0)
        goto fail;
    o->written = true;
    /* The umask may have removed bits; a key must be exactly 0600 anyway. */
    if (fchmod(fd, o->mode) != 0)
        goto fail;
    while (done < len) {
        ssize_t w = write(fd, o->text + done, len - done);

        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            goto fail;
        done += (size_t)w;
    }
    if (fsync(fd) != 0)
        goto fail;
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    return 0;
fail:
    fprintf(stderr, WH_PROG ": gen-certs: cannot write %s: %s\n", o->path, strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Remove what the run made beside the files (temporaries, links to old files). */
static void outputs_cleanup(struct gen_output *outs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (outs[i].written && !outs[i].placed)
            unlink(outs[i].tmp);
        if (outs[i].has_old)
            unlink(outs[i].old);
        outs[i].written = outs[i].has_old = false;
    }
}

/* Put back every file replaced so far (a rename failed half way). */
static void outputs_rollback(struct gen_output *outs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!outs[i].placed)
            continue;
        if (outs[i].has_old ? rename(outs[i].old, outs[i].path) == 0 : unlink(outs[i].path) == 0) {
            outs[i].has_old = false;
            outs[i].placed = false;
        } else {
            fprintf(stderr,
                    WH_PROG ": gen-certs: cannot restore %s (its old content is in "
                            "%s): %s\n",
                    outs[i].path, outs[i].old, strerror(errno));
            outs[i].has_old = false; /* the only copy left: keep it */
        }
    }
}

/*
 * Write every output to its temporary, keep a link to each file it replaces, then
 * rename all into place; on any failure nothing is replaced and nothing is left
 * behind. @return 0, or -1 after one line on stderr.
 */
static int outputs_commit(struct gen_output *outs, size_t n)
{
    struct stat st;
    size_t i;

    for (i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(outs[i].path, outs[j].path) == 0) {
                fprintf(stderr, WH_PROG ": gen-certs: %s would be written twice\n", outs[i].path);
                return -1;
            }
    for (i = 0; i < n; i++)
        if (output_write_tmp(&outs[i]) < 0)
            goto fail;
    for (i = 0; i < n; i++) {
        if (lstat(outs[i].path, &st) != 0) {
            if (errno == ENOENT)
                continue;
            fprintf(stderr, WH_PROG ": gen-certs: cannot write %s: %s\n", outs[i].path,
                    strerror(errno));
            goto fail;
        }
        /* rename(2) cannot replace a directory by a file: say so before anything moves. */
        if (S_ISDIR(st.st_mode)) {
            fprintf(stderr, WH_PROG ": gen-certs: cannot write %s: %s\n", outs[i].path,
                    strerror(EISDIR));
            goto fail;
        }
        unlink(outs[i].old); /* a crashed run's */
        if (link(outs[i].path, outs[i].old) != 0) {
            fprintf(stderr,
                    WH_PROG ": gen-certs: cannot write %s: cannot keep the old file "
                            "for a rollback: %s\n",
                    outs[i].path, strerror(errno));
            goto fail;
        }
        outs[i].has_old = true;
    }
    for (i = 0; i < n; i++) {
        if (rename(outs[i].tmp, outs[i].path) != 0) {
            fprintf(stderr, WH_PROG ": gen-certs: cannot write %s: %s\n", outs[i].path,
                    strerror(errno));
            outputs_rollback(outs, i);
            goto fail;
        }
        outs[i].placed = true;
    }
    outputs_cleanup(outs, n);
    return 0;
fail:
    outputs_cleanup(outs, n);
    return -1;
}

/* ---- Secret manifest and caBundle ---- */

/* One event: a plain scalar, or double-quoted when quoted. @return 1 or 0. */
static int emit_scalar(yaml_emitter_t *e, const char *text, bool quoted)
{
    yaml_event_t ev;

    if (!yaml_scalar_event_initialize(
            &ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text), !quoted, quoted,
            quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE))
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
    yaml_emitter_set_width(&e, -1); /* never fold the long base64 lines */
    ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) && yaml_emitter_emit(&e, &ev)
        && yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1)
        && yaml_emitter_emit(&e, &ev) && emit_mapping(&e, true)
        && emit_scalar(&e, "apiVersion", false) && emit_scalar(&e, "v1", false)
        && emit_scalar(&e, "kind", false) && emit_scalar(&e, "Secret", false)
        && emit_scalar(&e, "metadata", false) && emit_mapping(&e, true)
        && emit_scalar(&e, "name", false) && emit_scalar(&e, GEN_SECRET_NAME, false)
        && emit_scalar(&e, "namespace", false) && emit_scalar(&e, ns, true)
        && emit_scalar(&e, "labels", false) && emit_mapping(&e, true)
        && emit_scalar(&e, "app.kubernetes.io/name", false)
        && emit_scalar(&e, "volcano-plugin-webhook", false)
        && emit_scalar(&e, "app.kubernetes.io/part-of", false)
        && emit_scalar(&e, "volcano-plugin-webhook", false) && emit_mapping(&e, false)
        && emit_mapping(&e, false) && emit_scalar(&e, "type", false)
        && emit_scalar(&e, "kubernetes.io/tls", false) && emit_scalar(&e, "data", false)
        && emit_mapping(&e, true);
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

/* The --ca-bundle text: base64 of the CA certificate(s) on one line (malloc'd, or NULL). */
static char *bundle_text(const struct certs_pair *ca)
{
    char *b64 = certs_base64(ca->cert_pem, strlen(ca->cert_pem));
    char *line = NULL;
    size_t n;

    if (b64 == NULL)
        return NULL;
    n = strlen(b64) + 2;
    line = malloc(n);
    if (line != NULL)
        snprintf(line, n, "%s\n", b64);
    free(b64);
    return line;
}

/*
 * mkdir -p: create dir and any missing parents (mode 0755). *created gets the
 * length of the shortest prefix of dir this call created (0: none), for
 * rmdir_created. @return 0 or -1 (errno).
 */
static int mkdir_parents(const char *dir, size_t *created)
{
    char path[PATH_MAX];
    size_t n = strlen(dir);

    *created = 0;
    if (n == 0 || n >= sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        path[i] = '\0';
        if (mkdir(path, 0755) == 0) {
            if (*created == 0)
                *created = i;
        } else if (errno != EEXIST) {
            return -1; /* the caller removes what was made (rmdir_created) */
        }
        if (i < n)
            path[i] = '/';
    }
    return 0;
}

/* Undo mkdir_parents after a failed run: remove (if still empty) what it created. */
static void rmdir_created(const char *dir, size_t created)
{
    char path[PATH_MAX];
    size_t n = strlen(dir);

    if (created == 0 || n >= sizeof(path))
        return;
    memcpy(path, dir, n + 1);
    while (n > 1 && path[n - 1] == '/')
        n--;
    while (n >= created) {
        path[n] = '\0';
        if (rmdir(path) != 0)
            return;
        while (n > 0 && path[n - 1] != '/') /* back to the parent's end */
            n--;
        while (n > 1 && path[n - 1] == '/')
            n--;
        if (n == 0)
            return;
    }
}

/* An --ip value: a numeric IPv4 or IPv6 address. */
static bool ip_ok(const char *s)
{
    unsigned char buf[16];

    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* --days or --ca-days, 1..36500 (a hundred years). @return 0 or -1. */
static int parse_days(const char *s, int *out)
{
    long v;

    if (flags_parse_long(s, 1, 36500, &v) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* Append one --dns/--ip name to extra (GEN_MAX_DNS slots). @return 0, or -1 after the usage message. */
static int add_extra_san(const char **extra, size_t *nextra, const char *name)
{
    if (*nextra == GEN_MAX_DNS) {
        flags_usage_error(&gen_flags, stderr, "more than %d --dns and --ip flags", GEN_MAX_DNS);
        return -1;
    }
    extra[(*nextra)++] = name;
    return 0;
}

/*
 * --ca-cert/--ca-key: load and check the CA, sign a new leaf with it. ca gets
 * the CA certificate(s) as PEM and its key (to dispose); *capped whether the
 * leaf's notAfter was cut to the CA's (noted once the files are written).
 * @return 0, or 1 after one line on stderr (unusable files).
 */
static int sign_with_ca(struct certs_pair *ca, struct certs_pair *leaf, bool *capped,
                        const char *ca_cert_file, const char *ca_key_file,
                        enum certs_key_type key_type, const char *const *sans, size_t nsans,
                        int days)
{
    struct wh_error err = {0, ""};

    /* certs_load_pair: regular files, PEM certificate(s), unencrypted key matching the first. */
    if (certs_load_pair(ca, ca_cert_file, ca_key_file, &err) < 0) {
        fprintf(stderr, WH_PROG ": gen-certs: %s\n", err.msg);
        return 1;
    }
    if (certs_generate_leaf(leaf, capped, ca, key_type, sans, nsans, days, &err) < 0) {
        if (err.code == WH_EINVAL)
            fprintf(stderr, WH_PROG ": gen-certs: --ca-cert %s: %s\n", ca_cert_file, err.msg);
        else
            fprintf(stderr, WH_PROG ": gen-certs: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/*
 * With --ca-cert, ca.key is not written: one already in --out must be that CA's
 * key, or it would sit beside a ca.crt it does not match (a later in-place
 * renewal with --ca-key DIR/ca.key then fails). Checked even with --force: it
 * is not a file this run replaces. @return 0, or 1 after one line on stderr.
 */
static int check_stale_ca_key(const char *dir, const struct certs_pair *ca)
{
    struct wh_error err = {0, ""};
    char path[PATH_MAX];
    struct stat st;
    int rc;

    if ((size_t)snprintf(path, sizeof(path), "%s/ca.key", dir) >= sizeof(path)) {
        fprintf(stderr, WH_PROG ": gen-certs: path too long in --out %s\n", dir);
        return 1;
    }
    if (stat(path, &st) != 0 && errno == ENOENT)
        return 0;
    rc = certs_check_key_file(path, ca->cert_pem, &err);
    if (rc == 0)
        return 0; /* renewal in place: --ca-cert DIR/ca.crt --ca-key DIR/ca.key */
    if (rc == WH_ECONFLICT)
        fprintf(stderr,
                WH_PROG ": gen-certs: %s is the key of another CA; it would sit beside "
                        "--ca-cert's ca.crt: move it away or use another --out\n",
                path);
    else
        fprintf(stderr,
                WH_PROG ": gen-certs: %s; it would sit beside --ca-cert's ca.crt: "
                        "move it away or use another --out\n",
                err.msg);
    return 1;
}

/* What the command line asks for. The strings point into argv. */
struct gen_args {
    const char *service;
    const char *ns;
    const char *dir;
    const char *extra[GEN_MAX_DNS]; /* --dns and --ip, in order */
    size_t nextra;
    int days;
    int ca_days;      /* a new CA's validity */
    bool ca_days_set; /* --ca-days given: refused with --ca-cert */
    enum certs_key_type key_type;
    const char *secret_file;  /* --secret-manifest, or NULL */
    const char *bundle_file;  /* --ca-bundle, or NULL */
    const char *ca_cert_file; /* --ca-cert: sign with this CA, or NULL */
    const char *ca_key_file;
    bool force;
    bool help; /* -h: print the help and exit 0 */
};

/* The usage line of a bad flag value (webhook/flags.h). @return 2, the exit status. */
static int gen_bad_value(const char *flag, const char *value, const char *want)
{
    flags_bad_value(&gen_flags, stderr, flag, value, want);
    return 2;
}

/* One flag's value into a. @return 0, or 2 after the usage line. */
static int gen_parse_flag(struct gen_args *a, int opt, const char *arg)
{
    /* --key-type NAME: key_type_of[i] is the type of key_types[i] */
    static const char *const key_types[] = {"ecdsa", "rsa", NULL};
    static const enum certs_key_type key_type_of[] = {CERTS_KEY_ECDSA_P256, CERTS_KEY_RSA_2048};
    int k;

    switch (opt) {
    case OPT_SERVICE: a->service = arg; break;
    case OPT_NAMESPACE: a->ns = arg; break;
    case OPT_OUT: a->dir = arg; break;
    case OPT_DAYS:
        if (parse_days(arg, &a->days) < 0)
            return gen_bad_value("--days", arg, "want an integer 1..36500");
        break;
    case OPT_CA_DAYS:
        if (parse_days(arg, &a->ca_days) < 0)
            return gen_bad_value("--ca-days", arg, "want an integer 1..36500");
        a->ca_days_set = true;
        break;
    case OPT_DNS:
        if (!dns_name_ok(arg))
            return gen_bad_value("--dns", arg,
                                 "want a DNS name or IP address of 1..253 printable "
                                 "characters, no spaces or commas");
        return add_extra_san(a->extra, &a->nextra, arg) < 0 ? 2 : 0;
    case OPT_IP:
        if (!ip_ok(arg))
            return gen_bad_value("--ip", arg, "want an IPv4 or IPv6 address");
        return add_extra_san(a->extra, &a->nextra, arg) < 0 ? 2 : 0;
    case OPT_KEY_TYPE:
        if (flags_parse_enum(arg, key_types, &k) < 0)
            return gen_bad_value("--key-type", arg, "want ecdsa or rsa");
        a->key_type = key_type_of[k];
        break;
    case OPT_SECRET_MANIFEST:
    case OPT_CA_BUNDLE:
    case OPT_CA_CERT:
    case OPT_CA_KEY:
        if (arg[0] == '\0') {
            flags_usage_error(&gen_flags, stderr, "%s needs a file name",
                              opt == OPT_SECRET_MANIFEST ? "--secret-manifest"
                                  : opt == OPT_CA_BUNDLE ? "--ca-bundle"
                                  : opt == OPT_CA_CERT   ? "--ca-cert"
                                                         : "--ca-key");
            return 2;
        }
        if (opt == OPT_SECRET_MANIFEST)
            a->secret_file = arg;
        else if (opt == OPT_CA_BUNDLE)
            a->bundle_file = arg;
        else if (opt == OPT_CA_CERT)
            a->ca_cert_file = arg;
        else
            a->ca_key_file = arg;
        break;
    case OPT_FORCE: a->force = true; break;
    }
    return 0;
}

/* Read the flags into a. @return 0 (a->help: print the help), or 2 after the usage line. */
static int gen_parse_args(struct gen_args *a, int argc, char **argv)
{
    struct flags_parser p;
    const char *arg;
    int opt;

    memset(a, 0, sizeof(*a));
    a->days = GEN_DEFAULT_DAYS;
    a->ca_days = GEN_DEFAULT_CA_DAYS;
    a->key_type = CERTS_KEY_ECDSA_P256;
    if (flags_parser_init(&p, &gen_flags) < 0) {
        fprintf(stderr, WH_PROG ": gen-certs: bad flag table\n");
        return 2;
    }
    while ((opt = flags_next(&p, argc, argv, &arg, stderr)) != -1) {
        if (opt < 0)
            return 2; /* flags_next told it */
        if (opt == 'h') {
            a->help = true;
            return 0;
        }
        if (gen_parse_flag(a, opt, arg) != 0)
            return 2;
    }
    return flags_no_arguments(&p, argc, argv, stderr) < 0 ? 2 : 0;
}

/* Required flags, flags that go in pairs, names the API server would refuse.
 * @return 0, or 2 after the usage line. */
static int gen_check_args(const struct gen_args *a)
{
    if (a->service == NULL || a->ns == NULL || a->dir == NULL) {
        fprintf(stderr, WH_PROG ": gen-certs: missing required flag %s (see --help)\n",
                a->service == NULL  ? "--service"
                    : a->ns == NULL ? "--namespace"
                                    : "--out");
        return 2;
    }
    if ((a->ca_cert_file == NULL) != (a->ca_key_file == NULL)) {
        fprintf(stderr, WH_PROG ": gen-certs: %s needs %s: give both or neither\n",
                a->ca_cert_file != NULL ? "--ca-cert" : "--ca-key",
                a->ca_cert_file != NULL ? "--ca-key" : "--ca-cert");
        return 2;
    }
    if (a->ca_cert_file != NULL && a->ca_days_set) {
        fprintf(stderr,
                WH_PROG ": gen-certs: --ca-days is the validity of a new CA: not with "
                        "--ca-cert, whose CA keeps its own\n");
        return 2;
    }
    /* A serving certificate outliving its CA would only fail at the CA's notAfter. */
    if (a->ca_cert_file == NULL && a->days > a->ca_days) {
        fprintf(stderr,
                WH_PROG ": gen-certs: --days %d is longer than the CA's --ca-days %d: the "
                        "serving certificate would outlive its CA\n",
                a->days, a->ca_days);
        return 2;
    }
    if (!k8s_name_is_label(a->service)) {
        flags_bad_value(&gen_flags, stderr, "--service", a->service, "want a DNS-1123 label");
        return 2;
    }
    if (!k8s_name_is_label(a->ns)) {
        flags_bad_value(&gen_flags, stderr, "--namespace", a->ns, "want a DNS-1123 label");
        return 2;
    }
    return 0;
}

/* The subjectAltNames: the Service's four names, then --dns/--ip in order. */
struct gen_sans {
    char names[4][512];
    const char *list[4 + GEN_MAX_DNS]; /* into names and the argv strings */
    size_t n;
};

static void gen_sans_init(struct gen_sans *s, const struct gen_args *a)
{
    snprintf(s->names[0], sizeof(s->names[0]), "%s", a->service);
    snprintf(s->names[1], sizeof(s->names[1]), "%s.%s", a->service, a->ns);
    snprintf(s->names[2], sizeof(s->names[2]), "%s.%s.svc", a->service, a->ns);
    snprintf(s->names[3], sizeof(s->names[3]), "%s.%s.svc.cluster.local", a->service, a->ns);
    s->n = 0;
    for (size_t i = 0; i < 4; i++)
        s->list[s->n++] = s->names[i];
    for (size_t i = 0; i < a->nextra; i++)
        s->list[s->n++] = a->extra[i];
}

/*
 * A new CA invalidates every caBundle already deployed: never replace one silently.
 * With --ca-cert the CA stays, but a pair in service is still not replaced unasked;
 * ca.key is not written then, and one in --out must be the CA's own (check_stale_ca_key,
 * even with --force). @return 0, or 1 after one line on stderr.
 */
static int gen_refuse_existing(const struct gen_args *a)
{
    for (size_t i = 0; !a->force && i < 6; i++) {
        static const char *const files[] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
        char buf[PATH_MAX];
        const char *path = i == 4 ? a->secret_file : i == 5 ? a->bundle_file : buf;

        if (i < 4) {
            if (a->ca_cert_file != NULL && i == 1)
                continue;
            snprintf(buf, sizeof(buf), "%s/%s", a->dir, files[i]);
        }
        if (path == NULL || access(path, F_OK) != 0)
            continue;
        if (a->ca_cert_file != NULL)
            fprintf(stderr, WH_PROG ": gen-certs: %s exists (use --force to replace it)\n", path);
        else
            fprintf(stderr,
                    WH_PROG ": gen-certs: %s exists; a new CA invalidates the deployed caBundle "
                            "(use --force to replace it)\n",
                    path);
        return 1;
    }
    return 0;
}

/* What a run makes in memory before anything touches --out. */
struct gen_made {
    struct certs_pair ca;
    struct certs_pair leaf;
    bool capped;  /* with --ca-cert: the leaf's notAfter was cut to the CA's */
    char *secret; /* --secret-manifest text (holds the key: cleansed on dispose) */
    char *bundle; /* --ca-bundle text */
};

static void gen_made_dispose(struct gen_made *m)
{
    if (m->secret != NULL) {
        OPENSSL_cleanse(m->secret, strlen(m->secret)); /* it holds the key in base64 */
        free(m->secret);
    }
    free(m->bundle);
    certs_pair_dispose(&m->ca);
    certs_pair_dispose(&m->leaf);
    m->secret = m->bundle = NULL;
}

/* The CA and serving pair (new, or signed by --ca-cert), the Secret manifest and the
 * caBundle, into m. @return 0, or 1 after one line on stderr. */
static int gen_make(struct gen_made *m, const struct gen_args *a, const struct gen_sans *s)
{
    struct wh_error err = {0, ""};

    if (a->ca_cert_file != NULL) {
        if (sign_with_ca(&m->ca, &m->leaf, &m->capped, a->ca_cert_file, a->ca_key_file, a->key_type,
                         s->list, s->n, a->days)
                != 0
            || check_stale_ca_key(a->dir, &m->ca) != 0)
            return 1;
    } else if (certs_generate_ca(&m->ca, a->key_type, (long long)a->ca_days * 86400, &err) < 0
               || certs_generate_leaf(&m->leaf, NULL, &m->ca, a->key_type, s->list, s->n, a->days,
                                      &err)
                   < 0) {
        fprintf(stderr, WH_PROG ": gen-certs: %s\n", err.msg);
        return 1;
    }
    if (a->secret_file != NULL && (m->secret = secret_manifest(a->ns, &m->ca, &m->leaf)) == NULL) {
        fprintf(stderr, WH_PROG ": gen-certs: cannot make the Secret manifest: out of memory\n");
        return 1;
    }
    if (a->bundle_file != NULL && (m->bundle = bundle_text(&m->ca)) == NULL) {
        fprintf(stderr, WH_PROG ": gen-certs: out of memory\n");
        return 1;
    }
    return 0;
}

/* The files of the run, in outs (GEN_MAX_OUTPUTS slots). @return 0, or -1 after a message. */
static int gen_outputs_init(struct gen_output *outs, size_t *nouts, const struct gen_args *a,
                            const struct gen_made *m)
{
    /* text NULL: not written. ca.key only for a CA made here: an existing CA's key
     * stays where it is. */
    const struct {
        const char *dir;
        const char *name;
        const char *text;
        mode_t mode;
    } files[GEN_MAX_OUTPUTS] = {
        {a->dir, "ca.key", a->ca_cert_file == NULL ? m->ca.key_pem : NULL, 0600},
        {a->dir, "ca.crt", m->ca.cert_pem, 0644},
        {a->dir, "tls.key", m->leaf.key_pem, 0600},
        {a->dir, "tls.crt", m->leaf.cert_pem, 0644},
        {NULL, a->secret_file, m->secret, 0600},
        {NULL, a->bundle_file, m->bundle, 0644},
    };

    *nouts = 0;
    for (size_t i = 0; i < GEN_MAX_OUTPUTS; i++) {
        if (files[i].text == NULL)
            continue;
        if (output_init(&outs[(*nouts)++], files[i].dir, files[i].name, files[i].text,
                        files[i].mode)
            < 0)
            return -1;
    }
    return 0;
}

/* What was written, on stdout; a leaf cut to the CA's notAfter noted on stderr. */
static void gen_report(const struct gen_args *a, const struct gen_made *m, const struct gen_sans *s)
{
    struct wh_error err = {0, ""};
    const char *kind = a->key_type == CERTS_KEY_RSA_2048 ? "RSA-2048" : "ECDSA P-256";
    long long ca_not_after = 0;
    char when[64];

    if (m->capped && certs_not_after(m->ca.cert_pem, &ca_not_after, &err) == 0)
        fprintf(stderr,
                WH_PROG ": gen-certs: note: the CA expires at %s, sooner than --days %d: "
                        "tls.crt expires with it; roll the CA over before then (README, "
                        "\"Rolling the CA over\")\n",
                certs_format_utc(ca_not_after, when, sizeof(when)), a->days);
    if (a->ca_cert_file != NULL)
        printf("wrote %s/ca.crt (a copy of %s) %s/tls.crt %s/tls.key (%s, signed by that CA; "
               "its key stays in %s, no ca.key written)\n",
               a->dir, a->ca_cert_file, a->dir, a->dir, kind, a->ca_key_file);
    else
        printf("wrote %s/ca.crt %s/ca.key %s/tls.crt %s/tls.key (%s, CA valid %d days, "
               "serving certificate %d days)\n",
               a->dir, a->dir, a->dir, a->dir, kind, a->ca_days, a->days);
    if (a->secret_file != NULL)
        printf("wrote Secret %s/%s manifest to %s\n", a->ns, GEN_SECRET_NAME, a->secret_file);
    if (a->bundle_file != NULL)
        printf("wrote caBundle (base64 of ca.crt) to %s\n", a->bundle_file);
    printf("subjectAltNames:");
    for (size_t i = 0; i < s->n; i++)
        printf(" %s", s->list[i]);
    printf("\n");
}

int gen_certs_main(int argc, char **argv)
{
    struct gen_args a;
    struct gen_sans sans;
    struct gen_made made = {{NULL, NULL}, {NULL, NULL}, false, NULL, NULL};
    struct stat st;
    struct gen_output *outs = NULL; /* up to 6 files, PATH_MAX each: on the heap */
    size_t nouts = 0;
    size_t created = 0; /* mkdir_parents: what to remove on failure */
    int rc;

    rc = gen_parse_args(&a, argc, argv);
    if (rc == 0 && a.help) {
        flags_print_help(&gen_flags, stdout);
        return 0;
    }
    if (rc == 0)
        rc = gen_check_args(&a);
    if (rc != 0)
        return rc;
    gen_sans_init(&sans, &a);
    if (gen_refuse_existing(&a) != 0)
        return 1;
    rc = 1;
    outs = calloc(GEN_MAX_OUTPUTS, sizeof(*outs));
    if (outs == NULL) {
        fprintf(stderr, WH_PROG ": gen-certs: out of memory\n");
        return 1;
    }
    /* Everything is made in memory before --out is: a refusal leaves nothing behind. */
    if (gen_make(&made, &a, &sans) != 0 || gen_outputs_init(outs, &nouts, &a, &made) < 0)
        goto out;
    if (mkdir_parents(a.dir, &created) != 0) {
        fprintf(stderr, WH_PROG ": gen-certs: cannot create --out %s: %s\n", a.dir,
                strerror(errno));
        goto out;
    }
    if (stat(a.dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, WH_PROG ": gen-certs: --out %s is not a directory\n", a.dir);
        goto out;
    }
    if (outputs_commit(outs, nouts) < 0)
        goto out;
    created = 0; /* --out stays */
    gen_report(&a, &made, &sans);
    rc = 0;
out:
    rmdir_created(a.dir, created); /* a failed run leaves no --out it made */
    gen_made_dispose(&made);
    free(outs);
    return rc;
}
