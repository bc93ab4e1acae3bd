/* strategy_peek_test.c: search_strategy_peek, the strategies' guesses of their next proposals.
 *
 * Peeks change nothing: every strategy, run twice on the same synthetic spaces and costs, once
 * without peeks and once peeking after each batch is proposed (its points not observed yet, as
 * tune run guesses while the GPU measures) and again before each next_batch, proposes the same
 * sequence, bit for bit. Cases: a 360-point space with a constraint and a failing region, a warm
 * start (points observed before the first proposal), batches of 1 and 8; bayes also with two
 * points per batch (set_parallel), with compile-time features, and on a 4096-point space (past
 * the 2048 candidates of its global step, which draws them at random).
 * What a peek gives: points of the space, distinct, never proposed or observed, at most max;
 * exhaustive and random guess exactly their next points. bayes, guessing while its last proposal
 * is measured, names its next proposal among 16 guesses more often than the 16 unit-step
 * neighbours of the best point do (the guess tuner/speculate.c made before peeks), on both spaces.
 * Exit status 0 when every CHECK passed. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "search.h"

#define MAX_EVALS 90
#define PEEK_MAX 16

/* 5 x 4 x 6 x 3; parameter 0 at 4 with parameter 1 at 3 is rejected (constraint at level 1). */
static int reject_corner(void *ctx, int constraint, const int *v, int n_bound, tune_err *err) {
  (void)ctx, (void)constraint, (void)err;
  if (n_bound < 2) return SEARCH_UNDECIDED;
  return v[0] == 4 && v[1] == 3 ? SEARCH_FAIL : SEARCH_PASS;
}

static search_space *small_space(void) {
  static const int nv[4] = {5, 4, 6, 3};
  static const int level[1] = {1};
  search_space_def def = {.n_params = 4, .n_values = nv, .n_constraints = 1, .constraint_level = level,
                          .check = reject_corner};
  search_space *sp = NULL;
  tune_err err;
  tune_err_clear(&err);
  return search_space_enumerate(&def, &sp, &err) == TUNE_OK ? sp : NULL;
}

static search_space *large_space(void) {
  static const int nv[3] = {16, 16, 16};
  search_space_def def = {.n_params = 3, .n_values = nv};
  search_space *sp = NULL;
  tune_err err;
  tune_err_clear(&err);
  return search_space_enumerate(&def, &sp, &err) == TUNE_OK ? sp : NULL;
}

/* A bowl with a ripple; the points whose value indexes add up to a multiple of 7 fail. */
static double cost_of(const search_space *sp, uint64_t point) {
  int v[SEARCH_MAX_PARAMS], sum = 0;
  search_point_decode(sp, point, v);
  double s = 0;
  for (int k = 0; k < sp->n_params; k++) {
    double c = 0.6 * (sp->n_values[k] - 1) - v[k];
    s += c * c * (1 + k);
    sum += v[k];
  }
  if (sum % 7 == 0) return -1;
  return 1000.0 + 10.0 * s + 30.0 * sin(1.3 * v[0] + v[sp->n_params - 1]);
}

static double feature_of(const search_space *sp, size_t i) {
  int v[SEARCH_MAX_PARAMS];
  search_point_decode(sp, sp->points[i], v);
  return (double)(v[0] * v[1] % 5);
}

typedef struct run_opts {
  const char *strategy;
  int batch;    /* next_batch's max */
  int parallel; /* set_parallel's k, 0: not called */
  int warm;     /* observe the space's last point before the first proposal */
  int features; /* set one compile-time feature */
  int peek;     /* peek after each batch is proposed and before each next_batch */
} run_opts;

typedef struct run_out {
  uint64_t props[MAX_EVALS + 64];
  int n;           /* proposals made */
  int bad_peeks;   /* peeks with a point outside the space, seen before, repeated, or too many */
  int exact_miss;  /* peeks before next_batch whose points are not the next proposals (exhaustive, random) */
  int steps, hits, nbr_hits; /* batches of one point after 10 evaluations, and of those the ones whose
                                point the pending peek / the best's unit-step neighbours named */
} run_out;

