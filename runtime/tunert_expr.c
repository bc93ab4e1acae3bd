/* tunert_expr.c: recursive-descent parser and tree evaluator for bundle
 * expressions (a subset of Lua 5.4 expressions, with Lua's semantics). */
#include "tunert_expr.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT (64 * 1024)
#define MAX_DEPTH 100
#define MAX_HEIGHT 1000  /* tree height: bounds the evaluator's recursion */

enum {
  OP_CONST, OP_VAR, OP_NEG, OP_NOT, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_IDIV, OP_MOD, OP_POW,
  OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_AND, OP_OR, OP_MIN, OP_MAX, OP_FLOOR, OP_CEIL,
  OP_ABS, OP_SQRT, OP_ID
};

typedef struct xnode {
  int op;
  int height;               /* 1 + the children's */
  int a, b;                 /* children (node indexes), or the env slot for OP_VAR */
  tunert_xval k;            /* OP_CONST */
} xnode;

struct tunert_expr {
  size_t bytes;             /* of this allocation */
  int n_nodes, n_items;
  xnode *nodes;
  int *items;               /* root node of each item */
  char *text;
};

typedef struct parser {
  const char *s;            /* text */
  size_t pos;
  const char *const *names;
  int n_names;
  tunert_expr *e;
  int cap;
  int depth;
  char *msg;
  size_t msg_n;
  int failed;
} parser;

static void pfail(parser *p, const char *fmt, ...) {
  if (p->failed) return;
  p->failed = 1;
  if (!p->msg || !p->msg_n) return;
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(p->msg, p->msg_n, "expression '%.200s': at %zu: %s", p->s, p->pos + 1, what);
}

static int new_node(parser *p, int op, int a, int b) {
  if (p->e->n_nodes >= p->cap) { pfail(p, "too many nodes"); return -1; }
  xnode *n = &p->e->nodes[p->e->n_nodes];
  int h = 0;
  if (op != OP_VAR && op != OP_CONST) {
    if (a >= 0 && p->e->nodes[a].height > h) h = p->e->nodes[a].height;
    if (b >= 0 && p->e->nodes[b].height > h) h = p->e->nodes[b].height;
  }
  if (h + 1 > MAX_HEIGHT) { pfail(p, "nested too deeply (more than %d levels of operators)", MAX_HEIGHT); return -1; }
  n->op = op;
  n->height = h + 1;
  n->a = a;
  n->b = b;
  n->k = tunert_xint(0);
  return p->e->n_nodes++;
}

static void skip_ws(parser *p) {
  while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r')
    p->pos++;
}

/* Does the text at pos start with word w as a whole word? */
static int at_word(parser *p, const char *w) {
  skip_ws(p);
  size_t n = strlen(w);
  if (strncmp(p->s + p->pos, w, n)) return 0;
  char c = p->s[p->pos + n];
  return !(isalnum((unsigned char)c) || c == '_');
}

/* Does the text at pos start with the operator o (and not a longer one)? */
static int at_op(parser *p, const char *o) {
  skip_ws(p);
  size_t n = strlen(o);
  if (strncmp(p->s + p->pos, o, n)) return 0;
  /* "/" is not "//", "<" is not "<=", "=" alone is not an operator */
  char c = p->s[p->pos + n];
  if (!strcmp(o, "/") && c == '/') return 0;
  if ((!strcmp(o, "<") || !strcmp(o, ">")) && c == '=') return 0;
  return 1;
}

static int parse_expr(parser *p);

/* An unexpected character, with a hint for operators of other languages. */
static void unexpected(parser *p, char c, const char *after) {
  if (c == '!' && (p->s[p->pos + 1] == '=')) pfail(p, "'!=' is not an operator: write '~=' (Lua)");
  else if (c == '&' || c == '|') pfail(p, "'%c' is not an operator: write 'and' / 'or' (Lua)", c);
  else if (c == '?') pfail(p, "'?' is not an operator: write 'c and a or b' (Lua)");
  else if (c == '!') pfail(p, "'!' is not an operator: write 'not' (Lua)");
  else pfail(p, "unexpected '%c'%s", c, after);
}

