"""Tally: sampled estimates, the mode choice, and dropping the sample
records perf writes twice. No perf needed."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import math

from allocsites_lib.analyze import assemble, fold
from allocsites_lib.read.parse import Event
from allocsites_lib.read.tally import Tally
from fixtures import alloc, raw

STACK = (raw(0x10, "rt_alloc"), raw(0x20, "main"))


def sample(size, weight, tag=0, tid=1, time=None, frames=STACK, rate=None):
    return Event("sample", 1, tid, size, tag, weight, frames, 0x1000, time,
                 None, rate)


def timed_alloc(size, tid, time):
    return Event("alloc", 1, tid, size, 0, None, STACK, 0x1000, time)


class SampleRate(unittest.TestCase):
    """R comes from the events; the gcd of the weights only for an older
    header, with a warning."""

    def rate(self, *events):
        t = Tally()
        for e in events:
            t.add(e)
        return assemble.sample_rate(t)

    def test_rate_from_the_events_not_the_weights(self):
        # R = 1, ten 64-byte blocks: the weights' gcd says 64.
        r, warning = self.rate(*[sample(64, 64, rate=1)] * 10)
        self.assertEqual((r, warning), (1, None))
        r, warning = self.rate(sample(64, 65536, rate=65536),
                               sample(64, 131072, rate=65536))
        self.assertEqual((r, warning), (65536, None))

    def test_older_header_falls_back_to_the_gcd_and_says_so(self):
        r, warning = self.rate(*[sample(64, 64)] * 10)
        self.assertEqual(r, 64)
        self.assertIn("older rt_probes.h", warning)
        self.assertEqual(self.rate(), (0, None))

    def test_different_rates_use_the_largest_and_say_so(self):
        r, warning = self.rate(sample(64, 4096, rate=4096),
                               sample(64, 65536, tid=2, rate=65536))
        self.assertEqual(r, 65536)
        self.assertIn("different rates (R = 4096, 65536", warning)

    def test_rate_one_has_no_error(self):
        site = fold.Site.__new__(fold.Site)
        site.bytes, site.weight_by_size2 = 640, 10 / 64
        self.assertEqual(site.errors(1), (0.0, 0.0))
        self.assertAlmostEqual(site.errors(64)[0], math.sqrt(64 * 640))


class SampledTally(unittest.TestCase):

    def test_estimates_are_sums_of_weight_and_weight_over_size(self):
        t = Tally()
        t.add(sample(64, 65536))          # k = 1 at R = 64 KiB
        t.add(sample(200000, 3 * 65536))  # k = 3: one big block, 3 points
        (entry,) = t.sampled.values()
        self.assertEqual(entry.bytes, 4 * 65536)
        self.assertAlmostEqual(entry.count, 65536 / 64 + 3 * 65536 / 200000)
        self.assertAlmostEqual(entry.weight_by_size2, 65536 / 64 ** 2 +
                               3 * 65536 / 200000 ** 2)
        self.assertEqual(entry.samples, 2)
        self.assertEqual(t.weight_gcd, 65536)
        self.assertEqual(t.mode(), "sampled")

    def test_gcd_recovers_r_from_multiples(self):
        t = Tally()
        for k in (3, 5, 1, 2):
            t.add(sample(100, k * 4096))
        self.assertEqual(t.weight_gcd, 4096)

    def test_exact_wins_when_both_streams_recorded(self):
        t = Tally()
        t.add(alloc(STACK, 10))
        t.add(sample(10, 4096))
        self.assertEqual(t.mode(), "exact")

    def test_zero_size_or_weight_is_not_counted(self):
        t = Tally()
        t.add(sample(0, 4096))
        t.add(sample(10, 0))
        self.assertEqual(dict(t.sampled), {})

    def test_site_errors_follow_the_model(self):
        site = fold.Site(None)
        site.bytes = 1 << 20
        site.weight_by_size2 = 7.5
        b, c = site.errors(4096)
        self.assertAlmostEqual(b, math.sqrt(4096 * (1 << 20)))
        self.assertAlmostEqual(c, math.sqrt(4096 * 7.5))


class DuplicateRecords(unittest.TestCase):

    def test_same_thread_same_nanosecond_is_dropped_once(self):
        t = Tally()
        for ev in (timed_alloc(8, 1, 100), timed_alloc(8, 1, 100),
                   timed_alloc(9, 1, 101)):
            t.add(ev)
        self.assertEqual((t.duplicates, t.events["alloc"]), (1, 2))
        self.assertEqual(t.duplicate_kinds, {"alloc": 1})
        self.assertEqual(sum(e.count for e in t.stacks.values()), 2)
        self.assertEqual(sum(e.bytes for e in t.stacks.values()), 17)

    def test_other_thread_same_nanosecond_is_kept(self):
        t = Tally()
        t.add(timed_alloc(8, 1, 100))
        t.add(timed_alloc(8, 2, 100))
        self.assertEqual((t.duplicates, t.events["alloc"]), (0, 2))

    def test_events_without_time_are_never_dropped(self):
        t = Tally()
        t.add(timed_alloc(8, 1, None))
        t.add(timed_alloc(8, 1, None))
        self.assertEqual((t.duplicates, t.events["alloc"]), (0, 2))


if __name__ == "__main__":
    unittest.main()
