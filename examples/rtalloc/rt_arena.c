/* rt_arena.c - reference arena allocator (API, events: rt_arena.h).
 *
 * Layout. An arena is a list of chunks, each one mapping that starts with
 * a chunk header; the first chunk also holds the arena itself, so no
 * memory comes from anywhere but mmap:
 *
 *     first chunk: [ chunk | rt_arena | blocks ...          ]
 *     others:      [ chunk | blocks ...                      ]
 *
 * Blocks are carved upwards from the newest chunk (a bump pointer), each
 * rounded up to 16 bytes; they carry no header (the arena frees nothing
 * one by one). A block that does not fit in the rest of the newest chunk
 * starts a new chunk of max(chunk size, header + block) bytes; the rest of
 * the old one is left unused.
 *
 * The probes follow docs/probes.md: rt:alloc in rt_arena_alloc's own body
 * (the call site is its caller), the chunk's mapping as committed bytes,
 * and one rt:release per chunk, before it is unmapped: the report frees
 * every block in it at once.
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1
#endif
#include "rt_arena.h"
#include "rt_probes.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define ALIGN 16
#define DEFAULT_CHUNK ((size_t)64 << 10)

struct chunk {
    struct chunk *next; /* the next older chunk */
    size_t len;         /* length of this mapping */
};

struct rt_arena {
    struct chunk *chunks; /* newest first */
    char *bump;           /* free rest of the newest chunk: */
    size_t left;          /* its address and length */
    size_t chunk;         /* chunk size (a page multiple) */
};

#define CHUNK_HDR ((sizeof(struct chunk) + ALIGN - 1) & ~(size_t)(ALIGN - 1))
#define ARENA_HDR ((sizeof(struct rt_arena) + ALIGN - 1) & ~(size_t)(ALIGN - 1))

static size_t page_round(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (n > SIZE_MAX - page)
        return 0;
    return (n + page - 1) & ~(page - 1);
}

/* A new chunk of len bytes (a page multiple), its header filled in;
 * NULL if mmap fails. Fires rt:commit: committed bytes are per mapping. */
static struct chunk *map_chunk(size_t len)
{
    struct chunk *c = (struct chunk *)mmap(NULL, len, PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c == MAP_FAILED)
        return NULL;
    RT_COMMIT(c, len);
    c->next = NULL;
    c->len = len;
    return c;
}

rt_arena *rt_arena_new(size_t chunk)
{
    struct chunk *c;
    rt_arena *a;

    chunk = page_round(chunk ? chunk : DEFAULT_CHUNK);
    if (chunk < CHUNK_HDR + ARENA_HDR + ALIGN)
        chunk = page_round(CHUNK_HDR + ARENA_HDR + ALIGN);
    c = map_chunk(chunk);
    if (!c)
        return NULL;
    a = (rt_arena *)((char *)c + CHUNK_HDR);
    a->chunks = c;
    a->bump = (char *)c + CHUNK_HDR + ARENA_HDR;
    a->left = chunk - CHUNK_HDR - ARENA_HDR;
    a->chunk = chunk;
    return a;
}

/* The slow path, out of line: a new chunk for a block of n bytes (n a
 * multiple of 16) that does not fit. 0 if out of memory. */
static __attribute__((noinline)) int grow(rt_arena *a, size_t n)
{
    size_t len = a->chunk;
    struct chunk *c;

    if (n > len - CHUNK_HDR) {
        len = n > SIZE_MAX - CHUNK_HDR ? 0 : page_round(CHUNK_HDR + n);
        if (len == 0)
            return 0;
    }
    c = map_chunk(len);
    if (!c)
        return 0;
    c->next = a->chunks;
    a->chunks = c;
    a->bump = (char *)c + CHUNK_HDR;
    a->left = len - CHUNK_HDR;
    return 1;
}

void *rt_arena_alloc(rt_arena *a, size_t size, unsigned tag)
{
    size_t n = size ? (size + ALIGN - 1) & ~(size_t)(ALIGN - 1) : ALIGN;
    void *p;

    if (n < size) /* size rounded past SIZE_MAX */
        return NULL;
    if (n > a->left && !grow(a, n))
        return NULL;
    p = a->bump;
    a->bump += n;
    a->left -= n;
    /* After the block exists, as in rt_alloc; a failure fires nothing. */
    RT_ALLOC(p, size, tag);
    return p;
}

void rt_arena_release(rt_arena *a)
{
    struct chunk *c, *next;

    if (!a)
        return;
    /* The arena lives in its oldest chunk: read the list first. Each
     * chunk's rt:release comes before its munmap, since once unmapped the
     * range can be mapped again and carry new blocks (docs/probes.md). */
    for (c = a->chunks; c; c = next) {
        size_t len = c->len;
        next = c->next;
        RT_RELEASE(c, len);
        RT_DECOMMIT(c, len);
        munmap(c, len);
    }
}
