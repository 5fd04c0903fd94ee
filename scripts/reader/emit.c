/* emit.c - the stream allocsites-read writes for native.py.
 *
 * Blocks, each: u32 type, u32 length, then length bytes (little endian):
 *   EVENT_DEF  u32 id, name NUL, then per field: name NUL, u8 signed
 *   STRING     u32 id, the bytes (no NUL)
 *   FRAME      u32 id, u32 dso string, u32 symbol string (0: none),
 *              u32 has_addr, u64 addr, u64 off, u64 ip
 *   STACK      u32 id, u32 n, u32 frame ids, leaf first
 *   EVENTS     records of EVENT_SIZE bytes: u32 def, u32 stack (0:
 *              none), u32 pid, u32 tid, u64 time, u64 field[MAX_FIELDS]
 *   NOTE       text: "key value" lines (counts, warnings) at the end
 * Every id a record names was defined by an earlier block. Strings,
 * frames and stacks are defined once each: the stream's definitions
 * grow with distinct stacks, not with events. */
#include "reader.h"

#include <stdlib.h>
#include <string.h>

enum { B_EVENT_DEF = 1, B_STRING, B_FRAME, B_STACK, B_EVENTS, B_NOTE };
#define EVENT_SIZE (24 + 8 * MAX_FIELDS)
#define EVENTS_PER_BLOCK 1024

struct strent { struct strent *next; u32 id; const char *key; };
struct frament {
	struct frament *next;
	const char *path;
	u64 pc_in_file;         /* pc - start + pgoff, or the pc */
	u64 pc;
	u32 id;
};
struct stackent {
	struct stackent *next;
	const struct proc *proc;
	unsigned generation;
	u32 id, n;
	u64 hash;
	u64 pcs[];
};

#define HB 65536
struct emitter {
	FILE *out;
	u8 ev[EVENT_SIZE * EVENTS_PER_BLOCK];
	int nev;
	struct strent *strs[HB];
	struct frament *frames[HB];
	struct stackent **stacks;
	size_t stack_buckets;
	u32 nstrings, nframes, nstacks;
	int error;
};

/* The distinct strings, frames and stacks must all be kept: without
 * memory for one the stream cannot go on, said in one line. */
static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "allocsites-read: out of memory (the distinct "
			"stacks)\n");
		exit(1);
	}
	return p;
}

static void block(struct emitter *e, u32 type, const void *a, u32 alen,
		  const void *b, u32 blen)
{
	u32 h[2] = { type, alen + blen };
	if (fwrite(h, 8, 1, e->out) != 1 ||
	    (alen && fwrite(a, alen, 1, e->out) != 1) ||
	    (blen && fwrite(b, blen, 1, e->out) != 1))
		e->error = 1;
}

static void flush_events(struct emitter *e)
{
	if (e->nev)
		block(e, B_EVENTS, e->ev, (u32)(e->nev * EVENT_SIZE), NULL, 0);
	e->nev = 0;
}

struct emitter *emit_new(FILE *out)
{
	struct emitter *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->out = out;
	e->stack_buckets = 1 << 16;
	e->stacks = calloc(e->stack_buckets, sizeof(*e->stacks));
	if (!e->stacks) {
		free(e);
		return NULL;
	}
	return e;
}

void emit_event_def(struct emitter *e, int id, const char *name,
		    const struct tpformat *fmt)
{
	char buf[4096];
	size_t n = 0;
	u32 uid = (u32)id;
	memcpy(buf, &uid, 4);
	n = 4;
	size_t l = strlen(name) + 1;
	memcpy(buf + n, name, l);
	n += l;
	for (int i = 0; fmt && i < fmt->nfields; i++) {
		l = strlen(fmt->fields[i].name) + 1;
		memcpy(buf + n, fmt->fields[i].name, l);
		n += l;
		buf[n++] = (char)fmt->fields[i].is_signed;
	}
	flush_events(e);
	block(e, B_EVENT_DEF, buf, (u32)n, NULL, 0);
}

