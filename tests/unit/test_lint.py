"""Lint: pyflakes on every Python file, shellcheck (warnings and errors)
on every shell script. The C is built with -Wall -Wextra -pedantic
-Werror by the Makefiles and the probe-contract test. Both tools come
from ci/install-deps.sh (Debian: pyflakes3, shellcheck)."""
import os
import shutil
import subprocess
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def tracked(*suffixes):
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             universal_newlines=True,
                             check=False).stdout.split()
    except OSError:   # no git at all (a minimal Debian)
        out = []
    if not out:   # not a git checkout, or no git: walk the tree
        out = [os.path.relpath(os.path.join(d, f), ROOT)
               for d, _, files in os.walk(ROOT) if "/build" not in d
               for f in files]
    return sorted(f for f in out if f.endswith(suffixes) or
                  (".sh" in suffixes and f in (".ci/run",)))


class Lint(unittest.TestCase):
    def run_tool(self, cmd, files):
        tool = shutil.which(cmd[0])
        self.assertIsNotNone(tool, "%s is not installed (make check installs "
                             "it: ci/install-deps.sh)" % cmd[0])
        self.assertTrue(files)
        proc = subprocess.run(cmd + files, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True)
        self.assertEqual(proc.returncode, 0, proc.stdout)

    def test_python(self):
        files = tracked(".py") + ["scripts/allocsites"]
        self.run_tool(["pyflakes3"], files)

    def test_shell(self):
        self.run_tool(["shellcheck", "-S", "warning"], tracked(".sh"))


if __name__ == "__main__":
    unittest.main()
