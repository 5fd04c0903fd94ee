import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import csv
import io
import json

from allocsites_lib.render import folded, csvout, jsonout, table
from allocsites_lib.analyze import completeness
from allocsites_lib.analyze.fold import NO_CALLER, Profile, Site, Stack
from allocsites_lib.analyze.report import Report

from fixtures import APP, fr

PARSE = fr("parse_expr", 120, "/src/parser.c")
LEX = fr("lex", 40, "/src/lexer.c", inlined=True)
NEXT = fr("next_token", 55, "/src/lexer.c")
MAIN10 = fr("main", 10, "/src/main.c")
MAIN12 = fr("main", 12, "/src/main.c")
START = fr("_start+0x25", 0, APP)

FILTERS = {"tag": None, "min_size": 0, "depth": None, "top": None, "skip": None}


def site(frame, count, nbytes, tag_bytes, tag_counts):
    s = Site(frame)
    s.count, s.bytes = count, nbytes
    s.tag_bytes.update(tag_bytes)
    s.tag_counts.update(tag_counts)
    return s


CHECKED = {1: [8, 6, 0]}   # rt:exit of process 1: 8 allocs, 6 frees fired


def make_report(lost=0, reason=None, malformed=0, sites=None, stacks=None,
                count=8, nbytes=4096, events=None, warnings=(), fired=CHECKED):
    """Two sites, 4096 bytes in 8 allocations:
    parse_expr (parser.c:120)  3 allocs, 3072 B (ast 2048, tokens 1024)
    lex (lexer.c:40, inlined)  5 allocs, 1024 B (tag 7, unnamed)
    fired: what rt:exit said ({} = no rt:exit); process 1 sent the events."""
    if sites is None:
        sites = [site(PARSE, 3, 3072, {"ast": 2048, "tokens": 1024}, {"ast": 2, "tokens": 1}),
                 site(LEX, 5, 1024, {"7": 1024}, {"7": 5})]
    if stacks is None:
        stacks = [Stack((PARSE, MAIN10, START), 3, 3072, {"ast": 2048, "tokens": 1024}),
                  Stack((LEX, NEXT, MAIN12, START), 5, 1024, {"7": 1024})]
    events = events if events is not None else {"alloc": 8, "free": 6}
    check = completeness.verdict({1: events} if events else {}, fired, lost,
                                 reason, malformed=malformed)
    return Report(mode="exact",
                  profile=Profile(sites, stacks, count, nbytes, 0),
                  events=events, malformed=malformed, lost=lost,
                  lost_reason=reason, frees=(6, 600), filters=dict(FILTERS),
                  warnings=list(warnings), verdict=check)


def empty_report():
    return make_report(sites=[], stacks=[], count=0, nbytes=0, events={},
                       fired={1: [0, 0, 0]})


