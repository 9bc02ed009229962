#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""apiserver.py - a small in-memory stand-in for kube-apiserver, for tests.

Python 3 standard library only, plus Debian's python3-yaml for --load of YAML
files. Behaves like kube-apiserver where a client can tell (see
docs/kube-api.md): REST paths, Status bodies, status codes,
resourceVersions from one global counter, list paging with continue tokens.

Design
  Store     objects keyed by (gv, resource, namespace, name); gv is "api/v1" or
            "apis/<group>/<version>"; cluster-scoped objects use namespace "".
            One lock guards the store, the resourceVersion counter and the
            event log. Every write appends (rv, type, key, object) to the event
            log and notifies Store.cond, which wakes the watchers.
  Watch     ?watch=1|true on a collection (one namespace or all): HTTP 200, a
            chunked stream of {"type","object"} lines from the event log after
            resourceVersion (""/"0": synthetic ADDED for the current state
            first), BOOKMARKs every --bookmark-interval s with
            allowWatchBookmarks=true, timeoutSeconds, label/field selectors. An
            RV older than the compaction point: 200 then one ERROR event
            (Status 410 Expired), or HTTP 410 with the watch_gone_http fault.
  GC        deleting an object deletes, --gc-delay s later, every object whose
            ownerReferences name its uid (and no other live owner), cascading;
            an object created or updated while none of its owners exists goes the
            same way (kube's GC looks absent owners up); propagationPolicy Orphan
            removes the ownerReference instead; POST /_test/gc {"enabled": false}
            turns it off (and {"delay_ms": N} sets the delay). A DeleteOptions
            body with preconditions.uid other than the stored uid: 409 Conflict
            (reason Conflict), nothing deleted, as kube-apiserver answers.
  Lists     are served from a snapshot rebuilt from the event log at the list's
            resourceVersion, so every page of a paged list is consistent, as
            etcd makes it. Store.compact(rv) forgets history below rv: continue
            tokens older than that answer 410 Expired.
  Control   /_test/... endpoints (never authenticated, never faulted, never
            logged): faults, request log (with the server's monotonic "time"
            of each request, the "body" of a DELETE that has one, and per-path
            "counts"), direct object creation,
            compaction, GC.
  Faults    POST /_test/faults {method, path_regex, count (-1 = forever), for_ms
            (lapses after), then: status/reason/message/retry_after (answer a
            Status), delay_ms (stall first), close (drop the connection), or for
            watches watch_drop_after_events K, watch_drop_after_ms T (abrupt end
            without the final chunk), watch_stall_ms (send nothing for that long,
            -1 = until the client leaves), watch_gone_http (410 instead of an
            ERROR event for a too-old RV)}. Answer manglers, applied to the real
            answer after the request was carried out (so a create still happens):
            truncate_body_bytes N (send the headers with the full Content-Length,
            then only the first N body bytes, then drop the connection),
            body_override TEXT (replace the body; on a watch: send TEXT as the only
            chunk of the stream and end it), content_type CT (replace the
            Content-Type header).
  Clock     POST /_test/clock {"offset_s": S}: the server's wall clock (creation
            timestamps) runs S seconds off, to test clients against far-off clocks.

Flags: --port N (0 = pick) --port-file F --bind ADDR --tls-cert F --tls-key F
       --load FILE (repeatable) --token T --bookmark-interval S --gc-delay S -v
Threads: ThreadingHTTPServer, one thread per connection, HTTP/1.1 keep-alive.
SIGTERM/SIGINT: stop accepting and exit 0. Nothing is written to stdout.
"""

import argparse
import base64
import copy
import json
import os
import random
import re
import select
import signal
import socket
import ssl
import string
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# kind <-> plural resource for the kinds the webhook touches; others are guessed.
KINDS = {
    "jobs": "Job", "pods": "Pod", "services": "Service", "configmaps": "ConfigMap",
    "secrets": "Secret", "networkpolicies": "NetworkPolicy", "leases": "Lease",
    "podgroups": "PodGroup", "events": "Event", "namespaces": "Namespace",
    "queues": "Queue", "endpoints": "Endpoints",
    "mutatingwebhookconfigurations": "MutatingWebhookConfiguration",
    "validatingwebhookconfigurations": "ValidatingWebhookConfiguration",
    "clusterroles": "ClusterRole", "clusterrolebindings": "ClusterRoleBinding",
    "customresourcedefinitions": "CustomResourceDefinition",
}
# Cluster-scoped resources: stored with namespace "", reached only by paths without
# /namespaces/NS (a namespaced path to them is 404, as in kube-apiserver).
CLUSTER_SCOPED = {
    "namespaces", "nodes", "persistentvolumes", "mutatingwebhookconfigurations",
    "validatingwebhookconfigurations", "clusterroles", "clusterrolebindings",
    "customresourcedefinitions", "priorityclasses", "storageclasses",
}
RESOURCES = {v: k for k, v in KINDS.items()}
LOGGED_HEADERS = ("Authorization", "User-Agent", "Accept", "Content-Type", "Connection")


def kind_to_resource(kind):
    if kind in RESOURCES:
        return RESOURCES[kind]
    low = kind.lower()
    if low.endswith("y") and low[-2:-1] not in "aeiou":
        return low[:-1] + "ies"
    if low.endswith(("s", "x", "ch", "sh")):
        return low + "es"
    return low + "s"


def resource_to_kind(resource):
    if resource in KINDS:
        return KINDS[resource]
    base = resource
    if base.endswith("ies"):
        base = base[:-3] + "y"
    elif base.endswith("ses") or base.endswith("xes"):
        base = base[:-2]
    elif base.endswith("s"):
        base = base[:-1]
    return base[:1].upper() + base[1:]


def api_version_to_gv(api_version):
    return "api/" + api_version if "/" not in api_version else "apis/" + api_version


def gv_to_api_version(gv):
    return gv[len("api/"):] if gv.startswith("api/") else gv[len("apis/"):]


def gv_group(gv):
    return "" if gv.startswith("api/") else gv.split("/")[1]


def qualified(gv, resource):
    """kube's qualified resource name: "jobs.batch.volcano.sh", "pods"."""
    g = gv_group(gv)
    return resource + "." + g if g else resource


