"""RawFrame -> source frames (function, file, line), inlines expanded.

One process per DSO for all of its addresses, never one per frame:
`allocsites-read --lines DSO` (scripts/reader/lines.c: libdw, the library
that unwound the stacks, so that symbols are read by one implementation;
its answers are addr2line -f -i -a -C's format), or binutils' addr2line
where the reader is not built. Results are cached per (dso, address) for
the life of the Symbolizer. File names are printed as DWARF records them
(directory + name), not perf's basename.

A frame that cannot be resolved degrades, never raises:
  - no debug line info: function = "symbol+0xoffset" (one per call
    instruction, so distinct call sites stay distinct), file = the DSO;
  - no symbol there:    function = "<dso basename>+0x<address>", its
    link-time address (what objdump and addr2line -e DSO take), when the
    reader could read the file; file = the DSO;
  - not in a file read: function = "[unknown] <dso basename>+0x<ip>" with
    the run-time address (differs between runs: ASLR), file = the DSO;
  - JIT code (perf's /tmp/perf-PID.map): "name+0xoffset" from that
    file (the reader reads it, as perf does), else as above.
Each degraded DSO is named once in `warnings`; "no symbols" only for a
DSO none of whose frames has one (a symbol-less stretch of a file that
has symbols, a trampoline or a gap, is not the file's lack).
"""

import collections
import os
import re
import subprocess
import threading

from ..read import elf as elfmod
from ..textio import printable
from ..read import parse

# One source-level frame. line 0 = unknown. inlined: True when this frame
# was inlined into the next one (same machine frame).
Frame = collections.namedtuple("Frame", "function file line dso inlined")

_DISCRIMINATOR_RE = re.compile(r"\s*\(discriminator \d+\)$")
# The offset of a frame named "symbol+0xoffset" (_fallback: no line info)
_OFFSET_RE = re.compile(r"\+0x[0-9a-f]+$")


def bare_function(frame):
    """A frame's function without the "+0xoffset" a frame without line
    info is named with (_fallback): the symbol the frame is in."""
    return _OFFSET_RE.sub("", frame.function or "")


def parse_addr2line(text):
    """addr2line -f -i -a output -> {address: [(function, file, line)]}.

    Each answer starts with its address line ("0x..."), then pairs of
    lines: function, "file:line", innermost inline first."""
    result = {}
    current = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("0x") and _is_hex(line):
            current = result.setdefault(int(line, 16), [])
            i += 1
            continue
        if current is None or i + 1 >= len(lines):
            i += 1
            continue
        function, location = line, lines[i + 1]
        i += 2
        location = _DISCRIMINATOR_RE.sub("", location)
        path, _, lineno = location.rpartition(":")
        try:
            lineno = int(lineno)
        except ValueError:
            lineno = 0
        if path in ("??", ""):
            path = None
        if function == "??":
            function = None
        current.append((function, path, lineno))
    return result


def _is_hex(line):
    try:
        int(line, 16)
        return True
    except ValueError:
        return False


class Addr2lineMissing(Exception):
    """addr2line is not on PATH (Debian: binutils)."""


def lines_command(path):
    """The command that answers for path's addresses: the built reader
    (allocsites-read --lines), else binutils' addr2line."""
    from ..read import perfdata
    reader = perfdata.scan_program()
    if reader is not None:
        return [reader, "--lines", path]
    return ["addr2line", "-f", "-i", "-a", "-C", "-e", path]


def run_addr2line(path, addresses, timeout=600, command=lines_command):
    """Ask about `addresses` of the ELF file `path` in one run (command:
    lines_command). Raises Addr2lineMissing when there is no addr2line
    to ask."""
    if not addresses:
        return {}
    query = "".join("0x%x\n" % a for a in addresses).encode()
    try:
        proc = subprocess.run(command(path),
                              input=query, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, timeout=timeout,
                              check=False)
    except FileNotFoundError:
        raise Addr2lineMissing()
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_addr2line(proc.stdout.decode("utf-8", "replace"))


def _link_addresses(image, raws):
    """{raw: its address as the ELF file image links it} for RawFrames of
    that file."""
    return {raw: elfmod.to_link_address(image, raw.addr) for raw in raws}


