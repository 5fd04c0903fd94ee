"""Guest locations (analyze/guest.py, parse.GuestFrames, Tally.guests):
an allocation's guest location id keeps its key apart, --guest charges
it to its innermost guest frame ([interpreter] for none), and stacks are
spliced: the guest frames, then the native frames outside the dispatch
loop. No perf needed (tests/integration/test_guest.py records a real Lua
host)."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import gzip
import pickle

from allocsites_lib.analyze import fold, guest, pprofdata
from allocsites_lib.read.tally import Tally
from allocsites_lib.read import parse
from allocsites_lib.read.parse import Event, GuestFrames
from allocsites_lib.render import pprofout

from fixtures import StubSymbolizer, fr

PROBE = fr("l_alloc", 20, "/src/host.c")
RESIZE = fr("luaH_resize", 300, "/src/ltable.c")
EXEC = fr("luaV_execute", 800, "/src/lvm.c")
CALL = fr("luaD_call", 600, "/src/ldo.c")
PCALL = fr("lua_pcall", 1000, "/src/lapi.c")
MAIN = fr("main", 40, "/src/host.c")
START = fr("_start+0x25", 0, "/usr/bin/app")

# id -> (parent, line, source, function): 3 is inner() called from 2
DEFS = {1: (0, 5, "t.lua", "main chunk"), 2: (1, 9, "t.lua", "outer"),
        3: (2, 14, "t.lua", "inner")}


def guest_ev(gid, parent, line, source, function, tid=1, time=None):
    return Event("guest", 1, tid, 0, 0, None, (), None, time,
                 (gid, parent, line, source, function))


class Frames(unittest.TestCase):

    def test_guest_frames_are_keys_of_their_own(self):
        a = (parse.RawFrame("/x", 1, "f", 0, None),)
        self.assertEqual(GuestFrames(a, 3), GuestFrames(a, 3))
        self.assertNotEqual(GuestFrames(a, 3), GuestFrames(a, 4))
        self.assertNotEqual(GuestFrames(a, 3), a)
        self.assertNotEqual(a, GuestFrames(a, 3))
        self.assertEqual(len({(GuestFrames(a, 3), 1), (a, 1),
                              (GuestFrames(a, 3), 1)}), 2)
        g = pickle.loads(pickle.dumps(GuestFrames(a, 3)))
        self.assertEqual((g, parse.guest_of(g)), (GuestFrames(a, 3), 3))
        self.assertEqual(parse.guest_of(a), 0)
        self.assertIs(parse.with_guest(a, 0), a)
        self.assertEqual(list(GuestFrames(a, 3)), list(a))   # native frames
        self.assertFalse(GuestFrames((), 3))   # no call chain, as ()

    def test_perf_fields_give_the_guest_location(self):
        chain = [{"ip": 0x10, "dso": "/x", "sym": {"start": 0x10,
                                                    "name": "f"},
                  "sym_off": 0}]
        fields = {"arg1": 0x5000, "arg2": 32, "arg3": 2, "arg4": 7,
                  "common_pid": 5, "common_s": 1, "common_ns": 2,
                  "common_callchain": chain}
        for read in (parse.Reader().read,
                     lambda *a: parse.Reader()._read_slow(*a)):
            got = read("sdt_rt__alloc_1", fields, None)
            self.assertEqual(parse.guest_of(got[6]), 7)
        self.assertEqual(parse.guest_of(parse.Reader().read(
            "sdt_rt__alloc_1", dict(fields, arg4=0), None)[6]), 0)
        # rt:sample's is arg7
        sample = dict(fields, arg4=4096, arg5=4096, arg6=0, arg7=9)
        self.assertEqual(parse.guest_of(parse.Reader().read(
            "sdt_rt__sample_1", sample, None)[6]), 9)
        # a definition; names that are not strings (perf probe's
        # pointers) are None
        ev = parse.event_from_perf("sdt_rt__guest_3", {
            "arg1": 3, "arg2": 2, "arg3": 14, "arg4": "t.lua",
            "arg5": 12345, "common_pid": 5, "common_s": 1,
            "common_ns": 3}, None)
        self.assertEqual((ev.kind, ev.counts), ("guest", (3, 2, 14, "t.lua",
                                                          None)))
        self.assertIsNone(parse.event_from_perf(
            "sdt_rt__guest_3", {"arg1": 3, "arg4": "t.lua"}, None))

    def test_tally_keeps_the_first_definition(self):
        t = Tally()
        t.add(guest_ev(3, 2, 14, "t.lua", "inner", time=10))
        t.add(guest_ev(3, 0, 99, "u.lua", "other", time=20))
        t.add(guest_ev(4, 0, 1, "t.lua", "x", time=20))   # a duplicate
        self.assertEqual(t.guests, {3: (2, 14, "t.lua", "inner")})
        self.assertEqual(t.events["guest"], 2)
        self.assertEqual(t.duplicate_kinds["guest"], 1)


class Splicing(unittest.TestCase):

    def setUp(self):
        self.sym = StubSymbolizer()
        self.raws = {f: self.sym.raw(f) for f in
                     (PROBE, RESIZE, EXEC, CALL, PCALL, MAIN, START)}

    def native(self, *frames):
        return tuple(self.raws[f] for f in frames)

    def tally(self):
        t = Tally()
        t.guests = dict(DEFS)
        deep = self.native(PROBE, RESIZE, EXEC, CALL, EXEC, CALL, PCALL,
                           MAIN, START)
        t.add(Event("alloc", 1, 1, 100, 1, None, GuestFrames(deep, 3), 1))
        t.add(Event("alloc", 1, 1, 40, 1, None, GuestFrames(deep, 2), 2))
        t.add(Event("alloc", 1, 1, 7, 1, None,
                    self.native(PROBE, MAIN, START), 3))   # start-up
        t.add(Event("alloc", 1, 1, 5, 1, None, GuestFrames(deep, 77), 4))
        return t

    def test_sites_by_guest_location(self):
        view = guest.GuestView(DEFS, "^luaV_execute$")
        prof = fold.fold(self.tally(), self.sym, guest=view)
        got = {(s.frame.function, s.frame.file, s.frame.line): s.bytes
               for s in prof.sites}
        self.assertEqual(got, {("inner", "t.lua", 14): 100,
                               ("outer", "t.lua", 9): 40,
                               ("[interpreter]", "", 0): 7,
                               ("[guest 77]", "", 0): 5})
        stacks = {s.frames[0].function: [f.function for f in s.frames]
                  for s in prof.stacks}
        # the guest stack, then the native frames outside the outermost
        # luaV_execute
        self.assertEqual(stacks["inner"], ["inner", "outer", "main chunk",
                                           "luaD_call", "lua_pcall", "main",
                                           "_start+0x25"])
        self.assertEqual(stacks["[interpreter]"],
                         ["[interpreter]", "main", "_start+0x25"])
        # without --guest: the native sites, as always
        plain = fold.fold(self.tally(), self.sym)
        self.assertEqual({s.frame.function for s in plain.sites},
                         {"luaH_resize", "main"})

    def test_a_phase_by_guest_location_with_its_liveness(self):
        # --phase and liveness by guest location: phase 4 holds the
        # allocations at inner (one freed) and the interpreter's
        from allocsites_lib.analyze import liveness, liveview
        deep = self.native(PROBE, RESIZE, EXEC, CALL, PCALL, MAIN, START)
        t = Tally()
        t.guests = dict(DEFS)
        t.add(Event("alloc", 1, 1, 30, 1, None, GuestFrames(deep, 2), 1, 10))
        t.add(Event("phase_begin", 1, 1, 0, 4, None, (), None, 20))
        t.add(Event("alloc", 1, 1, 100, 1, None, GuestFrames(deep, 3), 2,
                    30))
        t.add(Event("alloc", 1, 1, 50, 1, None, GuestFrames(deep, 3), 3,
                    40))
        t.add(Event("alloc", 1, 1, 7, 1, None,
                    self.native(PROBE, MAIN, START), 4, 50))
        t.add(Event("free", 1, 1, 50, 0, None, (), 3, 60))
        t.add(Event("phase_end", 1, 1, 0, 4, None, (), None, 70))
        sweep = liveness.sweep(t.log, "exact")
        entries, live = liveview.selection(sweep, 4)
        prof = fold.fold(t, self.sym, guest=guest.GuestView(DEFS),
                         entries=entries, live=live)
        got = {s.frame.function: (s.count, s.bytes, s.leaked_bytes)
               for s in prof.sites}
        self.assertEqual(got, {"inner": (2, 150, 100),
                               "[interpreter]": (1, 7, 7)})

    def test_no_dispatch_declared_puts_guest_frames_on_top(self):
        view = guest.GuestView(DEFS)
        prof = fold.fold(self.tally(), self.sym, guest=view)
        inner = [s for s in prof.stacks if s.frames[0].function == "inner"]
        self.assertEqual([f.function for f in inner[0].frames][:5],
                         ["inner", "outer", "main chunk", "luaH_resize",
                          "luaV_execute"])

    def test_dispatch_without_line_info_matches_its_symbol(self):
        # a static liblua without debug info: "luaV_execute+0x123b"
        view = guest.GuestView(DEFS, "^luaV_execute$")
        chain = (fr("luaH_new+0x12"), fr("luaV_execute+0x123b"),
                 fr("lua_pcall+0x40"), MAIN)
        self.assertEqual([f.function for f in view.splice(3, chain)],
                         ["inner", "outer", "main chunk", "lua_pcall+0x40",
                          "main"])
        self.assertFalse(view.is_dispatch(fr("luaV_executeX+0x1")))

    def test_a_cycle_of_parents_ends(self):
        view = guest.GuestView({5: (6, 1, "a", "f"), 6: (5, 2, "a", "g")})
        self.assertEqual([f.function for f in view.frames(5)], ["f", "g"])

    def test_names_with_control_characters_are_escaped(self):
        # Lua's load(code, "=chunk\nname"): a newline split the table's
        # row; None names are "?"
        view = guest.GuestView({5: (6, 1, "=chunk\nname\t", "f\x7f"),
                                6: (0, 2, None, None)})
        self.assertEqual([(f.file, f.function) for f in view.frames(5)],
                         [("=chunk\\x0aname\\x09", "f\\x7f"), ("?", "?")])

    def test_pprof_locations_are_the_spliced_frames(self):
        t = self.tally()
        view = guest.GuestView(DEFS, "^luaV_execute$")
        blob = gzip.decompress(pprofout.encode(pprofdata.profile(
            t, self.sym, {}, "exact", guest=view), "exact"))
        for name in (b"inner", b"outer", b"main chunk", b"t.lua",
                     b"[interpreter]", b"[guest]", b"lua_pcall"):
            self.assertIn(name, blob)
        # the dispatch loop and what it called are replaced
        self.assertNotIn(b"luaH_resize", blob)
        self.assertNotIn(b"luaV_execute", blob)
        plain = gzip.decompress(pprofout.encode(pprofdata.profile(
            t, self.sym, {}, "exact"), "exact"))
        self.assertIn(b"luaH_resize", plain)
        self.assertNotIn(b"inner", plain)


if __name__ == "__main__":
    unittest.main()
