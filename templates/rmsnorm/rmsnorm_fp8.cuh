// rmsnorm_fp8.cuh: residual add + RMSNorm + fp8 e4m3 quantization in one pass, the step an FP8
// serving engine runs before every FP8 linear layer (vLLM's fused_add_rms_norm with static or
// dynamic per-token quantization):
//
//   h = bf16(x + r)                                 written: the updated residual stream
//   v = h * w * rsqrt(mean(h^2) + eps)              fp32, on h as stored
//   QUANT 1 (dynamic, per token): scale[row] = max(amax(|v| of the row) / 448, 1 / (448 * 512))
//   QUANT 2 (static, per tensor): scale[0] given
//   y = e4m3(v / scale)                             round to nearest even, saturated to +-448
//
// x, r, h [T, H] bf16; w [H] bf16; y [T, H] e4m3 (bytes); scale f32 [T] (QUANT 1, written) or [1]
// (QUANT 2, read). h may be r itself, the in-place update of the residual that engines do (vLLM):
// every element of r is read once, by the thread that then writes it to h, before it writes it,
// and h is re-read only by that thread, so no access sees the other pointer's stale or new value
// (the recipe verifies the out-of-place form: the tuner checksums its inputs).
// The scale's floor keeps a row of zeros finite (y = 0 there), as vLLM's per-token kernel does.
//
// One reduction for both statistics: amax(|v|) = rsqrt(...) * max |h * w| (the factor is positive),
// so the first pass keeps the sum of squares and max |h w| (h w is exact in fp32: two 8-bit
// significands) and the row is read twice like plain rmsnorm.add, not three times (a separate
// amax pass over the normalized row). v is computed as (h w) * inv_rms in both places, so the
// row's largest |v| equals amax exactly and lands on 448.
//
// Tunables and the thread map: those of rmsnorm.cuh (ROW_MODE, BLOCK, VEC_BYTES, CACHE_ROW,
// CACHE_HINT, MIN_BLOCKS, ITERS; its stages are common to both, rmsnorm/row.cuh). VEC_BYTES is the
// width of the bf16 accesses; y is stored VEC_BYTES / 2 bytes at a time. W_AHEAD 1 (static mode, the
// slice in registers): the slice's weights are loaded with x and r, before the row's reduction, so
// that their latency is not added after it (the dynamic mode loads them there for max |h w|). The
// static scale is read before the row in every variant, for the same reason. Problem constant: QUANT.
// A row that does not start at a vector boundary (H % (VEC_BYTES / 2) != 0) takes the scalar path.
#include <cuda_fp8.h>

#include "common/fp8_pack.cuh"
#include "common/reduce.cuh"
#include "common/vec.cuh"

#if !defined(QUANT) || !defined(ROW_MODE) || !defined(BLOCK) || !defined(VEC_BYTES) || !defined(CACHE_ROW) || \
    !defined(CACHE_HINT) || !defined(MIN_BLOCKS)
#error "rmsnorm_fp8.cuh needs -D QUANT ROW_MODE BLOCK VEC_BYTES CACHE_ROW CACHE_HINT MIN_BLOCKS"
#endif
#ifndef W_AHEAD
#define W_AHEAD 0
#endif
#if W_AHEAD && !CACHE_ROW
#error "rmsnorm_fp8.cuh: W_AHEAD 1 needs CACHE_ROW 1 (the slice's weights stay in registers)"
#endif
#if CACHE_ROW && !defined(ITERS)
#error "rmsnorm_fp8.cuh needs -D ITERS (vectors per thread held in registers) with CACHE_ROW 1"
#endif
#ifndef ITERS
#define ITERS 0
#endif
#if defined(RESIDUAL) && !RESIDUAL
#error "rmsnorm_fp8.cuh always adds the residual"
#endif
#undef RESIDUAL
#define RESIDUAL 1

typedef __nv_bfloat16 bf16;

