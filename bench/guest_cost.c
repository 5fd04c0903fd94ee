/* guest_cost: what a guest location costs per event while recording
 * (bench/guest_cost.py).
 *
 *   guest_cost MODE N
 *     plain   N RT_ALLOC events, no guest location
 *     guest   N RT_ALLOC_GUEST events, each at one of 16 guest locations
 *             (defined once each by RT_GUEST)
 *     define  N RT_GUEST definitions, each a new id with its two names
 *             (a 26-byte source, a 13-byte function) copied by the uprobe
 *
 * Prints "guest_cost: MODE N elapsed_ns=T": the loop's time alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_probes.h"

static char block[64];
static unsigned char defined[17];

static unsigned long long where(long i)
{
    unsigned long long id = (unsigned long long)(i & 15) + 1;
    if (RT_GUEST_ENABLED() && !defined[id]) {
        RT_GUEST(id, 0, 100 + id, "scripts/some_module.lua", "function_name");
        defined[id] = 1;
    }
    return id;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "plain";
    long n = argc > 2 ? atol(argv[2]) : 100000, i;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!strcmp(mode, "plain")) {
        for (i = 0; i < n; i++)
            RT_ALLOC(block + (i & 7), 16, 1);
    } else if (!strcmp(mode, "guest")) {
        for (i = 0; i < n; i++)
            RT_ALLOC_GUEST(block + (i & 7), 16, 1, where(i));
    } else {
        for (i = 0; i < n; i++)
            RT_GUEST((unsigned long long)i + 1, 0, (unsigned long long)i,
                     "scripts/some_module.lua", "function_name");
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("guest_cost: %s %ld elapsed_ns=%lld\n", mode, n,
           (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
               (t1.tv_nsec - t0.tv_nsec));
    return 0;
}
