/* ptrmap.c - the live pointers of one process and their record ids.
 *
 * heaptrack's PointerMap layout (src/track/... pointermap.h): pointers are
 * grouped by their granule (ptr >> 16) and each granule keeps two sorted
 * arrays, 16-bit offsets and 32-bit record ids: 6 bytes a live pointer
 * where allocations are dense (an arena's), plus a granule's fixed cost
 * (about 80 bytes) where they are not. A freed entry is marked dead
 * (REC_NONE) instead of moved; a granule is compacted when more than half
 * of it is dead, and given back when all of it is. */
#include "sweep.h"

#include <stdlib.h>
#include <string.h>

#define GRANULE_MASK ((1u << GRANULE_BITS) - 1)

static struct granule *granule_of(struct ptrmap *m, u64 key, int make)
{
	u64 *slot;
	struct granule *g;
	u32 s;
	int fresh;

	/* the granule of the last pointer: an arena's next allocation and
	 * its frees come in the same granule, and the index is a hash
	 * lookup (a cache miss or more) */
	if (m->last_ok && m->last_key == key)
		return &m->g[m->last_slot];
	slot = u64map_get(&m->index, key);
	if (slot) {
		m->last_key = key;
		m->last_slot = (u32)*slot;
		m->last_ok = 1;
		return &m->g[*slot];
	}
	if (!make)
		return NULL;
	if (m->nspare) {
		s = m->spare[--m->nspare];
	} else {
		if (m->ng == m->capg) {
			m->capg = m->capg ? m->capg * 2 : 16;
			m->g = xrealloc(m->g, m->capg * sizeof *m->g);
		}
		s = m->ng++;
	}
	g = &m->g[s];
	memset(g, 0, sizeof *g);
	g->key = key;
	*u64map_put(&m->index, key, &fresh) = s;
	m->last_key = key;
	m->last_slot = s;
	m->last_ok = 1;
	return g;
}

/* the first position whose offset is >= off: a binary search without
 * branches (a conditional move a step), whose outcome a CPU cannot
 * guess: it was a fifth of the sweep's instructions with them */
static u32 lower(const struct granule *g, u16 off)
{
	const u16 *base = g->off;
	u32 n = g->n;

	if (!n || base[n - 1] < off)
		return n;   /* the common case: an arena hands out upwards */
	while (n > 1) {
		u32 half = n / 2;
		base = base[half] < off ? base + half : base;
		n -= half;
	}
	return (u32)(base - g->off) + (*base < off);
}

struct ptrloc ptrmap_find(struct ptrmap *m, u64 ptr)
{
	struct ptrloc loc = { NULL, 0 };
	struct granule *g = granule_of(m, ptr >> GRANULE_BITS, 0);
	u16 off = ptr & GRANULE_MASK;
	u32 pos;

	if (!g)
		return loc;
	/* blocks are often freed in the order they were handed out (a
	 * list's nodes, a token stream), or the reverse: the neighbours of
	 * the last one found, before a binary search. Offsets are unique in
	 * a granule, so a match is the position. */
	pos = g->next;
	if (pos < g->n && g->off[pos] == off)
		;   /* the next one */
	else if (pos >= 2 && pos - 2 < g->n && g->off[pos - 2] == off)
		pos -= 2;   /* the one before */
	else
		pos = lower(g, off);
	g->next = pos + 1;
	if (pos < g->n && g->off[pos] == off && g->rec[pos] != REC_NONE) {
		loc.g = g;
		loc.pos = pos;
	}
	return loc;
}

static void resize(struct granule *g, u32 cap)
{
	g->cap = cap;
	g->off = xrealloc(g->off, cap * sizeof *g->off);
	g->rec = xrealloc(g->rec, cap * sizeof *g->rec);
}

