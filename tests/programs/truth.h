/* truth.h - ground truth for the integration tests.
 *
 * A test program allocates through ALLOC(size, tag) or REALLOC(p, size,
 * tag). Each expands, on ONE source line, to a note of (file, line,
 * function, tag, size) and the allocator call, so the line the program
 * notes is exactly the call site the profile must report. At exit the
 * notes are written as JSON to $TRUTH_FILE, with the program's argv, one
 * record per (site, tag):
 *   {"argv": [...], "records": [{"file", "function", "line",
 *    "tag": "<tag name or number>", "count", "bytes"}]}
 * Header-only; thread-safe; uses no allocator of its own.
 *
 * Liveness and phases (issues 12 and 13). A program that calls
 * truth_init_live instead of truth_init promises to free only through
 * FREE(p) (a function: FREE(ALLOC(n, tag)) allocates once), REALLOC and
 * RELEASE_ARENA(arena) (which frees the blocks of ARENA_ALLOC(arena, size,
 * tag), examples/rtalloc/rt_arena.h); the truth then follows every block
 * by pointer, in a fixed-size table (no malloc), and adds (the fields
 * above are unchanged):
 *   top level:
 *     "pid": the process
 *     "peak_bytes", "peak_count": total live bytes and blocks at the first
 *         moment the total live bytes was at its maximum
 *     "leaked_bytes", "leaked_count": live when the truth is written (exit)
 *     "temporary": allocations whose free was the very next allocation or
 *         free of the process (nothing allocated or freed in between; a
 *         REALLOC is a free of the old block, then an allocation, as the
 *         allocator's events are, and REALLOC(p, 0) a free only; an arena
 *         release is an event too, but makes nothing temporary; phase
 *         begins and ends are not events here)
 *     "unmatched_frees": [count, bytes]: frees of blocks this process
 *         never allocated (a forked child freeing its parent's blocks:
 *         see truth_forked_child)
 *     "released": [count, bytes]: blocks freed by RELEASE_ARENA
 *     "phases": [{"id", "name" (or null), "runs", "count", "bytes",
 *         "left_live", "peak", "growth"}] sorted by id, where
 *         count, bytes: allocations whose innermost open phase in their
 *             thread was a run of this id ("charged" to that run);
 *         left_live: bytes charged to a run and still live at the run's
 *             end, summed over its runs (an allocation of an inner phase
 *             is charged to the inner run, not the outer);
 *         peak: the highest total live bytes of the process while a run
 *             of this id was open (0 if never run);
 *         growth: sum over runs of (total live bytes of the process at the
 *             run's end - at its begin): may be negative
 *     "outside_phases": {"count", "bytes"}: allocations charged to no phase
 *     "unmatched_phase_ends": PHASE_END(id) with no run of id open in
 *         that thread
 *     "open_phases": [id, ...]: runs still open at exit (closed there, in
 *         the order they were begun)
 *     Per process: a forked child's figures are in its own file. The
 *     phase fields are there (empty, zero) in programs without phases.
 *   per record:
 *     "peak_bytes", "peak_count": the site's live bytes and blocks at the
 *         peak moment above (not its own maximum)
 *     "leaked_bytes", "leaked_count", "temporary": as above, per site
 *     "phases": [{"phase": id or null, "count", "bytes"}]: the record's
 *         allocations per phase they were charged to (null: none); only
 *         in programs that use phases
 * Phases: PHASE_BEGIN(id) and PHASE_END(id) wrap RT_PHASE_BEGIN/END and
 * note them, with each thread's own stack of open runs: END(id) closes
 * the innermost open run of id and every run opened inside it.
 *
 * ORDER. Peak, temporary, and left_live, peak and growth of phases depend
 * on the order of events, and the truth sees them in the order it notes
 * them, which is the order perf records them only where threads do not
 * allocate or free concurrently (the notes are not made under one lock
 * with the allocator's calls): a program must make those moments
 * unambiguous itself (threads stopped at a barrier around the peak and
 * around phase begins and ends that other threads' blocks would change;
 * temporaries made while one thread runs; see t_phases' workers). The per-pointer bookkeeping is
 * always right: a free is noted before the allocator gets the block back
 * and an allocation after the allocator hands it out, so a pointer
 * reused by another thread is never seen live twice.
 *
 * A forked child calls truth_forked_child(): it forgets the parent's
 * figures (the child is a process of its own in the profile too), keeps
 * the sizes of the blocks it inherited (freeing one is an unmatched
 * free), and writes its truth to $TRUTH_FILE.child. */
