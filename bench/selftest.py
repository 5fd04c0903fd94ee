#!/usr/bin/python3
"""Checks the comparison's scorer and its readers of other tools' outputs
(bench/lib), each fed a small real-format sample with known answers.

  /usr/bin/python3 bench/selftest.py

`make bench` runs it before the benchmarks; no root, no perf, no tools."""
import json, os, sys, tempfile, unittest
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lib import score, tool_bpftrace, tool_dhat, tool_heaptrack, tool_massif


def truth(records, peak=None):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"argv": [], "peak_bytes": peak, "records": records}, f)
    try:
        return score.load_truth(f.name)
    finally:
        os.unlink(f.name)


def rec(line, count, nbytes, peak=None):
    return {"file": "/src/storm.c", "function": "f", "line": line,
            "tag": "ast", "count": count, "bytes": nbytes, "peak_bytes": peak}


class Score(unittest.TestCase):
    def setUp(self):
        self.t = truth([rec(10, 100, 1000, 300), rec(20, 50, 5000, 700)], 1000)

    def test_exact_profile_scores_one(self):
        p = {("storm.c", 10): [100, 1000], ("storm.c", 20): [50, 5000]}
        self.assertEqual(score.attribution(p, self.t), (1.0, 1.0))

    def test_over_count_does_not_make_up_for_a_miss(self):
        # 20 allocations of line 20 charged to line 10 (a wrong line).
        p = {("storm.c", 10): [120, 1200], ("storm.c", 20): [30, 3000]}
        a, b = score.attribution(p, self.t)
        self.assertAlmostEqual(a, 130 / 150)
        self.assertAlmostEqual(b, 4000 / 6000)

    def test_other_files_score_nothing(self):
        p = {("rt_alloc.c", 10): [150, 6000]}
        self.assertEqual(score.attribution(p, self.t), (0.0, 0.0))

    def test_paths_compare_by_basename(self):
        p = {}
        score.add(p, score.site_key("/elsewhere/storm.c", "10"), 100, 1000)
        self.assertEqual(p, {("storm.c", 10): [100, 1000]})

    def test_peak(self):
        p = {("storm.c", 10): [None, 300], ("storm.c", 20): [None, 600]}
        self.assertAlmostEqual(score.peak_attribution(p, self.t), 0.9)
        no_peak = truth([rec(10, 1, 1)])
        self.assertIsNone(score.peak_attribution(p, no_peak))

    def test_no_counts_gives_no_count_share(self):
        p = {("storm.c", 10): [None, 1000], ("storm.c", 20): [None, 5000]}
        self.assertEqual(score.attribution(p, self.t), (None, 1.0))


class Heaptrack(unittest.TestCase):
    # heaptrack 1.4 data file (format version 3: strings carry a length).
    DATA = "\n".join([
        "v 10400 3", "X /bin/storm",
        "s 7 storm.c", "s 4 leaf", "s 6 intern",
        "i 1000 1 2 1 71", "i 1010 1 3 1 68 2 1 72",
        "t 1 0", "t 2 0",
        "a 20 1", "a 8 2", "a 30 1",
        "+ 0", "+ 0", "+ 1", "- 0", "+ 2", ""])

    def test_counts_and_bytes_by_first_frame(self):
        p = tool_heaptrack.data_profile(self.DATA.split("\n"))
        # line 113: 2 x 0x20 + 1 x 0x30; the inlined frame (intern, 0x68)
        # is the innermost of ip 0x1010.
        self.assertEqual(p, {("storm.c", 0x71): [3, 0x70],
                             ("storm.c", 0x68): [1, 8]})


class Bpftrace(unittest.TestCase):
    OUT = "\n".join([
        "Attaching 1 probe...", "allocs=4 bytes=0 elapsed_ns=1 cpu_ns=1", "",
        "@n: 7", "",
        "@st[", "    0x401100", "    0x401200", "    0x401300",
        "]: count 4, average 10, total 40",
        "@st[]: count 1, average 5, total 5",
        "@st[", "    0x401100", "    0x401250",
        "]: count 1, average 8, total 8", ""])

    def test_parse(self):
        stacks, total = tool_bpftrace.parse(self.OUT)
        self.assertEqual(total, 7)
        self.assertEqual(stacks, [([0x401100, 0x401200, 0x401300], 4, 40),
                                  ([], 1, 5), ([0x401100, 0x401250], 1, 8)])

    def test_lost_counts_missing_stacks_and_missing_keys(self):
        # 1 event under the empty key, and @n = 7 against 6 in the stacks.
        self.assertEqual(tool_bpftrace.lost(*tool_bpftrace.parse(self.OUT)), 2)

    def test_first_frame_outside_the_allocator(self):
        lines = {0x401100: [("/src/rt_alloc.c", 260)],
                 0x4011ff: [("/src/storm.c", 104), ("/src/storm.c", 115)],
                 0x40124f: [("/src/rt_alloc.c", 300), ("/src/storm.c", 7)]}
        real = tool_bpftrace.addr2line
        tool_bpftrace.addr2line = lambda binary, addrs: lines
        try:
            stacks, _ = tool_bpftrace.parse(self.OUT)
            p = tool_bpftrace.symbolized_profile("/bin/storm", stacks)
        finally:
            tool_bpftrace.addr2line = real
        # callers are looked up at return address - 1; inlined frames first
        self.assertEqual(p, {("storm.c", 104): [4, 40], ("?", 0): [1, 5],
                             ("storm.c", 7): [1, 8]})


class Massif(unittest.TestCase):
    OUT = """desc: --threshold=0
snapshot=1
time=10
mem_heap_B=10
heap_tree=detailed
n1: 10 (heap allocation functions) malloc/new/new[], --alloc-fns, etc.
 n0: 10 0x1: main (storm.c:5)
#-----------
snapshot=2
heap_tree=peak
n3: 700 (heap allocation functions) malloc/new/new[], --alloc-fns, etc.
 n2: 500 0x10: rt_alloc (rt_alloc.c:260)
  n1: 300 0x20: intern (storm.c:104)
   n0: 300 0x20: leaf (storm.c:115)
  n0: 200 0x30: expr (storm.c:125)
 n0: 150 0x40: symbol_table (storm.c:183)
 n0: 50 0x50: _dl_allocate_tls (in /lib/ld.so)
#-----------
snapshot=3
heap_tree=empty
"""

    def test_peak_tree_by_first_frame_outside_the_allocator(self):
        p = tool_massif.peak_profile(self.OUT.split("\n"))
        self.assertEqual(p, {("storm.c", 104): [None, 300],
                             ("storm.c", 125): [None, 200],
                             ("storm.c", 183): [None, 150],
                             ("?", 0): [None, 50]})


class Dhat(unittest.TestCase):
    def test_program_points(self):
        doc = {"pps": [{"tb": 4096, "tbk": 1, "fs": [1, 2]},
                       {"tb": 64, "tbk": 2, "fs": [3, 4]}],
               "ftbl": ["[root]",
                        "0x1: _IO_file_doallocate (filedoalloc.c:101:3)",
                        "0x2: main (storm.c:9)",
                        "0x3: rt_alloc (rt_alloc.c:260)",
                        "0x4: leaf (storm.c:113)"]}
        self.assertEqual(tool_dhat.dhat_profile(doc),
                         {("filedoalloc.c", 101): [1, 4096],
                          ("storm.c", 113): [2, 64]})


if __name__ == "__main__":
    unittest.main()
