"""Environment checks, uprobe event lifecycle and perf record.

Every failure is a RecordError carrying one line for the user. Probe
events are created for exactly the binaries being run, every time (a
uprobe is bound to an inode and offset: after a rebuild an old event
records nothing, without an error), and removed again in all cases.
"""

import errno
import fcntl
import json
import os
import stat
import re
import shutil
import struct
import subprocess
import tempfile
import time

from ..read import elf
from . import probedefs

TRACEFS = "/sys/kernel/tracing"
PROBE_EVENTS = ("alloc", "sample") + tuple(sorted(probedefs.KINDS))
PERF_MAGIC = b"PERFILE2"

# Recording options (docs/design.md, "Recording defaults", has the
# measurements behind each):
#  - -z at zstd level 3 (--compression-level=3): zstd compresses the
#    stack copies (mostly unchanged stack between events) 70:1 or more,
#    so perf's writer keeps up with the program and the file stays small
#    (12-44 bytes per event instead of ~2.3 KB). Level 3 made files a
#    sixth to a half smaller than perf's default level 1 and lost nothing
#    in bench/lossless_runs.py; level 6 lost events (the writer falls
#    behind).
#  - 8192 bytes of user stack per sample: enough for an interpreter's
#    parser to reach main (bench/stack_depth.py); deeper stacks are cut
#    short, which the report detects and states (raise --stack-size).
#  - --no-bpf-event: perf's BPF side-band thread polls with a 1 s timeout
#    and is joined at exit: a second of fixed cost for nothing (the
#    profile does not look at BPF programs).
#  - The ring buffers absorb bursts while perf's writer is starved of CPU
#    (the program's threads compete with it): 256 MiB in all, 16 to 128
#    MiB per CPU. 256 MiB per CPU cost about a second of page faults
#    before the program starts.
#  - No --buildid-mmap: with it a Lua interpreter's recordings lost
#    events in 4 of 15 runs, without it in 0 of 15 (perhaps chance:
#    docs/design.md). The
#    probed binaries' build-ids go to FILE.buildids instead (perf skips
#    its own build-id pass with -z), so the report can tell a binary
#    rebuilt since the recording even when cp -p or rsync -a kept its old
#    modification time.
#  - Frees carry no call graph: the liveness sweep matches each to its
#    allocation by pointer, and the allocation has the stack; their stack
#    copies would double the data. Nor do rt:exit and the other probes
#    of the plain event (probedefs.py).
#  - Sampled mode records a few events a millisecond at most (the
#    samples, their frees, phases), so its rings are 32 MiB in all, 4 to
#    16 MiB per CPU: they cost less to set up (bench/fixed_cost.py). With
#    --frees (every free recorded) it takes exact mode's rings.
DEFAULT_STACK_SIZE = 8192
RING_BUDGET = 256 << 20
RING_MIN, RING_MAX = 16 << 20, 128 << 20
RINGS_EXACT = (RING_BUDGET, RING_MIN, RING_MAX)
RINGS_SAMPLED = (32 << 20, 4 << 20, 16 << 20)
ZSTD_LEVEL = 3
RECORD_FLAGS = ("--no-bpf-event",)


def compression_flag(environ=os.environ):
    """perf's -z at ZSTD_LEVEL; ALLOCSITES_ZSTD_LEVEL=N (1 to 22) sets
    another level, for bench/compression_levels.py."""
    level = environ.get("ALLOCSITES_ZSTD_LEVEL", "")
    if not (level.isdigit() and 1 <= int(level) <= 22):
        level = ZSTD_LEVEL
    return "--compression-level=%d" % int(level)


