"""heaptrack as a contender, through its custom-allocator API: rt_alloc
calls heaptrack_malloc / heaptrack_free (storm-heaptrack build,
examples/rtalloc/rt_alloc_hooks.h), which heaptrack's preload library
exports.

heaptrack strips its own function and the frame that called it
(rt_alloc), so the first frame of each trace is the call site, inlined
frames first. The analysis step a user runs is heaptrack_print; its text
gives exact counts per site ("calls") but bytes only rounded and as peak
or leaked, never bytes allocated. So the profile here is read from
heaptrack's data file itself (zstd text: what heaptrack_gui shows):
  s <string>                 strings, numbered from 1
  i <ip> <module> [<function> <file> <line>]...   innermost inline first
  t <ip index> <parent trace index>               trace tree
  a <size> <trace index>                          allocation info
  + <allocation info index>                       one allocation
(numbers in hex; v = format version, >= 3 prefixes strings with a length)
"""

import os
import subprocess

from . import score


class Heaptrack:
    variant = "heaptrack"
    name = "heaptrack"

    def record(self, argv, tmp):
        # -o appends .zst itself.
        return ["heaptrack", "-o", os.path.join(tmp, "heaptrack")] + argv, None

    def analyze(self, tmp):
        return ["heaptrack_print", "-f", os.path.join(tmp, "heaptrack.zst"),
                "-a", "1", "-p", "0", "-T", "0", "-l", "0", "-m", "0",
                "-n", "1000000000"]

    def outputs(self, tmp):
        return [os.path.join(tmp, "heaptrack.zst")]

    def profile(self, tmp, record_run, analyze_run):
        text = subprocess.run(["zstd", "-dc", os.path.join(tmp, "heaptrack.zst")],
                              stdout=subprocess.PIPE, check=True,
                              universal_newlines=True, errors="replace").stdout
        # No loss counter: heaptrack takes each event synchronously.
        return data_profile(text.split("\n")), None


def data_profile(lines):
    """heaptrack data lines -> {(file, line): [count, bytes]} by each
    trace's first frame."""
    strings, ips, traces, infos, counts = [None], [None], [None], [], {}
    version = 0
    for line in lines:
        tag, _, rest = line.partition(" ")
        if tag == "+":
            k = int(rest, 16)
            counts[k] = counts.get(k, 0) + 1
        elif tag == "s":
            strings.append(rest.split(" ", 1)[1] if version >= 3 else rest)
        elif tag == "i":
            fields = rest.split()
            # first frame (innermost inline): function, file, line
            first = fields[2:5]
            ips.append((strings[int(first[1], 16)], int(first[2], 16))
                       if len(first) == 3 else ("?", 0))
        elif tag == "t":
            ip, _ = rest.split()[:2]
            traces.append(int(ip, 16))
        elif tag == "a":
            size, trace = rest.split()[:2]
            infos.append((int(size, 16), int(trace, 16)))
        elif tag == "v":
            fields = rest.split()
            version = int(fields[1], 16) if len(fields) > 1 else 0
    profile = {}
    for k, n in counts.items():
        size, trace = infos[k]
        path, line = ips[traces[trace]] if trace else ("?", 0)
        score.add(profile, score.site_key(path, line), n, n * size)
    return profile
