import os, sys, threading, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

from allocsites_lib.analyze import symbolize
from allocsites_lib.read import parse
from allocsites_lib.read.parse import RawFrame
from allocsites_lib.analyze.symbolize import Frame, Symbolizer, parse_addr2line

import fixtures
from fixtures import APP, FakeAddr2line, FakeElf, fake_open_elf

LIB = "/usr/lib/libfoo.so.1"


class ParseAddr2lineTest(unittest.TestCase):
    def test_single_answer(self):
        text = "0x0000000000001139\nmain\n/src/a.c:12\n"
        self.assertEqual(parse_addr2line(text), {0x1139: [("main", "/src/a.c", 12)]})

    def test_discriminator_removed(self):
        text = "0x10\nf\n/src/a.c:12 (discriminator 3)\n"
        self.assertEqual(parse_addr2line(text), {0x10: [("f", "/src/a.c", 12)]})

    def test_unknown_everything(self):
        self.assertEqual(parse_addr2line("0x10\n??\n??:0\n"), {0x10: [(None, None, 0)]})

    def test_unknown_line_question_mark(self):
        self.assertEqual(parse_addr2line("0x10\n_init\n??:?\n"), {0x10: [("_init", None, 0)]})

    def test_known_file_unknown_line(self):
        self.assertEqual(parse_addr2line("0x10\nf\n/src/a.c:?\n"), {0x10: [("f", "/src/a.c", 0)]})

    def test_inline_chain_innermost_first(self):
        text = ("0x00000000000011be\n"
                "inner\n/src/h.h:3\n"
                "middle\n/src/h.h:9 (discriminator 1)\n"
                "outer\n/src/c.c:26\n")
        self.assertEqual(parse_addr2line(text), {0x11be: [
            ("inner", "/src/h.h", 3), ("middle", "/src/h.h", 9), ("outer", "/src/c.c", 26)]})

    def test_file_name_with_colons(self):
        text = "0x20\nf\n/src/odd:name.c:7\n0x30\ng\nC:/w/x.c:8 (discriminator 2)\n"
        self.assertEqual(parse_addr2line(text), {0x20: [("f", "/src/odd:name.c", 7)],
                                                 0x30: [("g", "C:/w/x.c", 8)]})

    def test_several_addresses(self):
        text = "0x10\nf\n/a.c:1\n0x20\ng\n/b.c:2\nh\n/c.c:3\n0x30\n??\n??:0\n"
        self.assertEqual(parse_addr2line(text), {
            0x10: [("f", "/a.c", 1)],
            0x20: [("g", "/b.c", 2), ("h", "/c.c", 3)],
            0x30: [(None, None, 0)]})

    def test_cplusplus_names_kept(self):
        text = "0x10\nns::Foo::bar(int) const\n/src/foo.cc:44\n"
        self.assertEqual(parse_addr2line(text)[0x10], [("ns::Foo::bar(int) const", "/src/foo.cc", 44)])

    def test_empty_and_garbage(self):
        self.assertEqual(parse_addr2line(""), {})
        self.assertEqual(parse_addr2line("addr2line: 'x': No such file\n"), {})

    def test_lines_before_first_address_ignored(self):
        self.assertEqual(parse_addr2line("junk\nmore\n0x10\nf\n/a.c:1\n"), {0x10: [("f", "/a.c", 1)]})

    def test_dangling_function_line_ignored(self):
        self.assertEqual(parse_addr2line("0x10\nf\n/a.c:1\ng\n"), {0x10: [("f", "/a.c", 1)]})

    def test_address_without_answer(self):
        self.assertEqual(parse_addr2line("0x10\n0x20\nf\n/a.c:1\n"),
                         {0x10: [], 0x20: [("f", "/a.c", 1)]})


def raw(addr, sym="f", off=0, dso=APP):
    return RawFrame(dso, addr, sym, off, None)


