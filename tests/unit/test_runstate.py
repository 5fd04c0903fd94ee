"""runstate: a killed run's events and directories are undone by the next
run, never while its perf still records them. No perf needed."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import json
import subprocess
import tempfile

from allocsites_lib.record import runstate


def dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


class AliveTest(unittest.TestCase):
    def test_zombie_is_not_alive(self):
        proc = subprocess.Popen(["true"])
        import time
        while open("/proc/%d/stat" % proc.pid).read().split(")")[-1][1] != "Z":
            time.sleep(0.01)
        self.assertFalse(runstate.alive(proc.pid))   # not reaped yet
        proc.wait()
        self.assertFalse(runstate.alive(proc.pid))
        self.assertTrue(runstate.alive(os.getpid()))
        self.assertFalse(runstate.alive(None))


class SweepTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.removed = []

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, pid, perf, events, dirs=()):
        path = os.path.join(self.dir, "%d.json" % pid)
        with open(path, "w") as f:
            json.dump({"pid": pid, "perf": perf, "events": events,
                       "dirs": list(dirs)}, f)
        return path

    def sweep(self, existing, failing=()):
        def remove(names):
            self.removed.append(list(names))
            return [n for n in names if n in failing]
        return runstate.sweep(remove, lambda: set(existing), self.dir)

    def test_dead_run_is_undone(self):
        cache = os.path.join(self.dir, "allocsites-buildid-x")
        os.mkdir(cache)
        pid = dead_pid()
        path = self.write(pid, dead_pid(), ["sdt_rt:alloc_3", "sdt_rt:exit_3"],
                          [cache])
        msgs = self.sweep({"sdt_rt:alloc_3", "sdt_rt:alloc"})
        # Only what still exists, and only this run's.
        self.assertEqual(self.removed, [["sdt_rt:alloc_3"]])
        self.assertEqual(msgs, ["removed probe events sdt_rt:alloc_3 left "
                                "by a killed run (pid %d)" % pid])
        self.assertFalse(os.path.exists(cache))
        self.assertFalse(os.path.exists(path))

    def test_live_run_is_left_alone(self):
        path = self.write(os.getpid(), None, ["sdt_rt:alloc_1"])
        self.assertEqual(self.sweep({"sdt_rt:alloc_1"}), [])
        self.assertEqual(self.removed, [])
        self.assertTrue(os.path.exists(path))

    def test_events_perf_still_records_are_left_alone(self):
        pid = dead_pid()
        path = self.write(pid, os.getpid(), ["sdt_rt:alloc_1"])
        self.assertEqual(self.sweep({"sdt_rt:alloc_1"}), [
            "probe events sdt_rt:alloc_1 of a killed run (pid %d) are still "
            "recorded by perf (pid %d); left alone" % (pid, os.getpid())])
        self.assertEqual(self.removed, [])
        self.assertTrue(os.path.exists(path))

    def test_failed_removal_keeps_the_file_for_next_time(self):
        pid = dead_pid()
        path = self.write(pid, None, ["sdt_rt:alloc_2"])
        self.assertEqual(self.sweep({"sdt_rt:alloc_2"}, {"sdt_rt:alloc_2"}), [
            "could not remove probe events sdt_rt:alloc_2 left by a killed "
            "run (pid %d)" % pid])
        self.assertTrue(os.path.exists(path))

    def test_a_dead_runs_mount_is_adopted(self):
        # a killed run cannot unmount the tracefs it mounted: the next
        # run takes the mount over, once the dead run is undone
        pid = dead_pid()
        path = self.write(pid, None, [])
        with open(path) as f:
            state = json.load(f)
        state["mounted"] = "/sys/kernel/tracing"
        with open(path, "w") as f:
            json.dump(state, f)
        live = self.write(os.getpid(), None, [])
        with open(live) as f:
            state = json.load(f)
        state["mounted"] = "/elsewhere"
        with open(live, "w") as f:
            json.dump(state, f)
        adopted = []
        runstate.sweep(lambda names: [], lambda: set(), self.dir,
                       adopt_mount=adopted.append)
        self.assertEqual(adopted, ["/sys/kernel/tracing"])   # not a live one
        self.assertFalse(os.path.exists(path))

    def test_others_alive(self):
        self.assertFalse(runstate.others_alive(self.dir))
        self.write(os.getpid(), None, [])          # this process: not other
        self.write(dead_pid(), None, [])
        self.assertFalse(runstate.others_alive(self.dir))
        proc = subprocess.Popen(["sleep", "30"])
        try:
            self.write(proc.pid, None, [])
            self.assertTrue(runstate.others_alive(self.dir))
        finally:
            proc.kill()
            proc.wait()
        self.assertFalse(runstate.others_alive("/no/such/dir"))

    def test_garbage_files_are_skipped(self):
        with open(os.path.join(self.dir, "1.json"), "w") as f:
            f.write("{not json")
        with open(os.path.join(self.dir, "2.json"), "w") as f:
            json.dump({"pid": "x"}, f)
        self.assertEqual(self.sweep(set()), [])
        self.assertEqual(runstate.sweep(None, None, "/no/such/dir"), [])

    def test_note_and_done(self):
        state = runstate.RunState(os.path.join(self.dir, "sub"))
        state.note(events=["sdt_rt:alloc"], dirs=["/tmp/x"])
        state.note(perf=1234)
        with open(state.path) as f:
            self.assertEqual(json.load(f), {
                "pid": os.getpid(), "perf": 1234, "events": ["sdt_rt:alloc"],
                "dirs": ["/tmp/x"], "mounted": None})
        state.done()
        self.assertFalse(os.path.exists(state.path))


if __name__ == "__main__":
    unittest.main()
