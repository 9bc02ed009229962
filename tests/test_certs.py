# SPDX-License-Identifier: Apache-2.0
"""test_certs.py - gen-certs and `serve --self-signed`, checked by strict TLS clients.

Every certificate must verify under a client that trusts only our CA and matches the
host name against the subjectAltName alone (the CN ignored), as Go's crypto/tls in
kube-apiserver does: Python's ssl with check_hostname, hostname_checks_common_name off
and VERIFY_X509_STRICT over a real handshake, and `openssl verify -x509_strict -purpose
sslserver -verify_hostname NAME` with the CA as the only trust anchor.

`gen-certs --ca-cert/--ca-key` signs a new serving pair with an existing CA: ca.crt is that
CA byte for byte, no ca.key is written, and unusable CAs are refused with one line.

`serve` exposes the notAfter of the certificate it serves as
webhook_tls_certificate_expiry_timestamp_seconds (start, reload, --self-signed; absent with
--insecure-http) and logs a warning when fewer than 30 days are left.

`serve --self-signed` (managed certificates with the Secret in memory, controller/certkeeper.h)
runs against tests/apiserver.py holding a MutatingWebhookConfiguration with two webhooks: the
caBundle of both must become the CA that signs the certificate the webhook actually serves,
nothing is served until then (a certificate under a CA the API server does not hold is never
served), failed PATCHes are retried, and no Secret is read or written through the API.
"""

import base64
import calendar
import http.client
import json
import os
import re
import shutil
import socket
import ssl
import stat
import subprocess
import tempfile
import threading
import time
import unittest

import yaml

import harness

SERVICE = "vpw"
NAMESPACE = "team-a"
SANS = ["vpw", "vpw.team-a", "vpw.team-a.svc", "vpw.team-a.svc.cluster.local",
        "vpw.example.org"]
MWC = "vpw-test"
MWC_PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/" + MWC


def strict_context(ca_file):
    """A client context like Go's crypto/tls: only ca_file, SAN only, RFC 5280 strict."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=ca_file)
    ctx.check_hostname = True
    ctx.hostname_checks_common_name = False
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    return ctx


class TLSServer:
    """A one-connection-at-a-time TLS server on 127.0.0.1 serving cert/key (handshake only)."""

    def __init__(self, cert, key):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                with self.ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.sendall(b"hi")
            except (OSError, ssl.SSLError):
                pass
            finally:
                conn.close()

    def close(self):
        self.stopping = True
        self.sock.close()


def handshake(port, ca_file, name):
    """Connect to 127.0.0.1:port verifying the server as `name`; returns the peer cert
    (DER). Raises ssl.SSLCertVerificationError when it does not verify."""
    ctx = strict_context(ca_file)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=name) as tls:
            return tls.getpeercert(binary_form=True)


def openssl_verify(ca_file, cert_file, name=None, ip=None):
    cmd = ["openssl", "verify", "-x509_strict", "-purpose", "sslserver",
           "-no-CApath", "-no-CAstore", "-CAfile", ca_file]
    if name is not None:
        cmd += ["-verify_hostname", name]
    if ip is not None:
        cmd += ["-verify_ip", ip]
    r = subprocess.run(cmd + [cert_file], capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout + r.stderr


def gen_certs(out, *args, service=SERVICE, namespace=NAMESPACE):
    return subprocess.run([harness.binary(), "gen-certs", "--service", service,
                           "--namespace", namespace, "--out", out] + list(args),
                          capture_output=True, text=True, timeout=60)


def gen_env_certs(out, *args):
    """gen-certs for the Service harness.Env's webhook is verified as."""
    return gen_certs(out, *args, service=harness.SERVICE, namespace=harness.SERVICE_NAMESPACE)


class GenCertsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(harness.binary(), os.X_OK):
            raise unittest.SkipTest("%s not built" % harness.binary())
        cls.dir = tempfile.mkdtemp(prefix="vpw-certs-")
        cls.out = {}
        for kt in ("ecdsa", "rsa"):
            out = os.path.join(cls.dir, kt)
            r = gen_certs(out, "--key-type", kt, "--dns", "vpw.example.org", "--ip", "127.0.0.1",
                          "--ip", "::1", "--secret-manifest", os.path.join(out, "secret.yaml"),
                          "--ca-bundle", os.path.join(out, "ca-bundle"))
            if r.returncode != 0:
                raise AssertionError("gen-certs --key-type %s: %s" % (kt, r.stderr))
            cls.out[kt] = out

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def files(self, kt):
        return {f: os.path.join(self.out[kt], f) for f in harness.CERT_FILES}

    def test_key_types(self):
        want = {"ecdsa": ("id-ecPublicKey", "prime256v1", "ecdsa-with-SHA256"),
                "rsa": ("rsaEncryption", "2048 bit", "sha256WithRSAEncryption")}
        for kt, words in want.items():
            for f in ("ca.crt", "tls.crt"):
                text = subprocess.run(["openssl", "x509", "-noout", "-text", "-in",
                                       self.files(kt)[f]], capture_output=True, text=True,
                                      check=True).stdout
                for w in words:
                    self.assertIn(w, text, "%s %s" % (kt, f))

    def test_python_ssl_strict_every_san(self):
        for kt in ("ecdsa", "rsa"):
            f = self.files(kt)
            srv = TLSServer(f["tls.crt"], f["tls.key"])
            try:
                for name in SANS + ["127.0.0.1", "::1"]:
                    with self.subTest(key_type=kt, name=name):
                        handshake(srv.port, f["ca.crt"], name)
                for name in ["vpw.default.svc", "team-a.svc", "other.example.org",
                             "127.0.0.2", "x.vpw.team-a.svc"]:
                    with self.subTest(key_type=kt, wrong=name):
                        with self.assertRaises(ssl.SSLCertVerificationError):
                            handshake(srv.port, f["ca.crt"], name)
                # Another CA (the other key type's) is not trusted.
                other = self.files("rsa" if kt == "ecdsa" else "ecdsa")["ca.crt"]
                with self.assertRaises(ssl.SSLCertVerificationError):
                    handshake(srv.port, other, "vpw.team-a.svc")
            finally:
                srv.close()

    def test_openssl_verify_strict(self):
        for kt in ("ecdsa", "rsa"):
            f = self.files(kt)
            for name in SANS:
                with self.subTest(key_type=kt, name=name):
                    rc, out = openssl_verify(f["ca.crt"], f["tls.crt"], name=name)
                    self.assertEqual(rc, 0, out)
                    self.assertIn(": OK", out)
            for ip in ("127.0.0.1", "::1"):
                rc, out = openssl_verify(f["ca.crt"], f["tls.crt"], ip=ip)
                self.assertEqual(rc, 0, out)
            rc, out = openssl_verify(f["ca.crt"], f["tls.crt"], name="vpw.default.svc")
            self.assertNotEqual(rc, 0)
            self.assertIn("hostname mismatch", out)
            # The CA itself is not a server certificate.
            rc, out = openssl_verify(f["ca.crt"], f["ca.crt"], name="vpw.team-a.svc")
            self.assertNotEqual(rc, 0)

    def test_secret_manifest_and_ca_bundle(self):
        for kt in ("ecdsa", "rsa"):
            f = self.files(kt)
            with open(os.path.join(self.out[kt], "secret.yaml")) as fh:
                secret = yaml.safe_load(fh)
            self.assertEqual(sorted(secret), ["apiVersion", "data", "kind", "metadata", "type"])
            self.assertEqual(secret["apiVersion"], "v1")
            self.assertEqual(secret["kind"], "Secret")
            self.assertEqual(secret["type"], "kubernetes.io/tls")
            self.assertEqual(secret["metadata"]["name"], "volcano-plugin-webhook-tls")
            self.assertEqual(secret["metadata"]["namespace"], NAMESPACE)
            self.assertEqual(sorted(secret["data"]), ["ca.crt", "tls.crt", "tls.key"])
            for key, value in secret["data"].items():
                with open(f[key], "rb") as fh:
                    self.assertEqual(base64.b64decode(value, validate=True), fh.read(), key)
            with open(os.path.join(self.out[kt], "ca-bundle"), "rb") as fh:
                bundle = fh.read()
            self.assertEqual(bundle.count(b"\n"), 1)
            self.assertTrue(bundle.endswith(b"\n"))
            with open(f["ca.crt"], "rb") as fh:
                self.assertEqual(base64.b64decode(bundle.strip(), validate=True), fh.read())
            self.assertEqual(os.stat(os.path.join(self.out[kt], "secret.yaml")).st_mode & 0o777,
                             0o600)

    def test_refuses_to_overwrite(self):
        out = os.path.join(self.dir, "again")
        bundle = os.path.join(self.out["ecdsa"], "ca-bundle")
        with open(bundle, "rb") as fh:
            before = fh.read()
        r = gen_certs(out, "--ca-bundle", bundle)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stderr, "volcano-plugin-webhook: gen-certs: %s exists; a new CA "
                                   "invalidates the deployed caBundle (use --force to replace "
                                   "it)\n" % bundle)
        with open(bundle, "rb") as fh:
            self.assertEqual(fh.read(), before)
        self.assertFalse(os.path.exists(out), "a refusal leaves no --out directory behind")
        r = gen_certs(out, "--key-type", "dsa")
        self.assertEqual(r.returncode, 2)
        self.assertIn('invalid --key-type "dsa"', r.stderr)


