/* tally.c - every event's share of the report, done here, once.
 *
 * The report's tally (analyze/fold.py's Tally: counts and bytes per
 * (raw stack, tag), the completeness counts, the duplicates perf wrote
 * twice) and its event log (read/eventlog.py, for the liveness sweep)
 * are built per event. Python did that at 2-4 us an event; here it is a
 * few hash lookups. Python gets the distinct keys with their figures
 * (the TALLY block, text lines below) and the log as a file in the
 * event log's own spill format.
 *
 * The rules are Tally.add_fields's and parse.event_from_perf's, in their
 * order (tests/unit/test_native_tally.py holds the two equal on the
 * same events, hostile ones included):
 *   - an event whose name or fields are not an rt event's: malformed;
 *   - a second event of a thread at the same nanosecond: a duplicate
 *     (perf writes some sample records twice), dropped and counted;
 *   - rt:exit whose counts are all 2^64-1: padding (include/rt_exit.h);
 *   - rt:sample of weight 0: a phase mark (rt__phase_mark), counted as
 *     received, its phase tracked, nothing else;
 *   - the log gets every alloc, free, sample (size and weight > 0),
 *     release, commit, phase and exit; then --min-size filters what is
 *     counted per key.
 * The thread's process is the first one seen for the thread id, as the
 * Python reader's pids map had it.
 *
 * TALLY lines (decimal; "-" a missing value):
 *   events KIND N        in the order first counted (also duplicates,
 *   duplicates KIND N    rate R|- N)
 *   malformed N, filtered N, no_callchain N, padding N, weight_gcd N,
 *   frees COUNT BYTES, phases_from_samples 0|1
 *   received PID KIND N  fired PID N...      per process, first seen
 *   thread TID LAST_TIME PHASE [FIRST_PHASE FIRST_TIME FIRST_PID]
 *   key RAW TAG GUEST    the log's keys, in their index order; RAW: the
 *                        stream's raw stack (0: no frames); GUEST: the
 *                        guest location id (0: none)
 *   exact KEY COUNT BYTES                     in the order first counted
 *   sampled KEY COUNT BYTES WEIGHT_BY_SIZE2 SAMPLES   (doubles as %.17g)
 *   guest ID PARENT LINE SOURCE FUNCTION   each guest location's first
 *                        definition (rt:guest), in the order seen; the
 *                        names percent-encoded ("%" alone: empty, "-":
 *                        none)
 *   log EVENTS FIRST_TIME LAST_TIME
 *   chunk OFFSET N_kinds N_times N_pids N_tids N_a N_b N_sizes N_keyidx
 */
#include "reader.h"
#include "sweeper.h"

#include <stdlib.h>
#include <string.h>

/* read/eventlog.py's KINDS, in its order (the log's kind column) */
enum { K_ALLOC, K_FREE, K_SAMPLE, K_SAMPLE_FREE, K_RELEASE, K_COMMIT,
       K_DECOMMIT, K_PHASE_BEGIN, K_PHASE_END, K_EXIT, NKINDS,
       K_PLAIN = NKINDS, K_GUEST, K_NONE = -1 };
static const char *const kind_names[NKINDS] = {
	"alloc", "free", "sample", "sample_free", "release", "commit",
	"decommit", "phase_begin", "phase_end", "exit" };
/* analyze/completeness.py's COUNTED_AS: what the end-to-end check
 * counts each kind as */
static const int counted_as[NKINDS] = {
	K_ALLOC, K_FREE, K_SAMPLE, K_SAMPLE_FREE, K_RELEASE, K_COMMIT,
	K_COMMIT, K_PHASE_BEGIN, K_PHASE_BEGIN, K_EXIT };
static const char *counted_name(int k)
{
	return k == K_PHASE_BEGIN ? "phase" : kind_names[k];
}
static const char *kind_name(int k)
{
	return k == K_GUEST ? "guest" : kind_names[k];
}
/* contract.py's plain kinds (the immediates of sdt_rt:plain), the
 * firing ones; test_contract.py checks this table against it */
static const struct { u64 value; int kind; } plain_kinds[] = {
	{ 1, K_FREE }, { 2, K_RELEASE }, { 3, K_COMMIT }, { 4, K_DECOMMIT },
	{ 5, K_PHASE_BEGIN }, { 6, K_PHASE_END }, { 7, K_SAMPLE_FREE },
	{ 9, K_EXIT } };

#define NARGS 8
#define SPILL_EVERY LOG_CHUNK_EVENTS   /* eventlog.SPILL_EVERY */
#define EXIT_PADDING ((u64)-1)

