# SPDX-License-Identifier: Apache-2.0
"""The license: LICENSE is Apache-2.0, and every source file says so in an SPDX line."""
import os
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPDX = "SPDX-License-Identifier: Apache-2.0"
SOURCE_ENDINGS = (".c", ".h", ".py", ".sh", ".mjs", ".go")


def sources():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    for path in out:
        full = os.path.join(ROOT, path)
        if not os.path.isfile(full) or "node_modules" in path:
            continue
        with open(full, "rb") as f:
            head = f.read(400)
        if path.endswith(SOURCE_ENDINGS) or head.startswith(b"#!"):
            yield path, head.decode("utf-8", "replace")


class LicenseTest(unittest.TestCase):
    def test_license_file_is_apache_2(self):
        with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("Apache License", text)
        self.assertIn("Version 2.0, January 2004", text)

    def test_every_source_has_an_spdx_line(self):
        """In its first three lines (after a #! line), as tools that read SPDX expect."""
        missing = [p for p, head in sources() if SPDX not in "\n".join(head.split("\n")[:3])]
        self.assertEqual(missing, [])
        self.assertGreater(len(list(sources())), 100)


if __name__ == "__main__":
    unittest.main()
