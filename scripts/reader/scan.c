/* scan.c - allocsites-read --scan [--times] FILE: one pass over a
 * recording, in file order (no ordering, no unwinding), through
 * perffile.c's records (PERF_RECORD_COMPRESSED decompressed in place),
 * that prints what perfdata.Scan holds (scripts/allocsites_lib/read/
 * perfdata.py builds its Scan from this; `allocsites record` runs it for
 * its summary, the report when no scan is kept beside the recording).
 *
 * Output, text lines on stdout, each a key, a space, its value(s):
 *
 *   allocsites-scan 1
 *   data_size N          bytes of the data section
 *   compressed 0|1       FEAT_COMPRESSED says zstd
 *   all_tracepoints 0|1  every attribute is a tracepoint
 *   unwind dwarf|fp|none how the first tracepoint with a call graph took
 *                        its stacks (user registers and a stack copy, or
 *                        the kernel's frame-pointer chain)
 *   stack_size N         with dwarf, the bytes of stack it copied a
 *                        sample (perf's --call-graph dwarf,N); else 0
 *   cmdline ARG          perf's command line (feature CMDLINE), one line
 *                        an argument, in order
 *   records              the header was read: a failure after this line
 *                        lies among the records
 *   samples N            sample records of tracepoint events
 *   lost_records N       PERF_RECORD_LOST records
 *   decompressed N       bytes the zstd stream gave
 *   tail_cut N           bytes of a record the zstd stream ends inside
 *   event_samples N NAME sample records of the events named NAME
 *   duplicate_samples N NAME
 *                        of those, records perf wrote twice: a sample of
 *                        the same thread (pid and tid) and nanosecond as
 *                        one of that thread's last RECENT samples, seen
 *                        when the time is not after the thread's latest
 *   lost_samples N NAME  the sum of PERF_RECORD_LOST_SAMPLES of NAME
 *   pid TID PID          the process of each sampled thread (the last
 *                        sample's), by tid
 *   started PID          a process that started (FORK of a process, not
 *                        a thread, from another one; or a COMM of a
 *                        process's main thread)
 *   ended PID            a process whose main thread EXITed
 *   code PATH            a file mapped executable (MMAP2, PROT_EXEC, a
 *                        path starting with /)
 *   build_id HEX PATH    a build-id an MMAP2 record carried (misc bit 14,
 *                        perf record --buildid-mmap)
 *   times N              (--times) then N lines: every sample's time,
 *                        sorted, each as its difference from the one
 *                        before (the first from 0)
 *   depths N             (--times) then N lines "DT BYTES": for one
 *                        sample of a thread in STACK_EVERY carrying its
 *                        user SP, its time (as a difference, as times)
 *                        and the bytes from its SP to the highest SP of
 *                        its thread (at most the stack perf copied),
 *                        sorted by time, then bytes
 *   end
 *
 * event_samples, duplicate_samples and lost_samples come one line a
 * name: "?" for samples of an id no attribute has, or of an attribute
 * without a name (EVENT_DESC). Names, paths and arguments are bytes:
 * those below 0x21 or above 0x7e, and the backslash, written as \xHH.
 * The sets (pid, started, ended, code, build_id) come sorted by number
 * or once each.
 *
 * Which attribute a sample is of: the only one; or the one whose id the
 * sample carries (IDENTIFIER, or ID where all attributes sample alike),
 * the first attribute with that id, none for an id no attribute has.
 * Other records: perffile_attr_of (perf's rule).
 *
 * Damage, in the reader's manner: a record too short for what is read
 * of it (a sample without its time or id, LOST_SAMPLES without its
 * count, MMAP2 without its fixed part, COMM without pid and tid, FORK
 * and EXIT without pid, ppid and tid) is left out and counted; a
 * stack point whose fields lie past its sample is left out (depths are
 * an estimate). Exit: 0 after "end"; 1 with one line on stderr
 * ("allocsites-read: FILE: ...") for a file the scan cannot read,
 * damaged records included, or one it does not handle (pipe format,
 * other compression, samples without a common time field, events whose
 * samples cannot be told apart, no EVENT_DESC); 2 for a bad command
 * line. Memory: per thread sampled, the last RECENT times; with
 * --times, 8 bytes a sample and 24 a stack point. */
#include "reader.h"

