/* allocsites_mailbox.c - a perf script --dlfilter for allocsites' report
 * workers: the events without a call graph (sdt_rt:plain_PID: frees,
 * phases, rt:exit, ...) go past perf's Python glue.
 *
 * perf builds a dict of Python objects for every event it hands to a
 * script; for the frees of an exact recording that is 0.57 s of a 5.1 s
 * pass over a demo recording (docs/notes/2026-design-history.md,
 * "The events without a call graph: what perf's glue cost"). This filter,
 * loaded into perf's process, copies each plain event's fields into a
 * buffer and drops the event; the worker's handler, which perf calls in
 * time order, reads the buffer through ctypes (mailbox.py) before it
 * handles the next event, so the tally sees every event in the same order.
 *
 * Each record: time, thread id, then the plain event's fields kind and
 * a..h, as read from the tracepoint's raw data (the kernel packs a uprobe
 * event's fields: kind, a u8, at 16, a..h, u64s, from 17). So that a layout
 * that is not this one can never give wrong numbers, the filter starts in
 * VERIFY: it copies the first plain event to allocsites_mailbox_check and
 * lets perf hand it over as before; the handler compares the two and sets
 * allocsites_mailbox_state to ON (the buffer is used from then on) or OFF
 * (never). It also keeps an event for perf when the buffer is full (the
 * handler empties the buffer first) and the one that completes the
 * worker's count of samples (--dlarg N), so the handler sees it and stops.
 */
#include <perf/perf_dlfilter.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAILBOX_CAP 4096
#define MAILBOX_WORDS 11
#define PLAIN_RAW_SIZE 81   /* 8 common, 8 probe ip, kind, a..h */

enum { VERIFY = 0, ON = 1, OFF = 2 };

/* What mailbox.py reads the buffer with: records, and words a record. */
const uint64_t allocsites_mailbox_layout[2] = {MAILBOX_CAP, MAILBOX_WORDS};
uint64_t allocsites_mailbox[MAILBOX_CAP * MAILBOX_WORDS];
uint64_t allocsites_mailbox_n;
uint64_t allocsites_mailbox_state = VERIFY;
uint64_t allocsites_mailbox_check[MAILBOX_WORDS];

struct perf_dlfilter_fns perf_dlfilter_fns;

uint64_t allocsites_mailbox_seen;       /* samples perf passed in */
uint64_t allocsites_mailbox_stop_at;   /* --dlarg N; 0: none */

int start(void **data, void *ctx)
{
    int argc = 0;
    char **argv = perf_dlfilter_fns.args ? perf_dlfilter_fns.args(ctx, &argc)
                                         : NULL;
    (void)data;
    if (argc > 0 && argv)
        allocsites_mailbox_stop_at = strtoull(argv[0], NULL, 10);
    return 0;
}

static void copy_fields(uint64_t *to, const struct perf_dlfilter_sample *s)
{
    const unsigned char *raw = s->raw_data;
    int i;
    to[0] = s->time;
    to[1] = (uint64_t)(uint32_t)s->tid;
    to[2] = raw[16];
    for (i = 0; i < 8; i++)
        memcpy(&to[3 + i], raw + 17 + 8 * i, 8);
}

int filter_event_early(void *data, const struct perf_dlfilter_sample *s,
                       void *ctx)
{
    (void)data;
    (void)ctx;
    allocsites_mailbox_seen++;
    if (allocsites_mailbox_state == OFF || s->event == NULL ||
        strstr(s->event, ":plain_") == NULL || s->raw_data == NULL ||
        s->raw_size < PLAIN_RAW_SIZE)
        return 0;
    if (allocsites_mailbox_state == VERIFY) {
        copy_fields(allocsites_mailbox_check, s);
        return 0;
    }
    if (allocsites_mailbox_seen == allocsites_mailbox_stop_at ||
        allocsites_mailbox_n == MAILBOX_CAP)
        return 0;
    copy_fields(&allocsites_mailbox[allocsites_mailbox_n * MAILBOX_WORDS], s);
    allocsites_mailbox_n++;
    return 1;
}