typedef unsigned __int128 u128;

struct def {
	int kind;               /* K_*, K_PLAIN, K_GUEST or K_NONE */
	int arg[NARGS + 1];     /* arg[i]: field index of argi (plain: a..h) */
	u8 string[NARGS + 1];   /* argi is a string (__data_loc) */
	int kind_field;         /* the plain event's "kind" */
	/* the arguments present, worked out once: each event reads only
	 * those (a loop over all NARGS per event was a tenth of the
	 * reader's instructions per event) */
	int has[NARGS + 1];     /* arg[i] >= 0 */
	int npresent;
	u8 present[NARGS];      /* the i with has[i], in order */
};

struct thread {
	u32 tid, pid;
	u64 last;               /* time of its last event */
	u64 phase;              /* its samples' phase + 1 (0: none) */
	u64 first_phase, first_time;
	u32 first_pid;
	u8 has_last, phase_set, has_first;
};

struct process {
	u32 pid;
	int nrecv;              /* received kinds, in the order first seen */
	int recv_kind[NKINDS];
	u64 recv[NKINDS];
	int seen_recv;          /* index into the order of processes */
	int nfired;             /* rt:exit's counts summed (3 or 8) */
	unsigned __int128 fired[NARGS];   /* past 2^64 as Python's ints */
	int seen_fired;
};

struct key {
	u32 raw, tag;
	u64 guest;              /* the guest location id (0: none) */
	u8 exact_counted, sampled_counted;
	u64 count;
	u128 bytes;
	double s_count, s_w2;
	u128 s_bytes;
	u64 s_samples;
};

/* kind -> events, or rate -> samples (-1: none), in the order first
 * seen */
struct counter { size_t n, cap; u64 *key; u8 *none; u64 *value; };

/* u64 key -> a dense index (0, 1, ... in the order keys come), by open
 * addressing: the threads, the processes, the guest ids defined */
struct idmap {
	u64 *keys;
	u32 *slot;
	size_t n, cap;
	/* the key last got: a run of events comes from one thread */
	u64 last_key;
	size_t last;
	int last_ok;
};

struct tally {
	struct emitter *em;
	int log_fd;
	u64 min_size;
	struct def *defs;
	int ndefs;
	/* in the order first seen; found by thread_ids, proc_ids */
	struct idmap thread_ids, proc_ids;
	struct thread *threads;
	size_t cap_threads;
	struct process *procs;
	size_t cap_procs;
	int recv_order, fired_order;
	u32 *key_slots;         /* key index + 1, 0: empty */
	size_t cap_keys;
	struct key *keys;
	size_t nkeys, alloc_keys;
	u32 *exact_order, *sampled_order;
	size_t nexact, nsampled;
	struct counter events, dups, rates;
	u64 malformed, filtered, no_callchain, padding, weight_gcd;
	u64 frees;
	u128 freed_bytes;
	int phases_from_samples;
	/* the log: columns of the chunk being filled, then the file, or
	 * the sweep in a thread of ours (tally_sweep: wanted; sweeper:
	 * started at the first chunk, where the recording allows) */
	struct logcols col;
	size_t n, n_size, n_key;
	size_t chunk_events;    /* a chunk's events: SPILL_EVERY, or
	                         * SWEEP_CHUNK while the sweep may be ours */
	int sweep_wanted, sweep_refused;
	struct sweeper *sweeper;
	u64 logged, first_time, last_time, offset;
	char *chunks;           /* the chunk lines */
	size_t chunks_len, chunks_cap;
	int write_error;
	u64 seen;               /* events, for the progress blocks */
	/* the guest locations defined (rt:guest) */
	struct idmap guest_ids;
	FILE *guest_text;
	char *guest_buf;
	size_t guest_len;
};

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fprintf(stderr, "allocsites-read: out of memory (the tally)\n");
		exit(1);
	}
	return p;
}

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p) {
		fprintf(stderr, "allocsites-read: out of memory (the tally)\n");
		exit(1);
	}
	return p;
}

