/* rt_probes.h - allocsites USDT probes for custom allocators.
 *
 * Header-only. Include it in the allocator's source file(s):
 *
 *     #include "rt_probes.h"                  (build with -Iinclude)
 *
 *     void *p = carve(size);
 *     RT_ALLOC(p, size, tag);                 after a successful allocation
 *     ...
 *     RT_FREE(p, size, tag);                  before the block is released
 *
 *     RT_TAG_NAME(3, "ast");                  at file scope: tag 3 is "ast"
 *
 * Events (perf names them sdt_rt:alloc, sdt_rt:free, sdt_rt:sample,
 * sdt_rt:exit):
 *     rt:alloc (void *ptr, size_t size, unsigned int tag)      every one
 *     rt:free  (void *ptr, size_t size, unsigned int tag)
 *     rt:sample(void *ptr, size_t size, unsigned int tag,
 *               unsigned long long weight)                     sampled
 *     rt:exit  (unsigned long long allocs, unsigned long long frees,
 *               unsigned long long samples)                    at exit
 * RT_ALLOC fires both rt:alloc and rt:sample: which one a profile gets
 * depends only on the event perf records. rt:sample fires for about one
 * allocation per RT_SAMPLE_BYTES bytes (default 512 KiB; environment,
 * read once); weight is the number of bytes the sample stands for. The
 * math is in docs/sampling.md. probes/rt.d declares the same provider.
 *
 * End-to-end count: while an event is recorded, its enabled path also
 * counts it (per process and ELF file), and at exit rt:exit reports the
 * three totals, so the report can tell a complete recording from one that
 * lost events, whatever perf says (docs/design.md, "Completeness").
 *
 * Cost when nothing records: each probe site is one test of the
 * semaphores and a not-taken branch (2 instructions on x86-64); the
 * argument expressions are not evaluated and the probe's nop is out of
 * line. perf raises a semaphore while it records that event (perf >= 4.20
 * passes ref_ctr_offset). -DRT_PROBES_DISABLE compiles every probe out.
 *
 * Requires <sys/sdt.h> (Debian: systemtap-sdt-dev). See docs/probes.md.
 */
#ifndef RT_PROBES_H
#define RT_PROBES_H

#include <stddef.h>

/* RT_TAG_NAME(tag, "name"): names a tag for reports. A record in the ELF
 * section .rt_tags (read by the post-processor from the binary): no code
 * and no relocation. Record layout: u32 tag, u32 n = sizeof(name),
 * n bytes of name with its NUL, padded to 4 bytes. */
#define RT__CAT2(a, b) a##b
#define RT__CAT(a, b) RT__CAT2(a, b)
#if defined(__COUNTER__)
#define RT__UNIQUE(prefix) RT__CAT(prefix, __COUNTER__)
#else
#define RT__UNIQUE(prefix) RT__CAT(prefix, __LINE__)
#endif
#define RT_TAG_NAME(tag, name)                                                \
    static const struct {                                                     \
        unsigned int t;                                                       \
        unsigned int n;                                                       \
        char s[sizeof(name)];                                                 \
    } RT__UNIQUE(rt__tag_name_)                                               \
        __attribute__((used, section(".rt_tags"), aligned(4))) = {           \
            (unsigned int)(tag), (unsigned int)sizeof(name), name}

#if defined(RT_PROBES_DISABLE)

#define RT_ALLOC_ENABLED() 0
#define RT_FREE_ENABLED() 0
#define RT_SAMPLE_ENABLED() 0
/* sizeof: the arguments count as used but are never evaluated. */
#define RT_ALLOC(ptr, size, tag)                                              \
    ((void)sizeof(ptr), (void)sizeof(size), (void)sizeof(tag))
#define RT_FREE(ptr, size, tag)                                               \
    ((void)sizeof(ptr), (void)sizeof(size), (void)sizeof(tag))

#else /* probes compiled in */

/* Force every probe argument into a register. sys/sdt.h's default "nor"
 * lets the compiler pick constants ($42) or memory operands
 * (8(%rdx,%rax,8)) that perf cannot translate: perf then drops the argument
 * silently and renumbers the rest. Registers always translate. This
 * applies to every sdt probe expanded after this header. */
#undef STAP_SDT_ARG_CONSTRAINT
#define STAP_SDT_ARG_CONSTRAINT r
#ifndef _SDT_HAS_SEMAPHORES
#define _SDT_HAS_SEMAPHORES 1
#endif
#include <sys/sdt.h>

/* The semaphores. sys/sdt.h names them <provider>_<probe>_semaphore and
 * perf computes the kernel's ref_ctr_offset from the ELF section that must
 * be called ".probes". They are defined here, in assembler, so that:
 *  - every translation unit may include this header (a COMDAT group: the
 *    linker keeps one copy per executable or shared library);
 *  - each ELF object has its own (hidden): a shared library's probes test
 *    the semaphore the kernel raises for that library, never a copy
 *    interposed by the executable;
 *  - they sit side by side in one aligned 8-byte block, so that one load
 *    can test several of them. */
#ifdef __cplusplus
extern "C" {
#endif
extern volatile unsigned short rt_alloc_semaphore
    __attribute__((visibility("hidden")));
extern volatile unsigned short rt_free_semaphore
    __attribute__((visibility("hidden")));
extern volatile unsigned short rt_sample_semaphore
    __attribute__((visibility("hidden")));
extern volatile unsigned short rt_exit_semaphore
    __attribute__((visibility("hidden")));
/* rt:alloc's and rt:sample's semaphores as one word: RT_ALLOC tests both
 * with one compare. */
extern volatile unsigned int rt__alloc_semaphores
    __attribute__((visibility("hidden")));
#ifdef __cplusplus
}
#endif

