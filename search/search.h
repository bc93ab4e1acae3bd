/* search.h: the space of configurations and the strategies that walk it.
 *
 * Owns: enumerating the constrained product of parameter values (pruning each
 * constraint as soon as the parameters it reads are bound) and the strategies
 * behind one interface (init, next batch, observe). Plain C: it must not touch
 * CUDA, Lua or SQLite. Parameter values are opaque here: a parameter is a
 * count of values, and a configuration is one value index per parameter.
 *
 * A point is a configuration's mixed-radix index in the full product space
 * (parameter 0 is the most significant digit), so it is stable for a given
 * parameter list and 8 bytes whatever the number of parameters.
 *
 * Memory: search_space and search_strategy are owned by the caller of the
 * *_new / *_enumerate function and freed with the matching *_free. */
#ifndef SEARCH_H
#define SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "../tuner/tune_err.h"

#define SEARCH_MAX_PARAMS 64

/* Answers of a constraint check. */
enum {
  SEARCH_FAIL = 0,      /* the (partial) configuration violates the constraint */
  SEARCH_PASS = 1,      /* it satisfies it */
  SEARCH_UNDECIDED = 2, /* it reads a parameter that is not bound yet */
  SEARCH_ERROR = -1     /* the check itself failed; enumeration stops */
};

/* Check constraint `constraint` on a configuration whose first `n_bound`
 * parameters are bound: value_idx[0..n_bound-1] are valid. Must not keep the
 * pointer. On SEARCH_ERROR the callback has filled err. */
typedef int (*search_check_fn)(void *ctx, int constraint, const int *value_idx, int n_bound,
                               tune_err *err);

typedef struct search_space_def {
  int n_params;                /* number of parameters, 1..SEARCH_MAX_PARAMS */
  const int *n_values;         /* [n_params] number of values of each, >= 1 */
  int n_constraints;           /* number of constraints, >= 0 */
  const int *constraint_level; /* [n_constraints] index of the last parameter the
                                  constraint reads (checked once that one is bound),
                                  or -1: unknown, checked at every depth until it
                                  answers PASS or FAIL. NULL means all -1. */
  search_check_fn check;       /* may be NULL when n_constraints == 0 */
  void *ctx;                   /* passed to check */
} search_space_def;

typedef struct search_space {
  int n_params;
  int n_values[SEARCH_MAX_PARAMS];
  uint64_t n_total;   /* size of the unconstrained product */
  size_t n_points;    /* points that satisfy every constraint */
  uint64_t *points;   /* [n_points] ascending mixed-radix indexes */
  uint64_t n_checks;  /* constraint evaluations made (to show pruning works) */
} search_space;

/* Enumerate every configuration that satisfies all constraints, by
 * depth-first backtracking over the parameters in order. On failure *out is
 * NULL and err says why. */
int search_space_enumerate(const search_space_def *def, search_space **out, tune_err *err);
void search_space_free(search_space *space);
/* The points of `space` whose keep[position] is non-zero, as a new space with
 * the same parameters (points keep their indexes). */
int search_space_subset(const search_space *space, const unsigned char *keep, search_space **out, tune_err *err);

/* Decode a point into value indexes: value_idx[n_params]. */
void search_point_decode(const search_space *space, uint64_t point, int *value_idx);
uint64_t search_point_encode(const search_space *space, const int *value_idx);
/* Position of point in space->points, or -1 when it is not in the space. */
long search_space_find(const search_space *space, uint64_t point);
/* The points of the space one value index up or down in one parameter from `point`, parameter by
 * parameter (down first), at most max of them into out; returns how many. */
int search_point_neighbours(const search_space *space, uint64_t point, uint64_t *out, int max);

/* ---- strategies ---------------------------------------------------------- */

typedef struct search_strategy search_strategy;

/* Names of the strategies known to search_strategy_new, NULL-terminated. */
extern const char *const search_strategy_names[];

/* Create a strategy over `space` (borrowed: it must outlive the strategy),
 * deterministic for `seed`. Unknown name: TUNE_EINVAL. */
int search_strategy_new(const char *name, const search_space *space, uint64_t seed,
                        search_strategy **out, tune_err *err);

/* Compile-time facts of every point, known before any is measured (a compile costs a fraction of
 * verifying and timing a variant): feat[i * n_feat + k] is fact k (registers, shared memory, ...)
 * of space->points[i], NAN where unknown. A strategy that models costs (bayes) takes them as model
 * inputs beside the value indexes; the others ignore them. Only before the first proposal or
 * observation (TUNE_EINVAL after); the values are copied. */
int search_strategy_set_features(search_strategy *s, const double *feat, int n_feat, tune_err *err);

/* Points the caller measures at once, 1..SEARCH_MAX_PARALLEL (default 1): with k > 1 (one worker per
 * GPU) bayes's steps after its initial design propose up to k distinct points per batch, and its
 * design has at least k points; the other strategies ignore it (exhaustive, random and genetic
 * already fill the batch asked for; anneal walks one step at a time; bandit's arms keep 1). With
 * k == 1 the proposals are those of a strategy that was never told. Only before the first proposal
 * (observations before it, such as a warm start, are fine); TUNE_EINVAL after or out of range. */
#define SEARCH_MAX_PARALLEL 64
int search_strategy_set_parallel(search_strategy *s, int k, tune_err *err);

/* Propose up to `max` points neither proposed nor observed before into out[];
 * *n_out is set to the number written, 0 when the strategy has nothing more to
 * propose. */
int search_strategy_next_batch(search_strategy *s, uint64_t *out, int max, int *n_out,
                               tune_err *err);

/* Up to `max` points the strategy is likely to propose next, given what it has observed so far,
 * into out[], the likeliest first; *n_out of them, 0 when it has no guess. Each is a point of the
 * space neither proposed nor observed before, once. A guess for work done ahead of the proposals
 * (tuner/speculate.h compiles them), never a promise: what is observed in between changes them.
 * Changes nothing: the strategy's state and random stream are untouched, so its proposals are the
 * same with or without peeks. What each guesses: exhaustive and random, exactly their next points;
 * bayes, its next step as next_batch would take it (the points still queued, the initial design, or
 * the candidates of its next model step ranked by its acquisition, with the points proposed and not
 * yet observed taken at the model's mean); the others, the unit-step neighbours (one parameter one
 * value up or down) of the best point so far. */
int search_strategy_peek(const search_strategy *s, uint64_t *out, int max, int *n_out, tune_err *err);

/* Tell the strategy the cost of a point it proposed: time in ns, or a
 * negative value when the point failed (wrong, crashed, not compiled...). */
void search_strategy_observe(search_strategy *s, uint64_t point, double cost_ns);

/* The cheapest point observed so far (cost >= 0): returns 1 and fills the
 * non-NULL outputs, or 0 (outputs untouched) when none was observed yet. */
int search_strategy_best(const search_strategy *s, uint64_t *point, double *cost_ns);

const char *search_strategy_name(const search_strategy *s);
void search_strategy_free(search_strategy *s);

#endif
