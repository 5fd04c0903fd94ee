import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

from allocsites_lib.analyze import fold
from allocsites_lib.analyze.fold import NO_CALLER
from allocsites_lib.read.tally import ExactEntry, Tally

from fixtures import StubSymbolizer, alloc, fr, free, raw
from allocsites_lib.read import parse
from allocsites_lib.read.parse import Event
from allocsites_lib.analyze.symbolize import Frame

# Source frames used throughout: a probe function, wrappers, sites, roots.
PROBE = fr("rt_alloc", 14, "/src/rt_alloc.c")
XMALLOC = fr("xmalloc", 30, "/src/util.c")
XCALLOC = fr("xcalloc", 40, "/src/util.c")
PARSE = fr("parse_expr", 120, "/src/parser.c")
STMT = fr("parse_stmt", 300, "/src/parser.c")
MAIN = fr("main", 10, "/src/main.c")
START = fr("_start+0x25", 0, "/usr/bin/app")


class World:
    """A StubSymbolizer plus one RawFrame per source frame (or inline chain)."""

    def __init__(self):
        self.sym = StubSymbolizer()
        self.raws = {}

    def r(self, *frames):
        key = tuple(frames)
        if key not in self.raws:
            self.raws[key] = self.sym.raw(*frames)
        return self.raws[key]

    def stack(self, *items):
        """Raw stack, leaf first; an item is a Frame or a tuple (inline chain)."""
        return [self.r(*((i,) if isinstance(i, Frame) else i)) for i in items]


class TallyTest(unittest.TestCase):
    def setUp(self):
        self.w = World()
        self.s1 = self.w.stack(PROBE, PARSE, MAIN, START)

    def test_identical_stacks_counted_together(self):
        t = Tally()
        t.add(alloc(self.s1, 10, tag=1))
        t.add(alloc(self.s1, 30, tag=1))
        self.assertEqual(dict(t.stacks), {(tuple(self.s1), 1): ExactEntry(2, 40)})

    def test_same_stack_different_tag_kept_apart(self):
        t = Tally()
        t.add(alloc(self.s1, 10, tag=1))
        t.add(alloc(self.s1, 30, tag=2))
        self.assertEqual(dict(t.stacks), {(tuple(self.s1), 1): ExactEntry(1, 10),
                                          (tuple(self.s1), 2): ExactEntry(1, 30)})

    def test_none_counts_as_malformed(self):
        t = Tally()
        t.add(None)
        t.add(None)
        self.assertEqual(t.malformed, 2)
        self.assertEqual(dict(t.events), {})
        self.assertEqual(dict(t.stacks), {})

    def test_frees_counted_not_stacked(self):
        t = Tally()
        t.add(free(100))
        t.add(free(28))
        self.assertEqual(t.frees, [2, 128])
        self.assertEqual(dict(t.events), {"free": 2})
        self.assertEqual(dict(t.stacks), {})

    def test_sample_events_only_counted(self):
        t = Tally()
        t.add(Event("sample", 1, 1, 64, 0, 4096, tuple(self.s1), 0))
        self.assertEqual(dict(t.events), {"sample": 1})
        self.assertEqual(dict(t.stacks), {})

    def test_min_size_filters_smaller_allocations(self):
        t = Tally(min_size=100)
        t.add(alloc(self.s1, 99))
        t.add(alloc(self.s1, 100))
        t.add(alloc(self.s1, 101))
        self.assertEqual(t.filtered, 1)
        self.assertEqual(dict(t.stacks), {(tuple(self.s1), 0): ExactEntry(2, 201)})
        self.assertEqual(t.events["alloc"], 3)

    def test_min_size_does_not_filter_frees(self):
        t = Tally(min_size=100)
        t.add(free(1))
        self.assertEqual((t.frees, t.filtered), ([1, 1], 0))

    def test_no_callchain_counted_and_kept(self):
        t = Tally()
        t.add(alloc([], 8))
        self.assertEqual(t.no_callchain, 1)
        self.assertEqual(dict(t.stacks), {((), 0): ExactEntry(1, 8)})

    def test_dsos(self):
        t = Tally()
        t.add(alloc([raw(1, dso="/a.so"), raw(2, dso="/b")], 1))
        t.add(alloc([raw(3, dso="/c.so")], 1))
        self.assertEqual(t.dsos(), {"/a.so", "/b", "/c.so"})


