import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import io
import json
import re
import tempfile
import xml.etree.ElementTree as ET

from allocsites_lib.render import csvout, jsonout, table, timeline
from allocsites_lib.analyze import assemble, fold, pprofdata, stale, wrappers
from allocsites_lib.render import outputs
from allocsites_lib.cli import options
from allocsites_lib.errors import UsageError
from allocsites_lib.read import elf as elfmod
from allocsites_lib.analyze.fold import Stack
from allocsites_lib.read import parse
from allocsites_lib.read.tally import Tally
from allocsites_lib.read.parse import Event, RawFrame
from allocsites_lib.analyze.symbolize import Frame, Symbolizer

import fixtures
from fixtures import exit_event, APP, FakeAddr2line, FakeElf, alloc, fake_open_elf, free, rt_tags_blob

LIB = "/usr/lib/x86_64-linux-gnu/libc.so.6"
GONE = "/nonexistent/libgone.so"

# APP's frames and what addr2line says about them.
PROBE = RawFrame(APP, 0x1000, "rt_alloc", 0x10, None)
PARSE = RawFrame(APP, 0x2000, "parse_expr", 0x1e, None)
XMALLOC = RawFrame(APP, 0x2100, "xmalloc", 0x9, None)
LEX = RawFrame(APP, 0x2200, "lex", 0x31, None)
MAIN10 = RawFrame(APP, 0x3000, "main", 0x20, None)
MAIN12 = RawFrame(APP, 0x3010, "main", 0x30, None)
ROOT = RawFrame(LIB, 0x27200, "__libc_start_call_main", 0x7a, None)
ANSWERS = {
    (APP, 0x1000): [("rt_alloc", "/src/rt.c", 14)],
    (APP, 0x2000): [("parse_expr", "/src/parser.c", 120)],
    (APP, 0x2100): [("xmalloc", "/src/util.c", 30)],
    (APP, 0x2200): [("lex", "/src/lexer.c", 40)],
    (APP, 0x3000): [("main", "/src/main.c", 10)],
    (APP, 0x3010): [("main", "/src/main.c", 12)],
}


def symbolizer(answers=ANSWERS):
    elves = {APP: FakeElf(blobs={".rt_tags": rt_tags_blob([(1, "ast"), (2, "tokens")])}),
             LIB: FakeElf(blobs={".rt_tags": rt_tags_blob([(1, "lib_one"), (9, "lib_nine")])})}
    return Symbolizer(FakeAddr2line(answers), fake_open_elf(elves))


def make_tally():
    """parse_expr: 3 allocs, 250 B (ast 200, lib_nine 50), reaching libc's root;
    lex (through xmalloc): 4 allocs, 40 B (tokens), stack cut short at main;
    one allocation without call chain (8 B, tokens); one malformed event;
    two frees of 60 B."""
    t = Tally()
    whole = [PROBE, PARSE, MAIN10, ROOT]
    cut = [PROBE, XMALLOC, LEX, MAIN12]
    allocs = ([alloc(whole, 100, tag=1)] * 2 + [alloc(whole, 50, tag=9)]
              + [alloc(cut, 10, tag=2)] * 4 + [alloc([], 8, tag=2)])
    # distinct pointers; the frees free the first two allocations
    for i, e in enumerate(allocs):
        t.add(e._replace(ptr=0x1000 + 0x100 * i))
    for i in range(2):
        t.add(free(60)._replace(ptr=0x1000 + 0x100 * i))
    t.add(None)
    return t


class CollectTagNamesTest(unittest.TestCase):
    def test_leaf_dso_wins(self):
        t = Tally()
        t.add(alloc([PROBE, ROOT], 1))
        self.assertEqual(assemble.collect_tag_names(t, symbolizer()),
                         {1: "ast", 2: "tokens", 9: "lib_nine"})

    def test_leaf_in_library_wins(self):
        t = Tally()
        t.add(alloc([RawFrame(LIB, 0x500, "lib_alloc", 0, None), PARSE], 1))
        self.assertEqual(assemble.collect_tag_names(t, symbolizer()),
                         {1: "lib_one", 2: "tokens", 9: "lib_nine"})

    def test_leaf_wins_in_sampled_mode_too(self):
        # Only rt:sample events: the leaf rule must see their stacks.
        # The same stacks as the two exact-mode tests above.
        for stack, want in (((PROBE, ROOT),
                             {1: "ast", 2: "tokens", 9: "lib_nine"}),
                            ((RawFrame(LIB, 0x500, "lib_alloc", 0, None), PARSE),
                             {1: "lib_one", 2: "tokens", 9: "lib_nine"})):
            with self.subTest(leaf=stack[0].dso):
                t = Tally()
                t.add(Event("sample", 1, 1, 64, 1, 4096, stack, 0x10))
                self.assertEqual(assemble.collect_tag_names(t, symbolizer()),
                                 want)

    def test_unreadable_dso_ignored(self):
        t = Tally()
        t.add(alloc([RawFrame(GONE, 0x10, "f", 0, None)], 1))
        self.assertEqual(assemble.collect_tag_names(t, symbolizer()), {})

    def test_empty_tally(self):
        self.assertEqual(assemble.collect_tag_names(Tally(), symbolizer()), {})


