# SPDX-License-Identifier: Apache-2.0
"""test_job_mistakes.py - the Jobs people write wrong, each told to its author (D15-D18).

Every example of "No silent failures" except the user's own settings silently lost
(tests/test_user_values.py): nothing happens and nobody is told, a pod the API server
would refuse, wrong values, and the adopted <job>-ssh Secret without authorized_keys.
Each one as a Job and as a pod review, through the real binary:
  render -f JOB            stderr names the diagnostic; exit 1 only when a pod is denied
  render -f JOB --strict   exit 1 on any diagnostic
  serve /jobs/validate     allowed, the diagnostics as `warnings`, exactly, v1 and v1beta1
  serve /pods/mutate       the exact denial (code 400, message) or, for an allowed pod,
                           the Job's diagnostics among its warnings, and the fixed point
                           (the webhook on its own output changes nothing)
"""
import base64
import copy
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import uuid

import harness

P = "volcano-plugin-webhook: render: "
JOB_PATH = "/jobs/validate?timeout=10s"
WAIT = 20.0


def job(name, plugins, tasks):
    """A Volcano Job as a user writes it (the API server fills uid and resourceVersion)."""
    return {"apiVersion": harness.JOB_API_VERSION, "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
                     "plugins": plugins, "tasks": tasks}}


def task(name, replicas=1, containers=None, init=None):
    spec = {"containers": containers or [{"name": name, "image": "busybox"}],
            "restartPolicy": "OnFailure"}
    if init:
        spec["initContainers"] = init
    return {"name": name, "replicas": replicas, "template": {"spec": spec}}


LONG = "j" * 59  # its pod j...-a-10 has a 64-character hostname

TF_CONFIG_MSG = (
    "tensorflow plugin: TF_CONFIG would be 223988 bytes, more than the 131072 (128 KiB) one "
    "environment string can hold (the kernel's MAX_ARG_STRLEN: \"argument list too long\"), so "
    "no container can start: run fewer replicas (spec.tasks[].replicas)")
SVC_HOSTS_MSG = (
    "svc plugin: env VC_WORKER_HOSTS would be 160906 bytes, more than the 131072 (128 KiB) one "
    "environment string can hold (the kernel's MAX_ARG_STRLEN), so no container starts: pass "
    "--inject-hosts-env=false in spec.plugins.svc and read the host files in /etc/volcano, or "
    "run fewer worker replicas")

RAY_GCS_CHAIN = ("ray plugin: port name gcs already used by port 7000 in container head, port "
                 "6379 not added")
RAY_GCS_MSG = (RAY_GCS_CHAIN + "; the head Service sends gcs to 7000, where ray does not listen: "
               "make it 6379 in spec.tasks[0].template or pass --port=7000")