class FoldSiteTest(unittest.TestCase):
    def setUp(self):
        self.w = World()

    def fold(self, events, **kw):
        t = Tally(kw.pop("min_size", 0))
        for e in events:
            t.add(e)
        return fold.fold(t, self.w.sym, **kw)

    def test_site_is_first_frame_after_probe(self):
        s = self.w.stack(PROBE, PARSE, MAIN, START)
        result = self.fold([alloc(s, 16), alloc(s, 48)])
        self.assertEqual(len(result.sites), 1)
        site = result.sites[0]
        self.assertEqual(site.frame, PARSE)
        self.assertEqual((site.count, site.bytes), (2, 64))
        self.assertEqual((result.count, result.bytes, result.truncated), (2, 64, 0))
        self.assertEqual(result.stacks, [fold.Stack((PARSE, MAIN, START), 2, 64, {"0": 64})])

    def test_probe_frame_dropped_whatever_its_name(self):
        s = self.w.stack(fr("my_pool_alloc", 3), PARSE, MAIN, START)
        self.assertEqual(self.fold([alloc(s, 1)]).sites[0].frame, PARSE)

    def test_sites_summed_across_callers(self):
        a = self.w.stack(PROBE, PARSE, MAIN, START)
        b = self.w.stack(PROBE, PARSE, STMT, MAIN, START)
        result = self.fold([alloc(a, 10), alloc(b, 20), alloc(b, 5)])
        self.assertEqual([(s.frame, s.count, s.bytes) for s in result.sites],
                         [(PARSE, 3, 35)])
        self.assertEqual([(st.frames, st.count, st.bytes) for st in result.stacks],
                         [((PARSE, STMT, MAIN, START), 2, 25),
                          ((PARSE, MAIN, START), 1, 10)])

    def test_site_key_is_function_file_line(self):
        other_line = fr("parse_expr", 121, "/src/parser.c")
        other_file = fr("parse_expr", 120, "/src/parser2.c")
        stacks = [self.w.stack(PROBE, f, MAIN, START) for f in (PARSE, other_line, other_file)]
        result = self.fold([alloc(s, 1) for s in stacks])
        self.assertEqual(len(result.sites), 3)

    def test_per_site_tags_by_name_and_number(self):
        s = self.w.stack(PROBE, PARSE, MAIN, START)
        result = self.fold([alloc(s, 100, tag=1), alloc(s, 50, tag=1),
                            alloc(s, 7, tag=9), alloc(s, 3, tag=4294967295)],
                           tag_names={1: "ast", 4294967295: "max"})
        site = result.sites[0]
        self.assertEqual(dict(site.tag_bytes), {"ast": 150, "9": 7, "max": 3})
        self.assertEqual(dict(site.tag_counts), {"ast": 2, "9": 1, "max": 1})
        self.assertEqual(result.stacks[0].tags, {"ast": 150, "9": 7, "max": 3})

    def test_sites_ordered_by_bytes_then_count_then_file_line(self):
        a = fr("a", 5, "/src/z.c")
        b = fr("b", 9, "/src/a.c")
        c = fr("c", 1, "/src/a.c")
        d = fr("d", 1, "/src/m.c")
        events = []
        events += [alloc(self.w.stack(PROBE, a, MAIN, START), 10)] * 2   # 20 B, 2
        events += [alloc(self.w.stack(PROBE, b, MAIN, START), 20)]       # 20 B, 1
        events += [alloc(self.w.stack(PROBE, c, MAIN, START), 20)]       # 20 B, 1
        events += [alloc(self.w.stack(PROBE, d, MAIN, START), 100)]      # 100 B
        result = self.fold(events)
        # d most bytes; a: same bytes as b, c but more allocations; then
        # b and c tie on bytes and count: same file, line 1 before line 9.
        self.assertEqual([s.frame.function for s in result.sites], ["d", "a", "c", "b"])

    def test_stacks_ordered_by_bytes_then_count_then_names(self):
        s1 = self.w.stack(PROBE, STMT, MAIN, START)
        s2 = self.w.stack(PROBE, PARSE, MAIN, START)
        s3 = self.w.stack(PROBE, XMALLOC, MAIN, START)
        result = self.fold([alloc(s1, 5), alloc(s2, 5), alloc(s3, 2), alloc(s3, 3)])
        self.assertEqual([st.frames[0].function for st in result.stacks],
                         ["xmalloc", "parse_expr", "parse_stmt"])

    def test_inlined_site_is_the_inline_frame(self):
        helper = fr("helper", 21, "/src/h.h", inlined=True)
        caller = fr("caller", 26, "/src/c.c")
        s = self.w.stack(PROBE, (helper, caller), MAIN, START)
        result = self.fold([alloc(s, 8)])
        self.assertEqual(result.sites[0].frame, helper)
        self.assertEqual(result.stacks[0].frames, (helper, caller, MAIN, START))

    def test_probe_inline_chain_drops_only_innermost(self):
        # The probe sits in an allocator inlined into its caller: the one
        # machine frame expands to [allocator (inlined), caller].
        inl = fr("pool_alloc_inline", 7, "/src/pool.h", inlined=True)
        s = self.w.stack((inl, PARSE), MAIN, START)
        self.assertEqual(self.fold([alloc(s, 8)]).sites[0].frame, PARSE)

    def test_resolve_called_once_with_every_raw_frame(self):
        a = self.w.stack(PROBE, PARSE, MAIN, START)
        b = self.w.stack(PROBE, STMT, MAIN, START)
        self.fold([alloc(a, 1), alloc(b, 1)])
        self.assertEqual(self.w.sym.resolve_calls, [set(a) | set(b)])