#include <stdlib.h>
#include <string.h>

#define FEAT_CMDLINE 11
#define FEAT_EVENT_DESC 12
#define X86_REG_SP 7            /* perf_regs.h: PERF_REG_X86_SP */
#define STACK_EVERY 16          /* one sample in this many: a depth */
#define RECENT 64               /* times kept per thread to tell copies */
#define MISC_MMAP_BUILD_ID (1u << 14)
#define PROT_EXEC_BIT 4
#define CMDLINE_MAX (16u << 20)

static u64 le64(const u8 *p) { u64 v; memcpy(&v, p, 8); return v; }
static u32 le32(const u8 *p) { u32 v; memcpy(&v, p, 4); return v; }

/* u64 -> u64, open addressing; used[] tells a slot in use. */
struct table {
	u64 *keys, *vals;
	u8 *used;
	size_t cap, n;
};

static size_t slot_of(u64 key, size_t cap)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static int table_grow(struct table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	struct table g = { calloc(cap, 8), calloc(cap, 8), calloc(cap, 1),
			   cap, t->n };
	if (!g.keys || !g.vals || !g.used) {
		free(g.keys);
		free(g.vals);
		free(g.used);
		return -1;
	}
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->used[i])
			continue;
		size_t s = slot_of(t->keys[i], cap);
		while (g.used[s])
			s = (s + 1) & (cap - 1);
		g.used[s] = 1;
		g.keys[s] = t->keys[i];
		g.vals[s] = t->vals[i];
	}
	free(t->keys);
	free(t->vals);
	free(t->used);
	*t = g;
	return 0;
}

/* The value slot of key (added, its value 0, with *added set, when
 * missing); NULL: out of memory. */
static u64 *table_at(struct table *t, u64 key, int *added)
{
	*added = 0;
	if (2 * (t->n + 1) > t->cap && table_grow(t))
		return NULL;
	size_t s = slot_of(key, t->cap);
	while (t->used[s]) {
		if (t->keys[s] == key)
			return &t->vals[s];
		s = (s + 1) & (t->cap - 1);
	}
	t->used[s] = 1;
	t->keys[s] = key;
	t->vals[s] = 0;
	t->n++;
	*added = 1;
	return &t->vals[s];
}