#ifndef TRUTH_H
#define TRUTH_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRUTH_MAX 512
#ifndef TRUTH_LIVE_BITS
#define TRUTH_LIVE_BITS 16 /* the live-block table: 65536 blocks */
#endif
#define TRUTH_LIVE_MAX (1 << TRUTH_LIVE_BITS)
#define TRUTH_PHASES 16    /* distinct phase ids */
#define TRUTH_RUNS 64      /* runs open at once, all threads */
#define TRUTH_DEPTH 16     /* runs open at once in one thread */
#define TRUTH_OUTSIDE TRUTH_PHASES /* phase slot of "no phase" */
/* A program uses some of these functions only. */
#define TRUTH_FN __attribute__((unused))

struct truth_site {
    const char *file, *function;
    int line;
    unsigned tag;
    unsigned long long count, bytes;
    /* liveness */
    unsigned long long live_bytes, live_count, peak_bytes, peak_count;
    unsigned long long temporary;
    unsigned long long phase_count[TRUTH_PHASES + 1];
    unsigned long long phase_bytes[TRUTH_PHASES + 1];
};

static struct truth_site truth_sites[TRUTH_MAX];
static int truth_n;
static pthread_mutex_t truth_lock = PTHREAD_MUTEX_INITIALIZER;
static int truth_argc;
static char **truth_argv;
static const char *(*truth_tag_name)(unsigned tag);

/* Liveness state, all under truth_lock. */
struct truth_block {
    void *p;            /* NULL: empty slot */
    unsigned long long size;
    int site;           /* index in truth_sites; -1: inherited */
    const void *arena;  /* RELEASE_ARENA frees it with its arena */
    unsigned long run;  /* serial of the run it is charged to; 0: none */
};
struct truth_run {
    unsigned long serial; /* 0: free slot */
    int phase;            /* slot in truth_phase */
    long long begin_total;
    unsigned long long charged_live, peak;
};
struct truth_phase {
    unsigned id;
    unsigned long long runs, count, bytes, left_live, peak;
    long long growth;
};
static struct {
    int on; /* truth_init_live was called */
    struct truth_block table[TRUTH_LIVE_MAX];
    unsigned long long blocks; /* used slots of table */
    unsigned long long live_bytes, live_count, peak_bytes, peak_count;
    unsigned long long temporary, unmatched[2], released[2];
    void *last_alloc; /* the process's last event was this allocation */
    struct truth_phase phase[TRUTH_PHASES];
    int nphases, phases_used;
    unsigned long long outside[2];
    struct truth_run run[TRUTH_RUNS];
    unsigned long next_serial;
    unsigned long long unmatched_ends;
    unsigned open_order[TRUTH_RUNS * 4]; /* ids left open, for the JSON */
    int nopen;
    const char *(*phase_name)(unsigned id);
} truth_live;
/* Each thread's open runs, innermost last: slots in truth_live.run. */
static __thread int truth_stack[TRUTH_DEPTH];
static __thread int truth_depth;

static TRUTH_FN void truth_die(const char *why)
{
    fprintf(stderr, "truth.h: %s\n", why);
    abort();
}

/* The site of (file, line, tag), created on first use. Lock held. */
static TRUTH_FN int truth_site_of(const char *file, int line,
                                  const char *function, unsigned tag)
{
    int i;
    for (i = 0; i < truth_n; i++)
        if (truth_sites[i].line == line && truth_sites[i].tag == tag &&
            strcmp(truth_sites[i].file, file) == 0 &&
            strcmp(truth_sites[i].function, function) == 0)
            return i;   /* a site is its function too: t_sites has ten
                           functions on one line */
    if (truth_n == TRUTH_MAX)
        truth_die("too many sites");
    truth_sites[i].file = file;
    truth_sites[i].line = line;
    truth_sites[i].function = function;
    truth_sites[i].tag = tag;
    truth_n++;
    return i;
}

