/* rt_stack_top.h - maps the hole at the top of the main thread's stack
 * so that perf's stack copies do not stop there (included by
 * rt_probes.h; do not include it directly).
 *
 * perf copies --stack-size bytes of user stack per rt:alloc and rt:sample
 * event, in the kernel, with page faults disabled: the copy stops at the
 * first page that is not mapped in, and the rest of the record (its full
 * size stays reserved) keeps whatever an older record left in the ring
 * buffer. Those stale bytes do not compress: a demo recording is 10 MiB
 * when every copy is whole and 20 to 27 MiB when they stop early
 * (docs/design.md, "Whole stack copies").
 *
 * At exec the kernel leaves a random gap of 0 to 8 KiB (arch_align_stack)
 * between the argument and environment strings at the top of the stack
 * and the auxiliary vector's data below them (the AT_RANDOM bytes). No one
 * writes there, so when the gap spans a whole page, that page is never
 * mapped in and every copy from a frame near main stops at it.
 *
 * This constructor reads one byte of each page from the AT_RANDOM bytes
 * up to the file name at the top (AT_EXECFN): both are in the same stack
 * mapping, so every page between them is there to read, whichever
 * stack the constructor runs on. A read of a page never written maps the
 * kernel's shared zero page: no memory is used. It runs only while an
 * event with a stack copy is recorded (rt:alloc's or rt:sample's
 * semaphore raised when the program starts; a process that `allocsites
 * record -p` attaches to later keeps its gap). The wrapper makes the
 * other end whole: it pads the program's environment so that the top of
 * the stack lies at least a stack copy above main (record/programenv.py,
 * STACK_PAD_VARIABLE).
 *
 * Listed once per translation unit that includes this header, like
 * rt_exit.h's constructor: reading mapped pages again is harmless.
 * -DRT_STACK_TOP_DISABLE leaves it out (docs/notes/2026-design-history.md,
 * "Whole stack copies", compares the two).
 */
#ifndef RT_STACK_TOP_H
#define RT_STACK_TOP_H
/* Its own code is not the user's: the compiler reports no warning of
 * it, whatever the user's flags (docs/probes.md, "Requirements") */
#if defined(__GNUC__) && __INCLUDE_LEVEL__ > 0 && !defined(RT_PROBES_WARNINGS)
#pragma GCC system_header
#endif

#if defined(__linux__) && !defined(RT_STACK_TOP_DISABLE)
#include <sys/auxv.h>

#ifdef __cplusplus
extern "C" {
#endif
void rt__stack_top_map(void);
RT__SHARED __attribute__((__constructor__, __used__)) void
rt__stack_top_map(void)
{
    unsigned long lo, hi, page = 4096;

    if (!rt__on32(&rt__alloc_semaphores))
        return;
    lo = getauxval(AT_RANDOM);
    hi = getauxval(AT_EXECFN);
    /* Both are on the initial stack, AT_RANDOM below the gap and
     * AT_EXECFN above it; anything else is not that layout. */
    if (lo == 0 || hi <= lo || hi - lo > (1UL << 20))
        return;
    for (lo &= ~(page - 1); lo <= hi; lo += page)
        (void)*(volatile const char *)lo;
}
#ifdef __cplusplus
}
#endif
#endif /* __linux__ && !RT_STACK_TOP_DISABLE */

#endif /* RT_STACK_TOP_H */
