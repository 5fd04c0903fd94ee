/* sweep.c - the liveness sweep: the plan scan, the main pass over every
 * event, the end. Its rules are those of the Python sweep kept in the
 * tests as their oracle (tests/oracle/liveness_py.py: _Plan, _Sweep.run,
 * _Sweep.finish); each function names the method it follows, and the
 * comments there say why. The state at the peak comes from the same
 * pass (struct sweep's epochs); in sampled mode, whose counts are
 * doubles, from a replay up to the peak, summed in the oracle's order
 * (processes in the order first seen, allocations in the order made),
 * so that the sums come out bit for bit the same. */
#include "sweep.h"

#include <stdlib.h>
#include <string.h>

struct plan {
	struct u64map last_exit;   /* pid -> index of its last rt:exit */
	int seen[256];
	u32 scanned;               /* chunks scanned, and their events */
	u64 base;
};

/* Codes: while sweeping, a code is (slot << 32 | key index), its slot
 * numbered in the order the phase ids were first seen (0: no phase), and
 * the keys known so far: the sweep need not know every phase and key
 * before it starts. The answer numbers them as the assembly does
 * (liveness.py): slots by phase id, 1.., and slot * nkeys + key
 * (final_code). */
#define CODE_SLOT(code) ((code) >> 32)
#define CODE_KEY(code) ((code) & 0xffffffffu)

struct sweep {
	struct plan *plan;
	u64 nkb;                   /* keys the per-key arrays hold */
	u64 nkeys_seen;            /* the highest key index seen, plus 1 */
	struct u64map slot_of;     /* phase id -> slot (1..), first seen */
	u64 *slot_phase;           /* slot -> phase id */
	u64 capslots;
	struct recs recs;
	struct codes codes;
	struct runs runs;
	i128 *kb;                  /* live bytes per key */
	/* The state at the peak without a second pass: a new peak starts
	 * an epoch; the first change of a key's (a code's) live figures
	 * in an epoch saves what they were, which is what they were at
	 * the epoch's peak. At the end, a key changed since the last peak
	 * has its saved figures, any other its current ones. */
	u64 epoch;
	i128 *kb_saved;
	u64 *kb_ep;
	/* per key, the code (+1; 0: none yet) of its last allocation and
	 * that code's index: a key's allocations come mostly in one phase
	 * slot, and codes_get's hash lookup was a seventh of the sweep's
	 * instructions on minicc's 10^6 fp log (by hand, callgrind) */
	u64 *memo_code;
	u32 *memo_ci;
	struct u64map procs;       /* pid -> struct proc * */
	struct u64map threads;     /* tid -> struct thread * */
	i128 total, ctotal;
	i128 peak, cpeak, cat_peak, committed_end;
	i64 peak_i, peak_t;
	i64 un_n, reused, unmatched_phase_ends;
	i128 un_b;
	u64 nslots;
	i64 *slot_runs;
	i128 *left, *growth, *cgrowth, *phase_peak;
	/* open phases at a process's end: (run, pid, tid, phase id) */
	u64 *open_r, *open_phase; i32 *open_pid, *open_tid;
	u64 nopen, capopen;
	/* the sample times and where they are written (main pass only);
	 * times_first: the one time is the first event's, not known yet */
	i64 *times;
	u64 ntimes, j;
	int times_first;
	FILE *out;
	int series;                /* P lines name each key's bytes */
	int sampled;               /* sampled mode (struct log) */
	/* sampled mode's orders: processes first seen, allocations made,
	 * codes' first sample, codes' first leak */
	u64 proc_seq, alloc_seq, es_seq, leak_seq;
};

/* ------------------------------------------------------------ plan */

static int cmp_u64(const void *x, const void *y)
{
	u64 a = *(const u64 *)x, b = *(const u64 *)y;
	return a < b ? -1 : a > b;
}

/* The plan of the chunks known and not yet scanned: the whole log, or
 * in follow mode what the reader has written so far */
static void plan_scan(const struct log *log, struct plan *p)
{
	struct cols c = { 0 };
	u64 i;
	int fresh;

	for (; p->scanned < log->nchunks; p->scanned++) {
		cols_read(log, p->scanned, &c);
		for (i = 0; i < c.col.n; i++) {
			u8 kind = c.col.kind[i];
			p->seen[kind] = 1;
			if (kind == K_EXIT)
				*u64map_put(&p->last_exit, (u64)(u32)c.col.pid[i],
					    &fresh) = p->base + i;
		}
		p->base += c.col.n;
	}
	free(c.buf);
}

/* Follow mode: waits for the reader's next chunk (or the end) and scans
 * it; 0 at the end */
static int more(struct plan *p, struct log *log)
{
	int got = log->more(log);

	plan_scan(log, p);
	return got;
}

/* Whether chunk ch is there, waiting for it in follow mode */
static int chunk_ready(struct plan *p, struct log *log, u32 ch)
{
	while (ch >= log->nchunks && log->follow && more(p, log))
		;
	return ch < log->nchunks;
}