static TRUTH_FN void truth_note(const char *file, int line,
                                const char *function, unsigned tag,
                                size_t size)
{
    int i;
    pthread_mutex_lock(&truth_lock);
    i = truth_site_of(file, line, function, tag);
    truth_sites[i].count++;
    truth_sites[i].bytes += size;
    pthread_mutex_unlock(&truth_lock);
}

/* The live-block table: open addressing, linear probing, deletion by
 * backward shift (no tombstones, so it never fills up with dead slots). */
static TRUTH_FN size_t truth_home(const void *p)
{
    unsigned long long x = (unsigned long long)(uintptr_t)p >> 4;
    return (size_t)((x * 0x9E3779B97F4A7C15ULL) >> (64 - TRUTH_LIVE_BITS));
}

/* The slot of p, or of the empty slot where it would go. */
static TRUTH_FN size_t truth_slot(const void *p)
{
    size_t i = truth_home(p);
    while (truth_live.table[i].p && truth_live.table[i].p != p)
        i = (i + 1) & (TRUTH_LIVE_MAX - 1);
    return i;
}

static TRUTH_FN void truth_slot_clear(size_t i)
{
    size_t j = i, k;
    for (;;) {
        j = (j + 1) & (TRUTH_LIVE_MAX - 1);
        if (!truth_live.table[j].p)
            break;
        k = truth_home(truth_live.table[j].p);
        /* The entry at j may fill the hole at i unless its home lies
         * cyclically in (i, j]. */
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
            continue;
        truth_live.table[i] = truth_live.table[j];
        i = j;
    }
    truth_live.table[i].p = NULL;
    truth_live.blocks--;
}

static TRUTH_FN struct truth_run *truth_run_of(unsigned long serial)
{
    int i;
    for (i = 0; serial && i < TRUTH_RUNS; i++)
        if (truth_live.run[i].serial == serial)
            return &truth_live.run[i];
    return NULL;
}

/* Block i is no longer live (freed or released). Lock held. */
static TRUTH_FN void truth_kill(size_t i)
{
    struct truth_block *b = &truth_live.table[i];
    struct truth_run *r = truth_run_of(b->run);
    if (b->site >= 0) {
        truth_sites[b->site].live_bytes -= b->size;
        truth_sites[b->site].live_count--;
        truth_live.live_bytes -= b->size;
        truth_live.live_count--;
    }
    if (r)
        r->charged_live -= b->size;
    truth_slot_clear(i);
}

/* The phase slot of id, created on first use. Lock held. */
static TRUTH_FN int truth_phase_slot(unsigned id)
{
    int i;
    for (i = 0; i < truth_live.nphases; i++)
        if (truth_live.phase[i].id == id)
            return i;
    if (i == TRUTH_PHASES)
        truth_die("too many phase ids");
    truth_live.phase[i].id = id;
    truth_live.nphases++;
    return i;
}

/* Closes run slot r at this moment. Lock held. */
static TRUTH_FN void truth_run_close(int r)
{
    struct truth_run *run = &truth_live.run[r];
    struct truth_phase *ph = &truth_live.phase[run->phase];
    ph->left_live += run->charged_live;
    ph->growth += (long long)truth_live.live_bytes - run->begin_total;
    if (run->peak > ph->peak)
        ph->peak = run->peak;
    run->serial = 0;
}

/* An allocation of size bytes at p from site (file, line, tag), noted
 * after the allocator returned p; returns p. arena: the arena p belongs
 * to, or NULL. Without truth_init_live, the note truth_note makes. */
