/* lines.c - allocsites-read --lines FILE: source lines of addresses in
 * FILE, inlined frames expanded, from libdw: the same reading of ELF and
 * DWARF the unwinder does (unwind.c), so that a report resolves symbols
 * with one library, not libdw for the stacks and binutils' addr2line for
 * their lines (issue 30).
 *
 * stdin: one hexadecimal address a line, as FILE's link-time address
 * (what `addr2line -e FILE` takes). stdout: addr2line -f -i -a -C's
 * answer, which symbolize.parse_addr2line reads:
 *
 *   0x00000000000011a9      the address
 *   inner                   the innermost (inlined) function
 *   /src/x.c:12             its line at the address
 *   outer                   the function it was inlined into
 *   /src/x.c:30             the line of the inlined call
 *   ...                     out to the function the address is in
 *
 * or "??" and "??:0" where FILE has no line for the address. Names as
 * binutils prints them with -C: a function's linkage name demangled with
 * its parameters where it has one (C++), else its DWARF name. Debug info
 * is found as the unwinder finds it (dwfl_standard_find_debuginfo: the
 * file itself, .gnu_debuglink, /usr/lib/debug/.build-id). */
#include "reader.h"
#include "symtab.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

static const Dwfl_Callbacks callbacks = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* A function DIE's name as addr2line -C prints it; *owned: free it. */
static const char *function_name(Dwarf_Die *die, char **owned)
{
	Dwarf_Attribute attr;
	const char *linkage = dwarf_formstring(
		dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!linkage)
		linkage = dwarf_formstring(dwarf_attr_integrate(
			die, DW_AT_MIPS_linkage_name, &attr));
	*owned = NULL;
	if (linkage) {
		*owned = cplus_demangle(linkage, DMGL_PARAMS | DMGL_ANSI);
		return *owned ? *owned : linkage;
	}
	return dwarf_diename(die);
}

/* The file DW_AT_call_file names, in the CU's file table. */
static const char *call_file(Dwarf_Die *cu, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word index;
	Dwarf_Files *files;
	size_t n;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &index) ||
	    dwarf_getsrcfiles(cu, &files, &n) || index >= n)
		return NULL;
	return dwarf_filesrc(files, index, NULL, NULL);
}

static int call_line(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word line;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &line))
		return 0;
	return (int)line;
}

/* The CU covering addr: by .debug_aranges (dwfl_module_addrdie), else
 * by each CU's own ranges: clang writes no .debug_aranges, and libdw
 * 0.188 then finds no CU for any address. */
static Dwarf_Die *cu_of(Dwfl_Module *mod, Dwarf_Addr addr, Dwarf_Addr *bias,
			Dwarf_Die *room)
{
	Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, bias);
	if (cu)
		return cu;
	Dwarf *dw = dwfl_module_getdwarf(mod, bias);
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dw && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL,
				  NULL) == 0) {
		if (dwarf_offdie(dw, off + hsize, room) &&
		    dwarf_haspc(room, addr - *bias) == 1)
			return room;
		off = next;
	}
	return NULL;
}

/* The unit whose DIEs hold cu's functions: cu itself, or where cu is
 * a skeleton (-gsplit-dwarf) the split unit libdw finds for it (the
 * .dwo its DW_AT_dwo_name names, under DW_AT_comp_dir). The skeleton
 * keeps the line table and the compilation directory; the functions,
 * their inlined calls and the language are in the split unit. Without
 * it (the .dwo not where the build left it) cu is answered as before:
 * lines and ELF symbols, no inlined frames. */
static Dwarf_Die *scope_unit(Dwarf_Die *cu, Dwarf_Die *room)
{
	uint8_t type;
	if (dwarf_cu_info(cu->cu, NULL, &type, NULL, room, NULL, NULL,
			  NULL) != 0 || type != DW_UT_skeleton ||
	    room->addr == NULL || dwarf_tag(room) != DW_TAG_compile_unit)
		return cu;
	return room;
}

/* A relative file name as binutils prints it: under the CU's
 * DW_AT_comp_dir (clang's DWARF 5 names files relative to it, and libdw
 * 0.188 leaves them so). The result is in buf or is name itself. */
static const char *absolute(Dwarf_Die *cu, const char *name, char *buf,
			    size_t len)
{
	Dwarf_Attribute attr;
	const char *dir;
	if (!name || name[0] == '/' ||
	    !(dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr))))
		return name;
	snprintf(buf, len, "%s/%s", dir, name);
	return buf;
}

