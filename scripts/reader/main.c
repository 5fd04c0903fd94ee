/* allocsites-read - reads a perf.data recording of allocsites' probes
 * and takes, in perf script's order, every tracepoint sample with its
 * fields and its stack (unwound here from the registers and stack copy
 * perf record --call-graph dwarf saved, or taken from the kernel's
 * frame-pointer chain) into the report's tally (tally.c); it writes the
 * distinct stacks and the tally in the binary stream emit.c describes,
 * and the event log to a file the caller opened.
 *
 *   allocsites-read [--min-size N] [--log-fd FD [--sweep]] FILE
 *                                   the stream on stdout, the event
 *                                   log to FD (none without); with
 *                                   --sweep, the liveness sweep run
 *                                   here on the log in memory, its
 *                                   answer in the stream (sweeper.c),
 *                                   FD only for chunks it falls behind
 *                                   on (ALLOCSITES_SWEEP_HELD=N: past
 *                                   N chunks, at most 64)
 *   allocsites-read --text FILE     every sample and its stack as
 *                                   text, to read or diff
 *   allocsites-read --lines FILE    source lines of the addresses on
 *                                   stdin (lines.c)
 *   allocsites-read --scan [--times] FILE
 *                                   what perfdata.Scan holds, as text
 *                                   (scan.c)
 *
 * Exit: 0, or 1 with one line on stderr ("allocsites-read: FILE: ...").
 * Memory: the maps, the distinct stacks and at most two rounds of perf's
 * ring buffers (order.c); never the whole file. */
#include "reader.h"

#include <errno.h>
#include <libelf.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define PROT_EXEC_BIT 4
#define MISC_MMAP_DATA (1u << 13)

struct ctx {
	struct perffile pf;
	struct order *order;
	struct emitter *em;
	struct tally *tally;
	int text;
	u64 samples, records, rounds;
	size_t peak_queue;
	u64 skipped;            /* damaged records left out */
	u64 skipped_at;         /* the first one's file offset */
	const char *skipped_why;
	u64 pcs[MAX_FRAMES];
};

/* A record that cannot be what it says is left out and counted: the
 * report is then incomplete and says so, never silently short. */
static void damaged(struct ctx *c, u64 at, const char *why)
{
	if (!c->skipped++) {
		c->skipped_at = at;
		c->skipped_why = why;
	}
}

static u64 le64(const u8 *p) { u64 v; memcpy(&v, p, 8); return v; }
static u32 le32(const u8 *p) { u32 v; memcpy(&v, p, 4); return v; }

/* A field's value; the caller checked it lies within the sample's data
 * (tpformat.end: past it, the format or the record is damaged, and the
 * field is never read as 0) */
static void field_value(const struct sample *s, const struct field *f,
			u64 *v)
{
	*v = 0;
	const u8 *p = s->raw + f->offset;
	switch (f->size) {
	case 1: *v = f->is_signed ? (u64)(int64_t)(int8_t)p[0] : p[0];
		break;
	case 2: { u16 x; memcpy(&x, p, 2);
		*v = f->is_signed ? (u64)(int64_t)(int16_t)x : x; break; }
	case 4: { u32 x = le32(p);
		*v = f->is_signed ? (u64)(int64_t)(int32_t)x : x; break; }
	case 8: *v = le64(p); break;
	}
}

/* The user part of a kernel callchain (--call-graph fp): the ips after
 * PERF_CONTEXT_USER, callers moved back into their call instruction as
 * for an unwound stack. */
static int user_chain(const struct sample *s, u64 *pcs, int max)
{
	int n = 0, user = 0;
	for (u64 i = 0; i < s->nr_callchain && n < max; i++) {
		u64 ip = word(s->callchain, i);
		if (ip >= PERF_CONTEXT_MAX) {
			user = ip == (u64)-512;   /* PERF_CONTEXT_USER */
			continue;
		}
		if (user) {
			pcs[n] = n ? ip - 1 : ip;
			n++;
		}
	}
	return n;
}

