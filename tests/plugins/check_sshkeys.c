/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_sshkeys.c - plugins/sshkeys.c: the key formats of docs/plugins.md §4.3 checked
 * by parsing them back (OpenSSL for id_rsa, a hand-rolled RFC 4253 reader for
 * id_rsa.pub), against `ssh-keygen -y` when it is installed (skipped cleanly
 * when not), and the store's one-pair-per-uid rule under concurrency (D11).
 */
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "certs/sshkey.h"
#include "plugins/sshkeys.h"
#include "tests/testutil.h"

/* ---- helpers ---- */

/* Decode standard base64 (with padding) into a malloc'd buffer; *len = bytes. */
static unsigned char *b64_decode(const char *in, size_t inlen, size_t *len)
{
    unsigned char *out = malloc(inlen / 4 * 3 + 4);
    EVP_ENCODE_CTX *ctx = EVP_ENCODE_CTX_new();
    int n = 0;
    int tail = 0;

    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(ctx);
    EVP_DecodeInit(ctx);
    ck_assert_int_ge(EVP_DecodeUpdate(ctx, out, &n, (const unsigned char *)in, (int)inlen), 0);
    ck_assert_int_eq(EVP_DecodeFinal(ctx, out + n, &tail), 1);
    EVP_ENCODE_CTX_free(ctx);
    *len = (size_t)(n + tail);
    return out;
}

/* Read a uint32 length and that many bytes from blob at *off (RFC 4253 §5). */
static const unsigned char *wire_field(const unsigned char *blob, size_t len, size_t *off,
                                       size_t *flen)
{
    const unsigned char *p;

    ck_assert_uint_le(*off + 4, len);
    p = blob + *off;
    *flen = ((size_t)p[0] << 24) | ((size_t)p[1] << 16) | ((size_t)p[2] << 8) | p[3];
    ck_assert_uint_le(*off + 4 + *flen, len);
    *off += 4 + *flen;
    return p + 4;
}

/* n of a parsed key (new BIGNUM). */
static BIGNUM *key_bn(EVP_PKEY *pk, const char *param)
{
    BIGNUM *bn = NULL;

    ck_assert_int_eq(EVP_PKEY_get_bn_param(pk, param, &bn), 1);
    return bn;
}

/* Check an RFC 4253 mpint: minimal, positive, equal to want. */
static void check_mpint(const unsigned char *p, size_t n, const BIGNUM *want)
{
    BIGNUM *got;

    ck_assert_uint_gt(n, 0);
    ck_assert_msg((p[0] & 0x80) == 0, "mpint is negative");
    if (n > 1 && p[0] == 0)
        ck_assert_msg((p[1] & 0x80) != 0, "mpint has a superfluous leading zero");
    got = BN_bin2bn(p, (int)n, NULL);
    ck_assert_ptr_nonnull(got);
    ck_assert_int_eq(BN_cmp(got, want), 0);
    BN_free(got);
}

/*
 * Every format rule of docs/plugins.md §4.3 for one pair: PEM layout, key size and
 * exponent, and the public line's wire form matching the private key.
 */
