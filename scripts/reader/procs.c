/* procs.c - the processes of a recording and what each has mapped
 * executable, from MMAP2 / MMAP, FORK, COMM (exec) records. A new
 * mapping replaces whatever it overlaps, as the kernel's does (and
 * perf's maps__fixup_overlappings). Paths are interned: one copy each. */
#include "reader.h"

#include <stdlib.h>
#include <string.h>

struct proc {
	u32 pid;
	struct map *maps;       /* sorted by start, not overlapping */
	size_t n, cap;
	unsigned generation;    /* bumped when the maps change */
	void *unwind;           /* unwind.c's state for this process */
	struct proc *next;
};

#define NBUCKETS 4096
/* A process's mappings kept at most: a real one has hundreds, a hostile
 * recording can name millions (each costs memory and a libdw module). */
#define MAX_MAPS 65536
/* And all processes' together (each FORK copies its parent's: 20,000
 * FORK records after 8,000 mappings asked for 5 GB): 128 MiB of maps. */
#define MAX_ALL_MAPS ((size_t)1 << 22)
static size_t all_maps;         /* the capacity of every process's maps */
static struct proc *buckets[NBUCKETS];

struct path { struct path *next; char s[]; };
static struct path *paths[NBUCKETS];

static unsigned hash_str(const char *s)
{
	unsigned h = 5381;
	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static const char *intern(const char *s)
{
	unsigned b = hash_str(s) % NBUCKETS;
	for (struct path *p = paths[b]; p; p = p->next)
		if (!strcmp(p->s, s))
			return p->s;
	size_t n = strlen(s);
	struct path *p = malloc(sizeof(*p) + n + 1);
	if (!p)
		return NULL;
	memcpy(p->s, s, n + 1);
	p->next = paths[b];
	paths[b] = p;
	return p->s;
}

struct proc *proc_find(u32 pid)
{
	for (struct proc *p = buckets[pid % NBUCKETS]; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

struct proc *proc_get(u32 pid)
{
	struct proc *p = proc_find(pid);
	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->next = buckets[pid % NBUCKETS];
	buckets[pid % NBUCKETS] = p;
	return p;
}

static int insert_at(struct proc *p, size_t i, struct map m)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 32;
		if (all_maps + (cap - p->cap) > MAX_ALL_MAPS)
			return -1;
		struct map *maps = realloc(p->maps, cap * sizeof(*maps));
		if (!maps)
			return -1;
		all_maps += cap - p->cap;
		p->maps = maps;
		p->cap = cap;
	}
	if (p->n > i)
		memmove(p->maps + i + 1, p->maps + i,
			(p->n - i) * sizeof(*p->maps));
	p->maps[i] = m;
	p->n++;
	return 0;
}

int proc_mmap(u32 pid, u64 start, u64 len, u64 pgoff, const char *path)
{
	struct proc *p = proc_get(pid);
	const char *name = intern(path);
	if (!p || !name)
		return -1;
	u64 end = start + len;   /* main.c refuses a range that wraps */
	int rc = 0;
	/* cut what the new mapping overlaps */
	for (size_t i = 0; i < p->n;) {
		struct map *m = &p->maps[i];
		if (m->end <= start || m->start >= end) {
			i++;
			continue;
		}
		struct map left = *m, right = *m;
		int keep_left = m->start < start, keep_right = m->end > end;
		memmove(p->maps + i, p->maps + i + 1,
			(p->n - i - 1) * sizeof(*p->maps));
		p->n--;
		if (keep_right) {
			right.pgoff += end - right.start;
			right.start = end;
			rc |= insert_at(p, i, right);
		}
		if (keep_left) {
			left.end = start;
			rc |= insert_at(p, i, left);
			i++;
		}
		if (keep_right)
			i++;
	}
	size_t i = 0;
	while (i < p->n && p->maps[i].start < start)
		i++;
	struct map m = { start, end, pgoff, name };
	p->generation++;
	if (p->n >= MAX_MAPS)
		return -1;
	return rc | insert_at(p, i, m);
}

int proc_fork(u32 pid, u32 ppid)
{
	if (pid == ppid)
		return 0;       /* a new thread */
	struct proc *parent = proc_find(ppid), *child = proc_get(pid);
	if (!child)
		return -1;
	child->n = 0;
	child->generation++;
	if (!parent || parent == child)
		return 0;
	for (size_t i = 0; i < parent->n; i++)
		if (insert_at(child, child->n, parent->maps[i]))
			return -1;
	return 0;
}

void proc_exec(u32 pid)
{
	struct proc *p = proc_get(pid);
	if (!p)
		return;
	p->n = 0;
	p->generation++;
}

const struct map *proc_map_at(struct proc *p, u64 addr)
{
	size_t lo = 0, hi = p->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->n && p->maps[lo].start <= addr && addr < p->maps[lo].end)
		return &p->maps[lo];
	return NULL;
}

u32 proc_pid(const struct proc *p) { return p->pid; }
unsigned proc_generation(const struct proc *p) { return p->generation; }
void **proc_unwind_slot(struct proc *p) { return &p->unwind; }

const struct map *proc_maps(const struct proc *p, size_t *n)
{
	*n = p->n;
	return p->maps;
}
