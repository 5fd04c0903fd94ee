/* test_rt_live.c - the sampled pointer table of include/rt_live.h, without
 * perf: the program raises the semaphores itself (the probes are nops
 * then) and samples every byte (RT_SAMPLE_BYTES=1: each RT_ALLOC of size
 * s > 0 is a sample of weight s), so it knows every answer. The pointers
 * are made-up addresses: the macros never dereference them.
 *
 * Checks: every sampled pointer found again with its weight; frees of
 * unknown pointers miss; a full bucket and a full table count untracked
 * and keep every tracked entry right; RT_RELEASE purges exactly its range
 * (even when rt:release itself is not recorded); concurrent inserts and
 * removes, also of another thread's pointers, lose and corrupt nothing; a
 * forked child starts empty; nothing happens while rt:sample_free is not
 * recorded. Prints "rt_live: N passed, M failed", exits non-zero if M > 0.
 */
#include "rt_probes.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define FIRED(kind) __atomic_load_n(&rt__fired[RT__FIRED_##kind], __ATOMIC_RELAXED)

static void reset(void)
{
    int i;
    for (i = 0; i < RT__FIRED_KINDS; i++)
        rt__fired[i] = 0;
}

/* A made-up block address: 16-byte aligned, never 0. */
static unsigned long long addr(unsigned long long i)
{
    return 0x100000000ULL + i * 16;
}

static unsigned long long size_of(unsigned long long p)
{
    return (p >> 4) % 1000 + 1;
}

static void sample(unsigned long long p) { RT_ALLOC((void *)(size_t)p, size_of(p), 0); }
static void release_block(unsigned long long p) { RT_FREE((void *)(size_t)p, 0, 0); }

static unsigned long long bucket_of(unsigned long long p)
{
    return rt__live_hash(p);
}

static int table_empty(void)
{
    int i;
    if (!rt__live_table)
        return 1;
    for (i = 0; i < RT_LIVE_SLOTS; i++)
        if (rt__live_table->key[i])
            return 0;
    /* and every bucket's count back to 0 (else its misses get slower) */
    for (i = 0; i < (1 << RT_LIVE_BUCKET_BITS); i++)
        if (rt__live_table->rt__used[i])
            return 0;
    return 1;
}

static void test_basic(void)
{
    const unsigned long long n = 1000;
    unsigned long long i, ok = 1;

    reset();
    for (i = 0; i < n; i++)
        sample(addr(i));
    CHECK(FIRED(SAMPLE) == n);
    CHECK(rt__live_count == n);
    CHECK(FIRED(UNTRACKED) == 0);
    /* Frees of pointers never sampled miss. */
    for (i = n; i < 2 * n; i++)
        release_block(addr(i));
    CHECK(FIRED(SAMPLE_FREE) == 0);
    CHECK(rt__live_count == n);
    /* Half found through the lookup itself, with their weights... */
    for (i = 0; i < n / 2; i++)
        ok &= rt__live_remove(addr(i)) == size_of(addr(i));
    CHECK(ok);
    /* ...the other half through RT_FREE, which fires rt:sample_free. */
    for (i = 0; i < n; i++)
        release_block(addr(i));
    CHECK(FIRED(SAMPLE_FREE) == n - n / 2);
    CHECK(rt__live_count == 0);
    CHECK(table_empty());
    /* A second free of the same pointer finds nothing. */
    release_block(addr(0));
    CHECK(FIRED(SAMPLE_FREE) == n - n / 2);
    /* A pointer sampled again before its free was seen: one entry, the
     * newer weight. */
    RT_ALLOC((void *)(size_t)addr(5), 7, 0);
    RT_ALLOC((void *)(size_t)addr(5), 9, 0);
    CHECK(rt__live_count == 1);
    CHECK(rt__live_remove(addr(5)) == 9);
    CHECK(rt__live_remove(addr(5)) == 0);
}

/* 12 pointers of one bucket: 8 fit, 4 are untracked; the 8 are all found
 * with their weights, the 4 never. */
