/* bayes_parallel_test.c: bayes with several points measured at once (search_strategy_set_parallel).
 *
 * k = 1 changes nothing: the proposals for a seed, a space and the costs observed are the sequences
 * below, recorded from the build before set_parallel existed (a 8 x 8 x 4 space whose points with
 * parameter 2 != 0 fail, one point or 32 per batch, with and without an observation before the
 * first proposal; a 16 x 16 x 16 space, past the 2048 candidates of a global step, with failures).
 * k > 1: after the design (at least k points), every batch is k distinct unseen points, the same
 * for the same seed, and on the 8 x 8 x 4 space k = 2 needs under 0.8 times the batches of k = 1 to
 * measure a point within 2 % of the optimum (mean over 20 seeds): the second pick of a batch must add
 * something. The other strategies fill the batches asked for as before. The argument rules
 * of set_parallel. Exit status 0 when every CHECK passed, 1 otherwise. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "search.h"

/* Recorded from the build before search_strategy_set_parallel (see run() for how). */
static const uint64_t gold_small[60] = {142, 128, 60, 190, 96, 132, 7, 165, 100, 136, 140, 172, 176, 168, 200, 204, 232, 236, 196, 228, 164, 16, 169, 233, 252, 197, 205, 0, 201, 156, 192, 8, 244, 84, 24, 76, 36, 184, 224, 120, 208, 220, 112, 28, 240, 32, 92, 160, 148, 48, 255, 212, 56, 40, 12, 104, 248, 144, 20, 68};
static const uint64_t gold_small_batch32[60] = {109, 94, 3, 234, 19, 189, 238, 51, 236, 204, 172, 0, 232, 240, 224, 208, 176, 104, 200, 168, 196, 164, 228, 24, 169, 233, 12, 197, 205, 124, 201, 252, 96, 84, 188, 60, 160, 4, 16, 216, 76, 152, 140, 68, 28, 192, 132, 32, 112, 244, 40, 136, 48, 180, 88, 128, 220, 52, 144, 116};
static const uint64_t gold_warm[40] = {1, 216, 59, 194, 184, 180, 20, 212, 244, 208, 240, 172, 12, 204, 232, 200, 164, 168, 228, 236, 196, 124, 233, 169, 0, 197, 205, 192, 201, 28, 72, 96, 252, 112, 224, 136, 88, 4, 188, 160};
static const uint64_t gold_large[50] = {2167, 249, 46, 4000, 68, 3087, 3030, 2576, 1791, 3550, 2184, 1912, 126, 1927, 1897, 2426, 2152, 2169, 1780, 1895, 1672, 3846, 1640, 1657, 3951, 1929, 1689, 1184, 1706, 1705, 4010, 1962, 1450, 256, 1722, 1465, 4080, 1977, 1721, 1967, 1448, 1690, 1035, 1449, 1720, 240, 1961, 1960, 2231, 2232};

static double cost_small(const search_space *sp, uint64_t point) {
  int v[SEARCH_MAX_PARAMS];
  search_point_decode(sp, point, v);
  if (v[2] != 0) return -1;
  double a = v[0] - 6.0, b = v[1] - 2.0;
  return 1000.0 * (1.0 + 0.05 * (a * a + b * b));
}

static double cost_large(const search_space *sp, uint64_t point) {
  int v[SEARCH_MAX_PARAMS];
  search_point_decode(sp, point, v);
  double s = 0;
  for (int k = 0; k < 3; k++) s += (v[k] - 11.0 + k) * (v[k] - 11.0 + k) * (1 + k);
  if ((v[0] + v[1] + v[2]) % 7 == 0) return -1;
  return 500.0 + s + 40.0 * sin(v[0] * 1.3 + v[2]);
}

typedef double (*cost_fn)(const search_space *, uint64_t);

