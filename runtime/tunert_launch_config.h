/* tunert_launch_config.h: the driver's description of one kernel launch with
 * an optional thread-block cluster (cuLaunchKernelEx), built the same way by
 * the tuner's worker (tuner/worker.c) and by libtunert (tunert_launch.c), so
 * that a variant is launched in deployment exactly as it was timed. Header
 * only; needs cuda.h's types (both sides load the driver at run time). */
#ifndef TUNERT_LAUNCH_CONFIG_H
#define TUNERT_LAUNCH_CONFIG_H

#include <cuda.h>
#include <string.h>

#include "tunert_cluster.h"

/* The launch of grid x block with `shared` bytes of dynamic shared memory on
 * `stream`; when the cluster is not 1x1x1 (tunert_cluster_used), its cluster
 * attribute is written to *at and referenced by the returned config, so *at
 * must outlive the launch. */
static inline CUlaunchConfig tunert_launch_config(const unsigned grid[3], const unsigned block[3], unsigned shared,
                                                  CUstream stream, const unsigned cluster[3], CUlaunchAttribute *at) {
  CUlaunchConfig c;
  memset(&c, 0, sizeof c);
  memset(at, 0, sizeof *at);
  c.gridDimX = grid[0], c.gridDimY = grid[1], c.gridDimZ = grid[2];
  c.blockDimX = block[0], c.blockDimY = block[1], c.blockDimZ = block[2];
  c.sharedMemBytes = shared;
  c.hStream = stream;
  if (tunert_cluster_used(cluster)) {
    at->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at->value.clusterDim.x = cluster[0];
    at->value.clusterDim.y = cluster[1];
    at->value.clusterDim.z = cluster[2];
    c.attrs = at;
    c.numAttrs = 1;
  }
  return c;
}

#endif
