"""The report's default reader: runs allocsites-read, feeds the hot path.

The report's default reader: allocsites-read (scripts/reader/, C) reads
the recording and unwinds its stacks; this module turns its stream into
the same Tally the perf script path builds (allocsites.py), through the
same hot path (hotpath.handler), so every output is the one perf script
gives.

Why: perf script 6.1 keeps every decompressed record of a -z recording
in memory until it exits (90 GB at 10^7 allocations) and unwinds each
sample through a fresh libdw or libunwind session, then hands it to
Python through a dict per frame. allocsites-read streams the file
(memory: the distinct stacks, the maps, two of perf's rounds), unwinds
with one libdw session per process, and sends each distinct stack once;
an event is a fixed record of EVENT bytes (reader/emit.c documents the
stream).

Each event reaches the hot path as perf script would hand it over: the
plain event's records go to handle.mail as the dlfilter's do, every
other event to handle() with the field dict perf builds (common_pid,
common_s, common_ns, common_callchain and the tracepoint's fields).
"""

import collections
import os
import struct
import subprocess
import sys

from . import hotpath, parse

B_EVENT_DEF, B_STRING, B_FRAME, B_STACK, B_EVENTS, B_NOTE = range(1, 7)
MAX_FIELDS = 12
EVENT = struct.Struct("<IIIIQ%dQ" % MAX_FIELDS)
BLOCK = struct.Struct("<II")
FRAME = struct.Struct("<IIIIQQQ")
_SIGN = 1 << 63
_WRAP = 1 << 64
PLAIN_FIELDS = ("kind", "a", "b", "c", "d", "e", "f", "g", "h")
# Plain events handed to handle.mail at once, at most: a program that
# frees everything at its end sends millions in a row.
MAIL_BATCH = 4096

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


def reader_path(entry_script, build=None):
    """The built allocsites-read (built_program), for the entry script."""
    return built_program("allocsites-read",
                         os.path.dirname(os.path.abspath(entry_script)), build)


class EventDef:
    """One event of the recording: perf script's handler name, its field
    names, which of them are signed, and where the plain event's kind and
    arguments are (None for any other event)."""

    def __init__(self, payload):
        self.id = struct.unpack_from("<I", payload)[0]
        parts = payload[4:].split(b"\0")
        name = parts[0].decode("utf-8", "surrogateescape")
        # perf script names the handler sdt_rt__alloc_1 for sdt_rt:alloc_1
        self.name = name.replace(":", "__")
        self.fields = []
        self.signed = []
        # after the name: field name NUL, one signed byte, field name NUL..
        rest = payload[4 + len(parts[0]) + 1:]
        pos = 0
        while pos < len(rest):
            end = rest.index(b"\0", pos)
            self.fields.append(rest[pos:end].decode("ascii", "replace"))
            self.signed.append(rest[end + 1] != 0)
            pos = end + 2
        self.any_signed = any(self.signed)
        kind = parse.event_kind(self.name)
        self.plain_at = None
        if kind == "plain" and all(f in self.fields for f in PLAIN_FIELDS):
            self.plain_at = [self.fields.index(f) for f in PLAIN_FIELDS]
        # an alloc with its three arguments: handle.alloc takes it
        # (the masks there make a signed field's value perf's)
        self.alloc_at = None
        if kind == "alloc" and all(f in self.fields
                                   for f in ("arg1", "arg2", "arg3")):
            self.alloc_at = [5 + self.fields.index(f)
                             for f in ("arg1", "arg2", "arg3")]

    def values(self, rec):
        vals = rec[5:5 + len(self.fields)]
        if self.any_signed:
            vals = tuple(v - _WRAP if s and v >= _SIGN else v
                         for v, s in zip(vals, self.signed))
        return vals


