/* db_select.h: selection that survives noise (tuner/reselect.h) in the database: the
 * candidates of a (recipe source, problem, GPU, timing mode), the interleaved rounds that
 * re-timed them (a comparison of kind 'selection', each round a measurement) and the
 * selection row: the result chosen, by which rule and why. Schema 0007. */
#ifndef TUNE_DB_SELECT_H
#define TUNE_DB_SELECT_H

#include "db_compare.h"

/* Up to k configs with an ok, fully timed result of exactly this recipe source, problem, GPU
 * and timing mode (burst or sustained), fastest first, each config once (its fastest result).
 * Peers and code proposals are left out, as in db_top_results. */
int db_selection_candidates(db_conn *db, int64_t recipe_id, int64_t problem_id, int64_t device_id,
                            const char *timing, int k, db_top *out, int *n, tune_err *err);

/* A comparison row of kind 'selection' for the rounds of one run's selections. */
int db_selection_rounds_begin(db_conn *db, int64_t recipe_id, int64_t device_id, int rounds, int top_k,
                              const char *timing, int64_t *comparison_id, tune_err *err);

typedef struct db_selection {
  int64_t run_id, recipe_id, problem_id, device_id, comparison_id, result_id;
  char timing[12];
  const char *rule;        /* "fastest", "tie-fewer-resources" or "only" */
  const char *why;         /* in words */
  const char *candidates;  /* JSON array: result_id, median_ns, lo_ns, hi_ns per candidate */
} db_selection;

int db_selection_put(db_conn *db, const db_selection *s, tune_err *err);

#endif