static int seen_in(const uint64_t *pts, int n, uint64_t q) {
  for (int i = 0; i < n; i++)
    if (pts[i] == q) return 1;
  return 0;
}

/* Checks one peek's points against what the strategy proposed or was told so far. */
static void check_peek(const search_space *sp, const uint64_t *g, int n, int max, const uint64_t *props,
                       int n_props, uint64_t warm, int has_warm, run_out *o) {
  int bad = n < 0 || n > max;
  for (int i = 0; i < n && !bad; i++)
    bad = search_space_find(sp, g[i]) < 0 || seen_in(props, n_props, g[i]) || seen_in(g, i, g[i]) ||
          (has_warm && g[i] == warm);
  o->bad_peeks += bad;
}

/* The unit-step neighbours of the best observed point (the guess before peeks), up to max. */
static int neighbours_of_best(const search_strategy *s, const search_space *sp, uint64_t *out, int max) {
  uint64_t best;
  if (!search_strategy_best(s, &best, NULL)) return 0;
  return search_point_neighbours(sp, best, out, max);
}

static void run(const search_space *sp, const run_opts *ro, uint64_t seed, run_out *o) {
  memset(o, 0, sizeof *o);
  search_strategy *s = NULL;
  tune_err err;
  tune_err_clear(&err);
  if (search_strategy_new(ro->strategy, sp, seed, &s, &err) != TUNE_OK) {
    o->n = -1;
    return;
  }
  if (ro->parallel) CHECK(search_strategy_set_parallel(s, ro->parallel, &err) == TUNE_OK);
  if (ro->features) {
    double *feat = malloc(sp->n_points * sizeof *feat);
    for (size_t i = 0; feat && i < sp->n_points; i++) feat[i] = feature_of(sp, i);
    CHECK(feat && search_strategy_set_features(s, feat, 1, &err) == TUNE_OK);
    free(feat);
  }
  uint64_t warm = sp->points[sp->n_points - 1];
  if (ro->warm) search_strategy_observe(s, warm, cost_of(sp, warm));
  uint64_t pre[PEEK_MAX], guess[PEEK_MAX], nbr[PEEK_MAX];
  int n_pre = 0, n_guess = 0, n_nbr = 0;
  int exact = !strcmp(ro->strategy, "exhaustive") || !strcmp(ro->strategy, "random");
  while (o->n < MAX_EVALS) {
    if (ro->peek) { /* before next_batch: everything proposed is observed */
      CHECK(search_strategy_peek(s, pre, PEEK_MAX, &n_pre, &err) == TUNE_OK);
      check_peek(sp, pre, n_pre, PEEK_MAX, o->props, o->n, warm, ro->warm, o);
    }
    uint64_t pts[64];
    int n = 0;
    if (search_strategy_next_batch(s, pts, ro->batch, &n, &err) != TUNE_OK || n == 0) break;
    if (ro->peek && exact)
      for (int i = 0; i < n && i < n_pre; i++) o->exact_miss += pre[i] != pts[i];
    if (ro->peek && n == 1 && o->n >= 10) { /* a model step of bayes: was it guessed? */
      o->steps++;
      o->hits += seen_in(guess, n_guess, pts[0]);
      o->nbr_hits += seen_in(nbr, n_nbr, pts[0]);
    }
    memcpy(o->props + o->n, pts, (size_t)n * sizeof *pts);
    o->n += n;
    if (ro->peek) { /* while the batch is measured: tune run's guess, and the one before peeks */
      CHECK(search_strategy_peek(s, guess, PEEK_MAX, &n_guess, &err) == TUNE_OK);
      check_peek(sp, guess, n_guess, PEEK_MAX, o->props, o->n, warm, ro->warm, o);
      n_nbr = neighbours_of_best(s, sp, nbr, PEEK_MAX);
    }
    for (int i = 0; i < n; i++) search_strategy_observe(s, pts[i], cost_of(sp, pts[i]));
  }
  search_strategy_free(s);
}

