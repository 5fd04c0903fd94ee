"""The report's default reader: runs allocsites-read, builds the Tally.

allocsites-read (scripts/reader/, C) reads the recording, unwinds its
stacks and tallies every event itself (reader/tally.c, by the rules of
Tally.add_fields): this module gets the distinct strings, frames and
stacks, then the tally's figures per (stack, tag) and its counters, and
the event log as a file in the log's own spill format. No Python runs
per event; what it builds is the Tally the perf script path builds
(allocsites.py), so every output is the one perf script gives
(tests/integration/test_native_reader.py compares them).

Why: perf script 6.1 keeps every decompressed record of a -z recording
in memory until it exits (90 GB at 10^7 allocations) and unwinds each
sample through a fresh libdw or libunwind session, then hands it to
Python through a dict per frame; and Python's work per event (2-4 us)
was most of the report's time.
"""

import collections
import os
import struct
import subprocess
import sys
import tempfile
import urllib.parse

from . import parse
from .eventlog import EventLog
from .tally import ExactEntry, SampledEntry

B_STRING, B_FRAME, B_STACK, B_NOTE, B_PROGRESS, B_TALLY = 2, 3, 4, 6, 7, 8
MAX_FIELDS = 12
BLOCK = struct.Struct("<II")
FRAME = struct.Struct("<IIIIQQQ")

# The Result of workers.run, which the report takes either way.
Result = collections.namedtuple(
    "Result", "tally tallies handler_errors perf_inlines read_errors "
              "passthrough notes")


class StreamError(Exception):
    """allocsites-read's stream is not what this module reads."""


def built_program(name, here, build=None):
    """The built program `name` (allocsites-read, allocsites-sweep): in
    the directory here, where make install puts it beside the entry
    script, or in the build directory of a checkout ($BUILD, else
    here/../build); None if there is none."""
    build = build or os.environ.get("BUILD") or \
        os.path.join(os.path.dirname(here), "build")
    for path in (os.path.join(here, name), os.path.join(build, name)):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)
    return None


def child_env(environ=None):
    """The environment for the C stages (allocsites-read, -sweep):
    glibc's malloc asked for transparent huge pages where the kernel
    gives them on request (THP "madvise"): their large buffers (the
    event log's columns, the ordering queue, the sweep's pointer map)
    then take a page fault per 2 MiB, not per 4 KiB (on this VM a fault
    is tens of microseconds). Tunables glibc does not know are
    ignored."""
    env = dict(os.environ if environ is None else environ)
    tunable = "glibc.malloc.hugetlb=1"
    have = env.get("GLIBC_TUNABLES")
    if not have:
        env["GLIBC_TUNABLES"] = tunable
    elif "glibc.malloc.hugetlb" not in have:
        env["GLIBC_TUNABLES"] = have + ":" + tunable
    return env


def reader_path(entry_script, build=None):
    """The built allocsites-read (built_program), for the entry script."""
    return built_program("allocsites-read",
                         os.path.dirname(os.path.abspath(entry_script)), build)


