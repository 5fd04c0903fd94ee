/* rt_sampler.h - byte sampling for the rt:sample probe (included by
 * rt_probes.h; do not include it directly).
 *
 * The model jemalloc and tcmalloc use: sample points fall on the stream of
 * allocated bytes as a Poisson process of rate 1/R. Each thread counts down
 * the bytes to its next point; gaps are drawn from an exponential
 * distribution of mean R (memoryless: a fixed or bounded gap phase-locks
 * onto periodic allocation patterns and skews whole sites). An allocation
 * of `size` bytes that the countdown crosses k times (k >= 1) fires
 * rt:sample once with weight = k * R: the bytes it stands for. The report's
 * estimates, sum(weight) bytes and sum(weight / size) allocations, are
 * unbiased; docs/sampling.md has the math and the error bounds.
 *
 * R comes from the environment variable RT_SAMPLE_BYTES (bytes, optional
 * k/m suffix; default 524288), read once. R = 1 samples every byte: k is
 * then exactly `size` and the estimates are exact. RT_SAMPLE_SEED fixes
 * the random seed (for tests); without it the seed comes from the
 * address of the thread's state (ASLR).
 *
 * The code runs only while rt:sample is recorded (its semaphore): no lock,
 * no malloc and no system call; per-thread state; safe in any number of
 * threads. The state is one weak hidden object per ELF file, like the
 * semaphores.
 */
#ifndef RT_SAMPLER_H
#define RT_SAMPLER_H
/* Its own code is not the user's: the compiler reports no warning of
 * it, whatever the user's flags (docs/probes.md, "Requirements") */
#if defined(__GNUC__) && __INCLUDE_LEVEL__ > 0 && !defined(RT_PROBES_WARNINGS)
#pragma GCC system_header
#endif

#include <stdlib.h>

#define RT_SAMPLE_BYTES_DEFAULT 524288ULL
/* The largest R: gaps are drawn up to ~40 R and counted in a long long. */
#define RT_SAMPLE_BYTES_MAX (1ULL << 62)

struct rt__sampler {
    long long left;           /* bytes to the next sample point */
    unsigned long long rng;   /* xorshift64* state; 0 = not started */
};

#ifdef __cplusplus
extern "C" {
#endif
/* initial-exec: a fs-relative access even in a shared library (no
 * __tls_get_addr call per allocation); 16 bytes of static TLS. */
extern __thread struct rt__sampler rt__sampler_state
    __attribute__((__visibility__("hidden"), __tls_model__("initial-exec")));
RT__SHARED __attribute__((__tls_model__("initial-exec")))
__thread struct rt__sampler rt__sampler_state;
/* R (0 = not read yet) and the count of threads started, per ELF file. */
extern unsigned long long rt__sample_r;
extern unsigned long long rt__sample_threads;
RT__SHARED unsigned long long rt__sample_r;
RT__SHARED unsigned long long rt__sample_threads;
#ifdef __cplusplus
}
#endif

