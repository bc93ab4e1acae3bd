/* strategy_bayes.c: Bayesian optimization, a Gaussian process with expected
 * improvement.
 *
 * Inputs: each parameter with more than one value is one coordinate, its
 * value index scaled to [0, 1] (the recipe's value order is taken as the
 * order of the values). Output: log of the cost, capped at the median of the
 * observed log costs: the model spends its flexibility on the better half of
 * the space instead of on how bad the bad configs are. A failed point counts
 * as the cap. Targets are standardized before fitting.
 *
 * Model: zero-mean GP, Matern 5/2 kernel with one length scale per
 * coordinate (ARD), signal variance s2 and noise variance s2 * g. s2 has a
 * closed-form maximum-likelihood value; the length scales and g are fitted by
 * coordinate search on the log marginal likelihood (factor-2 then factor-
 * sqrt(2) steps on each length scale, g from a short list), with a weak
 * log-normal prior on the length scales (median BAYES_LS_PRIOR). The fit
 * starts from the previous one and is redone at every step while fewer than
 * 40 points are known, then every time they have grown by about 5 %. Past
 * BAYES_MAX_TRAIN points the model is trained on the best 3/4 of that many
 * and the latest 1/4 (the cost of a step stays bounded).
 *
 * Proposal: an initial design of n_init points in one batch: the centre
 * point (the point of the constrained space nearest, in normalized value
 * indexes, to the middle of every parameter's range; ties drawn at random),
 * then n_init - 1 space-filling random points (each the farthest from those
 * chosen or known so far among BAYES_INIT_DRAWS random unseen points);
 * n_init = points / BAYES_INIT_PER (rounded as below), 1..BAYES_N_INIT_MAX:
 * on a small space every point is a large share of the budget that matters,
 * and one is enough to start the local steps from. The centre is the
 * classic first point of a design of experiments: the single point closest
 * to every other in the worst case, and where a recipe's value lists
 * (ordered from small to large) put the middling tile sizes, widths and
 * depths. After a warm start (points observed before the first proposal:
 * tune run's warm start evaluates the nearest earlier problems' bests) the
 * design has no centre: all n_init points are such farthest draws, away from
 * the warm-start points, which already exploit what is known; a centre often
 * lies in their region and adds little (docs/search.md, "bayes").
 * Then one point per batch (k with search_strategy_set_parallel: see below),
 * two local steps for one global step:
 *  - local: the largest expected improvement among the unseen points one or
 *    two unit steps (one value index in one or two parameters) away from the
 *    best point (when all those are seen, a global step instead);
 *  - global: the largest expected improvement among all unseen points when
 *    there are at most BAYES_MAX_CAND, else among BAYES_MAX_CAND random ones
 *    plus the unseen neighbours of the best points.
 * Expected improvement below the best standardized value by xi = BAYES_XI.
 * With no success observed yet (nothing to model) it draws at random.
 *
 * Parallel batches (k points measured at once, one per GPU): the design has at
 * least k points, and each later batch is k picks made as above in turn, the
 * model refitted between them with a kriging believer: the cost model's mean
 * at each pick taken as observed there (its real cost replaces it later).
 * Why this and not the k largest acquisitions of one fit: those cluster
 * around the same optimum of a smooth acquisition, often next to each other;
 * the believer removes what a pick would teach, so the next one tests
 * something else, at the cost of k fits per batch (milliseconds). With k = 1
 * nothing changes.
 *
 * Feasibility: once a failure is among the training points, a second GP
 * (same kernel form, its own length scales and noise) is fitted to the
 * labels +1 success / -1 failure, and every acquisition is the expected
 * improvement times P(success)^BAYES_FEAS_POW, P(success) = Phi(mean / sd)
 * of that GP in label units (constrained expected improvement). Recipes
 * reject whole regions (applies, resource limits) and each rejected point
 * costs an evaluation; the square root keeps points next to failures in
 * play, where the best configs often are.
 *
 * Peek (search_strategy_peek): the next batch as next_batch would make it, taken on a deep copy of
 * the state (so its random stream and model stay as they were): the queued points, the design, or
 * the next model step with its candidates ranked by acquisition instead of one picked, after the
 * points proposed and not observed yet are believed at the model's mean (they will be observed
 * first, and seldom turn out the new best). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strategy_common.h"

#define BAYES_INIT_PER 60     /* space points per design point */
#define BAYES_N_INIT_MAX 10   /* design points, at most */
#define BAYES_MAX_CAND 2048   /* candidates scored per step, at most */
#define BAYES_INIT_DRAWS 16   /* random draws per space-filling initial point */
#define BAYES_XI 0.01         /* expected-improvement margin [standardized log cost] */
#define BAYES_LS_PRIOR 0.5    /* median of the length-scale prior [normalized index] */
#define BAYES_LS_PRIOR_SD 1.5 /* its spread [ln units] */
#define BAYES_LS_MIN 0.03
#define BAYES_LS_MAX 20.0
#define BAYES_N_BEST 4        /* best points whose neighbours join large candidate sets */
#define BAYES_MAX_TRAIN 256   /* training points of the model, at most */
#ifndef BAYES_FEAS
#define BAYES_FEAS 1          /* model feasibility (constrained expected improvement) */
#endif
#define BAYES_FEAS_POW 0.5    /* acquisition = EI x P(feasible)^this: a soft penalty, as the best
                                 configs often lie next to the ones that fail */

#define BAYES_MAX_DIM (2 * SEARCH_MAX_PARAMS) /* value indexes, then compile-time features */
#define BAYES_BATCH 16 /* candidates predicted at once: predict_batch's solve runs across them */
#define FACTOR_ROWS 8  /* rows of a factor column updated together (factor's unroll pragma says 8) */
_Static_assert(FACTOR_ROWS == 8, "factor's #pragma GCC unroll names FACTOR_ROWS's value");

static const double noise_grid[] = {1e-6, 1e-4, 1e-3, 1e-2, 1e-1};
#define N_NOISE ((int)(sizeof noise_grid / sizeof noise_grid[0]))

/* One Gaussian process over the training points (bayes_state's Xt): the cost
 * model, or the feasibility model (labels +1 success, -1 failure). */
