/* pipe.c - the file's records read and decompressed in a thread of their
 * own, handed in order to the rest of the reader in the calling thread.
 *
 * Decompressing a DWARF recording (8 KiB of stack copy an allocation,
 * 9 GB at 10^6 allocations) is about a third of the reader's time, the
 * ordering, unwinding and tallying the rest: on two cores the two run
 * side by side. perffile_records runs unchanged in the producer thread,
 * on a copy of the perffile (its position, its counts), and each record
 * it gives goes into a bounded queue: the records zstd wrote into a
 * buffer stay there (the buffer retained until the consumer is done with
 * them, buf.c), the few read straight from the file are copied. The
 * consumer calls fn for each in the order given, with the record's file
 * offset in pf->at as the single-threaded walk would have it. */
#include "reader.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct item {
	const u8 *rec;
	u32 size;
	struct buf *b;          /* retained for the item; NULL: rec is a copy */
	u64 at;
};

/* A batch is handed over when it holds BATCH records or BATCH_BYTES of
 * them. Each hand-over is a lock, and a futex wake when the other side
 * sleeps: with 256-record batches an fp recording (about 150 bytes a
 * record) made 80,000 of them at 10^7 allocations, and the reader took a
 * sixth longer than with 4096 (by hand, interleaved runs). The byte bound
 * keeps a DWARF recording's batches (8 KiB of stack copy a record) near
 * the 256 records they were. Four batches in the queue: sixteen held
 * 20 MB more of zstd's buffers (each queued record keeps its 4 MiB
 * buffer) for no gain in time (interleaved runs, fp 10^7 and DWARF
 * 10^6, by hand). */
#define BATCH 4096
#define BATCH_BYTES (2u << 20)
#define QUEUE_BATCHES 4

struct pipe {
	struct perffile prod;   /* the producer's copy of the perffile */
	pthread_mutex_t m;
	pthread_cond_t can_put, can_take;
	struct item *batches[QUEUE_BATCHES];
	int counts[QUEUE_BATCHES];
	int head, n;            /* ring of full batches */
	int done, stop, rc;
	struct item *cur;       /* the producer's batch being filled */
	int ncur;
	size_t cur_bytes;
	/* batch arrays the consumer is done with, for the producer to fill
	 * again: freed by the thread that did not allocate them, they took
	 * glibc's arena lock from under the other thread */
	struct item *spare[QUEUE_BATCHES + 2];
	int nspare;
	struct buf *hold;       /* the buffer of the last record queued, held
				 * (one reference) while its records' own
				 * references are counted in hold_n, added at
				 * once (buf.c) */
	long hold_n;
	char err[512];
};

static void free_item(struct item *it)
{
	if (it->b)
		buf_release(it->b);
	else
		free((void *)it->rec);
}

/* The references counted for hold's records, taken at once. */
static void add_held(struct pipe *p)
{
	if (p->hold && p->hold_n)
		buf_retain_n(p->hold, p->hold_n);
	p->hold_n = 0;
}

static void drop_hold(struct pipe *p)
{
	add_held(p);
	buf_release(p->hold);
	p->hold = NULL;
}

/* Producer: the batch being filled goes into the ring (waits for room);
 * -1 when the consumer stopped. */
static int push(struct pipe *p)
{
	add_held(p);   /* before the consumer can release any of them */
	pthread_mutex_lock(&p->m);
	while (p->n == QUEUE_BATCHES && !p->stop)
		pthread_cond_wait(&p->can_put, &p->m);
	int stop = p->stop;
	if (!stop) {
		int slot = (p->head + p->n) % QUEUE_BATCHES;
		p->batches[slot] = p->cur;
		p->counts[slot] = p->ncur;
		p->n++;
		pthread_cond_signal(&p->can_take);
	}
	struct item *next = p->nspare ? p->spare[--p->nspare] : NULL;
	pthread_mutex_unlock(&p->m);
	if (stop) {
		for (int i = 0; i < p->ncur; i++)
			free_item(&p->cur[i]);
		free(p->cur);
	}
	p->cur = next;
	p->ncur = 0;
	p->cur_bytes = 0;
	return stop ? -1 : 0;
}

