/* allocsites-sweep - the liveness sweep of an EventLog
 * (scripts/allocsites_lib/read/eventlog.py), for analyze/nativesweep.py.
 *
 * The log's columns are in a file the caller hands over as an open
 * descriptor (the spill file, unlinked); stdin says where:
 *
 *   fd N
 *   nkeys N                 the log's keys (at least 1)
 *   min_size N              --min-size: smaller allocations are live
 *                           memory but count in no code's ec/eb
 *   series 0|1              1: each point names every key's live bytes
 *                           (a timeline of sites); 0: totals only
 *   sampled 0|1             1: sampled mode (rt:sample, rt:sample_free)
 *   times K t1 .. tK        the timeline's sample times, ascending
 *   times first             or one: the first event's (follow mode)
 *   chunks M
 *   OFFSET L0 .. L7         M lines: a chunk's offset and the lengths of
 *                           its columns (kinds times pids tids a b sizes
 *                           keyidx), each column's array right after the
 *                           one before, as EventLog._spill writes them
 *   chunks follow           or follow mode: "chunk OFFSET L0..L7"
 *                           lines come one by one, then "end NKEYS
 *                           NCHUNKS NEVENTS" (stdin_more); the mode the
 *                           reader runs the sweep in, in a thread
 *                           (reader/sweeper.c, with the chunks in
 *                           memory), here for the tests to drive it
 *                           chunk by chunk (tests/unit/test_liveness.py)
 *
 * stdout, one record a line (sweep.c's sweep_log): plan, P (a point of
 * the timeline), B (live bytes of a key at the peak), C (a code's
 * counters; sampled mode: K at the peak, F counted, L leaked), S (a
 * phase slot's), U (a run), O (a run open at its process's end), R (the
 * totals), end. Exit 0, or 1 with one line on stderr. */
#include "sweep.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void expect(const char *word)
{
	char got[32];

	if (scanf("%31s", got) != 1 || strcmp(got, word))
		die("request: '%s' expected", word);
}

static u64 read_u64(void)
{
	unsigned long long v;

	if (scanf("%llu", &v) != 1)
		die("request: a number expected");
	return v;
}

/* A chunk's offset and the lengths of its columns */
static void read_chunk(struct log *log)
{
	struct chunk *k;
	u64 j;

	if (log->nchunks == log->capchunks) {
		log->capchunks = log->capchunks ? log->capchunks * 2 : 64;
		log->chunks = xrealloc(log->chunks,
				       log->capchunks * sizeof *log->chunks);
	}
	k = &log->chunks[log->nchunks];
	k->offset = read_u64();
	for (j = 0; j < 8; j++)
		k->len[j] = read_u64();
	for (j = 1; j < 6; j++)
		if (k->len[j] != k->len[0])
			die("request: chunk %u's columns differ in length",
			    log->nchunks);
	log->nchunks++;
}

/* Follow mode: "chunk OFFSET L0 .. L7" lines, then "end NKEYS NCHUNKS
 * NEVENTS"; a chunk missed or an end missing is an error, never a sweep
 * of part of the log. */
static int stdin_more(struct log *log)
{
	char word[32];
	u64 nchunks, nevents, total = 0, i;

	if (log->ended)
		return 0;
	if (scanf("%31s", word) != 1)
		die("the event log's chunks stopped short");
	if (!strcmp(word, "chunk")) {
		read_chunk(log);
		return 1;
	}
	if (strcmp(word, "end"))
		die("request: 'chunk' or 'end' expected");
	log->nkeys = read_u64();
	if (!log->nkeys)
		log->nkeys = 1;
	nchunks = read_u64();
	nevents = read_u64();
	for (i = 0; i < log->nchunks; i++)
		total += log->chunks[i].len[0];
	if (nchunks != log->nchunks || nevents != total)
		die("the event log: %llu chunks of %llu events said, %u of "
		    "%llu followed", (unsigned long long)nchunks,
		    (unsigned long long)nevents, log->nchunks,
		    (unsigned long long)total);
	log->ended = 1;
	return 0;
}

int main(void)
{
	struct log log = { 0 };
	i64 *times;
	u64 ntimes, i;
	int times_first = 0;
	char word[32];

	expect("fd");
	log.fd = (int)read_u64();
	expect("nkeys");
	log.nkeys = read_u64();
	if (!log.nkeys)
		log.nkeys = 1;
	expect("min_size");
	log.min_size = read_u64();
	expect("series");
	log.series = read_u64() != 0;
	expect("sampled");
	log.sampled = read_u64() != 0;
	expect("times");
	if (scanf("%31s", word) != 1)
		die("request: the times expected");
	if (!strcmp(word, "first")) {   /* the first event's, unknown yet */
		times_first = 1;
		ntimes = 1;
	} else {
		char *end;
		ntimes = strtoull(word, &end, 10);
		if (*end || end == word)
			die("request: a number of times expected");
	}
	times = xcalloc(ntimes + 1, sizeof *times);
	for (i = 0; i < ntimes && !times_first; i++) {
		long long t;
		if (scanf("%lld", &t) != 1)
			die("request: a time expected");
		times[i] = t;
	}
	expect("chunks");
	if (scanf("%31s", word) != 1)
		die("request: the chunks expected");
	if (!strcmp(word, "follow")) {
		log.follow = 1;
		log.more = stdin_more;
	} else {
		char *end;
		u64 n = strtoull(word, &end, 10);
		if (*end || end == word || n > UINT32_MAX)
			die("request: a number of chunks expected");
		for (i = 0; i < n; i++)
			read_chunk(&log);
	}
	sweep_log(&log, times, ntimes, times_first, stdout);
	if (fflush(stdout) || ferror(stdout))
		die("stdout: %s", strerror(errno));
	return 0;
}
