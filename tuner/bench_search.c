/* bench_search.c: `tune bench-search` (strategies replayed on a recorded
 * space and scored) and `tune db export`.
 *
 * Per recipe of the file and per problem:
 *  1. the space is enumerated as `tune run` does (only the configs that apply
 *     to the problem: problem_space.h), and every point gets its
 *     recorded answer (db_bench_rows, matched by config hash): a cost (median
 *     kernel time) when ok, a failure otherwise (wrong, crashed, skipped,
 *     not recorded...), and a time: the compile time of its binary plus the
 *     recorded verify-and-time time (db_bench_row.build_ms + measure_ms);
 *  2. budgets: 1, 2, 5, 10, 20, 50 % of the space in evaluations (rounded,
 *     at least 1) and of the whole space's recorded time;
 *  3. baseline: the expected best of random search (uniform draws without
 *     replacement) at each budget: exactly for evaluation budgets (order
 *     statistics), as the mean of BASELINE_RUNS seeded random orders for
 *     time budgets; an evaluation counts when it completes within the time;
 *  4. each strategy runs for seeds 1..N, driven like `tune run` drives it
 *     (next_batch of up to BATCH points, then one observe per point, cost < 0
 *     for a failure), until the largest budgets are spent; problems in the
 *     recipe's order, each run first evaluating its warm start (warm_start.h:
 *     the bests the same strategy and seed found at that budget on the earlier
 *     problems), one run per distinct warm start (simulate_levels);
 *  5. P = (baseline - found) / (baseline - optimum), where found is the best
 *     time found within the budget, or the worst time of the space when none
 *     was; 0 is random search, 1 the optimum, < 0 worse than random.
 * Summaries are the median and the quartiles (linear interpolation) over the
 * seeds. Runs are spread over threads; each is deterministic for its seed. */
#include "bench_search.h"
#include "session.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "halving.h"
#include "warm_start.h"
#include "problem_space.h"
#include "recipe.h"
#include "search.h"
#include "search_config.h"
#include "rng.h"

#define N_BUDGETS 6
#define BATCH 32              /* as tune run (session.c) asks */
#define BASELINE_RUNS 20000   /* random orders averaged for the time baseline */
#define GOAL_BUDGET 3         /* index of the 10 % budget */
#define MAX_STRATEGIES 16

static const double budget_frac[N_BUDGETS] = {0.01, 0.02, 0.05, 0.10, 0.20, 0.50};

static const char *usage_bench =
    "usage: tune bench-search RECIPE [options]\n"
    "\n"
    "Replays a recorded exhaustive database: runs each search strategy on the recipe's\n"
    "space with the recorded times as costs, for seeds 1..N, and prints per problem the\n"
    "P score (Willemsen et al., FGCS 2024) at budgets of 1-50 % of the space, in\n"
    "evaluations and in recorded compile+measure time: P = (random - found) /\n"
    "(random - optimum), with random search's expected best as the baseline (0) and the\n"
    "optimum as 1. Cells: median [first quartile, third quartile] over the seeds.\n"
    "A problem's space is the configs its recipe does not reject (applies/requires).\n"
    "Problems run in the recipe's order and, as in tune run, each strategy starts a\n"
    "problem from the bests it found on the earlier ones at the same budget (the warm\n"
    "start: a quarter of the budget, at most 8 configs, the nearest problems' first).\n"
    "\n"
    "options:\n"
    "  --device replay:FILE   the recorded database (default data/recorded/<recipe>.db)\n"
    "  --repeats N            seeds 1..N per strategy (default 100)\n"
    "  --strategies A,B,...   strategies to run (default random,anneal,genetic,bayes,bandit,\n"
    "                         bayes:cold); NAME:cold runs NAME without the warm start\n"
    "  --no-warm-start        no strategy starts warm\n"
    "  --warm-db FILE         also warm-start from the bests FILE holds, as tune run does\n"
    "                         from its --db: this GPU's, another recipe's with the same\n"
    "                         parameters (bf16 GEMM results for gemm.f16), and other GPUs'\n"
    "                         of the same architecture (docs/search.md)\n"
    "  --problem P            only problems named P (repeatable; the warm start then\n"
    "                         learns from the selected earlier problems only)\n"
    "  --jobs N               threads (default: number of cores)\n"
    "  --json                 print JSON (every number of the tables, and the baselines)\n"
    "  --halving[=F]          also run the default strategy (" TUNE_DEFAULT_STRATEGY ") with successive\n"
    "                         halving (margin F, default 0.1), as tune run --halving drives it:\n"
    "                         a quick measure costs the recorded measure time x 3 / its samples,\n"
    "                         a contender's full timing the recorded measure time again; the\n"
    "                         quick answer is the recorded time (replay cannot re-time). Adds\n"
    "                         the row " TUNE_DEFAULT_STRATEGY "+halving and the time spent per evaluation budget\n";

/* ---- one problem's recorded space --------------------------------------- */

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