static void test_full_bucket(void)
{
    unsigned long long same[12], b0 = bucket_of(addr(0)), i, k = 0, hits = 0;

    reset();
    for (i = 0; k < 12; i++)
        if (bucket_of(addr(i)) == b0)
            same[k++] = addr(i);
    for (i = 0; i < 12; i++)
        sample(same[i]);
    CHECK(FIRED(UNTRACKED) == 4);
    CHECK(rt__live_count == 8);
    CHECK(rt__live_table->rt__used[b0] == 8);
    for (i = 0; i < 12; i++) {
        unsigned long long w = rt__live_remove(same[i]);
        if (i < 8)
            CHECK(w == size_of(same[i]));
        else
            CHECK(w == 0);
        hits += w != 0;
    }
    CHECK(hits == 8);
    /* A freed slot is usable again at once. */
    sample(same[11]);
    CHECK(rt__live_count == 1);
    CHECK(rt__live_remove(same[11]) == size_of(same[11]));
    CHECK(table_empty());
}

/* More samples than slots: tracked + untracked = samples, and exactly the
 * tracked ones are freed (no lookup blocks or fails on a full table). */
static void test_full_table(void)
{
    const unsigned long long n = RT_LIVE_SLOTS + 10000;
    unsigned long long i;

    reset();
    for (i = 0; i < n; i++)
        sample(addr(i));
    CHECK(FIRED(SAMPLE) == n);
    CHECK(rt__live_count + FIRED(UNTRACKED) == n);
    CHECK(rt__live_count <= RT_LIVE_SLOTS);
    CHECK(FIRED(UNTRACKED) >= n - RT_LIVE_SLOTS);
    for (i = 0; i < n; i++)
        release_block(addr(i));
    CHECK(FIRED(SAMPLE_FREE) == n - FIRED(UNTRACKED));
    CHECK(rt__live_count == 0);
    CHECK(table_empty());
}

/* RT_RELEASE(base, len) removes the entries in [base, base + len) and only
 * those, whether rt:release is recorded or not. */
static void test_release(void)
{
    unsigned long long base = addr(100), len = 50 * 16, i, in = 0;
    int recorded;

    for (recorded = 0; recorded < 2; recorded++) {
        reset();
        rt_release_semaphore = (unsigned short)recorded;
        for (i = 0; i < 300; i++)
            sample(addr(i));
        RT_RELEASE((void *)(size_t)base, len);
        CHECK(FIRED(RELEASE) == (unsigned long long)recorded);
        CHECK(rt__live_count == 300 - 50);
        for (i = 0, in = 0; i < 300; i++) {
            unsigned long long w = rt__live_remove(addr(i));
            int inside = addr(i) >= base && addr(i) < base + len;
            in += inside;
            CHECK(w == (inside ? 0 : size_of(addr(i))));
        }
        CHECK(in == 50);
        CHECK(table_empty());
        /* A release over an empty table is a no-op. */
        RT_RELEASE((void *)(size_t)base, len);
        CHECK(rt__live_count == 0);
    }
    rt_release_semaphore = 0;
    /* A range reaching the top of the address space does not wrap. */
    sample(addr(1));
    RT_RELEASE((void *)(size_t)~0xfffULL, 0x1000);
    CHECK(rt__live_count == 1);
    RT_RELEASE((void *)(size_t)addr(1), 1);
    CHECK(rt__live_count == 0);
}

#define THREADS 4
#define PER_THREAD 3000
#define ROUNDS 30

struct job {
    int id;
    int mode; /* 0: insert own; 1: remove the next thread's; 2: churn own */
    unsigned long long bad;
};

static unsigned long long thread_addr(int t, unsigned long long i)
{
    return addr((unsigned long long)t * 1000003ULL + i * 7);
}