static int parse_number(parser *p) {
  const char *start = p->s + p->pos;
  char *end = NULL;
  tunert_xval v;
  if (start[0] == '0' && (start[1] == 'x' || start[1] == 'X')) {
    /* hexadecimal integer: wraps around like Lua */
    const char *q = start + 2;
    uint64_t x = 0;
    int nd = 0;
    while (isxdigit((unsigned char)*q)) {
      int d = isdigit((unsigned char)*q) ? *q - '0' : (tolower((unsigned char)*q) - 'a' + 10);
      x = x * 16 + (uint64_t)d;
      ++q;
      ++nd;
    }
    if (!nd || *q == '.' || *q == 'p' || *q == 'P') { pfail(p, "malformed number"); return -1; }
    v = tunert_xint((int64_t)x);
    end = (char *)q;
  } else {
    const char *q = start;
    int is_float = 0;
    while (isdigit((unsigned char)*q)) ++q;
    if (*q == '.') { is_float = 1; ++q; while (isdigit((unsigned char)*q)) ++q; }
    if (*q == 'e' || *q == 'E') {
      is_float = 1;
      ++q;
      if (*q == '+' || *q == '-') ++q;
      if (!isdigit((unsigned char)*q)) { pfail(p, "malformed number"); return -1; }
      while (isdigit((unsigned char)*q)) ++q;
    }
    if (q == start || (q == start + 1 && *start == '.')) { pfail(p, "malformed number"); return -1; }
    if (!is_float) {
      errno = 0;
      unsigned long long u = strtoull(start, &end, 10);
      if (errno == ERANGE || u > (unsigned long long)INT64_MAX) is_float = 1; /* Lua: a float */
      else v = tunert_xint((int64_t)u);
    }
    if (is_float) v = tunert_xfloat(strtod(start, &end));
    if (end != q) { pfail(p, "malformed number"); return -1; }
  }
  if (isalpha((unsigned char)*end) || *end == '_' || *end == '.') { pfail(p, "malformed number"); return -1; }
  p->pos += (size_t)(end - start);
  int n = new_node(p, OP_CONST, 0, 0);
  if (n >= 0) p->e->nodes[n].k = v;
  return n;
}

static const struct { const char *name; int op; int min_args, max_args; } functions[] = {
    {"min", OP_MIN, 1, 64}, {"max", OP_MAX, 1, 64}, {"floor", OP_FLOOR, 1, 1},
    {"ceil", OP_CEIL, 1, 1}, {"abs", OP_ABS, 1, 1},  {"sqrt", OP_SQRT, 1, 1},
};

static int parse_call(parser *p, const char *fname) {
  int fi = -1;
  for (size_t i = 0; i < sizeof functions / sizeof functions[0]; ++i)
    if (!strcmp(functions[i].name, fname)) fi = (int)i;
  if (fi < 0) { pfail(p, "unknown function '%s' (min, max, floor, ceil, abs, sqrt)", fname); return -1; }
  p->pos++; /* ( */
  int acc = -1, n_args = 0;
  for (;;) {
    skip_ws(p);
    if (p->s[p->pos] == ')' && n_args == 0) break;
    int a = parse_expr(p);
    if (a < 0) return -1;
    ++n_args;
    if (n_args > functions[fi].max_args) { pfail(p, "%s takes at most %d argument(s)", fname, functions[fi].max_args); return -1; }
    if (functions[fi].op == OP_MIN || functions[fi].op == OP_MAX)
      acc = acc < 0 ? new_node(p, OP_ID, a, -1) : new_node(p, functions[fi].op, acc, a);
    else
      acc = new_node(p, functions[fi].op, a, -1);
    if (acc < 0) return -1;
    skip_ws(p);
    if (p->s[p->pos] == ',') { p->pos++; continue; }
    break;
  }
  skip_ws(p);
  if (p->s[p->pos] != ')') { pfail(p, "')' expected to close %s(", fname); return -1; }
  p->pos++;
  if (n_args < functions[fi].min_args) { pfail(p, "%s needs an argument", fname); return -1; }
  return acc;
}

