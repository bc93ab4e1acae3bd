/* lookahead_test.c: the next batch's compiles queued on the problem's pool (tuner/lookahead.c), on
 * the prune fixture (tests/fixtures/recipes/prune.lua: one parameter, SMEM_KB 1 | 64 | 250, each its
 * own binary) with NVRTC, an open compile pool and a fresh database, no GPU. A generation guesses
 * what is neither the batch's own job, nor cached, nor guessed already; a batch claims a guess by
 * its compile key once, waits for it on the pool and takes its binary; a key never guessed is not
 * claimed; the guesses of a generation two back that no batch claimed are stored in the compile
 * cache when its place is reused, and flush stores the rest.
 * Exit status: 0 when every CHECK passed. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "compile.h"
#include "db.h"
#include "lookahead.h"
#include "recipe.h"
#include "variant_job.h"

/* The job of config vi, key computed (what problem_run.c builds for a proposal). */
static int job_for(tune_recipe *r, const int *vi, const tune_problem *p, const tune_device_facts *d,
                   const char *templates, tune_variant *v, tune_compile_job *j, tune_err *err) {
  return tune_variant_job_for(r, vi, p, d, templates, d->arch, v, j, err);
}

static int cached(db_conn *db, const char *key) {
  tune_err e;
  tune_err_clear(&e);
  int has = 0;
  return db_binary_has(db, key, &has, &e) == TUNE_OK && has;
}

int main(void) {
  const char *src = getenv("SRC");
  if (!src) { fprintf(stderr, "lookahead_test: SRC not set\n"); return 1; }
  char path[PATH_MAX], templates[PATH_MAX + 16], dbpath[64];
  snprintf(path, sizeof path, "%s/tests/fixtures/recipes/prune.lua", src);
  snprintf(templates, sizeof templates, "%s/templates", src);
  snprintf(dbpath, sizeof dbpath, "/tmp/lookahead_test_%d.db", (int)getpid());
  tune_err err;
  tune_err_clear(&err);
  tune_recipes *set = NULL;
  db_conn *db = NULL;
  tune_ahead *a = NULL;
  tune_compile_async *pool = NULL;
  CHECK(tune_recipes_load(path, &set, &err) == TUNE_OK);
  CHECK(db_open(dbpath, 0, &db, &err) == TUNE_OK);
  CHECK(tune_ahead_new(&a, &err) == TUNE_OK);
  CHECK(tune_compile_open(2, &pool, &err) == TUNE_OK);
  if (!set || !db || !a || !pool) { fprintf(stderr, "%s\n", err.msg); return 1; }
  tune_recipe *r = &set->r[0];
  tune_problem *p = &r->problems[0];
  tune_device_facts d = {.sm_count = 132, .smem_per_block = 232448, .l2_bytes = 50 << 20};
  snprintf(d.arch, sizeof d.arch, "sm_90a");
  const int lo[1] = {0}, mid[1] = {1}, hi[1] = {2};

  /* no generation yet: nothing to claim */
  tune_variant vb, vl, vm, vh;
  tune_compile_job batch, jl, jm, jh;
  CHECK(job_for(r, lo, p, &d, templates, &vb, &batch, &err) == TUNE_OK);
  int at = -1, ref = -1, stored = 0;
  CHECK(tune_ahead_claim(a, batch.bin.key, &at, &ref) == 0);

  /* generation 1 while the batch (lo) compiles: lo is the batch's own, mid and hi are guessed,
     mid twice but queued once */
  CHECK(tune_ahead_begin(a, pool, db, &stored, &err) == TUNE_OK && stored == 0);
  CHECK(tune_ahead_guess(a, r, p, &d, mid, d.arch, templates, db, &batch, 1, &err) == TUNE_OK);
  CHECK(tune_ahead_guess(a, r, p, &d, lo, d.arch, templates, db, &batch, 1, &err) == TUNE_OK);
  CHECK(tune_ahead_guess(a, r, p, &d, mid, d.arch, templates, db, &batch, 1, &err) == TUNE_OK);
  CHECK(tune_ahead_guess(a, r, p, &d, hi, d.arch, templates, db, &batch, 1, &err) == TUNE_OK);
  CHECK(tune_ahead_queue(a, pool, &err) == TUNE_OK);

  /* the next batch proposes mid: claimed once, at the pool's first index (nothing else was queued) */
  CHECK(job_for(r, mid, p, &d, templates, &vm, &jm, &err) == TUNE_OK);
  CHECK(tune_ahead_claim(a, jm.bin.key, &at, &ref) == 1 && at == 0);
  int at2 = -1, ref2 = -1;
  CHECK(tune_ahead_claim(a, jm.bin.key, &at2, &ref2) == 0);
  CHECK(tune_ahead_claim(a, batch.bin.key, &at2, &ref2) == 0); /* never guessed */
  CHECK(tune_compile_wait(pool, at, NULL, &err) == TUNE_OK);
  tune_ahead_move(a, ref, &jm);
  CHECK(jm.bin.ok == 1 && jm.bin.cubin && jm.bin.cubin_size > 0);
  CHECK(!strcmp(jm.lowered[0], "prune_kernel"));

  /* generation 2: hi is guessed in generation 1 already, so nothing is added */
  CHECK(tune_ahead_begin(a, pool, db, &stored, &err) == TUNE_OK && stored == 0);
  CHECK(tune_ahead_guess(a, r, p, &d, hi, d.arch, templates, db, NULL, 0, &err) == TUNE_OK);
  CHECK(tune_ahead_queue(a, pool, &err) == TUNE_OK);
  CHECK(job_for(r, hi, p, &d, templates, &vh, &jh, &err) == TUNE_OK);
  CHECK(tune_ahead_claim(a, jh.bin.key, &at2, &ref2) == 0); /* batches claim from the newest only */
  CHECK(!cached(db, jh.bin.key));

  /* generation 3 reuses generation 1's place: its unclaimed guess (hi) goes to the cache; the
     claimed one (mid) is the batch's to store */
  CHECK(tune_ahead_begin(a, pool, db, &stored, &err) == TUNE_OK && stored == 1);
  CHECK(cached(db, jh.bin.key) && !cached(db, jm.bin.key));

  /* a guess queued and never claimed is stored by flush, after the pool finished */
  CHECK(job_for(r, lo, p, &d, templates, &vl, &jl, &err) == TUNE_OK);
  CHECK(tune_ahead_guess(a, r, p, &d, lo, d.arch, templates, db, NULL, 0, &err) == TUNE_OK);
  CHECK(tune_ahead_queue(a, pool, &err) == TUNE_OK);
  tune_compile_finish(pool);
  stored = 0;
  CHECK(tune_ahead_flush(a, db, &stored, &err) == TUNE_OK && stored == 1);
  CHECK(cached(db, jl.bin.key));

  tune_ahead_free(a);
  db_binary_release(&batch.bin);
  db_binary_release(&jl.bin);
  db_binary_release(&jm.bin);
  db_binary_release(&jh.bin);
  db_close(db);
  unlink(dbpath);
  tune_recipes_free(set);
  printf("lookahead_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
