"""The truth of t_live and t_phases (tests/programs/truth.h), run natively:
no perf. The integration tests compare profiles with these truth files,
so the truth itself must be right: its figures must agree with each other
(per-site sums equal the totals) and with the figures each program's
structure implies, computed by hand in its header comment."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))


def run_truth(name):
    """Runs build/tests/NAME; returns {"": parent truth, "child": ...}."""
    prog = os.path.join(BUILD, "tests", name)
    if not os.path.exists(prog):
        raise AssertionError("%s is not built: run make all" % prog)
    tmp = tempfile.mkdtemp(prefix="allocsites-truth-")
    try:
        path = os.path.join(tmp, "truth.json")
        env = dict(os.environ, TRUTH_FILE=path)
        subprocess.run([prog], env=env, check=True, timeout=60,
                       stdout=subprocess.DEVNULL)
        out = {}
        for suffix in ("", ".child"):
            if os.path.exists(path + suffix):
                with open(path + suffix) as f:
                    out[suffix.lstrip(".")] = json.load(f)
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def by_function_and_size(truth):
    """{(function, size of one block): record}: every site of these
    programs allocates a single size, distinct from the others'."""
    out = {}
    for r in truth["records"]:
        size, rest = divmod(r["bytes"], r["count"])
        assert rest == 0, r
        key = (r["function"], size)
        assert key not in out, key
        out[key] = r
    return out


def site_figures(truth):
    """{(function, size): (peak bytes, peak count, leaked bytes, leaked
    count, temporary)}, sites with any of them non-zero."""
    out = {}
    for key, r in by_function_and_size(truth).items():
        f = (r["peak_bytes"], r["peak_count"], r["leaked_bytes"],
             r["leaked_count"], r["temporary"])
        if any(f):
            out[key] = f
    return out


class Consistent(object):
    """Checks every truth file of a program agrees with itself."""

    def check_consistent(self, truth):
        recs = truth["records"]
        self.assertTrue(recs)
        for field in ("peak_bytes", "peak_count", "leaked_bytes",
                      "leaked_count", "temporary"):
            self.assertEqual(sum(r[field] for r in recs), truth[field], field)
        for r in recs:
            self.assertLessEqual(r["leaked_count"], r["count"])
            self.assertLessEqual(r["peak_count"], r["count"])
            self.assertLessEqual(r["temporary"], r["count"])
            self.assertLessEqual(r["leaked_bytes"], r["bytes"])
            self.assertLessEqual(r["peak_bytes"], r["bytes"])
        # Allocations per phase add up, per record and in all.
        outside = truth["outside_phases"]
        phases = {p["id"]: p for p in truth["phases"]}
        per_phase = {}
        for r in recs:
            if "phases" in r:
                self.assertEqual(sum(p["count"] for p in r["phases"]),
                                 r["count"])
                self.assertEqual(sum(p["bytes"] for p in r["phases"]),
                                 r["bytes"])
                for p in r["phases"]:
                    c = per_phase.setdefault(p["phase"], [0, 0])
                    c[0] += p["count"]
                    c[1] += p["bytes"]
        if per_phase:
            self.assertEqual(per_phase.pop(None, [0, 0]),
                             [outside["count"], outside["bytes"]])
            self.assertEqual(per_phase, {i: [p["count"], p["bytes"]]
                                         for i, p in phases.items()})
        self.assertEqual(sum(p["count"] for p in phases.values()) +
                         outside["count"], sum(r["count"] for r in recs))
        self.assertEqual(sum(p["bytes"] for p in phases.values()) +
                         outside["bytes"], sum(r["bytes"] for r in recs))
        for p in phases.values():
            self.assertLessEqual(p["left_live"], p["bytes"])
            self.assertLessEqual(p["peak"], truth["peak_bytes"])


