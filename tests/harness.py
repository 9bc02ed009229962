# SPDX-License-Identifier: Apache-2.0
"""harness.py - helpers for the webhook's integration tests (tests/test_*.py).

Python 3 standard library plus Debian's python3-jsonpatch and python3-yaml.

What it gives a test:
  load_job(path)            a Volcano Job from examples/*.yaml (namespace, uid, status filled)
  build_pod(job, task, i)   the pod Volcano's controller builds (docs/plugins.md §2.1-2.4), then
                            defaulted and admitted as kube-apiserver sends it to a mutating webhook
  review(pod, ns, ...)      a kube-apiserver-shaped AdmissionReview for that pod
  apply_patch(pod, resp)    the response's JSON Patch applied, strictly (as kube-apiserver does)
  validate_pods(pods)       tests/schema/validate-pod.mjs over the pods; raises on any problem
  make_certs(dir, ...)      a throwaway CA + serving cert (`gen-certs`, else the openssl CLI)
  ApiServer                 tests/apiserver.py on a loopback port, with its /_test/ controls
  Webhook                   $BUILD/volcano-plugin-webhook serve, over HTTPS; post() a review
  Env                       all of it wired together: certs, API server, kubeconfig, webhook
  RoundRobinProxy(ports)    a Service stand-in on loopback: each new connection to the next
                            replica in turn (tests/test_scale.py)

Processes: every process is started with start_new_session, remembered, and stopped by its
own pid (SIGTERM, then SIGKILL) in stop()/close(), which tests call from addCleanup or a
finally block; start() cleans up after itself when it fails half way.

Env: BUILD (default "build") names the build directory; SANITIZER (set by make) only makes
the start-up waits longer and turns sanitizer reports in the webhook's stderr into errors.
"""

import base64
import copy
import http.client
import ipaddress
import json
import os
import random
import shutil
import signal
import socket
import ssl
import string
import subprocess
import sys
import tempfile
import time
import uuid

import jsonpatch
import yaml

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
EXAMPLES = os.path.join(ROOT, "examples")
APISERVER = os.path.join(TESTS, "apiserver.py")
VALIDATOR = os.path.join(TESTS, "schema", "validate-pod.mjs")
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

JOB_API_VERSION = "batch.volcano.sh/v1alpha1"
SA_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
WEBHOOK_PATH = "/pods/mutate"
SERVICE = "volcano-plugin-webhook"
SERVICE_NAMESPACE = "volcano-plugin-webhook"  # manifests/ namespace.yaml
# utilrand.String's alphabet (k8s.io/apimachinery/pkg/util/rand): no vowels, no 0/1/3.
K8S_RAND_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "WARNING: ThreadSanitizer", "ERROR: ThreadSanitizer",
                     "ERROR: UndefinedBehaviorSanitizer")


def build_dir():
    """The build directory of the binary under test ($BUILD, default "build"), absolute."""
    return os.path.join(ROOT, os.environ.get("BUILD") or "build")


def binary():
    """Path of $BUILD/volcano-plugin-webhook (may not exist)."""
    return os.path.join(build_dir(), "volcano-plugin-webhook")


def startup_timeout():
    """Seconds to wait for a process to come up: sanitizer builds start slower."""
    return 30.0 if os.environ.get("SANITIZER") else 10.0


# How long `serve` may take to exit after SIGTERM: its default --shutdown-grace
# (webhook/serve_flags.c DEFAULT_SHUTDOWN_GRACE_MS), then the Lease release
# (k8s/leader.c RELEASE_TIMEOUT_MS).
SHUTDOWN_GRACE = 15.0
LEASE_RELEASE = 5.0


def stop_timeout():
    """Seconds between SIGTERM and SIGKILL in Process.stop(): what serve may take to
    exit, plus the start-up allowance for the rest of its own stopping."""
    return SHUTDOWN_GRACE + LEASE_RELEASE + startup_timeout()


# ---------------------------------------------------------------- Jobs and pods

def load_job(path, namespace="default", uid=None):
    """Read a Volcano Job from a YAML (or JSON) file; `path` may be a bare example name.

    Fills what the API server and Volcano's job admission would have: metadata.namespace,
    metadata.uid (uuid5 of namespace/name unless `uid` is given, so repeatable),
    spec.queue "default" when absent, task names default<k> when absent, replicas 0 when
    absent, status.version / retryCount 0. Returns a new dict. A repeated key in the YAML
    (the examples repeat `queue`) is accepted by yaml.safe_load: the last one wins.
    """
    if os.path.sep not in path and not os.path.exists(path):
        path = os.path.join(EXAMPLES, path if path.endswith(".yaml") else path + ".yaml")
    with open(path, encoding="utf-8") as f:
        job = yaml.safe_load(f)
    if not isinstance(job, dict) or job.get("kind") != "Job":
        raise ValueError("%s: not a Volcano Job" % path)
    meta = job.setdefault("metadata", {})
    meta["namespace"] = meta.get("namespace") or namespace
    meta["uid"] = uid or meta.get("uid") or str(
        uuid.uuid5(uuid.NAMESPACE_URL, "volcano-job:%s/%s" % (meta["namespace"], meta["name"])))
    spec = job.setdefault("spec", {})
    spec.setdefault("queue", "default")
    for k, task in enumerate(spec.get("tasks") or []):
        if not task.get("name"):
            task["name"] = "default%d" % k
        task.setdefault("replicas", 0)
    status = job.setdefault("status", {})
    status.setdefault("version", 0)
    status.setdefault("retryCount", 0)
    return job



