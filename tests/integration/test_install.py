"""make install into a temporary PREFIX, then the README's quick start
outside the repository: a program with its own allocator, built against
the installed header, profiled by the installed command from its own
directory. make uninstall then removes every file it installed."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, ProfileTest  # noqa: E402

# A user's own arena allocator, 3 sites, counts it prints itself.
MY_ALLOC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <rt_probes.h>

static char arena[1 << 20];
static size_t used;
static unsigned long long made;

static __attribute__((noinline)) void *my_alloc(size_t n, unsigned tag)
{
    void *p = arena + used;
    used += (n + 15) & ~(size_t)15;
    made++;
    RT_ALLOC(p, n, tag);
    return p;
}

static __attribute__((noinline)) void words(int k)
{
    for (int i = 0; i < k; i++)
        if (!my_alloc(24, 1)) abort();
}

static __attribute__((noinline)) void nodes(int k)
{
    for (int i = 0; i < k; i++)
        if (!my_alloc(64, 2)) abort();
}

int main(void)
{
    words(300);
    nodes(200);
    if (!my_alloc(4096, 3)) abort();
    printf("made=%llu\n", made);
    return 0;
}
"""


class Install(ProfileTest):

    def test_install_quick_start_uninstall(self):
        prefix = os.path.join(self.tmp, "prefix")
        subprocess.run(["make", "-s", "-C", ROOT, "install",
                        "PREFIX=" + prefix], check=True,
                       stdout=subprocess.DEVNULL)
        work = os.path.join(self.tmp, "work")
        os.mkdir(work)
        with open(os.path.join(work, "my_alloc.c"), "w") as f:
            f.write(MY_ALLOC)
        self.assertTrue(os.path.exists(os.path.join(
            prefix, "share", "man", "man1", "allocsites.1")))
        subprocess.run(["cc", "-std=gnu99", "-O2", "-g",
                        "-I" + os.path.join(prefix, "include"),
                        "my_alloc.c", "-o", "prog"], cwd=work, check=True)
        run = subprocess.run(
            [os.path.join(prefix, "bin", "allocsites"), "--json", "r.json",
             "--", "./prog"], cwd=work, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("made=501", run.stdout)
        with open(os.path.join(work, "r.json")) as f:
            report = json.load(f)
        self.assertLossless(report)
        self.assertEqual(report["totals"]["count"], 501)
        self.assertEqual(report["totals"]["bytes"], 300 * 24 + 200 * 64 + 4096)
        self.assertEqual(sorted((s["function"], s["count"])
                                for s in report["sites"]),
                         [("main", 1), ("nodes", 200), ("words", 300)])
        self.assertTrue(os.path.exists(os.path.join(work, "perf.data")))
        self.assertTrue(os.path.exists(os.path.join(work, "perf.svg")))
        subprocess.run(["make", "-s", "-C", ROOT, "uninstall",
                        "PREFIX=" + prefix], check=True,
                       stdout=subprocess.DEVNULL)
        left = [os.path.join(d, f) for d, _, files in os.walk(prefix)
                for f in files]
        self.assertEqual(left, [])


if __name__ == "__main__":
    unittest.main()
