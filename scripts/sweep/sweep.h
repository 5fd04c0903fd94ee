/* sweep.h - allocsites-sweep: the exact-mode liveness sweep in C.
 *
 * The same replay of the rt events as scripts/allocsites_lib/analyze/liveness.py
 * (_Plan, _Sweep, sweep), whose docstrings define every figure; this
 * program gives the same numbers and the Python side assembles the same
 * Liveness from them (liveness.py, native_sweep). It exists for memory:
 * Python keeps about 84 bytes a live allocation, too much for a program
 * with 10^8 allocations and tens of millions live at its peak; here a live
 * allocation costs about 6 bytes (ptrmap.c).
 *
 *   table.c   u64 -> u64 hash map (open addressing, backward-shift delete)
 *   ptrmap.c  live pointers -> record ids, heaptrack's layout: pointers
 *             grouped by 64 KiB granule, a sorted array of 16-bit offsets
 *             and one of 32-bit record ids per granule
 *   state.c   records (shared by all live allocations alike), per-code
 *             counters, processes, threads and phase runs
 *   sweep.c   the replay: the plan scan, the main pass, the replay to the
 *             peak, the end
 *   main.c    reads the request and the log's chunks, writes the answer
 */
#ifndef ALLOCSITES_SWEEP_H
#define ALLOCSITES_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "logcols.h"

typedef uint64_t u64;
typedef uint32_t u32;
typedef uint16_t u16;
typedef uint8_t u8;
typedef int64_t i64;
typedef int32_t i32;
typedef __int128 i128;   /* byte sums: sizes are u64 and may be SIZE_MAX */

/* eventlog.KINDS, in order */
enum { K_ALLOC, K_FREE, K_SAMPLE, K_SAMPLE_FREE, K_RELEASE, K_COMMIT,
       K_DECOMMIT, K_PHASE_BEGIN, K_PHASE_END, K_EXIT, K_COUNT };

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* what die's line starts with: "allocsites-sweep" (the reader, running
 * the sweep in a thread, names itself) */
extern const char *die_prefix;

/* ------------------------------------------------------------ table.c */
struct u64map {
	u64 *keys, *vals;
	u8 *used;
	u64 cap, n;   /* cap: a power of two (0 before the first put) */
	int bits;
};
u64 *u64map_get(const struct u64map *m, u64 key);
/* the value slot of key, made (value 0) if new; *fresh says which */
u64 *u64map_put(struct u64map *m, u64 key, int *fresh);
void u64map_del(struct u64map *m, u64 key);
void u64map_free(struct u64map *m);
/* iteration: for (i = 0; i < m->cap; i++) if (m->used[i]) ... */

/* ------------------------------------------------------------ ptrmap.c */
#define REC_NONE UINT32_MAX
#define GRANULE_BITS 16

struct granule {
	u64 key;        /* pointer >> GRANULE_BITS */
	u16 *off;       /* sorted; an entry whose rec is REC_NONE is dead */
	u32 *rec;
	u32 n, cap, dead;
	u32 next;       /* the position after the last one found: a guess */
};

struct ptrmap {
	struct granule *g;
	u32 ng, capg;           /* slots used (some free), allocated */
	u32 *spare;             /* free granule slots */
	u32 nspare, capspare;
	struct u64map index;    /* granule key -> slot */
	u64 last_key;           /* the granule last found (granule_of) */
	u32 last_slot;
	int last_ok;
};

struct ptrloc { struct granule *g; u32 pos; };

/* the record id slot of ptr, or loc.g NULL if ptr is not live */
struct ptrloc ptrmap_find(struct ptrmap *m, u64 ptr);
/* the record id slot of ptr: *was_live 1, its live one; else made,
 * REC_NONE, for the caller to fill */
u32 *ptrmap_put(struct ptrmap *m, u64 ptr, int *was_live);
void ptrmap_remove(struct ptrmap *m, struct ptrloc loc);
void ptrmap_free(struct ptrmap *m);
/* calls fn(ptr, rec, arg) for every live pointer in [lo, hi) (hi may be
 * 2^64: [0, 2^64) is every pointer) and removes it when fn returns
 * non-zero */
void ptrmap_each(struct ptrmap *m, u64 lo, unsigned __int128 hi,
		 int (*fn)(u64 ptr, u32 rec, void *arg), void *arg);

/* ------------------------------------------------------------ state.c */
struct rec {        /* what liveness.py's live tuple holds */
	u64 size;       /* bytes (sampled mode: the sample's weight) */
	u64 osize;      /* sampled mode: the sampled object's size (its
	                 * count is size / osize); 0 in exact mode */
	u32 ci;         /* code index (struct codes) */
	u32 runs;       /* run tuple id (struct runs) */
	u32 refs;       /* live allocations that share it; 0: free slot */
};

