#!/usr/bin/python3
"""How much of a recording's size is stale ring bytes after short stack
copies.

  bench/stale_tails.py [--stack-size 8192] FILE...

perf reserves --stack-size bytes of stack in every sample record but
copies only up to the first page that is not mapped in (dyn_size); the
rest of the reserved bytes keep whatever an older record left in the ring
buffer (kernel/events/core.c, perf_output_sample_ustack: perf_output_skip).
For each perf.data (made with -z), this decompresses its record stream
(perfdata.py's reader), finds each sample's user stack (the u64 size,
--stack-size bytes, the u64 dyn_size, then one trailing u64 as perf 6.1
writes allocsites' alloc event), and compresses the stream with `zstd -1`
(perf's own level) as it is and with every stale tail zeroed. Prints per
file: samples with a stack, how many were short, the median bytes copied,
and the two compressed sizes. Needs the zstd command; no perf, no root.
Slow: about 30 s a demo recording (1.8 GB decompressed).
"""

import argparse
import os
import statistics
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
from allocsites_lib import perfdata  # noqa: E402

U64 = struct.Struct("<Q")
HEADER = struct.Struct("<IHH")
RECORD_SAMPLE = 9


def stream(path):
    """The decompressed records of path, as perfdata's scan reads them."""
    chunks = []
    walk = perfdata._Records.walk

    def keep(self, buf, start, end, on_compressed=None):
        done = walk(self, buf, start, end, on_compressed)
        if on_compressed is None and start == 0:   # the decompressor's call
            chunks.append(bytes(buf[start:done]))
        return done

    perfdata._Records.walk = keep
    try:
        perfdata.scan(path)
    finally:
        perfdata._Records.walk = walk
    return b"".join(chunks)


def zero_stale_tails(raw, stack_size):
    """(copy of raw with stale tails zeroed, stack samples, short, copied)"""
    out = bytearray(raw)
    samples = short = 0
    copied = []
    pos = 0
    while pos + 8 <= len(raw):
        kind, _misc, size = HEADER.unpack_from(raw, pos)
        if size < 8:
            break
        end = pos + size - 8        # the trailing u64
        start = end - 8 - stack_size
        if kind == RECORD_SAMPLE and start - 8 > pos and \
                U64.unpack_from(raw, start - 8)[0] == stack_size:
            dyn = U64.unpack_from(raw, end - 8)[0]
            samples += 1
            copied.append(dyn)
            if dyn < stack_size:
                short += 1
                out[start + dyn:start + stack_size] = bytes(stack_size - dyn)
        pos += size
    return out, samples, short, copied


def zstd_size(data):
    return len(subprocess.run(["zstd", "-1", "-c", "-q"], input=bytes(data),
                              stdout=subprocess.PIPE, check=True).stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stack-size", type=int, default=8192)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    print("| file | MiB | stack samples | short copies | median bytes copied "
          "| zstd -1 MiB | stale tails zeroed, MiB |")
    print("|---|---|---|---|---|---|---|")
    for path in args.files:
        raw = stream(path)
        zeroed, samples, short, copied = zero_stale_tails(raw,
                                                          args.stack_size)
        print("| %s | %.1f | %d | %d | %s | %.1f | %.1f |" % (
            os.path.basename(path), os.path.getsize(path) / 2**20, samples,
            short, int(statistics.median(copied)) if copied else "-",
            zstd_size(raw) / 2**20, zstd_size(zeroed) / 2**20))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
