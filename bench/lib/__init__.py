"""Modules shared by the comparison benchmarks (bench/compare.py and
friends): measuring a command, building the workload, the contenders,
and scoring a profile against the workload's truth."""