static TRUTH_FN void *truth_alloc(const char *file, int line,
                                  const char *function, unsigned tag,
                                  size_t size, void *p, const void *arena)
{
    int s, r, i, slot;
    size_t at;
    struct truth_block *b;
    if (!truth_live.on) {
        truth_note(file, line, function, tag, size);
        return p;
    }
    if (!p)
        return p; /* failed: the allocator fired nothing */
    pthread_mutex_lock(&truth_lock);
    s = truth_site_of(file, line, function, tag);
    truth_sites[s].count++;
    truth_sites[s].bytes += size;
    at = truth_slot(p);
    b = &truth_live.table[at];
    if (b->p) {
        /* Live already: a block inherited from the parent, whose memory
         * the child freed without FREE (forget it), or a free the program
         * did not note (a bug in the test program). */
        if (b->site >= 0)
            truth_die("ALLOC returned a block the truth thinks is live: "
                      "a free without FREE?");
        truth_slot_clear(at);
        at = truth_slot(p);
        b = &truth_live.table[at];
    }
    if (truth_live.blocks + 1 >= TRUTH_LIVE_MAX / 2)
        truth_die("too many live blocks");
    b->p = p;
    b->size = size;
    b->site = s;
    b->arena = arena;
    b->run = 0;
    truth_live.blocks++;
    truth_sites[s].live_bytes += size;
    truth_sites[s].live_count++;
    truth_live.live_bytes += size;
    truth_live.live_count++;
    truth_live.last_alloc = p;
    /* Phases: charged to the thread's innermost open run. */
    slot = TRUTH_OUTSIDE;
    if (truth_depth > 0) {
        struct truth_run *run = &truth_live.run[truth_stack[truth_depth - 1]];
        b->run = run->serial;
        run->charged_live += size;
        slot = run->phase;
        truth_live.phase[slot].count++;
        truth_live.phase[slot].bytes += size;
    } else {
        truth_live.outside[0]++;
        truth_live.outside[1] += size;
    }
    truth_sites[s].phase_count[slot]++;
    truth_sites[s].phase_bytes[slot] += size;
    for (r = 0; r < TRUTH_RUNS; r++)
        if (truth_live.run[r].serial &&
            truth_live.run[r].peak < truth_live.live_bytes)
            truth_live.run[r].peak = truth_live.live_bytes;
    /* The first moment of the highest total: every site's live now. */
    if (truth_live.live_bytes > truth_live.peak_bytes) {
        truth_live.peak_bytes = truth_live.live_bytes;
        truth_live.peak_count = truth_live.live_count;
        for (i = 0; i < truth_n; i++) {
            truth_sites[i].peak_bytes = truth_sites[i].live_bytes;
            truth_sites[i].peak_count = truth_sites[i].live_count;
        }
    }
    pthread_mutex_unlock(&truth_lock);
    return p;
}

/* A free of p, noted before the allocator gets p back. */
static TRUTH_FN void truth_free(void *p)
{
    size_t at;
    if (!truth_live.on || !p)
        return;
    pthread_mutex_lock(&truth_lock);
    at = truth_slot(p);
    if (!truth_live.table[at].p)
        truth_die("FREE of a pointer this program never allocated");
    if (truth_live.table[at].site < 0) { /* inherited: not ours */
        truth_live.unmatched[0]++;
        truth_live.unmatched[1] += truth_live.table[at].size;
        truth_slot_clear(at);
    } else {
        if (truth_live.last_alloc == p) {
            truth_sites[truth_live.table[at].site].temporary++;
            truth_live.temporary++;
        }
        truth_kill(at);
    }
    truth_live.last_alloc = NULL;
    pthread_mutex_unlock(&truth_lock);
}

/* Every block allocated from arena is freed at once, noted before the
 * arena is released. */
static TRUTH_FN void truth_release(const void *arena)
{
    size_t i;
    int again = 1;
    if (!truth_live.on)
        return;
    pthread_mutex_lock(&truth_lock);
    /* A deletion can shift a later entry back into a visited slot (or
     * one wrapped around): pass again until a pass finds nothing. */
    while (again) {
        again = 0;
        for (i = 0; i < TRUTH_LIVE_MAX;) {
            struct truth_block *b = &truth_live.table[i];
            if (b->p && b->site >= 0 && b->arena == arena) {
                truth_live.released[0]++;
                truth_live.released[1] += b->size;
                truth_kill(i);
                again = 1;
            } else {
                i++;
            }
        }
    }
    truth_live.last_alloc = NULL;
    pthread_mutex_unlock(&truth_lock);
}

