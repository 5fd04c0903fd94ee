"""perf's own stackcollapse.py, made to see sdt events (for
bench/report_throughput.py):

  perf script -i perf.data -s bench/stackcollapse_sdt.py

perf calls a script's process_event() only for events that are not
tracepoints. uprobe events such as sdt_rt:alloc are tracepoints, which
go to a handler named after the event or to trace_unhandled(); perf's
stackcollapse.py defines neither, so on allocsites' recordings it prints
nothing at all. This runs perf's script unchanged and adds the one
missing handler.
"""

STACKCOLLAPSE = "/usr/lib/perf-core/scripts/python/stackcollapse.py"

with open(STACKCOLLAPSE) as f:
    exec(compile(f.read(), STACKCOLLAPSE, "exec"))


def trace_unhandled(event_name, context, event_fields_dict, perf_sample_dict):
    globals()["process_event"](perf_sample_dict)   # defined by the exec
