import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import re
import struct
import subprocess
import tempfile

from allocsites_lib.read import elf
from allocsites_lib.analyze.symbolize import run_addr2line

import fixtures
from fixtures import FakeElf, rt_tags_blob

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def note(ntype, owner, desc):
    name = owner.encode() + b"\0"
    return (struct.pack("<III", len(name), len(desc), ntype)
            + name + b"\0" * (-len(name) % 4) + desc + b"\0" * (-len(desc) % 4))


def stapsdt_desc(pc, base, sem, provider, name, args):
    return struct.pack("<QQQ", pc, base, sem) + b"\0".join(
        s.encode() for s in (provider, name, args)) + b"\0"


class SemaphoreMappingTest(unittest.TestCase):
    """elf.raised_elsewhere: which writable mapping the kernel raises a
    semaphore in, from the program headers alone (the layouts of
    build/tests/t_basic_lld*, as readelf -l prints them)."""

    class Image:
        def __init__(self, writable, probes):
            self.writable = writable
            self.sections = {".probes": probes}

    # lld, full RELRO: RW 0x7d40/0x9d40 filesz 0x310 (RELRO), then RW
    # 0x8050/0xb050 filesz 0xfd0: file page 0x8000 is mapped by both
    LLD = [(0x7d40, 0x9d40, 0x310), (0x8050, 0xb050, 0xfd0)]

    def test_lld_relro_page(self):
        old = self.Image(self.LLD, (0xb060, 0x8060, 0x20))
        off = elf.semaphore_offset(old, 0xb060)
        self.assertEqual(off, 0x8060)
        self.assertTrue(elf.raised_elsewhere(old, off))
        # the block on a page of its own: 0xc000, file offset 0x9000
        new = self.Image(self.LLD[:1] + [(0x8050, 0xb050, 0x1fd0)],
                         (0xc000, 0x9000, 0x20))
        self.assertFalse(elf.raised_elsewhere(
            new, elf.semaphore_offset(new, 0xc000)))

    def test_one_writable_segment_and_no_probes_section(self):
        bfd = self.Image([(0x2db0, 0x3db0, 0x298)], (0x4010, 0x3010, 0x20))
        self.assertFalse(elf.raised_elsewhere(
            bfd, elf.semaphore_offset(bfd, 0x4010)))
        self.assertIsNone(elf.semaphore_offset(bfd, 0x9000))   # outside
        self.assertIsNone(elf.semaphore_offset(bfd, 0))        # none
        bare = self.Image([], None)
        bare.sections = {}
        self.assertIsNone(elf.semaphore_offset(bare, 0x4010))

    def test_a_semaphore_outside_probes(self):
        # sys/sdt.h with a semaphore the user forgot to put in .probes:
        # perf computes the kernel's offset from .probes, so the kernel
        # counts elsewhere
        from allocsites_lib.record import binaries
        src = ("#define _SDT_HAS_SEMAPHORES 1\n"
               "unsigned short rt_alloc_semaphore;\n"
               "#include <sys/sdt.h>\n"
               "int main(int c, char **v) {\n"
               "  if (rt_alloc_semaphore) STAP_PROBE3(rt, alloc, v, c, 1);\n"
               "  return 0;\n}\n")
        with tempfile.TemporaryDirectory() as tmp:
            c = os.path.join(tmp, "p.c")
            with open(c, "w") as f:
                f.write(src)
            exe = os.path.join(tmp, "p")
            subprocess.run(["cc", "-O2", c, "-o", exe], check=True)
            self.assertEqual(binaries.semaphore_trouble(exe),
                             binaries.OUTSIDE_PROBES)
            self.assertIn("outside its .probes section",
                          binaries.stuck_semaphores_warning(
                              exe, binaries.OUTSIDE_PROBES))

    def test_built_programs(self):
        # the header's layout and the old one, linked by lld
        build = os.environ.get("BUILD") or os.path.join(
            os.path.dirname(__file__), "..", "..", "build")
        from allocsites_lib.record import binaries
        for name, want in (("t_basic_lld", None),
                           ("t_basic_lld_shared_page", binaries.RELRO_PAGE),
                           ("t_basic", None)):
            path = os.path.join(build, "tests", name)
            if not os.path.exists(path):
                self.fail("%s is not built: run make all" % path)
            self.assertEqual(binaries.semaphore_trouble(path), want, name)