typedef struct gp {
  double log_ls[BAYES_MAX_DIM]; /* fitted length scales (ln) */
  double g;          /* fitted noise ratio */
  double s2;         /* fitted signal variance */
  double mean, sd;   /* the targets' standardization */
  double *ys;        /* [tcap] standardized targets of the current fit */
  double *L;         /* [tcap * tcap] Cholesky factor of the kernel matrix */
  double *alpha;     /* [tcap] K^-1 ys */
  int fit_n;         /* observations at the last hyperparameter fit, 0 never */
} gp;

typedef struct bayes_state {
  search_pool pool;
  int d;             /* coordinates: parameters with more than one value, then n_feat features */
  int n_feat;        /* compile-time features (search_strategy_set_features), 0 none */
  double *feat;      /* [points * n_feat] each scaled to [0, 1] over the space; unknown: 0.5 */
  int n_init;        /* initial design: the centre, then space-filling points (after a warm start:
                        space-filling points only) */
  int design_done;   /* the initial design was proposed (once, even after observations of points
                        it did not propose, such as tune run's warm start) */
  int n_obs, cap;    /* training points, allocated capacity */
  uint32_t *obs;     /* [cap] their positions */
  double *X;         /* [cap * d] their coordinates */
  double *y;         /* [cap] log cost, NAN for a failure */
  int n_train;       /* points the model is trained on (<= BAYES_MAX_TRAIN) */
  int tcap;          /* capacity of the training arrays: min(cap, BAYES_MAX_TRAIN) */
  double *Xt;        /* [tcap * d] coordinates of the training points */
  double *yt;        /* [tcap] their log cost, NAN for a failure */
  gp cost;           /* log cost (capped) */
  gp feas;           /* feasibility: used once a failure is among the training points */
  int use_feas;      /* the feasibility model is fitted for the current step */
  double *work;      /* [cap] scratch */
  uint64_t n_steps;  /* model steps so far (n % 3 == 2: global, else local) */
  uint32_t *cand;    /* [BAYES_MAX_CAND + BAYES_N_BEST * 2 * d] candidate positions */
  double *acq;       /* [as cand] their acquisition values */
} bayes_state;

static int bayes_init(search_strategy *s, tune_err *err) {
  bayes_state *st = calloc(1, sizeof *st);
  if (!st) return tune_fail(err, TUNE_ENOMEM, "search_strategy_new: no memory for bayes");
  s->state = st;
  int rc = search_pool_init(&st->pool, s, 0xba7e5ull, err);
  if (rc) return rc;
  st->d = st->pool.n_free;
  /* (n + 40) / 60: 1 up to 79 points, 2 up to 139, 3 up to 199, ... A larger cold design (points /
     12, 3..10: the centre and maximin draws) was tried and lost more spaces than it won on
     docs/search.md's criteria (a) and (c): on GEMM the centre and the local steps from it are
     strong. A design of at least two points (the centre and one far draw) traded (c) for (b)
     on the design spaces and was not kept either. */
  uint32_t k = (st->pool.n + 2 * BAYES_INIT_PER / 3) / BAYES_INIT_PER;
  st->n_init = k < 1 ? 1 : k > BAYES_N_INIT_MAX ? BAYES_N_INIT_MAX : (int)k;
  for (int k = 0; k < st->d; k++) st->cost.log_ls[k] = st->feas.log_ls[k] = log(BAYES_LS_PRIOR);
  st->cost.g = st->feas.g = 1e-3;
  size_t n_cand = (size_t)BAYES_MAX_CAND + (size_t)BAYES_N_BEST * 2 * (size_t)(st->d + 1);
  st->cand = malloc(n_cand * sizeof(uint32_t));
  st->acq = malloc(n_cand * sizeof(double));
  if (!st->cand || !st->acq) return tune_fail(err, TUNE_ENOMEM, "search_strategy_new: no memory for bayes");
  return TUNE_OK;
}

static void bayes_state_free(bayes_state *st) {
  search_pool_free(&st->pool);
  free(st->obs);
  free(st->X);
  free(st->Xt);
  free(st->yt);
  free(st->y);
  gp *m[2] = {&st->cost, &st->feas};
  for (int i = 0; i < 2; i++) {
    free(m[i]->ys);
    free(m[i]->L);
    free(m[i]->alpha);
  }
  free(st->work);
  free(st->cand);
  free(st->acq);
  free(st->feat);
  free(st);
}

static void bayes_free(search_strategy *s) {
  if (!s->state) return;
  bayes_state_free(s->state);
  s->state = NULL;
}

/* Model coordinates of position pos: its value indexes (search_pool_coords), then its features. */
static void bayes_coords(const bayes_state *st, uint32_t pos, double *x) {
  search_pool_coords(&st->pool, pos, x);
  for (int k = 0; k < st->n_feat; k++) x[st->pool.n_free + k] = st->feat[(size_t)pos * (size_t)st->n_feat + (size_t)k];
}

/* Compile-time features as extra coordinates: each scaled to [0, 1] by its range over the space
 * (a constant one is left out: it tells the model nothing). */
static int bayes_features(search_strategy *s, const double *feat, int n_feat, tune_err *err) {
  bayes_state *st = s->state;
  uint32_t n = st->pool.n;
  int keep[BAYES_MAX_DIM], nk = 0;
  double lo[BAYES_MAX_DIM], hi[BAYES_MAX_DIM];
  for (int k = 0; k < n_feat && st->pool.n_free + nk < BAYES_MAX_DIM; k++) {
    lo[k] = INFINITY, hi[k] = -INFINITY;
    for (uint32_t i = 0; i < n; i++) {
      double v = feat[(size_t)i * (size_t)n_feat + (size_t)k];
      if (isnan(v)) continue;
      if (v < lo[k]) lo[k] = v;
      if (v > hi[k]) hi[k] = v;
    }
    if (hi[k] > lo[k]) keep[nk++] = k;
  }
  if (nk == 0) return TUNE_OK;
  free(st->feat);
  st->feat = malloc((size_t)n * (size_t)nk * sizeof(double));
  if (!st->feat) return tune_fail(err, TUNE_ENOMEM, "bayes: no memory for features");
  for (uint32_t i = 0; i < n; i++)
    for (int j = 0; j < nk; j++) {
      int k = keep[j];
      double v = feat[(size_t)i * (size_t)n_feat + (size_t)k];
      st->feat[(size_t)i * (size_t)nk + (size_t)j] = isnan(v) ? 0.5 : (v - lo[k]) / (hi[k] - lo[k]);
    }
  st->n_feat = nk;
  st->d = st->pool.n_free + nk;
  for (int k = st->pool.n_free; k < st->d; k++) st->cost.log_ls[k] = st->feas.log_ls[k] = log(BAYES_LS_PRIOR);
  return TUNE_OK;
}

