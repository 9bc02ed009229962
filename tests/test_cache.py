# SPDX-License-Identifier: Apache-2.0
"""test_cache.py - the Jobs cache end to end: the real binary's informer (LIST, then
WATCH) against the test API server, seen from the admission path and /readyz.

- admissions for Jobs in the cache make no GET of a Job (the API server's request log);
- a Job created after start is served from the cache once the watch brought it in;
- a Job not in the cache yet (the watch is stalled) is fetched with one GET per admission,
  and so is a Job whose cached uid is not the one the pod's ownerReference names (D6);
- that GET is sent ahead of the reconciler's requests queued in the client rate limiter,
  and waits on a lookup thread: reviews of cached Jobs are answered meanwhile;
- /readyz is 503 with the reason until the first LIST completes, then 200.
"""

import json
import re
import threading
import time
import unittest

import harness

JOB_GET = re.compile(r"^/apis/batch\.volcano\.sh/v1alpha1/namespaces/([^/]+)/jobs/([^/]+)$")
JOBS_COLLECTION = "/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs"


def job_gets(api, name=None):
    """GETs of single Jobs (the admission fallback) in the API server's request log. The
    Lease holder's read of a whole Job for its Events (controller/events.h) asks with
    resourceVersion=0, which the admission fallback never does: not counted."""
    out = []
    for r in api.requests():
        m = JOB_GET.match(r["path"])
        if r["method"] == "GET" and m and (name is None or m.group(2) == name) \
                and "resourceVersion=0" not in r["query"]:
            out.append(r["path"])
    return out


def wait_for(cond, what, timeout=None):
    deadline = time.monotonic() + (timeout or harness.startup_timeout() * 2)
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class WebhookEnv:
    """Mixin for TestCases: an API server with Jobs (and faults), then the webhook."""

    def start(self, jobs=(), faults=None, args=()):
        """API server (with faults added before the webhook starts), then the webhook."""
        env = harness.Env(jobs=list(jobs), webhook_args=list(args), start_webhook=False)
        self.addCleanup(env.close)
        env.start()
        if faults:
            env.api.add_faults(faults)
        env.start_webhook_now()
        return env

    def readyz(self, env):
        conn = env.webhook.connection(timeout=5)
        try:
            conn.request("GET", "/readyz")
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()

    def wait_ready(self, env):
        wait_for(lambda: self.readyz(env)[0] == 200, "/readyz 200")


