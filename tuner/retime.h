/* retime.h: timing stored results again, as `tune compare` and the end-of-problem selection of
 * `tune run` (reselect.h) do: each candidate's variant is built from the current recipe and its
 * binary taken from the compile cache or compiled now, so what is re-timed is the current
 * source; each timing is verified by the backend like any measurement. */
#ifndef TUNE_RETIME_H
#define TUNE_RETIME_H

#include "backend.h"
#include "db_compare.h"
#include "recipe.h"

typedef struct tune_retimed {
  db_top top;                            /* the stored result it re-times */
  tune_variant v;
  db_binary bin;
  char lowered[TUNE_MAX_LAUNCHES][512];
  int ready;                             /* 0: could not be prepared (printed why) */
} tune_retimed;

/* Prepare cv[0..n) (cv[i].top filled by the caller) for arch; at most 8 at once. */
int tune_retime_prepare(db_conn *db, tune_recipe *r, tune_problem *p, const tune_device_facts *facts,
                        const char *arch, tune_retimed *cv, int n, tune_err *err);
void tune_retime_release(tune_retimed *cv, int n);

/* One timing of a prepared candidate on the backend's current problem. */
int tune_retime_once(tune_backend *be, tune_recipe *r, tune_problem *p, const tune_problem_setup *setup,
                     const tune_retimed *cv, int sustained, db_result *res, tune_err *err);

/* The same sent to a backend of several GPUs (be->submit): on card (backend.h), its figures into
 * *res when collected under tag. */
int tune_retime_submit(tune_backend *be, tune_recipe *r, tune_problem *p, const tune_problem_setup *setup,
                       const tune_retimed *cv, int sustained, int card, db_result *res, int tag, tune_err *err);

/* A round's measurement row from a result (the caller sets ids, round and timing). */
void tune_measurement_from_result(db_measurement *m, const db_result *res);

#endif