static void text_event(struct ctx *c, const struct sample *s, int n,
		       const u64 *args, int nargs)
{
	const struct attr *at = s->attr;
	printf("%u/%u %llu.%09llu %s:", s->pid, s->tid,
	       (unsigned long long)(s->time / 1000000000),
	       (unsigned long long)(s->time % 1000000000), at->name);
	for (int i = 0; i < nargs; i++)
		printf(" %s=%#llx", at->fmt->fields[i].name,
		       (unsigned long long)args[i]);
	printf("\n");
	struct proc *p = proc_get(s->pid);
	for (int i = 0; i < n; i++) {
		if (end_name(c->pcs[i])) {
			printf("\t-- %s\n", end_name(c->pcs[i]));
			continue;
		}
		const struct map *m = proc_map_at(p, c->pcs[i]);
		u64 addr = 0, off = 0;
		const char *sym = NULL;
		/* @0x...: the address in the file (a symbol's or not, as
		 * emit.c names the frame); @0: in no file it could read */
		int in_file = m && symbolize_pc(p, c->pcs[i], m, &addr, &sym,
						 &off) == 0;
		printf("\t%llx %s+0x%llx (%s @%s%llx)\n",
		       (unsigned long long)c->pcs[i], sym ? sym : "[unknown]",
		       (unsigned long long)off, m ? m->path : "[unknown]",
		       in_file ? "0x" : "", (unsigned long long)addr);
	}
}

static int on_sample(struct ctx *c, const u8 *rec, u32 size, u64 at)
{
	struct sample s;
	if (parse_sample(&c->pf, rec, size, &s)) {
		damaged(c, at, "a sample shorter than its fields, or of no "
			"event in the file");
		return 0;
	}
	if (!s.attr->fmt)
		return 0;   /* perf script hands a script tracepoints only */
	u64 args[MAX_FIELDS];
	const struct tpformat *fmt = s.attr->fmt;
	if (fmt->end > s.raw_size) {
		damaged(c, at, "a tracepoint field past the sample's data");
		return 0;
	}
	for (int i = 0; i < fmt->nfields; i++)   /* all within raw_size */
		field_value(&s, &fmt->fields[i], &args[i]);
	struct proc *p = proc_get(s.pid);
	if (!p) {
		damaged(c, at, "a sample past the reader's limits (out of "
			"memory)");
		return 0;
	}
	c->samples++;
	int n = 0;
	if (s.regs && s.stack) {
		/* one slot kept for the stack's end marker (reader.h) */
		int end;
		n = unwind_sample(p, &s, c->pcs, MAX_FRAMES - 1, &end);
		if (n && end_pc(end))
			c->pcs[n++] = end_pc(end);
	} else if (s.nr_callchain)
		n = user_chain(&s, c->pcs, MAX_FRAMES);
	if (c->text) {
		text_event(c, &s, n, args, fmt->nfields);
		return 0;
	}
	u32 raw = 0;
	if (n)
		emit_stack(c->em, p, c->pcs, n, &raw);
	tally_event(c->tally, s.attr->index, raw, s.pid, s.tid, s.time, args,
		    s.raw, s.raw_size);
	return 0;
}

/* An MMAP or MMAP2 record's mapping, its path at path_at: the path ends
 * inside the record, the range does not wrap. */
static void on_mmap(struct ctx *c, const u8 *rec, u32 size, u32 path_at,
		    u64 at)
{
	u64 start = le64(rec + 16), len = le64(rec + 24);
	if (size <= path_at || !memchr(rec + path_at, 0, size - path_at) ||
	    len == 0 || start + len < start) {
		damaged(c, at, "a mapping record with no path or a range "
			"past the address space");
		return;
	}
	const char *path = (const char *)rec + path_at;
	char jit[40];
	if (perfmap_anon(path)) {   /* JIT code: named as perf names it */
		perfmap_renamed(le32(rec + 8), jit, sizeof(jit));
		path = jit;
	}
	if (proc_mmap(le32(rec + 8), start, len, le64(rec + 32), path))
		damaged(c, at, "a mapping past the reader's limits (too "
			"many mappings, or out of memory)");
}

