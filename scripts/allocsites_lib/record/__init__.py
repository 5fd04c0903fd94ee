"""The recording: uprobe events made, perf record run, the run undone.

The recording: the probes made uprobe events, perf record run with the
command line allocsites chooses, the run's state undone, the recording's
sidecars written."""
