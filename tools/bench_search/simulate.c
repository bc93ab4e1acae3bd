/* simulate.c: tune-bench-search's runs: each strategy, for each seed, driven on a recorded space as
 * tune run drives it (batches, the warm start first, successive halving where asked), spread over
 * threads; each run is deterministic for its seed. */
#include <math.h>
#include <string.h>

#include "bench_search.h"
#include "halving.h"
#include "warm_start.h"

double *bench_found_at(const bench_run *br, int s, int seed_i, int kind) {
  return br->found + (((size_t)s * (size_t)br->repeats + (size_t)seed_i) * 2 + (size_t)kind) * N_BUDGETS;
}

static size_t run_index(const bench_run *br, int s, int seed_i) {
  return (size_t)s * (size_t)br->repeats + (size_t)seed_i;
}

/* The warm-start candidates of (s, seed_i) at evaluation budget j: one point per earlier problem. */
static uint64_t *hist_at(const bench_run *br, int s, int seed_i, int j) {
  return br->hist + (run_index(br, s, seed_i) * N_BUDGETS + (size_t)j) * (size_t)br->max_problems;
}

/* One strategy, one seed: the best found within each budget into fe (evaluations)
 * and ft (time), the time spent by each evaluation budget into sp. halving > 0:
 * as tune run --halving drives it (problem_run.c): per batch, every point costs a
 * quick measure; the decision (halving.h) on the batch's quick times (replay:
 * the recorded ones) against the best fully timed so far; a contender then
 * costs its full measure too, and only contenders count as found. Batches end
 * at the evaluation budgets then. */
static int simulate(const bench_space *b, const char *name, double halving, uint64_t seed, const uint64_t *warm,
                    int n_warm, long max_e, double max_t, double *fe, double *ft, double *sp, uint64_t *fe_pt,
                    int *fe_has, double *curve, long *rounds, long cap, int parallel, tune_err *err) {
  search_strategy *s = NULL;
  int rc = search_strategy_new(name, b->space, seed, &s, err);
  if (!rc && b->feat) rc = search_strategy_set_features(s, b->feat, BENCH_N_FEAT, err);
  if (!rc) rc = search_strategy_set_parallel(s, parallel, err);
  if (rc) {
    search_strategy_free(s);
    return rc;
  }
  long evals = 0, round0 = 0; /* rounds of `parallel` concurrent evaluations before this batch */
  double cum = 0, best = INFINITY;
  uint64_t best_pt = 0;
  int warm_next = 0;
  for (int j = 0; j < N_BUDGETS; j++) fe[j] = ft[j] = INFINITY, sp[j] = NAN, fe_has[j] = 0;
  while (evals < max_e || (max_t > 0 && cum <= max_t)) {
    uint64_t pts[BATCH];
    int n = 0;
    int want = BATCH;
    /* halving decides per batch: a batch ends at each evaluation budget, as the last batch of
       `tune run --budget N` does (strategies propose the same points whatever the batch size) */
    for (int j = 0; halving > 0 && j < N_BUDGETS; j++)
      if (b->evals[j] > evals) {
        if (b->evals[j] - evals < want) want = (int)(b->evals[j] - evals);
        break;
      }
    if (warm_next < n_warm) { /* as tune run: the warm-start configs first, a batch of their own */
      n = n_warm - warm_next < want ? n_warm - warm_next : want;
      memcpy(pts, warm + warm_next, (size_t)n * sizeof *pts);
      warm_next += n;
    } else {
      rc = search_strategy_next_batch(s, pts, want, &n, err);
      if (rc || n == 0) break;
    }
    long pos[BATCH];
    double qns[BATCH];
    int full[BATCH];
    for (int i = 0; i < n; i++) {
      pos[i] = search_space_find(b->space, pts[i]);
      if (pos[i] < 0) {
        rc = tune_fail(err, TUNE_EINTERNAL, "bench-search: %s proposed a point outside the space", name);
        goto out;
      }
      qns[i] = b->cost[pos[i]];
    }
    if (halving > 0) tune_halving_batch(qns, n, best, halving, full);
    for (int i = 0; i < n; i++) {
      double c = b->cost[pos[i]];
      search_strategy_observe(s, pts[i], c);
      evals++;
      if (halving > 0) cum += b->quick_s[pos[i]] + (full[i] ? b->meas_s[pos[i]] : 0);
      else cum += b->time_s[pos[i]];
      if (c >= 0 && c < best && (halving <= 0 || full[i])) best = c, best_pt = pts[i];
      if (curve && evals <= cap) curve[evals - 1] = best;
      if (rounds && evals <= cap) rounds[evals - 1] = round0 + i / parallel + 1; /* batch points dealt to the GPUs in turn */
      for (int j = 0; j < N_BUDGETS; j++) {
        if (evals == b->evals[j]) {
          fe[j] = best, sp[j] = cum;
          if (isfinite(best)) fe_pt[j] = best_pt, fe_has[j] = 1;
        }
        if (cum <= b->secs[j]) ft[j] = best;
      }
    }
    round0 += (n + parallel - 1) / parallel;
  }
out:
  for (long e = evals; curve && e < cap; e++) { /* the space ran out first */
    curve[e] = best;
    if (rounds) rounds[e] = round0;
  }
  for (int j = 0; j < N_BUDGETS; j++) {
    if (evals < b->evals[j] && isinf(fe[j])) { /* the space ran out first */
      fe[j] = best, sp[j] = cum;
      if (isfinite(best)) fe_pt[j] = best_pt, fe_has[j] = 1;
    }
    if (isinf(fe[j])) fe[j] = b->worst;
    if (isinf(ft[j])) ft[j] = b->worst;
  }
  search_strategy_free(s);
  return rc;
}