static u64 hash_bytes(const void *p, size_t n, u64 h)
{
	const u8 *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static u32 string_id(struct emitter *e, const char *s)
{
	if (!s)
		return 0;
	u64 h = hash_bytes(s, strlen(s), 1469598103934665603ull) % HB;
	for (struct strent *t = e->strs[h]; t; t = t->next)
		if (!strcmp(t->key, s))
			return t->id;
	struct strent *t = xmalloc(sizeof(*t));
	t->key = strcpy(xmalloc(strlen(s) + 1), s);
	t->id = ++e->nstrings;
	t->next = e->strs[h];
	e->strs[h] = t;
	block(e, B_STRING, &t->id, 4, s, (u32)strlen(s));
	return t->id;
}

static u32 frame_id(struct emitter *e, struct proc *p, u64 pc)
{
	const struct map *m = proc_map_at(p, pc);
	const char *path = m ? m->path : NULL;
	u64 key = m ? pc - m->start + m->pgoff : pc;
	/* keyed by the run-time pc too: a frame without a symbol is named
	 * by it, as perf names it */
	u64 h = hash_bytes(&key, 8, (u64)(uintptr_t)path ^ pc * 31) % HB;
	for (struct frament *f = e->frames[h]; f; f = f->next)
		if (f->path == path && f->pc_in_file == key && f->pc == pc)
			return f->id;
	u64 addr = 0, off = 0;
	const char *sym = NULL;
	u32 has_addr = 0;
	if (m && symbolize_pc(p, pc, m, &addr, &sym, &off) == 0 && sym)
		has_addr = 1;
	struct {
		u32 id, dso, sym, has_addr;
		u64 addr, off, ip;
	} rec = { ++e->nframes, string_id(e, path ? path : "[unknown]"),
		  has_addr ? string_id(e, sym) : 0, has_addr,
		  has_addr ? addr : 0, has_addr ? off : 0, pc };
	struct frament *f = xmalloc(sizeof(*f));
	f->path = path;
	f->pc = pc;
	f->pc_in_file = key;
	f->id = rec.id;
	f->next = e->frames[h];
	e->frames[h] = f;
	flush_events(e);
	block(e, B_FRAME, &rec, sizeof(rec), NULL, 0);
	return rec.id;
}

u32 emit_stack(struct emitter *e, struct proc *p, const u64 *pcs, int n)
{
	unsigned gen = proc_generation(p);
	u64 h = hash_bytes(pcs, (size_t)n * 8,
			   (u64)(uintptr_t)p * 31 + gen);
	size_t b = h % e->stack_buckets;
	for (struct stackent *s = e->stacks[b]; s; s = s->next)
		if (s->hash == h && s->proc == p && s->generation == gen &&
		    s->n == (u32)n && !memcmp(s->pcs, pcs, (size_t)n * 8))
			return s->id;
	u32 ids[MAX_FRAMES + 2];
	for (int i = 0; i < n; i++)
		ids[i + 2] = frame_id(e, p, pcs[i]);
	struct stackent *s = xmalloc(sizeof(*s) + (size_t)n * 8);
	s->proc = p;
	s->generation = gen;
	s->n = (u32)n;
	s->hash = h;
	memcpy(s->pcs, pcs, (size_t)n * 8);
	s->id = ++e->nstacks;
	s->next = e->stacks[b];
	e->stacks[b] = s;
	ids[0] = s->id;
	ids[1] = (u32)n;
	flush_events(e);
	block(e, B_STACK, ids, (u32)(n + 2) * 4, NULL, 0);
	return s->id;
}

void emit_event(struct emitter *e, int def, u32 stack, u32 pid, u32 tid,
		u64 time, const u64 *args, int nargs)
{
	u8 *r = e->ev + (size_t)e->nev * EVENT_SIZE;
	u32 h[4] = { (u32)def, stack, pid, tid };
	memcpy(r, h, 16);
	memcpy(r + 16, &time, 8);
	memset(r + 24, 0, 8 * MAX_FIELDS);
	memcpy(r + 24, args, 8 * (size_t)nargs);
	if (++e->nev == EVENTS_PER_BLOCK)
		flush_events(e);
}

void emit_note(struct emitter *e, const char *text)
{
	flush_events(e);
	block(e, B_NOTE, text, (u32)strlen(text), NULL, 0);
}

int emit_close(struct emitter *e)
{
	flush_events(e);
	if (fflush(e->out))
		e->error = 1;
	return e->error ? -1 : 0;
}