class BuildReportTest(unittest.TestCase):
    def build(self, argv=("--skip", "^xmalloc$"), lost=0, reason=None):
        return assemble.build(make_tally(), options.parse(list(argv)),
                              symbolizer(), lost, reason)

    def test_sites(self):
        r = self.build()
        self.assertEqual(
            [(s.frame.function, s.frame.file, s.frame.line, s.count, s.bytes,
              dict(s.tag_bytes)) for s in r.profile.sites],
            [("parse_expr", "/src/parser.c", 120, 3, 250, {"ast": 200, "lib_nine": 50}),
             ("lex", "/src/lexer.c", 40, 4, 40, {"tokens": 40}),
             ("[no caller]", "", 0, 1, 8, {"tokens": 8})])
        self.assertEqual((r.profile.count, r.profile.bytes, r.profile.truncated), (8, 298, 4))

    def test_system_wide_counts_only_processes_that_sent_events(self):
        # record -a: perf names every process of the machine (a COMM of
        # each at the start); those that sent no rt event cannot have
        # allocated unseen. Process 1 allocates 3 blocks and exits
        t = Tally()
        for i in range(3):
            t.add(alloc([PROBE, PARSE, MAIN10, ROOT], 10)._replace(
                ptr=0x1000 + 0x100 * i))
        t.add(exit_event(3))
        opts = options.parse([])

        def verdict(system_wide, running=(1, 77, 78)):
            return assemble.build(t, opts, symbolizer(), 0, None,
                                  running=running,
                                  system_wide=system_wide).verdict
        per_task = verdict(False)
        self.assertIsNone(per_task.complete)
        self.assertRegex(per_task.reason, r"^processes 77, 78 still running")
        self.assertIs(verdict(True).complete, True, verdict(True).reason)
        # a process that allocated and never sent rt:exit still counts
        t.add(alloc([PROBE, PARSE], 16, pid=5))
        got = verdict(True, (1, 5, 77))
        self.assertIsNone(got.complete)
        self.assertIn("1 events of 1 process without an rt:exit", got.reason)
        self.assertNotIn("77", got.reason)

    def test_frees_without_any_allocation_event(self):
        # a recording made by hand without -e sdt_rt:alloc: frees only
        said = "the recording has frees but no allocation event: was " \
            "sdt_rt:alloc recorded?"
        t = Tally()
        for i in range(3):
            t.add(free(60)._replace(ptr=0x1000 + 0x100 * i))
        t.add(None)
        got = assemble.build(t, options.parse([]), symbolizer(), 0, None)
        self.assertTrue(any(w.startswith(said) for w in got.warnings),
                        got.warnings)
        # one allocation: not said
        self.assertFalse(any(w.startswith(said)
                             for w in self.build().warnings))

    def test_report_fields(self):
        r = self.build(lost=5)
        self.assertEqual((r.mode, r.events, r.malformed, r.lost, r.lost_reason, r.frees),
                         ("exact", {"alloc": 8, "free": 2}, 1, 5, None, (2, 120)))
        self.assertEqual(r.filters, {"tag": None, "min_size": 0, "depth": None,
                                     "top": None, "skip": ["^xmalloc$"],
                                     "skip_declared": []})

    def test_warnings_in_order(self):
        self.assertEqual(self.build().warnings, [
            "no debug line info in %s: frames shown as function+offset" % LIB,
            "1 allocations have no call chain: record with --unwind dwarf "
            "(the default) or --unwind fp",
            "4 allocations have stacks cut short (not reaching main/_start): raise "
            "--stack-size (8192 by default; 16384 reaches main for 99% of a Lua "
            "interpreter's stacks)",
            "1 rt events could not be decoded (missing probe arguments?)"])

    def test_no_warnings_when_clean(self):
        t = Tally()
        t.add(alloc([PROBE, PARSE, MAIN10, RawFrame(APP, 0x4000, "_start", 0x25, None)], 4))
        r = assemble.build(t, options.parse([]), symbolizer(), 0, None)
        self.assertEqual(r.warnings, [])
        self.assertEqual(r.profile.truncated, 0)

    def test_stack_ends_the_reader_gave(self):
        # outermost: whole, no warning; switched: its own warning, not
        # the advice to raise --stack-size; neither end is a frame, a
        # DSO or a pprof Location
        t = Tally()
        outermost = parse.end_frame(parse.OUTERMOST_DSO)
        switched = parse.end_frame(parse.SWITCHED_DSO)
        t.add(alloc([PROBE, PARSE, MAIN10, outermost], 4))
        t.add(alloc([PROBE, LEX, switched], 4)._replace(ptr=0x20))
        t.add(alloc([PROBE, LEX, switched], 4)._replace(ptr=0x30))
        self.assertEqual(t.dsos(), {APP})
        r = assemble.build(t, options.parse([]), symbolizer(), 0, None)
        # dsos is remembered until a key is added
        t.add(alloc([PROBE, ROOT], 4)._replace(ptr=0x40))
        self.assertEqual(t.dsos(), {APP, LIB})
        self.assertEqual(r.warnings, [
            "2 allocations have stacks that go on where no stack copy "
            "reaches (a signal handler on an alternate stack, a coroutine "
            "or fiber, or a frame pointer that is not one): a larger "
            "--stack-size does not help; the frames from the allocator to "
            "the switch are complete"])
        self.assertEqual((r.profile.truncated, r.profile.truncated_switched),
                         (2, 2))
        self.assertEqual(
            sorted([f.function for f in s.frames] for s in r.profile.stacks),
            [["lex", "[stack switched]"], ["parse_expr", "main"]])
        data = pprofdata.Locations(symbolizer(), None)
        ids = data.stack_ids((PROBE, LEX, switched))
        self.assertEqual(len(ids), 2)
        self.assertEqual(set(data.mappings), {APP})

    def test_cut_short_at_the_largest_copy_is_not_told_to_raise_it(self):
        t = Tally()
        t.add(alloc([PROBE, PARSE, MAIN10], 4))
        for size, advice in ((8192, "raise --stack-size"),
                             (65520, "raise --stack-size"),
                             (65528, "deeper than the largest stack copy "
                              "perf takes (65528 bytes, this recording's "
                              "--stack-size); record with --unwind fp")):
            r = assemble.build(t, options.parse([]), symbolizer(), 0, None,
                               unwind="dwarf", stack_size=size)
            self.assertEqual(len(r.warnings), 1, r.warnings)
            self.assertIn("1 allocations have stacks cut short", r.warnings[0])
            self.assertIn(advice, r.warnings[0])

    def test_cut_short_with_registers_left_out_says_so(self):
        # perf record --user-regs=ip,sp: not the copy's size
        t = Tally()
        t.add(alloc([PROBE, PARSE, MAIN10], 4))
        r = assemble.build(t, options.parse([]), symbolizer(), 0, None,
                           unwind="dwarf", stack_size=8192,
                           user_regs="ip,sp")
        self.assertEqual(r.warnings, [
            "1 allocations have stacks cut short (not reaching main/_start): "
            "the recording has only the registers ip,sp (perf record "
            "--user-regs), and a stack stops at a frame whose caller needs "
            "another to be found; record without --user-regs"])

    def test_duplicates_counted_by_kind_without_a_warning(self):
        # perf 6.1 writes a record twice now and then: dropped exactly,
        # counted in JSON, no warning on a recording that is whole.
        t = Tally()
        chain = [PROBE, PARSE, MAIN10, RawFrame(APP, 0x4000, "_start", 0x25, None)]
        a = alloc(chain, 4)._replace(tid=7, time=100, ptr=0x10)
        f = free(4)._replace(tid=7, time=200, ptr=0x10)
        for e in (a, a, f, f, f):
            t.add(e)
        r = assemble.build(t, options.parse([]), symbolizer(), 0, None)
        self.assertEqual(r.warnings, [])
        self.assertEqual((r.duplicates, r.duplicates_by_kind, r.events),
                         (3, {"alloc": 1, "free": 2}, {"alloc": 1, "free": 1}))

    def test_without_skip_wrapper_is_site(self):
        r = self.build(argv=())
        self.assertEqual([s.frame.function for s in r.profile.sites],
                         ["parse_expr", "xmalloc", "[no caller]"])

    def test_tag_filter_by_name(self):
        r = self.build(argv=("--tag", "ast"))
        self.assertEqual((r.profile.count, r.profile.bytes), (2, 200))
        self.assertEqual(r.filters["tag"], ["ast"])

    def test_tag_filter_by_number_and_comma(self):
        r = self.build(argv=("--skip", "^xmalloc$", "--tag", "9,2"))
        self.assertEqual([(s.frame.function, s.bytes) for s in r.profile.sites],
                         [("parse_expr", 50), ("lex", 40), ("[no caller]", 8)])

    def test_depth(self):
        r = self.build(argv=("--skip", "^xmalloc$", "--depth", "1"))
        self.assertEqual([(st.frames[0].function, len(st.frames)) for st in r.profile.stacks],
                         [("parse_expr", 1), ("lex", 1), ("[no caller]", 1)])

    def test_one_addr2line_run_per_dso(self):
        a2l = FakeAddr2line(ANSWERS)
        sym = Symbolizer(a2l, fake_open_elf({APP: FakeElf(), LIB: FakeElf()}))
        assemble.build(make_tally(), options.parse([]), sym, 0, None)
        self.assertEqual(sorted(p for p, _ in a2l.calls), [APP, LIB])


class WriteOutputsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.paths = {k: os.path.join(self.tmp.name, "out." + k)
                      for k in ("json", "csv", "folded", "svg")}

    def run_outputs(self, argv, lost=0, reason=None):
        opts = options.parse(argv)
        report = assemble.build(make_tally(), opts, symbolizer(), lost, reason)
        out, err = io.StringIO(), io.StringIO()
        written = outputs.write_outputs(report, opts, out, err)
        return report, written, out.getvalue(), err.getvalue()

    def all_files(self, extra=()):
        argv = ["--skip", "^xmalloc$"]
        for kind, path in self.paths.items():
            argv += ["--" + kind, path]
        return argv + list(extra)

    def read(self, kind):
        with open(self.paths[kind], encoding="utf-8") as f:
            return f.read()

    def test_a_file_to_standard_output(self):
        # --folded - | flamegraph.pl: the file on stdout, without the
        # table; the other files listed on stderr; no file named "-"
        argv = ["--skip", "^xmalloc$", "--json", self.paths["json"]]
        _, _, alone, _ = self.run_outputs(argv + ["--folded",
                                                  self.paths["folded"]])
        report, written, out, err = self.run_outputs(argv + ["--folded",
                                                             "-"])
        self.assertEqual(out, self.read("folded"))
        self.assertNotIn("site", out)
        self.assertIn("json: %s\n" % self.paths["json"], err)
        self.assertEqual(written, [("json", self.paths["json"])])
        self.assertFalse(os.path.exists("-"))
        self.assertIn("site", alone)   # without "-": the table
        with self.assertRaises(UsageError) as cm:
            options.check_outputs(options.parse(["--folded", "-",
                                                 "--csv", "-"]))
        self.assertIn("only one output can go to standard output",
                      str(cm.exception))

    def test_every_file_written_and_listed(self):
        report, written, out, err = self.run_outputs(self.all_files())
        self.assertEqual(written, [(k, self.paths[k]) for k in ("json", "csv", "folded", "svg")])
        self.assertEqual(sorted(os.listdir(self.tmp.name)),
                         ["out.csv", "out.folded", "out.json", "out.svg"])
        self.assertEqual(out, table.render_table(report, 20) + "".join(
            "%s: %s\n" % (k, self.paths[k]) for k in ("json", "csv", "folded", "svg")))

    def test_json_file(self):
        report, _, _, _ = self.run_outputs(self.all_files())
        text = self.read("json")
        self.assertEqual(text, jsonout.render_json(report))
        doc = json.loads(text)
        self.assertEqual((doc["version"], doc["mode"], doc["lost"], doc["totals"]),
                         (2, "exact", 0, {"count": 8, "bytes": 298, "frees": 2,
                                          "freed_bytes": 120}))
        self.assertEqual([(s["function"], s["file"], s["line"], s["count"], s["bytes"], s["tags"])
                          for s in doc["sites"]],
                         [("parse_expr", "/src/parser.c", 120, 3, 250, {"ast": 200, "lib_nine": 50}),
                          ("lex", "/src/lexer.c", 40, 4, 40, {"tokens": 40}),
                          ("[no caller]", "", 0, 1, 8, {"tokens": 8})])
        self.assertEqual(doc["truncated_allocations"], 4)
        self.assertEqual(doc["events"], {"alloc": 8, "free": 2, "sample": 0,
                                         "malformed": 1, "duplicates": 0,
                                         "duplicates_by_kind": {}})

    def test_folded_file(self):
        self.run_outputs(self.all_files())
        self.assertEqual(self.read("folded"), (
            "[no caller] 8\n"
            "[stack cut short];main (main.c:12);lex (lexer.c:40) 40\n"
            "__libc_start_call_main+0x7a;main (main.c:10);parse_expr (parser.c:120) 250\n"))

    def test_folded_by_count(self):
        self.run_outputs(self.all_files(["--weight", "count"]))
        self.assertEqual(self.read("folded").splitlines(), [
            "[no caller] 1",
            "[stack cut short];main (main.c:12);lex (lexer.c:40) 4",
            "__libc_start_call_main+0x7a;main (main.c:10);parse_expr (parser.c:120) 3"])

    def test_csv_file(self):
        report, _, _, _ = self.run_outputs(self.all_files())
        text = self.read("csv")
        self.assertEqual(text, csvout.render_csv(report))
        self.assertEqual(text.splitlines()[1:], [
            # make_tally frees parse_expr's first two blocks after all
            # eight allocations: everything is live at the peak.
            "1,parse_expr,/src/parser.c,120,/usr/bin/app,3,250,83.8926,83.33,ast=200;lib_nine=50,250,3,50,1,0",
            "2,lex,/src/lexer.c,40,/usr/bin/app,4,40,13.4228,10.00,tokens=40,40,4,40,4,0",
            "3,[no caller],,0,,1,8,2.6846,8.00,tokens=8,8,1,8,1,0"])

    def test_svg_file(self):
        report, _, _, _ = self.run_outputs(self.all_files())
        text = self.read("svg")
        root = ET.fromstring(text)
        self.assertEqual(root.tag, "{http://www.w3.org/2000/svg}svg")
        self.assertIn("allocsites: bytes by call stack", text)
        self.assertIn("8 allocations, 298 bytes, peak 298 B, leaked 98 B, lost: 0", text)
        names = {t.text.split("\n")[0] for t in root.iter("{http://www.w3.org/2000/svg}title")}
        self.assertTrue({"parse_expr (parser.c:120)", "lex (lexer.c:40)", "[no caller]",
                         "__libc_start_call_main+0x7a"} <= names, names)

    def test_svg_title_option(self):
        self.run_outputs(self.all_files(["--title", "My Title", "--weight", "count"]))
        text = self.read("svg")
        self.assertIn("My Title", text)
        self.assertNotIn("allocsites: count by call stack", text)

    def test_warnings_and_lossy_line_on_err(self):
        report, _, _, err = self.run_outputs(self.all_files())
        self.assertEqual(err, "".join("allocsites: warning: %s\n" % w for w in report.warnings)
                         + "allocsites: warning: this profile is incomplete (1 events "
                           "could not be decoded); counts and bytes are lower bounds\n")
        self.assertEqual(len(err.splitlines()), 5)

    def test_unknown_loss_on_err_and_table(self):
        _, _, out, err = self.run_outputs([], lost=None, reason="input is a pipe")
        self.assertTrue(err.endswith("allocsites: warning: this profile is incomplete (1 "
                                     "events could not be decoded); counts and bytes are "
                                     "lower bounds\n"), err)
        self.assertIn("lost: unknown (input is a pipe)", out)

    def test_verdict_from_the_end_to_end_count(self):
        t = make_tally()              # 8 allocations and 2 frees from process 1
        t.malformed = 0
        for fired, complete, line in (
                ((8, 2, 0), True, "complete: yes (checked: 10 events received, as many "
                                  "as the program fired)"),
                ((9, 2, 0), False, "WARNING: this profile is incomplete: 1 events missing: "
                                   "the program fired 11, the recording has 10"),
                (None, None, "complete: not checked (no rt:exit event (the program did "
                             "not exit normally, or was built with an older "
                             "rt_probes.h))")):
            t.fired = {1: list(fired)} if fired else {}
            report = assemble.build(t, options.parse([]), symbolizer(), 0, None)
            self.assertIs(report.verdict.complete, complete)
            self.assertEqual(table.render_table(report).splitlines()[-1], line)

    def test_read_errors_and_interruption_make_it_incomplete(self):
        t = make_tally()
        t.add(exit_event(8, 2))
        t.malformed = 0
        report = assemble.build(t, options.parse([]), symbolizer(), 0, None,
                                read_errors=["failed to process type: 81"])
        self.assertEqual(report.verdict.reason, "perf could not read the whole recording: "
                                                "failed to process type: 81")
        report = assemble.build(t, options.parse([]), symbolizer(), 0, None,
                                interrupted=True)
        self.assertIs(report.verdict.complete, False)

    def test_table_only(self):
        report, written, out, _ = self.run_outputs([])
        self.assertEqual(written, [])
        self.assertEqual(out, table.render_table(report, 20))
        self.assertEqual(os.listdir(self.tmp.name), [])

    def test_top_applies_to_table_json_csv(self):
        self.run_outputs(self.all_files(["--top", "1"]))
        self.assertEqual(len(json.loads(self.read("json"))["sites"]), 1)
        self.assertEqual(len(self.read("csv").splitlines()), 2)
        # folded stacks are never cut by --top
        self.assertEqual(len(self.read("folded").splitlines()), 3)

    def test_clean_report_no_err(self):
        t = Tally()
        t.add(alloc([PROBE, PARSE, MAIN10, RawFrame(APP, 0x4000, "_start", 0x25, None)], 4))
        t.add(exit_event(1))
        opts = options.parse([])
        report = assemble.build(t, opts, symbolizer(), 0, None)
        out, err = io.StringIO(), io.StringIO()
        outputs.write_outputs(report, opts, out, err)
        self.assertEqual(err.getvalue(), "")
        self.assertIn("total: 4 bytes (4 B) in 1 allocations at 1 site\n", out.getvalue())