/* ---- the Gaussian process ------------------------------------------------ */

static double matern52(const double *a, const double *b, const double *inv_ls, int d) {
  double r2 = 0;
  for (int k = 0; k < d; k++) {
    double t = (a[k] - b[k]) * inv_ls[k];
    r2 += t * t;
  }
  double r = sqrt(5.0 * r2);
  return (1.0 + r + r * r / 3.0) * exp(-r);
}

/* Kernel matrix (unit signal variance, noise ratio g) of the n training
 * points into L, factored in place (lower triangle; the strict upper triangle
 * is scratch: it holds the factor's columns as rows, L[k * n + i] = L[i * n + k]
 * for i > k, so that column j's updates read rows and run across i, where a
 * row-by-row Cholesky is one serial dot product per entry; each entry gets the
 * same operations in the same order either way). Returns 0, or -1 when not
 * positive definite. */
static int factor(bayes_state *st, gp *m, const double *log_ls, double g, int n) {
  int d = st->d;
  double inv_ls[BAYES_MAX_DIM];
  for (int k = 0; k < d; k++) inv_ls[k] = exp(-log_ls[k]);
  double *L = m->L;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++) L[i * n + j] = matern52(st->Xt + i * d, st->Xt + j * d, inv_ls, d);
    L[i * n + i] = 1.0 + g + 1e-9;
  }
  for (int j = 0; j < n; j++) {
    double s = L[j * n + j];
    for (int k = 0; k < j; k++) s -= L[j * n + k] * L[j * n + k];
    if (!(s > 0)) return -1;
    double ljj = sqrt(s);
    L[j * n + j] = ljj;
    const double *lj = L + j * n;
    int i = j + 1;
    for (; i + FACTOR_ROWS <= n; i += FACTOR_ROWS) { /* FACTOR_ROWS independent sums at once */
      double t[FACTOR_ROWS];
      for (int r = 0; r < FACTOR_ROWS; r++) t[r] = L[(i + r) * n + j];
      for (int k = 0; k < j; k++) {
        const double *col_k = L + k * n + i; /* col_k[r] = L[(i + r) * n + k] */
#pragma GCC unroll 8 /* FACTOR_ROWS: t stays in registers */
        for (int r = 0; r < FACTOR_ROWS; r++) t[r] -= col_k[r] * lj[k];
      }
      for (int r = 0; r < FACTOR_ROWS; r++) L[(i + r) * n + j] = L[j * n + i + r] = t[r] / ljj;
    }
    for (; i < n; i++) {
      double t = L[i * n + j];
      for (int k = 0; k < j; k++) t -= L[k * n + i] * lj[k];
      L[i * n + j] = L[j * n + i] = t / ljj;
    }
  }
  return 0;
}

/* Solve L v = b in place (forward substitution). */
static void solve_lower(const double *L, int n, double *v) {
  for (int i = 0; i < n; i++) {
    double t = v[i];
    const double *li = L + i * n;
    for (int k = 0; k < i; k++) t -= li[k] * v[k];
    v[i] = t / li[i];
  }
}

/* Solve L^T v = b in place (back substitution). */
static void solve_upper(const double *L, int n, double *v) {
  for (int i = n - 1; i >= 0; i--) {
    double t = v[i];
    for (int k = i + 1; k < n; k++) t -= L[k * n + i] * v[k];
    v[i] = t / L[i * n + i];
  }
}

/* Log marginal likelihood, s2 profiled out, plus the length-scale prior.
 * -INFINITY when the matrix does not factor. Leaves L factored. */
static double log_likelihood(bayes_state *st, gp *m, const double *log_ls, double g, int n) {
  if (factor(st, m, log_ls, g, n)) return -INFINITY;
  double *v = st->work, quad = 0, logdet = 0;
  memcpy(v, m->ys, (size_t)n * sizeof(double));
  solve_lower(m->L, n, v);
  for (int i = 0; i < n; i++) {
    quad += v[i] * v[i];
    logdet += log(m->L[i * n + i]);
  }
  double s2 = quad / n;
  if (s2 < 1e-12) s2 = 1e-12;
  double ll = -0.5 * n * log(s2) - logdet;
  for (int k = 0; k < st->d; k++) {
    double z = (log_ls[k] - log(BAYES_LS_PRIOR)) / BAYES_LS_PRIOR_SD;
    ll -= 0.5 * z * z;
  }
  return ll;
}

static void fit_hyper(bayes_state *st, gp *m, int n) {
  double best = log_likelihood(st, m, m->log_ls, m->g, n);
  double ls[BAYES_MAX_DIM];
  memcpy(ls, m->log_ls, sizeof ls);
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < N_NOISE; i++) {
      double ll = log_likelihood(st, m, ls, noise_grid[i], n);
      if (ll > best) {
        best = ll;
        m->g = noise_grid[i];
      }
    }
    for (int pass = 0; pass < 2; pass++) {
      double step = pass == 0 ? log(2.0) : 0.5 * log(2.0);
      int moved = 1;
      for (int sweep = 0; sweep < 4 && moved; sweep++) {
        moved = 0;
        for (int k = 0; k < st->d; k++) {
          for (int dir = -1; dir <= 1; dir += 2) {
            double old = ls[k], cand = old + dir * step;
            if (cand < log(BAYES_LS_MIN) || cand > log(BAYES_LS_MAX)) continue;
            ls[k] = cand;
            double ll = log_likelihood(st, m, ls, m->g, n);
            if (ll > best + 1e-9) {
              best = ll;
              moved = 1;
              break;
            }
            ls[k] = old;
          }
        }
      }
    }
  }
  memcpy(m->log_ls, ls, sizeof ls);
}

typedef struct ranked {
  double y; /* log cost, +inf for a failure */
  int i;    /* index into the observations */
} ranked;

