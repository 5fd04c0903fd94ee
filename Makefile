# allocsites. Two commands on a fresh Debian 12 machine (as root):
#   make demo    profile the example compiler: a table and build/demo.svg
#   make check   all tests (unit, and integration under real perf)
# Both install what they miss first (ci/install-deps.sh).

BUILD ?= build
CFLAGS ?= -O2 -g
PYTHON := /usr/bin/python3
DEMO_SIZE ?= 500

.DEFAULT_GOAL := all
include examples/Makefile.inc
include tests/Makefile.inc

.PHONY: all deps demo check unit bench clean

all: examples $(TEST_PROGRAMS)

deps:
	@sh ci/install-deps.sh

# examples and tests are built after deps (gcc) are in place.
# The previous demo's recording is replaced, not kept as demo.data.old.
demo: deps
	@$(MAKE) --no-print-directory $(BUILD)/minicc
	@rm -f $(BUILD)/demo.data $(BUILD)/demo.data.old
	$(PYTHON) scripts/allocsites -o $(BUILD)/demo.data -- $(BUILD)/minicc $(DEMO_SIZE)
	@echo "flame graph: $(BUILD)/demo.svg  (JSON: scripts/allocsites report -i $(BUILD)/demo.data --json FILE)"

check: deps
	@$(MAKE) --no-print-directory all
	BUILD=$(abspath $(BUILD)) $(PYTHON) tests/run.py

# Unit tests only: no perf, no root (builds the examples they run).
unit: all
	BUILD=$(abspath $(BUILD)) $(PYTHON) tests/run.py tests/unit

clean:
	rm -rf $(BUILD)

# Figures for docs/benchmarks.md and bench/README.md (not part of check):
# run as root on an idle machine. Each script prints Markdown; the
# results are kept in $(BUILD)/bench/*.md (progress goes to stderr).
# About 50 minutes.
BENCH_OUT = $(BUILD)/bench
bench: deps all
	@sh ci/install-bench-deps.sh
	@mkdir -p $(BENCH_OUT)
	$(PYTHON) bench/compare.py > $(BENCH_OUT)/compare.md && cat $(BENCH_OUT)/compare.md
	$(PYTHON) bench/scaling.py > $(BENCH_OUT)/scaling.md && cat $(BENCH_OUT)/scaling.md
	$(PYTHON) bench/report_throughput.py > $(BENCH_OUT)/report_throughput.md && cat $(BENCH_OUT)/report_throughput.md
	$(PYTHON) bench/offcost_callgrind.py > $(BENCH_OUT)/offcost.md && cat $(BENCH_OUT)/offcost.md
	$(PYTHON) bench/exact_burst.py > $(BENCH_OUT)/exact_burst.md && cat $(BENCH_OUT)/exact_burst.md
	$(PYTHON) bench/sampled_overhead.py > $(BENCH_OUT)/sampled_overhead.md && cat $(BENCH_OUT)/sampled_overhead.md
	$(PYTHON) bench/fixed_cost.py > $(BENCH_OUT)/fixed_cost.md && cat $(BENCH_OUT)/fixed_cost.md
	$(PYTHON) bench/stack_depth.py > $(BENCH_OUT)/stack_depth.md && cat $(BENCH_OUT)/stack_depth.md
	$(PYTHON) bench/loss_stress.py > $(BENCH_OUT)/loss_stress.md && cat $(BENCH_OUT)/loss_stress.md
