"""analyze/threads.py: allocations split by thread, charged to the
thread's innermost open phase as the liveness sweep charges them, and
kept only when they add up to the profile (pprof's thread labels)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "scripts"))
from allocsites_lib.analyze import liveness, threads  # noqa: E402
from allocsites_lib.read.tally import ExactEntry  # noqa: E402
from allocsites_lib.read.eventlog import EventLog  # noqa: E402

A, B = ("a",), ("b",)   # two keys (stand-ins for (frames, tag))


def log_of(events):
    log = EventLog()
    for t, (kind, pid, tid, a, b, *key) in enumerate(events):
        log.append(kind, t + 1, pid, tid, a, b, *key)
    return log


class Split(unittest.TestCase):
    def test_threads_and_nested_phases(self):
        log = log_of([
            ("alloc", 1, 1, 0x10, 8, A),           # main, outside
            ("phase_begin", 1, 2, 5, 0),
            ("alloc", 1, 2, 0x20, 16, A),          # thread 2 in phase 5
            ("phase_begin", 1, 2, 6, 0),
            ("alloc", 1, 2, 0x30, 32, B),          # innermost: phase 6
            ("alloc", 1, 3, 0x40, 64, B),          # thread 3: no phase
            ("phase_end", 1, 2, 9, 0),             # unmatched: ignored
            ("phase_end", 1, 2, 5, 0),             # closes 6 and 5
            ("alloc", 1, 2, 0x50, 100, A),         # outside again
            ("free", 1, 2, 0x50, 100),
        ])
        got = threads.split(log, sampled=False)
        self.assertEqual({pk: {t: list(v) for t, v in th.items()}
                          for pk, th in got.items()}, {
            (None, A): {(1, 1): [1, 8], (1, 2): [1, 100]},
            (5, A): {(1, 2): [1, 16]},
            (6, B): {(1, 2): [1, 32]},
            (None, B): {(1, 3): [1, 64]},
        })
        # the sweep charges the same allocations to the same phases
        sweep = liveness.sweep(log, "exact")
        phased = [(ph, e) for ph, e in sweep.entries.items()]
        self.assertTrue(threads.matches(got, phased))
        self.assertEqual(threads.relabelled(got, only=5),
                         {(None, A): {(1, 2): [1, 16]}})
        merged = threads.relabelled(got)
        self.assertEqual(merged[(None, A)],
                         {(1, 1): [1, 8], (1, 2): [2, 116]})
        self.assertEqual(threads.relabelled(got, "p{}".format)[("p6", B)],
                         {(1, 2): [1, 32]})

    def test_min_size_and_a_tid_of_another_process(self):
        log = log_of([
            ("phase_begin", 1, 7, 5, 0),
            ("alloc", 1, 7, 0x10, 4, A),           # under --min-size 8
            ("alloc", 2, 7, 0x20, 8, A),           # tid 7 of pid 2: no phase
        ])
        got = threads.split(log, sampled=False, min_size=8)
        self.assertEqual({pk: dict(th) for pk, th in got.items()},
                         {(None, A): {(2, 7): [1, 8]}})

    def test_sampled_counts_are_weight_over_size(self):
        log = log_of([("sample", 1, 1, 0x10, 4096, A, 64),
                      ("sample", 1, 2, 0x20, 1024, A, 512)])
        got = threads.split(log, sampled=True)
        self.assertEqual(dict(got[(None, A)]),
                         {(1, 1): [64.0, 4096], (1, 2): [2.0, 1024]})

    def test_matches_only_what_adds_up(self):
        by = {(None, A): {(1, 1): [1, 8], (1, 2): [2, 24]}}
        self.assertTrue(threads.matches(by, [(None, {A: ExactEntry(3, 32)})]))
        self.assertFalse(threads.matches(by, [(None, {A: ExactEntry(3, 33)})]))
        self.assertFalse(threads.matches(
            by, [(None, {A: ExactEntry(3, 32), B: ExactEntry(1, 1)})]))
        floats = {(None, A): {(1, 1): [0.1, 8], (1, 2): [0.2, 24]}}
        self.assertTrue(threads.matches(
            floats, [(None, {A: ExactEntry(0.30000000000000004, 32)})]))


if __name__ == "__main__":
    unittest.main()
