// reference_varlen.cuh: the plain attention forward over packed variable-length sequences that every
// variant of attn_varlen_sm90 (prefill_sm90.cuh, VARLEN = 1) is checked against.
//
// One thread per (token, query head), fp32 math, two passes over the keys of the token's sequence
// (the row max, then the exp-weighted sum of V rows and the normaliser), as reference_prefill.cuh.
// Same arguments as attn_varlen_sm90: q [T, HQ, D], k, v [T, HKV, D], o [T, HQ, D] with row (token)
// strides q_ld, k_ld, v_ld, o_ld in elements (heads D apart); cu_seqlens i32 [B + 1] (sequence b is
// tokens [cu_seqlens[b], cu_seqlens[b + 1])); kv head = h / (HQ / HKV); causal: keys of the same
// sequence up to the token. Tokens outside [cu_seqlens[0], cu_seqlens[B]) are not written.
// Defines: HEAD_DIM, IS_CAUSAL, REF_TMA_ARGS [0] (1: also takes the tensor maps tmQ, tmK, tmV after
// scale_log2; never read). Launch: grid = (ceil(T / 128), HQ, 1), block = 128, no shared memory.
// VARLEN_KV [0] 1: entry attn_varlen_kv_reference, the same arguments as attn_varlen_kv_sm90: T and
// cu_seqlens are the queries', cu_prefix (after cu_seqlens) the prefix sums of Lk - Lq; sequence b's
// keys are k, v tokens [cu_seqlens[b] + cu_prefix[b], cu_seqlens[b + 1] + cu_prefix[b + 1]), causal
// aligned at the end (query j of a sequence sees keys 0 .. j + Lk - Lq).
#include <cuda_bf16.h>

#if !defined(HEAD_DIM) || !defined(IS_CAUSAL)
#error "reference_varlen.cuh needs -D HEAD_DIM and IS_CAUSAL"
#endif

#ifndef REF_TMA_ARGS
#define REF_TMA_ARGS 0
#endif
#ifndef VARLEN_KV
#define VARLEN_KV 0
#endif
#if REF_TMA_ARGS
#include "common/tma.cuh"
#define REF_TMA_PARAMS                                                                           \
  , const __grid_constant__ tune::tensormap tmQ, const __grid_constant__ tune::tensormap tmK,   \
      const __grid_constant__ tune::tensormap tmV
#else
#define REF_TMA_PARAMS
#endif

typedef __nv_bfloat16 bf16;

#if VARLEN_KV
extern "C" __global__ void attn_varlen_kv_reference(const bf16 *q, const bf16 *k, const bf16 *v, bf16 *o,
                                                    const int *cu_seqlens, const int *cu_prefix, int B, int T,
                                                    int HQ, int HKV,
#else
extern "C" __global__ void attn_varlen_reference(const bf16 *q, const bf16 *k, const bf16 *v, bf16 *o,
                                                 const int *cu_seqlens, int B, int T, int HQ, int HKV,
#endif
                                                 long long q_ld, long long k_ld, long long v_ld, long long o_ld,
                                                 float scale_log2 REF_TMA_PARAMS) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;  // token
  const int h = blockIdx.y;
  if (i >= T || h >= HQ || i < cu_seqlens[0] || i >= cu_seqlens[B]) return;
  // the token's sequence: the last b with cu_seqlens[b] <= i (empty sequences are skipped over)
  int lo = 0, hi = B;  // cu_seqlens[lo] <= i < cu_seqlens[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (cu_seqlens[mid] <= i) lo = mid;
    else hi = mid;
  }
  const int start = cu_seqlens[lo], end = cu_seqlens[lo + 1];
#if VARLEN_KV
  // keys: the prefix, then one per query; query i sees the prefix and the keys up to its own
  const int k_first = start + cu_prefix[lo], k_end = end + cu_prefix[lo + 1], k_self = i + cu_prefix[lo + 1];
#else
  const int k_first = start, k_end = end, k_self = i;
#endif
  const int kvh = h / (HQ / HKV);
  const bf16 *qr = q + i * q_ld + (size_t)h * HEAD_DIM;
  bf16 *orow = o + i * o_ld + (size_t)h * HEAD_DIM;
  const int key_end = IS_CAUSAL ? k_self + 1 : k_end;

  float qf[HEAD_DIM];
  for (int d = 0; d < HEAD_DIM; ++d) qf[d] = __bfloat162float(qr[d]);
  const auto score = [&](int j) {
    const bf16 *kr = k + j * k_ld + (size_t)kvh * HEAD_DIM;
    float s = 0.f;
    for (int d = 0; d < HEAD_DIM; ++d) s += qf[d] * __bfloat162float(kr[d]);
    return s;
  };

  // Pass 1: the largest score of the row.
  float mx = __int_as_float(0xff800000u);  // -inf (NVRTC defines no INF macro)
  for (int j = k_first; j < key_end; ++j) mx = fmaxf(mx, score(j));

  // Pass 2: p_j = 2^((s_j - max) * scale_log2); o = sum p_j v_j / sum p_j.
  float acc[HEAD_DIM];
  for (int d = 0; d < HEAD_DIM; ++d) acc[d] = 0.f;
  float sum = 0.f;
  for (int j = k_first; j < key_end; ++j) {
    const float p = exp2f((score(j) - mx) * scale_log2);
    const bf16 *vr = v + j * v_ld + (size_t)kvh * HEAD_DIM;
    sum += p;
    for (int d = 0; d < HEAD_DIM; ++d) acc[d] += p * __bfloat162float(vr[d]);
  }
  for (int d = 0; d < HEAD_DIM; ++d) orow[d] = __float2bfloat16(acc[d] / sum);
}
