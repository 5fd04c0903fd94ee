"""allocsites record -p PID: attach to a running process, until it exits
or for --duration; the process keeps running, and its probes' semaphores
go back down (nothing records, so the probes cost nothing again)."""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, ProfileTest, allocsites, program  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from allocsites_lib.read import elf  # noqa: E402


def semaphore(pid, path):
    """rt:alloc's semaphore in the running process (PIE: its load base +
    the address the probe note gives)."""
    sem = {name: s for _, name, _, s, _ in
           elf.stapsdt_probes(elf.open_elf(path))}["alloc"]
    with open("/proc/%d/maps" % pid) as f:
        base = min(int(l.split("-")[0], 16) for l in f
                   if l.rstrip().endswith(path) and l.split()[2] == "00000000")
    with open("/proc/%d/mem" % pid, "rb") as f:
        f.seek(base + sem)
        return int.from_bytes(f.read(2), "little")


class Attach(ProfileTest):

    def start(self, seconds, threads=1):
        proc = subprocess.Popen([program("t_loop"), str(seconds),
                                 str(threads)],
                                stdout=subprocess.PIPE,
                                universal_newlines=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        time.sleep(0.3)
        return proc

    def report(self, data):
        out = os.path.join(self.tmp, "r.json")
        rep = allocsites(["report", "-i", data, "--json", out])
        self.assertEqual(rep.returncode, 0, rep.stderr)
        with open(out) as f:
            return json.load(f)

    def test_until_the_process_exits(self):
        proc = self.start(2)
        data = os.path.join(self.tmp, "a.data")
        rec = allocsites(["record", "-p", str(proc.pid), "-o", data])
        self.assertEqual(rec.returncode, 0, rec.stderr)
        self.assertIn("it exited while attached", rec.stderr)
        total = int(proc.communicate()[0].split("=")[1])
        report = self.report(data)
        # Some, not all: the first 0.3 s ran before the attach.
        got = report["totals"]["count"]
        self.assertGreater(got, 0)
        self.assertLess(got, total)
        self.assertEqual(report["lost"], 0)
        self.assertEqual([s["function"] for s in report["sites"]], ["tick"])
        self.assertIn("recorded by attaching to a running process: its "
                      "allocations before the attach, and the frees of "
                      "those, are not in this profile", report["warnings"])

    def test_every_thread_is_recorded(self):
        # Three threads beside the main one: stacks from thread starts and
        # from the process start, all at tick.
        proc = self.start(30, threads=4)
        data = os.path.join(self.tmp, "t.data")
        rec = allocsites(["record", "-p", str(proc.pid), "--duration", "1",
                          "-o", data])
        self.assertEqual(rec.returncode, 0, rec.stderr)
        report = self.report(data)
        self.assertEqual([s["function"] for s in report["sites"]], ["tick"])
        # Without debug info for libc a root is "_start+0x20"; with it
        # (libc6-dbg, found by build-id) a thread's is __clone3, as
        # DWARF names it.
        roots = {s["frames"][-1]["function"].split("+")[0]
                 for s in report["stacks"]}
        self.assertTrue({"start_thread", "clone3", "clone", "__clone3",
                         "__clone"} & roots, roots)
        self.assertTrue({"_start", "__libc_start_call_main"} & roots, roots)
        proc.kill()

    def test_duration_leaves_the_process_running_and_its_probes_off(self):
        proc = self.start(30)
        path = os.path.realpath(program("t_loop"))
        self.assertEqual(semaphore(proc.pid, path), 0)
        data = os.path.join(self.tmp, "d.data")
        rec = allocsites(["record", "-p", str(proc.pid), "--duration", "1",
                          "-o", data])
        self.assertEqual(rec.returncode, 0, rec.stderr)
        self.assertIsNone(proc.poll(), "the process must keep running")
        self.assertEqual(semaphore(proc.pid, path), 0,
                         "the probes must cost nothing again after detach")
        report = self.report(data)
        # About a millisecond per allocation for one second.
        self.assertGreater(report["totals"]["count"], 100)
        self.assertIsNone(report["complete"])
        # not "the program did not exit normally": it is still running
        # (issue 23, item 8)
        self.assertIn("no rt:exit event: the process was still running when "
                      "the recording stopped", report["complete_reason"])
        proc.kill()


if __name__ == "__main__":
    unittest.main()