def not_after(cert_file, der=False):
    """notAfter of a certificate file as Unix seconds, read by the openssl CLI."""
    cmd = ["openssl", "x509", "-enddate", "-noout", "-in", cert_file]
    if der:
        cmd += ["-inform", "DER"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=30).stdout
    return ssl.cert_time_to_seconds(out.strip().split("=", 1)[1])


def not_before(cert_file):
    """notBefore of a PEM certificate file as Unix seconds, read by the openssl CLI."""
    out = subprocess.run(["openssl", "x509", "-startdate", "-noout", "-in", cert_file],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    return ssl.cert_time_to_seconds(out.strip().split("=", 1)[1])


def lifetime(cert_file):
    """notAfter - notBefore in seconds: the validity asked for plus the hour of skew
    allowance before now that gen-certs puts in notBefore."""
    return not_after(cert_file) - not_before(cert_file)


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def wait_past(t):
    """Sleep until the wall clock reads a second after Unix second t (t: a notAfter minus
    the days asked for, i.e. when the pair was made; about a second here), so that whole
    days left are exact: a pair made for D days then has D-1 full days and some left."""
    while int(time.time()) <= t:
        time.sleep(0.05)


class GenCertsWithCATest(unittest.TestCase):
    """gen-certs --ca-cert/--ca-key: renewal under the CA already in the caBundle."""

    @classmethod
    def setUpClass(cls):
        if not os.access(harness.binary(), os.X_OK):
            raise unittest.SkipTest("%s not built" % harness.binary())
        cls.dir = tempfile.mkdtemp(prefix="vpw-renew-")
        cls.first = os.path.join(cls.dir, "first")
        r = gen_certs(cls.first, "--days", "30")
        if r.returncode != 0:
            raise AssertionError("gen-certs: %s" % r.stderr)
        cls.ca_crt = os.path.join(cls.first, "ca.crt")
        cls.ca_key = os.path.join(cls.first, "ca.key")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def renew(self, name, *args):
        out = os.path.join(self.dir, name)
        return out, gen_certs(out, "--ca-cert", self.ca_crt, "--ca-key", self.ca_key, *args)

    def test_renewal_files(self):
        bundle = os.path.join(self.dir, "renewed-bundle")
        secret = os.path.join(self.dir, "renewed-secret.yaml")
        out, r = self.renew("renewed", "--days", "10", "--key-type", "rsa", "--ip", "127.0.0.1",
                            "--ca-bundle", bundle, "--secret-manifest", secret)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")   # 10 days fit in the CA's 30: no note
        self.assertEqual(sorted(os.listdir(out)), ["ca.crt", "tls.crt", "tls.key"])
        with open(self.ca_crt, "rb") as a, open(os.path.join(out, "ca.crt"), "rb") as b:
            ca_bytes = a.read()
            self.assertEqual(b.read(), ca_bytes)
        self.assertEqual(os.stat(os.path.join(out, "tls.key")).st_mode & 0o777, 0o600)
        self.assertEqual(os.stat(os.path.join(out, "ca.crt")).st_mode & 0o777, 0o644)
        # The CA's key stays where it was, untouched.
        self.assertEqual(os.stat(self.ca_key).st_mode & 0o777, 0o600)
        for name in SANS[:4]:
            rc, text = openssl_verify(self.ca_crt, os.path.join(out, "tls.crt"), name=name)
            self.assertEqual(rc, 0, text)
        rc, text = openssl_verify(self.ca_crt, os.path.join(out, "tls.crt"), ip="127.0.0.1")
        self.assertEqual(rc, 0, text)
        text = subprocess.run(["openssl", "x509", "-noout", "-text", "-in",
                               os.path.join(out, "tls.crt")], capture_output=True, text=True,
                              check=True).stdout
        self.assertIn("rsaEncryption", text)          # the leaf's own --key-type
        self.assertIn("ecdsa-with-SHA256", text)      # signed by the (ECDSA) CA
        # The renewed leaf is valid --days from now, inside the CA's life.
        self.assertLess(not_after(os.path.join(out, "tls.crt")), not_after(self.ca_crt))
        self.assertAlmostEqual(not_after(os.path.join(out, "tls.crt")) - time.time(),
                               10 * 86400, delta=120)
        # caBundle and Secret: the given CA's bytes.
        with open(bundle, "rb") as fh:
            self.assertEqual(base64.b64decode(fh.read().strip(), validate=True), ca_bytes)
        with open(secret) as fh:
            data = yaml.safe_load(fh)["data"]
        self.assertEqual(base64.b64decode(data["ca.crt"]), ca_bytes)
        with open(os.path.join(out, "tls.key"), "rb") as fh:
            self.assertEqual(base64.b64decode(data["tls.key"]), fh.read())
        self.assertEqual(os.stat(secret).st_mode & 0o777, 0o600)
        self.assertIn("ca.key", subprocess.run([harness.binary(), "gen-certs", "--help"],
                                               capture_output=True, text=True).stdout)

    def test_ca_made_by_openssl(self):
        """A CA made elsewhere (the openssl CLI, two days) signs too; ca.crt is its bytes;
        365 days are cut to the CA's notAfter with one note."""
        other = os.path.join(self.dir, "openssl-ca")
        harness.make_certs(other, service=SERVICE, namespace=NAMESPACE, use_binary=False)
        out = os.path.join(self.dir, "under-openssl-ca")
        r = gen_certs(out, "--ca-cert", os.path.join(other, "ca.crt"), "--ca-key",
                      os.path.join(other, "ca.key"))
        self.assertEqual(r.returncode, 0, r.stderr)
        ca_end = not_after(os.path.join(other, "ca.crt"))
        self.assertEqual(r.stderr, "volcano-plugin-webhook: gen-certs: note: the CA expires at "
                                   "%s, sooner than --days 365: tls.crt expires with it; roll "
                                   "the CA over before then (README, \"Rolling the CA over\")\n"
                         % rfc3339(ca_end))
        self.assertEqual(not_after(os.path.join(out, "tls.crt")), ca_end)
        with open(os.path.join(other, "ca.crt"), "rb") as a, \
                open(os.path.join(out, "ca.crt"), "rb") as b:
            self.assertEqual(b.read(), a.read())
        rc, text = openssl_verify(os.path.join(other, "ca.crt"), os.path.join(out, "tls.crt"),
                                  name="vpw.team-a.svc")
        self.assertEqual(rc, 0, text)

    def test_refusals(self):
        leaf_crt = os.path.join(self.first, "tls.crt")
        leaf_key = os.path.join(self.first, "tls.key")
        cases = [
            # (flags, exit code, the one stderr line)
            (["--ca-cert", self.ca_crt], 2,
             "--ca-cert needs --ca-key: give both or neither"),
            (["--ca-key", self.ca_key], 2,
             "--ca-key needs --ca-cert: give both or neither"),
            (["--ca-cert", "", "--ca-key", self.ca_key], 2, "--ca-cert needs a file name"),
            (["--ca-cert", self.ca_crt, "--ca-key", self.ca_key, "--ca-days", "3650"], 2,
             "--ca-days is the validity of a new CA: not with --ca-cert, whose CA keeps its own"),
            (["--ca-cert", leaf_crt, "--ca-key", leaf_key], 1,
             "--ca-cert %s: not a CA certificate (no basicConstraints CA:TRUE)" % leaf_crt),
            (["--ca-cert", self.ca_crt, "--ca-key", leaf_key], 1,
             "%s: private key does not match the certificate in %s" % (leaf_key, self.ca_crt)),
            (["--ca-cert", os.path.join(self.dir, "missing.crt"), "--ca-key", self.ca_key], 1,
             "cannot read %s: No such file or directory" % os.path.join(self.dir,
                                                                        "missing.crt")),
        ]
        for flags, code, line in cases:
            with self.subTest(flags=flags):
                out = os.path.join(self.dir, "refused")
                r = gen_certs(out, *flags)
                self.assertEqual(r.returncode, code, r.stderr)
                self.assertEqual(r.stderr, "volcano-plugin-webhook: gen-certs: %s\n" % line)
                self.assertFalse(os.path.exists(out), "a refusal leaves no --out behind")

    def test_overwrite_rules(self):
        out, r = self.renew("again")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "tls.crt"), "rb") as fh:
            before = fh.read()
        out, r = self.renew("again")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "volcano-plugin-webhook: gen-certs: %s exists (use --force "
                                   "to replace it)\n" % os.path.join(out, "ca.crt"))
        with open(os.path.join(out, "tls.crt"), "rb") as fh:
            self.assertEqual(fh.read(), before)
        out, r = self.renew("again", "--force")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "tls.crt"), "rb") as fh:
            self.assertNotEqual(fh.read(), before)
        self.assertEqual(os.stat(os.path.join(out, "tls.key")).st_mode & 0o777, 0o600)
        self.assertFalse(os.path.exists(os.path.join(out, "ca.key")))
        # In place, next to the CA's own key: ca.key is neither in the way nor touched.
        with open(self.ca_key, "rb") as fh:
            key_before = fh.read()
        r = gen_certs(self.first, "--ca-cert", self.ca_crt, "--ca-key", self.ca_key, "--force")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.ca_key, "rb") as fh:
            self.assertEqual(fh.read(), key_before)
        rc, text = openssl_verify(self.ca_crt, os.path.join(self.first, "tls.crt"),
                                  name="vpw.team-a.svc")
        self.assertEqual(rc, 0, text)


