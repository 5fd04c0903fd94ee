#!/bin/sh
# perf_faults.sh - reproduce the two perf 6.1 faults docs/design.md
# describes, on this machine's perf and kernel:
#   1. perf record -z drops samples silently (neither SAMPLE nor LOST);
#   2. perf record writes some sample records twice (same thread and ns).
# Usage (root, from the repository top, after make all):
#   sh bench/perf_faults.sh [RUNS]
# Prints one line per recording. Removes its probe events and files.
set -eu
runs=${1:-10}
prog=build/tests/t_basic        # 9322 allocations with argument 3000
burst=build/bench/burst         # 750000 allocations
[ -x "$prog" ] || { echo "perf_faults: run make all first" >&2; exit 1; }
[ -x "$burst" ] || /usr/bin/python3 bench/offcost_callgrind.py --pairs 1 >/dev/null
tmp=$(mktemp -d)
ev=""
# Deletes only the event this script created (others may be recording
# theirs: deleting an event perf still records crashes kernel 6.18, see
# docs/design.md), after the foreground perf has exited.
cleanup() { [ -z "$ev" ] || perf probe -q -d "$ev" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
grep -q tracefs /proc/mounts || { echo "perf_faults: mount tracefs first" >&2; exit 1; }

samples() {  # "SAMPLES LOST" of sdt_rt:alloc* in a perf.data
    perf report --stats -i "$1" 2>/dev/null | awk '
        /^sdt_rt:alloc.* stats:/ { on = 1; next }
        / stats:/ { on = 0 }
        on && /SAMPLE events/ { s += $NF }
        on && /LOST_SAMPLES events/ { l += $NF }
        END { printf "%d %d\n", s, l }'
}

# A private build-id cache: see ProbeEvents in scripts/allocsites_lib/recorder.py.
# -f: if sdt_rt:alloc is taken, perf names this one sdt_rt:alloc_N.
add_event() {
    perf --buildid-dir "$tmp/cache" probe -f -x "$1" sdt_rt:alloc 2>&1 |
        sed -n 's/^ *\(sdt_rt:alloc[_0-9]*\) .*/\1/p' | head -n 1
}
ev=$(add_event "$prog")
echo "1. -z: $prog 3000 makes 9322 allocations; each line: samples lost"
for m in 65536 1024; do
    for _ in $(seq "$runs"); do
        perf record -q -z -m $m --call-graph dwarf,4096 -e "$ev" \
            -o "$tmp/z.data" -- "$prog" 3000 >/dev/null 2>&1
        echo "   -z -m $m: $(samples "$tmp/z.data")"
    done
done
for _ in $(seq "$runs"); do
    perf record -q -m 65536 --call-graph dwarf,4096 -e "$ev" \
        -o "$tmp/n.data" -- "$prog" 3000 >/dev/null 2>&1
    echo "   no -z -m 65536: $(samples "$tmp/n.data")"
done
perf probe -q -d "$ev"

ev=$(add_event "$burst")
echo "2. duplicates: $burst makes 750000 allocations; each line: samples lost"
for m in 65536 16384 4096; do
    for _ in 1 2 3; do
        perf record -q -m $m --call-graph dwarf,2048 -e "$ev" \
            -o "$tmp/d.data" -- "$burst" >/dev/null 2>&1
        echo "   -m $m: $(samples "$tmp/d.data")  (more than 750000 + lost = records written twice)"
    done
done
