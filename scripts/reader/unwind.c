/* unwind.c - a sample's user registers and stack copy unwound with
 * elfutils' libdw (the same library perf's unwind-libdw.c uses), and a
 * pc's place in its file as perf script names it.
 *
 * perf creates a Dwfl for every sample, which is much of its cost per
 * event. Here each process keeps one Dwfl for the whole recording: its
 * modules are reported again only when the process's mappings changed
 * (dwfl_report_begin keeps the modules reported again unchanged, with
 * their parsed CFI), and the thread callbacks read the sample currently
 * being unwound.
 *
 * Caller frames' pcs are moved back into the call instruction (pc - 1)
 * as perf does (libunwind-local.c and unwind-libdw.c both, after
 * dwfl_frame_pc's isactivation), so that lines name the call. */
#include "reader.h"
#include "symtab.h"

#include <ctype.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <libiberty/demangle.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* perf's x86_64 register numbers (arch/x86/include/uapi/asm/perf_regs.h)
 * in DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8-r15, then rip. */
static const int dwarf_to_perf[17] = {
	0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8
};
#define PERF_REG_SP 7

u64 unwind_fast, unwind_slow, unwind_mismatch;

struct mod {
	const char *path;       /* interned: compared by pointer */
	u64 bias;
	u64 low, high;          /* libdw's range, once reported */
	int reported;           /* 0: libdw took no module from it */
};

struct unw {
	Dwfl *dwfl;
	struct mod *mods;       /* what dwfl holds, sorted (mod_cmp) */
	size_t nmods;
	struct cfi_cache *cfi;
	unsigned generation;    /* of the maps last reported */
	int attached;
	struct proc *proc;
	const struct sample *s;
	u64 *pcs;
	int n, max;
	/* since the last frame was taken: a read the copy did not hold
	 * (failed, at failed_at), and whether frame_cb stopped libdw */
	int failed, stopped;
	u64 failed_at;
};

/* What a file's program headers say, once per path. */
struct elfinfo {
	const char *path;       /* interned by procs.c: compared by pointer */
	int ok, type;
	int nloads;
	struct { u64 off, vaddr, filesz, align; } loads[16];
	struct elfinfo *next;
};
static struct elfinfo *elfinfos[1024];

/* A mapped path opened for reading, or -1: only a regular file, and
 * without blocking (the recording can name a FIFO, /dev/zero...). */
static int open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

