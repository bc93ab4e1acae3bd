// rmsnorm.cuh: RMSNorm with weight over rows of H bf16, optionally fused with a residual add.
//
//   RESIDUAL 0:  y = x * rsqrt(mean(x^2) + eps) * w
//   RESIDUAL 1:  h = bf16(x + r)  (written: the updated residual stream)
//                y = h * rsqrt(mean(h^2) + eps) * w
//
// x, r, y, h [T, H] bf16 row-major; w [H] bf16; math in fp32 on the bf16 values (with
// RESIDUAL, on h as stored, so re-reading h gives the same result as keeping it), y rounded once.
//
// Tunables (recipes/rmsnorm.lua):
//   ROW_MODE   0 | 1           0: a row per warp (BLOCK / 32 rows per block, shuffle reduction);
//                              1: a row per block (shuffles, then the warps through shared memory)
//   BLOCK      128 .. 1024     threads per block (__launch_bounds__ maximum)
//   VEC_BYTES  4 | 8 | 16      bytes per load / store instruction (2, 4 or 8 bf16)
//   CACHE_ROW  0 | 1           1: the thread's slice of the row (x, or h) stays in registers between
//                              the sum of squares and the output (x, r read once); 0: the output
//                              pass re-reads x (RESIDUAL 0) or h (RESIDUAL 1) from memory (L1/L2)
//   CACHE_HINT 0 | 1           1: x, r through ld.global.nc; y, h through st.global.cs (streaming).
//                              w is always read through the read-only path (reused by every row).
//   MIN_BLOCKS 1 | 2           __launch_bounds__ minimum resident blocks per SM
//   ITERS      CACHE_ROW 1: vectors of the row a thread holds, a capacity (rows of up to
//                              ITERS * threads per row vectors; the recipe sets it from H)
// Problem constant (recipe `defines`): RESIDUAL. The hidden size H is a kernel argument, any value
// >= 1: vectors past the row's end read as 0 and are not written. An H that is no multiple of
// kVecElems puts row starts at 2-byte boundaries, where vector accesses would be misaligned: such
// rows take the scalar path (one element per access, same math).
//
// Thread map: vector j of a thread's slice is vector j * kThreads + t of its row, so every warp-wide
// access is contiguous. Re-reading passes load kBatch vectors before using any.
// Stages: tile_setup (row, thread index), load_stage (x and r vectors), compute_stage (the add, h,
// sum of squares), the reduction (common/reduce.cuh), epilogue (scale by rsqrt and w, store y).
#include "common/reduce.cuh"
#include "common/vec.cuh"

#if !defined(RESIDUAL) || !defined(ROW_MODE) || !defined(BLOCK) || !defined(VEC_BYTES) || !defined(CACHE_ROW) || \
    !defined(CACHE_HINT) || !defined(MIN_BLOCKS)
#error "rmsnorm.cuh needs -D RESIDUAL ROW_MODE BLOCK VEC_BYTES CACHE_ROW CACHE_HINT MIN_BLOCKS"
#endif
#if CACHE_ROW && !defined(ITERS)
#error "rmsnorm.cuh needs -D ITERS (vectors per thread held in registers) with CACHE_ROW 1"
#endif
#ifndef ITERS
#define ITERS 0
#endif

typedef __nv_bfloat16 bf16;

namespace rn {

#include "rmsnorm/row.cuh"

// y = v * inv_rms * w for N vectors from vector j0.
template <int N>
__device__ __forceinline__ void store_stage(const vec (&v)[N], const bf16 *__restrict__ wt, bf16 *__restrict__ y,
                                            const tile_ctx &c, int j0, float inv_rms) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const int e = vec_elem(c, j0 + j);
    if (e >= c.n) continue;
    const vec wv = tune::load_words<1, VEC_BYTES>(wt + e);
    vec o;
#pragma unroll
    for (int w = 0; w < vec::kN; ++w)
      o.w[w] = tune::pack_bf16x2(tune::bf16_lo(v[j].w[w]) * inv_rms * tune::bf16_lo(wv.w[w]),
                                 tune::bf16_hi(v[j].w[w]) * inv_rms * tune::bf16_hi(wv.w[w]));
    tune::store_words<CACHE_HINT, VEC_BYTES>(y + c.off + e, o);
  }
}

