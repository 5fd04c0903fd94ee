"""The reference allocator's own C test (examples/rtalloc/test_rt_alloc.c):
sizes, alignment, data integrity, realloc, large blocks, two threads. It
prints 'rt_alloc: N passed, M failed' and exits non-zero on failure."""
import os, unittest
import re
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))


class ReferenceAllocator(unittest.TestCase):

    def test_c_suite_passes(self):
        prog = os.path.join(BUILD, "test_rt_alloc")
        self.assertTrue(os.path.exists(prog), "%s is not built: run make" % prog)
        proc = subprocess.run([prog], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        m = re.search(r"rt_alloc: (\d+) passed, (\d+) failed", proc.stdout)
        self.assertIsNotNone(m, proc.stdout)
        self.assertGreater(int(m.group(1)), 100)
        self.assertEqual(m.group(2), "0")


if __name__ == "__main__":
    unittest.main()
