/* speculate_test.c: compiles ahead of the strategy (tuner/speculate.c), on the prune fixture
 * (tests/fixtures/recipes/prune.lua: one parameter, SMEM_KB 1 | 64 | 250) with NVRTC and a fresh
 * database, no GPU. From the middle config (64) a round guesses its two neighbours (1 and 250); a
 * job with a guess's compile key takes that binary (ok, cubin, kernel name) and a job with another
 * key takes nothing; the flush stores the guess not taken in the compile cache (a later proposal of
 * it counts as compiled ahead once: tune_spec_claim_stored), and a round from
 * the same point then has nothing left to guess (every neighbour is cached); a round from a new
 * best point guesses its uncached neighbour. Given a strategy, a round guesses what the strategy's
 * peek names (exhaustive: its next configs, beyond the unit steps), and the unit steps when the
 * strategy names nothing.
 * Exit status: 0 when every CHECK passed. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "compile.h"
#include "db.h"
#include "recipe.h"
#include "search.h"
#include "speculate.h"
#include "variant_job.h"

/* The job of config vi, key computed (what problem_run.c builds for a proposal). */
static int job_for(tune_recipe *r, const int *vi, const tune_problem *p, const tune_device_facts *d,
                   const char *templates, tune_variant *v, tune_compile_job *j, tune_err *err) {
  return tune_variant_job_for(r, vi, p, d, templates, d->arch, v, j, err);
}

