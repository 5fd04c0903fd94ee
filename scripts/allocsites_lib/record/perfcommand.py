"""The perf record command line, and why each option has its value.

The perf record command line: its options (compression, ring sizes,
call graph) and why each has the value it has.
"""

import os


# Recording options (docs/design.md, "Recording defaults", says why;
# docs/notes/2026-design-history.md has the measurements behind each):
#  - -z at zstd level 3 (--compression-level=3): zstd compresses the
#    stack copies (mostly unchanged stack between events) 70:1 or more,
#    so perf's writer keeps up with the program and the file stays small
#    (12-44 bytes per event instead of ~2.3 KB). Level 3 made files a
#    sixth to a half smaller than perf's default level 1 and lost nothing
#    in bench/lossless_runs.py; level 6 lost events (the writer falls
#    behind).
#  - 8192 bytes of user stack per sample: enough for an interpreter's
#    parser to reach main (docs/notes/2026-design-history.md,
#    "Stack copy size for a real interpreter (Lua 5.4)"); deeper stacks are cut
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
#    docs/notes/2026-design-history.md, "Recording defaults, as
#    measured"). The
#    probed binaries' build-ids go to FILE.buildids instead (perf skips
#    its own build-id pass with -z), so the report can tell a binary
#    rebuilt since the recording even when cp -p or rsync -a kept its old
#    modification time.
#  - Frees carry no call graph: the liveness sweep matches each to its
#    allocation by pointer, and the allocation has the stack; their stack
#    copies would double the data. Nor do rt:exit and the other probes
#    of the plain event (probedefs.py).
#  - Sampled mode takes the same rings (and writer priority and wakeups)
#    as exact mode. Its rings were smaller (32 MiB in all, 16 MiB per CPU
#    on two), on the reasoning that it records a few events a
#    millisecond; but a program allocating large blocks has nearly every
#    one sampled (1 - exp(-size/R)), at exact mode's event rate: under
#    load it lost 719 of 92,687 events where exact mode lost none
#    (issue 31; bench/sampled_loss.py). The larger rings cost their set-up
#    (docs/notes/2026-design-history.md, "Fixed cost of a recording").
DEFAULT_STACK_SIZE = 8192
RING_BUDGET = 256 << 20
RING_MIN, RING_MAX = 16 << 20, 128 << 20
RINGS_EXACT = (RING_BUDGET, RING_MIN, RING_MAX)
ZSTD_LEVEL = 3
RECORD_FLAGS = ("--no-bpf-event",)


def compression_flag(environ=os.environ):
    """perf's -z at ZSTD_LEVEL; ALLOCSITES_ZSTD_LEVEL=N (1 to 22) sets
    another level, as docs/notes/2026-design-history.md,
    "perf's zstd level", measured."""
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


def record_command(perf, output, alloc_events, plain_events, stack_size,
                   argv, boost=0, pid=None, control=(), rings=RINGS_EXACT,
                   unwind="dwarf", system_wide=False):
    """plain_events: recorded without a call graph (frees, rt:exit).
    boost: perf runs that much nicer than the caller (see Boost); the
    program is then started through nice(1) to give it back. pid: attach
    to this running process instead of starting argv. control: perf's
    --control arguments (writerwake.Waker). rings: (bytes in all, least
    and most per CPU), RINGS_EXACT in both modes. unwind: "dwarf" (stack copies of stack_size bytes),
    "fp" (the kernel walks the frame pointers; nothing copied) or "none"
    (no call graph: the cost floor). system_wide: every process's
    events while argv runs (-a), not argv's process tree only."""
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
    if system_wide:
        # per-CPU events instead of per-task ones inherited across fork:
        # on 6.18 the per-task uprobe filter loses forked siblings'
        # events (docs/limitations.md, its bullet on forked processes)
        cmd.append("-a")
    if pid is not None:
        return cmd + ["-p", str(pid)]
    if boost:
        argv = ["nice", "-n", str(boost), "--"] + list(argv)
    return cmd + ["--"] + list(argv)
