#!/bin/bash
# redzone.sh - does the optimized (call-based) uprobe clobber the red zone?
# Builds redzone_1 (1-byte nop) and redzone_5 (5-byte nop), records their
# probes with perf, and prints what the program found below %rsp.
# (Same commands as run by hand for REPORT.md; exit status of redzone_* is
# 1 when corruption was seen.)
set -u
cd "$(dirname "$0")" || exit 1
gcc -O2 -g -Wall -DNOP5=0 -DPNAME=rz1 redzone.c -o redzone_1 || exit 1
gcc -O2 -g -Wall -DNOP5=1 -DPNAME=rz5 redzone.c -o redzone_5 || exit 1
trap 'perf probe -q -d "sdt_nopx:rz*" >/dev/null 2>&1; rm -rf data' EXIT
mkdir -p data
for v in 1 5; do for t in a c; do perf probe -q -x ./redzone_$v sdt_nopx:rz$v$t || exit 1; done; done
for v in 1 5; do
    echo "== redzone_$v (perf record -e sdt_nopx:rz${v}a -e sdt_nopx:rz${v}c)"
    perf record -q -e sdt_nopx:rz${v}a -e sdt_nopx:rz${v}c -o data/rz.data ./redzone_$v 1000
    echo "exit=$?"
done
echo "== redzone_5 under perf stat -e sdt_nopx:rz5c (counting only)"
perf stat -e sdt_nopx:rz5c ./redzone_5 1000 2>&1 | grep -E "calls=|sdt_nopx"
