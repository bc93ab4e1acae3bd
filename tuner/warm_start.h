/* warm_start.h: a new problem starts from the configs that were best on the
 * recipe's other problems.
 *
 * Shapes of one kernel family often share their winner (one GEMM tile config
 * is often best on several large shapes). So before its
 * strategy proposes anything, `tune run` evaluates, for the problem at hand,
 * the configs that the database holds as best for other problems of the same
 * recipe on the same GPU, those of the most similar problems first (a decode
 * GEMM learns more from another decode shape than from 8192^3). They are ordinary
 * evaluations (they count against --budget) and the strategy observes them as
 * its own. Another recipe with the same parameters counts too: fp16 GEMM
 * tuned after bf16 GEMM on the same GPU starts from bf16's winner for the
 * same shape (distance 0). `tune-bench-search` simulates the warm start: the
 * problems in the recipe's order, each started from the bests the same
 * strategy and seed found on the earlier ones (and, with --warm-db FILE, from
 * FILE's bests as tune run takes them from its database). --no-warm-start
 * turns it off. A problem that opens a new regime of its recipe (its space
 * shares no config with the earlier problems' spaces: gemm's first M = 1
 * shape) starts from the config of its space nearest to the nearest
 * problem's winner (tune_warm_order's `project`). */
#ifndef TUNE_WARM_START_H
#define TUNE_WARM_START_H

#include <stdint.h>

#include "db.h"
#include "recipe.h"
#include "search.h"

#define TUNE_WARM_MAX 8 /* at most this many warm-start configs per problem */

/* What a best measured on another GPU of the same architecture adds to its
 * problem distance: the same shape measured there comes after the same
 * shape measured here, before any other shape (distances are >= 1 apart
 * between different shapes): GPUs of one architecture tend to share winners
 * per shape more than two shapes on one GPU do (docs/search.md, "Warm start"). */
#define TUNE_WARM_OTHER_GPU 0.5

/* How many warm-start configs a problem gets: a quarter of an evaluation
 * budget (at least 1, at most TUNE_WARM_MAX), TUNE_WARM_MAX without one. */
int tune_warm_max(long long budget);

/* How far apart two problems are, from their dims (JSON objects): the sum
 * over their keys of |log2(a / b)| for two positive numbers, 1 for any other
 * difference (a string such as a layout, a key only one of them has), 0 for
 * equal values. */
double tune_problem_distance(const char *dims_a, const char *dims_b);
/* The same from parsed dims (NULL or not an object: 1e9, as far as can be). */
double tune_problem_distance_json(const json_t *a, const json_t *b);

/* From bests[n] (one point per other problem: its best config) and
 * dist[n] (that problem's tune_problem_distance to this one), the points of
 * `space` nearest problem first (ties: earlier entry first), each once, at
 * most max, into out[]; returns how many. With `project` set (the problem
 * opens a new regime of its recipe: tune_warm_shares_point) and no candidate
 * a point of `space`, each candidate stands for the point of `space` nearest
 * to it instead (value indexes scaled to [0, 1] per parameter): the M = 1
 * GEMM shapes, whose tiles no large shape uses, start from the tile most
 * like the large shapes' winner rather than from nothing (docs/search.md). */
int tune_warm_order(const uint64_t *bests, const double *dist, int n, const search_space *space, int max,
                    int project, uint64_t *out);

/* Whether `space` holds any of pts[n] (ascending): 0 means a problem with
 * this space shares no config with the problems whose spaces pts unites. */
int tune_warm_shares_point(const search_space *space, const uint64_t *pts, size_t n);
/* Add space's points to the ascending union *pts (*n of them; replaced by a
 * new array; free() it); -1 on no memory (then *pts is unchanged). */
int tune_warm_union_add(uint64_t **pts, size_t *n, const search_space *space);
/* One problem in the recipe's order, as tune run and tune-bench-search both
 * walk them: *project = 1 when `space` opens a new regime (the union *before
 * of the earlier problems' spaces is not empty and shares no config with it),
 * then space joins *before (tune_warm_union_add). -1 on no memory. */
int tune_warm_next_problem(uint64_t **before, size_t *n_before, const search_space *space, int *project);

/* The configs db holds as best for recipe r's problems other than p on the
 * GPU named `device` (ok results; a config whose parameters r no longer has
 * is left out), and for any other recipe's problems, p's dims included,
 * whose best config is a config of r (same parameters and values: e.g.
 * gemm.f16 and gemm), then the same from other GPUs of architecture `arch`
 * (NULL: none; their distances TUNE_WARM_OTHER_GPU larger), as points
 * (of `space`, or, for r's own configs that p's space lacks, of r's
 * parameter product: tune_warm_order projects those in a new regime) and
 * their problems' distances to p: new arrays in *out and *dist (free()
 * both), *n of them (0 and NULL when none). */
int tune_warm_bests_db(db_conn *db, const tune_recipe *r, const char *device, const char *arch,
                       const tune_problem *p, const search_space *space, uint64_t **out, double **dist, int *n,
                       tune_err *err);

#endif
