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

/* Print the comparison's table as Markdown: a header from info (db_comparison_info) and one
 * row per problem and timing from rows (db_comparison_rows), then, where both modes timed 3 or
 * more of tune's variants of a problem, the rank correlation of their burst and sustained
 * medians (do the modes order the variants alike?). Returns the number of rows with a ratio. */
int tune_compare_print(FILE *f, const json_t *info, const json_t *rows);

#endif
