#!/usr/bin/python3
"""A real database with its own arenas: PostgreSQL's memory contexts,
read by the native reader and by perf's own unwinding, stack by stack.

    /usr/bin/python3 bench/real_database.py [--src DIR] [--keep DIR]

The differential check of tests/integration/test_differential.py, on a
program nobody here wrote and too long to build for `make check`
(about 6 minutes on the 2-CPU VM): PostgreSQL 15 from Debian's source
package postgresql-15, built -O2 -g, its palloc family annotated,
running a workload of SQL (a table of 20,000 rows with an index,
ANALYZE, a join with a sort, a recursive PL/pgSQL function, an error
caught in PL/pgSQL, a recursive CTE, aggregates to text and JSON).

Annotation: PostgreSQL already reports every chunk of its memory
contexts to Valgrind (utils/memdebug.h: VALGRIND_MEMPOOL_ALLOC in
palloc and MemoryContextAlloc*, VALGRIND_MEMPOOL_FREE in pfree,
VALGRIND_MEMPOOL_CHANGE in repalloc; no-ops unless USE_VALGRIND). The
script puts, before memdebug.h's `#ifdef USE_VALGRIND`, a branch for
-DALLOCSITES that defines those three as RT_ALLOC, RT_FREE and
RT_REALLOC (and the other Valgrind macros as nothing): the whole
annotation. A context reset or deleted frees its chunks without pfree,
so the report says that many allocations "returned a pointer that was
still live": true of this annotation, not a fault.

Recording: the server (postgres -D DIR, as the user nobody: it refuses
root) under `allocsites record -a` (its backends are forked children;
docs/limitations.md), psql running the workload, then pg_ctl stop.

Then, printed as Markdown:
  - the recording: allocations, events lost (must be 0), complete;
  - `allocsites report` with the native reader and with
    ALLOCSITES_READER=perf (perf script -s, perf's unwinding): wall time
    of each, and whether every site's count, bytes, peak and leaked
    bytes are the same;
  - frame by frame: every rt:alloc sample from `allocsites-read --text`
    against `perf script`, as test_differential.py compares them (its
    compare_sample, with what it accepts counted and named); the first
    differing sample is printed in full.

Source: --src DIR, an unpacked postgresql-15 tree (copied before it is
patched); without it the source package is fetched with apt into a
temporary directory (a private sources list; the system's apt
configuration is not touched). Everything is made under one temporary
directory, removed at the end (--keep DIR: made there and kept).
Run as root (perf), after `make all`.
"""

import functools
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from lib import debsource  # noqa: E402
from lib import bothreaders  # noqa: E402

ALLOCSITES = bothreaders.ALLOCSITES
PACKAGE = "postgresql-15"
USER = "nobody"
PORT = "5439"
MEMDEBUG = os.path.join("src", "include", "utils", "memdebug.h")
MARK = "#ifdef USE_VALGRIND\n"
PATCH = """#ifdef ALLOCSITES
/* allocsites bench/real_database.py: the chunks Valgrind is told of */
#include "rt_probes.h"
#define VALGRIND_CHECK_MEM_IS_DEFINED(addr, size)		do {} while (0)
#define VALGRIND_CREATE_MEMPOOL(context, redzones, zeroed)	do {} while (0)
#define VALGRIND_DESTROY_MEMPOOL(context)			do {} while (0)
#define VALGRIND_MAKE_MEM_DEFINED(addr, size)			do {} while (0)
#define VALGRIND_MAKE_MEM_NOACCESS(addr, size)			do {} while (0)
#define VALGRIND_MAKE_MEM_UNDEFINED(addr, size)			do {} while (0)
#define VALGRIND_MEMPOOL_ALLOC(context, addr, size)		RT_ALLOC(addr, size, 1)
#define VALGRIND_MEMPOOL_FREE(context, addr)			RT_FREE(addr)
#define VALGRIND_MEMPOOL_CHANGE(context, optr, nptr, size)	RT_REALLOC(optr, nptr, size, 1)
#elif defined(USE_VALGRIND)
"""
WORKLOAD = r"""
CREATE TABLE t (id int PRIMARY KEY, name text, v numeric);
INSERT INTO t SELECT g, 'name' || g, g * 1.5 FROM generate_series(1, 20000) g;
CREATE INDEX ON t (name);
ANALYZE t;
SELECT count(*), sum(v) FROM t WHERE name LIKE 'name1%';
SELECT a.id, b.name FROM t a JOIN t b ON a.id = b.id + 1
  ORDER BY b.name DESC LIMIT 5;
CREATE FUNCTION fib(n int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN IF n < 2 THEN RETURN n; END IF; RETURN fib(n - 1) + fib(n - 2); END $$;
SELECT fib(15);
DO $$ BEGIN PERFORM 1 / 0;
EXCEPTION WHEN division_by_zero THEN RAISE NOTICE 'caught'; END $$;
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000)
  SELECT count(*) FROM r;
SELECT length(string_agg(name, ',' ORDER BY id)) FROM t WHERE id < 300;
SELECT length(jsonb_agg(jsonb_build_object('id', id, 'n', name))::text)
  FROM t WHERE id < 200;
"""


