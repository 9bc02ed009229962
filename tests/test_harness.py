#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""test_harness.py - checks of tests/harness.py that need no webhook binary: the pods it
builds, the AdmissionReviews, strict patch application, the schema validator wiring,
certificates + verified HTTPS, and the test API server wrapper.

Run: /usr/bin/python3 -m unittest discover -s tests -p 'test_harness.py' -v
"""

import base64
import copy
import glob
import json
import os
import socket
import ssl
import threading
import unittest

import yaml

import harness

MPI_UID = "11111111-2222-3333-4444-555555555555"


def b64(ops):
    return base64.b64encode(json.dumps(ops).encode()).decode()


class BuildPodTest(unittest.TestCase):
    def setUp(self):
        self.job = harness.load_job("mpi-job", uid=MPI_UID)

    def test_load_job_fills_namespace_uid_and_status(self):
        job = harness.load_job("mpi-job")
        self.assertEqual(job["metadata"]["namespace"], "default")
        self.assertEqual(job["metadata"]["uid"], harness.load_job("mpi-job")["metadata"]["uid"])
        self.assertEqual(job["status"], {"version": 0, "retryCount": 0})
        self.assertEqual(harness.pod_names(job),
                         [("mpimaster", 0), ("mpiworker", 0), ("mpiworker", 1)])

    def test_repeated_queue_key_and_job_without_tasks(self):
        ray = harness.load_job(os.path.join(harness.EXAMPLES, "ray-cluster-job.yaml"))
        self.assertEqual(ray["spec"]["queue"], "default")
        self.assertEqual(len(harness.job_pods(ray)), 3)
        self.assertEqual(harness.pod_names(harness.load_job("example-job")), [])

    def test_metadata_of_section_2_2(self):
        pod = harness.build_pod(self.job, "mpiworker", 1, sa_suffix="abcde")
        self.assertEqual(pod["apiVersion"], "v1")
        self.assertEqual(pod["kind"], "Pod")
        self.assertEqual(pod["metadata"], {
            "name": "mpi-job-mpiworker-1",
            "namespace": "default",
            "creationTimestamp": None,
            "labels": {
                "volcano.sh/task-index": "1",
                "volcano.sh/job-name": "mpi-job",
                "volcano.sh/task-spec": "mpiworker",
                "volcano.sh/job-namespace": "default",
                "volcano.sh/queue-name": "default",
            },
            "annotations": {
                "volcano.sh/task-index": "1",
                "volcano.sh/task-spec": "mpiworker",
                "scheduling.k8s.io/group-name": "mpi-job-" + MPI_UID,
                "volcano.sh/job-name": "mpi-job",
                "volcano.sh/queue-name": "default",
                "volcano.sh/job-version": "0",
                "volcano.sh/template-uid": "mpi-job-mpiworker",
                "volcano.sh/job-retry-count": "0",
            },
            "ownerReferences": [{
                "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "mpi-job",
                "uid": MPI_UID, "controller": True, "blockOwnerDeletion": True,
            }],
        })
        self.assertEqual(pod["status"], {})

    def test_spec_as_the_api_server_sends_it(self):
        pod = harness.build_pod(self.job, "mpiworker", 1, sa_suffix="abcde")
        self.assertEqual(pod["spec"], {
            "containers": [{
                "name": "mpiworker",
                "image": "lyd911/mindspore-gpu-example:0.2.0",
                "command": ["/bin/bash", "-c", "mkdir -p /var/run/sshd; /usr/sbin/sshd -D;\n"],
                "resources": {"limits": {"nvidia.com/gpu": "1"},
                              "requests": {"nvidia.com/gpu": "1"}},
                "ports": [{"containerPort": 22, "name": "mpijob-port", "protocol": "TCP"}],
                "workingDir": "/home",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
                "volumeMounts": [{"name": "kube-api-access-abcde", "readOnly": True,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
            }],
            "restartPolicy": "OnFailure",
            "schedulerName": "volcano",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "securityContext": {},
            "enableServiceLinks": True,
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "volumes": [{"name": "kube-api-access-abcde", "projected": {
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt",
                                   "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                        "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                ],
                "defaultMode": 420}}],
            "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
            ],
        })

    def test_job_is_not_modified_and_pods_are_repeatable(self):
        before = copy.deepcopy(self.job)
        a = harness.build_pod(self.job, "mpimaster", 0)
        b = harness.build_pod(self.job, "mpimaster", 0)
        self.assertEqual(self.job, before)
        self.assertEqual(a, b)
        vols = [v["name"] for v in a["spec"]["volumes"]]
        self.assertEqual(len(vols), 1)
        self.assertRegex(vols[0], r"^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$")

    def test_defaults_quantities_pull_policy_and_scheduler(self):
        ray = harness.load_job("ray-cluster-job")
        c = harness.build_pod(ray, "head", 0)["spec"]["containers"][0]
        self.assertEqual(c["resources"], {"limits": {"cpu": "2", "memory": "4Gi"},
                                          "requests": {"cpu": "2", "memory": "4Gi"}})
        self.assertEqual(c["imagePullPolicy"], "IfNotPresent")
        self.assertEqual(harness._image_pull_policy("busybox"), "Always")
        self.assertEqual(harness._image_pull_policy("reg:5000/busybox:latest"), "Always")
        self.assertEqual(harness._image_pull_policy("reg:5000/busybox"), "Always")
        self.assertEqual(harness._image_pull_policy("busybox@sha256:00"), "IfNotPresent")
        ex = harness.load_job("example-job")
        ex["spec"]["tasks"] = [{"name": "t", "replicas": 1, "template": {
            "spec": {"containers": [{"name": "c", "image": "x"}]}}}]
        spec = harness.build_pod(ex, "t", 0)["spec"]
        self.assertEqual(spec["schedulerName"], "default-scheduler")
        self.assertEqual(spec["restartPolicy"], "Always")
        self.assertEqual(spec["containers"][0]["resources"], {})

    def test_template_metadata_job_volumes_partition(self):
        job = harness.load_job("pytorch-job", uid="u1")
        task = job["spec"]["tasks"][1]
        task["template"]["metadata"] = {"labels": {"app": "x", "volcano.sh/job-name": "spoof"},
                                        "annotations": {"note": "y"}}
        task["partitionPolicy"] = {"totalPartitions": 2, "partitionSize": 2}
        job["spec"]["volumes"] = [{"mountPath": "/data", "volumeClaimName": "pvc-a"},
                                  {"mountPath": "/data2", "volumeClaimName": "pvc-a"}]
        job["spec"]["priorityClassName"] = "high"
        pod = harness.build_pod(job, "worker", 3)
        self.assertEqual(pod["metadata"]["labels"]["app"], "x")
        self.assertEqual(pod["metadata"]["labels"]["volcano.sh/job-name"], "pytorch-job")
        self.assertEqual(pod["metadata"]["labels"]["volcano.sh/partition-id"], "1")
        self.assertEqual(pod["metadata"]["annotations"]["note"], "y")
        self.assertEqual(pod["spec"]["priorityClassName"], "high")
        pvcs = [v for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v]
        self.assertEqual(len(pvcs), 1)
        self.assertEqual(pvcs[0]["persistentVolumeClaim"], {"claimName": "pvc-a"})
        self.assertRegex(pvcs[0]["name"], r"^pytorch-job-[0-9a-z]{12}$")
        mounts = pod["spec"]["containers"][0]["volumeMounts"]
        self.assertEqual(mounts[0], {"name": pvcs[0]["name"], "mountPath": "/data"})
        with self.assertRaises(KeyError):
            harness.build_pod(job, "nope", 0)


class ReviewTest(unittest.TestCase):
    def setUp(self):
        self.pod = harness.build_pod(harness.load_job("mpi-job"), "mpimaster", 0)

    def test_v1_shape(self):
        rev = harness.review(self.pod, "default", uid="uid-1")
        self.assertEqual(rev["apiVersion"], "admission.k8s.io/v1")
        self.assertEqual(rev["kind"], "AdmissionReview")
        req = rev["request"]
        self.assertEqual(list(req), ["uid", "kind", "resource", "requestKind", "requestResource",
                                     "name", "namespace", "operation", "userInfo", "object",
                                     "oldObject", "dryRun", "options"])
        self.assertEqual(req["uid"], "uid-1")
        self.assertEqual(req["kind"], {"group": "", "version": "v1", "kind": "Pod"})
        self.assertEqual(req["resource"], {"group": "", "version": "v1", "resource": "pods"})
        self.assertEqual(req["requestKind"], req["kind"])
        self.assertEqual(req["requestResource"], req["resource"])
        self.assertEqual(req["name"], "mpi-job-mpimaster-0")
        self.assertEqual(req["namespace"], "default")
        self.assertEqual(req["operation"], "CREATE")
        self.assertEqual(req["userInfo"]["username"],
                         "system:serviceaccount:volcano-system:volcano-controllers")
        self.assertEqual(req["object"], self.pod)
        self.assertIsNot(req["object"], self.pod)
        self.assertIsNone(req["oldObject"])
        self.assertIs(req["dryRun"], False)
        self.assertEqual(req["options"], {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"})

    def test_v1beta1_omit_namespace_and_generate_name(self):
        pod = copy.deepcopy(self.pod)
        del pod["metadata"]["name"]
        pod["metadata"]["generateName"] = "mpi-job-mpimaster-"
        rev = harness.review(pod, "team-a", version="v1beta1", omit_namespace=True)
        self.assertEqual(rev["apiVersion"], "admission.k8s.io/v1beta1")
        self.assertNotIn("name", rev["request"])
        self.assertNotIn("namespace", rev["request"]["object"]["metadata"])
        self.assertEqual(rev["request"]["namespace"], "team-a")
        self.assertIn("namespace", pod["metadata"])  # the caller's pod is untouched
        self.assertNotEqual(harness.review(pod, "a")["request"]["uid"],
                            harness.review(pod, "a")["request"]["uid"])
        with self.assertRaises(ValueError):
            harness.review(pod, "a", version="v2")


class ApplyPatchTest(unittest.TestCase):
    def setUp(self):
        self.pod = harness.build_pod(harness.load_job("mpi-job"), "mpimaster", 0)

    def test_applies_and_leaves_input_alone(self):
        ops = [{"op": "add", "path": "/spec/containers/0/env",
                "value": [{"name": "A", "value": "1"}]},
               {"op": "add", "path": "/metadata/annotations/a~1b", "value": "x"}]
        out = harness.apply_patch(self.pod, {"response": {
            "uid": "u", "allowed": True, "patchType": "JSONPatch", "patch": b64(ops)}})
        self.assertEqual(out["spec"]["containers"][0]["env"], [{"name": "A", "value": "1"}])
        self.assertEqual(out["metadata"]["annotations"]["a/b"], "x")
        self.assertNotIn("env", self.pod["spec"]["containers"][0])

    def test_no_patch_is_a_copy(self):
        out = harness.apply_patch(self.pod, {"uid": "u", "allowed": True})
        self.assertEqual(out, self.pod)
        self.assertIsNot(out, self.pod)

    def test_strictness(self):
        bad = [
            {"allowed": True, "patch": b64([])},                          # no patchType
            {"allowed": True, "patchType": "JSONPatch"},                  # no patch
            {"allowed": True, "patchType": "MergePatch", "patch": b64([])},
            {"allowed": True, "patchType": "JSONPatch", "patch": "!!notbase64"},
            {"allowed": True, "patchType": "JSONPatch", "patch": b64({"op": "add"})},
            {"allowed": True, "patchType": "JSONPatch",                   # does not apply
             "patch": b64([{"op": "remove", "path": "/spec/hostname"}])},
            {"allowed": True, "patchType": "JSONPatch",
             "patch": b64([{"op": "add", "path": "/spec/containers/5/env", "value": []}])},
            {"allowed": True, "patchType": "JSONPatch",
             "patch": b64([{"op": "frobnicate", "path": "/spec"}])},
        ]
        for resp in bad:
            with self.subTest(resp=resp):
                with self.assertRaises(AssertionError):
                    harness.apply_patch(self.pod, resp)


class ValidatorWiringTest(unittest.TestCase):
    def test_example_pods_pass(self):
        pods = []
        for path in sorted(glob.glob(os.path.join(harness.EXAMPLES, "*.yaml"))):
            pods += harness.job_pods(harness.load_job(path))
        self.assertEqual(len(pods), 23)
        self.assertEqual(harness.validate_pods(pods), "ok 23 pods")

    def test_broken_pod_raises_with_the_path(self):
        pod = harness.build_pod(harness.load_job("pytorch-job"), "master", 0)
        pod["spec"]["containers"][0]["evn"] = []
        pod["spec"]["containers"][0]["volumeMounts"].append(
            {"name": "pytorch-job-svc", "mountPath": "/etc/volcano"})
        with self.assertRaises(AssertionError) as cm:
            harness.validate_pods([pod])
        msg = str(cm.exception)
        self.assertIn("pod[0] default/pytorch-job-master-0: spec.containers[0].evn: "
                      "unknown field", msg)
        self.assertIn("spec.containers[0].volumeMounts[1].name: volume \"pytorch-job-svc\" "
                      "not found", msg)


class ValidatorSelfTest(unittest.TestCase):
    def test_node_selftest_passes(self):
        """tests/schema's own node:test suite, so CI runs it with the integration tests."""
        import re
        import shutil
        import subprocess
        r = subprocess.run([shutil.which("node") or "node", "--test",
                            os.path.join(harness.TESTS, "schema") + os.sep],
                           capture_output=True, text=True, timeout=300, cwd=harness.ROOT)
        self.assertEqual(r.returncode, 0, r.stdout[-4000:] + r.stderr)
        self.assertIn("\n# fail 0\n", r.stdout)
        self.assertGreaterEqual(int(re.search(r"^# pass (\d+)$", r.stdout, re.M).group(1)), 16)


