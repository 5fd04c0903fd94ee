"""record --unwind auto (unwindchoice.py): fp only where the probed
binaries keep frame pointers, with the reason in one line. On the
project's own binaries built both ways, and on programs compiled here
that keep frame pointers everywhere but where the allocation probe fires,
or nowhere, or have no symbols. No perf needed."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import shutil
import subprocess
import tempfile

from allocsites_lib.record import unwindchoice

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))

PROGRAM = r"""
#include <rt_probes.h>
#include <stdlib.h>
ALLOCATOR void *my_alloc(size_t n)
{
    void *p = malloc(n);
    RT_ALLOC(p, n, 0);
    return p;
}
static int work(int n) { return n * 3 + 1; }
int helper(int n) { int i, s = 0; for (i = 0; i < n; i++) s += work(i); return s; }
int main(int argc, char **argv)
{
    (void)argv;
    free(my_alloc((size_t)helper(argc)));
    return 0;
}
"""


class Choice(unittest.TestCase):
    def built(self, name):
        path = os.path.join(BUILD, name)
        self.assertTrue(os.path.exists(path), "%s is not built: run make"
                        % path)
        return path

    def test_the_example_compiler_both_ways(self):
        mode, why = unwindchoice.choose([self.built("minicc-fp")])
        self.assertEqual(mode, "fp", why)
        self.assertRegex(why, r"minicc-fp sets up a frame pointer in \d+ of "
                              r"\d+ functions, and in those that allocate")
        mode, why = unwindchoice.choose([self.built("minicc")])
        self.assertEqual(mode, "dwarf")
        self.assertRegex(why, r"^minicc sets up a frame pointer in [0-2] of")

    def test_one_binary_without_them_decides(self):
        # the program keeps them, the allocator's library does not
        mode, why = unwindchoice.choose([self.built("tests/t_basic_fp"),
                                         self.built("librtalloc.so")])
        self.assertEqual(mode, "dwarf")
        self.assertIn("librtalloc.so", why)


class Compiled(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="allocsites-unwind-")
        self.addCleanup(shutil.rmtree, self.dir)

    def build(self, flags, alloc_attr=""):
        src = os.path.join(self.dir, "p.c")
        with open(src, "w") as f:
            f.write(PROGRAM.replace("ALLOCATOR", alloc_attr))
        out = os.path.join(self.dir, "p")
        subprocess.run(["gcc", "-O2", "-I", os.path.join(ROOT, "include")] +
                       flags + [src, "-o", out], check=True)
        return out

    def test_kept_everywhere(self):
        prog = self.build(["-fno-omit-frame-pointer",
                           "-mno-omit-leaf-frame-pointer"])
        self.assertEqual(unwindchoice.choose([prog])[0], "fp")

    def test_kept_but_not_where_the_probe_fires(self):
        prog = self.build(["-fno-omit-frame-pointer",
                           "-mno-omit-leaf-frame-pointer"],
                          '__attribute__((optimize("omit-frame-pointer")))')
        mode, why = unwindchoice.choose([prog])
        self.assertEqual(mode, "dwarf")
        self.assertRegex(why, r"^p: the function holding rt:(alloc|sample) at 0x[0-9a-f]+ "
                              r"sets up no frame pointer$")

    def test_not_kept(self):
        mode, why = unwindchoice.choose([self.build([])])
        self.assertEqual(mode, "dwarf")

    def test_stripped(self):
        prog = self.build(["-fno-omit-frame-pointer", "-s"])
        mode, why = unwindchoice.choose([prog])
        self.assertEqual(mode, "dwarf")
        self.assertIn("cannot be checked", why)

    def test_not_an_elf_file(self):
        path = os.path.join(self.dir, "script")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n")
        self.assertEqual(unwindchoice.choose([path])[0], "dwarf")


if __name__ == "__main__":
    unittest.main()