# name: (Job, the Job's diagnostics exactly (as /jobs/validate warns, before the cut to
# 256 characters), [(task, index, outcome)]), outcome "allowed" (the Job's diagnostics among
# the pod's warnings, each once), ("allowed", [the pod's warnings exactly]) or
# ("denied", message).
CASES = {
    # ---- nothing happens and nobody is told
    "pytorch-master-names-no-task": (
        job("pt", {"pytorch": ["--master=chief"], "svc": []}, [task("master"), task("worker", 2)]),
        ["pytorch plugin: no task named \"chief\" (--master), so no pod gets MASTER_ADDR, "
         "MASTER_PORT, WORLD_SIZE or RANK: name the master task with --master in "
         "spec.plugins.pytorch, or rename the task"],
        [("master", 0, "allowed"), ("worker", 1, "allowed")]),
    "mpi-launcher-worker": (
        job("mj", {"mpi": [], "ssh": [], "svc": []}, [task("launcher"), task("worker", 2)]),
        ["mpi plugin: no task named \"master\" (--master), so no pod gets MPI_HOST: name the "
         "launcher task with --master in spec.plugins.mpi, or rename the task"],
        [("launcher", 0, "allowed"), ("worker", 0, "allowed")]),
    "ray-containers-not-named": (
        job("rj", {"ray": [], "svc": []},
            [task("head", containers=[{"name": "main", "image": "ray"}]),
             task("worker", 2, containers=[{"name": "main", "image": "ray"}])]),
        ["ray plugin: task head has no container named \"head\" (--headContainer), so none gets "
         "\"ray start\" or the ports gcs, dashboard, client-server: rename one, or pass "
         "--headContainer=NAME in spec.plugins.ray (containers: main)",
         "ray plugin: task worker has no container named \"worker\" (--workerContainer), so none "
         "gets \"ray start\": rename one, or pass --workerContainer=NAME in spec.plugins.ray "
         "(containers: main)"],
        [("head", 0, "allowed"), ("worker", 1, "allowed")]),
    "tensorflow-chief-boss": (
        job("tj", {"tensorflow": ["--chief=boss"], "svc": []},
            [task("chief"), task("ps"), task("worker", 2)]),
        ["tensorflow plugin: no task named \"boss\" (--chief), so TF_CONFIG has no chief: name "
         "the task with --chief in spec.plugins.tensorflow, or rename the task"],
        [("chief", 0, "allowed"), ("worker", 0, "allowed")]),
    "plugins-a-list": (
        job("lj", ["ssh", "svc"], [task("main", 2)]),
        ["spec.plugins is a list, not a map of plugin name to arguments, so no plugin runs: "
         "write it as {\"ssh\": [], \"svc\": []}"],
        [("main", 0, "allowed")]),
    # ---- a pod that the API server then refuses
    "job-name-with-a-dot": (
        job("a.b", {"svc": []}, [task("master")]),
        ["svc plugin: job name \"a.b\" cannot be a pod subdomain (a DNS-1123 label has no '.'): "
         "rename the job"],
        [("master", 0, ("denied", "svc plugin: job name \"a.b\" cannot be a pod subdomain (a "
                        "DNS-1123 label has no '.'): rename the job"))]),
    "hostname-of-64-characters": (
        job(LONG, {"svc": []}, [task("a", 11)]),
        ["svc plugin: pod hostname \"%s-a-10\" has 64 characters, more than the 63 of a "
         "DNS-1123 label: shorten the job name to at most 58 characters, or the name of task a"
         % LONG],
        [("a", 9, "allowed"),
         ("a", 10, ("denied", "svc plugin: pod hostname \"%s-a-10\" (the pod's name) cannot be "
                    "a hostname (a DNS-1123 label has at most 63 characters): shorten the job "
                    "name to at most 58 characters" % LONG))]),
    "wait-for-master-name-taken": (
        job("wm", {"pytorch": ["--wait-master-enabled"], "svc": []},
            [task("master"),
             task("worker", containers=[{"name": "worker", "image": "busybox"},
                                        {"name": "wait-for-master", "image": "busybox"}])]),
        ["pytorch plugin: container \"wait-for-master\" of task worker has the name of the init "
         "container --wait-master-enabled adds, and the API server refuses two containers of one "
         "name: rename the container in spec.tasks[1].template"],
        [("master", 0, "allowed"),
         ("worker", 0, ("denied", "pytorch plugin: the pod would have a container and an init "
                        "container both named \"wait-for-master\", which the API server "
                        "refuses: rename the container in the template of task worker"))]),
    "tf-config-over-128-kib": (
        job("tf", {"tensorflow": [], "svc": []}, [task("ps"), task("worker", 9000)]),
        [SVC_HOSTS_MSG, TF_CONFIG_MSG],  # registry order: svc before tensorflow
        [("ps", 0, ("denied", "tensorflow plugin: env TF_CONFIG of container \"ps\" would be "
                    "223981 bytes, more than the 131072 (128 KiB) one environment string can "
                    "hold (the kernel's MAX_ARG_STRLEN), so the container cannot start: run "
                    "fewer replicas (spec.tasks[].replicas)"))]),
    # ---- wrong values, told nowhere
    "two-pytorch-masters": (
        job("p2", {"pytorch": [], "svc": []}, [task("master", 2), task("worker", 2)]),
        ["pytorch plugin: task master has 2 replicas and every master replica gets RANK 0, so "
         "the ranks collide and the training waits forever: give the master task 1 replica and "
         "put the others in the worker task"],
        [("master", 1, "allowed")]),
    "ray-head-6379-renamed": (
        job("r6", {"ray": [], "svc": []},
            [task("head", containers=[{"name": "head", "image": "ray",
                                       "ports": [{"name": "redis", "containerPort": 6379}]}]),
             task("worker", 1)]),
        ["ray plugin: container \"head\" of task head declares port 6379 as \"redis\", so the "
         "plugin does not add \"gcs\" and the Service's port gcs has no endpoints: name the port "
         "\"gcs\" in spec.tasks[0].template"],
        [("head", 0, "allowed")]),
    # the head pod gets the chain's own warning, not the Job's diagnostic too; the worker
    # pod, which the chain says nothing about, gets the diagnostic
    "ray-head-gcs-renumbered": (
        job("rg", {"ray": [], "svc": []},
            [task("head", containers=[{"name": "head", "image": "ray",
                                       "ports": [{"name": "gcs", "containerPort": 7000}]}]),
             task("worker", 1)]),
        [RAY_GCS_MSG],
        [("head", 0, ("allowed", [RAY_GCS_CHAIN])), ("worker", 0, ("allowed", [RAY_GCS_MSG]))]),
}


def is_allowed(outcome):
    return outcome == "allowed" or outcome[0] == "allowed"


