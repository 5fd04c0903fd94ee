"""Rendering: a Report becomes the table and each output file.

Rendering: a Report -> the table, JSON, CSV, folded stacks, the flame
graph, the timeline, pprof and --stacks."""
