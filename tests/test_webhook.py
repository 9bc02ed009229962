# SPDX-License-Identifier: Apache-2.0
"""test_webhook.py - the real binary over HTTPS against the test API server.

Every example Job of the plugin guide goes through `serve`: each pod is built as
Volcano's controller would, defaulted as kube-apiserver sends it, admitted, its
patch applied with python3-jsonpatch (RFC 6902 reference), the result checked for
exact values and validated against the Kubernetes Pod schema (kubernetes-models).
Then: re-invocation gives an empty patch, error policy (D7), bad input, render.
"""

import json
import os
import subprocess
import tempfile
import unittest

import harness

EXAMPLE_JOBS = ["mpi-job", "lm-mpi-job", "pytorch-job", "ray-cluster-job",
                "tensorflow-dist-mnist", "tensorflow-dist-mnist-with-comments",
                "tensorflow-training"]


def container(pod, name=None):
    cs = pod["spec"]["containers"]
    return cs[0] if name is None else next(c for c in cs if c["name"] == name)


def env_of(c):
    """name -> value (or valueFrom) of the LAST entry of each name (it wins at run time)."""
    out = {}
    for e in c.get("env") or []:
        out[e["name"]] = e.get("value", e.get("valueFrom"))
    return out


def cm_ref(job, key):
    return {"configMapKeyRef": {"name": job + "-svc", "key": key}}