say = debsource.progress("real_database")
# runs argv quietly; on failure stops with the end of its output
check = functools.partial(debsource.run_quietly, who="real_database")


def is_pg_tree(path):
    return all(os.path.exists(os.path.join(path, n))
               for n in ("configure", MEMDEBUG,
                         "src/backend/utils/mmgr/mcxt.c"))


def build(source, work, jobs):
    """Copies the tree to work/src, annotates memdebug.h, configures,
    makes and installs into work/inst; returns the bin directory."""
    tree = os.path.join(work, "src")
    say("copy the tree")
    shutil.copytree(source, tree, symlinks=True)
    path = os.path.join(tree, MEMDEBUG)
    with open(path) as f:
        text = f.read()
    if text.count(MARK) != 1:
        raise SystemExit("real_database: %s has not one %r: another "
                         "PostgreSQL than 15?" % (path, MARK.strip()))
    with open(path, "w") as f:
        f.write(text.replace(MARK, PATCH))
    inst = os.path.join(work, "inst")
    say("configure")
    check(["./configure", "--prefix=" + inst, "--without-readline",
           "--without-icu", "--without-zlib", "CFLAGS=-O2 -g",
           "CPPFLAGS=-I%s -DALLOCSITES" % os.path.join(ROOT, "include")],
          cwd=tree, what="configure")
    say("make -j%d (about 6 minutes on 2 CPUs)" % jobs)
    check(["make", "-j%d" % jobs, "-s"], cwd=tree, what="make")
    check(["make", "-s", "install"], cwd=tree, what="make install")
    return os.path.join(inst, "bin")


def as_user(argv):
    return ["runuser", "-u", USER, "--"] + argv


def record(bindir, work, data):
    """The server under allocsites record -a, the workload, the stop.
    Returns record's stderr."""
    pgdata = os.path.join(work, "data")
    os.makedirs(pgdata)
    shutil.chown(pgdata, user=USER)
    os.chmod(pgdata, 0o700)
    say("initdb")
    check(as_user([os.path.join(bindir, "initdb"), "-D", pgdata, "-A",
                   "trust", "-U", "bench"]), what="initdb")
    script = os.path.join(work, "workload.sql")
    with open(script, "w") as f:
        f.write(WORKLOAD)
    say("record the server")
    rec = subprocess.Popen(
        ALLOCSITES + ["record", "-a", "-o", data, "--"] +
        as_user([os.path.join(bindir, "postgres"), "-D", pgdata, "-k", pgdata,
                 "-p", PORT, "-c", "listen_addresses="]),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True)
    stop = as_user([os.path.join(bindir, "pg_ctl"), "-D", pgdata, "stop",
                    "-m", "fast"])
    try:
        for _ in range(120):
            ready = subprocess.run(
                [os.path.join(bindir, "pg_isready"), "-h", pgdata, "-p", PORT],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if ready.returncode == 0:
                break
            if rec.poll() is not None:
                break
            time.sleep(0.5)
        say("the workload")
        psql = subprocess.run(
            [os.path.join(bindir, "psql"), "-X", "-q", "-v",
             "ON_ERROR_STOP=1", "-h", pgdata, "-p", PORT, "-U", "bench",
             "-d", "postgres", "-f", script],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            universal_newlines=True)
        if psql.returncode != 0:
            raise SystemExit("real_database: the workload failed:\n%s"
                             % psql.stdout[-3000:])
    finally:
        subprocess.run(stop, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        _, err = rec.communicate()
    if rec.returncode != 0:
        raise SystemExit("real_database: allocsites record failed (exit "
                         "%d):\n%s" % (rec.returncode, err[-3000:]))
    return err


def main():
    # the server runs as nobody: the directories on its way must let it in
    return bothreaders.main(
        "real_database", __doc__.split("\n")[0], PACKAGE, is_pg_tree,
        build, record, "A real database with its own arenas: PostgreSQL's "
        "memory contexts", "built -O2 -g", work_mode=0o755)


if __name__ == "__main__":
    sys.exit(main())
