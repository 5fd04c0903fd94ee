"""The recording's scan, kept beside it (DATA.scan) for the report.

`allocsites record` scans the file it wrote for its summary line
(perfdata.scan: every record read, the compressed ones decompressed:
0.68 s for the demo: docs/notes/2026-design-history.md, "The report's
own parts"), and
`allocsites report` needs the same scan to split the file among its
workers. So record writes the scan here and the
report reads it back (0.055 s) instead of scanning again.

The file is trusted only for the exact bytes it was made from: it holds a
SHA-256 digest of the whole recording (SHA-256, not BLAKE2b: x86 CPUs
with the SHA extensions compute it in hardware, and the report waits
for it before it reads), and anything else (another recording at the same path, a file edited or
damaged since, a sidecar of another version) is ignored and the report
scans as before. No pickle: a file planted beside someone's perf.data
must not run code in the report, so the format is data only:

    allocsites-scan 4\\n
    one line of JSON: the digest, the size, the scan's small fields\\n
    the sample times, little-endian int64, as many as the JSON says

Hashing the whole recording held the report 0.13 s before its reader
could start on minicc's 10^7-allocation fp recording (163 MB; by hand,
cProfile), and grows with the file. So the JSON
also holds the recording's stat (device, inode, size, mtime and ctime
in ns) and the time the digest began ("stamp"): when the stat is the
same and the recording had not changed for SETTLED_NS before the stamp,
the digest is not computed again. That is git's rule for its index
("racily clean" entries are hashed): any write to the file after the
stamp gives it a ctime later than the one kept (a clock tick is
milliseconds, SETTLED_NS seconds), and no one can set a ctime back. A
file changed less than SETTLED_NS before its digest (record writes the
sidecar right after perf exits) is hashed at the next report; the
report then keeps the settled stat, so the one after skips the hash.

Writing is best effort (a read-only directory just means no sidecar).
"""

import array
import hashlib
import json
import os
import stat
import sys
import time

from . import perfdata

MAGIC = b"allocsites-scan 4\n"   # 3: started and ended processes; 4: SHA-256


def path_for(data):
    return data + ".scan"


DIGEST_BLOCK = 1 << 20
SETTLED_NS = 3 * 10 ** 9   # a coarse file system clock ticks in 2 s


def stat_key(data):
    """The stat fields a change to the file's bytes changes:
    [device, inode, size, mtime ns, ctime ns]."""
    st = os.stat(data)
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
            st.st_ctime_ns]


def settled(key, stamp):
    """Whether a file of stat key, digested from time stamp (ns) on,
    cannot have changed since without its key changing: its last change
    came SETTLED_NS before the stamp."""
    return isinstance(key, list) and len(key) == 5 and \
        all(type(v) is int for v in key) and type(stamp) is int and \
        key[4] < stamp - SETTLED_NS


def digest(data):
    """(size, hex digest) of the file at data. Read a block at a time, not
    mapped: a mapped recording's pages count in the report's resident
    memory (570 MB of a 662 MB peak for 10^7 allocations), read ones in
    one reused buffer do not."""
    h = hashlib.sha256()
    buf = bytearray(DIGEST_BLOCK)
    view = memoryview(buf)
    size = 0
    with open(data, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(view[:n])
            size += n
    return size, h.hexdigest()


def _fields(scan):
    return {
        "samples": scan.samples,
        "event_samples": scan.event_samples,
        "duplicate_samples": scan.duplicate_samples,
        "lost_samples": scan.lost_samples,
        "lost_records": scan.lost_records,
        "decompressed": scan.decompressed,
        "compressed": scan.compressed,
        "data_size": scan.data_size,
        "all_tracepoints": scan.all_tracepoints,
        "build_ids": {p: sorted(ids) for p, ids in scan.build_ids.items()},
        "unwind": scan.unwind,
        "stack_size": scan.stack_size,
        "cmdline": scan.cmdline,
        "code": sorted(scan.code),
        "tail_cut": scan.tail_cut,
        "pids": sorted(scan.pids.items()),
        "depths": [list(d) for d in scan.depths],
        "started": sorted(scan.started),
        "ended": sorted(scan.ended),
        "stopped": scan.stopped,
    }


def save(data, scan):
    """Writes DATA.scan for the recording at data (best effort)."""
    try:
        key, stamp = stat_key(data), time.time_ns()
        size, hexdigest = digest(data)
        if stat_key(data) != key:   # changed while hashed
            key = None
        kept = isinstance(scan.times, list)
        times = array.array("q", scan.times if kept else ())
        if sys.byteorder != "little":
            times.byteswap()
        # times -1: the scan kept none (perfdata.scan(keep_times=False)),
        # and a report that needs them scans again
        head = {"digest": hexdigest, "size": size, "stat": key,
                "stamp": stamp, "times": len(times) if kept else -1,
                "scan": _fields(scan)}
        _write(data, head, times.tobytes())
    except (OSError, ValueError, TypeError, OverflowError):
        pass


def _write(data, head, rest):
    """DATA.scan made of head (the JSON line) and rest (the times' bytes),
    written whole or not at all (best effort)."""
    path = path_for(data)
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC)
            f.write(json.dumps(head, separators=(",", ":")).encode() + b"\n")
            f.write(rest)
        os.replace(tmp, path)
    except (OSError, ValueError, TypeError, OverflowError):
        try:
            os.unlink(tmp)
        except OSError:
            pass


