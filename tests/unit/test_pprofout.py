"""pprofout's values: profile.proto's int64 never wraps to a negative
number (an allocation of SIZE_MAX bytes became -1 in pprof)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "scripts"))
from allocsites_lib.render import pprofout  # noqa: E402


def varints(data):
    out, n, shift = [], 0, 0
    for b in data:
        n |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            out.append(n)
            n = shift = 0
    return out


class Values(unittest.TestCase):

    def test_saturated(self):
        self.assertEqual(pprofout.saturated((1 << 64) - 1),
                         pprofout.INT64_MAX)
        self.assertEqual(pprofout.saturated(1 << 63), pprofout.INT64_MAX)
        self.assertEqual(pprofout.saturated(48), 48)
        self.assertEqual(pprofout.saturated(2.6), 3)

    def test_packed_values_decode_as_positive_int64(self):
        data = pprofout._packed(2, [pprofout.saturated((1 << 64) - 1), 5])
        # key, length, then the packed varints
        values = varints(data)[2:]
        self.assertEqual(values, [pprofout.INT64_MAX, 5])
        self.assertLess(values[0], 1 << 63)   # int64: not negative


def fields(data):
    """A protobuf message's (field, value) pairs: an int for a varint, the
    bytes for a length-delimited field (the only wire types pprof's
    profile.proto uses)."""
    out, i = [], 0
    while i < len(data):
        n, shift = 0, 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                break
        field, wire = n >> 3, n & 7
        if wire == 0:
            v, shift = 0, 0
            while True:
                b = data[i]
                i += 1
                v |= (b & 0x7f) << shift
                shift += 7
                if not b & 0x80:
                    break
            out.append((field, v))
        elif wire == 2:
            size, shift = 0, 0
            while True:
                b = data[i]
                i += 1
                size |= (b & 0x7f) << shift
                shift += 7
                if not b & 0x80:
                    break
            out.append((field, data[i:i + size]))
            i += size
        else:
            raise ValueError("wire type %d" % wire)
    return out


def int64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def decode(gz):
    """(sample types [(type, unit)], samples [[values as int64]])."""
    import gzip
    msg = fields(gzip.decompress(gz))
    strings = [v.decode() for f, v in msg if f == 6]
    types = []
    for f, v in msg:
        if f == 1:
            vt = dict(fields(v))
            types.append((strings[vt.get(1, 0)], strings[vt.get(2, 0)]))
    samples = []
    for f, v in msg:
        if f == 2:
            packed = [x for g, x in fields(v) if g == 2][0]
            samples.append([int64(x) for x in varints(packed)])
    return types, samples


class HugeSizes(unittest.TestCase):
    """Allocations of SIZE_MAX and 2^62 bytes (issue 31: negative in
    pprof). pprof adds a type's values up as int64 without checking: each
    value saturated at 2^63-1 still gave -2 B for the total of two. The
    bytes are then given in kilobytes (pprof's unit "kilobytes"), so that
    every sum pprof makes fits."""

    def profile(self, sizes, frees=0):
        import tempfile
        from allocsites_lib import pipeline
        from allocsites_lib.read.tally import Tally
        from allocsites_lib.cli import options
        import io
        import test_pipeline as tp
        from fixtures import alloc, free
        t = Tally()
        for i, (site, size, tag) in enumerate(sizes):
            frames = [tp.PROBE, tp.PARSE, tp.MAIN10, tp.ROOT] if site == "A" \
                else [tp.PROBE, tp.XMALLOC, tp.LEX, tp.MAIN12]
            t.add(alloc(frames, size, tag=tag)._replace(ptr=0x1000 + 0x100 * i))
        for i in range(frees):   # the last allocations
            t.add(free(0)._replace(ptr=0x1000 + 0x100 * (len(sizes) - 1 - i)))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.pb.gz")
            pipeline.analyze_and_render(
                t, options.parse(["--pprof", path]), tp.symbolizer(), 0,
                None, "/x.data", out=io.StringIO(), err=io.StringIO())
            with open(path, "rb") as f:
                return decode(f.read())

    def test_sums_fit_in_int64(self):
        big = 1 << 62
        types, samples = self.profile([("A", (1 << 64) - 1, 1),
                                       ("B", big, 2), ("B", big, 2)], frees=1)
        self.assertEqual(types, [("alloc_objects", "count"),
                                 ("alloc_space", "kilobytes"),
                                 ("inuse_objects", "count"),
                                 ("inuse_space", "kilobytes")])
        # (2^64 - 1) B is 2^54 KiB rounded; 2 x 2^62 B is 2^53 KiB; one of
        # them freed: 2^52 KiB in use
        self.assertEqual(sorted(samples), sorted([
            [1, 1 << 54, 0, 0], [0, 0, 1, 1 << 54],
            [2, 1 << 53, 0, 0], [0, 0, 1, 1 << 52]]))
        for i in range(4):
            self.assertLessEqual(sum(s[i] for s in samples),
                                 pprofout.INT64_MAX)

    def test_ordinary_sizes_stay_in_bytes(self):
        types, samples = self.profile([("A", 48, 1), ("B", 1 << 61, 2),
                                       ("B", 1 << 61, 2)])
        self.assertEqual(types, [("alloc_objects", "count"),
                                 ("alloc_space", "bytes")])
        self.assertEqual(sorted(samples), [[1, 48], [2, 1 << 62]])

    def test_units(self):
        types = [("n", "count"), ("b", "bytes")]
        fits = pprofout.INT64_MAX - 1
        self.assertEqual(pprofout.byte_units([((), [1, fits], b"")], types),
                         [0, 0])
        self.assertEqual(pprofout.byte_units(
            [((), [1, fits], b""), ((), [1, 1], b"")], types), [0, 1])
        self.assertEqual(pprofout.byte_units(
            [((), [1, 1 << 80], b"")], types), [0, 2])
        self.assertEqual(pprofout.scaled(1535, 1), 1)
        self.assertEqual(pprofout.scaled(1536, 1), 2)


if __name__ == "__main__":
    unittest.main()
