/* rt_alloc.c - reference allocator for allocsites (API, events: rt_alloc.h).
 *
 * Block layout. Every block starts with a 16-byte header; the caller gets
 * the address just after it, which is 16-byte aligned:
 *
 *     [ size (8) | tag (4) | class (4) ][ payload ... ]
 *                                       ^ pointer returned by rt_alloc
 *
 * Small blocks (size <= 4096) come in 9 classes of payload 16, 32, ...,
 * 4096 bytes. They are carved from 1 MiB chunks obtained with mmap and are
 * never given back to the system: a freed block goes on a free list of its
 * class. Large blocks (size > 4096) get their own mapping, header at its
 * start, and rt_free unmaps them. Every mapping fires rt:commit and every
 * munmap rt:decommit: the committed bytes a report shows beside live
 * bytes (the chunks' free blocks are the difference).
 *
 * Threads. Each thread keeps its own free lists (no locking). A thread whose
 * list is empty takes up to BATCH blocks from the shared pool, which carves
 * new ones from the current chunk when it has none; a thread whose list grows
 * past 2 * BATCH gives BATCH back; a thread that exits gives all back. Only
 * these batch moves take the pool's lock.
 *
 * Build: needs _DEFAULT_SOURCE (for MAP_ANONYMOUS), defined below if the
 * command line does not; link with -pthread.
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1
#endif
#include "rt_alloc.h"
#include "rt_probes.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HDR 16                          /* header size = alignment */
#define NCLASS 9                        /* payloads 16 << 0 .. 16 << 8 */
#define MAX_SMALL ((size_t)16 << (NCLASS - 1))
#define LARGE NCLASS                    /* class of a large block */
#define CHUNK ((size_t)1 << 20)
#define BATCH 32

struct hdr {
    uint64_t size; /* requested size: reported by rt:free */
    uint32_t tag;  /* the block's tag: reported by rt:free */
    uint32_t cls;  /* size class, or LARGE */
};
typedef char hdr_is_16_bytes[sizeof(struct hdr) == HDR ? 1 : -1];

/* A free small block: the list link lives in the unused payload. */
struct free_block {
    struct hdr h;
    struct free_block *next;
};

struct cache { /* one per thread */
    struct free_block *head[NCLASS];
    unsigned count[NCLASS];
    int registered; /* thread_exit will run when the thread exits */
};
static __thread struct cache tcache;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct free_block *pool_head[NCLASS]; /* shared free lists */
static char *pool_bump;                      /* uncarved rest of the chunk: */
static size_t pool_left;                     /* its address and length */

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static unsigned class_of(size_t size)
{
    if (size <= 16)
        return 0;
    if (size > MAX_SMALL)
        return LARGE;
    /* ceil(log2(size)) - 4 */
    return (unsigned)(64 - __builtin_clzll((unsigned long long)size - 1)) - 4;
}

/* Length of a large block's mapping; 0 if size is absurd. */
static size_t large_len(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    if (size > SIZE_MAX / 2)
        return 0;
    return (size + HDR + page - 1) & ~(page - 1);
}

/* Memory from and back to the system, the allocator's committed bytes:
 * rt:commit after each mapping, rt:decommit before each munmap (no call
 * graph, so where they fire does not matter; out of line, off the hot
 * paths). */
static __attribute__((noinline)) void *map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    RT_COMMIT(p, len);
    return p;
}

static __attribute__((noinline)) void unmap(void *p, size_t len)
{
    RT_DECOMMIT(p, len);
    munmap(p, len);
}

/* Moves up to n blocks of class c from a thread's cache to the pool.
 * The caller holds pool_lock. */
static void give_back(struct cache *tc, unsigned c, unsigned n)
{
    while (n-- > 0 && tc->head[c]) {
        struct free_block *b = tc->head[c];
        tc->head[c] = b->next;
        tc->count[c]--;
        b->next = pool_head[c];
        pool_head[c] = b;
    }
}

static void thread_exit(void *arg)
{
    struct cache *tc = arg;
    unsigned c;

    pthread_mutex_lock(&pool_lock);
    for (c = 0; c < NCLASS; c++)
        give_back(tc, c, UINT_MAX);
    pthread_mutex_unlock(&pool_lock);
    tc->registered = 0;
}

static void make_exit_key(void)
{
    pthread_key_create(&exit_key, thread_exit);
}

static struct cache *my_cache(void)
{
    struct cache *tc = &tcache;

    if (!tc->registered) {
        pthread_once(&exit_once, make_exit_key);
        pthread_setspecific(exit_key, tc);
        tc->registered = 1;
    }
    return tc;
}

/* Fills the thread's empty list of class c with up to BATCH blocks: from
 * the pool's list, else carved from the chunk. 0 if out of memory. */
static int refill(struct cache *tc, unsigned c)
{
    size_t stride = HDR + ((size_t)16 << c);
    unsigned n = 0;

    pthread_mutex_lock(&pool_lock);
    while (n < BATCH && pool_head[c]) {
        struct free_block *b = pool_head[c];
        pool_head[c] = b->next;
        b->next = tc->head[c];
        tc->head[c] = b;
        n++;
    }
    if (n == 0 && pool_left < stride) {
        char *chunk = map(CHUNK);
        if (!chunk) {
            pthread_mutex_unlock(&pool_lock);
            return 0;
        }
        pool_bump = chunk; /* the old chunk's rest (< stride) is lost */
        pool_left = CHUNK;
    }
    while (n < BATCH && pool_left >= stride) {
        struct free_block *b = (struct free_block *)pool_bump;
        pool_bump += stride;
        pool_left -= stride;
        b->h.cls = c;
        b->next = tc->head[c];
        tc->head[c] = b;
        n++;
    }
    tc->count[c] += n;
    pthread_mutex_unlock(&pool_lock);
    return 1;
}

