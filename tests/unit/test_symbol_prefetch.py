"""symbolize.Prefetch and Symbolizer.prefetch: addr2line asked about the
frames while the native reader still reads (native.Stream.on_frames
hands them over at each progress block), so that the report's resolve
after the reader asks only about what prefetch did not. What the report
shows must not change: the frames and the warnings are still made by
resolve, from the same answers."""
import os, sys, threading, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import io
import struct
import time

from allocsites_lib.analyze.symbolize import (Addr2lineMissing, Frame,
                                              Prefetch, Symbolizer)
from allocsites_lib.read import native
from allocsites_lib.read.parse import RawFrame

from fixtures import APP, FakeAddr2line, FakeElf, fake_open_elf

LIB = "/usr/lib/libfoo.so.1"


def raw(addr, dso=APP):
    return RawFrame(dso, addr, "f", 0, None)


class SymbolizerPrefetch(unittest.TestCase):
    def setUp(self):
        self.a2l = FakeAddr2line({(APP, 0x1000): [("f", "/src/x.c", 3)],
                                  (APP, 0x1010): [("g", "/src/x.c", 4)],
                                  (LIB, 0x2000): [("h", "/src/l.c", 5)]})
        self.sym = Symbolizer(self.a2l, fake_open_elf(
            {APP: FakeElf(), LIB: FakeElf()}))

    def test_resolve_asks_only_what_prefetch_did_not(self):
        self.sym.prefetch([raw(0x1000), raw(0x2000, LIB)])
        self.assertEqual(sorted(self.a2l.calls),
                         [(APP, [0x1000]), (LIB, [0x2000])])
        self.sym.resolve([raw(0x1000), raw(0x1010), raw(0x2000, LIB)])
        self.assertEqual(sorted(self.a2l.calls), [
            (APP, [0x1000]), (APP, [0x1010]), (LIB, [0x2000])])
        self.assertEqual(self.sym.frames(raw(0x1010)),
                         (Frame("g", "/src/x.c", 4, APP, False),))
        self.assertEqual(self.sym.frames(raw(0x2000, LIB)),
                         (Frame("h", "/src/l.c", 5, LIB, False),))

    def test_prefetch_makes_no_frames_and_no_warnings(self):
        nodebug = raw(0x1020)   # no answer: no line info
        self.sym.prefetch([nodebug, RawFrame(LIB, None, None, None, 7)])
        self.assertEqual(self.sym.warnings, [])
        self.sym.resolve([nodebug])
        self.assertEqual(self.sym.frames(nodebug)[0].function, "f+0x0")

    def test_warnings_as_without_prefetch(self):
        frames = [raw(0x1000), RawFrame(LIB, None, None, None, 7),
                  RawFrame("/gone.so", 0x10, "x", 0, None)]
        plain = Symbolizer(FakeAddr2line(self.a2l.answers), fake_open_elf(
            {APP: FakeElf(), LIB: FakeElf()}))
        plain.resolve(frames)
        self.sym.prefetch(frames)
        self.sym.resolve(frames)
        self.assertEqual(self.sym.warnings, plain.warnings)
        self.assertEqual([self.sym.frames(r) for r in frames],
                         [plain.frames(r) for r in frames])

    def test_a_lookup_that_failed_is_asked_again(self):
        # run_addr2line answers {} when its process fails
        self.a2l.answers, kept = {}, self.a2l.answers
        self.sym.prefetch([raw(0x1000)])
        self.a2l.answers = kept
        self.sym.resolve([raw(0x1000)])
        self.assertEqual(self.a2l.calls, [(APP, [0x1000]), (APP, [0x1000])])
        self.assertEqual(self.sym.frames(raw(0x1000))[0].line, 3)

    def test_no_addr2line_found_by_prefetch_is_said_by_resolve(self):
        calls = []

        def missing(path, addresses):
            calls.append(path)
            raise Addr2lineMissing()
        sym = Symbolizer(missing, fake_open_elf({APP: FakeElf()}))
        sym.prefetch([raw(0x1000)])
        self.assertEqual(sym.warnings, [])
        sym.resolve([raw(0x1000)])
        self.assertEqual(calls, [APP])   # not asked again
        self.assertEqual(sym.warnings, [
            "addr2line is not installed (Debian: binutils): frames shown "
            "as function+offset"])


