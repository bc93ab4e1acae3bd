/* search_int.h: internals shared by the .c files of search/, not for users.
 *
 * A strategy is a vtable (search_strategy_vt) plus private state. The generic
 * part (strategy.c) checks arguments, counts proposals and keeps the best
 * observed point, then calls the vtable. To add a strategy: write its vtable
 * in its own file (e.g. strategy_anneal.c), declare it below, and add it to
 * the registry and to search_strategy_names in strategy.c. */
#ifndef SEARCH_INT_H
#define SEARCH_INT_H

#include "search.h"

typedef struct search_strategy_vt {
  const char *name; /* as given to search_strategy_new */
  /* Set up s->state from s->space and s->seed. On failure fill err and leave
   * nothing to free (s->state NULL, or freed by the vt's own free). */
  int (*init)(search_strategy *s, tune_err *err);
  /* Write 1..max points never proposed before into out[] and set *n_out, or
   * set *n_out = 0 when done. max >= 1 (checked by the caller). The caller
   * adds *n_out to s->n_proposed after this returns. */
  int (*next_batch)(search_strategy *s, uint64_t *out, int max, int *n_out, tune_err *err);
  /* Learn from one measured point (cost in ns, < 0: failed). May be NULL. */
  void (*observe)(search_strategy *s, uint64_t point, double cost_ns);
  /* Up to max (>= 1) guesses of the next proposals into out[], *n_out of them, without changing
   * s (search_strategy_peek; the caller drops the points already seen). May be NULL: the caller
   * guesses the unit-step neighbours of the best point. */
  int (*peek)(const search_strategy *s, uint64_t *out, int max, int *n_out, tune_err *err);
  /* Take compile-time features (search_strategy_set_features; called before any proposal or
   * observation). May be NULL: the strategy ignores them. */
  int (*features)(search_strategy *s, const double *feat, int n_feat, tune_err *err);
  /* Free s->state (may be NULL when init failed). May be NULL if there is none. */
  void (*free)(search_strategy *s);
} search_strategy_vt;

struct search_strategy {
  const search_strategy_vt *vt; /* what kind of strategy this is */
  const search_space *space;    /* borrowed: outlives the strategy */
  uint64_t seed;                /* as given to search_strategy_new */
  uint64_t n_proposed;          /* points the vt proposed so far (kept by strategy.c; exhaustive and
                                   random use it as their cursor) */
  unsigned char *seen;          /* [n_points / 8 + 1] bit per space index: proposed or observed;
                                   strategy.c drops what the vt proposes again after an outside
                                   observation (a warm start) */
  int parallel;                 /* points measured at once (search_strategy_set_parallel), >= 1 */
  uint64_t n_observed;          /* observe calls so far */
  uint64_t n_failed;            /* of which reported a failure (cost < 0) */
  int has_best;                 /* 1 once a point with cost >= 0 was observed */
  uint64_t best_point;          /* cheapest observed point, valid if has_best */
  double best_cost_ns;          /* [ns] its cost, valid if has_best */
  void *state;                  /* owned by the vt: freed by vt->free */
};

/* The strategies, one per file in time; registered in strategy.c. */
extern const search_strategy_vt search_exhaustive_vt;
extern const search_strategy_vt search_random_vt;
extern const search_strategy_vt search_anneal_vt;  /* strategy_anneal.c */
extern const search_strategy_vt search_genetic_vt; /* strategy_genetic.c */
extern const search_strategy_vt search_bayes_vt;   /* strategy_bayes.c */
extern const search_strategy_vt search_bandit_vt;  /* strategy_bandit.c */

#endif
