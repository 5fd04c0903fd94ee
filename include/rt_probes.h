/* rt_probes.h - allocsites USDT probes for custom allocators.
 *
 * Header-only. Include it in the allocator's source file(s):
 *
 *     #include "rt_probes.h"                  (build with -Iinclude)
 *
 *     void *p = carve(size);
 *     RT_ALLOC(p, size, tag);                 after a successful allocation
 *     ...
 *     RT_FREE(p);                             before the block is released
 *     RT_REALLOC(old, p, size, tag);          after a reallocation
 *     (RT_FREE(p, size, tag), the first form, still works)
 *
 *     RT_TAG_NAME(3, "ast");                  at file scope: tag 3 is "ast"
 *
 *     RT_RELEASE(base, len);                  an arena released in bulk
 *     RT_COMMIT(p, n); RT_DECOMMIT(p, n);     memory mapped from / returned
 *                                             to the system
 *     RT_PHASE_BEGIN(2); ... RT_PHASE_END(2); a phase of the program
 *     RT_PHASE_NAME(2, "parse");              at file scope: phase 2's name
 *     RT_EXIT(); _exit(0);                    a process ending without
 *                                             exit(): its counts now
 *
 * Language runtimes (docs/probes.md, "Guest locations"):
 *     RT_ALLOC_GUEST(p, size, tag, where(L)); RT_ALLOC, with the guest
 *                                             program's location id;
 *                                             where(L) runs only when the
 *                                             allocation's event fires
 *     if (RT_GUEST_ENABLED())                 a new location id: its
 *         RT_GUEST(id, parent, line, "a.lua", "f");  frame, once
 *     RT_GUEST_DISPATCH("^luaV_execute$");    at file scope: the native
 *                                             frames the guest frames
 *                                             stand for in --guest stacks
 *
 * Events (perf names them sdt_rt:NAME):
 *     rt:alloc (void *ptr, size_t size, unsigned int tag,
 *               unsigned long long guest)                      every one
 *               (guest: the guest location id, 0: none)
 *     rt:free  (void *ptr, size_t size, unsigned int tag)
 *     rt:sample(void *ptr, size_t size, unsigned int tag,
 *               unsigned long long weight,
 *               unsigned long long rate,
 *               unsigned long long phase,
 *               unsigned long long guest)                      sampled
 *     rt:sample_free(void *ptr, unsigned long long weight)     a sampled
 *               block freed (RT_FREE, while rt:sample_free is recorded)
 *     rt:release(void *base, size_t len)  every live block in
 *               [base, base + len) is freed at once
 *     rt:commit  (void *ptr, size_t size)
 *     rt:decommit(void *ptr, size_t size)
 *     rt:phase_begin(unsigned int id), rt:phase_end(unsigned int id)
 *     rt:phase_track()  never fires: recorded, the phase markers keep
 *               the thread's phase for rt:sample instead of firing
 *     rt:guest (unsigned long long id, unsigned long long parent,
 *               unsigned long long line, const char *source,
 *               const char *function)  a guest location's frame: its
 *               caller's id (0: outermost), line, file and function
 *     rt:exit  (unsigned long long allocs, frees, samples, sample_frees,
 *               releases, commits, phases, untracked)          at exit
 * RT_ALLOC fires both rt:alloc and rt:sample: which one a profile gets
 * depends only on the event perf records. rt:sample fires for about one
 * allocation per RT_SAMPLE_BYTES bytes (default 512 KiB; environment,
 * read once); weight is the number of bytes the sample stands for, rate
 * is R. The
 * math is in docs/sampling.md. probes/rt.d declares the same provider.
 *
 * End-to-end count: while an event is recorded, its enabled path also
 * counts it (per process and ELF file), and at exit rt:exit reports the
 * totals (rt_exit.h), so the report can tell a complete recording from one that
 * lost events, whatever perf says (docs/design.md, "Completeness").
 *
 * Cost when nothing records: each probe site is one test of the
 * semaphores and a not-taken branch (2 instructions on x86-64); the
 * argument expressions are not evaluated and the probe's nop is out of
 * line. perf raises a semaphore while it records that event (perf >= 4.20
 * passes ref_ctr_offset). -DRT_PROBES_DISABLE compiles every probe out.
 *
 * Needs nothing but a GCC-compatible compiler (GCC, clang; C89 or C++98
 * and later) on a 64-bit target; it writes its sdt notes itself, so
 * <sys/sdt.h> is not needed and may be included before or after it. The
 * compiler reports no warning of its code (a system header to it), unless
 * RT_PROBES_WARNINGS is defined. See docs/probes.md.
 */
#ifndef RT_PROBES_H
#define RT_PROBES_H
/* Its own code is not the user's: the compiler reports no warning of
 * it, whatever the user's flags (docs/probes.md, "Requirements") */
#if defined(__GNUC__) && __INCLUDE_LEVEL__ > 0 && !defined(RT_PROBES_WARNINGS)
#pragma GCC system_header
#endif

#include <stddef.h>
/* The probe macros' 64-bit type: `long long` spelt in a macro is the
 * user's code to clang, which reports it in C89 and C++98 -pedantic
 * builds; a typedef declared here is not (__extension__: GCC's own way
 * to say the same of the declaration). */
__extension__ typedef unsigned long long rt__u64;
/* The header's objects and functions: one copy per ELF file (weak,
 * hidden), its out-of-line functions kept and never inlined. The
 * attributes are spelt __x__ throughout: a program may have a macro
 * named noinline or used (the Linux kernel's compiler.h defines
 * noinline, and programs copy it). */
