# SPDX-License-Identifier: Apache-2.0
"""test_reconcile.py - the reconcile side end to end: the real binary against the test
API server (tests/apiserver.py), with list/watch, the work queue, the plugins' job hooks
and leader election (docs/plugins.md §3.2, §5.2, D9-D12).

Scenarios: the example Jobs get every auxiliary object with exact content; a scaled task
reaches the ConfigMap while the ssh keys stay; a completed Job and a deleted Job (garbage
collection off) lose their objects; a deleted ConfigMap comes back at the resync; an
object of the same name owned by someone else is left alone; API faults (500s on create,
dropped watches, 410 Gone) end in the right objects with no duplicates; two replicas with
leader election: one reconciles, and the other takes over when it is killed.

Every wait polls with a deadline; nothing asserts how long something took.
"""

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import harness

RESYNC = "2s"
CORE = "/api/v1/namespaces/%s/%s"
NETPOL = "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs"
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation")
WAIT = 20.0 if os.environ.get("SANITIZER") else 10.0
# The informer's backoff cap (controller/informer.c DEFAULT_BACKOFF_MAX_MS): after an
# outage that piled up failures, the next LIST may be up to this far away.
INFORMER_BACKOFF_MAX = 30.0
# The informer's first backoff (controller/informer.c DEFAULT_BACKOFF_MIN_MS), doubled per
# failure up to the cap and drawn from [d/2, d].
INFORMER_BACKOFF_MIN = 0.5
# The reconciler's first retry of a failed run (controller/reconcile.c
# DEFAULT_BACKOFF_MIN_MS), doubled per failure in a row.
RECONCILE_BACKOFF_MIN = 0.5


def informer_backoffs(failures):
    """Longest total the informer sleeps over `failures` failures in a row, in seconds
    (controller/informer.c backoff(): min * 2^(n-1) for the n-th, at most the cap)."""
    return sum(min(INFORMER_BACKOFF_MIN * 2 ** (n - 1), INFORMER_BACKOFF_MAX)
               for n in range(1, failures + 1))


def wait_for(pred, what, timeout=WAIT, interval=0.05):
    """Poll pred() until it returns a true value (returned); AssertionError after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def collection(ns, kind):
    return NETPOL % ns if kind == "networkpolicies" else CORE % (ns, kind)


def owner_ref(job):
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "name": job["metadata"]["name"], "uid": job["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}


def strip(obj):
    """obj without the fields the API server fills in."""
    obj = json.loads(json.dumps(obj))
    for k in SERVER_FIELDS:
        obj.get("metadata", {}).pop(k, None)
    return obj


def hosts(job, task):
    n = next(t for t in job["spec"]["tasks"] if t["name"] == task)["replicas"]
    name = job["metadata"]["name"]
    return ["%s-%s-%d.%s" % (name, task, i, name) for i in range(n)]


def cm_data(job):
    data = {}
    for t in job["spec"]["tasks"]:
        h = hosts(job, t["name"])
        up = t["name"].upper().replace("-", "_")
        data[t["name"].replace("-", "_") + ".host"] = "\n".join(h)
        data["VC_%s_HOSTS" % up] = ",".join(h)
        data["VC_%s_NUM" % up] = str(len(h))
    return data


def ssh_config(job, port=22):
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for t in job["spec"]["tasks"]:
        for h in hosts(job, t["name"]):
            host = h.split(".")[0]
            lines += ["Host " + host, "  HostName " + h, "  Port %d" % port]
    return "\n".join(lines) + "\n"


def labels(job):
    return {"volcano.sh/job-name": job["metadata"]["name"],
            "volcano.sh/job-namespace": job["metadata"]["namespace"]}


def expected_objects(job):
    """{(resource, name): object without server fields} for the Job's effective set (§5.2)."""
    name, ns = job["metadata"]["name"], job["metadata"]["namespace"]
    plugins = job["spec"].get("plugins") or {}
    meta = lambda n: {"name": n, "namespace": ns, "ownerReferences": [owner_ref(job)]}  # noqa
    out = {}
    svc = "svc" in plugins or any(p in plugins for p in ("tensorflow", "mpi", "pytorch", "ray"))
    if svc:
        out[("configmaps", name + "-svc")] = {"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": meta(name + "-svc"),
                                              "data": cm_data(job)}
        out[("services", name)] = {
            "apiVersion": "v1", "kind": "Service", "metadata": meta(name),
            "spec": {"clusterIP": "None", "selector": labels(job),
                     "publishNotReadyAddresses": False}}
        out[("networkpolicies", name)] = {
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta(name),
            "spec": {"podSelector": {"matchLabels": labels(job)},
                     "ingress": [{"from": [{"podSelector": {"matchLabels": labels(job)}}]}],
                     "policyTypes": ["Ingress"]}}
    if "ray" in plugins:
        out[("services", name + "-head-svc")] = {
            "apiVersion": "v1", "kind": "Service", "metadata": meta(name + "-head-svc"),
            "spec": {"selector": dict(labels(job), **{"volcano.sh/task-spec": "head"}),
                     "ports": [{"name": "gcs", "port": 6379, "targetPort": "gcs",
                                "protocol": "TCP"},
                               {"name": "dashboard", "port": 8265, "targetPort": "dashboard",
                                "protocol": "TCP"},
                               {"name": "client-server", "port": 10001,
                                "targetPort": "client-server", "protocol": "TCP"}]}}
    if "ssh" in plugins or "mpi" in plugins:
        out[("secrets", name + "-ssh")] = None  # keys are random: checked by check_secret
    return out


