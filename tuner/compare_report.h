/* compare_report.h: the table of a comparison (tune compare), from its measurements.
 *
 * Per problem and timing mode: tune's variant with the lowest median over the rounds, the peer
 * with the lowest median over the rounds, and their ratio round by round (peer time / tune
 * time: above 1 tune is faster). A ratio is its median with the min-max range over the rounds;
 * "faster" needs the whole range above 1, "slower" the whole range below, else "parity".
 * Pure computation and printing: no GPU, no SQL (the rows come from db_comparison_rows). */
#ifndef TUNE_COMPARE_REPORT_H
#define TUNE_COMPARE_REPORT_H

#include <stdio.h>

#include <jansson.h>

typedef struct tune_ratio {
  double median, lo, hi; /* peer / tune over the rounds both sides timed */
  int n;                 /* rounds, 0: no ratio */
} tune_ratio;

/* The median of the positive values of v[n] (up to 64; mean of the middle two when even), 0 none. */
double tune_median(const double *v, int n);

/* The ratio of paired round times peer_ns[i] / tune_ns[i] (entries <= 0 are left out). */
tune_ratio tune_ratio_of(const double *peer_ns, const double *tune_ns, int n);
/* "faster" (the whole range above 1 at the printed three decimals), "slower" (below), or
 * "parity" ("-" without rounds). */
const char *tune_ratio_verdict(const tune_ratio *r);

/* Spearman's rank correlation of x[n] and y[n] (ties get their mean rank); NAN for n < 3. */
double tune_rank_correlation(const double *x, const double *y, int n);

#define TUNE_CMP_MAX_ROUNDS 64
#define TUNE_CMP_MAX_SIDES 32

/* One side's candidate in a (problem, timing) group: its round times and clocks. */
typedef struct tune_cmp_side {
  char label[160];                    /* the peer's name, or "config ID" for tune */
  double ns[TUNE_CMP_MAX_ROUNDS];     /* by round - 1, 0 not timed */
  int sm_mhz, power_w;                /* lowest clock (-1 unknown), highest power over the rounds */
} tune_cmp_side;

/* The rows of one (problem, timing) of a comparison, as both the text table and `tune report`
 * read them: each side's candidates, the one with the lowest median over the rounds per side,
 * and their ratio. */
typedef struct tune_cmp_group {
  const char *problem, *timing;       /* borrowed from the rows */
  tune_cmp_side tune[TUNE_CMP_MAX_SIDES], peer[TUNE_CMP_MAX_SIDES];
  int n_tune, n_peer, rounds;
  const tune_cmp_side *best_tune, *best_peer; /* NULL: that side timed nothing */
  tune_ratio ratio;                   /* best peer / best tune, n 0 without both */
} tune_cmp_group;

/* The candidate of arr[n] with the lowest median over the rounds, NULL if none was timed. */
const tune_cmp_side *tune_cmp_best(const tune_cmp_side *arr, int n, int rounds);

/* Read rows [*i, the end of its (problem, timing)) of db_comparison_rows into g (zeroed here);
 * *i moves past them. */
void tune_cmp_group_read(const json_t *rows, size_t *i, tune_cmp_group *g);

/* Sustained time over burst time above which a candidate counts as launch-bound: above the
 * slowdown that power-limited clocks cause under sustained load, below that of calls whose launches
 * leave the GPU idle between kernels (docs/measurement.md has the published comparisons' figures). */
#define TUNE_CMP_LAUNCH_BOUND 1.4
/* 1 when g is a sustained group in which a candidate of tune's or the peer's side took over
 * TUNE_CMP_LAUNCH_BOUND times its own burst median (the burst group of the same problem in rows)
 * while that burst median is below its side's best sustained one: the sustained ratio then
 * measures a host's launch rate (e.g. a peer launched from Python against tune's C), not kernels,
 * or left out the side's fastest kernel. */
int tune_cmp_launch_bound(const json_t *rows, const tune_cmp_group *g);
/* g's verdict: "launch-bound" where tune_cmp_launch_bound, else tune_ratio_verdict of its ratio. */
const char *tune_cmp_verdict(const json_t *rows, const tune_cmp_group *g);

/* Print the comparison's table as Markdown: a header from info (db_comparison_info) and one
 * row per problem and timing from rows (db_comparison_rows; verdict "launch-bound" where
 * tune_cmp_launch_bound, with a note under the table), then, where both modes timed 3 or
 * more of tune's variants of a problem, the rank correlation of their burst and sustained
 * medians (do the modes order the variants alike?). Returns the number of rows with a ratio. */
int tune_compare_print(FILE *f, const json_t *info, const json_t *rows);

#endif
