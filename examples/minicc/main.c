/* main.c - minicc [FUNCTIONS]: generates a program of FUNCTIONS functions
 * (default 500), lexes and parses it, then type-checks and emits code for
 * one function at a time, freeing each function's AST and types when it
 * is done; frees everything and prints one line of counts. The counts of
 * the objects are the numbers of rt_alloc / rt_realloc calls per tag;
 * allocs= is their sum, which is the number of rt:alloc events, and of
 * rt:free events too (all is freed). code_bytes= is the generated code.
 *
 * Memory: the tokens and the source text live until the parser is done
 * with them, so the peak is at the end of parse (tokens, source text, AST
 * and identifiers); after that, each function's AST goes once compiled.
 * Phases (RT_PHASE_BEGIN/END): lex and parse run once, check once for the
 * signatures and once per function, emit once per function.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "minicc.h"
#include "rt_probes.h"

/* Names of the tags in the profile: data in the binary, no code. */
RT_TAG_NAME(TAG_TOKENS, "tokens");
RT_TAG_NAME(TAG_AST, "ast");
RT_TAG_NAME(TAG_STRINGS, "strings");
RT_TAG_NAME(TAG_TYPES, "types");
RT_TAG_NAME(TAG_SCRATCH, "scratch");
RT_TAG_NAME(TAG_SYMTAB, "symtab");
RT_TAG_NAME(TAG_CODE, "code");

RT_PHASE_NAME(PHASE_LEX, "lex");
RT_PHASE_NAME(PHASE_PARSE, "parse");
RT_PHASE_NAME(PHASE_CHECK, "check");
RT_PHASE_NAME(PHASE_EMIT, "emit");

struct stats stats;

void out_of_memory(void)
{
    fputs("minicc: out of memory\n", stderr);
    exit(2);
}

/* The generated source text (tag scratch). */
static char *src;
static size_t src_len, src_cap;

static void src_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void src_printf(const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(src + src_len, src_cap - src_len, fmt, ap);
        va_end(ap);
        if (n < 0)
            abort();
        if (src_len + (size_t)n < src_cap)
            break;
        src_cap *= 2;
        src = rt_realloc(src, src_cap, TAG_SCRATCH);
        if (!src)
            out_of_memory();
        stats.scratch++;
    }
    src_len += (size_t)n;
}

static unsigned rnd(unsigned n) /* xorshift: the same program every run */
{
    static unsigned x = 2463534242u;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x % n;
}

static unsigned arity(unsigned f)
{
    return 1 + f % 3;
}

/* An int expression in function f, which has nvars variables so far. */
static void gen_expr(unsigned f, unsigned nvars, int depth)
{
    unsigned r = rnd(10), g, i;

    if (depth <= 0 || r < 3) {
        r = rnd(3);
        if (r == 0)
            src_printf("%u", rnd(100));
        else if (r == 1 || nvars == 0)
            src_printf("%c", 'a' + rnd(arity(f)));
        else
            src_printf("v%u", rnd(nvars));
    } else if (r < 4 && f > 0) {
        g = rnd(f); /* an earlier function */
        src_printf("f%u(", g);
        for (i = 0; i < arity(g); i++) {
            src_printf("%s", i ? ", " : "");
            gen_expr(f, nvars, depth - 2);
        }
        src_printf(")");
    } else {
        src_printf("%s", r < 6 ? "(" : "");
        gen_expr(f, nvars, depth - 1);
        src_printf(" %c ", "+-*/"[rnd(4)]);
        gen_expr(f, nvars, depth - 1);
        src_printf("%s", r < 6 ? ")" : "");
    }
}

