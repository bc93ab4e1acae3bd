/* halving.h: successive halving of timings. A batch's variants are first
 * timed with a few samples; only those whose quick time is within `margin`
 * (a fraction, e.g. 0.1) of the best time known so far (quick or full) get
 * the full timing. The others keep their quick time as their result: they
 * cannot be the best, and a strategy needs only their rank.
 *
 * This file holds the decision; the backend supplies the quick timing. */
#ifndef TUNE_HALVING_H
#define TUNE_HALVING_H

/* 1 when a variant whose quick median is quick_ns deserves the full timing,
 * given best_ns (the best time so far, INFINITY when none) and the margin. A
 * failed quick timing (quick_ns < 0) never does. */
int tune_halving_full(double quick_ns, double best_ns, double margin);

/* Decide a whole batch: full[i] = tune_halving_full(quick[i], best, margin),
 * where best is min(best_ns, the batch's quick times). Returns how many are
 * to be timed fully. */
int tune_halving_batch(const double *quick_ns, int n, double best_ns, double margin, int *full);

#endif