/* Whether event i, an rt:exit of pid, is the process's last: the plan
 * says, once it has scanned every chunk that could hold a later one (in
 * follow mode, a process's exits come at its end: the sweep waits there
 * for the reader, or until a later exit of the pid shows up) */
static int last_exit(struct plan *p, struct log *log, i32 pid, u64 i)
{
	for (;;) {
		u64 *last = u64map_get(&p->last_exit, (u64)(u32)pid);
		if (!last || *last != i)
			return 0;
		if (!log->follow || log->ended)
			return 1;
		more(p, log);
	}
}

/* ------------------------------------------------------------ state */

#define GROW(p, old, new) do { \
	(p) = xrealloc((p), (new) * sizeof *(p)); \
	memset((p) + (old), 0, ((new) - (old)) * sizeof *(p)); \
} while (0)

/* the per-key arrays made to hold key k */
static void keys_need(struct sweep *s, u64 k)
{
	u64 n;

	if (k < s->nkb)
		return;
	n = s->nkb * 2 > k + 1 ? s->nkb * 2 : k + 64;
	GROW(s->kb, s->nkb, n);
	GROW(s->kb_saved, s->nkb, n);
	GROW(s->kb_ep, s->nkb, n);
	GROW(s->memo_code, s->nkb, n);
	GROW(s->memo_ci, s->nkb, n);
	s->nkb = n;
}

/* the slot of a phase id, made (with its counters) when first seen */
static u32 slot_get(struct sweep *s, u64 phase)
{
	int fresh;
	u64 *slot = u64map_put(&s->slot_of, phase, &fresh);

	if (!fresh)
		return (u32)*slot;
	if (s->nslots == s->capslots) {
		u64 n = s->capslots * 2;
		GROW(s->slot_phase, s->capslots, n);
		GROW(s->slot_runs, s->capslots, n);
		GROW(s->left, s->capslots, n);
		GROW(s->growth, s->capslots, n);
		GROW(s->cgrowth, s->capslots, n);
		GROW(s->phase_peak, s->capslots, n);
		s->capslots = n;
	}
	if (s->nslots > UINT32_MAX)
		die("more than 2^32 phase ids");
	s->slot_phase[s->nslots] = phase;
	*slot = s->nslots;
	return (u32)s->nslots++;
}

static void sweep_init(struct sweep *s, struct plan *p, u64 nkeys)
{
	memset(s, 0, sizeof *s);
	s->plan = p;
	keys_need(s, nkeys ? nkeys - 1 : 0);
	s->epoch = 1;
	s->nslots = 1;   /* slot 0: outside every phase */
	s->capslots = 16;
	s->slot_phase = xcalloc(s->capslots, sizeof *s->slot_phase);
	s->slot_runs = xcalloc(s->capslots, sizeof *s->slot_runs);
	s->left = xcalloc(s->capslots, sizeof *s->left);
	s->growth = xcalloc(s->capslots, sizeof *s->growth);
	s->cgrowth = xcalloc(s->capslots, sizeof *s->cgrowth);
	s->phase_peak = xcalloc(s->capslots, sizeof *s->phase_peak);
	s->peak_i = -1;
	runs_tuple(&s->runs, NULL, 0);
}

/* The answer's numbering (struct sweep's comment): slots by phase id */
struct numbering {
	u64 nkeys;
	u64 *phase_ids;            /* sorted */
	u64 nslots;                /* with slot 0 */
	struct u64map slot_of;     /* phase id -> slot */
};

static void numbering_make(struct numbering *nb, const struct sweep *s,
			   u64 nkeys)
{
	u64 i;
	int fresh;

	memset(nb, 0, sizeof *nb);
	nb->nkeys = nkeys;
	nb->nslots = s->nslots;
	nb->phase_ids = xmalloc(s->nslots * sizeof *nb->phase_ids);
	for (i = 1; i < s->nslots; i++)
		nb->phase_ids[i - 1] = s->slot_phase[i];
	qsort(nb->phase_ids, s->nslots - 1, sizeof *nb->phase_ids, cmp_u64);
	for (i = 1; i < s->nslots; i++)
		*u64map_put(&nb->slot_of, nb->phase_ids[i - 1], &fresh) = i;
}

/* the answer's slot of s's slot (s: the main sweep, or a replay) */
static u64 final_slot(const struct numbering *nb, const struct sweep *s,
		      u64 slot)
{
	return slot ? *u64map_get(&nb->slot_of, s->slot_phase[slot]) : 0;
}

static u64 final_code(const struct numbering *nb, const struct sweep *s,
		      u64 code)
{
	return final_slot(nb, s, CODE_SLOT(code)) * nb->nkeys + CODE_KEY(code);
}

static struct proc *proc_get(struct sweep *s, i32 pid)
{
	int fresh;
	u64 *slot = u64map_put(&s->procs, (u64)(u32)pid, &fresh);
	struct proc *pr;

	if (!fresh)
		return (struct proc *)(uintptr_t)*slot;
	pr = xcalloc(1, sizeof *pr);
	pr->pid = pid;
	pr->seq = s->proc_seq++;
	*slot = (u64)(uintptr_t)pr;
	return pr;
}

