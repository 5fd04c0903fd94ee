# A perf script handler that does nothing: what perf itself costs per
# event it hands to Python (3-argument trace_unhandled, as the report's
# workers use).
def trace_unhandled(event_name, context, fields):
    pass
