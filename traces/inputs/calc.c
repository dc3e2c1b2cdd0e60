/*
 * Input for the gcc capture in traces/README.md: a small calculator (tokenizer, recursive
 * descent parser, tree evaluator, variable table, sorted report), written for this corpus.
 * Compiled with `gcc -O2 -c`; it is never run by the corpus.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum token_kind { T_NUMBER, T_NAME, T_OP, T_LPAREN, T_RPAREN, T_ASSIGN, T_END };

struct token {
    enum token_kind kind;
    double number;
    char name[32];
    char op;
};

struct lexer {
    const char *text;
    size_t at;
    struct token current;
};

enum node_kind { N_NUMBER, N_VARIABLE, N_BINARY, N_NEGATE, N_CALL };

struct node {
    enum node_kind kind;
    double number;
    char name[32];
    char op;
    struct node *left, *right;
};

struct variable {
    char name[32];
    double value;
    struct variable *next;
};

#define BUCKETS 64
static struct variable *table[BUCKETS];

static unsigned hash_name(const char *name) {
    unsigned h = 2166136261u;
    for (; *name; name++) h = (h ^ (unsigned char)*name) * 16777619u;
    return h % BUCKETS;
}

static struct variable *lookup(const char *name, int create) {
    unsigned slot = hash_name(name);
    for (struct variable *v = table[slot]; v; v = v->next)
        if (strcmp(v->name, name) == 0) return v;
    if (!create) return NULL;
    struct variable *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    snprintf(v->name, sizeof v->name, "%s", name);
    v->next = table[slot];
    table[slot] = v;
    return v;
}

static void next_token(struct lexer *lx) {
    const char *s = lx->text;
    while (isspace((unsigned char)s[lx->at])) lx->at++;
    struct token *t = &lx->current;
    char c = s[lx->at];
    if (c == '\0') { t->kind = T_END; return; }
    if (isdigit((unsigned char)c) || c == '.') {
        char *end;
        t->kind = T_NUMBER;
        t->number = strtod(s + lx->at, &end);
        lx->at = (size_t)(end - s);
        return;
    }
    if (isalpha((unsigned char)c)) {
        size_t n = 0;
        while (isalnum((unsigned char)s[lx->at]) && n + 1 < sizeof t->name) t->name[n++] = s[lx->at++];
        t->name[n] = '\0';
        t->kind = T_NAME;
        return;
    }
    lx->at++;
    switch (c) {
    case '(': t->kind = T_LPAREN; break;
    case ')': t->kind = T_RPAREN; break;
    case '=': t->kind = T_ASSIGN; break;
    default: t->kind = T_OP; t->op = c; break;
    }
}

static struct node *new_node(enum node_kind kind) {
    struct node *n = calloc(1, sizeof *n);
    if (!n) { perror("calloc"); exit(1); }
    n->kind = kind;
    return n;
}

static struct node *parse_sum(struct lexer *lx);

static struct node *parse_atom(struct lexer *lx) {
    struct token t = lx->current;
    if (t.kind == T_NUMBER) {
        struct node *n = new_node(N_NUMBER);
        n->number = t.number;
        next_token(lx);
        return n;
    }
    if (t.kind == T_NAME) {
        next_token(lx);
        struct node *n = new_node(N_VARIABLE);
        memcpy(n->name, t.name, sizeof n->name);
        if (lx->current.kind == T_LPAREN) {
            next_token(lx);
            n->kind = N_CALL;
            n->left = parse_sum(lx);
            if (lx->current.kind == T_RPAREN) next_token(lx);
        }
        return n;
    }
    if (t.kind == T_LPAREN) {
        next_token(lx);
        struct node *inner = parse_sum(lx);
        if (lx->current.kind == T_RPAREN) next_token(lx);
        return inner;
    }
    if (t.kind == T_OP && t.op == '-') {
        next_token(lx);
        struct node *n = new_node(N_NEGATE);
        n->left = parse_atom(lx);
        return n;
    }
    return new_node(N_NUMBER);
}

static struct node *parse_product(struct lexer *lx) {
    struct node *left = parse_atom(lx);
    while (lx->current.kind == T_OP && strchr("*/%^", lx->current.op)) {
        struct node *n = new_node(N_BINARY);
        n->op = lx->current.op;
        next_token(lx);
        n->left = left;
        n->right = parse_atom(lx);
        left = n;
    }
    return left;
}

static struct node *parse_sum(struct lexer *lx) {
    struct node *left = parse_product(lx);
    while (lx->current.kind == T_OP && strchr("+-", lx->current.op)) {
        struct node *n = new_node(N_BINARY);
        n->op = lx->current.op;
        next_token(lx);
        n->left = left;
        n->right = parse_product(lx);
        left = n;
    }
    return left;
}

static double power(double base, int exponent) {
    double result = 1.0;
    for (int negative = exponent < 0, e = negative ? -exponent : exponent; e; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
        if (e == 1 && negative) result = 1.0 / result;
    }
    return result;
}

static double evaluate(const struct node *n) {
    switch (n->kind) {
    case N_NUMBER: return n->number;
    case N_VARIABLE: {
        struct variable *v = lookup(n->name, 0);
        return v ? v->value : 0.0;
    }
    case N_NEGATE: return -evaluate(n->left);
    case N_CALL: {
        double x = evaluate(n->left);
        if (strcmp(n->name, "abs") == 0) return x < 0 ? -x : x;
        if (strcmp(n->name, "sq") == 0) return x * x;
        return x;
    }
    case N_BINARY: {
        double a = evaluate(n->left), b = evaluate(n->right);
        switch (n->op) {
        case '+': return a + b;
        case '-': return a - b;
        case '*': return a * b;
        case '/': return b == 0 ? 0 : a / b;
        case '%': return b == 0 ? 0 : (double)((long)a % (long)b);
        case '^': return power(a, (int)b);
        }
    }
    }
    return 0.0;
}

static void free_tree(struct node *n) {
    if (!n) return;
    free_tree(n->left);
    free_tree(n->right);
    free(n);
}

static int by_value(const void *a, const void *b) {
    const struct variable *x = *(struct variable *const *)a, *y = *(struct variable *const *)b;
    return (x->value > y->value) - (x->value < y->value);
}

static void report(FILE *out) {
    size_t count = 0, cap = 8;
    struct variable **all = malloc(cap * sizeof *all);
    for (int i = 0; i < BUCKETS; i++) {
        for (struct variable *v = table[i]; v; v = v->next) {
            if (count == cap) {
                cap *= 2;
                all = realloc(all, cap * sizeof *all);
            }
            all[count++] = v;
        }
    }
    qsort(all, count, sizeof *all, by_value);
    for (size_t i = 0; i < count; i++) fprintf(out, "%-16s %g\n", all[i]->name, all[i]->value);
    free(all);
}

int main(void) {
    char line[1024];
    while (fgets(line, sizeof line, stdin)) {
        struct lexer lx = {line, 0, {0}};
        next_token(&lx);
        if (lx.current.kind == T_NAME) {
            struct lexer ahead = lx;
            next_token(&ahead);
            if (ahead.current.kind == T_ASSIGN) {
                char name[32];
                memcpy(name, lx.current.name, sizeof name);
                next_token(&ahead);
                struct node *tree = parse_sum(&ahead);
                struct variable *v = lookup(name, 1);
                if (v) v->value = evaluate(tree);
                free_tree(tree);
                continue;
            }
        }
        struct node *tree = parse_sum(&lx);
        printf("%g\n", evaluate(tree));
        free_tree(tree);
    }
    report(stdout);
    return 0;
}
