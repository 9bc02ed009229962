#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench.py - the measurements of `make bench` (started by bench/run, which installs the
tools and builds everything first).

Stages, each on 127.0.0.1 only, in one run on this machine:
  throughput  wrk (keep-alive, TLS) at 1, 16 and 128 connections against
              - the webhook (volcano-plugin-webhook serve), pods of the example Jobs with
                every plugin that fits them on,
              - nginx answering a fixed AdmissionReview answer of the webhook's size
                (the ceiling),
              - the webhook's own HTTP and TLS layer (webhook/server.c, run by
                bench/bench_transport) answering that same fixed answer: the most the
                webhook could do with a free admission; then, at 16 connections, with
                each answer spending each of SPINS_US µs of CPU first (an admission of that cost:
                what an admission may cost for each target rate, throughput_limits),
              - the Go standard-library webhook of bench/go-webhook and the webhook on
                the same pytorch+svc+env Jobs (the alternative).
  burst       one Job of 10,000 replicas, 500 AdmissionReviews at once.
  memory      RSS with 10,000 Jobs of 10 tasks in the test API server, and before/after
              BENCH_ADMISSIONS admissions; then the leak check: the bytes a glibc-malloc
              build holds (bench/live_heap.c preloaded) after a warm-up and after each of
              two runs of half as many admissions.
  reconcile   time until the auxiliary objects of 1,000 new Jobs exist, without and with
              ssh (an RSA key pair per Job), with the default --kube-api-qps 50 and
              unthrottled (--kube-api-qps 0), each against a fresh test API server; and
              bench_admission --keys (key generation on one core). When the binary has a
              reconcile side.
  callgrind   instructions per admission (bench/bench_admission under valgrind).
  connections what a connection costs: RSS with 1,000 and 10,000 idle TLS connections
              (handshake done, then silent), and the slowest of 30 reviews on new
              connections with 500 idle ones open (below --max-connections) and behind
              200 slowloris + 800 idle TLS connections at the default limit (the mix of
              tests/test_flood.py).
Then bench/RESULTS.md is written.

Env: BUILD (build), BENCH_DURATION (10 s per wrk run), BENCH_ADMISSIONS (1,000,000;
capped when unset, see memory_stage), BENCH_WORKDIR (scratch directory, made by
bench/run), BENCH_GO_BIN, BENCH_ADMISSION_BIN, BENCH_TRANSPORT_BIN, BENCH_GLIBC_WEBHOOK
and BENCH_LIVE_HEAP (built by bench/run), BENCH_RESULTS (bench/RESULTS.md), BENCH_STAGES
(names of the stages to run; all when unset), BENCH_COMMANDS (file with the build commands
bench/run ran), BENCH_BASELINE_BIN and BENCH_BASELINE (bench_admission built from another
revision, and that revision's name: its callgrind counts go beside this build's).
Processes are started through tests/harness.py (new session each, stopped by pid).
"""

import copy
import http.client
import json
import math
import os
import platform
import random
import re
import shlex
import shutil
import signal
import ssl
import socket
import subprocess
import sys
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(ROOT, "tests"))
import harness  # noqa: E402

LUA = os.path.join(BENCH, "rotate.lua")
DURATION = int(os.environ.get("BENCH_DURATION") or 10)
CONNECTIONS = [1, 16, 128]
# The admission costs (µs of CPU) bench_transport stands in for (transport_spin).
SPINS_US = [10, 20, 30, 40]
THREADS = 2
ADMISSIONS_DEFAULT = 1000000
ADMISSIONS_SET = bool(os.environ.get("BENCH_ADMISSIONS"))
ADMISSIONS = int(os.environ.get("BENCH_ADMISSIONS") or ADMISSIONS_DEFAULT)
MEMORY_BUDGET_S = 300      # longest the fixed-count memory run may take with the default
MEMORY_CAPPED_S = 240      # what it is cut to when it would take longer
WORK = os.environ.get("BENCH_WORKDIR") or "/tmp/vpw-bench"
RESULTS = os.environ.get("BENCH_RESULTS") or os.path.join(BENCH, "RESULTS.md")
# BENCH_STAGES="callgrind memory": run only these stages (while working on one figure;
# RESULTS.md then shows only them, so point BENCH_RESULTS elsewhere).
STAGES = (os.environ.get("BENCH_STAGES") or "").split()
NS = "default"

LOG = []


def say(msg=""):
    """Print a line and keep it for the summary in RESULTS.md."""
    print(msg, flush=True)
    LOG.append(msg)


# ---------------------------------------------------------------- Jobs and bodies

EXAMPLES = ["mpi-job", "lm-mpi-job", "pytorch-job", "ray-cluster-job",
            "tensorflow-dist-mnist", "tensorflow-training"]


def all_plugins(job):
    """Every plugin that fits the Job's tasks: ssh, env, svc always; the framework
    plugins and hcclrank where the Job has the tasks they look for."""
    tasks = {t["name"] for t in job["spec"]["tasks"]}
    p = job["spec"].setdefault("plugins", {})
    for name in ("ssh", "env", "svc"):
        p.setdefault(name, [])
    if {"mpimaster", "mpiworker"} <= tasks:
        p.setdefault("mpi", ["--master=mpimaster", "--worker=mpiworker", "--port=22"])
        p.setdefault("hcclrank", ["--master=mpimaster", "--worker=mpiworker"])
    if {"master", "worker"} <= tasks:
        p.setdefault("pytorch", ["--master=master", "--worker=worker", "--port=23456"])
        p.setdefault("hcclrank", [])
    if "ps" in tasks and "worker" in tasks:
        p.setdefault("tensorflow", [])
    if "head" in tasks:
        p.setdefault("ray", [])
    return job


def large_pytorch_job(name):
    """pytorch-job with a production-like template (GPU resources, env, probes, volumes,
    scheduling constraints): pods of 6-7 KiB, the upper half of the body sizes."""
    job = harness.load_job("pytorch-job")
    job["metadata"]["name"] = name
    job["metadata"].pop("uid", None)
    env = [{"name": k, "value": v} for k, v in [
        ("NCCL_DEBUG", "WARN"), ("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IB_DISABLE", "1"),
        ("OMP_NUM_THREADS", "8"), ("PYTHONUNBUFFERED", "1"), ("DATA_DIR", "/data/imagenet"),
        ("CHECKPOINT_DIR", "/checkpoints/resnet152"), ("HF_HOME", "/cache/huggingface"),
        ("TORCH_HOME", "/cache/torch"), ("WANDB_PROJECT", "resnet152-imagenet"),
        ("WANDB_ENTITY", "vision-research"), ("NCCL_ASYNC_ERROR_HANDLING", "1"),
        ("TORCH_DISTRIBUTED_DEBUG", "OFF"), ("CUDA_DEVICE_MAX_CONNECTIONS", "1"),
        ("LOG_LEVEL", "info"), ("EXPERIMENT_ID", "exp-2024-11-resnet152-lr0.1-bs256")]]
    env += [{"name": k, "valueFrom": {"fieldRef": {"fieldPath": p}}} for k, p in [
        ("POD_NAME", "metadata.name"), ("POD_IP", "status.podIP"),
        ("NODE_NAME", "spec.nodeName")]]
    for task in job["spec"]["tasks"]:
        spec = task["template"]["spec"]
        c = spec["containers"][0]
        c["image"] = "registry.example.com/ml/pytorch-train:2.4.1-cuda12.1-cudnn9"
        c["command"] = ["torchrun"]
        c["args"] = ["--nnodes=8", "--nproc-per-node=4", "/workspace/train.py",
                     "--arch=resnet152", "--epochs=90", "--batch-size=256", "--lr=0.1",
                     "--data=/data/imagenet", "--checkpoint-dir=/checkpoints/resnet152"]
        c["workingDir"] = "/workspace"
        c["env"] = copy.deepcopy(env)
        c["resources"] = {"limits": {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "4"},
                          "requests": {"cpu": "12", "memory": "96Gi"}}
        c["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"},
                             {"name": "data", "mountPath": "/data", "readOnly": True},
                             {"name": "checkpoints", "mountPath": "/checkpoints"},
                             {"name": "cache", "mountPath": "/cache"}]
        c["livenessProbe"] = {"exec": {"command": ["cat", "/tmp/healthy"]},
                              "initialDelaySeconds": 60, "periodSeconds": 30}
        c["securityContext"] = {"capabilities": {"add": ["IPC_LOCK", "SYS_RESOURCE"]}}
        spec["containers"].append({
            "name": "metrics-exporter", "image": "registry.example.com/ops/dcgm-exporter:3.3.5",
            "args": ["--collectors=/etc/dcgm/counters.csv", "--address=:9400"],
            "ports": [{"name": "metrics", "containerPort": 9400}],
            "env": [{"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "resources": {"limits": {"cpu": "200m", "memory": "256Mi"}},
            "volumeMounts": [{"name": "cache", "mountPath": "/cache", "readOnly": True}],
            "readinessProbe": {"httpGet": {"path": "/health", "port": 9400},
                               "periodSeconds": 15}})
        spec["volumes"] = [
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "imagenet",
                                                       "readOnly": True}},
            {"name": "checkpoints", "persistentVolumeClaim": {"claimName": "ckpt-resnet152"}},
            {"name": "cache", "emptyDir": {}}]
        spec["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                                "topology.kubernetes.io/zone": "zone-a"}
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists",
                                "effect": "NoSchedule"}]
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"volcano.sh/job-name": name}},
                "topologyKey": "kubernetes.io/hostname"}}]}}
        spec["priorityClassName"] = "high-priority"
        if task["name"] == "worker":
            task["replicas"] = 7
    return fill_job(job)


def fill_job(job):
    """What load_job fills (namespace, uid, queue, status) for a Job built in memory."""
    path = os.path.join(WORK, "job-%s.json" % job["metadata"]["name"])
    with open(path, "w") as f:
        json.dump(job, f)
    return harness.load_job(path)


def bench_jobs():
    """The Jobs of the throughput runs: (all-plugins set, pytorch+svc+env set)."""
    full = [all_plugins(harness.load_job(n)) for n in EXAMPLES]
    full.append(all_plugins(large_pytorch_job("pytorch-large")))
    pt = []
    for src, name in ((harness.load_job("pytorch-job"), "pt-job"),
                      (large_pytorch_job("pt-large"), "pt-large")):
        job = copy.deepcopy(src)
        job["metadata"]["name"] = name
        job["metadata"].pop("uid", None)
        job["spec"]["plugins"] = {"pytorch": ["--master=master", "--worker=worker",
                                              "--port=23456"], "svc": [], "env": []}
        pt.append(fill_job(job))
    return full, pt


def compact(obj):
    """JSON as kube-apiserver writes it (Go encoding/json: no spaces)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def reviews_for(jobs, seed):
    """[(pod, review)] for every pod of the stored Jobs, in a fixed shuffled order."""
    out = []
    for job in jobs:
        for task, i in harness.pod_names(job):
            pod = harness.build_pod(job, task, i)
            out.append((pod, harness.review(pod, job["metadata"]["namespace"])))
    random.Random(seed).shuffle(out)
    return out


def write_bodies(path, pairs):
    with open(path, "w", encoding="utf-8") as f:
        for _, rev in pairs:
            f.write(compact(rev) + "\n")
    return [len(compact(rev).encode()) for _, rev in pairs]


def size_text(sizes):
    return "%d bodies, %.1f-%.1f KiB (mean %.1f KiB)" % (
        len(sizes), min(sizes) / 1024, max(sizes) / 1024, sum(sizes) / len(sizes) / 1024)


# ---------------------------------------------------------------- processes

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_tcp(port, proc, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise AssertionError("%s exited:\n%s" % (proc.name, proc.log()))
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("%s not listening on %d:\n%s" % (proc.name, port, proc.log()))


def rss_kib(pid):
    """(VmRSS, VmHWM) of pid in KiB, from /proc/PID/status."""
    vals = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                vals[k] = int(v.split()[0])
    return vals.get("VmRSS", 0), vals.get("VmHWM", 0)


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])   # utime + stime


def settle_cpu(pid, timeout=60):
    """Wait until the process uses under 5% of a core over half a second (start-up work
    such as the reconcile side's first keys is over). Returns the seconds waited."""
    t0 = time.monotonic()
    hz = os.sysconf("SC_CLK_TCK")
    last = cpu_ticks(pid)
    while time.monotonic() - t0 < timeout:
        time.sleep(0.5)
        now = cpu_ticks(pid)
        if (now - last) / hz < 0.025:
            break
        last = now
    return time.monotonic() - t0


