// cluster.cuh: softmax_row for CLUSTER > 1 (included by softmax.cuh, inside its configuration).
//
// Row r is owned by cluster r of CLUSTER CTAs (grid rows * CLUSTER, cluster dims {CLUSTER, 1, 1},
// block BLOCK). CTA k of the cluster (%cluster_ctarank) holds segment k of the row (softmax.cuh's
// tile_at: whole vectors, ceil(vectors / CLUSTER) each, the last ones short) in registers: x is read
// from DRAM once, and a long row becomes CLUSTER small CTAs, so a few long rows (64-256 of 128k)
// spread over many SMs and an SM holds several row slices in flight. Rows of a length that is no
// multiple of the vector width take softmax.cuh's scalar path through the same three steps.
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

// Thread k < CLUSTER of the CTA stores the CTA's pair into slot [rank] of CTA k's `pairs`.
__device__ __forceinline__ void push_pair(float2 *pairs, unsigned rank, float m, float s) {
  if (threadIdx.x < CLUSTER) tune::st_dsmem_f2(&pairs[rank], threadIdx.x, make_float2(m, s));
}

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
softmax_row(const bf16 *__restrict__ x, bf16 *__restrict__ y, int rows, int cols) {
  __shared__ float red_smem[2 * sm::kWarps];
  __shared__ float2 pairs[CLUSTER];  // (max in log2 units, sum) of each CTA of the cluster
  // launched without clusters of CLUSTER CTAs the slices cannot be combined: write nothing (the
  // outputs stay poisoned and verification fails; uniform over the grid, so no barrier waits)
  if (tune::cluster_size() != CLUSTER) return;
  const unsigned rank = tune::cluster_rank();
  const long long row = tune::cluster_id_x();  // uniform over the cluster; the grid is rows * CLUSTER
  const sm::tile_ctx c = sm::tile_at(x, y, row, rank, threadIdx.x, cols);
  const sm::reducer red{red_smem};

  float ml, s;  // the thread's max (log2 units) and its sum against b, then the CTA's pair
  float b = 0.f;
  sm::vec v[sm::kIters];
  constexpr int kE = 2 * sm::vec::kN;  // bf16 per vector
  float e[EXP_ONCE ? sm::kIters : 1][kE];
  if (c.aligned) {
    sm::load_stage(c, 0, v);
    ml = sm::max_of(v, tune::neg_inf()) * sm::kLog2e;
    b = sm::exp_base(ml);
    s = 0.f;
    if constexpr (EXP_ONCE) {
#pragma unroll
      for (int j = 0; j < sm::kIters; ++j)
#pragma unroll
        for (int w = 0; w < sm::vec::kN; ++w) {
          e[j][2 * w] = tune::exp2_approx(fmaf(tune::bf16_lo(v[j].w[w]), sm::kLog2e, -b));
          e[j][2 * w + 1] = tune::exp2_approx(fmaf(tune::bf16_hi(v[j].w[w]), sm::kLog2e, -b));
          s += e[j][2 * w] + e[j][2 * w + 1];
        }
    } else {
      s = sm::sum_exp(v, b, 0.f);
    }
    float m = ml;
    red.online(m, s);  // the CTA's pair, in every thread
    push_pair(pairs, rank, m, s);
  } else {
    sm::scalar_stats(c, red, ml, s);  // the CTA's pair, in every thread
    push_pair(pairs, rank, ml, s);
  }
  tune::cluster_sync();
  float gm = pairs[0].x, gs = pairs[0].y;
#pragma unroll
  for (int k = 1; k < CLUSTER; ++k) tune::online_merge(gm, gs, pairs[k].x, pairs[k].y);

  if (!c.aligned) {
    sm::scalar_write(c, gm, 1.f / gs);
  } else if constexpr (EXP_ONCE) {
    const float f = tune::exp2_approx(b - gm) * (1.f / gs);  // thread max -> row max, then 1 / sum
#pragma unroll
    for (int j = 0; j < sm::kIters; ++j) {
      sm::vec o;
#pragma unroll
      for (int w = 0; w < sm::vec::kN; ++w) o.w[w] = tune::pack_bf16x2(e[j][2 * w] * f, e[j][2 * w + 1] * f);
      sm::store_vec(c, j, o);
    }
  } else {
    sm::store_stage(c, 0, v, gm, 1.f / gs);
  }
}