typedef struct bench_space {
  const search_space *space;   /* borrowed */
  size_t n;                    /* points */
  double *cost;                /* [n] [ns] recorded median, -1 failed */
  double *time_s;              /* [n] [s] compile + measure */
  double *quick_s, *meas_s;    /* [n] [s] halving: compile + quick measure (a failure: its whole
                                  recorded measure); a contender's full measure on top */
  size_t n_ok, n_missing;      /* successes; points with no recorded row */
  int n_status[DB_STATUS_COUNT];
  double opt, worst;           /* [ns] best and worst success */
  double total_s;              /* [s] the whole space */
  long evals[N_BUDGETS];       /* evaluation budgets */
  double secs[N_BUDGETS];      /* [s] time budgets */
  double base_eval[N_BUDGETS]; /* [ns] random search's expected best */
  double base_time[N_BUDGETS];
} bench_space;

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

static void bench_space_free(bench_space *b) {
  free(b->cost);
  free(b->time_s);
  free(b->quick_s);
  free(b->meas_s);
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

/* Build b for problem p of recipe r over space from the recorded db. */
static int bench_space_load(bench_space *b, db_conn *db, tune_recipe *r, const tune_problem *p,
                            const search_space *space, tune_err *err) {
  memset(b, 0, sizeof *b);
  rec_rows rows = {.err = err};
  double *ok = NULL;
  int rc = db_bench_rows(db, r->name, p->hash, collect_row, &rows, err);
  if (rc) goto fail;
  qsort(rows.a, rows.n, sizeof *rows.a, by_hash);
  b->space = space;
  b->n = space->n_points;
  b->cost = malloc((b->n ? b->n : 1) * sizeof(double));
  b->time_s = malloc((b->n ? b->n : 1) * sizeof(double));
  b->quick_s = malloc((b->n ? b->n : 1) * sizeof(double));
  b->meas_s = malloc((b->n ? b->n : 1) * sizeof(double));
  ok = malloc((b->n ? b->n : 1) * sizeof(double));
  if (!b->cost || !b->time_s || !b->quick_s || !b->meas_s || !ok) {
    rc = tune_fail(err, TUNE_ENOMEM, "bench-search: out of memory");
    goto fail;
  }
  b->opt = INFINITY;
  b->worst = -INFINITY;
  for (size_t i = 0; i < b->n; i++) {
    int vi[SEARCH_MAX_PARAMS];
    search_point_decode(space, space->points[i], vi);
    rec_row key;
    memset(&key, 0, sizeof key);
    tune_recipe_config_hash(r, vi, key.hash);
    const rec_row *x = rows.n ? bsearch(&key, rows.a, rows.n, sizeof *rows.a, by_hash) : NULL;
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
  if (b->n_ok == 0) {
    rc = tune_fail(err, TUNE_ENOTFOUND, "no verified result recorded for %s / %s", r->name, p->name);
    goto fail;
  }
  qsort(ok, b->n_ok, sizeof *ok, cmp_double);
  for (int j = 0; j < N_BUDGETS; j++) {
    long k = lround(budget_frac[j] * (double)b->n);
    b->evals[j] = k < 1 ? 1 : k;
    b->secs[j] = budget_frac[j] * b->total_s;
    b->base_eval[j] = expected_best(ok, b->n_ok, b->n, b->evals[j], b->worst);
  }
  rc = time_baseline(b, err);
fail:
  free(ok);
  free(rows.a);
  if (rc) bench_space_free(b);
  return rc;
}

/* ---- running the strategies ---------------------------------------------- */

typedef struct bench_run {
  const bench_space *b;
  const char *const *names;  /* strategies, as search_strategy_new knows them */
  const char *const *labels; /* what the tables call them */
  const double *halving;     /* [strategy] successive-halving margin, 0 none */
  int with_halving;          /* --halving: a strategy runs with it (adds the time spent to the output) */
  int n_strategies, repeats;
  double *found;             /* [strategy][seed][2][N_BUDGETS] [ns] */
  double *spent;             /* [strategy][seed][N_BUDGETS] [s] time spent by each evaluation budget */
  const int *warm;           /* [strategy] 1: warm start from the earlier problems' bests (warm_start.h) */
  /* [strategy][seed][N_BUDGETS][max_problems] the best point found at each evaluation budget on
     each earlier problem of the recipe (n_hist of them): the warm-start candidates */
  uint64_t *hist;
  const double *hist_dist;   /* [n_hist] distance of each earlier problem to this one (warm_start.h) */
  int n_hist, max_problems;
  const uint64_t *extra;     /* [n_extra] --warm-db candidates for this problem, the same for every run */
  const double *extra_dist;  /* [n_extra] their problems' distances to this one */
  int n_extra;
  int project;               /* this problem opens a new regime: tune_warm_order may project */
  uint64_t *found_pt;        /* [strategy][seed][N_BUDGETS] this problem's best point per evaluation budget */
  int *has_pt;               /* [strategy][seed][N_BUDGETS] 1: found_pt is set */
  atomic_int next;           /* next job: strategy * repeats + seed index */
  pthread_mutex_t lock;
  tune_err err;              /* first failure */
} bench_run;

static double *found_at(const bench_run *br, int s, int seed_i, int kind) {
  return br->found + (((size_t)s * (size_t)br->repeats + (size_t)seed_i) * 2 + (size_t)kind) * N_BUDGETS;
}

static size_t run_index(const bench_run *br, int s, int seed_i) {
  return (size_t)s * (size_t)br->repeats + (size_t)seed_i;
}

/* The warm-start candidates of (s, seed_i) at evaluation budget j: one point per earlier problem. */
static uint64_t *hist_at(const bench_run *br, int s, int seed_i, int j) {
  return br->hist + (run_index(br, s, seed_i) * N_BUDGETS + (size_t)j) * (size_t)br->max_problems;
}

#define WARM_DB_MAX 1024 /* --warm-db candidates per problem, at most */

/* One strategy, one seed: the best found within each budget into fe (evaluations)
 * and ft (time), the time spent by each evaluation budget into sp. halving > 0:
 * as tune run --halving drives it (session.c): per batch, every point costs a
 * quick measure; the decision (halving.h) on the batch's quick times (replay:
 * the recorded ones) against the best fully timed so far; a contender then
 * costs its full measure too, and only contenders count as found. Batches end
 * at the evaluation budgets then. */
static int simulate(const bench_space *b, const char *name, double halving, uint64_t seed, const uint64_t *warm,
                    int n_warm, long max_e, double max_t, double *fe, double *ft, double *sp, uint64_t *fe_pt,
                    int *fe_has, tune_err *err) {
  search_strategy *s = NULL;
  int rc = search_strategy_new(name, b->space, seed, &s, err);
  if (rc) return rc;
  long evals = 0;
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
      for (int j = 0; j < N_BUDGETS; j++) {
        if (evals == b->evals[j]) {
          fe[j] = best, sp[j] = cum;
          if (isfinite(best)) fe_pt[j] = best_pt, fe_has[j] = 1;
        }
        if (cum <= b->secs[j]) ft[j] = best;
      }
    }
  }
out:
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
  double *fe_all = found_at(br, s, k, 0), *ft_all = found_at(br, s, k, 1);
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
    if (simulate(b, br->names[s], br->halving[s], (uint64_t)k + 1, warm[j], n_warm[j], max_e, max_t, fe, ft, sp, pt,
                 has, err))
      return err->code;
    for (int g = 0; g < ng; g++) {
      int l = group[g];
      fe_all[l] = fe[l], ft_all[l] = ft[l], sp_all[l] = sp[l], pt_all[l] = pt[l], has_all[l] = has[l];
    }
  }
  return TUNE_OK;
}