static u64 mix(u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* ------------------------------------------------------------ the defs */

/* parse.event_kind: "sdt_rt:KIND" or "sdt_rt:KIND_DIGITS", KIND a
 * firing probe's name or "plain" */
static int kind_of_name(const char *name)
{
	static const char prefix[] = "sdt_rt:";
	if (strncmp(name, prefix, sizeof(prefix) - 1))
		return K_NONE;
	name += sizeof(prefix) - 1;
	for (int k = 0; k <= K_GUEST; k++) {
		const char *kn = k == NKINDS ? "plain" : kind_name(k);
		size_t l = strlen(kn);
		if (strncmp(name, kn, l))
			continue;
		const char *rest = name + l;
		if (!*rest)
			return k;
		if (*rest != '_' || !rest[1])
			continue;
		const char *d = rest + 1;
		while (*d >= '0' && *d <= '9')
			d++;
		if (!*d)
			return k;
	}
	return K_NONE;
}

struct tally *tally_new(struct emitter *em, int log_fd, u64 min_size,
			int ndefs)
{
	struct tally *t = xcalloc(1, sizeof(*t));
	t->em = em;
	t->log_fd = log_fd;
	t->min_size = min_size;
	t->ndefs = ndefs;
	t->defs = xcalloc((size_t)ndefs, sizeof(*t->defs));
	for (int i = 0; i < ndefs; i++)
		t->defs[i].kind = K_NONE;
	t->cap_keys = 1024;
	t->key_slots = xcalloc(t->cap_keys, sizeof(u32));
	logcols_alloc(&t->col, LOG_CHUNK_EVENTS);
	t->chunk_events = SPILL_EVERY;
	return t;
}

void tally_sweep(struct tally *t)
{
	t->sweep_wanted = 1;
	t->chunk_events = SWEEP_CHUNK;
}

void tally_def(struct tally *t, int index, const char *name,
	       const struct tpformat *fmt)
{
	if (index < 0 || index >= t->ndefs || !fmt)
		return;
	struct def *d = &t->defs[index];
	d->kind = kind_of_name(name);
	d->kind_field = -1;
	for (int i = 0; i <= NARGS; i++)
		d->arg[i] = -1;
	for (int f = 0; f < fmt->nfields; f++) {
		const char *fn = fmt->fields[f].name;
		if (d->kind == K_PLAIN) {
			if (!strcmp(fn, "kind"))
				d->kind_field = f;
			else if (fn[0] >= 'a' && fn[0] < 'a' + NARGS && !fn[1])
				d->arg[fn[0] - 'a' + 1] = f;
		} else if (!strncmp(fn, "arg", 3) && fn[3] >= '1' &&
			   fn[3] <= '0' + NARGS && !fn[4]) {
			d->arg[fn[3] - '0'] = f;
			d->string[fn[3] - '0'] = (u8)fmt->fields[f].is_string;
		}
	}
	d->npresent = 0;
	for (int i = 1; i <= NARGS; i++) {
		d->has[i] = d->arg[i] >= 0;
		if (d->has[i])
			d->present[d->npresent++] = (u8)i;
	}
}

/* ------------------------------------------------------------ the maps */

static size_t idmap_get(struct idmap *m, u64 key, int *fresh)
{
	if (m->last_ok && m->last_key == key) {
		*fresh = 0;
		return m->last;
	}
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		u64 *keys = xcalloc(cap, sizeof(*keys));
		u32 *slot = xcalloc(cap, sizeof(*slot));
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->slot[i])
				continue;
			size_t j = mix(m->keys[i]) & (cap - 1);
			while (slot[j])
				j = (j + 1) & (cap - 1);
			keys[j] = m->keys[i];
			slot[j] = m->slot[i];
		}
		free(m->keys);
		free(m->slot);
		m->keys = keys;
		m->slot = slot;
		m->cap = cap;
	}
	size_t j = mix(key) & (m->cap - 1);
	m->last_key = key;
	m->last_ok = 1;
	while (m->slot[j]) {
		if (m->keys[j] == key) {
			*fresh = 0;
			return m->last = m->slot[j] - 1;
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->keys[j] = key;
	m->slot[j] = (u32)++m->n;
	*fresh = 1;
	return m->last = m->n - 1;
}

/* Room for item i of a dense array of cap items of size each */
static void *room(void *a, size_t *cap, size_t i, size_t size)
{
	if (i < *cap)
		return a;
	*cap = *cap ? 2 * *cap : 64;
	return xrealloc(a, *cap * size);
}

static struct thread *thread_get(struct tally *t, u32 tid, u32 pid)
{
	int fresh;
	size_t i = idmap_get(&t->thread_ids, tid, &fresh);
	t->threads = room(t->threads, &t->cap_threads, i, sizeof(*t->threads));
	struct thread *th = &t->threads[i];
	if (fresh) {
		memset(th, 0, sizeof(*th));
		th->tid = tid;
		th->pid = pid;
	}
	return th;
}

static struct process *process_get(struct tally *t, u32 pid)
{
	int fresh;
	size_t i = idmap_get(&t->proc_ids, pid, &fresh);
	t->procs = room(t->procs, &t->cap_procs, i, sizeof(*t->procs));
	struct process *p = &t->procs[i];
	if (fresh) {
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->seen_recv = p->seen_fired = -1;
	}
	return p;
}

static void receive(struct tally *t, struct process *p, int kind)
{
	int k = counted_as[kind];
	if (p->seen_recv < 0)
		p->seen_recv = t->recv_order++;
	if (!p->recv[k]++)
		p->recv_kind[p->nrecv++] = k;
}

/* The key (raw stack, tag): its index in the log's keys, made when new */
static u64 key_hash(u32 raw, u32 tag, u64 guest)
{
	return mix(((u64)raw << 32 | tag) ^ mix(guest + 0x9e3779b97f4a7c15ull));
}

static u32 key_of(struct tally *t, u32 raw, u32 tag, u64 guest)
{
	if (2 * (t->nkeys + 1) > t->cap_keys) {
		size_t cap = t->cap_keys * 2;
		u32 *slots = xcalloc(cap, sizeof(u32));
		for (size_t i = 0; i < t->nkeys; i++) {
			const struct key *k = &t->keys[i];
			size_t j = key_hash(k->raw, k->tag, k->guest) &
				(cap - 1);
			while (slots[j])
				j = (j + 1) & (cap - 1);
			slots[j] = (u32)i + 1;
		}
		free(t->key_slots);
		t->key_slots = slots;
		t->cap_keys = cap;
	}
	size_t j = key_hash(raw, tag, guest) & (t->cap_keys - 1);
	while (t->key_slots[j]) {
		const struct key *k = &t->keys[t->key_slots[j] - 1];
		if (k->raw == raw && k->tag == tag && k->guest == guest)
			return t->key_slots[j] - 1;
		j = (j + 1) & (t->cap_keys - 1);
	}
	if (t->nkeys == t->alloc_keys) {
		t->alloc_keys = t->alloc_keys ? 2 * t->alloc_keys : 1024;
		t->keys = xrealloc(t->keys, t->alloc_keys * sizeof(*t->keys));
		t->exact_order = xrealloc(t->exact_order,
					  t->alloc_keys * sizeof(u32));
		t->sampled_order = xrealloc(t->sampled_order,
					    t->alloc_keys * sizeof(u32));
	}
	struct key *k = &t->keys[t->nkeys];
	memset(k, 0, sizeof(*k));
	k->raw = raw;
	k->tag = tag;
	k->guest = guest;
	t->key_slots[j] = (u32)++t->nkeys;
	return (u32)t->nkeys - 1;
}

static void count(struct counter *c, u64 key, int none)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->key[i] == key && c->none[i] == none) {
			c->value[i]++;
			return;
		}
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->key = xrealloc(c->key, c->cap * sizeof(*c->key));
		c->value = xrealloc(c->value, c->cap * sizeof(*c->value));
		c->none = xrealloc(c->none, c->cap);
	}
	c->none[c->n] = (u8)none;
	c->key[c->n] = key;
	c->value[c->n++] = 1;
}

