"""The renderers' liveness and phase figures (issues 12 and 13), against
hand-built Reports: table, JSON, CSV, folded stacks, flame graph weights
and subtitle. tests/unit/test_outputs.py keeps the reports without frees,
whose outputs must not change."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import csv
import io
import json

import xml.etree.ElementTree as ET

from allocsites_lib.render import folded, csvout, ranking, jsonout, flamegraph, table
from allocsites_lib.analyze.fold import Stack
from allocsites_lib.analyze.report import LiveSummary, PhaseRow

from fixtures import fr
from test_svg import frames_of, frame_list, width
from test_outputs import (LEX, MAIN10, MAIN12, NEXT, PARSE, START, empty_report,
                          make_report, site)

EMIT = fr("emit", 50, "/src/main.c")

# Three sites, 4608 bytes in 16 allocations. Each --sort gives another
# order; peak has a tie (lex and emit, 512 each) that keeps the bytes order.
#            bytes count  peak (count)  leaked (count)  temporary
# parse_expr  3072     3  2048 (2)         0 (0)         1
# lex         1024     5   512 (1)      1024 (5)         0
# emit         512     8   512 (4)       256 (1)         6
LIVE = {"parse_expr": (2048, 2, 0, 0, 1), "lex": (512, 1, 1024, 5, 0),
        "emit": (512, 4, 256, 1, 6)}


def live_site(frame, count, nbytes, tag_bytes, tag_counts, sampled=False):
    s = site(frame, count, nbytes, tag_bytes, tag_counts)
    (s.peak_bytes, s.peak_count, s.leaked_bytes, s.leaked_count,
     s.temporary) = LIVE[frame.function]
    if sampled:   # estimates are floats; no temporary count
        s.count, s.bytes = float(count), float(nbytes)
        s.peak_bytes, s.peak_count = float(s.peak_bytes), float(s.peak_count)
        s.leaked_bytes = float(s.leaked_bytes)
        s.leaked_count = float(s.leaked_count)
        s.temporary = None
    return s


def live_sites(sampled=False):
    return [live_site(PARSE, 3, 3072, {"ast": 3072}, {"ast": 3}, sampled),
            live_site(LEX, 5, 1024, {"tokens": 1024}, {"tokens": 5}, sampled),
            live_site(EMIT, 8, 512, {"code": 512}, {"code": 8}, sampled)]


def live_stacks():
    return [Stack((PARSE, MAIN10, START), 3, 3072, {"ast": 3072}, 2048, 0, 1),
            Stack((LEX, NEXT, MAIN12, START), 5, 1024, {"tokens": 1024},
                  512, 1024, 0),
            Stack((EMIT, MAIN12, START), 8, 512, {"code": 512}, 512, 256, 6)]


def summary(**changes):
    """Peak 3072 bytes in 4 allocations at 1.25 ms; 1280 bytes leaked in 6;
    7 temporary; 2 frees (48 bytes) of unknown pointers."""
    live = LiveSummary(peak_bytes=3072, peak_count=4, peak_time=1250000,
                       leaked_bytes=1280, leaked_count=6, temporary=7,
                       unmatched_frees=(2, 48), untracked=0, committed=None,
                       phases=[], phase=None, unmatched_phase_ends=0,
                       open_phases=0)
    return live._replace(**changes)


def live_report(sampled=False, **changes):
    report = make_report(sites=live_sites(sampled), stacks=live_stacks(),
                         count=16, nbytes=4608,
                         events={"sample": 9, "free": 12} if sampled
                         else {"alloc": 16, "free": 12},
                         fired={1: [0, 12, 9] if sampled else [16, 12, 0]})
    live = summary(**changes)
    if sampled:
        live = live._replace(temporary=None, peak_bytes=3072.0,
                             peak_count=4.0, leaked_bytes=1280.0,
                             leaked_count=6.0)
        report = report._replace(
            mode="sampled", sampling={"samples": 9, "sample_bytes": 256},
            profile=report.profile._replace(count=16.0, bytes=4608.0))
    return report._replace(liveness=live)


# lex ran twice, sema inside parse once: nested phases are rows of their own.
PHASES = [PhaseRow(1, "lex", 2, 5, 1024, 512, 1536, 512, None),
          PhaseRow(2, "parse", 1, 3, 3072, 0, 3072, -1024, None),
          PhaseRow(3, "sema", 1, 8, 512, 256, 3072, 256, None)]

VERDICT = ("complete: yes (checked: 28 events received, as many as the "
           "program fired)")


class LiveTableTest(unittest.TestCase):
    def rows(self, sort):
        lines = table.render_table(live_report(), cwd="/src",
                                   sort=sort).splitlines()
        # the site is the next to last column: 'function file:line'
        return [[c for c in line.split("  ") if c][-2].split()[0]
                for line in lines[1:4]]

    def test_exact_table(self):
        self.assertEqual(table.render_table(live_report(), cwd="/src"), (
            "#  bytes  share  count     peak   leaked  temporary  site  tags\n"
            "1   3072  66.7%      3  2.0 KiB      0 B          1  parse_expr parser.c:120  ast:3.0 KiB\n"
            "2   1024  22.2%      5    512 B  1.0 KiB          0  lex lexer.c:40  tokens:1.0 KiB\n"
            "3    512  11.1%      8    512 B    256 B          6  emit main.c:50  code:512 B\n"
            "total: 4608 bytes (4.5 KiB) in 16 allocations at 3 sites\n"
            "peak: 3072 bytes (3.0 KiB) live in 4 allocations, at 1.250 ms\n"
            "leaked: 1280 bytes (1.2 KiB) in 6 allocations; temporary: 7 "
            "allocations; unmatched frees: 2 (48 bytes)\n"
            "events: 16 alloc, 12 free; lost: 0\n" + VERDICT + "\n"))

    def test_every_sort_ties_keep_the_bytes_order(self):
        self.assertEqual(self.rows("bytes"), ["parse_expr", "lex", "emit"])
        self.assertEqual(self.rows("count"), ["emit", "lex", "parse_expr"])
        self.assertEqual(self.rows("peak"), ["parse_expr", "lex", "emit"])
        self.assertEqual(self.rows("leaked"), ["lex", "emit", "parse_expr"])
        self.assertEqual(self.rows("temporary"), ["emit", "parse_expr", "lex"])

    def test_sort_is_named_on_the_total_line(self):
        for sort, words in [("count", "allocation count"),
                            ("peak", "bytes live at the peak"),
                            ("leaked", "bytes leaked"),
                            ("temporary", "temporary allocations")]:
            lines = table.render_table(live_report(), top=2, cwd="/src",
                                       sort=sort).splitlines()
            self.assertEqual(lines[3], "total: 4608 bytes (4.5 KiB) in 16 "
                             "allocations at 3 sites, 1 not shown, ranked "
                             "by " + words)

    def test_top_after_sort(self):
        lines = table.render_table(live_report(), top=1, cwd="/src",
                                   sort="leaked").splitlines()
        self.assertEqual(lines[1], "1   1024  22.2%      5  512 B  1.0 KiB"
                         "          0  lex lexer.c:40  tokens:1.0 KiB")

    def test_sampled_estimates_marked_no_temporary(self):
        text = table.render_table(live_report(sampled=True), cwd="/src",
                                  sort="leaked")
        self.assertEqual(text, (
            "#  ~bytes  share  ~count     ~peak   ~leaked  site  tags\n"
            "1   ~1024  22.2%      ~5    ~512 B  ~1.0 KiB  lex lexer.c:40  tokens:~1.0 KiB\n"
            "2    ~512  11.1%      ~8    ~512 B    ~256 B  emit main.c:50  code:~512 B\n"
            "3   ~3072  66.7%      ~3  ~2.0 KiB      ~0 B  parse_expr parser.c:120  ast:~3.0 KiB\n"
            "total: ~4608 bytes (4.5 KiB) in ~16 allocations at 3 sites, "
            "ranked by bytes leaked\n"
            # one standard error at the peak, sqrt(256 x 3072) = 887 B,
            # and the measured overshoot of a maximum (issue 23, item 5)
            "peak: ~3072 bytes (3.0 KiB) live in ~4 allocations, at 1.250 ms"
            "; sampled: +-887 B at a moment, and measured up to 3x that "
            "too high where a program returns near its high often "
            "(docs/sampling.md)\n"
            "leaked: ~1280 bytes (1.2 KiB) in ~6 allocations; unmatched "
            "frees: 2 (48 bytes)\n"
            "estimates from 9 samples, one per ~256 B allocated "
            "(docs/sampling.md)\n"
            "events: 9 sample, 12 free; lost: 0\n"
            "complete: yes (checked: 21 events received, as many as the "
            "program fired)\n"))

    def test_committed_untracked_phase_restriction(self):
        lines = table.render_table(live_report(
            committed=(8192, 6144, 4096), untracked=3, phase="sema",
            peak_time=2500000000), cwd="/src").splitlines()
        self.assertEqual(lines[5:10], [
            "peak: 3072 bytes (3.0 KiB) live in 4 allocations, at 2.500 s",
            "leaked: 1280 bytes (1.2 KiB) in 6 allocations; temporary: 7 "
            "allocations; unmatched frees: 2 (48 bytes)",
            "committed: 6.0 KiB at the peak, 8.0 KiB at most, 4.0 KiB at "
            "the end",
            "untracked: 3 sampled allocations the header could not track "
            "(table full): live estimates may be too high by their weight",
            "phase: sema (only the allocations made in it)"])

    def test_nothing_ever_live_has_no_peak_time(self):
        report = empty_report()._replace(liveness=summary(
            peak_bytes=0, peak_count=0, peak_time=None, leaked_bytes=0,
            leaked_count=0, temporary=0, unmatched_frees=(1, 16)))
        self.assertEqual(table.render_table(report, cwd="/src"), (
            "#  bytes  share  count  peak  leaked  temporary  site  tags\n"
            "total: 0 bytes (0 B) in 0 allocations at 0 sites\n"
            "peak: 0 bytes (0 B) live in 0 allocations\n"
            "leaked: 0 bytes (0 B) in 0 allocations; temporary: 0 "
            "allocations; unmatched frees: 1 (16 bytes)\n"
            "events: 0 alloc, frees not recorded; lost: 0\n"
            "complete: yes (checked: 0 events received, as many as the "
            "program fired)\n"))

    def test_phase_table(self):
        lines = table.render_table(live_report(phases=PHASES),
                                   cwd="/src").splitlines()
        self.assertEqual(lines[7:12], [
            "phase  runs  count  bytes  left live     peak    growth",
            "lex       2      5   1024      512 B  1.5 KiB    +512 B",
            "parse     1      3   3072        0 B  3.0 KiB  -1.0 KiB",
            "sema      1      8    512      256 B  3.0 KiB    +256 B",
            "events: 16 alloc, 12 free; lost: 0"])

    def test_phase_table_committed_and_notes(self):
        phases = [PHASES[0]._replace(committed_growth=65536),
                  PHASES[2]._replace(name=None, committed_growth=0)]
        lines = table.render_table(live_report(
            phases=phases, unmatched_phase_ends=1, open_phases=2),
            cwd="/src").splitlines()
        self.assertEqual(lines[7:11], [
            "phase  runs  count  bytes  left live     peak  growth  committed",
            "lex       2      5   1024      512 B  1.5 KiB  +512 B  +64.0 KiB",
            "3         1      8    512      256 B  3.0 KiB  +256 B        0 B",
            "phases: 1 ends without a begin; 2 still open at exit, closed "
            "there"])

    def test_sampled_phase_table(self):
        phases = [PhaseRow(1, "lex", 2, 5.0, 1024.0, 512.0, 1536.0, 512.0,
                           -4096)]
        lines = table.render_table(live_report(sampled=True, phases=phases),
                                   cwd="/src").splitlines()
        self.assertEqual(lines[7:9], [
            "phase  runs  ~count  ~bytes  ~left live     ~peak  ~growth  "
            "committed",
            "lex       2      ~5   ~1024      ~512 B  ~1.5 KiB  +~512 B   "
            "-4.0 KiB"])

    def test_control_characters_in_names_cannot_break_lines(self):
        phases = [PHASES[0]._replace(name="le\nx\x1b")]
        text = table.render_table(live_report(phases=phases, phase="a\nb"),
                                  cwd="/src")
        self.assertIn("\nphase: a?b (only the allocations made in it)\n", text)
        self.assertIn("\nle?x?     2 ", text)

    def test_unknown_site_figure_is_a_dash(self):
        s = live_sites()
        s[2].peak_bytes = s[2].leaked_bytes = s[2].temporary = None
        report = live_report()
        report = report._replace(profile=report.profile._replace(sites=s))
        self.assertEqual(table.render_table(report, cwd="/src").splitlines()[3],
                         "3    512  11.1%      8        -        -          -"
                         "  emit main.c:50  code:512 B")


class LiveJsonTest(unittest.TestCase):
    def test_liveness_and_phases(self):
        doc = json.loads(jsonout.render_json(live_report(
            phases=PHASES[:2], committed=(8192, 6144, 4096), phase="lex")))
        self.assertEqual(doc["version"], 2)
        self.assertEqual(doc["liveness"], {
            "peak_bytes": 3072, "peak_count": 4, "peak_time": 1250000,
            "leaked_bytes": 1280, "leaked_count": 6, "temporary": 7,
            "unmatched_frees": {"count": 2, "bytes": 48}, "untracked": 0,
            "committed": {"peak": 8192, "at_peak": 6144, "end": 4096},
            "phase": "lex", "unmatched_phase_ends": 0, "open_phases": 0,
            "scope": None, "peak_bytes_error": None})
        self.assertEqual(doc["phases"], [
            {"id": 1, "name": "lex", "runs": 2, "count": 5, "bytes": 1024,
             "left_live": 512, "peak": 1536, "growth": 512,
             "committed_growth": None},
            {"id": 2, "name": "parse", "runs": 1, "count": 3, "bytes": 3072,
             "left_live": 0, "peak": 3072, "growth": -1024,
             "committed_growth": None}])

    def test_sites_and_stacks(self):
        doc = jsonout.report_dict(live_report())
        self.assertEqual(
            [(s["function"], s["count"], s["bytes"], s["peak_bytes"],
              s["peak_count"], s["leaked_bytes"], s["leaked_count"],
              s["temporary"]) for s in doc["sites"]],
            [("parse_expr", 3, 3072, 2048, 2, 0, 0, 1),
             ("lex", 5, 1024, 512, 1, 1024, 5, 0),
             ("emit", 8, 512, 512, 4, 256, 1, 6)])
        self.assertEqual([(s["frames"][0]["function"], s["peak"], s["leaked"],
                           s["temporary"]) for s in doc["stacks"]],
                         [("parse_expr", 2048, 0, 1), ("lex", 512, 1024, 0),
                          ("emit", 512, 256, 6)])

    def test_version_1_fields_kept_in_their_order(self):
        keys = list(jsonout.report_dict(live_report()))
        self.assertEqual(keys, [
            "version", "mode", "samples", "sample_bytes", "lost",
            "lost_reason", "complete", "complete_reason", "check", "events",
            "totals", "truncated_allocations", "liveness", "phases",
            "filters", "warnings", "sites", "stacks", "unwind"])

    def test_sampled_estimates_and_null_temporary(self):
        doc = json.loads(jsonout.render_json(live_report(sampled=True)))
        live = doc["liveness"]
        self.assertEqual((live["peak_bytes"], live["leaked_count"],
                          live["temporary"]), (3072.0, 6.0, None))
        self.assertAlmostEqual(live["peak_bytes_error"], (256 * 3072) ** 0.5)
        exact = json.loads(jsonout.render_json(live_report()))["liveness"]
        self.assertIsNone(exact["peak_bytes_error"])
        lex = doc["sites"][1]
        self.assertEqual((lex["function"], lex["peak_bytes"],
                          lex["leaked_bytes"], lex["temporary"]),
                         ("lex", 512.0, 1024.0, None))
        self.assertEqual((lex["samples"], lex["bytes_error"]), (0, 512.0))

    def test_no_frees(self):
        doc = jsonout.report_dict(live_report()._replace(liveness=None))
        self.assertEqual((doc["liveness"], doc["phases"]), (None, []))

    def test_phase_names_escaped(self):
        phases = [PHASES[0]._replace(name='a"b\\c\n\u2603')]
        text = jsonout.render_json(live_report(phases=phases))
        line = [l for l in text.splitlines() if '"runs"' in l][0]
        self.assertEqual(line.strip().rstrip(","), json.dumps(
            {"id": 1, "name": 'a"b\\c\n\u2603', "runs": 2, "count": 5,
             "bytes": 1024, "left_live": 512, "peak": 1536, "growth": 512,
             "committed_growth": None}))
        self.assertEqual(json.loads(text)["phases"][0]["name"],
                         'a"b\\c\n\u2603')


class LiveCsvTest(unittest.TestCase):
    def test_exact(self):
        self.assertEqual(csvout.render_csv(live_report()), (
            "rank,function,file,line,dso,count,bytes,share,avg_size,tags,"
            "peak_bytes,peak_count,leaked_bytes,leaked_count,temporary\n"
            "1,parse_expr,/src/parser.c,120,/usr/bin/app,3,3072,66.6667,"
            "1024.00,ast=3072,2048,2,0,0,1\n"
            "2,lex,/src/lexer.c,40,/usr/bin/app,5,1024,22.2222,204.80,"
            "tokens=1024,512,1,1024,5,0\n"
            "3,emit,/src/main.c,50,/usr/bin/app,8,512,11.1111,64.00,"
            "code=512,512,4,256,1,6\n"))

    def test_sampled_estimates_and_empty_temporary(self):
        s = live_sites(sampled=True)
        s[1].peak_bytes, s[1].leaked_count = 512.25, 4.5
        report = live_report(sampled=True)
        report = report._replace(profile=report.profile._replace(sites=s))
        rows = list(csv.reader(io.StringIO(csvout.render_csv(report))))
        self.assertEqual([r[10:] for r in rows[1:]], [
            ["2048", "2", "0", "0", ""],
            ["512.250", "1", "1024", "4.500", ""],
            ["512", "4", "256", "1", ""]])


PARSE_LINE = "_start+0x25;main (main.c:10);parse_expr (parser.c:120)"
LEX_LINE = ("_start+0x25;main (main.c:12);next_token (lexer.c:55);"
            "lex (lexer.c:40) [inlined]")
EMIT_LINE = "_start+0x25;main (main.c:12);emit (main.c:50)"
NO_FREES = "no frees were recorded, so what is live is unknown (record " \
    "without --no-frees)"


class LiveFoldedTest(unittest.TestCase):
    def test_every_weight_zero_stacks_left_out(self):
        report = live_report()
        self.assertEqual(folded.folded_lines(report, "bytes"), [
            PARSE_LINE + " 3072", EMIT_LINE + " 512", LEX_LINE + " 1024"])
        self.assertEqual(folded.folded_lines(report, "count"), [
            PARSE_LINE + " 3", EMIT_LINE + " 8", LEX_LINE + " 5"])
        self.assertEqual(folded.render_folded(report, "peak"), (
            PARSE_LINE + " 2048\n" + EMIT_LINE + " 512\n" +
            LEX_LINE + " 512\n"))
        self.assertEqual(folded.folded_lines(report, "leaked"), [
            EMIT_LINE + " 256", LEX_LINE + " 1024"])
        self.assertEqual(folded.folded_lines(report, "temporary"), [
            PARSE_LINE + " 1", EMIT_LINE + " 6"])

    def test_zero_bytes_stack_left_out(self):
        stacks = live_stacks()
        stacks[0] = stacks[0]._replace(bytes=0)
        report = live_report()
        report = report._replace(profile=report.profile._replace(
            stacks=stacks))
        self.assertEqual(folded.folded_lines(report), [
            EMIT_LINE + " 512", LEX_LINE + " 1024"])

    def test_sampled_estimates(self):
        stacks = [s._replace(peak=float(s.peak) + 0.25, leaked=float(s.leaked),
                             temporary=None) for s in live_stacks()]
        report = live_report(sampled=True)
        report = report._replace(profile=report.profile._replace(
            stacks=stacks))
        self.assertEqual(folded.folded_lines(report, "peak"), [
            PARSE_LINE + " 2048.250", EMIT_LINE + " 512.250",
            LEX_LINE + " 512.250"])
        self.assertEqual(folded.folded_lines(report, "leaked"), [
            EMIT_LINE + " 256", LEX_LINE + " 1024"])
        with self.assertRaises(ValueError) as e:
            folded.folded_lines(report, "temporary")
        self.assertEqual(str(e.exception), "--weight temporary: temporary "
                         "allocations are counted in exact mode only (this "
                         "profile is sampled)")

    def test_unknown_weight_is_one_clear_error(self):
        report = live_report()._replace(liveness=None)
        for weight in ("peak", "leaked", "temporary"):
            for render in (folded.render_folded, folded.svg_stacks):
                with self.assertRaises(ValueError) as e:
                    render(report, weight)
                self.assertEqual(str(e.exception),
                                 "--weight %s: %s" % (weight, NO_FREES))
        # bytes and count need no frees
        self.assertEqual(len(folded.folded_lines(report, "count")), 3)


class LiveSvgTest(unittest.TestCase):
    def graph(self, weight, report=None):
        report = report or live_report()
        return flamegraph.render_svg(folded.svg_stacks(report, weight), weight,
                              subtitle=flamegraph.report_subtitle(report))

    def test_svg_stacks_carry_the_weight(self):
        self.assertEqual(folded.svg_stacks(live_report(), "leaked"), [
            (["_start+0x25", "main (main.c:10)", "parse_expr (parser.c:120)"],
             3, 3072, 0),
            (["_start+0x25", "main (main.c:12)", "next_token (lexer.c:55)",
              "lex (lexer.c:40) [inlined]"], 5, 1024, 1024),
            (["_start+0x25", "main (main.c:12)", "emit (main.c:50)"],
             8, 512, 256)])

    def test_leaked_widths_and_hover(self):
        f = frames_of(self.graph("leaked"))
        # 1280 bytes leaked over 1180 px: lex 1024, emit 256, parse none
        self.assertEqual(width(f["all"][1]), 1180.0)
        self.assertEqual(width(f["lex (lexer.c:40) [inlined]"][1]), 944.0)
        self.assertEqual(width(f["emit (main.c:50)"][1]), 236.0)
        self.assertNotIn("parse_expr (parser.c:120)", f)
        self.assertNotIn("main (main.c:10)", f)
        self.assertEqual(f["lex (lexer.c:40) [inlined]"][2], (
            "lex (lexer.c:40) [inlined]\nbytes: 1.0 KiB (1024 bytes)\n"
            "count: 5\nleaked: 1.0 KiB (1024 bytes)\n80.00% of total leaked"))
        self.assertEqual(f["all"][2], (
            "all\nbytes: 4.5 KiB (4608 bytes)\ncount: 16\n"
            "leaked: 1.2 KiB (1280 bytes)\n100.00% of total leaked"))
        self.assertEqual(f["emit (main.c:50)"][0].get("data-v"), "256")

    def test_peak_and_temporary_hover(self):
        f = frames_of(self.graph("peak"))
        self.assertEqual(f["parse_expr (parser.c:120)"][2], (
            "parse_expr (parser.c:120)\nbytes: 3.0 KiB (3072 bytes)\n"
            "count: 3\nlive at the peak: 2.0 KiB (2048 bytes)\n"
            "66.67% of total peak"))
        f = frames_of(self.graph("temporary"))
        self.assertEqual(f["emit (main.c:50)"][2], (
            "emit (main.c:50)\nbytes: 512 B (512 bytes)\ncount: 8\n"
            "temporary: 6 allocations\n85.71% of total temporary"))
        self.assertEqual(width(f["emit (main.c:50)"][1]), 1011.4286)
        self.assertNotIn("lex (lexer.c:40) [inlined]", f)

    def test_sampled_leaked_is_an_estimate(self):
        stacks = [s._replace(leaked=float(s.leaked)) for s in live_stacks()]
        report = live_report(sampled=True)
        report = report._replace(profile=report.profile._replace(
            stacks=stacks))
        f = frames_of(self.graph("leaked", report))
        self.assertIn("\nleaked: ~1.0 KiB (~1024 bytes)\n",
                      f["lex (lexer.c:40) [inlined]"][2])

    def test_nothing_leaked_says_so(self):
        stacks = [s._replace(leaked=0) for s in live_stacks()]
        report = live_report(leaked_bytes=0, leaked_count=0)
        report = report._replace(profile=report.profile._replace(
            stacks=stacks))
        doc = self.graph("leaked", report)
        self.assertEqual(frame_list(doc), [])
        self.assertIn(">Nothing leaked: every allocation was freed</text>", doc)
        self.assertNotIn("No allocations recorded", doc)

    def test_bytes_graph_unchanged(self):
        report = live_report()
        self.assertEqual(
            flamegraph.render_svg(folded.svg_stacks(report, "bytes")),
            flamegraph.render_svg([(st[0], st[1], st[2]) for st in
                            folded.svg_stacks(report, "peak")]))

    def test_weight_names(self):
        self.assertRaises(ValueError, flamegraph.render_svg, [(["a"], 1, 1)],
                          weight="pages")
        self.assertEqual(flamegraph.WEIGHTS, ("bytes", "count", "peak", "leaked",
                                       "temporary"))

    def test_diff_colours_by_the_weight(self):
        new = [(["m", "a"], 1, 10, 100), (["m", "b"], 1, 10, 50)]
        base = [(["m", "a"], 1, 10, 50), (["m", "b"], 1, 10, 100)]
        f = frames_of(flamegraph.render_svg(new, "leaked", base_stacks=base))
        self.assertEqual(f["a"][1].get("fill"), "rgb(255,155,155)")
        self.assertEqual(f["b"][1].get("fill"), "rgb(155,155,255)")
        self.assertIn("change: +50 leaked (base 50)", f["a"][2])


class SubtitleTest(unittest.TestCase):
    def test_exact(self):
        self.assertEqual(flamegraph.report_subtitle(live_report()),
                         "16 allocations, 4608 bytes, peak 3.0 KiB, leaked "
                         "1.2 KiB, lost: 0; " + VERDICT)

    def test_sampled(self):
        self.assertEqual(flamegraph.report_subtitle(live_report(sampled=True)),
                         "~16 allocations, ~4608 bytes, peak ~3.0 KiB, "
                         "leaked ~1.2 KiB, lost: 0; estimates from 9 "
                         "samples; complete: yes (checked: 21 events "
                         "received, as many as the program fired)")

    def test_no_frees_unchanged(self):
        report = live_report()._replace(liveness=None)
        self.assertEqual(flamegraph.report_subtitle(report),
                         "16 allocations, 4608 bytes, lost: 0; " + VERDICT)

    def test_phase_escaped_in_the_document(self):
        report = live_report(phase="<sema & co>")
        text = flamegraph.report_subtitle(report)
        self.assertEqual(text, "16 allocations, 4608 bytes, peak 3.0 KiB, "
                         "leaked 1.2 KiB, phase <sema & co>, lost: 0; " +
                         VERDICT)
        root = ET.fromstring(self.render(report))
        [sub] = [e for e in root.iter() if e.get("id") == "subtitle"]
        self.assertEqual(sub.text, text)

    def render(self, report):
        return flamegraph.render_svg(folded.svg_stacks(report, "peak"), "peak",
                              subtitle=flamegraph.report_subtitle(report))


class UnknownFiguresTest(unittest.TestCase):
    def test_no_frees(self):
        report = live_report()._replace(liveness=None)
        for sort in ("peak", "leaked", "temporary"):
            with self.assertRaises(ValueError) as e:
                table.render_table(report, cwd="/src", sort=sort)
            self.assertEqual(str(e.exception), "--sort %s: no frees were "
                             "recorded, so what is live is unknown (record "
                             "without --no-frees)" % sort)

    def test_temporary_in_sampled_mode(self):
        with self.assertRaises(ValueError) as e:
            table.render_table(live_report(sampled=True), sort="temporary")
        self.assertEqual(str(e.exception), "--sort temporary: temporary "
                         "allocations are counted in exact mode only (this "
                         "profile is sampled)")

    def test_check_before_any_output(self):
        ranking.check(live_report(), "temporary", "leaked")
        report = live_report()._replace(liveness=None)
        ranking.check(report, "count", "count")
        self.assertRaises(ValueError, ranking.check, report, "bytes", "peak")
        self.assertRaises(ValueError, ranking.check, report, "leaked", "bytes")
        self.assertRaises(ValueError, ranking.check, report, "pages", "bytes")

    def test_count_sort_needs_no_frees(self):
        report = make_report(events={"alloc": 8})
        lines = table.render_table(report, cwd="/src", sort="count").splitlines()
        self.assertEqual(lines[0], "#  bytes  share  count     avg  site  tags")
        self.assertEqual([line.split()[5] for line in lines[1:3]],
                         ["lex", "parse_expr"])
        self.assertEqual(lines[3], "total: 4096 bytes (4.0 KiB) in 8 "
                         "allocations at 2 sites, ranked by allocation count")


class PhaseBandsTest(unittest.TestCase):
    """The timeline's bands: nested runs get bands too (issue 23, item 4;
    only each thread's outermost runs had one)."""

    def test_nested_runs_have_bands(self):
        from allocsites_lib.analyze import timeline_series
        from allocsites_lib.read.eventlog import EventLog
        log = EventLog()
        for kind, t, phase in (("phase_begin", 100, 1), ("phase_begin", 200, 2),
                               ("phase_end", 300, 2), ("phase_end", 400, 1),
                               ("phase_begin", 500, 3)):   # open at the end
            log.append(kind, t, 1, 1, phase, 0)
        bands = timeline_series.phase_bands(log, {1: "outer", 2: "inner",
                                             3: "last"}, 0, 1000)
        self.assertEqual(bands, [("outer", 100, 400), ("inner", 200, 300),
                                 ("last", 500, 1000)])

    @staticmethod
    def bands_of(runs, span):
        from allocsites_lib.analyze import timeline_series
        from allocsites_lib.read.eventlog import EventLog
        log = EventLog()
        for phase, t0, t1 in runs:
            log.append("phase_begin", t0, 1, 1, phase, 0)
            log.append("phase_end", t1, 1, 1, phase, 0)
        return timeline_series.phase_bands(log, {1: "A", 2: "B"}, 0, span)

    def test_alternating_phases_are_one_band_per_run(self):
        # A, B, A, B...: ten runs each, the gaps between two runs of A far
        # under BAND_GAP of the span, with a run of B in each; they were
        # merged into one band of A over the whole run, B's beneath it.
        runs = [(1 + i % 2, 1000 + 10 * i, 1009 + 10 * i) for i in range(20)]
        bands = self.bands_of(runs, 1000000)
        self.assertEqual(len(bands), 20)
        self.assertEqual(bands, [("AB"[ph - 1], t0, t1)
                                 for ph, t0, t1 in runs])

    def test_back_to_back_runs_of_one_phase_are_one_band(self):
        # A run 1000 times in a row, nothing else between: one band (a
        # phase run thousands of times is not thousands of slivers); a
        # run of B then, and A again after a gap of 1% of the span.
        runs = [(1, 10 * i, 10 * i + 9) for i in range(1000)]
        runs += [(2, 10000, 20000), (1, 30000, 40000)]
        self.assertEqual(self.bands_of(runs, 1000000),
                         [("A", 0, 9999), ("B", 10000, 20000),
                          ("A", 30000, 40000)])