CLOCK_OFFSET_S = [0.0]  # POST /_test/clock: how far the server's wall clock is off


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + CLOCK_OFFSET_S[0]))


class ApiError(Exception):
    """An error answered as a Status object."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def body(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": self.message}
        if self.reason:
            st["reason"] = self.reason
        if self.details is not None:
            st["details"] = self.details
        st["code"] = self.code
        return st


def details_for(gv, resource, name):
    d = {"name": name}
    if gv_group(gv):
        d["group"] = gv_group(gv)
    d["kind"] = resource
    return d


def not_found(gv, resource, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (qualified(gv, resource), name),
                    details_for(gv, resource, name))


def already_exists(gv, resource, name):
    return ApiError(409, "AlreadyExists",
                    '%s "%s" already exists' % (qualified(gv, resource), name),
                    details_for(gv, resource, name))


def conflict(gv, resource, name):
    return ApiError(409, "Conflict",
                    'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                    "please apply your changes to the latest version and try again"
                    % (qualified(gv, resource), name), details_for(gv, resource, name))


def bad_request(message):
    return ApiError(400, "BadRequest", message)


class Store:
    """Objects, the resourceVersion counter and the event log, under one lock."""

    def __init__(self, gc_delay=0.1):
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.objects = {}      # (gv, resource, ns, name) -> object
        self.rv = 0            # last resourceVersion handed out
        self.events = []       # (rv, type, key, object) for every write
        self.compacted = 0     # history below this rv is gone
        self.gc_enabled = True # ownerReference garbage collection
        self.gc_delay = gc_delay  # seconds between an owner's delete and its dependents'

    # ---- helpers, called with the lock held ----
    def _next_rv(self):
        self.rv += 1
        return self.rv

    def _record(self, rv, etype, key, obj):
        self.events.append((rv, etype, key, copy.deepcopy(obj)))
        self.cond.notify_all()

    def _snapshot(self, rv):
        """The objects as they were at rv, rebuilt from the event log."""
        if rv == self.rv:
            return dict(self.objects)
        snap = {}
        for erv, etype, key, obj in self.events:
            if erv > rv:
                break
            if etype == "DELETED":
                snap.pop(key, None)
            else:
                snap[key] = obj
        return snap

    # ---- operations ----
    def create(self, gv, resource, ns, obj):
        if not isinstance(obj, dict):
            raise bad_request("the body of the request was in an unknown format")
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                random.choice(string.ascii_lowercase + string.digits) for _ in range(5))
        name = meta.get("name")
        if not name or not isinstance(name, str):
            raise ApiError(422, "Invalid", "%s \"\" is invalid: metadata.name: Required value: "
                           "name or generateName is required" % resource_to_kind(resource),
                           {"kind": resource_to_kind(resource), "causes": [
                               {"reason": "FieldValueRequired",
                                "message": "Required value: name or generateName is required",
                                "field": "metadata.name"}]})
        if ns:
            if meta.get("namespace") not in (None, "", ns):
                raise bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
            meta["namespace"] = ns
        obj.setdefault("apiVersion", gv_to_api_version(gv))
        obj.setdefault("kind", resource_to_kind(resource))
        key = (gv, resource, ns, name)
        with self.lock:
            if key in self.objects:
                raise already_exists(gv, resource, name)
            rv = self._next_rv()
            meta["uid"] = str(uuid.uuid4())
            meta["resourceVersion"] = str(rv)
            meta["creationTimestamp"] = now_rfc3339()
            meta.setdefault("generation", 1)
            meta.pop("deletionTimestamp", None)
            self.objects[key] = obj
            self._record(rv, "ADDED", key, obj)
            self._gc_if_dangling(obj)
            return copy.deepcopy(obj)

    def get(self, gv, resource, ns, name):
        with self.lock:
            obj = self.objects.get((gv, resource, ns, name))
            if obj is None:
                raise not_found(gv, resource, name)
            return copy.deepcopy(obj)

    def update(self, gv, resource, ns, name, obj, subresource=None):
        """PUT: replace (or only .status for the status subresource)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
            raise bad_request("the body of the request was in an unknown format")
        meta = obj.get("metadata", {})
        if meta.get("name") not in (None, name):
            raise bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                              % (meta.get("name"), name))
        key = (gv, resource, ns, name)
        with self.lock:
            cur = self.objects.get(key)
            if cur is None:
                raise not_found(gv, resource, name)
            want_rv = meta.get("resourceVersion")
            if want_rv not in (None, "") and want_rv != cur["metadata"]["resourceVersion"]:
                raise conflict(gv, resource, name)
            if subresource == "status":
                new = copy.deepcopy(cur)
                if "status" in obj:
                    new["status"] = copy.deepcopy(obj["status"])
            else:
                new = copy.deepcopy(obj)
                nm = new.setdefault("metadata", {})
                for k in ("uid", "creationTimestamp", "namespace", "name"):
                    if k in cur["metadata"]:
                        nm[k] = cur["metadata"][k]
                new.setdefault("apiVersion", cur.get("apiVersion"))
                new.setdefault("kind", cur.get("kind"))
                if new.get("spec") != cur.get("spec"):
                    nm["generation"] = cur["metadata"].get("generation", 1) + 1
                else:
                    nm["generation"] = cur["metadata"].get("generation", 1)
            rv = self._next_rv()
            new["metadata"]["resourceVersion"] = str(rv)
            self.objects[key] = new
            self._record(rv, "MODIFIED", key, new)
            self._gc_if_dangling(new)
            return copy.deepcopy(new)

    def patch(self, gv, resource, ns, name, ctype, patch, subresource=None):
        with self.lock:
            cur = self.objects.get((gv, resource, ns, name))
            if cur is None:
                raise not_found(gv, resource, name)
            cur = copy.deepcopy(cur)
        if ctype == "application/merge-patch+json":
            new = merge_patch(cur, patch)
        elif ctype == "application/json-patch+json":
            new = json_patch(cur, patch)
        else:
            raise ApiError(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media "
                           "types include: application/json-patch+json, "
                           "application/merge-patch+json, application/apply-patch+yaml")
        if not isinstance(new, dict):
            raise bad_request("the patch does not produce an object")
        new.setdefault("metadata", {})["resourceVersion"] = cur["metadata"]["resourceVersion"]
        try:
            return self.update(gv, resource, ns, name, new, subresource)
        except ApiError as e:
            if e.reason == "Conflict":  # raced with a writer: kube retries internally
                return self.patch(gv, resource, ns, name, ctype, patch, subresource)
            raise

    def delete(self, gv, resource, ns, name, orphan=False, uid=None):
        """DELETE; dependents go later through the garbage collector unless orphan.
        uid: DeleteOptions preconditions.uid; another stored uid is 409 Conflict, as
        kube-apiserver answers."""
        key = (gv, resource, ns, name)
        with self.lock:
            cur = self.objects.get(key)
            if cur is None:
                raise not_found(gv, resource, name)
            if uid is not None and cur["metadata"].get("uid") != uid:
                raise ApiError(409, "Conflict",
                               'Operation cannot be fulfilled on %s "%s": Precondition failed: '
                               "UID in precondition: %s, UID in object meta: %s"
                               % (qualified(gv, resource), name, uid,
                                  cur["metadata"].get("uid")),
                               details_for(gv, resource, name))
            del self.objects[key]
            rv = self._next_rv()
            cur["metadata"]["resourceVersion"] = str(rv)
            self._record(rv, "DELETED", key, cur)
            if orphan:
                self._orphan_dependents(cur["metadata"].get("uid"))
            else:
                self._gc_schedule(cur["metadata"].get("uid"))
            return copy.deepcopy(cur)

    # ---- ownerReference garbage collection (docs/kube-api.md §4) ----
    def _gc_schedule(self, uid):
        """Collect uid's dependents after gc_delay, as kube's GC does some time later."""
        if not uid or not self.gc_enabled:
            return
        t = threading.Timer(self.gc_delay, self._gc_collect, [uid])
        t.daemon = True
        t.start()

    def _gc_if_dangling(self, obj):
        """A dependent written while none of its owners exists is collected too: kube's
        garbage collector looks up an owner it has not seen (by uid) and deletes the
        dependent of an absent owner, whenever the dependent was created."""
        refs = [r for r in (obj.get("metadata", {}).get("ownerReferences") or [])
                if isinstance(r, dict) and r.get("uid")]
        if not refs:
            return
        live = {o["metadata"].get("uid") for o in self.objects.values()}
        if not ({r["uid"] for r in refs} & live):
            self._gc_schedule(refs[0]["uid"])

    def _orphan_dependents(self, owner_uid):
        """propagationPolicy Orphan: the dependents lose their ownerReference to the
        deleted owner (kube's orphan finalizer), so nothing collects them later."""
        for key, obj in sorted(self.objects.items()):
            refs = obj.get("metadata", {}).get("ownerReferences")
            if not isinstance(refs, list):
                continue
            kept = [r for r in refs if not (isinstance(r, dict) and r.get("uid") == owner_uid)]
            if len(kept) == len(refs):
                continue
            obj = copy.deepcopy(obj)
            if kept:
                obj["metadata"]["ownerReferences"] = kept
            else:
                del obj["metadata"]["ownerReferences"]
            rv = self._next_rv()
            obj["metadata"]["resourceVersion"] = str(rv)
            self.objects[key] = obj
            self._record(rv, "MODIFIED", key, obj)

    def _gc_collect(self, owner_uid):
        """Delete every object owned by owner_uid whose owners are all gone; cascade."""
        with self.lock:
            if not self.gc_enabled:
                return
            live = {o["metadata"].get("uid") for o in self.objects.values()}
            victims = []
            for key, obj in sorted(self.objects.items()):
                refs = [r for r in (obj.get("metadata", {}).get("ownerReferences") or [])
                        if isinstance(r, dict)]
                uids = {r.get("uid") for r in refs}
                if owner_uid in uids and not (uids & live):
                    victims.append(key)
            for key in victims:
                cur = self.objects.pop(key)
                rv = self._next_rv()
                cur["metadata"]["resourceVersion"] = str(rv)
                self._record(rv, "DELETED", key, cur)
                self._gc_schedule(cur["metadata"].get("uid"))

    def set_gc(self, enabled, delay=None):
        with self.lock:
            self.gc_enabled = bool(enabled)
            if delay is not None:
                self.gc_delay = max(0.0, float(delay))

    def list(self, gv, resource, ns, limit=0, cont=None, match=None):
        """ns None = all namespaces. Returns (items, list rv, continue token, remaining)."""
        with self.lock:
            if cont:
                try:
                    tok = json.loads(base64.urlsafe_b64decode(cont.encode()).decode())
                    rv, start = int(tok["rv"]), tuple(tok["start"])
                except (ValueError, KeyError, TypeError):
                    raise bad_request("continue key is not valid: incorrect encoded start "
                                      "resourceVersion (version meta.k8s.io/v1)")
                if rv < self.compacted:
                    raise ApiError(410, "Expired",
                                   "The provided continue parameter is too old to display a "
                                   "consistent list result. You can start a new list without the "
                                   "continue parameter.")
            else:
                rv, start = self.rv, None
            snap = self._snapshot(rv)
        keys = sorted(k for k in snap
                      if k[0] == gv and k[1] == resource and (ns is None or k[2] == ns))
        if start is not None:
            keys = [k for k in keys if (k[2], k[3]) > start]
        items = []
        token = None
        remaining = 0
        for i, k in enumerate(keys):
            obj = snap[k]
            if match is not None and not match(obj):
                continue
            if limit and len(items) == limit:
                last = items[-1]["metadata"]
                token = base64.urlsafe_b64encode(json.dumps(
                    {"rv": rv, "start": [last.get("namespace", ""), last["name"]]}).encode()).decode()
                remaining = sum(1 for k2 in keys[i:] if match is None or match(snap[k2]))
                break
            items.append(copy.deepcopy(obj))
        return items, rv, token, remaining

    def compact(self, rv):
        """Forget history below rv (continue tokens from before answer 410)."""
        with self.lock:
            self.compacted = max(self.compacted, min(rv, self.rv))
            self.events = [e for e in self.events if e[0] >= self.compacted]

    def too_old(self, rv):
        """Whether a watch from rv needs history that compaction forgot. Lock held."""
        return rv < self.compacted - 1

    def events_since(self, rv):
        """Events after rv, or None when rv is older than the kept history. Lock held."""
        if rv < self.compacted - 1:
            return None
        return [e for e in self.events if e[0] > rv]

    def clear(self):
        with self.lock:
            for key, obj in sorted(self.objects.items()):
                rv = self._next_rv()
                obj["metadata"]["resourceVersion"] = str(rv)
                self._record(rv, "DELETED", key, obj)
            self.objects.clear()


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def json_patch(doc, ops):
    """RFC 6902 (add, remove, replace, move, copy, test)."""
    if not isinstance(ops, list):
        raise bad_request("json patch must be an array")

    def parse(ptr):
        if ptr == "":
            return []
        if not ptr.startswith("/"):
            raise bad_request("invalid json pointer %r" % ptr)
        return [p.replace("~1", "/").replace("~0", "~") for p in ptr[1:].split("/")]

    def walk(d, parts):
        for p in parts:
            if isinstance(d, list):
                d = d[int(p)]
            else:
                d = d[p]
        return d

    doc = copy.deepcopy(doc)
    try:
        for op in ops:
            kind, parts = op["op"], parse(op["path"])
            if kind in ("move", "copy"):
                val = copy.deepcopy(walk(doc, parse(op["from"])))
                if kind == "move":
                    doc = json_patch(doc, [{"op": "remove", "path": op["from"]}])
                kind, op = "add", {"value": val}
            if kind == "test":
                if walk(doc, parts) != op["value"]:
                    raise ApiError(422, "Invalid", "the server rejected our request due to an "
                                   "error in our request: test operation failed")
                continue
            if not parts:
                if kind in ("add", "replace"):
                    doc = copy.deepcopy(op["value"])
                    continue
                raise bad_request("cannot remove the root")
            parent, last = walk(doc, parts[:-1]), parts[-1]
            if kind == "add":
                if isinstance(parent, list):
                    parent.insert(len(parent) if last == "-" else int(last),
                                  copy.deepcopy(op["value"]))
                else:
                    parent[last] = copy.deepcopy(op["value"])
            elif kind == "remove":
                del parent[int(last) if isinstance(parent, list) else last]
            elif kind == "replace":
                idx = int(last) if isinstance(parent, list) else last
                parent[idx]  # must exist
                parent[idx] = copy.deepcopy(op["value"])
            else:
                raise bad_request("unknown patch op %r" % kind)
    except (KeyError, IndexError, ValueError, TypeError) as e:
        raise ApiError(422, "Invalid", "the server rejected our request due to an error in our "
                       "request: %s" % e)
    return doc


