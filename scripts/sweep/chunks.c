/* chunks.c - a chunk of the event log's columns, as the sweep reads it:
 * from the log's file (EventLog._spill's layout: each column's array
 * right after the one before), or where the reader that runs the sweep
 * in a thread of its own keeps it in memory (reader/sweeper.c). */
#include "sweep.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const size_t width[8] = { 1, 8, 4, 4, 8, 8, 8, 4 };

void cols_read(const struct log *log, u32 ch, struct cols *c)
{
	const struct chunk *k = &log->chunks[ch];
	size_t need = 0, at[8], i;
	u64 off = k->offset;
	u8 *base;

	if (k->mem) {   /* in memory: c's own buffer stays for the next */
		c->col = *k->mem;
		return;
	}
	for (i = 0; i < 8; i++) {
		at[i] = need;
		need += (k->len[i] * width[i] + 15) & ~(size_t)15;
	}
	if (need > c->cap) {
		free(c->buf);
		c->buf = xmalloc(need);
		c->cap = need;
	}
	base = c->buf;
	for (i = 0; i < 8; i++) {
		size_t len = k->len[i] * width[i], done = 0;
		while (done < len) {
			ssize_t got = pread(log->fd, base + at[i] + done,
					    len - done, (off_t)(off + done));
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
				die("the event log: %s", got < 0 ?
				    strerror(errno) : "shorter than said");
			done += (size_t)got;
		}
		off += len;
	}
	c->col.kind = base + at[0];
	c->col.time = (i64 *)(base + at[1]);
	c->col.pid = (i32 *)(base + at[2]);
	c->col.tid = (i32 *)(base + at[3]);
	c->col.a = (u64 *)(base + at[4]);
	c->col.b = (u64 *)(base + at[5]);
	c->col.size = (u64 *)(base + at[6]);
	c->col.key = (u32 *)(base + at[7]);
	c->col.n = k->len[0];
	c->col.n_size = k->len[6];
	c->col.n_key = k->len[7];
}