class TableTest(unittest.TestCase):
    def test_exact_table(self):
        self.assertEqual(table.render_table(make_report(), cwd="/src"), (
            "#  bytes  share  count     avg  site  tags\n"
            "1   3072  75.0%      3  1024.0  parse_expr parser.c:120  ast:2.0 KiB,tokens:1.0 KiB\n"
            "2   1024  25.0%      5   204.8  lex lexer.c:40  7:1.0 KiB\n"
            "total: 4096 bytes (4.0 KiB) in 8 allocations at 2 sites\n"
            "events: 8 alloc, 6 free; lost: 0\n"
            "complete: yes (checked: 14 events received, as many as the "
            "program fired)\n"))

    def test_paths_outside_cwd_absolute(self):
        text = table.render_table(make_report(), cwd="/elsewhere")
        self.assertIn("  parse_expr /src/parser.c:120  ", text)
        self.assertIn("  lex /src/lexer.c:40  ", text)

    def test_top_limits_rows_and_says_so(self):
        lines = table.render_table(make_report(), top=1, cwd="/src").splitlines()
        self.assertEqual(len(lines), 5)
        self.assertTrue(lines[1].startswith("1 "))
        self.assertEqual(lines[2], "total: 4096 bytes (4.0 KiB) in 8 allocations at 2 sites, "
                                   "1 not shown")

    def test_lost_count_and_warning(self):
        lines = table.render_table(make_report(lost=157844), cwd="/src").splitlines()
        self.assertEqual(lines[-2:], ["events: 8 alloc, 6 free; lost: 157844",
                                      "WARNING: this profile is incomplete: perf lost 157844 "
                                      "samples while recording"])

    def test_unknown_loss_checked_end_to_end(self):
        lines = table.render_table(make_report(lost=None, reason="input is a pipe"),
                                   cwd="/src").splitlines()
        self.assertEqual(lines[-1], "complete: yes (checked: 14 events received, as many "
                                    "as the program fired)")

    def test_unknown_loss_and_no_exit_event(self):
        lines = table.render_table(make_report(lost=None, reason="input is a pipe", fired={}),
                                   cwd="/src").splitlines()
        self.assertEqual(lines[-2:], [
            "events: 8 alloc, 6 free; lost: unknown (input is a pipe)",
            "complete: not checked (no rt:exit event (the program did not exit normally, or "
            "was built with an older rt_probes.h); perf's loss count unknown: input is a pipe)"])

    def test_missing_events_counted_end_to_end(self):
        # perf counted nothing, but the program fired 10 allocations.
        lines = table.render_table(make_report(fired={1: [10, 6, 0]}),
                                   cwd="/src").splitlines()
        self.assertEqual(lines[-1], "WARNING: this profile is incomplete: 2 events missing: "
                                    "the program fired 16, the recording has 14")

    def test_malformed_shown_and_warns(self):
        lines = table.render_table(make_report(malformed=4), cwd="/src").splitlines()
        self.assertEqual(lines[-2:], ["events: 8 alloc, 6 free; lost: 0, malformed: 4",
                                      "WARNING: this profile is incomplete: 4 events could "
                                      "not be decoded"])

    def test_no_warning_when_clean(self):
        self.assertNotIn("WARNING", table.render_table(make_report(), cwd="/src"))

    def test_empty_report(self):
        self.assertEqual(table.render_table(empty_report(), cwd="/src"), (
            "#  bytes  share  count  avg  site  tags\n"
            "total: 0 bytes (0 B) in 0 allocations at 0 sites\n"
            "events: 0 alloc, frees not recorded; lost: 0\n"
            "complete: yes (checked: 0 events received, as many as the program fired)\n"))

    def test_frees_not_recorded(self):
        lines = table.render_table(make_report(events={"alloc": 8}), cwd="/src").splitlines()
        self.assertEqual(lines[-2], "events: 8 alloc, frees not recorded; lost: 0")

    def test_releases_without_frees_are_not_frees_not_recorded(self):
        lines = table.render_table(make_report(events={"alloc": 8,
                                                       "release": 2}),
                                   cwd="/src").splitlines()
        self.assertEqual(lines[-2],
                         "events: 8 alloc, 2 release, no frees; lost: 0")

    def test_equal_tag_bytes_sorted_by_name(self):
        s = site(PARSE, 2, 200, {"zeta": 100, "alpha": 100}, {"zeta": 1, "alpha": 1})
        text = table.render_table(make_report(sites=[s], count=2, nbytes=200), cwd="/src")
        self.assertIn("  alpha:100 B,zeta:100 B\n", text)

    def test_no_caller_site(self):
        s = site(NO_CALLER, 1, 8, {"0": 8}, {"0": 1})
        lines = table.render_table(make_report(sites=[s], count=1, nbytes=8), cwd="/src").splitlines()
        self.assertEqual(lines[1], "1      8  100.0%      1  8.0  [no caller] ?  0:8 B")


