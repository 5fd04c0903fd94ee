import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

from allocsites_lib.read import parse
from allocsites_lib.read.parse import Event, RawFrame

from fixtures import APP, entry, fields, sample

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"

# A realistic three-frame chain, leaf first: rt_alloc <- parse_expr <- main.
CHAIN = [
    entry(0x55d0_0000_1180, "rt_alloc", 0x1170, 0x10),
    entry(0x55d0_0000_11be, "parse_expr", 0x11b0, 0xe),
    entry(0x55d0_0000_1050, "main", 0x1040, 0x10),
]
CHAIN_FRAMES = (
    RawFrame(APP, 0x1180, "rt_alloc", 0x10, None),
    RawFrame(APP, 0x11be, "parse_expr", 0xe, None),
    RawFrame(APP, 0x1050, "main", 0x10, None),
)


class EventKindTest(unittest.TestCase):
    def test_accepted_names(self):
        for name, kind in [("sdt_rt__alloc", "alloc"), ("sdt_rt__free", "free"),
                           ("sdt_rt__sample", "sample"),
                           ("sdt_rt__alloc_1", "alloc"),
                           ("sdt_rt__free_12", "free"),
                           # perf's own spelling (perf report --stats)
                           ("sdt_rt:alloc", "alloc"),
                           ("sdt_rt:sample_2", "sample")]:
            with self.subTest(name=name):
                self.assertEqual(parse.event_kind(name), kind)

    def test_rejected_names(self):
        for name in ["sdt_rt__allocx", "sdt_rt__alloc_", "sdt_rt__alloc_x",
                     "sdt_rt__alloc_1x", "sdt_rt:_alloc", "sdt_rt:alloc_",
                     "xsdt_rt__alloc", "sdt_rt___alloc",
                     "sdt_other__alloc", "sdt_rt__realloc", "", None]:
            with self.subTest(name=name):
                self.assertIsNone(parse.event_kind(name))


