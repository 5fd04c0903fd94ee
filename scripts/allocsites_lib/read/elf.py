"""Minimal ELF64 reader: the few facts allocsites needs from a binary.

Stdlib only (this runs inside perf's embedded Python). Reads:
  - the section table, to fetch .rt_tags (tag names) and .note.stapsdt
    (the USDT probes a binary carries);
  - the GNU build-id, to compare with the build-ids the recording's MMAP2
    records carry or allocsites record kept: a binary rebuilt since;
  - the ELF type and PT_LOAD segments, to turn perf's symbol addresses
    into the link-time addresses addr2line expects (see to_link_address).

Every function returns None or an empty result for a file that is missing,
unreadable or not ELF64; none raises for bad input.
"""

import os
import stat
import struct

from .. import textio

ET_EXEC = 2
ET_DYN = 3
PT_LOAD = 1
PT_INTERP = 3
PF_W = 2
PAGE = 4096
NT_GNU_BUILD_ID = 3
NT_STAPSDT = 3
MACHINES = {62: "x86_64", 183: "aarch64"}   # e_machine values


# Files up to this size are read whole when opened (and their descriptor
# closed); larger ones are read where sliced (FileBytes).
WHOLE_FILE_LIMIT = 32 << 20


class FileBytes:
    """A regular file's bytes, read where they are sliced (os.pread), for
    ElfFile: a binary with a gigabyte of debug info costs the few
    kilobytes of headers and sections asked for, not a copy of the whole
    file in memory each time it is opened (an 800 MB binary made record
    take 16.5 s and the report 1.7 GB, by hand). Slices past the end are
    short, as a bytes object's; a read that fails gives b"" (a file
    rebuilt meanwhile): ElfFile's readers treat that as missing data.
    The descriptor is closed with the object."""

    def __init__(self, fd, size):
        self._fd = fd
        self._size = size

    def __len__(self):
        return self._size

    def __getitem__(self, key):
        if not isinstance(key, slice):
            i = key + self._size if key < 0 else key
            if not 0 <= i < self._size:
                raise IndexError("FileBytes index out of range")
            got = self[i:i + 1]
            if not got:
                raise IndexError("FileBytes: the file shrank")
            return got[0]
        start, stop, step = key.indices(self._size)
        if step != 1:
            raise ValueError("FileBytes: no step")
        if self._fd is None:   # closed
            return b""
        chunks = []
        while start < stop:
            try:
                got = os.pread(self._fd, min(stop - start, 1 << 30), start)
            except OSError:
                return b""
            if not got:
                break
            chunks.append(got)
            start += len(got)
        return b"".join(chunks)

    def close(self):
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __del__(self):
        try:
            self.close()
        except OSError:
            pass


class ElfFile:
    """An ELF64 little-endian file's headers, read once; its sections'
    bytes when asked for. data: bytes, or a FileBytes."""

    def __init__(self, data):
        self.data = data
        (self.e_type, e_machine, _, _, e_phoff, e_shoff, _, _, e_phentsize,
         e_phnum,
         e_shentsize, e_shnum, e_shstrndx) = struct.unpack(
             "<HHIQQQIHHHHHH", data[16:64])
        self.machine = MACHINES.get(e_machine)   # "x86_64", or None
        self.segments = []
        self.writable = []   # PT_LOAD with PF_W: (offset, vaddr, filesz)
        self.interpreter = None   # PT_INTERP: the dynamic loader's path
        # each table in one read (a FileBytes slice is a system call)
        table = data[e_phoff:e_phoff + e_phnum * e_phentsize]
        for i in range(e_phnum):
            (p_type, p_flags, p_offset, p_vaddr, _, p_filesz, _, _) = \
                struct.unpack_from("<IIQQQQQQ", table, i * e_phentsize)
            if p_type == PT_LOAD:
                self.segments.append((p_offset, p_vaddr, p_filesz))
                if p_flags & PF_W:
                    self.writable.append((p_offset, p_vaddr, p_filesz))
            elif p_type == PT_INTERP:
                self.interpreter = data[p_offset:p_offset + p_filesz].split(
                    b"\0")[0].decode("latin-1") or None
        raw = []
        table = data[e_shoff:e_shoff + e_shnum * e_shentsize]
        for i in range(e_shnum):
            raw.append(struct.unpack_from("<IIQQQQIIQQ", table,
                                          i * e_shentsize))
        self.sections = {}
        if 0 <= e_shstrndx < len(raw):
            strtab_off, strtab_size = raw[e_shstrndx][4], raw[e_shstrndx][5]
            strtab = data[strtab_off:strtab_off + strtab_size]
            for (sh_name, sh_type, _, sh_addr, sh_offset, sh_size,
                 _, _, _, _) in raw:
                end = strtab.find(b"\0", sh_name)
                name = strtab[sh_name:end].decode("latin-1")
                # SHT_NOBITS (8) has no bytes in the file.
                self.sections[name] = (sh_addr, sh_offset,
                                       0 if sh_type == 8 else sh_size)

    def section(self, name):
        """The bytes of section `name`, or None."""
        found = self.sections.get(name)
        if found is None:
            return None
        _, offset, size = found
        return self.data[offset:offset + size]

    def section_address(self, name):
        found = self.sections.get(name)
        return None if found is None else found[0]


