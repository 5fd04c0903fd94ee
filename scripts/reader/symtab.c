/* symtab.c - dwfl_module_addrinfo's answer without its linear search.
 *
 * elfutils 0.188 answers dwfl_module_addrinfo by reading every symbol of
 * the module (dwfl_module_addrsym.c, search_table): in a program of
 * 30,000 functions, 30,000 distinct pcs took the reader 27 s, for
 * 30,000 events. Here a module's symbols with a size are sorted once,
 * and the symbols that contain a pc are found by binary search; libdw's
 * rules then pick among them in the order its loop meets them (the
 * table's order: globals first, locals only when no global contains
 * the pc; the closest start, then the better binding, then the smaller
 * size, as try_sym_value does), so the answer is libdw's. Where those
 * rules need more than the sized symbols that contain the pc (none
 * does: the sizeless assembler labels, the section a label is in; a
 * sizeless global exactly at the pc), libdw answers. A module's first
 * LAZY lookups go to libdw too: most processes of a build ask about few
 * pcs. ALLOCSITES_READER_VERIFY=1 asks libdw every time and counts the
 * answers that differ (symtab_mismatch); `allocsites-read --symbols
 * FILE` does so for addresses on stdin (the tests' check). */
#include "reader.h"
#include "symtab.h"

#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LAZY = 16 };

struct sized {
	u64 value, end;         /* the module's addresses: [value, end),
				 * end at most the top of the space */
	u64 size;
	int ndx;                /* its index in libdw's table */
	int bind;               /* binding_value: global 3, weak 2, local 1 */
	const char *name;
};

struct symtab {
	unsigned lookups;
	int built, ok;
	struct sized *s;        /* by value */
	u64 *reach;             /* reach[i]: the highest end of s[0..i] */
	size_t n;
	u64 *exact;             /* sizeless globals' values, sorted */
	size_t nexact;
	int first_global;       /* libdw's: 0 when one table holds all */
};

u64 symtab_fast, symtab_slow, symtab_mismatch;

static int binding_value(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL: return 3;
	case STB_WEAK: return 2;
	case STB_LOCAL: return 1;
	default: return 0;
	}
}

static int by_value(const void *a, const void *b)
{
	const struct sized *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->ndx - y->ndx;
}

static int by_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;
	return x < y ? -1 : x > y;
}

/* search_table's test of a symbol, but for value <= addr */
static int eligible(const char *name, const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);
	return name && name[0] && sym->st_shndx != SHN_UNDEF &&
	       type != STT_SECTION && type != STT_FILE && type != STT_TLS;
}

static void build(struct symtab *t, Dwfl_Module *mod)
{
	t->built = 1;
	int n = dwfl_module_getsymtab(mod);
	int first = dwfl_module_getsymtab_first_global(mod);
	if (n < 0 || first < 0)
		return;
	t->first_global = first;
	t->s = malloc((size_t)(n ? n : 1) * sizeof(*t->s));
	t->exact = malloc((size_t)(n ? n : 1) * sizeof(*t->exact));
	if (!t->s || !t->exact)
		return;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr value;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &value,
							   &shndx, NULL,
							   NULL);
		if (!eligible(name, &sym))
			continue;
		if (sym.st_size == 0) {
			if (i >= first)
				t->exact[t->nexact++] = value;
			continue;
		}
		u64 end = value + sym.st_size;   /* at most the top */
		t->s[t->n++] = (struct sized){ value, end < value ? ~0ull : end,
					       sym.st_size, i,
					       binding_value(&sym), name };
	}
	qsort(t->s, t->n, sizeof(*t->s), by_value);
	qsort(t->exact, t->nexact, sizeof(*t->exact), by_u64);
	t->reach = ranges_reach(t->s, t->n, sizeof(*t->s),
				offsetof(struct sized, end));
	t->ok = t->reach != NULL;
}

static int has_exact(const struct symtab *t, u64 pc)
{
	size_t lo = 0, hi = t->nexact;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->exact[mid] < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->nexact && t->exact[lo] == pc;
}

/* try_sym_value's choice among sized symbols that contain the pc, met
 * in table order (c sorted by ndx) */
static const struct sized *choose(const struct sized **c, size_t n)
{
	const struct sized *best = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct sized *s = c[i];
		if (!best || best->value < s->value || best->bind < s->bind)
			best = s;
		else if (best->value == s->value &&
			 ((best->size > s->size && best->bind <= s->bind) ||
			  (best->size >= s->size && best->bind < s->bind)))
			best = s;
	}
	return best;
}

static int by_ndx(const void *a, const void *b)
{
	const struct sized *x = *(const struct sized *const *)a,
			   *y = *(const struct sized *const *)b;
	return x->ndx - y->ndx;
}

/* The answer from the index: 1 with *name and *value, 0 where libdw
 * must answer. */