class EventFromPerfTest(unittest.TestCase):
    def test_alloc_with_sample_dict(self):
        ev = parse.event_from_perf("sdt_rt__alloc", fields(0xdead0, 48, 3),
                                   sample(CHAIN, pid=100, tid=101))
        self.assertEqual(ev, Event("alloc", 100, 101, 48, 3, None,
                                   CHAIN_FRAMES, 0xdead0))

    def test_second_binary_event_name_accepted(self):
        ev = parse.event_from_perf("sdt_rt__alloc_1", fields(size=8, tag=0),
                                   sample(CHAIN))
        self.assertEqual((ev.kind, ev.size, ev.tag), ("alloc", 8, 0))

    def test_unsuffixed_lookalike_rejected(self):
        self.assertIsNone(parse.event_from_perf(
            "sdt_rt__allocx", fields(), sample(CHAIN)))

    def test_free_event(self):
        ev = parse.event_from_perf("sdt_rt__free", fields(0x10, 64, 2), sample([]))
        self.assertEqual(ev, Event("free", 42, 43, 64, 2, None, (), 0x10))

    def test_sample_event_reads_weight(self):
        ev = parse.event_from_perf("sdt_rt__sample",
                                   fields(0x10, 64, 2, weight=4096), sample([]))
        self.assertEqual(ev.kind, "sample")
        self.assertEqual(ev.weight, 4096)

    def test_sample_event_without_weight_is_malformed(self):
        self.assertIsNone(parse.event_from_perf(
            "sdt_rt__sample", fields(0x10, 64, 2), sample([])))

    def test_alloc_ignores_arg4(self):
        ev = parse.event_from_perf("sdt_rt__alloc", fields(weight=7), sample([]))
        self.assertIsNone(ev.weight)

    def test_missing_size_is_malformed(self):
        self.assertIsNone(parse.event_from_perf(
            "sdt_rt__alloc", fields(size=None), sample(CHAIN)))

    def test_missing_tag_is_malformed(self):
        self.assertIsNone(parse.event_from_perf(
            "sdt_rt__alloc", fields(tag=None), sample(CHAIN)))

    def test_missing_ptr_is_kept_as_none(self):
        ev = parse.event_from_perf("sdt_rt__alloc", fields(ptr=None), sample(CHAIN))
        self.assertIsNotNone(ev)
        self.assertIsNone(ev.ptr)

    def test_non_int_args_are_malformed(self):
        for bad in ["16", 16.0, None, b"\x10", [16]]:
            with self.subTest(size=bad):
                f = fields()
                f["arg2"] = bad
                self.assertIsNone(parse.event_from_perf("sdt_rt__alloc", f, sample([])))
            with self.subTest(tag=bad):
                f = fields()
                f["arg3"] = bad
                self.assertIsNone(parse.event_from_perf("sdt_rt__alloc", f, sample([])))

    def test_fields_not_a_dict(self):
        for bad in [None, [], "arg2=5", 5]:
            with self.subTest(fields=bad):
                self.assertIsNone(parse.event_from_perf("sdt_rt__alloc", bad, sample([])))

    def test_not_an_rt_event(self):
        self.assertIsNone(parse.event_from_perf("sched__sched_switch", fields(),
                                                sample(CHAIN)))

    def test_negative_tag_wraps_to_u32(self):
        ev = parse.event_from_perf("sdt_rt__alloc", fields(tag=-1), sample([]))
        self.assertEqual(ev.tag, 4294967295)

    def test_negative_size_and_ptr_wrap_to_u64(self):
        ev = parse.event_from_perf("sdt_rt__alloc", fields(ptr=-2, size=-1), sample([]))
        self.assertEqual(ev.size, 18446744073709551615)
        self.assertEqual(ev.ptr, 18446744073709551614)

    def test_overflowing_values_are_truncated(self):
        ev = parse.event_from_perf("sdt_rt__alloc",
                                   fields(size=(1 << 64) + 5, tag=(1 << 32) + 9),
                                   sample([]))
        self.assertEqual((ev.size, ev.tag), (5, 9))

    def test_no_sample_dict_uses_common_fields(self):
        ev = parse.event_from_perf("sdt_rt__alloc",
                                   fields(pid=7, callchain=CHAIN), None)
        self.assertEqual((ev.pid, ev.tid), (7, 7))
        self.assertEqual(ev.frames, CHAIN_FRAMES)

    def test_sample_without_callchain_key_uses_common_callchain(self):
        ev = parse.event_from_perf("sdt_rt__alloc", fields(callchain=CHAIN),
                                   {"sample": {"pid": 5, "tid": 6}})
        self.assertEqual((ev.pid, ev.tid), (5, 6))
        self.assertEqual(ev.frames, CHAIN_FRAMES)

    def test_sample_without_sample_subdict_uses_common_pid(self):
        ev = parse.event_from_perf("sdt_rt__alloc", fields(pid=9),
                                   {"callchain": CHAIN})
        self.assertEqual((ev.pid, ev.tid), (9, 9))
        self.assertEqual(ev.frames, CHAIN_FRAMES)

    def test_no_callchain_anywhere(self):
        ev = parse.event_from_perf("sdt_rt__alloc", fields(), {"sample": {"pid": 1, "tid": 1}})
        self.assertEqual(ev.frames, ())

    def test_callchain_none(self):
        ev = parse.event_from_perf("sdt_rt__alloc", fields(), sample(None))
        self.assertEqual(ev.frames, ())

    def test_perf_inlines_flag_is_passed_through(self):
        chain = [entry(0x100, "inl", 0x80, 0x80), entry(0x100, "real", 0x80, 0x80)]
        self.assertEqual(len(parse.event_from_perf(
            "sdt_rt__alloc", fields(), sample(chain), perf_inlines=True).frames), 1)
        self.assertEqual(len(parse.event_from_perf(
            "sdt_rt__alloc", fields(), sample(chain), perf_inlines=False).frames), 2)


def attr(sample_type):
    """perf_event_attr's bytes with sample_type at its place (byte 24)."""
    return bytes(24) + sample_type.to_bytes(8, "little") + bytes(96)


