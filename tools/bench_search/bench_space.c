/* bench_space.c: one problem's recorded space for tune-bench-search: each point's recorded cost and
 * time, the budgets, and random search's expected best at each budget (the P score's zero). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_search.h"
#include "halving.h"
#include "rng.h"

const double bench_budget_frac[N_BUDGETS] = {0.01, 0.02, 0.05, 0.10, 0.20, 0.50};

typedef struct rec_row {
  char hash[40];
  db_status status;
  double median_ns, time_s;
  double quick_s, meas_s;      /* [s] halving: compile + a quick measure; the full measure */
} rec_row;

typedef struct rec_rows {
  rec_row *a;
  size_t n, cap;
  tune_err *err;
} rec_rows;

static int collect_row(void *ctx, const db_bench_row *r) {
  rec_rows *rows = ctx;
  if (rows->n == rows->cap) {
    size_t cap = rows->cap ? 2 * rows->cap : 256;
    rec_row *a = realloc(rows->a, cap * sizeof *a);
    if (!a) return tune_fail(rows->err, TUNE_ENOMEM, "bench-search: out of memory");
    rows->a = a;
    rows->cap = cap;
  }
  rec_row *x = &rows->a[rows->n++];
  snprintf(x->hash, sizeof x->hash, "%s", r->config_hash);
  x->status = r->status;
  x->median_ns = r->median_ns;
  double ms = (isfinite(r->build_ms) ? r->build_ms : 0) + (isfinite(r->measure_ms) ? r->measure_ms : 0);
  x->time_s = ms / 1e3;
  double meas = isfinite(r->measure_ms) ? r->measure_ms : 0, build = isfinite(r->build_ms) ? r->build_ms : 0;
  /* a variant that fails verification fails it in the quick pass, at the same cost */
  double quick = r->status == DB_OK ? tune_halving_quick_ms(meas, r->samples, TUNE_HALVING_QUICK_SAMPLES) : meas;
  x->quick_s = (build + quick) / 1e3;
  x->meas_s = meas / 1e3;
  return TUNE_OK;
}

static int by_hash(const void *a, const void *b) {
  return strcmp(((const rec_row *)a)->hash, ((const rec_row *)b)->hash);
}

void bench_space_free(bench_space *b) {
  free(b->cost);
  free(b->time_s);
  free(b->quick_s);
  free(b->meas_s);
  free(b->feat);
  memset(b, 0, sizeof *b);
}

/* Expected best of k uniform draws without replacement from n points whose
 * successes, ascending, are v[0..m-1] (the others failed: they give `worst`
 * when nothing else was drawn). */
