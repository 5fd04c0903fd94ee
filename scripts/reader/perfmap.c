/* perfmap.c - names for JIT code from /tmp/perf-PID.map, as perf gives
 * them.
 *
 * A runtime that compiles code while it runs (a JIT: LuaJIT, V8 with
 * --perf-basic-prof, a JVM with perf-map-agent) can write one line per
 * function it emits, "START SIZE NAME" in hex, to /tmp/perf-PID.map.
 * perf renames an executable mapping that has no file (//anon,
 * /dev/zero, /anon_hugepage, [stack, [heap], /SYSV: util/map.c,
 * map__new) to that file's path, and names the mapping's pcs from it
 * when it reports (dso__load_perf_map). The reader does the same:
 * main.c renames the mapping (perfmap_renamed), symbolize_pc
 * asks perfmap_lookup. The file is read once, when its first pc is
 * named, at report time as perf reads it; a missing file names nothing
 * ([unknown], as in perf). Unwinding stops at such a frame (no CFI:
 * unwind.c's frame_cb, cfi_cache.c), as perf's does. */
#include "reader.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct jitsym {
	u64 start, size;
	u64 line;               /* order in the file: later wins a tie */
	char *name;
};

struct perfmap {
	struct perfmap *next;
	const char *path;       /* interned (procs.c): compared by pointer */
	struct jitsym *syms;
	size_t n;
};

static struct perfmap *maps;

int perfmap_anon(const char *path)
{
	return !strcmp(path, "//anon") || !strncmp(path, "/dev/zero", 9) ||
	       !strncmp(path, "/anon_hugepage", 14) ||
	       !strncmp(path, "[stack", 6) || !strncmp(path, "/SYSV", 5) ||
	       !strcmp(path, "[heap]");
}

void perfmap_renamed(u32 pid, char *buf, size_t n)
{
	snprintf(buf, n, "/tmp/perf-%u.map", (unsigned)pid);
}

int perfmap_is_path(const char *path)
{
	unsigned pid;
	int end = 0;
	return sscanf(path, "/tmp/perf-%u.map%n", &pid, &end) == 1 &&
	       end > 0 && path[end] == '\0';
}

/* A hex number as perf's hex2u64 reads it (an 0x before it allowed):
 * the characters taken, 0 for none. */
static size_t hex(const char *s, u64 *v)
{
	size_t i = 0;
	*v = 0;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		i = 2;
	size_t digits = i;
	for (;; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9' ? c - '0' :
			c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			break;
		*v = *v << 4 | (u64)d;
	}
	return i > digits ? i : 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct jitsym *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Lines that are not "START SIZE NAME" are skipped, as perf skips
 * them. Out of memory: the symbols read so far. */
static void load(struct perfmap *pm)
{
	int fd = open(pm->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	FILE *f = NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    !(f = fdopen(fd, "r"))) {
		close(fd);
		return;
	}
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t len;
	u64 lineno = 0;
	while ((len = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (line[len - 1] == '\n')   /* the name keeps a '\r', */
			line[--len] = '\0';   /* as in perf */
		u64 start, size;
		size_t a = hex(line, &start);
		if (!a || line[a] != ' ')
			continue;
		size_t b = hex(line + a + 1, &size);
		if (!b || line[a + 1 + b] != ' ' || !line[a + 2 + b])
			continue;
		if (pm->n == alloc) {
			size_t more = alloc ? alloc * 2 : 256;
			struct jitsym *t = realloc(pm->syms,
						   more * sizeof(*t));
			if (!t)
				break;
			pm->syms = t;
			alloc = more;
		}
		char *name = strdup(line + a + 2 + b);
		if (!name)
			break;
		pm->syms[pm->n++] = (struct jitsym){ start, size, lineno,
						     name };
	}
	free(line);
	fclose(f);
	if (pm->n)
		qsort(pm->syms, pm->n, sizeof(*pm->syms), sym_cmp);
}

static struct perfmap *perfmap_of(const char *path)
{
	for (struct perfmap *pm = maps; pm; pm = pm->next)
		if (pm->path == path)
			return pm;
	struct perfmap *pm = calloc(1, sizeof(*pm));
	if (!pm)
		return NULL;
	pm->path = path;
	pm->next = maps;
	maps = pm;
	load(pm);
	return pm;
}

int perfmap_lookup(const char *path, u64 pc, const char **name, u64 *start)
{
	struct perfmap *pm = perfmap_of(path);
	if (!pm || !pm->n)
		return 0;
	/* the last symbol starting at or before pc (of equal starts, the
	 * line written last: the code the JIT put there most recently) */
	size_t lo = ranges_upto(pm->syms, pm->n, sizeof(*pm->syms), pc);
	/* it covers pc, or an earlier, longer one does (code replaced in
	 * part); a size of 0 covers its start alone, as in perf's
	 * symbols__find */
	for (size_t i = lo, k = 0; i > 0 && k < 64; i--, k++) {
		const struct jitsym *s = &pm->syms[i - 1];
		u64 end = s->size ? s->start + s->size : s->start + 1;
		if (pc < end && end > s->start) {
			*name = s->name;
			*start = s->start;
			return 1;
		}
	}
	return 0;
}
