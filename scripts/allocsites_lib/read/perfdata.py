"""The recording's scan: sample times, threads, loss, and what ran.

`allocsites record` prints a summary of what it recorded, and
`allocsites report` needs the samples' times to split the file among
perf script workers, and the loss (LOST_SAMPLES) and the code that ran
for its verdict. perf 6.1 cannot tell them cheaply: with `perf record
-z` the header's first and last sample times stay 0 (perf record skips
its build-id pass, which is what sets them), so `perf script --time
0%-50%` fails, and a `perf script -F time` or `perf report --stats` pass
costs as much as half a report. scan() reads the file itself, in one
pass, with the native reader's parser of perf.data (allocsites-read
--scan: scripts/reader/scan.c, on perffile.c, the one parser of the
format; 0.8 s of CPU for 10^6 allocations with DWARF stacks, 9 GB
decompressed): the header, the attributes and event names, every
record, the compressed ones decompressed, the time of every sample and
the LOST / LOST_SAMPLES records `perf report --stats` counts.

A Python twin of that pass is kept in the tests as the oracle it is
checked against (tests/oracle/perfdata_py.py, test_scan_native.py).
Without a built reader scan() raises PerfDataError (not corrupt): the
callers then fall back to one perf script worker and `perf report
--stats`, as for a file the scan does not handle (pipe format, big
endian, other compression). `corrupt` tells a damaged file from those.
"""

import itertools
import os
import re
import subprocess


class PerfDataError(Exception):
    """The file cannot be scanned. corrupt: True when the file is damaged
    (perf will not read it whole either), False when this reader only
    lacks support for it. in_data: the damage lies among the records
    (perf script reads those before it), not in the header."""

    def __init__(self, message, corrupt=False, in_data=False):
        Exception.__init__(self, message)
        self.corrupt = corrupt
        self.in_data = in_data


# The largest stack copy perf takes a sample (--call-graph dwarf,N: the
# kernel's limit, a u16 less the sample's other fields, 8-aligned).
STACK_COPY_MAX = 65528


class Scan:
    """What one pass over a perf.data file found.

    times: the time (ns) of every sample, sorted; samples: how many
    samples of tracepoint events (what perf script hands a Python
    script); pids: {thread id: process id} of the samples' threads;
    lost_samples: {event name: samples lost} from
    PERF_RECORD_LOST_SAMPLES; lost_records: PERF_RECORD_LOST records;
    depths: (time, bytes of user stack above the thread's deepest
    point... its shallowest one) of one sample in STACK_EVERY, sorted, when
    the samples carry user registers (--call-graph dwarf): how much stack
    perf will unwind for it, the bulk of perf script's work per sample;
    decompressed: bytes of records inside PERF_RECORD_COMPRESSED (perf 6.1
    keeps all of them in memory while it reads the file); all_tracepoints:
    every event is a tracepoint, so perf hands the script every sample
    (samples == len(times))."""

    def __init__(self):
        self.times = []
        self.pids = {}   # thread id -> process id, from the samples
        self.depths = []
        self._stack_points = []   # (time, tid, sp)
        self.samples = 0
        # {event name: sample records}, as `perf report --stats` counts
        # them per event (records perf wrote twice included)
        self.event_samples = {}
        # {event name: records perf wrote twice}: a sample of the same
        # thread and nanosecond as one of that thread's last samples in
        # the file (docs/design.md, "perf writes some sample records
        # twice")
        self.duplicate_samples = {}
        self.lost_samples = {}
        self.lost_records = 0
        self.decompressed = 0
        self.compressed = False
        self.data_size = 0          # bytes of the data section
        self.all_tracepoints = True
        # path -> set of build-ids (hex) the kernel gave its MMAP2 records
        # (perf record --buildid-mmap): what the recorded code was.
        self.build_ids = {}
        self.cmdline = []       # perf's own command line (feature CMDLINE)
        # Files mapped executable by the recorded processes (MMAP2 with
        # PROT_EXEC): every program and library that ran code.
        self.code = set()
        # Bytes of a record the compressed stream ends inside: perf 6.1's
        # -z cut its last compressed record short (docs/design.md, "perf
        # -z and silent loss"); everything before them was read.
        self.tail_cut = 0
        # How the allocations' stacks were taken: "dwarf" (user registers
        # and a stack copy, unwound afterwards), "fp" (the kernel's
        # frame-pointer walk) or None (no call graph).
        self.unwind = None
        # With "dwarf", the bytes of stack copied a sample (perf's
        # --call-graph dwarf,N); else 0.
        self.stack_size = 0
        # Processes the recording saw start (FORK of a new process, or
        # the COMM of the program perf started) and end (EXIT of the
        # thread whose tid is the pid). running(): those still running
        # when the recording ended, such as a daemon whose parent, the
        # program perf waited for, had exited.
        self.started = set()
        self.ended = set()
        # What stopped the recording before the program ended, as record
        # noted it ("SIGINT"), or None; not in the file: the scan sidecar
        # keeps it.
        self.stopped = None

    def running(self):
        """The pids of processes that were still running when the
        recording ended, sorted."""
        return sorted(self.started - self.ended)

    def lost(self, event_prefix="sdt_rt:"):
        """(lost, None) or (None, reason): the figures and the rule of
        perfrun.count_lost, which reads them from `perf report --stats`."""
        lost = sum(n for name, n in self.lost_samples.items()
                   if name.startswith(event_prefix))
        if lost == 0 and self.lost_records > 0:
            return None, ("%d PERF_RECORD_LOST records without a count"
                          % self.lost_records)
        return lost, None