class IterNotesTest(unittest.TestCase):
    def test_two_notes_with_padding(self):
        desc1 = bytes(range(20))
        desc2 = b"abcde"          # 5 bytes: padded to 8
        blob = note(3, "GNU", desc1) + note(1, "stapsdt", desc2)
        self.assertEqual(list(elf.iter_notes(blob)),
                         [(3, "GNU", desc1), (1, "stapsdt", desc2)])

    def test_empty_and_short(self):
        self.assertEqual(list(elf.iter_notes(b"")), [])
        self.assertEqual(list(elf.iter_notes(b"\x04\0\0\0\x04\0\0")), [])

    def test_overlong_sizes_do_not_raise(self):
        blob = struct.pack("<III", 4, 1000, 3) + b"GNU\0" + b"xy"
        self.assertEqual(list(elf.iter_notes(blob)), [(3, "GNU", b"xy")])


class SkipPatternsTest(unittest.TestCase):
    """RT_SKIP's .rt_skip records, read back from a real object file."""

    def test_compiled_records(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "w.c")
            with open(src, "w") as f:
                f.write('#include "rt_probes.h"\n'
                        'RT_SKIP("^xmalloc$");\nRT_SKIP("^arena_(new|grow)");\n'
                        'RT_SKIP("a");\nint main(void) { return 0; }\n')
            out = os.path.join(tmp, "w")
            subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-pedantic",
                            "-Werror", "-I" + os.path.join(ROOT, "include"),
                            src, "-o", out], check=True)
            self.assertEqual(elf.skip_patterns(elf.open_elf(out)),
                             ["^xmalloc$", "^arena_(new|grow)", "a"])

    def test_truncated_and_empty(self):
        blob = b"\x05\0\0\0^abc\0\0\0\0" + b"\x09\0\0\0^de"
        self.assertEqual(elf.skip_patterns(FakeElf(blobs={".rt_skip": blob})),
                         ["^abc"])
        self.assertEqual(elf.skip_patterns(FakeElf()), [])


class RecordsKeptByGcSectionsTest(unittest.TestCase):
    """RT_TAG_NAME, RT_PHASE_NAME, RT_SKIP and RT_GUEST_DISPATCH records
    are referenced by nothing: a link with --gc-sections (Rust's always,
    many release builds) dropped all four sections until the header
    marked them `retain`."""

    SOURCE = ('#include "rt_probes.h"\n'
              'RT_TAG_NAME(3, "ast");\nRT_PHASE_NAME(2, "parse");\n'
              'RT_SKIP("^xmalloc$");\nRT_GUEST_DISPATCH("^run$");\n'
              'int main(void) { return 0; }\n')

    def test_records_survive_gc_sections(self):
        for cc in ("gcc", "clang"):
            with self.subTest(cc=cc), tempfile.TemporaryDirectory() as tmp:
                src = os.path.join(tmp, "g.c")
                with open(src, "w") as f:
                    f.write(self.SOURCE)
                out = os.path.join(tmp, "g")
                subprocess.run([cc, "-std=c99", "-Wall", "-Wextra",
                                "-pedantic", "-Werror", "-O2",
                                "-ffunction-sections", "-fdata-sections",
                                "-Wl,--gc-sections",
                                "-I" + os.path.join(ROOT, "include"),
                                src, "-o", out], check=True)
                image = elf.open_elf(out)
                self.assertEqual(elf.tag_names(image), {3: "ast"})
                self.assertEqual(elf.phase_names(image), {2: "parse"})
                self.assertEqual(elf.skip_patterns(image), ["^xmalloc$"])
                self.assertEqual(elf.skip_patterns(image,
                                                   ".rt_guest_dispatch"),
                                 ["^run$"])


