// reduce.cuh: warp and block reductions (sum, max, and the (max, sum) pair of online softmax).
// Shared by softmax, normalization and any family that reduces a row inside a warp or a block.
//
//   warp_reduce_sum<W>(v), warp_reduce_max<W>(v)   xor butterfly over aligned groups of W lanes
//                                                   (W = 32: the whole warp); every lane of the
//                                                   group gets the result. All 32 lanes must call.
//   block_reduce_sum<WARPS>(v, smem), block_reduce_max<WARPS>(v, smem)
//                                                   over the whole block of WARPS * 32 threads;
//                                                   smem: WARPS floats of shared memory; every
//                                                   thread gets the result. Contains two
//                                                   __syncthreads (all threads must call); smem may
//                                                   be reused right after it returns.
//   online_merge(m, s, m2, s2)                      (m, s) <- merge of two online-softmax states in
//                                                   log2 units: m = max, s = sum of 2^(x - m)
//   warp_reduce_online<W>(m, s), block_reduce_online<WARPS>(m, s, smem)   the pair reduction
//                                                   (smem: 2 * WARPS floats)
// (The template parameter is spelled Warps: families pass -DWARPS=... to NVRTC.)
// neg_inf and exp2_approx come with it (common/fast_math.cuh).
#pragma once

#include "common/fast_math.cuh"

namespace tune {

template <int W = 32> __device__ __forceinline__ float warp_reduce_sum(float v) {
  static_assert(W >= 1 && W <= 32 && (W & (W - 1)) == 0, "warp_reduce: W must be a power of two <= 32");
#pragma unroll
  for (int off = W / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

template <int W = 32> __device__ __forceinline__ float warp_reduce_max(float v) {
  static_assert(W >= 1 && W <= 32 && (W & (W - 1)) == 0, "warp_reduce: W must be a power of two <= 32");
#pragma unroll
  for (int off = W / 2; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

template <int Warps> __device__ __forceinline__ float block_reduce_sum(float v, float *smem) {
  static_assert(Warps >= 1 && Warps <= 32, "block_reduce: 1..32 warps");
  v = warp_reduce_sum(v);
  if constexpr (Warps == 1) return v;
  if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = v;
  __syncthreads();
  float r = smem[0];
#pragma unroll
  for (int w = 1; w < Warps; ++w) r += smem[w];  // same order in every thread: same result
  __syncthreads();
  return r;
}

template <int Warps> __device__ __forceinline__ float block_reduce_max(float v, float *smem) {
  static_assert(Warps >= 1 && Warps <= 32, "block_reduce: 1..32 warps");
  v = warp_reduce_max(v);
  if constexpr (Warps == 1) return v;
  if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = v;
  __syncthreads();
  float r = smem[0];
#pragma unroll
  for (int w = 1; w < Warps; ++w) r = fmaxf(r, smem[w]);
  __syncthreads();
  return r;
}

// Merge (m2, s2) into (m, s): both are online-softmax states in log2 units (m = max of the values
// seen, s = sum of 2^(x - m)). A state that saw nothing is (-inf, 0) and merges as the identity.
__device__ __forceinline__ void online_merge(float &m, float &s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == neg_inf()) return;  // both empty
  s = s * exp2_approx(m - mn) + s2 * exp2_approx(m2 - mn);
  m = mn;
}

template <int W = 32> __device__ __forceinline__ void warp_reduce_online(float &m, float &s) {
#pragma unroll
  for (int off = W / 2; off > 0; off >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, off);
    online_merge(m, s, m2, s2);
  }
}

template <int Warps> __device__ __forceinline__ void block_reduce_online(float &m, float &s, float *smem) {
  static_assert(Warps >= 1 && Warps <= 32, "block_reduce: 1..32 warps");
  warp_reduce_online(m, s);
  if constexpr (Warps == 1) return;
  if (threadIdx.x % 32 == 0) {
    smem[threadIdx.x / 32] = m;
    smem[Warps + threadIdx.x / 32] = s;
  }
  __syncthreads();
  m = smem[0];
  s = smem[Warps];
#pragma unroll
  for (int w = 1; w < Warps; ++w) online_merge(m, s, smem[w], smem[Warps + w]);
  __syncthreads();
}

}  // namespace tune
