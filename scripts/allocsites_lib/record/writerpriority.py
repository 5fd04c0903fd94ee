"""perf's writer ahead of the program: SCHED_FIFO, or nice.

Runs perf's writer ahead of the program it records: SCHED_FIFO, or a
lower nice value that the program is given back.
"""

import os
import shutil


class Boost:
    """Runs perf ahead of the program it records.

    perf's writer must drain the ring buffers as fast as the program fills
    them, and perf wakes it only when a ring is half full: if the writer
    then waits for a CPU, the other half fills and whole stretches of the
    run are lost (docs/design.md, "Recording defaults").

    Preferred: perf runs SCHED_FIFO at priority 1 with SCHED_RESET_ON_FORK,
    so its writer runs as soon as it wakes, and the program, which perf
    forks, is back to SCHED_OTHER at the caller's nice value. A Lua
    interpreter running luacheck lost events in 4 of 20 recordings
    without it and in none of 20 with it (docs/benchmarks.md, "A realtime
    writer"). Realtime throttling (sched_rt_runtime_us) still leaves the
    rest of the machine its share; the writer sleeps whenever the rings
    are drained. `realtime` is then True: preexec() sets it in perf's
    process before exec.

    Fallback, without the privilege to use SCHED_FIFO: this process lowers
    its own nice value by STEP while it starts perf (the child keeps it),
    and the program runs through `nice -n STEP`: back at the caller's
    priority, exactly (3 of 4 loaded runs of t_threads lost events at
    equal priority, none at -10). Without that privilege too, or without
    nice(1), nothing changes."""

    STEP = 10
    PRIORITY = 1

    def __init__(self):
        self.step = 0
        self.before = None
        self.realtime = False

    @classmethod
    def can_realtime(cls):
        """Whether this process may make a child SCHED_FIFO (tried on
        itself, then undone). ALLOCSITES_WRITER=nice in the environment
        asks for the fallback (bench/lossless_runs.py compares them)."""
        if not hasattr(os, "SCHED_RESET_ON_FORK") or \
                os.environ.get("ALLOCSITES_WRITER") == "nice":
            return False
        try:
            policy = os.sched_getscheduler(0)
            param = os.sched_getparam(0)
            os.sched_setscheduler(0, os.SCHED_FIFO,
                                  os.sched_param(cls.PRIORITY))
            os.sched_setscheduler(0, policy, param)
            return True
        except (OSError, AttributeError):
            return False

    def preexec(self):
        """In perf's process, before exec: the realtime policy."""
        if self.realtime:
            os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK,
                                  os.sched_param(self.PRIORITY))

    def __enter__(self):
        if self.can_realtime():
            self.realtime = True
            return self
        if shutil.which("nice") is None:
            return self
        try:
            self.before = os.getpriority(os.PRIO_PROCESS, 0)
            os.setpriority(os.PRIO_PROCESS, 0, self.before - self.STEP)
            self.step = self.STEP
        except OSError:
            self.before = None
        return self

    def __exit__(self, *exc):
        if self.step:
            os.setpriority(os.PRIO_PROCESS, 0, self.before)
        return False