class CertsAndHttpsTest(unittest.TestCase):
    """Certificates from the openssl fallback, checked by a TLS handshake on loopback."""

    def setUp(self):
        import tempfile
        self.dir = tempfile.mkdtemp(prefix="vpw-harness-")
        self.addCleanup(__import__("shutil").rmtree, self.dir, True)

    def serve_once(self, certs):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certs["tls.crt"], certs["tls.key"])
        lsock = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(lsock.close)
        lsock.settimeout(10)

        def run():
            try:
                conn, _ = lsock.accept()
                with ctx.wrap_socket(conn, server_side=True) as s:
                    s.recv(65536)
                    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                              b"Connection: close\r\n\r\nok")
            except (OSError, ssl.SSLError):
                pass
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.addCleanup(t.join, 10)
        return lsock.getsockname()[1]

    def test_openssl_certs_verify_by_service_name_only(self):
        certs = harness.make_certs(self.dir, service="hook", namespace="ns", use_binary=False)
        self.assertEqual(certs["method"], "openssl")
        for f in harness.CERT_FILES:
            self.assertTrue(os.path.getsize(certs[f]) > 0, f)
        ctx = harness.https_context(certs["ca.crt"])
        port = self.serve_once(certs)
        conn = harness._PinnedHTTPSConnection("127.0.0.1", port, "hook.ns.svc", ctx, 10)
        try:
            conn.request("GET", "/")
            self.assertEqual(conn.getresponse().read(), b"ok")
        finally:
            conn.close()
        port = self.serve_once(certs)
        conn = harness._PinnedHTTPSConnection("127.0.0.1", port, "other.ns.svc", ctx, 10)
        try:
            with self.assertRaises(ssl.SSLCertVerificationError):
                conn.request("GET", "/")
        finally:
            conn.close()

    def test_kubeconfig(self):
        certs = harness.make_certs(self.dir, use_binary=False)
        path = harness.write_kubeconfig(os.path.join(self.dir, "kc"), "https://127.0.0.1:1",
                                        certs["ca.crt"], "tok")
        with open(path) as f:
            cfg = yaml.safe_load(f)
        self.assertEqual(cfg["current-context"], "test")
        cluster = cfg["clusters"][0]["cluster"]
        self.assertEqual(cluster["server"], "https://127.0.0.1:1")
        with open(certs["ca.crt"], "rb") as f:
            self.assertEqual(base64.b64decode(cluster["certificate-authority-data"]), f.read())
        self.assertEqual(cfg["users"][0]["user"], {"token": "tok"})


