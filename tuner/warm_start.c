/* warm_start.c: see warm_start.h. */
#include "warm_start.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int tune_warm_max(long long budget) {
  if (budget <= 0) return TUNE_WARM_MAX;
  long long k = budget / 4;
  return k < 1 ? 1 : k > TUNE_WARM_MAX ? TUNE_WARM_MAX : (int)k;
}

double tune_problem_distance_json(const json_t *a, const json_t *b) {
  if (!json_is_object(a) || !json_is_object(b)) return 1e9; /* unreadable dims: as far as can be */
  double d = 0;
  const char *k;
  json_t *va, *vb;
  json_object_foreach((json_t *)a, k, va) {
    vb = json_object_get(b, k);
    if (json_is_number(va) && json_is_number(vb) && json_number_value(va) > 0 && json_number_value(vb) > 0)
      d += fabs(log2(json_number_value(va) / json_number_value(vb)));
    else if (!vb || !json_equal(va, vb)) d += 1;
  }
  json_object_foreach((json_t *)b, k, vb) if (!json_object_get(a, k)) d += 1;
  return d;
}

double tune_problem_distance(const char *dims_a, const char *dims_b) {
  json_error_t je;
  json_t *a = json_loads(dims_a, 0, &je), *b = json_loads(dims_b, 0, &je);
  double d = tune_problem_distance_json(a, b);
  json_decref(a);
  json_decref(b);
  return d;
}

int tune_warm_order(const uint64_t *bests, const double *dist, int n, const search_space *space, int max,
                    uint64_t *out) {
  int m = 0;
  while (m < max) { /* n is small (the recipe's problems): pick the nearest remaining each round */
    int pick = -1;
    for (int i = 0; i < n; i++) {
      if (search_space_find(space, bests[i]) < 0) continue;
      int taken = 0;
      for (int k = 0; k < m && !taken; k++) taken = out[k] == bests[i];
      if (!taken && (pick < 0 || dist[i] < dist[pick])) pick = i;
    }
    if (pick < 0) break;
    out[m++] = bests[pick];
  }
  return m;
}

int tune_warm_bests_db(db_conn *db, const tune_recipe *r, const char *device, const char *arch,
                       const tune_problem *p, const search_space *space, uint64_t **out, double **dist, int *n,
                       tune_err *err) {
  *out = NULL;
  *dist = NULL;
  *n = 0;
  json_t *rows = NULL;
  /* every recipe's bests: a config of another recipe with the same parameters has the same hash
     and is a point of this space (gemm.f16 after gemm: the same kernels with fp16 inputs) */
  if (db_query_best(db, NULL, NULL, &rows, err)) return err->code;
  size_t nr = json_array_size(rows);
  uint64_t *pts = nr ? malloc(nr * sizeof *pts) : NULL;
  double *dst = nr ? malloc(nr * sizeof *dst) : NULL;
  if (nr && (!pts || !dst)) {
    free(pts);
    free(dst);
    json_decref(rows);
    return tune_fail(err, TUNE_ENOMEM, "warm start: out of memory");
  }
  /* each point's config hash, once (the rows name configs by hash) */
  char(*hashes)[17] = nr && space->n_points ? malloc(space->n_points * sizeof *hashes) : NULL;
  if (nr && space->n_points && !hashes) {
    free(pts);
    free(dst);
    json_decref(rows);
    return tune_fail(err, TUNE_ENOMEM, "warm start: out of memory");
  }
  for (size_t k = 0; hashes && k < space->n_points; k++) {
    int vi[SEARCH_MAX_PARAMS];
    search_point_decode(space, space->points[k], vi);
    tune_recipe_config_hash(r, vi, hashes[k]);
  }
  json_error_t je;
  json_t *pdims = json_loads(p->dims_json, 0, &je); /* this problem's dims, parsed once */
  int m = 0;
  for (size_t i = 0; hashes && i < nr; i++) {
    json_t *row = json_array_get(rows, i);
    const char *dev = json_string_value(json_object_get(row, "device"));
    const char *ph = json_string_value(json_object_get(row, "problem_hash"));
    const char *ch = json_string_value(json_object_get(row, "config_hash"));
    const char *rn = json_string_value(json_object_get(row, "recipe"));
    const char *ra = json_string_value(json_object_get(row, "arch"));
    if (!dev || !ph || !ch || !rn) continue;
    int same_gpu = !strcmp(dev, device);
    if (!same_gpu && (!arch || !ra || strcmp(ra, arch))) continue; /* another GPU: of the same arch only */
    if (same_gpu && !strcmp(ph, p->hash) && !strcmp(rn, r->name)) continue; /* this very problem */
    json_t *quick = json_object_get(row, "quick_only");
    if (json_is_true(quick) || json_integer_value(quick) != 0) continue; /* not a full timing (halving.h) */
    for (size_t k = 0; k < space->n_points; k++) /* its point: the config of the same hash */
      if (!strcmp(hashes[k], ch)) {
        /* db rows give a *_json column parsed, under its name without the suffix */
        dst[m] = tune_problem_distance_json(pdims, json_object_get(row, "problem_dims"));
        if (!same_gpu) dst[m] += TUNE_WARM_OTHER_GPU; /* after the same shape here, before other shapes */
        pts[m++] = space->points[k];
        break;
      }
  }
  free(hashes);
  json_decref(pdims);
  json_decref(rows);
  if (m == 0) {
    free(pts);
    free(dst);
    return TUNE_OK;
  }
  *out = pts;
  *dist = dst;
  *n = m;
  return TUNE_OK;
}