def backlog_jobs(n):
    """n copies of mpi-job named backlog-00.. with plugin svc alone (a ConfigMap, a
    Service and a NetworkPolicy each): a reconcile backlog of about 5 requests a Job."""
    jobs = []
    for k in range(n):
        job = load_job("mpi-job")
        job["metadata"]["name"] = "backlog-%02d" % k
        job["spec"]["plugins"] = {"svc": []}
        jobs.append(job)
    return jobs


def pod_names(job):
    """[(task name, index)] of every pod the controller wants, in creation order (§2.1)."""
    return [(t["name"], i) for t in job["spec"].get("tasks") or []
            for i in range(int(t.get("replicas") or 0))]


def _find_task(job, task_name):
    for task in job["spec"].get("tasks") or []:
        if task.get("name") == task_name:
            return task
    raise KeyError("job %s has no task %r" % (job["metadata"]["name"], task_name))


def _quantity(v):
    """A Quantity as the API serialises it: always a string ("2", "500m", "4Gi")."""
    if isinstance(v, bool):
        raise ValueError("bad quantity %r" % v)
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def _image_pull_policy(image):
    """kube-apiserver's default: Always for :latest or no tag, IfNotPresent otherwise."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    if ":" not in last or last.rsplit(":", 1)[1] == "latest":
        return "Always"
    return "IfNotPresent"


def _default_probe(probe):
    if not isinstance(probe, dict):
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    if isinstance(probe.get("httpGet"), dict):
        probe["httpGet"].setdefault("path", "/")
        probe["httpGet"].setdefault("scheme", "HTTP")


def _default_container(c):
    """SetDefaults_Container & co. (pkg/apis/core/v1/defaults.go)."""
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    if c.get("image"):
        c.setdefault("imagePullPolicy", _image_pull_policy(c["image"]))
    res = c.setdefault("resources", {})
    for kind in ("limits", "requests"):
        if isinstance(res.get(kind), dict):
            res[kind] = {k: _quantity(v) for k, v in res[kind].items()}
    # requests default to limits for every resource that has a limit and no request
    if res.get("limits"):
        req = res.setdefault("requests", {})
        for k, v in res["limits"].items():
            req.setdefault(k, v)
    for p in c.get("ports") or []:
        p.setdefault("protocol", "TCP")
    for e in c.get("env") or []:
        ref = (e.get("valueFrom") or {}).get("fieldRef")
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(c.get(probe))


def _default_volume(v):
    for src in ("configMap", "secret", "projected", "downwardAPI"):
        if isinstance(v.get(src), dict):
            v[src].setdefault("defaultMode", 420)
    if isinstance(v.get("hostPath"), dict):
        v["hostPath"].setdefault("type", "")


def _rand(rng, n, alphabet):
    return "".join(rng.choice(alphabet) for _ in range(n))


def insecure_context():
    """A TLS client context that checks nothing (for /readyz and /metrics probes)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


