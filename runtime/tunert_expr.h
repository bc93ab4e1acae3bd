/* tunert_expr.h: the small arithmetic language of bundle expressions.
 *
 * Owns: parsing and evaluating the expression strings a recipe may give for
 * launch geometry, shapes, scalar values, defines and requirements, with no
 * Lua. The language is a subset of Lua 5.4 expressions with Lua's meaning, so
 * that `tune` (which evaluates the same strings in Lua at tune time) and the
 * runtime agree exactly:
 *   numbers     123 (integer, 64-bit, wrapping like Lua), 0x1F, 1.5, 2e3 (float)
 *   names       problem dims and config params, resolved when parsing; true, false
 *   arithmetic  + - * / (always float) // (floor) % (sign of the divisor) ^ (float)
 *   comparison  == ~= < <= > >= (numbers; == and ~= also booleans)
 *   logic       and, or (short-circuit, return an operand, as in Lua), not;
 *               only false is false (0 is true, as in Lua)
 *   functions   min, max, floor, ceil, abs, sqrt (also spelled math.min, ...)
 *   lists       "a, b, c" or "{a, b, c}": several items in one text
 * Integer // 0 and % 0 are errors (as in Lua), never a crash. Parsing is
 * bounded (64 KiB of text, nesting depth 100), so a corrupt bundle cannot
 * overflow the stack.
 * Memory: a parsed tunert_expr is one allocation from the given allocator
 * (NULL: malloc), freed with tunert_expr_free. Evaluation allocates nothing
 * and is thread-safe on a shared tunert_expr. */
#ifndef TUNERT_EXPR_H
#define TUNERT_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "tunert.h"

#define TUNERT_XINT 1
#define TUNERT_XFLOAT 2
#define TUNERT_XBOOL 3

/* A value: integer, float or boolean (b in i as 0/1). */
typedef struct tunert_xval {
  int t;                       /* TUNERT_X* */
  int64_t i;                   /* TUNERT_XINT, TUNERT_XBOOL */
  double f;                    /* TUNERT_XFLOAT */
} tunert_xval;

typedef struct tunert_expr tunert_expr;

/* Parse text; names[0..n_names) are the variables, env slot k holding the
 * value of names[k] at evaluation. On failure returns TUNERT_EEXPR (or
 * TUNERT_ENOMEM) with "expression 'text': position: what" in msg. */
int tunert_expr_parse(const char *text, const char *const *names, int n_names,
                      const tunert_allocator *al, tunert_expr **out, char *msg, size_t msg_n);
void tunert_expr_free(tunert_expr *e, const tunert_allocator *al);

/* Number of items (1 for a single expression). */
int tunert_expr_items(const tunert_expr *e);
/* The text as parsed. */
const char *tunert_expr_text(const tunert_expr *e);
/* 1 when some item reads env slot `slot` (names[slot] at parsing), else 0. */
int tunert_expr_uses(const tunert_expr *e, int slot);

/* Evaluate item `item` over env (n_names values). TUNERT_EEXPR with a message
 * on a runtime error (arithmetic on a boolean, integer division by zero...). */
int tunert_expr_eval(const tunert_expr *e, int item, const tunert_xval *env, tunert_xval *out,
                     char *msg, size_t msg_n);

/* v as an integer: integers as is, booleans as 0/1, floats only when integral
 * and in range (like Lua's conversion). -1 otherwise. */
int tunert_xval_to_i64(const tunert_xval *v, int64_t *out);
/* v as a double (booleans as 0/1). */
double tunert_xval_to_f64(const tunert_xval *v);
/* Print v the way Lua's tostring would ("3", "1.5", "true"). */
void tunert_xval_format(const tunert_xval *v, char *buf, size_t n);

static inline tunert_xval tunert_xint(int64_t i) { tunert_xval v = {TUNERT_XINT, i, 0}; return v; }
static inline tunert_xval tunert_xfloat(double f) { tunert_xval v = {TUNERT_XFLOAT, 0, f}; return v; }
static inline tunert_xval tunert_xbool(int b) { tunert_xval v = {TUNERT_XBOOL, b != 0, 0}; return v; }

#endif