class MissingBinariesTest(unittest.TestCase):
    def test_only_files_the_recording_saw_and_that_are_gone(self):
        with tempfile.TemporaryDirectory() as tmp:
            here = os.path.join(tmp, "here")
            open(here, "w").close()
            gone = os.path.join(tmp, "gone")
            dsos = {here, gone, "/fake/not/recorded", "[vdso]"}
            ids = {here: {"ab"}, gone: {"cd"}}
            self.assertEqual(stale.missing_binaries(dsos, ids), [gone])
            # without build-ids (perf record without them): none known
            self.assertEqual(stale.missing_binaries(dsos, None), [])
            self.assertEqual(stale.gone_warning(gone), "%s is gone (deleted "
                             "or moved since the recording): frames shown "
                             "as addresses" % gone)


class WrapperSuspectsTest(unittest.TestCase):
    """A big site reached from many functions gets the --skip advice."""

    def profile(self, callers, share):
        wrap = Frame("xmalloc", "/src/x.c", 5, "/bin/p", False)
        other = Frame("lex", "/src/l.c", 9, "/bin/p", False)
        stacks = [Stack((wrap, Frame("f%d" % i, "/src/f.c", i, "/bin/p",
                                     False)), 1, 100, {})
                  for i in range(callers)]
        rest = int(100 * callers * (1 - share) / share)
        stacks.append(Stack((other, Frame("main", "/src/m.c", 1, "/bin/p",
                                          False)), 1, rest, {}))
        site_w, site_o = fold.Site(wrap), fold.Site(other)
        site_w.bytes, site_o.bytes = 100 * callers, rest
        sites = sorted([site_w, site_o], key=lambda s: -s.bytes)
        return fold.Profile(sites, stacks, callers + 1, 100 * callers + rest,
                            0)

    def test_flagged(self):
        [(site, n, chain)] = wrappers.wrapper_suspects(self.profile(10, 0.5))
        self.assertEqual((site.frame.function, n, chain),
                         ("xmalloc", 10, ["xmalloc"]))

    def test_rust_global_allocator_gets_its_skip(self):
        # the GlobalAlloc impl is the site of nearly everything a Rust
        # program allocates; its path fans out a few callers at a time,
        # so only its name tells (docs/probes.md, "A Rust program")
        def site_of(name, nbytes):
            site = fold.Site(Frame(name, "/src/main.rs", 6, "/bin/p", False))
            site.bytes = nbytes
            return site
        glob = "<main::Probed as core::alloc::global::GlobalAlloc>::alloc"
        prof = fold.Profile([site_of(glob, 900), site_of("main::recurse", 100)],
                            [], 2, 1000, 0)
        advice = wrappers.rust_allocator_advice(prof)
        self.assertTrue(advice.startswith(glob + " is Rust's global allocator: "
                                          "--skip '^(<[^>]+ as core::alloc"))
        skip = re.compile(wrappers.RUST_SKIP)
        for name in (glob, "__rustc::__rust_alloc", "alloc::alloc::alloc",
                     "<alloc::alloc::Global>::alloc_impl",
                     "<alloc::raw_vec::RawVecInner>::finish_grow",
                     "core::alloc::global::GlobalAlloc::realloc"):
            self.assertTrue(skip.search(name), name)
        for name in ("main::recurse", "alloc::vec::Vec<T,A>::push_mut",
                     "hashbrown::raw::alloc::inner::do_alloc"):
            self.assertFalse(skip.search(name), name)
        # a small share, or another allocator: nothing said
        prof.sites[0].bytes = 100
        prof.sites.reverse()
        prof.sites[0].bytes = 900
        self.assertIsNone(wrappers.rust_allocator_advice(prof))

    def chain_profile(self, depth, callers=10):
        """xmalloc <- w1 <- ... <- w(depth-1) (each called from the next
        only) <- f0..f(callers-1) <- main."""
        def fr(name):
            return Frame(name, "/src/w.c", 1, "/bin/p", False)
        wrappers = [fr("xmalloc")] + [fr("w%d" % i) for i in range(1, depth)]
        stacks = [Stack(tuple(wrappers) + (fr("f%d" % i), fr("main")), 1, 100,
                        {}) for i in range(callers)]
        site = fold.Site(wrappers[0])
        site.bytes = 100 * callers
        return fold.Profile([site], stacks, callers, 100 * callers, 0)

    def test_a_chain_of_wrappers_is_one_skip_line(self):
        [(site, n, chain)] = wrappers.wrapper_suspects(self.chain_profile(18))
        self.assertEqual((n, chain),
                         (10, ["xmalloc"] + ["w%d" % i for i in range(1, 18)]))
        self.assertEqual(
            wrappers.wrapper_advice(site, n, chain[:3]),
            "xmalloc is reached only through w1 -> w2, which is reached from "
            "10 different functions: if these 3 wrap the allocator, --skip "
            "'^(xmalloc|w1|w2)$' charges their callers (or declare them once "
            "with RT_SKIP in the source)")
        # a chain that ends in few callers, or at main, is no wrapper chain
        self.assertEqual(wrappers.wrapper_suspects(self.chain_profile(3, 4)),
                         [])
        self.assertEqual(wrappers.wrapper_suspects(
            self.chain_profile(3, 1)), [])

    def test_few_callers_or_small_share_not_flagged(self):
        self.assertEqual(wrappers.wrapper_suspects(self.profile(7, 0.9)), [])
        self.assertEqual(wrappers.wrapper_suspects(self.profile(20, 0.1)), [])


