"""Tally.merge: the tallies of perf script workers on disjoint time ranges
add up to the tally of one run over the whole recording, field by field.
No perf needed."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import pickle

from allocsites_lib.read import tally as fold  # the Tally and its rules
from allocsites_lib.read.tally import Tally
from allocsites_lib.read.parse import Event, GuestFrames
from fixtures import raw

A = (raw(0x10, "rt_alloc"), raw(0x20, "parse"), raw(0x30, "main"))
B = (raw(0x10, "rt_alloc"), raw(0x40, "lex"), raw(0x30, "main"))


def ev(kind, size, tid, time, frames=A, tag=1, weight=None, phase=None):
    return Event(kind, 1, tid, size, tag, weight, frames, 0x1000, time,
                 phase=phase)


def exit_ev(pid, time, counts):
    return Event("exit", pid, pid, 0, 0, None, (), None, time, counts)


# One recording, in time order; every Tally field gets a non-default value:
# stacks, sampled and weight_gcd, events, malformed (None), filtered (under
# --min-size 4), frees, no_callchain, duplicates (same tid and time twice),
# _last_time, _sample_phase and phases_from_samples (a sample in a tracked
# phase), received (every event of process 1), fired (rt:exit of
# two ELF files of process 1, in two time ranges), padding (an rt:exit
# whose counts are all 2^64-1, include/rt_exit.h) and guests (rt:guest's
# definitions, the first of an id kept, and an allocation at one).
EVENTS = [
    ev("alloc", 16, 1, 100), ev("alloc", 16, 1, 100),    # a duplicate
    ev("alloc", 2, 1, 110),                               # filtered
    ev("alloc", 32, 2, 120, B, tag=2), None,
    ev("free", 16, 1, 130), ev("sample", 64, 2, 140, weight=8192),
    ev("alloc", 8, 1, 200, ()),                           # no call chain
    ev("alloc", 48, 2, 210), ev("sample", 100, 1, 220, B, weight=4096 * 3),
    ev("free", 32, 2, 230), None, ev("alloc", 16, 2, 240),
    ev("alloc", 16, 2, 240),
    ev("sample", 10, 2, 250, weight=4096, phase=3),   # in phase 2 (tracked)
    exit_ev(1, 260, (5, 2, 3)), exit_ev(1, 270, (2, 0, 0)),
    exit_ev(1, 280, (fold.EXIT_PADDING,) * 8),            # padding
    Event("guest", 1, 1, 0, 0, None, (), None, 290,
          (7, 0, 12, "a.lua", "f")),
    ev("alloc", 24, 1, 300, GuestFrames(A, 7)),
    Event("guest", 1, 2, 0, 0, None, (), None, 310,
          (7, 0, 99, "b.lua", "g")),                      # not kept
]


def tally_of(events, min_size=4):
    t = Tally(min_size)
    for e in events:
        t.add(e)
    return t


def same_time(pair):
    return len(pair) == 2 and None not in pair and pair[0].time == pair[1].time


def state(t):
    """Every field, in comparable form (floats rounded: a sum in another
    order may differ in the last bits)."""
    out = {}
    for name, value in vars(t).items():
        if name == "sampled":
            value = {k: [round(x, 9) for x in (v.count, v.bytes,
                                               v.weight_by_size2, v.samples)]
                     for k, v in value.items()}
        elif isinstance(value, dict):
            value = dict(value)
        out[name] = value
    return out


class MergeTest(unittest.TestCase):

    def test_every_field_has_a_rule(self):
        # Adding a field to Tally without a merge rule fails here.
        self.assertEqual(set(vars(Tally())), set(fold.MERGE_RULES))

    def test_split_anywhere_merges_to_the_whole(self):
        whole = tally_of(EVENTS)
        for name, value in vars(whole).items():
            with self.subTest(field=name):
                self.assertTrue(value, "test data leaves %s at its default"
                                % name)
        for cut in range(len(EVENTS) + 1):
            if same_time(EVENTS[cut - 1:cut + 1]):
                continue   # time_ranges.split never cuts between equal times
            with self.subTest(cut=cut):
                merged = tally_of(EVENTS[:cut]).merge(tally_of(EVENTS[cut:]))
                self.assertEqual(state(merged), state(whole))

    def test_a_duplicate_pair_cut_apart_counts_twice(self):
        # Why the split keeps equal times together.
        merged = tally_of(EVENTS[:1]).merge(tally_of(EVENTS[1:]))
        self.assertEqual(merged.duplicates, tally_of(EVENTS).duplicates - 1)

    def test_three_parts(self):
        parts = [EVENTS[:4], EVENTS[4:9], EVENTS[9:]]
        merged = tally_of(parts[0])
        for p in parts[1:]:
            merged.merge(tally_of(p))
        self.assertEqual(state(merged), state(tally_of(EVENTS)))

    def test_merge_into_an_empty_tally(self):
        merged = Tally(4).merge(tally_of(EVENTS))
        self.assertEqual(state(merged), state(tally_of(EVENTS)))

    def test_last_time_keeps_the_latest(self):
        merged = tally_of(EVENTS[9:]).merge(tally_of(EVENTS[:9]))
        self.assertEqual(merged._last_time, tally_of(EVENTS)._last_time)

    def test_field_without_rule_raises(self):
        t = Tally()
        t.new_counter = 3
        with self.assertRaisesRegex(TypeError, "new_counter"):
            t.merge(Tally())
        with self.assertRaisesRegex(TypeError, "new_counter"):
            Tally().merge(t)

    def test_different_min_size_refused(self):
        with self.assertRaisesRegex(ValueError, "min_size"):
            Tally(1).merge(Tally(2))

    def test_pickles(self):
        # Workers hand their Tally over as a pickle.
        t = tally_of(EVENTS)
        back = pickle.loads(pickle.dumps(t))
        self.assertEqual(state(back), state(t))
        back.add(ev("alloc", 16, 9, 999, B, tag=7))
        self.assertEqual(back.stacks[(B, 7)], fold.ExactEntry(1, 16))


if __name__ == "__main__":
    unittest.main()
