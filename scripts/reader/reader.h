/* reader.h - the native perf.data reader's shared types (allocsites-read).
 *
 * The reader is a pipeline of small stages, one file each:
 *   perffile.c  the file: header, attributes, features, records streamed
 *               through libzstd (PERF_RECORD_COMPRESSED)
 *   tracefmt.c  the tracepoint formats (feature TRACING_DATA): field
 *               names, offsets, sizes, signedness
 *   order.c     perf's ordered-events rule (FINISHED_ROUND), so events
 *               come out in the order perf script hands them over
 *   procs.c     processes and their executable mappings (MMAP2, FORK,
 *               COMM exec, EXIT)
 *   buf.c       reference-counted buffers: records queued where zstd
 *               wrote them, not copied
 *   pipe.c      the file read and decompressed in a thread of its own
 *   unwind.c    each sample's registers and stack copy unwound with
 *               elfutils' libdw, one Dwfl per process
 *   cfi_cache.c the common frames from CFI rules cached per pc, the
 *               rest through unwind.c's libdw
 *   tally.c     each event into the report's tally and event log
 *   emit.c      the binary stream the Python side reads (native.py)
 *   scan.c      --scan: one pass that counts what perfdata.Scan holds
 *   main.c      wires them together
 */
#ifndef ALLOCSITES_READER_H
#define ALLOCSITES_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef uint64_t u64;
typedef uint32_t u32;
typedef uint16_t u16;
typedef uint8_t u8;

/* perf_event.h values this reader needs (kept here: the reader must not
 * depend on kernel headers' vintage). */
enum {
	REC_MMAP = 1, REC_LOST = 2, REC_COMM = 3, REC_EXIT = 4,
	REC_FORK = 7, REC_SAMPLE = 9, REC_MMAP2 = 10, REC_LOST_SAMPLES = 13,
	REC_FINISHED_ROUND = 68, REC_COMPRESSED = 81,
	/* perf 6.15 and later with -z: u64 data_size, then the zstd bytes,
	 * the record padded to 8 bytes */
	REC_COMPRESSED2 = 83,
};
#define MISC_COMM_EXEC (1u << 13)

#define ST_IP (1ull << 0)
#define ST_TID (1ull << 1)
#define ST_TIME (1ull << 2)
#define ST_ADDR (1ull << 3)
#define ST_READ (1ull << 4)
#define ST_CALLCHAIN (1ull << 5)
#define ST_ID (1ull << 6)
#define ST_CPU (1ull << 7)
#define ST_PERIOD (1ull << 8)
#define ST_STREAM_ID (1ull << 9)
#define ST_RAW (1ull << 10)
#define ST_BRANCH_STACK (1ull << 11)
#define ST_REGS_USER (1ull << 12)
#define ST_STACK_USER (1ull << 13)
#define ST_IDENTIFIER (1ull << 16)

#define PERF_TYPE_TRACEPOINT 2
#define PERF_CONTEXT_MAX ((u64)-4095)

#define MAX_FIELDS 12          /* tracepoint fields passed on per event */
/* The deepest stack kept: what a 65528-byte stack copy can hold (8 bytes
 * a frame at the least), as the perf script workers' --max-stack. */
#define MAX_FRAMES 8192

struct field {
	char name[64];
	u32 offset, size;
	int is_signed;
	int is_string;          /* __data_loc char[]: offset | length << 16 */
};

struct tpformat {
	u64 id;                 /* the tracepoint id (attr.config) */
	char name[128];
	struct field fields[MAX_FIELDS];   /* the non-common ones, in order */
	int nfields;
	u64 end;                /* the end of the field that ends last */
	struct tpformat *next;
};

struct attr {
	u32 type;
	u64 config;
	u64 sample_type;
	int sample_id_all;
	u64 regs_mask;          /* sample_regs_user */
	u32 stack_user;         /* sample_stack_user */
	u64 *ids;
	size_t nids;
	char name[256];         /* "sdt_rt:alloc_2467", from EVENT_DESC */
	const struct tpformat *fmt;
	int index;              /* this attr's place in the file */
	int trailer;            /* bytes of the sample_id_all trailer */
};

