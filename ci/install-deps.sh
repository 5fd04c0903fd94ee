#!/bin/sh
# Installs what allocsites needs on Debian 12, only if something is missing:
#   perf (linux-perf), sys/sdt.h and dtrace (systemtap-sdt-dev), gcc, g++
#   (the header must work from C++), make, addr2line
#   (binutils), valgrind (the probes' cost, counted by callgrind in a unit
#   test), gdb (a unit test unwinds through the sampler's asm) and the
#   system Python perf embeds (python3), the native reader's
#   libraries (libdw-dev, libelf-dev, libzstd-dev), and the differential
#   corpus' clang, liblua5.4-dev and lua-filesystem, and lld.
# tracefs is not mounted here: `allocsites record` mounts it when needed and
# unmounts it afterwards, leaving the machine as it found it.
set -eu

missing=""
command -v perf >/dev/null 2>&1 || missing="$missing linux-perf"
[ -f /usr/include/x86_64-linux-gnu/sys/sdt.h ] || [ -f /usr/include/sys/sdt.h ] ||
    missing="$missing systemtap-sdt-dev"
command -v gcc >/dev/null 2>&1 || missing="$missing gcc libc6-dev"
command -v g++ >/dev/null 2>&1 || missing="$missing g++"
command -v make >/dev/null 2>&1 || missing="$missing make"
command -v addr2line >/dev/null 2>&1 || missing="$missing binutils"
command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
# gdb: the sampler's asm is unwound by a debugger (test_sampler_unwind.py).
command -v gdb >/dev/null 2>&1 || missing="$missing gdb"
# go: --pprof is tested against its real consumer, go tool pprof.
command -v go >/dev/null 2>&1 || missing="$missing golang-go"
# man: `man allocsites` after make install (docs/usage.md, "Install").
command -v man >/dev/null 2>&1 || missing="$missing man-db"
# pgrep: the integration tests look for processes a run must not leave.
command -v pgrep >/dev/null 2>&1 || missing="$missing procps"
[ -x /usr/bin/python3 ] || missing="$missing python3"
# The native reader (scripts/reader/): libdw unwinds, libzstd decompresses.
[ -f /usr/include/elfutils/libdwfl.h ] || missing="$missing libdw-dev"
[ -f /usr/include/libelf.h ] || missing="$missing libelf-dev"
[ -f /usr/include/zstd.h ] || missing="$missing libzstd-dev"
# C++ names demangled as perf demangles them (libiberty's cplus_demangle).
[ -f /usr/include/libiberty/demangle.h ] || missing="$missing libiberty-dev"
# The differential corpus (tests/differential/, test_differential.py):
# clang beside gcc, and a Lua 5.4 interpreter host linked with
# liblua5.4.a that require()s lfs (luafilesystem's 5.4 module) mid-run.
command -v clang >/dev/null 2>&1 || missing="$missing clang"
# lld: the header's semaphores and notes linked by it too
# (test_probe_contract.py; gold comes with binutils).
command -v ld.lld >/dev/null 2>&1 || missing="$missing lld"
[ -f /usr/lib/x86_64-linux-gnu/liblua5.4.a ] || missing="$missing liblua5.4-dev"
[ -f /usr/lib/x86_64-linux-gnu/lua/5.4/lfs.so ] || missing="$missing lua-filesystem"
# The lint test (tests/unit/test_lint.py).
command -v pyflakes3 >/dev/null 2>&1 || missing="$missing pyflakes3"
command -v shellcheck >/dev/null 2>&1 || missing="$missing shellcheck"

[ -z "$missing" ] && exit 0
# shellcheck disable=SC2086
exec sh "$(dirname "$0")/apt-install.sh" install-deps $missing
