/* minicc.h - a toy compiler front end, the allocsites demo program.
 *
 * main.c generates a synthetic program in memory, then lexer.c turns it
 * into a list of tokens, parser.c into an AST (interning identifiers);
 * then, one function at a time, types.c type-checks it, emit.c generates
 * its code, and its AST and types are freed. Every object comes from the
 * reference allocator (examples/rtalloc) with a tag saying what it is
 * for; each file allocates from its own call sites, which is what a
 * profile by call site shows. main.c marks the phases (lex, parse, check,
 * emit) with RT_PHASE_BEGIN/END.
 */
#ifndef MINICC_H
#define MINICC_H

#include <stddef.h>

#include "rt_alloc.h"

/* Tags; main.c gives them their names with RT_TAG_NAME. */
enum {
    TAG_TOKENS = 1,  /* struct token */
    TAG_AST = 2,     /* struct node */
    TAG_STRINGS = 3, /* interned identifiers and their hash table */
    TAG_TYPES = 4,   /* struct type */
    TAG_SCRATCH = 5, /* short-lived buffers; also the source text */
    TAG_SYMTAB = 6,  /* the symbol table, grown by rt_realloc */
    TAG_CODE = 7     /* a function's generated code, grown by rt_realloc */
};

/* Phases; main.c gives them their names with RT_PHASE_NAME. */
enum { PHASE_LEX = 1, PHASE_PARSE = 2, PHASE_CHECK = 3, PHASE_EMIT = 4 };

/* What was allocated, per kind of object (one rt_alloc or rt_realloc each). */
struct stats {
    long tokens, nodes, strings, types, scratch, symtab_grows, code;
    long code_bytes; /* generated */
    int max_depth; /* of the AST */
};
extern struct stats stats;

enum tok_kind { T_EOF, T_IDENT, T_NUM, T_KEYWORD, T_PUNCT };

struct token {
    struct token *next;
    enum tok_kind kind;
    const char *text; /* into the source text */
    size_t len;
    long value; /* T_NUM */
    int line;
};

/* An interned identifier: one per distinct name. */
struct ident {
    struct ident *next; /* in its hash bucket */
    int sym;            /* index of its global symbol, or -1 */
    size_t len;
    char name[1]; /* len + 1 bytes */
};

enum node_kind {
    N_FUNC,   /* name, a = params (N_PARAM list), b = body */
    N_PARAM,  /* name */
    N_BLOCK,  /* a = statements */
    N_LET,    /* name = a */
    N_ASSIGN, /* name = a */
    N_IF,     /* a ? b : c */
    N_WHILE,  /* a, b */
    N_RETURN, /* a */
    N_BINARY, /* a op b */
    N_CALL,   /* name(a...) */
    N_VAR,    /* name */
    N_NUM     /* value */
};

struct node {
    enum node_kind kind;
    int op; /* N_BINARY: '+', '-', '*', '/', '<', '>', 'e' (==) */
    struct ident *name;
    long value;
    struct node *a, *b, *c;
    struct node *next; /* in a list: params, statements, arguments */
    const struct type *type;
};

enum type_kind { TY_INT, TY_BOOL, TY_FUNC };

struct type {
    struct type *all; /* every type, for freeing */
    enum type_kind kind;
    int nparams; /* TY_FUNC */
};

/* main.c: prints a message and exits. Note the pattern used everywhere:
 *     p = rt_alloc(n, TAG_X); if (!p) out_of_memory();
 * rt_alloc is never wrapped in a checking helper: the helper, not its
 * callers, would then be the call site the profile shows. */
void out_of_memory(void) __attribute__((noreturn));

/* lexer.c */
struct token *lex(const char *src, size_t len);
void free_tokens(struct token *t);

/* parser.c */
struct node *parse(const struct token *t); /* list of N_FUNC */
void free_ast(struct node *n);
void free_idents(void);

/* types.c: check_decls(program) first (the functions' signatures), then
 * check_func on each function; free_func_types frees the types made by
 * the last check_func, free_types all the others. */
void check_decls(struct node *program);
void check_func(struct node *f);
int check_errors(void);
void free_func_types(void);
void free_types(void);

/* emit.c: stack-machine code for a checked function; counts its bytes. */
void emit_func(const struct node *f);

#endif /* MINICC_H */
