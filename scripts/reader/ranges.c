/* ranges.c - an array of ranges sorted by their start, and the ones that
 * contain a point: lines.c's functions, symtab.c's symbols, perfmap.c's
 * JIT code. An element's first field is its start (a u64); its end, one
 * past it, is a u64 at end_off. Ranges may nest or overlap, so the ones
 * that contain x are among those before ranges_upto(x), and walking back
 * from there may stop once reach[i - 1] <= x: nothing before i ends
 * after x. */
#include "reader.h"

#include <stdlib.h>
#include <string.h>

static u64 field(const void *base, size_t i, size_t stride, size_t off)
{
	u64 v;
	memcpy(&v, (const char *)base + i * stride + off, sizeof(v));
	return v;
}

size_t ranges_upto(const void *base, size_t n, size_t stride, u64 x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (field(base, mid, stride, 0) <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

u64 *ranges_reach(const void *base, size_t n, size_t stride, size_t end_off)
{
	u64 *reach = malloc((n ? n : 1) * sizeof(*reach));
	if (!reach)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		u64 end = field(base, i, stride, end_off);
		reach[i] = i && reach[i - 1] > end ? reach[i - 1] : end;
	}
	return reach;
}
