"""probedefs: the tracefs definitions of the one plain event, checked
against readelf's reading of the same notes (the independent truth)."""

import re
import unittest

from fixtures import CProgram, require_toolchain, run

from allocsites_lib.read import elf
from allocsites_lib.record import probedefs

SOURCE = r"""
#include <stdlib.h>
#include "rt_probes.h"
__attribute__((noinline)) void *rt_alloc(size_t n, unsigned tag)
{
    void *p = malloc(n);
    RT_ALLOC(p, n, tag);
    return p;
}
__attribute__((noinline)) void rt_free(void *p, size_t n, unsigned tag)
{
    RT_FREE(p, n, tag);
    free(p);
}
int main(int argc, char **argv)
{
    (void)argv;
    rt_free(rt_alloc((size_t)argc, 1), (size_t)argc, 1);
    return 0;
}
"""

_NOTE_RE = re.compile(
    r"Name: (\w+)\s+Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), "
    r"Semaphore: (0x[0-9a-f]+)\s+Arguments: ([^\n]*)")


def readelf_probes(path):
    """[(name, location, semaphore, args)] of provider rt, by readelf."""
    text = run(["readelf", "-n", path])
    return [(m.group(1), int(m.group(2), 16), int(m.group(4), 16),
             m.group(5).strip()) for m in _NOTE_RE.finditer(text)]


class DefinitionsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_toolchain()
        cls.progs = [CProgram(SOURCE, name="pie"),
                     CProgram(SOURCE, flags=("-no-pie",), name="nopie")]

    @classmethod
    def tearDownClass(cls):
        for p in cls.progs:
            p.cleanup()

    def test_one_line_per_probe_site_with_file_offsets(self):
        for prog in self.progs:
            with self.subTest(prog=prog.path):
                image = elf.open_elf(prog.path)
                lines = probedefs.definitions(prog.path, image,
                                                {"free", "exit"}, "plain_7")
                expected = []
                for name, loc, sem, args in readelf_probes(prog.path):
                    if name not in ("free", "exit"):
                        continue
                    regs = [re.sub(r"^r?e?", "", a.split("@%")[1]) for a in
                            args.split()]
                    expected.append((prog.file_offset(loc),
                                     prog.file_offset(sem),
                                     probedefs.KINDS[name], len(regs)))
                got = []
                for line in lines:
                    m = re.match(r"^p:sdt_rt/plain_7 (\S+):0x([0-9a-f]+)"
                                 r"\(0x([0-9a-f]+)\) kind=\\(\d+):u8 (.*)$",
                                 line)
                    self.assertTrue(m, line)
                    self.assertEqual(m.group(1), prog.path)
                    fields = m.group(5).split()
                    self.assertEqual([f.split("=")[0] for f in fields],
                                     list("abcdefgh"))
                    self.assertTrue(all(f.endswith(":u64") for f in fields))
                    used = [f for f in fields if "=\\0:" not in f]
                    got.append((int(m.group(2), 16), int(m.group(3), 16),
                                int(m.group(4)), len(used)))
                self.assertEqual(sorted(got), sorted(expected))
                # one free site, two exit sites (the count and its
                # padding, include/rt_exit.h)
                self.assertEqual(len(got), 3)

    def test_allocation_probes_as_perf_probe_names_their_fields(self):
        for prog in self.progs:
            with self.subTest(prog=prog.path):
                image = elf.open_elf(prog.path)
                lines = probedefs.alloc_definitions(prog.path, image,
                                                    "alloc", "alloc_7")
                want = [(prog.file_offset(loc), prog.file_offset(sem),
                         [a.split("@")[0] for a in args.split()])
                        for name, loc, sem, args in readelf_probes(prog.path)
                        if name == "alloc"]
                got = []
                for line in lines:
                    m = re.match(r"^p:sdt_rt/alloc_7 \S+:0x([0-9a-f]+)"
                                 r"\(0x([0-9a-f]+)\) (.*)$", line)
                    self.assertTrue(m, line)
                    fields = m.group(3).split()
                    self.assertEqual([f.split("=")[0] for f in fields],
                                     ["arg1", "arg2", "arg3", "arg4"])
                    sizes = [{"u64": "8", "u32": "4"}[f.rsplit(":", 1)[1]]
                             for f in fields]
                    got.append((int(m.group(1), 16), int(m.group(2), 16),
                                sizes))
                self.assertEqual(sorted(got), sorted(want))
                self.assertEqual(len(got), 1)

    def test_a_path_with_a_space_is_left_to_perf_probe(self):
        image = elf.open_elf(self.progs[0].path)
        self.assertIsNone(probedefs.definitions("/a b/prog", image,
                                                  {"free"}, "plain_1"))

    def test_kinds_not_in_the_binary_give_no_lines(self):
        image = elf.open_elf(self.progs[0].path)
        self.assertEqual(probedefs.definitions(
            self.progs[0].path, image, {"release"}, "plain_1"), [])


