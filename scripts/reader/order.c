/* order.c - perf's ordered events (util/ordered-events.c), so that this
 * reader hands events over in the order perf script does.
 *
 * perf queues every timed record; at each PERF_RECORD_FINISHED_ROUND it
 * delivers, in time order, the queued records no later than the latest
 * time seen at the previous round, then remembers the latest time seen
 * now. Records of equal time keep their order in the file. At the end,
 * everything left goes out. Memory: at most two rounds of records (a
 * round is one pass of perf record over its ring buffers). */
#include "reader.h"

#include <stdlib.h>
#include <string.h>

struct entry {
	u64 time, seq;
	u32 size;
	u8 data[];
};

struct order {
	deliver_fn fn;
	void *ctx;
	struct entry **q;
	size_t n, cap;
	u64 seq;
	u64 max_time, next_flush;
	size_t bytes;
};

struct order *order_new(deliver_fn fn, void *ctx)
{
	struct order *o = calloc(1, sizeof(*o));
	o->fn = fn;
	o->ctx = ctx;
	return o;
}

int order_queue(struct order *o, u64 time, const u8 *rec, u32 size)
{
	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 4096;
		o->q = realloc(o->q, o->cap * sizeof(*o->q));
		if (!o->q)
			return -1;
	}
	struct entry *e = malloc(sizeof(*e) + size);
	if (!e)
		return -1;
	e->time = time;
	e->seq = o->seq++;
	e->size = size;
	memcpy(e->data, rec, size);
	o->q[o->n++] = e;
	o->bytes += size;
	if (time > o->max_time)
		o->max_time = time;
	return 0;
}

static int cmp(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a,
			   *y = *(struct entry *const *)b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int deliver_upto(struct order *o, u64 limit, int all)
{
	qsort(o->q, o->n, sizeof(*o->q), cmp);
	size_t i = 0;
	int rc = 0;
	for (; i < o->n; i++) {
		struct entry *e = o->q[i];
		if (!all && e->time > limit)
			break;
		if (!rc && o->fn(o->ctx, e->data, e->size) < 0)
			rc = -1;
		o->bytes -= e->size;
		free(e);
	}
	memmove(o->q, o->q + i, (o->n - i) * sizeof(*o->q));
	o->n -= i;
	return rc;
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
	for (size_t i = 0; i < o->n; i++)
		free(o->q[i]);
	free(o->q);
	free(o);
}
