/* rt_arena.h - reference arena (region) allocator for allocsites: blocks
 * carved from mmap-backed chunks and released all at once, annotated with
 * the probes of include/rt_probes.h. Copy it as a template for an arena of
 * your own (docs/probes.md, "Arenas").
 *
 *   rt_arena_new(chunk)          a new, empty arena whose chunks are at
 *                                least `chunk` bytes (0: 64 KiB); NULL if
 *                                mmap fails.
 *   rt_arena_alloc(a, size, tag) a block of `size` bytes, 16-byte aligned,
 *                                valid until the arena is released; NULL
 *                                if mmap fails. A block larger than the
 *                                chunk size gets a chunk of its own. size
 *                                0 gives a unique minimum block.
 *   rt_arena_release(a)          frees every block and the arena itself;
 *                                NULL does nothing.
 *
 * An arena is not thread-safe: one thread at a time may use it (several
 * arenas may be used by several threads at once).
 *
 * Probe events:
 *   rt_arena_new      rt:commit(chunk, chunk length)
 *   rt_arena_alloc    rt:alloc(ptr, size, tag); rt:commit(chunk, length)
 *                     first when it maps a new chunk; none if it fails
 *   rt_arena_release  per chunk: rt:release(chunk, chunk length), then
 *                     rt:decommit(chunk, chunk length)
 * No rt:free: a block dies with its chunk's rt:release.
 *
 * Never calls malloc.
 */
#ifndef RT_ARENA_H
#define RT_ARENA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_arena rt_arena;

rt_arena *rt_arena_new(size_t chunk);
void *rt_arena_alloc(rt_arena *a, size_t size, unsigned tag);
void rt_arena_release(rt_arena *a);

#ifdef __cplusplus
}
#endif

#endif /* RT_ARENA_H */