class StaleBinariesTest(unittest.TestCase):
    """A DSO modified after the recording is named (its lines would lie)."""

    def test_only_newer_files_are_stale(self):
        with tempfile.TemporaryDirectory() as tmp:
            paths = {n: os.path.join(tmp, n) for n in ("data", "old", "new")}
            for p in paths.values():
                open(p, "w").close()
            os.utime(paths["old"], (1000, 1000))
            os.utime(paths["data"], (2000, 2000))
            os.utime(paths["new"], (3000, 3000))
            missing = os.path.join(tmp, "gone")
            self.assertEqual(stale.stale_binaries(
                [paths["old"], paths["new"], missing], paths["data"]),
                [paths["new"]])

    def test_build_id_decides_where_the_recording_has_one(self):
        # An old time does not hide a different build-id, and a new time
        # does not accuse the same one.
        sh = os.path.realpath("/bin/sh")
        real = elfmod.build_id(elfmod.open_elf(sh))
        self.assertTrue(real)
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            open(data, "w").close()
            os.utime(data, (1, 1))        # older than /bin/sh
            self.assertEqual(stale.stale_binaries([sh], data), [sh])
            self.assertEqual(stale.stale_binaries(
                [sh], data, {sh: {real}}), [])
            os.utime(data, None)          # newer than /bin/sh
            self.assertEqual(stale.stale_binaries([sh], data), [])
            self.assertEqual(stale.stale_binaries(
                [sh], data, {sh: {"00" * 20}}), [sh])

    def test_a_file_no_longer_elf_is_stale_a_gone_one_is_not(self):
        # truncated or overwritten since the recording: not the recorded
        # build-id, whatever its time; gone: missing_binaries says it
        with tempfile.TemporaryDirectory() as tmp:
            data, dso = os.path.join(tmp, "data"), os.path.join(tmp, "prog")
            open(data, "w").close()
            with open(dso, "wb") as f:
                f.write(b"\x7fELF\x02\x01\x01" + b"\0" * 50)
            os.utime(dso, (1, 1))        # older than the recording
            ids = {dso: {"ab" * 20}}
            self.assertEqual(stale.stale_binaries([dso], data, ids), [dso])
            os.unlink(dso)
            self.assertEqual(stale.stale_binaries([dso], data, ids), [])
            self.assertEqual(stale.missing_binaries([dso], ids), [dso])

    def test_missing_data_file_names_nothing(self):
        self.assertEqual(stale.stale_binaries(["/bin/sh"], "/no/such.data"), [])


