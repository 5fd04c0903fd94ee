/* sawtooth: live bytes that return to nearly the same high many times,
 * the shape of a database engine's buffer pool or a server's request
 * arenas, for bench/sampled_peak.py.
 *
 *   sawtooth [CYCLES] [BLOCKS]
 *
 * Each cycle allocates until BLOCKS blocks are live (sizes 16..4096,
 * from a fixed seed, so every run is the same), then frees a random
 * half of them. The live bytes peak once a cycle at about BLOCKS x 2 KiB,
 * CYCLES near-peak moments: where a sampled estimate's noise has as many
 * chances to overshoot. Prints the exact peak it saw. */
#include <stdio.h>
#include <stdlib.h>

#include "rt_alloc.h"

static unsigned long long state = 88172645463325252ull;

static unsigned long next(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (unsigned long)state;
}

int main(int argc, char **argv)
{
    long cycles = argc > 1 ? atol(argv[1]) : 200;
    long blocks = argc > 2 ? atol(argv[2]) : 4000;
    void **live = calloc((size_t)blocks, sizeof *live);
    size_t *sizes = calloc((size_t)blocks, sizeof *sizes);
    size_t now = 0, peak = 0;
    long c, i;
    if (!live || !sizes || cycles < 1 || blocks < 2)
        return 2;
    for (c = 0; c < cycles; c++) {
        for (i = 0; i < blocks; i++) {
            if (live[i])
                continue;
            sizes[i] = 16 + next() % 4081;
            live[i] = rt_alloc(sizes[i], 1);
            now += sizes[i];
            if (now > peak)
                peak = now;
        }
        for (i = 0; i < blocks; i++) {
            if (next() & 1) {
                rt_free(live[i]);
                live[i] = NULL;
                now -= sizes[i];
            }
        }
    }
    for (i = 0; i < blocks; i++)
        rt_free(live[i]);
    printf("sawtooth: %ld cycles, %ld blocks, peak %zu bytes\n", cycles,
           blocks, peak);
    free(live);
    free(sizes);
    return 0;
}