static const u64 *table_find(const struct table *t, u64 key)
{
	if (!t->cap)
		return NULL;
	size_t s = slot_of(key, t->cap);
	while (t->used[s]) {
		if (t->keys[s] == key)
			return &t->vals[s];
		s = (s + 1) & (t->cap - 1);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;
	return (x > y) - (x < y);
}

/* The keys of t, sorted (NULL with *n 0 when empty or out of memory). */
static u64 *table_keys(const struct table *t, size_t *n)
{
	u64 *k = malloc((t->n ? t->n : 1) * 8);
	*n = 0;
	if (!k)
		return NULL;
	for (size_t i = 0; i < t->cap; i++)
		if (t->used[i])
			k[(*n)++] = t->keys[i];
	qsort(k, *n, 8, cmp_u64);
	return k;
}

/* A set of byte strings, each kept once. */
struct strset {
	char **items;           /* each: u32 length, then the bytes */
	size_t cap, n;
};

static u64 str_hash(const u8 *p, u32 n)
{
	u64 h = 0xcbf29ce484222325ull;
	for (u32 i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static int strset_add(struct strset *s, const u8 *p, u32 n)
{
	if (2 * (s->n + 1) > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		char **items = calloc(cap, sizeof(*items));
		if (!items)
			return -1;
		for (size_t i = 0; i < s->cap; i++) {
			char *it = s->items[i];
			if (!it)
				continue;
			u32 len;
			memcpy(&len, it, 4);
			size_t k = slot_of(str_hash((u8 *)it + 4, len), cap);
			while (items[k])
				k = (k + 1) & (cap - 1);
			items[k] = it;
		}
		free(s->items);
		s->items = items;
		s->cap = cap;
	}
	size_t k = slot_of(str_hash(p, n), s->cap);
	for (; s->items[k]; k = (k + 1) & (s->cap - 1)) {
		u32 len;
		memcpy(&len, s->items[k], 4);
		if (len == n && !memcmp(s->items[k] + 4, p, n))
			return 0;
	}
	char *it = malloc(4 + (size_t)n);
	if (!it)
		return -1;
	memcpy(it, &n, 4);
	memcpy(it + 4, p, n);
	s->items[k] = it;
	s->n++;
	return 0;
}

/* One thread's sample times: the latest, and the last RECENT (a ring,
 * grown as needed). */
struct thread {
	u64 last;
	u64 *recent;
	u32 n, cap, head;
};

struct stack_point { u64 time, tid, sp; };

/* Where SP is in a sample of an attribute. */
struct sp_layout {
	int ok;                 /* the samples carry SP at a known place */
	u32 off;                /* of the callchain, or what follows it */
	int callchain, raw;
	u32 sp_index;           /* in the user registers */
};

struct scan {
	struct perffile pf;
	int times_wanted;
	/* the samples' layout, common to every attribute */
	u32 time_off, tid_off, id_off;  /* tid_off, id_off: 0 when none */
	int all_tracepoints;
	int stacks;
	struct sp_layout *layouts;      /* one an attribute */
	/* counts */
	u64 all_samples, samples, lost_records, duplicates;
	u64 *id_samples, *id_dups, *lost, unknown_samples, unknown_dups;
	u8 *lost_seen;
	struct table threads;           /* pid_tid -> index in thread[] */
	struct thread *thread;
	size_t nthreads, threads_cap;
	struct table pids;              /* tid -> pid */
	struct table started, ended;
	struct strset code, build_ids;  /* build_ids: "HEX PATH" */
	int countdown;
	u64 *times;
	size_t ntimes, times_cap;
	struct stack_point *points;
	size_t npoints, points_cap;
	/* damage */
	u64 damaged, damaged_at;
	const char *damaged_why;
	int oom;
};

static void damaged(struct scan *s, const char *why)
{
	if (!s->damaged++) {
		s->damaged_at = s->pf.at;
		s->damaged_why = why;
	}
}

static int push(void **v, size_t *n, size_t *cap, size_t size)
{
	if (*n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 4096;
	void *p = realloc(*v, c * size);
	if (!p)
		return -1;
	*v = p;
	*cap = c;
	return 0;
}

/* The attribute of a sample's id: the first with it; -1 for none. */
static int attr_index(const struct scan *s, u64 id)
{
	const struct attr *at = perffile_attr_by_id(&s->pf, id);
	return at ? at->index : -1;
}

/* Whether t is among the thread's last RECENT times. */
static int recent_has(const struct thread *th, u64 t)
{
	for (u32 i = 0; i < th->n; i++)
		if (th->recent[i] == t)
			return 1;
	return 0;
}

static int recent_add(struct thread *th, u64 t)
{
	if (th->n < RECENT) {
		if (th->n == th->cap) {
			u32 cap = th->cap ? th->cap * 4 : 4;
			if (cap > RECENT)
				cap = RECENT;
			u64 *r = realloc(th->recent, cap * 8);
			if (!r)
				return -1;
			th->recent = r;
			th->cap = cap;
		}
		th->recent[th->n++] = t;
	} else {
		th->recent[th->head] = t;
		th->head = (th->head + 1) % RECENT;
	}
	return 0;
}

/* The user SP of a sample (rec, size) of layout l; -1 when the sample
 * has none, or its fields lie past the record. */
static int sample_sp(const struct sp_layout *l, const u8 *rec, u32 size,
		     u64 *sp)
{
	u64 p = l->off, end = size;
	if (l->callchain) {
		if (p > end || end - p < 8)
			return -1;
		u64 nr = le64(rec + p);
		p += 8;
		if (nr > (end - p) / 8)
			return -1;
		p += 8 * nr;
	}
	if (l->raw) {
		if (p > end || end - p < 4)
			return -1;
		u32 n = le32(rec + p);
		p += 4;
		if (n > end - p)
			return -1;
		p += n;
	}
	if (p > end || end - p < 8)
		return -1;
	if (!le64(rec + p))     /* abi: 0 when no user registers */
		return -1;
	p += 8;
	if ((end - p) / 8 <= l->sp_index)
		return -1;
	*sp = le64(rec + p + 8ull * l->sp_index);
	return 0;
}

static void on_sample(struct scan *s, const u8 *rec, u32 size)
{
	if (size - 8 < s->time_off || (s->id_off && size - 8 < s->id_off)) {
		damaged(s, "a sample shorter than its time or id");
		return;
	}
	u64 t = le64(rec + s->time_off);
	int a = 0;
	if (s->id_off)
		a = attr_index(s, le64(rec + s->id_off));
	s->all_samples++;
	if (s->times_wanted) {
		if (push((void **)&s->times, &s->ntimes, &s->times_cap, 8)) {
			s->oom = 1;
			return;
		}
		s->times[s->ntimes++] = t;
	}
	if (s->tid_off) {
		u64 pid_tid = le64(rec + s->tid_off);
		int added;
		u64 *pid = table_at(&s->pids, pid_tid >> 32, &added);
		u64 *ti = table_at(&s->threads, pid_tid, &added);
		if (!pid || !ti) {
			s->oom = 1;
			return;
		}
		*pid = pid_tid & 0xffffffffu;
		if (added) {
			if (push((void **)&s->thread, &s->nthreads,
				 &s->threads_cap, sizeof(*s->thread))) {
				s->oom = 1;
				return;
			}
			*ti = s->nthreads;
			s->thread[s->nthreads++] = (struct thread){ 0 };
		}
		struct thread *th = &s->thread[*ti];
		if (added || t > th->last) {
			th->last = t;
			if (recent_add(th, t)) {
				s->oom = 1;
				return;
			}
		} else if (recent_has(th, t)) {
			s->duplicates++;
			if (s->id_off && a < 0)
				s->unknown_dups++;
			else if (s->id_off)
				s->id_dups[a]++;
		} else if (recent_add(th, t)) {
			s->oom = 1;
			return;
		}
		if (s->stacks && !--s->countdown) {
			s->countdown = STACK_EVERY;
			const struct sp_layout *l = a < 0 ? NULL :
				&s->layouts[a];
			u64 sp;
			if (l && l->ok && !sample_sp(l, rec, size, &sp)) {
				if (push((void **)&s->points, &s->npoints,
					 &s->points_cap, sizeof(*s->points))) {
					s->oom = 1;
					return;
				}
				s->points[s->npoints++] = (struct stack_point){
					t, pid_tid >> 32, sp };
			}
		}
	}
	if (s->id_off) {
		if (a < 0)
			s->unknown_samples++;
		else
			s->id_samples[a]++;
	}
	if (s->all_tracepoints ||
	    (a >= 0 && s->pf.attrs[a].type == PERF_TYPE_TRACEPOINT))
		s->samples++;
}

static void on_mmap2(struct scan *s, const u8 *rec, u32 size)
{
	/* u32 pid, tid; u64 addr, len, pgoff; u32 maj, min, u64 ino,
	 * ino_generation, or (misc bit 14) u8 build_id_size, 3 reserved,
	 * 20 bytes of build-id; u32 prot, flags; the path, NUL-terminated */
	if (size < 72) {
		damaged(s, "a mapping record too short");
		return;
	}
	u16 misc;
	memcpy(&misc, rec + 4, 2);
	const u8 *path = rec + 72;
	const u8 *nul = memchr(path, 0, size - 72);
	u32 n = nul ? (u32)(nul - path) : size - 72;
	if ((le32(rec + 64) & PROT_EXEC_BIT) && n && path[0] == '/' &&
	    strset_add(&s->code, path, n))
		s->oom = 1;
	if (misc & MISC_MMAP_BUILD_ID && rec[40] <= 20) {
		u8 key[41 + 65536];
		static const char hex[] = "0123456789abcdef";
		u32 k = 0;
		for (u32 i = 0; i < rec[40]; i++) {
			key[k++] = hex[rec[44 + i] >> 4];
			key[k++] = hex[rec[44 + i] & 15];
		}
		key[k++] = ' ';
		memcpy(key + k, path, n);
		if (strset_add(&s->build_ids, key, k + n))
			s->oom = 1;
	}
}

static void set_add(struct scan *s, struct table *t, u32 pid)
{
	int added;
	if (!table_at(t, pid, &added))
		s->oom = 1;
}

static void on_task(struct scan *s, u32 type, const u8 *rec, u32 size)
{
	if (type == REC_COMM) {         /* u32 pid, tid, comm */
		if (size < 16) {
			damaged(s, "a COMM record too short");
			return;
		}
		if (le32(rec + 8) == le32(rec + 12))
			set_add(s, &s->started, le32(rec + 8));
		return;
	}
	if (size < 24) {                /* u32 pid, ppid, tid, ptid */
		damaged(s, type == REC_FORK ? "a FORK record too short" :
			"an EXIT record too short");
		return;
	}
	u32 pid = le32(rec + 8), ppid = le32(rec + 12), tid = le32(rec + 16);
	if (pid != tid)
		return;         /* a thread */
	if (type == REC_EXIT)
		set_add(s, &s->ended, pid);
	else if (pid != ppid)
		set_add(s, &s->started, pid);
}

static int on_record(void *vs, const u8 *rec, u32 size, struct buf *b)
{
	struct scan *s = vs;
	(void)b;
	u32 type = le32(rec);
	switch (type) {
	case REC_SAMPLE:
		on_sample(s, rec, size);
		break;
	case REC_LOST_SAMPLES: {
		/* u64 lost, then the sample_id trailer */
		if (size < 16) {
			damaged(s, "a LOST_SAMPLES record too short");
			break;
		}
		const struct attr *at = perffile_attr_of(&s->pf, rec, size);
		if (at) {
			s->lost[at->index] += le64(rec + 8);
			s->lost_seen[at->index] = 1;
		}
		break;
	}
	case REC_LOST:
		s->lost_records++;
		break;
	case REC_MMAP2:
		on_mmap2(s, rec, size);
		break;
	case REC_COMM:
	case REC_FORK:
	case REC_EXIT:
		on_task(s, type, rec, size);
		break;
	}
	return s->oom ? -1 : 0;
}

/* A byte string, escaped as the format says. */
static void put_bytes(const u8 *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] < 0x21 || p[i] > 0x7e || p[i] == '\\')
			printf("\\x%02x", p[i]);
		else
			putchar(p[i]);
	}
}

static const char *display_name(const struct attr *at)
{
	return at->name[0] ? at->name : "?";
}

/* "KEY N NAME" lines: per attribute counts summed by name, unknown
 * ids' under "?"; seen: which attributes have a line even with 0
 * (NULL: those with a count). */
static void by_name(const struct scan *s, const char *key, const u64 *count,
		    const u8 *seen, u64 unknown)
{
	int n = s->pf.nattrs, question = 0;
	for (int i = 0; i < n; i++) {
		const char *name = display_name(&s->pf.attrs[i]);
		int first = 1;
		for (int j = 0; j < i && first; j++)
			if (!strcmp(display_name(&s->pf.attrs[j]), name))
				first = 0;
		if (!first)
			continue;
		u64 sum = 0;
		int any = 0;
		for (int j = i; j < n; j++)
			if (!strcmp(display_name(&s->pf.attrs[j]), name)) {
				sum += count[j];
				any |= seen ? seen[j] : count[j] != 0;
			}
		if (!strcmp(name, "?")) {
			question = 1;
			sum += unknown;
			any |= unknown != 0;
		}
		if (any) {
			printf("%s %llu ", key, (unsigned long long)sum);
			put_bytes((const u8 *)name, strlen(name));
			putchar('\n');
		}
	}
	if (!question && unknown)
		printf("%s %llu ?\n", key, (unsigned long long)unknown);
}

static void put_set(const char *key, const struct table *t)
{
	size_t n;
	u64 *k = table_keys(t, &n);
	for (size_t i = 0; i < n; i++)
		printf("%s %llu\n", key, (unsigned long long)k[i]);
	free(k);
}

static int cmp_item(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	u32 lx, ly;
	memcpy(&lx, x, 4);
	memcpy(&ly, y, 4);
	int c = memcmp(x + 4, y + 4, lx < ly ? lx : ly);
	return c ? c : (lx > ly) - (lx < ly);
}

/* "KEY STRING" lines, sorted; build_ids: the string is "HEX PATH", the
 * path escaped. */
static void put_strings(const char *key, const struct strset *s, int hex)
{
	char **v = malloc((s->n ? s->n : 1) * sizeof(*v));
	size_t n = 0;
	if (!v)
		return;
	for (size_t i = 0; i < s->cap; i++)
		if (s->items[i])
			v[n++] = s->items[i];
	qsort(v, n, sizeof(*v), cmp_item);
	for (size_t i = 0; i < n; i++) {
		u32 len;
		memcpy(&len, v[i], 4);
		const u8 *p = (const u8 *)v[i] + 4;
		printf("%s ", key);
		if (hex) {
			const u8 *sp = memchr(p, ' ', len);
			u32 h = (u32)(sp - p);
			fwrite(p, 1, h + 1, stdout);
			p += h + 1;
			len -= h + 1;
		}
		put_bytes(p, len);
		putchar('\n');
	}
	free(v);
}

static int cmp_point(const void *a, const void *b)
{
	const struct stack_point *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return (x->sp > y->sp) - (x->sp < y->sp);   /* sp: the bytes here */
}

/* The depths: each point's bytes below its thread's highest SP. */
static int put_depths(struct scan *s)
{
	struct table top = { 0 };
	u32 limit = 0;
	for (int i = 0; i < s->pf.nattrs; i++)
		if (s->pf.attrs[i].stack_user > limit)
			limit = s->pf.attrs[i].stack_user;
	if (!limit)
		limit = 1u << 16;
	for (size_t i = 0; i < s->npoints; i++) {
		int added;
		u64 *v = table_at(&top, s->points[i].tid, &added);
		if (!v)
			return -1;
		if (s->points[i].sp > *v)
			*v = s->points[i].sp;
	}
	for (size_t i = 0; i < s->npoints; i++) {
		u64 d = *table_find(&top, s->points[i].tid) - s->points[i].sp;
		s->points[i].sp = d < limit ? d : limit;
	}
	if (s->npoints > 1)
		qsort(s->points, s->npoints, sizeof(*s->points), cmp_point);
	printf("depths %zu\n", s->npoints);
	u64 prev = 0;
	for (size_t i = 0; i < s->npoints; i++) {
		printf("%llu %llu\n",
		       (unsigned long long)(s->points[i].time - prev),
		       (unsigned long long)s->points[i].sp);
		prev = s->points[i].time;
	}
	free(top.keys);
	free(top.vals);
	free(top.used);
	return 0;
}

/* CMDLINE: u32 nr, then nr strings, each a u32 length and that many
 * bytes, NUL-padded; what lies past the section is not read. */
static int put_cmdline(struct perffile *pf, char *err, size_t errlen)
{
	u64 off, size;
	if (perffile_feature(pf, FEAT_CMDLINE, &off, &size))
		return 0;
	fseeko(pf->f, 0, SEEK_END);
	u64 file_size = (u64)ftello(pf->f);
	if (off > file_size || size > file_size - off || size > CMDLINE_MAX) {
		snprintf(err, errlen, "%s: a feature section lies outside the "
			 "file", pf->path);
		return -1;
	}
	u8 *d = malloc(size ? size : 1);
	if (!d || fseeko(pf->f, (off_t)off, SEEK_SET) ||
	    fread(d, 1, size, pf->f) != size) {
		free(d);
		snprintf(err, errlen, "%s: cannot read its feature sections",
			 pf->path);
		return -1;
	}
	if (size >= 4) {
		u32 nr = le32(d);
		u64 pos = 4;
		for (u32 i = 0; i < nr && size - pos >= 4; i++) {
			u32 n = le32(d + pos);
			pos += 4;
			u64 have = n < size - pos ? n : size - pos;
			const u8 *nul = memchr(d + pos, 0, have);
			printf("cmdline ");
			put_bytes(d + pos, nul ? (size_t)(nul - (d + pos)) :
				  have);
			putchar('\n');
			pos += have;
		}
	}
	free(d);
	return 0;
}

/* The samples' layout (perfdata.py's rule): -1 with err when the file
 * is not one this scan reads. */
static int layout(struct scan *s, char *err, size_t errlen)
{
	const struct perffile *pf = &s->pf;
	const u64 prefix = ST_IDENTIFIER | ST_IP | ST_TID | ST_TIME;
	u64 st = pf->attrs[0].sample_type;
	int alike = 1;
	for (int i = 0; i < pf->nattrs; i++) {
		u64 sti = pf->attrs[i].sample_type;
		if ((sti & prefix) != (st & prefix) || !(st & ST_TIME)) {
			snprintf(err, errlen, "%s: samples without a common "
				 "time field", pf->path);
			return -1;
		}
		alike &= sti == st;
	}
	s->time_off = 8 + 8 * (!!(st & ST_IDENTIFIER) + !!(st & ST_IP) +
			       !!(st & ST_TID));
	s->tid_off = st & ST_TID ? s->time_off - 8 : 0;
	if (pf->nattrs > 1) {
		if (st & ST_IDENTIFIER)
			s->id_off = 8;
		else if (alike && st & ST_ID)
			s->id_off = 8 + 8 * (!!(st & ST_IP) + !!(st & ST_TID) +
					     !!(st & ST_TIME) +
					     !!(st & ST_ADDR));
		else {
			snprintf(err, errlen, "%s: cannot tell the events' "
				 "samples apart", pf->path);
			return -1;
		}
	}
	s->all_tracepoints = 1;
	for (int i = 0; i < pf->nattrs; i++) {
		const struct attr *at = &pf->attrs[i];
		struct sp_layout *l = &s->layouts[i];
		s->all_tracepoints &= at->type == PERF_TYPE_TRACEPOINT;
		u64 sti = at->sample_type;
		if (!(sti & ST_REGS_USER) || !(at->regs_mask >> X86_REG_SP & 1))
			continue;
		l->ok = 1;
		l->off = 8;
		const u64 fixed[] = { ST_IDENTIFIER, ST_IP, ST_TID, ST_TIME,
				      ST_ADDR, ST_ID, ST_STREAM_ID, ST_CPU,
				      ST_PERIOD };
		for (size_t k = 0; k < sizeof(fixed) / 8; k++)
			if (sti & fixed[k])
				l->off += 8;
		l->callchain = !!(sti & ST_CALLCHAIN);
		l->raw = !!(sti & ST_RAW);
		l->sp_index = (u32)__builtin_popcountll(
			at->regs_mask & ((1ull << X86_REG_SP) - 1));
	}
	/* a sample's layout is its attribute's: depths when any has SP */
	for (int i = 0; i < pf->nattrs; i++)
		s->stacks |= s->layouts[i].ok;
	return 0;
}

/* The first tracepoint attribute with a call graph, or NULL. */
static const struct attr *graph_attr(const struct perffile *pf)
{
	for (int i = 0; i < pf->nattrs; i++) {
		const struct attr *at = &pf->attrs[i];
		if (at->sample_type & ST_CALLCHAIN &&
		    at->type == PERF_TYPE_TRACEPOINT)
			return at;
	}
	return NULL;
}

static const char *unwind_of(const struct perffile *pf)
{
	const struct attr *at = graph_attr(pf);
	if (!at)
		return "none";
	return at->sample_type & ST_REGS_USER && at->stack_user ? "dwarf"
								 : "fp";
}

/* The copy size of the attribute unwind_of reads (0 but for dwarf). */
static u64 stack_size_of(const struct perffile *pf)
{
	const struct attr *at = graph_attr(pf);
	return at && at->sample_type & ST_REGS_USER ? at->stack_user : 0;
}

static const char scan_usage[] =
	"usage: allocsites-read --scan [--times] FILE\n";

int scan_main(int argc, char **argv)
{
	static struct scan s;
	const char *path = NULL;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--times"))
			s.times_wanted = 1;
		else if (argv[i][0] == '-' && argv[i][1]) {
			fputs(scan_usage, stderr);
			return 2;
		} else if (path) {
			fputs(scan_usage, stderr);
			return 2;
		} else
			path = argv[i];
	}
	if (!path) {
		fputs(scan_usage, stderr);
		return 2;
	}
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	char err[512];
	struct perffile *pf = &s.pf;
	if (perffile_open(pf, path, err, sizeof(err)))
		goto fail;
	u64 off, size;
	if (perffile_feature(pf, FEAT_EVENT_DESC, &off, &size) &&
	    !perffile_has_names(pf)) {   /* a stream's EVENT_UPDATE names */
		snprintf(err, sizeof(err), "%s: no event names (feature "
			 "EVENT_DESC)", path);
		goto fail;
	}
	int n = pf->nattrs;
	s.layouts = calloc(n, sizeof(*s.layouts));
	s.id_samples = calloc(n, 8);
	s.id_dups = calloc(n, 8);
	s.lost = calloc(n, 8);
	s.lost_seen = calloc(n, 1);
	if (!s.layouts || !s.id_samples || !s.id_dups || !s.lost ||
	    !s.lost_seen) {
		snprintf(err, sizeof(err), "%s: out of memory", path);
		goto fail;
	}
	if (layout(&s, err, sizeof(err)))
		goto fail;
	if (!s.times_wanted)
		s.stacks = 0;   /* no depths either */
	s.countdown = STACK_EVERY;
	printf("allocsites-scan 1\ndata_size %llu\ncompressed %d\n"
	       "all_tracepoints %d\nunwind %s\nstack_size %llu\n",
	       (unsigned long long)pf->data_size, pf->compressed,
	       s.all_tracepoints, unwind_of(pf),
	       (unsigned long long)stack_size_of(pf));
	if (put_cmdline(pf, err, sizeof(err)))
		goto fail;
	printf("records\n");
	fflush(stdout);
	if (perffile_records(pf, on_record, &s, err, sizeof(err))) {
		if (s.oom)
			snprintf(err, sizeof(err), "%s: out of memory", path);
		goto fail;
	}
	if (pf->tail_cut && pf->pipe) {
		snprintf(err, sizeof(err), "%s: the stream ends inside a record "
			 "(%llu bytes at its end): perf stopped writing it "
			 "there", path, (unsigned long long)pf->tail_cut);
		goto fail;
	}
	if (pf->tail_cut) {
		snprintf(err, sizeof(err), "%s: the last record runs past the "
			 "data section (%llu bytes at its end)", path,
			 (unsigned long long)pf->tail_cut);
		goto fail;
	}
	if (s.damaged) {
		snprintf(err, sizeof(err), "%s: %llu damaged records (the "
			 "first at offset %llu: %s)", path,
			 (unsigned long long)s.damaged,
			 (unsigned long long)s.damaged_at, s.damaged_why);
		goto fail;
	}
	printf("samples %llu\nlost_records %llu\ndecompressed %llu\n"
	       "tail_cut %llu\n", (unsigned long long)s.samples,
	       (unsigned long long)s.lost_records,
	       (unsigned long long)pf->decompressed,
	       (unsigned long long)pf->stream_tail);
	if (s.id_off) {
		by_name(&s, "event_samples", s.id_samples, NULL,
			s.unknown_samples);
		by_name(&s, "duplicate_samples", s.id_dups, NULL,
			s.unknown_dups);
	} else {
		/* every sample is the first attribute's (perf's rule) */
		const char *name = display_name(&pf->attrs[0]);
		if (s.all_samples) {
			printf("event_samples %llu ",
			       (unsigned long long)s.all_samples);
			put_bytes((const u8 *)name, strlen(name));
			putchar('\n');
		}
		if (s.duplicates) {
			printf("duplicate_samples %llu ",
			       (unsigned long long)s.duplicates);
			put_bytes((const u8 *)name, strlen(name));
			putchar('\n');
		}
	}
	by_name(&s, "lost_samples", s.lost, s.lost_seen, 0);
	{
		size_t nt;
		u64 *tids = table_keys(&s.pids, &nt);
		for (size_t i = 0; i < nt; i++)
			printf("pid %llu %llu\n", (unsigned long long)tids[i],
			       (unsigned long long)*table_find(&s.pids,
							       tids[i]));
		free(tids);
	}
	put_set("started", &s.started);
	put_set("ended", &s.ended);
	put_strings("code", &s.code, 0);
	put_strings("build_id", &s.build_ids, 1);
	if (s.times_wanted) {
		if (s.ntimes > 1)
			qsort(s.times, s.ntimes, 8, cmp_u64);
		printf("times %zu\n", s.ntimes);
		u64 prev = 0;
		for (size_t i = 0; i < s.ntimes; i++) {
			printf("%llu\n",
			       (unsigned long long)(s.times[i] - prev));
			prev = s.times[i];
		}
		if (put_depths(&s)) {
			snprintf(err, sizeof(err), "%s: out of memory", path);
			goto fail;
		}
	}
	printf("end\n");
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "allocsites-read: cannot write its output\n");
		return 1;
	}
	return 0;
fail:
	fflush(stdout);
	fprintf(stderr, "allocsites-read: %s\n", err);
	return 1;
}
