# SPDX-License-Identifier: Apache-2.0
"""test_user_values.py - the user's own settings are never lost silently (D5).

Each example of "the user's own setting silently lost" goes through the real
binary twice: as a pod AdmissionReview to `serve` (over HTTPS, the Job in the
test API server) and to `render` (the Job in a file: `--review` gives the same
answer, and rendering the whole Job tells the same on stderr). A volume or mount
that holds the plugin's place for something of the user's denies the pod (400)
with a message naming the container, the entry and the plugin; a replaced env
value, command or args is allowed with a warning naming them. An allowed pod is
a fixed point: admitted again it gets no patch and no warning.
"""

import json
import os
import subprocess
import tempfile
import unittest

import harness

P = "volcano-plugin-webhook: render: "


def task(name, containers, replicas=1, volumes=None):
    spec = {"containers": containers, "restartPolicy": "OnFailure"}
    if volumes is not None:
        spec["volumes"] = volumes
    return {"name": name, "replicas": replicas, "template": {"spec": spec}}


def job(name, plugins, tasks):
    return {"apiVersion": harness.JOB_API_VERSION, "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "plugins": plugins,
                     "tasks": tasks}}


def ctr(name, **kw):
    c = {"name": name, "image": "busybox:1.36"}
    c.update(kw)
    return c


JOBS = [
    # A user's Secret mounted at /root/.ssh: re-pointed to keys-ssh, their keys were gone.
    job("keys", {"ssh": [], "svc": []}, [
        task("main", [ctr("main", volumeMounts=[{"name": "my-keys", "mountPath": "/root/.ssh"}])],
             volumes=[{"name": "my-keys", "secret": {"secretName": "my-keys"}}])]),
    # A user's emptyDir named <job>-svc: it became the read-only ConfigMap.
    job("hosts", {"svc": []}, [
        task("main", [ctr("main", volumeMounts=[{"name": "hosts-svc", "mountPath": "/scratch"}])],
             volumes=[{"name": "hosts-svc", "emptyDir": {}}])]),
    # --ssh-key-file-path=/etc/volcano: svc's mount replaced ssh's, no keys mounted.
    job("etc", {"ssh": ["--ssh-key-file-path=/etc/volcano"], "svc": []}, [
        task("main", [ctr("main")])]),
    # The ray head's own command replaced, its args then ignored by sh -c.
    job("rc", {"ray": []}, [
        task("head", [ctr("head", command=["python", "serve.py"], args=["--port", "8000"])]),
        task("worker", [ctr("worker")])]),
    # A user's RANK, MASTER_PORT and VC_TASK_INDEX replaced.
    job("pt", {"pytorch": ["--master=master", "--worker=worker", "--port=23456"], "env": []}, [
        task("master", [ctr("main", env=[{"name": "RANK", "value": "5"},
                                         {"name": "MASTER_PORT", "value": "29500"},
                                         {"name": "VC_TASK_INDEX", "value": "x"}])]),
        task("worker", [ctr("main")])]),
    # The plugins' own entries already in the template, as they would write them: SAME.
    job("own", {"ssh": [], "svc": []}, [
        task("main", [ctr("main", volumeMounts=[
            {"name": "own-svc", "mountPath": "/etc/volcano"},
            {"name": "own-ssh", "mountPath": "/root/.ssh", "subPath": ".ssh"}])],
             volumes=[{"name": "own-svc", "configMap": {"name": "own-svc"}},
                      {"name": "own-ssh", "secret": {
                          "secretName": "own-ssh", "defaultMode": 384, "items": [
                              {"key": "id_rsa", "path": ".ssh/id_rsa"},
                              {"key": "id_rsa.pub", "path": ".ssh/id_rsa.pub"},
                              {"key": "authorized_keys", "path": ".ssh/authorized_keys"},
                              {"key": "config", "path": ".ssh/config"}]}}])]),
]

SSH_DENIAL = ('ssh plugin: container "main" mounts your volume "my-keys" at /root/.ssh, where '
              'the plugin mounts "keys-ssh": mount yours elsewhere or remove the plugin (Volcano '
              'would add a second mount there, which the API server refuses; replacing yours '
              'would lose it)')