struct recs {
	struct rec *r;
	u32 n, cap;
	u32 *spare;
	u32 nspare, capspare;
	u32 *slots;     /* dedup table of ids + 1, 0 empty */
	u64 cap_slots, used_slots;
};
u32 recs_get(struct recs *rs, u64 size, u64 osize, u32 ci, u32 runs);
void recs_unref(struct recs *rs, u32 id);
void recs_free(struct recs *rs);

/* the counters of each (phase slot, key) code that allocated */
struct codes {
	struct u64map index;    /* code -> ci */
	u64 *code, *k;
	i64 *ec, *temp, *lc, *pc;
	i128 *eb, *lb, *pb;
	/* live now, and (sweep.c, "the state at the peak") what was live at
	 * the latest peak, saved at the first change after it (epoch) */
	i128 *liveb, *sb;
	i64 *livec, *sc;
	u64 *ep;
	/* sampled mode: estimated counts (doubles, summed in the oracle's
	 * order so that they come out bit for bit the same), the sum of
	 * count / size, the samples, and when each code first leaked;
	 * both modes: when each code first counted (a sample, or an
	 * allocation): the order of the oracle's dicts */
	double *fc, *fw2, *flc;
	i64 *es;
	u64 *first_es, *first_leak;
	u32 n, cap;
};
/* code: sweep.c's (slot << 32 | key index) */
u32 codes_get(struct codes *c, u64 code);
void codes_free(struct codes *c);

/* phase runs (liveness.py's run_* columns) and run tuples (cruns) */
struct runs {
	u32 *slot; i32 *pid;
	i128 *total0, *commit0, *live, *best;
	u32 n, cap;
	u32 *pool;          /* tuples, each a stretch of run numbers */
	u64 npool, cappool;
	u64 *tstart; u32 *tlen;
	u32 ntuples, captuples;   /* tuple 0: () */
};
u32 runs_new(struct runs *rs);
u32 runs_tuple(struct runs *rs, const u32 *runs, u32 n);

struct proc {
	i32 pid;
	u64 seq;        /* the order processes were first seen in */
	i128 total, hw, commit;
	u64 last;
	int has_last;
	u32 *open;
	u32 nopen, capopen;
	struct ptrmap live;
	/* sampled mode: live pointer -> when it was allocated (an
	 * allocation over a live pointer keeps the old one's), the order
	 * of liveness.py's dict of live allocations */
	struct u64map order;
};

struct thread {
	i32 pid;
	u64 *phase;
	u32 *run;
	u32 n, cap;
	u64 cbase;      /* thread_phase: code base and run tuple */
	u32 tuple;
};

/* ------------------------------------------------------------ sweep.c */
struct logcols;

struct chunk {
	u64 offset;
	u64 len[8];     /* kinds times pids tids a b sizes keyidx */
	struct logcols *mem;   /* its columns in memory (the reader's own
	                     * sweep), or NULL: in the file at offset */
};

struct log {
	int fd;
	struct chunk *chunks;
	u32 nchunks, capchunks;
	u64 nkeys;      /* follow mode: known at the end */
	/* follow mode: the chunks come as the reader writes them (log_more
	 * reads them), until the end, which says how many there were */
	int follow, ended;
	u64 min_size;   /* --min-size: counted in no code below it */
	int sampled;    /* sampled mode: rt:sample and rt:sample_free */
	int series;     /* the timeline's points name each key's bytes */
	/* follow mode: waits for the next chunks (1) or the end (0, having
	 * set nkeys and ended): from stdin (main.c) or, in the reader's own
	 * sweep, from its queue (reader/sweeper.c) */
	int (*more)(struct log *log);
	/* follow mode, if set: chunk ch is swept and never read again (the
	 * reader takes its memory back) */
	void (*done)(struct log *log, u32 ch);
	void *arg;
};

/* the columns of one chunk, read back; buf: the bytes read from the
 * log's file (kept for the next chunk), or unused for one in memory */
struct cols {
	struct logcols col;
	void *buf;
	size_t cap;
};
/* chunks.c: chunk c's columns, read from the file into out->buf (kept
 * for the next), or pointed at where they are in memory */
void cols_read(const struct log *log, u32 c, struct cols *out);

/* times: the timeline's sample times; ntimes 1 and times_first: the one
 * time is the first event's (follow mode, where it is not known yet) */
void sweep_log(struct log *log, i64 *times, u64 ntimes, int times_first,
	       FILE *out);

void put_i128(FILE *f, i128 v);
/* a / b rounded once, as Python's int / int (below 2^53 exactly) */
double divide(u64 a, u64 b);

#endif