static int enqueue(void *vp, const u8 *rec, u32 size, struct buf *b)
{
	struct pipe *p = vp;
	if (!p->cur && !(p->cur = malloc(BATCH * sizeof(*p->cur))))
		return -1;
	struct item *it = &p->cur[p->ncur];
	if (b) {
		if (b != p->hold) {
			drop_hold(p);
			buf_retain(b);
			p->hold = b;
		}
		p->hold_n++;
		it->rec = rec;
	} else {
		u8 *copy = malloc(size);
		if (!copy)
			return -1;
		memcpy(copy, rec, size);
		it->rec = copy;
	}
	it->size = size;
	it->b = b;
	it->at = p->prod.at;
	p->cur_bytes += size;
	if (++p->ncur == BATCH || p->cur_bytes >= BATCH_BYTES)
		return push(p);
	return 0;
}

static void *produce(void *vp)
{
	struct pipe *p = vp;
	int rc = perffile_records(&p->prod, enqueue, p, p->err,
				  sizeof(p->err));
	if (p->ncur)
		push(p);
	free(p->cur);   /* a spare taken by the last push */
	drop_hold(p);
	if (rc && !p->err[0])
		snprintf(p->err, sizeof(p->err), "%s: out of memory",
			 p->prod.path);
	pthread_mutex_lock(&p->m);
	p->done = 1;
	p->rc = rc;
	pthread_cond_signal(&p->can_take);
	pthread_mutex_unlock(&p->m);
	return NULL;
}

int perffile_records_threaded(struct perffile *pf, record_fn fn, void *ctx,
			      char *err, size_t errlen)
{
	struct pipe *p = calloc(1, sizeof(*p));
	if (!p)
		return perffile_records(pf, fn, ctx, err, errlen);
	p->prod = *pf;
	pthread_mutex_init(&p->m, NULL);
	pthread_cond_init(&p->can_put, NULL);
	pthread_cond_init(&p->can_take, NULL);
	pthread_t t;
	if (pthread_create(&t, NULL, produce, p)) {
		free(p);
		return perffile_records(pf, fn, ctx, err, errlen);
	}
	int rc = 0;
	struct item *done_batch = NULL;   /* given back at the next take */
	for (;;) {
		pthread_mutex_lock(&p->m);
		if (done_batch && p->nspare < QUEUE_BATCHES + 2) {
			p->spare[p->nspare++] = done_batch;
			done_batch = NULL;
		}
		while (!p->n && !p->done)
			pthread_cond_wait(&p->can_take, &p->m);
		if (!p->n) {            /* done, and nothing left */
			pthread_mutex_unlock(&p->m);
			break;
		}
		struct item *batch = p->batches[p->head];
		int count = p->counts[p->head];
		p->head = (p->head + 1) % QUEUE_BATCHES;
		p->n--;
		pthread_cond_signal(&p->can_put);
		pthread_mutex_unlock(&p->m);
		/* a run of items of one buffer released at once, after
		 * fn has taken what it keeps */
		struct buf *run = NULL;
		long nrun = 0;
		for (int i = 0; i < count; i++) {
			struct item *it = &batch[i];
			pf->at = it->at;
			int kept = 0;
			if (!rc && (kept = fn(ctx, it->rec, it->size,
					      it->b)) < 0)
				rc = -1;
			if (it->b != run) {
				buf_release_n(run, nrun);
				run = it->b;
				nrun = 0;
			}
			if (it->b)
				nrun += kept <= 0;   /* kept: fn owns its reference */
			else
				free((void *)it->rec);
		}
		buf_release_n(run, nrun);
		free(done_batch);   /* only when the spares were full */
		done_batch = batch;
		if (rc) {               /* stop the producer, drain the rest */
			pthread_mutex_lock(&p->m);
			p->stop = 1;
			pthread_cond_signal(&p->can_put);
			pthread_mutex_unlock(&p->m);
		}
	}
	pthread_join(t, NULL);
	free(done_batch);
	for (int i = 0; i < p->nspare; i++)
		free(p->spare[i]);
	/* what only the producer's walk counted */
	pf->tail_cut = p->prod.tail_cut;
	pf->decompressed = p->prod.decompressed;
	pf->stream_tail = p->prod.stream_tail;
	pf->walk_base = p->prod.walk_base;
	if (!rc && p->rc) {
		rc = p->rc;
		snprintf(err, errlen, "%s", p->err);
	}
	pthread_mutex_destroy(&p->m);
	pthread_cond_destroy(&p->can_put);
	pthread_cond_destroy(&p->can_take);
	free(p);
	return rc;
}