class FoldSkipTest(unittest.TestCase):
    def setUp(self):
        self.w = World()

    def fold(self, events, **kw):
        t = Tally()
        for e in events:
            t.add(e)
        return fold.fold(t, self.w.sym, **kw)

    def test_skip_wrapper(self):
        s = self.w.stack(PROBE, XMALLOC, PARSE, MAIN, START)
        result = self.fold([alloc(s, 8)], skip="^xmalloc$")
        self.assertEqual(result.sites[0].frame, PARSE)
        self.assertEqual(result.stacks[0].frames, (PARSE, MAIN, START))

    def test_without_skip_wrapper_is_the_site(self):
        s = self.w.stack(PROBE, XMALLOC, PARSE, MAIN, START)
        self.assertEqual(self.fold([alloc(s, 8)]).sites[0].frame, XMALLOC)

    def test_skip_several_leading_wrappers(self):
        s = self.w.stack(PROBE, XMALLOC, XCALLOC, PARSE, MAIN, START)
        result = self.fold([alloc(s, 8)], skip="^(?:xmalloc|xcalloc)$")
        self.assertEqual(result.sites[0].frame, PARSE)

    def test_skip_only_leading_frames(self):
        # xmalloc further up the stack is not a wrapper of this allocation.
        s = self.w.stack(PROBE, PARSE, XMALLOC, MAIN, START)
        result = self.fold([alloc(s, 8)], skip="^xmalloc$")
        self.assertEqual(result.sites[0].frame, PARSE)
        self.assertEqual(result.stacks[0].frames, (PARSE, XMALLOC, MAIN, START))

    def test_skip_is_re_search(self):
        s = self.w.stack(PROBE, XMALLOC, PARSE, MAIN, START)
        self.assertEqual(self.fold([alloc(s, 8)], skip="mall").sites[0].frame, PARSE)
        self.assertEqual(self.fold([alloc(s, 8)], skip="^mall").sites[0].frame, XMALLOC)

    def test_nothing_left_is_no_caller(self):
        s = self.w.stack(PROBE, XMALLOC)
        result = self.fold([alloc(s, 8)], skip="xmalloc")
        self.assertEqual(result.sites[0].frame, NO_CALLER)
        self.assertEqual(result.stacks, [fold.Stack((NO_CALLER,), 1, 8, {"0": 8})])

    def test_probe_only_is_no_caller(self):
        result = self.fold([alloc(self.w.stack(PROBE), 8)])
        self.assertEqual(result.sites[0].frame, NO_CALLER)
        # rt_alloc is not a root: the stack was cut short.
        self.assertEqual(result.truncated, 1)

    def test_stacks_ending_in_jit_code_counted_apart(self):
        jit = fr("jit_thunk [lua]+0x5", 0, "/tmp/perf-42.map",
                 dso="/tmp/perf-42.map")
        lib = fr("helper+0x10", 0, "/usr/lib/libx.so", dso="/usr/lib/libx.so")
        result = self.fold([alloc(self.w.stack(PROBE, PARSE, jit), 8),
                            alloc(self.w.stack(PROBE, PARSE, jit), 8),
                            alloc(self.w.stack(PROBE, PARSE, lib), 8),
                            alloc(self.w.stack(PROBE, PARSE, MAIN, START), 8)])
        self.assertEqual((result.truncated, result.truncated_at_jit), (3, 2))

    def test_stack_the_reader_ended_at_an_outermost_frame_is_whole(self):
        # a coroutine's or a custom thread's first function: no start
        # function's name, but its CFI says it has no caller
        entry = fr("co_entry", 50, "/src/co.c")
        s = self.w.stack(PROBE, PARSE, entry) + [
            parse.end_frame(parse.OUTERMOST_DSO)]
        result = self.fold([alloc(s, 8)])
        self.assertEqual(result.truncated, 0)
        self.assertEqual(result.stacks[0].frames, (PARSE, entry))
        # the same frames without the reader's word: cut short
        cut = self.fold([alloc(self.w.stack(PROBE, PARSE, entry), 8)])
        self.assertEqual(cut.truncated, 1)
        self.assertEqual(cut.stacks[0].frames,
                         (PARSE, entry, fold.CUT_SHORT))

    def test_stacks_gone_elsewhere_counted_apart_under_their_root(self):
        lib = fr("raise+0x10", 0, "/usr/lib/libc.so", dso="/usr/lib/libc.so")
        switched = self.w.stack(PROBE, PARSE, lib) + [
            parse.end_frame(parse.SWITCHED_DSO)]
        result = self.fold([alloc(switched, 8), alloc(switched, 8),
                            alloc(self.w.stack(PROBE, PARSE, lib), 8),
                            alloc(self.w.stack(PROBE, PARSE, MAIN, START), 8)])
        self.assertEqual((result.truncated, result.truncated_switched,
                          result.truncated_at_jit), (3, 2, 0))
        self.assertEqual(sorted((s.frames, s.count) for s in result.stacks),
                         sorted([((PARSE, lib, fold.SWITCHED), 2),
                                 ((PARSE, lib, fold.CUT_SHORT), 1),
                                 ((PARSE, MAIN, START), 1)]))
        # one site: the marker is no frame of the stack
        self.assertEqual([(s.frame, s.count) for s in result.sites],
                         [(PARSE, 4)])

    def test_no_callchain_is_no_caller_not_truncated(self):
        result = self.fold([alloc([], 8), alloc([], 2)])
        self.assertEqual([(s.frame, s.count, s.bytes) for s in result.sites],
                         [(NO_CALLER, 2, 10)])
        self.assertEqual(result.truncated, 0)

    def test_call_site_stack_direct(self):
        self.assertEqual(fold.call_site_stack([PROBE, XMALLOC, PARSE], None),
                         (XMALLOC, PARSE))
        self.assertEqual(fold.call_site_stack([], None), ())
        self.assertEqual(fold.call_site_stack([PROBE], None), ())