class SymbolizerFakeTest(unittest.TestCase):
    def setUp(self):
        self.answers = {}
        self.a2l = FakeAddr2line(self.answers)
        self.open_elf = fake_open_elf({APP: FakeElf(), LIB: FakeElf()})
        self.sym = Symbolizer(self.a2l, self.open_elf)

    def answer(self, dso, addr, *chain):
        self.answers[(dso, addr)] = list(chain)
        self.a2l.answers = self.answers

    def test_one_addr2line_call_per_dso(self):
        app = [raw(0x1000 + 0x10 * i) for i in range(5)]
        lib = [raw(0x2000 + 0x10 * i, dso=LIB) for i in range(3)]
        for r in app + lib:
            self.answer(r.dso, r.addr, ("f", "/src/x.c", r.addr & 0xff))
        self.sym.resolve(app + lib)
        self.assertEqual(sorted(self.a2l.calls), [
            (APP, [0x1000, 0x1010, 0x1020, 0x1030, 0x1040]),
            (LIB, [0x2000, 0x2010, 0x2020])])
        self.assertEqual(self.sym.frames(lib[1]),
                         (Frame("f", "/src/x.c", 0x10, LIB, False),))

    def test_dsos_are_asked_side_by_side(self):
        # each lookup waits until the other has started: asked one after
        # the other, the barrier would time out
        if (os.cpu_count() or 1) < 2:
            self.skipTest("one CPU: the DSOs are asked in turn")
        barrier = threading.Barrier(2, timeout=10)

        def a2l(path, addresses):
            barrier.wait()
            return {a: [("f", "/src/%s.c" % os.path.basename(path), 7)]
                    for a in addresses}
        sym = Symbolizer(a2l, self.open_elf)
        app, lib = raw(0x1000), raw(0x2000, dso=LIB)
        sym.resolve([app, lib])
        self.assertEqual(sym.frames(lib)[0].line, 7)
        self.assertEqual(sym.frames(app)[0].file,
                         "/src/%s.c" % os.path.basename(APP))

    def test_a_lookup_that_fails_is_raised_to_the_caller(self):
        def a2l(path, addresses):
            if path == LIB:
                raise ValueError("bad answer")
            return {}
        sym = Symbolizer(a2l, self.open_elf)
        with self.assertRaises(ValueError):
            sym.resolve([raw(0x1000), raw(0x2000, dso=LIB)])

    def test_no_addr2line_is_said_as_such(self):
        from allocsites_lib.analyze.symbolize import Addr2lineMissing

        def missing(path, addresses):
            raise Addr2lineMissing()
        sym = Symbolizer(missing, self.open_elf)
        r = raw(0x1000, "f", 0x10)
        self.assertEqual(sym.frames(r)[0].function, "f+0x10")
        self.assertEqual(sym.warnings, [
            "addr2line is not installed (Debian: binutils): frames shown "
            "as function+offset"])

    def test_duplicate_addresses_asked_once(self):
        a, b = raw(0x1000, "f", 0), raw(0x1000, "f_alias", 0)
        self.answer(APP, 0x1000, ("f", "/src/x.c", 5))
        self.sym.resolve([a, b, a])
        self.assertEqual(self.a2l.calls, [(APP, [0x1000])])
        self.assertEqual(self.sym.frames(a), self.sym.frames(b))

    def test_cache_second_resolve_makes_no_call(self):
        frames = [raw(0x1000), raw(0x1010)]
        self.answer(APP, 0x1000, ("f", "/src/x.c", 1))
        self.sym.resolve(frames)
        self.sym.resolve(frames)
        for r in frames:
            self.sym.frames(r)
        self.assertEqual(len(self.a2l.calls), 1)

    def test_expand_is_each_frames_inlines_in_one_list(self):
        a, b, c = raw(0x1000), raw(0x1010), raw(0x1020)
        self.answer(APP, 0x1000, ("inner", "/src/x.c", 1),
                    ("outer", "/src/x.c", 2))
        self.answer(APP, 0x1010, ("g", "/src/y.c", 3))
        self.answer(APP, 0x1020, ("h", "/src/y.c", 4))
        self.sym.resolve([a, b])   # c not yet: expand resolves it
        self.assertEqual(self.sym.expand((a, b, c)), [
            Frame("inner", "/src/x.c", 1, APP, True),
            Frame("outer", "/src/x.c", 2, APP, False),
            Frame("g", "/src/y.c", 3, APP, False),
            Frame("h", "/src/y.c", 4, APP, False)])
        self.assertEqual(self.sym.expand(()), [])
        self.assertEqual(len(self.a2l.calls), 2)

    def test_cache_covers_unresolved_frames(self):
        r = raw(0x1000)
        self.sym.resolve([r])
        self.sym.resolve([r])
        self.sym.frames(r)
        self.assertEqual(len(self.a2l.calls), 1)

    def test_new_frames_only_asked(self):
        self.sym.resolve([raw(0x1000)])
        self.sym.resolve([raw(0x1000), raw(0x1010)])
        self.assertEqual(self.a2l.calls, [(APP, [0x1000]), (APP, [0x1010])])

    def test_frames_resolves_on_demand(self):
        self.answer(APP, 0x1000, ("f", "/src/x.c", 9))
        self.assertEqual(self.sym.frames(raw(0x1000)), (Frame("f", "/src/x.c", 9, APP, False),))
        self.assertEqual(self.a2l.calls, [(APP, [0x1000])])

    def test_control_characters_in_a_binarys_names_escaped(self):
        # a newline in a symbol or a source path (a hostile binary) split
        # the table's row and the folded line
        self.answer(APP, 0x1000, ("f\nx", "/src/a\tb.c", 9))
        self.assertEqual(self.sym.frames(raw(0x1000)),
                         (Frame("f\\x0ax", "/src/a\\x09b.c", 9, APP,
                                False),))

    def test_elf_opened_once_per_dso(self):
        self.sym.resolve([raw(0x1000)])
        self.sym.resolve([raw(0x1010)])
        self.sym.elf(APP)
        self.assertEqual(self.open_elf.opened, [APP])

    def test_inline_chain_flags(self):
        self.answer(APP, 0x11be, ("inner", "/src/h.h", 3), ("mid", "/src/h.h", 9),
                    ("outer", "/src/c.c", 26))
        self.assertEqual(self.sym.frames(raw(0x11be, "outer", 0xe)), (
            Frame("inner", "/src/h.h", 3, APP, True),
            Frame("mid", "/src/h.h", 9, APP, True),
            Frame("outer", "/src/c.c", 26, APP, False)))

    def test_unknown_function_with_line_uses_perf_symbol(self):
        self.answer(APP, 0x1000, (None, "/src/x.c", 4))
        self.assertEqual(self.sym.frames(raw(0x1000, "perf_name", 0x20)),
                         (Frame("perf_name", "/src/x.c", 4, APP, False),))

    def test_unknown_function_without_any_symbol(self):
        self.answer(APP, 0x1000, (None, "/src/x.c", 4))
        self.assertEqual(self.sym.frames(RawFrame(APP, 0x1000, None, 0, None))[0].function,
                         "[unknown]")

    def test_outer_inline_without_file_gets_dso_and_line_0(self):
        self.answer(APP, 0x1000, ("inner", "/src/h.h", 3), ("outer", None, 17))
        self.assertEqual(self.sym.frames(raw(0x1000)), (
            Frame("inner", "/src/h.h", 3, APP, True),
            Frame("outer", APP, 0, APP, False)))

    def test_no_line_info_falls_back_to_symbol_offset(self):
        self.answer(APP, 0x1000, ("f", None, 0))
        self.assertEqual(self.sym.frames(raw(0x1000, "clone3", 0x2c)),
                         (Frame("clone3+0x2c", APP, 0, APP, False),))

    def test_no_answer_without_symbol_uses_dso_and_address(self):
        self.assertEqual(self.sym.frames(RawFrame(LIB, 0x1a2b, None, None, None)),
                         (Frame("libfoo.so.1+0x1a2b", LIB, 0, LIB, False),))

    def test_no_debug_info_warning_once(self):
        self.sym.resolve([raw(0x1000, "a", 0), raw(0x1010, "b", 0)])
        self.sym.resolve([raw(0x1020, "c", 0)])
        self.assertEqual(self.sym.warnings, [
            "no debug line info in %s: frames shown as function+offset" % APP])

    def test_partial_line_info_no_warning(self):
        self.answer(APP, 0x1000, ("main", "/src/m.c", 3))
        self.sym.resolve([raw(0x1000), raw(0x1010, "_start", 0x25)])
        self.assertEqual(self.sym.warnings, [])
        self.assertEqual(self.sym.frames(raw(0x1010, "_start", 0x25))[0].function, "_start+0x25")

    def test_no_symbol_frames_use_ip_and_never_call_addr2line(self):
        r = RawFrame(LIB, None, None, None, 0x7f3a_1234_5678)
        self.assertEqual(self.sym.frames(r),
                         (Frame("[unknown] libfoo.so.1+0x7f3a12345678", LIB, 0, LIB, False),))
        self.assertEqual(self.a2l.calls, [])
        self.assertEqual(self.sym.warnings,
                         ["no symbols for %s: frames shown as addresses" % LIB])

    def test_no_symbol_warning_only_for_a_dso_without_any(self):
        # a symbol-less pc in a file that has symbols (a trampoline, the
        # byte before a function) is not the file's lack of symbols,
        # whichever batch (prefetch, resolve) met which frame first
        self.sym.resolve([RawFrame(LIB, None, None, None, 0x7f00)])
        self.assertEqual(len(self.sym.warnings), 1)
        self.answer(APP, 0x1000, ("main", "/src/m.c", 3))
        self.sym.resolve([raw(0x1000, "main", 0)])
        self.sym.resolve([RawFrame(APP, None, None, None, 0x7f01)])
        self.assertEqual(self.sym.warnings,
                         ["no symbols for %s: frames shown as addresses" % LIB])

    def test_no_symbol_in_an_et_exec_file_named_by_its_link_address(self):
        # the reader sends a symbol-less pc in a file as its address in
        # perf's convention (a file offset for ET_EXEC): shown as the
        # address objdump and addr2line -e take
        exe = FakeElf(e_type=2, segments=[(0, 0x400000, 0x528),
                                          (0x1000, 0x401000, 0x1d1)])
        sym = Symbolizer(FakeAddr2line({}), fake_open_elf({APP: exe}))
        r = RawFrame(APP, 0x10a0, None, None, None)
        self.assertEqual(sym.frames(r)[0].function, "%s+0x4010a0"
                         % os.path.basename(APP))
        # no frame of the file has a symbol: said so, once (not also
        # "no debug line info")
        self.assertEqual(sym.warnings, [
            "no symbols for %s: frames shown as addresses" % APP])
        # a frame with a symbol: the file has symbols, not lines
        sym.resolve([RawFrame(APP, 0x1100, "main", 0x10, None)])
        self.assertEqual(sym.warnings, [
            "no debug line info in %s: frames shown as function+offset"
            % APP])

    def test_jit_frames_named_from_perf_map_without_elf_or_lines(self):
        jit = "/tmp/perf-4242.map"
        named = RawFrame(jit, 0x7f0000001005, "jit_thunk [lua]", 5, None)
        self.assertEqual(self.sym.frames(named), (Frame(
            "jit_thunk [lua]+0x5", jit, 0, jit, False),))
        # unnamed: the run-time address, alike from the native reader
        # (addr) and perf script (ip)
        for r in (RawFrame(jit, 0x7f0000002005, None, None, None),
                  RawFrame(jit, None, None, None, 0x7f0000002005)):
            self.assertEqual(self.sym.frames(r)[0].function,
                             "[unknown] perf-4242.map+0x7f0000002005")
        self.assertEqual(self.a2l.calls, [])
        self.assertEqual(self.sym.warnings, [])   # one frame was named

    def test_stack_end_markers_have_no_frames(self):
        for dso in (parse.OUTERMOST_DSO, parse.SWITCHED_DSO):
            self.assertEqual(self.sym.frames(parse.end_frame(dso)), ())
        self.assertEqual(self.sym.warnings, [])
        self.assertEqual(self.a2l.calls, [])
        self.assertEqual(self.sym.expand([
            RawFrame(APP, 0x1100, "main", 0x10, None),
            parse.end_frame(parse.OUTERMOST_DSO)]),
            list(self.sym.frames(RawFrame(APP, 0x1100, "main", 0x10, None))))

    def test_jit_map_naming_nothing_is_said(self):
        jit = "/tmp/perf-4242.map"
        self.sym.resolve([RawFrame(jit, None, None, None, 0x7f05)])
        self.assertEqual(self.sym.warnings, [
            "no names for JIT code: %s is missing or names none of its "
            "addresses; frames shown as addresses" % jit])

    def test_no_symbol_warning_once_per_dso(self):
        self.sym.resolve([RawFrame(LIB, None, None, None, ip) for ip in (1, 2, 3)])
        self.sym.resolve([RawFrame(LIB, None, None, None, 4)])
        self.sym.resolve([RawFrame(APP, None, None, None, 5)])
        self.assertEqual(len(self.sym.warnings), 2)

    def test_unreadable_dso(self):
        sym = Symbolizer(self.a2l, fake_open_elf({}))
        r = RawFrame("/gone/libbar.so", 0x500, "bar", 0x10, None)
        self.assertEqual(sym.frames(r), (Frame("bar+0x10", "/gone/libbar.so", 0,
                                               "/gone/libbar.so", False),))
        self.assertEqual(self.a2l.calls, [])
        self.assertEqual(sym.warnings, ["cannot read /gone/libbar.so: frames shown "
                                        "as function+offset"])

    def test_et_exec_addresses_translated_for_addr2line(self):
        exe = FakeElf(e_type=2, segments=[(0, 0x400000, 0x528), (0x1000, 0x401000, 0x1d1)])
        a2l = FakeAddr2line({(APP, 0x4011ae): [("caller", "/src/c.c", 26)]})
        sym = Symbolizer(a2l, fake_open_elf({APP: exe}))
        r = raw(0x11ae, "caller", 0xe)
        self.assertEqual(sym.frames(r), (Frame("caller", "/src/c.c", 26, APP, False),))
        self.assertEqual(a2l.calls, [(APP, [0x4011ae])])

    def test_et_dyn_addresses_translated_for_addr2line(self):
        # perf gives a PIE's or a library's addresses as file offsets too
        # (elf.to_link_address): lld puts text a page past its offset
        pie = FakeElf(e_type=3, segments=[(0x1000, 0x2000, 0x500)])
        a2l = FakeAddr2line()
        Symbolizer(a2l, fake_open_elf({APP: pie})).resolve([raw(0x1100)])
        self.assertEqual(a2l.calls, [(APP, [0x2100])])


