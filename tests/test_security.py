# SPDX-License-Identifier: Apache-2.0
"""test_security.py - the security review (README "Threat model"), as tests against the binary.

  LogSecrecyTest        a representative run (admissions, ssh Secret creation, scaling,
                        deletion, a Job lookup miss, API errors, TLS) at -v 10: its output
                        holds no PEM marker, no line of any private key or certificate body
                        (serving pair, CA, the API server's CA), not the bearer token, not the
                        generated id_rsa (base64 or PEM lines); the Secret it made holds
                        exactly the four keys of docs/plugins.md §4.3 and nothing else.
  KeyPermissionsTest    --tls-private-key-file readable by others is refused (exit 1, one
                        clear line) unless --allow-insecure-key-permissions; 0440 (a Secret
                        volume with defaultMode 0440 and fsGroup) is accepted; the Deployment
                        mounts the key that way.
  RbacLeastPrivilegeTest  every (group, resource, verb) the binary used in a scenario that
                        takes every API path (read from the test API server's request log)
                        equals what manifests/ grants: nothing used that is not granted,
                        nothing granted that is not used (update on jobs/finalizers counts as
                        used by every ownerReference with blockOwnerDeletion to a Job).
  TestsslTest           testssl (Debian package testssl.sh) against the running server:
                        only TLS 1.2 and 1.3, no weak cipher category, no vulnerability
                        flagged. Skipped when testssl is not installed.
"""

import base64
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.parse

import yaml

import harness
import test_events
import test_reconcile as tr

ROOT = harness.ROOT
MANIFESTS = os.path.join(ROOT, "manifests", "base")
WAIT = tr.WAIT
SECRET_KEYS = ["authorized_keys", "config", "id_rsa", "id_rsa.pub"]


def pem_body_lines(text):
    """The base64 lines of every PEM block of text (markers excluded)."""
    return [l.strip() for l in text.splitlines()
            if l.strip() and not l.startswith("-----") and ":" not in l]


class LogSecrecyTest(unittest.TestCase):

    def test_no_secret_material_in_the_output(self):
        token = "tok-" + secrets.token_hex(24)
        env = harness.Env(jobs=[harness.load_job("mpi-job"), harness.load_job("pytorch-job")],
                          token=token,
                          webhook_args=["-v", "10", "--leader-elect=false",
                                        "--resync-period=2s"])
        self.addCleanup(env.close)
        env.start()
        c = tr.Cluster(env.api)
        env.api._control("POST", "/_test/gc", {"enabled": False})
        for job in env.jobs:
            c.wait_objects(job)
            for task, i in harness.pod_names(job):
                pod = harness.build_pod(job, task, i)
                resp = env.webhook.admit(harness.review(pod, "default"))
                self.assertTrue(resp["allowed"])
        # a Job the cache does not know: a GET with the token, answered 404
        ghost = harness.load_job("mpi-job", namespace="ghost")
        env.webhook.admit(harness.review(harness.build_pod(ghost, "mpimaster", 0), "ghost"))
        # API errors on the Secret while a second ssh Job is made (error paths log too)
        env.api.add_faults({"method": "POST", "path_regex": "/secrets$", "status": 500, "reason": "InternalError",
                            "message": "injected", "count": 3})
        job2 = c.create_job("lm-mpi-job", "default")
        got = c.wait_objects(job2)
        # scale (ssh config update) and delete (teardown)
        job = env.api.job("default", "mpi-job")
        next(t for t in job["spec"]["tasks"] if t["name"] == "mpiworker")["replicas"] = 3
        job = c.put_job(job)
        tr.wait_for(lambda: tr.b64d(c.get("default", "secrets", "mpi-job-ssh")["data"]["config"])
                    == tr.ssh_config(job), "ssh config follows the scale-up")
        secret = c.get("default", "secrets", "mpi-job-ssh")
        secret2 = got[("secrets", "lm-mpi-job-ssh")]
        c.delete(tr.JOBS % "default" + "/pytorch-job")
        c.wait_gone("default", [("configmaps", "pytorch-job-svc")])
        env.webhook.stop()
        out = env.webhook.process.log()
        self.assertIn("reconcile: hook done", out)  # the debug level really was on

        # (c) the Secrets hold exactly the four keys of docs/plugins.md §4.3, nothing else
        for s in (secret, secret2):
            self.assertEqual(sorted(s["data"]), SECRET_KEYS)
            self.assertNotIn("stringData", s)
            self.assertIn(s.get("type", "Opaque"), ("Opaque",))
            self.assertEqual(sorted(s["metadata"]),
                             ["creationTimestamp", "generation", "name", "namespace",
                              "ownerReferences", "resourceVersion", "uid"])
            self.assertEqual(sorted(s), ["apiVersion", "data", "kind", "metadata"]
                             + (["type"] if "type" in s else []))

        # (a) no key material, token or certificate body in the output
        needles = {"token": token, "bearer": "Bearer ", "pem-begin": "-----BEGIN",
                   "pem-end": "-----END", "private-key": "PRIVATE KEY"}
        for s, name in ((secret, "mpi-job"), (secret2, "lm-mpi-job")):
            needles[name + " id_rsa (base64)"] = s["data"]["id_rsa"]
            for k, line in enumerate(pem_body_lines(tr.b64d(s["data"]["id_rsa"]))):
                needles["%s id_rsa line %d" % (name, k)] = line[:40]
        files = dict(env.certs)
        files["apiserver ca.crt"] = env.api.ca_file
        for what, path in files.items():
            if what == "method":
                continue
            with open(path) as f:
                text = f.read()
            needles[what + " (base64)"] = base64.b64encode(text.encode()).decode()[:40]
            for k, line in enumerate(pem_body_lines(text)):
                if len(line) >= 24:
                    needles["%s line %d" % (what, k)] = line[:40]
        self.assertGreater(len(needles), 20)
        found = sorted(name for name, n in needles.items() if n and n in out)
        self.assertEqual(found, [], "secret material in the webhook's output")