static TRUTH_FN void truth_phase_begin(unsigned id)
{
    int r;
    if (!truth_live.on)
        return;
    pthread_mutex_lock(&truth_lock);
    if (truth_depth == TRUTH_DEPTH)
        truth_die("phases nested too deep");
    for (r = 0; r < TRUTH_RUNS && truth_live.run[r].serial; r++)
        ;
    if (r == TRUTH_RUNS)
        truth_die("too many open phase runs");
    truth_live.phases_used = 1;
    truth_live.run[r].serial = ++truth_live.next_serial;
    truth_live.run[r].phase = truth_phase_slot(id);
    truth_live.run[r].begin_total = (long long)truth_live.live_bytes;
    truth_live.run[r].charged_live = 0;
    truth_live.run[r].peak = truth_live.live_bytes;
    truth_live.phase[truth_live.run[r].phase].runs++;
    truth_stack[truth_depth++] = r;
    pthread_mutex_unlock(&truth_lock);
}

static TRUTH_FN void truth_phase_end(unsigned id)
{
    int d;
    if (!truth_live.on)
        return;
    pthread_mutex_lock(&truth_lock);
    truth_live.phases_used = 1;
    for (d = truth_depth - 1; d >= 0; d--)
        if (truth_live.phase[truth_live.run[truth_stack[d]].phase].id == id)
            break;
    if (d < 0) {
        truth_live.unmatched_ends++;
    } else {
        while (truth_depth > d) /* the inner runs close with it */
            truth_run_close(truth_stack[--truth_depth]);
    }
    pthread_mutex_unlock(&truth_lock);
}

static TRUTH_FN void truth_rt_free(void *p)
{
    truth_free(p);
    rt_free(p);
}

/* The allocator's calls with their notes. The pointer is noted after an
 * allocation and before a free (see ORDER above); the comma operator
 * sequences them. */
#define ALLOC(size, tag)                                                      \
    truth_alloc(__FILE__, __LINE__, __func__, (tag), (size),                  \
                rt_alloc((size), (tag)), NULL)
#define REALLOC(p, size, tag)                                                 \
    (truth_free(p),                                                           \
     truth_alloc(__FILE__, __LINE__, __func__, (tag), (size),                 \
                 rt_realloc((p), (size), (tag)), NULL))
/* A function, so that FREE(ALLOC(...)) allocates once; the free's call
 * site does not matter (frees are recorded without a call graph). p of
 * REALLOC is evaluated twice. */
#define FREE(p) truth_rt_free(p)
/* The arena allocator's calls (examples/rtalloc/rt_arena.h): its blocks
 * are noted with their arena, and RELEASE_ARENA notes them all freed
 * before the arena is released. */
#define ARENA_ALLOC(arena, size, tag)                                         \
    truth_alloc(__FILE__, __LINE__, __func__, (tag), (size),                  \
                rt_arena_alloc((arena), (size), (tag)), (arena))
#define RELEASE_ARENA(arena) (truth_release(arena), rt_arena_release(arena))
#define PHASE_BEGIN(id)                                                       \
    do {                                                                      \
        truth_phase_begin(id);                                                \
        RT_PHASE_BEGIN(id);                                                   \
    } while (0)
#define PHASE_END(id)                                                         \
    do {                                                                      \
        truth_phase_end(id);                                                  \
        RT_PHASE_END(id);                                                     \
    } while (0)

static TRUTH_FN void truth_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* The phase id of slot i (TRUTH_OUTSIDE: null) as JSON. */
static TRUTH_FN void truth_json_phase(FILE *f, int i)
{
    if (i == TRUTH_OUTSIDE)
        fputs("null", f);
    else
        fprintf(f, "%u", truth_live.phase[i].id);
}

