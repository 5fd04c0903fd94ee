#!/bin/sh
# fresh-debian.sh [DIR]: the README's two commands on a truly fresh
# Debian 12, the way a new user meets them: a debootstrap --variant=minbase
# bookworm root (no make, gcc, python3 or git), the repository copied to
# /root/allocsites (mode 700, as a root user's clone is), both commands run
# there in a chroot as root. The kernel, and so perf's uprobes, is the
# host's. Needs root, debootstrap (installed if missing) and a Debian
# mirror; about 10 minutes. DIR (default: a new temporary directory) is
# removed afterwards, with everything mounted in it.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-$(mktemp -d /tmp/allocsites-fresh-XXXXXX)}
chmod 755 "$root"   # mktemp's 700 would hide the whole system from non-root users
command -v debootstrap >/dev/null 2>&1 ||
    sh "$here/ci/apt-install.sh" fresh-debian debootstrap

cleanup() {
    for m in sys/kernel/tracing sys proc dev/pts dev; do
        umount -l "$root/$m" 2>/dev/null || true
    done
    rm -rf "$root"
}
trap cleanup EXIT INT TERM

debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/root/allocsites"
chmod 700 "$root/root"
# The repository as a clone has it: tracked files only.
git -C "$here" ls-files -z | (cd "$here" && xargs -0 tar cf -) |
    tar xf - -C "$root/root/allocsites"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"

# The README's lines, pasted in order. make demo exits 3 when its profile
# came out incomplete (events lost while recording: reported, not a
# set-up failure), so that is told apart from a failure.
status=0
chroot "$root" /bin/sh -c 'cd /root/allocsites && sh ci/install-deps.sh && make demo' \
    > "$root/demo.log" 2>&1 || status=$?
cat "$root/demo.log"
if [ "$status" = 0 ]; then
    echo "fresh-debian: make demo: complete profile"
elif grep -q 'demo\] Error 3' "$root/demo.log"; then
    echo "fresh-debian: make demo ran; its profile was incomplete (the report's exit 3)"
else
    echo "fresh-debian: make demo failed"
    exit 1
fi
chroot "$root" /bin/sh -c 'cd /root/allocsites && make check'
echo "fresh-debian: both README commands ran on a minbase Debian 12; make check passed"