#define RT__SHARED __attribute__((__weak__, __visibility__("hidden")))
#define RT__OUTLINE                                                           \
    __attribute__((__weak__, __visibility__("hidden"), __noinline__, __used__))
/* A null pointer that C++11's -Wzero-as-null-pointer-constant accepts
 * (clang++ warns of NULL too) */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define RT__NULL nullptr
#else
#define RT__NULL NULL
#endif

/* RT_TAG_NAME(tag, "name"): names a tag for reports. A record in the ELF
 * section .rt_tags (read by the post-processor from the binary): no code
 * and no relocation. Record layout: u32 tag, u32 n = sizeof(name),
 * n bytes of name with its NUL, padded to 4 bytes (zeros the array
 * holds itself: -Wpadded has nothing to report). */
#define RT__CAT2(a, b) a##b
#define RT__CAT(a, b) RT__CAT2(a, b)
#if defined(__COUNTER__)
#define RT__UNIQUE(prefix) RT__CAT(prefix, __COUNTER__)
#else
#define RT__UNIQUE(prefix) RT__CAT(prefix, __LINE__)
#endif
/* The records are referenced by nothing, so a link with --gc-sections
 * (Rust's always, many C and C++ release builds) would drop them:
 * `retain` (SHF_GNU_RETAIN; GCC >= 11, clang >= 13, with binutils >= 2.36
 * or lld >= 13) keeps each, where the compiler has it. */
#if defined(__has_attribute)
#if __has_attribute(__retain__)
#define RT__RETAIN __attribute__((__retain__))
#endif
#endif
#ifndef RT__RETAIN
#define RT__RETAIN
#endif
#define RT_TAG_NAME(tag, name)                                                \
    static const struct {                                                     \
        unsigned int rt__id;                                                  \
        unsigned int rt__n;                                                   \
        char rt__s[(sizeof(name) + 3) / 4 * 4];                               \
    } RT__UNIQUE(rt__tag_name_) RT__RETAIN                                    \
        __attribute__((__used__, __section__(".rt_tags"),                     \
                       __aligned__(4))) = {                                   \
            (unsigned int)(tag), (unsigned int)sizeof(name), name}

/* RT_PHASE_NAME(id, "parse"): names a phase (RT_PHASE_BEGIN/END) for
 * reports. A record in the ELF section .rt_phases, laid out as .rt_tags:
 * u32 id, u32 n = sizeof(name), n bytes of name with its NUL, padded to
 * 4 bytes. No code, no relocation. */
#define RT_PHASE_NAME(id, name)                                               \
    static const struct {                                                     \
        unsigned int rt__id;                                                  \
        unsigned int rt__n;                                                   \
        char rt__s[(sizeof(name) + 3) / 4 * 4];                               \
    } RT__UNIQUE(rt__phase_name_) RT__RETAIN                                  \
        __attribute__((__used__, __section__(".rt_phases"),                   \
                       __aligned__(4))) = {                                   \
            (unsigned int)(id), (unsigned int)sizeof(name), name}

/* RT_SKIP("^xmalloc$"): at file scope, declares the allocator's own
 * wrapper functions (a regular expression, Python syntax, matched with
 * re.search against function names) once for every report: a matching
 * function that calls the allocator is charged to its caller, as with
 * `--skip REGEX`. A record in the ELF section .rt_skip: no code, no
 * relocation. Record layout: u32 n = sizeof(regex), n bytes with the NUL,
 * padded to 4 bytes. */
#define RT_SKIP(regex)                                                        \
    static const struct {                                                     \
        unsigned int rt__n;                                                   \
        char rt__s[(sizeof(regex) + 3) / 4 * 4];                              \
    } RT__UNIQUE(rt__skip_) RT__RETAIN                                        \
        __attribute__((__used__, __section__(".rt_skip"),                     \
                       __aligned__(4))) = {                                   \
            (unsigned int)sizeof(regex), regex}

/* RT_GUEST_DISPATCH("^luaV_execute$"): at file scope, declares the
 * runtime's dispatch loop (a regular expression, Python syntax, matched
 * with re.search against function names): in --guest stacks, the native
 * frames from the allocator out to the outermost frame that matches are
 * replaced by the allocation's guest frames (memray's splicing). Without
 * it the guest frames go on top of the whole native stack. A record in
 * the ELF section .rt_guest_dispatch, laid out as .rt_skip. */
#define RT_GUEST_DISPATCH(regex)                                              \
    static const struct {                                                     \
        unsigned int rt__n;                                                   \
        char rt__s[(sizeof(regex) + 3) / 4 * 4];                              \
    } RT__UNIQUE(rt__guest_dispatch_) RT__RETAIN                              \
        __attribute__((__used__, __section__(".rt_guest_dispatch"),           \
                       __aligned__(4))) = {                                   \
            (unsigned int)sizeof(regex), regex}

/* RT_FREE(ptr) or RT_FREE(ptr, size, tag): the report takes a block's
 * size and tag from its allocation, so the one-argument form is all an
 * allocator needs; the three-argument form, the first one this header
 * had, means what it always did (rt:free carries size and tag; the
 * one-argument form sends 0 and 0). */
#define RT__FREE_PICK(a1, a2, a3, name, ...) name
#define RT_FREE(...)                                                          \
    RT__FREE_PICK(__VA_ARGS__, RT__FREE3, RT__FREE_2_ARGUMENTS_IS_AN_ERROR,  \
                  RT__FREE1, RT__FREE_NEEDS_A_POINTER)(__VA_ARGS__)
