# SPDX-License-Identifier: Apache-2.0
"""test_hostile.py - hostile clients and hostile JSON against the running webhook.

Hostile clients (slowloris and the TLS profile are in test_operations.py):
  - 1,000 idle connections (TLS after the handshake, and plain TCP that never sends a
    byte): a well-behaved client is answered while --max-connections is not exceeded;
    past it each new connection makes the oldest idle one give way (only the oldest
    are closed before --connection-idle-timeout, the flood of test_flood.py); every
    other one is closed after --connection-idle-timeout, not before.
  - Clients that drop mid-request (request line only, headers only, half a body, reset,
    whole request but never reading the answer): the server keeps serving and
    webhook_admission_in_flight returns to 0.
  - Pipelined requests on one keep-alive connection: all answered, in order; a refusal
    sent before its body was read (415) closes the connection and says so, or skips
    that body, never parsing it as a request.
  - Huge headers (64 KiB field, 64 KiB URL, 1,000 fields): 431/414 or a closed
    connection, then normal service.
  - Chunked bodies that never end: closed by --request-timeout (a trickle) or by the
    3 MiB cap (a flood); one that ends past the cap gets 413.
  - Slow uploads holding --max-body-bytes-in-flight: the next request gets 503 with a
    Status and Retry-After: 1 before its body; served again once they end or vanish,
    and webhook_http_body_bytes_in_flight returns to 0.
  - Deeply nested JSON, huge arrays within 3 MiB, duplicate keys (the last one wins, as
    in Go's decoder), invalid UTF-8, numbers out of range: a Status 400 naming the
    problem, or a correct AdmissionReview.
  - `/`, `~`, quotes, backslashes and control characters in task, container and pod
    names, annotation keys and values echoed into the patch: the patch applies strictly
    (jsonpatch) and a second review of the patched pod gives no patch.
  - Refused traffic (a bare TCP connect, plain HTTP, TLS 1.1, no common cipher, an
    untrusted certificate; 400/404/405/413/415): one info line per 5 s for each kind,
    matched exactly (client address, reason, the count left out), and the handshakes
    counted by reason in webhook_tls_handshakes_refused_total (a request libmicrohttpd
    refuses itself is logged so too, without the client's address, which it does not
    give).
Throughout, a background well-behaved client sends admissions (keep-alive and, where
the connection limit allows, new connections): every one is answered, allowed, with
its uid. No latency is asserted; waits have generous upper bounds only.
"""

import copy
import errno
import io
import json
import re
import select
import socket
import ssl
import struct
import threading
import time
import unittest
import warnings

import harness

JOB = "mpi-job"                 # plugins ssh + svc; tasks mpimaster (1), mpiworker (2)
SERVER_NAME = harness.service_dns()
MIB = 1024 * 1024
CAP = 3 * MIB                   # SERVER_MAX_BODY
REQUEST_TIMEOUT = 3.0           # --request-timeout of the shared server (seconds)


# ---------------------------------------------------------------- helpers

def tls_context(certs):
    ctx = harness.https_context(certs["ca.crt"])
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def tls_socket(port, ctx, timeout=10):
    """A verified TLS connection, handshake done (caller closes)."""
    return harness.tls_handshake(port, ctx, SERVER_NAME, timeout)


def post_bytes(body, ctype="application/json", extra=b""):
    """A raw HTTP/1.1 POST /pods/mutate with Content-Length."""
    return (b"POST /pods/mutate?timeout=10s HTTP/1.1\r\nHost: " + SERVER_NAME.encode() +
            b"\r\nContent-Type: " + ctype.encode() + b"\r\nContent-Length: %d\r\n" % len(body) +
            extra + b"\r\n" + body)


def read_response(f):
    """One HTTP/1.1 response from a buffered reader: (status, {lower name: value}, body).
    Bodies are delimited by Content-Length (MHD's buffer responses) or the end of the
    stream. Raises EOFError when the stream ends before a status line."""
    line = f.readline(65537)
    if not line:
        raise EOFError("connection closed before a response")
    m = re.match(rb"HTTP/1\.[01] (\d{3}) ", line)
    if not m:
        raise AssertionError("bad status line %r" % line[:100])
    headers = {}
    while True:
        h = f.readline(65537)
        if h in (b"\r\n", b"\n", b""):
            break
        name, _, value = h.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = f.read(int(headers["content-length"]))
    else:
        body = f.read()
    return int(m.group(1)), headers, body


def drain(sock, timeout=10.0):
    """Read until the peer closes: (bytes received, how it ended: "eof", "reset" or
    "timeout")."""
    sock.settimeout(timeout)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            return out, "timeout"
        except (ssl.SSLError, OSError):
            return out, "reset"
        if not data:
            return out, "eof"
        out += data
    return out, "timeout"


def max_in_window(times, width):
    """The largest number of the (sorted) times inside any window [t, t + width)."""
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while times[lo] <= t - width:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def in_flight(wh):
    """webhook_admission_in_flight from GET /metrics."""
    conn = wh.connection()
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        text = resp.read().decode()
    finally:
        conn.close()
    if resp.status != 200:
        raise AssertionError("/metrics: HTTP %d" % resp.status)
    m = re.search(r"^webhook_admission_in_flight (\S+)$", text, re.M)
    if not m:
        raise AssertionError("no webhook_admission_in_flight in /metrics")
    return float(m.group(1))


def check_answer(rev, status, body):
    """None when (status, body) is kube-apiserver's idea of a good answer to rev, else
    why not."""
    if status != 200 or not isinstance(body, dict):
        return "HTTP %d %r" % (status, str(body)[:200])
    resp = body.get("response") or {}
    if body.get("apiVersion") != rev["apiVersion"] or resp.get("uid") != rev["request"]["uid"]:
        return "wrong answer %r" % (str(body)[:200],)
    if resp.get("allowed") is not True:
        return "not allowed: %r" % (resp,)
    return None


