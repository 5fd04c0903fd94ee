"""Scores a profile against the workload's ground truth.

A profile, whatever tool made it, comes here as a dict
    (basename of file, line) -> [count, bytes]
of what the tool charged to each source line (count None when the tool
gives no counts). The truth is the storm's $TRUTH_FILE (bench/storm/
storm_truth.h). Files compare by basename, because tools print DWARF
paths differently (absolute, relative, shortened).

attribution(profile, truth) gives the share of the truth's allocations
and of its bytes charged to the right file:line:
    sum over sites of min(profile, truth) / truth total
so a site the tool over-counts cannot make up for one it missed, and
counts charged to a wrong line (the allocator's own, a caller's) score
nothing. For a sampled profile the same formula measures the estimates'
error as well. The peak variant compares bytes live at the peak instead
(massif's view).
"""

import json
import os

# The allocator's source: a tool's frames in this file are the allocator
# itself, never the call site.
ALLOCATOR_FILE = "rt_alloc.c"


def load_truth(path):
    """-> {"sites": {(file, line): (count, bytes, peak_bytes)},
           "count": N, "bytes": N, "peak_bytes": N or None}"""
    with open(path) as f:
        doc = json.load(f)
    sites = {}
    for r in doc["records"]:
        sites[(os.path.basename(r["file"]), r["line"])] = (
            r["count"], r["bytes"], r["peak_bytes"])
    return {"sites": sites,
            "count": sum(v[0] for v in sites.values()),
            "bytes": sum(v[1] for v in sites.values()),
            "peak_bytes": doc["peak_bytes"]}


def site_key(path, line):
    return (os.path.basename(path or ""), int(line or 0))


def add(profile, key, count, size):
    """Adds count allocations of size bytes in all to profile[key]."""
    entry = profile.setdefault(key, [0, 0])
    if count is None:
        entry[0] = None
    elif entry[0] is not None:
        entry[0] += count
    entry[1] += size


def charge(profile, frames, count, size):
    """Adds to profile at the first (path, line) of frames (innermost
    first, inlined frames before their caller) outside the allocator's
    file; at ("?", 0) when there is none."""
    for path, line in frames:
        if os.path.basename(path or "") != ALLOCATOR_FILE:
            add(profile, site_key(path, line), count, size)
            return
    add(profile, ("?", 0), count, size)


def _share(profile, truth, mine, theirs, total):
    """sum(min(profile[site][mine], truth site[theirs])) / total."""
    if not total:
        return None
    right = 0
    for key, values in truth["sites"].items():
        got = profile.get(key, [0, 0])[mine]
        if got is None:
            return None
        right += min(got, values[theirs])
    return right / total


def attribution(profile, truth):
    """-> (share of allocations, share of bytes) at the right line."""
    return (_share(profile, truth, 0, 0, truth["count"]),
            _share(profile, truth, 1, 1, truth["bytes"]))


def peak_attribution(profile, truth):
    """profile: bytes live at the peak per line -> share right, or None
    when the truth has no peak (several threads)."""
    if truth["peak_bytes"] is None:
        return None
    return _share(profile, truth, 1, 2, truth["peak_bytes"])
