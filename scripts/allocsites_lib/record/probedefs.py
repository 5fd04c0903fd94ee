"""The rt probes' uprobe events, written to tracefs by the recorder itself.

perf probe would do it, one perf process per event (~10 ms each,
docs/notes/2026-design-history.md, "Fixed cost of a recording") and one
event per probe
name and binary. Each perf event costs its recording a fixed ~80 ms on
this kernel (6.18, the same section): closing a uprobe event waits for
an RCU grace period (uprobe_unregister), and perf closes its events one after the
other at exit. So the recorder writes the definitions itself
(docs/design.md, "One event for the probes without a call graph"):

- every probe recorded without a call graph (rt:free, rt:exit, release,
  commit, decommit, phase_begin, phase_end, sample_free) of every probed
  binary as ONE event, sdt_rt:plain_PID, with the same fields for all:

      kind=\\K:u8 a=... b=... ... h=...:u64

  where K is an immediate that names the probe (KINDS) and a..h are the
  probe's arguments in order (unused ones \\0). The kernel accepts several
  probes under one event name only when their fields have the same names
  and types, hence every argument is fetched as u64; the report masks the
  4-byte ones (parse.py);
- the allocation probe (rt:alloc, or rt:sample) of every probed binary
  as one event, sdt_rt:alloc_PID (sample_PID), its fields named and typed
  as perf probe names them (arg1..argN, u64/u32/s32 from the note), so
  the report reads it like perf probe's;
- a language runtime's rt:guest (its guest locations) as one event,
  sdt_rt:guest_PID, named as perf probe would (arg1..arg5), but its two
  names fetched as strings (+0(%reg):string), which perf probe cannot
  do for an SDT argument: the uprobe copies them when it fires.

Each probe keeps its own semaphore (ref_ctr_offset), so the header's
probes are raised exactly as perf probe would raise them.

Only register operands are translated (rt_probes.h emits nothing else);
a note with another operand (a sys/sdt.h probe of provider rt with a
memory operand) makes the definitions None, and the caller falls back to
perf probe, one event per probe name and binary.
"""

import re

from .. import contract
from ..read import elf

# The probe -> the immediate in the event's kind field (the contract's
# table; parse.py reads them back).
KINDS = contract.PLAIN_KINDS
FIELDS = contract.PLAIN_FIELDS   # at most 8 arguments (rt:exit has 8)
GROUP = "sdt_rt"

# x86-64 operand -> pt_regs name as tracefs spells it. 32-, 16- and 8-bit
# forms fetch the whole register; the report masks by the probe's
# contract.
_X86 = {}
for _r in "abcd":
    for _form in ("r%sx", "e%sx", "%sx", "%sl"):
        _X86[_form % _r] = "%sx" % _r
for _r in ("si", "di", "bp", "sp"):
    for _form in ("r%s", "e%s", "%s", "%sl"):
        _X86[_form % _r] = _r
for _n in range(8, 16):
    for _suffix in ("", "d", "w", "b"):
        _X86["r%d%s" % (_n, _suffix)] = "r%d" % _n
_AARCH64 = {("%s%d" % (p, n)): "x%d" % n for n in range(31) for p in "xw"}
_AARCH64.update({"sp": "sp"})

_ARG_RE = re.compile(r"^-?\d+@%?([a-z0-9]+)$")


def event_name(pid, what="plain"):
    """The run's own event name ("plain_PID", "alloc_PID"): unique per
    live process, so two runs never append their probes to one event
    (deleting it would pull the other run's probes from under its
    perf)."""
    return "%s_%d" % (what, pid)


def fetch_args(args, machine):
    """The tracefs fetch arguments for a note's argument string, as the
    list of fields a..h, or None for an operand that is not a register."""
    regs = _X86 if machine == "x86_64" else _AARCH64 \
        if machine == "aarch64" else None
    if regs is None:
        return None
    ops = args.split()
    if len(ops) > len(FIELDS):
        return None
    fetched = []
    for op in ops:
        m = _ARG_RE.match(op)
        reg = m and regs.get(m.group(1))
        if reg is None:
            return None
        fetched.append("%" + reg)
    return fetched + ["\\0"] * (len(FIELDS) - len(fetched))


def file_offset(image, vaddr):
    """A virtual address of the file's image -> its offset in the file."""
    for p_offset, p_vaddr, p_filesz in image.segments:
        if p_vaddr <= vaddr < p_vaddr + p_filesz:
            return vaddr - p_vaddr + p_offset
    return None


