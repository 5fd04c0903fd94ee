"""Shared builders for the allocsites unit tests (stdlib only).

- perf-shaped input: callchain entries, event field dicts, sample dicts;
- parse.Event / RawFrame / symbolize.Frame builders;
- StubSymbolizer (RawFrame -> frames table) for fold tests, FakeAddr2line
  and FakeElf to drive the real Symbolizer without binutils;
- a tiny C program compiled with gcc at test time (CProgram), plus helpers
  that ask binutils (readelf, nm, objdump) for the independent truth.
"""

import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import re
import shutil
import struct
import subprocess
import tempfile
import unittest

from allocsites_lib.read.parse import END_DSOS, Event, RawFrame, end_frame
from allocsites_lib.analyze.symbolize import Frame

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
INCLUDE = os.path.join(REPO, "include")

APP = "/usr/bin/app"


# ---------------------------------------------------------------- perf input

def entry(ip, name=None, start=None, off=None, dso=APP):
    """One perf callchain entry dict, shaped like perf 6.1's Python API.

    name/start: the 'sym' dict (omitted when both are None); off: sym_off;
    dso=None omits the key."""
    e = {"ip": ip}
    if name is not None or start is not None:
        sym = {"name": name}
        if start is not None:
            sym["start"] = start
            sym["end"] = start + 0x100
        e["sym"] = sym
    if off is not None:
        e["sym_off"] = off
    if dso is not None:
        e["dso"] = dso
    return e


def fields(ptr=0x5000, size=16, tag=1, weight=None, pid=42, callchain=None):
    """perf's event field dict: arg1=ptr, arg2=size, arg3=tag, arg4=weight.
    An argument given as None is left out (perf dropped it)."""
    f = {"common_pid": pid}
    for i, value in enumerate((ptr, size, tag, weight), 1):
        if value is not None:
            f["arg%d" % i] = value
    if callchain is not None:
        f["common_callchain"] = callchain
    return f


def sample(callchain, pid=42, tid=43):
    """perf_sample_dict with a callchain."""
    return {"sample": {"pid": pid, "tid": tid, "cpu": 0}, "callchain": callchain}


# ---------------------------------------------------------------- events

def raw(addr, sym="f", dso=APP, off=0):
    return RawFrame(dso, addr, sym, off, None)


def alloc(frames, size, tag=0, pid=1):
    return Event("alloc", pid, pid, size, tag, None, tuple(frames), 0x1000)


def free(size, tag=0):
    return Event("free", 1, 1, size, tag, None, (), 0x1000)


def exit_event(allocs, frees=0, samples=0, pid=1):
    """rt:exit of process pid: what it fired while recorded."""
    return Event("exit", pid, pid, 0, 0, None, (), None, None,
                 (allocs, frees, samples))


def fr(function, line=0, file="/src/app.c", inlined=False, dso=APP):
    """A source Frame."""
    return Frame(function, file, line, dso, inlined)


class StubSymbolizer:
    """Symbolizer stand-in for fold: each RawFrame made by .raw() resolves
    to the Frames given, innermost first."""

    def __init__(self):
        # a stack's end markers have no frames, as in Symbolizer
        self.table = {end_frame(dso): () for dso in END_DSOS}
        self.resolve_calls = []
        self.warnings = []
        self._next = 0x1000

    def raw(self, *frames, dso=APP):
        r = RawFrame(dso, self._next, frames[-1].function, 0, None)
        self._next += 0x10
        self.table[r] = tuple(frames)
        return r

    def resolve(self, raws):
        self.resolve_calls.append(set(raws))

    def frames(self, r):
        return self.table[r]

    def expand(self, raws):
        return [f for r in raws for f in self.table[r]]

    def elf(self, dso):
        return None


# ---------------------------------------------------------------- fake ELF / addr2line

def rt_tags_blob(pairs):
    """.rt_tags bytes for [(tag, name)], laid out as RT_TAG_NAME does."""
    out = b""
    for tag, name in pairs:
        data = name.encode() + b"\0"
        out += struct.pack("<II", tag, len(data)) + data
        out += b"\0" * (-len(data) % 4)
    return out


class FakeElf:
    """What symbolize/pipeline use of an ElfFile: e_type, segments,
    section(name)."""

    def __init__(self, e_type=3, segments=(), blobs=None):
        self.e_type = e_type
        self.segments = list(segments)
        self.blobs = dict(blobs or {})

    def section(self, name):
        return self.blobs.get(name)

    @property
    def sections(self):   # {name: blob}, as elf.build_id reads them
        return self.blobs


class FakeAddr2line:
    """Callable with run_addr2line's signature; records every call.

    answers: {(path, address): [(function, file, line), ...]}"""

    def __init__(self, answers=None):
        self.answers = dict(answers or {})
        self.calls = []

    def __call__(self, path, addresses):
        self.calls.append((path, list(addresses)))
        return {a: list(self.answers[(path, a)]) for a in addresses
                if (path, a) in self.answers}


def fake_open_elf(elves):
    """open_elf stand-in: {path: FakeElf}; other paths are unreadable."""
    opened = []

    def open_elf(path):
        opened.append(path)
        return elves.get(path)
    open_elf.opened = opened
    return open_elf