static void gen_stmts(unsigned f, unsigned *nvars, int n, int indent)
{
    static const char *const cmp[] = {"<", ">", "=="};
    unsigned r;

    while (n-- > 0) {
        r = rnd(10);
        src_printf("%*s", 4 * indent, "");
        if (r < 4 || *nvars == 0) {
            src_printf("let v%u = ", *nvars);
            gen_expr(f, *nvars, 4);
            ++*nvars;
            src_printf(";\n");
        } else if (r < 7 || indent > 2) {
            src_printf("v%u = ", rnd(*nvars));
            gen_expr(f, *nvars, 4);
            src_printf(";\n");
        } else {
            src_printf("%s (", r < 9 ? "if" : "while");
            gen_expr(f, *nvars, 3);
            src_printf(" %s ", cmp[rnd(3)]);
            gen_expr(f, *nvars, 3);
            src_printf(") {\n");
            gen_stmts(f, nvars, 1 + (int)rnd(3), indent + 1);
            src_printf("%*s}", 4 * indent, "");
            if (r == 8) {
                src_printf(" else {\n");
                gen_stmts(f, nvars, 1 + (int)rnd(2), indent + 1);
                src_printf("%*s}", 4 * indent, "");
            }
            src_printf("\n");
        }
    }
}

static void gen_program(unsigned nfuncs)
{
    unsigned f, i, nvars;

    src_cap = 64 * 1024;
    src = rt_alloc(src_cap, TAG_SCRATCH);
    if (!src)
        out_of_memory();
    stats.scratch++;
    for (f = 0; f < nfuncs; f++) {
        src_printf("fn f%u(", f);
        for (i = 0; i < arity(f); i++)
            src_printf(i ? ", %c" : "%c", 'a' + i);
        src_printf(") {\n");
        nvars = 0;
        gen_stmts(f, &nvars, 3 + (int)rnd(5), 1);
        src_printf("    return ");
        gen_expr(f, nvars, 4);
        src_printf(";\n}\n");
    }
}

/* Type-checks and emits each function; once it is emitted, its AST and
 * the types of its expressions are freed (the N_FUNC node and its
 * signature stay: later functions call it). */
static void compile(struct node *program)
{
    struct node *f;

    RT_PHASE_BEGIN(PHASE_CHECK);
    check_decls(program);
    RT_PHASE_END(PHASE_CHECK);
    for (f = program; f; f = f->next) {
        RT_PHASE_BEGIN(PHASE_CHECK);
        check_func(f);
        RT_PHASE_END(PHASE_CHECK);
        RT_PHASE_BEGIN(PHASE_EMIT);
        emit_func(f);
        free_ast(f->a);
        free_ast(f->b);
        f->a = f->b = NULL;
        free_func_types();
        RT_PHASE_END(PHASE_EMIT);
    }
}

int main(int argc, char **argv)
{
    int nfuncs = argc > 1 ? atoi(argv[1]) : 500, errors;
    struct token *tokens;
    struct node *program;
    struct timespec t0, t1;
    struct rusage ru;

    if (nfuncs < 0) {
        fputs("usage: minicc [FUNCTIONS]\n", stderr);
        return 2;
    }
    /* elapsed_ns: the compile alone, without process (or profiler) start-up;
     * bench/sampled_overhead.py compares it across builds. */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gen_program((unsigned)nfuncs);
    RT_PHASE_BEGIN(PHASE_LEX);
    tokens = lex(src, src_len);
    RT_PHASE_END(PHASE_LEX);
    RT_PHASE_BEGIN(PHASE_PARSE);
    program = parse(tokens);
    free_tokens(tokens); /* the parser's input: the AST points to neither */
    rt_free(src);
    RT_PHASE_END(PHASE_PARSE);
    compile(program);
    errors = check_errors();

    free_types();
    free_ast(program);
    free_idents();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &ru); /* cpu_ns: user + system time, traps too */

    printf("minicc: functions=%d tokens=%ld nodes=%ld max_depth=%d "
           "strings=%ld types=%ld scratch=%ld symtab=%ld code=%ld allocs=%ld "
           "code_bytes=%ld errors=%d elapsed_ns=%lld cpu_ns=%lld\n",
           nfuncs, stats.tokens, stats.nodes, stats.max_depth, stats.strings,
           stats.types, stats.scratch, stats.symtab_grows, stats.code,
           stats.tokens + stats.nodes + stats.strings + stats.types +
               stats.scratch + stats.symtab_grows + stats.code,
           stats.code_bytes, errors, (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
                       (t1.tv_nsec - t0.tv_nsec),
           ((long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL +
            ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL);
    return errors != 0;
}
