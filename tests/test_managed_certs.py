# SPDX-License-Identifier: Apache-2.0
"""test_managed_certs.py - `serve --cert-secret`: the real binary against tests/apiserver.py.

The replicas keep their CA and serving pair in one Secret of the Lease namespace
(controller/certkeeper.h); the client here trusts only the caBundle the API server holds
and checks the Service's name, as kube-apiserver does (kube-api-facts, "Calling the
webhook"). Scenarios:
  - two replicas started together on an empty namespace: one Secret, one CA, the caBundle
    of every webhook (Mutating and Validating) equal to the trust bundle, both ready, both
    answer that client; what they serve is the Secret's pair, and the expiry gauge is its
    notAfter; the requests for it are exactly what manifests/managed-certs' RBAC grants;
  - with --leader-elect=false the replica leads the keeper itself; a caBundle reset by hand
    is repaired within --cabundle-repair-interval, logged and counted
    (webhook_tls_cabundle_repairs_total);
  - a replica that does not hold the Lease, on a namespace without the Secret, writes
    nothing, serves nothing and says in its log what it waits for;
  - a serving-certificate renewal in seconds (--cert-validity 20s --cert-renew-before 10s)
    while the client sends reviews to both replicas on new connections: every request
    answered, and each replica served more than one certificate;
  - a CA rollover in seconds while a client that trusts whatever caBundle the API server
    holds at the time (as kube-apiserver does) sends reviews to both replicas: no failed
    handshake or request, the bundle goes [CA1] -> [CA1, CA2] -> [CA2], and CA1 leaves only
    after both replicas served a certificate under CA2 and recorded it in the Secret's
    serving annotation (keyed by POD_NAME);
  - the Secret deleted, then overwritten with garbage, under the same traffic: each time a
    new CA, recovered without a failed request, no replica ever serving a certificate the
    caBundle does not trust;
  - a Secret holding an expired serving pair at start: renewed before /readyz is ok, the
    expired certificate never served;
  - every replica watches the Secret (fieldSelector metadata.name=NAME).

Every wait polls with a deadline; nothing asserts how long something took.
"""

import base64
import datetime
import hashlib
import http.client
import json
import os
import re
import shutil
import ssl
import subprocess
import tempfile
import time
import unittest

import harness

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
except ImportError:  # the expired-pair test needs it
    x509 = None

NS = "vpw-system"
SECRET = "vpw-certs"
CONFIG = "volcano-plugin-webhook"
SERVICE = "volcano-plugin-webhook"
SERVICE_DNS = "%s.%s.svc" % (SERVICE, NS)
SECRETS_PATH = "/api/v1/namespaces/%s/secrets" % NS
MWC_PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/" + CONFIG
VWC_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/" + CONFIG
LEADER_ARGS = ["--leader-elect-resource-namespace=" + NS, "--leader-elect-lease-duration=3s",
               "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=1s"]
PLACEHOLDER = base64.b64encode(b"placeholder").decode()
BEGIN = "-----BEGIN CERTIFICATE-----"
EXPIRY_METRIC = "webhook_tls_certificate_expiry_timestamp_seconds"
REPAIRS_METRIC = "webhook_tls_cabundle_repairs_total"
SERVING_ANNOTATION = "volcano-plugin-webhook/serving"
WAIT = 60.0 if os.environ.get("SANITIZER") else 30.0


def client_config(kind, names):
    """A webhook configuration of `kind` whose webhooks call the Service."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": CONFIG},
        "webhooks": [{"name": n, "admissionReviewVersions": ["v1"], "sideEffects": "None",
                      "clientConfig": {"caBundle": PLACEHOLDER,
                                       "service": {"name": SERVICE, "namespace": NS,
                                                   "path": "/pods/mutate"}}}
                     for n in names],
    }


def strict_context(ca_file):
    """Like Go's crypto/tls for kube-apiserver: only ca_file, SAN only, strict."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=ca_file)
    ctx.check_hostname = True
    ctx.hostname_checks_common_name = False
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    return ctx


