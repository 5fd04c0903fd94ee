#!/usr/bin/python3
"""Runs the test suites and ends with one line: 'check: N passed, N failed,
N skipped'. Usage: tests/run.py [DIR...] (default: tests/unit and
tests/integration). Runs under the system Python, the one perf embeds."""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
from allocsites_lib.record.tracefs import TRACEFS, tracefs_mounted  # noqa: E402


class TracefsForTheRun:
    """tracefs mounted for the whole run where it is not, unmounted at
    the end: perf mounts it by itself when a test lists events (perf probe
    -l, tracing_path_mount) and leaves it, and a test that kills a
    recording leaves the run's mount for the next run to take over. The
    machine's mounts end as they began. Root only (the perf tests)."""

    def __enter__(self):
        self.mounted = False
        if os.geteuid() == 0 and tracefs_mounted() is None and \
                os.path.isdir(TRACEFS):
            self.mounted = subprocess.run(
                ["mount", "-t", "tracefs", "nodev", TRACEFS],
                stderr=subprocess.DEVNULL).returncode == 0
        return self

    def __exit__(self, *exc):
        if self.mounted and tracefs_mounted() is not None:
            subprocess.run(["umount", TRACEFS], stderr=subprocess.DEVNULL)
        return False


def main(dirs):
    # unittest imports each test file as a top-level module: two files of
    # one name in two directories make discovery fail with an ImportError.
    seen = {}
    for d in dirs:
        for name in os.listdir(d):
            if name.startswith("test_") and name.endswith(".py"):
                if name in seen:
                    print("check: %s is in both %s and %s: rename one"
                          % (name, seen[name], d))
                    return 1
                seen[name] = d
    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    for d in dirs:
        d = os.path.abspath(d)
        suite.addTests(loader.discover(d, pattern="test_*.py", top_level_dir=d))
    with TracefsForTheRun():
        result = unittest.TextTestRunner(verbosity=2,
                                         stream=sys.stdout).run(suite)
    failed = len(result.failures) + len(result.errors) + \
        len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    print("check: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 0 if failed == 0 and result.testsRun > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or [os.path.join(HERE, "unit"),
                                   os.path.join(HERE, "integration")]))
