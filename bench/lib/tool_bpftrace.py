"""bpftrace as a contender: usdt:rt:alloc with ustack, on a build with
frame pointers (bpftrace unwinds user stacks by frame pointer only; the
storm-fp build, also -no-pie so that raw addresses are link addresses).

  @st[ustack] = stats(arg1)    per stack: count, average, total bytes
  @n = count()                 all events, to tell stacks bpftrace lost

bpftrace prints its maps after the -c child has exited, when it can no
longer read the child's memory map, so its symbols come out unresolved
at random; BPFTRACE_NO_USER_SYMBOLS=1 makes the output raw addresses
always. bpftrace shows functions at best (sym+offset), never file:line,
so the analysis step is addr2line -f -i over the addresses: the work a
user has to do. Events whose stack bpftrace could not store (its stack
map is a fixed-size hash: collisions drop stacks) come out under an
empty key "@st[]"; they are counted as lost.
"""

import os
import re
import subprocess
import sys

if __package__:
    from . import score
else:  # run as the analysis step: python3 lib/tool_bpftrace.py
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import score

STATS = re.compile(r"count (\d+), average \d+, total (\d+)")


class Bpftrace:
    variant = "fp"
    name = "bpftrace"

    def record(self, argv, tmp):
        self.binary = argv[0]
        script = ("usdt:%s:rt:alloc { @st[ustack] = stats(arg1); "
                  "@n = count(); }" % argv[0])
        return (["bpftrace", "-o", os.path.join(tmp, "bpftrace.txt"),
                 "-e", script, "-c", " ".join(argv)],
                {"BPFTRACE_NO_USER_SYMBOLS": "1"})

    def analyze(self, tmp):
        return ["/usr/bin/python3", os.path.abspath(__file__), self.binary,
                os.path.join(tmp, "bpftrace.txt")]

    def outputs(self, tmp):
        return [os.path.join(tmp, "bpftrace.txt")]

    def record_lost(self, record_run, tmp):
        with open(os.path.join(tmp, "bpftrace.txt")) as f:
            return lost(*parse(f.read()))

    def profile(self, tmp, record_run, analyze_run):
        with open(os.path.join(tmp, "bpftrace.txt")) as f:
            stacks, total = parse(f.read())
        return symbolized_profile(self.binary, stacks), lost(stacks, total)


def lost(stacks, total):
    """Events without a stored stack, and any @n counted beyond the
    stacks printed (map keys past BPFTRACE_MAP_KEYS_MAX)."""
    seen = sum(n for _, n, _ in stacks)
    return sum(n for frames, n, _ in stacks if not frames) + (total - seen)


def parse(text):
    """bpftrace output -> ([(addresses leaf first, count, bytes)], @n)."""
    stacks, total, frames = [], 0, None
    for line in text.split("\n"):
        if line.startswith("@st["):
            frames = []
            if line.startswith("@st[]: "):  # no stack: the lookup failed
                m = STATS.search(line)
                stacks.append(([], int(m.group(1)), int(m.group(2))))
                frames = None
        elif line.startswith("]: ") and frames is not None:
            m = STATS.search(line)
            stacks.append((frames, int(m.group(1)), int(m.group(2))))
            frames = None
        elif frames is not None and line.strip():
            frames.append(int(line.strip(), 16))
        elif line.startswith("@n: "):
            total = int(line[4:])
    return stacks, total


def symbolized_profile(binary, stacks):
    """Charges each stack to its first frame outside the allocator. The
    leaf is the probe's own address; callers are return addresses, looked
    up one byte back (inside the call instruction)."""
    wanted = sorted({a if i == 0 else a - 1
                     for frames, _, _ in stacks for i, a in enumerate(frames)})
    lines = addr2line(binary, wanted)
    profile = {}
    for frames, count, nbytes in stacks:
        source = (place for i, a in enumerate(frames)
                  for place in lines.get(a if i == 0 else a - 1, []))
        score.charge(profile, source, count, nbytes)
    return profile


def addr2line(binary, addresses):
    """-> {address: [(file, line), ...] innermost inline first}."""
    out = subprocess.run(["addr2line", "-a", "-f", "-i", "-e", binary] +
                         ["%x" % a for a in addresses], stdout=subprocess.PIPE,
                         check=True, universal_newlines=True).stdout.split("\n")
    result, current, i = {}, None, 0
    while i < len(out):
        if out[i].startswith("0x"):
            current = result.setdefault(int(out[i], 16), [])
            i += 1
        elif i + 1 < len(out):
            path, _, line = out[i + 1].rpartition(":")
            line = line.split()[0] if line else "0"
            current.append((path, int(line) if line.isdigit() else 0))
            i += 2
        else:
            i += 1
    return result


if __name__ == "__main__":
    # The analysis step, timed by bench/compare.py: symbolize the output.
    with open(sys.argv[2]) as f:
        found, _ = parse(f.read())
    for key, (count, nbytes) in sorted(
            symbolized_profile(sys.argv[1], found).items()):
        print("%s:%d %d %d" % (key[0], key[1], count, nbytes))