class FoldFilterTest(unittest.TestCase):
    NAMES = {1: "ast", 2: "tokens"}

    def setUp(self):
        self.w = World()
        self.tally = Tally()
        s = self.w.stack(PROBE, PARSE, MAIN, START)
        for size, tag in [(10, 1), (20, 2), (40, 7)]:
            self.tally.add(alloc(s, size, tag=tag))

    def folded(self, tags):
        return fold.fold(self.tally, self.w.sym, self.NAMES, tags=tags)

    def test_no_filter(self):
        self.assertEqual(self.folded(None).bytes, 70)

    def test_filter_by_name(self):
        result = self.folded({"ast"})
        self.assertEqual((result.count, result.bytes), (1, 10))
        self.assertEqual(dict(result.sites[0].tag_bytes), {"ast": 10})

    def test_filter_by_number_of_named_tag(self):
        self.assertEqual(self.folded({"2"}).bytes, 20)

    def test_filter_by_number_of_unnamed_tag(self):
        self.assertEqual(self.folded({"7"}).bytes, 40)

    def test_filter_several(self):
        self.assertEqual(self.folded({"ast", "7"}).bytes, 50)

    def test_filter_matching_nothing(self):
        result = self.folded({"nope"})
        self.assertEqual((result.sites, result.stacks, result.count, result.bytes,
                          result.truncated), ([], [], 0, 0, 0))


