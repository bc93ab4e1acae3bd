/* reselect_test.c: the selection rule of tune run (tuner/reselect.h): the fastest leads, a
 * candidate whose round range reaches the leader's is tied, and among the tied the one with the
 * fewest resources wins; candidates that failed a round are out. */
#include <string.h>

#include "check.h"
#include "reselect.h"

static tune_reselect_cand cand(int64_t id, double med, double lo, double hi, int launches, int smem, int regs) {
  tune_reselect_cand c = {.result_id = id, .ok = 1, .median_ns = med, .lo_ns = lo, .hi_ns = hi,
                          .launches = launches, .shared_bytes = smem, .registers = regs};
  return c;
}

int main(void) {
  const char *rule;
  char why[600];

  /* apart: the fastest wins whatever its resources */
  tune_reselect_cand apart[3] = {cand(1, 120, 118, 122, 1, 1000, 40), cand(2, 100, 99, 101, 2, 90000, 168),
                                 cand(3, 130, 125, 131, 1, 0, 32)};
  CHECK(tune_reselect_choose(apart, 3, &rule, why, sizeof why) == 1);
  CHECK(!strcmp(rule, "fastest") && strstr(why, "fastest of 3") && !strstr(why, "tied"));

  /* overlapping ranges: the tied candidate with fewer launches wins, and says why */
  tune_reselect_cand tie[3] = {cand(1, 101, 99, 103, 1, 40000, 90), cand(2, 100, 98, 102, 2, 20000, 80),
                               cand(3, 110, 108, 111, 1, 0, 32)};
  CHECK(tune_reselect_choose(tie, 3, &rule, why, sizeof why) == 0);
  CHECK(!strcmp(rule, "tie-fewer-resources") && strstr(why, "result 2") && strstr(why, "1 vs 2 launches"));

  /* tied on launches: less shared memory, then fewer registers */
  tune_reselect_cand smem[2] = {cand(1, 100, 99, 101, 1, 50000, 60), cand(2, 100.5, 100, 102, 1, 30000, 200)};
  CHECK(tune_reselect_choose(smem, 2, &rule, why, sizeof why) == 1 && !strcmp(rule, "tie-fewer-resources"));
  tune_reselect_cand regs[2] = {cand(1, 100, 99, 101, 1, 30000, 128), cand(2, 100.5, 100, 102, 1, 30000, 96)};
  CHECK(tune_reselect_choose(regs, 2, &rule, why, sizeof why) == 1);

  /* tied, but the leader is the smaller one: it stays, and the reason says a tie was seen */
  tune_reselect_cand lead_small[2] = {cand(1, 100, 99, 101, 1, 1000, 40), cand(2, 100.5, 100, 102, 1, 2000, 40)};
  CHECK(tune_reselect_choose(lead_small, 2, &rule, why, sizeof why) == 0);
  CHECK(!strcmp(rule, "fastest") && strstr(why, "tied ones use no fewer resources"));

  /* the range edge: touching counts as tied, a hair beyond does not */
  tune_reselect_cand edge[2] = {cand(1, 100, 99, 101, 2, 1000, 40), cand(2, 102, 101, 103, 1, 0, 32)};
  CHECK(tune_reselect_choose(edge, 2, &rule, why, sizeof why) == 1);
  edge[1].lo_ns = 101.01;
  CHECK(tune_reselect_choose(edge, 2, &rule, why, sizeof why) == 0);

  /* a candidate that failed a round is never chosen, even when it was fastest and smallest */
  tune_reselect_cand failed[2] = {cand(1, 90, 89, 91, 1, 0, 32), cand(2, 100, 99, 101, 2, 1000, 64)};
  failed[0].ok = 0;
  CHECK(tune_reselect_choose(failed, 2, &rule, why, sizeof why) == 1 && !strcmp(rule, "only"));
  failed[1].ok = 0;
  CHECK(tune_reselect_choose(failed, 2, &rule, why, sizeof why) == -1);

  printf("reselect_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