WEBHOOK_CONFIG_PATHS = ("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/",
                        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/")


def webhook_ca_bundles(api, name):
    """Every webhook's caBundle (None where unset) of the Mutating then the Validating
    configuration called name, as the API server holds them."""
    out = []
    for path in WEBHOOK_CONFIG_PATHS:
        status, cfg = api.get(path + name)
        if status != 200:
            raise AssertionError("GET %s%s: %d %r" % (path, name, status, cfg))
        out += [w["clientConfig"].get("caBundle") for w in cfg["webhooks"]]
    return out


def trusted_ca_file(api, name, directory):
    """The one caBundle every webhook of configurations name holds, written to a new
    file in directory (its path): what kube-apiserver trusts when it calls them."""
    bundles = webhook_ca_bundles(api, name)
    if len(set(bundles)) != 1 or bundles[0] is None:
        raise AssertionError("the webhooks do not hold one caBundle: %r" % (bundles,))
    path = os.path.join(directory, "cabundle-%d.crt" % time.monotonic_ns())
    with open(path, "wb") as f:
        f.write(base64.b64decode(bundles[0], validate=True))
    return path


def build_pod(job, task_name, index, priority=0, sa_suffix=None, automount=True):
    """The pod Volcano's controller creates for replica `index` of `task_name`, as the
    mutating webhook receives it from kube-apiserver.

    Controller (docs/plugins.md §2.1-2.4): name J-T-i, namespace, the task template's labels and
    annotations plus the keys of §1.2/§2.2 (group-name = J-UID), the Job ownerReference,
    the template spec, schedulerName / priorityClassName from the Job, Job-level volumes
    (PVC J-<12 chars> mounted in every container), partition label.
    API server: defaulting (terminationMessagePath/Policy, imagePullPolicy, resources {} and
    requests from limits, port protocol, restartPolicy Always, dnsPolicy ClusterFirst,
    terminationGracePeriodSeconds 30, securityContext {}, schedulerName default-scheduler,
    enableServiceLinks), then the admission plugins: ServiceAccount (serviceAccountName
    default and the kube-api-access-xxxxx projected volume, mounted read-only at
    /var/run/secrets/kubernetes.io/serviceaccount in every container and init container),
    Priority (priority, preemptionPolicy), DefaultTolerationSeconds (not-ready and
    unreachable, NoExecute, 300 s). No uid/creationTimestamp/resourceVersion yet (they are
    set after admission): creationTimestamp null, status {}.

    Random names are drawn from a generator seeded by the pod name, so the same arguments
    give the same pod; `sa_suffix` forces the 5 characters after kube-api-access-.
    Returns a new dict; `job` is not modified. KeyError when the task does not exist.
    """
    meta = job["metadata"]
    jname, ns, juid = meta["name"], meta.get("namespace") or "default", meta.get("uid")
    if not juid:
        raise ValueError("job %s has no metadata.uid (use load_job or the API server's copy)"
                         % jname)
    spec = job.get("spec") or {}
    status = job.get("status") or {}
    task = _find_task(job, task_name)
    template = copy.deepcopy(task.get("template") or {})
    tmeta = template.get("metadata") or {}
    pod_spec = template.get("spec") or {}
    name = "%s-%s-%d" % (jname, task_name, index)
    queue = spec.get("queue") or "default"
    rng = random.Random(name)

    labels = dict(tmeta.get("labels") or {})
    annotations = dict(tmeta.get("annotations") or {})
    labels.update({
        "volcano.sh/task-index": str(index),
        "volcano.sh/job-name": jname,
        "volcano.sh/task-spec": task_name,
        "volcano.sh/job-namespace": ns,
        "volcano.sh/queue-name": queue,
    })
    annotations.update({
        "volcano.sh/task-index": str(index),
        "volcano.sh/task-spec": task_name,
        "scheduling.k8s.io/group-name": "%s-%s" % (jname, juid),
        "volcano.sh/job-name": jname,
        "volcano.sh/queue-name": queue,
        "volcano.sh/job-version": str(int(status.get("version") or 0)),
        "volcano.sh/template-uid": "%s-%s" % (jname, task_name),
        "volcano.sh/job-retry-count": str(int(status.get("retryCount") or 0)),
    })
    jlabels, jannos = meta.get("labels") or {}, meta.get("annotations") or {}
    for key in ("volcano.sh/preemptable", "volcano.sh/cooldown-time"):
        if key in jlabels:
            labels[key] = jlabels[key]
        if key in jannos:
            annotations[key] = jannos[key]
    if "volcano.sh/revocable-zone" in jannos:
        annotations["volcano.sh/revocable-zone"] = jannos["volcano.sh/revocable-zone"]
    if "volcano.sh/jdb-min-available" in jannos:
        annotations["volcano.sh/jdb-min-available"] = jannos["volcano.sh/jdb-min-available"]
    elif "volcano.sh/jdb-max-unavailable" in jannos:
        annotations["volcano.sh/jdb-max-unavailable"] = jannos["volcano.sh/jdb-max-unavailable"]
    if task.get("topologyPolicy"):
        annotations["volcano.sh/numa-topology-policy"] = task["topologyPolicy"]
    if isinstance(task.get("partitionPolicy"), dict):
        size = int(task["partitionPolicy"].get("partitionSize") or 0)
        labels["volcano.sh/partition-id"] = str(index // size if size > 0 else 0)

    # §2.3 controller spec adjustments
    if not pod_spec.get("schedulerName") and spec.get("schedulerName"):
        pod_spec["schedulerName"] = spec["schedulerName"]
    if not pod_spec.get("priorityClassName") and spec.get("priorityClassName"):
        pod_spec["priorityClassName"] = spec["priorityClassName"]
    seen_claims = set()
    for vol in spec.get("volumes") or []:
        claim = vol.get("volumeClaimName") or "%s-%s" % (
            jname, _rand(rng, 12, string.digits + string.ascii_lowercase))
        if claim in seen_claims:
            continue
        seen_claims.add(claim)
        vname = "%s-%s" % (jname, _rand(rng, 12, string.digits + string.ascii_lowercase))
        pod_spec.setdefault("volumes", []).append(
            {"name": vname, "persistentVolumeClaim": {"claimName": claim}})
        for c in pod_spec.get("containers") or []:
            c.setdefault("volumeMounts", []).append(
                {"name": vname, "mountPath": vol.get("mountPath")})

    pod = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": ns,
            "creationTimestamp": None,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [{
                "apiVersion": JOB_API_VERSION, "kind": "Job", "name": jname, "uid": juid,
                "controller": True, "blockOwnerDeletion": True,
            }],
        },
        "spec": pod_spec,
        "status": {},
    }

    # kube-apiserver defaulting
    pod_spec.setdefault("containers", [])
    for c in (pod_spec.get("initContainers") or []) + pod_spec["containers"]:
        _default_container(c)
    for v in pod_spec.get("volumes") or []:
        _default_volume(v)
    pod_spec.setdefault("restartPolicy", "Always")
    pod_spec.setdefault("terminationGracePeriodSeconds", 30)
    pod_spec.setdefault("dnsPolicy", "ClusterFirst")
    pod_spec.setdefault("securityContext", {})
    pod_spec.setdefault("schedulerName", "default-scheduler")
    pod_spec.setdefault("enableServiceLinks", True)

    # admission: ServiceAccount
    sa = pod_spec.get("serviceAccountName") or pod_spec.get("serviceAccount") or "default"
    pod_spec["serviceAccountName"] = sa
    pod_spec["serviceAccount"] = sa
    if automount and pod_spec.get("automountServiceAccountToken") is not False:
        mounted = any(m.get("mountPath") == SA_MOUNT_PATH
                      for c in (pod_spec.get("initContainers") or []) + pod_spec["containers"]
                      for m in c.get("volumeMounts") or [])
        if not mounted:
            vname = "kube-api-access-" + (sa_suffix or _rand(rng, 5, K8S_RAND_ALPHABET))
            pod_spec.setdefault("volumes", []).append({"name": vname, "projected": {
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt",
                                   "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                        "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                ],
                "defaultMode": 420,
            }})
            for c in (pod_spec.get("initContainers") or []) + pod_spec["containers"]:
                c.setdefault("volumeMounts", []).append(
                    {"name": vname, "readOnly": True, "mountPath": SA_MOUNT_PATH})
    # admission: Priority
    pod_spec.setdefault("priority", priority)
    pod_spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    # admission: DefaultTolerationSeconds
    tols = pod_spec.setdefault("tolerations", [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == key and t.get("effect") in (None, "", "NoExecute")
                   for t in tols):
            tols.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 300})
    return pod


