"""Whole stack copies from the main thread under real perf: perf copies
--stack-size bytes from the stack pointer, stops at the first page that
is not mapped in, and leaves the rest of the record to stale ring bytes
(docs/design.md, "Whole stack copies"). With record's environment pad
(ALLOCSITES_STACK_PAD) and
rt_stack_top.h's constructor, every copy of a single-threaded program is
whole; without the pad, copies from frames near main stop at the stack's
top. A 32 KiB copy makes the control certain: the kernel's random hole
and the strings above main are far less than that."""

import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, ProfileTest, allocsites, program  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import perfdata_py as perfdata  # noqa: E402  (the Python scan: its walk)

STACK = 32768
ALLOCS = 300

U64 = struct.Struct("<Q")
HEADER = struct.Struct("<IHH")
RECORD_SAMPLE = 9


def stream(path):
    """The decompressed records of path, as the Python scan reads them."""
    chunks = []
    walk = perfdata._Records.walk

    def keep(self, buf, start, end, on_compressed=None):
        done = walk(self, buf, start, end, on_compressed)
        if on_compressed is None and start == 0:   # the decompressor's call
            chunks.append(bytes(buf[start:done]))
        return done

    perfdata._Records.walk = keep
    try:
        perfdata.scan_python(path)
    finally:
        perfdata._Records.walk = walk
    return b"".join(chunks)


def short_copies(raw, stack_size):
    """(stack samples, short copies) in a decompressed record stream: each
    sample's user stack is the u64 size, stack_size bytes, the u64
    dyn_size perf copied, then one trailing u64, as perf 6.1 writes
    allocsites' alloc event."""
    samples = short = 0
    pos = 0
    while pos + 8 <= len(raw):
        kind, _misc, size = HEADER.unpack_from(raw, pos)
        if size < 8:
            break
        end = pos + size - 8        # the trailing u64
        start = end - 8 - stack_size
        if kind == RECORD_SAMPLE and start - 8 > pos and \
                U64.unpack_from(raw, start - 8)[0] == stack_size:
            samples += 1
            if U64.unpack_from(raw, end - 8)[0] < stack_size:
                short += 1
        pos += size
    return samples, short


class WholeStackCopies(ProfileTest):

    def copies(self, env):
        """(alloc events, stack samples, short copies) of t_basic
        recorded with env."""
        data = os.path.join(self.tmp, "run.data")
        rec = allocsites(["record", "-o", data, "--stack-size", str(STACK),
                          "--", program("t_basic"), str(ALLOCS)],
                         env=dict(env, TRUTH_FILE=os.devnull))
        self.assertEqual(rec.returncode, 0, rec.stderr)
        self.assertIn("lost: 0 ", rec.stderr)
        allocs = int(re.search(r"recorded (\d+) alloc events",
                               rec.stderr).group(1))
        samples, short = short_copies(stream(data), STACK)
        for path in os.listdir(self.tmp):
            os.unlink(os.path.join(self.tmp, path))
        return allocs, samples, short

    def test_whole_with_the_pad_short_without(self):
        allocs, samples, short = self.copies({})
        self.assertGreater(allocs, ALLOCS)   # t_basic: a few per round
        self.assertEqual(samples, allocs)
        self.assertEqual(short, 0)
        # The control: the same recording without the pad.
        allocs, samples, short = self.copies({"ALLOCSITES_STACK_PAD": ""})
        self.assertEqual(samples, allocs)
        self.assertGreater(short, 0)


if __name__ == "__main__":
    import unittest
    unittest.main()