/* After a problem: each run's best point per evaluation budget joins its warm-start candidates. */
static void hist_append(bench_run *br) {
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

static void *worker(void *arg) {
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

static int run_all(bench_run *br, int jobs, tune_err *err) {
  atomic_init(&br->next, 0);
  pthread_mutex_init(&br->lock, NULL);
  tune_err_clear(&br->err);
  pthread_t th[64];
  if (jobs > 64) jobs = 64;
  int started = 0;
  for (int i = 0; i < jobs; i++)
    if (pthread_create(&th[started], NULL, worker, br) == 0) started++;
  if (started == 0) worker(br);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&br->lock);
  if (br->err.code) return tune_fail(err, br->err.code, "%s", br->err.msg);
  return TUNE_OK;
}

/* ---- statistics ------------------------------------------------------------ */

/* Quantile q of sorted v[n] by linear interpolation (numpy's default). */
static double quantile(const double *v, int n, double q) {
  double pos = q * (n - 1);
  int lo = (int)floor(pos);
  if (lo >= n - 1) return v[n - 1];
  return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]);
}

static double p_score(double base, double found, double opt) {
  double den = base - opt;
  if (!(den > 1e-12 * opt)) return NAN; /* random search already finds the optimum */
  return (base - found) / den;
}

typedef struct cell {
  double median, q1, q3;     /* of P */
  double perf_median;        /* median of optimum / found */
  double frac98;             /* share of seeds with optimum / found >= 0.98 */
} cell;

static cell summarize(const bench_run *br, int s, int kind, int j, double base, double *tmp,
                      double *tmp2) {
  const bench_space *b = br->b;
  int n = br->repeats;
  int n98 = 0;
  for (int k = 0; k < n; k++) {
    double f = found_at(br, s, k, kind)[j];
    tmp[k] = p_score(base, f, b->opt);
    tmp2[k] = b->opt / f;
    n98 += tmp2[k] >= 0.98;
  }
  cell c;
  qsort(tmp2, (size_t)n, sizeof *tmp2, cmp_double);
  c.perf_median = quantile(tmp2, n, 0.5);
  c.frac98 = (double)n98 / n;
  if (isnan(tmp[0])) {
    c.median = c.q1 = c.q3 = NAN;
    return c;
  }
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
  c.median = quantile(tmp, n, 0.5);
  c.q1 = quantile(tmp, n, 0.25);
  c.q3 = quantile(tmp, n, 0.75);
  return c;
}

