# SPDX-License-Identifier: Apache-2.0
"""`serve` at start-up, as a crash-looping replica meets it, against tests/apiserver.py.

A replica that cannot serve never leads: with its port taken, the binary exits 1
before anything reaches the API server (no Lease, no LIST, no caBundle patch), so
it cannot grab the Lease in a crash loop. And the default --bind-address (::)
listens on IPv4 and IPv6 both.
"""
import json
import os
import socket
import subprocess
import unittest

import harness


def ipv6_loopback():
    """Whether this kernel can listen on [::1] (the dual-stack test needs it)."""
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def log_errors(text):
    """The msg of every error line of the webhook's log (JSON lines)."""
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("level") == "error":
            out.append(entry["msg"])
    return out


class PortTakenTest(unittest.TestCase):
    def setUp(self):
        self.env = harness.Env(jobs=[harness.load_job("mpi-job")], start_webhook=False)
        self.addCleanup(self.env.close)
        self.env.start()
        self.taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(self.taken.close)
        self.taken.bind(("127.0.0.1", 0))
        self.taken.listen(8)
        self.port = self.taken.getsockname()[1]

    def test_exits_before_any_api_request(self):
        certs = self.env.certs
        cases = [
            ("files, 127.0.0.1", "127.0.0.1",
             ["--bind-address", "127.0.0.1", "--tls-cert-file", certs["tls.crt"],
              "--tls-private-key-file", certs["tls.key"]]),
            # :: takes IPv4 too, so 127.0.0.1's listener is in its way as well
            ("--self-signed (managed, the Secret in memory), default address", "::", ["--self-signed"]),
        ]
        for name, address, args in cases:
            with self.subTest(name):
                self.env.api.clear_requests()
                p = subprocess.run([harness.binary(), "serve", "--port", str(self.port),
                                    "--kubeconfig", self.env.kubeconfig] + args,
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertEqual(log_errors(p.stderr),
                                 ["cannot listen on %s port %d: Address already in use"
                                  % (address, self.port)])
                requests = self.env.api.requests()
                self.assertEqual([r for r in requests if "/leases" in r["path"]], [])
                self.assertEqual([r for r in requests if r["method"] != "GET"], [])
                self.assertEqual(requests, [])  # not even the informer's LIST


class DualStackTest(unittest.TestCase):
    def setUp(self):
        self.env = harness.Env(start_webhook=False)
        self.addCleanup(self.env.close)
        self.env.start()
        self.ctx = harness.https_context(self.env.certs["ca.crt"])

    def start(self, args):
        port_file = os.path.join(self.env.dir, "dual.port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        proc = harness.Process("dual", [
            harness.binary(), "serve", "--port", "0", "--port-file", port_file,
            "--tls-cert-file", self.env.certs["tls.crt"],
            "--tls-private-key-file", self.env.certs["tls.key"],
            "--kubeconfig", self.env.kubeconfig, "--leader-elect=false"] + args,
            self.env.dir).start()
        self.addCleanup(proc.stop)
        return proc, proc.wait_port_file(port_file)

    def healthz(self, address, port):
        conn = harness._PinnedHTTPSConnection(address, port, harness.service_dns(), self.ctx, 10)
        try:
            conn.request("GET", "/healthz")
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()

    @unittest.skipUnless(ipv6_loopback(), "no IPv6 loopback on this machine")
    def test_default_address_serves_ipv4_and_ipv6(self):
        proc, port = self.start([])
        self.assertEqual(self.healthz("127.0.0.1", port), (200, "ok"))
        self.assertEqual(self.healthz("::1", port), (200, "ok"))
        self.assertIn('"address":"::"', [l for l in proc.log().splitlines()
                                         if '"msg":"serving"' in l][0])
        self.assertEqual(proc.stop(), 0)

    @unittest.skipUnless(ipv6_loopback(), "no IPv6 loopback on this machine")
    def test_ipv4_address_serves_ipv4_only(self):
        proc, port = self.start(["--bind-address", "127.0.0.1"])
        self.assertEqual(self.healthz("127.0.0.1", port), (200, "ok"))
        with self.assertRaises(ConnectionRefusedError):
            self.healthz("::1", port)
        self.assertEqual(proc.stop(), 0)


if __name__ == "__main__":
    unittest.main()