def job_pods(job, **kw):
    """build_pod for every pod of the Job (task order, then index)."""
    return [build_pod(job, t, i, **kw) for t, i in pod_names(job)]


# ---------------------------------------------------------------- AdmissionReview

USER_INFO = {
    "username": "system:serviceaccount:volcano-system:volcano-controllers",
    "uid": "6d4f6c5e-2b1a-4c3d-9e8f-0a1b2c3d4e5f",
    "groups": ["system:serviceaccounts", "system:serviceaccounts:volcano-system",
               "system:authenticated"],
}


def review(pod, ns, version="v1", omit_namespace=False, uid=None, operation="CREATE"):
    """An AdmissionReview as kube-apiserver POSTs it for a pod CREATE.

    version: "v1" or "v1beta1" (admission.k8s.io/<version>). omit_namespace drops
    metadata.namespace from the object (clients may omit it; request.namespace still
    carries it). request.name is absent when the pod has no name (generateName).
    Returns a new dict; `pod` is deep-copied.
    """
    if version not in ("v1", "v1beta1"):
        raise ValueError("version must be v1 or v1beta1")
    obj = copy.deepcopy(pod)
    if omit_namespace:
        obj.get("metadata", {}).pop("namespace", None)
    gvk = {"group": "", "version": "v1", "kind": "Pod"}
    gvr = {"group": "", "version": "v1", "resource": "pods"}
    req = {
        "uid": uid or str(uuid.uuid4()),
        "kind": gvk,
        "resource": gvr,
        "requestKind": dict(gvk),
        "requestResource": dict(gvr),
    }
    name = (obj.get("metadata") or {}).get("name")
    if name:
        req["name"] = name
    req.update({
        "namespace": ns,
        "operation": operation,
        "userInfo": copy.deepcopy(USER_INFO),
        "object": obj,
        "oldObject": None,
        "dryRun": False,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
    })
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/" + version,
            "request": req}


def decode_patch(response):
    """The JSON Patch of an AdmissionReview (or its `response`) as a list, or None.

    Strict like kube-apiserver: patchType must be "JSONPatch" exactly when a patch is
    present, the patch must be valid base64 of a JSON array. Raises AssertionError.
    """
    resp = response.get("response", response) if isinstance(response, dict) else None
    if not isinstance(resp, dict):
        raise AssertionError("no AdmissionResponse in %r" % (response,))
    patch_b64, ptype = resp.get("patch"), resp.get("patchType")
    if patch_b64 is None:
        if ptype is not None:
            raise AssertionError("patchType %r without a patch" % (ptype,))
        return None
    if ptype != "JSONPatch":
        raise AssertionError("patch with patchType %r, want \"JSONPatch\"" % (ptype,))
    try:
        raw = base64.b64decode(patch_b64, validate=True)
        ops = json.loads(raw.decode("utf-8"))
    except (ValueError, TypeError, UnicodeDecodeError) as e:
        raise AssertionError("patch is not base64 of JSON: %s" % e) from None
    if not isinstance(ops, list):
        raise AssertionError("patch is not a JSON array: %r" % (ops,))
    return ops


def apply_patch(pod, response):
    """`pod` with the response's JSON Patch applied (RFC 6902, jsonpatch, strict: an op
    that does not apply raises AssertionError). No patch → an unchanged deep copy.
    `response` is the AdmissionReview answer or its `response` member."""
    ops = decode_patch(response)
    if ops is None:
        return copy.deepcopy(pod)
    try:
        return jsonpatch.JsonPatch(ops).apply(copy.deepcopy(pod))
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError,
            IndexError, TypeError, ValueError) as e:
        raise AssertionError("patch does not apply: %s\npatch: %s" %
                             (e, json.dumps(ops, indent=1))) from None


# ---------------------------------------------------------------- schema check

