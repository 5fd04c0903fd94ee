"""gdb unwinds to main from every instruction of a probe site
(include/rt_probes.h, "The probe site": the site moves %rsp over the red
zone around its 5-byte nop, and its CFI takes the CFA from the register
that holds __builtin_dwarf_cfa()), with GCC and clang, with and without
frame pointers. Needs gdb and gcc (clang if installed); no perf: the
probe's semaphore is raised by hand, and gdb stops at rt:alloc's note."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import shutil
import tempfile

from test_sampler_unwind import BUILDS, ROOT, gdb_steps
STEPS = 4   # the note's nop, the step down, the 5-byte nop, the step up

GDB_SCRIPT = """\
set pagination off
set confirm off
break main
run
set var *(unsigned short *)&rt_alloc_semaphore = 1
break -probe-stap rt:alloc
continue
echo ===\\n
x/i $pc
bt
""" + "".join("stepi\necho ===\\n\nx/i $pc\nbt\n" for _ in range(STEPS)) + \
    "kill\n"

class ProbeSiteUnwind(unittest.TestCase):

    def setUp(self):
        if not shutil.which("gdb"):
            self.fail("gdb is missing: ci/install-deps.sh installs it")
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def steps(self, compiler, flags):
        return gdb_steps(
            self.tmp, compiler, flags, "t_basic", GDB_SCRIPT, ["3"],
            env={"TRUTH_FILE": os.devnull},
            sources=[os.path.join(ROOT, "examples", "rtalloc",
                                  "rt_arena.c")], libs=["-ldl"])

    def test_backtrace_reaches_main_at_every_instruction(self):
        for compiler, flags in BUILDS:
            if not shutil.which(compiler):
                continue
            with self.subTest(compiler=compiler, flags=flags):
                steps = self.steps(compiler, flags)
                self.assertEqual(len(steps), STEPS + 1, steps)
                # the site, instruction by instruction
                self.assertRegex(steps[0], r"=> 0x[0-9a-f]+ .*:\s+nop\n")
                self.assertRegex(steps[1], r"lea\s+-0x88\(%rsp\),%rsp")
                self.assertRegex(steps[2], r"nopl\s+0x0\(%rax,%rax,1\)")
                self.assertRegex(steps[3], r"lea\s+0x88\(%rsp\),%rsp")
                for i, step in enumerate(steps):
                    frames = [l for l in step.splitlines()
                              if l.startswith("#")]
                    self.assertTrue(frames, "step %d:\n%s" % (i, step))
                    # t_basic's main calls rt_alloc: exactly those two
                    # (without the site's CFI, gdb shows made-up frames
                    # between them and may still find main)
                    self.assertEqual(len(frames), 2, "step %d:\n%s"
                                     % (i, step))
                    self.assertIn(" rt_alloc (", frames[0], "step %d" % i)
                    self.assertIn(" main (", frames[1], "step %d" % i)


if __name__ == "__main__":
    unittest.main()
