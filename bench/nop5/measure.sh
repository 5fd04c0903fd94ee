#!/bin/bash
# measure.sh - cost per recorded USDT event: 1-byte nop (sys/sdt.h) vs
# 5-byte nop (0f 1f 44 00 00) probe site, on this kernel, with perf.
#
# Usage: ./measure.sh [REPS]            (default 5; about 4-6 minutes)
# Env:   N_NATIVE (2000000) N_REC (200000) N_DWARF (100000)
#
# For each rep, interleaved (the order of p1/p5 alternates per rep):
#   native : ./probe_V N_NATIVE                    (no event)
#   stat   : perf stat -e sdt_nopx:V,syscalls:sys_enter_uprobe   (counting)
#   rec    : perf record -e sdt_nopx:V             (no call graph)
#   dwarf  : perf record -e sdt_nopx:V --call-graph dwarf,8192 -z -m 16384
#            --no-bpf-event   (+ perf report --stats for the lost count)
#   sem    : perf record -e sdt_nopx:sV            (semaphore-guarded probe)
# The program prints its own loop time (wall, CLOCK_MONOTONIC) and CPU time
# (CLOCK_PROCESS_CPUTIME_ID). Raw results: results.csv; summary: summary.md.
# Creates the sdt_nopx:* events and deletes them on exit (never touches
# other groups).
set -u
cd "$(dirname "$0")" || exit 1
REPS=${1:-5}
N_NATIVE=${N_NATIVE:-2000000}
N_REC=${N_REC:-200000}
N_DWARF=${N_DWARF:-100000}
DATA=$(mktemp -d)
mkdir -p $DATA

cleanup() { perf probe -q -d "sdt_nopx:*" >/dev/null 2>&1; rm -rf "$DATA"; }
trap cleanup EXIT

./build.sh || exit 1
perf probe -q -d 'sdt_nopx:*' >/dev/null 2>&1
for v in p1 p5 s1 s5; do
    perf probe -q -x ./probe_$v sdt_nopx:$v || { echo "perf probe $v failed"; exit 1; }
done
grep ' sdt_nopx/\|^p:sdt_nopx' /sys/kernel/tracing/uprobe_events

CSV=results.csv
echo "variant,mode,rep,n,loop_s,cpu_s,samples,lost,uprobe_syscalls" >$CSV

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | head -1; }

run() { # variant mode rep
    local v=$1 mode=$2 rep=$3 out n samples="" lost="" sys=""
    case $mode in
    native)
        n=$N_NATIVE; out=$(./probe_$v $n 2>&1) ;;
    stat)
        n=$N_REC
        out=$(perf stat -x, -e sdt_nopx:$v,syscalls:sys_enter_uprobe ./probe_$v $n 2>&1)
        samples=$(echo "$out" | awk -F, -v e="sdt_nopx:$v" '$3==e{print $1}')
        sys=$(echo "$out" | awk -F, '$3=="syscalls:sys_enter_uprobe"{print $1}') ;;
    rec)
        n=$N_REC
        out=$(perf record -e sdt_nopx:$v -o $DATA/rec.data ./probe_$v $n 2>&1)
        samples=$(echo "$out" | sed -n 's/.*(\([0-9]*\) samples).*/\1/p')
        lost=$((n - ${samples:-0})) ;;
    dwarf)
        n=$N_DWARF
        out=$(perf record -e sdt_nopx:$v --call-graph dwarf,8192 -z -m 16384 \
                  --no-bpf-event -o $DATA/dwarf.data ./probe_$v $n 2>&1)
        st=$(perf report --stats -i $DATA/dwarf.data 2>/dev/null)
        samples=$(echo "$st" | awk '/SAMPLE events:/{print $3; exit}')
        lost=$(echo "$st" | awk '/LOST_SAMPLES events:/{v=$3} END{print v+0}') ;;
    sem)
        n=$N_REC; v=s${v#p}
        out=$(perf record -e sdt_nopx:$v -o $DATA/rec.data ./probe_$v $n 2>&1)
        samples=$(echo "$out" | sed -n 's/.*(\([0-9]*\) samples).*/\1/p')
        lost=$((n - ${samples:-0})) ;;
    esac
    local loop cpu
    loop=$(echo "$out" | field loop_s); cpu=$(echo "$out" | field cpu_s)
    echo "$v,$mode,$rep,$n,$loop,$cpu,$samples,$lost,$sys" | tee -a $CSV
    rm -f $DATA/*.data
}

start=$(date +%s)
for rep in $(seq 1 $REPS); do
    if [ $((rep % 2)) = 1 ]; then order="p1 p5"; else order="p5 p1"; fi
    for mode in native stat rec dwarf sem; do
        for v in $order; do run $v $mode $rep; done
    done
done
echo "elapsed $(( $(date +%s) - start )) s"
/usr/bin/python3 summarize.py $CSV | tee summary.md