/* One strategy, one seed on this problem: per budget level j, the run starts from the warm-start
 * configs that level's history offers (the bests found at evaluation budget j on the earlier
 * problems, as a session with --budget evals[j] would have them) and goes on to evaluation budget
 * j and time budget j. Levels with the same warm start share one run, long enough for all. */
static int simulate_levels(bench_run *br, int s, int k, tune_err *err) {
  const bench_space *b = br->b;
  uint64_t warm[N_BUDGETS][TUNE_WARM_MAX];
  int n_warm[N_BUDGETS], done[N_BUDGETS] = {0};
  for (int j = 0; j < N_BUDGETS; j++) {
    n_warm[j] = 0;
    if (!br->warm[s]) continue;
    /* --warm-db's candidates first (ties go to the earlier entry), then this run's history */
    uint64_t cand[WARM_DB_MAX + 256];
    double cdist[WARM_DB_MAX + 256];
    int nc = 0;
    for (int e = 0; e < br->n_extra; e++) cand[nc] = br->extra[e], cdist[nc++] = br->extra_dist[e];
    const uint64_t *h = hist_at(br, s, k, j);
    for (int e = 0; e < br->n_hist; e++) cand[nc] = h[e], cdist[nc++] = br->hist_dist[e];
    n_warm[j] = tune_warm_order(cand, cdist, nc, b->space, tune_warm_max(b->evals[j]), br->project, warm[j]);
  }
  double *fe_all = bench_found_at(br, s, k, 0), *ft_all = bench_found_at(br, s, k, 1);
  double *sp_all = br->spent + run_index(br, s, k) * N_BUDGETS;
  uint64_t *pt_all = br->found_pt + run_index(br, s, k) * N_BUDGETS;
  int *has_all = br->has_pt + run_index(br, s, k) * N_BUDGETS;
  for (int j = 0; j < N_BUDGETS; j++) {
    if (done[j]) continue;
    /* the levels that start like level j, and how far their run must go */
    long max_e = 0;
    double max_t = 0;
    int group[N_BUDGETS], ng = 0;
    for (int l = j; l < N_BUDGETS; l++)
      if (!done[l] && n_warm[l] == n_warm[j] && !memcmp(warm[l], warm[j], (size_t)n_warm[j] * sizeof(uint64_t))) {
        group[ng++] = l;
        done[l] = 1;
        if (b->evals[l] > max_e) max_e = b->evals[l];
        if (b->secs[l] > max_t) max_t = b->secs[l];
      }
    double fe[N_BUDGETS], ft[N_BUDGETS], sp[N_BUDGETS];
    uint64_t pt[N_BUDGETS];
    int has[N_BUDGETS];
    /* the largest budget's run goes on to the trajectory's cap (B98) */
    double *curve = group[ng - 1] == N_BUDGETS - 1 ? br->curve + run_index(br, s, k) * (size_t)br->cap : NULL;
    long *rounds = curve ? br->rounds + run_index(br, s, k) * (size_t)br->cap : NULL;
    if (curve && br->cap > max_e) max_e = br->cap;
    if (simulate(b, br->names[s], br->halving[s], (uint64_t)k + 1, warm[j], n_warm[j], max_e, max_t, fe, ft, sp, pt,
                 has, curve, rounds, br->cap, br->parallel, err))
      return err->code;
    for (int g = 0; g < ng; g++) {
      int l = group[g];
      fe_all[l] = fe[l], ft_all[l] = ft[l], sp_all[l] = sp[l], pt_all[l] = pt[l], has_all[l] = has[l];
    }
  }
  return TUNE_OK;
}

long bench_trajectory_cap(size_t n) {
  long cap = bench_bar_c(n) > 20 ? bench_bar_c(n) : 20;
  return cap < (long)n ? cap : (long)n;
}

void bench_hist_append(bench_run *br) {
  if (br->n_hist == br->max_problems) return;
  for (int s = 0; s < br->n_strategies; s++)
    for (int k = 0; k < br->repeats; k++)
      for (int j = 0; j < N_BUDGETS; j++) {
        size_t i = run_index(br, s, k) * N_BUDGETS + (size_t)j;
        /* a run that found nothing offers nothing: an out-of-space point (never in a space) */
        hist_at(br, s, k, j)[br->n_hist] = br->has_pt[i] ? br->found_pt[i] : UINT64_MAX;
      }
  br->n_hist++;
}

static void *run_jobs(void *arg) {
  bench_run *br = arg;
  int total = br->n_strategies * br->repeats;
  for (;;) {
    int job = atomic_fetch_add(&br->next, 1);
    if (job >= total) break;
    int s = job / br->repeats, k = job % br->repeats;
    tune_err e;
    tune_err_clear(&e);
    if (simulate_levels(br, s, k, &e)) {
      pthread_mutex_lock(&br->lock);
      tune_fail(&br->err, e.code, "%s", e.msg);
      pthread_mutex_unlock(&br->lock);
      atomic_store(&br->next, total);
    }
  }
  return NULL;
}

int bench_run_all(bench_run *br, int jobs, tune_err *err) {
  atomic_init(&br->next, 0);
  pthread_mutex_init(&br->lock, NULL);
  tune_err_clear(&br->err);
  pthread_t th[64];
  if (jobs > 64) jobs = 64;
  int started = 0;
  for (int i = 0; i < jobs; i++)
    if (pthread_create(&th[started], NULL, run_jobs, br) == 0) started++;
  if (started == 0) run_jobs(br);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&br->lock);
  if (br->err.code) return tune_fail(err, br->err.code, "%s", br->err.msg);
  return TUNE_OK;
}
