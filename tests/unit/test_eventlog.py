"""EventLog: the compact, time-ordered log of rt events behind liveness.
No perf needed."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import pickle
import random

from allocsites_lib.read.eventlog import EventLog, KINDS
from fixtures import raw

K1 = ((raw(0x10, "rt_alloc"), raw(0x20, "parse")), 1)
K2 = ((raw(0x10, "rt_alloc"), raw(0x40, "lex")), 2)
K3 = ((raw(0x10, "rt_alloc"), raw(0x50, "emit")), 0)

# One of every kind, as (kind, time, pid, tid, a, b, size, key): what
# iteration must give back.
EVENTS = [
    ("alloc", 100, 7, 7, 0x1000, 16, 16, K1),
    ("sample", 110, 7, 8, 0x2000, 65536, 24, K2),
    ("free", 120, 7, 8, 0x1000, 16, 16, None),
    ("sample_free", 130, 7, 7, 0x2000, 65536, 65536, None),
    ("release", 140, 7, 7, 0x10000, 4096, 4096, None),
    ("commit", 150, 7, 7, 0x7f0000000000, 1 << 21, 1 << 21, None),
    ("decommit", 160, 7, 7, 0x7f0000000000, 1 << 20, 1 << 20, None),
    ("phase_begin", 170, 7, 9, 3, 0, 0, None),
    ("phase_end", 180, 7, 9, 3, 0, 0, None),
    ("alloc", 190, 8, 8, (1 << 64) - 16, 1, 1, K1),
    ("exit", 200, 7, 7, 0, 0, 0, None),
]


def log_of(events):
    log = EventLog()
    for kind, time, pid, tid, a, b, size, key in events:
        log.append(kind, time, pid, tid, a, b, key=key,
                   size=size if kind == "sample" else None)
    return log


def random_events(rng, n, t0=0):
    keys = [K1, K2, K3, None]
    out, t = [], t0
    for _ in range(n):
        t += rng.randrange(0, 3)
        kind = rng.choice(KINDS)
        key = rng.choice(keys) if kind in ("alloc", "sample") else None
        b = rng.randrange(0, 1 << 40)
        size = rng.randrange(1, 1 << 20) if kind == "sample" else b
        out.append((kind, t, rng.randrange(1, 5), rng.randrange(1, 9),
                    rng.randrange(0, 1 << 64), b, size, key))
    return out


class RoundTrip(unittest.TestCase):
    def test_every_kind_comes_back(self):
        log = log_of(EVENTS)
        self.assertEqual(len(log), len(EVENTS))
        self.assertEqual(list(log), EVENTS)

    def test_keys_interned_once(self):
        log = log_of(EVENTS)
        self.assertEqual(log.keys, [K1, K2])
        self.assertEqual(list(log.keyidx), [0, 1, 0])
        # Equal keys built separately are one key.
        copy = ((raw(0x10, "rt_alloc"), raw(0x20, "parse")), 1)
        self.assertEqual(log.intern(copy), 0)

    def test_sizes_kept_only_for_samples(self):
        log = log_of(EVENTS)
        self.assertEqual(list(log.sizes), [24])

    def test_sample_without_size_takes_the_weight(self):
        log = EventLog()
        log.append("sample", 1, 1, 1, 0x10, 4096, key=K1)
        self.assertEqual(list(log), [("sample", 1, 1, 1, 0x10, 4096, 4096,
                                      K1)])

    def test_random_round_trip(self):
        events = random_events(random.Random(12), 3000)
        self.assertEqual(list(log_of(events)), events)

    def test_missing_time_takes_the_previous(self):
        log = EventLog()
        log.append("alloc", None, 1, 1, 0x10, 8, key=K1)
        log.append("free", 50, 1, 1, 0x10, 8)
        log.append("free", None, 1, 1, 0x20, 8)
        self.assertEqual(list(log.times), [0, 50, 50])

    def test_bad_values_are_clamped_not_raised(self):
        log = EventLog()
        log.append("alloc", 5, 1, 1, -1, 1 << 70, key=K1)
        log.append("free", 6, None, "x", None, -3)
        log.append("sample", 7, 1 << 40, 1, 8, 9, key=K2, size=-5)
        self.assertEqual(list(log), [
            ("alloc", 5, 1, 1, 0, (1 << 64) - 1, (1 << 64) - 1, K1),
            ("free", 6, -(1 << 31), -(1 << 31), 0, 0, 0, None),
            ("sample", 7, (1 << 31) - 1, 1, 8, 9, 0, K2)])
        # Every column still holds one entry per event.
        self.assertEqual([len(c) for c in log.columns()],
                         [3, 3, 3, 3, 3, 3, 1, 2])

    def test_unknown_kind_refused(self):
        log = EventLog()
        with self.assertRaises(KeyError):
            log.append("malloc", 1, 1, 1, 0, 0)
        self.assertEqual(len(log), 0)


class Extend(unittest.TestCase):
    def test_concatenation_with_key_remapping(self):
        first = log_of(EVENTS[:3])      # keys K1, K2
        second = EventLog()
        second.append("alloc", 300, 7, 7, 0x3000, 8, key=K3)
        second.append("alloc", 310, 7, 7, 0x3008, 8, key=K2)
        second.append("sample", 320, 7, 7, 0x3010, 4096, key=K1, size=8)
        self.assertEqual(second.keys, [K3, K2, K1])
        self.assertIs(first.extend(second), first)
        self.assertEqual(first.keys, [K1, K2, K3])
        self.assertEqual(list(first), EVENTS[:3] + list(second))
        self.assertEqual(list(first.keyidx), [0, 1, 2, 1, 0])

    def test_split_anywhere_extends_to_the_whole(self):
        events = random_events(random.Random(3), 400)
        whole = log_of(events)
        for cut in (0, 1, 57, 200, 399, 400):
            with self.subTest(cut=cut):
                merged = log_of(events[:cut]).extend(log_of(events[cut:]))
                self.assertEqual(merged, whole)
                self.assertEqual(list(merged), events)

    def test_empty_logs(self):
        whole = log_of(EVENTS)
        self.assertEqual(list(EventLog().extend(log_of(EVENTS))), EVENTS)
        self.assertEqual(list(log_of(EVENTS).extend(EventLog())), EVENTS)
        self.assertEqual(len(EventLog().extend(EventLog())), 0)
        self.assertEqual(list(EventLog()), [])
        self.assertEqual(EventLog(), EventLog())
        self.assertNotEqual(EventLog(), whole)

    def test_out_of_order_parts_are_merged_by_time(self):
        events = random_events(random.Random(5), 300)
        later = log_of(events[150:])
        merged = later.extend(log_of(events[:150]))
        self.assertEqual([e[1] for e in merged], [e[1] for e in events])
        self.assertEqual(sorted(map(repr, merged)),
                         sorted(map(repr, events)))

    def test_equal_times_keep_the_first_log_first(self):
        a, b = EventLog(), EventLog()
        a.append("alloc", 10, 1, 1, 0xa, 1, key=K1)
        a.append("alloc", 20, 1, 1, 0xb, 1, key=K1)
        b.append("free", 10, 1, 1, 0xa, 1)
        a.extend(b)
        self.assertEqual([(e[0], e[1]) for e in a],
                         [("alloc", 10), ("free", 10), ("alloc", 20)])


class Pickling(unittest.TestCase):
    def test_pickles(self):
        log = log_of(EVENTS)
        back = pickle.loads(pickle.dumps(log, pickle.HIGHEST_PROTOCOL))
        self.assertEqual(list(back), EVENTS)
        self.assertEqual(back, log)
        # The key index is rebuilt: appending interns into the same ints.
        back.append("alloc", 500, 7, 7, 0x9, 1, key=K2)
        self.assertEqual(back.keyidx[-1], 1)
        self.assertEqual(len(back.keys), 2)

    def test_empty_log_pickles(self):
        back = pickle.loads(pickle.dumps(EventLog()))
        self.assertEqual(len(back), 0)
        self.assertEqual(list(back), [])

    def test_pickle_is_compact(self):
        log = EventLog()
        for i in range(10000):
            log.append("alloc", i, 1, 1, 0x10000 + 16 * i, 16, key=K1)
        size = len(pickle.dumps(log, pickle.HIGHEST_PROTOCOL))
        self.assertLess(size, 10000 * 40)


class Memory(unittest.TestCase):
    def test_bytes_per_event(self):
        # The figure the module docstring states: an exact log, as many
        # frees as allocations.
        log = EventLog()
        n = 200000
        for i in range(n // 2):
            log.append("alloc", 2 * i, 1, 1, 0x10000 + 16 * i, 16, key=K1)
            log.append("free", 2 * i + 1, 1, 1, 0x10000 + 16 * i, 16)
        exact = 1 + 8 + 4 + 4 + 8 + 8 + 4 / 2
        self.assertEqual(sum(c.itemsize * len(c) for c in log.columns()),
                         exact * n)
        self.assertLess(log.nbytes() / n, 40)


if __name__ == "__main__":
    unittest.main()
