/* emit.c - the stream allocsites-read writes for native.py.
 *
 * Blocks, each: u32 type, u32 length, then length bytes (little endian):
 *   STRING     u32 id, the bytes (no NUL)
 *   FRAME      a raw frame (the report's RawFrame): u32 id, u32 dso
 *              string, u32 symbol string (0: none), u32 has_addr,
 *              u64 addr, u64 off (0 without a symbol), u64 ip (0 where
 *              has_addr)
 *   STACK      a raw stack: u32 id, u32 n, u32 raw frame ids, leaf
 *              first
 *   PROGRESS   u64 events read so far (now and then, for the progress
 *              line)
 *   TALLY      text: the tally (tally.c documents its lines)
 *   NOTE       text: "key value" lines (counts, warnings) at the end
 * Every id a block names was defined by an earlier block. Strings,
 * frames and stacks are defined once each: the stream grows with the
 * distinct stacks, not with the events (tally.c keeps those, and the
 * event log goes to a file of its own). */
#include "reader.h"

#include <stdlib.h>
#include <string.h>

/* 1 and 5 were the events' definitions and records, before tally.c */
enum { B_STRING = 2, B_FRAME, B_STACK, B_NOTE = 6, B_PROGRESS, B_TALLY };

struct strent { struct strent *next; u32 id; const char *key; };
struct frament {
	struct frament *next;
	const char *path;
	u64 pc_in_file;         /* pc - start + pgoff, or the pc */
	u64 pc;
	u32 id;
	u32 raw;                /* its raw frame (rawframe) */
};
struct stackent {
	struct stackent *next;
	const struct proc *proc;
	unsigned generation;
	u32 id, n;
	u32 raw;                /* its raw stack (rawstack) */
	u64 hash;
	u64 pcs[];
};
/* A raw frame: what the report's RawFrame holds (parse.py): the DSO,
 * and perf's (addr, symbol, offset), or the pc where there is no
 * symbol. Frames of one file at other load addresses (two processes)
 * are one raw frame, as they are one RawFrame. */
struct rawframe {
	struct rawframe *next;
	u32 dso, sym, has_addr, id;
	u64 addr, off, ip;
};
/* A raw stack: its raw frames, leaf first, without the pcs at or past
 * 2^63 (perf's end-of-unwind markers, which parse.raw_frames drops) but
 * the reader's own two (PC_OUTERMOST, PC_SWITCHED: a last raw frame of
 * DSO "[outermost]" or "[stack switched]", and nothing else):
 * the tally's key is (raw stack, tag), the report's (frames, tag). */
struct rawstack {
	struct rawstack *next;
	u64 hash;
	u32 id, n;
	u32 frames[];
};

#define HB 65536
struct emitter {
	FILE *out;
	struct strent *strs[HB];
	struct frament *frames[HB];
	/* the stack tables grow (a power of two, about a stack a bucket):
	 * a real interpreter's run has hundreds of thousands of stacks, and
	 * a fixed table of 65536 chains, each a cache miss a link, was what
	 * every allocation went through */
	struct stackent **stacks;
	size_t stack_buckets;
	struct rawframe *rawframes[HB];
	struct rawstack **rawstacks;
	size_t rawstack_buckets;
	u32 nstrings, nframes, nstacks, nrawframes, nrawstacks;
	int error;
};

/* The distinct strings, frames and stacks must all be kept: without
 * memory for one the stream cannot go on, said in one line. */
static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "allocsites-read: out of memory (the distinct "
			"stacks)\n");
		exit(1);
	}
	return p;
}

static void block(struct emitter *e, u32 type, const void *a, u32 alen,
		  const void *b, u32 blen)
{
	u32 h[2] = { type, alen + blen };
	if (fwrite(h, 8, 1, e->out) != 1 ||
	    (alen && fwrite(a, alen, 1, e->out) != 1) ||
	    (blen && fwrite(b, blen, 1, e->out) != 1))
		e->error = 1;
}

struct emitter *emit_new(FILE *out)
{
	struct emitter *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->out = out;
	/* small, so that growing is what most recordings in the tests do
	 * (GROW_CHAINS) */
	e->stack_buckets = e->rawstack_buckets = 1 << 10;
	e->stacks = calloc(e->stack_buckets, sizeof(*e->stacks));
	e->rawstacks = calloc(e->rawstack_buckets, sizeof(*e->rawstacks));
	if (!e->stacks || !e->rawstacks) {
		free(e->stacks);
		free(e->rawstacks);
		free(e);
		return NULL;
	}
	return e;
}

/* A stack's pcs, a word at a time: every sample hashes its stack (up to
 * thousands of frames), so not FNV's byte at a time. Four lanes, each
 * a word in four: one chain of multiplies was a step's latency a word,
 * the most of emit_stack's time on 20-frame stacks. */
