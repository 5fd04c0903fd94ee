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


def build_and_run(tmp, compiler, flags, name=None):
    prog = os.path.join(tmp, name or "prog-" + compiler)
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

    def check(self, compiler, flags, name=None):
        if shutil.which(compiler) is None:
            self.skipTest("%s is not installed" % compiler)
        prog, at = build_and_run(self.tmp, compiler, flags, name)
        got = self.answers(prog, [at[1], at[2]])
        path = os.path.join(self.tmp, FILE)
        self.assertEqual(got[at[1]], [("main", path, 18)])
        self.assertEqual(got[at[2]], [("helper", path, 14),
                                      ("main", path, 19)])
        return prog, at

    def test_gcc_pie(self):
        self.check("gcc", [])

    def test_gcc_no_pie(self):
        self.check("gcc", ["-fno-pie", "-no-pie"])

    def test_clang(self):
        self.check("clang", [])

    # -gsplit-dwarf: the program keeps a skeleton unit (lines, the
    # compilation directory), its functions and inlined calls are in a
    # .dwo file beside it; without the split unit no inlined frame
    # (binutils' addr2line 2.40 gives none either)
    def test_gcc_split_dwarf(self):
        self.check_split("gcc", ["-gsplit-dwarf"])

    def test_gcc_split_dwarf_4(self):
        # DWARF 4's GNU form (DW_AT_GNU_dwo_name)
        self.check_split("gcc", ["-gdwarf-4", "-gsplit-dwarf"])

    def test_clang_split_dwarf(self):
        self.check_split("clang", ["-gsplit-dwarf"])

    def check_split(self, compiler, flags):
        name = "split-%s%s" % (compiler, "".join(flags))
        prog, at = self.check(compiler, flags, name)
        dwos = [f for f in os.listdir(self.tmp) if f.endswith(".dwo")]
        self.assertNotEqual(dwos, [], "no .dwo written")
        # the .dwo gone (a build tree cleaned): lines still, each
        # frame named by its ELF symbol, the inlined one not seen
        hidden = os.path.join(self.tmp, "hidden")
        os.makedirs(hidden, exist_ok=True)
        for f in dwos:
            os.rename(os.path.join(self.tmp, f), os.path.join(hidden, f))
        try:
            got = self.answers(prog, [at[1], at[2]])
        finally:
            for f in dwos:
                os.rename(os.path.join(hidden, f), os.path.join(self.tmp, f))
        path = os.path.join(self.tmp, FILE)
        self.assertEqual(got, {at[1]: [("main", path, 18)],
                               at[2]: [("main", path, 14)]})

    def test_one_large_unit(self):
        # 1500 functions in one file (an amalgamated source such as
        # sqlite3.c is one unit): every call's chain exact, a call
        # through two levels of inlining and a call in each function's
        # .cold part (a second range of the function) among them.
        # lines.c indexes a unit's functions once; dwarf_getscopes
        # walked the unit for every address (53 s for 10,000 here).
        n = 1500
        src = [SOURCE.split("static inline")[0],
               "static volatile int sink;\n"
               # a call to a cold function puts the block calling it in
               # the function's .cold part
               "__attribute__((cold, noinline, noipa)) void note(void)"
               "\n{\n\tsink++;\n}\n"
               "static inline __attribute__((always_inline)) void "
               "inner(int i)\n{\n\tleaf(i);\n}",
               "static inline __attribute__((always_inline)) void "
               "outer(int i)\n{\n\tinner(i);\n}"]
        base = "".join(x + "\n" for x in src).count("\n")
        want = {}
        for k in range(1, n + 1):
            first = base + 1 + (k - 1) * 10
            # (sink: no tail calls; noipa: no specialized copies)
            src.append("__attribute__((noinline, noipa)) void f%d(int i)"
                       "\n{\n\tif (__builtin_expect(i < 0, 0)) {\n"
                       "\t\tnote(); leaf(i - %d);\n\t\tsink++;\n\t\treturn;\n\t}\n"
                       "\touter(i);\n\tleaf(i + %d); sink++;\n}"
                       % (k, n, n))
            want[k] = "f%d" % k, first + 7          # outer(i)
            want[-k - n] = "f%d" % k, first + 3     # the cold call
            want[k + n] = "f%d" % k, first + 8
        src.append("int main(void)\n{")
        for k in range(1, n + 1):
            src.append("\tf%d(%d);" % (k, k))
            if k % 100 == 0:
                src.append("\tf%d(%d);" % (k, -k))
        src.append("\treturn 0;\n}")
        text = "\n".join(src) + "\n"
        path = os.path.join(self.tmp, "large.c")
        with open(path, "w") as f:
            f.write(text)
        lines = text.split("\n")
        inner_call = lines.index("\tleaf(i);") + 1
        outer_call = lines.index("\tinner(i);") + 1
        prog = os.path.join(self.tmp, "large")
        subprocess.run(["gcc", "-g", "-O2", "large.c", "-o", prog],
                       cwd=self.tmp, check=True)
        nm = subprocess.run(["nm", prog], stdout=subprocess.PIPE,
                            check=True, universal_newlines=True).stdout
        self.assertEqual(nm.count(".cold"), n, "no .cold part each")
        out = subprocess.run([prog], stdout=subprocess.PIPE, check=True,
                             universal_newlines=True).stdout
        at = {int(i): int(a, 16) for i, a in
              (line.split() for line in out.splitlines())}
        got = self.answers(prog, sorted(set(at.values())))
        self.assertEqual(len(at), 2 * n + n // 100)
        for i, addr in sorted(at.items()):
            fn, line = want[i]
            if 0 < i <= n:
                expect = [("inner", path, inner_call),
                          ("outer", path, outer_call), (fn, path, line)]
            else:
                expect = [(fn, path, line)]
            self.assertEqual(got[addr], expect, "call %d" % i)

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