static int by_rank(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->y != y->y) return x->y < y->y ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* Choose the training points: all of them, or past BAYES_MAX_TRAIN the best
 * 3/4 of that many and the latest of the others. Fills Xt, yt, n_train. */
static void select_training(bayes_state *st) {
  int n = st->n_obs, d = st->d;
  ranked *r = n > BAYES_MAX_TRAIN ? malloc((size_t)n * sizeof *r) : NULL;
  if (!r) { /* all (or, with no memory, the latest) */
    int first = n > st->tcap ? n - st->tcap : 0;
    st->n_train = n - first;
    if (st->n_train <= 0) return; /* no observations yet: the buffers may not exist (memcpy of NULL is UB) */
    memcpy(st->Xt, st->X + (size_t)first * (size_t)d, (size_t)st->n_train * (size_t)d * sizeof(double));
    memcpy(st->yt, st->y + first, (size_t)st->n_train * sizeof(double));
    return;
  }
  for (int i = 0; i < n; i++) {
    r[i].y = isnan(st->y[i]) ? INFINITY : st->y[i];
    r[i].i = i;
  }
  qsort(r, (size_t)n, sizeof *r, by_rank);
  int n_best = BAYES_MAX_TRAIN * 3 / 4, k = 0;
  uint8_t *taken = (uint8_t *)st->work; /* n bytes fit in n doubles */
  memset(taken, 0, (size_t)n);
  for (int j = 0; j < n_best; j++) taken[r[j].i] = 1;
  for (int i = n - 1; i >= 0 && n_best + k < BAYES_MAX_TRAIN; i--)
    if (!taken[i]) {
      taken[i] = 1;
      k++;
    }
  free(r);
  st->n_train = 0;
  for (int i = 0; i < n; i++) {
    if (!taken[i]) continue;
    memcpy(st->Xt + (size_t)st->n_train * (size_t)d, st->X + (size_t)i * (size_t)d, (size_t)d * sizeof(double));
    st->yt[st->n_train++] = st->y[i];
  }
}

/* Standardize m->ys (in place: raw targets in, standardized out), refit the
 * hyperparameters when due, factor, and solve for alpha. Returns 0, or -1
 * when the matrix does not factor even with more noise. */
static int fit_gp(bayes_state *st, gp *m, int n) {
  double mean = 0, var = 0;
  for (int i = 0; i < n; i++) mean += m->ys[i];
  mean /= n;
  for (int i = 0; i < n; i++) var += (m->ys[i] - mean) * (m->ys[i] - mean);
  double sd = sqrt(var / n);
  if (sd < 1e-9) sd = 1.0;
  for (int i = 0; i < n; i++) m->ys[i] = (m->ys[i] - mean) / sd;
  m->mean = mean;
  m->sd = sd;
  int seen = st->n_obs;
  if (m->fit_n == 0 || seen < 40 || seen >= m->fit_n + (m->fit_n + 19) / 20) {
    fit_hyper(st, m, n);
    m->fit_n = seen;
  }
  /* Factor with the fitted values (a fit leaves L at its last trial). */
  double ll = log_likelihood(st, m, m->log_ls, m->g, n);
  for (int i = 0; !isfinite(ll) && i < 6; i++) { /* numerically stuck: more noise */
    m->g *= 10;
    ll = log_likelihood(st, m, m->log_ls, m->g, n);
  }
  if (!isfinite(ll)) return -1;
  double *a = m->alpha, quad = 0;
  memcpy(a, m->ys, (size_t)n * sizeof(double));
  solve_lower(m->L, n, a);
  for (int i = 0; i < n; i++) quad += a[i] * a[i];
  m->s2 = quad / n > 1e-12 ? quad / n : 1e-12;
  solve_upper(m->L, n, a);
  return 0;
}

/* Choose the training set, cap its targets and fit the cost model; fit the
 * feasibility model when a failure is among the training points. Returns 0,
 * or -1 when there is nothing to model. */
static int build_model(bayes_state *st, double *best_ys) {
  select_training(st);
  int n = st->n_train;
  int m = 0, n_fail = 0;
  double *tmp = st->work; /* the successes' log costs, sorted */
  for (int i = 0; i < n; i++)
    if (!isnan(st->yt[i])) tmp[m++] = st->yt[i];
  if (m == 0) return -1;
  n_fail = n - m;
  for (int i = 1; i < m; i++) { /* insertion sort: cheap next to the fit */
    double t = tmp[i];
    int j = i;
    for (; j > 0 && tmp[j - 1] > t; j--) tmp[j] = tmp[j - 1];
    tmp[j] = t;
  }
  double cap = tmp[(m - 1) / 2];
  for (int i = 0; i < n; i++)
    st->cost.ys[i] = isnan(st->yt[i]) || st->yt[i] > cap ? cap : st->yt[i];
  if (fit_gp(st, &st->cost, n)) return -1;
  *best_ys = INFINITY;
  for (int i = 0; i < n; i++)
    if (!isnan(st->yt[i]) && st->cost.ys[i] < *best_ys) *best_ys = st->cost.ys[i];
  st->use_feas = 0;
  if (n_fail > 0 && BAYES_FEAS) {
    for (int i = 0; i < n; i++) st->feas.ys[i] = isnan(st->yt[i]) ? -1.0 : 1.0;
    st->use_feas = fit_gp(st, &st->feas, n) == 0;
  }
  return 0;
}

/* Posterior mean and standard deviation of model m at coordinates x, in
 * standardized units. */
static void predict(bayes_state *st, const gp *m, const double *x, double *mu, double *sd) {
  int n = st->n_train, d = st->d;
  double inv_ls[BAYES_MAX_DIM];
  for (int k = 0; k < d; k++) inv_ls[k] = exp(-m->log_ls[k]);
  double *v = st->work, mm = 0;
  for (int i = 0; i < n; i++) {
    v[i] = matern52(x, st->Xt + i * d, inv_ls, d);
    mm += v[i] * m->alpha[i];
  }
  solve_lower(m->L, n, v);
  double vv = 0;
  for (int i = 0; i < n; i++) vv += v[i] * v[i];
  double var = m->s2 * (1.0 - vv);
  *mu = mm;
  *sd = sqrt(var > 1e-12 * m->s2 ? var : 1e-12 * m->s2);
}