class ReturnAddressTest(unittest.TestCase):
    # --call-graph fp: the kernel's callchain, callers at return addresses
    FP = attr((1 << 5) | (1 << 7))            # CALLCHAIN, TID...
    DWARF = attr((1 << 5) | (1 << 12) | (1 << 13))   # REGS_USER, STACK_USER

    def test_kernel_callchain_told_by_the_attr(self):
        self.assertTrue(parse.kernel_callchain({"attr": self.FP}))
        self.assertFalse(parse.kernel_callchain({"attr": self.DWARF}))
        self.assertFalse(parse.kernel_callchain({"attr": attr(0)}))
        for unknown in (None, {}, {"attr": b"short"}, {"attr": "x" * 40}):
            self.assertFalse(parse.kernel_callchain(unknown))

    def test_callers_move_back_into_their_call(self):
        chain = [entry(0xffff_ffff_8100_0000, "kfn", 0, 0),   # kernel: out
                 entry(0x1010, "leaf", 0x1000, 0x10),
                 entry(0x2025, "caller", 0x2000, 0x25),
                 entry(0x7f00_0000_3000, dso=LIBC),            # no symbol
                 entry(0x4000, "next_fn", 0x4000, 0)]          # at a start
        self.assertEqual(parse.raw_frames(chain, return_addresses=True), (
            RawFrame(APP, 0x1010, "leaf", 0x10, None),
            RawFrame(APP, 0x2024, "caller", 0x24, None),
            RawFrame(LIBC, None, None, None, 0x7f00_0000_2fff),
            RawFrame(APP, 0x4000, "next_fn", 0, None)))
        self.assertEqual(parse.raw_frames(chain)[1],
                         RawFrame(APP, 0x2025, "caller", 0x25, None))

    def test_event_and_reader_take_it_from_the_attr(self):
        chain = [entry(0x1010, "leaf", 0x1000, 0x10),
                 entry(0x2025, "caller", 0x2000, 0x25)]
        for mode, off in ((self.FP, 0x24), (self.DWARF, 0x25)):
            s = dict(sample(chain), attr=mode)
            ev = parse.event_from_perf("sdt_rt__alloc", fields(), s)
            self.assertEqual(ev.frames[1].off, off)
            got = parse.Reader().read("sdt_rt__alloc", fields(), s)
            self.assertEqual(got[6][1].off, off)