/* perf's machine__process_event, for what the unwinder needs. at: the
 * record's offset in the file, for what is said of a damaged one. */
static int deliver(void *vc, const u8 *rec, u32 size, u64 at)
{
	struct ctx *c = vc;
	u32 type = le32(rec);
	u16 misc;
	memcpy(&misc, rec + 4, 2);
	switch (type) {
	case REC_SAMPLE:
		return on_sample(c, rec, size, at);
	case REC_MMAP2:
		if (size < 72)
			damaged(c, at, "a mapping record too short");
		else if (le32(rec + 64) & PROT_EXEC_BIT)
			on_mmap(c, rec, size, 72, at);
		break;
	case REC_MMAP:
		if (size < 40)
			damaged(c, at, "a mapping record too short");
		else if (!(misc & MISC_MMAP_DATA))
			on_mmap(c, rec, size, 40, at);
		break;
	case REC_COMM:
		if (size < 16)
			damaged(c, at, "a COMM record too short");
		else if ((misc & MISC_COMM_EXEC) &&
			 le32(rec + 8) == le32(rec + 12))
			proc_exec(le32(rec + 8));
		break;
	case REC_EXIT:
		/* the process's last thread, as perf says it: its unwinding
		 * state goes (a build running a probed compiler 1000 times
		 * would keep 1000 sets of modules and their files open); a
		 * thread of it still running gets it again at its next
		 * sample */
		/* pid, ppid, tid, ptid */
		if (size < 24)
			damaged(c, at, "an EXIT record too short");
		else if (le32(rec + 8) == le32(rec + 16)) {
			struct proc *p = proc_find(le32(rec + 8));
			if (p)
				unwind_forget(p);
		}
		break;
	case REC_FORK:
		if (size < 16)
			damaged(c, at, "a FORK record too short");
		else if (proc_fork(le32(rec + 8), le32(rec + 12)))
			damaged(c, at, "a process past the reader's limits "
				"(the mappings of all, or out of memory)");
		break;
	}
	return 0;
}

static int on_record(void *vc, const u8 *rec, u32 size, struct buf *b)
{
	struct ctx *c = vc;
	u32 type = le32(rec);
	c->records++;
	if (type == REC_FINISHED_ROUND) {
		c->rounds++;
		size_t q = order_bytes(c->order);
		if (q > c->peak_queue)
			c->peak_queue = q;
		return order_round(c->order);
	}
	if (type >= 64)        /* perf's own records: not ordered */
		return 0;
	u64 time;
	/* perf delivers a record without a time (or time 0) at once */
	if (record_time(&c->pf, rec, size, &time) || time == 0 ||
	    time == (u64)-1)
		return deliver(c, rec, size, c->pf.at);
	return order_queue(c->order, time, rec, size, b, c->pf.at);
}

static const char usage[] = "usage: allocsites-read [--min-size N] "
	"[--log-fd FD [--sweep]] FILE\n"
	"       allocsites-read --text FILE\n"
	"       allocsites-read --lines FILE < ADDRESSES\n"
	"       allocsites-read --symbols FILE < ADDRESSES\n";

/* A decimal option's value; -1 when it is not one. */
static int number(const char *s, u64 *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (!*s || *end || errno || *s == '-')
		return -1;
	*v = x;
	return 0;
}

/* libdw keeps a descriptor open for every module of every live process
 * it unwinds (unwind.c, report_new): a recording of a program with
 * hundreds of libraries, or of a parallel build, can pass the usual
 * soft limit of 1024, and every module past it would go unnamed and
 * unwound. The hard limit is the reader's to take. */
