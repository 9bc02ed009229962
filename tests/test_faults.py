# SPDX-License-Identifier: Apache-2.0
"""test_faults.py - the real binary against a misbehaving API server, which must make it
neither lose nor duplicate objects: answers cut mid-body, invalid JSON, wrong content
types, 429 with Retry-After, 5xx storms, watch streams that stall without closing,
every watch answered 410, clocks far off.

Each scenario churns Jobs while the faults last (create, scale, delete, admissions) and
then checks, once the faults have lapsed, that every Job's objects converge: exactly the
set the live Jobs call for (each once, content exact), nothing left of deleted Jobs
(garbage collection is off, so only the webhook's own teardown can remove them), and the
ssh keys of a Job that existed before the faults unchanged (Secret data id_rsa).

Timing asserts are lower bounds taken from the API server's own request log (the client
waited at least Retry-After; the stalled watch was abandoned no sooner than the idle
timeout) with generous upper bounds; every wait polls with a deadline.
"""

import http.client
import json
import os
import time
import unittest

import harness
import test_reconcile as tr

IDLE = 3.0            # --watch-idle-timeout of the webhook under test, seconds
RESYNC = "2s"
FAULT_MS = 3000       # how long a fault storm lasts
WAIT = 40.0 if os.environ.get("SANITIZER") else 25.0
OBJECTS = "(configmaps|secrets|services|networkpolicies)"
WATCH = r"/apis/batch\.volcano\.sh/v1alpha1/jobs\?.*watch="
LIST = r"/apis/batch\.volcano\.sh/v1alpha1/jobs\?limit="


def objects_of(ns):
    """path_regex for every auxiliary object request of namespace ns."""
    return "/namespaces/%s/%s" % (ns, OBJECTS)