/* predict at BAYES_BATCH points x[c] at once, into mu[c] and sd[c]: per point the same
 * operations in the same order as predict (so the same bits), with the triangular solve's inner
 * loop across the points instead of along a row of L: the row is read once for all of them and
 * the loop vectorizes, where predict's one-point solve is a serial dot product. */
static void predict_batch(bayes_state *st, const gp *m, const double (*x)[BAYES_MAX_DIM], double *mu,
                          double *sd) {
  enum { B = BAYES_BATCH };
  int n = st->n_train, d = st->d;
  double inv_ls[BAYES_MAX_DIM];
  for (int k = 0; k < d; k++) inv_ls[k] = exp(-m->log_ls[k]);
  double v[BAYES_MAX_TRAIN * B]; /* v[i * B + c]: point c's row i (32 KiB of stack) */
  double mm[B] = {0}, vv[B] = {0}, t[B];
  for (int i = 0; i < n; i++)
    for (int c = 0; c < B; c++) {
      v[i * B + c] = matern52(x[c], st->Xt + i * d, inv_ls, d);
      mm[c] += v[i * B + c] * m->alpha[i];
    }
  for (int i = 0; i < n; i++) {
    const double *li = m->L + i * n;
    for (int c = 0; c < B; c++) t[c] = v[i * B + c];
    for (int k = 0; k < i; k++) {
      const double lik = li[k], *vk = v + k * B;
      for (int c = 0; c < B; c++) t[c] -= lik * vk[c];
    }
    for (int c = 0; c < B; c++) v[i * B + c] = t[c] / li[i];
  }
  for (int i = 0; i < n; i++)
    for (int c = 0; c < B; c++) vv[c] += v[i * B + c] * v[i * B + c];
  for (int c = 0; c < B; c++) {
    double var = m->s2 * (1.0 - vv[c]);
    mu[c] = mm[c];
    sd[c] = sqrt(var > 1e-12 * m->s2 ? var : 1e-12 * m->s2);
  }
}

/* Acquisition at the positions pos[0..n) into a[0..n): expected improvement below best_ys,
 * times the probability that the point does not fail when the feasibility model is in use
 * (constrained expected improvement: a point the recipe or the compiler rejects costs an
 * evaluation and finds nothing). */
static void acquisition(bayes_state *st, const uint32_t *pos, int n, double best_ys, double *a) {
  for (int c0 = 0; c0 < n; c0 += BAYES_BATCH) {
    double x[BAYES_BATCH][BAYES_MAX_DIM], mu[BAYES_BATCH], sd[BAYES_BATCH];
    int nb = n - c0 < BAYES_BATCH ? n - c0 : BAYES_BATCH;
    for (int c = 0; c < BAYES_BATCH; c++) bayes_coords(st, pos[c0 + (c < nb ? c : 0)], x[c]); /* pad: any point */
    predict_batch(st, &st->cost, (const double (*)[BAYES_MAX_DIM])x, mu, sd);
    for (int c = 0; c < nb; c++) {
      double imp = best_ys - mu[c] - BAYES_XI;
      double z = imp / sd[c];
      double cdf = 0.5 * erfc(-z / sqrt(2.0));
      double pdf = exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
      a[c0 + c] = imp * cdf + sd[c] * pdf;
    }
    if (!st->use_feas) continue;
    /* the label's posterior in label units (+1 success, -1 failure); probit */
    predict_batch(st, &st->feas, (const double (*)[BAYES_MAX_DIM])x, mu, sd);
    for (int c = 0; c < nb; c++) {
      double lm = st->feas.mean + st->feas.sd * mu[c], ls = st->feas.sd * sd[c];
      double pf = 0.5 * erfc(-(lm / ls) / sqrt(2.0));
      a[c0 + c] *= pow(pf, BAYES_FEAS_POW);
    }
  }
}

/* ---- proposals ----------------------------------------------------------- */

/* Squared distance between positions a and b in normalized coordinates. */
static double dist2(const bayes_state *st, uint32_t a, uint32_t b) {
  double xa[BAYES_MAX_DIM], xb[BAYES_MAX_DIM], s = 0;
  bayes_coords(st, a, xa);
  bayes_coords(st, b, xb);
  for (int k = 0; k < st->d; k++) s += (xa[k] - xb[k]) * (xa[k] - xb[k]);
  return s;
}

/* The unseen position nearest to the centre of the space: least L1 distance,
 * in normalized coordinates, to 0.5 in every coordinate; ties (a parameter
 * with an even number of values has two middle values) drawn uniformly by
 * reservoir sampling. -1 when every point is seen. */
static long centre_point(bayes_state *st) {
  search_pool *p = &st->pool;
  long pick = -1;
  double pick_d = INFINITY;
  uint32_t n_tied = 0;
  double x[SEARCH_MAX_PARAMS];
  for (uint32_t i = 0; i < p->n; i++) {
    if (p->seen[i]) continue;
    search_pool_coords(p, i, x);
    double d = 0;
    for (int k = 0; k < p->n_free; k++) d += fabs(x[k] - 0.5);
    if (d < pick_d - 1e-9) {
      pick_d = d;
      pick = i;
      n_tied = 1;
    } else if (d < pick_d + 1e-9 && search_rng_below(&p->rng, ++n_tied) == 0) {
      pick = i;
    }
  }
  return pick;
}

/* Of BAYES_INIT_DRAWS random unseen points, the one farthest (least squared
 * distance to its nearest) from the points queued or observed; -1 when every
 * point is seen. */
static long farthest_draw(bayes_state *st) {
  search_pool *p = &st->pool;
  long pick = -1;
  double pick_d = -1;
  uint32_t draws[BAYES_INIT_DRAWS];
  int nd = 0;
  for (int t = 0; t < BAYES_INIT_DRAWS; t++) {
    long q = search_pool_random_unseen(p);
    if (q < 0) break;
    p->seen[q] = 2; /* keep the draws distinct; undone below */
    draws[nd++] = (uint32_t)q;
    double dmin = INFINITY;
    for (uint32_t i = 0; i < p->queue_len; i++) {
      double dd = dist2(st, (uint32_t)q, p->queue[i]);
      if (dd < dmin) dmin = dd;
    }
    for (int i = 0; i < st->n_obs; i++) {
      double dd = dist2(st, (uint32_t)q, st->obs[i]);
      if (dd < dmin) dmin = dd;
    }
    if (dmin > pick_d) {
      pick_d = dmin;
      pick = q;
    }
  }
  for (int i = 0; i < nd; i++) p->seen[draws[i]] = 0;
  /* The draws not picked were consumed from the shuffle; the pool finds
   * them again by its final scan, so nothing is lost. */
  return pick;
}

