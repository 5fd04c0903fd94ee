/* lexer.c - source text to a list of tokens, one rt_alloc per token. */
#include <ctype.h>
#include <string.h>

#include "minicc.h"

static const char *const keywords[] = {"fn", "let", "if", "else", "while",
                                       "return"};

static int is_keyword(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (strlen(keywords[i]) == len && memcmp(keywords[i], s, len) == 0)
            return 1;
    return 0;
}

struct token *lex(const char *src, size_t len)
{
    struct token *head = NULL, **tail = &head;
    const char *p = src, *end = src + len;
    int line = 1;

    for (;;) {
        struct token *t;
        const char *q;

        while (p < end && isspace((unsigned char)*p))
            line += *p++ == '\n';
        t = rt_alloc(sizeof *t, TAG_TOKENS); /* call site: lex */
        if (!t)
            out_of_memory();
        stats.tokens++;
        t->next = NULL;
        t->text = p;
        t->line = line;
        t->value = 0;
        q = p;
        if (p == end) {
            t->kind = T_EOF;
        } else if (isalpha((unsigned char)*p) || *p == '_') {
            while (q < end && (isalnum((unsigned char)*q) || *q == '_'))
                q++;
            t->kind = is_keyword(p, (size_t)(q - p)) ? T_KEYWORD : T_IDENT;
        } else if (isdigit((unsigned char)*p)) {
            for (; q < end && isdigit((unsigned char)*q); q++)
                t->value = t->value * 10 + (*q - '0');
            t->kind = T_NUM;
        } else {
            q += (p[0] == '=' && p + 1 < end && p[1] == '=') ? 2 : 1;
            t->kind = T_PUNCT;
        }
        t->len = (size_t)(q - p);
        p = q;
        *tail = t;
        tail = &t->next;
        if (t->kind == T_EOF)
            return head;
    }
}

void free_tokens(struct token *t)
{
    while (t) {
        struct token *next = t->next;
        rt_free(t);
        t = next;
    }
}
