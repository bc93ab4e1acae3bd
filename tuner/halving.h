/* halving.h: successive halving of timings. A batch's variants are first
 * timed with a few samples; only those whose quick time is within `margin`
 * (a fraction, e.g. 0.1) of the best time known so far (quick or full) get
 * the full timing. The others keep their quick time as their result: they
 * cannot be the best, and a strategy needs only their rank.
 *
 * `tune run --halving` (or a recipe's `halving = F`) uses it (problem_run.c);
 * the backend supplies the quick timing (tune_measure_req.samples). */
#ifndef TUNE_HALVING_H
#define TUNE_HALVING_H

#include <stddef.h>

/* samples of a quick timing (the worker's minimum: a median of 3) */
#define TUNE_HALVING_QUICK_SAMPLES 3
/* margin of `--halving` and of `halving = true` */
#define TUNE_HALVING_DEFAULT_MARGIN 0.1
/* how a stored quick-only result's error_text starts (status ok). db_query_best
 * matches this text (db/db_query.c): keep the two in step. */
#define TUNE_HALVING_NOTE "halving: quick timing only"

/* 1 when a variant whose quick median is quick_ns deserves the full timing,
 * given best_ns (the best time so far, INFINITY when none) and the margin. A
 * failed quick timing (quick_ns < 0) never does. */
int tune_halving_full(double quick_ns, double best_ns, double margin);

/* Decide a whole batch: full[i] = tune_halving_full(quick[i], best, margin),
 * where best is min(best_ns, the batch's quick times). Returns how many are
 * to be timed fully. */
int tune_halving_batch(const double *quick_ns, int n, double best_ns, double margin, int *full);

/* The error_text of a result that keeps its quick timing: TUNE_HALVING_NOTE,
 * the sample count and the margin, then `prev` (the backend's own note, may be
 * empty or NULL) after "; ". */
void tune_halving_note(char *buf, size_t n, int samples, double margin, const char *prev);

/* 1 when error_text marks a quick-only result. */
int tune_halving_is_quick(const char *error_text);

/* [ms] what a quick measure of `quick` samples costs, modelled from a recorded
 * full one of `samples` samples (replay, tune-bench-search): the recorded
 * verify-and-time time measure_ms scaled by min(1, quick / samples).
 * Verification and warm-up are part of measure_ms and are scaled with it: an
 * estimate, not a measurement (it flatters halving). */
double tune_halving_quick_ms(double measure_ms, int samples, int quick);

#endif
