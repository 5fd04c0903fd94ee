"""What this process may use: memory and CPUs, cgroup limits included.

A container's limit is not what /proc/meminfo or the CPU count show: a
report that sized itself from those was killed by the OOM killer in a
14 GB container. The cgroup (v2: memory.max, memory.current, cpu.max;
v1: memory.limit_in_bytes, memory.usage_in_bytes, cpu.cfs_quota_us and
cpu.cfs_period_us) of this process bounds them further.

And the report's own need, estimated before it starts (fits() for the
perf script workers' memory, native_fits() for the native reader's event
log on disk), so that a recording too large for this machine is refused
with the figure and the way out instead of ending in "killed by signal
9" or a full disk.
"""

import os

# The perf script workers' report: perf 6.1 holds every decompressed
# record until it exits, and the workers' event logs stay in memory
# (35 bytes an event, eventlog.py) until the liveness sweep, which holds
# every live allocation: 200-225 bytes an event measured on minicc with
# 10^6 allocations and as many frees (bench/scaling.py); 256 with a margin.
REPORT_BYTES_PER_EVENT = 256
REPORT_BASE_BYTES = 150 << 20
# The native report's event log goes to TMPDIR (eventlog.py: 35 bytes an
# event and array slack): 40 with a margin.
LOG_BYTES_PER_EVENT = 40


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def cgroup_dir(proc_cgroup="/proc/self/cgroup", root="/sys/fs/cgroup"):
    """(version, directories) of this process's cgroup: v2's one directory,
    or v1's memory and cpu controllers' ({controller: directory})."""
    text = _read(proc_cgroup)
    if not text:
        return None, {}
    dirs = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _id, controllers, path = parts
        if controllers == "":
            return 2, {"unified": os.path.join(root, path.lstrip("/"))}
        for c in controllers.split(","):
            if c in ("memory", "cpu"):
                dirs[c] = os.path.join(root, c, path.lstrip("/"))
    return (1, dirs) if dirs else (None, {})


def _number(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def cgroup_memory_left(version=None, dirs=None):
    """Bytes the cgroup still allows (limit - usage), or None without a
    limit."""
    if version is None:
        version, dirs = cgroup_dir()
    if version == 2:
        d = dirs["unified"]
        limit = _number(_read(os.path.join(d, "memory.max")))
        usage = _number(_read(os.path.join(d, "memory.current")))
    elif version == 1 and "memory" in dirs:
        d = dirs["memory"]
        limit = _number(_read(os.path.join(d, "memory.limit_in_bytes")))
        usage = _number(_read(os.path.join(d, "memory.usage_in_bytes")))
        if limit is not None and limit >= 1 << 60:   # v1's "no limit"
            limit = None
    else:
        return None
    if limit is None:
        return None
    return max(0, limit - (usage or 0))


def cgroup_cpus(version=None, dirs=None):
    """CPUs the cgroup's quota allows (a float), or None without one."""
    if version is None:
        version, dirs = cgroup_dir()
    quota = period = None
    if version == 2:
        text = _read(os.path.join(dirs["unified"], "cpu.max"))
        if text:
            q, _, p = text.partition(" ")
            quota, period = _number(q), _number(p)
    elif version == 1 and "cpu" in dirs:
        quota = _number(_read(os.path.join(dirs["cpu"], "cpu.cfs_quota_us")))
        period = _number(_read(os.path.join(dirs["cpu"],
                                            "cpu.cfs_period_us")))
    if not quota or quota < 0 or not period:
        return None
    return quota / period


def meminfo_available(path="/proc/meminfo"):
    text = _read(path)
    for line in (text or "").splitlines():
        if line.startswith("MemAvailable:"):
            return _number(line.split()[1]) * 1024
    return None


def memory_available(environ=os.environ):
    """The smaller of MemAvailable and what the cgroup still allows (bytes),
    or None when neither is known; ALLOCSITES_MEMORY (bytes) bounds it
    further (a user's share of a shared machine; the tests)."""
    known = [v for v in (meminfo_available(), cgroup_memory_left(),
                         _number(environ.get("ALLOCSITES_MEMORY")))
             if v is not None]
    return min(known) if known else None


def cpus_available(affinity):
    """The CPUs this process may run on, within the cgroup's quota."""
    quota = cgroup_cpus()
    if quota is None:
        return affinity
    return max(1, min(affinity, int(quota)))


def report_need(events, decompressed=0):
    """Bytes the perf script report is estimated to need."""
    return REPORT_BASE_BYTES + REPORT_BYTES_PER_EVENT * events + \
        (decompressed or 0)


def fits(events, available, decompressed=0):
    """None if the perf script report of events fits in available bytes
    (or either is unknown), else the message that says it does not and
    what to do."""
    if not events or available is None:
        return None
    need = report_need(events, decompressed)
    if need <= available:
        return None
    held = " and perf script holds the %.1f GB the recording " \
        "decompresses to" % (decompressed / 1e9) if decompressed else ""
    return ("its report needs about %.1f GB of memory (%d events at about "
            "%d bytes each%s) and %.1f GB are available here (the least of "
            "MemAvailable, this cgroup's memory.max and ALLOCSITES_MEMORY): "
            "use the native reader (make builds it; ALLOCSITES_READER=perf "
            "must not be set), record a shorter run, or record with --sample "
            "(its report holds only the samples)"
            % (need / 1e9, events, REPORT_BYTES_PER_EVENT, held,
               available / 1e9))


def disk_free(directory):
    try:
        st = os.statvfs(directory)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def native_fits(events, directory, free=None):
    """None if the native report's event log of events fits in the free
    space of directory (TMPDIR), else the message that says it does not.
    Its memory is the live allocations and the distinct stacks, which no
    figure known before the report tells."""
    free = disk_free(directory) if free is None else free
    if not events or free is None:
        return None
    need = LOG_BYTES_PER_EVENT * events
    if need <= free:
        return None
    return ("its event log needs about %.1f GB in %s (%d events at %d bytes "
            "each) and %.1f GB are free there: set TMPDIR to a larger "
            "filesystem, or record with --sample"
            % (need / 1e9, directory, events, LOG_BYTES_PER_EVENT, free / 1e9))
