#!/bin/sh
# Installs what `make bench` needs beyond ci/install-deps.sh, only if
# something is missing: the contenders (heaptrack, bpftrace, valgrind),
# GNU time (peak RSS), zstd (heaptrack's data files), and Lua 5.4 with
# luacheck (bench/lossless_runs.py's interpreter and workload).
set -eu

missing=""
command -v heaptrack >/dev/null 2>&1 || missing="$missing heaptrack"
[ -f /usr/lib/heaptrack/libheaptrack_preload.so ] || missing="$missing libheaptrack"
command -v bpftrace >/dev/null 2>&1 || missing="$missing bpftrace"
command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
[ -f /usr/include/valgrind/valgrind.h ] || missing="$missing valgrind"
[ -x /usr/bin/time ] || missing="$missing time"
command -v zstd >/dev/null 2>&1 || missing="$missing zstd"
[ -f /usr/lib/x86_64-linux-gnu/liblua5.4.a ] || missing="$missing liblua5.4-dev"
[ -d /usr/share/lua/5.1/luacheck ] || missing="$missing lua-check"

[ -z "$missing" ] && exit 0
# shellcheck disable=SC2086
exec sh "$(dirname "$0")/apt-install.sh" install-bench-deps $missing