static int parse_primary(parser *p) {
  skip_ws(p);
  char c = p->s[p->pos];
  if (c == '(') {
    p->pos++;
    int n = parse_expr(p);
    if (n < 0) return -1;
    skip_ws(p);
    if (p->s[p->pos] != ')') { pfail(p, "')' expected"); return -1; }
    p->pos++;
    return n;
  }
  if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)p->s[p->pos + 1]))) return parse_number(p);
  if (isalpha((unsigned char)c) || c == '_') {
    char name[128];
    size_t n = 0;
    while (isalnum((unsigned char)p->s[p->pos]) || p->s[p->pos] == '_') {
      if (n + 1 >= sizeof name) { pfail(p, "name too long"); return -1; }
      name[n++] = p->s[p->pos++];
    }
    name[n] = 0;
    if (!strcmp(name, "math")) { /* math.floor etc. */
      if (p->s[p->pos] != '.') { pfail(p, "'math' must be followed by .min, .max, .floor, .ceil, .abs or .sqrt"); return -1; }
      p->pos++;
      n = 0;
      while (isalnum((unsigned char)p->s[p->pos]) || p->s[p->pos] == '_') {
        if (n + 1 >= sizeof name) { pfail(p, "name too long"); return -1; }
        name[n++] = p->s[p->pos++];
      }
      name[n] = 0;
      skip_ws(p);
      if (p->s[p->pos] != '(') { pfail(p, "math.%s: only calls are supported", name); return -1; }
      return parse_call(p, name);
    }
    if (!strcmp(name, "true") || !strcmp(name, "false")) {
      int k = new_node(p, OP_CONST, 0, 0);
      if (k >= 0) p->e->nodes[k].k = tunert_xbool(name[0] == 't');
      return k;
    }
    static const char *reserved[] = {"and", "or", "not", "nil", "function", "end", "if", "then", "else",
                                     "local", "return", "for", "while", "do", "in", "repeat", "until",
                                     "elseif", "break", "goto", NULL};
    for (const char **r = reserved; *r; ++r)
      if (!strcmp(name, *r)) { pfail(p, "unexpected '%s'", name); return -1; }
    size_t save = p->pos;
    skip_ws(p);
    if (p->s[p->pos] == '(') return parse_call(p, name);
    p->pos = save;
    for (int i = 0; i < p->n_names; ++i)
      if (p->names[i] && !strcmp(p->names[i], name)) return new_node(p, OP_VAR, i, -1);
    pfail(p, "unknown name '%s' (not a problem dimension or parameter)", name);
    return -1;
  }
  if (c == 0) pfail(p, "unexpected end of expression");
  else unexpected(p, c, "");
  return -1;
}

/* ^ is right-associative and binds tighter than unary minus on its left. */
static int parse_unary(parser *p);
static int parse_pow(parser *p) {
  int a = parse_primary(p);
  if (a < 0) return -1;
  if (at_op(p, "^")) {
    p->pos++;
    if (++p->depth > MAX_DEPTH) { pfail(p, "nested too deeply"); return -1; }
    int b = parse_unary(p); /* 2^-1 is legal Lua */
    p->depth--;
    if (b < 0) return -1;
    return new_node(p, OP_POW, a, b);
  }
  return a;
}

