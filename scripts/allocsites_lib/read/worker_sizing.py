"""How many perf script workers a report runs.

How many perf script workers a report runs: the CPUs it may use and
other processes leave free, the memory, the samples.

limits.py knows the machine's and the cgroup's limits; this module turns
them, and the load other processes put on the CPUs, into a worker count.
"""

import os
import time

from . import limits

MIN_SAMPLES_PER_WORKER = 20000  # below this a second perf process costs more


def worker_count(cpus, samples, decompressed, mem_available, free=None):
    """How many workers: one per CPU, but not more than the samples
    justify, nor more than the memory holds (perf 6.1 keeps every
    decompressed record of a -z file in memory until it exits), nor more
    than the CPUs other processes left free (free, from cpu_use(); every
    worker reads the file, so a worker without a CPU of its own costs
    more than it saves)."""
    k = max(1, cpus)
    k = min(k, max(1, samples // MIN_SAMPLES_PER_WORKER))
    if decompressed and mem_available:
        k = min(k, max(1, mem_available // (decompressed + (64 << 20))))
    if free is not None:
        k = min(k, max(1, int(free + 0.5)))
    return k


def cpu_use():
    """(busy CPU seconds of the machine, of this process, monotonic time):
    two of them give the CPUs other processes kept busy in between."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None
    busy = (sum(fields) - fields[3] - fields[4]) / ticks
    mine = os.times()
    return busy, mine.user + mine.system, time.monotonic()


def free_cpus(before, after, cpus):
    """CPUs not used by other processes between two cpu_use() values, or
    None when the interval is too short to tell."""
    if before is None or after is None or after[2] - before[2] < 0.1:
        return None
    others = (after[0] - before[0]) - (after[1] - before[1])
    return max(0.0, cpus - others / (after[2] - before[2]))


def cpu_count():
    """CPUs this process may use: its affinity, within its cgroup's quota
    (cpu.max), which a container sets and the CPU count does not show."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = os.cpu_count() or 1
    return limits.cpus_available(affinity)


def mem_available():
    """Bytes available: MemAvailable, within the cgroup's memory.max."""
    return limits.memory_available()