static const struct elfinfo *elfinfo(const char *path)
{
	unsigned b = (unsigned)(((uintptr_t)path >> 4) % 1024);
	for (struct elfinfo *e = elfinfos[b]; e; e = e->next)
		if (e->path == path)
			return e;
	static struct elfinfo none;   /* out of memory: no ELF */
	struct elfinfo *e = calloc(1, sizeof(*e));
	if (!e)
		return &none;
	e->path = path;
	e->next = elfinfos[b];
	elfinfos[b] = e;
	int fd = open_regular(path);
	if (fd < 0)
		return e;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	size_t phnum;
	if (elf && gelf_getehdr(elf, &eh) && !elf_getphdrnum(elf, &phnum)) {
		e->ok = 1;
		e->type = eh.e_type;
		for (size_t i = 0; i < phnum && e->nloads < 16; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(elf, (int)i, &ph) ||
			    ph.p_type != PT_LOAD)
				continue;
			e->loads[e->nloads].off = ph.p_offset;
			e->loads[e->nloads].vaddr = ph.p_vaddr;
			e->loads[e->nloads].filesz = ph.p_filesz;
			e->loads[e->nloads].align = ph.p_align ? ph.p_align : 1;
			e->nloads++;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return e;
}

/* The load bias of a mapping: where the file's vaddr 0 lies, from the
 * PT_LOAD whose page the mapping starts at (not start - pgoff, which is
 * wrong where a segment's vaddr and offset differ, as lld lays out). */
static int map_bias(const struct map *m, u64 *bias)
{
	const struct elfinfo *e = elfinfo(m->path);
	if (!e->ok)
		return -1;
	if (e->type == ET_EXEC) {
		*bias = 0;
		return 0;
	}
	for (int i = 0; i < e->nloads; i++) {
		u64 page = e->loads[i].off & ~(u64)0xfff;
		if (page == m->pgoff) {
			*bias = m->start - (e->loads[i].vaddr & ~(u64)0xfff);
			return 0;
		}
	}
	*bias = m->start - m->pgoff;
	return 0;
}

static const Dwfl_Callbacks offline_callbacks = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	struct unw *u = arg;
	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return (pid_t)u->s->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

/* Where perf register perf_reg is in a sample's regs (they come in the
 * order of the attr's mask), or -1; cached for the last mask seen. */
static int reg_pos(const struct sample *s, int perf_reg)
{
	static u64 mask_seen = ~0ull;
	static signed char pos[64];
	u64 mask = s->attr->regs_mask;
	if (mask != mask_seen) {
		int n = 0;
		for (int r = 0; r < 64; r++)
			pos[r] = (signed char)(mask >> r & 1 ? n++ : -1);
		mask_seen = mask;
	}
	return perf_reg < 64 ? pos[perf_reg] : -1;
}

/* Whether the sample has every register set_initial_registers gives
 * libdw (perf record --user-regs can leave some out). */
static int has_all_registers(const struct sample *s)
{
	for (int i = 0; i < 17; i++)
		if (reg_pos(s, dwarf_to_perf[i]) < 0)
			return 0;
	return 1;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			void *arg)
{
	(void)dwfl;
	struct unw *u = arg;
	const struct sample *s = u->s;
	int sp = reg_pos(s, PERF_REG_SP);
	if (sp < 0 || !s->stack)
		return false;
	u64 start = word(s->regs, (u64)sp);
	/* no wrap-around: sp and addr can lie at the top of the space */
	if (addr < start || s->stack_size < sizeof(Dwarf_Word) ||
	    addr - start > s->stack_size - sizeof(Dwarf_Word)) {
		u->failed = 1;
		u->failed_at = addr;
		return false;
	}
	memcpy(result, s->stack + (addr - start), sizeof(*result));
	return true;
}

/* The registers the sample has; those it lacks stay undefined, and a
 * frame whose CFI needs one of them ends the stack there. A recording
 * made with perf record --user-regs=ip,sp (a smaller sample) has only
 * those two, and perf's unwinding goes on with them wherever the CFA is
 * %rsp-based: so must this one. Without ip or sp nothing unwinds. */
static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unw *u = arg;
	if (reg_pos(u->s, 8) < 0 || reg_pos(u->s, PERF_REG_SP) < 0)
		return false;
	for (int i = 0; i < 17; i++) {
		int pos = reg_pos(u->s, dwarf_to_perf[i]);
		if (pos < 0)
			continue;
		Dwarf_Word value = word(u->s->regs, (u64)pos);
		if (!dwfl_thread_state_registers(thread, i, 1, &value))
			return false;
	}
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* The modules of a process: one per file and load bias (a file's
 * several exec mappings are one module), sorted, at most MAX_MODULES
 * (a recording can name thousands of mappings of one file: each would
 * be a libdw module, its CFI parsed, all of them re-reported). */
#define MAX_MODULES 1024
u64 modules_skipped;

static int mod_cmp(const void *a, const void *b)
{
	const struct mod *x = a, *y = b;
	if (x->path != y->path)
		return (uintptr_t)x->path < (uintptr_t)y->path ? -1 : 1;
	return x->bias < y->bias ? -1 : x->bias > y->bias;
}

static size_t wanted_modules(struct unw *u, struct mod *out)
{
	size_t n, k = 0;
	const struct map *maps = proc_maps(u->proc, &n);
	for (size_t i = 0; i < n; i++) {
		u64 bias;
		if (maps[i].path[0] != '/' || map_bias(&maps[i], &bias))
			continue;
		struct mod m = { maps[i].path, bias, 0, 0, 0 };
		/* the same file and bias as the last one kept: one module
		 * (mappings are sorted by address, a file's are adjacent) */
		if (k && !mod_cmp(&out[k - 1], &m))
			continue;
		if (k == MAX_MODULES) {
			modules_skipped++;
			continue;
		}
		out[k++] = m;
	}
	if (k)
		qsort(out, k, sizeof(*out), mod_cmp);
	size_t j = 0;
	for (size_t i = 0; i < k; i++)
		if (!j || mod_cmp(&out[j - 1], &out[i]))
			out[j++] = out[i];
	return j;
}

/* Reports a new module to libdw from a descriptor opened here
 * (open_regular), which libdw keeps on success. Its address range is kept in m, for
 * reporting it again. */
static int report_new(Dwfl *dwfl, struct mod *m)
{
	int fd = open_regular(m->path);
	if (fd < 0)
		return -1;
	Dwfl_Module *mod = dwfl_report_elf(dwfl, m->path, m->path, fd,
					   m->bias, true);
	if (!mod) {
		close(fd);
		return -1;
	}
	Dwarf_Addr low, high;
	dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL);
	m->low = low;
	m->high = high;
	m->reported = 1;
	return 0;
}