class KeyPermissionsTest(unittest.TestCase):

    def setUp(self):
        self.env = harness.Env(start_webhook=False)
        self.addCleanup(self.env.close)
        self.env.start()
        self.key = self.env.certs["tls.key"]

    def run_briefly(self, extra=()):
        """Start serve; returns (exit status or None when still running, output)."""
        argv = [harness.binary(), "serve", "--bind-address", "127.0.0.1", "--port", "0",
                "--tls-cert-file", self.env.certs["tls.crt"], "--tls-private-key-file",
                self.key, "--kubeconfig", self.env.kubeconfig, "--leader-elect=false"]
        p = subprocess.Popen(argv + list(extra), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=3 if not os.environ.get("SANITIZER") else 10)
            return p.returncode, out
        except subprocess.TimeoutExpired:
            p.terminate()
            out, _ = p.communicate(timeout=30)
            return None, out

    def test_world_readable_key_refused(self):
        os.chmod(self.key, 0o644)
        rc, out = self.run_briefly()
        self.assertEqual(rc, 1, out)
        self.assertIn("refusing the TLS private key: %s: private key has mode 0644, writable "
                      "by its group or open to others" % self.key, out)
        self.assertIn("--allow-insecure-key-permissions", out)
        self.assertNotIn("PRIVATE KEY", out)

    def test_missing_key_not_an_override_case(self):
        """A key file that is not there is named; the permissions override, which cannot
        help, is not suggested."""
        self.key = os.path.join(self.env.dir, "no-such.key")
        rc, out = self.run_briefly()
        self.assertEqual(rc, 1, out)
        self.assertIn("cannot load the TLS pair: %s: No such file or directory" % self.key, out)
        self.assertNotIn("--allow-insecure-key-permissions", out)

    def test_group_writable_key_refused(self):
        os.chmod(self.key, 0o660)
        rc, out = self.run_briefly()
        self.assertEqual(rc, 1, out)
        self.assertIn("private key has mode 0660", out)

    def test_override_flag(self):
        os.chmod(self.key, 0o644)
        w = self.env.start_webhook_now(extra_args=["--leader-elect=false",
                                                   "--allow-insecure-key-permissions"])
        self.assertTrue(w.process.alive())

    def test_secret_volume_mode_accepted(self):
        os.chmod(self.key, 0o440)
        w = self.env.start_webhook_now(extra_args=["--leader-elect=false"])
        status, body = w.post(harness.review(harness.build_pod(
            harness.load_job("mpi-job"), "mpimaster", 0), "default"))
        self.assertEqual(status, 200, body)

    def test_reloaded_key_checked_too(self):
        """A pair swapped in while serving meets the start-up rule: a key others can read
        is refused (the old pair stays), a private one is served."""
        w = self.env.start_webhook_now(extra_args=["--leader-elect=false"])
        crt = self.env.certs["tls.crt"]

        def swap_in(pair, mode):
            shutil.copyfile(pair["tls.key"], self.key)
            os.chmod(self.key, mode)
            shutil.copyfile(pair["tls.crt"], crt)

        def wait_log(needle):
            deadline = time.monotonic() + (60 if os.environ.get("SANITIZER") else 20)
            while needle not in w.process.log():
                self.assertLess(time.monotonic(), deadline, "no %r in:\n%s" % (
                    needle, w.process.log()))
                time.sleep(0.1)

        swap_in(harness.make_certs(os.path.join(self.env.dir, "certs-b")), 0o644)
        wait_log("private key has mode 0644, writable by its group or open to others")
        self.assertNotIn("tls: pair reloaded", w.process.log())
        swap_in(harness.make_certs(os.path.join(self.env.dir, "certs-c")), 0o600)
        wait_log("tls: pair reloaded")
        self.assertTrue(w.process.alive())

    def test_deployment_mounts_the_key_privately(self):
        # The base runs managed certificates (no key file); the overlays that mount the
        # TLS Secret patch its volume and args in (deployment-tls-files.yaml).
        with open(os.path.join(MANIFESTS, "deployment.yaml")) as f:
            dep = yaml.safe_load(f)
        spec = dep["spec"]["template"]["spec"]
        ctr = spec["containers"][0]
        self.assertTrue(ctr["securityContext"]["readOnlyRootFilesystem"])
        self.assertTrue(spec["securityContext"]["runAsNonRoot"])
        self.assertNotIn("--allow-insecure-key-permissions", " ".join(ctr["args"]))
        for overlay in ("manual", "cert-manager"):
            with self.subTest(overlay=overlay):
                with open(os.path.join(ROOT, "manifests", "overlays", overlay,
                                       "deployment-tls-files.yaml")) as f:
                    ops = {op["path"]: op.get("value") for op in yaml.safe_load(f)}
                vols = {v["name"]: v for v in ops["/spec/template/spec/volumes"]}
                mode = vols["certs"]["secret"]["defaultMode"]
                self.assertIn(mode, (0o440, 0o400))
                if mode == 0o440:  # group read only helps with the pod's fsGroup
                    self.assertEqual(spec["securityContext"]["fsGroup"],
                                     spec["securityContext"]["runAsGroup"])
                args = ops["/spec/template/spec/containers/0/args"]
                self.assertNotIn("--allow-insecure-key-permissions", " ".join(args))


