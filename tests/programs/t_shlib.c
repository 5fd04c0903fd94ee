/* t_shlib: the allocator (and its probes) live in librtalloc.so; tag names
 * are given here, in the executable. */
#include <stdlib.h>

#include "rt_alloc.h"
#include "rt_probes.h"
#include "truth.h"

RT_TAG_NAME(4, "strings");

static const char *tag_name(unsigned tag) { return tag == 4 ? "strings" : NULL; }

/* Not `return ALLOC(...)`: that compiles to a tail call (jmp rt_alloc),
 * make's frame is gone at the probe and the allocation is charged to
 * main (docs/design.md, "Tail calls"). */
static __attribute__((noinline)) void *make(size_t n)
{
    char *p = ALLOC(n, 4);
    p[0] = 1;
    return p;
}

int main(int argc, char **argv)
{
    int i, n = argc > 1 ? atoi(argv[1]) : 2000;
    truth_init(argc, argv, tag_name);
    for (i = 0; i < n; i++) {
        void *p = make((size_t)i % 300 + 1);
        void *q = ALLOC(24, 5);
        rt_free(p);
        rt_free(q);
    }
    return 0;
}