def snapshot(d):
    """Every file under d (names, including hidden ones) with its bytes; a FIFO or other
    non-regular file as its type only (reading one would block)."""
    out = {}
    for base, dirs, files in os.walk(d):
        for f in files + dirs:
            path = os.path.join(base, f)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                with open(path, "rb") as fh:
                    out[os.path.relpath(path, d)] = fh.read()
            else:
                out[os.path.relpath(path, d)] = stat.S_IFMT(mode)
    return out


PREFIX = "volcano-plugin-webhook: gen-certs: "


class GenCertsAllOrNothingTest(unittest.TestCase):
    """A failing gen-certs changes nothing (gen-certs review): every output is written to a
    temporary first and renamed only when all were; refusals of unusable inputs."""

    def setUp(self):
        if not os.access(harness.binary(), os.X_OK):
            self.skipTest("%s not built" % harness.binary())
        self.dir = tempfile.mkdtemp(prefix="vpw-atomic-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.out = os.path.join(self.dir, "out")
        r = gen_certs(self.out)
        self.assertEqual(r.returncode, 0, r.stderr)

    def assert_refused(self, r, line, before):
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stderr, PREFIX + line + "\n")
        self.assertEqual(snapshot(self.dir), before)   # byte for byte, no temporaries

    def test_late_failure_replaces_nothing(self):
        ca_crt, ca_key = (os.path.join(self.out, f) for f in ("ca.crt", "ca.key"))
        before = snapshot(self.dir)
        # The Secret manifest cannot be written: tls.crt/tls.key used to be replaced already.
        r = gen_certs(self.out, "--ca-cert", ca_crt, "--ca-key", ca_key, "--force",
                      "--secret-manifest", "/nonexistent/s.yaml")
        self.assert_refused(r, "cannot write /nonexistent/s.yaml: No such file or directory",
                            before)
        # A new CA whose last file cannot be placed: ca.crt and ca.key used to be new.
        r = gen_certs(self.out, "--force", "--ca-bundle", "/nonexistent/bundle")
        self.assert_refused(r, "cannot write /nonexistent/bundle: No such file or directory",
                            before)
        # tls.crt is a directory: rename(2) cannot replace it; nothing else moves either.
        os.unlink(os.path.join(self.out, "tls.crt"))
        os.mkdir(os.path.join(self.out, "tls.crt"))
        with open(os.path.join(self.out, "tls.crt", "x"), "w") as fh:
            fh.write("x")
        before = snapshot(self.dir)
        r = gen_certs(self.out, "--force", "--secret-manifest",
                      os.path.join(self.dir, "s.yaml"))
        self.assert_refused(r, "cannot write %s: Is a directory"
                            % os.path.join(self.out, "tls.crt"), before)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "s.yaml")))
        # A new --out that cannot be completed is not left behind (nor its new parents).
        r = gen_certs(os.path.join(self.dir, "new", "deeper"), "--secret-manifest",
                      "/nonexistent/s.yaml")
        self.assert_refused(r, "cannot write /nonexistent/s.yaml: No such file or directory",
                            before)

    def test_stale_ca_key_refused(self):
        other = os.path.join(self.dir, "other")
        r = gen_certs(other)
        self.assertEqual(r.returncode, 0, r.stderr)
        before = snapshot(self.dir)
        # out/ca.key is the first CA's: beside other's ca.crt it would be a mismatch.
        r = gen_certs(self.out, "--ca-cert", os.path.join(other, "ca.crt"), "--ca-key",
                      os.path.join(other, "ca.key"), "--force")
        self.assert_refused(r, "%s is the key of another CA; it would sit beside --ca-cert's "
                            "ca.crt: move it away or use another --out"
                            % os.path.join(self.out, "ca.key"), before)
        # Renewal in place, next to the CA's own key: fine, ca.key untouched.
        r = gen_certs(self.out, "--ca-cert", os.path.join(self.out, "ca.crt"), "--ca-key",
                      os.path.join(self.out, "ca.key"), "--force")
        self.assertEqual(r.returncode, 0, r.stderr)
        after = snapshot(self.dir)
        for f in ("ca.crt", "ca.key"):
            self.assertEqual(after[os.path.join("out", f)], before[os.path.join("out", f)])
        self.assertNotEqual(after["out/tls.crt"], before["out/tls.crt"])

    def test_fifo_inputs_refused(self):
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        before = snapshot(self.dir)
        ca_crt, ca_key = (os.path.join(self.out, f) for f in ("ca.crt", "ca.key"))
        new = os.path.join(self.dir, "new")
        for flags, name in ((["--ca-cert", ca_crt, "--ca-key", fifo], fifo),
                            (["--ca-cert", fifo, "--ca-key", ca_key], fifo)):
            with self.subTest(flags=flags):
                r = gen_certs(new, *flags)   # used to block forever
                self.assert_refused(r, "%s: a FIFO, not a regular file" % name, before)
        # A symlink to a regular file (a kubelet Secret volume) is followed.
        link = os.path.join(self.dir, "key-link")
        os.symlink(ca_key, link)
        r = gen_certs(new, "--ca-cert", ca_crt, "--ca-key", link)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_unverifiable_ca_refused(self):
        """A CA whose nameConstraints exclude the Service names signs nothing; an
        intermediate CA given alone (partial chain) signs a leaf that verifies."""
        nc = os.path.join(self.dir, "nc")
        os.mkdir(nc)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=nc", "-days", "30",
                        "-addext", "basicConstraints=critical,CA:TRUE",
                        "-addext", "keyUsage=critical,keyCertSign",
                        "-addext", "nameConstraints=critical,permitted;DNS:example.com",
                        "-keyout", os.path.join(nc, "ca.key"), "-out",
                        os.path.join(nc, "ca.crt")], check=True, capture_output=True,
                       timeout=60)
        before = snapshot(self.dir)
        ca_crt = os.path.join(nc, "ca.crt")
        r = gen_certs(os.path.join(self.dir, "new"), "--ca-cert", ca_crt, "--ca-key",
                      os.path.join(nc, "ca.key"))
        self.assert_refused(r, "--ca-cert %s: a serving certificate signed by it does not "
                            "verify for %s: permitted subtree violation" % (ca_crt, SERVICE),
                            before)
        # An intermediate under a root (gen-certs' own CA has pathlen:0), given alone.
        inter = os.path.join(self.dir, "inter")
        os.mkdir(inter)
        root_crt, root_key = os.path.join(inter, "root.crt"), os.path.join(inter, "root.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=root", "-days", "30",
                        "-addext", "basicConstraints=critical,CA:TRUE",
                        "-addext", "keyUsage=critical,keyCertSign",
                        "-keyout", root_key, "-out", root_crt], check=True,
                       capture_output=True, timeout=60)
        ext = os.path.join(inter, "ext.cnf")
        with open(ext, "w") as fh:
            fh.write("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n"
                     "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
        subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=inter", "-keyout",
                        os.path.join(inter, "ca.key"), "-out", os.path.join(inter, "ca.csr")],
                       check=True, capture_output=True, timeout=60)
        subprocess.run(["openssl", "x509", "-req", "-in", os.path.join(inter, "ca.csr"),
                        "-CA", root_crt, "-CAkey", root_key, "-CAcreateserial", "-days", "20",
                        "-extfile", ext, "-out", os.path.join(inter, "ca.crt")],
                       check=True, capture_output=True, timeout=60)
        leaf_out = os.path.join(self.dir, "under-inter")
        r = gen_certs(leaf_out, "--ca-cert", os.path.join(inter, "ca.crt"), "--ca-key",
                      os.path.join(inter, "ca.key"), "--days", "10")
        self.assertEqual(r.returncode, 0, r.stderr)
        chain = os.path.join(self.dir, "chain.crt")
        with open(chain, "wb") as fh:
            for f in (os.path.join(inter, "ca.crt"), root_crt):
                with open(f, "rb") as src:
                    fh.write(src.read())
        rc, text = openssl_verify(chain, os.path.join(leaf_out, "tls.crt"),
                                  name="vpw.team-a.svc")
        self.assertEqual(rc, 0, text)