#define RT__FREE1(ptr) RT__FREE3(ptr, 0, 0)

#if defined(RT_PROBES_DISABLE)

#define RT_ALLOC_ENABLED() 0
#define RT_FREE_ENABLED() 0
#define RT_SAMPLE_ENABLED() 0
#define RT_GUEST_ENABLED() 0
/* sizeof: the arguments count as used but are never evaluated. */
#define RT_ALLOC(ptr, size, tag)                                              \
    ((void)sizeof(ptr), (void)sizeof(size), (void)sizeof(tag))
#define RT_ALLOC_GUEST(ptr, size, tag, guest)                                 \
    ((void)sizeof(ptr), (void)sizeof(size), (void)sizeof(tag),               \
     (void)sizeof(guest))
#define RT_GUEST(id, parent, line, source, function)                          \
    ((void)sizeof(id), (void)sizeof(parent), (void)sizeof(line),             \
     (void)sizeof(source), (void)sizeof(function))
#define RT__FREE3(ptr, size, tag)                                             \
    ((void)sizeof(ptr), (void)sizeof(size), (void)sizeof(tag))
#define RT_REALLOC(old, new, size, tag)                                       \
    ((void)sizeof(old), (void)sizeof(new), (void)sizeof(size),               \
     (void)sizeof(tag))
#define RT_RELEASE(base, len) ((void)sizeof(base), (void)sizeof(len))
#define RT_COMMIT(ptr, size) ((void)sizeof(ptr), (void)sizeof(size))
#define RT_DECOMMIT(ptr, size) ((void)sizeof(ptr), (void)sizeof(size))
#define RT_PHASE_BEGIN(id) ((void)sizeof(id))
#define RT_PHASE_END(id) ((void)sizeof(id))
#define RT_EXIT() ((void)0)

#else /* probes compiled in */

/* The probe sites. Each is what sys/sdt.h's STAP_PROBEn writes (a nop,
 * and an NT_STAPSDT note in .note.stapsdt naming provider, probe,
 * semaphore and argument locations, plus the shared .stapsdt.base), so
 * perf, bpftrace, systemtap and gdb find them as usual. They are written
 * here rather than with <sys/sdt.h> because sys/sdt.h decides once per
 * translation unit, at its first #include, whether every probe of every
 * provider has a semaphore (_SDT_HAS_SEMAPHORES): included first by
 * another header it gave the rt probes a zero semaphore (perf never
 * raised them: an empty profile), and defining _SDT_HAS_SEMAPHORES here
 * broke other providers' probes in the same file. This header includes no
 * sys/sdt.h, so neither include order changes anyone's probes.
 * Arguments are always registers ("r"): perf cannot translate constants
 * or memory operands and drops such an argument silently. Sizes are fixed
 * by the casts of the contract (8-byte unsigned, 4-byte unsigned tag);
 * %[rt_name] prints the register in the operand's size (%rax / %r12d,
 * x0 / w0); the operands' names start with rt_ because a name in
 * brackets is a word the preprocessor replaces, and a program may have a
 * macro named p or s. 64-bit targets only (the note's addresses are
 * .8byte). */
#if !defined(__LP64__)
#error "rt_probes.h: the probes are written for 64-bit targets (LP64); build with -DRT_PROBES_DISABLE elsewhere"
#endif
/* The probe site. The note names its first instruction, sys/sdt.h's
 * one-byte nop: perf probe, bpftrace, gdb and a DWARF recording take the
 * probe there, an int3 trap, %rsp and the CFI as the compiler left them.
 *
 * On x86-64 a second way in follows it, for the probes a recording takes
 * without a stack copy (frees, phases; allocations with --unwind fp or
 * none): a 5-byte nop, which Linux >= 6.18 turns, after its first hit,
 * into a call to a trampoline that makes the uprobe
 * syscall instead of trapping (arch_uprobe_optimize; bench/floor.py:
 * 2.43 us an event against the trap's 7.40 here; docs/probes.md, "The
 * probe site"). allocsites record finds it by its bytes (probedefs.py)
 * and, with ALLOCSITES_FAST_SITE=1, takes the probe there (not by
 * default: on 6.18 a child forked after the rewrite crashes at it).
 * That call pushes a return address, and the trampoline registers,
 * below %rsp: into the red zone, where a leaf
 * function may keep its locals (by hand: every value kept at -8(%rsp)
 * across a bare 5-byte nop was overwritten). So the site steps %rsp
 * over the red zone first, and back after. While %rsp is moved, the
 * function's own CFI (its CFA %rsp- or %rbp-based, which the asm cannot
 * know) would unwind wrongly: the compiler's __builtin_dwarf_cfa() is an
 * input of the asm, in a register nothing in it changes, and the site's
 * CFI says "CFA = that register" from its first instruction to its
 * last. The arguments are registers too, which none of it touches.
 * Only the enabled path runs any of it; on an older kernel the 5-byte
 * nop traps as the one-byte one does. Other targets: the one nop. */
#if defined(__x86_64__)
#if defined(__GCC_HAVE_DWARF2_CFI_ASM)
#define RT__SITE_CFI(text) text "\n\t"
#else
#define RT__SITE_CFI(text)
#endif
#define RT__SITE                                                              \
    "990: nop\n\t"                                                             \
    RT__SITE_CFI(".cfi_remember_state")                                       \
    RT__SITE_CFI(".cfi_def_cfa %[rt_cfa], 0")                                 \
    "lea -136(%%rsp), %%rsp\n\t"                                              \
    ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\t"                                  \
    "lea 136(%%rsp), %%rsp\n\t"                                               \
    RT__SITE_CFI(".cfi_restore_state")
