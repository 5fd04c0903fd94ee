/* types.c - a naive type checker.
 *
 * Every declaration (function, parameter, variable) gets an entry in the
 * symbol table, an array grown by rt_realloc (tag symtab: it reaches a few
 * hundred KiB, large blocks). Every operator and call gets a fresh type
 * object (tag types), freed with the function's AST when the function is
 * compiled (free_func_types). Each function's scope and each call's
 * argument types are scratch buffers (tag scratch) freed as soon as they
 * are checked.
 */
#include <stdio.h>
#include <string.h>

#include "minicc.h"

struct sym {
    struct ident *name;
    const struct type *type;
    const struct node *decl;
    long uses;
};

static struct sym *symtab;
static int nsyms, capsyms;
static struct type *all_types; /* every type, linked by ->all */
static struct type *func_types;  /* all_types when check_func began */
static const struct type *int_type;
static int errors;

/* Not a helper around rt_alloc: the caller passes the new object. */
static struct type *init_type(struct type *t, enum type_kind kind, int nparams)
{
    if (!t)
        out_of_memory();
    stats.types++;
    t->kind = kind;
    t->nparams = nparams;
    t->all = all_types;
    all_types = t;
    return t;
}

static int declare(struct ident *name, const struct type *type,
                   const struct node *decl)
{
    if (nsyms == capsyms) {
        capsyms = capsyms ? 2 * capsyms : 128; /* 4 KiB, 8 KiB, ... */
        symtab = rt_realloc(symtab, capsyms * sizeof *symtab, TAG_SYMTAB);
        if (!symtab)
            out_of_memory();
        stats.symtab_grows++;
    }
    symtab[nsyms].name = name;
    symtab[nsyms].type = type;
    symtab[nsyms].decl = decl;
    symtab[nsyms].uses = 0;
    return nsyms++;
}

static void error(const char *msg, const struct ident *name)
{
    fprintf(stderr, "minicc: %s '%s'\n", msg, name ? name->name : "?");
    errors++;
}

/* The current function's parameters and variables: symtab indices. */
static int *scope;
static int nscope;

static int lookup(const struct ident *name)
{
    int i;

    for (i = nscope - 1; i >= 0; i--)
        if (symtab[scope[i]].name == name)
            return scope[i];
    return -1;
}

static const struct type *check_expr(struct node *n, int depth);

static const struct type *check_call(struct node *n, int depth)
{
    const struct type *fn, **args;
    struct node *a;
    int nargs = 0, i;

    for (a = n->a; a; a = a->next)
        nargs++;
    args = rt_alloc((nargs + 1) * sizeof *args, TAG_SCRATCH);
    if (!args)
        out_of_memory();
    stats.scratch++;
    for (a = n->a, i = 0; a; a = a->next, i++)
        args[i] = check_expr(a, depth + 1);
    fn = n->name->sym >= 0 ? symtab[n->name->sym].type : NULL;
    if (!fn || fn->kind != TY_FUNC)
        error("call of an undeclared function", n->name);
    else if (fn->nparams != nargs)
        error("wrong number of arguments to", n->name);
    for (i = 0; i < nargs; i++)
        if (args[i]->kind != TY_INT)
            error("non-int argument to", n->name);
    rt_free(args);
    return init_type(rt_alloc(sizeof(struct type), TAG_TYPES), TY_INT, 0);
}

static const struct type *check_expr(struct node *n, int depth)
{
    const struct type *l, *r;
    enum type_kind kind;
    int sym;

    if (depth > stats.max_depth)
        stats.max_depth = depth;
    switch (n->kind) {
    case N_NUM:
        return n->type = int_type;
    case N_VAR:
        if ((sym = lookup(n->name)) < 0) {
            error("undeclared variable", n->name);
            return n->type = int_type;
        }
        symtab[sym].uses++;
        return n->type = symtab[sym].type;
    case N_CALL:
        return n->type = check_call(n, depth);
    default: /* N_BINARY */
        l = check_expr(n->a, depth + 1);
        r = check_expr(n->b, depth + 1);
        if (l->kind != TY_INT || r->kind != TY_INT)
            error("non-int operand", NULL);
        kind = strchr("+-*/", n->op) ? TY_INT : TY_BOOL;
        return n->type = init_type(rt_alloc(sizeof(struct type), TAG_TYPES),
                                   kind, 0);
    }
}

static void check_block(struct node *block, int depth)
{
    struct node *s;

    for (s = block->a; s; s = s->next) {
        if (depth + 1 > stats.max_depth)
            stats.max_depth = depth + 1;
        if (s->a && check_expr(s->a, depth + 2)->kind !=
                        (s->kind == N_IF || s->kind == N_WHILE ? TY_BOOL
                                                               : TY_INT))
            error("wrong type of expression", s->name);
        if (s->kind == N_LET)
            scope[nscope++] = declare(s->name, int_type, s);
        else if (s->kind == N_ASSIGN && lookup(s->name) < 0)
            error("assignment to an undeclared variable", s->name);
        if (s->b)
            check_block(s->b, depth + 2);
        if (s->c)
            check_block(s->c, depth + 2);
    }
}

/* Names declared by a list of parameters or statements, nested blocks
 * included (a function is one scope: blocks do not open scopes). */
static int count_decls(const struct node *n)
{
    int count = 0;

    for (; n; n = n->next) {
        count += n->kind == N_LET || n->kind == N_PARAM;
        if (n->b)
            count += count_decls(n->b->a);
        if (n->c)
            count += count_decls(n->c->a);
    }
    return count;
}

void check_func(struct node *f)
{
    struct node *p;

    func_types = all_types;
    scope = rt_alloc((count_decls(f->a) + count_decls(f->b->a) + 1) *
                         sizeof *scope,
                     TAG_SCRATCH);
    if (!scope)
        out_of_memory();
    stats.scratch++;
    nscope = 0;
    for (p = f->a; p; p = p->next)
        scope[nscope++] = declare(p->name, int_type, p);
    check_block(f->b, 1);
    rt_free(scope);
    scope = NULL;
}

void free_func_types(void)
{
    while (all_types != func_types) {
        struct type *next = all_types->all;
        rt_free(all_types);
        all_types = next;
    }
}

void check_decls(struct node *program)
{
    struct node *f;
    int nparams;

    int_type = init_type(rt_alloc(sizeof(struct type), TAG_TYPES), TY_INT, 0);
    for (f = program; f; f = f->next) { /* first the functions */
        const struct node *p;
        for (nparams = 0, p = f->a; p; p = p->next)
            nparams++;
        if (f->name->sym >= 0)
            error("redefinition of", f->name);
        f->type = init_type(rt_alloc(sizeof(struct type), TAG_TYPES), TY_FUNC,
                            nparams);
        f->name->sym = declare(f->name, f->type, f);
    }
}

int check_errors(void)
{
    return errors;
}

void free_types(void)
{
    while (all_types) {
        struct type *next = all_types->all;
        rt_free(all_types);
        all_types = next;
    }
    func_types = NULL;
    rt_free(symtab);
    symtab = NULL;
    nsyms = capsyms = 0;
}
