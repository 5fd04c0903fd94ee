#!/bin/sh
# fresh-debian.sh [DIR]: the README's two commands on a truly fresh
# Debian 12, the way a new user meets them: a debootstrap --variant=minbase
# bookworm root (no make, gcc, python3 or git), the repository copied to
# /root/allocsites (mode 700, as a root user's clone is), both commands run
# there in a chroot as root. The kernel, and so perf's uprobes, is the
# host's. Needs root, debootstrap (installed if missing) and the Debian
# mirror this machine's apt uses (MIRROR=URL to choose another); about 10
# minutes. DIR (default: a new temporary directory) is removed afterwards.
#
# It checks what a user sees, not only exit statuses: the demo's table has
# sites at file:line, its verdict is complete (or says why not), both SVGs
# parse as XML, and make check closes with its "N passed, 0 failed" line.
#
# The chroot's mounts (/dev, /proc, /sys, tracefs) live in a private mount
# namespace (unshare -m): they end with it, whatever happens to this
# script, and never reach the host's mount table. DIR is removed only
# after nothing is mounted under it any more, checked in
# /proc/self/mountinfo (rm -rf over a bind-mounted /dev would empty the
# host's /dev).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)

if [ "${FRESH_DEBIAN_NS:-}" != 1 ]; then
    # Again, in a mount namespace of its own whose mounts propagate
    # nowhere.
    FRESH_DEBIAN_NS=1 exec unshare --mount --propagation private \
        sh "$0" "$@"
fi

# The mirror apt uses here: the first Debian URI of sources.list or of a
# deb822 .sources file.
mirror() {
    if [ -n "${MIRROR:-}" ]; then
        echo "$MIRROR"
        return
    fi
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        uri=$(sed -n 's/^[[:space:]]*deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*\)[[:space:]]\{1,\}bookworm[[:space:]].*/\2/p' "$f" | head -n 1)
        if [ -n "$uri" ]; then echo "$uri"; return; fi
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        if grep -q '^Suites:.*\bbookworm\b' "$f"; then
            uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$f" | head -n 1)
            if [ -n "$uri" ]; then echo "$uri"; return; fi
        fi
    done
    echo "fresh-debian: no bookworm mirror in /etc/apt/sources.list*; set MIRROR=URL" >&2
    exit 1
}
url=$(mirror)

root=${1:-$(mktemp -d /tmp/allocsites-fresh-XXXXXX)}
chmod 755 "$root"   # mktemp's 700 would hide the whole system from non-root users
root=$(cd "$root" && pwd -P)
command -v debootstrap >/dev/null 2>&1 ||
    sh "$here/ci/apt-install.sh" fresh-debian debootstrap

mounted_under() {   # mount points at or under $root, deepest first
    awk -v r="$root" '$5 == r || index($5, r "/") == 1 { print $5 }' \
        /proc/self/mountinfo | sort -r
}

cleanup() {
    for m in $(mounted_under); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    if [ -n "$(mounted_under)" ]; then
        echo "fresh-debian: still mounted under $root, not removed:" >&2
        mounted_under >&2
        return
    fi
    rm -rf "$root"
}
trap cleanup EXIT INT TERM

echo "fresh-debian: debootstrap bookworm from $url"
debootstrap --variant=minbase bookworm "$root" "$url" >/dev/null
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

fail() {
    echo "fresh-debian: $*" >&2
    exit 1
}

# The README's lines, pasted in order. make demo exits 3 when its profile
# came out incomplete (events lost while recording: reported, not a
# set-up failure), so that is told apart from a failure.
status=0
chroot "$root" /bin/sh -c 'cd /root/allocsites && sh ci/install-deps.sh && make demo' \
    > "$root/demo.log" 2>&1 || status=$?
cat "$root/demo.log"
if [ "$status" != 0 ] && ! grep -q 'demo\] Error 3' "$root/demo.log"; then
    fail "make demo failed (status $status)"
fi
# What the user sees: sites at file:line, a verdict, two SVGs that parse.
grep -Eq '^ *1 +[0-9]+ .* [A-Za-z_][A-Za-z0-9_]* [^ ]+\.c:[0-9]+ ' "$root/demo.log" ||
    fail "the demo's table has no site at file:line"
if [ "$status" = 0 ]; then
    grep -q '^complete: yes (checked: ' "$root/demo.log" ||
        fail "make demo succeeded without 'complete: yes'"
    echo "fresh-debian: make demo: a complete profile"
else
    grep -q 'WARNING: this profile is incomplete' "$root/demo.log" ||
        fail "make demo's incomplete profile does not say so"
    echo "fresh-debian: make demo ran; its profile was incomplete (the report's exit 3, said in the table)"
fi
for svg in build/demo.svg build/demo-timeline.svg; do
    chroot "$root" /usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' \
        "/root/allocsites/$svg" || fail "$svg does not parse as XML"
done
echo "fresh-debian: build/demo.svg and build/demo-timeline.svg parse"

chroot "$root" /bin/sh -c 'cd /root/allocsites && make check' \
    > "$root/check.log" 2>&1 || { cat "$root/check.log"; fail "make check failed"; }
tail -n 5 "$root/check.log"
grep -Eq '^check: [1-9][0-9]* passed, 0 failed' "$root/check.log" ||
    fail "make check did not close with 'N passed, 0 failed'"
echo "fresh-debian: both README commands ran on a minbase Debian 12; make check passed"