def get(port, path, ctx, name=SERVICE_DNS):
    """GET path on a new connection; (status, body text), or (None, error)."""
    conn = harness._PinnedHTTPSConnection("127.0.0.1", port, name, ctx, 5)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as e:
        return None, repr(e)
    finally:
        conn.close()


def post_review(port, ctx, review):
    """POST review on a new connection (a new handshake) as kube-apiserver does.
    Returns (HTTP status, parsed body, the served certificate in DER)."""
    conn = harness._PinnedHTTPSConnection("127.0.0.1", port, SERVICE_DNS, ctx, 10)
    try:
        conn.request("POST", "/pods/mutate?timeout=10s", body=json.dumps(review).encode(),
                     headers={"Content-Type": "application/json"})
        der = conn.sock.getpeercert(binary_form=True)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read()), der
    finally:
        conn.close()


def metric(body, name):
    m = re.search(r"^%s (\S+)$" % name, body, re.M)
    return None if m is None else float(m.group(1))


def not_after(pem_text, workdir):
    path = os.path.join(workdir, "cert-%d.pem" % time.monotonic_ns())
    with open(path, "w") as f:
        f.write(pem_text)
    out = subprocess.run(["openssl", "x509", "-enddate", "-noout", "-in", path],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    return ssl.cert_time_to_seconds(out.strip().split("=", 1)[1])


class ManagedCertsTest(unittest.TestCase):
    def setUp(self):
        if not os.access(harness.binary(), os.X_OK):
            self.skipTest("%s not built" % harness.binary())
        self.dir = tempfile.mkdtemp(prefix="vpw-managed-")
        if not os.environ.get("KEEP_TEST_DIRS"):
            self.addCleanup(shutil.rmtree, self.dir, True)
        self.api = harness.ApiServer(self.dir).start()
        self.addCleanup(self.api.stop)
        self.kubeconfig = harness.write_kubeconfig(os.path.join(self.dir, "kubeconfig"),
                                                   self.api.url, self.api.ca_file,
                                                   self.api.token)
        # what `kubectl apply` of the manifests leaves: the configurations, no Secret
        self.api.create_objects([
            client_config("MutatingWebhookConfiguration", ["pods.vpw.example.org",
                                                           "other.vpw.example.org"]),
            client_config("ValidatingWebhookConfiguration", ["jobs.vpw.example.org"])])
        job = harness.load_job("mpi-job", namespace="default")
        del job["metadata"]["uid"]
        self.job = self.api.create_objects([job])[0]
        self.procs = []

    # ------------------------------------------------------------ replicas

    def start(self, *extra):
        """Start replicas (one per args list in extra) at once; returns their ports, each
        written once that replica serves."""
        started = []
        for k, args in enumerate(extra):
            d = os.path.join(self.dir, "replica%d" % k)
            os.makedirs(d)
            port_file = os.path.join(d, "port")
            argv = [harness.binary(), "serve", "--bind-address", "127.0.0.1", "--port", "0",
                    "--port-file", port_file, "--kubeconfig", self.kubeconfig,
                    "--cert-secret", SECRET, "--webhook-config-name", CONFIG,
                    "--service-name", SERVICE, "-v", "3"] + list(args)
            env = dict(os.environ, POD_NAME="vpw-%d" % k)  # the Deployment's downward API
            p = harness.Process("webhook%d" % k, argv, d, env=env).start()
            self.procs.append(p)
            self.addCleanup(self.stop, p)
            started.append((p, port_file))
        return [p.wait_port_file(f, timeout=WAIT) for p, f in started]

    def stop(self, p):
        rc = p.stop()
        if p.sanitizer_report():
            raise AssertionError(p.sanitizer_failure())
        self.assertEqual(rc, 0, p.log())  # SIGTERM: keeper and server stopped, exit 0
        self.assertNotIn("PRIVATE KEY", p.log())

    def wait(self, pred, what, timeout=WAIT):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = pred()
            if last:
                return last
            for p in self.procs:
                if not p.alive():
                    raise AssertionError("%s exited:\n%s" % (p.name, p.log()))
            time.sleep(0.1)
        raise AssertionError("timed out waiting for %s (last: %r)\n%s" % (
            what, last, "\n".join(p.log()[-4000:] for p in self.procs)))

    def wait_ready(self, ports):
        for port in ports:
            self.wait(lambda: get(port, "/readyz", harness.insecure_context())[0] == 200,
                      "/readyz 200 on port %d" % port)

    # ------------------------------------------------------------ what the API server holds

    def secrets(self):
        status, body = self.api.get(SECRETS_PATH)
        self.assertEqual(status, 200, body)
        return body["items"]

    def secret_data(self):
        [secret] = self.secrets()
        return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}

    def review(self):
        pod = harness.build_pod(self.job, "mpiworker", 0)
        return harness.review(pod, "default")

    # ------------------------------------------------------------ tests

    def test_two_replicas_on_an_empty_namespace_one_ca_both_ready(self):
        ports = self.start(LEADER_ARGS, LEADER_ARGS)
        self.wait_ready(ports)

        # What they asked of the API server for it is what manifests/managed-certs
        # grants: the Secret by name (get, watch, update) and create, the two configurations by
        # name (get, patch); nothing else there (the Job's own ssh Secret is elsewhere).
        # Each replica watches the Secret by name (GET of the collection, ?watch=1 and the
        # fieldSelector: the RBAC rule is `watch` with resourceNames) and records what it
        # serves in the Secret (PUT: `update`, follower too).
        reqs = self.api.requests()
        used = {(r["method"], r["path"]) for r in reqs
                if r["path"].startswith(SECRETS_PATH) or "webhookconfigurations" in r["path"]}
        self.assertEqual(used, {
            ("GET", SECRETS_PATH + "/" + SECRET), ("PUT", SECRETS_PATH + "/" + SECRET),
            ("POST", SECRETS_PATH), ("GET", SECRETS_PATH), ("GET", MWC_PATH),
            ("PATCH", MWC_PATH), ("GET", VWC_PATH), ("PATCH", VWC_PATH)})
        lists = [r["query"] for r in reqs if r["method"] == "GET" and r["path"] == SECRETS_PATH]
        self.assertGreaterEqual(len(lists), 2)  # one watch per replica at least
        for q in lists:
            with self.subTest(query=q):
                self.assertIn("watch=1", q)
                self.assertIn("fieldSelector=metadata.name%3D" + SECRET, q)

        # One Secret, one CA: the CA is the whole trust bundle and every caBundle.
        [secret] = self.secrets()
        self.assertEqual(secret["metadata"]["name"], SECRET)
        self.assertEqual(secret["type"], "kubernetes.io/tls")
        data = self.secret_data()
        self.assertEqual(sorted(data), ["ca-bundle.crt", "ca.crt", "ca.key", "tls.crt",
                                        "tls.key"])
        self.assertEqual(data["ca-bundle.crt"].count(BEGIN), 1)
        self.assertEqual(data["ca-bundle.crt"], data["ca.crt"])
        want = base64.b64encode(data["ca-bundle.crt"].encode()).decode()
        self.assertEqual(harness.webhook_ca_bundles(self.api, CONFIG), [want, want, want])
        ca_file = harness.trusted_ca_file(self.api, CONFIG, self.dir)

        # A client trusting only that caBundle, checking the Service name, gets answers
        # from both, and both serve the Secret's certificate.
        secret_der = ssl.PEM_cert_to_DER_cert(data["tls.crt"])
        for port in ports:
            with self.subTest(port=port):
                status, body, der = post_review(port, strict_context(ca_file), self.review())
                self.assertEqual(status, 200, body)
                self.assertTrue(body["response"]["allowed"], body)
                self.assertEqual(der, secret_der)
                with self.assertRaises(ssl.SSLCertVerificationError):  # another name
                    harness.tls_handshake(port, strict_context(ca_file),
                                          "%s.default.svc" % SERVICE).close()
                status, text = get(port, "/metrics", strict_context(ca_file))
                self.assertEqual(status, 200, text)
                self.assertEqual(metric(text, EXPIRY_METRIC),
                                 not_after(data["tls.crt"], self.dir))
                self.assertEqual(metric(text, REPAIRS_METRIC), 0)

    def test_cabundle_reset_by_hand_is_repaired(self):
        [port] = self.start(["--leader-elect=false", "--leader-elect-resource-namespace=" + NS,
                            "--cabundle-repair-interval=2s"])
        self.wait_ready([port])
        good = harness.webhook_ca_bundles(self.api, CONFIG)
        self.assertEqual(len(set(good)), 1)

        # An operator (or an old `kubectl apply`) puts a placeholder back in one webhook.
        status, cfg = self.api.get(MWC_PATH)
        self.assertEqual(status, 200, cfg)
        cfg["webhooks"][1]["clientConfig"]["caBundle"] = PLACEHOLDER
        status, body = self.api.call("PUT", MWC_PATH, cfg)
        self.assertEqual(status, 200, body)

        self.wait(lambda: harness.webhook_ca_bundles(self.api, CONFIG) == good, "the caBundle repaired")
        self.wait(lambda: metric(get(port, "/metrics", harness.insecure_context())[1],
                                 REPAIRS_METRIC) == 1, "the repair counted")
        log = self.procs[0].log()
        self.assertIn("caBundle changed outside the webhook, repaired", log)
        self.wait_ready([port])
        status, body, _ = post_review(port, strict_context(harness.trusted_ca_file(self.api, CONFIG, self.dir)),
                                      self.review())
        self.assertEqual(status, 200, body)

    def test_a_follower_without_a_secret_waits_and_says_so(self):
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        status, body = self.api.call(
            "POST", "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % NS, {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "volcano-plugin-webhook", "namespace": NS},
                "spec": {"holderIdentity": "someone-else", "leaseDurationSeconds": 3600,
                         "acquireTime": now, "renewTime": now, "leaseTransitions": 0}})
        self.assertEqual(status, 201, body)
        d = os.path.join(self.dir, "follower")
        os.makedirs(d)
        port_file = os.path.join(d, "port")
        p = harness.Process("follower", [
            harness.binary(), "serve", "--bind-address", "127.0.0.1", "--port", "0",
            "--port-file", port_file, "--kubeconfig", self.kubeconfig,
            "--cert-secret", SECRET, "--webhook-config-name", CONFIG] + LEADER_ARGS, d).start()
        self.addCleanup(p.stop)
        secret_path = SECRETS_PATH + "/" + SECRET
        self.wait(lambda: sum(1 for r in self.api.requests()
                              if r["method"] == "GET" and r["path"] == secret_path) >= 3,
                  "three reads of the Secret")
        waits = [e for e in map(json.loads, (ln for ln in p.log().splitlines()
                                             if ln.startswith("{")))
                 if e["msg"] == "managed certificates: waiting for a serving pair before serving"]
        self.assertTrue(waits, p.log())
        self.assertEqual((waits[0]["secret"], waits[0]["leading"], waits[0]["waited_s"]),
                         ("%s/%s" % (NS, SECRET), "false", "0"))
        self.assertTrue(p.alive(), p.log())
        self.assertFalse(os.path.exists(port_file))  # not serving
        writes = [r for r in self.api.requests()
                  if r["method"] != "GET" and "/leases" not in r["path"]]
        self.assertEqual(writes, [])
        self.assertEqual(self.secrets(), [])
        self.assertEqual(harness.webhook_ca_bundles(self.api, CONFIG), [PLACEHOLDER] * 3)
        # SIGTERM while waiting: start-up never finished (exit 1), everything freed
        self.assertEqual(p.stop(), 1, p.log())
        self.assertIsNone(p.sanitizer_report(), p.log())
        self.assertIn("stop signal while waiting for the serving pair", p.log())

    def test_renewal_in_seconds_without_a_failed_request(self):
        args = LEADER_ARGS + ["--cert-validity=20s", "--cert-renew-before=10s"]
        ports = self.start(args, args)
        self.wait_ready(ports)
        ca_file = harness.trusted_ca_file(self.api, CONFIG, self.dir)  # the CA lasts 10 years: it stays the same
        ctx = strict_context(ca_file)
        served = {port: [] for port in ports}
        failures = []
        sent = 0
        deadline = time.monotonic() + 30  # a renewal every ~10 s: about three
        while time.monotonic() < deadline:
            for port in ports:
                sent += 1
                try:
                    status, body, der = post_review(port, ctx, self.review())
                except (OSError, http.client.HTTPException, ValueError) as e:
                    failures.append((port, repr(e)))
                    continue
                if status != 200 or not body.get("response", {}).get("allowed"):
                    failures.append((port, status, body))
                if not served[port] or served[port][-1] != der:
                    served[port].append(der)
            time.sleep(0.05)
        self.assertEqual(failures, [], "%d requests" % sent)
        for port in ports:
            with self.subTest(port=port):
                self.assertGreaterEqual(len(served[port]), 2, "no renewal served")
                self.assertEqual(len(set(served[port])), len(served[port]))
        # Still one CA in the bundle and the caBundles.
        self.assertEqual(self.secret_data()["ca-bundle.crt"].count(BEGIN), 1)
        self.assertEqual(len(set(harness.webhook_ca_bundles(self.api, CONFIG))), 1)

    # ------------------------------------------------------------ traffic through rotations

    def traffic(self, ports, done, settle=2.0, timeout=60.0):
        """Send reviews to every port in turn on new connections, each trusting only the
        caBundle the API server holds at that moment (re-read before each request, as
        kube-apiserver reloads it) and checking the Service name, until done() has been
        true for `settle` seconds. Returns (failures, events): events are (time, port, served
        DER, bundle PEM) in order; bundle changes show up between requests."""
        failures, events = [], []
        ctxs = {}
        done_at = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for port in ports:
                # the first webhook's, as kube-apiserver calls it (the patch of the
                # Validating configuration may come a moment later)
                b64 = harness.webhook_ca_bundles(self.api, CONFIG)[0]
                if b64 not in ctxs:
                    path = os.path.join(self.dir, "trust-%d.crt" % len(ctxs))
                    with open(path, "wb") as f:
                        f.write(base64.b64decode(b64, validate=True))
                    ctxs[b64] = strict_context(path)
                try:
                    status, body, der = post_review(port, ctxs[b64], self.review())
                except (OSError, http.client.HTTPException, ValueError) as e:
                    failures.append((port, repr(e)))
                    continue
                if status != 200 or not body.get("response", {}).get("allowed"):
                    failures.append((port, status, body))
                events.append((time.monotonic(), port, der,
                               base64.b64decode(b64).decode()))
            if done_at is None and done():
                done_at = time.monotonic()
            if done_at is not None and time.monotonic() - done_at >= settle:
                return failures, events
            time.sleep(0.02)
        raise AssertionError("traffic: the rotation did not finish (failures %r)\n%s" % (
            failures[:5], "\n".join(p.log()[-3000:] for p in self.procs)))

    def issued_by(self, der, ca_pem):
        """Whether the certificate (DER) verifies under ca_pem alone."""
        leaf = os.path.join(self.dir, "leaf-%d.pem" % time.monotonic_ns())
        ca = os.path.join(self.dir, "ca-%d.pem" % time.monotonic_ns())
        with open(leaf, "w") as f:
            f.write(ssl.DER_cert_to_PEM_cert(der))
        with open(ca, "w") as f:
            f.write(ca_pem)
        r = subprocess.run(["openssl", "verify", "-partial_chain", "-CAfile", ca, leaf],
                           capture_output=True, text=True, timeout=30)
        return r.returncode == 0

    def records(self):
        """The Secret's serving records: {pod: {"ca": hex, "time": n}}."""
        [secret] = self.secrets()
        text = secret["metadata"].get("annotations", {}).get(SERVING_ANNOTATION)
        return json.loads(text) if text else {}

    def test_ca_rollover_in_seconds_without_a_failed_request(self):
        # The CA lasts 24 s: rolled over when less than 2 * 5 s is left, about 14 s in.
        args = LEADER_ARGS + ["--ca-validity=24s", "--cert-validity=12s",
                              "--cert-renew-before=5s"]
        ports = self.start(args, args)
        self.wait_ready(ports)
        ca1 = self.secret_data()["ca.crt"]
        self.assertEqual(self.secret_data()["ca-bundle.crt"], ca1)

        def rolled():
            d = self.secret_data()
            return d["ca.crt"] != ca1 and d["ca-bundle.crt"] == d["ca.crt"]

        failures, events = self.traffic(ports, rolled, timeout=WAIT + 30)
        self.assertEqual(failures, [], "%d requests" % len(events))
        ca2 = self.secret_data()["ca.crt"]
        self.assertNotEqual(ca2, ca1)

        # The bundle the API server held went [CA1] -> [CA1, CA2] -> [CA2], in that order.
        seq = []
        for _, _, _, bundle in events:
            if not seq or seq[-1] != bundle:
                seq.append(bundle)
        self.assertEqual(seq, [ca1, ca1 + ca2, ca2])

        # CA1 left only after both replicas had served a certificate under CA2.
        only_new = next(t for t, _, _, b in events if b == ca2)
        for port in ports:
            with self.subTest(port=port):
                under_new = [t for t, p, der, _ in events
                             if p == port and self.issued_by(der, ca2)]
                self.assertTrue(under_new, "port %d never served under CA2" % port)
                self.assertLess(under_new[0], only_new)
                # and never again under CA1 once CA1 was gone
                self.assertEqual([t for t, p, der, _ in events
                                  if p == port and t > only_new and self.issued_by(der, ca1)],
                                 [])

        # What each replica recorded: its pod name, the SHA-256 of CA2's DER.
        fp2 = hashlib.sha256(ssl.PEM_cert_to_DER_cert(ca2)).hexdigest()
        records = self.records()
        self.assertEqual(sorted(records), ["vpw-0", "vpw-1"])
        self.assertEqual({r["ca"] for r in records.values()}, {fp2})
        self.assertEqual(sum(p.log().count("old CA(s) leave the trust bundle")
                             for p in self.procs), 1)

    def test_secret_deleted_and_garbage_recovered_without_a_failed_request(self):
        # a short --cert-renew-before: rounds every second (drain: 3 rounds), not every 10 s
        args = LEADER_ARGS + ["--cert-validity=1h", "--cert-renew-before=10s"]
        ports = self.start(args, args)
        self.wait_ready(ports)
        secret_path = SECRETS_PATH + "/" + SECRET
        seen_cas = [self.secret_data()["ca.crt"]]

        def recovered():
            try:
                d = self.secret_data()
            except (ValueError, KeyError, UnicodeDecodeError, AssertionError):
                return False
            bundles = harness.webhook_ca_bundles(self.api, CONFIG)
            ok = (d.get("ca.crt") not in seen_cas and d.get("ca-bundle.crt") == d.get("ca.crt")
                  and bundles == [base64.b64encode(d["ca.crt"].encode()).decode()] * 3)
            return ok

        # Deleted: a new CA, trusted beside the one served, then alone.
        status, body = self.api.call("DELETE", secret_path)
        self.assertEqual(status, 200, body)
        failures, events = self.traffic(ports, recovered, timeout=WAIT + 30)
        self.assertEqual(failures, [], "deleted: %d requests" % len(events))
        seen_cas.append(self.secret_data()["ca.crt"])

        # Overwritten with garbage (every key, no annotation): the same.
        status, secret = self.api.get(secret_path)
        self.assertEqual(status, 200, secret)
        garbage = base64.b64encode(b"garbage").decode()
        secret["data"] = {k: garbage for k in secret["data"]}
        secret["metadata"].pop("annotations", None)
        status, body = self.api.call("PUT", secret_path, secret)
        self.assertEqual(status, 200, body)
        failures, events = self.traffic(ports, recovered, timeout=WAIT + 30)
        self.assertEqual(failures, [], "garbage: %d requests" % len(events))
        data = self.secret_data()
        self.assertEqual(sorted(data), ["ca-bundle.crt", "ca.crt", "ca.key", "tls.crt",
                                        "tls.key"])
        self.assertEqual(data["ca-bundle.crt"].count(BEGIN), 1)
        secret_der = ssl.PEM_cert_to_DER_cert(data["tls.crt"])
        for port in ports:
            with self.subTest(port=port):
                self.assertEqual([der for _, p, der, _ in events if p == port][-1], secret_der)
        fp = hashlib.sha256(ssl.PEM_cert_to_DER_cert(data["ca.crt"])).hexdigest()
        self.assertEqual({r["ca"] for r in self.records().values()}, {fp})

    @unittest.skipIf(x509 is None, "python3-cryptography not installed")
    def test_expired_pair_at_start_renewed_before_ready(self):
        # A Secret left by an old install: a valid CA, a serving pair that expired yesterday.
        now = datetime.datetime.now(datetime.timezone.utc)
        day = datetime.timedelta(days=1)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "old-install-ca")])
        ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
                   .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - 400 * day).not_valid_after(now + 3000 * day)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(x509.KeyUsage(
                       digital_signature=True, content_commitment=False, key_encipherment=False,
                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(
                       ca_key.public_key()), critical=False)
                   .sign(ca_key, hashes.SHA256()))
        leaf_key = ec.generate_private_key(ec.SECP256R1())
        leaf = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVICE)]))
                .issuer_name(ca_name).public_key(leaf_key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - 366 * day).not_valid_after(now - day)
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(SERVICE_DNS)]),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))

        def pem_key(k):
            return k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()).decode()

        ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM).decode()
        expired_pem = leaf.public_bytes(serialization.Encoding.PEM).decode()
        b64 = lambda t: base64.b64encode(t.encode()).decode()  # noqa: E731
        self.api.create_objects([{
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": SECRET, "namespace": NS},
            "data": {"ca.crt": b64(ca_pem), "ca.key": b64(pem_key(ca_key)),
                     "ca-bundle.crt": b64(ca_pem), "tls.crt": b64(expired_pem),
                     "tls.key": b64(pem_key(leaf_key))}}])

        d = os.path.join(self.dir, "replica0")
        os.makedirs(d)
        port_file = os.path.join(d, "port")
        p = harness.Process("webhook0", [
            harness.binary(), "serve", "--bind-address", "127.0.0.1", "--port", "0",
            "--port-file", port_file, "--kubeconfig", self.kubeconfig, "--cert-secret", SECRET,
            "--webhook-config-name", CONFIG, "--service-name", SERVICE, "-v", "3",
            "--leader-elect=false", "--leader-elect-resource-namespace=" + NS], d).start()
        self.procs.append(p)
        self.addCleanup(self.stop, p)
        port = p.wait_port_file(port_file, timeout=WAIT)
        # From the first answer on: /readyz and the certificate of the same connection.
        expired_der = ssl.PEM_cert_to_DER_cert(expired_pem)
        seen = []

        def ready():
            conn = harness._PinnedHTTPSConnection("127.0.0.1", port, SERVICE_DNS,
                                                  harness.insecure_context(), 5)
            try:
                conn.request("GET", "/readyz")
                der = conn.sock.getpeercert(binary_form=True)
                resp = conn.getresponse()
                resp.read()
                seen.append((resp.status, der))
                return resp.status == 200
            except (OSError, http.client.HTTPException):
                return False
            finally:
                conn.close()

        self.wait(ready, "/readyz 200")
        self.assertNotIn(expired_der, [der for _, der in seen])
        data = self.secret_data()
        self.assertNotEqual(data["tls.crt"], expired_pem)
        self.assertEqual(data["ca.crt"], ca_pem)  # the CA was good: kept
        self.assertEqual(seen[-1][1], ssl.PEM_cert_to_DER_cert(data["tls.crt"]))
        self.assertGreater(not_after(data["tls.crt"], self.dir), time.time())
        status, body, der = post_review(port, strict_context(harness.trusted_ca_file(self.api, CONFIG, self.dir)),
                                        self.review())
        self.assertEqual(status, 200, body)
        log = p.log()
        self.assertLess(log.index("certkeeper: serving certificate issued"),
                        log.index('"msg":"certkeeper: ready"'))


if __name__ == "__main__":
    unittest.main()