def post_raw(conn, body):
    conn.request("POST", harness.WEBHOOK_PATH + "?timeout=10s", body=body,
                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    resp = conn.getresponse()
    return resp.status, resp.read()


def check_answers(name, connect, pairs):
    """Send every review once; each must be HTTP 200, allowed, with a patch that applies.
    Returns ([patched pod], [answer size])."""
    pods, sizes = [], []
    conn = connect()
    try:
        for pod, rev in pairs:
            status, raw = post_raw(conn, compact(rev).encode())
            if status != 200:
                raise AssertionError("%s: HTTP %d for pod %s: %s" % (
                    name, status, pod["metadata"]["name"], raw[:300]))
            body = json.loads(raw)
            resp = body.get("response") or {}
            if body.get("apiVersion") != rev["apiVersion"] or \
                    resp.get("uid") != rev["request"]["uid"] or resp.get("allowed") is not True:
                raise AssertionError("%s: bad answer for pod %s: %s" % (
                    name, pod["metadata"]["name"], raw[:500]))
            if harness.decode_patch(resp) is None:
                raise AssertionError("%s: no patch for pod %s" % (name, pod["metadata"]["name"]))
            pods.append(harness.apply_patch(pod, resp))
            sizes.append(len(raw))
    finally:
        conn.close()
    return pods, sizes


def api_job_reads(api):
    """Job GETs/LISTs and watches in the test API server's request log."""
    reqs = api.requests()
    gets = sum(1 for r in reqs if r["method"] == "GET" and "/jobs/" in r["path"])
    lists = sum(1 for r in reqs if r["method"] == "GET" and r["path"].endswith("/jobs")
                and "watch" not in r["query"])
    watches = sum(1 for r in reqs if "watch=" in r["query"])
    return gets, lists, watches


# ---------------------------------------------------------------- wrk

def wrk(url, bodies, conns, duration, limit=0):
    """One wrk run (keep-alive, TLS); returns the BENCH_RESULT dict plus rps/cmd."""
    threads = min(THREADS, conns)
    cmd = ["wrk", "-t", str(threads), "-c", str(conns), "-d", "%ds" % duration, "--latency",
           "--timeout", "10s", "-s", LUA, url]
    done = os.path.join(WORK, "wrk-done-")
    for k in range(1, threads + 1):
        if os.path.exists(done + str(k)):
            os.remove(done + str(k))
    env = dict(os.environ, BENCH_BODIES=bodies, BENCH_DONE=done,
               BENCH_LIMIT=str(int(math.ceil(limit / threads)) if limit else 0))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        if limit:
            # fixed count: every thread marks its end; SIGINT makes wrk report at once
            while proc.poll() is None and not all(
                    os.path.exists(done + str(k)) for k in range(1, threads + 1)):
                time.sleep(0.05)
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=duration + 120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    m = re.search(r"^BENCH_RESULT (\{.*\})$", out, re.M)
    if proc.returncode != 0 or not m:
        raise AssertionError("wrk failed (%d): %s %s" % (proc.returncode, out, err))
    res = json.loads(m.group(1))
    res["rps"] = res["requests"] / (res["duration_us"] / 1e6)
    res["errors"] = sum(res[k] for k in ("connect_errors", "read_errors", "write_errors",
                                         "status_errors", "timeouts"))
    res["cmd"] = "BENCH_BODIES=%s %s%s" % (os.path.basename(bodies),
                                          "BENCH_LIMIT=%s " % env["BENCH_LIMIT"] if limit else "",
                                          " ".join(cmd).replace(BENCH, "bench"))
    return res


def fmt_ms(us):
    return "%.3f" % (us / 1000.0)


def wrk_series(label, url, bodies, table):
    """wrk at every connection count; fills table[label][conns]."""
    table[label] = {}
    for c in CONNECTIONS:
        res = wrk(url, bodies, c, DURATION)
        table[label][c] = res
        say("  %-22s c=%-3d %9.0f req/s  p50 %s ms  p99 %s ms  p99.9 %s ms  errors %d  denied %d"
            % (label, c, res["rps"], fmt_ms(res["p50_us"]), fmt_ms(res["p99_us"]),
               fmt_ms(res["p999_us"]), res["errors"], res["denied"]))
    return table[label]


# ---------------------------------------------------------------- stages

class Bench:
    def __init__(self):
        self.r = {"failures": []}
        self.procs = []
        self.api = None
        self.certs = None
        self.kubeconfig = None

    def start(self, proc):
        self.procs.append(proc)
        return proc.start()

    def stop_all(self):
        for p in reversed(self.procs):
            try:
                p.stop()
            except Exception:  # noqa: BLE001 - best effort at exit
                pass
        self.procs = []

    # -- connections
    def open_idle_tls(self, wh, n, into):
        """n verified TLS connections to wh, handshake done, appended to into."""
        ctx = harness.https_context(self.certs["ca.crt"])
        ctx.set_alpn_protocols(["http/1.1"])
        for _ in range(n):
            into.append(harness.tls_handshake(wh.port, ctx, harness.service_dns(), 30))

    def reviews_ms(self, wh, rev, n=30):
        """(median, slowest) of n reviews, each on a new connection (TLS handshake
        included), in ms; raises on a bad answer. The request goes in one write, as
        kube-apiserver's (Go sets TCP_NODELAY): http.client's two writes would wait for
        the server's delayed ACK (40 ms) and measure that instead."""
        ctx = harness.https_context(self.certs["ca.crt"])
        body = json.dumps(rev).encode()
        req = (b"POST %s?timeout=10s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json"
               b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (
                   harness.WEBHOOK_PATH.encode(), harness.service_dns().encode(), len(body)))
        times = []
        for _ in range(n):
            t0 = time.monotonic()
            s = harness.tls_handshake(wh.port, ctx, harness.service_dns(), 30)
            try:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.sendall(req + body)
                resp = http.client.HTTPResponse(s)
                resp.begin()
                answer = json.loads(resp.read())
            finally:
                s.close()
            times.append((time.monotonic() - t0) * 1000)
            if resp.status != 200 or answer.get("response", {}).get("allowed") is not True:
                raise AssertionError("review answered HTTP %d %r" % (resp.status,
                                                                     str(answer)[:200]))
        times.sort()
        return times[n // 2], times[-1]

    def connections(self):
        # A Job of its own, in the API server of the moment: the reconcile stage swaps in
        # servers without the setup's Jobs, and a review whose Job is not cached waits for
        # a GET (behind nothing since 1d1093a, but a GET all the same): these reviews are
        # to be answered from the cache, as kube-apiserver's usually are.
        job = copy.deepcopy(self.full_jobs[0])
        for k in ("uid", "resourceVersion", "creationTimestamp", "generation"):
            job["metadata"].pop(k, None)
        job["metadata"]["name"] = "bench-conn"
        job = self.api.create_objects([job])[0]
        rev = harness.review(harness.build_pod(job, job["spec"]["tasks"][0]["name"], 0),
                             job["metadata"]["namespace"])
        c = self.r["conn"] = {}
        # Nothing but these connections: no eviction, no time limit within the run.
        wh = self.webhook(["--max-connections", "20000", "--connection-idle-timeout", "1h",
                           "--request-timeout", "10m"])
        socks = []
        try:
            for _ in range(200):                 # warm: allocator arenas, TLS caches
                wh.post(rev)
            time.sleep(1)
            c["rss0"] = rss_kib(wh.process.proc.pid)[0]
            for n in (1000, 10000):
                self.open_idle_tls(wh, n - len(socks), socks)
                time.sleep(1)
                c["rss%d" % n] = rss_kib(wh.process.proc.pid)[0]
                say("connections: RSS with %d idle TLS connections %.1f MiB (%.1f KiB each)" % (
                    n, c["rss%d" % n] / 1024, (c["rss%d" % n] - c["rss0"]) / n))
        finally:
            for s in socks:
                s.close()
            wh.stop()
            self.procs.remove(wh.process)
        socks = []
        wh = self.webhook(["--connection-idle-timeout", "1h", "--request-timeout", "10m"])
        try:
            self.open_idle_tls(wh, 500, socks)
            c["below_ms"] = self.reviews_ms(wh, rev)
            say("connections: 30 reviews with 500 idle TLS connections open: median %.1f ms, "
                "slowest %.1f ms" % c["below_ms"])
            self.open_idle_tls(wh, 500, socks)     # 200 slowloris + 800 idle at 1000
            request = b"POST /pods/mutate HTTP/1.1\r\nContent-Length: 100000\r\n\r\n"
            for s in socks[:200]:
                s.setblocking(False)
                s.send(request[:1])
            stop = threading.Event()

            def trickle():
                k = 1
                while not stop.wait(1.0) and k < len(request):
                    for s in socks[:200]:
                        try:
                            s.send(request[k:k + 1])
                        except (ssl.SSLError, OSError):
                            pass
                    k += 1
            t = threading.Thread(target=trickle, daemon=True)
            t.start()
            try:
                c["flood_ms"] = self.reviews_ms(wh, rev)
            finally:
                stop.set()
                t.join(5)
            say("connections: 30 reviews behind 200 slowloris + 800 idle TLS connections "
                "(default --max-connections 1000): median %.1f ms, slowest %.1f ms" %
                c["flood_ms"])
        finally:
            for s in socks:
                s.close()
            wh.stop()
            self.procs.remove(wh.process)

    # -- setup
    def setup(self):
        os.makedirs(WORK, exist_ok=True)
        self.certs = harness.make_certs(os.path.join(WORK, "webhook-certs"))
        self.api = harness.ApiServer(WORK).start()
        self.procs.append(self.api.process)
        self.kubeconfig = harness.write_kubeconfig(os.path.join(WORK, "kubeconfig"),
                                                   self.api.url, self.api.ca_file,
                                                   self.api.token)
        full, pt = bench_jobs()
        self.full_jobs = self.api.create_objects(full)
        self.pt_jobs = self.api.create_objects(pt)
        self.full_pairs = reviews_for(self.full_jobs, 1)
        self.pt_pairs = reviews_for(self.pt_jobs, 2)
        self.full_bodies = os.path.join(WORK, "bodies-all.jsonl")
        self.pt_bodies = os.path.join(WORK, "bodies-pytorch.jsonl")
        sizes = write_bodies(self.full_bodies, self.full_pairs)
        pt_sizes = write_bodies(self.pt_bodies, self.pt_pairs)
        with open(os.path.join(WORK, "jobs-all.json"), "w") as f:
            json.dump(self.full_jobs + self.pt_jobs, f)
        with open(os.path.join(WORK, "jobs-pytorch.json"), "w") as f:
            json.dump(self.pt_jobs, f)
        self.r["bodies_all"] = size_text(sizes)
        self.r["bodies_pt"] = size_text(pt_sizes)
        self.r["jobs_all"] = ", ".join("%s (%s)" % (j["metadata"]["name"],
                                                    ",".join(j["spec"]["plugins"]))
                                       for j in self.full_jobs)
        self.r["jobs_pt"] = ", ".join(j["metadata"]["name"] for j in self.pt_jobs)
        self.r["api_get_ms"] = self.api_get_ms()
        say("test API server: one Job GET (keep-alive, TLS) takes %.1f ms (median of 20): "
            "the floor of an admission that reads its Job through the API" % self.r["api_get_ms"])
        say("AdmissionReviews, all plugins: %s" % self.r["bodies_all"])
        say("  jobs: %s" % self.r["jobs_all"])
        say("AdmissionReviews, pytorch+svc+env: %s (jobs %s)" % (self.r["bodies_pt"],
                                                                 self.r["jobs_pt"]))

    def api_get_ms(self, n=20):
        """Median time of one Job GET from the test API server on a kept-alive connection."""
        conn = self.api._conn()
        job = self.full_jobs[0]["metadata"]
        path = "/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs/%s" % (job["namespace"],
                                                                         job["name"])
        times = []
        try:
            for _ in range(n):
                t0 = time.perf_counter()
                conn.request("GET", path, headers={"Authorization": "Bearer " + self.api.token})
                conn.getresponse().read()
                times.append(time.perf_counter() - t0)
        finally:
            conn.close()
        return sorted(times)[n // 2] * 1000

    def webhook(self, extra=(), exe=None):
        # harness.Webhook reads WORK/webhook.port: a previous server's must not be seen
        stale = os.path.join(WORK, "webhook.port")
        if os.path.exists(stale):
            os.remove(stale)
        wh = harness.Webhook(WORK, self.certs, self.kubeconfig, extra_args=list(extra), exe=exe)
        wh.start()
        self.procs.append(wh.process)
        wh.ready = self.wait_ready(wh)
        return wh

    @staticmethod
    def wait_ready(wh, timeout=300):
        """Wait for GET /readyz (the Jobs cache synced) when the webhook has it.
        Returns "ready after N s", or "no /readyz" for a build without a cache."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            conn = wh.connection(timeout=5)
            try:
                conn.request("GET", "/readyz")
                resp = conn.getresponse()
                resp.read()
                if resp.status == 200:
                    return "ready after %.1f s" % (time.monotonic() - t0)
                if resp.status == 404:
                    return "no /readyz"
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()
            time.sleep(0.1)
        raise AssertionError("webhook not ready after %d s:\n%s" % (timeout, wh.process.log()))

    def stop_proc(self, proc):
        proc.stop()
        if proc in self.procs:
            self.procs.remove(proc)

    # -- throughput
    def throughput(self):
        t = self.r.setdefault("wrk", {})
        wh = self.webhook()
        self.wh_pid = wh.process.proc.pid
        try:
            say("webhook: %s; idle %.1f s after start" % (wh.ready, settle_cpu(self.wh_pid)))
            url = "https://127.0.0.1:%d%s?timeout=10s" % (wh.port, harness.WEBHOOK_PATH)
            c_pods, c_sizes = check_answers("webhook", wh.connection, self.full_pairs)
            self.r["answer_sizes"] = c_sizes
            say("webhook answers: every review allowed with a patch that applies "
                "(%d pods; answers %d-%d bytes)" % (len(c_pods), min(c_sizes), max(c_sizes)))
            # API calls per admission (the cache target): one pass over the bodies
            self.api.clear_requests()
            check_answers("webhook", wh.connection, self.full_pairs)
            gets, lists, watches = api_job_reads(self.api)
            self.r["api_calls_per_admission"] = gets / len(self.full_pairs)
            self.r["cache"] = gets == 0
            say("Job reads through the API per admission: %.2f (%s)" % (
                gets / len(self.full_pairs),
                "watch-fed cache: no API call per admission" if gets == 0 else
                "no cache yet: one GET per admission"))
            self.r["rss_start_kib"] = rss_kib(self.wh_pid)[0]
            say("throughput, %d s per run, %d wrk threads (1 at c=1):" % (DURATION, THREADS))
            wrk_series("webhook (all plugins)", url, self.full_bodies, t)
            pt_pods, _ = check_answers("webhook", wh.connection, self.pt_pairs)
            self.pt_c_pods = pt_pods
            wrk_series("webhook (pytorch set)", url, self.pt_bodies, t)
        finally:
            self.stop_proc(wh.process)
        best = self.fixed_answer()
        self.nginx(t, best)
        self.transport(t, best)
        self.go(t)

    def fixed_answer(self):
        """The webhook's answer closest to the mean answer size, verbatim: the fixed body
        of nginx and bench_transport. Returns its bytes; also written to WORK."""
        sizes = self.r["answer_sizes"]
        mean = sum(sizes) / len(sizes)
        wh = self.webhook()
        try:
            conn = wh.connection()
            best = None
            for pod, rev in self.full_pairs:
                status, raw = post_raw(conn, compact(rev).encode())
                if best is None or abs(len(raw) - mean) < abs(len(best) - mean):
                    best = raw
            conn.close()
        finally:
            self.stop_proc(wh.process)
        self.r["fixed_body"] = len(best)
        self.r["answer_mean"] = mean
        self.fixed_path = os.path.join(WORK, "fixed-answer.json")
        with open(self.fixed_path, "wb") as f:
            f.write(best)
        return best

    def nginx(self, t, best):
        text = best.decode()
        if any(ch in text for ch in "$'\\"):
            raise AssertionError("answer has characters nginx's return would interpret")
        port = free_port()
        ndir = os.path.join(WORK, "nginx")
        os.makedirs(os.path.join(ndir, "tmp"), exist_ok=True)
        conf = os.path.join(ndir, "nginx.conf")
        with open(os.path.join(BENCH, "nginx.conf.in")) as f:
            tmpl = f.read()
        with open(conf, "w") as f:
            f.write(tmpl.replace("@DIR@", ndir).replace("@PORT@", str(port))
                    .replace("@CERT@", self.certs["tls.crt"])
                    .replace("@KEY@", self.certs["tls.key"]).replace("@BODY@", text))
        proc = harness.Process("nginx", ["nginx", "-p", ndir, "-c", conf, "-e",
                                         os.path.join(ndir, "error.log")], WORK)
        self.start(proc)
        try:
            wait_tcp(port, proc)
            say("nginx: fixed answer of %d bytes (webhook answers: mean %.0f)" % (
                len(best), self.r["answer_mean"]))
            url = "https://127.0.0.1:%d%s?timeout=10s" % (port, harness.WEBHOOK_PATH)
            wrk_series("nginx (ceiling)", url, self.full_bodies, t)
        finally:
            self.stop_proc(proc)

    def start_built(self, name, env_var, argv):
        """Start the binary bench/run built (path in env_var) as argv(exe, port_file), a
        list; returns (harness.Process, port_file), the port file not there yet."""
        exe = os.environ.get(env_var)
        if not exe or not os.access(exe, os.X_OK):
            raise AssertionError("%s not built (%s)" % (name, env_var))
        port_file = os.path.join(WORK, name + ".port")
        if os.path.exists(port_file):
            os.remove(port_file)
        proc = harness.Process(name, argv(exe, port_file), WORK)
        self.start(proc)
        return proc, port_file

    def transport(self, t, best):
        proc, port_file = self.start_built("bench_transport", "BENCH_TRANSPORT_BIN",
                                           lambda exe, pf: [exe, self.certs["tls.crt"],
                                                            self.certs["tls.key"],
                                                            self.fixed_path, pf])
        try:
            port = proc.wait_port_file(port_file)
            wait_tcp(port, proc)
            conn = harness._PinnedHTTPSConnection("127.0.0.1", port, harness.service_dns(),
                                                  harness.https_context(self.certs["ca.crt"]),
                                                  10)
            try:
                status, raw = post_raw(conn, compact(self.full_pairs[0][1]).encode())
            finally:
                conn.close()
            if status != 200 or raw != best:
                raise AssertionError("bench_transport: HTTP %d, %d bytes, not the fixed answer"
                                     % (status, len(raw)))
            say("webhook HTTP+TLS layer (bench_transport): the same fixed answer")
            url = "https://127.0.0.1:%d%s?timeout=10s" % (port, harness.WEBHOOK_PATH)
            wrk_series("webhook transport (fixed answer)", url, self.full_bodies, t)
        finally:
            self.stop_proc(proc)
        self.transport_spin(t)

    def transport_spin(self, t):
        """bench_transport at 16 connections with each answer spending SPIN_US of CPU
        first, for each of SPINS_US: the rate the webhook would reach if an admission
        cost that much (throughput_limits reads the curve). Fills r["spin"][us]."""
        curve = self.r.setdefault("spin", {})
        say("webhook HTTP+TLS layer with an admission of a known CPU cost (bench_transport "
            "SPIN_US), 16 connections:")
        for us in SPINS_US:
            proc, port_file = self.start_built(
                "bench_transport", "BENCH_TRANSPORT_BIN",
                lambda exe, pf, us=us: [exe, self.certs["tls.crt"], self.certs["tls.key"],
                                        self.fixed_path, pf, str(us)])
            try:
                port = proc.wait_port_file(port_file)
                wait_tcp(port, proc)
                url = "https://127.0.0.1:%d%s?timeout=10s" % (port, harness.WEBHOOK_PATH)
                res = wrk(url, self.full_bodies, 16, DURATION)
                curve[us] = res
                say("  admission of %2d µs       c=16  %9.0f req/s  p50 %s ms  p99 %s ms" % (
                    us, res["rps"], fmt_ms(res["p50_us"]), fmt_ms(res["p99_us"])))
            finally:
                self.stop_proc(proc)

    def go(self, t):
        proc, port_file = self.start_built("go-webhook", "BENCH_GO_BIN", lambda exe, pf: [
            exe, "--jobs", os.path.join(WORK, "jobs-pytorch.json"),
            "--tls-cert-file", self.certs["tls.crt"],
            "--tls-private-key-file", self.certs["tls.key"],
            "--bind-address", "127.0.0.1", "--port", "0", "--port-file", pf])
        try:
            port = proc.wait_port_file(port_file)
            wait_tcp(port, proc)
            ctx = harness.https_context(self.certs["ca.crt"])
            # Go's net/http picks h2 when offered; http.client (like wrk) speaks HTTP/1.1
            ctx.set_alpn_protocols(["http/1.1"])

            def connect():
                return harness._PinnedHTTPSConnection("127.0.0.1", port,
                                                      harness.service_dns(), ctx, 10)
            go_pods, _ = check_answers("go-webhook", connect, self.pt_pairs)
            same = sum(1 for a, b in zip(go_pods, self.pt_c_pods) if a == b)
            self.r["go_same"] = "%d/%d" % (same, len(go_pods))
            say("Go webhook: %s pods identical to the C webhook's after patching" %
                self.r["go_same"])
            if same != len(go_pods):
                raise AssertionError("the Go webhook's patches differ from the C webhook's")
            url = "https://127.0.0.1:%d%s?timeout=10s" % (port, harness.WEBHOOK_PATH)
            wrk_series("go webhook (pytorch set)", url, self.pt_bodies, t)
        finally:
            self.stop_proc(proc)

    # -- burst
    def burst(self, n=500, replicas=10000):
        job = harness.load_job("pytorch-job")
        job["metadata"]["name"] = "burst-job"
        job["metadata"].pop("uid", None)
        job["spec"]["tasks"][1]["replicas"] = replicas - 1
        all_plugins(job)
        job = self.api.create_objects([fill_job(job)])[0]
        names = harness.pod_names(job)
        step = max(1, len(names) // n)
        chosen = names[::step][:n]
        bodies = [compact(harness.review(harness.build_pod(job, t, i), NS)).encode()
                  for t, i in chosen]
        wh = self.webhook()
        try:
            conns = []
            for _ in bodies:
                c = wh.connection(timeout=60)
                c.connect()
                conns.append(c)
            results = [None] * len(bodies)
            barrier = threading.Barrier(len(bodies) + 1)

            def one(k):
                barrier.wait()
                t0 = time.perf_counter()
                try:
                    status, raw = post_raw(conns[k], bodies[k])
                    ok = status == 200 and b'"allowed":true' in raw and b'"patch"' in raw
                except Exception as e:  # noqa: BLE001 - counted as not answered
                    ok, status = False, repr(e)
                results[k] = (ok, time.perf_counter() - t0, status)

            threads = [threading.Thread(target=one, args=(k,)) for k in range(len(bodies))]
            for th in threads:
                th.start()
            barrier.wait()
            t0 = time.perf_counter()
            for th in threads:
                th.join()
            wall = time.perf_counter() - t0
            for c in conns:
                c.close()
        finally:
            self.stop_proc(wh.process)
        lat = sorted(r[1] for r in results)
        ok = sum(1 for r in results if r[0])
        b = {"n": len(bodies), "ok": ok, "slowest_ms": lat[-1] * 1000,
             "p50_ms": lat[len(lat) // 2] * 1000, "p99_ms": lat[int(len(lat) * 0.99) - 1] * 1000,
             "wall_ms": wall * 1000, "replicas": replicas,
             "plugins": ",".join(job["spec"]["plugins"]),
             "body": "%.1f KiB" % (sum(map(len, bodies)) / len(bodies) / 1024)}
        self.r["burst"] = b
        say("burst: %d reviews at once for pods of a %d-replica Job (%s): %d answered "
            "allowed with a patch; slowest %.1f ms, p50 %.1f ms, all done in %.1f ms" % (
                b["n"], replicas, b["plugins"], ok, b["slowest_ms"], b["p50_ms"], b["wall_ms"]))
        if ok != len(bodies):
            bad = [r for r in results if not r[0]][:3]
            raise AssertionError("burst: %d of %d not answered right: %r" % (
                len(bodies) - ok, len(bodies), bad))

    # -- memory
    def memory(self, jobs=10000, tasks=10):
        m = self.r.setdefault("memory", {})
        batch = []
        total_bytes = 0
        t0 = time.monotonic()
        for k in range(jobs):
            job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                   "metadata": {"name": "mem-job-%05d" % k, "namespace": "bench-mem"},
                   "spec": {"minAvailable": tasks, "schedulerName": "volcano",
                            "queue": "default", "plugins": {"env": []},
                            "tasks": [{"name": "task%d" % i, "replicas": 1, "template": {
                                "spec": {"containers": [{
                                    "name": "main", "image": "busybox:1.36.1",
                                    "command": ["sh", "-c", "sleep 3600"],
                                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}],
                                    "restartPolicy": "OnFailure"}}}
                                for i in range(tasks)]},
                   "status": {"state": {"phase": "Running"}, "version": 0, "retryCount": 0}}
            total_bytes += len(compact(job))
            batch.append(job)
            if len(batch) == 500:
                self.api.create_objects(batch)
                batch = []
        if batch:
            self.api.create_objects(batch)
        m["jobs"] = jobs
        m["job_bytes"] = total_bytes // jobs
        say("memory: %d Jobs of %d tasks (%.1f KiB of JSON each, %.1f MiB in all) loaded "
            "into the test API server in %.1f s" % (jobs, tasks, total_bytes / jobs / 1024,
                                                   total_bytes / 2**20, time.monotonic() - t0))
        wh = self.webhook()
        pid = wh.process.proc.pid
        try:
            # the cache (when there is one) filled before /readyz (webhook()); now wait
            # for the RSS to settle
            ready = wh.ready
            deadline = time.monotonic() + 120
            last, stable_since = -1, time.monotonic()
            while time.monotonic() < deadline:
                rss = rss_kib(pid)[0]
                if abs(rss - last) > max(256, last // 100):
                    last, stable_since = rss, time.monotonic()
                elif time.monotonic() - stable_since >= 3:
                    break
                time.sleep(0.5)
            gets, lists, watches = api_job_reads(self.api)
            m["lists"], m["watches"] = lists, watches
            m["rss_10k_kib"] = rss_kib(pid)[0]
            m["ready"] = ready
            # r["cache"]: the throughput stage saw no Job GET per admission (when it ran)
            cached = self.r.get("cache", True) and lists > 0
            m["cached"] = cached
            say("  webhook RSS with the %d Jobs in the API server: %.1f MiB (%s; Job LISTs %d, "
                "watches %d: %s)" % (jobs, m["rss_10k_kib"] / 1024, ready, lists, watches,
                                     "the Jobs are in its cache" if cached else
                                     "no cache yet, the Jobs are not in the webhook"))
            # fixed-count run
            n = ADMISSIONS
            m["capped"] = False
            # the rate the throughput stage measured; BENCH_ADMISSIONS alone needs none
            rate = (self.r.get("wrk", {}).get("webhook (all plugins)", {}).get(16, {})
                    .get("rps") or 0)
            if not ADMISSIONS_SET and rate and n / rate > MEMORY_BUDGET_S:
                n = max(1000, int(rate * MEMORY_CAPPED_S) // 1000 * 1000)
                m["capped"] = True
                say("  %d admissions would take %.0f s at the measured %.0f req/s: this run "
                    "does %d (about %d s); set BENCH_ADMISSIONS to choose" % (
                        ADMISSIONS, ADMISSIONS / rate, rate, n, MEMORY_CAPPED_S))
            m["admissions_asked"] = n
            url = "https://127.0.0.1:%d%s?timeout=10s" % (wh.port, harness.WEBHOOK_PATH)
            warm = max(1000, min(20000, n // 10))
            wrk(url, self.full_bodies, 16, 3600, limit=warm)
            self.api.clear_requests()
            m["warmup"] = warm
            m["rss_before_kib"] = rss_kib(pid)[0]
            t0 = time.monotonic()
            res = wrk(url, self.full_bodies, 16, 3600, limit=n)
            m["seconds"] = time.monotonic() - t0
            time.sleep(1)
            m["rss_after_kib"], m["hwm_kib"] = rss_kib(pid)
            m["admissions"] = res["requests"]
            m["errors"], m["denied"] = res["errors"], res["denied"]
            m["cmd"] = res["cmd"]
            growth = m["rss_after_kib"] - m["rss_before_kib"]
            m["growth_kib"] = growth
            say("  %d admissions (16 connections) in %.0f s, %.0f req/s, errors %d, denied %d: "
                "RSS %.1f MiB before (after %d warm-up admissions), %.1f MiB after, growth "
                "%+d KiB; peak %.1f MiB" % (
                    res["requests"], m["seconds"], res["requests"] / m["seconds"], res["errors"],
                    res["denied"], m["rss_before_kib"] / 1024, warm,
                    m["rss_after_kib"] / 1024, growth, m["hwm_kib"] / 1024))
        finally:
            self.stop_proc(wh.process)
        m["held"] = self.held_bytes(max(1000, n // 2), warm)

    def held_bytes(self, n, warm):
        """The leak check of the memory stage: the bytes a webhook linked with glibc's
        malloc holds allocated (bench/live_heap.c, preloaded) after warm admissions and
        after each of two runs of n more, as [(admissions so far, bytes, blocks)]. RSS
        cannot tell a leak from the allocator keeping freed pages; these can: a leak
        grows them in the second run as in the first. None without bench/run's build."""
        exe = os.environ.get("BENCH_GLIBC_WEBHOOK") or ""
        lib = os.environ.get("BENCH_LIVE_HEAP") or ""
        if not (os.path.exists(exe) and os.path.exists(lib)):
            say("  bytes held: not measured (no glibc build of the webhook or no "
                "live_heap.so: bench/run builds them)")
            return None
        report = os.path.join(WORK, "live-heap")
        if os.path.exists(report):
            os.remove(report)  # an earlier run's must not be read
        wrapper = os.path.join(WORK, "webhook-live-heap")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nLD_PRELOAD=%s LIVE_HEAP_FILE=%s exec %s \"$@\"\n" % (
                shlex.quote(lib), shlex.quote(report), shlex.quote(exe)))
        os.chmod(wrapper, 0o755)
        wh = self.webhook(exe=wrapper)
        try:
            url = "https://127.0.0.1:%d%s?timeout=10s" % (wh.port, harness.WEBHOOK_PATH)

            def held():
                time.sleep(1)  # the connections closed; the report is at most 100 ms old
                try:
                    with open(report) as f:
                        nbytes, blocks = f.read().split()
                except FileNotFoundError:
                    raise AssertionError("leak check: no %s: was %s preloaded (LD_PRELOAD)? "
                                         "webhook log:\n%s" % (report, lib,
                                                                wh.process.log()[-2000:]))
                return int(nbytes), int(blocks)

            # The warm-up on 128 connections: MHD places connections on its threads by
            # its accept race, and 16 can leave a thread without one, which then makes
            # its trees of the Jobs (a bounded step) during a measured run instead (one
            # step still came in the first run once, none in the second).
            done = wrk(url, self.full_bodies, 128, 3600, limit=warm)["requests"]
            points = [(done,) + held()]
            for _ in range(2):
                res = wrk(url, self.full_bodies, 16, 3600, limit=n)
                if res["errors"] or res["denied"]:
                    raise AssertionError("leak check: %d errors, %d denied" % (
                        res["errors"], res["denied"]))
                done += res["requests"]
                points.append((done,) + held())
            say("  bytes held (glibc malloc, bench/live_heap.c): %s" % "; ".join(
                "%.2f MiB in %d blocks after %d admissions" % (b / 2**20, k, a)
                for a, b, k in points))
            return points
        finally:
            self.stop_proc(wh.process)

    # -- reconcile
    # (label, extra serve flags): the default client rate limit, then none, so that the
    # table shows both the flag's default and what the webhook itself can do.
    RECONCILE_MODES = (("default --kube-api-qps 50", ()),
                       ("unthrottled --kube-api-qps 0", ("--kube-api-qps", "0")))
    RECONCILE_CASES = (("without ssh", "bench-rec-svc", {"svc": []}, "configmaps", "-svc"),
                       ("with ssh", "bench-rec-ssh", {"ssh": [], "svc": []}, "secrets", "-ssh"))
    RECONCILE_TIMEOUT_S = 600
    KEYGEN_KEYS = 20

    def reconcile(self, jobs=1000):
        exe = harness.binary()
        help_text = subprocess.run([exe, "serve", "--help"], capture_output=True,
                                   text=True).stdout
        if "--resync-period" not in help_text:
            self.r["reconcile"] = None
            say("reconcile: skipped: no reconcile side yet (serve --help has no "
                "--resync-period)")
            return
        rec = self.r["reconcile"] = {"jobs": jobs, "modes": {}}
        for i, (mode, extra) in enumerate(self.RECONCILE_MODES):
            if extra and "--kube-api-qps" not in help_text:
                say("reconcile %s: skipped: serve --help has no --kube-api-qps" % mode)
                continue
            m0 = time.monotonic()
            cases = rec["modes"][mode] = {}
            self.reconcile_mode(mode, extra, jobs, cases, "rec%d" % i)
            cases["pass_seconds"] = time.monotonic() - m0
            say("[reconcile %s: %.0f s]" % (mode, cases["pass_seconds"]))
        exe = os.environ.get("BENCH_ADMISSION_BIN")
        if exe:
            out = subprocess.run([exe, "--keys", str(self.KEYGEN_KEYS)], capture_output=True,
                                 text=True, timeout=300).stdout
            mk = re.search(r"keys_per_second=([0-9.]+)", out)
            if mk:
                rec["keygen_per_s"] = float(mk.group(1))
                say("  RSA 2048 key pairs per second, one thread (bench_admission --keys "
                    "%d): %.1f" % (self.KEYGEN_KEYS, rec["keygen_per_s"]))

    def reconcile_mode(self, mode, extra, jobs, cases, subdir):
        """Both cases (without ssh, with ssh) against a fresh test API server (so that
        only the new Jobs are reconciled) and one webhook started with `extra` flags.
        Fills cases[label] with seconds (None: not all after the timeout), have,
        calls_per_job and the CPU the webhook and the test API server used."""
        self.stop_proc(self.api.process)
        os.makedirs(os.path.join(WORK, subdir), exist_ok=True)
        self.api = harness.ApiServer(os.path.join(WORK, subdir)).start()
        self.procs.append(self.api.process)
        self.kubeconfig = harness.write_kubeconfig(
            os.path.join(WORK, "kubeconfig-" + subdir), self.api.url, self.api.ca_file,
            self.api.token)
        wh = self.webhook(extra)
        hz = os.sysconf("SC_CLK_TCK")
        wh_pid, api_pid = wh.process.proc.pid, self.api.process.proc.pid
        try:
            time.sleep(3)  # leader election and the first (empty) LIST
            for label, ns, plugins, kind, suffix in self.RECONCILE_CASES:
                objs = [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                         "metadata": {"name": "rec-%04d" % k, "namespace": ns},
                         "spec": {"minAvailable": 2, "queue": "default", "plugins": plugins,
                                  "tasks": [{"name": "worker", "replicas": 2, "template": {
                                      "spec": {"containers": [{"name": "main",
                                                               "image": "busybox:1.36.1"}]}}}]},
                         "status": {"state": {"phase": "Pending"}}} for k in range(jobs)]
                want = {"rec-%04d%s" % (k, suffix) for k in range(jobs)}
                svc_want = {"rec-%04d" % k for k in range(jobs)}
                self.api.clear_requests()
                wh_cpu0, api_cpu0 = cpu_ticks(wh_pid), cpu_ticks(api_pid)
                busy0, total0 = machine_busy_ticks()
                t0 = time.monotonic()
                self.api.create_objects(objs)
                done_at, have = None, 0
                while time.monotonic() - t0 < self.RECONCILE_TIMEOUT_S:
                    _, body = self.api.get("/api/v1/namespaces/%s/%s" % (ns, kind))
                    names = {o["metadata"]["name"] for o in (body or {}).get("items", [])}
                    have = len(want & names)
                    # the Services only once the last kind is complete: each poll is a
                    # LIST of up to 1,000 objects the test API server has to encode
                    if want <= names:
                        _, sbody = self.api.get("/api/v1/namespaces/%s/services" % ns)
                        snames = {o["metadata"]["name"]
                                  for o in (sbody or {}).get("items", [])}
                        if svc_want <= snames:
                            done_at = time.monotonic() - t0
                            break
                    time.sleep(0.25)
                wall = time.monotonic() - t0
                wh_cores = (cpu_ticks(wh_pid) - wh_cpu0) / hz / wall
                api_cores = (cpu_ticks(api_pid) - api_cpu0) / hz / wall
                busy1, total1 = machine_busy_ticks()
                machine_busy = (busy1 - busy0) / max(1, total1 - total0)
                calls = sum(1 for q in self.api.requests()
                            if "volcano-plugin-webhook" in q["headers"].get("User-Agent", "")
                            and "watch=" not in q["query"])
                cases[label] = {"seconds": done_at, "have": have, "calls_per_job": calls / jobs,
                                "webhook_cores": wh_cores, "api_cores": api_cores,
                                "machine_busy": machine_busy}
                if done_at is None:
                    say("reconcile %s, %s: only %d of %d Jobs' objects after %d s" % (
                        mode, label, have, jobs, self.RECONCILE_TIMEOUT_S))
                else:
                    say("reconcile %s, %s: auxiliary objects of %d new Jobs in %.1f s "
                        "(%.1f Jobs/s; the webhook made %.1f API requests per Job; CPU: "
                        "webhook %.2f cores, test API server %.2f cores, machine %.0f%% busy)"
                        % (mode, label, jobs, done_at, jobs / done_at, calls / jobs,
                           wh_cores, api_cores, 100 * machine_busy))
                    if label == "with ssh":
                        say("  ssh keys per second, end to end: %.1f" % (jobs / done_at))
        finally:
            self.stop_proc(wh.process)

    # -- callgrind
    def callgrind(self, n=300):
        exe = os.environ.get("BENCH_ADMISSION_BIN")
        if not exe or not os.access(exe, os.X_OK):
            raise AssertionError("bench_admission not built (BENCH_ADMISSION_BIN)")
        cg = self.r["callgrind"] = {}
        # callgrind counts the allocator's instructions too: say which one was linked.
        cg["allocator"] = os.environ.get("BENCH_ALLOCATOR") or "unknown"
        jobs = os.path.join(WORK, "jobs-all.json")
        # in-process time of each set: the targets against nginx are the all-plugins
        # bodies', the one against Go the pytorch set's (throughput_limits)
        for key, bodies in (("", self.full_bodies), ("_pytorch", self.pt_bodies)):
            timing = subprocess.run([exe, jobs, bodies, "20000"], capture_output=True,
                                    text=True, timeout=600)
            if timing.returncode != 0:
                raise AssertionError("bench_admission: %s%s" % (timing.stdout, timing.stderr))
            cg["timing" + key] = timing.stdout.strip()
            ns = float(re.search(r"ns_per_admission=([0-9.]+)", timing.stdout).group(1))
            cg["us_per_admission" + key] = ns / 1000
            say("in-process, one thread, no socket%s: %s" % (
                key.replace("_", ", ") + " set" if key else "", cg["timing" + key]))
        base_exe = os.environ.get("BENCH_BASELINE_BIN")
        for label, bodies in (("all plugins", self.full_bodies), ("pytorch set", self.pt_bodies)):
            cg[label] = run_callgrind(exe, jobs, bodies, n, label.split()[0])
            say("callgrind, %s: %.0f instructions per admission (%d admissions)" % (
                label, cg[label]["per_admission"], n))
            if base_exe:
                cg.setdefault("baseline", {"rev": os.environ.get("BENCH_BASELINE", "?")})
                cg["baseline"][label] = run_callgrind(base_exe, jobs, bodies, n,
                                                      "baseline-" + label.split()[0])
                say("callgrind, %s, baseline %s: %.0f instructions per admission" % (
                    label, cg["baseline"]["rev"], cg["baseline"][label]["per_admission"]))
        cg["time_parts"] = perf_parts(exe, jobs, self.full_bodies)
        if isinstance(cg["time_parts"], str):
            say("time per part: not measured (%s)" % cg["time_parts"])
        for cost, fn in cg["all plugins"]["top"][:10]:
            say("  %6.1f%%  %s" % (100.0 * cost / (cg["all plugins"]["per_admission"] * n),
                                  short_fn(fn)))
        go_exe = os.environ.get("BENCH_GO_BIN")
        if go_exe and os.access(go_exe, os.X_OK):
            cg["go"] = go_callgrind(go_exe, os.path.join(WORK, "jobs-pytorch.json"),
                                    self.pt_bodies)
            say("callgrind, the Go webhook's handler, pytorch set: %.0f instructions per "
                "review" % cg["go"]["per_review"])


def go_callgrind(exe, jobs, bodies, few=30, more=330):
    """Instructions per review of the Go webhook's handler (bench/go-webhook --bench-bodies:
    unmarshal, decide, marshal, no HTTP), as callgrind counts them: two runs, of few and of
    more reviews, and the difference per review, so that the process's start, the Jobs'
    loading and the file's reading cancel out. GOMAXPROCS=1 (callgrind runs one thread at a
    time; more Ps only spin) and asyncpreemptoff=1 (callgrind asserts on Go's preemption
    signal); the garbage collector's work is counted, as it is part of each request."""
    totals = []
    for k in (few, more):
        out = os.path.join(WORK, "callgrind-go-%d.out" % k)
        env = dict(os.environ, GOMAXPROCS="1", GODEBUG="asyncpreemptoff=1")
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, exe,
                            "--jobs", jobs, "--bench-bodies", bodies, "--bench-n", str(k)],
                           capture_output=True, text=True, timeout=900, env=env)
        if r.returncode != 0 or "reviews=%d patched=%d" % (k, k) not in r.stdout:
            raise AssertionError("go-webhook --bench-bodies: %s%s" % (r.stdout,
                                                                     r.stderr[-2000:]))
        totals.append(annotate(out, inclusive=True)[0])
    return {"per_review": (totals[1] - totals[0]) / float(more - few), "few": few,
            "more": more, "totals": totals}