static u64 gcd(u64 a, u64 b)
{
	while (b) {
		u64 r = a % b;
		a = b;
		b = r;
	}
	return a;
}

/* Python's a / b of two ints: correctly rounded where both are below
 * 2^53 (every size and weight a program sends); long double past that */
static double divide(u64 a, u128 b)
{
	if (a < 1ull << 53 && b < (u128)1 << 53)
		return (double)a / (double)(u64)b;
	return (double)((long double)a / (long double)b);
}

/* ------------------------------------------------------------ the log */

/* The recording's events suit the sweep in a thread of ours: no
 * rt:sample (sampled mode's sweep replays the log up to the peak) */
static int sweep_suits(const struct tally *t)
{
	for (int i = 0; i < t->ndefs; i++)
		if (t->defs[i].kind == K_SAMPLE ||
		    t->defs[i].kind == K_SAMPLE_FREE)
			return 0;
	return 1;
}

static void spill(struct tally *t)
{
	if (!t->n || t->log_fd < 0)
		return;
	if (t->sweep_wanted && !t->sweeper && !t->sweep_refused) {
		if (sweep_suits(t)) {
			t->sweeper = sweeper_start(t->log_fd, t->min_size);
		} else {
			t->sweep_refused = 1;
			t->chunk_events = SPILL_EVERY;
		}
	}
	t->col.n = t->n;
	t->col.n_size = t->n_size;
	t->col.n_key = t->n_key;
	if (t->sweeper) {   /* in memory to the sweep, not to the file */
		sweeper_chunk(t->sweeper, &t->col);
		t->n = t->n_size = t->n_key = 0;
		return;
	}
	u64 at = t->offset;
	if (!t->write_error)   /* after a failed write, none: the log is short */
		t->write_error = logcols_write(t->log_fd, &t->col, &t->offset);
	char line[256];
	int l = snprintf(line, sizeof(line),
			 "chunk %llu %zu %zu %zu %zu %zu %zu %zu %zu\n",
			 (unsigned long long)at, t->n, t->n, t->n, t->n, t->n,
			 t->n, t->n_size, t->n_key);
	if (t->chunks_len + (size_t)l + 1 > t->chunks_cap) {
		t->chunks_cap = 2 * t->chunks_cap + 4096;
		t->chunks = xrealloc(t->chunks, t->chunks_cap);
	}
	memcpy(t->chunks + t->chunks_len, line, (size_t)l + 1);
	t->chunks_len += (size_t)l;
	t->n = t->n_size = t->n_key = 0;
}