static search_space *space3(int n0, int n1, int n2) {
  int nv[3] = {n0, n1, n2};
  search_space_def def = {.n_params = 3, .n_values = nv};
  search_space *sp = NULL;
  tune_err err;
  tune_err_clear(&err);
  return search_space_enumerate(&def, &sp, &err) == TUNE_OK ? sp : NULL;
}

/* bayes for n_evals evaluations in batches of up to max_batch, every batch observed before the next;
 * k: set_parallel's argument, 0 not called; warm: the space's last point observed first. Writes the
 * proposals to out[] and each batch's size to sizes[] (when not NULL); returns the proposals made. */
static int run(const search_space *sp, cost_fn cost, uint64_t seed, int n_evals, int max_batch, int warm, int k,
               uint64_t *out, int *sizes) {
  search_strategy *s = NULL;
  tune_err err;
  tune_err_clear(&err);
  if (search_strategy_new("bayes", sp, seed, &s, &err) != TUNE_OK) return -1;
  if (k && search_strategy_set_parallel(s, k, &err) != TUNE_OK) {
    search_strategy_free(s);
    return -1;
  }
  uint64_t last = sp->points[sp->n_points - 1];
  if (warm) search_strategy_observe(s, last, cost(sp, last));
  int e = 0, b = 0;
  while (e < n_evals) {
    uint64_t pts[64];
    int n = 0, want = max_batch < n_evals - e ? max_batch : n_evals - e;
    if (search_strategy_next_batch(s, pts, want, &n, &err) != TUNE_OK || n == 0) break;
    for (int i = 0; i < n; i++) {
      out[e + i] = pts[i];
      search_strategy_observe(s, pts[i], cost(sp, pts[i]));
    }
    if (sizes) sizes[b++] = n;
    e += n;
  }
  search_strategy_free(s);
  return e;
}

static int same(const uint64_t *a, const uint64_t *b, int n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

static void test_k1_unchanged(void) {
  search_space *small = space3(8, 8, 4), *large = space3(16, 16, 16);
  CHECK(small && large);
  if (!small || !large) return;
  for (int k = 0; k <= 1; k++) { /* never told, and told 1 */
    uint64_t got[64];
    CHECK(run(small, cost_small, 7, 60, 1, 0, k, got, NULL) == 60 && same(got, gold_small, 60));
    CHECK(run(small, cost_small, 11, 60, 32, 0, k, got, NULL) == 60 && same(got, gold_small_batch32, 60));
    CHECK(run(small, cost_small, 5, 40, 32, 1, k, got, NULL) == 40 && same(got, gold_warm, 40));
    CHECK(run(large, cost_large, 3, 50, 32, 0, k, got, NULL) == 50 && same(got, gold_large, 50));
  }
  search_space_free(small);
  search_space_free(large);
}

static void test_parallel_batches(void) {
  search_space *large = space3(16, 16, 16);
  CHECK(large != NULL);
  if (!large) return;
  for (int k = 2; k <= 4; k += 2) {
    uint64_t a[64], b[64];
    int sizes[64] = {0};
    int n = run(large, cost_large, 9, 40, 32, 0, k, a, sizes);
    CHECK(n == 40);
    /* the design is one batch of n_init = (4096 + 40) / 60 -> 10 points here; then batches of k */
    CHECK(sizes[0] == 10);
    int ok = 1;
    for (int i = 1; 10 + i * k < 40; i++) ok &= sizes[i] == k;
    CHECK(ok);
    int distinct = 1;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < i; j++) distinct &= a[i] != a[j];
    CHECK(distinct);
    CHECK(run(large, cost_large, 9, 40, 32, 0, k, b, NULL) == 40 && same(a, b, 40));
    /* k = 1 differs after the design: it is not just the same sequence cut in pieces */
    CHECK(run(large, cost_large, 9, 40, 32, 0, 1, b, NULL) == 40 && same(a, b, 10) && !same(a, b, 40));
  }
  /* a small space (design of 1): the design grows to k points */
  search_space *small = space3(8, 8, 1);
  CHECK(small != NULL);
  if (small) {
    uint64_t a[64];
    int sizes[64] = {0};
    CHECK(run(small, cost_small, 2, 20, 32, 0, 3, a, sizes) == 20 && sizes[0] == 3 && sizes[1] == 3);
    search_space_free(small);
  }
  search_space_free(large);
}