def b64d(s):
    return base64.b64decode(s).decode()


def log_events(webhook):
    """The webhook's log lines as dicts (JSON log format; other lines skipped)."""
    out = []
    for line in webhook.process.log().splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict):
            out.append(ev)
    return out


class Cluster:
    """Helpers over an harness.ApiServer."""

    def __init__(self, api):
        self.api = api

    def get(self, ns, kind, name):
        status, body = self.api.get(collection(ns, kind) + "/" + name)
        if status == 404:
            return None
        if status != 200:
            raise AssertionError("GET %s %s/%s: %d %r" % (kind, ns, name, status, body))
        return body

    def items(self, ns, kind):
        status, body = self.api.get(collection(ns, kind))
        if status != 200:
            raise AssertionError("LIST %s %s: %d %r" % (kind, ns, status, body))
        return body["items"]

    def names(self, ns):
        """Every auxiliary object of namespace ns as (resource, name), sorted."""
        return sorted((k, o["metadata"]["name"])
                      for k in ("configmaps", "secrets", "services", "networkpolicies")
                      for o in self.items(ns, k))

    def create_job(self, example, ns, mutate=None):
        job = harness.load_job(example, namespace=ns)
        del job["metadata"]["uid"]  # the API server assigns one
        if mutate:
            mutate(job)
        return self.api.create_objects([job])[0]

    def put_job(self, job, sub=""):
        path = JOBS % job["metadata"]["namespace"] + "/" + job["metadata"]["name"] + sub
        status, body = self.api.call("PUT", path, job)
        if status != 200:
            raise AssertionError("PUT %s: %d %r" % (path, status, body))
        return body

    def delete(self, path):
        status, body = self.api.call("DELETE", path)
        if status not in (200, 202):
            raise AssertionError("DELETE %s: %d %r" % (path, status, body))

    def wait_objects(self, job, timeout=WAIT):
        """Wait until every expected object of job exists; returns {key: stored object}."""
        ns = job["metadata"]["namespace"]
        want = expected_objects(job)

        def all_there():
            got = {k: self.get(ns, k[0], k[1]) for k in want}
            return got if all(v is not None for v in got.values()) else None
        return wait_for(all_there, "objects of job %s/%s" % (ns, job["metadata"]["name"]),
                        timeout)

    def wait_gone(self, ns, keys):
        wait_for(lambda: all(self.get(ns, k, n) is None for k, n in keys),
                 "objects %r gone from %s" % (keys, ns))