class FaultTestBase(unittest.TestCase):
    """One API server (GC off) and one replica (--leader-elect=false) per class."""

    ARGS = ["--leader-elect=false", "--resync-period=" + RESYNC, "--reconcile-workers=4",
            "--watch-idle-timeout=%ds" % IDLE, "-v", "3"]

    @classmethod
    def setUpClass(cls):
        cls.env = harness.Env(webhook_args=cls.ARGS)
        cls.env.start()
        cls.api = cls.env.api
        cls.c = tr.Cluster(cls.api)
        cls.api._control("POST", "/_test/gc", {"enabled": False})

    @classmethod
    def tearDownClass(cls):
        cls.env.close()

    def tearDown(self):
        self.api.clear_faults()
        self.assertTrue(self.env.webhook.process.alive(), self.env.webhook.process.log())

    # ---- helpers ----

    def restart_webhook(self):
        """Stop the replica and start a new one (everything is first seen again)."""
        self.env.webhook.stop()
        os.unlink(os.path.join(self.env.dir, "webhook.port"))
        return self.env.start_webhook_now()

    def secret_keys(self, ns, job):
        s = self.c.get(ns, "secrets", job["metadata"]["name"] + "-ssh")
        return None if s is None else s["data"]["id_rsa"]

    def wait_converged(self, ns, jobs, timeout=WAIT):
        """Wait until ns holds exactly the objects of `jobs` (fresh copies from the API
        server), with exact content, for up to `timeout` seconds; assert it."""
        jobs = [self.api.job(ns, j["metadata"]["name"]) for j in jobs]
        want = sorted(k for j in jobs for k in tr.expected_objects(j))

        def exact():
            if self.c.names(ns) != want:
                return None
            for j in jobs:
                for key, obj in tr.expected_objects(j).items():
                    got = self.c.get(ns, key[0], key[1])
                    if got is None:
                        return None
                    if obj is None:
                        data = {k: tr.b64d(v) for k, v in got["data"].items()}
                        if data.get("config") != tr.ssh_config(j):
                            return None
                    elif tr.strip(got) != obj:
                        return None
            return True
        try:
            tr.wait_for(exact, "objects of %s to converge" % ns, timeout=timeout, interval=0.2)
        except AssertionError:
            self.assertEqual(self.c.names(ns), want)  # the more telling message
            raise
        for j in jobs:
            for key, obj in tr.expected_objects(j).items():
                got = self.c.get(ns, key[0], key[1])
                if obj is None:
                    tr.ReconcileTest.check_secret(self, j, got)
                else:
                    self.assertEqual(tr.strip(got), obj, key)
        return jobs

    def admit_some(self, job):
        """Admissions during the faults: any well-formed answer will do (allowed with a
        patch, or denied when the Job cannot be read); the server must keep answering."""
        for task, i in harness.pod_names(job)[:2]:
            pod = harness.build_pod(job, task, i)
            status, body = self.env.webhook.post(harness.review(pod, job["metadata"]["namespace"]))
            self.assertEqual(status, 200, body)
            self.assertIn("allowed", body["response"])

    def churn_under(self, ns, faults):
        """A Job converged before the faults; then, with `faults` active for FAULT_MS:
        two more Jobs created, the first scaled, one deleted, admissions. After the
        faults lapse: convergence and the first Job's ssh keys unchanged."""
        first = self.c.create_job("mpi-job", ns)
        self.wait_converged(ns, [first])
        keys = self.secret_keys(ns, first)
        self.assertTrue(keys)
        rules = []
        for f in faults:
            f = dict(f)
            f.setdefault("count", -1)
            f.setdefault("for_ms", FAULT_MS)
            rules.append(f)
        failed_before = self.hook_failures()
        t0 = time.monotonic()
        self.api.add_faults(rules)
        gone = self.c.create_job("pytorch-job", ns)
        ray = self.c.create_job("ray-cluster-job", ns)
        job = self.api.job(ns, "mpi-job")
        next(t for t in job["spec"]["tasks"] if t["name"] == "mpiworker")["replicas"] = 4
        self.c.put_job(job)
        self.admit_some(job)
        time.sleep(1.0)
        self.c.delete(tr.JOBS % ns + "/pytorch-job")
        self.admit_some(ray)
        time.sleep(max(0.0, FAULT_MS / 1000.0 - (time.monotonic() - t0)) + 0.2)
        self.api.clear_faults()
        self.wait_converged(ns, [job, ray])
        self.assertEqual(self.secret_keys(ns, first), keys, "ssh keys changed")
        self.assertNotIn(("secrets", "pytorch-job-ssh"), self.c.names(ns))
        # the faults did bite: reconciles failed while they lasted
        self.assertGreater(self.hook_failures(), failed_before)
        return gone

    def hook_failures(self):
        return sum(1 for e in tr.log_events(self.env.webhook)
                   if e.get("msg") == "reconcile: hook failed")


