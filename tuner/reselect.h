/* reselect.h: selection that survives noise. At the end of a problem, `tune run` re-times the
 * fastest few results of the problem (this recipe source, GPU and timing mode) in interleaved
 * rounds (A B C A B C ...), so that clock and thermal drift land on every candidate alike, and
 * chooses by the rule below; the rounds are measurements of a comparison of kind 'selection',
 * the choice a row of `selections` (db_select.h), which `tune db best`, v_best and bundles
 * rank first.
 *
 * Rule: each candidate's statistic is the median of its round medians and its spread the
 * range [min, max] of them. The fastest statistic leads; every candidate whose range reaches
 * the leader's (lo <= leader's hi) is tied with it, and among the tied the one with the fewest
 * resources wins: fewer kernel launches, then less shared memory (static + dynamic), then fewer
 * registers per thread, then the faster statistic. A candidate that failed any round (wrong,
 * launch error) is out. Replay and compile-only runs do not re-time (no GPU). */
#ifndef TUNE_RESELECT_H
#define TUNE_RESELECT_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "db.h"
#include "recipe.h"
#include "retime.h"

#define TUNE_RESELECT_TOP 4     /* candidates re-timed per problem */
#define TUNE_RESELECT_ROUNDS 3  /* interleaved rounds */

typedef struct tune_reselect_cand {
  int64_t result_id;
  int ok;                       /* every round verified and timed */
  double median_ns, lo_ns, hi_ns;
  int launches, shared_bytes, registers;
} tune_reselect_cand;

/* A prepared candidate's resources (launches, shared memory, registers), as the rule compares them. */
void tune_reselect_resources(tune_reselect_cand *c, const tune_retimed *v);

/* The index of the chosen candidate (-1: none ok), *rule "fastest", "tie-fewer-resources" or
 * "only", and why in words. Pure: tested without a GPU. */
int tune_reselect_choose(const tune_reselect_cand *c, int n, const char **rule, char *why, size_t why_n);

typedef struct tune_reselect_req {
  db_conn *db;
  tune_backend *be;             /* with the problem set (its inputs and reference) */
  tune_recipe *r;
  tune_problem *p;
  const tune_problem_setup *setup;
  const tune_device_facts *facts;
  int64_t run_id, recipe_id, problem_id, device_id;
  int sustained;
  double *t_measure;            /* NULL, or [s] wall time in the backend's measure is added here */
} tune_reselect_req;

/* Re-time and record the selection of one problem (nothing when it has fewer than two ok results:
 * then the only one is recorded with rule "only"). */
int tune_reselect(const tune_reselect_req *q, tune_err *err);

/* Record the choice among n candidates that another command timed in `rounds` interleaved rounds
 * of comparison comparison_id (tune compare's sustained rounds): ns[i * rounds + k] is candidate
 * i's median in round k, c[i].ok says every round of it was verified and timed, c[i]'s result id
 * and resources are set. Fills the ok candidates' statistics, then chooses and records as
 * tune_reselect does (q: db, ids, problem and mode; the backend is not used). *pick: the chosen
 * index, -1 when none is ok (then nothing is recorded). */
int tune_reselect_record(const tune_reselect_req *q, int64_t comparison_id, tune_reselect_cand *c, const double *ns,
                         int rounds, int n, int *pick, tune_err *err);

#endif
