/* t_sites: an allocator inlined into every caller, as a header-only arena
 * is, so that each of its 400 call sites is a probe site of its own: 400
 * USDT notes, 400 uprobes that allocsites record puts under one event.
 * Each site is a function of its own (ten to
 * a line, named site_L_K), called once or more per round with sizes and
 * tags of its own; argv[1] rounds (default 3). The truth (truth.h) notes
 * every allocation at its site's line and function. */
#include <stdlib.h>

#include "rt_alloc.h"   /* truth.h frees through it; nothing here does */
#include "rt_probes.h"
#include "truth.h"

static char arena[1 << 22];
static size_t used;

/* The probe inlined here lands in every caller. */
static inline __attribute__((always_inline)) void *bump(size_t n,
                                                        unsigned tag)
{
    void *p = arena + used;
    used += (n + 15) & ~(size_t)15;
    if (used > sizeof arena)
        used = 0;   /* the tests never get here: 3 rounds use 700 KB */
    RT_ALLOC(p, n, tag);
    return p;
}

/* ALLOC's truth note, with bump for the allocator */
#define SITE_ALLOC(size, tag)                                                 \
    truth_alloc(__FILE__, __LINE__, __func__, (tag), (size),                  \
                bump((size), (tag)), NULL)

#define SITE(l, k)                                                            \
    static __attribute__((noinline)) void site_##l##_##k(int r)               \
    {                                                                         \
        for (int i = 0; i <= (l * 10 + k) % 3; i++)                           \
            SITE_ALLOC((size_t)(16 + (l * 10 + k) % 97 + r), (l + k) % 5);   \
    }
#define LINE10(l)                                                             \
    SITE(l, 0) SITE(l, 1) SITE(l, 2) SITE(l, 3) SITE(l, 4)                    \
    SITE(l, 5) SITE(l, 6) SITE(l, 7) SITE(l, 8) SITE(l, 9)
#define CALL10(l)                                                             \
    site_##l##_0(r); site_##l##_1(r); site_##l##_2(r); site_##l##_3(r);       \
    site_##l##_4(r); site_##l##_5(r); site_##l##_6(r); site_##l##_7(r);       \
    site_##l##_8(r); site_##l##_9(r);

LINE10(0)
LINE10(1)
LINE10(2)
LINE10(3)
LINE10(4)
LINE10(5)
LINE10(6)
LINE10(7)
LINE10(8)
LINE10(9)
LINE10(10)
LINE10(11)
LINE10(12)
LINE10(13)
LINE10(14)
LINE10(15)
LINE10(16)
LINE10(17)
LINE10(18)
LINE10(19)
LINE10(20)
LINE10(21)
LINE10(22)
LINE10(23)
LINE10(24)
LINE10(25)
LINE10(26)
LINE10(27)
LINE10(28)
LINE10(29)
LINE10(30)
LINE10(31)
LINE10(32)
LINE10(33)
LINE10(34)
LINE10(35)
LINE10(36)
LINE10(37)
LINE10(38)
LINE10(39)

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    truth_init(argc, argv, NULL);
    for (int r = 0; r < rounds; r++) {
        CALL10(0) CALL10(1) CALL10(2) CALL10(3) CALL10(4)
        CALL10(5) CALL10(6) CALL10(7) CALL10(8) CALL10(9)
        CALL10(10) CALL10(11) CALL10(12) CALL10(13) CALL10(14)
        CALL10(15) CALL10(16) CALL10(17) CALL10(18) CALL10(19)
        CALL10(20) CALL10(21) CALL10(22) CALL10(23) CALL10(24)
        CALL10(25) CALL10(26) CALL10(27) CALL10(28) CALL10(29)
        CALL10(30) CALL10(31) CALL10(32) CALL10(33) CALL10(34)
        CALL10(35) CALL10(36) CALL10(37) CALL10(38) CALL10(39)
    }
    return 0;
}