class ApiFaultsTest(FaultTestBase):

    def test_truncated_bodies(self):
        """Every object request answered (after it was carried out) with a body cut
        mid-way and the connection dropped: creates that happened although the client
        saw an error must not be duplicated, and keys must not be regenerated."""
        self.churn_under("trunc", [{"path_regex": objects_of("trunc"),
                                    "truncate_body_bytes": 25}])

    def test_invalid_json_bodies(self):
        """200 with a body that is not JSON (carried out, answer replaced)."""
        self.churn_under("badjson", [{"path_regex": objects_of("badjson"),
                                      "body_override": "{\"kind\": \"Status\", \"metadata\""}])

    def test_wrong_content_types(self):
        """A proxy's HTML error page with status 200 (not carried out), and real JSON
        answers labelled text/plain (carried out)."""
        self.churn_under("ctype", [
            {"method": "POST", "path_regex": objects_of("ctype"), "status": 200,
             "content_type": "text/html", "count": 6,
             "body_override": "<html><body>502 Bad Gateway</body></html>"},
            {"path_regex": objects_of("ctype"), "content_type": "text/plain"}])

    def test_5xx_storm(self):
        """500 and 503 (no Retry-After) on every object request for a while."""
        self.churn_under("storm", [
            {"method": "GET", "path_regex": objects_of("storm"), "status": 503,
             "reason": "ServiceUnavailable", "message": "storm"},
            {"path_regex": objects_of("storm"), "status": 500, "reason": "InternalError",
             "message": "storm"}])

    def test_retry_after_honoured(self):
        """429 with Retry-After: 2 on a create: the next try comes no sooner than 2 s
        later (the server's clock), and the Job converges."""
        ns = "retry"
        self.api.add_faults({"method": "POST", "path_regex": "/namespaces/retry/configmaps$",
                             "status": 429, "reason": "TooManyRequests",
                             "message": "slow down", "retry_after": "2", "count": 1})
        self.api.clear_requests()
        job = self.c.create_job("pytorch-job", ns)
        self.wait_converged(ns, [job])
        posts = [r["time"] for r in self.api.requests()
                 if r["method"] == "POST" and r["path"] == "/api/v1/namespaces/retry/configmaps"]
        self.assertGreaterEqual(len(posts), 2, posts)
        self.assertGreaterEqual(posts[1] - posts[0], 1.9, posts)
        self.assertLess(posts[1] - posts[0], 15.0, posts)

    def test_informer_list_and_watch_faults(self):
        """A restart into a bad API: the Job LIST cut mid-body, then invalid JSON, then
        429 with Retry-After; watches answered with garbage, HTML, then 429 with
        Retry-After. The informer must wait out each Retry-After and end with every Job
        reconciled."""
        ns = "informer"
        self.env.webhook.stop()
        job = self.c.create_job("mpi-job", ns)
        self.api.clear_requests()
        self.api.add_faults([
            {"method": "GET", "path_regex": LIST, "truncate_body_bytes": 30, "count": 1},
            {"method": "GET", "path_regex": LIST, "body_override": "[1, 2", "count": 1},
            {"method": "GET", "path_regex": LIST, "status": 429, "reason": "TooManyRequests",
             "message": "slow down", "retry_after": "1", "count": 1},
            {"method": "GET", "path_regex": WATCH, "body_override": "{\"type\": \"ADDED\"\n",
             "count": 1},
            {"method": "GET", "path_regex": WATCH, "status": 200, "content_type": "text/html",
             "body_override": "<html>oops</html>\n", "count": 1},
            {"method": "GET", "path_regex": WATCH, "status": 429, "reason": "TooManyRequests",
             "message": "slow down", "retry_after": "2", "count": 1},
        ])
        self.restart_webhook()
        self.wait_converged(ns, [job])
        # A Job created now must arrive through a working watch, which comes after the
        # three bad watches: failures 3 to 5 in a row (the LIST's 429 is retried inside
        # the client, k8s/client.c retry_max 2), each followed by the informer's backoff,
        # and the 429's Retry-After (2 s) waited out on top.
        job2 = self.c.create_job("ray-cluster-job", ns)
        watch_faults = tr.informer_backoffs(5) - tr.informer_backoffs(2) + 2
        self.wait_converged(ns, [job, job2], timeout=watch_faults + WAIT)
        reqs = self.api.requests()
        lists = [r["time"] for r in reqs if r["path"].endswith("/v1alpha1/jobs")
                 and "watch=" not in r["query"]]
        watches = [r["time"] for r in reqs if r["path"].endswith("/v1alpha1/jobs")
                   and "watch=" in r["query"]]
        self.assertGreaterEqual(len(lists), 4, lists)
        self.assertGreaterEqual(len(watches), 4, watches)
        self.assertGreaterEqual(lists[3] - lists[2], 0.9, lists)      # Retry-After: 1
        self.assertGreaterEqual(watches[3] - watches[2], 1.9, watches)  # Retry-After: 2
        self.assertLess(watches[3] - watches[2], 15.0, watches)

    def test_watch_gone_storm_throttled(self):
        """The first four WATCHes answered 410 Gone (a broken proxy): the LIST after
        each succeeds but nothing is ever watched, so each 410 counts as a failure and
        the next LIST comes after a growing backoff (the default 0.5 s, doubling, drawn
        from [d/2, d]); it was a storm of ~23 LISTs a second. Gaps are measured on the
        server's clock (lower bounds only). The fifth WATCH works and brings a new Job:
        exactly 5 LISTs and 5 WATCHes in all."""
        ns = "gonestorm"
        self.env.webhook.stop()
        self.api.clear_requests()
        self.api.add_faults({"method": "GET", "path_regex": WATCH, "status": 410,
                             "reason": "Expired", "message": "too old resource version",
                             "count": 4})

        def jobs_requests(watch):
            return [r["time"] for r in self.api.requests()
                    if r["path"] == "/apis/batch.volcano.sh/v1alpha1/jobs"
                    and ("watch=" in r["query"]) == watch]

        self.restart_webhook()
        # four 410s, each a failure followed by the informer's backoff, before the fifth
        tr.wait_for(lambda: len(jobs_requests(True)) >= 5, "the fifth watch",
                    timeout=tr.informer_backoffs(4) + WAIT)
        job = self.c.create_job("pytorch-job", ns)
        self.wait_converged(ns, [job])
        lists, watches = jobs_requests(False), jobs_requests(True)
        self.assertEqual(len(lists), 5, lists)
        self.assertEqual(len(watches), 5, watches)
        for k in range(1, 5):   # WATCH k (410) -> LIST k+1: at least 0.25 * 2^(k-1) s
            self.assertGreaterEqual(lists[k] - watches[k - 1], 0.25 * 2 ** (k - 1),
                                    (k, lists, watches))
        self.assertIn("nothing watched since the list", self.env.webhook.process.log())

    def test_stalled_watch_reconnects(self):
        """A watch that sends headers and then nothing, without closing: the informer
        gives up on it after the idle timeout, watches again, and a Job created during the
        stall is reconciled."""
        ns = "stall"
        self.env.webhook.stop()
        self.api.clear_requests()
        self.api.add_faults({"method": "GET", "path_regex": WATCH, "watch_stall_ms": -1,
                             "count": 1})
        self.restart_webhook()
        tr.wait_for(lambda: [r for r in self.api.requests() if "watch=" in r["query"]],
                    "the first watch")
        job = self.c.create_job("pytorch-job", ns)
        self.wait_converged(ns, [job])
        watches = [r["time"] for r in self.api.requests()
                   if r["path"].endswith("/v1alpha1/jobs") and "watch=" in r["query"]]
        self.assertGreaterEqual(len(watches), 2, watches)
        self.assertGreaterEqual(watches[1] - watches[0], IDLE - 0.5, watches)
        self.assertLess(watches[1] - watches[0], IDLE + 15.0, watches)
        self.assertIn("no data for %d ms" % (IDLE * 1000), self.env.webhook.process.log())