class GoodClient:
    """The well-behaved client: admissions one after another on a keep-alive
    connection and, while `fresh` is set, each also on a new connection. Records every
    failure (no latency limit: client timeouts are 30 s)."""

    def __init__(self, wh, rev, fresh=True):
        self.wh = wh
        self.rev = rev
        self.body = json.dumps(rev).encode()
        self.fresh = threading.Event()
        if fresh:
            self.fresh.set()
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.answered = 0
        self.rounds = 0
        self.failures = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _post(self, conn):
        conn.request("POST", harness.WEBHOOK_PATH + "?timeout=10s", body=self.body,
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        raw = resp.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw
        why = check_answer(self.rev, resp.status, body)
        with self.lock:
            if why:
                self.failures.append(why)
            else:
                self.answered += 1

    def _run(self):
        keep = self.wh.connection(timeout=30)
        try:
            while not self.stop_event.is_set():
                conns = [(keep, False)]
                if self.fresh.is_set():
                    conns.append((self.wh.connection(timeout=30), True))
                for conn, fresh in conns:
                    try:
                        self._post(conn)
                    except Exception as e:   # noqa: BLE001 - every failure is recorded
                        with self.lock:
                            self.failures.append("%s: %r" % ("new" if fresh else "keep-alive",
                                                             e))
                        if not fresh:
                            keep.close()
                            keep = self.wh.connection(timeout=30)
                    finally:
                        if fresh:
                            conn.close()
                with self.lock:
                    self.rounds += 1
                self.stop_event.wait(0.01)
        finally:
            keep.close()

    def start(self):
        self.thread.start()
        return self

    def keep_alive_only(self, timeout=30):
        """From now on only the keep-alive connection; returns once a round without a
        new connection has begun (the round under way may still have had one)."""
        self.fresh.clear()
        with self.lock:
            want = self.rounds + 2
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.rounds >= want:
                    return
            time.sleep(0.01)
        raise AssertionError("good client: no round completed within %ds" % timeout)

    def wait_answered(self, n, timeout=30):
        """Wait until n more admissions were answered."""
        with self.lock:
            want = self.answered + n
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.answered >= want or self.failures:
                    return
            time.sleep(0.01)
        raise AssertionError("good client: %d answers not reached within %ds" % (want, timeout))

    def stop(self):
        """Stop; returns (answered, failures)."""
        self.stop_event.set()
        self.thread.join(60)
        if self.thread.is_alive():
            raise AssertionError("good client did not stop")
        return self.answered, list(self.failures)


class HostileCase(unittest.TestCase):

    @staticmethod
    def make_env(args=(), jobs=None):
        env = harness.Env(jobs=jobs if jobs is not None else [harness.load_job(JOB)],
                          # stop at once: nothing is in flight when a test ends
                          webhook_args=["--leader-elect=false", "--shutdown-grace", "0"] +
                          list(args))
        try:
            env.start()
        except BaseException:
            env.close()
            raise
        return env

    def good_client(self, env, fresh=True):
        job = env.jobs[0]
        pod = harness.build_pod(job, job["spec"]["tasks"][0]["name"], 0)
        client = GoodClient(env.webhook, harness.review(pod, job["metadata"]["namespace"]),
                            fresh).start()
        self.addCleanup(client.stop)
        client.wait_answered(2)
        return client

    def assert_good(self, client, least=1):
        answered, failures = client.stop()
        self.assertEqual(failures, [])
        self.assertGreaterEqual(answered, least)

    def assert_serving(self, wh, rev):
        """/healthz 200 and an admission answered on new connections."""
        wh.wait_healthy(timeout=10)
        status, body = wh.post(rev)
        self.assertIsNone(check_answer(rev, status, body))


# ---------------------------------------------------------------- idle connections

class IdleConnectionsTest(HostileCase):
    """1,000 idle connections against --max-connections 400, idle timeout 4 s."""

    LIMIT = 400
    IDLE = 4.0
    REORDER = 16         # places an accept may move (worker threads accept in parallel)
    N = 1000
    N_TLS = 150          # handshaken, then silent
    N_BELOW = 300        # opened first: below the limit with the good client's

    def test_idle_connections(self):
        env = self.make_env(["--max-connections", str(self.LIMIT),
                             "--connection-idle-timeout", "%ds" % self.IDLE,
                             "--request-timeout", "30s"])
        self.addCleanup(env.close)
        wh = env.webhook
        good = self.good_client(env)
        ctx = tls_context(env.certs)
        conns = []                       # {"sock", "tls", "opened", "closed"}
        self.addCleanup(lambda: [c["sock"].close() for c in conns])

        def open_tcp():
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            rc = s.connect_ex(("127.0.0.1", wh.port))
            if rc not in (0, errno.EINPROGRESS):
                s.close()
                raise AssertionError("connect: %s" % errno.errorcode.get(rc, rc))
            conns.append({"sock": s, "tls": False, "opened": time.monotonic(),
                          "closed": None})

        # Below the limit: 150 TLS (handshake completed) + 150 plain TCP, all silent.
        for i in range(self.N_BELOW):
            if i < self.N_TLS:
                s = tls_socket(wh.port, ctx)
                s.setblocking(False)
                conns.append({"sock": s, "tls": True, "opened": time.monotonic(),
                              "closed": None})
            else:
                open_tcp()
        # A well-behaved client is answered on new connections while they all idle.
        rev = good.rev
        for _ in range(5):
            status, body = wh.post(rev)
            self.assertIsNone(check_answer(rev, status, body))
        poller = select.poll()
        by_fd = {}
        for c in conns:
            poller.register(c["sock"].fileno(), select.POLLIN)
            by_fd[c["sock"].fileno()] = c
        unexpected = []

        def collect(timeout_ms):
            for fd, _ in poller.poll(timeout_ms):
                c = by_fd[fd]
                try:
                    data = c["sock"].recv(4096)
                except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                    continue   # e.g. a TLS 1.3 session ticket, consumed
                except (ssl.SSLError, OSError):
                    data = b""
                if data:
                    # GnuTLS may say goodbye with an alert record (type 21) before it
                    # closes; anything else is an answer nobody asked for.
                    if c["tls"] or not data.startswith(b"\x15\x03"):
                        unexpected.append(data[:80])
                    continue
                c["closed"] = time.monotonic()
                poller.unregister(fd)

        collect(0)
        self.assertEqual([c for c in conns if c["closed"] is not None], [],
                         "idle connections closed before the admissions were answered")
        # Past the limit: 700 more. The good client stops first: its keep-alive
        # connection, idle between requests, is older than the flood's and would give
        # way to it too.
        self.assert_good(good, 5)
        for _ in range(self.N - self.N_BELOW):
            open_tcp()
            c = conns[-1]
            poller.register(c["sock"].fileno(), select.POLLIN)
            by_fd[c["sock"].fileno()] = c
        deadline = time.monotonic() + 60
        while any(c["closed"] is None for c in conns) and time.monotonic() < deadline:
            collect(100)
        still_open = sum(1 for c in conns if c["closed"] is None)
        # Back below the limit: new connections are served again.
        for _ in range(5):
            status, body = wh.post(rev)
            self.assertIsNone(check_answer(rev, status, body))
        self.assertEqual(still_open, 0, "idle connections not closed within 60 s")
        self.assertEqual(unexpected, [])
        self.assertEqual(len(conns), self.N)
        # Closed before the idle timeout: the oldest ones, which gave way to the flood
        # (at least the N - LIMIT the server could not hold); the others by the idle
        # timeout, never before it.
        early = [i for i, c in enumerate(conns) if c["closed"] - c["opened"] < self.IDLE * 0.9]
        # "Oldest" is the order the server accepted them in: its worker threads accept in
        # parallel, so connections opened back to back may be taken in either order; by
        # no more than a few places (REORDER), never a young one for an old one.
        n = len(early)
        self.assertTrue(set(range(max(0, n - self.REORDER))) <= set(early), early)
        self.assertTrue(set(early) <= set(range(n + self.REORDER)), early)
        self.assertGreaterEqual(len(early), self.N - self.LIMIT)
        # The server holds at most LIMIT connections: no window shorter than IDLE sees
        # more idle-timeout closes than that.
        closes = sorted(c["closed"] for c in conns[len(early):])
        self.assertLessEqual(max_in_window(closes, self.IDLE * 0.5), self.LIMIT)
        self.assertTrue(wh.process.alive())


# ---------------------------------------------------------------- one shared server

class SharedServerCase(HostileCase):
    """One webhook (--request-timeout 3s) for the tests that leave it as they found it."""

    @classmethod
    def setUpClass(cls):
        job = harness.load_job(JOB)
        cls.env = cls.make_env(["--request-timeout", "%gs" % REQUEST_TIMEOUT], jobs=[job])
        cls.addClassCleanup(cls.env.close)
        cls.wh = cls.env.webhook
        cls.ctx = tls_context(cls.env.certs)
        cls.job = cls.env.jobs[0]
        cls.pod = harness.build_pod(cls.job, "mpimaster", 0)

    def setUp(self):
        self.good = self.good_client(self.env)

    def tearDown(self):
        # Whatever the test did, the server still serves (and is still running).
        self.assertTrue(self.wh.process.alive(), self.wh.process.log()[-3000:])

    def rev(self, pod=None):
        return harness.review(pod or self.pod, self.job["metadata"]["namespace"])

    def wait_in_flight_zero(self):
        deadline = time.monotonic() + 15
        value = in_flight(self.wh)
        while value != 0 and time.monotonic() < deadline:
            time.sleep(0.05)
            value = in_flight(self.wh)
        self.assertEqual(value, 0, "webhook_admission_in_flight did not return to 0")

    def post_raw(self, data, timeout=30):
        """POST raw bytes as the body; (status, parsed JSON or text)."""
        return self.wh.post(data, raw=True, timeout=timeout)

    def assert_bad_request(self, data, contains=None):
        status, body = self.post_raw(data)
        self.assertEqual(status, 400, str(body)[:300])
        self.assertIsInstance(body, dict, "400 body is not JSON")
        self.assertEqual((body["kind"], body["status"], body["reason"], body["code"]),
                         ("Status", "Failure", "BadRequest", 400))
        if contains:
            self.assertIn(contains, body["message"])
        return body


class DropMidRequestTest(SharedServerCase):

    def test_drops_keep_serving_no_in_flight_leak(self):
        rev = self.rev()
        body = json.dumps(rev).encode()
        full = post_bytes(body)
        head = full[:len(full) - len(body)]
        cases = {
            "request line only": b"POST /pods/mutate HTTP/1.1\r\n",
            "headers only": head,
            "half a body": head + body[:len(body) // 2],
            "all but the last byte": full[:-1],
            "whole request, answer never read": full,
            "two requests, second cut": full + head + body[:10],
        }
        for name, data in cases.items():
            for rst in (False, True):
                with self.subTest(case=name, reset=rst):
                    for _ in range(10):
                        s = tls_socket(self.wh.port, self.ctx)
                        s.sendall(data)
                        if rst:
                            # SO_LINGER 0: the close is a TCP reset, no close_notify.
                            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                         struct.pack("ii", 1, 0))
                        s.close()
        # Plain TCP: half a ClientHello, then gone.
        for _ in range(10):
            s = socket.create_connection(("127.0.0.1", self.wh.port), 10)
            s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
            s.close()
        self.assert_serving(self.wh, rev)
        self.assert_good(self.good, 1)
        # Every aborted admission left the in-flight gauge (the good client has stopped).
        self.wait_in_flight_zero()
        # ... which does count requests cut short while they are open.
        held = []
        try:
            for data in (head, head + body[:100], full[:-1]):
                held.append(tls_socket(self.wh.port, self.ctx))
                held[-1].sendall(data)
            deadline = time.monotonic() + 10
            while in_flight(self.wh) != 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertEqual(in_flight(self.wh), 3)
        finally:
            for s in held:
                s.close()
        self.wait_in_flight_zero()


class PipelineTest(SharedServerCase):

    def pipeline(self, data, n):
        """Send data in one go on a new connection; read n responses and then what
        follows until the server closes (bounded)."""
        s = tls_socket(self.wh.port, self.ctx, timeout=30)
        try:
            s.sendall(data)
            f = s.makefile("rb")
            answers = []
            for _ in range(n):
                answers.append(read_response(f))
                if answers[-1][1].get("connection", "").lower() == "close":
                    break
            rest = f.read()
        finally:
            s.close()
        return answers, rest

    def test_pipelined_requests_answered_in_order(self):
        revs = [self.rev() for _ in range(3)]
        data = (post_bytes(json.dumps(revs[0]).encode()) +
                post_bytes(json.dumps(revs[1]).encode()) +
                post_bytes(b"{") +
                post_bytes(json.dumps(revs[2]).encode()) +
                b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answers, rest = self.pipeline(data, 5)
        self.assertEqual([a[0] for a in answers], [200, 200, 400, 200, 200])
        for i, k in ((0, 0), (1, 1), (3, 2)):
            body = json.loads(answers[i][2])
            self.assertIsNone(check_answer(revs[k], 200, body))
            self.assertIsNotNone(harness.decode_patch(body))
        self.assertEqual(json.loads(answers[2][2])["reason"], "BadRequest")
        self.assertEqual(answers[4][2], b"ok")
        self.assertEqual(rest, b"")   # closed after the last, as asked
        self.assert_good(self.good, 1)

    def test_pipelined_answers_to_a_slow_reader(self):
        """Twenty admissions sent at once by a client with a small receive buffer that
        reads nothing for a second and then 700 bytes at a time: every answer arrives
        whole, in order, once (an answer's header record waits for its body's and goes
        out in the same write: webhook/server_tls.c server_tls_push; a socket with no
        room or part of a record's is check_server's test_tls_push_holds_one_record)."""
        revs = [self.rev(harness.build_pod(self.job, "mpiworker", i % 2)) for i in range(20)]
        data = b"".join(post_bytes(json.dumps(r).encode()) for r in revs)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # before connect: the window
        sock.settimeout(30)
        sock.connect(("127.0.0.1", self.wh.port))
        s = self.ctx.wrap_socket(sock, server_hostname=SERVER_NAME)
        try:
            s.sendall(data)   # 60 KiB: within the kernel's buffers, read or not
            time.sleep(1)
            raw = b""
            answers = []
            while len(answers) < len(revs):
                chunk = s.recv(700)
                if not chunk:
                    break
                raw += chunk
                time.sleep(0.001)
                while b"\r\n\r\n" in raw:   # a whole head: is its body in too?
                    head = raw[:raw.index(b"\r\n\r\n") + 4]
                    m = re.search(rb"\r\ncontent-length: *(\d+)\r\n", head, re.I)
                    self.assertIsNotNone(m, head)
                    if len(raw) < len(head) + int(m.group(1)):
                        break
                    status, _, body = read_response(io.BytesIO(raw[:len(head) + int(m.group(1))]))
                    answers.append((status, body))
                    raw = raw[len(head) + int(m.group(1)):]
        finally:
            s.close()
        self.assertEqual(len(answers), len(revs))
        for rev, (status, body) in zip(revs, answers):
            self.assertEqual(status, 200)
            doc = json.loads(body)
            self.assertIsNone(check_answer(rev, 200, doc))
            self.assertEqual(doc["response"]["uid"], rev["request"]["uid"])
            self.assertIsNotNone(harness.decode_patch(doc))
        self.assertEqual(raw, b"")
        self.assert_good(self.good, 1)

    def test_pipelined_after_early_refusal(self):
        """A refusal sent before the body was read (415) either closes the connection,
        saying so (Connection: close), or skips that body and answers the next request;
        the body is never taken for a request of its own."""
        revs = [self.rev() for _ in range(2)]
        data = (post_bytes(json.dumps(revs[0]).encode()) +
                post_bytes(json.dumps(revs[1]).encode(), ctype="text/plain") +
                post_bytes(json.dumps(revs[0]).encode(), extra=b"Connection: close\r\n"))
        answers, rest = self.pipeline(data, 3)
        self.assertEqual(answers[0][0], 200)
        self.assertIsNone(check_answer(revs[0], 200, json.loads(answers[0][2])))
        self.assertEqual(answers[1][0], 415)
        self.assertEqual(json.loads(answers[1][2])["reason"], "UnsupportedMediaType")
        if answers[1][1].get("connection", "").lower() == "close":
            self.assertEqual(len(answers), 2)
        else:
            self.assertEqual(len(answers), 3)
            self.assertIsNone(check_answer(revs[0], answers[2][0], json.loads(answers[2][2])))
        self.assertEqual(rest, b"")
        self.assert_good(self.good, 1)


class HugeHeadersTest(SharedServerCase):

    def test_huge_headers_refused_then_served(self):
        big = b"a" * 65536
        cases = {
            "64 KiB header field": (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + big +
                                    b"\r\n\r\n", (431,)),
            "64 KiB field on an admission": (b"POST /pods/mutate HTTP/1.1\r\nHost: x\r\n"
                                             b"Content-Type: application/json\r\nX-Big: " +
                                             big + b"\r\nContent-Length: 2\r\n\r\n{}", (431,)),
            "64 KiB URL": (b"POST /pods/mutate?" + big + b" HTTP/1.1\r\nHost: x\r\n\r\n",
                           (414, 431)),
            "1,000 header fields": (b"GET /healthz HTTP/1.1\r\nHost: x\r\n" +
                                    b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 60)
                                             for i in range(1000)) + b"\r\n", (431,)),
            "64 KiB field without an end": (b"GET /healthz HTTP/1.1\r\nX-Big: " + big * 4,
                                            (431,)),
        }
        for name, (data, codes) in cases.items():
            with self.subTest(case=name):
                s = tls_socket(self.wh.port, self.ctx)
                try:
                    try:
                        s.sendall(data)
                    except (ssl.SSLError, OSError):
                        pass   # closed while we were still sending: allowed
                    out, how = drain(s, 15)
                finally:
                    s.close()
                self.assertIn(how, ("eof", "reset"), "connection left open")
                if out:
                    m = re.match(rb"HTTP/1\.1 (\d{3}) ", out)
                    self.assertIsNotNone(m, out[:100])
                    self.assertIn(int(m.group(1)), codes, out[:100])
                self.assert_serving(self.wh, self.rev())
        self.assert_good(self.good, 1)