class JsonTest(unittest.TestCase):
    def test_exact_document(self):
        doc = json.loads(jsonout.render_json(make_report(lost=157844)))
        self.assertEqual(doc, {
            "version": 2,
            "mode": "exact",
            "samples": None,
            "sample_bytes": None,
            "lost": 157844,
            "lost_reason": None,
            "complete": False,
            "complete_reason": "perf lost 157844 samples while recording",
            "check": {"fired": {"alloc": 8, "free": 6, "sample": 0},
                      "received": {"alloc": 8, "free": 6, "sample": 0},
                      "missing": 0, "unchecked": 0,
                      "unchecked_by_kind": {}},
            "events": {"alloc": 8, "free": 6, "sample": 0, "malformed": 0,
                       "duplicates": 0, "duplicates_by_kind": {}},
            "totals": {"count": 8, "bytes": 4096, "frees": 6, "freed_bytes": 600},
            "truncated_allocations": 0,
            "liveness": None,
            "phases": [],
            "filters": FILTERS,
            "warnings": [],
            "sites": [
                {"file": "/src/parser.c", "line": 120, "function": "parse_expr", "dso": APP,
                 "count": 3, "bytes": 3072, "share": 75.0, "avg_size": 1024.0,
                 "tags": {"ast": 2048, "tokens": 1024},
                 "tag_counts": {"ast": 2, "tokens": 1},
                 "peak_bytes": None, "peak_count": None, "leaked_bytes": None,
                 "leaked_count": None, "temporary": None},
                {"file": "/src/lexer.c", "line": 40, "function": "lex", "dso": APP,
                 "count": 5, "bytes": 1024, "share": 25.0, "avg_size": 204.8,
                 "tags": {"7": 1024}, "tag_counts": {"7": 5},
                 "peak_bytes": None, "peak_count": None, "leaked_bytes": None,
                 "leaked_count": None, "temporary": None},
            ],
            "stacks": [
                {"frames": [
                    {"function": "parse_expr", "file": "/src/parser.c", "line": 120,
                     "dso": APP, "inlined": False},
                    {"function": "main", "file": "/src/main.c", "line": 10, "dso": APP,
                     "inlined": False},
                    {"function": "_start+0x25", "file": APP, "line": 0, "dso": APP,
                     "inlined": False}],
                 "count": 3, "bytes": 3072, "tags": {"ast": 2048, "tokens": 1024},
                 "peak": None, "leaked": None, "temporary": None},
                {"frames": [
                    {"function": "lex", "file": "/src/lexer.c", "line": 40, "dso": APP,
                     "inlined": True},
                    {"function": "next_token", "file": "/src/lexer.c", "line": 55,
                     "dso": APP, "inlined": False},
                    {"function": "main", "file": "/src/main.c", "line": 12, "dso": APP,
                     "inlined": False},
                    {"function": "_start+0x25", "file": APP, "line": 0, "dso": APP,
                     "inlined": False}],
                 "count": 5, "bytes": 1024, "tags": {"7": 1024},
                 "peak": None, "leaked": None, "temporary": None},
            ],
            "unwind": None,
        })

    def test_ends_with_newline(self):
        self.assertTrue(jsonout.render_json(make_report()).endswith("}\n"))

    def test_unknown_loss(self):
        doc = jsonout.report_dict(make_report(lost=None, reason="input is a pipe"))
        self.assertEqual((doc["lost"], doc["lost_reason"]), (None, "input is a pipe"))

    def test_top(self):
        doc = jsonout.report_dict(make_report(), top=1)
        self.assertEqual([s["function"] for s in doc["sites"]], ["parse_expr"])
        self.assertEqual(len(doc["stacks"]), 2)
        self.assertEqual(doc["totals"]["bytes"], 4096)

    def test_share_rounded_to_4_places(self):
        s = site(PARSE, 1, 1, {"0": 1}, {"0": 1})
        doc = jsonout.report_dict(make_report(sites=[s], count=3, nbytes=3))
        self.assertEqual(doc["sites"][0]["share"], 33.3333)

    def test_tags_sorted(self):
        s = site(PARSE, 3, 30, {"z": 10, "a": 10, "m": 10}, {"z": 1, "a": 1, "m": 1})
        text = jsonout.render_json(make_report(sites=[s], count=3, nbytes=30))
        doc = json.loads(text)
        self.assertEqual(list(doc["sites"][0]["tags"]), ["a", "m", "z"])

    def test_warnings_and_malformed(self):
        doc = jsonout.report_dict(make_report(malformed=2, warnings=["w1", "w2"]))
        self.assertEqual(doc["events"]["malformed"], 2)
        self.assertEqual(doc["warnings"], ["w1", "w2"])

    def test_frees_null_when_not_recorded(self):
        doc = jsonout.report_dict(make_report(events={"alloc": 8}))
        self.assertEqual(doc["totals"], {"count": 8, "bytes": 4096, "frees": None,
                                         "freed_bytes": None})

    def test_empty(self):
        doc = json.loads(jsonout.render_json(empty_report()))
        self.assertEqual((doc["sites"], doc["stacks"], doc["totals"]["count"],
                          doc["events"]), ([], [], 0, {"alloc": 0, "free": 0,
                                                       "sample": 0,
                                                       "malformed": 0,
                                                       "duplicates": 0,
                                                       "duplicates_by_kind":
                                                       {}}))


class EncodedStacksTest(unittest.TestCase):
    def test_the_same_text_as_json_dumps(self):
        # iter_json writes each stack as _encoded_stacks formats it: the
        # very text json.dumps of the stack's dict gives, for ints, sampled
        # mode's floats, nulls, tags to sort and escape, no tags
        stacks = [
            Stack((PARSE, MAIN10, START), 3, 3072, {"tokens": 1024,
                                                    "ast": 2048},
                  2048, 0, 1),
            Stack((fr("q\"uote", 1), fr("\u00e9t\u00e9", 2)), 2.5, 1e20,
                  {"t\u00e4g\n": 0.1, "7": float("inf")}, 0.5, None, None),
            Stack((NO_CALLER,), 1, 0, {}),
            Stack((LEX, NEXT), True, 2 ** 70, {"a": -1}, 0, 0, 0),
        ]
        def as_dict(s):   # the document's stack, built apart
            return {"frames": [jsonout.frame_json(f) for f in s.frames],
                    "count": s.count, "bytes": s.bytes,
                    "tags": dict(sorted(s.tags.items())), "peak": s.peak,
                    "leaked": s.leaked, "temporary": s.temporary}
        self.assertEqual(list(jsonout._encoded_stacks(stacks)),
                         [json.dumps(as_dict(s)) for s in stacks])