class ExampleJobsTest(unittest.TestCase):
    """One webhook and API server for all examples (start-up is the slow part)."""

    @classmethod
    def setUpClass(cls):
        # Both tensorflow-dist-mnist files name their Job alike: the commented one gets
        # a namespace of its own (its pods are keyed "commented/<name>" below).
        cls.jobs = {name: harness.load_job(name, namespace="commented" if "comments" in name
                                           else "default") for name in EXAMPLE_JOBS}
        cls.env = harness.Env(jobs=list(cls.jobs.values()))
        cls.env.start()
        cls.stored = {j["metadata"]["name"]: j for j in cls.env.jobs}
        cls.mutated = {}
        for k, job in enumerate(cls.env.jobs):
            for n, (task, i) in enumerate(harness.pod_names(job)):
                pod = harness.build_pod(job, task, i)
                # Alternate v1/v1beta1 and an object without metadata.namespace (D6).
                rev = harness.review(pod, job["metadata"]["namespace"],
                                     version="v1beta1" if (k + n) % 2 else "v1",
                                     omit_namespace=(n % 3 == 1))
                resp = cls.env.webhook.admit(rev)
                ns = job["metadata"]["namespace"]
                key = pod["metadata"]["name"] if ns == "default" else ns + "/" + pod["metadata"]["name"]
                cls.mutated[key] = (pod, rev, resp,
                                                       harness.apply_patch(rev["request"]["object"], resp))

    @classmethod
    def tearDownClass(cls):
        cls.env.close()

    def pod(self, name):
        return self.mutated[name][3]

    def test_every_pod_allowed_and_schema_valid(self):
        self.assertEqual(len(self.mutated), 3 + 3 + 3 + 3 + 3 + 3 + 5)
        for name, (_, _, resp, _) in self.mutated.items():
            self.assertTrue(resp["allowed"], name)
            self.assertNotIn("warnings", resp, name)
            self.assertIsNotNone(harness.decode_patch(resp), name)
        harness.validate_pods([m[3] for m in self.mutated.values()])

    def test_reinvocation_gives_empty_patch(self):
        for name, (_, rev, _, patched) in self.mutated.items():
            again = harness.review(patched, rev["request"]["namespace"])
            resp = self.env.webhook.admit(again)
            self.assertTrue(resp["allowed"], name)
            self.assertNotIn("patch", resp, name)
            self.assertNotIn("patchType", resp, name)

    def test_pytorch_job(self):
        master = self.pod("pytorch-job-master-0")
        worker1 = self.pod("pytorch-job-worker-1")
        c = container(master)
        self.assertEqual(master["spec"]["hostname"], "pytorch-job-master-0")
        self.assertEqual(master["spec"]["subdomain"], "pytorch-job")
        env = env_of(c)
        self.assertEqual(env["MASTER_ADDR"], "pytorch-job-master-0.pytorch-job")
        self.assertEqual(env["MASTER_PORT"], "23456")
        self.assertEqual(env["WORLD_SIZE"], "3")
        self.assertEqual(env["RANK"], "0")
        self.assertEqual(env["VC_MASTER_HOSTS"], cm_ref("pytorch-job", "VC_MASTER_HOSTS"))
        self.assertEqual(env["VC_WORKER_NUM"], cm_ref("pytorch-job", "VC_WORKER_NUM"))
        self.assertEqual(env_of(container(worker1))["RANK"], "2")
        self.assertIn({"name": "pytorchjob-port", "containerPort": 23456}, c["ports"])
        self.assertIn({"name": "pytorch-job-svc", "mountPath": "/etc/volcano"}, c["volumeMounts"])
        self.assertIn({"name": "pytorch-job-svc", "configMap": {"name": "pytorch-job-svc"}},
                      master["spec"]["volumes"])
        # The service-account volume kube-apiserver added is still first.
        self.assertTrue(master["spec"]["volumes"][0]["name"].startswith("kube-api-access-"))

    def test_lm_mpi_job_gets_implied_svc_and_ssh(self):
        master = self.pod("lm-mpi-job-mpimaster-0")
        worker = self.pod("lm-mpi-job-mpiworker-1")
        self.assertEqual(env_of(container(master))["MPI_HOST"],
                         "lm-mpi-job-mpiworker-0.lm-mpi-job,lm-mpi-job-mpiworker-1.lm-mpi-job")
        self.assertNotIn("MPI_HOST", env_of(container(worker)))
        for pod in (master, worker):
            c = container(pod)
            self.assertEqual([p for p in c["ports"] if p["containerPort"] == 22],
                             [{"name": "mpijob-port", "containerPort": 22}])
            self.assertIn({"name": "lm-mpi-job-ssh", "mountPath": "/root/.ssh", "subPath": ".ssh"},
                          c["volumeMounts"])
            ssh = next(v for v in pod["spec"]["volumes"] if v["name"] == "lm-mpi-job-ssh")
            self.assertEqual(ssh["secret"]["defaultMode"], 384)
            self.assertEqual(ssh["secret"]["secretName"], "lm-mpi-job-ssh")

    def test_mpi_job_declared_port_not_duplicated(self):
        c = container(self.pod("mpi-job-mpimaster-0"))
        # mpi-job.yaml declares mpijob-port 22 itself and enables only ssh and svc.
        self.assertEqual(c["ports"], [{"containerPort": 22, "name": "mpijob-port", "protocol": "TCP"}])
        env = env_of(c)
        self.assertEqual(env["VC_MPIWORKER_HOSTS"], cm_ref("mpi-job", "VC_MPIWORKER_HOSTS"))
        self.assertNotIn("MPI_HOST", env)

    def test_ray_cluster_job(self):
        head = container(self.pod("ray-cluster-job-head-0"), "head")
        worker = container(self.pod("ray-cluster-job-worker-1"), "worker")
        self.assertEqual(head["command"], [
            "sh", "-c", "ray start --head --block --dashboard-host=0.0.0.0 --port=6379 "
                        "--dashboard-port=8265 --ray-client-server-port=10001"])
        self.assertEqual([(p["name"], p["containerPort"]) for p in head["ports"]],
                         [("gcs", 6379), ("dashboard", 8265), ("client-server", 10001)])
        self.assertEqual(worker["command"], [
            "sh", "-c", "ray start --block --address=ray-cluster-job-head-0.ray-cluster-job:6379"])
        self.assertNotIn("ports", worker)

    def test_tensorflow_training_tf_config(self):
        ps1 = env_of(container(self.pod("tensorflow-training-ps-1")))["TF_CONFIG"]
        w2 = env_of(container(self.pod("tensorflow-training-worker-2")))["TF_CONFIG"]
        ps = ["tensorflow-training-ps-%d.tensorflow-training:2222" % i for i in range(2)]
        workers = ["tensorflow-training-worker-%d.tensorflow-training:2222" % i for i in range(3)]
        self.assertEqual(ps1, json.dumps({"cluster": {"ps": ps, "worker": workers},
                                          "task": {"type": "ps", "index": 1}},
                                         separators=(",", ":")))
        self.assertEqual(json.loads(w2)["task"], {"type": "worker", "index": 2})

    def test_tensorflow_dist_mnist_env_and_svc(self):
        for name in ("tensorflow-dist-mnist-worker-1",):
            c = container(self.pod(name))
            env = env_of(c)
            self.assertEqual(env["VK_TASK_INDEX"], "1")
            self.assertEqual(env["VC_TASK_INDEX"], "1")
            self.assertEqual(env["VC_PS_HOSTS"], cm_ref("tensorflow-dist-mnist", "VC_PS_HOSTS"))
            self.assertNotIn("TF_CONFIG", env)

    def test_render_review_matches_serve(self):
        """render -f JOB --review REVIEW prints what serve answered, byte for byte."""
        exe = harness.binary()
        for name in ("pytorch-job-worker-0", "ray-cluster-job-head-0", "lm-mpi-job-mpimaster-0"):
            _, rev, _, _ = self.mutated[name]
            job_file = os.path.join(harness.EXAMPLES, rev["request"]["object"]["metadata"]
                                    ["ownerReferences"][0]["name"] + ".yaml")
            status, body = self.env.webhook.post(rev)
            self.assertEqual(status, 200)
            with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
                json.dump(rev, f)
                f.flush()
                r = subprocess.run([exe, "render", "-f", job_file, "--review", f.name],
                                   capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout), body, name)