# The parts of an admission the callgrind section names, by the functions whose inclusive
# counts they are: the first alternative found, an alternative being one function or a
# tuple of functions summed (the review is read with jsonr_loadb_kept and the Job's text
# with jsonr_loadb; older trees read both with one of them, or with json_loadb).
# Each part names its functions in this tree first, then in the trees before it (a
# baseline's): the first alternative found counts (component_values).
COMPONENTS = (
    ("reading JSON: the review (its document and envelope) and the Job's kept text",
     (("jsonr_doc_read", "jsonr_doc_value_kept", "jsonr_loadb"),
      ("jsonr_doc_read", "jsonr_doc_value_kept"), ("jsonr_loadb_kept", "jsonr_loadb"),
      "jsonr_loadb", "json_loadb")),
    ("the pre-scan of the body (containers, depth)", ("jsonr_scan_body", "json_container_count")),
    ("the Job from the cache (its parse included, when the thread has no tree of it)",
     ("cache_get_read", "cache_get")),
    ("the pod's typed view for the plugins (k8s/podview.c)", ("podview_from_doc",)),
    ("the pod's copy for the plugins (before the view)", ("copy_edited",)),
    ("the plugin chain", ("chain_run",)),
    ("the patch, ops written as text", ("pod_edits_write", "patch_diff_write")),
    ("the check of the patched pod (D15, podcheck)",
     ("pod_edits_first_new_violation", "podcheck_first_new")),
    ("base64 of the patch", ("EVP_EncodeBlock",)),
    ("freeing the pod's view, records and trees",
     (("pod_edits_dispose", "podview_dispose", "jsonr_doc_free"), "mutate_result_dispose")),
)