class Symbolizer:
    """Resolves RawFrames in batches; remembers what it resolved."""

    def __init__(self, addr2line=run_addr2line, open_elf=elfmod.open_elf):
        self._addr2line = addr2line
        self._open_elf = open_elf
        self._cache = {}       # RawFrame -> tuple of Frame, innermost first
        self._elves = {}       # dso path -> ElfFile or None
        # addr2line's answers asked for so far (prefetch, then resolve):
        # {dso: {link address: answer}}, {dso: set of link addresses
        # asked}, and whether there was no addr2line to ask
        self._answers = {}
        self._asked = {}
        self._no_addr2line = False
        self._messages = []    # (key, message), in the order warned
        self._warned = set()
        self._named = set()    # DSOs with a frame that has a symbol

    @property
    def warnings(self):
        """The warnings so far, in order; "no symbols for DSO" only while
        no frame of DSO has had one, and then in place of "no debug line
        info in DSO"."""
        nosym = {k[1] for k, _ in self._messages
                 if k[0] == "nosym" and k[1] not in self._named}
        # a file without symbols has no lines either: one warning
        return [m for k, m in self._messages
                if not (k[0] == "nosym" and k[1] in self._named) and
                not (k[0] == "nodebug" and k[1] in nosym)]

    def elf(self, dso):
        if dso not in self._elves:
            self._elves[dso] = self._open_elf(dso)
        return self._elves[dso]

    def warn(self, key, message):
        """Adds message to warnings, once per key."""
        if key not in self._warned:
            self._warned.add(key)
            self._messages.append((key, message))

    def resolve(self, raw_frames):
        """Resolve every RawFrame not yet cached (one addr2line per DSO)."""
        todo = collections.defaultdict(set)
        for raw in raw_frames:
            if raw in self._cache:
                continue
            if raw.dso in parse.END_DSOS:
                self._cache[raw] = ()   # a stack's end, not a frame
                continue
            if parse.is_jit_map(raw.dso):
                # JIT code: named from perf's map file or not at all,
                # the run-time address either way; no ELF, no lines
                self._cache[raw] = (self._jit_frame(raw),)
                if raw.sym:
                    self._named.add(raw.dso)
                else:
                    self.warn(("nosym", raw.dso), "no names for JIT code: "
                              "%s is missing or names none of its "
                              "addresses; frames shown as addresses"
                              % raw.dso)
                continue
            if raw.addr is None:
                self._cache[raw] = (self._fallback(raw),)
                self.warn(("nosym", raw.dso), "no symbols for %s: frames "
                           "shown as addresses" % raw.dso)
                continue
            if raw.sym:
                self._named.add(raw.dso)
            else:
                # an address in the file, no symbol: said of the file
                # if none of its frames has one (a stripped binary)
                self.warn(("nosym", raw.dso), "no symbols for %s: frames "
                          "shown as addresses" % raw.dso)
            todo[raw.dso].add(raw)
        asked = self._ask_all(todo)
        for dso, raws in todo.items():
            image, link, found = asked[dso]
            answers = {}
            if image is None:
                self.warn(("noelf", dso), "cannot read %s: frames shown as "
                           "function+offset" % dso)
            else:
                if found is None:
                    self.warn(("noaddr2line",), "addr2line is not "
                               "installed (Debian: binutils): frames shown "
                               "as function+offset")
                answers = {raw: (found or {}).get(link[raw]) for raw in raws}
            unresolved = 0
            for raw in raws:
                frames = self._frames(raw, answers.get(raw))
                if frames is None:
                    unresolved += 1
                    frames = (self._fallback(raw, link.get(raw)),)
                self._cache[raw] = frames
            # Some frames never have lines (_start, asm): warn only when a
            # DSO has none at all, i.e. no debug info.
            if image is not None and unresolved == len(raws) and \
                    found is not None:
                self.warn(("nodebug", dso), "no debug line info in %s: "
                           "frames shown as function+offset" % dso)

    def _ask_all(self, todo):
        """{dso: (ElfFile or None, {raw: link address}, addr2line's
        answer or None when there is none to ask)} for todo's ({dso: set
        of RawFrame}) DSOs. The answers come from other processes
        (allocsites-read --lines), asked from as many threads as there
        are CPUs, so that they run side by side: the program's and
        libc's took 0.06 and 0.13 s one after the other in minicc's 10^7
        report (by hand). An exception in a thread is raised here."""
        asked = {}
        for dso in todo:   # the ELF files opened here, in order
            self.elf(dso)
        work = list(todo.items())
        lock = threading.Lock()

        def ask(dso, raws):
            image = self.elf(dso)
            link, found = {}, {}
            if image is not None:
                link = _link_addresses(image, raws)
                try:
                    found = self._lines(dso, set(link.values()))
                except Addr2lineMissing:
                    found = None
            return image, link, found

        def worker():
            while True:
                with lock:
                    if not work:
                        return
                    dso, raws = work.pop(0)
                try:
                    asked[dso] = ask(dso, raws)
                except BaseException as e:   # noqa: BLE001 - raised below
                    asked[dso] = e

        threads = [threading.Thread(target=worker, daemon=True)
                   for _ in range(min(len(work), os.cpu_count() or 1) - 1)]
        for t in threads:
            t.start()
        worker()
        for t in threads:
            t.join()
        for dso in todo:
            if isinstance(asked[dso], BaseException):
                raise asked[dso]
        return asked

    def _lines(self, dso, addresses):
        """addr2line's answers for the link addresses of dso: those
        prefetch asked for already, and the others asked now. Raises
        Addr2lineMissing when there is no addr2line to ask."""
        if self._no_addr2line:
            raise Addr2lineMissing()
        asked = self._asked.setdefault(dso, set())
        answers = self._answers.setdefault(dso, {})
        missing = sorted(a for a in addresses if a not in asked)
        if missing:
            try:
                got = self._addr2line(dso, missing)
            except Addr2lineMissing:
                self._no_addr2line = True
                raise
            answers.update(got)
            if got:   # nothing: it failed (run_addr2line); asked again
                asked.update(missing)
        return {a: answers[a] for a in addresses if a in answers}

    def prefetch(self, raw_frames):
        """Asks addr2line about raw_frames' addresses ahead of resolve
        (Prefetch: while the reader still reads; the answers were most
        of resolve's time). Only the answers are kept: resolve still
        makes each frame and its warnings, from them."""
        todo = collections.defaultdict(set)
        for raw in raw_frames:
            if raw.addr is not None and raw not in self._cache:
                todo[raw.dso].add(raw)
        for dso, raws in todo.items():
            image = self.elf(dso)
            if image is None:
                continue
            try:
                self._lines(dso, set(_link_addresses(image,
                                                     raws).values()))
            except Addr2lineMissing:
                return

    def frames(self, raw):
        """The source frames of one RawFrame, innermost first."""
        if raw not in self._cache:
            self.resolve([raw])
        return self._cache[raw]

    def expand(self, raws):
        """The source frames of a stack of RawFrames, innermost first,
        inlines expanded: frames() of each, in one list (fold calls it
        for every distinct stack, a method call a frame was a quarter
        of fold's time)."""
        cache = self._cache
        try:
            return [f for raw in raws for f in cache[raw]]
        except KeyError:
            return [f for raw in raws for f in self.frames(raw)]

    @staticmethod
    def _frames(raw, answer):
        if not answer or answer[0][1] is None:
            return None
        out = []
        for i, (function, path, line) in enumerate(answer):
            # a binary's strings: a control character in one would split
            # the table's row and the folded line (textio.printable)
            name = printable(function or raw.sym or "[unknown]")
            out.append(Frame(name, printable(path) if path else raw.dso,
                             line if path else 0, raw.dso,
                             i < len(answer) - 1))
        return tuple(out)

    @staticmethod
    def _jit_frame(raw):
        if raw.sym:
            name = "%s+0x%x" % (raw.sym, raw.off or 0)
        else:
            # the same from both readers: the native one gives the pc as
            # addr, perf script's entry as ip
            name = "[unknown] %s+0x%x" % (
                os.path.basename(raw.dso),
                raw.addr if raw.addr is not None else raw.ip or 0)
        return Frame(name, raw.dso, 0, raw.dso, False)

    @staticmethod
    def _fallback(raw, link=None):
        """The frame of raw without an answer from its lines; link: its
        link-time address, where the file was read."""
        if raw.addr is None:
            return Frame("[unknown] %s+0x%x" % (os.path.basename(raw.dso),
                                                raw.ip or 0),
                         raw.dso, 0, raw.dso, False)
        if raw.sym:
            return Frame("%s+0x%x" % (printable(raw.sym), raw.off or 0),
                         raw.dso, 0, raw.dso, False)
        return Frame("%s+0x%x" % (os.path.basename(raw.dso),
                                  raw.addr if link is None else link),
                     raw.dso, 0, raw.dso, False)


