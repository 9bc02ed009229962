# SPDX-License-Identifier: Apache-2.0
"""test_hostile_jobs.py - odd Jobs and odd LIST pages against the Jobs cache (informer).

The cache keeps each Job as the compact text of the fields its readers use and reads
it back per admission; the informer LISTs page by page into a batch. Against the real
binary and the test API server:
  - Jobs of odd shapes (spec.tasks not a list, tasks that are strings/null/numbers,
    a template that is a string, unusual valid names, 200,000 plugin arguments,
    non-ASCII strings) and Jobs with a \\u0000 in a string (valid JSON and valid in
    Kubernetes strings), listed at start-up and arriving by watch: /readyz turns 200,
    every admission is answered, and good Jobs' pods get exactly the answer
    `render --review` gives (the same code path, the Job read from a file);
  - LIST pages with items null or missing, items that are not Jobs, and the same Job
    on two pages (the last one wins);
  - 2,000 Jobs relisted over and over (every watch ends with 410 Expired) while
    admissions go on: /readyz stays 200 and the answers stay exact.
Sanitizer builds: harness.Webhook.stop() fails the test on any sanitizer report.
"""

import copy
import json
import os
import subprocess
import tempfile
import time
import unittest

import harness
from test_cache import WebhookEnv, job_gets, wait_for
from test_reconcile import INFORMER_BACKOFF_MAX

LIST = r"^/apis/batch\.volcano\.sh/v1alpha1/jobs\?"
EXPIRED = json.dumps({"type": "ERROR", "object": {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "too old resource version", "reason": "Expired", "code": 410}}) + "\n"


def odd_job(name, spec, **meta):
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": dict(name=name, namespace="default", **meta), "spec": spec}


def odd_jobs():
    one = [{"name": "t", "replicas": 1}]
    return [
        odd_job("tasks-string", {"tasks": "nope", "plugins": {"svc": []}}),
        odd_job("tasks-mixed", {"tasks": [
            "s", None, 3, 1.5, True, {}, {"name": 7},
            {"name": "a", "replicas": "2", "template": "x"},
            {"name": "b", "template": {"spec": "y"}},
            {"name": "c", "template": {"spec": {"hostname": 5}}}],
            "plugins": {"svc": [], "env": [], "ssh": []}}),
        odd_job("template-string", {"tasks": [{"name": "t", "replicas": 1, "template": "s"}],
                                    "plugins": {"svc": []}}),
        odd_job("a.b-c.0", {"tasks": one, "plugins": {"env": []}}),
        odd_job("x" * 253, {"tasks": one, "plugins": {"env": []}}),
        odd_job("huge-args", {"tasks": one,
                              "plugins": {"env": ["--x=%d" % i for i in range(200000)]}}),
        odd_job("utf8", {"tasks": [{"name": "t\u00e9\U0001F600", "replicas": 1}],
                         "plugins": {"env": []}}),
        odd_job("nul", {"tasks": [{"name": "t\u0000x", "replicas": 1}],
                        "plugins": {"env": ["a\u0000b"], "svc": []}},
                annotations={"a": "b\u0000c"}),
        odd_job("plugins-null", {"tasks": None, "plugins": None}),
        odd_job("spec-array", [1, 2]),
    ]