# ---------------------------------------------------------------- RBAC

METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def request_triple(method, path, query):
    """(apiGroup, resource, verb) of one REST request, as kube-apiserver's authorizer sees
    it; None for a non-resource path."""
    parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return None
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    resource, name = rest[0], rest[1] if len(rest) > 1 else None
    if len(rest) > 2:
        resource += "/" + rest[2]  # subresource
    q = urllib.parse.parse_qs(query)
    if method == "GET":
        if name is not None:
            verb = "get"
        elif q.get("watch", ["false"])[0] in ("1", "true"):
            verb = "watch"
        else:
            verb = "list"
    elif method == "DELETE":
        verb = "delete" if name is not None else "deletecollection"
    else:
        verb = METHOD_VERBS.get(method, method.lower())
    return group, resource, verb


def granted(kind):
    """{(group, resource, verb)} of the manifests' ClusterRole or Role rules."""
    out = set()
    for fname in sorted(os.listdir(MANIFESTS)):
        if not fname.endswith(".yaml"):
            continue
        with open(os.path.join(MANIFESTS, fname)) as f:
            for doc in yaml.safe_load_all(f):
                if not isinstance(doc, dict) or doc.get("kind") != kind:
                    continue
                for rule in doc.get("rules") or []:
                    for g in rule.get("apiGroups") or []:
                        for r in rule.get("resources") or []:
                            for v in rule.get("verbs") or []:
                                out.add((g, r, v))
    return out