static struct thread *thread_get(struct sweep *s, i32 tid)
{
	u64 *slot = u64map_get(&s->threads, (u64)(u32)tid);
	return slot ? (struct thread *)(uintptr_t)*slot : NULL;
}

static void thread_drop(struct sweep *s, i32 tid)
{
	struct thread *t = thread_get(s, tid);

	if (!t)
		return;
	free(t->phase);
	free(t->run);
	free(t);
	u64map_del(&s->threads, (u64)(u32)tid);
}

/* the bytes a record's allocation held leave the totals (_forget) */
/* Before a key's and its code's live figures change (the epochs above) */
static void touch(struct sweep *s, u64 k, u32 ci)
{
	struct codes *c = &s->codes;

	if (s->kb_ep[k] != s->epoch) {
		s->kb_saved[k] = s->kb[k];
		s->kb_ep[k] = s->epoch;
	}
	if (c->ep[ci] != s->epoch) {
		c->sb[ci] = c->liveb[ci];
		c->sc[ci] = c->livec[ci];
		c->ep[ci] = s->epoch;
	}
}

/* A live allocation of code ci, size bytes, goes (sign -1) or comes (1) */
static void live_change(struct sweep *s, u32 ci, i128 size, int sign)
{
	u64 k = s->codes.k[ci];

	touch(s, k, ci);
	s->kb[k] += sign * size;
	s->codes.liveb[ci] += sign * size;
	s->codes.livec[ci] += sign;
}

static void forget(struct sweep *s, struct proc *pr, u32 id)
{
	const struct rec *r = &s->recs.r[id];
	u32 i, n = s->runs.tlen[r->runs];
	const u32 *runs = s->runs.pool + s->runs.tstart[r->runs];

	pr->total -= r->size;
	s->total -= r->size;
	live_change(s, r->ci, r->size, -1);
	for (i = 0; i < n; i++)
		s->runs.live[runs[i]] -= r->size;
}

/* ------------------------------------------------------------ rare events */

static void flush(struct sweep *s, struct proc *pr)
{
	u32 i;

	for (i = 0; i < pr->nopen; i++)
		if (pr->hw > s->runs.best[pr->open[i]])
			s->runs.best[pr->open[i]] = pr->hw;
	pr->hw = pr->total;
}

static void set_thread(struct sweep *s, i32 tid, struct thread *t)
{
	u64 *slot;

	if (!t->n) {
		thread_drop(s, tid);
		return;
	}
	slot = u64map_get(&s->slot_of, t->phase[t->n - 1]);
	t->cbase = *slot << 32;
	t->tuple = runs_tuple(&s->runs, t->run, t->n);
}

static void close_run(struct sweep *s, struct proc *pr, u32 r)
{
	struct runs *rs = &s->runs;
	u32 slot = rs->slot[r], i;

	s->left[slot] += rs->live[r];
	s->growth[slot] += pr->total - rs->total0[r];
	s->cgrowth[slot] += pr->commit - rs->commit0[r];
	if (rs->best[r] > s->phase_peak[slot])
		s->phase_peak[slot] = rs->best[r];
	for (i = 0; i < pr->nopen; i++)
		if (pr->open[i] == r) {
			memmove(pr->open + i, pr->open + i + 1,
				(pr->nopen - i - 1) * sizeof *pr->open);
			pr->nopen--;
			break;
		}
}

static void begin(struct sweep *s, struct proc *pr, i32 tid, u64 phase)
{
	u32 slot = slot_get(s, phase), r;
	struct thread *th = thread_get(s, tid);
	struct runs *rs = &s->runs;
	int fresh;

	if (!th || th->pid != pr->pid) {
		thread_drop(s, tid);
		th = xcalloc(1, sizeof *th);
		th->pid = pr->pid;
		*u64map_put(&s->threads, (u64)(u32)tid, &fresh) =
			(u64)(uintptr_t)th;
	}
	flush(s, pr);
	r = runs_new(rs);
	rs->slot[r] = slot;
	rs->pid[r] = pr->pid;
	rs->total0[r] = pr->total;
	rs->commit0[r] = pr->commit;
	rs->live[r] = 0;
	rs->best[r] = pr->total;
	s->slot_runs[slot]++;
	if (pr->nopen == pr->capopen) {
		pr->capopen = pr->capopen ? pr->capopen * 2 : 8;
		pr->open = xrealloc(pr->open, pr->capopen * sizeof *pr->open);
	}
	pr->open[pr->nopen++] = r;
	if (th->n == th->cap) {
		th->cap = th->cap ? th->cap * 2 : 8;
		th->phase = xrealloc(th->phase, th->cap * sizeof *th->phase);
		th->run = xrealloc(th->run, th->cap * sizeof *th->run);
	}
	th->phase[th->n] = phase;
	th->run[th->n] = r;
	th->n++;
	set_thread(s, tid, th);
}

