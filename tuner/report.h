/* report.h: `tune report`, one self-contained HTML page drawn from a results database.
 *
 * The page holds, per recipe and problem, each search's progress (best-so-far median against
 * evaluations), the best variants on a roofline of the device's measured limits (peaks), the
 * ratio ranges of the latest comparison against the peers in both timing modes, and the
 * selections. Inline SVG and CSS only: no script, no network. Reads the database, never
 * writes it; numbers on the page are the database's, rounded for print. */
#ifndef TUNE_REPORT_H
#define TUNE_REPORT_H

#include <stdio.h>

#include "db.h"
#include "tune_err.h"

#define TUNE_REPORT_MAX_RECIPES 32
#define TUNE_REPORT_MAX_METRICS 16

typedef struct tune_report_opts {
  const char *db_path;                                /* shown on the page */
  const char *recipes[TUNE_REPORT_MAX_RECIPES];       /* names ("gemm*": a prefix); none: all */
  int n_recipes;
  const char *metrics_files[TUNE_REPORT_MAX_METRICS]; /* recipe files whose metrics (flops, bytes)
                                                         place the best variants on the roofline */
  int n_metrics_files;
} tune_report_opts;

/* Write the page for db to f. Errors (a query, a recipe file) fill err; f may then hold part of
 * a page. */
int tune_report_write(FILE *f, db_conn *db, const tune_report_opts *o, tune_err *err);

/* `tune report [options]`: the verb (commands.h conventions). */
int tune_cmd_report(int argc, char **argv);

#endif
