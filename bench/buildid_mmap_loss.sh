#!/bin/sh
# buildid_mmap_loss.sh [RUNS]: does perf record's --buildid-mmap change
# how often a recording of the densest workload loses events?
#
# Records bench/lua_host running luacheck on three of its own files (Lua
# 5.4, its lua_Alloc annotated; build it with `make bench` or
# bench/lib/build.py) RUNS times (default 10) with each flag set, the
# wrapper's other perf options (-z, 128 MiB rings on 2 CPUs, 8 KiB
# stacks, perf 10 nice levels above the program), and prints per run the
# program's own count, the samples perf wrote and its LOST_SAMPLES
# count. The figures in docs/design.md ("Not --buildid-mmap") come from
# this script. Run as root; it creates one probe event and deletes
# exactly that one.
set -eu
runs=${1:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
host=${BUILD:-$root/build}/bench/lua_host
lc=/usr/share/lua/5.1/luacheck
[ -x "$host" ] || { echo "buildid_mmap_loss: $host not built" >&2; exit 1; }
cache=$(mktemp -d)
data=$(mktemp -u /tmp/buildid-mmap-XXXXXX.data)
event=$(perf --buildid-dir "$cache" probe -f -x "$host" sdt_rt:alloc 2>&1 |
        grep -o 'sdt_rt:alloc[_0-9]*' | head -1)
trap 'perf probe -q -d "$event"; rm -rf "$cache" "$data" "$data.old"' EXIT
for flags in "-m 32768" "-m 32768 --buildid-mmap"; do
    i=0
    while [ "$i" -lt "$runs" ]; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        allocs=$(nice -n -10 perf record -q -o "$data" $flags --no-bpf-event \
                 -z --call-graph dwarf,8192 -e "$event" -- nice -n 10 \
                 "$host" "$root/bench/luacheck_54.lua" --no-cache \
                 --no-color "$lc/parser.lua" "$lc/lexer.lua" "$lc/main.lua" \
                 2>&1 >/dev/null | grep -o 'allocs=[0-9]*')
        stats=$(perf report --stats -i "$data" 2>/dev/null)
        got=$(echo "$stats" | grep -m1 'SAMPLE events' | awk '{print $3}')
        lost=$(echo "$stats" | grep -m1 'LOST_SAMPLES' | awk '{print $3}')
        echo "$flags: $allocs samples=$got lost=${lost:-0}"
    done
done
