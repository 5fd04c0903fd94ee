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
include tests/differential/Makefile.inc

.PHONY: all deps demo check unit bench clean install uninstall fuzz

# The report workers' perf dlfilter (scripts/dlfilter/allocsites_mailbox.c,
# allocsites_lib/read/mailbox.py): the frees past perf's Python glue. It needs
# perf's dlfilter header (Debian: linux-perf); without it the report
# works as before, a little slower.
DLFILTER_H := /usr/include/perf/perf_dlfilter.h
MAILBOX_SO = $(if $(wildcard $(DLFILTER_H)),$(BUILD)/allocsites_mailbox.so)

# The native reader of perf.data (scripts/reader/, allocsites-read): the
# report's default path; elfutils' libdw unwinds, libzstd decompresses
# (Debian: libdw-dev, libelf-dev, libzstd-dev, from ci/install-deps.sh);
# libiberty (libiberty-dev) demangles C++ names as perf does.
# It runs the liveness sweep in a thread of its own (reader/sweeper.c,
# allocsites-read --sweep): the sweep's sources but its main.c.
READER_SRC := $(wildcard scripts/reader/*.c) \
	$(filter-out scripts/sweep/main.c,$(wildcard scripts/sweep/*.c))
READER_H := scripts/reader/reader.h scripts/reader/sweeper.h scripts/sweep/logcols.h \
	scripts/sweep/sweep.h
READER = $(BUILD)/allocsites-read

# The exact-mode liveness sweep (scripts/sweep/, allocsites-sweep): what
# liveness.py does, in about 6 bytes a live allocation instead of 84.
SWEEP_SRC := $(wildcard scripts/sweep/*.c)
SWEEP = $(BUILD)/allocsites-sweep

# The same reader under AddressSanitizer and UndefinedBehaviorSanitizer,
# every report fatal: what tests/unit/test_reader_hostile.py runs on
# hostile recordings (tests/fuzz/, docs/fuzzing.md).
# About 6 s to build.
READER_ASAN = $(BUILD)/fuzz/allocsites-read-asan
SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
# clang's UBSan, as make fuzz's AFL++ build has it: it stops at what gcc's
# lets pass (a null pointer plus 0, in the sweep of every recording
# without phases, was the finding). ci/install-deps.sh installs clang;
# without it, cc's.
SAN_CC ?= $(if $(shell command -v clang 2>/dev/null),clang,$(CC))

all: examples $(TEST_PROGRAMS) $(MAILBOX_SO) $(READER) $(SWEEP) $(READER_ASAN)

$(SWEEP): $(SWEEP_SRC) scripts/sweep/sweep.h scripts/sweep/logcols.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -std=gnu11 -Wall -Wextra $(SWEEP_SRC) -o $@

$(READER): $(READER_SRC) $(READER_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -std=gnu11 -Wall -Wextra $(READER_SRC) -o $@ -ldw -lelf -lzstd -liberty -pthread

$(READER_ASAN): $(READER_SRC) $(READER_H)
	@mkdir -p $(@D)
	$(SAN_CC) -O1 -g $(SANITIZE) -std=gnu11 -Wall -Wextra $(READER_SRC) -o $@ \
		-ldw -lelf -lzstd -liberty -pthread

# make fuzz [FUZZ_SECONDS=300]: AFL++ on the reader for that long (not part
# of check), from the seeds and structured mutants of tests/fuzz/; every
# crash or hang found is read again by $(READER_ASAN) and each that breaks
# the contract is kept in tests/fuzz/crashes/, which make check reads
# (docs/fuzzing.md). The AFL build has ASan and UBSan too, so memory errors
# that do not crash are found. Its work is under $(BUILD)/fuzz/.
FUZZ_SECONDS ?= 300
READER_AFL = $(BUILD)/fuzz/allocsites-read-afl
$(READER_AFL): $(READER_SRC) $(READER_H)
	@mkdir -p $(@D)
	AFL_USE_ASAN=1 AFL_USE_UBSAN=1 AFL_QUIET=1 afl-clang-fast -O1 -g \
		-std=gnu11 $(READER_SRC) -o $@ -ldw -lelf -lzstd -liberty -pthread

fuzz: deps
	@sh ci/install-fuzz-deps.sh
	@$(MAKE) --no-print-directory $(READER_ASAN) $(READER_AFL)
	$(PYTHON) tests/fuzz/run_afl.py --seconds $(FUZZ_SECONDS) \
		--out $(BUILD)/fuzz --afl-reader $(READER_AFL) \
		--asan-reader $(READER_ASAN)

$(BUILD)/allocsites_mailbox.so: scripts/dlfilter/allocsites_mailbox.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Wall -Wextra -shared -fPIC $< -o $@


deps:
	@sh ci/install-deps.sh

# examples and tests are built after deps (gcc) are in place.
# The previous demo's recording is replaced, not kept as demo.data.old.
demo: deps
	@$(MAKE) --no-print-directory $(BUILD)/minicc $(MAILBOX_SO) $(READER) $(SWEEP)
	@rm -f $(BUILD)/demo.data $(BUILD)/demo.data.old
	$(PYTHON) scripts/allocsites -o $(BUILD)/demo.data --timeline $(BUILD)/demo-timeline.svg -- $(BUILD)/minicc $(DEMO_SIZE)
	@echo "flame graph: $(BUILD)/demo.svg; memory over time: $(BUILD)/demo-timeline.svg  (JSON: scripts/allocsites report -i $(BUILD)/demo.data --json FILE)"

check: deps
	@$(MAKE) --no-print-directory all
	BUILD=$(abspath $(BUILD)) $(PYTHON) tests/run.py

# Unit tests only: no perf, no root (builds the examples they run).
unit: all
	BUILD=$(abspath $(BUILD)) $(PYTHON) tests/run.py tests/unit

clean:
	rm -rf $(BUILD)

# make install [PREFIX=/usr/local] [DESTDIR=]: the command as `allocsites`
# on PATH (a link to its directory under lib/, where the perf-script entry
# and allocsites_lib live), the headers (so cc finds <rt_probes.h> without
# -I under /usr/local), probes/rt.d. Every file installed is listed in
# lib/allocsites/installed, which make uninstall removes and nothing else.
PREFIX ?= /usr/local
# The package, one folder per stage (docs/design.md, "Pipeline"): paths under scripts/
LIB_DIRS = record read analyze render cli
LIB_PY = $(patsubst scripts/%,%,$(wildcard scripts/allocsites_lib/*.py scripts/allocsites_lib/*/*.py))
LIBDIR = $(DESTDIR)$(PREFIX)/lib/allocsites
install:
	@mkdir -p $(addprefix $(LIBDIR)/allocsites_lib/,$(LIB_DIRS)) $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/allocsites
	install -m 755 scripts/allocsites $(LIBDIR)/allocsites
	install -m 644 scripts/allocsites.py $(LIBDIR)/allocsites.py
	for f in $(LIB_PY); do install -m 644 scripts/$$f $(LIBDIR)/$$f; done
	if [ -f $(BUILD)/allocsites_mailbox.so ]; then \
		install -m 644 $(BUILD)/allocsites_mailbox.so $(LIBDIR)/; fi
	install -m 755 $(READER) $(LIBDIR)/allocsites-read
	install -m 755 $(SWEEP) $(LIBDIR)/allocsites-sweep
	ln -sf ../lib/allocsites/allocsites $(DESTDIR)$(PREFIX)/bin/allocsites
	install -m 644 include/rt_probes.h include/rt_sampler.h include/rt_exit.h include/rt_live.h include/rt_stack_top.h \
		$(DESTDIR)$(PREFIX)/include/
	install -m 644 probes/rt.d $(DESTDIR)$(PREFIX)/share/allocsites/rt.d
	@mkdir -p $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 docs/man/allocsites.1 $(DESTDIR)$(PREFIX)/share/man/man1/allocsites.1
	@{ echo $(PREFIX)/bin/allocsites; \
	   for f in allocsites allocsites.py allocsites-read allocsites-sweep; do echo $(PREFIX)/lib/allocsites/$$f; done; \
	   if [ -f $(BUILD)/allocsites_mailbox.so ]; then \
		echo $(PREFIX)/lib/allocsites/allocsites_mailbox.so; fi; \
	   for f in $(LIB_PY); do echo $(PREFIX)/lib/allocsites/$$f; done; \
	   for f in rt_probes.h rt_sampler.h rt_exit.h rt_live.h rt_stack_top.h; do echo $(PREFIX)/include/$$f; done; \
	   echo $(PREFIX)/share/allocsites/rt.d; \
	   echo $(PREFIX)/share/man/man1/allocsites.1; \
	   echo $(PREFIX)/lib/allocsites/installed; } > $(LIBDIR)/installed
	@echo "installed: $(PREFIX)/bin/allocsites, headers in $(PREFIX)/include"

