# SPDX-License-Identifier: Apache-2.0
"""test_scale.py - three replicas behind one address through a burst of one Job's pods,
with the Lease holder killed half way (spec §3.2, §5.2, D9-D12).

The real binary three times against the test API server (tests/apiserver.py), behind
harness.RoundRobinProxy (the Service stand-in: one replica per new connection, in turn).
One Volcano Job of N pods (mpi-job: 1 master and N-1 workers; ssh and svc, so a Secret,
a ConfigMap, a Service and a NetworkPolicy) is created, then its N AdmissionReviews are
sent through the proxy, either paced at the rate a busy controller creates pods or all at
once from many kept-alive connections. When half are answered the Lease holder gets
SIGKILL (no release: the Lease must expire) or SIGTERM (drained, then released), and a
second Job is created at once.

What must hold:
- every review answered 200, allowed, with exactly the patch one replica gives for the
  same review when nothing else happens (and that patch is `render --review`'s for a
  sample of the pods, whose patched pods have the svc plugin's DNS name and pass the pod
  schema);
- a client retries only what kube-apiserver retries: a request whose connection was
  dropped before any answer (the killed replica's connections);
- after the takeover every Job has its auxiliary objects exactly once: the big Job's are
  the ones made before the kill (same uids, ConfigMap data exact, the <job>-ssh Secret's
  data identical), none was created or deleted again, nothing else exists; the Job
  created meanwhile gets its objects once, from whoever leads: the new holder after
  SIGKILL, the old one while it drains after SIGTERM (it leads until it releases);
- the new holder acquired the Lease within what the protocol allows (a follower tries
  every retry period plus up to 1.2 of it, as client-go): after a kill, a lease duration
  plus two such gaps after the old holder's last renewal (seen at one try, taken at the
  first try after it expired); after a release, one gap.

Scenario is the whole run with its figures; bench/scale.py runs it with N=10,000 and
500 connections and writes bench/RESULTS.md. Here it is small (N=300, 50 connections,
3 s leases). Waits poll with deadlines; the only times compared are the Lease's own
(acquireTime, renewTime) and the replicas' log times.
"""

import base64
import datetime
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_reconcile import (Cluster, cm_data, expected_objects, strip,  # noqa: E402
                            wait_for)

NS = "scale"
BIG = "mpi-job"
LATE = "late-job"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/vpw-system/leases/volcano-plugin-webhook"
AUX = ("configmaps", "secrets", "services", "networkpolicies")
ATTEMPTS = 5  # per review, each after a dropped connection
WAIT_OBJECTS = 60.0  # seconds: the late Job's objects, made by whoever leads
TRY_JITTER = 2.2  # longest gap between a follower's tries, in retry periods
SLACK = 1.0   # seconds on top of the protocol bound: a try's own GET and PUT on a busy machine


def parse_micro(ts):
    """A Lease MicroTime (2026-11-30T04:05:06.123456Z) as seconds since the epoch."""
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def seconds(flag_value):
    """"15s" → 15.0 (the whole-second durations of the --leader-elect-* flags)."""
    if not flag_value.endswith("s"):
        raise ValueError("want whole seconds: %r" % flag_value)
    return float(flag_value[:-1])


class Answer:
    """What the client got for one review: the HTTP status and body of the last attempt,
    the replica (proxy backend index) that answered it, how many attempts it took, and
    the time from sending to the whole answer of the attempt that got it."""

    __slots__ = ("status", "body", "replica", "attempts", "latency", "error", "done_at")

    def __init__(self):
        self.status = self.body = self.replica = self.error = None
        self.attempts = 0
        self.latency = self.done_at = None


