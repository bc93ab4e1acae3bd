/* search_config.h: which strategy a `tune run` uses for a recipe, and its
 * compile-time pruning threshold and successive-halving margin.
 *
 * The command line wins, then the recipe's own fields (strategy = "NAME",
 * min_occupancy = 0.25, halving = 0.1), then the defaults: strategy
 * TUNE_DEFAULT_STRATEGY, no occupancy threshold, no halving. */
#ifndef TUNE_SEARCH_CONFIG_H
#define TUNE_SEARCH_CONFIG_H

#include "tune_err.h"

/* `bayes` is the strategy that most often reaches 98 % of the optimum within
 * 10 % of the evaluations on the recorded spaces (docs/search.md, "Choosing a
 * strategy"; tools/bench/search_report.sh regenerates the figures); exhaustive
 * stays available. */
#define TUNE_DEFAULT_STRATEGY "bayes"

typedef struct tune_search_config {
  char strategy[32];    /* a search_strategy_names entry, or "llm" */
  double min_occupancy; /* prune variants whose theoretical occupancy is below it; 0 = off */
  double halving;       /* full timing only within this fraction of the best; 0 = off */
} tune_search_config;

struct tune_recipe;

/* cli_strategy NULL and cli_* < 0: not given on the command line. Errors
 * (TUNE_ERECIPE) for a recipe field of the wrong type or out of range. */
int tune_search_config_get(const struct tune_recipe *r, const char *cli_strategy, double cli_min_occupancy,
                           double cli_halving, tune_search_config *out, tune_err *err);

#endif
