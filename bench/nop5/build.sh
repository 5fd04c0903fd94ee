#!/bin/sh
# Build the four probe variants: p1 (1-byte nop), p5 (5-byte nop),
# s1/s5 (same, semaphore-guarded).
set -e
cd "$(dirname "$0")" || exit 1
CC=${CC:-gcc}
CFLAGS="-O2 -g -Wall"
$CC $CFLAGS -DNOP5=0 -DSEM=0 -DPNAME=p1 probe.c -o probe_p1
$CC $CFLAGS -DNOP5=1 -DSEM=0 -DPNAME=p5 probe.c -o probe_p5
$CC $CFLAGS -DNOP5=0 -DSEM=1 -DPNAME=s1 probe.c -o probe_s1
$CC $CFLAGS -DNOP5=1 -DSEM=1 -DPNAME=s5 probe.c -o probe_s5
