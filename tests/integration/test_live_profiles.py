"""Who holds the memory, and phases, under real perf: exact mode must
equal each program's own truth (tests/programs/truth.h), site by site and
phase by phase."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ProfileTest, allocsites, program  # noqa: E402

LIVE_FIELDS = ("peak_bytes", "peak_count", "leaked_bytes", "leaked_count",
               "temporary")


def truth_live(truth, at_peak=True):
    """{(file, line, function): {field: n}} from a truth file; at_peak
    False: this process was not part of the recording's peak moment (its
    sites held nothing then)."""
    out = {}
    for r in truth["records"]:
        key = (r["file"], r["line"], r["function"])
        site = out.setdefault(key, dict.fromkeys(LIVE_FIELDS, 0))
        for f in LIVE_FIELDS:
            if f.startswith("peak") and not at_peak:
                continue
            site[f] += r[f]
    return out


def report_live(report):
    return {(s["file"], s["line"], s["function"]):
            {f: s[f] for f in LIVE_FIELDS} for s in report["sites"]}


class ExactLiveness(ProfileTest):

    def test_t_live_matches_its_truth(self):
        """Frees from another thread, a realloc chain, temporaries, an
        arena released in bulk, leaks, a distinct peak, and a forked child
        that frees a block it inherited (unmatched in the child)."""
        report, truth, _, rep = self.profile(program("t_live"))
        self.assertLossless(report)
        with open(os.path.join(self.tmp, "truth.json.child")) as f:
            child = json.load(f)
        # The parent waits for the child holding less than its own peak
        # (t_live.c), so the recording's peak is the parent's.
        self.assertLess(truth["leaked_bytes"] + child["peak_bytes"],
                        truth["peak_bytes"])
        want = truth_live(truth)
        for key, figures in truth_live(child, at_peak=False).items():
            self.assertNotIn(key, want)
            want[key] = figures
        self.assertEqual(report_live(report), want)
        live = report["liveness"]
        self.assertEqual(
            (live["peak_bytes"], live["peak_count"], live["leaked_bytes"],
             live["leaked_count"], live["temporary"],
             [live["unmatched_frees"]["count"],
              live["unmatched_frees"]["bytes"]]),
            (truth["peak_bytes"], truth["peak_count"],
             truth["leaked_bytes"] + child["leaked_bytes"],
             truth["leaked_count"] + child["leaked_count"],
             truth["temporary"] + child["temporary"],
             [a + b for a, b in zip(truth["unmatched_frees"],
                                    child["unmatched_frees"])]))
        self.assertIn("peak", rep.stdout)

    def test_no_frees_means_no_liveness(self):
        report, _, _, _ = self.profile(program("t_live"),
                                       record_args=["--no-frees"])
        self.assertLossless(report)
        self.assertIsNone(report["liveness"])
        self.assertTrue(all(s["peak_bytes"] is None for s in report["sites"]))
        # Asking for what was not recorded: one line, status 2, no file.
        svg = os.path.join(self.tmp, "peak.svg")
        rep = allocsites(["report", "-i", os.path.join(self.tmp, "run.data"),
                          "--weight", "peak", "--svg", svg])
        self.assertEqual(rep.returncode, 2, rep.stderr)
        self.assertEqual(len(rep.stderr.splitlines()), 1, rep.stderr)
        self.assertIn("--no-frees", rep.stderr)
        self.assertFalse(os.path.exists(svg))

    def test_timeline_and_sorted_table(self):
        svg = os.path.join(self.tmp, "t.svg")
        report, truth, _, rep = self.profile(
            program("t_live"), report_args=["--timeline", svg,
                                            "--sort", "peak"])
        self.assertLossless(report)
        with open(svg) as f:
            text = f.read()
        self.assertIn("<svg", text)
        # The site holding most at the peak is named on the chart.
        top = max(truth["records"], key=lambda r: r["peak_bytes"])
        self.assertIn("%s:%d" % (os.path.basename(top["file"]), top["line"]),
                      text)


class ExactPhases(ProfileTest):

    def test_t_phases_matches_its_truth(self):
        """Nested phases, two threads in different phases at once, an END
        closing an inner run, ENDs without BEGIN, a phase left open."""
        report, truth, _, rep = self.profile(program("t_phases"))
        self.assertLossless(report)
        got = {p["name"]: p for p in report["phases"]}
        for want in truth["phases"]:
            name = want["name"] or "phase %d" % want["id"]
            with self.subTest(phase=name):
                self.assertIn(name, got)
                p = got[name]
                self.assertEqual(
                    (p["runs"], p["count"], p["bytes"], p["left_live"],
                     p["peak"], p["growth"]),
                    (want["runs"], want["count"], want["bytes"],
                     want["left_live"], want["peak"], want["growth"]))
        self.assertEqual(report["liveness"]["unmatched_phase_ends"],
                         truth["unmatched_phase_ends"])
        self.assertEqual(report["liveness"]["open_phases"],
                         len(truth["open_phases"]))
        self.assertIn("still open at exit", rep.stderr)

    def test_sampled_phases_at_one_byte_are_exact(self):
        """Sampled mode charges samples to phases the same way; at R = 1
        every byte is a sample point, so the estimates are exact. The
        phase markers fire nothing (rt:phase_track: each sample carries
        its thread's phase), so the runs are not known."""
        report, truth, _, _ = self.profile(program("t_phases"),
                                           record_args=["--sample", "1"])
        self.assertLossless(report)
        self.assertEqual(report["mode"], "sampled")
        self.assertNotIn("phase_begin", report["events"])
        got = {p["name"]: p for p in report["phases"]}
        for want in truth["phases"]:
            name = want["name"] or "phase %d" % want["id"]
            with self.subTest(phase=name):
                if not want["count"]:   # no sample: not seen at all
                    self.assertNotIn(name, got)
                    continue
                self.assertEqual(
                    (got[name]["runs"], round(got[name]["count"]),
                     got[name]["bytes"], got[name]["left_live"],
                     got[name]["peak"], got[name]["growth"]),
                    (None, want["count"], want["bytes"], None, None, None))

    def test_sampled_open_phases_match_the_truth(self):
        """Sampled mode sees a phase only at the samples, so a run ended
        only where a later sample of the thread carried another phase:
        the last run of every thread was counted open at exit (here 3:
        both workers' and exit). The header's phase mark at a thread's end
        and at exit (rt__phase_mark) says the phase then: only exit, left
        open by the program, is (its truth, and the exact report's)."""
        report, truth, _, rep = self.profile(program("t_phases"),
                                             record_args=["--sample", "1"])
        self.assertLossless(report)
        self.assertEqual(report["mode"], "sampled")
        self.assertEqual(len(truth["open_phases"]), 1)
        self.assertEqual(report["liveness"]["open_phases"], 1)
        self.assertIn("phases: 1 still open at exit", rep.stdout)

    def test_a_program_closing_every_phase_has_none_open(self):
        """minicc ends every phase it begins (examples/minicc/main.c): the
        exact report says so, and the sampled report of the same run
        said one still open (the last run of its main thread)."""
        minicc = os.path.join(os.path.dirname(program("t_phases")), "..",
                              "minicc")
        got = {}
        for mode, record_args in (("exact", []),
                                  ("sampled", ["--sample", "64k"])):
            data = os.path.join(self.tmp, mode + ".data")
            out = os.path.join(self.tmp, mode + ".json")
            rec = allocsites(["record", "-o", data] + record_args +
                             ["--", minicc, "20"])
            self.assertEqual(rec.returncode, 0, rec.stderr)
            rep = allocsites(["report", "-i", data, "--json", out])
            self.assertEqual(rep.returncode, 0, rep.stderr)
            self.assertNotIn("still open", rep.stdout + rep.stderr)
            with open(out) as f:
                report = json.load(f)
            self.assertLossless(report)
            self.assertEqual(report["mode"], mode)
            self.assertTrue(report["phases"])
            got[mode] = report["liveness"]["open_phases"]
        self.assertEqual(got, {"exact": 0, "sampled": 0})

    def test_tag_filter_restricts_the_phases_count_and_bytes(self):
        # --tag restricted the sites and the liveness lines but left the
        # phase rows the whole program's, unlabelled: now each phase's
        # count and bytes are the tag's (from the truth's records of that
        # tag), its memory columns the whole program's, said in the table.
        _, truth, _, _ = self.profile(program("t_phases"))
        tag = max({r["tag"] for r in truth["records"]},
                  key=lambda t: sum(1 for r in truth["records"]
                                    if r["tag"] == t))
        want = {}
        for r in truth["records"]:
            if r["tag"] != tag:
                continue
            for ph in r.get("phases", ()):
                if ph["phase"] is not None:
                    c, b = want.get(ph["phase"], (0, 0))
                    want[ph["phase"]] = (c + ph["count"], b + ph["bytes"])
        out = os.path.join(self.tmp, "tag.json")
        rep = allocsites(["report", "-i", os.path.join(self.tmp, "run.data"),
                          "--tag", str(tag), "--json", out])
        self.assertEqual(rep.returncode, 0, rep.stderr)
        with open(out) as f:
            report = json.load(f)
        self.assertLossless(report)
        got = {p["id"]: (p["count"], p["bytes"]) for p in report["phases"]}
        self.assertTrue(want)
        self.assertEqual({i: v for i, v in got.items() if v != (0, 0)}, want)
        whole = {p["id"]: p["left_live"] for p in truth["phases"]}
        self.assertEqual({p["id"]: p["left_live"] for p in report["phases"]},
                         whole)
        self.assertIn("count and bytes are tag %s's" % tag, rep.stdout)

    def test_phase_filter_keeps_that_phase_only(self):
        data_report, truth, _, _ = self.profile(program("t_phases"))
        self.assertLossless(data_report)
        want = next(p for p in truth["phases"] if p["runs"] and p["name"])
        out = os.path.join(self.tmp, "phase.json")
        rep = allocsites(["report", "-i", os.path.join(self.tmp, "run.data"),
                          "--phase", want["name"], "--json", out])
        self.assertEqual(rep.returncode, 0, rep.stderr)
        with open(out) as f:
            report = json.load(f)
        self.assertEqual((report["totals"]["count"], report["totals"]["bytes"]),
                         (want["count"], want["bytes"]))
        sites = {}
        for r in truth["records"]:
            for ph in r.get("phases", ()):
                if ph["phase"] == want["id"]:
                    key = (r["file"], r["line"], r["function"])
                    c, b = sites.get(key, (0, 0))
                    sites[key] = (c + ph["count"], b + ph["bytes"])
        self.assertEqual({(s["file"], s["line"], s["function"]):
                          (s["count"], s["bytes"]) for s in report["sites"]},
                         sites)
        # the liveness lines are that phase's too, and say so (issue 23,
        # item 3): the sums of its sites, not the whole program's
        live = report["liveness"]
        self.assertEqual(live["scope"], "phase %s" % want["name"])
        for field, site_field in (("leaked_bytes", "leaked_bytes"),
                                  ("leaked_count", "leaked_count"),
                                  ("peak_bytes", "peak_bytes"),
                                  ("peak_count", "peak_count")):
            self.assertEqual(live[field],
                             sum(s[site_field] for s in report["sites"]))
        self.assertIn("leaked (phase %s's): " % want["name"], rep.stdout)
        whole = data_report["liveness"]
        self.assertIsNone(whole["scope"])
        self.assertEqual(live["unmatched_frees"], whole["unmatched_frees"])


if __name__ == "__main__":
    unittest.main()
