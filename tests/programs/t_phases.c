/* t_phases: phases marked with RT_PHASE_BEGIN/END, and their truth.
 *
 *   t_phases
 *
 * Every site allocates one size, distinct from every other site's, so a
 * block charged to the wrong phase or site changes some figure. In order:
 *   - "table" (2000 bytes) outside every phase, and an END of phase 9,
 *     never begun (an unmatched end);
 *   - load() twice: phase load (1) with phase scan (2) nested inside it;
 *     each run of scan leaves one 24-byte token live at its end, freed
 *     before load ends (so load's left_live is 136 per run whether or not
 *     a report counted inner phases' blocks in the outer one), and each
 *     run of load leaves one 136-byte index live;
 *   - two threads, each in a phase of its own (worker_a 3, worker_b 4) at
 *     the same time: both begin, allocate (48 x 4 and 1200 + 56), free
 *     (a: two of its own; b: one of a's blocks and its 56) and end, in
 *     lock step at barriers, so that no phase begins or ends while
 *     another thread allocates or frees;
 *   - phase emit (5) with fix (6) inside it; END(emit) closes fix too,
 *     and the END(fix) after it is unmatched; fix frees its block before
 *     (a block of an inner run live at the outer run's end would count
 *     in the outer's left_live or not depending on the definition);
 *   - phase exit (7), left open: the program's peak (its 3000-byte block)
 *     is in it, and it is closed at exit.
 * Expected (bytes): peak 4384 (4 blocks), leaked 4384 (4), temporary 0;
 * per phase: runs, count, bytes, left_live, peak, growth
 *   load   2  4 1472  272 2808   272     scan   2  6  144   48 2808    48
 *   a      1  4  192   48 3720  1248     b      1  2 1256 1200 3720  1248
 *   emit   1  1  700  700 2292   564     fix    1  1   72    0 2292  -136
 *   exit   1  1 3000 3000 4384  2300
 * outside: 1 block, 2000 bytes; unmatched ends 2; open at exit [7].
 * tests/unit/test_truth_live.py checks these. */
#include <pthread.h>
#include <stdlib.h>

#include "rt_alloc.h"
#include "rt_probes.h"
#include "truth.h"

enum { P_LOAD = 1, P_SCAN, P_A, P_B, P_EMIT, P_FIX, P_EXIT, P_NEVER = 9 };
RT_PHASE_NAME(P_LOAD, "load");
RT_PHASE_NAME(P_SCAN, "scan");
RT_PHASE_NAME(P_A, "worker_a");
RT_PHASE_NAME(P_B, "worker_b");
RT_PHASE_NAME(P_EMIT, "emit");
RT_PHASE_NAME(P_FIX, "fix");
RT_PHASE_NAME(P_EXIT, "exit");

static const char *phase_name(unsigned id)
{
    static const char *const names[] = {NULL,   "load", "scan", "worker_a",
                                        "worker_b", "emit", "fix",  "exit"};
    return id < sizeof names / sizeof names[0] ? names[id] : NULL;
}

static void *index_of_load[2];

/* One run of load, with a run of scan inside. */
static void load(int run)
{
    void *buf, *tok[3];
    int i;
    PHASE_BEGIN(P_LOAD);
    buf = ALLOC(600, 1);
    PHASE_BEGIN(P_SCAN);
    for (i = 0; i < 3; i++)
        tok[i] = ALLOC(24, 2);
    FREE(tok[0]);
    FREE(tok[1]);
    PHASE_END(P_SCAN); /* tok[2] is live: scan's left_live */
    FREE(tok[2]);
    FREE(buf);
    index_of_load[run] = ALLOC(136, 1);
    PHASE_END(P_LOAD); /* the index is live: load's left_live */
}

/* The two workers meet at three barriers: after both began their phase,
 * after both allocated (nothing freed yet: the total only grew, so its
 * highest value is the same in any interleaving), and after both freed;
 * then they end their phases with nothing allocated or freed around. */
static pthread_barrier_t step;
static void *a_blocks[4];

static void *worker_a(void *arg)
{
    int i;
    (void)arg;
    PHASE_BEGIN(P_A);
    pthread_barrier_wait(&step);
    for (i = 0; i < 4; i++)
        a_blocks[i] = ALLOC(48, 3);
    pthread_barrier_wait(&step);
    FREE(a_blocks[0]); /* not a_blocks[3]: a temporary would then depend */
    FREE(a_blocks[1]); /* on which thread allocated last */
    pthread_barrier_wait(&step);
    PHASE_END(P_A); /* a_blocks[3] is live (b freed a_blocks[2]) */
    return NULL;
}

static void *worker_b(void *arg)
{
    void *big, *small;
    (void)arg;
    PHASE_BEGIN(P_B);
    pthread_barrier_wait(&step);
    big = ALLOC(1200, 4);
    small = ALLOC(56, 4);
    pthread_barrier_wait(&step);
    FREE(a_blocks[2]); /* a block of the other thread, from another phase */
    FREE(small);
    pthread_barrier_wait(&step);
    PHASE_END(P_B); /* big is live: b's left_live, and leaked */
    (void)big;
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t a, b;
    void *table, *out, *fix;
    truth_init_live(argc, argv, NULL, phase_name);
    table = ALLOC(2000, 5);
    PHASE_END(P_NEVER); /* never begun: unmatched */
    load(0);
    load(1);

    pthread_barrier_init(&step, NULL, 2);
    if (pthread_create(&a, NULL, worker_a, NULL) ||
        pthread_create(&b, NULL, worker_b, NULL))
        return 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&step);
    FREE(table);

    PHASE_BEGIN(P_EMIT);
    out = ALLOC(700, 6);
    PHASE_BEGIN(P_FIX);
    fix = ALLOC(72, 6);
    FREE(index_of_load[0]); /* load's block, freed inside fix */
    FREE(fix); /* before emit ends: see left_live above */
    PHASE_END(P_EMIT); /* closes fix too */
    PHASE_END(P_FIX);  /* unmatched: fix is closed already */

    PHASE_BEGIN(P_EXIT); /* never ended: closed at exit */
    FREE(out);
    (void)ALLOC(3000, 7); /* the peak; leaked */
    return 0;
}
