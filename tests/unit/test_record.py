"""record/'s modules and perfstderr.py without perf: the perf record
command line, ring sizes, the priority boost, perf.data checks, timeouts,
and perf's read errors."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import io
import shutil
import struct
import subprocess
import tempfile
import time

from allocsites_lib.read import perfstderr
from allocsites_lib.record import (binaries, buildids, datafile, eventlock,
                                   helpercmd, perfcommand, probeevents,
                                   programenv, recording, writerpriority)
from allocsites_lib.record.errors import RecordError

# the programs make all built (tests that need one skip without it)
BUILD = os.environ.get("BUILD", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build"))


class RecordCommandTest(unittest.TestCase):
    def test_defaults(self):
        cmd = perfcommand.record_command("perf", "out.data", ["sdt_rt:alloc"],
                                      ["sdt_rt:exit"], 8192, ["./prog", "a b"])
        pages = str(perfcommand.mmap_pages())
        self.assertEqual(cmd, [
            "perf", "record", "-o", "out.data", "-m", pages,
            "--compression-level=3", "--no-bpf-event",
            "--call-graph", "dwarf,8192", "-e", "sdt_rt:alloc",
            "-e", "sdt_rt:exit/call-graph=no/", "--", "./prog", "a b"])

    def test_boost_gives_the_program_its_priority_back(self):
        cmd = perfcommand.record_command("perf", "o", ["sdt_rt:alloc_1"], [], 4096,
                                      ["./prog", "-n"], boost=10)
        self.assertEqual(cmd[cmd.index("--"):], ["--", "nice", "-n", "10", "--", "./prog", "-n"])

    def test_system_wide_records_every_cpu_for_the_program(self):
        cmd = perfcommand.record_command("perf", "o", ["sdt_rt:alloc_1"],
                                         ["sdt_rt:exit_1"], 8192, ["./prog"],
                                         system_wide=True)
        self.assertEqual(cmd[cmd.index("-a"):], ["-a", "--", "./prog"])
        self.assertNotIn("-a", perfcommand.record_command(
            "perf", "o", ["sdt_rt:alloc_1"], [], 8192, ["./prog"]))

    def test_default_stack_size(self):
        self.assertEqual(perfcommand.DEFAULT_STACK_SIZE, 8192)


class CompressionFlagTest(unittest.TestCase):
    def test_level_3_unless_set(self):
        self.assertEqual(perfcommand.compression_flag({}),
                         "--compression-level=3")
        self.assertEqual(perfcommand.compression_flag(
            {"ALLOCSITES_ZSTD_LEVEL": "6"}), "--compression-level=6")
        for bad in ("0", "23", "x", "-1", ""):
            self.assertEqual(perfcommand.compression_flag(
                {"ALLOCSITES_ZSTD_LEVEL": bad}), "--compression-level=3")


class ProgramEnvironmentTest(unittest.TestCase):
    """The environment perf passes to the program: the stack pad of one
    stack copy (docs/design.md, "Whole stack copies"), RT_SAMPLE_BYTES in
    sampled mode, the rest as given."""

    def test_pad_one_stack_copy_long(self):
        env = programenv.program_environment({"HOME": "/h"}, 8192)
        self.assertEqual(env[programenv.STACK_PAD_VARIABLE], "." * 8192)
        self.assertEqual(env["HOME"], "/h")
        self.assertNotIn("RT_SAMPLE_BYTES", env)
        self.assertEqual(len(programenv.program_environment(
            {}, 65528)[programenv.STACK_PAD_VARIABLE]), 65528)

    def test_sampled_rate(self):
        env = programenv.program_environment({}, 8192, 524288)
        self.assertEqual(env["RT_SAMPLE_BYTES"], "524288")

    def test_caller_value_kept_and_base_untouched(self):
        base = {programenv.STACK_PAD_VARIABLE: ""}
        env = programenv.program_environment(base, 8192)
        self.assertEqual(env[programenv.STACK_PAD_VARIABLE], "")
        base2 = {}
        programenv.program_environment(base2, 8192)
        self.assertEqual(base2, {})


class MmapPagesTest(unittest.TestCase):
    def test_two_cpus_get_128_mib_each(self):
        self.assertEqual(perfcommand.mmap_pages(cpus=2), 32768)

    def test_a_ring_budget_of_its_own(self):
        rings = (32 << 20, 4 << 20, 16 << 20)
        self.assertEqual(perfcommand.mmap_pages(cpus=2, rings=rings), 4096)
        self.assertEqual(perfcommand.mmap_pages(cpus=64, rings=rings), 1024)

    def test_one_cpu_is_capped_at_128_mib(self):
        self.assertEqual(perfcommand.mmap_pages(cpus=1), 32768)

    def test_many_cpus_get_at_least_16_mib(self):
        self.assertEqual(perfcommand.mmap_pages(cpus=64), 4096)

    def test_power_of_two_below_the_share(self):
        # 256 MiB / 3 = 85.3 MiB -> 64 MiB = 16384 pages
        self.assertEqual(perfcommand.mmap_pages(cpus=3), 16384)


class SampledModeIsAsLosslessTest(unittest.TestCase):
    """Sampled mode starts perf as exact mode does: the same rings (-m),
    compression, control fd (writerwake), SCHED_FIFO writer
    (writerpriority): only its events differ. Its rings were 4096 pages
    where exact mode's were 32768 (2 CPUs), and under load a program of
    large blocks, nearly all sampled, lost 719 of 92,687 events where
    exact mode lost none (issue 31; bench/sampled_loss.py)."""

    def run_perf(self, sample, frees=False):
        import types
        from allocsites_lib.record import recording
        started = []

        class Child:
            pid = 4242

            def wait(self, timeout=None):
                return 0

        def popen(cmd, env=None, preexec_fn=None):
            started.append((cmd, env, preexec_fn))
            return Child()
        opts = types.SimpleNamespace(output="o.data", stack_size=8192,
                                     sample=sample, frees=frees,
                                     duration=None)
        events = types.SimpleNamespace(
            state=types.SimpleNamespace(note=lambda **_: None))
        interrupts = types.SimpleNamespace(child=None)
        real = recording.subprocess.Popen
        recording.subprocess.Popen = popen
        try:
            status = recording.run_perf(
                "perf", opts, ["./p"], None, "dwarf",
                ["sdt_rt:sample_1" if sample else "sdt_rt:alloc_1"],
                ["sdt_rt:free_1"], events, interrupts)
        finally:
            recording.subprocess.Popen = real
        self.assertEqual((status, len(started)), (0, 1))
        cmd, env, preexec = started[0]
        if "--control" in cmd:   # the pipe's fd: whichever is free
            cmd[cmd.index("--control") + 1] = "fifo:CONTROL"
        return cmd, env, preexec

    def test_same_perf_command_but_the_events(self):
        exact, exact_env, exact_pre = self.run_perf(0)
        for frees in (False, True):
            with self.subTest(frees=frees):
                sampled, env, pre = self.run_perf(65536, frees)
                self.assertEqual(
                    [a.replace("sample_1", "alloc_1") for a in sampled],
                    exact)
                pages = str(perfcommand.mmap_pages())
                self.assertEqual(sampled[sampled.index("-m") + 1], pages)
                self.assertIn("--control", sampled)
                self.assertIn("--compression-level=3", sampled)
                self.assertEqual(pre.__func__, exact_pre.__func__)
                self.assertEqual(env["RT_SAMPLE_BYTES"], "65536")
        # on this 2-core VM: 128 MiB per CPU, as exact mode
        if (os.cpu_count() or 1) == 2:
            self.assertEqual(exact[exact.index("-m") + 1], "32768")


class BoostTest(unittest.TestCase):
    def test_restores_the_priority_it_found(self):
        before = os.getpriority(os.PRIO_PROCESS, 0)
        policy = os.sched_getscheduler(0)
        with writerpriority.Boost() as boost:
            inside = os.getpriority(os.PRIO_PROCESS, 0)
        self.assertEqual(os.getpriority(os.PRIO_PROCESS, 0), before)
        self.assertEqual(os.sched_getscheduler(0), policy)
        if os.geteuid() == 0:   # root may use SCHED_FIFO: no nice step
            self.assertEqual((boost.realtime, boost.step, inside),
                             (True, 0, before))
        else:
            self.assertFalse(boost.realtime)

    def test_perf_is_realtime_and_its_children_are_not(self):
        """What perf gets (SCHED_FIFO 1, reset on fork) and what the
        program it forks gets (the caller's policy), from a real child
        and grandchild."""
        import subprocess
        with writerpriority.Boost() as boost:
            if not boost.realtime:
                self.skipTest("no privilege for SCHED_FIFO")
            out = subprocess.run(
                ["/bin/sh", "-c", "cat /proc/$$/sched | grep -E '^policy';"
                 " sh -c 'grep -E ^policy /proc/$$/sched'"],
                preexec_fn=boost.preexec, stdout=subprocess.PIPE,
                universal_newlines=True, check=True).stdout.split()
        self.assertEqual([out[2], out[5]], ["1", "0"])   # FIFO, then OTHER


def perf_data(path, data_offset, data_size, total):
    header = b"PERFILE2" + struct.pack("<QQQQQQ", 104, 136, 288, 424,
                                       data_offset, data_size)
    with open(path, "wb") as f:
        f.write(header + b"\0" * (total - len(header)))


class CheckPerfDataTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "perf.data")

    def tearDown(self):
        self.tmp.cleanup()

    def test_whole_file_passes(self):
        perf_data(self.path, 424, 1000, 424 + 1000 + 300)
        datafile.check_perf_data(self.path)

    def test_file_cut_inside_its_data(self):
        perf_data(self.path, 424, 1000, 1000)
        with self.assertRaises(RecordError) as cm:
            datafile.check_perf_data(self.path)
        self.assertEqual(str(cm.exception), "%s is truncated or not a complete "
                         "perf.data (424 of its 1000 bytes of data are missing)"
                         % self.path)

    def test_file_cut_inside_its_header(self):
        with open(self.path, "wb") as f:
            f.write(b"PERFILE2" + b"\0" * 20)
        with self.assertRaisesRegex(RecordError, "truncated or not a complete"):
            datafile.check_perf_data(self.path)

    def test_not_perf_data(self):
        with open(self.path, "wb") as f:
            f.write(b"<svg>" + b"\0" * 100)
        with self.assertRaisesRegex(RecordError, "not a perf.data file"):
            datafile.check_perf_data(self.path)


class RunTest(unittest.TestCase):
    def test_output_and_status(self):
        proc = helpercmd.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
        self.assertEqual((proc.returncode, proc.stdout), (3, b"out\nerr\n"))

    def test_a_command_that_does_not_answer_is_one_line(self):
        with self.assertRaises(RecordError) as cm:
            helpercmd.run(["sleep", "30"], timeout=0.2)
        self.assertRegex(str(cm.exception), r"^sleep did not answer in 0 s \(30\)")

    def test_missing_command(self):
        with self.assertRaisesRegex(RecordError, "cannot run /nonexistent/x"):
            helpercmd.run(["/nonexistent/x"])


class PerfStderrTest(unittest.TestCase):
    def test_read_errors_found_among_perf_warnings(self):
        lines = ["Warning:", "Processed 17380 events and lost 2 chunks!",
                 "failed to decompress (B): 65527 -> 67112960 : Data corruption detected",
                 "Couldn't decompress data",
                 "0x1825f [0xffff]: failed to process type: 81 [Operation not permitted]",
                 "WARNING: The perf.data file's data size field is 0 which is unexpected.",
                 "no symbols found in /usr/bin/true, maybe install a debug package?"]
        self.assertEqual(perfstderr.read_errors(lines), [lines[2], lines[3], lines[4],
                                                         lines[5]])

    def test_unwinding_messages_are_not_read_errors(self):
        # perf's unwinder on one sample (--user-regs=ip,sp; a stack it
        # cannot follow): that stack ends, the file is read on
        lines = ["unwind: can't read reg 6", "unwind: no map for 9",
                 "failed to read event header"]
        self.assertEqual(perfstderr.read_errors(lines), [lines[2]])

    def test_capture_keeps_and_replays_fd_2(self):
        with tempfile.TemporaryFile() as real:
            saved = os.dup(2)
            os.dup2(real.fileno(), 2)
            try:
                cap = perfstderr.Capture()
                os.write(2, b"failed to process type: 1\n")
                lines = cap.finish()
                os.write(2, b"after\n")
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            real.seek(0)
            self.assertEqual(real.read(), b"failed to process type: 1\nafter\n")
        self.assertEqual(lines, ["failed to process type: 1"])


if __name__ == "__main__":
    unittest.main()


class ProbeEventsRemoveTest(unittest.TestCase):
    """remove() deletes every created event in one perf probe call, and
    falls back to one call per name to find the ones that fail."""

    def fake_perf(self, tmp, failing):
        log = os.path.join(tmp, "log")
        perf = os.path.join(tmp, "perf")
        with open(perf, "w") as f:
            f.write("#!/bin/sh\necho \"$*\" >> %s\ncase \"$*\" in *%s*) exit 1;; esac\n"
                    "exit 0\n" % (log, failing))
        os.chmod(perf, 0o755)
        return perf, log

    def test_one_call_for_all(self):
        with tempfile.TemporaryDirectory() as tmp:
            perf, log = self.fake_perf(tmp, "nothing-fails")
            events = probeevents.ProbeEvents(perf)
            events.created = ["sdt_rt:alloc_1", "sdt_rt:exit_1"]
            self.assertEqual(events.remove(), [])
            with open(log) as f:
                self.assertEqual(f.read(), "probe -q -d sdt_rt:alloc_1 -d sdt_rt:exit_1\n")
            self.assertEqual(events.created, [])

    def test_failure_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            perf, log = self.fake_perf(tmp, "exit_1")
            events = probeevents.ProbeEvents(perf)
            events.created = ["sdt_rt:alloc_1", "sdt_rt:exit_1"]
            self.assertEqual(events.remove(), ["sdt_rt:exit_1"])
            with open(log) as f:
                self.assertEqual(f.read().splitlines(), [
                    "probe -q -d sdt_rt:alloc_1 -d sdt_rt:exit_1",
                    "probe -q -d sdt_rt:alloc_1", "probe -q -d sdt_rt:exit_1"])


class ProbeEventsAddTest(unittest.TestCase):
    """add() believes tracefs, not perf's "Added new event": for a path
    with a space perf 6.1 says it added the event and nothing exists."""

    def setup(self, tmp, listed):
        perf = os.path.join(tmp, "perf")
        with open(perf, "w") as f:
            f.write("#!/bin/sh\necho 'Added new event:'\n"
                    "echo '  sdt_rt:alloc_1       (on alloc in /a b/prog)'\n")
        os.chmod(perf, 0o755)
        with open(os.path.join(tmp, "uprobe_events"), "w") as f:
            f.write(listed)
        events = probeevents.ProbeEvents(perf, tmp)
        self.addCleanup(events.remove)
        return events

    def test_event_the_kernel_has(self):
        with tempfile.TemporaryDirectory() as tmp:
            events = self.setup(tmp, "p:sdt_rt/alloc /x:0x10 arg1=%ax:u64\n"
                                "p:sdt_rt/alloc_1 /a:0x10 arg1=%ax:u64\n")
            self.assertEqual(events.add("/a b/prog", "alloc"),
                             "sdt_rt:alloc_1")

    def test_event_the_kernel_lacks_is_one_line_naming_the_space(self):
        with tempfile.TemporaryDirectory() as tmp:
            events = self.setup(tmp, "p:sdt_rt/alloc /x:0x10 arg1=%ax:u64\n")
            with self.assertRaises(RecordError) as cm:
                events.add("/a b/prog", "alloc")
            self.assertEqual(str(cm.exception).count("\n"), 0)
            self.assertIn("the kernel has no such event: perf cannot probe "
                          "a path with a space", str(cm.exception))
            # Not this run's to remove: it does not exist, and another
            # run may create an event of that name later (issue 21).
            self.assertEqual(events.created, [])


class ResolveLibraryTest(unittest.TestCase):
    def test_library_without_execute_bit(self):
        with tempfile.TemporaryDirectory() as tmp:
            lib = os.path.join(tmp, "librt.so")
            with open(os.path.realpath("/bin/sh"), "rb") as src, \
                    open(lib, "wb") as dst:
                dst.write(src.read())
            os.chmod(lib, 0o644)
            self.assertEqual(binaries.resolve_library(lib), lib)
            with open(os.path.join(tmp, "text.so"), "w") as f:
                f.write("not elf")
            with self.assertRaisesRegex(RecordError, "not an ELF64"):
                binaries.resolve_library(os.path.join(tmp, "text.so"))
            with self.assertRaisesRegex(RecordError, "no such file"):
                binaries.resolve_library(os.path.join(tmp, "none.so"))


class UnprobeablePathTest(unittest.TestCase):
    def test_space_or_control_character_refused_in_one_line(self):
        # a probe definition is a line of words: a newline in the path
        # made the kernel's EINVAL two lines of ours, after the attempt
        prog = os.path.join(BUILD, "tests", "t_basic")
        if not os.path.exists(prog):
            self.skipTest("needs make all (build/tests/t_basic)")
        opts = type("Opts", (), {"libs": []})()
        for dirname in ("new\nline", "a space", "tab\there"):
            with self.subTest(dirname=dirname), \
                    tempfile.TemporaryDirectory() as tmp:
                d = os.path.join(tmp, dirname)
                os.mkdir(d)
                shutil.copy(prog, d)
                copy = os.path.join(d, "t_basic")
                with self.assertRaises(RecordError) as cm:
                    recording.probe_targets(opts, [copy], None, "alloc")
                msg = str(cm.exception)
                self.assertNotIn("\n", msg)
                self.assertIn("perf cannot probe a path with a space or a "
                              "control character: %r" % copy, msg)


class DeletedBinariesTest(unittest.TestCase):
    """-p PID of a process whose program or library was deleted (or
    replaced: an upgrade, a rebuild) since it started: perf can only probe
    the file now at that path, so attaching says so, in one line."""

    def start(self, argv):
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.stdin.close)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        self.assertEqual(proc.stdout.readline(), b"up\n")
        return proc.pid

    def test_program_deleted(self):
        with tempfile.TemporaryDirectory() as tmp:
            prog = os.path.join(tmp, "prog")
            shutil.copy(os.path.realpath("/bin/sh"), prog)   # with its mode
            pid = self.start([prog, "-c", "echo up; read x"])
            self.assertEqual(binaries.process_binaries(pid)[2], [])
            os.unlink(prog)
            with self.assertRaisesRegex(
                    RecordError, r"^-p %d: its program %s was deleted or "
                    r"replaced since the process started .*restart the "
                    r"process, then attach$" % (pid, prog)):
                binaries.process_binaries(pid)

    def test_replaced_library_without_the_probe_is_a_warning(self):
        # rt:alloc in the program, a library replaced since it was loaded
        # (a preloaded copy of librtalloc.so, deleted): recorded, said
        prog = os.path.join(BUILD, "tests", "t_loop")
        lib = os.path.join(BUILD, "librtalloc.so")
        if not (os.path.exists(prog) and os.path.exists(lib)):
            self.skipTest("needs make all (build/tests/t_loop)")
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "libcopy.so")
            shutil.copyfile(lib, copy)
            proc = subprocess.Popen([prog, "30"], stdout=subprocess.DEVNULL,
                                    env=dict(os.environ, LD_PRELOAD=copy))
            self.addCleanup(proc.wait)
            self.addCleanup(proc.kill)
            maps = "/proc/%d/maps" % proc.pid
            for _ in range(500):   # until the loader has mapped it
                with open(maps) as f:
                    if copy in f.read():
                        break
                time.sleep(0.01)
            os.unlink(copy)
            out = io.StringIO()
            opts = type("Opts", (), {"libs": []})()
            _, _, found = recording.probe_targets(opts, [], proc.pid,
                                                  "alloc", out)
            self.assertEqual([path for path, _ in found],
                             [os.path.realpath(prog)])
            self.assertRegex(out.getvalue(), r"^allocsites: warning: "
                             r"process %d \(.*\) maps libraries deleted or "
                             r"replaced since they were loaded, or another "
                             r"mount namespace's: %s; their probes are not "
                             r"recorded" % (proc.pid, copy))

    def test_memfd_code_is_no_replaced_library(self):
        # a JIT's code in a memfd ("/memfd:jit (deleted)" in the maps):
        # memory, not a file replaced since it was loaded
        code = ("import ctypes, mmap, os, sys\n"
                "fd = os.memfd_create('jit')\n"
                "os.write(fd, b'\\xc3' * 4096)\n"
                "m = mmap.mmap(fd, 4096, prot=mmap.PROT_READ | "
                "mmap.PROT_EXEC)\n"
                "print('up', flush=True); sys.stdin.read()\n")
        pid = self.start([sys.executable, "-c", code])
        with open("/proc/%d/maps" % pid) as f:
            self.assertIn("/memfd:jit (deleted)", f.read())
        self.assertEqual(binaries.process_binaries(pid)[2], [])

    def test_program_of_another_mount_namespace(self):
        # a container's program: its path names another file here (or
        # none); a private mount namespace over the same files (systemd's
        # PrivateTmp=) is no container
        if os.geteuid() != 0 or not shutil.which("unshare") or \
                subprocess.run(["unshare", "--mount", "true"],
                               stderr=subprocess.DEVNULL).returncode:
            self.skipTest("needs root and unshare --mount")
        sh = os.path.realpath("/bin/sh")
        with tempfile.TemporaryDirectory() as tmp:
            inner = os.path.join(tmp, "inner")
            os.mkdir(inner)
            script = ("mount -t tmpfs none {d} && cp {sh} {d}/prog && "
                      "exec {d}/prog -c 'echo up; read x'").format(
                          d=inner, sh=sh)
            pid = self.start(["unshare", "--mount", "--propagation",
                              "private", "sh", "-c", script])
            with self.assertRaisesRegex(
                    RecordError, r"^-p %d: its program %s/prog is not the "
                    r"file at that path here: the process runs in another "
                    r"mount namespace" % (pid, inner)):
                binaries.process_binaries(pid)
            pid = self.start(["unshare", "--mount", "--propagation",
                              "private", sh, "-c", "echo up; read x"])
            self.assertEqual(binaries.process_binaries(pid)[0], sh)

    def test_probed_library_deleted(self):
        lib = os.path.join(BUILD, "librtalloc.so")
        if not os.path.exists(lib):
            self.skipTest("needs make all (build/librtalloc.so)")
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "librtalloc.so")
            shutil.copyfile(lib, copy)
            pid = self.start([sys.executable, "-c",
                              "import ctypes, sys; ctypes.CDLL(%r); "
                              "print('up', flush=True); sys.stdin.read()"
                              % copy])
            opts = type("Opts", (), {"libs": []})()
            # in place: its probes are found
            _, _, found = recording.probe_targets(opts, [], pid, "alloc")
            self.assertIn(copy, [path for path, _ in found])
            os.unlink(copy)
            self.assertEqual(binaries.process_binaries(pid)[2], [copy])
            with self.assertRaisesRegex(
                    RecordError, r"^no rt:alloc probe in process %d .*that "
                    r"are still in place; deleted or replaced since they "
                    r"were loaded .*: %s; restart the process, then attach$"
                    % (pid, copy)):
                recording.probe_targets(opts, [], pid, "alloc")


class ResolveProgramTest(unittest.TestCase):
    def test_a_script_only_where_allowed(self):
        # a script PROG is taken when --lib names the probed programs it
        # starts (scripts=True), refused otherwise; a text file without
        # #! is refused either way, and a script links no libraries
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "run.sh")
            text = os.path.join(tmp, "notes")
            for path, body in ((script, "#!/bin/sh\nexit 0\n"),
                               (text, "exit 0\n")):
                with open(path, "w") as f:
                    f.write(body)
                os.chmod(path, 0o755)
            self.assertEqual(binaries.resolve_program(script, scripts=True),
                             os.path.realpath(script))
            with self.assertRaisesRegex(RecordError, "--lib PROG"):
                binaries.resolve_program(script)
            with self.assertRaisesRegex(RecordError, "not an ELF64"):
                binaries.resolve_program(text, scripts=True)
            self.assertEqual(binaries.probed_binaries(
                os.path.realpath(script)), [])


    def test_object_files_and_split_debug_info_are_no_programs(self):
        # executable bits and ELF headers, but nothing the kernel runs
        # (perf would hand the file to /bin/sh and record nothing): an
        # object file, a debug-info file, each named; the program
        # itself taken
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "p.c")
            with open(src, "w") as f:
                f.write("int main(void) { return 0; }\n")
            prog, obj = os.path.join(tmp, "p"), os.path.join(tmp, "p.o")
            debug = os.path.join(tmp, "p.debug")
            subprocess.run(["gcc", "-g", "-c", src, "-o", obj], check=True)
            subprocess.run(["gcc", "-g", obj, "-o", prog], check=True)
            subprocess.run(["objcopy", "--only-keep-debug", prog, debug],
                           check=True)
            os.chmod(obj, 0o755)
            os.chmod(debug, 0o755)
            self.assertEqual(binaries.resolve_program(prog),
                             os.path.realpath(prog))
            with self.assertRaisesRegex(RecordError, "p.o is an object "
                                        "file"):
                binaries.resolve_program(obj)
            with self.assertRaisesRegex(RecordError, "p.debug is debug "
                                        "info split off a program"):
                binaries.resolve_program(debug)


class LaunchedProgramsTest(unittest.TestCase):
    def test_elf_words_in_order_options_and_assignments_skipped(self):
        # env A=1 nice -n 5 timeout 60 PROG ARG: the ELF files among the
        # words, in order (record probes the first with rt probes)
        import shutil
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "run.sh")
            with open(script, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(script, 0o755)
            words = ["A=/bin/true", "-n", "5", "nice", "60", "/nonexistent",
                     script, "true", "x"]
            self.assertEqual(list(binaries.launched_programs(words)),
                             [os.path.realpath(shutil.which(w))
                              for w in ("nice", "true")])


class EnvironmentValuesTest(unittest.TestCase):
    def test_fast_site_other_values_are_said(self):
        import io
        from allocsites_lib.record.recording import fast_site
        for value, want, said in ((None, False, False), ("", False, False),
                                  ("0", False, False), ("1", True, False),
                                  ("yes", False, True), ("true", False, True)):
            out = io.StringIO()
            env = {} if value is None else {"ALLOCSITES_FAST_SITE": value}
            self.assertEqual(fast_site(env, out), want, value)
            self.assertEqual(bool(out.getvalue()), said, value)
            if said:
                self.assertEqual(out.getvalue(), "allocsites: warning: "
                                 "ALLOCSITES_FAST_SITE=%s is neither 0 nor "
                                 "1: every probe at the trap\n" % value)

    def test_reader_other_values_are_said(self):
        from allocsites_lib.read.reading import reader_value_warning
        for value in (None, "", "native", "perf"):
            env = {} if value is None else {"ALLOCSITES_READER": value}
            self.assertIsNone(reader_value_warning(env), value)
        self.assertEqual(reader_value_warning({"ALLOCSITES_READER": "prof"}),
                         "allocsites: warning: ALLOCSITES_READER=prof is "
                         "neither perf nor native: the native reader reads")


class CheckOutputTest(unittest.TestCase):
    """-o never lets perf move away a file that is not a recording."""

    def test_cases(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "run.data")
            self.assertEqual(datafile.check_output(out), "")
            with open(out, "w") as f:
                f.write("my notes\n")
            with self.assertRaisesRegex(RecordError, "exists and is not a "
                                        "perf.data recording; not touching"):
                datafile.check_output(out)
            with open(out, "wb") as f:
                f.write(datafile.PERF_MAGIC + b"\0" * 100)
            self.assertEqual(datafile.check_output(out),
                             "allocsites: the previous %s is kept as %s.old\n"
                             % (out, out))
            with open(out + ".old", "w") as f:
                f.write("precious\n")
            with self.assertRaisesRegex(RecordError, "run.data.old, which "
                                        "exists and is not a perf.data"):
                datafile.check_output(out)
            with self.assertRaisesRegex(RecordError, "is a directory"):
                datafile.check_output(tmp)


class BuildIdsTest(unittest.TestCase):
    """The probed binaries' build-ids beside the recording, read back."""

    def test_round_trip(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "run.data")
            sh = os.path.realpath("/bin/sh")
            buildids.write_buildids(data, [sh, os.path.join(tmp, "gone")])
            ids = buildids.read_buildids(data)
            self.assertEqual(list(ids), [sh])
            [bid] = ids[sh]
            self.assertRegex(bid, "^[0-9a-f]{40}$")
            self.assertEqual(buildids.read_buildids(os.path.join(tmp, "x")),
                             {})
            # damaged: read as none, never as a binary that changed or
            # was not probed
            for text in ('[1, 2]', 'null', '{"%s": 5}' % sh,
                         '{"%s": ["ab"]}' % sh, '{"%s": "not hex"}' % sh,
                         '{"": "ab"}', '{"rel/path": "ab"}', '\xff{',
                         '{"%s": "%s", "/x": 1}' % (sh, bid)):
                with open(buildids.buildids_path(data), "w",
                          encoding="latin-1") as f:
                    f.write(text)
                self.assertEqual(buildids.read_buildids(data), {}, text)


class EventLockTest(unittest.TestCase):
    def test_second_holder_waits_then_gives_up_with_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            open(os.path.join(tmp, "uprobe_events"), "w").close()
            with eventlock.EventLock(tmp):
                with self.assertRaisesRegex(RecordError, r"another allocsites has held "
                                            r".*uprobe_events for 0 s"):
                    with eventlock.EventLock(tmp, timeout=0.1):
                        pass
            with eventlock.EventLock(tmp, timeout=0.1):   # free again
                pass


class DirectEventsTest(unittest.TestCase):
    """ProbeEvents writes the allocation and plain events to tracefs
    itself (probedefs.py): here into a plain file standing for
    uprobe_events."""

    def setUp(self):
        from fixtures import CProgram, require_toolchain
        require_toolchain()
        self.prog = CProgram()
        self.tracefs = tempfile.mkdtemp(prefix="allocsites-tracefs-")
        open(os.path.join(self.tracefs, "uprobe_events"), "w").close()
        self.events = probeevents.ProbeEvents("perf", self.tracefs)

    def tearDown(self):
        self.prog.cleanup()
        import shutil
        shutil.rmtree(self.tracefs)

    def written(self):
        with open(os.path.join(self.tracefs, "uprobe_events")) as f:
            return f.read().splitlines()

    def test_one_event_for_every_binary(self):
        name = self.events.add_alloc(self.prog.path, "alloc")
        self.assertEqual(name, "sdt_rt:alloc_%d" % os.getpid())
        self.assertEqual(self.events.add_alloc(self.prog.path, "alloc"), name)
        self.assertEqual(self.events.created, [name])
        lines = self.written()
        self.assertTrue(lines)
        self.assertTrue(all(l.startswith("p:sdt_rt/alloc_%d " % os.getpid())
                            for l in lines))

    def test_a_refused_append_falls_back_to_perf_probe(self):
        """The kernel refuses (EINVAL) a probe whose fields differ from the
        event's: that binary gets perf probe's own events (None here),
        while a refused first definition is an error."""
        import errno
        from unittest import mock
        name = self.events.add_alloc(self.prog.path, "alloc")
        einval = OSError(errno.EINVAL, "Invalid argument")
        with mock.patch("os.write", side_effect=einval):
            self.assertIsNone(self.events.add_alloc(self.prog.path, "alloc"))
            with self.assertRaises(RecordError):
                self.events.add_plain(self.prog.path, {"exit"})
        self.assertIn(name, self.events.created)