static void end(struct sweep *s, i32 tid, u64 phase)
{
	struct thread *th = thread_get(s, tid);
	struct proc *pr;
	u64 *slot;
	i64 depth = th ? (i64)th->n - 1 : -1;

	while (depth >= 0 && th->phase[depth] != phase)
		depth--;
	if (depth < 0) {
		s->unmatched_phase_ends++;
		return;
	}
	slot = u64map_get(&s->procs, (u64)(u32)th->pid);
	if (!slot)
		die("a thread of a process that ended");
	pr = (struct proc *)(uintptr_t)*slot;
	flush(s, pr);
	while ((i64)th->n > depth)
		close_run(s, pr, th->run[--th->n]);
	set_thread(s, tid, th);
}

struct release_arg { struct sweep *s; struct proc *pr; };

static int release_one(u64 ptr, u32 id, void *arg)
{
	struct release_arg *ra = arg;

	forget(ra->s, ra->pr, id);
	recs_unref(&ra->s->recs, id);
	if (ra->s->sampled)
		u64map_del(&ra->pr->order, ptr);
	return 1;
}

static void release(struct sweep *s, struct proc *pr, u64 base, u64 len)
{
	struct release_arg ra = { s, pr };

	pr->has_last = 0;
	if (!len)
		return;
	ptrmap_each(&pr->live, base, (unsigned __int128)base + len,
		    release_one, &ra);
}

/* ------------------------------------------------------------ orders */

double divide(u64 a, u64 b)
{
	if (a < 1ull << 53 && b < 1ull << 53)
		return (double)a / (double)b;
	return (double)((long double)a / (long double)b);
}

/* a record's allocation count: 1, or in sampled mode weight / size */
static double rec_count(const struct rec *r)
{
	return r->osize ? divide(r->size, r->osize) : 1;
}

struct made { u64 seq; u32 id; };

static int cmp_made(const void *x, const void *y)
{
	u64 a = ((const struct made *)x)->seq, b = ((const struct made *)y)->seq;
	return a < b ? -1 : a > b;
}

struct collect_arg { const struct u64map *order; struct made *v; u64 n; };

static int collect_one(u64 ptr, u32 id, void *arg)
{
	struct collect_arg *ca = arg;
	const u64 *seq = u64map_get(ca->order, ptr);

	if (!seq)
		die("a live allocation without its order");
	ca->v[ca->n].seq = *seq;
	ca->v[ca->n].id = id;
	ca->n++;
	return 0;
}

/* sampled mode: pr's live allocations in the order they were made (the
 * order of the oracle's dict); *n of them, the array is the caller's */
static struct made *live_in_order(struct proc *pr, u64 *n)
{
	struct collect_arg ca = { &pr->order, NULL, 0 };

	ca.v = xmalloc((pr->order.n + 1) * sizeof *ca.v);
	ptrmap_each(&pr->live, 0, (unsigned __int128)1 << 64, collect_one,
		    &ca);
	if (ca.n != pr->order.n)
		die("live allocations and their order differ");
	qsort(ca.v, ca.n, sizeof *ca.v, cmp_made);
	*n = ca.n;
	return ca.v;
}

static int cmp_proc(const void *x, const void *y)
{
	u64 a = (*(struct proc *const *)x)->seq;
	u64 b = (*(struct proc *const *)y)->seq;
	return a < b ? -1 : a > b;
}

/* the processes in the order first seen; *n of them */
static struct proc **procs_in_order(struct sweep *s, u64 *n)
{
	struct proc **v = xmalloc((s->procs.n + 1) * sizeof *v);
	u64 i;

	*n = 0;
	for (i = 0; i < s->procs.cap; i++)
		if (s->procs.used[i])
			v[(*n)++] = (struct proc *)(uintptr_t)s->procs.vals[i];
	qsort(v, *n, sizeof *v, cmp_proc);
	return v;
}

/* ------------------------------------------------------------ the end */

struct leak_arg { struct sweep *s; int drop; };

static int leak_one(u64 ptr, u32 id, void *arg)
{
	struct leak_arg *la = arg;
	struct sweep *s = la->s;
	const struct rec *r = &s->recs.r[id];

	(void)ptr;
	s->codes.lb[r->ci] += r->size;
	s->codes.lc[r->ci] += 1;
	if (s->sampled) {
		if (s->codes.first_leak[r->ci] == UINT64_MAX)
			s->codes.first_leak[r->ci] = s->leak_seq++;
		s->codes.flc[r->ci] += rec_count(r);
	}
	if (la->drop)
		live_change(s, r->ci, r->size, -1);
	return 0;
}

static int unref_one(u64 ptr, u32 id, void *arg)
{
	(void)ptr;
	recs_unref(arg, id);
	return 0;
}

static void free_proc(struct sweep *s, struct proc *pr)
{
	ptrmap_each(&pr->live, 0, (unsigned __int128)1 << 64, unref_one,
		    &s->recs);
	ptrmap_free(&pr->live);
	u64map_free(&pr->order);
	free(pr->open);
	free(pr);
}