class FetchArgsTest(unittest.TestCase):

    def test_registers_of_every_width(self):
        self.assertEqual(
            probedefs.fetch_args("8@%rax 4@%r12d -4@%esi 8@%r8", "x86_64"),
            ["%ax", "%r12", "%si", "%r8", "\\0", "\\0", "\\0", "\\0"])
        self.assertEqual(probedefs.fetch_args("8@x0 4@w3", "aarch64")[:2],
                         ["%x0", "%x3"])

    def test_what_cannot_be_translated(self):
        for args, machine in (("8@-8(%rbp)", "x86_64"), ("8@$5", "x86_64"),
                              ("8@%rax", "riscv"),
                              (" ".join(["8@%rax"] * 9), "x86_64")):
            with self.subTest(args=args):
                self.assertIsNone(probedefs.fetch_args(args, machine))

    def test_event_names_are_per_process(self):
        self.assertEqual(probedefs.event_name(123), "plain_123")
        self.assertEqual(probedefs.event_name(123, "alloc"), "alloc_123")
        self.assertNotEqual(probedefs.event_name(1),
                            probedefs.event_name(2))


if __name__ == "__main__":
    unittest.main()


def objdump_at(path, vaddr):
    """objdump's instruction at vaddr: its mnemonic and operands."""
    text = run(["objdump", "-d", "--no-show-raw-insn",
                "--start-address=0x%x" % vaddr,
                "--stop-address=0x%x" % (vaddr + 16), path])
    for line in text.splitlines():
        m = re.match(r"^\s*%x:\s+(.*)$" % vaddr, line)
        if m:
            return " ".join(m.group(1).split())
    return None


class FastSiteTest(unittest.TestCase):
    """probedefs.fast_site: a recording without stack copies takes each
    probe at its site's 5-byte nop (on Linux >= 6.18 a call to the uprobe
    syscall, not a trap; include/rt_probes.h says why the site is what
    it is), found by its bytes; objdump's disassembly is the truth."""

    @classmethod
    def setUpClass(cls):
        require_toolchain()
        cls.progs = [CProgram(SOURCE, name="pie"),
                     CProgram(SOURCE, flags=("-no-pie",), name="nopie"),
                     CProgram(SOURCE, flags=("-O0",), name="o0"),
                     CProgram(SOURCE, flags=("-fno-omit-frame-pointer",
                                             "-Os"), name="fp_os")]

    @classmethod
    def tearDownClass(cls):
        for p in cls.progs:
            p.cleanup()

    def offsets(self, lines):
        return sorted(int(re.match(r"^\S+ \S+:0x([0-9a-f]+)", line)
                          .group(1), 16) for line in lines)

    def test_every_probe_at_its_five_byte_nop(self):
        for prog in self.progs:
            image = elf.open_elf(prog.path)
            for kinds, make in (
                    ({"free", "exit"}, lambda fast: probedefs.definitions(
                        prog.path, image, {"free", "exit"}, "plain_7",
                        fast)),
                    ({"alloc"}, lambda fast: probedefs.alloc_definitions(
                        prog.path, image, "alloc", "alloc_7", fast))):
                with self.subTest(prog=prog.path, kinds=kinds):
                    notes = [loc for name, loc, _, _ in
                             readelf_probes(prog.path) if name in kinds]
                    self.assertTrue(notes)
                    self.assertEqual(self.offsets(make(False)), sorted(
                        prog.file_offset(loc) for loc in notes))
                    self.assertEqual(self.offsets(make(True)), sorted(
                        prog.file_offset(loc + 9) for loc in notes))
                    for loc in notes:
                        self.assertEqual(objdump_at(prog.path, loc), "nop")
                        self.assertEqual(objdump_at(prog.path, loc + 1),
                                         "lea -0x88(%rsp),%rsp")
                        self.assertEqual(objdump_at(prog.path, loc + 9),
                                         "nopl 0x0(%rax,%rax,1)")
                        self.assertEqual(objdump_at(prog.path, loc + 14),
                                         "lea 0x88(%rsp),%rsp")
                    # only the place moves: the same fields, semaphores
                    strip = [re.sub(r":0x[0-9a-f]+\(", ":(", line)
                             for line in make(False)]
                    self.assertEqual(
                        [re.sub(r":0x[0-9a-f]+\(", ":(", line)
                         for line in make(True)], strip)

    def test_other_sites_keep_the_note_address(self):
        class Image:
            machine = "x86_64"
            data = b""
        site = bytes.fromhex("90" "488da42478ffffff" "0f1f440000"
                             "488da42488000000")
        for data, machine, want in (
                (site, "x86_64", 9),
                (b"\x00" * 7 + site, "x86_64", None),     # not at offset 0
                (site, "aarch64", None),
                (site[:13], "x86_64", None),              # cut short
                (site[:9] + bytes.fromhex("0f1f400000"), "x86_64", None),
                (bytes.fromhex("90488d642480") + site[9:], "x86_64", None),
                (bytes.fromhex("90") + site[9:], "x86_64", None)):  # sdt.h
            image = Image()
            image.data, image.machine = data, machine
            with self.subTest(data=data.hex(), machine=machine):
                self.assertEqual(probedefs.fast_site(image, 0), want)
