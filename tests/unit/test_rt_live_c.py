"""The sampled pointer table's own C test (tests/c/test_rt_live.c):
weights found again, misses, a full bucket and a full table counted as
untracked, RT_RELEASE's purge, concurrent inserts and removes from four
threads (also of another thread's pointers), a forked child's empty table.
It prints 'rt_live: N passed, M failed' and exits non-zero on failure."""
import os
import re
import subprocess
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))


class SampledPointerTable(unittest.TestCase):

    def test_c_suite_passes(self):
        prog = os.path.join(BUILD, "test_rt_live")
        self.assertTrue(os.path.exists(prog), "%s is not built: run make" % prog)
        proc = subprocess.run([prog], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        m = re.search(r"rt_live: (\d+) passed, (\d+) failed", proc.stdout)
        self.assertIsNotNone(m, proc.stdout)
        self.assertGreater(int(m.group(1)), 600)
        self.assertEqual(m.group(2), "0")


if __name__ == "__main__":
    unittest.main()