# perf names a part by another function where callgrind's has no symbol in perf's view:
# libcrypto's exported EVP_EncodeBlock calls an unexported loop, so the samples are
# counted below the webhook's caller of it (inlined: perf sees inlined frames).
PERF_COMPONENTS = {"base64 of the patch": ("answer_patch_base64",)}


def perf_parts(exe, jobs, bodies, n=40000):
    """The COMPONENTS' shares of an admission's time: perf's cpu-clock samples of exe
    over n admissions (DWARF call graphs, inlined frames included), each part's samples
    below it over admission_handle's. {part: share or None}, or a string saying why
    there are none (no perf, no permission)."""
    if shutil.which("perf") is None:
        return "perf is not installed"
    data = os.path.join(WORK, "perf-parts.data")
    try:
        rec = subprocess.run(["perf", "record", "-q", "-F", "2999", "-e", "cpu-clock",
                              "--call-graph", "dwarf,16384", "-o", data, exe, jobs, bodies,
                              str(n)], capture_output=True, text=True, timeout=900)
        if rec.returncode != 0:
            return "perf record failed (exit %d) %s" % (rec.returncode,
                                                        rec.stderr.strip()[-300:])
        rep = subprocess.run(["perf", "report", "-i", data, "--children", "--sort", "sym",
                              "--stdio", "-g", "none"], capture_output=True, text=True,
                             timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:  # the callgrind figures stand without it
        return "perf: %s" % e
    finally:
        if os.path.exists(data):
            os.unlink(data)
    children = {}
    for line in rep.stdout.splitlines():
        m = re.match(r"^\s*([\d.]+)%\s+[\d.]+%\s+\[\.\]\s+(\S+)", line)
        if m:  # a function inlined in several places is listed once per place: the most
            children[m.group(2)] = max(children.get(m.group(2), 0.0), float(m.group(1)))
    whole = children.get("admission_handle")
    if not whole:
        return "perf saw no admission_handle (no symbols?)"
    def share(f):  # the samples below a function named f, over admission_handle's
        v = max((v for k, v in children.items() if re.match(r"%s(\.\w+)*$" % f, k)),
                default=None)
        return v / whole if v is not None else None

    # a function that rarely runs may have no sample: any one found will do
    return component_values([(name, PERF_COMPONENTS.get(name, fns)) for name, fns in COMPONENTS],
                            share, every_one=False)


def component_values(components, value_of, every_one):
    """{part: the sum of value_of(f) over the functions f of its first alternative that
    is found, or None}; an alternative is one function name or a tuple of them, found
    when value_of gives a number for each of them (every_one) or for any one."""
    values = {}
    for name, fns in components:
        values[name] = None
        for want in fns:
            found = [value_of(f) for f in (want if isinstance(want, tuple) else (want,))]
            hits = [v for v in found if v is not None]
            if hits and (len(hits) == len(found) or not every_one):
                values[name] = sum(hits)
                break
    return values


def run_callgrind(exe, jobs, bodies, n, tag):
    """callgrind over n admissions of exe: per admission total, the top functions and the
    COMPONENTS (Ir per admission, None where no function matched)."""
    out = os.path.join(WORK, "callgrind-%s.out" % tag)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
           "--collect-atstart=no", "--toggle-collect=bench_loop*", exe, jobs, bodies, str(n)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise AssertionError("callgrind: %s" % r.stderr[-2000:])
    total, top = annotate(out, inclusive=True)
    _, self_top = annotate(out, inclusive=False)
    _, every = annotate(out, inclusive=True, limit=None)
    def inclusive(f):  # the first (largest) count of a function named f, or None
        return next((c for c, fn in every
                     if re.match(r"(.*:)?%s(\.\w+)*( |$)" % f, short_fn(fn))), None)

    parts = {name: (v / n if v is not None else None)
             for name, v in component_values(COMPONENTS, inclusive, every_one=True).items()}
    return {"per_admission": total / n, "cmd": " ".join(cmd).replace(WORK, "$W"),
            "top": top[:18], "self": self_top[:12], "n": n, "parts": parts}


def annotate(out, inclusive, limit=50):
    """(total Ir, [(Ir, function)] best first) from callgrind_annotate's function table,
    without the frames around the measured loop; limit=None: every function."""
    args = ["callgrind_annotate", "--auto=no", "--inclusive=" + ("yes" if inclusive else "no")]
    if limit is None:
        args.append("--threshold=100")
    ann = subprocess.run(args + [out], capture_output=True, text=True).stdout
    total = int(re.search(r"^\s*([\d,]+)\s.*PROGRAM TOTALS", ann, re.M)
                .group(1).replace(",", ""))
    lines = ann.splitlines()
    start = next(k for k, line in enumerate(lines) if re.match(r"^Ir\s+file:function", line))
    top, seen = [], set()
    for line in lines[start + 2:]:
        if not line.strip() or line.startswith("--"):
            break
        mm = re.match(r"^\s*([\d,]+)\s+(?:\([\s\d.%]+\)\s+)?(\S.*)$", line)
        if not mm:
            continue
        fn = mm.group(2).strip()
        # recursion duplicates (name'2) and the frames around the loop are not news
        if "'" in fn or re.search(r"\(below main\)|__libc_start|:main(\s|$)|bench_loop|"
                                  r"ld-linux|dl-runtime|_dl_", fn):
            continue
        key = short_fn(fn)
        if key in seen:
            continue
        seen.add(key)
        top.append((int(mm.group(1).replace(",", "")), fn))
    top.sort(key=lambda x: -x[0])
    return total, top


def short_fn(fn):
    """'file.c:name [binary]' → 'name (file.c)'; unnamed code → 'address (library)'."""
    m = re.search(r"\s*\[([^\]]*)\]$", fn)
    lib = os.path.basename(m.group(1)) if m else ""
    fn = fn[:m.start()] if m else fn
    path, _, name = fn.rpartition(":")
    if path in ("???", ""):
        if name.startswith("0x"):
            return "%s internal function at %s" % (lib, name.replace("0x00000000000", "0x"))
        return "%s (%s)" % (name, lib)
    return "%s (%s)" % (name, os.path.basename(path))


# ---------------------------------------------------------------- RESULTS.md

def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=20).stdout.strip() or \
            subprocess.run(cmd, shell=True, capture_output=True, text=True,
                           timeout=20).stderr.strip()
    except Exception:  # noqa: BLE001 - a missing tool is reported as such
        return "?"