uninstall:
	@test -f $(LIBDIR)/installed || { echo "uninstall: nothing installed under $(DESTDIR)$(PREFIX)"; exit 1; }
	@for f in $$(cat $(LIBDIR)/installed); do rm -f $(DESTDIR)$$f; done
	@rm -rf $(LIBDIR)/allocsites_lib/__pycache__ $(addsuffix /__pycache__,$(addprefix $(LIBDIR)/allocsites_lib/,$(LIB_DIRS)))
	@rmdir $(addprefix $(LIBDIR)/allocsites_lib/,$(LIB_DIRS)) $(LIBDIR)/allocsites_lib $(LIBDIR) $(DESTDIR)$(PREFIX)/share/allocsites 2>/dev/null || true
	@echo "uninstalled allocsites from $(DESTDIR)$(PREFIX)"

# The tables of docs/benchmarks.md (not part of check): the scripts
# bench/README.md lists, run as root on an idle machine. Each prints
# Markdown, kept in $(BUILD)/bench/*.md (progress goes to stderr); run
# time: docs/benchmarks.md.
BENCH_OUT = $(BUILD)/bench
bench: deps all
	@sh ci/install-bench-deps.sh
	@mkdir -p $(BENCH_OUT)
	$(PYTHON) bench/selftest.py
	$(PYTHON) bench/compare.py > $(BENCH_OUT)/compare.md && cat $(BENCH_OUT)/compare.md
	$(PYTHON) bench/scaling.py > $(BENCH_OUT)/scaling.md && cat $(BENCH_OUT)/scaling.md
	$(PYTHON) bench/exact_scale.py > $(BENCH_OUT)/exact_scale.md && cat $(BENCH_OUT)/exact_scale.md
	$(PYTHON) bench/real_compiler.py > $(BENCH_OUT)/real_compiler.md && cat $(BENCH_OUT)/real_compiler.md
	$(PYTHON) bench/real_database.py > $(BENCH_OUT)/real_database.md; cat $(BENCH_OUT)/real_database.md
	$(PYTHON) bench/real_interpreter.py > $(BENCH_OUT)/real_interpreter.md; cat $(BENCH_OUT)/real_interpreter.md
	$(PYTHON) bench/large_program.py > $(BENCH_OUT)/large_program.md && cat $(BENCH_OUT)/large_program.md
	$(PYTHON) bench/report_throughput.py > $(BENCH_OUT)/report_throughput.md && cat $(BENCH_OUT)/report_throughput.md
	$(PYTHON) bench/offcost_callgrind.py > $(BENCH_OUT)/offcost_callgrind.md && cat $(BENCH_OUT)/offcost_callgrind.md
	$(PYTHON) bench/floor.py > $(BENCH_OUT)/floor.md && cat $(BENCH_OUT)/floor.md
	$(PYTHON) bench/guest_cost.py > $(BENCH_OUT)/guest_cost.md && cat $(BENCH_OUT)/guest_cost.md
	$(PYTHON) bench/header_tus.py > $(BENCH_OUT)/header_tus.md && cat $(BENCH_OUT)/header_tus.md
	$(PYTHON) bench/sampled_overhead.py > $(BENCH_OUT)/sampled_overhead.md && cat $(BENCH_OUT)/sampled_overhead.md
	$(PYTHON) bench/sampled_total.py > $(BENCH_OUT)/sampled_total.md && cat $(BENCH_OUT)/sampled_total.md
	$(PYTHON) bench/sampled_peak.py > $(BENCH_OUT)/sampled_peak.md && cat $(BENCH_OUT)/sampled_peak.md
	$(PYTHON) bench/diff_noise.py > $(BENCH_OUT)/diff_noise.md && cat $(BENCH_OUT)/diff_noise.md
	$(PYTHON) bench/free_cost.py > $(BENCH_OUT)/free_cost.md && cat $(BENCH_OUT)/free_cost.md
	$(PYTHON) bench/lossless_runs.py > $(BENCH_OUT)/lossless_runs.md && cat $(BENCH_OUT)/lossless_runs.md
