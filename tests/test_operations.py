# SPDX-License-Identifier: Apache-2.0
"""test_operations.py - the running webhook as an operator and a hostile client see it.

TLS serving, observability, operations and hostile clients:
  - TLS 1.0/1.1 refused, 1.2/1.3 accepted; a CBC suite refused, the AEAD suites of
    Mozilla's intermediate profile accepted; ALPN answers http/1.1 only. Each refusal is
    paired with a local Python TLS server that accepts the same client settings, so a
    refusal cannot come from the client side.
  - Hot reload under load: the pair is swapped the way a kubelet Secret volume does it
    (new timestamped directory, "..data" symlink renamed over), while a thread sends
    admissions on a keep-alive connection and on new connections: no request fails, new
    connections present the new certificate within seconds, a broken pair is refused and
    the current one keeps serving.
  - GET /metrics parsed (Prometheus text format 0.0.4) after known traffic: exact deltas.
  - SIGTERM under load: /readyz turns 503, no request that reached the server is lost,
    requests are still served after the signal, the Lease is released, exit status 0.
  - Slowloris: 200 connections trickling bytes are closed after --request-timeout while
    a well-behaved client's admissions are all answered.
No latency is asserted; waits have generous upper bounds only.
"""

import hashlib
import http.client
import json
import os
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest
import warnings

import harness

JOB = "mpi-job"                 # plugins ssh + svc
SERVER_NAME = harness.service_dns()


def tls_client(ca_files=(), verify=True):
    """A client context trusting ca_files (or nothing checked when verify is False)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if verify:
        for f in ca_files:
            ctx.load_verify_locations(f)
        ctx.check_hostname = True
        ctx.verify_mode = ssl.CERT_REQUIRED
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def handshake(port, ctx, timeout=10):
    """Connect and handshake; returns the SSL socket (caller closes) or raises."""
    return harness.tls_handshake(port, ctx, SERVER_NAME, timeout)


def der_of(pem_file):
    with open(pem_file) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def leaf_fingerprint(port, ctx):
    s = handshake(port, ctx)
    try:
        return hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()
    finally:
        s.close()


class LocalTLSServer:
    """A Python TLS server on loopback accepting whatever the client settings allow:
    the control that proves a client configuration can complete a handshake at all."""

    def __init__(self, certs, setup):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(certs["tls.crt"], certs["tls.key"])
        setup(self.ctx)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        try:
            with self.ctx.wrap_socket(conn, server_side=True) as s:
                s.recv(1)
        except (OSError, ssl.SSLError):
            pass

    def close(self):
        self.sock.close()
        self.thread.join(5)


def parse_metrics(text):
    """Prometheus text format 0.0.4 → {(name, frozenset(labels)): value}; strict: every
    sample line parses, every family has a TYPE before its samples."""
    sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$')
    label = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    types = {}
    out = {}
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            if typ not in ("counter", "gauge", "histogram", "summary", "untyped"):
                raise AssertionError("bad TYPE line %r" % line)
            types[name] = typ
            continue
        if line.startswith("#"):
            continue
        m = sample.match(line)
        if not m:
            raise AssertionError("bad sample line %r" % line)
        name, labels, value = m.group(1), m.group(3) or "", m.group(4)
        family = re.sub(r'_(bucket|sum|count)$', '', name)
        if name not in types and family not in types:
            raise AssertionError("sample %r before its TYPE" % line)
        pairs = frozenset(label.findall(labels))
        if labels and ",".join('%s="%s"' % p for p in label.findall(labels)) != labels:
            raise AssertionError("bad labels in %r" % line)
        out[(name, pairs)] = float(value)
    return out


def metric(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def kubelet_volume(root, pair_files, version):
    """Make ROOT look like a kubelet Secret volume holding pair_files (dict name → path):
    ROOT/..<version>/{tls.crt,tls.key}, ROOT/..data → ..<version>, ROOT/tls.crt →
    ..data/tls.crt. A second call swaps ..data atomically (rename of a new symlink over
    it) and removes the old directory, as the kubelet's atomic writer does."""
    new_dir = os.path.join(root, ".." + version)
    os.makedirs(new_dir)
    for name, src in pair_files.items():
        shutil.copyfile(src, os.path.join(new_dir, name))
        os.chmod(os.path.join(new_dir, name), 0o600 if name.endswith(".key") else 0o644)
    data = os.path.join(root, "..data")
    old = os.readlink(data) if os.path.islink(data) else None
    tmp = os.path.join(root, "..data_tmp")
    os.symlink(".." + version, tmp)
    os.replace(tmp, data)
    for name in pair_files:
        link = os.path.join(root, name)
        if not os.path.islink(link):
            os.symlink(os.path.join("..data", name), link)
    if old:
        shutil.rmtree(os.path.join(root, old))