static __inline__ unsigned long long rt__splitmix64(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* "524288", "512k", "1m" -> bytes; 0 if malformed or over 2^64 - 1 (a
 * value that wrapped would sample at a rate nobody asked for). */
static __inline__ unsigned long long rt__parse_bytes(const char *s)
{
    unsigned long long v = 0, max = ~0ULL;
    int shift = 0;
    if (!s || !*s)
        return 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned long long d = (unsigned long long)(*s - '0');
        if (v > (max - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (*s == 'k' || *s == 'K')
        shift = 10, s++;
    else if (*s == 'm' || *s == 'M')
        shift = 20, s++;
    if (*s || v > (max >> shift))
        return 0;
    return v << shift;
}

static __inline__ unsigned long long rt__sample_bytes(void)
{
    unsigned long long r = __atomic_load_n(&rt__sample_r, __ATOMIC_RELAXED);
    if (r == 0) {
        r = rt__parse_bytes(getenv("RT_SAMPLE_BYTES"));
        if (r == 0 || r > RT_SAMPLE_BYTES_MAX)
            r = RT_SAMPLE_BYTES_DEFAULT;
        __atomic_store_n(&rt__sample_r, r, __ATOMIC_RELAXED);
    }
    return r;
}

/* R for rt:sample's rate argument, once a sample was drawn (so
 * rt__sample_slow has set it): a plain load. Not rt__sample_bytes(): a
 * possible call in RT_ALLOC's enabled branch costs the path where nothing
 * records half an instruction per event (tests/unit/test_offcost.py). */
static __inline__ unsigned long long rt__sample_rate(void)
{
    return __atomic_load_n(&rt__sample_r, __ATOMIC_RELAXED);
}

/* -ln(u) for u in (0, 1], without libm: u = m * 2^e with m in
 * [sqrt(1/2), sqrt(2)), ln m = 2 atanh(z), z = (m-1)/(m+1), |z| < 0.172;
 * the series to z^11 is within 3e-10 of ln m. */
static __inline__ double rt__neg_log(double u)
{
    union { double d; unsigned long long b; } v;
    double z, z2, ln_m;
    int e;
    v.d = u;
    e = (int)((v.b >> 52) & 0x7ff) - 1023;
    v.b = (v.b & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL; /* [1,2) */
    if (v.d > 1.4142135623730951) {
        v.d *= 0.5;
        e++;
    }
    z = (v.d - 1.0) / (v.d + 1.0);
    z2 = z * z;
    ln_m = 2.0 * z * (1.0 + z2 * (1.0 / 3 + z2 * (1.0 / 5 + z2 * (1.0 / 7 +
               z2 * (1.0 / 9 + z2 * (1.0 / 11))))));
    return -(ln_m + e * 0.6931471805599453);
}

/* The next gap: exponential with mean r bytes, at least 1 byte. */
static __inline__ long long rt__draw_gap(struct rt__sampler *t, unsigned long long r)
{
    double u, gap;
    t->rng ^= t->rng >> 12;
    t->rng ^= t->rng << 25;
    t->rng ^= t->rng >> 27;
    /* 53 random bits -> u in (0, 1]. */
    u = (double)(((t->rng * 0x2545f4914f6cdd1dULL) >> 11) + 1) *
        (1.0 / 9007199254740992.0);
    gap = rt__neg_log(u) * (double)r;
    return gap < 1.0 ? 1 : gap > 9.0e18 ? (long long)9e18 : (long long)gap;
}

/* Out of line, one copy per ELF file (weak, hidden), with a plain C
 * name: rt__sample_slow_call below calls it from assembler. */
#ifdef __cplusplus
extern "C" {
#endif
unsigned long long rt__sample_slow(struct rt__sampler *t,
                                   unsigned long long size)
    RT__OUTLINE;
RT__OUTLINE unsigned long long
rt__sample_slow(struct rt__sampler *t, unsigned long long size)
{
    unsigned long long r = rt__sample_bytes(), k = 0;
    if (r == 1) {
        rt__phase_note_sample();
        return size; /* every byte is a sample point: k = size, w = size */
    }
    if (t->rng == 0) {
        /* A new thread: its own stream, then a first gap. */
        unsigned long long seed = rt__parse_bytes(getenv("RT_SAMPLE_SEED"));
        unsigned long long n =
            __atomic_fetch_add(&rt__sample_threads, 1, __ATOMIC_RELAXED);
        if (seed == 0)
            seed = (unsigned long long)(size_t)t;
        t->rng = rt__splitmix64(seed + n * 0x9e3779b97f4a7c15ULL) | 1;
        t->left += rt__draw_gap(t, r);
        if (t->left >= 0)
            return 0;
    }
    while (t->left < 0) {
        k++;
        t->left += rt__draw_gap(t, r);
    }
    rt__phase_note_sample(); /* a sample: its thread's end is told */
    return k * r;
}
#ifdef __cplusplus
}
#endif

#if defined(__x86_64__) && defined(__SSE2__) && !defined(RT_PROBES_NO_ASM_GOTO) && !defined(RT_SAMPLER_PLAIN_CALL)
#if defined(__AVX512F__)
#define RT__CLOBBER_HIGH_XMM , "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",   \
    "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28",  \
    "xmm29", "xmm30", "xmm31"
#else
#define RT__CLOBBER_HIGH_XMM
#endif
/* RT__DEFINE_CALL2(wrapper, target, type1) defines
 * `unsigned long long wrapper(type1 a, unsigned long long b)`, which calls
 * `target(a, b)` (an out-of-line function with a plain C name, returning
 * an unsigned long long) so that the compiler sees no call. Used for
 * rt__sample_slow here and for rt_live.h's table insert and purge: the
 * rare work of a probe's enabled path.
 *
 * Why: the allocator's result must survive whatever runs in the probe's
 * enabled branch. A C call there makes the compiler keep the result in a
 * callee-saved register for the whole function, and move it to %rax on
 * the hot path too: one more instruction per allocation when nothing
 * records (bench/offcost_callgrind.py: +2.50 per event, +2.00 with this).
 * So the asm saves every caller-saved general register itself (the
 * result leaves through %xmm15, which it declares clobbered with the other
 * vector registers), steps over the red zone and aligns the stack for the
 * call. Cost: none on the hot path.
 *
 * Unwinding through it (a debugger stopped in rt__sample_slow, a CPU
 * profile landing there): the asm moves %rsp by an amount only known at
 * run time, and the enclosing function's CFA may be %rsp- or %rbp-based
 * (frame pointers), which the asm cannot know. So it keeps the CFA itself:
 * the compiler's __builtin_dwarf_cfa() is stored in a slot, and CFI
 * expressions (DW_CFA_def_cfa_expression: "CFA = *(slot)") locate that
 * slot from %rsp (or %rax) at every instruction until %rsp is back;
 * tests/unit/test_sampler_unwind.py checks gdb's backtrace from
 * rt__sample_slow to main, with and without frame pointers, GCC and clang.
 * Without CFI directives (-fno-asynchronous-unwind-tables) none is
 * written. */
#if defined(__GCC_HAVE_DWARF2_CFI_ASM)
#define RT__CFI(text) text "\n\t"
#else
#define RT__CFI(text)
#endif
/* DW_CFA_def_cfa_expression (0x0f), 4 bytes: DW_OP_breg7 (%rsp) + N as a
 * two-byte SLEB128, DW_OP_deref: CFA = *(%rsp + N). */
#define RT__CFA_AT_RSP(n) RT__CFI(".cfi_escape 0x0f, 4, 0x77, " n ", 0, 0x06")
#define RT__DEFINE_CALL2(wrapper, target, type1)                              \
static __inline__ __attribute__((__always_inline__)) rt__u64                  \
wrapper(type1 t, rt__u64 size)                                                \
{                                                                             \
    rt__u64 w;                                                                \
    __asm__ volatile(RT__CFI(".cfi_remember_state")                           \
                     "lea -136(%%rsp), %%rsp\n\t"                             \
                     "mov %%rdx, (%%rsp)\n\t"          /* the CFA's slot */   \
                     RT__CFA_AT_RSP("0x80")                                   \
                     "push %%rax\n\t" RT__CFA_AT_RSP("0x88")                  \
                     "push %%rcx\n\t" RT__CFA_AT_RSP("0x90")                  \
                     "push %%rdx\n\t" RT__CFA_AT_RSP("0x98")                  \
                     "push %%rsi\n\t" RT__CFA_AT_RSP("0xa0")                  \
                     "push %%rdi\n\t" RT__CFA_AT_RSP("0xa8")                  \
                     "push %%r8\n\t" RT__CFA_AT_RSP("0xb0")                   \
                     "push %%r9\n\t" RT__CFA_AT_RSP("0xb8")                   \
                     "push %%r10\n\t" RT__CFA_AT_RSP("0xc0")                  \
                     "push %%r11\n\t" RT__CFA_AT_RSP("0xc8")                  \
                     "mov %%rsp, %%rax\n\t"                                   \
                     "and $-16, %%rsp\n\t"                                    \
                     /* CFA = *(%rax + 72): DW_OP_breg0 72, DW_OP_deref */    \
                     RT__CFI(".cfi_escape 0x0f, 4, 0x70, 0xc8, 0, 0x06")      \
                     "push %%rax\n\tpush %%rax\n\t"                           \
                     /* CFA = *(*(%rsp) + 72): the saved %rsp, then the slot */ \
                     RT__CFI(".cfi_escape 0x0f, 7, 0x77, 0x80, 0, 0x06, "     \
                             "0x23, 0x48, 0x06")                              \
                     "call " #target "\n\t"                                   \
                     "movq %%rax, %%xmm15\n\t"                                \
                     "mov (%%rsp), %%rsp\n\t" RT__CFA_AT_RSP("0xc8")          \
                     "pop %%r11\n\t" RT__CFA_AT_RSP("0xc0")                   \
                     "pop %%r10\n\t" RT__CFA_AT_RSP("0xb8")                   \
                     "pop %%r9\n\t" RT__CFA_AT_RSP("0xb0")                    \
                     "pop %%r8\n\t" RT__CFA_AT_RSP("0xa8")                    \
                     "pop %%rdi\n\t" RT__CFA_AT_RSP("0xa0")                   \
                     "pop %%rsi\n\t" RT__CFA_AT_RSP("0x98")                   \
                     "pop %%rdx\n\t" RT__CFA_AT_RSP("0x90")                   \
                     "pop %%rcx\n\t" RT__CFA_AT_RSP("0x88")                   \
                     "pop %%rax\n\t" RT__CFA_AT_RSP("0x80")                   \
                     "lea 136(%%rsp), %%rsp\n\t"                              \
                     RT__CFI(".cfi_restore_state")                            \
                     "movq %%xmm15, %0"                                       \
                     : "=r"(w)                                                \
                     : "D"(t), "S"(size), "d"(__builtin_dwarf_cfa())          \
                     : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", \
                       "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",       \
                       "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",           \
                       "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)",     \
                       "st(6)", "st(7)" RT__CLOBBER_HIGH_XMM);                \
    return w;                                                                 \
}
RT__DEFINE_CALL2(rt__sample_slow_call, rt__sample_slow, struct rt__sampler *)
#else
#define RT__DEFINE_CALL2(wrapper, target, type1)                              \
    static __inline__ __attribute__((__always_inline__)) rt__u64              \
    wrapper(type1 t, rt__u64 size)                                            \
    {                                                                         \
        return target(t, size);                                               \
    }
RT__DEFINE_CALL2(rt__sample_slow_call, rt__sample_slow, struct rt__sampler *)
#endif

/* Weight of this allocation's sample, or 0 if it is not sampled. The
 * common case is one subtraction and a not-taken branch. A new thread
 * needs no test of its own: left starts at 0, so its first allocation of
 * any size > 0 goes negative and reaches rt__sample_slow, which seeds it
 * (size 0 is never sampled anyway); with R = 1, left only decreases. */
static __inline__ __attribute__((__always_inline__)) unsigned long long
rt__sample_weight(unsigned long long size)
{
    struct rt__sampler *t = &rt__sampler_state;
    t->left -= (long long)size;
    if (__builtin_expect(t->left >= 0, 1))
        return 0;
    return rt__sample_slow_call(t, size);
}

#endif /* RT_SAMPLER_H */
