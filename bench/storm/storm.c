/* storm: an allocation storm shaped like a compiler front end, the
 * workload of bench/compare.py.
 *
 *   storm [ALLOCS] [THREADS] [DEPTH]
 *
 * Each of THREADS threads (default 1) compiles "translation units" until
 * it has made ALLOCS/THREADS allocations (default ALLOCS 200000; checked
 * after each unit, so the count is a little over). A unit is 64
 * statements; each statement:
 *   - tokenizes into the unit's token vector, grown with rt_realloc;
 *   - takes 4 scratch buffers (256..2047 bytes), freed all at once when
 *     the statement is parsed;
 *   - parses a recursive expression DEPTH levels deep (default 12): a node
 *     per level, and two leaves per level whose identifiers go through an
 *     inlined interning helper that copies each name the first time the
 *     unit sees it;
 * and one unit in four takes a rare large symbol-table block (64 KiB to
 * 1 MiB). The unit frees everything at its end. All choices come from a
 * per-thread xorshift seeded by the thread's number: the same allocations
 * every run.
 *
 * Every allocation goes through ALLOC/REALLOC (storm_truth.h), which
 * counts it per site: $TRUTH_FILE gets the truth as JSON. stdout gets
 *   allocs=N bytes=N elapsed_ns=N cpu_ns=N
 * elapsed_ns and cpu_ns (user + system, getrusage) cover the threads'
 * work only, not process or profiler start-up.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "rt_alloc.h"
#include "rt_probes.h"
#include "storm_truth.h"

enum { TAG_AST = 1, TAG_IDENT, TAG_SCRATCH, TAG_SYMTAB, TAG_TOKENS };
RT_TAG_NAME(TAG_AST, "ast");
RT_TAG_NAME(TAG_IDENT, "ident");
RT_TAG_NAME(TAG_SCRATCH, "scratch");
RT_TAG_NAME(TAG_SYMTAB, "symtab");
RT_TAG_NAME(TAG_TOKENS, "tokens");

#define STMTS 64       /* statements per unit */
#define NSCRATCH 4     /* scratch buffers per statement */
#define VOCAB 2048     /* distinct identifiers */
#define TABLE 4096     /* interning table slots (> VOCAB: never full) */
#define MAX_DEPTH 1000

struct node {
    struct node *kid[2];
    const char *name;
    size_t size; /* bytes allocated, for the truth's live count */
};

struct unit {
    unsigned long long rng;
    const char *table[TABLE]; /* interned names, open addressing */
    unsigned name_of[TABLE];  /* which identifier each slot holds */
    unsigned ntokens, tokens_cap;
    unsigned *tokens;
    struct node *stmt[STMTS];
    char *symtab;
    size_t symtab_size;
};

static long per_thread_allocs = 200000;
static int depth = 12;

static unsigned rnd(struct unit *u, unsigned n)
{
    u->rng ^= u->rng << 13;
    u->rng ^= u->rng >> 7;
    u->rng ^= u->rng << 17;
    return (unsigned)(u->rng >> 11) % n;
}

static void *checked(void *p)
{
    if (!p) {
        fputs("storm: out of memory\n", stderr);
        exit(2);
    }
    return p;
}

/* The string-interning helper every compiler has, inlined as it is in
 * most: its allocation belongs to this line, inside the caller's frame. */
static inline __attribute__((always_inline)) const char *
intern(struct unit *u, unsigned id)
{
    unsigned slot = (id * 2654435761u) % TABLE;
    char name[16];
    size_t len;
    char *s;

    while (u->table[slot] && u->name_of[slot] != id)
        slot = (slot + 1) % TABLE;
    if (u->table[slot])
        return u->table[slot];
    len = (size_t)snprintf(name, sizeof name, "id%u", id) + 1;
    s = checked(ALLOC(S_STR, len, TAG_IDENT));
    memcpy(s, name, len);
    u->table[slot] = s;
    u->name_of[slot] = id;
    return s;
}

static __attribute__((noinline)) struct node *leaf(struct unit *u)
{
    struct node *n = checked(ALLOC(S_LEAF, sizeof(struct node), TAG_AST));
    n->kid[0] = n->kid[1] = NULL;
    n->name = intern(u, rnd(u, VOCAB));
    n->size = sizeof(struct node);
    return n;
}

/* One node per level (24..48 extra bytes for operands), a leaf beside
 * the child at every level: stacks as deep as the expression. */
static __attribute__((noinline)) struct node *expr(struct unit *u, int level)
{
    size_t size = sizeof(struct node) + 8 * rnd(u, 4);
    struct node *n = checked(ALLOC(S_NODE, size, TAG_AST));
    n->size = size;
    n->name = NULL;
    n->kid[0] = level > 1 ? expr(u, level - 1) : leaf(u);
    n->kid[1] = leaf(u);
    return n;
}

static void free_tree(struct node *n)
{
    while (n) {
        struct node *next = n->kid[0];
        if (n->kid[1]) { /* always a leaf */
            FREED(S_LEAF, n->kid[1]->size);
            rt_free(n->kid[1]);
        }
        FREED(n->name ? S_LEAF : S_NODE, n->size);
        rt_free(n);
        n = next;
    }
}

