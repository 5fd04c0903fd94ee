"""A run's events and temporary files on disk, for the next run to undo.

What a recording run has made that must be undone, kept on disk so
that the next run can undo it if this one is killed (SIGKILL, OOM, power
cut of the terminal): its uprobe events, its temporary directories, the
tracefs mount it made, and the pids of allocsites and of its perf
record.

One JSON file per run, STATE_DIR/<pid>.json, rewritten whenever the run
makes something and removed when it has cleaned up. A later run calls
sweep() under the EventLock before it creates events of its own: a file
whose allocsites and perf are both gone is undone and removed. If perf is
still alive (allocsites was killed, its perf record was not), nothing is
touched: deleting an event that a perf still records crashed kernel 6.18
(docs/design.md, "Probe event lifecycle")."""

import json
import os
import shutil

STATE_DIR = "/run/allocsites"


def alive(pid):
    """Whether pid is a running process. A zombie is not: a killed run's
    perf, orphaned, may stay a zombie for good where init does not reap
    (a container's or a VM's minimal init), and it records nothing."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    # pid (comm) STATE ...: comm may hold spaces and parentheses.
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X", "")


class RunState:
    """This run's file. note() after each thing made; done() at the end."""

    def __init__(self, state_dir=STATE_DIR):
        self.dir = state_dir
        self.path = os.path.join(state_dir, "%d.json" % os.getpid())
        self.state = {"pid": os.getpid(), "perf": None, "events": [],
                      "dirs": [], "mounted": None}

    def note(self, events=None, dirs=None, perf=None, mounted=None):
        if mounted is not None:
            self.state["mounted"] = mounted
        if events is not None:
            self.state["events"] = list(events)
        if dirs is not None:
            self.state["dirs"] = list(dirs)
        if perf is not None:
            self.state["perf"] = perf
        try:
            os.makedirs(self.dir, mode=0o700, exist_ok=True)
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self.state, f)
            os.replace(tmp, self.path)
        except OSError:
            pass   # best effort: the run itself still cleans up

    def done(self):
        try:
            os.unlink(self.path)
        except OSError:
            pass


def others_alive(state_dir=STATE_DIR):
    """Whether another recording run (not this process) is alive."""
    try:
        names = os.listdir(state_dir)
    except OSError:
        return False
    for name in names:
        try:
            pid = int(name[:-len(".json")]) if name.endswith(".json") \
                else None
        except ValueError:
            continue
        if pid is not None and pid != os.getpid() and alive(pid):
            return True
    return False


def sweep(remove_events, existing_events, state_dir=STATE_DIR,
          adopt_mount=None):
    """Undoes the runs that died without cleaning up. remove_events(names)
    -> names it could not remove; existing_events() -> set of event names
    that exist now; adopt_mount(path): a dead run's tracefs mount, for
    this run to unmount when it ends as its own (the killed run cannot).
    Returns one-line messages for the user."""
    try:
        names = sorted(os.listdir(state_dir))
    except OSError:
        return []
    messages = []
    for name in names:
        if not name.endswith(".json"):
            continue
        path = os.path.join(state_dir, name)
        try:
            with open(path) as f:
                state = json.load(f)
            pid, perf = state["pid"], state.get("perf")
            events = [e for e in state["events"] if isinstance(e, str)]
            dirs = [d for d in state["dirs"] if isinstance(d, str)]
            mounted = state.get("mounted")
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            continue
        if alive(pid):
            continue
        if alive(perf):
            messages.append("probe events %s of a killed run (pid %s) are "
                            "still recorded by perf (pid %d); left alone"
                            % (" ".join(events), pid, perf))
            continue
        there = existing_events()
        left = [e for e in events if e in there]
        failed = remove_events(left) if left else []
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
        if failed:
            messages.append("could not remove probe events %s left by a "
                            "killed run (pid %s)" % (" ".join(failed), pid))
            continue
        if left:
            messages.append("removed probe events %s left by a killed run "
                            "(pid %s)" % (" ".join(left), pid))
        if isinstance(mounted, str) and adopt_mount is not None:
            adopt_mount(mounted)
        try:
            os.unlink(path)
        except OSError:
            pass
    return messages