class ReconcileTest(unittest.TestCase):
    """One API server and one replica (--leader-elect=false) for the single-replica cases."""

    EXAMPLES = ["mpi-job", "lm-mpi-job", "pytorch-job", "ray-cluster-job"]

    @classmethod
    def setUpClass(cls):
        cls.env = harness.Env(jobs=[harness.load_job(n) for n in cls.EXAMPLES],
                              webhook_args=["--leader-elect=false", "--resync-period=" + RESYNC,
                                            "--reconcile-workers=4"])
        cls.env.start()
        cls.c = Cluster(cls.env.api)

    @classmethod
    def tearDownClass(cls):
        cls.env.close()

    def tearDown(self):
        self.env.api.clear_faults()
        self.env.api._control("POST", "/_test/gc", {"enabled": True})
        self.assertTrue(self.env.webhook.process.alive(), self.env.webhook.process.log())

    def check_secret(self, job, secret):
        self.assertEqual(strip(secret)["metadata"], {
            "name": job["metadata"]["name"] + "-ssh", "namespace": job["metadata"]["namespace"],
            "ownerReferences": [owner_ref(job)]})
        self.assertNotIn("labels", secret["metadata"])
        data = {k: b64d(v) for k, v in secret["data"].items()}
        self.assertEqual(sorted(data), ["authorized_keys", "config", "id_rsa", "id_rsa.pub"])
        self.assertTrue(data["id_rsa"].startswith("-----BEGIN RSA PRIVATE KEY-----\n"))
        self.assertTrue(data["id_rsa"].endswith("\n-----END RSA PRIVATE KEY-----\n"))
        self.assertTrue(data["id_rsa.pub"].startswith("ssh-rsa "))
        self.assertEqual(data["id_rsa.pub"].count(" "), 1)  # no comment
        self.assertTrue(data["id_rsa.pub"].endswith("\n"))
        self.assertEqual(data["authorized_keys"], data["id_rsa.pub"])
        self.assertEqual(data["config"], ssh_config(job))
        # the public key belongs to the private key (2048-bit RSA)
        der = subprocess.run(["openssl", "rsa", "-pubout", "-outform", "DER"],
                             input=data["id_rsa"].encode(), capture_output=True, check=True)
        mod = subprocess.run(["openssl", "rsa", "-noout", "-text"],
                             input=data["id_rsa"].encode(), capture_output=True, check=True)
        self.assertIn(b"Private-Key: (2048 bit", mod.stdout)
        self.assertTrue(der.stdout)
        blob = base64.b64decode(data["id_rsa.pub"].split()[1])
        n_hex = subprocess.run(["openssl", "rsa", "-noout", "-modulus"],
                               input=data["id_rsa"].encode(), capture_output=True,
                               check=True).stdout.decode().strip().split("=")[1]
        self.assertIn(bytes.fromhex(n_hex), blob)
        self.assertTrue(blob.startswith(b"\x00\x00\x00\x07ssh-rsa\x00\x00\x00\x03\x01\x00\x01"))
        return data

    def test_example_jobs_objects_exact(self):
        for job in self.env.jobs:
            with self.subTest(job=job["metadata"]["name"]):
                got = self.c.wait_objects(job)
                for key, want in expected_objects(job).items():
                    if key[0] == "secrets":
                        self.check_secret(job, got[key])
                    else:
                        self.assertEqual(strip(got[key]), want, key)
        # nothing else was made, and each name exactly once
        want_names = sorted(k for job in self.env.jobs for k in expected_objects(job))
        self.assertEqual(self.c.names("default"), want_names)

    def test_scale_task(self):
        job = self.c.create_job("mpi-job", "scale")
        got = self.c.wait_objects(job)
        keys = self.check_secret(job, got[("secrets", "mpi-job-ssh")])
        job = self.env.api.job("scale", "mpi-job")
        next(t for t in job["spec"]["tasks"] if t["name"] == "mpiworker")["replicas"] = 3
        job = self.c.put_job(job)
        want = cm_data(job)
        self.assertEqual(want["VC_MPIWORKER_NUM"], "3")
        wait_for(lambda: (self.c.get("scale", "configmaps", "mpi-job-svc") or {})
                 .get("data") == want, "ConfigMap follows the scale-up")
        wait_for(lambda: b64d(self.c.get("scale", "secrets", "mpi-job-ssh")["data"]["config"])
                 == ssh_config(job), "ssh config follows the scale-up")
        after = self.check_secret(job, self.c.get("scale", "secrets", "mpi-job-ssh"))
        for k in ("id_rsa", "id_rsa.pub", "authorized_keys"):
            self.assertEqual(after[k], keys[k], k)  # D11: keys never regenerated
        # scale down: the list shrinks again
        job = self.env.api.job("scale", "mpi-job")
        next(t for t in job["spec"]["tasks"] if t["name"] == "mpiworker")["replicas"] = 1
        job = self.c.put_job(job)
        wait_for(lambda: (self.c.get("scale", "configmaps", "mpi-job-svc") or {})
                 .get("data") == cm_data(job), "ConfigMap follows the scale-down")

    def test_completed_job_objects_gone(self):
        job = self.c.create_job("ray-cluster-job", "done")
        self.c.wait_objects(job)
        job = self.env.api.job("done", "ray-cluster-job")
        job["status"] = {"state": {"phase": "Completed"}}
        self.c.put_job(job, "/status")
        self.c.wait_gone("done", list(expected_objects(job)))
        self.assertEqual(self.c.names("done"), [])
        # the Job is still there: the reconcile side never writes it (D9)
        self.assertEqual(self.env.api.job("done", "ray-cluster-job")["status"]["state"]["phase"],
                         "Completed")

    def test_changes_logged_at_info(self):
        """Each object created, updated or deleted is one info line naming it and its Job;
        an object left as it was is not logged again."""
        kinds = {"configmaps": "ConfigMap", "secrets": "Secret", "services": "Service",
                 "networkpolicies": "NetworkPolicy"}
        job = self.c.create_job("ray-cluster-job", "logged")
        self.c.wait_objects(job)
        uid = job["metadata"]["uid"]

        def changes(what):
            return sorted((e["kind"], e["object"]) for e in log_events(self.env.webhook)
                          if e.get("msg") == "reconcile: " + what
                          and e.get("job") == "logged/ray-cluster-job")

        want = sorted((kinds[res], "logged/" + name) for res, name in expected_objects(job))
        wait_for(lambda: changes("created") == want, "one created line per object")
        for e in log_events(self.env.webhook):
            if e.get("msg") == "reconcile: created" and e.get("job") == "logged/ray-cluster-job":
                self.assertEqual((e["level"], e["uid"]), ("info", uid))
        job = self.env.api.job("logged", "ray-cluster-job")
        next(t for t in job["spec"]["tasks"] if t["name"] == "worker")["replicas"] = 3
        job = self.c.put_job(job)
        wait_for(lambda: ("ConfigMap", "logged/ray-cluster-job-svc") in changes("updated"),
                 "the ConfigMap's update logged")
        self.assertNotIn(("Service", "logged/ray-cluster-job"), changes("updated"))
        job["status"] = {"state": {"phase": "Completed"}}
        self.c.put_job(job, "/status")
        wait_for(lambda: changes("deleted") == want, "one deleted line per object")

    def test_deleted_job_objects_gone_without_gc(self):
        self.env.api._control("POST", "/_test/gc", {"enabled": False})
        job = self.c.create_job("lm-mpi-job", "del")
        self.c.wait_objects(job)
        self.c.delete(JOBS % "del" + "/lm-mpi-job")
        self.c.wait_gone("del", list(expected_objects(job)))
        self.assertEqual(self.c.names("del"), [])

    def test_deleted_configmap_back_at_resync(self):
        job = self.c.create_job("pytorch-job", "resync")
        got = self.c.wait_objects(job)
        self.c.delete(CORE % ("resync", "configmaps") + "/pytorch-job-svc")
        self.assertIsNone(self.c.get("resync", "configmaps", "pytorch-job-svc"))
        # no Job event happens: only the resync can bring it back
        back = wait_for(lambda: self.c.get("resync", "configmaps", "pytorch-job-svc"),
                        "ConfigMap re-created at resync")
        self.assertEqual(strip(back), expected_objects(job)[("configmaps", "pytorch-job-svc")])
        self.assertNotEqual(back["metadata"]["uid"],
                            got[("configmaps", "pytorch-job-svc")]["metadata"]["uid"])
        # drifted data is repaired too
        back["data"]["VC_WORKER_NUM"] = "99"
        status, _ = self.env.api.call("PUT", CORE % ("resync", "configmaps") + "/pytorch-job-svc",
                                      back)
        self.assertEqual(status, 200)
        wait_for(lambda: self.c.get("resync", "configmaps", "pytorch-job-svc")["data"]
                 == cm_data(job), "ConfigMap data repaired at resync")

    def test_foreign_object_left_alone(self):
        # owned by a Pod that exists (an object of an absent owner is garbage collected)
        owner = self.env.api.create_objects([{"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "someone", "namespace": "foreign"}}])[0]
        foreign = {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "mpi-job-svc", "namespace": "foreign",
                                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod",
                                                     "name": "someone",
                                                     "uid": owner["metadata"]["uid"]}]},
                   "data": {"mine": "yes"}}
        stored = self.env.api.create_objects([foreign])[0]
        job = self.c.create_job("mpi-job", "foreign")
        want = dict(expected_objects(job))
        del want[("configmaps", "mpi-job-svc")]
        wait_for(lambda: all(self.c.get("foreign", k, n) for k, n in want),
                 "the Job's other objects")
        time.sleep(2.5)  # a resync later, still untouched
        cm = self.c.get("foreign", "configmaps", "mpi-job-svc")
        self.assertEqual(cm, stored)
        wait_for(lambda: "mpi-job-svc exists and is not owned by job foreign/mpi-job"
                 in self.env.webhook.process.log(), "the D12 log line")
        # the Job is deleted (no GC): ours go, the foreign one stays
        self.env.api._control("POST", "/_test/gc", {"enabled": False})
        self.c.delete(JOBS % "foreign" + "/mpi-job")
        self.c.wait_gone("foreign", list(want))
        self.assertEqual(self.c.get("foreign", "configmaps", "mpi-job-svc"), stored)

    def test_faults_converge_without_duplicates(self):
        api = self.env.api
        # A restart (everything is "first seen" again) into a bad API: 500 on every create
        # for a while, and every watch dropped after 1 s.
        self.env.webhook.stop()
        jobs = [self.c.create_job(n, "faults") for n in ("mpi-job", "pytorch-job")]
        api.add_faults([
            {"method": "POST", "path_regex": "/(configmaps|secrets|services|networkpolicies)$",
             "status": 500, "reason": "InternalError", "message": "injected", "count": -1,
             "for_ms": 1500},
            {"method": "GET", "path_regex": "/jobs\\?.*watch=", "watch_drop_after_ms": 1000,
             "count": -1, "for_ms": 20000},
        ])
        os.unlink(os.path.join(self.env.dir, "webhook.port"))  # the old one's port
        self.env.start_webhook_now()
        for job in jobs:
            self.c.wait_objects(job)
        # The watch is down (dropped, then 503) while a Job is created and the history is
        # compacted: the reconnect gets 410 Gone and the informer lists again.
        api.clear_faults()
        api.add_faults({"method": "GET", "path_regex": "/jobs\\?.*watch=", "status": 503,
                        "reason": "ServiceUnavailable", "message": "down", "count": -1,
                        "for_ms": 2500})
        time.sleep(1.2)  # the current watch has ended by now
        api.clear_requests()
        jobs.append(self.c.create_job("ray-cluster-job", "faults"))
        api.create_objects([{"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "unrelated", "namespace": "faults-x"}}])
        api._control("POST", "/_test/compact", {})
        # Every dropped watch, 503 and the 410 right after (nothing watched since the LIST)
        # is one more failure, and nothing resets them: the sleep under way when the
        # outage ends, then the one after the 410, may each be a whole backoff cap.
        for job in jobs:
            self.c.wait_objects(job, 2 * INFORMER_BACKOFF_MAX + WAIT)
        relists = [r for r in api.requests()
                   if r["path"] == "/apis/batch.volcano.sh/v1alpha1/jobs"
                   and "watch=" not in r["query"]]
        self.assertTrue(relists, "no LIST after the 410")
        want = sorted(k for job in jobs for k in expected_objects(job))
        self.assertEqual(self.c.names("faults"), want)
        for job in jobs:
            got = self.c.wait_objects(job)
            for key, obj in expected_objects(job).items():
                if obj is None:
                    self.check_secret(job, got[key])
                else:
                    self.assertEqual(strip(got[key]), obj, key)
        # the cache holds every Job after the relist: a delete still tears down
        api._control("POST", "/_test/gc", {"enabled": False})
        self.c.delete(JOBS % "faults" + "/ray-cluster-job")
        self.c.wait_gone("faults", list(expected_objects(jobs[2])))
        self.assertEqual(self.c.names("faults"),
                         sorted(k for job in jobs[:2] for k in expected_objects(job)))


class IncarnationTest(unittest.TestCase):
    """A Job deleted and created again under its name while this replica did not see it
    (webhook down, or watch down): the new Job gets its own objects without waiting for a
    resync (the resync period is an hour here, so only the fix can make them)."""

    GONE = "/apis/batch.volcano.sh/v1alpha1/jobs"

    def setUp(self):
        self.env = harness.Env(start_webhook=False)
        self.addCleanup(self.env.close)
        self.env.start()
        self.api = self.env.api
        self.c = Cluster(self.api)

    def start_webhook(self):
        self.env.start_webhook_now(["--leader-elect=false", "--resync-period=1h", "-v", "3"])

    def owned_by(self, job):
        """Every expected object of job exists and is owned by its uid."""
        ns = job["metadata"]["namespace"]
        got = {k: self.c.get(ns, k[0], k[1]) for k in expected_objects(job)}
        return all(o is not None and o["metadata"]["ownerReferences"] == [owner_ref(job)]
                   for o in got.values()) and got

    def test_previous_incarnation_waits_for_gc(self):
        # Objects of the first Job; then, with the webhook down, the Job is deleted (its
        # dependents are collected gc_delay seconds later) and created again: a new uid.
        gc_delay = 4.0
        self.api._control("POST", "/_test/gc",
                          {"enabled": True, "delay_ms": int(gc_delay * 1000)})
        self.start_webhook()
        job1 = self.c.create_job("pytorch-job", "inc")
        wait_for(lambda: self.owned_by(job1), "objects of the first Job")
        self.env.webhook.stop()
        self.c.delete(JOBS % "inc" + "/pytorch-job")
        job2 = self.c.create_job("pytorch-job", "inc")
        self.assertNotEqual(job1["metadata"]["uid"], job2["metadata"]["uid"])
        os.unlink(os.path.join(self.env.dir, "webhook.port"))  # the old one's port
        self.start_webhook()
        # Each run fails until the collection, retried after a doubling backoff: the first
        # retry after the collection comes less than one more doubling later.
        got = wait_for(lambda: self.owned_by(job2), "objects of the new Job after GC",
                       timeout=2 * gc_delay + RECONCILE_BACKOFF_MIN + WAIT)
        for key, want in expected_objects(job2).items():
            self.assertEqual(strip(got[key]), want, key)
        self.assertEqual(self.c.names("inc"), sorted(expected_objects(job2)))
        log = self.env.webhook.process.log()
        self.assertIn("owned by a previous incarnation of job inc/pytorch-job (uid %s), "
                      "waiting for its garbage collection" % job1["metadata"]["uid"], log)
        self.assertNotIn("left alone", log)  # never reported as foreign (D12)

    def test_recreated_while_watch_down_relist(self):
        # GC off: only the webhook can remove the first Job's objects.
        self.api._control("POST", "/_test/gc", {"enabled": False})
        self.api.add_faults({"method": "GET", "path_regex": "/jobs\\?.*watch=", "count": -1,
                             "watch_drop_after_ms": 1000})
        self.start_webhook()
        job1 = self.c.create_job("pytorch-job", "rel")
        old = wait_for(lambda: self.owned_by(job1), "objects of the first Job")
        # LIST and WATCH down while the Job is deleted and created again
        self.api.clear_faults()
        self.api.add_faults({"method": "GET", "path_regex": "^" + self.GONE, "count": -1,
                             "status": 503, "reason": "ServiceUnavailable", "message": "down"})
        time.sleep(1.5)  # the current watch has ended by now
        self.c.delete(JOBS % "rel" + "/pytorch-job")
        job2 = self.c.create_job("pytorch-job", "rel")
        self.api._control("POST", "/_test/compact", {})
        self.api.clear_requests()
        self.api.clear_faults()
        # the relist sees a new uid: the old Job's teardown, then the new Job's add. The
        # dropped watches and 503s since the first Job's event are failures in a row: the
        # sleep under way may be up to the backoff cap (the 410 then relists at once, as
        # the first Job's event was watched since the LIST).
        got = wait_for(lambda: self.owned_by(job2), "objects of the new Job",
                       timeout=INFORMER_BACKOFF_MAX + WAIT)
        for key, want in expected_objects(job2).items():
            self.assertEqual(strip(got[key]), want, key)
        self.assertEqual(self.c.names("rel"), sorted(expected_objects(job2)))
        deletes = sorted((r["path"], json.loads(r["body"])) for r in self.api.requests()
                         if r["method"] == "DELETE")
        want = sorted((collection("rel", k) + "/" + n,
                       {"kind": "DeleteOptions", "apiVersion": "v1",
                        "preconditions": {"uid": old[(k, n)]["metadata"]["uid"]},
                        "propagationPolicy": "Background"})
                      for k, n in expected_objects(job1))
        self.assertEqual(deletes, want)


class FollowerTest(unittest.TestCase):
    """A replica that does not hold the Lease keeps no work for Jobs deleted meanwhile:
    when it takes over, it does not touch them (their objects go with GC)."""

    LEASE = "/apis/coordination.k8s.io/v1/namespaces/vpw-system/leases"

    def test_takeover_ignores_jobs_deleted_while_following(self):
        env = harness.Env(start_webhook=False)
        self.addCleanup(env.close)
        env.start()
        api, c = env.api, Cluster(env.api)
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        status, _ = api.call("POST", self.LEASE, {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "volcano-plugin-webhook", "namespace": "vpw-system"},
            "spec": {"holderIdentity": "someone-else", "leaseDurationSeconds": 3600,
                     "acquireTime": now, "renewTime": now, "leaseTransitions": 0}})
        self.assertEqual(status, 201)
        env.start_webhook_now(["--leader-elect-resource-namespace=vpw-system",
                               "--leader-elect-retry-period=1s", "--resync-period=1h",
                               "-v", "3"])
        names = ["churn-%02d" % i for i in range(20)]
        for n in names:
            c.create_job("pytorch-job", "fol", mutate=lambda j, n=n: j["metadata"].update(name=n))
            c.delete(JOBS % "fol" + "/" + n)
        live = c.create_job("pytorch-job", "fol")
        # the follower has seen every event (its debug log), the live Job's last
        def seen():
            evs = [e for e in log_events(env.webhook) if e.get("msg") == "informer: event"]
            return (any(e.get("job") == "fol/churn-19" and e.get("type") == "deleted"
                        for e in evs)
                    and any(e.get("job") == "fol/pytorch-job" for e in evs))
        wait_for(seen, "the follower's informer events")
        self.assertEqual(c.names("fol"), [])  # a follower makes nothing
        api.clear_requests()
        status, lease = api.get(self.LEASE + "/volcano-plugin-webhook")
        lease["spec"]["holderIdentity"] = ""
        lease["spec"]["leaseDurationSeconds"] = 1
        status, _ = api.call("PUT", self.LEASE + "/volcano-plugin-webhook", lease)
        self.assertEqual(status, 200)
        c.wait_objects(live)
        self.assertEqual(c.names("fol"), sorted(expected_objects(live)))
        time.sleep(1)
        touched = [r for r in api.requests() if "/churn-" in r["path"]]
        self.assertEqual(touched, [])


class LeaderElectionTest(unittest.TestCase):
    """Two replicas against one API server: one reconciles; kill it, the other takes over."""

    LEASE = "/apis/coordination.k8s.io/v1/namespaces/vpw-system/leases/volcano-plugin-webhook"
    ARGS = ["--leader-elect-resource-namespace=vpw-system", "--leader-elect-lease-duration=3s",
            "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=1s",
            "--resync-period=" + RESYNC, "-v", "3"]

    def setUp(self):
        self.env = harness.Env(start_webhook=False)
        self.addCleanup(self.env.close)
        self.env.start()
        self.c = Cluster(self.env.api)
        self.replicas = []
        for k in range(2):
            d = os.path.join(self.env.dir, "replica%d" % k)
            os.makedirs(d)
            w = harness.Webhook(d, self.env.certs, self.env.kubeconfig, extra_args=self.ARGS)
            self.addCleanup(w.stop)
            self.replicas.append(w.start())

    def holder(self):
        status, lease = self.env.api.get(self.LEASE)
        return lease["spec"].get("holderIdentity") if status == 200 else None

    def reconciles(self, w):
        """Job hooks this replica has run (its debug log)."""
        return sum(1 for e in log_events(w) if e.get("msg") == "reconcile: hook done")

    def led(self, w, identity=None):
        """Whether replica w has logged that it leads (as identity)."""
        return any(e.get("msg") == "leader: leading"
                   and (identity is None or e.get("identity") == identity)
                   for e in log_events(w)) and any(
            e.get("msg") == "reconcile: leading, reconciling" for e in log_events(w))

    def leader_index(self):
        def leading():
            got = [i for i, w in enumerate(self.replicas) if self.led(w)]
            return got if len(got) == 1 and self.holder() else None
        return wait_for(leading, "one leader")[0]

    def test_one_leader_then_takeover(self):
        lead = self.leader_index()
        other = 1 - lead
        holder = self.holder()
        self.assertTrue(self.led(self.replicas[lead], holder))
        self.assertRegex(holder, r"^.+_[0-9a-f]{8}$")
        job = self.c.create_job("mpi-job", "ha")
        self.c.wait_objects(job)
        self.assertGreater(self.reconciles(self.replicas[lead]), 0)
        self.assertEqual(self.reconciles(self.replicas[other]), 0)
        time.sleep(2.5)  # a resync: still only the leader works
        self.assertEqual(self.reconciles(self.replicas[other]), 0)
        self.assertEqual(self.holder(), holder)

        # kill -9: no release, the lease must expire; the other replica takes over
        self.replicas[lead].process.proc.send_signal(signal.SIGKILL)
        self.replicas[lead].process.proc.wait()
        new = wait_for(lambda: (self.holder() or holder) != holder and self.holder(),
                       "takeover by the other replica", timeout=3 + 2 * 2.2 + WAIT / 2)
        self.assertTrue(self.led(self.replicas[other], new))
        self.c.delete(CORE % ("ha", "configmaps") + "/mpi-job-svc")
        wait_for(lambda: self.c.get("ha", "configmaps", "mpi-job-svc"), "new leader repairs")
        self.assertGreater(self.reconciles(self.replicas[other]), 0)
        job2 = self.c.create_job("pytorch-job", "ha")
        self.c.wait_objects(job2)
        self.assertEqual(self.c.names("ha"), sorted(list(expected_objects(job))
                                                    + list(expected_objects(job2))))

        # SIGTERM on the leader releases the lease (holder "")
        self.replicas[other].stop()
        status, lease = self.env.api.get(self.LEASE)
        self.assertEqual(lease["spec"]["holderIdentity"], "")
        self.assertEqual(lease["spec"]["leaseDurationSeconds"], 1)
        self.assertEqual(lease["spec"]["leaseTransitions"], 1)


if __name__ == "__main__":
    unittest.main()