static int fast(const struct symtab *t, u64 pc, const char **name,
		u64 *value)
{
	enum { MAXC = 64 };
	const struct sized *global[MAXC], *local[MAXC];
	size_t ng = 0, nl = 0;
	for (size_t i = ranges_upto(t->s, t->n, sizeof(*t->s), pc);
	     i > 0 && t->reach[i - 1] > pc; i--) {
		const struct sized *s = &t->s[i - 1];
		if (pc - s->value >= s->size)
			continue;
		if (ng == MAXC || nl == MAXC)
			return 0;   /* too many overlaps: libdw */
		if (t->first_global == 0 || s->ndx >= t->first_global)
			global[ng++] = s;
		else
			local[nl++] = s;
	}
	const struct sized *best = NULL;
	if (ng) {
		qsort(global, ng, sizeof(*global), by_ndx);
		best = choose(global, ng);
	} else if (nl && t->first_global > 1 && !has_exact(t, pc)) {
		qsort(local, nl, sizeof(*local), by_ndx);
		best = choose(local, nl);
	}
	if (!best)
		return 0;
	*name = best->name;
	*value = best->value;
	return 1;
}

static struct symtab *symtab_of(Dwfl_Module *mod)
{
	void **slot = NULL;
	dwfl_module_info(mod, &slot, NULL, NULL, NULL, NULL, NULL, NULL);
	if (!slot)
		return NULL;
	if (!*slot)
		*slot = calloc(1, sizeof(struct symtab));
	return *slot;
}

const char *symtab_addrinfo(Dwfl_Module *mod, u64 pc, GElf_Off *off)
{
	static int verify = -1;
	if (verify < 0) {
		const char *v = getenv("ALLOCSITES_READER_VERIFY");
		verify = v && *v == '1';
	}
	struct symtab *t = symtab_of(mod);
	if (t && !t->built && (++t->lookups > LAZY || verify))
		build(t, mod);
	const char *name;
	u64 value;
	if (t && t->ok && fast(t, pc, &name, &value)) {
		symtab_fast++;
		if (verify) {
			GElf_Sym sym;
			GElf_Off o;
			const char *d = dwfl_module_addrinfo(mod, pc, &o, &sym,
							     NULL, NULL, NULL);
			if (!d || strcmp(d, name) || o != pc - value)
				symtab_mismatch++;
		}
		*off = pc - value;
		return name;
	}
	symtab_slow++;
	GElf_Sym sym;
	return dwfl_module_addrinfo(mod, pc, off, &sym, NULL, NULL, NULL);
}

static void free_symtab(struct symtab *t)
{
	if (t) {
		free(t->s);
		free(t->reach);
		free(t->exact);
		free(t);
	}
}

/* dwfl_report_end passes the userdata's address (MODCB_ARGS), not its
 * value */
int symtab_removed(Dwfl_Module *mod, void *userdata, const char *name,
		   Dwarf_Addr base, void *arg)
{
	(void)mod, (void)name, (void)base, (void)arg;
	void **slot = userdata;
	free_symtab(*slot);
	*slot = NULL;
	return DWARF_CB_OK;
}

static int forget_one(Dwfl_Module *mod, void **userdata, const char *name,
		      Dwarf_Addr base, void *arg)
{
	(void)mod, (void)name, (void)base, (void)arg;
	free_symtab(*userdata);
	*userdata = NULL;
	return DWARF_CB_OK;
}

void symtab_forget_all(Dwfl *dwfl)
{
	if (dwfl)
		dwfl_getmodules(dwfl, forget_one, NULL, 0);
}

/* allocsites-read --symbols FILE: every address on stdin (hex, FILE's
 * link-time address) looked up both ways; prints the ones whose answers
 * differ and the counts. Exit status 1 when any differs. */
int symbols_main(const char *path)
{
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	Dwfl *dwfl = offline_module(path, &mod, &bias);
	if (!dwfl)
		return 1;
	struct symtab *t = symtab_of(mod);
	if (t)
		build(t, mod);
	u64 addr, asked = 0, indexed = 0, differ = 0;
	while (next_address(&addr)) {
		asked++;
		u64 pc = addr + bias;
		const char *name;
		u64 value;
		GElf_Sym sym;
		GElf_Off o;
		const char *d = dwfl_module_addrinfo(mod, pc, &o, &sym, NULL,
						     NULL, NULL);
		if (!t || !t->ok || !fast(t, pc, &name, &value))
			continue;
		indexed++;
		if (!d || strcmp(d, name) || o != pc - value) {
			differ++;
			printf("%llx index %s+%#llx libdw %s+%#llx\n",
			       (unsigned long long)addr, name,
			       (unsigned long long)(pc - value),
			       d ? d : "(none)", (unsigned long long)o);
		}
	}
	printf("asked %llu indexed %llu differ %llu\n",
	       (unsigned long long)asked, (unsigned long long)indexed,
	       (unsigned long long)differ);
	symtab_forget_all(dwfl);
	dwfl_end(dwfl);
	return differ ? 1 : 0;
}