class RbacLeastPrivilegeTest(unittest.TestCase):
    """The scenario takes every API path of the binary: the Job cache's LIST and WATCH, a
    Job lookup that misses the cache (GET), objects created, updated (ssh config and
    ConfigMap on scale-up), re-created after a deletion, deleted with their Job, and the
    leader-election Lease created, renewed and released, and an Event on a Job with a
    diagnostic that an earlier leader had posted (create answers 409: get, then patch)."""

    ARGS = ["--leader-elect-resource-namespace=volcano-plugin-webhook",
            "--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
            "--leader-elect-retry-period=1s", "--resync-period=2s"]

    def test_used_equals_granted(self):
        env = harness.Env(webhook_args=self.ARGS)
        self.addCleanup(env.close)
        env.start()
        c = tr.Cluster(env.api)
        env.api._control("POST", "/_test/gc", {"enabled": False})
        jobs = [c.create_job(n, "rbac") for n in ("mpi-job", "ray-cluster-job")]
        event = test_events.event_name("pytorch-job", "TaskNotFound", test_events.MESSAGE)
        env.api.create_objects([{"apiVersion": "v1", "kind": "Event",
                                 "metadata": {"name": event, "namespace": "rbac"},
                                 "reason": "TaskNotFound", "message": test_events.MESSAGE,
                                 "type": "Warning", "count": 1}])

        def bad_master(job):
            job["spec"]["plugins"]["pytorch"] = ["--master=boss", "--worker=worker"]
        jobs.append(c.create_job("pytorch-job", "rbac", bad_master))
        tr.wait_for(lambda: (c.get("rbac", "events", event) or {}).get("count") == 2,
                    "the Event counted on")
        # OwnerReferencesPermissionEnforcement (an admission plugin of hardened clusters and
        # OpenShift) lets a client set blockOwnerDeletion on a reference to a Job only with
        # update on jobs/finalizers; the test API server does not enforce it, so count it.
        used_by_owner_refs = set()
        for job in jobs:
            for obj in c.wait_objects(job).values():
                for ref in obj["metadata"].get("ownerReferences") or []:
                    if ref.get("blockOwnerDeletion") and ref.get("kind") == "Job":
                        group = ref["apiVersion"].split("/")[0]
                        used_by_owner_refs.add((group, "jobs/finalizers", "update"))
        self.assertEqual(used_by_owner_refs, {("batch.volcano.sh", "jobs/finalizers", "update")})
        ghost = harness.load_job("pytorch-job", namespace="ghost")
        env.webhook.admit(harness.review(harness.build_pod(ghost, "master", 0), "ghost"))
        job = env.api.job("rbac", "mpi-job")
        next(t for t in job["spec"]["tasks"] if t["name"] == "mpiworker")["replicas"] = 3
        job = c.put_job(job)
        tr.wait_for(lambda: (c.get("rbac", "configmaps", "mpi-job-svc") or {}).get("data")
                    == tr.cm_data(job), "ConfigMap follows the scale-up")
        c.delete(tr.CORE % ("rbac", "services") + "/mpi-job")
        tr.wait_for(lambda: c.get("rbac", "services", "mpi-job"), "Service re-created")
        for j in jobs:
            c.delete(tr.JOBS % "rbac" + "/" + j["metadata"]["name"])
        tr.wait_for(lambda: c.names("rbac") == [], "teardown")
        time.sleep(1.5)  # at least one Lease renewal
        env.webhook.stop()  # releases the Lease
        used_cluster, used_lease, other = set(), set(), []
        for r in env.api.requests():
            if not r["headers"].get("User-Agent", "").startswith("volcano-plugin-webhook/"):
                continue  # this test's own calls
            t = request_triple(r["method"], r["path"], r["query"])
            if t is None:
                other.append(r["path"])
            elif t[1] == "leases":
                self.assertTrue(r["path"].startswith(
                    "/apis/coordination.k8s.io/v1/namespaces/volcano-plugin-webhook/"), r)
                used_lease.add(t)
            else:
                used_cluster.add(t)
        self.assertEqual(other, [], "non-resource paths need nonResourceURLs rules")
        self.assertEqual(used_lease, granted("Role"))
        self.assertEqual(used_cluster | used_by_owner_refs, granted("ClusterRole"))


