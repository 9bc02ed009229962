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


def run(*args):
    """(exit status, stdout, stderr) of the binary with args."""
    p = subprocess.run([harness.binary(), *args], capture_output=True, text=True, timeout=30)
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
            (["render", "-f", "j.yaml", "-o", "yaml"],
             P + "render: --output must be pod or patch, not \"yaml\""),
            (["render", "-f", "j.yaml", "extra"], P + "render: unexpected argument \"extra\""),
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
                                 (1, "", P + "render: %s: not a Job object\n" % empty))
            self.assertEqual(run("render", "-f", "-", "-f", "-"),
                             (2, "", P + "render: -f - (standard input) can be given once\n"))
            self.assertEqual(run("render", "-f", os.path.join(ex, "pytorch-job.yaml"), "-f",
                                 os.path.join(ex, "mpi-job.yaml"), "--pod", "p.json"),
                             (1, "", P + "render: the -f files hold 2 Jobs; --pod takes one\n"))

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

    def test_render_refuses_more_than_10000_pods(self):
        """It holds every pod until it prints: a Job of 2^31-1 replicas is refused at once."""
        for replicas in ([2147483647], [5000, 5001]):
            with self.subTest(replicas=replicas), tempfile.TemporaryDirectory() as tmp:
                job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                       "metadata": {"name": "big"},
                       "spec": {"tasks": [{"name": "t%d" % i, "replicas": r}
                                          for i, r in enumerate(replicas)]}}
                path = os.path.join(tmp, "big.json")
                with open(path, "w") as f:
                    json.dump(job, f)
                self.assertEqual(run("render", "-f", path, "-o", "patch"),
                                 (1, "", P + "render: the Jobs have more than 10000 pods; "
                                  "render prints at most that many (--pod renders one)\n"))

    def test_render_file_problem_exits_1(self):
        rc, out, err = run("render", "-f", "/nonexistent/job.yaml")
        self.assertEqual((rc, out), (1, ""))
        self.assertEqual(err, P + "render: /nonexistent/job.yaml: No such file or directory\n")

    def test_help_and_version(self):
        for cmd in ("serve", "render", "gen-certs"):
            with self.subTest(cmd=cmd):
                rc, out, err = run(cmd, "--help")
                self.assertEqual((rc, err), (0, ""))
                self.assertTrue(out.startswith("usage: volcano-plugin-webhook " + cmd), out)
        rc, out, err = run("version")
        self.assertEqual((rc, err), (0, ""))
        self.assertRegex(out, VERSION_OUTPUT)
        self.assertEqual(run("--version"), (0, out, ""))
        rc, help_out, err = run("version", "--help")
        self.assertEqual((rc, err), (0, ""))
        release = out.split("\n", 1)[0].split(" ")[1]
        self.assertEqual(help_out, "usage: volcano-plugin-webhook version\n\n"
                         "Prints the release (%s), then the `git describe` and the commit the\n"
                         "binary was built from and its build date (RFC 3339 UTC), \"unknown\" "
                         "when not\nknown (built outside a git tree).\n" % release)

    def test_unknown_or_no_command(self):
        self.assert_usage_error(["nope"], P + "unknown command \"nope\" (see --help)")
        # no command at all: the command list, as --help prints it, on stderr
        rc, help_out, _ = run("--help")
        self.assertEqual(rc, 0)
        self.assertTrue(help_out.startswith("usage: volcano-plugin-webhook COMMAND [flags]"))
        self.assertEqual(run(), (2, "", help_out))

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
            out = make_dry_run("build/obj/webhook/version.o", cwd=src)
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