/* The initial design: the centre point, then n_init - 1 points, each the
 * unseen draw farthest from the points chosen or seen so far (maximin over
 * BAYES_INIT_DRAWS draws); after a warm start, n_init such farthest draws
 * and no centre. n_init is at least `parallel`, the points measured at once. */
static int initial_design(bayes_state *st, int parallel, tune_err *err) {
  search_pool *p = &st->pool;
  int c0 = 1; /* design points placed so far, the centre included */
  int n_init = st->n_init > parallel ? st->n_init : parallel; /* a batch of k costs the wall time of one */
  if (st->n_obs > 0) {
    /* warm start: the points seen already stand for the exploiting part; a centre point would often
       sit in their region, so the whole design fills space away from them instead */
    c0 = 0;
  } else {
    long centre = centre_point(st);
    if (centre >= 0) {
      int rc = search_pool_push(p, (uint32_t)centre, err);
      if (rc) return rc;
    }
  }
  for (int c = c0; c < n_init && p->n_seen < p->n; c++) {
    int rc = search_pool_push(p, (uint32_t)farthest_draw(st), err);
    if (rc) return rc;
  }
  return TUNE_OK;
}

/* Candidate positions for the next pick into st->cand; returns the count. */
static int candidates(bayes_state *st) {
  search_pool *p = &st->pool;
  uint32_t n_unseen = p->n - p->n_seen;
  int n = 0;
  if (n_unseen <= BAYES_MAX_CAND) {
    for (uint32_t i = 0; i < p->n; i++)
      if (!p->seen[i]) st->cand[n++] = i;
    return n;
  }
  /* Random unseen points (rejection: more than BAYES_MAX_CAND are unseen),
   * then the unseen neighbours of the best observed points. */
  for (int t = 0; n < BAYES_MAX_CAND && t < 64 * BAYES_MAX_CAND; t++) {
    uint32_t q = (uint32_t)search_rng_below(&p->rng, p->n);
    if (p->seen[q]) continue;
    p->seen[q] = 2;
    st->cand[n++] = q;
  }
  uint32_t best[BAYES_N_BEST];
  int nb = 0;
  for (int i = 0; i < st->n_obs; i++) {
    if (isnan(st->y[i])) continue;
    int j = nb < BAYES_N_BEST ? nb++ : BAYES_N_BEST;
    while (j > 0 && st->y[i] < st->y[best[j - 1]]) {
      if (j < BAYES_N_BEST) best[j] = best[j - 1];
      j--;
    }
    if (j < BAYES_N_BEST) best[j] = (uint32_t)i;
  }
  for (int b = 0; b < nb; b++) {
    uint32_t nbr[2 * SEARCH_MAX_PARAMS];
    int k = search_pool_neighbours(p, st->obs[best[b]], nbr, 2 * p->n_free);
    for (int i = 0; i < k; i++)
      if (!p->seen[nbr[i]]) {
        p->seen[nbr[i]] = 2;
        st->cand[n++] = nbr[i];
      }
  }
  for (int i = 0; i < n; i++) p->seen[st->cand[i]] = 0;
  return n;
}

/* Unseen points one or two unit steps from position pos into out[]. */
static int local_candidates(bayes_state *st, uint32_t pos, uint32_t *out, int max) {
  search_pool *p = &st->pool;
  const search_space *sp = p->space;
  int vi[SEARCH_MAX_PARAMS], n = 0;
  search_point_decode(sp, sp->points[pos], vi);
  for (int a = 0; a < p->n_free; a++) {
    int i = p->free_param[a];
    for (int di = -1; di <= 1; di += 2) {
      if (vi[i] + di < 0 || vi[i] + di >= sp->n_values[i]) continue;
      vi[i] += di;
      long q = search_space_find(sp, search_point_encode(sp, vi));
      if (q >= 0 && !p->seen[q] && n < max) { p->seen[q] = 2; out[n++] = (uint32_t)q; }
      for (int b = a + 1; b < p->n_free; b++) {
        int j = p->free_param[b];
        for (int dj = -1; dj <= 1; dj += 2) {
          if (vi[j] + dj < 0 || vi[j] + dj >= sp->n_values[j]) continue;
          vi[j] += dj;
          q = search_space_find(sp, search_point_encode(sp, vi));
          if (q >= 0 && !p->seen[q] && n < max) { p->seen[q] = 2; out[n++] = (uint32_t)q; }
          vi[j] -= dj;
        }
      }
      vi[i] -= di;
    }
  }
  for (int k = 0; k < n; k++) p->seen[out[k]] = 0;
  return n;
}

/* The candidates of a local step into st->cand (the unseen points one or two unit steps from the
 * best point); returns the count, 0 when there are none. */
static int local_step_candidates(bayes_state *st) {
  int bi = -1;
  for (int i = 0; i < st->n_obs; i++)
    if (!isnan(st->y[i]) && (bi < 0 || st->y[i] < st->y[bi])) bi = i;
  return bi >= 0 ? local_candidates(st, st->obs[bi], st->cand, BAYES_MAX_CAND) : 0;
}

/* One model step: the pick of largest acquisition among the local or the global candidates (two
 * local steps, then a global one), or a random unseen point while there is nothing to model. */
static int model_step(bayes_state *st, int *modelled, tune_err *err) {
  search_pool *p = &st->pool;
  double best_ys = 0;
  *modelled = 0;
  if (build_model(st, &best_ys) != 0) return search_pool_push(p, (uint32_t)search_pool_random_unseen(p), err);
  *modelled = 1;
  int nc = 0;
  if (st->n_steps++ % 3 != 2) nc = local_step_candidates(st); /* two local steps, then a global one */
  if (nc == 0) nc = candidates(st);
  long pick = -1;
  double pick_ei = -INFINITY;
  double *acq = st->acq;
  acquisition(st, st->cand, nc, best_ys, acq);
  for (int i = 0; i < nc; i++) {
    double ei = acq[i];
    if (ei > pick_ei) {
      pick_ei = ei;
      pick = st->cand[i];
    }
  }
  if (pick < 0) pick = search_pool_random_unseen(p);
  return search_pool_push(p, (uint32_t)pick, err);
}