SVC_DENIAL = ('svc plugin: volume "hosts-svc" is your emptyDir, and the plugin needs that name '
              'for its ConfigMap "hosts-svc": rename yours or remove the plugin (Volcano would '
              'add a second one, which the API server refuses)')
ETC_DENIAL = ('ssh plugin: --ssh-key-file-path=/etc/volcano is where the svc plugin mounts its '
              'host files, so the ssh keys cannot be mounted there: choose another path in '
              'spec.plugins.ssh')
RAY_WARNINGS = [
    'ray plugin: container "head" command ["python","serve.py"] replaced by '
    '["sh","-c","ray start --head --block --d...: run your program in another container',
    'ray plugin: container "head" args ["--port","8000"] are ignored by the new command '
    '(sh -c "ray start ..."): drop them from the pod template',
]
PT_WARNINGS = [
    'env plugin: container "main" sets VC_TASK_INDEX="x", replaced by "0": the plugin sets it, '
    'drop it from the pod template',
    'pytorch plugin: container "main" sets MASTER_PORT="29500", replaced by "23456": the plugin '
    'sets it, drop it from the pod template',
    'pytorch plugin: container "main" sets RANK="5", replaced by "0": the plugin sets it, drop '
    'it from the pod template',
]


def env_list(c):
    return [(e["name"], e.get("value", e.get("valueFrom"))) for e in c.get("env") or []]


