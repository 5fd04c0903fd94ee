/* check.h - the C tests' one assertion: CHECK(cond) counts a pass or
 * prints the failed condition with its line and counts a failure; the
 * test ends with check_report(name), which prints "NAME: N passed, M
 * failed" and returns the exit status. Shared by the allocator's tests
 * (test_rt_alloc.c, test_rt_arena.c) and the header's (tests/c). */
#ifndef RT_CHECK_H
#define RT_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (cond)                                                             \
            passed++;                                                         \
        else {                                                                \
            failed++;                                                         \
            fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__,        \
                    #cond);                                                   \
        }                                                                     \
    } while (0)

#endif /* RT_CHECK_H */
