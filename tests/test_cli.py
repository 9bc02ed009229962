# SPDX-License-Identifier: Apache-2.0
"""The command line's usage errors, as a user meets them: every subcommand says
what is wrong in one line "volcano-plugin-webhook: COMMAND: ..." on stderr, prints
nothing on stdout and exits 2; --help goes to stdout and exits 0.
(serve's every flag is covered by tests/webhook/check_serve_flags.c, in-process.)
"""
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

import harness

P = "volcano-plugin-webhook: "
# `version`: the release, then git describe, the commit and the build date (or "unknown").
VERSION_OUTPUT = (r"\Avolcano-plugin-webhook \d+\.\d+\.\d+\n"
                  r"git: ([0-9A-Za-z._+-]+)\n"
                  r"commit: ([0-9a-f]{7,40}|unknown)\n"
                  r"built: (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|unknown)\n\Z")


def write_json(directory, name, obj):
    """obj as JSON in directory/name; returns the path."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


def run(*args, timeout=30):
    """(exit status, stdout, stderr) of the binary with args."""
    p = subprocess.run([harness.binary(), *args], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


class UsageErrors(unittest.TestCase):
    def assert_usage_error(self, args, line):
        rc, out, err = run(*args)
        self.assertEqual((rc, out, err), (2, "", line + "\n"), args)

    def test_one_line_per_usage_error(self):
        cases = [
            (["serve", "--bogus"], P + "serve: unknown flag --bogus (see --help)"),
            (["gen-certs", "--bogus"], P + "gen-certs: unknown flag --bogus (see --help)"),
            (["gen-certs"], P + "gen-certs: missing required flag --service (see --help)"),
            (["gen-certs", "--dns", "bad name"], P + "gen-certs: invalid --dns \"bad name\": "
             "want a DNS name or IP address of 1..253 printable characters, no spaces or commas"),
            (["render", "--bogus"], P + "render: unknown flag --bogus (see --help)"),
            (["render"], P + "render: missing required flag -f JOB (see --help)"),
            (["render", "-f"], P + "render: flag -f needs a value"),
            (["render", "-f", "j.yaml", "-o", "xml"],
             P + "render: --output must be pod, yaml or patch, not \"xml\""),
            (["render", "-f", "j.yaml", "extra"], P + "render: unexpected argument \"extra\""),
            *[(["render", "-f", "j.yaml", "--namespace", ns],
               P + "render: invalid --namespace \"%s\": want a DNS-1123 label (1 to 63 of "
                   "a-z, 0-9 and '-', a letter or digit at both ends)" % ns)
              for ns in ("", "Team-A", "team_a", "-a", "a-", "a.b", "a" * 64)],
            (["version", "x"], P + "version: unexpected argument \"x\" (see --help)"),
        ]
        for args, line in cases:
            with self.subTest(args=args):
                self.assert_usage_error(args, line)

    def test_render_reads_every_job_of_a_stream(self):
        """A multi-document file (kubectl's form) and standard input."""
        ex = os.path.join(harness.ROOT, "examples")
        with open(os.path.join(ex, "pytorch-job.yaml")) as f:
            pytorch = f.read()
        with open(os.path.join(ex, "mpi-job.yaml")) as f:
            mpi = f.read()
        with tempfile.TemporaryDirectory() as tmp:
            multi = os.path.join(tmp, "multi.yaml")
            with open(multi, "w") as f:
                f.write(pytorch + "\n---\n" + mpi + "\n---\n")
            rc, out, err = run("render", "-f", multi, "-o", "patch")
            self.assertEqual((rc, err), (0, ""))
            self.assertEqual([i["pod"] for i in json.loads(out)],
                             ["pytorch-job-master-0", "pytorch-job-worker-0",
                              "pytorch-job-worker-1", "mpi-job-mpimaster-0",
                              "mpi-job-mpiworker-0", "mpi-job-mpiworker-1"])
            # each Job's pods as when it is alone in its file
            rc, alone, _ = run("render", "-f", os.path.join(ex, "mpi-job.yaml"), "-o", "patch")
            self.assertEqual(rc, 0)
            self.assertEqual(json.loads(out)[3:], json.loads(alone))
            p = subprocess.run([harness.binary(), "render", "-f", "-", "-o", "patch"],
                               input=mpi, capture_output=True, text=True, timeout=30)
            self.assertEqual((p.returncode, p.stderr), (0, ""))
            self.assertEqual(json.loads(p.stdout), json.loads(alone))
            # --pod and --review take one Job; a document that is not a Job is named
            self.assert_usage_error(["render", "-f", multi, "--review", "r.json", "-o", "pod"],
                                    P + "render: --output does not apply to --review "
                                        "(it prints the AdmissionReview)")
            rc, out, err = run("render", "-f", multi, "--review", "r.json")
            self.assertEqual((rc, out, err), (1, "", P + "render: %s: holds 2 Jobs; --review "
                                                      "takes a file with one\n" % multi))
            with open(multi, "a") as f:
                f.write("kind: Pod\n")
            rc, out, err = run("render", "-f", multi)
            self.assertEqual((rc, out, err), (1, "", P + "render: %s: document 3: not a "
                             "batch.volcano.sh/v1alpha1 Job (apiVersion missing, kind Pod)\n"
                             % multi))

    def test_render_reads_lists_and_repeated_files(self):
        """`kubectl get vcjob -o yaml` prints a v1 List, the API a JobList; -f may be
        given more than once, as to kubectl. The pods are those of each Job alone."""
        ex = os.path.join(harness.ROOT, "examples")
        jobs = []
        for name in ("pytorch-job", "mpi-job"):
            with open(os.path.join(ex, name + ".yaml")) as f:
                jobs.append(yaml.safe_load(f))
        alone = []
        for name in ("pytorch-job", "mpi-job"):
            rc, out, _ = run("render", "-f", os.path.join(ex, name + ".yaml"), "-o", "patch")
            self.assertEqual(rc, 0)
            alone += json.loads(out)
        with tempfile.TemporaryDirectory() as tmp:
            write = functools.partial(write_json, tmp)
            cases = [
                ["-f", write("list.json", {"apiVersion": "v1", "kind": "List",
                                           "metadata": {}, "items": jobs})],
                ["-f", write("joblist.json", {"apiVersion": "batch.volcano.sh/v1alpha1",
                                              "kind": "JobList", "items": jobs})],
                ["-f", os.path.join(ex, "pytorch-job.yaml"), "-f",
                 os.path.join(ex, "mpi-job.yaml")],
            ]
            for args in cases:
                with self.subTest(args=args):
                    rc, out, err = run("render", *args, "-o", "patch")
                    self.assertEqual((rc, err), (0, ""))
                    self.assertEqual(json.loads(out), alone)
            pods = write("pods.json", {"apiVersion": "v1", "kind": "List",
                                       "items": [jobs[0], {"apiVersion": "v1", "kind": "Pod"}]})
            self.assertEqual(run("render", "-f", pods), (1, "", P + "render: %s: items[1]: not "
                             "a batch.volcano.sh/v1alpha1 Job (apiVersion v1, kind Pod)\n" % pods))
            bad = write("bad.json", {"apiVersion": "v1", "kind": "List", "items": {}})
            self.assertEqual(run("render", "-f", bad),
                             (1, "", P + "render: %s: items is not a list\n" % bad))
            for name, items in (("empty.json", []), ("null.json", None)):
                empty = write(name, {"apiVersion": "v1", "kind": "List", "items": items})
                self.assertEqual(run("render", "-f", empty),
                                 (1, "", P + "render: %s: a List with no items: no Job to "
                                  "render\n" % empty))
            self.assertEqual(run("render", "-f", "-", "-f", "-"),
                             (2, "", P + "render: -f - (standard input) can be given once\n"))
            # the same file twice would render each of its Jobs twice: refused, however named
            mpi = os.path.join(ex, "mpi-job.yaml")
            link = os.path.join(tmp, "link.yaml")
            os.symlink(mpi, link)
            self.assertEqual(run("render", "-f", mpi, "-f", mpi),
                             (2, "", P + "render: -f %s is given twice\n" % mpi))
            self.assertEqual(run("render", "-f", mpi, "-f", link, "-o", "patch"),
                             (2, "", P + "render: -f %s and -f %s are the same file\n"
                              % (mpi, link)))
            with open(mpi) as stdin:
                p = subprocess.run([harness.binary(), "render", "-f", "-", "-f", mpi],
                                   stdin=stdin, capture_output=True, text=True, timeout=30)
            self.assertEqual((p.returncode, p.stdout, p.stderr),
                             (2, "", P + "render: -f - and -f %s are the same file\n" % mpi))
            self.assertEqual(run("render", "-f", os.path.join(ex, "pytorch-job.yaml"), "-f",
                                 os.path.join(ex, "mpi-job.yaml"), "--pod", "p.json"),
                             (1, "", P + "render: the -f files hold 2 Jobs; --pod takes one\n"))

    def test_render_patch_names_pod_namespace_and_job(self):
        """Each -o patch entry says which pod of which Job in which namespace: a List
        of Jobs may mix namespaces; --namespace fills in where a Job has none."""
        jobs = [harness.load_job("pytorch-job"), harness.load_job("mpi-job")]
        jobs[0]["metadata"]["namespace"] = "team-a"
        jobs[1]["metadata"].pop("namespace", None)
        with tempfile.TemporaryDirectory() as tmp:
            path = write_json(tmp, "list.json", {"apiVersion": "v1", "kind": "List",
                                                 "items": jobs})
            for args, other_ns in (([], "default"), (["--namespace", "team-b"], "team-b")):
                with self.subTest(args=args):
                    rc, out, err = run("render", "-f", path, "-o", "patch", *args)
                    self.assertEqual((rc, err), (0, ""))
                    self.assertEqual(
                        [(i["pod"], i["namespace"], i["job"], list(i)) for i in json.loads(out)],
                        [(p, ns, j, ["pod", "namespace", "job", "patch"]) for p, ns, j in (
                            ("pytorch-job-master-0", "team-a", "pytorch-job"),
                            ("pytorch-job-worker-0", "team-a", "pytorch-job"),
                            ("pytorch-job-worker-1", "team-a", "pytorch-job"),
                            ("mpi-job-mpimaster-0", other_ns, "mpi-job"),
                            ("mpi-job-mpiworker-0", other_ns, "mpi-job"),
                            ("mpi-job-mpiworker-1", other_ns, "mpi-job"))])

    def test_render_output_yaml(self):
        """-o yaml prints the objects of -o pod as YAML (libyaml's emitter), which a
        YAML 1.1 reader takes back as the same values: strings such as "0" or "yes"
        quoted, a multi-line command as a literal block."""
        ex = os.path.join(harness.ROOT, "examples")
        for name in sorted(os.listdir(ex)):
            with self.subTest(example=name):
                path = os.path.join(ex, name)
                rc, as_json, _ = run("render", "-f", path)
                self.assertEqual(rc, 0)
                rc, as_yaml, _ = run("render", "-f", path, "-o", "yaml")
                self.assertEqual(rc, 0)
                self.assertTrue(as_yaml.startswith("apiVersion: v1\nkind: List\n"), as_yaml)
                self.assertEqual(yaml.safe_load(as_yaml), json.loads(as_json))
        rc, out, _ = run("render", "-f", os.path.join(ex, "pytorch-job.yaml"), "-o", "yaml")
        self.assertIn("\n      volcano.sh/task-index: \"0\"\n", out)
        self.assertIn("\n      - -c\n      - |\n        import os\n", out)
        # --pod -o yaml: that pod alone
        job = harness.load_job("pytorch-job")
        pod = harness.build_pod(job, "worker", 1)
        with tempfile.TemporaryDirectory() as tmp:
            args = ["render", "-f", write_json(tmp, "job.json", job),
                    "--pod", write_json(tmp, "pod.json", pod)]
            rc, as_json, _ = run(*args)
            self.assertEqual(rc, 0)
            rc, as_yaml, err = run(*args, "-o", "yaml")
            self.assertEqual((rc, err), (0, ""))
            self.assertTrue(as_yaml.startswith("kind: Pod\napiVersion: v1\n"), as_yaml)
            self.assertEqual(yaml.safe_load(as_yaml), json.loads(as_json))

    def test_render_warns_of_repeated_keys(self):
        """Three published examples repeat `queue:`; the reader keeps the last value, as
        kubectl's does, and render says where, so that a first value meant is not lost
        without a word."""
        ex = os.path.join(harness.ROOT, "examples")
        for name in ("ray-cluster-job.yaml", "tensorflow-dist-mnist.yaml",
                     "tensorflow-dist-mnist-with-comments.yaml"):
            with self.subTest(example=name):
                path = os.path.join(ex, name)
                rc, out, err = run("render", "-f", path, "-o", "patch")
                self.assertEqual(rc, 0)
                self.assertEqual(err, P + "render: warning: %s: line 15: repeated key "
                                 "\"queue\" (spec.queue); the last value is kept, as "
                                 "kubectl's YAML reader keeps it\n" % path)
                self.assertTrue(json.loads(out))
        rc, _, err = run("render", "-f", os.path.join(ex, "pytorch-job.yaml"))
        self.assertEqual((rc, err), (0, ""))
        # the line is the file's, in any document; the value used is the last
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(ex, "mpi-job.yaml")) as f:
                mpi = f.read()
            path = os.path.join(tmp, "two.yaml")
            with open(path, "w") as f:
                f.write(mpi + "---\n" + mpi.replace("name: mpi-job\n",
                                                    "name: first\n  name: mpi-job-2\n", 1))
            line = mpi.count("\n") + 2 + mpi.split("name: mpi-job\n")[0].count("\n") + 1
            rc, out, err = run("render", "-f", path, "-o", "patch")
            self.assertEqual(rc, 0)
            self.assertEqual(err, P + "render: warning: %s: line %d: repeated key \"name\" "
                             "(metadata.name); the last value is kept, as kubectl's YAML "
                             "reader keeps it\n" % (path, line))
            self.assertEqual(json.loads(out)[-1]["job"], "mpi-job-2")
            # a --pod file too
            job = harness.load_job("pytorch-job")
            pod = harness.build_pod(job, "worker", 1)
            pod["spec"]["restartPolicy"] = "OnFailure"
            text = yaml.safe_dump(pod, sort_keys=False)
            self.assertEqual(text.count("  restartPolicy: OnFailure\n"), 1)
            ppath = os.path.join(tmp, "pod.yaml")
            with open(ppath, "w") as f:
                f.write(text.replace("  restartPolicy: OnFailure\n",
                                     "  restartPolicy: Never\n  restartPolicy: OnFailure\n"))
            line = text.split("  restartPolicy: OnFailure\n")[0].count("\n") + 2
            rc, out, err = run("render", "-f", write_json(tmp, "job.json", job), "--pod", ppath)
            self.assertEqual(rc, 0)
            self.assertEqual(err, P + "render: warning: %s: line %d: repeated key "
                             "\"restartPolicy\" (spec.restartPolicy); the last value is kept, "
                             "as kubectl's YAML reader keeps it\n" % (ppath, line))
            self.assertEqual(json.loads(out)["spec"]["restartPolicy"], "OnFailure")

    def test_render_prints_diagnostics_and_strict_fails(self):
        """render says on stderr what the Job webhook would warn of (D17); --strict makes
        any of it exit 1, so a Job can be linted in CI; a Job without any exits 0."""
        job = harness.load_job("pytorch-job")
        job["spec"]["plugins"]["pytorch"] = ["--master=boss", "--worker=worker"]
        with tempfile.TemporaryDirectory() as tmp:
            bad = write_json(tmp, "bad.json", job)
            good = write_json(tmp, "good.json", harness.load_job("pytorch-job"))
            want = (P + "render: warning: job %s/pytorch-job: pytorch plugin: no task named "
                    "\"boss\" (--master), so no pod gets MASTER_ADDR, MASTER_PORT, WORLD_SIZE "
                    "or RANK: name the master task with --master in spec.plugins.pytorch, or "
                    "rename the task\n" % job["metadata"]["namespace"])
            rc, out, err = run("render", "-f", bad)
            self.assertEqual((rc, err), (0, want))
            self.assertTrue(json.loads(out)["items"])
            rc, out2, err = run("render", "-f", bad, "--strict")
            self.assertEqual((rc, err), (1, want + P + "render: 1 diagnostic (--strict)\n"))
            self.assertEqual(out2, out)  # the pods are printed all the same
            rc, _, err = run("render", "-f", good, "--strict")
            self.assertEqual((rc, err), (0, ""))

    def test_render_refuses_what_it_cannot_show_safely(self):
        """The same Job twice (its pods twice), standard input twice, control characters of
        the user's text in a message, output that cannot be written, repeated keys past 20."""
        job = harness.load_job("mpi-job")
        with tempfile.TemporaryDirectory() as tmp:
            a = write_json(tmp, "a.json", job)
            b = write_json(tmp, "b.json", job)
            self.assertEqual(run("render", "-f", a, "-f", b),
                             (1, "", P + "render: job %s/mpi-job is given twice: its pods "
                              "would be rendered twice\n" % job["metadata"]["namespace"]))
            p = subprocess.run([harness.binary(), "render", "-f", "-", "--pod", "-"],
                               input="{}", capture_output=True, text=True, timeout=30)
            self.assertEqual((p.returncode, p.stderr),
                             (2, P + "render: standard input (-) can be read once: give the "
                              "Job or the pod as a file\n"))
            # a kind with a line break and an escape sequence: shown on one line, as '?'
            bad = write_json(tmp, "bad.json", {"apiVersion": "v1\x1b[31m",
                                               "kind": "Job\r\nforged: all good"})
            rc, out, err = run("render", "-f", bad)
            self.assertEqual((rc, out), (1, ""))
            self.assertEqual(err, P + "render: %s: not a batch.volcano.sh/v1alpha1 Job "
                             "(apiVersion v1?[31m, kind Job??forged: all good)\n" % bad)
            self.assertEqual(run("render", "-o", "x\ny", "-f", a),
                             (2, "", P + "render: --output must be pod, yaml or patch, not "
                              "\"x?y\"\n"))
            with open("/dev/full", "w") as full:
                p = subprocess.run([harness.binary(), "render", "-f", a], stdout=full,
                                   stderr=subprocess.PIPE, text=True, timeout=30)
            self.assertEqual((p.returncode, p.stderr),
                             (1, P + "cannot write the output: No space left on device\n"))
            # a reader that stops early (`render | head`): a failure, but no message
            r, w = os.pipe()
            os.close(r)
            try:
                p = subprocess.run([harness.binary(), "render", "-f", a], stdout=w,
                                   stderr=subprocess.PIPE, text=True, timeout=30)
            finally:
                os.close(w)
            self.assertEqual((p.returncode, p.stderr), (1, ""))
            # a pod the API server would refuse: render's own message, no admission log line
            dotted = json.loads(json.dumps(harness.load_job("mpi-job")))
            dotted["metadata"]["name"] = "a.b"
            rc, out, err = run("render", "-f", write_json(tmp, "dotted.json", dotted))
            self.assertEqual(rc, 1)
            self.assertTrue(err.startswith(P + "render: "), err)
            self.assertNotIn('"level"', err)
            # 25 repeats of one key: 20 lines, then how many more
            yml = os.path.join(tmp, "dups.yaml")
            with open(yml, "w") as f:
                f.write("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n"
                        "  name: d\n" + "  name: d\n" * 25 + "spec:\n  tasks: []\n")
            rc, _, err = run("render", "-f", yml)
            lines = err.splitlines()
            self.assertEqual(len([ln for ln in lines if 'repeated key "name"' in ln]), 20)
            self.assertIn(P + "render: warning: %s: 5 more repeated keys not shown" % yml, lines)

    def test_render_review_of_a_denied_pod_exits_1(self):
        """--review prints the answer whatever it is; a denial also exits 1 with the
        reason on stderr, as render of a denied pod does (README "render")."""
        job = harness.load_job("ray-cluster-job")
        pod = harness.build_pod(job, "worker", 0)
        job["spec"]["tasks"] = [t for t in job["spec"]["tasks"] if t["name"] != "head"]
        with tempfile.TemporaryDirectory() as tmp:
            write = functools.partial(write_json, tmp)
            review = write("review.json", harness.review(pod, "default"))
            rc, out, err = run("render", "-f", write("job.json", job), "--review", review)
            answer = json.loads(out)["response"]
            self.assertEqual(rc, 1)
            self.assertFalse(answer["allowed"])
            self.assertEqual(answer["status"]["code"], 400)
            self.assertEqual(answer["status"]["message"],
                             "ray plugin: job ray-cluster-job doesn't have head task head")
            self.assertEqual(err.splitlines(), [
                P + "render: warning: job default/ray-cluster-job: ray plugin: no task named "
                "\"head\" (--head), so every pod of the job is denied: name the head task with "
                "--head in spec.plugins.ray, or rename the task",
                P + "render: %s: pod denied (code 400): ray plugin: job ray-cluster-job doesn't "
                "have head task head" % review])
            # --namespace names the namespace of a Job or pod that has none; a review has its own
            self.assertEqual(run("render", "-f", write("job2.json", job), "--review", review,
                                 "--namespace", "default"),
                             (2, "", P + "render: --namespace does not apply to --review (its "
                              "request.namespace is the pod's)\n"))

    def test_render_warns_what_it_cannot_check(self):
        """--review with a Job file without a uid cannot compare the ownerReference's;
        --pod of a task the Job does not have gets nothing task-specific. Both say so."""
        job = harness.load_job("pytorch-job")
        pod = harness.build_pod(job, "worker", 1)
        del job["metadata"]["uid"]
        with tempfile.TemporaryDirectory() as tmp:
            write = functools.partial(write_json, tmp)
            review = write("review.json", harness.review(pod, "default"))
            rc, out, err = run("render", "-f", write("job.json", job), "--review", review)
            self.assertEqual(rc, 0)
            self.assertTrue(json.loads(out)["response"]["allowed"])
            self.assertEqual(err, P + "render: warning: the Job has no metadata.uid, so the "
                             "review's ownerReference uid is not checked (serve answers "
                             "\"not found\" when they differ)\n")
            job["metadata"]["uid"] = pod["metadata"]["ownerReferences"][0]["uid"]
            rc, out, err = run("render", "-f", write("job-uid.json", job), "--review", review)
            self.assertEqual((rc, err), (0, ""))
            jpath = write("job2.json", job)
            rc, _, err = run("render", "-f", jpath, "--pod", write("pod.json", pod))
            self.assertEqual((rc, err), (0, ""))
            del pod["metadata"]["annotations"]["volcano.sh/task-spec"]
            ppath = write("pod-no-task.json", pod)
            rc, out, err = run("render", "-f", jpath, "--pod", ppath, "-o", "patch")
            self.assertEqual(rc, 0)
            self.assertEqual(err, P + "render: warning: %s: task \"default\" (no "
                             "volcano.sh/task-spec annotation) is not a task of job pytorch-job, "
                             "so the plugins set nothing task-specific\n" % ppath)
            self.assertNotIn("RANK", out)
            # the annotation is shown on one line, control characters replaced
            pod["metadata"]["annotations"]["volcano.sh/task-spec"] = "x\n\x1b[31mred"
            ppath = write("pod-odd-task.json", pod)
            rc, out, err = run("render", "-f", jpath, "--pod", ppath, "-o", "patch")
            self.assertEqual(rc, 0)
            self.assertEqual(err, P + "render: warning: %s: task \"x??[31mred\" (the "
                             "volcano.sh/task-spec annotation) is not a task of job pytorch-job, "
                             "so the plugins set nothing task-specific\n" % ppath)

    def test_render_refuses_negative_replicas(self):
        """Volcano's job admission refuses a task with replicas < 0; render says which."""
        job = harness.load_job("pytorch-job")
        job["spec"]["tasks"][1]["replicas"] = -1
        with tempfile.TemporaryDirectory() as tmp:
            path = write_json(tmp, "job.json", job)
            line = (P + "render: %s: task \"worker\" (spec.tasks[1]) has replicas -1, which "
                    "Volcano's job admission refuses (want 0 or more)\n" % path)
            self.assertEqual(run("render", "-f", path), (1, "", line))
            self.assertEqual(run("render", "-f", path, "--pod", "p.json"), (1, "", line))
            # the first such task of the file is named, on one line (control characters replaced)
            job["spec"]["tasks"][1]["name"] = "w\n1"
            job["spec"]["tasks"][0]["replicas"] = -2147483648
            multi = os.path.join(tmp, "multi.yaml")
            with open(multi, "w") as f:
                f.write(yaml.safe_dump(harness.load_job("mpi-job")) + "---\n"
                        + yaml.safe_dump(job))
            self.assertEqual(run("render", "-f", multi, "-o", "patch"),
                             (1, "", P + "render: %s: document 2: task \"master\" "
                              "(spec.tasks[0]) has replicas -2147483648, which Volcano's job "
                              "admission refuses (want 0 or more)\n" % multi))
            job["spec"]["tasks"][0]["replicas"] = 1
            self.assertEqual(run("render", "-f", write_json(tmp, "j2.json", job)),
                             (1, "", P + "render: %s: task \"w?1\" (spec.tasks[1]) has "
                              "replicas -1, which Volcano's job admission refuses (want 0 or "
                              "more)\n" % os.path.join(tmp, "j2.json")))

    def test_render_refuses_more_than_20000_pods(self):
        """It holds every pod until it prints: a Job of 2^31-1 replicas is refused at once,
        pointing at --task/--index, which renders any one pod."""
        for replicas in ([2147483647], [10000, 10001]):
            with self.subTest(replicas=replicas), tempfile.TemporaryDirectory() as tmp:
                job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                       "metadata": {"name": "big"},
                       "spec": {"tasks": [{"name": "t%d" % i, "replicas": r,
                                           "template": {"spec": {"containers": [
                                               {"name": "c", "image": "busybox"}]}}}
                                          for i, r in enumerate(replicas)]}}
                path = write_json(tmp, "big.json", job)
                self.assertEqual(run("render", "-f", path, "-o", "patch"),
                                 (1, "", P + "render: the Jobs have more than 20000 pods; "
                                  "render prints at most that many (--task NAME --index N "
                                  "renders one)\n"))
                last = replicas[-1] - 1
                rc, out, err = run("render", "-f", path, "--task", "t%d" % (len(replicas) - 1),
                                   "--index", str(last))
                self.assertEqual((rc, err), (0, ""))
                self.assertEqual(json.loads(out)["metadata"]["name"],
                                 "big-t%d-%d" % (len(replicas) - 1, last))

    def test_render_one_master_and_10000_workers(self):
        """The whole Job renders: 10,001 pods, the last worker with RANK 10000."""
        job = harness.load_job("pytorch-job")
        job["spec"]["tasks"][1]["replicas"] = 10000
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = run("render", "-f", write_json(tmp, "job.json", job), "-o", "patch",
                               timeout=600)
        # It renders; and says that so long a host list cannot reach a process by env.
        self.assertEqual((rc, err), (0, P + "render: warning: job default/pytorch-job: svc "
                                     "plugin: env VC_WORKER_HOSTS would be 358906 bytes, more "
                                     "than the 131072 (128 KiB) one environment string can hold "
                                     "(the kernel's MAX_ARG_STRLEN), so no container starts: pass "
                                     "--inject-hosts-env=false in spec.plugins.svc and read the "
                                     "host files in /etc/volcano, or run fewer worker replicas\n"))
        items = json.loads(out)
        self.assertEqual(len(items), 10001)
        self.assertEqual([i["pod"] for i in (items[0], items[1], items[-1])],
                         ["pytorch-job-master-0", "pytorch-job-worker-0",
                          "pytorch-job-worker-9999"])
        env = {e["name"]: e.get("value") for op in items[-1]["patch"]
               if op["path"] == "/spec/containers/0/env" for e in op["value"]}
        self.assertEqual((env["WORLD_SIZE"], env["RANK"]), ("10001", "10000"))

    def test_render_task_index(self):
        """--task NAME --index N: that pod of the List alone, as --pod prints one."""
        ex = os.path.join(harness.ROOT, "examples", "pytorch-job.yaml")
        rc, pods, _ = run("render", "-f", ex)
        self.assertEqual(rc, 0)
        rc, patches, _ = run("render", "-f", ex, "-o", "patch")
        self.assertEqual(rc, 0)
        for task, index, k in (("master", None, 0), ("worker", "0", 1), ("worker", "1", 2)):
            with self.subTest(task=task, index=index):
                args = ["render", "-f", ex, "--task", task] + (
                    ["--index", index] if index is not None else [])
                rc, out, err = run(*args)
                self.assertEqual((rc, err), (0, ""))
                self.assertEqual(json.loads(out), json.loads(pods)["items"][k])
                rc, out, err = run(*args, "-o", "patch")
                self.assertEqual((rc, err), (0, ""))
                self.assertEqual(json.loads(out), json.loads(patches)[k]["patch"])
                rc, out, err = run(*args, "-o", "yaml")
                self.assertEqual((rc, err), (0, ""))
                self.assertEqual(yaml.safe_load(out), json.loads(pods)["items"][k])
        rc, out, _ = run("render", "-f", ex, "--task", "worker", "--namespace", "team-b")
        self.assertEqual((rc, json.loads(out)["metadata"]["namespace"]), (0, "team-b"))
        self.assertEqual(run("render", "-f", ex, "--task", "worker", "--index", "2"),
                         (1, "", P + "render: %s: task \"worker\" has 2 replicas, so no pod "
                          "of --index 2\n" % ex))
        self.assertEqual(run("render", "-f", ex, "--task", "chief"),
                         (1, "", P + "render: %s: job pytorch-job has no task \"chief\"\n"
                          % ex))
        mpi = os.path.join(harness.ROOT, "examples", "mpi-job.yaml")
        self.assertEqual(run("render", "-f", ex, "-f", mpi, "--task", "worker"),
                         (1, "", P + "render: the -f files hold 2 Jobs; --task takes one\n"))
        usage = [
            (["--index", "1"], "--index needs --task NAME"),
            (["--task", "worker", "--index", "-1"],
             "invalid --index \"-1\": want a pod index, 0 to 2147483646"),
            (["--task", "worker", "--index", "2147483647"],
             "invalid --index \"2147483647\": want a pod index, 0 to 2147483646"),
            (["--task", "worker", "--index", "1x"],
             "invalid --index \"1x\": want a pod index, 0 to 2147483646"),
            (["--task", "worker", "--pod", "p.json"], "--task cannot be used with --pod"),
            (["--task", "worker", "--review", "r.json"], "--task cannot be used with --review"),
        ]
        for args, line in usage:
            with self.subTest(args=args):
                self.assertEqual(run("render", "-f", ex, *args), (2, "", P + "render: " + line
                                                                  + "\n"))

    def test_render_file_problem_exits_1(self):
        rc, out, err = run("render", "-f", "/nonexistent/job.yaml")
        self.assertEqual((rc, out), (1, ""))
        self.assertEqual(err, P + "render: /nonexistent/job.yaml: No such file or directory\n")

    def test_help_fixtures(self):
        # each command's --help, byte for byte, against the text it printed before
        # the flag table (webhook/flags.c) generated it
        fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
        for cmd in ("serve", "render", "gen-certs"):
            with self.subTest(cmd=cmd):
                with open(os.path.join(fixtures, cmd, "help.txt")) as f:
                    want = f.read()
                self.assertEqual(run(cmd, "--help"), (0, want, ""))

    def test_help_and_version(self):
        for cmd in ("serve", "render", "gen-certs"):
            with self.subTest(cmd=cmd):
                rc, out, err = run(cmd, "--help")
                self.assertEqual((rc, err), (0, ""))
                self.assertTrue(out.startswith("usage: volcano-plugin-webhook " + cmd), out)
                # `help CMD` prints the same, as `CMD --help` does
                self.assertEqual(run("help", cmd), (0, out, ""))
        rc, out, err = run("version")
        self.assertEqual((rc, err), (0, ""))
        self.assertRegex(out, VERSION_OUTPUT)
        self.assertEqual(run("--version"), (0, out, ""))
        # `help help` and `help` alone: the command list, as --help prints it
        rc, top, err = run("--help")
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(run("help", "help"), (0, top, ""))
        self.assertEqual(run("help", "--help"), (0, top, ""))
        self.assertEqual(run("help"), (0, top, ""))
        rc, help_out, err = run("version", "--help")
        self.assertEqual((rc, err), (0, ""))
        release = out.split("\n", 1)[0].split(" ")[1]
        self.assertEqual(help_out, "usage: volcano-plugin-webhook version\n\n"
                         "Prints the release (%s), then the `git describe` and the commit the\n"
                         "binary was built from and its build date (RFC 3339 UTC), \"unknown\" "
                         "when not\nknown (built outside a git tree).\n" % release)

    def test_unknown_or_no_command(self):
        self.assert_usage_error(["nope"], P + "unknown command \"nope\" (see --help)")
        self.assert_usage_error(["help", "nope"], P + "help: unknown command \"nope\" (see --help)")
        self.assert_usage_error(["help", "render", "x"],
                                P + "help: unexpected argument \"x\" (see --help)")
        # no command at all: the command list, as --help prints it, on stderr
        rc, help_out, _ = run("--help")
        self.assertEqual(rc, 0)
        self.assertTrue(help_out.startswith("usage: volcano-plugin-webhook COMMAND [flags]"))
        self.assertEqual(run(), (2, "", help_out))
        self.assertEqual(run("help"), (0, help_out, ""))