static void check_pair(const char *priv, const char *pub)
{
    static const char first[] = "-----BEGIN RSA PRIVATE KEY-----\n";
    static const char last[] = "-----END RSA PRIVATE KEY-----\n";
    size_t plen = strlen(priv);
    const char *line;
    const char *end;
    BIO *bio;
    EVP_PKEY *pk;
    BIGNUM *n;
    BIGNUM *e;
    BIGNUM *e_want = NULL;
    const char *sp;
    unsigned char *blob;
    size_t blen;
    size_t off = 0;
    size_t flen;
    const unsigned char *f;
    size_t body_lines = 0;

    /* id_rsa: first and last lines, 64-column body, LF-terminated, no headers */
    ck_assert_uint_gt(plen, sizeof(first) + sizeof(last));
    ck_assert_int_eq(strncmp(priv, first, sizeof(first) - 1), 0);
    ck_assert_str_eq(priv + plen - (sizeof(last) - 1), last);
    ck_assert_ptr_null(strchr(priv, '\r'));
    ck_assert_ptr_null(strchr(priv, ':')); /* no "Proc-Type:" style headers */
    line = priv + sizeof(first) - 1;
    end = priv + plen - (sizeof(last) - 1);
    while (line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t ll;

        ck_assert_ptr_nonnull(nl);
        ll = (size_t)(nl - line);
        if (nl + 1 < end)
            ck_assert_uint_eq(ll, 64); /* every body line but the last */
        else
            ck_assert(ll >= 1 && ll <= 64);
        for (size_t i = 0; i < ll; i++)
            ck_assert_msg(
                strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", line[i])
                    != NULL,
                "non-base64 character in id_rsa");
        body_lines++;
        line = nl + 1;
    }
    ck_assert_uint_ge(body_lines, 20); /* a 2048-bit PKCS#1 key is ~1190 bytes of DER */

    /* parse back with OpenSSL: RSA, 2048 bits, e = 65537 */
    bio = BIO_new_mem_buf(priv, (int)plen);
    ck_assert_ptr_nonnull(bio);
    pk = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    ck_assert_ptr_nonnull(pk);
    ck_assert_int_eq(EVP_PKEY_get_base_id(pk), EVP_PKEY_RSA);
    ck_assert_int_eq(EVP_PKEY_get_bits(pk), 2048);
    n = key_bn(pk, OSSL_PKEY_PARAM_RSA_N);
    e = key_bn(pk, OSSL_PKEY_PARAM_RSA_E);
    ck_assert_int_eq(BN_dec2bn(&e_want, "65537"), 5);
    ck_assert_int_eq(BN_cmp(e, e_want), 0);
    ck_assert_int_eq(BN_num_bits(n), 2048);

    /* id_rsa.pub: "ssh-rsa " + base64 + "\n", no comment */
    ck_assert_int_eq(strncmp(pub, "ssh-rsa ", 8), 0);
    ck_assert_uint_gt(strlen(pub), 9);
    ck_assert_int_eq(pub[strlen(pub) - 1], '\n');
    sp = strchr(pub + 8, ' ');
    ck_assert_msg(sp == NULL, "id_rsa.pub has a comment field");
    ck_assert_ptr_null(strchr(pub, '\r'));
    ck_assert_ptr_eq(strchr(pub, '\n'), pub + strlen(pub) - 1);
    blob = b64_decode(pub + 8, strlen(pub) - 9, &blen);
    /* RFC 4253 §6.6: string "ssh-rsa", mpint e, mpint n, nothing after */
    f = wire_field(blob, blen, &off, &flen);
    ck_assert_uint_eq(flen, 7);
    ck_assert_int_eq(memcmp(f, "ssh-rsa", 7), 0);
    f = wire_field(blob, blen, &off, &flen);
    ck_assert_uint_eq(flen, 3); /* 65537 = 01 00 01, top bit clear: no 0x00 */
    ck_assert(f[0] == 0x01 && f[1] == 0x00 && f[2] == 0x01);
    check_mpint(f, flen, e);
    f = wire_field(blob, blen, &off, &flen);
    ck_assert_uint_eq(flen, 257); /* 2048-bit n has its top bit set: leading 0x00 */
    ck_assert_int_eq(f[0], 0x00);
    check_mpint(f, flen, n);
    ck_assert_uint_eq(off, blen);
    /* the encoding is canonical: re-encoding the blob gives the same text */
    {
        char *again = malloc(4 * ((blen + 2) / 3) + 1);

        ck_assert_ptr_nonnull(again);
        EVP_EncodeBlock((unsigned char *)again, blob, (int)blen);
        ck_assert_int_eq(strncmp(again, pub + 8, strlen(pub) - 9), 0);
        ck_assert_uint_eq(strlen(again), strlen(pub) - 9);
        free(again);
    }
    free(blob);
    BN_free(n);
    BN_free(e);
    BN_free(e_want);
    EVP_PKEY_free(pk);
}

