#!/usr/bin/python3
"""Runs the test suites and ends with one line: 'check: N passed, N failed,
N skipped'. Usage: tests/run.py [DIR...] (default: tests/unit and
tests/integration). Runs under the system Python, the one perf embeds."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


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
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    failed = len(result.failures) + len(result.errors) + \
        len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    print("check: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 0 if failed == 0 and result.testsRun > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or [os.path.join(HERE, "unit"),
                                   os.path.join(HERE, "integration")]))
