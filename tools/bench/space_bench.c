/* space_bench.c: how fast search_space_enumerate builds a large constrained space.
 *
 * A benchmark, not a test: it prints numbers and exits 0 unless something
 * failed outright. The space has 8 parameters, 10*10*10*10*8*8*8*8 =
 * 40,960,000 configurations, and four constraints that keep about 9.5 * 10^6:
 *   c0 level unknown (-1), reads p0,p1:  p0 + p1 <= 13      ("threads per block")
 *   c1 level 3,            reads p2,p3:  p3 <= p2 + 7
 *   c2 level 5,            reads p4,p5:  p5 <= p4
 *   c3 level 7,            reads p4..p7: (p4+p5+p6+p7) even
 * Each is timed as the median of 3 runs (CLOCK_MONOTONIC), and compared with
 * brute force: walk all of the product, ask every constraint with all
 * parameters bound (stopping at the first FAIL), keep what passes. The two
 * point lists must be identical. Usage: space_bench [runs] (default 3). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search.h"

#define N_PARAMS 8
#define N_CONSTRAINTS 4

static const int n_values[N_PARAMS] = {10, 10, 10, 10, 8, 8, 8, 8};
static const int levels[N_CONSTRAINTS] = {-1, 3, 5, 7};

static int check(void *ctx, int c, const int *v, int n_bound, tune_err *err) {
  (void)ctx;
  switch (c) {
  case 0:
    if (n_bound < 2) return SEARCH_UNDECIDED;
    return v[0] + v[1] <= 13 ? SEARCH_PASS : SEARCH_FAIL;
  case 1: return v[3] <= v[2] + 7 ? SEARCH_PASS : SEARCH_FAIL;
  case 2: return v[5] <= v[4] ? SEARCH_PASS : SEARCH_FAIL;
  case 3: return (v[4] + v[5] + v[6] + v[7]) % 2 == 0 ? SEARCH_PASS : SEARCH_FAIL;
  }
  tune_fail(err, TUNE_EINTERNAL, "space_bench: no constraint %d", c);
  return SEARCH_ERROR;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Enumerate-then-filter: the whole product, every constraint fully bound. */
typedef struct brute {
  uint64_t *points;
  size_t n_points, cap;
  uint64_t n_checks;
} brute;

static int brute_force(const search_space_def *def, brute *b, tune_err *err) {
  int v[N_PARAMS] = {0};
  uint64_t total = 1;
  for (int i = 0; i < def->n_params; i++) total *= (uint64_t)def->n_values[i];
  b->n_points = 0;
  b->n_checks = 0;
  for (uint64_t p = 0; p < total; p++) {
    int ok = 1;
    for (int c = 0; c < def->n_constraints && ok; c++) {
      b->n_checks++;
      int r = def->check(def->ctx, c, v, def->n_params, err);
      if (r == SEARCH_ERROR) return err->code;
      ok = r == SEARCH_PASS;
    }
    if (ok) {
      if (b->n_points == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 1024;
        uint64_t *q = realloc(b->points, cap * sizeof(uint64_t));
        if (!q) return tune_fail(err, TUNE_ENOMEM, "space_bench: no memory");
        b->points = q;
        b->cap = cap;
      }
      b->points[b->n_points++] = p;
    }
    for (int i = def->n_params - 1; i >= 0; i--) { /* odometer: next point */
      if (++v[i] < def->n_values[i]) break;
      v[i] = 0;
    }
  }
  return TUNE_OK;
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 3;
  if (runs < 1 || runs > 100) {
    fprintf(stderr, "usage: space_bench [runs 1..100]\n");
    return 2;
  }
  search_space_def def = {.n_params = N_PARAMS,
                          .n_values = n_values,
                          .n_constraints = N_CONSTRAINTS,
                          .constraint_level = levels,
                          .check = check,
                          .ctx = NULL};
  tune_err err;
  tune_err_clear(&err);
  double t[100];

  search_space *sp = NULL;
  for (int r = 0; r < runs; r++) {
    search_space_free(sp);
    sp = NULL;
    double t0 = now_s();
    if (search_space_enumerate(&def, &sp, &err) != TUNE_OK) {
      fprintf(stderr, "space_bench: %s (%s)\n", err.msg, tune_err_name(err.code));
      return 1;
    }
    t[r] = now_s() - t0;
  }
  double t_enum = median(t, runs);

  brute b = {0};
  for (int r = 0; r < runs; r++) {
    double t0 = now_s();
    if (brute_force(&def, &b, &err) != TUNE_OK) {
      fprintf(stderr, "space_bench: %s\n", err.msg);
      return 1;
    }
    t[r] = now_s() - t0;
  }
  double t_brute = median(t, runs);
  int same = b.n_points == sp->n_points &&
             memcmp(b.points, sp->points, b.n_points * sizeof(uint64_t)) == 0;

  printf("space: %d parameters {", N_PARAMS);
  for (int i = 0; i < N_PARAMS; i++) printf("%s%d", i ? "," : "", n_values[i]);
  printf("}, %d constraints, median of %d runs\n", N_CONSTRAINTS, runs);
  printf("total product:        %llu\n", (unsigned long long)sp->n_total);
  printf("points kept:          %zu (%.2f%%)\n", sp->n_points,
         100.0 * (double)sp->n_points / (double)sp->n_total);
  printf("%-22s %14s %10s %14s %14s\n", "method", "checks", "seconds", "points/s", "product/s");
  printf("%-22s %14llu %10.3f %14.3e %14.3e\n", "enumerate (pruning)",
         (unsigned long long)sp->n_checks, t_enum, (double)sp->n_points / t_enum,
         (double)sp->n_total / t_enum);
  printf("%-22s %14llu %10.3f %14.3e %14.3e\n", "enumerate-then-filter",
         (unsigned long long)b.n_checks, t_brute, (double)b.n_points / t_brute,
         (double)sp->n_total / t_brute);
  printf("speed-up: %.1fx, same points: %s\n", t_brute / t_enum, same ? "yes" : "NO");
  free(b.points);
  search_space_free(sp);
  return same ? 0 : 1;
}
