# SPDX-License-Identifier: Apache-2.0
"""scripts/check-layers: the include rule between the folders (README, "The layers")."""
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "check-layers")


def run(root):
    return subprocess.run([SCRIPT, root], capture_output=True, text=True, timeout=60)


class LayersTest(unittest.TestCase):
    def test_repository_points_down(self):
        r = run(ROOT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "layers: every include points down\n")

    def tree(self, files):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        for path, text in files.items():
            os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(d, path), "w") as f:
                f.write(text)
        return d

    def test_upward_include_fails(self):
        d = self.tree({"base/log.c": '#include "base/log.h"\n#include "plugins/plugin.h"\n',
                       "plugins/plugin.h": "\n"})
        r = run(d)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "base/log.c includes plugins/: base/ may include only: base\n")

    def test_siblings_do_not_include_each_other(self):
        d = self.tree({"certs/certs.h": '#  include "k8s/client.h"\n'})
        r = run(d)
        self.assertEqual(r.returncode, 1)
        self.assertIn("certs/certs.h includes k8s/", r.stderr)

    def test_downward_includes_pass(self):
        d = self.tree({"webhook/serve.c": '#include "controller/cache.h"\n#include "base/log.h"\n'
                                          '#include <jansson.h>\n',
                       "controller/cache.c": '#include "plugins/plugin.h"\n#include "k8s/watch.h"\n'
                                             '#include "certs/certs.h"\n'})
        r = run(d)
        self.assertEqual(r.returncode, 0, r.stderr)


class LayerMapTest(unittest.TestCase):
    def test_readme_map_names_every_file(self):
        """README's table of the layers names every .c and .h of each folder in its row."""
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            rows = {line.split("`")[1].rstrip("/"): line for line in f
                    if line.startswith("| `") and "/` |" in line}
        for folder in ("base", "k8s", "certs", "plugins", "controller", "webhook"):
            row = rows[folder]
            for name in sorted(os.listdir(os.path.join(ROOT, folder))):
                stem, ext = os.path.splitext(name)
                if ext not in (".c", ".h"):
                    continue
                with self.subTest(file=folder + "/" + name):
                    self.assertTrue(any("`%s`" % n in row for n in
                                        (name, stem + ".[ch]", stem + ".c", stem + ".h")),
                                    "README's layer map does not name %s/%s" % (folder, name))


if __name__ == "__main__":
    unittest.main()
