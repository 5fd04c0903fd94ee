"""allocsites diff: sites matched across a rebuild, new and gone sites,
sampled significance, totals, the differential flame graph. No perf
needed (JSON reports made here)."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import json
import tempfile
import xml.etree.ElementTree as ET

from allocsites_lib.analyze import diff
from allocsites_lib.render import flamegraph


def site(function, line, count, nbytes, file="/src/p.c", err=None):
    s = {"function": function, "file": file, "line": line, "count": count,
         "bytes": nbytes}
    if err is not None:
        s["bytes_error"] = err
    return s


def frame(function, line):
    return {"function": function, "file": "/src/p.c", "line": line,
            "dso": "/bin/p", "inlined": False}


def json_of(sites, stacks=()):
    return {"sites": sites, "stacks": list(stacks), "complete": True,
            "totals": {"count": sum(s["count"] for s in sites),
                       "bytes": sum(s["bytes"] for s in sites)}}


BASE = json_of([site("lex", 32, 100, 4800), site("parse", 127, 10, 640),
                site("old", 50, 5, 500)])
# Rebuilt: parse's line moved to 130, old is gone, emit is new, lex grew.
NEW = json_of([site("lex", 32, 150, 7200), site("parse", 130, 10, 640),
               site("emit", 60, 1, 65536)])


class MatchTest(unittest.TestCase):

    def test_same_moved_new_gone(self):
        changes = {c.function: c for c in diff.match_sites(BASE, NEW)}
        self.assertEqual({f: c.match for f, c in changes.items()},
                         {"lex": "same", "parse": "moved", "old": "gone",
                          "emit": "new"})
        self.assertEqual(changes["parse"].base_line, 127)
        self.assertEqual(changes["parse"].line, 130)
        lex = changes["lex"]
        self.assertEqual((lex.count_before, lex.count_after, lex.bytes_before,
                          lex.bytes_after), (100, 150, 4800, 7200))
        gone = changes["old"]
        self.assertEqual((gone.bytes_before, gone.bytes_after), (500, 0))

    def test_largest_change_first(self):
        self.assertEqual([c.function for c in diff.match_sites(BASE, NEW)],
                         ["emit", "lex", "old", "parse"])

    def test_ambiguous_move_is_new_and_gone(self):
        # Two sites of one function, both moved: no guessing.
        base = json_of([site("f", 10, 1, 10), site("f", 20, 1, 20)])
        new = json_of([site("f", 11, 1, 10), site("f", 21, 1, 20)])
        self.assertEqual(sorted(c.match for c in diff.match_sites(base, new)),
                         ["gone", "gone", "new", "new"])

    def test_sampled_change_within_its_error_is_not_significant(self):
        base = json_of([site("a", 1, 10.0, 1000.0, err=300.0),
                        site("b", 2, 10.0, 1000.0, err=300.0)])
        new = json_of([site("a", 1, 11.0, 1400.0, err=300.0),
                       site("b", 2, 30.0, 3000.0, err=400.0)])
        sig = {c.function: c.significant for c in diff.match_sites(base, new)}
        # two sites: z* = 2.24; a: 400 < 2.24 x 424.3, b: 2000 > 2.24 x 500
        self.assertEqual(sig, {"a": False, "b": True})

    def test_the_threshold_grows_with_the_sites_compared(self):
        # Bonferroni over the sampled sites: 5% for the whole diff
        self.assertAlmostEqual(diff.z_threshold(1), 1.960, places=3)
        self.assertAlmostEqual(diff.z_threshold(30), 3.144, places=3)
        # 30 sites each 2.0 errors apart: noise at that size, none flagged
        # (one standard error flagged all 30)
        base = json_of([site("f%d" % i, i, 10.0, 1000.0, err=100.0)
                        for i in range(30)])
        new = json_of([site("f%d" % i, i, 10.0, 1000.0 + 2.0 * 141.43,
                            err=100.0) for i in range(30)])
        changes = diff.match_sites(base, new)
        self.assertEqual(sum(c.significant for c in changes), 0)
        new = json_of([site("f%d" % i, i, 10.0, 1000.0 + 3.2 * 141.43,
                            err=100.0) for i in range(30)])
        changes = diff.match_sites(base, new)
        self.assertEqual(sum(c.significant for c in changes), 30)
        doc = diff.diff_json("b", "n", base, new, changes)
        self.assertEqual(doc["z_threshold"], 3.144)
        self.assertIn("significant: a change of at least 3.14 standard errors",
                      diff.render_table("b", "n", base, new, changes))


class OutputTest(unittest.TestCase):

    def test_table(self):
        text = diff.render_table("b.json", "n.json", BASE, NEW,
                                 diff.match_sites(BASE, NEW))
        self.assertIn(" 1  +64.0 KiB        +1  0 -> 65536  emit /src/p.c:60"
                      "  new", text)
        self.assertIn("moved (matched by function and file): parse "
                      "/src/p.c:127 -> 130", text)
        self.assertIn("total: 5940 -> 73376 bytes (+65.9 KiB, +1135.3%), "
                      "115 -> 161 allocations (+46); 3 sites changed, "
                      "1 unchanged", text)

    def test_load_json_or_recording(self):
        with tempfile.TemporaryDirectory() as tmp:
            js = os.path.join(tmp, "r.json")
            with open(js, "w") as f:
                json.dump(BASE, f)
            self.assertEqual(diff.load(js, None), BASE)
            rec = os.path.join(tmp, "r.data")
            with open(rec, "wb") as f:
                f.write(b"PERFILE2")
            self.assertEqual(diff.load(rec, lambda p: json.dumps(NEW)), NEW)

    def test_differential_flame_graph(self):
        main, lex, emit = frame("main", 1), frame("lex", 32), frame("emit", 60)
        base = json_of([], [{"frames": [lex, main], "count": 100,
                             "bytes": 4800}])
        new = json_of([], [{"frames": [lex, main], "count": 150, "bytes": 7200},
                           {"frames": [emit, main], "count": 1, "bytes": 65536}])
        doc = flamegraph.render_svg(diff.svg_stacks(new), base_stacks=diff.svg_stacks(
            base))
        ns = "{http://www.w3.org/2000/svg}"
        boxes = {g.find(ns + "title").text.split("\n")[0]:
                 (g.find(ns + "rect").get("fill"), g.find(ns + "title").text)
                 for g in ET.fromstring(doc).iter(ns + "g")
                 if g.get("class") == "f"}
        fill, title = boxes["lex (p.c:32)"]
        self.assertTrue(fill.startswith("rgb(255,"), fill)   # grew: red
        self.assertIn("change: +2400 bytes (base 4800)", title)
        fill, title = boxes["emit (p.c:60)"]
        self.assertEqual(fill, "rgb(255,55,55)")              # all new
        shrunk = flamegraph.render_svg(diff.svg_stacks(base),
                                base_stacks=diff.svg_stacks(new))
        # lex: 4800 where there were 7200: blue, a third of the way deep
        self.assertIn('lex (p.c:32)\nbytes: 4.7 KiB (4800 bytes)\ncount: 100\n'
                      '100.00% of total bytes\nchange: -2400 bytes (base 7200)'
                      '</title><rect x="10" y="36" width="1180" height="15" '
                      'rx="2" ry="2" fill="rgb(189,189,255)"/>', shrunk)


class BadInputTest(unittest.TestCase):
    """A JSON file that is not a JSON report: BadInput, one line naming
    the file and what is missing or wrong; never a KeyError later."""

    def load(self, text):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json")
            with open(path, "w") as f:
                f.write(text)
            return diff.load(path, lambda p: self.fail("not a recording"))

    def test_a_lone_surrogate_in_a_name_is_printed(self):
        # "\ud800" in someone's JSON report: allocsites diff writes its
        # table, the character as the text \ud800 (textio.py; a
        # traceback until 2026-11-28)
        import subprocess
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "..", "..")
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name, sites in (("a", [site("lex\ud800", 32, 1, 48)]),
                                ("b", [])):
                paths.append(os.path.join(tmp, name + ".json"))
                with open(paths[-1], "w") as f:
                    json.dump(json_of(sites, []), f)
            got = subprocess.run(
                [sys.executable, os.path.join(root, "scripts", "allocsites"),
                 "diff"] + paths, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
        self.assertEqual(got.returncode, 0, got.stderr)
        self.assertIn(b"lex\\ud800 ", got.stdout)

    def test_reports_that_are_not(self):
        good = json_of([site("lex", 32, 1, 48)],
                       [{"frames": [frame("lex", 32)], "count": 1,
                         "bytes": 48}])
        self.assertEqual(self.load(json.dumps(good)), good)
        cases = {
            "{}": "has no 'sites'",
            "{bad": "not valid JSON",
            # nested deeper than Python's stack: json's RecursionError
            '{"sites": ' + "[" * 100000 + "]" * 100000 + "}":
                "not valid JSON",
            '{"sites": {}, "totals": {}}': "'sites' is {}",
            '{"sites": [], "totals": {"count": 1}}': "totals has no 'bytes'",
            '{"sites": [1], "totals": {"count": 1, "bytes": 2}}':
                "site 1 is not an object",
            '{"sites": [{"function": "f", "file": "x", "line": "3", '
            '"count": 1, "bytes": 2}], "totals": {"count": 1, "bytes": 2}}':
                "site 1's 'line' is '3'",
            '{"sites": [], "totals": {"count": true, "bytes": 2}}':
                "totals's 'count' is True",
            '{"sites": [], "totals": {"count": 1, "bytes": 2}, '
            '"stacks": [{"frames": [{}], "count": 1, "bytes": 2}]}':
                "a frame of stack 1 has no 'function'",
        }
        for text, said in cases.items():
            with self.subTest(text=text[:60]):
                with self.assertRaises(diff.BadInput) as cm:
                    self.load(text)
                msg = str(cm.exception)
                self.assertIn(said, msg)
                self.assertIn("r.json: ", msg)
                self.assertNotIn("\n", msg)


if __name__ == "__main__":
    unittest.main()
