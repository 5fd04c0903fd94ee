/* drop_plain.c - a perf script --dlfilter that drops allocsites' plain
 * events (frees, phases, rt:exit: sdt_rt:plain_PID) before perf hands
 * them to a script. bench/dlfilter/plain_cost.sh uses it to measure what
 * perf's Python glue costs for those events. */
#include <perf/perf_dlfilter.h>
#include <string.h>

int filter_event_early(void *data, const struct perf_dlfilter_sample *sample,
                       void *ctx)
{
    (void)data;
    (void)ctx;
    return sample->event != NULL && strstr(sample->event, ":plain_") != NULL;
}
