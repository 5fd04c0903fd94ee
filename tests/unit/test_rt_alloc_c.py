"""The reference allocators' own C tests: examples/rtalloc/test_rt_alloc.c
(sizes, alignment, data integrity, realloc, large blocks, two threads) and
examples/rtalloc/test_rt_arena.c (the arena: blocks across chunks, size 0,
absurd sizes, threads; the events rt_arena.h and rt_alloc.h list, counted
with the semaphores raised by the program). Each prints 'NAME: N passed,
M failed' and exits non-zero on failure."""
import os, unittest
import re
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))


class ReferenceAllocator(unittest.TestCase):

    def run_suite(self, prog, name, at_least):
        prog = os.path.join(BUILD, prog)
        self.assertTrue(os.path.exists(prog), "%s is not built: run make" % prog)
        proc = subprocess.run([prog], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        m = re.search(name + r": (\d+) passed, (\d+) failed", proc.stdout)
        self.assertIsNotNone(m, proc.stdout)
        self.assertGreater(int(m.group(1)), at_least)
        self.assertEqual(m.group(2), "0")

    def test_c_suite_passes(self):
        self.run_suite("test_rt_alloc", "rt_alloc", 100)

    def test_arena_suite_passes(self):
        self.run_suite("test_rt_arena", "rt_arena", 50)


if __name__ == "__main__":
    unittest.main()
