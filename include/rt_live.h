/* rt_live.h - the sampled pointer table: sampled in-use without recording
 * every free (included by rt_probes.h; do not include it directly).
 *
 * While rt:sample_free is recorded (with rt:sample), RT_ALLOC puts every
 * pointer it reports in an rt:sample into this table with the sample's
 * weight, and RT_FREE looks every freed pointer up: on a hit it removes
 * the entry and fires rt:sample_free(ptr, weight). RT_RELEASE removes every
 * entry in its range (the report applies rt:release itself). So a sampled
 * recording learns which sampled blocks died, and when, at the cost of one
 * event per sampled block instead of one per free (docs/sampling.md,
 * "In use").
 *
 * The table. 2^16 slots in 2^13 buckets of 8: a bucket's 8 keys are one
 * 64-byte cache line, the weights a parallel array touched only on a hit,
 * and a byte per bucket says whether it may hold anything (rt__used[]: a miss
 * in an empty bucket reads that byte only). 1 MiB + 8 KiB, mapped with mmap on the first insert (never malloc: the
 * allocator being profiled may be malloc), published with a CAS; never
 * unmapped but in a forked child, which starts empty like its counts.
 * Size: the table holds the blocks sampled and not yet freed, about
 * live bytes / R of them (R = RT_SAMPLE_BYTES). At the default R = 512 KiB
 * a bucket of 8 overflows rarely below 25% load (16k entries: 8 GiB live)
 * and 2^16 entries stand for 32 GiB; at R = 64 KiB, 1 GiB live is 16k
 * entries. Bigger would cost every process that records sampled frees
 * more memory for programs that do not need it.
 *
 * Why buckets and no probing beyond them: a free looks up a pointer that
 * is almost never in the table (one block in R / size is sampled), so the
 * cost that matters is a miss. Linear probing ends a miss at the first
 * empty slot, and deletions then need tombstones, which never turn back
 * into empty slots without a rebuild (doing it in place races with a
 * concurrent insert further down the run): after enough inserts every
 * slot is a tombstone and every miss scans the whole probe limit.
 * Backward-shift deletion keeps runs short, but moves entries under
 * concurrent lookups, which can then miss an entry that is there. A
 * key's bucket is fixed, so a removed slot just becomes empty again:
 * lookups (every free) are 8 loads of one cache line and never write;
 * insert and remove are a CAS and a store; no lock, nothing blocks,
 * nothing moves. A full bucket (8 live samples with the same hash, or a
 * failed mmap) leaves the sample out of the table and counts it in
 * rt:exit's `untracked`: its free can never be matched, so in-use
 * estimates are too high by at most its weight, and the report says so.
 *
 * Concurrency. A pointer is inserted by the thread whose RT_ALLOC sampled
 * it and removed by the thread whose RT_FREE frees it, which the program
 * orders after the allocation; operations on one key never overlap. Keys
 * of other threads share buckets: a slot is claimed with a CAS from 0, so
 * two inserts never take the same one; a remove reads the weight before it
 * empties the slot (release), so an insert that claims the slot next
 * (acquire) cannot have its weight read by the remove. An insert of a
 * pointer still in its bucket (its free was never seen: freed while
 * nothing looked up, or outside the probes) overwrites that entry.
 */
#ifndef RT_LIVE_H
#define RT_LIVE_H
/* Its own code is not the user's: the compiler reports no warning of
 * it, whatever the user's flags (docs/probes.md, "Requirements") */
#if defined(__GNUC__) && __INCLUDE_LEVEL__ > 0 && !defined(RT_PROBES_WARNINGS)
#pragma GCC system_header
#endif

#include <sys/mman.h>

#define RT_LIVE_WAYS 8
#define RT_LIVE_BUCKET_BITS 13
#define RT_LIVE_SLOTS (RT_LIVE_WAYS << RT_LIVE_BUCKET_BITS)

/* MAP_ANONYMOUS is not declared under -std=c99 without _DEFAULT_SOURCE;
 * its value where the kernel ABI fixes it at 0x20. Elsewhere, without
 * it, the table is never mapped (every sample counts as untracked). */
#if defined(MAP_ANONYMOUS)
#define RT__MAP_ANON MAP_ANONYMOUS
#elif defined(__linux__) &&                                                   \
    (defined(__x86_64__) || defined(__aarch64__) || defined(__riscv) ||      \
     defined(__powerpc64__) || defined(__s390x__) || defined(__loongarch64))