/* EventLog.append: a value its column cannot hold clamps the row */
static void log_event(struct tally *t, int kind, u64 time, u32 pid,
		      u32 tid, u64 a, u64 b, int has_key, u32 key, u64 size)
{
	if (t->log_fd < 0)
		return;
	size_t i = t->n;
	int64_t tm = time > INT64_MAX ? INT64_MAX : (int64_t)time;
	t->col.kind[i] = (u8)kind;
	t->col.time[i] = tm;
	t->col.pid[i] = pid > INT32_MAX ? INT32_MAX : (int32_t)pid;
	t->col.tid[i] = tid > INT32_MAX ? INT32_MAX : (int32_t)tid;
	t->col.a[i] = a;
	t->col.b[i] = b;
	if (kind == K_SAMPLE)
		t->col.size[t->n_size++] = size;
	if (has_key)
		t->col.key[t->n_key++] = key;
	if (!t->logged++)
		t->first_time = (u64)tm;
	t->last_time = (u64)tm;
	if (++t->n == t->chunk_events)
		spill(t);
}

/* Tally._track_phase: the thread's phase runs, from its samples */
static void track_phase(struct tally *t, struct thread *th, u64 phase,
			u64 time, u32 pid)
{
	t->phases_from_samples = 1;
	if (!th->has_first) {
		th->has_first = 1;
		th->first_phase = phase;
		th->first_time = time;
		th->first_pid = pid;
	}
	if (th->phase == phase)
		return;
	if (th->phase)
		log_event(t, K_PHASE_END, time, pid, th->tid, th->phase - 1, 0,
			  0, 0, 0);
	if (phase)
		log_event(t, K_PHASE_BEGIN, time, pid, th->tid, phase - 1, 0,
			  0, 0, 0);
	th->phase = phase;
	th->phase_set = 1;
}

/* ------------------------------------------------------------ guests */

/* A string field's text (its __data_loc: offset | length << 16, inside
 * the raw data), with its NUL; NULL where the field is not a string or
 * lies outside the data (parse.py: not a str). *len: its length. */
struct str { const char *s; u32 len; };
static struct str string_arg(const struct def *d, int i, const u64 *v,
			     const u8 *data, u32 size)
{
	struct str r = { NULL, 0 };
	if (d->arg[i] < 0 || !d->string[i])
		return r;
	u32 off = (u32)(v[i] & 0xffff), len = (u32)(v[i] >> 16 & 0xffff);
	if (off > size || len > size - off)
		return r;
	r.s = (const char *)data + off;
	/* perf script hands the string up to its NUL */
	const char *nul = memchr(r.s, 0, len);
	r.len = nul ? (u32)(nul - r.s) : len;
	return r;
}

/* Tally.guests: the first definition of each id, in the order seen;
 * kept as the TALLY lines it becomes ("guest ID PARENT LINE SOURCE
 * FUNCTION", the names percent-encoded, "-" for none). */
static void put_name(struct tally *t, struct str s)
{
	if (!s.s) {
		fputs(" -", t->guest_text);
		return;
	}
	fputc(' ', t->guest_text);
	if (!s.len)
		fputs("%", t->guest_text);   /* "": a lone % */
	for (u32 i = 0; i < s.len; i++) {
		unsigned char c = (unsigned char)s.s[i];
		if (c <= ' ' || c == '%' || c >= 0x7f || (i == 0 && c == '-'))
			fprintf(t->guest_text, "%%%02X", c);
		else
			fputc(c, t->guest_text);
	}
}

