"""limits.py: cgroup v1 and v2 limits read from files laid out as the
kernel lays them out, and the report's refusal before it starts."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "scripts"))
from allocsites_lib.read import limits  # noqa: E402


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class Cgroups(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(self.tmp))

    def test_v2_memory_and_cpu(self):
        root = os.path.join(self.tmp, "fs")
        write(os.path.join(self.tmp, "cgroup"), "0::/box/job\n")
        write(os.path.join(root, "box/job/memory.max"), "14000000000\n")
        write(os.path.join(root, "box/job/memory.current"), "4000000000\n")
        write(os.path.join(root, "box/job/cpu.max"), "150000 100000\n")
        version, dirs = limits.cgroup_dir(os.path.join(self.tmp, "cgroup"),
                                          root)
        self.assertEqual(version, 2)
        self.assertEqual(limits.cgroup_memory_left(version, dirs),
                         10000000000)
        self.assertEqual(limits.cgroup_cpus(version, dirs), 1.5)

    def test_v2_without_limits(self):
        root = os.path.join(self.tmp, "fs")
        write(os.path.join(self.tmp, "cgroup"), "0::/\n")
        write(os.path.join(root, "memory.max"), "max\n")
        write(os.path.join(root, "cpu.max"), "max 100000\n")
        version, dirs = limits.cgroup_dir(os.path.join(self.tmp, "cgroup"),
                                          root)
        self.assertIsNone(limits.cgroup_memory_left(version, dirs))
        self.assertIsNone(limits.cgroup_cpus(version, dirs))

    def test_v1_memory_and_cpu(self):
        root = os.path.join(self.tmp, "fs")
        write(os.path.join(self.tmp, "cgroup"),
              "5:cpu,cpuacct:/docker/x\n4:memory:/docker/x\n")
        write(os.path.join(root, "memory/docker/x/memory.limit_in_bytes"),
              "2000000000\n")
        write(os.path.join(root, "memory/docker/x/memory.usage_in_bytes"),
              "500000000\n")
        write(os.path.join(root, "cpu/docker/x/cpu.cfs_quota_us"), "-1\n")
        write(os.path.join(root, "cpu/docker/x/cpu.cfs_period_us"),
              "100000\n")
        version, dirs = limits.cgroup_dir(os.path.join(self.tmp, "cgroup"),
                                          root)
        self.assertEqual(version, 1)
        self.assertEqual(limits.cgroup_memory_left(version, dirs),
                         1500000000)
        self.assertIsNone(limits.cgroup_cpus(version, dirs))

    def test_v1_unlimited_is_no_limit(self):
        root = os.path.join(self.tmp, "fs")
        write(os.path.join(self.tmp, "cgroup"), "4:memory:/\n")
        write(os.path.join(root, "memory/memory.limit_in_bytes"),
              "9223372036854771712\n")
        write(os.path.join(root, "memory/memory.usage_in_bytes"), "1\n")
        version, dirs = limits.cgroup_dir(os.path.join(self.tmp, "cgroup"),
                                          root)
        self.assertIsNone(limits.cgroup_memory_left(version, dirs))


class Fits(unittest.TestCase):

    def test_fits_or_says_the_figures_and_the_way_out(self):
        events = 20 * 10 ** 6
        need = limits.report_need(events)
        self.assertIsNone(limits.fits(events, need))
        msg = limits.fits(events, need - 1)
        self.assertIn("%.1f GB" % (need / 1e9), msg)
        self.assertIn("20000000 events", msg)
        self.assertIn("--sample", msg)
        self.assertIsNone(limits.fits(events, None))

    def test_perf_script_holds_the_decompressed_recording(self):
        msg = limits.fits(1000, 10 ** 9, decompressed=90 * 10 ** 9)
        self.assertIn("90.0 GB the recording decompresses to", msg)
        self.assertIn("native reader", msg)

    def test_native_log_on_disk(self):
        events = 10 ** 8
        need = limits.LOG_BYTES_PER_EVENT * events
        self.assertIsNone(limits.native_fits(events, "/tmp", free=need))
        msg = limits.native_fits(events, "/tmp", free=need - 1)
        self.assertIn("%.1f GB in /tmp" % (need / 1e9), msg)
        self.assertIn("TMPDIR", msg)
        self.assertIsNone(limits.native_fits(events, "/nonexistent/dir"))

    def test_environment_bounds_what_is_available(self):
        self.assertEqual(limits.memory_available(
            {"ALLOCSITES_MEMORY": "12345"}), 12345)

    def test_cpus_within_the_quota(self):
        orig = limits.cgroup_cpus
        self.addCleanup(setattr, limits, "cgroup_cpus", orig)
        limits.cgroup_cpus = lambda: 1.5
        self.assertEqual(limits.cpus_available(8), 1)
        limits.cgroup_cpus = lambda: None
        self.assertEqual(limits.cpus_available(8), 8)


if __name__ == "__main__":
    unittest.main()
