"""gdb unwinds from inside the sampler's out-of-line call to main, at
every instruction of the asm that makes it (include/rt_sampler.h keeps the
CFA itself: the asm moves %rsp by an amount known only at run time), with
GCC and clang, with and without frame pointers. Needs gdb and gcc (clang
if installed); no perf."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import shutil
import subprocess
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STEPS = 16   # the instructions after the call: the pops and %rsp's return

GDB_SCRIPT = """\
set pagination off
set confirm off
break main
run
set var *(unsigned short *)&rt_sample_semaphore = 1
break rt__sample_slow
continue
echo ===\\n
bt
finish
""" + "".join("stepi\necho ===\\n\nbt\n" for _ in range(STEPS)) + "kill\n"

BUILDS = [("gcc", "-O2"), ("gcc", "-O2 -fno-omit-frame-pointer"),
          ("gcc", "-O0"), ("clang", "-O2"),
          ("clang", "-O2 -fno-omit-frame-pointer")]


def gdb_steps(tmp, compiler, flags, program, script, args, env=None,
              sources=(), libs=()):
    """tests/programs/PROGRAM.c built with the reference allocator (and
    sources, linked with libs) by compiler and flags in tmp, run under
    gdb with script; gdb's output in the pieces script's "===" lines
    separate (the text before the first left out). Shared with
    test_probe_site_unwind.py."""
    prog = os.path.join(tmp, program)
    subprocess.run(
        [compiler, "-g", "-std=c99", "-D_DEFAULT_SOURCE"] + flags.split() +
        ["-I" + os.path.join(ROOT, "include"),
         "-I" + os.path.join(ROOT, "examples", "rtalloc"),
         "-I" + os.path.join(ROOT, "tests", "programs"),
         os.path.join(ROOT, "tests", "programs", program + ".c"),
         os.path.join(ROOT, "examples", "rtalloc", "rt_alloc.c")] +
        list(sources) + ["-o", prog, "-pthread"] + list(libs), check=True)
    path = os.path.join(tmp, "gdb.cmds")
    with open(path, "w") as f:
        f.write(script)
    out = subprocess.run(["gdb", "-q", "-batch", "-x", path, "--args",
                          prog] + list(args), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True,
                         env=dict(os.environ, **(env or {})),
                         timeout=120).stdout
    return out.split("===\n")[1:]


class SamplerUnwind(unittest.TestCase):

    def setUp(self):
        if not shutil.which("gdb"):
            self.fail("gdb is missing: ci/install-deps.sh installs it")
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def backtraces(self, compiler, flags):
        return gdb_steps(self.tmp, compiler, flags, "t_sampled", GDB_SCRIPT,
                         ["1"], env={"RT_SAMPLE_BYTES": "1"})

    def test_backtrace_reaches_main_at_every_step(self):
        for compiler, flags in BUILDS:
            if not shutil.which(compiler):
                continue
            with self.subTest(compiler=compiler, flags=flags):
                traces = self.backtraces(compiler, flags)
                self.assertEqual(len(traces), STEPS + 1, traces)
                self.assertIn("rt__sample_slow (", traces[0])
                for i, trace in enumerate(traces):
                    frames = [l for l in trace.splitlines()
                              if l.startswith("#")]
                    self.assertTrue(any(" main (" in l or l.startswith(
                        "#0  main (") for l in frames),
                        "step %d: no main in\n%s" % (i, trace))
                    self.assertIn("rt_alloc (", trace, "step %d" % i)


if __name__ == "__main__":
    unittest.main()