class ErrorPolicyTest(unittest.TestCase):
    """D7: a missing Job is allowed with a warning; an unreadable one is denied (500)
    unless --job-lookup-failure=allow."""

    def setUp(self):
        self.job = harness.load_job("pytorch-job")

    def start(self, args=()):
        env = harness.Env(jobs=[self.job], webhook_args=list(args), start_webhook=False)
        self.addCleanup(env.close)
        env.start()
        # A Job in the informer's cache is never read from the API; these tests are about
        # the one GET of a cache miss, so keep the cache empty: every LIST of Jobs fails.
        env.api.add_faults([{"method": "GET", "path_regex": "/v1alpha1/jobs\\?", "status": 503,
                             "reason": "ServiceUnavailable", "message": "no list in this test",
                             "count": -1}])
        env.start_webhook_now()
        pod = harness.build_pod(env.jobs[0], "worker", 0)
        return env, harness.review(pod, "default")

    def test_job_not_found_allowed_with_warning(self):
        env, rev = self.start()
        rev["request"]["object"]["metadata"]["ownerReferences"][0]["name"] = "gone"
        resp = env.webhook.admit(rev)
        self.assertTrue(resp["allowed"])
        self.assertNotIn("patch", resp)
        self.assertEqual(resp["warnings"], ["volcano job default/gone not found, pod not mutated"])

    def test_api_error_denies_500(self):
        env, rev = self.start()
        env.api.add_faults([{"method": "GET", "path_regex": "/jobs/pytorch-job$", "status": 500,
                             "reason": "InternalError", "message": "boom", "count": -1}])
        resp = env.webhook.admit(rev)
        self.assertFalse(resp["allowed"])
        self.assertEqual(resp["status"]["code"], 500)
        self.assertEqual(resp["status"]["message"],
                         "cannot read volcano job default/pytorch-job: InternalError: boom")

    def test_api_error_allowed_by_flag(self):
        env, rev = self.start(["--job-lookup-failure=allow"])
        env.api.add_faults([{"method": "GET", "path_regex": "/jobs/pytorch-job$", "status": 503,
                             "reason": "ServiceUnavailable", "message": "down", "count": -1}])
        resp = env.webhook.admit(rev)
        self.assertTrue(resp["allowed"])
        self.assertNotIn("patch", resp)
        self.assertEqual(resp["warnings"], [
            "volcano job default/pytorch-job could not be read (ServiceUnavailable: down), "
            "pod not mutated"])

    def test_api_stall_times_out_and_denies(self):
        env, rev = self.start(["--job-lookup-timeout=300ms"])
        env.api.add_faults([{"method": "GET", "path_regex": "/jobs/pytorch-job$",
                             "status": 200, "delay_ms": 3000, "count": 1}])
        resp = env.webhook.admit(rev)
        self.assertFalse(resp["allowed"])
        self.assertEqual(resp["status"]["code"], 500)
        self.assertTrue(resp["status"]["message"].startswith(
            "cannot read volcano job default/pytorch-job: "), resp["status"]["message"])

    def test_ray_without_head_denied_400(self):
        self.job["spec"]["tasks"] = [t for t in self.job["spec"]["tasks"] if t["name"] != "master"]
        self.job["spec"]["plugins"] = {"ray": []}
        env, rev = self.start()
        resp = env.webhook.admit(rev)
        self.assertFalse(resp["allowed"])
        self.assertEqual(resp["status"]["code"], 400)
        self.assertEqual(resp["status"]["message"],
                         "ray plugin: job pytorch-job doesn't have head task head")

    def test_bad_input(self):
        env, rev = self.start()
        status, body = env.webhook.post(b"{not json", raw=True)
        self.assertEqual(status, 400)
        self.assertEqual(body["kind"], "Status")
        self.assertEqual(body["code"], 400)
        status, body = env.webhook.post({"kind": "AdmissionReview", "apiVersion": "v1"})
        self.assertEqual(status, 400)
        # The webhook is still there and still right.
        self.assertTrue(env.webhook.admit(rev)["allowed"])