def validate_pods(pods):
    """Check pods with tests/schema/validate-pod.mjs (kubernetes-models schema, no unknown
    fields, pod validation rules). Returns its "ok N pods" line; raises AssertionError
    with the validator's output on any problem or when it cannot run."""
    node = shutil.which("node")
    if node is None:
        raise AssertionError("node not found: cannot run %s" % VALIDATOR)
    if not os.path.isdir(os.path.join(TESTS, "schema", "node_modules")):
        raise AssertionError("tests/schema/node_modules missing: run "
                             "npm ci --prefix tests/schema")
    data = "".join(json.dumps(p) + "\n" for p in pods)
    r = subprocess.run([node, VALIDATOR], input=data, capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise AssertionError("pod validation failed (exit %d):\n%s%s" %
                             (r.returncode, r.stdout, r.stderr))
    return r.stdout.strip()


# ---------------------------------------------------------------- certificates

CERT_FILES = ("ca.crt", "ca.key", "tls.crt", "tls.key")


def service_dns(service=SERVICE, namespace=SERVICE_NAMESPACE):
    """The name kube-apiserver verifies the webhook's certificate against."""
    return "%s.%s.svc" % (service, namespace)


def make_certs(out, service=SERVICE, namespace=SERVICE_NAMESPACE, dns=(), use_binary=True):
    """Write ca.crt, ca.key, tls.crt, tls.key into `out` for `service`.`namespace`.svc.

    Uses `$BUILD/volcano-plugin-webhook gen-certs` when the binary exists and knows the
    command, else the openssl CLI with the same subjectAltNames (NAME, NAME.NS,
    NAME.NS.svc, NAME.NS.svc.cluster.local, plus `dns`). Returns a dict file → path and
    "method": "gen-certs" | "openssl".
    """
    os.makedirs(out, exist_ok=True)
    paths = {f: os.path.join(out, f) for f in CERT_FILES}
    exe = binary()
    if use_binary and os.access(exe, os.X_OK):
        cmd = [exe, "gen-certs", "--service", service, "--namespace", namespace, "--out", out]
        for d in dns:
            cmd += ["--dns", d]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if r.returncode == 0 and all(os.path.exists(p) for p in paths.values()):
            return dict(paths, method="gen-certs")
        if "unknown command" not in r.stderr and r.returncode != 127:
            raise AssertionError("gen-certs failed (exit %d): %s" % (r.returncode, r.stderr))
    _openssl_certs(out, service, namespace, dns)
    return dict(paths, method="openssl")


def _openssl(*args, cwd):
    r = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise AssertionError("openssl %s failed: %s" % (args[0], r.stderr))


def _openssl_certs(out, service, namespace, dns):
    names = [service, "%s.%s" % (service, namespace), "%s.%s.svc" % (service, namespace),
             "%s.%s.svc.cluster.local" % (service, namespace)] + list(dns)
    sans = []
    for n in names:
        try:
            ipaddress.ip_address(n)
            sans.append("IP:" + n)
        except ValueError:
            sans.append("DNS:" + n)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=%s-test-ca" % service,
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=out)
    _openssl("req", "-new", *ec, "-keyout", "tls.key", "-out", "tls.csr",
             "-subj", "/CN=%s.%s.svc" % (service, namespace), cwd=out)
    with open(os.path.join(out, "tls.ext"), "w") as f:
        f.write("subjectAltName=%s\nbasicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                % ",".join(sans))
    _openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "2", "-sha256", "-extfile", "tls.ext",
             "-out", "tls.crt", cwd=out)
    for f in ("ca.key", "tls.key"):
        os.chmod(os.path.join(out, f), 0o600)


def write_kubeconfig(path, server, ca_file=None, token=None, namespace="default"):
    """Write a kubeconfig (block-style YAML) for `server` with the CA inlined as
    certificate-authority-data and a bearer token. Returns path."""
    cluster = {"server": server}
    if ca_file:
        with open(ca_file, "rb") as f:
            cluster["certificate-authority-data"] = base64.b64encode(f.read()).decode()
    user = {"token": token} if token else {}
    cfg = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "test", "cluster": cluster}],
        "users": [{"name": "test", "user": user}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test",
                                                   "namespace": namespace}}],
        "current-context": "test",
        "preferences": {},
    }
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f, default_flow_style=False, sort_keys=False)
    return path


# ---------------------------------------------------------------- processes

class Process:
    """A child process with its output in a log file; stop() always reaps it."""

    def __init__(self, name, argv, workdir, env=None):
        self.name = name
        self.argv = argv
        self.log_path = os.path.join(workdir, name + ".log")
        self.proc = None
        self.returncode = None
        self.env = env

    def start(self):
        self._log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         env=self.env, cwd=ROOT)
        except BaseException:
            self._log.close()
            raise
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log(self):
        """Everything the process wrote so far (stdout and stderr)."""
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def wait_port_file(self, path, timeout=None):
        """Wait until the process writes its port file; returns the port."""
        deadline = time.monotonic() + (timeout or startup_timeout())
        while time.monotonic() < deadline:
            try:
                with open(path) as f:
                    text = f.read().strip()
                if text:
                    return int(text)
            except (OSError, ValueError):
                pass
            if not self.alive():
                raise AssertionError("%s exited (%s) before writing %s:\n%s" %
                                     (self.name, self.proc.returncode, path, self.log()))
            time.sleep(0.02)
        raise AssertionError("%s did not write %s within %.0fs:\n%s" %
                             (self.name, path, timeout or startup_timeout(), self.log()))

    def stop(self, timeout=None):
        """SIGTERM, wait up to `timeout` seconds (default stop_timeout()), then SIGKILL;
        returns the exit code (None if never started)."""
        if self.proc is None:
            return None
        timeout = stop_timeout() if timeout is None else timeout
        try:
            if self.proc.poll() is None:
                try:
                    self.proc.send_signal(signal.SIGTERM)
                    self.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.returncode = self.proc.returncode
        finally:
            if not self._log.closed:
                self._log.close()
        return self.returncode

    def sanitizer_report(self):
        """The first sanitizer report line in the log, or None."""
        for line in self.log().splitlines():
            if any(m in line for m in SANITIZER_MARKERS):
                return line
        return None

    def sanitizer_failure(self, head=None):
        """An AssertionError's text for a log with a sanitizer report: head (default
        "sanitizer report from NAME"), the whole log, the report again from its first line
        (at most 80 lines), and last one line with that first line and the report's SUMMARY.
        The report goes last because CI keeps only the end of a long failure; a report's
        own end (the thread's creation stack) does not say what went wrong, its top does."""
        lines = self.log().splitlines()
        first = next((i for i, line in enumerate(lines)
                      if any(m in line for m in SANITIZER_MARKERS)), None)
        head = head or "sanitizer report from " + self.name
        if first is None:
            return head + ": none"
        nxt = next((i for i in range(first + 1, len(lines))
                    if any(m in lines[i] for m in SANITIZER_MARKERS)), len(lines))
        summary = next((line.strip() for line in lines[first:nxt] if "SUMMARY:" in line), "")
        return "%s: %s\n%s\n--- the report again, from its first line ---\n%s\n" \
            "--- in short: %s %s" % (head, lines[first], "\n".join(lines),
                                     "\n".join(lines[first:first + 80]),
                                     lines[first].strip(), summary)