class TLive(unittest.TestCase, Consistent):
    @classmethod
    def setUpClass(cls):
        cls.truths = run_truth("t_live")

    def test_parent_and_child_each_wrote_theirs(self):
        self.assertEqual(sorted(self.truths), ["", "child"])
        self.assertNotEqual(self.truths[""]["pid"],
                            self.truths["child"]["pid"])
        for truth in self.truths.values():
            self.check_consistent(truth)

    def test_parent(self):
        t = self.truths[""]
        self.assertEqual((t["peak_bytes"], t["peak_count"]), (55305, 5))
        self.assertEqual((t["leaked_bytes"], t["leaked_count"]), (5041, 3))
        self.assertEqual(t["temporary"], 9)
        self.assertEqual(t["unmatched_frees"], [0, 0])
        self.assertEqual(t["released"], [5, 800])
        self.assertEqual(site_figures(t), {
            ("temporaries", 40): (0, 0, 0, 0, 5),
            ("realloc_chain", 96): (0, 0, 0, 0, 1),
            # REALLOC to 1000, 2000, 3000, 4000: one site, four sizes
            ("realloc_chain", 2500): (4000, 1, 4000, 1, 3),
            ("other_thread", 264): (528, 2, 264, 1, 0),
            ("peak", 777): (777, 1, 777, 1, 0),
            ("peak", 50000): (50000, 1, 0, 0, 0),
        })
        sites = by_function_and_size(t)
        self.assertEqual(sites[("handoff", 72)]["count"], 6)
        self.assertEqual(sites[("arena", 160)]["count"], 5)
        self.assertEqual(t["phases"], [])
        self.assertEqual(t["open_phases"], [])

    def test_child(self):
        t = self.truths["child"]
        self.assertEqual((t["peak_bytes"], t["peak_count"]), (360, 3))
        self.assertEqual((t["leaked_bytes"], t["leaked_count"]), (120, 1))
        self.assertEqual(t["temporary"], 1)
        # the block it inherited and freed: the parent's, still leaked there
        self.assertEqual(t["unmatched_frees"], [1, 264])
        self.assertEqual(site_figures(t), {
            ("child", 120): (360, 3, 120, 1, 0),
            ("child", 24): (0, 0, 0, 0, 1),
        })
        # While the parent waits, its live bytes plus the child's peak stay
        # below the parent's peak: the peak of both processes is the
        # parent's.
        parent = self.truths[""]
        self.assertLess(parent["leaked_bytes"] + t["peak_bytes"],
                        parent["peak_bytes"])


class TPhases(unittest.TestCase, Consistent):
    @classmethod
    def setUpClass(cls):
        cls.truth = run_truth("t_phases")[""]

    def test_consistent(self):
        self.check_consistent(self.truth)

    def test_totals(self):
        t = self.truth
        self.assertEqual((t["peak_bytes"], t["peak_count"]), (4384, 4))
        self.assertEqual((t["leaked_bytes"], t["leaked_count"]), (4384, 4))
        self.assertEqual(t["temporary"], 0)
        self.assertEqual(t["outside_phases"], {"count": 1, "bytes": 2000})
        self.assertEqual(t["unmatched_phase_ends"], 2)
        self.assertEqual(t["open_phases"], [7])

    def test_phases(self):
        fields = ("runs", "count", "bytes", "left_live", "peak", "growth")
        got = {(p["id"], p["name"]): tuple(p[f] for f in fields)
               for p in self.truth["phases"]}
        self.assertEqual(got, {
            (1, "load"): (2, 4, 1472, 272, 2808, 272),
            (2, "scan"): (2, 6, 144, 48, 2808, 48),
            (3, "worker_a"): (1, 4, 192, 48, 3720, 1248),
            (4, "worker_b"): (1, 2, 1256, 1200, 3720, 1248),
            (5, "emit"): (1, 1, 700, 700, 2292, 564),
            (6, "fix"): (1, 1, 72, 0, 2292, -136),
            (7, "exit"): (1, 1, 3000, 3000, 4384, 2300),
        })

    def test_each_site_in_its_phase(self):
        got = {key: [(p["phase"], p["count"]) for p in r["phases"]]
               for key, r in by_function_and_size(self.truth).items()}
        self.assertEqual(got, {
            ("main", 2000): [(None, 1)],
            ("load", 600): [(1, 2)],
            ("load", 24): [(2, 6)],
            ("load", 136): [(1, 2)],
            ("worker_a", 48): [(3, 4)],
            ("worker_b", 1200): [(4, 1)],
            ("worker_b", 56): [(4, 1)],
            ("main", 700): [(5, 1)],
            ("main", 72): [(6, 1)],
            ("main", 3000): [(7, 1)],
        })


if __name__ == "__main__":
    unittest.main()