class ApiServerWrapperTest(unittest.TestCase):
    def test_jobs_stored_and_process_stopped(self):
        env = harness.Env(jobs=[harness.load_job("mpi-job")], start_webhook=False)
        self.addCleanup(env.close)
        env.start()
        stored = env.jobs[0]
        self.assertEqual(stored["metadata"]["namespace"], "default")
        self.assertNotEqual(stored["metadata"]["uid"], harness.load_job("mpi-job")["metadata"]["uid"])
        self.assertEqual(env.api.job("default", "mpi-job")["metadata"]["uid"],
                         stored["metadata"]["uid"])
        status, body = env.api.call("GET", "/apis/batch.volcano.sh/v1alpha1/namespaces/default"
                                    "/jobs/mpi-job", auth=False)
        self.assertEqual(status, 401)
        self.assertEqual(body["reason"], "Unauthorized")
        paths = [r["path"] for r in env.api.requests()]
        self.assertIn("/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs/mpi-job", paths)
        pod = harness.build_pod(stored, "mpimaster", 0)
        self.assertEqual(pod["metadata"]["ownerReferences"][0]["uid"], stored["metadata"]["uid"])
        proc = env.api.process.proc
        env.close()
        self.assertIsNotNone(proc.poll())
        self.assertEqual(proc.returncode, 0)


