/* bayes_test.c: unit tests of what bayes (search/strategy_bayes.c) adds to
 * the checks every strategy gets in strategy_test.c.
 *
 * Feasibility model: on a space where three quarters of the points fail (one
 * parameter's value 0 is the only one that works, as when a recipe's
 * `applies` rejects a whole value), bayes must learn where failures are and
 * propose few of them once it has seen some: after its first 10
 * evaluations, fewer than a third of its proposals may fail, averaged over
 * seeds (random search: 3/4; bayes built with BAYES_FEAS=0, failures only
 * counted as the cost model's cap: 0.54 on these seeds; with the model: 0.18).
 * The same seed gives the same proposals.
 *
 * Initial design after outside observations: a point observed before bayes
 * proposes anything (tune run's warm start) does not replace the initial
 * design, but the design then leaves out the centre of the space and goes
 * far from what was observed: after a corner is observed, the first
 * proposals of 20 seeds lie farther from it on average than 2.0 (squared,
 * in normalized coordinates: the space's points average 1.17, its centre
 * points 0.33 to 1.33, the opposite corner 3). Exit status 0 when every CHECK passed, 1 otherwise. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "search.h"

/* A 8 x 8 x 4 space (no constraint): parameter 2 must be 0, else the point
 * fails; the cost is smooth in parameters 0 and 1, least at (6, 2). */
static double cost_of(const search_space *sp, uint64_t point) {
  int v[SEARCH_MAX_PARAMS];
  search_point_decode(sp, point, v);
  if (v[2] != 0) return -1;
  double a = v[0] - 6.0, b = v[1] - 2.0;
  return 1000.0 * (1.0 + 0.05 * (a * a + b * b));
}

/* Run bayes for n_evals evaluations, one point per batch; returns how many
 * of the proposals after the first `skip` failed, and writes the proposals
 * to out[] when not NULL. */
static int run(const search_space *sp, uint64_t seed, int n_evals, int skip, uint64_t *out) {
  search_strategy *s = NULL;
  tune_err err;
  tune_err_clear(&err);
  if (search_strategy_new("bayes", sp, seed, &s, &err) != TUNE_OK) {
    fprintf(stderr, "bayes_test: %s\n", err.msg);
    return -1;
  }
  int fails = 0;
  for (int e = 0; e < n_evals; e++) {
    uint64_t pt;
    int n = 0;
    if (search_strategy_next_batch(s, &pt, 1, &n, &err) != TUNE_OK || n != 1) {
      fails = -1;
      break;
    }
    double c = cost_of(sp, pt);
    if (e >= skip && c < 0) fails++;
    if (out) out[e] = pt;
    search_strategy_observe(s, pt, c);
  }
  search_strategy_free(s);
  return fails;
}

static void test_feasibility(void) {
  int nv[3] = {8, 8, 4};
  search_space_def def = {.n_params = 3, .n_values = nv};
  search_space *sp = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK && sp && sp->n_points == 256);
  if (!sp) return;
  const int n_seeds = 20, n_evals = 40, skip = 10;
  int total = 0, bad = 0;
  for (uint64_t seed = 1; seed <= (uint64_t)n_seeds; seed++) {
    int f = run(sp, seed, n_evals, skip, NULL);
    if (f < 0) bad = 1;
    total += f;
  }
  CHECK(!bad);
  double share = (double)total / (n_seeds * (n_evals - skip));
  printf("bayes_test: share of failed proposals after the first %d: %.3f\n", skip, share);
  CHECK(share < 1.0 / 3.0);
  /* deterministic for a seed */
  uint64_t a[40], b[40];
  CHECK(run(sp, 7, 40, 0, a) >= 0 && run(sp, 7, 40, 0, b) >= 0);
  int same = 1;
  for (int i = 0; i < 40; i++) same &= a[i] == b[i];
  CHECK(same);
  search_space_free(sp);
}