static void believe(bayes_state *st, uint32_t pos);

static int bayes_next(search_strategy *s, uint64_t *out, int max, int *n_out, tune_err *err) {
  bayes_state *st = s->state;
  search_pool *p = &st->pool;
  if (search_pool_queued(p) == 0 && p->n_seen < p->n) {
    int rc = TUNE_OK;
    if (!st->design_done) {
      st->design_done = 1;
      rc = initial_design(st, s->parallel, err);
    } else {
      /* s->parallel points per batch: after each pick but the last, the model takes its own
         prediction there as if observed (below), so the next pick looks elsewhere */
      for (int j = 0; j < s->parallel && rc == TUNE_OK && p->n_seen < p->n; j++) {
        int modelled = 0;
        rc = model_step(st, &modelled, err);
        if (rc == TUNE_OK && modelled && j + 1 < s->parallel) believe(st, p->queue[p->queue_len - 1]);
      }
    }
    if (rc) return rc;
  }
  *n_out = search_pool_serve(p, out, max);
  return TUNE_OK;
}

/* Grow the arrays to hold one more observation; -1 on no memory (then
 * nothing changed that matters: the old arrays stay valid). */
static int grow(bayes_state *st) {
  if (st->n_obs < st->cap) return 0;
  int cap = st->cap ? 2 * st->cap : 32;
  int tcap = cap < BAYES_MAX_TRAIN ? cap : BAYES_MAX_TRAIN;
  size_t c = (size_t)cap, t = (size_t)tcap, d = (size_t)(st->d ? st->d : 1);
  uint32_t *obs = realloc(st->obs, c * sizeof(uint32_t));
  if (obs) st->obs = obs;
  double *X = realloc(st->X, c * d * sizeof(double));
  if (X) st->X = X;
  double *y = realloc(st->y, c * sizeof(double));
  if (y) st->y = y;
  double *work = realloc(st->work, c * sizeof(double));
  if (work) st->work = work;
  if (!obs || !X || !y || !work) return -1;
  if (tcap > st->tcap) {
    double *Xt = realloc(st->Xt, t * d * sizeof(double));
    if (Xt) st->Xt = Xt;
    double *yt = realloc(st->yt, t * sizeof(double));
    if (yt) st->yt = yt;
    if (!Xt || !yt) return -1;
    gp *m[2] = {&st->cost, &st->feas};
    for (int i = 0; i < 2; i++) {
      double *ys = realloc(m[i]->ys, t * sizeof(double));
      if (ys) m[i]->ys = ys;
      double *alpha = realloc(m[i]->alpha, t * sizeof(double));
      if (alpha) m[i]->alpha = alpha;
      double *L = malloc(t * t * sizeof(double));
      if (!ys || !alpha || !L) {
        free(L);
        return -1;
      }
      free(m[i]->L);
      m[i]->L = L;
    }
    st->tcap = tcap;
  }
  st->cap = cap;
  return 0;
}

/* Kriging believer (Ginsbourger et al., 2010): take the cost model's posterior mean at position pos
 * as if it were observed there, so that the next pick of the same batch sees less to gain around pos
 * and goes elsewhere. The real observation replaces it (bayes_observe keeps the latest of a
 * position). The model of the current step must be built (build_model). */
static void believe(bayes_state *st, uint32_t pos) {
  double x[BAYES_MAX_DIM], mu, sd;
  bayes_coords(st, pos, x);
  predict(st, &st->cost, x, &mu, &sd);
  if (grow(st)) return; /* no memory: the next pick goes without it */
  int i = st->n_obs++;
  st->obs[i] = pos;
  memcpy(st->X + (size_t)i * (size_t)st->d, x, (size_t)st->d * sizeof(double));
  st->y[i] = st->cost.mean + st->cost.sd * mu;
}

static void bayes_observe(search_strategy *s, uint64_t point, double cost_ns) {
  bayes_state *st = s->state;
  long pos = search_pool_observe(&st->pool, point, cost_ns);
  if (pos < 0) return;
  for (int i = 0; i < st->n_obs; i++)
    if (st->obs[i] == (uint32_t)pos) { /* measured again: keep the latest */
      st->y[i] = cost_ns >= 0 ? search_pool_score(&st->pool, (uint32_t)pos) : NAN;
      return;
    }
  if (grow(st)) return; /* no memory: the model goes without this point */
  int i = st->n_obs++;
  st->obs[i] = (uint32_t)pos;
  bayes_coords(st, (uint32_t)pos, st->X + (size_t)i * (size_t)st->d);
  st->y[i] = cost_ns >= 0 ? search_pool_score(&st->pool, (uint32_t)pos) : NAN;
}

/* ---- peek: the next step, taken on a copy -------------------------------- */

static void *copy_of(const void *p, size_t bytes, int *failed) {
  if (!p || !bytes) return NULL;
  void *q = malloc(bytes);
  if (q) memcpy(q, p, bytes);
  else *failed = 1;
  return q;
}

/* A deep copy of st (its arrays at their allocated sizes, as grow() and search_pool_push left them),
 * NULL on no memory. */
