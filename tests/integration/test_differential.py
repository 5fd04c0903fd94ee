"""The native reader (allocsites-read) against perf's own unwinding, stack
by stack and frame by frame (issue 30, item 1), on the differential
corpus of tests/differential/ (built by `make all` into
$BUILD/differential; Makefile.inc there says how each is built).

Each program is recorded once with `allocsites record` (DWARF stacks,
the default; a recording that lost events fails: the two sides would
still agree, but on less than the program did). Then the same
recording is read twice:
  native  allocsites-read --text X.data
  perf    perf script --ns --no-inline -F pid,tid,time,event,ip,sym,
          symoff,dso
and the rt:alloc samples of each are taken in order (the same samples:
pid/tid and time to the nanosecond must agree one by one). Frame j of a
sample must then be the same on both sides: the same pc (perf prints a
caller's pc minus 1, into the call, and so does the native reader; perf
prints it as an offset into the file where the reader prints the
runtime pc and the file offset: the file offset is compared), the same
file, and where perf names a symbol, the same name and offset. Where
perf's stack ends (the stack copy ran out, or its unwinder gave up), the
native one must end too -- except in the programs marked AHEAD, where
perf's unwinder is known to stop early and the native reader goes on:
there the frames perf gives must still match, the native stack must be
longer on most samples, and the test says so on stdout; and the native
stacks must name, sample by sample, the functions perf names in a
reference program (the same source built with .eh_frame, dynamic).

Each program is one line of CORPUS below; a failure prints how many
samples differ and a compact diff of the first one.

The AHEAD cases (what perf 6.1 cannot do and the native reader can):
  calls_static       gcc -static: perf's unwinder stops at the
                     allocator (test_native_reader.py, StaticBinaries)
  calls_debug_frame  no .eh_frame for the program's code, only
                     .debug_frame: libunwind in perf reads .eh_frame only
                     (checked with readelf before anything is recorded)
  calls_no_eh_frame_hdr  linked with --no-eh-frame-hdr (custom linker
                     scripts, some toolchains): .eh_frame is there but
                     not its search table, which perf's libunwind needs
"""

import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BUILD, ROOT, ProfileTest, allocsites,  # noqa: E402
                     rt_events)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from allocsites_lib.read import perfrun  # noqa: E402

# DIFF_READER: another build of the reader to hold against perf (an older
# commit's, to see that this test catches what it was written for)
READER = os.environ.get("DIFF_READER",
                        os.path.join(BUILD, "allocsites-read"))
CORPUS_DIR = os.path.join(BUILD, "differential")
LUA_SCRIPT = os.path.join(ROOT, "tests", "differential", "lua_dlopen.lua")
# Where Debian's -dbgsym packages put debug info, found by build-id by
# libdw and by perf alike (no other directory is honoured by both
# without options: perf only under --symfs, which moves everything).
DEBUG_ROOT = "/usr/lib/debug"

# Perf's unwinder stops early here, by design of perf 6.1; the native
# reader does not. The frames perf gives must still agree.
AHEAD_STATIC = ("statically linked: perf 6.1's unwinder stops at the "
                "allocator, the native reader unwinds with the binary's "
                "own CFI")
AHEAD_DEBUG_FRAME = ("only .debug_frame covers the code: perf's libunwind "
                     "reads .eh_frame only, the native reader (libdw) "
                     "reads .debug_frame too")
AHEAD_NO_HDR = ("no .eh_frame_hdr (ld --no-eh-frame-hdr): perf's "
                "libunwind finds FDEs only through its table, the native "
                "reader (libdw) reads .eh_frame itself")

Program = collections.namedtuple("Program",
                                 "name argv ahead expect native_expect setup "
                                 "record_args reference ends perf_args")


def corpus(name):
    return os.path.join(CORPUS_DIR, name)


def P(name, argv=None, ahead=None, expect=(), native_expect=(),
      setup=None, record_args=(), reference=None, ends=(),
      perf_args=None):
    """A corpus entry. argv: the command (default: the program alone);
    ahead: why the native reader may go further than perf (None: both
    must end at the same frame); expect: symbols (regular expressions,
    whole names as perf prints them, C++ demangled) perf must show
    in some stack, so that the program did take the path it is in the
    corpus for; native_expect: the same for the native reader where
    perf is known not to get there; setup: a method of Differential
    run on the program before it is read (registers its own
    clean-up); record_args: more options for allocsites record;
    reference: for an ahead program, a corpus program built from the
    same source with the same code but unwind tables perf reads: the
    native frames perf cannot check here must name, sample by sample,
    the functions perf names there; ends: (the native reader's end of
    a stack, a regular expression of the last function before it)
    pairs some sample must show (reader.h: "outermost", "stack
    switched"); perf_args: recorded by perf record itself with these
    options (its own probe event, made and deleted by the test) instead
    of allocsites record: a recording made as its user chose."""
    return Program(name, argv or [corpus(name)], ahead, tuple(expect),
                   tuple(native_expect), setup, list(record_args),
                   reference, tuple(ends),
                   None if perf_args is None else list(perf_args))


