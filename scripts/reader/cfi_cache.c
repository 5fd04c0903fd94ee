/* cfi_cache.c - the common case of x86-64 unwinding, from CFI rules
 * cached per pc; libdw (unwind.c) for everything else.
 *
 * libdw's dwfl_getthread_frames builds a thread, a frame state and a
 * Dwarf_Frame (malloc and free) for every frame of every sample: about
 * half of the reader's time. But nearly every frame's rule is one of a
 * few shapes: the CFA is rsp or rbp plus an offset, the return address
 * and rbp are saved at CFA + N or untouched. Those rules are taken from
 * libdw once per pc (dwarf_cfi_addrframe on the module's .eh_frame) and
 * kept in a table; a sample whose every frame has such a rule is
 * unwound from the table alone, with the same steps libdw takes (a
 * caller's rule is looked up at its pc - 1; a failed read of the stack
 * copy ends the stack; a pc in no module is the last frame). Any other
 * rule (expressions, another base register, no .eh_frame entry, a
 * signal frame, a return address of 0) sends the whole sample to libdw,
 * so the result is libdw's. ALLOCSITES_READER_VERIFY=1 unwinds every
 * sample both ways and counts the differences (main.c prints them). */
#include "reader.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

/* R_END: a pc in no module, the last frame; R_OUTERMOST: the CFI says
 * the frame has no caller */
enum { R_EMPTY, R_OK, R_END, R_OUTERMOST, R_FALLBACK };

struct rule {
	u64 pc;
	signed char kind, cfa_rbp, bp_saved;
	int32_t cfa_off, ra_off, bp_off;
};

struct cfi_cache {
	struct rule *t;
	size_t mask, n;
};

struct cfi_cache *cfi_cache_new(void)
{
	struct cfi_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->mask = (1 << 12) - 1;
	c->t = calloc(c->mask + 1, sizeof(*c->t));
	if (!c->t) {
		free(c);
		return NULL;
	}
	return c;
}

void cfi_cache_free(struct cfi_cache *c)
{
	if (c) {
		free(c->t);
		free(c);
	}
}

/* Every rule forgotten: the modules they came from changed. */
void cfi_cache_clear(struct cfi_cache *c)
{
	if (!c->n)
		return;
	memset(c->t, 0, (c->mask + 1) * sizeof(*c->t));
	c->n = 0;
}

static size_t slot_of(const struct cfi_cache *c, u64 pc)
{
	return (size_t)((pc * 0x9e3779b97f4a7c15ull) >> 20) & c->mask;
}

static void grow(struct cfi_cache *c)
{
	struct rule *old = c->t;
	size_t n = c->mask + 1;
	struct rule *t = calloc(n * 2, sizeof(*t));
	if (!t) {
		cfi_cache_clear(c);   /* a cache started again, not a crash */
		return;
	}
	c->mask = n * 2 - 1;
	c->t = t;
	for (size_t i = 0; i < n; i++) {
		if (old[i].kind == R_EMPTY)
			continue;
		size_t j = slot_of(c, old[i].pc);
		while (c->t[j].kind != R_EMPTY)
			j = (j + 1) & c->mask;
		c->t[j] = old[i];
	}
	free(old);
}

/* "saved at CFA + N": libdw gives DW_OP_call_frame_cfa, then
 * DW_OP_plus_uconst N (N wraps for a negative offset) or nothing. */
static int saved_at(const Dwarf_Op *ops, size_t n, int32_t *off)
{
	if (n == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		*off = 0;
		return 1;
	}
	if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
	    ops[1].atom == DW_OP_plus_uconst) {
		int64_t v = (int64_t)ops[1].number;
		if (v < INT32_MIN || v > INT32_MAX)
			return 0;
		*off = (int32_t)v;
		return 1;
	}
	return 0;
}

static void make_rule(Dwfl *dwfl, u64 pc, struct rule *r)
{
	r->pc = pc;
	r->kind = R_FALLBACK;
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
	if (!mod) {
		r->kind = R_END;   /* as unwind.c's frame_cb stops libdw */
		return;
	}
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &bias);
	Dwarf_Frame *f;
	if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &f) != 0)
		return;
	Dwarf_Addr start, end;
	bool signal;
	Dwarf_Op *ops, mem[3];
	size_t n;
	int ra = dwarf_frame_info(f, &start, &end, &signal);
	if (ra != 16 || signal || dwarf_frame_cfa(f, &ops, &n) != 0 ||
	    n != 1 || ops[0].atom != DW_OP_bregx ||
	    (ops[0].number != 7 && ops[0].number != 6) ||
	    (int64_t)ops[0].number2 < INT32_MIN ||
	    (int64_t)ops[0].number2 > INT32_MAX)
		goto out;
	r->cfa_rbp = ops[0].number == 6;
	r->cfa_off = (int32_t)ops[0].number2;
	if (dwarf_frame_register(f, 16, mem, &ops, &n) != 0)
		goto out;
	if (n == 0) {
		/* undefined: the outermost frame (_start, clone3,
		 * __start_context); same-value (ops NULL) is libdw's */
		if (ops)
			r->kind = R_OUTERMOST;
		goto out;
	}
	if (!saved_at(ops, n, &r->ra_off) || n == 1)
		goto out;
	if (dwarf_frame_register(f, 6, mem, &ops, &n) != 0)
		goto out;
	if (n == 0)
		r->bp_saved = 0;   /* kept */
	else if (saved_at(ops, n, &r->bp_off) && n == 2)
		r->bp_saved = 1;
	else
		goto out;
	r->kind = R_OK;
