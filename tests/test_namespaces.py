# SPDX-License-Identifier: Apache-2.0
"""test_namespaces.py - `serve --namespaces team-a,team-b` end to end: the real binary
against tests/apiserver.py, with a Volcano Job in each of team-a, team-b and team-c.

- one informer per namespace: the Jobs of team-a and team-b are LISTed and WATCHed
  through their own namespaces' collections, never the cluster-wide one, and nothing
  at all is asked of team-c;
- admission: pods of team-a and team-b are patched from the cache (no GET); pods of
  team-c are allowed unpatched with no warning, and no GET of their Job is ever made;
  they are counted (webhook_admission_namespace_not_served_total) and logged once;
- reconcile: the objects of team-a's and team-b's Jobs are made, none of team-c's;
- metrics: the informer counters are labelled by namespace;
- the Lease: still one, in the Lease namespace;
- every request the binary makes is one that manifests/overlays/namespaced/'s Roles allow
  in the namespace it names (or the Lease's Role): nothing cluster-scoped;
- /readyz is 503 until every namespace's first LIST has completed;
- bad --namespaces values exit 2 with one clear line.
"""

import json
import os
import re
import subprocess
import time
import unittest

import yaml

import harness
import test_operations
import test_security

SERVED = ("team-a", "team-b")
IGNORED = "team-c"
LEASE_NS = "vpw-system"
JOBS_ALL = "/apis/batch.volcano.sh/v1alpha1/jobs"
JOBS_NS = "/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs"
JOB_GET = re.compile(r"^/apis/batch\.volcano\.sh/v1alpha1/namespaces/([^/]+)/jobs/([^/]+)$")
CORE = "/api/v1/namespaces/%s/%s/%s"
ARGS = ["--namespaces", ",".join(SERVED), "--leader-elect-resource-namespace=" + LEASE_NS,
        "--leader-elect-retry-period=1s", "--resync-period=1h"]


def wait_for(cond, what, timeout=None):
    deadline = time.monotonic() + (timeout or harness.startup_timeout() * 2)
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def readyz(env):
    conn = env.webhook.connection(timeout=5)
    try:
        conn.request("GET", "/readyz")
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def by_webhook(request):
    """Whether the binary made this request (not the test's own calls)."""
    return request["headers"].get("User-Agent", "").startswith("volcano-plugin-webhook/")


def overlay_roles():
    """{namespace: {(group, resource, verb)}} of manifests/overlays/namespaced/rbac.yaml."""
    path = os.path.join(harness.ROOT, "manifests", "overlays", "namespaced", "rbac.yaml")
    out = {}
    with open(path, encoding="utf-8") as f:
        for doc in yaml.safe_load_all(f):
            if doc and doc["kind"] == "Role":
                out[doc["metadata"]["namespace"]] = {
                    (g, r, v) for rule in doc["rules"] for g in rule["apiGroups"]
                    for r in rule["resources"] for v in rule["verbs"]}
    return out


def jobs(namespaces):
    return [harness.load_job("mpi-job", namespace=ns) for ns in namespaces]


