"""The header's own parser of RT_SAMPLE_BYTES and RT_SAMPLE_SEED
(rt__parse_bytes in include/rt_sampler.h), compiled and run: values
that do not fit in 64 bits are malformed (0), never wrapped."""
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

PROGRAM = r"""
#include <stdio.h>
#include "rt_probes.h"
int main(int argc, char **argv)
{
    int i;
    for (i = 1; i < argc; i++)
        printf("%llu\n", rt__parse_bytes(argv[i]));
    return 0;
}
"""

CASES = [
    ("524288", 524288), ("512k", 524288), ("1M", 1 << 20), ("1", 1),
    ("", 0), ("12x", 0), ("k", 0), ("-5", 0),
    ("18446744073709551615", 2 ** 64 - 1),
    ("18446744073709551616", 0),            # 2^64: wrapped to 0 before
    ("18446744073709551617", 0),            # wrapped to 1 byte before
    ("99999999999999999999", 0),
    ("18014398509481983k", (2 ** 54 - 1) << 10),
    ("18014398509481984k", 0),              # 2^54 KiB = 2^64
    ("17592186044416m", 0),                 # 2^44 MiB = 2^64
]


class ParseBytes(unittest.TestCase):
    def test_cases(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        src, prog = os.path.join(tmp, "p.c"), os.path.join(tmp, "p")
        with open(src, "w") as f:
            f.write(PROGRAM)
        subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-I" + os.path.join(ROOT, "include"), src, "-o", prog],
                       check=True)
        out = subprocess.run([prog] + [c for c, _ in CASES], check=True,
                             stdout=subprocess.PIPE, universal_newlines=True).stdout
        self.assertEqual([int(x) for x in out.split()], [v for _, v in CASES])


if __name__ == "__main__":
    unittest.main()
