// cluster.cuh: softmax_row for CLUSTER > 1 (included by softmax.cuh, inside its configuration).
//
// Row r is owned by cluster r of CLUSTER CTAs (grid rows * CLUSTER, cluster dims {CLUSTER, 1, 1},
// block BLOCK). CTA k of the cluster (%cluster_ctarank) holds elements [k * S, (k + 1) * S) of the
// row, S = COLS / CLUSTER, in registers: x is read from DRAM once, and a long row becomes CLUSTER
// small CTAs (finer waves, more CTAs in flight per SM than one CTA per row allows).
//
//   1. load the slice; thread (max, sum) against the thread's own max (EXP_ONCE 1: the
//      exponentials kept in fp32 registers); block reduction of the (max, sum) pairs
//   2. thread 0 stores the CTA's pair in its shared memory; barrier.cluster.arrive.release +
//      wait.acquire: every CTA's pair is visible cluster-wide
//   3. lanes 0..CLUSTER-1 of every warp read the CLUSTER pairs through distributed shared memory
//      (mapa + ld.shared::cluster), merge them (the same butterfly in every warp and CTA: the same
//      bits), broadcast to the warp; barrier.cluster.arrive.relaxed says "done reading"
//   4. write the slice, then barrier.cluster.wait: no CTA exits (its shared memory released)
//      while another may still read its pair
// Every barrier is executed by every thread of the cluster (.aligned: warp-uniform control flow).
#pragma once

namespace smc {

__device__ __forceinline__ unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_nctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_id_x() {
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
// release: this thread's earlier shared-memory writes are visible to the threads that pass the wait
__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
// relaxed: only "this thread is done with remote reads"; orders nothing
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait_acquire() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// (max, sum) pair at the same shared-memory variable of CTA `rank` of the cluster
__device__ __forceinline__ float2 load_pair_of(const float2 *local, unsigned rank) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(local);
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(a), "r"(rank));
  float2 q;
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(q.x), "=f"(q.y) : "r"(remote) : "memory");
  return q;
}

}  // namespace smc

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
softmax_row(const bf16 *__restrict__ x, bf16 *__restrict__ y, int rows) {
  __shared__ float red_smem[2 * sm::kWarps];
  __shared__ float2 cta_pair;  // this CTA's (max in log2 units, sum), read by the whole cluster
  // launched without clusters of CLUSTER CTAs: the slices cannot be combined; write nothing
  // (uniform over the grid, so no barrier is left waiting)
  if (smc::cluster_nctarank() != CLUSTER) return;
  const unsigned rank = smc::cluster_ctarank();
  const long long row = smc::cluster_id_x();
  if (row >= rows) return;  // uniform over the cluster (the grid is rows * CLUSTER: never taken)
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
        e[j][2 * w] = tune::fast_exp2(fmaf(tune::bf16_lo(v[j].w[w]), sm::kLog2e, -ml));
        e[j][2 * w + 1] = tune::fast_exp2(fmaf(tune::bf16_hi(v[j].w[w]), sm::kLog2e, -ml));
        s += e[j][2 * w] + e[j][2 * w + 1];
      }
  } else {
    s = sm::sum_exp(v, ml, 0.f);
  }
  float m = ml;
  red.online(m, s);  // the CTA's pair, in every thread
  if (threadIdx.x == 0) cta_pair = make_float2(m, s);
  smc::cluster_arrive_release();
  smc::cluster_wait_acquire();

  const int lane = threadIdx.x % 32;
  float gm = tune::neg_inf(), gs = 0.f;
  if (lane < CLUSTER) {
    const float2 q = smc::load_pair_of(&cta_pair, (unsigned)lane);
    gm = q.x;
    gs = q.y;
  }
  smc::cluster_arrive_relaxed();  // this thread's remote reads are done
  tune::warp_reduce_online<CLUSTER>(gm, gs);  // lanes 0..CLUSTER-1: the row's pair
  gm = __shfl_sync(0xffffffffu, gm, 0);
  gs = __shfl_sync(0xffffffffu, gs, 0);

  if constexpr (EXP_ONCE) {
    const float f = tune::fast_exp2(ml - gm) * (1.f / gs);  // thread max -> row max, then 1 / sum
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
  smc::cluster_wait_acquire();  // keep cta_pair alive until every CTA of the cluster has read it
}
