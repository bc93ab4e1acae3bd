/* prune_test.c: the occupancy arithmetic of compile-time pruning
 * (tuner/prune.c) and the successive-halving decision (tuner/halving.c),
 * checked against values worked out by hand from the sm_90 limits. Exit
 * status 0 when every CHECK passed, 1 otherwise. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "halving.h"
#include "prune.h"

static int n_passed, n_failed;
#define CHECK(c)                                                           \
  do {                                                                     \
    if (c) n_passed++;                                                     \
    else {                                                                 \
      n_failed++;                                                          \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
    }                                                                      \
  } while (0)
#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static void test_occupancy(void) {
  tune_sm_limits l;
  char why[256];
  CHECK(tune_sm_limits_for("sm_90a", 0, &l) == 0);
  CHECK(l.max_threads_sm == 2048 && l.smem_per_block == 232448);
  CHECK(tune_sm_limits_for("sm_42", 0, &l) == -1);
  CHECK(tune_sm_limits_for("nonsense", 0, &l) == -1);
  CHECK(tune_sm_limits_for("sm_90", 100000, &l) == 0 && l.smem_per_block == 100000); /* device opt-in wins */
  tune_sm_limits_for("sm_90", 0, &l);
  /* 256 threads, 32 registers, no smem: 8 blocks x 8 warps = 64 warps: full */
  CHECK(NEAR(tune_occupancy(&l, 256, 32, 0, why, sizeof why), 1.0));
  /* 128 registers: 4096 per warp, 16 warps per SM, 2 blocks of 8 warps: 16/64 */
  CHECK(NEAR(tune_occupancy(&l, 256, 128, 0, why, sizeof why), 0.25));
  /* 33 registers round up to 40 per thread (1280 per warp): 51 warps, 6 blocks of 8: 48/64 */
  CHECK(NEAR(tune_occupancy(&l, 256, 33, 0, why, sizeof why), 0.75));
  /* 100 KiB of smem per block: 2 blocks (233472 / (102400 + 1024)), 4 warps each: 8/64 */
  CHECK(NEAR(tune_occupancy(&l, 128, 16, 102400, why, sizeof why), 0.125));
  /* 32 threads: the 32-block limit: 32/64 */
  CHECK(NEAR(tune_occupancy(&l, 32, 16, 0, why, sizeof why), 0.5));
  /* cannot launch */
  CHECK(tune_occupancy(&l, 2048, 16, 0, why, sizeof why) == 0 && strstr(why, "threads"));
  CHECK(tune_occupancy(&l, 1024, 128, 0, why, sizeof why) == 0 && strstr(why, "registers per block"));
  CHECK(tune_occupancy(&l, 128, 300, 0, why, sizeof why) == 0 && strstr(why, "registers per thread"));
  CHECK(tune_occupancy(&l, 128, 16, 256000, why, sizeof why) == 0 && strstr(why, "shared memory"));
  /* the check: prefix, threshold */
  CHECK(tune_prune_check(&l, 128, 16, 256000, 0, why, sizeof why) == 1 && !strncmp(why, TUNE_PRUNED_PREFIX, strlen(TUNE_PRUNED_PREFIX)));
  CHECK(tune_prune_check(&l, 256, 128, 0, 0.3, why, sizeof why) == 1 && strstr(why, "occupancy 0.250"));
  CHECK(tune_prune_check(&l, 256, 128, 0, 0.25, why, sizeof why) == 0);
  CHECK(tune_prune_check(&l, 256, 128, 0, 0, why, sizeof why) == 0);
}

static void test_halving(void) {
  CHECK(tune_halving_full(100, INFINITY, 0.1) == 1); /* nothing known yet */
  CHECK(tune_halving_full(110, 100, 0.1) == 1);
  CHECK(tune_halving_full(111, 100, 0.1) == 0);
  CHECK(tune_halving_full(-1, 100, 0.1) == 0);       /* failed quick timing */
  double q[] = {130, 100, 108, -1, 250};
  int full[5];
  /* the batch's own best (100) beats the known best (120) */
  CHECK(tune_halving_batch(q, 5, 120, 0.1, full) == 2);
  CHECK(!full[0] && full[1] && full[2] && !full[3] && !full[4]);
  CHECK(tune_halving_batch(q, 5, 50, 0.1, full) == 0); /* nothing near a much better known best */
  CHECK(tune_halving_batch(q, 5, INFINITY, 2.0, full) == 4);
}

int main(void) {
  test_occupancy();
  test_halving();
  printf("prune_test: %d passed, %d failed\n", n_passed, n_failed);
  return n_failed ? 1 : 0;
}
