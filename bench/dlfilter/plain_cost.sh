#!/bin/sh
# plain_cost.sh FILE [RUNS] - what perf's Python glue costs for the events
# without a call graph (frees and the rest of sdt_rt:plain_PID) of an
# allocsites recording: perf script -s noop.py (a handler that does
# nothing) over FILE, with and without --dlfilter drop_plain.so, which
# drops those events before perf builds their Python arguments. RUNS
# (default 3) of each, interleaved; prints wall, user and system seconds.
# Needs perf's dlfilter header (/usr/include/perf/perf_dlfilter.h, Debian
# linux-perf) and cc. No root. The difference is the most a report could
# save per pass over FILE by taking those events past Python (they would
# still have to reach the tally another way).
set -eu
FILE=${1:?usage: plain_cost.sh FILE [RUNS]}
RUNS=${2:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cc -O2 -shared -fPIC "$HERE/drop_plain.c" -o "$TMP/drop_plain.so"
echo "file: $FILE; $(nproc) CPUs, kernel $(uname -r), $(perf --version)"
for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "noop handler, all events:      %e s wall, %U s user, %S s sys" \
        perf script -i "$FILE" -s "$HERE/noop.py" >/dev/null 2>"$TMP/err1"
    tail -1 "$TMP/err1"
    /usr/bin/time -f "noop handler, plain dropped:   %e s wall, %U s user, %S s sys" \
        perf script -i "$FILE" --dlfilter "$TMP/drop_plain.so" \
        -s "$HERE/noop.py" >/dev/null 2>"$TMP/err2"
    tail -1 "$TMP/err2"
done