/* Gets a block and fills its header; NULL if out of memory. No probe
 * here: see "The probes" below. Inlined into the public functions so that
 * the probe's arguments are still in registers where it fires: as a call,
 * size and tag would have to be saved across it, and the probe would cost
 * 9 instructions per event instead of 2 when off (bench/offcost_callgrind.py).
 * The slow paths (refill, map) stay out of line. */
static inline __attribute__((always_inline)) void *alloc_block(size_t size,
                                                               unsigned tag)
{
    unsigned c = class_of(size);
    struct hdr *h;

    if (c == LARGE) {
        size_t len = large_len(size);
        if (len == 0 || (h = map(len)) == NULL)
            return NULL;
    } else {
        struct cache *tc = my_cache();
        if (!tc->head[c] && !refill(tc, c))
            return NULL;
        h = &tc->head[c]->h;
        tc->head[c] = tc->head[c]->next;
        tc->count[c]--;
    }
    h->size = size;
    h->tag = tag;
    h->cls = c;
    return h + 1;
}

/* Returns a block to the thread's cache, or unmaps it. No probe here.
 * Inlined for the same reason as alloc_block. */
static inline __attribute__((always_inline)) void release_block(struct hdr *h)
{
    unsigned c = h->cls;
    struct cache *tc;
    struct free_block *b = (struct free_block *)h;

    if (c == LARGE) {
        unmap(h, large_len(h->size));
        return;
    }
    tc = my_cache();
    b->next = tc->head[c];
    tc->head[c] = b;
    if (++tc->count[c] > 2 * BATCH) {
        pthread_mutex_lock(&pool_lock);
        give_back(tc, c, BATCH);
        pthread_mutex_unlock(&pool_lock);
    }
}

/* Can the block take the new size without moving? Same class, and for a
 * large block the same mapping length. */
static int fits_in_place(const struct hdr *h, size_t size)
{
    return class_of(size) == h->cls &&
           (h->cls != LARGE || large_len(size) == large_len(h->size));
}

/* The probes.
 *
 * The profiler charges an event to the first stack frame outside the
 * function that fires it: here, the caller of rt_alloc, rt_free or
 * rt_realloc, which is the call site we want. Hence two rules:
 *  - the probes are written in the bodies of the public functions, never
 *    in alloc_block / release_block (an event fired there would be charged
 *    to rt_alloc itself, whoever called it);
 *  - the public functions never call each other (rt_realloc calling
 *    rt_alloc would charge the allocation to rt_realloc). They share the
 *    probe-free helpers above instead.
 * When nothing records, a probe is a not-taken branch. */

void *rt_alloc(size_t size, unsigned tag)
{
    void *p = alloc_block(size, tag);

    /* After the block exists, so that the event has its address; a failed
     * allocation fires nothing. */
    if (p) {
        RT_ALLOC(p, size, tag);
    }
    return p;
}

void rt_free(void *ptr)
{
    struct hdr *h;

    if (!ptr)
        return;
    h = (struct hdr *)ptr - 1;
    /* Before the release: the header is still ours to read, and once the
     * block is released its address can be handed out again (to another
     * thread too), whose rt:alloc must come after this rt:free. */
    RT_FREE(ptr, h->size, h->tag);
    release_block(h);
}

void *rt_realloc(void *ptr, size_t size, unsigned tag)
{
    struct hdr *h;
    size_t old_size;
    unsigned old_tag;
    void *p;

    if (!ptr) { /* rt_alloc's body, repeated: not a call, see above */
        p = alloc_block(size, tag);
        if (p) {
            RT_ALLOC(p, size, tag);
        }
        return p;
    }
    h = (struct hdr *)ptr - 1;
    old_size = h->size;
    old_tag = h->tag;
    if (size == 0) { /* rt_free's body */
        RT_FREE(ptr, old_size, old_tag);
        release_block(h);
        return NULL;
    }
    if (fits_in_place(h, size)) {
        /* Same block, but the events are those of a move all the same
         * (free of the old size and tag, alloc of the new), so that the
         * profiler's books stay simple. */
        RT_FREE(ptr, old_size, old_tag);
        h->size = size;
        h->tag = tag;
        RT_ALLOC(ptr, size, tag);
        return ptr;
    }
    p = alloc_block(size, tag);
    if (!p)
        return NULL; /* ptr is still valid and no event was fired */
    memcpy(p, ptr, old_size < size ? old_size : size);
    RT_FREE(ptr, old_size, old_tag); /* before the release, as in rt_free */
    release_block(h);
    RT_ALLOC(p, size, tag);
    return p;
}

size_t rt_usable_size(void *ptr)
{
    const struct hdr *h;

    if (!ptr)
        return 0;
    h = (const struct hdr *)ptr - 1;
    return h->cls == LARGE ? large_len(h->size) - HDR : (size_t)16 << h->cls;
}
