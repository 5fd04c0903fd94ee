#!/usr/bin/python3
"""A real compiler with its own arena: TinyCC's TinyAlloc, beside heaptrack.

Regenerates the table of docs/benchmarks.md,
"A real compiler with its own arena: `bench/real_compiler.py`":

    /usr/bin/python3 bench/real_compiler.py

  bench/real_compiler.py [--src DIR] [--repeat 6]

Issue 30 asks that on a real compiler with its own arena, at about 10^6
allocations, `allocsites record` take at most 5x heaptrack's recording
and `allocsites report` at most 3x heaptrack_print, heaptrack in the
same run. The compiler is TinyCC (Debian's source package tcc,
0.9.27+git20200814): its TinyAlloc ("tal", tccpp.c) is a bump arena for
the token strings and identifiers of the preprocessor, entered through
the macros tal_realloc(al, p, size) and tal_free(al, p).

Source: --src DIR, an unpacked tcc source tree (the .orig.tar.bz2, which
unpacks with no top-level directory); without it the script fetches the
source package with apt into a temporary directory of its own (a
private sources list, lists and cache: the system's apt configuration
and lists are not touched), unpacks it there, and removes it at the end.

Annotation: a copy of the tree, its tccpp.c patched after
`#endif /* USE_TAL */`: two wrappers call tal_realloc_impl and
tal_free_impl, then fire the events (a reallocation of a non-NULL
pointer is its free, then the new block's allocation; tag "toksym" or
"tokstr" by arena), and the two macros are redefined to call them. The
impl bodies above keep their own inner tal_realloc call without events
(a macro expands where it is used). The wrappers also count allocations,
bytes and frees, printed to stderr at exit: the ground truth each
report's totals are checked against ("matches truth"). Three builds with
tcc's own ./configure --debug and make (-O2 -g): the probes (rt_probes.h),
the probes with frame pointers (-fno-omit-frame-pointer
-mno-omit-leaf-frame-pointer, for --unwind fp), and heaptrack's
custom-allocator API in the same wrappers (rt_alloc_hooks.h,
-DRT_PROBES_DISABLE -DRT_ALLOC_HEAPTRACK, as bench/exact_scale.py's
minicc).

Workload: one command, tcc compiling its own one-source build (tcc.c,
which includes every compiler source file) to an object file, --repeat
times in one invocation (`tcc -c tcc.c tcc.c ...`: tcc compiles each
input with a fresh state). One compile of tcc.c makes 156,495 tal
allocations and as many frees (a reallocation counts as one of each;
the figure moves by a few dozen with the directory the input sits in,
here a temporary one), so the default --repeat 6 makes 938,970,
about 10^6, in about half a second alone on the 2-CPU VM.

Rows, one run each:
  native            the probes build alone (nothing records)
  allocsites dwarf  `allocsites record` (DWARF stack copies, the
                    default), then `allocsites report --json`
  allocsites fp     the frame-pointer build, `record --unwind fp`, report
  heaptrack         the hooked build under `heaptrack`, then
                    heaptrack_print (-a 1 -p 0 -T 0 -l 0 -m 0, as
                    exact_scale.py); heaptrack also sees every malloc of
                    tcc (its preload intercepts malloc whatever the
                    program's own API does), so its figures include
                    those: the line after the table says how many calls
                    it counted
Columns: record wall time (the program alone for native), report wall
time, the report's peak memory (the sum of the resident sizes of all
its processes, polled every 50 ms, as exact_scale.py), complete (the
report's end-to-end check; events lost while recording or stacks cut
short are said in the cell), and whether the report's totals (count,
bytes, frees) equal the truth the same run printed. Then one line per
target: each allocsites row's record and report against heaptrack's.

Prints Markdown on stdout; progress on stderr. Run as root (perf), after
`make all`, on an otherwise idle machine: about two minutes here, the
builds and (without --src) the download included.
"""