def perf_options(cmdline):
    """perf record's own words of its command line: those before `--`,
    where the program's begin (allocsites record always writes one; a
    `mkdir -p` or `ls -a` after it is the program's, not perf's)."""
    return cmdline[:cmdline.index("--")] if "--" in cmdline else cmdline


def attached(cmdline):
    """Whether perf record attached to running processes (-p/--pid)."""
    return any(a in ("-p", "--pid") or a.startswith("--pid=")
               for a in perf_options(cmdline))


def system_wide(cmdline):
    """Whether perf record recorded every CPU (-a/--all-cpus): then every
    process of the machine is in the recording (perf writes a COMM of
    each at the start), not only the program's."""
    return any(a in ("-a", "--all-cpus") for a in perf_options(cmdline))


def user_regs(cmdline):
    """The registers perf record --user-regs took (its value, as given),
    or None where it took the default (every register, with --call-graph
    dwarf). Fewer registers: a stack stops at a frame whose caller's
    unwinding needs one of the others."""
    options = perf_options(cmdline)
    for i, a in enumerate(options):
        if a.startswith("--user-regs="):
            return a[len("--user-regs="):]
        if a == "--user-regs" and i + 1 < len(options):
            return options[i + 1]
    return None


def scan(path, keep_times=True):
    """Scan of the perf.data at path, or PerfDataError. keep_times False:
    times is None and depths empty (the native report needs neither, and
    they grow with the recording: 36 bytes a sample). Read by the native
    reader (allocsites-read --scan); without one built, PerfDataError
    (not corrupt: the caller falls back to perf report --stats)."""
    program = scan_program()
    if program is None:
        _open_check(path)
        raise PerfDataError("allocsites-read is not built (make): the "
                            "recording is not scanned")
    return scan_native(program, path, keep_times)


def scan_program():
    """The built allocsites-read (native.built_program), or None."""
    from . import native
    from .. import SCRIPTS_DIR
    return native.built_program("allocsites-read", SCRIPTS_DIR)


