/* table.c - u64 -> u64 hash map: open addressing, linear probing,
 * deletion by backward shift (no tombstones, so a long run of puts and
 * deletes, a process's granules or a run's threads, never degrades). */
#include "sweep.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *die_prefix = "allocsites-sweep";

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", die_prefix);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

static u64 home(const struct u64map *m, u64 key)
{
	return (key * 0x9E3779B97F4A7C15ull) >> (64 - m->bits);
}

u64 *u64map_get(const struct u64map *m, u64 key)
{
	u64 i, mask = m->cap - 1;

	if (!m->cap)
		return NULL;
	for (i = home(m, key); m->used[i]; i = (i + 1) & mask)
		if (m->keys[i] == key)
			return &m->vals[i];
	return NULL;
}

static void grow(struct u64map *m)
{
	struct u64map old = *m;
	u64 i;

	m->bits = old.cap ? old.bits + 1 : 4;
	m->cap = 1ull << m->bits;
	m->keys = xmalloc(m->cap * sizeof *m->keys);
	m->vals = xmalloc(m->cap * sizeof *m->vals);
	m->used = xcalloc(m->cap, 1);
	m->n = 0;
	for (i = 0; i < old.cap; i++)
		if (old.used[i]) {
			int fresh;
			*u64map_put(m, old.keys[i], &fresh) = old.vals[i];
		}
	free(old.keys);
	free(old.vals);
	free(old.used);
}

u64 *u64map_put(struct u64map *m, u64 key, int *fresh)
{
	u64 i, mask;

	if ((m->n + 1) * 4 > m->cap * 3)   /* load at most 3/4 */
		grow(m);
	mask = m->cap - 1;
	for (i = home(m, key); m->used[i]; i = (i + 1) & mask)
		if (m->keys[i] == key) {
			*fresh = 0;
			return &m->vals[i];
		}
	m->used[i] = 1;
	m->keys[i] = key;
	m->vals[i] = 0;
	m->n++;
	*fresh = 1;
	return &m->vals[i];
}

void u64map_del(struct u64map *m, u64 key)
{
	u64 i, j, h, mask = m->cap - 1;

	if (!m->cap)
		return;
	for (i = home(m, key); m->used[i]; i = (i + 1) & mask)
		if (m->keys[i] == key)
			break;
	if (!m->used[i])
		return;
	/* Shift back every later entry of the cluster whose home is not in
	 * (i, j]: the probe from its home would otherwise stop at i. */
	for (j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
		h = home(m, m->keys[j]);
		if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->used[i] = 0;
	m->n--;
}

void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof *m);
}