#define RT__MAP_ANON 0x20
#endif

struct rt__live {
    /* per bucket, at least the number of its entries (see below): 0 lets
     * a lookup miss without reading the bucket. 8 KiB, keeping key
     * 64-byte aligned. */
    unsigned char rt__used[1 << RT_LIVE_BUCKET_BITS];
    unsigned long long key[RT_LIVE_SLOTS];    /* pointer; 0 = empty */
    unsigned long long weight[RT_LIVE_SLOTS]; /* its sample's weight */
};

#ifdef __cplusplus
extern "C" {
#endif
/* Per ELF file, like the semaphores: the table, and the number of entries
 * in it (lets RT_RELEASE skip the scan of an empty table). */
extern struct rt__live *rt__live_table;
extern unsigned long long rt__live_count;
RT__SHARED struct rt__live *rt__live_table;
RT__SHARED unsigned long long rt__live_count;
#ifdef __cplusplus
}
#endif

/* p's bucket (Fibonacci hashing: blocks a fixed stride apart spread over
 * all buckets). */
static __inline__ unsigned long long rt__live_hash(unsigned long long p)
{
    return (p * 0x9e3779b97f4a7c15ULL) >> (64 - RT_LIVE_BUCKET_BITS);
}

#ifdef __cplusplus
extern "C" {
#endif
/* Out of line, one copy per ELF file, plain C names: RT_ALLOC and
 * RT_RELEASE call them through RT__DEFINE_CALL2 (rt_sampler.h), so that
 * the call costs the path where nothing records nothing. */
unsigned long long rt__live_insert(unsigned long long p, unsigned long long w)
    RT__OUTLINE;
unsigned long long rt__live_purge(unsigned long long base,
                                  unsigned long long len)
    RT__OUTLINE;
/* rt__live_fork_child is declared in rt_exit.h, which calls it. */
struct rt__live *rt__live_map(void);

/* The table, mapped on first use. NULL if mmap fails. */
RT__OUTLINE struct rt__live *
rt__live_map(void)
{
#if defined(RT__MAP_ANON)
    struct rt__live *t = RT__NULL;
    void *m = mmap(RT__NULL, sizeof(struct rt__live), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | RT__MAP_ANON, -1, 0);
    if (m == MAP_FAILED)
        return RT__NULL;
    if (__atomic_compare_exchange_n(&rt__live_table, &t, (struct rt__live *)m,
                                    0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return (struct rt__live *)m;
    munmap(m, sizeof(struct rt__live)); /* another thread's came first */
    return t;
#else
    return RT__NULL;
#endif
}

/* Puts p with weight w in the table: 1, or 0 if it could not (counted in
 * untracked). */
RT__OUTLINE unsigned long long
rt__live_insert(unsigned long long p, unsigned long long w)
{
    struct rt__live *t = __atomic_load_n(&rt__live_table, __ATOMIC_ACQUIRE);
    unsigned long long h, *b;
    int i;

    if (!t)
        t = rt__live_map();
    if (!t || p == 0) {
        rt__count(RT__FIRED_UNTRACKED);
        return 0;
    }
    h = rt__live_hash(p);
    b = &t->key[h * RT_LIVE_WAYS];
    for (i = 0; i < RT_LIVE_WAYS; i++) {
        if (__atomic_load_n(&b[i], __ATOMIC_RELAXED) == p) {
            /* still here: its free was never seen; this sample replaces it */
            __atomic_store_n(&t->weight[&b[i] - t->key], w, __ATOMIC_RELAXED);
            return 1;
        }
    }
    /* rt__used[h] counts this entry before it is there and until it is gone,
     * so a lookup that follows the insert never sees 0 while p is in. */
    __atomic_fetch_add(&t->rt__used[h], 1, __ATOMIC_RELAXED);
    for (i = 0; i < RT_LIVE_WAYS; i++) {
        unsigned long long empty = 0;
        if (__atomic_load_n(&b[i], __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&b[i], &empty, p, 0, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
            /* The slot is ours. The thread that will free p learns of p
             * through the program, after this store. */
            __atomic_store_n(&t->weight[&b[i] - t->key], w, __ATOMIC_RELAXED);
            __atomic_fetch_add(&rt__live_count, 1, __ATOMIC_RELAXED);
            return 1;
        }
    }
    __atomic_fetch_sub(&t->rt__used[h], 1, __ATOMIC_RELAXED);
    rt__count(RT__FIRED_UNTRACKED);
    return 0;
}

/* Removes every entry in [base, base + len): a scan of the whole table
 * (64k keys), skipped while it is empty. Returns the number removed. */
RT__OUTLINE unsigned long long
rt__live_purge(unsigned long long base, unsigned long long len)
{
    struct rt__live *t = __atomic_load_n(&rt__live_table, __ATOMIC_ACQUIRE);
    unsigned long long n = 0;
    int i;

    if (!t || __atomic_load_n(&rt__live_count, __ATOMIC_RELAXED) == 0)
        return 0;
    for (i = 0; i < RT_LIVE_SLOTS; i++) {
        unsigned long long k = __atomic_load_n(&t->key[i], __ATOMIC_RELAXED);
        /* k - base < len: base <= k < base + len, without overflow */
        if (k != 0 && k - base < len &&
            __atomic_compare_exchange_n(&t->key[i], &k, 0, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED)) {
            __atomic_fetch_sub(&t->rt__used[i / RT_LIVE_WAYS], 1,
                               __ATOMIC_RELAXED);
            __atomic_fetch_sub(&rt__live_count, 1, __ATOMIC_RELAXED);
            n++;
        }
    }
    return n;
}

/* A forked child starts with an empty table, as with its counts: its
 * frees of the parent's sampled blocks are not its own samples. */
RT__OUTLINE void
rt__live_fork_child(void)
{
    struct rt__live *t = rt__live_table;
    rt__live_table = RT__NULL;
    rt__live_count = 0;
    if (t)
        munmap(t, sizeof(struct rt__live));
}
#ifdef __cplusplus
}
#endif

RT__DEFINE_CALL2(rt__live_insert_call, rt__live_insert, unsigned long long)
RT__DEFINE_CALL2(rt__live_purge_call, rt__live_purge, unsigned long long)

/* A hit: the weight of the entry at slot k of bucket h, emptied. */
static __inline__ __attribute__((__always_inline__)) unsigned long long
rt__live_take(struct rt__live *t, unsigned long long h, unsigned long long *k)
{
    unsigned long long w =
        __atomic_load_n(&t->weight[k - t->key], __ATOMIC_RELAXED);
    __atomic_store_n(k, 0, __ATOMIC_RELEASE);
    __atomic_fetch_sub(&t->rt__used[h], 1, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&rt__live_count, 1, __ATOMIC_RELAXED);
    return w;
}

/* RT_FREE's lookup, inline: a free is looked up while sampled frees are
 * recorded, so this is the cost per free then (docs/sampling.md). Most
 * frees are of unsampled blocks, and most buckets are empty while the
 * table is far from full: such a miss reads one byte of rt__used[]. No call,
 * so nothing changes for the path where nothing records. Returns the
 * weight of p's sample, removing it, or 0 if p is not in the table. The
 * slots are written out rather than a loop, which compilers keep rolled:
 * a miss is then a load, a compare and a branch per slot. */
static __inline__ __attribute__((__always_inline__)) unsigned long long
rt__live_remove(unsigned long long p)
{
    struct rt__live *t = __atomic_load_n(&rt__live_table, __ATOMIC_RELAXED);
    unsigned long long h, *b;

    if (!t || p == 0)
        return 0;
    h = rt__live_hash(p);
    if (__atomic_load_n(&t->rt__used[h], __ATOMIC_RELAXED) == 0)
        return 0; /* the common miss: one byte of an 8 KiB array */
    b = &t->key[h * RT_LIVE_WAYS];
#define RT__LIVE_TRY(n)                                                       \
    if (__atomic_load_n(&b[n], __ATOMIC_RELAXED) == p)                        \
        return rt__live_take(t, h, &b[n]);
    RT__LIVE_TRY(0) RT__LIVE_TRY(1) RT__LIVE_TRY(2) RT__LIVE_TRY(3)
    RT__LIVE_TRY(4) RT__LIVE_TRY(5) RT__LIVE_TRY(6) RT__LIVE_TRY(7)
#undef RT__LIVE_TRY
    return 0;
}
typedef char rt__live_ways_is_8[RT_LIVE_WAYS == 8 ? 1 : -1];

#endif /* RT_LIVE_H */