class ApiServerManglersTest(unittest.TestCase):
    """The test API server's answer manglers and clock used above, on their own."""

    def setUp(self):
        self.env = harness.Env(start_webhook=False)
        self.addCleanup(self.env.close)
        self.env.start()
        self.api = self.env.api

    def raw(self, method, path, body=None):
        conn = self.api._conn()
        try:
            data = None if body is None else json.dumps(body).encode()
            conn.request(method, path, body=data, headers={
                "Authorization": "Bearer " + self.api.token, "Content-Type": "application/json"})
            resp = conn.getresponse()
            try:
                return resp.status, resp.getheader("Content-Type"), resp.read()
            except http.client.IncompleteRead as e:
                return resp.status, resp.getheader("Content-Type"), ("cut", e.partial)
        finally:
            conn.close()

    def test_manglers(self):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
        path = "/api/v1/namespaces/m/configmaps"
        self.api.add_faults({"method": "POST", "path_regex": path + "$",
                             "truncate_body_bytes": 10})
        status, ctype, body = self.raw("POST", path, cm)
        self.assertEqual((status, ctype), (201, "application/json"))
        self.assertEqual(body[0], "cut")
        self.assertEqual(len(body[1]), 10)
        self.assertEqual(self.api.get(path + "/a")[0], 200)  # carried out all the same
        self.api.add_faults({"method": "GET", "path_regex": path + "/a$",
                             "body_override": "not json", "content_type": "text/html"})
        self.assertEqual(self.raw("GET", path + "/a"), (200, "text/html", b"not json"))
        self.assertEqual(self.api.get(path + "/a")[0], 200)  # one count only
        self.api._control("POST", "/_test/clock", {"offset_s": 86400 * 365 * 30})
        self.addCleanup(self.api._control, "POST", "/_test/clock", {"offset_s": 0})
        made = self.api.create_objects([dict(cm, metadata={"name": "b", "namespace": "m"})])[0]
        # 30 * 365 days: 29 or 30 years on, depending on the leap days in between
        self.assertIn(int(made["metadata"]["creationTimestamp"][:4]) - time.gmtime().tm_year,
                      (29, 30))


