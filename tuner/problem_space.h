/* problem_space.h: the configs of a recipe's space that apply to one problem.
 *
 * A recipe's `applies(c, p)` and `requires` reject configs for a problem
 * before anything is compiled (recipes.md). Such a config is not part of that
 * problem's space, as a restriction is not in Kernel Tuner's: strategies walk
 * only the configs that apply, so none spends an evaluation (`--budget`,
 * tune-bench-search's budgets) on a config known to be meaningless for the problem.
 * Configs pruned after compiling (prune.h) are different: they cost a compile
 * and stay in the space. */
#ifndef TUNE_PROBLEM_SPACE_H
#define TUNE_PROBLEM_SPACE_H

#include "db.h"
#include "recipe.h"
#include "search.h"

/* The recipe functions' view of a recorded or live device. */
void tune_device_facts_from(const db_device *d, tune_device_facts *f);

#define TUNE_REJECT_REASONS 8

/* Why configs were rejected: the most frequent reasons first. */
typedef struct tune_rejections {
  size_t n;                                    /* configs rejected */
  int n_reasons;                               /* distinct reasons kept (at most TUNE_REJECT_REASONS) */
  char reason[TUNE_REJECT_REASONS][256];
  size_t count[TUNE_REJECT_REASONS];
  size_t n_other;                              /* rejected for a reason not kept */
} tune_rejections;

/* Above this many configs a problem's space is not filtered ahead (evaluating every config for
 * every problem would take minutes before the first measurement): it is the recipe's space, and a
 * config the problem rejects is recorded as skipped, with its reason, when a strategy proposes it. */
#define TUNE_PROBLEM_FILTER_MAX ((size_t)1 << 20)

/* Whether the config vi of r stays in a space being cut (*keep 1) or not (0); ctx is the cutter's.
 * A status other than TUNE_OK (err filled) stops the cut. */
typedef int (*tune_config_keep_fn)(const void *ctx, const tune_recipe *r, const int *vi, int *keep, tune_err *err);

/* The points of `space` that keep_config keeps, as a new space (search_space_free; points keep
 * their indexes). *out stays NULL on failure. */
int tune_space_cut(const tune_recipe *r, const search_space *space, tune_config_keep_fn keep_config, const void *ctx,
                   search_space **out, tune_err *err);

/* The points of `space` (the recipe's constrained space) that problem p
 * accepts, as a new space (search_space_free); *out = NULL above TUNE_PROBLEM_FILTER_MAX: the
 * problem's space is `space` itself. rej (may be NULL): how many were rejected and why. */
int tune_problem_space(tune_recipe *r, const tune_problem *p, const tune_device_facts *f, const search_space *space,
                       search_space **out, tune_rejections *rej, tune_err *err);

#endif