class TagNamesSyntheticTest(unittest.TestCase):
    def names(self, blob):
        return elf.tag_names(FakeElf(blobs={".rt_tags": blob}))

    def test_records_of_every_padding(self):
        pairs = [(1, "ast"), (2, "tokens"), (3, "ab"), (4, "abcdefg"), (0, "zero")]
        self.assertEqual(self.names(rt_tags_blob(pairs)), dict(pairs))

    def test_record_layout_by_hand(self):
        blob = (b"\x05\0\0\0" b"\x04\0\0\0" b"ast\0"
                b"\xff\xff\xff\xff" b"\x07\0\0\0" b"tokens\0\0")
        self.assertEqual(self.names(blob), {5: "ast", 4294967295: "tokens"})

    def test_no_section(self):
        self.assertEqual(elf.tag_names(FakeElf()), {})
        self.assertEqual(self.names(b""), {})

    def test_truncated_record_keeps_earlier(self):
        blob = rt_tags_blob([(1, "ast")]) + struct.pack("<II", 2, 50) + b"tok"
        self.assertEqual(self.names(blob), {1: "ast"})

    def test_zero_length_stops(self):
        blob = rt_tags_blob([(1, "ast")]) + struct.pack("<II", 2, 0) + rt_tags_blob([(3, "x")])
        self.assertEqual(self.names(blob), {1: "ast"})

    def test_trailing_partial_header_ignored(self):
        self.assertEqual(self.names(rt_tags_blob([(1, "ast")]) + b"\x02\0\0"), {1: "ast"})

    def test_name_cut_at_first_nul(self):
        blob = struct.pack("<II", 1, 8) + b"ab\0cdef\0"
        self.assertEqual(self.names(blob), {1: "ab"})

    def test_invalid_utf8_replaced(self):
        blob = struct.pack("<II", 1, 4) + b"a\xffb\0"
        self.assertEqual(self.names(blob), {1: "a\ufffdb"})

    def test_utf8_names(self):
        self.assertEqual(self.names(rt_tags_blob([(1, "arbre-\u00e9t\u00e9")])),
                         {1: "arbre-\u00e9t\u00e9"})

    def test_duplicate_tag_last_wins(self):
        self.assertEqual(self.names(rt_tags_blob([(1, "old"), (1, "new")])), {1: "new"})

    def test_control_characters_escaped_and_empty_names_dropped(self):
        # a newline in a name split the table's row and the folded line;
        # an empty name showed as ":8 B": the tag keeps its number
        self.assertEqual(self.names(rt_tags_blob(
            [(1, "new\nline\tand\x7f"), (2, ""), (3, "ok")])),
            {1: "new\\x0aline\\x09and\\x7f", 3: "ok"})


class StapsdtSyntheticTest(unittest.TestCase):
    def probes(self, blob):
        return elf.stapsdt_probes(FakeElf(blobs={".note.stapsdt": blob}))

    def test_probe_read(self):
        blob = note(3, "stapsdt", stapsdt_desc(0x11a0, 0x2004, 0x4020, "rt", "alloc",
                                               "8@%rax 8@%rbx 4@%ebp"))
        self.assertEqual(self.probes(blob),
                         [("rt", "alloc", 0x11a0, 0x4020, "8@%rax 8@%rbx 4@%ebp")])

    def test_other_notes_skipped(self):
        good = note(3, "stapsdt", stapsdt_desc(1, 2, 3, "rt", "free", ""))
        blob = (note(3, "GNU", stapsdt_desc(9, 9, 9, "x", "y", "z"))
                + note(4, "stapsdt", stapsdt_desc(9, 9, 9, "x", "y", "z"))
                + note(3, "stapsdt", b"short")
                + note(3, "stapsdt", struct.pack("<QQQ", 9, 9, 9) + b"only\0two")
                + good)
        self.assertEqual(self.probes(blob), [("rt", "free", 1, 3, "")])

    def test_no_section(self):
        self.assertEqual(elf.stapsdt_probes(FakeElf()), [])