def mmap_pages(cpus=None, page=4096, rings=RINGS_EXACT):
    """Ring buffer pages per CPU for perf record -m (a power of two);
    rings: (bytes in all, least and most bytes per CPU)."""
    cpus = cpus or os.cpu_count() or 1
    budget, least, most = rings
    per_cpu = max(least, min(most, budget // cpus))
    pages = 1
    while pages * 2 * page <= per_cpu:
        pages *= 2
    return pages


class RecordError(Exception):
    """One line for the user; exit status 1."""


# How long a helper command (perf probe, ldd, mount) may take. perf probe
# answers in well under a second; one that does not answer has met a
# kernel whose trace event lock is stuck (seen on 6.18 after an Oops in
# the uprobe code: every later perf probe waits forever, unkillable).
COMMAND_TIMEOUT = 60


def run(cmd, timeout=COMMAND_TIMEOUT):
    """Runs cmd with its output captured (CompletedProcess, stdout bytes);
    never raises OSError, never waits longer than timeout seconds."""
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    except OSError as e:
        raise RecordError("cannot run %s: %s" % (cmd[0], e))
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        # No wait(): a process stuck in the kernel does not die of SIGKILL.
        raise RecordError("%s did not answer in %d s (%s): if dmesg shows an "
                          "Oops in uprobe code, the kernel needs a reboot"
                          % (os.path.basename(cmd[0]), timeout,
                             " ".join(cmd[1:])[:80]))
    return subprocess.CompletedProcess(cmd, proc.returncode, out)


def output_text(proc):
    return proc.stdout.decode("utf-8", "replace")


def first_error_line(text):
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("Hint"):
            return line
    return "no output"


# --- the program's environment -------------------------------------------

# perf copies --stack-size bytes of stack from the stack pointer and stops
# at the end of the stack mapping; the rest of the record keeps stale ring
# bytes that do not compress (twice the file size for the demo). The
# environment strings sit at the very top of the main thread's stack, so
# a variable of one stack copy's length puts the top at least that far
# above main, and every copy from the main thread is whole. Its bytes are
# all the same, so they compress to nothing in each copy that reaches
# them. include/rt_stack_top.h maps the hole the kernel leaves below the
# strings; docs/design.md, "Why the same program's file was sometimes
# twice as large", has the measurements.
STACK_PAD_VARIABLE = "ALLOCSITES_STACK_PAD"


def program_environment(base, stack_size, sample=None):
    """The environment perf passes on to the program it starts: base plus
    RT_SAMPLE_BYTES in sampled mode and the stack pad."""
    env = dict(base)
    if sample:
        env["RT_SAMPLE_BYTES"] = str(sample)
    # A value the caller set (even empty) is kept: bench/stack_top.py
    # records without the pad that way.
    env.setdefault(STACK_PAD_VARIABLE, "." * stack_size)
    return env


# --- environment --------------------------------------------------------

def find_perf():
    perf = shutil.which("perf")
    if perf is None:
        raise RecordError("perf not found: install it (Debian: apt-get install "
                          "linux-perf)")
    return perf


def perf_version():
    """perf's version ("6.1.187"), or None without a working perf."""
    perf = shutil.which("perf")
    if perf is None:
        return None
    try:
        out = subprocess.run([perf, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=10,
                             universal_newlines=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    words = out.split()
    return words[-1] if words else None


def check_privileges():
    """Creating uprobe events writes tracefs: root, or a user the admin
    let write uprobe_events, with perf_event_paranoid -1 for tracepoints."""
    if os.geteuid() == 0:
        return
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            paranoid = int(f.read().strip())
    except (OSError, ValueError):
        paranoid = 2
    if paranoid > -1:
        raise RecordError("needs root (or perf_event_paranoid -1 and write "
                          "access to tracefs): it is %d and you are not root; "
                          "try sudo" % paranoid)


def tracefs_mounted(mounts_text=None):
    """The tracefs mount point, or None."""
    if mounts_text is None:
        try:
            with open("/proc/mounts") as f:
                mounts_text = f.read()
        except OSError:
            return None
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "tracefs":
            return parts[1]
    return None


class Tracefs:
    """Makes sure tracefs is mounted; unmounts it afterwards only if this
    run mounted it (leave the machine as it was found)."""

    def __init__(self):
        self.mounted_here = False
        self.path = None

    def ensure(self):
        self.path = tracefs_mounted()
        if self.path is None:
            proc = run(["mount", "-t", "tracefs", "nodev", TRACEFS])
            if proc.returncode != 0:
                raise RecordError("tracefs is not mounted and mounting it at "
                                  "%s failed: %s" % (TRACEFS, first_error_line(
                                      output_text(proc))))
            self.mounted_here = True
            self.path = TRACEFS
        if not os.path.exists(os.path.join(self.path, "uprobe_events")):
            raise RecordError("this kernel has no uprobes (%s/uprobe_events "
                              "missing): CONFIG_UPROBE_EVENTS is needed"
                              % self.path)

    def release(self):
        if self.mounted_here:
            self.mounted_here = False
            try:
                run(["umount", self.path])
            except RecordError:
                pass


def tracefs_error(tracefs):
    """': LAST LINE' of tracefs' error_log (why the kernel refused a probe
    definition), or ''."""
    try:
        with open(os.path.join(tracefs, "error_log")) as f:
            lines = [l.strip() for l in f if l.strip()]
    except OSError:
        return ""
    return (": " + lines[-1]) if lines else ""


class EventLock:
    """Held while this run creates or deletes uprobe events.

    perf probe -f picks the next free name (alloc_1, alloc_2, ...) by
    reading the existing events, then writes the new one: two runs at the
    same moment pick the same name, and one fails with "Failed to write
    event: File exists" (3 of 8 runs started together). The lock is an
    flock on tracefs' uprobe_events itself, which every run has and which
    nothing has to clean up; it is released by the kernel if the run dies.
    Recordings themselves run in parallel."""

    def __init__(self, tracefs_path, timeout=COMMAND_TIMEOUT):
        self.path = os.path.join(tracefs_path, "uprobe_events")
        self.timeout = timeout
        self.fd = None

    def __enter__(self):
        try:
            self.fd = os.open(self.path, os.O_RDONLY)
        except OSError as e:
            raise RecordError("cannot open %s: %s" % (self.path, e.strerror))
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except OSError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    self.fd = None
                    raise RecordError("another allocsites has held %s for "
                                      "%d s" % (self.path, self.timeout))
                time.sleep(0.02)

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)   # releases the lock
            self.fd = None
        return False


# --- the program and its probes -----------------------------------------

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


def resolve_program(prog):
    """PROG as the shell would find it -> absolute path of an ELF file."""
    path = prog if "/" in prog else shutil.which(prog)
    if path is None or not os.path.exists(path):
        raise RecordError("program not found: %s" % prog)
    path = os.path.realpath(path)
    if not os.access(path, os.X_OK) or os.path.isdir(path):
        raise RecordError("not an executable file: %s" % prog)
    if elf.open_elf(path) is None:
        raise RecordError("not an ELF64 executable: %s (scripts need the "
                          "interpreter's probes, not supported)" % prog)
    return path


_LDD_RE = re.compile(r"=>\s*(/\S+)|^\s*(/\S+)\s+\(0x")


def shared_libraries(path):
    """Absolute paths of the libraries `path` links, as ldd resolves them.
    ldd is a shell script that runs the program's dynamic loader four
    times (30-40 ms); `LOADER --list PROG` is the one run that lists, so
    that is used when the program names a loader that exists."""
    image = elf.open_elf(path)
    loader = image.interpreter if image is not None else None
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


_ADDED_RE = re.compile(r"^\s*(sdt_rt:\w+)\s+\(on ")


def listed_events(tracefs):
    """The uprobe events tracefs lists, as perf names them ("sdt_rt:alloc"
    for the line "p:sdt_rt/alloc /path:0x..."), or None if unreadable."""
    try:
        with open(os.path.join(tracefs, "uprobe_events")) as f:
            return {line.split(None, 1)[0].split(":", 1)[-1].replace("/", ":", 1)
                    for line in f if line.strip()}
    except OSError:
        return None


class ProbeEvents:
    """The uprobe events of one run: created by add(), all removed by
    remove(). perf names events globally; with -f a name already taken
    (by another binary, or by someone else's event) becomes alloc_1,
    alloc_2..., so existing events are never replaced or deleted.

    perf probe reads SDT notes through perf's build-id cache (~/.debug),
    keyed by build-id. Two identical binaries at two paths (a copy, or the
    same sources built twice) share a build-id; once the cache maps it to
    the first path, `perf probe -x second` fails with only "Failed to add
    events". So each run gives perf probe a private cache, removed after."""

    def __init__(self, perf, tracefs=None):
        self.perf = perf
        self.tracefs = tracefs     # its path: to check what perf created
        self.state = None          # runstate.RunState: for a killed run
        self.created = []          # event names, e.g. "sdt_rt:alloc_1"
        self.cache = None          # private --buildid-dir

    def add(self, binary, probe):
        if self.cache is None:
            self.cache = tempfile.mkdtemp(prefix="allocsites-buildid-")
        proc = run([self.perf, "--buildid-dir", self.cache, "probe", "-f",
                    "-x", binary, "sdt_rt:" + probe])
        text = output_text(proc)
        names = [m.group(1) for m in map(_ADDED_RE.match, text.splitlines())
                 if m]
        if proc.returncode != 0 or not names:
            raise RecordError("perf probe could not add sdt_rt:%s in %s: %s"
                              % (probe, binary, first_error_line(text)))
        # perf 6.1 says "Added new event" and exits 0 for a path with a
        # space, but the kernel rejected the definition: nothing exists.
        # Only what exists is this run's to remove: a name perf merely
        # reported may be created later by another run, whose event this
        # run's clean-up (or a later one reading its state) must not
        # delete.
        missing = [n for i, n in enumerate(names)
                   if n not in names[:i] and not self.exists(n)]
        for name in names:
            if name not in self.created and name not in missing:
                self.created.append(name)
        if self.state is not None:
            self.state.note(events=self.created, dirs=[self.cache])
        if missing:
            raise RecordError(
                "perf probe reported %s in %s, but the kernel has no such "
                "event%s" % (" ".join(missing), binary,
                             ": perf cannot probe a path with a space; move "
                             "or link the file to a path without one"
                             if " " in binary else ""))
        return names[0]

    def add_plain(self, binary, kinds):
        """The probes of `kinds` (e.g. {"free", "exit"}) in binary, as
        probes of this run's one plain event (probedefs.py), written to
        tracefs directly. Returns the event's name, or None when they
        cannot be written that way (the caller then adds them with perf
        probe, one event each)."""
        return self._add_direct(binary, "plain", lambda image, name:
                                probedefs.definitions(binary, image, kinds,
                                                      name))

    def add_alloc(self, binary, probe):
        """Every site of the allocation probe ("alloc" or "sample") in
        binary, as probes of this run's one event for it (alloc_PID: the
        sites of every probed binary share it), written to tracefs
        directly; the event's name, or None as for add_plain."""
        return self._add_direct(binary, probe, lambda image, name:
                                probedefs.alloc_definitions(binary, image,
                                                            probe, name))

    def _add_direct(self, binary, what, definitions):
        image = elf.open_elf(binary)
        if image is None or self.tracefs is None:
            return None
        name = probedefs.event_name(os.getpid(), what)
        lines = definitions(image, name)
        if not lines:
            return None
        full = "%s:%s" % (probedefs.GROUP, name)
        appending = full in self.created
        if not appending:
            self.created.append(full)
        if self.state is not None:
            self.state.note(events=self.created)
        try:
            self._write(lines)
        except OSError as e:
            if appending and e.errno == errno.EINVAL:
                # The kernel appends a probe to an event only when its
                # fields have the same names and types: a binary built
                # with another header's argument sizes gets perf probe's
                # events of its own instead.
                return None
            raise RecordError("cannot add the probes of %s to %s: %s%s"
                              % (binary, full, e.strerror,
                                 tracefs_error(self.tracefs)))
        return full

    def exists(self, name):
        """Whether tracefs lists the uprobe event (True when unknown)."""
        if self.tracefs is None:
            return True
        listed = listed_events(self.tracefs)
        return listed is None or name in listed

    def remove(self):
        """Deletes the events this run created, in one perf probe call
        (perf takes -d repeatedly); name by name only if that fails, to
        know which. Returns the names that could not be removed."""
        failed = self.delete_named(self.created)
        self.created = []
        if self.cache is not None:
            shutil.rmtree(self.cache, ignore_errors=True)
            self.cache = None
        return failed

    def delete_named(self, names):
        """Deletes exactly these events; returns those that failed. By a
        write to tracefs ("-:GROUP/NAME" removes every probe of the
        event), else with perf probe -d (a perf process: ~10 ms)."""
        names = [n for n in names if not self._delete_direct(n)]
        if not names or self._delete(names):
            return []
        return [n for n in names if not self._delete([n])]

    def _delete_direct(self, name):
        if self.tracefs is None or ":" not in name:
            return False
        try:
            self._write(["-:%s" % name.replace(":", "/", 1)])
        except OSError:
            return False
        return True

    def _write(self, lines):
        """Each line to tracefs' uprobe_events, one write(2) per line (a
        definition, or a deletion): os.write, because Python's open(...,
        "a") seeks to the end first, which tracefs refuses (EINVAL).
        Raises OSError."""
        fd = os.open(os.path.join(self.tracefs, "uprobe_events"),
                     os.O_WRONLY | os.O_APPEND)
        try:
            for line in lines:
                os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)

    def _delete(self, names):
        cmd = [self.perf, "probe", "-q"]
        for name in names:
            cmd += ["-d", name]
        try:
            return run(cmd).returncode == 0
        except RecordError:
            return False


def record_command(perf, output, alloc_events, plain_events, stack_size,
                   argv, boost=0, pid=None, control=(), rings=RINGS_EXACT,
                   unwind="dwarf"):
    """plain_events: recorded without a call graph (frees, rt:exit).
    boost: perf runs that much nicer than the caller (see Boost); the
    program is then started through nice(1) to give it back. pid: attach
    to this running process instead of starting argv. control: perf's
    --control arguments (writerwake.Waker). rings: RINGS_EXACT or
    RINGS_SAMPLED. unwind: "dwarf" (stack copies of stack_size bytes),
    "fp" (the kernel walks the frame pointers; nothing copied) or "none"
    (no call graph: the cost floor)."""
    call_graph = [] if unwind == "none" else \
        ["--call-graph", "fp" if unwind == "fp" else "dwarf,%d" % stack_size]
    cmd = [perf, "record", "-o", output,
           "-m", str(mmap_pages(rings=rings))] + \
        [compression_flag()] + list(RECORD_FLAGS) + list(control) + \
        call_graph
    for name in alloc_events:
        cmd += ["-e", name]
    for name in plain_events:
        cmd += ["-e", "%s/call-graph=no/" % name]
    if pid is not None:
        return cmd + ["-p", str(pid)]
    if boost:
        argv = ["nice", "-n", str(boost), "--"] + list(argv)
    return cmd + ["--"] + list(argv)


def process_binaries(pid):
    """(executable, [mapped files with code]) of a running process, from
    /proc/PID/exe and /proc/PID/maps; a RecordError if there is none."""
    try:
        exe = os.path.realpath("/proc/%d/exe" % pid)
        with open("/proc/%d/maps" % pid) as f:
            maps = f.read().splitlines()
    except OSError as e:
        raise RecordError("-p %d: no such process or not readable (%s)"
                          % (pid, e.strerror))
    libs = []
    for line in maps:
        parts = line.split(None, 5)
        if len(parts) == 6 and "x" in parts[1] and parts[5].startswith("/"):
            path = os.path.realpath(parts[5].strip())
            if path != exe and path not in libs and os.path.isfile(path):
                libs.append(path)
    return exe, libs


class Boost:
    """Runs perf ahead of the program it records.

    perf's writer must drain the ring buffers as fast as the program fills
    them, and perf wakes it only when a ring is half full: if the writer
    then waits for a CPU, the other half fills and whole stretches of the
    run are lost (docs/design.md, "Recording defaults").

    Preferred: perf runs SCHED_FIFO at priority 1 with SCHED_RESET_ON_FORK,
    so its writer runs as soon as it wakes, and the program, which perf
    forks, is back to SCHED_OTHER at the caller's nice value. A Lua
    interpreter running luacheck lost events in 4 of 20 recordings
    without it and in none of 20 with it (bench/README.md, "A realtime
    writer"). Realtime throttling (sched_rt_runtime_us) still leaves the
    rest of the machine its share; the writer sleeps whenever the rings
    are drained. `realtime` is then True: preexec() sets it in perf's
    process before exec.

    Fallback, without the privilege to use SCHED_FIFO: this process lowers
    its own nice value by STEP while it starts perf (the child keeps it),
    and the program runs through `nice -n STEP`: back at the caller's
    priority, exactly (3 of 4 loaded runs of t_threads lost events at
    equal priority, none at -10). Without that privilege too, or without
    nice(1), nothing changes."""

    STEP = 10
    PRIORITY = 1

    def __init__(self):
        self.step = 0
        self.before = None
        self.realtime = False

    @classmethod
    def can_realtime(cls):
        """Whether this process may make a child SCHED_FIFO (tried on
        itself, then undone). ALLOCSITES_WRITER=nice in the environment
        asks for the fallback (bench/lossless_runs.py compares them)."""
        if not hasattr(os, "SCHED_RESET_ON_FORK") or \
                os.environ.get("ALLOCSITES_WRITER") == "nice":
            return False
        try:
            policy = os.sched_getscheduler(0)
            param = os.sched_getparam(0)
            os.sched_setscheduler(0, os.SCHED_FIFO,
                                  os.sched_param(cls.PRIORITY))
            os.sched_setscheduler(0, policy, param)
            return True
        except (OSError, AttributeError):
            return False

    def preexec(self):
        """In perf's process, before exec: the realtime policy."""
        if self.realtime:
            os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK,
                                  os.sched_param(self.PRIORITY))

    def __enter__(self):
        if self.can_realtime():
            self.realtime = True
            return self
        if shutil.which("nice") is None:
            return self
        try:
            self.before = os.getpriority(os.PRIO_PROCESS, 0)
            os.setpriority(os.PRIO_PROCESS, 0, self.before - self.STEP)
            self.step = self.STEP
        except OSError:
            self.before = None
        return self

    def __exit__(self, *exc):
        if self.step:
            os.setpriority(os.PRIO_PROCESS, 0, self.before)
        return False


def disk_full(path, room=1 << 20):
    """The one-line error when perf record ran out of disk for path, else
    None. perf then stops the program, exits 255 and leaves a header whose
    data size is still 0: nothing in the file can be read, so it is
    removed (it only holds the space the disk lacks)."""
    try:
        with open(path, "rb") as f:
            header = f.read(56)
        size = os.path.getsize(path)
        st = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if len(header) < 56 or header[:8] != PERF_MAGIC or free >= room or \
            struct.unpack("<Q", header[48:56])[0] != 0:
        return None
    try:
        os.unlink(path)
    except OSError:
        return ("disk full: perf stopped writing %s at %d bytes and stopped "
                "the program; the file is unusable" % (path, size))
    return ("disk full: perf stopped writing %s at %d bytes and stopped the "
            "program; nothing readable was recorded, the file is removed"
            % (path, size))


def buildids_path(data):
    """The file beside a recording with its probed binaries' build-ids."""
    return data + ".buildids"


def write_buildids(data, binaries):
    """{path: build-id} of the probed binaries, beside the recording (a
    JSON object); best effort."""
    ids = {}
    for path in binaries:
        image = elf.open_elf(path)
        bid = elf.build_id(image) if image is not None else None
        if bid:
            ids[path] = bid
    try:
        with open(buildids_path(data), "w") as f:
            json.dump(ids, f, indent=1, sort_keys=True)
    except OSError:
        pass


def is_regular(path):
    """Whether path is a regular file (after links): opening a FIFO or a
    device where a file is expected would block or read forever."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def read_buildids(data):
    """{path: {build-id}} from the file beside a recording, or {}."""
    if not is_regular(buildids_path(data)):
        return {}
    try:
        with open(buildids_path(data)) as f:
            ids = json.load(f)
        return {str(p): {str(b)} for p, b in ids.items()}
    except (OSError, ValueError, AttributeError):
        return {}


def check_output(path):
    """-o PATH may be written: absent, or a perf.data that perf will move
    to PATH.old (replacing a PATH.old only if that is a perf.data too).
    Returns the note to print ("" if none); a RecordError refuses a file
    that is not a recording, which perf would move away without a word
    and the next run would destroy."""
    def magic(p):
        try:
            with open(p, "rb") as f:
                return f.read(8)
        except OSError:
            return None
    if os.path.isdir(path):
        raise RecordError("-o %s is a directory" % path)
    if not os.path.lexists(path):
        return ""
    if magic(path) != PERF_MAGIC:
        raise RecordError("-o %s: the file exists and is not a perf.data "
                          "recording; not touching it (remove it or name "
                          "another file)" % path)
    old = path + ".old"
    if os.path.lexists(old) and magic(old) != PERF_MAGIC:
        raise RecordError("-o %s: perf would move the previous recording to "
                          "%s, which exists and is not a perf.data; not "
                          "touching it" % (path, old))
    return "allocsites: the previous %s is kept as %s\n" % (path, old)


UNFINISHED = ("%s is a recording perf never finished (its header was "
              "never completed: perf was killed, by a hangup for example, "
              "or is still writing it); record again and let it end with "
              "the program or Ctrl-C")


def finished(path):
    """False if path is a perf.data whose header perf never completed
    (check_perf_data's UNFINISHED): its data size, which perf writes
    last, when it finishes the file, is 0. Else True (whatever else it
    is)."""
    try:
        with open(path, "rb") as f:
            header = f.read(56)
    except OSError:
        return True
    return not (len(header) == 56 and header[:8] == PERF_MAGIC and
                struct.unpack("<Q", header[48:56])[0] == 0)


def check_perf_data(path):
    """A one-line error unless path is a readable perf.data file whose data
    section is all there (perf's own message for a file cut short is
    "incompatible file format (rerun with -v to learn more)")."""
    if os.path.exists(path) and not os.path.isdir(path) and \
            not is_regular(path):
        raise RecordError("%s: not a regular file (a pipe or a device): "
                          "report reads a perf.data file" % path)
    if os.path.isdir(path):
        raise RecordError("%s: a directory, not a perf.data file" % path)
    try:
        with open(path, "rb") as f:
            header = f.read(56)
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        raise RecordError("%s: no such file (record one first: allocsites "
                          "record -- PROG)" % path)
    except OSError as e:
        raise RecordError("%s: %s" % (path, e.strerror))
    if header[:8] != PERF_MAGIC:
        raise RecordError("%s: not a perf.data file" % path)
    # perf_file_header: magic, size, attr_size, attrs {offset, size},
    # data {offset, size}, ...
    if len(header) < 56:
        raise RecordError("%s is truncated or not a complete perf.data"
                          % path)
    data_offset, data_size = struct.unpack("<QQ", header[40:56])
    if not finished(path):
        raise RecordError(UNFINISHED % path)
    if size < data_offset + data_size:
        raise RecordError("%s is truncated or not a complete perf.data (%d "
                          "of its %d bytes of data are missing)"
                          % (path, data_offset + data_size - size, data_size))