namespace rn {

#include "rmsnorm/row.cuh"

static_assert(QUANT == 1 || QUANT == 2, "QUANT must be 1 (dynamic per token) or 2 (static per tensor)");

constexpr float kE4m3Max = 448.f;
constexpr float kMinScale = 1.f / (448.f * 512.f);
constexpr int kOutBytes = VEC_BYTES / 2;  // e4m3 bytes of one vector

// OB = kOutBytes e4m3 bytes at p (OB-aligned), from the packed pairs in q.
template <int OB = kOutBytes>
__device__ __forceinline__ void store_e4m3(unsigned char *p, const unsigned (&q)[vec::kN]) {
  if constexpr (OB == 2) {
    tune::store_g<CACHE_HINT>(reinterpret_cast<unsigned short *>(p), (unsigned short)q[0]);
  } else {
    tune::words<OB> o;
#pragma unroll
    for (int i = 0; i < o.kN; ++i) o.w[i] = q[2 * i] | (q[2 * i + 1] << 16);
    tune::store_words<CACHE_HINT, OB>(p, o);
  }
}

// m = max(m, |h w|) over N vectors of h from vector j0 (dynamic mode; w through the read-only path).
template <int N>
__device__ __forceinline__ float absmax_stage(const vec (&hv)[N], const bf16 *__restrict__ wt, const tile_ctx &c,
                                              int j0, float m) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const int e = vec_elem(c, j0 + j);
    if (e >= c.n) continue;
    const vec wv = tune::load_words<1, VEC_BYTES>(wt + e);
#pragma unroll
    for (int w = 0; w < vec::kN; ++w)
      m = fmaxf(m, fmaxf(fabsf(tune::bf16_lo(hv[j].w[w]) * tune::bf16_lo(wv.w[w])),
                         fabsf(tune::bf16_hi(hv[j].w[w]) * tune::bf16_hi(wv.w[w]))));
  }
  return m;
}

// The weights of N vectors from vector j0 (W_AHEAD), through the read-only path.
template <int N>
__device__ __forceinline__ void weight_stage(const bf16 *__restrict__ wt, const tile_ctx &c, int j0, vec (&wv)[N]) {
#pragma unroll
  for (int j = 0; j < N; ++j) wv[j] = load_vec<1>(wt, vec_elem(c, j0 + j), c.n);
}

// y = e4m3((h w) * inv_rms * q) for N vectors from vector j0; the weights loaded now, or given in
// wl (LOADED: weight_stage's).
template <bool LOADED = false, int N>
__device__ __forceinline__ void quant_stage(const vec (&hv)[N], const bf16 *__restrict__ wt, const vec *wl,
                                            unsigned char *__restrict__ y, const tile_ctx &c, int j0, float inv_rms,
                                            float q) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const int e = vec_elem(c, j0 + j);
    if (e >= c.n) continue;
    const vec wv = LOADED ? wl[j] : tune::load_words<1, VEC_BYTES>(wt + e);
    unsigned pairs[vec::kN];
#pragma unroll
    for (int w = 0; w < vec::kN; ++w)
      pairs[w] = tune::f32x2_to_e4m3x2(tune::bf16_lo(hv[j].w[w]) * tune::bf16_lo(wv.w[w]) * inv_rms * q,
                                       tune::bf16_hi(hv[j].w[w]) * tune::bf16_hi(wv.w[w]) * inv_rms * q);
    store_e4m3(y + c.off + e, pairs);
  }
}

// The row's index (tile_setup's): its scale's slot.
__device__ __forceinline__ long long row_index() {
  if constexpr (ROW_MODE == 0) return (long long)blockIdx.x * kWarps + threadIdx.x / 32;
  else return blockIdx.x;
}

template <bool MAX> __device__ __forceinline__ float reduce_row(float v, float *smem) {
  if constexpr (ROW_MODE == 0) return MAX ? tune::warp_reduce_max(v) : tune::warp_reduce_sum(v);
  else return MAX ? tune::block_reduce_max<kWarps>(v, smem) : tune::block_reduce_sum<kWarps>(v, smem);
}

// From the row's sum of squares and max |h w| (thread-local): inv_rms and the quantization factor
// q = 1 / scale (static mode: q_static, read before the row); the row's first thread writes the
// dynamic scale.
__device__ __forceinline__ float2 row_factors(float ss, float m, const tile_ctx &c, long long row, float eps,
                                              float *scale, float q_static, float *smem) {
  const float inv_rms = rsqrtf(reduce_row<false>(ss, smem) * (1.f / c.n) + eps);
  if constexpr (QUANT == 1) {
    const float s = fmaxf(reduce_row<true>(m, smem) * inv_rms / kE4m3Max, kMinScale);
    if (c.t == 0) tune::store_g<CACHE_HINT>(scale + row, s);
    return make_float2(inv_rms, 1.f / s);
  } else {
    return make_float2(inv_rms, q_static);
  }
}