class ConflictingLengthTest(SharedServerCase):

    def test_two_different_content_lengths_refused(self):
        """RFC 9112 6.3: the body's length is unknowable; answered 400 and closed. Two
        equal ones are one length and are served."""
        body = json.dumps(self.rev()).encode()
        for name, lengths, want in (("differ", (len(body), len(body) + 7), 400),
                                    ("equal", (len(body), len(body)), 200)):
            with self.subTest(case=name):
                data = (b"POST /pods/mutate?timeout=10s HTTP/1.1\r\nHost: x\r\n"
                        b"Content-Type: application/json\r\n" +
                        b"".join(b"Content-Length: %d\r\n" % n for n in lengths) +
                        b"\r\n" + body)
                s = tls_socket(self.wh.port, self.ctx)
                try:
                    s.sendall(data)
                    f = s.makefile("rb")
                    status, headers, out = read_response(f)
                finally:
                    s.close()
                self.assertEqual(status, want, out[:200])
                if want == 400:
                    self.assertEqual(json.loads(out)["message"],
                                     "conflicting Content-Length headers")
                    self.assertEqual(headers.get("connection", "").lower(), "close")
        self.assert_serving(self.wh, self.rev())


class EndlessChunkedTest(SharedServerCase):

    HEAD = (b"POST /pods/mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")

    def test_trickle_closed_by_request_timeout(self):
        s = tls_socket(self.wh.port, self.ctx)
        started = time.monotonic()
        received, closed_at = b"", None
        try:
            s.sendall(self.HEAD)
            s.settimeout(0.2)
            while closed_at is None and time.monotonic() - started < REQUEST_TIMEOUT + 20:
                try:
                    s.sendall(b"1\r\n \r\n")
                    data = s.recv(4096)
                    if not data:
                        closed_at = time.monotonic()
                    received += data
                except socket.timeout:
                    pass
                except (ssl.SSLError, OSError):
                    closed_at = time.monotonic()
        finally:
            s.close()
        self.assertIsNotNone(closed_at, "endless chunked body not stopped")
        self.assertGreaterEqual(closed_at - started, REQUEST_TIMEOUT * 0.9)
        self.assertNotIn(b" 200 ", received[:20])
        self.assert_serving(self.wh, self.rev())
        self.assert_good(self.good, 1)
        self.wait_in_flight_zero()

    def test_flood_closed_by_body_cap(self):
        chunk = b"10000\r\n" + b" " * 65536 + b"\r\n"
        s = tls_socket(self.wh.port, self.ctx, timeout=15)
        sent, stopped = 0, False
        received = b""
        try:
            s.sendall(self.HEAD)
            while sent < 64 * MIB:
                try:
                    s.sendall(chunk)
                except (ssl.SSLError, OSError):
                    stopped = True
                    break
                sent += 65536
            if not stopped:
                received, how = drain(s, 15)
                stopped = how in ("eof", "reset")
        finally:
            s.close()
        self.assertTrue(stopped, "64 MiB of chunked body accepted")
        self.assertGreaterEqual(sent, CAP)   # everything up to the cap was read
        self.assertNotIn(b" 200 ", received[:20])
        self.assert_serving(self.wh, self.rev())
        self.assert_good(self.good, 1)
        self.wait_in_flight_zero()

    def test_chunked_past_cap_that_ends_gets_413(self):
        s = tls_socket(self.wh.port, self.ctx, timeout=30)
        try:
            s.sendall(self.HEAD + (b"10000\r\n" + b" " * 65536 + b"\r\n") * (CAP // 65536 + 4)
                      + b"0\r\n\r\n")
            status, _, body = read_response(s.makefile("rb"))
        finally:
            s.close()
        self.assertEqual(status, 413)
        self.assertEqual(json.loads(body)["reason"], "RequestEntityTooLarge")
        self.assert_good(self.good, 1)


# ---------------------------------------------------------------- body budget

def metrics_text(wh):
    """GET /metrics of wh, as text."""
    conn = wh.connection()
    try:
        conn.request("GET", "/metrics")
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def metric_value(wh, name):
    """The unlabelled sample name (or name{labels}) from GET /metrics, None when absent."""
    m = re.search(r"^%s (\S+)$" % re.escape(name), metrics_text(wh), re.M)
    return float(m.group(1)) if m else None


class BodyBudgetTest(HostileCase):
    """--max-body-bytes-in-flight: two slow uploads that announced 3 MiB each hold the
    whole 6 MiB budget from their headers on; the next request is answered 503 before
    its body (the Status, Retry-After: 1, Connection: close), counted as a 503 error and
    logged as a refusal. Once one slow upload finishes (200) and the other vanishes, a
    normal review is served again and webhook_http_body_bytes_in_flight is back to 0."""

    BUDGET = 2 * CAP

    def wait_body_bytes(self, wh, want):
        deadline = time.monotonic() + 15
        value = metric_value(wh, "webhook_http_body_bytes_in_flight")
        while value != want and time.monotonic() < deadline:
            time.sleep(0.05)
            value = metric_value(wh, "webhook_http_body_bytes_in_flight")
        self.assertEqual(value, want)

    def test_slow_uploads_hold_the_budget(self):
        env = self.make_env(["--max-body-bytes-in-flight", str(self.BUDGET),
                             "--request-timeout", "60s"])
        self.addCleanup(env.close)
        wh, ctx, job = env.webhook, tls_context(env.certs), env.jobs[0]
        ns = job["metadata"]["namespace"]
        pod = harness.build_pod(job, "mpimaster", 0)
        self.wait_body_bytes(wh, 0)

        revs = [harness.review(pod, ns) for _ in range(2)]
        bodies = [json.dumps(r).encode() for r in revs]
        bodies = [b + b" " * (CAP - len(b)) for b in bodies]   # exactly the cap
        slow = []
        for i, body in enumerate(bodies):
            s = tls_socket(wh.port, ctx, timeout=30)
            self.addCleanup(s.close)
            data = post_bytes(body)
            head = len(data) - len(body)
            s.sendall(data[:head + 1000])                        # and then nothing
            slow.append((s, data[head + 1000:]))
            self.wait_body_bytes(wh, (i + 1) * CAP)

        rev = harness.review(pod, ns)
        body = json.dumps(rev).encode()
        s = tls_socket(wh.port, ctx, timeout=30)
        try:
            s.sendall(post_bytes(body)[:-len(body)])             # headers only: answered now
            status, headers, answer = read_response(s.makefile("rb"))
            rest, how = drain(s, 15)
        finally:
            s.close()
        self.assertEqual(status, 503)
        self.assertEqual(headers.get("retry-after"), "1")
        self.assertEqual(headers.get("connection", "").lower(), "close")
        self.assertEqual(headers.get("content-type"), "application/json")
        message = ("request bodies in memory would exceed %d bytes "
                   "(--max-body-bytes-in-flight), retry later" % self.BUDGET)
        self.assertEqual(json.loads(answer), {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": "ServiceUnavailable", "code": 503})
        self.assertEqual((rest, how), (b"", "eof"))
        self.wait_body_bytes(wh, self.BUDGET)                    # the refused one held nothing
        self.assertEqual(metric_value(
            wh, 'webhook_admission_requests_total{code="503",outcome="error"}'), 1)
        lines = log_lines(wh, "http: refused request")
        self.assertEqual([(l["level"], l["code"], l["reason"], l["message"]) for l in lines],
                         [("info", "503", "ServiceUnavailable", message)])
        self.assertTrue(lines[0]["client"].startswith("127.0.0.1:"), lines[0])

        # One slow upload finishes: served; the other vanishes: its bytes come back too.
        s, rest = slow[0]
        s.sendall(rest)
        status, _, answer = read_response(s.makefile("rb"))
        self.assertIsNone(check_answer(revs[0], status, json.loads(answer)))
        self.wait_body_bytes(wh, CAP)
        slow[1][0].close()
        self.wait_body_bytes(wh, 0)
        status, answer = wh.post(rev)
        self.assertIsNone(check_answer(rev, status, answer))
        self.wait_body_bytes(wh, 0)
        self.assertEqual(metric_value(
            wh, 'webhook_admission_requests_total{code="503",outcome="error"}'), 1)


# ---------------------------------------------------------------- hostile JSON

class HostileJSONTest(SharedServerCase):

    def test_deep_nesting(self):
        for name, data in (("arrays", b"[" * 100000 + b"]" * 100000),
                           ("objects", b'{"a":' * 100000 + b"1" + b"}" * 100000),
                           ("inside the pod", json.dumps(self.rev()).replace(
                               '"status": {}', '"status": {}, "x": ' + "[" * 100000 +
                               "]" * 100000, 1).encode()),
                           ("unclosed", b"[" * 1000000)):
            with self.subTest(case=name):
                self.assert_bad_request(data, "depth" if name != "unclosed" else None)
        # Deep but within the parser's limit: an ordinary answer.
        rev = self.rev()
        data = json.dumps(rev).replace('"status": {}', '"status": {}, "x": ' + "[" * 2000 +
                                       "]" * 2000, 1).encode()
        status, body = self.post_raw(data)
        self.assertIsNone(check_answer(rev, status, body))
        self.assertIsNotNone(harness.decode_patch(body))
        self.assert_good(self.good, 1)

    def test_huge_arrays_within_cap(self):
        rev = self.rev()
        pod = copy.deepcopy(self.pod)
        pod["spec"]["containers"][0]["env"] = [{"name": "E%d" % i, "value": "v"}
                                               for i in range(90000)]
        big = harness.review(pod, "default")
        data = json.dumps(big).encode()
        self.assertGreater(len(data), 2 * MIB)
        self.assertLess(len(data), CAP)
        status, body = self.post_raw(data)
        self.assertIsNone(check_answer(big, status, body))
        patched = harness.apply_patch(pod, body)
        self.assertEqual(patched["spec"]["containers"][0]["env"][:90000],
                         pod["spec"]["containers"][0]["env"])
        status, body = self.post_raw(json.dumps(harness.review(patched, "default")).encode())
        self.assertEqual(status, 200)
        self.assertIsNone(harness.decode_patch(body))
        # 1.5 million numbers in a field nobody reads: decoded and answered.
        n = (CAP - len(json.dumps(rev)) - 64) // 2
        data = json.dumps(rev).replace('"status": {}', '"status": {}, "x": [' +
                                       ",".join(["0"] * n) + "]", 1).encode()
        self.assertLessEqual(len(data), CAP)
        status, body = self.post_raw(data, timeout=60)
        self.assertIsNone(check_answer(rev, status, body))
        self.assertIsNotNone(harness.decode_patch(body))
        # A million empty objects would cost ~0.5 GB of jansson nodes: refused before decoding.
        n = (CAP - len(json.dumps(rev)) - 64) // 3
        data = json.dumps(rev).replace('"status": {}', '"status": {}, "x": [' +
                                       ",".join(["{}"] * n) + "]", 1).encode()
        body = self.assert_bad_request(data)
        self.assertEqual(body["message"], "request has more than 200000 JSON objects and arrays")
        # One byte over the cap: 413 before the body is read (so none is sent here).
        s = tls_socket(self.wh.port, self.ctx)
        try:
            s.sendall(post_bytes(b" " * (CAP + 1))[:-(CAP + 1)])
            status, _, raw = read_response(s.makefile("rb"))
        finally:
            s.close()
        self.assertEqual(status, 413)
        self.assertEqual(json.loads(raw)["reason"], "RequestEntityTooLarge")
        self.assert_good(self.good, 1)

    def test_duplicate_keys_last_wins(self):
        """As Go's encoding/json (and kube-apiserver's decoder) does."""
        rev = self.rev()
        plain = copy.deepcopy(self.pod)
        plain["metadata"]["ownerReferences"] = []          # not a Job's pod: no patch
        req = dict(rev["request"])
        obj, plain_obj = json.dumps(req.pop("object")), json.dumps(plain)
        uid = req.pop("uid")
        rest = json.dumps(req)[1:-1]
        for first, last, patched in ((plain_obj, obj, True), (obj, plain_obj, False)):
            with self.subTest(patched=patched):
                text = ('{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",'
                        '"request":{"uid":"first-uid","object":%s,%s,"uid":"%s",'
                        '"object":%s}}' % (first, rest, uid, last))
                status, body = self.post_raw(text.encode())
                self.assertIsNone(check_answer(rev, status, body))
                self.assertEqual(harness.decode_patch(body) is not None, patched)
        # A duplicate "request": the last one is answered.
        text = json.dumps(rev)[:-1] + ',"request":{"uid":"second","operation":"CREATE"}}'
        status, body = self.post_raw(text.encode())
        self.assertEqual(status, 200, body)
        self.assertEqual(body["response"]["uid"], "second")
        self.assertTrue(body["response"]["allowed"])
        self.assert_good(self.good, 1)

    def test_invalid_utf8(self):
        text = json.dumps(self.rev(), ensure_ascii=False).encode()
        name = b'"mpimaster"'
        self.assertIn(name, text)
        for case, bad in (("0xff", b'"mpi\xffmaster"'),
                          ("lone continuation", b'"mpi\x80master"'),
                          ("overlong /", b'"mpi\xc0\xafmaster"'),
                          ("surrogate", b'"mpi\xed\xa0\x80master"'),
                          ("past U+10FFFF", b'"mpi\xf4\x90\x80\x80master"'),
                          ("cut sequence", b'"mpi\xe2\x82master"'),
                          ("escaped lone surrogate", b'"mpi\\ud800master"'),
                          ("latin-1", '"mpimaster\u00e9"'.encode("latin-1"))):
            with self.subTest(case=case):
                self.assert_bad_request(text.replace(name, bad, 1))
        # ... in an object key, and as the whole body (a UTF-16 BOM).
        self.assert_bad_request(text.replace(b'"labels"', b'"lab\xffels"', 1))
        self.assert_bad_request(b"\xff\xfe{\x00}\x00")
        # Valid UTF-8 everywhere (4-byte characters too) is fine.
        pod = copy.deepcopy(self.pod)
        pod["metadata"]["annotations"]["note"] = "\u00e9\u4e2d\U0001F600"
        rev = self.rev(pod)
        status, body = self.post_raw(json.dumps(rev, ensure_ascii=False).encode())
        self.assertIsNone(check_answer(rev, status, body))
        self.assert_good(self.good, 1)

    def test_numbers_out_of_range(self):
        rev = self.rev()
        text = json.dumps(rev)
        field = '"terminationGracePeriodSeconds": 30'
        self.assertIn(field, text)
        for lit, msg in (("1e400", "overflow"), ("-1e400", "overflow"),
                         ("9223372036854775808", "too big integer"),
                         ("-9223372036854775809", "too big negative integer"),
                         ("123456789012345678901234567890", "too big integer"),
                         ("NaN", None), ("Infinity", None), ("-", None), ("01", None),
                         ("1.", None), ("0x10", None)):
            with self.subTest(number=lit):
                self.assert_bad_request(text.replace(field, field[:-2] + lit).encode(), msg)
        for lit in ("9223372036854775807", "-9223372036854775808", "1e-400",
                    "1.7976931348623157e308", "-0"):
            with self.subTest(number=lit):
                status, body = self.post_raw(text.replace(field, field[:-2] + lit).encode())
                self.assertIsNone(check_answer(rev, status, body))
                self.assertIsNotNone(harness.decode_patch(body))
        self.assert_good(self.good, 1)


class EscapingTest(HostileCase):
    """Hostile characters in names, keys and values that reach the patch."""

    WEIRD = 'w/~0~1"\\\x01\x1f\n\t\u2028\u00e9'
    # Task names reach env names through UP(T); keep them ASCII so that Go's Unicode
    # upper-casing and an ASCII one agree.
    WEIRD_TASK = 'w/~0~1"\\\x01\x1f\n\t'

    def test_weird_task_name_denied(self):
        """A task name made into env var names that the API server refuses: the pod
        is denied (D15), the message naming the plugin and the name as it is."""
        worker = "t" + self.WEIRD_TASK
        job = harness.load_job(JOB)
        job["spec"]["tasks"][1]["name"] = worker
        job["spec"]["plugins"] = {"svc": []}
        env = self.make_env(jobs=[job])
        self.addCleanup(env.close)
        job = env.jobs[0]
        pod = harness.build_pod(job, "mpimaster", 0)
        resp = env.webhook.admit(harness.review(pod, job["metadata"]["namespace"]))
        self.assertFalse(resp["allowed"])
        self.assertNotIn("patch", resp)
        self.assertEqual(resp["status"]["code"], 400)
        self.assertEqual(
            resp["status"]["message"],
            'svc plugin: env var name "VC_%s_HOSTS" in container "%s" is not valid (an env var '
            "name has only letters, digits, '-', '.' and '_'): rename the task it is made from"
            % (worker.upper(), pod["spec"]["containers"][0]["name"]))

    def test_patch_applies_and_is_idempotent(self):
        # A task name the API server accepts in env var names (D15); the hostile
        # characters stay in the keys and values they may appear in.
        worker = "tw"
        job = harness.load_job(JOB)
        job["spec"]["tasks"][1]["name"] = worker
        job["spec"]["plugins"] = {"ssh": [], "svc": [], "env": [],
                                  "hcclrank": ["--master=mpimaster", "--worker=" + worker]}
        env = self.make_env(jobs=[job])
        self.addCleanup(env.close)
        good = self.good_client(env)
        wh = env.webhook
        job = env.jobs[0]
        ns = job["metadata"]["namespace"]
        rank = 'r/~1~0"\\\x01\x1f\n\u2028 \u00e9'
        pods = [harness.build_pod(job, "mpimaster", 0), harness.build_pod(job, worker, 1)]
        for pod in pods:
            pod["spec"]["containers"][0]["name"] = "c" + self.WEIRD
            pod["metadata"]["annotations"].update({
                # what a wrong escaping of hccl/rankIndex would hit
                "hccl~1rankIndex": "decoy", "hccl~01rankIndex": "decoy2",
                "hccl": "not an object",
                "a/b~c": 'v"\\\x00\x1f', "~": "/", "": "empty", '"': "\n"})
            pod["metadata"]["labels"]["l/~" + self.WEIRD] = self.WEIRD
        pods[0]["spec"]["containers"][0]["env"] = [{"name": "RANK", "value": rank}]
        for pod, want_rank in zip(pods, (rank, "2")):
            with self.subTest(pod=pod["metadata"]["name"]):
                before = copy.deepcopy(pod)
                resp = wh.admit(harness.review(pod, ns))
                self.assertIsNotNone(harness.decode_patch(resp))
                patched = harness.apply_patch(pod, resp)
                anns = patched["metadata"]["annotations"]
                self.assertEqual(anns["hccl/rankIndex"], want_rank)
                self.assertEqual({k: v for k, v in anns.items() if k != "hccl/rankIndex"},
                                 before["metadata"]["annotations"])
                self.assertEqual(patched["metadata"]["labels"], before["metadata"]["labels"])
                self.assertEqual(patched["spec"]["containers"][0]["name"], "c" + self.WEIRD)
                self.assertEqual(patched["spec"]["hostname"], pod["metadata"]["name"])
                up = "VC_" + worker.upper() + "_HOSTS"
                names = [e["name"] for e in patched["spec"]["containers"][0]["env"]]
                self.assertIn(up, names)
                # Applying the webhook to its own output changes nothing (D5).
                again = wh.admit(harness.review(patched, ns))
                self.assertIsNone(harness.decode_patch(again))
        self.assert_good(good, 1)


if __name__ == "__main__":
    unittest.main()


# ---------------------------------------------------------------- refused traffic in the log

def log_lines(wh, msg):
    """The JSON log lines whose msg is msg, without their time."""
    out = []
    for line in wh.process.log().splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("msg") == msg:
            obj.pop("time", None)
            out.append(obj)
    return out


def refused_metrics(wh):
    """{reason: count} of webhook_tls_handshakes_refused_total."""
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^webhook_tls_handshakes_refused_total\{reason="([a-z_]+)"\} (\S+)$', metrics_text(wh),
        re.M)}


class RefusedTrafficLogTest(HostileCase):
    """Refused handshakes and 4xx answers: one info line per 5 s for each kind, with the
    client's address and the reason, and a count of those left out since; every refused
    handshake counted by reason in webhook_tls_handshakes_refused_total. libmicrohttpd's
    own line for them ("received handshake message out of context.") is gone."""

    PERIOD = 5.0                 # LOG_PERIOD_MS

    def tls11(self, port):
        """A TLS 1.1 ClientHello (no certificate check: it never gets that far)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_1
            ctx.maximum_version = ssl.TLSVersion.TLSv1_1
        return self.refused_handshake(port, ctx)

    def refused_handshake(self, port, ctx, server_hostname=None):
        """Try a handshake that must fail; returns the client's address "IP:PORT"."""
        s = socket.create_connection(("127.0.0.1", port), 10)
        addr = "127.0.0.1:%d" % s.getsockname()[1]
        try:
            with self.assertRaises((ssl.SSLError, OSError)):
                ctx.wrap_socket(s, server_hostname=server_hostname).close()
        finally:
            s.close()
        return addr

    def wait_lines(self, wh, msg, n):
        deadline = time.monotonic() + 15
        while len(log_lines(wh, msg)) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        return log_lines(wh, msg)

    def request(self, wh, method, path, body=b"", ctype="application/json"):
        """One request on its own connection; returns (status, the client's address)."""
        conn = wh.connection()
        try:
            conn.connect()
            addr = "127.0.0.1:%d" % conn.sock.getsockname()[1]
            conn.request(method, path, body=body, headers={"Content-Type": ctype})
            resp = conn.getresponse()
            resp.read()
            return resp.status, addr
        finally:
            conn.close()

    def test_refusals_logged_with_client_and_counted(self):
        env = self.make_env()
        self.addCleanup(env.close)
        wh = env.webhook
        port = wh.port
        tls_msg, http_msg = "http: refused TLS handshake", "http: refused request"

        # A bare TCP connect: the first refused handshake, logged at once.
        s = socket.create_connection(("127.0.0.1", port), 10)
        bare = "127.0.0.1:%d" % s.getsockname()[1]
        s.close()
        lines = self.wait_lines(wh, tls_msg, 1)
        t0 = time.monotonic()
        self.assertEqual(lines, [{"level": "info", "msg": tls_msg, "client": bare,
                                  "reason": "no_data",
                                  "detail": "closed without sending a byte",
                                  "suppressed": "0"}])
        # The first 4xx, logged at once.
        status, addr415 = self.request(wh, "POST", "/pods/mutate", b"x", "text/plain")
        self.assertEqual(status, 415)
        # Within the period: counted, not logged.
        s = socket.create_connection(("127.0.0.1", port), 10)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(drain(s)[0], b"")
        s.close()
        self.tls11(port)
        cbc = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        cbc.check_hostname = False
        cbc.verify_mode = ssl.CERT_NONE
        cbc.maximum_version = ssl.TLSVersion.TLSv1_2
        cbc.set_ciphers("AES128-SHA")            # TLS 1.2, CBC only: not in the profile
        self.refused_handshake(port, cbc)
        # Clients that do not trust the certificate (the system CAs only): over TLS 1.3
        # OpenSSL sends its alert unencrypted, which GnuTLS does not take for one (counted
        # client_closed); over TLS 1.2 it sends the alert unknown_ca (client_alert).
        self.refused_handshake(port, ssl.create_default_context(), SERVER_NAME)
        tls12 = ssl.create_default_context()
        tls12.maximum_version = ssl.TLSVersion.TLSv1_2
        self.refused_handshake(port, tls12, SERVER_NAME)
        for method, path, body, ctype, code in (
                ("GET", "/nope", b"", "application/json", 404),
                ("PUT", "/pods/mutate", b"{}", "application/json", 405),
                ("POST", "/pods/mutate", b"{}", "application/json", 400),
                ("POST", "/healthz", b"{}", "application/json", 405)):
            self.assertEqual(self.request(wh, method, path, body, ctype)[0], code)
        # Over the cap by its Content-Length: answered before the body is sent.
        t = tls_socket(port, tls_context(env.certs))
        t.sendall(b"POST /pods/mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                  b"\r\nContent-Length: %d\r\n\r\n" % (CAP + 1))
        self.assertEqual(read_response(t.makefile("rb"))[0], 413)
        t.close()
        self.assertLess(time.monotonic() - t0, self.PERIOD,
                        "too slow to test the period on this machine")
        self.assertEqual(refused_metrics(wh), {
            "no_data": 1, "not_tls": 1, "tls_version": 1, "no_common_algorithm": 1,
            "client_alert": 1, "client_closed": 1})
        # One period after the first lines: the next ones, with the count left out.
        time.sleep(max(0.0, t0 + self.PERIOD + 0.3 - time.monotonic()))
        tls11 = self.tls11(port)
        # A request libmicrohttpd refuses itself (no client address in its message).
        t = tls_socket(port, tls_context(env.certs))
        t.sendall(b"POST /pods/mutate HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
        self.assertEqual(read_response(t.makefile("rb"))[0], 400)
        t.close()
        self.assertEqual(self.wait_lines(wh, tls_msg, 2)[1:], [
            {"level": "info", "msg": tls_msg, "client": tls11, "reason": "tls_version",
             "detail": "the client offers TLS 1.1 at most, TLS 1.2 or 1.3 needed",
             "suppressed": "5"}])
        self.assertEqual(self.wait_lines(wh, http_msg, 2), [
            {"level": "info", "msg": http_msg, "client": addr415, "code": "415",
             "reason": "UnsupportedMediaType",
             "message": 'Content-Type must be application/json, got "text/plain"',
             "suppressed": "0"},
            {"level": "info", "msg": http_msg, "client": "unknown", "code": "400",
             "reason": "BadRequest",
             "message": "Your HTTP request has wrong value for Content-Length header.",
             "suppressed": "5"}])
        self.assertEqual(refused_metrics(wh)["tls_version"], 2)
        self.assertNotIn("out of context", wh.process.log())
        self.assertTrue(wh.process.alive())

    def alert_after_hello(self, port, desc):
        """A TLS 1.2 ClientHello; once the server's first flight is whole, the fatal alert
        desc in the clear (RFC 5246 7.2: before ChangeCipherSpec) in place of the client's
        next flight; then wait for the server to close. Returns the client's address."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = ctx.wrap_bio(inc, out)
        with self.assertRaises(ssl.SSLWantReadError):
            tls.do_handshake()
        s = socket.create_connection(("127.0.0.1", port), 10)
        try:
            addr = "127.0.0.1:%d" % s.getsockname()[1]
            s.sendall(out.read())
            while not out.pending:        # the client's next flight: the server's is whole
                data = s.recv(65536)
                self.assertTrue(data, "the server closed before its first flight ended")
                inc.write(data)
                with self.assertRaises(ssl.SSLWantReadError):
                    tls.do_handshake()
            s.sendall(bytes([21, 3, 3, 0, 2, 2, desc]))   # alert, TLS 1.2, fatal, desc
            self.assertEqual(drain(s)[0], b"")
        finally:
            s.close()
        return addr

    def test_client_alert_named_or_numbered(self):
        """The alert a client refuses the handshake with, read while GnuTLS's session
        lives: its name, or its number when GnuTLS has no name for it."""
        env = self.make_env()
        self.addCleanup(env.close)
        wh = env.webhook
        msg = "http: refused TLS handshake"
        first = self.alert_after_hello(wh.port, 255)
        self.assertEqual(self.wait_lines(wh, msg, 1), [
            {"level": "info", "msg": msg, "client": first, "reason": "client_alert",
             "detail": "the client sent the alert 255", "suppressed": "0"}])
        time.sleep(self.PERIOD + 0.3)  # the next line comes a period after the first
        second = self.alert_after_hello(wh.port, 48)
        self.assertEqual(self.wait_lines(wh, msg, 2)[1:], [
            {"level": "info", "msg": msg, "client": second, "reason": "client_alert",
             "detail": 'the client sent the alert "CA is unknown"', "suppressed": "0"}])
        self.assertEqual(refused_metrics(wh)["client_alert"], 2)

    def test_a_byte_then_reset_is_not_tls(self):
        """A client that resets (no FIN): with one byte sent it is not_tls, with none
        no_data. TCP_INFO's byte count holds one for the FIN only when a FIN came."""
        env = self.make_env()
        self.addCleanup(env.close)
        wh = env.webhook
        for data in (b"", b"\x16"):
            s = socket.create_connection(("127.0.0.1", wh.port), 10)
            if data:
                s.sendall(data)
                time.sleep(0.2)         # taken in before the reset
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()                   # RST, no FIN
        deadline = time.monotonic() + 15
        while sum(refused_metrics(wh).values()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual({k: v for k, v in refused_metrics(wh).items() if v},
                         {"no_data": 1, "not_tls": 1})