def open_elf(path):
    """An ElfFile for `path`, or None if it is not a readable ELF64 LE file.
    Only a regular file is read, and opening it never blocks: the path can
    come from a recording made elsewhere, naming a FIFO (which would hang
    the report) or /dev/zero (which reads forever). A file larger than
    WHOLE_FILE_LIMIT is read where sliced (FileBytes): its headers here,
    its sections when asked for; a smaller one is read whole."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError, TypeError):
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    data = FileBytes(fd, st.st_size)
    if st.st_size <= WHOLE_FILE_LIMIT:
        # read at once, the descriptor closed: a report keeps an
        # ElfFile per DSO, and a program of a thousand libraries would
        # otherwise hold a thousand descriptors
        whole = data[:]
        data.close()
        data = whole
    head = data[:64]
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or \
            head[5] != 1:
        _close(data)
        return None
    try:
        return ElfFile(data)
    except struct.error:
        _close(data)
        return None


def _close(data):
    if isinstance(data, FileBytes):
        data.close()


def iter_notes(blob):
    """(type, name, desc) for each note in a note section's bytes."""
    off = 0
    while off + 12 <= len(blob):
        namesz, descsz, ntype = struct.unpack_from("<III", blob, off)
        off += 12
        name = blob[off:off + namesz].rstrip(b"\0").decode("latin-1")
        off += (namesz + 3) & ~3
        desc = blob[off:off + descsz]
        off += (descsz + 3) & ~3
        yield ntype, name, desc


def build_id(elf):
    """The GNU build-id as lowercase hex, or None."""
    for name, blob in elf.sections.items():
        if not name.startswith(".note"):
            continue
        for ntype, owner, desc in iter_notes(elf.section(name)):
            if ntype == NT_GNU_BUILD_ID and owner == "GNU":
                return desc.hex()
    return None


def stapsdt_probes(elf, with_base=False):
    """[(provider, name, pc, semaphore, args)] from .note.stapsdt; with
    with_base, each tuple ends with the note's .stapsdt.base address."""
    blob = elf.section(".note.stapsdt")
    probes = []
    if not blob:
        return probes
    for ntype, owner, desc in iter_notes(blob):
        if ntype != NT_STAPSDT or owner != "stapsdt" or len(desc) < 24:
            continue
        pc, base, semaphore = struct.unpack_from("<QQQ", desc, 0)
        strings = desc[24:].split(b"\0")
        if len(strings) < 3:
            continue
        provider, name, args = (s.decode("latin-1") for s in strings[:3])
        probes.append((provider, name, pc, semaphore, args, base)
                      if with_base else (provider, name, pc, semaphore, args))
    return probes


def semaphore_offset(elf, semaphore):
    """The file offset of a probe's semaphore (its link address), as perf
    computes the kernel's ref_ctr_offset: through the .probes section."""
    found = elf.sections.get(".probes")
    if found is None or not semaphore:
        return None
    addr, offset, size = found
    if not addr <= semaphore < addr + size:
        return None
    return semaphore - addr + offset


def raised_elsewhere(elf, offset):
    """Whether the kernel raises the semaphore at file offset `offset` in
    another mapping than the one the program reads it from. The kernel
    counts in the first writable mapping, in address order, whose pages
    map that file offset (uprobes.c, valid_ref_ctr_vma); lld lays out
    full RELRO as a writable segment whose last file page the next
    writable segment maps again, so a semaphore in that page is raised
    in the RELRO copy, and the probe never fires."""
    own = first = None
    for seg_offset, vaddr, filesz in sorted(elf.writable,
                                            key=lambda s: s[1]):
        lo = seg_offset - seg_offset % PAGE
        end = vaddr + filesz
        hi = lo + (end + (-end) % PAGE) - (vaddr - vaddr % PAGE)
        if first is None and lo <= offset < hi:
            first = (seg_offset, vaddr)
        if own is None and seg_offset <= offset < seg_offset + filesz:
            own = (seg_offset, vaddr)
    return first is not None and own is not None and first != own


def phase_names(elf):
    """{phase id: name} from the .rt_phases records RT_PHASE_NAME emits
    (the .rt_tags layout)."""
    return tag_names(elf, ".rt_phases")