/* Rounds (batches after the first) until a point within 2 % of the optimum is measured, mean over
 * seeds: k = 2 must need fewer than k = 1, else the second point of a batch adds nothing. */
static void test_parallel_saves_rounds(void) {
  search_space *sp = space3(8, 8, 4);
  CHECK(sp != NULL);
  if (!sp) return;
  const double opt = 1000.0; /* cost_small at (6, 2, 0) */
  double rounds[2] = {0, 0};
  const int n_seeds = 20, n_evals = 60;
  for (int k = 1; k <= 2; k++)
    for (uint64_t seed = 1; seed <= (uint64_t)n_seeds; seed++) {
      uint64_t a[64];
      int sizes[64] = {0};
      int n = run(sp, cost_small, seed, n_evals, 32, 0, k, a, sizes), e = 0, r = 0;
      for (; r < 64 && sizes[r] && e < n; r++) {
        int hit = 0;
        for (int i = e; i < e + sizes[r]; i++) {
          double c = cost_small(sp, a[i]);
          hit |= c >= 0 && c <= opt / 0.98;
        }
        e += sizes[r];
        if (hit) break;
      }
      rounds[k - 1] += r;
    }
  printf("batches before one within 2 %% of the optimum, mean over %d seeds: k = 1 %.1f, k = 2 %.1f\n", n_seeds,
         rounds[0] / n_seeds, rounds[1] / n_seeds);
  CHECK(rounds[1] < 0.8 * rounds[0]);
  search_space_free(sp);
}

static void test_rules_and_others(void) {
  search_space *sp = space3(8, 8, 4);
  CHECK(sp != NULL);
  if (!sp) return;
  tune_err err;
  tune_err_clear(&err);
  search_strategy *s = NULL;
  CHECK(search_strategy_new("bayes", sp, 1, &s, &err) == TUNE_OK);
  CHECK(search_strategy_set_parallel(s, 0, &err) == TUNE_EINVAL);
  CHECK(search_strategy_set_parallel(s, SEARCH_MAX_PARALLEL + 1, &err) == TUNE_EINVAL);
  search_strategy_observe(s, sp->points[0], 1000); /* a warm start before it is fine */
  CHECK(search_strategy_set_parallel(s, 2, &err) == TUNE_OK);
  uint64_t pts[32];
  int n = 0;
  CHECK(search_strategy_next_batch(s, pts, 32, &n, &err) == TUNE_OK && n >= 2);
  CHECK(search_strategy_set_parallel(s, 3, &err) == TUNE_EINVAL);
  search_strategy_free(s);
  /* exhaustive and random fill a batch of 8; genetic serves its generation (6 here: 2 x 3 parameters)
     whatever k; anneal stays at one point */
  const char *names[] = {"exhaustive", "random", "genetic", "anneal"};
  const int want[] = {8, 8, 6, 1};
  for (int i = 0; i < 4; i++) {
    s = NULL;
    n = 0;
    CHECK(search_strategy_new(names[i], sp, 1, &s, &err) == TUNE_OK && search_strategy_set_parallel(s, 8, &err) == TUNE_OK);
    if (!s) continue;
    for (int b = 0; b < 3; b++) {
      CHECK(search_strategy_next_batch(s, pts, 8, &n, &err) == TUNE_OK && n == want[i]);
      for (int j = 0; j < n; j++) search_strategy_observe(s, pts[j], cost_small(sp, pts[j]));
    }
    search_strategy_free(s);
  }
  search_space_free(sp);
}

int main(void) {
  test_k1_unchanged();
  test_parallel_batches();
  test_parallel_saves_rounds();
  test_rules_and_others();
  printf("bayes_parallel_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