class FoldDepthTest(unittest.TestCase):
    def setUp(self):
        self.w = World()
        self.t = Tally()
        self.t.add(alloc(self.w.stack(PROBE, PARSE, STMT, MAIN, START), 10))
        self.t.add(alloc(self.w.stack(PROBE, PARSE, STMT, fr("other", 3), START), 5))

    def test_depth_cuts_and_merges_stacks(self):
        result = fold.fold(self.t, self.w.sym, depth=2)
        self.assertEqual(result.stacks, [fold.Stack((PARSE, STMT), 2, 15, {"0": 15})])

    def test_depth_does_not_change_sites_or_totals(self):
        result = fold.fold(self.t, self.w.sym, depth=1)
        self.assertEqual([(s.frame, s.count, s.bytes) for s in result.sites],
                         [(PARSE, 2, 15)])
        self.assertEqual(result.stacks, [fold.Stack((PARSE,), 2, 15, {"0": 15})])
        self.assertEqual((result.count, result.bytes), (2, 15))

    def test_depth_larger_than_stack(self):
        result = fold.fold(self.t, self.w.sym, depth=50)
        self.assertEqual(len(result.stacks), 2)
        self.assertEqual(result.stacks[0].frames, (PARSE, STMT, MAIN, START))

    def test_depth_none_or_zero_keeps_everything(self):
        for depth in (None, 0):
            with self.subTest(depth=depth):
                result = fold.fold(self.t, self.w.sym, depth=depth)
                self.assertEqual([len(s.frames) for s in result.stacks], [4, 4])