class CollapsedTest(unittest.TestCase):
    def test_bytes(self):
        self.assertEqual(folded.render_folded(make_report()), (
            "_start+0x25;main (main.c:10);parse_expr (parser.c:120) 3072\n"
            "_start+0x25;main (main.c:12);next_token (lexer.c:55);lex (lexer.c:40) [inlined] 1024\n"))

    def test_count(self):
        self.assertEqual(folded.folded_lines(make_report(), weight="count"), [
            "_start+0x25;main (main.c:10);parse_expr (parser.c:120) 3",
            "_start+0x25;main (main.c:12);next_token (lexer.c:55);lex (lexer.c:40) [inlined] 5"])

    def test_lines_sorted(self):
        a = Stack((fr("zz", 1), fr("aa", 2)), 1, 5, {})
        b = Stack((fr("yy", 1), fr("aa", 2)), 1, 500, {})
        c = Stack((fr("b", 1),), 1, 7, {})
        lines = folded.folded_lines(make_report(stacks=[a, b, c]))
        self.assertEqual(lines, ["aa (app.c:2);yy (app.c:1) 500",
                                 "aa (app.c:2);zz (app.c:1) 5",
                                 "b (app.c:1) 7"])

    def test_semicolon_in_names_cannot_split_frames(self):
        s = Stack((fr("operator;", 3, "/src/a;b.c"), fr("main", 1)), 1, 9, {})
        [line] = folded.folded_lines(make_report(stacks=[s]))
        self.assertEqual(line, "main (app.c:1);operator: (a:b.c:3) 9")
        self.assertEqual(line.count(";"), 1)

    def test_no_caller_stack(self):
        s = Stack((NO_CALLER,), 2, 16, {})
        self.assertEqual(folded.render_folded(make_report(stacks=[s])), "[no caller] 16\n")

    def test_float_values(self):
        s1 = Stack((fr("a", 1),), 1, 3072.0, {})
        s2 = Stack((fr("b", 1),), 1, 2.5, {})
        self.assertEqual(folded.folded_lines(make_report(stacks=[s1, s2])),
                         ["a (app.c:1) 3072", "b (app.c:1) 2.500"])

    def test_empty(self):
        self.assertEqual(folded.render_folded(empty_report()), "")

    def test_svg_stacks(self):
        self.assertEqual(folded.svg_stacks(make_report()), [
            (["_start+0x25", "main (main.c:10)", "parse_expr (parser.c:120)"], 3, 3072),
            (["_start+0x25", "main (main.c:12)", "next_token (lexer.c:55)",
              "lex (lexer.c:40) [inlined]"], 5, 1024)])


class CsvTest(unittest.TestCase):
    def test_exact(self):
        self.assertEqual(csvout.render_csv(make_report()), (
            "rank,function,file,line,dso,count,bytes,share,avg_size,tags,peak_bytes,peak_count,leaked_bytes,leaked_count,temporary\n"
            "1,parse_expr,/src/parser.c,120,/usr/bin/app,3,3072,75.0000,1024.00,ast=2048;tokens=1024,,,,,\n"
            "2,lex,/src/lexer.c,40,/usr/bin/app,5,1024,25.0000,204.80,7=1024,,,,,\n"))

    def test_top(self):
        rows = list(csv.reader(io.StringIO(csvout.render_csv(make_report(), top=1))))
        self.assertEqual([r[0] for r in rows], ["rank", "1"])

    def test_quoting_round_trips(self):
        s = site(fr("operator,(int, \"x\")", 7, "/src/a,b.c"), 1, 10, {"a,b": 10}, {"a,b": 1})
        rows = list(csv.reader(io.StringIO(csvout.render_csv(
            make_report(sites=[s], count=1, nbytes=10)))))
        self.assertEqual(rows[1], ["1", "operator,(int, \"x\")", "/src/a,b.c", "7", APP, "1",
                                   "10", "100.0000", "10.00", "a,b=10", "", "", "", "", ""])

    def test_empty(self):
        self.assertEqual(csvout.render_csv(empty_report()),
                         "rank,function,file,line,dso,count,bytes,share,avg_size,tags,peak_bytes,peak_count,leaked_bytes,leaked_count,temporary\n")


if __name__ == "__main__":
    unittest.main()