class CacheTest(WebhookEnv, unittest.TestCase):

    def admit_patched(self, env, job, task, index):
        """Admit one pod of job; it must be allowed with a patch and no warning."""
        pod = harness.build_pod(job, task, index)
        resp = env.webhook.admit(harness.review(pod, job["metadata"]["namespace"]))
        self.assertTrue(resp["allowed"], resp)
        self.assertNotIn("warnings", resp)
        patched = harness.apply_patch(pod, resp)
        self.assertEqual(patched["spec"]["subdomain"], job["metadata"]["name"])
        return patched

    def test_cached_jobs_make_no_job_gets(self):
        env = self.start(jobs=[harness.load_job("mpi-job"), harness.load_job("pytorch-job")])
        self.wait_ready(env)
        env.api.clear_requests()
        n = 0
        for job in env.jobs:
            for task, i in harness.pod_names(job):
                self.admit_patched(env, job, task, i)
                n += 1
        self.assertGreaterEqual(n, 5)
        self.assertEqual(job_gets(env.api), [])

    def test_job_created_after_start_is_served_from_cache(self):
        env = self.start()
        self.wait_ready(env)
        job = harness.load_job("pytorch-job")
        status, stored = env.api.call("POST", JOBS_COLLECTION % "default", job)
        self.assertEqual(status, 201, stored)
        # Once the watch has delivered it, an admission needs no GET; before that it may
        # be fetched (a miss). Poll until an admission is answered from the cache.
        served_from_cache = []

        def from_cache():
            env.api.clear_requests()
            self.admit_patched(env, stored, "worker", 0)
            if not job_gets(env.api):
                served_from_cache.append(True)
            return bool(served_from_cache)

        wait_for(from_cache, "an admission answered from the cache")
        env.api.clear_requests()
        for task, i in harness.pod_names(stored):
            self.admit_patched(env, stored, task, i)
        self.assertEqual(job_gets(env.api), [])

    def test_job_not_cached_yet_is_fetched(self):
        # The LIST works, every WATCH sends nothing: the cache stays as listed (empty).
        env = self.start(faults=[{"method": "GET", "path_regex": r"/v1alpha1/jobs\?.*watch=",
                                  "watch_stall_ms": -1, "count": -1}])
        self.wait_ready(env)
        job = harness.load_job("mpi-job")
        status, stored = env.api.call("POST", JOBS_COLLECTION % "default", job)
        self.assertEqual(status, 201, stored)
        env.api.clear_requests()
        self.admit_patched(env, stored, "mpimaster", 0)
        self.assertEqual(job_gets(env.api), ["/apis/batch.volcano.sh/v1alpha1/namespaces/"
                                             "default/jobs/mpi-job"])
        # The lookup never fills the cache (the informer is its only writer): GET again.
        self.admit_patched(env, stored, "mpiworker", 0)
        self.assertEqual(len(job_gets(env.api, "mpi-job")), 2)

    def test_concurrent_misses_share_one_get(self):
        """A new Job's pods arrive together, before the watch brings the Job: their
        lookups wait for one GET instead of making one each."""
        env = self.start(faults=[{"method": "GET", "path_regex": r"/v1alpha1/jobs\?.*watch=",
                                  "watch_stall_ms": -1, "count": -1}],
                         args=["--job-lookup-timeout", "10s"])
        self.wait_ready(env)
        job = harness.load_job("pytorch-job")
        status, stored = env.api.call("POST", JOBS_COLLECTION % "default", job)
        self.assertEqual(status, 201, stored)
        env.api.clear_requests()
        # The first review's GET stalls for 2 s; the second arrives while it is in the
        # air (on a connection of its own, so on a worker that is not blocked).
        env.api.add_faults([{"method": "GET", "path_regex": r"/jobs/pytorch-job$",
                             "delay_ms": 2000, "count": 1}])
        pods = [harness.build_pod(stored, "master", 0), harness.build_pod(stored, "worker", 0)]
        answers = [None, None]

        def admit(k):
            answers[k] = env.webhook.admit(harness.review(pods[k], "default"))
        first = threading.Thread(target=admit, args=(0,))
        first.start()
        wait_for(lambda: job_gets(env.api), "the first review's GET")
        admit(1)
        first.join()
        for pod, resp in zip(pods, answers):
            self.assertTrue(resp["allowed"], resp)
            self.assertNotIn("warnings", resp)
            self.assertEqual(harness.apply_patch(pod, resp)["spec"]["subdomain"], "pytorch-job")
        self.assertEqual(job_gets(env.api), ["/apis/batch.volcano.sh/v1alpha1/namespaces/"
                                             "default/jobs/pytorch-job"])

    def test_cached_jobs_are_answered_while_gets_wait(self):
        """A review whose Job is not cached waits on its GET on a lookup thread, its
        connection suspended; the libmicrohttpd worker that holds it goes on serving its
        other kept-alive connections, as kube-apiserver keeps them. Before, the worker
        itself waited, and every connection it held waited with it."""
        env = self.start(jobs=[harness.load_job("pytorch-job")],
                         faults=[{"method": "GET", "path_regex": r"/v1alpha1/jobs\?.*watch=",
                                  "watch_stall_ms": -1, "count": -1}],
                         args=["--job-lookup-timeout", "20s"])
        self.wait_ready(env)
        cached = env.jobs[0]
        late = []
        for name in ("late-a", "late-b"):
            job = harness.load_job("mpi-job")
            job["metadata"]["name"] = name
            status, stored = env.api.call("POST", JOBS_COLLECTION % "default", job)
            self.assertEqual(status, 201, stored)
            late.append(stored)

        def post(conn, pod):
            rev = harness.review(pod, "default")
            conn.request("POST", harness.WEBHOOK_PATH + "?timeout=30s",
                         body=json.dumps(rev).encode(),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            body = json.loads(resp.read())
            self.assertEqual(resp.status, 200, body)
            self.assertEqual(body["response"]["uid"], rev["request"]["uid"])
            return body["response"]

        # Sixteen connections, each opened with one review, so spread over the workers.
        conns = [env.webhook.connection(timeout=30) for _ in range(16)]
        for conn in conns:
            self.addCleanup(conn.close)
            self.assertTrue(post(conn, harness.build_pod(cached, "master", 0))["allowed"])
        env.api.clear_requests()
        env.api.add_faults([{"method": "GET", "path_regex": r"/jobs/late-[ab]$",
                             "delay_ms": 6000, "count": 2}])
        answers = {}

        def admit(conn, job):
            pod = harness.build_pod(job, "mpimaster", 0)
            answers[job["metadata"]["name"]] = (pod, post(conn, pod))
        waiting = [threading.Thread(target=admit, args=(conns[k], late[k])) for k in range(2)]
        for t in waiting:
            t.start()
        wait_for(lambda: len(job_gets(env.api)) == 2, "both reviews' GETs")
        # Every other connection is answered while both GETs wait, on whichever worker.
        for k, conn in enumerate(conns[2:]):
            pod = harness.build_pod(cached, "worker", k % 2)
            resp = post(conn, pod)
            self.assertTrue(resp["allowed"], resp)
            self.assertNotIn("warnings", resp)
            self.assertEqual(harness.apply_patch(pod, resp)["spec"]["subdomain"], "pytorch-job")
            self.assertTrue(all(t.is_alive() for t in waiting),
                            "a GET was answered before the cached reviews were")
        self.assertEqual(sorted(job_gets(env.api)),
                         ["/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs/late-a",
                          "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs/late-b"])
        for t in waiting:
            t.join()
        for job in late:
            pod, resp = answers[job["metadata"]["name"]]
            self.assertTrue(resp["allowed"], resp)
            self.assertNotIn("warnings", resp)
            self.assertEqual(harness.apply_patch(pod, resp)["spec"]["subdomain"],
                             job["metadata"]["name"])

    def test_uncached_job_is_fetched_ahead_of_the_reconcile_backlog(self):
        """A review's Job GET takes its rate-limit token ahead of the reconciler's queued
        requests (k8s_get_job_urgent). At 2 requests/s, the reconcile workers sleeping on
        their tokens (two or more; four run) put a queued GET 1.5 s or more out, past
        --job-lookup-timeout 1500ms: it was refused at once ("client rate limit: waiting
        ... exceeds the timeout") and the pod denied. Now it goes ahead of them: they
        keep their turns, and only a second of the rate (2 tokens) may be taken ahead."""
        backlog = harness.backlog_jobs(12)
        env = self.start(jobs=backlog,
                         faults=[{"method": "GET", "path_regex": r"/v1alpha1/jobs\?.*watch=",
                                  "watch_stall_ms": -1, "count": -1}],
                         args=["--kube-api-qps", "2", "--kube-api-burst", "10",
                               "--job-lookup-timeout", "1500ms"])
        self.wait_ready(env)
        # The leader reconciles the backlog: 12 Jobs of some 5 requests each at 2/s.
        # Once it has made more requests than the bucket held, its workers are queued on
        # it, for half a minute.
        def reconciling():
            return sum(1 for r in env.api.requests()
                       if re.search(r"/(configmaps|services|networkpolicies)\b", r["path"])) > 12
        wait_for(reconciling, "the reconciler queued on the rate limit",
                 timeout=harness.startup_timeout() * 6)
        job = harness.load_job("mpi-job")
        job["metadata"]["name"] = "late"
        status, stored = env.api.call("POST", JOBS_COLLECTION % "default", job)
        self.assertEqual(status, 201, stored)
        env.api.clear_requests()
        self.admit_patched(env, stored, "mpimaster", 0)
        self.assertEqual(job_gets(env.api, "late"), ["/apis/batch.volcano.sh/v1alpha1/"
                                                     "namespaces/default/jobs/late"])

    def test_stale_uid_in_cache_is_fetched_again(self):
        # Listed with one uid; deleted and created again (a new uid) while the watch is
        # stalled, so the cache still holds the old incarnation (D6: fetch again).
        env = self.start(jobs=[harness.load_job("mpi-job")],
                         faults=[{"method": "GET", "path_regex": r"/v1alpha1/jobs\?.*watch=",
                                  "watch_stall_ms": -1, "count": -1}])
        self.wait_ready(env)
        old = env.jobs[0]
        status, _ = env.api.call("DELETE", JOBS_COLLECTION % "default" + "/mpi-job")
        self.assertEqual(status, 200)
        job = harness.load_job("mpi-job")
        status, new = env.api.call("POST", JOBS_COLLECTION % "default", job)
        self.assertEqual(status, 201, new)
        self.assertNotEqual(new["metadata"]["uid"], old["metadata"]["uid"])
        env.api.clear_requests()
        self.admit_patched(env, new, "mpimaster", 0)
        self.assertEqual(len(job_gets(env.api, "mpi-job")), 1)
        # A pod of the cached incarnation is answered from the cache.
        env.api.clear_requests()
        self.admit_patched(env, old, "mpimaster", 0)
        self.assertEqual(job_gets(env.api), [])

    def test_readyz_503_until_first_list(self):
        # The first LIST stalls for a while: not ready; admission still works by GET.
        env = self.start(jobs=[harness.load_job("pytorch-job")],
                         faults=[{"method": "GET", "path_regex": r"/v1alpha1/jobs\?limit=",
                                  "delay_ms": 4000, "count": 1}])
        status, body = self.readyz(env)
        self.assertEqual(status, 503, body)
        self.assertEqual(json.loads(body), {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "jobs cache not synced", "reason": "ServiceUnavailable", "code": 503})
        env.api.clear_requests()
        self.admit_patched(env, env.jobs[0], "worker", 0)
        self.assertEqual(len(job_gets(env.api, "pytorch-job")), 1)
        self.wait_ready(env)
        self.assertEqual(self.readyz(env), (200, "ok"))
        env.api.clear_requests()
        self.admit_patched(env, env.jobs[0], "worker", 1)
        self.assertEqual(job_gets(env.api), [])


if __name__ == "__main__":
    unittest.main()
