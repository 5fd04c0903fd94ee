/* d_liballoc.c - libd_alloc.so of the differential corpus: the
 * allocator (examples/rtalloc/rt_alloc.c is linked into the same
 * library) behind a small recursive helper, so that the probe fires in
 * a shared library a few frames below the program's code. */
#include <stddef.h>

#include "rt_alloc.h"

void *d_alloc_chain(int n, size_t size, unsigned tag);

__attribute__((noinline)) void *d_alloc_chain(int n, size_t size,
                                              unsigned tag)
{
    void *p;

    if (n <= 0)
        return rt_alloc(size, tag);
    p = d_alloc_chain(n - 1, size + 8, tag);
    /* not a tail call: the frame stays */
    ((volatile char *)p)[0] = (char)n;
    return p;
}