import argparse
import functools
import json
import os
import platform
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from exact_scale import run  # noqa: E402
from lib.quick import fill_bytecode_cache  # noqa: E402
from lib import debsource  # noqa: E402

ALLOCSITES = ["/usr/bin/python3", os.path.join(ROOT, "scripts", "allocsites")]
PACKAGE = "tcc"
FP_FLAGS = "-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer"
HEAPTRACK_FLAGS = "-DRT_PROBES_DISABLE -DRT_ALLOC_HEAPTRACK"
RECORD_TARGET = 5.0    # issue 30: record within 5x heaptrack
REPORT_TARGET = 3.0    # and report within 3x heaptrack_print
TRUTH = re.compile(r"real_compiler truth: allocs=(\d+) bytes=(\d+) "
                   r"frees=(\d+)")

MARK = "#endif /* USE_TAL */\n"
PATCH = r'''
/* ---- allocsites bench/real_compiler.py: TinyAlloc annotated ---------- */
/* tal_realloc and tal_free call these wrappers from here on: the impl
 * functions above, then the events. The impl bodies keep their own inner
 * tal_realloc (expanded above) without events. A reallocation of a
 * non-NULL pointer is its free, then the new block's allocation. The
 * wrappers count what they report: the ground truth, printed at exit. */
#if defined(MEM_DEBUG)
#error "real_compiler.py: the wrappers are written for the tal without MEM_DEBUG"
#endif
#include "rt_probes.h"
#if defined(RT_ALLOC_HEAPTRACK)
#include "rt_alloc_hooks.h"
#define RC_ALLOC(ptr, size, tag) RT_HOOK_ALLOC((ptr), (size))
#define RC_FREE(ptr) RT_HOOK_FREE(ptr)
#else
#define RC_ALLOC(ptr, size, tag) RT_ALLOC((ptr), (size), (tag))
#define RC_FREE(ptr) RT_FREE(ptr)
#endif
RT_TAG_NAME(1, "toksym");
RT_TAG_NAME(2, "tokstr");
static unsigned long long rc_truth_allocs, rc_truth_bytes, rc_truth_frees;
static void rc_truth_print(void)
{
    fprintf(stderr, "real_compiler truth: allocs=%llu bytes=%llu frees=%llu\n",
            rc_truth_allocs, rc_truth_bytes, rc_truth_frees);
}
static void __attribute__((constructor)) rc_truth_init(void)
{
    atexit(rc_truth_print);
}
static __attribute__((noinline)) void *
tal_realloc_probed(TinyAlloc **pal, void *p, unsigned size)
{
    void *ret = tal_realloc_impl(pal, p, size);
    if (p) {
        rc_truth_frees++;
        RC_FREE(p);
    }
    rc_truth_allocs++;
    rc_truth_bytes += size;
    RC_ALLOC(ret, size, pal == &toksym_alloc ? 1 : 2);
    return ret;
}
static __attribute__((noinline)) void tal_free_probed(TinyAlloc *al, void *p)
{
    tal_free_impl(al, p);
    if (p) {
        rc_truth_frees++;
        RC_FREE(p);
    }
}
#undef tal_realloc
#undef tal_free
#define tal_realloc(al, p, size) tal_realloc_probed(&al, p, size)
#define tal_free(al, p) tal_free_probed(al, p)
/* ---- end of allocsites' annotation ----------------------------------- */
'''


say = debsource.progress("real_compiler")
# runs argv quietly; on failure stops with the end of its output
check = functools.partial(debsource.run_quietly, who="real_compiler")


def is_tcc_tree(path):
    return all(os.path.exists(os.path.join(path, n))
               for n in ("tcc.c", "tccpp.c", "configure", "include"))


def fetch_source(tmp):
    """tcc's source package, unpacked under tmp: (tree, version)."""
    return debsource.fetch(tmp, PACKAGE, is_tcc_tree, say,
                           who="real_compiler")