struct perffile {
	FILE *f;
	const char *path;
	u64 data_offset, data_size;
	struct attr *attrs;
	int nattrs;
	struct idref { u64 id; int attr; } *ids;   /* every attr's ids, by
						    * id then attr: searched */
	size_t nids;
	struct tpformat *formats;
	int compressed;         /* FEAT_COMPRESSED said zstd */
	u64 tail_cut;           /* bytes of a last record cut short */
	u64 decompressed;       /* bytes the zstd stream gave */
	u64 stream_tail;        /* bytes of a record the zstd stream ends
				 * inside (perf 6.1's -z can cut its last
				 * compressed record short) */
	u64 at;                 /* file offset of the record being read (of
				 * its PERF_RECORD_COMPRESSED, inside one) */
	u64 walk_base;          /* file offset of the read buffer's start */
	int pipe;               /* pipe mode (perf record -o -): attrs and
				 * features came as records in the stream */
	u64 feat_bits;          /* the features present, below FEAT_MAX */
	u64 feat_off[64], feat_size[64];   /* where each one's data lies */
};

#define FEAT_MAX 64
/* A feature section's (offset, size) in the file, from the table after
 * the data or, in pipe mode, from its HEADER_FEATURE record: 0, or -1
 * when the recording has no such feature. */
int perffile_feature(const struct perffile *pf, int feat, u64 *off,
		     u64 *size);
/* Whether any attribute has a name (EVENT_DESC, or pipe mode's
 * EVENT_UPDATE records). */
int perffile_has_names(const struct perffile *pf);

/* A sample's fields, pointing into the record's bytes. */
struct sample {
	const struct attr *attr;
	u32 pid, tid;
	u64 time;
	u64 ip;
	const u8 *callchain;    /* nr_callchain u64s, read with word() */
	u64 nr_callchain;
	const u8 *raw;
	u32 raw_size;
	u64 regs_abi;
	const u8 *regs;         /* in mask order, read with word() */
	const u8 *stack;
	u64 stack_size;         /* bytes copied (dyn_size) */
};

/* The i-th u64 at p. A record's fields need not be 8-aligned in
 * memory (a damaged record of odd size shifts every one after it):
 * read by memcpy, never through a u64 pointer. */
static inline u64 word(const u8 *p, u64 i)
{
	u64 v;
	__builtin_memcpy(&v, p + 8 * i, 8);
	return v;
}

/* buf.c: reference-counted buffers of decompressed records. */
#define BUF_SIZE (4u << 20)
struct buf;
struct buf *buf_get(void);
u8 *buf_data(struct buf *b);
void buf_retain(struct buf *b);
void buf_release(struct buf *b);
void buf_retain_n(struct buf *b, long n);
void buf_release_n(struct buf *b, long n);
size_t buf_live(void);          /* buffers out of the free list */

/* perffile.c */
int perffile_open(struct perffile *pf, const char *path, char *err,
		  size_t errlen);
/* b: the buffer rec lies in, or NULL when rec must be copied to be kept.
 * Returns -1 on error, 0, or 1 when fn keeps rec where it lies past the
 * call: it then owns one reference to b, given by the caller (pipe.c
 * hands over the one it holds for the record; perffile_records takes a
 * new one). An atomic count taken for each kept record on the consumer's
 * side was 3% of reading a frame-pointer recording. */
typedef int (*record_fn)(void *ctx, const u8 *rec, u32 size, struct buf *b);
/* Calls fn for every record of the data section, compressed ones
 * decompressed in place of their container. Returns 0, or -1 with err. */
int perffile_records(struct perffile *pf, record_fn fn, void *ctx,
		     char *err, size_t errlen);
/* pipe.c: the same, the file read and decompressed in a thread of its
 * own; fn runs in the caller's, in order, pf->at the record's offset. */
int perffile_records_threaded(struct perffile *pf, record_fn fn, void *ctx,
			      char *err, size_t errlen);
const struct attr *perffile_attr_by_id(const struct perffile *pf, u64 id);
/* The attr of any record (by its IDENTIFIER), or NULL. */
const struct attr *perffile_attr_of(const struct perffile *pf, const u8 *rec,
				    u32 size);
/* The time of a record (sample or sample_id_all trailer); 0 without. */
int record_time(const struct perffile *pf, const u8 *rec, u32 size,
		u64 *time);
int parse_sample(const struct perffile *pf, const u8 *rec, u32 size,
		 struct sample *s);

/* scan.c: allocsites-read --scan [--times] FILE (the format is at the
 * top of scan.c); returns the exit status. */
