/* big_blocks: sampled mode's worst case for perf's rings.
 *
 *   big_blocks [BLOCKS] [SIZE] [DEPTH]
 *
 * Descends DEPTH frames (default 12), then allocates and frees BLOCKS
 * (default 50000) blocks of SIZE bytes (default 262144) as fast as it can.
 * A block a few times the sampling rate is nearly always sampled
 * (1 - exp(-size/rate): 98% at 256 KiB and --sample 64k), so sampled mode
 * records an rt:sample (with its stack copy) and an rt:sample_free for
 * nearly every block: the event rate of exact mode, not "a few a
 * millisecond" (bench/sampled_loss.py). Prints "allocations=BLOCKS". */
#include <stdio.h>
#include <stdlib.h>

#include "rt_alloc.h"

static long blocks;
static size_t size;

static __attribute__((noinline)) void allocate(void)
{
    long i;
    for (i = 0; i < blocks; i++) {
        char *p = rt_alloc(size, 1);
        if (p)
            p[0] = (char)i;   /* touched: the block is real memory */
        rt_free(p);
    }
}

static __attribute__((noinline)) void descend(int depth)
{
    volatile char frame[48];
    frame[0] = (char)depth;
    if (depth > 1)
        descend(depth - 1);
    else
        allocate();
    frame[1] = frame[0];
}

int main(int argc, char **argv)
{
    int depth = argc > 3 ? atoi(argv[3]) : 12;
    blocks = argc > 1 ? atol(argv[1]) : 50000;
    size = argc > 2 ? (size_t)atol(argv[2]) : 262144;
    descend(depth);
    printf("allocations=%ld\n", blocks);
    return 0;
}
