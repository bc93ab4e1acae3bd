/* report_int.h: what the files of tune report share (report.h): the data gathered from the
 * database, and one writer per section of the page.
 *
 * The data is JSON owned by tune_report_data (freed by tune_report_data_free); section writers
 * only read it and print XHTML to f. */
#ifndef TUNE_REPORT_INT_H
#define TUNE_REPORT_INT_H

#include <stdio.h>

#include <jansson.h>

#include "report.h"

typedef struct tune_report_data {
  json_t *progress;    /* db_report_progress rows of the recipes asked for */
  json_t *best;        /* db_query_best_where rows; "flops", "bytes" added where metrics are known */
  json_t *peaks;       /* db_report_peaks rows */
  json_t *devices;     /* db_report_devices rows */
  json_t *selections;  /* db_report_selections rows */
  json_t *comparisons; /* [{"info": db_comparison_info, "rows": db_comparison_rows}], the latest of
                          kind 'compare' per recipe */
  json_t *metrics;     /* per --metrics file: {"file", "recipes": [{name, source_hash}]} */
} tune_report_data;

/* 1 when recipe name is one the options ask for (all when none given). */
int tune_report_wants(const tune_report_opts *o, const char *name);

int tune_report_gather(db_conn *db, const tune_report_opts *o, tune_report_data *d, tune_err *err);
void tune_report_data_free(tune_report_data *d);

/* Add "flops" and "bytes" per launch to the best rows whose (recipe name, problem hash) a
 * recipe of o's metrics files has (report_metrics.c); records the files in d->metrics. */
int tune_report_add_metrics(const tune_report_opts *o, tune_report_data *d, tune_err *err);

/* The sections, each one <section> (report_progress.c, report_roofline.c, report_peers.c,
 * report_selections.c). */
void tune_report_progress(FILE *f, const tune_report_data *d);
void tune_report_roofline(FILE *f, const tune_report_data *d);
void tune_report_peers(FILE *f, const tune_report_data *d);
void tune_report_selections(FILE *f, const tune_report_data *d);

/* Small shared accessors of the JSON rows. */
static inline const char *tune_report_str(const json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}
static inline double tune_report_num(const json_t *o, const char *k) {
  return json_number_value(json_object_get(o, k)); /* 0 when absent or null */
}

#endif
