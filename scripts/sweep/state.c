/* state.c - what the sweep keeps besides the live pointers: the records
 * live allocations share, the counters per code, the phase runs. */
#include "sweep.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ records */

/* One record for all live allocations alike (size, code, open runs): a
 * site allocates few sizes, so a live allocation holds a 32-bit id (as
 * liveness.py shares one tuple). Counted, so that a record nothing holds
 * any more is given back and the table stays the size of what is live. */

static u64 rec_hash(u64 size, u64 osize, u32 ci, u32 runs)
{
	u64 h = (size ^ osize * 0xD6E8FEB86659FD93ull) * 0x9E3779B97F4A7C15ull;
	h ^= ((u64)ci << 32 | runs) * 0xC2B2AE3D27D4EB4Full;
	return h ^ (h >> 29);
}

static void slots_put(struct recs *rs, u32 id)
{
	const struct rec *r = &rs->r[id];
	u64 mask = rs->cap_slots - 1;
	u64 i = rec_hash(r->size, r->osize, r->ci, r->runs) & mask;

	while (rs->slots[i])
		i = (i + 1) & mask;
	rs->slots[i] = id + 1;
	rs->used_slots++;
}

static void slots_grow(struct recs *rs)
{
	u32 *old = rs->slots;
	u64 i, oldcap = rs->cap_slots;

	rs->cap_slots = oldcap ? oldcap * 2 : 64;
	rs->slots = xcalloc(rs->cap_slots, sizeof *rs->slots);
	rs->used_slots = 0;
	for (i = 0; i < oldcap; i++)
		if (old[i])
			slots_put(rs, old[i] - 1);
	free(old);
}

u32 recs_get(struct recs *rs, u64 size, u64 osize, u32 ci, u32 runs)
{
	u64 mask, i;
	u32 id;
	struct rec *r;

	if ((rs->used_slots + 1) * 4 > rs->cap_slots * 3)
		slots_grow(rs);
	mask = rs->cap_slots - 1;
	for (i = rec_hash(size, osize, ci, runs) & mask; rs->slots[i];
	     i = (i + 1) & mask) {
		r = &rs->r[rs->slots[i] - 1];
		if (r->size == size && r->osize == osize && r->ci == ci &&
		    r->runs == runs) {
			r->refs++;
			return rs->slots[i] - 1;
		}
	}
	if (rs->nspare) {
		id = rs->spare[--rs->nspare];
	} else {
		if (rs->n == rs->cap) {
			rs->cap = rs->cap ? rs->cap * 2 : 64;
			rs->r = xrealloc(rs->r, (size_t)rs->cap * sizeof *rs->r);
		}
		id = rs->n++;
		if (id == REC_NONE)
			die("more than 2^32 distinct live records");
	}
	r = &rs->r[id];
	r->size = size;
	r->osize = osize;
	r->ci = ci;
	r->runs = runs;
	r->refs = 1;
	rs->slots[i] = id + 1;
	rs->used_slots++;
	return id;
}

void recs_unref(struct recs *rs, u32 id)
{
	struct rec *r = &rs->r[id];
	u64 mask = rs->cap_slots - 1, i, j, h;

	if (--r->refs)
		return;
	for (i = rec_hash(r->size, r->osize, r->ci, r->runs) & mask;
	     rs->slots[i] != id + 1; i = (i + 1) & mask)
		;
	for (j = (i + 1) & mask; rs->slots[j]; j = (j + 1) & mask) {
		const struct rec *o = &rs->r[rs->slots[j] - 1];
		h = rec_hash(o->size, o->osize, o->ci, o->runs) & mask;
		if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
			rs->slots[i] = rs->slots[j];
			i = j;
		}
	}
	rs->slots[i] = 0;
	rs->used_slots--;
	if (rs->nspare == rs->capspare) {
		rs->capspare = rs->capspare ? rs->capspare * 2 : 64;
		rs->spare = xrealloc(rs->spare,
				     (size_t)rs->capspare * sizeof *rs->spare);
	}
	rs->spare[rs->nspare++] = id;
}

void recs_free(struct recs *rs)
{
	free(rs->r);
	free(rs->spare);
	free(rs->slots);
	memset(rs, 0, sizeof *rs);
}

/* ------------------------------------------------------------ codes */

