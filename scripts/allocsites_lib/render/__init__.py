"""Rendering: a Report -> the table, JSON, CSV, folded stacks, the flame
graph, the timeline, pprof and --stacks."""