def _http_json(conn, method, path, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    h = {"Accept": "application/json"}
    if data is not None:
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    conn.request(method, path, body=data, headers=h)
    resp = conn.getresponse()
    raw = resp.read()
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw.decode("utf-8", "replace")
    return resp.status, parsed


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a fixed address while verifying (and sending SNI/Host for) another name,
    as kube-apiserver does for <service>.<namespace>.svc."""

    def __init__(self, address, port, server_hostname, context, timeout):
        super().__init__(server_hostname, port, context=context, timeout=timeout)
        self._address = address

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        try:
            self.sock = self._context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


def tls_handshake(port, ctx, server_name, timeout=10):
    """Connect to 127.0.0.1:port and handshake with ctx, verifying server_name; returns
    the SSL socket (the caller closes it) or raises."""
    sock = socket.create_connection(("127.0.0.1", port), timeout)
    try:
        return ctx.wrap_socket(sock, server_hostname=server_name)
    except BaseException:
        sock.close()
        raise


def https_context(ca_file):
    """Client context that trusts only ca_file and checks the host name (SAN)."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_file)
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.set_alpn_protocols(["h2", "http/1.1"])  # what kube-apiserver offers
    return ctx


class ApiServer:
    """tests/apiserver.py on 127.0.0.1 with an OS-chosen port.

    tls: serve HTTPS with a cert for 127.0.0.1 (own CA, ca_file); token: require this
    bearer token (None: no auth); load: files passed as --load.
    """

    def __init__(self, workdir, tls=True, token="test-token", load=(), verbose=False):
        self.workdir = workdir
        self.tls = tls
        self.token = token
        self.load = list(load)
        self.verbose = verbose
        self.port = None
        self.ca_file = None
        self.process = None

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def start(self):
        port_file = os.path.join(self.workdir, "apiserver.port")
        argv = [PYTHON, APISERVER, "--port", "0", "--port-file", port_file]
        if self.tls:
            certs = make_certs(os.path.join(self.workdir, "apiserver-certs"),
                               service="kubernetes", namespace="default", dns=["127.0.0.1"])
            self.ca_file = certs["ca.crt"]
            argv += ["--tls-cert", certs["tls.crt"], "--tls-key", certs["tls.key"]]
        if self.token:
            argv += ["--token", self.token]
        for f in self.load:
            argv += ["--load", f]
        if self.verbose:
            argv.append("-v")
        self.process = Process("apiserver", argv, self.workdir).start()
        try:
            self.port = self.process.wait_port_file(port_file)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        if self.process is not None:
            self.process.stop()

    def _conn(self, timeout=10):
        if self.tls:
            ctx = https_context(self.ca_file)
            return http.client.HTTPSConnection("127.0.0.1", self.port, context=ctx,
                                               timeout=timeout)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def call(self, method, path, body=None, auth=True):
        """One request; returns (status, parsed JSON body or text)."""
        headers = {"Authorization": "Bearer " + self.token} if (auth and self.token) else {}
        conn = self._conn()
        try:
            return _http_json(conn, method, path, body, headers)
        finally:
            conn.close()

    def _control(self, method, path, body=None):
        status, out = self.call(method, path, body, auth=False)
        if status not in (200, 201):
            raise AssertionError("%s %s: HTTP %d %r" % (method, path, status, out))
        return out

    def create_objects(self, objs):
        """POST /_test/objects: store objects directly (uid and resourceVersion assigned);
        returns the stored copies."""
        return self._control("POST", "/_test/objects", objs)["items"]

    def clear_objects(self):
        self._control("DELETE", "/_test/objects")

    def add_faults(self, rules):
        """POST /_test/faults: one rule or a list ({method, path_regex, status, reason,
        message, delay_ms, count, retry_after, close})."""
        return self._control("POST", "/_test/faults", rules)["faults"]

    def clear_faults(self):
        self._control("DELETE", "/_test/faults")

    def requests(self):
        """GET /_test/requests: [{method, path, query, headers}] of REST calls so far."""
        return self._control("GET", "/_test/requests")["requests"]

    def clear_requests(self):
        self._control("DELETE", "/_test/requests")

    def get(self, path):
        """GET a REST path with the token; returns (status, body)."""
        return self.call("GET", path)

    def job(self, namespace, name):
        status, body = self.get("/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs/%s"
                                % (namespace, name))
        if status != 200:
            raise AssertionError("GET job %s/%s: HTTP %d %r" % (namespace, name, status, body))
        return body


class Webhook:
    """`$BUILD/volcano-plugin-webhook serve` on 127.0.0.1, OS-chosen port, HTTPS.

    certs: make_certs() result; extra_args: more serve flags. post() sends like
    kube-apiserver: to 127.0.0.1, verifying the certificate against ca.crt and the name
    <service>.<namespace>.svc.
    """

    def __init__(self, workdir, certs, kubeconfig, service=SERVICE,
                 namespace=SERVICE_NAMESPACE, extra_args=(), exe=None):
        self.workdir = workdir
        self.certs = certs
        self.kubeconfig = kubeconfig
        self.server_hostname = service_dns(service, namespace)
        self.extra_args = list(extra_args)
        self.exe = exe or binary()
        self.port = None
        self.process = None
        self._context = None

    def start(self):
        if not os.access(self.exe, os.X_OK):
            raise AssertionError("%s not built (make BUILD=%s)" % (self.exe, build_dir()))
        port_file = os.path.join(self.workdir, "webhook.port")
        argv = [self.exe, "serve", "--bind-address", "127.0.0.1", "--port", "0",
                "--port-file", port_file,
                "--tls-cert-file", self.certs["tls.crt"],
                "--tls-private-key-file", self.certs["tls.key"],
                "--kubeconfig", self.kubeconfig] + self.extra_args
        self._context = https_context(self.certs["ca.crt"])
        self.process = Process("webhook", argv, self.workdir).start()
        try:
            self.port = self.process.wait_port_file(port_file)
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def connection(self, timeout=10):
        """A new verified HTTPS connection (http.client) to the webhook."""
        return _PinnedHTTPSConnection("127.0.0.1", self.port, self.server_hostname,
                                      self._context, timeout)

    def wait_healthy(self, timeout=None):
        """Poll GET /healthz until it answers 200."""
        deadline = time.monotonic() + (timeout or startup_timeout())
        last = None
        while time.monotonic() < deadline:
            if not self.process.alive():
                raise AssertionError("webhook exited (%s):\n%s" %
                                     (self.process.proc.returncode, self.process.log()))
            conn = self.connection(timeout=2)
            try:
                conn.request("GET", "/healthz")
                resp = conn.getresponse()
                resp.read()
                if resp.status == 200:
                    return
                last = "HTTP %d" % resp.status
            except ssl.SSLCertVerificationError:
                raise
            except (OSError, http.client.HTTPException) as e:
                last = repr(e)
            finally:
                conn.close()
            time.sleep(0.05)
        raise AssertionError("webhook /healthz not ready: %s\n%s" % (last, self.process.log()))

    def post(self, body, path=WEBHOOK_PATH + "?timeout=10s", timeout=10, raw=False):
        """POST an AdmissionReview (dict, or bytes when raw) as kube-apiserver does.
        Returns (HTTP status, parsed JSON body or text)."""
        conn = self.connection(timeout)
        try:
            data = body if raw else json.dumps(body).encode()
            conn.request("POST", path, body=data, headers={
                "Content-Type": "application/json", "Accept": "application/json"})
            resp = conn.getresponse()
            text = resp.read()
            try:
                return resp.status, json.loads(text)
            except ValueError:
                return resp.status, text.decode("utf-8", "replace")
        finally:
            conn.close()

    def admit(self, rev):
        """post() and check the answer the way kube-apiserver does (HTTP 200, same
        apiVersion/kind, response.uid = request.uid, patch/patchType consistent).
        Returns the `response` member."""
        status, body = self.post(rev)
        if status != 200 or not isinstance(body, dict):
            raise AssertionError("webhook answered HTTP %d: %r" % (status, body))
        if body.get("apiVersion") != rev["apiVersion"] or body.get("kind") != rev["kind"]:
            raise AssertionError("answer is %s/%s, request was %s/%s" % (
                body.get("apiVersion"), body.get("kind"), rev["apiVersion"], rev["kind"]))
        resp = body.get("response")
        if not isinstance(resp, dict) or resp.get("uid") != rev["request"]["uid"]:
            raise AssertionError("response.uid does not match request.uid: %r" % (body,))
        decode_patch(resp)
        return resp

    def stop(self):
        """Stop the server; returns its exit code. Sanitizer reports → AssertionError."""
        if self.process is None:
            return None
        rc = self.process.stop()
        if self.process.sanitizer_report():
            raise AssertionError(
                self.process.sanitizer_failure("sanitizer report from the webhook"))
        return rc


class Env:
    """A throwaway world: temp dir, certs, API server (HTTPS, token), kubeconfig, webhook.

        env = harness.Env(jobs=[harness.load_job("mpi-job")])
        self.addCleanup(env.close)
        env.start()
        job = env.jobs[0]                 # as stored by the API server (real uid)
        pod = harness.build_pod(job, "mpimaster", 0)
        resp = env.webhook.admit(harness.review(pod, "default"))

    start_webhook=False starts only the API server (and certs/kubeconfig); webhook_exe
    replaces $BUILD/volcano-plugin-webhook (it is run as `EXE serve FLAGS...`).
    close() stops everything that was started and removes the directory (kept when
    KEEP_TEST_DIRS is set in the environment).
    """

    def __init__(self, jobs=(), objects=(), webhook_args=(), start_webhook=True,
                 apiserver_tls=True, token="test-token", webhook_exe=None):
        self.webhook_exe = webhook_exe
        self.jobs_in = list(jobs)
        self.objects_in = list(objects)
        self.webhook_args = list(webhook_args)
        self.start_webhook = start_webhook
        self.apiserver_tls = apiserver_tls
        self.token = token
        self.dir = None
        self.api = None
        self.webhook = None
        self.certs = None
        self.kubeconfig = None
        self.jobs = []

    def start(self):
        try:
            self.dir = tempfile.mkdtemp(prefix="vpw-it-")
            self.api = ApiServer(self.dir, tls=self.apiserver_tls, token=self.token).start()
            if self.objects_in:
                self.api.create_objects(self.objects_in)
            if self.jobs_in:
                self.jobs = self.api.create_objects(self.jobs_in)
            self.kubeconfig = write_kubeconfig(
                os.path.join(self.dir, "kubeconfig"), self.api.url, self.api.ca_file,
                self.token)
            self.certs = make_certs(os.path.join(self.dir, "webhook-certs"))
            if self.start_webhook:
                self.start_webhook_now()
        except BaseException:
            self.close()
            raise
        return self

    def start_webhook_now(self, extra_args=None):
        self.webhook = Webhook(self.dir, self.certs, self.kubeconfig, exe=self.webhook_exe,
                               extra_args=self.webhook_args if extra_args is None
                               else extra_args)
        self.webhook.start()
        return self.webhook

    def close(self):
        errors = []
        for part in (self.webhook, self.api):
            if part is None:
                continue
            try:
                part.stop()
            except AssertionError as e:
                errors.append(str(e))
        self.webhook = self.api = None
        if self.dir and not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None
        if errors:
            raise AssertionError("\n".join(errors))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False


# ---------------------------------------------------------------- Service stand-in

class RoundRobinProxy:
    """A TCP proxy on 127.0.0.1 in front of several webhook replicas, as a Service spreads
    connections over its endpoints: each new client connection goes to the next backend
    port in turn and stays there (TLS passes through untouched, so a kept-alive
    connection keeps its replica, as it does behind kube-proxy).

    A backend that refuses the connection (a killed replica whose endpoint is gone) is
    skipped for the next one; when every backend refuses, the client connection is closed.
    When a backend closes or resets its side, the client's side is closed too, so the
    client sees what it would see through a Service: the connection dropped.

    backends: list of ports on 127.0.0.1. start() returns self, with .port set; stop()
    closes the listener and every open connection. Counters (read any time):
    connections[i] (accepted for backend i), refused (backend connects that failed).
    backend_of(client_port) is the backend index a client connection from that local port
    was given (None if unknown), so a client can tell which replica answered it.
    asyncio in one daemon thread; Python standard library only.
    """

    def __init__(self, backends):
        self.backends = list(backends)
        self.port = None
        self.connections = [0] * len(self.backends)
        self.refused = 0
        self._next = 0
        self._by_client = {}
        self._loop = None
        self._server = None
        self._thread = None
        self._writers = set()

    def start(self):
        import asyncio
        import threading
        ready = threading.Event()
        failure = []

        def run():
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            try:
                self._server = self._loop.run_until_complete(asyncio.start_server(
                    self._client, "127.0.0.1", 0, backlog=4096))
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as e:  # reported to start()
                failure.append(e)
                ready.set()
                return
            ready.set()
            self._loop.run_forever()
            self._loop.close()

        self._thread = threading.Thread(target=run, name="rr-proxy", daemon=True)
        self._thread.start()
        ready.wait(startup_timeout())
        if failure or self.port is None:
            raise AssertionError("proxy did not start: %r" % (failure,))
        return self

    def backend_of(self, client_port):
        return self._by_client.get(client_port)

    async def _client(self, reader, writer):
        import asyncio
        peer = writer.get_extra_info("peername")
        backend = None
        for _ in range(len(self.backends)):
            i = self._next % len(self.backends)
            self._next += 1
            try:
                breader, bwriter = await asyncio.open_connection("127.0.0.1", self.backends[i])
            except OSError:
                self.refused += 1
                continue
            backend = i
            break
        if backend is None:
            writer.close()
            return
        self.connections[backend] += 1
        self._by_client[peer[1]] = backend
        self._writers.update((writer, bwriter))

        async def pipe(src, dst):
            try:
                while True:
                    data = await src.read(65536)
                    if not data:
                        break
                    dst.write(data)
                    await dst.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                # one side ended: drop both, as a Service's connection dies with its pod
                writer.close()
                bwriter.close()

        await asyncio.gather(pipe(reader, bwriter), pipe(breader, writer))
        self._writers.difference_update((writer, bwriter))

    def stop(self):
        if self._loop is None or self._thread is None:
            return

        def shutdown():
            if self._server is not None:
                self._server.close()
            for w in list(self._writers):
                w.close()
            self._loop.call_later(0.05, self._loop.stop)

        self._loop.call_soon_threadsafe(shutdown)
        self._thread.join(10)
        self._thread = None
