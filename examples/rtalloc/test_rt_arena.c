/* test_rt_arena.c - tests of the reference arena allocator, and of the
 * committed-bytes probes of both reference allocators, without perf.
 *
 * The probes' enabled paths are checked by raising the semaphores from the
 * program itself (perf is not needed for that: the probe is a nop then)
 * and reading the end-to-end counts rt:exit would report (rt_exit.h).
 * Prints "rt_arena: N passed, M failed" and exits non-zero if M > 0.
 */
#include "rt_alloc.h"
#include "rt_arena.h"
#include "rt_probes.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define NBLOCKS 3000

static void fill(void *p, size_t n, unsigned seed)
{
    memset(p, (int)(seed & 0xff), n);
}

static int intact(const void *p, size_t n, unsigned seed)
{
    const unsigned char *b = p;
    size_t i;
    for (i = 0; i < n; i++)
        if (b[i] != (unsigned char)(seed & 0xff))
            return 0;
    return 1;
}

static size_t size_of(unsigned i)
{
    /* mostly small, some larger than a chunk of 16 KiB */
    return i % 97 == 0 ? (size_t)20000 + i : (size_t)(i * 37 % 1500);
}

/* Blocks are aligned, usable and disjoint: each keeps its own contents
 * while the others are written, across many chunks. */
static void test_blocks(size_t chunk)
{
    static void *p[NBLOCKS];
    rt_arena *a = rt_arena_new(chunk);
    unsigned i, ok_align = 1, ok_data = 1, ok_nonnull = 1;

    CHECK(a != NULL);
    if (!a)
        return;
    for (i = 0; i < NBLOCKS; i++) {
        p[i] = rt_arena_alloc(a, size_of(i), i % 5);
        if (!p[i]) {
            ok_nonnull = 0;
            continue;
        }
        ok_align &= ((uintptr_t)p[i] & 15) == 0;
        fill(p[i], size_of(i), i);
    }
    for (i = 0; i < NBLOCKS; i++)
        if (p[i])
            ok_data &= intact(p[i], size_of(i), i);
    CHECK(ok_nonnull);
    CHECK(ok_align);
    CHECK(ok_data);
    /* size 0: a unique block each time */
    {
        void *z1 = rt_arena_alloc(a, 0, 0), *z2 = rt_arena_alloc(a, 0, 0);
        CHECK(z1 && z2 && z1 != z2);
    }
    CHECK(rt_arena_alloc(a, (size_t)-1, 0) == NULL); /* absurd size */
    rt_arena_release(a);
    rt_arena_release(NULL);
}

static void reset_counts(void)
{
    int i;
    for (i = 0; i < RT__FIRED_KINDS; i++)
        rt__fired[i] = 0;
}

/* With the semaphores raised, the events are the ones rt_arena.h lists:
 * k blocks larger than the chunk need k chunks of their own besides the
 * first, so 1 + k commits, 1 + k releases and 1 + k decommits. */
static void test_events(void)
{
    const unsigned k = 7, small = 5;
    unsigned i;
    rt_arena *a;

    reset_counts();
    rt_alloc_semaphore = rt_release_semaphore = 1;
    rt_commit_semaphore = rt_decommit_semaphore = 1;
    a = rt_arena_new(16384);
    CHECK(a != NULL);
    if (!a)
        return;
    CHECK(rt__fired[RT__FIRED_COMMIT] == 1);
    for (i = 0; i < small; i++)
        CHECK(rt_arena_alloc(a, 100, 1) != NULL); /* fits the first chunk */
    for (i = 0; i < k; i++)
        CHECK(rt_arena_alloc(a, 16384, 2) != NULL); /* > chunk - header */
    CHECK(rt__fired[RT__FIRED_ALLOC] == small + k);
    CHECK(rt__fired[RT__FIRED_COMMIT] == 1 + k);
    CHECK(rt__fired[RT__FIRED_RELEASE] == 0);
    rt_arena_release(a);
    CHECK(rt__fired[RT__FIRED_RELEASE] == 1 + k);
    CHECK(rt__fired[RT__FIRED_COMMIT] == 2 * (1 + k)); /* + decommits */
    CHECK(rt__fired[RT__FIRED_FREE] == 0); /* no per-block free */

    /* rt_alloc: a large block is a mapping of its own, committed by
     * rt_alloc and decommitted by rt_free; small ones add nothing once
     * their chunk exists. */
    {
        void *warm = rt_alloc(64, 1), *big;
        unsigned long long before = rt__fired[RT__FIRED_COMMIT];
        big = rt_alloc(100000, 1);
        CHECK(big != NULL);
        CHECK(rt__fired[RT__FIRED_COMMIT] == before + 1);
        rt_free(big);
        CHECK(rt__fired[RT__FIRED_COMMIT] == before + 2);
        rt_free(warm);
        CHECK(rt__fired[RT__FIRED_COMMIT] == before + 2);
    }
    rt_alloc_semaphore = rt_release_semaphore = 0;
    rt_commit_semaphore = rt_decommit_semaphore = 0;

    /* Down again: nothing is counted. */
    reset_counts();
    a = rt_arena_new(0);
    CHECK(rt_arena_alloc(a, 10, 0) != NULL);
    rt_arena_release(a);
    for (i = 0; i < RT__FIRED_KINDS; i++)
        CHECK(rt__fired[i] == 0);
}

/* Arenas of different threads are independent. */
static void *thread_main(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg, i, ok = 1;
    static __thread void *p[500];
    int round;

    for (round = 0; round < 20; round++) {
        rt_arena *a = rt_arena_new(4096);
        if (!a)
            return (void *)0;
        for (i = 0; i < 500; i++) {
            p[i] = rt_arena_alloc(a, 24 + i % 300, 0);
            if (!p[i])
                return (void *)0;
            fill(p[i], 24 + i % 300, seed + i);
        }
        for (i = 0; i < 500; i++)
            ok &= intact(p[i], 24 + i % 300, seed + i);
        rt_arena_release(a);
    }
    return (void *)(uintptr_t)ok;
}

static void test_threads(void)
{
    pthread_t t[4];
    void *ok;
    uintptr_t i;

    for (i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, thread_main, (void *)(i * 64)) == 0);
    for (i = 0; i < 4; i++) {
        pthread_join(t[i], &ok);
        CHECK(ok == (void *)1);
    }
}

int main(void)
{
    test_blocks(0);
    test_blocks(16384);
    test_blocks(1); /* the smallest: one page */
    test_events();
    test_threads();
    printf("rt_arena: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