def load(data, keep_times=True):
    """The Scan kept beside data if it was made from these very bytes,
    else None. keep_times False: its times are not read (None)."""
    try:
        if not stat.S_ISREG(os.stat(path_for(data)).st_mode):
            return None   # a FIFO would block the report
    except OSError:
        return None
    try:
        with open(path_for(data), "rb") as f:
            if f.readline() != MAGIC:
                return None
            head = json.loads(f.readline().decode())
            trusted = _trusted(data, head)
            rest = f.read() if keep_times or not trusted else b""
        if not trusted and not _verified(data, head, rest):
            return None
        n = head["times"]
        if not keep_times:
            return _scan_of(head["scan"], None)
        if n < 0:
            return None   # kept without its times
        times = array.array("q")
        times.frombytes(rest[:8 * n])
        if len(times) != n:
            return None
        if sys.byteorder != "little":
            times.byteswap()
        return _scan_of(head["scan"], times.tolist())
    except (OSError, ValueError, KeyError, TypeError, AttributeError,
            RecursionError):
        return None


def _trusted(data, head):
    """Whether the sidecar's stat is data's, settled (no digest needed)."""
    key = stat_key(data)
    return head.get("stat") == key and settled(key, head.get("stamp"))


def _verified(data, head, rest):
    """Whether data's digest is the sidecar's; if so and data is settled
    now, the sidecar keeps its stat, so that the next report need not
    hash it again."""
    key, stamp = stat_key(data), time.time_ns()
    if (head["size"], head["digest"]) != digest(data):
        return False
    if stat_key(data) == key and settled(key, stamp):
        _write(data, dict(head, stat=key, stamp=stamp), rest)
    return True


def _scan_of(fields, times):
    scan = perfdata.Scan()
    scan.times = times
    scan.samples = int(fields["samples"])
    scan.event_samples = {str(k): int(v)
                          for k, v in fields["event_samples"].items()}
    scan.duplicate_samples = {str(k): int(v) for k, v in
                              fields["duplicate_samples"].items()}
    scan.lost_samples = {str(k): int(v)
                         for k, v in fields["lost_samples"].items()}
    scan.lost_records = int(fields["lost_records"])
    scan.decompressed = int(fields["decompressed"])
    scan.compressed = bool(fields["compressed"])
    scan.data_size = int(fields["data_size"])
    scan.all_tracepoints = bool(fields["all_tracepoints"])
    scan.build_ids = {str(p): set(map(str, ids))
                      for p, ids in fields["build_ids"].items()}
    scan.cmdline = [str(a) for a in fields["cmdline"]]
    scan.code = set(map(str, fields["code"]))
    scan.tail_cut = int(fields["tail_cut"])
    scan.unwind = fields.get("unwind")
    if scan.unwind not in (None, "dwarf", "fp", "none"):
        raise ValueError("unwind")
    scan.stack_size = int(fields.get("stack_size") or 0)
    if scan.stack_size < 0:
        raise ValueError("stack_size")
    scan.pids = {int(tid): int(pid) for tid, pid in fields["pids"]}
    scan.depths = [(int(t), int(b)) for t, b in fields["depths"]]
    scan.started = set(map(int, fields["started"]))
    scan.ended = set(map(int, fields["ended"]))
    scan.stopped = fields["stopped"]
    if scan.stopped not in (None, "SIGINT"):
        raise ValueError("stopped")
    return scan


def scan(data, keep_times=True):
    """load(data), or perfdata.scan(data) (which raises PerfDataError)."""
    kept = load(data, keep_times)
    return kept if kept is not None else perfdata.scan(data, keep_times)