u32 codes_get(struct codes *c, u64 code)
{
	int fresh;
	u64 *slot = u64map_put(&c->index, code, &fresh);
	u32 ci;

	if (!fresh)
		return (u32)*slot;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		c->code = xrealloc(c->code, cap * sizeof *c->code);
		c->k = xrealloc(c->k, cap * sizeof *c->k);
		c->ec = xrealloc(c->ec, cap * sizeof *c->ec);
		c->temp = xrealloc(c->temp, cap * sizeof *c->temp);
		c->lc = xrealloc(c->lc, cap * sizeof *c->lc);
		c->pc = xrealloc(c->pc, cap * sizeof *c->pc);
		c->eb = xrealloc(c->eb, cap * sizeof *c->eb);
		c->lb = xrealloc(c->lb, cap * sizeof *c->lb);
		c->pb = xrealloc(c->pb, cap * sizeof *c->pb);
		c->liveb = xrealloc(c->liveb, cap * sizeof *c->liveb);
		c->sb = xrealloc(c->sb, cap * sizeof *c->sb);
		c->livec = xrealloc(c->livec, cap * sizeof *c->livec);
		c->sc = xrealloc(c->sc, cap * sizeof *c->sc);
		c->ep = xrealloc(c->ep, cap * sizeof *c->ep);
		c->fc = xrealloc(c->fc, cap * sizeof *c->fc);
		c->fw2 = xrealloc(c->fw2, cap * sizeof *c->fw2);
		c->flc = xrealloc(c->flc, cap * sizeof *c->flc);
		c->es = xrealloc(c->es, cap * sizeof *c->es);
		c->first_es = xrealloc(c->first_es, cap * sizeof *c->first_es);
		c->first_leak = xrealloc(c->first_leak,
					 cap * sizeof *c->first_leak);
		c->cap = (u32)cap;
	}
	ci = c->n++;
	*slot = ci;
	c->code[ci] = code;
	c->k[ci] = code & 0xffffffffu;   /* sweep.c's CODE_KEY */
	c->ec[ci] = c->temp[ci] = c->lc[ci] = c->pc[ci] = 0;
	c->eb[ci] = c->lb[ci] = c->pb[ci] = 0;
	c->liveb[ci] = c->sb[ci] = 0;
	c->livec[ci] = c->sc[ci] = 0;
	c->ep[ci] = 0;
	c->fc[ci] = c->fw2[ci] = c->flc[ci] = 0;
	c->es[ci] = 0;
	c->first_es[ci] = c->first_leak[ci] = UINT64_MAX;   /* not yet */
	return ci;
}

void codes_free(struct codes *c)
{
	u64map_free(&c->index);
	free(c->code); free(c->k); free(c->ec); free(c->temp); free(c->lc);
	free(c->pc); free(c->eb); free(c->lb); free(c->pb);
	free(c->liveb); free(c->sb); free(c->livec); free(c->sc); free(c->ep);
	free(c->fc); free(c->fw2); free(c->flc); free(c->es);
	free(c->first_es); free(c->first_leak);
	memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------ runs */

u32 runs_new(struct runs *rs)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 64;
		rs->slot = xrealloc(rs->slot, cap * sizeof *rs->slot);
		rs->pid = xrealloc(rs->pid, cap * sizeof *rs->pid);
		rs->total0 = xrealloc(rs->total0, cap * sizeof *rs->total0);
		rs->commit0 = xrealloc(rs->commit0, cap * sizeof *rs->commit0);
		rs->live = xrealloc(rs->live, cap * sizeof *rs->live);
		rs->best = xrealloc(rs->best, cap * sizeof *rs->best);
		rs->cap = (u32)cap;
	}
	return rs->n++;
}

/* A new tuple each time a thread's stack changes (as liveness.py makes a
 * new tuple in _set_thread); tuple 0 is the empty one. */
u32 runs_tuple(struct runs *rs, const u32 *runs, u32 n)
{
	if (!rs->ntuples) {
		rs->captuples = 64;
		rs->tstart = xmalloc(rs->captuples * sizeof *rs->tstart);
		rs->tlen = xmalloc(rs->captuples * sizeof *rs->tlen);
		rs->tstart[0] = 0;
		rs->tlen[0] = 0;
		rs->ntuples = 1;
		/* the pool too, before any tuple has runs: pool + 0 on a null
		 * pool (every allocation of a recording without phases) is
		 * undefined (clang's UBSan in make fuzz stopped there) */
		rs->cappool = 256;
		rs->pool = xmalloc(rs->cappool * sizeof *rs->pool);
	}
	if (!n)
		return 0;
	if (rs->ntuples == rs->captuples) {
		rs->captuples *= 2;
		rs->tstart = xrealloc(rs->tstart,
				      rs->captuples * sizeof *rs->tstart);
		rs->tlen = xrealloc(rs->tlen, rs->captuples * sizeof *rs->tlen);
	}
	while (rs->npool + n > rs->cappool) {
		rs->cappool = rs->cappool ? rs->cappool * 2 : 256;
		rs->pool = xrealloc(rs->pool, rs->cappool * sizeof *rs->pool);
	}
	memcpy(rs->pool + rs->npool, runs, n * sizeof *runs);
	rs->tstart[rs->ntuples] = rs->npool;
	rs->tlen[rs->ntuples] = n;
	rs->npool += n;
	return rs->ntuples++;
}