def verdict(ok):
    return "met" if ok else "**missed**"


def machine_busy_ticks():
    """(busy, total) jiffies of all CPUs together, from /proc/stat."""
    with open("/proc/stat") as f:
        vals = [int(v) for v in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)   # idle + iowait
    return sum(vals) - idle, sum(vals)


def reconcile_limits(rec):
    """One sentence: which limit each reconcile figure shows, read off the measured
    numbers (the rate limit's floor, the key generation rate, the CPU each process used)."""
    n = rec["jobs"]
    kg = rec.get("keygen_per_s")
    ncpu = os.cpu_count()
    out = []
    for mode, extra in Bench.RECONCILE_MODES:
        cases = rec["modes"].get(mode) or {}
        done = [(label, cases[label]) for label, *_ in Bench.RECONCILE_CASES
                if (cases.get(label) or {}).get("seconds")]
        out.extend("the %s row %s did not finish (%d of %s Jobs' objects after %d s)" % (
                       mode, label, cases[label]["have"], "{:,}".format(n),
                       Bench.RECONCILE_TIMEOUT_S)
                   for label, *_ in Bench.RECONCILE_CASES
                   if cases.get(label) and not cases[label].get("seconds"))
        if not done:
            continue
        if not extra:
            # the token bucket: the first 100 requests at once, then 50 a second
            floors = [(label, x, max(0.0, x["calls_per_job"] * n - 100) / 50)
                      for label, x in done]
            limited = [x["seconds"] <= 1.15 * f for _, x, f in floors]
            text = ("the %s rows show %s ((requests per Job × %s − 100 burst) / 50 "
                    "per s = %s, measured %s)" % (
                        mode, "the client rate limit, not the webhook" if all(limited)
                        else "the client rate limit and more", "{:,}".format(n),
                        " and ".join("%.0f s" % f for _, _, f in floors),
                        " and ".join("%.1f s" % x["seconds"] for _, x, _ in floors)))
            for (label, x, f), lim in zip(floors, limited):
                if not lim and label == "with ssh" and kg:
                    # the rest: key generation sharing a machine busy with other work
                    text += (", with ssh also key generation (%.0f core-seconds at %.1f "
                             "keys/s per core; webhook %.2f cores, machine %.0f%% busy)" % (
                                 n / kg, kg, x["webhook_cores"],
                                 100 * x.get("machine_busy", 0)))
            out.append(text)
            continue
        for label, x in done:
            s = x["seconds"]
            keycores = n / kg / s if kg and label == "with ssh" else 0.0
            if keycores >= 0.5 * ncpu:
                why = ("key generation (%s keys at %.1f keys/s per core are %.0f "
                       "core-seconds, %.1f of the %d cores over its %.1f s)" % (
                           "{:,}".format(n), kg, n / kg, keycores, ncpu, s))
            elif x["api_cores"] >= 0.5 and x["api_cores"] >= 2 * x["webhook_cores"]:
                why = ("the test API server (%.2f cores against the webhook's %.2f: one "
                       "Python process, its Python code on one core at a time)" % (
                           x["api_cores"], x["webhook_cores"]))
            elif x.get("machine_busy", 0) >= 0.9:
                why = ("the machine's CPU (%.0f%% of all %d cores busy, other users "
                       "included; webhook %.2f, test API server %.2f cores)" % (
                           100 * x["machine_busy"], ncpu, x["webhook_cores"],
                           x["api_cores"]))
            else:
                why = ("request latency, no CPU saturated (webhook %.2f, test API server "
                       "%.2f cores): 4 workers, each making its requests one after "
                       "another" % (x["webhook_cores"], x["api_cores"]))
            if label == "with ssh" and kg and keycores < 0.5 * ncpu:
                why += "; key generation needed only %.1f cores" % keycores
            if s < 20 * 0.25:
                why += (", and the poll: %.1f s is a few 0.25 s polls of 1,000-object "
                        "LISTs long" % s)
            out.append("the %s row %s shows %s" % (mode, label, why))
    if not out:
        return "no row finished."
    return "; ".join(out) + "."