EXPIRY_METRIC = "webhook_tls_certificate_expiry_timestamp_seconds"


def expiry_gauge(body):
    """The gauge's value in a /metrics body, or None when absent."""
    m = re.search(r"^%s (\S+)$" % EXPIRY_METRIC, body, re.M)
    return None if m is None else float(m.group(1))


def log_events(log, msg):
    """The JSON log lines whose msg is msg."""
    out = []
    for line in log.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("msg") == msg:
            out.append(obj)
    return out


class CertExpiryTest(unittest.TestCase):
    """The served certificate's notAfter in /metrics, and the warning before it comes."""

    def setUp(self):
        if not os.access(harness.binary(), os.X_OK):
            self.skipTest("%s not built" % harness.binary())
        self.env = harness.Env(start_webhook=False)
        self.addCleanup(self.env.close)
        self.env.start()

    def scrape(self, w):
        conn = w.connection()
        try:
            conn.request("GET", "/metrics")
            resp = conn.getresponse()
            body = resp.read().decode()
            self.assertEqual(resp.status, 200, body)
            return expiry_gauge(body)
        finally:
            conn.close()

    def wait_for(self, w, pred, what):
        deadline = time.monotonic() + (60 if os.environ.get("SANITIZER") else 20)
        while not pred():
            self.assertLess(time.monotonic(), deadline, "no %s in:\n%s" % (
                what, w.process.log()))
            time.sleep(0.1)

    def test_gauge_follows_the_served_pair(self):
        crt = self.env.certs["tls.crt"]
        w = self.env.start_webhook_now(extra_args=["--leader-elect=false"])
        self.assertEqual(self.scrape(w), not_after(crt))   # 365 days: no warning
        self.assertEqual(log_events(w.process.log(), "tls: serving certificate expires soon"),
                         [])
        # Renewed under the same CA (clients keep trusting it), 20 days, swapped in.
        new = os.path.join(self.env.dir, "renewed")
        r = gen_env_certs(new, "--ca-cert", self.env.certs["ca.crt"], "--ca-key",
                          self.env.certs["ca.key"], "--days", "20")
        self.assertEqual(r.returncode, 0, r.stderr)
        want = not_after(os.path.join(new, "tls.crt"))
        self.assertNotEqual(want, not_after(crt))
        wait_past(want - 20 * 86400)
        shutil.copyfile(os.path.join(new, "tls.key"), self.env.certs["tls.key"])
        shutil.copyfile(os.path.join(new, "tls.crt"), crt)
        self.wait_for(w, lambda: "tls: pair reloaded" in w.process.log(), "reload")
        self.wait_for(w, lambda: self.scrape(w) == want, "gauge %d" % want)
        warned = log_events(w.process.log(), "tls: serving certificate expires soon")
        self.assertEqual(len(warned), 1, w.process.log())
        self.assertEqual((warned[0]["level"], warned[0]["not_after"], warned[0]["days_left"]),
                         ("warn", rfc3339(want), "19"))

    def test_warns_ten_days_ahead(self):
        certs = self.env.certs
        out = os.path.dirname(certs["tls.crt"])
        r = gen_env_certs(out, "--days", "10", "--force")   # a new CA: Webhook trusts ca.crt
        self.assertEqual(r.returncode, 0, r.stderr)
        want = not_after(certs["tls.crt"])
        wait_past(want - 10 * 86400)
        w = self.env.start_webhook_now(extra_args=["--leader-elect=false"])
        warned = log_events(w.process.log(), "tls: serving certificate expires soon")
        self.assertEqual(len(warned), 1, w.process.log())
        self.assertEqual(warned[0]["level"], "warn")
        self.assertEqual(warned[0]["not_after"], rfc3339(want))
        self.assertEqual(warned[0]["days_left"], "9")
        self.assertEqual(self.scrape(w), want)
        self.assertEqual(log_events(w.process.log(), "tls: serving certificate expired"), [])

    def test_absent_over_plain_http(self):
        port_file = os.path.join(self.env.dir, "plain.port")
        proc = harness.Process("plain", [
            harness.binary(), "serve", "--insecure-http", "--bind-address", "127.0.0.1",
            "--port", "0", "--port-file", port_file, "--kubeconfig", self.env.kubeconfig,
            "--leader-elect=false"], self.env.dir).start()
        self.addCleanup(proc.stop)
        port = proc.wait_port_file(port_file)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("GET", "/metrics")
            resp = conn.getresponse()
            body = resp.read().decode()
        finally:
            conn.close()
        self.assertEqual(resp.status, 200, body)
        self.assertIn("webhook_tls_reloads_total", body)
        self.assertIsNone(expiry_gauge(body))
        self.assertNotIn(EXPIRY_METRIC, body)
        self.assertEqual(proc.stop(), 0, proc.log())
        self.assertIsNone(proc.sanitizer_report())


