"""hotpath.handler: the per-event path inside perf, fused for allocs and
frees, gives exactly what parse.Reader.read then Tally.add_fields give
(the path it replaces in scripts/allocsites.py), on the same input: the
same Tally, field by field, the same EventLog (keys in the same order,
the same columns), the same exceptions. No perf needed."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import pickle
import random

from allocsites_lib.read import hotpath, parse
from allocsites_lib.read.tally import Tally

from fixtures import entry

ALLOC, PLAIN = "sdt_rt__alloc_1", "sdt_rt__plain_2"

CHAINS = [
    [entry(0x55d000001180, "rt_alloc", 0x1170, 0x10),
     entry(0x55d0000011be, "parse_expr", 0x11b0, 0xe),
     entry(0x55d000001050, "main", 0x1040, 0x10)],
    [entry(0x55d000001180, "rt_alloc", 0x1170, 0x10),
     entry(0x55d000001222, "lex", 0x1200, 0x22),
     entry(0x55d000001050, "main", 0x1040, 0x10)],
    # the same frames at another load address (another process): another
    # chain of ips, the same key
    [entry(0x56d000001180, "rt_alloc", 0x1170, 0x10),
     entry(0x56d0000011be, "parse_expr", 0x11b0, 0xe),
     entry(0x56d000001050, "main", 0x1040, 0x10)],
    # an inline entry (dropped when perf expanded inlines), no symbol,
    # the end-of-unwind marker
    [entry(0x55d000001180, "rt_alloc", 0x1170, 0x10),
     entry(0x55d000001300, "inl", 0x1280, 0x80),
     entry(0x55d000001300, "outer", 0x1280, 0x80),
     entry(0x7f0000001234), entry((1 << 64) - 1)],
    [],
]


def alloc_fields(tid, t, ptr, size, tag, chain):
    return {"common_pid": tid, "common_s": t // 10**9, "common_ns": t % 10**9,
            "common_cpu": 0, "common_comm": "prog",
            "common_callchain": [dict(e) for e in chain],
            "arg1": ptr, "arg2": size, "arg3": tag}


def plain_fields(kind, tid, t, *args):
    f = {"common_pid": tid, "common_s": t // 10**9, "common_ns": t % 10**9,
         "common_cpu": 0, "common_comm": "prog", "kind": kind}
    for name, value in zip("abcdefgh", list(args) + [0] * (8 - len(args))):
        f[name] = value
    return f


def sample_dict(pid, tid, t, chain):
    return {"sample": {"pid": pid, "tid": tid, "time": t, "cpu": 0},
            "callchain": [dict(e) for e in chain]}


ODD_VALUES = ("16", 16.0, None, [16], True, -1, 1 << 70, {})


def odd(rng, f, keys):
    """f with one of keys changed to an odd value or left out."""
    f = dict(f)
    key = rng.choice(keys)
    if rng.random() < 0.2:
        f.pop(key, None)
    else:
        f[key] = rng.choice(ODD_VALUES)
    return f


def events(rng, n):
    """(event name, fields, sample) in time order: mostly allocs and
    frees of the common shape, with every odd shape mixed in."""
    out, t, live = [], 10**9 * 5 + 17, []
    tids = [101, 101, 102, 103]
    for _ in range(n):
        t += rng.randrange(0, 3)   # 0: a duplicate when the tid repeats
        tid = rng.choice(tids)
        r = rng.random()
        chain = rng.choice(CHAINS)
        if r < 0.4:
            ptr = rng.randrange(1, 1 << 20) * 16
            size = rng.choice((0, 1, 8, 16, 24, 4096, (1 << 64) + 8, -8))
            tag = rng.choice((0, 1, 2, (7 << 32) | 1))
            live.append((ptr, size, tag))
            out.append((ALLOC, alloc_fields(tid, t, ptr, size, tag, chain),
                        None))
        elif r < 0.75:
            ptr, size, tag = live.pop(rng.randrange(len(live))) if live \
                else (0x40, 8, 0)
            out.append((PLAIN, plain_fields(1, tid, t, ptr, size, tag), None))
        elif r < 0.8:   # the 4-argument handler: a perf_sample_dict
            name = rng.choice((ALLOC, PLAIN))
            f = alloc_fields(tid, t, 0x60, 8, 1, chain) if name == ALLOC \
                else plain_fields(1, tid, t, 0x60, 8, 1)
            smp = sample_dict(rng.choice((100, 7)), tid, t, chain)
            if rng.random() < 0.3:
                smp = odd(rng, smp, ["sample", "callchain"]) \
                    if rng.random() < 0.5 else \
                    dict(smp, sample=odd(rng, smp["sample"],
                                         ["pid", "tid", "time"]))
            out.append((name, f, smp))
        elif r < 0.9:   # odd allocs and frees
            if rng.random() < 0.5:
                f = odd(rng, alloc_fields(tid, t, 0x80, 16, 2, chain),
                        ["arg1", "arg2", "arg3", "common_pid", "common_s",
                         "common_ns", "common_callchain"])
                out.append((ALLOC, f, None))
            else:
                f = odd(rng, plain_fields(1, tid, t, 0x80, 16, 2),
                        ["a", "b", "c", "kind", "common_pid", "common_s",
                         "common_ns"])
                out.append((PLAIN, f, None))
        elif r < 0.93:   # values a log column cannot hold
            f = alloc_fields(tid, t, 0x90, 16, 1, chain) \
                if rng.random() < 0.5 else plain_fields(1, tid, t, 0x90, 16)
            f["common_pid"] = rng.choice((1 << 40, -(1 << 40)))
            f["common_s"] = rng.choice((f["common_s"], -5, 1 << 60))
            out.append((ALLOC if "arg1" in f else PLAIN, f, None))
        elif r < 0.95:   # odd chains
            bad = rng.choice(([{"ip": [1]}], [{"ip": "0x1"}, None], "x",
                              [entry(0x55d000001180, "rt_alloc", 0x1170,
                                     0x10), 5]))
            f = alloc_fields(tid, t, 0xa0, 16, 1, [])
            f["common_callchain"] = bad
            out.append((ALLOC, f, None))
        else:   # everything else: other kinds, events, names
            choice = rng.randrange(6)
            if choice == 0:
                out.append((PLAIN, plain_fields(rng.choice((2, 3, 5, 6, 7, 9,
                                                            8)),
                                                tid, t, 0x1000, 4096, 3),
                            None))
            elif choice == 1:
                f = alloc_fields(tid, t, 0xb0, 32, 1, chain)
                f["arg4"] = rng.choice((4096, 0, "x"))
                out.append(("sdt_rt__sample_1", f, None))
            elif choice == 2:
                out.append(("sdt_rt__free", {"common_pid": tid, "common_s": 5,
                                             "common_ns": t % 10**9,
                                             "arg1": 0x40, "arg2": 8},
                            None))
            elif choice == 3:
                out.append((rng.choice((None, ["x"], "sched__switch", 5)),
                            alloc_fields(tid, t, 0xc0, 8, 0, chain), None))
            elif choice == 4:
                out.append((ALLOC, rng.choice((None, [], "x", 5)), None))
            else:
                out.append((PLAIN, rng.choice((None, [], "x")), None))
    return out


def feed_slow(reader, tally, stream):
    """scripts/allocsites.py's event() before hotpath: what it returned
    (the time, None for a malformed event) or the exception's type."""
    out = []
    for name, f, smp in stream:
        try:
            values = reader.read(name, f, smp)
            if values is None:
                tally.add(None)
                out.append(None)
            else:
                tally.add_fields(*values)
                out.append(values[7])
        except Exception as e:  # noqa: BLE001
            out.append(type(e))
    return out