/* ---- output ---------------------------------------------------------------- */

static void fmt_ns(double ns, char *buf, size_t n) {
  if (ns >= 1e6) snprintf(buf, n, "%.3f ms", ns / 1e6);
  else snprintf(buf, n, "%.2f us", ns / 1e3);
}

static void fmt_cell(const cell *c, char *buf, size_t n) {
  if (isnan(c->median)) snprintf(buf, n, "n/a");
  else snprintf(buf, n, "%.2f [%.2f,%.2f]", c->median, c->q1, c->q3);
}

static void print_table(const bench_run *br, cell (*cells)[2][N_BUDGETS], int kind) {
  const bench_space *b = br->b;
  char head[64];
  int w = 10; /* the label column: wider only for a longer label (bayes+halving) */
  for (int s = 0; s < br->n_strategies; s++)
    if ((int)strlen(br->labels[s]) > w) w = (int)strlen(br->labels[s]);
  printf("%-*s", w, kind ? "time" : "evals");
  for (int j = 0; j < N_BUDGETS; j++) {
    if (kind) snprintf(head, sizeof head, "%g%% (%.1f s)", 100 * budget_frac[j], b->secs[j]);
    else snprintf(head, sizeof head, "%g%% (%ld)", 100 * budget_frac[j], b->evals[j]);
    printf(" %18s", head);
  }
  printf("\n");
  for (int s = 0; s < br->n_strategies; s++) {
    printf("%-*s", w, br->labels[s]);
    for (int j = 0; j < N_BUDGETS; j++) {
      char t[64];
      fmt_cell(&cells[s][kind][j], t, sizeof t);
      printf(" %18s", t);
    }
    printf("\n");
  }
  printf("%-*s", w, "(random)");
  for (int j = 0; j < N_BUDGETS; j++) {
    char t[32];
    fmt_ns(kind ? b->base_time[j] : b->base_eval[j], t, sizeof t);
    printf(" %18s", t);
  }
  printf("\n");
}

static json_t *cell_json(const cell *c) {
  json_t *o = json_object();
  if (!o) return NULL;
  json_object_set_new(o, "median", isnan(c->median) ? json_null() : json_real(c->median));
  json_object_set_new(o, "q1", isnan(c->q1) ? json_null() : json_real(c->q1));
  json_object_set_new(o, "q3", isnan(c->q3) ? json_null() : json_real(c->q3));
  json_object_set_new(o, "perf_median", json_real(c->perf_median));
  json_object_set_new(o, "frac98", json_real(c->frac98));
  return o;
}

static json_t *problem_json(const bench_run *br, const tune_recipe *r, const tune_problem *p,
                            cell (*cells)[2][N_BUDGETS]) {
  const bench_space *b = br->b;
  json_t *o = json_object(), *strat = json_object(), *budgets = json_array();
  json_t *status = json_object();
  if (!o || !strat || !budgets || !status) {
    json_decref(o);
    json_decref(strat);
    json_decref(budgets);
    json_decref(status);
    return NULL;
  }
  json_object_set_new(o, "recipe", json_string(r->name));
  json_object_set_new(o, "problem", json_string(p->name));
  json_object_set_new(o, "problem_hash", json_string(p->hash));
  json_object_set_new(o, "n_points", json_integer((json_int_t)b->n));
  json_object_set_new(o, "n_ok", json_integer((json_int_t)b->n_ok));
  for (int s = 0; s < DB_STATUS_COUNT; s++)
    if (b->n_status[s]) json_object_set_new(status, db_status_name((db_status)s), json_integer(b->n_status[s]));
  json_object_set_new(o, "statuses", status);
  json_object_set_new(o, "optimum_ns", json_real(b->opt));
  json_object_set_new(o, "worst_ns", json_real(b->worst));
  json_object_set_new(o, "total_s", json_real(b->total_s));
  json_object_set_new(o, "repeats", json_integer(br->repeats));
  for (int j = 0; j < N_BUDGETS; j++) {
    json_t *bj = json_object();
    json_object_set_new(bj, "fraction", json_real(budget_frac[j]));
    json_object_set_new(bj, "evals", json_integer(b->evals[j]));
    json_object_set_new(bj, "seconds", json_real(b->secs[j]));
    json_object_set_new(bj, "baseline_eval_ns", json_real(b->base_eval[j]));
    json_object_set_new(bj, "baseline_time_ns", json_real(b->base_time[j]));
    json_array_append_new(budgets, bj);
  }
  json_object_set_new(o, "budgets", budgets);
  for (int s = 0; s < br->n_strategies; s++) {
    json_t *so = json_object(), *ev = json_array(), *tm = json_array();
    for (int j = 0; j < N_BUDGETS; j++) {
      json_array_append_new(ev, cell_json(&cells[s][0][j]));
      json_array_append_new(tm, cell_json(&cells[s][1][j]));
    }
    json_object_set_new(so, "evals", ev);
    json_object_set_new(so, "time", tm);
    /* every run's best found, [seed][budget] in ns */
    for (int kind = 0; kind < 2; kind++) {
      json_t *runs = json_array();
      for (int k = 0; k < br->repeats; k++) {
        json_t *row = json_array();
        const double *f = found_at(br, s, k, kind);
        for (int j = 0; j < N_BUDGETS; j++) json_array_append_new(row, json_real(f[j]));
        json_array_append_new(runs, row);
      }
      json_object_set_new(so, kind ? "found_time_ns" : "found_eval_ns", runs);
    }
    if (br->with_halving) { /* the time each evaluation budget took, [seed][budget] in s */
      json_t *runs = json_array();
      for (int k = 0; k < br->repeats; k++) {
        json_t *row = json_array();
        const double *t = br->spent + ((size_t)s * (size_t)br->repeats + (size_t)k) * N_BUDGETS;
        for (int j = 0; j < N_BUDGETS; j++) json_array_append_new(row, json_real(t[j]));
        json_array_append_new(runs, row);
      }
      json_object_set_new(so, "spent_eval_s", runs);
      json_object_set_new(so, "halving_margin", json_real(br->halving[s]));
    }
    json_object_set_new(strat, br->labels[s], so);
  }
  json_object_set_new(o, "strategies", strat);
  return o;
}

