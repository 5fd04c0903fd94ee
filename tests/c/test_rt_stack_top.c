/* test_rt_stack_top.c - include/rt_stack_top.h's constructor maps every
 * page between the AT_RANDOM bytes and the file name at the top of the
 * main thread's stack, so that perf's stack copies do not stop at the
 * hole the kernel leaves there (arch_align_stack).
 *
 * Built twice (tests/Makefile.inc): test_rt_stack_top raises rt:alloc's
 * semaphore from a constructor that runs before the header's (priority
 * 101), as the kernel does when perf records the program; with
 * -DRT_TEST_CONTROL it leaves the semaphore down, so the header's
 * constructor does nothing and the hole stays. Prints "unmapped N" (the
 * pages in [AT_RANDOM, AT_EXECFN] that are not mapped in, from mincore)
 * and exits 0. tests/unit/test_rt_stack_top_c.py runs each many times:
 * the hole is random, so the control shows it only in some runs. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* mincore */
#endif
#include <stdio.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include "rt_probes.h"

#ifndef RT_TEST_CONTROL
__attribute__((constructor(101))) static void raise_semaphore(void)
{
    rt_alloc_semaphore = 1;   /* what the kernel's uprobe ref counter does */
}
#endif

int main(void)
{
    unsigned long page = 4096;
    unsigned long lo = getauxval(AT_RANDOM) & ~(page - 1);
    unsigned long hi = getauxval(AT_EXECFN);
    unsigned long unmapped = 0, p;
    unsigned char in;

    for (p = lo; p <= hi; p += page) {
        if (mincore((void *)p, page, &in) != 0) {
            perror("mincore");
            return 1;
        }
        if (!(in & 1))
            unmapped++;
    }
    printf("unmapped %lu of %lu pages\n", unmapped, (hi - lo) / page + 1);
    return 0;
}
