/* The reference allocator (examples/rtalloc/rt_alloc.c) with another
 * profiler's custom-allocator hooks where it has its probes, for
 * bench/compare.py: every tool sees the same events from the same place,
 * while the allocator the README tells people to copy carries no
 * benchmark code. Built with -DRT_PROBES_DISABLE and one of
 * -DRT_ALLOC_HEAPTRACK or -DRT_ALLOC_VALGRIND (rt_alloc_hooks.h). */
#include "rt_probes.h"
#include "rt_alloc_hooks.h"

/* rt_probes.h's include guard keeps these when rt_alloc.c includes it. */
#undef RT_ALLOC
#undef RT_FREE
#define RT_ALLOC(ptr, size, tag)                                              \
    do {                                                                      \
        (void)(tag);                                                          \
        RT_HOOK_ALLOC((ptr), (size));                                         \
    } while (0)
#define RT_FREE(ptr, size, tag)                                               \
    do {                                                                      \
        (void)(size);                                                         \
        (void)(tag);                                                          \
        RT_HOOK_FREE(ptr);                                                    \
    } while (0)

#include "../../examples/rtalloc/rt_alloc.c"
