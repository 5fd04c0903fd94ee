"""Each argument of every probe macro is evaluated exactly once when any of
its events is recorded, never when none is, in every combination of
recorded events, in C and in C++ (tests/c/test_rt_args.c raises the
semaphores itself; no perf). It prints 'rt_args: N passed, M failed'."""
import os
import re
import subprocess
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))


class ArgumentsOnce(unittest.TestCase):

    def run_suite(self, name):
        prog = os.path.join(BUILD, name)
        self.assertTrue(os.path.exists(prog), "%s is not built: run make" % prog)
        # a sample at every allocation: the sampled path is taken
        proc = subprocess.run([prog], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=60, env=dict(os.environ, RT_SAMPLE_BYTES="1"))
        self.assertEqual(proc.returncode, 0, proc.stdout)
        m = re.search(r"rt_args: (\d+) passed, (\d+) failed", proc.stdout)
        self.assertIsNotNone(m, proc.stdout)
        self.assertEqual(int(m.group(1)), 225)
        self.assertEqual(m.group(2), "0")

    def test_c(self):
        self.run_suite("test_rt_args")

    def test_cxx(self):
        self.run_suite("test_rt_args_cxx")


if __name__ == "__main__":
    unittest.main()