/* _exit: the process ends; its open runs close, what it holds leaks */
static void proc_exit(struct sweep *s, struct proc *pr, int drop)
{
	struct leak_arg la = { s, drop };
	u64 i;

	if (pr->nopen) {
		i32 *tids = NULL;
		u64 n = 0, k;
		flush(s, pr);
		tids = xmalloc((s->threads.n + 1) * sizeof *tids);
		for (i = 0; i < s->threads.cap; i++)
			if (s->threads.used[i] &&
			    ((struct thread *)(uintptr_t)s->threads.vals[i])->pid
			    == pr->pid)
				tids[n++] = (i32)(u32)s->threads.keys[i];
		for (k = 0; k < n; k++) {
			struct thread *th = thread_get(s, tids[k]);
			while (th->n) {
				u32 r = th->run[--th->n];
				close_run(s, pr, r);
				if (s->nopen == s->capopen) {
					s->capopen = s->capopen ?
						s->capopen * 2 : 16;
					s->open_r = xrealloc(s->open_r,
						s->capopen * sizeof *s->open_r);
					s->open_phase = xrealloc(s->open_phase,
						s->capopen *
						sizeof *s->open_phase);
					s->open_pid = xrealloc(s->open_pid,
						s->capopen * sizeof *s->open_pid);
					s->open_tid = xrealloc(s->open_tid,
						s->capopen * sizeof *s->open_tid);
				}
				s->open_r[s->nopen] = r;
				s->open_phase[s->nopen] = th->phase[th->n];
				s->open_pid[s->nopen] = pr->pid;
				s->open_tid[s->nopen] = tids[k];
				s->nopen++;
			}
			set_thread(s, tids[k], th);
		}
		free(tids);
	}
	if (s->sampled) {   /* in the order made: the counts are doubles */
		u64 n;
		struct made *v = live_in_order(pr, &n);
		for (i = 0; i < n; i++)
			leak_one(0, v[i].id, &la);
		free(v);
	} else {
		ptrmap_each(&pr->live, 0, (unsigned __int128)1 << 64,
			    leak_one, &la);
	}
	s->committed_end += pr->commit;
	if (drop) {
		s->total -= pr->total;
		s->ctotal -= pr->commit;
		u64map_del(&s->procs, (u64)(u32)pr->pid);
		free_proc(s, pr);
	}
}

/* ------------------------------------------------------------ the loop */

static void snapshot(struct sweep *s)
{
	u64 k;

	fputs("P ", s->out);
	put_i128(s->out, s->total);
	fputc(' ', s->out);
	put_i128(s->out, s->ctotal);
	for (k = 0; s->series && k < s->nkb; k++)
		if (s->kb[k]) {
			fprintf(s->out, " %llu ", (unsigned long long)k);
			put_i128(s->out, s->kb[k]);
		}
	fputc('\n', s->out);
}