class RawFramesTest(unittest.TestCase):
    def test_addr_is_sym_start_plus_off_and_ip_dropped(self):
        frames = parse.raw_frames([entry(0x7f00_0000_2000, "g", 0x1f00, 0x100)])
        self.assertEqual(frames, (RawFrame(APP, 0x2000, "g", 0x100, None),))

    def test_entry_without_sym_keeps_ip(self):
        frames = parse.raw_frames([entry(0x7f12_3456, dso=LIBC)])
        self.assertEqual(frames, (RawFrame(LIBC, None, None, None, 0x7f12_3456),))

    def test_sym_without_start_has_no_addr(self):
        e = entry(0x400, dso=LIBC)
        e["sym"] = {"name": "memcpy"}
        e["sym_off"] = 4
        self.assertEqual(parse.raw_frames([e]),
                         (RawFrame(LIBC, None, "memcpy", None, 0x400),))

    def test_sym_without_sym_off_has_no_addr(self):
        frames = parse.raw_frames([entry(0x400, "memcpy", 0x3f0, None, dso=LIBC)])
        self.assertEqual(frames, (RawFrame(LIBC, None, "memcpy", None, 0x400),))

    def test_non_int_sym_start_has_no_addr(self):
        e = entry(0x400, "f", 0x3f0, 0x10)
        e["sym"]["start"] = "0x3f0"
        self.assertEqual(parse.raw_frames([e]),
                         (RawFrame(APP, None, "f", None, 0x400),))

    def test_sym_not_a_dict_is_ignored(self):
        e = entry(0x400)
        e["sym"] = "f"
        e["sym_off"] = 3
        self.assertEqual(parse.raw_frames([e]),
                         (RawFrame(APP, None, None, None, 0x400),))

    def test_missing_or_empty_dso_is_unknown(self):
        a = entry(0x1, dso=None)
        b = entry(0x2, dso="")
        self.assertEqual([f.dso for f in parse.raw_frames([a, b])],
                         ["[unknown]", "[unknown]"])

    def test_bad_entries_are_skipped(self):
        chain = ["not a dict", None, {"sym": {"name": "noip"}},
                 {"ip": "0x10"}, {"ip": 1.5}, entry(0x20, "ok", 0x10, 0x10)]
        self.assertEqual(parse.raw_frames(chain),
                         (RawFrame(APP, 0x20, "ok", 0x10, None),))

    def test_empty_and_none(self):
        self.assertEqual(parse.raw_frames([]), ())
        self.assertEqual(parse.raw_frames(None), ())

    def test_order_is_kept_leaf_first(self):
        self.assertEqual(parse.raw_frames(CHAIN), CHAIN_FRAMES)

    def test_inline_entries_dropped_only_with_perf_inlines(self):
        # perf's inline expansion: inlined names first, then the real one,
        # all at the same ip; then the caller at another ip.
        chain = [entry(0x1200, "inner_inline", 0x1100, 0x100),
                 entry(0x1200, "outer_inline", 0x1100, 0x100),
                 entry(0x1200, "real_fn", 0x1100, 0x100),
                 entry(0x1300, "main", 0x1280, 0x80)]
        self.assertEqual(parse.raw_frames(chain, perf_inlines=True), (
            RawFrame(APP, 0x1200, "inner_inline", 0x100, None),
            RawFrame(APP, 0x1300, "main", 0x80, None)))
        self.assertEqual(len(parse.raw_frames(chain, perf_inlines=False)), 4)

    def test_recursion_same_ip_same_name_kept(self):
        chain = [entry(0x1200, "rec", 0x1100, 0x100)] * 3 + \
                [entry(0x1300, "main", 0x1280, 0x80)]
        for flag in (True, False):
            with self.subTest(perf_inlines=flag):
                frames = parse.raw_frames(chain, perf_inlines=flag)
                self.assertEqual([f.sym for f in frames], ["rec", "rec", "rec", "main"])

    def test_same_name_different_ip_kept(self):
        chain = [entry(0x1200, "f", 0x1100, 0x100), entry(0x1210, "f", 0x1100, 0x110)]
        self.assertEqual(len(parse.raw_frames(chain, perf_inlines=True)), 2)

    def test_same_ip_in_unsymbolized_frames_kept(self):
        # No sym: both names are None, so this is recursion, not inlining.
        chain = [entry(0x7f00, dso=LIBC), entry(0x7f00, dso=LIBC)]
        self.assertEqual(len(parse.raw_frames(chain, perf_inlines=True)), 2)


class RobustnessTest(unittest.TestCase):
    """The module promises never to raise (perf aborts on an exception)."""

    def test_non_list_callchain_does_not_raise(self):
        ev = parse.event_from_perf("sdt_rt__alloc", fields(), {"callchain": 5})
        self.assertEqual(ev.frames, ())

    def test_non_str_event_name_does_not_raise(self):
        self.assertIsNone(parse.event_from_perf(b"sdt_rt__alloc", fields(), None))



def common(f, s=655, ns=613035122, pid=None):
    """fields() plus what perf passes a 3-argument trace_unhandled."""
    f = dict(f)
    f["common_s"], f["common_ns"] = s, ns
    if pid is not None:
        f["common_pid"] = pid
    return f


