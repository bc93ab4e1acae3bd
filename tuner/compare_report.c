/* compare_report.c: ratios with ranges and the comparison table (compare_report.h). */
#include "compare_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROUNDS TUNE_CMP_MAX_ROUNDS

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double tune_median(const double *v, int n) {
  double s[MAX_ROUNDS];
  int m = 0;
  for (int i = 0; i < n && m < MAX_ROUNDS; ++i)
    if (v[i] > 0) s[m++] = v[i];
  if (!m) return 0;
  qsort(s, (size_t)m, sizeof *s, cmp_double);
  return m % 2 ? s[m / 2] : 0.5 * (s[m / 2 - 1] + s[m / 2]);
}

tune_ratio tune_ratio_of(const double *peer_ns, const double *tune_ns, int n) {
  tune_ratio r = {0, 0, 0, 0};
  double q[MAX_ROUNDS];
  for (int i = 0; i < n && r.n < MAX_ROUNDS; ++i)
    if (peer_ns[i] > 0 && tune_ns[i] > 0) q[r.n++] = peer_ns[i] / tune_ns[i];
  if (!r.n) return r;
  qsort(q, (size_t)r.n, sizeof *q, cmp_double);
  r.lo = q[0];
  r.hi = q[r.n - 1];
  r.median = r.n % 2 ? q[r.n / 2] : 0.5 * (q[r.n / 2 - 1] + q[r.n / 2]);
  return r;
}

const char *tune_ratio_verdict(const tune_ratio *r) {
  if (!r->n) return "-";
  /* judged at the printed precision: a range shown as 1.000-... is not above 1 */
  if (r->lo >= 1.0005) return "faster";
  if (r->hi < 0.9995) return "slower";
  return "parity";
}

/* Ranks 1..n of v (ties: their mean rank) into r. */
static void ranks(const double *v, int n, double *r) {
  for (int i = 0; i < n; ++i) {
    int below = 0, equal = 0;
    for (int j = 0; j < n; ++j) below += v[j] < v[i], equal += v[j] == v[i];
    r[i] = below + (equal + 1) / 2.0;
  }
}