# At every level and with both compilers these keep frames of their own
# (noinline, not tail calls); is_even/is_odd and make_small/make_large
# are tail calls from -O2 on.
CALLS = ("tree", "deep", "by_value", "take", "main", "large_frame",
         # Rust's manglings and OCaml's, demangled as perf does (d_calls.c)
         "mycrate::inner::v0_frame", "mycrate::legacy",
         "Mycaml.make_block_42", "Stdlib.<>_7")
# gcc -flto makes the file's static functions global: deep.lto_priv.0
CALLS_LTO = tuple(r"%s(\.lto_priv\.\d+)?" % re.escape(n) for n in CALLS)
EDGE = ("in_handler", "co_work", "with_alloca", "jumper", "thread_main",
        "main", "on_other_stack")
# (the coroutine's first frame is glibc's __start_context, a local
# symbol: unnamed without libc's debug symbols)
EDGE_ENDS = (("outermost", "_start"), ("outermost", "__clone3"),
             ("stack switched", r"__pthread_kill_implementation"),
             ("stack switched", r"__start_context|\[unknown\]"),
             ("stack switched", "on_other_stack"))
CXX = (r".*Level<9>::run.*", r".*Noisy::~Noisy", r".*recurse_fn.*",
       r".*Failure.*", r".*outline.*")

CORPUS = [
    P("calls_gcc_O0", expect=CALLS),
    P("calls_gcc_O2", expect=CALLS),
    P("calls_gcc_O3_nopie", expect=CALLS),
    P("calls_gcc_Os", expect=CALLS),
    P("calls_clang_O0_nopie", expect=CALLS),
    P("calls_clang_O2", expect=CALLS),
    # linked by lld, as Rust programs are: text lies a page past its file
    # offset, and perf names a pc by its offset (a PIE's too)
    P("calls_clang_O2_lld", expect=CALLS),
    # -flto: every unit's top-level asm (rt_probes.h's semaphores) in one
    # assembler file, the program and its allocator inlined across units
    P("calls_gcc_O2_lto", expect=CALLS_LTO),
    P("calls_clang_O2_lto", expect=CALLS),
    P("calls_split", expect=CALLS, setup="install_split_debug"),
    P("calls_static", ahead=AHEAD_STATIC, expect=("rt_alloc",),
      native_expect=CALLS, reference="calls_gcc_O2"),
    P("calls_debug_frame", ahead=AHEAD_DEBUG_FRAME, expect=("rt_alloc",),
      native_expect=CALLS, setup="check_debug_frame_only",
      reference="calls_gcc_O2"),
    P("calls_no_eh_frame_hdr", ahead=AHEAD_NO_HDR, expect=("rt_alloc",),
      native_expect=CALLS, setup="check_no_eh_frame_hdr",
      reference="calls_gcc_O2"),
    # the signal trampoline named only by the native reader (see
    # compare_sample): native_expect checks that it is
    # the coroutine's stack ends at glibc's __start_context, whose CFI
    # says it has no caller; the handler on sigaltstack interrupted a
    # frame of the main stack, which no copy of the handler's reaches
    P("edge_gcc_O2", expect=EDGE, native_expect=("__restore_rt",),
      ends=EDGE_ENDS),
    P("edge_clang_O0", expect=EDGE, native_expect=("__restore_rt",),
      ends=EDGE_ENDS),
    # JIT code: both stop at it; the thunk /tmp/perf-PID.map names is
    # named alike, the other is [unknown] in both
    P("jit", expect=("take", r"jit_thunk \[lua\]"),
      native_expect=("take", r"jit_thunk \[lua\]")),
    P("cxx_gxx_O0", expect=CXX),
    P("cxx_gxx_O3", expect=CXX),
    P("cxx_clangxx_O2", expect=CXX),
    P("d_host", expect=("d_alloc_chain", "host_callback", "host_round.*",
                        "plugin_recurse_1", "plugin_recurse_2",
                        "plugin_leaf_2", "plugin_recurse_3",
                        "plugin_leaf_3", "main"),
      record_args=["--lib", corpus("libd_plug3.so")]),
    P("lua_host", argv=[corpus("lua_host"), LUA_SCRIPT],
      expect=("luaopen_lfs", "luaV_execute", "lua_pcallk", "main")),
    # perf record --user-regs=ip,sp: a smaller sample, the other
    # registers missing. perf unwinds with those two wherever the CFA is
    # %rsp-based; the native reader gave no frame at all (2026-11-27).
    # Where a frame's CFA needs %rbp (gcc -O0) both stop there.
    P("calls_gcc_O2_ip_sp", argv=[corpus("calls_gcc_O2")], expect=CALLS,
      perf_args=["--user-regs=ip,sp"]),
    P("calls_gcc_O0_ip_sp", argv=[corpus("calls_gcc_O0")],
      expect=("rt_alloc",), perf_args=["--user-regs=ip,sp"]),
    P("lua_host_ip_sp", argv=[corpus("lua_host"), LUA_SCRIPT],
      expect=("luaopen_lfs", "luaV_execute", "lua_pcallk", "main"),
      perf_args=["--user-regs=ip,sp"]),
    # pipe mode (perf record -o - > file): the attributes, features and
    # tracepoint formats come as records ahead of the data; the native
    # reader refused such a file until 2026-11-27 (then the slow perf
    # path read it, its loss unknown)
    P("calls_gcc_O2_pipe", argv=[corpus("calls_gcc_O2")], expect=CALLS,
      perf_args=["-o", "-"]),
    P("lua_host_pipe_z", argv=[corpus("lua_host"), LUA_SCRIPT],
      expect=("luaopen_lfs", "luaV_execute", "lua_pcallk", "main"),
      perf_args=["-z", "-o", "-"]),
]