u32 *ptrmap_put(struct ptrmap *m, u64 ptr, int *was_live)
{
	struct granule *g = granule_of(m, ptr >> GRANULE_BITS, 1);
	u16 off = ptr & GRANULE_MASK;
	u32 pos = lower(g, off);

	*was_live = 0;
	if (pos < g->n && g->off[pos] == off) {
		if (g->rec[pos] != REC_NONE) {
			*was_live = 1;
			return &g->rec[pos];
		}
		g->dead--;   /* a dead entry: reused */
		return &g->rec[pos];
	}
	if (g->n == g->cap)   /* grows by an eighth: little slack at scale */
		resize(g, g->cap + (g->cap / 8 > 8 ? g->cap / 8 : 8));
	if (pos < g->n) {
		memmove(g->off + pos + 1, g->off + pos,
			(g->n - pos) * sizeof *g->off);
		memmove(g->rec + pos + 1, g->rec + pos,
			(g->n - pos) * sizeof *g->rec);
	}
	g->off[pos] = off;
	g->rec[pos] = REC_NONE;
	g->n++;
	return &g->rec[pos];
}

static void release_granule(struct ptrmap *m, struct granule *g)
{
	u32 s = (u32)(g - m->g);

	u64map_del(&m->index, g->key);
	if (m->last_ok && m->last_slot == s)
		m->last_ok = 0;
	free(g->off);
	free(g->rec);
	memset(g, 0, sizeof *g);
	if (m->nspare == m->capspare) {
		m->capspare = m->capspare ? m->capspare * 2 : 16;
		m->spare = xrealloc(m->spare, m->capspare * sizeof *m->spare);
	}
	m->spare[m->nspare++] = s;
}

static void compact(struct ptrmap *m, struct granule *g)
{
	u32 i, n = 0;

	if (g->dead == g->n) {
		release_granule(m, g);
		return;
	}
	for (i = 0; i < g->n; i++)
		if (g->rec[i] != REC_NONE) {
			g->off[n] = g->off[i];
			g->rec[n] = g->rec[i];
			n++;
		}
	g->n = n;
	g->dead = 0;
	if (g->cap > 2 * n + 8)
		resize(g, n + n / 8 + 8);
}

void ptrmap_remove(struct ptrmap *m, struct ptrloc loc)
{
	struct granule *g = loc.g;

	g->rec[loc.pos] = REC_NONE;
	g->dead++;
	if (g->dead == g->n || (g->dead > 16 && g->dead * 2 > g->n))
		compact(m, g);
}

static void each_in(struct ptrmap *m, struct granule *g, u64 lo,
		    unsigned __int128 hi,
		    int (*fn)(u64, u32, void *), void *arg)
{
	u64 base = g->key << GRANULE_BITS;
	u32 i, removed = 0;

	for (i = 0; i < g->n; i++) {
		u64 p = base | g->off[i];
		if (g->rec[i] == REC_NONE || p < lo || (unsigned __int128)p >= hi)
			continue;
		if (fn(p, g->rec[i], arg)) {
			g->rec[i] = REC_NONE;
			g->dead++;
			removed++;
		}
	}
	if (removed && (g->dead == g->n || g->dead * 2 > g->n))
		compact(m, g);
}

void ptrmap_each(struct ptrmap *m, u64 lo, unsigned __int128 hi,
		 int (*fn)(u64 ptr, u32 rec, void *arg), void *arg)
{
	unsigned __int128 gfirst = lo >> GRANULE_BITS, glast;
	u32 s;

	if (hi <= lo)
		return;
	glast = (hi - 1) >> GRANULE_BITS;
	if (glast - gfirst < m->index.n) {   /* fewer granules than live ones */
		u64 key;
		for (key = (u64)gfirst;; key++) {
			struct granule *g = granule_of(m, key, 0);
			if (g)
				each_in(m, g, lo, hi, fn, arg);
			if (key == (u64)glast)
				break;
		}
		return;
	}
	for (s = 0; s < m->ng; s++) {
		struct granule *g = &m->g[s];
		if (!g->off || (unsigned __int128)g->key < gfirst ||
		    (unsigned __int128)g->key > glast)
			continue;
		each_in(m, g, lo, hi, fn, arg);
	}
}

void ptrmap_free(struct ptrmap *m)
{
	u32 s;

	for (s = 0; s < m->ng; s++) {
		free(m->g[s].off);
		free(m->g[s].rec);
	}
	free(m->g);
	free(m->spare);
	u64map_free(&m->index);
	memset(m, 0, sizeof *m);
}