def label_matcher(selector):
    """k=v, k==v, k!=v, k, !k terms joined by commas (no set-based terms)."""
    terms = []
    for t in filter(None, (s.strip() for s in selector.split(","))):
        if "!=" in t:
            k, v = t.split("!=", 1)
            terms.append(lambda l, k=k.strip(), v=v.strip(): l.get(k) != v)
        elif "=" in t:
            k, v = t.replace("==", "=").split("=", 1)
            terms.append(lambda l, k=k.strip(), v=v.strip(): l.get(k) == v)
        elif t.startswith("!"):
            terms.append(lambda l, k=t[1:].strip(): k not in l)
        else:
            terms.append(lambda l, k=t: k in l)
    return lambda obj: all(f(obj.get("metadata", {}).get("labels") or {}) for f in terms)


def field_matcher(selector):
    terms = []
    for t in filter(None, (s.strip() for s in selector.split(","))):
        neg = "!=" in t
        k, v = re.split(r"!=|==|=", t, maxsplit=1)
        path = k.strip().split(".")

        def get(obj, path=path):
            for p in path:
                obj = obj.get(p, {}) if isinstance(obj, dict) else {}
            return obj if isinstance(obj, str) else ""

        terms.append(lambda o, g=get, v=v.strip(), neg=neg: (g(o) != v) if neg else (g(o) == v))
    return lambda obj: all(f(obj) for f in terms)