ALLOC_EVENT = re.compile(r"sdt_rt:alloc(_\d+)?$")
NATIVE_HEADER = re.compile(r"(\d+)/(\d+) (\d+\.\d{9}) (\S+): ")
# "@0": a pc in no file the reader could read (JIT code: //anon)
NATIVE_FRAME = re.compile(r"\t([0-9a-f]+) (.*) \((.*) @(?:0x([0-9a-f]+)|0)\)$")
PERF_HEADER = re.compile(r"\s*(\d+)/(\d+)\s+(\d+\.\d{9}):\s+(\S+):")
PERF_FRAME = re.compile(r"\t\s*([0-9a-f]+) (.*) \((.*)\)$")

Frame = collections.namedtuple("Frame", "pc off sym dso")
# end: the native reader's end of the stack ("outermost", "stack
# switched": reader.h), None where it says none (and in perf's samples)
Sample = collections.namedtuple("Sample", "key frames end",
                                defaults=(None,))


def split_sym(text):
    """'name+0x1f' -> ('name', 0x1f); '[unknown]' (perf) and
    '[unknown]+0x0' (native) -> ('[unknown]', None)."""
    if text.startswith("[unknown]"):
        return "[unknown]", None
    name, plus, off = text.rpartition("+0x")
    if not plus:
        return text, None
    return name, int(off, 16)


def parse_native(text):
    samples, cur = [], None
    for line in text.splitlines():
        if line.startswith("\t"):
            if cur is None:
                continue
            if line.startswith("\t-- "):   # the stack's end (main.c)
                cur = samples[-1] = cur._replace(end=line[4:])
                continue
            m = NATIVE_FRAME.match(line)
            if not m:
                raise AssertionError("native: cannot parse frame %r" % line)
            name, off = split_sym(m.group(2))
            cur.frames.append(Frame(int(m.group(1), 16),
                                    int(m.group(4), 16)
                                    if m.group(4) is not None else None,
                                    (name, off), m.group(3)))
            continue
        m = NATIVE_HEADER.match(line)
        if not m:
            raise AssertionError("native: cannot parse header %r" % line)
        cur = None
        if ALLOC_EVENT.match(m.group(4)):
            cur = Sample((int(m.group(1)), int(m.group(2)), m.group(3)), [])
            samples.append(cur)
    return samples


def parse_perf(text):
    """perf's pc of a frame is its offset in the file (its map_ip); of an
    address in no file, the address itself."""
    samples, cur = [], None
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("\t"):
            if cur is None:
                continue
            m = PERF_FRAME.match(line)
            if not m:
                raise AssertionError("perf: cannot parse frame %r" % line)
            name, off = split_sym(m.group(2))
            cur.frames.append(Frame(None, int(m.group(1), 16), (name, off),
                                    m.group(3)))
            continue
        m = PERF_HEADER.match(line)
        if not m:
            raise AssertionError("perf: cannot parse header %r" % line)
        cur = None
        if ALLOC_EVENT.match(m.group(4)):
            cur = Sample((int(m.group(1)), int(m.group(2)), m.group(3)), [])
            samples.append(cur)
    return samples


def frame_text(f):
    name, off = f.sym
    sym = name if off is None else "%s+%#x" % (name, off)
    pc = "" if f.pc is None else "%x " % f.pc
    where = "@-" if f.off is None else "@%#x" % f.off
    return "%s%s %s (%s)" % (pc, where, sym, os.path.basename(f.dso))


