"""The probe site's 5-byte nop (include/rt_probes.h, "The probe site"),
with ALLOCSITES_FAST_SITE=1 (opt-in: forked children crash on 6.18):
the probes without a call graph (rt:free here) are taken there in every
recording, the allocation probe where the recording copies no stack
(--unwind fp, --unwind none): Linux >= 6.18 calls the uprobe syscall
from a trampoline there instead of trapping. A DWARF recording's
rt:alloc keeps the note's one-byte nop. The call writes below the stack
pointer, so the site steps over the red zone first: checked on a
program that keeps a value in the red zone across RT_ALLOC and RT_FREE
and counts the values it finds changed. Where each probe was taken is
read back from the samples' addresses."""

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, ProfileTest, allocsites, program  # noqa: E402

N = 2000
SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include "rt_probes.h"
static char pool[64];
/* A value kept at -8(%rsp), below the stack pointer, across the probe:
 * the compiler knows nothing of it and, keep being a leaf, moves no %rsp
 * in between (the run without recording checks that). */
__attribute__((noinline)) unsigned long keep(unsigned long v, size_t n)
{
    unsigned long out;
    __asm__ volatile("movq %0, -8(%%rsp)" : : "r"(v) : "memory");
    RT_ALLOC(pool, n, 1);
    RT_FREE(pool, n, 1);
    __asm__ volatile("movq -8(%%rsp), %0" : "=r"(out) : : "memory");
    return out;
}
int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1, changed = 0;
    for (long i = 0; i < n; i++)
        if (keep((unsigned long)i * 7 + 3, 16) != (unsigned long)i * 7 + 3)
            changed++;
    printf("changed %ld of %ld\n", changed, n);
    return changed != 0;
}
"""


class FiveByteNop(ProfileTest):

    def build(self, *flags):
        src = os.path.join(self.tmp, "keep.c")
        with open(src, "w") as f:
            f.write(SOURCE)
        path = os.path.join(self.tmp, "keep")
        subprocess.run(["gcc", "-O2", "-g", "-I", os.path.join(ROOT, "include")]
                       + list(flags) + ["-o", path, src], check=True)
        return path

    def site(self, path, probe):
        """(keep's address, its rt:PROBE note's address) from nm and
        readelf."""
        nm = subprocess.run(["nm", path], stdout=subprocess.PIPE, text=True,
                            check=True).stdout
        keep = int(re.search(r"^([0-9a-f]+) T keep$", nm, re.M).group(1), 16)
        notes = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE,
                               text=True, check=True).stdout
        loc = int(re.search(r"Name: %s\s+Location: (0x[0-9a-f]+)" % probe,
                            notes).group(1), 16)
        return keep, loc

    def taken_at(self, data, event):
        """keep+OFFSET of every sample of the event (alloc, plain) that
        perf script prints, as a set."""
        out = subprocess.run(["perf", "script", "-i", data, "-G",
                              "-F", "event,ip,sym,symoff"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, check=False).stdout
        return {int(m.group(1), 16) for m in
                re.finditer(r"%s_\d+:.*keep\+0x([0-9a-f]+)" % event, out)}

    def test_a_fork_under_the_opt_in_is_warned_of(self):
        # t_deep forks a child that allocates: with the opt-in, record
        # says so (the child may have crashed at a site that became a
        # call); without it, nothing is said
        warning = ("allocsites: warning: 1 process was forked during the "
                   "recording with ALLOCSITES_FAST_SITE=1: on Linux 6.18 a "
                   "child forked after a probe site became a call crashes "
                   "at it (docs/probes.md, \"The probe site\"); record "
                   "without ALLOCSITES_FAST_SITE if any of them crashed")
        for env, said in (({"ALLOCSITES_FAST_SITE": "1"}, True), ({}, False)):
            with self.subTest(env=env):
                data = os.path.join(self.tmp, "fork.data")
                rec = allocsites(["record", "-o", data, "--",
                                  program("t_deep"), "50"],
                                 env=dict(env, TRUTH_FILE=os.devnull))
                self.assertEqual(rec.returncode, 0, rec.stderr)
                if said:
                    self.assertIn(warning, rec.stderr.splitlines())
                else:
                    self.assertNotIn("ALLOCSITES_FAST_SITE", rec.stderr)

    def test_red_zone_kept_and_probe_place_by_mode(self):
        for flags, unwind in (((), "none"), (("-fno-omit-frame-pointer",),
                                             "fp"), ((), "dwarf")):
            with self.subTest(unwind=unwind):
                path = self.build(*flags)
                alone = subprocess.run([path, str(N)], stdout=subprocess.PIPE,
                                       text=True)
                self.assertEqual(alone.stdout.strip(),
                                 "changed 0 of %d" % N, "the test's premise")
                data = os.path.join(self.tmp, "%s.data" % unwind)
                out_json = os.path.join(self.tmp, "%s.json" % unwind)
                rec = allocsites(["record", "-o", data, "--unwind", unwind,
                                  "--", path, str(N)],
                                 env={"ALLOCSITES_FAST_SITE": "1"})
                self.assertEqual(rec.returncode, 0, rec.stderr)
                self.assertIn("changed 0 of %d" % N, rec.stdout)
                rep = allocsites(["report", "-i", data, "--json", out_json])
                self.assertEqual(rep.returncode, 0, rep.stderr)
                with open(out_json) as f:
                    report = json.load(f)
                self.assertLossless(report)
                self.assertEqual(report["totals"]["count"], N)
                self.assertEqual(report["totals"]["bytes"], 16 * N)
                keep, loc = self.site(path, "alloc")
                want = loc + (9 if unwind != "dwarf" else 0) - keep
                self.assertEqual(self.taken_at(data, "alloc"), {want})
                keep, loc = self.site(path, "free")
                self.assertEqual(self.taken_at(data, "plain"),
                                 {loc + 9 - keep})
                self.assertEqual(report["totals"]["frees"], N)