class Stream:
    """Reads allocsites-read's blocks: the distinct raw stacks, the
    tally's lines, the notes."""

    def __init__(self):
        self.strings = {0: None}
        self.frames = {}
        self.stacks = {0: ()}   # raw stack id -> tuple of RawFrame
        self.notes = {}
        self.tally_lines = []
        self.events = 0
        self.on_block = None    # called after each progress block
        # called at each progress block with the frames met since the
        # last (a list): the symbols can be looked up while the reader
        # still reads (symbolize.Prefetch)
        self.on_frames = None
        self._fresh = []

    def feed(self, f):
        """Reads blocks from the binary file f until its end."""
        read = f.read
        while True:
            head = read(8)
            if not head:
                break
            if len(head) < 8:
                raise StreamError("cut short in a block header")
            kind, n = BLOCK.unpack(head)
            payload = read(n)
            if len(payload) < n:
                raise StreamError("cut short in a block")
            if kind == B_STACK:
                self.stack(payload)
            elif kind == B_FRAME:
                self.frame(payload)
            elif kind == B_STRING:
                sid = struct.unpack_from("<I", payload)[0]
                self.strings[sid] = payload[4:].decode("utf-8",
                                                       "surrogateescape")
            elif kind == B_PROGRESS:
                self.events = struct.unpack_from("<Q", payload)[0]
                if self.on_block is not None:
                    self.on_block()
                if self.on_frames is not None and self._fresh:
                    fresh, self._fresh = self._fresh, []
                    self.on_frames(fresh)
            elif kind == B_TALLY:
                self.tally_lines += payload.decode("ascii").splitlines()
            elif kind == B_NOTE:
                self.note(payload)
            else:
                raise StreamError("unknown block type %d" % kind)

    def frame(self, payload):
        """A raw frame: parse.raw_frames's RawFrame of perf's entry
        (addr: perf's sym.start + sym_off; a pc without a symbol in a
        file the reader could read has its address in the file, and no
        sym; only a pc in no file has the ip alone)."""
        fid, dso, sym, has_addr, addr, off, ip = FRAME.unpack(payload)
        dso = self.strings[dso]
        raw = self.frames[fid] = parse.RawFrame(
            dso, addr, self.strings[sym], off if sym else None,
            None) if has_addr else \
            parse.RawFrame(dso, None, None, None, ip)
        if self.on_frames is not None:
            self._fresh.append(raw)

    def stack(self, payload):
        sid, n = struct.unpack_from("<II", payload)
        ids = struct.unpack_from("<%dI" % n, payload, 8)
        frames = self.frames
        self.stacks[sid] = tuple([frames[i] for i in ids])

    def note(self, payload):
        for line in payload.decode("utf-8", "replace").splitlines():
            key, _, value = line.partition(" ")
            try:
                self.notes[key] = int(value)
            except ValueError:
                self.notes[key] = value


def _ints(fields):
    return [int(x) for x in fields]


def _name(text):
    """A guest location's name as tally.c writes it: percent-encoded
    bytes, "%" alone for "", "-" for none."""
    if text == "-":
        return None
    if text == "%":
        return ""
    return urllib.parse.unquote_to_bytes(text).decode("utf-8",
                                                      "surrogateescape")


def fill_tally(tally, lines, stacks, log_file):
    """Puts the tally's lines (reader/tally.c documents them) into tally,
    its keys' frames from stacks ({raw stack id: tuple of RawFrame}) and
    its event log from log_file (the file the reader wrote it to)."""
    keys, chunks = [], []
    events = first = last = 0
    swept = None
    for line in lines:
        f = line.split()
        what = f[0]
        if what == "sweep":   # the sweep run in the reader: its answer
            if swept is None:
                raise StreamError("a sweep line before 'swept'")
            swept.append(line[6:])
        elif what == "key":
            stack, tag, guest = _ints(f[1:4])
            keys.append((parse.with_guest(stacks[stack], guest), tag))
        elif what == "exact":
            k, count, nbytes = _ints(f[1:4])
            tally.stacks[keys[k]] = ExactEntry(count, nbytes)
        elif what == "sampled":
            k = int(f[1])
            tally.sampled[keys[k]] = SampledEntry(
                float(f[2]), int(f[3]), float(f[4]), int(f[5]))
        elif what == "chunk":
            chunks.append((int(f[1]), _ints(f[2:10])))
        elif what == "received":
            tally.received[int(f[1])][f[2]] += int(f[3])
        elif what == "fired":
            tally.fired[int(f[1])] = _ints(f[2:])
        elif what == "thread":
            tid = int(f[1])
            tally._last_time[tid] = int(f[2])
            if f[3] != "-":
                tally._sample_phase[tid] = int(f[3])
            if len(f) > 4:
                tally._first_sample_phase[tid] = tuple(_ints(f[4:7]))
        elif what == "events":
            tally.events[f[1]] += int(f[2])
        elif what == "duplicates":
            tally.duplicate_kinds[f[1]] += int(f[2])
        elif what == "rate":
            tally.sample_rates[None if f[1] == "-" else int(f[1])] += \
                int(f[2])
        elif what == "guest":
            tally.guests[int(f[1])] = (int(f[2]), int(f[3]), _name(f[4]),
                                       _name(f[5]))
        elif what == "frees":
            tally.frees = _ints(f[1:3])
        elif what == "phases_from_samples":
            tally.phases_from_samples = f[1] == "1"
        elif what == "log":
            events, first, last = _ints(f[1:4])
        elif what == "swept":
            swept = []
        elif what in ("malformed", "filtered", "no_callchain", "padding",
                      "weight_gcd"):
            setattr(tally, what, int(f[1]))
        else:
            raise StreamError("unknown tally line %r" % what)
    if tally.log is not None:
        tally.log = EventLog.from_file(log_file, chunks, keys, events,
                                       first, last)
        if swept is not None:   # its events were swept, not kept
            tally.log.answered = swept