class PrefetchThread(unittest.TestCase):
    def test_frames_added_are_asked_in_the_thread(self):
        asked = threading.Event()
        a2l = FakeAddr2line({(APP, 0x1000): [("f", "/src/x.c", 3)]})

        def answer(path, addresses):
            try:
                return a2l(path, addresses)
            finally:
                asked.set()
        sym = Symbolizer(answer, fake_open_elf({APP: FakeElf()}))
        warmed = []
        with Prefetch(sym, warm=lambda: warmed.append(1), interval=0) as p:
            p.add([raw(0x1000)])
            self.assertTrue(asked.wait(10))
        self.assertEqual(warmed, [1])
        sym.resolve([raw(0x1000)])
        self.assertEqual(a2l.calls, [(APP, [0x1000])])   # once
        self.assertEqual(sym.frames(raw(0x1000))[0].line, 3)

    def test_a_failure_in_the_thread_costs_only_the_prefetch(self):
        def broken(path, addresses):
            raise ValueError("bad answer")
        sym = Symbolizer(broken, fake_open_elf({APP: FakeElf()}))
        with Prefetch(sym, warm=lambda: 1 / 0, interval=0) as p:
            p.add([raw(0x1000)])
        sym2 = Symbolizer(broken, fake_open_elf({APP: FakeElf()}))
        with Prefetch(sym2, interval=0) as p:
            p.add([raw(0x1000)])
        # resolve, asking again, is where a failure is raised
        with self.assertRaises(ValueError):
            sym2.resolve([raw(0x1000)])

    def test_an_interrupt_does_not_wait_for_addr2line(self):
        started, release = threading.Event(), threading.Event()

        def slow(path, addresses):
            started.set()
            release.wait(30)
            return {}
        sym = Symbolizer(slow, fake_open_elf({APP: FakeElf()}))
        with self.assertRaises(KeyboardInterrupt):
            with Prefetch(sym, interval=0) as p:
                p.add([raw(0x1000)])
                self.assertTrue(started.wait(10))
                t0 = time.monotonic()
                raise KeyboardInterrupt
        self.assertLess(time.monotonic() - t0, 5)
        self.assertTrue(p._thread.is_alive())   # still in addr2line
        release.set()
        p._thread.join(10)
        self.assertFalse(p._thread.is_alive())

    def test_stop_without_frames(self):
        p = Prefetch(Symbolizer(FakeAddr2line(), fake_open_elf({})))
        with p:
            pass
        self.assertFalse(p._thread.is_alive())


class StreamHandsOverFrames(unittest.TestCase):
    """native.Stream.on_frames: the frames met since the last progress
    block, at each progress block, each frame once."""

    @staticmethod
    def block(kind, payload):
        return struct.pack("<II", kind, len(payload)) + payload

    def frame(self, fid, addr):
        return self.block(native.B_FRAME, native.FRAME.pack(
            fid, 1, 0, 1, addr, 0, 0))

    def test_frames_at_progress_blocks(self):
        got = []
        stream = native.Stream()
        stream.on_frames = lambda frames: got.append(
            [f.addr for f in frames])
        progress = self.block(native.B_PROGRESS, struct.pack("<Q", 65536))
        data = (self.block(native.B_STRING, struct.pack("<I", 1) + b"/bin/x")
                + self.frame(1, 0x10) + self.frame(2, 0x20) + progress
                + progress + self.frame(3, 0x30) + progress
                + self.frame(4, 0x40))
        stream.feed(io.BytesIO(data))
        self.assertEqual(got, [[0x10, 0x20], [0x30]])
        self.assertEqual(stream.frames[4].addr, 0x40)


if __name__ == "__main__":
    unittest.main()