class Prefetch:
    """Symbolizer.prefetch in a thread of its own, on the raw frames the
    reader hands over as it meets them (add), while the reader still
    reads: the reader's threads leave part of the machine idle, and
    addr2line's answers were a third of the report's time after the
    reader (0.24 of 0.75 s on minicc's 10^7 fp recording, by hand).
    Frames that arrive while addr2line runs are asked about together in
    the next round, at most one round every `interval` seconds (each
    round starts a process per DSO). warm: called first in the thread
    (the report's later modules imported meanwhile). Best effort: stop
    ends it, and resolve asks for whatever it did not."""

    def __init__(self, symbolizer, warm=None, interval=0.5):
        self._symbolizer = symbolizer
        self._warm = warm
        self._interval = interval
        self._pending = []
        self._stopped = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="allocsites-prefetch")

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, exc_type, *exc):
        # leaving on an exception (an interrupt): no wait for a round
        # under way; the thread is a daemon, its addr2line ends alone
        self.stop(wait=exc_type is None)

    def add(self, raw_frames):
        """Frames met since the last add (a list, handed over)."""
        with self._cond:
            self._pending.extend(raw_frames)
            self._cond.notify()

    def stop(self, wait=True):
        """Ends the thread; wait: for the round under way, if any."""
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if wait and self._thread.is_alive():
            self._thread.join()

    def _run(self):
        import time
        try:
            if self._warm is not None:
                self._warm()
            while True:
                with self._cond:
                    while not self._pending and not self._stopped:
                        self._cond.wait()
                    if self._stopped:
                        return
                    batch, self._pending = self._pending, []
                started = time.monotonic()
                self._symbolizer.prefetch(batch)
                with self._cond:   # rounds no closer than interval
                    left = self._interval - (time.monotonic() - started)
                    if left > 0 and not self._stopped:
                        self._cond.wait(left)
        except Exception:   # noqa: BLE001 - resolve asks again
            return
