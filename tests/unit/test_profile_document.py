"""Every output (table, stderr, JSON, CSV, folded, flame graph, pprof,
timeline) of a few hand-made recordings, byte for byte: against goldens
taken from the code before the profile document (issue 33 item 1), and,
rendered again from the saved profile document (--save-profile, then
`allocsites report --from`), against the outputs made directly; and what
--from says of a file that is not a profile document.

ALLOCSITES_REGEN_GOLDENS=1 writes the goldens again (only when an output
is meant to change)."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import argparse
import contextlib
import hashlib
import io
import json
import tempfile

from allocsites_lib.analyze import assemble, document
from allocsites_lib.cli import command, options
from allocsites_lib.read.parse import Event, GuestFrames
from allocsites_lib.read.tally import Tally
from allocsites_lib.render import outputs, profiledoc

from fixtures import StubSymbolizer, fr
import test_pipeline as tp

# {case: {output: sha256 of its bytes}}: small to keep, exact to compare
GOLDENS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "profile_document_goldens.json")
REGEN = os.environ.get("ALLOCSITES_REGEN_GOLDENS") == "1"

# every file output, by the name it gets in the case's directory
FILES = (("--json", "out.json"), ("--csv", "out.csv"),
         ("--folded", "out.folded"), ("--svg", "out.svg"),
         ("--pprof", "out.pb.gz"), ("--timeline", "timeline.svg"),
         ("--save-profile", "profile.json"))


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


def render_direct(name, workdir, document=False):
    """The outputs of case name, made as the command makes them, written
    in workdir: {file name: bytes}, with the table (and the lines naming
    the files) as "stdout" and the warnings as "stderr"; document: the
    profile document too."""
    make, argv = CASES[name]
    tally, sym = make()
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        opts = options.parse(list(argv) + [
            a for flag, path in FILES
            if document or flag != "--save-profile" for a in (flag, path)])
        report = assemble.build_after_reading(tally, opts, sym, 0, None)
        out, err = io.StringIO(), io.StringIO()
        outputs.write_outputs(report, opts, out=out, err=err)
    finally:
        os.chdir(cwd)
    return collect(workdir, out, err)


def split_options(argv):
    """(the options that make the profile, those that render it), as
    argv: options.MADE_WITH's and the rest."""
    opts = options.parse(list(argv))
    made = argparse.Namespace(**{dest: getattr(opts, dest)
                                 for dest, _, _ in options.REPORT_FLAGS})
    rest = argparse.Namespace(**vars(made))
    for dest in options.MADE_WITH:
        setattr(rest, dest, None)
    for dest, _, _ in options.REPORT_FLAGS:
        if dest not in options.MADE_WITH:
            setattr(made, dest, None)
    return options.report_argv(made), options.report_argv(rest)


def save_document(name, workdir):
    """Case name's profile document, made with only the options that
    make a profile and no other output; its path."""
    make, argv = CASES[name]
    tally, sym = make()
    made, _ = split_options(argv)
    path = os.path.join(workdir, "saved.json")
    opts = options.parse(made + ["--save-profile", path])
    report = assemble.build_after_reading(tally, opts, sym, 0, None)
    outputs.write_outputs(report, opts, out=io.StringIO(),
                          err=io.StringIO())
    return path


def render_from(path, workdir, argv):
    """`allocsites report --from path` with argv and every file output,
    in workdir: (its outputs as render_direct gives them, its status)."""
    cwd = os.getcwd()
    os.chdir(workdir)
    out, err = io.StringIO(), io.StringIO()
    try:
        status = command.render_saved(
            path, options.parse(list(argv) + [a for flag, name in FILES
                                              for a in (flag, name)]),
            out, err)
    finally:
        os.chdir(cwd)
    return collect(workdir, out, err), status


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


