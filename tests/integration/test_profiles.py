"""Exact profiles under real perf, compared with each program's truth."""

import json
import xml.etree.ElementTree as ET
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (ROOT, ProfileTest, allocsites, program,  # noqa: E402
                     truth_sites)



def build_with_allocator(source, prog):
    """A test program's source (or a copy of it) with the reference
    allocator, as tests/Makefile.inc builds them."""
    subprocess.run(
        ["gcc", "-O2", "-g", "-pthread", "-I" + os.path.join(ROOT, "include"),
         "-I" + os.path.join(ROOT, "examples", "rtalloc"),
         "-I" + os.path.join(ROOT, "tests", "programs"),
         source, os.path.join(ROOT, "examples", "rtalloc", "rt_alloc.c"),
         "-o", prog], check=True)

class ExactProfiles(ProfileTest):

    def test_sites_tags_inline_recursion_realloc(self):
        report, truth, rec, rep = self.profile(program("t_basic"), ["3000"])
        self.assertMatchesTruth(report, truth)
        # Table and recording summary state the loss.
        self.assertIn("lost: 0", rep.stdout)
        self.assertIn("lost: 0", rec.stderr)
        tags = {t for s in report["sites"] for t in s["tags"]}
        self.assertEqual(tags, {"ast", "tokens", "7"})

    def test_inlined_helper_stack_shows_helper_and_caller(self):
        report, truth, _, _ = self.profile(program("t_basic"), ["50"])
        self.assertLossless(report)
        intern = [s for s in report["stacks"]
                  if s["frames"][0]["function"] == "intern"]
        self.assertEqual(len(intern), 1)
        frames = intern[0]["frames"]
        self.assertTrue(frames[0]["inlined"])
        self.assertEqual(frames[1]["function"], "main")
        self.assertFalse(frames[1]["inlined"])
        want = [r for r in truth["records"] if r["function"] == "intern"]
        self.assertEqual(frames[0]["line"], want[0]["line"])
        self.assertEqual(intern[0]["count"], want[0]["count"])

    def test_recursion_keeps_every_level(self):
        report, truth, _, _ = self.profile(program("t_basic"), ["10"])
        self.assertLossless(report)
        nest = [s for s in report["stacks"]
                if s["frames"][0]["function"] == "nest"]
        # nest(20) .. nest(0): 21 distinct stacks, the deepest has 21 nest
        # frames (the site and 20 recursive callers) above main.
        self.assertEqual(len(nest), 21)
        depths = sorted(sum(f["function"] == "nest" for f in s["frames"])
                        for s in nest)
        self.assertEqual(depths, list(range(1, 22)))
        self.assertEqual(report["truncated_allocations"], 0)

    def test_two_threads_allocating_at_once(self):
        report, truth, _, _ = self.profile(program("t_threads"), ["8000"])
        self.assertMatchesTruth(report, truth)
        functions = {s["function"] for s in report["sites"]}
        self.assertEqual(functions, {"worker_a", "worker_b", "main"})

    def test_four_hundred_probe_sites(self):
        # An allocator inlined into its callers: each call site is a
        # probe site of its own (400 USDT notes, 400 uprobes under one
        # event), each site's figures exact, with both readers.
        prog = program("t_sites")
        notes = subprocess.run(["readelf", "-n", prog],
                               stdout=subprocess.PIPE, check=True,
                               universal_newlines=True).stdout
        self.assertGreaterEqual(notes.count("Name: alloc"), 400)
        report, truth, _, _ = self.profile(prog)
        self.assertMatchesTruth(report, truth)
        self.assertEqual(len(report["sites"]), 400)
        data = os.path.join(self.tmp, "run.data")
        out_json = os.path.join(self.tmp, "perf.json")
        rep = allocsites(["report", "-i", data, "--json", out_json],
                         env={"ALLOCSITES_READER": "perf"})
        self.assertEqual(rep.returncode, 0, rep.stderr)
        with open(out_json) as f:
            self.assertMatchesTruth(json.load(f), truth)

    def test_allocator_in_shared_library(self):
        prog = program("t_shlib")
        libs = subprocess.run(["ldd", prog], stdout=subprocess.PIPE,
                              check=True, universal_newlines=True).stdout
        self.assertIn("librtalloc.so", libs)
        report, truth, _, _ = self.profile(prog, ["2500"])
        self.assertMatchesTruth(report, truth)
        dsos = {s["frames"][0]["dso"] for s in report["stacks"]}
        self.assertEqual(dsos, {os.path.realpath(prog)})
        self.assertIn("strings", {t for s in report["sites"] for t in s["tags"]})

    def test_program_arguments_pass_through_unchanged(self):
        args = ["40", "two words", "it's \"quoted\"", "", "$HOME *", "a\\b"]
        report, truth, _, _ = self.profile(program("t_basic"), args)
        self.assertEqual(truth["argv"][1:], args)
        self.assertMatchesTruth(report, truth)

    def test_a_launcher_runs_the_probed_program(self):
        # env VAR=1 nice -n 1 PROG: neither env nor nice has probes; the
        # program they exec is found among their arguments and probed
        report, truth, rec, _ = self.profile(
            "env", ["A=1", "nice", "-n", "1", program("t_basic"), "40"])
        self.assertEqual(truth["argv"][1:], ["40"])
        self.assertMatchesTruth(report, truth)

    def test_rebuilt_binary_is_probed_anew(self):
        # Same path, new build with every line moved: the second profile
        # must see the new lines (a stale uprobe would record nothing).
        src = os.path.join(ROOT, "tests", "programs", "t_basic.c")
        copy = os.path.join(self.tmp, "t_rebuilt.c")
        prog = os.path.join(self.tmp, "t_rebuilt")
        lines_seen = []
        for padding in ("", "\n\n\n/* moved */\n"):
            with open(src) as f:
                text = f.read()
            with open(copy, "w") as f:
                f.write(padding + text)
            build_with_allocator(copy, prog)
            report, truth, _, _ = self.profile(prog, ["200"])
            self.assertMatchesTruth(report, truth)
            lines_seen.append(sorted(s["line"] for s in report["sites"]))
        self.assertEqual([l + 4 for l in lines_seen[0]], lines_seen[1])

    def test_rebuilt_binary_with_an_old_time_is_named(self):
        # Rebuilt after the recording, then given an old modification time
        # (cp -p, rsync -a): the report must still say its lines are
        # wrong, by build-id (run.data.buildids, kept by the recorder).
        src = os.path.join(ROOT, "tests", "programs", "t_basic.c")
        prog = os.path.join(self.tmp, "t_again")

        def build(padding):
            copy = os.path.join(self.tmp, "t_again.c")
            with open(src) as f, open(copy, "w") as out:
                out.write(padding + f.read())
            build_with_allocator(copy, prog)
        build("")
        report, truth, _, _ = self.profile(prog, ["50"])
        self.assertMatchesTruth(report, truth)
        self.assertFalse([w for w in report["warnings"] if "changed" in w])
        build("\n\n/* moved */\n")
        os.utime(prog, (1000000000, 1000000000))   # 2001: older than the data
        out_json = os.path.join(self.tmp, "again.json")
        rep = allocsites(["report", "-i", os.path.join(self.tmp, "run.data"),
                          "--json", out_json])
        self.assertEqual(rep.returncode, 0, rep.stderr)
        with open(out_json) as f:
            warnings = json.load(f)["warnings"]
        self.assertIn("%s changed after the recording: its frames may be "
                      "wrong; record again" % os.path.realpath(prog), warnings)

    def test_stripped_binary_is_not_cut_short(self):
        # No symbols at all: _start is an unnamed frame outside
        # __libc_start_main, not a stack cut short; the advice to raise
        # --stack-size would be false.
        prog = os.path.join(self.tmp, "t_stripped")
        shutil.copy(program("t_basic"), prog)
        subprocess.run(["strip", "--strip-all", prog], check=True)
        report, truth, _, _ = self.profile(prog, ["50"])
        self.assertLossless(report)
        self.assertEqual(report["totals"]["count"],
                         sum(r["count"] for r in truth["records"]))
        self.assertEqual(report["truncated_allocations"], 0)
        self.assertFalse([w for w in report["warnings"] if "cut short" in w])
        self.assertIn("no symbols for %s: frames shown as addresses"
                      % os.path.realpath(prog), report["warnings"])

    def test_a_binary_gone_since_the_recording_is_named(self):
        # Deleted after recording: its frames cannot be named nor unwound
        # (no CFI). The stacks end at its first frame, and the advice says
        # why, not "raise --stack-size".
        prog = os.path.join(self.tmp, "t_gone")
        shutil.copy(program("t_basic"), prog)
        data = os.path.join(self.tmp, "run.data")
        truth_path = os.path.join(self.tmp, "truth.json")
        rec = allocsites(["record", "-o", data, "--", prog, "50"],
                         env={"TRUTH_FILE": truth_path})
        self.assertEqual(rec.returncode, 0, rec.stderr)
        os.unlink(prog)
        out_json = os.path.join(self.tmp, "report.json")
        rep = allocsites(["report", "-i", data, "--json", out_json])
        self.assertEqual(rep.returncode, 0, rep.stderr)
        with open(out_json) as f:
            report = json.load(f)
        with open(truth_path) as f:
            truth = json.load(f)
        self.assertLossless(report)
        count = sum(r["count"] for r in truth["records"])
        self.assertEqual(report["totals"]["count"], count)
        self.assertEqual(report["truncated_allocations"], count)
        self.assertIn("%s is gone (deleted or moved since the recording): "
                      "frames shown as addresses" % prog, report["warnings"])
        self.assertIn("%d allocations have stacks cut short (not reaching "
                      "main/_start): %s is gone since the recording, and a "
                      "stack is not unwound past a frame in a file that is "
                      "not there; report while it is in place"
                      % (count, prog), report["warnings"])
        self.assertFalse([w for w in report["warnings"]
                          if "--stack-size" in w])

    def wrap_truth(self, stdout):
        """{fI: (count, bytes)} as t_wrap printed them."""
        return {name: tuple(int(x) for x in v.split(","))
                for name, v in (l.split("=") for l in stdout.splitlines()
                                if l.startswith("f"))}

    def test_declared_wrapper_charges_its_callers(self):
        report, _, rec, rep = self.profile_plain(program("t_wrap"))
        truth = self.wrap_truth(rec.stdout)
        self.assertEqual({s["function"]: (s["count"], s["bytes"])
                          for s in report["sites"]}, truth)
        self.assertIn("wrappers declared by t_wrap (RT_SKIP): ^xmalloc$; "
                      "their callers are charged", report["warnings"])
        # the JSON's filters say which skip is in effect (issue 23, item 8)
        self.assertEqual(report["filters"]["skip_declared"], ["^xmalloc$"])
        self.assertIsNone(report["filters"]["skip"])

    def test_undeclared_wrapper_is_noticed(self):
        report, _, rec, rep = self.profile_plain(program("t_wrap_plain"))
        truth = self.wrap_truth(rec.stdout)
        self.assertEqual([(s["function"], s["count"]) for s in
                          report["sites"]],
                         [("xmalloc", sum(c for c, _ in truth.values()))])
        self.assertEqual(report["filters"]["skip_declared"], [])
        self.assertIn("xmalloc is reached from 10 different functions: if "
                      "it is a wrapper around the allocator, --skip "
                      "'^xmalloc$' charges its callers (or declare it once "
                      "with RT_SKIP in the source)", report["warnings"])
        # The stacks behind the wrapper: one per caller, each with that
        # caller's count and bytes.
        out = os.path.join(self.tmp, "stacks.json")
        st = allocsites(["report", "-i", os.path.join(self.tmp, "run.data"),
                         "--stacks", "xmalloc", "--top", "10", "--json", out])
        self.assertEqual(st.returncode, 0, st.stderr)
        self.assertIn("stacks reaching xmalloc: 10 of 10 shown", st.stdout)
        with open(out) as f:
            behind = json.load(f)["site_stacks"]
        self.assertEqual({s["frames"][1]["function"]: (s["count"], s["bytes"])
                          for s in behind["stacks"]}, truth)
        # The advice works.
        out = os.path.join(self.tmp, "skip.json")
        again = allocsites(["report", "-i", os.path.join(self.tmp, "run.data"),
                            "--skip", "^xmalloc$", "--json", out])
        self.assertEqual(again.returncode, 0, again.stderr)
        with open(out) as f:
            skipped = json.load(f)
        self.assertEqual({s["function"]: (s["count"], s["bytes"])
                          for s in skipped["sites"]}, truth)

    def profile_plain(self, prog):
        """profile() for a program that writes no truth file."""
        data = os.path.join(self.tmp, "run.data")
        out_json = os.path.join(self.tmp, "report.json")
        rec = allocsites(["record", "-o", data, "--", prog])
        self.assertEqual(rec.returncode, 0, rec.stderr)
        rep = allocsites(["report", "-i", data, "--json", out_json])
        self.assertEqual(rep.returncode, 0, rep.stderr)
        with open(out_json) as f:
            report = json.load(f)
        self.assertLossless(report)
        return report, None, rec, rep

    def test_diff_of_two_runs_is_their_truths_difference(self):
        small, small_truth, _, _ = self.profile(program("t_basic"), ["100"])
        os.rename(os.path.join(self.tmp, "run.data"),
                  os.path.join(self.tmp, "small.data"))
        big, big_truth, _, _ = self.profile(program("t_basic"), ["300"])
        self.assertMatchesTruth(small, small_truth)
        self.assertMatchesTruth(big, big_truth)
        out = os.path.join(self.tmp, "diff.json")
        svg_out = os.path.join(self.tmp, "diff.svg")
        d = allocsites(["diff", os.path.join(self.tmp, "small.data"),
                        os.path.join(self.tmp, "report.json"), "--json", out,
                        "--svg", svg_out])
        self.assertEqual(d.returncode, 0, d.stderr)
        with open(out) as f:
            sites = json.load(f)["sites"]
        before, after = truth_sites(small_truth), truth_sites(big_truth)
        self.assertEqual(
            {(s["file"], s["line"], s["function"]):
             (s["count_after"] - s["count_before"],
              s["bytes_after"] - s["bytes_before"]) for s in sites},
            {k: (after.get(k, (0, 0))[0] - before.get(k, (0, 0))[0],
                 after.get(k, (0, 0))[1] - before.get(k, (0, 0))[1])
             for k in set(before) | set(after)})
        self.assertEqual({s["match"] for s in sites}, {"same"})
        self.assertIn("total: %d -> %d bytes" % (small["totals"]["bytes"],
                                                 big["totals"]["bytes"]),
                      d.stdout)
        ET.parse(svg_out)

    def test_identical_binary_at_a_second_path(self):
        # Same build-id at two paths: perf's build-id cache (~/.debug)
        # maps the id to the first path, and perf probe on the second
        # failed with only "Failed to add events" until the wrapper gave
        # perf probe a private cache.
        first = program("t_basic")
        copy = os.path.join(self.tmp, "t_basic_copy")
        shutil.copy2(first, copy)
        for prog in (first, copy):
            report, truth, _, _ = self.profile(prog, ["30"])
            self.assertMatchesTruth(report, truth)

    def test_outputs_svg_folded_csv(self):
        out = {k: os.path.join(self.tmp, "out." + k)
               for k in ("svg", "folded", "csv")}
        report, truth, _, rep = self.profile(
            program("t_basic"), ["100"],
            ["--svg", out["svg"], "--folded", out["folded"], "--csv",
             out["csv"], "--weight", "count"])
        self.assertMatchesTruth(report, truth)
        with open(out["folded"]) as f:
            folded_total = sum(int(l.rsplit(" ", 1)[1]) for l in f)
        self.assertEqual(folded_total, report["totals"]["count"])
        with open(out["csv"]) as f:
            self.assertEqual(len(f.read().splitlines()),
                             len(report["sites"]) + 1)
        # The flame graph's root box holds every allocation, and every
        # site's function has a box.
        titles = [t.text for t in ET.parse(out["svg"]).getroot().iter(
            "{http://www.w3.org/2000/svg}title")]
        self.assertTrue(titles[0].startswith("all\n"), titles[0])
        self.assertIn("(%d bytes)\ncount: %d\n" % (
            report["totals"]["bytes"], report["totals"]["count"]), titles[0])
        names = {t.split("\n")[0].split(" (")[0] for t in titles}
        for site in report["sites"]:
            self.assertIn(site["function"], names)

if __name__ == "__main__":
    unittest.main()
