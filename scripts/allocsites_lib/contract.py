"""The probe contract in one table: each rt probe and its arguments.

The probe contract in one table: every rt probe, its arguments, and how
a recording carries it.

include/rt_probes.h fires the probes and probes/rt.d declares them for
dtrace-style tools; the recorder (record/probedefs.py), the event
parser (read/parse.py), the event log (read/eventlog.py, and the C sweep's
enum in scripts/sweep/sweep.h), the end-to-end check
(analyze/completeness.py) and the plain event's size in the perf dlfilter
(scripts/dlfilter/) take their share of the contract from here or are
checked against it by tests/unit/test_contract.py; the header and rt.d
are checked against each other by tests/unit/test_probe_contract.py. So
a new argument is the header, rt.d, this table, and the code that uses
it; a test names whatever else disagrees.

Arguments are (name, C type as rt.d declares it, size in bytes, signed).
plain_kind: the immediate that names the probe in the one event every
probe without a call graph shares (sdt_rt:plain_PID, record/probedefs.py);
part of the recording format: never renumber. None: the probe has an
event of its own (rt:alloc, rt:sample: they take the call graph).
"""

import collections

Probe = collections.namedtuple("Probe", "name args plain_kind fires",
                               defaults=(True,))

_PTR = ("ptr", "void *", 8, False)
_SIZE = ("size", "size_t", 8, False)
_TAG = ("tag", "unsigned int", 4, False)
_ID = ("id", "unsigned int", 4, False)


def _u64(name):
    return (name, "unsigned long long", 8, False)


_STR = ("string", "char *", 8, False)   # fetched as a string (guest)

PROBES = (
    Probe("alloc", (_PTR, _SIZE, _TAG, _u64("guest")), None),
    Probe("free", (_PTR, _SIZE, _TAG), 1),
    Probe("sample", (_PTR, _SIZE, _TAG, _u64("weight"), _u64("rate"),
                     _u64("phase"), _u64("guest")), None),
    Probe("sample_free", (_PTR, _u64("weight")), 7),
    Probe("release", (("base", "void *", 8, False),
                      ("len", "size_t", 8, False)), 2),
    Probe("commit", (_PTR, _SIZE), 3),
    Probe("decommit", (_PTR, _SIZE), 4),
    Probe("phase_begin", (_ID,), 5),
    Probe("phase_end", (_ID,), 6),
    # never fires: recorded, its semaphore tells the phase markers to
    # keep the thread's phase for rt:sample (sampled mode)
    Probe("phase_track", (), 10, fires=False),
    # a guest location's frame (a language runtime's): an event of its
    # own, its two names fetched as strings (record/probedefs.py)
    Probe("guest", (_u64("id"), _u64("parent"), _u64("line"),
                    ("source",) + _STR[1:], ("function",) + _STR[1:]),
          None),
    Probe("exit", tuple(_u64(n) for n in (
        "allocs", "frees", "samples", "sample_frees", "releases", "commits",
        "phases", "untracked")), 9),
)

BY_NAME = {p.name: p for p in PROBES}

# The probes of the plain event: name -> kind immediate, and back.
PLAIN_KINDS = {p.name: p.plain_kind for p in PROBES
               if p.plain_kind is not None}
# kind immediate -> the probe, for the ones that fire
PLAIN_NAMES = {p.plain_kind: p.name for p in PROBES
               if p.plain_kind is not None and p.fires}

# The probes a recording can hold events of (rt:phase_track never fires).
FIRING = tuple(p.name for p in PROBES if p.fires)
# The events that define names, not allocations or frees: not in the
# event log, nor in the end-to-end count.
DEFINING = ("guest",)

# The plain event's fields a..h: as many as the most arguments any of
# its probes has (rt:exit's 8).
PLAIN_FIELDS = "abcdefgh"[:max(len(p.args) for p in PROBES
                              if p.plain_kind is not None)]

# What the end-to-end count counts each event kind as (the others as
# themselves): commit and decommit are rt:exit's commits, phase_begin and
# phase_end its phases (analyze/completeness.py).
COUNTED_AS = {"commit": "commit", "decommit": "commit",
              "phase_begin": "phase", "phase_end": "phase"}

# The kinds of event the report counts end to end, in the order of
# rt:exit's arguments (its last one, untracked, counts no event).
EXIT_COUNTS = ("alloc", "free", "sample", "sample_free", "release",
               "commit", "phase")