def spin_fit(r, cores):
    """The line through bench_transport's curve (transport_spin): each request's share of
    the cores, cores/rate in µs, against the admission's CPU time in µs, fitted by least
    squares over the admissions measured (not the free transport: at its rate the load
    generator is the limit, off the line). Returns (a, b) with cores/rate = a + b ×
    admission, or None when fewer than two points were measured."""
    pts = [(float(us), cores / res["rps"] * 1e6)
           for us, res in sorted((r.get("spin") or {}).items()) if res.get("rps")]
    if len(pts) < 2:
        return None
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx
    return my - b * mx, b


def throughput_limits(r):
    """The throughput targets against the run's own figures, as RESULTS.md lines; []
    when a figure is missing. Two answers to what an admission may cost for the webhook
    to reach a rate R at 16 connections: measured, where bench_transport's curve of
    rate against a known admission cost (transport_spin) crosses R; and the arithmetic
    that takes the 2 cores as saturated, each request costing cores/rate core-seconds,
    so an admission may cost cores/R - cores/T (T: the free transport's rate), which
    leaves out that the kernel's and the load generator's share grows as each answer
    takes longer."""
    w = r.get("wrk", {})
    cg = r.get("callgrind") or {}
    try:
        tr = w["webhook transport (fixed answer)"][16]["rps"]
        ng = w["nginx (ceiling)"][16]["rps"]
        wh = w["webhook (all plugins)"][16]["rps"]
        go = w["go webhook (pytorch set)"][16]["rps"]
    except KeyError:
        return []
    cores = os.cpu_count() or 1
    us = cg.get("us_per_admission")
    fit = spin_fit(r, cores)
    spun = sorted(r.get("spin") or {})

    def budget(rate):
        return (cores / rate - cores / tr) * 1e6

    def measured(rate):
        if fit is None or fit[1] <= 0:
            return "not measured"
        x = (cores / rate * 1e6 - fit[0]) / fit[1]
        if x <= 0:
            return "none: over the transport's own rate"
        return "%.1f µs%s" % (x, "" if spun[0] <= x <= spun[-1] else " (outside the "
                              "%d-%d µs measured)" % (spun[0], spun[-1]))

    out = ["At 16 connections: nginx %.0f req/s; the webhook's own HTTP and TLS layer "
           "(libmicrohttpd with GnuTLS, webhook/server.c) answering nginx's fixed body "
           "%.0f req/s = %.2f × nginx, before any admission work; the webhook %.0f req/s = "
           "%.2f × its own transport." % (ng, tr, tr / ng, wh, wh / tr), ""]
    spins = sorted((r.get("spin") or {}).items())
    if spins:
        out.append("The same layer with each answer spending a known CPU time first (the "
                   "admission it stands for; bench_transport SPIN_US):")
        out.append("")
        out.append("| admission | req/s | p50 ms | p99 ms |")
        out.append("|---|---|---|---|")
        free = w["webhook transport (fixed answer)"][16]
        out.append("| free | %.0f | %s | %s |" % (tr, fmt_ms(free["p50_us"]),
                                                 fmt_ms(free["p99_us"])))
        for s_us, res in spins:
            out.append("| %d µs | %.0f | %s | %s |" % (s_us, res["rps"], fmt_ms(res["p50_us"]),
                                                      fmt_ms(res["p99_us"])))
        out.append("")
        if fit is not None:
            out.append("Fitted: each request takes %.1f µs of the %d cores plus %.2f µs per µs "
                       "of admission (cores/rate against the admission's time, least squares)."
                       % (fit[0], cores, fit[1]))
            out.append("")
    out.append("| target | rate it needs | an admission may cost (measured) | "
               "(cores/rate arithmetic) | one admission now |")
    out.append("|---|---|---|---|---|")
    us_pt = cg.get("us_per_admission_pytorch")
    for name, rate, now, bodies in (
            ("0.5 × nginx", 0.5 * ng, us, "all plugins"),
            ("3 × the Go webhook", 3 * go, us_pt, "pytorch set")):
        b = budget(rate)
        out.append("| %s | %.0f req/s | %s | %s | %s |" % (
            name, rate, measured(rate),
            "%.1f µs" % b if b > 0 else "none: over the transport's own rate",
            "%.1f µs (%s)" % (now, bodies) if now else "not measured"))
    out.append("")
    parse = None
    for cost, fn in (cg.get("all plugins") or {}).get("top", []):
        if re.match(r"jsonr?_loadb ", short_fn(fn)):
            parse = 100.0 * cost / (cg["all plugins"]["per_admission"] * cg["all plugins"]["n"])
            break
    besides = ("; the fitted line puts it at %.1f µs (its value at no admission)" % fit[0]
               if fit is not None else "")
    out.append("\"Measured\" reads the fitted line at the rate. \"cores/rate arithmetic\" is "
               "%d cores / rate − %d cores / the free transport's rate: it takes what a request "
               "costs besides its admission (kernel, TLS, the load generator on the same "
               "cores) as at the free transport's rate, %.1f µs%s. The curve is the all-plugins "
               "bodies' (3.9 KiB on average); the pytorch set's are larger (5.3 KiB), so "
               "their requests cost more besides the admission. \"One admission now\" is "
               "bench_admission's time in-process on one thread, on the bodies of the "
               "target's row%s." % (
                   cores, cores, cores / tr * 1e6, besides,
                   "; reading JSON (the review and the Job's kept text) is "
                   "%.0f%% of its instructions" % parse if parse else ""))
    return out