/* _Sweep.run: replays the first `stop` events */
static void run(struct sweep *s, struct log *log, u64 stop)
{
	struct plan *p = s->plan;
	struct cols c = { 0 };
	struct proc *pr = NULL;
	struct thread *th = NULL;
	i32 cpid = 0, ctid = 0;
	int have_tid = 0;
	u64 i = 0, left = stop, e;
	i64 next_t = 0;
	int has_next = s->j < s->ntimes;
	u32 ch;
	/* the mode's allocation, its free, and the other mode's allocation,
	 * whose cursors into keyidx and sizes move on (the other mode's free
	 * is ignored) */
	const int sampled = s->sampled;
	const u8 ak = sampled ? K_SAMPLE : K_ALLOC;
	const u8 fk = sampled ? K_SAMPLE_FREE : K_FREE;
	const u8 ok = sampled ? K_ALLOC : K_SAMPLE;

	if (has_next)
		next_t = s->times[s->j];
	for (ch = 0; left && chunk_ready(p, log, ch); ch++) {
		u64 ki = 0, si = 0, n;
		cols_read(log, ch, &c);
		n = c.col.n < left ? c.col.n : left;
		left -= n;
		for (e = 0; e < n; e++, i++) {
			u8 kind = c.col.kind[e];
			i64 t = c.col.time[e];
			i32 pid = c.col.pid[e], tid = c.col.tid[e];
			u64 a = c.col.a[e], b = c.col.b[e];

			if (s->times_first) {   /* the first event's time */
				s->times_first = 0;
				s->times[0] = next_t = t;
			}
			while (has_next && t > next_t) {
				snapshot(s);
				s->j++;
				has_next = s->j < s->ntimes;
				if (has_next)
					next_t = s->times[s->j];
			}
			if (!pr || pid != cpid) {
				pr = proc_get(s, pid);
				cpid = pid;
			}
			if (kind == ak) {
				u64 k, code, osize = 0;
				u32 ci, id, tuple = 0, r, nr, *slot;
				const u32 *runs;
				int was_live;

				if (ki >= c.col.n_key)
					die("chunk %u: more allocations than "
					    "keys", ch);
				k = c.col.key[ki++];
				if (k >= log->nkeys && !log->follow)
					die("key %llu out of range",
					    (unsigned long long)k);
				if (k >= s->nkeys_seen)
					s->nkeys_seen = k + 1;
				keys_need(s, k);
				if (!have_tid || tid != ctid) {
					th = thread_get(s, tid);
					ctid = tid;
					have_tid = 1;
				}
				code = k;
				if (th) {
					code += th->cbase;
					tuple = th->tuple;
				}
				if (sampled) {
					if (si >= c.col.n_size)
						die("chunk %u: more samples than "
						    "sizes", ch);
					osize = c.col.size[si++];
					if (!osize || !b)
						continue;   /* stands for nothing */
				}
				if (s->memo_code[k] == code + 1) {
					ci = s->memo_ci[k];
				} else {
					ci = codes_get(&s->codes, code);
					s->memo_code[k] = code + 1;
					s->memo_ci[k] = ci;
				}
				if (sampled) {
					if (osize >= log->min_size) {
						struct codes *cs = &s->codes;
						double cnt = divide(b, osize);
						cs->fc[ci] += cnt;
						cs->eb[ci] += b;
						cs->fw2[ci] += cnt / (double)osize;
						if (!cs->es[ci]++)
							cs->first_es[ci] =
								s->es_seq++;
					}
				} else if (b >= log->min_size) {   /* --min-size */
					if (!s->codes.ec[ci]++)
						s->codes.first_es[ci] =
							s->es_seq++;
					s->codes.eb[ci] += b;
				}
				id = recs_get(&s->recs, b, osize, ci, tuple);
				slot = ptrmap_put(&pr->live, a, &was_live);
				if (was_live) {   /* its free was not seen: freed now */
					u32 old = *slot;
					s->reused++;
					forget(s, pr, old);
					recs_unref(&s->recs, old);
				} else if (sampled) {
					int fresh;
					*u64map_put(&pr->order, a, &fresh) =
						s->alloc_seq++;
				}
				*slot = id;
				live_change(s, ci, b, 1);
				nr = s->runs.tlen[tuple];
				runs = s->runs.pool + s->runs.tstart[tuple];
				for (r = 0; r < nr; r++)
					s->runs.live[runs[r]] += b;
				pr->total += b;
				s->total += b;
				if (pr->total > pr->hw)
					pr->hw = pr->total;
				if (s->total > s->peak) {
					s->epoch++;   /* a new peak */
					s->peak = s->total;
					s->peak_i = (i64)i;
					s->peak_t = t;
					s->cat_peak = s->ctotal;
				}
				pr->last = a;
				pr->has_last = 1;
			} else if (kind == fk) {
				struct ptrloc loc = ptrmap_find(&pr->live, a);
				if (!loc.g) {
					s->un_n++;
					s->un_b += b;
				} else {
					u32 id = loc.g->rec[loc.pos];
					forget(s, pr, id);
					if (pr->has_last && a == pr->last)
						s->codes.temp[s->recs.r[id].ci]++;
					ptrmap_remove(&pr->live, loc);
					recs_unref(&s->recs, id);
					if (sampled)
						u64map_del(&pr->order, a);
				}
				pr->has_last = 0;
			} else if (kind == ok) {
				ki++;
				if (kind == K_SAMPLE)
					si++;
			} else if (kind == K_COMMIT) {
				pr->commit += b;
				s->ctotal += b;
				if (s->ctotal > s->cpeak)
					s->cpeak = s->ctotal;
			} else if (kind == K_DECOMMIT) {
				/* never below 0: what was committed before
				 * the recording began is not known */
				i128 d = (i128)b <= pr->commit ? (i128)b :
					pr->commit;
				pr->commit -= d;
				s->ctotal -= d;
			} else if (kind >= K_RELEASE) {
				if (kind == K_EXIT &&
				    !last_exit(p, log, pid, i))
					continue;   /* not its last */
				if (kind == K_RELEASE) {
					release(s, pr, a, b);
				} else if (kind == K_PHASE_BEGIN) {
					begin(s, pr, tid, a);
					have_tid = 0;
				} else if (kind == K_PHASE_END) {
					end(s, tid, a);
					have_tid = 0;
				} else {
					proc_exit(s, pr, 1);
					have_tid = 0;
					pr = NULL;   /* the pid starts afresh */
				}
			}
			/* the other mode's free: ignored */
		}
		if (si > c.col.n_size)
			die("chunk %u: more samples than sizes", ch);
		if (log->done && e == c.col.n)   /* all of it swept */
			log->done(log, ch);
	}
	free(c.buf);
	while (has_next) {   /* the sample times after the last event */
		snapshot(s);
		s->j++;
		has_next = s->j < s->ntimes;
	}
}

/* _Sweep.finish: every process still running ends at the log's end */
static void finish(struct sweep *s)
{
	u64 i, n;
	struct proc **v = procs_in_order(s, &n);

	for (i = 0; i < n; i++)
		proc_exit(s, v[i], 0);
	free(v);
}

static void drop_live(struct sweep *s)
{
	u64 i;

	for (i = 0; i < s->procs.cap; i++)
		if (s->procs.used[i])
			free_proc(s, (struct proc *)(uintptr_t)s->procs.vals[i]);
	u64map_free(&s->procs);
}