static int parse_unary(parser *p) {
  if (++p->depth > MAX_DEPTH) { pfail(p, "nested too deeply"); return -1; }
  int r;
  if (at_word(p, "not")) {
    p->pos += 3;
    int a = parse_unary(p);
    r = a < 0 ? -1 : new_node(p, OP_NOT, a, -1);
  } else if (at_op(p, "-")) {
    p->pos++;
    int a = parse_unary(p);
    r = a < 0 ? -1 : new_node(p, OP_NEG, a, -1);
  } else r = parse_pow(p);
  p->depth--;
  return r;
}

static int parse_mul(parser *p) {
  int a = parse_unary(p);
  while (a >= 0) {
    int op;
    if (at_op(p, "//")) { op = OP_IDIV; p->pos += 2; }
    else if (at_op(p, "*")) { op = OP_MUL; p->pos++; }
    else if (at_op(p, "/")) { op = OP_DIV; p->pos++; }
    else if (at_op(p, "%")) { op = OP_MOD; p->pos++; }
    else break;
    int b = parse_unary(p);
    if (b < 0) return -1;
    a = new_node(p, op, a, b);
  }
  return a;
}

static int parse_add(parser *p) {
  int a = parse_mul(p);
  while (a >= 0) {
    int op;
    if (at_op(p, "+")) op = OP_ADD;
    else if (at_op(p, "-")) op = OP_SUB;
    else break;
    p->pos++;
    int b = parse_mul(p);
    if (b < 0) return -1;
    a = new_node(p, op, a, b);
  }
  return a;
}

static int parse_cmp(parser *p) {
  int a = parse_add(p);
  while (a >= 0) {
    int op;
    size_t len = 2;
    if (at_op(p, "==")) op = OP_EQ;
    else if (at_op(p, "~=")) op = OP_NE;
    else if (at_op(p, "<=")) op = OP_LE;
    else if (at_op(p, ">=")) op = OP_GE;
    else if (at_op(p, "<")) { op = OP_LT; len = 1; }
    else if (at_op(p, ">")) { op = OP_GT; len = 1; }
    else break;
    p->pos += len;
    int b = parse_add(p);
    if (b < 0) return -1;
    a = new_node(p, op, a, b);
  }
  return a;
}

static int parse_and(parser *p) {
  int a = parse_cmp(p);
  while (a >= 0 && at_word(p, "and")) {
    p->pos += 3;
    int b = parse_cmp(p);
    if (b < 0) return -1;
    a = new_node(p, OP_AND, a, b);
  }
  return a;
}

static int parse_expr(parser *p) {
  if (++p->depth > MAX_DEPTH) { pfail(p, "nested too deeply"); return -1; }
  int a = parse_and(p);
  while (a >= 0 && at_word(p, "or")) {
    p->pos += 2;
    int b = parse_and(p);
    if (b < 0) { a = -1; break; }
    a = new_node(p, OP_OR, a, b);
  }
  p->depth--;
  return a;
}

static void *al_alloc(const tunert_allocator *al, size_t n) {
  return al && al->alloc ? al->alloc(al->ud, n) : malloc(n);
}
static void al_free(const tunert_allocator *al, void *ptr, size_t n) {
  if (!ptr) return;
  if (al && al->free) al->free(al->ud, ptr, n);
  else free(ptr);
}