# ---------------------------------------------------------------- real binaries

def have(*tools):
    return all(shutil.which(t) for t in tools)


def run(argv, data=None):
    return subprocess.run(argv, input=data, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, check=True).stdout.decode()


def line_of(source, marker):
    """1-based number of the only line of `source` containing `marker`."""
    found = [i for i, text in enumerate(source.splitlines(), 1) if marker in text]
    if len(found) != 1:
        raise AssertionError("marker %r found %d times" % (marker, len(found)))
    return found[0]


PROGRAM = r"""
#include <stdlib.h>
#include "rt_probes.h"

RT_TAG_NAME(1, "ast");
RT_TAG_NAME(2, "tokens");
RT_TAG_NAME(7, "a_rather_long_tag_name_that_needs_padding_0123456789");
RT_TAG_NAME(4294967295u, "max");

volatile int sink;

__attribute__((noinline, noclone)) void *rt_alloc(size_t n, unsigned tag)
{
    void *p = malloc(n);
    RT_ALLOC(p, n, tag); /* PROBE_LINE */
    sink++;
    return p;
}

static inline __attribute__((always_inline)) void *helper(size_t n)
{
    return rt_alloc(n * 2, 2); /* HELPER_CALL */
}

__attribute__((noinline, noclone)) void *caller(size_t n)
{
    void *p = helper(n + 1); /* CALLER_CALL */
    sink++;
    return p;
}

__attribute__((noinline, noclone)) void *direct(size_t n)
{
    void *p = rt_alloc(n, 1); /* DIRECT_CALL */
    sink++;
    return p;
}

int main(int argc, char **argv)
{
    void *a, *b;
    (void)argv;
    a = caller((size_t)argc); /* MAIN_CALLS_CALLER */
    b = direct((size_t)argc); /* MAIN_CALLS_DIRECT */
    free(a);
    free(b);
    return 0;
}
"""

TAGS = {1: "ast", 2: "tokens",
        7: "a_rather_long_tag_name_that_needs_padding_0123456789",
        4294967295: "max"}

PLAIN_PROGRAM = r"""
int main(void) { return 0; }
"""


class CProgram:
    """PROGRAM (or another source) compiled into a temporary directory.

    Attributes: dir, src, path, source; line(marker); symbols() {name:
    (value, size)} from nm; calls(function, callee) -> [address of each
    `call <callee>` instruction inside function] from objdump."""

    def __init__(self, source=PROGRAM, flags=(), debug=True, name="prog"):
        self.source = source
        self._tmp = tempfile.TemporaryDirectory(prefix="allocsites-unit-")
        self.dir = self._tmp.name
        self.src = os.path.join(self.dir, name + ".c")
        self.path = os.path.join(self.dir, name)
        with open(self.src, "w") as f:
            f.write(source)
        argv = ["gcc", "-O2"] + (["-g"] if debug else []) + \
            ["-I", INCLUDE] + list(flags) + ["-o", self.path, self.src]
        try:
            run(argv)
        except subprocess.CalledProcessError as e:
            self.cleanup()
            raise AssertionError("gcc failed: %s" % e.stderr.decode())

    def cleanup(self):
        self._tmp.cleanup()

    def line(self, marker):
        return line_of(self.source, marker)

    def symbols(self):
        out = {}
        for text in run(["nm", "-S", self.path]).splitlines():
            parts = text.split()
            if len(parts) == 4:
                out[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
        return out

    def calls(self, function, callee):
        text = run(["objdump", "-d", "--no-show-raw-insn", self.path])
        found, inside = [], False
        for line in text.splitlines():
            m = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
            if m:
                inside = m.group(1) == function
                continue
            if inside and re.search(r"\bcall\s+[0-9a-f]+ <%s>" % re.escape(callee), line):
                found.append(int(line.split(":")[0], 16))
        return found

    def load_segments(self):
        """[(offset, vaddr, filesz)] of PT_LOAD, from `readelf -lW`."""
        segs = []
        for line in run(["readelf", "-lW", self.path]).splitlines():
            parts = line.split()
            if parts and parts[0] == "LOAD":
                segs.append((int(parts[1], 16), int(parts[2], 16), int(parts[4], 16)))
        return segs

    def file_offset(self, vaddr):
        """perf's address for an ET_EXEC: the file offset of vaddr."""
        for off, va, size in self.load_segments():
            if va <= vaddr < va + size:
                return vaddr - va + off
        raise AssertionError("0x%x in no PT_LOAD" % vaddr)


def build_programs(*specs):
    """[CProgram(**spec) for spec in specs]; cleans up if any fails."""
    built = []
    try:
        for spec in specs:
            built.append(CProgram(**spec))
    except BaseException:
        for prog in built:
            prog.cleanup()
        raise
    return built


def require_toolchain():
    """Raise SkipTest (from setUpClass too) when binutils/gcc are missing."""
    tools = ("gcc", "addr2line", "readelf", "nm", "objdump")
    if not have(*tools):
        raise unittest.SkipTest("needs %s" % ", ".join(tools))
