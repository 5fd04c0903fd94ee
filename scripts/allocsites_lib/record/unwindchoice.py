"""record --unwind auto: frame pointers where the binaries keep them.

The kernel's frame-pointer walk (--unwind fp) copies nothing and needs no
unwinding afterwards, but it is right only where every frame between the
probe and main set up %rbp: a function without one makes the walk skip
its caller (the probe's own function: the allocation site is lost) or
end early. DWARF stack copies are right in every case, at about 1.4x the
cost (docs/benchmarks.md). auto takes fp only when each probed binary
(the program, and each library that carries the allocation probe)

  - sets up a frame pointer in a good share of its functions (at least
    FP_SHARE: built with -fno-omit-frame-pointer that is 40-85% here,
    counted by hand with elf.frame_pointer_functions
    (docs/notes/2026-design-history.md, "Frame-pointer shares, counted
    by hand"),
    the rest being small functions with no frame at all, such as the
    header's helpers; without it 0-3%, the functions with variable-sized
    frames: Debian's libc 74 of 2763, python3.11 2 of 1472), and
  - sets one up in every function that holds an allocation probe;

else DWARF. What it cannot see, a library without frame pointers
between the allocator and main, shows in the report as stacks cut
short, with the advice to record with --unwind dwarf.
"""

import bisect
import os

from ..read import elf as elfmod

FP_SHARE = 0.25
ALLOC_PROBES = ("alloc", "sample")
# Functions whose probe fires with no allocation, whose stack the report
# never shows: the phase mark at a thread's end (include/rt_probes.h), a
# leaf that gcc builds without a frame even with -fno-omit-frame-pointer
# -mno-omit-leaf-frame-pointer (nothing on its stack).
MARK_FUNCTIONS = frozenset(("rt__phase_mark",))


def binary_verdict(path):
    """(keeps frame pointers, why) for one probed binary."""
    name = os.path.basename(path)
    e = elfmod.open_elf(path)
    funcs = elfmod.frame_pointer_functions(e)
    if not funcs:
        return False, "%s: its functions cannot be checked (no symbols, " \
            "or not x86-64)" % name
    with_fp = sum(1 for f in funcs if f[2])
    if with_fp < FP_SHARE * len(funcs):
        return False, "%s sets up a frame pointer in %d of %d functions" \
            % (name, with_fp, len(funcs))
    starts = [f[0] for f in funcs]
    for provider, probe, pc, _, _ in elfmod.stapsdt_probes(e):
        if provider != "rt" or probe not in ALLOC_PROBES:
            continue
        i = bisect.bisect_right(starts, pc) - 1
        if i < 0 or pc >= funcs[i][0] + funcs[i][1]:
            # in no function: the code of a weak definition the linker
            # did not pick (the header's, one copy per translation
            # unit): never run
            continue
        if funcs[i][3] in MARK_FUNCTIONS:
            continue
        if not funcs[i][2]:
            return False, "%s: the function holding rt:%s at 0x%x sets " \
                "up no frame pointer" % (name, probe, pc)
    return True, "%s sets up a frame pointer in %d of %d functions, " \
        "and in those that allocate" % (name, with_fp, len(funcs))


def choose(paths):
    """("fp" or "dwarf", one line saying why) for the probed binaries."""
    reasons = []
    for path in paths:
        ok, why = binary_verdict(path)
        if not ok:
            return "dwarf", why
        reasons.append(why)
    return "fp", "; ".join(reasons)