/* Path of ssh-keygen on $PATH, or NULL. */
static const char *find_ssh_keygen(char *buf, size_t len)
{
    const char *d = getenv("PATH");

    if (d == NULL)
        d = "/usr/bin:/bin";
    for (;;) {
        const char *colon = strchr(d, ':');
        int dl = colon != NULL ? (int)(colon - d) : (int)strlen(d);

        snprintf(buf, len, "%.*s/ssh-keygen", dl, d);
        if (dl > 0 && access(buf, X_OK) == 0)
            return buf;
        if (colon == NULL)
            return NULL;
        d = colon + 1;
    }
}

/* ---- tests ---- */

START_TEST(test_generate_formats)
{
    struct wh_error err = {0};
    char *priv = NULL;
    char *pub = NULL;

    ck_assert_int_eq(sshkey_generate(&priv, &pub, &err), 0);
    check_pair(priv, pub);
    free(priv);
    free(pub);
}
END_TEST

/* Two generations give two different keys. */
START_TEST(test_generate_fresh)
{
    struct wh_error err = {0};
    char *p1 = NULL;
    char *q1 = NULL;
    char *p2 = NULL;
    char *q2 = NULL;

    ck_assert_int_eq(sshkey_generate(&p1, &q1, &err), 0);
    ck_assert_int_eq(sshkey_generate(&p2, &q2, &err), 0);
    ck_assert_str_ne(p1, p2);
    ck_assert_str_ne(q1, q2);
    free(p1);
    free(q1);
    free(p2);
    free(q2);
}
END_TEST

/* OpenSSH itself derives the same public line from id_rsa (skipped without ssh-keygen). */
START_TEST(test_ssh_keygen_agrees)
{
    char keygen[4200];
    char dir[] = "/tmp/check_sshkeys_XXXXXX";
    char file[128];
    char cmd[4600];
    char out[2048];
    struct wh_error err = {0};
    char *priv = NULL;
    char *pub = NULL;
    FILE *f;
    FILE *p;
    size_t n;

    if (find_ssh_keygen(keygen, sizeof(keygen)) == NULL) {
        fprintf(stderr, "check_sshkeys: ssh-keygen not installed, comparison skipped\n");
        return;
    }
    ck_assert_int_eq(sshkey_generate(&priv, &pub, &err), 0);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(file, sizeof(file), "%s/id_rsa", dir);
    f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(priv, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(file, 0600), 0); /* ssh-keygen refuses open key files */
    snprintf(cmd, sizeof(cmd), "'%s' -y -f '%s' 2>/dev/null", keygen, file);
    p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_str_eq(out, pub);
    unlink(file);
    rmdir(dir);
    free(priv);
    free(pub);
}
END_TEST