class CommandLineTest(unittest.TestCase):
    def run_exe(self, *args):
        return subprocess.run([harness.binary(), *args], capture_output=True, text=True,
                              timeout=60)

    def test_serve_help_and_bad_flags(self):
        r = self.run_exe("serve", "--help")
        self.assertEqual(r.returncode, 0)
        for flag in ("--bind-address", "--port", "--tls-cert-file", "--tls-private-key-file",
                     "--kubeconfig", "--job-lookup-failure"):
            self.assertIn(flag, r.stdout)
        r = self.run_exe("serve", "--no-such-flag")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--no-such-flag", r.stderr)
        r = self.run_exe("serve", "--job-lookup-failure=maybe")
        self.assertEqual(r.returncode, 2)
        self.assertIn("job-lookup-failure", r.stderr)

    def test_render_all_examples_schema_valid(self):
        pods = []
        for name in EXAMPLE_JOBS:
            r = self.run_exe("render", "-f", os.path.join(harness.EXAMPLES, name + ".yaml"))
            self.assertEqual(r.returncode, 0, r.stderr)
            out = json.loads(r.stdout)
            self.assertEqual(out["kind"], "List")
            pods.extend(out["items"])
        self.assertEqual(len(pods), 23)
        harness.validate_pods(pods)

    def test_render_job_without_tasks(self):
        r = self.run_exe("render", "-f", os.path.join(harness.EXAMPLES, "example-job.yaml"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["items"], [])

    def test_render_patch_output(self):
        r = self.run_exe("render", "-f", os.path.join(harness.EXAMPLES, "lm-mpi-job.yaml"),
                         "-o", "patch")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual([p["pod"] for p in out], ["lm-mpi-job-mpimaster-0",
                                                   "lm-mpi-job-mpiworker-0",
                                                   "lm-mpi-job-mpiworker-1"])
        self.assertIn({"op": "add", "path": "/spec/hostname", "value": "lm-mpi-job-mpiworker-1"},
                      out[2]["patch"])

    def test_render_bad_files(self):
        with tempfile.TemporaryDirectory() as d:
            bad_yaml = os.path.join(d, "bad.yaml")
            with open(bad_yaml, "w") as f:
                f.write("kind: Job\nmetadata: [unclosed\n")
            not_job = os.path.join(d, "pod.yaml")
            with open(not_job, "w") as f:
                f.write("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
            for path, fragment in ((os.path.join(d, "missing.yaml"), "missing.yaml"),
                                   (bad_yaml, "line "),
                                   (not_job, "not a batch.volcano.sh/v1alpha1 Job")):
                r = self.run_exe("render", "-f", path)
                self.assertEqual(r.returncode, 1, path)
                self.assertEqual(r.stdout, "", path)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn(path, r.stderr)
                self.assertIn(fragment, r.stderr)


if __name__ == "__main__":
    unittest.main()
