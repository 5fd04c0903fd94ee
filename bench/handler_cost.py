#!/usr/bin/python3
"""The Python work per event inside perf's handler, without perf.

  /usr/bin/python3 bench/handler_cost.py [--allocs N] [--chains N]
                                         [--runs N] [--seed N] [--scripts DIR]

Loads scripts/allocsites.py as perf would run it for `allocsites report`
(a worker: --worker-out, --worker-progress, --worker-pids, perf script
--no-inline, so perf calls the 3-argument trace_unhandled) and feeds its
trace_unhandled synthetic field dicts shaped like perf 6.1's for an exact
recording of the demo (build/minicc 500: 213,431 allocations, 3,510
distinct call chains): N allocation events (sdt_rt__alloc_1: arg1..arg3,
common_*, a call chain of 10 to 20 entry dicts {ip, sym {start, end,
name}, sym_off, dso}, drawn from --chains distinct chains, a few of them
hot), each freed later through the plain event (sdt_rt__plain_2: kind 1,
a..h, common_*), as tests/unit/test_parse.py's PlainEventTest shapes
them. What is timed is only the handler (trace_unhandled: Run.event,
parse.Reader, Tally, EventLog).

The events are built 256 at a time, just before the handler gets
them, as perf builds each event's dicts just before its call: the timing
covers the handler only, with its input in the CPU's caches as in perf.

Prints the median over --runs (default 5) of the microseconds per alloc
event (the allocations alone through a fresh handler), per free event
(the frees alone), and per alloc+free pair in the recording's interleaved
order, once with the event log on (the real handler) and once with
Tally(log=False) for comparison. The cyclic GC is off while timing, as
it is in the handler.

Machine for the figures in bench/README.md: the project's reference VM,
2 cores (AMD EPYC), Debian 12, kernel 6.18.44, /usr/bin/python3 3.11.2;
command: /usr/bin/python3 bench/handler_cost.py (defaults: --allocs
200000 --chains 3500 --runs 5 --seed 1), about a minute. No root, no
perf needed. To time an older version of the handler on the same input:

  git archive REV scripts | tar -x -C /tmp/old
  /usr/bin/python3 bench/handler_cost.py --scripts /tmp/old/scripts
"""

import argparse
import gc
import heapq
import importlib.util
import os
import pickle
import random
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCRIPTS = os.path.join(ROOT, "scripts")

PID = 4242
EXE = "/work/build/minicc"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
ALLOC_EVENT = "sdt_rt__alloc_1"
PLAIN_EVENT = "sdt_rt__plain_2"


# ------------------------------------------------------------ the input

def make_chains(rng, n_chains):
    """n_chains distinct perf call chains (lists of entry dicts, leaf
    first): rt_alloc, sometimes a wrapper, 6 to 16 frames of a compiler's
    functions, then main and libc's start."""
    functions = []
    addr = 0x401000
    for i in range(400):
        size = rng.randrange(0x40, 0x800)
        functions.append(("fn_%03d" % i, addr, addr + size))
        addr += size
    load = 0x555555554000   # the executable's load bias (PIE)

    def entry(fn, dso=EXE, bias=load):
        name, start, end = fn
        off = rng.randrange(5, end - start)
        return {"ip": bias + start + off,
                "sym": {"start": start, "end": end, "name": name},
                "sym_off": off, "dso": dso}

    def fixed(name, start, off, dso, bias):
        return {"ip": bias + start + off,
                "sym": {"start": start, "end": start + 0x200, "name": name},
                "sym_off": off, "dso": dso}

    libc_bias = 0x7ffff7d80000
    rt_alloc = fixed("rt_alloc", 0x400800, 0x2c, EXE, load)
    xmalloc = fixed("xmalloc", 0x400900, 0x19, EXE, load)
    main = fixed("main", 0x400a00, 0x83, EXE, load)
    root = [fixed("__libc_start_call_main", 0x27200, 0x8a, LIBC, libc_bias),
            fixed("__libc_start_main_impl", 0x27280, 0x85, LIBC, libc_bias),
            fixed("_start", 0x400600, 0x21, EXE, load)]
    # Call sites: each function calls from a few places.
    sites = {fn: [entry(fn) for _ in range(3)] for fn in functions}
    chains, seen = [], set()
    while len(chains) < n_chains:
        depth = rng.randrange(6, 17)   # 10 to 20 entries in all
        middle = [rng.choice(sites[rng.choice(functions)])
                  for _ in range(depth)]
        chain = [rt_alloc] + ([xmalloc] if rng.random() < 0.5 else []) + \
            middle + [main] + root
        ips = tuple(e["ip"] for e in chain)
        if ips not in seen:
            seen.add(ips)
            chains.append(chain)
    return chains


