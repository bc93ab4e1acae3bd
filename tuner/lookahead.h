/* lookahead.h: the next batch's compiles, queued behind this batch's.
 *
 * Owns: for a strategy whose next batch is known before this one is measured (exhaustive and
 * random: search_strategy_peek gives exactly their next points), the compile jobs of the next
 * batch's configs - the guesses - queued on the problem's compile pool behind the current batch's
 * own compiles, so that the pool does not idle at a batch boundary while the GPU waits for the
 * next batch's first compile. A batch claims a guess by its compile key (tune_ahead_claim) and
 * waits for it on the pool like for one of its own compiles; a guess no batch claims is stored in
 * the compile cache. Guesses are made in generations, one per batch: a batch claims from the
 * newest generation, the one made while the batch before it was measured, and a generation is
 * emptied (its unclaimed binaries stored) when the one after the next begins.
 * Not owned: proposing and peeking (search/), the batch's own jobs and the pool (problem_run.c,
 * compile.h), guesses for an adaptive strategy (speculate.h). */
#ifndef TUNE_LOOKAHEAD_H
#define TUNE_LOOKAHEAD_H

#include "compile.h"
#include "db.h"
#include "recipe.h"

#define TUNE_AHEAD_MAX 32 /* guesses per generation: one batch (TUNE_BATCH) */

typedef struct tune_ahead tune_ahead;

int tune_ahead_new(tune_ahead **out, tune_err *err);
/* Begins a new generation in the place of the one before the newest: waits on `pool` for that
 * one's unclaimed guesses and stores their binaries in `db` (*compiled counts them). */
int tune_ahead_begin(tune_ahead *a, tune_compile_async *pool, db_conn *db, int *compiled, tune_err *err);
/* Adds to the new generation the guess of variant vi (values per parameter) of problem p, unless
 * the variant is skipped, its binary is cached in `db`, a job of `batch` (n_batch, keys computed)
 * compiles it, it is guessed already, or the generation is full. */
int tune_ahead_guess(tune_ahead *a, tune_recipe *r, const tune_problem *p, const tune_device_facts *facts,
                     const int *vi, const char *arch, const char *templates, db_conn *db,
                     const tune_compile_job *batch, int n_batch, tune_err *err);
/* Queues the new generation's guesses on `pool`, in the order added. */
int tune_ahead_queue(tune_ahead *a, tune_compile_async *pool, tune_err *err);
/* If `key` is the compile key of an unclaimed guess of the newest generation: claims it and
 * returns 1 with its index on the pool in *pool_index and its handle in *ref; else 0. */
int tune_ahead_claim(tune_ahead *a, const char *key, int *pool_index, int *ref);
/* The claimed guess `ref`, done on the pool (tune_compile_wait): its binary and lowered names
 * move into j. */
void tune_ahead_move(tune_ahead *a, int ref, tune_compile_job *j);
/* After the pool finished: stores every unclaimed guess (db NULL: drops them). */
int tune_ahead_flush(tune_ahead *a, db_conn *db, int *compiled, tune_err *err);
void tune_ahead_free(tune_ahead *a); /* the pool finished first; NULL is a no-op */

#endif
