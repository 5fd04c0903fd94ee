/* storm_truth.h - the storm's own ground truth, per allocation site.
 *
 * Sites are a fixed enum (STORM_SITES below). ALLOC(site, size, tag) and
 * REALLOC(site, p, size, tag) note the source line of the allocator call
 * (written on the same line, so it is the line a profiler must report)
 * and count the allocation in per-thread counters: no lock on the hot
 * path, summed when a thread ends. FREED(site, size) takes bytes off the
 * live count.
 *
 * With one thread the live bytes per site are also copied at each new
 * maximum of the thread's live total, which gives the bytes per site at
 * the peak (what massif reports). With several threads the peak depends on
 * how they interleave, so it is not kept.
 *
 * storm_truth_write() writes $TRUTH_FILE as JSON, in the format of
 * tests/programs/truth.h plus the peak:
 *   {"argv": [...], "peak_bytes": N or null,
 *    "records": [{"file", "function", "line", "tag", "count", "bytes",
 *                 "peak_bytes"}]}
 */
#ifndef STORM_TRUTH_H
#define STORM_TRUTH_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum storm_site { S_NODE, S_LEAF, S_STR, S_SCRATCH, S_SYMTAB, S_TOKENS, NSITES };

struct storm_site_info {
    const char *function, *tag;
    int line; /* set by the first ALLOC at the site */
};
static struct storm_site_info storm_sites[NSITES];

struct storm_tally {
    unsigned long long count[NSITES], bytes[NSITES];
    long long live[NSITES], live_total;
    long long peak[NSITES], peak_total;
};
static __thread struct storm_tally storm_tl;
static struct storm_tally storm_sum;
static pthread_mutex_t storm_sum_lock = PTHREAD_MUTEX_INITIALIZER;
static int storm_keep_peak; /* 1 with one thread */

static inline void storm_note(enum storm_site s, int line, const char *fn,
                              size_t size)
{
    struct storm_tally *t = &storm_tl;
    /* The site's line, the same from every thread: written once, so that
     * threads do not write one shared cache line on every allocation. */
    if (storm_sites[s].line != line) {
        storm_sites[s].line = line;
        storm_sites[s].function = fn;
    }
    t->count[s]++;
    t->bytes[s] += size;
    t->live[s] += (long long)size;
    t->live_total += (long long)size;
    if (storm_keep_peak && t->live_total > t->peak_total) {
        memcpy(t->peak, t->live, sizeof t->peak);
        t->peak_total = t->live_total;
    }
}

static inline void storm_freed(enum storm_site s, size_t size)
{
    storm_tl.live[s] -= (long long)size;
    storm_tl.live_total -= (long long)size;
}

#define ALLOC(site, size, tag)                                                \
    (storm_note((site), __LINE__, __func__, (size)), rt_alloc((size), (tag)))
#define REALLOC(site, p, size, tag)                                           \
    (storm_note((site), __LINE__, __func__, (size)),                          \
     rt_realloc((p), (size), (tag)))
#define FREED(site, size) storm_freed((site), (size))

/* Called by each thread when its work is done. */
static void storm_truth_merge(void)
{
    int s;
    pthread_mutex_lock(&storm_sum_lock);
    for (s = 0; s < NSITES; s++) {
        storm_sum.count[s] += storm_tl.count[s];
        storm_sum.bytes[s] += storm_tl.bytes[s];
        storm_sum.peak[s] += storm_tl.peak[s];
    }
    storm_sum.peak_total += storm_tl.peak_total;
    pthread_mutex_unlock(&storm_sum_lock);
}

/* Allocations in a tally: storm_tl (this thread's) or storm_sum. */
static unsigned long long storm_allocs(const struct storm_tally *t)
{
    unsigned long long n = 0;
    int s;
    for (s = 0; s < NSITES; s++)
        n += t->count[s];
    return n;
}

static void storm_truth_write(const char *file, int argc, char **argv)
{
    const char *path = getenv("TRUTH_FILE");
    FILE *f;
    int i, first = 1;

    if (!path)
        return;
    if (!(f = fopen(path, "w"))) {
        perror(path);
        exit(1);
    }
    fputs("{\"argv\": [", f);
    for (i = 0; i < argc; i++) /* plain arguments: numbers and a path */
        fprintf(f, "%s\"%s\"", i ? ", " : "", argv[i]);
    if (storm_keep_peak)
        fprintf(f, "], \"peak_bytes\": %lld, \"records\": [",
                storm_sum.peak_total);
    else
        fputs("], \"peak_bytes\": null, \"records\": [", f);
    for (i = 0; i < NSITES; i++) {
        if (!storm_sum.count[i])
            continue;
        fprintf(f, "%s\n {\"file\": \"%s\", \"function\": \"%s\", "
                   "\"line\": %d, \"tag\": \"%s\", \"count\": %llu, "
                   "\"bytes\": %llu, \"peak_bytes\": ",
                first ? "" : ",", file, storm_sites[i].function,
                storm_sites[i].line, storm_sites[i].tag, storm_sum.count[i],
                storm_sum.bytes[i]);
        if (storm_keep_peak)
            fprintf(f, "%lld}", storm_sum.peak[i]);
        else
            fputs("null}", f);
        first = 0;
    }
    fputs("]}\n", f);
    fclose(f);
}

#endif
