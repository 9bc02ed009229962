# SPDX-License-Identifier: Apache-2.0
"""test_install.py - README "Install in a cluster" run as written, against tests/apiserver.py.

The README's shell blocks (the install, the upgrade, the uninstall, the steps of the
manual overlay, and the move from it to managed certificates) run with `sh -e` from a
copy of the repository's manifests/, with a `kubectl` on PATH that plays a cluster as
far as the test API server allows:
  - `apply -k DIR` renders DIR with the real kubectl's kustomize ($KUBECTL or PATH) and
    applies every object in the rendered order as kubectl's client-side apply does: a
    create with the last-applied annotation, else a three-way merge (fields of the last
    applied configuration that are no longer applied are removed, fields never applied,
    such as the caBundle the webhook sets, are kept; lists of named items merge by name,
    as strategic merge patch does for webhooks, containers, env and volumes);
  - `apply -f`, `create secret tls` (also --dry-run=client -o yaml), `create secret
    generic --type --from-file`, `annotate KIND NAME KEY-`, `delete KIND NAME` and
    `delete -k DIR` as kubectl does them;
  - `rollout status deployment/NAME` is the kubelet and the Deployment controller: the
    test starts the real binary with the Deployment's args ($(POD_NAMESPACE) expanded,
    the port, kubeconfig and port file of a test process), one replica per `replicas`,
    rolling one at a time (maxSurge 1) when the pod template changed, and answers once
    every replica's /readyz is 200. Two flags are added for the test's sake only:
    --shutdown-grace=0s and short leader-election timings;
  - anything else is refused (exit 3), so a README step this test cannot play fails it.
Then what the operator would see is checked: the objects in the API server, no caBundle
until a replica set it, the Secret, both replicas answering a client that trusts only the
caBundle the API server holds and checks the Service's name, as kube-apiserver does.

Every wait polls with a deadline; nothing asserts how long something took.
"""

import base64
import copy
import http.client
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

import harness

README = os.path.join(harness.ROOT, "README.md")
NAME = "volcano-plugin-webhook"
NS = "volcano-plugin-webhook"
SECRET = "volcano-plugin-webhook-certs"
SERVICE_DNS = "%s.%s.svc" % (NAME, NS)
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MWC_PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/" + NAME
VWC_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/" + NAME
SECRET_PATH = "/api/v1/namespaces/%s/secrets/%s" % (NS, SECRET)
WAIT = 90.0 if os.environ.get("SANITIZER") else 45.0
TEST_ARGS = ["--shutdown-grace=0s", "--leader-elect-lease-duration=3s",
             "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=1s"]
CLUSTER_SCOPED = {"Namespace", "PriorityClass", "ClusterRole", "ClusterRoleBinding",
                  "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}


def real_kubectl():
    return os.environ.get("KUBECTL") or shutil.which("kubectl")


def readme_block(marker):
    """The first ```sh block after the first line of README.md that contains marker."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    at = text.index(marker)
    start = text.index("```sh\n", at) + len("```sh\n")
    return text[start:text.index("```", start)]


def commands(block):
    """The commands of a shell block: comments dropped, continuations joined."""
    out, cur = [], ""
    for line in block.splitlines():
        stripped = line.strip()
        if not cur and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            cur += stripped[:-1] + " "
            continue
        cur += stripped
        out.append(re.sub(r"\s+#.*$", "", cur).strip())
        cur = ""
    return out


# ---------------------------------------------------------------- the API, as kubectl calls it

def object_path(obj, name=True):
    """The REST path of obj (its collection with name=False)."""
    import apiserver  # tests/apiserver.py: its kind -> resource rule
    gv = ("/api/" if "/" not in obj["apiVersion"] else "/apis/") + obj["apiVersion"]
    ns = "" if obj["kind"] in CLUSTER_SCOPED else \
        "/namespaces/" + obj["metadata"].get("namespace", "default")
    path = gv + ns + "/" + apiserver.kind_to_resource(obj["kind"])
    return path + "/" + obj["metadata"]["name"] if name else path


class Api:
    """The test API server, from the fake kubectl's environment."""

    def __init__(self):
        self.port = int(os.environ["FAKE_KUBECTL_API_PORT"])
        self.token = os.environ["FAKE_KUBECTL_API_TOKEN"]
        self.ctx = ssl.create_default_context(cafile=os.environ["FAKE_KUBECTL_API_CA"])

    def call(self, method, path, body=None):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx,
                                           timeout=30)
        try:
            return harness._http_json(conn, method, path, body,
                                      {"Authorization": "Bearer " + self.token})
        finally:
            conn.close()


