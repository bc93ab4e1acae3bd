// cluster.cuh: softmax_row for CLUSTER > 1 (included by softmax.cuh, inside its configuration).
//
// Row r is owned by cluster r of CLUSTER CTAs (grid rows * CLUSTER, cluster dims {CLUSTER, 1, 1},
// block BLOCK). CTA k of the cluster (%cluster_ctarank) holds elements [k * S, (k + 1) * S) of the
// row, S = COLS / CLUSTER, in registers: x is read from DRAM once, and a long row becomes CLUSTER
// small CTAs, so a few long rows (64-256 of 128k) spread over many SMs and an SM holds several row
// slices in flight.
//
//   1. load the slice; the thread's (max, sum) against its own max (EXP_ONCE 1: the exponentials
//      kept in fp32 registers); block reduction of the pairs
//   2. thread k < CLUSTER of the CTA stores the CTA's pair into slot [rank] of CTA k's `pairs`
//      (st.shared::cluster: every CTA pushes to every CTA), then one cluster barrier
//      (arrive.release, wait.acquire): every slot of every CTA is written and visible
//   3. each thread merges the CLUSTER pairs of its own CTA's `pairs` (the same order everywhere:
//      the same bits in every CTA), then writes its slice
// No CTA touches another's shared memory after the barrier, so none can exit while its shared
// memory is still written to: one barrier per row. Every barrier is executed by every thread of
// the cluster (.aligned: uniform control flow).
#pragma once
#include "common/cluster.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
softmax_row(const bf16 *__restrict__ x, bf16 *__restrict__ y, int rows) {
  __shared__ float red_smem[2 * sm::kWarps];
  __shared__ float2 pairs[CLUSTER];  // (max in log2 units, sum) of each CTA of the cluster
  // launched without clusters of CLUSTER CTAs the slices cannot be combined: write nothing (the
  // outputs stay poisoned and verification fails; uniform over the grid, so no barrier waits)
  if (tune::cluster_size() != CLUSTER) return;
  const unsigned rank = tune::cluster_rank();
  const long long row = tune::cluster_id_x();  // uniform over the cluster; the grid is rows * CLUSTER
  const long long off = row * COLS + (long long)rank * sm::kSegLen + threadIdx.x * sm::kVecElems;
  const sm::tile_ctx c{x + off, y + off, true};
  const sm::reducer red{red_smem};

  sm::vec v[sm::kIters];
  sm::load_stage(c, 0, v);
  constexpr int kE = 2 * sm::vec::kN;  // bf16 per vector
  const float ml = sm::max_of(v, tune::neg_inf()) * sm::kLog2e;  // the thread's max (log2 units)
  float e[EXP_ONCE ? sm::kIters : 1][kE];
  float s = 0.f;
  if constexpr (EXP_ONCE) {
#pragma unroll
    for (int j = 0; j < sm::kIters; ++j)
#pragma unroll
      for (int w = 0; w < sm::vec::kN; ++w) {
        e[j][2 * w] = tune::exp2_approx(fmaf(tune::bf16_lo(v[j].w[w]), sm::kLog2e, -ml));
        e[j][2 * w + 1] = tune::exp2_approx(fmaf(tune::bf16_hi(v[j].w[w]), sm::kLog2e, -ml));
        s += e[j][2 * w] + e[j][2 * w + 1];
      }
  } else {
    s = sm::sum_exp(v, ml, 0.f);
  }
  float m = ml;
  red.online(m, s);  // the CTA's pair, in every thread
  if (threadIdx.x < CLUSTER) tune::st_dsmem_f2(&pairs[rank], threadIdx.x, make_float2(m, s));
  tune::cluster_sync();
  float gm = pairs[0].x, gs = pairs[0].y;
#pragma unroll
  for (int k = 1; k < CLUSTER; ++k) tune::online_merge(gm, gs, pairs[k].x, pairs[k].y);

  if constexpr (EXP_ONCE) {
    const float f = tune::exp2_approx(ml - gm) * (1.f / gs);  // thread max -> row max, then 1 / sum
#pragma unroll
    for (int j = 0; j < sm::kIters; ++j) {
      sm::vec o;
#pragma unroll
      for (int w = 0; w < sm::vec::kN; ++w) o.w[w] = tune::pack_bf16x2(e[j][2 * w] * f, e[j][2 * w + 1] * f);
      tune::store_words<1, VEC_BYTES>(c.y + (long long)j * sm::kThreads * sm::kVecElems, o);
    }
  } else {
    sm::store_stage(c, 0, v, gm, 1.f / gs);
  }
}