# A stand-in for `volcano-plugin-webhook serve` (same flags, HTTPS, port file, /healthz):
# answers every review with one patch op that records the Host header it was sent.
FAKE_WEBHOOK = r"""#!/usr/bin/python3
import argparse, base64, json, os, signal, ssl, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
ap = argparse.ArgumentParser()
ap.add_argument("command")
for f in ("--bind-address", "--port-file", "--tls-cert-file", "--tls-private-key-file",
          "--kubeconfig"):
    ap.add_argument(f)
ap.add_argument("--port", type=int)
ap.add_argument("--fake-sanitizer-report", action="store_true")
o = ap.parse_args()
assert o.command == "serve" and os.path.exists(o.kubeconfig)

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def send(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.send(200 if self.path == "/healthz" else 404, b"ok")
    def do_POST(self):
        rev = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ops = [{"op": "add", "path": "/metadata/annotations/fake-host",
                "value": self.headers["Host"] + " " + self.path}]
        self.send(200, json.dumps({"apiVersion": rev["apiVersion"], "kind": rev["kind"],
            "response": {"uid": rev["request"]["uid"], "allowed": True,
                         "patchType": "JSONPatch",
                         "patch": base64.b64encode(json.dumps(ops).encode()).decode()}}).encode())

srv = ThreadingHTTPServer((o.bind_address, o.port), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(o.tls_cert_file, o.tls_private_key_file)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=srv.shutdown).start())
with open(o.port_file + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.replace(o.port_file + ".tmp", o.port_file)
srv.serve_forever()
if o.fake_sanitizer_report:
    sys.stderr.write("==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x1\n")
"""