/* --halving: per evaluation budget, the median over seeds of the recorded time spent
 * without (strategy a) and with halving (strategy h), and on how many seeds the best
 * found differs. tmp: repeats doubles of scratch. */
static void print_halving(const bench_run *br, int a, int h, double *tmp) {
  int n = br->repeats;
  printf("halving (%s, margin %g %%): recorded compile+measure time spent by each evaluation budget, median over"
         " seeds; seeds whose best found differs\n", br->names[h], 100 * br->halving[h]);
  for (int j = 0; j < N_BUDGETS; j++) {
    double m[2];
    for (int v = 0; v < 2; v++) {
      int s = v ? h : a, k2 = 0;
      for (int k = 0; k < n; k++) {
        double t = br->spent[((size_t)s * (size_t)n + (size_t)k) * N_BUDGETS + (size_t)j];
        if (isfinite(t)) tmp[k2++] = t;
      }
      qsort(tmp, (size_t)k2, sizeof *tmp, cmp_double);
      m[v] = k2 ? quantile(tmp, k2, 0.5) : NAN;
    }
    int differ = 0;
    for (int k = 0; k < n; k++) differ += found_at(br, a, k, 0)[j] != found_at(br, h, k, 0)[j];
    printf("  %4g%% (%ld): %9.1f s without, %9.1f s with halving (%+.1f %%); best found differs on %d of %d seeds\n",
           100 * budget_frac[j], br->b->evals[j], m[0], m[1], m[0] > 0 ? 100 * (m[1] - m[0]) / m[0] : 0.0, differ, n);
  }
}

/* ---- the verb -------------------------------------------------------------- */


