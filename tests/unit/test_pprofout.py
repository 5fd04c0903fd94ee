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


if __name__ == "__main__":
    unittest.main()