START_TEST(test_store_basics)
{
    struct sshkeys_store *s = sshkeys_create();
    struct wh_error err = {0};
    char *p1 = NULL;
    char *q1 = NULL;
    char *p2 = NULL;
    char *q2 = NULL;
    char *p3 = NULL;
    char *q3 = NULL;

    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(sshkeys_lookup(s, "uid-a", &p1, &q1), WH_ENOTFOUND);
    ck_assert_ptr_null(p1);
    ck_assert_int_eq(sshkeys_get_or_generate(s, "uid-a", &p1, &q1, &err), 0);
    check_pair(p1, q1);
    /* the same uid: the same pair, never regenerated (D11) */
    ck_assert_int_eq(sshkeys_get_or_generate(s, "uid-a", &p2, &q2, &err), 0);
    ck_assert_str_eq(p2, p1);
    ck_assert_str_eq(q2, q1);
    free(p2);
    free(q2);
    ck_assert_int_eq(sshkeys_lookup(s, "uid-a", &p2, &q2), 0);
    ck_assert_str_eq(p2, p1);
    ck_assert_str_eq(q2, q1);
    free(p2);
    free(q2);
    /* another uid: another pair */
    ck_assert_int_eq(sshkeys_get_or_generate(s, "uid-b", &p2, &q2, &err), 0);
    ck_assert_str_ne(p2, p1);
    ck_assert_str_ne(q2, q1);

    /* put (adoption) replaces, and get_or_generate then returns the adopted pair */
    ck_assert_int_eq(sshkeys_put(s, "uid-a", "PRIV\n", "PUB\n"), 0);
    ck_assert_int_eq(sshkeys_get_or_generate(s, "uid-a", &p3, &q3, &err), 0);
    ck_assert_str_eq(p3, "PRIV\n");
    ck_assert_str_eq(q3, "PUB\n");
    free(p3);
    free(q3);
    ck_assert_int_eq(sshkeys_put(s, "uid-new", "P2", "Q2"), 0);
    ck_assert_int_eq(sshkeys_lookup(s, "uid-new", &p3, &q3), 0);
    ck_assert_str_eq(p3, "P2");
    ck_assert_str_eq(q3, "Q2");
    free(p3);
    free(q3);

    /* drop forgets; the next request makes a new pair */
    sshkeys_drop(s, "uid-a");
    sshkeys_drop(s, "no-such-uid");
    ck_assert_int_eq(sshkeys_lookup(s, "uid-a", &p3, &q3), WH_ENOTFOUND);
    ck_assert_int_eq(sshkeys_get_or_generate(s, "uid-a", &p3, &q3, &err), 0);
    ck_assert_str_ne(p3, "PRIV\n");
    ck_assert_str_ne(p3, p1);
    check_pair(p3, q3);
    free(p1);
    free(q1);
    /* dropping uid-a left uid-b alone */
    ck_assert_int_eq(sshkeys_lookup(s, "uid-b", &p1, &q1), 0);
    ck_assert_str_eq(p1, p2);
    ck_assert_str_eq(q1, q2);
    free(p1);
    free(q1);
    free(p2);
    free(q2);
    free(p3);
    free(q3);
    sshkeys_destroy(s);
    sshkeys_destroy(NULL);
}
END_TEST

#define NTHREADS 6

struct worker {
    struct sshkeys_store *s;
    const char *uid;
    pthread_barrier_t *start;
    int rc;
    char *priv;
    char *pub;
};

static void *worker_main(void *p)
{
    struct worker *w = p;
    struct wh_error err = {0};

    pthread_barrier_wait(w->start);
    w->rc = sshkeys_get_or_generate(w->s, w->uid, &w->priv, &w->pub, &err);
    return NULL;
}

/* Many workers, two uids, all at once: exactly one pair per uid. */
START_TEST(test_store_concurrency)
{
    struct sshkeys_store *s = sshkeys_create();
    struct worker w[NTHREADS];
    pthread_t th[NTHREADS];
    pthread_barrier_t start;
    char *p = NULL;
    char *q = NULL;

    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(pthread_barrier_init(&start, NULL, NTHREADS), 0);
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (struct worker){s, i % 2 == 0 ? "uid-even" : "uid-odd", &start, -1, NULL, NULL};
        ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < NTHREADS; i++) {
        ck_assert_int_eq(w[i].rc, 0);
        ck_assert_str_eq(w[i].priv, w[i % 2].priv);
        ck_assert_str_eq(w[i].pub, w[i % 2].pub);
    }
    ck_assert_str_ne(w[0].priv, w[1].priv);
    check_pair(w[0].priv, w[0].pub);
    check_pair(w[1].priv, w[1].pub);
    /* what is stored is what they got */
    ck_assert_int_eq(sshkeys_lookup(s, "uid-odd", &p, &q), 0);
    ck_assert_str_eq(p, w[1].priv);
    ck_assert_str_eq(q, w[1].pub);
    free(p);
    free(q);
    for (int i = 0; i < NTHREADS; i++) {
        free(w[i].priv);
        free(w[i].pub);
    }
    sshkeys_destroy(s);
}
END_TEST

static Suite *sshkeys_suite(void)
{
    Suite *s = suite_create("sshkeys");
    TCase *tc = tcase_create("keys");

    tcase_set_timeout(tc, 120); /* RSA generation is slow under sanitizers */
    tcase_add_test(tc, test_generate_formats);
    tcase_add_test(tc, test_generate_fresh);
    tcase_add_test(tc, test_ssh_keygen_agrees);
    tcase_add_test(tc, test_store_basics);
    tcase_add_test(tc, test_store_concurrency);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(sshkeys_suite());
}