def selector_matcher(q):
    """labelSelector and fieldSelector of a query, as one predicate (None: everything)."""
    matchers = []
    if q.get("labelSelector", [""])[0]:
        matchers.append(label_matcher(q["labelSelector"][0]))
    if q.get("fieldSelector", [""])[0]:
        matchers.append(field_matcher(q["fieldSelector"][0]))
    return (lambda o: all(f(o) for f in matchers)) if matchers else None


PATH_RE = re.compile(
    r"^/(?P<gv>api/v1|apis/[^/]+/[^/]+)"
    r"(?:/namespaces/(?P<ns>[^/]+))?"
    r"/(?P<resource>[^/]+)(?:/(?P<name>[^/]+)(?:/(?P<sub>[^/]+))?)?/?$")


def parse_path(path):
    """(gv, resource, ns or None, name or None, subresource or None) or None."""
    m = PATH_RE.match(path)
    if not m:
        return None
    gv, ns, resource, name, sub = m.group("gv", "ns", "resource", "name", "sub")
    unq = urllib.parse.unquote
    return (gv, unq(resource), unq(ns) if ns is not None else None,
            unq(name) if name is not None else None, unq(sub) if sub is not None else None)


class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []

    def add(self, rule):
        if not isinstance(rule, dict):
            raise bad_request("fault must be an object")
        r = {"method": rule.get("method"), "path_regex": rule.get("path_regex", ""),
             "status": int(rule.get("status", 0) or 0), "reason": rule.get("reason", ""),
             "message": rule.get("message", ""), "delay_ms": int(rule.get("delay_ms", 0) or 0),
             "count": int(rule.get("count", 1)), "retry_after": rule.get("retry_after"),
             "close": bool(rule.get("close", False)),
             # watch faults: passed to the watch instead of answering
             "watch_drop_after_events": int(rule.get("watch_drop_after_events", 0) or 0),
             "watch_drop_after_ms": int(rule.get("watch_drop_after_ms", 0) or 0),
             "watch_stall_ms": int(rule.get("watch_stall_ms", 0) or 0),
             "watch_gone_http": bool(rule.get("watch_gone_http", False)),
             # answer manglers: the request is carried out, its answer spoiled
             "truncate_body_bytes": rule.get("truncate_body_bytes"),
             "body_override": rule.get("body_override"),
             "content_type": rule.get("content_type"),
             "for_ms": int(rule.get("for_ms", 0) or 0)}
        # for_ms: the rule lapses after this long whatever its count ("for a while")
        r["expires"] = time.monotonic() + r["for_ms"] / 1000.0 if r["for_ms"] else None
        if r["truncate_body_bytes"] is not None:
            r["truncate_body_bytes"] = int(r["truncate_body_bytes"])
        if r["body_override"] is not None and not isinstance(r["body_override"], str):
            raise bad_request("body_override must be a string")
        if r["content_type"] is not None and not isinstance(r["content_type"], str):
            raise bad_request("content_type must be a string")
        try:
            r["re"] = re.compile(r["path_regex"])
        except re.error as e:
            raise bad_request("bad path_regex: %s" % e)
        with self.lock:
            self.rules.append(r)
        return {k: v for k, v in r.items() if k not in ("re", "expires")}

    def clear(self):
        with self.lock:
            self.rules = []

    def match(self, method, target):
        """The first rule matching method and "path?query"; uses up one count."""
        with self.lock:
            now = time.monotonic()
            self.rules = [r for r in self.rules if r["expires"] is None or r["expires"] > now]
            for r in self.rules:
                if r["method"] and r["method"].upper() != method:
                    continue
                if not r["re"].search(target):
                    continue
                if r["count"] > 0:
                    r["count"] -= 1
                    if r["count"] == 0:
                        self.rules.remove(r)
                return dict(r)
        return None


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # do not wait for idle keep-alive connections at exit
    allow_reuse_address = True

    def __init__(self, addr, handler, opts):
        self.address_family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
        super().__init__(addr, handler)
        self.opts = opts
        self.store = Store(opts.gc_delay)
        self.faults = Faults()
        self.requests = []
        self.req_lock = threading.Lock()
        self.stopping = threading.Event()

    def handle_error(self, request, client_address):
        if self.opts.verbose:
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "apiserver.py/1"
    sys_version = ""
    # Speed: headers and body written separately to a Nagle socket stall each answer on
    # the client's delayed ACK (~40 ms). So: TCP_NODELAY on every accepted socket, and a
    # buffered wfile so an answer (status line, headers, body) leaves in one send;
    # handle_one_request() flushes it after each request. Whatever must leave before
    # the request is over (100 Continue, watch headers and chunks, truncated bodies,
    # anything before a dropped connection) is flushed explicitly.
    disable_nagle_algorithm = True
    wbufsize = 1 << 16

    def log_message(self, fmt, *args):
        if self.server.opts.verbose:
            sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    def handle_expect_100(self):
        """100 Continue must reach the client before it sends the body."""
        ok = super().handle_expect_100()
        self.wfile.flush()
        return ok

    # ---- I/O ----
    def read_body(self):
        """The request body (read once, at dispatch, so keep-alive stays in step)."""
        return self.body_raw

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            raise bad_request("bad Content-Length")
        return self.rfile.read(n) if n > 0 else b""

    def read_json(self):
        raw = self.read_body()
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if not raw:
            raise bad_request("the body of the request was empty")
        try:
            if ctype in ("application/yaml", "application/apply-patch+yaml"):
                import yaml
                return yaml.safe_load(raw)
            return json.loads(raw)
        except Exception as e:  # noqa: BLE001 - any decode problem is a 400
            raise bad_request("the body of the request could not be decoded: %s" % e)

    def send_json(self, code, obj, headers=None):
        body = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        f = getattr(self, "fault", None) or {}
        ctype = "application/json"
        if f.get("body_override") is not None:
            body = f["body_override"].encode()
        if f.get("content_type") is not None:
            ctype = f["content_type"]
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        if self.command == "HEAD":
            return
        if f.get("truncate_body_bytes") is not None:
            # the promised length never arrives: the client sees the connection die
            self.wfile.write(body[:max(0, f["truncate_body_bytes"])])
            self.wfile.flush()
            self.drop_connection()
            return
        self.wfile.write(body)

    def send_status(self, e):
        self.send_json(e.code, e.body(), e.headers)

    # ---- dispatch ----
    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_PATCH(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    def dispatch(self):
        url = urllib.parse.urlsplit(self.path)
        path, query = url.path, url.query
        self.fault = None
        try:
            self.body_raw = self._read_body()
            if path.startswith("/_test/"):
                self.control(path)
                return
            self.log_request_entry(path, query)
            fault = self.server.faults.match(self.command, path + ("?" + query if query else ""))
            self.fault = fault
            if fault is not None:
                if self.apply_fault(fault):
                    return
            self.check_auth()
            self.rest(path, urllib.parse.parse_qs(query))
        except ApiError as e:
            self.send_status(e)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    def log_request_entry(self, path, query):
        # time: the server's monotonic clock in seconds, for tests that measure client pacing
        entry = {"method": self.command, "path": path, "query": query, "time": time.monotonic(),
                 "headers": {h: self.headers[h] for h in LOGGED_HEADERS if h in self.headers}}
        if self.command == "DELETE" and self.body_raw:
            # the DeleteOptions as sent (text), so tests can check preconditions
            entry["body"] = self.body_raw.decode("utf-8", "replace")
        with self.server.req_lock:
            self.server.requests.append(entry)

    def apply_fault(self, f):
        """Stall, then answer or drop. True when the request is done."""
        end = time.monotonic() + f["delay_ms"] / 1000.0
        while time.monotonic() < end and not self.server.stopping.is_set():
            time.sleep(min(0.02, max(0.0, end - time.monotonic())))
        if f["close"]:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return True
        if f["status"]:
            headers = {}
            if f["retry_after"] is not None:
                headers["Retry-After"] = f["retry_after"]
            body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": f["message"], "reason": f["reason"], "code": f["status"]}
            if not f["reason"]:
                del body["reason"]
            self.send_json(f["status"], body, headers)
            return True
        return False

    def check_auth(self):
        token = self.server.opts.token
        if token is None:
            return
        if self.headers.get("Authorization", "") != "Bearer " + token:
            raise ApiError(401, "Unauthorized", "Unauthorized")

    def rest(self, path, q):
        if path == "/version" and self.command == "GET":
            self.send_json(200, {"major": "1", "minor": "30", "gitVersion": "v1.30.0-apiserver.py",
                                 "platform": "linux/amd64"})
            return
        if path in ("/healthz", "/readyz", "/livez"):
            body = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        parsed = parse_path(path)
        if parsed is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        gv, resource, ns, name, sub = parsed
        if ns is not None and resource in CLUSTER_SCOPED:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        store = self.server.store
        m = self.command
        if name is None:
            if m == "GET":
                self.list(gv, resource, ns, q)
            elif m == "POST":
                obj = self.read_json()
                self.send_json(201, store.create(gv, resource, ns or "", obj))
            else:
                raise ApiError(405, "MethodNotAllowed",
                               "the server does not allow this method on the requested resource")
            return
        if sub not in (None, "status"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        ns = ns or ""
        if m == "GET":
            self.send_json(200, store.get(gv, resource, ns, name))
        elif m == "PUT":
            self.send_json(200, store.update(gv, resource, ns, name, self.read_json(), sub))
        elif m == "PATCH":
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            self.send_json(200, store.patch(gv, resource, ns, name, ctype, self.read_json(),
                                            sub))
        elif m == "DELETE":
            self.send_json(200, store.delete(gv, resource, ns, name,
                                             self.delete_policy(q) == "Orphan",
                                             self.delete_precondition_uid()))
        else:
            raise ApiError(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource")

    def delete_policy(self, q):
        """propagationPolicy from the query or a DeleteOptions body ("" when none)."""
        pol = q.get("propagationPolicy", [""])[0]
        if self.body_raw:
            try:
                opts = json.loads(self.body_raw)
                if isinstance(opts, dict) and isinstance(opts.get("propagationPolicy"), str):
                    pol = opts["propagationPolicy"]
            except ValueError:
                raise bad_request("the body of the request could not be decoded")
        return pol

    def delete_precondition_uid(self):
        """preconditions.uid of a DeleteOptions body (None when none; 400 when not a string)."""
        if not self.body_raw:
            return None
        try:
            opts = json.loads(self.body_raw)
        except ValueError:
            raise bad_request("the body of the request could not be decoded")
        pre = opts.get("preconditions") if isinstance(opts, dict) else None
        if not isinstance(pre, dict) or pre.get("uid") is None:
            return None
        if not isinstance(pre["uid"], str):
            raise bad_request("preconditions.uid: must be a string")
        return pre["uid"]

    def list(self, gv, resource, ns, q):
        if q.get("watch", ["0"])[0] in ("1", "true"):
            self.watch(gv, resource, ns, q)
            return
        try:
            limit = int(q.get("limit", ["0"])[0] or 0)
        except ValueError:
            raise bad_request("limit must be an integer")
        match = selector_matcher(q)
        items, rv, token, remaining = self.server.store.list(
            gv, resource, ns, limit, q.get("continue", [""])[0] or None, match)
        meta = {"resourceVersion": str(rv)}
        if token:
            meta["continue"] = token
            meta["remainingItemCount"] = remaining
        self.send_json(200, {"kind": resource_to_kind(resource) + "List",
                             "apiVersion": gv_to_api_version(gv), "metadata": meta,
                             "items": items})

    # ---- watch (docs/kube-api.md §3) ----
    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def write_event(self, etype, obj):
        self.write_chunk((json.dumps({"type": etype, "object": obj}, separators=(",", ":"))
                          + "\n").encode())

    def drop_connection(self):
        """End abruptly: no final chunk, as a network path that dies."""
        self.close_connection = True
        try:
            self.wfile.flush()  # what was written before the drop still goes out
        except OSError:
            pass
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def client_gone(self):
        """True when the client closed its end (a watch client never sends anything)."""
        try:
            r, _, _ = select.select([self.connection], [], [], 0)
            if not r:
                return False
            if isinstance(self.connection, ssl.SSLSocket):
                return True  # close_notify or EOF; nothing else is expected
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def watch(self, gv, resource, ns, q):
        """Chunked stream of {"type","object"} lines from the event log after resourceVersion.

        RV "" or "0": synthetic ADDED for the current state, then live. An RV older than
        the compaction point: HTTP 200 and one ERROR event (Status 410 Expired), or HTTP 410
        with the fault option watch_gone_http. allowWatchBookmarks=true: a BOOKMARK every
        --bookmark-interval seconds. timeoutSeconds ends the stream cleanly (final chunk).
        """
        srv, store, f = self.server, self.server.store, self.fault or {}
        rv_s = q.get("resourceVersion", [""])[0]
        bookmarks = q.get("allowWatchBookmarks", ["false"])[0] in ("1", "true")
        try:
            timeout = float(q.get("timeoutSeconds", ["0"])[0] or 0)
            start = int(rv_s) if rv_s not in ("", "0") else None
        except ValueError:
            raise bad_request("invalid resourceVersion or timeoutSeconds")
        match = selector_matcher(q)
        kind, api_version = resource_to_kind(resource), gv_to_api_version(gv)

        def relevant(key, obj):
            return (key[0] == gv and key[1] == resource and (ns is None or key[2] == ns)
                    and (match is None or match(obj)))

        initial = []
        with store.lock:
            if start is None:
                cur = store.rv
                initial = [copy.deepcopy(o) for k, o in sorted(store.objects.items())
                           if relevant(k, o)]
                gone = False
            else:
                cur = start
                gone = store.too_old(start)
            compacted = store.compacted
        expired = ApiError(410, "Expired", "too old resource version: %s (%d)"
                           % (rv_s, max(compacted - 1, 0)))
        if gone and f.get("watch_gone_http"):
            raise expired
        self.send_response(200)
        self.send_header("Content-Type", f.get("content_type") or "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()  # the 200 goes out now, before any event (or a stall)
        if f.get("body_override") is not None:
            self.write_chunk(f["body_override"].encode())  # one bad "event", then the end
            self.write_chunk(b"")
            return
        if gone:
            self.write_event("ERROR", expired.body())
            self.write_chunk(b"")
            return
        t0 = time.monotonic()
        deadline = t0 + timeout if timeout > 0 else None
        drop_at = t0 + f["watch_drop_after_ms"] / 1000.0 if f.get("watch_drop_after_ms") else None
        drop_after = f.get("watch_drop_after_events") or 0
        sent = 0
        if f.get("watch_stall_ms"):
            # send nothing, keep the connection open (a stuck path); < 0 = until the client leaves
            stall_end = t0 + f["watch_stall_ms"] / 1000.0 if f["watch_stall_ms"] > 0 else None
            while not srv.stopping.is_set() and not self.client_gone():
                if stall_end is not None and time.monotonic() >= stall_end:
                    break
                time.sleep(0.05)
            if srv.stopping.is_set() or self.client_gone():
                self.drop_connection()
                return
        interval = srv.opts.bookmark_interval
        next_bm = time.monotonic() + interval
        pending = [("ADDED", o) for o in initial]
        while True:
            for etype, obj in pending:
                self.write_event(etype, obj)
                sent += 1
                if drop_after and sent >= drop_after:
                    self.drop_connection()
                    return
            now = time.monotonic()
            if drop_at is not None and now >= drop_at:
                self.drop_connection()
                return
            if deadline is not None and now >= deadline:
                self.write_chunk(b"")  # clean end of the stream
                return
            if bookmarks and now >= next_bm:
                self.write_event("BOOKMARK", {"kind": kind, "apiVersion": api_version,
                                              "metadata": {"resourceVersion": str(cur)}})
                next_bm = now + interval
            if srv.stopping.is_set() or self.client_gone():
                self.drop_connection()
                return
            wake = [now + 0.2]
            for t in (deadline, drop_at, next_bm if bookmarks else None):
                if t is not None:
                    wake.append(t)
            with store.cond:
                evs = store.events_since(cur)
                if evs == []:
                    store.cond.wait(max(0.0, min(wake) - time.monotonic()))
                    evs = store.events_since(cur)
            if evs is None:  # compacted past us while we watched
                self.write_event("ERROR", ApiError(410, "Expired", "too old resource version: "
                                                   "%d (%d)" % (cur, store.compacted - 1)).body())
                self.write_chunk(b"")
                return
            pending = []
            for erv, etype, key, obj in evs:
                cur = erv
                if relevant(key, obj):
                    pending.append((etype, obj))

    # ---- /_test/ control ----
    def control(self, path):
        srv, m = self.server, self.command
        if path == "/_test/faults" and m == "POST":
            body = self.read_json()
            rules = body if isinstance(body, list) else [body]
            self.send_json(201, {"faults": [srv.faults.add(r) for r in rules]})
        elif path == "/_test/faults" and m == "DELETE":
            srv.faults.clear()
            self.send_json(200, {})
        elif path == "/_test/requests" and m == "GET":
            with srv.req_lock:
                counts = {}
                for e in srv.requests:
                    counts[e["path"]] = counts.get(e["path"], 0) + 1
                self.send_json(200, {"requests": list(srv.requests), "counts": counts})
        elif path == "/_test/requests" and m == "DELETE":
            with srv.req_lock:
                srv.requests.clear()
            self.send_json(200, {})
        elif path == "/_test/objects" and m == "POST":
            self.send_json(201, {"items": load_objects(srv.store, self.read_json())})
        elif path == "/_test/objects" and m == "DELETE":
            srv.store.clear()
            self.send_json(200, {})
        elif path == "/_test/gc" and m == "POST":
            body = self.read_json()
            if not isinstance(body, dict):
                raise bad_request("gc: an object is required")
            delay = body.get("delay_ms")
            srv.store.set_gc(body.get("enabled", True),
                             None if delay is None else float(delay) / 1000.0)
            self.send_json(200, {"enabled": srv.store.gc_enabled,
                                 "delay_ms": int(srv.store.gc_delay * 1000)})
        elif path == "/_test/clock" and m == "POST":
            body = self.read_json()
            if not isinstance(body, dict):
                raise bad_request("clock: an object is required")
            CLOCK_OFFSET_S[0] = float(body.get("offset_s", 0) or 0)
            self.send_json(200, {"offset_s": CLOCK_OFFSET_S[0]})
        elif path == "/_test/compact" and m == "POST":
            body = self.read_json()
            srv.store.compact(int(body.get("resourceVersion", srv.store.rv)))
            self.send_json(200, {"compacted": srv.store.compacted})
        else:
            raise ApiError(404, "NotFound", "no such test endpoint", {})


def load_objects(store, doc):
    """Create an object, a list's items, or a list of either. Returns the created objects."""
    if doc is None:
        return []
    if isinstance(doc, list):
        out = []
        for d in doc:
            out.extend(load_objects(store, d))
        return out
    if not isinstance(doc, dict):
        raise bad_request("an object or a list of objects is required")
    if isinstance(doc.get("items"), list) and str(doc.get("kind", "")).endswith("List"):
        return load_objects(store, doc["items"])
    if not doc.get("apiVersion") or not doc.get("kind"):
        raise bad_request("object needs apiVersion and kind")
    gv = api_version_to_gv(doc["apiVersion"])
    resource = kind_to_resource(doc["kind"])
    ns = (doc.get("metadata") or {}).get("namespace") or "default"
    if resource in CLUSTER_SCOPED:
        ns = ""
    return [store.create(gv, resource, ns, doc)]


def load_file(store, path):
    with open(path, "rb") as f:
        raw = f.read()
    try:
        docs = [json.loads(raw)]
    except ValueError:
        import yaml
        docs = list(yaml.safe_load_all(raw))
    for d in docs:
        load_objects(store, d)


def main():
    ap = argparse.ArgumentParser(description="in-memory kube-apiserver stand-in for tests")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--load", action="append", default=[])
    ap.add_argument("--token")
    ap.add_argument("--bookmark-interval", type=float, default=1.0,
                    help="seconds between watch BOOKMARK events (allowWatchBookmarks=true)")
    ap.add_argument("--gc-delay", type=float, default=0.1,
                    help="seconds before the garbage collector deletes an owner's dependents")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    if bool(opts.tls_cert) != bool(opts.tls_key):
        ap.error("--tls-cert and --tls-key go together")

    srv = Server((opts.bind, opts.port), Handler, opts)
    try:
        for path in opts.load:
            load_file(srv.store, path)
    except (OSError, ValueError, ApiError) as e:
        sys.stderr.write("apiserver.py: --load: %s\n" % e)
        return 2
    if opts.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(opts.tls_cert, opts.tls_key)
        ctx.set_alpn_protocols(["http/1.1"])
        # handshake in the connection's own thread, not in accept()
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)

    def stop(_signum, _frame):
        srv.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    if opts.port_file:
        tmp = opts.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.replace(tmp, opts.port_file)  # readers never see a partial file
    while not srv.stopping.wait(0.5):
        pass
    srv.shutdown()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
