/* t_sampled: sites of known, constant sizes for the sampled-mode tests.
 *
 *   t_sampled [SCALE]
 *
 * Each site allocates one size only, so its count follows from its bytes
 * (the tests compute standard errors from the truth). The first two sites
 * alternate a small and a large allocation in a fixed period of 4096
 * bytes: a sampler with a periodic threshold would charge one of them with
 * every sample. */
#include <stdlib.h>

#include "rt_alloc.h"
#include "truth.h"

static void interleaved(long n)
{
    long i;
    for (i = 0; i < n; i++) {
        void *small = ALLOC(512, 1);
        void *large = ALLOC(3584, 2);
        rt_free(small);
        rt_free(large);
    }
}

static void steady(long n)
{
    long i;
    for (i = 0; i < n; i++)
        rt_free(ALLOC(64, 3));
}

static void big_blocks(long n)
{
    long i;
    for (i = 0; i < n; i++)
        rt_free(ALLOC(200000, 4));
}

int main(int argc, char **argv)
{
    long scale = argc > 1 ? atol(argv[1]) : 1;
    truth_init(argc, argv, NULL);
    interleaved(2000 * scale);
    steady(50000 * scale);
    big_blocks(20 * scale);
    return 0;
}