class ReaderTest(unittest.TestCase):
    """parse.Reader: event_from_perf's answers, cheaper per event."""

    def slow(self, name, f, smp=None, inlines=False, pids=None):
        ev = parse.event_from_perf(name, f, smp, inlines)
        if ev is None:
            return None
        pid = ev.pid
        if not isinstance(smp, dict) and pids:
            try:
                pid = pids.get(ev.tid, ev.tid)
            except TypeError:   # an unhashable tid
                pass
        return (ev.kind, pid, ev.tid, ev.size, ev.tag, parse.weight_slot(ev),
                ev.frames, ev.time, ev.ptr)

    def cases(self):
        good = common(fields(0x10, 48, 3, callchain=CHAIN), pid=101)
        cases = [("sdt_rt__alloc", good), ("sdt_rt__alloc_1", good),
                 ("sdt_rt__free", good), ("sched__switch", good),
                 ("sdt_rt__sample", common(fields(weight=4096,
                                                  callchain=CHAIN))),
                 ("sdt_rt__sample", common(fields(callchain=CHAIN))),
                 ("sdt_rt__sample", common(dict(fields(weight=4096,
                                                       callchain=CHAIN),
                                                arg5=512))),
                 ("sdt_rt__sample", common(dict(fields(weight=4096,
                                                       callchain=CHAIN),
                                                arg5=-1))),
                 ("sdt_rt__alloc", common(fields(size=-1, tag=-1,
                                                 callchain=CHAIN))),
                 ("sdt_rt__alloc", fields(callchain=CHAIN)),   # no time
                 ("sdt_rt__alloc", common(fields())),          # no chain
                 ("sdt_rt__alloc", common(fields(callchain=None))),
                 ("sdt_rt__alloc", common(fields(callchain=[
                     "x", None, {"ip": "0x1"}, entry(0x20, "ok", 0x10, 0x10)]))),
                 ("sdt_rt__alloc", common(fields(callchain=[{"ip": {}}]))),
                 ("sdt_rt__alloc", None), ("sdt_rt__alloc", []),
                 ("sdt_rt__alloc", 5), (None, good), (["x"], good)]
        for key in ("arg2", "arg3", "common_pid", "common_s"):
            for bad in ("16", 16.0, None, [16]):
                f = dict(good)
                f[key] = bad
                cases.append(("sdt_rt__alloc", f))
            f = dict(good)
            del f[key]
            cases.append(("sdt_rt__alloc", f))
        return cases

    def samples(self):
        """perf_sample_dicts, good and odd, for a 4-argument handler."""
        good = {"sample": {"pid": 100, "tid": 101, "time": 5000},
                "callchain": CHAIN}
        out = [good, sample(CHAIN, pid=7, tid=8), {"callchain": CHAIN},
               {"sample": {"pid": 1, "tid": 2}}, {}, "x", None]
        for key in ("pid", "tid", "time"):
            for bad in ("1", 1.5, None):
                s = {"sample": dict(good["sample"]), "callchain": CHAIN}
                s["sample"][key] = bad
                out.append(s)
            s = {"sample": dict(good["sample"]), "callchain": CHAIN}
            del s["sample"][key]
            out.append(s)
        return out

    def test_same_answers_as_event_from_perf(self):
        for inlines in (False, True):
            reader = parse.Reader(inlines)
            for _ in range(2):   # first sight, then from the caches
                for i, (name, f) in enumerate(self.cases()):
                    with self.subTest(case=i, inlines=inlines):
                        self.assertEqual(reader.read(name, f),
                                         self.slow(name, f, None, inlines))

    def test_same_answers_with_a_sample_dict(self):
        reader = parse.Reader(pids={101: 55})
        f = common(fields(0x10, 48, 3, callchain=CHAIN), pid=101)
        for _ in range(2):
            for i, smp in enumerate(self.samples()):
                with self.subTest(case=i):
                    self.assertEqual(reader.read("sdt_rt__alloc", f, smp),
                                     self.slow("sdt_rt__alloc", f, smp,
                                               pids=reader.pids))

    def test_process_id_from_pids(self):
        pids = {101: 100}
        reader = parse.Reader(pids=pids)
        for i, (name, f) in enumerate(self.cases()):
            with self.subTest(case=i):
                self.assertEqual(reader.read(name, f),
                                 self.slow(name, f, pids=pids))
        r = reader.read("sdt_rt__alloc", common(fields(), pid=101))
        self.assertEqual(r[1:3], (100, 101))
        r = reader.read("sdt_rt__alloc", common(fields(), pid=77))
        self.assertEqual(r[1:3], (77, 77))   # not in pids: the thread id

    def test_tid_and_time_from_common_fields(self):
        r = parse.Reader().read("sdt_rt__alloc", common(
            fields(0x10, 48, 3, callchain=CHAIN), s=12, ns=5, pid=77))
        self.assertEqual(r, ("alloc", 77, 77, 48, 3, None, CHAIN_FRAMES,
                             12000000005, 0x10))

    def test_a_chain_is_converted_once(self):
        reader = parse.Reader()
        a = reader.read("sdt_rt__alloc", common(fields(callchain=CHAIN)))
        b = reader.read("sdt_rt__alloc", common(fields(
            callchain=[dict(e) for e in CHAIN])))
        self.assertIs(a[6], b[6])

    def test_inline_entries_dropped_when_perf_expands(self):
        chain = [entry(0x100, "inl", 0x80, 0x80),
                 entry(0x100, "real", 0x80, 0x80)]
        for inlines, n in ((True, 1), (False, 2)):
            r = parse.Reader(inlines).read("sdt_rt__alloc",
                                           common(fields(callchain=chain)))
            self.assertEqual(len(r[6]), n)