class Scenario:
    """One run: API server, 3 replicas, proxy, the big Job, the burst, the kill, checks.

    n pods (1 master, n-1 workers), conns client connections; rate pods per second
    (None: all at once, every connection opened first and released together); sig the
    signal for the Lease holder. lease/renew/retry: the --leader-elect-* durations;
    resync the --resync-period. run() returns self with the figures filled; problems()
    lists every broken expectation as text (empty when all hold). close() stops
    everything (also after a failure half way).
    """

    def __init__(self, n, conns, rate, sig, lease="3s", renew="2s", retry="1s",
                 resync="2s", replicas=3, say=None):
        self.n, self.conns, self.rate, self.sig = n, conns, rate, sig
        self.lease, self.renew, self.retry, self.resync = lease, renew, retry, resync
        self.replica_count = replicas
        self.say = say or (lambda msg: None)
        self.env = self.proxy = None
        self.replicas = []
        self.issues = []
        self.figures = {}

    # ------------------------------------------------------------ set-up

    def args(self):
        return ["--leader-elect-resource-namespace=vpw-system",
                "--leader-elect-lease-duration=" + self.lease,
                "--leader-elect-renew-deadline=" + self.renew,
                "--leader-elect-retry-period=" + self.retry,
                "--resync-period=" + self.resync, "--shutdown-grace=6s",
                "--max-connections=2000", "-v", "3"]

    def start(self):
        self.env = harness.Env(start_webhook=False)
        self.env.start()
        self.api = self.env.api
        self.c = Cluster(self.api)
        for k in range(self.replica_count):
            d = os.path.join(self.env.dir, "replica%d" % k)
            os.makedirs(d)
            w = harness.Webhook(d, self.env.certs, self.env.kubeconfig, extra_args=self.args())
            self.replicas.append(w.start())
        self.proxy = harness.RoundRobinProxy([w.port for w in self.replicas]).start()
        self.hostname = self.replicas[0].server_hostname
        self.context = harness.https_context(self.env.certs["ca.crt"])

    def close(self):
        if self.proxy is not None:
            self.proxy.stop()
        errors = []
        for w in self.replicas:
            try:
                w.stop()
            except AssertionError as e:
                errors.append(str(e))
        if self.env is not None:
            self.env.close()
        if errors:
            raise AssertionError("\n".join(errors))

    def holder(self):
        status, lease = self.api.get(LEASE)
        return lease if status == 200 else None

    def led(self, w, identity):
        """Whether replica w logged that it leads as identity and reconciles."""
        evs = harness_log_events(w)
        return (any(e.get("msg") == "leader: leading" and e.get("identity") == identity
                    for e in evs)
                and any(e.get("msg") == "reconcile: leading, reconciling" for e in evs))

    def leader(self):
        """(replica index, Lease) once exactly one replica leads as the Lease's holder."""
        def one():
            lease = self.holder()
            who = lease and lease["spec"].get("holderIdentity")
            got = [i for i, w in enumerate(self.replicas) if who and w.process.alive()
                   and self.led(w, who)]
            return (got[0], lease) if len(got) == 1 else None
        return wait_for(one, "one leader", timeout=harness.startup_timeout() + 2 * seconds(
            self.lease))

    def big_job(self):
        def scale(job):
            next(t for t in job["spec"]["tasks"] if t["name"] == "mpiworker")[
                "replicas"] = self.n - 1
        return self.c.create_job(BIG, NS, mutate=scale)

    def aux_objects(self):
        """{(resource, name): stored object} of every auxiliary object in NS."""
        return {(k, o["metadata"]["name"]): o for k in AUX for o in self.c.items(NS, k)}

    # ------------------------------------------------------------ admissions

    def connection(self, port=None):
        """A connected HTTPS connection to the proxy (or a replica's port), with
        TCP_NODELAY as Go's net/http has it: http.client writes the headers and the body
        apart, and Nagle would hold the body for the server's delayed ACK (40 ms)."""
        conn = harness._PinnedHTTPSConnection("127.0.0.1", port or self.proxy.port,
                                              self.hostname, self.context, 30)
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def post(self, conn, data):
        conn.request("POST", harness.WEBHOOK_PATH + "?timeout=10s", body=data, headers={
            "Content-Type": "application/json", "Accept": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read(), resp.will_close

    def reference(self, bodies, replica):
        """The patch (decoded ops) one replica gives for every review, asked directly on
        4 kept-alive connections while nothing else happens."""
        out = [None] * len(bodies)
        nxt = iter(range(len(bodies)))
        lock = threading.Lock()

        def work():
            conn = self.connection(self.replicas[replica].port)
            try:
                while True:
                    with lock:
                        k = next(nxt, None)
                    if k is None:
                        return
                    status, raw, close = self.post(conn, bodies[k])
                    if status == 200:
                        out[k] = harness.decode_patch(json.loads(raw))
                    if close:
                        conn.close()
                        conn = self.connection(self.replicas[replica].port)
            finally:
                conn.close()
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out

    def render_check(self, job, reviews, reference, sample):
        """`render -f JOB --review R` for the sample indices: its patch must be the
        reference's. Returns the problems."""
        path = os.path.join(self.env.dir, "big-job.json")
        with open(path, "w") as f:
            json.dump(job, f)
        bad = []
        for k in sample:
            rpath = os.path.join(self.env.dir, "review-%d.json" % k)
            with open(rpath, "w") as f:
                json.dump(reviews[k], f)
            r = subprocess.run([harness.binary(), "render", "-f", path, "--review", rpath],
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                bad.append("render --review of pod %d: exit %d %s" % (k, r.returncode,
                                                                      r.stderr))
                continue
            if harness.decode_patch(json.loads(r.stdout)) != reference[k]:
                bad.append("pod %d: the replica's patch is not render --review's" % k)
        return bad

    def sample_check(self, pods, patches):
        """The sample's patched pods: each the DNS name the svc plugin gives (hostname
        = pod name, subdomain = Job name) and valid for the pod schema. Returns the
        problems."""
        bad, patched = [], []
        for pod, ops in zip(pods, patches):
            p = harness.apply_patch(pod, {"patch": base64.b64encode(
                json.dumps(ops or []).encode()).decode(), "patchType": "JSONPatch"})
            patched.append(p)
            got = (p["spec"].get("hostname"), p["spec"].get("subdomain"))
            if got != (pod["metadata"]["name"], BIG):
                bad.append("%s: hostname/subdomain %r" % (pod["metadata"]["name"], got))
        try:
            harness.validate_pods(patched)
        except AssertionError as e:
            bad.append(str(e))
        return bad

    def burst(self, bodies, on_half):
        """Send every body through the proxy (self.conns connections, self.rate); calls
        on_half() from a client thread once half are answered. Returns [Answer]."""
        answers = [Answer() for _ in bodies]
        lock = threading.Lock()
        state = {"next": 0, "done": 0}
        half = threading.Event()
        go = threading.Barrier(self.conns + 1, timeout=120)  # never a hang
        t0 = [0.0]

        def take():
            with lock:
                k = state["next"]
                state["next"] += 1
            return k if k < len(bodies) else None

        def finished():
            with lock:
                state["done"] += 1
                reached = state["done"] == len(bodies) // 2
            if reached:
                half.set()

        def open_conn():
            conn = self.connection()
            return conn, self.proxy.backend_of(conn.sock.getsockname()[1])

        def work():
            conn = replica = None
            if self.rate is None:  # all at once: the connections exist before the burst
                try:
                    conn, replica = open_conn()
                except (OSError, ssl.SSLError):
                    conn = None
            go.wait()
            try:
                while True:
                    k = take()
                    if k is None:
                        return
                    a = answers[k]
                    if self.rate is not None:
                        delay = t0[0] + k / self.rate - time.monotonic()
                        if delay > 0:
                            time.sleep(delay)
                    while a.attempts < ATTEMPTS:
                        a.attempts += 1
                        try:
                            if conn is None:
                                conn, replica = open_conn()
                            sent = time.monotonic()
                            status, raw, close = self.post(conn, bodies[k])
                            a.latency = time.monotonic() - sent
                            a.status, a.body, a.replica = status, raw, replica
                            a.done_at = time.monotonic()
                            if close:
                                conn.close()
                                conn = None
                            break
                        except (OSError, ssl.SSLError, http.client.HTTPException) as e:
                            # dropped before an answer: kube-apiserver calls again
                            a.error = "%s: %s" % (type(e).__name__, e)
                            if conn is not None:
                                conn.close()
                            conn = None
                            time.sleep(0.05 * a.attempts)
                    finished()
            finally:
                if conn is not None:
                    conn.close()

        threads = [threading.Thread(target=work, daemon=True) for _ in range(self.conns)]
        for t in threads:
            t.start()
        def kill():
            half.wait()
            try:
                on_half()
            except BaseException as e:  # reported by run(), which finds no new holder
                self.kill_error = "%s: %s" % (type(e).__name__, e)
        self.kill_error = None
        killer = threading.Thread(target=kill, daemon=True)
        killer.start()
        go.wait()
        t0[0] = time.monotonic()
        for t in threads:
            t.join()
        self.figures["burst_s"] = time.monotonic() - t0[0]
        self.t0 = t0[0]
        killer.join(60)
        return answers

    # ------------------------------------------------------------ the run

    def run(self):
        f = self.figures
        self.start()
        lead, lease = self.leader()
        old = lease["spec"]["holderIdentity"]
        self.say("leader: replica %d (%s)" % (lead, old))
        job = self.big_job()
        self.c.wait_objects(job)
        job = self.api.job(NS, BIG)
        before = self.aux_objects()
        ssh_before = before[("secrets", BIG + "-ssh")]["data"]
        for w in self.replicas:  # every replica has listed the Jobs
            wait_for(lambda w=w: self.ready(w), "/readyz of a replica")
        pods = harness.job_pods(job)
        reviews = [harness.review(p, NS) for p in pods]
        bodies = [json.dumps(r, separators=(",", ":")).encode() for r in reviews]
        ref_replica = (lead + 1) % len(self.replicas)
        t = time.monotonic()
        reference = self.reference(bodies, ref_replica)
        f["reference_s"] = time.monotonic() - t
        missing = [k for k, p in enumerate(reference) if not p]
        if missing:
            self.issues.append("no reference patch for pods %s" % missing[:10])
        sample = sorted({0, 1, len(pods) // 2, len(pods) - 1})
        self.issues += self.render_check(job, reviews, reference, sample)
        self.issues += self.sample_check([pods[k] for k in sample],
                                         [reference[k] for k in sample])
        self.say("reference: %d patches from replica %d, render agrees on pods %s"
                 % (len(reference), ref_replica, sample))

        kill = {}

        def on_half():
            self.api.clear_requests()
            w = self.replicas[lead]
            kill["t"] = time.monotonic()
            kill["wall"] = time.time()
            w.process.proc.send_signal(self.sig)
            if self.sig == signal.SIGKILL:
                w.process.proc.wait()
            late = self.c.create_job("pytorch-job", NS, mutate=lambda j: j["metadata"]
                                     .update(name=LATE))
            kill["late"] = late

            def late_objects():  # whoever leads makes them; timed from the signal
                want = list(expected_objects(late))
                wait_for(lambda: all(self.c.get(NS, k, n) for k, n in want),
                         "objects of %s/%s" % (NS, LATE), timeout=WAIT_OBJECTS)
                kill["late_objects_after"] = time.monotonic() - kill["t"]
            kill["late_watch"] = threading.Thread(target=late_objects, daemon=True)
            kill["late_watch"].start()
            if self.sig == signal.SIGKILL:  # dead: the Lease keeps its last renewal
                kill["last_renew"] = parse_micro(self.holder()["spec"]["renewTime"])

            def taken():
                ls = self.holder()
                h = ls["spec"].get("holderIdentity") if ls else None
                return ls if h and h != old else None
            new = wait_for(taken, "a new Lease holder", timeout=60)
            kill["new_holder_after"] = time.monotonic() - kill["t"]
            kill["lease"] = new
            if self.sig != signal.SIGKILL:
                # drained, then released (holder "", renewTime now): its log says when
                rel = wait_for(lambda: [e for e in harness_log_events(w)
                                        if e.get("msg", "").startswith("leader: released")],
                               "the old holder's release")
                kill["last_renew"] = parse_micro(rel[0]["time"])
                kill["released_after"] = kill["last_renew"] - kill["wall"]

        answers = self.burst(bodies, on_half)
        if "lease" not in kill:
            raise AssertionError("the Lease holder was not replaced: %s %r"
                                 % (self.kill_error, kill))
        self.check_answers(answers, reference, kill)

        # the Job created meanwhile gets its objects (from the old holder while it drains
        # after SIGTERM, from the new one after SIGKILL)
        late = kill["late"]
        kill["late_watch"].join(WAIT_OBJECTS)
        if "late_objects_after" not in kill:
            raise AssertionError("objects of %s/%s never made" % (NS, LATE))
        f["late_objects_after"] = kill["late_objects_after"]
        made_by = [i for i, w in enumerate(self.replicas) if any(
            e.get("msg") == "reconcile: created" and e.get("job") == NS + "/" + LATE
            for e in harness_log_events(w))]
        f["late_made_by"] = made_by
        new = kill["lease"]
        new_id = new["spec"]["holderIdentity"]
        leaders = [i for i, w in enumerate(self.replicas)
                   if i != lead and self.led(w, new_id)]
        if len(leaders) != 1:
            self.issues.append("new holder %s is not exactly one live replica: %s"
                               % (new_id, leaders))
        else:
            # the new holder's reconcile side starts: the first thing it does as leader
            started = [e for e in harness_log_events(self.replicas[leaders[0]])
                       if e.get("msg") == "reconcile: leading, reconciling"]
            f["new_leader_reconciling_after"] = parse_micro(started[-1]["time"]) - kill["wall"]
        if len(made_by) != 1:
            self.issues.append("the objects of %s were created by replicas %s, want one"
                               % (LATE, made_by))
        elif self.sig == signal.SIGKILL and len(leaders) == 1 and made_by != leaders:
            self.issues.append("the objects of %s were created by replica %d, not by the "
                               "new holder %d" % (LATE, made_by[0], leaders[0]))
        self.check_lease(lease, new, kill)
        # a resync of the new leader later, the objects are still exactly these
        time.sleep(2 * seconds(self.resync) + 0.5)
        self.check_objects(job, late, before, ssh_before)
        if self.sig == signal.SIGTERM:
            rc = self.replicas[lead].process.proc.wait(30)
            if rc != 0:
                self.issues.append("SIGTERM: replica exited %r" % rc)
        f["killed"] = lead
        f["new_leader"] = leaders[0] if len(leaders) == 1 else None
        return self

    def ready(self, w):
        conn = w.connection(timeout=5)
        try:
            conn.request("GET", "/readyz")
            resp = conn.getresponse()
            resp.read()
            return resp.status == 200
        except (OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()

    # ------------------------------------------------------------ checks

    def check_answers(self, answers, reference, kill):
        f = self.figures
        failed, wrong = [], []
        for k, a in enumerate(answers):
            if a.status != 200:
                failed.append((k, a.status, a.error, (a.body or b"")[:200]))
                continue
            body = json.loads(a.body)
            resp = body.get("response") or {}
            if not resp.get("allowed") or resp.get("warnings"):
                failed.append((k, "denied or warned", resp.get("status"), resp.get("warnings")))
                continue
            if harness.decode_patch(resp) != reference[k]:
                wrong.append(k)
        if failed:
            self.issues.append("%d failed admissions, first: %r" % (len(failed), failed[:3]))
        if wrong:
            self.issues.append("%d admissions with a patch unlike the reference: %s"
                               % (len(wrong), wrong[:10]))
        ok = [a for a in answers if a.status == 200]
        per = {}
        for a in ok:
            per.setdefault(a.replica, []).append(a.done_at)
        f["answered"] = len(ok)
        f["failed"] = len(failed)
        f["wrong"] = len(wrong)
        f["retried"] = sum(1 for a in answers if a.attempts > 1)
        f["slowest_ms"] = max(a.latency for a in ok) * 1000 if ok else None
        lat = sorted(a.latency for a in ok)
        f["p50_ms"] = lat[len(lat) // 2] * 1000 if lat else None
        f["p99_ms"] = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else None
        f["per_replica"] = {}
        for r, times in sorted(per.items(), key=lambda x: (x[0] is None, x[0])):
            span = max(times) - self.t0
            f["per_replica"][r] = (len(times), len(times) / span if span > 0 else None)
        f["proxy_connections"] = list(self.proxy.connections)
        f["proxy_refused"] = self.proxy.refused
        f["new_holder_after"] = kill["new_holder_after"]

    def check_lease(self, old, new, kill):
        """The new holder's acquireTime against the old holder's last renewal."""
        f = self.figures
        gap = parse_micro(new["spec"]["acquireTime"]) - kill["last_renew"]
        f["acquire_gap_s"] = gap
        # a follower tries every retry period plus a jitter of up to 1.2 of it, as
        # client-go's JitterUntil (k8s/leader.c)
        tries = TRY_JITTER * seconds(self.retry)
        if self.sig == signal.SIGKILL:
            # it sees the last renewal at one of its tries, counts the lease duration
            # from then, and takes the Lease at its next try after that
            bound = seconds(self.lease) + 2 * tries
        else:  # released: the next try of a follower takes it
            bound = tries
        f["acquire_bound_s"] = bound
        if gap > bound + SLACK:
            self.issues.append("new holder acquired the Lease %.2f s after the old holder's "
                               "last renewal; the protocol allows %.1f s" % (gap, bound))
        want = old["spec"]["leaseTransitions"] + 1
        if new["spec"]["leaseTransitions"] != want:
            self.issues.append("leaseTransitions %r, want %d" % (
                new["spec"]["leaseTransitions"], want))

    def check_objects(self, job, late, before, ssh_before):
        after = self.aux_objects()
        want = sorted(list(expected_objects(job)) + list(expected_objects(late)))
        if sorted(after) != want:
            self.issues.append("objects in %s: %s, want %s" % (NS, sorted(after), want))
        for key, obj in before.items():
            now = after.get(key)
            if now is None:
                continue
            if now["metadata"]["uid"] != obj["metadata"]["uid"]:
                self.issues.append("%s/%s was made again (uid %s, was %s)" % (
                    key + (now["metadata"]["uid"], obj["metadata"]["uid"])))
        ssh = after.get(("secrets", BIG + "-ssh"))
        if ssh is not None and ssh["data"] != ssh_before:
            self.issues.append("the %s-ssh Secret's data changed" % BIG)
        cm = after.get(("configmaps", BIG + "-svc"))
        if cm is not None and cm.get("data") != cm_data(job):
            self.issues.append("the %s-svc ConfigMap's data is not the host list" % BIG)
        for key, want_obj in expected_objects(job).items():
            if want_obj is not None and key in after and strip(after[key]) != want_obj:
                self.issues.append("%s/%s differs from the expected object" % key)
        # after the kill, no create or delete of the big Job's objects
        touched = [(r["method"], r["path"]) for r in self.api.requests()
                   if r["method"] in ("POST", "DELETE") and BIG in r["path"]
                   and LATE not in r["path"]]
        if touched:
            self.issues.append("after the kill the big Job's objects were written: %s"
                               % touched[:10])
        self.figures["objects"] = len(after)

    def problems(self):
        return list(self.issues)


def harness_log_events(w):
    """The replica's JSON log lines as dicts."""
    out = []
    for line in w.process.log().splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict):
            out.append(ev)
    return out


class ScaleTest(unittest.TestCase):
    """The small version: 300 pods, 50 connections, 3 s leases."""

    N = 300
    CONNS = 50
    RATE = 150  # pods per second: a busy controller (kube-controller-manager: 20 qps)

    def scenario(self, **kw):
        if os.environ.get("SANITIZER"):  # a slower binary: leases it renews under load
            kw.update(lease="8s", renew="6s", retry="2s")
        s = Scenario(self.N, self.CONNS, **kw)
        self.addCleanup(s.close)
        return s.run()

    def test_paced_leader_sigkill(self):
        s = self.scenario(rate=self.RATE, sig=signal.SIGKILL)
        self.assertEqual(s.problems(), [])
        self.assertEqual((s.figures["answered"], s.figures["failed"], s.figures["wrong"]),
                         (self.N, 0, 0))
        self.assertEqual(s.figures["objects"], 4 + 3)
        # the killed replica answered before the kill, the two others after it
        self.assertEqual(len(s.figures["per_replica"]), 3)

    def test_all_at_once_leader_sigterm(self):
        s = self.scenario(rate=None, sig=signal.SIGTERM)
        self.assertEqual(s.problems(), [])
        self.assertEqual((s.figures["answered"], s.figures["failed"], s.figures["wrong"]),
                         (self.N, 0, 0))
        self.assertEqual(s.figures["objects"], 4 + 3)
        # every connection was opened before the burst, and the dropped ones again
        self.assertGreaterEqual(sum(s.figures["proxy_connections"]), self.CONNS)


if __name__ == "__main__":
    unittest.main()