#define HASH_STEP(x, word) do { \
	(x) = ((x) ^ (word)) * 0x9e3779b97f4a7c15ull; \
	(x) ^= (x) >> 29; \
} while (0)
static u64 hash_words(const u64 *w, size_t n, u64 h)
{
	u64 a = h, b = h + 1, c = h + 2, d = h + 3;
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		HASH_STEP(a, w[i]);
		HASH_STEP(b, w[i + 1]);
		HASH_STEP(c, w[i + 2]);
		HASH_STEP(d, w[i + 3]);
	}
	for (; i < n; i++)
		HASH_STEP(a, w[i]);
	HASH_STEP(a, b);
	HASH_STEP(c, d);
	HASH_STEP(a, c);
	HASH_STEP(a, (u64)n);
	return a;
}

/* FNV-1a, then MurmurHash3's finalizer: FNV's multiply carries only
 * upwards, so its low bits (the bucket, hash & (buckets - 1) or % HB)
 * depend on the low bits of each byte alone, and lists of small ids
 * (a raw stack's frames) fell into few buckets: a program whose 300,000
 * allocations had as many distinct stacks spent 92% of the reader's
 * time walking one chain (by hand, 2026-11-28). */
static u64 hash_bytes(const void *p, size_t n, u64 h)
{
	const u8 *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static u32 string_id(struct emitter *e, const char *s)
{
	if (!s)
		return 0;
	u64 h = hash_bytes(s, strlen(s), 1469598103934665603ull) % HB;
	for (struct strent *t = e->strs[h]; t; t = t->next)
		if (!strcmp(t->key, s))
			return t->id;
	struct strent *t = xmalloc(sizeof(*t));
	t->key = strcpy(xmalloc(strlen(s) + 1), s);
	t->id = ++e->nstrings;
	t->next = e->strs[h];
	e->strs[h] = t;
	block(e, B_STRING, &t->id, 4, s, (u32)strlen(s));
	return t->id;
}

static u32 raw_frame(struct emitter *e, u32 dso, u32 sym, u32 has_addr,
		     u64 addr, u64 off, u64 ip)
{
	u64 k[6] = { dso, sym, has_addr, addr, off, has_addr ? 0 : ip };
	u64 h = hash_bytes(k, sizeof(k), 1469598103934665603ull) % HB;
	for (struct rawframe *r = e->rawframes[h]; r; r = r->next)
		if (r->dso == dso && r->sym == sym &&
		    r->has_addr == has_addr && r->addr == addr &&
		    r->off == off && r->ip == k[5])
			return r->id;
	struct rawframe *r = xmalloc(sizeof(*r));
	*r = (struct rawframe){ e->rawframes[h], dso, sym, has_addr,
				++e->nrawframes, addr, off, k[5] };
	e->rawframes[h] = r;
	struct {
		u32 id, dso, sym, has_addr;
		u64 addr, off, ip;
	} rec = { r->id, dso, sym, has_addr, addr, off, k[5] };
	block(e, B_FRAME, &rec, sizeof(rec), NULL, 0);
	return r->id;
}

/* A stack table twice as wide, its nodes relinked by their kept hash;
 * as it was when there is no memory for the new one (its chains only
 * grow longer). A macro: the two tables' nodes are of two types, each
 * with its next link and its hash. */
#define GROW_CHAINS(type, table, nbuckets) do { \
	size_t n_ = (nbuckets) * 2; \
	type **t_ = calloc(n_, sizeof(*t_)); \
	if (!t_) \
		break; \
	for (size_t i_ = 0; i_ < (nbuckets); i_++) \
		for (type *x_ = (table)[i_], *next_; x_; x_ = next_) { \
			next_ = x_->next; \
			x_->next = t_[x_->hash & (n_ - 1)]; \
			t_[x_->hash & (n_ - 1)] = x_; \
		} \
	free(table); \
	(table) = t_; \
	(nbuckets) = n_; \
} while (0)

static u32 raw_stack(struct emitter *e, const u32 *frames, u32 n)
{
	if (!n)
		return 0;
	u64 hash = hash_bytes(frames, (size_t)n * 4, 1469598103934665603ull);
	size_t b = hash & (e->rawstack_buckets - 1);
	for (struct rawstack *r = e->rawstacks[b]; r; r = r->next)
		if (r->hash == hash && r->n == n &&
		    !memcmp(r->frames, frames, (size_t)n * 4))
			return r->id;
	struct rawstack *r = xmalloc(sizeof(*r) + (size_t)n * 4);
	r->next = e->rawstacks[b];
	r->hash = hash;
	r->id = ++e->nrawstacks;
	r->n = n;
	memcpy(r->frames, frames, (size_t)n * 4);
	e->rawstacks[b] = r;
	if (e->nrawstacks > e->rawstack_buckets)
		GROW_CHAINS(struct rawstack, e->rawstacks,
			    e->rawstack_buckets);
	u32 head[2] = { r->id, n };
	block(e, B_STACK, head, 8, frames, n * 4);
	return r->id;
}