def git(*args):
    """The stripped output of git in the source tree, or None outside a git tree."""
    try:
        p = subprocess.run(["git", "-C", harness.ROOT, *args], capture_output=True, text=True,
                           timeout=30)
    except FileNotFoundError:
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def make_env(**extra):
    """The environment for a make of its own: not the flags of a make that runs the tests
    (its jobserver, -n, variables: BUILD and SANITIZER come in the environment)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env.update(extra)
    return env


def make_dry_run(*args, cwd=harness.ROOT, env=None):
    """The commands `make -n args` would run in cwd (nothing is built)."""
    p = subprocess.run(["make", "--no-print-directory", "-n", *args], cwd=cwd,
                       capture_output=True, text=True, timeout=120, env=make_env(**(env or {})))
    if p.returncode != 0:
        raise AssertionError("make -n %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


class BuildInfo(unittest.TestCase):
    """`version` and the Makefile's build information (webhook/version.h)."""

    def test_version_names_the_commit_built(self):
        rc, out, err = run("version")
        self.assertEqual((rc, err), (0, ""))
        m = re.match(VERSION_OUTPUT, out)
        self.assertIsNotNone(m, out)
        head = git("rev-parse", "--short", "HEAD")
        if head is None or git("rev-parse", "--show-toplevel") != os.path.realpath(harness.ROOT):
            self.skipTest("not a git tree: nothing to compare the commit with")
        self.assertEqual(m.group(2), head, "binary older than HEAD? run make")
        self.assertTrue(m.group(1).startswith(head) or ("-g" + head) in m.group(1), m.group(1))

    def test_a_new_commit_rebuilds_version_o_only(self):
        build = os.environ.get("BUILD", "build")
        exe = os.path.join(build, "volcano-plugin-webhook")
        out = make_dry_run("-W", os.path.join(build, "version.stamp"), exe)
        compiled = re.findall(r" -c (\S+\.c) ", out)
        self.assertEqual(compiled, ["webhook/version.c"], out)
        self.assertIn("-DWH_GIT_COMMIT=", out)

    def test_stamp_changes_only_with_the_build_information(self):
        with tempfile.TemporaryDirectory(prefix="test_cli.") as tmp:
            stamp = os.path.join(tmp, "version.stamp")
            make_dry_run("BUILD=" + tmp, "GIT_VERSION=v9.9.9-1-gabcdef0", "GIT_COMMIT=abcdef0",
                         env={"SOURCE_DATE_EPOCH": "1700000000"})
            with open(stamp) as f:
                self.assertEqual(f.read(), "v9.9.9-1-gabcdef0 abcdef0 1700000000\n")
            os.utime(stamp, (1000000000, 1000000000))
            out = make_dry_run("BUILD=" + tmp, "GIT_VERSION=v9.9.9-1-gabcdef0",
                               "GIT_COMMIT=abcdef0", os.path.join(tmp, "obj/webhook/version.o"),
                               env={"SOURCE_DATE_EPOCH": "1700000000"})
            self.assertEqual(os.stat(stamp).st_mtime, 1000000000, "same values: stamp kept")
            # SOURCE_DATE_EPOCH is the build date (reproducible builds)
            self.assertIn("-DWH_GIT_VERSION='\"v9.9.9-1-gabcdef0\"' "
                          "-DWH_GIT_COMMIT='\"abcdef0\"' "
                          "-DWH_BUILD_DATE='\"2023-11-14T22:13:20Z\"'", out)
            make_dry_run("BUILD=" + tmp, "GIT_VERSION=v9.9.9-2-g1234567", "GIT_COMMIT=1234567",
                         env={"SOURCE_DATE_EPOCH": ""})
            with open(stamp) as f:
                self.assertEqual(f.read(), "v9.9.9-2-g1234567 1234567 \n")

    def test_outside_a_git_tree_unknown(self):
        """A source tarball: no .git, so "unknown", even when unpacked inside another git tree."""
        with tempfile.TemporaryDirectory(prefix="test_cli.") as tmp:
            src = os.path.join(tmp, "src")
            os.makedirs(os.path.join(src, "webhook"))
            shutil.copy(os.path.join(harness.ROOT, "Makefile"), src)
            shutil.copy(os.path.join(harness.ROOT, "webhook", "version.c"),
                        os.path.join(src, "webhook"))
            if shutil.which("git"):
                subprocess.run(["git", "init", "-q", tmp], check=True, timeout=30)
            # BUILD given: the make running the tests may have set another (SANITIZER=...)
            out = make_dry_run("BUILD=build", "build/obj/webhook/version.o", cwd=src)
            self.assertIn("-DWH_GIT_VERSION='\"unknown\"' -DWH_GIT_COMMIT='\"unknown\"' ", out)
            with open(os.path.join(src, "build", "version.stamp")) as f:
                self.assertEqual(f.read(), "unknown unknown %s\n"
                                 % os.environ.get("SOURCE_DATE_EPOCH", ""))

    def test_bad_source_date_epoch_is_refused(self):
        with tempfile.TemporaryDirectory(prefix="test_cli.") as tmp:
            p = subprocess.run(["make", "--no-print-directory", "BUILD=" + tmp,
                                os.path.join(tmp, "obj/webhook/version.o")],
                               cwd=harness.ROOT, capture_output=True, text=True, timeout=120,
                               env=make_env(SOURCE_DATE_EPOCH="yesterday"))
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("SOURCE_DATE_EPOCH must be whole seconds since 1970, not 'yesterday'",
                          p.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "obj/webhook/version.o")))


if __name__ == "__main__":
    unittest.main()