class NamespacesTest(unittest.TestCase):
    """One webhook serving team-a and team-b; team-c has a Job too."""

    @classmethod
    def setUpClass(cls):
        cls.env = harness.Env(jobs=jobs(SERVED + (IGNORED,)), webhook_args=ARGS)
        cls.env.start()
        try:
            wait_for(lambda: readyz(cls.env)[0] == 200, "/readyz 200")
        except BaseException:
            cls.env.close()
            raise
        cls.by_ns = {j["metadata"]["namespace"]: j for j in cls.env.jobs}

    @classmethod
    def tearDownClass(cls):
        cls.env.close()

    def admit(self, ns, task="mpiworker", index=0):
        job = self.by_ns[ns]
        pod = harness.build_pod(job, task, index)
        return pod, self.env.webhook.admit(harness.review(pod, ns))

    def job_gets(self):
        return [r["path"] for r in self.env.api.requests()
                if r["method"] == "GET" and JOB_GET.match(r["path"]) and by_webhook(r)]

    def test_every_request_is_one_the_overlay_roles_allow(self):
        # Once both namespaces' objects are made (creates included in the log).
        self.test_reconciles_the_jobs_of_served_namespaces_only()
        roles = overlay_roles()
        self.assertEqual(sorted(roles), sorted(SERVED))
        lease_prefix = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % LEASE_NS
        used = set()
        for r in self.env.api.requests():
            if not by_webhook(r):
                continue  # the test's own calls
            t = test_security.request_triple(r["method"], r["path"], r["query"] or "")
            if r["path"].startswith(lease_prefix):
                continue  # the base's Lease Role, checked by test_manifests
            m = re.match(r"^/apis?/(?:[^/]+/)?[^/]+/namespaces/([^/]+)/", r["path"])
            self.assertTrue(m, "not namespaced: %s %s" % (r["method"], r["path"]))
            self.assertIn(m.group(1), SERVED, r["path"])
            self.assertIn(t, roles[m.group(1)], r["path"])
            used.add(t)
        # the Job list/watch and the reconcile side's creates were among them
        for t in (("batch.volcano.sh", "jobs", "list"), ("batch.volcano.sh", "jobs", "watch"),
                  ("", "configmaps", "create"), ("", "secrets", "create")):
            self.assertIn(t, used)

    def test_one_list_and_watch_per_namespace_served(self):
        # The reconciler's GETs of single Jobs aside, the Jobs collections asked are the
        # two namespaces' own, each listed and watched; the cluster-wide one never.
        paths = {r["path"] for r in self.env.api.requests()
                 if "/batch.volcano.sh/" in r["path"] and not JOB_GET.match(r["path"])
                 and by_webhook(r)}
        self.assertEqual(paths, {JOBS_NS % ns for ns in SERVED})
        for ns in SERVED:
            queries = [r["query"] or "" for r in self.env.api.requests()
                       if r["path"] == JOBS_NS % ns]
            self.assertTrue(any("watch=" not in q and "limit=" in q for q in queries), ns)
            self.assertTrue(any("watch=1" in q for q in queries), ns)

    def test_nothing_is_asked_of_the_namespace_not_served(self):
        for _ in range(3):
            self.admit(IGNORED)
        self.assertEqual([r["path"] for r in self.env.api.requests()
                          if "/namespaces/%s/" % IGNORED in r["path"]
                          and by_webhook(r)], [])

    def test_pods_of_served_namespaces_are_patched_from_the_cache(self):
        self.env.api.clear_requests()
        for ns in SERVED:
            for task, i in harness.pod_names(self.by_ns[ns]):
                pod, resp = self.admit(ns, task, i)
                self.assertTrue(resp["allowed"], resp)
                self.assertNotIn("warnings", resp)
                patched = harness.apply_patch(pod, resp)
                self.assertEqual(patched["spec"]["subdomain"], "mpi-job")
        self.assertEqual(self.job_gets(), [])

    def test_pods_of_other_namespaces_are_allowed_unpatched_once_logged(self):
        before = test_operations.metric(self.scrape(),
                                        "webhook_admission_namespace_not_served_total")
        self.env.api.clear_requests()
        for i in range(4):
            pod, resp = self.admit(IGNORED, "mpiworker", i % 2)
            self.assertTrue(resp["allowed"], resp)
            self.assertNotIn("patch", resp)
            self.assertNotIn("patchType", resp)
            self.assertNotIn("warnings", resp)
        # No GET of team-c's Job: a lookup never reaches outside the namespaces served.
        self.assertEqual(self.job_gets(), [])
        after = test_operations.metric(self.scrape(),
                                       "webhook_admission_namespace_not_served_total")
        self.assertEqual(after - before, 4)
        lines = [json.loads(line) for line in self.env.webhook.process.log().splitlines()
                 if "namespace not served" in line]
        self.assertEqual([(ln["level"], ln["ns"]) for ln in lines], [("info", IGNORED)])

    def test_reconciles_the_jobs_of_served_namespaces_only(self):
        for ns in SERVED:
            wait_for(lambda ns=ns: self.env.api.get(CORE % (ns, "configmaps", "mpi-job-svc"))[0]
                     == 200, "the svc ConfigMap of %s/mpi-job" % ns)
            self.assertEqual(self.env.api.get(CORE % (ns, "secrets", "mpi-job-ssh"))[0], 200)
        for kind, name in (("configmaps", "mpi-job-svc"), ("secrets", "mpi-job-ssh"),
                           ("services", "mpi-job")):
            self.assertEqual(self.env.api.get(CORE % (IGNORED, kind, name))[0], 404, kind)

    def scrape(self):
        conn = self.env.webhook.connection()
        try:
            conn.request("GET", "/metrics")
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            return test_operations.parse_metrics(resp.read().decode())
        finally:
            conn.close()

    def test_informer_metrics_labelled_by_namespace(self):
        samples = self.scrape()
        for family in ("webhook_informer_lists_total", "webhook_informer_watches_total",
                       "webhook_informer_relists_total", "webhook_informer_errors_total",
                       "webhook_watch_restarts_total"):
            series = sorted(labels for (name, labels) in samples if name == family)
            self.assertEqual(series, sorted(frozenset({("namespace", ns)}) for ns in SERVED),
                             family)
        for ns in SERVED:
            self.assertEqual(test_operations.metric(samples, "webhook_informer_lists_total",
                                                    namespace=ns), 1)
            self.assertEqual(test_operations.metric(samples, "webhook_informer_errors_total",
                                                    namespace=ns), 0)
        self.assertEqual(test_operations.metric(samples, "webhook_cache_jobs"), 2)
        self.assertEqual(test_operations.metric(samples, "webhook_leader"), 1)

    def test_one_lease_in_the_lease_namespace(self):
        status, lease = self.env.api.get(
            "/apis/coordination.k8s.io/v1/namespaces/%s/leases/volcano-plugin-webhook"
            % LEASE_NS)
        self.assertEqual(status, 200, lease)
        self.assertTrue(lease["spec"]["holderIdentity"])
        # Renewed every second: the log has its requests, all to that one Lease (or its
        # collection, to create it); none in the namespaces served.
        wait_for(lambda: any("/leases" in r["path"] for r in self.env.api.requests()),
                 "a Lease request")
        lease_paths = {r["path"] for r in self.env.api.requests() if "/leases" in r["path"]}
        collection = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % LEASE_NS
        self.assertLessEqual(lease_paths, {collection, collection + "/volcano-plugin-webhook"})
        status, leases = self.env.api.get(collection)
        self.assertEqual(status, 200, leases)
        self.assertEqual([i["metadata"]["name"] for i in leases["items"]],
                         ["volcano-plugin-webhook"])
        for ns in SERVED:
            status, leases = self.env.api.get("/apis/coordination.k8s.io/v1/namespaces/%s/leases"
                                              % ns)
            self.assertEqual((status, leases["items"]), (200, []), ns)