def alloc_fields(chain, tid, t, ptr, size, tag):
    f = {"common_cpu": 1, "common_s": t // 1000000000,
         "common_ns": t % 1000000000, "common_pid": tid,
         "common_comm": "minicc",
         # perf builds a new list of new entry dicts, new ints, per event
         "common_callchain": [{"ip": e["ip"] + 0, "sym": e["sym"],
                               "sym_off": e["sym_off"], "dso": e["dso"]}
                              for e in chain],
         "__probe_ip": 0x555555954a2c}
    f["arg1"], f["arg2"], f["arg3"] = ptr, size, tag
    return f


def free_fields(tid, t, ptr, size, tag):
    f = {"common_cpu": 1, "common_s": t // 1000000000,
         "common_ns": t % 1000000000, "common_pid": tid,
         "common_comm": "minicc", "__probe_ip": 0x555555954b10, "kind": 1}
    # a free's tag is fetched as u64: the upper half is whatever the
    # register held
    f["a"], f["b"], f["c"] = ptr, size, (((ptr >> 4) & 0xffff) << 32) | tag
    f["d"] = f["e"] = f["f"] = f["g"] = f["h"] = 0
    return f


def make_stream(n_allocs, n_chains, seed):
    """(chains, events): the call chains and, in time order, n_allocs
    allocations, ("alloc", chain index, tid, time, ptr, size, tag), and
    one free for each, ("free", tid, time, ptr, size, tag): most soon
    after the allocation, some late, the rest at the end."""
    rng = random.Random(seed)
    chains = make_chains(rng, n_chains)
    # A few hot chains, a long tail (as a parser's allocations are).
    weights = [1.0 / (i + 1) ** 0.9 for i in range(n_chains)]
    picks = rng.choices(range(n_chains), weights, k=n_allocs)
    tids = [PID, PID, PID, PID + 1]   # mostly the main thread
    stream, due = [], []   # due: heap of (event index, seq, ptr, size, tag, tid)
    free_ptrs, next_ptr = [], 0x5555559a0000
    t = 1700000000 * 1000000000
    seq = 0
    for i, chain_i in enumerate(picks):
        while due and due[0][0] <= i:
            _, _, ptr, size, tag, tid = heapq.heappop(due)
            t += rng.randrange(200, 1500)
            stream.append(("free", tid, t, ptr, size, tag))
            free_ptrs.append(ptr)
        if free_ptrs and rng.random() < 0.9:
            ptr = free_ptrs.pop()
        else:
            ptr, next_ptr = next_ptr, next_ptr + 64
        size = rng.choice((8, 16, 24, 32, 48, 64, 96, 128, 256, 1024, 4096))
        tag = chain_i % 7
        tid = rng.choice(tids)
        t += rng.randrange(300, 3000)
        stream.append(("alloc", chain_i, tid, t, ptr, size, tag))
        r = rng.random()
        if r < 0.8:
            life = int(rng.expovariate(1 / 40.0)) + 1
        elif r < 0.95:
            life = rng.randrange(1000, 50000)
        else:
            life = n_allocs   # freed at the end
        seq += 1
        heapq.heappush(due, (i + life, seq, ptr, size, tag, tid))
    while due:
        _, _, ptr, size, tag, tid = heapq.heappop(due)
        t += rng.randrange(200, 1500)
        stream.append(("free", tid, t, ptr, size, tag))
    return chains, stream


def perf_events(chains, events):
    """[(event name, fields)] as perf hands them to the handler."""
    out = []
    for e in events:
        if e[0] == "alloc":
            _, chain_i, tid, t, ptr, size, tag = e
            out.append((ALLOC_EVENT, alloc_fields(chains[chain_i], tid, t,
                                                  ptr, size, tag)))
        else:
            out.append((PLAIN_EVENT, free_fields(*e[1:])))
    return out


# ------------------------------------------------------------ the handler

def load_handler(tmpdir, scripts):
    """scripts/allocsites.py loaded as a perf script worker would run it;
    returns (the module, the worker's options)."""
    entry = os.path.join(scripts, "allocsites.py")
    sys.path.insert(0, scripts)
    from allocsites_lib import perfrun
    pids_path = os.path.join(tmpdir, "pids")
    with open(pids_path, "wb") as f:
        pickle.dump({PID: PID, PID + 1: PID}, f)
    argv = ["--worker-out", os.path.join(tmpdir, "tally"),
            "--worker-progress", os.path.join(tmpdir, "progress"),
            "--worker-pids", pids_path]
    perf_argv = ["perf", "script", "-i", "perf.data", "--no-inline",
                 "--max-stack", "8192", "-s", entry, "--"] + argv
    perfrun.perf_argv = lambda pid="self": list(perf_argv)
    saved = sys.argv
    sys.argv = [entry] + argv
    try:
        spec = importlib.util.spec_from_file_location("allocsites_entry",
                                                      entry)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.argv = saved
    return module, argv


