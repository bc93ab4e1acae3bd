/* report.c: tune-bench-search's scores (P, its quartiles, the share of seeds near the optimum) and
 * their output, as text tables or JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_search.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

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

bench_cell bench_summarize(const bench_run *br, int s, int kind, int j, double base, double *tmp, double *tmp2) {
  const bench_space *b = br->b;
  int n = br->repeats;
  int n98 = 0;
  for (int k = 0; k < n; k++) {
    double f = bench_found_at(br, s, k, kind)[j];
    tmp[k] = p_score(base, f, b->opt);
    tmp2[k] = b->opt / f;
    n98 += tmp2[k] >= 0.98;
  }
  bench_cell c;
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

long bench_bar_a(size_t n) {
  long k = lround(0.10 * (double)n);
  return k > 5 ? k : 5;
}

long bench_bar_c(size_t n) {
  long k = lround(0.25 * (double)n);
  return k > 10 ? k : 10;
}

/* R98: the fewest rounds after which the median over the seeds of optimum / (best found by then)
 * reaches NEAR_OPT; 0 when not within the trajectories. */
static long r98_of(const bench_run *br, int s, double *tmp) {
  int n = br->repeats;
  long *at = calloc((size_t)n, sizeof *at); /* per seed: evaluations completed by the round */
  if (!at) return 0;
  long last = 0;
  for (int k = 0; k < n; k++) {
    long r = br->rounds[((size_t)s * (size_t)n + (size_t)k) * (size_t)br->cap + (size_t)br->cap - 1];
    if (r > last) last = r;
  }
  long found = 0;
  for (long round = 1; round <= last && !found; round++) {
    for (int k = 0; k < n; k++) {
      size_t base = ((size_t)s * (size_t)n + (size_t)k) * (size_t)br->cap;
      while (at[k] < br->cap && br->rounds[base + (size_t)at[k]] <= round) at[k]++;
      double f = at[k] ? br->curve[base + (size_t)at[k] - 1] : INFINITY;
      tmp[k] = isfinite(f) ? br->b->opt / f : 0;
    }
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
    if (quantile(tmp, n, 0.5) >= NEAR_OPT) found = round;
  }
  free(at);
  return found;
}

bench_b98 bench_b98_of(const bench_run *br, int s, double *tmp) {
  bench_b98 r = {0, 0, 0};
  int n = br->repeats;
  for (long e = 0; e < br->cap && (!r.b98 || !r.w90); e++) {
    int near = 0;
    for (int k = 0; k < n; k++) {
      double f = br->curve[((size_t)s * (size_t)n + (size_t)k) * (size_t)br->cap + (size_t)e];
      tmp[k] = isfinite(f) ? br->b->opt / f : 0;
      near += tmp[k] >= NEAR_OPT;
    }
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
    if (!r.b98 && quantile(tmp, n, 0.5) >= NEAR_OPT) r.b98 = e + 1;
    if (!r.w90 && near >= WORST_SHARE * n) r.w90 = e + 1;
  }
  r.r98 = br->parallel > 1 ? r98_of(br, s, tmp) : r.b98;
  return r;
}

/* ---- output ---------------------------------------------------------------- */

static void fmt_evals(long k, long cap, char *buf, size_t n) {
  if (k) snprintf(buf, n, "%ld", k);
  else snprintf(buf, n, ">%ld", cap);
}

static void fmt_ns(double ns, char *buf, size_t n) {
  if (ns >= 1e6) snprintf(buf, n, "%.3f ms", ns / 1e6);
  else snprintf(buf, n, "%.2f us", ns / 1e3);
}

static void fmt_cell(const bench_cell *c, char *buf, size_t n) {
  if (isnan(c->median)) snprintf(buf, n, "n/a");
  else snprintf(buf, n, "%.2f [%.2f,%.2f]", c->median, c->q1, c->q3);
}