static TRUTH_FN void truth_write_site_live(FILE *f,
                                          const struct truth_site *s)
{
    int i, first = 1;
    fprintf(f, ", \"peak_bytes\": %llu, \"peak_count\": %llu, "
               "\"leaked_bytes\": %llu, \"leaked_count\": %llu, "
               "\"temporary\": %llu",
            s->peak_bytes, s->peak_count, s->live_bytes, s->live_count,
            s->temporary);
    if (!truth_live.phases_used)
        return;
    fputs(", \"phases\": [", f);
    for (i = 0; i <= TRUTH_PHASES; i++) {
        if (!s->phase_count[i])
            continue;
        fputs(first ? "{\"phase\": " : ", {\"phase\": ", f);
        truth_json_phase(f, i);
        fprintf(f, ", \"count\": %llu, \"bytes\": %llu}", s->phase_count[i],
                s->phase_bytes[i]);
        first = 0;
    }
    fputc(']', f);
}

/* Closes the runs still open (at exit, as the profile closes them),
 * then writes the top-level liveness and phase fields. */
static TRUTH_FN void truth_write_live(FILE *f)
{
    int i, j, order[TRUTH_PHASES];
    unsigned long first;
    for (;;) { /* close in the order they were begun */
        int oldest = -1;
        first = (unsigned long)-1;
        for (i = 0; i < TRUTH_RUNS; i++)
            if (truth_live.run[i].serial && truth_live.run[i].serial < first)
                first = truth_live.run[oldest = i].serial;
        if (oldest < 0)
            break;
        if (truth_live.nopen < (int)(sizeof truth_live.open_order /
                                     sizeof truth_live.open_order[0]))
            truth_live.open_order[truth_live.nopen++] =
                truth_live.phase[truth_live.run[oldest].phase].id;
        truth_run_close(oldest);
    }
    fprintf(f, ", \"pid\": %ld, \"peak_bytes\": %llu, \"peak_count\": %llu, "
               "\"leaked_bytes\": %llu, \"leaked_count\": %llu, "
               "\"temporary\": %llu, \"unmatched_frees\": [%llu, %llu], "
               "\"released\": [%llu, %llu]",
            (long)getpid(), truth_live.peak_bytes, truth_live.peak_count,
            truth_live.live_bytes, truth_live.live_count,
            truth_live.temporary, truth_live.unmatched[0],
            truth_live.unmatched[1], truth_live.released[0],
            truth_live.released[1]);
    for (i = 0; i < truth_live.nphases; i++) { /* sorted by id */
        for (j = i; j > 0 && truth_live.phase[order[j - 1]].id >
                                 truth_live.phase[i].id; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    fputs(",\n \"phases\": [", f);
    for (j = 0; j < truth_live.nphases; j++) {
        const struct truth_phase *ph = &truth_live.phase[order[j]];
        const char *name =
            truth_live.phase_name ? truth_live.phase_name(ph->id) : NULL;
        fprintf(f, "%s{\"id\": %u, \"name\": ", j ? ",\n  " : "\n  ", ph->id);
        if (name)
            truth_json_string(f, name);
        else
            fputs("null", f);
        fprintf(f, ", \"runs\": %llu, \"count\": %llu, \"bytes\": %llu, "
                   "\"left_live\": %llu, \"peak\": %llu, \"growth\": %lld}",
                ph->runs, ph->count, ph->bytes, ph->left_live, ph->peak,
                ph->growth);
    }
    fprintf(f, "],\n \"outside_phases\": {\"count\": %llu, \"bytes\": %llu}, "
               "\"unmatched_phase_ends\": %llu, \"open_phases\": [",
            truth_live.outside[0], truth_live.outside[1],
            truth_live.unmatched_ends);
    for (i = 0; i < truth_live.nopen; i++)
        fprintf(f, "%s%u", i ? ", " : "", truth_live.open_order[i]);
    fputc(']', f);
}

static TRUTH_FN void truth_write(void)
{
    const char *path = getenv("TRUTH_FILE");
    FILE *f;
    int i;
    if (!path || !(f = fopen(path, "w")))
        return;
    pthread_mutex_lock(&truth_lock);
    fputs("{\"argv\": [", f);
    for (i = 0; i < truth_argc; i++) {
        if (i)
            fputs(", ", f);
        truth_json_string(f, truth_argv[i]);
    }
    fputs("], \"records\": [", f);
    for (i = 0; i < truth_n; i++) {
        const char *name = truth_tag_name ? truth_tag_name(truth_sites[i].tag)
                                          : NULL;
        char num[16];
        if (!name) {
            snprintf(num, sizeof num, "%u", truth_sites[i].tag);
            name = num;
        }
        fputs(i ? ",\n {" : "\n {", f);
        fputs("\"file\": ", f);
        truth_json_string(f, truth_sites[i].file);
        fputs(", \"function\": ", f);
        truth_json_string(f, truth_sites[i].function);
        fprintf(f, ", \"line\": %d, \"tag\": ", truth_sites[i].line);
        truth_json_string(f, name);
        fprintf(f, ", \"count\": %llu, \"bytes\": %llu",
                truth_sites[i].count, truth_sites[i].bytes);
        if (truth_live.on)
            truth_write_site_live(f, &truth_sites[i]);
        fputc('}', f);
    }
    fputc(']', f);
    if (truth_live.on)
        truth_write_live(f);
    fputs("}\n", f);
    pthread_mutex_unlock(&truth_lock);
    fclose(f);
}

/* Call first in main. tag_name: tag -> name as RT_TAG_NAME gives it. */
static TRUTH_FN void truth_init(int argc, char **argv,
                                const char *(*tag_name)(unsigned))
{
    truth_argc = argc;
    truth_argv = argv;
    truth_tag_name = tag_name;
    atexit(truth_write);
}

/* truth_init, for a program that frees only through FREE, REALLOC and
 * RELEASE_ARENA: the truth follows liveness and phases too. phase_name:
 * id -> name as RT_PHASE_NAME gives it (or NULL). */
static TRUTH_FN void truth_init_live(int argc, char **argv,
                                     const char *(*tag_name)(unsigned),
                                     const char *(*phase_name)(unsigned))
{
    truth_live.on = 1;
    truth_live.phase_name = phase_name;
    truth_init(argc, argv, tag_name);
}

/* In a child just forked (from a single-threaded moment: other threads
 * would hold the lock forever): its truth starts empty, as its events in
 * the profile do, and goes to $TRUTH_FILE.child. The blocks it inherited
 * stay known by size only: freeing one is an unmatched free. */
static TRUTH_FN void truth_forked_child(void)
{
    static char path[4096];
    const char *parent = getenv("TRUTH_FILE");
    size_t i;
    truth_n = 0;
    memset(truth_sites, 0, sizeof truth_sites);
    for (i = 0; i < TRUTH_LIVE_MAX; i++) { /* inherited: size only */
        truth_live.table[i].site = -1;
        truth_live.table[i].arena = NULL;
        truth_live.table[i].run = 0;
    }
    truth_live.live_bytes = truth_live.live_count = 0;
    truth_live.peak_bytes = truth_live.peak_count = 0;
    truth_live.temporary = 0;
    truth_live.unmatched[0] = truth_live.unmatched[1] = 0;
    truth_live.released[0] = truth_live.released[1] = 0;
    truth_live.last_alloc = NULL;
    memset(truth_live.phase, 0, sizeof truth_live.phase);
    memset(truth_live.run, 0, sizeof truth_live.run);
    truth_live.nphases = truth_live.phases_used = 0;
    truth_live.outside[0] = truth_live.outside[1] = 0;
    truth_live.unmatched_ends = 0;
    truth_live.nopen = 0;
    truth_depth = 0;
    if (parent && strlen(parent) < sizeof path - 8) {
        strcpy(path, parent);
        strcat(path, ".child");
        setenv("TRUTH_FILE", path, 1);
    }
}

#endif
