/* t_loop: a process that keeps allocating, for attaching to.
 *
 *   t_loop SECONDS [THREADS]
 *
 * Each of THREADS threads (default 1: the main thread alone) allocates
 * and frees a 48-byte block about every millisecond for SECONDS; then
 * the process exits normally (so rt:exit reports what it fired while
 * recorded) and prints "allocations=N" (all of them, attached or not). */
#include <pthread.h>
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

static double end;

static void *loop(void *count)
{
    struct timespec ms = {0, 1000000};
    while (now() < end) {
        tick();
        ++*(long *)count;
        nanosleep(&ms, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 2 ? atoi(argv[2]) : 1, i;
    pthread_t tid[64];
    long counts[64] = {0}, n = 0;
    if (threads < 1 || threads > 64)
        return 2;
    end = now() + (argc > 1 ? atof(argv[1]) : 1.0);
    for (i = 1; i < threads; i++)
        pthread_create(&tid[i], NULL, loop, &counts[i]);
    loop(&counts[0]);
    for (i = 1; i < threads; i++)
        pthread_join(tid[i], NULL);
    for (i = 0; i < threads; i++)
        n += counts[i];
    printf("allocations=%ld\n", n);
    return 0;
}
