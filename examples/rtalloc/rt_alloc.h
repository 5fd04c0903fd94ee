/* rt_alloc.h - reference allocator for allocsites: an mmap-backed
 * size-class allocator annotated with the rt:alloc / rt:free USDT probes of
 * include/rt_probes.h. Copy it as a template for your own runtime.
 *
 *   rt_alloc(size, tag)        new block of at least `size` bytes, 16-byte
 *                              aligned, or NULL if mmap fails. size 0 gives
 *                              a unique minimum block (like malloc(0)).
 *   rt_free(ptr)               releases a block; rt_free(NULL) does nothing.
 *   rt_realloc(ptr, size, tag) resizes, keeping min(old, new) bytes:
 *                              ptr == NULL   -> same as rt_alloc(size, tag)
 *                              size == 0     -> frees ptr, returns NULL
 *                              failure       -> NULL, ptr untouched
 *                              The block takes the new tag. It stays
 *                              in place if the new size needs the same
 *                              size class (large: the same page count).
 *   rt_usable_size(ptr)        bytes usable at ptr (>= the requested size).
 *
 * Probe events (what a profiler sees):
 *   rt_alloc         rt:alloc(ptr, requested size, tag)
 *   rt_free          rt:free(ptr, requested size, tag of the block)
 *   rt_realloc       rt:free(old, old size, old tag), then
 *                    rt:alloc(new, new size, new tag) -- always both, also
 *                    when the block is resized in place (new == old).
 *                    ptr == NULL: only rt:alloc. size == 0: only rt:free.
 *                    Failure: no event.
 *   rt:commit(p, len) after every mmap (a 1 MiB chunk of small blocks, or
 *   a large block's mapping), rt:decommit(p, len) before every munmap (a
 *   large block freed or moved).
 *
 * Arenas that release all their blocks at once: rt_arena.h.
 *
 * Thread-safe. Never calls malloc.
 */
#ifndef RT_ALLOC_H
#define RT_ALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void *rt_alloc(size_t size, unsigned tag);
void rt_free(void *ptr);
void *rt_realloc(void *ptr, size_t size, unsigned tag);
size_t rt_usable_size(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* RT_ALLOC_H */