class TruncationTest(unittest.TestCase):
    def truncated_for(self, root_function, count=3):
        w = World()
        t = Tally()
        for _ in range(count):
            t.add(alloc(w.stack(PROBE, PARSE, MAIN, fr(root_function, 0, "/lib/libc.so.6")), 1))
        return fold.fold(t, w.sym).truncated

    def test_roots_are_not_truncated(self):
        for name in ["_start", "_start+0x25", "__libc_start_main",
                     "__libc_start_main_impl",
                     "__libc_start_call_main", "__libc_start_call_main+0x7a",
                     "start_thread", "start_thread+0x2f3", "clone", "clone3",
                     "clone3+0x2c", "__clone", "__clone3", "__clone3+0x2c",
                     "_dl_start_user", "_dl_init", "call_init+0x9a"]:
            with self.subTest(root=name):
                self.assertEqual(self.truncated_for(name), 0)

    def test_other_outermost_frames_are_truncated(self):
        for name in ["main", "parse_expr", "my_start", "clone4", "start_thread_x",
                     "clone3+0x", "clone3+2c",
                     "[unknown] libc.so.6+0x1234", "libc.so.6+0x29d90"]:
            with self.subTest(outermost=name):
                self.assertEqual(self.truncated_for(name), 3)

    def test_stripped_start_outside_libc_start_main_is_a_root(self):
        # A stripped executable's _start has no symbol: an unnamed frame
        # right outside __libc_start_main is it. The same unnamed frame
        # anywhere else is still a stack cut short.
        w = World()
        t = Tally()
        start = fr("[unknown] prog+0x1a5e", 0, "/usr/bin/prog")
        libc = fr("__libc_start_main+0x85", 0, "/lib/libc.so.6")
        t.add(alloc(w.stack(PROBE, PARSE, MAIN, libc, start), 1))
        self.assertEqual(fold.fold(t, w.sym).truncated, 0)
        t = Tally()
        t.add(alloc(w.stack(PROBE, PARSE, MAIN, start), 1))
        t.add(alloc(w.stack(PROBE, PARSE, libc, fr("deep", 4)), 1))
        self.assertEqual(fold.fold(t, w.sym).truncated, 2)

    def test_truncated_counts_allocations_not_stacks(self):
        w = World()
        t = Tally()
        cut = w.stack(PROBE, PARSE, MAIN)
        whole = w.stack(PROBE, PARSE, MAIN, START)
        for e in [alloc(cut, 1), alloc(cut, 1), alloc(cut, 5, tag=3), alloc(whole, 1)]:
            t.add(e)
        self.assertEqual(fold.fold(t, w.sym).truncated, 3)

    def test_truncation_uses_outermost_inline_expanded_frame(self):
        w = World()
        t = Tally()
        t.add(alloc(w.stack(PROBE, PARSE, (fr("inl", 3, inlined=True), fr("_start", 0))), 1))
        t.add(alloc(w.stack(PROBE, PARSE, (fr("_start", 0, inlined=True), fr("main", 9))), 1))
        self.assertEqual(fold.fold(t, w.sym).truncated, 1)


class StackOrderTest(unittest.TestCase):
    def test_most_bytes_then_count_then_names_ties_kept_in_order(self):
        def st(nbytes, count, *names, tag=""):
            return fold.Stack(tuple(fr(n) for n in names), count, nbytes,
                              {tag: nbytes})
        stacks = [st(10, 1, "b"), st(30, 1, "z"), st(10, 2, "y"),
                  st(10, 1, "a", "c"), st(10, 1, "a"), st(10, 1, "b", tag="t"),
                  st(10, 1, "a", "b")]
        # the rule as fold had it: one sort on (-bytes, -count, names),
        # stable, so stacks of equal names keep the order they came in
        expected = sorted(stacks, key=lambda s: (
            -s.bytes, -s.count, [f.function for f in s.frames]))
        got = fold.by_size_then_functions(stacks)
        self.assertEqual(got, expected)
        self.assertEqual([s.frames[0].function for s in got],
                         ["z", "y", "a", "a", "a", "b", "b"])
        self.assertEqual([s.tags for s in got[-2:]], [{"": 10}, {"t": 10}])
        self.assertEqual(fold.by_size_then_functions([]), [])


class TagLabelTest(unittest.TestCase):
    def test_tag_label(self):
        self.assertEqual(fold.tag_label(1, {1: "ast"}), "ast")
        self.assertEqual(fold.tag_label(7, {1: "ast"}), "7")
        self.assertEqual(fold.tag_label(0, {}), "0")


