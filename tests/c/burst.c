/* burst: the loss benchmark of allocsites' exact mode.
 *
 *   burst [PAIRS] [DEPTH]
 *
 * Descends DEPTH frames (default 12, counting main) through a chain of
 * distinct functions, then makes PAIRS (default 750000) rt_alloc+rt_free
 * pairs as fast as it can: 2*PAIRS events, the burst the issue specifies
 * (1.5 million alloc+free events, stacks ~12 frames deep). Prints its own
 * truth, allocations and bytes, and the time the allocation loop took
 * (elapsed_ns: excludes process and perf start-up, for overhead figures). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "rt_alloc.h"
#if defined(BENCH_RAISE_SAMPLE_SEMAPHORE) || defined(BENCH_RAISE_SAMPLE_FREE_SEMAPHORE)
/* For bench/offcost_callgrind.py: run the sampler (and with
 * BENCH_RAISE_SAMPLE_FREE_SEMAPHORE the sampled pointer table: every free
 * looked up) with nothing attached (the probes' nops execute, no trap), to
 * count their instructions. */
#include "rt_probes.h"
#endif

static long pairs;
static unsigned long long total_bytes;

#ifdef BENCH_GUEST
/* For bench/offcost_callgrind.py and test_offcost.py: a language
 * runtime's allocator, whose probe carries the guest program's location
 * (RT_ALLOC_GUEST), the location a lookup the allocator must not make
 * while nothing records. */
#include "rt_probes.h"
static __attribute__((noinline)) unsigned long long guest_where(size_t n)
{
    return n * 2654435761u;   /* a runtime walks its frames here */
}
/* n and p stay live past the probe, and neither call is a tail call, in
 * both builds: the difference is the probe's alone (the semaphore test,
 * and the argument work it skips). */
static volatile size_t guest_last_size;
static volatile long guest_frees;
static __attribute__((noinline)) void *guest_alloc(size_t n)
{
    void *p = malloc(n);
    RT_ALLOC_GUEST(p, n, 1, guest_where(n));
    guest_last_size = n;
    return p;
}
static __attribute__((noinline)) void guest_free(void *p)
{
    RT_FREE(p);
    free(p);
    guest_frees++;
}
#define rt_alloc(n, tag) guest_alloc(n)
#define rt_free(p) guest_free(p)
#endif

static __attribute__((noinline)) void storm(void)
{
    long i;
    for (i = 0; i < pairs; i++) {
        size_t n = (size_t)(i % 120) + 8;
        void *p = rt_alloc(n, 1);
        total_bytes += n;
        rt_free(p);
    }
}

/* A chain of frames of a typical size (a small local array each). */
static __attribute__((noinline)) void descend(int depth)
{
    volatile char frame[48];
    frame[0] = (char)depth;
    if (depth > 1)
        descend(depth - 1);
    else
        storm();
    frame[1] = frame[0];
}

int main(int argc, char **argv)
{
    int depth = argc > 2 ? atoi(argv[2]) : 12;
    pairs = argc > 1 ? atol(argv[1]) : 750000;
    struct timespec t0, t1;
    struct rusage ru;
#ifdef BENCH_RAISE_SAMPLE_SEMAPHORE
    rt_sample_semaphore = 1;
#endif
#ifdef BENCH_RAISE_SAMPLE_FREE_SEMAPHORE
    rt_sample_free_semaphore = 1;
#endif
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* main, descend x (depth - 2), storm: depth frames in all. */
    descend(depth > 2 ? depth - 2 : 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &ru); /* cpu_ns: user + system time, traps too */
    printf("burst: allocations=%ld bytes=%llu depth=%d elapsed_ns=%lld "
           "cpu_ns=%lld\n", pairs, total_bytes, depth,
           (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
               (t1.tv_nsec - t0.tv_nsec),
           ((long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL +
            ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL);
    return 0;
}
