// reference_prefill.cuh: the plain attention forward every variant of prefill.cuh is checked against.
//
// One thread per query row, fp32 math, two passes over the keys: the row max first, then the
// exp-weighted sum of V rows and the normaliser. Same arguments and layout as attn_prefill:
// q, o [B, HQ, S, D]; k, v [B, HKV, S, D]; bf16; kv head = h / (HQ / HKV); causal: keys j <= i.
// Defines: HEAD_DIM, IS_CAUSAL, REF_TMA_ARGS [0] (1: also takes the three tensor maps tmQ, tmK, tmV
// after scale_log2, as prefill_sm90.cuh's TMA_ARGS kernels do; never read). Launch: grid = (ceil(S / 128), HQ, B), block = 128, no shared memory.
// Any S works. Slow by design (a few hundred ms at B4 H32 S4096 D128).
#include <cuda_bf16.h>

#if !defined(HEAD_DIM) || !defined(IS_CAUSAL)
#error "reference_prefill.cuh needs -D HEAD_DIM and IS_CAUSAL"
#endif

#ifndef REF_TMA_ARGS
#define REF_TMA_ARGS 0
#endif
#if REF_TMA_ARGS
// the variants' tensor map parameters (docs/tensormap-args.md): taken, never read. A name of its own
// (not TMA_ARGS): tools/check/prefill_sm90_check.cu includes this header after prefill_sm90.cuh,
// which defines TMA_ARGS for the variant.
#include "common/tma.cuh"
#define REF_TMA_PARAMS                                                                           \
  , const __grid_constant__ tune::tensormap tmQ, const __grid_constant__ tune::tensormap tmK,   \
      const __grid_constant__ tune::tensormap tmV
#else
#define REF_TMA_PARAMS
#endif

typedef __nv_bfloat16 bf16;

extern "C" __global__ void attn_prefill_reference(const bf16 *q, const bf16 *k, const bf16 *v, bf16 *o,
                                                  int B, int HQ, int HKV, int S,
                                                  float scale_log2 REF_TMA_PARAMS) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;  // query row
  const int h = blockIdx.y, b = blockIdx.z;
  if (i >= S || h >= HQ || b >= B) return;
  const int kvh = h / (HQ / HKV);
  const bf16 *qr = q + ((size_t)(b * HQ + h) * S + i) * HEAD_DIM;
  const bf16 *kh = k + (size_t)(b * HKV + kvh) * S * HEAD_DIM;
  const bf16 *vh = v + (size_t)(b * HKV + kvh) * S * HEAD_DIM;
  bf16 *orow = o + ((size_t)(b * HQ + h) * S + i) * HEAD_DIM;
  const int n_keys = IS_CAUSAL ? i + 1 : S;

  float qf[HEAD_DIM];
  for (int d = 0; d < HEAD_DIM; ++d) qf[d] = __bfloat162float(qr[d]);

  // Pass 1: the largest score of the row.
  float mx = __int_as_float(0xff800000u);  // -inf (NVRTC defines no INF macro)
  for (int j = 0; j < n_keys; ++j) {
    float s = 0.f;
    for (int d = 0; d < HEAD_DIM; ++d) s += qf[d] * __bfloat162float(kh[(size_t)j * HEAD_DIM + d]);
    mx = fmaxf(mx, s);
  }

  // Pass 2: p_j = exp((s_j - max) * scale) = 2^((s_j - max) * scale_log2); o = sum p_j v_j / sum p_j.
  float acc[HEAD_DIM];
  for (int d = 0; d < HEAD_DIM; ++d) acc[d] = 0.f;
  float sum = 0.f;
  for (int j = 0; j < n_keys; ++j) {
    float s = 0.f;
    for (int d = 0; d < HEAD_DIM; ++d) s += qf[d] * __bfloat162float(kh[(size_t)j * HEAD_DIM + d]);
    const float p = exp2f((s - mx) * scale_log2);
    sum += p;
    for (int d = 0; d < HEAD_DIM; ++d) acc[d] += p * __bfloat162float(vh[(size_t)j * HEAD_DIM + d]);
  }
  for (int d = 0; d < HEAD_DIM; ++d) orow[d] = __float2bfloat16(acc[d] / sum);
}