out:
	free(f);
}

/* Whether the CFI at pc (.eh_frame, else .debug_frame) says the return
 * address is undefined: the frame has no caller. */
int cfi_says_outermost(Dwfl *dwfl, u64 pc)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
	if (!mod)
		return 0;
	for (int debug = 0; debug < 2; debug++) {
		Dwarf_Addr bias;
		Dwarf_CFI *cfi = debug ? dwfl_module_dwarf_cfi(mod, &bias)
				       : dwfl_module_eh_cfi(mod, &bias);
		Dwarf_Frame *f;
		if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &f) != 0)
			continue;
		Dwarf_Op *ops, mem[3];
		size_t n;
		int ra = dwarf_frame_info(f, NULL, NULL, NULL);
		/* libdw: no op with ops set is "undefined", with ops NULL
		 * "same value" */
		int undefined = ra >= 0 &&
				dwarf_frame_register(f, ra, mem, &ops, &n) == 0 &&
				n == 0 && ops;
		free(f);
		return undefined;
	}
	return 0;
}

static const struct rule *rule_for(struct cfi_cache *c, Dwfl *dwfl, u64 pc)
{
	size_t j = slot_of(c, pc);
	while (c->t[j].kind != R_EMPTY) {
		if (c->t[j].pc == pc)
			return &c->t[j];
		j = (j + 1) & c->mask;
	}
	struct rule r;
	memset(&r, 0, sizeof(r));
	make_rule(dwfl, pc, &r);
	if ((c->n + 1) * 2 > c->mask)
		grow(c);     /* or cleared, if memory ran out */
	j = slot_of(c, pc);
	while (c->t[j].kind != R_EMPTY)
		j = (j + 1) & c->mask;
	c->t[j] = r;
	c->n++;
	return &c->t[j];
}

static int read_word(const struct sample *s, u64 sp0, u64 addr, u64 *v)
{
	/* no wrap-around: registers can lie at the top of the space */
	if (addr < sp0 || s->stack_size < 8 || addr - sp0 > s->stack_size - 8)
		return 0;
	memcpy(v, s->stack + (addr - sp0), 8);
	return 1;
}

int cfi_unwind(struct cfi_cache *c, Dwfl *dwfl, const struct sample *s,
	       int ip_pos, int sp_pos, int bp_pos, u64 *pcs, int max,
	       int *end)
{
	*end = END_NONE;
	if (ip_pos < 0 || sp_pos < 0 || max < 1)
		return -1;
	/* %rbp may be missing (perf record --user-regs=ip,sp): unknown
	 * until a frame restores it, and needed only for an %rbp-based CFA */
	int bp_known = bp_pos >= 0;
	u64 pc = word(s->regs, (u64)ip_pos), sp = word(s->regs, (u64)sp_pos),
	    bp = bp_known ? word(s->regs, (u64)bp_pos) : 0;
	u64 sp0 = sp;
	int n = 0;
	pcs[n++] = pc;
	while (n < max) {
		const struct rule *r = rule_for(c, dwfl, pc);
		if (r->kind == R_FALLBACK)
			return -1;
		if (r->kind == R_END)
			break;
		if (r->kind == R_OUTERMOST) {
			*end = END_OUTERMOST;
			break;
		}
		if (r->cfa_rbp && !bp_known)
			return -1;   /* libdw says where the stack ends */
		u64 cfa = (r->cfa_rbp ? bp : sp) + (u64)(int64_t)r->cfa_off;
		u64 ra, at = cfa + (u64)(int64_t)r->ra_off;
		if (!read_word(s, sp0, at, &ra)) {
			/* the stack copy ends: so does libdw */
			*end = end_of_read(sp0, at);
			break;
		}
		if (r->bp_saved) {
			if (!read_word(s, sp0, cfa + (u64)(int64_t)r->bp_off,
				       &bp))
				return -1;
			bp_known = 1;
		}
		if (ra == 0)
			return -1;
		sp = cfa;
		pc = ra - 1;   /* a caller: its call instruction */
		pcs[n++] = pc;
	}
	return n;
}