class WebhookCase(unittest.TestCase):
    """Helpers: one Env per test (each test stops or stresses its webhook)."""

    def start_env(self, args=(), jobs=(JOB,), start_webhook=True):
        env = harness.Env(jobs=[harness.load_job(j) for j in jobs],
                          webhook_args=["--leader-elect=false"] + list(args),
                          start_webhook=start_webhook)
        self.addCleanup(env.close)
        env.start()
        return env

    @staticmethod
    def lease_holder(env):
        status, body = env.api.get(
            "/apis/coordination.k8s.io/v1/namespaces/default/leases/volcano-plugin-webhook")
        if status != 200:
            return None
        return (body.get("spec") or {}).get("holderIdentity")

    def admission(self, env):
        """A review of the job's first pod (patched by ssh + svc)."""
        job = env.jobs[0]
        pod = harness.build_pod(job, "mpimaster", 0)
        return harness.review(pod, job["metadata"]["namespace"])

    def scrape(self, wh, ctx=None):
        """GET /metrics parsed; ctx: the client context (default: trust the env's CA)."""
        conn = wh.connection() if ctx is None else harness._PinnedHTTPSConnection(
            "127.0.0.1", wh.port, SERVER_NAME, ctx, 10)
        try:
            conn.request("GET", "/metrics")
            resp = conn.getresponse()
            body = resp.read().decode()
            self.assertEqual(resp.status, 200)
            self.assertEqual(resp.getheader("Content-Type"),
                             "text/plain; version=0.0.4; charset=utf-8")
            return parse_metrics(body)
        finally:
            conn.close()


class TLSProfileTest(WebhookCase):

    def setUp(self):
        warnings.simplefilter("ignore", DeprecationWarning)   # ssl.TLSVersion.TLSv1
        self.env = self.start_env()
        self.port = self.env.webhook.port

    def refused_but_possible(self, setup):
        """The client settings complete a handshake with a permissive Python server, and
        the webhook refuses them."""
        ctl = LocalTLSServer(self.env.certs, lambda ctx: (
            ctx.set_ciphers("ALL:@SECLEVEL=0"), setattr(ctx, "minimum_version",
                                                        ssl.TLSVersion.MINIMUM_SUPPORTED)))
        try:
            ctx = tls_client(verify=False)
            setup(ctx)
            s = handshake(ctl.port, ctx)
            s.close()
        finally:
            ctl.close()
        ctx = tls_client(verify=False)
        setup(ctx)
        with self.assertRaises((ssl.SSLError, ConnectionError)):
            handshake(self.port, ctx).close()

    def test_versions(self):
        for v in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
            with self.subTest(version=v.name):
                def setup(ctx, v=v):
                    ctx.set_ciphers("ALL:@SECLEVEL=0")
                    ctx.minimum_version = ctx.maximum_version = v
                self.refused_but_possible(setup)
        for v, name in ((ssl.TLSVersion.TLSv1_2, "TLSv1.2"), (ssl.TLSVersion.TLSv1_3, "TLSv1.3")):
            with self.subTest(version=name):
                ctx = tls_client([self.env.certs["ca.crt"]])
                ctx.minimum_version = ctx.maximum_version = v
                s = handshake(self.port, ctx)
                self.assertEqual(s.version(), name)
                s.close()
        # The server still serves after the refusals.
        self.env.webhook.wait_healthy()

    def test_ciphers(self):
        # CBC suites (with ECDHE, so the ECDSA certificate could serve them) are refused.
        for weak in ("ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384"):
            with self.subTest(cipher=weak):
                def setup(ctx, weak=weak):
                    ctx.set_ciphers(weak + ":@SECLEVEL=0")
                    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
                self.refused_but_possible(setup)
        for good in ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
                     "ECDHE-ECDSA-CHACHA20-POLY1305"):
            with self.subTest(cipher=good):
                ctx = tls_client([self.env.certs["ca.crt"]])
                ctx.set_ciphers(good)
                ctx.maximum_version = ssl.TLSVersion.TLSv1_2
                s = handshake(self.port, ctx)
                self.assertEqual(s.cipher()[0], good)
                s.close()

    def test_alpn_http11_only(self):
        for offer, want in ((["h2", "http/1.1"], "http/1.1"), (["h2"], None),
                            (["http/1.0"], None), (["http/1.0", "http/1.1"], "http/1.1")):
            with self.subTest(offer=offer):
                ctx = tls_client([self.env.certs["ca.crt"]])
                ctx.set_alpn_protocols(offer)
                s = handshake(self.port, ctx)
                self.assertEqual(s.selected_alpn_protocol(), want)
                s.close()