class WebhookWiringTest(unittest.TestCase):
    """Env + Webhook against a fake `serve`: port file, /healthz wait, verified HTTPS by
    service name, admit() checks, patch applied, process stopped, sanitizer reports."""

    def start(self, *extra):
        import tempfile
        d = tempfile.mkdtemp(prefix="vpw-fake-")
        self.addCleanup(__import__("shutil").rmtree, d, True)
        exe = os.path.join(d, "fake-webhook")
        with open(exe, "w") as f:
            f.write(FAKE_WEBHOOK)
        os.chmod(exe, 0o755)
        env = harness.Env(jobs=[harness.load_job("pytorch-job")], webhook_exe=exe,
                          webhook_args=list(extra))
        self.addCleanup(env.close)
        return env.start()

    def test_admit_and_stop(self):
        env = self.start()
        pod = harness.build_pod(env.jobs[0], "worker", 1)
        resp = env.webhook.admit(harness.review(pod, "default"))
        out = harness.apply_patch(pod, resp)
        self.assertEqual(out["metadata"]["annotations"]["fake-host"],
                         "volcano-plugin-webhook.volcano-plugin-webhook.svc:%d /pods/mutate?timeout=10s"
                         % env.webhook.port)
        self.assertEqual(harness.validate_pods([out]), "ok 1 pods")
        proc = env.webhook.process.proc
        self.assertEqual(env.webhook.stop(), 0)
        self.assertIsNotNone(proc.poll())

    def test_sanitizer_report_fails_the_stop(self):
        env = self.start("--fake-sanitizer-report")
        with self.assertRaises(AssertionError) as cm:
            env.webhook.stop()
        self.assertIn("ERROR: AddressSanitizer: heap-use-after-free", str(cm.exception))
        env.webhook = None


if __name__ == "__main__":
    unittest.main()
