"""The binaries to probe, which carry rt probes, which ran unprobed.

The binaries to probe: the program (started, or a running process's),
its libraries and --lib's, which of them carry rt probes, and which ran
unprobed.
"""

import os
import re
import shutil
import struct

from ..read import elf
from . import probedefs
from .errors import RecordError
from .helpercmd import output_text, run

PROBE_EVENTS = ("alloc", "sample", "guest") + tuple(sorted(probedefs.KINDS))


def resolve_library(lib):
    """--lib LIB -> absolute path of a readable ELF file. Libraries need no
    execute bit (most distributions install them 0644)."""
    path = os.path.realpath(lib)
    if not os.path.isfile(path):
        raise RecordError("--lib %s: no such file" % lib)
    if not os.access(path, os.R_OK):
        raise RecordError("--lib %s: not readable" % lib)
    if elf.open_elf(path) is None:
        raise RecordError("--lib %s: not an ELF64 shared library" % lib)
    return path


def resolve_program(prog, scripts=False):
    """PROG as the shell would find it -> absolute path of an ELF file,
    or of a script (#!) where scripts is true: --lib names the probed
    binaries then (a libtool wrapper, a test driver), the script has
    none of its own."""
    path = prog if "/" in prog else shutil.which(prog)
    if path is None or not os.path.exists(path):
        raise RecordError("program not found: %s" % prog)
    path = os.path.realpath(path)
    if not os.access(path, os.X_OK) or os.path.isdir(path):
        raise RecordError("not an executable file: %s" % prog)
    image = elf.open_elf(path)
    if image is None:
        if scripts and is_script(path):
            return path
        raise RecordError("not an ELF64 executable: %s (a script? record "
                          "the program it starts: allocsites record -- "
                          "PROG ARGS, or name that program with --lib "
                          "PROG and keep the script)" % prog)
    not_runnable = not_a_program(image)
    if not_runnable:
        raise RecordError("not an executable: %s is %s" % (prog, not_runnable))
    return path


def not_a_program(image):
    """Why an ELF file cannot be run, or None: an object file or a core
    (their e_type), or the debug info split off a program (objcopy
    --only-keep-debug keeps the mode, so it looks executable; the kernel
    refuses it and perf's exec falls back to running it with /bin/sh)."""
    if image.e_type == 1:       # ET_REL
        return "an object file (.o): link it into a program first"
    if image.e_type == 4:       # ET_CORE
        return "a core dump"
    text = image.sections.get(".text")
    if text is not None and text[2] == 0:
        return ("debug info split off a program (objcopy "
                "--only-keep-debug): its code is not in it; record the "
                "program it was split from")
    return None


def launched_programs(words):
    """The words (a launcher's arguments: env VAR=1 PROG, nice -n 5 PROG,
    taskset -c 0 PROG, timeout 60 PROG) that name an executable ELF file,
    as resolve_program finds one, in order: their absolute paths. Options
    and VAR=value words are skipped."""
    for word in words:
        if not word or word.startswith("-") or "=" in word:
            continue
        try:
            yield resolve_program(word)
        except RecordError:
            continue