class HotReloadTest(WebhookCase):

    def test_swap_under_load(self):
        env = self.start_env(start_webhook=False)
        base = env.dir
        pair_a = env.certs
        pair_b = harness.make_certs(os.path.join(base, "certs-b"))
        pair_c = harness.make_certs(os.path.join(base, "certs-c"))
        vol = os.path.join(base, "secret-volume")
        os.makedirs(vol)
        kubelet_volume(vol, {"tls.crt": pair_a["tls.crt"], "tls.key": pair_a["tls.key"]},
                       "2024_01_01_00_00_00.1")
        certs = {"ca.crt": pair_a["ca.crt"], "tls.crt": os.path.join(vol, "tls.crt"),
                 "tls.key": os.path.join(vol, "tls.key")}
        wh = harness.Webhook(base, certs, env.kubeconfig, extra_args=["--leader-elect=false"])
        env.webhook = wh
        wh.start()
        both = tls_client([pair_a["ca.crt"], pair_b["ca.crt"]])
        fp_a = hashlib.sha256(der_of(pair_a["tls.crt"])).hexdigest()
        fp_b = hashlib.sha256(der_of(pair_b["tls.crt"])).hexdigest()
        self.assertEqual(leaf_fingerprint(wh.port, both), fp_a)
        rev = self.admission(env)
        body = json.dumps(rev).encode()
        stop = threading.Event()
        results = {"ok": 0, "fail": []}

        def post(conn):
            conn.request("POST", harness.WEBHOOK_PATH, body=body,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = json.loads(resp.read())
            if resp.status != 200 or data["response"]["uid"] != rev["request"]["uid"]:
                raise AssertionError("HTTP %d %r" % (resp.status, data))

        def load():
            keep = harness._PinnedHTTPSConnection("127.0.0.1", wh.port, SERVER_NAME, both, 10)
            while not stop.is_set():
                for conn, fresh in ((keep, False), (harness._PinnedHTTPSConnection(
                        "127.0.0.1", wh.port, SERVER_NAME, both, 10), True)):
                    try:
                        post(conn)
                        results["ok"] += 1
                    except Exception as e:   # noqa: BLE001 - every failure is recorded
                        results["fail"].append(repr(e))
                    if fresh:
                        conn.close()
            keep.close()

        t = threading.Thread(target=load)
        t.start()
        try:
            time.sleep(0.5)
            kubelet_volume(vol, {"tls.crt": pair_b["tls.crt"], "tls.key": pair_b["tls.key"]},
                           "2024_01_01_00_10_00.2")
            deadline = time.monotonic() + 10
            while leaf_fingerprint(wh.port, both) != fp_b:
                self.assertLess(time.monotonic(), deadline, "new pair not served within 10 s")
                time.sleep(0.1)
            before = self.scrape(wh, both)
            # A key that does not match its certificate, then a certificate that is not PEM.
            kubelet_volume(vol, {"tls.crt": pair_c["tls.crt"], "tls.key": pair_a["tls.key"]},
                           "2024_01_01_00_20_00.3")
            garbage = os.path.join(base, "garbage.crt")
            with open(garbage, "w") as f:
                f.write("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
            self.wait_refused(wh, both, before, 1)
            kubelet_volume(vol, {"tls.crt": garbage, "tls.key": pair_c["tls.key"]},
                           "2024_01_01_00_30_00.4")
            self.wait_refused(wh, both, before, 2)
            self.assertEqual(leaf_fingerprint(wh.port, both), fp_b)
            time.sleep(0.5)
        finally:
            stop.set()
            t.join(30)
        after = self.scrape(wh, both)
        self.assertEqual(results["fail"], [])
        self.assertGreater(results["ok"], 10)
        self.assertEqual(metric(after, "webhook_tls_reloads_total", result="ok"), 1)
        self.assertEqual(metric(after, "webhook_tls_reloads_total", result="refused"), 2)
        log = wh.process.log()
        self.assertEqual(log.count('"msg":"tls: pair reloaded"'), 1, log)
        self.assertEqual(log.count('"msg":"tls: new pair refused, serving the old one"'), 2,
                         log)
        self.assertNotIn("PRIVATE KEY", log)
        self.assertNotIn("BEGIN CERTIFICATE", log)

    def wait_refused(self, wh, ctx, before, n):
        want = metric(before, "webhook_tls_reloads_total", result="refused") + n
        deadline = time.monotonic() + 10
        while metric(self.scrape(wh, ctx), "webhook_tls_reloads_total",
                     result="refused") < want:
            self.assertLess(time.monotonic(), deadline, "broken pair not refused within 10 s")
            time.sleep(0.1)


class MetricsTest(WebhookCase):

    def test_counters_after_known_traffic(self):
        env = self.start_env()
        wh = env.webhook
        job = env.jobs[0]
        ns = job["metadata"]["namespace"]
        before = self.scrape(wh)
        pods = harness.job_pods(job)                       # 3 pods, each patched
        for pod in pods:
            resp = wh.admit(harness.review(pod, ns))
            self.assertIsNotNone(harness.decode_patch(resp))
        plain = harness.build_pod(job, "mpimaster", 0)
        plain["metadata"]["ownerReferences"] = []         # not a Job's pod: unchanged
        self.assertIsNone(harness.decode_patch(wh.admit(harness.review(plain, ns))))
        orphan = harness.build_pod(job, "mpimaster", 0)
        orphan["metadata"]["ownerReferences"][0]["name"] = "no-such-job"
        resp = wh.admit(harness.review(orphan, ns))      # unchanged, one warning
        self.assertEqual(len(resp["warnings"]), 1)
        self.assertEqual(wh.post(b"{", raw=True)[0], 400)
        self.assertEqual(wh.post(b"[]", raw=True)[0], 400)
        conn = wh.connection()
        try:
            for method, path, ctype, want in (("POST", harness.WEBHOOK_PATH, "text/plain", 415),
                                              ("GET", harness.WEBHOOK_PATH, None, 405),
                                              ("GET", "/nope", None, 404)):
                headers = {"Content-Type": ctype} if ctype else {}
                conn.request(method, path, body=b"{}" if method == "POST" else None,
                             headers=headers)
                resp = conn.getresponse()
                resp.read()
                self.assertEqual(resp.status, want)
        finally:
            conn.close()
        after = self.scrape(wh)

        def delta(name, **labels):
            return metric(after, name, **labels) - metric(before, name, **labels)

        req = "webhook_admission_requests_total"
        self.assertEqual(delta(req, code="200", outcome="patched"), 3)
        self.assertEqual(delta(req, code="200", outcome="unchanged"), 2)
        self.assertEqual(delta(req, code="200", outcome="denied"), 0)
        self.assertEqual(delta(req, code="400", outcome="error"), 2)
        self.assertEqual(delta(req, code="415", outcome="error"), 1)
        self.assertEqual(delta(req, code="405", outcome="error"), 1)
        self.assertEqual(delta(req, code="404", outcome="error"), 1)
        total = sum(v for (n, _), v in after.items() if n == req) - \
            sum(v for (n, _), v in before.items() if n == req)
        self.assertEqual(total, 10)
        # Latency histogram: admission_handle's answers (7) and the server's refusals (3).
        self.assertEqual(delta("webhook_admission_duration_seconds_count"), 10)
        self.assertEqual(delta("webhook_admission_duration_seconds_bucket", le="+Inf"), 10)
        self.assertEqual(delta("webhook_plugin_patches_total", plugin="ssh"), 3)
        self.assertEqual(delta("webhook_plugin_patches_total", plugin="svc"), 3)
        self.assertEqual(delta("webhook_plugin_patches_total", plugin="env"), 0)
        self.assertEqual(delta("webhook_plugin_patches_total", plugin="mpi"), 0)
        self.assertEqual(delta("webhook_admission_warnings_total"), 1)
        self.assertEqual(metric(after, "webhook_cache_jobs"), 1)
        self.assertEqual(metric(after, "webhook_leader"), 1)
        self.assertGreaterEqual(metric(after, "webhook_informer_lists_total"), 1)
        self.assertEqual(metric(after, "webhook_watch_restarts_total"),
                         max(metric(after, "webhook_informer_watches_total") - 1, 0))
        build = self.build_labels(after)
        self.assertEqual(sorted(build), ["commit", "version"])
        self.assertEqual(metric(after, "webhook_build_info", **build), 1)
        # The reconciler runs the ssh hook once for the Job: one key pair.
        deadline = time.monotonic() + 15
        while metric(self.scrape(wh), "webhook_ssh_keygen_total") < 1:
            self.assertLess(time.monotonic(), deadline, "no ssh key generated")
            time.sleep(0.1)
        last = self.scrape(wh)
        self.assertGreater(metric(last, "webhook_ssh_keygen_seconds_total"), 0)
        self.assertGreaterEqual(metric(last, "webhook_reconcile_total"), 1)
        self.assertEqual(metric(last, "webhook_tls_reloads_total", result="ok"), 0)
        # Buckets are cumulative and end at the count.
        buckets = sorted(((float(dict(lbl)["le"]), v) for (n, lbl), v in last.items()
                          if n == "webhook_admission_duration_seconds_bucket"),
                         key=lambda b: b[0])
        self.assertEqual(len(buckets), 17)
        self.assertEqual([v for _, v in buckets], sorted(v for _, v in buckets))
        self.assertEqual(buckets[-1][1], metric(last, "webhook_admission_duration_seconds_count"))
        self.assertEqual(buckets[0][0], 0.0001)
        self.assertEqual(buckets[-2][0], 10.0)
        # In flight: nothing once the answers are in (a scrape is not an admission).
        self.assertEqual(metric(last, "webhook_admission_in_flight"), 0)

    @staticmethod
    def build_labels(samples):
        for (name, labels), _ in samples.items():
            if name == "webhook_build_info":
                return dict(labels)
        raise AssertionError("no webhook_build_info")


class ShutdownTest(WebhookCase):

    def test_sigterm_under_load(self):
        # grace 6 s: accepting for at most 4 s (load never lets in-flight reach 0), then
        # 2 s for the requests already accepted.
        env = self.start_env(args=["--leader-elect=true", "--shutdown-grace", "6s"])
        wh = env.webhook
        rev = self.admission(env)
        body = json.dumps(rev).encode()
        ctx = harness.https_context(env.certs["ca.crt"])
        stop = threading.Event()
        lock = threading.Lock()
        stats = {"ok": 0, "ok_after": 0, "lost": [], "not_started": 0}
        signalled = threading.Event()
        t_signal = [time.monotonic()]   # when SIGTERM was sent, for failure messages
        # The Lease is held before the signal (leader election on).
        deadline = time.monotonic() + 15
        while self.lease_holder(env) in (None, ""):
            self.assertLess(time.monotonic(), deadline, "no Lease holder")
            time.sleep(0.1)

        def one(conn):
            """True when answered; False when the connection could not be made
            (listener gone); raises when a started request got no answer."""
            try:
                conn.connect()
            except (OSError, ssl.SSLError):
                return False
            conn.request("POST", harness.WEBHOOK_PATH, body=body,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = json.loads(resp.read())
            if resp.status != 200 or data["response"]["uid"] != rev["request"]["uid"]:
                raise AssertionError("HTTP %d %r" % (resp.status, data))
            return True

        def load():
            while not stop.is_set():
                conn = harness._PinnedHTTPSConnection("127.0.0.1", wh.port, SERVER_NAME, ctx,
                                                      10)
                after = signalled.is_set()
                try:
                    answered = one(conn)
                except Exception as e:   # noqa: BLE001 - a lost in-flight request
                    with lock:
                        stats["lost"].append("%r %.3f s after the signal" %
                                             (e, time.monotonic() - t_signal[0]))
                    answered = True
                finally:
                    conn.close()
                with lock:
                    if not answered:
                        stats["not_started"] += 1
                    elif after:
                        stats["ok_after"] += 1
                    else:
                        stats["ok"] += 1
                if not answered:
                    time.sleep(0.02)

        threads = [threading.Thread(target=load) for _ in range(4)]
        for t in threads:
            t.start()
        try:
            time.sleep(1.0)
            signalled.set()
            t_signal[0] = time.monotonic()
            wh.process.proc.send_signal(signal.SIGTERM)
            # Readiness flips at once (well within the 2 s minimum drain).
            deadline = time.monotonic() + 2
            while True:
                status = self.readyz(wh)
                if status == 503:
                    break
                self.assertLess(time.monotonic(), deadline, "/readyz still %s" % status)
            rc = wh.process.proc.wait(timeout=30)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        self.assertEqual(rc, 0)
        self.assertEqual(stats["lost"], [])
        self.assertGreater(stats["ok"], 0)
        self.assertGreater(stats["ok_after"], 0)   # still served after the signal
        log = wh.process.log()
        self.assertIn('"msg":"drained"', log)
        self.assertIsNone(wh.process.sanitizer_report())
        self.assertIn(self.lease_holder(env), (None, ""))   # released for the successor

    def test_sigterm_with_a_reconcile_backlog_at_a_low_rate(self):
        """At --kube-api-qps 1 with a reconcile backlog, the four workers sleep on tokens
        reserved seconds ahead, and each finished its Job at the rate before the process
        could exit. A stop now ends every wait in the client's rate limiter
        (k8s_client_close): the workers' last requests go out at once. The Lease's
        release, on a client of its own, is never queued behind them."""
        backlog = harness.backlog_jobs(12)
        env = harness.Env(jobs=backlog,
                          webhook_args=["--leader-elect=true", "--shutdown-grace", "1s",
                                        "--kube-api-qps", "1", "--kube-api-burst", "1"])
        self.addCleanup(env.close)
        env.start()
        wh = env.webhook
        deadline = time.monotonic() + harness.startup_timeout() * 3
        while self.lease_holder(env) in (None, ""):
            self.assertLess(time.monotonic(), deadline, "no Lease holder")
            time.sleep(0.1)
        # The backlog is under way (12 Jobs of about 5 requests each at 1/s: a minute).
        while sum(1 for r in env.api.requests()
                  if re.search(r"/(configmaps|services|networkpolicies)\b", r["path"])) < 4:
            self.assertLess(time.monotonic(), deadline, "no reconcile requests")
            time.sleep(0.1)
        wh.process.proc.send_signal(signal.SIGTERM)
        # Held by the rate, the stop took 20 s and more here (each worker's Job at 1/s,
        # after the drain); free of it, the drain (1 s) and a few requests.
        try:
            rc = wh.process.proc.wait(timeout=12)
        except subprocess.TimeoutExpired:
            self.fail("serve did not exit within 12 s of SIGTERM: the rate limiter's queue "
                      "holds the stop")
        self.assertEqual(rc, 0, wh.process.log()[-3000:])
        self.assertIn(self.lease_holder(env), (None, ""))   # released for the successor
        self.assertIsNone(wh.process.sanitizer_report())

    def readyz(self, wh):
        conn = wh.connection(timeout=5)
        try:
            conn.request("GET", "/readyz")
            resp = conn.getresponse()
            resp.read()
            return resp.status
        except (OSError, http.client.HTTPException) as e:
            return repr(e)
        finally:
            conn.close()


class LeaseRateTest(WebhookCase):

    def test_renewals_do_not_queue_behind_the_reconciler(self):
        """At --kube-api-qps 0.2 with a reconcile backlog, a renewal through the shared
        rate limiter waited behind the workers' reserved tokens (5 s each), past the 3 s
        renew deadline: the leader gave the Lease up. The Lease's client is its own, with
        no limit: a renewal each retry period (1 s) while the reconcilers queue."""
        env = harness.Env(jobs=harness.backlog_jobs(12),
                          webhook_args=["--leader-elect=true", "--kube-api-qps", "0.2",
                                        "--kube-api-burst", "1",
                                        "--leader-elect-lease-duration=4s",
                                        "--leader-elect-renew-deadline=3s",
                                        "--leader-elect-retry-period=1s"])
        self.addCleanup(env.close)
        env.start()
        lease = "/apis/coordination.k8s.io/v1/namespaces/default/leases/volcano-plugin-webhook"

        def renewals():
            return sum(1 for r in env.api.requests() if r["method"] == "PUT"
                       and r["path"] == lease)
        deadline = time.monotonic() + harness.startup_timeout() * 3
        # The reconcilers are queued on the limiter once the first reconcile request went.
        while not any(re.search(r"/(configmaps|services|networkpolicies)\b", r["path"])
                      for r in env.api.requests()):
            self.assertLess(time.monotonic(), deadline, "no reconcile request")
            time.sleep(0.1)
        before = renewals()
        while renewals() < before + 8:
            self.assertLess(time.monotonic(), deadline,
                            "%d renewals while the reconcilers queue" % (renewals() - before))
            time.sleep(0.1)
        self.assertTrue(self.lease_holder(env))
        log = env.webhook.process.log()
        self.assertNotIn("stopped leading", log)
        self.assertNotIn("cannot renew", log)


class SlowlorisTest(WebhookCase):

    N_SLOW = 200
    REQUEST_TIMEOUT = 2.0

    def test_slow_clients_closed_good_client_served(self):
        env = self.start_env(args=["--request-timeout", "2s", "--connection-idle-timeout", "30s"])
        wh = env.webhook
        rev = self.admission(env)
        ctx = tls_client([env.certs["ca.crt"]])
        slow = []
        started = time.monotonic()
        for i in range(self.N_SLOW):
            s = handshake(wh.port, ctx)
            if i % 2:
                # headers a byte at a time
                s.sendall(b"POST /pods/mutate HTTP/1.1\r\nHost: x\r\n")
            else:
                # complete headers, then the body a byte at a time
                s.sendall(b"POST /pods/mutate HTTP/1.1\r\nHost: x\r\n"
                          b"Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n{")
            s.setblocking(False)
            slow.append({"sock": s, "closed_at": None, "opened_at": time.monotonic()})
        answered = 0
        failures = []
        keep = wh.connection()
        deadline = started + 30
        next_trickle = 0.0
        while any(c["closed_at"] is None for c in slow) and time.monotonic() < deadline:
            now = time.monotonic()
            if now >= next_trickle:
                next_trickle = now + 0.3
                for c in slow:
                    if c["closed_at"] is not None:
                        continue
                    try:
                        c["sock"].send(b"a")
                    except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
                        pass
                    except OSError:
                        c["closed_at"] = time.monotonic()
            readable, _, _ = select.select([c["sock"] for c in slow if c["closed_at"] is None],
                                           [], [], 0)
            for c in slow:
                if c["closed_at"] is None and c["sock"] in readable:
                    try:
                        data = c["sock"].recv(4096)
                    except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        c["closed_at"] = time.monotonic()
                    else:
                        failures.append("slow client got an answer: %r" % data[:80])
            # The well-behaved client: one admission on the keep-alive connection and one
            # on a new connection per round.
            for conn in (keep, wh.connection()):
                try:
                    conn.request("POST", harness.WEBHOOK_PATH, body=json.dumps(rev).encode(),
                                 headers={"Content-Type": "application/json"})
                    resp = conn.getresponse()
                    data = json.loads(resp.read())
                    if resp.status != 200 or data["response"]["uid"] != rev["request"]["uid"]:
                        failures.append("HTTP %d %r" % (resp.status, data))
                    answered += 1
                except Exception as e:   # noqa: BLE001
                    failures.append(repr(e))
                if conn is not keep:
                    conn.close()
        keep.close()
        for c in slow:
            c["sock"].close()
        still_open = sum(1 for c in slow if c["closed_at"] is None)
        self.assertEqual(still_open, 0, "slow connections not closed within 30 s")
        self.assertEqual(failures, [])
        self.assertGreater(answered, 10)
        # Closed by the server's request timer, not before it (a lower bound cannot flake).
        earliest = min(c["closed_at"] - c["opened_at"] for c in slow)
        self.assertGreaterEqual(earliest, self.REQUEST_TIMEOUT * 0.9)
        self.assertIn('"msg":"http: closed connections over their time"', wh.process.log())


if __name__ == "__main__":
    unittest.main()
