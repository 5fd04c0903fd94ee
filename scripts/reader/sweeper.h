/* sweeper.h - the liveness sweep run by the reader itself
 * (allocsites-read --sweep; sweeper.c), as tally.c sees it. Apart from
 * reader.h: the sweep's own header (scripts/sweep/sweep.h) has names of
 * its own (struct proc, the kinds) that would clash there. */
#ifndef ALLOCSITES_SWEEPER_H
#define ALLOCSITES_SWEEPER_H

#include <stddef.h>
#include <stdint.h>

#include "../sweep/logcols.h"

/* events in a chunk of the event log (eventlog.SPILL_EVERY) */
#define LOG_CHUNK_EVENTS (1u << 19)

/* events in a chunk handed to the sweep in memory: small enough that
 * the sweep, on the other CPU, reads it from the cache it shares with
 * the tally that wrote it (about 1.5 MB), and a few are all the memory
 * the log takes */
#define SWEEP_CHUNK (1u << 15)

/* c's arrays, each n events long. The sweep's chunks get arrays of
 * SWEEP_CHUNK: with LOG_CHUNK_EVENTS' (22 MB, of which a chunk used
 * 1.5), each set the pool could not give was fresh mappings, and the
 * kernel zeroed a 2 MB huge page for each array touched: a tenth of the
 * tally's thread at 10^7 allocations (a cpu-clock profile, by hand). */
void logcols_alloc(struct logcols *c, size_t n);
/* Writes c's n events to fd, in EventLog._spill's layout (each column's
 * array after the one before), *offset moved on by what was written;
 * 0, or the errno of a write that failed (ENOSPC: one that wrote
 * nothing) */
int logcols_write(int fd, const struct logcols *c, uint64_t *offset);

struct sweeper;
/* Starts the sweep's thread (exact mode, the timeline's origin only):
 * min_size as --min-size; spill_fd, the file where chunks go when the
 * sweep is that far behind (it waits at a process's exit for the end
 * of the log), or -1 */
struct sweeper *sweeper_start(int spill_fd, uint64_t min_size);
/* Hands over a filled chunk; c's arrays are then others to fill */
void sweeper_chunk(struct sweeper *s, struct logcols *c);
/* The end of the log, whose keys were nkeys: waits for the sweep and
 * returns its answer (allocsites-sweep's lines; malloc'd, *len bytes) */
char *sweeper_end(struct sweeper *s, uint64_t nkeys, size_t *len);

#endif
