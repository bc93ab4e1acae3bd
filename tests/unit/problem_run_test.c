/* problem_run_test.c: the decisions between the stages of a problem run (tuner/problem_run.c):
 * how many variants a batch asks for under a budget, the best-result update (new and resumed
 * results alike, never a quick-only timing), and the halving passes (which pass comes first,
 * which variants the full pass times). Exit status 0 when every CHECK passed. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "halving.h"
#include "problem_run.h"

static db_result result(db_status st, double ns) {
  db_result r;
  memset(&r, 0, sizeof r);
  r.status = st;
  r.median_ns = ns;
  return r;
}

static void batch_want(void) {
  CHECK(tune_batch_want(0, 0, 0) == TUNE_BATCH);         /* no budget: full batches */
  CHECK(tune_batch_want(0, 1000, 0) == TUNE_BATCH);
  CHECK(tune_batch_want(10, 0, 0) == 10);                /* what is left of the budget */
  CHECK(tune_batch_want(40, 35, 0) == 5);
  CHECK(tune_batch_want(100, 0, 0) == TUNE_BATCH);
  CHECK(tune_batch_want(40, 40, 0) <= 0);                /* spent: the problem is done */
  CHECK(tune_batch_want(40, 45, 0) <= 0);
  CHECK(tune_batch_want(10, 10, 1) == TUNE_BATCH);       /* a sweep ignores the budget */
}

static void best_update(void) {
  tune_best b;
  tune_best_init(&b);
  CHECK(isinf(b.ns) && !b.have_point && b.label[0] == 0);
  tune_proposal p = {.point = 7, .code = -1};
  db_result r = result(DB_OK, 100);
  CHECK(tune_best_offer(&b, &r, 0, &p, "{\"A\":1}") == 1);
  CHECK(b.ns == 100 && b.have_point && b.point == 7 && !strcmp(b.label, "{\"A\":1}"));
  p.point = 8;
  r = result(DB_OK, 120); /* slower */
  CHECK(tune_best_offer(&b, &r, 0, &p, "slower") == 0 && b.ns == 100 && b.point == 7);
  r = result(DB_OK, 100); /* a tie keeps the first */
  CHECK(tune_best_offer(&b, &r, 0, &p, "tie") == 0 && !strcmp(b.label, "{\"A\":1}"));
  r = result(DB_OK, 50); /* a quick-only timing cannot be a best */
  CHECK(tune_best_offer(&b, &r, 1, &p, "quick") == 0 && b.ns == 100);
  r = result(DB_WRONG, 10);
  CHECK(tune_best_offer(&b, &r, 0, &p, "wrong") == 0);
  r = result(DB_SUSPICIOUS, 10);
  CHECK(tune_best_offer(&b, &r, 0, &p, "suspicious") == 0);
  r = result(DB_OK, NAN);
  CHECK(tune_best_offer(&b, &r, 0, &p, "nan") == 0 && b.ns == 100);
  /* a code variant becomes the best, but speculation keeps guessing around the template's best */
  tune_proposal code = {.point = 0, .code = 3};
  r = result(DB_OK, 80);
  CHECK(tune_best_offer(&b, &r, 0, &code, "{\"A\":2} llm-code:4") == 1);
  CHECK(b.ns == 80 && b.point == 7 && !strcmp(b.label, "{\"A\":2} llm-code:4"));
  /* a label longer than the best's buffer is cut, not overrun */
  char long_label[2100];
  memset(long_label, 'x', sizeof long_label - 1);
  long_label[sizeof long_label - 1] = 0;
  r = result(DB_OK, 70);
  CHECK(tune_best_offer(&b, &r, 0, &p, long_label) == 1 && strlen(b.label) == sizeof b.label - 1);
}

static void passes(void) {
  CHECK(tune_first_pass(0) == TUNE_PASS_FULL);
  CHECK(tune_first_pass(-1) == TUNE_PASS_FULL);
  CHECK(tune_first_pass(0.1) == TUNE_PASS_QUICK);
  CHECK(tune_pass_samples(TUNE_PASS_QUICK) == TUNE_HALVING_QUICK_SAMPLES);
  CHECK(tune_pass_samples(TUNE_PASS_FULL) == 0);
  CHECK(tune_pass_keeps_quick(TUNE_PASS_FULL, 1, 0) == 1);
  CHECK(tune_pass_keeps_quick(TUNE_PASS_FULL, 1, 1) == 0);
  CHECK(tune_pass_keeps_quick(TUNE_PASS_FULL, 0, 0) == 0);
  CHECK(tune_pass_keeps_quick(TUNE_PASS_QUICK, 1, 0) == 0);

  /* quick results 100 (ok), 105 (ok), 200 (ok), 50 (suspicious), 90 (wrong), none */
  int has[6] = {1, 1, 1, 1, 1, 0}, full[6];
  db_result q[6] = {result(DB_OK, 100), result(DB_OK, 105), result(DB_OK, 200), result(DB_SUSPICIOUS, 50),
                    result(DB_WRONG, 90), result(DB_OK, 1)};
  tune_pass_select_full(6, has, q, INFINITY, 0.1, full);
  /* within 10 % of the batch's best quick time (100); the suspicious one always; a failure and
     a variant without a quick result never */
  CHECK(full[0] == 1 && full[1] == 1 && full[2] == 0 && full[3] == 1 && full[4] == 0 && full[5] == 0);
  tune_pass_select_full(6, has, q, 60, 0.1, full); /* a best of 60 from earlier batches: only the suspicious */
  CHECK(full[0] == 0 && full[1] == 0 && full[2] == 0 && full[3] == 1);
  tune_pass_select_full(6, has, q, 60, 1.0, full); /* margin 100 %: up to 120 */
  CHECK(full[0] == 1 && full[1] == 1 && full[2] == 0);
}

int main(void) {
  batch_want();
  best_update();
  passes();
  printf("problem_run_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
