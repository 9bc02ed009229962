"""`serve` at start-up, as a crash-looping replica meets it, against tests/apiserver.py.

A replica that cannot serve never leads: with its port taken, the binary exits 1
before anything reaches the API server (no Lease, no LIST, no caBundle patch), so
it cannot grab the Lease in a crash loop.
"""
import json
import socket
import subprocess
import unittest

import harness


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
            ("--self-signed (caBundle patch), default address", "0.0.0.0", ["--self-signed"]),
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


if __name__ == "__main__":
    unittest.main()