/* Brings libdw's modules in line with the process's mappings. A module
 * kept is reported again with dwfl_report_module (its name and range),
 * which keeps it with its parsed CFI and symbols. Not with
 * dwfl_report_elf: from a new descriptor, libdw takes a module it
 * already has as an overlap and drops it at dwfl_report_end (elfutils
 * 0.188, dwfl_report_elf.c), which after a dlopen lost every module and
 * ended every later stack at its first frame in the main binary. When
 * the modules are the same (a JIT's anonymous code changes the maps,
 * not the modules) libdw is not called. Rules cached per pc may name a
 * module that changed: the cache starts again when the modules do. */
static void report_maps(struct unw *u)
{
	struct mod *want = malloc(MAX_MODULES * sizeof(*want));
	if (!want)
		return;      /* the old modules stay: retried at the next sample */
	size_t nw = wanted_modules(u, want);
	u->generation = proc_generation(u->proc);
	int same = nw == u->nmods;
	for (size_t i = 0; same && i < nw; i++)
		same = !mod_cmp(&want[i], &u->mods[i]);
	if (same) {
		free(want);
		return;
	}
	dwfl_report_begin(u->dwfl);
	for (size_t i = 0, j = 0; i < nw; i++) {
		while (j < u->nmods && mod_cmp(&u->mods[j], &want[i]) < 0)
			j++;
		if (j < u->nmods && !mod_cmp(&u->mods[j], &want[i]) &&
		    u->mods[j].reported) {
			want[i] = u->mods[j];
			dwfl_report_module(u->dwfl, want[i].path, want[i].low,
					   want[i].high);
		} else if (j < u->nmods && !mod_cmp(&u->mods[j], &want[i])) {
			want[i] = u->mods[j];   /* not a module: not retried */
		} else {
			report_new(u->dwfl, &want[i]);
		}
	}
	dwfl_report_end(u->dwfl, symtab_removed, NULL);
	free(u->mods);
	u->mods = want;
	u->nmods = nw;
	cfi_cache_clear(u->cfi);
}

static struct unw *unw_of(struct proc *p)
{
	void **slot = proc_unwind_slot(p);
	struct unw *u = *slot;
	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return NULL;
		u->proc = p;
		u->dwfl = dwfl_begin(&offline_callbacks);
		u->cfi = u->dwfl ? cfi_cache_new() : NULL;
		if (!u->cfi) {
			if (u->dwfl)
				dwfl_end(u->dwfl);
			free(u);
			return NULL;
		}
		u->generation = proc_generation(p) - 1;
		*slot = u;
	}
	if (u->generation != proc_generation(p))
		report_maps(u);
	return u;
}

void unwind_forget(struct proc *p)
{
	void **slot = proc_unwind_slot(p);
	struct unw *u = *slot;
	if (!u)
		return;
	symtab_forget_all(u->dwfl);
	dwfl_end(u->dwfl);
	cfi_cache_free(u->cfi);
	free(u->mods);
	free(u);
	*slot = NULL;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct unw *u = arg;
	Dwarf_Addr pc;
	bool activation;
	/* What failed on the way here did not end the stack. Cleared
	 * before dwfl_frame_pc, not after: asked whether the frame is an
	 * activation, it unwinds the caller to see if that is a signal
	 * frame, so the read that ends a stack cut short by its copy
	 * happens in it. Cleared after, that failure was forgotten and the
	 * stack said to end at its outermost frame (the first sample of a
	 * process, which libdw unwinds, in a frame larger than the copy). */
	u->failed = 0;
	if (!dwfl_frame_pc(state, &pc, &activation)) {
		u->stopped = 1;
		return DWARF_CB_ABORT;
	}
	if (!activation)
		pc--;
	u->pcs[u->n++] = pc;
	u->stopped = 1;
	/* A pc in no module (JIT code in anonymous memory) is the last
	 * frame. libdw would go on with its frame-pointer fallback
	 * (ebl_unwind), right where the JIT keeps frame pointers and
	 * garbage where it does not; perf 6.1's unwinder stops there, and
	 * so does the table (cfi_cache.c), which unwinds most samples: the
	 * first sample of a process, unwound here, went deeper than the
	 * rest of the same stacks. */
	if (u->n > 1 && !dwfl_addrmodule(u->dwfl, pc))
		return DWARF_CB_ABORT;
	if (u->n >= u->max)
		return DWARF_CB_ABORT;
	u->stopped = 0;
	return DWARF_CB_OK;
}

