/* strategy_test.c: unit tests of the search strategies (search/strategy*.c).
 *
 * For every registered strategy: each point is proposed at most once and the
 * whole space is covered when asked long enough (with and without
 * observations, odd batch sizes, failed points); the sequence is the same for
 * the same seed (for the adaptive ones whatever the batch sizes asked for)
 * and differs between seeds; points observed without being proposed (as a
 * bandit forwards them) are never proposed afterwards. On a smooth synthetic
 * cost over a constrained space whose optimum comes late in space order, the
 * adaptive strategies must reach the optimum in a small fraction of the
 * evaluations exhaustive order needs, averaged over seeds. bayes starts at the
 * centre of the space. Exit status 0 when
 * every CHECK passed, 1 otherwise. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "check.h"



static const char *const adaptive[] = {"anneal", "genetic", "bayes", "bandit"};
#define N_ADAPTIVE 4

/* ---- spaces ---------------------------------------------------------------- */

/* Constraint: the sum of the first two value indexes is at most `bound`
 * (a coupled constraint, decided once parameter 1 is bound). */
typedef struct sum_ctx {
  int bound;
} sum_ctx;

static int sum_check(void *ctx, int c, const int *v, int n_bound, tune_err *err) {
  (void)c;
  (void)err;
  const sum_ctx *s = ctx;
  if (n_bound < 2) return SEARCH_UNDECIDED;
  return v[0] + v[1] <= s->bound ? SEARCH_PASS : SEARCH_FAIL;
}

static search_space *make_space(int n_params, const int *nv, int bound) {
  static sum_ctx ctx;
  ctx.bound = bound;
  search_space_def def = {.n_params = n_params, .n_values = nv, .n_constraints = bound >= 0,
                          .constraint_level = NULL, .check = sum_check, .ctx = &ctx};
  search_space *sp = NULL;
  tune_err err;
  tune_err_clear(&err);
  if (search_space_enumerate(&def, &sp, &err) != TUNE_OK) fprintf(stderr, "make_space: %s\n", err.msg);
  return sp;
}

/* Smooth cost over value indexes with its minimum at `opt`, failing (-1)
 * where index 2 and 3 are both at their top value (a failing corner). */
typedef struct cost_fn {
  const search_space *sp;
  int opt[SEARCH_MAX_PARAMS];
  int fail_corner;
} cost_fn;

static double cost_of(const cost_fn *f, uint64_t point) {
  int v[SEARCH_MAX_PARAMS];
  search_point_decode(f->sp, point, v);
  int n = f->sp->n_params;
  if (f->fail_corner && n >= 4 && v[2] == f->sp->n_values[2] - 1 && v[3] == f->sp->n_values[3] - 1)
    return -1;
  double s = 0;
  for (int i = 0; i < n; i++) {
    double d = (double)(v[i] - f->opt[i]) / (double)(f->sp->n_values[i] > 1 ? f->sp->n_values[i] - 1 : 1);
    s += (1.0 + 0.5 * i) * d * d;
  }
  /* a mild coupling of parameters 0 and 1 */
  double c = (double)(v[0] - f->opt[0]) * (double)(v[1] - f->opt[1]);
  return 1000.0 * (1.0 + s + 0.02 * c * c);
}

/* ---- driving a strategy ---------------------------------------------------------- */

/* Run strategy `name` like tune run does: ask batches (sizes cycling through
 * `sizes`, or all `batch`), observe each point right after (when f is set).
 * Writes the proposals to out[] (at most cap); returns the count, or
 * (size_t)-1 on an API failure or a point outside the space. *first_opt is
 * the 1-based evaluation that hit the optimum (0 none). */