static void more_descriptors(void)
{
	struct rlimit r;
	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

int main(int argc, char **argv)
{
	static struct ctx c;
	const char *path = NULL;
	u64 min_size = 0, log_fd = (u64)-1;
	int sweep = 0;
	more_descriptors();
	if (argc > 1 && !strcmp(argv[1], "--scan"))
		return scan_main(argc, argv);    /* scan.c */
	if (argc == 3 && !strcmp(argv[1], "--lines"))
		return lines_main(argv[2]);      /* lines.c */
	if (argc == 3 && !strcmp(argv[1], "--symbols"))
		return symbols_main(argv[2]);    /* symtab.c */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--text"))
			c.text = 1;
		else if (!strcmp(argv[i], "--sweep"))
			sweep = 1;
		else if (!strcmp(argv[i], "--min-size") && i + 1 < argc) {
			if (number(argv[++i], &min_size)) {
				fputs(usage, stderr);
				return 2;
			}
		} else if (!strcmp(argv[i], "--log-fd") && i + 1 < argc) {
			if (number(argv[++i], &log_fd) || log_fd > INT32_MAX) {
				fputs(usage, stderr);
				return 2;
			}
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fputs(usage, stderr);
			return 2;
		} else
			path = argv[i];
	}
	if (!path) {
		fputs(usage, stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_DFL);
	char err[512];
	elf_version(EV_CURRENT);
	if (perffile_open(&c.pf, path, err, sizeof(err))) {
		fprintf(stderr, "allocsites-read: %s\n", err);
		return 1;
	}
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	c.em = emit_new(stdout);
	c.order = order_new(deliver, &c);
	if (!c.em || !c.order) {
		fprintf(stderr, "allocsites-read: out of memory\n");
		return 1;
	}
	c.tally = tally_new(c.em, log_fd == (u64)-1 ? -1 : (int)log_fd,
			    min_size, c.pf.nattrs);
	if (sweep && log_fd != (u64)-1)
		tally_sweep(c.tally);
	for (int i = 0; i < c.pf.nattrs; i++)
		tally_def(c.tally, i, c.pf.attrs[i].name, c.pf.attrs[i].fmt);
	int rc = perffile_records_threaded(&c.pf, on_record, &c, err,
					   sizeof(err));
	int rc2 = 0;
	if (order_flush(c.order))
		rc = -1;
	if (!c.text) {
		if (tally_finish(c.tally))
			rc2 = 1;
		char note[512];
		snprintf(note, sizeof(note),
			 "samples %llu\nrecords %llu\nrounds %llu\n"
			 "queue_peak %zu\ntail_cut %llu\n"
			 "unwound_fast %llu\nunwound_libdw %llu\n"
			 "unwind_mismatch %llu\nskipped %llu\n",
			 (unsigned long long)c.samples,
			 (unsigned long long)c.records,
			 (unsigned long long)c.rounds, c.peak_queue,
			 (unsigned long long)c.pf.tail_cut,
			 (unsigned long long)unwind_fast,
			 (unsigned long long)unwind_slow,
			 (unsigned long long)unwind_mismatch,
			 (unsigned long long)c.skipped);
		emit_note(c.em, note);
		if (emit_close(c.em) && !rc) {
			fprintf(stderr, "allocsites-read: cannot write its "
				"output: %s\n", strerror(errno));
			return 1;
		}
	} else {
		fflush(stdout);
	}
	if (getenv("ALLOCSITES_READER_VERIFY")) {
		fprintf(stderr, "allocsites-read: unwound %llu samples from "
			"cached CFI, %llu with libdw; %llu differ\n",
			(unsigned long long)unwind_fast,
			(unsigned long long)unwind_slow,
			(unsigned long long)unwind_mismatch);
		fprintf(stderr, "allocsites-read: named %llu pcs from the "
			"symbol index, %llu by libdw; %llu differ\n",
			(unsigned long long)symtab_fast,
			(unsigned long long)symtab_slow,
			(unsigned long long)symtab_mismatch);
	}
	if (c.skipped)
		fprintf(stderr, "allocsites-read: %s: %llu damaged records "
			"left out (the first at offset %llu: %s)\n", path,
			(unsigned long long)c.skipped,
			(unsigned long long)c.skipped_at, c.skipped_why);
	if (rc) {
		fprintf(stderr, "allocsites-read: %s\n", err);
		return 1;
	}
	return rc2;
}