static int libdw_unwind(struct unw *u, struct proc *p, const struct sample *s,
			u64 *pcs, int max, int *end)
{
	u->s = s;
	u->pcs = pcs;
	u->n = 0;
	u->max = max;
	u->failed = u->stopped = 0;
	*end = END_NONE;
	if (!u->attached) {
		if (!dwfl_attach_state(u->dwfl, NULL, (pid_t)proc_pid(p),
				       &thread_callbacks, u)) {
			/* no module yet (libdw takes the machine from the
			 * first): the leaf alone, as perf gives then */
			int ip = reg_pos(s, 8);
			if (ip >= 0)
				pcs[u->n++] = word(s->regs, (u64)ip);
			return u->n;
		}
		u->attached = 1;
	}
	int rc = dwfl_getthread_frames(u->dwfl, (pid_t)s->tid, frame_cb, u);
	/* libdw ends a stack whose return address it cannot read as it
	 * ends the outermost frame (pc undefined, 0 returned): a read that
	 * failed after the last frame is what tells them apart */
	int sp = reg_pos(s, PERF_REG_SP);
	if (u->n && !u->stopped && u->failed && sp >= 0)
		*end = end_of_read(word(s->regs, (u64)sp), u->failed_at);
	else if (u->n && !u->stopped && !u->failed && rc == 0 &&
		 (has_all_registers(s) ||
		  cfi_says_outermost(u->dwfl, u->pcs[u->n - 1])))
		/* with registers missing, a caller whose CFA needs one is
		 * undefined to libdw as well: only the CFI tells */
		*end = END_OUTERMOST;
	return u->n;
}

/* A caller's pc in no executable mapping of the process is no code: the
 * unwinder followed CFI that no longer described the stack, as where Go's
 * runtime.asmcgocall has moved a cgo call onto the system stack (its
 * return address read is a goroutine stack's address), or a stack
 * damaged. Both unwinders take such a pc for a last frame of JIT code;
 * JIT code lies in an executable mapping (perf records one). The stack
 * ends before it, switched: the caller's frames are where no copy
 * reaches. */
static int not_code_ends(struct proc *p, const u64 *pcs, int n, int *end)
{
	if (n > 1 && !proc_map_at(p, pcs[n - 1])) {
		*end = END_SWITCHED;
		return n - 1;
	}
	return n;
}

int unwind_sample(struct proc *p, const struct sample *s, u64 *pcs, int max,
		  int *end)
{
	static int verify = -1, no_cache;
	static u64 check[MAX_FRAMES];
	if (verify < 0) {
		/* the benchmarks' knobs: both ways and compare, or libdw
		 * alone (docs/design.md, "Report: the native reader") */
		const char *v = getenv("ALLOCSITES_READER_VERIFY");
		verify = v && *v == '1';
		v = getenv("ALLOCSITES_READER_NO_CACHE");
		no_cache = v && *v == '1';
	}
	*end = END_NONE;
	if (!s->regs || !s->stack)
		return 0;
	struct unw *u = unw_of(p);
	if (!u)
		return 0;
	int n = -1;
	if ((u->attached || verify) && !no_cache)   /* libdw attaches first */
		n = cfi_unwind(u->cfi, u->dwfl, s, reg_pos(s, 8),
			       reg_pos(s, PERF_REG_SP), reg_pos(s, 6), pcs,
			       max, end);
	if (n >= 0 && !verify) {
		unwind_fast++;
		return not_code_ends(p, pcs, n, end);
	}
	int libdw_end;
	int m = libdw_unwind(u, p, s, n >= 0 ? check : pcs, max, &libdw_end);
	if (n < 0) {
		unwind_slow++;
		*end = libdw_end;
		return not_code_ends(p, pcs, m, end);
	}
	unwind_fast++;
	if (n != m || memcmp(pcs, check, (size_t)n * sizeof(*pcs)) ||
	    *end != libdw_end)
		unwind_mismatch++;
	return not_code_ends(p, pcs, n, end);
}