def _open_check(path):
    """PerfDataError unless path is a non-empty file this process can
    read."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                raise PerfDataError("empty file", corrupt=True)
    except OSError as e:
        raise PerfDataError("cannot read %s: %s" % (path, e))


# What allocsites-read --scan says of a file it does not handle (not
# damaged: the caller falls back to perf report --stats).
UNSUPPORTED = ("not a little-endian perf.data", "not a perf.data header",
               "the header has no data size", "read values or branch stacks",
               "other than zstd", "no event names", "common time field",
               "cannot tell the events' samples apart", "out of memory")


def scan_native(program, path, keep_times=True):
    """scan() by program (allocsites-read --scan, whose output format
    scripts/reader/scan.c describes)."""
    _open_check(path)
    argv = [program, "--scan"] + (["--times"] if keep_times else []) + \
        [path]
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    except OSError as e:
        raise PerfDataError("cannot run %s: %s" % (program, e))
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace").strip()
        said = said.splitlines()[0] if said else ""
        message = said[len("allocsites-read: "):] \
            if said.startswith("allocsites-read: ") else said
        if message.startswith(path + ": "):
            message = message[len(path) + 2:]
        if proc.returncode == 1 and message:
            raise PerfDataError(
                message, corrupt=not any(u in message for u in UNSUPPORTED),
                in_data=b"\nrecords\n" in proc.stdout)
        raise PerfDataError("%s --scan failed (status %d): %s"
                            % (program, proc.returncode, said))
    try:
        return _scan_of_output(proc.stdout, keep_times)
    except ValueError as e:
        raise PerfDataError("%s --scan: unexpected output (%s)"
                            % (program, e))


_ESCAPE = re.compile(rb"\\x([0-9a-f]{2})")


def _unescape(raw):
    if b"\\" not in raw:
        return raw
    return _ESCAPE.sub(lambda m: bytes((int(m.group(1), 16),)), raw)


def _text(raw):
    return _unescape(raw).decode("utf-8", "replace")


def _path(raw):
    return _unescape(raw).decode("utf-8", "surrogateescape")


def _numbers(block, key, per_line):
    """The numbers of a "KEY N" block (N lines of per_line numbers)."""
    first, _, rest = block.partition(b"\n")
    name, count = first.split(b" ")
    numbers = list(map(int, rest.split()))
    if name != key or len(numbers) != int(count) * per_line:
        raise ValueError("a %s block cut short" % key.decode())
    return numbers


def _scan_of_output(out, keep_times):
    """The Scan of allocsites-read --scan's output (bytes); ValueError
    when the output is not one."""
    if not out.startswith(b"allocsites-scan 1\n") or \
            not out.endswith(b"\nend\n"):
        raise ValueError("not a whole scan")
    body = out[:-len(b"end\n")]
    result = Scan()
    result.times = None
    t = body.find(b"\ntimes ")
    if t >= 0:   # the samples' times and depths (--times): deltas
        d = body.find(b"\ndepths ", t)
        if d < 0:
            raise ValueError("times without depths")
        result.times = list(itertools.accumulate(
            _numbers(body[t + 1:d], b"times", 1)))
        pairs = _numbers(body[d + 1:], b"depths", 2)
        result.depths = list(zip(itertools.accumulate(pairs[0::2]),
                                 pairs[1::2]))
        body = body[:t + 1]
    elif keep_times:
        raise ValueError("no times")
    for line in body.split(b"\n")[1:-1]:
        key, _, value = line.partition(b" ")
        if key in (b"event_samples", b"duplicate_samples",
                   b"lost_samples"):
            number, _, name = value.partition(b" ")
            getattr(result, key.decode())[_text(name)] = int(number)
        elif key == b"pid":
            tid, pid = value.split(b" ")
            result.pids[int(tid)] = int(pid)
        elif key == b"code":
            result.code.add(_path(value))
        elif key == b"build_id":
            hexid, _, path = value.partition(b" ")
            result.build_ids.setdefault(_path(path), set()).add(
                hexid.decode("ascii"))
        elif key == b"started":
            result.started.add(int(value))
        elif key == b"ended":
            result.ended.add(int(value))
        elif key == b"cmdline":
            result.cmdline.append(_text(value))
        elif key in (b"samples", b"lost_records", b"decompressed",
                     b"tail_cut", b"data_size", b"stack_size"):
            setattr(result, key.decode(), int(value))
        elif key in (b"compressed", b"all_tracepoints"):
            setattr(result, key.decode(), value == b"1")
        elif key == b"unwind":
            result.unwind = value.decode("ascii")
        elif key != b"records":
            raise ValueError("unknown line %r" % line[:40])
    return result