def write_results(b, started, elapsed):
    r = b.r
    w = r.get("wrk", {})
    lines = []
    add = lines.append
    cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
    add("# Benchmark results")
    add("")
    add("Written by `make bench` (bench/run, bench/bench.py); do not edit by hand. "
        "Figures are from one run on one machine, every contender measured side by side; "
        "nothing is tuned toward the targets below.")
    add("")
    add("## Machine")
    add("")
    add("| | |")
    add("|---|---|")
    add("| date (UTC) | %s |" % time.strftime("%Y-%m-%d %H:%M", time.gmtime(started)))
    add("| CPU | %s, %s cores (nproc) |" % (cpu, os.cpu_count()))
    add("| memory | %s MiB |" % sh("free -m | awk '/Mem:/{print $2}'"))
    add("| kernel | %s |" % platform.release())
    add("| OS | Debian %s |" % sh("cat /etc/debian_version"))
    add("| webhook | %s, libmicrohttpd %s, jansson %s, OpenSSL %s |" % (
        r.get("tree", "?"), sh("pkg-config --modversion libmicrohttpd"),
        sh("pkg-config --modversion jansson"), sh("pkg-config --modversion openssl")))
    add("| tools | %s; %s; %s; %s |" % (
        sh("wrk -v 2>&1 | head -1 | cut -d' ' -f1,2"), sh("nginx -v 2>&1"),
        sh("go version"), sh("valgrind --version")))
    add("| whole run | %.0f s |" % elapsed)
    add("| load average before the run | %s |" % r.get("loadavg", "?"))
    add("")

    add("## Targets")
    add("")
    add("| target | figure | verdict |")
    add("|---|---|---|")
    try:
        c16 = w["webhook (all plugins)"][16]
        n16 = w["nginx (ceiling)"][16]
        ratio = c16["rps"] / n16["rps"]
        add("| throughput at 16 connections ≥ 0.5 × nginx | %.0f vs %.0f req/s = **%.2f ×** | %s |"
            % (c16["rps"], n16["rps"], ratio, verdict(ratio >= 0.5)))
    except KeyError:
        add("| throughput at 16 connections ≥ 0.5 × nginx | not measured | — |")
    try:
        p16 = w["webhook (pytorch set)"][16]
        g16 = w["go webhook (pytorch set)"][16]
        ratio = p16["rps"] / g16["rps"]
        add("| throughput at 16 connections ≥ 3 × the Go webhook (same pytorch+svc+env Jobs) "
            "| %.0f vs %.0f req/s = **%.2f ×** | %s |" % (p16["rps"], g16["rps"], ratio,
                                                         verdict(ratio >= 3)))
    except KeyError:
        add("| throughput at 16 connections ≥ 3 × the Go webhook | not measured | — |")
    try:
        c16 = w["webhook (all plugins)"][16]
        add("| p99 latency at 16 connections ≤ 1 ms | **%s ms** (all-plugins set) | %s |" % (
            fmt_ms(c16["p99_us"]), verdict(c16["p99_us"] <= 1000)))
        p16 = w["webhook (pytorch set)"][16]
        g16 = w["go webhook (pytorch set)"][16]
        ratio = p16["p99_us"] / g16["p99_us"]
        add("| p99 latency at 16 connections ≤ ⅓ of the Go webhook's | %s vs %s ms = **%.2f ×** "
            "| %s |" % (fmt_ms(p16["p99_us"]), fmt_ms(g16["p99_us"]), ratio,
                        verdict(ratio <= 1 / 3.0)))
    except KeyError:
        add("| p99 latency at 16 connections | not measured | — |")
    try:
        c16 = w["webhook (all plugins)"][16]
        n16 = w["nginx (ceiling)"][16]
        ratio = c16["p99_us"] / n16["p99_us"]
        add("| p99 latency at 16 connections ≤ 2 × nginx's | %s vs %s ms = **%.2f ×** "
            "(all-plugins set) | %s |" % (fmt_ms(c16["p99_us"]), fmt_ms(n16["p99_us"]), ratio,
                                          verdict(ratio <= 2)))
    except KeyError:
        add("| p99 latency at 16 connections ≤ 2 × nginx's | not measured | — |")
    cg = r.get("callgrind") or {}
    for label, limit in (("all plugins", 350000), ("pytorch set", 400000)):
        if label in cg:
            add("| instructions per admission ≤ %.2f M (%s bodies, callgrind) | **%.0f** | %s |"
                % (limit / 1e6, label, cg[label]["per_admission"],
                   verdict(cg[label]["per_admission"] <= limit)))
        else:
            add("| instructions per admission ≤ %.2f M (%s bodies) | not measured | — |"
                % (limit / 1e6, label))
    if "api_calls_per_admission" in r:
        add("| no API call per admission when the Job is cached | **%.2f** Job GETs per "
            "admission (%s) | %s |" % (r["api_calls_per_admission"],
                                       "cache" if r["cache"] else "no cache in this build",
                                       verdict(r["api_calls_per_admission"] == 0)))
    m = r.get("memory") or {}
    if "rss_10k_kib" in m:
        add("| RSS ≤ 64 MiB with 10,000 Jobs cached | **%.1f MiB** (%s) | %s |" % (
            m["rss_10k_kib"] / 1024,
            "Jobs in the cache" if m.get("cached") else
            "no cache in this build: the Jobs are not in the webhook, so this does not "
            "test the target yet", verdict(m["rss_10k_kib"] <= 64 * 1024) if m.get("cached")
            else "not testable yet (%.1f MiB)" % (m["rss_10k_kib"] / 1024)))
    if "growth_kib" in m:
        flat = m["growth_kib"] < 1024
        held = m.get("held")
        add("| RSS flat after 1,000,000 admissions (growth < 1 MiB after warm-up) | **%+d KiB** "
            "after %s admissions%s%s | %s |" % (
                m["growth_kib"], "{:,}".format(m["admissions"]),
                " (fewer than 1,000,000: see Memory)" if m["admissions"] < 1000000 else "",
                "; heap held %+d bytes over the leak check's second run (see Memory)" % (
                    held[2][1] - held[1][1]) if held else "",
                verdict(flat)))
    add("")

    add("## Throughput and latency (wrk, keep-alive over TLS, %d s per run)" % DURATION)
    add("")
    add("Request bodies: AdmissionReviews as kube-apiserver sends them (tests/harness.py "
        "build_pod + review, compact JSON), rotated by bench/rotate.lua, each thread from "
        "its own offset.")
    add("")
    add("* all plugins: %s; Jobs %s (pytorch-large: pytorch-job with a production-like "
        "template, 8 pods)." % (r.get("bodies_all"), r.get("jobs_all")))
    add("* pytorch set (webhook vs Go): %s; Jobs %s, plugins pytorch, svc, env. Go and C "
        "patches compared: %s pods identical after patching." % (
            r.get("bodies_pt"), r.get("jobs_pt"), r.get("go_same", "?")))
    if "api_get_ms" in r:
        add("* test API server (tests/apiserver.py): one Job GET on a kept-alive TLS "
            "connection takes %.1f ms (median of 20). A webhook without a Job cache makes "
            "one per admission, so without the cache its figures measure this server, not "
            "the webhook." % r["api_get_ms"])
    add("* nginx: the webhook's own answer closest to the mean answer size, %s bytes, "
        "as a fixed `return 200` body (bench/nginx.conf.in)." % r.get("fixed_body", "?"))
    add("")
    add("| server | bodies | conns | req/s | p50 ms | p99 ms | p99.9 ms | max ms | errors "
        "| denied |")
    add("|---|---|---|---|---|---|---|---|---|---|")
    for label in ("webhook (all plugins)", "nginx (ceiling)", "webhook transport (fixed answer)",
                  "webhook (pytorch set)", "go webhook (pytorch set)"):
        for c, res in sorted((w.get(label) or {}).items()):
            server, _, bodies = label.partition(" (")
            add("| %s | %s | %d | %.0f | %s | %s | %s | %s | %d | %d |" % (
                server, bodies.rstrip(")"), c, res["rps"], fmt_ms(res["p50_us"]),
                fmt_ms(res["p99_us"]), fmt_ms(res["p999_us"]), fmt_ms(res["max_us"]),
                res["errors"], res["denied"]))
    add("")
    add("| ratio | c=1 | c=16 | c=128 |")
    add("|---|---|---|---|")
    for name, a, bb in (("webhook / nginx req/s", "webhook (all plugins)", "nginx (ceiling)"),
                        ("webhook transport / nginx req/s", "webhook transport (fixed answer)",
                         "nginx (ceiling)"),
                        ("webhook / webhook transport req/s", "webhook (all plugins)",
                         "webhook transport (fixed answer)"),
                        ("webhook / Go req/s", "webhook (pytorch set)",
                         "go webhook (pytorch set)")):
        if a in w and bb in w:
            add("| %s | %s |" % (name, " | ".join(
                "%.2f" % (w[a][c]["rps"] / w[bb][c]["rps"]) for c in CONNECTIONS)))
    if "webhook (pytorch set)" in w and "go webhook (pytorch set)" in w:
        add("| webhook / Go p99 | %s |" % " | ".join(
            "%.2f" % (w["webhook (pytorch set)"][c]["p99_us"] /
                      max(1, w["go webhook (pytorch set)"][c]["p99_us"])) for c in CONNECTIONS))
    add("")
    add("\"errors\" are wrk's connect/read/write/timeout errors and HTTP statuses ≥ 400; "
        "\"denied\" counts answers without `\"allowed\":true`. wrk runs 2 threads (1 at "
        "c=1, as wrk needs a connection per thread) on the same 2 cores as the server.")
    add("")

    limits = throughput_limits(r)
    if limits:
        add("### What limits throughput")
        add("")
        lines.extend(limits)
        add("")

    add("## Burst")
    add("")
    bu = r.get("burst")
    if bu:
        add("One Job of %d replicas (pytorch-job scaled up; plugins %s) in the test API "
            "server; %d AdmissionReviews (%s each) for its pods sent at once over %d "
            "pre-opened TLS connections (Python threads, http.client, released by one "
            "barrier)." % (bu["replicas"], bu["plugins"], bu["n"], bu["body"], bu["n"]))
        add("")
        add("| answered allowed with a patch | slowest | p99 | p50 | all answered after |")
        add("|---|---|---|---|---|")
        add("| %d / %d | **%.1f ms** | %.1f ms | %.1f ms | %.1f ms |" % (
            bu["ok"], bu["n"], bu["slowest_ms"], bu["p99_ms"], bu["p50_ms"], bu["wall_ms"]))
        add("")
        add("Times are measured in the client (send to whole answer read), so they include "
            "the Python client's own scheduling of 500 threads on the same 2 cores.")
    else:
        add("not measured (see the output below)")
    add("")

    add("## Connections")
    add("")
    cn = r.get("conn", {})
    if "rss10000" in cn:
        each_1k = (cn["rss1000"] - cn["rss0"]) / 1000
        each_10k = (cn["rss10000"] - cn["rss0"]) / 10000
        add("| | RSS | per connection |")
        add("|---|---|---|")
        add("| no connection (after 200 reviews) | %.1f MiB | |" % (cn["rss0"] / 1024))
        add("| 1,000 idle TLS connections | %.1f MiB | %.1f KiB |" % (cn["rss1000"] / 1024,
                                                                    each_1k))
        add("| 10,000 idle TLS connections | %.1f MiB | **%.1f KiB** |" % (
            cn["rss10000"] / 1024, each_10k))
        add("")
        add("Idle: handshake done (TLS 1.3, ECDSA P-256), then silent (`--max-connections "
            "20000`, no time limit within the run). The default `--max-connections 1000` "
            "follows from this: connections may take a quarter of the Deployment's 64Mi "
            "memory request, 64 MiB / 4 / %.0f KiB = %d, rounded down (webhook/server.h "
            "SERVER_DEFAULT_CONNECTIONS); at the limit they cost %.0f MiB. 10,000 would cost "
            "%.0f MiB: raise the memory request with the flag." % (
                each_10k, int(64 * 1024 / 4 / each_10k), each_10k * 1000 / 1024,
                each_10k * 10000 / 1024))
        add("")
    if "flood_ms" in cn:
        add("| a prompt client, 30 reviews, each on a new connection | median | slowest |")
        add("|---|---|---|")
        add("| with 500 idle TLS connections open (below the limit; target 100 ms) | "
            "%.1f ms | **%.1f ms** |" % cn["below_ms"])
        add("| behind 200 slowloris + 800 idle TLS connections at the default limit "
            "(target 1 s) | %.1f ms | **%.1f ms** |" % cn["flood_ms"])
        add("")
        add("Behind the flood, each new connection makes the oldest idle or incomplete one "
            "give way (webhook/server_conn.c); before that change these reviews waited "
            "3.7-4.1 s in the kernel's accept queue. Times are the client's (TLS handshake "
            "included) on these 2 shared cores (load average %s before the run)." %
            r.get("loadavg", "?"))
        add("")
    if not cn:
        add("not measured (see the output below)")
        add("")

    add("## Memory")
    add("")
    if m:
        add("| | |")
        add("|---|---|")
        add("| RSS after start, example Jobs only | %.1f MiB |" % (r.get("rss_start_kib", 0) / 1024))
        if "rss_10k_kib" in m:
            add("| RSS with %d Jobs of 10 tasks in the API server (%.1f KiB of JSON each) | "
                "**%.1f MiB** (%s) |" % (m["jobs"], m["job_bytes"] / 1024,
                                         m["rss_10k_kib"] / 1024,
                                         "in the watch-fed cache" if m.get("cached") else
                                         "no cache yet: the webhook does not hold them"))
        if "rss_before_kib" in m:
            add("| RSS before the run (after %d warm-up admissions) | %.1f MiB |" % (
                m["warmup"], m["rss_before_kib"] / 1024))
            add("| RSS after %d admissions (16 connections, %.0f s) | %.1f MiB |" % (
                m["admissions"], m["seconds"], m["rss_after_kib"] / 1024))
            add("| growth | **%+d KiB** |" % m["growth_kib"])
            add("| peak RSS (VmHWM) | %.1f MiB |" % (m["hwm_kib"] / 1024))
            add("| errors / denied during the run | %d / %d |" % (m["errors"], m["denied"]))
        held = m.get("held")
        if held:
            for done, nbytes, blocks in held:
                add("| heap blocks held after %s admissions (glibc malloc, bench/live_heap.c) | "
                    "%.2f MiB in %s blocks |" % ("{:,}".format(done), nbytes / 2**20,
                                                "{:,}".format(blocks)))
            add("| heap held, growth over the last %s admissions | **%+d bytes** (%+d blocks; "
                "one byte kept per admission would be %+d) |" % (
                    "{:,}".format(held[2][0] - held[1][0]), held[2][1] - held[1][1],
                    held[2][2] - held[1][2], held[2][0] - held[1][0]))
        add("")
        if held:
            add("RSS also counts what the allocator keeps of what was freed (the pages of "
                "each thread's heap), so its growth over a run cannot tell a leak from a "
                "heap settling. The heap held can: a second webhook, linked with glibc's "
                "malloc (`make ALLOCATOR=`) and started as `LD_PRELOAD=$W/live_heap.so "
                "LIVE_HEAP_FILE=$W/live-heap $W/build-glibc/volcano-plugin-webhook serve ...` "
                "(bench/live_heap.c counts every malloc-family block's malloc_usable_size "
                "at its allocation and its free; not the connections' mmap'd pools or the "
                "thread stacks), runs the same warm-up, on 128 connections, and then half the "
                "fixed count twice on 16; a leak grows it over the second run as over the "
                "first. What an admission keeps is bounded: each worker thread's trees of "
                "the last Jobs it read (at most 16 and 16 KiB of their text, "
                "controller/cache.c), made when the thread first serves one of the Job's "
                "pods. A thread that starts serving only in a measured run adds such a step "
                "(about 1,800 blocks for these Jobs); the warm-up runs on 128 connections "
                "to make that rare, and a leak, unlike a step, grows both runs.")
            add("")
        if m.get("capped"):
            add("The default is 1,000,000 admissions, but at this build's 16-connection rate "
                "that would take %.0f minutes, so the run was cut to what fits in about "
                "%d s (%d admissions asked). `BENCH_ADMISSIONS=1000000 make bench` runs the "
                "full count." % (ADMISSIONS / w["webhook (all plugins)"][16]["rps"] / 60,
                                 MEMORY_CAPPED_S, m["admissions_asked"]))
            add("")
        add("Command: `%s`" % m.get("cmd", "?"))
    else:
        add("not measured (see the output below)")
    add("")

    add("## Reconcile")
    add("")
    rec = r.get("reconcile")
    if rec is None:
        add("skipped: no reconcile side yet (`serve --help` has no `--resync-period`).")
    elif rec and rec.get("modes"):
        n = rec["jobs"]
        add("%s Jobs created at once (one POST to the test API server's /_test/objects) "
            "while the webhook runs with its default flags (leader election on, 4 reconcile "
            "workers, --kube-api-qps 50, --kube-api-burst 100), then again with "
            "`--kube-api-qps 0` (no client rate limit), each time against a fresh test API "
            "server; the clock stops when the last object exists (polled every 0.25 s). "
            "Without ssh: plugin svc (ConfigMap, Service, NetworkPolicy per Job); with ssh: "
            "ssh and svc (plus the Secret, whose RSA 2048 key pair is made per Job). CPU is "
            "the process's user+system time over the wall time, in cores (this machine has "
            "%d, shared with the test API server, the poller and other users)." % (
                "{:,}".format(n), os.cpu_count()))
        add("")
        add("| %s new Jobs | client rate limit | time until every auxiliary object exists "
            "| Jobs/s | ssh keys/s | API requests per Job | CPU: webhook / test API server "
            "|" % "{:,}".format(n))
        add("|---|---|---|---|---|---|---|")
        for mode, _ in Bench.RECONCILE_MODES:
            cases = rec["modes"].get(mode)
            if cases is None:
                add("| both | %s | not run (see the output below) | | | | |" % mode)
                continue
            for label, *_ in Bench.RECONCILE_CASES:
                x = cases.get(label)
                if not x:
                    add("| %s | %s | failed (see the output below) | | | | |" % (label, mode))
                    continue
                s = x.get("seconds")
                add("| %s | %s | %s | %s | %s | %.1f | %.2f / %.2f |" % (
                    label, mode, "**%.1f s**" % s if s
                    else "not all after %d s (%d)" % (Bench.RECONCILE_TIMEOUT_S, x["have"]),
                    "%.1f" % (n / s) if s else "—",
                    "**%.1f**" % (n / s) if s and label == "with ssh" else "—",
                    x["calls_per_job"], x["webhook_cores"], x["api_cores"]))
        add("")
        kg = rec.get("keygen_per_s")
        if kg:
            add("RSA 2048 key generation alone (`bench_admission --keys %d`, one thread): "
                "**%.1f keys/s** per core, so at most %.0f keys/s on all %d cores." % (
                    Bench.KEYGEN_KEYS, kg, kg * os.cpu_count(), os.cpu_count()))
            add("")
        add("What limits each figure: %s" % reconcile_limits(rec))
        extra = [c.get("pass_seconds") for m, c in rec["modes"].items()
                 if m != Bench.RECONCILE_MODES[0][0]]
        if extra and extra[0]:
            add("")
            add("The unthrottled pass (both cases, its own API server and webhook start) took "
                "%.0f s of this run%s." % (
                    extra[0], "" if extra[0] <= 240 else
                    ", more than the ~4 minutes it is meant to add; the job count is kept "
                    "at %s so that the rows compare" % "{:,}".format(n)))
    else:
        add("failed (see the output below)")
    add("")

    add("## Instructions per admission (callgrind)")
    add("")
    cg = r.get("callgrind") or {}
    if "all plugins" in cg:
        add("bench/bench_admission runs `admission_handle` in-process over the same bodies, "
            "the Jobs served from the product's Jobs cache as in the server (cache_get_read: "
            "a Job's kept text parsed once per version and thread; no API call); "
            "callgrind counts only its loop, with the allocator the binary links "
            "(`%s`; callgrind runs the program's own malloc, so another allocator gives "
            "other counts: glibc's malloc gave 17.6%% more per admission)." % cg.get(
                "allocator", "unknown"))
        add("")
        base = cg.get("baseline") or {}
        if base:
            add("| bodies | instructions per admission | baseline %s | change |" % base["rev"])
            add("|---|---|---|---|")
        else:
            add("| bodies | instructions per admission |")
            add("|---|---|")
        for label in ("all plugins", "pytorch set"):
            if label not in cg:
                continue
            if label in base:
                b = base[label]["per_admission"]
                add("| %s | **%.0f** | %.0f | %+.1f%% |" % (
                    label, cg[label]["per_admission"], b,
                    100.0 * (cg[label]["per_admission"] - b) / b))
            else:
                add("| %s | **%.0f** |" % (label, cg[label]["per_admission"]))
        add("")
        gocg = cg.get("go")
        if gocg:
            add("The Go webhook's handler (bench/go-webhook `--bench-bodies`: the same pytorch "
                "set reviews unmarshalled, decided and marshalled in-process, no HTTP) under "
                "callgrind, counted the same way: **%.0f** instructions per review, its garbage "
                "collector included (runs of %d and %d reviews, the difference per review; "
                "GOMAXPROCS=1), so one admission here is **%.2f ×** the Go handler's."
                % (gocg["per_review"], gocg["few"], gocg["more"],
                   cg["pytorch set"]["per_admission"] / gocg["per_review"]))
            add("")
        tp = cg.get("time_parts")
        timed = isinstance(tp, dict)
        add("The parts of an admission (all plugins, inclusive instructions per admission; "
            "they overlap where one calls another: the Job from the cache includes its "
            "parse, which reading JSON counts too)%s:" % (
                ", beside each part's share of the admission's instructions and of its time"
                if timed else ""))
        add("")
        head = ["part", "this build"]
        if timed:
            head += ["of the instructions", "of the time (perf)"]
        if "all plugins" in base:
            head.append("baseline %s" % base["rev"])
        add("| %s |" % " | ".join(head))
        add("|%s" % ("---|" * len(head)))
        whole = cg["all plugins"]["per_admission"]
        for name, _ in COMPONENTS:
            now = cg["all plugins"].get("parts", {}).get(name)
            row = [name, "%.1fk" % (now / 1000) if now is not None else "—"]
            if timed:
                row.append("%.0f%%" % (100.0 * now / whole) if now is not None else "—")
                row.append("%.0f%%" % (100.0 * tp[name]) if tp.get(name) is not None else "—")
            if "all plugins" in base:
                was = base["all plugins"].get("parts", {}).get(name)
                row.append("%.1fk" % (was / 1000) if was is not None else "—")
            add("| %s |" % " | ".join(row))
        add("")
        if timed:
            add("The time shares are perf's cpu-clock samples of bench_admission over 40,000 "
                "admissions of the same bodies (DWARF call graphs), each part's over "
                "admission_handle's. A part's share of the time can differ from its share of "
                "the instructions, as instructions differ in what they cost; the throughput "
                "targets are about time.")
        else:
            add("Time per part: not measured (%s)." % tp)
        add("")
        add("Without valgrind, one thread: `%s` (%.1f µs per admission); pytorch set `%s` "
            "(%.1f µs)." % (cg.get("timing"), cg.get("us_per_admission", 0),
                            cg.get("timing_pytorch"), cg.get("us_per_admission_pytorch", 0)))
        add("")
        add("Where the instructions go (all plugins, inclusive):")
        add("")
        add("| inclusive | function |")
        add("|---|---|")
        tot = cg["all plugins"]["per_admission"] * cg["all plugins"]["n"]
        for cost, fn in cg["all plugins"]["top"]:
            add("| %.1f%% | `%s` |" % (100.0 * cost / tot, short_fn(fn)))
        add("")
        add("Most instructions of their own (exclusive):")
        add("")
        add("| self | function |")
        add("|---|---|")
        for cost, fn in cg["all plugins"]["self"]:
            add("| %.1f%% | `%s` |" % (100.0 * cost / tot, short_fn(fn)))
        add("")
        add("Command: `%s` then `callgrind_annotate --inclusive=yes`." % cg["all plugins"]["cmd"])
    else:
        add("not measured (see the output below)")
    add("")

    add("## Exact commands")
    add("")
    add("```sh")
    add("make bench                      # = make all && bench/run")
    cmds = os.environ.get("BENCH_COMMANDS")
    if cmds and os.path.exists(cmds):
        with open(cmds) as f:
            for line in f:
                add(line.rstrip("\n"))
    for label in ("webhook (all plugins)", "nginx (ceiling)", "go webhook (pytorch set)"):
        if label in w:
            add("# %s, c = 1, 16, 128 (-t 1 at c=1)" % label)
            add(w[label][16]["cmd"])
    add("```")
    add("")
    add("The webhook runs as `build/volcano-plugin-webhook serve --bind-address 127.0.0.1 "
        "--port 0 --port-file F --tls-cert-file tls.crt --tls-private-key-file tls.key "
        "--kubeconfig K` (default flags otherwise), with the test API server "
        "(tests/apiserver.py, HTTPS, bearer token) holding the Jobs; certificates from "
        "`gen-certs`; nginx with bench/nginx.conf.in; the Go webhook with `--jobs "
        "jobs-pytorch.json` (the same Jobs, read once at start).")
    add("")
    if r["failures"]:
        add("## Stages that failed")
        add("")
        for f in r["failures"]:
            add("* " + f)
        add("")
    add("## Output of the run")
    add("")
    add("```")
    lines.extend(LOG)
    add("```")
    # Sections other scripts write (bench/scale.py's) are kept after this run's.
    lines.extend(kept_sections())
    with open(RESULTS, "w") as f:
        f.write("\n".join(lines) + "\n")


