/* fuzz_proposer.c: the LLM hook's response validation (tuner/proposer.c).
 *
 * The input is a proposer's stdout. It goes through tune_llm_take_response,
 * the half of tune_llm_propose after the exchange, with the state of a real
 * run: the fixture recipe llm_region (a template with a TUNE:REGION, so code
 * proposals are spliced), its enumerated space, an in-memory database that
 * records every proposal, and a code set. Each input gets a fresh tune_llm and
 * code set, so inputs do not depend on each other. Rejections are expected
 * results; only crashes, sanitizer reports and broken invariants count. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code_proposal.h"
#include "db.h"
#include "fuzz_util.h"
#include "proposer.h"
#include "recipe.h"
#include "search.h"

#define MAX_OUT 16

static tune_recipes *set;
static search_space *space;
static db_conn *db;
static db_device device = {.name = "fuzz"};
static const tune_proposer_opts opts = {.command = "fuzz"};

static void need(int ok, const char *what, const tune_err *err) {
  if (ok) return;
  fprintf(stderr, "fuzz_proposer: %s: %s\n", what, err->msg);
  abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  fuzz_quiet_stdout();
  tune_err err = {0};
  need(tune_recipes_load_root(TUNE_FUZZ_SRC "/tests/fixtures/recipes/llm_region.lua", TUNE_FUZZ_SRC "/tests/fixtures",
                              &set, &err) == TUNE_OK, "loading the fixture recipe", &err);
  tune_recipe *r = &set->r[0];
  int nv[SEARCH_MAX_PARAMS];
  for (int i = 0; i < r->n_params; ++i) nv[i] = r->params[i].n_values;
  search_space_def def = {.n_params = r->n_params, .n_values = nv, .n_constraints = r->n_constraints,
                          .check = tune_recipe_check, .ctx = r};
  need(search_space_enumerate(&def, &space, &err) == TUNE_OK, "enumerating its space", &err);
  need(db_open(":memory:", 0, &db, &err) == TUNE_OK, "opening an in-memory database", &err);
  return 0;
}

/* A fresh database now and then: every proposal is a row, and a long campaign must not grow without end. */
static void rotate_db(void) {
  static unsigned runs;
  if (++runs % 4096) return;
  tune_err err = {0};
  db_close(db);
  need(db_open(":memory:", 0, &db, &err) == TUNE_OK, "reopening the in-memory database", &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rotate_db();
  tune_recipe *r = &set->r[0];
  tune_code_set codes;
  tune_code_set_init(&codes, r->n_problems);
  tune_llm_ctx c = {.opts = &opts, .recipe = r, .problem = &r->problems[0], .space = space, .device = &device,
                    .db = db, .quiet = 1, .codes = &codes};
  tune_llm *l;
  tune_err err = {0};
  need(tune_llm_new(&c, &l, &err) == TUNE_OK, "tune_llm_new", &err);
  uint64_t out[MAX_OUT];
  char origins[MAX_OUT][32];
  int n_out = -1, n_code = -1;
  int rc = tune_llm_take_response(l, 1, "0000000000000000", (const char *)data, size, out, origins, MAX_OUT,
                                  &n_out, &n_code, &err);
  need(rc == TUNE_OK, "recording the proposals", &err);
  if (n_out < 0 || n_code < 0 || n_out + n_code > MAX_OUT || codes.n != n_code) {
    fprintf(stderr, "fuzz_proposer: %d points and %d code variants (set %d) for a batch of %d\n", n_out, n_code,
            codes.n, MAX_OUT);
    abort();
  }
  fuzz_note("%d point(s) and %d code variant(s) accepted", n_out, n_code);
  for (int i = 0; i < n_out; ++i)
    if (search_space_find(space, out[i]) < 0) { fprintf(stderr, "fuzz_proposer: accepted a point outside the space\n"); abort(); }
  tune_llm_free(l);
  tune_code_set_free(&codes);
  return 0;
}