def odd_pod(job):
    name = job["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name[:50] + "-t-0", "namespace": "default",
                         "annotations": {"volcano.sh/task-spec": "t"},
                         "ownerReferences": [{
                             "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                             "name": name, "uid": job["metadata"]["uid"], "controller": True}]},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


class HostileJobsTest(WebhookEnv, unittest.TestCase):

    def start(self, jobs=(), faults=None, args=()):
        return super().start(jobs, faults, ["--leader-elect=false"] + list(args))

    def render_review(self, job, rev):
        """What `render -f JOB --review REVIEW` answers (uid removed)."""
        with tempfile.TemporaryDirectory() as d:
            jf, rf = os.path.join(d, "job.json"), os.path.join(d, "review.json")
            with open(jf, "w") as f:
                json.dump(job, f)
            with open(rf, "w") as f:
                json.dump(rev, f)
            out = subprocess.run([harness.binary(), "render", "-f", jf, "--review", rf],
                                 capture_output=True, text=True, timeout=60)
        resp = json.loads(out.stdout)["response"]
        # a denial is printed and exits 1, as render of a denied pod
        self.assertEqual(out.returncode, 0 if resp["allowed"] else 1, out.stderr)
        resp.pop("uid")
        return resp

    def assert_exact(self, env, job, pods=None):
        """Each pod of job is admitted with a patch, exactly as `render --review` says."""
        for pod in harness.job_pods(job)[:pods]:
            rev = harness.review(pod, job["metadata"]["namespace"])
            resp = env.webhook.admit(rev)
            resp.pop("uid")
            self.assertIn("patch", resp)
            self.assertEqual(resp, self.render_review(job, rev))

    def assert_answered(self, env, job):
        """A pod of an odd Job gets an answer whose patch (if any) applies."""
        pod = odd_pod(job)
        resp = env.webhook.admit(harness.review(pod, "default"))
        self.assertTrue(resp["allowed"], resp)
        harness.apply_patch(pod, resp)
        return resp

    def test_odd_jobs_listed_and_watched(self):
        good = [harness.load_job("mpi-job"), harness.load_job("pytorch-job")]
        env = self.start(jobs=good + odd_jobs())
        self.wait_ready(env)
        for job in env.jobs[:2]:
            self.assert_exact(env, job)
        env.api.clear_requests()
        for job in env.jobs[2:]:
            self.assert_answered(env, job)
        self.assertEqual(job_gets(env.api), [])   # every one from the cache
        # The Job with a NUL is in the cache as sent: its plugins ran on it.
        resp = self.assert_answered(env, env.jobs[-3])
        self.assertIn("patch", resp)

        # By watch: a Job with a NUL, then a good Job; the watch goes past the first,
        # so the second is served from the cache (no GET).
        nul = odd_job("nul-later", {"tasks": [{"name": "t", "replicas": 1}],
                                    "plugins": {"env": []}}, annotations={"n": "\u0000"})
        later = harness.load_job("tensorflow-dist-mnist")
        created = env.api.create_objects([nul, later])
        pod = harness.job_pods(created[1])[0]
        deadline = time.monotonic() + harness.startup_timeout()
        while True:
            env.api.clear_requests()
            resp = env.webhook.admit(harness.review(pod, "default"))
            if not job_gets(env.api) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(job_gets(env.api), [], "tensorflow Job never reached the cache")
        self.assertIn("patch", resp)
        self.assert_answered(env, created[0])
        self.assertEqual(self.readyz(env), (200, "ok"))

    def test_list_pages_odd_items_and_duplicates(self):
        good = [harness.load_job("mpi-job"), harness.load_job("pytorch-job")]
        env = harness.Env(jobs=good, webhook_args=["--leader-elect=false"], start_webhook=False)
        self.addCleanup(env.close)
        env.start()
        _, lst = env.api.call("GET", "/apis/batch.volcano.sh/v1alpha1/jobs")
        rv = lst["metadata"]["resourceVersion"]
        mpi, pt = env.jobs
        bogus = copy.deepcopy(mpi)   # same ns/name, other plugins: the later page wins
        bogus["spec"]["plugins"] = {"env": []}

        def page(items, cont=None):
            d = {"kind": "JobList", "apiVersion": "batch.volcano.sh/v1alpha1",
                 "metadata": {"resourceVersion": rv}}
            if cont:
                d["metadata"]["continue"] = cont
            if items is not Ellipsis:
                d["items"] = items
            return json.dumps(d)

        def rule(query, body):
            return {"method": "GET", "path_regex": LIST + query + "$", "status": 200,
                    "count": 1, "body_override": body}
        env.api.add_faults([
            rule("limit=500", page([bogus, "str", None, 5, [], {}, {"metadata": None},
                                    {"metadata": {"name": "no-namespace"}}], "p2")),
            rule("limit=500&continue=p2", page(None, "p3")),
            rule("limit=500&continue=p3", page(Ellipsis, "p4")),
            rule("limit=500&continue=p4", page([mpi, pt, copy.deepcopy(pt)])),
        ])
        env.start_webhook_now()
        self.wait_ready(env)
        lists = [r["query"] for r in env.api.requests()
                 if r["path"] == "/apis/batch.volcano.sh/v1alpha1/jobs"
                 and "watch=" not in r["query"]]
        # one LIST of four pages (the first, unpaged, is the test's own)
        self.assertEqual(lists, ["", "limit=500", "limit=500&continue=p2",
                                 "limit=500&continue=p3", "limit=500&continue=p4"])
        env.api.clear_requests()
        for job in env.jobs:
            self.assert_exact(env, job)
        self.assertEqual(job_gets(env.api), [])

    def test_relists_of_many_jobs(self):
        base = harness.load_job("mpi-job")
        jobs = [harness.load_job("pytorch-job")]
        for i in range(2000):
            j = copy.deepcopy(base)
            j["metadata"]["name"] = "j%04d" % i
            jobs.append(j)
        # every watch ends at once with 410 Expired: LIST after LIST, for 12 s
        env = self.start(jobs=jobs, faults=[{
            "method": "GET", "path_regex": r"/jobs\?.*watch=", "body_override": EXPIRED,
            "count": -1, "for_ms": 12000}])
        self.wait_ready(env)
        pt = env.jobs[0]
        stop = time.monotonic() + 12
        n = 0
        while time.monotonic() < stop:
            self.assert_exact(env, pt, pods=1)
            self.assert_exact(env, env.jobs[1 + n % 2000], pods=1)
            self.assertEqual(self.readyz(env), (200, "ok"))
            # deleted Jobs: the next relist reports them gone
            env.api.call("DELETE", "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs/"
                         "j%04d" % (1999 - n))
            n += 1
        lists = [r for r in env.api.requests()
                 if r["path"] == "/apis/batch.volcano.sh/v1alpha1/jobs"
                 and r["query"].startswith("limit=500") and "continue" not in r["query"]]
        self.assertGreaterEqual(len(lists), 3)
        # the cache followed the deletions: a deleted Job's pod is looked up (GET, 404)
        gone = harness.review(harness.job_pods(env.jobs[2000])[0], "default")

        def looked_up():
            env.api.clear_requests()
            env.webhook.admit(gone)
            return job_gets(env.api) != []
        # Each 410 with nothing watched since the LIST was one more informer failure: when
        # the faults lapse, the backoff under way may be up to its cap before the LIST.
        wait_for(looked_up, "a deleted Job to leave the cache",
                 timeout=INFORMER_BACKOFF_MAX + harness.startup_timeout() * 2)


if __name__ == "__main__":
    unittest.main()