/* The same proposals with and without peeks; the peeks' points valid (and exact where promised).
 * Adds the guess counts of the peeking run to *hits. */
static void same_with_peeks(const search_space *sp, run_opts ro, uint64_t seed, run_out *hits) {
  static run_out plain, peeked;
  ro.peek = 0;
  run(sp, &ro, seed, &plain);
  ro.peek = 1;
  run(sp, &ro, seed, &peeked);
  int same = plain.n > 0 && plain.n == peeked.n && !memcmp(plain.props, peeked.props, (size_t)plain.n * sizeof(uint64_t));
  CHECK(same);
  CHECK(peeked.bad_peeks == 0);
  CHECK(peeked.exact_miss == 0);
  if (!same || peeked.bad_peeks || peeked.exact_miss)
    fprintf(stderr, "  %s seed %llu batch %d parallel %d warm %d features %d: %d vs %d proposals, %d bad peeks, %d inexact\n",
            ro.strategy, (unsigned long long)seed, ro.batch, ro.parallel, ro.warm, ro.features, plain.n, peeked.n,
            peeked.bad_peeks, peeked.exact_miss);
  hits->steps += peeked.steps;
  hits->hits += peeked.hits;
  hits->nbr_hits += peeked.nbr_hits;
}

int main(void) {
  search_space *small = small_space(), *large = large_space();
  CHECK(small && small->n_points == 5 * 4 * 6 * 3 - 6 * 3);
  CHECK(large && large->n_points == 4096);
  if (!small || !large) return 1;
  run_out hits_small = {0}, hits_large = {0}, ignored = {0};
  for (int i = 0; search_strategy_names[i]; i++) {
    const char *name = search_strategy_names[i];
    for (uint64_t seed = 1; seed <= 3; seed++) {
      same_with_peeks(small, (run_opts){.strategy = name, .batch = 1}, seed,
                      strcmp(name, "bayes") ? &ignored : &hits_small);
      same_with_peeks(small, (run_opts){.strategy = name, .batch = 8, .warm = 1}, seed, &ignored);
    }
  }
  for (uint64_t seed = 1; seed <= 3; seed++) {
    same_with_peeks(small, (run_opts){.strategy = "bayes", .batch = 4, .parallel = 2}, seed, &ignored);
    same_with_peeks(small, (run_opts){.strategy = "bayes", .batch = 1, .warm = 1, .features = 1}, seed, &ignored);
    same_with_peeks(large, (run_opts){.strategy = "bayes", .batch = 1}, seed, &hits_large);
  }
  /* a peek refuses bad arguments and changes nothing when it does */
  search_strategy *s = NULL;
  tune_err err;
  tune_err_clear(&err);
  uint64_t g[4];
  int n = -1;
  CHECK(search_strategy_new("bayes", small, 1, &s, &err) == TUNE_OK);
  CHECK(search_strategy_peek(s, g, 0, &n, &err) == TUNE_EINVAL && n == 0);
  CHECK(search_strategy_peek(s, NULL, 4, &n, &err) == TUNE_EINVAL);
  /* before anything is proposed, bayes's guess is its design (6 points here): the centre point first */
  CHECK(search_strategy_peek(s, g, 4, &n, &err) == TUNE_OK && n == 4);
  uint64_t first;
  int n_first = 0;
  CHECK(search_strategy_next_batch(s, &first, 1, &n_first, &err) == TUNE_OK && n_first == 1 && first == g[0]);
  search_strategy_free(s);

  printf("bayes next proposal among 16 guesses: peek %d of %d steps, unit steps from the best %d (small space); "
         "peek %d of %d, unit steps %d (large space)\n",
         hits_small.hits, hits_small.steps, hits_small.nbr_hits, hits_large.hits, hits_large.steps,
         hits_large.nbr_hits);
  CHECK(hits_small.steps > 0 && hits_small.hits > hits_small.nbr_hits);
  CHECK(hits_large.steps > 0 && hits_large.hits > hits_large.nbr_hits);
  search_space_free(small);
  search_space_free(large);
  printf("strategy_peek_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
