"""Every output (table, stderr, JSON, CSV, folded, flame graph, pprof,
timeline) of a few hand-made recordings, byte for byte: against goldens
taken from the code before the profile document (issue 33 item 1), and,
rendered again from the saved profile document (--save-profile, then
--from), against the outputs made directly.

ALLOCSITES_REGEN_GOLDENS=1 writes the goldens again (only when an output
is meant to change)."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import hashlib
import io
import json
import tempfile

from allocsites_lib.analyze import assemble
from allocsites_lib.cli import options
from allocsites_lib.read.parse import Event, GuestFrames
from allocsites_lib.read.tally import Tally
from allocsites_lib.render import outputs

from fixtures import StubSymbolizer, fr
import test_pipeline as tp

# {case: {output: sha256 of its bytes}}: small to keep, exact to compare
GOLDENS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "profile_document_goldens.json")
REGEN = os.environ.get("ALLOCSITES_REGEN_GOLDENS") == "1"

# every file output, by the name it gets in the case's directory
FILES = (("--json", "out.json"), ("--csv", "out.csv"),
         ("--folded", "out.folded"), ("--svg", "out.svg"),
         ("--pprof", "out.pb.gz"), ("--timeline", "timeline.svg"))


def ev(kind, tid, size, tag, frames, ptr, time, weight=None, rate=None):
    return Event(kind, 1, tid, size, tag, weight, frames, ptr, time, None,
                 rate)


def timed_tally():
    """Two threads, frees, nested phases 1 and 2 (thread 2's allocations
    partly outside every phase), a leak at the end."""
    t = Tally()
    whole = (tp.PROBE, tp.PARSE, tp.MAIN10, tp.ROOT)
    cut = (tp.PROBE, tp.XMALLOC, tp.LEX, tp.MAIN12)
    t0 = 5000000000
    for kind, tid, size, tag, frames, ptr, dt in (
            ("alloc", 1, 100, 1, whole, 0x100, 0),
            ("phase_begin", 1, 0, 1, (), None, 10),
            ("alloc", 1, 1000, 1, whole, 0x200, 300000),
            ("alloc", 2, 24, 2, cut, 0x210, 310000),
            ("phase_begin", 1, 0, 2, (), None, 400000),
            ("alloc", 1, 5000, 9, whole, 0x300, 784968),
            ("alloc", 2, 48, 2, cut, 0x310, 790000),
            ("free", 1, 0, 0, (), 0x300, 900000),
            ("phase_end", 1, 0, 2, (), None, 950000),
            ("free", 2, 0, 0, (), 0x210, 1000000),
            ("phase_end", 1, 0, 1, (), None, 1100000),
            ("free", 1, 0, 0, (), 0x200, 1200000),
            ("alloc", 2, 10, 2, cut, 0x400, 1460000)):
        t.add(ev(kind, tid, size, tag, frames, ptr, t0 + dt))
    return t


def sampled_tally():
    """Sampled: R = 64, two threads, one phase, frees of sampled blocks."""
    t = Tally()
    whole = (tp.PROBE, tp.PARSE, tp.MAIN10, tp.ROOT)
    cut = (tp.PROBE, tp.XMALLOC, tp.LEX, tp.MAIN12)
    t0 = 1000
    for kind, tid, size, tag, frames, ptr, dt, weight in (
            ("sample", 1, 16, 1, whole, 0x100, 0, 64),
            ("phase_begin", 1, 0, 1, (), None, 5, None),
            ("sample", 2, 100, 2, cut, 0x200, 10, 128),
            ("sample", 1, 300, 1, whole, 0x300, 20, 320),
            ("phase_end", 1, 0, 1, (), None, 25, None),
            ("sample_free", 1, 0, 0, (), 0x300, 30, None),
            ("sample", 2, 8, 2, cut, 0x400, 40, 64)):
        t.add(ev(kind, tid, size, tag, frames, ptr, t0 + dt, weight,
                 64 if kind == "sample" else None))
    return t


def guest_case():
    """test_guest_view's host: guest locations 2 and 3, start-up
    allocations of the interpreter, an undefined location 77."""
    from test_guest_view import (CALL, DEFS, EXEC, MAIN, PCALL, PROBE,
                                 RESIZE, START)
    sym = StubSymbolizer()
    raws = {f: sym.raw(f) for f in (PROBE, RESIZE, EXEC, CALL, PCALL, MAIN,
                                    START)}
    deep = tuple(raws[f] for f in (PROBE, RESIZE, EXEC, CALL, EXEC, CALL,
                                   PCALL, MAIN, START))
    t = Tally()
    t.guests = dict(DEFS)
    for i, (size, frames) in enumerate((
            (100, GuestFrames(deep, 3)), (40, GuestFrames(deep, 2)),
            (7, tuple(raws[f] for f in (PROBE, MAIN, START))),
            (5, GuestFrames(deep, 77)))):
        t.add(ev("alloc", 1 + i % 2, size, 1, frames, i + 1, 100 + i))
    t.add(ev("free", 1, 0, 0, (), 2, 200))
    return t, sym


def inlined_case():
    """A call site inlined into its caller: two Lines in one Location."""
    sym = StubSymbolizer()
    probe = sym.raw(fr("rt_alloc", 3, "/src/rt.c"))
    inl = sym.raw(fr("get", 7, "/src/inl.h", inlined=True),
                  fr("caller", 40, "/src/use.c"))
    main = sym.raw(fr("main", 9, "/src/main.c"))
    start = sym.raw(fr("_start", 0, "/usr/bin/app"))
    t = Tally()
    for i, size in enumerate((32, 32, 4096)):
        t.add(ev("alloc", 1, size, 0, (probe, inl, main, start), i + 1,
                 10 + i))
    return t, sym


# name -> (tally and symbolizer, report options)
CASES = {
    "exact": (lambda: (tp.make_tally(), tp.symbolizer()),
              ["--skip", "^xmalloc$", "--stacks", "parse_expr"]),
    "exact_plain": (lambda: (tp.make_tally(), tp.symbolizer()),
                    ["--weight", "count", "--sort", "count", "--top", "1"]),
    "timed": (lambda: (timed_tally(), tp.symbolizer()), []),
    "timed_skip_depth": (lambda: (timed_tally(), tp.symbolizer()),
                         ["--skip", "xmalloc", "--depth", "2",
                          "--weight", "peak", "--title", "T"]),
    "timed_phase": (lambda: (timed_tally(), tp.symbolizer()),
                    ["--phase", "2"]),
    "timed_tag": (lambda: (timed_tally(), tp.symbolizer()),
                  ["--tag", "tokens", "--min-size", "20"]),
    "sampled": (lambda: (sampled_tally(), tp.symbolizer()), []),
    "guest": (guest_case, ["--guest", "--guest-dispatch", "^luaV_execute$"]),
    "inlined": (inlined_case, ["--skip", "^get$"]),
}


def render_direct(name, workdir, extra=()):
    """The outputs of case name, made as the command makes them, written
    in workdir: {file name: bytes}, with the table (and the lines naming
    the files) as "stdout" and the warnings as "stderr"."""
    make, argv = CASES[name]
    tally, sym = make()
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        opts = options.parse(list(argv) + [a for flag, path in FILES
                                           for a in (flag, path)]
                             + list(extra))
        report = assemble.finish_report(tally, opts, sym, 0, None)
        out, err = io.StringIO(), io.StringIO()
        outputs.write_outputs(report, opts, out=out, err=err)
    finally:
        os.chdir(cwd)
    return collect(workdir, out, err)


def collect(workdir, out, err):
    got = {"stdout": out.getvalue().encode(), "stderr":
           err.getvalue().encode()}
    for _, path in FILES:
        full = os.path.join(workdir, path)
        if os.path.exists(full):
            with open(full, "rb") as f:
                got[path] = f.read()
    return got


class Goldens(unittest.TestCase):
    """The outputs are those of the code before the profile document."""

    def test_every_output_as_before(self):
        digests = {}
        for name in CASES:
            with tempfile.TemporaryDirectory() as tmp:
                got = render_direct(name, tmp)
            digests[name] = {key: hashlib.sha256(data).hexdigest()
                             for key, data in sorted(got.items())}
        if REGEN:
            with open(GOLDENS, "w", encoding="utf-8") as f:
                json.dump(digests, f, indent=1, sort_keys=True)
                f.write("\n")
        with open(GOLDENS, encoding="utf-8") as f:
            want = json.load(f)
        for name in CASES:
            with self.subTest(case=name):
                self.assertEqual(digests[name], want[name])

if __name__ == "__main__":
    unittest.main()