class Stream:
    """Reads allocsites-read's blocks and feeds the events to handle."""

    def __init__(self, handle, pids):
        self.handle = handle
        self.pids = pids
        self.defs = {}
        self.strings = {0: None}
        self.frames = {}
        self.chains = {0: []}
        self.notes = {}
        self.handler_errors = 0
        self.events = 0
        self.mail = []
        self.on_block = None    # called after each block of events
        self.spill = None       # the event log's maybe_spill

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
            if kind == B_EVENTS:
                self.events_block(payload)
            elif kind == B_STACK:
                self.stack(payload)
            elif kind == B_FRAME:
                self.frame(payload)
            elif kind == B_STRING:
                sid = struct.unpack_from("<I", payload)[0]
                self.strings[sid] = payload[4:].decode("utf-8",
                                                       "surrogateescape")
            elif kind == B_EVENT_DEF:
                d = EventDef(payload)
                self.defs[d.id] = d
            elif kind == B_NOTE:
                self.note(payload)
            else:
                raise StreamError("unknown block type %d" % kind)
        self.flush_mail()

    def frame(self, payload):
        fid, dso, sym, has_addr, addr, off, ip = FRAME.unpack(payload)
        entry = {"ip": ip, "dso": self.strings[dso]}
        if has_addr:
            # perf's entry: sym {start, name} and sym_off; the frame's
            # address is start + sym_off (parse.raw_frames)
            entry["sym"] = {"start": addr - off, "end": addr - off,
                            "name": self.strings[sym]}
            entry["sym_off"] = off
        self.frames[fid] = entry

    def stack(self, payload):
        sid, n = struct.unpack_from("<II", payload)
        ids = struct.unpack_from("<%dI" % n, payload, 8)
        frames = self.frames
        self.chains[sid] = [frames[i] for i in ids]

    def note(self, payload):
        for line in payload.decode("utf-8", "replace").splitlines():
            key, _, value = line.partition(" ")
            try:
                self.notes[key] = int(value)
            except ValueError:
                self.notes[key] = value

    def flush_mail(self):
        if self.mail:
            batch, self.mail = self.mail, []
            try:
                self.handle.mail(batch, self.plain_name)
            except Exception:  # noqa: BLE001 - counted, as allocsites.py
                self.handler_errors += 1

    def events_block(self, payload):
        defs, chains, pids = self.defs, self.chains, self.pids
        handle, mail = self.handle, self.mail
        alloc = handle.alloc
        count = 0
        for rec in EVENT.iter_unpack(payload):
            count += 1
            d = defs[rec[0]]
            tid, time = rec[3], rec[4]
            if tid not in pids:
                pids[tid] = rec[2]
            at = d.plain_at
            if at is not None and not d.any_signed:
                if not mail:
                    self.plain_name = d.name
                elif d.name != self.plain_name:
                    self.flush_mail()
                    mail = self.mail
                    self.plain_name = d.name
                v = rec[5:]
                mail.append((time, tid) + tuple(v[i] for i in at))
                if len(mail) >= MAIL_BATCH:   # a long run of frees
                    self.flush_mail()
                    mail = self.mail
                continue
            if mail:
                self.flush_mail()
                mail = self.mail
            at = d.alloc_at
            if at is not None:
                try:
                    alloc(rec[1], chains[rec[1]], tid, time, rec[at[0]],
                          rec[at[1]], rec[at[2]])
                except Exception:  # noqa: BLE001 - counted, as allocsites.py
                    self.handler_errors += 1
                continue
            fields = dict(zip(d.fields, d.values(rec)))
            fields["common_pid"] = tid
            fields["common_s"] = time // 1000000000
            fields["common_ns"] = time % 1000000000
            fields["common_callchain"] = chains[rec[1]]
            try:
                handle(d.name, fields)
            except Exception:  # noqa: BLE001 - counted, as allocsites.py
                self.handler_errors += 1
        self.events += count
        if self.spill is not None:
            self.spill()
        if self.on_block is not None:
            self.on_block()


def run(reader, data, tally, total=0, err=None, progress=None):
    """Reads the recording at data with the allocsites-read at reader into
    tally; returns a Result (read_errors: what the reader said went
    wrong, one line each). total: the samples the scan counted, for the
    progress line on a terminal. Raises interrupts.Interrupted on SIGINT,
    SIGTERM or SIGHUP, after stopping the reader."""
    import signal
    from . import interrupts
    from .progress import Progress, progress_text
    progress = progress or Progress(err or sys.stderr)
    # {thread: process}, filled as threads appear; the hot path reads it
    # (Reader makes its own dict for an empty one, so take that one).
    reader_ = parse.Reader(False, None)
    pids = reader_.pids
    handle = hotpath.handler(reader_, tally)
    stream = Stream(handle, pids)
    if tally.log is not None:
        # The log goes to a file as it grows (eventlog.py): the report's
        # memory is then the live allocations and the distinct stacks,
        # not the recording's length.
        try:
            tally.log.spill_to()
        except OSError as e:
            raise RuntimeError("cannot make a temporary file for the event "
                               "log (TMPDIR): %s" % e)
        stream.spill = tally.log.maybe_spill
    if progress.enabled and total:
        stream.on_block = lambda: progress.show(
            progress_text(stream.events, total))
    read_errors = []
    saved = {}
    proc = None
    try:
        for sig in interrupts.STOP_SIGNALS:
            saved[sig] = signal.signal(sig, interrupts.raise_interrupted)
        proc = subprocess.Popen([reader, data], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, bufsize=1 << 20)
        try:
            stream.feed(proc.stdout)
        except StreamError as e:
            read_errors.append("allocsites-read: its output %s" % e)
        except OSError as e:   # the event log's file: a full disk
            raise RuntimeError("cannot write the event log to a temporary "
                               "file (TMPDIR): %s" % e)
        handle.flush()
        proc.stdout.close()
        errors = proc.stderr.read().decode("utf-8", "replace")
        status = proc.wait()
    except OSError as e:
        raise RuntimeError("cannot run %s: %s" % (reader, e))
    except RuntimeError:
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
    return Result(tally, 1, stream.handler_errors, False, read_errors, [],
                  stream.notes)
