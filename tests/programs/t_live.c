/* t_live: what is live when, and its truth (issue 12).
 *
 *   t_live
 *
 * Every site allocates one size, distinct from every other site's. In
 * order, one thread at a time (so the order perf records is the order
 * the truth notes, see truth.h):
 *   1. five temporaries: FREE(ALLOC(40)) (each free is the next event);
 *   2. a realloc chain: 96 bytes, then REALLOC to 1000, 2000, 3000, 4000
 *      in a row: each block but the last is freed by the next REALLOC
 *      right after it was allocated (temporary: 1 at the first site, 3 at
 *      the REALLOC's); the 4000 bytes leak;
 *   3. frees from another thread: main allocates six 72-byte blocks, a
 *      thread frees them (oldest first: the newest's free would be a
 *      temporary) and allocates three of 264 bytes, which main frees
 *      (two) or leaks (one) after joining it;
 *   4. an arena: five 160-byte blocks, released in bulk (RELEASE_ARENA,
 *      rt:release: no free per block), after a free of something else
 *      (so the release does not follow one of its blocks' allocation);
 *   5. a 777-byte leak, then the peak: a 50000-byte block, freed after
 *      another free (not a temporary);
 *   6. a fork: the child's truth is its own ($TRUTH_FILE.child): it frees
 *      a 264-byte block it inherited (an unmatched free: its process
 *      never allocated it), allocates three blocks of 120 and frees two,
 *      and makes one temporary of 24. The parent waits for it, with 5041
 *      bytes live: the child's peak added to that stays far below the
 *      parent's.
 * Expected, parent: peak 55305 bytes (5 blocks: 4000, 264 x 2, 777,
 * 50000), leaked 5041 (3 blocks: 4000, 264, 777), temporary 9,
 * unmatched frees [0, 0], released [5, 800]. Child: peak 360 (3 blocks
 * of 120), leaked 120 (1), temporary 1, unmatched frees [1, 264].
 * tests/unit/test_truth_live.py checks these. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_alloc.h"
#include "rt_arena.h"
#include "truth.h"

static void temporaries(void)
{
    int i;
    for (i = 0; i < 5; i++)
        FREE(ALLOC(40, 1));
}

static void *realloc_chain(void)
{
    void *buf = ALLOC(96, 2);
    int i;
    for (i = 1; i <= 4; i++)
        buf = REALLOC(buf, 1000 * (size_t)i, 2);
    return buf;
}

/* Frees main's blocks and allocates blocks main frees. */
static void *xs[6], *ys[3];

static void *other_thread(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < 6; i++)
        FREE(xs[i]);
    for (i = 0; i < 3; i++)
        ys[i] = ALLOC(264, 3);
    return NULL;
}

static int handoff(void)
{
    pthread_t t;
    int i;
    for (i = 0; i < 6; i++)
        xs[i] = ALLOC(72, 4);
    /* main waits in the join: one thread runs at a time */
    if (pthread_create(&t, NULL, other_thread, NULL))
        return -1;
    return pthread_join(t, NULL);
}

static void arena(void)
{
    rt_arena *a = rt_arena_new(0);
    int i;
    if (!a)
        abort();
    for (i = 0; i < 5; i++)
        (void)ARENA_ALLOC(a, 160, 5);
    FREE(ys[0]);
    RELEASE_ARENA(a);
}

static void peak(void)
{
    void *big;
    (void)ALLOC(777, 6); /* leaked */
    big = ALLOC(50000, 7);
    FREE(ys[1]);
    FREE(big);
}

static void child(void)
{
    void *c[3];
    int i;
    truth_forked_child();
    FREE(ys[2]); /* the parent's block: not this process's */
    for (i = 0; i < 3; i++)
        c[i] = ALLOC(120, 8);
    FREE(c[0]);
    FREE(c[1]);
    FREE(ALLOC(24, 9)); /* temporary; c[2] leaks */
    exit(0);
}

int main(int argc, char **argv)
{
    pid_t pid;
    int status;
    truth_init_live(argc, argv, NULL, NULL);
    temporaries();
    (void)realloc_chain(); /* leaked */
    if (handoff())
        return 1;
    arena();
    peak();
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0)
        child();
    if (waitpid(pid, &status, 0) != pid || status != 0)
        return 1;
    return 0;
}
