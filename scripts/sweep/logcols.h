/* logcols.h - one chunk of the event log as its eight columns, the type
 * the reader's tally fills (reader/tally.c, reader/sweeper.c) and the
 * sweep reads (sweep/chunks.c): one definition for both sides, which
 * otherwise share no header (sweep.h and reader.h each have their own
 * struct proc and kinds). The columns are EventLog's
 * (scripts/allocsites_lib/read/eventlog.py): kind, time, pid, tid, a, b
 * for every event; size for a free's or reallocation's recorded size
 * (n_size of them), key for an allocation's key (n_key). */
#ifndef ALLOCSITES_LOGCOLS_H
#define ALLOCSITES_LOGCOLS_H

#include <stddef.h>
#include <stdint.h>

struct logcols {
	uint8_t *kind;
	int64_t *time;
	int32_t *pid, *tid;
	uint64_t *a, *b, *size;
	uint32_t *key;
	size_t n, n_size, n_key;
};

#endif