class UserValuesTest(unittest.TestCase):
    """One API server and webhook for every case; render runs on files of the same Jobs."""

    @classmethod
    def setUpClass(cls):
        cls.env = harness.Env(jobs=JOBS)
        cls.env.start()
        cls.tmp = tempfile.mkdtemp(prefix="vpw-user-values-")
        cls.stored = {j["metadata"]["name"]: j for j in cls.env.jobs}

    @classmethod
    def tearDownClass(cls):
        cls.env.close()
        for name in os.listdir(cls.tmp):
            os.unlink(os.path.join(cls.tmp, name))
        os.rmdir(cls.tmp)

    def write(self, name, obj):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(obj, f)
        return path

    def render(self, *args):
        p = subprocess.run([harness.binary(), "render", *args], capture_output=True, text=True,
                           timeout=60)
        return p.returncode, p.stdout, p.stderr

    def admit(self, name, task_name, index=0, version="v1"):
        """(pod, review, serve's response), after checking that render --review answers the
        same review with the same response."""
        job = self.stored[name]
        pod = harness.build_pod(job, task_name, index)
        rev = harness.review(pod, "default", version=version)
        resp = self.env.webhook.admit(rev)
        jpath = self.write(name + ".json", job)
        rpath = self.write("%s-%s-%d.review.json" % (name, task_name, index), rev)
        rc, out, _ = self.render("-f", jpath, "--review", rpath)
        answer = json.loads(out)
        self.assertEqual(rc, 0 if resp["allowed"] else 1)  # a denial exits 1
        self.assertEqual(answer["apiVersion"], rev["apiVersion"])
        self.assertEqual(answer["response"], resp)
        return pod, rev, resp

    def assert_denied(self, resp, message):
        self.assertFalse(resp["allowed"])
        self.assertEqual(resp["status"]["code"], 400)
        self.assertEqual(resp["status"]["message"], message)
        self.assertNotIn("patch", resp)
        self.assertNotIn("patchType", resp)

    def assert_fixed_point(self, rev, resp):
        """The webhook's own output admitted again: allowed, no patch, no warning (D5)."""
        patched = harness.apply_patch(rev["request"]["object"], resp)
        again = self.env.webhook.admit(harness.review(patched, "default"))
        self.assertTrue(again["allowed"])
        self.assertNotIn("patch", again)
        self.assertNotIn("warnings", again)
        return patched

    def render_job_stderr(self, name):
        """(exit status, stderr lines) of rendering every pod of the Job."""
        rc, _, err = self.render("-f", os.path.join(self.tmp, name + ".json"), "-o", "patch")
        return rc, err.splitlines()

    # ---- conflicts: denied, nothing re-pointed

    def test_user_secret_at_ssh_path_denied(self):
        _, _, resp = self.admit("keys", "main")
        self.assert_denied(resp, SSH_DENIAL)
        rc, lines = self.render_job_stderr("keys")
        self.assertEqual(rc, 1)
        self.assertIn(P + "pod keys-main-0 denied (code 400): " + SSH_DENIAL, lines)

    def test_user_emptydir_named_like_svc_volume_denied(self):
        _, _, resp = self.admit("hosts", "main", version="v1beta1")
        self.assert_denied(resp, SVC_DENIAL)
        rc, lines = self.render_job_stderr("hosts")
        self.assertEqual(rc, 1)
        self.assertIn(P + "pod hosts-main-0 denied (code 400): " + SVC_DENIAL, lines)

    def test_ssh_key_path_of_svc_denied_naming_the_flag(self):
        _, _, resp = self.admit("etc", "main")
        self.assert_denied(resp, ETC_DENIAL)
        rc, lines = self.render_job_stderr("etc")
        self.assertEqual(rc, 1)
        self.assertIn(P + "pod etc-main-0 denied (code 400): " + ETC_DENIAL, lines)

    # ---- replaced values: allowed, and told

    def test_ray_head_command_and_args_replaced_with_warnings(self):
        _, rev, resp = self.admit("rc", "head")
        self.assertTrue(resp["allowed"])
        self.assertEqual(resp["warnings"], RAY_WARNINGS)
        head = self.assert_fixed_point(rev, resp)["spec"]["containers"][0]
        self.assertEqual(head["command"], [
            "sh", "-c", "ray start --head --block --dashboard-host=0.0.0.0 --port=6379 "
                        "--dashboard-port=8265 --ray-client-server-port=10001"])
        self.assertEqual(head["args"], ["--port", "8000"])  # left as they are
        # The worker has no command or args of its own: nothing to tell.
        _, rev, resp = self.admit("rc", "worker", version="v1beta1")
        self.assertTrue(resp["allowed"])
        self.assertNotIn("warnings", resp)
        self.assert_fixed_point(rev, resp)
        rc, lines = self.render_job_stderr("rc")
        self.assertEqual(rc, 0)
        for w in RAY_WARNINGS:
            self.assertIn(P + "warning: pod rc-head-0: " + w, lines)
        self.assertEqual([ln for ln in lines if "pod rc-worker-0" in ln], [])

    def test_user_rank_master_port_task_index_replaced_with_warnings(self):
        _, rev, resp = self.admit("pt", "master")
        self.assertTrue(resp["allowed"])
        self.assertEqual(resp["warnings"], PT_WARNINGS)
        main = self.assert_fixed_point(rev, resp)["spec"]["containers"][0]
        # Replaced where they stood, the plugins' additions after them.
        self.assertEqual(env_list(main)[:3], [("RANK", "0"), ("MASTER_PORT", "23456"),
                                              ("VC_TASK_INDEX", "0")])
        self.assertEqual([n for n, _ in env_list(main)].count("RANK"), 1)
        _, rev, resp = self.admit("pt", "worker")
        self.assertTrue(resp["allowed"])
        self.assertNotIn("warnings", resp)
        rc, lines = self.render_job_stderr("pt")
        self.assertEqual(rc, 0)
        for w in PT_WARNINGS:
            self.assertIn(P + "warning: pod pt-master-0: " + w, lines)
        self.assertEqual([ln for ln in lines if "pod pt-worker-0" in ln], [])

    # ---- the plugins' own entries: SAME

    def test_plugins_own_entries_in_template_unchanged(self):
        _, rev, resp = self.admit("own", "main")
        self.assertTrue(resp["allowed"])
        self.assertNotIn("warnings", resp)
        ops = harness.decode_patch(resp)
        self.assertEqual([op for op in ops if op["path"].startswith("/spec/volumes")
                          or "volumeMounts" in op["path"]], [])
        patched = self.assert_fixed_point(rev, resp)
        names = [v["name"] for v in patched["spec"]["volumes"]]
        # the template's two, then the service-account volume kube-apiserver added
        self.assertEqual(names[:2], ["own-svc", "own-ssh"])
        self.assertEqual(len(names), 3)
        self.assertTrue(names[2].startswith("kube-api-access-"))
        harness.validate_pods([patched])
        rc, lines = self.render_job_stderr("own")
        self.assertEqual((rc, [ln for ln in lines if "pod own-main-0" in ln]), (0, []))


if __name__ == "__main__":
    unittest.main()