def fresh_run(module, argv, log):
    """A new Run (a new Tally, Reader and EventLog), as at perf's start."""
    from allocsites_lib.fold import Tally
    run = module.Run(argv)
    if not log:
        tally = Tally(run.opts.min_size, log=False)
        if hasattr(run, "use_tally"):
            run.use_tally(tally)
        else:
            run.tally, run.add = tally, tally.add_fields
    module._RUN = run
    return run


# perf builds each event's dicts just before it calls the handler, so
# they are in the CPU's caches when the handler reads them. The events
# are built here CHUNK at a time, untimed, and the handler is timed over
# each chunk: prebuilding all 400,000 would time cache misses on field
# dicts instead of the handler's work.
CHUNK = 256


def time_stream(module, argv, chains, events, log):
    """Seconds in the handler for events, and the Run."""
    run = fresh_run(module, argv, log)
    handler = module.trace_unhandled
    clock = time.process_time   # this process's CPU time: a busy
    # neighbour on the other core does not count
    elapsed = 0.0
    for i in range(0, len(events), CHUNK):
        chunk = perf_events(chains, events[i:i + CHUNK])
        start = clock()
        for name, fields in chunk:
            handler(name, None, fields)
        elapsed += clock() - start
    flush = getattr(getattr(run, "handle", None), "flush", None)
    if flush is not None:   # the event log's last batch (trace_end's)
        start = clock()
        flush()
        elapsed += clock() - start
    if run.handler_errors:
        raise SystemExit("handler errors: %d" % run.handler_errors)
    return elapsed, run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--allocs", type=int, default=200000)
    ap.add_argument("--chains", type=int, default=3500)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scripts", default=SCRIPTS,
                    help="the scripts/ directory to time (default: this "
                         "tree's; for an older version: git archive REV "
                         "scripts | tar -x -C DIR, then DIR/scripts)")
    args = ap.parse_args(argv)

    chains, stream = make_stream(args.allocs, args.chains, args.seed)
    allocs = [e for e in stream if e[0] == "alloc"]
    frees = [e for e in stream if e[0] == "free"]
    with tempfile.TemporaryDirectory(prefix="handler_cost.") as tmpdir:
        module, wargv = load_handler(tmpdir, os.path.abspath(args.scripts))
        gc.collect()
        gc.freeze()   # what is built so far is not the handler's
        gc.disable()  # as in the handler (scripts/allocsites.py)
        rows = []
        for log in (True, False):
            per = {"alloc": [], "free": [], "pair": []}
            for _ in range(args.runs):
                t, run = time_stream(module, wargv, chains, allocs, log)
                per["alloc"].append(t / len(allocs) * 1e6)
                t, run = time_stream(module, wargv, chains, frees, log)
                per["free"].append(t / len(frees) * 1e6)
                t, run = time_stream(module, wargv, chains, stream, log)
                per["pair"].append(t / len(allocs) * 1e6)
            rows.append((log, {k: statistics.median(v)
                               for k, v in per.items()},
                         {k: (min(v), max(v)) for k, v in per.items()}))
            if log:
                tally = run.tally
        gc.enable()
    print("Handler cost per event (%s), Python %s, %d allocs + %d frees, "
          "%d distinct chains, median of %d runs (min-max):"
          % (os.path.relpath(os.path.abspath(args.scripts)),
             sys.version.split()[0], len(allocs), len(frees),
             args.chains, args.runs))
    print()
    print("| event log | us/alloc | us/free | us/alloc+free (interleaved) |")
    print("|---|---|---|---|")
    for log, med, rng in rows:
        print("| %s | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | "
              "%.2f (%.2f-%.2f) |"
              % ("on" if log else "off (Tally(log=False))",
                 med["alloc"], rng["alloc"][0], rng["alloc"][1],
                 med["free"], rng["free"][0], rng["free"][1],
                 med["pair"], rng["pair"][0], rng["pair"][1]))
    print()
    print("last run with the log: %d (stack, tag) keys, %d allocs, %d frees, "
          "%d events logged, %d duplicates dropped"
          % (len(tally.stacks), tally.events["alloc"], tally.events["free"],
             len(tally.log), tally.duplicates))


if __name__ == "__main__":
    main()