static void test_design_after_warm_start(void) {
  int nv[3] = {4, 4, 4}; /* 64 points: an initial design of the centre alone */
  search_space_def def = {.n_params = 3, .n_values = nv};
  search_space *sp = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK && sp);
  if (!sp) return;
  uint64_t cold[1];
  CHECK(run(sp, 3, 1, 0, cold) >= 0); /* the first proposal of a cold run: the centre */
  int v[SEARCH_MAX_PARAMS];
  search_point_decode(sp, cold[0], v);
  CHECK((v[0] == 1 || v[0] == 2) && (v[1] == 1 || v[1] == 2) && (v[2] == 1 || v[2] == 2));
  double sum_d2 = 0;
  for (uint64_t seed = 1; seed <= 20; seed++) {
    search_strategy *s = NULL;
    CHECK(search_strategy_new("bayes", sp, seed, &s, &err) == TUNE_OK);
    if (!s) continue;
    int w[3] = {0, 0, 0}; /* a corner, observed before any proposal */
    search_strategy_observe(s, search_point_encode(sp, w), 1500.0);
    uint64_t pt = 0;
    int n = 0;
    CHECK(search_strategy_next_batch(s, &pt, 1, &n, &err) == TUNE_OK && n == 1);
    search_point_decode(sp, pt, v);
    for (int k = 0; k < 3; k++) sum_d2 += (v[k] / 3.0) * (v[k] / 3.0);
    search_strategy_free(s);
  }
  printf("bayes_test: mean squared distance of the first proposal from the warm-start corner: %.2f\n",
         sum_d2 / 20);
  CHECK(sum_d2 / 20 > 2.0);
  search_space_free(sp);
}

/* Compile-time features (search_strategy_set_features) are model inputs: on a space whose value order
 * says nothing about the cost (one parameter of 64 values whose cost follows a feature, a fixed
 * scramble of the index, as registers or shared memory may follow a tile shape no order captures),
 * bayes with the feature finds the optimum in fewer than half the evaluations it needs without it,
 * averaged over seeds. Features are refused once a point was observed. */
static double feature_of(int i) { return (double)((i * 37 + 11) % 64); }

static int evals_to_optimum(const search_space *sp, uint64_t seed, const double *feat) {
  search_strategy *s = NULL;
  tune_err err;
  tune_err_clear(&err);
  if (search_strategy_new("bayes", sp, seed, &s, &err) != TUNE_OK) return -1;
  if (feat && search_strategy_set_features(s, feat, 1, &err) != TUNE_OK) {
    search_strategy_free(s);
    return -1;
  }
  int e = 0;
  for (; e < 64; e++) {
    uint64_t pt;
    int n = 0;
    if (search_strategy_next_batch(s, &pt, 1, &n, &err) != TUNE_OK || n != 1) break;
    int v[SEARCH_MAX_PARAMS];
    search_point_decode(sp, pt, v);
    double f = feature_of(v[0]);
    search_strategy_observe(s, pt, 1000.0 * (1.0 + 0.01 * (f - 40.0) * (f - 40.0)));
    if (f == 40.0) break;
  }
  search_strategy_free(s);
  return e + 1;
}

static void test_features(void) {
  int nv[1] = {64};
  search_space_def def = {.n_params = 1, .n_values = nv};
  search_space *sp = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK && sp && sp->n_points == 64);
  if (!sp) return;
  double feat[64];
  for (int i = 0; i < 64; i++) feat[i] = feature_of(i);
  double with = 0, without = 0;
  int bad = 0;
  for (uint64_t seed = 1; seed <= 20; seed++) {
    int a = evals_to_optimum(sp, seed, feat), b = evals_to_optimum(sp, seed, NULL);
    bad |= a < 0 || b < 0;
    with += a, without += b;
  }
  CHECK(!bad);
  printf("bayes_test: evaluations to the optimum, mean over 20 seeds: %.1f with the feature, %.1f without\n",
         with / 20, without / 20);
  CHECK(with < 0.5 * without);
  search_strategy *s = NULL;
  CHECK(search_strategy_new("bayes", sp, 1, &s, &err) == TUNE_OK);
  if (s) {
    search_strategy_observe(s, sp->points[0], 1000.0);
    CHECK(search_strategy_set_features(s, feat, 1, &err) == TUNE_EINVAL);
    search_strategy_free(s);
  }
  search_space_free(sp);
}

int main(void) {
  test_feasibility();
  test_design_after_warm_start();
  test_features();
  printf("bayes_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