/* ------------------------------------------------------------ output */

void put_i128(FILE *f, i128 v)
{
	char buf[48], *p = buf + sizeof buf;
	unsigned __int128 u = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;

	*--p = 0;
	do {
		*--p = (char)('0' + (int)(u % 10));
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	fputs(p, f);
}

static void put_line(FILE *f, const char *tag, int n, const i128 *v)
{
	int i;

	fputs(tag, f);
	for (i = 0; i < n; i++) {
		fputc(' ', f);
		put_i128(f, v[i]);
	}
	fputc('\n', f);
}

/* ------------------------------------------------------------ sampled */

static void put_double(FILE *f, double v)
{
	fprintf(f, " %.17g", v);
}

/* K code peak_bytes peak_count: what was live at the peak, from a replay
 * up to it (the oracle's live_by_code), in the order first met walking
 * the processes and their allocations in order */
static void sampled_peak(struct log *log, struct plan *p,
			 const struct numbering *nb, u64 stop, FILE *out)
{
	struct sweep r;
	struct u64map at = { 0 };   /* code -> index in the arrays below */
	u64 *codes, ncodes = 0, np, i, j, n;
	i128 *bytes;
	double *count;
	struct proc **procs;
	int fresh;

	sweep_init(&r, p, log->nkeys);
	r.sampled = 1;
	run(&r, log, stop);
	codes = xmalloc((r.codes.n + 1) * sizeof *codes);
	bytes = xcalloc(r.codes.n + 1, sizeof *bytes);
	count = xcalloc(r.codes.n + 1, sizeof *count);
	procs = procs_in_order(&r, &np);
	for (i = 0; i < np; i++) {
		struct made *v = live_in_order(procs[i], &n);
		for (j = 0; j < n; j++) {
			const struct rec *rec = &r.recs.r[v[j].id];
			u64 code = r.codes.code[rec->ci];
			u64 *slot = u64map_put(&at, code, &fresh);
			if (fresh) {
				*slot = ncodes;
				codes[ncodes++] = code;
			}
			bytes[*slot] += rec->size;
			count[*slot] += rec_count(rec);
		}
		free(v);
	}
	for (i = 0; i < ncodes; i++) {
		fprintf(out, "K %llu ",
			(unsigned long long)final_code(nb, &r, codes[i]));
		put_i128(out, bytes[i]);
		put_double(out, count[i]);
		fputc('\n', out);
	}
	free(procs);
	free(codes);
	free(bytes);
	free(count);
	u64map_free(&at);
}

static const u64 *order_key;

static int cmp_by_key(const void *x, const void *y)
{
	u64 a = order_key[*(const u32 *)x], b = order_key[*(const u32 *)y];
	return a < b ? -1 : a > b;
}

/* the codes with key[ci] set (not UINT64_MAX), ordered by it; *n */
static u32 *codes_by(const struct codes *c, const u64 *key, u64 *n)
{
	u32 *v = xmalloc(((size_t)c->n + 1) * sizeof *v), i;

	*n = 0;
	for (i = 0; i < c->n; i++)
		if (key[i] != UINT64_MAX)
			v[(*n)++] = i;
	order_key = key;
	qsort(v, *n, sizeof *v, cmp_by_key);
	return v;
}

/* The codes in the order of the oracle's counters (which the assembly's
 * dicts keep): by answer code where it keeps them in a list, up to 2^20
 * codes, else as first counted (first_es). counted: each code's count
 * (samples, or allocations); the codes that counted nothing come last,
 * or with uncounted 0 not at all. *n of them. */
static u32 *codes_in_counter_order(const struct sweep *s,
				   const struct numbering *nb,
				   const i64 *counted, int uncounted, u64 *n)
{
	const struct codes *c = &s->codes;
	u64 i, *key = xmalloc(((size_t)c->n + 1) * sizeof *key);
	int dense = nb->nslots * nb->nkeys <= (u64)1 << 20;
	u32 *v;

	for (i = 0; i < c->n; i++)
		key[i] = counted[i] ? (dense ? final_code(nb, s, c->code[i]) :
				       c->first_es[i]) :
			uncounted ? ((u64)1 << 63) + i : UINT64_MAX;
	v = codes_by(c, key, n);
	free(key);
	return v;
}

/* F code count bytes count_by_size samples (the codes that counted a
 * sample, in the oracle's order), then L code leaked_bytes leaked_count
 * (as first leaked) */
static void sampled_codes(const struct sweep *s, const struct numbering *nb,
			  FILE *out)
{
	const struct codes *c = &s->codes;
	u64 n, i;
	u32 *v = codes_in_counter_order(s, nb, c->es, 0, &n);

	for (i = 0; i < n; i++) {
		u32 ci = v[i];
		fprintf(out, "F %llu",
			(unsigned long long)final_code(nb, s, c->code[ci]));
		put_double(out, c->fc[ci]);
		fputc(' ', out);
		put_i128(out, c->eb[ci]);
		put_double(out, c->fw2[ci]);
		fprintf(out, " %lld\n", (long long)c->es[ci]);
	}
	free(v);
	v = codes_by(c, c->first_leak, &n);
	for (i = 0; i < n; i++) {
		u32 ci = v[i];
		fprintf(out, "L %llu ",
			(unsigned long long)final_code(nb, s, c->code[ci]));
		put_i128(out, c->lb[ci]);
		put_double(out, c->flc[ci]);
		fputc('\n', out);
	}
	free(v);
}

/* C code ec eb temp leaked_b leaked_c peak_b peak_c, for every code, in
 * the order of the oracle's counters (as sampled_codes; the codes that
 * counted nothing last) */
static void exact_codes(const struct sweep *s, const struct numbering *nb,
			FILE *out)
{
	const struct codes *c = &s->codes;
	u64 n, i;
	u32 *v = codes_in_counter_order(s, nb, c->ec, 1, &n);

	for (i = 0; i < n; i++) {
		u32 ci = v[i];
		i128 f[7] = { c->ec[ci], c->eb[ci], c->temp[ci], c->lb[ci],
			      c->lc[ci], c->pb[ci], c->pc[ci] };
		fprintf(out, "C %llu",
			(unsigned long long)final_code(nb, s, c->code[ci]));
		put_line(out, "", 7, f);
	}
	free(v);
}

void sweep_log(struct log *log, i64 *times, u64 ntimes, int times_first,
	       FILE *out)
{
	struct plan plan;
	struct sweep s;
	struct numbering nb;
	u64 i, total_events = 0;
	u32 ch;

	for (ch = 0; ch < log->nchunks; ch++)
		total_events += log->chunks[ch].len[0];
	if (log->follow)
		total_events = UINT64_MAX;   /* as many as the reader writes */
	memset(&plan, 0, sizeof plan);
	plan_scan(log, &plan);
	sweep_init(&s, &plan, log->follow ? 1 : log->nkeys);
	s.times = times;
	s.ntimes = ntimes;
	s.times_first = times_first;
	s.out = out;
	s.series = log->series;
	s.sampled = log->sampled;
	run(&s, log, total_events);
	finish(&s);
	drop_live(&s);
	if (s.nkeys_seen > log->nkeys)   /* follow mode's end said fewer */
		die("key %llu out of range",
		    (unsigned long long)s.nkeys_seen - 1);

	/* plan: has_release has_commit frees_recorded, then the phase ids
	 * (after the P lines: the parser takes them in any order) */
	numbering_make(&nb, &s, log->nkeys);
	fprintf(out, "plan %d %d %d", plan.seen[K_RELEASE],
		plan.seen[K_COMMIT] || plan.seen[K_DECOMMIT],
		plan.seen[K_RELEASE] ||
		plan.seen[log->sampled ? K_SAMPLE_FREE : K_FREE]);
	for (i = 0; i + 1 < nb.nslots; i++)
		fprintf(out, " %llu", (unsigned long long)nb.phase_ids[i]);
	fputc('\n', out);

	/* the state at the peak, from the epochs (struct sweep) */
	if (s.peak_i >= 0) {
		for (i = 0; i < s.codes.n; i++) {
			int saved = s.codes.ep[i] == s.epoch;
			s.codes.pb[i] = saved ? s.codes.sb[i] : s.codes.liveb[i];
			s.codes.pc[i] = saved ? s.codes.sc[i] : s.codes.livec[i];
		}
		for (i = 0; i < s.nkb; i++) {
			i128 v = s.kb_ep[i] == s.epoch ? s.kb_saved[i] : s.kb[i];
			if (v) {
				fprintf(out, "B %llu ", (unsigned long long)i);
				put_i128(out, v);
				fputc('\n', out);
			}
		}
	}

	if (s.sampled) {
		if (s.peak_i >= 0)
			sampled_peak(log, &plan, &nb, (u64)s.peak_i + 1, out);
		sampled_codes(&s, &nb, out);
	}
	if (!s.sampled)
		exact_codes(&s, &nb, out);
	/* S slot runs left phase_peak growth cgrowth */
	for (i = 1; i < s.nslots; i++) {
		i128 v[6] = { (i128)final_slot(&nb, &s, i), s.slot_runs[i],
			      s.left[i],
			      s.phase_peak[i], s.growth[i], s.cgrowth[i] };
		put_line(out, "S", 6, v);
	}
	for (i = 0; i < s.nopen; i++)
		fprintf(out, "O %llu %d %d %llu\n",
			(unsigned long long)s.open_r[i], s.open_pid[i],
			s.open_tid[i], (unsigned long long)s.open_phase[i]);
	{
		/* R peak peak_i peak_t committed_peak committed_at_peak
		 * committed_end unmatched_n unmatched_b reused
		 * unmatched_phase_ends */
		i128 v[10] = { s.peak, s.peak_i, s.peak_t, s.cpeak,
			       s.cat_peak, s.committed_end, s.un_n, s.un_b,
			       s.reused, s.unmatched_phase_ends };
		put_line(out, "R", 10, v);
	}
	fputs("end\n", out);
}