int main(void) {
  const char *src = getenv("SRC");
  if (!src) { fprintf(stderr, "speculate_test: SRC not set\n"); return 1; }
  char path[PATH_MAX], templates[PATH_MAX + 16], dbpath[64];
  snprintf(path, sizeof path, "%s/tests/fixtures/recipes/prune.lua", src);
  snprintf(templates, sizeof templates, "%s/templates", src);
  snprintf(dbpath, sizeof dbpath, "/tmp/speculate_test_%d.db", (int)getpid());
  tune_err err;
  tune_err_clear(&err);
  tune_recipes *set = NULL;
  db_conn *db = NULL;
  search_space *sp = NULL;
  tune_spec *spec = NULL;
  CHECK(tune_recipes_load(path, &set, &err) == TUNE_OK);
  CHECK(db_open(dbpath, 0, &db, &err) == TUNE_OK);
  if (!set || !db) { fprintf(stderr, "%s\n", err.msg); return 1; }
  tune_recipe *r = &set->r[0];
  tune_problem *p = &r->problems[0];
  int nv[SEARCH_MAX_PARAMS] = {r->params[0].n_values};
  search_space_def def = {.n_params = r->n_params, .n_values = nv, .n_constraints = r->n_constraints,
                          .check = tune_recipe_check, .ctx = r};
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK && sp && sp->n_points == 3);
  tune_device_facts d = {.sm_count = 132, .smem_per_block = 232448, .l2_bytes = 50 << 20};
  snprintf(d.arch, sizeof d.arch, "sm_90a");
  int mid[1] = {1}, lo[1] = {0}, hi[1] = {2};
  uint64_t best = search_point_encode(sp, mid);
  CHECK(tune_spec_new(&spec, &err) == TUNE_OK);

  /* the batch compiles the middle config itself: only its neighbours are guessed */
  tune_variant vb, vl, vh;
  tune_compile_job batch, jl, jh;
  CHECK(job_for(r, mid, p, &d, templates, &vb, &batch, &err) == TUNE_OK);
  int stored = 0;
  CHECK(tune_spec_round(spec, r, p, &d, sp, NULL, best, d.arch, templates, db, &batch, 1, 8, 2, &stored, &err) == TUNE_OK);
  CHECK(stored == 0);

  /* the next proposal is a neighbour: its binary was compiled ahead */
  CHECK(job_for(r, lo, p, &d, templates, &vl, &jl, &err) == TUNE_OK);
  int taken = 0;
  double waited = 0;
  CHECK(tune_spec_take(spec, &jl, &taken, &waited, &err) == TUNE_OK);
  CHECK(taken == 1);
  CHECK(jl.bin.ok == 1 && jl.bin.cubin && jl.bin.cubin_size > 0);
  CHECK(!strcmp(jl.lowered[0], "prune_kernel"));
  /* taken once only */
  tune_compile_job jl2;
  tune_variant vl2;
  CHECK(job_for(r, lo, p, &d, templates, &vl2, &jl2, &err) == TUNE_OK);
  CHECK(tune_spec_take(spec, &jl2, &taken, &waited, &err) == TUNE_OK && taken == 0);
  /* the batch's own config was never guessed */
  CHECK(tune_spec_take(spec, &batch, &taken, &waited, &err) == TUNE_OK && taken == 0);

  /* flush: the guess not taken (SMEM_KB 250: it compiles; it only cannot launch) is cached */
  CHECK(tune_spec_flush(spec, db, &stored, &err) == TUNE_OK);
  CHECK(stored == 1);
  CHECK(job_for(r, hi, p, &d, templates, &vh, &jh, &err) == TUNE_OK);
  db_binary cached;
  CHECK(db_binary_get(db, jh.bin.key, &cached, &err) == TUNE_OK);
  db_binary_release(&cached);
  CHECK(db_binary_get(db, jl.bin.key, &cached, &err) == TUNE_ENOTFOUND); /* taken: the caller stores it */
  tune_err_clear(&err);
  /* a proposal that finds the stored guess in the cache was compiled ahead, once */
  CHECK(tune_spec_claim_stored(spec, jh.bin.key) == 1);
  CHECK(tune_spec_claim_stored(spec, jh.bin.key) == 0);
  CHECK(tune_spec_claim_stored(spec, jl.bin.key) == 0); /* taken from the round, never stored by it */

  /* with the taken one stored as problem_run.c does, nothing is left to guess around the middle */
  CHECK(db_binary_put(db, &jl.bin, &err) == TUNE_OK);
  stored = 0;
  CHECK(tune_spec_round(spec, r, p, &d, sp, NULL, best, d.arch, templates, db, &batch, 1, 8, 2, &stored, &err) == TUNE_OK);
  CHECK(tune_spec_flush(spec, db, &stored, &err) == TUNE_OK && stored == 0);
  /* a new best point (1 KiB): its one neighbour, the middle config, is not cached (only the batch
     compiled it, and no batch is given now): guessed, then cached by the flush */
  CHECK(tune_spec_round(spec, r, p, &d, sp, NULL, search_point_encode(sp, lo), d.arch, templates, db, NULL, 0, 8, 2, &stored,
                        &err) == TUNE_OK);
  CHECK(tune_spec_flush(spec, db, &stored, &err) == TUNE_OK && stored == 1);
  CHECK(db_binary_get(db, batch.bin.key, &cached, &err) == TUNE_OK);
  db_binary_release(&cached);

  /* with a strategy, the guesses are its peek: exhaustive, having proposed the 1 KiB config, will
     propose the middle and the 250 KiB ones next; unit steps from 1 KiB would name the middle only */
  char dbpath2[80];
  snprintf(dbpath2, sizeof dbpath2, "/tmp/speculate_test_%d_peek.db", (int)getpid());
  db_conn *db2 = NULL;
  search_strategy *strat = NULL;
  CHECK(db_open(dbpath2, 0, &db2, &err) == TUNE_OK);
  CHECK(search_strategy_new("exhaustive", sp, 1, &strat, &err) == TUNE_OK);
  uint64_t first;
  int n_first = 0;
  CHECK(strat && search_strategy_next_batch(strat, &first, 1, &n_first, &err) == TUNE_OK && n_first == 1);
  CHECK(first == search_point_encode(sp, lo));
  stored = 0;
  CHECK(tune_spec_round(spec, r, p, &d, sp, strat, first, d.arch, templates, db2, NULL, 0, 8, 2, &stored, &err) ==
        TUNE_OK);
  CHECK(tune_spec_flush(spec, db2, &stored, &err) == TUNE_OK && stored == 2);
  /* nothing left to propose, so no guess from the strategy: the unit steps from the best (the middle
     config), of which only the 1 KiB one is not cached yet */
  uint64_t rest[2];
  int n_rest = 0;
  CHECK(search_strategy_next_batch(strat, rest, 2, &n_rest, &err) == TUNE_OK && n_rest == 2);
  stored = 0;
  CHECK(tune_spec_round(spec, r, p, &d, sp, strat, best, d.arch, templates, db2, NULL, 0, 8, 2, &stored, &err) ==
        TUNE_OK);
  CHECK(tune_spec_flush(spec, db2, &stored, &err) == TUNE_OK && stored == 1);
  CHECK(db_binary_get(db2, jl.bin.key, &cached, &err) == TUNE_OK);
  db_binary_release(&cached);
  search_strategy_free(strat);
  db_close(db2);
  unlink(dbpath2);

  /* nothing measured yet: a space of at most two rounds of guesses (3 points, 8 a round) is
     guessed whole; with one guess a round it is not, and with no best there is nothing to step from */
  char dbpath3[80];
  snprintf(dbpath3, sizeof dbpath3, "/tmp/speculate_test_%d_whole.db", (int)getpid());
  db_conn *db3 = NULL;
  CHECK(db_open(dbpath3, 0, &db3, &err) == TUNE_OK);
  CHECK(tune_spec_whole(sp, 8) == 1 && tune_spec_whole(sp, 1) == 0);
  stored = 0;
  CHECK(tune_spec_round(spec, r, p, &d, sp, NULL, TUNE_SPEC_NO_BEST, d.arch, templates, db3, NULL, 0, 1, 1, &stored, &err) ==
        TUNE_OK);
  CHECK(tune_spec_flush(spec, db3, &stored, &err) == TUNE_OK && stored == 0);
  CHECK(tune_spec_round(spec, r, p, &d, sp, NULL, TUNE_SPEC_NO_BEST, d.arch, templates, db3, &batch, 1, 8, 2, &stored, &err) ==
        TUNE_OK);
  CHECK(tune_spec_flush(spec, db3, &stored, &err) == TUNE_OK && stored == 2); /* all but the batch's own */
  CHECK(db_binary_get(db3, jl.bin.key, &cached, &err) == TUNE_OK);
  db_binary_release(&cached);
  CHECK(db_binary_get(db3, jh.bin.key, &cached, &err) == TUNE_OK);
  db_binary_release(&cached);
  db_close(db3);
  unlink(dbpath3);

  db_binary_release(&batch.bin);
  db_binary_release(&jl.bin);
  db_binary_release(&jl2.bin);
  db_binary_release(&jh.bin);
  tune_spec_free(spec);
  search_space_free(sp);
  db_close(db);
  tune_recipes_free(set);
  unlink(dbpath);
  printf("speculate_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
