#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""soak.py - the webhook under valgrind memcheck for a while, with mixed admissions and
Job churn through the test API server: no memcheck error, no definite leak. Run by
tests/soak.sh (`make soak`).

    tests/soak.py [--seconds 60] [--seed N] [--keep]

What it does: starts tests/apiserver.py (HTTPS, token, garbage collection 30 s after an
owner goes, so the webhook's own teardown normally removes the objects of a deleted Job
first; garbage collection covers Jobs deleted while the webhook stood by, as it does in a
cluster: under valgrind's pace the short Lease is sometimes lost and taken again) and
`valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1
$BUILD/volcano-plugin-webhook serve` with leader election on (short lease), a short
resync, and request/idle time limits of 120 s for valgrind's pace (see ARGS). For
--seconds it mixes, at random (seeded, so a run can be repeated): Job creates (six
example Jobs under numbered names), scale-ups/-downs, phase Completed,
deletes, AdmissionReviews for pods of live Jobs (every answer must be HTTP 200 and
well-formed; each patch must apply), and TLS 1.2 handshakes the client refuses with an
alert (it trusts no certificate of the webhook's). Then it waits until the objects converge (exactly
those of the live, non-terminal Jobs, each once), stops the webhook with SIGTERM and
requires exit status 0 (valgrind's error exit status is 1), "ERROR SUMMARY: 0 errors"
and no definitely lost bytes in valgrind's log.

Exit status 0 on success, 1 with the reason on stderr otherwise. Small scale on purpose:
under valgrind the binary runs some 20-50 times slower.
"""

import argparse
import os
import random
import re
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import time
import traceback

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)
# Longer start-up waits in the harness (valgrind starts slowly); also makes sanitizer
# markers in the webhook's output count as failures, which valgrind never prints.
os.environ.setdefault("SANITIZER", "valgrind")

import harness  # noqa: E402
import test_reconcile as tr  # noqa: E402

NS = "soak"
EXAMPLES = ["mpi-job", "pytorch-job", "ray-cluster-job", "lm-mpi-job",
            "tensorflow-dist-mnist", "pytorch-job"]
ARGS = ["--leader-elect-resource-namespace=soak-system", "--leader-elect-lease-duration=8s",
        "--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=2s",
        "--resync-period=5s", "--reconcile-workers=2", "--watch-idle-timeout=20s", "-v", "2",
        # Server time limits at valgrind's pace, as the client's 120 s in Soak.admit. Under
        # memcheck all threads take turns on one lock that is not fair, so a reconcile
        # worker's RSA key generation (ssh plugin) stalls the whole process for seconds
        # (16-17 s seen in CI). --request-timeout counts from accept (TLS handshake,
        # headers, body): a request the client had sent whole was then closed unanswered
        # by the reaper or the body check in access_handler ("Remote end closed connection
        # without response"). That is the limit doing its job on a stalled clock, not a
        # server fault; slow clients meet these limits natively in tests/test_hostile.py and
        # tests/test_operations.py. The idle limit (MHD's own) gets the same margin.
        "--request-timeout=120s", "--connection-idle-timeout=120s"]
MAX_LIVE = 6


def log(msg):
    sys.stderr.write("soak: %s\n" % msg)
    sys.stderr.flush()


def valgrind_wrapper(path, vlog):
    """A script run as `EXE serve FLAGS...` that execs the binary under memcheck."""
    supp = os.path.join(TESTS, "valgrind.supp")
    # The binary links mimalloc (Makefile ALLOCATOR); memcheck's preloaded malloc still
    # comes first in symbol lookup, so it sees every block (same heap counts either way).
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec valgrind --tool=memcheck --leak-check=full "
                "--errors-for-leak-kinds=definite --error-exitcode=1 --num-callers=30 "
                "--suppressions=%s --log-file=%s %s \"$@\"\n" % (supp, vlog, harness.binary()))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


class Soak:
    def __init__(self, env, rng):
        self.env = env
        self.api = env.api
        self.c = tr.Cluster(env.api)
        self.rng = rng
        self.live = {}        # name -> example, non-terminal Jobs
        self.done = set()     # Completed Jobs (still exist, objects gone)
        self.serial = 0
        self.counts = {}

    def count(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1

    def create(self):
        ex = self.rng.choice(EXAMPLES)
        self.serial += 1
        name = "%s-%d" % (ex, self.serial)

        def rename(job):
            job["metadata"]["name"] = name
        self.c.create_job(ex, NS, rename)
        self.live[name] = ex
        self.count("create")

    def job(self, name):
        return self.api.job(NS, name)

    def scale(self):
        name = self.rng.choice(sorted(self.live))
        job = self.job(name)
        task = self.rng.choice(job["spec"]["tasks"])
        task["replicas"] = max(1, min(5, int(task.get("replicas") or 1) + self.rng.choice(
            (-1, 1, 2))))
        if self.live[name] == "ray-cluster-job" and task["name"] == "head":
            task["replicas"] = 1
        self.c.put_job(job)
        self.count("scale")

    def complete(self):
        name = self.rng.choice(sorted(self.live))
        job = self.job(name)
        job["status"] = {"state": {"phase": "Completed"}}
        self.c.put_job(job, "/status")
        del self.live[name]
        self.done.add(name)
        self.count("complete")

    def delete(self):
        pool = sorted(self.live) + sorted(self.done)
        name = self.rng.choice(pool)
        self.c.delete(tr.JOBS % NS + "/" + name)
        self.live.pop(name, None)
        self.done.discard(name)
        self.count("delete")

    def admit(self):
        name = self.rng.choice(sorted(self.live))
        job = self.job(name)
        pods = harness.pod_names(job)
        task, i = self.rng.choice(pods)
        pod = harness.build_pod(job, task, i)
        rev = harness.review(pod, NS)
        # Webhook.admit's checks, with a timeout for valgrind's pace (it runs one thread
        # at a time, and a reconcile worker may be generating an RSA key meanwhile)
        status, body = self.env.webhook.post(rev, timeout=120)
        if status != 200 or not isinstance(body, dict) or body.get("kind") != rev["kind"] \
                or body.get("apiVersion") != rev["apiVersion"]:
            raise AssertionError("admission answered HTTP %d: %r" % (status, body))
        resp = body.get("response") or {}
        if resp.get("uid") != rev["request"]["uid"]:
            raise AssertionError("response.uid does not match: %r" % (body,))
        if resp.get("allowed"):
            harness.apply_patch(pod, resp)
        self.count("admit")

    def refuse(self):
        # A client that trusts none of the webhook's certificates: over TLS 1.2 it answers
        # the server's hello with the alert unknown_ca, which the webhook reads while the
        # session lives (server_tls_handshake_failed), not after libmicrohttpd frees it.
        ctx = ssl.create_default_context()
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        with socket.create_connection(("127.0.0.1", self.env.webhook.port), 120) as s:
            try:
                ctx.wrap_socket(s, server_hostname="volcano-plugin-webhook.default.svc").close()
            except ssl.SSLCertVerificationError:
                self.count("refused handshake")
                return
        raise AssertionError("a client that trusts no certificate of the webhook's finished "
                             "a handshake")

    def step(self):
        ops = [self.create] if len(self.live) < MAX_LIVE else []
        if self.live:
            ops += [self.admit, self.admit, self.admit, self.scale, self.complete, self.delete,
                    self.refuse]
        elif self.done:
            ops.append(self.delete)
        self.rng.choice(ops or [self.create])()

    def wait_converged(self, timeout):
        jobs = [self.job(n) for n in sorted(self.live)]
        want = sorted(k for j in jobs for k in tr.expected_objects(j))

        def exact():
            if self.c.names(NS) != want:
                return None
            for j in jobs:
                for key, obj in tr.expected_objects(j).items():
                    got = self.c.get(NS, key[0], key[1])
                    if got is None or (obj is not None and tr.strip(got) != obj):
                        return None
            return True
        try:
            tr.wait_for(exact, "convergence", timeout=timeout, interval=0.5)
        except AssertionError:
            raise AssertionError("objects did not converge:\n have %r\n want %r"
                                 % (self.c.names(NS), want)) from None
        return len(want)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    opts = ap.parse_args()
    seed = opts.seed if opts.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    if subprocess.run(["valgrind", "--version"], capture_output=True).returncode != 0:
        log("valgrind not found (apt-get install valgrind)")
        return 1
    if not os.access(harness.binary(), os.X_OK):
        log("%s not built" % harness.binary())
        return 1
    work = tempfile.mkdtemp(prefix="vpw-soak-")
    vlog = os.path.join(work, "valgrind.log")
    exe = valgrind_wrapper(os.path.join(work, "webhook-under-valgrind"), vlog)
    if opts.keep:
        os.environ["KEEP_TEST_DIRS"] = "1"
    env = harness.Env(webhook_args=ARGS, webhook_exe=exe, start_webhook=False)
    ok = False
    try:
        env.start()
        env.api._control("POST", "/_test/gc", {"enabled": True, "delay_ms": 30000})
        env.start_webhook_now()
        log("seed %d, %gs, webhook under valgrind (log %s), work dir %s"
            % (seed, opts.seconds, vlog, env.dir))
        soak = Soak(env, rng)
        soak.refuse()  # at least one, whatever the seed draws
        end = time.monotonic() + opts.seconds
        while time.monotonic() < end:
            soak.step()
            time.sleep(rng.uniform(0.05, 0.3))
            if not env.webhook.process.alive():
                raise AssertionError("the webhook died:\n" + env.webhook.process.log()[-4000:])
        log("operations: %s" % ", ".join("%s %d" % kv for kv in sorted(soak.counts.items())))
        n = soak.wait_converged(timeout=90.0)
        log("converged: %d objects for %d live Jobs" % (n, len(soak.live)))
        proc = env.webhook.process.proc
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("the webhook did not exit within 90 s of SIGTERM")
        with open(vlog, encoding="utf-8", errors="replace") as f:
            report = f.read()
        summary = re.search(r"ERROR SUMMARY: (\d+) errors", report)
        definite = re.search(r"definitely lost: ([\d,]+) bytes", report)
        lost = int(definite.group(1).replace(",", "")) if definite else 0
        log("exit status %d, %s, definitely lost %d bytes" % (
            rc, summary.group(0) if summary else "no ERROR SUMMARY", lost))
        if rc != 0 or summary is None or summary.group(1) != "0" or lost != 0:
            sys.stderr.write(report[-20000:])
            raise AssertionError("valgrind reported errors or leaks (log: %s)" % vlog)
        ok = True
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)
    except Exception as e:  # noqa: BLE001 - any failure: report it with the seed
        # The traceback says which call failed (webhook admission or API server REST).
        sys.stderr.write(traceback.format_exc())
        log("FAILED: %s: %s" % (type(e).__name__, e))
        os.environ["KEEP_TEST_DIRS"] = "1"
    finally:
        try:
            env.close()
        except AssertionError as e:
            log("FAILED at close: %s" % e)
            ok = False
    log("PASS" if ok else "FAIL (seed %d; work dir kept: %s)" % (seed, work))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
