"""The reader's symbol index (scripts/reader/symtab.c) against libdw's
dwfl_module_addrinfo, which it replaces where the answer is the same:
`allocsites-read --symbols FILE` looks every address up both ways and
prints the ones that differ. Addresses: every symbol's start, its last
byte, and one inside. Files: a program made of what makes libdw's rules
matter (weak and global aliases of one function, a symbol inside
another, local functions of one name in two files, assembler labels
without a size, a function split into a .cold part), C++, libc, and the
reader itself. No perf."""
import os
import random
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
READER = os.path.join(BUILD, "allocsites-read")

TRICKY_A = r"""
static volatile int sink;
__attribute__((noinline)) static int twin(int x) { sink += x; return x + 1; }
__attribute__((noinline)) int work(int x) { sink += x * 3; return x; }
int work_global(int) __attribute__((alias("work")));
int work_weak(int) __attribute__((weak, alias("work")));
__attribute__((cold, noinline)) void note(void) { sink++; }
__attribute__((noinline)) int split(int x)
{
    if (__builtin_expect(x < 0, 0)) { note(); sink += x; }
    return x * 2;
}
int call_a(int x) { return twin(x) + split(x); }
/* an outer symbol with a size around an inner one, and labels with
 * none, as hand-written assembly has them */
__asm__(".text\n"
        ".globl outer_fn\n.type outer_fn,@function\n"
        "outer_fn:\n nop\n nop\n"
        ".globl inner_fn\n.type inner_fn,@function\n"
        "inner_fn:\n nop\n nop\n ret\n"
        ".size inner_fn, .-inner_fn\n nop\n nop\n ret\n"
        ".size outer_fn, .-outer_fn\n"
        ".globl bare_label\n.type bare_label,@function\n"
        "bare_label:\n nop\n nop\n ret\n"
        "local_label:\n nop\n ret\n"
        /* a weak symbol inside a global one: the closer start against
         * the better binding */
        ".weak inner_w\n.type inner_w,@function\n"
        ".globl outer_g\n.type outer_g,@function\n"
        "outer_g:\n nop\n nop\n"
        "inner_w:\n nop\n nop\n ret\n"
        ".size inner_w, .-inner_w\n nop\n ret\n"
        ".size outer_g, .-outer_g\n");
"""
TRICKY_B = r"""
static volatile int sink;
__attribute__((noinline)) static int twin(int x) { sink -= x; return x - 1; }
int call_a(int);
int main(int argc, char **argv)
{
    (void)argv;
    return call_a(argc) + twin(argc) > 1000;
}
"""
CXX = r"""
#include <map>
#include <string>
#include <vector>
template <int N> struct Level {
    __attribute__((noinline)) static int run(std::vector<int> &v) {
        v.push_back(N);
        return Level<N - 1>::run(v) + 1;
    }
};
template <> struct Level<0> {
    static int run(std::vector<int> &v) { return (int)v.size(); }
};
int main() {
    std::vector<int> v;
    std::map<std::string, int> m;
    m["x"] = Level<12>::run(v);
    return m["x"] > 100;
}
"""


def addresses(path, extra=()):
    """Every symbol's start, last byte and a byte inside, from nm (the
    dynamic table where there is no other)."""
    out = []
    for args in (["nm", "-S", "--defined-only", path],
                 ["nm", "-D", "-S", "--defined-only", path]):
        text = subprocess.run(args, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL,
                              universal_newlines=True).stdout
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 4:
                start, size = int(parts[0], 16), int(parts[1], 16)
                out += [start, start + size - 1, start + size // 2]
            elif len(parts) == 3:
                out.append(int(parts[0], 16))
        if out:
            break
    random.Random(7).shuffle(out)
    return sorted(set(out)) + list(extra)


class SymbolIndex(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(READER):
            raise AssertionError("%s is not built: run make" % READER)
        cls.tmp = tempfile.mkdtemp(prefix="allocsites-symbols-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def same(self, path, minimum):
        addrs = addresses(path)
        self.assertGreater(len(addrs), minimum)
        proc = subprocess.run(
            [READER, "--symbols", path], input="".join(
                "%x\n" % a for a in addrs), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True)
        last = proc.stdout.splitlines()[-1].split()
        asked, indexed, differ = int(last[1]), int(last[3]), int(last[5])
        self.assertEqual((proc.returncode, differ), (0, 0), proc.stdout)
        self.assertEqual(asked, len(addrs))
        # most answers from the index: the test compares something
        self.assertGreater(indexed, asked // 2, proc.stdout)

    def build(self, name, sources, compiler="gcc", flags=()):
        paths = []
        for i, text in enumerate(sources):
            p = os.path.join(self.tmp, "%s_%d.%s" % (
                name, i, "cpp" if compiler.endswith("++") else "c"))
            with open(p, "w") as f:
                f.write(text)
            paths.append(p)
        prog = os.path.join(self.tmp, name)
        subprocess.run([compiler, "-O2", "-g"] + list(flags) + paths +
                       ["-o", prog], check=True)
        return prog

    def test_tricky_symbols(self):
        for flags in ([], ["-fno-pie", "-no-pie"]):
            with self.subTest(flags=flags):
                prog = self.build("tricky", [TRICKY_A, TRICKY_B],
                                  flags=flags)
                nm = subprocess.run(["nm", prog], stdout=subprocess.PIPE,
                                    universal_newlines=True).stdout
                for name in ("work_weak", "inner_fn", "bare_label",
                             "split.cold", "inner_w", "outer_g"):
                    self.assertIn(name, nm)
                self.same(prog, 40)

    def test_cxx(self):
        if shutil.which("g++") is None:
            self.skipTest("g++ is not installed")
        self.same(self.build("cxx", [CXX], compiler="g++"), 50)

    def test_libc_and_the_reader(self):
        for path in ("/usr/lib/x86_64-linux-gnu/libc.so.6", READER):
            if os.path.exists(path):
                with self.subTest(path=path):
                    self.same(path, 100)


if __name__ == "__main__":
    unittest.main()