int scan_main(int argc, char **argv);

/* tracefmt.c: the formats of the tracepoints whose ids (the tracepoint
 * attrs' configs) are given; the others are not kept. */
struct tpformat *tracefmt_parse(const u8 *data, size_t size, const u64 *ids,
				size_t nids);

/* order.c: perf's ordered events. */
struct order;
typedef int (*deliver_fn)(void *ctx, const u8 *rec, u32 size, u64 at);
struct order *order_new(deliver_fn fn, void *ctx);
/* Queues rec. b: the buffer rec lies in, or NULL to copy rec. Returns 1
 * when rec is kept where it lies until delivered, the caller's reference
 * to b then the queue's (record_fn); 0 when copied; -1 */
int order_queue(struct order *o, u64 time, const u8 *rec, u32 size,
		struct buf *b, u64 at);
int order_round(struct order *o);     /* FINISHED_ROUND */
int order_flush(struct order *o);     /* the end */
size_t order_bytes(const struct order *o);
void order_free(struct order *o);

/* procs.c */
struct map {
	u64 start, end, pgoff;
	const char *path;       /* interned: one copy per distinct path */
};
struct proc;
struct proc *proc_get(u32 pid);  /* created when missing; NULL: no memory */
struct proc *proc_find(u32 pid);
/* -1: past the limits (MAX_MAPS a process, or out of memory) */
int proc_mmap(u32 pid, u64 start, u64 len, u64 pgoff, const char *path);
int proc_fork(u32 pid, u32 ppid);         /* -1: out of memory */
void proc_exec(u32 pid);
const struct map *proc_map_at(struct proc *p, u64 addr);
u32 proc_pid(const struct proc *p);
unsigned proc_generation(const struct proc *p);
void **proc_unwind_slot(struct proc *p);
const struct map *proc_maps(const struct proc *p, size_t *n);

/* Why an unwound stack ends, where the unwinder can tell:
 *   END_OUTERMOST  the CFI says the last frame has no caller (its return
 *                  address is undefined or 0): a process's, a thread's or
 *                  a coroutine's first function;
 *   END_COPY       the next return address lies past the stack copy's
 *                  end, on the same stack: within what a larger
 *                  --stack-size would copy, or a frame or so past the
 *                  largest copy perf takes (a stack deeper than any);
 *   END_SWITCHED   it lies elsewhere: below the sample's stack pointer,
 *                  or further above it than the largest copy and a
 *                  megabyte of frames more: the stack goes on on another
 *                  stack (a signal handler on sigaltstack, a coroutine or
 *                  fiber, or a frame pointer that is not one);
 *   END_NONE       anything else (a pc in no file, JIT code, no CFI, the
 *                  frame limit).
 * The stream ends a stack of the first and the third with a marker frame
 * (emit.c): perf's own unwinding tells neither, and its end of a copy
 * (a frame at -1) is the report's default reading of a stack that does
 * not reach a start function. */
enum { END_NONE, END_OUTERMOST, END_COPY, END_SWITCHED };
/* The marker pcs unwind_sample's caller appends for them: above every
 * user address, and none of the kernel's PERF_CONTEXT_* values. */
#define PC_OUTERMOST ((u64)-2)
#define PC_SWITCHED ((u64)-3)
/* The marker pc of an end the stream marks; 0 for the others. */
static inline u64 end_pc(int end)
{
	return end == END_OUTERMOST ? PC_OUTERMOST :
	       end == END_SWITCHED ? PC_SWITCHED : 0;
}
/* A marker pc's name (--text's "-- NAME", the stream's "[NAME]" DSO:
 * parse.py's END_TEXT and END_DSOS); NULL for any other pc. */
static inline const char *end_name(u64 pc)
{
	return pc == PC_OUTERMOST ? "outermost" :
	       pc == PC_SWITCHED ? "stack switched" : NULL;
}
/* perf's largest --stack-size (the kernel takes at most 65528), and how
 * far past it a read still counts as the same stack: a megabyte of one
 * frame's locals (a stack deeper than the largest copy fails within a
 * frame of its end; the interrupted frame of a handler on sigaltstack,
 * or a coroutine's parent, lies in another mapping) */
