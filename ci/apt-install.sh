#!/bin/sh
# apt-install.sh NAME PACKAGE...: installs the packages (which the caller
# found missing) on Debian, as root, quietly; NAME prefixes the messages.
set -eu
name=$1
shift
[ $# -gt 0 ] || exit 0
if [ "$(id -u)" != 0 ]; then
    echo "$name: missing: $*; run as root (or apt-get install them)" >&2
    exit 1
fi
echo "$name: installing $*"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "$@" >/dev/null
