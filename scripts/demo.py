# SPDX-License-Identifier: Apache-2.0
"""demo.py - the webhook end to end, with no cluster.

Starts the test API server (tests/apiserver.py) loaded with the example Jobs of
the plugin guide (examples/), makes a CA and serving certificate with
`volcano-plugin-webhook gen-certs`, starts `volcano-plugin-webhook serve` over
TLS, and sends kube-apiserver-shaped AdmissionReviews for every pod of those
Jobs over HTTPS. For each pod it prints what the plugins gave it. Exit status 0
only when every review came back allowed and well-formed.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import harness  # noqa: E402

JOBS = ["mpi-job", "lm-mpi-job", "pytorch-job", "ray-cluster-job", "tensorflow-dist-mnist",
        "tensorflow-training"]


def env_text(e):
    if "value" in e:
        v = e["value"]
        return "%s=%s" % (e["name"], v if len(v) < 400 else v[:397] + "...")
    ref = (e.get("valueFrom") or {}).get("configMapKeyRef") or {}
    return "%s <- configmap %s key %s" % (e["name"], ref.get("name"), ref.get("key"))


def effective_plugins(job):
    """spec.plugins plus the implied svc/ssh (decision D1), in execution order (D2)."""
    order = ["ssh", "env", "svc", "tensorflow", "mpi", "pytorch", "hcclrank", "ray"]
    named = set(job["spec"].get("plugins") or {})
    implied = set()
    if named & {"tensorflow", "mpi", "pytorch", "ray"}:
        implied.add("svc")
    if "mpi" in named:
        implied.add("ssh")
    return ", ".join(p + (" (implied)" if p in implied - named else "")
                     for p in order if p in named | implied)


def added(before, after, key):
    """Entries of after[key] that before[key] lacks (by value)."""
    old = before.get(key) or []
    return [x for x in after.get(key) or [] if x not in old]


def describe(before, after):
    lines = []
    bs, as_ = before["spec"], after["spec"]
    for field in ("hostname", "subdomain"):
        if as_.get(field) != bs.get(field):
            lines.append("  %-9s %s" % (field + ":", as_.get(field)))
    for v in added(bs, as_, "volumes"):
        src = "configMap " + v["configMap"]["name"] if "configMap" in v else \
            "secret %s (mode %o)" % (v["secret"]["secretName"], v["secret"].get("defaultMode", 0o644)) \
            if "secret" in v else "?"
        lines.append("  volume    %s: %s" % (v["name"], src))
    for a in (after["metadata"].get("annotations") or {}).keys() - \
            (before["metadata"].get("annotations") or {}).keys():
        lines.append("  annotation %s=%s" % (a, after["metadata"]["annotations"][a]))
    for kind in ("initContainers", "containers"):
        old = {c["name"]: c for c in bs.get(kind) or []}
        for c in as_.get(kind) or []:
            b = old.get(c["name"], {})
            label = ("init " if kind == "initContainers" else "") + "container " + c["name"]
            lines.append("  %s%s" % (label, "" if c["name"] in old else " (added)"))
            for e in added(b, c, "env"):
                lines.append("    env     " + env_text(e))
            for m in added(b, c, "volumeMounts"):
                lines.append("    mount   %s at %s%s" % (m["name"], m["mountPath"],
                                                       " subPath " + m["subPath"] if "subPath" in m else ""))
            for p in added(b, c, "ports"):
                lines.append("    port    %s %d" % (p.get("name", ""), p["containerPort"]))
            if c.get("command") != b.get("command") and c["name"] in old:
                lines.append("    command %s" % c["command"])
    return lines


def main():
    jobs = [harness.load_job(name) for name in JOBS]
    failures = 0
    total = 0
    with harness.Env(jobs=jobs) as env:
        print("test API server at %s; webhook at https://127.0.0.1:%d/pods/mutate "
              "(TLS, certificate for %s)\n" % (env.api.url, env.webhook.port, harness.service_dns()))
        for job in env.jobs:
            print("== job %s/%s, plugins %s" % (job["metadata"]["namespace"], job["metadata"]["name"],
                                              effective_plugins(job)))
            for task, i in harness.pod_names(job):
                total += 1
                pod = harness.build_pod(job, task, i)
                rev = harness.review(pod, job["metadata"]["namespace"])
                try:
                    resp = env.webhook.admit(rev)
                    patched = harness.apply_patch(rev["request"]["object"], resp)
                except AssertionError as e:
                    failures += 1
                    print("-- pod %s: BAD ANSWER: %s" % (pod["metadata"]["name"], e))
                    continue
                ops = len(harness.decode_patch(resp) or [])
                verdict = "allowed" if resp["allowed"] else "DENIED: %s" % resp["status"]["message"]
                if not resp["allowed"]:
                    failures += 1
                print("-- pod %s: %s, %d patch ops" % (pod["metadata"]["name"], verdict, ops))
                for w in resp.get("warnings") or []:
                    print("  warning:  " + w)
                for line in describe(rev["request"]["object"], patched):
                    print(line)
            print()
    print("%d pods, %d allowed and well-formed, %d failed" % (total, total - failures, failures))
    return 0 if failures == 0 and total > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
