// reference_decode.cuh: the plain decode attention every variant of decode.cuh is checked against.
//
//   o[b,hq,:] = sum_j p_j v[b,j,hkv,:],  p_j = 2^(s_j - M) / sum_i 2^(s_i - M),
//   s_j = (q[b,hq,:] . k[b,j,hkv,:]) * scale_log2,  M = max_j s_j,  hkv = hq / (HQ / HKV)
// (scale_log2 = scale * log2(e), so p is softmax(q . k * scale)). Same layouts and parameters as
// decode.cuh: q, o [B, HQ, D]; k_cache, v_cache [NUM_PAGES, PAGE_SIZE, HKV, D]; KV row j of sequence b
// is row j % PAGE_SIZE of page block_table[b * max_pages_per_seq + j / PAGE_SIZE]. `partial` is unused.
//
// Two exact passes in fp32, no online rescaling: pass 1 finds M, pass 2 sums 2^(s - M) and
// 2^(s - M) v. One block per (hq, b): grid (HQ, B), block HEAD_DIM threads; thread d owns output
// element d and, for each chunk of HEAD_DIM rows, the score of row chunk + d. Any L >= 1.
// Defines: HEAD_DIM, PAGE_SIZE.
#include <cuda_bf16.h>

#if !defined(HEAD_DIM) || !defined(PAGE_SIZE)
#error "reference_decode.cuh needs -D HEAD_DIM PAGE_SIZE"
#endif
static_assert(HEAD_DIM >= 1 && HEAD_DIM <= 1024, "HEAD_DIM must fit one block");

// Element offset of KV row j (head hkv, element 0) of sequence b.
static __device__ long long ref_kv_row(const int *block_table, int b, int j, int hkv, int HKV, int max_pages_per_seq) {
  const long long page = block_table[(long long)b * max_pages_per_seq + j / PAGE_SIZE];
  return ((page * PAGE_SIZE + j % PAGE_SIZE) * HKV + hkv) * HEAD_DIM;
}

// s_j for row j, from q in shared memory.
static __device__ float ref_score(const float *qs, const __nv_bfloat16 *k_cache, long long row, float scale_log2) {
  float s = 0.f;
  for (int e = 0; e < HEAD_DIM; ++e) s += qs[e] * __bfloat162float(k_cache[row + e]);
  return s * scale_log2;
}

extern "C" __global__ void attn_decode_reference(const __nv_bfloat16 *q, const __nv_bfloat16 *k_cache,
                                                 const __nv_bfloat16 *v_cache, const int *block_table,
                                                 __nv_bfloat16 *o, float *partial, int B, int HQ, int HKV, int L,
                                                 int max_pages_per_seq, float scale_log2) {
  __shared__ float qs[HEAD_DIM];
  __shared__ float sc[HEAD_DIM];
  const int hq = blockIdx.x, b = blockIdx.y, d = threadIdx.x;
  const int hkv = hq / (HQ / HKV);
  const float neg_inf = __int_as_float(0xff800000);
  qs[d] = __bfloat162float(q[((long long)b * HQ + hq) * HEAD_DIM + d]);
  __syncthreads();

  // Pass 1: M = max_j s_j.
  float M = neg_inf;
  for (int j0 = 0; j0 < L; j0 += HEAD_DIM) {
    const int j = j0 + d;
    sc[d] = j < L ? ref_score(qs, k_cache, ref_kv_row(block_table, b, j, hkv, HKV, max_pages_per_seq), scale_log2)
                  : neg_inf;
    __syncthreads();
    for (int i = 0; i < HEAD_DIM; ++i) M = fmaxf(M, sc[i]);
    __syncthreads();
  }

  // Pass 2: sum_j 2^(s_j - M) and sum_j 2^(s_j - M) v_j[d].
  float sum = 0.f, acc = 0.f;
  for (int j0 = 0; j0 < L; j0 += HEAD_DIM) {
    const int j = j0 + d;
    sc[d] = j < L ? exp2f(ref_score(qs, k_cache, ref_kv_row(block_table, b, j, hkv, HKV, max_pages_per_seq),
                                    scale_log2) - M)
                  : 0.f;
    __syncthreads();
    for (int i = 0; i < HEAD_DIM && j0 + i < L; ++i) {
      sum += sc[i];
      acc += sc[i] * __bfloat162float(v_cache[ref_kv_row(block_table, b, j0 + i, hkv, HKV, max_pages_per_seq) + d]);
    }
    __syncthreads();
  }
  o[((long long)b * HQ + hq) * HEAD_DIM + d] = __float2bfloat16(acc / sum);
}
