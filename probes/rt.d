/* rt.d - the allocsites USDT provider in dtrace syntax.
 *
 * include/rt_probes.h is the header programs use; this file declares the
 * same probes for tools that start from a .d file (dtrace -h / -G,
 * bpftrace, systemtap). tests/unit/test_probe_contract.py builds a
 * program from `dtrace -h -s probes/rt.d` and checks that its probe notes
 * match the header's: same provider, names, argument count, sizes and
 * signedness.
 *
 * perf names the events sdt_rt:alloc, sdt_rt:free, sdt_rt:sample and
 * sdt_rt:exit.
 *
 * systemtap's dtrace (4.8) warns "syntax error near: probe free": its
 * pyparsing grammar will not take the name free. It then parses the file
 * with its regular-expression parser, whose output is right (the test
 * checks it); `dtrace --no-pyparsing` skips the warning.
 */
provider rt {
	/* A block was allocated: its address, requested size, origin tag. */
	probe alloc(void *ptr, size_t size, unsigned int tag);
	/* A block is about to be released: address, size and tag it had. */
	probe free(void *ptr, size_t size, unsigned int tag);
	/* A sampled allocation, fired by RT_ALLOC while recorded: weight is
	 * the number of bytes it stands for, rate is R, the mean number of
	 * bytes between samples; see docs/sampling.md. */
	probe sample(void *ptr, size_t size, unsigned int tag, unsigned long long weight, unsigned long long rate);
	/* The process exits: how many alloc, free and sample events this ELF
	 * file fired while each was recorded (the report's end-to-end check;
	 * rt_probes.h fires it from a destructor). */
	probe exit(unsigned long long allocs, unsigned long long frees, unsigned long long samples);
};
