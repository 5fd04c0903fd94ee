/* sweeper.c - the liveness sweep (scripts/sweep/, the same code as
 * allocsites-sweep) in a thread of the reader: allocsites-read --sweep.
 *
 * Why: run after the reader, the sweep reads back the event log the
 * reader wrote to a file, 35 bytes an event (734 MB at 10^7
 * allocations); writing it was about a fifth of the reader's time on
 * the 2-CPU VM (perf record of the reader, by hand), and the sweep's
 * pass a third of the report's after it. Here
 * the tally hands each chunk of columns over in memory as it fills it
 * (sweeper_chunk) and the sweep, in its follow mode, sweeps it while the
 * reader reads on and gives the arrays back to be filled again: nothing
 * is written, and the memory stays a few chunks.
 *
 * The sweep waits at an exit that may be a process's last until the
 * log shows a later one or ends (sweep.c, last_exit): a recording of
 * many processes then holds chunks back. Past MAX_HELD chunks in memory
 * the rest go to the log's file (spill_fd) and the sweep reads them
 * from there, as allocsites-sweep does.
 *
 * Only exact mode without the timeline's points (the report asks for
 * --sweep only then, and tally.c does not start one where the
 * recording has rt:sample events: sampled mode replays to the peak,
 * which needs the whole log). */
#include "sweeper.h"
#include "../sweep/sweep.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* chunks held in memory (tally.c hands over SWEEP_CHUNK events at a
 * time, so about 1.5 MB each) before the rest go to the file (the
 * environment's ALLOCSITES_SWEEP_HELD instead: the tests' way to the
 * file), and arrays kept for reuse */
#define MAX_HELD 64
#define MAX_POOL 16

struct sweeper {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* under mu: handed over and not yet taken by the sweep; the end */
	struct chunk *pending;
	u32 npending, cappending;
	int ended;
	u64 nkeys;
	/* under mu: arrays given back; chunks in memory not given back */
	struct logcols pool[MAX_POOL];
	u32 npool, held, max_held;
	/* the tally's thread: the file past MAX_HELD */
	int spill_fd;
	u64 offset;
	/* the sweep's thread */
	struct log log;
	i64 times[2];
	char *answer;
	size_t len;
};

void logcols_alloc(struct logcols *c, size_t n)
{
	c->kind = xmalloc(n);
	c->time = xmalloc(n * 8);
	c->pid = xmalloc(n * 4);
	c->tid = xmalloc(n * 4);
	c->a = xmalloc(n * 8);
	c->b = xmalloc(n * 8);
	c->size = xmalloc(n * 8);
	c->key = xmalloc(n * 4);
	c->n = c->n_size = c->n_key = 0;
}

static int write_all(int fd, const void *p, size_t n, u64 *offset)
{
	const char *b = p;

	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : ENOSPC;
		b += w;
		n -= (size_t)w;
		*offset += (u64)w;
	}
	return 0;
}

int logcols_write(int fd, const struct logcols *c, uint64_t *offset)
{
	const void *p[8] = { c->kind, c->time, c->pid, c->tid, c->a, c->b,
			     c->size, c->key };
	const size_t len[8] = { c->n, c->n * 8, c->n * 4, c->n * 4, c->n * 8,
				c->n * 8, c->n_size * 8, c->n_key * 4 };
	int i, err = 0;

	for (i = 0; i < 8 && !err; i++)
		err = write_all(fd, p[i], len[i], offset);
	return err;
}

static void logcols_free(struct logcols *c)
{
	free(c->kind);
	free(c->time);
	free(c->pid);
	free(c->tid);
	free(c->a);
	free(c->b);
	free(c->size);
	free(c->key);
}

/* log->more: the chunks handed over since, or the end */
static int queue_more(struct log *log)
{
	struct sweeper *s = log->arg;
	int got = 1;

	pthread_mutex_lock(&s->mu);
	while (!s->npending && !s->ended)
		pthread_cond_wait(&s->cv, &s->mu);
	if (s->npending) {
		if (log->nchunks + s->npending > log->capchunks) {
			log->capchunks = 2 * (log->nchunks + s->npending);
			log->chunks = xrealloc(log->chunks, log->capchunks *
					       sizeof *log->chunks);
		}
		memcpy(log->chunks + log->nchunks, s->pending,
		       s->npending * sizeof *s->pending);
		log->nchunks += s->npending;
		s->npending = 0;
	} else {
		log->nkeys = s->nkeys ? s->nkeys : 1;
		log->ended = 1;
		got = 0;
	}
	pthread_mutex_unlock(&s->mu);
	return got;
}