static void guest_def(struct tally *t, u64 id, u64 parent, u64 line,
		      struct str source, struct str function)
{
	int fresh;
	idmap_get(&t->guest_ids, id, &fresh);
	if (!fresh)
		return;   /* the first definition stays */
	if (!t->guest_text) {
		t->guest_text = open_memstream(&t->guest_buf, &t->guest_len);
		if (!t->guest_text) {
			fprintf(stderr, "allocsites-read: out of memory (the "
				"tally)\n");
			exit(1);
		}
	}
	fprintf(t->guest_text, "guest %llu %llu %llu", (unsigned long long)id,
		(unsigned long long)parent, (unsigned long long)line);
	put_name(t, source);
	put_name(t, function);
	fputc('\n', t->guest_text);
}

/* ------------------------------------------------------------ an event */

void tally_event(struct tally *t, int index, u32 raw, u32 pid,
		 u32 tid, u64 time, const u64 *args, const u8 *data,
		 u32 data_size)
{
	if (++t->seen % 65536 == 0)
		emit_progress(t->em, t->seen);
	struct thread *th = thread_get(t, tid, pid);
	pid = th->pid;
	const struct def *d = index >= 0 && index < t->ndefs ?
		&t->defs[index] : NULL;
	int kind = d ? d->kind : K_NONE;
	if (kind == K_PLAIN) {
		kind = K_NONE;
		if (d->kind_field >= 0)
			for (size_t i = 0; i < sizeof(plain_kinds) /
				     sizeof(plain_kinds[0]); i++)
				if (plain_kinds[i].value == args[d->kind_field])
					kind = plain_kinds[i].kind;
	}
	if (kind == K_NONE) {
		t->malformed++;
		return;
	}
	u64 v[NARGS + 1] = { 0 };
	const int *has = d->has;
	for (int j = 0; j < d->npresent; j++) {
		int i = d->present[j];
		v[i] = args[d->arg[i]];
	}
	/* parse.event_from_perf: the arguments each kind must have */
	u64 ptr = v[1], size = v[2], weight = 0, rate = 0, phase = 0;
	u64 guest = 0;
	u32 tag = 0;
	int has_rate = 0, has_phase = 0, nexit = 0;
	switch (kind) {
	case K_ALLOC: case K_SAMPLE:
		if (!has[2] || !has[3] || (kind == K_SAMPLE && !has[4])) {
			t->malformed++;
			return;
		}
		tag = (u32)v[3];
		weight = v[4];
		has_rate = has[5];
		rate = v[5];
		has_phase = has[6];
		phase = v[6];
		/* the guest location: alloc's fourth argument, sample's
		 * seventh (absent from an older header's: 0) */
		guest = kind == K_ALLOC ? v[4] : v[7];
		break;
	case K_GUEST:
		if (!has[1] || !has[2] || !has[3]) {
			t->malformed++;
			return;
		}
		break;
	case K_EXIT:
		for (int i = 1; i <= NARGS; i++)
			if (has[i])
				nexit = i;
		if (nexit < 3)
			nexit = 3;
		for (int i = 1; i <= nexit; i++)
			if (!has[i]) {
				t->malformed++;
				return;
			}
		ptr = size = 0;
		break;
	case K_PHASE_BEGIN: case K_PHASE_END:
		if (!has[1]) {
			t->malformed++;
			return;
		}
		tag = (u32)v[1];
		size = 0;
		break;
	default:   /* free, release, commit, decommit, sample_free */
		if (!has[1] || !has[2]) {
			t->malformed++;
			return;
		}
	}
	/* Tally.add_fields */
	if (th->has_last && th->last == time) {
		count(&t->dups, (u64)kind, 0);
		return;
	}
	th->has_last = 1;
	th->last = time;
	if (kind == K_GUEST) {   /* a name, not an event of the log */
		count(&t->events, (u64)kind, 0);
		guest_def(t, v[1], v[2], v[3],
			  string_arg(d, 4, v, data, data_size),
			  string_arg(d, 5, v, data, data_size));
		return;
	}
	if (kind == K_EXIT) {
		int padding = 1;
		for (int i = 1; i <= nexit; i++)
			padding &= v[i] == EXIT_PADDING;
		if (padding) {
			t->padding++;
			return;
		}
	}
	struct process *p = process_get(t, pid);
	if (kind == K_SAMPLE && !weight) {   /* a phase mark */
		receive(t, p, kind);
		if (has_phase)
			track_phase(t, th, phase, time, pid);
		return;
	}
	count(&t->events, (u64)kind, 0);
	if (kind == K_EXIT) {
		log_event(t, K_EXIT, time, pid, tid, 0, 0, 0, 0, 0);
		if (p->seen_fired < 0)
			p->seen_fired = t->fired_order++;
		if (p->nfired < nexit)
			p->nfired = nexit;
		for (int i = 1; i <= nexit; i++)
			p->fired[i - 1] += v[i];
		return;
	}
	receive(t, p, kind);
	if (kind == K_SAMPLE) {
		count(&t->rates, rate, !has_rate);
		if (has_phase)
			track_phase(t, th, phase, time, pid);
	}
	if (kind == K_FREE) {
		t->frees++;
		t->freed_bytes += size;
		log_event(t, K_FREE, time, pid, tid, ptr, size, 0, 0, 0);
		return;
	}
	if (kind != K_ALLOC && kind != K_SAMPLE) {
		int phasek = kind == K_PHASE_BEGIN || kind == K_PHASE_END;
		log_event(t, kind, time, pid, tid, phasek ? tag : ptr, size, 0,
			  0, 0);
		return;
	}
	int sized = kind == K_ALLOC || (size > 0 && weight > 0);
	u32 key = 0;
	if (sized) {
		key = key_of(t, raw, tag, guest);
		if (kind == K_ALLOC)
			log_event(t, K_ALLOC, time, pid, tid, ptr, size, 1, key,
				  0);
		else
			log_event(t, K_SAMPLE, time, pid, tid, ptr, weight, 1,
				  key, size);
	}
	if (size < t->min_size) {
		t->filtered++;
		return;
	}
	if (!raw)
		t->no_callchain++;
	if (!sized)
		return;
	struct key *k = &t->keys[key];
	if (kind == K_ALLOC) {
		if (!k->exact_counted) {
			k->exact_counted = 1;
			t->exact_order[t->nexact++] = key;
		}
		k->count++;
		k->bytes += size;
	} else {
		if (!k->sampled_counted) {
			k->sampled_counted = 1;
			t->sampled_order[t->nsampled++] = key;
		}
		k->s_count += divide(weight, size);
		k->s_bytes += weight;
		k->s_w2 += divide(weight, (u128)size * size);
		k->s_samples++;
		t->weight_gcd = gcd(t->weight_gcd, weight);
	}
}