def run(reader, data, tally, total=0, err=None, progress=None,
        sweep=False, on_frames=None):
    """Reads the recording at data with the allocsites-read at reader into
    tally; returns a Result (read_errors: what the reader said went
    wrong, one line each). total: the samples the scan counted, for the
    progress line on a terminal. sweep: the reader runs the liveness
    sweep itself (--sweep: exact mode, the timeline's origin only), on
    the event log in memory, and its answer is the log's (answered),
    its events not kept; a recording the reader cannot sweep so (sampled
    mode) has its log as without. on_frames: Stream.on_frames. Raises
    interrupts.Interrupted on SIGINT, SIGTERM or SIGHUP, after stopping
    the reader."""
    import signal
    from .. import interrupts
    from .progress import Progress, progress_text
    progress = progress or Progress(err or sys.stderr)
    stream = Stream()
    stream.on_frames = on_frames
    if progress.enabled and total:
        stream.on_block = lambda: progress.show(
            progress_text(stream.events, total))
    argv = [reader, "--min-size", str(tally.min_size), data]
    log_file = None
    if tally.log is not None:
        # The event log goes to a file as the reader writes it, in the
        # log's spill format (eventlog.py): the report's memory is then
        # the live allocations and the distinct stacks, not the
        # recording's length. Unlinked at once: nothing is left behind.
        try:
            fd, path = tempfile.mkstemp(prefix="allocsites-log-")
            os.unlink(path)
        except OSError as e:
            raise RuntimeError("cannot make a temporary file for the event "
                               "log (TMPDIR): %s" % e)
        log_file = os.fdopen(fd, "w+b")
        argv[1:1] = ["--log-fd", str(fd)] + (["--sweep"] if sweep else [])
    read_errors = []
    saved = {}
    proc = None
    try:
        for sig in interrupts.STOP_SIGNALS:
            saved[sig] = signal.signal(sig, interrupts.raise_interrupted)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, bufsize=1 << 20,
                                env=child_env(),
                                pass_fds=(log_file.fileno(),) if log_file
                                else ())
        try:
            stream.feed(proc.stdout)
            fill_tally(tally, stream.tally_lines, stream.stacks, log_file)
        except (StreamError, ValueError, IndexError, KeyError) as e:
            read_errors.append("allocsites-read: its output %s" % e)
        proc.stdout.close()
        errors = proc.stderr.read().decode("utf-8", "replace")
        status = proc.wait()
    except OSError as e:
        raise RuntimeError("cannot run %s: %s" % (reader, e))
    except BaseException:
        if log_file is not None:
            log_file.close()
        raise
    finally:
        for sig in saved:
            signal.signal(sig, signal.SIG_IGN)
        progress.clear()
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream_ in (proc.stdout, proc.stderr) if proc else ():
            stream_.close()
        for sig, old in saved.items():
            signal.signal(sig, old)
    for line in errors.splitlines():
        if line.strip():
            read_errors.append(line.strip())
    if status < 0:
        read_errors.append("allocsites-read was killed by signal %d"
                           % -status)
    elif status > 0 and not errors.strip():
        read_errors.append("allocsites-read exited with status %d" % status)
    return Result(tally, 1, 0, False, read_errors, [], stream.notes)