def tag_names(elf, section=".rt_tags"):
    """{tag: name} from the .rt_tags records RT_TAG_NAME emits.

    Record: u32 tag, u32 n, n bytes of NUL-terminated name, padded to 4."""
    blob = elf.section(section) or b""
    names = {}
    off = 0
    while off + 8 <= len(blob):
        tag, n = struct.unpack_from("<II", blob, off)
        if n == 0 or off + 8 + n > len(blob):
            break
        name = textio.printable(blob[off + 8:off + 8 + n].split(b"\0")[0].decode(
            "utf-8", "replace"))
        if name:   # "": the tag keeps its number
            names[tag] = name
        off += 8 + ((n + 3) & ~3)
    return names


def skip_patterns(elf, section=".rt_skip"):
    """[regex] from the .rt_skip records RT_SKIP emits (section
    ".rt_guest_dispatch": RT_GUEST_DISPATCH's, laid out alike).

    Record: u32 n, n bytes of NUL-terminated regex, padded to 4."""
    blob = elf.section(section) or b""
    out = []
    off = 0
    while off + 4 <= len(blob):
        n = struct.unpack_from("<I", blob, off)[0]
        if n == 0 or off + 4 + n > len(blob):
            break
        out.append(blob[off + 4:off + 4 + n].split(b"\0")[0].decode(
            "utf-8", "replace"))
        off += 4 + ((n + 3) & ~3)
    return out


def to_link_address(elf, perf_address):
    """perf's symbol address for this DSO -> the address in its DWARF.

    perf 6.1 (symbol-elf.c, elf__needs_adjust_symbols) rewrites the
    symbols of ET_EXEC, ET_DYN and ET_REL files alike to file offsets
    (st_value - p_vaddr + p_offset), and the native reader names a pc
    the same way. addr2line wants link-time virtual addresses, so the
    address goes back through the PT_LOAD segment holding it. GNU ld
    lays text out at vaddr == offset (in a PIE or a shared library) and
    the two are equal there; lld's layouts (Rust programs, clang
    -fuse-ld=lld) put text a page or more past its offset."""
    if elf is None:
        return perf_address
    for p_offset, p_vaddr, p_filesz in elf.segments:
        if p_offset <= perf_address < p_offset + p_filesz:
            return perf_address - p_offset + p_vaddr
    return perf_address


# x86-64: mov %rsp,%rbp, the frame pointer set up. Not only at the entry:
# gcc schedules other instructions between it and push %rbp, and
# shrink-wraps the prologue past an early return.
FP_SETUP = b"\x48\x89\xe5"
# start-up code that the C runtime links into every program, compiled
# without frame pointers whatever the program's flags
CRT_FUNCTIONS = frozenset((
    "_start", "_init", "_fini", "deregister_tm_clones",
    "register_tm_clones", "__do_global_dtors_aux", "frame_dummy",
    "__libc_csu_init", "__libc_csu_fini", "_dl_relocate_static_pie"))


def frame_pointer_functions(elf):
    """[(start, size, sets up a frame pointer, name)] of the binary's functions
    in .text (its .symtab, else .dynsym; the C runtime's start-up code
    left out), link-time addresses. A function sets one up if
    mov %rsp,%rbp is in its code, as -fno-omit-frame-pointer makes every
    function that has a frame do; without it only functions with a
    variable-sized frame do. None where that cannot be told: not x86-64,
    no .text or no function symbols."""
    if elf is None or elf.machine != "x86_64":
        return None
    text = elf.sections.get(".text")
    if text is None:
        return None
    text_addr, _, text_size = text
    for table, names in ((".symtab", ".strtab"), (".dynsym", ".dynstr")):
        syms, strs = elf.section(table), elf.section(names)
        if syms and strs:
            break
    else:
        return None
    code = elf.section(".text") or b""
    found = {}
    for off in range(0, len(syms) - 23, 24):
        st_name, st_info, _, _, value, size = struct.unpack_from(
            "<IBBHQQ", syms, off)
        if st_info & 0xf != 2 or not size or \
                not text_addr <= value < text_addr + text_size:
            continue   # not a function with code in .text
        end = strs.find(b"\0", st_name)
        name = strs[st_name:end].decode("latin-1")
        if name in CRT_FUNCTIONS or name.endswith(".cold"):
            continue   # (.cold: a function's unlikely part, split off)
        at = value - text_addr
        found[value] = (value, size, FP_SETUP in code[at:at + size], name)
    return sorted(found.values()) or None


def is_static(elf):
    """Whether the binary is statically linked: no dynamic loader
    (PT_INTERP), and not a shared library (a static PIE is ET_DYN too, but
    has no loader either; a library has no PT_INTERP and a soname)."""
    if elf is None or elf.interpreter is not None:
        return False
    if elf.e_type == ET_EXEC:
        return True
    return elf.e_type == ET_DYN and ".dynamic" not in elf.sections