/* ------------------------------------------------------------ the end */

static void put128(FILE *f, u128 v)
{
	char b[48];
	int i = sizeof(b);
	b[--i] = 0;
	do {
		b[--i] = (char)('0' + (int)(v % 10));
		v /= 10;
	} while (v);
	fputs(b + i, f);
}

static void put_counter(FILE *f, const char *what,
			const struct counter *c, int rates)
{
	for (size_t i = 0; i < c->n; i++) {
		if (rates && c->none[i])
			fprintf(f, "%s - %llu\n", what,
				(unsigned long long)c->value[i]);
		else if (rates)
			fprintf(f, "%s %llu %llu\n", what,
				(unsigned long long)c->key[i],
				(unsigned long long)c->value[i]);
		else
			fprintf(f, "%s %s %llu\n", what, kind_name((int)c->key[i]),
				(unsigned long long)c->value[i]);
	}
}

static int by_recv(const void *a, const void *b)
{
	const struct process *x = *(const struct process *const *)a;
	const struct process *y = *(const struct process *const *)b;
	return x->seen_recv - y->seen_recv;
}

static int by_fired(const void *a, const void *b)
{
	const struct process *x = *(const struct process *const *)a;
	const struct process *y = *(const struct process *const *)b;
	return x->seen_fired - y->seen_fired;
}

/* Writes the last chunk and the TALLY blocks. Returns 0, or -1 when
 * the log could not be written (said on stderr). */
