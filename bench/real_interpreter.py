#!/usr/bin/python3
"""A real interpreter with its own allocator: CPython's pymalloc, read by
the native reader and by perf's own unwinding, stack by stack.

    /usr/bin/python3 bench/real_interpreter.py [--src DIR] [--keep DIR]

The differential check of tests/integration/test_differential.py on a
second interpreter nobody here wrote (the corpus has Lua 5.4): CPython
3.11 from Debian's source package python3.11, built as its configure
builds it by default (-O3 -g), the interpreter alone (`make python`,
about 4 minutes on the 2-CPU VM), running WORKLOAD below: the parser,
the compiler and the regular expression engine on stdlib sources, a
nested list printed by repr (C recursion), the same written by the
pure-Python json encoder (generators within generators), and a tree of
objects.

Annotation: Objects/obmalloc.c's four entry points of the object
allocator (_PyObject_Malloc, _PyObject_Calloc, _PyObject_Realloc,
_PyObject_Free; PyMem_Malloc goes through them too) are renamed
rt_inner_* and wrapped by functions of the old names that fire
RT_ALLOC (tag 1), RT_ALLOC (tag 2, calloc), RT_REALLOC (tag 3) and
RT_FREE around them. pymalloc_realloc's own fallback (allocate, copy,
free) calls the inner functions, so a moving realloc is one RT_REALLOC.

Then, printed as Markdown (bench/lib/bothreaders.py): the recording;
`allocsites report` with the native reader and with
ALLOCSITES_READER=perf, site by site; every rt:alloc sample frame by
frame as test_differential.py compares them. Exits 1 when the readers
differ.

Source: --src DIR, an unpacked python3.11 tree (copied before it is
patched); without it the source package is fetched with apt into a
temporary directory (a private sources list). Everything is made under
one temporary directory, removed at the end (--keep DIR: kept).
Run as root (perf), after `make all`.
"""

import functools
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from lib import bothreaders, debsource  # noqa: E402

PACKAGE = "python3.11"
OBMALLOC = os.path.join("Objects", "obmalloc.c")
# the definitions renamed (each follows "static void *\n" or "static void\n")
ENTRIES = ("_PyObject_Malloc(void *ctx, size_t nbytes)\n{",
           "_PyObject_Calloc(void *ctx, size_t nelem, size_t elsize)\n{",
           "_PyObject_Free(void *ctx, void *p)\n{",
           "_PyObject_Realloc(void *ctx, void *ptr, size_t nbytes)\n{")
# inside pymalloc_realloc: its fallback's allocation and free
INNER_CALLS = (("bp = _PyObject_Malloc(ctx, nbytes);",
                "bp = rt_inner_PyObject_Malloc(ctx, nbytes);"),
               ("_PyObject_Free(ctx, p);", "rt_inner_PyObject_Free(ctx, p);"))
PROTOTYPES = """
#include "rt_probes.h"
static void *rt_inner_PyObject_Malloc(void *ctx, size_t nbytes);
static void rt_inner_PyObject_Free(void *ctx, void *p);
"""
WRAPPERS = """
static void *_PyObject_Malloc(void *ctx, size_t n)
{
    void *p = rt_inner_PyObject_Malloc(ctx, n);
    if (p) RT_ALLOC(p, n, 1);
    return p;
}
static void *_PyObject_Calloc(void *ctx, size_t k, size_t n)
{
    void *p = rt_inner_PyObject_Calloc(ctx, k, n);
    if (p) RT_ALLOC(p, k * n, 2);
    return p;
}
static void _PyObject_Free(void *ctx, void *p)
{
    if (p) RT_FREE(p);
    rt_inner_PyObject_Free(ctx, p);
}
static void *_PyObject_Realloc(void *ctx, void *old, size_t n)
{
    if (!old)
        return _PyObject_Malloc(ctx, n);
    void *p = rt_inner_PyObject_Realloc(ctx, old, n);
    if (p) RT_REALLOC(old, p, n, 3);
    return p;
}
"""
PYMALLOC_END = "#else   /* ! WITH_PYMALLOC */"
WORKLOAD = """
import ast, glob, json, re, sys
sys.setrecursionlimit(10000)
words = 0
for path in sorted(glob.glob('Lib/*.py'))[:8]:
    with open(path, encoding='utf-8') as f:
        src = f.read()
    compile(ast.parse(src), path, 'exec')
    words += len(re.findall(r'\\w+', src))
def nest(k):
    return [nest(k - 1), str(k)] if k else []
d = nest(700)
text = repr(d)
back = json.loads(json.dumps(d))
class Node:
    def __init__(self, k):
        self.kids = [Node(k - 1) for _ in range(2)] if k else []
tree = Node(12)
print(words, len(text), back == d)
"""


say = debsource.progress("real_interpreter")
# runs argv quietly; on failure stops with the end of its output
check = functools.partial(debsource.run_quietly, who="real_interpreter")


def is_py_tree(path):
    return all(os.path.exists(os.path.join(path, n))
               for n in ("configure", OBMALLOC, "Python/ceval.c"))


def annotate(text):
    """obmalloc.c with the probes (see the module's docstring)."""
    for entry in ENTRIES:
        if text.count("\n" + entry) != 1:
            raise SystemExit("real_interpreter: %s has not one %r: another "
                             "CPython than 3.11?" % (OBMALLOC, entry))
        text = text.replace("\n" + entry, "\nrt_inner" + entry)
    for old, new in INNER_CALLS:
        if text.count(old) != 1:
            raise SystemExit("real_interpreter: %s has not one %r"
                             % (OBMALLOC, old))
        text = text.replace(old, new)
    if text.count('#include "Python.h"\n') != 1 or \
            text.count(PYMALLOC_END) != 1:
        raise SystemExit("real_interpreter: %s is not laid out as 3.11's"
                         % OBMALLOC)
    text = text.replace('#include "Python.h"\n',
                        '#include "Python.h"\n' + PROTOTYPES)
    return text.replace(PYMALLOC_END, WRAPPERS + "\n" + PYMALLOC_END)


def build(source, work, jobs):
    """Copies the tree to work/src, annotates obmalloc.c, configures and
    makes the interpreter; returns the tree."""
    tree = os.path.join(work, "src")
    say("copy the tree")
    shutil.copytree(source, tree, symlinks=True)
    path = os.path.join(tree, OBMALLOC)
    with open(path) as f:
        text = annotate(f.read())
    with open(path, "w") as f:
        f.write(text)
    say("configure")
    check(["./configure", "--without-ensurepip",
           "CPPFLAGS=-I%s" % os.path.join(ROOT, "include")],
          cwd=tree, what="configure")
    say("make -j%d python (about 4 minutes on 2 CPUs)" % jobs)
    check(["make", "-j%d" % jobs, "-s", "python"], cwd=tree,
          what="make python")
    return tree


def record(tree, work, data):
    """The workload under allocsites record; returns record's stderr."""
    return bothreaders.record_script("real_interpreter", work, data,
                                     WORKLOAD, "workload.py",
                                     [os.path.join(tree, "python")], tree)


def main():
    return bothreaders.main(
        "real_interpreter", __doc__.split("\n")[0], PACKAGE, is_py_tree,
        build, record, "A real interpreter with its own allocator: "
        "CPython's pymalloc", "built as configure builds it (-O3 -g)")


if __name__ == "__main__":
    sys.exit(main())