static void *worker(void *arg)
{
    struct job *j = (struct job *)arg;
    unsigned long long i;
    int r, t = j->mode == 1 ? (j->id + 1) % THREADS : j->id;

    if (j->mode == 0) {
        for (i = 0; i < PER_THREAD; i++)
            sample(thread_addr(t, i));
    } else if (j->mode == 1) {
        for (i = 0; i < PER_THREAD; i++) {
            unsigned long long p = thread_addr(t, i);
            j->bad += rt__live_remove(p) != size_of(p);
        }
    } else {
        for (r = 0; r < ROUNDS; r++) {
            for (i = 0; i < PER_THREAD; i++)
                sample(thread_addr(t, i));
            for (i = 0; i < PER_THREAD; i++) {
                unsigned long long p = thread_addr(t, i);
                if (i % 2)
                    j->bad += rt__live_remove(p) != size_of(p);
                else
                    release_block(p);
            }
        }
    }
    return NULL;
}

static void run(int mode, struct job *jobs)
{
    pthread_t th[THREADS];
    int i;
    for (i = 0; i < THREADS; i++) {
        jobs[i].id = i;
        jobs[i].mode = mode;
        jobs[i].bad = 0;
        CHECK(pthread_create(&th[i], NULL, worker, &jobs[i]) == 0);
    }
    for (i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
}

static void test_threads(void)
{
    struct job jobs[THREADS];
    unsigned long long bad = 0;
    int i;

    reset();
    /* All insert at once, then each removes another thread's pointers. */
    run(0, jobs);
    CHECK(FIRED(UNTRACKED) == 0);
    CHECK(rt__live_count == THREADS * PER_THREAD);
    run(1, jobs);
    for (i = 0; i < THREADS; i++)
        bad += jobs[i].bad;
    CHECK(bad == 0);
    CHECK(rt__live_count == 0);
    CHECK(table_empty());
    /* All insert and remove at once, buckets shared between threads. */
    reset();
    run(2, jobs);
    for (i = 0, bad = 0; i < THREADS; i++)
        bad += jobs[i].bad;
    CHECK(bad == 0);
    CHECK(FIRED(UNTRACKED) == 0);
    CHECK(FIRED(SAMPLE) == (unsigned long long)THREADS * PER_THREAD * ROUNDS);
    CHECK(FIRED(SAMPLE_FREE) == (unsigned long long)THREADS * PER_THREAD * ROUNDS / 2);
    CHECK(rt__live_count == 0);
    CHECK(table_empty());
}

/* A forked child starts with an empty table: its frees of the parent's
 * sampled blocks fire nothing; the parent's entries are untouched. */
static void test_fork(void)
{
    int status = -1;
    pid_t pid;

    reset();
    sample(addr(1));
    sample(addr(2));
    pid = fork();
    if (pid == 0) {
        int ok = rt__live_table == NULL && rt__live_count == 0;
        release_block(addr(1));
        ok &= FIRED(SAMPLE_FREE) == 0;
        sample(addr(3));
        ok &= rt__live_count == 1 && rt__live_remove(addr(3)) == size_of(addr(3));
        _exit(ok ? 0 : 1);
    }
    CHECK(pid > 0);
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(rt__live_count == 2);
    release_block(addr(1));
    release_block(addr(2));
    CHECK(FIRED(SAMPLE_FREE) == 2);
    CHECK(table_empty());
}

/* rt:sample recorded without rt:sample_free: no table, nothing counted
 * untracked, frees not looked up. */
static void test_off(void)
{
    reset();
    rt_sample_free_semaphore = 0;
    sample(addr(1));
    CHECK(FIRED(SAMPLE) == 1);
    CHECK(rt__live_count == 0 && FIRED(UNTRACKED) == 0);
    release_block(addr(1));
    CHECK(FIRED(SAMPLE_FREE) == 0);
    rt_sample_free_semaphore = 1;
}

int main(void)
{
    setenv("RT_SAMPLE_BYTES", "1", 1); /* read at the first sample */
    rt_sample_semaphore = 1;
    rt_sample_free_semaphore = 1;
    test_off();
    CHECK(rt__live_table == NULL); /* mapped on the first insert only */
    test_basic();
    test_full_bucket();
    test_full_table();
    test_release();
    test_threads();
    test_fork();
    printf("rt_live: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