__device__ __forceinline__ float reduce_sum(float v, float *smem) {
  if constexpr (ROW_MODE == 0) return tune::warp_reduce_sum(v);
  else return tune::block_reduce_sum<kWarps>(v, smem);
}

// The whole row: sum of squares (kept slice or streamed), reduction, output.
__device__ __forceinline__ void run_row(const bf16 *__restrict__ x, const bf16 *__restrict__ r,
                                        const bf16 *__restrict__ wt, bf16 *__restrict__ y, bf16 *__restrict__ h,
                                        const tile_ctx &c, float eps, float *smem) {
  if constexpr (CACHE_ROW) {
    vec xv[kCache], rv[kCache];
    load_stage(x, r, c, 0, xv, rv);
    const float ss = reduce_sum(compute_stage(xv, rv, h, c, 0, 0.f), smem);
    store_stage(xv, wt, y, c, 0, rsqrtf(ss * (1.f / c.n) + eps));
  } else {
    const int iters = slice_iters(c);
    float ss = 0.f;
    for (int j0 = 0; j0 < iters; j0 += kBatch) {
      vec xv[kBatch], rv[kBatch];
      load_stage(x, r, c, j0, xv, rv);
      ss = compute_stage(xv, rv, h, c, j0, ss);
    }
    const float inv_rms = rsqrtf(reduce_sum(ss, smem) * (1.f / c.n) + eps);
    for (int j0 = 0; j0 < iters; j0 += kBatch) {
      vec v[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        if constexpr (RESIDUAL)  // h was written by this thread: a coherent load, never .nc
          v[j] = load_vec<0>(h + c.off, vec_elem(c, j0 + j), c.n);
        else
          v[j] = load_vec<CACHE_HINT>(x + c.off, vec_elem(c, j0 + j), c.n);
      }
      store_stage(v, wt, y, c, j0, inv_rms);
    }
  }
}

// Scalar path (rows not starting at vector boundaries): the same math, one element per access.
__device__ __forceinline__ void scalar_row(const bf16 *__restrict__ x, const bf16 *__restrict__ r,
                                           const bf16 *__restrict__ wt, bf16 *__restrict__ y, bf16 *__restrict__ h,
                                           const tile_ctx &c, float eps, float *smem) {
  float ss = 0.f;
  for (int i = c.t; i < c.n; i += kThreads) {
    float v = __bfloat162float(tune::load_g<CACHE_HINT>(x + c.off + i));
    if constexpr (RESIDUAL) {
      const bf16 hv = __float2bfloat16_rn(v + __bfloat162float(tune::load_g<CACHE_HINT>(r + c.off + i)));
      tune::store_g<CACHE_HINT>(h + c.off + i, hv);
      v = __bfloat162float(hv);
    }
    ss = fmaf(v, v, ss);
  }
  const float inv_rms = rsqrtf(reduce_sum(ss, smem) * (1.f / c.n) + eps);
  for (int i = c.t; i < c.n; i += kThreads) {
    // h was written by this thread: a coherent load, never .nc
    const float v = __bfloat162float(RESIDUAL ? h[c.off + i] : tune::load_g<CACHE_HINT>(x + c.off + i));
    tune::store_g<CACHE_HINT>(y + c.off + i, __float2bfloat16_rn(v * inv_rms * __bfloat162float(__ldg(wt + i))));
  }
}

}  // namespace rn

// grid: ROW_MODE 0: ceil(T / (BLOCK / 32)); ROW_MODE 1: T. block BLOCK.
#if RESIDUAL
extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
rmsnorm_kernel(const bf16 *__restrict__ x, const bf16 *__restrict__ r, const bf16 *__restrict__ w,
               bf16 *__restrict__ y, bf16 *__restrict__ h, int T, int H, float eps) {
#else
extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
rmsnorm_kernel(const bf16 *__restrict__ x, const bf16 *__restrict__ w, bf16 *__restrict__ y, int T, int H,
               float eps) {
  const bf16 *r = nullptr;
  bf16 *h = nullptr;
#endif
  __shared__ float red_smem[rn::kWarps];
  const rn::tile_ctx c = rn::tile_setup(T, H);
  if (!c.active) return;  // warp mode only: whole warps, no block-wide synchronization follows
  if (c.aligned) rn::run_row(x, r, w, y, h, c, eps, red_smem);
  else rn::scalar_row(x, r, w, y, h, c, eps, red_smem);
}
