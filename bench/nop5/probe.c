/* probe.c - fire one USDT probe N times in a tight loop; print the loop time.
 *
 * Build variants (see build.sh):
 *   -DNOP5=0|1   1: the probe site is the 5-byte nop 0f 1f 44 00 00 instead
 *                of sys/sdt.h's 1-byte 0x90 (the .note.stapsdt note is
 *                sys/sdt.h's own, unchanged).
 *   -DSEM=0|1    1: the probe is guarded by a sys/sdt.h semaphore
 *                (nopx_<name>_semaphore in .probes), like rt_probes.h.
 *   -DPNAME=x    probe name: the event is sdt_nopx:x (names are global in
 *                perf, so every binary gets its own).
 * Prints the loop's wall time (CLOCK_MONOTONIC) and CPU time
 * (CLOCK_PROCESS_CPUTIME_ID) in total and per iteration.
 * Usage: probe [N] [pause]
 *   N      number of probe hits (default 2000000)
 *   pause  if given: fire once, print "READY pid addr", wait for a line on
 *          stdin (so a script can inspect /proc/PID/maps and /proc/PID/mem
 *          while the probe is live), then run the loop.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define STAP_SDT_ARG_CONSTRAINT r
#if SEM
#define _SDT_HAS_SEMAPHORES 1
#endif
#include <sys/sdt.h>

#if NOP5
/* sys/sdt.h defines _SDT_NOP unconditionally (no #ifndef), so it is
 * replaced after the include; the macro is expanded only where a probe is
 * used. No top-level commas: sdt.h passes this through _SDT_S(x). gas and
 * clang would both encode "nopl 0(%rax,%rax,1)" as the 4-byte 0f 1f 04 00,
 * and "{disp8}" is taken for a dialect alternative in extended asm, so the
 * bytes are spelled out. */
#undef _SDT_NOP
#define _SDT_NOP .byte 0x0f; .byte 0x1f; .byte 0x44; .byte 0x00; .byte 0x00
#endif

#ifndef PNAME
#error define PNAME
#endif

#if SEM
#define SEMNAME2(p, n) p##_##n##_semaphore
#define SEMNAME(p, n) SEMNAME2(p, n)
volatile unsigned short SEMNAME(nopx, PNAME) __attribute__((section(".probes"))) = 0;
#define FIRE(i)                                                               \
    do {                                                                      \
        if (__builtin_expect(SEMNAME(nopx, PNAME) != 0, 0))                   \
            STAP_PROBE1(nopx, PNAME, (unsigned long)(i));                     \
    } while (0)
#else
#define FIRE(i) STAP_PROBE1(nopx, PNAME, (unsigned long)(i))
#endif

static double now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* noinline: one probe site, one address. */
__attribute__((noinline)) static void loop(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        FIRE(i);
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 0) : 2000000UL;
    if (argc > 2) {
        loop(1);
        printf("READY %d\n", (int)getpid());
        fflush(stdout);
        char buf[64];
        if (!fgets(buf, sizeof buf, stdin))
            return 1;
    }
    /* wall time, and this process's CPU time (user + kernel, which
     * includes the trap or syscall and perf's sample write, but not the
     * time the process waits for a CPU on a loaded machine). */
    double c0 = now(CLOCK_PROCESS_CPUTIME_ID), t0 = now(CLOCK_MONOTONIC);
    loop(n);
    double t1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_PROCESS_CPUTIME_ID);
    printf("loop_s=%.6f cpu_s=%.6f n=%lu ns_per=%.1f cpu_ns_per=%.1f\n",
           t1 - t0, c1 - c0, n, (t1 - t0) * 1e9 / n, (c1 - c0) * 1e9 / n);
    return 0;
}
