#!/usr/bin/python3
"""A third real interpreter with its own allocator: GNU awk's node and
bucket pool, read by the native reader and by perf's own unwinding, stack
by stack.

    /usr/bin/python3 bench/real_awk.py [--src DIR] [--keep DIR]

The differential check of tests/integration/test_differential.py on gawk
5.2.1 from Debian's source package gawk, built as its configure builds it
(-g -O2), running WORKLOAD below: string concatenation and gsub, arrays
built and deleted, split, recursion through awk functions (a tree of
calls six deep, fib) in gawk's r_interpret.

Annotation: awk.h's getblock and freeblock, the macros of gawk's block
allocator (a free list per block kind, refilled by more_blocks: no malloc
per node), fire RT_ALLOC (tag 1 for NODE, 2 for BUCKET, the block's size)
after taking a block and RT_FREE before giving it back. awk.h says
`#define free pma_free` (gawk's persistent allocator) before it: the
header of 2026-11-27 turned its probe name free into pma_free on the way
through its macros, and gawk did not link (rt_pma_free_semaphore); that
is what this script found.

Then, printed as Markdown (bench/lib/bothreaders.py): the recording;
`allocsites report` with the native reader and with ALLOCSITES_READER=perf,
site by site; every rt:alloc sample frame by frame as test_differential.py
compares them. Exits 1 when the readers differ.

Source: --src DIR, an unpacked gawk tree (copied before it is patched);
without it the source package is fetched with apt into a temporary
directory (a private sources list). Everything is made under one
temporary directory, removed at the end (--keep DIR: kept). Run as root
(perf), after `make all`.
"""

import functools
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from lib import bothreaders, debsource  # noqa: E402

PACKAGE = "gawk"
# awk.h's block allocator without MEMDEBUG, as gawk 5.2.1 has it
GETBLOCK = """#define getblock(p, id, ty)  (void) ((p = (ty) nextfree[id].freep) ? \\
			(ty) (nextfree[id].freep = ((struct block_item *) p)->freep) \\
			: (p = (ty) more_blocks(id)))
#define freeblock(p, id)	 (void) (((struct block_item *) p)->freep = nextfree[id].freep, \\
					nextfree[id].freep = (struct block_item *) p)
"""
# the same as statement expressions (GNU C, which gawk is built with),
# the probes around them
ANNOTATED = """#include "rt_probes.h"
#define getblock(p, id, ty)  (void) ({ ((p = (ty) nextfree[id].freep) ? \\
			(ty) (nextfree[id].freep = ((struct block_item *) p)->freep) \\
			: (p = (ty) more_blocks(id))); \\
			RT_ALLOC(p, nextfree[id].size, (id) + 1); })
#define freeblock(p, id)	 (void) ({ RT_FREE(p); \\
			((struct block_item *) p)->freep = nextfree[id].freep, \\
			nextfree[id].freep = (struct block_item *) p; })
"""
TAGS = '#include "awk.h"\nRT_TAG_NAME(1, "node");\nRT_TAG_NAME(2, "bucket");\n'
WORKLOAD = r"""
function tree(d,   a, i, s) {
    if (d == 0) return "leaf"
    for (i = 0; i < 3; i++) a[i] = tree(d - 1) "," i
    s = a[0] a[1] a[2]
    delete a
    return substr(s, 1, 40)
}
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2) }
BEGIN {
    for (i = 0; i < 20000; i++) words[i % 997] = words[i % 997] " w" i
    n = 0
    for (k in words) { n += split(words[k], parts, " "); delete parts }
    for (j = 0; j < 30; j++) t = t tree(6)
    s = ""
    for (i = 0; i < 2000; i++) { s = s sprintf("%05d", i); gsub(/0/, "o", s) }
    print n, length(t), fib(18), length(s)
}
"""

say = debsource.progress("real_awk")
# runs argv quietly; on failure stops with the end of its output
check = functools.partial(debsource.run_quietly, who="real_awk")


def is_gawk_tree(path):
    return all(os.path.exists(os.path.join(path, n))
               for n in ("configure", "awk.h", "interpret.h", "main.c"))


def patched(path, old, new, what):
    with open(path) as f:
        text = f.read()
    if text.count(old) != 1:
        raise SystemExit("real_awk: %s has not one %s: another gawk than "
                         "5.2?" % (path, what))
    with open(path, "w") as f:
        f.write(text.replace(old, new))


def build(source, work, jobs):
    """Copies the tree to work/src, annotates the block allocator,
    configures and makes gawk; returns the program."""
    tree = os.path.join(work, "src")
    say("copy the tree")
    shutil.copytree(source, tree, symlinks=True)
    patched(os.path.join(tree, "awk.h"), GETBLOCK, ANNOTATED,
            "getblock/freeblock definition")
    patched(os.path.join(tree, "main.c"), '#include "awk.h"\n', TAGS,
            '#include "awk.h"')
    say("configure")
    check(["./configure", "CPPFLAGS=-I%s" % os.path.join(ROOT, "include")],
          cwd=tree, what="configure")
    say("make -j%d gawk" % jobs)
    # the program alone (its support library first): the tarball's doc/
    # cannot be made without gawktexi.in, which the .orig tarball leaves
    # out
    check(["make", "-j%d" % jobs, "-s", "-C", "support"], cwd=tree,
          what="make -C support")
    check(["make", "-j%d" % jobs, "-s", "gawk"], cwd=tree, what="make gawk")
    return os.path.join(tree, "gawk")


def record(gawk, work, data):
    """The workload under allocsites record; returns record's stderr."""
    return bothreaders.record_script("real_awk", work, data, WORKLOAD,
                                     "workload.awk", [gawk, "-f"], work)


def main():
    return bothreaders.main(
        "real_awk", __doc__.split("\n")[0], PACKAGE, is_gawk_tree,
        build, record, "A real interpreter with its own allocator: GNU "
        "awk's block pool", "built as configure builds it (-g -O2)")


if __name__ == "__main__":
    sys.exit(main())
