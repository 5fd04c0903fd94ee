"""include/rt_stack_top.h: while an event with a stack copy is recorded,
every page between the AT_RANDOM bytes and the file name at the top of the
main thread's stack is mapped in, so perf's stack copies do not stop at the
hole the kernel leaves below the strings (arch_align_stack). The hole is
random, so each build runs many times: the control build (semaphore down,
the header's constructor idle) must show it in some runs, or the test
could not fail; the real one in none."""
import os
import re
import subprocess
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
RUNS = 200


def unmapped_pages(name):
    prog = os.path.join(BUILD, name)
    if not os.path.exists(prog):
        raise AssertionError("%s is not built: run make" % prog)
    counts = []
    for _ in range(RUNS):
        out = subprocess.run([prog], stdout=subprocess.PIPE, check=True,
                             universal_newlines=True, timeout=30).stdout
        m = re.match(r"unmapped (\d+) of (\d+) pages", out)
        if m is None:
            raise AssertionError("unexpected output: %r" % out)
        counts.append(int(m.group(1)))
    return counts


def stack_randomized():
    try:
        with open("/proc/sys/kernel/randomize_va_space") as f:
            return f.read().strip() != "0"
    except OSError:
        return False


class StackTop(unittest.TestCase):

    @unittest.skipUnless(stack_randomized(),
                         "randomize_va_space is 0: the kernel leaves no "
                         "random hole at the top of the stack")
    def test_hole_mapped_while_recording(self):
        control = unmapped_pages("test_rt_stack_top_control")
        # About one run in ten had a whole page in the hole here (6 of
        # 60); none in 200 would be a chance of about 1e-9.
        self.assertGreater(sum(1 for n in control if n), 0,
                           "the control never had a hole: the test "
                           "cannot tell the header's work")
        self.assertEqual(unmapped_pages("test_rt_stack_top"), [0] * RUNS)


if __name__ == "__main__":
    unittest.main()