#define RT__SITE_IN , [rt_cfa] "r"(__builtin_dwarf_cfa())
#else
#define RT__SITE "990: nop\n"
#define RT__SITE_IN
#endif
/* The probe's name comes as a string literal ("free"), never as a bare
 * word: a program that says `#define free pma_free` (gawk does, for its
 * persistent allocator) would have the word replaced on its way through
 * these macros, and its probes would name rt_pma_free_semaphore, which
 * no one defines (a link error, found building gawk 5.2.1). */
#define RT__SDT_NOTE(sname, args) RT__SITE RT__SDT_DESC(sname, args)
/* the note alone, for a site of its own (RT__PROBE0) */
#define RT__SDT_DESC(sname, args)                                             \
    ".pushsection .note.stapsdt,\"?\",\"note\"\n"                            \
    ".balign 4\n"                                                             \
    ".4byte 992f-991f, 994f-993f, 3\n"                                        \
    "991: .asciz \"stapsdt\"\n"                                               \
    "992: .balign 4\n"                                                        \
    "993: .8byte 990b\n"                                                      \
    ".8byte _.stapsdt.base\n"                                                 \
    ".8byte rt_" sname "_semaphore\n"                                         \
    ".asciz \"rt\"\n"                                                         \
    ".asciz \"" sname "\"\n"                                                  \
    ".asciz \"" args "\"\n"                                                   \
    "994: .balign 4\n"                                                        \
    ".popsection\n"                                                           \
    ".ifndef _.stapsdt.base\n"                                                \
    ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n"  \
    ".weak _.stapsdt.base\n"                                                  \
    ".hidden _.stapsdt.base\n"                                                \
    "_.stapsdt.base: .space 1\n"                                              \
    ".size _.stapsdt.base, 1\n"                                               \
    ".popsection\n"                                                           \
    ".endif\n"
/* rt:alloc: (ptr, size, tag, guest) */
#define RT__PROBE_ALLOC(ptr, size, tag, guest)                                \
    __asm__ __volatile__(                                                     \
        RT__SDT_NOTE("alloc", "8@%[rt_p] 8@%[rt_s] 4@%[rt_t] 8@%[rt_g]")      \
        : : [rt_p] "r"((rt__u64)(size_t)(ptr)),                               \
            [rt_s] "r"((rt__u64)(size)), [rt_t] "r"((unsigned int)(tag)),     \
            [rt_g] "r"((rt__u64)(guest)) RT__SITE_IN)
/* rt:guest: (id, parent, line, source, function), the two names as
 * pointers to NUL-terminated strings, which the recorder's uprobe copies
 * (a fetch argument +0(%reg):string) */
#define RT__PROBE_GUEST(id, parent, line, source, function)                   \
    __asm__ __volatile__(                                                     \
        RT__SDT_NOTE("guest", "8@%[rt_i] 8@%[rt_pa] 8@%[rt_l] "               \
                              "8@%[rt_s] 8@%[rt_f]")                          \
        : : [rt_i] "r"((rt__u64)(id)),                                        \
            [rt_pa] "r"((rt__u64)(parent)),                                   \
            [rt_l] "r"((rt__u64)(line)),                                      \
            [rt_s] "r"((rt__u64)(size_t)(const char *)(source)),              \
            [rt_f] "r"((rt__u64)(size_t)(const char *)(function))             \
            RT__SITE_IN)
/* rt:free: (ptr, size, tag) */
#define RT__PROBE3(sname, ptr, size, tag)                                     \
    __asm__ __volatile__(                                                     \
        RT__SDT_NOTE(sname, "8@%[rt_p] 8@%[rt_s] 4@%[rt_t]")                  \
        : : [rt_p] "r"((rt__u64)(size_t)(ptr)),                               \
            [rt_s] "r"((rt__u64)(size)), [rt_t] "r"((unsigned int)(tag))      \
            RT__SITE_IN)
/* rt:sample: (ptr, size, tag, weight, rate, phase, guest); rate is R,
 * the mean bytes between samples, so the report need not guess it from
 * the weights; phase is the thread's innermost phase id + 1 (0: none)
 * while phases are tracked (rt:phase_track recorded), else 0; guest as
 * rt:alloc's. */
#define RT__PROBE_SAMPLE(ptr, size, tag, weight, rate, phase, guest)          \
    __asm__ __volatile__(                                                     \
        RT__SDT_NOTE("sample",                                                \
                     "8@%[rt_p] 8@%[rt_s] 4@%[rt_t] 8@%[rt_w] 8@%[rt_r] "     \
                     "8@%[rt_ph] 8@%[rt_g]")                                  \
        : : [rt_p] "r"((rt__u64)(size_t)(ptr)),                               \
            [rt_s] "r"((rt__u64)(size)), [rt_t] "r"((unsigned int)(tag)),     \
            [rt_w] "r"((rt__u64)(weight)),                                    \
            [rt_r] "r"((rt__u64)(rate)),                                      \
            [rt_ph] "r"((rt__u64)(phase)),                                    \
            [rt_g] "r"((rt__u64)(guest)) RT__SITE_IN)
/* rt:release, rt:commit, rt:decommit, rt:sample_free: two 8-byte
 * arguments (an address and a length or weight). */
#define RT__PROBE2(sname, first, second)                                      \
    __asm__ __volatile__(                                                     \
        RT__SDT_NOTE(sname, "8@%[rt_a] 8@%[rt_b]")                            \
        : : [rt_a] "r"((rt__u64)(size_t)(first)),                             \
            [rt_b] "r"((rt__u64)(second)) RT__SITE_IN)