def alloc_probes(image):
    """The rt:alloc notes (RT_ALLOC also emits an rt:sample note)."""
    return [p for p in elf.stapsdt_probes(image) if p[1] == "alloc"]


class ToLinkAddressSyntheticTest(unittest.TestCase):
    SEGS = [(0, 0x400000, 0x528), (0x1000, 0x401000, 0x1d1), (0x2df8, 0x403df8, 0x230)]

    def test_none_is_identity(self):
        self.assertEqual(elf.to_link_address(None, 0x1234), 0x1234)

    # a PIE as lld lays it out (build/tests/t_basic_lld, a Rust program):
    # text at a page past its offset
    LLD_SEGS = [(0, 0, 0x252c), (0x2530, 0x3530, 0x5830), (0x7d60, 0x9d60, 0x310)]

    def test_et_dyn_gnu_ld_layout_is_identity(self):
        # GNU ld: vaddr == offset in every PT_LOAD of a PIE or library
        segs = [(0, 0, 0x528), (0x1000, 0x1000, 0x1d1), (0x2df8, 0x3df8, 0x230)]
        self.assertEqual(elf.to_link_address(FakeElf(3, segs), 0x1100), 0x1100)

    def test_et_dyn_maps_through_segment(self):
        # perf 6.1 rewrites ET_DYN symbols to file offsets as well
        # (elf__needs_adjust_symbols): shim_alloc of a Rust program at
        # vaddr 0x1b3a0 is perf's 0x1a3a0
        image = FakeElf(3, self.LLD_SEGS)
        self.assertEqual(elf.to_link_address(image, 0x100), 0x100)
        self.assertEqual(elf.to_link_address(image, 0x2530), 0x3530)
        self.assertEqual(elf.to_link_address(image, 0x3000), 0x4000)
        self.assertEqual(elf.to_link_address(image, 0x7d70), 0x9d70)

    def test_et_exec_maps_through_segment(self):
        image = FakeElf(2, self.SEGS)
        self.assertEqual(elf.to_link_address(image, 0x0), 0x400000)
        self.assertEqual(elf.to_link_address(image, 0x527), 0x400527)
        self.assertEqual(elf.to_link_address(image, 0x1000), 0x401000)
        self.assertEqual(elf.to_link_address(image, 0x11ae), 0x4011ae)
        self.assertEqual(elf.to_link_address(image, 0x2e00), 0x403e00)

    def test_et_exec_outside_segments_is_identity(self):
        image = FakeElf(2, self.SEGS)
        self.assertEqual(elf.to_link_address(image, 0x528 + 0x10), 0x538)
        self.assertEqual(elf.to_link_address(image, 0x11d1), 0x11d1)
        self.assertEqual(elf.to_link_address(image, 0x10000000), 0x10000000)


class OpenElfBadInputTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, data):
        path = os.path.join(self.tmp.name, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_missing(self):
        self.assertIsNone(elf.open_elf(os.path.join(self.tmp.name, "nope")))

    def test_directory(self):
        self.assertIsNone(elf.open_elf(self.tmp.name))

    def test_not_elf(self):
        self.assertIsNone(elf.open_elf(self.write("t.txt", b"#!/bin/sh\n" * 20)))

    def test_empty_and_short(self):
        self.assertIsNone(elf.open_elf(self.write("e", b"")))
        self.assertIsNone(elf.open_elf(self.write("s", b"\x7fELF\x02\x01\x01" + b"\0" * 50)))

    def test_elf32_and_big_endian_rejected(self):
        header = bytearray(b"\x7fELF\x02\x01\x01" + b"\0" * 100)
        header[4] = 1
        self.assertIsNone(elf.open_elf(self.write("e32", bytes(header))))
        header[4], header[5] = 2, 2
        self.assertIsNone(elf.open_elf(self.write("ebe", bytes(header))))

    def test_headers_pointing_past_the_end(self):
        header = bytearray(b"\x7fELF\x02\x01\x01" + b"\0" * 57)
        struct.pack_into("<QQ", header, 32, 0x10000, 0x20000)       # e_phoff, e_shoff
        struct.pack_into("<HHHH", header, 54, 56, 3, 64, 5)          # phentsize.. shnum
        self.assertIsNone(elf.open_elf(self.write("past", bytes(header))))


class RealElfTest(unittest.TestCase):
    """ELF facts of programs compiled here, checked against binutils."""

    @classmethod
    def setUpClass(cls):
        fixtures.require_toolchain()
        cls.progs = fixtures.build_programs(
            dict(flags=["-fPIE", "-pie"]),
            dict(flags=["-fno-pie", "-no-pie"], name="prog_exec"),
            dict(source=fixtures.PLAIN_PROGRAM, flags=["-Wl,--build-id=none"], name="plain"),
            dict(flags=["-fPIC", "-shared"], name="libprog.so"))
        cls.pie, cls.exe, cls.plain, cls.lib = cls.progs

    @classmethod
    def tearDownClass(cls):
        for prog in cls.progs:
            prog.cleanup()

    def readelf_notes(self, prog):
        return fixtures.run(["readelf", "-nW", prog.path])

    def test_elf_types(self):
        self.assertEqual(elf.open_elf(self.pie.path).e_type, elf.ET_DYN)
        self.assertEqual(elf.open_elf(self.lib.path).e_type, elf.ET_DYN)
        self.assertEqual(elf.open_elf(self.exe.path).e_type, elf.ET_EXEC)

    def test_load_segments_match_readelf(self):
        for prog in (self.pie, self.exe):
            with self.subTest(prog=prog.path):
                self.assertEqual(elf.open_elf(prog.path).segments, prog.load_segments())

    def test_build_id_matches_readelf(self):
        for prog in (self.pie, self.exe, self.lib):
            with self.subTest(prog=prog.path):
                m = re.search(r"Build ID: ([0-9a-f]+)", self.readelf_notes(prog))
                self.assertIsNotNone(m)
                self.assertEqual(elf.build_id(elf.open_elf(prog.path)), m.group(1))

    def test_no_build_id(self):
        self.assertIsNone(elf.build_id(elf.open_elf(self.plain.path)))

    def test_stapsdt_probes_match_readelf(self):
        # RT_ALLOC emits two notes: rt:alloc and rt:sample.
        note_re = re.compile(r"Provider: (\S+)\s+Name: (\S+)\s+Location: "
                             r"(0x[0-9a-f]+), Base: 0x[0-9a-f]+, Semaphore: "
                             r"(0x[0-9a-f]+)\s+Arguments: ([^\n]*)")
        for prog in (self.pie, self.exe, self.lib):
            with self.subTest(prog=prog.path):
                expected = [(m.group(1), m.group(2), int(m.group(3), 16),
                             int(m.group(4), 16), m.group(5).strip())
                            for m in note_re.finditer(self.readelf_notes(prog))]
                probes = elf.stapsdt_probes(elf.open_elf(prog.path))
                self.assertEqual(probes, expected)
                # rt:exit has two sites: the count, and its padding
                # (include/rt_exit.h); rt:phase_track one that never runs;
                # rt:sample two: RT_ALLOC's, and the phase mark at a
                # thread's end (rt__phase_mark, include/rt_probes.h)
                self.assertEqual(sorted(p[:2] for p in probes),
                                 [("rt", "alloc"), ("rt", "exit"),
                                  ("rt", "exit"), ("rt", "phase_track"),
                                  ("rt", "sample"), ("rt", "sample")])

    def test_probe_arguments_are_registers(self):
        [(_, _, _, _, args)] = alloc_probes(elf.open_elf(self.pie.path))
        operands = args.split()
        # ptr, size, tag and the guest location (0 from RT_ALLOC)
        self.assertEqual([o.split("@")[0] for o in operands],
                         ["8", "8", "4", "8"])
        for operand in operands:
            self.assertRegex(operand, r"^-?\d+@%[a-z0-9]+$")

    def test_semaphore_is_rt_alloc_semaphore(self):
        [(_, _, _, sem, _)] = alloc_probes(elf.open_elf(self.exe.path))
        self.assertEqual(sem, self.exe.symbols()["rt_alloc_semaphore"][0])

    def test_probe_pc_is_the_rt_alloc_line(self):
        prog = self.pie
        [(_, _, pc, _, _)] = alloc_probes(elf.open_elf(prog.path))
        start, size = prog.symbols()["rt_alloc"]
        self.assertTrue(start <= pc < start + size)
        chain = run_addr2line(prog.path, [pc])[pc]
        self.assertEqual(chain[-1], ("rt_alloc", prog.src, prog.line("PROBE_LINE")))

    def test_no_probes(self):
        self.assertEqual(elf.stapsdt_probes(elf.open_elf(self.plain.path)), [])

    def test_tag_names_exact(self):
        for prog in (self.pie, self.exe, self.lib):
            with self.subTest(prog=prog.path):
                self.assertEqual(elf.tag_names(elf.open_elf(prog.path)), fixtures.TAGS)

    def test_no_tag_names(self):
        self.assertEqual(elf.tag_names(elf.open_elf(self.plain.path)), {})

    def test_section_address_matches_readelf(self):
        text = fixtures.run(["readelf", "-SW", self.pie.path])
        m = re.search(r"\]\s+\.rt_tags\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", text)
        image = elf.open_elf(self.pie.path)
        self.assertEqual(image.section_address(".rt_tags"), int(m.group(1), 16))
        self.assertEqual(len(image.section(".rt_tags")), int(m.group(3), 16))
        self.assertIsNone(image.section_address(".no_such_section"))
        self.assertIsNone(image.section(".no_such_section"))

    def test_nobits_section_is_empty(self):
        self.assertEqual(elf.open_elf(self.pie.path).section(".bss"), b"")

    def test_to_link_address_pie_identity(self):
        image = elf.open_elf(self.pie.path)
        for name in ("caller", "main", "rt_alloc"):
            addr = self.pie.symbols()[name][0]
            self.assertEqual(elf.to_link_address(image, addr), addr)

    def test_to_link_address_exec_maps_offsets_to_vaddrs(self):
        image = elf.open_elf(self.exe.path)
        segments = self.exe.load_segments()
        self.assertGreaterEqual(len(segments), 2)
        for off, vaddr, size in segments:
            for delta in (0, size // 2, size - 1):
                with self.subTest(segment=hex(vaddr), delta=delta):
                    self.assertEqual(elf.to_link_address(image, off + delta), vaddr + delta)

    def test_to_link_address_exec_functions(self):
        image = elf.open_elf(self.exe.path)
        for name in ("caller", "direct", "main", "rt_alloc"):
            vaddr = self.exe.symbols()[name][0]
            with self.subTest(function=name):
                self.assertEqual(elf.to_link_address(image, self.exe.file_offset(vaddr)), vaddr)

    def test_corrupt_shstrndx_gives_empty_results(self):
        with open(self.pie.path, "rb") as f:
            data = bytearray(f.read())
        struct.pack_into("<H", data, 62, 0xfff0)
        path = os.path.join(self.pie.dir, "corrupt")
        with open(path, "wb") as f:
            f.write(data)
        image = elf.open_elf(path)
        self.assertIsNotNone(image)
        self.assertEqual(image.sections, {})
        self.assertIsNone(elf.build_id(image))
        self.assertEqual(elf.tag_names(image), {})
        self.assertEqual(elf.stapsdt_probes(image), [])

    def test_truncated_binary(self):
        with open(self.pie.path, "rb") as f:
            data = f.read()
        for size in (64, 4096):
            path = os.path.join(self.pie.dir, "trunc%d" % size)
            with open(path, "wb") as f:
                f.write(data[:size])
            with self.subTest(size=size):
                self.assertIsNone(elf.open_elf(path))

    def test_file_read_where_sliced_equals_bytes(self):
        # the same facts from the file (FileBytes) as from its bytes
        with open(self.pie.path, "rb") as f:
            data = f.read()
        self.assertIsInstance(elf.open_elf(self.pie.path).data, bytes)
        limit = elf.WHOLE_FILE_LIMIT
        elf.WHOLE_FILE_LIMIT = 0    # as a large file is read
        try:
            from_file = elf.open_elf(self.pie.path)
        finally:
            elf.WHOLE_FILE_LIMIT = limit
        self.assertIsInstance(from_file.data, elf.FileBytes)
        from_bytes = elf.ElfFile(data)
        for attr in ("e_type", "machine", "segments", "writable",
                     "interpreter", "sections"):
            self.assertEqual(getattr(from_file, attr),
                             getattr(from_bytes, attr), attr)
        for name in from_bytes.sections:
            self.assertEqual(from_file.section(name),
                             from_bytes.section(name), name)
        self.assertEqual(elf.frame_pointer_functions(from_file),
                         elf.frame_pointer_functions(from_bytes))
        self.assertEqual(elf.stapsdt_probes(from_file),
                         elf.stapsdt_probes(from_bytes))

    def test_a_huge_binary_is_not_read_whole(self):
        # 4 GiB of (sparse) debug info after the program: opening it and
        # reading its probes, build-id and tags takes its headers and
        # those sections, not 4 GiB (open_elf read whole files once:
        # 1.7 GB of memory for a report on an 800 MB binary)
        import tracemalloc
        path = os.path.join(self.pie.dir, "huge")
        with open(self.pie.path, "rb") as f, open(path, "wb") as out:
            out.write(f.read())
        os.truncate(path, 4 << 30)
        tracemalloc.start()
        try:
            image = elf.open_elf(path)
            self.assertEqual(elf.build_id(image),
                             elf.build_id(elf.open_elf(self.pie.path)))
            self.assertTrue(elf.stapsdt_probes(image))
            elf.tag_names(image)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            os.unlink(path)
        self.assertLess(peak, 1 << 20)


    def test_many_small_binaries_hold_no_descriptor(self):
        # a report keeps an ElfFile per DSO: a program of thousands of
        # libraries must not run out of descriptors (a small file is
        # read whole, its descriptor closed)
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
        try:
            kept = [elf.open_elf(self.pie.path) for _ in range(300)]
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        self.assertTrue(all(kept))


class FileBytesTest(unittest.TestCase):
    """FileBytes slices as bytes do, the file read where sliced."""

    def setUp(self):
        fd, self.path = tempfile.mkstemp()
        os.write(fd, bytes(range(200)))
        os.close(fd)
        self.addCleanup(os.unlink, self.path)
        self.data = bytes(range(200))
        self.fb = elf.FileBytes(os.open(self.path, os.O_RDONLY), 200)
        self.addCleanup(self.fb.close)

    def test_slices_and_indexes_as_bytes(self):
        for key in (slice(0, 10), slice(190, 300), slice(300, 400),
                    slice(-5, None), slice(None, 3), slice(50, 40),
                    slice(None)):
            self.assertEqual(self.fb[key], self.data[key], key)
        self.assertEqual(len(self.fb), 200)
        self.assertEqual(self.fb[7], 7)
        self.assertEqual(self.fb[-1], 199)
        with self.assertRaises(IndexError):
            self.fb[200]

    def test_a_file_that_shrank_gives_short_slices(self):
        os.truncate(self.path, 100)
        self.assertEqual(self.fb[90:110], self.data[90:100])
        self.assertEqual(self.fb[150:160], b"")
        with self.assertRaises(IndexError):
            self.fb[150]

    def test_closed_reads_nothing(self):
        fb = elf.FileBytes(os.open(self.path, os.O_RDONLY), 200)
        fb.close()
        fb.close()
        self.assertEqual(fb[0:10], b"")


if __name__ == "__main__":
    unittest.main()
