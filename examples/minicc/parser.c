/* parser.c - recursive descent from tokens to an AST.
 *
 *   program := func*
 *   func    := "fn" IDENT "(" [IDENT {"," IDENT}] ")" block
 *   block   := "{" stmt* "}"
 *   stmt    := "let" IDENT "=" expr ";" | IDENT "=" expr ";"
 *            | "if" "(" expr ")" block ["else" block]
 *            | "while" "(" expr ")" block | "return" expr ";"
 *   expr    := sum [("<" | ">" | "==") sum]
 *   sum     := term {("+" | "-") term}
 *   term    := primary {("*" | "/") primary}
 *   primary := NUM | IDENT ["(" [expr {"," expr}] ")"] | "(" expr ")"
 *
 * Nodes (tag ast) are allocated in each parsing function by the NEW macro,
 * so each function is a call site of its own. Identifiers (tag strings) are
 * allocated by intern(), which is always inlined into its callers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minicc.h"

#define NBUCKETS 4096
static struct ident **buckets; /* interned identifiers */
static const struct token *tok; /* the next token */

static unsigned hash(const char *s, size_t n)
{
    unsigned h = 2166136261u; /* FNV-1a */

    while (n--)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

/* The one struct ident for s[0..n), allocated the first time. Forced
 * inline: the rt_alloc call below belongs to each caller in the machine
 * code, and only the debug info remembers intern (an inlined frame). */
static inline __attribute__((always_inline)) struct ident *
intern(const char *s, size_t n)
{
    struct ident **b = &buckets[hash(s, n) % NBUCKETS], *id;

    for (id = *b; id; id = id->next)
        if (id->len == n && memcmp(id->name, s, n) == 0)
            return id;
    id = rt_alloc(offsetof(struct ident, name) + n + 1, TAG_STRINGS);
    if (!id)
        out_of_memory();
    stats.strings++;
    id->next = *b;
    id->sym = -1;
    id->len = n;
    memcpy(id->name, s, n);
    id->name[n] = '\0';
    *b = id;
    return id;
}

static struct node *init_node(struct node *n, enum node_kind kind)
{
    if (!n)
        out_of_memory();
    stats.nodes++;
    memset(n, 0, sizeof *n);
    n->kind = kind;
    return n;
}

/* A macro, not a function, so that every parsing function that makes
 * nodes calls rt_alloc itself. */
#define NEW(kind) init_node(rt_alloc(sizeof(struct node), TAG_AST), (kind))

static void syntax_error(const char *what)
{
    fprintf(stderr, "minicc: line %d: expected %s near '%.*s'\n", tok->line,
            what, (int)tok->len, tok->text);
    exit(1);
}

static int is(const char *s)
{
    return tok->kind != T_EOF && tok->len == strlen(s) &&
           memcmp(tok->text, s, tok->len) == 0;
}

static int accept(const char *s)
{
    if (!is(s))
        return 0;
    tok = tok->next;
    return 1;
}

static void expect(const char *s)
{
    if (!accept(s))
        syntax_error(s);
}

/* The identifier of a declaration or an assignment. */
static struct ident *name(void)
{
    struct ident *id;

    if (tok->kind != T_IDENT)
        syntax_error("a name");
    id = intern(tok->text, tok->len);
    tok = tok->next;
    return id;
}

static struct node *parse_expr(void);

static struct node *parse_primary(void)
{
    struct node *n, **tail;

    if (tok->kind == T_NUM) {
        n = NEW(N_NUM);
        n->value = tok->value;
        tok = tok->next;
    } else if (tok->kind == T_IDENT) {
        struct ident *id = intern(tok->text, tok->len);
        tok = tok->next;
        n = NEW(is("(") ? N_CALL : N_VAR);
        n->name = id;
        if (accept("(") && !accept(")")) {
            tail = &n->a;
            do {
                *tail = parse_expr();
                tail = &(*tail)->next;
            } while (accept(","));
            expect(")");
        }
    } else {
        expect("(");
        n = parse_expr();
        expect(")");
    }
    return n;
}

/* The operator at tok if it is one of the level's, else 0; 'e' is "==". */
static int binary_op(int level)
{
    static const char *const ops[] = {"<>=", "+-", "*/"};

    if (tok->kind != T_PUNCT || !strchr(ops[level], tok->text[0]))
        return 0;
    if (tok->text[0] == '=') /* "==", not "=" */
        return tok->len == 2 ? 'e' : 0;
    return tok->text[0];
}

/* Level 0: comparisons (not chained); 1: + -; 2: * /. */
static struct node *parse_binary(int level)
{
    struct node *n, *left;
    int op;

    left = level == 2 ? parse_primary() : parse_binary(level + 1);
    while ((op = binary_op(level)) != 0) {
        tok = tok->next;
        n = NEW(N_BINARY);
        n->op = op;
        n->a = left;
        n->b = level == 2 ? parse_primary() : parse_binary(level + 1);
        left = n;
        if (level == 0)
            break;
    }
    return left;
}

static struct node *parse_expr(void)
{
    return parse_binary(0);
}

static struct node *parse_block(void);

static struct node *parse_stmt(void)
{
    struct node *n;

    if (is("if") || is("while")) {
        n = NEW(is("if") ? N_IF : N_WHILE);
        tok = tok->next;
        expect("(");
        n->a = parse_expr();
        expect(")");
        n->b = parse_block();
        if (n->kind == N_IF && accept("else"))
            n->c = parse_block();
    } else if (accept("return")) {
        n = NEW(N_RETURN);
        n->a = parse_expr();
        expect(";");
    } else {
        n = NEW(accept("let") ? N_LET : N_ASSIGN);
        n->name = name();
        expect("=");
        n->a = parse_expr();
        expect(";");
    }
    return n;
}

static struct node *parse_block(void)
{
    struct node *n = NEW(N_BLOCK), **tail = &n->a;

    expect("{");
    while (!accept("}")) {
        *tail = parse_stmt();
        tail = &(*tail)->next;
    }
    return n;
}

static struct node *parse_func(void)
{
    struct node *f = NEW(N_FUNC), **tail = &f->a;

    expect("fn");
    f->name = name();
    expect("(");
    if (!accept(")")) {
        do {
            *tail = NEW(N_PARAM);
            (*tail)->name = name();
            tail = &(*tail)->next;
        } while (accept(","));
        expect(")");
    }
    f->b = parse_block();
    return f;
}

struct node *parse(const struct token *t)
{
    struct node *program = NULL, **tail = &program;

    buckets = rt_alloc(NBUCKETS * sizeof *buckets, TAG_STRINGS);
    if (!buckets)
        out_of_memory();
    stats.strings++;
    memset(buckets, 0, NBUCKETS * sizeof *buckets);
    tok = t;
    while (tok->kind != T_EOF) {
        *tail = parse_func();
        tail = &(*tail)->next;
    }
    return program;
}

void free_ast(struct node *n)
{
    while (n) {
        struct node *next = n->next;
        free_ast(n->a);
        free_ast(n->b);
        free_ast(n->c);
        rt_free(n);
        n = next;
    }
}

void free_idents(void)
{
    int i;

    for (i = 0; i < NBUCKETS; i++)
        while (buckets[i]) {
            struct ident *next = buckets[i]->next;
            rt_free(buckets[i]);
            buckets[i] = next;
        }
    rt_free(buckets);
    buckets = NULL;
}