def merge(live, last, desired):
    """kubectl apply's three-way merge of desired into live, given the last applied."""
    if isinstance(desired, dict) and isinstance(live, dict):
        last = last if isinstance(last, dict) else {}
        out = {k: v for k, v in live.items() if not (k in last and k not in desired)}
        for k, v in desired.items():
            out[k] = merge(live.get(k), last.get(k), v)
        return out
    named = (isinstance(desired, list) and isinstance(live, list)
             and all(isinstance(i, dict) and "name" in i for i in desired + live))
    if named:
        last_names = {i.get("name") for i in last or [] if isinstance(i, dict)}
        live_by = {i["name"]: i for i in live}
        last_by = {i.get("name"): i for i in last or [] if isinstance(i, dict)}
        out = [merge(live_by.get(i["name"], {}), last_by.get(i["name"]), i) for i in desired]
        wanted = {i["name"] for i in desired}
        # items someone else added (never applied) stay, as strategic merge keeps them
        out += [i for i in live if i["name"] not in wanted and i["name"] not in last_names]
        return out
    return copy.deepcopy(desired)


def render(directory):
    r = subprocess.run([real_kubectl(), "kustomize", directory], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("kubectl kustomize %s: %s" % (directory, r.stderr))
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def apply_objects(api, objs, out):
    for obj in objs:
        desired = copy.deepcopy(obj)
        desired.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = \
            json.dumps(obj, sort_keys=True)
        what = "%s/%s" % (obj["kind"].lower(), obj["metadata"]["name"])
        status, live = api.call("GET", object_path(obj))
        if status == 404:
            status, body = api.call("POST", object_path(obj, name=False), desired)
            if status != 201:
                raise RuntimeError("create %s: %d %r" % (what, status, body))
            out.append(what + " created")
            continue
        last = json.loads(live["metadata"].get("annotations", {}).get(LAST_APPLIED, "{}"))
        new = merge(live, last, desired)
        new["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
        if new == live:
            out.append(what + " unchanged")
            continue
        status, body = api.call("PUT", object_path(obj), new)
        if status != 200:
            raise RuntimeError("apply %s: %d %r" % (what, status, body))
        out.append(what + " configured")


def fake_kubectl(argv):
    """The `kubectl` of the README's steps (the module docstring says what it plays)."""
    with open(os.environ["FAKE_KUBECTL_LOG"], "a") as f:
        f.write(" ".join(argv) + "\n")
    args, ns = [], "default"
    it = iter(argv)
    for a in it:
        if a in ("-n", "--namespace"):
            ns = next(it)
        elif a.startswith("--namespace="):
            ns = a.split("=", 1)[1]
        else:
            args.append(a)
    api = Api()
    out = []
    flags = {a for a in args if a.startswith("--")}
    words = [a for a in args if not a.startswith("--")]
    if words[:1] == ["apply"] and args[1] in ("-k", "-f"):
        if args[1] == "-k":
            objs = render(args[2])
        else:
            src = sys.stdin.read() if args[2] == "-" else open(args[2]).read()
            objs = [d for d in yaml.safe_load_all(src) if d]
            for o in objs:
                if o["kind"] not in CLUSTER_SCOPED:
                    o["metadata"].setdefault("namespace", ns)
        apply_objects(api, objs, out)
    elif words[:3] == ["create", "secret", "generic"] and len(words) == 4:
        data, stype = {}, "Opaque"
        for a in args:
            if a.startswith("--from-file="):
                key, path = a[len("--from-file="):].split("=", 1)
                with open(path, "rb") as f:
                    data[key] = base64.b64encode(f.read()).decode()
            elif a.startswith("--type="):
                stype = a[len("--type="):]
            elif a.startswith("--"):
                sys.stderr.write("fake kubectl: not supported: %s\n" % a)
                return 3
        secret = {"apiVersion": "v1", "kind": "Secret", "type": stype,
                  "metadata": {"name": words[3], "namespace": ns}, "data": data}
        status, body = api.call("POST", object_path(secret, name=False), secret)
        if status != 201:
            sys.stderr.write("Error from server (%s): %s\n" % (body.get("reason"),
                                                             body.get("message")))
            return 1
        out.append("secret/%s created" % words[3])
    elif words[:1] == ["annotate"] and len(words) == 4 and words[3].endswith("-"):
        kinds = {"mutatingwebhookconfiguration": "MutatingWebhookConfiguration",
                 "validatingwebhookconfiguration": "ValidatingWebhookConfiguration"}
        obj = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kinds[words[1]],
               "metadata": {"name": words[2]}}
        conn = http.client.HTTPSConnection("127.0.0.1", api.port, context=api.ctx, timeout=30)
        try:
            status, body = harness._http_json(
                conn, "PATCH", object_path(obj),
                {"metadata": {"annotations": {words[3][:-1]: None}}},
                {"Authorization": "Bearer " + api.token,
                 "Content-Type": "application/merge-patch+json"})
        finally:
            conn.close()
        if status != 200:
            sys.stderr.write("Error from server: %d %r\n" % (status, body))
            return 1
        out.append("%s/%s annotated" % (words[1], words[2]))
    elif words[:3] == ["create", "secret", "tls"] and len(words) == 4:
        opts = dict(a[2:].split("=", 1) for a in flags if "=" in a)
        data = {}
        for key, flag in (("tls.crt", "cert"), ("tls.key", "key")):
            with open(opts[flag], "rb") as f:
                data[key] = base64.b64encode(f.read()).decode()
        secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                  "metadata": {"name": words[3], "namespace": ns}, "data": data}
        if opts.get("dry-run") == "client":
            sys.stdout.write(yaml.safe_dump(secret))
            return 0
        status, body = api.call("POST", object_path(secret, name=False), secret)
        if status != 201:
            sys.stderr.write("Error from server (%s): %s\n" % (body.get("reason"),
                                                             body.get("message")))
            return 1
        out.append("secret/%s created" % words[3])
    elif words[:2] == ["rollout", "status"] and words[2].startswith("deployment/"):
        # the test (the "cluster") rolls the Deployment out and says when it is done
        d = os.environ["FAKE_KUBECTL_DIR"]
        with open(os.path.join(d, "rollout.req.tmp"), "w") as f:
            f.write("%s/%s" % (ns, words[2].split("/", 1)[1]))
        os.rename(os.path.join(d, "rollout.req.tmp"), os.path.join(d, "rollout.req"))
        done = os.path.join(d, "rollout.done")
        deadline = time.monotonic() + 4 * WAIT
        while not os.path.exists(done) and time.monotonic() < deadline:
            time.sleep(0.05)
        with open(done) as f:
            msg = f.read()
        os.unlink(done)
        sys.stdout.write(msg)
        return 0 if msg.startswith("deployment ") else 1
    elif words[:1] == ["delete"]:
        ignore = "--ignore-not-found" in flags
        if args[1] == "-k":
            objs = render(args[2])
        elif len(words) == 3:
            kinds = {"mutatingwebhookconfiguration": ("admissionregistration.k8s.io/v1",
                                                      "MutatingWebhookConfiguration"),
                     "validatingwebhookconfiguration": ("admissionregistration.k8s.io/v1",
                                                        "ValidatingWebhookConfiguration")}
            if words[1] not in kinds:
                sys.stderr.write("fake kubectl: cannot delete a %s\n" % words[1])
                return 3
            av, kind = kinds[words[1]]
            objs = [{"apiVersion": av, "kind": kind, "metadata": {"name": words[2]}}]
        else:
            sys.stderr.write("fake kubectl: not supported: %s\n" % " ".join(argv))
            return 3
        for obj in objs:
            status, body = api.call("DELETE", object_path(obj))
            what = "%s/%s" % (obj["kind"].lower(), obj["metadata"]["name"])
            if status == 404 and ignore:
                continue
            if status != 200:
                sys.stderr.write("Error from server (NotFound): %s\n" % what)
                return 1
            out.append('%s "%s" deleted' % (obj["kind"].lower(), obj["metadata"]["name"]))
    else:
        sys.stderr.write("fake kubectl: not supported: %s\n" % " ".join(argv))
        return 3
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0