/* rt:phase_track: no arguments; never fires (docs/probes.md, "Phases in
 * sampled mode") */
#define RT__PROBE0(sname)                                                     \
    __asm__ __volatile__("990: nop\n" RT__SDT_DESC(sname, ""))
/* rt:phase_begin, rt:phase_end: (id), 4 bytes */
#define RT__PROBE_ID(sname, id)                                               \
    __asm__ __volatile__(RT__SDT_NOTE(sname, "4@%[rt_i]")                     \
                         : : [rt_i] "r"((unsigned int)(id)) RT__SITE_IN)
/* rt:exit: (allocs, frees, samples, sample_frees, releases, commits,
 * phases, untracked); n points to the eight counts. */
#define RT__PROBE_EXIT(n)                                                     \
    __asm__ __volatile__(                                                     \
        RT__SDT_NOTE("exit", "8@%[rt_a] 8@%[rt_f] 8@%[rt_s] 8@%[rt_sf] "      \
                             "8@%[rt_r] 8@%[rt_c] "                           \
                             "8@%[rt_ph] 8@%[rt_u]")                          \
        : : [rt_a] "r"((n)[0]), [rt_f] "r"((n)[1]), [rt_s] "r"((n)[2]),       \
            [rt_sf] "r"((n)[3]), [rt_r] "r"((n)[4]), [rt_c] "r"((n)[5]),      \
            [rt_ph] "r"((n)[6]), [rt_u] "r"((n)[7]) RT__SITE_IN)

/* The semaphores. sys/sdt.h names them <provider>_<probe>_semaphore and
 * perf computes the kernel's ref_ctr_offset from the ELF section that must
 * be called ".probes". They are defined here, in assembler, so that:
 *  - every translation unit may include this header (a COMDAT group: the
 *    linker keeps one copy per executable or shared library). Under
 *    -flto, gcc writes every unit's top-level asm into one assembler
 *    file, where a second definition of a symbol is an error: the block
 *    is assembled only where it is not yet defined (.ifndef, as
 *    sys/sdt.h guards _.stapsdt.base);
 *  - each ELF object has its own (hidden): a shared library's probes test
 *    the semaphore the kernel raises for that library, never a copy
 *    interposed by the executable;
 *  - they sit side by side in one aligned block, so that one load can test
 *    several of them. Each stays a named 2-byte object (perf finds a
 *    probe's semaphore by its address in the note, and the kernel counts
 *    in those 2 bytes); the wider words below are aliases over them.
 *
 * Layout (byte offsets in the 32-byte block, which starts a page):
 *
 *      0 alloc        2 sample       4 exit         6 commit
 *      8 free        10 sample_free 12 release     14 decommit
 *     16 phase_begin 18 phase_track 20 phase_end   22 (padding)
 *     24 guest       26 (padding to 32)
 *
 *   rt__alloc_semaphores   u32 at 0: alloc + sample, RT_ALLOC's one test
 *   rt__free_semaphores    u32 at 8: free + sample_free, RT_FREE's one
 *                          test (sample_free: the sampled pointer table
 *                          is in use, the free must be looked up)
 *   rt__release_semaphores u64 at 8: free, sample_free, release, decommit:
 *                          RT_RELEASE's one test (it must purge the table
 *                          while sample_free is recorded, even when
 *                          rt:release is not; an aligned word cannot hold
 *                          both sample_free and release without free, and
 *                          the extra bits only send a rare release down
 *                          the enabled path, where it tests its own)
 *   rt__phase_semaphores   u64 at 16: phase_begin, phase_track, phase_end:
 *                          RT_PHASE_BEGIN's and RT_PHASE_END's one test
 * Each word is aligned to its size, so the plain-C fallback on other
 * targets makes aligned loads. */
#ifdef __cplusplus
extern "C" {
#endif
#define RT__DECLARE_SEM(name)                                                 \
    extern volatile unsigned short rt_##name##_semaphore                      \
        __attribute__((__visibility__("hidden")));
RT__DECLARE_SEM(alloc)
RT__DECLARE_SEM(sample)
RT__DECLARE_SEM(exit)
RT__DECLARE_SEM(commit)
RT__DECLARE_SEM(free)
RT__DECLARE_SEM(sample_free)
RT__DECLARE_SEM(release)
RT__DECLARE_SEM(decommit)
RT__DECLARE_SEM(phase_begin)
RT__DECLARE_SEM(phase_track)
RT__DECLARE_SEM(phase_end)
RT__DECLARE_SEM(guest)
extern volatile unsigned int rt__alloc_semaphores
    __attribute__((__visibility__("hidden")));
extern volatile unsigned int rt__free_semaphores
    __attribute__((__visibility__("hidden")));
extern volatile unsigned long long rt__release_semaphores
    __attribute__((__visibility__("hidden")));
extern volatile unsigned long long rt__phase_semaphores
    __attribute__((__visibility__("hidden")));
#ifdef __cplusplus
}
#endif

#define RT__SEM_SYMBOL(sym, size)                                             \
    ".weak " sym "\n.hidden " sym "\n.type " sym ", @object\n"               \
    ".size " sym ", " #size "\n" sym ":\n"
#define RT__SEM(name) RT__SEM_SYMBOL("rt_" name "_semaphore", 2) ".2byte 0\n"
/* The block starts a page of its own. The kernel raises a semaphore in
 * the first writable mapping, in address order, that maps its file
 * offset; lld, with RELRO on as by default (Rust links with it), lays
 * RELRO out as a writable segment whose last file page the next
 * writable segment maps again. A semaphore in that page was raised in the RELRO
 * copy and the probes never fired (docs/probes.md, "Semaphores defined
 * in assembler"). RT__SEM_ALIGN is for the tests, which build that old
 * layout on purpose. */