__asm__(".pushsection .probes,\"awG\",@progbits,rt_probes_semaphores,comdat\n"
        ".balign 8\n"
        ".weak rt__alloc_semaphores\n"
        ".hidden rt__alloc_semaphores\n"
        ".type rt__alloc_semaphores, @object\n"
        ".size rt__alloc_semaphores, 4\n"
        "rt__alloc_semaphores:\n"
        ".weak rt_alloc_semaphore\n"
        ".hidden rt_alloc_semaphore\n"
        ".type rt_alloc_semaphore, @object\n"
        ".size rt_alloc_semaphore, 2\n"
        "rt_alloc_semaphore: .2byte 0\n"
        ".weak rt_sample_semaphore\n"
        ".hidden rt_sample_semaphore\n"
        ".type rt_sample_semaphore, @object\n"
        ".size rt_sample_semaphore, 2\n"
        "rt_sample_semaphore: .2byte 0\n"
        ".weak rt_free_semaphore\n"
        ".hidden rt_free_semaphore\n"
        ".type rt_free_semaphore, @object\n"
        ".size rt_free_semaphore, 2\n"
        "rt_free_semaphore: .2byte 0\n"
        ".weak rt_exit_semaphore\n"
        ".hidden rt_exit_semaphore\n"
        ".type rt_exit_semaphore, @object\n"
        ".size rt_exit_semaphore, 2\n"
        "rt_exit_semaphore: .2byte 0\n"
        ".popsection\n");

/* rt__on(sem), rt__on32(sems): is the semaphore (any of the two) raised?
 * On x86-64 an asm goto makes the test exactly two instructions,
 * `cmpw/cmpl $0, sem(%rip); jne`, where plain C gives three (GCC loads a
 * volatile into a register first). The enabled path is marked cold so it
 * is laid out of line. */
#if defined(__x86_64__) && !defined(RT_PROBES_NO_ASM_GOTO)
#if defined(__clang__)
#define RT__COLD_LABEL
#else
#define RT__COLD_LABEL __attribute__((cold));
#endif
#define RT__DEFINE_ON(name, type, cmp)                                        \
    static inline __attribute__((always_inline)) int                          \
    name(volatile type *sem)                                                  \
    {                                                                         \
        __asm__ goto(cmp " $0, %0\n\tjne %l1" : : "m"(*sem) : "cc" : on);     \
        return 0;                                                             \
    on:                                                                       \
        RT__COLD_LABEL                                                        \
        return 1;                                                             \
    }
RT__DEFINE_ON(rt__on, unsigned short, "cmpw")
RT__DEFINE_ON(rt__on32, unsigned int, "cmpl")
#else
#define rt__on(sem) __builtin_expect(*(sem) != 0, 0)
#define rt__on32(sems) __builtin_expect(*(sems) != 0, 0)
#endif

#define RT_ALLOC_ENABLED() rt__on(&rt_alloc_semaphore)
#define RT_FREE_ENABLED() rt__on(&rt_free_semaphore)
#define RT_SAMPLE_ENABLED() rt__on(&rt_sample_semaphore)

#include "rt_sampler.h"

/* The casts fix the argument types of the contract: 8-byte unsigned
 * pointer and size, 4-byte unsigned tag (a signed tag would reach perf's
 * Python as a large unsigned number anyway). */
#if defined(__clang__)
/* clang -pedantic objects to an empty variadic argument inside sys/sdt.h. */
#define RT__SDT_QUIET_BEGIN                                                   \
    _Pragma("clang diagnostic push")                                          \
    _Pragma("clang diagnostic ignored \"-Wgnu-zero-variadic-macro-arguments\"")
#define RT__SDT_QUIET_END _Pragma("clang diagnostic pop")
#else
#define RT__SDT_QUIET_BEGIN
#define RT__SDT_QUIET_END
#endif
#define RT__FIRE(probe, ptr, size, tag)                                       \
    RT__SDT_QUIET_BEGIN                                                       \
    STAP_PROBE3(rt, probe, (unsigned long long)(size_t)(ptr),                 \
                (unsigned long long)(size), (unsigned int)(tag));             \
    RT__SDT_QUIET_END

#include "rt_exit.h"

/* The sampled stream's probe sits here, in the allocator's own body like
 * rt:alloc, so both events share one call-site rule (the first frame
 * outside the function that holds the probe). */
#define RT_ALLOC(ptr, size, tag)                                              \
    do {                                                                      \
        if (rt__on32(&rt__alloc_semaphores)) {                                \
            if (RT_ALLOC_ENABLED()) {                                         \
                RT__FIRE(alloc, ptr, size, tag)                               \
                rt__count(RT__FIRED_ALLOC);                                   \
            }                                                                 \
            if (RT_SAMPLE_ENABLED()) {                                        \
                unsigned long long rt__size = (unsigned long long)(size);     \
                unsigned long long rt__w = rt__sample_weight(rt__size);       \
                if (rt__w) {                                                  \
                    RT__SDT_QUIET_BEGIN                                       \
                    STAP_PROBE4(rt, sample, (unsigned long long)(size_t)(ptr),\
                                rt__size, (unsigned int)(tag), rt__w);        \
                    RT__SDT_QUIET_END                                         \
                    rt__count(RT__FIRED_SAMPLE);                              \
                }                                                             \
            }                                                                 \
        }                                                                     \
    } while (0)
#define RT_FREE(ptr, size, tag)                                               \
    do {                                                                      \
        if (RT_FREE_ENABLED()) {                                              \
            RT__FIRE(free, ptr, size, tag)                                    \
            rt__count(RT__FIRED_FREE);                                        \
        }                                                                     \
    } while (0)

#endif /* RT_PROBES_DISABLE */
#endif /* RT_PROBES_H */