class NamespacesReadinessTest(unittest.TestCase):

    def test_not_ready_until_every_namespace_listed(self):
        env = harness.Env(jobs=jobs(SERVED), webhook_args=ARGS, start_webhook=False)
        self.addCleanup(env.close)
        env.start()
        # team-a lists at once; team-b's first LIST answers after 4 s.
        env.api.add_faults([{"method": "GET", "path_regex": r"/namespaces/team-b/jobs\?limit=",
                             "delay_ms": 4000, "count": 1}])
        env.start_webhook_now()
        wait_for(lambda: any(r["path"] == JOBS_NS % "team-a" and "watch=1" in (r["query"] or "")
                             for r in env.api.requests()), "team-a's watch")
        status, body = readyz(env)
        self.assertEqual(status, 503, body)
        self.assertEqual(json.loads(body)["message"], "jobs cache not synced")
        wait_for(lambda: readyz(env)[0] == 200, "/readyz 200 once team-b listed")
        self.assertEqual(readyz(env), (200, "ok"))


class NamespacesFlagTest(unittest.TestCase):

    def run_serve(self, *args):
        return subprocess.run([harness.binary(), "serve", "--insecure-http"] + list(args),
                              capture_output=True, text=True, timeout=30)

    def test_bad_values_exit_2_with_one_line(self):
        cases = [
            (["--namespaces", "team-a,,team-b"], 'invalid --namespaces "team-a,,team-b": want '
             "namespace names (DNS-1123 labels) separated by commas"),
            (["--namespaces", "Team-A"], 'invalid --namespaces "Team-A": want namespace names '
             "(DNS-1123 labels) separated by commas"),
            (["--namespaces", "a,b", "--namespaces", "a"], '--namespaces: namespace "a" given '
             "twice"),
            (["--namespaces", ",".join("n%d" % k for k in range(33))], "--namespaces: more than "
             "32 namespaces (serve every namespace instead, without the flag)"),
        ]
        for args, msg in cases:
            with self.subTest(args=args):
                r = self.run_serve(*args)
                self.assertEqual((r.returncode, r.stdout, r.stderr),
                                 (2, "", "volcano-plugin-webhook: serve: %s\n" % msg))


if __name__ == "__main__":
    unittest.main()
