/* buf.c - reference-counted buffers for decompressed records, so that
 * order.c can queue a record where zstd wrote it instead of copying it
 * (8 KiB of stack copy a sample: copying was half the reader's time).
 * A buffer goes back to a free list when the decompressor has moved on
 * and every record queued in it was delivered. The decompressor and the
 * rest of the reader run in two threads (pipe.c): the counts are atomic
 * and the free list is locked. An atomic count shared by two cores costs
 * a cache miss a record when each record takes its own: pipe.c and
 * order.c count a run of records of one buffer and add or take them at
 * once (buf_retain_n, buf_release_n). */
#include "reader.h"

#include <pthread.h>
#include <stdlib.h>

struct buf {
	struct buf *next;
	long refs;
	u8 data[];
};

static struct buf *free_bufs;
static size_t live;
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;

u8 *buf_data(struct buf *b)
{
	return b->data;
}

struct buf *buf_get(void)
{
	pthread_mutex_lock(&free_lock);
	struct buf *b = free_bufs;
	if (b)
		free_bufs = b->next;
	pthread_mutex_unlock(&free_lock);
	if (!b && !(b = malloc(sizeof(*b) + BUF_SIZE)))
		return NULL;
	b->refs = 1;
	b->next = NULL;
	__atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
	return b;
}

void buf_retain(struct buf *b)
{
	buf_retain_n(b, 1);
}

void buf_retain_n(struct buf *b, long n)
{
	__atomic_add_fetch(&b->refs, n, __ATOMIC_RELAXED);
}

void buf_release(struct buf *b)
{
	buf_release_n(b, 1);
}

void buf_release_n(struct buf *b, long n)
{
	if (b && n && __atomic_sub_fetch(&b->refs, n, __ATOMIC_ACQ_REL) == 0) {
		pthread_mutex_lock(&free_lock);
		b->next = free_bufs;
		free_bufs = b;
		pthread_mutex_unlock(&free_lock);
		__atomic_sub_fetch(&live, 1, __ATOMIC_RELAXED);
	}
}

size_t buf_live(void)
{
	return __atomic_load_n(&live, __ATOMIC_RELAXED);
}