static size_t drive(const char *name, const search_space *sp, uint64_t seed, const cost_fn *f,
                    int batch, uint64_t *out, size_t cap, uint64_t opt_point, size_t *first_opt,
                    const uint64_t *foreign, size_t n_foreign) {
  static const int sizes[] = {1, 3, 7, 2, 32, 5};
  search_strategy *s = NULL;
  tune_err err;
  tune_err_clear(&err);
  if (first_opt) *first_opt = 0;
  if (search_strategy_new(name, sp, seed, &s, &err) != TUNE_OK) {
    fprintf(stderr, "%s: %s\n", name, err.msg);
    return (size_t)-1;
  }
  for (size_t i = 0; i < n_foreign; i++) search_strategy_observe(s, foreign[i], f ? cost_of(f, foreign[i]) : 1.0);
  size_t n = 0;
  for (int call = 0;; call++) {
    uint64_t buf[64];
    int max = batch ? batch : sizes[call % 6], got = -1;
    if (search_strategy_next_batch(s, buf, max, &got, &err) != TUNE_OK || got < 0 || got > max) {
      n = (size_t)-1;
      break;
    }
    if (got == 0) break;
    for (int i = 0; i < got; i++) {
      if (search_space_find(sp, buf[i]) < 0) {
        search_strategy_free(s);
        return (size_t)-1;
      }
      if (n < cap) out[n] = buf[i];
      n++;
      if (first_opt && !*first_opt && buf[i] == opt_point) *first_opt = n;
      if (f) search_strategy_observe(s, buf[i], cost_of(f, buf[i]));
    }
    if (n > cap) break; /* proposing more points than exist: a repeat */
    if (first_opt && *first_opt) break; /* found: enough */
  }
  search_strategy_free(s);
  return n;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* out[0..n) is a permutation of the space's points. */
static int is_permutation(const search_space *sp, const uint64_t *out, size_t n) {
  if (n != sp->n_points) return 0;
  uint64_t *s = malloc((n ? n : 1) * sizeof *s);
  if (!s) return 0;
  memcpy(s, out, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_u64);
  int ok = memcmp(s, sp->points, n * sizeof *s) == 0;
  free(s);
  return ok;
}

/* ---- tests ------------------------------------------------------------------------ */

/* Every strategy, several spaces, batch patterns and seeds: each point once,
 * all of them. */
static void test_once_and_cover(void) {
  int nv_a[4] = {4, 5, 3, 4}, nv_b[3] = {1, 6, 2}, nv_c[2] = {1, 1}, nv_d[5] = {2, 7, 1, 3, 2};
  struct {
    int n;
    const int *nv;
    int bound;
  } spaces[] = {{4, nv_a, 4}, {3, nv_b, -1}, {2, nv_c, -1}, {5, nv_d, 5}};
  for (int k = 0; k < 4; k++) {
    search_space *sp = make_space(spaces[k].n, spaces[k].nv, spaces[k].bound);
    CHECK(sp != NULL);
    if (!sp) continue;
    cost_fn f = {.sp = sp, .fail_corner = 1};
    for (int i = 0; i < sp->n_params; i++) f.opt[i] = sp->n_values[i] / 2;
    size_t cap = sp->n_points + 1;
    uint64_t *out = malloc(cap * sizeof *out);
    for (int si = 0; search_strategy_names[si]; si++) {
      const char *name = search_strategy_names[si];
      for (int seed = 1; seed <= 3; seed++) {
        int batches[] = {1, 0, 64};
        for (int b = 0; b < 3; b++) {
          size_t n = drive(name, sp, (uint64_t)seed, &f, batches[b], out, cap, 0, NULL, NULL, 0);
          CHECK(n != (size_t)-1 && is_permutation(sp, out, n));
          if (n == (size_t)-1 || !is_permutation(sp, out, n))
            fprintf(stderr, "  %s seed %d batch %d space %d: %zu of %zu\n", name, seed, batches[b], k,
                    n, sp->n_points);
        }
        /* Without any observation (a caller that never reports) too. */
        size_t n = drive(name, sp, (uint64_t)seed, NULL, 0, out, cap, 0, NULL, NULL, 0);
        CHECK(n != (size_t)-1 && is_permutation(sp, out, n));
      }
    }
    free(out);
    search_space_free(sp);
  }
}

/* Same seed: same sequence (adaptive ones: whatever the batch sizes). Other
 * seed: another sequence. */
static void test_deterministic(void) {
  int nv[4] = {5, 5, 4, 3};
  search_space *sp = make_space(4, nv, 6);
  CHECK(sp != NULL);
  if (!sp) return;
  cost_fn f = {.sp = sp, .fail_corner = 1, .opt = {3, 1, 2, 1}};
  size_t n = sp->n_points;
  uint64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  for (int si = 0; search_strategy_names[si]; si++) {
    const char *name = search_strategy_names[si];
    int is_adaptive = 0;
    for (int k = 0; k < N_ADAPTIVE; k++) is_adaptive |= !strcmp(name, adaptive[k]);
    size_t na = drive(name, sp, 7, &f, 1, a, n, 0, NULL, NULL, 0);
    size_t nb = drive(name, sp, 7, &f, 1, b, n, 0, NULL, NULL, 0);
    CHECK(na == n && nb == n && memcmp(a, b, n * sizeof *a) == 0);
    if (is_adaptive) {
      nb = drive(name, sp, 7, &f, 0, b, n, 0, NULL, NULL, 0); /* cycling batch sizes */
      CHECK(nb == n && memcmp(a, b, n * sizeof *a) == 0);
      if (nb != n || memcmp(a, b, n * sizeof *a)) fprintf(stderr, "  %s depends on batch sizes\n", name);
    }
    if (strcmp(name, "exhaustive") != 0) {
      nb = drive(name, sp, 8, &f, 1, b, n, 0, NULL, NULL, 0);
      CHECK(nb == n && memcmp(a, b, n * sizeof *a) != 0);
    }
  }
  free(a);
  free(b);
  search_space_free(sp);
}

/* Points observed before being proposed (another strategy's, a warm start)
 * are never proposed by any strategy; the rest is still covered. */
static void test_foreign_observations(void) {
  int nv[3] = {6, 5, 4};
  search_space *sp = make_space(3, nv, 7);
  CHECK(sp != NULL);
  if (!sp) return;
  cost_fn f = {.sp = sp, .opt = {2, 2, 1}};
  size_t n = sp->n_points, n_foreign = 0;
  uint64_t *foreign = malloc(n * sizeof *foreign), *out = malloc(n * sizeof *out);
  for (size_t i = 0; i < n; i += 3) foreign[n_foreign++] = sp->points[i];
  /* every strategy, exhaustive and random too (strategy.c drops what was observed before) */
  for (int k = 0; search_strategy_names[k]; k++) {
    size_t got = drive(search_strategy_names[k], sp, 3, &f, 0, out, n, 0, NULL, foreign, n_foreign);
    CHECK(got == n - n_foreign);
    int clash = 0;
    for (size_t i = 0; i < got && i < n; i++)
      for (size_t j = 0; j < n_foreign; j++) clash |= out[i] == foreign[j];
    CHECK(!clash);
  }
  free(foreign);
  free(out);
  search_space_free(sp);
}

/* A smooth cost with its optimum late in space order: adaptive strategies
 * find it in a small fraction of the evaluations exhaustive order needs. */
static void test_finds_optimum_sooner(void) {
  int nv[4] = {8, 8, 6, 6};
  search_space *sp = make_space(4, nv, 12); /* 8 x 8 x 6 x 6 = 2304, 1908 after the constraint */
  CHECK(sp != NULL);
  if (!sp) return;
  cost_fn f = {.sp = sp, .fail_corner = 1, .opt = {6, 5, 4, 1}};
  uint64_t opt_point = search_point_encode(sp, f.opt);
  long opt_pos = search_space_find(sp, opt_point);
  CHECK(opt_pos >= 0);
  /* the optimum is the cheapest point of the space */
  double best = INFINITY;
  for (size_t i = 0; i < sp->n_points; i++) {
    double c = cost_of(&f, sp->points[i]);
    if (c >= 0 && c < best) best = c;
  }
  CHECK(best == cost_of(&f, opt_point));
  size_t exhaustive_at = (size_t)opt_pos + 1; /* space order: evaluations to reach it */
  CHECK(exhaustive_at > sp->n_points / 2);
  size_t n = sp->n_points;
  uint64_t *out = malloc(n * sizeof *out);
  const int n_seeds = 10;
  for (int k = 0; k < N_ADAPTIVE; k++) {
    double sum = 0;
    int found = 0;
    for (int seed = 1; seed <= n_seeds; seed++) {
      size_t at = 0;
      drive(adaptive[k], sp, (uint64_t)seed, &f, 0, out, n, opt_point, &at, NULL, 0);
      if (at) found++;
      sum += at ? (double)at : (double)n;
    }
    double mean = sum / n_seeds;
    printf("  %-8s reaches the optimum after %.1f evaluations on average (exhaustive: %zu, space %zu)\n",
           adaptive[k], mean, exhaustive_at, n);
    CHECK(found == n_seeds);
    /* A clear margin: 1/10 of what exhaustive order needs (random search
     * needs about half the space on average). */
    CHECK(mean < (double)exhaustive_at / 10);
  }
  /* The control: random search is nowhere near that margin. */
  double sum = 0;
  for (int seed = 1; seed <= n_seeds; seed++) {
    size_t at = 0;
    drive("random", sp, (uint64_t)seed, &f, 0, out, n, opt_point, &at, NULL, 0);
    sum += (double)at;
  }
  printf("  %-8s reaches the optimum after %.1f evaluations on average\n", "random", sum / n_seeds);
  CHECK(sum / n_seeds > (double)exhaustive_at / 10);
  free(out);
  search_space_free(sp);
}

/* Every point fails: strategies still propose each point once. */
static void test_all_failures(void) {
  int nv[3] = {4, 4, 4};
  search_space *sp = make_space(3, nv, 4);
  CHECK(sp != NULL);
  if (!sp) return;
  size_t n = sp->n_points;
  uint64_t *out = malloc(n * sizeof *out);
  for (int k = 0; k < N_ADAPTIVE; k++) {
    search_strategy *s = NULL;
    tune_err err;
    tune_err_clear(&err);
    CHECK(search_strategy_new(adaptive[k], sp, 5, &s, &err) == TUNE_OK);
    size_t got = 0;
    for (;;) {
      uint64_t buf[16];
      int m = 0;
      if (search_strategy_next_batch(s, buf, 16, &m, &err) != TUNE_OK || m == 0) break;
      for (int i = 0; i < m; i++) {
        if (got < n) out[got] = buf[i];
        got++;
        search_strategy_observe(s, buf[i], i % 2 ? -1.0 : NAN);
      }
    }
    CHECK(is_permutation(sp, out, got));
    CHECK(search_strategy_best(s, NULL, NULL) == 0);
    search_strategy_free(s);
  }
  free(out);
  search_space_free(sp);
}

/* bayes's first proposal is the centre point: the middle value of every
 * parameter when it is in the space (every seed), one of its nearest points
 * when a constraint excludes it, and either middle value, depending on the
 * seed, of a parameter with an even number of values. */
static uint64_t bayes_first(const search_space *sp, uint64_t seed) {
  search_strategy *s = NULL;
  tune_err err;
  tune_err_clear(&err);
  uint64_t buf[4] = {0};
  int m = 0;
  if (search_strategy_new("bayes", sp, seed, &s, &err) == TUNE_OK)
    search_strategy_next_batch(s, buf, 1, &m, &err);
  search_strategy_free(s);
  CHECK(m == 1);
  return buf[0];
}

static void test_bayes_centre(void) {
  int nv_odd[4] = {3, 5, 3, 1}, nv_even[2] = {4, 3}, nv_cut[3] = {5, 5, 3};
  search_space *odd = make_space(4, nv_odd, -1), *even = make_space(2, nv_even, -1);
  search_space *cut = make_space(3, nv_cut, 2); /* v0 + v1 <= 2: the centre (2, 2, 1) is out */
  CHECK(odd && even && cut);
  if (!odd || !even || !cut) goto out;
  int seen_middle[2] = {0, 0};
  for (uint64_t seed = 1; seed <= 40; seed++) {
    int v[SEARCH_MAX_PARAMS];
    search_point_decode(odd, bayes_first(odd, seed), v);
    CHECK(v[0] == 1 && v[1] == 2 && v[2] == 1 && v[3] == 0);
    search_point_decode(even, bayes_first(even, seed), v);
    CHECK((v[0] == 1 || v[0] == 2) && v[1] == 1);
    if (v[0] == 1 || v[0] == 2) seen_middle[v[0] - 1] = 1;
    /* nearest to (0.5, 0.5, 0.5) in normalized indexes: v0 + v1 = 2 (L1 distance 0.5), v2 = 1 */
    search_point_decode(cut, bayes_first(cut, seed), v);
    CHECK(v[0] + v[1] == 2 && v[2] == 1);
  }
  CHECK(seen_middle[0] && seen_middle[1]);
out:
  search_space_free(odd);
  search_space_free(even);
  search_space_free(cut);
}

int main(void) {
  test_once_and_cover();
  test_deterministic();
  test_foreign_observations();
  test_all_failures();
  test_finds_optimum_sooner();
  test_bayes_centre();
  printf("strategy_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
