#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""scale.py - `make bench-scale`: three replicas behind one address through a 10,000-pod
burst, the Lease holder killed half way (tests/test_scale.py's Scenario, large).

Runs, each against its own test API server and three fresh replicas behind
tests/harness.py's RoundRobinProxy, with the default --leader-elect-* durations (15 s
lease, 10 s renew deadline, 2 s retry period):
  all at once  N AdmissionReviews from C connections opened first and released together
               (default 10,000 and 500), the holder gets SIGKILL;
  paced        the same N at RATE pods per second (default 250) on 50 connections, the
               holder gets SIGTERM (drained, then the Lease released).
Every answer is checked against the patch one replica gives for the same review (itself
checked against `render --review` for a sample), and the auxiliary objects of every Job
after the takeover (see tests/test_scale.py). Then the section "Three replicas through a
10,000-pod burst" of BENCH_RESULTS (bench/RESULTS.md) is replaced, or appended.

Env: BUILD (build), BENCH_SCALE_N (10000), BENCH_SCALE_CONNS (500), BENCH_SCALE_RATE
(250), BENCH_RESULTS (bench/RESULTS.md). Exit 1 when an expectation failed (the figures
are written anyway).
"""

import os
import platform
import resource
import signal
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(ROOT, "tests"))
import harness  # noqa: E402
import test_scale  # noqa: E402

N = int(os.environ.get("BENCH_SCALE_N") or 10000)
CONNS = int(os.environ.get("BENCH_SCALE_CONNS") or 500)
RATE = float(os.environ.get("BENCH_SCALE_RATE") or 250)
RESULTS = os.environ.get("BENCH_RESULTS") or os.path.join(BENCH, "RESULTS.md")
TITLE = "## Three replicas through a 10,000-pod burst"
LEASE = dict(lease="15s", renew="10s", retry="2s", resync="5s")


def say(msg):
    print(msg, flush=True)


def ms(v):
    return "—" if v is None else "%.1f ms" % v


def run(name, **kw):
    say("== %s: %d pods, %d connections, %s, %s" % (
        name, N, kw["conns"], "all at once" if kw["rate"] is None else
        "%g pods/s" % kw["rate"], signal.Signals(kw["sig"]).name))
    s = test_scale.Scenario(N, say=say, **dict(LEASE, **kw))
    t = time.monotonic()
    try:
        s.run()
    except AssertionError as e:
        s.issues.append("run stopped: %s" % e)
    finally:
        try:
            s.close()
        except AssertionError as e:
            s.issues.append("stop: %s" % e)
    s.figures["whole_s"] = time.monotonic() - t
    for k, v in sorted(s.figures.items()):
        say("  %s = %r" % (k, v))
    for p in s.problems():
        say("  PROBLEM: %s" % p)
    return name, kw, s


def secs(f, key):
    return "%.2f s" % f[key] if f.get(key) is not None else "—"


def rows(results):
    out = ["| run | answered | failed | wrong patch | retried (dropped connection) | "
           "slowest answer | p99 | p50 | burst took | new Lease holder after the signal | "
           "it reconciles after the signal (its log) | acquired after the old holder's last "
           "renewal / release | late Job's objects after the signal (made by) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, kw, s in results:
        f = s.figures
        made = f.get("late_made_by") or []
        by = ", ".join("replica %d%s" % (r, " (old holder, draining)" if r == f.get("killed")
                                         else " (new holder)" if r == f.get("new_leader")
                                         else "") for r in made)
        out.append("| %s, %s | %s / %s | %s | %s | %s | **%s** | %s | %s | %s | **%s** | %s | "
                   "%s (protocol: ≤ %s) | %s (%s) |" % (
                       name, signal.Signals(kw["sig"]).name,
                       "{:,}".format(f["answered"]) if "answered" in f else "—",
                       "{:,}".format(N),
                       f.get("failed", "—"), f.get("wrong", "—"), f.get("retried", "—"),
                       ms(f.get("slowest_ms")), ms(f.get("p99_ms")), ms(f.get("p50_ms")),
                       secs(f, "burst_s"), secs(f, "new_holder_after"),
                       secs(f, "new_leader_reconciling_after"), secs(f, "acquire_gap_s"),
                       "%.1f s" % f["acquire_bound_s"] if "acquire_bound_s" in f else "—",
                       secs(f, "late_objects_after"), by or "—"))
    out += ["", "| run | replica | admissions | admissions/s (its answers / time from the "
            "start to its last answer) |", "|---|---|---|---|"]
    for name, kw, s in results:
        f = s.figures
        for r, (count, rate) in sorted((f.get("per_replica") or {}).items(),
                                       key=lambda x: (x[0] is None, x[0])):
            role = ""
            if r == f.get("killed"):
                role = " (the holder, %s)" % signal.Signals(kw["sig"]).name
            elif r == f.get("new_leader"):
                role = " (the new holder)"
            out.append("| %s | %s%s | %d | %s |" % (name, r, role, count,
                                                   "%.0f" % rate if rate else "—"))
    return out


def section(results):
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    lines = [TITLE, "",
             "Written by `make bench-scale` (bench/scale.py, tests/test_scale.py's Scenario). "
             "%s UTC, webhook %s, %s, %d cores (nproc), load average before: %s." % (
                 time.strftime("%Y-%m-%d %H:%M", time.gmtime()), git, platform.node(),
                 os.cpu_count(), " ".join("%.2f" % x for x in os.getloadavg())),
             "",
             "Three replicas (`serve`, --leader-elect-lease-duration 15s, renew deadline 10s, "
             "retry period 2s, --shutdown-grace 6s) against one test API server, behind a "
             "round-robin TCP proxy on loopback (tests/harness.py RoundRobinProxy, standing in "
             "for a Service: one replica per new connection, a refused replica skipped). One "
             "Job of {:,} pods (mpi-job: 1 master, {:,} workers; ssh and svc), its {:,} "
             "AdmissionReviews sent through the proxy; when half are answered the Lease "
             "holder gets the signal and a second Job (late-job, svc) is created. Every "
             "answer is compared with the patch one replica gives for the same review when "
             "nothing else happens (that patch equal to `render --review`'s for pods 0, 1, "
             "N/2 and N-1); a review whose connection dropped before any answer is sent "
             "again, as kube-apiserver does.".format(N, N - 1, N),
             ""]
    lines += rows(results)
    lines += ["",
              "Times are measured in the client (Python threads, http.client over TLS, on the "
              "same 2 cores as the three replicas, the proxy and the test API server), send "
              "to whole answer read of the attempt that was answered. \"New Lease holder "
              "after the signal\" is polled every 50 ms, \"it reconciles\" is the time of "
              "its \"reconcile: leading, reconciling\" log line; \"acquired after\" "
              "compares the new holder's acquireTime with the killed holder's last renewTime "
              "(SIGKILL) or with the time the terminated holder logged its release (SIGTERM: it "
              "first drains its connections for at least 2 s and still leads meanwhile, so "
              "the late Job's objects are its own). A follower tries every retry period "
              "plus a jitter of up to 1.2 of it (client-go's JitterUntil), so the protocol's "
              "bound after a kill is a lease duration plus two such gaps of up to 4.4 s (it "
              "sees the last renewal at one try, counts the lease duration from then, takes "
              "the Lease at the first try after), after a release one gap. Admissions per "
              "second per replica are its share of one client on 2 cores, not its capacity "
              "(see Throughput above for that).",
              ""]
    problems = [(name, p) for name, _, s in results for p in s.problems()]
    if problems:
        lines += ["Expectations that failed:", ""]
        lines += ["* %s: %s" % (name, p) for name, p in problems]
    else:
        lines += ["Every expectation of tests/test_scale.py held in both runs: no failed or "
                  "wrong admission, each Job's auxiliary objects exactly once after the "
                  "takeover (the big Job's with their uids and the ssh Secret's data "
                  "unchanged, no create or delete of them after the signal)."]
    return lines


def write(lines):
    try:
        with open(RESULTS, encoding="utf-8") as f:
            old = f.read().split("\n")
    except FileNotFoundError:
        old = ["# Benchmark results", ""]
    if TITLE in old:
        start = old.index(TITLE)
        end = next((i for i in range(start + 1, len(old)) if old[i].startswith("## ")),
                   len(old))
        new = old[:start] + lines + [""] + old[end:]
    else:
        while old and old[-1] == "":
            old.pop()
        new = old + [""] + lines + [""]
    with open(RESULTS, "w", encoding="utf-8") as f:
        f.write("\n".join(new).rstrip("\n") + "\n")


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 65536) if hard != resource.RLIM_INFINITY else 65536
    if soft < want:  # 500 client sockets and 1,000 proxy sockets in this process
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    if not os.access(harness.binary(), os.X_OK):
        sys.exit("%s not built (make)" % harness.binary())
    results = [run("all at once", conns=CONNS, rate=None, sig=signal.SIGKILL),
               run("paced", conns=50, rate=RATE, sig=signal.SIGTERM)]
    write(section(results))
    say("wrote %s" % RESULTS)
    return 1 if any(s.problems() for _, _, s in results) else 0


if __name__ == "__main__":
    sys.exit(main())
