"""The recording cut into time ranges of equal cost, one per worker.

The recording cut into time ranges of about equal cost, one per perf
script worker, and the --time option that gives a worker its range.

perf's --time range is inclusive at both ends, in ns (time-utils.c:
perf_time__skip_sample drops t < start or t > end), so the ranges
[start_i, start_(i+1) - 1] hold every sample exactly once. Records perf
wrote twice share their nanosecond, so they land in the same worker,
where Tally's duplicate filter sees both.
"""

import bisect


def split(times, k, read_us=0.0, work=None):
    """Sorted sample times -> at most k ranges (start, end) of ns,
    inclusive; start None: from the beginning, end None: to the end.

    The ranges cost their workers the same, by this model: a worker reads
    the file up to its range's last sample and stops there (the last one
    reads it all), at read_us per sample read, and processes its own
    samples, at the us of work: (time, us) of a sample of the samples,
    sorted (each stands for len(times) / len(work) of them); without work
    every sample costs 1. With read_us 0 and no work the ranges hold equal
    numbers of samples. A run of equal times is never cut, so there may
    be fewer than k ranges. perf never drops a sample of time 0 for
    --time, so with one of those there is one range."""
    n = len(times)
    if k <= 1 or n == 0 or times[0] == 0:
        return [(None, None)]
    if work:
        work_times = [t for t, _ in work]
        scale = n / len(work)
        cumulative, total = [], 0.0
        for _, us in work:
            total += us * scale
            cumulative.append(total)

        def processed(j):   # cost of processing samples [0, j)
            i = bisect.bisect_right(work_times, times[j - 1]) if j else 0
            return cumulative[i - 1] if i else 0.0
    else:
        def processed(j):
            return float(j)

    def end_of(first, budget):
        """The smallest j > first with read_us * j + processed(j) -
        processed(first) >= budget (n when there is none)."""
        if first >= n:
            return n
        base = processed(first)
        lo, hi = first + 1, n
        while lo < hi:
            mid = (lo + hi) // 2
            if read_us * mid + processed(mid) - base >= budget:
                hi = mid
            else:
                lo = mid + 1
        return lo

    whole = read_us * n + processed(n)
    lo, hi = 0.0, whole
    for _ in range(50):   # the last worker's cost falls as budget grows
        budget = (lo + hi) / 2
        j = 0
        for _ in range(k - 1):
            j = end_of(j, budget)
        if whole - processed(j) > budget:
            lo = budget
        else:
            hi = budget
    ends, j = [], 0
    for _ in range(k - 1):
        j = end_of(j, hi)
        ends.append(j)
    starts = []
    for j in ends:
        if j >= n:
            break
        t = times[j]
        if t > times[0] and (not starts or t > starts[-1]):
            starts.append(t)
    ranges = []
    begin = None
    for st in starts:
        ranges.append((begin, st - 1))
        begin = st
    ranges.append((begin, None))
    return ranges


def format_time(ns):
    """ns -> perf's 'seconds.nanoseconds' (parse_nsec_time reads up to 9
    fraction digits)."""
    return "%d.%09d" % divmod(ns, 1000000000)


def time_option(start, end):
    """--time value for a range of split(), or None for the whole file."""
    if start is None and end is None:
        return None
    return "%s,%s" % ("" if start is None else format_time(start),
                      "" if end is None else format_time(end))


def describe_range(start, end):
    def fmt(ns):
        return "%d.%06d" % (ns // 1000000000, ns % 1000000000 // 1000)
    if start is None and end is None:
        return "the whole recording"
    return "samples from %s to %s" % (
        "the start" if start is None else fmt(start),
        "the end" if end is None else fmt(end))


def samples_in(times, start, end):
    """(index of the first, count) of the sorted times in [start, end]."""
    lo = 0 if start is None else bisect.bisect_left(times, start)
    hi = len(times) if end is None else bisect.bisect_right(times, end)
    return lo, hi - lo


# perf script's cost per sample, measured on the 213431 samples of
# minicc 500 (perf 6.1 on the 2-CPU VM, -z, 8 KiB stacks): reading the
# file, 7.0 s (3.9 ns a decompressed byte); handing the samples to
# allocsites.py, 8.0 s more. Its lexing samples (96 bytes of stack below
# main) cost less than its parsing ones (570): 22 us a sample and 0.064
# us a byte of stack to unwind give the 8.0 s and the best split of two
# workers found by trying (71% of the samples to the first). Reading an
# uncompressed file is a guess: a quarter of the cost (the page cache
# instead of zstd and fresh memory).
READ_US_PER_BYTE = {True: 0.0039, False: 0.001}
SAMPLE_US = 22.0
STACK_US_PER_BYTE = 0.064
MEAN_SAMPLE_US = 37.5   # without stack depths: minicc's mean


def costs(scan):
    """(read_us, work) for split(), from a perfdata.Scan."""
    if not scan.times:
        return 0.0, None
    per_sample = (scan.decompressed if scan.compressed else scan.data_size) \
        / len(scan.times)
    read_us = READ_US_PER_BYTE[scan.compressed] * per_sample
    if not scan.depths:
        return read_us / MEAN_SAMPLE_US, None
    return read_us, [(t, SAMPLE_US + STACK_US_PER_BYTE * depth)
                     for t, depth in scan.depths]
