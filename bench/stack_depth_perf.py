# stack_depth_perf.py - perf script entry for bench/stack_depth.py: the
# allocsites report (scripts/allocsites.py, unchanged) plus facts about
# perf's raw callchains, in one pass over the data:
#
#   STACK_DEPTH_STATS=stats.json perf script -i perf.data --no-inline \
#       [--max-stack N] -s bench/stack_depth_perf.py -- --json report.json
#
# Everything after -- goes to allocsites.py. Recordings of the stand-in
# trigger (bench/stack_depth.py --trigger pagefault: page-faults samples
# whose fault address is in lua_host's trigger region) are passed to
# allocsites.py as rt:alloc events of size 0 and tag 0: their counts and
# stacks are right, their bytes are not. stats.json gets, over the
# rt:alloc samples (entries = perf's callchain entries, leaf first):
#   samples          samples seen
#   reach_main       samples with an entry whose symbol is `main`
#   end_root         samples whose last entry is _start or
#                    __libc_start_main* (complete stacks)
#   end_marker       samples whose last entry has ip 0xffffffffffffffff
#   end_other        samples ending anywhere else
#   frames           {entry count: samples}
#   tails            up to 5 raw tails (last 3 entries, as perf gave them)
#                    of stacks that did not end at a root
#   marker_entries   {repr of the last entry: samples} for the marker
import collections
import json
import os
import re
import runpy

_HERE = os.path.dirname(os.path.abspath(__file__))
_ENTRY = os.path.join(os.path.dirname(_HERE), "scripts", "allocsites.py")
_ROOT = re.compile(r"^(_start|__libc_start_main)")
_MARKER = 0xffffffffffffffff
# bench/lua_host.c: TRIGGER_BASE, TRIGGER_PAGES
_TRIGGER = (0x200000000000, 0x200000000000 + 4096 * 4096)

# allocsites.py parses sys.argv at import, as it does under perf.
_allocsites = runpy.run_path(_ENTRY, run_name="allocsites_entry")

_stats = {"samples": 0, "reach_main": 0, "end_root": 0, "end_marker": 0,
          "end_other": 0, "errors": 0}
_frames = collections.Counter()
_markers = collections.Counter()
_tails = []


def _name(entry):
    sym = entry.get("sym")
    return sym.get("name") if isinstance(sym, dict) else None


def _collect(event_name, sample):
    if not event_name.startswith("sdt_rt__alloc"):
        return
    chain = sample.get("callchain") or []
    _stats["samples"] += 1
    _frames[len(chain)] += 1
    if any(_name(e) == "main" for e in chain):
        _stats["reach_main"] += 1
    last = chain[-1] if chain else {}
    if _ROOT.match(_name(last) or ""):
        _stats["end_root"] += 1
        return
    if last.get("ip") == _MARKER:
        _stats["end_marker"] += 1
        _markers[repr(last)] += 1
    else:
        _stats["end_other"] += 1
    if len(_tails) < 5:
        _tails.append({"entries": len(chain), "tail": chain[-3:]})


def trace_begin():
    _allocsites["trace_begin"]()


def trace_unhandled(event_name, context, event_fields_dict, perf_sample_dict):
    try:
        _collect(event_name, perf_sample_dict)
    except Exception:  # noqa: BLE001 - an exception would abort perf
        _stats["errors"] += 1
    _allocsites["trace_unhandled"](event_name, context, event_fields_dict,
                                   perf_sample_dict)


def process_event(param_dict):
    """Non-tracepoint samples: the stand-in trigger's page faults."""
    try:
        sample = param_dict.get("sample") or {}
        addr = sample.get("addr")
        if not (str(param_dict.get("ev_name", "")).startswith("page-faults")
                and isinstance(addr, int)
                and _TRIGGER[0] <= addr < _TRIGGER[1]):
            return
        fields = {"arg1": 0, "arg2": 0, "arg3": 0,
                  "common_pid": sample.get("pid")}
    except Exception:  # noqa: BLE001
        _stats["errors"] += 1
        return
    trace_unhandled("sdt_rt__alloc", None, fields, param_dict)


def trace_end():
    out = dict(_stats, frames={str(k): v for k, v in sorted(_frames.items())},
               tails=_tails, marker_entries=dict(_markers))
    with open(os.environ["STACK_DEPTH_STATS"], "w") as f:
        json.dump(out, f, indent=1, default=repr)
    _allocsites["trace_end"]()