double tune_rank_correlation(const double *x, const double *y, int n) {
  if (n < 3 || n > MAX_ROUNDS) return NAN;
  double rx[MAX_ROUNDS], ry[MAX_ROUNDS], mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
  ranks(x, n, rx);
  ranks(y, n, ry);
  for (int i = 0; i < n; ++i) mx += rx[i] / n, my += ry[i] / n;
  for (int i = 0; i < n; ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

static tune_cmp_side *side_for(tune_cmp_side *arr, int *n, const char *label) {
  for (int i = 0; i < *n; ++i)
    if (!strcmp(arr[i].label, label)) return &arr[i];
  if (*n >= TUNE_CMP_MAX_SIDES) return NULL;
  tune_cmp_side *s = &arr[(*n)++];
  memset(s, 0, sizeof *s);
  snprintf(s->label, sizeof s->label, "%s", label);
  s->sm_mhz = -1;
  return s;
}

const tune_cmp_side *tune_cmp_best(const tune_cmp_side *arr, int n, int rounds) {
  const tune_cmp_side *best = NULL;
  double best_ns = INFINITY;
  for (int i = 0; i < n; ++i) {
    double m = tune_median(arr[i].ns, rounds);
    if (m > 0 && m < best_ns) { best_ns = m; best = &arr[i]; }
  }
  return best;
}

/* A candidate's name within its group: the peer's name, or tune's config id (configs differ
 * only far into their parameter text). */
static void row_label(const json_t *row, int peer, char *buf, size_t n) {
  const json_t *params = json_object_get(row, "params");
  if (peer) snprintf(buf, n, "%s", json_string_value(json_object_get(params, "peer")) ?: "peer");
  else snprintf(buf, n, "config %lld", (long long)json_integer_value(json_object_get(row, "config_id")));
}

static const char *str_of(const json_t *row, const char *key) {
  return json_string_value(json_object_get(row, key)) ?: "?";
}

void tune_cmp_group_read(const json_t *rows, size_t *i, tune_cmp_group *g) {
  size_t n = json_array_size(rows);
  memset(g, 0, sizeof *g);
  const json_t *first = json_array_get(rows, *i);
  g->problem = str_of(first, "problem");
  g->timing = str_of(first, "timing");
  for (; *i < n; ++*i) {
    const json_t *row = json_array_get(rows, *i);
    if (strcmp(str_of(row, "problem"), g->problem) || strcmp(str_of(row, "timing"), g->timing)) break;
    int peer = !strcmp(str_of(row, "side"), "peer");
    char label[160];
    row_label(row, peer, label, sizeof label);
    tune_cmp_side *s = peer ? side_for(g->peer, &g->n_peer, label) : side_for(g->tune, &g->n_tune, label);
    int round = (int)json_integer_value(json_object_get(row, "round"));
    if (!s || round < 1 || round > MAX_ROUNDS) continue;
    if (round > g->rounds) g->rounds = round;
    if (strcmp(str_of(row, "status"), "ok")) continue;
    s->ns[round - 1] = json_number_value(json_object_get(row, "median_ns"));
    int sm = (int)json_integer_value(json_object_get(row, "sm_mhz"));
    int w = (int)json_integer_value(json_object_get(row, "power_w"));
    if (sm > 0 && (s->sm_mhz < 0 || sm < s->sm_mhz)) s->sm_mhz = sm;
    if (w > s->power_w) s->power_w = w;
  }
  g->best_tune = tune_cmp_best(g->tune, g->n_tune, g->rounds);
  g->best_peer = tune_cmp_best(g->peer, g->n_peer, g->rounds);
  if (g->best_tune && g->best_peer) g->ratio = tune_ratio_of(g->best_peer->ns, g->best_tune->ns, g->rounds);
}

/* The median over the rounds of candidate `label` of `side` ("tune" or "peer") in (problem, timing),
 * 0 none. */
static double side_median(const json_t *rows, const char *problem, const char *timing, const char *side,
                          const char *label) {
  double ns[MAX_ROUNDS] = {0};
  size_t i;
  const json_t *row;
  json_array_foreach(rows, i, row) {
    char l[160];
    int round = (int)json_integer_value(json_object_get(row, "round"));
    if (strcmp(json_string_value(json_object_get(row, "problem")) ?: "", problem) ||
        strcmp(json_string_value(json_object_get(row, "timing")) ?: "", timing) ||
        strcmp(json_string_value(json_object_get(row, "side")) ?: "", side) ||
        strcmp(json_string_value(json_object_get(row, "status")) ?: "", "ok") || round < 1 || round > MAX_ROUNDS)
      continue;
    row_label(row, !strcmp(side, "peer"), l, sizeof l);
    if (!strcmp(l, label)) ns[round - 1] = json_number_value(json_object_get(row, "median_ns"));
  }
  return tune_median(ns, MAX_ROUNDS);
}

/* A launch-bound candidate of one side (arr[n]) that could have been its best: its burst median is
 * below the side's best sustained median. */
static int side_launch_bound(const json_t *rows, const tune_cmp_group *g, const tune_cmp_side *arr, int n,
                             const tune_cmp_side *best, const char *side) {
  if (!best) return 0;
  double best_sustained = tune_median(best->ns, g->rounds);
  for (int i = 0; i < n; ++i) {
    double sustained = tune_median(arr[i].ns, g->rounds);
    double burst = side_median(rows, g->problem, "burst", side, arr[i].label);
    if (burst > 0 && sustained > TUNE_CMP_LAUNCH_BOUND * burst && burst < best_sustained) return 1;
  }
  return 0;
}

int tune_cmp_launch_bound(const json_t *rows, const tune_cmp_group *g) {
  if (strcmp(g->timing, "sustained")) return 0;
  return side_launch_bound(rows, g, g->tune, g->n_tune, g->best_tune, "tune") ||
         side_launch_bound(rows, g, g->peer, g->n_peer, g->best_peer, "peer");
}

const char *tune_cmp_verdict(const json_t *rows, const tune_cmp_group *g) {
  return tune_cmp_launch_bound(rows, g) ? "launch-bound" : tune_ratio_verdict(&g->ratio);
}

/* g's row of the table, with its verdict (tune_cmp_verdict). */
static int print_group(FILE *f, const tune_cmp_group *g, const char *verdict) {
  const tune_cmp_side *t = g->best_tune, *p = g->best_peer;
  tune_ratio r = g->ratio;
  double tm = t ? tune_median(t->ns, g->rounds) : 0, pm = p ? tune_median(p->ns, g->rounds) : 0;
  fprintf(f, "| %s | %s | ", g->problem, g->timing);
  if (tm > 0) fprintf(f, "%.2f", tm / 1e3); else fprintf(f, "-");
  fprintf(f, " | %s | ", p ? p->label : "-");
  if (pm > 0) fprintf(f, "%.2f", pm / 1e3); else fprintf(f, "-");
  if (r.n) fprintf(f, " | %.3f (%.3f-%.3f, %d rounds) | %s", r.median, r.lo, r.hi, r.n, verdict);
  else fprintf(f, " | - | -");
  fprintf(f, " | %d / %d | %d / %d |\n", t ? t->sm_mhz : -1, p ? p->sm_mhz : -1, t ? t->power_w : 0, p ? p->power_w : 0);
  return r.n > 0;
}

static void print_header(FILE *f, const json_t *info) {
  fprintf(f, "### %s on %s\n\n", json_string_value(json_object_get(info, "recipe")) ?: "?",
          json_string_value(json_object_get(info, "device")) ?: "?");
  fprintf(f, "- device: %s (%s), driver %s, CUDA %s\n", json_string_value(json_object_get(info, "device")) ?: "?",
          json_string_value(json_object_get(info, "arch")) ?: "?", json_string_value(json_object_get(info, "driver")) ?: "?",
          json_string_value(json_object_get(info, "cuda")) ?: "?");
  fprintf(f, "- measured: %s to %s UTC (comparison %lld, %s)\n", json_string_value(json_object_get(info, "started_at")) ?: "?",
          json_string_value(json_object_get(info, "ended_at")) ?: "?", (long long)json_integer_value(json_object_get(info, "id")),
          json_string_value(json_object_get(info, "status")) ?: "?");
  fprintf(f, "- command: `%s`\n", json_string_value(json_object_get(info, "command")) ?: "?");
  const json_t *peer = json_object_get(info, "peer_info");
  if (json_is_object(peer))
    fprintf(f, "- peers: torch %s, CUDA %s, cuDNN %lld; timer %s\n", json_string_value(json_object_get(peer, "torch")) ?: "?",
            json_string_value(json_object_get(peer, "cuda")) ?: "?",
            (long long)json_integer_value(json_object_get(peer, "cudnn")),
            json_string_value(json_object_get(peer, "timer")) ?: "?");
  fprintf(f, "- ratio = peer time / tune time (above 1: tune faster), median and min-max over interleaved rounds; "
             "clocks: lowest SM MHz seen, power: highest W seen (tune / peer)\n\n");
  fprintf(f, "| problem | timing | tune [us] | peer | peer [us] | ratio | verdict | SM MHz | W |\n");
  fprintf(f, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
}

/* Per problem timed in both modes: do burst and sustained order tune's variants alike? */
static void print_rank_agreement(FILE *f, const json_t *rows) {
  size_t i;
  const json_t *row;
  const char *last = "";
  int header = 0;
  json_array_foreach(rows, i, row) {
    const char *problem = json_string_value(json_object_get(row, "problem")) ?: "";
    if (!strcmp(problem, last)) continue;
    last = problem;
    char labels[MAX_ROUNDS][160];
    double b[MAX_ROUNDS], s[MAX_ROUNDS];
    int n = 0;
    size_t j;
    const json_t *r2;
    json_array_foreach(rows, j, r2) {
      if (strcmp(json_string_value(json_object_get(r2, "problem")) ?: "", problem) ||
          strcmp(json_string_value(json_object_get(r2, "side")) ?: "", "tune") || n >= MAX_ROUNDS)
        continue;
      char l[160];
      row_label(r2, 0, l, sizeof l);
      int seen = 0;
      for (int k = 0; k < n && !seen; ++k) seen = !strcmp(labels[k], l);
      if (seen) continue;
      double mb = side_median(rows, problem, "burst", "tune", l), ms = side_median(rows, problem, "sustained", "tune", l);
      if (mb > 0 && ms > 0) {
        snprintf(labels[n], sizeof labels[n], "%s", l);
        b[n] = mb;
        s[n++] = ms;
      }
    }
    double rho = tune_rank_correlation(b, s, n);
    if (isnan(rho)) continue;
    if (!header) fprintf(f, "\nRank correlation of tune's variants, burst vs sustained medians (Spearman):\n\n");
    header = 1;
    fprintf(f, "- %s: %.2f over %d variants\n", problem, rho, n);
  }
}

int tune_compare_print(FILE *f, const json_t *info, const json_t *rows) {
  tune_cmp_group *g = calloc(1, sizeof *g);
  int n_rows = 0;
  if (!g) return 0;
  if (!json_array_size(rows)) { /* a recipe of the file with none of the problems asked for */
    free(g);
    return 0;
  }
  print_header(f, info);
  size_t i = 0, n = json_array_size(rows);
  int launch_bound = 0;
  while (i < n) {
    tune_cmp_group_read(rows, &i, g);
    const char *verdict = tune_cmp_verdict(rows, g);
    n_rows += print_group(f, g, verdict);
    launch_bound |= !strcmp(verdict, "launch-bound");
  }
  if (launch_bound)
    fprintf(f, "\nlaunch-bound: a candidate's sustained time is over %.1fx its burst time (back-to-back calls left the "
               "GPU idle between its kernels: the host's launch rate) and its burst time is below its side's best "
               "sustained one; the sustained ratio is not one of kernels.\n",
            TUNE_CMP_LAUNCH_BOUND);
  print_rank_agreement(f, rows);
  free(g);
  return n_rows;
}
