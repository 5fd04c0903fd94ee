/* t_basic: several call sites, tags (named and not), an allocation inside
 * an inlined helper, recursion, realloc, and argv echoed into the truth
 * (the tests pass arguments with spaces and quotes). */
#include <stdlib.h>
#include <string.h>

#include "rt_alloc.h"
#include "rt_probes.h"
#include "truth.h"

enum { TAG_AST = 1, TAG_TOKENS = 2, TAG_UNNAMED = 7 };
RT_TAG_NAME(TAG_AST, "ast");
RT_TAG_NAME(TAG_TOKENS, "tokens");

static const char *tag_name(unsigned tag)
{
    return tag == TAG_AST ? "ast" : tag == TAG_TOKENS ? "tokens" : NULL;
}

/* Inlined into every caller: the profile must charge its line, and show
 * both intern and the caller in the stack. */
static inline __attribute__((always_inline)) char *intern(const char *s,
                                                          size_t n)
{
    char *p = ALLOC(n + 1, TAG_TOKENS);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static __attribute__((noinline)) void *nest(int depth)
{
    void *p = ALLOC(32 + (size_t)depth, TAG_AST);
    if (depth > 0)
        rt_free(nest(depth - 1));
    return p;
}

int main(int argc, char **argv)
{
    int i, n = argc > 1 ? atoi(argv[1]) : 1000;
    void *keep = NULL;
    truth_init(argc, argv, tag_name);
    for (i = 0; i < n; i++) {
        void *a = ALLOC((size_t)(i % 100) + 1, TAG_AST);
        void *b = ALLOC(64, TAG_UNNAMED);
        char *s = intern("identifier", (size_t)(i % 7) + 1);
        if (i % 10 == 0)
            keep = REALLOC(keep, (size_t)(i + 1) * 8, TAG_AST);
        rt_free(a);
        rt_free(b);
        rt_free(s);
    }
    rt_free(nest(20));
    rt_free(ALLOC(1 << 20, TAG_UNNAMED)); /* a large (mmap'd) block */
    rt_free(keep);
    return 0;
}