/* Whether the CU is C++: a function without a linkage name (GCC's
 * constructors and destructors) is then named as binutils names it,
 * by the ELF symbol it is in, demangled. */
static int is_cxx(Dwarf_Die *cu)
{
	Dwarf_Attribute attr;
	Dwarf_Word lang;
	if (dwarf_formudata(dwarf_attr(cu, DW_AT_language, &attr), &lang))
		return 0;
	return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
	       lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

/* The ELF symbol the function DIE starts at, demangled; NULL when the
 * symbol at addr does not start where the function does (the .cold
 * part of a function is a symbol of its own: binutils keeps the DWARF
 * name there). */
static const char *symbol_name(Dwfl_Module *mod, Dwarf_Die *fn,
			       Dwarf_Addr addr, Dwarf_Addr bias, char **owned)
{
	GElf_Off off;
	Dwarf_Addr entry;
	const char *name = symtab_addrinfo(mod, addr, &off);
	/* fn NULL: a function without any name in DWARF takes the symbol */
	if (!name || (fn && (dwarf_entrypc(fn, &entry) ||
			     addr - off != entry + bias)))
		return NULL;
	*owned = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	return *owned ? *owned : name;
}

/* The functions of one CU, found at an address without walking the CU
 * again. dwarf_getscopes walks the CU's DIE tree from its root for every
 * address (and dwarf_getscopes_die once more): in a CU of 5000
 * functions, 10,000 addresses took 53 s; an amalgamated source (SQLite's
 * sqlite3.c, a generated parser) is such a CU. One walk lists every
 * subprogram, inlined subroutine and entry point with its pc ranges and
 * the nearest such DIE it is inside; an address's chain is then its
 * innermost one and that one's parents: the scopes answer() printed
 * from dwarf_getscopes, without the lexical blocks it skipped. */
struct fnrange {
	Dwarf_Addr lo, hi;      /* the module's addresses (bias included) */
	Dwarf_Off die;
	int depth;              /* functions it is inside */
	long parent;            /* an entry of the DIE it is inside, or -1 */
};

struct cuindex {
	struct cuindex *next;
	Dwarf *dw;              /* the file the unit is in (a .dwo's own) */
	Dwarf_Off cu;
	struct fnrange *r;
	Dwarf_Addr *reach;      /* reach[i]: the highest hi of r[0..i] */
	size_t n;
	int ok;                 /* 0: out of memory, answer the old way */
};

static struct cuindex *indexes;

static int fn_tag(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/* DIEs whose children can hold code of their own: the walk does not go
 * into types, variables or parameters (concrete member functions are
 * at the CU's or a namespace's level, with DW_AT_specification), so
 * that it costs little more than one dwarf_getscopes did where a CU is
 * asked about one address. */
static int holds_code(int tag)
{
	return fn_tag(tag) || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_namespace || tag == DW_TAG_module ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block;
}

static int range_cmp(const void *a, const void *b)
{
	const struct fnrange *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->depth - y->depth;   /* the outer first at one address */
}

static int add_range(struct cuindex *ix, size_t *cap, struct fnrange r)
{
	if (ix->n == *cap) {
		size_t more = *cap ? *cap * 2 : 256;
		struct fnrange *t = realloc(ix->r, more * sizeof(*t));
		if (!t)
			return -1;
		ix->r = t;
		*cap = more;
	}
	ix->r[ix->n++] = r;
	return 0;
}

static void build_index(struct cuindex *ix, Dwarf_Die *cu, Dwarf_Addr bias)
{
	/* an explicit stack: DIE, the entry of the function it is in, and
	 * that function's depth */
	struct frame {
		Dwarf_Die die;
		long parent;
		int depth;
	} *stack = NULL;
	size_t depth = 0, room = 0, cap = 0;
	Dwarf_Die child;
	if (dwarf_child(cu, &child) != 0)
		goto done;
	room = 64;
	stack = malloc(room * sizeof(*stack));
	if (!stack)
		return;
	stack[depth++] = (struct frame){ child, -1, 0 };
	while (depth) {
		struct frame f = stack[--depth];
		/* its next sibling waits under it, its children above */
		Dwarf_Die next;
		if (dwarf_siblingof(&f.die, &next) == 0)
			stack[depth++] = (struct frame){ next, f.parent,
							 f.depth };
		long inside = f.parent;
		int level = f.depth;
		int tag = dwarf_tag(&f.die);
		if (fn_tag(tag)) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			long first = -1;
			while ((off = dwarf_ranges(&f.die, off, &base, &lo,
						   &hi)) > 0) {
				if (hi <= lo)
					continue;
				if (first < 0)
					first = (long)ix->n;
				if (add_range(ix, &cap, (struct fnrange){
					      lo + bias, hi + bias,
					      dwarf_dieoffset(&f.die),
					      f.depth, f.parent }))
					goto fail;
			}
			if (first >= 0) {
				inside = first;
				level = f.depth + 1;
			}
		}
		if (holds_code(tag) && dwarf_haschildren(&f.die) &&
		    dwarf_child(&f.die, &child) == 0) {
			if (depth + 2 > room) {
				size_t more = room * 2;
				struct frame *t = realloc(stack,
							  more * sizeof(*t));
				if (!t)
					goto fail;
				stack = t;
				room = more;
			}
			stack[depth++] = (struct frame){ child, inside,
							 level };
		}
	}
done:
	free(stack);
	if (ix->n) {
		/* sorted by address; a parent is an entry's index, so
		 * the parents are moved to the entries' new places */
		long *pos = malloc(ix->n * sizeof(*pos));
		struct fnrange *sorted = malloc(ix->n * sizeof(*sorted));
		if (!pos || !sorted) {
			free(pos);
			free(sorted);
			return;   /* not ok: answered the old way */
		}
		for (size_t i = 0; i < ix->n; i++)
			sorted[i] = ix->r[i], sorted[i].parent = (long)i;
		qsort(sorted, ix->n, sizeof(*sorted), range_cmp);
		for (size_t i = 0; i < ix->n; i++)
			pos[sorted[i].parent] = (long)i;
		for (size_t i = 0; i < ix->n; i++) {
			long old = ix->r[sorted[i].parent].parent;
			sorted[i].parent = old < 0 ? -1 : pos[old];
		}
		free(ix->r);
		free(pos);
		ix->r = sorted;
		ix->reach = ranges_reach(ix->r, ix->n, sizeof(*ix->r),
					 offsetof(struct fnrange, hi));
		if (!ix->reach)
			return;
	}
	ix->ok = 1;
	return;
fail:
	free(stack);
}

static struct cuindex *index_of(Dwarf_Die *cu, Dwarf_Addr bias)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	Dwarf *dw = dwarf_cu_getdwarf(cu->cu);
	for (struct cuindex *ix = indexes; ix; ix = ix->next)
		if (ix->cu == off && ix->dw == dw)
			return ix;
	struct cuindex *ix = calloc(1, sizeof(*ix));
	if (!ix)
		return NULL;
	ix->dw = dw;
	ix->cu = off;
	ix->next = indexes;
	indexes = ix;
	build_index(ix, cu, bias);
	return ix;
}

