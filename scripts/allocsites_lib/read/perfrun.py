"""Facts about the perf run this script is inside, and what it lost.

A perf-script Python script is not told which perf.data it reads nor how
many samples the recording lost (perf 6.1 has no lost-event callback for
Python). Both are recovered here: the input path from perf's own command
line (/proc/self/cmdline: the script runs inside the perf process), and
the loss from `perf report --stats`, whose per-event section reads
    sdt_rt:alloc stats:
              SAMPLE events:      42170
        LOST_SAMPLES events:     157844
(the second number is samples lost, not records).
"""

import os
import re
import subprocess


def perf_argv(pid="self"):
    """perf's argv as a list of str ([] if unreadable)."""
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def input_path(argv):
    """The perf.data perf script reads, '-' for a pipe, from perf's argv."""
    args = argv[1:]
    # Only perf's own options: the script's come after "--" or after -s X.
    path = "perf.data"
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            break
        if a in ("-i", "--input") and i + 1 < len(args):
            path = args[i + 1]
            i += 2
            continue
        if a.startswith("--input="):
            path = a[len("--input="):]
        elif a.startswith("-i") and len(a) > 2 and not a.startswith("--"):
            path = a[2:]
        i += 1
    return path


def inline_expansion(argv):
    """True unless perf script was told --no-inline (see parse.py)."""
    return "--no-inline" not in argv[1:argv.index("--")] \
        if "--" in argv else "--no-inline" not in argv[1:]


_SECTION_RE = re.compile(r"^(\S+) stats:\s*$")
_LOST_RE = re.compile(r"^\s*LOST_SAMPLES events:\s*(\d+)")
_LOST_RECORDS_RE = re.compile(r"^\s*LOST events:\s*(\d+)")


_SAMPLES_RE = re.compile(r"^\s*SAMPLE events:\s*(\d+)")


def _stat_lines(text):
    """(section, line) for each line of `perf report --stats` output;
    section is "Aggregated", an event name, or None before the first."""
    section = None
    for line in text.splitlines():
        m = _SECTION_RE.match(line)
        if m:
            section = m.group(1)
        else:
            yield section, line


def event_samples(text):
    """{event: samples recorded} from the per-event sections of
    `perf report --stats` output."""
    samples = {}
    for section, line in _stat_lines(text):
        m = _SAMPLES_RE.match(line)
        if m and section and section != "Aggregated":
            samples[section] = samples.get(section, 0) + int(m.group(1))
    return samples


def stats_text(path, perf="perf", timeout=120):
    """`perf report --stats -i path` output, or raise OSError/SubprocessError
    (a failing perf must not read as "nothing lost")."""
    return subprocess.run([perf, "report", "--stats", "-i", path],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, timeout=timeout,
                          check=True).stdout.decode("utf-8", "replace")


def parse_stats(text, event_prefix="sdt_rt:"):
    """Lost samples of the rt events from `perf report --stats` output.

    Returns (lost, records): lost = sum of per-event LOST_SAMPLES for
    events whose name starts with event_prefix; records = the number of
    PERF_RECORD_LOST records in the aggregate section (each says some
    samples were dropped, so lost == 0 with records > 0 is not clean)."""
    lost = records = 0
    for section, line in _stat_lines(text):
        m = _LOST_RE.match(line)
        if m and section and section.startswith(event_prefix):
            lost += int(m.group(1))
            continue
        m = _LOST_RECORDS_RE.match(line)
        if m and section in (None, "Aggregated"):
            records += int(m.group(1))
    return lost, records


def count_lost(path, perf="perf", timeout=120):
    """Samples of rt events lost in the recording at `path`.

    Returns (lost, None) or (None, reason) when it cannot be known."""
    if path == "-":
        return None, "input is a pipe; run perf report --stats on a file"
    if not os.path.exists(path):
        return None, "%s not found" % path
    try:
        out = stats_text(path, perf, timeout)
    except (OSError, subprocess.SubprocessError) as e:
        return None, "perf report --stats failed: %s" % e
    return lost_from_stats(out)


def _stats_failure(text):
    """Why `perf report --stats` output holds no statistics, or None.
    perf 6.1 exits 0 after "Error:" when it cannot read a file (a
    pipe-mode recording with tracing data: "failed to process type"), and
    nothing it printed may read as "nothing lost"."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith("Error:"):
            said = line[len("Error:"):].strip() or \
                (lines[i + 1] if i + 1 < len(lines) else "")
            return "perf report --stats could not read the file%s" % (
                ": " + said if said else "")
    if not any(_SECTION_RE.match(line) for line in lines):
        return "perf report --stats printed no statistics"
    return None


def lost_from_stats(text):
    """(lost, None), or (None, reason) when `perf report --stats` text says
    samples were dropped but kept no count: then the profile is not clean,
    and must not read as 0 lost."""
    failed = _stats_failure(text)
    if failed:
        return None, failed
    lost, records = parse_stats(text)
    if lost == 0 and records > 0:
        return None, "%d PERF_RECORD_LOST records without a count" % records
    return lost, None


def data_path(perf_argv):
    """The perf.data perf script reads (from perf's argv), absolute, or '-'."""
    path = input_path(perf_argv)
    return path if path == "-" else os.path.abspath(path)