def copy_tree(src, dst):
    """The source files of a tcc tree (not tarballs, nor apt's files that
    may sit beside them)."""
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(
        "*.tar.*", "*.dsc", "lists", "src.list", "*.o", "*.a"))


def build_tcc(source, dest, label, extra_cflags=""):
    """Copies the tree to dest, annotates tccpp.c, configures and makes
    tcc; returns the binary."""
    say("build %s" % label)
    copy_tree(source, dest)
    tccpp = os.path.join(dest, "tccpp.c")
    with open(tccpp) as f:
        text = f.read()
    if text.count(MARK) != 1:
        raise SystemExit("real_compiler: %s: expected one line %r"
                         % (tccpp, MARK.strip()))
    with open(tccpp, "w") as f:
        f.write(text.replace(MARK, MARK + PATCH))
    cflags = "-O2 -g -I%s -I%s %s" % (os.path.join(ROOT, "include"),
                                      os.path.join(HERE, "lib"),
                                      extra_cflags)
    check(["./configure", "--debug", "--extra-cflags=" + cflags.strip()],
          cwd=dest, what="%s: ./configure" % label)
    check(["make", "-j%d" % max(1, os.cpu_count() or 1), "tcc"], cwd=dest,
          what="%s: make tcc" % label)
    return os.path.join(dest, "tcc")


def truth_of(stderr):
    found = TRUTH.findall(stderr)
    if len(found) != 1:
        return None
    return tuple(int(x) for x in found[0])


def lost_of(stderr):
    """The record's summary line: `...; lost: N -> FILE`."""
    found = re.findall(r"lost: (\d+)", stderr)
    return int(found[-1]) if found else None


def last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else "(no output)"


def allocsites_row(label, tcc, argv, tmp, record_args=()):
    """[label, record, report, memory, complete, matches truth], and
    the two times for the targets (None when not measured)."""
    data = os.path.join(tmp, "run.data")
    out = os.path.join(tmp, "r.json")
    say("%s: record" % label)
    rec_s, _, rc, err = run(ALLOCSITES + ["record", "-o", data] +
                            list(record_args) + ["--", tcc] + argv[1:])
    truth = truth_of(err)
    lost = lost_of(err)
    if rc != 0:
        return [label, "failed (exit %d): %s" % (rc, last_line(err)),
                "", "", "", ""], None, None
    say("%s: report" % label)
    rep_s, rss, rc, rep_err = run(ALLOCSITES + ["report", "-i", data,
                                                "--json", out])
    try:
        with open(out) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        r = None
        why = str(e)
    for leftover in (data, data + ".scan", data + ".buildids", out):
        if os.path.exists(leftover):
            os.unlink(leftover)
    if rc not in (0, 3) or r is None:   # 3: the report says incomplete
        return [label, "%.1f s" % rec_s,
                "failed (exit %d): %s" % (rc, last_line(rep_err)
                                          if rc else why),
                "", "", ""], rec_s, None
    complete = {True: "yes", False: "no", None: "not checked"}[
        r.get("complete")]
    notes = []
    if lost is None:
        notes.append("record printed no lost count")
    elif lost:
        notes.append("record lost %d events" % lost)
    if r.get("lost"):
        notes.append("report: %d lost" % r["lost"])
    if r.get("complete") is not True:
        notes.append(r.get("complete_reason", ""))
    if r.get("truncated_allocations"):
        notes.append("%d stacks truncated" % r["truncated_allocations"])
    if notes:
        complete += " (%s)" % "; ".join(n for n in notes if n)
    t = r["totals"]
    got = (t["count"], t["bytes"], t["frees"])
    if truth is None:
        matches = "no truth line from the program"
    elif got == truth:
        matches = "yes (%s allocations, %s bytes, %s frees)" % tuple(
            "{:,}".format(x) for x in truth)
    else:
        matches = "no: report %s, truth %s (allocations, bytes, frees)" % (
            "/".join(str(x) for x in got), "/".join(str(x) for x in truth))
    return [label, "%.1f s" % rec_s, "%.1f s" % rep_s,
            "%.0f MB" % (rss / 1e6), complete, matches], rec_s, rep_s