# perf ends a stack whose copy ran out with a frame at pc -1 in no file:
# the return address it could not read counts as 0, and 0 - 1 is
# printed. The end, not a frame. perf 6.1's access_mem
# (util/unwind-libunwind-local.c) also refuses the copy's last 8 bytes
# (`addr + sizeof(unw_word_t) >= end`, one word short), so where the
# next return address is that last word the native reader, which reads
# it, has exactly one frame more: accepted, counted, said.
PERF_END = Frame(None, (1 << 64) - 1, ("[unknown]", None), "[unknown]")


def perf_frames(sample):
    frames = list(sample.frames)
    while frames and frames[-1] == PERF_END:
        frames.pop()
    return frames


_SYMBOLS = {}


def symbol_addresses(dso):
    """{name: {addresses}} of every symbol nm finds in dso (.symtab,
    .dynsym) and in its detached debug info under /usr/lib/debug/
    .build-id, if any: where two tools name one address differently
    (qsort_r and __GI___qsort_r), both names must be symbols of it."""
    if dso not in _SYMBOLS:
        files = [dso]
        try:
            bid = build_id(dso)
            files.append(os.path.join(DEBUG_ROOT, ".build-id", bid[:2],
                                      bid[2:] + ".debug"))
        except (AssertionError, subprocess.CalledProcessError, OSError):
            pass
        table = collections.defaultdict(set)
        for path in files:
            if not os.path.exists(path):
                continue
            for extra in ([], ["-D"]):
                out = subprocess.run(["nm", "--defined-only"] + extra + [path],
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL,
                                     universal_newlines=True).stdout
                for line in out.splitlines():
                    parts = line.split()
                    if len(parts) == 3:
                        table[parts[2].split("@")[0]].add(int(parts[0], 16))
        _SYMBOLS[dso] = table
    return _SYMBOLS[dso]


def aliases(dso, a, b):
    """True when the names a and b are two symbols at one address in dso."""
    table = symbol_addresses(dso)
    return bool(table.get(a.split("@")[0], set()) &
                table.get(b.split("@")[0], set()))


def compare_sample(perf, native, ahead, notes):
    """-> (None or (the first differing frame's index, why), True when
    native has frames past perf's last one). notes counts what was
    accepted as the same: 'alias' (two names of one address), 'not code'
    (see below),
    'native names' (perf has no symbol, native has one), 'signal
    trampoline' (see below), 'last word'
    (native one frame past perf's -1 end: see PERF_END), 'perf empty'
    (perf printed no frame for the sample)."""
    pframes = perf_frames(perf)
    if not perf.frames and native.frames:
        # perf printed no frame at all, not even the sample's ip (seen
        # once in 230 samples of calls_clang_O2_lto, a fresh make check):
        # nothing of perf's to hold the native stack against. Counted,
        # said, and bounded in check_program.
        notes["perf empty"] += 1
        return None, False
    for j, pf in enumerate(pframes):
        if j >= len(native.frames):
            if native.end == "stack switched" and all(
                    f.sym[0] == "[unknown]" and not f.dso.startswith("/")
                    and f.dso != "[vdso]" for f in pframes[j:]):
                # the native reader ends a stack before a return address
                # in no executable mapping (unwind.c, not_code_ends:
                # CFI that did not follow a stack switch); perf adds it
                # unnamed, in [stack] or [heap] or in no file, never in a
                # file's code
                notes["not code"] += 1
                return None, False
            return (j, "native stack ends here, perf has %d more frame(s)"
                    % (len(pframes) - j)), False
        nf = native.frames[j]
        if pf.dso == "[unknown]":
            # an address in no mapping perf knows: perf prints it as is
            if nf.pc != pf.off:
                return (j, "pc differs (perf: unmapped %#x)" % pf.off), False
            continue
        if nf.dso != pf.dso:
            return (j, "file differs"), False
        if nf.off == pf.off + 1 and pf.sym[0] == "[unknown]" and \
                nf.sym[1] == 0 and j + 1 < len(pframes):
            # The frame of a signal handler's return trampoline (glibc's
            # __restore_rt): its pc is where the handler returns to, not
            # after a call. libdw knows it from the CIE's 'S' and leaves
            # it (dwfl_frame_pc's isactivation); perf 6.1's libunwind
            # takes one off, as from a return address, and lands on the
            # byte before the function, which has no symbol. The native
            # reader names the trampoline; the interrupted frames after
            # it must agree again.
            notes["signal trampoline"] += 1
            continue
        if nf.off != pf.off:
            return (j, "pc differs"), False
        if pf.sym[0] == "[unknown]":
            if nf.sym[0] != "[unknown]":
                notes["native names"] += 1
            continue
        if nf.sym[0] == "[unknown]":
            return (j, "native has no symbol where perf names one"), False
        if nf.sym != pf.sym:
            if nf.sym[1] == pf.sym[1] and aliases(pf.dso, nf.sym[0],
                                                  pf.sym[0]):
                notes["alias"] += 1
                continue
            return (j, "symbol differs"), False
    if len(native.frames) == len(pframes):
        # Why the stack ends: where the native reader says the last
        # frame has no caller (its CFI), perf's libunwind stops without
        # a failed read (no -1). Where it says the stack goes on where
        # no copy reaches, perf may say either: at a coroutine's first
        # frame (glibc's __start_context, whose CFI takes the CFA from
        # rbx) libunwind stops as at an outermost frame.
        if native.end == "outermost" and perf.frames[-1:] == [PERF_END]:
            return (len(pframes), "native: the last frame has no caller; "
                    "perf: its read failed (-1)"), False
    extra = len(native.frames) > len(pframes)
    if extra and not ahead and perf.frames[-1:] == [PERF_END] and \
            len(native.frames) == len(pframes) + 1:
        notes["last word"] += 1
        return None, False
    if extra and not ahead:
        return (len(pframes), "native goes on past perf's last frame "
                "(%d more)" % (len(native.frames) - len(pframes))), True
    return None, extra