def cut(messages):
    """What the Job webhook sends: each message cut to 256 characters (DIAGNOSE_WARNING_CHARS)."""
    return [m[:256] for m in messages]


def job_review(obj, version="v1", operation="CREATE"):
    """An AdmissionReview of a Volcano Job as kube-apiserver sends it to a validating webhook."""
    gvk = {"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"}
    gvr = {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "jobs"}
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/" + version,
            "request": {"uid": str(uuid.uuid4()), "kind": gvk, "resource": gvr,
                        "requestKind": dict(gvk), "requestResource": dict(gvr),
                        "name": obj["metadata"]["name"],
                        "namespace": obj["metadata"]["namespace"], "operation": operation,
                        "userInfo": {"username": "alice"}, "object": copy.deepcopy(obj),
                        "oldObject": None, "dryRun": False}}


def render(path, *args):
    p = subprocess.run([harness.binary(), "render", "-f", path, "-o", "patch", *args],
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


class Render(unittest.TestCase):
    """render prints each diagnostic on stderr; --strict makes any of them exit 1."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="vpw-mistakes-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_every_case(self):
        for name, (j, diags, pods) in CASES.items():
            with self.subTest(name):
                path = os.path.join(self.dir, name + ".json")
                with open(path, "w") as f:
                    json.dump(j, f)
                lines = ["%swarning: job default/%s: %s" % (P, j["metadata"]["name"], m)
                         for m in diags]
                denied = not all(is_allowed(o) for _, _, o in pods)
                rc, out, err = render(path)
                got = [line for line in err.splitlines() if line.startswith(P + "warning: job ")]
                self.assertEqual(sorted(got), sorted(lines), err)
                # a pod of the Job that would be denied makes render fail on its own
                self.assertEqual(rc, 1 if denied else 0, err)
                for t, i, outcome in pods:
                    if not is_allowed(outcome):
                        self.assertIn("%spod %s-%s-%d denied (code 400): %s" % (
                            P, j["metadata"]["name"], t, i, outcome[1]), err.splitlines())
                rc, _, err = render(path, "--strict")
                self.assertEqual(rc, 1, err)
                if not denied:
                    n = len(diags)
                    self.assertEqual(err.splitlines()[-1], "%s%d diagnostic%s (--strict)" % (
                        P, n, "" if n == 1 else "s"))


    def test_pod_reviews(self):
        """render --review answers a pod's review as serve does (its Job from the file)."""
        for name, (j, diags, pods) in CASES.items():
            stored = copy.deepcopy(j)
            stored["metadata"]["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
            path = os.path.join(self.dir, name + ".job.json")
            with open(path, "w") as f:
                json.dump(stored, f)
            for t, i, outcome in pods:
                with self.subTest(name, pod="%s-%d" % (t, i)):
                    rev = harness.review(harness.build_pod(stored, t, i), "default")
                    rpath = os.path.join(self.dir, name + ".review.json")
                    with open(rpath, "w") as f:
                        json.dump(rev, f)
                    p = subprocess.run([harness.binary(), "render", "-f", path, "--review", rpath],
                                       capture_output=True, text=True, timeout=120)
                    resp = json.loads(p.stdout)["response"]
                    # a denial is printed and exits 1, as render of a denied pod
                    self.assertEqual(p.returncode, 0 if resp["allowed"] else 1, p.stderr)
                    self.assertEqual(resp["uid"], rev["request"]["uid"])
                    if outcome == "allowed":
                        self.assertTrue(resp["allowed"], resp)
                        for m in diags:
                            self.assertEqual(resp.get("warnings", []).count(m[:256]), 1, resp)
                    elif is_allowed(outcome):
                        self.assertTrue(resp["allowed"], resp)
                        self.assertEqual(resp.get("warnings", []), outcome[1])
                    else:
                        self.assertFalse(resp["allowed"], resp)
                        self.assertEqual(resp["status"]["code"], 400)
                        self.assertEqual(resp["status"]["message"], outcome[1])
                    p = subprocess.run([harness.binary(), "render", "-f", path, "--review", rpath,
                                        "--strict"], capture_output=True, text=True, timeout=120)
                    self.assertEqual(p.returncode, 1, p.stderr)


class Serve(unittest.TestCase):
    """One webhook (its Jobs cache on), every case's Job in the test API server."""

    @classmethod
    def setUpClass(cls):
        cls.env = harness.Env(jobs=[c[0] for c in CASES.values()],
                              webhook_args=["--leader-elect=false"])
        cls.env.start()
        cls.jobs = {j["metadata"]["name"]: j for j in cls.env.jobs}

    @classmethod
    def tearDownClass(cls):
        cls.env.close()

    def stored(self, j):
        return self.jobs[j["metadata"]["name"]]

    def test_job_webhook_warns_exactly(self):
        for name, (j, diags, _) in CASES.items():
            for version in ("v1", "v1beta1"):
                with self.subTest(name, version=version):
                    rev = job_review(self.stored(j), version)
                    status, body = self.env.webhook.post(rev, path=JOB_PATH)
                    self.assertEqual(status, 200, body)
                    self.assertEqual(body["apiVersion"], "admission.k8s.io/" + version)
                    resp = body["response"]
                    self.assertEqual(resp["uid"], rev["request"]["uid"])
                    self.assertTrue(resp["allowed"], resp)
                    self.assertEqual(resp["warnings"], cut(diags))
                    self.assertNotIn("patch", resp)

    def test_pod_reviews(self):
        for name, (j, diags, pods) in CASES.items():
            stored = self.stored(j)
            for t, i, outcome in pods:
                for version in ("v1", "v1beta1"):
                    with self.subTest(name, pod="%s-%d" % (t, i), version=version):
                        pod = harness.build_pod(stored, t, i)
                        resp = self.env.webhook.admit(harness.review(pod, "default", version))
                        if outcome == "allowed":
                            self.assert_allowed(stored, pod, resp, diags, version)
                        elif is_allowed(outcome):
                            self.assertEqual(resp.get("warnings", []), outcome[1])
                            self.assert_allowed(stored, pod, resp, [], version)
                        else:
                            self.assertFalse(resp["allowed"], resp)
                            self.assertEqual(resp["status"]["code"], 400)
                            self.assertEqual(resp["status"]["message"], outcome[1])
                            self.assertNotIn("patch", resp)

    def assert_allowed(self, stored, pod, resp, diags, version):
        self.assertTrue(resp["allowed"], resp)
        warnings = resp.get("warnings", [])
        # D16: the Job's diagnostics reach its pods too, each once, within kube-apiserver's
        # limits (256 characters each, 4096 in all)
        for m in diags:
            self.assertEqual(warnings.count(m[:256]), 1, (m, warnings))
        self.assertEqual(len(warnings), len(set(warnings)), warnings)
        self.assertTrue(all(len(w) <= 256 for w in warnings), warnings)
        self.assertLessEqual(sum(len(w) for w in warnings), 4096)
        # the fixed point: the chain on its own output changes nothing
        mutated = harness.apply_patch(pod, resp)
        again = self.env.webhook.admit(harness.review(mutated, "default", version))
        self.assertTrue(again["allowed"], again)
        self.assertNotIn("patch", again, again)
        self.assertEqual(again.get("warnings", []), warnings)


def b64d(s):
    return base64.b64decode(s).decode()


class AdoptedSecret(unittest.TestCase):
    """D18: a <job>-ssh Secret the Job owns, written by an older Volcano without
    authorized_keys, is completed by the leader from its own public key; the key pair
    stays as it was (D11)."""

    def test_authorized_keys_added_from_the_public_key(self):
        j = job("old-ssh", {"ssh": [], "svc": []}, [task("main", 2)])
        env = harness.Env(jobs=[j], start_webhook=False,
                          webhook_args=["--leader-elect=false"])
        self.addCleanup(env.close)
        env.start()
        stored = env.jobs[0]
        priv = "-----BEGIN RSA PRIVATE KEY-----\nold\n-----END RSA PRIVATE KEY-----\n"
        pub = "ssh-rsa AAAAold\n"
        secret = {"apiVersion": "v1", "kind": "Secret",
                  "metadata": {"name": "old-ssh-ssh", "namespace": "default",
                               "ownerReferences": [{
                                   "apiVersion": harness.JOB_API_VERSION, "kind": "Job",
                                   "name": "old-ssh", "uid": stored["metadata"]["uid"],
                                   "controller": True, "blockOwnerDeletion": True}]},
                  "data": {"id_rsa": base64.b64encode(priv.encode()).decode(),
                           "id_rsa.pub": base64.b64encode(pub.encode()).decode()}}
        env.api.create_objects([secret])
        env.start_webhook_now()
        deadline = time.monotonic() + WAIT
        data = {}
        while time.monotonic() < deadline:
            status, got = env.api.get("/api/v1/namespaces/default/secrets/old-ssh-ssh")
            data = {k: b64d(v) for k, v in got.get("data", {}).items()}
            if "authorized_keys" in data and "config" in data:
                break
            time.sleep(0.05)
        self.assertEqual(data.get("authorized_keys"), pub, data)
        self.assertEqual(data["id_rsa"], priv)  # never new keys
        self.assertEqual(data["id_rsa.pub"], pub)
        self.assertEqual(sorted(data), ["authorized_keys", "config", "id_rsa", "id_rsa.pub"])


if __name__ == "__main__":
    unittest.main()