def heaptrack_row(tcc, argv, tmp):
    base = os.path.join(tmp, "heaptrack")
    say("heaptrack: record")
    rec_s, _, rc, err = run(["heaptrack", "-o", base, tcc] + argv[1:])
    data = base + ".zst"
    truth = truth_of(err)
    if rc != 0 or not os.path.exists(data):
        return ["heaptrack", "failed (exit %d): %s" % (rc, last_line(err)),
                "", "", "", ""], None, None, None
    say("heaptrack: heaptrack_print")
    listing = os.path.join(tmp, "heaptrack.txt")
    with open(listing, "w") as f:
        rep_s, rss, rc, _ = run(["heaptrack_print", "-f", data, "-a", "1",
                                 "-p", "0", "-T", "0", "-l", "0", "-m", "0",
                                 "-n", "1000000000"], stdout=f)
    with open(listing) as f:
        calls = re.findall(r"calls to allocation functions: (\d+)", f.read())
    os.unlink(listing)
    os.unlink(data)
    calls = int(calls[-1]) if calls else None
    if rc != 0:
        return ["heaptrack", "%.1f s" % rec_s, "heaptrack_print failed "
                "(exit %d)" % rc, "", "", ""], rec_s, None, None
    note = "(no check: tal and malloc together"
    if calls is not None:
        note += ", %s calls" % "{:,}".format(calls)
    note += ")"
    return ["heaptrack", "%.1f s" % rec_s, "%.1f s" % rep_s,
            "%.0f MB" % (rss / 1e6), "(no check)", note], rec_s, rep_s, \
        (calls, truth)


