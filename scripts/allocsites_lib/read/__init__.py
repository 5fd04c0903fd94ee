"""Reading a recording: perf.data becomes a Tally and an EventLog.

Reading a recording: perf.data -> a Tally and an EventLog, through the
native reader (allocsites-read) or perf script workers."""