# ---------------------------------------------------------------- serve --self-signed

TWO_WEBHOOKS = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "MutatingWebhookConfiguration",
    "metadata": {"name": MWC},
    "webhooks": [
        {"name": "pods.vpw.example.org", "admissionReviewVersions": ["v1"],
         "sideEffects": "None",
         "clientConfig": {"caBundle": base64.b64encode(b"placeholder").decode(),
                          "service": {"name": SERVICE, "namespace": NAMESPACE,
                                      "path": "/pods/mutate"}}},
        {"name": "other.vpw.example.org", "admissionReviewVersions": ["v1"],
         "sideEffects": "None",
         "clientConfig": {"service": {"name": SERVICE, "namespace": NAMESPACE,
                                      "path": "/pods/mutate"}}},
    ],
}


def get_status(port, path, ctx, name):
    """GET path over TLS; returns (status, body text) or (None, error)."""
    conn = harness._PinnedHTTPSConnection("127.0.0.1", port, name, ctx, 5)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as e:
        return None, repr(e)
    finally:
        conn.close()


class SelfSignedTest(unittest.TestCase):
    def setUp(self):
        if not os.access(harness.binary(), os.X_OK):
            self.skipTest("%s not built" % harness.binary())
        self.dir = tempfile.mkdtemp(prefix="vpw-selfsigned-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.api = harness.ApiServer(self.dir).start()
        self.addCleanup(self.api.stop)
        self.kubeconfig = harness.write_kubeconfig(os.path.join(self.dir, "kubeconfig"),
                                                   self.api.url, self.api.ca_file,
                                                   self.api.token)
        self.proc = None

    def start(self, *extra, wait=True):
        self.port_file = os.path.join(self.dir, "webhook.port")
        argv = [harness.binary(), "serve", "--self-signed", "--bind-address", "127.0.0.1",
                "--port", "0", "--port-file", self.port_file, "--kubeconfig", self.kubeconfig,
                "--leader-elect=false", "--leader-elect-resource-namespace", NAMESPACE,
                "--webhook-config-name", MWC] + list(extra)
        self.proc = harness.Process("webhook", argv, self.dir).start()
        self.addCleanup(self.stop)
        return self.proc.wait_port_file(self.port_file) if wait else None

    def stop(self):
        if self.proc is None:
            return
        rc = self.proc.stop()
        proc = self.proc
        log = proc.log()
        self.proc = None
        if proc.sanitizer_report():
            raise AssertionError(proc.sanitizer_failure())
        if rc != 0:  # SIGTERM: the keeper stops and everything is freed, exit 0
            raise AssertionError("webhook exited %s:\n%s" % (rc, log))

    def bundles(self):
        status, cfg = self.api.get(MWC_PATH)
        self.assertEqual(status, 200, cfg)
        return [w["clientConfig"].get("caBundle") for w in cfg["webhooks"]], cfg

    def wait(self, pred, what, timeout=None):
        deadline = time.monotonic() + (timeout or harness.startup_timeout() * 2)
        while time.monotonic() < deadline:
            v = pred()
            if v:
                return v
            if self.proc is not None and not self.proc.alive():
                raise AssertionError("webhook exited:\n" + self.proc.log())
            time.sleep(0.05)
        raise AssertionError("timed out waiting for %s:\n%s" % (what, self.proc.log()))

    def test_cabundle_patched_ready_after(self):
        self.api.create_objects([TWO_WEBHOOKS])
        # Every PATCH fails until the faults are cleared: no certificate is issued under a CA
        # the API server does not hold, so nothing is served yet.
        self.api.add_faults({"method": "PATCH", "path_regex": "mutatingwebhookconfigurations/",
                             "count": -1, "status": 409, "reason": "Conflict",
                             "message": "the object has been modified"})
        self.start("--tls-san", "127.0.0.1", "--tls-san", "vpw.example.org", wait=False)
        insecure = harness.insecure_context()
        self.wait(lambda: sum(1 for r in self.api.requests()
                              if r["method"] == "PATCH" and r["path"] == MWC_PATH) >= 2,
                  "two failed PATCHes")
        self.assertFalse(os.path.exists(self.port_file))
        before, _ = self.bundles()
        self.assertEqual(before, [TWO_WEBHOOKS["webhooks"][0]["clientConfig"]["caBundle"], None])
        self.api.clear_faults()

        # Serving and /readyz 200 come after the patch: the caBundle is ours by then.
        port = self.proc.wait_port_file(self.port_file)
        self.wait(lambda: get_status(port, "/readyz", insecure, "x")[0] == 200, "/readyz 200")
        # The Secret is in memory: none read or written through the API.
        self.assertEqual([r for r in self.api.requests() if "/secrets" in r["path"]], [])
        after, cfg = self.bundles()
        self.assertEqual(len(after), 2)
        self.assertIsNotNone(after[0])
        self.assertEqual(after[0], after[1])
        self.assertNotEqual(after[0], before[0])
        # Nothing but the caBundles changed.
        for got, orig in zip(cfg["webhooks"], TWO_WEBHOOKS["webhooks"]):
            want = dict(orig, clientConfig=dict(orig["clientConfig"], caBundle=after[0]))
            self.assertEqual(got, want)
        ca_pem = base64.b64decode(after[0], validate=True)
        self.assertTrue(ca_pem.startswith(b"-----BEGIN CERTIFICATE-----\n"), ca_pem[:40])
        ca_file = os.path.join(self.dir, "patched-ca.crt")
        with open(ca_file, "wb") as fh:
            fh.write(ca_pem)

        # That CA signs what the webhook serves, for every name, strictly; nothing else.
        names = ["volcano-plugin-webhook", "volcano-plugin-webhook.team-a",
                 "volcano-plugin-webhook.team-a.svc",
                 "volcano-plugin-webhook.team-a.svc.cluster.local", "vpw.example.org",
                 "127.0.0.1"]
        for name in names:
            with self.subTest(name=name):
                der = handshake(port, ca_file, name)
        for name in ["volcano-plugin-webhook.default.svc", "vpw.team-a.svc"]:
            with self.subTest(wrong=name):
                with self.assertRaises(ssl.SSLCertVerificationError):
                    handshake(port, ca_file, name)
        leaf_file = os.path.join(self.dir, "served.crt")
        with open(leaf_file, "w") as fh:
            fh.write(ssl.DER_cert_to_PEM_cert(der))
        rc, out = openssl_verify(ca_file, leaf_file, name="volcano-plugin-webhook.team-a.svc")
        self.assertEqual(rc, 0, out)
        status, body = get_status(port, "/readyz", strict_context(ca_file),
                                  "volcano-plugin-webhook.team-a.svc")
        self.assertEqual((status, body), (200, "ok"))

        # Each attempt's outcome is logged; the last one is the success.
        log = self.proc.log()
        self.assertIn('"msg":"certkeeper: caBundle patch failed"', log)
        self.assertIn('"code":"conflict"', log)
        self.assertIn('"msg":"certkeeper: caBundle set","mutatingwebhookconfiguration":"%s",'
                      '"webhooks":"2"' % MWC, log)
        self.assertNotIn("PRIVATE KEY", log)
        self.stop()

    def test_service_name_and_late_configuration(self):
        # No configuration yet (404): served, not ready; created later, patched, then ready.
        port = self.start("--service-name", "custom-svc")
        insecure = harness.insecure_context()
        self.wait(lambda: sum(1 for r in self.api.requests()
                              if r["method"] == "GET" and r["path"] == MWC_PATH) >= 2,
                  "two GETs of the configuration")
        status, body = get_status(port, "/readyz", insecure, "x")
        self.assertEqual(status, 503, body)
        self.assertIn("mutatingwebhookconfiguration %s not found" % MWC, body)
        self.api.create_objects([TWO_WEBHOOKS])
        self.wait(lambda: get_status(port, "/readyz", insecure, "x")[0] == 200, "/readyz 200")
        bundles, _ = self.bundles()
        self.assertEqual(bundles[0], bundles[1])
        ca_file = os.path.join(self.dir, "ca.crt")
        with open(ca_file, "wb") as fh:
            fh.write(base64.b64decode(bundles[0]))
        der = handshake(port, ca_file, "custom-svc.team-a.svc")
        with self.assertRaises(ssl.SSLCertVerificationError):
            handshake(port, ca_file, "volcano-plugin-webhook.team-a.svc")
        # The certificate made in memory is in /metrics too (365 days: no warning).
        served = os.path.join(self.dir, "served.der")
        with open(served, "wb") as fh:
            fh.write(der)
        status, body = get_status(port, "/metrics", insecure, "x")
        self.assertEqual(status, 200, body)
        self.assertEqual(expiry_gauge(body), not_after(served, der=True))
        self.assertNotIn("tls: serving certificate expires soon", self.proc.log())
        self.stop()

    def test_conflicting_flags_exit_2(self):
        certs = harness.make_certs(os.path.join(self.dir, "certs"))
        base = [harness.binary(), "serve", "--kubeconfig", self.kubeconfig, "--port", "0"]
        cases = [
            (["--self-signed", "--tls-cert-file", certs["tls.crt"]], "--tls-cert-file"),
            (["--self-signed", "--tls-private-key-file", certs["tls.key"]],
             "--tls-private-key-file"),
            (["--tls-cert-file", certs["tls.crt"], "--tls-private-key-file", certs["tls.key"],
              "--self-signed"], "--tls-cert-file"),
            (["--self-signed", "--insecure-http"], "--insecure-http"),
            (["--insecure-http", "--tls-san", "x.example.org"], "need --self-signed"),
            (["--insecure-http", "--webhook-config-name", "x"], "need --self-signed"),
            (["--self-signed", "--service-name", "Bad_Name"], "--service-name"),
            (["--self-signed", "--tls-san", "a,b"], "--tls-san"),
        ]
        for args, word in cases:
            with self.subTest(args=args):
                r = subprocess.run(base + args, capture_output=True, text=True, timeout=30)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(word, r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)


class ApiServerClusterScopedTest(unittest.TestCase):
    """tests/apiserver.py keeps cluster-scoped objects (webhook configurations) out of
    namespaces, as kube-apiserver does."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="vpw-api-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.api = harness.ApiServer(self.dir).start()
        self.addCleanup(self.api.stop)

    def test_cluster_scoped_paths(self):
        stored = self.api.create_objects([TWO_WEBHOOKS])[0]
        self.assertNotIn("namespace", stored["metadata"])
        status, got = self.api.get(MWC_PATH)
        self.assertEqual(status, 200, got)
        self.assertEqual(got["kind"], "MutatingWebhookConfiguration")
        self.assertEqual(got["webhooks"], TWO_WEBHOOKS["webhooks"])
        status, got = self.api.get("/apis/admissionregistration.k8s.io/v1/namespaces/default/"
                                   "mutatingwebhookconfigurations/" + MWC)
        self.assertEqual(status, 404)
        status, lst = self.api.get("/apis/admissionregistration.k8s.io/v1/"
                                   "mutatingwebhookconfigurations")
        self.assertEqual((status, [o["metadata"]["name"] for o in lst["items"]]), (200, [MWC]))
        self.assertEqual(lst["kind"], "MutatingWebhookConfigurationList")


if __name__ == "__main__":
    unittest.main()


def readme_block(heading):
    """The first ```sh block after the paragraph starting with **heading** in README.md."""
    with open(os.path.join(harness.ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index("**%s**" % heading)
    begin = text.index("```sh\n", start) + len("```sh\n")
    return text[begin:text.index("```", begin)]


# A kubectl that records its arguments (one line each) and standard input in $KUBECTL_LOG.
FAKE_KUBECTL = """#!/bin/sh
printf '%s\\n' "$*" >> "$KUBECTL_LOG"
case "$*" in *"-f -"*) cat >> "$KUBECTL_LOG" ;; esac
"""


class CADaysTest(unittest.TestCase):
    """gen-certs gives a new CA --ca-days (default 3650) and its serving pair --days (365),
    and the README's renewal steps, run as written, give the full --days again."""

    @classmethod
    def setUpClass(cls):
        if not os.access(harness.binary(), os.X_OK):
            raise unittest.SkipTest("%s not built" % harness.binary())
        cls.dir = tempfile.mkdtemp(prefix="vpw-cadays-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_defaults(self):
        out = os.path.join(self.dir, "defaults")
        r = gen_certs(out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertEqual(lifetime(os.path.join(out, "ca.crt")), 3650 * 86400 + 3600)
        self.assertEqual(lifetime(os.path.join(out, "tls.crt")), 365 * 86400 + 3600)
        self.assertIn("CA valid 3650 days, serving certificate 365 days", r.stdout)

    def test_ca_days(self):
        out = os.path.join(self.dir, "ca-days")
        r = gen_certs(out, "--ca-days", "20", "--days", "7")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(lifetime(os.path.join(out, "ca.crt")), 20 * 86400 + 3600)
        self.assertEqual(lifetime(os.path.join(out, "tls.crt")), 7 * 86400 + 3600)
        rc, text = openssl_verify(os.path.join(out, "ca.crt"), os.path.join(out, "tls.crt"),
                                  name="vpw.team-a.svc")
        self.assertEqual(rc, 0, text)

    def test_ca_days_refusals(self):
        cases = [
            (["--ca-days", "0"], 'invalid --ca-days "0": want an integer 1..36500'),
            (["--ca-days", "36501"], 'invalid --ca-days "36501": want an integer 1..36500'),
            (["--ca-days", "x"], 'invalid --ca-days "x": want an integer 1..36500'),
            (["--ca-days", "30", "--days", "31"],
             "--days 31 is longer than the CA's --ca-days 30: the serving certificate would "
             "outlive its CA"),
            (["--days", "3651"],
             "--days 3651 is longer than the CA's --ca-days 3650: the serving certificate "
             "would outlive its CA"),
        ]
        for flags, line in cases:
            with self.subTest(flags=flags):
                out = os.path.join(self.dir, "refused")
                r = gen_certs(out, *flags)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stderr, "volcano-plugin-webhook: gen-certs: %s\n" % line)
                self.assertFalse(os.path.exists(out))

    def test_renewal_cut_by_a_short_ca(self):
        """A CA expiring within --days: the renewal is cut to it, and stderr says when
        the CA expires and that it must be rolled over."""
        first = os.path.join(self.dir, "short-ca")
        r = gen_certs(first, "--ca-days", "2", "--days", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = os.path.join(self.dir, "short-ca-renewed")
        r = gen_certs(out, "--ca-cert", os.path.join(first, "ca.crt"), "--ca-key",
                      os.path.join(first, "ca.key"), "--days", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        ca_end = not_after(os.path.join(first, "ca.crt"))
        self.assertEqual(not_after(os.path.join(out, "tls.crt")), ca_end)
        self.assertEqual(r.stderr, "volcano-plugin-webhook: gen-certs: note: the CA expires at "
                                   "%s, sooner than --days 3: tls.crt expires with it; roll "
                                   "the CA over before then (README, \"Rolling the CA over\")\n"
                         % rfc3339(ca_end))
        with open(os.path.join(harness.ROOT, "README.md"), encoding="utf-8") as f:
            self.assertIn("**Rolling the CA over.**", f.read())

    def test_readme_renewal_as_written(self):
        """Install step 1 then "Renewing the serving certificate" from README.md, run by sh
        from the repository root with a recording kubectl: the renewed certificate lasts
        its full --days from its own notBefore, and so outlasts the old one."""
        script = readme_block("Renewing the serving certificate.")
        self.assertIn("--ca-cert \"$CERTS/ca.crt\" --ca-key \"$CERTS/ca.key\"", script)
        tmp = tempfile.mkdtemp(prefix="readme-", dir=self.dir)
        certs = os.path.join(tmp, "certs")
        bindir = os.path.join(tmp, "bin")
        os.mkdir(bindir)
        with open(os.path.join(bindir, "kubectl"), "w") as f:
            f.write(FAKE_KUBECTL)
        os.chmod(os.path.join(bindir, "kubectl"), 0o755)
        log = os.path.join(tmp, "kubectl.log")
        env = dict(os.environ, CERTS=certs, KUBECTL_LOG=log,
                   PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
        r = subprocess.run([harness.binary(), "gen-certs", "--service", "volcano-plugin-webhook",
                            "--namespace", "volcano-plugin-webhook", "--out", certs],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        old = not_after(os.path.join(certs, "tls.crt"))
        wait_past(old - 365 * 86400)   # the renewal's notAfter then lies a second later or more
        r = subprocess.run(["sh", "-ec", script], cwd=harness.ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")   # nothing cut: the CA lives 3650 days
        renewed = os.path.join(certs, "renewed", "tls.crt")
        self.assertEqual(lifetime(renewed), 365 * 86400 + 3600)
        self.assertGreater(not_after(renewed), old)
        self.assertLess(not_after(renewed), not_after(os.path.join(certs, "ca.crt")))
        rc, text = openssl_verify(os.path.join(certs, "ca.crt"), renewed,
                                  name="volcano-plugin-webhook.volcano-plugin-webhook.svc")
        self.assertEqual(rc, 0, text)
        # The two ends of the pipe run at once: their lines come in either order.
        with open(log) as f:
            lines = sorted(f.read().splitlines())
        self.assertEqual(lines, sorted(["-n volcano-plugin-webhook create secret tls "
                                        "volcano-plugin-webhook-tls --cert=%s --key=%s "
                                        "--dry-run=client -o yaml"
                                        % (renewed, os.path.join(certs, "renewed", "tls.key")),
                                        "apply -f -"]))

    def test_readme_ca_rollover_as_written(self):
        """"Rolling the CA over" from README.md, run by sh in a copy of manifests/ with a
        recording kubectl: the caBundle holds the old CA then the new one while the new
        pair goes in the Secret, then the new CA alone; the new pair is the new CA's."""
        script = readme_block("Rolling the CA over.")
        tmp = tempfile.mkdtemp(prefix="rollover-", dir=self.dir)
        shutil.copytree(os.path.join(harness.ROOT, "manifests"), os.path.join(tmp, "manifests"))
        os.symlink(os.path.join(harness.ROOT, "build"), os.path.join(tmp, "build"))
        certs = os.path.join(tmp, "certs")
        bindir = os.path.join(tmp, "bin")
        os.mkdir(bindir)
        # This kubectl also records the caBundle line at each `apply -k`.
        with open(os.path.join(bindir, "kubectl"), "w") as f:
            f.write(FAKE_KUBECTL + 'case "$*" in "apply -k manifests/overlays/manual/") '
                    'grep "^  value:" manifests/overlays/manual/ca-bundle.yaml >> "$KUBECTL_LOG" '
                    ';; esac\n')
        os.chmod(os.path.join(bindir, "kubectl"), 0o755)
        log = os.path.join(tmp, "kubectl.log")
        env = dict(os.environ, CERTS=certs, KUBECTL_LOG=log,
                   PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
        r = gen_certs(certs, service="volcano-plugin-webhook", namespace="volcano-plugin-webhook")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run(["sh", "-ec", script], cwd=tmp, env=env, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(certs, "ca.crt"), "rb") as f:
            old = f.read()
        with open(os.path.join(certs, "next", "ca.crt"), "rb") as f:
            new = f.read()
        self.assertNotEqual(old, new)
        rc, text = openssl_verify(os.path.join(certs, "next", "ca.crt"),
                                  os.path.join(certs, "next", "tls.crt"),
                                  name="volcano-plugin-webhook.volcano-plugin-webhook.svc")
        self.assertEqual(rc, 0, text)
        with open(log) as f:
            lines = f.read().splitlines()
        bundles = [base64.b64decode(ln.split("value: ", 1)[1]) for ln in lines
                   if ln.startswith("  value: ")]
        self.assertEqual(bundles, [old + new, new])
        self.assertEqual([ln for ln in lines if ln.startswith("apply -k")],
                         ["apply -k manifests/overlays/manual/"] * 2)
        self.assertIn("-n volcano-plugin-webhook create secret tls volcano-plugin-webhook-tls "
                      "--cert=%s --key=%s --dry-run=client -o yaml"
                      % (os.path.join(certs, "next", "tls.crt"),
                         os.path.join(certs, "next", "tls.key")), lines)
        # The new secret comes after both CAs are in the caBundle, before the old CA leaves.
        order = [ln for ln in lines if ln.startswith(("  value: ", "-n volcano"))]
        self.assertTrue(order[0].startswith("  value: ") and order[1].startswith("-n volcano")
                        and order[2].startswith("  value: "), order)