FAKE_KUBECTL = """#!%s
import sys
sys.path.insert(0, %r)
import test_install
sys.exit(test_install.fake_kubectl(sys.argv[1:]))
""" % (harness.PYTHON, harness.TESTS)


# ---------------------------------------------------------------- a client as kube-apiserver

def strict_context(ca_file):
    """Only ca_file, the SAN checked, not the CN: as Go's crypto/tls for kube-apiserver."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=ca_file)
    ctx.check_hostname = True
    ctx.hostname_checks_common_name = False
    return ctx


def https(port, method, path, ctx, body=None):
    conn = harness._PinnedHTTPSConnection("127.0.0.1", port, SERVICE_DNS, ctx, 10)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def insecure_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


class InstallTest(unittest.TestCase):
    """README "Install in a cluster": install, upgrade, uninstall, and the manual overlay."""

    def setUp(self):
        if real_kubectl() is None:
            self.skipTest("kubectl not found: cannot render manifests/")
        if not os.access(harness.binary(), os.X_OK):
            self.skipTest("%s not built" % harness.binary())
        self.dir = tempfile.mkdtemp(prefix="vpw-install-")
        if not os.environ.get("KEEP_TEST_DIRS"):
            self.addCleanup(shutil.rmtree, self.dir, True)
        self.api = harness.ApiServer(self.dir).start()
        self.addCleanup(self.api.stop)
        self.kubeconfig = harness.write_kubeconfig(os.path.join(self.dir, "kubeconfig"),
                                                   self.api.url, self.api.ca_file,
                                                   self.api.token)
        # the operator's clone: README steps edit files in it and run from its root
        self.root = os.path.join(self.dir, "repo")
        os.mkdir(self.root)
        shutil.copytree(os.path.join(harness.ROOT, "manifests"),
                        os.path.join(self.root, "manifests"))
        os.symlink(harness.build_dir(), os.path.join(self.root, "build"))
        self.bin = os.path.join(self.dir, "bin")
        os.mkdir(self.bin)
        with open(os.path.join(self.bin, "kubectl"), "w") as f:
            f.write(FAKE_KUBECTL)
        os.chmod(os.path.join(self.bin, "kubectl"), 0o755)
        self.kubectl_log = os.path.join(self.dir, "kubectl.log")
        job = harness.load_job("mpi-job", namespace="default")
        del job["metadata"]["uid"]
        self.job = self.api.create_objects([job])[0]
        self.replicas = []   # [(Process, port, template)] of the running "pods"
        self.started = 0
        self.addCleanup(self.stop_all)

    # ------------------------------------------------------------ the cluster

    def stop_all(self):
        for p, _, _ in self.replicas:
            p.stop()
        self.replicas = []

    def deployment(self, ns, name):
        status, dep = self.api.get("/apis/apps/v1/namespaces/%s/deployments/%s" % (ns, name))
        self.assertEqual(status, 200, dep)
        return dep

    def start_replica(self, dep):
        """A "pod" of the Deployment: the binary with its container's args."""
        [c] = dep["spec"]["template"]["spec"]["containers"]
        self.assertEqual(c["args"][0], "serve")
        env = {}
        for e in c.get("env", []):
            self.assertEqual(e["valueFrom"]["fieldRef"]["fieldPath"], "metadata.namespace")
            env[e["name"]] = dep["metadata"]["namespace"]
        args = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in c["args"][1:]]
        self.assertIn("--port=8443", args)
        args.remove("--port=8443")
        d = os.path.join(self.dir, "pod%d" % self.started)
        self.started += 1
        os.makedirs(d)
        # the kubelet's Secret volumes: the Secret's keys as files, with the volume's mode;
        # the args' paths under a mountPath point there
        volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"].get("volumes", [])}
        for m in c.get("volumeMounts", []):
            vol = volumes[m["name"]]["secret"]
            status, secret = self.api.get("/api/v1/namespaces/%s/secrets/%s"
                                          % (dep["metadata"]["namespace"], vol["secretName"]))
            self.assertEqual(status, 200, "the Secret volume %s: %r" % (m["name"], secret))
            local = os.path.join(d, "volumes", m["name"])
            os.makedirs(local)
            for key, value in secret["data"].items():
                path = os.path.join(local, key)
                with open(path, "wb") as f:
                    f.write(base64.b64decode(value))
                os.chmod(path, vol.get("defaultMode", 0o644))
            args = [a.replace("=" + m["mountPath"] + "/", "=" + local + "/") for a in args]
        port_file = os.path.join(d, "port")
        argv = [harness.binary(), "serve"] + args + [
            "--bind-address=127.0.0.1", "--port=0", "--port-file=" + port_file,
            "--kubeconfig=" + self.kubeconfig] + TEST_ARGS
        p = harness.Process("pod", argv, d).start()
        return p, p.wait_port_file(port_file, timeout=WAIT)

    def ready(self, port):
        try:
            return https(port, "GET", "/readyz", insecure_context())[0] == 200
        except OSError:
            return False

    def wait(self, pred, what):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if pred():
                return
            for p, _, _ in self.replicas:
                if not p.alive():
                    raise AssertionError("a replica exited:\n" + p.log())
            time.sleep(0.1)
        raise AssertionError("timed out waiting for %s\n%s" % (
            what, "\n".join(p.log()[-3000:] for p, _, _ in self.replicas)))

    def rollout(self, ns, name):
        """The Deployment controller and the kubelet: replicas of the current template,
        one new ready replica before an old one stops (maxSurge 1, maxUnavailable 0)."""
        dep = self.deployment(ns, name)
        template = json.dumps(dep["spec"]["template"], sort_keys=True)
        old = [r for r in self.replicas if r[2] != template]
        while len([r for r in self.replicas if r[2] == template]) < dep["spec"]["replicas"]:
            p, port = self.start_replica(dep)
            self.replicas.append((p, port, template))
            self.wait(lambda: self.ready(port), "replica on port %d ready" % port)
            if old:
                gone = old.pop(0)
                gone[0].stop()
                self.replicas.remove(gone)
        return 'deployment "%s" successfully rolled out\n' % name

    def run_block(self, block, env=None):
        """sh -e on a README block from the clone's root; the cluster answers rollouts."""
        d = os.path.join(self.dir, "kubectl")
        os.makedirs(d, exist_ok=True)
        e = dict(os.environ, PATH=self.bin + os.pathsep + os.environ.get("PATH", ""),
                 FAKE_KUBECTL_LOG=self.kubectl_log, FAKE_KUBECTL_DIR=d,
                 FAKE_KUBECTL_API_PORT=str(self.api.port), FAKE_KUBECTL_API_CA=self.api.ca_file,
                 FAKE_KUBECTL_API_TOKEN=self.api.token, **(env or {}))
        e.pop("KUBECONFIG", None)
        if real_kubectl():  # the real one by its path: the fake is first on PATH
            e["KUBECTL"] = shutil.which(real_kubectl())
        proc = subprocess.Popen(["sh", "-ec", block], cwd=self.root, env=e,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        req = os.path.join(d, "rollout.req")
        deadline = time.monotonic() + 6 * WAIT
        try:
            while proc.poll() is None and time.monotonic() < deadline:
                if os.path.exists(req):
                    with open(req) as f:
                        ns, name = f.read().split("/")
                    os.unlink(req)
                    try:
                        msg = self.rollout(ns, name)
                    except AssertionError as err:
                        msg = "rollout failed: %s" % err
                    with open(os.path.join(d, "rollout.done.tmp"), "w") as f:
                        f.write(msg)
                    os.rename(os.path.join(d, "rollout.done.tmp"),
                              os.path.join(d, "rollout.done"))
                time.sleep(0.05)
        finally:
            if proc.poll() is None:
                proc.kill()
            out, err = proc.communicate()
        self.assertEqual(proc.returncode, 0, "README block failed:\n%s\n%s%s" % (block, out, err))
        return out

    # ------------------------------------------------------------ what the operator sees

    def ca_bundles(self):
        out = []
        for path in (MWC_PATH, VWC_PATH):
            status, cfg = self.api.get(path)
            self.assertEqual(status, 200, cfg)
            out += [w["clientConfig"].get("caBundle") for w in cfg["webhooks"]]
        return out

    def trusted_ca_file(self):
        bundles = self.ca_bundles()
        self.assertEqual(len(set(bundles)), 1, bundles)
        self.assertIsNotNone(bundles[0])
        path = os.path.join(self.dir, "cabundle-%d.crt" % time.monotonic_ns())
        with open(path, "wb") as f:
            f.write(base64.b64decode(bundles[0], validate=True))
        return path

    def assert_every_replica_answers(self):
        """A review from a client that trusts only the caBundle the API server holds and
        checks the Service's name, to every replica: allowed and patched."""
        ca = self.trusted_ca_file()
        review = harness.review(harness.build_pod(self.job, "mpiworker", 0), "default")
        self.assertEqual(len(self.replicas), 2)
        for _, port, _ in self.replicas:
            with self.subTest(port=port):
                status, body = https(port, "POST", "/pods/mutate", strict_context(ca), review)
                self.assertEqual(status, 200, body)
                answer = json.loads(body)["response"]
                self.assertTrue(answer["allowed"], answer)
                self.assertEqual(answer["patchType"], "JSONPatch")

    def secret_data(self):
        status, secret = self.api.get(SECRET_PATH)
        self.assertEqual(status, 200, secret)
        return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}

    def in_api(self, obj):
        return self.api.get(object_path(obj))

    def kubectl_calls(self):
        with open(self.kubectl_log) as f:
            return f.read().splitlines()

    def install(self):
        block = readme_block("Then, from the repository root, the whole install:")
        self.assertEqual(commands(block), [
            "kubectl apply -k manifests/",
            "kubectl -n volcano-plugin-webhook rollout status deployment/volcano-plugin-webhook"])
        return self.run_block(block)

    # ------------------------------------------------------------ tests

    def test_install_as_written(self):
        objs = render(os.path.join(self.root, "manifests"))
        # The apply alone, as the API server holds it before any replica runs: every
        # object, the webhook configurations without a caBundle, no certificate Secret.
        apply_only = commands(readme_block(
            "Then, from the repository root, the whole install:"))[0]
        self.run_block(apply_only)
        for obj in objs:
            with self.subTest(object=(obj["kind"], obj["metadata"]["name"])):
                status, live = self.in_api(obj)
                self.assertEqual(status, 200, live)
                self.assertEqual(json.loads(live["metadata"]["annotations"][LAST_APPLIED]), obj)
        self.assertEqual(self.ca_bundles(), [None, None])
        self.assertEqual(self.api.get(SECRET_PATH)[0], 404)

        # The whole block as written (its apply again, then the rollout).
        out = self.run_block(readme_block("Then, from the repository root, the whole install:"))
        self.assertIn('deployment "volcano-plugin-webhook" successfully rolled out\n', out)
        self.assertIn("deployment/volcano-plugin-webhook unchanged\n", out)
        # What README "Verify" shows: the Secret with its five keys, the caBundle of every
        # webhook the Secret's trust bundle, both replicas ready and trusted.
        data = self.secret_data()
        self.assertEqual(sorted(data), ["ca-bundle.crt", "ca.crt", "ca.key", "tls.crt", "tls.key"])
        want = base64.b64encode(data["ca-bundle.crt"].encode()).decode()
        self.assertEqual(self.ca_bundles(), [want, want])
        self.assert_every_replica_answers()
        # The log lines README "Verify" shows, by its grep: the Lease holder made the CA,
        # set both caBundles and issued the pair; every replica serves it and is ready.
        verify = readme_block("**Verify.**")
        grep = "grep -o '\"msg\":\"certkeeper: [^\"]*\"'"
        self.assertIn("| " + grep, verify)
        msgs = [re.findall(r'"msg":"certkeeper: [^"]*"', p.log()) for p, _, _ in self.replicas]
        made = '"msg":"certkeeper: secret %s/%s not found: making a CA"' % (NS, SECRET)
        cabundle = '"msg":"certkeeper: caBundle set"'
        issued = '"msg":"certkeeper: serving certificate issued"'
        serving = '"msg":"certkeeper: serving the pair of secret %s/%s"' % (NS, SECRET)
        ready = '"msg":"certkeeper: ready"'
        for line in (made, cabundle, issued, serving, ready):
            self.assertIn("# " + line, verify)
        [leader] = [m for m in msgs if made in m]
        self.assertEqual(leader.count(cabundle), 2)
        self.assertIn(issued, leader)
        for m in msgs:
            self.assertIn(serving, m)
            self.assertIn(ready, m)
        # every command the README ran was one kubectl could have run: apply then rollout
        self.assertEqual(self.kubectl_calls(), [
            "apply -k manifests/", "apply -k manifests/",
            "-n volcano-plugin-webhook rollout status deployment/volcano-plugin-webhook"])

    def test_upgrade_as_written_keeps_the_ca_bundle_and_the_certificates(self):
        self.install()
        data = self.secret_data()
        bundles = self.ca_bundles()
        old_pods = [p for p, _, _ in self.replicas]
        # "set its tag in manifests/base/kustomization.yaml (`images:`)"
        k = os.path.join(self.root, "manifests", "base", "kustomization.yaml")
        with open(k) as f:
            text = f.read()
        self.assertIn("    newTag: 0.1.0\n", text)
        with open(k, "w") as f:
            f.write(text.replace("    newTag: 0.1.0\n", "    newTag: 0.1.1\n"))

        block = readme_block("**Upgrade.**")
        self.assertEqual(commands(block), [
            "kubectl apply -k manifests/",
            "kubectl -n volcano-plugin-webhook rollout status deployment/volcano-plugin-webhook"])
        apply_only = commands(block)[0]
        out = self.run_block(apply_only)
        self.assertIn("deployment/volcano-plugin-webhook configured\n", out)
        # the apply left the caBundle the Lease holder set: it never applied one
        self.assertEqual(self.ca_bundles(), bundles)
        dep = self.deployment(NS, NAME)
        self.assertEqual(dep["spec"]["template"]["spec"]["containers"][0]["image"],
                         "volcano-plugin-webhook:0.1.1")

        out = self.run_block(block)
        self.assertIn('deployment "volcano-plugin-webhook" successfully rolled out\n', out)
        # two new replicas, the old ones gone; the same CA and pair, the same caBundle
        self.assertEqual(len(self.replicas), 2)
        self.assertFalse(set(p for p, _, _ in self.replicas) & set(old_pods))
        self.assertEqual(self.secret_data(), data)
        self.assertEqual(self.ca_bundles(), bundles)
        self.assert_every_replica_answers()

    def test_uninstall_as_written_removes_the_webhook_configurations_first(self):
        self.install()
        objs = render(os.path.join(self.root, "manifests"))
        self.stop_all()  # the namespace's deletion ends the pods
        block = readme_block("**Uninstall.** The webhook configurations go first")
        self.assertEqual(commands(block), [
            "kubectl delete mutatingwebhookconfiguration volcano-plugin-webhook",
            "kubectl delete validatingwebhookconfiguration volcano-plugin-webhook",
            "kubectl delete -k manifests/ --ignore-not-found"])
        self.api.clear_requests()
        self.run_block(block)
        deletes = [r["path"] for r in self.api.requests() if r["method"] == "DELETE"]
        self.assertEqual(deletes[:2], [MWC_PATH, VWC_PATH])
        # then every object of the render, in its order (the two again, already gone)
        self.assertEqual(deletes[2:], [object_path(o) for o in objs])
        for obj in objs:
            with self.subTest(object=(obj["kind"], obj["metadata"]["name"])):
                self.assertEqual(self.in_api(obj)[0], 404)

    def test_from_the_manual_overlay_to_managed_certificates_as_written(self):
        """README "From an earlier release, or from the manual overlay, to managed
        certificates": the pair served now handed to the Secret, kubectl's last-applied
        annotation taken off the webhook configurations, the upgrade: the caBundle stays
        through the apply, the new replicas (followers while an old one holds the Lease)
        serve that pair and are ready, the rollout ends, and the CA is the one before."""
        self.run_block(readme_block("`manifests/base/` without the rights of managed "
                                    "certificates. From the repository root:"),
                       env={"HOME": self.dir})
        certs = os.path.join(self.dir, "volcano-plugin-webhook-certs")
        bundles = self.ca_bundles()
        old_pods = [p for p, _, _ in self.replicas]
        block = readme_block("**From an earlier release, or from the manual overlay, to "
                             "managed certificates.**")
        cmds = commands(block)
        self.assertEqual(cmds[-2:], [
            "kubectl apply -k manifests/",
            "kubectl -n volcano-plugin-webhook rollout status deployment/volcano-plugin-webhook"])
        self.run_block("\n".join(cmds[:-1]), env={"CERTS": certs})
        # the apply removed no caBundle, though the manual overlay had applied one
        self.assertEqual(self.ca_bundles(), bundles)
        self.assertEqual(len(self.replicas), 2)

        out = self.run_block(cmds[-1])  # the block's last command: the rollout
        self.assertIn('deployment "volcano-plugin-webhook" successfully rolled out\n', out)
        self.assertFalse(set(p for p, _, _ in self.replicas) & set(old_pods))
        dep = self.deployment(NS, NAME)
        self.assertIn("--cert-secret=" + SECRET,
                      dep["spec"]["template"]["spec"]["containers"][0]["args"])
        self.assertEqual(self.ca_bundles(), bundles)
        with open(os.path.join(certs, "ca.crt")) as f:
            self.assertEqual(self.secret_data()["ca.crt"], f.read())
        self.assert_every_replica_answers()

    def test_manual_overlay_as_written(self):
        """README "Signing your own certificates": gen-certs, the Secret, the caBundle
        filled in by sed, the overlay applied; both replicas serve the Secret's pair under
        the CA in the caBundle."""
        block = readme_block("`manifests/base/` without the rights of managed certificates. "
                             "From the repository root:")
        self.assertIn('CERTS=$HOME/volcano-plugin-webhook-certs\n', block)
        self.run_block(block, env={"HOME": self.dir})
        with open(os.path.join(self.dir, "volcano-plugin-webhook-certs", "ca.crt"), "rb") as f:
            ca = f.read()
        want = base64.b64encode(ca).decode()
        self.assertEqual(self.ca_bundles(), [want, want])
        # no Secret of the webhook's own, and no rights for one
        self.assertEqual(self.api.get(SECRET_PATH)[0], 404)
        for kind in ("roles", "clusterroles"):
            path = ("/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles/%s-certs" % (NS, NAME)
                    if kind == "roles" else
                    "/apis/rbac.authorization.k8s.io/v1/clusterroles/%s-certs" % NAME)
            self.assertEqual(self.api.get(path)[0], 404)
        self.assert_every_replica_answers()
        self.assertEqual([c.split(" ")[0:3] for c in self.kubectl_calls()], [
            ["apply", "-f", "manifests/base/namespace.yaml"],
            ["-n", "volcano-plugin-webhook", "create"],
            ["apply", "-k", "manifests/overlays/manual/"],
            ["-n", "volcano-plugin-webhook", "rollout"]])


if __name__ == "__main__":
    unittest.main()