int tunert_expr_parse(const char *text, const char *const *names, int n_names,
                      const tunert_allocator *al, tunert_expr **out, char *msg, size_t msg_n) {
  *out = NULL;
  if (!text) { if (msg_n) snprintf(msg, msg_n, "expression: NULL text"); return TUNERT_EEXPR; }
  size_t len = strnlen(text, MAX_TEXT + 1);
  if (len > MAX_TEXT) { if (msg_n) snprintf(msg, msg_n, "expression: longer than %d bytes", MAX_TEXT); return TUNERT_EEXPR; }
  int cap = (int)len + 2;
  size_t bytes = sizeof(tunert_expr) + (size_t)cap * sizeof(xnode) + (size_t)cap * sizeof(int) + len + 1;
  tunert_expr *e = al_alloc(al, bytes);
  if (!e) { if (msg_n) snprintf(msg, msg_n, "expression: out of memory"); return TUNERT_ENOMEM; }
  memset(e, 0, sizeof *e);
  e->bytes = bytes;
  e->nodes = (xnode *)(e + 1);
  e->items = (int *)(e->nodes + cap);
  e->text = (char *)(e->items + cap);
  memcpy(e->text, text, len + 1);
  parser p = {.s = e->text, .names = names, .n_names = n_names, .e = e, .cap = cap, .msg = msg, .msg_n = msg_n};
  const char *dash = strstr(e->text, "--");
  if (dash) { p.pos = (size_t)(dash - e->text); pfail(&p, "'--' starts a comment in Lua: write '- -' or use parentheses"); }
  skip_ws(&p);
  int braces = 0;
  if (p.s[p.pos] == '{') { braces = 1; p.pos++; }
  for (; !p.failed;) {
    skip_ws(&p);
    if (braces && p.s[p.pos] == '}' && e->n_items > 0) break; /* trailing comma */
    int root = parse_expr(&p);
    if (root < 0) break;
    if (e->n_items >= cap) { pfail(&p, "too many items"); break; }
    e->items[e->n_items++] = root;
    skip_ws(&p);
    if (p.s[p.pos] == ',') { p.pos++; continue; }
    break;
  }
  if (!p.failed) {
    skip_ws(&p);
    if (braces) {
      if (p.s[p.pos] != '}') pfail(&p, "'}' expected");
      else p.pos++;
      skip_ws(&p);
    }
    if (!p.failed && p.s[p.pos]) unexpected(&p, p.s[p.pos], " after the expression");
  }
  if (!p.failed && e->n_items == 0) pfail(&p, "empty expression");
  if (p.failed) {
    al_free(al, e, e->bytes);
    return TUNERT_EEXPR;
  }
  *out = e;
  return TUNERT_OK;
}

void tunert_expr_free(tunert_expr *e, const tunert_allocator *al) {
  if (e) al_free(al, e, e->bytes);
}

int tunert_expr_items(const tunert_expr *e) { return e ? e->n_items : 0; }
const char *tunert_expr_text(const tunert_expr *e) { return e ? e->text : ""; }

int tunert_expr_uses(const tunert_expr *e, int slot) {
  for (int i = 0; e && i < e->n_nodes; ++i)
    if (e->nodes[i].op == OP_VAR && e->nodes[i].a == slot) return 1;
  return 0;
}

/* ---- evaluation -------------------------------------------------------------- */

typedef struct evalctx {
  const tunert_expr *e;
  const tunert_xval *env;
  char *msg;
  size_t msg_n;
  int failed;
} evalctx;

static int efail(evalctx *c, const char *fmt, ...) {
  if (c->failed) return -1;
  c->failed = 1;
  if (c->msg && c->msg_n) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(c->msg, c->msg_n, "expression '%.200s': %s", c->e->text, what);
  }
  return -1;
}

static double num(const tunert_xval *v) { return v->t == TUNERT_XFLOAT ? v->f : (double)v->i; }
static int truthy(const tunert_xval *v) { return !(v->t == TUNERT_XBOOL && v->i == 0); }

/* Lua's float -> integer conversion of floor/ceil results: an integer when it fits. */
static tunert_xval float_to_int_if_fits(double d) {
  if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return tunert_xint((int64_t)d);
  return tunert_xfloat(d);
}

static const char *type_name(const tunert_xval *v) { return v->t == TUNERT_XBOOL ? "boolean" : "number"; }

/* a < b (strict=1) or a <= b (strict=0) for numbers */
static int num_less(const tunert_xval *a, const tunert_xval *b, int strict) {
  if (a->t == TUNERT_XINT && b->t == TUNERT_XINT) return strict ? a->i < b->i : a->i <= b->i;
  double x = num(a), y = num(b);
  return strict ? x < y : x <= y;
}

