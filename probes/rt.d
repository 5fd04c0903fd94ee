/* rt.d - the allocsites USDT provider in dtrace syntax.
 *
 * include/rt_probes.h is the header programs use; this file declares the
 * same probes for tools that start from a .d file (dtrace -h / -G,
 * bpftrace, systemtap). tests/unit/test_probe_contract.py builds a
 * program from `dtrace -h -s probes/rt.d` and checks that its probe notes
 * match the header's: same provider, names, argument count, sizes and
 * signedness.
 *
 * perf names the events sdt_rt:NAME (sdt_rt:alloc, sdt_rt:free, ...).
 * The header's macros RT_RELEASE, RT_COMMIT, RT_DECOMMIT, RT_PHASE_BEGIN
 * and RT_PHASE_END have the names dtrace -h gives these probes;
 * rt:sample_free and rt:exit are fired by the header itself.
 *
 * systemtap's dtrace (4.8) warns "syntax error near: probe free": its
 * pyparsing grammar will not take the name free. It then parses the file
 * with its regular-expression parser, whose output is right (the test
 * checks it); `dtrace --no-pyparsing` skips the warning.
 */
provider rt {
	/* A block was allocated: its address, requested size, origin tag,
	 * and the guest program's location id (RT_ALLOC_GUEST; 0: none). */
	probe alloc(void *ptr, size_t size, unsigned int tag, unsigned long long guest);
	/* A block is about to be released: address, size and tag it had. */
	probe free(void *ptr, size_t size, unsigned int tag);
	/* A sampled allocation, fired by RT_ALLOC while recorded: weight is
	 * the number of bytes it stands for, rate is R, the mean number of
	 * bytes between samples; see docs/sampling.md; phase is the
	 * thread's innermost phase id + 1 (0: none) while rt:phase_track is
	 * recorded, else 0; guest as alloc's. */
	probe sample(void *ptr, size_t size, unsigned int tag, unsigned long long weight, unsigned long long rate, unsigned long long phase, unsigned long long guest);
	/* A block an earlier rt:sample reported is freed (fired by RT_FREE
	 * while rt:sample_free is recorded): its address and that sample's
	 * weight. */
	probe sample_free(void *ptr, unsigned long long weight);
	/* Every live block in [base, base + len) is freed at once (an arena
	 * released in bulk). */
	probe release(void *base, size_t len);
	/* The allocator mapped (committed) size bytes at ptr from the system,
	 * or returned them. */
	probe commit(void *ptr, size_t size);
	probe decommit(void *ptr, size_t size);
	/* A phase of the program (per thread, nested) begins or ends. */
	probe phase_begin(unsigned int id);
	probe phase_end(unsigned int id);
	/* Never fires: recorded (sampled mode), the phase markers keep the
	 * thread's phase for rt:sample instead of firing phase_begin/end. */
	probe phase_track();
	/* A guest location (RT_GUEST): the frame of a language runtime's
	 * program that id names, its caller's id (0: outermost), its line,
	 * source file and function; fired once per id, before the first
	 * allocation that names it. */
	probe guest(unsigned long long id, unsigned long long parent, unsigned long long line, char *source, char *function);
	/* The process exits: how many events of each kind this ELF file fired
	 * while each was recorded (the report's end-to-end check; commits
	 * counts commit and decommit, phases begin and end), and untracked:
	 * sampled blocks the pointer table could not hold. rt_probes.h fires
	 * it from a destructor, followed by 1536 padding events whose counts
	 * are all 2^64-1 (for perf -z's cut tail: docs/probes.md); readers
	 * skip those. Arguments are only ever appended. */
	probe exit(unsigned long long allocs, unsigned long long frees, unsigned long long samples, unsigned long long sample_frees, unsigned long long releases, unsigned long long commits, unsigned long long phases, unsigned long long untracked);
};
