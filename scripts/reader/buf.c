/* buf.c - reference-counted buffers for decompressed records, so that
 * order.c can queue a record where zstd wrote it instead of copying it
 * (8 KiB of stack copy a sample: copying was half the reader's time).
 * A buffer goes back to a free list when the decompressor has moved on
 * and every record queued in it was delivered. The decompressor and the
 * rest of the reader run in two threads (pipe.c): the counts are atomic
 * and the free list is locked. */
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
	__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
}

void buf_release(struct buf *b)
{
	if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0) {
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