static void print_table(const bench_run *br, bench_cells *cells, int kind) {
  const bench_space *b = br->b;
  char head[64];
  int w = 10; /* the label column: wider only for a longer label (bayes+halving) */
  for (int s = 0; s < br->n_strategies; s++)
    if ((int)strlen(br->labels[s]) > w) w = (int)strlen(br->labels[s]);
  printf("%-*s", w, kind ? "time" : "evals");
  for (int j = 0; j < N_BUDGETS; j++) {
    if (kind) snprintf(head, sizeof head, "%g%% (%.1f s)", 100 * bench_budget_frac[j], b->secs[j]);
    else snprintf(head, sizeof head, "%g%% (%ld)", 100 * bench_budget_frac[j], b->evals[j]);
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

static json_t *cell_json(const bench_cell *c) {
  json_t *o = json_object();
  if (!o) return NULL;
  json_object_set_new(o, "median", isnan(c->median) ? json_null() : json_real(c->median));
  json_object_set_new(o, "q1", isnan(c->q1) ? json_null() : json_real(c->q1));
  json_object_set_new(o, "q3", isnan(c->q3) ? json_null() : json_real(c->q3));
  json_object_set_new(o, "perf_median", json_real(c->perf_median));
  json_object_set_new(o, "frac98", json_real(c->frac98));
  return o;
}

json_t *bench_problem_json(const bench_run *br, const tune_recipe *r, const tune_problem *p,
                           bench_cells *cells, double *tmp) {
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
  json_object_set_new(o, "n_near", json_integer((json_int_t)b->n_near));
  for (int s = 0; s < DB_STATUS_COUNT; s++)
    if (b->n_status[s]) json_object_set_new(status, db_status_name((db_status)s), json_integer(b->n_status[s]));
  json_object_set_new(o, "statuses", status);
  json_object_set_new(o, "optimum_ns", json_real(b->opt));
  json_object_set_new(o, "worst_ns", json_real(b->worst));
  json_object_set_new(o, "total_s", json_real(b->total_s));
  json_object_set_new(o, "repeats", json_integer(br->repeats));
  for (int j = 0; j < N_BUDGETS; j++) {
    json_t *bj = json_object();
    json_object_set_new(bj, "fraction", json_real(bench_budget_frac[j]));
    json_object_set_new(bj, "evals", json_integer(b->evals[j]));
    json_object_set_new(bj, "seconds", json_real(b->secs[j]));
    json_object_set_new(bj, "baseline_eval_ns", json_real(b->base_eval[j]));
    json_object_set_new(bj, "baseline_time_ns", json_real(b->base_time[j]));
    json_array_append_new(budgets, bj);
  }
  json_object_set_new(o, "budgets", budgets);
  json_object_set_new(o, "trajectory_cap", json_integer(br->cap));
  json_object_set_new(o, "bar_a", json_integer(bench_bar_a(b->n)));
  json_object_set_new(o, "bar_c", json_integer(bench_bar_c(b->n)));
  for (int s = 0; s < br->n_strategies; s++) {
    json_t *so = json_object(), *ev = json_array(), *tm = json_array();
    for (int j = 0; j < N_BUDGETS; j++) {
      json_array_append_new(ev, cell_json(&cells[s][0][j]));
      json_array_append_new(tm, cell_json(&cells[s][1][j]));
    }
    json_object_set_new(so, "evals", ev);
    json_object_set_new(so, "time", tm);
    bench_b98 q = bench_b98_of(br, s, tmp); /* 0: not within the cap: null */
    json_object_set_new(so, "b98", q.b98 ? json_integer(q.b98) : json_null());
    json_object_set_new(so, "w90", q.w90 ? json_integer(q.w90) : json_null());
    json_object_set_new(so, "r98", q.r98 ? json_integer(q.r98) : json_null());
    /* every run's best found, [seed][budget] in ns */
    for (int kind = 0; kind < 2; kind++) {
      json_t *runs = json_array();
      for (int k = 0; k < br->repeats; k++) {
        json_t *row = json_array();
        const double *f = bench_found_at(br, s, k, kind);
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
    for (int k = 0; k < n; k++) differ += bench_found_at(br, a, k, 0)[j] != bench_found_at(br, h, k, 0)[j];
    printf("  %4g%% (%ld): %9.1f s without, %9.1f s with halving (%+.1f %%); best found differs on %d of %d seeds\n",
           100 * bench_budget_frac[j], br->b->evals[j], m[0], m[1], m[0] > 0 ? 100 * (m[1] - m[0]) / m[0] : 0.0, differ, n);
  }
}

void bench_print_problem(const bench_run *br, const tune_recipe *r, const tune_problem *p, const char *device,
                         size_t n_rejected, bench_cells *cells, int a, int h, double *tmp) {
  const bench_space *b = br->b;
  char o[32], w[32];
  fmt_ns(b->opt, o, sizeof o);
  fmt_ns(b->worst, w, sizeof w);
  printf("\n== %s / %s %s: %zu configs recorded on %s", r->name, p->name, p->dims_json, b->n, device);
  if (n_rejected) printf(" (%zu more rejected by the recipe: not part of the space)", n_rejected);
  printf("\n");
  printf("   statuses:");
  for (int s = 0; s < DB_STATUS_COUNT; s++)
    if (b->n_status[s]) printf(" %d %s", b->n_status[s], db_status_name((db_status)s));
  printf("; optimum %s, worst %s; whole space %.1f s of compile+measure\n", o, w, b->total_s);
  printf("P score, median [q1,q3] over %d seeds; last row: random search's expected best\n", br->repeats);
  print_table(br, cells, 0);
  print_table(br, cells, 1);
  printf("goal at 10%% of the evaluations (%ld): median fraction of the optimum reached;"
         " share of seeds reaching 98%%\n", b->evals[GOAL_BUDGET]);
  for (int s = 0; s < br->n_strategies; s++)
    printf("  %-10s %.4f  %3.0f%%%s\n", br->labels[s], cells[s][0][GOAL_BUDGET].perf_median,
           100 * cells[s][0][GOAL_BUDGET].frac98,
           cells[s][0][GOAL_BUDGET].perf_median >= 0.98 ? "  (meets 98%)" : "");
  printf("B98 (fewest evaluations at which the median reaches 98%% of the optimum; bar (a) %ld) and W90"
         " (90%% of seeds at 98%%; bar (c) %ld), within %ld evaluations\n", bench_bar_a(b->n), bench_bar_c(b->n), br->cap);
  for (int s = 0; s < br->n_strategies; s++) {
    bench_b98 q = bench_b98_of(br, s, tmp);
    char x[24], y[24], z[24];
    fmt_evals(q.b98, br->cap, x, sizeof x);
    fmt_evals(q.w90, br->cap, y, sizeof y);
    printf("  %-10s B98 %5s%s  W90 %5s%s", br->labels[s], x, q.b98 && q.b98 <= bench_bar_a(b->n) ? " (a)" : "    ", y,
           q.w90 && q.w90 <= bench_bar_c(b->n) ? " (c)" : "    ");
    if (br->parallel > 1) {
      snprintf(z, sizeof z, "%ld", q.r98);
      printf("  R98 %5s (rounds of %d)", q.r98 ? z : "-", br->parallel);
    }
    printf("\n");
  }
  if (br->with_halving) print_halving(br, a, h, tmp);
  fflush(stdout);
}