def ratio_line(what, ours, theirs, target):
    if ours is None or theirs is None:
        return "- %s: not measured (a run failed, see the table)" % what
    x = ours / theirs
    return "- %s: %.1fx (target %gx): %s" % (
        what, x, target, "met" if x <= target else "not met")


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Without --src, fetches Debian's tcc source package with "
               "apt into a private temporary directory.")
    ap.add_argument("--src", metavar="DIR",
                    help="an unpacked tcc source tree (Debian's "
                         "tcc_0.9.27+git20200814 .orig.tar.bz2); default: "
                         "fetch it with apt-get source")
    ap.add_argument("--repeat", type=int, default=6,
                    help="compiles of tcc.c in the one tcc command "
                         "(default 6: 938,970 tal allocations here)")
    args = ap.parse_args()
    fill_bytecode_cache()
    if args.repeat < 1:
        raise SystemExit("real_compiler: --repeat must be at least 1")
    if os.geteuid() != 0:
        raise SystemExit("real_compiler: run as root (perf record)")
    have_heaptrack = shutil.which("heaptrack") is not None and \
        shutil.which("heaptrack_print") is not None
    cwd = os.getcwd()
    tmp = tempfile.mkdtemp(prefix="real-compiler-")
    try:
        if args.src:
            if not is_tcc_tree(args.src):
                raise SystemExit("real_compiler: %s is not a tcc source "
                                 "tree (tcc.c, tccpp.c, configure, "
                                 "include/)" % args.src)
            source = os.path.abspath(args.src)
            version = "tcc %s (--src)" % open(
                os.path.join(source, "VERSION")).read().strip() \
                if os.path.exists(os.path.join(source, "VERSION")) \
                else "tcc (--src)"
        else:
            source, version = fetch_source(tmp)
        probes = build_tcc(source, os.path.join(tmp, "build-probes"),
                           "probes")
        probes_fp = build_tcc(source, os.path.join(tmp, "build-fp"),
                              "probes, frame pointers", FP_FLAGS)
        hooked = build_tcc(source, os.path.join(tmp, "build-heaptrack"),
                           "heaptrack hooks", HEAPTRACK_FLAGS) \
            if have_heaptrack else None
        # the input: an unannotated copy (tcc compiles its own sources,
        # whose tccpp.c must not need rt_probes.h), with configure's
        # config.h; -B: tcc's own include/ (stddef.h, stdarg.h...)
        src_in = os.path.join(tmp, "input")
        copy_tree(source, src_in)
        shutil.copy(os.path.join(tmp, "build-probes", "config.h"), src_in)
        # tcc -c with several inputs writes tcc.o into the current
        # directory, each compile over the last
        os.makedirs(os.path.join(tmp, "work"))
        os.chdir(os.path.join(tmp, "work"))
        argv = ["tcc", "-B", src_in, "-I", src_in, "-c"] + \
            [os.path.join(src_in, "tcc.c")] * args.repeat

        say("native")
        nat_s, _, rc, err = run([probes] + argv[1:])
        if rc != 0:
            raise SystemExit("real_compiler: tcc failed (exit %d):\n%s"
                             % (rc, err[-3000:]))
        truth = truth_of(err)
        rows = [["native (probes build, nothing records)",
                 "%.2f s" % nat_s, "", "", "", ""]]
        dwarf, dwarf_rec, dwarf_rep = allocsites_row(
            "allocsites dwarf", probes, argv, tmp)
        fp, fp_rec, fp_rep = allocsites_row(
            "allocsites fp", probes_fp, argv, tmp, ["--unwind", "fp"])
        rows += [dwarf, fp]
        if have_heaptrack:
            ht, ht_rec, ht_rep, ht_calls = heaptrack_row(hooked, argv, tmp)
        else:
            ht, ht_rec, ht_rep, ht_calls = (
                ["heaptrack", "not run: heaptrack is not installed", "", "",
                 "", ""], None, None, None)
        rows.append(ht)

        print("# A real compiler with its own arena: TinyCC's TinyAlloc\n")
        print("Machine: %s, %d CPUs, %s; `bench/real_compiler.py%s "
              "--repeat %d`; %s, compiling its tcc.c %d times in one "
              "command.\n" % (platform.node(), os.cpu_count(),
                              platform.release(),
                              " --src DIR" if args.src else "",
                              args.repeat, version, args.repeat))
        if truth:
            print("The program's own count (native run): %s tal "
                  "allocations, %s bytes, %s frees.\n"
                  % tuple("{:,}".format(x) for x in truth))
        else:
            print("The native run printed no truth line.\n")
        print("| tool | record | report | report memory | complete "
              "| matches truth |")
        print("|---|---|---|---|---|---|")
        for row in rows:
            print("| %s |" % " | ".join(str(c) for c in row))
        print()
        if ht_calls and ht_calls[0] is not None:
            calls, ht_truth = ht_calls
            line = "heaptrack counted %s calls to allocation functions" % (
                "{:,}".format(calls))
            if ht_truth:
                line += ": the %s tal allocations its run printed, and " \
                        "%s of tcc's mallocs" % (
                            "{:,}".format(ht_truth[0]),
                            "{:,}".format(calls - ht_truth[0]))
            print(line + ".\n")
        print(ratio_line("allocsites dwarf record / heaptrack record",
                         dwarf_rec, ht_rec, RECORD_TARGET))
        print(ratio_line("allocsites fp record / heaptrack record",
                         fp_rec, ht_rec, RECORD_TARGET))
        print(ratio_line("allocsites dwarf report / heaptrack_print",
                         dwarf_rep, ht_rep, REPORT_TARGET))
        print(ratio_line("allocsites fp report / heaptrack_print",
                         fp_rep, ht_rep, REPORT_TARGET))
        sys.stdout.flush()
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
