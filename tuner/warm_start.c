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

/* The point of `space` nearest to `point` (a point of the same parameters outside the space): least
 * squared distance in value indexes scaled to [0, 1] per parameter, ties to the first; -1 when the
 * space is empty or `point` is not a point of the parameters at all. */
static long nearest_in_space(const search_space *space, uint64_t point) {
  if (point >= space->n_total) return -1;
  int want[SEARCH_MAX_PARAMS], vi[SEARCH_MAX_PARAMS];
  search_point_decode(space, point, want);
  long pick = -1;
  double pick_d = 0;
  for (size_t k = 0; k < space->n_points; k++) {
    search_point_decode(space, space->points[k], vi);
    double d = 0;
    for (int i = 0; i < space->n_params; i++)
      if (space->n_values[i] > 1) {
        double x = (double)(vi[i] - want[i]) / (space->n_values[i] - 1);
        d += x * x;
      }
    if (pick < 0 || d < pick_d) {
      pick = (long)k;
      pick_d = d;
    }
  }
  return pick;
}

/* The candidates that are points of `space`, nearest problem first, each once, at most max. */
static int nearest_first(const uint64_t *bests, const double *dist, int n, const search_space *space, int max,
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

int tune_warm_order(const uint64_t *bests, const double *dist, int n, const search_space *space, int max,
                    int project, uint64_t *out) {
  int m = nearest_first(bests, dist, n, space, max, out);
  if (m > 0 || !project || n <= 0) return m;
  /* a new regime and no candidate in the space: each candidate's nearest config of it instead (no
     memory for that: no warm start, as without the projection) */
  uint64_t *proj = malloc((size_t)n * sizeof *proj);
  if (!proj) return 0;
  for (int i = 0; i < n; i++) {
    long k = nearest_in_space(space, bests[i]);
    proj[i] = k < 0 ? UINT64_MAX : space->points[k]; /* UINT64_MAX: no point of any space */
  }
  m = nearest_first(proj, dist, n, space, max, out);
  free(proj);
  return m;
}

int tune_warm_shares_point(const search_space *space, const uint64_t *pts, size_t n) {
  size_t i = 0, j = 0; /* both ascending: one merge walk */
  while (i < space->n_points && j < n) {
    if (space->points[i] == pts[j]) return 1;
    if (space->points[i] < pts[j]) i++;
    else j++;
  }
  return 0;
}

int tune_warm_union_add(uint64_t **pts, size_t *n, const search_space *space) {
  if (!space->n_points) return 0;
  uint64_t *u = malloc((*n + space->n_points) * sizeof *u);
  if (!u) return -1;
  size_t i = 0, j = 0, k = 0; /* merge two ascending lists, each value once */
  while (i < *n || j < space->n_points) {
    uint64_t v = j >= space->n_points || (i < *n && (*pts)[i] <= space->points[j]) ? (*pts)[i++] : space->points[j++];
    if (k == 0 || u[k - 1] != v) u[k++] = v;
  }
  free(*pts);
  *pts = u;
  *n = k;
  return 0;
}

int tune_warm_next_problem(uint64_t **before, size_t *n_before, const search_space *space, int *project) {
  *project = *n_before > 0 && !tune_warm_shares_point(space, *before, *n_before);
  return tune_warm_union_add(before, n_before, space);
}

/* 1 when every key of the object names a parameter of r. */
static int keys_are_params(const tune_recipe *r, const json_t *obj) {
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)obj, k, v) {
    if (tune_recipe_param_index(r, k) < 0) return 0;
  }
  return 1;
}

/* The point (of the recipe's full parameter product, maybe outside `space`) of a config given by
 * its parameters (a JSON object naming parameters of r with one of their values; a param it leaves
 * out takes its absent value); -1 when it is not a config of r. */
static int params_point(const tune_recipe *r, const search_space *space, const json_t *params, uint64_t *pt) {
  if (!json_is_object(params) || !keys_are_params(r, params)) return -1;
  int vi[SEARCH_MAX_PARAMS];
  if (tune_recipe_config_indexes(r, params, vi)) return -1;
  *pt = search_point_encode(space, vi);
  return 0;
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
    uint64_t pt = 0;
    int found = 0;
    for (size_t k = 0; k < space->n_points && !found; k++) /* its point: the config of the same hash */
      if (!strcmp(hashes[k], ch)) pt = space->points[k], found = 1;
    /* not a config of this problem's space: its point all the same when it is a config of this
       recipe (tune_warm_order projects it in a new regime); db rows give a *_json column parsed,
       under its name without the suffix */
    if (!found && !strcmp(rn, r->name)) found = params_point(r, space, json_object_get(row, "params"), &pt) == 0;
    if (found) {
      dst[m] = tune_problem_distance_json(pdims, json_object_get(row, "problem_dims"));
      if (!same_gpu) dst[m] += TUNE_WARM_OTHER_GPU; /* after the same shape here, before other shapes */
      pts[m++] = pt;
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