if __name__ == "__main__":
    unittest.main()


def plain(kind, *args, pid=42):
    """The wrapper's plain event's fields: kind, a..h (unused ones 0)."""
    f = {"common_pid": pid, "common_s": 3, "common_ns": 7, "kind": kind}
    for name, value in zip("abcdefgh", list(args) + [0] * (8 - len(args))):
        f[name] = value
    return f


class PlainEventTest(unittest.TestCase):
    """sdt_rt:plain_N: one event for every probe without a call graph
    (probedefs.py); the kind is in the payload."""

    def test_each_kind(self):
        reader = parse.Reader(pids={42: 40})
        time = 3000000007
        cases = [
            # a free's tag is 4 bytes, fetched as u64: the upper half is
            # whatever the register held
            (plain(1, 0x5000, 48, (0xdead << 32) | 6),
             ("free", 40, 42, 48, 6, None, (), time, 0x5000)),
            (plain(2, 0x7000, 4096),
             ("release", 40, 42, 4096, 0, None, (), time, 0x7000)),
            (plain(3, 0x9000, 65536),
             ("commit", 40, 42, 65536, 0, None, (), time, 0x9000)),
            (plain(4, 0x9000, 65536),
             ("decommit", 40, 42, 65536, 0, None, (), time, 0x9000)),
            (plain(5, (1 << 40) | 3), ("phase_begin", 40, 42, 0, 3, None, (),
                                       time, None)),
            (plain(6, 3), ("phase_end", 40, 42, 0, 3, None, (), time, None)),
            (plain(7, 0x5000, 524288),
             ("sample_free", 40, 42, 524288, 0, None, (), time, 0x5000)),
            (plain(9, 10, 9, 0, 0, 1, 2, 3, 0),
             ("exit", 40, 42, 0, 0, (10, 9, 0, 0, 1, 2, 3, 0), (), time,
              None)),
        ]
        for f, expected in cases:
            with self.subTest(kind=f["kind"]):
                self.assertEqual(reader.read("sdt_rt__plain_123", f),
                                 expected)

    def test_unknown_kind_or_missing_field_is_malformed(self):
        reader = parse.Reader()
        self.assertIsNone(reader.read("sdt_rt__plain_1", plain(8, 1, 2)))
        f = plain(1, 0x5000, 48, 6)
        del f["b"]
        self.assertIsNone(reader.read("sdt_rt__plain_1", f))

    def test_probe_events_of_their_own_read_the_same(self):
        """Raw perf users record sdt_rt:release etc. as events of their own
        (arg1..argN); they read as the plain event's kinds."""
        reader = parse.Reader()
        own = {"common_pid": 42, "common_s": 3, "common_ns": 7,
               "arg1": 0x7000, "arg2": 4096}
        self.assertEqual(reader.read("sdt_rt__release", own)[0:4],
                         ("release", 42, 42, 4096))
        self.assertEqual(reader.read("sdt_rt__phase_begin_1", own)[4], 0x7000)
        self.assertEqual(parse.event_kind("sdt_rt:sample_free"), "sample_free")
        self.assertEqual(parse.event_kind("sdt_rt:plain_77"), "plain")
