"""allocsites-read --lines (scripts/reader/lines.c): the source lines of
return addresses, inlined frames expanded, as the report reads them
(symbolize.run_addr2line), checked against lines the program marks
itself, with gcc and clang (clang writes no .debug_aranges and names
its files relative to the compilation directory), PIE and not. No perf.

The program prints the address of each call into `leaf` (its return
address less one, as a stack holds it); the source's comments say the
line of each call, one of them inside a function inlined into main.
The wrong answers binutils' addr2line gives on the corpus (a function
from a header named in the .c file that includes it; clang's inlined
frames dropped) are what lines.c does not copy from it."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from allocsites_lib.analyze import symbolize  # noqa: E402

SOURCE = r"""
#include <stdio.h>
extern char __executable_start[];
__attribute__((noinline)) void leaf(int i)
{
	/* a stack's address of the call: the return address less one,
	   from the start of the image (PIE: loaded anywhere) */
	printf("%d %lx\n", i, (unsigned long)__builtin_return_address(0) - 1 -
	       (unsigned long)__executable_start);
	__asm__ volatile("" ::: "memory");
}
static inline __attribute__((always_inline)) void helper(int i)
{
	leaf(i);                        /* line 14: inlined call */
}
__attribute__((noinline)) int main(void)
{
	leaf(1);                        /* line 18 */
	helper(2);                      /* line 19 */
	return 0;
}
"""
FILE = "prog.c"


def build_and_run(tmp, compiler, flags):
    prog = os.path.join(tmp, "prog-" + compiler)
    subprocess.run([compiler, "-g", "-O2"] + flags + [FILE, "-o", prog],
                   cwd=tmp, check=True)
    out = subprocess.run([prog], stdout=subprocess.PIPE, check=True,
                         universal_newlines=True).stdout
    # the image's start as linked: 0 for a PIE, 0x400000 without
    nm = subprocess.run(["nm", prog], stdout=subprocess.PIPE, check=True,
                        universal_newlines=True).stdout
    start = next(int(line.split()[0], 16) for line in nm.splitlines()
                 if line.endswith(" __executable_start"))
    return prog, {int(i): start + int(a, 16) for i, a in
                  (line.split() for line in out.splitlines())}


class ReaderLines(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.reader = os.path.join(BUILD, "allocsites-read")
        if not os.path.exists(cls.reader):
            raise AssertionError("%s is not built: run make" % cls.reader)
        cls.tmp = tempfile.mkdtemp(prefix="allocsites-lines-")
        with open(os.path.join(cls.tmp, FILE), "w") as f:
            f.write(SOURCE)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def answers(self, prog, addresses):
        return symbolize.run_addr2line(
            prog, addresses, command=lambda p: [self.reader, "--lines", p])

    def check(self, compiler, flags):
        if shutil.which(compiler) is None:
            self.skipTest("%s is not installed" % compiler)
        prog, at = build_and_run(self.tmp, compiler, flags)
        got = self.answers(prog, [at[1], at[2]])
        path = os.path.join(self.tmp, FILE)
        self.assertEqual(got[at[1]], [("main", path, 18)])
        self.assertEqual(got[at[2]], [("helper", path, 14),
                                      ("main", path, 19)])

    def test_gcc_pie(self):
        self.check("gcc", [])

    def test_gcc_no_pie(self):
        self.check("gcc", ["-fno-pie", "-no-pie"])

    def test_clang(self):
        self.check("clang", [])

    def test_no_file_no_answers(self):
        # as addr2line: nothing at all (the Symbolizer then names the
        # frame by its symbol), not a traceback
        self.assertEqual(self.answers("/nonexistent/file", [0x10]), {})

    def test_no_debug_info(self):
        prog, at = build_and_run(self.tmp, "gcc", [])
        stripped = prog + ".stripped"
        subprocess.run(["strip", "-g", prog, "-o", stripped], check=True)
        self.assertEqual(self.answers(stripped, [at[1]]),
                         {at[1]: [(None, None, 0)]})


if __name__ == "__main__":
    unittest.main()
