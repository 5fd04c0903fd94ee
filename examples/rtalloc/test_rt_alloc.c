/* test_rt_alloc.c - tests of the reference allocator, without perf.
 *
 * Prints "rt_alloc: N passed, M failed" and exits non-zero if M > 0.
 * Size 0 is valid: rt_alloc(0) returns a unique, freeable pointer (like
 * malloc(0) in glibc); rt_realloc(p, 0) frees p and returns NULL.
 */
#include "rt_alloc.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static void fill(void *p, size_t n, unsigned seed)
{
    unsigned char *b = p;
    size_t i;
    for (i = 0; i < n; i++)
        b[i] = (unsigned char)(seed + i * 131);
}

static int intact(const void *p, size_t n, unsigned seed)
{
    const unsigned char *b = p;
    size_t i;
    for (i = 0; i < n; i++)
        if (b[i] != (unsigned char)(seed + i * 131))
            return 0;
    return 1;
}

static int aligned(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

static const size_t sizes[] = {
    0, 1, 2, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129,
    255, 256, 257, 511, 512, 513, 1000, 1023, 1024, 1025, 2047, 2048, 2049,
    4095, 4096, 4097, 4080, 8192, 10000, 65536, 256 * KiB, MiB - 16, MiB,
    MiB + 1, 3 * MiB + 5};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Every size: non-NULL, aligned, usable, and contents survive the other
 * allocations and frees. */
static void test_sizes(void)
{
    void *p[NSIZES], *q[NSIZES];
    size_t i;

    for (i = 0; i < NSIZES; i++) {
        p[i] = rt_alloc(sizes[i], 1);
        CHECK(p[i] != NULL && aligned(p[i]));
        CHECK(rt_usable_size(p[i]) >= sizes[i]);
        fill(p[i], rt_usable_size(p[i]), (unsigned)i);
    }
    for (i = 0; i < NSIZES; i++) { /* interleave other blocks */
        q[i] = rt_alloc(sizes[NSIZES - 1 - i], 2);
        CHECK(q[i] != NULL && aligned(q[i]));
        fill(q[i], sizes[NSIZES - 1 - i], 0x55);
        if (i % 2)
            rt_free(q[i]);
    }
    for (i = 0; i < NSIZES; i++) {
        CHECK(intact(p[i], rt_usable_size(p[i]), (unsigned)i));
        rt_free(p[i]);
        if (i % 2 == 0)
            rt_free(q[i]);
    }
}

static void test_zero_and_null(void)
{
    void *a = rt_alloc(0, 1), *b = rt_alloc(0, 1), *c;

    CHECK(a != NULL && b != NULL && a != b);
    rt_free(a);
    rt_free(b);
    rt_free(NULL); /* no-op */
    CHECK(rt_usable_size(NULL) == 0);

    c = rt_realloc(NULL, 40, 3); /* = rt_alloc */
    CHECK(c != NULL && aligned(c) && rt_usable_size(c) >= 40);
    CHECK(rt_realloc(c, 0, 3) == NULL); /* = rt_free */
    c = rt_realloc(NULL, 10 * KiB, 3);
    CHECK(c != NULL && aligned(c));
    CHECK(rt_realloc(c, 0, 3) == NULL);

    CHECK(rt_alloc(SIZE_MAX, 1) == NULL);
    CHECK(rt_alloc(SIZE_MAX / 2 + 1, 1) == NULL);
    c = rt_alloc(100, 1);
    fill(c, 100, 9);
    CHECK(rt_realloc(c, SIZE_MAX - 8, 1) == NULL); /* c untouched */
    CHECK(intact(c, 100, 9));
    rt_free(c);
}

/* A freed block is reused: same thread, same class, last in first out. */
static void test_reuse(void)
{
    void *a = rt_alloc(200, 1), *b;
    int i, same = 1;

    rt_free(a);
    b = rt_alloc(250, 1);
    CHECK(a == b);
    rt_free(b);
    for (i = 0; i < 100000; i++) { /* steady state: no growth */
        size_t n = (size_t)(i % 300) + 1;
        void *p = rt_alloc(n, 1);
        if (n > 128 && n <= 256) /* b's class */
            same &= p == b;
        rt_free(p);
    }
    CHECK(same);
}

/* Many blocks at once: spans several 1 MiB chunks, all distinct. */
static void test_many(void)
{
    enum { N = 100000 };
    static void *p[N];
    int i, ok = 1;

    for (i = 0; i < N; i++) {
        p[i] = rt_alloc(24, 4);
        if (!p[i] || !aligned(p[i]))
            ok = 0;
        else
            fill(p[i], 24, (unsigned)i);
    }
    CHECK(ok);
    for (i = 0; i < N; i++)
        ok &= p[i] && intact(p[i], 24, (unsigned)i);
    CHECK(ok);
    for (i = 0; i < N; i++)
        rt_free(p[i]);
}

static void test_realloc(void)
{
    size_t n = 1, m;
    char *p = rt_realloc(NULL, n, 5), *q;
    int ok = 1;

    fill(p, n, 7);
    while (n < 4 * MiB) { /* grow through every class and into large */
        m = n + n / 2 + 1;
        p = rt_realloc(p, m, 5);
        ok &= p != NULL && aligned(p) && intact(p, n, 7);
        fill(p, m, 7);
        n = m;
    }
    CHECK(ok);
    while (n > 1) { /* and shrink back */
        m = n / 3;
        p = rt_realloc(p, m, 6);
        ok &= p != NULL && aligned(p) && intact(p, m, 7);
        n = m;
    }
    CHECK(ok);
    rt_free(p);

    p = rt_alloc(20, 1); /* same class (32): in place */
    fill(p, 20, 1);
    q = rt_realloc(p, 30, 2);
    CHECK(q == p && intact(q, 20, 1));
    q = rt_realloc(q, 17, 2);
    CHECK(q == p && intact(q, 17, 1));
    q = rt_realloc(q, 33, 2); /* next class: moves */
    CHECK(q != p && intact(q, 17, 1));
    rt_free(q);

    p = rt_alloc(5000, 1); /* large, same pages: in place */
    fill(p, 5000, 3);
    q = rt_realloc(p, 6000, 1);
    CHECK(q == p && intact(q, 5000, 3));
    q = rt_realloc(q, 20000, 1);
    CHECK(q != NULL && intact(q, 5000, 3));
    q = rt_realloc(q, 100, 1); /* large to small */
    CHECK(q != NULL && intact(q, 100, 3) && rt_usable_size(q) == 128);
    rt_free(q);
}

/* Threads: random allocs, reallocs and frees over private slots, checking
 * contents; blocks left over are freed by the main thread afterwards. */
enum { SLOTS = 512, OPS = 100000 };
struct worker {
    unsigned id;
    char *slot[SLOTS];
    size_t size[SLOTS];
    int bad;
};

static unsigned rnd(unsigned *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void *worker(void *arg)
{
    struct worker *w = arg;
    unsigned s = 2463534242u + w->id, i;

    for (i = 0; i < OPS; i++) {
        unsigned k = rnd(&s) % SLOTS, r = rnd(&s);
        size_t n = r % 64 == 0 ? 4096 + r % 20000 : r % 600;
        char *p = w->slot[k];

        if (p && !intact(p, w->size[k], w->id * SLOTS + k))
            w->bad++;
        if (p && r % 3 == 0) {
            rt_free(p);
            w->slot[k] = NULL;
            continue;
        }
        p = p ? rt_realloc(p, n, w->id) : rt_alloc(n, w->id);
        if (n && !p) {
            w->bad++;
            continue;
        }
        if (p && !aligned(p))
            w->bad++;
        w->slot[k] = p;
        w->size[k] = n;
        fill(p, n, w->id * SLOTS + k);
    }
    return NULL;
}

static void test_threads(void)
{
    static struct worker w[2];
    pthread_t t[2];
    int round, i, k, ok;

    for (round = 0; round < 2; round++) { /* round 2 reuses returned blocks */
        for (i = 0; i < 2; i++) {
            memset(&w[i], 0, sizeof w[i]);
            w[i].id = (unsigned)(i + 1);
            CHECK(pthread_create(&t[i], NULL, worker, &w[i]) == 0);
        }
        for (i = 0; i < 2; i++) {
            pthread_join(t[i], NULL);
            CHECK(w[i].bad == 0);
        }
        for (i = 0, ok = 1; i < 2; i++)
            for (k = 0; k < SLOTS; k++) {
                char *p = w[i].slot[k];
                if (p) {
                    ok &= intact(p, w[i].size[k], w[i].id * SLOTS + k);
                    rt_free(p); /* freed by another thread than its owner */
                }
            }
        CHECK(ok);
    }
}

int main(void)
{
    test_sizes();
    test_zero_and_null();
    test_reuse();
    test_many();
    test_realloc();
    test_threads();
    printf("rt_alloc: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