class RealBinaryPipelineTest(unittest.TestCase):
    """assemble.build + write_outputs over a program compiled here, with the
    real Symbolizer (addr2line) and real ELF reading."""

    @classmethod
    def setUpClass(cls):
        fixtures.require_toolchain()
        cls.progs = fixtures.build_programs(
            dict(flags=["-fPIE", "-pie"]),
            dict(flags=["-fno-pie", "-no-pie"], name="prog_exec"))

    @classmethod
    def tearDownClass(cls):
        for prog in cls.progs:
            prog.cleanup()

    def tally(self, prog, to_perf_address):
        """Stacks as perf would deliver them: probe pc, call instructions."""
        image = elfmod.open_elf(prog.path)
        [(_, _, pc, _, _)] = [p for p in elfmod.stapsdt_probes(image)
                              if p[1] == "alloc"]
        syms = prog.symbols()

        def frame(addr, name):
            return RawFrame(prog.path, to_perf_address(addr), name,
                            addr - syms[name][0], None)
        [c1] = prog.calls("caller", "rt_alloc")
        [c2] = prog.calls("direct", "rt_alloc")
        [m1] = prog.calls("main", "caller")
        [m2] = prog.calls("main", "direct")
        root = RawFrame(GONE, 0x27200, "__libc_start_call_main", 0x7a, None)
        probe = frame(pc, "rt_alloc")
        t = Tally()
        for _ in range(3):
            t.add(alloc([probe, frame(c1, "caller"), frame(m1, "main"), root], 100, tag=2))
        for _ in range(2):
            t.add(alloc([probe, frame(c2, "direct"), frame(m2, "main"), root], 50, tag=1))
        t.add(alloc([probe, frame(c2, "direct"), frame(m2, "main"), root], 1, tag=4294967295))
        t.add(exit_event(6))
        return t

    def check(self, prog, to_perf_address):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        paths = {k: os.path.join(tmp.name, "r." + k) for k in ("json", "csv", "folded", "svg")}
        argv = []
        for kind, path in paths.items():
            argv += ["--" + kind, path]
        opts = options.parse(argv)
        report = assemble.build(self.tally(prog, to_perf_address), opts, Symbolizer(),
                                0, None)
        out, err = io.StringIO(), io.StringIO()
        written = outputs.write_outputs(report, opts, out, err)
        self.assertEqual([k for k, _ in written], ["json", "csv", "folded", "svg"])

        helper, caller = prog.line("HELPER_CALL"), prog.line("CALLER_CALL")
        direct, main1, main2 = (prog.line("DIRECT_CALL"), prog.line("MAIN_CALLS_CALLER"),
                                prog.line("MAIN_CALLS_DIRECT"))
        with open(paths["json"]) as f:
            doc = json.load(f)
        self.assertEqual([(s["function"], s["file"], s["line"], s["count"], s["bytes"], s["tags"])
                          for s in doc["sites"]],
                         [("helper", prog.src, helper, 3, 300, {"tokens": 300}),
                          ("direct", prog.src, direct, 3, 101, {"ast": 100, "max": 1})])
        self.assertEqual(doc["truncated_allocations"], 0)
        self.assertEqual(doc["warnings"],
                         ["cannot read %s: frames shown as function+offset" % GONE])
        self.assertEqual(doc["stacks"][0]["frames"][0]["inlined"], True)
        base = os.path.basename(prog.src)
        with open(paths["folded"]) as f:
            self.assertEqual(f.read(), (
                "__libc_start_call_main+0x7a;main (%s:%d);caller (%s:%d);helper (%s:%d) "
                "[inlined] 300\n"
                "__libc_start_call_main+0x7a;main (%s:%d);direct (%s:%d) 101\n")
                % (base, main1, base, caller, base, helper, base, main2, base, direct))
        with open(paths["csv"]) as f:
            rows = f.read().splitlines()
        self.assertEqual(rows[1].split(",")[:7],
                         ["1", "helper", prog.src, str(helper), prog.path, "3", "300"])
        with open(paths["svg"]) as f:
            ET.fromstring(f.read())
        self.assertIn("helper %s:%d" % (prog.src, helper), out.getvalue())
        self.assertEqual(err.getvalue(), "allocsites: warning: cannot read %s: frames shown "
                                         "as function+offset\n" % GONE)

    def test_pie(self):
        self.check(self.progs[0], lambda addr: addr)

    def test_non_pie_file_offsets(self):
        prog = self.progs[1]
        self.check(prog, prog.file_offset)