__device__ __forceinline__ void run_row(const bf16 *__restrict__ x, const bf16 *__restrict__ r,
                                        const bf16 *__restrict__ wt, unsigned char *__restrict__ y,
                                        bf16 *__restrict__ h, float *scale, float q_static, const tile_ctx &c,
                                        long long row, float eps, float *smem) {
  if constexpr (CACHE_ROW) {
    vec hv[kCache], rv[kCache], wv[W_AHEAD ? kCache : 1];
    load_stage(x, r, c, 0, hv, rv);
    if constexpr (W_AHEAD) weight_stage(wt, c, 0, wv);
    const float ss = compute_stage(hv, rv, h, c, 0, 0.f);
    const float m = QUANT == 1 ? absmax_stage(hv, wt, c, 0, 0.f) : 0.f;
    const float2 f = row_factors(ss, m, c, row, eps, scale, q_static, smem);
    quant_stage<W_AHEAD>(hv, wt, wv, y, c, 0, f.x, f.y);
  } else {
    const int iters = slice_iters(c);
    float ss = 0.f, m = 0.f;
    for (int j0 = 0; j0 < iters; j0 += kBatch) {
      vec hv[kBatch], rv[kBatch];
      load_stage(x, r, c, j0, hv, rv);
      ss = compute_stage(hv, rv, h, c, j0, ss);
      if constexpr (QUANT == 1) m = absmax_stage(hv, wt, c, j0, m);
    }
    const float2 f = row_factors(ss, m, c, row, eps, scale, q_static, smem);
    for (int j0 = 0; j0 < iters; j0 += kBatch) {
      vec hv[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j)  // h was written by this thread: a coherent load, never .nc
        hv[j] = load_vec<0>(h + c.off, vec_elem(c, j0 + j), c.n);
      quant_stage(hv, wt, nullptr, y, c, j0, f.x, f.y);
    }
  }
}

// Scalar path (rows not starting at vector boundaries): the same math, one element per access.
__device__ __forceinline__ void scalar_row(const bf16 *__restrict__ x, const bf16 *__restrict__ r,
                                           const bf16 *__restrict__ wt, unsigned char *__restrict__ y,
                                           bf16 *__restrict__ h, float *scale, float q_static, const tile_ctx &c,
                                           long long row, float eps, float *smem) {
  float ss = 0.f, m = 0.f;
  for (int i = c.t; i < c.n; i += kThreads) {
    const bf16 hb = __float2bfloat16_rn(__bfloat162float(tune::load_g<CACHE_HINT>(x + c.off + i)) +
                                        __bfloat162float(tune::load_g<CACHE_HINT>(r + c.off + i)));
    tune::store_g<CACHE_HINT>(h + c.off + i, hb);
    const float v = __bfloat162float(hb);
    ss = fmaf(v, v, ss);
    if constexpr (QUANT == 1) m = fmaxf(m, fabsf(v * __bfloat162float(__ldg(wt + i))));
  }
  const float2 f = row_factors(ss, m, c, row, eps, scale, q_static, smem);
  for (int i = c.t; i < c.n; i += kThreads) {
    const float v = __bfloat162float(h[c.off + i]) * __bfloat162float(__ldg(wt + i));  // h: coherent, never .nc
    tune::store_g<CACHE_HINT>(y + c.off + i, (unsigned char)__nv_cvt_float_to_fp8(v * f.x * f.y, __NV_SATFINITE,
                                                                                   __NV_E4M3));
  }
}

}  // namespace rn

// grid: ROW_MODE 0: ceil(T / (BLOCK / 32)); ROW_MODE 1: T. block BLOCK.
// scale: QUANT 1 [T] written, QUANT 2 [1] read.
extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
rmsnorm_fp8_kernel(const bf16 *__restrict__ x, const bf16 *__restrict__ r, const bf16 *__restrict__ w,
                   unsigned char *__restrict__ y, bf16 *__restrict__ h, float *__restrict__ scale, int T, int H,
                   float eps) {
  __shared__ float red_smem[rn::kWarps];
  const rn::tile_ctx c = rn::tile_setup(T, H);
  if (!c.active) return;  // warp mode only: whole warps, no block-wide synchronization follows
  const long long row = rn::row_index();
  const float q_static = QUANT == 2 ? 1.f / __ldg(scale) : 0.f;
  if (c.aligned) rn::run_row(x, r, w, y, h, scale, q_static, c, row, eps, red_smem);
  else rn::scalar_row(x, r, w, y, h, scale, q_static, c, row, eps, red_smem);
}
