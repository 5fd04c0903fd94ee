/* test_rt_args.c - every probe macro evaluates each argument exactly once
 * when any of its events is recorded, and never when none is, in every
 * combination of recorded events (issue 22). No perf: the test raises the
 * semaphores itself, as the kernel does while perf records an event.
 * Built as C and as C++ (tests/Makefile.inc); run by
 * tests/unit/test_rt_args_c.py. Prints "rt_args: N passed, M failed". */
#include <stdio.h>
#include <stdlib.h>

#include "rt_probes.h"

static int passed, failed;
static unsigned evals[4];   /* the arguments' side effects */
static char block[64];

static void *P(void) { evals[0]++; return block; }
static void *O(void) { evals[1]++; return block + 16; }
static size_t S(void) { evals[2]++; return 24; }
static unsigned T(void) { evals[3]++; return 7; }

static void expect(const char *what, unsigned mask, unsigned want,
                   const char *combo)
{
    int i;
    for (i = 0; i < 4; i++) {
        if (!(mask & (1u << i)))
            continue;
        if (evals[i] == want) {
            passed++;
        } else {
            failed++;
            printf("FAIL %s with %s: argument %d evaluated %u times, "
                   "want %u\n", what, combo, i, evals[i], want);
        }
        evals[i] = 0;
    }
}

static void check_phase(const char *when, unsigned long long want)
{
    if (rt__phase_current() == want) {
        passed++;
    } else {
        failed++;
        printf("FAIL phase %s: %llu, want %llu\n", when,
               rt__phase_current(), want);
    }
}

int main(void)
{
    unsigned combo;
    char name[64];

    for (combo = 0; combo < 16; combo++) {
        int alloc = combo & 1, sample = (combo >> 1) & 1;
        int free_ = (combo >> 2) & 1, sample_free = (combo >> 3) & 1;
        snprintf(name, sizeof name, "alloc=%d sample=%d free=%d "
                 "sample_free=%d", alloc, sample, free_, sample_free);
        rt_alloc_semaphore = (unsigned short)alloc;
        rt_sample_semaphore = (unsigned short)sample;
        rt_free_semaphore = (unsigned short)free_;
        rt_sample_free_semaphore = (unsigned short)sample_free;

        RT_ALLOC(P(), S(), T());
        expect("RT_ALLOC", 0xd, (alloc || sample) ? 1 : 0, name);
        RT_FREE(P(), S(), T());
        expect("RT_FREE(p, size, tag)", 0xd,
               (free_ || sample_free) ? 1 : 0, name);
        RT_FREE(P());
        expect("RT_FREE(p)", 0x1, (free_ || sample_free) ? 1 : 0, name);
        RT_REALLOC(O(), P(), S(), T());
        expect("RT_REALLOC", 0xf,
               (alloc || sample || free_ || sample_free) ? 1 : 0, name);
        RT_RELEASE(P(), S());
        expect("RT_RELEASE", 0x5, (free_ || sample_free) ? 1 : 0, name);
    }
    rt_alloc_semaphore = rt_sample_semaphore = 0;
    rt_free_semaphore = rt_sample_free_semaphore = 0;

    rt_release_semaphore = 1;
    RT_RELEASE(P(), S());
    expect("RT_RELEASE", 0x5, 1, "release=1");
    rt_release_semaphore = 0;
    rt_commit_semaphore = 1;
    RT_COMMIT(P(), S());
    expect("RT_COMMIT", 0x5, 1, "commit=1");
    rt_commit_semaphore = 0;
    rt_decommit_semaphore = 1;
    RT_DECOMMIT(P(), S());
    expect("RT_DECOMMIT", 0x5, 1, "decommit=1");
    rt_decommit_semaphore = 0;
    rt_phase_begin_semaphore = rt_phase_end_semaphore = 1;
    RT_PHASE_BEGIN(T());
    RT_PHASE_END(T());
    expect("RT_PHASE_BEGIN and END", 0x8, 2, "phase_begin=phase_end=1");
    rt_phase_begin_semaphore = rt_phase_end_semaphore = 0;
    RT_COMMIT(P(), S());
    RT_PHASE_BEGIN(T());
    expect("off", 0xd, 0, "nothing recorded");

    /* Phases tracked (rt:phase_track recorded, sampled mode): the markers
     * keep the thread's stack, each argument once, and rt:sample would
     * carry the innermost id + 1 */
    rt_phase_track_semaphore = 1;
    RT_PHASE_BEGIN(T());
    expect("RT_PHASE_BEGIN tracked", 0x8, 1, "phase_track=1");
    check_phase("after BEGIN(7)", 8);
    RT_PHASE_BEGIN(3);
    check_phase("after BEGIN(3)", 4);
    RT_PHASE_END(3);
    check_phase("after END(3)", 8);
    RT_PHASE_BEGIN(3);
    RT_PHASE_END(7);   /* the outer one closes the inner too */
    check_phase("after END(7) over 3", 0);
    RT_PHASE_END(5);   /* not open: nothing */
    check_phase("after END(5), never begun", 0);
    rt_phase_track_semaphore = 0;
    RT_PHASE_BEGIN(9);
    check_phase("untracked BEGIN(9)", 0);

    /* RT_REALLOC's cases: a NULL old is an allocation, a NULL new with
     * size 0 a free, a NULL new with a size (failed) nothing */
    rt_alloc_semaphore = rt_free_semaphore = 1;
    RT_REALLOC((void *)0, block, 8, 1);
    RT_REALLOC(block, (void *)0, 0, 1);
    RT_REALLOC(block, (void *)0, 8, 1);
    rt_alloc_semaphore = rt_free_semaphore = 0;
    printf("rt_args: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
