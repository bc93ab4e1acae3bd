/* recipe_expr.h: a recipe's launch geometry, argument shapes and values,
 * compile-time defines and requirements as the texts a bundle stores.
 *
 * Owns: reading the raw recipe fields (read-only, no calls into recipe code).
 * A field given as a number or an expression string (the bundle expression
 * language, runtime/tunert_expr.h) becomes an expression text valid for every
 * problem; a field given as a Lua function is "frozen": its value for this
 * problem (taken from the evaluated tune_variant / tune_problem_setup) is
 * stored, valid for this tuned problem only. A frozen tensor shape is stored
 * as its element count (rank 1). */
#ifndef TUNE_RECIPE_EXPR_H
#define TUNE_RECIPE_EXPR_H

#include "recipe.h"

typedef struct tune_field_text {
  char text[1024];          /* expression list text */
  int frozen;               /* 1: computed by a Lua function for this problem */
  char where[320];          /* the function's file:line when frozen */
} tune_field_text;

typedef struct tune_variant_exprs {
  int n_launches;
  tune_field_text grid[TUNE_MAX_LAUNCHES], block[TUNE_MAX_LAUNCHES], shared[TUNE_MAX_LAUNCHES];
  tune_field_text cluster[TUNE_MAX_LAUNCHES]; /* "1, 1, 1" when the recipe has none */
  tune_field_text shape[TUNE_MAX_ARGS];   /* tensors */
  tune_field_text value[TUNE_MAX_ARGS];   /* scalars */
  char requires[2048];      /* expression list, "" none */
  char define_names[1024];  /* "HEAD_DIM IS_CAUSAL": defines given as expressions */
  char define_exprs[1024];  /* their expressions, "D, causal" */
  int defines_fn;           /* 1: defines is a Lua function (compile-time dims unknown) */
  int applies_fn;           /* 1: applies is a Lua function */
  int kernel_fn;            /* 1: a kernel name comes from a Lua function */
  char fn_where[320];       /* where the first of these functions is */
} tune_variant_exprs;

/* A tensormap arg's dims, strides and box (docs/tensormap-args.md) as expression lists, innermost
 * first. Defaults as the tuner's (recipe.c eval_tmap): dims the tensor's shape reversed, strides
 * packed (elsize * dims[1], ...). A function (or a form kept as a whole, like a "{...}" string
 * shape that would need reversing) freezes the field: its text is then the values of v->tmap[i]. */
typedef struct tune_tmap_texts {
  tune_field_text dims, strides, box;   /* strides "" for rank 1 */
} tune_tmap_texts;

/* The recipe's domain (docs/runtime.md) as an expression list over dims, "" when it has none. */
void tune_recipe_domain_text(tune_recipe *r, char *buf, size_t n);

int tune_recipe_tmap_exprs(tune_recipe *r, int i, const tune_variant *v, tune_tmap_texts *out, tune_err *err);

/* Fill out for config vi on problem p; v and s are the tuner's evaluation of
 * the same (tune_recipe_eval_variant / _problem), the source of frozen values. */
int tune_recipe_exprs(tune_recipe *r, const tune_variant *v, const tune_problem_setup *s,
                      tune_variant_exprs *out, tune_err *err);

#endif