int tally_finish(struct tally *t)
{
	spill(t);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		fprintf(stderr, "allocsites-read: out of memory (the tally)\n");
		exit(1);
	}
	put_counter(f, "events", &t->events, 0);
	put_counter(f, "duplicates", &t->dups, 0);
	put_counter(f, "rate", &t->rates, 1);
	fprintf(f, "malformed %llu\nfiltered %llu\nno_callchain %llu\n"
		"padding %llu\nweight_gcd %llu\nphases_from_samples %d\n"
		"frees %llu ", (unsigned long long)t->malformed,
		(unsigned long long)t->filtered,
		(unsigned long long)t->no_callchain,
		(unsigned long long)t->padding,
		(unsigned long long)t->weight_gcd, t->phases_from_samples,
		(unsigned long long)t->frees);
	put128(f, t->freed_bytes);
	fputc('\n', f);
	size_t nprocs = t->proc_ids.n;
	struct process **ps = xcalloc(nprocs, sizeof(*ps));
	size_t np = 0;
	for (size_t i = 0; i < nprocs; i++)
		if (t->procs[i].seen_recv >= 0)
			ps[np++] = &t->procs[i];
	qsort(ps, np, sizeof(*ps), by_recv);
	for (size_t i = 0; i < np; i++)
		for (int j = 0; j < ps[i]->nrecv; j++)
			fprintf(f, "received %u %s %llu\n", ps[i]->pid,
				counted_name(ps[i]->recv_kind[j]),
				(unsigned long long)
				ps[i]->recv[ps[i]->recv_kind[j]]);
	np = 0;
	for (size_t i = 0; i < nprocs; i++)
		if (t->procs[i].seen_fired >= 0)
			ps[np++] = &t->procs[i];
	qsort(ps, np, sizeof(*ps), by_fired);
	for (size_t i = 0; i < np; i++) {
		fprintf(f, "fired %u", ps[i]->pid);
		for (int j = 0; j < ps[i]->nfired; j++) {
			fputc(' ', f);
			put128(f, ps[i]->fired[j]);
		}
		fputc('\n', f);
	}
	free(ps);
	for (size_t i = 0; i < t->thread_ids.n; i++) {
		const struct thread *th = &t->threads[i];
		if (!th->has_last)
			continue;
		fprintf(f, "thread %u %llu ", th->tid,
			(unsigned long long)th->last);
		if (th->phase_set)
			fprintf(f, "%llu", (unsigned long long)th->phase);
		else
			fputc('-', f);
		if (th->has_first)
			fprintf(f, " %llu %llu %u",
				(unsigned long long)th->first_phase,
				(unsigned long long)th->first_time,
				th->first_pid);
		fputc('\n', f);
	}
	for (size_t i = 0; i < t->nkeys; i++)
		fprintf(f, "key %u %u %llu\n", t->keys[i].raw, t->keys[i].tag,
			(unsigned long long)t->keys[i].guest);
	for (size_t i = 0; i < t->nexact; i++) {
		const struct key *k = &t->keys[t->exact_order[i]];
		fprintf(f, "exact %u %llu ", t->exact_order[i],
			(unsigned long long)k->count);
		put128(f, k->bytes);
		fputc('\n', f);
	}
	for (size_t i = 0; i < t->nsampled; i++) {
		const struct key *k = &t->keys[t->sampled_order[i]];
		fprintf(f, "sampled %u %.17g ", t->sampled_order[i],
			k->s_count);
		put128(f, k->s_bytes);
		fprintf(f, " %.17g %llu\n", k->s_w2,
			(unsigned long long)k->s_samples);
	}
	fprintf(f, "log %llu %llu %llu\n", (unsigned long long)t->logged,
		(unsigned long long)t->first_time,
		(unsigned long long)t->last_time);
	if (t->chunks_len)
		fwrite(t->chunks, 1, t->chunks_len, f);
	if (t->sweeper) {   /* its answer, a line each */
		size_t alen;
		char *answer = sweeper_end(t->sweeper, t->nkeys, &alen);
		t->sweeper = NULL;
		fputs("swept\n", f);
		for (char *line = answer, *end; line < answer + alen;
		     line = end + 1) {
			end = memchr(line, '\n', (size_t)(answer + alen - line));
			if (!end)
				end = answer + alen;
			fputs("sweep ", f);
			fwrite(line, 1, (size_t)(end - line), f);
			fputc('\n', f);
		}
		free(answer);
	}
	if (t->guest_text) {
		if (fclose(t->guest_text)) {
			fprintf(stderr, "allocsites-read: out of memory (the "
				"tally)\n");
			exit(1);
		}
		t->guest_text = NULL;
		fwrite(t->guest_buf, 1, t->guest_len, f);
	}
	if (fclose(f)) {
		fprintf(stderr, "allocsites-read: out of memory (the tally)\n");
		exit(1);
	}
	emit_tally(t->em, text, len);
	free(text);
	if (t->write_error) {
		fprintf(stderr, "allocsites-read: cannot write the event log "
			"to a temporary file (TMPDIR): %s\n",
			strerror(t->write_error));
		return -1;
	}
	return 0;
}