class TagFilterTest(unittest.TestCase):
    def test_a_tag_that_matches_nothing_is_named_with_the_tags_present(self):
        report = assemble.build(make_tally(), options.parse(["--tag", "ast,nosuch"]),
                                symbolizer(), 0, None)
        self.assertIn("no allocation has the tag nosuch; the tags in this recording: "
                      "ast, lib_nine, tokens", report.warnings)
        self.assertEqual(report.profile.count, 2)
        # a bad option value: the command exits 2 (command.run_report)
        self.assertEqual(len(report.bad_options), 1)
        good = assemble.build(make_tally(), options.parse(["--tag", "ast"]),
                              symbolizer(), 0, None)
        self.assertEqual(good.bad_options, ())

    def test_tags_match_by_name_or_number(self):
        report = assemble.build(make_tally(), options.parse(["--tag", "1,tokens"]),
                                symbolizer(), 0, None)
        self.assertFalse([w for w in report.warnings if "no allocation" in w])


class OneTimeBaseTest(unittest.TestCase):
    """The table, the JSON and the timeline give the peak's time on one
    base (liveview.time_origin: the first recorded event) in one wording
    (issue 31: the table said 'at 784.968 ms' where the chart said
    another time). A recording with a known time structure: perf's clock
    is since boot, the first event 5 s into it; the run lasts 1.46 s
    (the chart's axis then in seconds), the peak at 784.968 ms."""

    T0 = 5000000000

    def tally(self):
        t = Tally()
        stack = (PROBE, PARSE, MAIN10, ROOT)
        for kind, dt, ptr, size in (("alloc", 0, 0x100, 100),
                                    ("alloc", 300000000, 0x200, 1000),
                                    ("alloc", 784968000, 0x300, 5000),
                                    ("free", 900000000, 0x300, 0),
                                    ("free", 1200000000, 0x200, 0),
                                    ("alloc", 1460000000, 0x400, 10)):
            t.add(Event(kind, 1, 1, size, 1, None,
                        stack if kind == "alloc" else (), ptr, self.T0 + dt))
        return t

    def test_table_json_and_timeline_say_the_same_time(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        svg = os.path.join(tmp.name, "t.svg")
        opts = options.parse(["--timeline", svg])
        report = assemble.build(self.tally(), opts, symbolizer(), 0,
                                None)
        self.assertEqual(report.liveness.peak_time, 784968000)
        self.assertEqual(json.loads(jsonout.render_json(report))
                         ["liveness"]["peak_time"], 784968000)
        peak_line = next(line for line in
                         table.render_table(report, 20).splitlines()
                         if line.startswith("peak:"))
        self.assertEqual(peak_line, "peak: 6100 bytes (6.0 KiB) live in 3 "
                         "allocations, at 784.968 ms")
        root = ET.fromstring(timeline.render_report(report))
        ns = "{http://www.w3.org/2000/svg}"
        peak = next(e for e in root.iter(ns + "g") if e.get("id") == "peak")
        head = next(e for e in root.iter(ns + "text")
                    if e.get("id") == "legend-head")
        self.assertEqual(peak.find(ns + "text").text,
                         "peak 6.0 KiB at 784.968 ms")
        self.assertEqual(head.text, "Live bytes at the peak, 784.968 ms")
        # the chart's points on the same base: from 0 at the first event
        # to the last event, 1.46 s later
        cols = [e for e in root.iter(ns + "rect") if e.get("class") == "c"]
        first, last = (c.find(ns + "title").text.split("\n")[0]
                       for c in (cols[0], cols[-1]))
        self.assertEqual((first, last), ("0.000 s", "1.460 s"))


if __name__ == "__main__":
    unittest.main()