#define STACK_COPY_MAX 65528u
#define STACK_SAME_REACH (STACK_COPY_MAX + (1u << 20))
/* END_COPY or END_SWITCHED for a read at addr that the copy, taken at
 * sp, does not hold. */
static inline int end_of_read(u64 sp, u64 addr)
{
	return addr >= sp && addr - sp < STACK_SAME_REACH ? END_COPY
							  : END_SWITCHED;
}

/* unwind.c: the frames of one sample, leaf first, callers' pcs moved
 * back into the call instruction (as perf does). Returns the count, and
 * why the stack ends in *end (END_*). */
int unwind_sample(struct proc *p, const struct sample *s, u64 *pcs,
		  int max, int *end);
/* The process exited: its libdw state (modules, their files and parsed
 * CFI) is freed; a later sample of the pid makes it again. */
void unwind_forget(struct proc *p);
/* cfi_cache.c: the common x86-64 frames from cached CFI rules; -1 when
 * a frame needs libdw's full unwinder (then unwind the sample there). */
struct cfi_cache;
struct cfi_cache *cfi_cache_new(void);          /* NULL: no memory */
void cfi_cache_clear(struct cfi_cache *c);      /* the modules changed */
void cfi_cache_free(struct cfi_cache *c);
struct Dwfl;
int cfi_unwind(struct cfi_cache *c, struct Dwfl *dwfl,
	       const struct sample *s, int ip_pos, int sp_pos, int bp_pos,
	       u64 *pcs, int max, int *end);
int cfi_says_outermost(struct Dwfl *dwfl, u64 pc);
extern u64 unwind_fast, unwind_slow, unwind_mismatch;

/* JIT code's names (perfmap.c): whether a mapping's path is memory
 * without a file, which perf names /tmp/perf-PID.map (perfmap_renamed
 * writes that name); whether a path is such a name; the symbol of pc in
 * it (1) or none (0). */
int perfmap_anon(const char *path);
void perfmap_renamed(u32 pid, char *buf, size_t n);
int perfmap_is_path(const char *path);
int perfmap_lookup(const char *path, u64 pc, const char **name, u64 *start);

/* perf's (addr, symbol, offset) of a pc in a map. */
int symbolize_pc(struct proc *p, u64 pc, const struct map *m, u64 *addr,
		 const char **sym, u64 *off);

/* emit.c */
struct emitter;
struct emitter *emit_new(FILE *out);
/* Interns a stack (frames already resolved) and returns its id; *raw:
 * its raw stack's id (the frames the report's key holds; 0: none),
 * defined in the stream with its raw frames when new. */
u32 emit_stack(struct emitter *e, struct proc *p, const u64 *pcs, int n,
	       u32 *raw);
void emit_note(struct emitter *e, const char *text);
void emit_progress(struct emitter *e, u64 events);
void emit_tally(struct emitter *e, const char *text, size_t len);
int emit_close(struct emitter *e);

/* tally.c: log_fd -1: no event log; ndefs: the file's attributes */
struct tally;
struct tally *tally_new(struct emitter *em, int log_fd, u64 min_size,
			int ndefs);
/* tally.c: the liveness sweep run here, in a thread (sweeper.c), on
 * the log's chunks in memory; its answer in the TALLY block ("swept",
 * then "sweep LINE" each); needs the log (log_fd) for a sweep that
 * falls behind; not in sampled mode */
void tally_sweep(struct tally *t);
void tally_def(struct tally *t, int index, const char *name,
	       const struct tpformat *fmt);
/* data, size: the sample's raw data, where its string fields lie */
void tally_event(struct tally *t, int index, u32 raw, u32 pid, u32 tid,
		 u64 time, const u64 *args, const u8 *data, u32 size);
int tally_finish(struct tally *t);

/* lines.c: allocsites-read --lines FILE */
int lines_main(const char *path);
int symbols_main(const char *path);      /* symtab.c */

/* Ranges sorted by start (ranges.c): elements of `stride` bytes whose
 * first field is their start, a u64. ranges_upto: how many start at or
 * before x (binary search). ranges_reach: reach[i], the highest end
 * (the u64 at end_off) of elements 0..i, malloc'ed; NULL: no memory. */
size_t ranges_upto(const void *base, size_t n, size_t stride, u64 x);
u64 *ranges_reach(const void *base, size_t n, size_t stride, size_t end_off);
extern u64 symtab_fast, symtab_slow, symtab_mismatch;

#endif
