"""Analysis: a Tally becomes a Report; allocsites diff compares two.

Analysis: a Tally -> a Report (symbolize, fold, the liveness sweep,
phases, completeness, wrappers), and allocsites diff."""