#ifndef RT__SEM_ALIGN
#define RT__SEM_ALIGN "4096"
#endif
__asm__(".ifndef rt__alloc_semaphores\n"
        ".pushsection .probes,\"awG\",@progbits,rt_probes_semaphores,comdat\n"
        ".balign " RT__SEM_ALIGN "\n"
        RT__SEM_SYMBOL("rt__alloc_semaphores", 4)
        RT__SEM("alloc")
        RT__SEM("sample")
        RT__SEM("exit")
        RT__SEM("commit")
        RT__SEM_SYMBOL("rt__release_semaphores", 8)
        RT__SEM_SYMBOL("rt__free_semaphores", 4)
        RT__SEM("free")
        RT__SEM("sample_free")
        RT__SEM("release")
        RT__SEM("decommit")
        RT__SEM_SYMBOL("rt__phase_semaphores", 8)
        RT__SEM("phase_begin")
        RT__SEM("phase_track")
        RT__SEM("phase_end")
        ".2byte 0\n"
        RT__SEM("guest")
        ".2byte 0\n.4byte 0\n"
        ".balign 8\n"
        ".popsection\n"
        ".endif\n");

/* rt__on(sem), rt__on32(sems), rt__on64(sems): is the semaphore (any of
 * the two, the four) raised?
 * On x86-64 an asm goto makes the test exactly two instructions,
 * `cmpw/cmpl $0, sem(%rip); jne`, where plain C gives three (GCC loads a
 * volatile into a register first). The enabled path is marked cold so it
 * is laid out of line. */
#if defined(__x86_64__) && !defined(RT_PROBES_NO_ASM_GOTO)
#if defined(__clang__)
#define RT__COLD_LABEL
#else
#define RT__COLD_LABEL __attribute__((__cold__));
#endif
#define RT__DEFINE_ON(name, type, cmp)                                        \
    static __inline__ __attribute__((__always_inline__)) int                  \
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
RT__DEFINE_ON(rt__on64, unsigned long long, "cmpq")
#else
#define rt__on(sem) __builtin_expect(*(sem) != 0, 0)
#define rt__on32(sems) __builtin_expect(*(sems) != 0, 0)
#define rt__on64(sems) __builtin_expect(*(sems) != 0, 0)
#endif

#define RT_ALLOC_ENABLED() rt__on(&rt_alloc_semaphore)
#define RT_FREE_ENABLED() rt__on(&rt_free_semaphore)
#define RT_SAMPLE_ENABLED() rt__on(&rt_sample_semaphore)
/* rt:guest is recorded: a runtime defines each new location id with
 * RT_GUEST before the first allocation that names it */
#define RT_GUEST_ENABLED() rt__on(&rt_guest_semaphore)
#define RT_GUEST(id, parent, line, source, function)                          \
    do {                                                                      \
        if (RT_GUEST_ENABLED())                                               \
            RT__PROBE_GUEST(id, parent, line, source, function);              \
    } while (0)

/* The thread's phases while rt:phase_track is recorded (sampled mode):
 * a stack of ids, one per thread for the whole program (weak, default
 * visibility: one definition however many files and libraries include
 * this header, so that an allocator in a library sees the phases its
 * program marks). Deeper than RT__PHASE_DEPTH, the innermost ids are
 * counted, not kept: a sample there is charged to the deepest kept one. */
#define RT__PHASE_DEPTH 64
#ifdef __cplusplus
extern "C" {
#endif
/* Each weak definition of this header follows a plain declaration, so
 * that -Wmissing-prototypes, -Wmissing-declarations (C++) and clang's
 * -Wmissing-variable-declarations, which projects build with, stay
 * quiet in the files that include it. */
extern __thread unsigned int rt__phase_depth;
extern __thread unsigned int rt__phase_stack[RT__PHASE_DEPTH];
__attribute__((__weak__)) __thread unsigned int rt__phase_depth;
__attribute__((__weak__))
__thread unsigned int rt__phase_stack[RT__PHASE_DEPTH];
#ifdef __cplusplus
}
#endif
static __inline__ void rt__phase_push(unsigned int id)
{
    if (rt__phase_depth < RT__PHASE_DEPTH)
        rt__phase_stack[rt__phase_depth] = id;
    rt__phase_depth++;
}
/* RT_PHASE_END(id): closes the innermost open run of id and every run
 * opened inside it (as the report does with rt:phase_end); an id not
 * open in the thread changes nothing. */
static __inline__ void rt__phase_pop(unsigned int id)
{
    unsigned int i;
    if (rt__phase_depth > RT__PHASE_DEPTH) {
        rt__phase_depth--;
        return;
    }
    for (i = rt__phase_depth; i > 0; i--)
        if (rt__phase_stack[i - 1] == id) {
            rt__phase_depth = i - 1;
            return;
        }
}
/* the innermost phase id + 1, 0 outside every phase */
static __inline__ unsigned long long rt__phase_current(void)
{
    unsigned int d = rt__phase_depth;
    if (!d)
        return 0;
    return (unsigned long long)rt__phase_stack[
        (d > RT__PHASE_DEPTH ? RT__PHASE_DEPTH : d) - 1] + 1;
}
/* Sampled mode sees a thread's phase only at its samples, so its last run
 * would never end: the report would call it open at exit. A thread whose
 * sample carried a phase is watched (rt__phase_note_sample, from
 * rt__sample_slow): when it ends (a pthread key's destructor) and at
 * process exit (rt__exit_fire, in the exiting thread) rt__phase_mark
 * fires one more rt:sample, of nothing (ptr, size, tag and weight 0),
 * carrying the thread's phase then: 0 closes the run, a phase still open
 * stays open, as rt:phase_end would have said. One event per watched
 * thread, never in exact mode. Per ELF file (weak, hidden), like the
 * sampler: the file that fires rt:sample fires the mark. */
