/* rt_exit.h - the end-to-end count and the rt:exit probe (included by
 * rt_probes.h; do not include it directly).
 *
 * perf's own loss counter is neither exact nor always written (a file
 * that perf cannot read to the end counts nothing), so the program
 * counts what it fires: each recorded event's enabled path adds one to
 * rt__fired[kind], and at exit rt:exit reports the totals:
 *
 *     rt:exit(allocs, frees, samples, sample_frees, releases, commits,
 *             phases, untracked)
 *
 * commits counts rt:commit and rt:decommit, phases rt:phase_begin and
 * rt:phase_end; untracked is not an event but the number of rt:sample
 * events whose pointer the sampled pointer table (rt_live.h) could not
 * hold: their frees can never be matched. Readers of the first three
 * (older reports) are unaffected: arguments are only appended. The
 * report compares them with the events it received (docs/design.md,
 * "Completeness"). Nothing of this runs when nothing records: the counts
 * sit behind the semaphores, after the probe.
 *
 * Per ELF file (weak and hidden, like the semaphores): a library and the
 * executable each count their own probes and each fire rt:exit. Per
 * process: a forked child starts again from 0 (pthread_atfork), so parent
 * and child each report only their own events. rt:exit fires from a
 * destructor of the lowest priority, after the program's own destructors
 * and atexit handlers; a process that ends without exit() (killed, _exit,
 * exec) fires none, and the report then says it could not check.
 */
#ifndef RT_EXIT_H
#define RT_EXIT_H
/* Its own code is not the user's: the compiler reports no warning of
 * it, whatever the user's flags (docs/probes.md, "Requirements") */
#if defined(__GNUC__) && __INCLUDE_LEVEL__ > 0 && !defined(RT_PROBES_WARNINGS)
#pragma GCC system_header
#endif

#include <pthread.h>

#define RT__FIRED_ALLOC 0
#define RT__FIRED_FREE 1
#define RT__FIRED_SAMPLE 2
#define RT__FIRED_SAMPLE_FREE 3
#define RT__FIRED_RELEASE 4
#define RT__FIRED_COMMIT 5   /* rt:commit and rt:decommit */
#define RT__FIRED_PHASE 6    /* rt:phase_begin and rt:phase_end */
#define RT__FIRED_UNTRACKED 7
#define RT__FIRED_KINDS 8

#ifdef __cplusplus
extern "C" {
#endif
extern unsigned long long rt__fired[RT__FIRED_KINDS];
extern int rt__exit_state;
void rt__fork_child(void);
void rt__exit_init(void);
void rt__exit_padding(void);
void rt__exit_fire(void);
RT__SHARED unsigned long long rt__fired[RT__FIRED_KINDS];
/* 1 once the fork handler is registered, 2 once rt:exit has fired: the
 * constructor and the destructor below are listed once per translation
 * unit that includes this header, and must act once per ELF file. */
RT__SHARED int rt__exit_state;

#define rt__count(kind)                                                       \
    ((void)__atomic_fetch_add(&rt__fired[kind], 1, __ATOMIC_RELAXED))

/* rt_live.h: the child's sampled pointer table starts empty too. */
void rt__live_fork_child(void)
    RT__OUTLINE;

__attribute__((__weak__, __visibility__("hidden"), __used__))
void rt__fork_child(void)
{
    int i;
    for (i = 0; i < RT__FIRED_KINDS; i++)
        rt__fired[i] = 0;
    rt__live_fork_child();
}

RT__SHARED __attribute__((__constructor__, __used__)) void
rt__exit_init(void)
{
    if (rt__exit_state == 0) {
        rt__exit_state = 1;
        pthread_atfork(RT__NULL, RT__NULL, rt__fork_child);
    }
}

/* Padding after rt:exit, for perf 6.1's -z: the last compressed record of
 * a recording can be cut short (perf ignores what ZSTD_flushStream could
 * not write, and nothing flushes it later), losing up to about a zstd
 * block (128 KiB) of the recording's end. RT__EXIT_PADDING rt:exit events
 * whose counts are all 2^64-1 (about 256 KiB of ring: each is ~170
 * bytes) follow the real one, so that what such a cut loses is padding,
 * not the program's last events; the report ignores them and tells a cut
 * that lost only padding by the end-to-end count (docs/design.md, "perf
 * -z and silent loss"). Costs ~3 ms at exit, only while rt:exit is
 * recorded. */
#define RT__EXIT_PADDING 1536
RT__OUTLINE void
rt__exit_padding(void)
{
    unsigned long long pad[RT__FIRED_KINDS];
    int i;
    for (i = 0; i < RT__FIRED_KINDS; i++)
        pad[i] = ~0ULL;
    for (i = 0; i < RT__EXIT_PADDING; i++)
        RT__PROBE_EXIT(pad);
}

RT__SHARED __attribute__((__destructor__(101), __used__)) void
rt__exit_fire(void)
{
    if (rt__exit_state != 2) {
        unsigned long long c[RT__FIRED_KINDS];
        int i;
        rt__exit_state = 2;
        if (rt__phase_watched) /* sampled mode: the phase at exit */
            rt__phase_mark();
        for (i = 0; i < RT__FIRED_KINDS; i++)
            c[i] = __atomic_load_n(&rt__fired[i], __ATOMIC_RELAXED);
        if (rt__on(&rt_exit_semaphore)) {
            RT__PROBE_EXIT(c);
            rt__exit_padding();
        }
    }
}
#ifdef __cplusplus
}
#endif

#endif /* RT_EXIT_H */