/* The innermost function entry covering addr, or -1. */
static long innermost(const struct cuindex *ix, Dwarf_Addr addr)
{
	long best = -1;
	for (size_t i = ranges_upto(ix->r, ix->n, sizeof(*ix->r), addr);
	     i > 0 && ix->reach[i - 1] > addr; i--) {
		const struct fnrange *r = &ix->r[i - 1];
		if (addr < r->hi && (best < 0 || r->depth > ix->r[best].depth))
			best = (long)(i - 1);
	}
	return best;
}

/* The chain of function DIEs at addr, innermost first, in *out (freed
 * by the caller): their number, or -1 where the index cannot tell
 * (out of memory), 0 where no function covers addr. */
static int chain_at(Dwarf_Die *cu, Dwarf_Addr addr, Dwarf_Addr bias,
		    Dwarf_Die **out)
{
	*out = NULL;
	struct cuindex *ix = index_of(cu, bias);
	if (!ix || !ix->ok)
		return -1;
	long i = innermost(ix, addr);
	int n = 0;
	for (long j = i; j >= 0; j = ix->r[j].parent)
		n++;
	if (!n)
		return 0;
	Dwarf_Die *dies = malloc((size_t)n * sizeof(*dies));
	if (!dies)
		return -1;
	Dwarf *dw = dwarf_cu_getdwarf(cu->cu);
	int k = 0;
	for (long j = i; j >= 0; j = ix->r[j].parent)
		if (dwarf_offdie(dw, ix->r[j].die, &dies[k]))
			k++;
	*out = dies;
	return k;
}

