/* speculate.h: compiles started ahead of the search strategy.
 *
 * Owns: while the GPU measures a batch, compiling in the background the configs the strategy is
 * likely to propose next, so that its next proposal often finds its binary ready. The guess is the
 * strategy's own (search_strategy_peek): bayes, which proposes one point per batch after its
 * design and would otherwise leave every compile of its run unoverlapped, ranks the candidates of
 * its next step by its acquisition, taking the point being measured at its model's mean; where a
 * strategy has no guess (none given, or it returns none), the configs one unit step (one parameter
 * to its next or previous value) from the best config so far. Before anything is measured, a
 * problem's space of at most TUNE_SPEC_WHOLE rounds of guesses is guessed whole (the strategy's
 * guesses first) and compiles beside the first batch, so that later proposals find their binaries
 * ready: on a small space, waiting for the first batches' compiles is most of a short search.
 * A guess changes nothing the strategy sees: a peek leaves the strategy as it was, a binary is
 * matched by its compile key (the content hash of everything that goes into it), and a guess never
 * taken is stored in the compile cache like any compile.
 * Not owned: proposing and guessing (search/), the batch's own compiles (problem_run.c, compile.h). */
#ifndef TUNE_SPECULATE_H
#define TUNE_SPECULATE_H

#include <stdint.h>

#include "compile.h"
#include "db.h"
#include "recipe.h"
#include "search.h"

#define TUNE_SPEC_MAX 16 /* guesses compiled per round */
#define TUNE_SPEC_ASK (2 * SEARCH_MAX_PARAMS) /* points considered per round: some are cached already */
#define TUNE_SPEC_KEPT 256 /* keys of stored guesses remembered, so a later cache hit counts as a guess */
#define TUNE_SPEC_WHOLE 2  /* a space of at most this many rounds (of `max` guesses) is guessed whole */
#define TUNE_SPEC_NO_BEST UINT64_MAX /* `best` when nothing has been measured yet */

typedef struct tune_spec tune_spec;

int tune_spec_new(tune_spec **out, tune_err *err);
/* When the previous round is done (else it does nothing: it never blocks), stores its binaries
 * that were not taken and, unless it would guess the same points for the same problem again, starts
 * a new one: the configs of `space` that `strat` guesses it proposes next (strat NULL, or no guess:
 * those one unit step from `best`, none when best is TUNE_SPEC_NO_BEST), likeliest first, then,
 * when best is TUNE_SPEC_NO_BEST and tune_spec_whole(space, max), the rest of the space; those
 * whose binaries `db` does not hold and that no
 * job of `batch` (n_batch, keys computed) compiles, at most `max` (<= TUNE_SPEC_MAX), on n_threads
 * threads. *compiled counts the binaries stored. */
int tune_spec_round(tune_spec *s, tune_recipe *r, const tune_problem *p, const tune_device_facts *facts,
                    const search_space *space, const search_strategy *strat, uint64_t best, const char *arch,
                    const char *templates, db_conn *db, const tune_compile_job *batch, int n_batch, int max,
                    int n_threads, int *compiled, tune_err *err);
/* 1 if `space` has at most TUNE_SPEC_WHOLE rounds of `max` guesses (and fits one round's list):
 * a round before anything is measured then guesses it whole, so it is worth starting. */
int tune_spec_whole(const search_space *space, int max);
/* If job j's key (computed) is one of the round's guesses: waits for it (adding the seconds to
 * *waited), moves its binary and lowered names into j and sets *taken = 1; else *taken = 0. An
 * error only when the compile pool itself failed. */
int tune_spec_take(tune_spec *s, tune_compile_job *j, int *taken, double *waited, tune_err *err);
/* 1 if `key` is the compile key of one of the last TUNE_SPEC_KEPT guesses a round stored untaken
 * (a round that finished before its guess was proposed), which it forgets: that one cache hit was
 * compiled ahead; later hits on the key are the cache's. */
int tune_spec_claim_stored(tune_spec *s, const char *key);
/* Joins the round and stores the binaries not taken (db NULL: drops them). */
int tune_spec_flush(tune_spec *s, db_conn *db, int *compiled, tune_err *err);
void tune_spec_free(tune_spec *s); /* joins first; NULL is a no-op */

#endif
