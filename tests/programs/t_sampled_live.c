/* t_sampled_live: who holds the memory, for the sampled-mode tests.
 *
 *   t_sampled_live [SCALE]
 *
 * Three sites of one size each, so their truth is simple and their
 * estimates' standard errors follow from it (docs/sampling.md):
 *   held   4096 B, live from the start until after the peak, then freed;
 *   churn  1024 B, freed at once (never live at the peak, never leaked);
 *   kept    256 B, allocated after `held`, never freed (leaked).
 * The peak is the moment the last `kept` block exists while every `held`
 * block is still live: held + kept bytes. The drop after it (all of
 * `held`) is far larger than the estimates' errors, so the estimated
 * peak falls at the same moment. */
#include <stdlib.h>

#include "rt_alloc.h"
#define TRUTH_LIVE_BITS 18 /* up to 131072 live blocks */
#include "truth.h"

#define MAX_HELD 20000

static void *held[MAX_HELD];

int main(int argc, char **argv)
{
    long scale = argc > 1 ? atol(argv[1]) : 1;
    long i, n_held = 2000 * scale, n_kept = 20000 * scale;
    if (n_held > MAX_HELD || n_held + n_kept >= (1L << 17))
        return 2;
    truth_init_live(argc, argv, NULL, NULL);
    for (i = 0; i < n_held; i++) {
        held[i] = ALLOC(4096, 1);
        FREE(ALLOC(1024, 2));
    }
    for (i = 0; i < n_kept; i++)
        (void)ALLOC(256, 3);
    for (i = 0; i < n_held; i++)
        FREE(held[i]);
    return 0;
}