class RunAddr2lineTest(unittest.TestCase):
    def test_no_addresses_no_process(self):
        self.assertEqual(symbolize.run_addr2line("/nonexistent", []), {})

    def test_missing_file_gives_empty(self):
        if not fixtures.have("addr2line"):
            self.skipTest("needs addr2line")
        self.assertEqual(symbolize.run_addr2line("/nonexistent/file", [0x10]), {})


class RealBinaryTest(unittest.TestCase):
    """addr2line on a program compiled here; expected lines come from the source."""

    @classmethod
    def setUpClass(cls):
        fixtures.require_toolchain()
        cls.pie, cls.exe, cls.nodebug = fixtures.build_programs(
            dict(flags=["-fPIE", "-pie"]),
            dict(flags=["-fno-pie", "-no-pie"], name="prog_exec"),
            dict(debug=False, name="prog_nodebug"))

    @classmethod
    def tearDownClass(cls):
        for prog in (cls.pie, cls.exe, cls.nodebug):
            prog.cleanup()

    def expected_caller_frames(self, prog, dso):
        return (Frame("helper", prog.src, prog.line("HELPER_CALL"), dso, True),
                Frame("caller", prog.src, prog.line("CALLER_CALL"), dso, False))

    def test_run_addr2line_inline_chain(self):
        prog = self.pie
        [call] = prog.calls("caller", "rt_alloc")
        self.assertEqual(symbolize.run_addr2line(prog.path, [call]), {call: [
            ("helper", prog.src, prog.line("HELPER_CALL")),
            ("caller", prog.src, prog.line("CALLER_CALL"))]})

    def test_symbolizer_pie_call_site_through_inline(self):
        prog = self.pie
        [call] = prog.calls("caller", "rt_alloc")
        start = prog.symbols()["caller"][0]
        r = RawFrame(prog.path, call, "caller", call - start, None)
        sym = Symbolizer()
        self.assertEqual(sym.frames(r), self.expected_caller_frames(prog, prog.path))
        self.assertEqual(sym.warnings, [])

    def test_symbolizer_batch_of_real_frames(self):
        prog = self.pie
        [c1] = prog.calls("caller", "rt_alloc")
        [c2] = prog.calls("direct", "rt_alloc")
        [m1] = prog.calls("main", "caller")
        [m2] = prog.calls("main", "direct")
        raws = [RawFrame(prog.path, a, None, None, None) for a in (c1, c2, m1, m2)]
        sym = Symbolizer()
        sym.resolve(raws)
        got = [[(f.function, f.line, f.inlined) for f in sym.frames(r)] for r in raws]
        self.assertEqual(got, [
            [("helper", prog.line("HELPER_CALL"), True), ("caller", prog.line("CALLER_CALL"), False)],
            [("direct", prog.line("DIRECT_CALL"), False)],
            [("main", prog.line("MAIN_CALLS_CALLER"), False)],
            [("main", prog.line("MAIN_CALLS_DIRECT"), False)]])

    def test_symbolizer_et_exec_file_offset(self):
        prog = self.exe
        [call] = prog.calls("caller", "rt_alloc")
        offset = prog.file_offset(call)
        self.assertNotEqual(offset, call)
        r = RawFrame(prog.path, offset, "caller", 0, None)
        self.assertEqual(Symbolizer().frames(r), self.expected_caller_frames(prog, prog.path))

    def test_no_debug_info_falls_back_and_warns(self):
        prog = self.nodebug
        [call] = prog.calls("caller", "rt_alloc")
        start = prog.symbols()["caller"][0]
        r = RawFrame(prog.path, call, "caller", call - start, None)
        sym = Symbolizer()
        self.assertEqual(sym.frames(r), (Frame("caller+0x%x" % (call - start), prog.path, 0,
                                               prog.path, False),))
        self.assertEqual(sym.warnings, ["no debug line info in %s: frames shown as "
                                        "function+offset" % prog.path])


if __name__ == "__main__":
    unittest.main()