static double expected_best(const double *v, size_t m, size_t n, long k, double worst) {
  /* q = P(the best drawn rank >= i+1) = C(n-i, k) / C(n, k) */
  double q = 1, e = 0;
  for (size_t i = 0; i < m; i++) {
    double next = (double)n - (double)i >= (double)k
                      ? q * ((double)n - (double)k - (double)i) / ((double)n - (double)i)
                      : 0;
    if (next < 0) next = 0;
    e += v[i] * (q - next);
    q = next;
  }
  return e + worst * q;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Random search's mean best within each time budget over BASELINE_RUNS
 * seeded orders. */
static int time_baseline(bench_space *b, tune_err *err) {
  size_t n = b->n;
  uint32_t *perm = malloc(n * sizeof *perm);
  if (!perm) return tune_fail(err, TUNE_ENOMEM, "bench-search: out of memory");
  double sum[N_BUDGETS] = {0};
  double t_max = b->secs[N_BUDGETS - 1];
  for (int run = 0; run < BASELINE_RUNS; run++) {
    search_rng rng;
    search_rng_seed(&rng, 0x5eed0000ull + (uint64_t)run);
    for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
    double cum = 0, best = INFINITY, found[N_BUDGETS];
    for (int j = 0; j < N_BUDGETS; j++) found[j] = INFINITY;
    for (size_t i = 0; i < n && cum <= t_max; i++) {
      size_t k = i + (size_t)search_rng_below(&rng, n - i);
      uint32_t t = perm[k];
      perm[k] = perm[i];
      perm[i] = t;
      cum += b->time_s[t];
      if (b->cost[t] >= 0 && b->cost[t] < best) best = b->cost[t];
      for (int j = 0; j < N_BUDGETS; j++)
        if (cum <= b->secs[j]) found[j] = best;
    }
    for (int j = 0; j < N_BUDGETS; j++) sum[j] += isfinite(found[j]) ? found[j] : b->worst;
  }
  for (int j = 0; j < N_BUDGETS; j++) b->base_time[j] = sum[j] / BASELINE_RUNS;
  free(perm);
  return TUNE_OK;
}

/* Each point's recorded answer (rows sorted by hash); the successes, ascending, into ok. */
static void match_points(bench_space *b, tune_recipe *r, const rec_rows *rows, double *ok) {
  const search_space *space = b->space;
  b->opt = INFINITY;
  b->worst = -INFINITY;
  for (size_t i = 0; i < b->n; i++) {
    int vi[SEARCH_MAX_PARAMS];
    search_point_decode(space, space->points[i], vi);
    rec_row key;
    memset(&key, 0, sizeof key);
    tune_recipe_config_hash(r, vi, key.hash);
    const rec_row *x = rows->n ? bsearch(&key, rows->a, rows->n, sizeof *rows->a, by_hash) : NULL;
    b->cost[i] = -1;
    b->time_s[i] = b->quick_s[i] = b->meas_s[i] = 0;
    if (!x) {
      b->n_missing++;
      b->n_status[DB_NOT_RECORDED]++;
      continue;
    }
    b->n_status[x->status]++;
    b->time_s[i] = x->time_s;
    b->quick_s[i] = x->quick_s;
    b->meas_s[i] = x->meas_s;
    b->total_s += x->time_s;
    if (x->status != DB_OK || !(x->median_ns >= 0)) continue;
    b->cost[i] = x->median_ns;
    ok[b->n_ok++] = x->median_ns;
    if (x->median_ns < b->opt) b->opt = x->median_ns;
    if (x->median_ns > b->worst) b->worst = x->median_ns;
  }
  qsort(ok, b->n_ok, sizeof *ok, cmp_double);
  for (size_t i = 0; i < b->n; i++) b->n_near += b->cost[i] >= 0 && b->opt >= NEAR_OPT * b->cost[i];
}

int bench_space_load(bench_space *b, db_conn *db, tune_recipe *r, const tune_problem *p,
                     const search_space *space, tune_err *err) {
  memset(b, 0, sizeof *b);
  rec_rows rows = {.err = err};
  double *ok = NULL;
  int rc = db_bench_rows(db, r->name, p->hash, collect_row, &rows, err);
  if (rc) goto fail;
  qsort(rows.a, rows.n, sizeof *rows.a, by_hash);
  b->space = space;
  b->n = space->n_points;
  size_t n = b->n ? b->n : 1;
  b->cost = malloc(n * sizeof(double));
  b->time_s = malloc(n * sizeof(double));
  b->quick_s = malloc(n * sizeof(double));
  b->meas_s = malloc(n * sizeof(double));
  ok = malloc(n * sizeof(double));
  if (!b->cost || !b->time_s || !b->quick_s || !b->meas_s || !ok) {
    rc = tune_fail(err, TUNE_ENOMEM, "bench-search: out of memory");
    goto fail;
  }
  match_points(b, r, &rows, ok);
  if (b->n_ok == 0) {
    rc = tune_fail(err, TUNE_ENOTFOUND, "no verified result recorded for %s / %s", r->name, p->name);
    goto fail;
  }
  for (int j = 0; j < N_BUDGETS; j++) {
    long k = lround(bench_budget_frac[j] * (double)b->n);
    b->evals[j] = k < 1 ? 1 : k;
    b->secs[j] = bench_budget_frac[j] * b->total_s;
    b->base_eval[j] = expected_best(ok, b->n_ok, b->n, b->evals[j], b->worst);
  }
  rc = time_baseline(b, err);
fail:
  free(ok);
  free(rows.a);
  if (rc) bench_space_free(b);
  return rc;
}
