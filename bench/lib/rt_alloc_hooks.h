/* rt_alloc_hooks.h - other profilers' custom-allocator interfaces, for
 * comparing them with allocsites on the same allocator (bench/compare.py).
 *
 * An allocator that bypasses malloc is invisible to heap profilers unless
 * it tells them about its blocks. Each tool has its own way;
 * rt_alloc_hooked.c puts RT_HOOK_ALLOC / RT_HOOK_FREE where the reference
 * allocator has its rt:alloc / rt:free probes, so every tool sees the same
 * events from the same place:
 *
 *   -DRT_ALLOC_HEAPTRACK   heaptrack_malloc / heaptrack_free, exported by
 *                          heaptrack's preload library (the pattern of
 *                          heaptrack's heaptrack_api.h, which Debian does
 *                          not ship). Weak: without heaptrack they are
 *                          NULL and cost a test.
 *   -DRT_ALLOC_VALGRIND    VALGRIND_MALLOCLIKE_BLOCK / _FREELIKE_BLOCK
 *                          (memcheck, massif; DHAT ignores them:
 *                          docs/benchmarks.md). A few instructions when not
 *                          under valgrind.
 *   neither                the hooks are empty.
 */
#ifndef RT_ALLOC_HOOKS_H
#define RT_ALLOC_HOOKS_H

#include <stddef.h>

#if defined(RT_ALLOC_HEAPTRACK)

void heaptrack_malloc(void *ptr, size_t size) __attribute__((weak));
void heaptrack_free(void *ptr) __attribute__((weak));
#define RT_HOOK_ALLOC(ptr, size)                                              \
    (heaptrack_malloc ? heaptrack_malloc((ptr), (size)) : (void)0)
#define RT_HOOK_FREE(ptr)                                                     \
    (heaptrack_free ? heaptrack_free(ptr) : (void)0)

#elif defined(RT_ALLOC_VALGRIND)

#include <valgrind/valgrind.h>
/* No redzones; rt_alloc does not zero. */
#define RT_HOOK_ALLOC(ptr, size) VALGRIND_MALLOCLIKE_BLOCK((ptr), (size), 0, 0)
#define RT_HOOK_FREE(ptr) VALGRIND_FREELIKE_BLOCK((ptr), 0)

#else

#define RT_HOOK_ALLOC(ptr, size) ((void)0)
#define RT_HOOK_FREE(ptr) ((void)0)

#endif

#endif /* RT_ALLOC_HOOKS_H */
