#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""test_apiserver.py - self-test of tests/apiserver.py (unittest, stdlib only).

Starts the server as a child process on a free loopback port and talks HTTP/1.1
to it. Run: /usr/bin/python3 tests/test_apiserver.py
"""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "apiserver.py")
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/ns1/jobs"


def job(name, ns=None, **extra):
    meta = {"name": name}
    if ns:
        meta["namespace"] = ns
    obj = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": meta,
           "spec": {"queue": "default"}}
    obj.update(extra)
    return obj


def labelled(name, labels):
    obj = job(name)
    obj["metadata"]["labels"] = labels
    return obj


class ServerProcess:
    def __init__(self, *args):
        self.dir = tempfile.TemporaryDirectory()
        port_file = os.path.join(self.dir.name, "port")
        self.proc = subprocess.Popen(
            [sys.executable, SERVER, "--port", "0", "--port-file", port_file] + list(args),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not os.path.exists(port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("apiserver.py did not start: %r" % (self.proc.stderr.read(),))
            time.sleep(0.02)
        with open(port_file) as f:
            self.port = int(f.read())

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=10)
        self.dir.cleanup()
        return self.proc.returncode, out, err


class ApiServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = ServerProcess("--token", "s3cret")

    @classmethod
    def tearDownClass(cls):
        rc, out, err = cls.srv.stop()
        assert rc == 0, (rc, err)
        assert out == b"", out

    def setUp(self):
        self.conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=10)
        for p in ("/_test/objects", "/_test/faults", "/_test/requests"):
            self.call("DELETE", p)

    def tearDown(self):
        self.conn.close()

    def call(self, method, path, body=None, token="s3cret", ctype="application/json"):
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = ctype
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None), r

    def test_create_get_rv_and_conflicts(self):
        st, a, _ = self.call("POST", JOBS, job("a"))
        self.assertEqual(st, 201)
        self.assertEqual(a["metadata"]["namespace"], "ns1")
        self.assertEqual(len(a["metadata"]["uid"]), 36)
        self.assertRegex(a["metadata"]["creationTimestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        rv_a = int(a["metadata"]["resourceVersion"])
        st, b, _ = self.call("POST", JOBS, job("b"))
        self.assertEqual(int(b["metadata"]["resourceVersion"]), rv_a + 1)
        st, got, _ = self.call("GET", JOBS + "/a")
        self.assertEqual((st, got), (200, a))

        st, body, _ = self.call("POST", JOBS, job("a"))
        self.assertEqual(st, 409)
        self.assertEqual(body, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'jobs.batch.volcano.sh "a" already exists', "reason": "AlreadyExists",
            "details": {"name": "a", "group": "batch.volcano.sh", "kind": "jobs"}, "code": 409})

        upd = dict(a, spec={"queue": "q2"})
        st, u, _ = self.call("PUT", JOBS + "/a", upd)
        self.assertEqual(st, 200)
        self.assertEqual(int(u["metadata"]["resourceVersion"]), rv_a + 2)
        self.assertEqual(u["metadata"]["uid"], a["metadata"]["uid"])
        self.assertEqual(u["metadata"]["generation"], 2)
        st, body, _ = self.call("PUT", JOBS + "/a", upd)  # stale resourceVersion
        self.assertEqual(st, 409)
        self.assertEqual(body, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'Operation cannot be fulfilled on jobs.batch.volcano.sh "a": the object '
                       "has been modified; please apply your changes to the latest version and "
                       "try again",
            "reason": "Conflict",
            "details": {"name": "a", "group": "batch.volcano.sh", "kind": "jobs"}, "code": 409})

        st, d, _ = self.call("DELETE", JOBS + "/a")
        self.assertEqual(st, 200)
        self.assertEqual(int(d["metadata"]["resourceVersion"]), rv_a + 3)
        st, body, _ = self.call("DELETE", JOBS + "/a")
        self.assertEqual(st, 404)
        st, body, _ = self.call("GET", JOBS + "/a")
        self.assertEqual(st, 404)
        self.assertEqual(body, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'jobs.batch.volcano.sh "a" not found', "reason": "NotFound",
            "details": {"name": "a", "group": "batch.volcano.sh", "kind": "jobs"}, "code": 404})

    def test_core_group_and_patch(self):
        st, body, _ = self.call("GET", "/api/v1/namespaces/ns1/configmaps/x")
        self.assertEqual(body["message"], 'configmaps "x" not found')
        self.assertEqual(body["details"], {"name": "x", "kind": "configmaps"})
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
              "data": {"a": "1", "b": "2"}}
        st, c, _ = self.call("POST", "/api/v1/namespaces/ns1/configmaps", cm)
        self.assertEqual(st, 201)
        st, p, _ = self.call("PATCH", "/api/v1/namespaces/ns1/configmaps/x",
                             {"data": {"a": None, "c": "3"}}, ctype="application/merge-patch+json")
        self.assertEqual((st, p["data"]), (200, {"b": "2", "c": "3"}))
        st, p, _ = self.call("PATCH", "/api/v1/namespaces/ns1/configmaps/x",
                             [{"op": "add", "path": "/data/d", "value": "4"}],
                             ctype="application/json-patch+json")
        self.assertEqual((st, p["data"]), (200, {"b": "2", "c": "3", "d": "4"}))
        st, body, _ = self.call("PATCH", "/api/v1/namespaces/ns1/configmaps/x", {},
                                ctype="application/strategic-merge-patch+json")
        self.assertEqual((st, body["reason"]), (415, "UnsupportedMediaType"))

    def test_list_paging(self):
        for ns, n in (("ns1", "e"), ("ns1", "a"), ("ns2", "c"), ("ns1", "d"), ("ns1", "b")):
            self.assertEqual(self.call("POST", "/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs"
                                       % ns, job(n))[0], 201)
        st, l1, _ = self.call("GET", JOBS + "?limit=2")
        self.assertEqual(st, 200)
        self.assertEqual((l1["kind"], l1["apiVersion"]), ("JobList", "batch.volcano.sh/v1alpha1"))
        self.assertEqual([i["metadata"]["name"] for i in l1["items"]], ["a", "b"])
        self.assertEqual(l1["metadata"]["remainingItemCount"], 2)
        list_rv = l1["metadata"]["resourceVersion"]
        # a write between pages does not show in the continued list
        self.call("DELETE", JOBS + "/d")
        st, l2, _ = self.call("GET", JOBS + "?limit=2&continue=" + l1["metadata"]["continue"])
        self.assertEqual([i["metadata"]["name"] for i in l2["items"]], ["d", "e"])
        self.assertEqual(l2["metadata"]["resourceVersion"], list_rv)
        self.assertNotIn("continue", l2["metadata"])
        st, all_ns, _ = self.call("GET", "/apis/batch.volcano.sh/v1alpha1/jobs")
        self.assertEqual([(i["metadata"]["namespace"], i["metadata"]["name"])
                          for i in all_ns["items"]],
                         [("ns1", "a"), ("ns1", "b"), ("ns1", "e"), ("ns2", "c")])
        self.assertGreater(int(all_ns["metadata"]["resourceVersion"]), int(list_rv))
        # compaction expires old continue tokens
        self.call("POST", "/_test/compact", {"resourceVersion": int(list_rv) + 1})
        st, body, _ = self.call("GET", JOBS + "?limit=2&continue=" + l1["metadata"]["continue"])
        self.assertEqual((st, body["reason"], body["code"]), (410, "Expired", 410))
        st, body, _ = self.call("GET", JOBS + "?limit=2&continue=garbage")
        self.assertEqual((st, body["reason"]), (400, "BadRequest"))

    def test_faults_and_request_log(self):
        self.call("POST", JOBS, job("a"))
        self.call("POST", "/_test/faults", {"method": "GET", "path_regex": "/jobs/a$",
                                            "status": 500, "reason": "InternalError",
                                            "message": "boom", "count": 2, "retry_after": 3})
        for _ in range(2):
            st, body, r = self.call("GET", JOBS + "/a")
            self.assertEqual(st, 500)
            self.assertEqual(r.getheader("Retry-After"), "3")
            self.assertEqual(body, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Failure", "message": "boom",
                                    "reason": "InternalError", "code": 500})
        self.assertEqual(self.call("GET", JOBS + "/a")[0], 200)
        # stall, then the normal answer
        self.call("POST", "/_test/faults", {"path_regex": "/jobs/a$", "delay_ms": 300})
        t0 = time.monotonic()
        self.assertEqual(self.call("GET", JOBS + "/a")[0], 200)
        self.assertGreaterEqual(time.monotonic() - t0, 0.3)
        # dropped connection
        self.call("POST", "/_test/faults", {"path_regex": "/jobs/a$", "close": True})
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
            self.call("GET", JOBS + "/a")
        self.conn.close()
        st, body, _ = self.call("GET", JOBS + "/a", token="wrong")
        self.assertEqual(st, 401)
        self.assertEqual(body, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Failure", "message": "Unauthorized",
                                "reason": "Unauthorized", "code": 401})
        st, log, _ = self.call("GET", "/_test/requests")
        self.assertEqual([(e["method"], e["path"]) for e in log["requests"]],
                         [("POST", JOBS)] + [("GET", JOBS + "/a")] * 6)
        self.assertEqual(log["requests"][-1]["headers"]["Authorization"], "Bearer wrong")
        self.assertEqual(log["requests"][0]["headers"]["Accept"], "application/json")

    def test_unknown_path(self):
        st, body, _ = self.call("GET", "/nothing/here")
        self.assertEqual((st, body["reason"], body["details"]), (404, "NotFound", {}))


class WatchGcTest(unittest.TestCase):
    """Watch streams, compaction, garbage collection, status subresource, watch faults."""

    @classmethod
    def setUpClass(cls):
        cls.srv = ServerProcess("--bookmark-interval", "0.2", "--gc-delay", "0.05")

    @classmethod
    def tearDownClass(cls):
        rc, out, err = cls.srv.stop()
        assert rc == 0, (rc, err)

    def setUp(self):
        self.conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=10)
        for p in ("/_test/objects", "/_test/faults", "/_test/requests"):
            self.call("DELETE", p)
        self.call("POST", "/_test/gc", {"enabled": True, "delay_ms": 50})

    def tearDown(self):
        self.conn.close()

    def call(self, method, path, body=None, ctype="application/json"):
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = ctype
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)

    def open_watch(self, path, query):
        c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=5)
        c.request("GET", path + "?" + query)
        r = c.getresponse()
        self.addCleanup(c.close)
        return r

    @staticmethod
    def events(r):
        """Every event line until the stream ends."""
        out = []
        while True:
            line = r.readline()
            if not line:
                return out
            out.append(json.loads(line))

    def test_watch_from_rv_then_clean_end(self):
        st, a = self.call("POST", JOBS, job("a"))
        rv0 = a["metadata"]["resourceVersion"]
        st, b = self.call("POST", JOBS, labelled("b", {"x": "1"}))
        b["metadata"]["labels"] = {"x": "2"}
        st, b2 = self.call("PUT", JOBS + "/b", b)
        self.call("DELETE", JOBS + "/a")
        self.call("POST", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns2/jobs", job("c"))
        r = self.open_watch(JOBS, "watch=1&resourceVersion=%s&allowWatchBookmarks=true"
                                  "&timeoutSeconds=1" % rv0)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.getheader("Transfer-Encoding"), "chunked")
        self.assertEqual(r.getheader("Content-Type"), "application/json")
        evs = self.events(r)  # ends by itself after timeoutSeconds
        changes = [(e["type"], e["object"]["metadata"]["name"],
                    int(e["object"]["metadata"]["resourceVersion"]))
                   for e in evs if e["type"] != "BOOKMARK"]
        base = int(rv0)
        self.assertEqual(changes, [("ADDED", "b", base + 1), ("MODIFIED", "b", base + 2),
                                   ("DELETED", "a", base + 3)])
        bms = [e for e in evs if e["type"] == "BOOKMARK"]
        self.assertGreaterEqual(len(bms), 2)
        self.assertEqual(bms[-1], {"type": "BOOKMARK", "object": {
            "kind": "Job", "apiVersion": "batch.volcano.sh/v1alpha1",
            "metadata": {"resourceVersion": str(base + 4)}}})
        # no bookmarks unless asked for
        r = self.open_watch(JOBS, "watch=true&resourceVersion=%s&timeoutSeconds=1" % rv0)
        self.assertEqual([e["type"] for e in self.events(r)], ["ADDED", "MODIFIED", "DELETED"])
        self.assertEqual(b2["metadata"]["labels"], {"x": "2"})

    def test_watch_live_all_namespaces_and_selectors(self):
        self.call("POST", JOBS, job("old"))
        r = self.open_watch("/apis/batch.volcano.sh/v1alpha1/jobs",
                            "watch=1&resourceVersion=0&timeoutSeconds=2")
        first = json.loads(r.readline())
        self.assertEqual((first["type"], first["object"]["metadata"]["name"]), ("ADDED", "old"))
        self.call("POST", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns2/jobs", job("new"))
        ev = json.loads(r.readline())
        self.assertEqual((ev["type"], ev["object"]["metadata"]["namespace"],
                          ev["object"]["metadata"]["name"]), ("ADDED", "ns2", "new"))
        # selectors filter the stream
        r = self.open_watch("/apis/batch.volcano.sh/v1alpha1/jobs",
                            "watch=1&resourceVersion=0&timeoutSeconds=1&labelSelector=app%3Dy"
                            "&fieldSelector=metadata.namespace%3Dns1")
        self.call("POST", JOBS, labelled("l1", {"app": "y"}))
        self.call("POST", JOBS, labelled("l2", {"app": "n"}))
        self.call("POST", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns3/jobs",
                  labelled("l3", {"app": "y"}))
        self.assertEqual([e["object"]["metadata"]["name"] for e in self.events(r)], ["l1"])

    def test_compaction_gone(self):
        st, a = self.call("POST", JOBS, job("a"))
        st, a2 = self.call("PUT", JOBS + "/a", dict(a, spec={"queue": "q"}))
        self.call("PUT", JOBS + "/a", dict(a2, spec={"queue": "r"}))
        st, c = self.call("POST", "/_test/compact", {})
        compacted = c["compacted"]
        self.assertEqual(compacted, int(a["metadata"]["resourceVersion"]) + 2)
        r = self.open_watch(JOBS, "watch=1&resourceVersion=%s" % a["metadata"]["resourceVersion"])
        self.assertEqual(r.status, 200)
        self.assertEqual(self.events(r), [{"type": "ERROR", "object": {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "too old resource version: %s (%d)" % (a["metadata"]["resourceVersion"],
                                                              compacted - 1),
            "reason": "Expired", "code": 410}}])
        # the newest event is still there
        r = self.open_watch(JOBS, "watch=1&timeoutSeconds=1&resourceVersion=%d" % (compacted - 1))
        self.assertEqual([e["type"] for e in self.events(r)], ["MODIFIED"])
        # the fault option answers HTTP 410 instead
        self.call("POST", "/_test/faults", {"path_regex": "watch=1", "watch_gone_http": True})
        r = self.open_watch(JOBS, "watch=1&resourceVersion=1")
        body = json.loads(r.read())
        self.assertEqual((r.status, body["reason"], body["code"]), (410, "Expired", 410))
        st, body = self.call("GET", JOBS + "?watch=1&resourceVersion=abc")
        self.assertEqual(st, 400)

    def wait_gone(self, path, seconds=3.0):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.call("GET", path)[0] == 404:
                return True
            time.sleep(0.02)
        return False

    def owned(self, kind, name, owner):
        return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "ownerReferences": [
            {"apiVersion": owner["apiVersion"], "kind": owner["kind"],
             "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}]}}

    def test_gc_cascade_on_and_off(self):
        cms, secrets = "/api/v1/namespaces/ns1/configmaps", "/api/v1/namespaces/ns1/secrets"
        st, j = self.call("POST", JOBS, job("j"))
        st, cm = self.call("POST", cms, self.owned("ConfigMap", "j-svc", j))
        self.call("POST", secrets, self.owned("Secret", "s", cm))  # owned by the ConfigMap
        self.call("POST", cms, {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "free"}})
        r = self.open_watch(cms, "watch=1&resourceVersion=%s&timeoutSeconds=1"
                            % cm["metadata"]["resourceVersion"])
        self.assertEqual(self.call("DELETE", JOBS + "/j")[0], 200)
        self.assertTrue(self.wait_gone(cms + "/j-svc"))
        self.assertTrue(self.wait_gone(secrets + "/s"))  # cascades
        self.assertEqual(self.call("GET", cms + "/free")[0], 200)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in self.events(r)],
                         [("ADDED", "free"), ("DELETED", "j-svc")])

        # switched off: dependents stay
        st, gc = self.call("POST", "/_test/gc", {"enabled": False})
        self.assertEqual(gc, {"enabled": False, "delay_ms": 50})
        st, j = self.call("POST", JOBS, job("j"))
        self.call("POST", cms, self.owned("ConfigMap", "j-svc", j))
        self.call("DELETE", JOBS + "/j")
        time.sleep(0.3)
        self.assertEqual(self.call("GET", cms + "/j-svc")[0], 200)

        # on again, but the delete orphans
        self.call("POST", "/_test/gc", {"enabled": True})
        st, j2 = self.call("POST", JOBS, job("k"))
        self.call("POST", cms, self.owned("ConfigMap", "k-svc", j2))
        self.call("DELETE", JOBS + "/k", {"kind": "DeleteOptions", "apiVersion": "v1",
                                          "propagationPolicy": "Orphan"})
        time.sleep(0.3)
        st, orphaned = self.call("GET", cms + "/k-svc")
        self.assertEqual(st, 200)
        self.assertNotIn("ownerReferences", orphaned["metadata"])  # the orphan finalizer's work
        # Background (what the client sends) collects
        st, j3 = self.call("POST", JOBS, job("m"))
        self.call("POST", cms, self.owned("ConfigMap", "m-svc", j3))
        self.call("DELETE", JOBS + "/m", {"propagationPolicy": "Background"})
        self.assertTrue(self.wait_gone(cms + "/m-svc"))
        # a dependent created after its owner is gone is collected as well (kube's GC
        # looks the absent owner up), and one re-pointed to a gone owner by an update
        st, late = self.call("POST", cms, self.owned("ConfigMap", "late", j3))
        self.assertEqual(st, 201)
        self.assertTrue(self.wait_gone(cms + "/late"))
        st, j4 = self.call("POST", JOBS, job("n"))
        st, moved = self.call("POST", cms, self.owned("ConfigMap", "moved", j4))
        moved["metadata"]["ownerReferences"] = self.owned("ConfigMap", "x", j3)["metadata"][
            "ownerReferences"]
        self.assertEqual(self.call("PUT", cms + "/moved", moved)[0], 200)
        self.assertTrue(self.wait_gone(cms + "/moved"))
        self.assertEqual(self.call("GET", JOBS + "/n")[0], 200)

    def test_status_subresource(self):
        st, a = self.call("POST", JOBS, job("a"))
        st, p = self.call("PATCH", JOBS + "/a/status",
                          {"status": {"state": {"phase": "Running"}}, "spec": {"queue": "x"}},
                          ctype="application/merge-patch+json")
        self.assertEqual(st, 200)
        self.assertEqual(p["status"], {"state": {"phase": "Running"}})
        self.assertEqual(p["spec"], {"queue": "default"})  # only status changes
        p["status"] = {"state": {"phase": "Completed"}}
        st, u = self.call("PUT", JOBS + "/a/status", p)
        self.assertEqual((st, u["status"]["state"]["phase"]), (200, "Completed"))
        self.assertEqual(int(u["metadata"]["resourceVersion"]),
                         int(a["metadata"]["resourceVersion"]) + 2)
        st, body = self.call("PUT", JOBS + "/a/status", p)  # stale
        self.assertEqual((st, body["reason"]), (409, "Conflict"))

    def test_watch_faults_and_request_log(self):
        for n in ("a", "b", "c"):
            self.call("POST", JOBS, job(n))
        self.call("POST", "/_test/faults", {"path_regex": "watch=1",
                                            "watch_drop_after_events": 2})
        r = self.open_watch(JOBS, "watch=1&resourceVersion=0")
        self.assertEqual(json.loads(r.readline())["object"]["metadata"]["name"], "a")
        self.assertEqual(json.loads(r.readline())["object"]["metadata"]["name"], "b")
        with self.assertRaises(http.client.IncompleteRead):  # no final chunk
            r.read()
        # dropped after a time
        self.call("POST", "/_test/faults", {"path_regex": "watch=1", "watch_drop_after_ms": 200})
        r = self.open_watch(JOBS, "watch=1&resourceVersion=0")
        self.assertEqual(len([r.readline() for _ in range(3)]), 3)
        with self.assertRaises(http.client.IncompleteRead):
            r.read()
        # a stall: headers, then nothing
        self.call("POST", "/_test/faults", {"path_regex": "watch=1", "watch_stall_ms": -1})
        c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=0.5)
        c.request("GET", JOBS + "?watch=1&resourceVersion=0&allowWatchBookmarks=true")
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        with self.assertRaises(socket.timeout):
            r.readline()
        c.close()
        # refused "for a while": the rule lapses after for_ms even with count -1
        self.call("POST", "/_test/faults", {"path_regex": "/jobs/a$", "close": True,
                                            "count": -1, "for_ms": 300})
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
            self.call("GET", JOBS + "/a")
        self.conn.close()
        time.sleep(0.35)
        self.assertEqual(self.call("GET", JOBS + "/a")[0], 200)
        st, log = self.call("GET", "/_test/requests")
        self.assertEqual(log["counts"][JOBS], 6)  # 3 POSTs, 3 watches
        self.assertEqual(log["counts"][JOBS + "/a"], 2)
        times = [e["time"] for e in log["requests"]]
        self.assertEqual(times, sorted(times))
        self.assertGreaterEqual(times[-1] - times[-2], 0.3)


class LoadAndSignalTest(unittest.TestCase):
    def test_load_files(self):
        with tempfile.TemporaryDirectory() as d:
            y = os.path.join(d, "j.yaml")
            with open(y, "w") as f:
                f.write("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: y\n"
                        "---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n"
                        "  metadata: {name: p, namespace: other}\n")
            srv = ServerProcess("--load", y, "--load", os.path.join(HERE, "..", "examples",
                                                                    "pytorch-job.yaml"))
            try:
                c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
                c.request("GET", "/apis/batch.volcano.sh/v1alpha1/jobs")
                items = json.loads(c.getresponse().read())["items"]
                self.assertEqual([(i["metadata"]["namespace"], i["metadata"]["name"],
                                   i["metadata"]["resourceVersion"]) for i in items],
                                 [("default", "pytorch-job", "3"), ("default", "y", "1")])
                c.request("GET", "/api/v1/namespaces/other/pods/p")
                self.assertEqual(c.getresponse().status, 200)
                c.close()
            finally:
                rc, out, _ = srv.stop()
            self.assertEqual((rc, out), (0, b""))


if __name__ == "__main__":
    socket.setdefaulttimeout(10)
    unittest.main(verbosity=1)