class ClockSkewTest(unittest.TestCase):
    """Far-off clocks: an API server whose wall clock is 50 years ahead (then behind), and
    a Lease left by a ghost holder whose renewTime lies in 2099. Leader election must
    count the lease duration on its own monotonic clock from when it saw the record, and
    reconcile must not care about timestamps."""

    LEASE = "/apis/coordination.k8s.io/v1/namespaces/vpw-system/leases/volcano-plugin-webhook"
    ARGS = ["--leader-elect-resource-namespace=vpw-system", "--leader-elect-lease-duration=3s",
            "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=1s",
            "--resync-period=" + RESYNC, "--watch-idle-timeout=%ds" % IDLE]

    def setUp(self):
        self.env = harness.Env(start_webhook=False)
        self.addCleanup(self.env.close)
        self.env.start()
        self.api = self.env.api
        self.c = tr.Cluster(self.api)
        self.api._control("POST", "/_test/gc", {"enabled": False})
        self.addCleanup(self.api._control, "POST", "/_test/clock", {"offset_s": 0})

    def lease(self):
        status, lease = self.api.get(self.LEASE)
        self.assertEqual(status, 200, lease)
        return lease

    def test_far_future_lease_and_timestamps(self):
        self.api._control("POST", "/_test/clock", {"offset_s": 50 * 365 * 86400})
        self.api.create_objects([{
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "volcano-plugin-webhook", "namespace": "vpw-system"},
            "spec": {"holderIdentity": "ghost_00000000", "leaseDurationSeconds": 3,
                     "acquireTime": "1970-01-01T00:00:00.000000Z",
                     "renewTime": "2099-12-31T23:59:59.999999Z", "leaseTransitions": 7}}])
        job = self.c.create_job("mpi-job", "skew")
        self.assertTrue(job["metadata"]["creationTimestamp"].startswith("20"))
        self.assertGreater(int(job["metadata"]["creationTimestamp"][:4]), 2060)
        w = self.env.start_webhook_now(extra_args=self.ARGS)
        holder = tr.wait_for(lambda: (self.lease()["spec"].get("holderIdentity")
                                      not in ("ghost_00000000", None, "")
                                      and self.lease()["spec"]["holderIdentity"]),
                             "takeover of the ghost's lease", timeout=WAIT)
        self.assertRegex(holder, r"^.+_[0-9a-f]{8}$")
        spec = self.lease()["spec"]
        self.assertEqual(spec["leaseTransitions"], 8)
        self.assertEqual(spec["leaseDurationSeconds"], 3)
        got = self.c.wait_objects(job)
        keys = got[("secrets", "mpi-job-ssh")]["data"]["id_rsa"]
        # the clock jumps 100 years back: new objects get 1975 timestamps
        self.api._control("POST", "/_test/clock", {"offset_s": -50 * 365 * 86400})
        job2 = self.c.create_job("pytorch-job", "skew")
        self.assertLess(int(job2["metadata"]["creationTimestamp"][:4]), 1980)
        self.c.wait_objects(job2)
        job = self.api.job("skew", "mpi-job")
        next(t for t in job["spec"]["tasks"] if t["name"] == "mpiworker")["replicas"] = 3
        job = self.c.put_job(job)
        tr.wait_for(lambda: (self.c.get("skew", "configmaps", "mpi-job-svc") or {})
                    .get("data") == tr.cm_data(job), "ConfigMap follows the scale-up")
        self.assertEqual(self.c.names("skew"),
                         sorted(list(tr.expected_objects(job)) + list(tr.expected_objects(job2))))
        self.assertEqual(self.c.get("skew", "secrets", "mpi-job-ssh")["data"]["id_rsa"], keys)
        self.assertEqual(self.lease()["spec"]["holderIdentity"], holder)  # still leading
        self.assertTrue(w.process.alive())


if __name__ == "__main__":
    unittest.main()