# The headings of RESULTS.md sections that another bench script owns.
OTHER_SECTIONS = ("## Three replicas through a 10,000-pod burst",)


def kept_sections():
    """The lines of OTHER_SECTIONS in the current RESULTS.md, each up to the next heading."""
    try:
        with open(RESULTS, encoding="utf-8") as f:
            old = f.read().split("\n")
    except FileNotFoundError:
        return []
    out = []
    for title in OTHER_SECTIONS:
        if title in old:
            start = old.index(title)
            end = next((i for i in range(start + 1, len(old)) if old[i].startswith("## ")),
                       len(old))
            section = old[start:end]
            while section and section[-1] == "":
                section.pop()
            out += [""] + section
    return out


def main():
    started = time.time()
    t0 = time.monotonic()
    b = Bench()
    with open("/proc/loadavg") as f:
        b.r["loadavg"] = " ".join(f.read().split()[:3])
    # the tree bench/run built, as it was then: an edit during the run is not measured
    b.r["tree"] = sh("git -C %s describe --always --dirty" % ROOT)
    say("load average before the run: %s (other processes share these %d cores)" % (
        b.r["loadavg"], os.cpu_count()))
    try:
        b.setup()
        for name, stage in (("throughput", b.throughput), ("burst", b.burst),
                            ("memory", b.memory), ("reconcile", b.reconcile),
                            ("callgrind", b.callgrind), ("connections", b.connections)):
            if STAGES and name not in STAGES:
                continue
            s0 = time.monotonic()
            try:
                stage()
            except Exception as e:  # noqa: BLE001 - one failed stage does not stop the others
                b.r["failures"].append("%s: %s" % (name, str(e)[:2000]))
                say("%s: FAILED: %s" % (name, str(e)[:2000]))
            say("[%s: %.0f s]" % (name, time.monotonic() - s0))
    finally:
        b.stop_all()
    elapsed = time.monotonic() - t0
    say("bench: %.0f s in all; results in %s" % (elapsed, os.path.relpath(RESULTS, ROOT)))
    write_results(b, started, elapsed)
    return 1 if b.r["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
