/* problem_space_test.c: tune_space_cut keeps what its keep function keeps, in order, and stops at
 * the first error. */
#include <string.h>

#include "check.h"
#include "problem_space.h"

/* Keeps configs whose first value index is even; fails at index *ctx (-1: never). */
static int keep_even(const void *ctx, const tune_recipe *r, const int *vi, int *keep, tune_err *err) {
  if (vi[0] == *(const int *)ctx) return tune_fail(err, TUNE_EINVAL, "%s: config %d refused", r->name, vi[0]);
  *keep = vi[0] % 2 == 0;
  return TUNE_OK;
}

int main(void) {
  tune_recipe r;
  memset(&r, 0, sizeof r);
  r.name = "cut";
  int nv[1] = {7};
  search_space_def def = {.n_params = 1, .n_values = nv};
  search_space *space = NULL, *cut = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &space, &err) == TUNE_OK && space->n_points == 7);
  int never = -1, at = 3;
  CHECK(tune_space_cut(&r, space, keep_even, &never, &cut, &err) == TUNE_OK);
  CHECK(cut && cut->n_points == 4 && cut->n_params == 1);
  for (size_t i = 0; cut && i < cut->n_points; ++i) CHECK(cut->points[i] == 2 * i); /* indexes kept */
  search_space_free(cut);
  cut = NULL;
  CHECK(tune_space_cut(&r, space, keep_even, &at, &cut, &err) == TUNE_EINVAL);
  CHECK(cut == NULL && strstr(err.msg, "config 3 refused") != NULL);
  search_space_free(space);
  printf("problem_space_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