#ifdef __cplusplus
extern "C" {
#endif
extern __thread unsigned char rt__phase_watched
    __attribute__((__visibility__("hidden"), __tls_model__("initial-exec")));
RT__SHARED __attribute__((__tls_model__("initial-exec")))
__thread unsigned char rt__phase_watched;
void rt__phase_watch(void)
    RT__OUTLINE;
void rt__phase_mark(void)
    RT__OUTLINE;
#ifdef __cplusplus
}
#endif
static __inline__ void rt__phase_note_sample(void)
{
    if (rt__phase_depth && !rt__phase_watched)
        rt__phase_watch();
}

#include "rt_sampler.h"

#define RT__FIRE(sname, ptr, size, tag) RT__PROBE3(sname, ptr, size, tag);

#include "rt_exit.h"
#include "rt_live.h"
#include "rt_stack_top.h"

#ifdef __cplusplus
extern "C" {
#endif
void rt__phase_thread_end(void *unused);
void rt__phase_key_init(void);
extern pthread_key_t rt__phase_key;
extern int rt__phase_key_made;
extern pthread_once_t rt__phase_once;
RT__OUTLINE void
rt__phase_mark(void)
{
    if (RT_SAMPLE_ENABLED()) {
        RT__PROBE_SAMPLE(0, 0, 0, 0, rt__sample_rate(), rt__phase_current(),
                         0);
        rt__count(RT__FIRED_SAMPLE);
    }
}
RT__SHARED pthread_key_t rt__phase_key;
RT__SHARED int rt__phase_key_made;
RT__SHARED
pthread_once_t rt__phase_once = PTHREAD_ONCE_INIT;
__attribute__((__weak__, __visibility__("hidden"), __used__)) void
rt__phase_thread_end(void *unused)
{
    (void)unused;
    rt__phase_mark();
}
__attribute__((__weak__, __visibility__("hidden"), __used__)) void
rt__phase_key_init(void)
{
    rt__phase_key_made =
        pthread_key_create(&rt__phase_key, rt__phase_thread_end) == 0;
}
RT__OUTLINE void
rt__phase_watch(void)
{
    rt__phase_watched = 1;
    pthread_once(&rt__phase_once, rt__phase_key_init);
    if (rt__phase_key_made)
        (void)pthread_setspecific(rt__phase_key, (void *)1);
}
#ifdef __cplusplus
}
#endif

/* The site of rt:phase_track: never called. Its note gives record a
 * uprobe to set, and with it the semaphore the phase markers test. */
static void rt__phase_track_site(void)
    __attribute__((__used__, __cold__, __noinline__));
static void rt__phase_track_site(void) { RT__PROBE0("phase_track"); }

/* The sampled stream's probe sits here, in the allocator's own body like
 * rt:alloc, so both events share one call-site rule (the first frame
 * outside the function that holds the probe). guest (RT_ALLOC_GUEST) is
 * evaluated at most once, and only for an allocation whose event fires:
 * every one while rt:alloc is recorded, the sampled ones while
 * rt:sample is. */
#define RT_ALLOC_GUEST(ptr, size, tag, guest)                                 \
    do {                                                                      \
        if (rt__on32(&rt__alloc_semaphores)) {                                \
            /* each argument once, whichever events are recorded */          \
            rt__u64 rt__p = (rt__u64)(size_t)(ptr);                           \
            rt__u64 rt__size = (rt__u64)(size);                               \
            unsigned int rt__tag = (unsigned int)(tag);                       \
            rt__u64 rt__g = 0;                                                \
            int rt__g_known = 0;                                              \
            if (RT_ALLOC_ENABLED()) {                                         \
                rt__g = (rt__u64)(guest);                                     \
                rt__g_known = 1;                                              \
                RT__PROBE_ALLOC(rt__p, rt__size, rt__tag, rt__g);             \
                rt__count(RT__FIRED_ALLOC);                                   \
            }                                                                 \
            if (RT_SAMPLE_ENABLED()) {                                        \
                rt__u64 rt__w = rt__sample_weight(rt__size);                  \
                if (rt__w) {                                                  \
                    if (!rt__g_known)                                         \
                        rt__g = (rt__u64)(guest);                             \
                    RT__PROBE_SAMPLE(rt__p, rt__size, rt__tag, rt__w,         \
                                     rt__sample_rate(),                       \
                                     rt__phase_current(), rt__g);             \
                    rt__count(RT__FIRED_SAMPLE);                              \
                    if (rt__on(&rt_sample_free_semaphore))                    \
                        (void)rt__live_insert_call(rt__p, rt__w);             \
                }                                                             \
            }                                                                 \
            (void)rt__g_known;                                                \
        }                                                                     \
    } while (0)
#define RT_ALLOC(ptr, size, tag) RT_ALLOC_GUEST(ptr, size, tag, 0)
/* While rt:sample_free is recorded, RT_ALLOC keeps each sampled pointer in
 * the table of rt_live.h and RT_FREE looks every freed pointer up there:
 * a sampled block's free fires rt:sample_free(ptr, weight). */