class TrackedPhases(unittest.TestCase):
    """rt:sample's phase (rt:phase_track recorded, sampled mode): the
    thread's phase runs go into the event log as rt:phase_begin and
    rt:phase_end would have, at the samples where the phase changes."""

    def test_runs_at_the_changes_per_thread(self):
        from allocsites_lib.read.parse import Event
        t = Tally()
        frames = ()
        for time, tid, phase in ((10, 1, 3), (20, 1, 3), (30, 2, 1),
                                 (40, 1, 0), (50, 1, 2), (60, 2, 1)):
            t.add(Event("sample", 7, tid, 16, 1, 4096, frames, 0x100 + time,
                        time, rate=4096, phase=phase))
        got = [(kind, time, tid, a) for kind, time, _pid, tid, a, _b, _s, _k
               in t.log if kind.startswith("phase")]
        self.assertEqual(got, [("phase_begin", 10, 1, 2),
                               ("phase_begin", 30, 2, 0),
                               ("phase_end", 40, 1, 2),
                               ("phase_begin", 50, 1, 1)])
        self.assertTrue(t.phases_from_samples)
        self.assertEqual(t.events["phase_begin"], 0)   # none was received

    def sampled(self, events):
        from allocsites_lib.read.parse import Event
        t = Tally()
        for time, tid, phase, weight in events:
            t.add(Event("sample", 7, tid, 16 if weight else 0, 1, weight, (),
                        0x100 + time if weight else 0, time, rate=4096,
                        phase=phase))
        return t

    def open_phases(self, t):
        from allocsites_lib.analyze import liveness
        return liveness.sweep(t.log, "sampled").open_phases

    def test_a_phase_mark_ends_the_run(self):
        # rt__phase_mark (include/rt_probes.h): at a thread's end an
        # rt:sample of nothing (weight 0) with the thread's phase then.
        # Thread 1 closed its phase (mark 0), thread 2 did not (mark 2):
        # one run open at exit, as rt:phase_end would have said.
        t = self.sampled([(10, 1, 3, 4096), (20, 2, 2, 4096),
                          (30, 1, 0, 0), (40, 2, 2, 0)])
        got = [(kind, time, tid, a) for kind, time, _pid, tid, a, _b, _s, _k
               in t.log if kind.startswith("phase")]
        self.assertEqual(got, [("phase_begin", 10, 1, 2),
                               ("phase_begin", 20, 2, 1),
                               ("phase_end", 30, 1, 2)])
        self.assertEqual(self.open_phases(t), [(7, 2, 1)])
        # the marks are events received, not samples: no estimate, no count
        self.assertEqual(t.events["sample"], 2)
        self.assertEqual(t.received[7]["sample"], 4)
        self.assertEqual(sum(e.samples for e in t.sampled.values()), 2)
        self.assertEqual(sum(t.sample_rates.values()), 2)

    def test_without_the_mark_the_last_run_stays_open(self):
        # An older header's recording: nothing tells the run's end.
        t = self.sampled([(10, 1, 3, 4096)])
        self.assertEqual(self.open_phases(t), [(7, 1, 2)])

    def test_workers_split_a_run_and_merge_it_closed(self):
        # perf script workers on two time ranges: the later one starts
        # every thread outside every phase. The run of phase 2 begun in the
        # first range ends at the second's first sample of the thread
        # (there phase 0, or another phase, or phase 2 again: runs are not
        # known in sampled mode); the mark then closes the last.
        events = [(10, 1, 3, 4096), (20, 1, 3, 4096), (30, 1, 2, 4096),
                  (40, 1, 0, 0)]
        whole = self.sampled(events)
        self.assertEqual(self.open_phases(whole), [])
        for cut in range(1, len(events)):
            with self.subTest(cut=cut):
                merged = self.sampled(events[:cut]).merge(
                    self.sampled(events[cut:]))
                self.assertEqual(self.open_phases(merged), [])
                from allocsites_lib.analyze import liveness
                sweep = liveness.sweep(merged.log, "sampled")
                self.assertEqual(   # each sample still in its own phase
                    {ph: st.bytes for ph, st in sweep.phases.items()},
                    {2: 8192, 1: 4096})

    def test_no_phase_argument_no_runs(self):
        from allocsites_lib.read.parse import Event
        t = Tally()
        t.add(Event("sample", 7, 1, 16, 1, 4096, (), 0x100, 10, rate=4096))
        self.assertFalse(t.phases_from_samples)
        self.assertEqual([e[0] for e in t.log], ["sample"])


if __name__ == "__main__":
    unittest.main()
