/* warm_start_test.c: the warm start's problem distance and the order of its
 * configs (tuner/warm_start.c), on a hand-made space. Exit status 0 when every
 * CHECK passed. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "search.h"
#include "warm_start.h"

static int keep_even(void *ctx, int constraint, const int *v, int n_bound, tune_err *err) {
  (void)ctx, (void)constraint, (void)err;
  return n_bound < 1 ? SEARCH_UNDECIDED : v[0] % 2 == 0;
}

int main(void) {
  /* distance: log2 ratios of positive numbers, 1 per other difference */
  CHECK(tune_problem_distance("{\"M\":64,\"N\":8192}", "{\"M\":64,\"N\":8192}") == 0);
  CHECK(fabs(tune_problem_distance("{\"M\":16,\"N\":8192}", "{\"M\":64,\"N\":4096}") - 3) < 1e-12);
  CHECK(tune_problem_distance("{\"M\":1,\"b\":\"row\"}", "{\"M\":1,\"b\":\"col\"}") == 1);
  CHECK(tune_problem_distance("{\"M\":1}", "{\"M\":1,\"causal\":true}") == 1);
  CHECK(tune_problem_distance("{\"M\":1}", "not json") > 1e6);

  /* a space of 8 points, the even ones kept: 0, 2, 4, 6 */
  int nv[1] = {8};
  search_space_def def = {.n_params = 1, .n_values = nv, .n_constraints = 1, .check = keep_even};
  search_space *sp = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK && sp && sp->n_points == 4);
  if (!sp) return 1;
  uint64_t out[8];
  /* nearest problem first; a point outside the space (3, UINT64_MAX) and repeats are skipped */
  uint64_t bests[6] = {2, 3, 6, 4, UINT64_MAX, 6};
  double dist[6] = {5, 0, 1, 2, 0, 0.5};
  int n = tune_warm_order(bests, dist, 6, sp, 8, 0, out);
  CHECK(n == 3 && out[0] == 6 && out[1] == 4 && out[2] == 2);
  /* at most max; ties keep the earlier entry */
  double flat[6] = {1, 1, 1, 1, 1, 1};
  n = tune_warm_order(bests, flat, 6, sp, 2, 0, out);
  CHECK(n == 2 && out[0] == 2 && out[1] == 6);
  CHECK(tune_warm_order(bests, dist, 0, sp, 8, 0, out) == 0);
  /* projection (a new regime): with a candidate in the space, none; with none in it, each
     candidate's nearest point (7 -> 6; 1 -> 0 or 2 at equal distance: the first, 0), nearest
     problem first; UINT64_MAX is no point of the parameters and stays out */
  n = tune_warm_order(bests, dist, 6, sp, 8, 1, out);
  CHECK(n == 3 && out[0] == 6 && out[1] == 4 && out[2] == 2);
  uint64_t outside[3] = {1, 7, UINT64_MAX};
  double od[3] = {2, 1, 0};
  CHECK(tune_warm_order(outside, od, 3, sp, 8, 0, out) == 0);
  n = tune_warm_order(outside, od, 3, sp, 8, 1, out);
  CHECK(n == 2 && out[0] == 6 && out[1] == 0);
  n = tune_warm_order(outside, od, 3, sp, 1, 1, out);
  CHECK(n == 1 && out[0] == 6);
  /* the union of earlier spaces, and whether a space shares a point with it */
  uint64_t *u = NULL;
  size_t nu = 0;
  CHECK(!tune_warm_shares_point(sp, u, nu));
  CHECK(tune_warm_union_add(&u, &nu, sp) == 0 && nu == 4 && u[0] == 0 && u[3] == 6);
  CHECK(tune_warm_union_add(&u, &nu, sp) == 0 && nu == 4); /* each point once */
  CHECK(tune_warm_shares_point(sp, u, nu));
  uint64_t odd[2] = {3, 5};
  CHECK(!tune_warm_shares_point(sp, odd, 2));
  free(u);
  /* problems in order: the first opens no regime (nothing before it), one sharing a point none;
     after problems of the odd points only, the even space opens one */
  u = NULL;
  nu = 0;
  int project = -1;
  CHECK(tune_warm_next_problem(&u, &nu, sp, &project) == 0 && project == 0 && nu == 4);
  CHECK(tune_warm_next_problem(&u, &nu, sp, &project) == 0 && project == 0 && nu == 4);
  free(u);
  u = malloc(2 * sizeof *u);
  if (u) {
    u[0] = 3, u[1] = 5, nu = 2;
    CHECK(tune_warm_next_problem(&u, &nu, sp, &project) == 0 && project == 1 && nu == 6);
    free(u);
  }
  /* how many: a quarter of the budget, 1..TUNE_WARM_MAX */
  CHECK(tune_warm_max(0) == TUNE_WARM_MAX && tune_warm_max(3) == 1 && tune_warm_max(9) == 2 &&
        tune_warm_max(1000) == TUNE_WARM_MAX);
  search_space_free(sp);
  printf("warm_start_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