_TYPES = {"8": "u64", "-8": "s64", "4": "u32", "-4": "s32", "2": "u16",
          "-2": "s16", "1": "u8", "-1": "s8"}


def typed_args(args, machine):
    """perf probe's fields for a note's arguments: ["arg1=%ax:u64", ...],
    or None for an operand that is not a register."""
    regs = fetch_args(args, machine)
    if regs is None:
        return None
    out = []
    for i, op in enumerate(args.split()):
        kind = _TYPES.get(op.split("@", 1)[0])
        if kind is None:
            return None
        out.append("arg%d=%s:%s" % (i + 1, regs[i], kind))
    return out


# rt_probes.h's site on x86-64, after the note's one-byte nop (the
# header says why): lea -136(%rsp),%rsp, then a 5-byte nop (nopl
# 0x0(%rax,%rax,1)), which Linux >= 6.18 turns into a call to the uprobe
# syscall's trampoline instead of an int3 trap.
_STEP_DOWN = bytes.fromhex("488da42478ffffff")
_NOP5 = bytes.fromhex("0f1f440000")
FAST_SITE_OFFSET = 1 + len(_STEP_DOWN)   # the 5-byte nop, from the note's


def fast_site(image, offset):
    """The file offset of the site's 5-byte nop for the probe whose note
    names the file offset `offset`, or None where the bytes there are not
    rt_probes.h's x86-64 site (an older header, sys/sdt.h, another
    target): the probe then stays at the note's nop."""
    if image.machine != "x86_64":
        return None
    site = b"\x90" + _STEP_DOWN + _NOP5
    if image.data[offset:offset + len(site)] != site:
        return None
    return offset + FAST_SITE_OFFSET


def definitions(path, image, kinds, name, fast=False):
    """The uprobe_events lines for the probes of `kinds` in the ELF file
    (image: elf.ElfFile of path), all under GROUP/name; [] when it has
    none, None when one cannot be translated (the caller then uses perf
    probe). fast: each probe at its site's 5-byte nop where it has one
    (fast_site), else at the note's nop."""
    return _lines(path, image, kinds, name, _plain_fields, fast)


def alloc_definitions(path, image, probe, name, fast=False):
    """The uprobe_events lines for every site of one allocation probe
    ("alloc" or "sample") in the file, under GROUP/name, with perf probe's
    field names; [] when it has none, None when one cannot be
    translated. fast: as definitions'."""
    return _lines(path, image, {probe}, name, _own_fields, fast)


def guest_definitions(path, image, name):
    """The uprobe_events lines for every rt:guest site in the file, under
    GROUP/name: id, parent and line as u64, source and function as the
    strings they point to; [] when it has none, None when one cannot be
    translated."""
    return _lines(path, image, {"guest"}, name, _guest_fields)


def _guest_fields(_probe, args, machine):
    regs = fetch_args(args, machine)
    if regs is None or len(args.split()) != 5:
        return None
    return " ".join(["arg%d=%s:u64" % (i + 1, regs[i]) for i in range(3)] +
                    ["arg%d=+0(%s):string" % (i + 1, regs[i])
                     for i in (3, 4)])


def _plain_fields(probe, args, machine):
    fetched = fetch_args(args, machine)
    if fetched is None:
        return None
    return "kind=\\%d:u8 %s" % (KINDS[probe], " ".join(
        "%s=%s:u64" % (f, v) for f, v in zip(FIELDS, fetched)))


def _own_fields(_probe, args, machine):
    typed = typed_args(args, machine)
    return None if typed is None else " ".join(typed)


def _lines(path, image, kinds, name, fields_of, fast=False):
    if " " in path or "\t" in path:
        return None   # tracefs splits the definition at whitespace
    base = image.section_address(".stapsdt.base")
    lines = []
    for provider, probe, pc, semaphore, args, note_base in \
            elf.stapsdt_probes(image, with_base=True):
        if provider != "rt" or probe not in kinds:
            continue
        fields = fields_of(probe, args, image.machine)
        if fields is None:
            return None
        # Prelinked files move the probe with .stapsdt.base (sdt.h's
        # rule; perf applies it too).
        if base is not None and note_base:
            pc += base - note_base
        offset = file_offset(image, pc)
        if offset is None:
            return None
        if fast:
            offset = fast_site(image, offset) or offset
        place = "%s:0x%x" % (path, offset)
        if semaphore:
            ref = file_offset(image, semaphore)
            if ref is None:
                return None
            place += "(0x%x)" % ref
        lines.append("p:%s/%s %s %s" % (GROUP, name, place, fields))
    return lines