/* log->done: chunk ch's arrays back to the pool */
static void chunk_done(struct log *log, u32 ch)
{
	struct sweeper *s = log->arg;
	struct logcols *m = log->chunks[ch].mem;
	struct logcols c;

	if (!m)
		return;
	c = *m;
	free(m);
	log->chunks[ch].mem = NULL;
	pthread_mutex_lock(&s->mu);
	s->held--;
	if (s->npool < MAX_POOL) {
		s->pool[s->npool++] = c;
		c.kind = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	if (c.kind)
		logcols_free(&c);
}

static void *sweep_thread(void *arg)
{
	struct sweeper *s = arg;
	FILE *out = open_memstream(&s->answer, &s->len);

	if (!out)
		die("out of memory (its answer)");
	sweep_log(&s->log, s->times, 1, 1, out);
	if (fclose(out))
		die("out of memory (its answer)");
	return NULL;
}

struct sweeper *sweeper_start(int spill_fd, uint64_t min_size)
{
	struct sweeper *s = xcalloc(1, sizeof *s);
	const char *held = getenv("ALLOCSITES_SWEEP_HELD");
	char *end;

	die_prefix = "allocsites-read: the liveness sweep";
	s->max_held = MAX_HELD;
	if (held && *held) {
		unsigned long v = strtoul(held, &end, 10);
		if (!*end && v <= MAX_HELD)
			s->max_held = (u32)v;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->spill_fd = spill_fd;
	s->log.fd = spill_fd;
	s->log.follow = 1;
	s->log.min_size = min_size;
	s->log.more = queue_more;
	s->log.done = chunk_done;
	s->log.arg = s;
	if (pthread_create(&s->thread, NULL, sweep_thread, s))
		die("cannot start its thread");
	return s;
}

/* The columns to the file, in EventLog._spill's layout */
static void to_file(struct sweeper *s, const struct logcols *c,
		    struct chunk *k)
{
	int err;

	k->offset = s->offset;
	k->mem = NULL;
	err = logcols_write(s->spill_fd, c, &s->offset);
	if (err)
		die("cannot write the event log to a temporary file (TMPDIR): "
		    "%s", strerror(err));
}

void sweeper_chunk(struct sweeper *s, struct logcols *c)
{
	struct chunk k;
	int keep, i;

	k.offset = 0;
	for (i = 0; i < 6; i++)
		k.len[i] = c->n;
	k.len[6] = c->n_size;
	k.len[7] = c->n_key;
	pthread_mutex_lock(&s->mu);
	keep = s->held < s->max_held || s->spill_fd < 0;
	if (keep)
		s->held++;
	pthread_mutex_unlock(&s->mu);
	if (keep) {
		struct logcols *m = xmalloc(sizeof *m);
		*m = *c;
		k.mem = m;
	} else {
		to_file(s, c, &k);
	}
	pthread_mutex_lock(&s->mu);
	if (s->npending == s->cappending) {
		s->cappending = s->cappending ? 2 * s->cappending : 16;
		s->pending = xrealloc(s->pending, s->cappending *
				      sizeof *s->pending);
	}
	s->pending[s->npending++] = k;
	pthread_cond_signal(&s->cv);
	if (keep && s->npool)   /* arrays the sweep is done with */
		*c = s->pool[--s->npool];
	else if (keep)
		c->kind = NULL;
	pthread_mutex_unlock(&s->mu);
	if (keep && !c->kind)
		logcols_alloc(c, SWEEP_CHUNK);
	c->n = c->n_size = c->n_key = 0;
}

char *sweeper_end(struct sweeper *s, uint64_t nkeys, size_t *len)
{
	char *answer;
	u32 i;

	pthread_mutex_lock(&s->mu);
	s->ended = 1;
	s->nkeys = nkeys;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (pthread_join(s->thread, NULL))
		die("cannot wait for its thread");
	for (i = 0; i < s->log.nchunks; i++)
		free(s->log.chunks[i].mem);   /* none: each was swept */
	for (i = 0; i < s->npool; i++)
		logcols_free(&s->pool[i]);
	free(s->log.chunks);
	free(s->pending);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	answer = s->answer;
	*len = s->len;
	free(s);
	return answer;
}