static bayes_state *bayes_copy(const bayes_state *st) {
  bayes_state *c = malloc(sizeof *c);
  if (!c) return NULL;
  *c = *st;
  const search_pool *p = &st->pool;
  size_t n = p->n, cap = (size_t)st->cap, t = (size_t)st->tcap, d = (size_t)(st->d ? st->d : 1);
  int failed = 0;
  c->pool.seen = copy_of(p->seen, n, &failed);
  c->pool.cost = copy_of(p->cost, n * sizeof(double), &failed);
  c->pool.order = copy_of(p->order, n * sizeof(uint32_t), &failed);
  c->pool.queue = copy_of(p->queue, (size_t)p->queue_cap * sizeof(uint32_t), &failed);
  c->feat = copy_of(st->feat, n * (size_t)st->n_feat * sizeof(double), &failed);
  c->obs = copy_of(st->obs, cap * sizeof(uint32_t), &failed);
  c->X = copy_of(st->X, cap * d * sizeof(double), &failed);
  c->y = copy_of(st->y, cap * sizeof(double), &failed);
  c->work = copy_of(st->work, cap * sizeof(double), &failed);
  c->Xt = copy_of(st->Xt, t * d * sizeof(double), &failed);
  c->yt = copy_of(st->yt, t * sizeof(double), &failed);
  gp *cm[2] = {&c->cost, &c->feas};
  const gp *sm[2] = {&st->cost, &st->feas};
  for (int i = 0; i < 2; i++) {
    cm[i]->ys = copy_of(sm[i]->ys, t * sizeof(double), &failed);
    cm[i]->alpha = copy_of(sm[i]->alpha, t * sizeof(double), &failed);
    cm[i]->L = copy_of(sm[i]->L, t * t * sizeof(double), &failed);
  }
  size_t n_cand = (size_t)BAYES_MAX_CAND + (size_t)BAYES_N_BEST * 2 * (size_t)(p->n_free + 1); /* as bayes_init */
  c->cand = copy_of(st->cand, n_cand * sizeof(uint32_t), &failed);
  c->acq = copy_of(st->acq, n_cand * sizeof(double), &failed);
  if (failed) {
    bayes_state_free(c);
    return NULL;
  }
  return c;
}

/* The points proposed and not observed yet (at most SEARCH_MAX_PARALLEL of them) take the cost
 * model's mean as if observed (believe): they will be observed before the next step, most often
 * not as a new best, and where they are the next step looks elsewhere. The model must be built.
 * Returns how many were taken; -1 on no memory. */
static int believe_pending(bayes_state *st) {
  const search_pool *p = &st->pool;
  uint8_t *in_model = calloc(p->n, 1); /* already a training point: observed, or believed by a batch */
  if (!in_model) return -1;
  for (int i = 0; i < st->n_obs; i++) in_model[st->obs[i]] = 1;
  int k = 0;
  for (uint32_t i = 0; i < p->n && k < SEARCH_MAX_PARALLEL; i++)
    if (p->seen[i] && isnan(p->cost[i]) && !in_model[i]) {
      believe(st, i);
      k++;
    }
  free(in_model);
  return k;
}

/* Appends to top[] (n of max used, the positions in top_pos[]) the nc candidates of st->cand not
 * there yet, ranked by acquisition (largest first; ties in candidate order, as model_step picks);
 * returns the new n. */
static int rank_candidates(bayes_state *st, int nc, double best_ys, uint64_t *top, uint32_t *top_pos,
                           double *top_a, int n, int max) {
  int n0 = n;
  acquisition(st, st->cand, nc, best_ys, st->acq);
  for (int i = 0; i < nc; i++) {
    uint32_t q = st->cand[i];
    int dup = 0;
    for (int j = 0; j < n0 && !dup; j++) dup = top_pos[j] == q;
    double a = dup ? NAN : st->acq[i];
    if (isnan(a)) continue;
    int j = n < max ? n++ : max;
    for (; j > n0 && a > top_a[j - 1]; j--)
      if (j < max) {
        top_pos[j] = top_pos[j - 1];
        top_a[j] = top_a[j - 1];
      }
    if (j < max) {
      top_pos[j] = q;
      top_a[j] = a;
    }
  }
  for (int j = n0; j < n; j++) top[j] = st->pool.space->points[top_pos[j]];
  return n;
}

/* The next model step on the copy c, its candidates ranked instead of one picked: those of the step
 * next_batch takes (local or global), then, while max allows, the global ones after a local step
 * (the step after next may be global; its random candidates are drawn from the same stream). */
static int peek_step(bayes_state *c, uint64_t *out, int max, int *n_out, tune_err *err) {
  double best_ys = 0;
  *n_out = 0;
  if (build_model(c, &best_ys) != 0) { /* nothing to model: the step draws at random */
    long q = search_pool_random_unseen(&c->pool);
    if (q >= 0) out[(*n_out)++] = c->pool.space->points[q];
    return TUNE_OK;
  }
  int nb = believe_pending(c);
  if (nb < 0) return tune_fail(err, TUNE_ENOMEM, "search_strategy_peek: no memory (bayes)");
  if (nb > 0 && build_model(c, &best_ys) != 0) return TUNE_OK;
  uint32_t *pos = malloc((size_t)max * sizeof(uint32_t));
  double *acq = malloc((size_t)max * sizeof(double));
  if (!pos || !acq) {
    free(pos);
    free(acq);
    return tune_fail(err, TUNE_ENOMEM, "search_strategy_peek: no memory (bayes)");
  }
  int n = 0, local = c->n_steps % 3 != 2, nc = local ? local_step_candidates(c) : 0;
  if (nc > 0) n = rank_candidates(c, nc, best_ys, out, pos, acq, n, max);
  if (n < max) n = rank_candidates(c, candidates(c), best_ys, out, pos, acq, n, max);
  free(pos);
  free(acq);
  *n_out = n;
  return TUNE_OK;
}

/* What next_batch would serve next: the points still queued, else the initial design, else the
 * next model step's candidates ranked (peek_step), all taken on a copy of the state. */
static int bayes_peek(const search_strategy *s, uint64_t *out, int max, int *n_out, tune_err *err) {
  const bayes_state *st = s->state;
  *n_out = 0;
  if (search_pool_queued(&st->pool) == 0 && st->pool.n_seen >= st->pool.n) return TUNE_OK;
  bayes_state *c = bayes_copy(st);
  if (!c) return tune_fail(err, TUNE_ENOMEM, "search_strategy_peek: no memory to copy bayes");
  int rc = TUNE_OK;
  if (search_pool_queued(&c->pool) == 0 && !c->design_done) {
    c->design_done = 1;
    rc = initial_design(c, s->parallel, err);
  }
  if (!rc && search_pool_queued(&c->pool)) *n_out = search_pool_serve(&c->pool, out, max);
  else if (!rc) rc = peek_step(c, out, max, n_out, err);
  bayes_state_free(c);
  return rc;
}

const search_strategy_vt search_bayes_vt = {
    .name = "bayes", .init = bayes_init, .next_batch = bayes_next, .peek = bayes_peek,
    .observe = bayes_observe, .features = bayes_features, .free = bayes_free};
