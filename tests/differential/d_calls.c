/* d_calls.c - the C program of the differential corpus
 * (tests/integration/test_differential.py): built many ways (gcc and
 * clang, -O0 to -O3 and -Os, PIE and not, static, .debug_frame only,
 * debug info split off by build-id; tests/differential/Makefile.inc), it
 * allocates a few hundred blocks through rt_alloc (examples/rtalloc) from
 * stacks of every shape a C program has:
 *   a recursive tree build         (depth 1..8, one block per node)
 *   mutual recursion               (even/odd, a block every few levels)
 *   a callback called by libc      (qsort's comparator allocates: the
 *                                   stack passes through libc's frames)
 *   calls through function pointers and always-inlined helpers
 *   functions named as Rust (v0 and legacy mangling) and OCaml name them
 *   deep recursion                 (300 levels with 96-byte frames: more
 *                                   than the 8 KiB stack copy; both
 *                                   unwinders must stop at the same frame)
 * Every block is freed. No output; exit status 0. */
#include <stdlib.h>
#include <string.h>

#include "rt_alloc.h"

#define NOINLINE __attribute__((noinline))

static unsigned long sink;

/* Not `return rt_alloc(...)`: a tail call would take this frame off the
 * stack before the probe fires, on one side as on the other, but then
 * there is less to compare. */
static NOINLINE void *take(size_t n, unsigned tag)
{
    char *p = rt_alloc(n, tag);
    p[0] = (char)n;
    sink += (unsigned long)p[0];
    return p;
}

static inline __attribute__((always_inline)) void *take_inlined(size_t n)
{
    return take(n + 8, 2);
}

struct node {
    struct node *kid[2];
    char *label;
};

static NOINLINE struct node *tree(int depth, unsigned seed)
{
    struct node *t = take(sizeof *t, 1);
    t->label = take_inlined(seed % 40);
    if (depth > 0 && (seed % 5) != 0) {
        t->kid[0] = tree(depth - 1, seed * 7 + 3);
        t->kid[1] = depth % 2 ? tree(depth - 2, seed * 13 + 1) : NULL;
    } else {
        t->kid[0] = t->kid[1] = NULL;
    }
    return t;
}

static NOINLINE void tree_free(struct node *t)
{
    if (!t)
        return;
    tree_free(t->kid[0]);
    tree_free(t->kid[1]);
    rt_free(t->label);
    rt_free(t);
}

static NOINLINE int is_odd(int n, void **keep);

static NOINLINE int is_even(int n, void **keep)
{
    if (n == 0)
        return 1;
    if (n % 4 == 0)
        keep[n] = take((size_t)n, 3);
    return is_odd(n - 1, keep);
}

static NOINLINE int is_odd(int n, void **keep)
{
    if (n == 0)
        return 0;
    if (n % 3 == 0)
        keep[n] = take((size_t)n * 2, 3);
    return is_even(n - 1, keep) + 0 * (int)sink;
}

static int compares;

static int by_value(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (++compares % 16 == 0)
        rt_free(take(16, 4));
    return (x > y) - (x < y);
}

/* 300 levels of about 96 bytes of frame each: deeper than 8 KiB */
static NOINLINE unsigned long deep(int n)
{
    volatile char pad[64];
    unsigned long r;

    pad[n % 64] = (char)n;
    if (n == 0) {
        void *p = take(100, 5);
        rt_free(p);
        return 1;
    }
    if (n % 50 == 0)
        rt_free(take((size_t)n, 5));
    r = deep(n - 1) + (unsigned long)pad[n % 64];
    return r;
}

/* Named as rustc names functions (an asm label): its v0 mangling and
 * its legacy one; and as ocamlopt does. perf demangles them
 * (mycrate::inner::v0_frame, mycrate::legacy, Mycaml.make_block_42,
 * Stdlib.<>_7), and the native reader must name them alike. Not static:
 * gcc -flto would add .lto_priv.0 to a local's name. */
void *rust_v0(size_t n) __asm__("_RNvNtCs1234_7mycrate5inner8v0_frame");
void *rust_legacy(size_t n) __asm__("_ZN7mycrate6legacy17h0123456789abcdefE");
void *ocaml_outer(size_t n) __asm__("camlStdlib__$3c$3e_7");
void *ocaml_inner(size_t n) __asm__("camlMycaml__make_block_42");
NOINLINE void *rust_legacy(size_t n)
{
    void *p = take(n, 7);
    sink += (unsigned long)p & 1;
    return p;
}
NOINLINE void *rust_v0(size_t n)
{
    void *p = rust_legacy(n + 1);
    sink += (unsigned long)p & 1;
    return p;
}
NOINLINE void *ocaml_inner(size_t n)
{
    void *p = rust_v0(n);
    sink += (unsigned long)p & 1;
    return p;
}
NOINLINE void *ocaml_outer(size_t n)
{
    void *p = ocaml_inner(n);
    sink += (unsigned long)p & 1;
    return p;
}

/* The program's first allocation, from a frame larger than the 8 KiB
 * stack copy: its caller's return address lies past the copy, so the
 * stack is cut short there (perf: a failed read). The first sample of a
 * process is the one libdw unwinds (the native reader's table of CFI
 * takes the later ones), and it said "outermost" here. */
static NOINLINE void large_frame(void)
{
    volatile char big[12 * 1024];

    big[0] = 1;
    big[sizeof big - 1] = 2;
    rt_free(take(32 + (size_t)big[0] + (size_t)big[sizeof big - 1], 1));
}

typedef void *(*maker)(int);

static NOINLINE void *make_small(int i) { return take((size_t)i % 64 + 1, 6); }
static NOINLINE void *make_large(int i) { return take((size_t)i * 32 + 4096, 6); }

int main(int argc, char **argv)
{
    static void *keep[64];
    static const maker makers[2] = {make_small, make_large};
    int values[200];
    int round, i;

    (void)argv;
    large_frame();
    for (round = 0; round < 3 + argc - 1; round++) {
        struct node *t = tree(round + 5, (unsigned)round * 11 + 2);
        tree_free(t);
    }
    memset(keep, 0, sizeof keep);
    is_even(60, keep);
    for (i = 0; i < 64; i++)
        rt_free(keep[i]);
    for (i = 0; i < 200; i++)
        values[i] = (i * 7919) % 211;
    qsort(values, 200, sizeof values[0], by_value);
    for (i = 0; i < 40; i++)
        rt_free(makers[i % 2](i));
    for (i = 0; i < 20; i++)
        rt_free(ocaml_outer((size_t)i + 1));
    sink += deep(300);
    return 0;
}
