#!/bin/sh
# Installs what make fuzz needs beyond ci/install-deps.sh, only if
# missing: AFL++ (afl-fuzz, afl-clang-fast) and the clang it builds with.
# make check does not need them (its sanitized reader is built by cc).
set -eu

missing=""
{ command -v afl-fuzz && command -v afl-clang-fast; } >/dev/null 2>&1 ||
    missing="$missing afl++"
command -v clang >/dev/null 2>&1 || missing="$missing clang"
command -v zstd >/dev/null 2>&1 || missing="$missing zstd"

[ -z "$missing" ] && exit 0
# shellcheck disable=SC2086
exec sh "$(dirname "$0")/apt-install.sh" install-fuzz-deps $missing
