/* order.c - perf's ordered events (util/ordered-events.c), so that this
 * reader hands events over in the order perf script does.
 *
 * perf queues every timed record; at each PERF_RECORD_FINISHED_ROUND it
 * delivers, in time order, the queued records no later than the latest
 * time seen at the previous round, then remembers the latest time seen
 * now. Records of equal time keep their order in the file. At the end,
 * everything left goes out. Memory: at most two rounds of records (a
 * round is one pass of perf record over its ring buffers), and at most
 * QUEUE_MAX bytes: a file without FINISHED_ROUND records (damaged, or
 * written by another tool) would otherwise be queued whole. Past it the
 * older half goes out, as perf's ordered_events do past their limit
 * (OE_FLUSH__HALF). */
#include "reader.h"

#include <stdlib.h>
#include <string.h>

struct chunk;
struct entry {
	u64 time, seq;
	struct chunk *chunk;
	u64 at;                 /* its offset in the file */
	struct buf *buf;        /* rec lies there (not copied), or NULL */
	const u8 *rec;
	u32 size;
	u8 data[];
};

#define CHUNK_SIZE (8u << 20)
#define QUEUE_MAX ((size_t)1 << 30)
/* A record queued in place keeps its whole 4 MiB buffer: one sample in
 * each of thousands of buffers (zstd makes megabytes of filler from a
 * few bytes) kept gigabytes for a queue of kilobytes. Past this many
 * buffers held, records are copied instead (counted in QUEUE_MAX). */
#define MAX_HELD_BUFS 64
struct chunk {
	struct chunk *next;     /* on the free list */
	size_t used, live;
	u8 mem[];
};

struct order {
	deliver_fn fn;
	void *ctx;
	struct entry **q;
	size_t n, cap;
	u64 seq;
	u64 max_time, next_flush;
	size_t bytes;
	struct chunk *cur, *free_chunks;
	int unsorted;           /* q is not in (time, seq) order: most rounds
				 * of a program on one CPU come in order, and
				 * sorting a sorted queue was 6% of reading a
				 * frame-pointer recording */
};

static struct entry *alloc_entry(struct order *o, u32 size)
{
	size_t need = (sizeof(struct entry) + size + 15) & ~(size_t)15;
	struct chunk *c = o->cur;
	if (!c || c->used + need > CHUNK_SIZE) {
		if (c && c->live == 0) {
			c->used = 0;     /* all delivered: start it over */
		} else {
			c = o->free_chunks;
			if (c)
				o->free_chunks = c->next;
			else if (!(c = malloc(sizeof(*c) + CHUNK_SIZE)))
				return NULL;
			c->used = c->live = 0;
			o->cur = c;
		}
	}
	struct entry *e = (struct entry *)(c->mem + c->used);
	c->used += need;
	c->live++;
	e->chunk = c;
	return e;
}

static void free_entry(struct order *o, struct entry *e)
{
	struct chunk *c = e->chunk;
	if (--c->live == 0 && c != o->cur) {
		c->next = o->free_chunks;
		o->free_chunks = c;
	}
}

struct order *order_new(deliver_fn fn, void *ctx)
{
	struct order *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->fn = fn;
	o->ctx = ctx;
	return o;
}

static int deliver_upto(struct order *o, u64 limit, int all);
static int deliver_half(struct order *o);

int order_queue(struct order *o, u64 time, const u8 *rec, u32 size,
		struct buf *b, u64 at)
{
	if (o->bytes > QUEUE_MAX && deliver_half(o))
		return -1;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 4096;
		struct entry **q = realloc(o->q, cap * sizeof(*q));
		if (!q)
			return -1;
		o->q = q;
		o->cap = cap;
	}
	if (size > CHUNK_SIZE / 2)
		return -1;
	if (b && buf_live() > MAX_HELD_BUFS)
		b = NULL;
	struct entry *e = alloc_entry(o, b ? 0 : size);
	if (!e)
		return -1;
	e->time = time;
	e->at = at;
	e->seq = o->seq++;
	e->size = size;
	e->buf = b;
	if (b) {   /* the caller's reference to b is now the entry's */
		e->rec = rec;
	} else {
		memcpy(e->data, rec, size);
		e->rec = e->data;
	}
	o->bytes += size;
	/* seq only grows: behind the last entry only by time */
	if (o->n && o->q[o->n - 1]->time > time)
		o->unsorted = 1;
	o->q[o->n++] = e;
	if (time > o->max_time)
		o->max_time = time;
	return b ? 1 : 0;
}

static int cmp(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a,
			   *y = *(struct entry *const *)b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void sort_queue(struct order *o)
{
	if (o->unsorted)
		qsort(o->q, o->n, sizeof(*o->q), cmp);
	o->unsorted = 0;
}

/* A sample with a stack copy (DWARF: 8 KiB and more) is read from its
 * start, registers and the top of the copy, where the unwinder finds the
 * return addresses: two records ahead, those bytes are asked for. zstd
 * wrote them in the other thread megabytes earlier, and the unwinder
 * stalled on them (by hand, farm-bench -n 7 on 10^6 DWARF allocations:
 * 0.86x the reader's wall time, 0.80x its CPU; 4 records ahead or 4 KiB
 * gained no more). A small record (fp, no copy) gains nothing. */
#define PREFETCH_AHEAD 2
#define PREFETCH_BYTES 2048u

static int deliver_upto(struct order *o, u64 limit, int all)
{
	if (o->n == 0)
		return 0;
	sort_queue(o);
	size_t i = 0;
	int rc = 0;
	struct buf *run = NULL;   /* a run of one buffer's: released at once */
	long nrun = 0;
	for (; i < o->n; i++) {
		struct entry *e = o->q[i];
		if (!all && e->time > limit)
			break;
		if (i + PREFETCH_AHEAD < o->n &&
		    o->q[i + PREFETCH_AHEAD]->size > PREFETCH_BYTES) {
			const u8 *r = o->q[i + PREFETCH_AHEAD]->rec;
			for (u32 k = 0; k < PREFETCH_BYTES; k += 64)
				__builtin_prefetch(r + k);
		}
		if (!rc && o->fn(o->ctx, e->rec, e->size, e->at) < 0)
			rc = -1;
		if (e->buf != run) {
			buf_release_n(run, nrun);
			run = e->buf;
			nrun = 0;
		}
		nrun += e->buf != NULL;
		o->bytes -= e->size;
		free_entry(o, e);
	}
	buf_release_n(run, nrun);
	if (o->n > i)
		memmove(o->q, o->q + i, (o->n - i) * sizeof(*o->q));
	o->n -= i;
	return rc;
}

/* The older half of the queue, by time. */
static int deliver_half(struct order *o)
{
	if (o->n == 0)
		return 0;
	sort_queue(o);
	u64 limit = o->q[o->n / 2]->time;
	if (limit > o->next_flush)
		o->next_flush = limit;
	return deliver_upto(o, limit, 0);
}

int order_round(struct order *o)
{
	int rc = deliver_upto(o, o->next_flush, 0);
	o->next_flush = o->max_time;
	return rc;
}

int order_flush(struct order *o)
{
	return deliver_upto(o, 0, 1);
}

size_t order_bytes(const struct order *o)
{
	return o->bytes;
}

void order_free(struct order *o)
{
	for (size_t i = 0; i < o->n; i++) {
		if (o->q[i]->buf)
			buf_release(o->q[i]->buf);
		free_entry(o, o->q[i]);
	}
	while (o->free_chunks) {
		struct chunk *c = o->free_chunks;
		o->free_chunks = c->next;
		free(c);
	}
	free(o->cur);
	free(o->q);
	free(o);
}