static int num_eq(const tunert_xval *a, const tunert_xval *b) {
  if (a->t == TUNERT_XBOOL || b->t == TUNERT_XBOOL) return a->t == b->t && a->i == b->i;
  if (a->t == TUNERT_XINT && b->t == TUNERT_XINT) return a->i == b->i;
  return num(a) == num(b);
}

static int eval_node(evalctx *c, int ni, tunert_xval *out, int depth) {
  if (depth > MAX_HEIGHT + 8) return efail(c, "nested too deeply");
  const xnode *n = &c->e->nodes[ni];
  tunert_xval a, b;
  switch (n->op) {
  case OP_CONST: *out = n->k; return 0;
  case OP_VAR: *out = c->env[n->a]; return 0;
  case OP_ID: return eval_node(c, n->a, out, depth + 1);
  case OP_AND:
    if (eval_node(c, n->a, &a, depth + 1)) return -1;
    if (!truthy(&a)) { *out = a; return 0; }
    return eval_node(c, n->b, out, depth + 1);
  case OP_OR:
    if (eval_node(c, n->a, &a, depth + 1)) return -1;
    if (truthy(&a)) { *out = a; return 0; }
    return eval_node(c, n->b, out, depth + 1);
  case OP_NOT:
    if (eval_node(c, n->a, &a, depth + 1)) return -1;
    *out = tunert_xbool(!truthy(&a));
    return 0;
  default: break;
  }
  if (eval_node(c, n->a, &a, depth + 1)) return -1;
  int unary = n->op == OP_NEG || n->op == OP_FLOOR || n->op == OP_CEIL || n->op == OP_ABS || n->op == OP_SQRT;
  if (!unary && eval_node(c, n->b, &b, depth + 1)) return -1;
  switch (n->op) {
  case OP_EQ: *out = tunert_xbool(num_eq(&a, &b)); return 0;
  case OP_NE: *out = tunert_xbool(!num_eq(&a, &b)); return 0;
  default: break;
  }
  if (a.t == TUNERT_XBOOL || (!unary && b.t == TUNERT_XBOOL)) {
    if (n->op >= OP_LT && n->op <= OP_GE)
      return efail(c, "attempt to compare %s with %s", type_name(&a), type_name(&b));
    if (n->op == OP_MIN || n->op == OP_MAX) return efail(c, "min/max of a boolean value");
    return efail(c, "attempt to perform arithmetic on a boolean value");
  }
  int ints = a.t == TUNERT_XINT && (unary || b.t == TUNERT_XINT);
  switch (n->op) {
  case OP_NEG:
    *out = a.t == TUNERT_XINT ? tunert_xint((int64_t)(0 - (uint64_t)a.i)) : tunert_xfloat(-a.f);
    return 0;
  case OP_ADD:
    *out = ints ? tunert_xint((int64_t)((uint64_t)a.i + (uint64_t)b.i)) : tunert_xfloat(num(&a) + num(&b));
    return 0;
  case OP_SUB:
    *out = ints ? tunert_xint((int64_t)((uint64_t)a.i - (uint64_t)b.i)) : tunert_xfloat(num(&a) - num(&b));
    return 0;
  case OP_MUL:
    *out = ints ? tunert_xint((int64_t)((uint64_t)a.i * (uint64_t)b.i)) : tunert_xfloat(num(&a) * num(&b));
    return 0;
  case OP_DIV: *out = tunert_xfloat(num(&a) / num(&b)); return 0;
  case OP_POW: *out = tunert_xfloat(pow(num(&a), num(&b))); return 0;
  case OP_IDIV:
    if (ints) {
      if (b.i == 0) return efail(c, "attempt to perform 'n//0'");
      if (b.i == -1) { *out = tunert_xint((int64_t)(0 - (uint64_t)a.i)); return 0; }
      int64_t q = a.i / b.i;
      if ((a.i % b.i != 0) && ((a.i ^ b.i) < 0)) q -= 1;
      *out = tunert_xint(q);
    } else *out = tunert_xfloat(floor(num(&a) / num(&b)));
    return 0;
  case OP_MOD:
    if (ints) {
      if (b.i == 0) return efail(c, "attempt to perform 'n%%%%0'");
      if (b.i == -1) { *out = tunert_xint(0); return 0; }
      int64_t r = a.i % b.i;
      if (r != 0 && ((r ^ b.i) < 0)) r += b.i;
      *out = tunert_xint(r);
    } else {
      double x = num(&a), y = num(&b), m = fmod(x, y);
      if ((m > 0) ? y < 0 : (m < 0 && y > 0)) m += y; /* as Lua 5.4's luai_nummod */
      *out = tunert_xfloat(m);
    }
    return 0;
  case OP_LT: *out = tunert_xbool(num_less(&a, &b, 1)); return 0;
  case OP_LE: *out = tunert_xbool(num_less(&a, &b, 0)); return 0;
  case OP_GT: *out = tunert_xbool(num_less(&b, &a, 1)); return 0;
  case OP_GE: *out = tunert_xbool(num_less(&b, &a, 0)); return 0;
  case OP_MIN: *out = num_less(&b, &a, 1) ? b : a; return 0;   /* math.min keeps the first on ties */
  case OP_MAX: *out = num_less(&a, &b, 1) ? b : a; return 0;
  case OP_FLOOR: *out = a.t == TUNERT_XINT ? a : float_to_int_if_fits(floor(a.f)); return 0;
  case OP_CEIL: *out = a.t == TUNERT_XINT ? a : float_to_int_if_fits(ceil(a.f)); return 0;
  case OP_ABS:
    *out = a.t == TUNERT_XINT ? tunert_xint(a.i < 0 ? (int64_t)(0 - (uint64_t)a.i) : a.i) : tunert_xfloat(fabs(a.f));
    return 0;
  case OP_SQRT: *out = tunert_xfloat(sqrt(num(&a))); return 0;
  default: return efail(c, "bad node %d (corrupt expression)", n->op);
  }
}

