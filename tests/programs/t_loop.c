/* t_loop: a process that keeps allocating, for attaching to.
 *
 *   t_loop SECONDS
 *
 * Allocates and frees a 48-byte block about every millisecond for
 * SECONDS, then exits normally (so rt:exit reports what it fired while
 * recorded) and prints "allocations=N" (all of them, attached or not). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rt_alloc.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static __attribute__((noinline)) void tick(void)
{
    rt_free(rt_alloc(48, 1));
}

int main(int argc, char **argv)
{
    double end = now() + (argc > 1 ? atof(argv[1]) : 1.0);
    struct timespec ms = {0, 1000000};
    long n = 0;
    while (now() < end) {
        tick();
        n++;
        nanosleep(&ms, NULL);
    }
    printf("allocations=%ld\n", n);
    return 0;
}
