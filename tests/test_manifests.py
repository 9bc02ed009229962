# SPDX-License-Identifier: Apache-2.0
"""test_manifests.py - manifests/ (kustomize) and the Dockerfile, checked without a cluster.

What is checked:
  - `kubectl kustomize manifests/` renders (kubectl from $KUBECTL, else PATH: Debian 12's
    kubernetes-client, kubectl 1.20 with kustomize v2, or any newer one); without kubectl
    the rendered-object tests are skipped, saying so;
  - every rendered object conforms to the Kubernetes schema (tests/schema/
    validate-objects.mjs, npm kubernetes-models) and the validators pass their self-tests;
  - the Deployment's security properties, probes, resources, spread (replicas on
    different nodes, the rollout's extra pod still schedulable), priority class and
    managed certificates (--cert-secret, no volume), each its own test; every flag of its
    args (and of the Dockerfile's CMD) is one that `$BUILD/volcano-plugin-webhook serve
    --help` lists (skipped when not built);
  - the Service, PodDisruptionBudget and both webhook configurations field by field, with
    no caBundle anywhere in the default install (the Lease holder sets it), and the
    webhook configurations rendered after the objects the replicas need;
  - every overlay of manifests/overlays/ renders, is the base plus its own objects (the
    namespaced overlay: Roles in its namespaces instead of the ClusterRole, --namespaces
    and the namespaceSelector, the rest the base's; manual and cert-manager: the TLS
    Secret mounted, no rights for managed certificates, and the caBundle placeholder or
    cert-manager's Issuers, Certificates and inject-ca-from annotation naming the serving
    Certificate of the same render) and validates (prometheus-operator's and cert-manager's
    kinds against their CRD schema, @kubernetes-models/prometheus-operator and
    @kubernetes-models/cert-manager); the NetworkPolicy, the ServiceMonitor and the
    PrometheusRule field by field, the rules' metrics are ones webhook/metrics.c and
    webhook/serve.c write, and promtool (when installed) evaluates the alerts;
  - RBAC: exactly the (group, resource, verb) triples listed, as set equality;
  - the caBundle command of README.md fills the manual overlay's caBundle with the CA that
    signed the serving certificate;
  - the image name set by kustomize `images:` (not in the base Deployment); `make image`
    with stand-ins for docker;
  - the Dockerfile statically: stages pinned to a Debian point release, runtime packages (covering every shared library
    the built binary needs), non-root USER, ENTRYPOINT, CMD; .dockerignore keeps the
    sources;
  - LICENSE is the Apache License 2.0 word for word, README.md says so and the image
    carries it.

Python 3 standard library plus Debian's python3-yaml; node for the schema; promtool
(Debian's prometheus) for the alert tests, skipped without it.
"""

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

import harness

ROOT = harness.ROOT
MANIFESTS = os.path.join(ROOT, "manifests")
BASE = os.path.join(MANIFESTS, "base")
CLUSTER_RBAC_DIR = os.path.join(MANIFESTS, "cluster-rbac")
OVERLAYS = os.path.join(MANIFESTS, "overlays")
DOCKERFILE = os.path.join(ROOT, "Dockerfile")
DOCKERIGNORE = os.path.join(ROOT, ".dockerignore")
README = os.path.join(ROOT, "README.md")
LICENSE = os.path.join(ROOT, "LICENSE")
# sha256 of the Apache License 2.0 as https://www.apache.org/licenses/LICENSE-2.0.txt
# and Debian's /usr/share/common-licenses/Apache-2.0 ship it.
APACHE_2_0_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
SCHEMA_DIR = os.path.join(harness.TESTS, "schema")
OBJECT_VALIDATOR = os.path.join(SCHEMA_DIR, "validate-objects.mjs")

NAME = "volcano-plugin-webhook"
NS = "volcano-plugin-webhook"
TLS_SECRET = "volcano-plugin-webhook-tls"
CERT_SECRET = "volcano-plugin-webhook-certs"
CERT_DIR = "/etc/webhook/certs"
IMAGE = "volcano-plugin-webhook:0.1.0"
NONROOT = 65532
# README "Signing your own certificates": run from the repository root, $CERTS = gen-certs --out.
FILL_CA_BUNDLE = ('sed -i "s|^  value: .*|  value: $(base64 -w0 "$CERTS/ca.crt")|" '
                  'manifests/overlays/manual/ca-bundle.yaml')
# The Deployment's args: managed certificates in the base, the TLS files of a mounted
# Secret in overlays/manual and overlays/cert-manager.
MANAGED_ARGS = ["serve", "--port=8443", "--cert-secret=" + CERT_SECRET,
                "--leader-elect-resource-namespace=$(POD_NAMESPACE)", "--v=2"]
FILE_ARGS = ["serve", "--port=8443", "--tls-cert-file=" + CERT_DIR + "/tls.crt",
             "--tls-private-key-file=" + CERT_DIR + "/tls.key",
             "--leader-elect-resource-namespace=$(POD_NAMESPACE)", "--v=2"]
RBAC = "rbac.authorization.k8s.io/v1"
# The cluster-wide rights (manifests/cluster-rbac/), which overlays/namespaced leaves out.
CLUSTER_RBAC = sorted([(RBAC, "ClusterRole", "", NAME), (RBAC, "ClusterRoleBinding", "", NAME)])
# The rights of managed certificates (manifests/managed-certs/), which the file overlays
# leave out.
CERTS_RBAC = sorted([(RBAC, "ClusterRole", "", NAME + "-certs"),
                     (RBAC, "ClusterRoleBinding", "", NAME + "-certs"),
                     (RBAC, "Role", NS, NAME + "-certs"),
                     (RBAC, "RoleBinding", NS, NAME + "-certs")])

RUNTIME_PACKAGES = {"libmicrohttpd12", "libgnutls30", "libjansson4", "libcurl4", "libssl3", "libyaml-0-2",
                    "libmimalloc2.0",
                    "ca-certificates"}


def kubectl():
    """The kubectl to render with ($KUBECTL, else PATH), or None."""
    return os.environ.get("KUBECTL") or shutil.which("kubectl")