def render_diff(i, perf, native, where, why):
    """The sample's frames side by side: the first two, three either side
    of the first difference (marked >), the last two of the longer."""
    lines = ["first differing sample: #%d (pid/tid %d/%d, time %s), frame "
             "%d: %s" % ((i,) + perf.key + (where, why)),
             "  %-3s %-58s %s" % ("#", "perf", "native")]
    n = max(len(perf.frames), len(native.frames))
    show = {0, 1, n - 2, n - 1} | set(range(where - 3, where + 4))
    last = -1
    for j in sorted(k for k in show if 0 <= k < n):
        if j > last + 1:
            lines.append("  ...")
        last = j
        p = frame_text(perf.frames[j]) if j < len(perf.frames) else "-"
        q = frame_text(native.frames[j]) if j < len(native.frames) else "-"
        mark = ">" if j == where else " "
        lines.append("%s %-3d %-58s %s" % (mark, j, p, q))
    if native.end:
        lines.append("  native: -- %s" % native.end)
    return "\n".join(lines)


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL,
                         universal_newlines=True, check=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    if not m:
        raise AssertionError("%s has no build-id note" % path)
    return m.group(1)


def fde_ranges(path):
    """{'.eh_frame': [(lo, hi)], '.debug_frame': [...]} from readelf."""
    out = subprocess.run(["readelf", "--debug-dump=frames", path],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         universal_newlines=True, check=True).stdout
    ranges, section = collections.defaultdict(list), None
    for line in out.splitlines():
        m = re.match(r"Contents of the (\S+) section", line)
        if m:
            section = m.group(1)
            continue
        m = re.search(r" FDE .*pc=([0-9a-f]+)\.\.([0-9a-f]+)", line)
        if m and section:
            ranges[section].append((int(m.group(1), 16),
                                    int(m.group(2), 16)))
    return ranges