def renegotiation_then_request(port, tries=3):
    """Whether a TLS 1.2 client that renegotiates (openssl s_client "R") still gets an
    HTTP answer on the same connection, in any of `tries` attempts."""
    for _ in range(tries):
        p = subprocess.Popen(["openssl", "s_client", "-tls1_2", "-quiet", "-connect",
                              "127.0.0.1:%d" % port], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            time.sleep(0.5)
            p.stdin.write(b"R\n")
            p.stdin.flush()
            time.sleep(0.5)
            p.stdin.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            p.stdin.flush()
            time.sleep(0.5)
        except BrokenPipeError:
            pass  # the server closed the connection: refused
        try:
            out = p.communicate(timeout=10)[0]
        except subprocess.TimeoutExpired:
            p.kill()
            out = p.communicate()[0]
        if b"HTTP/1.1 200" in out:
            return True
    return False


class TestsslTest(unittest.TestCase):
    """testssl: protocols (-p), cipher categories (-s), vulnerabilities (-U), about 30 s."""

    BAD = ("LOW", "MEDIUM", "HIGH", "CRITICAL")

    def test_tls_profile(self):
        exe = shutil.which("testssl") or shutil.which("testssl.sh")
        if exe is None:
            self.skipTest("testssl not installed (Debian package testssl.sh): TLS scan skipped")
        env = harness.Env(webhook_args=["--leader-elect=false"])
        self.addCleanup(env.close)
        env.start()
        out = tempfile.mkdtemp(prefix="vpw-testssl-")
        self.addCleanup(shutil.rmtree, out, True)
        jfile = os.path.join(out, "result.json")
        r = subprocess.run([exe, "--quiet", "--color", "0", "--warnings", "off", "--sneaky",
                            "-p", "-s", "-U", "--jsonfile", jfile,
                            "127.0.0.1:%d" % env.webhook.port],
                           capture_output=True, text=True, timeout=300, cwd=out)
        self.assertTrue(os.path.exists(jfile), r.stdout + r.stderr)
        with open(jfile) as f:
            findings = {e["id"]: e for e in json.load(f)}
        text = r.stdout
        fatal = [e for e in findings.values() if e["severity"] == "FATAL"]
        self.assertEqual(fatal, [], text)
        for proto in ("SSLv2", "SSLv3", "TLS1", "TLS1_1"):
            self.assertEqual(findings[proto]["finding"], "not offered", text)
        self.assertEqual(findings["TLS1_2"]["finding"], "offered", text)
        self.assertTrue(findings["TLS1_3"]["finding"].startswith("offered"), text)
        for cat in ("NULL", "aNULL", "EXPORT", "LOW", "3DES_IDEA", "AVERAGE"):
            self.assertEqual(findings["cipherlist_" + cat]["finding"], "not offered",
                             "%s\n%s" % (cat, text))
        self.assertEqual(findings["cipherlist_STRONG"]["finding"], "offered", text)
        if findings["secure_client_renego"]["severity"] != "OK":
            # testssl's verdict here depends on how fast the server drops the connection
            # (Debian 12's testssl flags a close that comes late); the arbiter is whether
            # a request is still answered on the connection after a client renegotiation
            self.assertFalse(renegotiation_then_request(env.webhook.port),
                             "the server answers after a client-initiated renegotiation")
            findings["secure_client_renego"]["severity"] = "OK"
        bad = sorted("%s: %s (%s)" % (i, e["finding"], e["severity"])
                     for i, e in findings.items() if e["severity"] in self.BAD)
        self.assertEqual(bad, [], text)
        for vuln in ("heartbleed", "CCS", "ticketbleed", "ROBOT", "secure_client_renego",
                     "CRIME_TLS", "POODLE_SSL", "fallback_SCSV", "SWEET32", "FREAK", "DROWN",
                     "LOGJAM", "BEAST", "LUCKY13", "RC4"):
            self.assertEqual(findings[vuln]["severity"], "OK", "%s\n%s" % (vuln, text))


if __name__ == "__main__":
    unittest.main()