static const struct frament *frame_id(struct emitter *e, struct proc *p,
				      u64 pc)
{
	const struct map *m = proc_map_at(p, pc);
	const char *path = m ? m->path : NULL;
	u64 key = m ? pc - m->start + m->pgoff : pc;
	/* keyed by the run-time pc too: a frame without a symbol is named
	 * by it, as perf names it */
	u64 h = hash_bytes(&key, 8, (u64)(uintptr_t)path ^ pc * 31) % HB;
	for (struct frament *f = e->frames[h]; f; f = f->next)
		if (f->path == path && f->pc_in_file == key && f->pc == pc)
			return f;
	u64 addr = 0, off = 0;
	const char *sym = NULL;
	u32 has_addr = 0;
	/* In a file we can read, a pc without a symbol still has its
	 * address in the file (perf's convention, as a symbol's): named by
	 * it, the frame is the same in every run and every process (the
	 * run-time pc moves with ASLR), and its lines can be asked for.
	 * Only a pc in no readable file is named by the pc itself. */
	if (m && symbolize_pc(p, pc, m, &addr, &sym, &off) == 0)
		has_addr = 1;
	/* a mapping without a path is perf's "[unknown]" (parse.raw_frames
	 * takes an empty dso so) */
	u32 dso = string_id(e, path && *path ? path : "[unknown]");
	u32 symid = has_addr ? string_id(e, sym) : 0;
	struct frament *f = xmalloc(sizeof(*f));
	f->path = path;
	f->pc = pc;
	f->pc_in_file = key;
	f->id = ++e->nframes;
	f->raw = raw_frame(e, dso, symid, has_addr, has_addr ? addr : 0,
			   has_addr ? off : 0, pc);
	f->next = e->frames[h];
	e->frames[h] = f;
	return f;
}

u32 emit_stack(struct emitter *e, struct proc *p, const u64 *pcs, int n,
	       u32 *raw)
{
	unsigned gen = proc_generation(p);
	u64 h = hash_words(pcs, (size_t)n,
			   (u64)(uintptr_t)p * 31 + gen);
	size_t b = h & (e->stack_buckets - 1);
	for (struct stackent *s = e->stacks[b]; s; s = s->next)
		if (s->hash == h && s->proc == p && s->generation == gen &&
		    s->n == (u32)n && !memcmp(s->pcs, pcs, (size_t)n * 8)) {
			*raw = s->raw;
			return s->id;
		}
	u32 raws[MAX_FRAMES];
	u32 nraw = 0;
	for (int i = 0; i < n; i++) {
		const char *end = end_name(pcs[i]);
		if (end) {
			/* the stack's end (reader.h): a raw frame of its own
			 * (parse.py's END_DSOS), no pc, no file */
			char dso[32];
			snprintf(dso, sizeof(dso), "[%s]", end);
			raws[nraw++] = raw_frame(e, string_id(e, dso),
						 0, 0, 0, 0, 0);
			continue;
		}
		const struct frament *f = frame_id(e, p, pcs[i]);
		if (pcs[i] < 1ull << 63)
			raws[nraw++] = f->raw;
	}
	struct stackent *s = xmalloc(sizeof(*s) + (size_t)n * 8);
	s->proc = p;
	s->generation = gen;
	s->n = (u32)n;
	s->hash = h;
	memcpy(s->pcs, pcs, (size_t)n * 8);
	s->id = ++e->nstacks;
	s->raw = *raw = raw_stack(e, raws, nraw);
	s->next = e->stacks[b];
	e->stacks[b] = s;
	if (e->nstacks > e->stack_buckets)
		GROW_CHAINS(struct stackent, e->stacks, e->stack_buckets);
	return s->id;
}

void emit_note(struct emitter *e, const char *text)
{
	block(e, B_NOTE, text, (u32)strlen(text), NULL, 0);
}

void emit_progress(struct emitter *e, u64 events)
{
	block(e, B_PROGRESS, &events, 8, NULL, 0);
}

/* The tally's text, in blocks of at most 1 MiB, each of whole lines
 * (native.py reads the lines of every TALLY block in turn). */
void emit_tally(struct emitter *e, const char *text, size_t len)
{
	while (len) {
		size_t n = len;
		if (n > (1u << 20)) {
			n = 1u << 20;
			while (n && text[n - 1] != '\n')
				n--;
			if (!n)
				n = 1u << 20;
		}
		block(e, B_TALLY, text, (u32)n, NULL, 0);
		text += n;
		len -= n;
	}
}

int emit_close(struct emitter *e)
{
	if (fflush(e->out))
		e->error = 1;
	return e->error ? -1 : 0;
}