class FromDocument(unittest.TestCase):
    """--from renders every output as the recording's report did."""

    def test_every_output_from_the_document_as_from_the_recording(self):
        for name in CASES:
            _, render_argv = split_options(CASES[name][1])
            with self.subTest(case=name), \
                    tempfile.TemporaryDirectory() as saved, \
                    tempfile.TemporaryDirectory() as direct, \
                    tempfile.TemporaryDirectory() as rendered:
                want = render_direct(name, direct, document=True)
                got, status = render_from(save_document(name, saved),
                                          rendered, render_argv)
                self.assertEqual(sorted(got), sorted(want))
                for key in want:   # the document again too, the same
                    self.assertEqual(got[key], want[key],
                                     "%s: %s differs" % (name, key))
                self.assertEqual(status, 3 if name.startswith("exact")
                                 else 0)

    def test_the_no_thread_labels_warning_follows_pprof(self):
        # a split by thread that does not add up: the warning stands with
        # --pprof only, where the recording's report puts it, whether the
        # document was saved with --pprof or not
        from unittest import mock
        from allocsites_lib.analyze import threads
        with mock.patch.object(threads, "matches", lambda *a: False), \
                tempfile.TemporaryDirectory() as tmp:
            for sub in ("saved", "direct", "from", "plain", "plain_from"):
                os.mkdir(os.path.join(tmp, sub))
            want = render_direct("timed", os.path.join(tmp, "direct"),
                                 document=True)
            self.assertIn(assemble.NO_THREAD_LABELS.encode(),
                          want["out.json"])
            got, _ = render_from(save_document("timed", os.path.join(
                tmp, "saved")), os.path.join(tmp, "from"), [])
            self.assertEqual(got, want)
            # saved with --pprof, rendered without: no warning
            doc = os.path.join(tmp, "direct", "profile.json")
            plain = os.path.join(tmp, "plain")
            cwd = os.getcwd()
            os.chdir(plain)
            try:
                out, err = io.StringIO(), io.StringIO()
                status = command.render_saved(
                    doc, options.parse(["--json", "out.json"]), out, err)
            finally:
                os.chdir(cwd)
            self.assertEqual(status, 0)
            with open(os.path.join(plain, "out.json"), "rb") as f:
                plain_json = f.read()
            self.assertNotIn(b"no thread labels", plain_json)
            self.assertNotIn("no thread labels", err.getvalue())
            make, argv = CASES["timed"]
            tally, sym = make()
            opts = options.parse(["--json", os.path.join(tmp, "plain_from",
                                                         "out.json")])
            outputs.write_outputs(assemble.build_after_reading(
                tally, opts, sym, 0, None), opts, out=io.StringIO(),
                err=io.StringIO())
            with open(os.path.join(tmp, "plain_from", "out.json"),
                      "rb") as f:
                self.assertEqual(plain_json, f.read())

    def test_saving_the_document_changes_no_other_output(self):
        for name in ("timed", "sampled"):
            with self.subTest(case=name), \
                    tempfile.TemporaryDirectory() as a, \
                    tempfile.TemporaryDirectory() as b:
                plain = render_direct(name, a)
                saved = render_direct(name, b, document=True)
                self.assertIn(b"profile: profile.json\n", saved["stdout"])
                saved["stdout"] = saved["stdout"].replace(
                    b"profile: profile.json\n", b"")
                del saved["profile.json"]
                self.assertEqual(saved, plain)

    def test_the_versions_agree(self):
        self.assertEqual((profiledoc.FORMAT, profiledoc.VERSION),
                         (document.FORMAT, document.VERSION))

    def test_top_is_the_renderings(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = save_document("exact", tmp)
            opts = options.parse(["--top", "1"])
            report = document.for_render(document.load(path), opts)
            self.assertEqual(report.filters["top"], 1)
            self.assertEqual(len(report.profile.sites), 3)


class Diff(unittest.TestCase):
    """allocsites diff reads a profile document as the JSON report its
    recording gives."""

    def test_a_document_diffs_as_its_json_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            doc = save_document("timed", tmp)
            direct = render_direct("timed", tmp)
            js = os.path.join(tmp, "out.json")
            base_js = os.path.join(tmp, "base.json")
            with open(js, "rb") as f, open(base_js, "wb") as g:
                g.write(f.read())
            outs = []
            for base in (base_js, doc):
                out = io.StringIO()
                diff_json = os.path.join(tmp, "d.json")
                status = command.run_diff(argparse.Namespace(
                    base=base, new=js, json=diff_json, svg=None, top=20,
                    guest=False), out=out)
                self.assertEqual(status, 0)
                with open(diff_json, "rb") as f:
                    outs.append((out.getvalue().replace(base, "BASE"),
                                 f.read().replace(base.encode(), b"BASE")))
            self.assertIn("out.json", direct)
            self.assertEqual(outs[0], outs[1])

    def test_a_bad_document_is_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.json")
            with open(path, "w") as f:
                json.dump({"format": document.FORMAT, "version": 7}, f)
            err = io.StringIO()
            with contextlib.redirect_stderr(err), \
                    contextlib.redirect_stdout(io.StringIO()):
                status = command.main(["diff", path, path])
            self.assertEqual(status, 1)
            self.assertEqual(err.getvalue().count("\n"), 1)
            self.assertIn("of version 7", err.getvalue())


class BadDocuments(unittest.TestCase):
    """A file that is not a profile document: one line, status 1, no
    traceback; an option --from cannot honour: one line, status 2."""

    def run_main(self, argv):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), \
                contextlib.redirect_stdout(io.StringIO()):
            status = command.main(argv)
        return status, err.getvalue()

    def bad(self, content, says):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.json")
            if content is not None:
                with open(path, "wb") as f:
                    f.write(content)
            status, err = self.run_main(["report", "--from", path])
        self.assertEqual(status, 1)
        self.assertEqual(err.count("\n"), 1, err)
        self.assertTrue(err.startswith("allocsites: %s: " % path), err)
        self.assertIn(says, err)
        self.assertNotIn("Traceback", err)

    def test_bad_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(save_document("timed", tmp), "rb") as f:
                good = f.read()
        doc = json.loads(good)
        for content, says in (
                (None, "No such file"),
                (b"", "not JSON"),
                (b"\x00\xff binary", "not JSON"),
                (good[:len(good) // 2], "not JSON"),
                (b"[1, 2]", "not a profile document"),
                # nested deeper than Python's stack: json's RecursionError
                (b"[" * 100000 + b"]" * 100000, "not JSON"),
                (json.dumps(dict(doc, version=99)).encode(),
                 "of version 99; this allocsites reads version 1"),
                (json.dumps({"version": 2, "sites": [],
                             "totals": {}}).encode(),
                 "a JSON report (--json), not a profile document"),
                (json.dumps(dict(doc, profile={})).encode(),
                 "a damaged profile document"),
                (json.dumps(dict(doc, frames=[[1]])).encode(),
                 "a damaged profile document")):
            with self.subTest(says=says, content=content[:20]
                              if content else content):
                self.bad(content, says)

    def test_options_that_make_the_profile_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = save_document("timed", tmp)
            for argv, says in (
                    (["--tag", "ast"], "--tag cannot be used with --from"),
                    (["--skip", "x"], "--skip cannot be used with --from"),
                    (["--phase", "1"], "--phase cannot be used with --from"),
                    (["--min-size", "8"], "--min-size cannot be used"),
                    (["--depth", "2"], "--depth cannot be used"),
                    (["--guest"], "--guest cannot be used"),
                    (["-i", "perf.data"], "-i and --from"),
                    (["--json", path], "--json %s is the profile document "
                     "read" % path)):
                with self.subTest(argv=argv):
                    status, err = self.run_main(["report", "--from", path]
                                                + argv)
                    self.assertEqual(status, 2)
                    self.assertEqual(err.count("\n"), 1, err)
                    self.assertIn(says, err)


if __name__ == "__main__":
    unittest.main()