/* OCaml's mangling undone as perf 6.1 does (util/demangle-ocaml.c),
 * into out (at least strlen(name) + 1 bytes): "caml" and a capital
 * (camlStdlib__map_154), "__" -> ".", "$xx" -> the character of hex xx.
 * 0 where name is not OCaml's. */
static int ocaml_name(const char *name, char *out)
{
	if (strncmp(name, "caml", 4) || !isupper((unsigned char)name[4]))
		return 0;
	size_t j = 0;
	for (const char *c = name + 4; *c;) {
		if (c[0] == '_' && c[1] == '_') {
			out[j++] = '.';
			c += 2;
		} else if (c[0] == '$' && isxdigit((unsigned char)c[1]) &&
			   isxdigit((unsigned char)c[2])) {
			char hex[3] = { c[1], c[2], 0 };
			out[j++] = (char)strtol(hex, NULL, 16);
			c += 3;
		} else {
			out[j++] = *c++;
		}
	}
	out[j] = 0;
	return 1;
}

/* A symbol as perf 6.1 names it (symbol-elf.c's demangle_sym when not
 * verbose): demangled by libiberty's cplus_demangle without options (C++
 * without parameter lists, std::string for Ss; Rust's legacy _ZN...E and
 * v0 _R... names without their hashes), else OCaml's (ocaml_name); others
 * as they are. The result lives until the next call. */
static const char *perf_name(const char *name)
{
	static char *buf;
	static size_t cap;
	char *d = NULL;
	if (name[0] == '_' && (name[1] == 'Z' || name[1] == 'R'))
		d = cplus_demangle(name, DMGL_NO_OPTS);
	/* what cplus_demangle's auto style leaves is no C++ or Rust name */
	if (!d && strncmp(name, "caml", 4))
		return name;
	size_t n = strlen(d ? d : name) + 1;
	if (n > cap) {
		char *b = realloc(buf, n);
		if (!b) {
			free(d);
			return name;
		}
		buf = b;
		cap = n;
	}
	if (d) {
		memcpy(buf, d, n);
		free(d);
		return buf;
	}
	return ocaml_name(name, buf) ? buf : name;
}

int symbolize_pc(struct proc *p, u64 pc, const struct map *m, u64 *addr,
		 const char **sym, u64 *off)
{
	*sym = NULL;
	*off = 0;
	if (perfmap_is_path(m->path)) {
		/* JIT code: its run-time address, as perf's map of it is
		 * the identity */
		u64 start;
		*addr = pc;
		if (perfmap_lookup(m->path, pc, sym, &start))
			*off = pc - start;
		return 0;
	}
	const struct elfinfo *e = elfinfo(m->path);
	if (!e->ok)
		return -1;
	/* perf's address of a pc is its offset in the file, whatever the
	 * ELF type: perf 6.1 moves every symbol of an ET_EXEC, ET_DYN or
	 * ET_REL file by its segment's p_vaddr - p_offset
	 * (symbol-elf.c, elf__needs_adjust_symbols). GNU ld lays text out
	 * at vaddr == offset, so only lld's layouts (Rust programs, clang
	 * -fuse-ld=lld) show the difference. elf.to_link_address takes it
	 * back for the lines. */
	*addr = pc - m->start + m->pgoff;
	struct unw *u = unw_of(p);
	Dwfl_Module *mod = u ? dwfl_addrmodule(u->dwfl, pc) : NULL;
	if (mod) {
		GElf_Off so;
		const char *name = symtab_addrinfo(mod, pc, &so);
		if (name) {
			*sym = perf_name(name);
			*off = so;
		}
	}
	return 0;
}
