/* d_jit.c - the differential corpus's JIT (tests/integration/
 * test_differential.py): code copied into anonymous executable memory
 * calls back into the program, which allocates through rt_alloc. Two
 * thunks: the first named in /tmp/perf-PID.map as a JIT writes it for
 * perf ("START SIZE NAME", a space in the name as V8's have), the second
 * not. Both keep a frame pointer, so that libdw's frame-pointer fallback
 * could unwind past them: both readers must stop there, at the same
 * frame, and name the first thunk alike. The map file stays (perf reads
 * it when it reports); the test removes it. Every block is freed. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rt_alloc.h"

#define NOINLINE __attribute__((noinline))

static void *kept[400];
static int nkept;

static NOINLINE void take(void)
{
    kept[nkept++] = rt_alloc(48, 1);
}

typedef void (*thunk)(void (*)(void));

static NOINLINE void through(thunk t)
{
    t(take);
}

int main(void)
{
    /* push %rbp; mov %rsp,%rbp; call *%rdi; pop %rbp; ret */
    static const unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0xff,
                                         0xd7, 0x5d, 0xc3};
    unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char path[64];
    FILE *f;

    if (m == MAP_FAILED)
        return 1;
    memcpy(m, code, sizeof code);
    memcpy(m + 64, code, sizeof code);
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    f = fopen(path, "w");
    if (!f)
        return 1;
    fprintf(f, "%lx %zx jit_thunk [lua]\n", (unsigned long)(uintptr_t)m,
            sizeof code);
    fclose(f);
    for (int i = 0; i < 150; i++)
        through((thunk)(void *)m);
    for (int i = 0; i < 150; i++)
        through((thunk)(void *)(m + 64));
    for (int i = 0; i < nkept; i++)
        rt_free(kept[i]);
    return 0;
}