def feed_fast(handle, stream):
    out = []
    for name, f, smp in stream:
        try:
            out.append(handle(name, f, smp))
        except Exception as e:  # noqa: BLE001
            out.append(type(e))
    return out


def state(tally):
    """Every Tally field, the log as its keys and columns."""
    out = dict(vars(tally))
    log = out.pop("log")
    if log is not None:
        out["log.keys"] = list(log.keys)
        out["log.columns"] = [list(c) for c in log.columns()]
    out["stacks"] = dict(out["stacks"])
    out["sampled"] = dict(out["sampled"])
    out["received"] = {pid: dict(c) for pid, c in out["received"].items()}
    return out


class HotPathTest(unittest.TestCase):

    def compare(self, stream, min_size=0, log=True, pids=None, inlines=False):
        slow_reader = parse.Reader(inlines, pids)
        slow_tally = Tally(min_size, log=log)
        fast_reader = parse.Reader(inlines, pids)
        fast_tally = Tally(min_size, log=log)
        handle = hotpath.handler(fast_reader, fast_tally)
        fast = feed_fast(handle, stream)
        handle.flush()
        slow = feed_slow(slow_reader, slow_tally, stream)
        for i, (a, b) in enumerate(zip(fast, slow)):
            # the first difference only: a diff of the whole is slow
            self.assertEqual(a, b, "event %d: %r" % (i, stream[i]))
        fast, slow = state(fast_tally), state(slow_tally)
        for name in sorted(set(fast) | set(slow)):
            if fast.get(name) != slow.get(name):
                self.fail("Tally.%s differs: %.400r != %.400r"
                          % (name, fast.get(name), slow.get(name)))
        return fast_tally, slow_tally

    def test_common_shapes(self):
        rng = random.Random(1)
        stream = []
        t = 7 * 10**9
        for i in range(500):
            t += 1000
            chain = CHAINS[i % 3]
            stream.append((ALLOC, alloc_fields(101, t, 0x100 + i, 16 + i % 5,
                                               i % 2, chain), None))
            t += 1000
            stream.append((PLAIN, plain_fields(1, 101, t, 0x100 + i,
                                               16 + i % 5, i % 2), None))
        rng.shuffle(stream)   # the times need not ascend for a comparison
        fast, _ = self.compare(stream)
        self.assertEqual(fast.events["alloc"], 500)
        self.assertEqual(fast.events["free"], 500)
        self.assertEqual(len(fast.log), 1000)

    def test_random_streams(self):
        for seed in range(12):
            stream = events(random.Random(seed), 1500)
            for kw in ({}, {"min_size": 16}, {"log": False},
                       {"pids": {101: 100, 102: 100, 103: "x"}},
                       {"inlines": True}):
                with self.subTest(seed=seed, **kw):
                    self.compare(stream, **kw)

    def test_log_batches_of_any_size(self):
        # The log's columns are filled in batches (flush()): any batch
        # boundary gives the same log.
        saved = hotpath.FLUSH_EVERY
        try:
            for every in (1, 2, 7):
                hotpath.FLUSH_EVERY = every
                with self.subTest(flush_every=every):
                    self.compare(events(random.Random(every), 400))
        finally:
            hotpath.FLUSH_EVERY = saved

    def test_log_values_clamped_alike(self):
        stream = [
            (ALLOC, alloc_fields(1 << 40, 10**9, 0x10, 8, 1, CHAINS[0]),
             None),
            (PLAIN, plain_fields(1, -(1 << 40), 10**9 + 1, 0x10, 8, 1), None),
            (ALLOC, dict(alloc_fields(5, 0, 0x10, 8, 1, CHAINS[0]),
                         common_s=-3), None),
            (PLAIN, dict(plain_fields(1, 5, 0, 0x10, 8, 1), common_s=1 << 62),
             None),
        ]
        fast, _ = self.compare(stream)
        self.assertEqual(len(fast.log), 4)

    def test_duplicates_dropped_alike(self):
        f = alloc_fields(101, 10**9, 0x10, 8, 1, CHAINS[1])
        g = plain_fields(1, 101, 10**9 + 5, 0x10, 8, 1)
        fast, _ = self.compare([(ALLOC, f, None), (ALLOC, f, None),
                                (PLAIN, g, None), (PLAIN, g, None)])
        self.assertEqual(fast.duplicates, 2)
        self.assertEqual(fast.duplicate_kinds, {"alloc": 1, "free": 1})

    def test_chain_cache_shared_with_the_reader(self):
        # An alloc first read by the slow path (a sample dict), then by the
        # fast path: one frames object, one key, one entry.
        reader, tally = parse.Reader(), Tally()
        handle = hotpath.handler(reader, tally)
        handle(ALLOC, alloc_fields(101, 10**9, 0x10, 8, 1, CHAINS[0]),
               {"sample": {"pid": 1, "tid": 101, "time": 10**9},
                "callchain": CHAINS[0][:1]})
        handle(ALLOC, alloc_fields(101, 10**9 + 1, 0x10, 8, 1, CHAINS[0]))
        handle(ALLOC, alloc_fields(101, 10**9 + 2, 0x10, 8, 1, CHAINS[2]))
        handle.flush()
        self.assertEqual(len(tally.stacks), 2)
        self.assertEqual(len(tally.log.keys), 2)
        (frames, _), entry = list(tally.stacks.items())[1]
        self.assertEqual(entry.count, 2)   # two chains of ips, one key
        self.assertIs(frames, tally.log.keys[1][0])

    def test_tally_still_pickles(self):
        reader, tally = parse.Reader(), Tally()
        handle = hotpath.handler(reader, tally)
        stream = events(random.Random(3), 300)
        feed_fast(handle, stream)
        handle.flush()
        back = pickle.loads(pickle.dumps(tally))
        self.assertEqual(state(back), state(tally))


