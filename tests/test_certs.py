"""test_certs.py - gen-certs and `serve --self-signed`, checked by strict TLS clients.

Every certificate must verify under a client that trusts only our CA and matches the
host name against the subjectAltName alone (the CN ignored), as Go's crypto/tls in
kube-apiserver does: Python's ssl with check_hostname, hostname_checks_common_name off
and VERIFY_X509_STRICT over a real handshake, and `openssl verify -x509_strict -purpose
sslserver -verify_hostname NAME` with the CA as the only trust anchor.

`serve --self-signed` runs against tests/apiserver.py holding a MutatingWebhookConfiguration
with two webhooks: the caBundle of both must become the CA that signs the certificate the
webhook actually serves, /readyz must stay 503 until then, and failed PATCHes are retried.
"""

import base64
import http.client
import os
import shutil
import socket
import ssl
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


def gen_certs(out, *args):
    return subprocess.run([harness.binary(), "gen-certs", "--service", SERVICE,
                           "--namespace", NAMESPACE, "--out", out] + list(args),
                          capture_output=True, text=True, timeout=60)


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


def unverified_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


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

    def start(self, *extra):
        port_file = os.path.join(self.dir, "webhook.port")
        argv = [harness.binary(), "serve", "--self-signed", "--bind-address", "127.0.0.1",
                "--port", "0", "--port-file", port_file, "--kubeconfig", self.kubeconfig,
                "--leader-elect=false", "--leader-elect-resource-namespace", NAMESPACE,
                "--webhook-config-name", MWC] + list(extra)
        self.proc = harness.Process("webhook", argv, self.dir).start()
        self.addCleanup(self.stop)
        return self.proc.wait_port_file(port_file)

    def stop(self):
        if self.proc is None:
            return
        rc = self.proc.stop()
        report = self.proc.sanitizer_report()
        log = self.proc.log()
        self.proc = None
        if report:
            raise AssertionError("sanitizer report: %s" % report)
        if rc != 0:  # SIGTERM: the patch thread stops and everything is freed, exit 0
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
        # Every PATCH fails until the faults are cleared: /readyz must say not ready.
        self.api.add_faults({"method": "PATCH", "path_regex": "mutatingwebhookconfigurations/",
                             "count": -1, "status": 409, "reason": "Conflict",
                             "message": "the object has been modified"})
        port = self.start("--tls-san", "127.0.0.1", "--tls-san", "vpw.example.org")
        insecure = unverified_context()
        self.wait(lambda: sum(1 for r in self.api.requests()
                              if r["method"] == "PATCH" and r["path"] == MWC_PATH) >= 2,
                  "two failed PATCHes")
        status, body = get_status(port, "/readyz", insecure, "x")
        self.assertEqual(status, 503, body)
        self.assertIn("caBundle not patched yet", body)
        before, _ = self.bundles()
        self.assertEqual(before, [TWO_WEBHOOKS["webhooks"][0]["clientConfig"]["caBundle"], None])
        self.api.clear_faults()

        # The first 200 of /readyz comes after the patch: the caBundle is ours by then.
        self.wait(lambda: get_status(port, "/readyz", insecure, "x")[0] == 200, "/readyz 200")
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
        self.assertIn('"msg":"caBundle patch failed"', log)
        self.assertIn('"code":"conflict"', log)
        self.assertIn('"msg":"caBundle patched"', log)
        self.assertIn('"webhooks":"2"', log)
        self.assertNotIn("PRIVATE KEY", log)
        self.stop()

    def test_service_name_and_late_configuration(self):
        # No configuration yet (404): not ready; created later, patched, then ready.
        port = self.start("--service-name", "custom-svc")
        insecure = unverified_context()
        self.wait(lambda: sum(1 for r in self.api.requests()
                              if r["method"] == "GET" and r["path"] == MWC_PATH) >= 2,
                  "two GETs of the configuration")
        status, body = get_status(port, "/readyz", insecure, "x")
        self.assertEqual(status, 503, body)
        self.api.create_objects([TWO_WEBHOOKS])
        self.wait(lambda: get_status(port, "/readyz", insecure, "x")[0] == 200, "/readyz 200")
        bundles, _ = self.bundles()
        self.assertEqual(bundles[0], bundles[1])
        ca_file = os.path.join(self.dir, "ca.crt")
        with open(ca_file, "wb") as fh:
            fh.write(base64.b64decode(bundles[0]))
        handshake(port, ca_file, "custom-svc.team-a.svc")
        with self.assertRaises(ssl.SSLCertVerificationError):
            handshake(port, ca_file, "volcano-plugin-webhook.team-a.svc")
        self.assertIn('"code":"not found"', self.proc.log())
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
