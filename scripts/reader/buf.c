/* buf.c - reference-counted buffers for decompressed records, so that
 * order.c can queue a record where zstd wrote it instead of copying it
 * (8 KiB of stack copy a sample: copying was half the reader's time).
 * A buffer goes back to a free list when the decompressor has moved on
 * and every record queued in it was delivered. */
#include "reader.h"

#include <stdlib.h>

struct buf {
	struct buf *next;
	long refs;
	u8 data[];
};

static struct buf *free_bufs;
static size_t live;

u8 *buf_data(struct buf *b)
{
	return b->data;
}

struct buf *buf_get(void)
{
	struct buf *b = free_bufs;
	if (b)
		free_bufs = b->next;
	else if (!(b = malloc(sizeof(*b) + BUF_SIZE)))
		return NULL;
	b->refs = 1;
	b->next = NULL;
	live++;
	return b;
}

void buf_retain(struct buf *b)
{
	b->refs++;
}

void buf_release(struct buf *b)
{
	if (b && --b->refs == 0) {
		b->next = free_bufs;
		free_bufs = b;
		live--;
	}
}

size_t buf_live(void)
{
	return live;
}