class TimelineSitesTest(unittest.TestCase):
    @staticmethod
    def chart(sweep, profile, scope=None):
        """The chart of the series analyze makes for it."""
        from allocsites_lib.analyze import timeline_series
        from allocsites_lib.render import timeline
        d = timeline_series.series(sweep, None, profile, {}, scope=scope)
        return timeline.render("T", "", d["times"], d["series"], d["other"],
                               d["total"], d["peak"], d["committed"],
                               d["phases"], scope=d["scope"])

    def test_a_large_user_gone_before_the_peak_is_drawn_as_itself(self):
        # site "early" holds 900 early and nothing at the peak; 8 small
        # sites hold the peak: early is shown, not folded into "other
        # sites" (issue 23, item 4)
        import collections
        from allocsites_lib.analyze import fold
        from allocsites_lib.analyze.liveness import Timeline
        from allocsites_lib.analyze.symbolize import Frame
        keys = ["early"] + ["s%d" % i for i in range(9)]
        sites, site_of, by_key = [], {}, {}
        for i, k in enumerate(keys):
            frame = Frame(k, "/src/a.c", i + 1, "/bin/p", False)
            site = fold.Site(frame)
            site.bytes = 1000
            sites.append(site)
            site_of[k] = (k, "/src/a.c", i + 1)
            by_key[k] = [900, 0, 0] if k == "early" else [0, 100 + i, 0]
        total = [900, sum(100 + i for i in range(9)), 0]
        tl = Timeline([0, 10, 20], total, by_key, None)
        Sweep = collections.namedtuple("Sweep", "timeline peak_time peak_bytes")
        profile = fold.Profile(sites, [], 10, 10000, 0, site_of)
        doc = self.chart(Sweep(tl, 10, total[1]), profile)
        self.assertIn("early a.c:1", doc)
        self.assertNotIn("whole program", doc)
        # with --tag or --phase the chart is still the whole program's,
        # the selection's sites named: the legend says so
        doc = self.chart(Sweep(tl, 10, total[1]), profile, scope="tag ast")
        self.assertIn("at the peak, 0.000 ms (the whole program; the sites of "
                      "tag ast named)", doc)


if __name__ == "__main__":
    unittest.main()