static void answer(Dwfl_Module *mod, u64 addr)
{
	char path[4096], call_path[4096];
	Dwarf_Addr bias = 0;
	Dwarf_Die room;
	Dwarf_Die *cu = mod ? cu_of(mod, addr, &bias, &room) : NULL;
	Dwarf_Line *l = cu ? dwarf_getsrc_die(cu, addr - bias) : NULL;
	int line = 0;
	const char *file = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
	if (!file || dwarf_lineno(l, &line)) {
		fputs("??\n??:0\n", stdout);
		return;
	}
	file = absolute(cu, file, path, sizeof path);
	/* dwarf_getscopes gives the innermost scope at the address, then
	 * the scopes of an inlined function's abstract definition; the
	 * chain it was inlined along is that DIE's own parents
	 * (dwarf_getscopes_die), as eu-addr2line -i walks it */
	Dwarf_Die split;
	Dwarf_Die *unit = scope_unit(cu, &split);
	Dwarf_Die *scopes = NULL, inner;
	int n = chain_at(unit, addr, bias, &scopes);
	/* no function in the index covers addr (a unit of assembler, a
	 * function the walk did not go into): dwarf_getscopes, which
	 * answered before the index; its answer, if any, is kept */
	if (n <= 0) {
		free(scopes);
		scopes = NULL;
		n = dwarf_getscopes(unit, addr - bias, &scopes);
		if (n > 0) {
			inner = scopes[0];
			free(scopes);
			scopes = NULL;
			n = dwarf_getscopes_die(&inner, &scopes);
		}
	}
	int printed = 0;
	for (int i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_subprogram &&
		    tag != DW_TAG_inlined_subroutine &&
		    tag != DW_TAG_entry_point)
			continue;
		char *owned;
		const char *name = function_name(&scopes[i], &owned);
		if (!owned && tag == DW_TAG_subprogram && is_cxx(unit)) {
			const char *sym = symbol_name(mod, &scopes[i], addr,
						      bias, &owned);
			if (sym)
				name = sym;
		}
		if (!name && tag == DW_TAG_subprogram && !owned)
			name = symbol_name(mod, NULL, addr, bias, &owned);
		printf("%s\n%s:%d\n", name && *name ? name : "??",
		       file ? file : "??", file ? line : 0);
		free(owned);
		printed = 1;
		if (tag != DW_TAG_inlined_subroutine)
			break;
		/* the enclosing function's line: where this one was
		 * inlined into it */
		file = absolute(cu, call_file(unit, &scopes[i]), call_path,
				sizeof call_path);
		line = call_line(&scopes[i]);
	}
	if (!printed) {
		/* no function scope found (a lambda's operator() at -O0):
		 * the symbol the address is in, as binutils falls back to */
		char *owned = NULL;
		const char *name = symbol_name(mod, NULL, addr, bias, &owned);
		printf("%s\n%s:%d\n", name ? name : "??", file, line);
		free(owned);
	}
	free(scopes);
}

Dwfl *offline_module(const char *path, Dwfl_Module **mod,
		     Dwarf_Addr *bias)
{
	Dwfl *dwfl = dwfl_begin(&callbacks);
	if (!dwfl) {
		fprintf(stderr, "allocsites-read: libdw: %s\n", dwfl_errmsg(-1));
		return NULL;
	}
	dwfl_report_begin(dwfl);
	*mod = dwfl_report_offline(dwfl, path, path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	/* libdw places a module at an address of its choosing (a PIE's
	 * is not 0): a link-time address plus the bias is its address */
	*bias = 0;
	if (!*mod || !dwfl_module_getelf(*mod, bias)) {
		/* as addr2line: no answers at all, one line why */
		fprintf(stderr, "allocsites-read: %s: %s\n", path,
			dwfl_errmsg(-1));
		dwfl_end(dwfl);
		return NULL;
	}
	return dwfl;
}

int next_address(u64 *addr)
{
	char buf[128];
	while (fgets(buf, sizeof buf, stdin)) {
		char *end;
		*addr = strtoull(buf, &end, 16);
		if (end != buf)
			return 1;
	}
	return 0;
}

int lines_main(const char *path)
{
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	Dwfl *dwfl = offline_module(path, &mod, &bias);
	if (!dwfl)
		return 1;
	u64 addr;
	while (next_address(&addr)) {
		printf("0x%016llx\n", (unsigned long long)addr);
		answer(mod, addr + bias);
	}
	symtab_forget_all(dwfl);
	dwfl_end(dwfl);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "allocsites-read: stdout: write error\n");
		return 1;
	}
	return 0;
}