#define RT__FREE3(ptr, size, tag)                                             \
    do {                                                                      \
        if (rt__on32(&rt__free_semaphores)) {                                 \
            rt__u64 rt__p = (rt__u64)(size_t)(ptr);                           \
            rt__u64 rt__size = (rt__u64)(size);                               \
            unsigned int rt__tag = (unsigned int)(tag);                       \
            if (RT_FREE_ENABLED()) {                                          \
                RT__FIRE("free", rt__p, rt__size, rt__tag)                    \
                rt__count(RT__FIRED_FREE);                                    \
            }                                                                 \
            if (rt__on(&rt_sample_free_semaphore)) {                          \
                rt__u64 rt__w = rt__live_remove(rt__p);                       \
                if (rt__w) {                                                  \
                    RT__PROBE2("sample_free", rt__p, rt__w);                  \
                    rt__count(RT__FIRED_SAMPLE_FREE);                         \
                }                                                             \
            }                                                                 \
            (void)rt__size;                                                   \
            (void)rt__tag;                                                    \
        }                                                                     \
    } while (0)

/* RT_REALLOC(old, new, size, tag): after a reallocation that returned
 * new: old's free, then new's allocation (one event each), as heaptrack's
 * realloc hook reports it. A NULL old is a plain allocation; a NULL new
 * with size 0 a plain free; a NULL new with a size (the reallocation
 * failed, old is still live) records nothing. Each argument is evaluated
 * once, and only when rt:alloc, rt:free or a sampled event is recorded. */
#define RT_REALLOC(old, new, size, tag)                                       \
    do {                                                                      \
        if (rt__on32(&rt__alloc_semaphores) ||                                \
            rt__on32(&rt__free_semaphores)) {                                 \
            rt__u64 rt__ro = (rt__u64)(size_t)(old);                          \
            rt__u64 rt__rn = (rt__u64)(size_t)(new);                          \
            rt__u64 rt__rs = (rt__u64)(size);                                 \
            unsigned int rt__rt = (unsigned int)(tag);                        \
            if (rt__ro && (rt__rn || !rt__rs))                                \
                RT__FREE3(rt__ro, 0, rt__rt);                                 \
            if (rt__rn)                                                       \
                RT_ALLOC(rt__rn, rt__rs, rt__rt);                             \
        }                                                                     \
    } while (0)

/* Bulk release, committed memory, phases: docs/probes.md says when to use
 * each. Same shape as above: one test of the semaphore(s), the arguments
 * evaluated only on the enabled path. */
#define RT_RELEASE(base, len)                                                 \
    do {                                                                      \
        if (rt__on64(&rt__release_semaphores)) {                              \
            rt__u64 rt__b = (rt__u64)(size_t)(base);                          \
            rt__u64 rt__l = (rt__u64)(len);                                   \
            if (rt__on(&rt_release_semaphore)) {                              \
                RT__PROBE2("release", rt__b, rt__l);                          \
                rt__count(RT__FIRED_RELEASE);                                 \
            }                                                                 \
            if (rt__on(&rt_sample_free_semaphore))                            \
                (void)rt__live_purge_call(rt__b, rt__l);                      \
        }                                                                     \
    } while (0)
/* name only beside ## and # (where the preprocessor never replaces it
 * by a macro of that name): #name is the string RT__SDT_NOTE takes */
#define RT__SIMPLE2(name, a, b, counter)                                      \
    do {                                                                      \
        if (rt__on(&rt_##name##_semaphore)) {                                 \
            RT__PROBE2(#name, a, b);                                          \
            rt__count(counter);                                               \
        }                                                                     \
    } while (0)
#define RT_COMMIT(ptr, size) RT__SIMPLE2(commit, ptr, size, RT__FIRED_COMMIT)
#define RT_DECOMMIT(ptr, size)                                                \
    RT__SIMPLE2(decommit, ptr, size, RT__FIRED_COMMIT)
/* Phases: while rt:phase_begin and rt:phase_end are recorded (exact
 * mode), each marker fires its event; while rt:phase_track is (sampled
 * mode), it keeps the thread's phase stack instead (rt__phase_push/pop,
 * no trap), and rt:sample carries the innermost phase. One test of the
 * three semaphores when nothing records. */
#define RT__PHASE(name, id, track)                                            \
    do {                                                                      \
        if (rt__on64(&rt__phase_semaphores)) {                                \
            unsigned int rt__id = (unsigned int)(id);                         \
            if (rt__on(&rt_##name##_semaphore)) {                             \
                RT__PROBE_ID(#name, rt__id);                                  \
                rt__count(RT__FIRED_PHASE);                                   \
            }                                                                 \
            if (rt__on(&rt_phase_track_semaphore))                            \
                track(rt__id);                                                \
        }                                                                     \
    } while (0)
#define RT_PHASE_BEGIN(id) RT__PHASE(phase_begin, id, rt__phase_push)
#define RT_PHASE_END(id) RT__PHASE(phase_end, id, rt__phase_pop)
/* RT_EXIT(): fire rt:exit now, for a process about to end without
 * exit() (a forked child's _exit, an exec, a runtime such as Go's that
 * leaves without running C destructors): without it the report cannot
 * check such a process's events. Last thing before it ends: later
 * events are not in the counts. Once per file (executable or library):
 * the file whose probes it counts calls it; the destructor then fires
 * nothing more. */
#define RT_EXIT() rt__exit_fire()

#endif /* RT_PROBES_DISABLE */
#endif /* RT_PROBES_H */