class MailTest(unittest.TestCase):
    """handle.mail(records), the plain events the perf dlfilter kept
    (mailbox.py), gives what handle gives for the same events as perf's
    field dicts: frees, duplicates, other kinds, allocs in between."""

    def test_mail_equals_handle(self):
        rng = random.Random(5)
        pids = {101: 100, 102: 100}
        items = []   # ("alloc", fields) or ("mail", record)
        t = 5 * 10**9
        for i in range(3000):
            t += rng.choice((0, 1, 500))   # equal times: duplicates
            tid = rng.choice((101, 102))
            r = rng.random()
            if r < 0.4:
                items.append(("alloc", alloc_fields(
                    tid, t, 0x1000 + i, 8 + i % 9, i % 3, CHAINS[i % 3])))
            else:
                kind = 1 if r < 0.9 else rng.choice((3, 4, 5, 6, 8, 9))
                args = [0x1000 + rng.randrange(i + 1), rng.randrange(1, 99),
                        i % 3, 0, 0, 0, 0, rng.randrange(1 << 64)]
                items.append(("mail", (t, tid, kind) + tuple(args)))

        def run(use_mail):
            tally = Tally(0)
            handle = hotpath.handler(parse.Reader(False, pids), tally)
            box = []
            for what, x in items:
                if what == "mail" and use_mail:
                    box.append(x)
                    continue
                if box:
                    handle.mail(box, PLAIN)
                    box = []
                if what == "mail":
                    handle(PLAIN, plain_fields(x[2], x[1], x[0], *x[3:]))
                else:
                    handle(ALLOC, x)
            if box:
                handle.mail(box, PLAIN)
            handle.flush()
            return state(tally)

        fast, slow = run(True), run(False)
        self.assertGreater(slow["duplicate_kinds"]["free"], 0)
        for name in sorted(set(fast) | set(slow)):
            self.assertEqual(fast.get(name), slow.get(name), name)


if __name__ == "__main__":
    unittest.main()
