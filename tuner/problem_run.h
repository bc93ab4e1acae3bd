/* problem_run.h: one problem of a recipe run, as a pipeline of named stages over batches.
 *
 *   propose  the sources (proposal_source.h) give a batch: warm start or strategy or LLM
 *            configs, then code variants
 *   resolve  each variant's config row; a result the database holds is resumed, a binary the
 *            compile cache or a speculative compile (speculate.h) holds is taken
 *   compile  the rest on the background pool, while the first ones are measured
 *   measure  in passes: with halving (halving.h) a quick pass, then the full pass for the
 *            contenders; without, the full pass only
 *   record   one transaction per result, then the sources observe it, the best is updated
 *            and the progress line printed (progress.h)
 *
 * Owns: the per-problem state (tune_problem_run in problem_run.c) and the decisions between
 * the stages (batch size, best, passes). Must not: load recipes, open backends or runs
 * (session.c does), nor print other than through progress.h and the sources.
 * Memory: everything a problem run allocates is freed before tune_run_problem returns. */
#ifndef TUNE_PROBLEM_RUN_H
#define TUNE_PROBLEM_RUN_H

#include <stdint.h>

#include "backend.h"
#include "code_proposal.h"
#include "db.h"
#include "peaks.h"
#include "problem_space.h"
#include "progress.h"
#include "proposal_source.h"
#include "recipe.h"
#include "search_config.h"
#include "session.h"
#include "speculate.h"

#define TUNE_BATCH TUNE_SOURCE_MAX_WANT /* variants per batch */

/* What every problem of one recipe run shares (all borrowed). */
typedef struct tune_recipe_run {
  const tune_run_opts *o;
  tune_recipe *r;
  db_conn *db;
  tune_backend *be;              /* NULL: compile-only */
  const db_device *dev;
  const tune_search_config *sc;  /* strategy and pruning of the recipe */
  double halving;                /* successive-halving margin, 0 = off */
  int64_t run_id, recipe_id, device_id;
  uint64_t seed;
  double deadline;               /* [s] tune_now_s() after which no batch starts; 0 = none */
  const tune_peaks *peaks;
  tune_run_stats *st;            /* summed over the problems */
  tune_code_set *codes;          /* the recipe's code proposals, each evaluated once per problem */
  tune_spec *spec;               /* the recipe's compiles ahead of the strategy */
} tune_recipe_run;

/* Tune problem p (index pi in the recipe) over `space` (its configs; rej: what the recipe
 * rejected). sweep: evaluate only the code variants pending for p (it was tuned before they
 * were proposed), unbounded by the budgets. project: p opens a new regime (warm_start.h).
 * Returns TUNE_OK when the problem ran (failed variants are results). */
int tune_run_problem(const tune_recipe_run *rr, tune_problem *p, int pi, const search_space *space,
                     const tune_rejections *rej, int sweep, int project, tune_err *err);

/* ---- the decisions between the stages (pure: tested without a GPU) ---- */

/* How many variants the next batch asks for: TUNE_BATCH, less what is left of a budget of
 * evaluations (0 = none; a sweep has none); <= 0: the problem is done. */
int tune_batch_want(long long budget, long long evaluated, int sweep);

/* The problem's best so far. */
typedef struct tune_best {
  double ns;          /* [ns] its median; INFINITY: none yet */
  char label[1024];   /* its config (and code origin), as the progress lines print it */
  uint64_t point;     /* the best config of the template: where speculation guesses */
  int have_point;
} tune_best;

void tune_best_init(tune_best *b);
/* Offer a result (new or resumed) of proposal p: it becomes the best when it is ok, faster, and
 * not a quick-only timing (quick_only: halving kept a quick time, which cannot be a best).
 * Returns 1 when it did. */
int tune_best_offer(tune_best *b, const db_result *res, int quick_only, const tune_proposal *p, const char *label);

/* The measure passes of a batch. */
typedef enum { TUNE_PASS_QUICK, TUNE_PASS_FULL } tune_pass;
/* halving > 0: the quick pass first, then the full pass; else the full pass only. */
tune_pass tune_first_pass(double halving);
/* samples a pass asks the backend for: the quick timing's, or 0 (the backend's policy) */
int tune_pass_samples(tune_pass pass);
/* In the full pass a variant timed in the quick pass keeps that result unless chosen. */
int tune_pass_keeps_quick(tune_pass pass, int has_quick, int full);
/* Between the passes: full[i] = 1 for the variants of a batch of n (<= TUNE_BATCH) to time fully: those whose
 * quick result (has_quick[i], quick[i]) is ok and within margin of the best (best_ns and the
 * batch's quick times: tune_halving_batch), and every suspicious quick result (a too-fast quick
 * time: the full timing judges it). */
void tune_pass_select_full(int n, const int *has_quick, const db_result *quick, double best_ns, double margin,
                           int *full);

#endif
