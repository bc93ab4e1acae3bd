// reference_decode.cuh: the plain decode attention every variant of decode.cuh is checked against.
//
//   o[b,hq,:] = sum_{j < len_b} p_j v[b,j,hkv,:],  p_j = 2^(s_j - M) / sum_i 2^(s_i - M),
//   s_j = (q[b,hq,:] . k[b,j,hkv,:]) * scale_log2,  M = max_j s_j,  hkv = hq / (HQ / HKV)
// (scale_log2 = scale * log2(e), so p is softmax(q . k * scale)). Same arguments and contract as
// decode.cuh: len_b = seq_lens[b] clamped to [0, max_pages * page_size] (0: o = 0); KV row j of
// sequence b is row j % page_size of page block_table[b * max_pages + j / page_size]; q, o and the
// caches are addressed through their strides (elements). `partial` is unused.
//
// Two exact passes in fp32, no online rescaling: pass 1 finds M, pass 2 sums 2^(s - M) and
// 2^(s - M) v. One block per (hq, b): grid (HQ, B), block HEAD_DIM threads; thread d owns output
// element d and, for each chunk of HEAD_DIM rows, the score of row chunk + d. Any length.
// Defines: HEAD_DIM; KV_FP8 (default 0): e4m3 caches with f32 scales k_scale, v_scale [HKV] after
// v_cache, as decode.cuh's KV_FP8: k = e4m3 value * k_scale[hkv], decoded exactly (common/fp8.cuh),
// the scales applied to every element before any other arithmetic (decode.cuh folds them).
// KV_SCALE_PAGE (default 0): the scales are [num_pages, HKV], row j's at its page * HKV + hkv.
// KV_TMA (default 0): 1 adds decode.cuh's two tensor-map parameters at the end (not read).
#include <cuda_bf16.h>

#if !defined(HEAD_DIM)
#error "reference_decode.cuh needs -D HEAD_DIM"
#endif
#ifndef KV_FP8
#define KV_FP8 0
#endif
#ifndef KV_SCALE_PAGE
#define KV_SCALE_PAGE 0
#endif
static_assert(HEAD_DIM >= 1 && HEAD_DIM <= 1024, "HEAD_DIM must fit one block");

#if KV_FP8
#include "common/fp8.cuh"
typedef unsigned char ref_kv_t;
static __device__ float ref_kv_value(const ref_kv_t *cache, long long i, float scale) {
  return tune::e4m3_to_f32(cache[i]) * scale;
}
#define REF_SCALE_ARGS const float *k_scale, const float *v_scale,
#else
typedef __nv_bfloat16 ref_kv_t;
static __device__ float ref_kv_value(const ref_kv_t *cache, long long i, float) {
  return __bfloat162float(cache[i]);
}
#define REF_SCALE_ARGS
#endif

// KV_TMA 1 (attention.decode_tma): the variants' two tensor maps, taken and not read.
#if defined(KV_TMA) && KV_TMA
#include "common/tma.cuh"
#define REF_TMA_ARGS , const __grid_constant__ tune::tensormap, const __grid_constant__ tune::tensormap
#else
#define REF_TMA_ARGS
#endif

struct ref_kv {
  const int *bt;          // block_table row of the sequence
  int page_size;
  long long page_stride, row_stride, head_offset;  // elements
};

// Element offset of KV row j (element 0 of the block's KV head).
static __device__ long long ref_kv_row(const ref_kv &kv, int j) {
  const long long page = kv.bt[j / kv.page_size];
  return page * kv.page_stride + (long long)(j % kv.page_size) * kv.row_stride + kv.head_offset;
}

// Row j's scale from `scale` (k_scale or v_scale; 1 for bf16 caches).
static __device__ float ref_row_scale(const float *scale, const ref_kv &kv, int j, int hkv, int HKV) {
#if KV_SCALE_PAGE
  return scale[(long long)kv.bt[j / kv.page_size] * HKV + hkv];
#elif KV_FP8
  return scale[hkv];
#else
  return 1.f;
#endif
}

// s_j for row j, from q in shared memory (ks: the K scale, unused for bf16).
static __device__ float ref_score(const float *qs, const ref_kv_t *k_cache, long long row, float ks,
                                  float scale_log2) {
  float s = 0.f;
  for (int e = 0; e < HEAD_DIM; ++e) s += qs[e] * ref_kv_value(k_cache, row + e, ks);
  return s * scale_log2;
}

extern "C" __global__ void attn_decode_reference(const __nv_bfloat16 *q, const ref_kv_t *k_cache,
                                                 const ref_kv_t *v_cache, REF_SCALE_ARGS const int *block_table,
                                                 const int *seq_lens, __nv_bfloat16 *o, float *partial, int B, int HQ,
                                                 int HKV, int max_pages, int page_size, long long q_stride_b,
                                                 long long q_stride_h, long long o_stride_b, long long o_stride_h,
                                                 long long kv_stride_page, long long kv_stride_row,
                                                 long long kv_stride_h, float scale_log2 REF_TMA_ARGS) {
  __shared__ float qs[HEAD_DIM];
  __shared__ float sc[HEAD_DIM];
  const int hq = blockIdx.x, b = blockIdx.y, d = threadIdx.x;
  const int hkv = hq / (HQ / HKV);
  const float neg_inf = __int_as_float(0xff800000);
  const int L = max(0, min(seq_lens[b], max_pages * page_size));
  const ref_kv kv = {block_table + (long long)b * max_pages, page_size, kv_stride_page, kv_stride_row,
                     hkv * kv_stride_h};
  qs[d] = __bfloat162float(q[b * q_stride_b + hq * q_stride_h + d]);
#if !KV_FP8
  const float *k_scale = nullptr, *v_scale = nullptr;
#endif
  __syncthreads();

  // Pass 1: M = max_j s_j.
  float M = neg_inf;
  for (int j0 = 0; j0 < L; j0 += HEAD_DIM) {
    const int j = j0 + d;
    sc[d] = j < L ? ref_score(qs, k_cache, ref_kv_row(kv, j), ref_row_scale(k_scale, kv, j, hkv, HKV), scale_log2)
                  : neg_inf;
    __syncthreads();
    for (int i = 0; i < HEAD_DIM; ++i) M = fmaxf(M, sc[i]);
    __syncthreads();
  }

  // Pass 2: sum_j 2^(s_j - M) and sum_j 2^(s_j - M) v_j[d].
  float sum = 0.f, acc = 0.f;
  for (int j0 = 0; j0 < L; j0 += HEAD_DIM) {
    const int j = j0 + d;
    sc[d] = j < L ? exp2f(ref_score(qs, k_cache, ref_kv_row(kv, j), ref_row_scale(k_scale, kv, j, hkv, HKV),
                                    scale_log2) - M)
                  : 0.f;
    __syncthreads();
    for (int i = 0; i < HEAD_DIM && j0 + i < L; ++i) {
      sum += sc[i];
      acc += sc[i] * ref_kv_value(v_cache, ref_kv_row(kv, j0 + i) + d, ref_row_scale(v_scale, kv, j0 + i, hkv, HKV));
    }
    __syncthreads();
  }
  o[b * o_stride_b + hq * o_stride_h + d] = __float2bfloat16(L > 0 ? acc / sum : 0.f);
}