def is_script(path):
    """Whether the file at path starts with #! (the kernel runs its
    interpreter)."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


_LDD_RE = re.compile(r"=>\s*(/\S+)|^\s*(/\S+)\s+\(0x")


def shared_libraries(path):
    """Absolute paths of the libraries `path` links, as ldd resolves them.
    ldd is a shell script that runs the program's dynamic loader four
    times (30-40 ms); `LOADER --list PROG` is the one run that lists, so
    that is used when the program names a loader that exists."""
    image = elf.open_elf(path)
    if image is None:   # a script (resolve_program, with --lib) links nothing
        return []
    loader = image.interpreter
    if loader and os.access(loader, os.X_OK):
        proc = run([loader, "--list", path])
        if proc.returncode == 0:
            return _libraries(output_text(proc))
    return _libraries(output_text(run(["ldd", path])))


def _libraries(text):
    libs = []
    for line in text.splitlines():
        m = _LDD_RE.search(line)
        lib = m and (m.group(1) or m.group(2))
        if lib and os.path.exists(lib):
            libs.append(os.path.realpath(lib))
    return libs


def rt_probe_names(path):
    """The rt probes (e.g. {'alloc', 'free'}) in the ELF file at path."""
    image = elf.open_elf(path)
    if image is None:
        return set()
    return {name for provider, name, _, _, _ in elf.stapsdt_probes(image)
            if provider == "rt"}


def probed_binaries(prog_path, extra_libs=(), libs=None):
    """[(path, {probe names})] for the program and its libraries that
    carry rt probes (libs: the libraries, when not ldd's)."""
    found = []
    if libs is None:
        libs = shared_libraries(prog_path)
    for path in [prog_path] + list(libs) + list(extra_libs):
        names = rt_probe_names(path) & set(PROBE_EVENTS)
        if names and path not in [p for p, _ in found]:
            found.append((path, names))
    return found


RELRO_PAGE = "they share a file page with its RELRO segment, as lld lays it out"
OUTSIDE_PROBES = ("they lie outside its .probes section, from which perf "
                  "computes where the kernel counts")


def semaphore_trouble(path):
    """Why the kernel does not raise the rt probes' semaphores of the ELF
    file at path where its code reads them, or None: a semaphore in a
    file page an earlier writable segment maps too (elf.raised_elsewhere:
    lld's RELRO layout, with a header from before the semaphores had a
    page of their own), or outside .probes. Those probes stay off while
    recorded, and the end-to-end count, which counts fired probes,
    cannot tell."""
    image = elf.open_elf(path)
    if image is None:
        return None
    try:
        probes = elf.stapsdt_probes(image)
    except (struct.error, ValueError, IndexError):   # damaged notes
        return None
    for provider, _, _, sem, _ in probes:
        if provider != "rt" or not sem:
            continue
        offset = elf.semaphore_offset(image, sem)
        if offset is None:
            return OUTSIDE_PROBES
        if elf.raised_elsewhere(image, offset):
            return RELRO_PAGE
    return None


def stuck_semaphores_warning(path, why):
    """The one line said of such a file (record and report)."""
    return ("%s: the kernel does not raise its rt probes' semaphores where "
            "the program reads them (%s), so its probes may not fire while "
            "recorded, and no count can tell: rebuild it with the current "
            "include/rt_probes.h%s" % (
                path, why, ", or link it with -z norelro"
                if why == RELRO_PAGE else ""))


def unprobed_code(code, probed):
    """Files with rt probes that ran code during the recording (code: the
    paths of executable mappings, perfdata.Scan.code) but were not probed:
    a program the recorded one started with exec, a library it loaded
    with dlopen and nobody named with --lib. Their events are missing
    from the recording, and no end-to-end count can tell: their
    semaphores were never raised, so they counted nothing."""
    missing = []
    for path in sorted(set(code) - set(probed)):
        try:
            if "alloc" in rt_probe_names(path):
                missing.append(path)
        except Exception:  # noqa: BLE001 - an unreadable file is not ours
            pass
    return missing


DELETED = " (deleted)"   # the kernel's mark on a path unlinked since
# mappings /proc/PID/maps names like files, which are memory: memfd code
# (JIT compilers), shared anonymous memory, System V shared memory; all
# of them "(deleted)"
NOT_FILES = ("/memfd:", "/dev/zero", "/SYSV")


def same_file_here(theirs, path):
    """Whether path, as this process sees it, is the file theirs (a
    /proc/PID/ path that reaches the process's own file) is: not where
    the process runs in another mount namespace (a container, a chroot)
    whose file at that path is another, or none here. True when theirs
    cannot be read (no permission): nothing says otherwise."""
    try:
        a = os.stat(theirs)
    except OSError:
        return True
    try:
        b = os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def process_binaries(pid):
    """(executable, [mapped files with code], [code files deleted since
    they were mapped, or not the files at their paths here]) of a running
    process, from /proc/PID/exe and /proc/PID/maps; a RecordError if
    there is none, or if the executable itself was deleted (replaced by
    an upgrade or a rebuild) or is another file here (a container's):
    perf probes a file by its path, and the file at that path here is
    another one."""
    try:
        exe = os.readlink("/proc/%d/exe" % pid)
        with open("/proc/%d/maps" % pid) as f:
            maps = f.read().splitlines()
    except OSError as e:
        raise RecordError("-p %d: no such process or not readable (%s)"
                          % (pid, e.strerror))
    if exe.endswith(DELETED):
        raise RecordError(
            "-p %d: its program %s was deleted or replaced since the "
            "process started (an upgrade or a rebuild): perf can only probe "
            "the file now at that path, which this process does not run; "
            "restart the process, then attach" % (pid, exe[:-len(DELETED)]))
    if not same_file_here("/proc/%d/exe" % pid, exe):
        raise RecordError(
            "-p %d: its program %s is not the file at that path here: the "
            "process runs in another mount namespace (a container, a "
            "chroot); perf probes a file by the path it has here. Run "
            "allocsites where the process's files are (inside the "
            "container)" % (pid, exe))
    exe = os.path.realpath("/proc/%d/exe" % pid)
    libs, deleted = [], []
    for line in maps:
        parts = line.split(None, 5)
        if len(parts) == 6 and "x" in parts[1] and parts[5].startswith("/"):
            name = parts[5].strip()
            if name.startswith(NOT_FILES):
                continue   # memory with a name, never a file to probe
            gone = name.endswith(DELETED)
            if gone:
                name = name[:-len(DELETED)]
            if gone or not same_file_here("/proc/%d/root%s" % (pid, name),
                                          name):
                if name not in deleted:
                    deleted.append(name)
                continue
            path = os.path.realpath(name)
            if path != exe and path not in libs and os.path.isfile(path):
                libs.append(path)
    return exe, libs, deleted