static __attribute__((noinline)) void tokenize(struct unit *u)
{
    unsigned i, n = 8 + rnd(u, 24);
    for (i = 0; i < n; i++) {
        if (u->ntokens == u->tokens_cap) {
            unsigned cap = u->tokens_cap ? 2 * u->tokens_cap : 64;
            FREED(S_TOKENS, u->tokens_cap * sizeof *u->tokens);
            u->tokens = checked(REALLOC(S_TOKENS, u->tokens, cap * sizeof *u->tokens, TAG_TOKENS));
            u->tokens_cap = cap;
        }
        u->tokens[u->ntokens++] = rnd(u, VOCAB);
    }
}

static __attribute__((noinline)) void statement(struct unit *u, int i)
{
    char *scratch[NSCRATCH];
    size_t sizes[NSCRATCH];
    int k;

    tokenize(u);
    for (k = 0; k < NSCRATCH; k++) {
        sizes[k] = 256 + rnd(u, 1792);
        scratch[k] = checked(ALLOC(S_SCRATCH, sizes[k], TAG_SCRATCH));
        scratch[k][0] = 0;
    }
    u->stmt[i] = expr(u, depth);
    for (k = 0; k < NSCRATCH; k++) { /* released together, arena-style */
        FREED(S_SCRATCH, sizes[k]);
        rt_free(scratch[k]);
    }
}

static __attribute__((noinline)) void symbol_table(struct unit *u)
{
    u->symtab_size = ((size_t)64 << 10) + ((size_t)rnd(u, 960) << 10);
    u->symtab = checked(ALLOC(S_SYMTAB, u->symtab_size, TAG_SYMTAB));
    memset(u->symtab, 0, 64);
}

static __attribute__((noinline)) void end_unit(struct unit *u)
{
    unsigned i;
    for (i = 0; i < STMTS; i++)
        free_tree(u->stmt[i]);
    for (i = 0; i < TABLE; i++)
        if (u->table[i]) {
            FREED(S_STR, strlen(u->table[i]) + 1);
            rt_free((void *)u->table[i]);
            u->table[i] = NULL;
        }
    if (u->symtab) {
        FREED(S_SYMTAB, u->symtab_size);
        rt_free(u->symtab);
        u->symtab = NULL;
    }
    FREED(S_TOKENS, u->tokens_cap * sizeof *u->tokens);
    rt_free(u->tokens);
    u->tokens = NULL;
    u->ntokens = u->tokens_cap = 0;
}

static __attribute__((noinline)) void compile_unit(struct unit *u)
{
    int i;
    if (rnd(u, 4) == 0)
        symbol_table(u);
    for (i = 0; i < STMTS; i++)
        statement(u, i);
    end_unit(u);
}

static void *worker(void *arg)
{
    static __thread struct unit u; /* 48 KiB: not on the stack */
    u.rng = 0x9e3779b97f4a7c15ULL * ((unsigned long long)(size_t)arg + 1);
    while (storm_allocs(&storm_tl) < (unsigned long long)per_thread_allocs)
        compile_unit(&u);
    storm_truth_merge();
    return NULL;
}

static double now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static long arg(int argc, char **argv, int i, long def, long min, long max)
{
    char *end;
    long v;
    if (argc <= i)
        return def;
    v = strtol(argv[i], &end, 10);
    if (*end || v < min || v > max) {
        fprintf(stderr, "storm: argument %d must be %ld..%ld\n", i, min, max);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    long allocs = arg(argc, argv, 1, 200000, 1, 1000000000L);
    long threads = arg(argc, argv, 2, 1, 1, 64);
    pthread_t tid[64];
    double t0, c0, t1, c1;
    unsigned long long bytes = 0;
    long i;
    int s;

    depth = (int)arg(argc, argv, 3, 12, 1, MAX_DEPTH);
    per_thread_allocs = (allocs + threads - 1) / threads;
    storm_keep_peak = threads == 1;
    storm_sites[S_NODE].tag = "ast";
    storm_sites[S_LEAF].tag = "ast";
    storm_sites[S_STR].tag = "ident";
    storm_sites[S_SCRATCH].tag = "scratch";
    storm_sites[S_SYMTAB].tag = "symtab";
    storm_sites[S_TOKENS].tag = "tokens";

    t0 = now(CLOCK_MONOTONIC);
    c0 = cpu_seconds();
    for (i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, worker, (void *)(size_t)i)) {
            fputs("storm: pthread_create failed\n", stderr);
            return 2;
        }
    for (i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    t1 = now(CLOCK_MONOTONIC);
    c1 = cpu_seconds();

    for (s = 0; s < NSITES; s++)
        bytes += storm_sum.bytes[s];
    printf("allocs=%llu bytes=%llu elapsed_ns=%.0f cpu_ns=%.0f\n",
           storm_allocs(&storm_sum), bytes, (t1 - t0) * 1e9, (c1 - c0) * 1e9);
    storm_truth_write(__FILE__, argc, argv);
    return 0;
}
