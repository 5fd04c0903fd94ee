/* t_wrap: every allocation goes through one wrapper, xmalloc, called from
 * ten different functions (as an interpreter's luaM_* layer is).
 *
 *   t_wrap
 *
 * Function fI allocates I+1 blocks of 32 * (I+1) bytes through xmalloc;
 * the program prints "fI=COUNT,BYTES" for each: the truth per caller.
 * Built twice: t_wrap declares the wrapper with RT_SKIP (every report
 * charges the callers), t_wrap_plain does not (the report must notice the
 * wrapper and suggest --skip). */
#include <stdio.h>
#include <stdlib.h>

#include "rt_alloc.h"
#include "rt_probes.h"

#ifdef DECLARE_SKIP
RT_SKIP("^xmalloc$");
#endif

static __attribute__((noinline)) void *xmalloc(size_t n)
{
    void *p = rt_alloc(n, 1);
    if (!p)
        abort();
    return p;
}

#define CALLER(i)                                                             \
    static __attribute__((noinline)) void f##i(void)                          \
    {                                                                         \
        int k;                                                                \
        for (k = 0; k <= i; k++)                                              \
            rt_free(xmalloc(32 * (i + 1)));                                   \
        printf("f%d=%d,%d\n", i, i + 1, (i + 1) * 32 * (i + 1));              \
    }
CALLER(0) CALLER(1) CALLER(2) CALLER(3) CALLER(4)
CALLER(5) CALLER(6) CALLER(7) CALLER(8) CALLER(9)

int main(void)
{
    f0(); f1(); f2(); f3(); f4(); f5(); f6(); f7(); f8(); f9();
    return 0;
}
