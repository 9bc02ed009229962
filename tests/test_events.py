# SPDX-License-Identifier: Apache-2.0
"""test_events.py - Events on the Job (D17), end to end: the real binary (the Lease
holder: --leader-elect=false) against the test API server (tests/apiserver.py).

A pytorch Job whose --master names no task gets one Warning Event on the Job with the
diagnostic's exact reason and message; an update of the Job reconciles it again, which
raises that Event's count (PATCH) instead of posting a second one, and neither version
is read with a GET (the Jobs cache keeps each version's diagnostics). A hook that keeps
failing (every ConfigMap create answered 500) becomes a PluginError Event.

Every wait polls with a deadline; nothing asserts how long something took.
"""

import hashlib
import unittest

import harness
from test_reconcile import WAIT, Cluster, wait_for

NS = "ev"
EVENTS = "/api/v1/namespaces/%s/events" % NS
MESSAGE = ("pytorch plugin: no task named \"boss\" (--master), so no pod gets MASTER_ADDR, "
           "MASTER_PORT, WORLD_SIZE or RANK: name the master task with --master in "
           "spec.plugins.pytorch, or rename the task")


def event_name(job_name, reason, message):
    """controller/events.h: <job>.<16 hex digits of SHA-256(reason NUL message)>."""
    digest = hashlib.sha256(reason.encode() + b"\0" + message.encode()).hexdigest()
    return "%s.%s" % (job_name, digest[:16])


class EventsTest(unittest.TestCase):

    def setUp(self):
        self.env = harness.Env(webhook_args=["--leader-elect=false", "--resync-period=600s"])
        self.addCleanup(self.env.close)
        self.env.start()
        self.c = Cluster(self.env.api)

    def events(self):
        status, body = self.env.api.get(EVENTS)
        self.assertEqual(status, 200, body)
        return body["items"]

    def webhook_requests(self, method, path):
        return [r for r in self.env.api.requests()
                if r["method"] == method and r["path"] == path
                and r["headers"].get("User-Agent", "").startswith("volcano-plugin-webhook/")]

    def test_one_event_then_counted(self):
        def bad_master(job):
            job["spec"]["plugins"]["pytorch"] = ["--master=boss", "--worker=worker"]
        job = self.c.create_job("pytorch-job", NS, bad_master)
        name = event_name(job["metadata"]["name"], "TaskNotFound", MESSAGE)
        ev = wait_for(lambda: self.c.get(NS, "events", name), "the Event")
        self.assertEqual(ev["firstTimestamp"], ev["lastTimestamp"])
        for k in ("firstTimestamp", "lastTimestamp"):
            del ev[k]
        for k in ("uid", "resourceVersion", "creationTimestamp", "generation"):
            del ev["metadata"][k]
        host = ev["source"].get("host", "")
        self.assertTrue(host)
        self.assertEqual(ev, {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": NS},
            "involvedObject": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                               "name": job["metadata"]["name"], "namespace": NS,
                               "uid": job["metadata"]["uid"],
                               "resourceVersion": job["metadata"]["resourceVersion"]},
            "reason": "TaskNotFound", "message": MESSAGE, "type": "Warning",
            "source": {"component": "volcano-plugin-webhook", "host": host},
            "reportingComponent": "volcano-plugin-webhook", "reportingInstance": host,
            "count": 1})
        self.assertEqual(len(self.events()), 1)

        # An update of the Job: reconciled again, the same message counted, not re-posted.
        job["metadata"].setdefault("annotations", {})["touched"] = "1"
        self.c.put_job(job)
        wait_for(lambda: (self.c.get(NS, "events", name) or {}).get("count") == 2, "count 2")
        self.assertEqual(len(self.events()), 1)
        self.assertEqual(len(self.webhook_requests("POST", EVENTS)), 1)
        self.assertEqual(len(self.webhook_requests("PATCH", EVENTS + "/" + name)), 1)
        # Both versions were diagnosed from the Jobs cache, which keeps each version's
        # diagnostics: the Job itself is never read for them.
        path = "/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs/%s" % (NS, job["metadata"]["name"])
        self.assertEqual([r["query"] for r in self.webhook_requests("GET", path)], [])

    def test_hook_failing_after_its_retries(self):
        self.env.api.add_faults({"method": "POST", "path_regex": "/namespaces/%s/configmaps$" % NS,
                                 "status": 500, "reason": "InternalError",
                                 "message": "etcd down", "count": -1})
        job = self.c.create_job("pytorch-job", NS)
        evs = wait_for(lambda: [e for e in self.events() if e["reason"] == "PluginError"],
                       "a PluginError Event", timeout=WAIT + 15)
        self.assertEqual(len(evs), 1)
        ev = evs[0]
        self.assertEqual(ev["type"], "Warning")
        self.assertEqual(ev["involvedObject"]["uid"], job["metadata"]["uid"])
        self.assertTrue(ev["message"].startswith(
            "svc plugin: OnJobAdd keeps failing, retried with backoff: "), ev["message"])
        self.assertIn("InternalError: etcd down", ev["message"])
        self.assertEqual(ev["metadata"]["name"],
                         event_name(job["metadata"]["name"], "PluginError", ev["message"]))
        # The example Job itself has nothing to say: no other Event.
        self.assertEqual([e["reason"] for e in self.events()], ["PluginError"])


if __name__ == "__main__":
    unittest.main()