int tunert_expr_eval(const tunert_expr *e, int item, const tunert_xval *env, tunert_xval *out,
                     char *msg, size_t msg_n) {
  if (!e || item < 0 || item >= e->n_items) {
    if (msg_n) snprintf(msg, msg_n, "expression: item %d of %d", item, e ? e->n_items : 0);
    return TUNERT_EEXPR;
  }
  evalctx c = {.e = e, .env = env, .msg = msg, .msg_n = msg_n};
  return eval_node(&c, e->items[item], out, 0) ? TUNERT_EEXPR : TUNERT_OK;
}

int tunert_xval_to_i64(const tunert_xval *v, int64_t *out) {
  if (v->t != TUNERT_XFLOAT) { *out = v->i; return 0; }
  double d = v->f;
  if (d != floor(d) || !(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return -1;
  *out = (int64_t)d;
  return 0;
}

double tunert_xval_to_f64(const tunert_xval *v) { return num(v); }

void tunert_xval_format(const tunert_xval *v, char *buf, size_t n) {
  if (v->t == TUNERT_XBOOL) snprintf(buf, n, "%s", v->i ? "true" : "false");
  else if (v->t == TUNERT_XINT) snprintf(buf, n, "%lld", (long long)v->i);
  else {
    /* Lua's %.14g, with ".0" added to integral values */
    snprintf(buf, n, "%.14g", v->f);
    if (isfinite(v->f) && !strpbrk(buf, ".eEn")) {
      size_t l = strlen(buf);
      if (l + 2 < n) { buf[l] = '.'; buf[l + 1] = '0'; buf[l + 2] = 0; }
    }
  }
}
