/* emit.c - code for a stack machine, one checked function at a time.
 *
 * The code is text in a buffer (tag code) that starts at 256 bytes and
 * doubles with rt_realloc as it fills; once the function is done it would
 * be written out (here its bytes are only counted) and the buffer is
 * freed, so emit's memory lives as long as one function.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "minicc.h"

static char *code;
static size_t code_len, code_cap;
static int labels;

static void code_printf(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static void code_printf(const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(code + code_len, code_cap - code_len, fmt, ap);
        va_end(ap);
        if (n < 0)
            abort();
        if (code_len + (size_t)n < code_cap)
            break;
        code_cap *= 2;
        code = rt_realloc(code, code_cap, TAG_CODE);
        if (!code)
            out_of_memory();
        stats.code++;
    }
    code_len += (size_t)n;
}

static void emit_expr(const struct node *n)
{
    const struct node *a;
    int nargs = 0;

    switch (n->kind) {
    case N_NUM:
        code_printf("  push %ld\n", n->value);
        break;
    case N_VAR:
        code_printf("  load %s\n", n->name->name);
        break;
    case N_CALL:
        for (a = n->a; a; a = a->next, nargs++)
            emit_expr(a);
        code_printf("  call %s %d\n", n->name->name, nargs);
        break;
    default: /* N_BINARY */
        emit_expr(n->a);
        emit_expr(n->b);
        code_printf("  op %c\n", n->op);
    }
}

static void emit_block(const struct node *block)
{
    const struct node *s;
    int l1, l2;

    for (s = block->a; s; s = s->next) {
        switch (s->kind) {
        case N_LET:
        case N_ASSIGN:
            emit_expr(s->a);
            code_printf("  store %s\n", s->name->name);
            break;
        case N_RETURN:
            emit_expr(s->a);
            code_printf("  ret\n");
            break;
        case N_WHILE:
            l1 = labels++;
            l2 = labels++;
            code_printf("L%d:\n", l1);
            emit_expr(s->a);
            code_printf("  jz L%d\n", l2);
            emit_block(s->b);
            code_printf("  jmp L%d\nL%d:\n", l1, l2);
            break;
        default: /* N_IF */
            l1 = labels++;
            emit_expr(s->a);
            code_printf("  jz L%d\n", l1);
            emit_block(s->b);
            if (s->c) {
                l2 = labels++;
                code_printf("  jmp L%d\nL%d:\n", l2, l1);
                emit_block(s->c);
                l1 = l2;
            }
            code_printf("L%d:\n", l1);
        }
    }
}

void emit_func(const struct node *f)
{
    const struct node *p;

    code_cap = 256;
    code_len = 0;
    code = rt_alloc(code_cap, TAG_CODE);
    if (!code)
        out_of_memory();
    stats.code++;
    code_printf("%s:\n", f->name->name);
    for (p = f->a; p; p = p->next)
        code_printf("  param %s\n", p->name->name);
    emit_block(f->b);
    stats.code_bytes += (long)code_len;
    rt_free(code);
    code = NULL;
}