def render(directory):
    """`kubectl kustomize directory` as a list of objects; raises with kubectl's stderr, or
    when a document is not an object with apiVersion and kind (kustomize v2.0 renders a
    `$patch: delete` as `{}`, which kubectl apply refuses: "Object 'Kind' is missing")."""
    r = subprocess.run([kubectl(), "kustomize", directory], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise AssertionError("kubectl kustomize %s failed (exit %d): %s"
                             % (directory, r.returncode, r.stderr))
    docs = [d for d in yaml.safe_load_all(r.stdout) if d is not None]
    for d in docs:
        if not isinstance(d, dict) or not d.get("apiVersion") or not d.get("kind"):
            raise AssertionError("kubectl kustomize %s rendered a document without "
                                 "apiVersion or kind: %r" % (directory, d))
    return docs


_KUBECTL_MINOR = {}


def kustomize_v2():
    """Whether kubectl's built-in kustomize is v2.0 (kubectl 1.20 and older: Debian 12's)."""
    k = kubectl()
    if k not in _KUBECTL_MINOR:
        r = subprocess.run([k, "version", "--client", "-o", "json"], capture_output=True,
                           text=True, timeout=60)
        v = json.loads(r.stdout)["clientVersion"]
        _KUBECTL_MINOR[k] = (int(v["major"]), int(re.match(r"\d+", v["minor"]).group()))
    return _KUBECTL_MINOR[k] < (1, 21)


def serve_flags():
    """The long and short flags `serve --help` lists, or None when the binary is not built."""
    exe = harness.binary()
    if not os.access(exe, os.X_OK):
        return None
    r = subprocess.run([exe, "serve", "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError("serve --help exited %d: %s" % (r.returncode, r.stderr))
    return set(re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", r.stdout))


def flag_names(args):
    """The flag names of a command line after the subcommand: '--x=v' and '--x v' → '--x'."""
    return [a.split("=", 1)[0] for a in args if a.startswith("-")]


def label_selector_matches(match_labels, labels):
    return all(labels.get(k) == v for k, v in match_labels.items())


def rbac_triples(rules):
    """{(apiGroup, resource, verb)} of a Role's rules (resourceNames etc. must be absent)."""
    out = set()
    for rule in rules:
        extra = set(rule) - {"apiGroups", "resources", "verbs"}
        if extra:
            raise AssertionError("rule has %s: %s" % (sorted(extra), rule))
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                for v in rule["verbs"]:
                    out.add((g, r, v))
    return out


class RenderedManifestsTest(unittest.TestCase):
    """What `kubectl kustomize manifests/` renders."""

    @classmethod
    def setUpClass(cls):
        if kubectl() is None:
            raise unittest.SkipTest(
                "kubectl not found: cannot render manifests/ (install Debian's "
                "kubernetes-client, scripts/install-deps does, or set KUBECTL)")
        cls.objects = render(MANIFESTS)

    def one(self, kind, name=NAME):
        found = [o for o in self.objects
                 if o["kind"] == kind and o["metadata"]["name"] == name]
        self.assertEqual(len(found), 1, "%s %s in the rendered manifests" % (kind, name))
        return found[0]

    def deployment(self):
        return self.one("Deployment")

    def pod_spec(self):
        return self.deployment()["spec"]["template"]["spec"]

    def container(self):
        cs = self.pod_spec()["containers"]
        self.assertEqual([c["name"] for c in cs], ["webhook"])
        return cs[0]

    def effective_security(self, field):
        """A container security setting, falling back to the pod's (as the kubelet does)."""
        c = self.container().get("securityContext") or {}
        if field in c:
            return c[field]
        return (self.pod_spec().get("securityContext") or {}).get(field)

    def container_port(self, port):
        """A probe's or the Service's port (number or name) as the container's number."""
        if isinstance(port, int):
            return port
        ports = {p["name"]: p["containerPort"] for p in self.container().get("ports", [])}
        self.assertIn(port, ports, "port name %r is not one of the container's" % port)
        return ports[port]

    def arg_value(self, flag):
        """The value of --flag in the container's args, $(VAR) expanded from its env."""
        args = self.container()["args"]
        for i, a in enumerate(args):
            if a == flag and i + 1 < len(args):
                value = args[i + 1]
                break
            if a.startswith(flag + "="):
                value = a.split("=", 1)[1]
                break
        else:
            return None
        env = {e["name"]: e for e in self.container().get("env", [])}

        def expand(m):
            e = env.get(m.group(1))
            self.assertIsNotNone(e, "$(%s) is not in the container's env" % m.group(1))
            if "value" in e:
                return e["value"]
            path = e["valueFrom"]["fieldRef"]["fieldPath"]
            self.assertEqual(path, "metadata.namespace", "only the namespace is resolved here")
            return self.deployment()["metadata"]["namespace"]
        return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", expand, value)

    # ------------------------------------------------------------ objects and schema

    def test_renders_exactly_these_objects(self):
        got = sorted((o["apiVersion"], o["kind"], o["metadata"].get("namespace", ""),
                      o["metadata"]["name"]) for o in self.objects)
        self.assertEqual(got, sorted([
            ("v1", "Namespace", "", NS),
            ("scheduling.k8s.io/v1", "PriorityClass", "", NAME),
            ("v1", "ServiceAccount", NS, NAME),
            ("rbac.authorization.k8s.io/v1", "ClusterRole", "", NAME),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", NAME),
            ("rbac.authorization.k8s.io/v1", "Role", NS, NAME + "-leader-election"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding", NS, NAME + "-leader-election"),
            ("rbac.authorization.k8s.io/v1", "Role", NS, NAME + "-certs"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding", NS, NAME + "-certs"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole", "", NAME + "-certs"),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", NAME + "-certs"),
            ("apps/v1", "Deployment", NS, NAME),
            ("v1", "Service", NS, NAME),
            ("policy/v1", "PodDisruptionBudget", NS, NAME),
            ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "", NAME),
            ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", NAME),
        ]))

    def test_every_object_conforms_to_the_kubernetes_schema(self):
        node = shutil.which("node")
        self.assertIsNotNone(node, "node not found: cannot run %s" % OBJECT_VALIDATOR)
        r = subprocess.run([node, OBJECT_VALIDATOR], input=json.dumps(self.objects),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual((r.returncode, r.stdout),
                         (0, "ok %d objects\n" % len(self.objects)), r.stderr)

    # ------------------------------------------------------------ Deployment

    def test_deployment_two_replicas_of_the_image(self):
        d = self.deployment()
        self.assertEqual(d["spec"]["replicas"], 2)
        self.assertEqual(self.container()["image"], IMAGE)
        self.assertEqual(self.pod_spec()["serviceAccountName"], NAME)
        self.assertTrue(label_selector_matches(d["spec"]["selector"]["matchLabels"],
                                               d["spec"]["template"]["metadata"]["labels"]))

    def test_image_is_set_by_kustomize_images(self):
        with open(os.path.join(BASE, "deployment.yaml"), encoding="utf-8") as f:
            base = yaml.safe_load(f)
        self.assertEqual(base["spec"]["template"]["spec"]["containers"][0]["image"], NAME)
        with open(os.path.join(BASE, "kustomization.yaml"), encoding="utf-8") as f:
            images = yaml.safe_load(f)["images"]
        self.assertEqual(images, [{"name": NAME, "newName": NAME, "newTag": "0.1.0"}])
        # an operator's registry, tag and digest, set there only, reach the Deployment
        with tempfile.TemporaryDirectory(prefix="test_manifests.") as tmp:
            copy = os.path.join(tmp, "manifests")
            shutil.copytree(MANIFESTS, copy)
            k = os.path.join(copy, "base", "kustomization.yaml")
            with open(k, encoding="utf-8") as f:
                text = f.read()
            digest = "sha256:" + "ab" * 32
            text = text.replace("    newName: %s\n    newTag: 0.1.0\n" % NAME,
                                "    newName: registry.example.com/ops/%s\n    digest: %s\n"
                                % (NAME, digest))
            with open(k, "w", encoding="utf-8") as f:
                f.write(text)
            d = [o for o in render(copy) if o["kind"] == "Deployment"][0]
            self.assertEqual(d["spec"]["template"]["spec"]["containers"][0]["image"],
                             "registry.example.com/ops/%s@%s" % (NAME, digest))

    def test_deployment_rolls_without_losing_a_serving_replica(self):
        rolling = self.deployment()["spec"]["strategy"]["rollingUpdate"]
        self.assertEqual(rolling["maxUnavailable"], 0)

    def test_args_serve_with_managed_certificates(self):
        self.assertEqual(self.container()["args"], MANAGED_ARGS)
        # the Secret lives in the Lease namespace, the webhook's own
        self.assertEqual(self.arg_value("--cert-secret"), CERT_SECRET)
        self.assertEqual(self.arg_value("--leader-elect-resource-namespace"), NS)

    def test_leader_election_lease_in_its_own_namespace(self):
        self.assertEqual(self.arg_value("--leader-elect-resource-namespace"), NS)

    def test_every_arg_is_a_flag_serve_accepts(self):
        flags = serve_flags()
        if flags is None:
            self.skipTest("%s not built: serve --help not checked" % harness.binary())
        args = self.container()["args"]
        self.assertEqual(args[0], "serve")
        for f in flag_names(args[1:]):
            with self.subTest(flag=f):
                self.assertIn(f, flags, "%s is not in `serve --help`" % f)

    def test_listens_on_8443(self):
        self.assertEqual([(p["name"], p["containerPort"], p.get("protocol", "TCP"))
                          for p in self.container()["ports"]], [("https", 8443, "TCP")])
        port = self.arg_value("--port")
        self.assertIn(port, (None, "8443"))

    def test_readiness_probe_readyz_over_https(self):
        probe = self.container()["readinessProbe"]["httpGet"]
        self.assertEqual((probe["path"], probe["scheme"], self.container_port(probe["port"])),
                         ("/readyz", "HTTPS", 8443))

    def test_liveness_probe_healthz_over_https(self):
        probe = self.container()["livenessProbe"]["httpGet"]
        self.assertEqual((probe["path"], probe["scheme"], self.container_port(probe["port"])),
                         ("/healthz", "HTTPS", 8443))

    def test_resource_requests_and_limits(self):
        res = self.container()["resources"]
        for kind in ("requests", "limits"):
            for r in ("cpu", "memory"):
                with self.subTest(kind=kind, resource=r):
                    self.assertIn(r, res.get(kind, {}))

    def test_runs_as_non_root(self):
        self.assertIs(self.effective_security("runAsNonRoot"), True)

    def test_runs_as_uid_65532(self):
        self.assertEqual(self.effective_security("runAsUser"), NONROOT)

    def test_read_only_root_filesystem(self):
        self.assertIs(self.container()["securityContext"]["readOnlyRootFilesystem"], True)

    def test_no_privilege_escalation(self):
        self.assertIs(self.container()["securityContext"]["allowPrivilegeEscalation"], False)

    def test_not_privileged(self):
        self.assertIsNot(self.container()["securityContext"].get("privileged"), True)

    def test_all_capabilities_dropped_none_added(self):
        caps = self.container()["securityContext"]["capabilities"]
        self.assertEqual(caps.get("drop"), ["ALL"])
        self.assertFalse(caps.get("add"))

    def test_seccomp_runtime_default(self):
        self.assertEqual(self.effective_security("seccompProfile"), {"type": "RuntimeDefault"})

    def test_no_host_namespaces_or_host_paths(self):
        spec = self.pod_spec()
        for f in ("hostNetwork", "hostPID", "hostIPC"):
            self.assertIsNot(spec.get(f), True, f)
        self.assertEqual([v for v in spec.get("volumes", []) if "hostPath" in v], [])

    def spread(self, key):
        """The Deployment's topologySpreadConstraints over key that select its own pods."""
        labels = self.deployment()["spec"]["template"]["metadata"]["labels"]
        return [t for t in self.pod_spec().get("topologySpreadConstraints", [])
                if t["topologyKey"] == key
                and label_selector_matches(t["labelSelector"]["matchLabels"], labels)]

    def schedule(self, nodes, pods_per_node):
        """The nodes the scheduler's filters leave for one more replica: taints (the pod
        tolerates none that repel) and every DoNotSchedule constraint over hostnames (with
        its nodeTaintsPolicy), or required pod anti-affinity by hostname."""
        spec = self.pod_spec()
        tolerated = {t.get("key") for t in spec.get("tolerations", [])}

        def fits(node):
            return all(t in tolerated for t in nodes[node])
        anti = ((spec.get("affinity") or {}).get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution", [])
        out = []
        for n in nodes:
            if not fits(n):
                continue
            if any(a["topologyKey"] == "kubernetes.io/hostname" and pods_per_node[n]
                   for a in anti):
                continue
            ok = True
            for t in self.spread("kubernetes.io/hostname"):
                if t["whenUnsatisfiable"] != "DoNotSchedule":
                    continue
                honor = t.get("nodeTaintsPolicy", "Ignore") == "Honor"
                domains = [d for d in nodes if fits(d) or not honor]
                if pods_per_node[n] + 1 - min(pods_per_node[d] for d in domains) > t["maxSkew"]:
                    ok = False
            if ok:
                out.append(n)
        return out

    def test_replicas_never_share_a_node_and_the_rollout_still_fits(self):
        # a hard rule: DoNotSchedule (or required anti-affinity), not a preference
        hard = [t for t in self.spread("kubernetes.io/hostname")
                if t["whenUnsatisfiable"] == "DoNotSchedule"]
        anti = ((self.pod_spec().get("affinity") or {}).get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution", [])
        self.assertTrue(hard or anti, "no required spread of the replicas over nodes")
        # a tainted control plane and two workers: the replicas take one worker each ...
        nodes = {"control-plane": ["node-role.kubernetes.io/control-plane"], "w1": [], "w2": []}
        count = dict.fromkeys(nodes, 0)
        self.assertEqual(self.schedule(nodes, count), ["w1", "w2"])
        count["w1"] = 1
        self.assertEqual(self.schedule(nodes, count), ["w2"], "second replica beside the first")
        count["w2"] = 1
        # ... and the rolling update's surge pod (maxSurge 1, maxUnavailable 0) fits
        self.assertEqual(self.deployment()["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 1)
        self.assertEqual(self.schedule(nodes, count), ["w1", "w2"], "surge pod left pending")
        # one node (kind): both replicas run there
        self.assertEqual(self.schedule({"only": []}, {"only": 1}), ["only"])

    def test_zones_spread_where_possible(self):
        by_zone = self.spread("topology.kubernetes.io/zone")
        self.assertEqual([(t["maxSkew"], t["whenUnsatisfiable"]) for t in by_zone],
                         [(1, "ScheduleAnyway")])

    def test_priority_class_above_workloads_below_system(self):
        self.assertEqual(self.pod_spec()["priorityClassName"], NAME)
        pc = self.one("PriorityClass")
        # the highest value a non-system class may have; system-cluster-critical is 2e9
        self.assertEqual(pc["value"], 1000000000)
        self.assertIs(pc["globalDefault"], False)
        self.assertEqual(pc.get("preemptionPolicy", "PreemptLowerPriority"),
                         "PreemptLowerPriority")
        with open(README, encoding="utf-8") as f:
            readme = f.read()
        self.assertTrue("PriorityClass `volcano-plugin-webhook`" in readme
                        and "system-cluster-critical" in readme,
                        "README.md must explain the priority class")

    def test_no_certificate_volume(self):
        # managed certificates come through the API: nothing mounted, no Secret to create
        self.assertNotIn("volumes", self.pod_spec())
        self.assertNotIn("volumeMounts", self.container())

    def test_termination_grace_covers_the_shutdown_grace(self):
        # --shutdown-grace defaults to 15 s; the kubelet must not SIGKILL before.
        self.assertGreaterEqual(self.pod_spec().get("terminationGracePeriodSeconds", 30), 20)

    # ------------------------------------------------------------ Service, PDB, SA, namespace

    def test_service_443_to_the_container_8443(self):
        svc = self.one("Service")
        self.assertEqual(svc["metadata"]["namespace"], NS)
        ports = svc["spec"]["ports"]
        self.assertEqual(len(ports), 1)
        self.assertEqual(ports[0]["port"], 443)
        self.assertEqual(self.container_port(ports[0]["targetPort"]), 8443)
        self.assertTrue(label_selector_matches(
            svc["spec"]["selector"], self.deployment()["spec"]["template"]["metadata"]["labels"]))

    def test_pod_disruption_budget_keeps_one(self):
        pdb = self.one("PodDisruptionBudget")
        self.assertEqual(pdb["spec"]["minAvailable"], 1)
        self.assertNotIn("maxUnavailable", pdb["spec"])
        self.assertTrue(label_selector_matches(
            pdb["spec"]["selector"]["matchLabels"],
            self.deployment()["spec"]["template"]["metadata"]["labels"]))

    def test_namespaced_objects_are_in_the_webhook_namespace(self):
        self.one("Namespace", NS)
        self.one("ServiceAccount")
        for o in self.objects:
            if o["kind"] in ("Namespace", "PriorityClass", "ClusterRole", "ClusterRoleBinding",
                             "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
                self.assertNotIn("namespace", o["metadata"], o["kind"])
            else:
                self.assertEqual(o["metadata"].get("namespace"), NS, o["kind"])

    # ------------------------------------------------------------ RBAC

    def test_cluster_role_grants_exactly_these_verbs(self):
        # least privilege: read by name, never list/watch what it owns; update
        # only the Secret and the ConfigMap; Events created, counted by patch, read after a
        # 409 (D17) (tests/test_security.py checks the binary uses exactly these)
        want = {("batch.volcano.sh", "jobs", v) for v in ("get", "list", "watch")}
        # blockOwnerDeletion on the owned objects' references (OwnerReferencesPermissionEnforcement)
        want.add(("batch.volcano.sh", "jobs/finalizers", "update"))
        want |= {("", r, v) for r in ("secrets", "configmaps")
                 for v in ("get", "create", "update", "delete")}
        want |= {("", "services", v) for v in ("get", "create", "delete")}
        want |= {("networking.k8s.io", "networkpolicies", v) for v in ("get", "create", "delete")}
        want |= {("", "events", v) for v in ("create", "patch", "get")}
        self.assertEqual(rbac_triples(self.one("ClusterRole")["rules"]), want)

    def test_role_grants_exactly_the_lease_verbs(self):
        role = self.one("Role", NAME + "-leader-election")
        self.assertEqual(role["metadata"]["namespace"], NS)
        self.assertEqual(rbac_triples(role["rules"]),
                         {("coordination.k8s.io", "leases", v)
                          for v in ("get", "create", "update")})

    def test_managed_certificates_rbac_is_the_secret_and_the_two_configurations_by_name(self):
        # Secrets get, watch and update by name and create (resourceNames cannot limit a create);
        # the two webhook configurations get and patch by name (test_managed_certs checks
        # these are exactly the requests of the certificate keeper)
        self.assertEqual(self.one("Role", NAME + "-certs")["rules"], [
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [CERT_SECRET],
             "verbs": ["get", "watch", "update"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}])
        self.assertEqual(self.one("Role", NAME + "-certs")["metadata"]["namespace"], NS)
        self.assertEqual(self.one("ClusterRole", NAME + "-certs")["rules"], [
            {"apiGroups": ["admissionregistration.k8s.io"],
             "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
             "resourceNames": [NAME], "verbs": ["get", "patch"]}])
        sa = [{"kind": "ServiceAccount", "name": NAME, "namespace": NS}]
        for kind, role in (("RoleBinding", "Role"), ("ClusterRoleBinding", "ClusterRole")):
            with self.subTest(kind=kind):
                b = self.one(kind, NAME + "-certs")
                self.assertEqual(b["roleRef"], {"apiGroup": "rbac.authorization.k8s.io",
                                                "kind": role, "name": NAME + "-certs"})
                self.assertEqual(b["subjects"], sa)

    def test_bindings_give_the_roles_to_the_service_account_only(self):
        sa = [{"kind": "ServiceAccount", "name": NAME, "namespace": NS}]
        crb = self.one("ClusterRoleBinding")
        self.assertEqual(crb["roleRef"], {"apiGroup": "rbac.authorization.k8s.io",
                                          "kind": "ClusterRole", "name": NAME})
        self.assertEqual(crb["subjects"], sa)
        rb = self.one("RoleBinding", NAME + "-leader-election")
        self.assertEqual(rb["roleRef"], {"apiGroup": "rbac.authorization.k8s.io",
                                         "kind": "Role", "name": NAME + "-leader-election"})
        self.assertEqual(rb["subjects"], sa)

    # ------------------------------------------------------------ MutatingWebhookConfiguration

    def webhook(self):
        webhooks = self.one("MutatingWebhookConfiguration")["webhooks"]
        self.assertEqual([w["name"] for w in webhooks], ["pods.volcano-plugin-webhook.volcano.sh"])
        return webhooks[0]

    def test_webhook_calls_the_service_path(self):
        self.assertEqual(self.webhook()["clientConfig"]["service"],
                         {"name": NAME, "namespace": NS, "path": "/pods/mutate", "port": 443})
        self.assertNotIn("url", self.webhook()["clientConfig"])

    def test_no_ca_bundle_in_the_default_install(self):
        # The Lease holder sets it; `kubectl apply -k` never sets it, so an upgrade leaves
        # the one the webhook keeps alone. Not in a rendered object, not in a file.
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            with self.subTest(kind=kind):
                for w in self.one(kind)["webhooks"]:
                    self.assertNotIn("caBundle", w["clientConfig"])
                self.assertNotIn("annotations", self.one(kind)["metadata"])
        self.assertNotIn("caBundle", json.dumps(self.objects))
        for f in sorted(os.listdir(BASE)) + ["../kustomization.yaml",
                                             "../cluster-rbac/kustomization.yaml",
                                             "../cluster-rbac/rbac.yaml",
                                             "../managed-certs/kustomization.yaml",
                                             "../managed-certs/rbac.yaml"]:
            with self.subTest(file=f):
                with open(os.path.join(BASE, f), encoding="utf-8") as fh:
                    docs = list(yaml.safe_load_all(fh))  # comments may name it
                self.assertNotIn("caBundle", json.dumps(docs))

    def test_webhook_configurations_come_after_what_the_replicas_need(self):
        # kubectl applies in the rendered order (base/kustomization.yaml says why):
        # kustomize's legacy order puts both webhook configurations last; kustomize v2.0
        # (kubectl 1.20) puts them right after the Namespace, whatever the kustomization says.
        kinds = [o["kind"] for o in self.objects]
        hooks = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
        if kustomize_v2():
            self.assertEqual(kinds[:3], ["Namespace"] + hooks)
        else:
            self.assertEqual(kinds[-2:], hooks)
            self.assertEqual(kinds[0], "Namespace")
            self.assertLess(kinds.index("ClusterRoleBinding"), kinds.index("Deployment"))

    def test_webhook_rules_pod_create_only(self):
        self.assertEqual(self.webhook()["rules"], [{
            "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["pods"], "scope": "Namespaced"}])

    def test_webhook_object_selector_volcano_job_pods(self):
        self.assertEqual(self.webhook()["objectSelector"], {"matchExpressions": [
            {"key": "volcano.sh/job-name", "operator": "Exists"}]})

    def test_webhook_namespace_selector_leaves_out_own_and_kube_system(self):
        sel = self.webhook()["namespaceSelector"]
        self.assertEqual(list(sel), ["matchExpressions"])
        self.assertEqual(len(sel["matchExpressions"]), 1)
        expr = sel["matchExpressions"][0]
        self.assertEqual((expr["key"], expr["operator"]), ("kubernetes.io/metadata.name", "NotIn"))
        self.assertEqual(sorted(expr["values"]), sorted([NS, "kube-system"]))

    def test_webhook_failure_policy_fail(self):
        self.assertEqual(self.webhook()["failurePolicy"], "Fail")

    def test_webhook_side_effects_none(self):
        self.assertEqual(self.webhook()["sideEffects"], "None")

    def test_webhook_timeout_10s(self):
        self.assertEqual(self.webhook()["timeoutSeconds"], 10)

    def test_webhook_admission_review_versions(self):
        self.assertEqual(self.webhook()["admissionReviewVersions"], ["v1", "v1beta1"])

    def test_webhook_reinvocation_if_needed(self):
        self.assertEqual(self.webhook()["reinvocationPolicy"], "IfNeeded")

    def test_webhook_match_policy_equivalent(self):
        self.assertEqual(self.webhook()["matchPolicy"], "Equivalent")

    # ------------------------------------------------------------ ValidatingWebhookConfiguration

    def test_job_webhook_exactly(self):
        """The Job webhook (D17): Volcano Jobs' CREATE and UPDATE to /jobs/validate, advice
        that never blocks (Ignore, 3 s), the same namespaces left out as for pods, and the
        no caBundle (the Lease holder sets the pod webhook's there too)."""
        webhooks = self.one("ValidatingWebhookConfiguration")["webhooks"]
        self.assertEqual(len(webhooks), 1)
        w = dict(webhooks[0])
        self.assertEqual(w.pop("clientConfig"), {
            "service": {"name": NAME, "namespace": NS, "path": "/jobs/validate", "port": 443}})
        self.assertEqual(w.pop("namespaceSelector"), self.webhook()["namespaceSelector"])
        self.assertEqual(w, {
            "name": "jobs.volcano-plugin-webhook.volcano.sh",
            "admissionReviewVersions": ["v1", "v1beta1"],
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["batch.volcano.sh"],
                       "apiVersions": ["v1alpha1"], "resources": ["jobs"],
                       "scope": "Namespaced"}],
            "matchPolicy": "Equivalent", "failurePolicy": "Ignore", "sideEffects": "None",
            "timeoutSeconds": 3})

    # ------------------------------------------------------------ caBundle

    def test_readme_command_fills_the_ca_bundle(self):
        with open(README, encoding="utf-8") as f:
            self.assertTrue(FILL_CA_BUNDLE in f.read(),
                            "README.md must show the tested command: " + FILL_CA_BUNDLE)
        with tempfile.TemporaryDirectory(prefix="test_manifests.") as tmp:
            shutil.copytree(MANIFESTS, os.path.join(tmp, "manifests"))
            certs = harness.make_certs(os.path.join(tmp, "certs"), service=NAME, namespace=NS)
            r = subprocess.run(["sh", "-c", FILL_CA_BUNDLE], cwd=tmp, capture_output=True,
                               text=True, timeout=30,
                               env=dict(os.environ, CERTS=os.path.join(tmp, "certs")))
            self.assertEqual(r.returncode, 0, r.stderr)
            objects = render(os.path.join(tmp, "manifests", "overlays", "manual"))
            webhook = [o for o in objects
                       if o["kind"] == "MutatingWebhookConfiguration"][0]["webhooks"][0]
            job_webhook = [o for o in objects
                           if o["kind"] == "ValidatingWebhookConfiguration"][0]["webhooks"][0]
            with open(certs["ca.crt"], "rb") as f:
                ca = f.read()
            self.assertEqual(base64.b64decode(webhook["clientConfig"]["caBundle"]), ca)
            self.assertEqual(base64.b64decode(job_webhook["clientConfig"]["caBundle"]), ca)
            # The serving certificate verifies against it for the Service's DNS name.
            r = subprocess.run(["openssl", "verify", "-CAfile", certs["ca.crt"],
                                "-verify_hostname", "%s.%s.svc" % (NAME, NS), certs["tls.crt"]],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


# Overlays that change or remove base objects (the others only add to it).
REPLACING_OVERLAYS = ("cert-manager", "manual", "namespaced")
# Overlays whose replicas read a mounted TLS Secret instead of managed certificates.
FILE_OVERLAYS = ("cert-manager", "manual")
# The namespaces manifests/overlays/namespaced/ serves, as it ships.
NAMESPACED_SERVED = ("team-a", "team-b")
CM = "cert-manager.io/v1"
INJECT_CA_FROM = "cert-manager.io/inject-ca-from"


def overlays():
    """The directories of manifests/overlays/ (each a kustomization)."""
    return sorted(d for d in os.listdir(OVERLAYS)
                  if os.path.isfile(os.path.join(OVERLAYS, d, "kustomization.yaml")))


def object_key(o):
    return (o["apiVersion"], o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])


class OverlaysTest(unittest.TestCase):
    """Every overlay of manifests/overlays/: renders, validates, and is the base plus its own
    objects; then each overlay's objects field by field."""

    @classmethod
    def setUpClass(cls):
        if kubectl() is None:
            raise unittest.SkipTest("kubectl not found: cannot render manifests/overlays/")
        cls.base = render(MANIFESTS)
        cls.rendered = {d: render(os.path.join(OVERLAYS, d)) for d in overlays()}

    def added(self, overlay):
        """What overlay renders beyond the base, by (apiVersion, kind, namespace, name)."""
        base = {object_key(o) for o in self.base}
        return {object_key(o): o for o in self.rendered[overlay] if object_key(o) not in base}

    def test_the_overlays(self):
        self.assertEqual(overlays(), ["cert-manager", "manual", "namespaced", "networkpolicy",
                                      "prometheus"])

    def test_default_install_is_the_base_the_cluster_and_the_managed_certificates_rights(self):
        base_alone = render(BASE)
        self.assertEqual([o for o in self.base if object_key(o) not in CLUSTER_RBAC + CERTS_RBAC],
                         base_alone)
        for directory, keys in ((CLUSTER_RBAC_DIR, CLUSTER_RBAC),
                                (os.path.join(MANIFESTS, "managed-certs"), CERTS_RBAC)):
            with self.subTest(directory=directory):
                alone = render(directory)
                self.assertEqual(sorted(object_key(o) for o in alone), keys)
                # the default install has them as the directory renders them
                self.assertEqual([o for o in self.base if object_key(o) in keys],
                                 [o for o in alone])

    def test_no_kustomization_deletes_an_object(self):
        # kustomize v2.0 (Debian 12's kubectl 1.20) renders a `$patch: delete` as an empty
        # object, which kubectl then refuses: an overlay leaves out a directory instead.
        files = [os.path.join(top, f) for top, _, names in os.walk(MANIFESTS)
                 for f in names if f.endswith(".yaml")]
        self.assertIn(os.path.join(OVERLAYS, "namespaced", "kustomization.yaml"), files)
        for path in files:
            with self.subTest(file=os.path.relpath(path, MANIFESTS)):
                with open(path, encoding="utf-8") as fh:
                    docs = list(yaml.safe_load_all(fh))  # comments may name it
                self.assertNotIn('"$patch"', json.dumps(docs))

    def test_every_overlay_is_the_base_plus_its_objects(self):
        for d, objs in self.rendered.items():
            if d in REPLACING_OVERLAYS:
                continue  # checked object by object below
            with self.subTest(overlay=d):
                got = {object_key(o): o for o in objs}
                for o in self.base:
                    self.assertEqual(got.get(object_key(o)), o, object_key(o))
                self.assertTrue(self.added(d), "the overlay adds nothing")

    def test_every_overlay_conforms_to_the_schema(self):
        node = shutil.which("node")
        self.assertIsNotNone(node, "node not found: cannot run %s" % OBJECT_VALIDATOR)
        for d, objs in self.rendered.items():
            with self.subTest(overlay=d):
                r = subprocess.run([node, OBJECT_VALIDATOR], input=json.dumps(objs),
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual((r.returncode, r.stdout),
                                 (0, "ok %d objects\n" % len(objs)), r.stderr)

    # ------------------------------------------------------------ manual, cert-manager

    def get(self, overlay, kind, name=NAME):
        [o] = [o for o in self.rendered[overlay]
               if o["kind"] == kind and o["metadata"]["name"] == name]
        return o

    def test_file_overlays_change_the_deployment_and_webhooks_without_the_certs_rbac(self):
        changed = ("Deployment", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for d in FILE_OVERLAYS:
            got = {object_key(o): o for o in self.rendered[d]}
            for o in self.base:
                key = object_key(o)
                with self.subTest(overlay=d, object=key):
                    if key in CERTS_RBAC:
                        self.assertNotIn(key, got)
                    elif o["kind"] in changed:
                        self.assertIn(key, got)
                    else:
                        self.assertEqual(got[key], o)
            with self.subTest(overlay=d):
                # no Secret write rights for the certificates: cluster-rbac/'s ClusterRole's
                # Secret rules are the ssh plugin's (test_cluster_role_grants_exactly_these_verbs)
                self.assertEqual(sorted(o["metadata"]["name"] for o in self.rendered[d]
                                        if o["kind"] in ("Role", "ClusterRole")),
                                 [NAME, NAME + "-leader-election"])
                self.assertNotIn("admissionregistration.k8s.io", json.dumps(
                    [o["rules"] for o in self.rendered[d] if "rules" in o]))

    def test_file_overlays_mount_the_tls_secret_read_only(self):
        base = [o for o in self.base if o["kind"] == "Deployment"][0]
        for d in FILE_OVERLAYS:
            with self.subTest(overlay=d):
                dep = self.get(d, "Deployment")
                spec = dep["spec"]["template"]["spec"]
                [c] = spec["containers"]
                self.assertEqual(c["args"], FILE_ARGS)
                self.assertEqual(c["volumeMounts"], [
                    {"name": "certs", "mountPath": CERT_DIR, "readOnly": True}])
                # 0440, group-owned by the fsGroup, which is the user's group
                self.assertEqual(spec["volumes"], [
                    {"name": "certs", "secret": {"secretName": TLS_SECRET,
                                                 "defaultMode": 0o440}}])
                self.assertEqual(spec["securityContext"]["fsGroup"], NONROOT)
                # everything else is the base's Deployment
                want = json.loads(json.dumps(base))
                wc = want["spec"]["template"]["spec"]["containers"][0]
                wc["args"] = FILE_ARGS
                wc["volumeMounts"] = c["volumeMounts"]
                want["spec"]["template"]["spec"]["volumes"] = spec["volumes"]
                self.assertEqual(dep, want)
                flags = serve_flags()
                if flags is not None:
                    self.assertLessEqual(set(flag_names(c["args"][1:])), flags)

    def test_manual_webhooks_carry_the_placeholder_ca_bundle(self):
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            with self.subTest(kind=kind):
                base = [o for o in self.base if o["kind"] == kind][0]
                got = self.get("manual", kind)
                [w] = got["webhooks"]
                self.assertEqual(base64.b64decode(w["clientConfig"]["caBundle"]),
                                 b'caBundle not set: see README.md, '
                                 b'"Signing your own certificates"')
                want = json.loads(json.dumps(base))
                want["webhooks"][0]["clientConfig"]["caBundle"] = w["clientConfig"]["caBundle"]
                self.assertEqual(got, want)
        self.assertEqual(sorted(self.added("manual")), [])

    def test_cert_manager_objects_exactly(self):
        added = self.added("cert-manager")
        self.assertEqual(sorted(added), sorted([
            (CM, "Issuer", NS, NAME + "-selfsigned"), (CM, "Certificate", NS, NAME + "-ca"),
            (CM, "Issuer", NS, NAME + "-ca"), (CM, "Certificate", NS, NAME)]))
        labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": NAME}
        for key, o in added.items():
            with self.subTest(object=key):
                self.assertEqual(o["metadata"]["labels"], labels)
        issuer = lambda n: {"group": "cert-manager.io", "kind": "Issuer", "name": n}
        self.assertEqual(added[(CM, "Issuer", NS, NAME + "-selfsigned")]["spec"],
                         {"selfSigned": {}})
        self.assertEqual(added[(CM, "Certificate", NS, NAME + "-ca")]["spec"], {
            "isCA": True, "commonName": NAME + "-ca", "secretName": NAME + "-ca",
            "duration": "87600h", "renewBefore": "720h",
            "privateKey": {"algorithm": "RSA", "size": 2048, "rotationPolicy": "Never"},
            "issuerRef": issuer(NAME + "-selfsigned")})
        # the CA Issuer signs with the CA Certificate's Secret
        self.assertEqual(added[(CM, "Issuer", NS, NAME + "-ca")]["spec"],
                         {"ca": {"secretName": NAME + "-ca"}})
        svc = [o for o in self.rendered["cert-manager"] if o["kind"] == "Service"][0]
        name, ns = svc["metadata"]["name"], svc["metadata"]["namespace"]
        self.assertEqual(added[(CM, "Certificate", NS, NAME)]["spec"], {
            "secretName": TLS_SECRET,
            "dnsNames": [name, "%s.%s" % (name, ns), "%s.%s.svc" % (name, ns),
                         "%s.%s.svc.cluster.local" % (name, ns)],
            "duration": "8760h", "renewBefore": "720h",
            "usages": ["server auth", "digital signature", "key encipherment"],
            "privateKey": {"algorithm": "RSA", "size": 2048, "rotationPolicy": "Always"},
            "issuerRef": issuer(NAME + "-ca")})
        # what kube-apiserver calls, <service>.<namespace>.svc, is among the names
        self.assertIn(harness.service_dns(name, ns),
                      added[(CM, "Certificate", NS, NAME)]["spec"]["dnsNames"])

    def test_cert_manager_injects_the_serving_certificates_ca_into_both_webhooks(self):
        certs = {"%s/%s" % (o["metadata"]["namespace"], o["metadata"]["name"]): o
                 for o in self.rendered["cert-manager"] if o["kind"] == "Certificate"}
        dep = self.get("cert-manager", "Deployment")
        mounted = dep["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"]
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            with self.subTest(kind=kind):
                got = self.get("cert-manager", kind)
                self.assertEqual(got["metadata"]["annotations"],
                                 {INJECT_CA_FROM: "%s/%s" % (NS, NAME)})
                # it names a Certificate of this render, the one whose Secret is mounted
                cert = certs.get(got["metadata"]["annotations"][INJECT_CA_FROM])
                self.assertIsNotNone(cert, "inject-ca-from names no Certificate of the render")
                self.assertEqual(cert["spec"]["secretName"], mounted)
                self.assertNotIn("isCA", cert["spec"])
                # no caBundle: the cainjector sets it; otherwise the base's configuration
                base = [o for o in self.base if o["kind"] == kind][0]
                want = json.loads(json.dumps(base))
                want["metadata"]["annotations"] = got["metadata"]["annotations"]
                self.assertEqual(got, want)

    def test_readme_says_how_to_install_each_overlay(self):
        with open(README, encoding="utf-8") as f:
            readme = f.read()
        for d in overlays():
            with self.subTest(overlay=d):
                self.assertIn("kubectl apply -k manifests/overlays/%s/" % d, readme)
        self.assertNotIn("overlays/managed", readme)

    # ------------------------------------------------------------ namespaced

    def namespaced(self, kind, name=NAME, namespace=None):
        found = [o for o in self.rendered["namespaced"] if o["kind"] == kind
                 and o["metadata"]["name"] == name
                 and o["metadata"].get("namespace") == namespace]
        self.assertEqual(len(found), 1, (kind, name, namespace))
        return found[0]

    def namespaced_args(self):
        dep = self.namespaced("Deployment", namespace=NS)
        return dep["spec"]["template"]["spec"]["containers"][0]["args"]

    def test_namespaced_is_the_base_with_roles_instead_of_cluster_rights(self):
        got = {object_key(o): o for o in self.rendered["namespaced"]}
        changed = {("apps/v1", "Deployment", NS, NAME),
                   ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "", NAME)}
        for o in self.base:
            key = object_key(o)
            if key in CLUSTER_RBAC:
                self.assertNotIn(key, got)
            elif key not in changed:
                self.assertEqual(got.get(key), o, key)
        # cluster-wide: only managed-certs/'s rights on the two webhook configurations by name
        self.assertEqual(sorted((o["kind"], o["metadata"]["name"])
                                for o in self.rendered["namespaced"]
                                if o["kind"].startswith("Cluster")),
                         [("ClusterRole", NAME + "-certs"),
                          ("ClusterRoleBinding", NAME + "-certs")])
        self.assertEqual(sorted(self.added("namespaced")), sorted(
            ("rbac.authorization.k8s.io/v1", kind, ns, NAME)
            for kind in ("Role", "RoleBinding") for ns in NAMESPACED_SERVED))

    def test_namespaced_roles_grant_the_cluster_roles_verbs_in_each_namespace(self):
        base_rules = [o for o in self.base if object_key(o) == CLUSTER_RBAC[0]][0]["rules"]
        for ns in NAMESPACED_SERVED:
            with self.subTest(namespace=ns):
                role = self.namespaced("Role", namespace=ns)
                self.assertEqual(rbac_triples(role["rules"]), rbac_triples(base_rules))
                rb = self.namespaced("RoleBinding", namespace=ns)
                self.assertEqual(rb["roleRef"], {"apiGroup": "rbac.authorization.k8s.io",
                                                 "kind": "Role", "name": NAME})
                self.assertEqual(rb["subjects"],
                                 [{"kind": "ServiceAccount", "name": NAME, "namespace": NS}])
        # the Lease's Role stays in the webhook's own namespace
        lease = self.namespaced("Role", NAME + "-leader-election", NS)
        self.assertEqual(rbac_triples(lease["rules"]), {("coordination.k8s.io", "leases", v)
                                                        for v in ("get", "create", "update")})

    def test_namespaced_serves_the_namespaces_the_roles_and_selector_name(self):
        args = self.namespaced_args()
        base_args = [o for o in self.base if o["kind"] == "Deployment"][0][
            "spec"]["template"]["spec"]["containers"][0]["args"]
        self.assertEqual(args, base_args + ["--namespaces=" + ",".join(NAMESPACED_SERVED)])
        flags = serve_flags()
        if flags is not None:
            self.assertIn("--namespaces", flags)
        [webhook] = self.namespaced("MutatingWebhookConfiguration")["webhooks"]
        self.assertEqual(webhook["namespaceSelector"], {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "In",
            "values": list(NAMESPACED_SERVED)}]})
        # the rest of the webhook is the base's
        [base_webhook] = [o for o in self.base
                          if o["kind"] == "MutatingWebhookConfiguration"][0]["webhooks"]
        self.assertEqual(dict(webhook, namespaceSelector=None),
                         dict(base_webhook, namespaceSelector=None))

    def test_readme_says_how_to_serve_some_namespaces(self):
        with open(README, encoding="utf-8") as f:
            readme = f.read()
        self.assertIn("### Serving some namespaces only", readme)
        section = readme.split("### Serving some namespaces only", 1)[1].split("\n#", 1)[0]
        for what in ("kubectl apply -k manifests/overlays/namespaced/", "--namespaces",
                     "namespaceSelector", "deployment-namespaces.yaml",
                     "webhook-namespaces.yaml", "rbac.yaml",
                     "webhook_admission_namespace_not_served_total"):
            self.assertIn(what, section)

    # ------------------------------------------------------------ networkpolicy

    def test_networkpolicy_admits_8443_only_to_the_webhook_pods(self):
        added = self.added("networkpolicy")
        self.assertEqual(sorted(added), [("networking.k8s.io/v1", "NetworkPolicy", NS, NAME)])
        np = added[("networking.k8s.io/v1", "NetworkPolicy", NS, NAME)]
        dep = [o for o in self.rendered["networkpolicy"] if o["kind"] == "Deployment"][0]
        pod_labels = dep["spec"]["template"]["metadata"]["labels"]
        self.assertEqual(list(np["spec"]["podSelector"]), ["matchLabels"])
        self.assertTrue(label_selector_matches(np["spec"]["podSelector"]["matchLabels"],
                                               pod_labels))
        self.assertEqual(np["spec"]["policyTypes"], ["Ingress"])
        # one rule, one port: TCP 8443, the container's https port, from any source (the
        # API server's addresses differ by cluster: README "NetworkPolicy")
        self.assertEqual(np["spec"]["ingress"], [{"ports": [{"protocol": "TCP", "port": 8443}]}])
        ports = dep["spec"]["template"]["spec"]["containers"][0]["ports"]
        self.assertEqual([p["containerPort"] for p in ports], [8443])

    # ------------------------------------------------------------ prometheus

    def prometheus(self, kind):
        added = self.added("prometheus")
        self.assertEqual(sorted(added), [("monitoring.coreos.com/v1", "PrometheusRule", NS, NAME),
                                         ("monitoring.coreos.com/v1", "ServiceMonitor", NS, NAME)])
        return added[("monitoring.coreos.com/v1", kind, NS, NAME)]

    def test_servicemonitor_scrapes_every_replica_over_https(self):
        sm = self.prometheus("ServiceMonitor")
        svc = [o for o in self.rendered["prometheus"] if o["kind"] == "Service"][0]
        self.assertTrue(label_selector_matches(sm["spec"]["selector"]["matchLabels"],
                                               svc["metadata"]["labels"]))
        self.assertEqual(sm["spec"]["namespaceSelector"], {"matchNames": [NS]})
        [ep] = sm["spec"]["endpoints"]
        self.assertEqual([p["name"] for p in svc["spec"]["ports"]], [ep["port"]])
        self.assertEqual((ep["scheme"], ep["path"]), ("https", "/metrics"))
        # the serving certificate, verified against its CA for the Service's name
        # against the trust bundle of the managed certificates' Secret
        self.assertEqual(ep["tlsConfig"], {
            "serverName": "%s.%s.svc" % (NAME, NS),
            "ca": {"secret": {"name": CERT_SECRET, "key": "ca-bundle.crt"}}})
        self.assertNotIn("insecureSkipVerify", json.dumps(sm))

    def test_alerts_are_the_readme_ones_on_real_metrics(self):
        rule = self.prometheus("PrometheusRule")
        [group] = rule["spec"]["groups"]
        alerts = {r["alert"]: r for r in group["rules"]}
        self.assertEqual(sorted(alerts), sorted([
            "VolcanoPluginWebhookCertificateExpiresSoon",
            "VolcanoPluginWebhookCertificateExpiresVerySoon",
            "VolcanoPluginWebhookAdmissionErrors", "VolcanoPluginWebhookAdmissionDenied",
            "VolcanoPluginWebhookReconcileErrors", "VolcanoPluginWebhookNoLeader"]))
        metrics = exposed_metrics()
        self.assertIn("webhook_leader", metrics)  # the source parse found serve.c's too
        for name, r in alerts.items():
            with self.subTest(alert=name):
                used = set(re.findall(r"\bwebhook_\w+", r["expr"]))
                self.assertTrue(used)
                self.assertLessEqual(used, metrics, "not a metric the webhook exposes")
                self.assertIn(r["labels"]["severity"], ("warning", "critical"))
                self.assertTrue(r["annotations"]["summary"])
                for value in re.findall(r'outcome="(\w+)"', r["expr"]):
                    self.assertIn(value, outcomes())
        with open(README, encoding="utf-8") as f:
            readme = f.read()
        for name in alerts:
            self.assertTrue("`%s`" % name in readme, "README.md does not name " + name)

    def test_alerts_fire_as_promtool_evaluates_them(self):
        """promtool (Debian's prometheus package) checks the rules, then evaluates them over
        PROMTOOL_SERIES: which alerts fire when, with their labels and rendered texts."""
        promtool = shutil.which("promtool")
        if promtool is None:
            self.skipTest("promtool not found (Debian's prometheus package): alerts not evaluated")
        groups = self.prometheus("PrometheusRule")["spec"]["groups"]
        rules = {r["alert"]: r for r in groups[0]["rules"]}
        with tempfile.TemporaryDirectory(prefix="test_manifests.") as tmp:
            path = os.path.join(tmp, "rules.json")
            with open(path, "w") as f:
                json.dump({"groups": groups}, f)
            r = subprocess.run([promtool, "check", "rules", path], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("SUCCESS: 6 rules found", r.stdout)
            tests = [{"eval_time": at, "alertname": alert, "exp_alerts": [
                {"exp_labels": dict(labels, severity=rules[alert]["labels"]["severity"]),
                 "exp_annotations": {"summary": rules[alert]["annotations"]["summary"],
                                     "description": text}}
                for labels, text in exp]} for at, alert, exp in PROMTOOL_EXPECTED]
            spec = {"rule_files": [path], "evaluation_interval": "1m", "tests": [{
                "interval": "1m",
                "input_series": [{"series": k, "values": v} for k, v in PROMTOOL_SERIES],
                "alert_rule_test": tests}]}
            test = os.path.join(tmp, "test.json")
            with open(test, "w") as f:
                json.dump(spec, f)
            r = subprocess.run([promtool, "test", "rules", test], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("SUCCESS", r.stdout)

    def test_readme_says_what_to_allow_for_the_api_server(self):
        with open(README, encoding="utf-8") as f:
            readme = f.read()
        self.assertTrue("### NetworkPolicy" in readme, "README.md: no NetworkPolicy section")
        section = readme.split("### NetworkPolicy", 1)[1].split("\n#", 1)[0]
        for what in ("kubectl apply -k manifests/overlays/networkpolicy/", "ipBlock",
                     "kubectl get endpoints kubernetes"):
            self.assertIn(what, section)


def exposed_metrics():
    """{metric family name} that webhook/metrics.c and webhook/serve.c write."""
    names = set()
    for f in ("metrics.c", "serve.c"):
        with open(os.path.join(ROOT, "webhook", f), encoding="utf-8") as fh:
            names |= set(re.findall(r'metric_write(?:_histogram)?\(\s*w,\s*"(webhook_\w+)"',
                                    fh.read()))
    return names


def outcomes():
    """The values of webhook_admission_requests_total's outcome label (webhook/metrics.c)."""
    with open(os.path.join(ROOT, "webhook", "metrics.c"), encoding="utf-8") as f:
        m = re.search(r"outcome_names\[NOUTCOMES\] = \{([^}]*)\}", f.read())
    return set(re.findall(r'"(\w+)"', m.group(1)))


JOB = 'job="volcano-plugin-webhook"'
EXPIRY = "webhook_tls_certificate_expiry_timestamp_seconds"
REQUESTS = "webhook_admission_requests_total"
# promtool unit tests of the alerts: (eval_time, alertname, expected alerts) over the
# series below (promtool's clock starts at 0; values are per 1m step).
PROMTOOL_SERIES = [
    # certificates that expire at 36 hours, 10 days and 30 days
    (EXPIRY + '{%s,namespace="ns",pod="a"}' % JOB, "129600x200"),
    (EXPIRY + '{%s,namespace="ns",pod="b"}' % JOB, "864000x200"),
    (EXPIRY + '{%s,namespace="ns",pod="c"}' % JOB, "2592000x200"),
    # 10 errors and 100 patched admissions a minute (9%), 1 denied (0.9%)
    (REQUESTS + '{%s,pod="a",code="500",outcome="error"}' % JOB, "0+10x100"),
    (REQUESTS + '{%s,pod="a",code="200",outcome="patched"}' % JOB, "0+100x100"),
    (REQUESTS + '{%s,pod="a",code="200",outcome="denied"}' % JOB, "0+1x100"),
    # one replica's job hooks fail once a minute, the other's never
    ('webhook_reconcile_errors_total{%s,namespace="ns",pod="a"}' % JOB, "0+1x100"),
    ('webhook_reconcile_errors_total{%s,namespace="ns",pod="b"}' % JOB, "0x100"),
    # the leader: pod a for 20 minutes, then nobody
    ('webhook_leader{%s,pod="a"}' % JOB, "1x20 0x80"),
    ('webhook_leader{%s,pod="b"}' % JOB, "0x100"),
]
CERT_SOON = ("Pod ns/%s serves a certificate that expires in %s. Renew it before then: once "
             "it has expired, the API server refuses every Volcano Job pod.")
PROMTOOL_EXPECTED = [
    ("61m", "VolcanoPluginWebhookCertificateExpiresSoon", [
        ({"namespace": "ns", "pod": "a"}, CERT_SOON % ("a", "1d 10h 59m 0s")),
        ({"namespace": "ns", "pod": "b"}, CERT_SOON % ("b", "9d 22h 59m 0s")),
    ]),
    ("59m", "VolcanoPluginWebhookCertificateExpiresSoon", []),  # for: 1h
    ("61m", "VolcanoPluginWebhookCertificateExpiresVerySoon", [
        ({"namespace": "ns", "pod": "a"}, "Pod ns/a serves a certificate that expires in "
         "1d 10h 59m 0s; after that no Volcano Job pod can be created."),
    ]),
    ("30m", "VolcanoPluginWebhookAdmissionErrors", [
        ({}, "9.009% of admission requests got no AdmissionReview answer over 5 minutes: "
         "those Volcano Job pods were refused. The `code` label of "
         "webhook_admission_requests_total and the webhook's log say why."),
    ]),
    ("5m", "VolcanoPluginWebhookAdmissionErrors", []),  # for: 10m
    ("30m", "VolcanoPluginWebhookAdmissionDenied", []),  # 0.9% is no alert
    ("40m", "VolcanoPluginWebhookReconcileErrors", [
        ({"namespace": "ns", "pod": "a"}, "Pod ns/a has had failed job hook runs for 15 "
         "minutes (10 in the last 10): the objects that Volcano Jobs' pods need may be "
         "missing. Its log says why (reconcile:, err=)."),
    ]),
    ("10m", "VolcanoPluginWebhookReconcileErrors", []),  # for: 15m
    ("15m", "VolcanoPluginWebhookNoLeader", []),
    ("30m", "VolcanoPluginWebhookNoLeader", [
        ({}, "For 5 minutes no replica of volcano-plugin-webhook has reconciled Volcano Jobs "
         "(webhook_leader is 1 on none, or none is scraped): the Lease volcano-plugin-webhook "
         "and the replicas' logs (leader:) say why."),
    ]),
]


def dockerfile_instructions(path=DOCKERFILE):
    """[(INSTRUCTION, arguments)] of a Dockerfile: comments dropped, continuations joined."""
    out = []
    cur = ""
    with open(path, encoding="utf-8") as f:
        for line in f:
            stripped = line.strip()
            if stripped.startswith("#") or (not stripped and not cur):
                continue
            if stripped.endswith("\\"):
                cur += stripped[:-1] + " "
                continue
            cur += stripped
            word, _, rest = cur.partition(" ")
            out.append((word.upper(), rest.strip()))
            cur = ""
    return out


def dockerfile_stages():
    """[(FROM arguments, [(INSTRUCTION, arguments)])] per build stage."""
    stages = []
    for ins, args in dockerfile_instructions():
        if ins == "FROM":
            stages.append((args, []))
        elif stages:
            stages[-1][1].append((ins, args))
    return stages


def apt_installed(instructions):
    """Packages of every `apt-get install` in a stage's RUN instructions."""
    pkgs = set()
    for ins, args in instructions:
        if ins != "RUN":
            continue
        for m in re.finditer(r"apt-get install ([^&;|]*)", args):
            pkgs |= {w for w in m.group(1).split() if not w.startswith("-")}
    return pkgs


class DockerfileTest(unittest.TestCase):
    """The Dockerfile, statically (no Docker here)."""

    def test_two_stages_debian_12_build_and_slim_runtime(self):
        stages = [s[0] for s in dockerfile_stages()]
        self.assertEqual(len(stages), 2, stages)
        # pinned to one Debian 12 point release (a digest may follow the tag)
        digest = r"(@sha256:[0-9a-f]{64})?"
        build = re.fullmatch(r"debian:(12\.\d+)" + digest + " AS build", stages[0])
        runtime = re.fullmatch(r"debian:(12\.\d+)-slim" + digest, stages[1])
        self.assertIsNotNone(build, stages[0])
        self.assertIsNotNone(runtime, stages[1])
        self.assertEqual(build.group(1), runtime.group(1), "one point release for both stages")

    def test_readme_and_dockerfile_say_how_to_pin_by_digest(self):
        with open(DOCKERFILE, encoding="utf-8") as f:
            self.assertIn("FROM debian:12.12-slim@sha256:<that digest>", f.read())
        with open(README, encoding="utf-8") as f:
            self.assertTrue("FROM debian:12.12-slim@sha256:" in f.read(),
                            "README.md does not say how to pin the base images by digest")

    def test_build_stage_gets_the_git_information_as_arguments(self):
        build = dockerfile_stages()[0][1]
        args = {a for i, a in build if i == "ARG"}
        self.assertEqual(args, {"GIT_VERSION=unknown", "GIT_COMMIT=unknown", "SOURCE_DATE_EPOCH"})
        self.assertTrue(any(i == "RUN" and 'make -j"$(nproc)" GIT_VERSION="$GIT_VERSION" '
                            'GIT_COMMIT="$GIT_COMMIT"' in a for i, a in build))

    def test_build_stage_installs_dev_packages_and_runs_make(self):
        build = dockerfile_stages()[0][1]
        self.assertLessEqual({"build-essential", "pkg-config", "libmicrohttpd-dev",
                              "libjansson-dev", "libcurl4-openssl-dev", "libssl-dev",
                              "libyaml-dev", "libjsmn-dev"}, apt_installed(build))
        self.assertTrue(any(i == "RUN" and re.search(r"(^|\s)make(\s|$)", a) for i, a in build))

    def test_runtime_stage_installs_only_the_runtime_libraries(self):
        self.assertEqual(apt_installed(dockerfile_stages()[-1][1]), RUNTIME_PACKAGES)

    def test_runtime_libraries_cover_what_the_binary_links(self):
        exe = harness.binary()
        if not os.access(exe, os.X_OK):
            self.skipTest("%s not built" % exe)
        for tool in ("readelf", "ldd", "dpkg-query"):
            if shutil.which(tool) is None:
                self.skipTest("%s not found" % tool)
        if os.environ.get("SANITIZER"):
            self.skipTest("a sanitizer build links its runtime; the image ships the plain build")
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                            subprocess.run(["readelf", "-d", exe], capture_output=True,
                                           text=True, check=True).stdout)
        resolved = dict(re.findall(r"^\s*(\S+) => (/\S+)",
                                   subprocess.run(["ldd", exe], capture_output=True, text=True,
                                                  check=True).stdout, re.M))
        self.assertTrue(needed)
        for lib in needed:
            with self.subTest(lib=lib):
                self.assertIn(lib, resolved)
                path = resolved[lib]
                owners = None
                for p in (path, "/usr" + path, os.path.realpath(path)):
                    r = subprocess.run(["dpkg-query", "-S", p], capture_output=True, text=True)
                    if r.returncode == 0:
                        owners = {o.split(":")[0] for o in r.stdout.split(": ")[0].split(", ")}
                        break
                self.assertIsNotNone(owners, "no Debian package owns %s" % path)
                # libc6 is in every Debian image.
                self.assertTrue(owners & (RUNTIME_PACKAGES | {"libc6"}),
                                "%s comes from %s, not installed in the image" % (lib, owners))

    def test_runs_as_non_root_user_65532(self):
        users = [a for i, a in dockerfile_stages()[-1][1] if i == "USER"]
        self.assertEqual(len(users), 1)
        self.assertEqual(users[0].split(":")[0], str(NONROOT))

    def test_entrypoint_is_the_binary(self):
        final = dockerfile_stages()[-1][1]
        entry = [json.loads(a) for i, a in final if i == "ENTRYPOINT"]
        self.assertEqual(entry, [["/usr/local/bin/volcano-plugin-webhook"]])
        copies = [a for i, a in final if i == "COPY"]
        self.assertTrue(any(a.startswith("--from=build ") and
                            a.endswith(" /usr/local/bin/volcano-plugin-webhook") for a in copies))

    def test_cmd_is_serve_with_flags_serve_accepts(self):
        cmds = [json.loads(a) for i, a in dockerfile_stages()[-1][1] if i == "CMD"]
        self.assertEqual(len(cmds), 1)
        self.assertEqual(cmds[0][0], "serve")
        flags = serve_flags()
        if flags is None:
            self.skipTest("%s not built: serve --help not checked" % harness.binary())
        for f in flag_names(cmds[0][1:]):
            with self.subTest(flag=f):
                self.assertIn(f, flags)

    def test_dockerignore_keeps_the_sources_and_drops_build_output(self):
        with open(DOCKERIGNORE, encoding="utf-8") as f:
            patterns = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]

        def ignored(rel):
            # Docker matches each pattern against the path and, for a directory, its contents.
            parts = rel.split("/")
            for pat in patterns:
                pat = pat.rstrip("/")
                for n in range(1, len(parts) + 1):
                    prefix = "/".join(parts[:n])
                    if pat.startswith("**/"):
                        if any(re.fullmatch(_glob(pat[3:]), "/".join(parts[k:n]))
                               for k in range(n)):
                            return True
                    elif re.fullmatch(_glob(pat), prefix):
                        return True
            return False

        for d in ("webhook", "plugins", "k8s", "certs"):
            for f in os.listdir(os.path.join(ROOT, d)):
                if f.endswith((".c", ".h")):
                    with self.subTest(path=d + "/" + f):
                        self.assertFalse(ignored(d + "/" + f))
        self.assertFalse(ignored("Makefile"))
        for path in ("build/volcano-plugin-webhook", ".git/HEAD",
                     "tests/schema/node_modules/ajv/package.json", "webhook/x.o"):
            with self.subTest(path=path):
                self.assertTrue(ignored(path))


class MakeImageTest(unittest.TestCase):
    """`make image`, with stand-ins for docker (no engine is needed to test it)."""

    def make_image(self, docker, tmp):
        r = subprocess.run(["make", "--no-print-directory", "-s", "image", "DOCKER=" + docker,
                            "BUILD=" + os.path.join(tmp, "build"), "GIT_VERSION=v0.1.0-1-gabcdef0",
                            "GIT_COMMIT=abcdef0"],
                           cwd=ROOT, capture_output=True, text=True, timeout=120,
                           env=dict({k: v for k, v in os.environ.items()
                                     if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")},
                                    SOURCE_DATE_EPOCH="1700000000"))
        return r.returncode, r.stdout, r.stderr

    def fake_docker(self, tmp, info_status):
        """A docker that logs its arguments and answers `info` with info_status."""
        path = os.path.join(tmp, "docker")
        with open(path, "w") as f:
            f.write('#!/bin/sh\necho "$@" >>"%s/calls"\n[ "$1" = info ] && exit %d\nexit 0\n'
                    % (tmp, info_status))
        os.chmod(path, 0o755)
        return path

    def calls(self, tmp):
        with open(os.path.join(tmp, "calls")) as f:
            return f.read().splitlines()

    def test_builds_with_the_git_information(self):
        with tempfile.TemporaryDirectory(prefix="test_manifests.") as tmp:
            rc, _, err = self.make_image(self.fake_docker(tmp, 0), tmp)
            self.assertEqual((rc, err), (0, ""))
            self.assertEqual(self.calls(tmp), [
                "info",
                "build --build-arg GIT_VERSION=v0.1.0-1-gabcdef0 --build-arg GIT_COMMIT=abcdef0 "
                "--build-arg SOURCE_DATE_EPOCH=1700000000 -t " + IMAGE + " ."])

    def test_says_so_without_an_engine(self):
        with tempfile.TemporaryDirectory(prefix="test_manifests.") as tmp:
            docker = self.fake_docker(tmp, 1)
            rc, _, err = self.make_image(docker, tmp)
            self.assertNotEqual(rc, 0)
            self.assertIn("make image: no Docker engine answers (%s info failed: start it or set "
                          "DOCKER_HOST); no image built\n" % docker, err)
            self.assertEqual(self.calls(tmp), ["info"])

    def test_says_so_without_docker(self):
        with tempfile.TemporaryDirectory(prefix="test_manifests.") as tmp:
            missing = os.path.join(tmp, "no-such-docker")
            rc, _, err = self.make_image(missing, tmp)
            self.assertNotEqual(rc, 0)
            self.assertIn("make image: %s not found: install a Docker engine (or DOCKER=podman); "
                          "no image built\n" % missing, err)


def _glob(pattern):
    """A .dockerignore pattern without '**' as a regular expression ('*' stays in a segment)."""
    return "".join("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch)
                   for ch in pattern)


class LicenseTest(unittest.TestCase):
    """The project's licence, as a packager or an operator's legal review checks it."""

    def test_license_file_is_apache_2_0_verbatim(self):
        with open(LICENSE, "rb") as f:
            text = f.read()
        self.assertEqual(hashlib.sha256(text).hexdigest(), APACHE_2_0_SHA256)
        common = "/usr/share/common-licenses/Apache-2.0"
        if os.path.exists(common):
            with open(common, "rb") as f:
                self.assertEqual(text, f.read())

    def test_readme_names_the_license(self):
        with open(README, encoding="utf-8") as f:
            readme = f.read()
        section = readme.split("\n## License\n", 1)
        self.assertEqual(len(section), 2, "README.md has no '## License' section")
        self.assertIn("Apache License 2.0 (SPDX `Apache-2.0`)", section[1])
        self.assertIn("`LICENSE`", section[1])

    def test_image_carries_the_license(self):
        final = dockerfile_stages()[-1][1]
        self.assertIn(("COPY", "LICENSE /usr/share/doc/volcano-plugin-webhook/LICENSE"), final)
        # jsmn's header is compiled in: its MIT notice goes with the binary
        self.assertIn(("COPY", "--from=build /usr/share/doc/libjsmn-dev/copyright "
                       "/usr/share/doc/volcano-plugin-webhook/jsmn.copyright"), final)


class SchemaValidatorsTest(unittest.TestCase):
    """The validators the manifests and the mutated pods are checked with test themselves."""

    def test_node_self_tests_pass(self):
        node = shutil.which("node")
        self.assertIsNotNone(node, "node not found")
        r = subprocess.run([node, "--test", SCHEMA_DIR + "/"], capture_output=True, text=True,
                           timeout=300, cwd=ROOT)
        self.assertEqual(r.returncode, 0, r.stdout[-4000:] + r.stderr[-2000:])
        self.assertRegex(r.stdout, r"(?m)^# fail 0$")


if __name__ == "__main__":
    unittest.main()
