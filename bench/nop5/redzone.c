/* redzone.c - does an optimized (call-based) uprobe clobber the x86-64 red
 * zone (the 128 bytes below %rsp that a leaf function may use without
 * moving %rsp)?
 *
 * The probe sits in a leaf function whose locals live in the red zone
 * across the probe. With the 1-byte nop the probe is an int3 (the kernel
 * saves state in its own stack: nothing below the user %rsp is touched).
 * With the 5-byte nop, Linux 6.18 rewrites the site into
 * `call [uprobes-trampoline]`, and the call pushes its return address at
 * -8(%rsp), and the trampoline pushes rcx, r11, rax below it.
 *
 * Two tests:
 *   asm:      markers written at -8..-64(%rsp) by inline asm, read back
 *             after the probe (deterministic, shows exactly which slots);
 *   compiler: a leaf function with enough live values that GCC -O2 spills
 *             them to the red zone around the probe (what real code does).
 * Build: -DNOP5=0|1 -DPNAME=...  Run: redzone [N]; exit status 0 if no
 * corruption was seen.
 */
#include <stdio.h>
#include <stdlib.h>

#define STAP_SDT_ARG_CONSTRAINT r
#include <sys/sdt.h>
#if NOP5
#undef _SDT_NOP
#define _SDT_NOP .byte 0x0f; .byte 0x1f; .byte 0x44; .byte 0x00; .byte 0x00
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

/* Leaf, no frame: %rsp is the same in all three asm statements. */
__attribute__((noinline)) int rz_asm(unsigned long x)
{
    unsigned long v[8];
    __asm__ volatile("movq %0, -8(%%rsp)\n\t"
                     "movq %0, -16(%%rsp)\n\t"
                     "movq %0, -24(%%rsp)\n\t"
                     "movq %0, -32(%%rsp)\n\t"
                     "movq %0, -40(%%rsp)\n\t"
                     "movq %0, -48(%%rsp)\n\t"
                     "movq %0, -56(%%rsp)\n\t"
                     "movq %0, -64(%%rsp)" ::"r"(x));
    STAP_PROBE1(nopx, CAT(PNAME, a), x);
    __asm__ volatile("movq -8(%%rsp), %0\n\t"
                     "movq -16(%%rsp), %1\n\t"
                     "movq -24(%%rsp), %2\n\t"
                     "movq -32(%%rsp), %3\n\t"
                     "movq -40(%%rsp), %4\n\t"
                     "movq -48(%%rsp), %5\n\t"
                     "movq -56(%%rsp), %6\n\t"
                     "movq -64(%%rsp), %7"
                     : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]),
                       "=r"(v[4]), "=r"(v[5]), "=r"(v[6]), "=r"(v[7]));
    int bad = 0;
    for (int i = 0; i < 8; i++)
        if (v[i] != x)
            bad |= 1 << i; /* bit i: slot -(8*(i+1))(%rsp) was overwritten */
    return bad;
}

/* Compiler-chosen red-zone spills: 20 values live across the probe. */
__attribute__((noinline)) unsigned long rz_cc(const unsigned long *in)
{
    unsigned long a0 = in[0] * 3, a1 = in[1] * 5, a2 = in[2] * 7,
                  a3 = in[3] * 11, a4 = in[4] * 13, a5 = in[5] * 17,
                  a6 = in[6] * 19, a7 = in[7] * 23, a8 = in[8] * 29,
                  a9 = in[9] * 31, b0 = in[10] * 37, b1 = in[11] * 41,
                  b2 = in[12] * 43, b3 = in[13] * 47, b4 = in[14] * 53,
                  b5 = in[15] * 59, b6 = in[16] * 61, b7 = in[17] * 67,
                  b8 = in[18] * 71, b9 = in[19] * 73;
    /* make all of them live in registers or spill slots at the probe */
    __asm__ volatile("" : "+r"(a0), "+r"(a1), "+r"(a2), "+r"(a3), "+r"(a4),
                     "+r"(a5), "+r"(a6), "+r"(a7), "+r"(a8), "+r"(a9));
    __asm__ volatile("" : "+r"(b0), "+r"(b1), "+r"(b2), "+r"(b3), "+r"(b4),
                     "+r"(b5), "+r"(b6), "+r"(b7), "+r"(b8), "+r"(b9));
    STAP_PROBE1(nopx, CAT(PNAME, c), a0);
    __asm__ volatile("" : "+r"(a0), "+r"(a1), "+r"(a2), "+r"(a3), "+r"(a4),
                     "+r"(a5), "+r"(a6), "+r"(a7), "+r"(a8), "+r"(a9));
    __asm__ volatile("" : "+r"(b0), "+r"(b1), "+r"(b2), "+r"(b3), "+r"(b4),
                     "+r"(b5), "+r"(b6), "+r"(b7), "+r"(b8), "+r"(b9));
    return a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7 ^ a8 ^ a9 ^ b0 ^ b1 ^ b2 ^
           b3 ^ b4 ^ b5 ^ b6 ^ b7 ^ b8 ^ b9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    long bad_asm = 0, bad_cc = 0;
    int slots = 0;
    unsigned long in[20];
    for (int i = 0; i < 20; i++)
        in[i] = 0x1000 + i;
    /* reference value computed the same way (the probe is a no-op when
     * nothing is attached) */
    unsigned long ref = rz_cc(in);
    for (long i = 0; i < n; i++) {
        int b = rz_asm(0x5a5a5a5a00000000UL + (unsigned long)i);
        if (b) {
            bad_asm++;
            slots |= b;
        }
        if (rz_cc(in) != ref)
            bad_cc++;
    }
    printf("calls=%ld asm_corrupted=%ld (slots mask 0x%02x: bit i = "
           "-%d..(%%rsp)) cc_corrupted=%ld\n",
           n, bad_asm, slots, 8, bad_cc);
    return (bad_asm || bad_cc) ? 1 : 0;
}
