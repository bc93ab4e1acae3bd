/* tunert_cluster.h: the rule a thread-block cluster launch must follow, shared
 * by the tuner (tuner/recipe.c checks a recipe's `cluster` per variant) and
 * libtunert (tunert_select.c checks an entry's cluster for a problem), so both
 * refuse the same geometries with the same words. Header-only, free of CUDA.
 *
 * A cluster {x, y, z}: every dim >= 1, at most TUNERT_CLUSTER_MAX blocks in
 * all (the portable limit: larger clusters need a non-portable opt-in per
 * kernel and are not offered), and each grid dim a multiple of the cluster's
 * (the driver refuses anything else). A grid with a zero dim is a step that is
 * not launched: only the cluster itself is checked then. {1, 1, 1} is a plain
 * launch. */
#ifndef TUNERT_CLUSTER_H
#define TUNERT_CLUSTER_H

#include <stdint.h>
#include <stdio.h>

#define TUNERT_CLUSTER_MAX 8 /* blocks per cluster, portable limit (sm_90) */

/* 1 when the cluster (unsigned dims; 0 read as 1) is not 1x1x1. */
static inline int tunert_cluster_used(const unsigned cluster[3]) {
  return cluster[0] > 1 || cluster[1] > 1 || cluster[2] > 1;
}

/* 0 when the cluster may launch the grid, else -1 with the reason in why. */
static inline int tunert_cluster_check(const int64_t cluster[3], const unsigned grid[3], char *why, size_t n) {
  static const char axis[3] = {'x', 'y', 'z'};
  for (int k = 0; k < 3; ++k)
    if (cluster[k] < 1) {
      snprintf(why, n, "cluster {%lld, %lld, %lld}: %c is %lld, want >= 1", (long long)cluster[0], (long long)cluster[1],
               (long long)cluster[2], axis[k], (long long)cluster[k]);
      return -1;
    }
  /* each dim >= 1 here; a dim over the limit is checked first so the product cannot overflow */
  int over = cluster[0] > TUNERT_CLUSTER_MAX || cluster[1] > TUNERT_CLUSTER_MAX || cluster[2] > TUNERT_CLUSTER_MAX;
  if (over || cluster[0] * cluster[1] * cluster[2] > TUNERT_CLUSTER_MAX) {
    char blocks[32];
    if (over) snprintf(blocks, sizeof blocks, "more than %d", TUNERT_CLUSTER_MAX);
    else snprintf(blocks, sizeof blocks, "%lld", (long long)(cluster[0] * cluster[1] * cluster[2]));
    snprintf(why, n, "cluster {%lld, %lld, %lld}: %s blocks, over the portable limit of %d blocks per cluster",
             (long long)cluster[0], (long long)cluster[1], (long long)cluster[2], blocks, TUNERT_CLUSTER_MAX);
    return -1;
  }
  if (!grid[0] || !grid[1] || !grid[2]) return 0; /* not launched */
  for (int k = 0; k < 3; ++k)
    if (grid[k] % (uint64_t)cluster[k]) {
      snprintf(why, n, "cluster {%lld, %lld, %lld} does not divide grid {%u, %u, %u} (%c: %u %% %lld = %llu)",
               (long long)cluster[0], (long long)cluster[1], (long long)cluster[2], grid[0], grid[1], grid[2], axis[k],
               grid[k], (long long)cluster[k], (unsigned long long)(grid[k] % (uint64_t)cluster[k]));
      return -1;
    }
  return 0;
}

#endif