int tune_bench_search_main(int argc, char **argv) {
  const char *recipe_path = NULL, *device = NULL, *problems[32];
  int n_problems = 0, repeats = 100, json = 0, no_warm = 0;
  const char *warm_db_path = NULL; /* --warm-db */
  db_conn *wdb = NULL;
  double halving = 0; /* --halving: margin of the extra default-strategy run */
  int jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
  char strat_buf[512] = "random,anneal,genetic,bayes,bandit,bayes:cold";
  for (int i = 0; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE()                                                         \
  do {                                                                       \
    if (!v) {                                                                \
      fprintf(stderr, "tune bench-search: %s needs a value\n", a);           \
      return 2;                                                              \
    }                                                                        \
    ++i;                                                                     \
  } while (0)
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(usage_bench, stdout);
      return 0;
    } else if (!strcmp(a, "--device")) {
      NEED_VALUE();
      device = v;
    } else if (!strcmp(a, "--repeats")) {
      NEED_VALUE();
      repeats = atoi(v);
      if (repeats < 1 || repeats > 100000) {
        fprintf(stderr, "tune bench-search: --repeats %s: want 1..100000\n", v);
        return 2;
      }
    } else if (!strcmp(a, "--strategies")) {
      NEED_VALUE();
      snprintf(strat_buf, sizeof strat_buf, "%s", v);
    } else if (!strcmp(a, "--problem")) {
      NEED_VALUE();
      if (n_problems == 32) {
        fprintf(stderr, "tune bench-search: too many --problem\n");
        return 2;
      }
      problems[n_problems++] = v;
    } else if (!strcmp(a, "--jobs")) {
      NEED_VALUE();
      jobs = atoi(v);
      if (jobs < 1) {
        fprintf(stderr, "tune bench-search: --jobs %s: want a positive count\n", v);
        return 2;
      }
    } else if (!strcmp(a, "--json")) json = 1;
    else if (!strcmp(a, "--no-warm-start")) no_warm = 1;
    else if (!strcmp(a, "--warm-db")) {
      NEED_VALUE();
      warm_db_path = v;
    }
    else if (!strcmp(a, "--halving")) halving = TUNE_HALVING_DEFAULT_MARGIN;
    else if (!strncmp(a, "--halving=", 10)) {
      char *end;
      halving = strtod(a + 10, &end);
      if (*end || !(halving > 0 && halving < 1)) {
        fprintf(stderr, "tune bench-search: %s: want a margin in (0, 1), e.g. --halving=0.1\n", a);
        return 2;
      }
    } else if (a[0] == '-') {
      fprintf(stderr, "tune bench-search: unknown option %s (see tune bench-search --help)\n", a);
      return 2;
    } else if (!recipe_path) recipe_path = a;
    else {
      fprintf(stderr, "tune bench-search: one recipe at a time (got %s and %s)\n", recipe_path, a);
      return 2;
    }
#undef NEED_VALUE
  }
  if (!recipe_path) {
    fputs(usage_bench, stderr);
    return 2;
  }
  if (device && strncmp(device, "replay:", 7)) {
    fprintf(stderr, "tune bench-search: --device %s: want replay:FILE (a recorded database)\n", device);
    return 2;
  }
  const char *names[MAX_STRATEGIES + 2];
  const char *labels[MAX_STRATEGIES + 2];
  int warm[MAX_STRATEGIES + 2];
  char name_buf[MAX_STRATEGIES][64];
  int n_names = 0;
  for (char *save = NULL, *t = strtok_r(strat_buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    /* NAME:cold: the strategy without the warm start (warm_start.h) */
    const char *colon = strchr(t, ':');
    if (colon && strcmp(colon, ":cold")) {
      fprintf(stderr, "tune bench-search: %s: the only suffix is :cold (no warm start)\n", t);
      return 2;
    }
    if (n_names < MAX_STRATEGIES)
      snprintf(name_buf[n_names], sizeof name_buf[0], "%.*s", colon ? (int)(colon - t) : (int)strlen(t), t);
    const char *base = n_names < MAX_STRATEGIES ? name_buf[n_names] : t;
    int known = 0;
    for (int k = 0; search_strategy_names[k]; k++) known |= !strcmp(search_strategy_names[k], base);
    if (!known) {
      fprintf(stderr, "tune bench-search: unknown strategy %s (known:", t);
      for (int k = 0; search_strategy_names[k]; k++) fprintf(stderr, " %s", search_strategy_names[k]);
      fprintf(stderr, ")\n");
      return 2;
    }
    if (n_names == MAX_STRATEGIES) {
      fprintf(stderr, "tune bench-search: at most %d strategies\n", MAX_STRATEGIES);
      return 2;
    }
    labels[n_names] = t;
    warm[n_names] = !colon && !no_warm;
    names[n_names++] = base;
  }
  if (n_names == 0) {
    fprintf(stderr, "tune bench-search: --strategies names none\n");
    return 2;
  }
  /* --halving: the default strategy once more, with halving, beside the plain one */
  double margins[MAX_STRATEGIES + 2] = {0};
  int plain_default = -1; /* index of the default strategy without halving */
  for (int s = 0; s < n_names; s++)
    if (!strcmp(labels[s], TUNE_DEFAULT_STRATEGY)) plain_default = s;
  if (halving > 0) {
    if (plain_default < 0) {
      plain_default = n_names;
      names[n_names] = labels[n_names] = TUNE_DEFAULT_STRATEGY;
      warm[n_names] = !no_warm;
      n_names++;
    }
    names[n_names] = TUNE_DEFAULT_STRATEGY;
    labels[n_names] = TUNE_DEFAULT_STRATEGY "+halving";
    warm[n_names] = !no_warm;
    margins[n_names] = halving;
    n_names++;
  }

  tune_err err;
  tune_err_clear(&err);
  tune_recipes *set = NULL;
  db_conn *db = NULL;
  search_space *space = NULL, *pspace = NULL; /* the recipe's; the configs that apply to a problem */
  tune_rejections rej;
  memset(&rej, 0, sizeof rej);
  bench_space b;
  memset(&b, 0, sizeof b);
  double *found = NULL, *tmp = NULL, *tmp2 = NULL, *spent = NULL;
  uint64_t *found_pt = NULL, *hist = NULL; /* warm start: this problem's bests, the earlier ones' bests */
  uint64_t *before = NULL; /* the union of the spaces of the recipe's problems so far (ascending) */
  size_t n_before = 0;
  int *has_pt = NULL;
  cell(*cells)[2][N_BUDGETS] = NULL;
  json_t *out = NULL;
  int rc = 1;
  if (tune_recipes_load(recipe_path, &set, &err)) goto fail;
  char path[PATH_MAX + 64];
  if (device) snprintf(path, sizeof path, "%s", device + 7);
  else tune_default_replay_path(set, recipe_path, path, sizeof path);
  if (access(path, R_OK)) {
    fprintf(stderr, "tune bench-search: %s: no recorded database (--device replay:FILE names one)\n", path);
    goto fail;
  }
  if (db_open(path, 1, &db, &err)) goto fail;
  if (warm_db_path) {
    if (access(warm_db_path, R_OK)) {
      fprintf(stderr, "tune bench-search: --warm-db %s: no such database\n", warm_db_path);
      goto fail;
    }
    if (db_open(warm_db_path, 1, &wdb, &err)) goto fail;
  }
  found = malloc((size_t)n_names * (size_t)repeats * 2 * N_BUDGETS * sizeof(double));
  spent = malloc((size_t)n_names * (size_t)repeats * N_BUDGETS * sizeof(double));
  found_pt = malloc((size_t)n_names * (size_t)repeats * N_BUDGETS * sizeof(uint64_t));
  has_pt = malloc((size_t)n_names * (size_t)repeats * N_BUDGETS * sizeof(int));
  tmp = malloc((size_t)repeats * sizeof(double));
  tmp2 = malloc((size_t)repeats * sizeof(double));
  cells = malloc((size_t)n_names * sizeof *cells);
  out = json_array();
  if (!found || !spent || !found_pt || !has_pt || !tmp || !tmp2 || !cells || !out) {
    tune_fail(&err, TUNE_ENOMEM, "bench-search: out of memory");
    goto fail;
  }
  if (!json) {
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    printf("tune bench-search %s, replay %s, %d seeds per strategy (%s)\n", recipe_path, path, repeats, date);
  }
  for (int ri = 0; ri < set->n; ++ri) {
    tune_recipe *r = &set->r[ri];
    db_device dev;
    tune_err e;
    tune_err_clear(&e);
    if (db_device_recorded(db, r->name, &dev, NULL, &e)) {
      if (e.code != TUNE_ENOTFOUND) {
        tune_fail(&err, e.code, "%s", e.msg);
        goto fail;
      }
      if (!json) printf("\n%s: nothing recorded in %s, skipped\n", r->name, path);
      continue;
    }
    tune_device_facts facts; /* what the recipe's applies saw when it was recorded */
    tune_device_facts_from(&dev, &facts);
    int nv[SEARCH_MAX_PARAMS];
    for (int i = 0; i < r->n_params; ++i) nv[i] = r->params[i].n_values;
    search_space_def def = {.n_params = r->n_params, .n_values = nv, .n_constraints = r->n_constraints,
                            .constraint_level = NULL, .check = tune_recipe_check, .ctx = r};
    if (search_space_enumerate(&def, &space, &err)) goto fail;
    /* warm-start candidates of this recipe's problems, in the recipe's order (as tune run meets them) */
    free(hist);
    n_before = 0; /* the new regime is a matter of one recipe's problems */
    hist = malloc((size_t)n_names * (size_t)repeats * N_BUDGETS * (size_t)(r->n_problems ? r->n_problems : 1) *
                  sizeof(uint64_t));
    if (!hist) {
      tune_fail(&err, TUNE_ENOMEM, "bench-search: out of memory");
      goto fail;
    }
    int n_hist = 0;
    int hist_pi[256];      /* the problem of each candidate column */
    double hist_dist[256]; /* its distance to the problem at hand */
    for (int pi = 0; pi < r->n_problems; ++pi) {
      tune_problem *p = &r->problems[pi];
      int sel = n_problems == 0;
      for (int k = 0; k < n_problems; k++) sel |= !strcmp(problems[k], p->name);
      tune_err_clear(&e);
      search_space_free(pspace);
      pspace = NULL;
      if (tune_problem_space(r, p, &facts, space, &pspace, &rej, &err)) goto fail;
      /* a new regime (as tune run decides it): no config shared with the recipe's problems before
         this one, selected or not */
      int project = 0;
      if (tune_warm_next_problem(&before, &n_before, pspace, &project)) {
        tune_fail(&err, TUNE_ENOMEM, "bench-search: out of memory");
        goto fail;
      }
      if (!sel) continue;
      if (bench_space_load(&b, db, r, p, pspace, &e)) {
        if (e.code != TUNE_ENOTFOUND) {
          tune_fail(&err, e.code, "%s", e.msg);
          goto fail;
        }
        if (!json) printf("\n%s / %s: %s, skipped\n", r->name, p->name, e.msg);
        continue;
      }
      for (int h = 0; h < n_hist; h++) hist_dist[h] = tune_problem_distance(p->dims_json, r->problems[hist_pi[h]].dims_json);
      uint64_t *extra = NULL;
      double *extra_dist = NULL;
      int n_extra = 0;
      if (wdb && tune_warm_bests_db(wdb, r, dev.name, dev.arch, p, pspace, &extra, &extra_dist, &n_extra, &err)) goto fail;
      if (n_extra > WARM_DB_MAX) n_extra = WARM_DB_MAX;
      bench_run br = {.b = &b, .names = names, .labels = labels, .halving = margins, .with_halving = halving > 0,
                      .n_strategies = n_names, .repeats = repeats, .found = found, .spent = spent, .warm = warm,
                      .hist = hist, .hist_dist = hist_dist, .n_hist = n_hist,
                      .max_problems = r->n_problems < 256 ? r->n_problems : 256, .found_pt = found_pt,
                      .has_pt = has_pt, .extra = extra, .extra_dist = extra_dist, .n_extra = n_extra,
                      .project = project};
      int run_rc = run_all(&br, jobs, &err);
      free(extra);
      free(extra_dist);
      if (run_rc) goto fail;
      hist_append(&br);
      if (br.n_hist > n_hist) hist_pi[n_hist] = pi;
      n_hist = br.n_hist;
      for (int s = 0; s < n_names; s++)
        for (int j = 0; j < N_BUDGETS; j++) {
          cells[s][0][j] = summarize(&br, s, 0, j, b.base_eval[j], tmp, tmp2);
          cells[s][1][j] = summarize(&br, s, 1, j, b.base_time[j], tmp, tmp2);
        }
      if (json) {
        json_t *pj = problem_json(&br, r, p, cells);
        if (!pj) {
          tune_fail(&err, TUNE_ENOMEM, "bench-search: out of memory");
          goto fail;
        }
        json_object_set_new(pj, "device", json_string(dev.name));
        json_object_set_new(pj, "n_rejected", json_integer((json_int_t)rej.n));
        json_object_set_new(pj, "database", json_string(path));
        json_array_append_new(out, pj);
      } else {
        char o[32], w[32];
        fmt_ns(b.opt, o, sizeof o);
        fmt_ns(b.worst, w, sizeof w);
        printf("\n== %s / %s %s: %zu configs recorded on %s", r->name, p->name, p->dims_json, b.n, dev.name);
        if (rej.n) printf(" (%zu more rejected by the recipe: not part of the space)", rej.n);
        printf("\n");
        printf("   statuses:");
        for (int s = 0; s < DB_STATUS_COUNT; s++)
          if (b.n_status[s]) printf(" %d %s", b.n_status[s], db_status_name((db_status)s));
        printf("; optimum %s, worst %s; whole space %.1f s of compile+measure\n", o, w, b.total_s);
        printf("P score, median [q1,q3] over %d seeds; last row: random search's expected best\n", repeats);
        print_table(&br, cells, 0);
        print_table(&br, cells, 1);
        printf("goal at 10%% of the evaluations (%ld): median fraction of the optimum reached;"
               " share of seeds reaching 98%%\n", b.evals[GOAL_BUDGET]);
        for (int s = 0; s < n_names; s++)
          printf("  %-10s %.4f  %3.0f%%%s\n", labels[s], cells[s][0][GOAL_BUDGET].perf_median,
                 100 * cells[s][0][GOAL_BUDGET].frac98,
                 cells[s][0][GOAL_BUDGET].perf_median >= 0.98 ? "  (meets 98%)" : "");
        if (halving > 0) print_halving(&br, plain_default, n_names - 1, tmp);
        fflush(stdout);
      }
      bench_space_free(&b);
    }
    search_space_free(pspace);
    pspace = NULL;
    search_space_free(space);
    space = NULL;
  }
  if (json) {
    json_dumpf(out, stdout, JSON_INDENT(1));
    puts("");
  }
  rc = 0;
fail:
  if (rc && err.code) fprintf(stderr, "tune bench-search: %s\n", err.msg);
  json_decref(out);
  bench_space_free(&b);
  free(found);
  free(spent);
  free(found_pt);
  free(has_pt);
  free(hist);
  free(before);
  free(tmp);
  free(tmp2);
  free(cells);
  search_space_free(pspace);
  search_space_free(space);
  db_close(db);
  db_close(wdb);
  tune_recipes_free(set);
  return rc;
}

/* ---- tune db export ---------------------------------------------------------- */

int tune_db_export_cli(db_conn *db, const char *format, const char *recipe, const char *problem,
                       const char *out_path) {
  if (!format || !recipe || !problem) {
    fprintf(stderr, "tune db export: want --format kernel_tuner|t4 --recipe R --problem P [-o FILE]\n");
    return 2;
  }
  if (strcmp(format, "kernel_tuner") && strcmp(format, "t4")) {
    fprintf(stderr, "tune db export: --format %s: want kernel_tuner or t4\n", format);
    return 2;
  }
  int to_stdout = !out_path || !strcmp(out_path, "-");
  FILE *f = to_stdout ? stdout : fopen(out_path, "w");
  if (!f) {
    fprintf(stderr, "tune db export: %s: cannot write\n", out_path);
    return 1;
  }
  tune_err err;
  tune_err_clear(&err);
  int rc = db_export(db, format, recipe, problem, f, &err);
  if (!to_stdout && fclose(f) && !rc) rc = tune_fail(&err, TUNE_EIO, "%s: write failed", out_path);
  if (rc) {
    fprintf(stderr, "tune db export: %s\n", err.msg);
    if (!to_stdout) remove(out_path);
    return 1;
  }
  return 0;
}