def text_symbols(path):
    """{name: address} of the program's own functions (nm, defined text)."""
    out = subprocess.run(["nm", "--defined-only", path],
                         stdout=subprocess.PIPE, universal_newlines=True,
                         check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            syms[parts[2]] = int(parts[0], 16)
    return syms


class Differential(ProfileTest):
    maxDiff = None

    def setUp(self):
        super().setUp()
        # Only events on the corpus are this test's: other sessions'
        # recordings of this checkout's other programs come and go.
        self.ours = (CORPUS_DIR, self.tmp)
        self.events_before = rt_events(self.ours)
        # perf maps a JIT program writes (/tmp/perf-PID.map), removed
        # when the test ends: not ours if they were there before
        maps_before = set(glob.glob("/tmp/perf-*.map"))

        def remove_maps():
            for path in set(glob.glob("/tmp/perf-*.map")) - maps_before:
                os.unlink(path)
        self.addCleanup(remove_maps)
        if not os.path.exists(READER):
            self.fail("%s is not built: run make all" % READER)

    # --- setups -------------------------------------------------------

    def install_split_debug(self, prog):
        """calls_split.debug at /usr/lib/debug/.build-id/xx/yyyy.debug,
        as a -dbgsym package puts it, for the reading only; removed
        afterwards with every directory made for it."""
        debug = prog + ".debug"
        bid = build_id(prog)
        self.assertEqual(build_id(debug), bid)
        out = subprocess.run(["readelf", "-S", prog], stdout=subprocess.PIPE,
                             universal_newlines=True, check=True).stdout
        self.assertNotIn(".symtab", out, "calls_split is not stripped")
        self.assertNotIn(".debug_info", out)
        self.assertNotIn(".gnu_debuglink", out)
        # its DWARF compressed, as dh_strip leaves a -dbgsym's ("C")
        out = subprocess.run(["readelf", "-SW", debug],
                             stdout=subprocess.PIPE, universal_newlines=True,
                             check=True).stdout
        self.assertRegex(out, r"\.debug_info\s+PROGBITS\s+\S+\s+\S+\s+\S+"
                              r"\s+\S+\s+C\s")
        target_dir = os.path.join(DEBUG_ROOT, ".build-id", bid[:2])
        target = os.path.join(target_dir, bid[2:] + ".debug")
        made = []
        d = target_dir
        while not os.path.isdir(d):
            made.append(d)
            d = os.path.dirname(d)
        for d in reversed(made):
            os.mkdir(d)
        self.assertFalse(os.path.exists(target), target)

        def remove():
            if os.path.exists(target):
                os.unlink(target)
            for d in made:
                os.rmdir(d)
        self.addCleanup(remove)
        shutil.copyfile(debug, target)

    def check_debug_frame_only(self, prog):
        """No .eh_frame FDE covers main or any function of d_calls.c or
        rt_alloc.c; .debug_frame covers them all."""
        syms = text_symbols(prog)
        fdes = fde_ranges(prog)
        ours = [s for s in ("main", "take", "tree", "deep", "is_odd",
                            "rt_alloc") if s in syms]
        self.assertIn("main", ours)
        for name in ours:
            addr = syms[name]
            self.assertFalse(any(lo <= addr < hi
                                 for lo, hi in fdes[".eh_frame"]),
                             "%s has an .eh_frame FDE" % name)
            self.assertTrue(any(lo <= addr < hi
                                for lo, hi in fdes[".debug_frame"]),
                            "%s has no .debug_frame FDE" % name)

    def check_no_eh_frame_hdr(self, prog):
        """An .eh_frame with FDEs for the program's code, and neither an
        .eh_frame_hdr section nor a PT_GNU_EH_FRAME segment."""
        headers = subprocess.run(["readelf", "-SlW", prog],
                                 stdout=subprocess.PIPE,
                                 universal_newlines=True, check=True).stdout
        self.assertIn(" .eh_frame ", headers)
        self.assertNotIn(".eh_frame_hdr", headers)
        self.assertNotIn("GNU_EH_FRAME", headers)
        syms = text_symbols(prog)
        self.assertTrue(any(lo <= syms["take"] < hi
                            for lo, hi in fde_ranges(prog)[".eh_frame"]))

    # --- the comparison -----------------------------------------------

    def record(self, prog):
        data = os.path.join(self.tmp, prog.name + ".data")
        if prog.perf_args is not None:
            return self.record_with_perf(prog, data)
        rec = allocsites(["record", "-o", data] + prog.record_args +
                         ["--"] + prog.argv)
        self.assertEqual(rec.returncode, 0, rec.stderr)
        m = re.search(r"; lost: (\S+) ->", rec.stderr)
        self.assertIsNotNone(m, "record said nothing of loss:\n" + rec.stderr)
        self.assertEqual(m.group(1), "0",
                         "%s: the recording lost events; the comparison "
                         "would be of a partial recording:\n%s"
                         % (prog.name, rec.stderr))
        return data

    def record_with_perf(self, prog, data):
        """prog's allocations recorded by perf record with DWARF stacks
        and prog.perf_args, through a probe event of its own (perf probe
        -f: sdt_rt:alloc_N if sdt_rt:alloc is someone else's), deleted
        once perf is done. A recording that lost samples fails."""
        cache = os.path.join(self.tmp, prog.name + ".buildids")
        made = subprocess.run(["perf", "--buildid-dir", cache, "probe", "-f",
                               "-x", prog.argv[0], "sdt_rt:alloc"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True)
        self.assertEqual(made.returncode, 0, made.stdout)
        event = re.search(r"^\s*(sdt_rt:alloc(?:_\d+)?)\s", made.stdout,
                          re.M)
        self.assertIsNotNone(event, made.stdout)
        # "-o -" among perf_args (the last -o wins): the stream to data
        to_stdout = any(a == "-o" and b == "-" for a, b in
                        zip(prog.perf_args, prog.perf_args[1:]))
        try:
            with open(data if to_stdout else os.devnull, "wb") as out:
                rec = subprocess.run(
                    # -N: nothing into root's build-id cache (~/.debug)
                    ["perf", "record", "-q", "-N", "-o", data, "-m", "64M",
                     "--call-graph", "dwarf", "-e", event.group(1)] +
                    prog.perf_args + ["--"] + prog.argv,
                    stdout=out, stderr=subprocess.PIPE,
                    universal_newlines=True)
        finally:
            # before tearDown, which checks that no event is left
            # with the same private cache: perf probe -d writes its
            # probe cache into ~/.debug otherwise
            subprocess.run(["perf", "--buildid-dir", cache, "probe", "-q",
                            "-d", event.group(1)],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        self.assertEqual(rec.returncode, 0, rec.stderr)
        if to_stdout:
            # perf 6.1's report --stats cannot read a stream (it prints
            # "Error:" and exits 0): its dump of the records can
            dump = subprocess.run(["perf", "script", "-D", "-i", data],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL,
                                  universal_newlines=True).stdout
            lost = re.findall(r"PERF_RECORD_LOST(?:_SAMPLES)?:.*?(\d+)$",
                              dump, re.M)
            self.assertIn("PERF_RECORD_SAMPLE", dump)
            self.assertEqual([n for n in lost if n != "0"], [],
                             "%s: the recording lost samples" % prog.name)
            return data
        stats = subprocess.run(["perf", "report", "--stats", "-i", data],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT,
                               universal_newlines=True).stdout
        self.assertEqual(perfrun.lost_from_stats(stats), (0, None),
                         "%s: the recording lost samples; the comparison "
                         "would be of a partial recording:\n%s"
                         % (prog.name, stats))
        return data

    def both_sides(self, data):
        native = subprocess.run([READER, "--text", data],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True)
        self.assertEqual(native.returncode, 0, native.stderr)
        perf = subprocess.run(
            ["perf", "script", "-i", data, "--ns", "--no-inline",
             "-F", "pid,tid,time,event,ip,sym,symoff,dso"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True)
        self.assertEqual(perf.returncode, 0, perf.stderr)
        return parse_perf(perf.stdout), parse_native(native.stdout)

    def test_jit_map_forms(self):
        """The jit program's /tmp/perf-PID.map rewritten in other forms
        (0x prefixes, lines that are not entries, a size of 0, one entry
        over both thunks, no file): perf script and the native reader
        name the thunks alike, and as the map says."""
        data = self.record(P("jit", record_args=[]))
        _, native = self.both_sides(data)
        pid = native[0].key[0]
        path = "/tmp/perf-%d.map" % pid
        self.assertTrue(os.path.exists(path), path)
        # the thunks' pcs, one before each return address: start + 5
        first = {s.frames[2].pc for s in native[:150]}
        second = {s.frames[2].pc for s in native[150:]}
        self.assertEqual(len(first), 1)
        self.assertEqual(len(second), 1)
        m, n = first.pop() - 5, second.pop() - 5
        self.assertEqual(n, m + 64)
        forms = [
            ("%x 8 alpha\n%x 8 beta gamma\n" % (m, n),
             "alpha", "beta gamma"),
            ("0x%x 0x8 alpha\ngarbage line\n\n%x 0 zero\n" % (m, n),
             "alpha", "[unknown]"),
            ("%x 100 outer\n" % m, "outer", "outer"),
            (None, "[unknown]", "[unknown]"),
        ]
        for text, want_first, want_second in forms:
            with self.subTest(map=text):
                if text is None:
                    os.unlink(path)
                else:
                    with open(path, "w") as f:
                        f.write(text)
                perf, native = self.both_sides(data)
                self.assertEqual(len(perf), len(native))
                notes = collections.Counter()
                for i, (p, q) in enumerate(zip(perf, native)):
                    diff, _ = compare_sample(p, q, None, notes)
                    if diff is not None:
                        self.fail(render_diff(i, p, q, *diff))
                names = [({s.frames[2].sym[0] for s in side[:150]},
                          {s.frames[2].sym[0] for s in side[150:]})
                         for side in (perf, native)]
                want = ({want_first}, {want_second})
                self.assertEqual(names, [want, want])

    def check_program(self, prog):
        path = prog.argv[0]
        if not os.path.exists(path):
            self.fail("%s is not built: run make all" % path)
        if prog.setup == "check_debug_frame_only":
            self.check_debug_frame_only(path)
        data = self.record(prog)
        if prog.setup == "install_split_debug":
            self.install_split_debug(path)
        perf, native = self.both_sides(data)

        self.assertGreater(len(perf), 50, "%s: too few samples" % prog.name)
        self.assertEqual(len(native), len(perf),
                         "%s: the native reader gave %d rt:alloc samples, "
                         "perf script %d" % (prog.name, len(native),
                                             len(perf)))
        for i, (p, n) in enumerate(zip(perf, native)):
            if p.key != n.key:
                self.fail("%s: sample #%d is %s in perf, %s in the native "
                          "reader: not the same samples in the same order"
                          % (prog.name, i, p.key, n.key))
        self.assertNames(prog, "perf", perf, prog.expect)

        bad, first, ahead_n = 0, None, 0
        notes = collections.Counter()
        for i, (p, n) in enumerate(zip(perf, native)):
            diff, extra = compare_sample(p, n, prog.ahead, notes)
            ahead_n += extra and prog.ahead is not None
            if diff is not None:
                bad += 1
                if first is None:
                    first = render_diff(i, p, n, *diff)
        frames = sum(len(perf_frames(s)) for s in perf)
        # a sample perf gives no frame for is rare; more than 1 in 100
        # would hide what the comparison is for
        self.assertLessEqual(notes["perf empty"], max(1, len(perf) // 100),
                             "%s: perf gave no frame at all for %d of %d "
                             "samples" % (prog.name, notes["perf empty"],
                                          len(perf)))
        if bad:
            self.fail("%s: %d of %d samples differ (perf: %d frames in "
                      "all)\n%s" % (prog.name, bad, len(perf), frames, first))
        self.assertNames(prog, "the native reader", native,
                         prog.native_expect)
        seen = {(n.end, n.frames[-1].sym[0]) for n in native
                if n.end and n.frames}
        if prog.perf_args is not None:
            # a stack that a missing register stops (the CFA of the
            # caller needs it) has a caller: not its outermost frame
            wrong = [(i, n.frames[-1].sym[0]) for i, n in enumerate(native)
                     if n.end == "outermost" and n.frames and
                     n.frames[-1].sym[0] not in ("_start", "__clone3")]
            self.assertEqual(wrong[:3], [], "%s: %d stacks said to end at "
                             "their outermost frame" % (prog.name,
                                                        len(wrong)))
        if prog.ends:
            # and each stack ends as the program made it: at _start or a
            # thread's __clone3 (outermost), or else (the handler on
            # sigaltstack, the coroutine) where no copy reaches
            for i, n in enumerate(native):
                last = n.frames[-1].sym[0] if n.frames else None
                want = "outermost" if last in ("_start", "__clone3") \
                    else "stack switched"
                self.assertEqual(n.end, want, "%s: sample #%d ends at %s"
                                 % (prog.name, i, last))
        for end, name in prog.ends:
            self.assertTrue(any(e == end and re.fullmatch(name, last)
                                for e, last in seen),
                            "%s: no stack of the native reader ends in %s "
                            "after %s; seen: %s"
                            % (prog.name, end, name, sorted(seen)))
        said = ", ".join("%s %d" % kv for kv in sorted(notes.items()))
        print("\n  %s: %d samples, %d perf frames, all equal in the native "
              "reader%s" % (prog.name, len(perf), frames,
                            "; accepted: " + said if said else ""), end="")
        if prog.ahead:
            # said, not hidden: perf cannot, the native reader can
            self.assertGreater(ahead_n, len(perf) // 2,
                               "%s: marked ahead (%s), but the native reader "
                               "went past perf on %d of %d samples only: "
                               "update the corpus" % (prog.name, prog.ahead,
                                                      ahead_n, len(perf)))
            deeper = sum(len(n.frames) - len(perf_frames(p))
                         for p, n in zip(perf, native))
            if prog.reference:
                self.assertLikeReference(prog, native)
            print("\n  %s: NATIVE AHEAD of perf on %d of %d samples (%d "
                  "frames perf does not give; the %d perf gives all "
                  "match): %s" % (prog.name, ahead_n, len(perf), deeper,
                                  frames, prog.ahead))

    def assertLikeReference(self, prog, native):
        """The frames only the native reader gives, checked another way:
        the reference program (same source, same flags but for the
        unwind tables or the static link) recorded too, its stacks
        from perf; function names must agree sample by sample (offsets
        and libc's files differ between the builds)."""
        ref = next(p for p in CORPUS if p.name == prog.reference)
        perf_ref, _ = self.both_sides(self.record(ref))
        self.assertEqual(len(perf_ref), len(native))

        def same(r, n):
            a, b = r.sym[0].split("@")[0], n.sym[0].split("@")[0]
            return a == b or aliases(n.dso, a, b) or aliases(r.dso, a, b)
        for i, (r, n) in enumerate(zip(perf_ref, native)):
            want = perf_frames(r)
            if len(n.frames) not in (len(want), len(want) + 1) or \
                    not all(same(a, b) for a, b in zip(want, n.frames)):
                self.fail("%s: native sample #%d does not name the "
                          "functions perf names in %s's:\n  %s\n  %s"
                          % (prog.name, i, ref.name,
                             " ".join(f.sym[0] for f in want),
                             " ".join(f.sym[0] for f in n.frames)))

    def assertNames(self, prog, side, samples, patterns):
        names = {f.sym[0] for s in samples for f in s.frames}
        missing = [e for e in patterns
                   if not any(re.fullmatch(e, n) for n in names)]
        self.assertEqual(missing, [], "%s: %s names none of these in any "
                         "stack: the program did not do what it is in the "
                         "corpus for" % (prog.name, side))


def _make_test(prog):
    def test(self):
        self.check_program(prog)
    test.__doc__ = "%s: native frames == perf frames%s" % (
        prog.name, " (native ahead: %s)" % prog.ahead if prog.ahead else "")
    return test


for _prog in CORPUS:
    setattr(Differential, "test_" + _prog.name, _make_test(_prog))


if __name__ == "__main__":
    unittest.main()
