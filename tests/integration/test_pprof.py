"""--pprof against the real consumer: go tool pprof must show the same
sites, counts, bytes and stacks as allocsites' own report of the same
recording."""

import collections
import datetime
import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ProfileTest, allocsites, program  # noqa: E402


def pprof(args, path):
    proc = subprocess.run(["go", "tool", "pprof"] + args + [path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError("go tool pprof failed: " + proc.stderr)
    return proc.stdout


def flat(text, unit=""):
    """{function: flat value} from pprof -top (functions with some)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(\d+)%s\s+[\d.]+%%\s+[\d.]+%%\s+\d+%s\s+[\d.]+%%"
                     r"\s+(.+?)(?: \(inline\))?$" % (unit, unit), line)
        if m and int(m.group(1)):
            out[m.group(2)] = int(m.group(1))
    return out


def top(path, sample_index, focus=None):
    """{function: flat value} of every function pprof -top shows for one
    sample type (bytes for *_space); focus: a -tagfocus (KEY=VALUE)."""
    unit = "B" if sample_index.endswith("_space") else ""
    return flat(pprof(["-top", "-nodecount=100000", "-nodefraction=0",
                       "-sample_index=" + sample_index] +
                      (["-unit=B"] if unit else []) +
                      (["-tagfocus=" + focus] if focus else []), path), unit)


def per_function(report, count_field, bytes_field):
    """({function: count}, {function: bytes}) summed over the report's
    sites, functions with nothing left out."""
    count, nbytes = collections.Counter(), collections.Counter()
    for s in report["sites"]:
        count[s["function"]] += s[count_field]
        nbytes[s["function"]] += s[bytes_field]
    return ({k: v for k, v in count.items() if v},
            {k: v for k, v in nbytes.items() if v})


def traces(text):
    """The set of stacks (function names, site first) pprof -traces shows."""
    out = set()
    for block in text.split("-----------+")[1:]:
        names = [re.sub(r" \(inline\)$", "", l[11:].strip())
                 for l in block.splitlines()[1:]
                 # label lines ("       tag:  ast", "     bytes:  64B")
                 if l[11:].strip() and not re.match(r"^\s*\w+:  ", l)]
        if names:
            out.add(tuple(names))
    return out


class Pprof(ProfileTest):

    def test_go_tool_pprof_reads_what_the_report_says(self):
        path = os.path.join(self.tmp, "p.pb.gz")
        report, truth, _, _ = self.profile(program("t_basic"), ["300"],
                                           ["--pprof", path])
        self.assertMatchesTruth(report, truth)
        count, nbytes = per_function(report, "count", "bytes")
        self.assertEqual(top(path, "alloc_objects"), count)
        self.assertEqual(top(path, "alloc_space"), nbytes)
        # functions without line info ("_start+0x20") are named without
        # their offset in pprof (issue 23, item 2)
        want = {tuple(re.sub(r"\+0x[0-9a-f]+$", "", f["function"])
                      for f in s["frames"]) for s in report["stacks"]}
        self.assertEqual(traces(pprof(["-traces"], path)), want)
        self.assertNotRegex(pprof(["-traces"], path), r"\+0x[0-9a-f]+\n")

    def test_phase_labels_split_the_profile_by_phase(self):
        # Without --phase, each sample carries its phase as the label
        # "phase", so pprof -tagfocus finds each phase's bytes (issue 23,
        # item 2)
        path = os.path.join(self.tmp, "labels.pb.gz")
        report, truth, _, _ = self.profile(program("t_phases"), [],
                                           ["--pprof", path])
        self.assertLossless(report)
        whole = sum(top(path, "alloc_space").values())
        self.assertEqual(whole, report["totals"]["bytes"])
        checked = 0
        for want in truth["phases"]:
            if not want["bytes"] or not want["name"]:
                continue
            got = top(path, "alloc_space", "phase=" + want["name"])
            with self.subTest(phase=want["name"]):
                self.assertEqual(sum(got.values()), want["bytes"])
            checked += 1
        self.assertGreater(checked, 1)

    def test_bytes_label_filters_by_size(self):
        # Go's numeric label "bytes" on each sample (its bytes over its
        # count), so that -tagfocus=bytes=... keeps allocations by size
        # (issue 23, item 2). t_basic's sites of one size (64 B, 1 MiB)
        # are found whole; its records of several sizes have means far
        # from both.
        path = os.path.join(self.tmp, "bytes.pb.gz")
        report, truth, _, _ = self.profile(program("t_basic"), ["300"],
                                           ["--pprof", path])
        self.assertLossless(report)
        for focus, keep in (("64b", lambda mean: mean == 64),
                            ("1mb:", lambda mean: mean >= 1 << 20),
                            (":63b", lambda mean: mean <= 63)):
            want = collections.Counter()
            for r in truth["records"]:
                if r["count"] and keep(r["bytes"] / r["count"]):
                    want[r["function"]] += r["bytes"]
            got = top(path, "alloc_space", "bytes=" + focus)
            with self.subTest(focus=focus):
                self.assertTrue(want)
                self.assertEqual(got, dict(want))

    def test_thread_labels_split_the_profile_by_thread(self):
        # Numeric labels "pid" and "tid" on the allocations (issue 23,
        # item 2): t_threads' main, worker_a and worker_b each run in a
        # thread of their own, so -tagfocus=tid=N must give exactly one
        # of them, with the truth's bytes.
        path = os.path.join(self.tmp, "threads.pb.gz")
        report, truth, _, _ = self.profile(program("t_threads"), ["2000"],
                                           ["--pprof", path])
        self.assertLossless(report)
        want = collections.Counter()
        for r in truth["records"]:
            want[r["function"]] += r["bytes"]
        tags = pprof(["-tags"], path)
        tids = re.findall(r"(?m)^\s+\S+ \(\s*[\d.]+%\): (\d+)$",
                          tags.split(" tid:")[1])
        pids = re.findall(r"(?m)^\s+\S+ \(\s*[\d.]+%\): (\d+)$",
                          tags.split(" pid:")[1].split(" tag:")[0])
        self.assertEqual(len(pids), 1)
        self.assertEqual(len(tids), 3)
        got = {}
        for tid in tids:
            flat_bytes = top(path, "alloc_space", "tid=" + tid)
            with self.subTest(tid=tid):
                self.assertEqual(len(flat_bytes), 1, flat_bytes)
            got.update(flat_bytes)
        self.assertEqual(got, dict(want))

    def test_min_size_applies_to_phases_as_to_the_table(self):
        # --min-size left the smaller allocations in the phases' rows and
        # in a phase-labelled pprof (t_phases: pprof 8836 B where the
        # table said 8372 B); every view now leaves them out.
        path = os.path.join(self.tmp, "min.pb.gz")
        report, truth, _, _ = self.profile(program("t_phases"), [],
                                           ["--pprof", path,
                                            "--min-size", "100"])
        self.assertLossless(report)
        whole = sum(r["bytes"] for r in truth["records"])
        self.assertLess(report["totals"]["bytes"], whole)   # some left out
        self.assertEqual(sum(top(path, "alloc_space").values()),
                         report["totals"]["bytes"])
        for row in report["phases"]:
            if not row["name"]:
                continue
            got = top(path, "alloc_space", "phase=" + row["name"])
            with self.subTest(phase=row["name"]):
                self.assertEqual(sum(got.values()), row["bytes"])

    def test_time_range_and_mappings_that_do_not_overlap(self):
        # What a continuous-profiling upload files a profile under, and
        # binaries pprof can tell apart (issue 23, item 2)
        path = os.path.join(self.tmp, "t.pb.gz")
        before = time.time()
        self.profile(program("t_basic"), ["300"], ["--pprof", path])
        raw = pprof(["-raw"], path)
        m = re.search(r"^Time: (\S+ \S+)", raw, re.M)
        self.assertIsNotNone(m, raw)
        when = datetime.datetime.strptime(m.group(1)[:26],
                                          "%Y-%m-%d %H:%M:%S.%f")
        start = when.replace(tzinfo=datetime.timezone.utc).timestamp()
        self.assertLessEqual(before - 1, start)
        self.assertLessEqual(start, time.time())
        self.assertRegex(raw, r"(?m)^Duration: [0-9.]+")
        ranges = [(int(a, 16), int(b, 16)) for a, b in re.findall(
            r"(?m)^\d+: 0x([0-9a-f]+)/0x([0-9a-f]+)/0x[0-9a-f]+ ", raw)]
        self.assertGreaterEqual(len(ranges), 2)   # t_basic and libc
        ranges.sort()
        for (a0, a1), (b0, _) in zip(ranges, ranges[1:]):
            self.assertLess(a0, a1)
            self.assertLessEqual(a1, b0)

    def test_inuse_is_what_was_live_at_exit(self):
        """With frees recorded the profile also has Go's inuse_objects and
        inuse_space (live at the end, as a heap profile taken at exit),
        equal to the report's leaked figures."""
        path = os.path.join(self.tmp, "live.pb.gz")
        report, truth, _, _ = self.profile(program("t_live"), [],
                                           ["--pprof", path])
        self.assertLossless(report)
        count, nbytes = per_function(report, "leaked_count", "leaked_bytes")
        self.assertEqual(top(path, "inuse_objects"), count)
        self.assertEqual(top(path, "inuse_space"), nbytes)

    def test_phase_restricts_the_profile(self):
        path = os.path.join(self.tmp, "phase.pb.gz")
        report, truth, _, _ = self.profile(program("t_phases"), [],
                                           ["--pprof", path, "--phase",
                                            "worker_b"])
        self.assertLossless(report)
        want = next(p for p in truth["phases"] if p["name"] == "worker_b")
        self.assertEqual(sum(top(path, "alloc_space").values()),
                         want["bytes"])
        self.assertEqual(report["totals"]["bytes"], want["bytes"])

    def test_declared_wrappers_are_skipped_as_in_the_table(self):
        # t_wrap declares xmalloc with RT_SKIP: the table charges its ten
        # callers, and pprof must too, not xmalloc with every byte
        # (issue 23, item 1); --skip on a program that declares nothing
        # likewise.
        for prog, args in (("t_wrap", []),
                           ("t_wrap_plain", ["--skip", "^xmalloc$"])):
            data = os.path.join(self.tmp, prog + ".data")
            out = os.path.join(self.tmp, prog + ".json")
            path = os.path.join(self.tmp, prog + ".pb.gz")
            rec = allocsites(["record", "-o", data, "--", program(prog)])
            self.assertEqual(rec.returncode, 0, rec.stderr)
            rep = allocsites(["report", "-i", data, "--json", out,
                              "--pprof", path] + args)
            self.assertEqual(rep.returncode, 0, rep.stderr)
            with open(out) as f:
                report = json.load(f)
            with self.subTest(prog=prog):
                self.assertLossless(report)
                count, nbytes = per_function(report, "count", "bytes")
                self.assertEqual(len(count), 10)
                self.assertNotIn("xmalloc", count)
                self.assertEqual(top(path, "alloc_objects"), count)
                self.assertEqual(top(path, "alloc_space"), nbytes)
                want = {tuple(re.sub(r"\+0x[0-9a-f]+$", "", f["function"])
                              for f in s["frames"]) for s in report["stacks"]}
                self.assertEqual(traces(pprof(["-traces"], path)), want)


if __name__ == "__main__":
    unittest.main()
